//! Output of a run: the readable summary table and the files `hugemm run` writes
//! (`config.resolved.toml`, `summary.json`, `timeseries.csv`; schema in `docs/output.md`).

use crate::config::raw::RawExperiment;
use crate::provenance::{Provenance, WithProvenance};
use anyhow::Context;
use hugemm_sim::{RunResult, Summary, TimeseriesRow, TimeseriesSink};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

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

/// A CSV writer of a file.
type CsvFile = csv::Writer<std::io::BufWriter<std::fs::File>>;

/// `timeseries.csv`, written row by row as the run samples (so that a stopped or killed
/// run leaves the rows up to its end), through the `csv` crate: names with commas or
/// quotes are quoted as RFC 4180 says, and the header comes from [`TimeseriesRow`]'s
/// fields. The file and its directory are created at the first row, so a run that fails
/// before its first sample leaves nothing behind. Rows reach the disk at least every
/// [`TimeseriesWriter::FLUSH_EVERY`] of wall time, and at the end of the run.
pub struct TimeseriesWriter {
    path: PathBuf,
    csv: Option<CsvFile>,
    flushed: Instant,
}

impl TimeseriesWriter {
    /// Longest wall time rows wait in memory before being written out.
    pub const FLUSH_EVERY: Duration = Duration::from_millis(500);

    /// A writer of `path` (not created until the first row).
    pub fn new(path: PathBuf) -> TimeseriesWriter {
        TimeseriesWriter {
            path,
            csv: None,
            flushed: Instant::now(),
        }
    }

    /// `path`'s writer, creating the file (and its directory) the first time.
    fn open<'a>(path: &Path, csv: &'a mut Option<CsvFile>) -> std::io::Result<&'a mut CsvFile> {
        if csv.is_none() {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let file = std::fs::File::create(path)?;
            *csv = Some(csv::Writer::from_writer(std::io::BufWriter::new(file)));
        }
        Ok(csv.as_mut().expect("just opened"))
    }

    /// `e`, naming the file.
    fn named(path: &Path, e: impl Into<std::io::Error>) -> std::io::Error {
        let e = e.into();
        std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
    }
}

impl TimeseriesSink for TimeseriesWriter {
    fn write(&mut self, rows: &[TimeseriesRow]) -> std::io::Result<()> {
        let csv = Self::open(&self.path, &mut self.csv).map_err(|e| Self::named(&self.path, e))?;
        for row in rows {
            csv.serialize(row).map_err(|e| Self::named(&self.path, e))?;
        }
        if self.flushed.elapsed() >= Self::FLUSH_EVERY {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.flushed = Instant::now();
        match &mut self.csv {
            Some(csv) => csv.flush().map_err(|e| Self::named(&self.path, e)),
            None => Ok(()),
        }
    }
}

/// Write `rows` as `path` (a time series kept in memory, not streamed).
pub fn write_timeseries(path: &Path, rows: &[TimeseriesRow]) -> anyhow::Result<()> {
    let mut w = TimeseriesWriter::new(path.to_path_buf());
    w.write(rows)
        .and_then(|()| w.flush())
        .with_context(|| format!("writing {}", path.display()))
}

/// Write the TLB-miss sampling windows of a run (SysMon-H's monitor) as
/// `dir/tlb_misses.csv`: one row per 2 MB region with sampled misses per window. Writes
/// nothing when no window was sampled.
pub fn write_tlb_windows(
    dir: &Path,
    windows: &[hugemm_sim::results::TlbWindow],
) -> anyhow::Result<()> {
    if windows.is_empty() {
        return Ok(());
    }
    let path = dir.join("tlb_misses.csv");
    let run = || -> Result<(), csv::Error> {
        let mut w = csv::Writer::from_path(&path)?;
        w.write_record([
            "time_ns",
            "process",
            "pid",
            "region",
            "misses",
            "window_samples",
        ])?;
        for win in windows {
            for &(region, misses) in &win.regions {
                w.write_record([
                    win.time_ns.to_string(),
                    win.process.clone(),
                    win.pid.to_string(),
                    format!("{region:#x}"),
                    format!("{misses:.3}"),
                    format!("{:.1}", win.samples),
                ])?;
            }
        }
        w.flush()?;
        Ok(())
    };
    run().with_context(|| format!("writing {}", path.display()))
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

/// Write a run's `config.resolved.toml` and `summary.json` into `dir` (created if
/// needed); its time series was written as it ran ([`TimeseriesWriter`]).
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
    write_tlb_windows(dir, &result.tlb_windows)?;
    write_summary(dir, &result.summary, provenance)
}

/// Write `summary` (with what made it) as `dir/summary.json`; `dir` must exist.
pub fn write_summary(dir: &Path, summary: &Summary, provenance: &Provenance) -> anyhow::Result<()> {
    let json = WithProvenance {
        provenance,
        output: summary,
    };
    let path = dir.join("summary.json");
    let text = serde_json::to_string_pretty(&json).context("serialising the summary")? + "\n";
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
}
