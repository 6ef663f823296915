//! HawkEye (ASPLOS'19) sections 2.1, 2.2, 3.1, 3.2 and 4: page zeroing, fault latency
//! and memory bloat. Figure 1 (a Redis-like server's RSS through insert, delete and
//! insert phases), Table 1 (faults and fault time of an allocate-and-touch loop), Table
//! 7 (Redis memory and throughput after deletions), Table 8 (workloads bound by the fault
//! handler) and Figure 10 (what pre-zeroing's stores do to co-running programs).
//!
//! Each runs the file's processes (or each of its `[reproduce] sets` in turn) under
//! *variants*, each a policy and a kernel setting:
//!
//! | variant | policy | kernel |
//! |---|---|---|
//! | `linux-4k` | `linux`, THP `never`, khugepaged off | clears pages at fault |
//! | `linux-2m` | `[policy.linux]` of the file | clears pages at fault |
//! | `linux-4k-nozero`, `linux-2m-nozero` | as above | no clearing (Table 1's hypothetical kernel) |
//! | `linux-shrink-409`, `linux-shrink-256` | `[policy.linux]` with `max_ptes_none` 409 or 256 and the THP shrinker on (Linux 6.12; at the default 511 it splits nothing, so these are the settings a user would choose; the same knob also limits khugepaged's collapses) | |
//! | `freebsd` | `[policy.freebsd]`: reservations, broken under pressure | |
//! | `ingens`, `ingens-90`, `ingens-50` | `[policy.ingens]`, utilisation threshold as named | |
//! | `hawkeye` (= `hawkeye-2m`) | `[policy.hawkeye]` | `[kernel.prezero]` on |
//! | `hawkeye-4k` | `linux`, THP `never` | `[kernel.prezero]` on: pre-zeroing with base pages only |
//! | `hawkeye-pressure` | as `hawkeye` | and the file's processes named `pressure` run too |
//! | `hpolicy` | `[policy.hpolicy]` (H-Policy over SysMon-H) | H-Policy's kernel: order-9 preservation and hole-aware compaction on, as `policy = "hpolicy"` defaults to (a file whose `[policy] name` is `hpolicy` keeps its `[kernel]` as resolved) |
//! | `prezero-off`, `prezero-nt`, `prezero-caching` | the file's | pre-zeroing off, or on with non-temporal or caching stores |
//!
//! Processes named `pressure` (or its instances) run only under `hawkeye-pressure`. The
//! file's `[kernel.prezero]` knobs (rate, period, lists, stress) apply wherever
//! pre-zeroing is on.
//!
//! The paper's numbers are quoted from its text and tables; Figures 1 and 10 give no
//! numbers beyond those the text states.

use super::{engine, par_map, table, Claim, Progress, Report, Reproduction, Value, VariantRun};
use crate::plot::{BarGroup, Figure, Series};
use hugemm_mm::CompactMode;
use hugemm_policy::{IngensConfig, KhugepagedConfig, LinuxConfig, PolicyConfig, ThpMode};
use hugemm_sim::{Experiment, ProcessSummary, RunResult, Stores};
use serde::Serialize;
use serde_json::json;

/// The variants these reproductions can compare.
pub const VARIANTS: &[&str] = &[
    "linux-4k",
    "linux-2m",
    "linux-4k-nozero",
    "linux-2m-nozero",
    "linux-shrink-409",
    "linux-shrink-256",
    "freebsd",
    "ingens",
    "ingens-90",
    "ingens-50",
    "hawkeye",
    "hawkeye-2m",
    "hawkeye-4k",
    "hawkeye-pressure",
    "hpolicy",
    "prezero-off",
    "prezero-nt",
    "prezero-caching",
];

/// The name of the processes that only `hawkeye-pressure` runs.
pub const PRESSURE: &str = "pressure";

fn never(c: &LinuxConfig) -> PolicyConfig {
    PolicyConfig::Linux(LinuxConfig {
        enabled: ThpMode::Never,
        khugepaged: KhugepagedConfig {
            enabled: false,
            ..c.khugepaged
        },
        ..*c
    })
}

/// The experiment of `variant` with the processes of `set` (all but `pressure` when
/// `set` is empty).
pub fn experiment(r: &Reproduction, set: &[String], variant: &str) -> Experiment {
    let mut exp = r.experiment.clone();
    let c = &r.policies;
    exp.kernel.clear_pages = true;
    exp.kernel.prezero.enabled = false;
    match variant {
        "linux-4k" | "linux-4k-nozero" => exp.policy = never(&c.linux),
        "linux-2m" | "linux-2m-nozero" => exp.policy = PolicyConfig::Linux(c.linux),
        "linux-shrink-409" | "linux-shrink-256" => {
            exp.policy = PolicyConfig::Linux(LinuxConfig {
                shrink_underused: true,
                khugepaged: KhugepagedConfig {
                    max_ptes_none: if variant == "linux-shrink-409" {
                        409
                    } else {
                        256
                    },
                    ..c.linux.khugepaged
                },
                ..c.linux
            })
        }
        "freebsd" => exp.policy = PolicyConfig::FreeBsd(c.freebsd),
        "ingens" => exp.policy = PolicyConfig::Ingens(c.ingens),
        "ingens-90" | "ingens-50" => {
            exp.policy = PolicyConfig::Ingens(IngensConfig {
                util_threshold: if variant == "ingens-50" { 0.5 } else { 0.9 },
                ..c.ingens
            })
        }
        "hawkeye" | "hawkeye-2m" | "hawkeye-pressure" => {
            exp.policy = PolicyConfig::Hawkeye(c.hawkeye);
            exp.kernel.prezero.enabled = true;
        }
        "hpolicy" => {
            // A file naming hpolicy has its kernel resolved for it already (its own
            // choice, or H-Policy's defaults); otherwise the variant brings them.
            if !matches!(r.experiment.policy, PolicyConfig::HPolicy(_)) {
                exp.kernel.preserve_huge_blocks = true;
                exp.kernel.compaction = CompactMode::HoleAware;
            }
            exp.policy = PolicyConfig::HPolicy(c.hpolicy);
        }
        "hawkeye-4k" => {
            exp.policy = never(&c.linux);
            exp.kernel.prezero.enabled = true;
        }
        "prezero-nt" | "prezero-caching" => {
            exp.kernel.prezero.enabled = true;
            exp.kernel.prezero.stores = if variant == "prezero-nt" {
                Stores::NonTemporal
            } else {
                Stores::Caching
            };
        }
        _ => {}
    }
    if variant.ends_with("-nozero") {
        exp.kernel.clear_pages = false;
    }
    let pressure = variant == "hawkeye-pressure";
    exp.processes.retain(|p| {
        let is_pressure = super::hawkeye::member(&p.name, PRESSURE);
        let in_set = set.is_empty() || set.iter().any(|e| super::hawkeye::member(&p.name, e));
        (in_set && !is_pressure) || (pressure && is_pressure)
    });
    exp
}

/// One run: a set under a variant, and its processes' summaries.
#[derive(Clone, Debug, Serialize)]
pub struct Run {
    /// The variant.
    pub variant: String,
    /// The set (empty: every process).
    pub set: Vec<String>,
    /// Per process.
    pub processes: Vec<ProcessSummary>,
    /// Simulated time at the end (s).
    pub end_s: f64,
    /// The whole result (time series included).
    #[serde(skip)]
    pub result: RunResult,
}

impl Run {
    /// The summary of process `name` (or of its first instance).
    pub fn process(&self, name: &str) -> Option<&ProcessSummary> {
        self.processes
            .iter()
            .find(|p| super::hawkeye::member(&p.name, name))
    }
}

/// The runs as written beside the report: `runs/<variant>/`, or `runs/<set>/<variant>/`
/// when the file has sets.
pub(crate) fn variant_runs(runs: Vec<Run>) -> Vec<VariantRun> {
    runs.into_iter()
        .map(|run| {
            let set = run.set.join("+");
            let mut path = Vec::new();
            if !set.is_empty() {
                path.push(set.as_str());
            }
            path.push(run.variant.as_str());
            VariantRun::new(&path, run.result)
        })
        .collect()
}

/// Bars of the paper's and hugemm's values of (category, paper, hugemm) `rows`.
fn paper_beside_hugemm(
    id: &str,
    title: &str,
    y: &str,
    rows: &[(String, Option<f64>, Option<f64>)],
) -> Figure {
    super::paper_beside_hugemm(
        id,
        title,
        y,
        rows.iter().map(|r| r.0.clone()).collect(),
        rows.iter().map(|r| r.1).collect(),
        rows.iter().map(|r| r.2).collect(),
    )
}

/// Run every set (or all processes) under every variant.
pub fn run_all(r: &Reproduction, progress: Progress<'_>) -> anyhow::Result<Vec<Run>> {
    let sets: Vec<Vec<String>> = if r.sets.is_empty() {
        vec![Vec::new()]
    } else {
        r.sets.clone()
    };
    let pairs: Vec<(&Vec<String>, &String)> = sets
        .iter()
        .flat_map(|set| r.variants.iter().map(move |v| (set, v)))
        .collect();
    par_map(&pairs, |&(set, v)| {
        let what = if set.is_empty() {
            String::new()
        } else {
            format!("{} ", set.join("+"))
        };
        let result = engine(progress, &format!("{what}under {v}"), experiment(r, set, v))?.run()?;
        Ok(Run {
            variant: v.clone(),
            set: set.clone(),
            processes: result.summary.processes.clone(),
            end_s: result.summary.system.sim_time_ns as f64 / 1e9,
            result,
        })
    })
}

fn f1(x: f64) -> String {
    format!("{x:.1}")
}

fn gib(bytes: u64) -> String {
    format!("{:.2}", bytes as f64 / (1u64 << 30) as f64)
}

/// System time of a process: its runtime less its user cycles (s).
fn system_s(p: &ProcessSummary, freq_ghz: f64) -> f64 {
    let user = p.cycles as f64 / (freq_ghz * 1e9);
    (p.runtime_ns as f64 / 1e9 - user).max(0.0)
}

/// Table 1's published values, per variant: faults, total fault time (s), mean fault
/// time (us), system time (s), total time (s), for ten runs of a 10 GB buffer.
fn table1_paper(variant: &str) -> Option<[f64; 5]> {
    Some(match variant {
        "linux-4k" => [26.2e6, 92.6, 3.5, 102.0, 106.0],
        "linux-2m" => [51.5e3, 23.9, 465.0, 24.0, 24.9],
        "ingens-90" => [26.2e6, 92.8, 3.5, 104.0, 116.0],
        "linux-4k-nozero" => [26.2e6, 69.5, 2.65, 79.0, 83.0],
        "linux-2m-nozero" => [51.5e3, 0.7, 13.0, 1.3, 4.4],
        _ => return None,
    })
}

/// Table 1: faults, fault time, system and total time of the allocate-and-touch loop.
pub fn table1(r: &Reproduction, progress: Progress<'_>) -> anyhow::Result<Report> {
    let runs = run_all(r, progress)?;
    let freq = r.experiment.profile.freq_ghz;
    let mut rows = Vec::new();
    let mut data = Vec::new();
    let mut values = Vec::new();
    let (mut total, mut mean) = (Vec::new(), Vec::new());
    for run in &runs {
        let Some(p) = run.processes.first() else {
            continue;
        };
        let faults = (p.faults_4k + p.faults_2m) as f64;
        let ours = [
            faults,
            p.fault_time_ns as f64 / 1e9,
            p.fault_mean_ns / 1e3,
            system_s(p, freq),
            p.runtime_ns as f64 / 1e9,
        ];
        let paper = table1_paper(&run.variant);
        if let Some(pv) = paper {
            for (i, quantity) in TABLE1_QUANTITIES.iter().enumerate() {
                values.push(Value::new(
                    "Table 1",
                    &run.variant,
                    quantity,
                    pv[i],
                    Some(ours[i]),
                ));
            }
        }
        total.push((run.variant.clone(), paper.map(|p| p[4]), Some(ours[4])));
        mean.push((run.variant.clone(), paper.map(|p| p[2]), Some(ours[2])));
        let cell = |i: usize, f: fn(f64) -> String| match paper {
            Some(pv) => format!("{} / {}", f(pv[i]), f(ours[i])),
            None => format!("- / {}", f(ours[i])),
        };
        rows.push(vec![
            run.variant.clone(),
            cell(0, |x| format!("{:.3}M", x / 1e6)),
            cell(1, f1),
            cell(2, |x| format!("{x:.2}")),
            cell(3, f1),
            cell(4, f1),
            format!(
                "{:.1}",
                p.fault_zeroing_ns as f64 / p.fault_time_ns.max(1) as f64 * 100.0
            ),
        ]);
        data.push(json!({
            "variant": run.variant, "paper": paper, "hugemm": ours,
            "fault_zeroing_share": p.fault_zeroing_ns as f64 / p.fault_time_ns.max(1) as f64,
            "fault_p99_us": p.fault_p99_ns as f64 / 1e3,
        }));
    }
    let t = table(
        &[
            "variant (paper / hugemm)",
            "page faults",
            "fault time s",
            "avg fault us",
            "system s",
            "total s",
            "zeroing % of fault time",
        ],
        &rows,
    );
    Ok(Report {
        title: "HawkEye Table 1: page faults, allocation latency and performance of an \
                allocate-and-touch loop (10 runs of a 10 GB buffer)"
            .into(),
        tables: vec![t],
        claims: claims_table1(&runs),
        values,
        figures: vec![
            paper_beside_hugemm(
                "table1-total-time",
                "Table 1: total time of 10 runs (s)",
                "total time (s)",
                &total,
            ),
            paper_beside_hugemm(
                "table1-fault-time",
                "Table 1: mean page-fault time (us)",
                "mean fault time (us)",
                &mean,
            ),
        ],
        data: json!(data),
        runs: variant_runs(runs),
        ..Default::default()
    })
}

/// Table 1's quantities, in [`table1_paper`]'s order.
const TABLE1_QUANTITIES: [&str; 5] = [
    "page faults",
    "fault time (s)",
    "mean fault time (us)",
    "system time (s)",
    "total time (s)",
];

fn mean_fault_us(runs: &[Run], variant: &str) -> Option<f64> {
    let p = runs
        .iter()
        .find(|r| r.variant == variant)?
        .processes
        .first()?;
    Some(p.fault_mean_ns / 1e3)
}

fn claims_table1(runs: &[Run]) -> Vec<Claim> {
    let mut claims = Vec::new();
    let (z, none) = (
        mean_fault_us(runs, "linux-2m"),
        mean_fault_us(runs, "linux-2m-nozero"),
    );
    if let (Some(z), Some(n)) = (z, none) {
        claims.push(Claim::new(
            "without zeroing a 2 MB fault is an order of magnitude cheaper",
            "465 vs 13 us",
            format!("{z:.0} vs {n:.1} us: {:.0}x", z / n.max(1e-9)),
            Some(z / n.max(1e-9) >= 10.0),
        ));
    }
    if let (Some(a), Some(b)) = (mean_fault_us(runs, "linux-4k"), z) {
        claims.push(Claim::new(
            "a 2 MB fault costs over 100 times a 4 KB one",
            "465 vs 3.5 us",
            format!("{:.0}x", b / a.max(1e-9)),
            Some(b / a.max(1e-9) > 100.0),
        ));
    }
    if let (Some(z), Some(h)) = (z, mean_fault_us(runs, "hawkeye-2m")) {
        claims.push(Claim::new(
            "pre-zeroing at 10,000 pages/s takes zeroing out of 2 MB faults (section 3.1)",
            "an order of magnitude, as without zeroing",
            format!("{z:.0} vs {h:.1} us: {:.1}x", z / h.max(1e-9)),
            Some(z / h.max(1e-9) >= 10.0),
        ));
    }
    claims
}

/// Table 7's published values: memory (GB) and throughput (K requests/s).
fn table7_paper(variant: &str) -> Option<(f64, f64)> {
    Some(match variant {
        "linux-4k" => (16.2, 106.1),
        "linux-2m" => (33.2, 113.8),
        "ingens-90" => (16.3, 106.8),
        "ingens-50" => (33.1, 113.4),
        "hawkeye" | "hawkeye-2m" => (33.2, 113.6),
        "hawkeye-pressure" => (16.2, 105.8),
        _ => return None,
    })
}

/// The server process of a run (the first with key-value phases).
fn server(run: &Run) -> Option<&ProcessSummary> {
    run.processes.iter().find(|p| !p.kv.is_empty())
}

/// Table 7: the server's memory after deletions and its get throughput.
pub fn table7(r: &Reproduction, progress: Progress<'_>) -> anyhow::Result<Report> {
    let runs = run_all(r, progress)?;
    let mut rows = Vec::new();
    let mut data = Vec::new();
    let (mut values, mut memory, mut throughput) = (Vec::new(), Vec::new(), Vec::new());
    // Memory relative to base pages' (the experiment is scaled; the ratio is not).
    let base = kv_of(&runs, "linux-4k").map(|b| b.0 as f64);
    let paper_base = table7_paper("linux-4k").map(|p| p.0);
    for run in &runs {
        let Some(s) = server(run) else { continue };
        let get = s.kv.iter().rev().find(|k| k.op == "get");
        let rss = s.rss_bytes_end;
        let kreq = get.map_or(0.0, |g| g.requests_per_s / 1e3);
        let paper = table7_paper(&run.variant);
        let relative = base.map(|b| rss as f64 / b.max(1.0));
        let paper_relative = paper.zip(paper_base).map(|(p, b)| p.0 / b);
        if let Some(p) = paper {
            if let Some(pr) = paper_relative {
                values.push(Value::new(
                    "Table 7",
                    &run.variant,
                    "memory / linux-4k's",
                    pr,
                    relative,
                ));
            }
            values.push(Value::new(
                "Table 7",
                &run.variant,
                "get throughput (K/s)",
                p.1,
                Some(kreq),
            ));
        }
        memory.push((run.variant.clone(), paper_relative, relative));
        throughput.push((run.variant.clone(), paper.map(|p| p.1), Some(kreq)));
        rows.push(vec![
            run.variant.clone(),
            paper.map_or("-".into(), |p| format!("{:.1}", p.0)),
            gib(rss),
            gib(s.useful_bytes_end),
            paper.map_or("-".into(), |p| format!("{:.1}", p.1)),
            format!("{kreq:.1}"),
            format!("{:.2}", s.mmu_overhead * 100.0),
            s.huge_pages_end.to_string(),
        ]);
        data.push(json!({
            "variant": run.variant, "paper": paper, "rss_bytes": rss,
            "useful_bytes": s.useful_bytes_end, "get_kreq_per_s": kreq,
            "mmu_overhead": s.mmu_overhead, "kv": s.kv,
        }));
    }
    let t = table(
        &[
            "variant",
            "paper GB",
            "hugemm GiB",
            "useful GiB",
            "paper Kreq/s",
            "hugemm Kreq/s",
            "MMU %",
            "huge pages",
        ],
        &rows,
    );
    Ok(Report {
        title: "HawkEye Table 7: Redis memory and throughput after deleting keys".into(),
        tables: vec![t],
        claims: claims_table7(&runs),
        values,
        figures: vec![
            paper_beside_hugemm(
                "table7-memory",
                "Table 7: server memory after deleting keys, relative to linux-4k",
                "memory / linux-4k's",
                &memory,
            ),
            paper_beside_hugemm(
                "table7-throughput",
                "Table 7: get throughput (K requests/s)",
                "K requests/s",
                &throughput,
            ),
        ],
        data: json!(data),
        runs: variant_runs(runs),
        ..Default::default()
    })
}

fn kv_of(runs: &[Run], variant: &str) -> Option<(u64, f64)> {
    let s = server(runs.iter().find(|r| r.variant == variant)?)?;
    let get = s.kv.iter().rev().find(|k| k.op == "get")?;
    Some((s.rss_bytes_end, get.requests_per_s))
}

fn claims_table7(runs: &[Run]) -> Vec<Claim> {
    let mut claims = Vec::new();
    let within = |a: f64, b: f64, tol: f64| (a - b).abs() <= tol * b;
    if let (Some(p), Some(b)) = (kv_of(runs, "hawkeye-pressure"), kv_of(runs, "linux-4k")) {
        claims.push(Claim::new(
            "under pressure HawkEye recovers to base-page memory (within 10%)",
            "16.2 vs 16.2 GB",
            format!("{} vs {} GiB", gib(p.0), gib(b.0)),
            Some(within(p.0 as f64, b.0 as f64, 0.10)),
        ));
    }
    if let (Some(h), Some(l)) = (kv_of(runs, "hawkeye"), kv_of(runs, "linux-2m")) {
        claims.push(Claim::new(
            "without pressure HawkEye keeps huge-page throughput (within 2%)",
            "113.6 vs 113.8 Kreq/s",
            format!("{:.1} vs {:.1} Kreq/s", h.1 / 1e3, l.1 / 1e3),
            Some(within(h.1, l.1, 0.02)),
        ));
    }
    if let (Some(a), Some(b)) = (kv_of(runs, "linux-2m"), kv_of(runs, "linux-4k")) {
        claims.push(Claim::new(
            "huge pages raise throughput and memory",
            "+7% throughput, memory x2.0",
            format!(
                "{:+.1}% throughput, memory x{:.2}",
                (a.1 / b.1 - 1.0) * 100.0,
                a.0 as f64 / b.0.max(1) as f64
            ),
            Some(a.1 > b.1 && a.0 > b.0),
        ));
    }
    claims
}

/// Table 8's published values per workload and variant: throughput for Redis, seconds
/// for the rest.
fn table8_paper(workload: &str, variant: &str) -> Option<f64> {
    let col = [
        "linux-4k",
        "linux-2m",
        "ingens-90",
        "hawkeye-4k",
        "hawkeye-2m",
    ]
    .iter()
    .position(|v| *v == variant)?;
    let row: [f64; 5] = match workload {
        "redis" => [233.0, 437.0, 192.0, 236.0, 551.0],
        "sparsehash" => [50.1, 17.2, 51.5, 46.6, 10.6],
        "hacc-io" => [6.5, 4.5, 6.6, 6.5, 4.2],
        "jvm-spinup" => [37.7, 18.6, 52.7, 29.8, 1.37],
        "vm-spinup" => [40.6, 9.7, 41.8, 30.2, 0.70],
        _ => return None,
    };
    Some(row[col])
}

/// The measure of Table 8 for a process: insert throughput of a server, else runtime (s).
fn table8_measure(p: &ProcessSummary) -> f64 {
    match p.kv.iter().find(|k| k.op == "insert") {
        Some(k) => k.requests_per_s,
        None => p.runtime_ns as f64 / 1e9,
    }
}

/// Table 8: workloads whose speed is the fault handler's.
pub fn table8(r: &Reproduction, progress: Progress<'_>) -> anyhow::Result<Report> {
    let runs = run_all(r, progress)?;
    let mut rows = Vec::new();
    let mut data = Vec::new();
    let mut values = Vec::new();
    for run in &runs {
        for p in &run.processes {
            let ours = table8_measure(p);
            let paper = table8_paper(&p.name, &run.variant);
            let (pf, hf) = (
                speed_over_4k(&p.name, &run.variant, table8_paper),
                speed_over_4k(&p.name, &run.variant, |w, v| measure(&runs, w, v)),
            );
            if let Some(pf) = pf {
                values.push(Value::new(
                    "Table 8",
                    &format!("{} {}", p.name, run.variant),
                    "speed / linux-4k's",
                    pf,
                    hf,
                ));
            }
            let unit = if p.kv.is_empty() { "s" } else { "inserts/s" };
            rows.push(vec![
                p.name.clone(),
                run.variant.clone(),
                paper.map_or("-".into(), |x| format!("{x}")),
                format!("{ours:.2} {unit}"),
                format!("{:.2}", p.fault_time_ns as f64 / 1e9),
                format!("{:.1}", p.fault_mean_ns / 1e3),
                p.faults.to_string(),
            ]);
            data.push(json!({
                "workload": p.name, "variant": run.variant, "paper": paper, "hugemm": ours,
                "fault_time_s": p.fault_time_ns as f64 / 1e9, "faults": p.faults,
                "fault_zeroing_s": p.fault_zeroing_ns as f64 / 1e9,
            }));
        }
    }
    let t = table(
        &[
            "workload",
            "variant",
            "paper",
            "hugemm",
            "fault s",
            "avg fault us",
            "faults",
        ],
        &rows,
    );
    Ok(Report {
        title: "HawkEye Table 8: performance of workloads bound by page faults \
                (Redis: inserts of 2 MB values a second; others: seconds)"
            .into(),
        tables: vec![t],
        claims: claims_table8(&runs),
        figures: table8_figures(&runs, r),
        values,
        data: json!(data),
        runs: variant_runs(runs),
        ..Default::default()
    })
}

fn measure(runs: &[Run], workload: &str, variant: &str) -> Option<f64> {
    runs.iter()
        .filter(|r| r.variant == variant)
        .find_map(|r| r.processes.iter().find(|p| p.name == workload))
        .map(table8_measure)
}

/// How much faster `workload` runs under `variant` than under `linux-4k` by `of`'s
/// measures (throughput for Redis, seconds for the rest).
fn speed_over_4k(
    workload: &str,
    variant: &str,
    of: impl Fn(&str, &str) -> Option<f64>,
) -> Option<f64> {
    let (x, base) = (of(workload, variant)?, of(workload, "linux-4k")?);
    Some(if workload == "redis" {
        x / base.max(1e-12)
    } else {
        base / x.max(1e-12)
    })
}

/// Table 8 as bars: each workload's speed under each variant over `linux-4k`'s, the
/// paper's and hugemm's.
fn table8_figures(runs: &[Run], r: &Reproduction) -> Vec<Figure> {
    let workloads: Vec<String> = r.sets.iter().map(|s| s.join("+")).collect();
    let bars = |of: &dyn Fn(&str, &str) -> Option<f64>| -> Vec<BarGroup> {
        r.variants
            .iter()
            .map(|v| BarGroup {
                name: v.clone(),
                values: workloads.iter().map(|w| speed_over_4k(w, v, of)).collect(),
            })
            .collect()
    };
    vec![
        Figure::bars(
            "table8-paper",
            "Table 8 (paper): speed over linux-4k",
            "speed / linux-4k's",
            workloads.clone(),
            bars(&|w: &str, v: &str| table8_paper(w, v)),
        ),
        Figure::bars(
            "table8-hugemm",
            "Table 8 (hugemm): speed over linux-4k",
            "speed / linux-4k's",
            workloads.clone(),
            bars(&|w: &str, v: &str| measure(runs, w, v)),
        ),
    ]
}

fn claims_table8(runs: &[Run]) -> Vec<Claim> {
    let mut claims = Vec::new();
    for (w, paper) in [
        ("jvm-spinup", "13.6x"),
        ("vm-spinup", "13.9x"),
        ("sparsehash", "1.62x"),
        ("hacc-io", "1.07x"),
    ] {
        if let (Some(l), Some(h)) = (measure(runs, w, "linux-2m"), measure(runs, w, "hawkeye-2m")) {
            claims.push(Claim::new(
                &format!("{w}: pre-zeroed huge pages are faster than Linux's"),
                paper,
                format!("{:.2}x", l / h.max(1e-12)),
                Some(h < l),
            ));
        }
    }
    if let (Some(l), Some(h)) = (
        measure(runs, "redis", "linux-2m"),
        measure(runs, "redis", "hawkeye-2m"),
    ) {
        claims.push(Claim::new(
            "redis: pre-zeroing raises insert throughput",
            "1.26x",
            format!("{:.2}x", h / l.max(1e-12)),
            Some(h > l),
        ));
    }
    claims
}

/// Figure 1: a Redis-like server through insert, delete and insert phases; RSS over time,
/// who runs out of memory and with how much useful memory.
pub fn figure1(r: &Reproduction, progress: Progress<'_>) -> anyhow::Result<Report> {
    let runs = run_all(r, progress)?;
    let mut rows = Vec::new();
    let mut data = Vec::new();
    for run in &runs {
        let Some(s) = server(run) else { continue };
        let series = rss_series(run, &s.name);
        let peak = series.iter().map(|x| x.1).max().unwrap_or(0);
        rows.push(vec![
            run.variant.clone(),
            if s.oom {
                format!("yes, at {:.0} s", s.oom_time_ns.unwrap_or(0) as f64 / 1e9)
            } else {
                "no".into()
            },
            gib(s.useful_bytes_end),
            gib(s.rss_bytes_end),
            gib(s.bloat_bytes_end),
            gib(peak),
            s.kv.len().to_string(),
        ]);
        data.push(json!({
            "variant": run.variant, "oom": s.oom, "oom_time_ns": s.oom_time_ns,
            "useful_bytes_end": s.useful_bytes_end, "rss_bytes_end": s.rss_bytes_end,
            "bloat_bytes_end": s.bloat_bytes_end, "kv": s.kv, "series": series,
        }));
    }
    let t = table(
        &[
            "variant",
            "out of memory",
            "useful GiB",
            "RSS GiB",
            "bloat GiB",
            "peak RSS GiB",
            "phases done",
        ],
        &rows,
    );
    let series = series_table(&runs);
    Ok(Report {
        title: "HawkEye Figure 1: Redis RSS across insert (P1), delete 80% (P2) and \
                insert (P3); paper (48 GB): Linux runs out of memory with 20 GB useful, \
                Ingens with 28 GB, HawkEye completes"
            .into(),
        tables: vec![t, series],
        claims: claims_figure1(&runs),
        figures: vec![Figure::lines(
            "fig1-rss",
            "Figure 1: the server's RSS over time",
            "time (s)",
            "RSS (GiB)",
            runs.iter()
                .filter_map(|run| {
                    let s = server(run)?;
                    Some(Series {
                        name: run.variant.clone(),
                        points: rss_series(run, &s.name)
                            .iter()
                            .map(|x| (x.0, x.1 as f64 / (1u64 << 30) as f64))
                            .collect(),
                    })
                })
                .collect(),
        )],
        data: json!(data),
        runs: variant_runs(runs),
        ..Default::default()
    })
}

/// (time s, RSS bytes, useful bytes) of process `name` at every sample.
pub(crate) fn rss_series(run: &Run, name: &str) -> Vec<(f64, u64, u64)> {
    run.result
        .timeseries
        .iter()
        .filter(|row| row.process == name)
        .map(|row| {
            (
                row.time_ns as f64 / 1e9,
                row.rss_bytes.unwrap_or(0),
                row.useful_bytes.unwrap_or(0),
            )
        })
        .collect()
}

/// RSS (GiB) of each variant's server at about 16 times.
fn series_table(runs: &[Run]) -> String {
    let end = runs.iter().map(|r| r.end_s).fold(0.0, f64::max);
    let step = (end / 16.0).max(1.0).ceil();
    let mut header = vec!["time s".to_string()];
    let mut cols = Vec::new();
    for run in runs {
        if let Some(s) = server(run) {
            header.push(format!("{} RSS/useful GiB", run.variant));
            cols.push(rss_series(run, &s.name));
        }
    }
    let mut rows = Vec::new();
    let mut t = 0.0;
    while t <= end + 1e-9 {
        let mut row = vec![format!("{t:.0}")];
        for c in &cols {
            let at = c.iter().rev().find(|s| s.0 <= t + 1e-9);
            row.push(at.map_or("-".into(), |s| format!("{}/{}", gib(s.1), gib(s.2))));
        }
        rows.push(row);
        t += step;
    }
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    table(&header, &rows)
}

fn claims_figure1(runs: &[Run]) -> Vec<Claim> {
    let oom = |v: &str| {
        runs.iter()
            .find(|r| r.variant == v)
            .and_then(server)
            .map(|s| (s.oom, s.useful_bytes_end))
    };
    let said = |oom: bool| if oom { "out of memory" } else { "completes" }.to_string();
    let mut claims = Vec::new();
    if let Some((o, _)) = oom("linux-2m").or_else(|| oom("linux")) {
        claims.push(Claim::new(
            "Linux runs out of memory",
            "out of memory with 20 GB useful",
            said(o),
            Some(o),
        ));
    }
    if let Some((o, _)) = oom("hawkeye") {
        claims.push(Claim::new(
            "HawkEye does not",
            "completes",
            said(o),
            Some(!o),
        ));
    }
    if let (Some((true, l)), Some((true, i))) =
        (oom("linux-2m").or_else(|| oom("linux")), oom("ingens"))
    {
        claims.push(Claim::new(
            "Ingens runs out later, with more useful memory, than Linux",
            "28 vs 20 GB useful",
            format!("{} vs {} GiB", gib(i), gib(l)),
            Some(i > l),
        ));
    }
    claims
}

/// Figure 10's published values: slowdown of omnetpp with caching and with
/// non-temporal stores (the only numbers its text gives).
const FIG10_OMNETPP: (f64, f64) = (1.27, 1.06);

/// Figure 10: slowdown of co-running programs while pre-zeroing clears memory at a high
/// rate with caching or non-temporal stores.
pub fn figure10(r: &Reproduction, progress: Progress<'_>) -> anyhow::Result<Report> {
    let runs = run_all(r, progress)?;
    let base = |name: &str, set: &[String]| {
        runs.iter()
            .find(|x| x.variant == "prezero-off" && x.set == set)
            .and_then(|x| x.process(name))
            .map(|p| p.runtime_ns as f64)
    };
    let mut rows = Vec::new();
    let mut data = Vec::new();
    let programs: Vec<String> = r.sets.iter().map(|s| s.join("+")).collect();
    let mut bars: Vec<BarGroup> = r
        .variants
        .iter()
        .filter(|v| *v != "prezero-off")
        .map(|v| BarGroup {
            name: v.clone(),
            values: vec![None; programs.len()],
        })
        .collect();
    for run in runs.iter().filter(|x| x.variant != "prezero-off") {
        for p in &run.processes {
            let slow = base(&p.name, &run.set).map(|b| p.runtime_ns as f64 / b);
            let at = programs.iter().position(|s| *s == run.set.join("+"));
            if let (Some(g), Some(at)) = (bars.iter_mut().find(|g| g.name == run.variant), at) {
                g.values[at] = slow.map(|s| (s - 1.0) * 100.0);
            }
            rows.push(vec![
                p.name.clone(),
                run.variant.clone(),
                slow.map_or("-".into(), |s| format!("{:.1}%", (s - 1.0) * 100.0)),
            ]);
            data.push(json!({"process": p.name, "variant": run.variant, "slowdown": slow}));
        }
    }
    let t = table(&["program", "pre-zeroing stores", "slowdown"], &rows);
    let note = format!(
        "paper: omnetpp slows {:.0}% with caching stores, {:.0}% with non-temporal ones \
         (1 GB/s on a core sharing the L3); its other bars are not in its text.\n",
        (FIG10_OMNETPP.0 - 1.0) * 100.0,
        (FIG10_OMNETPP.1 - 1.0) * 100.0
    );
    Ok(Report {
        title: "HawkEye Figure 10: slowdown of co-running programs from pre-zeroing at \
                1 GB/s, caching vs non-temporal stores"
            .into(),
        tables: vec![t, note],
        claims: claims_figure10(&runs),
        figures: vec![Figure::bars(
            "fig10-slowdown",
            "Figure 10: slowdown of co-running programs from pre-zeroing",
            "slowdown (%)",
            programs,
            bars,
        )],
        data: json!(data),
        runs: variant_runs(runs),
        ..Default::default()
    })
}

fn claims_figure10(runs: &[Run]) -> Vec<Claim> {
    let total = |v: &str| -> f64 {
        runs.iter()
            .filter(|r| r.variant == v)
            .flat_map(|r| r.processes.iter())
            .map(|p| p.runtime_ns as f64)
            .sum()
    };
    let (off, nt, caching) = (
        total("prezero-off"),
        total("prezero-nt"),
        total("prezero-caching"),
    );
    let mut claims = Vec::new();
    if off > 0.0 && nt > 0.0 && caching > 0.0 {
        let (n, c) = (nt / off - 1.0, caching / off - 1.0);
        claims.push(Claim::new(
            "non-temporal stores interfere far less than caching ones (summed runtime)",
            "omnetpp: +6% vs +27%",
            format!("{:+.1}% vs {:+.1}%", n * 100.0, c * 100.0),
            Some(n < c / 2.0),
        ));
    }
    claims
}
