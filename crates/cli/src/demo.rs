//! `hugemm demo`: a built-in comparison needing no file — a TLB-hungry random-access
//! program (4 GiB, dependent reads) under THP `never` and `always`, on the development
//! machine's calibrated profile.

use hugemm_hw::{Geometry, MachineProfile, Nanos};
use hugemm_policy::{LinuxConfig, PolicyConfig, ThpMode};
use hugemm_sim::{Engine, Experiment, Mode, RunResult};
use hugemm_workload::{builtin, Advice};

/// The profile the demo runs on.
pub const PROFILE: &str = "epyc-milan-kvm";
/// Buffer of the demo program.
pub const BYTES: u64 = 4 << 30;
/// Random references the demo program makes after touching its buffer.
pub const REFS: u64 = 20_000_000;

/// The demo experiment under THP mode `thp`.
pub fn experiment(thp: ThpMode, seed: u64) -> anyhow::Result<Experiment> {
    let profile = MachineProfile::builtin(PROFILE)
        .ok_or_else(|| anyhow::anyhow!("built-in profile {PROFILE} is missing"))?;
    let policy = PolicyConfig::Linux(LinuxConfig {
        enabled: thp,
        ..LinuxConfig::default()
    });
    Ok(Experiment {
        cores: 1,
        memory_bytes: 8 << 30,
        node_bytes: Vec::new(),
        zone_bytes: Vec::new(),
        home_node: 0,
        tiering: None,
        geometry: Geometry::X86_64,
        policy,
        processes: vec![builtin::random_access("gups", BYTES, REFS, Advice::Default)],
        mode: Mode::Exact,
        seed,
        sample_interval: Nanos::from_millis(100),
        turn: hugemm_sim::SYNC.to_nanos(),
        time_limit: Nanos::from_secs(3600),
        daemon_core: 0,
        kernel: Default::default(),
        profile,
    })
}

/// Run the demo under `never` and `always`.
pub fn run(seed: u64) -> anyhow::Result<(RunResult, RunResult)> {
    let never = Engine::new(experiment(ThpMode::Never, seed)?)?.run()?;
    let always = Engine::new(experiment(ThpMode::Always, seed)?)?.run()?;
    Ok((never, always))
}
