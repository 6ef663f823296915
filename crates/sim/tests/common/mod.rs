//! Builders shared by the engine's scenario tests.
#![allow(dead_code)]

use hugemm_hw::{Geometry, MachineProfile, Nanos};
use hugemm_policy::access::SamplerConfig;
use hugemm_policy::{
    FreeBsdConfig, HawkeyeConfig, HawkeyeVariant, IngensConfig, KhugepagedConfig, LinuxConfig,
    PolicyConfig, ThpMode,
};
use hugemm_sim::{Engine, Experiment, Mode, RunResult, SampledConfig};
use hugemm_workload::Writes;
use hugemm_workload::{
    builtin, AccessPhase, Advice, Amount, BufferId, MadviseKind, Pattern, Phase, ProcessSpec,
};

pub const MIB: u64 = 1 << 20;
pub const GIB: u64 = 1 << 30;

/// An experiment under construction.
pub struct Scenario {
    pub exp: Experiment,
}

impl Scenario {
    /// A machine with `memory` bytes on the development machine's profile (as bare metal), Linux THP
    /// `thp`, exact mode.
    pub fn new(memory: u64, thp: ThpMode) -> Self {
        // Bare metal: these scenarios check policies, and the profile's guest dimension
        // (a host splintering half of the huge pages, crates/hw/src/nested.rs) would blur
        // what a huge page buys; nested translation has its own tests in hugemm-hw.
        let mut profile = MachineProfile::builtin("epyc-milan-kvm").expect("built-in profile");
        profile.guest = None;
        Scenario {
            exp: Experiment {
                profile,
                cores: 1,
                memory_bytes: memory,
                node_bytes: Vec::new(),
                zone_bytes: Vec::new(),
                home_node: 0,
                tiering: None,
                geometry: Geometry::X86_64,
                policy: PolicyConfig::Linux(LinuxConfig {
                    enabled: thp,
                    ..LinuxConfig::default()
                }),
                processes: Vec::new(),
                mode: Mode::Exact,
                seed: 1,
                sample_interval: Nanos::from_secs(1),
                turn: hugemm_sim::SYNC.to_nanos(),
                time_limit: Nanos::from_secs(100_000),
                daemon_core: 0,
                kernel: Default::default(),
            },
        }
    }

    /// The `freebsd` policy with `cfg` instead of Linux.
    pub fn freebsd(mut self, cfg: FreeBsdConfig) -> Self {
        self.exp.policy = PolicyConfig::FreeBsd(cfg);
        self
    }

    pub fn khugepaged(mut self, k: KhugepagedConfig) -> Self {
        if let PolicyConfig::Linux(l) = &mut self.exp.policy {
            l.khugepaged = k;
        }
        self
    }

    /// Run under another policy.
    pub fn policy(mut self, policy: PolicyConfig) -> Self {
        self.exp.policy = policy;
        self
    }

    pub fn cores(mut self, n: u32) -> Self {
        self.exp.cores = n;
        self
    }

    pub fn sampled(mut self, cfg: SampledConfig) -> Self {
        self.exp.mode = Mode::Sampled(cfg);
        self
    }

    pub fn seed(mut self, seed: u64) -> Self {
        self.exp.seed = seed;
        self
    }

    pub fn time_limit(mut self, t: Nanos) -> Self {
        self.exp.time_limit = t;
        self
    }

    pub fn process(mut self, p: ProcessSpec) -> Self {
        self.exp.processes.push(p);
        self
    }

    pub fn run(self) -> RunResult {
        Engine::new(self.exp)
            .expect("engine set-up")
            .run()
            .expect("run")
    }
}

/// Map `bytes`, write one byte per page.
pub fn alloc_touch(name: &str, bytes: u64) -> ProcessSpec {
    builtin::alloc_and_touch(name, bytes, 1, Advice::Default)
}

/// Map and touch `bytes`, then `refs` references of `pattern`.
pub fn access(
    name: &str,
    bytes: u64,
    pattern: Pattern,
    amount: Amount,
    dependent: bool,
) -> ProcessSpec {
    let mut p = builtin::random_access(name, bytes, 1, Advice::Default);
    if let Some(Phase::Access(a)) = p.phases.last_mut() {
        *a = AccessPhase {
            buffer: BufferId(0),
            pattern,
            amount,
            dependent,
            write_fraction: 0.0,
            compute: Nanos::ZERO,
            instructions_per_ref: None,
            writes: Writes::default(),
        };
    }
    p
}

/// Map `bytes` with MADV_NOHUGEPAGE, touch it (4 KB pages), then allow huge pages with
/// MADV_HUGEPAGE and idle for `idle`: khugepaged's food.
pub fn base_then_eligible(name: &str, bytes: u64, idle: Nanos, start: Nanos) -> ProcessSpec {
    let b = BufferId(0);
    ProcessSpec {
        name: name.into(),
        start,
        core: None,
        phases: vec![
            Phase::Mmap {
                buffer: b,
                bytes,
                advice: Advice::NoHugepage,
            },
            Phase::Access(builtin::touch(b, bytes)),
            Phase::Madvise {
                buffer: b,
                offset: 0,
                len: bytes,
                advice: MadviseKind::Hugepage,
            },
            Phase::Sleep(idle),
        ],
    }
}

/// Ingens with daemons every second, 2 regions a pass (the paper's: every 10 s, 8
/// regions), so that a run of seconds shows its promotions.
pub fn ingens() -> PolicyConfig {
    PolicyConfig::Ingens(IngensConfig {
        scan_sleep: Nanos::from_secs(1),
        regions_per_pass: 2,
        track_period: Nanos::from_secs(1),
        ..IngensConfig::default()
    })
}

/// HawkEye `variant` with daemons every second, 2 promotions a pass and sampling every
/// 3 s (the paper's: every 10 s, 8 regions, sampling every 30 s).
pub fn hawkeye(variant: HawkeyeVariant) -> PolicyConfig {
    PolicyConfig::Hawkeye(HawkeyeConfig {
        variant,
        sampling: SamplerConfig {
            period: Nanos::from_secs(3),
            window: Nanos::from_millis(500),
        },
        scan_sleep: Nanos::from_secs(1),
        promotions_per_pass: 2,
        ..HawkeyeConfig::default()
    })
}
