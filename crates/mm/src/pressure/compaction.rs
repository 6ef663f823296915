//! Compaction's vocabulary and memory: what a run is asked ([`CompactRequest`]) and
//! reports ([`CompactOutcome`]), how it chooses what to move ([`CompactMode`]), and the
//! state kept between runs (the cached scanner positions, `vm.compaction_proactiveness`
//! and the mode).
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
/// What a compaction run is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CompactRequest {
    /// An allocation of `order` failed (`try_to_compact_pages`, async mode).
    Direct {
        /// The order wanted.
        order: Order,
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

/// Compaction state kept between runs: the cached scanner positions of each zone
/// compaction works in, the proactiveness sysctl and the mode.
#[derive(Clone, Debug)]
pub(crate) struct CompactState {
    /// Indexed by zone (one entry, node 0 as one range, without zones); `None`: the
    /// zone's ends.
    pub positions: Vec<Option<ScanPositions>>,
    pub proactiveness: u8,
    pub mode: CompactMode,
}

impl CompactState {
    pub fn new() -> CompactState {
        CompactState {
            positions: Vec::new(),
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
}
