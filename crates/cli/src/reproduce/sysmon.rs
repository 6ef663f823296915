//! SysMon-H / H-Policy (the paper in `../shared/papers/sysmon-h-and-h-policy.txt`),
//! section 3: what the monitor sees and what it costs.
//!
//! - `sysmon-fig1` (Figure 1): each workload of the file (a `[reproduce] sets` entry)
//!   runs alone under `hpolicy` with its monitor, and the sampled TLB misses per huge page
//!   of one 5 s window are written as `fig1-<workload>.csv` and drawn over the address
//!   space. The window is the last one that ended while the workload ran: the file sets
//!   the monitor's period so that it falls after the workload's load phase.
//! - `sysmon-overhead` (section 3.3): each workload runs under three monitors
//!   ([`OVERHEAD_VARIANTS`]): SysMon-H (`tlb-misses`), the prior approach of scanning
//!   every huge page's accessed bit 200 times a window (`accessed-bits`), and SysMon-H
//!   with phase two run on every huge page (`check-all`, as approaches that do not know
//!   which pages are cold must). One round of the monitor after the load is measured:
//!   the engine is stopped at the round's start and after its last check.
//!
//! **Overhead**, as this module measures it: a monitor's CPU time over one round divided
//! by the window's length (5 s), i.e. the share of one CPU the monitoring takes while it
//! watches a process. TLB sampling's CPU is the samples' cost, charged to the sampled
//! process; the scans' and checks' is the `sysmon` daemon's. The paper does not say how
//! it measured its percentages; this reading is the one its numbers can be compared
//! with across approaches whose cost lands in different places.
//!
//! The paper gives no numbers for Figure 1; its claims are about shape, checked here.

use super::{engine, par_map, table, Claim, Progress, Report, Reproduction, Value, VariantRun};
use crate::plot::{Figure, Series};
use hugemm_hw::Nanos;
use hugemm_policy::{HPolicyConfig, PolicyConfig, SysMonSource};
use hugemm_sim::{Experiment, PhaseTwo, RunResult, TlbWindow};
use serde_json::json;

/// Figure 1's only variant: the file's `[policy.hpolicy]`.
pub const FIG1_VARIANTS: &[&str] = &["tlb-misses"];

/// The monitors `sysmon-overhead` compares.
pub const OVERHEAD_VARIANTS: &[&str] = &["tlb-misses", "accessed-bits", "check-all"];

/// Scans of every huge page per window in the accessed-bit approach: "employing 200
/// loops during a sampling window" (section 3.3).
const PAPER_SCANS: u32 = 200;

/// Bytes of a huge page.
const HUGE: u64 = 2 << 20;

/// `hpolicy`'s configuration for `variant`, from the file's.
fn hpolicy(base: &HPolicyConfig, variant: &str) -> HPolicyConfig {
    let mut cfg = *base;
    match variant {
        "accessed-bits" => {
            if !matches!(cfg.sysmon.source, SysMonSource::AccessedBits { .. }) {
                cfg.sysmon.source = SysMonSource::AccessedBits { scans: PAPER_SCANS };
            }
        }
        "check-all" => cfg.sysmon.cold_misses = f64::INFINITY,
        _ => cfg.sysmon.source = SysMonSource::TlbMisses,
    }
    cfg
}

/// The file's experiment with only `set`'s processes, under `variant`'s monitor.
fn experiment(r: &Reproduction, set: &[String], variant: &str) -> Experiment {
    let mut exp = r.experiment.clone();
    exp.processes
        .retain(|p| set.iter().any(|e| super::hawkeye::member(&p.name, e)));
    exp.policy = PolicyConfig::HPolicy(hpolicy(&r.policies.hpolicy, variant));
    exp
}

/// One workload's Figure 1: the huge pages of the window, from the lowest to the highest
/// that had a miss, as (offset from the lowest in MiB, misses).
#[derive(Clone, Debug)]
struct Heat {
    workload: String,
    window_end_s: f64,
    samples: f64,
    points: Vec<(f64, f64)>,
    /// Phase two after the window, if it finished while the workload ran.
    phase_two: Option<PhaseTwo>,
}

impl Heat {
    fn of(workload: &str, w: &TlbWindow) -> Heat {
        let mut per: std::collections::BTreeMap<u64, f64> = Default::default();
        for &(region, n) in &w.regions {
            *per.entry(region & !(HUGE - 1)).or_default() += n;
        }
        let lo = per.keys().next().copied().unwrap_or(0);
        let hi = per.keys().next_back().copied().unwrap_or(0);
        let points = (lo..=hi)
            .step_by(HUGE as usize)
            .map(|r| (((r - lo) >> 20) as f64, per.get(&r).copied().unwrap_or(0.0)))
            .collect();
        Heat {
            workload: workload.into(),
            window_end_s: w.time_ns as f64 / 1e9,
            samples: w.samples,
            points,
            phase_two: w.phase_two,
        }
    }

    /// Share of the cold huge pages that phase two found very hot.
    fn very_hot_share(&self) -> Option<f64> {
        self.phase_two
            .filter(|p| p.cold > 0)
            .map(|p| p.very_hot as f64 / p.cold as f64)
    }

    /// Bytes from the lowest huge page with a miss to the end of the highest.
    fn span_mib(&self) -> f64 {
        self.points.len() as f64 * 2.0
    }

    fn total(&self) -> f64 {
        self.points.iter().map(|p| p.1).sum()
    }

    /// Share of the misses in the low half of the range.
    fn low_half_share(&self) -> f64 {
        let half = self.points.len() / 2;
        self.points[..half].iter().map(|p| p.1).sum::<f64>() / self.total().max(1e-12)
    }

    /// Coefficient of variation of the misses per huge page.
    fn cv(&self) -> f64 {
        let n = self.points.len().max(1) as f64;
        let mean = self.total() / n;
        let var = self
            .points
            .iter()
            .map(|p| (p.1 - mean).powi(2))
            .sum::<f64>()
            / n;
        var.sqrt() / mean.max(1e-12)
    }

    /// Share of the huge pages in the range with at least one miss.
    fn covered(&self) -> f64 {
        let hit = self.points.iter().filter(|p| p.1 > 0.0).count();
        hit as f64 / self.points.len().max(1) as f64
    }

    fn csv(&self) -> String {
        let mut out = String::from("offset_mib,misses\n");
        for (x, y) in &self.points {
            out.push_str(&format!("{x},{y:.3}\n"));
        }
        out
    }
}

/// The paper's address range of each Figure 1 workload (MiB), by model name.
fn paper_span_mib(workload: &str) -> Option<f64> {
    use hugemm_workload::apps::sysmon_h::*;
    let b = match workload {
        "memcached" => MEMCACHED_PAPER_BYTES,
        "redis-uneven" => REDIS_UNEVEN_PAPER_BYTES,
        "mcf" => MCF_PAPER_BYTES,
        _ => return None,
    };
    Some((b >> 20) as f64)
}

/// Figure 1.
pub fn figure1(r: &Reproduction, progress: Progress<'_>) -> anyhow::Result<Report> {
    let results = par_map(&r.sets, |set| {
        let name = set.join("+");
        let exp = experiment(r, set, "tlb-misses");
        let mut e = engine(progress, &format!("{name} / tlb-misses"), exp)?;
        e.run_until_idle()?;
        Ok((name, e.results()))
    })?;
    let mut heats = Vec::new();
    for (name, result) in &results {
        let w = result.tlb_windows.last().ok_or_else(|| {
            anyhow::anyhow!("{name}: no TLB-miss window ended while it ran: run it longer than the monitor's window")
        })?;
        heats.push(Heat::of(name, w));
    }
    let rows: Vec<Vec<String>> = heats
        .iter()
        .map(|h| {
            vec![
                h.workload.clone(),
                format!("{:.1}", h.window_end_s),
                format!("{:.0}", h.samples),
                format!("{:.0}", h.span_mib()),
                paper_span_mib(&h.workload).map_or("-".into(), |m| format!("{m:.0}")),
                format!("{:.2}", h.low_half_share()),
                format!("{:.2}", h.cv()),
                format!("{:.2}", h.covered()),
                h.phase_two.map_or("-".into(), |p| p.cold.to_string()),
                h.phase_two.map_or("-".into(), |p| p.very_hot.to_string()),
            ]
        })
        .collect();
    let text = table(
        &[
            "workload",
            "window end s",
            "samples",
            "range MiB",
            "paper MiB",
            "low-half share",
            "CV",
            "covered",
            "cold",
            "very hot",
        ],
        &rows,
    );
    let values = heats
        .iter()
        .filter_map(|h| {
            paper_span_mib(&h.workload).map(|p| {
                Value::new(
                    "Figure 1",
                    &h.workload,
                    "address range with TLB misses (MiB)",
                    p,
                    Some(h.span_mib()),
                )
            })
        })
        .collect();
    let figures = heats
        .iter()
        .map(|h| {
            Figure::lines(
                &format!("fig1-{}", h.workload),
                &format!(
                    "{}: TLB misses per huge page, 5 s window ending at {:.0} s",
                    h.workload, h.window_end_s
                ),
                "offset in the address range (MiB)",
                "sampled TLB misses",
                vec![Series {
                    name: h.workload.clone(),
                    points: h.points.clone(),
                }],
            )
        })
        .collect();
    let files = heats
        .iter()
        .map(|h| (format!("fig1-{}.csv", h.workload), h.csv()))
        .collect();
    let data = json!(heats
        .iter()
        .map(|h| json!({
            "workload": h.workload,
            "window_end_s": h.window_end_s,
            "samples": h.samples,
            "range_mib": h.span_mib(),
            "low_half_share": h.low_half_share(),
            "cv": h.cv(),
            "covered": h.covered(),
            "phase_two": h.phase_two,
        }))
        .collect::<Vec<_>>());
    Ok(Report {
        title: "SysMon-H Figure 1: TLB misses per huge page in a 5 s window".into(),
        tables: vec![text],
        values,
        claims: claims_figure1(&heats),
        figures,
        files,
        runs: results
            .into_iter()
            .map(|(name, res)| VariantRun::new(&[&name, "tlb-misses"], res))
            .collect(),
        data,
        ..Report::default()
    })
}

fn claims_figure1(heats: &[Heat]) -> Vec<Claim> {
    let find = |w: &str| heats.iter().find(|h| h.workload == w);
    let mut claims = Vec::new();
    let claim = |c: &str, p: &str, w: &str, f: &dyn Fn(&Heat) -> (String, bool)| match find(w) {
        Some(h) => {
            let (text, holds) = f(h);
            Claim::new(c, p, text, Some(holds))
        }
        None => Claim::unjudged(c, p, &format!("{w} was not run")),
    };
    claims.push(claim(
        "Memcached: most hot huge pages are in the low half of its address space",
        "most of the misses in the left half of 4 GB",
        "memcached",
        &|h| {
            let s = h.low_half_share();
            (
                format!("{:.0}% of the misses in the low half", 100.0 * s),
                s > 0.5,
            )
        },
    ));
    claims.push(claim(
        "Redis: the hot huge pages are unevenly spread over its address space",
        "uneven over 22 GB",
        "redis-uneven",
        &|h| {
            let cv = h.cv();
            (
                format!("misses per huge page vary with CV {cv:.2} (uneven: > 1)"),
                cv > 1.0,
            )
        },
    ));
    claims.push(claim(
        "mcf_r: its accesses lie in a 350 MB range",
        "350 MB",
        "mcf",
        &|h| {
            let span = h.span_mib();
            let cov = h.covered();
            (
                format!(
                    "misses over {span:.0} MiB, {:.0}% of its huge pages with one (holds: within 350 MB + one huge page, over 80% covered)",
                    100.0 * cov
                ),
                span <= 352.0 && cov > 0.8,
            )
        },
    ));
    let c = "Few of the huge pages classified cold are very hot (phase two)";
    let p = "below 0.44% of the cold pages";
    let shares: Vec<(String, f64)> = heats
        .iter()
        .filter_map(|h| h.very_hot_share().map(|s| (h.workload.clone(), s)))
        .collect();
    claims.push(match shares.iter().map(|s| s.1).reduce(f64::max) {
        Some(worst) => Claim::new(
            c,
            p,
            format!(
                "{} (holds: every workload below 1%)",
                shares
                    .iter()
                    .map(|(w, s)| format!("{w} {:.2}%", 100.0 * s))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Some(worst < 0.01),
        ),
        None => Claim::unjudged(c, p, "no phase two finished within a run"),
    });
    claims.push(claim(
        "deepsjeng_r: most pages are accessed without a significant difference",
        "flat",
        "deepsjeng",
        &|h| {
            let cv = h.cv();
            (
                format!("misses per huge page vary with CV {cv:.2} (flat: < 0.25)"),
                cv < 0.25,
            )
        },
    ));
    claims
}

/// One monitor round of one workload under one monitor.
#[derive(Clone, Debug)]
struct Round {
    workload: String,
    variant: String,
    huge_pages: u64,
    /// CPU time of TLB sampling in the round (ns), charged to the process.
    sampling_ns: f64,
    /// CPU time of the `sysmon` daemon in the round (ns): scans or checks.
    daemon_ns: f64,
    /// Page walks in the window (sampled monitors only).
    walks: f64,
    window_s: f64,
}

impl Round {
    /// Phase one's overhead (% of a CPU over the window).
    fn phase_one_pct(&self) -> f64 {
        let ns = match self.variant.as_str() {
            "accessed-bits" => self.daemon_ns,
            _ => self.sampling_ns,
        };
        100.0 * ns / (self.window_s * 1e9)
    }
}

/// Run `set` under `variant`, measuring the monitor's second round (the first starts
/// with the run, during the load).
fn round(
    r: &Reproduction,
    set: &[String],
    variant: &str,
    progress: Progress<'_>,
) -> anyhow::Result<(Round, RunResult)> {
    let name = set.join("+");
    let exp = experiment(r, set, variant);
    let cfg = hpolicy(&r.policies.hpolicy, variant).sysmon;
    let mut e = engine(progress, &format!("{name} / {variant}"), exp)?;
    e.advance(cfg.period)?;
    let before = e.daemon_cpu_ns("sysmon");
    let checks = Nanos(cfg.check_interval.0 * u64::from(cfg.checks));
    e.advance(Nanos(cfg.window.0 + checks.0 + 1_000_000))?;
    let daemon = e.daemon_cpu_ns("sysmon") - before;
    if e.idle() {
        anyhow::bail!("{name} ended before the monitor's second round did: run it longer");
    }
    let result = e.results();
    let start_ns = cfg.period.0;
    let windows: Vec<&TlbWindow> = result
        .tlb_windows
        .iter()
        .filter(|w| w.time_ns > start_ns)
        .collect();
    let cost = cfg.sampling.cost.0 as f64;
    // From +0.0: a float sum of nothing is -0.0.
    let sampling_ns = windows.iter().fold(0.0, |t, w| t + w.samples * cost);
    let walks = windows.iter().fold(0.0, |t, w| t + w.walks);
    let huge_pages = result
        .summary
        .processes
        .iter()
        .map(|p| p.huge_pages_end)
        .sum();
    Ok((
        Round {
            workload: name,
            variant: variant.into(),
            huge_pages,
            sampling_ns,
            daemon_ns: daemon as f64,
            walks,
            window_s: cfg.window.0 as f64 / 1e9,
        },
        result,
    ))
}

/// The paper's phase-one overheads (%): (workload, TLB sampling, accessed bits). Its
/// Redis figure for TLB sampling is an upper bound ("below 0.1%").
const PAPER_OVERHEAD: [(&str, f64, f64); 2] = [("mcf", 0.14, 0.19), ("redis-uneven", 0.1, 2.3)];

/// Step 2: SysMon-H's phase two over checking every huge page ("around 1/20").
const PAPER_STEP2: f64 = 1.0 / 20.0;

/// Section 3.3's overhead comparison.
pub fn overhead(r: &Reproduction, progress: Progress<'_>) -> anyhow::Result<Report> {
    let jobs: Vec<(Vec<String>, String)> = r
        .sets
        .iter()
        .flat_map(|s| r.variants.iter().map(move |v| (s.clone(), v.clone())))
        .collect();
    let done = par_map(&jobs, |(set, v)| round(r, set, v, progress))?;
    let find = |w: &str, v: &str| {
        done.iter()
            .map(|d| &d.0)
            .find(|x| x.workload == w && x.variant == v)
    };
    let mut rows = Vec::new();
    for (rd, _) in &done {
        rows.push(vec![
            rd.workload.clone(),
            rd.variant.clone(),
            rd.huge_pages.to_string(),
            match rd.variant.as_str() {
                "accessed-bits" => "-".into(),
                _ => format!("{:.0}", rd.walks / rd.window_s),
            },
            format!("{:.3}", rd.sampling_ns / 1e6),
            format!("{:.3}", rd.daemon_ns / 1e6),
            format!("{:.4}", rd.phase_one_pct()),
        ]);
    }
    let text = table(
        &[
            "workload",
            "monitor",
            "huge pages",
            "walks/s",
            "sampling ms",
            "scans/checks ms",
            "phase one %",
        ],
        &rows,
    );
    let mut values = Vec::new();
    let mut claims = Vec::new();
    for (w, tlb_paper, ab_paper) in PAPER_OVERHEAD {
        let tlb = find(w, "tlb-misses").map(Round::phase_one_pct);
        let ab = find(w, "accessed-bits").map(Round::phase_one_pct);
        values.push(Value::new(
            "section 3.3 step 1",
            w,
            "TLB-miss sampling overhead (%)",
            tlb_paper,
            tlb,
        ));
        values.push(Value::new(
            "section 3.3 step 1",
            w,
            "accessed-bit scanning overhead (%)",
            ab_paper,
            ab,
        ));
        let c = format!("{w}: sampling TLB misses costs less than scanning accessed bits");
        let p = format!("{tlb_paper}% vs {ab_paper}%");
        claims.push(match (tlb, ab) {
            (Some(t), Some(a)) => Claim::new(&c, &p, format!("{t:.4}% vs {a:.4}%"), Some(t < a)),
            _ => Claim::unjudged(&c, &p, "a monitor was not run"),
        });
    }
    if let Some(t) = find("redis-uneven", "tlb-misses") {
        let pct = t.phase_one_pct();
        claims.push(Claim::new(
            "Redis (22 GB): TLB-miss sampling costs below 0.1%",
            "below 0.1%",
            format!("{pct:.4}%"),
            Some(pct < 0.1),
        ));
    }
    let mut step2_rows = Vec::new();
    for w in r.sets.iter().map(|s| s.join("+")) {
        let (Some(t), Some(all)) = (find(&w, "tlb-misses"), find(&w, "check-all")) else {
            continue;
        };
        let ratio = t.daemon_ns / all.daemon_ns.max(1e-9);
        step2_rows.push(vec![
            w.clone(),
            format!("{:.3}", t.daemon_ns / 1e6),
            format!("{:.3}", all.daemon_ns / 1e6),
            format!("{ratio:.3}"),
        ]);
        values.push(Value::new(
            "section 3.3 step 2",
            &w,
            "phase two's cost over checking every huge page",
            PAPER_STEP2,
            Some(ratio),
        ));
        claims.push(Claim::new(
            &format!("{w}: phase two cuts the checking cost to about 1/20"),
            "about 1/20",
            format!("{ratio:.3} (holds: at most 1/10)"),
            Some(ratio <= 0.1),
        ));
    }
    let text2 = table(
        &["workload", "phase two ms", "checking all ms", "ratio"],
        &step2_rows,
    );
    let data = json!(done
        .iter()
        .map(|(d, _)| json!({
            "workload": d.workload,
            "monitor": d.variant,
            "huge_pages": d.huge_pages,
            "sampling_ns": d.sampling_ns,
            "daemon_ns": d.daemon_ns,
            "walks": d.walks,
            "phase_one_pct": d.phase_one_pct(),
        }))
        .collect::<Vec<_>>());
    Ok(Report {
        title: "SysMon-H section 3.3: the monitor's overhead".into(),
        tables: vec![text, text2],
        values,
        claims,
        runs: done
            .into_iter()
            .map(|(d, res)| VariantRun::new(&[&d.workload, &d.variant], res))
            .collect(),
        data,
        ..Report::default()
    })
}
