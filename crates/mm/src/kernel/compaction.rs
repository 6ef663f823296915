//! Memory compaction (`mm/compaction.c`, Linux 6.x `compact_zone`).
//!
//! Two scanners. The migrate scanner goes up from the bottom a pageblock at a time
//! (`isolate_migratepages`, `isolate_migratepages_block`), isolating in-use order-0
//! frames of movable owners (anonymous or page cache), `COMPACT_CLUSTER_MAX` (32) at a
//! time; it skips free blocks and compound pages by their order, and for direct
//! compaction (async) only scans Movable pageblocks (`suitable_migration_source`), while
//! full (`compact_memory`) and proactive compaction scan every pageblock. The free scanner
//! goes down from the top a pageblock at a time (frames of a superpage reservation are
//! skipped like compound pages: `reserv.rs`), taking free frames from pageblocks that
//! are `suitable_migration_target` (Movable, and not starting with a free block of at
//! least the request's order, or the pageblock order for whole-zone runs). Each isolated
//! page migrates to the next free frame (`migrate.rs`). A run ends when the scanners meet
//! (`compact_scanners_met`: the free scanner's pageblock is not above the migrate
//! scanner's) or `__compact_finished` says so:
//! - [`CompactRequest::Direct`]: at a pageblock boundary (Linux finishes the current
//!   pageblock first), a free block of order >= the request's exists on any list (Linux
//!   also asks that it suit the request's migrate type; the model's single caller is a
//!   movable huge page, and its fallback can steal any block). Before running,
//!   `compaction_suitable` may skip it: the order is already free; fewer free frames than
//!   the watermark (min, or low for costly orders) plus `compact_gap` (2 << order); or,
//!   for costly orders, `fragmentation_index` at most `extfrag_threshold` (500), meaning
//!   the failure is lack of memory, not fragmentation. Skipped runs are not stalls.
//!   With Linux 4.1's watermark check ([`WatermarkCheck::Linux4_1`]) both are 4.1's: a
//!   run is skipped when the order's watermark at `low` is met already (4.1's per-order
//!   check, `COMPACT_PARTIAL`), with no more than `low + 2 << order` frames free, or with
//!   the fragmentation index in `0..=500` at any order; it stops as soon as that
//!   watermark is met and a block of the order is free, wherever the migrate scanner is
//!   (the pageblock rule came with 4.12).
//! - [`CompactRequest::Full`] (`/proc/sys/vm/compact_memory`): the whole zone, until the
//!   scanners meet.
//! - [`CompactRequest::Proactive`] (kcompactd's `proactive_compact_node`): starts only if
//!   [`Kernel::fragmentation_score`] exceeds the high mark `min(low + 10, 100)` and runs
//!   until it is at most the low mark `max(100 - proactiveness, 5)`
//!   (`fragmentation_score_wmark`); proactiveness 0 disables it.
//!
//! Per-CPU lists: every run first returns all of them to the buddy allocator, and a
//! direct run (`cc->order > 0`) also returns the current CPU's once the migrate scanner
//! has left the order-aligned block it last migrated from (`compact_zone`'s
//! `drain_local_pages` after `last_migrated_pfn`, there since Linux 4.0), so that the
//! frames migration freed there can merge before `__compact_finished` looks for a free
//! block. Whole-zone and proactive runs (`cc->order == -1`) do not.
//!
//! Zones: on a node split into zones (`Kernel::with_zones`) every run works in one zone,
//! both scanners inside it, so no page moves to another zone. A direct request walks its
//! zonelist highest zone first (`try_to_compact_pages`), each zone judged by its own free
//! frames, watermarks, `lowmem_reserve` for the request's classzone and fragmentation
//! index: a zone that has what the request needs ends the walk, one `compaction_suitable`
//! refuses is passed over, and a run that makes its zone ready ends it. `compact_memory`
//! and proactive runs compact every zone in turn, lowest first (`compact_node`). Without
//! zones (and tiered machines, one zone a node) node 0 is one range, as before zones
//! existed; hole-aware runs keep that one range on any machine.
//!
//! Direct runs resume from the cached scanner positions of the previous direct run in
//! the same zone (`compact_cached_migrate_pfn` / `compact_cached_free_pfn`; one migrate
//! position, not one per sync mode); whole-zone runs start at the zone's ends. Positions
//! reset when the scanners meet. Each zone keeps its deferral after failures
//! (`compaction_deferred`, [`Deferral`]): [`CompactRequest::Deferred`] reads and updates
//! it zone by zone as 4.1's `try_to_compact_pages` does; for [`CompactRequest::Direct`]
//! the caller decides (`hugemm-sim`'s `compaction.rs`, through
//! [`Kernel::compaction_deferral`]). Skip hints
//! (`PB_migrate_skip`) and `fast_find_migrateblock` are not modelled. Cost:
//! `FragCosts::compact_scan` per frame either scanner examines, plus each migration. This module owns the scanners and the
//! stopping rules (their vocabulary and the state kept between runs are
//! `pressure/compaction.rs`'s); when to compact is a policy's decision.
//!
//! [`CompactMode::HoleAware`] replaces the two scanners by H-Policy's choice of what to
//! move (`compaction_holes.rs`); the requests, `compaction_suitable`, the stopping rules
//! and the counters stay as above.

use crate::api::WatermarkCheck;
use crate::error::{MmError, Result};
use crate::kernel::Kernel;
use crate::phys::frame::{FrameState, OwnerKind};
use crate::phys::pageblock::MigrateType;
use crate::pressure::compaction::{
    CompactMode, CompactOutcome, CompactRequest, Deferral, ScanPositions, COMPACT_CLUSTER_MAX,
    EXTFRAG_THRESHOLD,
};
use crate::pressure::reclaim::{zone_watermark_ok_4_1, PAGE_ALLOC_COSTLY_ORDER};
use crate::pressure::zones::{fragmentation_index, zone_fragmentation_index, zone_watermark_ok};
use hugemm_hw::{Nanos, Order, Pfn};

/// One run's scanners and tallies.
struct Run {
    /// The zone's first frame and its end (`total`).
    start: u64,
    migrate_pfn: u64,
    free_block: u64,
    free_pos: u64,
    met: bool,
    pb: u64,
    total: u64,
    movable_sources_only: bool,
    target_order: u8,
    /// Drain the current CPU's lists after each block migrated from (direct runs).
    drain_local: bool,
    /// The start of the `target_order`-aligned block holding the last page migrated
    /// since the current CPU's lists were last drained.
    last_migrated_block: Option<u64>,
    out: CompactOutcome,
}

impl Run {
    fn scanners_met(&self) -> bool {
        self.met || self.free_block / self.pb <= self.migrate_pfn / self.pb
    }
}

/// What one run compacts (`compact_zone`'s zone): a zone of a node split into zones, or,
/// without zones, node 0 as one range.
#[derive(Clone, Copy, Debug)]
struct Scope {
    /// The zone (`None`: no zones; the checks read all memory, as before zones).
    zone: Option<usize>,
    /// Where its cached positions are kept ([`CompactState::positions`]).
    index: usize,
    start: u64,
    end: u64,
}

impl Kernel {
    /// Run compaction for `req`.
    pub fn compact(&mut self, req: CompactRequest) -> CompactOutcome {
        // Per-CPU pages go back to the buddy allocator first, where they can merge and
        // the free scanner can see them (`drain_all_pages`; a simplification: Linux
        // drains only the local CPU's lists, and only as `compact_zone` leaves a block
        // it migrated from, which direct runs also do below). A deferred request drains
        // them once a zone's deferral lets it in (`compact_direct`).
        if !matches!(req, CompactRequest::Deferred { .. }) {
            self.drain_for_compaction();
        }
        let out = match req {
            CompactRequest::Direct { order } => self.compact_direct(order, None),
            CompactRequest::Deferred { order, sync } => self.compact_direct(order, Some(sync)),
            CompactRequest::Full => self.compact_whole(None),
            CompactRequest::Proactive => self.compact_proactive(),
        };
        let s = &mut self.stats;
        s.compact_runs += (out.migrate_scanned + out.free_scanned > 0) as u64;
        s.compact_migrate_scanned += out.migrate_scanned;
        s.compact_free_scanned += out.free_scanned;
        s.pgmigrate_success += out.migrated;
        s.pgmigrate_fail += out.failed;
        s.compact_time += out.cost;
        out
    }

    /// Set `vm.compaction_proactiveness` (0..=100; 0 disables proactive compaction).
    pub fn set_compaction_proactiveness(&mut self, proactiveness: u8) -> Result<()> {
        if proactiveness > 100 {
            return Err(MmError::InvalidArgument {
                what: "compaction proactiveness must be 0..=100",
            });
        }
        self.compact.proactiveness = proactiveness;
        Ok(())
    }

    /// Choose how compaction picks pages ([`CompactMode`]; Linux's scanners by default).
    /// Hole-aware runs neither read nor move the Linux scanners' cached positions.
    pub fn set_compaction_mode(&mut self, mode: CompactMode) {
        self.compact.mode = mode;
    }

    /// How compaction picks pages.
    pub fn compaction_mode(&self) -> CompactMode {
        self.compact.mode
    }

    /// The deferral of the zone compaction works in that holds `pfn` (on a node split
    /// into zones, the frame's zone; else node 0's one range).
    pub fn compaction_deferral(&mut self, pfn: Pfn) -> &mut Deferral {
        let index = match self.compacts_by_zone() {
            true => self.phys.zone_of(pfn),
            false => 0,
        };
        self.compact.deferral(index)
    }

    /// The deferral of the highest zone compaction works in (a request's classzone):
    /// the one deferral a caller that keeps one for the node uses.
    pub fn compaction_classzone_deferral(&mut self) -> &mut Deferral {
        let index = self.scopes(true)[0].index;
        self.compact.deferral(index)
    }

    /// Whether compaction works zone by zone (a node split into zones, Linux's
    /// scanners), or in node 0 as one range.
    pub(crate) fn compacts_by_zone(&self) -> bool {
        self.zones.is_some()
            && self.compact.mode == CompactMode::Linux
            && self.phys.zone_count() >= 2
    }

    /// Return every per-CPU list to the buddy allocator before compacting.
    fn drain_for_compaction(&mut self) {
        self.stats.internal_errors += self.phys.drain_per_cpu_lists().is_err() as u64;
    }

    /// The proactive compaction marks (low, high) of `fragmentation_score_wmark`.
    pub fn proactive_wmarks(&self) -> (u64, u64) {
        let low = 100u64
            .saturating_sub(self.compact.proactiveness as u64)
            .max(5);
        (low, (low + 10).min(100))
    }

    /// What compaction works in: each zone of a node split into zones (highest first for
    /// a direct request, as its zonelist; lowest first for a whole-node run, as
    /// `compact_node`); else node 0 as one range. Hole-aware runs keep the one range.
    fn scopes(&self, highest_first: bool) -> Vec<Scope> {
        let count = self.phys.zone_count();
        if !self.compacts_by_zone() {
            return vec![Scope {
                zone: None,
                index: 0,
                start: 0,
                end: self.phys.zone_end(),
            }];
        }
        let mut scopes: Vec<Scope> = (0..count)
            .filter_map(|z| {
                let (a, b) = self.phys.zone_frames(z)?;
                (b.0 > a.0).then_some(Scope {
                    zone: Some(z),
                    index: z,
                    start: a.0,
                    end: b.0,
                })
            })
            .collect();
        if highest_first {
            scopes.reverse();
        }
        scopes
    }

    /// `try_to_compact_pages`: each zone of the request's zonelist in turn, highest first,
    /// until one has what the request needs. A zone that has it already ends the walk
    /// (`COMPACT_PARTIAL`); one where `compaction_suitable` says no is passed over
    /// (`COMPACT_SKIPPED`); else a run there, which ends the walk if it made the zone
    /// ready. Without zones, one range, as before. With `deferral` (the request's sync
    /// mode: [`CompactRequest::Deferred`]) each zone's deferral passes over the zone,
    /// forgets the order's failures when the walk ends ready there, and defers the zone
    /// after a synchronous run whose scanners met.
    fn compact_direct(&mut self, order: Order, deferral: Option<bool>) -> CompactOutcome {
        let free = self.phys.has_free_block(order);
        if order > self.phys.max_order() {
            return CompactOutcome {
                success: free,
                ..CompactOutcome::default()
            };
        }
        let scopes = self.scopes(true);
        let class = scopes[0].zone;
        let mut out = CompactOutcome {
            complete: true,
            ..CompactOutcome::default()
        };
        let mut drained = deferral.is_none();
        for scope in scopes {
            if deferral.is_some() && self.compact.deferral(scope.index).deferred(order) {
                continue;
            }
            if !drained {
                self.drain_for_compaction();
                drained = true;
            }
            if self.direct_done(scope, order, class) {
                out.ready = true;
                if deferral.is_some() {
                    self.compact.deferral(scope.index).reset(order, false);
                }
                break;
            }
            if !self.compaction_suitable(scope, order, class) {
                continue;
            }
            let run = match self.compact.mode {
                CompactMode::Linux => {
                    let pos = self.positions(scope);
                    let mut run = self.new_run(scope, pos, true, order.0);
                    // Linux 4.12 and later finish the pageblock they are in first.
                    let whole_blocks = self.wmark_check == WatermarkCheck::Order0;
                    self.compact_zone(&mut run, |k, r| {
                        (!whole_blocks || r.migrate_pfn % r.pb == 0)
                            && k.direct_done(scope, order, class)
                    });
                    self.save_positions(scope, &run, true);
                    run.out.complete = run.scanners_met();
                    run.out
                }
                CompactMode::HoleAware => {
                    let unit = order.max(self.phys.pageblock_order());
                    self.compact_holes(unit, true, |k| k.direct_done(scope, order, class))
                }
            };
            out.add(&run);
            out.ran = true;
            if self.direct_done(scope, order, class) {
                out.ready = true;
                if deferral.is_some() {
                    self.compact.deferral(scope.index).reset(order, false);
                }
                break;
            }
            if deferral == Some(true) && run.complete {
                self.compact.deferral(scope.index).defer(order);
            }
        }
        if !out.ran {
            return CompactOutcome {
                success: free,
                ready: out.ready,
                ..CompactOutcome::default()
            };
        }
        out.success = self.phys.has_free_block(order);
        self.stats.compact_stall += 1;
        match out.success {
            true => self.stats.compact_success += 1,
            false => self.stats.compact_fail += 1,
        }
        out
    }

    /// A whole-node run (every zone in turn, lowest first, from its ends); `stop_at_score`
    /// ends it once the score is at most that.
    fn compact_whole(&mut self, stop_at_score: Option<u64>) -> CompactOutcome {
        if self.compact.mode == CompactMode::HoleAware {
            let unit = self.phys.pageblock_order();
            let mut out = self.compact_holes(unit, false, |k| {
                stop_at_score.is_some_and(|low| k.fragmentation_score() <= low)
            });
            // Full: the run ends only when nothing more can be emptied, as Linux's scanners
            // always meet.
            out.success = stop_at_score.is_none_or(|low| self.fragmentation_score() <= low);
            return out;
        }
        let pb_order = self.phys.pageblock_order().0;
        let stop = |k: &Kernel| stop_at_score.is_some_and(|low| k.fragmentation_score() <= low);
        let mut out = CompactOutcome::default();
        let mut met = true;
        for scope in self.scopes(false) {
            if stop(self) {
                break;
            }
            let pos = self.fresh_positions(scope);
            let mut run = self.new_run(scope, pos, false, pb_order);
            self.compact_zone(&mut run, |k, _| stop(k));
            met &= run.scanners_met();
            self.save_positions(scope, &run, false);
            out.add(&run.out);
        }
        out.success = match stop_at_score {
            Some(low) => self.fragmentation_score() <= low,
            None => met,
        };
        out
    }

    fn compact_proactive(&mut self) -> CompactOutcome {
        let (low, high) = self.proactive_wmarks();
        let score = self.fragmentation_score();
        if self.compact.proactiveness == 0 || score <= high {
            return CompactOutcome {
                success: score <= low,
                ..CompactOutcome::default()
            };
        }
        self.compact_whole(Some(low))
    }

    /// Whether a direct run for `order` has what it was asked for in `scope`
    /// (`__compact_finished`): a free block of the order there; with Linux 4.1's check
    /// ([`WatermarkCheck::Linux4_1`]), also 4.1's per-order watermark at `low`, which
    /// `compact_finished` asked for before looking for the block (with the zone's
    /// `lowmem_reserve` for the request's classzone `class`).
    fn direct_done(&self, scope: Scope, order: Order, class: Option<usize>) -> bool {
        let (Some(z), Some(zones)) = (scope.zone, self.zones.as_ref()) else {
            return self.phys.has_free_block(order)
                && (self.wmark_check == WatermarkCheck::Order0
                    || zone_watermark_ok_4_1(&self.phys, order, self.wmark.low));
        };
        let max = self.phys.max_order().0;
        let free = (order.0..=max).any(|o| self.phys.zone_free_blocks(z, Order(o)) > 0);
        free && (self.wmark_check == WatermarkCheck::Order0 || {
            let reserve = class.map_or(0, |c| zones.lowmem_reserve[z][c]);
            zone_watermark_ok(&self.phys, z, order, zones.wmark[z].low, reserve)
        })
    }

    /// `compaction_suitable` for a direct request of `order` in `scope`. Linux 4.1's
    /// ([`WatermarkCheck::Linux4_1`]): more than `low + 2 << order` frames free, and the
    /// fragmentation index outside `0..=500` at every order; 6.x's otherwise (`min` for
    /// orders up to `PAGE_ALLOC_COSTLY_ORDER`, `low` above, and the index for costly
    /// orders only). In a zone, its free frames, marks, index and `lowmem_reserve` for
    /// classzone `class`.
    fn compaction_suitable(&self, scope: Scope, order: Order, class: Option<usize>) -> bool {
        let (Some(z), Some(zones)) = (scope.zone, self.zones.as_ref()) else {
            if self.wmark_check == WatermarkCheck::Linux4_1 {
                return self.compaction_suitable_4_1(order);
            }
            let wmark = match order.0 > PAGE_ALLOC_COSTLY_ORDER {
                true => self.wmark.low,
                false => self.wmark.min,
            };
            if self.phys.checked_frames_free() < wmark + (2u64 << order.0) {
                return false;
            }
            return order.0 <= PAGE_ALLOC_COSTLY_ORDER
                || !(0..=EXTFRAG_THRESHOLD).contains(&self.fragmentation_index(order));
        };
        let class = class.unwrap_or(z);
        if self.wmark_check == WatermarkCheck::Linux4_1 {
            return zones.compaction_suitable_4_1(&self.phys, z, order, class);
        }
        let w = zones.wmark[z];
        let mark = match order.0 > PAGE_ALLOC_COSTLY_ORDER {
            true => w.low,
            false => w.min,
        };
        let reserve = zones.lowmem_reserve[z][class];
        if !zone_watermark_ok(&self.phys, z, Order(0), mark + (2u64 << order.0), reserve) {
            return false;
        }
        order.0 <= PAGE_ALLOC_COSTLY_ORDER
            || !(0..=EXTFRAG_THRESHOLD).contains(&zone_fragmentation_index(&self.phys, z, order))
    }

    /// Linux 4.1's `compaction_suitable` past its first test (the order's watermark met
    /// already): more than `low + 2 << order` frames free, and the fragmentation index
    /// outside `0..=500` (the failure is fragmentation, not lack of memory), at every
    /// order.
    pub(crate) fn compaction_suitable_4_1(&self, order: Order) -> bool {
        self.phys.checked_frames_free() > self.wmark.low + (2u64 << order.0)
            && !(0..=EXTFRAG_THRESHOLD).contains(&self.fragmentation_index(order))
    }

    /// `__fragmentation_index`: -1000 when a block of `order` is free, towards 0 when a
    /// failure is for lack of memory, towards 1000 when it is for fragmentation.
    pub fn fragmentation_index(&self, order: Order) -> i64 {
        fragmentation_index(
            self.phys.frames_free(),
            |o| self.phys.free_blocks(o),
            self.phys.max_order(),
            order,
        )
    }

    /// A scope's ends as scanner positions.
    fn fresh_positions(&self, scope: Scope) -> ScanPositions {
        let pb = 1u64 << self.phys.pageblock_order().0;
        ScanPositions::fresh(scope.start, scope.end, pb)
    }

    /// Where a direct run in `scope` starts: the previous one's cached positions, else
    /// the scope's ends.
    fn positions(&self, scope: Scope) -> ScanPositions {
        self.compact
            .position(scope.index)
            .unwrap_or_else(|| self.fresh_positions(scope))
    }

    fn new_run(&self, scope: Scope, pos: ScanPositions, direct: bool, order: u8) -> Run {
        let total = scope.end;
        let pb = 1u64 << self.phys.pageblock_order().0;
        let mut run = Run {
            start: scope.start,
            migrate_pfn: pos.migrate_pfn.clamp(scope.start, total),
            free_block: pos.free_block.clamp(scope.start, (total - 1) & !(pb - 1)),
            free_pos: 0,
            met: false,
            pb,
            total,
            movable_sources_only: direct,
            target_order: order,
            drain_local: direct && order > 0,
            last_migrated_block: None,
            out: CompactOutcome::default(),
        };
        self.seek_free_block(&mut run);
        run
    }

    /// Keep the positions for the next direct run in `scope`, or reset them once the
    /// scanners met.
    fn save_positions(&mut self, scope: Scope, run: &Run, direct: bool) {
        if run.scanners_met() {
            self.compact.set_position(scope.index, None);
        } else if direct {
            let pos = ScanPositions {
                migrate_pfn: run.migrate_pfn & !(run.pb - 1),
                free_block: run.free_block,
            };
            self.compact.set_position(scope.index, Some(pos));
        }
    }

    /// `compact_zone`'s loop: isolate a batch, migrate it, drain (direct runs, see the
    /// module doc), ask `finished`.
    fn compact_zone(&mut self, run: &mut Run, finished: impl Fn(&Kernel, &Run) -> bool) {
        let mut batch = Vec::with_capacity(COMPACT_CLUSTER_MAX);
        let order_block = !((1u64 << run.target_order) - 1);
        while !run.scanners_met() {
            batch.clear();
            self.isolate_migratepages(run, &mut batch);
            let migrated = run.out.migrated;
            self.migrate_batch(run, &batch);
            if run.drain_local {
                if run.out.migrated > migrated {
                    run.last_migrated_block = batch.last().map(|(src, _)| src.0 & order_block);
                }
                if run
                    .last_migrated_block
                    .is_some_and(|b| b < run.migrate_pfn & order_block)
                {
                    self.stats.internal_errors +=
                        self.phys.drain_local_per_cpu_lists().is_err() as u64;
                    run.last_migrated_block = None;
                }
            }
            if finished(self, run) {
                break;
            }
        }
        let scanned = run.out.migrate_scanned + run.out.free_scanned;
        run.out.cost += Nanos(self.frag.compact_scan.0 * scanned);
    }

    /// Isolate up to `COMPACT_CLUSTER_MAX` movable order-0 frames from the rest of the
    /// migrate scanner's pageblock.
    fn isolate_migratepages(&self, run: &mut Run, batch: &mut Vec<(Pfn, OwnerKind)>) {
        let block_end = ((run.migrate_pfn | (run.pb - 1)) + 1).min(run.total);
        if run.movable_sources_only
            && self.phys.pageblock_type(Pfn(run.migrate_pfn)) != Some(MigrateType::Movable)
        {
            run.migrate_pfn = block_end;
            return;
        }
        let mut pfn = run.migrate_pfn;
        while pfn < block_end && batch.len() < COMPACT_CLUSTER_MAX {
            let step = match self.phys.frames.at(pfn as u32).state() {
                FrameState::Allocated {
                    order: Order(0),
                    owner,
                } if owner.is_movable() && !self.reserv.holds(Pfn(pfn)) => {
                    batch.push((Pfn(pfn), owner));
                    1
                }
                FrameState::FreeHead { order, .. } | FrameState::Allocated { order, .. } => {
                    1 << order.0
                }
                _ => 1,
            };
            pfn += step;
            run.out.migrate_scanned += step;
        }
        run.migrate_pfn = pfn.min(run.total);
    }

    /// Migrate each isolated page to the free scanner's next frame.
    fn migrate_batch(&mut self, run: &mut Run, batch: &[(Pfn, OwnerKind)]) {
        for &(src, owner) in batch {
            let Some(dst) = self.next_free_frame(run, owner) else {
                return; // scanners met: the rest is put back
            };
            self.migrate_counted(src, dst, &mut run.out);
        }
    }

    /// Move `src` into `dst`, a free frame a scanner took for it, counting the outcome in
    /// `out`; a failed move gives `dst` back.
    pub(super) fn migrate_counted(&mut self, src: Pfn, dst: Pfn, out: &mut CompactOutcome) {
        match self.migrate_frame(src, dst) {
            Ok(cost) => {
                out.migrated += 1;
                out.cost += cost;
            }
            Err(_) => {
                out.failed += 1;
                self.stats.internal_errors += self.phys.free(dst, Order(0)).is_err() as u64;
            }
        }
    }

    /// A free scanner's step at frame `pos`: a free frame there is taken for `owner`
    /// (`Ok`; `None` if the allocator refused it), else `Err` with the frames to step
    /// over. The frames looked at are counted in `out.free_scanned`.
    #[inline]
    pub(super) fn take_free_at(
        &mut self,
        pos: u64,
        owner: OwnerKind,
        out: &mut CompactOutcome,
    ) -> std::result::Result<Option<Pfn>, u64> {
        let step = match self.phys.frames.at(pos as u32).state() {
            FrameState::FreeHead { .. } => {
                out.free_scanned += 1;
                let taken = self.phys.alloc_frame_in(Pfn(pos), Pfn(pos), owner);
                return Ok(taken.map(|_| Pfn(pos)));
            }
            FrameState::Allocated { order, .. } => 1 << order.0,
            _ => 1,
        };
        out.free_scanned += step;
        Err(step)
    }

    /// The free scanner: allocate the next free frame of a suitable pageblock above the
    /// migrate scanner for `owner`.
    fn next_free_frame(&mut self, run: &mut Run, owner: OwnerKind) -> Option<Pfn> {
        loop {
            if run.scanners_met() {
                return None;
            }
            let block_end = (run.free_block + run.pb).min(run.total);
            if run.free_pos >= block_end {
                self.next_free_block(run);
                continue;
            }
            match self.take_free_at(run.free_pos, owner, &mut run.out) {
                Ok(taken) => {
                    run.free_pos += 1;
                    return taken;
                }
                Err(step) => run.free_pos += step,
            }
        }
    }

    /// Move the free scanner down to the next suitable pageblock.
    fn next_free_block(&self, run: &mut Run) {
        if run.free_block < run.start + run.pb {
            run.met = true;
            return;
        }
        run.free_block -= run.pb;
        self.seek_free_block(run);
    }

    /// From the free scanner's pageblock down, the first suitable migration target.
    fn seek_free_block(&self, run: &mut Run) {
        while !run.scanners_met() && !self.suitable_target(run.free_block, run.target_order) {
            if run.free_block < run.start + run.pb {
                run.met = true;
                return;
            }
            run.free_block -= run.pb;
        }
        run.free_pos = run.free_block;
    }

    /// `suitable_migration_target`: a Movable pageblock not starting with a free block of
    /// order >= `order`.
    fn suitable_target(&self, block: u64, order: u8) -> bool {
        let movable = self.phys.pageblock_type(Pfn(block)) == Some(MigrateType::Movable);
        movable && !self.in_free_block_of(block, order)
    }

    /// Whether `pfn` lies in a free block of order >= `order`.
    fn in_free_block_of(&self, pfn: u64, order: u8) -> bool {
        (order..=self.phys.max_order().0).any(|o| {
            let head = pfn & !((1u64 << o) - 1);
            self.phys.frames.at(head as u32).is_free_head_of(o)
        })
    }
}

#[cfg(test)]
#[path = "compaction_tests.rs"]
mod tests;
