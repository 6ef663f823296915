//! Kernel allocations (`kmalloc`/`kfree` at page granularity: slab pages, kernel stacks,
//! dentry and inode caches): unmovable or reclaimable frames taken from the buddy
//! allocator with their migrate type, so the fallback policy decides where they land
//! (APSys'16 section 2: these are the "sysPages" that pollute user pageblocks).
//!
//! Allocation goes through [`Mem::alloc`](crate::reclaim) (direct reclaim of page cache
//! for orders <= 3, kswapd below the low watermark). Kernel frames are never migrated.
//! The workload holding a [`KmemHandle`] frees it; reclaimable blocks may be freed
//! earlier by the slab shrinker under memory pressure (`slab.rs`), and their holder's
//! `kfree` is then a no-op. This module owns the two entry points and their counters (the
//! kinds and handles are `pressure/kmem.rs`'s); it must not choose pageblocks.

use crate::error::{MmError, Result};
use crate::kernel::Kernel;
use crate::phys::buddy::AllocRequest;
use crate::phys::frame::FrameState;
use crate::pressure::kmem::{KmemHandle, KmemKind};
use crate::pressure::slab::Release;
use hugemm_hw::{Nanos, Order, Pfn};

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
        self.kmem_id += 1;
        let handle = KmemHandle {
            pfn: block.pfn,
            order,
            id: self.kmem_id,
        };
        match kind {
            KmemKind::Unmovable => {
                self.kmem_unmovable.insert(handle.id, (block.pfn, order));
            }
            KmemKind::Reclaimable => self.slab.insert(handle.id, block.pfn, order),
        }
        let evacuate = self.drain_evacuations();
        Ok((handle, self.costs.alloc + reclaim + evacuate))
    }

    /// Free a kernel allocation. A reclaimable block the slab shrinker already freed is
    /// a no-op. A handle that is not a live kernel allocation is refused with
    /// [`MmError::BadFree`] and changes nothing: one freed twice, or one whose frames the
    /// shrinker freed and another allocation now holds, never frees that allocation.
    pub fn kfree(&mut self, h: KmemHandle) -> Result<()> {
        let bad = |what| MmError::BadFree { pfn: h.pfn.0, what };
        let registered = |live: Option<&(Pfn, Order)>| live == Some(&(h.pfn, h.order));
        let kind = if registered(self.kmem_unmovable.get(&h.id)) {
            KmemKind::Unmovable
        } else {
            match self.slab.state(h.id, h.pfn, h.order) {
                Release::Live => KmemKind::Reclaimable,
                Release::Shrunk => {
                    self.slab.release(h.id);
                    return Ok(());
                }
                Release::Unknown => return Err(bad("not a live kernel allocation")),
            }
        };
        // The registries and the frames agree (`check_invariants` checks it); a
        // disagreement is the model's bug, refused before anything changes.
        match self.phys.frame(h.pfn).map(|f| f.state()) {
            Some(FrameState::Allocated { order, owner })
                if order == h.order && owner == kind.owner() => {}
            _ => return Err(bad("its frames are not the kernel block it names")),
        }
        let counter = match kind {
            KmemKind::Unmovable => {
                self.kmem_unmovable.remove(&h.id);
                &mut self.stats.kmem_unmovable_pages
            }
            KmemKind::Reclaimable => {
                self.slab.release(h.id);
                &mut self.stats.kmem_reclaimable_pages
            }
        };
        *counter = counter.saturating_sub(1 << h.order.0);
        self.phys.free(h.pfn, h.order)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phys::frame::OwnerKind;
    use crate::phys::pageblock::MigrateType;
    use crate::pressure::pagecache::FileId;
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
                order: Order(0),
                id: 99,
            })
            .is_err());
        k.file_read(FileId(1), 0, 1);
        let cached = k.page_cache_frame(FileId(1), 0).unwrap();
        assert!(k
            .kfree(KmemHandle {
                pfn: cached,
                order: Order(0),
                id: h.id,
            })
            .is_err());
        k.kfree(h).unwrap();
        assert!(k.kfree(h).is_err(), "double free");
        k.check_invariants().unwrap();
    }

    /// A stale handle (freed, or shrunk) whose frames another allocation now holds is
    /// refused and never frees that allocation (found by `tests/frag_properties.rs`).
    #[test]
    fn stale_handles_never_free_the_allocation_that_reused_their_frames() {
        let mut k = kernel(64);
        // A reclaimable block the shrinker frees, then an unmovable one in its frames.
        let (shrunk, _) = k.kmalloc(KmemKind::Reclaimable, Order(3)).unwrap();
        assert_eq!(k.reclaim(1).freed, 8, "the slab alone is shrunk");
        let (reuser, _) = k.kmalloc(KmemKind::Unmovable, Order(3)).unwrap();
        assert_eq!(reuser.pfn, shrunk.pfn, "the test needs the frames reused");
        k.kfree(shrunk).unwrap();
        assert!(k.kfree(shrunk).is_err(), "a shrunk handle freed twice");
        // An unmovable block freed, then another unmovable one in its frames.
        k.kfree(reuser).unwrap();
        let (again, _) = k.kmalloc(KmemKind::Unmovable, Order(3)).unwrap();
        assert_eq!(again.pfn, reuser.pfn, "the test needs the frames reused");
        assert!(k.kfree(reuser).is_err(), "an unmovable handle freed twice");
        let f = k.phys().frame(again.pfn).unwrap();
        assert_eq!(
            f.owner(),
            Some(OwnerKind::KernelUnmovable),
            "still allocated"
        );
        assert_eq!(k.stats().kmem_unmovable_pages, 8);
        k.check_invariants().unwrap();
        k.kfree(again).unwrap();
        assert_eq!(k.stats().kmem_unmovable_pages, 0);
        k.check_invariants().unwrap();
    }

    #[test]
    fn reclaim_shrinks_reclaimable_slab_in_proportion_and_its_holders_free_nothing() {
        let mut k = kernel(64);
        let slab: Vec<_> = (0..100)
            .map(|_| k.kmalloc(KmemKind::Reclaimable, Order(0)).unwrap().0)
            .collect();
        let pinned = k.kmalloc(KmemKind::Unmovable, Order(0)).unwrap().0;
        k.file_read(FileId(1), 0, 999);
        let free = k.phys().frames_free();
        // One batch: 32 of the LRU's 999 pages (3.2% with Linux's +1) scan 6.4% of
        // the slab, oldest first: 6 pages now, 0.4 of a page carried over.
        let out = k.reclaim(32);
        assert_eq!(out.freed, 32 + 6);
        assert_eq!(k.phys().frames_free(), free + 38);
        assert_eq!(k.stats().slab_reclaimed_pages, 6);
        assert_eq!(k.stats().kmem_reclaimable_pages, 94);
        assert_eq!(
            k.stats().kmem_unmovable_pages,
            1,
            "unmovable memory is never shrunk"
        );
        k.check_invariants().unwrap();
        // The holder of a shrunk block frees nothing, even once its frames are reused.
        let reused = k.kmalloc(KmemKind::Reclaimable, Order(0)).unwrap().0;
        for h in &slab[..6] {
            k.kfree(*h).unwrap();
        }
        assert_eq!(
            k.stats().kmem_reclaimable_pages,
            95,
            "the reused block is live"
        );
        k.kfree(slab[6]).unwrap();
        assert!(k.kfree(slab[6]).is_err(), "double free of a live block");
        k.kfree(reused).unwrap();
        k.kfree(pinned).unwrap();
        // With the page cache gone, reclaim shrinks the slab alone.
        k.drop_caches();
        assert_eq!(k.reclaim(10).freed, 10);
        assert_eq!(k.stats().kmem_reclaimable_pages, 83);
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
