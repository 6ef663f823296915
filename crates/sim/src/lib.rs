//! hugemm's engine: it runs an [`Experiment`] — a machine, a policy and processes — on an
//! integer-nanosecond simulated clock, and reports per-process and system results.
//!
//! The engine owns time and order: which core runs which process, when a kernel daemon
//! wakes, when a time-series sample is taken. It carries out workload phases through the
//! kernel model's mechanisms, asks the policy at every anonymous fault and runs the
//! policy's daemons, and prices every memory reference with the hardware model (exact
//! mode) or a sampled subset of them (sampled mode, see [`sampling`]). It makes no policy
//! decision of its own.
//!
//! Determinism: every random choice comes from generators seeded from the experiment seed
//! (one per process, one per sampling coin), and ties between events are broken by a fixed
//! order, so the same experiment and seed give byte-identical results.

#[cfg(test)]
mod accessed_tests;
mod bandwidth;
mod compaction;
pub mod coverage;
mod engine;
pub mod experiment;
pub mod host;
mod kactivity;
mod kvrun;
mod lookahead;
pub mod matrix;
mod ops;
mod prezero;
mod process;
pub mod results;
mod run;
pub mod sampling;
mod tlbsample;

pub use compaction::KcompactdConfig;
pub use engine::{
    migration_costs, mm_costs, Detached, Engine, FrameMapSink, StopFlag, TimeseriesSink, SYNC,
};
pub use experiment::{Experiment, KernelConfig, Mode, SampledConfig};
pub use host::{
    FreePageReporting, GuestVm, HostSwap, HostedResult, HostedRun, Ksm, SwapStats, VmResult,
};
pub use prezero::{PrezeroConfig, Stores, ZeroLists};
pub use results::{
    HighAllocResult, KvPhaseResult, PhaseTwo, ProcessSummary, RunResult, StopReason, Summary,
    SystemSummary, TimeseriesRow, TlbWindow, ZoneSummary,
};

/// Errors from running an experiment.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The kernel model refused to set up the machine. (Its message is part of this
    /// one, not a source: an error chain would print it twice.)
    #[error("setting up the machine: {0}")]
    Setup(hugemm_mm::MmError),
    /// The pageblock fallback policy is unknown.
    #[error(transparent)]
    Fallback(#[from] hugemm_mm::UnknownPolicy),
    /// A process's workload is inconsistent (uses a buffer before mapping it...).
    #[error("process {process}: {what}")]
    Workload {
        /// The process's name.
        process: String,
        /// What is wrong.
        what: String,
    },
    /// A host and its guests do not fit together (`host/`).
    #[error("virtual machines: {0}")]
    Host(String),
    /// Writing the time series as the run went failed.
    #[error("writing the time series")]
    Output(#[source] std::io::Error),
}

impl From<hugemm_mm::MmError> for SimError {
    fn from(e: hugemm_mm::MmError) -> SimError {
        SimError::Setup(e)
    }
}

/// Result alias of this crate.
pub type Result<T> = std::result::Result<T, SimError>;
