//! Kernel allocations (`kmalloc`/`kfree` at page granularity: slab pages, kernel stacks,
//! dentry and inode caches): unmovable or reclaimable frames taken from the buddy
//! allocator with their migrate type, so the fallback policy decides where they land
//! (APSys'16 section 2: these are the "sysPages" that pollute user pageblocks).
//!
//! Allocation goes through [`Mem::alloc`](crate::reclaim) (direct reclaim of page cache
//! for orders <= 3, kswapd below the low watermark). Kernel frames are never migrated or
//! reclaimed by the model: the workload holding a [`KmemHandle`] frees it. This module
//! owns the two entry points and their counters; it must not choose pageblocks.

use crate::buddy::AllocRequest;
use crate::error::{MmError, Result};
use crate::frame::{FrameState, OwnerKind};
use crate::kernel::Kernel;
use crate::pageblock::MigrateType;
use hugemm_hw::{Nanos, Order, Pfn};
use serde::{Deserialize, Serialize};

/// The mobility of a kernel allocation (`GFP_KERNEL` vs `__GFP_RECLAIMABLE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum KmemKind {
    /// `MIGRATE_UNMOVABLE`, owner `KernelUnmovable`.
    Unmovable,
    /// `MIGRATE_RECLAIMABLE`, owner `KernelReclaimable`.
    Reclaimable,
}

impl KmemKind {
    fn migrate(self) -> MigrateType {
        match self {
            KmemKind::Unmovable => MigrateType::Unmovable,
            KmemKind::Reclaimable => MigrateType::Reclaimable,
        }
    }

    fn owner(self) -> OwnerKind {
        match self {
            KmemKind::Unmovable => OwnerKind::KernelUnmovable,
            KmemKind::Reclaimable => OwnerKind::KernelReclaimable,
        }
    }
}

/// A kernel allocation: its first frame and order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct KmemHandle {
    /// First frame.
    pub pfn: Pfn,
    /// Order of the block.
    pub order: Order,
}

impl Kernel {
    /// Allocate `2^order` frames of kernel memory of `kind`. The cost is one allocation
    /// plus any direct reclaim it needed.
    pub fn kmalloc(&mut self, kind: KmemKind, order: Order) -> Result<(KmemHandle, Nanos)> {
        let req = AllocRequest::new(order)
            .migrate(kind.migrate())
            .owner(kind.owner());
        let (block, reclaim) = self.mem().alloc(&req)?;
        let frames = 1u64 << order.0;
        match kind {
            KmemKind::Unmovable => self.stats.kmem_unmovable_pages += frames,
            KmemKind::Reclaimable => self.stats.kmem_reclaimable_pages += frames,
        }
        let handle = KmemHandle {
            pfn: block.pfn,
            order,
        };
        let evacuate = self.drain_evacuations();
        Ok((handle, self.costs.alloc + reclaim + evacuate))
    }

    /// Free a kernel allocation. A handle that is not a live kernel allocation of that
    /// order is refused with [`MmError::BadFree`] and changes nothing.
    pub fn kfree(&mut self, h: KmemHandle) -> Result<()> {
        let bad = |what| MmError::BadFree { pfn: h.pfn.0, what };
        let owner = match self.phys.frame(h.pfn).map(|f| f.state()) {
            Some(FrameState::Allocated { order, owner }) if order == h.order => owner,
            Some(FrameState::Allocated { .. }) => return Err(bad("order differs")),
            _ => return Err(bad("not the head of an allocated block")),
        };
        let counter = match owner {
            OwnerKind::KernelUnmovable => &mut self.stats.kmem_unmovable_pages,
            OwnerKind::KernelReclaimable => &mut self.stats.kmem_reclaimable_pages,
            _ => return Err(bad("not kernel memory")),
        };
        *counter = counter.saturating_sub(1 << h.order.0);
        self.phys.free(h.pfn, h.order)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pagecache::FileId;
    use crate::testutil::kernel;

    #[test]
    fn kernel_pages_carry_their_type_and_owner() {
        let mut k = kernel(64);
        let (h, cost) = k.kmalloc(KmemKind::Reclaimable, Order(2)).unwrap();
        assert_eq!(cost, Nanos(100));
        let f = k.phys().frame(h.pfn).unwrap();
        assert_eq!(f.owner(), Some(OwnerKind::KernelReclaimable));
        assert_eq!(
            k.phys().pageblock_type(h.pfn),
            Some(MigrateType::Reclaimable),
            "the fallback claimed a whole pageblock for it"
        );
        assert_eq!(k.stats().kmem_reclaimable_pages, 4);
        k.kfree(h).unwrap();
        assert_eq!(k.stats().kmem_reclaimable_pages, 0);
        k.check_invariants().unwrap();
    }

    #[test]
    fn bad_handles_are_errors() {
        let mut k = kernel(64);
        let (h, _) = k.kmalloc(KmemKind::Unmovable, Order(1)).unwrap();
        let wrong_order = KmemHandle {
            order: Order(0),
            ..h
        };
        assert!(k.kfree(wrong_order).is_err());
        assert!(k
            .kfree(KmemHandle {
                pfn: Pfn(1 << 40),
                order: Order(0)
            })
            .is_err());
        k.file_read(FileId(1), 0, 1);
        let cached = k.page_cache_frame(FileId(1), 0).unwrap();
        assert!(k
            .kfree(KmemHandle {
                pfn: cached,
                order: Order(0)
            })
            .is_err());
        k.kfree(h).unwrap();
        assert!(k.kfree(h).is_err(), "double free");
        k.check_invariants().unwrap();
    }

    #[test]
    fn kmalloc_reclaims_page_cache_directly_when_no_frame_is_free() {
        let mut k = kernel(16);
        k.file_read(FileId(1), 0, 1000);
        let raw = AllocRequest::new(Order(0))
            .migrate(MigrateType::Unmovable)
            .owner(OwnerKind::KernelUnmovable);
        while k.alloc_pages(&raw).is_ok() {} // the raw hook neither reclaims nor wakes kswapd
        let (_, cost) = k.kmalloc(KmemKind::Unmovable, Order(0)).unwrap();
        assert_eq!(
            cost,
            Nanos(100 + 32 * 1000),
            "one direct-reclaim batch charged"
        );
        assert_eq!((k.stats().allocstall, k.stats().pgsteal_direct), (1, 32));
        assert!(
            k.stats().pgsteal_kswapd > 0,
            "then kswapd restores the high watermark"
        );
        assert!(k.phys().frames_free() >= k.watermarks().high);
        k.check_invariants().unwrap();
    }
}
