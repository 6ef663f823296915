//! Compares the model with the calibration microbenchmark (tools/membench), fits a
//! profile's translation parameters on part of the data and reports the error on the
//! rest, for docs/calibration.md.
//!
//! Run: `cargo run --release -p hugemm-sim --example calibrate -- [--profile NAME|FILE]
//! [--fit] MEMBENCH.csv...`
//!
//! * Several CSV files (runs on different days or machines of one class) are combined:
//!   each case's measured value is the median of the runs' medians, and the table shows
//!   the spread between runs ((max - min) / median).
//! * Cases are split once, by a fixed rule, into a **fit** set and a **held-out** set:
//!   spans of 16 MiB, 256 MiB and 4 GiB of dependent loads, independent loads and the
//!   host-backing probe's 4096-page chase are fitted; 64 MiB, 1 GiB and 8 GiB, every GUPS
//!   case (a pattern never fitted) and the 4 GiB first-touch faults are held out.
//! * `--fit` searches the translation parameters (below) by coordinate descent on the
//!   fit set's mean |log(model / measured)| and prints the values found; without it the
//!   profile is evaluated as it is.
//! * The host-backing probe (`host_probe_*` rows), where present, gives the fraction of
//!   guest 2 MB pages the host backs with 4 KB pages: a measurement, not a fit.
//!
//! Each access case becomes an experiment: map, touch, then `REFS` uniform references
//! (dependent loads, independent loads, or independent read-modify-writes for GUPS); the
//! model's ns per access is the access phase's simulated time (the run minus a touch-only
//! run) divided by `REFS`. First-touch fault cost is the touch phase's time per page.

use hugemm_hw::{Geometry, MachineProfile, Mmu, Nanos, PageSize, Reference, VirtAddr};
use hugemm_policy::{LinuxConfig, PolicyConfig, ThpMode};
use hugemm_sim::{Engine, Experiment, Mode};
use hugemm_workload::{builtin, Advice, Amount, Pattern, Phase};
use std::collections::BTreeMap;

/// References of each access case.
const REFS: u64 = 1_000_000;
/// References of each access case while fitting (the search runs each case many times).
const FIT_REFS: u64 = 300_000;

type Error = Box<dyn std::error::Error>;

/// One measured case: test, page size label, buffer bytes.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Case {
    test: String,
    page: String,
    bytes: u64,
}

impl Case {
    fn huge(&self) -> bool {
        self.page == "2M"
    }

    /// Whether the model predicts this case at all.
    fn modelled(&self) -> bool {
        matches!(
            self.test.as_str(),
            "dep_random" | "indep_random" | "gups" | "fault_touch" | "host_probe_k4096"
        )
    }

    /// The fixed split: fitted sizes of the two load patterns, and 1 GiB faults.
    fn fitted(&self) -> bool {
        const FIT_SIZES: [u64; 3] = [16 << 20, 256 << 20, 4 << 30];
        match self.test.as_str() {
            "dep_random" | "indep_random" | "host_probe_k4096" => FIT_SIZES.contains(&self.bytes),
            "fault_touch" => self.bytes == 1 << 30,
            _ => false,
        }
    }
}

/// Simulated ns of `refs` uniform references over a buffer of `bytes` after touching it,
/// or of the touch alone when `refs` is 0.
fn run(profile: &MachineProfile, c: &Case, refs: u64) -> Result<u64, Error> {
    let mut p = builtin::random_access("m", c.bytes, refs.max(1), Advice::Default);
    if let Some(Phase::Access(a)) = p.phases.last_mut() {
        a.pattern = Pattern::Uniform;
        a.amount = Amount::Refs(refs.max(1));
        a.dependent = c.test == "dep_random" || refs == 0;
        a.write_fraction = if c.test == "gups" { 1.0 } else { 0.0 };
    }
    let thp = if c.huge() {
        ThpMode::Always
    } else {
        ThpMode::Never
    };
    let exp = Experiment {
        profile: profile.clone(),
        cores: 1,
        memory_bytes: (c.bytes + c.bytes / 4)
            .next_multiple_of(4 << 20)
            .max(64 << 20),
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

/// The host-backing probe on the model's MMU alone (no kernel: the probe's references
/// are all to memory already mapped): a dependent chase over 4096 lines in `pages` 4 KB
/// pages, one page at a hashed position in each of `pages` equal strides of `span`,
/// `4096 / pages` lines per page, in one random cycle; ns per access after a warm-up.
/// The buffer is guest-physically contiguous from 1 GiB, as a fresh machine's buddy
/// allocator hands it out (the host's paging-structure caches see that locality).
fn probe_model(profile: &MachineProfile, span: u64, huge: bool, pages: u64) -> f64 {
    const LINES: u64 = 4096;
    const BASE: u64 = 0x7f00_0000_0000;
    const PHYS: u64 = 1 << 30;
    let mix = |x: u64| {
        let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let (lpp, spp) = (LINES / pages, span / 4096 / pages);
    let size = if huge { PageSize::Huge } else { PageSize::Base };
    let refs: Vec<Reference> = (0..LINES)
        .map(|j| {
            let pg = j / lpp;
            let h = mix(pg ^ 0x4057_b0be ^ span);
            let page = pg * spp + (h >> 6) % spp;
            let line = (h + (j % lpp) * (64 / lpp)) & 63;
            let off = page * 4096 + line * 64;
            Reference {
                asid: 1,
                va: VirtAddr(BASE + off),
                size,
                pa: PHYS + off,
                dependent: true,
                write: false,
            }
        })
        .collect();
    // A random cycle through the lines (Sattolo), as membench visits them.
    let mut order: Vec<usize> = (0..refs.len()).collect();
    let mut state = 0x1234_5678u64;
    for i in (1..order.len()).rev() {
        state = mix(state);
        order.swap(i, (state % i as u64) as usize);
    }
    let mut m = Mmu::new(profile, Geometry::X86_64);
    for _ in 0..8 {
        for &i in &order {
            m.access(&refs[i]);
        }
    }
    let rounds = 16;
    let mut ps = 0u64;
    for _ in 0..rounds {
        for &i in &order {
            ps += m.access(&refs[i]).time.0;
        }
    }
    ps as f64 / 1000.0 / (rounds * refs.len()) as f64
}

/// The model's ns per access (or per fault) for case `c`.
fn predict(profile: &MachineProfile, c: &Case, refs: u64) -> Result<f64, Error> {
    if let Some(k) = c.test.strip_prefix("host_probe_k") {
        return Ok(probe_model(profile, c.bytes, c.huge(), k.parse()?));
    }
    let touch = run(profile, c, 0)?;
    if c.test == "fault_touch" {
        let faults = if c.huge() {
            c.bytes >> 21
        } else {
            c.bytes >> 12
        };
        return Ok(touch as f64 / faults as f64);
    }
    let full = run(profile, c, refs + 1)?;
    Ok(full.saturating_sub(touch) as f64 / refs as f64)
}

/// Measured medians per case, one value per CSV file that has the case.
fn read(paths: &[String]) -> Result<BTreeMap<Case, Vec<f64>>, Error> {
    let mut out: BTreeMap<Case, Vec<f64>> = BTreeMap::new();
    for path in paths {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
        for (n, line) in text.lines().enumerate().skip(1) {
            let f: Vec<&str> = line.split(',').collect();
            if f.len() < 4 {
                return Err(format!("{path}:{}: expected at least 4 fields", n + 1).into());
            }
            let case = Case {
                test: f[0].into(),
                page: f[1].into(),
                bytes: f[2]
                    .parse()
                    .map_err(|e| format!("{path}:{}: buffer bytes: {e}", n + 1))?,
            };
            let ns: f64 = f[3]
                .parse()
                .map_err(|e| format!("{path}:{}: median: {e}", n + 1))?;
            out.entry(case).or_default().push(ns);
        }
    }
    Ok(out)
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// The host-backing probe's estimate of the fraction of guest 2 MB pages the host backs
/// with 4 KB pages, per span: (t_2M - t_nomiss) / (t_4K - t_nomiss).
fn probe(measured: &BTreeMap<Case, f64>) -> Vec<(u64, f64)> {
    let get = |test: &str, page: &str, bytes| {
        measured
            .get(&Case {
                test: test.into(),
                page: page.into(),
                bytes,
            })
            .copied()
    };
    let mut out = Vec::new();
    for c in measured.keys() {
        if c.test != "host_probe_k4096" || c.page != "2M" {
            continue;
        }
        let (Some(t2), Some(t4), Some(t0)) = (
            get("host_probe_k4096", "2M", c.bytes),
            get("host_probe_k4096", "4K", c.bytes),
            get("host_probe_k512", "2M", c.bytes),
        ) else {
            continue;
        };
        if t4 > t0 {
            out.push((c.bytes, ((t2 - t0) / (t4 - t0)).clamp(0.0, 1.0)));
        }
    }
    out
}

/// A parameter the fit may change.
struct Param {
    name: &'static str,
    get: fn(&MachineProfile) -> f64,
    set: fn(&mut MachineProfile, f64),
    /// Smallest and largest value tried.
    range: (f64, f64),
    integer: bool,
}

fn params() -> Vec<Param> {
    vec![
        Param {
            name: "walk_base_cycles",
            get: |p| p.walk_base_cycles,
            set: |p, x| p.walk_base_cycles = x,
            range: (0.0, 400.0),
            integer: false,
        },
        Param {
            name: "guest.host_walk_base_cycles",
            get: |p| p.guest.as_ref().map_or(0.0, |g| g.host_walk_base_cycles),
            set: |p, x| {
                if let Some(g) = p.guest.as_mut() {
                    g.host_walk_base_cycles = x;
                }
            },
            range: (0.0, 400.0),
            integer: false,
        },
        Param {
            name: "dram_latency_ns",
            get: |p| p.dram_latency_ns,
            set: |p, x| p.dram_latency_ns = x,
            range: (50.0, 400.0),
            integer: false,
        },
        Param {
            name: "page_walkers",
            get: |p| p.page_walkers as f64,
            set: |p, x| p.page_walkers = x as u32,
            range: (1.0, 8.0),
            integer: true,
        },
        Param {
            name: "guest.nested_tlb.entries",
            get: |p| {
                p.guest
                    .as_ref()
                    .map_or(0.0, |g| g.nested_tlb.entries as f64)
            },
            set: |p, x| {
                if let Some(g) = p.guest.as_mut() {
                    let n = (x as u32).next_power_of_two();
                    g.nested_tlb = hugemm_hw::AssocProfile {
                        entries: n,
                        ways: n.min(64),
                    };
                }
            },
            range: (4.0, 64.0),
            integer: false,
        },
        Param {
            name: "mlp",
            get: |p| p.mlp,
            set: |p, x| p.mlp = x,
            range: (1.0, 24.0),
            integer: false,
        },
    ]
}

/// Mean |log(model / measured)| over the fit set's access cases.
fn fit_loss(profile: &MachineProfile, fit: &[(Case, f64)]) -> Result<f64, Error> {
    let mut sum = 0.0;
    for (c, m) in fit {
        sum += (predict(profile, c, FIT_REFS)? / m).ln().abs();
    }
    Ok(sum / fit.len() as f64)
}

/// Coordinate descent: each parameter in turn tries steps up and down, keeping a
/// change that lowers the loss; steps shrink each round.
fn fit(profile: &mut MachineProfile, fit: &[(Case, f64)]) -> Result<(), Error> {
    let mut best = fit_loss(profile, fit)?;
    eprintln!("fit: start, loss {best:.4}");
    for step in [0.5, 0.25, 0.1] {
        for p in params() {
            if p.name.starts_with("guest.") && profile.guest.is_none() {
                continue;
            }
            if p.integer {
                let x = (p.get)(profile);
                let (lo, hi) = (p.range.0 as u32, p.range.1 as u32);
                for y in lo..=hi {
                    let y = f64::from(y);
                    if y == x {
                        continue;
                    }
                    let mut q = profile.clone();
                    (p.set)(&mut q, y);
                    let loss = fit_loss(&q, fit)?;
                    if loss < best - 1e-4 {
                        eprintln!(
                            "fit: {} {} -> {y}, loss {loss:.4}",
                            p.name,
                            (p.get)(profile)
                        );
                        *profile = q;
                        best = loss;
                    }
                }
                continue;
            }
            loop {
                let x = (p.get)(profile);
                let mut improved = false;
                for dir in [1.0 + step, 1.0 / (1.0 + step)] {
                    let y = (x.max(1.0) * dir).clamp(p.range.0, p.range.1);
                    if y == x {
                        continue;
                    }
                    let mut q = profile.clone();
                    (p.set)(&mut q, y);
                    let loss = fit_loss(&q, fit)?;
                    if loss < best - 1e-4 {
                        eprintln!("fit: {} {x} -> {y}, loss {loss:.4}", p.name);
                        *profile = q;
                        best = loss;
                        improved = true;
                        break;
                    }
                }
                if !improved {
                    break;
                }
            }
        }
    }
    for p in params() {
        println!("fitted {} = {}", p.name, (p.get)(profile));
    }
    Ok(())
}

fn summary(label: &str, errors: &mut [f64]) {
    if errors.is_empty() {
        return;
    }
    errors.sort_by(f64::total_cmp);
    let mean = errors.iter().sum::<f64>() / errors.len() as f64;
    println!(
        "{label}: {} cases, median |error| {:.1}%, mean {:.1}%, max {:.1}%",
        errors.len(),
        median(errors) * 100.0,
        mean * 100.0,
        errors[errors.len() - 1] * 100.0
    );
}

fn main() -> Result<(), Error> {
    let mut profile_arg = "epyc-milan-kvm".to_string();
    let mut do_fit = false;
    let mut files = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--profile" => profile_arg = args.next().ok_or("--profile needs a value")?,
            "--fit" => do_fit = true,
            _ if a.starts_with("--") => return Err(format!("unknown option {a}").into()),
            _ => files.push(a),
        }
    }
    if files.is_empty() {
        return Err("usage: calibrate [--profile NAME|FILE] [--fit] MEMBENCH.csv...".into());
    }
    let mut profile = match MachineProfile::builtin(&profile_arg) {
        Some(p) => p,
        None => MachineProfile::load(std::path::Path::new(&profile_arg))?,
    };
    let runs = read(&files)?;
    let measured: BTreeMap<Case, f64> = runs.iter().map(|(c, v)| (c.clone(), median(v))).collect();

    let probed = probe(&measured);
    for (bytes, f) in &probed {
        println!(
            "host probe: {} MiB span, {:.0}% of guest 2 MB pages on host 4 KB pages",
            bytes >> 20,
            f * 100.0
        );
    }

    // The probe measures the host's backing: below 4 GiB (where 2 MB entries alone would
    // overflow the STLB) its median sets the profile's fraction when fitting.
    let below: Vec<f64> = probed
        .iter()
        .filter(|(b, _)| *b < 4 << 30)
        .map(|(_, f)| *f)
        .collect();
    if do_fit && !below.is_empty() {
        if let Some(g) = profile.guest.as_mut() {
            g.host_huge_fraction = ((1.0 - median(&below)) * 100.0).round() / 100.0;
            println!(
                "host_huge_fraction = {} (from the probe)",
                g.host_huge_fraction
            );
        }
    }
    if do_fit {
        let set: Vec<(Case, f64)> = measured
            .iter()
            .filter(|(c, _)| c.fitted() && c.test != "fault_touch")
            .map(|(c, m)| (c.clone(), *m))
            .collect();
        fit(&mut profile, &set)?;
    }

    println!("\n| test | pages | buffer | set | runs | spread | measured ns | model ns | error |");
    println!("|---|---|---|---|---|---|---|---|---|");
    let (mut fit_err, mut held_err) = (Vec::new(), Vec::new());
    let mut model = BTreeMap::new();
    for (c, m) in &measured {
        if !c.modelled() {
            continue;
        }
        let v = &runs[c];
        let spread = if v.len() > 1 {
            let (lo, hi) = v
                .iter()
                .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
            format!("{:.0}%", (hi - lo) / m * 100.0)
        } else {
            "-".into()
        };
        let x = predict(&profile, c, REFS)?;
        model.insert(c.clone(), x);
        let err = (x - m) / m;
        let set = if c.fitted() { "fit" } else { "held out" };
        if c.fitted() {
            fit_err.push(err.abs());
        } else {
            held_err.push(err.abs());
        }
        println!(
            "| {} | {} | {} MiB | {set} | {} | {spread} | {m:.1} | {x:.1} | {:+.1}% |",
            c.test,
            c.page,
            c.bytes >> 20,
            v.len(),
            err * 100.0
        );
    }

    println!("\n| test | buffer | measured 4K/2M | model 4K/2M | error |");
    println!("|---|---|---|---|---|");
    let mut ratio_err = Vec::new();
    for (c, m4) in &measured {
        if c.page != "4K" || !model.contains_key(c) || c.test == "fault_touch" {
            continue;
        }
        let two = Case {
            page: "2M".into(),
            ..c.clone()
        };
        let (Some(m2), Some(x4), Some(x2)) = (measured.get(&two), model.get(c), model.get(&two))
        else {
            continue;
        };
        let (mr, xr) = (m4 / m2, x4 / x2);
        let err = (xr - mr) / mr;
        ratio_err.push(err.abs());
        println!(
            "| {} | {} MiB | {mr:.2} | {xr:.2} | {:+.1}% |",
            c.test,
            c.bytes >> 20,
            err * 100.0
        );
    }

    println!("\nprofile {}:", profile.name);
    summary("fit set", &mut fit_err);
    summary("held out", &mut held_err);
    summary("4K/2M ratio", &mut ratio_err);
    Ok(())
}
