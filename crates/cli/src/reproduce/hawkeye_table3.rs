//! HawkEye (Panwar et al., ASPLOS'19) Table 3: memory characteristics, address-translation
//! overheads and the speedup 2 MB pages give over 4 KB pages, for NPB workloads — the
//! paper's case that working-set size does not predict MMU overhead (§2.4).
//!
//! Each process of the experiment file runs twice on an unfragmented machine: under
//! Linux with THP `never` (4 KB pages only) and `always` (2 MB pages at fault), other
//! policy settings at their defaults. The paper's rows are matched to processes by name
//! (`cg.D`, `mg.D`, ...); other processes print beside no paper value.
//!
//! Columns, as the paper measured them and as computed here:
//! * RSS: resident memory at exit.
//! * WSS: the pages the work phase's pattern can reference (`Stream::reach_pages`): the
//!   model's layout, an input rather than a result.
//! * % TLB misses: page walks per memory reference at 4 KB (`dTLB-load-misses` counts
//!   walks on Haswell).
//! * % cycles: walk cycles over user cycles (Table 4's formula) at 4 KB and at 2 MB.
//! * speedup: references per user cycle at 2 MB over 4 KB (fault time excluded; the paper
//!   gives the run-time ratio, which also includes initialisation), and beside it the
//!   end-to-end ratio of references per second of run time.
//! * virtual speedup (when the file has a `[guest]` table and one `[[vm]]` running the
//!   processes): the same ratio for the processes run in that VM under a host model
//!   (`hugemm_sim::host`), with Linux THP `never` at both levels against `always` at both
//!   (the paper does not say how its VM was set up; 2 MB at both levels is what THP gives
//!   a KVM guest by default, and 4 KB at both is the baseline the native column uses).

use super::{engine, table, Claim, Progress, Report, Reproduction, Value, VariantRun};
use crate::plot::Figure;
use hugemm_policy::{LinuxConfig, PolicyConfig, ThpMode};
use hugemm_sim::{Experiment, HostedResult, HostedRun, ProcessSummary, RunResult};
use hugemm_workload::{Phase, ProcessSpec, Stream};
use serde::Serialize;
use serde_json::json;

/// One row of the paper's Table 3.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct PaperRow {
    /// Workload.
    pub workload: &'static str,
    /// Resident set size.
    pub rss: &'static str,
    /// Working-set size.
    pub wss: &'static str,
    /// % TLB misses at 4 KB.
    pub tlb_miss_pct: f64,
    /// % cycles in page walks at 4 KB.
    pub cycles_4k_pct: f64,
    /// % cycles in page walks at 2 MB.
    pub cycles_2m_pct: f64,
    /// Native speedup of 2 MB over 4 KB.
    pub speedup: f64,
    /// Speedup of 2 MB over 4 KB in a virtual machine.
    pub speedup_virtual: f64,
}

/// Table 3's rows for the workloads hugemm models.
pub const PAPER: [PaperRow; 2] = [
    PaperRow {
        workload: "mg.D",
        rss: "26 GB",
        wss: "24 GB",
        tlb_miss_pct: 0.03,
        cycles_4k_pct: 1.04,
        cycles_2m_pct: 0.04,
        speedup: 1.01,
        speedup_virtual: 1.11,
    },
    PaperRow {
        workload: "cg.D",
        rss: "16 GB",
        wss: "7-8 GB",
        tlb_miss_pct: 28.57,
        cycles_4k_pct: 39.0,
        cycles_2m_pct: 0.02,
        speedup: 1.62,
        speedup_virtual: 2.7,
    },
];

/// What hugemm measured for one process.
#[derive(Clone, Debug, Serialize)]
pub struct Measured {
    /// Process name.
    pub name: String,
    /// Resident bytes at exit (4 KB run).
    pub rss_bytes: u64,
    /// Bytes the work phase can reference.
    pub wss_bytes: u64,
    /// Page walks per reference at 4 KB (0..1).
    pub tlb_miss_4k: f64,
    /// Walk cycles over user cycles at 4 KB (0..1).
    pub mmu_4k: f64,
    /// Walk cycles over user cycles at 2 MB (0..1).
    pub mmu_2m: f64,
    /// References per user cycle at 2 MB over 4 KB.
    pub speedup: f64,
    /// References per second of run time at 2 MB over 4 KB (faults included).
    pub speedup_runtime: f64,
    /// In a VM (with a `[[vm]]`): walk cycles over user cycles at 4 KB at both levels.
    pub mmu_virtual_4k: Option<f64>,
    /// In a VM: walk cycles over user cycles at 2 MB at both levels.
    pub mmu_virtual_2m: Option<f64>,
    /// In a VM: references per user cycle at 2 MB over 4 KB, both levels.
    pub speedup_virtual: Option<f64>,
    /// The 4 KB run's summary.
    pub run_4k: ProcessSummary,
    /// The 2 MB run's summary.
    pub run_2m: ProcessSummary,
}

/// `r`'s experiment under Linux with THP `mode`.
fn with_thp(r: &Reproduction, mode: ThpMode) -> Experiment {
    let mut exp = r.experiment.clone();
    exp.policy = PolicyConfig::Linux(LinuxConfig {
        enabled: mode,
        ..LinuxConfig::default()
    });
    exp
}

/// Bytes the last access phase of `p` can reference (0 if it has none).
pub fn working_set(p: &ProcessSpec) -> u64 {
    let mut sizes = vec![0u64; p.buffer_count()];
    let mut wss = 0;
    for phase in &p.phases {
        match phase {
            Phase::Mmap { buffer, bytes, .. } => sizes[buffer.0] = *bytes,
            Phase::Access(a) => {
                wss =
                    Stream::new(a.pattern, sizes[a.buffer.0]).map_or(0, |s| s.reach_pages() * 4096)
            }
            _ => {}
        }
    }
    wss
}

fn per(n: u64, d: u64) -> f64 {
    n as f64 / d.max(1) as f64
}

/// Run both page sizes (natively, and in a VM if the file has one) and measure every
/// process.
pub fn measure(r: &Reproduction, progress: Progress<'_>) -> anyhow::Result<Vec<Measured>> {
    let (small, huge) = run_both(r, progress)?;
    let virt = run_virtual(r, progress)?;
    Ok(measured(r, &small, &huge, virt.as_ref()))
}

/// [`measure`] without a VM, returning the runs too: (measured, 4 KB run, 2 MB run).
pub fn measure_native(
    r: &Reproduction,
    progress: Progress<'_>,
) -> anyhow::Result<(Vec<Measured>, RunResult, RunResult)> {
    let (small, huge) = run_both(r, progress)?;
    let m = measured(r, &small, &huge, None);
    Ok((m, small, huge))
}

/// The processes in the file's VM under a host, at 4 KB at both levels and at 2 MB at
/// both; `None` without a `[[vm]]`.
fn run_virtual(
    r: &Reproduction,
    progress: Progress<'_>,
) -> anyhow::Result<Option<(HostedResult, HostedResult)>> {
    let (Some(vm), Some(profile)) = (r.vms.first(), r.guest_profile.as_ref()) else {
        return Ok(None);
    };
    let hosted = |mode: ThpMode| -> anyhow::Result<HostedResult> {
        // Both levels run with_thp's policy.
        let (host, guests) = crate::config::vms::hosted(&with_thp(r, mode), profile, &[vm], &r.vms);
        let what = match mode {
            ThpMode::Never => "table 3: in a VM, 4 KB pages at both levels",
            _ => "table 3: in a VM, 2 MB pages at both levels",
        };
        progress.start(what);
        Ok(r.host.apply(HostedRun::new(host, guests)?).run()?)
    };
    let (small, huge) = rayon::join(|| hosted(ThpMode::Never), || hosted(ThpMode::Always));
    Ok(Some((small?, huge?)))
}

/// The runs at 4 KB (THP never) and at 2 MB (THP always).
fn run_both(r: &Reproduction, progress: Progress<'_>) -> anyhow::Result<(RunResult, RunResult)> {
    let (small, huge) = rayon::join(
        || -> anyhow::Result<_> {
            let what = "table 3: 4 KB pages (THP never)";
            Ok(engine(progress, what, with_thp(r, ThpMode::Never))?.run()?)
        },
        || -> anyhow::Result<_> {
            let what = "table 3: 2 MB pages (THP always)";
            Ok(engine(progress, what, with_thp(r, ThpMode::Always))?.run()?)
        },
    );
    Ok((small?, huge?))
}

/// Every process of `r` measured from its runs at 4 KB (`small`) and 2 MB (`huge`), and
/// in a VM (`virt`: 4 KB and 2 MB at both levels).
fn measured(
    r: &Reproduction,
    small: &RunResult,
    huge: &RunResult,
    virt: Option<&(HostedResult, HostedResult)>,
) -> Vec<Measured> {
    let in_vm = |name: &str, run: &HostedResult| -> Option<ProcessSummary> {
        run.guest_process(name).cloned()
    };
    r.experiment
        .processes
        .iter()
        .zip(small.summary.processes.iter().cloned())
        .zip(huge.summary.processes.iter().cloned())
        .map(|((spec, a), b)| {
            let v = virt.and_then(|(s, h)| Some((in_vm(&a.name, s)?, in_vm(&a.name, h)?)));
            Measured {
                mmu_virtual_4k: v.as_ref().map(|(s, _)| s.mmu_overhead),
                mmu_virtual_2m: v.as_ref().map(|(_, h)| h.mmu_overhead),
                speedup_virtual: v.as_ref().map(|(s, h)| {
                    per(h.references, h.cycles) / per(s.references, s.cycles).max(1e-300)
                }),
                name: a.name.clone(),
                rss_bytes: a.rss_bytes_end,
                wss_bytes: working_set(spec),
                tlb_miss_4k: per(a.walks, a.references),
                mmu_4k: a.mmu_overhead,
                mmu_2m: b.mmu_overhead,
                speedup: per(b.references, b.cycles) / per(a.references, a.cycles).max(1e-300),
                speedup_runtime: per(b.references, b.runtime_ns)
                    / per(a.references, a.runtime_ns).max(1e-300),
                run_4k: a,
                run_2m: b,
            }
        })
        .collect()
}

/// The paper's row of workload `name`.
fn paper_row(name: &str) -> Option<&'static PaperRow> {
    PAPER.iter().find(|p| p.workload == name)
}

/// Table 3's numbers, paper beside hugemm.
fn values(measured: &[Measured]) -> Vec<Value> {
    let mut values = Vec::new();
    for m in measured {
        let Some(p) = paper_row(&m.name) else {
            continue;
        };
        let v =
            |q: &str, paper: f64, ours: f64| Value::new("Table 3", &m.name, q, paper, Some(ours));
        values.push(v(
            "% TLB misses at 4 KB",
            p.tlb_miss_pct,
            m.tlb_miss_4k * 100.0,
        ));
        values.push(v(
            "% cycles in walks at 4 KB",
            p.cycles_4k_pct,
            m.mmu_4k * 100.0,
        ));
        values.push(v(
            "% cycles in walks at 2 MB",
            p.cycles_2m_pct,
            m.mmu_2m * 100.0,
        ));
        values.push(v("speedup of 2 MB over 4 KB", p.speedup, m.speedup));
        if let Some(sv) = m.speedup_virtual {
            values.push(v(
                "speedup of 2 MB over 4 KB in a VM",
                p.speedup_virtual,
                sv,
            ));
        }
    }
    values
}

/// Section 2.4's claim: mg.D, with the larger working set, has far lower MMU overhead
/// than cg.D ("far": under half).
fn claim(measured: &[Measured]) -> Claim {
    let text =
        "a larger working set (mg.D) can have far lower MMU overhead than a smaller one (cg.D)";
    let paper = "1.04% vs 39% of cycles at 4 KB";
    let of = |n: &str| measured.iter().find(|m| m.name == n).map(|m| m.mmu_4k);
    match (of("mg.D"), of("cg.D")) {
        (Some(mg), Some(cg)) => Claim::new(
            text,
            paper,
            format!("{:.2}% vs {:.2}%", mg * 100.0, cg * 100.0),
            Some(mg < cg / 2.0),
        ),
        _ => Claim::unjudged(text, paper, "needs processes named mg.D and cg.D"),
    }
}

/// The claims: section 2.4's, and Table 3's virtual column's (huge pages buy more in a
/// VM than natively, for both workloads; the paper: 1.11 vs 1.01 and 2.7 vs 1.62).
fn claims(measured: &[Measured]) -> Vec<Claim> {
    let mut claims = vec![claim(measured)];
    for m in measured {
        let Some(p) = paper_row(&m.name) else {
            continue;
        };
        let text = format!("{}: 2 MB pages buy more in a VM than natively", m.name);
        let paper = format!("{:.2}x vs {:.2}x", p.speedup_virtual, p.speedup);
        claims.push(match m.speedup_virtual {
            Some(v) => Claim::new(
                &text,
                &paper,
                format!("{v:.2}x vs {:.2}x", m.speedup),
                Some(v > m.speedup),
            ),
            None => Claim::unjudged(&text, &paper, "needs a [[vm]] table"),
        });
    }
    claims
}

/// MMU overhead at 4 KB, paper beside hugemm.
fn figure(measured: &[Measured]) -> Figure {
    super::paper_beside_hugemm(
        "table3-mmu",
        "Table 3: cycles in page walks at 4 KB (%)",
        "% of cycles",
        measured.iter().map(|m| m.name.clone()).collect(),
        measured
            .iter()
            .map(|m| paper_row(&m.name).map(|p| p.cycles_4k_pct))
            .collect(),
        measured.iter().map(|m| Some(m.mmu_4k * 100.0)).collect(),
    )
}

fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// Table 3, paper beside hugemm.
pub fn table3(r: &Reproduction, progress: Progress<'_>) -> anyhow::Result<Report> {
    let (small, huge) = run_both(r, progress)?;
    let virt = run_virtual(r, progress)?;
    let measured = measured(r, &small, &huge, virt.as_ref());
    let mut rows = Vec::new();
    for m in &measured {
        if let Some(p) = PAPER.iter().find(|p| p.workload == m.name) {
            rows.push(vec![
                m.name.clone(),
                "paper".into(),
                p.rss.into(),
                p.wss.into(),
                format!("{:.2}", p.tlb_miss_pct),
                format!("{:.2}", p.cycles_4k_pct),
                format!("{:.2}", p.cycles_2m_pct),
                format!("{:.2}", p.speedup),
                "-".into(),
                format!("{:.2}", p.speedup_virtual),
            ]);
        }
        rows.push(vec![
            m.name.clone(),
            "hugemm".into(),
            gib(m.rss_bytes),
            gib(m.wss_bytes),
            format!("{:.2}", m.tlb_miss_4k * 100.0),
            format!("{:.2}", m.mmu_4k * 100.0),
            format!("{:.2}", m.mmu_2m * 100.0),
            format!("{:.2}", m.speedup),
            format!("{:.2}", m.speedup_runtime),
            m.speedup_virtual.map_or("-".into(), |s| format!("{s:.2}")),
        ]);
    }
    let t = table(
        &[
            "workload",
            "source",
            "RSS",
            "WSS",
            "% TLB misses 4KB",
            "% cycles 4KB",
            "% cycles 2MB",
            "speedup",
            "speedup (run time)",
            "speedup in a VM",
        ],
        &rows,
    );
    Ok(Report {
        title: "HawkEye Table 3: memory characteristics, MMU overheads and 2 MB speedup (NPB)"
            .into(),
        tables: vec![
            "paper (§2.4): a workload with a large working set (mg.D) can have far lower MMU \
             overhead than one with a smaller working set (cg.D)\n"
                .to_string(),
            t,
        ],
        values: values(&measured),
        claims: claims(&measured),
        figures: vec![figure(&measured)],
        data: json!({"paper": PAPER, "hugemm": measured}),
        runs: {
            let mut runs = vec![
                VariantRun::new(&["4k"], small),
                VariantRun::new(&["2m"], huge),
            ];
            for (tag, run) in virt
                .into_iter()
                .flat_map(|(s, h)| [("vm-4k", s), ("vm-2m", h)])
            {
                for vm in run.vms {
                    runs.push(VariantRun::new(&[tag, &vm.name], vm.guest));
                }
                runs.push(VariantRun::new(&[tag, "host"], run.host));
            }
            runs
        },
        ..Report::default()
    })
}
