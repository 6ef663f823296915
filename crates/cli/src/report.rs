//! Output of a run: the readable summary table and the files `hugemm run` writes
//! (`config.resolved.toml`, `summary.json`, `timeseries.csv`; schema in `docs/output.md`).

use crate::config::raw::RawExperiment;
use crate::provenance::{Provenance, WithProvenance};
use anyhow::Context;
use hugemm_sim::{RunResult, Summary, TimeseriesRow};
use std::fmt::Write as _;
use std::path::Path;

/// A readable table of a run's summary: a line on the run, a row per process (in
/// hugemm's one table style, `reproduce::style_table`'s), a line on the system.
pub fn table(s: &Summary) -> String {
    let mut out = String::new();
    let sys = &s.system;
    let _ = writeln!(
        out,
        "policy {} on {} ({} mode, seed {}), simulated {:.3} s",
        sys.policy,
        sys.profile,
        sys.mode,
        sys.seed,
        sys.sim_time_ns as f64 / 1e9
    );
    let rows: Vec<Vec<String>> = s
        .processes
        .iter()
        .map(|p| {
            vec![
                p.name.clone(),
                format!("{:.3}", p.runtime_ns as f64 / 1e9),
                p.references.to_string(),
                p.faults_4k.to_string(),
                p.faults_2m.to_string(),
                format!("{:.3}", p.fault_time_ns as f64 / 1e9),
                format!("{:.2}", p.mmu_overhead * 100.0),
                p.huge_pages_end.to_string(),
                format!("{:.1}", p.rss_bytes_end as f64 / (1 << 20) as f64),
                if p.oom { "yes" } else { "no" }.to_string(),
            ]
        })
        .collect();
    out.push_str(&crate::reproduce::table(
        &[
            "process",
            "runtime s",
            "references",
            "faults 4K",
            "2M",
            "fault s",
            "MMU %",
            "huge",
            "RSS MiB",
            "OOM",
        ],
        &rows,
    ));
    let daemons: Vec<String> = sys
        .daemon_cpu_ns
        .iter()
        .map(|(n, t)| format!("{n} {:.3} s", *t as f64 / 1e9))
        .collect();
    let _ = writeln!(
        out,
        "system: {} frames, {} free at end; {} collapses ({} failed), {} splits, {} OOM events; daemon CPU: {}",
        sys.frames_total,
        sys.frames_free_end,
        sys.collapses,
        sys.collapse_failures,
        sys.splits,
        sys.oom_events,
        if daemons.is_empty() { "none".into() } else { daemons.join(", ") }
    );
    out
}

/// The CSV text of a time series.
pub fn timeseries_csv(rows: &[TimeseriesRow]) -> String {
    let mut out = String::with_capacity(64 * (rows.len() + 1));
    out.push_str(TimeseriesRow::HEADER);
    out.push('\n');
    for r in rows {
        out.push_str(&r.csv());
        out.push('\n');
    }
    out
}

/// The resolved configuration's text: provenance as comments, then every key.
pub fn resolved_toml(resolved: &RawExperiment, provenance: &Provenance) -> anyhow::Result<String> {
    Ok(format!(
        "# hugemm: the experiment as run, every default written out; `hugemm run` on this\n\
         # file runs it again, anywhere (the machine profile is written out too).\n{}\n{}",
        provenance.toml_comments(),
        toml::to_string(resolved).context("serialising the resolved configuration")?
    ))
}

/// Write a run's files into `dir` (created if needed).
pub fn write_dir(
    dir: &Path,
    resolved: &RawExperiment,
    result: &RunResult,
    provenance: &Provenance,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("creating output directory {}", dir.display()))?;
    let write = |name: &str, text: String| {
        let path = dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
    };
    write("config.resolved.toml", resolved_toml(resolved, provenance)?)?;
    let summary = WithProvenance {
        provenance,
        output: &result.summary,
    };
    write(
        "summary.json",
        serde_json::to_string_pretty(&summary).context("serialising the summary")? + "\n",
    )?;
    write("timeseries.csv", timeseries_csv(&result.timeseries))?;
    Ok(())
}
