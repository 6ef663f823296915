//! Compaction's vocabulary and memory: what a run is asked ([`CompactRequest`]) and
//! reports ([`CompactOutcome`]), how it chooses what to move ([`CompactMode`]), and the
//! state kept between runs (the cached scanner positions and the deferral of each zone,
//! `vm.compaction_proactiveness` and the mode).
//!
//! The runs happen on the whole kernel (`kernel/compaction.rs` and
//! `kernel/compaction_holes.rs`, whose docs tell the algorithms), since every page they
//! isolate migrates through its owner's page table or the page-cache index. This module owns the vocabulary and the state; it must not scan.

use hugemm_hw::{Nanos, Order};
use serde::{Deserialize, Serialize};

/// Pages isolated and migrated per batch (`COMPACT_CLUSTER_MAX`).
pub const COMPACT_CLUSTER_MAX: usize = 32;

/// `vm.extfrag_threshold`'s default: a fragmentation index at most this says a failure
/// is for lack of memory, which compaction cannot help.
pub(crate) const EXTFRAG_THRESHOLD: i64 = 500;
/// `vm.compaction_proactiveness`'s default.
pub const DEFAULT_PROACTIVENESS: u8 = 20;
/// Linux's `COMPACT_MAX_DEFER_SHIFT`: after repeated failures, direct compaction in a
/// zone is skipped for up to 2^6 = 64 attempts.
pub const MAX_DEFER_SHIFT: u32 = 6;
/// What a compaction run is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CompactRequest {
    /// An allocation of `order` failed (`try_to_compact_pages`, async mode).
    Direct {
        /// The order wanted.
        order: Order,
    },
    /// Linux 4.1's `try_to_compact_pages` for an allocation of `order` that failed, with
    /// each zone's deferral ([`Deferral`]): a zone whose compaction of the order is
    /// deferred is passed over (`compaction_deferred`, which counts the attempt); a zone
    /// the walk leaves ready for the order forgets the order's failures
    /// (`compaction_defer_reset(.., false)`); a zone where a synchronous run ended with
    /// the scanners meeting is deferred (`defer_compaction`; asynchronous runs never
    /// defer). The caller resets the deferral of the zone its allocation then came from
    /// ([`crate::Kernel::compaction_deferral`]).
    Deferred {
        /// The order wanted.
        order: Order,
        /// Synchronous migration (`MIGRATE_SYNC_LIGHT`, the slow path's second and later
        /// attempts) rather than asynchronous.
        sync: bool,
    },
    /// `echo 1 > /proc/sys/vm/compact_memory`: the whole zone.
    Full,
    /// kcompactd's proactive compaction, driven by the fragmentation score.
    Proactive,
}

/// How a compaction run chooses the pages it migrates and where they go.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CompactMode {
    /// Linux's two scanners (`compact_zone`): the migrate scanner up from the bottom, the
    /// free scanner down from the top.
    #[default]
    Linux,
    /// H-Policy's rule (iv) (SysMon-H / H-Policy section 4): the pageblocks with the
    /// fewest pages to move are emptied first, into the smallest holes of the fullest
    /// pageblocks (`kernel/compaction_holes.rs`).
    HoleAware,
}

impl CompactMode {
    /// Every mode with its name in experiment files (`[kernel] compaction`).
    pub const NAMED: [(&'static str, CompactMode); 2] = [
        ("linux", CompactMode::Linux),
        ("hole-aware", CompactMode::HoleAware),
    ];

    /// The mode's name in experiment files.
    pub fn name(self) -> &'static str {
        match self {
            CompactMode::Linux => "linux",
            CompactMode::HoleAware => "hole-aware",
        }
    }
}

/// The result of a compaction run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CompactOutcome {
    /// Time charged to the caller (the faulting process for direct runs, kcompactd or the
    /// writer of `compact_memory` otherwise).
    pub cost: Nanos,
    /// Frames the migrate scanner examined.
    pub migrate_scanned: u64,
    /// Frames the free scanner examined.
    pub free_scanned: u64,
    /// Pages migrated.
    pub migrated: u64,
    /// Isolated pages that failed to migrate.
    pub failed: u64,
    /// Direct: a block of the order is free. Full: the scanners met. Proactive: the score
    /// is at most the low mark.
    pub success: bool,
    /// Direct: the run started (not skipped by `compaction_suitable`, nor because the
    /// order was already there): a `compact_stall`.
    pub ran: bool,
    /// Direct: the run ended with the scanners meeting (`COMPACT_COMPLETE`), not because
    /// it found what it was asked for.
    pub complete: bool,
    /// Direct: the walk ended in a zone that has what the request needs (a free block of
    /// the order; with Linux 4.1's check, its per-order watermark at `low` met too):
    /// `try_to_compact_pages`'s test after each zone, which resets the deferral.
    pub ready: bool,
}

impl CompactOutcome {
    /// Add another run's tallies (a walk over several zones): time, scans and moves
    /// add up, and the walk is complete only if every run was.
    pub(crate) fn add(&mut self, run: &CompactOutcome) {
        self.cost += run.cost;
        self.migrate_scanned += run.migrate_scanned;
        self.free_scanned += run.free_scanned;
        self.migrated += run.migrated;
        self.failed += run.failed;
        self.complete &= run.complete;
    }
}

/// The cached scanner positions of one zone (`compact_cached_migrate_pfn`,
/// `compact_cached_free_pfn`): where the next direct run there resumes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ScanPositions {
    pub migrate_pfn: u64,
    /// The free scanner's pageblock.
    pub free_block: u64,
}

impl ScanPositions {
    /// A zone's ends: the migrate scanner at its first frame, the free scanner at its
    /// last pageblock.
    pub fn fresh(start: u64, end: u64, pageblock_frames: u64) -> ScanPositions {
        ScanPositions {
            migrate_pfn: start,
            free_block: (end - 1) & !(pageblock_frames - 1),
        }
    }
}

/// A zone's direct-compaction deferral after failures (`mm/compaction.c`, Linux 4.1 to
/// 6.x: `zone->compact_considered`, `compact_defer_shift`, `compact_order_failed`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deferral {
    considered: u32,
    defer_shift: u32,
    order_failed: u8,
}

impl Default for Deferral {
    fn default() -> Self {
        Deferral {
            considered: 0,
            defer_shift: 0,
            order_failed: u8::MAX,
        }
    }
}

impl Deferral {
    /// `compaction_deferred`: whether an attempt of `order` is skipped. Counts the
    /// attempt.
    pub fn deferred(&mut self, order: Order) -> bool {
        if order.0 < self.order_failed {
            return false;
        }
        let limit = 1u32 << self.defer_shift;
        self.considered = (self.considered + 1).min(limit);
        self.considered < limit
    }

    /// `defer_compaction` after a failure, `compaction_defer_reset` after a success.
    pub fn record(&mut self, order: Order, success: bool) {
        match success {
            true => self.reset(order, true),
            false => self.defer(order),
        }
    }

    /// `defer_compaction`: skip more of the next attempts of `order` and above.
    pub fn defer(&mut self, order: Order) {
        self.considered = 0;
        self.defer_shift = (self.defer_shift + 1).min(MAX_DEFER_SHIFT);
        self.order_failed = self.order_failed.min(order.0);
    }

    /// `compaction_defer_reset`: `order` no longer fails; after an allocation that
    /// succeeded, stop skipping attempts too.
    pub fn reset(&mut self, order: Order, alloc_success: bool) {
        if alloc_success {
            self.considered = 0;
            self.defer_shift = 0;
        }
        if order.0 >= self.order_failed {
            self.order_failed = order.0.saturating_add(1);
        }
    }
}

/// Compaction state kept between runs: the cached scanner positions and the deferral of
/// each zone compaction works in, the proactiveness sysctl and the mode.
#[derive(Clone, Debug)]
pub(crate) struct CompactState {
    /// Indexed by zone (one entry, node 0 as one range, without zones); `None`: the
    /// zone's ends.
    pub positions: Vec<Option<ScanPositions>>,
    /// Indexed as `positions`.
    pub deferrals: Vec<Deferral>,
    pub proactiveness: u8,
    pub mode: CompactMode,
}

impl CompactState {
    pub fn new() -> CompactState {
        CompactState {
            positions: Vec::new(),
            deferrals: Vec::new(),
            proactiveness: DEFAULT_PROACTIVENESS,
            mode: CompactMode::Linux,
        }
    }

    /// Zone `index`'s cached positions, if a run left any.
    pub fn position(&self, index: usize) -> Option<ScanPositions> {
        self.positions.get(index).copied().flatten()
    }

    /// Cache zone `index`'s positions (`None`: back to the zone's ends).
    pub fn set_position(&mut self, index: usize, pos: Option<ScanPositions>) {
        if self.positions.len() <= index {
            self.positions.resize(index + 1, None);
        }
        self.positions[index] = pos;
    }

    /// Zone `index`'s deferral.
    pub fn deferral(&mut self, index: usize) -> &mut Deferral {
        if self.deferrals.len() <= index {
            self.deferrals.resize(index + 1, Deferral::default());
        }
        &mut self.deferrals[index]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_failures_defer_up_to_sixty_four_attempts() {
        let mut d = Deferral::default();
        let o = Order(9);
        assert!(!d.deferred(o));
        d.record(o, false); // shift 1: skip 1 of 2
        assert!(d.deferred(o));
        assert!(!d.deferred(o));
        for _ in 0..10 {
            d.record(o, false);
        }
        let skipped = (0..64).take_while(|_| d.deferred(o)).count();
        assert_eq!(skipped, 63);
        // Lower orders than the failed one are never deferred.
        assert!(!d.deferred(Order(3)));
        d.record(o, true);
        assert!(!d.deferred(o));
    }
}
