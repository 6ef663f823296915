//! The page cache: files as sparse arrays of base pages, read through the cache
//! (`mm/filemap.c` `filemap_read`, `filemap_add_folio`), deleted (`truncate_inode_pages`)
//! and dropped (`echo 1 > /proc/sys/vm/drop_caches`, `invalidate_mapping_pages`).
//!
//! A miss allocates an order-0 movable frame owned by the page cache (through
//! [`Mem::alloc`](crate::reclaim), so it may reclaim), records the frame's page-cache
//! reverse map (file, index: see `frame.rs`) and puts the page at the inactive LRU head.
//! A hit marks the page accessed. Cost: every page read is copied to the reader
//! (`copy_time` of a base page); a miss adds `FragCosts::page_cache_read` and any direct
//! reclaim. A write caches its pages as a read does, and all cached pages stay clean (no
//! dirty state, no writeback). With buffer heads on (`Kernel::set_buffer_heads`) a page
//! written is given its buffer head if it has none, and the
//! buffer head is freed before the page whenever the page leaves the cache (reclaim,
//! deletion, `drop_caches`: [`Mem::evict_page`]). Page indices at or above
//! 2^32 are beyond the model's files and are not read (the frame packs the index in 32
//! bits). This module owns these mechanisms, on the borrow of allocation with reclaim
//! (`Mem`; the kernel's entry points are `kernel/pressure.rs`'s); the index and LRU are
//! `lru.rs`'s and eviction is `reclaim.rs`'s. It must not map pages into address spaces
//! (no file mmap).

// Shared vocabulary (`api.rs`: frames record it), kept at its public path here.
pub use crate::api::FileId;
use crate::phys::buddy::AllocRequest;
use crate::phys::frame::OwnerKind;
use crate::phys::pageblock::MigrateType;
use crate::pressure::kmem::KmemKind;
use crate::pressure::lru::Cached;
use crate::pressure::reclaim::Mem;
use crate::pressure::vfs::tree_nodes;
use hugemm_hw::{Nanos, Order};
use serde::Serialize;

/// Pages a file can have: indices are below 2^32.
pub const FILE_PAGES_MAX: u64 = 1 << 32;

/// The result of [`Kernel::file_read`](crate::Kernel::file_read).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FileRead {
    /// Time charged to the reader.
    pub cost: Nanos,
    /// Pages found in the cache.
    pub hits: u64,
    /// Pages read into the cache.
    pub inserted: u64,
    /// No frame could be found even after reclaim: the read stopped there.
    pub oom: bool,
}

impl Mem<'_> {
    /// Read (or, `write`, write) pages `first_page..first_page + pages` of `file` through
    /// the page cache ([`Kernel::file_read`](crate::Kernel::file_read),
    /// [`Kernel::file_write`](crate::Kernel::file_write)): the same but for the buffer
    /// heads a write attaches.
    pub fn file_access(
        &mut self,
        file: FileId,
        first_page: u64,
        pages: u64,
        write: bool,
    ) -> FileRead {
        let mut out = FileRead::default();
        let end = first_page.saturating_add(pages).min(FILE_PAGES_MAX);
        let copy = self.costs.copy_time(self.frame_bytes);
        // The file's tree nodes, with VFS objects on.
        let mut nodes = self.cache.vfs.as_ref().map(|v| v.nodes(file));
        if nodes.is_some() {
            out.cost += self.vfs_lookup(file);
        }
        for index in first_page..end {
            let index = index as u32;
            if let Some(id) = self.cache.lookup(file, index) {
                self.cache.mark_accessed(id);
                out.hits += 1;
                out.cost += copy;
            } else if let Some(cost) = self.read_into_cache(file, index) {
                out.inserted += 1;
                out.cost += cost + copy;
            } else {
                out.oom = true;
                break;
            }
            if let Some(have) = nodes.as_mut() {
                let need = tree_nodes(u64::from(index) + 1);
                if need > *have {
                    let (cost, now) = self.vfs_grow(file, need);
                    out.cost += cost;
                    *have = now;
                }
            }
            if write {
                out.cost += self.attach_buffer_head(file, index);
            }
        }
        self.stats.page_cache_hits += out.hits;
        self.stats.page_cache_inserted += out.inserted;
        self.stats.file_read_time += out.cost;
        out
    }

    /// Allocate a frame for page `index` of `file` and cache it; returns the cost.
    fn read_into_cache(&mut self, file: FileId, index: u32) -> Option<Nanos> {
        let req = AllocRequest::new(Order(0))
            .migrate(MigrateType::Movable)
            .owner(OwnerKind::PageCache);
        let (block, reclaim) = self.alloc(&req).ok()?;
        self.phys.frames.update(block.pfn.0 as u32, |f| {
            f.set_cache_rmap(file, index);
            f.set_zeroed(false);
        });
        self.cache.insert(file, index, block.pfn);
        Some(reclaim + self.frag.page_cache_read)
    }

    /// With buffer heads on ([`Kernel::set_buffer_heads`](crate::Kernel::set_buffer_heads)),
    /// give the cached page at `index` of `file`, just written, its buffer head unless it
    /// has one, as ext4's buffered write attaches one to each block of a page it writes
    /// (`create_empty_buffers` when `!page_has_buffers`, after the page is allocated; a
    /// read through `mpage_readpages` attaches none). Returns the direct-reclaim time a new
    /// slab needed. If no slab can be had, or reclaim meanwhile took the page, the page
    /// goes without.
    fn attach_buffer_head(&mut self, file: FileId, index: u32) -> Nanos {
        let Some(c) = self.slab.buffer_head_cache() else {
            return Nanos::ZERO;
        };
        if self.cache.object(file, index) != 0 {
            return Nanos::ZERO;
        }
        let Ok((id, _, reclaim)) = self.slab_alloc(c) else {
            return Nanos::ZERO;
        };
        if !self.cache.attach(file, index, id) {
            self.slab_free(id);
        }
        self.stats.kmem_reclaimable_pages = self.slab.frames(KmemKind::Reclaimable);
        reclaim
    }

    /// Drop page `index` of `file` from the cache and free it: the buffer head it
    /// carried first (`try_to_release_page`), then its frame.
    pub(crate) fn evict_page(&mut self, file: FileId, index: u32) {
        let Some((pfn, object)) = self.cache.remove(file, index) else {
            return;
        };
        if object != 0 {
            self.slab_free(object);
            self.stats.kmem_reclaimable_pages = self.slab.frames(KmemKind::Reclaimable);
        }
        if self.phys.free(pfn, Order(0)).is_err() {
            self.stats.internal_errors += 1;
        }
    }

    /// Delete `file`: free every page it has cached, and with VFS objects on its inode
    /// and tree nodes (its dentry stays, negative). Returns the pages freed.
    pub fn file_delete(&mut self, file: FileId) -> u64 {
        let pages = self.cache.file_pages(file);
        let freed = self.uncache(&pages);
        self.vfs_delete(file);
        freed
    }

    /// Free every clean page-cache page (`echo 1 > /proc/sys/vm/drop_caches`); all cached
    /// pages are clean. With VFS objects on, the tree nodes of each file that had pages
    /// go too (`invalidate_mapping_pages` clears the shadow entries; files with none
    /// cached are skipped, as `drop_pagecache_sb` skips them). Returns the pages freed.
    pub fn drop_caches(&mut self) -> u64 {
        let pages: Vec<Cached> = self.cache.iter().collect();
        let freed = self.uncache(&pages);
        if self.cache.vfs.is_some() {
            let mut files: Vec<FileId> = pages.iter().map(|p| p.file).collect();
            files.dedup();
            for file in files {
                self.vfs_drop_tree(file);
            }
        }
        freed
    }

    fn uncache(&mut self, pages: &[Cached]) -> u64 {
        for p in pages {
            self.evict_page(p.file, p.index);
        }
        pages.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pressure::kmem::KmemCache;
    use crate::testutil::kernel;
    use hugemm_hw::Pfn;

    #[test]
    fn a_second_read_hits_and_costs_only_the_copy() {
        let mut k = kernel(64);
        let first = k.file_read(FileId(3), 10, 4);
        assert_eq!((first.hits, first.inserted, first.oom), (0, 4, false));
        // miss: read (alloc 100 + copy 1000) + copy out 1000
        assert_eq!(first.cost, Nanos(4 * 2100));
        let again = k.file_read(FileId(3), 8, 4);
        assert_eq!((again.hits, again.inserted), (2, 2));
        assert_eq!(k.page_cache_pages(), 6);
        let f = k
            .phys()
            .frame(k.page_cache_frame(FileId(3), 11).unwrap())
            .unwrap();
        assert_eq!(f.owner(), Some(OwnerKind::PageCache));
        assert_eq!(f.cache_rmap(), Some((FileId(3), 11)));
        k.check_invariants().unwrap();
    }

    #[test]
    fn delete_and_drop_caches_free_the_pages() {
        let mut k = kernel(64);
        let free = k.phys().frames_free();
        k.file_read(FileId(1), 0, 30);
        k.file_read(FileId(2), 0, 20);
        assert_eq!(k.file_delete(FileId(1)), 30);
        assert_eq!(k.file_delete(FileId(1)), 0);
        assert_eq!(k.drop_caches(), 20);
        assert_eq!(k.phys().frames_free(), free);
        k.check_invariants().unwrap();
    }

    #[test]
    fn buffer_heads_live_and_die_with_their_pages_and_are_never_shrunk() {
        let mut k = kernel(64);
        let free = k.phys().frames_free();
        let reclaimable = |k: &crate::Kernel| k.stats().kmem_reclaimable_pages;
        k.file_write(FileId(1), 0, 100);
        assert_eq!(reclaimable(&k), 0, "off by default");
        k.file_delete(FileId(1));
        k.set_buffer_heads().unwrap();
        // 39 buffer heads (104 B) to a 4 KiB slab: 100 pages, 3 slabs.
        k.file_write(FileId(1), 0, 100);
        assert_eq!(reclaimable(&k), 3);
        assert_eq!(k.phys().frames_free(), free - 103);
        // A reclaimable object of a workload's, shrunk under pressure; the buffer heads
        // are not: reclaim frees them only with their pages.
        let dentry = KmemCache {
            kind: KmemKind::Reclaimable,
            order: Order(0),
            object_bytes: 192,
        };
        k.kmem_cache_alloc(dentry).unwrap();
        let out = k.reclaim(60);
        assert!(out.freed >= 60);
        assert_eq!(
            k.page_cache_pages(),
            40,
            "reclaim takes the inactive tail, oldest first"
        );
        assert_eq!(k.stats().slab_shrunk_objects, 1, "the dentry is shrunk");
        // 40 buffer heads left: the slab of the first 39 pages went with them (its last
        // object freed); the second slab keeps 18, the CPU slab 22; the dentry's emptied
        // CPU slab stays, as SLUB keeps it.
        assert_eq!(reclaimable(&k), 2 + 1);
        k.check_invariants().unwrap();
        // Deleting the file frees its buffer heads and the slabs they emptied but the CPU
        // slab, until `kmem_cache_shrink`.
        assert_eq!(k.file_delete(FileId(1)), 40);
        assert_eq!(reclaimable(&k), 1 + 1);
        assert_eq!(
            k.kmem_cache_shrink(),
            2,
            "the buffer heads' and the dentry's CPU slabs"
        );
        assert_eq!(k.phys().frames_free(), free);
        k.check_invariants().unwrap();
    }

    /// ext4 attaches buffer heads to the pages it writes, not to those `mpage_readpages`
    /// reads; a write to a page read before gives it one, a second write no other.
    #[test]
    fn only_a_written_page_carries_a_buffer_head_and_only_one() {
        let mut k = kernel(64);
        k.set_buffer_heads().unwrap();
        let reclaimable = |k: &crate::Kernel| k.stats().kmem_reclaimable_pages;
        k.file_read(FileId(1), 0, 39);
        assert_eq!(reclaimable(&k), 0, "reads attach none");
        k.file_write(FileId(1), 0, 39);
        assert_eq!(
            reclaimable(&k),
            1,
            "39 written pages: one slab of buffer heads"
        );
        let free = k.phys().frames_free();
        k.file_write(FileId(1), 0, 39);
        assert_eq!(reclaimable(&k), 1, "written again: no second buffer head");
        assert_eq!(k.phys().frames_free(), free);
        k.file_write(FileId(1), 39, 1);
        assert_eq!(
            reclaimable(&k),
            2,
            "a 40th page's buffer head takes a new slab"
        );
        k.file_delete(FileId(1));
        k.kmem_cache_shrink();
        assert_eq!(reclaimable(&k), 0);
        k.check_invariants().unwrap();
    }

    /// A buffer head's slab is a kernel allocation like any other: under AAF its fallback
    /// claims a pageblock and queues its evacuation, which the write carries out.
    #[test]
    fn a_buffer_heads_fallback_under_aaf_evacuates_within_the_write() {
        let mut k = kernel(4);
        // Page cache in both pageblocks of the 1,024 frames, with room in each for the
        // other's: 612 pages cached, then 256 of them deleted.
        k.file_read(FileId(10), 0, 256);
        k.file_read(FileId(11), 0, 256);
        k.file_read(FileId(1), 0, 100);
        k.file_delete(FileId(10));
        k.set_fallback_policy(Box::new(crate::fallback::Aaf));
        k.set_buffer_heads().unwrap();
        let out = k.file_write(FileId(2), 0, 1);
        assert_eq!(k.phys().fallback_stats().evacuations_requested, 1);
        assert!(k.stats().evacuations > 0, "evacuated within the write");
        // The buffer head's pageblock holds its slab and no page cache any more.
        let slab = (0..k.phys().frames_total())
            .map(Pfn)
            .find(|&p| k.phys().frame(p).unwrap().owner() == Some(OwnerKind::KernelReclaimable))
            .expect("the buffer heads' slab");
        let lo = slab.0 & !511;
        let cached = (lo..lo + 512)
            .filter(|&p| k.phys().frame(Pfn(p)).unwrap().owner() == Some(OwnerKind::PageCache))
            .count();
        assert_eq!(cached, 0);
        assert!(out.cost > Nanos::ZERO);
        k.check_invariants().unwrap();
    }

    #[test]
    fn indices_past_the_model_limit_are_not_read() {
        let mut k = kernel(64);
        let out = k.file_read(FileId(1), FILE_PAGES_MAX - 2, 10);
        assert_eq!(out.inserted, 2);
        assert_eq!(k.file_read(FileId(1), u64::MAX, 10).inserted, 0);
    }
}
