//! Kernel allocations (`kmalloc` of whole blocks: kernel stacks, page allocations;
//! `kmem_cache_alloc` of slab objects: task structures, dentries, inodes; `kfree` of
//! either): unmovable or reclaimable frames taken from the buddy allocator with their
//! migrate type, so the fallback policy decides where they land (APSys'16 section 2:
//! these are the "sysPages" that pollute user pageblocks).
//!
//! A new slab is allocated through [`Mem::alloc`](crate::reclaim) (direct reclaim of page
//! cache for orders <= 3, kswapd below the low watermark). Kernel frames are never
//! migrated. The workload holding a [`KmemHandle`] frees it; reclaimable objects may be
//! freed earlier by the slab shrinker under memory pressure (`slab.rs`), and their
//! holder's `kfree` is then a no-op. Which slab an object goes into, and when a slab is
//! freed, is `slab.rs`'s. This module owns the entry points and their counters (the
//! kinds and handles are `pressure/kmem.rs`'s); it must not choose pageblocks.

use crate::error::{MmError, Result};
use crate::kernel::Kernel;
use crate::phys::buddy::AllocRequest;
use crate::phys::frame::FrameState;
use crate::pressure::kmem::{KmemCache, KmemHandle, KmemKind};
use crate::pressure::reclaim::Mem;
use crate::pressure::slab::Release;
use hugemm_hw::{Nanos, Order, Pfn};

impl Kernel {
    /// Allocate `2^order` frames of kernel memory of `kind` as one block (a page
    /// allocation: a kernel stack, a page table, a kmalloc too large for a slab). The
    /// cost is one allocation plus any direct reclaim it needed.
    pub fn kmalloc(&mut self, kind: KmemKind, order: Order) -> Result<(KmemHandle, Nanos)> {
        let base = self.layout.base_bytes();
        self.kmem_cache_alloc(KmemCache::pages(kind, order, base))
    }

    /// Allocate one object of the slab cache `cache` (`kmem_cache_alloc`): into the
    /// cache's CPU slab or its oldest partial slab, else into a new slab from the buddy
    /// allocator (`slab.rs`). The handle names the object's slab. The cost is one
    /// allocation, plus any direct reclaim a new slab needed.
    pub fn kmem_cache_alloc(&mut self, cache: KmemCache) -> Result<(KmemHandle, Nanos)> {
        let c = self.slab.cache(cache, self.layout.base_bytes())?;
        let (id, pfn, reclaim) = self.mem().slab_alloc(c)?;
        self.sync_kmem_stats();
        let handle = KmemHandle {
            pfn,
            order: cache.order,
            id,
        };
        let evacuate = self.drain_evacuations();
        Ok((handle, self.costs.alloc + reclaim + evacuate))
    }

    /// Free a kernel allocation; its slab goes back to the buddy allocator if it was the
    /// slab's last object. An object the slab shrinker already freed is a no-op. A handle
    /// that is not a live kernel allocation is refused with [`MmError::BadFree`] and
    /// changes nothing: one freed twice, or one whose object the shrinker freed and whose
    /// id or frames another allocation now holds, never frees that allocation.
    pub fn kfree(&mut self, h: KmemHandle) -> Result<()> {
        let bad = |what| MmError::BadFree { pfn: h.pfn.0, what };
        let kind = match self.slab.state(h.id, h.pfn, h.order) {
            Release::Live(kind) => kind,
            Release::Shrunk => {
                self.slab.release(h.id);
                return Ok(());
            }
            Release::Unknown => return Err(bad("not a live kernel allocation")),
        };
        // The slabs and the frames agree (`check_invariants` checks it); a disagreement is
        // the model's bug, refused before anything changes.
        match self.phys.frame(h.pfn).map(|f| f.state()) {
            Some(FrameState::Allocated { order, owner })
                if order == h.order && owner == kind.owner() => {}
            _ => return Err(bad("its frames are not the kernel block it names")),
        }
        if let Some((pfn, order)) = self.slab.release(h.id) {
            self.mem().free_slab(pfn, order);
        }
        self.sync_kmem_stats();
        Ok(())
    }

    /// `kmem_cache_shrink` of every cache: free the CPU slabs left empty (`slab.rs`
    /// keeps them, as SLUB does). Returns the frames freed.
    pub fn kmem_cache_shrink(&mut self) -> u64 {
        let mut frames = 0;
        for (pfn, order) in self.slab.release_empty() {
            frames += 1 << order.0;
            self.mem().free_slab(pfn, order);
        }
        self.sync_kmem_stats();
        frames
    }

    /// The kernel-memory counters follow the slabs.
    fn sync_kmem_stats(&mut self) {
        self.stats.kmem_unmovable_pages = self.slab.frames(KmemKind::Unmovable);
        self.stats.kmem_reclaimable_pages = self.slab.frames(KmemKind::Reclaimable);
    }
}

impl Mem<'_> {
    /// Place a new object in slab cache `c`: its CPU slab or oldest partial slab, else a
    /// new slab from the buddy allocator (with reclaim). Returns the object's id, its
    /// slab and the direct-reclaim time a new slab needed.
    pub(crate) fn slab_alloc(&mut self, c: usize) -> Result<(u64, Pfn, Nanos)> {
        let (pfn, reclaim) = match self.slab.slab_with_room(c) {
            Some(pfn) => (pfn, Nanos::ZERO),
            None => {
                let spec = self.slab.spec(c);
                let req = AllocRequest::new(spec.order)
                    .migrate(spec.kind.migrate())
                    .owner(spec.kind.owner());
                let (block, reclaim) = self.alloc(&req)?;
                if let Some((old, order)) = self.slab.add_slab(c, block.pfn) {
                    self.free_slab(old, order);
                }
                (block.pfn, reclaim)
            }
        };
        let id = self.slab.next_id();
        self.slab.place(c, pfn, id);
        Ok((id, pfn, reclaim))
    }

    /// Free object `id`, which its holder owns outright (never shrunk: a buffer head),
    /// and its slab if it was the last.
    pub(crate) fn slab_free(&mut self, id: u64) {
        if let Some((pfn, order)) = self.slab.release(id) {
            self.free_slab(pfn, order);
        }
    }

    /// Return a slab's frames to the buddy allocator.
    pub(crate) fn free_slab(&mut self, pfn: Pfn, order: Order) {
        if self.phys.free(pfn, order).is_err() {
            self.stats.internal_errors += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phys::frame::OwnerKind;
    use crate::phys::pageblock::MigrateType;
    use crate::pressure::kmem::KmemCache;
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

    /// Objects share slabs: a long-lived object keeps its slab, and so its frames and
    /// pageblock, after every neighbour is freed; the shrinker frees objects, and a slab
    /// only when it empties.
    #[test]
    fn slab_objects_share_pages_and_the_last_object_frees_the_slab() {
        let mut k = kernel(64);
        let dentry = KmemCache {
            kind: KmemKind::Reclaimable,
            order: Order(0),
            object_bytes: 192,
        };
        let objs: Vec<_> = (0..42)
            .map(|_| k.kmem_cache_alloc(dentry).unwrap().0)
            .collect();
        assert_eq!(objs[20].pfn, objs[0].pfn, "21 dentries a page");
        assert_ne!(objs[21].pfn, objs[0].pfn);
        assert_eq!(k.stats().kmem_reclaimable_pages, 2);
        for h in &objs[1..] {
            k.kfree(*h).unwrap();
        }
        assert_eq!(
            k.stats().kmem_reclaimable_pages,
            2,
            "the first slab is held by its oldest object, the second is the CPU slab"
        );
        k.check_invariants().unwrap();
        // Reclaim with no page cache shrinks the slab: the oldest object goes, and
        // with it the first slab.
        assert_eq!(k.reclaim(1).freed, 1);
        assert_eq!(k.stats().slab_shrunk_objects, 1);
        assert_eq!(k.stats().kmem_reclaimable_pages, 1);
        k.kfree(objs[0]).unwrap();
        assert!(k.kfree(objs[0]).is_err(), "a shrunk handle freed twice");
        let bad = KmemCache {
            object_bytes: 8192,
            ..dentry
        };
        assert!(
            k.kmem_cache_alloc(bad).is_err(),
            "an object larger than its slab"
        );
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
