//! Prints the model's predictions for the calibration microbenchmark (tools/membench)
//! beside the measured medians, for docs/calibration.md.
//!
//! Run: `cargo run --release -p hugemm-sim --example calibrate -- docs/calibration-data/membench-epyc-kvm.csv [PROFILE]`
//!
//! Each measured case (dependent or independent uniform random loads over a buffer of 4 KB
//! pages or THPs) becomes an experiment: map, touch, then `REFS` references; the model's
//! ns per access is the access phase's time (the run minus a touch-only run) divided by
//! `REFS`. First-touch fault cost is the touch phase's time per page (4 KB) or per huge
//! page (2 MB).

use hugemm_hw::{Geometry, MachineProfile, Nanos};
use hugemm_policy::{LinuxConfig, PolicyConfig, ThpMode};
use hugemm_sim::{Engine, Experiment, Mode};
use hugemm_workload::{builtin, Advice, Amount, Pattern, Phase};
use std::collections::BTreeMap;

const REFS: u64 = 1_000_000;

fn run(
    profile: &MachineProfile,
    bytes: u64,
    huge: bool,
    refs: u64,
    dependent: bool,
) -> Result<u64, Box<dyn std::error::Error>> {
    let mut p = builtin::random_access("m", bytes, refs, Advice::Default);
    if let Some(Phase::Access(a)) = p.phases.last_mut() {
        a.pattern = Pattern::Uniform;
        a.amount = Amount::Refs(refs);
        a.dependent = dependent;
    }
    let thp = if huge {
        ThpMode::Always
    } else {
        ThpMode::Never
    };
    let exp = Experiment {
        profile: profile.clone(),
        cores: 1,
        memory_bytes: (bytes + bytes / 4).next_multiple_of(4 << 20).max(64 << 20),
        node_bytes: Vec::new(),
        home_node: 0,
        tiering: None,
        geometry: Geometry::X86_64,
        policy: PolicyConfig::Linux(LinuxConfig {
            enabled: thp,
            ..LinuxConfig::default()
        }),
        processes: vec![p],
        mode: Mode::Exact,
        seed: 11,
        sample_interval: Nanos::from_secs(1000),
        time_limit: Nanos::from_secs(1_000_000),
        daemon_core: 0,
        kernel: Default::default(),
    };
    Ok(Engine::new(exp)?.run()?.summary.processes[0].runtime_ns)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let csv = args
        .next()
        .ok_or("usage: calibrate MEMBENCH.csv [PROFILE]")?;
    let name = args.next().unwrap_or_else(|| "epyc-milan-kvm".into());
    let profile = MachineProfile::builtin(&name).ok_or("unknown profile")?;
    let text = std::fs::read_to_string(&csv)?;
    let mut measured: BTreeMap<(String, String, u64), f64> = BTreeMap::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        if f.len() >= 4 {
            measured.insert((f[0].into(), f[1].into(), f[2].parse()?), f[3].parse()?);
        }
    }
    println!("| test | pages | buffer | measured ns | model ns | error |");
    println!("|---|---|---|---|---|---|");
    let mut errors = Vec::new();
    let mut touch_cache = BTreeMap::new();
    for ((test, page, bytes), m) in &measured {
        let huge = page == "2M";
        let model = match test.as_str() {
            "dep_random" | "indep_random" => {
                let touch = match touch_cache.get(&(*bytes, huge)) {
                    Some(t) => *t,
                    None => {
                        let t = run(&profile, *bytes, huge, 1, true)?;
                        touch_cache.insert((*bytes, huge), t);
                        t
                    }
                };
                let full = run(&profile, *bytes, huge, REFS + 1, test == "dep_random")?;
                (full - touch) as f64 / REFS as f64
            }
            "fault_touch" => {
                let t = run(&profile, *bytes, huge, 1, true)? as f64;
                let faults = if huge { bytes >> 21 } else { bytes >> 12 };
                t / faults as f64
            }
            _ => continue,
        };
        let err = (model - m) / m;
        errors.push(err.abs());
        println!(
            "| {test} | {page} | {} MiB | {m:.1} | {model:.1} | {:+.1}% |",
            bytes >> 20,
            err * 100.0
        );
    }
    errors.sort_by(|a, b| a.total_cmp(b));
    let median = errors[errors.len() / 2];
    let mean = errors.iter().sum::<f64>() / errors.len() as f64;
    println!(
        "\n{} cases on profile {name}: median |error| {:.1}%, mean |error| {:.1}%, max {:.1}%",
        errors.len(),
        median * 100.0,
        mean * 100.0,
        errors.last().unwrap() * 100.0
    );
    Ok(())
}
