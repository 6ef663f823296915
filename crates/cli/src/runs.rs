//! `hugemm report DIR` and `hugemm compare DIR...`: pages for the output of runs.
//!
//! A run's output is a directory with `summary.json` and, unless it stopped before its
//! first sample, `timeseries.csv`: what `hugemm run` writes, and what `hugemm reproduce`
//! writes for every run behind a reproduction (`runs/<set>/<variant>/`). Both files are
//! read as their documented shape (`docs/output.md`), column by column, so a page can be
//! made of an output written by an earlier hugemm as long as the columns it draws exist.

use crate::config::ConfigError;
use crate::page::{Block, Cell, Page, Section};
use crate::plot::{Figure, Series};
use crate::reproduce::output::{made_by, number};
use anyhow::Context;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// One run's output, read.
#[derive(Debug)]
pub struct RunOutput {
    /// Its directory, as given.
    pub dir: PathBuf,
    /// `summary.json`.
    pub summary: Value,
    /// `timeseries.csv`'s header.
    pub columns: Vec<String>,
    /// `timeseries.csv`'s rows.
    pub rows: Vec<csv::StringRecord>,
}

/// Per-process quantities of the summary a page shows: (key, label, scale to the unit).
const PROCESS_METRICS: [(&str, &str, f64); 11] = [
    ("runtime_ns", "runtime (s)", 1e-9),
    ("references", "references", 1.0),
    ("faults_4k", "faults 4K", 1.0),
    ("faults_2m", "faults 2M", 1.0),
    ("fault_time_ns", "fault time (s)", 1e-9),
    ("mmu_overhead", "MMU overhead (%)", 100.0),
    ("promotions", "promotions", 1.0),
    ("huge_pages_end", "huge pages at end", 1.0),
    ("rss_bytes_end", "RSS at end (MiB)", 1.0 / 1048576.0),
    ("bloat_bytes_end", "bloat at end (MiB)", 1.0 / 1048576.0),
    ("fault_p99_ns", "fault p99 (us)", 1e-3),
];

/// System quantities of the summary a page shows.
const SYSTEM_METRICS: [(&str, &str, f64); 6] = [
    ("sim_time_ns", "simulated time (s)", 1e-9),
    ("frames_free_end", "free at end (MiB)", 4096.0 / 1048576.0),
    ("collapses", "collapses", 1.0),
    ("collapse_failures", "failed collapses", 1.0),
    ("splits", "splits", 1.0),
    ("oom_events", "OOM events", 1.0),
];

/// Time series drawn per process: (column, label, scale).
const PROCESS_SERIES: [(&str, &str, f64); 3] = [
    ("mmu_overhead", "MMU overhead (%)", 100.0),
    ("huge_pages", "huge pages", 1.0),
    ("rss_bytes", "RSS (MiB)", 1.0 / 1048576.0),
];

/// Time series drawn for the system.
const SYSTEM_SERIES: [(&str, &str, f64); 3] = [
    ("frames_free", "free memory (MiB)", 4096.0 / 1048576.0),
    ("fmfi", "free memory fragmentation index", 1.0),
    ("tainted_pageblocks", "tainted pageblocks", 1.0),
];

/// Why `dir` is not a run output.
fn not_a_run(dir: &Path, problem: impl Into<String>) -> anyhow::Error {
    ConfigError::Path {
        path: dir.display().to_string(),
        problem: problem.into(),
    }
    .into()
}

impl RunOutput {
    /// Read the run output in `dir`; a directory that is not one is bad input
    /// ([`ConfigError`]), named with what is missing or wrong.
    pub fn read(dir: &Path) -> anyhow::Result<RunOutput> {
        if !dir.is_dir() {
            return Err(not_a_run(dir, "not a directory"));
        }
        let path = dir.join("summary.json");
        let text = std::fs::read_to_string(&path).map_err(|e| {
            not_a_run(
                dir,
                format!(
                    "not the output of a run: no readable summary.json in it ({e}); `hugemm run` \
                     writes one, as `hugemm reproduce` does in each runs/<set>/<variant>/"
                ),
            )
        })?;
        let summary: Value = serde_json::from_str(&text)
            .map_err(|e| not_a_run(dir, format!("summary.json is not JSON: {e}")))?;
        if !summary["processes"].is_array() || !summary["system"].is_object() {
            return Err(not_a_run(
                dir,
                "summary.json is not a run's summary (no \"processes\" list and \"system\" object)",
            ));
        }
        let (mut columns, mut rows) = (Vec::new(), Vec::new());
        let csv_path = dir.join("timeseries.csv");
        if csv_path.exists() {
            let bad = |e: csv::Error| not_a_run(dir, format!("timeseries.csv: {e}"));
            let mut reader = csv::Reader::from_path(&csv_path).map_err(bad)?;
            columns = reader
                .headers()
                .map_err(bad)?
                .iter()
                .map(String::from)
                .collect();
            for row in reader.records() {
                rows.push(row.map_err(bad)?);
            }
            for needed in ["time_ns", "process"] {
                if !columns.iter().any(|c| c == needed) {
                    return Err(not_a_run(
                        dir,
                        format!("timeseries.csv has no {needed} column"),
                    ));
                }
            }
        }
        Ok(RunOutput {
            dir: dir.to_path_buf(),
            summary,
            columns,
            rows,
        })
    }

    /// The run's name on pages: its directory as given.
    pub fn name(&self) -> String {
        self.dir.display().to_string()
    }

    /// The processes' names, in the summary's order.
    pub fn processes(&self) -> Vec<String> {
        self.summary["processes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["name"].as_str().map(String::from))
            .collect()
    }

    fn process(&self, name: &str) -> Option<&Value> {
        self.summary["processes"]
            .as_array()?
            .iter()
            .find(|p| p["name"] == name)
    }

    /// `column` of the rows of `process` ("system" for the system's) as (time s, value
    /// x `scale`), skipping empty cells.
    pub fn series(&self, process: &str, column: &str, scale: f64) -> Vec<(f64, f64)> {
        let (Some(t), Some(p), Some(c)) = (
            self.columns.iter().position(|h| h == "time_ns"),
            self.columns.iter().position(|h| h == "process"),
            self.columns.iter().position(|h| h == column),
        ) else {
            return Vec::new();
        };
        self.rows
            .iter()
            .filter(|r| r.get(p) == Some(process))
            .filter_map(|r| {
                let time: f64 = r.get(t)?.parse().ok()?;
                let v: f64 = r.get(c)?.parse().ok()?;
                Some((time / 1e9, v * scale))
            })
            .collect()
    }
}

/// `v` as a number (JSON numbers, and booleans as 0/1).
fn num(v: &Value) -> Option<f64> {
    v.as_f64()
        .or_else(|| v.as_bool().map(|b| f64::from(u8::from(b))))
}

/// The run's setting line: policy, profile, mode, seed.
fn setting(run: &RunOutput) -> String {
    let s = &run.summary["system"];
    let text = |k: &str| match &s[k] {
        Value::String(v) => v.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    };
    format!(
        "policy {} on {} ({} mode, seed {})",
        text("policy"),
        text("profile"),
        text("mode"),
        text("seed")
    )
}

/// Figure id text from a name: letters, digits and `-`.
fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

/// The figures of `runs` overlaid: per process (of the first run) and per quantity, a
/// line per run (or per process when there is one run); then the system's quantities.
fn figures(runs: &[&RunOutput]) -> Vec<Figure> {
    let mut out = Vec::new();
    let single = runs.len() == 1;
    let first = runs[0];
    if single {
        for (column, label, scale) in PROCESS_SERIES {
            let series = first
                .processes()
                .iter()
                .map(|p| Series {
                    name: p.clone(),
                    points: first.series(p, column, scale),
                })
                .collect();
            out.push(Figure::lines(
                &format!("run-{}", slug(column)),
                &format!("{label} by process"),
                "time (s)",
                label,
                series,
            ));
        }
    } else {
        for p in first.processes() {
            for (column, label, scale) in PROCESS_SERIES {
                let series = runs
                    .iter()
                    .map(|r| Series {
                        name: r.name(),
                        points: r.series(&p, column, scale),
                    })
                    .collect();
                out.push(Figure::lines(
                    &format!("compare-{}-{}", slug(&p), slug(column)),
                    &format!("{p}: {label}"),
                    "time (s)",
                    label,
                    series,
                ));
            }
        }
    }
    for (column, label, scale) in SYSTEM_SERIES {
        let series = runs
            .iter()
            .map(|r| Series {
                name: if single { "system".into() } else { r.name() },
                points: r.series("system", column, scale),
            })
            .collect();
        out.push(Figure::lines(
            &format!(
                "{}-system-{}",
                if single { "run" } else { "compare" },
                slug(column)
            ),
            &format!("system: {label}"),
            "time (s)",
            label,
            series,
        ));
    }
    // A figure whose every line is a point or none says nothing (a process that ended
    // before the second sample).
    out.retain(|f| match &f.plot {
        crate::plot::Plot::Lines { series } => series.iter().any(|s| s.points.len() >= 2),
        crate::plot::Plot::Bars { .. } => !f.is_empty(),
    });
    out
}

/// "value" or, beside a first run's `base`, "value (x ratio)".
fn with_ratio(v: Option<f64>, base: Option<f64>, first: bool) -> Cell {
    match (v, base) {
        (None, _) => "-".into(),
        (Some(v), _) if first => number(v).into(),
        (Some(v), Some(b)) if b != 0.0 => format!("{} (x{:.2})", number(v), v / b).into(),
        (Some(v), _) => number(v).into(),
    }
}

/// Tables of the summaries of `runs` side by side: per process of the first run, a row
/// per quantity and a column per run (with its ratio to the first); then the system's.
fn summary_tables(runs: &[&RunOutput]) -> Vec<Section> {
    let names: Vec<String> = runs.iter().map(|r| r.name()).collect();
    let mut header = vec!["quantity"];
    header.extend(names.iter().map(String::as_str));
    let table = |values: &dyn Fn(&RunOutput, &str) -> Option<f64>,
                 metrics: &[(&str, &str, f64)]| {
        let rows = metrics
            .iter()
            .map(|(key, label, scale)| {
                let base = values(runs[0], key).map(|v| v * scale);
                let mut row = vec![Cell::from(*label)];
                for (i, r) in runs.iter().enumerate() {
                    row.push(with_ratio(values(r, key).map(|v| v * scale), base, i == 0));
                }
                row
            })
            .collect();
        Block::table(&header, rows)
    };
    let mut sections = Vec::new();
    for p in runs[0].processes() {
        let of = |r: &RunOutput, key: &str| r.process(&p).and_then(|v| num(&v[key]));
        sections.push(Section::new(
            format!("Process {p}"),
            vec![table(&of, &PROCESS_METRICS)],
        ));
    }
    let sys = |r: &RunOutput, key: &str| num(&r.summary["system"][key]);
    sections.push(Section::new("System", vec![table(&sys, &SYSTEM_METRICS)]));
    sections
}

/// Write `page` and its `figures` into `out` as `name.md` and `name.html`.
fn write_page(
    out: &Path,
    name: &str,
    mut page: Page,
    figures: Vec<Figure>,
) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let mut blocks = Vec::new();
    for f in figures {
        let svg = f.write(out)?;
        blocks.push(Block::Figure { figure: f, svg });
    }
    if !blocks.is_empty() {
        page.sections.push(Section::new("Over time", blocks));
    }
    for (ext, text) in [("md", page.markdown()), ("html", page.html())] {
        let path = out.join(format!("{name}.{ext}"));
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(out.join(format!("{name}.html")))
}

/// `hugemm report DIR`: `report.md`, `report.html` and the figures, into `dir`.
pub fn report(dir: &Path, provenance: &crate::provenance::Provenance) -> anyhow::Result<PathBuf> {
    let run = RunOutput::read(dir)?;
    let mut meta = vec![
        ("run".to_string(), run.name()),
        ("setting".into(), setting(&run)),
        (
            "complete".into(),
            match run.summary["complete"].as_bool() {
                Some(false) => format!(
                    "no, stopped by {}",
                    run.summary["stopped_by"].as_str().unwrap_or("?")
                ),
                _ => "yes".into(),
            },
        ),
    ];
    if let Some(p) = run.summary["provenance"]["command_line"].as_str() {
        meta.push(("run by".into(), p.into()));
    }
    meta.extend(made_by(provenance));
    let mut sections = summary_tables(&[&run]);
    if run.rows.is_empty() {
        sections.push(Section::new(
            "Over time",
            vec![Block::Para(
                "The run has no time series (timeseries.csv): it stopped before its first sample."
                    .into(),
            )],
        ));
    }
    let page = Page {
        title: format!("hugemm run {}", run.name()),
        meta,
        sections,
    };
    let figures = figures(&[&run]);
    write_page(dir, "report", page, figures)
}

/// `hugemm compare DIR...`: `compare.md`, `compare.html` and the figures, into `out`.
/// Every directory is read before anything is written.
pub fn compare(
    dirs: &[PathBuf],
    out: &Path,
    provenance: &crate::provenance::Provenance,
) -> anyhow::Result<PathBuf> {
    let runs: Vec<RunOutput> = dirs
        .iter()
        .map(|d| RunOutput::read(d))
        .collect::<anyhow::Result<_>>()?;
    let runs: Vec<&RunOutput> = runs.iter().collect();
    let mut meta: Vec<(String, String)> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            (
                format!("run {}", i + 1),
                format!("{}: {}", r.name(), setting(r)),
            )
        })
        .collect();
    meta.push(("ratios".into(), "to the first run".into()));
    meta.extend(made_by(provenance));
    let page = Page {
        title: format!("hugemm compare: {} runs", runs.len()),
        meta,
        sections: summary_tables(&runs),
    };
    write_page(out, "compare", page, figures(&runs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_are_to_the_first_run() {
        assert_eq!(with_ratio(Some(2.5), Some(2.5), true).text, "2.50");
        assert_eq!(with_ratio(Some(3.0), Some(2.0), false).text, "3 (x1.50)");
        assert_eq!(with_ratio(Some(3.0), Some(0.0), false).text, "3");
        assert_eq!(with_ratio(None, Some(2.0), false).text, "-");
    }

    #[test]
    fn slugs_are_safe_file_names() {
        assert_eq!(slug("Graph500-1 (x)"), "graph500-1--x-");
    }
}
