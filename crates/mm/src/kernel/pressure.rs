//! The kernel's entry points to reclaimable memory and reclaim (`pressure/`): the
//! watermarks, explicit reclaim, and the page cache (reads, deletes, drops and lookups).
//! The mutating ones borrow physical memory, the page cache and the counters
//! ([`Kernel::mem`]) and run the mechanism there.
//!
//! Owns these entry points only: the mechanisms are `pressure/`'s. Kernel allocations
//! (`kmem.rs`) and compaction (`compaction.rs`) have entry points of their own beside this
//! file, since they also migrate pages.

use crate::api::FileId;
use crate::kernel::Kernel;
use crate::pressure::pagecache::FileRead;
use crate::pressure::reclaim::{ReclaimOutcome, Watermarks};
use hugemm_hw::Pfn;

impl Kernel {
    /// The zone's watermarks.
    pub fn watermarks(&self) -> Watermarks {
        self.wmark
    }

    /// Reclaim about `pages` frames of page cache and reclaimable slab now (like writing
    /// to cgroup v2's `memory.reclaim`; see `Mem::shrink`), charged to the caller and
    /// counted as direct reclaim.
    pub fn reclaim(&mut self, pages: u64) -> ReclaimOutcome {
        let mut mem = self.mem();
        let freed = mem.shrink(pages);
        let cost = mem.reclaim_time(freed);
        mem.stats.pgsteal_direct += freed;
        mem.stats.direct_reclaim_time += cost;
        ReclaimOutcome { freed, cost }
    }

    /// Read pages `first_page..first_page + pages` of `file` through the page cache.
    pub fn file_read(&mut self, file: FileId, first_page: u64, pages: u64) -> FileRead {
        self.mem().file_read(file, first_page, pages)
    }

    /// Delete `file`: free every page it has cached. Returns the pages freed.
    pub fn file_delete(&mut self, file: FileId) -> u64 {
        self.mem().file_delete(file)
    }

    /// Free every clean page-cache page (`echo 1 > /proc/sys/vm/drop_caches`); all cached
    /// pages are clean. Returns the pages freed.
    pub fn drop_caches(&mut self) -> u64 {
        self.mem().drop_caches()
    }

    /// Pages in the page cache.
    pub fn page_cache_pages(&self) -> u64 {
        self.cache.pages()
    }

    /// The frame caching page `index` of `file`, if cached.
    pub fn page_cache_frame(&self, file: FileId, index: u64) -> Option<Pfn> {
        let index = u32::try_from(index).ok()?;
        self.cache.lookup(file, index).map(|id| self.cache.pfn(id))
    }
}
