//! The vocabulary of page migration between memory nodes: the parts of its cost
//! ([`MigrationCosts`], from the machine profile), Nimble's mechanism knobs
//! ([`Mechanism`], [`ThpMigration`]), what a call did ([`MigrateOutcome`]), the kernel's
//! tallies ([`TierStats`]), what a tiering policy sees of a page ([`PageScan`]) and of a
//! process's memory on a node ([`NodeUse`]).
//!
//! `move_pages`, `exchange_pages` and the page scan are the kernel's
//! (`kernel/movepages.rs`, whose doc tells what happens to the pages and what it costs):
//! they rewrite page-table entries. This module owns the vocabulary only; it must not
//! move pages.

use crate::error::{MmError, Result};
use crate::phys::node::NodeId;
use hugemm_hw::{Nanos, VirtAddr};
use serde::{Deserialize, Serialize};

/// Most copy threads a mechanism may use.
pub const MAX_COPY_THREADS: u32 = 64;

/// The parts of a migration's cost (see the module doc), from the machine profile.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MigrationCosts {
    /// One `move_pages`/`exchange_pages` call.
    pub call: Nanos,
    /// Kernel work per base page besides allocation, free, flush and entry writes.
    pub page: Nanos,
    /// The same per huge page migrated whole.
    pub huge_page: Nanos,
    /// Freeing a source page.
    pub free: Nanos,
    /// Launching one helper copy thread.
    pub thread_launch: Nanos,
    /// One thread's copy bandwidth between nodes, GB/s.
    pub copy_gbps: f64,
    /// All threads' copy bandwidth between nodes at most, GB/s.
    pub link_gbps: f64,
}

impl MigrationCosts {
    /// Time to copy `bytes` with `threads` threads: a launch per thread when there is
    /// more than one, then the bytes at `threads` times one thread's bandwidth, capped
    /// by the link (the data split evenly over the threads, as Nimble's `copy_page_mt`
    /// splits it).
    pub fn copy_time(&self, bytes: u64, threads: u32) -> Nanos {
        let t = threads.max(1);
        let launch = if t > 1 {
            self.thread_launch.0 * t as u64
        } else {
            0
        };
        let gbps = (t as f64 * self.copy_gbps).min(self.link_gbps);
        Nanos(launch + (bytes as f64 / gbps).round() as u64)
    }

    /// Check the costs are usable: bandwidths finite and positive, times below 1000 s.
    pub fn validate(&self) -> Result<()> {
        let limit = Nanos(1_000_000_000_000);
        let times = [
            self.call,
            self.page,
            self.huge_page,
            self.free,
            self.thread_launch,
        ];
        if times.iter().any(|t| *t > limit) {
            return Err(MmError::InvalidConfig {
                what: "a migration cost exceeds 1000 s",
            });
        }
        for g in [self.copy_gbps, self.link_gbps] {
            if !g.is_finite() || g < 1e-3 {
                return Err(MmError::InvalidConfig {
                    what: "migration copy bandwidths must be finite and >= 0.001 GB/s",
                });
            }
        }
        Ok(())
    }
}

/// How huge pages migrate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ThpMigration {
    /// Split into base pages first (Linux 4.14's `move_pages`).
    Split,
    /// Migrate whole (Nimble's native THP migration; Linux since 4.14 for NUMA balancing
    /// and since 5.x for `move_pages`).
    Native,
}

/// A migration mechanism: Nimble's optimisations as knobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Mechanism {
    /// How huge pages migrate.
    pub thp: ThpMigration,
    /// Copy threads (1: the caller copies alone).
    pub threads: u32,
    /// Pages copied as one batch (1: one at a time, Linux's; 0: the whole call).
    pub in_flight: u32,
}

impl Mechanism {
    /// Linux's `move_pages`: huge pages split, one thread, one page at a time.
    pub const LINUX: Mechanism = Mechanism {
        thp: ThpMigration::Split,
        threads: 1,
        in_flight: 1,
    };

    /// Native THP migration alone.
    pub const THP: Mechanism = Mechanism {
        thp: ThpMigration::Native,
        threads: 1,
        in_flight: 1,
    };

    /// Check the knobs: 1 to [`MAX_COPY_THREADS`] threads.
    pub fn validate(&self) -> Result<()> {
        if !(1..=MAX_COPY_THREADS).contains(&self.threads) {
            return Err(MmError::InvalidArgument {
                what: "copy threads must be 1 to 64",
            });
        }
        Ok(())
    }
}

/// What a `move_pages` or `exchange_pages` call did and what it cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MigrateOutcome {
    /// Base pages that moved (each page of an exchanged pair counts).
    pub base_pages: u64,
    /// Huge pages that moved whole.
    pub huge_pages: u64,
    /// Huge pages split to migrate their base pages.
    pub splits: u64,
    /// Pages (or pairs) that could not move.
    pub failed: u64,
    /// Bytes copied (an exchanged pair: both pages).
    pub bytes: u64,
    /// The call's fixed cost.
    pub call: Nanos,
    /// Kernel work per page (allocation, free, flushes, entries, the rest).
    pub kernel: Nanos,
    /// Splitting huge pages.
    pub split: Nanos,
    /// Copying.
    pub copy: Nanos,
}

impl MigrateOutcome {
    /// Everything the call cost.
    pub fn cost(&self) -> Nanos {
        self.call + self.kernel + self.split + self.copy
    }

    /// Bytes moved per ns (GB/s); 0 when nothing moved.
    pub fn gbps(&self) -> f64 {
        match self.cost().0 {
            0 => 0.0,
            ns => self.bytes as f64 / ns as f64,
        }
    }

    /// Add `o`'s pages, bytes and times to these (two calls as one).
    pub fn add(&mut self, o: &MigrateOutcome) {
        self.base_pages += o.base_pages;
        self.huge_pages += o.huge_pages;
        self.splits += o.splits;
        self.failed += o.failed;
        self.bytes += o.bytes;
        self.call += o.call;
        self.kernel += o.kernel;
        self.split += o.split;
        self.copy += o.copy;
    }
}

/// Migrations between nodes so far (the kernel's tallies for reports).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TierStats {
    /// Every call's outcome added up.
    pub total: MigrateOutcome,
    /// Calls made.
    pub calls: u64,
}

/// One mapped page as a tiering policy sees it
/// ([`Kernel::scan_pages`](crate::Kernel::scan_pages)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageScan {
    /// Its first address.
    pub va: VirtAddr,
    /// A huge page (else a base page).
    pub huge: bool,
    /// The node its frames are on.
    pub node: NodeId,
    /// Whether it was referenced since its accessed bit was last cleared.
    pub referenced: bool,
}

/// A process's memory on one node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct NodeUse {
    /// Base pages mapped to frames on the node.
    pub base_pages: u64,
    /// Huge pages on the node.
    pub huge_pages: u64,
}
