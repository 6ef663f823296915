//! Physical memory as Linux's `/proc/kpageflags` shows it: one 64-bit word of `KPF_*`
//! bits per frame (`Documentation/admin-guide/mm/pagemap.rst`; bit numbers from
//! `include/uapi/linux/kernel-page-flags.h`, the same since Linux 2.6.31 for the bits
//! used here).
//!
//! It exists so that the model's memory and a real kernel's can be read by one tool
//! (`tools/linux-4.1-guest/layout.py`): the frames are encoded as Linux 4.1 would show
//! the same pages, no more precisely. So, as in Linux:
//! - a free buddy block sets `BUDDY` on its first frame only; its other frames, and
//!   frames on the per-CPU lists, show no flag at all;
//! - anonymous memory shows `ANON | MMAP | LRU | SWAPBACKED | UPTODATE`, the page cache
//!   `LRU | UPTODATE` (the model does not say which LRU list, so `ACTIVE` is never set,
//!   nor `DIRTY`: its cached pages are clean);
//! - kernel memory of either kind shows `SLAB` (the model's reclaimable and unmovable
//!   kernel memory is mostly slab; a real kernel's stacks and other page allocations show
//!   no flag), page tables no flag (Linux 4.1 has no `PGTABLE` bit: 4.17 added it);
//! - a block of order above 0 sets `COMPOUND_HEAD` on its first frame and only
//!   `COMPOUND_TAIL` on the others (`THP` as well for anonymous memory).

use crate::phys::buddy::PhysMem;
use crate::phys::frame::{FrameState, OwnerKind};

/// `KPF_UPTODATE`.
pub const KPF_UPTODATE: u64 = 1 << 3;
/// `KPF_LRU`: on an LRU list (anonymous memory and the page cache).
pub const KPF_LRU: u64 = 1 << 5;
/// `KPF_SLAB`.
pub const KPF_SLAB: u64 = 1 << 7;
/// `KPF_BUDDY`: the first frame of a free buddy block.
pub const KPF_BUDDY: u64 = 1 << 10;
/// `KPF_MMAP`: mapped into an address space.
pub const KPF_MMAP: u64 = 1 << 11;
/// `KPF_ANON`.
pub const KPF_ANON: u64 = 1 << 12;
/// `KPF_SWAPBACKED`.
pub const KPF_SWAPBACKED: u64 = 1 << 14;
/// `KPF_COMPOUND_HEAD`.
pub const KPF_COMPOUND_HEAD: u64 = 1 << 15;
/// `KPF_COMPOUND_TAIL`.
pub const KPF_COMPOUND_TAIL: u64 = 1 << 16;
/// `KPF_THP`.
pub const KPF_THP: u64 = 1 << 22;

impl PhysMem {
    /// Every frame's `/proc/kpageflags` word, by frame number (module docs).
    pub fn kpageflags(&self) -> Vec<u64> {
        (0..self.frames_total())
            .map(|pfn| {
                let frame = self
                    .frame(hugemm_hw::Pfn(pfn))
                    .expect("pfn below the total");
                match frame.state() {
                    FrameState::FreeHead { .. } => KPF_BUDDY,
                    FrameState::FreeTail => 0,
                    FrameState::Allocated { order, owner } => {
                        let head = if order.0 > 0 { KPF_COMPOUND_HEAD } else { 0 };
                        let thp = if order.0 > 0 && owner == OwnerKind::Anon {
                            KPF_THP
                        } else {
                            0
                        };
                        owner_flags(owner) | head | thp
                    }
                    FrameState::AllocatedTail { owner } => {
                        let thp = if owner == OwnerKind::Anon { KPF_THP } else { 0 };
                        KPF_COMPOUND_TAIL | thp
                    }
                }
            })
            .collect()
    }
}

/// The flags of an allocated block's first frame by its owner.
fn owner_flags(owner: OwnerKind) -> u64 {
    match owner {
        OwnerKind::Anon => KPF_ANON | KPF_MMAP | KPF_LRU | KPF_SWAPBACKED | KPF_UPTODATE,
        OwnerKind::PageCache => KPF_LRU | KPF_UPTODATE,
        OwnerKind::KernelUnmovable | OwnerKind::KernelReclaimable => KPF_SLAB,
        OwnerKind::PageTable | OwnerKind::PerCpu => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phys::buddy::AllocRequest;
    use crate::phys::pageblock::MigrateType;
    use hugemm_hw::{Geometry, Order, Pfn};

    #[test]
    fn frames_read_as_linux_shows_them() {
        let mut m = PhysMem::new(1024, Geometry::X86_64).unwrap();
        let anon = m.alloc(&AllocRequest::new(Order(0))).unwrap();
        let cache = m
            .alloc(&AllocRequest::new(Order(0)).owner(OwnerKind::PageCache))
            .unwrap();
        let slab = m
            .alloc(
                &AllocRequest::new(Order(2))
                    .migrate(MigrateType::Reclaimable)
                    .owner(OwnerKind::KernelReclaimable),
            )
            .unwrap();
        let flags = m.kpageflags();
        assert_eq!(flags.len(), 1024);
        assert_eq!(
            flags[anon.pfn.0 as usize],
            KPF_ANON | KPF_MMAP | KPF_LRU | KPF_SWAPBACKED | KPF_UPTODATE
        );
        assert_eq!(flags[cache.pfn.0 as usize], KPF_LRU | KPF_UPTODATE);
        let s = slab.pfn.0 as usize;
        assert_eq!(flags[s], KPF_SLAB | KPF_COMPOUND_HEAD);
        assert!(flags[s + 1..s + 4].iter().all(|&f| f == KPF_COMPOUND_TAIL));
        // Every free block shows BUDDY on its first frame only: as many BUDDY frames as
        // free blocks, and the free frames' other frames show nothing.
        let heads = flags.iter().filter(|&&f| f == KPF_BUDDY).count() as u64;
        let blocks: u64 = m.free_blocks_by_order().iter().sum();
        assert_eq!(heads, blocks);
        let blank = flags.iter().filter(|&&f| f == 0).count() as u64;
        assert_eq!(blank + heads, m.frames_free());
        assert_eq!(
            m.frame(Pfn(s as u64 + 1)).unwrap().owner(),
            Some(OwnerKind::KernelReclaimable)
        );
    }
}
