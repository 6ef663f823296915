//! Tiering policies: what decides which pages live on which memory node, apart from the
//! huge-page policies (a run has one of each, so any promotion policy can run with or
//! without tiering).
//!
//! A tiering policy runs as a kernel daemon every [`Tiering::period`]. It sees the kernel
//! through [`TierOps`]: the pages of each process with their node and a referenced bit
//! (tested and cleared), each node's free memory, and the migration calls of the kernel
//! model (`move_pages`, `exchange_pages`, with a mechanism: hugemm-mm `movepages`). It
//! returns the CPU time it used and, per process, the time that process stalled on pages
//! that were in flight.
//!
//! This module owns the interface; each policy is a module of its own ([`crate::nimble`]).

use hugemm_hw::{Nanos, Pid, VirtAddr};
use hugemm_mm::{Mechanism, MigrateOutcome, MmError, NodeId, PageScan};

/// The kernel as a tiering policy sees it.
pub trait TierOps {
    /// The live processes, oldest first.
    fn tier_processes(&self) -> Vec<Pid>;
    /// Number of memory nodes.
    fn node_count(&self) -> usize;
    /// Free bytes on `node`.
    fn node_free_bytes(&self, node: NodeId) -> u64;
    /// Total bytes of `node`.
    fn node_bytes(&self, node: NodeId) -> u64;
    /// Every page of `pid` mapped to a frame, with its node and referenced bit (cleared
    /// as it is read), appended to `out`; returns the entries examined.
    fn scan_pages(&mut self, pid: Pid, out: &mut Vec<PageScan>) -> u64;
    /// The time to examine one page-table entry.
    fn scan_cost_per_entry(&self) -> Nanos;
    /// Move the pages of `pid` at `pages` to `to`.
    fn move_pages(
        &mut self,
        pid: Pid,
        pages: &[VirtAddr],
        to: NodeId,
        mech: &Mechanism,
    ) -> Result<MigrateOutcome, MmError>;
    /// Exchange the pages of `pid` at each pair's two addresses.
    fn exchange_pages(
        &mut self,
        pid: Pid,
        pairs: &[(VirtAddr, VirtAddr)],
        mech: &Mechanism,
    ) -> Result<MigrateOutcome, MmError>;
}

/// What one run of a tiering policy did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TierRun {
    /// CPU time of the daemon (scanning and migrating).
    pub cpu: Nanos,
    /// Time each process waited on its pages in flight.
    pub stalls: Vec<(Pid, Nanos)>,
}

/// A tiering policy's configuration.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub enum TieringConfig {
    /// Nimble's active/inactive-list policy.
    Nimble(crate::nimble::NimbleConfig),
}

impl TieringConfig {
    /// The names used in experiment files (`[tiering] policy`), `none` first.
    pub const NAMES: &'static [&'static str] = &["none", "nimble"];

    /// The policy.
    pub fn build(&self) -> Box<dyn Tiering> {
        match self {
            TieringConfig::Nimble(cfg) => Box::new(crate::nimble::NimblePolicy::new(*cfg)),
        }
    }
}

/// A tiering policy (cloned with its run, as [`crate::Policy`]).
pub trait Tiering: dyn_clone::DynClone + Send {
    /// Its name.
    fn name(&self) -> &'static str;
    /// Time between runs.
    fn period(&self) -> Nanos;
    /// One run.
    fn run(&mut self, ops: &mut dyn TierOps) -> TierRun;
    /// `pid` exited: drop what the policy kept of it.
    fn process_exited(&mut self, pid: Pid) {
        let _ = pid;
    }
}

dyn_clone::clone_trait_object!(Tiering);
