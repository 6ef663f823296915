//! Page migration (`mm/migrate.c` `migrate_pages` for one order-0 folio) and pageblock
//! evacuation.
//!
//! [`Kernel::migrate_frame`] moves one movable order-0 frame to a frame the caller
//! allocated with the same owner: an anonymous page's PTE is rewritten to the new frame
//! keeping its accessed and dirty bits (`remove_migration_pte`), its reverse map moves,
//! and a TLB flush of that page is recorded (`try_to_migrate` clears the PTE with a
//! flush); a page-cache page's index entry is repointed (`folio_migrate_mapping`). The old
//! frame is freed. Cost: a copy of the page + one PTE (or index) write + the flush for
//! anonymous pages; the caller adds the allocation if it made one. Compound pages (a
//! mapped huge page), frames of a superpage reservation (`reserv.rs`: a reserved frame
//! must stay at its offset) and kernel frames are not migrated, and the zero pages have
//! no frame.
//!
//! [`Kernel::evacuate_pageblock`] migrates every movable order-0 page out of one
//! pageblock to movable frames allocated elsewhere (APSys'16 section 4.1, active
//! anti-fragmentation). Destinations come straight from the buddy allocator (no reclaim:
//! evacuation is best effort and frees as many frames as it takes); one the allocator
//! hands out inside the pageblock itself is held aside until the end.
//!
//! Owns the migration mechanism; it must not choose what to migrate (compaction and the
//! fallback policy do).

use crate::api::TlbFlush;
use crate::error::{MmError, Result};
use crate::kernel::Kernel;
use crate::phys::buddy::AllocRequest;
use crate::phys::frame::{FrameState, OwnerKind};
use crate::phys::pageblock::MigrateType;
use crate::space::pagetable::Slot;
use crate::space::pte::Pte;
use hugemm_hw::{Nanos, Order, Pfn, VirtAddr};
use serde::Serialize;

/// The result of [`Kernel::evacuate_pageblock`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct EvacuateOutcome {
    /// Pages moved out of the pageblock.
    pub migrated: u64,
    /// Movable in-use frames still in the pageblock afterwards: pages for which no frame
    /// could be allocated, and the frames of huge pages (never migrated).
    pub failed: u64,
    /// Time charged to the caller.
    pub cost: Nanos,
}

fn broken(what: &'static str, at: Pfn) -> MmError {
    MmError::Invariant { what, at: at.0 }
}

impl Kernel {
    /// Move the movable order-0 frame `src` to `dst`, an order-0 frame the caller
    /// allocated with `src`'s owner; frees `src`. On error nothing changed and the caller
    /// still owns `dst`. Returns the copy, the entry write and any flush.
    pub(crate) fn migrate_frame(&mut self, src: Pfn, dst: Pfn) -> Result<Nanos> {
        let owner = match self.phys.frame(src).map(|f| f.state()) {
            Some(FrameState::Allocated {
                order: Order(0),
                owner,
            }) if owner.is_movable() && !self.reserv.holds(src) => owner,
            _ => {
                return Err(MmError::InvalidArgument {
                    what: "only movable order-0 frames outside reservations migrate",
                })
            }
        };
        let dst_ok = matches!(
            self.phys.frame(dst).map(|f| f.state()),
            Some(FrameState::Allocated { order: Order(0), owner: o }) if o == owner
        );
        if !dst_ok || dst == src {
            return Err(broken(
                "migration target not an order-0 frame of the owner",
                dst,
            ));
        }
        let moved = match owner {
            OwnerKind::Anon => self.move_anon(src, dst)?,
            _ => self.move_cached(src, dst)?,
        };
        self.phys.free(src, Order(0))?;
        Ok(self.costs.copy_time(self.layout.base_bytes()) + moved)
    }

    /// Repoint the PTE mapping `src` at `dst`; record its flush.
    fn move_anon(&mut self, src: Pfn, dst: Pfn) -> Result<Nanos> {
        let l = self.layout;
        let (pid, vpn) = self
            .phys
            .frame(src)
            .and_then(|f| f.rmap())
            .ok_or(broken("anonymous frame without a reverse map", src))?;
        let va = vpn.0 << l.base_shift;
        let space = self
            .procs
            .get_mut(pid.0 as usize)
            .and_then(Option::as_mut)
            .ok_or(broken("reverse map names a dead process", src))?;
        let Some(Slot::Table(table)) = space.pt.slot_mut_uncached(va) else {
            return Err(broken("reverse map names no PTE", src));
        };
        let pte = table.get(l.page_index(va));
        if !pte.is_frame() || pte.pfn() != src {
            return Err(broken("the PTE does not map the frame", src));
        }
        table.set(
            l.page_index(va),
            Pte::frame(dst, pte.accessed(), pte.dirty()).with_written(pte.written()),
        );
        self.phys.map_frames(dst, 1, pid, vpn);
        self.phys.copy_content(src, dst);
        self.flushes.push(TlbFlush {
            pid,
            start: VirtAddr(va),
            end: VirtAddr(va + l.base_bytes()),
        });
        Ok(self.costs.pte_update + self.costs.tlb_flush)
    }

    /// Repoint the page-cache index entry of `src` at `dst`.
    fn move_cached(&mut self, src: Pfn, dst: Pfn) -> Result<Nanos> {
        let (file, index) = self
            .phys
            .frame(src)
            .and_then(|f| f.cache_rmap())
            .ok_or(broken("page-cache frame without a reverse map", src))?;
        let index = index as u32;
        if !self.cache.set_pfn(file, index, src, dst) {
            return Err(broken("page-cache index does not hold the frame", src));
        }
        self.phys.frames.update(dst.0 as u32, |f| {
            f.set_cache_rmap(file, index);
            f.set_zeroed(false);
        });
        Ok(self.costs.pte_update)
    }

    /// Evacuate the pageblocks a fallback policy claimed whole for the kernel (AAF,
    /// APBS's high level: [`PhysMem::take_evacuations`](crate::PhysMem::take_evacuations)).
    /// Called after every kernel-side allocation (kernel memory, page-table pages); returns
    /// the time, charged to that allocation.
    pub(crate) fn drain_evacuations(&mut self) -> Nanos {
        let mut cost = Nanos::ZERO;
        for start in self.phys.take_evacuations() {
            match self.evacuate_pageblock(start) {
                Ok(out) => cost += out.cost,
                Err(_) => self.stats.internal_errors += 1,
            }
        }
        cost
    }

    /// Migrate every movable order-0 page out of the pageblock holding `start` to movable
    /// frames elsewhere. Fails only when `start` is beyond memory.
    pub fn evacuate_pageblock(&mut self, start: Pfn) -> Result<EvacuateOutcome> {
        let total = self.phys.frames_total();
        if start.0 >= total {
            return Err(MmError::InvalidArgument {
                what: "pageblock beyond memory",
            });
        }
        let pb = 1u64 << self.phys.pageblock_order().0;
        let (lo, hi) = (start.0 & !(pb - 1), (start.0 | (pb - 1)) + 1);
        let hi = hi.min(total);
        let mut held = vec![false; (hi - lo) as usize];
        let mut out = EvacuateOutcome::default();
        let mut pfn = lo;
        while pfn < hi {
            let step = match self.phys.frames.at(pfn as u32).state() {
                FrameState::Allocated {
                    order: Order(0),
                    owner,
                } if owner.is_movable()
                    && !held[(pfn - lo) as usize]
                    && !self.reserv.holds(Pfn(pfn)) =>
                {
                    self.evacuate_one(Pfn(pfn), owner, (lo, hi), &mut held, &mut out);
                    1
                }
                FrameState::FreeHead { order, .. } | FrameState::Allocated { order, .. } => {
                    1 << order.0
                }
                _ => 1,
            };
            pfn += step;
        }
        for (i, _) in held.iter().enumerate().filter(|(_, h)| **h) {
            self.phys.free(Pfn(lo + i as u64), Order(0))?;
        }
        out.failed = self.movable_frames_in(lo, hi);
        self.stats.evacuations += 1;
        self.stats.evacuate_time += out.cost;
        self.stats.pgmigrate_success += out.migrated;
        self.stats.pgmigrate_fail += out.failed;
        Ok(out)
    }

    /// Move `src` to a frame outside `lo..hi`, holding frames the allocator returns
    /// inside it.
    fn evacuate_one(
        &mut self,
        src: Pfn,
        owner: OwnerKind,
        (lo, hi): (u64, u64),
        held: &mut [bool],
        out: &mut EvacuateOutcome,
    ) {
        let req = AllocRequest::new(Order(0))
            .migrate(MigrateType::Movable)
            .owner(owner);
        while let Ok(block) = self.phys.alloc(&req) {
            let dst = block.pfn;
            if (lo..hi).contains(&dst.0) {
                held[(dst.0 - lo) as usize] = true;
                continue;
            }
            match self.migrate_frame(src, dst) {
                Ok(cost) => {
                    out.migrated += 1;
                    out.cost += cost + self.costs.alloc;
                }
                Err(_) => {
                    self.stats.internal_errors += self.phys.free(dst, Order(0)).is_err() as u64;
                }
            }
            return;
        }
    }

    /// Allocated frames of movable owners in `lo..hi`.
    pub(crate) fn movable_frames_in(&self, lo: u64, hi: u64) -> u64 {
        self.phys
            .frames
            .range(lo as u32, (hi - lo) as u32)
            .filter(|f| f.owner().is_some_and(OwnerKind::is_movable))
            .count() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::HugeAdvice;
    use crate::pressure::kmem::KmemKind;
    use crate::pressure::pagecache::FileId;
    use crate::testutil::{kernel, HUGE, PAGE};
    use hugemm_hw::PageSize;

    #[test]
    fn migrating_an_anonymous_page_keeps_its_bits_and_records_a_flush() {
        let mut k = kernel(64);
        let pid = k.create_process();
        let va = k.mmap(pid, PAGE, HugeAdvice::None).unwrap();
        k.fault(pid, va, true, PageSize::Base);
        k.take_tlb_flushes();
        let src = Pfn(k.translate(pid, va).unwrap().pa / PAGE);
        let dst = k.phys.alloc(&AllocRequest::new(Order(0))).unwrap().pfn;
        let cost = k.migrate_frame(src, dst).unwrap();
        assert_eq!(cost, Nanos(1000 + 10 + 300));
        assert_eq!(k.translate(pid, va).unwrap().pa, dst.0 * PAGE);
        let info = k.region_info(pid, va);
        assert_eq!((info.accessed, info.dirty), (1, 1));
        assert_eq!(k.take_tlb_flushes().len(), 1);
        assert!(!k.phys.frame(src).unwrap().is_allocated());
        k.check_invariants().unwrap();
    }

    #[test]
    fn kernel_and_huge_frames_do_not_migrate() {
        let mut k = kernel(64);
        let (h, _) = k.kmalloc(KmemKind::Unmovable, Order(0)).unwrap();
        let dst = k.phys.alloc(&AllocRequest::new(Order(0))).unwrap().pfn;
        assert!(k.migrate_frame(h.pfn, dst).is_err());
        let pid = k.create_process();
        let va = k.mmap(pid, HUGE, HugeAdvice::Hugepage).unwrap();
        k.fault(pid, va, true, PageSize::Huge);
        let huge = Pfn(k.translate(pid, va).unwrap().pa / PAGE);
        assert!(k.migrate_frame(huge, dst).is_err());
        k.phys.free(dst, Order(0)).unwrap();
        k.check_invariants().unwrap();
    }

    #[test]
    fn evacuation_empties_a_pageblock_of_movable_pages() {
        let mut k = kernel(64);
        let pid = k.create_process();
        let va = k.mmap(pid, 100 * PAGE, HugeAdvice::None).unwrap();
        for i in 0..100 {
            k.fault(pid, VirtAddr(va.0 + i * PAGE), true, PageSize::Base);
        }
        k.file_read(FileId(1), 0, 50);
        let block = Pfn(k.page_cache_frame(FileId(1), 0).unwrap().0 & !511);
        let out = k.evacuate_pageblock(block).unwrap();
        assert_eq!((out.migrated, out.failed), (150, 0));
        let lo = block.0;
        let movable = (lo..lo + 512)
            .filter(|&p| k.phys.frame(Pfn(p)).unwrap().owner() == Some(OwnerKind::Anon))
            .count();
        assert_eq!(movable, 0);
        assert_eq!(k.phys.frames_free(), k.phys.frames_total() - 150 - 1);
        k.check_invariants().unwrap();
        assert!(k.evacuate_pageblock(Pfn(1 << 30)).is_err());
    }
}
