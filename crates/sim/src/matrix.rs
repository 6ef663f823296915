//! The sampled-vs-exact agreement matrix: the same experiment run in exact mode and in
//! sampled mode, compared on runtime and MMU overhead. `docs/sampling.md` publishes the
//! full matrix (`cargo run --release -p hugemm-sim --example sampling_matrix`); the test
//! suite runs a smaller one.
//!
//! Tolerance: runtime within 5% relative; MMU overhead within 5% relative or, when the
//! overhead is itself near zero (huge pages), within 0.5 percentage points absolute —
//! a relative error of a number near zero says nothing.

use crate::{Engine, Experiment, Mode, SampledConfig};
use hugemm_hw::{Geometry, MachineProfile, Nanos};
use hugemm_policy::{LinuxConfig, PolicyConfig, ThpMode};
use hugemm_workload::Writes;
use hugemm_workload::{builtin, AccessPhase, Advice, Amount, BufferId, Pattern, Phase};

/// One cell of the matrix.
#[derive(Clone, Copy, Debug)]
pub struct Case {
    /// Access pattern after the touch phase.
    pub pattern: Pattern,
    /// Dependent references.
    pub dependent: bool,
    /// Buffer size.
    pub bytes: u64,
    /// Huge pages (THP always) or base pages (never).
    pub huge: bool,
    /// References after the touch.
    pub refs: u64,
}

/// Exact and sampled results of a case.
#[derive(Clone, Copy, Debug)]
pub struct Row {
    /// The case.
    pub case: Case,
    /// Exact runtime (ns).
    pub exact_runtime: u64,
    /// Sampled runtime (ns).
    pub sampled_runtime: u64,
    /// Exact MMU overhead.
    pub exact_mmu: f64,
    /// Sampled MMU overhead.
    pub sampled_mmu: f64,
    /// References the sampled run simulated one by one.
    pub sampled_exact_refs: u64,
    /// References the sampled run made in all.
    pub sampled_refs: u64,
}

impl Row {
    /// Relative runtime error.
    pub fn runtime_error(&self) -> f64 {
        (self.sampled_runtime as f64 - self.exact_runtime as f64).abs() / self.exact_runtime as f64
    }
    /// Relative MMU-overhead error.
    pub fn mmu_error(&self) -> f64 {
        (self.sampled_mmu - self.exact_mmu).abs() / self.exact_mmu.max(1e-12)
    }
    /// Within the stated tolerance.
    pub fn agrees(&self) -> bool {
        let mmu_ok = self.mmu_error() <= 0.05 || (self.sampled_mmu - self.exact_mmu).abs() <= 0.005;
        self.runtime_error() <= 0.05 && mmu_ok
    }
}

/// A label for a pattern.
pub fn pattern_label(p: Pattern, dependent: bool) -> String {
    let dep = if dependent { "dep" } else { "indep" };
    match p {
        Pattern::Uniform => format!("uniform-{dep}"),
        Pattern::Chase => format!("chase-{dep}"),
        Pattern::Sequential { stride } => format!("sequential-{stride}B-{dep}"),
        Pattern::Zipf { exponent, .. } => format!("zipf-{exponent}-{dep}"),
        Pattern::HotRange {
            hot_fraction,
            hot_share,
            ..
        } => format!("hot-{hot_fraction}/{hot_share}-{dep}"),
        Pattern::SweepGather { stride, every, .. } => {
            format!("sweep-{stride}B-gather-1/{every}-{dep}")
        }
    }
}

/// The experiment of `c` in `mode` on `profile`.
pub fn experiment_for(c: &Case, mode: Mode, profile: &MachineProfile) -> Experiment {
    let mut p = builtin::random_access("p", c.bytes, 1, Advice::Default);
    if let Some(Phase::Access(a)) = p.phases.last_mut() {
        *a = AccessPhase {
            buffer: BufferId(0),
            pattern: c.pattern,
            amount: Amount::Refs(c.refs),
            dependent: c.dependent,
            write_fraction: 0.0,
            compute: Nanos::ZERO,
            instructions_per_ref: None,
            writes: Writes::default(),
        };
    }
    let thp = if c.huge {
        ThpMode::Always
    } else {
        ThpMode::Never
    };
    Experiment {
        profile: profile.clone(),
        cores: 1,
        memory_bytes: (c.bytes + (c.bytes / 2))
            .next_multiple_of(4 << 20)
            .max(64 << 20),
        node_bytes: Vec::new(),
        zone_bytes: Vec::new(),
        home_node: 0,
        tiering: None,
        geometry: Geometry::X86_64,
        policy: PolicyConfig::Linux(LinuxConfig {
            enabled: thp,
            ..LinuxConfig::default()
        }),
        processes: vec![p],
        mode,
        seed: 3,
        sample_interval: Nanos::from_secs(1),
        turn: crate::SYNC.to_nanos(),
        time_limit: Nanos::from_secs(1_000_000),
        daemon_core: 0,
        kernel: Default::default(),
    }
}

/// Run `case` exactly and with `sampled`, on `profile`.
pub fn compare(case: Case, sampled: SampledConfig, profile: &MachineProfile) -> crate::Result<Row> {
    let e = Engine::new(experiment_for(&case, Mode::Exact, profile))?.run()?;
    let s = Engine::new(experiment_for(&case, Mode::Sampled(sampled), profile))?.run()?;
    let (e, s) = (&e.summary.processes[0], &s.summary.processes[0]);
    Ok(Row {
        case,
        exact_runtime: e.runtime_ns,
        sampled_runtime: s.runtime_ns,
        exact_mmu: e.mmu_overhead,
        sampled_mmu: s.mmu_overhead,
        sampled_exact_refs: s.references_exact,
        sampled_refs: s.references,
    })
}

/// The patterns of the published matrix.
pub fn patterns() -> Vec<(Pattern, bool)> {
    vec![
        (Pattern::Uniform, true),
        (Pattern::Uniform, false),
        (Pattern::Sequential { stride: 64 }, false),
        (
            Pattern::HotRange {
                hot_fraction: 0.1,
                hot_share: 0.9,
                position: 0.9,
            },
            true,
        ),
        (
            Pattern::Zipf {
                exponent: 0.99,
                position: 0.0,
            },
            true,
        ),
    ]
}
