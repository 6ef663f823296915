//! Kernel-wide counters: faults by kind, collapses, splits, out-of-memory events, kernel
//! and page-cache pages, reclaim, compaction and migration (named after Linux's
//! `/proc/vmstat` where one exists), and the time spent in each mechanism.
//!
//! Owns the counters and their recording helpers. It must not influence behaviour.

use crate::api::MigrateType;
use crate::api::{FaultKind, FaultOutcome};
use hugemm_hw::Nanos;
use serde::Serialize;

/// Faults counted by what they did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FaultCounts {
    /// New 4 KB pages ([`FaultKind::Base`]).
    pub base: u64,
    /// New 2 MB pages.
    pub huge: u64,
    /// Zero-page mappings.
    pub zero_page: u64,
    /// Huge-zero-page mappings.
    pub huge_zero_page: u64,
    /// Copy-on-write of the zero page.
    pub cow_zero_page: u64,
    /// Wanted 2 MB, got 4 KB.
    pub huge_fallback: u64,
    /// Faults on an address that was already mapped (nothing done).
    pub spurious: u64,
    /// Faults outside every VMA (nothing done).
    pub segfault: u64,
}

impl FaultCounts {
    /// The count of faults that did `kind` (the two no-op kinds are not reachable here).
    pub fn get(&self, kind: FaultKind) -> u64 {
        match kind {
            FaultKind::Base => self.base,
            FaultKind::Huge => self.huge,
            FaultKind::ZeroPage => self.zero_page,
            FaultKind::HugeZeroPage => self.huge_zero_page,
            FaultKind::CowZeroPage => self.cow_zero_page,
            FaultKind::HugeFallback => self.huge_fallback,
        }
    }

    /// Faults that mapped something (or tried to and ran out of memory).
    pub fn total(&self) -> u64 {
        self.base
            + self.huge
            + self.zero_page
            + self.huge_zero_page
            + self.cow_zero_page
            + self.huge_fallback
    }

    fn add(&mut self, kind: FaultKind) {
        *match kind {
            FaultKind::Base => &mut self.base,
            FaultKind::Huge => &mut self.huge,
            FaultKind::ZeroPage => &mut self.zero_page,
            FaultKind::HugeZeroPage => &mut self.huge_zero_page,
            FaultKind::CowZeroPage => &mut self.cow_zero_page,
            FaultKind::HugeFallback => &mut self.huge_fallback,
        } += 1;
    }
}

/// Kernel-wide counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct KernelStats {
    /// Faults by kind.
    pub faults: FaultCounts,
    /// Successful collapses.
    pub collapses: u64,
    /// Failed collapses (any reason).
    pub collapse_failures: u64,
    /// Huge mappings split into tables (explicit, or by a fault or a partial unmap).
    pub splits: u64,
    /// Faults that found no free frame.
    pub oom_events: u64,
    /// Time charged by faults.
    pub fault_time: Nanos,
    /// Time charged by collapses.
    pub collapse_time: Nanos,
    /// Time charged by explicit splits ([`Kernel::split`](crate::Kernel::split)).
    pub split_time: Nanos,
    /// Frees the allocator refused: always 0 unless the model has a bug.
    pub internal_errors: u64,
    /// Frames held by unmovable kernel memory: slabs, with their free slots, and page
    /// allocations ([`KmemKind::Unmovable`](crate::KmemKind); now).
    pub kmem_unmovable_pages: u64,
    /// Frames held by reclaimable kernel memory ([`KmemKind::Reclaimable`](crate::KmemKind);
    /// now).
    pub kmem_reclaimable_pages: u64,
    /// Frames of reclaimable kernel memory the slab shrinker freed under memory pressure
    /// (`slab.rs`; Linux counts these in `reclaimed_slab`, not in `/proc/vmstat`).
    pub slab_reclaimed_pages: u64,
    /// Reclaimable objects the slab shrinker freed; their slabs' frames are in
    /// `slab_reclaimed_pages` once the last object of each is gone.
    pub slab_shrunk_objects: u64,
    /// Reclaimable objects the slab shrinker scanned and rotated to its LRU's tail
    /// instead, referenced (`[kernel] shrinker = "linux-4.1"`; 0 otherwise).
    pub slab_rotated_objects: u64,
    /// Live inodes, dentries (positive and negative) and page-cache tree nodes, with VFS
    /// objects on (`Kernel::set_vfs_objects`; now, 0 otherwise), as `/proc/slabinfo`'s
    /// `active_objs` of `ext4_inode_cache`, `dentry` and `radix_tree_node`.
    pub vfs_inodes: u64,
    /// See `vfs_inodes`.
    pub vfs_dentries: u64,
    /// See `vfs_inodes`.
    pub vfs_tree_nodes: u64,
    /// Page-cache reads that found the page cached.
    pub page_cache_hits: u64,
    /// Pages read or written into the page cache (misses; Linux `pgpgin` in pages).
    pub page_cache_inserted: u64,
    /// Time charged to file readers and writers (`file_read`, `file_write`).
    pub file_read_time: Nanos,
    /// Allocations that entered direct reclaim (`allocstall`).
    pub allocstall: u64,
    /// Pages reclaimed by direct (and explicit) reclaim (`pgsteal_direct`).
    pub pgsteal_direct: u64,
    /// Pages reclaimed by kswapd (`pgsteal_kswapd`).
    pub pgsteal_kswapd: u64,
    /// Times kswapd was woken below the low watermark or by a watermark boost.
    pub kswapd_wakes: u64,
    /// Fallbacks that boosted the watermark (`boost_watermark`; only with boosting on).
    pub watermark_boosts: u64,
    /// Allocations above order 0 that Linux 4.1 would not have taken on its fast path:
    /// its per-order watermark check (`__zone_watermark_ok`) at `low` failed when the
    /// model allocated ([`crate::pressure::reclaim::zone_watermark_ok_4_1`]). Linux 4.1
    /// would have sent each to its slow path (kswapd woken at that order, the check
    /// again at `min`, direct compaction); the model takes the block as it would any
    /// other. A count of where the model's order-0 check departs from 4.1's, not a
    /// behaviour.
    pub order_watermark_misses: u64,
    /// Time of direct and explicit reclaim (charged to callers).
    pub direct_reclaim_time: Nanos,
    /// Time kswapd spent (charged to no process).
    pub kswapd_time: Nanos,
    /// Direct compactions run (`compact_stall`).
    pub compact_stall: u64,
    /// Direct compactions after which the order was available (`compact_success`).
    pub compact_success: u64,
    /// Direct compactions that did not free a block of the order (`compact_fail`).
    pub compact_fail: u64,
    /// Compaction runs of any kind that scanned memory.
    pub compact_runs: u64,
    /// Frames examined by the migrate scanner (`compact_migrate_scanned`).
    pub compact_migrate_scanned: u64,
    /// Frames examined by the free scanner (`compact_free_scanned`).
    pub compact_free_scanned: u64,
    /// Time spent compacting (all kinds).
    pub compact_time: Nanos,
    /// Pages migrated by compaction and evacuation (`pgmigrate_success`).
    pub pgmigrate_success: u64,
    /// Pages compaction or evacuation failed to migrate (`pgmigrate_fail`).
    pub pgmigrate_fail: u64,
    /// Pageblocks evacuated.
    pub evacuations: u64,
    /// Time spent evacuating pageblocks.
    pub evacuate_time: Nanos,
    /// Superpage reservations made at a 4 KB fault (FreeBSD `vm_reserv_alloc_page`
    /// reserving an order-9 block).
    pub reservations_made: u64,
    /// Reservations that ended without promotion, for any reason: memory pressure, an
    /// unmap or `MADV_DONTNEED` touching the region, process exit, a VMA cut through it,
    /// a collapse (FreeBSD's `vm.reserv.broken` plus `vm.reserv.freed`).
    pub reservations_broken: u64,
    /// Of those, broken under memory pressure, least recently changed first
    /// (`vm_reserv_reclaim_inactive`, FreeBSD's `vm.reserv.reclaimed`).
    pub reservations_reclaimed: u64,
    /// Reserved frames no page mapped, returned to the buddy allocator by breaking.
    pub reserv_frames_returned: u64,
    /// Time spent breaking reservations (charged to the caller, or to kswapd).
    pub reserv_break_time: Nanos,
    /// Fully populated reservations promoted in place to a huge mapping, no copy
    /// (`pmap_promote_pde`, FreeBSD's `vm.pmap.pde.promotions`). Not in `collapses`.
    pub promotions_in_place: u64,
    /// Time charged by in-place promotions (to the fault that mapped the last page).
    pub promotion_time: Nanos,
    /// Frames cleared synchronously when mapped (faults, collapses, reservations).
    pub cleared_pages: u64,
    /// Frames mapped without clearing because they were known zero (pre-zeroed).
    pub clear_skipped_pages: u64,
    /// Free frames zeroed by pre-zeroing ([`Kernel::prezero`](crate::Kernel::prezero)).
    pub prezeroed_pages: u64,
    /// Huge pages scanned for zero-filled base pages (bloat recovery, THP shrinker).
    pub zero_scan_huge_pages: u64,
    /// Bytes those scans read (each base page up to its first non-zero byte).
    pub zero_scan_bytes: u64,
    /// Zero-filled base pages found by those scans.
    pub zero_subpages_found: u64,
    /// Huge pages split because they held more zero-filled base pages than allowed.
    pub zero_dedup_splits: u64,
    /// Zero-filled base pages of split huge pages remapped to the shared zero page, their
    /// frames freed.
    pub zero_subpages_recovered: u64,
    /// Time of those scans and splits (charged to the caller).
    pub zero_scan_time: Nanos,
}

/// Pageblock fallback events (`__rmqueue_fallback`), counted by the stealing mechanism
/// (`steal.rs`) whatever the policy; read with
/// [`PhysMem::fallback_stats`](crate::PhysMem::fallback_stats).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FallbackStats {
    /// Allocations that fell back to another migrate type's free lists.
    pub fallbacks: u64,
    /// Pageblocks claimed (retyped to the requester's type) by a fallback; a block above
    /// pageblock order counts each pageblock it covers.
    pub pageblocks_claimed: u64,
    /// Fallbacks that stole free pages from a pageblock without claiming it.
    pub stolen_without_claim: u64,
    /// Pageblocks queued for evacuation (AAF) in [`PhysMem::take_evacuations`](crate::PhysMem::take_evacuations).
    pub evacuations_requested: u64,
    /// Pageblocks whose counters a policy examined while choosing (see each policy).
    pub pageblocks_scanned: u64,
    /// Fallbacks taken while some CPU's per-CPU list held a block of the requested type
    /// and order, which draining the lists would have served. Linux does not drain
    /// before it falls back (only before an allocation fails), nor does the model; these
    /// count what the lists hide. 0 without per-CPU lists.
    pub beside_per_cpu_blocks: u64,
    /// Where the kernel's own pageblocks' frames were each time a kernel request fell back
    /// below a pageblock (the fallbacks that can taint a user pageblock).
    pub kernel_census: KernelFallbackCensuses,
    /// Where the zone's free memory was each time a movable request fell back.
    pub movable_census: MovableFallbackCensus,
    /// Every fallback by what was asked, what was taken and whether the pageblock
    /// changed owner: the fields of Linux's `kmem:mm_page_alloc_extfrag` tracepoint, so
    /// that a model run compares event for event with a real kernel's trace
    /// (`tools/kbuild-probe/extfrag.py`). Sorted by (alloc, taken, order, claimed).
    pub events: Vec<FallbackEventCount>,
    /// Fallbacks in each zone, lowest first, on a node split into zones (empty
    /// otherwise, so the summaries of machines without zones are unchanged).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub by_zone: Vec<u64>,
}

/// Where the kernel's pageblocks' frames were when kernel requests fell back below a
/// pageblock, one census per requesting type.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct KernelFallbackCensuses {
    /// At unmovable requests' fallbacks.
    pub unmovable: KernelFallbackCensus,
    /// At reclaimable requests' fallbacks.
    pub reclaimable: KernelFallbackCensus,
}

/// The frames of every unmovable and reclaimable pageblock, by where they were, summed
/// over the moments a kernel request fell back and took a block below pageblock order,
/// counted before the steal moves anything. A kernel request falls back when its own
/// lists are empty; this says where the kernel pageblocks' memory was at those moments:
/// allocated to the kernel, to movable owners (page cache and anonymous memory a movable
/// fallback placed there), free on some type's lists (the other kernel type's, whose
/// blocks Linux 4.1 passes over for a larger one elsewhere; the movable lists', the rest
/// of a block a movable fallback split), or held on some CPU's per-CPU list. Divide by
/// `fallbacks` for the mean at one moment.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct KernelFallbackCensus {
    /// The moments counted.
    pub fallbacks: u64,
    /// Unmovable and reclaimable pageblocks.
    pub pageblocks: u64,
    /// Their frames allocated to kernel owners (kernel memory and page tables).
    pub kernel: u64,
    /// Their frames allocated to movable owners (anonymous memory and page cache).
    pub movable: u64,
    /// Their free frames on each type's buddy lists, by type (unmovable, movable,
    /// reclaimable; a kernel pageblock's frames are never on the reserve's).
    pub free_on: [u64; MigrateType::REQUESTS.len()],
    /// Their frames held on per-CPU lists, by the list's type.
    pub per_cpu: [u64; MigrateType::REQUESTS.len()],
    /// The moments by the largest free block on the other kernel type's lists
    /// anywhere: entry `o + 1` for order `o`, entry 0 when those lists were empty.
    pub other_kernel_largest: Vec<u64>,
    /// The moments by the order of the block taken.
    pub taken_order: Vec<u64>,
}

/// The free frames of the zone a movable request fell back in, on each type's buddy
/// lists, summed over those moments (counted before the fallback takes anything; the
/// per-CPU lists' frames are not free to the buddy allocator and are not counted). A
/// movable request falls back only when the Movable lists hold no block of its order or
/// more, so this says where the zone's free memory was instead: on the kernel types'
/// lists (pages freed in kernel pageblocks) or in the reserve. Divide by `fallbacks` for
/// the mean at one moment.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MovableFallbackCensus {
    /// The moments counted: every movable request that found its lists empty with free
    /// memory in the zone, also one its fallback then served from the reserve (so this
    /// can exceed [`FallbackStats::fallbacks`]' movable share).
    pub fallbacks: u64,
    /// Free frames on each type's lists (unmovable, movable, reclaimable, reserve).
    pub free_on: [u64; MigrateType::COUNT],
}

/// Fallbacks of one kind (one row of [`FallbackStats::events`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct FallbackEventCount {
    /// The migrate type asked for (`alloc_migratetype`).
    pub alloc: MigrateType,
    /// The type of the free list the block was taken from (`fallback_migratetype`).
    pub taken_from: MigrateType,
    /// The order of the block taken (`fallback_order`).
    pub order: u8,
    /// Whether its pageblock changed owner (`change_ownership`).
    pub claimed: bool,
    /// How many such fallbacks.
    pub count: u64,
}

impl FallbackStats {
    /// Count one fallback event.
    pub(crate) fn record_event(
        &mut self,
        alloc: MigrateType,
        from: MigrateType,
        order: u8,
        claimed: bool,
    ) {
        let key = (alloc, from, order, claimed);
        let at = self
            .events
            .binary_search_by(|e| (e.alloc, e.taken_from, e.order, e.claimed).cmp(&key));
        match at {
            Ok(i) => self.events[i].count += 1,
            Err(i) => self.events.insert(
                i,
                FallbackEventCount {
                    alloc,
                    taken_from: from,
                    order,
                    claimed,
                    count: 1,
                },
            ),
        }
    }
}

/// How a fault that changed nothing is counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NoOp {
    Spurious,
    Segfault,
}

impl KernelStats {
    /// Count a fault that mapped something or ran out of memory.
    pub(crate) fn record_fault(&mut self, out: &FaultOutcome) {
        self.faults.add(out.kind);
        self.oom_events += out.oom as u64;
        self.fault_time += out.cost;
    }

    /// Count a fault that did nothing.
    pub(crate) fn record_noop(&mut self, why: NoOp, cost: Nanos) {
        match why {
            NoOp::Spurious => self.faults.spurious += 1,
            NoOp::Segfault => self.faults.segfault += 1,
        }
        self.fault_time += cost;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hugemm_hw::PageSize;

    #[test]
    fn faults_are_counted_by_kind_and_oom() {
        let mut s = KernelStats::default();
        let out = FaultOutcome {
            kind: FaultKind::CowZeroPage,
            size: PageSize::Base,
            cost: Nanos(7),
            alloc: Nanos(2),
            zeroing: Nanos(1),
            oom: true,
        };
        s.record_fault(&out);
        s.record_noop(NoOp::Segfault, Nanos(1));
        assert_eq!(s.faults.get(FaultKind::CowZeroPage), 1);
        assert_eq!(
            (s.faults.total(), s.faults.segfault, s.oom_events),
            (1, 1, 1)
        );
        assert_eq!(s.fault_time, Nanos(8));
    }
}
