//! Beyond the papers (issue 19, item 7): H-Policy's splitting of cold huge pages
//! (SysMon-H / H-Policy section 4, rule i) beside HawkEye's bloat recovery (HawkEye
//! section 3.2) and Linux 6.12's THP shrinker, each set of the file's processes under
//! each variant of [`zeroing`] (`linux-2m`, `linux-shrink-409`, `hawkeye`, `hpolicy`, ...),
//! reporting per run what each recovered, how fast, and what it cost the workload.
//!
//! Owns the measures and the observations; the runs are [`zeroing::run_all`]'s, the
//! mechanisms the kernel model's (all three policies free memory through the one
//! de-duplication of zero-filled base pages, `MemoryOps::dedup_zero_subpages`).
//!
//! Definitions (`experiments/sysmon-h/README.md` repeats them):
//! - **Workload**: the run's first process (in file order) not named [`HOG`].
//! - **Onset of pressure**: the start of the earliest process named [`HOG`] in the run;
//!   without one, the start of the workload's last `insert` phase when it has two or
//!   more (a key-value server's P3). A run where neither happened (the server was killed
//!   before P3 was recorded) has none.
//! - **Memory recovered**: the kernel's count of zero-filled base pages freed from huge
//!   pages (`zero_subpages_recovered`) x 4 KiB, over the whole run and after the onset.
//! - **Time to recover**: from the onset to the first time-series sample at which the
//!   memory recovered since the onset reaches [`RECOVERED_SHARE`] of all it recovers
//!   after the onset; none when that is under one huge page's worth. Its resolution is
//!   the file's `sim.sample_interval_ms`.
//! - **MMU overhead** before / after the onset: the workload's per-sample MMU overhead
//!   (walk cycles over cycles) averaged over the samples before / after the onset,
//!   weighted by the references each sample made.
//! - **Throughput** before / after: a key-value server's first and last insert phases
//!   (requests a second); another workload's references a second over the
//!   [`BEFORE_NS`] before the onset and from the onset to its end.

use super::zeroing::{self, Run};
use super::{table, Claim, Progress, Report, Reproduction};
use crate::plot::{Figure, Series};
use hugemm_sim::{ProcessSummary, TimeseriesRow};
use serde::Serialize;
use serde_json::json;

/// The name of the processes that make the pressure (their start is its onset).
pub const HOG: &str = "hog";

/// Share of the memory recovered after the onset that marks the recovery done.
pub const RECOVERED_SHARE: f64 = 0.9;

/// The window before the onset over which a workload's references a second are taken.
pub const BEFORE_NS: u64 = 30_000_000_000;

/// Base pages in a huge page: less recovered than this is no recovery.
const HUGE_PAGE_FRAMES: u64 = 512;

/// What one run (a set under a variant) shows.
#[derive(Clone, Debug, Serialize)]
pub struct Outcome {
    /// The set, its names joined by `+` (empty: every process).
    pub set: String,
    /// The variant.
    pub variant: String,
    /// The workload's name.
    pub workload: String,
    /// Whether the workload is a key-value server.
    pub server: bool,
    /// Processes killed for want of memory.
    pub oom: Vec<String>,
    /// The onset of pressure (s), if there was one.
    pub onset_s: Option<f64>,
    /// Bytes of zero-filled base pages freed from huge pages over the run.
    pub recovered_bytes: u64,
    /// Of those, after the onset.
    pub recovered_after_onset_bytes: Option<u64>,
    /// Huge pages split to free them.
    pub recovery_splits: u64,
    /// Time spent scanning huge pages for zero-filled base pages and splitting them (ns).
    pub recovery_cpu_ns: u64,
    /// From the onset to the recovery (s).
    pub time_to_recover_s: Option<f64>,
    /// The workload's huge pages at the onset.
    pub huge_pages_onset: Option<u64>,
    /// The workload's huge pages at its end.
    pub huge_pages_end: u64,
    /// The workload's MMU overhead before the onset (0..1).
    pub mmu_before: Option<f64>,
    /// After it.
    pub mmu_after: Option<f64>,
    /// The workload's throughput before the onset.
    pub throughput_before: Option<f64>,
    /// After it.
    pub throughput_after: Option<f64>,
    /// The throughput's unit.
    pub throughput_unit: &'static str,
    /// The workload's highest RSS in the time series (bytes).
    pub peak_rss_bytes: u64,
    /// Its RSS at its end (at the kill if it was killed).
    pub rss_end_bytes: u64,
}

/// The reproduction: run every set under every variant, then measure and compare.
pub fn vs_hawkeye(r: &Reproduction, progress: Progress<'_>) -> anyhow::Result<Report> {
    let runs = zeroing::run_all(r, progress)?;
    let outcomes = outcomes(&runs);
    let mut figures = Vec::new();
    for set in sets(&runs) {
        let of_set: Vec<&Run> = runs.iter().filter(|x| x.set.join("+") == set).collect();
        figures.push(rss_figure(&set, &of_set));
    }
    Ok(Report {
        title: "Beyond the papers: H-Policy's split of cold huge pages vs HawkEye's bloat \
                recovery and Linux 6.12's THP shrinker, on a Redis-like insert / delete / \
                insert server and a TLB-sensitive lookup under memory pressure"
            .into(),
        tables: vec![
            memory_table(&outcomes),
            workload_table(&outcomes),
            LEGEND.into(),
        ],
        claims: observations(&outcomes),
        figures,
        data: json!({ "outcomes": outcomes }),
        runs: zeroing::variant_runs(runs),
        ..Default::default()
    })
}

/// What the table's columns mean, printed under it.
const LEGEND: &str = "\
onset: a `hog` process's start, else the server's last insert phase (P3).\n\
recovered: zero-filled base pages freed from huge pages, whole run (after the onset).\n\
time to recover: from the onset to the first sample with 90% of what is recovered\n  \
after it, rounded up to whole seconds.\n\
recovery CPU: scanning huge pages for zero-filled base pages and splitting them.\n\
huge pages, MMU %, throughput, RSS: the workload's (not the hog's), at / before -> after\n  \
the onset; a server's throughput is P1's -> P3's inserts/s, another's M references/s\n  \
over the 30 s before -> from the onset to its end.\n";

/// The sets of the runs, in run order, each named by its processes joined by `+`.
fn sets(runs: &[Run]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for run in runs {
        let s = run.set.join("+");
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

fn is_hog(p: &ProcessSummary) -> bool {
    super::hawkeye::member(&p.name, HOG)
}

/// The run's measures, if it has a workload.
fn outcome(run: &Run) -> Option<Outcome> {
    let w = run.processes.iter().find(|p| !is_hog(p))?;
    let onset = onset_ns(run, w);
    let rows = process_rows(run, &w.name);
    let k = &run.result.summary.system.kernel;
    let recovered = recovered_at(run, u64::MAX);
    let after = onset.map(|t| recovered - recovered_at(run, t));
    let (throughput_before, throughput_after, throughput_unit) = throughput(w, &rows, onset);
    let (mmu_before, mmu_after) = match onset {
        Some(t) => (
            mmu(&rows, |r| r.time_ns <= t),
            mmu(&rows, |r| r.time_ns > t),
        ),
        None => (mmu(&rows, |_| true), None),
    };
    Some(Outcome {
        set: run.set.join("+"),
        variant: run.variant.clone(),
        workload: w.name.clone(),
        server: !w.kv.is_empty(),
        oom: run
            .processes
            .iter()
            .filter(|p| p.oom)
            .map(|p| p.name.clone())
            .collect(),
        onset_s: onset.map(secs),
        recovered_bytes: recovered * 4096,
        recovered_after_onset_bytes: after.map(|a| a * 4096),
        recovery_splits: k.zero_dedup_splits,
        recovery_cpu_ns: k.zero_scan_time.0,
        time_to_recover_s: onset.and_then(|t| time_to_recover(run, t)),
        huge_pages_onset: onset.and_then(|t| at_or_before(&rows, t)?.huge_pages),
        huge_pages_end: w.huge_pages_end,
        mmu_before,
        mmu_after,
        throughput_before,
        throughput_after,
        throughput_unit,
        peak_rss_bytes: rows.iter().filter_map(|r| r.rss_bytes).max().unwrap_or(0),
        rss_end_bytes: w.rss_bytes_end,
    })
}

/// The measures of every run that has a workload, in run order.
pub fn outcomes(runs: &[Run]) -> Vec<Outcome> {
    runs.iter().filter_map(outcome).collect()
}

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// The onset of pressure (ns; see the module doc).
fn onset_ns(run: &Run, workload: &ProcessSummary) -> Option<u64> {
    let hog = run
        .processes
        .iter()
        .filter(|p| is_hog(p))
        .map(|p| p.start_ns)
        .min();
    let inserts: Vec<u64> = workload
        .kv
        .iter()
        .filter(|k| k.op == "insert")
        .map(|k| k.start_ns)
        .collect();
    hog.or_else(|| (inserts.len() >= 2).then(|| inserts[inserts.len() - 1]))
}

/// The time-series rows of process `name`, in time order.
fn process_rows<'a>(run: &'a Run, name: &str) -> Vec<&'a TimeseriesRow> {
    run.result
        .timeseries
        .iter()
        .filter(|r| r.process == name)
        .collect()
}

/// The last of `rows` at or before `t` (ns).
fn at_or_before<'a>(rows: &[&'a TimeseriesRow], t: u64) -> Option<&'a TimeseriesRow> {
    rows.iter().rev().find(|r| r.time_ns <= t).copied()
}

/// Zero-filled base pages recovered by the last system sample at or before `t` (ns).
fn recovered_at(run: &Run, t: u64) -> u64 {
    run.result
        .timeseries
        .iter()
        .rev()
        .find(|r| r.process == "system" && r.time_ns <= t)
        .and_then(|r| r.zero_subpages_recovered)
        .unwrap_or(0)
}

/// From `onset` (ns) to the sample at which [`RECOVERED_SHARE`] of what is recovered
/// after it was (s); none if less than a huge page's worth is.
fn time_to_recover(run: &Run, onset: u64) -> Option<f64> {
    let base = recovered_at(run, onset);
    let total = recovered_at(run, u64::MAX) - base;
    if total < HUGE_PAGE_FRAMES {
        return None;
    }
    let goal = base as f64 + RECOVERED_SHARE * total as f64;
    run.result
        .timeseries
        .iter()
        .filter(|r| r.process == "system" && r.time_ns >= onset)
        .find(|r| r.zero_subpages_recovered.unwrap_or(0) as f64 >= goal)
        .map(|r| secs(r.time_ns - onset))
}

/// The reference-weighted mean MMU overhead of the samples `rows` that `keep` keeps.
fn mmu(rows: &[&TimeseriesRow], keep: impl Fn(&TimeseriesRow) -> bool) -> Option<f64> {
    let (mut sum, mut weight, mut prev) = (0.0, 0.0, 0u64);
    for r in rows {
        let refs = r.references.unwrap_or(prev);
        let made = refs.saturating_sub(prev) as f64;
        prev = refs;
        if keep(r) {
            sum += made * r.mmu_overhead.unwrap_or(0.0);
            weight += made;
        }
    }
    (weight > 0.0).then(|| sum / weight)
}

/// The workload's throughput before and after the onset, and its unit.
fn throughput(
    w: &ProcessSummary,
    rows: &[&TimeseriesRow],
    onset: Option<u64>,
) -> (Option<f64>, Option<f64>, &'static str) {
    if !w.kv.is_empty() {
        let inserts: Vec<f64> =
            w.kv.iter()
                .filter(|k| k.op == "insert")
                .map(|k| k.requests_per_s)
                .collect();
        let after = (inserts.len() >= 2).then(|| inserts[inserts.len() - 1]);
        return (inserts.first().copied(), after, "inserts/s");
    }
    let Some(t) = onset else {
        let all = w.references as f64 / secs(w.runtime_ns.max(1));
        return (Some(all / 1e6), None, "M refs/s");
    };
    let refs_at = |t: u64| at_or_before(rows, t).and_then(|r| r.references);
    let from = t.saturating_sub(BEFORE_NS).max(w.start_ns);
    let before = refs_at(t)
        .zip(refs_at(from))
        .filter(|_| t > from)
        .map(|(b, a)| b.saturating_sub(a) as f64 / secs(t - from) / 1e6);
    let after = refs_at(t)
        .filter(|_| w.end_ns > t)
        .map(|b| w.references.saturating_sub(b) as f64 / secs(w.end_ns - t) / 1e6);
    (before, after, "M refs/s")
}

fn gib(bytes: u64) -> String {
    format!("{:.2}", bytes as f64 / (1u64 << 30) as f64)
}

fn mib(bytes: u64) -> String {
    format!("{:.0}", bytes as f64 / (1u64 << 20) as f64)
}

fn opt(x: Option<f64>, f: impl Fn(f64) -> String) -> String {
    x.map_or("-".into(), f)
}

/// "a -> b", either side `-` when missing.
fn arrow(a: Option<f64>, b: Option<f64>, f: impl Fn(f64) -> String) -> String {
    format!("{} -> {}", opt(a, &f), opt(b, &f))
}

/// The memory table: a row per run, what its policy recovered.
fn memory_table(outcomes: &[Outcome]) -> String {
    let rows: Vec<Vec<String>> = outcomes
        .iter()
        .map(|o| {
            vec![
                o.set.clone(),
                o.variant.clone(),
                match o.oom.is_empty() {
                    true => "no".into(),
                    false => o.oom.join(", "),
                },
                opt(o.onset_s, |x| format!("{x:.0}")),
                format!(
                    "{} ({})",
                    mib(o.recovered_bytes),
                    o.recovered_after_onset_bytes.map_or("-".into(), mib)
                ),
                o.recovery_splits.to_string(),
                opt(o.time_to_recover_s, |x| format!("{}", x.ceil())),
                format!("{:.1}", o.recovery_cpu_ns as f64 / 1e6),
            ]
        })
        .collect();
    table(
        &[
            "set",
            "variant",
            "out of memory",
            "onset s",
            "recovered MiB (after onset)",
            "huge pages split",
            "time to recover s",
            "recovery CPU ms",
        ],
        &rows,
    )
}

/// The workload table: a row per run, what its policy did to the workload.
fn workload_table(outcomes: &[Outcome]) -> String {
    let rows: Vec<Vec<String>> = outcomes.iter().map(workload_row).collect();
    table(
        &[
            "set",
            "variant",
            "huge pages (onset -> end)",
            "MMU % (before -> after)",
            "throughput (before -> after)",
            "peak / end RSS GiB",
        ],
        &rows,
    )
}

fn workload_row(o: &Outcome) -> Vec<String> {
    let pct = |x: f64| format!("{:.2}", x * 100.0);
    let rate = |x: f64| match o.server {
        true => format!("{x:.0}"),
        false => format!("{x:.2}"),
    };
    vec![
        o.set.clone(),
        o.variant.clone(),
        format!(
            "{} -> {}",
            o.huge_pages_onset.map_or("-".into(), |h| h.to_string()),
            o.huge_pages_end
        ),
        arrow(o.mmu_before, o.mmu_after, pct),
        format!(
            "{} {}",
            arrow(o.throughput_before, o.throughput_after, rate),
            o.throughput_unit
        ),
        format!("{} / {}", gib(o.peak_rss_bytes), gib(o.rss_end_bytes)),
    ]
}

/// The workload's RSS over time under each variant of one set.
fn rss_figure(set: &str, runs: &[&Run]) -> Figure {
    let series = runs
        .iter()
        .filter_map(|run| {
            let w = run.processes.iter().find(|p| !is_hog(p))?;
            Some(Series {
                name: run.variant.clone(),
                points: zeroing::rss_series(run, &w.name)
                    .iter()
                    .map(|x| (x.0, x.1 as f64 / (1u64 << 30) as f64))
                    .collect(),
            })
        })
        .collect();
    let id = if set.is_empty() { "all" } else { set };
    Figure::lines(
        &format!("vs-rss-{}", id.replace('+', "-")),
        &format!("{id}: the workload's RSS over time"),
        "time (s)",
        "RSS (GiB)",
        series,
    )
}

/// The outcome of `variant` in the first set whose workload is a key-value server
/// (`server`) or is not.
fn find<'a>(outcomes: &'a [Outcome], server: bool, variant: &str) -> Option<&'a Outcome> {
    outcomes
        .iter()
        .find(|o| o.variant == variant && o.server == server)
}

/// What the comparison shows, each judged on the numbers (none is the paper's claim).
pub fn observations(outcomes: &[Outcome]) -> Vec<Claim> {
    let mut claims = server_observations(outcomes);
    claims.extend(lookup_observations(outcomes));
    claims
}

/// The "paper" column of every observation.
const NOT_IN_PAPER: &str = "beyond the papers";

fn said_oom(o: &Outcome) -> String {
    match o.oom.is_empty() {
        true => "completes".into(),
        false => format!("{} out of memory", o.oom.join(", ")),
    }
}

fn server_observations(outcomes: &[Outcome]) -> Vec<Claim> {
    let mut claims = Vec::new();
    let (linux, hp, he) = (
        find(outcomes, true, "linux-2m"),
        find(outcomes, true, "hpolicy"),
        find(outcomes, true, "hawkeye"),
    );
    if let (Some(l), Some(h)) = (linux, hp) {
        claims.push(Claim::new(
            "server: H-Policy completes P3, Linux with 2 MB pages runs out of memory",
            NOT_IN_PAPER,
            format!("linux-2m: {}; hpolicy: {}", said_oom(l), said_oom(h)),
            Some(!l.oom.is_empty() && h.oom.is_empty()),
        ));
    }
    if let Some(h) = hp {
        claims.push(Claim::new(
            "server: H-Policy recovers under 64 MiB and completes: nothing refills the \
             deletions' holes",
            NOT_IN_PAPER,
            format!("{} MiB recovered", mib(h.recovered_bytes)),
            Some(h.oom.is_empty() && h.recovered_bytes < 64 << 20),
        ));
    }
    if let Some(e) = he {
        claims.push(Claim::new(
            "server: HawkEye completes P3 by recovering bloat",
            NOT_IN_PAPER,
            format!("{}, {} MiB recovered", said_oom(e), mib(e.recovered_bytes)),
            Some(e.oom.is_empty() && e.recovered_bytes >= 64 << 20),
        ));
    }
    claims
}

/// The MMU overhead (percentage points) a recovery may add and still count as leaving
/// the workload's huge pages alone.
const MMU_KEPT: f64 = 0.01;

/// The throughput a workload may lose and still count as kept (2%).
const KEPT: f64 = 0.02;

/// The loss that counts as a cost (5%).
const LOST: f64 = 0.05;

fn lookup_observations(outcomes: &[Outcome]) -> Vec<Claim> {
    let mut claims = Vec::new();
    let (hp, he) = (
        find(outcomes, false, "hpolicy"),
        find(outcomes, false, "hawkeye"),
    );
    let pct = |x: Option<f64>| opt(x, |m| format!("{:.1}%", m * 100.0));
    if let (Some(h), Some(e)) = (hp, he) {
        let (hb, ha, ea) = (h.mmu_before, h.mmu_after, e.mmu_after);
        claims.push(Claim::new(
            "lookup: MMU overhead kept by H-Policy (+1 point at most), raised by HawkEye \
             (over twice H-Policy's + 1 point)",
            NOT_IN_PAPER,
            format!(
                "hpolicy {} -> {}, hawkeye {} -> {}",
                pct(hb),
                pct(ha),
                pct(e.mmu_before),
                pct(ea)
            ),
            match (hb, ha, ea) {
                (Some(hb), Some(ha), Some(ea)) => {
                    Some(ha <= hb + MMU_KEPT && ea > 2.0 * ha + MMU_KEPT)
                }
                _ => None,
            },
        ));
        claims.push(Claim::new(
            "lookup: H-Policy recovers less than HawkEye, and enough for the hog",
            NOT_IN_PAPER,
            format!(
                "hpolicy {} MiB ({}), hawkeye {} MiB ({})",
                mib(h.recovered_bytes),
                said_oom(h),
                mib(e.recovered_bytes),
                said_oom(e)
            ),
            Some(h.recovered_bytes < e.recovered_bytes && h.oom.is_empty()),
        ));
    }
    if let (Some(h), Some(e)) = (hp, he) {
        let kept = |o: &Outcome| {
            o.throughput_after
                .zip(o.throughput_before)
                .map(|(a, b)| a / b)
        };
        let (hk, ek) = (kept(h), kept(e));
        claims.push(Claim::new(
            "lookup: throughput kept by H-Policy (within 2%), cut by HawkEye (over 5%)",
            NOT_IN_PAPER,
            format!(
                "after / before: hpolicy {}, hawkeye {}",
                opt(hk, |x| format!("{x:.3}")),
                opt(ek, |x| format!("{x:.3}"))
            ),
            hk.zip(ek).map(|(h, e)| h >= 1.0 - KEPT && e < 1.0 - LOST),
        ));
    }
    if let Some(l) = find(outcomes, false, "linux-2m") {
        claims.push(Claim::new(
            "lookup: without recovery (linux-2m) memory runs out",
            NOT_IN_PAPER,
            said_oom(l),
            Some(!l.oom.is_empty()),
        ));
    }
    claims
}
