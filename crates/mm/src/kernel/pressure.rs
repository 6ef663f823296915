//! The kernel's entry points to reclaimable memory and reclaim (`pressure/`): the
//! watermarks, explicit reclaim, and the page cache (reads, deletes, drops and lookups).
//! The mutating ones borrow physical memory, the page cache and the counters
//! ([`Kernel::mem`]) and run the mechanism there.
//!
//! Owns these entry points only: the mechanisms are `pressure/`'s. Kernel allocations
//! (`kmem.rs`) and compaction (`compaction.rs`) have entry points of their own beside this
//! file, since they also migrate pages.

use crate::api::{FileId, KswapdMode};
use crate::error::{MmError, Result};
use crate::kernel::Kernel;
use crate::pressure::compaction::CompactRequest;
use crate::pressure::pagecache::FileRead;
use crate::pressure::reclaim::{
    zone_watermark_ok_4_1, Mem, ReclaimOutcome, Watermarks, PAGE_ALLOC_COSTLY_ORDER,
    SWAP_CLUSTER_MAX,
};
use crate::pressure::zones::KswapdNext;
use hugemm_hw::{Nanos, Order, Pfn};

/// What [`Kernel::direct_reclaim_4_1`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DirectReclaim4_1 {
    /// Frames freed.
    pub freed: u64,
    /// Time charged to the caller.
    pub cost: Nanos,
    /// Reclaim was skipped because compaction is ready.
    pub compaction_ready: bool,
}

impl DirectReclaim4_1 {
    /// `did_some_progress` as 4.1's allocator sees it: the frames freed, or 1 when
    /// reclaim stood aside for compaction.
    pub fn progress(&self) -> u64 {
        self.freed.max(u64::from(self.compaction_ready))
    }
}

/// `DEF_PRIORITY`: kswapd's passes over the zone before it gives up (`balance_pgdat`
/// loops while `sc.priority >= 1`).
const KSWAPD_PASSES: u32 = 12;
/// `KSWAPD_ZONE_BALANCE_GAP_RATIO`: the balance gap is at most 1% of the zone.
const BALANCE_GAP_RATIO: u64 = 100;

impl Kernel {
    /// The zone's watermarks.
    pub fn watermarks(&self) -> Watermarks {
        self.wmark
    }

    /// Reclaim about `pages` frames of page cache and reclaimable slab now (like writing
    /// to cgroup v2's `memory.reclaim`; see `Mem::shrink`), charged to the caller and
    /// counted as direct reclaim.
    pub fn reclaim(&mut self, pages: u64) -> ReclaimOutcome {
        self.reclaim_with(|mem| mem.shrink(pages))
    }

    /// Run `shrink` as direct reclaim: its frames and time counted and charged.
    fn reclaim_with(&mut self, shrink: impl FnOnce(&mut Mem<'_>) -> u64) -> ReclaimOutcome {
        let mut mem = self.mem();
        let freed = shrink(&mut mem);
        let cost = mem.reclaim_time(freed);
        mem.stats.pgsteal_direct += freed;
        mem.stats.direct_reclaim_time += cost;
        ReclaimOutcome { freed, cost }
    }

    /// Linux 4.1's direct reclaim for an allocation of `order` that failed
    /// (`try_to_free_pages` for one zone), counted and charged as [`Kernel::reclaim`].
    /// 4.1 does three
    /// things a plain 32-page reclaim does not:
    /// - above `PAGE_ALLOC_COSTLY_ORDER` it reclaims nothing when compaction is ready
    ///   (`shrink_zones`' `compaction_ready`: more than `high`, the balance gap
    ///   (`min(low, 1% of the zone)`) and `2 << order` frames free, and compaction not
    ///   skipped, or only the first if the zone's compaction of the order is deferred:
    ///   `compaction_deferred`, asked once per zone and call, where 4.1 asks it on each
    ///   of `do_try_to_free_pages`' passes), and the caller sees
    ///   progress all the same (`do_try_to_free_pages` returns 1 then:
    ///   [`DirectReclaim4_1::progress`]);
    /// - above `PAGE_ALLOC_COSTLY_ORDER` reclaim goes on in 32-page rounds
    ///   (`should_continue_reclaim`, the reclaim/compaction mode) until `2 << order`
    ///   pages are reclaimed, if the inactive lists hold more than that (the model's page
    ///   cache stands for them: it has no active/inactive split, and no swap), then
    ///   while compaction would still be skipped;
    /// - a round that frees nothing ends it (`__GFP_REPEAT` goes on while anything is
    ///   scanned; the model's cache is all clean, so a round that scanned something
    ///   freed something).
    ///
    /// At order 3 and below it is one round of `SWAP_CLUSTER_MAX`.
    ///
    /// On a machine of zones the zonelist's zones (highest first) are judged apart, as
    /// `shrink_zones` does: a costly order passes over each zone where compaction is
    /// ready (progress without reclaim if that is every zone), each round takes
    /// `SWAP_CLUSTER_MAX` pages from the others in proportion to their LRU pages, and a
    /// zone leaves the rounds once `2 << order` pages are reclaimed and compaction would
    /// not be skipped there (`should_continue_reclaim` per zone).
    pub fn direct_reclaim_4_1(&mut self, order: Order) -> DirectReclaim4_1 {
        let costly = order.0 > PAGE_ALLOC_COSTLY_ORDER;
        let by_zone = self.compacts_by_zone();
        let mut list: Option<Vec<usize>> = self.zones.as_ref().map(|zones| {
            (0..self.phys.zone_count())
                .rev()
                .filter(|&z| {
                    // `compaction_ready` asks `compaction_deferred`, which counts.
                    !(costly && {
                        let deferral = self.compact.deferral(if by_zone { z } else { 0 });
                        let deferred = deferral.deferred(order);
                        zones.compaction_ready_4_1(&self.phys, z, order, deferred)
                    })
                })
                .collect()
        });
        let ready = match &list {
            Some(list) => list.is_empty(),
            None => {
                costly && {
                    let deferred = self.compact.deferral(0).deferred(order);
                    self.compaction_ready_4_1(order, deferred)
                }
            }
        };
        if ready {
            return DirectReclaim4_1 {
                freed: 0,
                cost: Nanos::ZERO,
                compaction_ready: true,
            };
        }
        let pages_for_compaction = 2u64 << order.0;
        let mut out = DirectReclaim4_1::default();
        loop {
            let r = match &list {
                Some(list) => self.reclaim_zones(list, SWAP_CLUSTER_MAX),
                None => self.reclaim(SWAP_CLUSTER_MAX),
            };
            out.freed += r.freed;
            out.cost += r.cost;
            if !costly || r.freed == 0 {
                return out;
            }
            let more =
                out.freed < pages_for_compaction && self.page_cache_pages() > pages_for_compaction;
            if more {
                continue;
            }
            match (list.as_mut(), self.zones.as_ref()) {
                (Some(list), Some(zones)) => {
                    list.retain(|&z| !zones.compaction_not_skipped_4_1(&self.phys, z, order, z));
                    if list.is_empty() {
                        return out;
                    }
                }
                _ if self.compaction_can_run_4_1(order) => return out,
                _ => {}
            }
        }
    }

    /// [`Kernel::reclaim`] from the zones `list` only (`Mem::shrink_zones`).
    pub(crate) fn reclaim_zones(&mut self, list: &[usize], pages: u64) -> ReclaimOutcome {
        self.reclaim_with(|mem| mem.shrink_zones(list.iter().copied(), pages))
    }

    /// 4.1's balance gap above `high` (kswapd's `balance_gap`, `compaction_ready`'s):
    /// `min(low, 1% of the zone)`.
    fn balance_gap_4_1(&self) -> u64 {
        self.wmark
            .low
            .min(self.phys.checked_frames_total().div_ceil(BALANCE_GAP_RATIO))
    }

    /// 4.1's `compaction_ready` (vmscan.c) for this zone.
    fn compaction_ready_4_1(&self, order: Order, deferred: bool) -> bool {
        let w = self.wmark;
        let gap = self.balance_gap_4_1();
        let watermark_ok = self.phys.checked_frames_free() > w.high + gap + (2u64 << order.0);
        if deferred {
            return watermark_ok;
        }
        watermark_ok && self.compaction_can_run_4_1(order)
    }

    /// Linux 4.1's per-order watermark check for this zone
    /// ([`zone_watermark_ok_4_1`]).
    pub fn zone_watermark_ok_4_1(&self, order: Order, mark: u64) -> bool {
        zone_watermark_ok_4_1(&self.phys, order, mark)
    }

    /// Linux 4.1's kswapd woken for an allocation of `order` (`wakeup_kswapd`, then
    /// `balance_pgdat` and `kswapd_shrink_zone` for one zone), run at once as the model's
    /// kswapd is; its time goes to `KernelStats::kswapd_time`.
    ///
    /// It sleeps if the zone is balanced at `order`: 4.1's per-order check passes at
    /// `high` and, above order 0, compaction could run (`zone_balanced`). Otherwise each
    /// pass reclaims when the zone is not balanced at the order it tests (0 if compaction
    /// could run, else `order`) with the balance gap (`min(low, 1% of the zone)`) above
    /// `high`: `SWAP_CLUSTER_MAX` pages at a time, up to `high` pages
    /// (`nr_to_reclaim`), until the zone is balanced at that order or, above order 0,
    /// `2 << order` pages are reclaimed, after which kswapd checks order 0 only. If the
    /// pass reclaimed more than it attempted and the order is still above 0, it compacts
    /// for the order (`compact_pgdat`; the model's direct run, without the deferral).
    /// With one zone of 2-4 GiB that never happens (`high` is more than `2 << 10`;
    /// `experiments/apsys16/README.md`). Passes end when the zone is balanced, a pass
    /// reclaims nothing, or after 12 (`DEF_PRIORITY`). Linux's passes are bounded by how
    /// much each priority scans, which the model leaves out: a pass here reclaims what
    /// the conditions above allow at once.
    ///
    /// On a machine of zones, kswapd balances each zone up to the highest, the classzone
    /// of stress-highalloc's requests (`Mem::kswapd_zones` at `order`), at once or on its
    /// own thread as `[kernel] kswapd` says.
    pub fn kswapd_4_1(&mut self, order: Order) {
        if self.zones.is_some() {
            let class = self.phys.zone_count() - 1;
            self.mem().kswapd_zones(class, order);
            return;
        }
        let w = self.wmark;
        let gap = self.balance_gap_4_1();
        let target = w.high.max(SWAP_CLUSTER_MAX);
        let mut order = order;
        if self.zone_balanced_4_1(order, w.high) {
            return;
        }
        self.stats.kswapd_wakes += 1;
        for _ in 0..KSWAPD_PASSES {
            let needs_compaction = order.0 > 0 && !self.zone_watermark_ok_4_1(order, w.low);
            let test = match order.0 > 0 && self.compaction_can_run_4_1(order) {
                true => Order(0),
                false => order,
            };
            let mut reclaimed = 0;
            if !self.zone_balanced_4_1(test, w.high + gap) {
                while reclaimed < target
                    && !(order.0 > 0 && reclaimed >= 2 << order.0)
                    && !self.zone_balanced_4_1(test, w.high)
                {
                    let mut mem = self.mem();
                    let freed = mem.shrink(SWAP_CLUSTER_MAX);
                    mem.stats.pgsteal_kswapd += freed;
                    mem.stats.kswapd_time += mem.reclaim_time(freed);
                    if freed == 0 {
                        break;
                    }
                    reclaimed += freed;
                }
            }
            if order.0 > 0 && reclaimed >= 2 << order.0 {
                order = Order(0);
            }
            if needs_compaction && order.0 > 0 && reclaimed > target {
                let out = self.compact(CompactRequest::Direct { order });
                self.stats.kswapd_time += out.cost;
            }
            if reclaimed == 0 || self.zone_balanced_4_1(order, w.high) {
                break;
            }
        }
    }

    /// When kswapd does its work on a machine of zones ([`KswapdMode`]). Asynchronous
    /// kswapd needs zones: without them the model checks no watermark before an order-0
    /// allocation, so nothing would stop free memory at `min` while kswapd lags.
    pub fn set_kswapd(&mut self, mode: KswapdMode) -> Result<()> {
        let zones = match (mode, self.zones.as_mut()) {
            (KswapdMode::Immediate, None) => return Ok(()),
            (KswapdMode::Async, None) => {
                return Err(MmError::InvalidConfig {
                    what: "kswapd on its own thread needs a machine of zones",
                })
            }
            (_, Some(zones)) => zones,
        };
        zones.kswapd.enabled = mode == KswapdMode::Async;
        if !zones.kswapd.enabled {
            zones.kswapd.woken = None;
            zones.kswapd.nap = None;
            zones.kswapd.reclaimed = 0;
            zones.kswapd.fresh = false;
        }
        Ok(())
    }

    /// One step of kswapd on its own thread (`Mem::kswapd_step`: at most
    /// `SWAP_CLUSTER_MAX` pages from each unbalanced zone, or the look at the zones at
    /// the end of a nap); returns its time and what kswapd does next. Asleep, or run at
    /// once, it does nothing.
    pub fn kswapd_step(&mut self) -> (Nanos, KswapdNext) {
        self.mem().kswapd_step()
    }

    /// kswapd runs on its own thread and is awake (it has steps to run).
    pub fn kswapd_awake(&self) -> bool {
        self.zones
            .as_ref()
            .is_some_and(|z| z.kswapd.woken.is_some())
    }

    /// kswapd on its own thread was woken since the last [`Kernel::take_kswapd_wake`].
    pub fn kswapd_woken(&self) -> bool {
        self.zones.as_ref().is_some_and(|z| z.kswapd.fresh)
    }

    /// Whether kswapd on its own thread was woken since the last call (the engine then
    /// schedules its first step).
    pub fn take_kswapd_wake(&mut self) -> bool {
        self.zones
            .as_mut()
            .is_some_and(|z| std::mem::take(&mut z.kswapd.fresh))
    }

    /// 4.1's `zone_balanced`: the per-order check passes at `mark` and, above order 0,
    /// `compaction_suitable` does not skip.
    fn zone_balanced_4_1(&self, order: Order, mark: u64) -> bool {
        self.zone_watermark_ok_4_1(order, mark)
            && (order.0 == 0 || self.compaction_can_run_4_1(order))
    }

    /// 4.1's `compaction_suitable` is not `COMPACT_SKIPPED`: the order's watermark at
    /// `low` is met already (`COMPACT_PARTIAL`), or more than `low + 2 << order` frames
    /// are free and the fragmentation index says the failure is fragmentation.
    fn compaction_can_run_4_1(&self, order: Order) -> bool {
        self.zone_watermark_ok_4_1(order, self.wmark.low) || self.compaction_suitable_4_1(order)
    }

    /// Page-cache pages on zone `zone`'s LRU lists (all of them with one zone).
    pub fn zone_page_cache_pages(&self, zone: usize) -> u64 {
        self.cache.zone_pages(zone)
    }

    /// Read pages `first_page..first_page + pages` of `file` through the page cache.
    pub fn file_read(&mut self, file: FileId, first_page: u64, pages: u64) -> FileRead {
        let mut out = self.mem().file_access(file, first_page, pages, false);
        if self.cache.vfs.is_some() {
            let evacuate = self.drain_evacuations();
            out.cost += evacuate;
            self.stats.file_read_time += evacuate;
        }
        out
    }

    /// Write pages `first_page..first_page + pages` of `file` through the page cache: as
    /// [`Kernel::file_read`], and with buffer heads on each page written gets one if it
    /// has none. Their slabs are kernel allocations: AAF's evacuations of the pageblocks
    /// they claimed are carried out and charged to the write, as after any kernel
    /// allocation.
    pub fn file_write(&mut self, file: FileId, first_page: u64, pages: u64) -> FileRead {
        let mut out = self.mem().file_access(file, first_page, pages, true);
        let evacuate = self.drain_evacuations();
        out.cost += evacuate;
        self.stats.file_read_time += evacuate;
        out
    }

    /// Look `file`'s name up without reading or writing it: with VFS objects on
    /// ([`Kernel::set_vfs_objects`]), a name `found` (a file or directory that exists)
    /// gets its inode and dentry, and a name not found (and whose file does not exist) a
    /// negative dentry; a name looked up before references its dentry again. Returns
    /// the direct-reclaim time its slabs needed; nothing without VFS objects.
    pub fn file_lookup(&mut self, file: FileId, found: bool) -> Nanos {
        if self.cache.vfs.is_none() {
            return Nanos::ZERO;
        }
        let mut cost = self.mem().vfs_lookup_name(file, found);
        let evacuate = self.drain_evacuations();
        cost += evacuate;
        self.stats.file_read_time += cost;
        cost
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
