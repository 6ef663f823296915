//! Running a sweep: the points not yet done, in parallel on the current rayon pool, each
//! into its own directory ([`super::store`]); then the results table and the plot from
//! every point's directory.
//!
//! Deterministic: each point is an engine of its own, seeded by its configuration, and
//! the table is made from the points' files in grid order once all are done, so it is
//! byte-identical whatever the number of threads and however often the sweep was
//! stopped and resumed. A stop request abandons the points in flight (their temporary
//! directories are removed) and starts no more.

use super::grid::Scalar;
use super::store::{self, PointFile, Store};
use super::table::{self, Cell, Table};
use super::{figure, Log, Outcome, Point, Sweep};
use crate::provenance::Provenance;
use crate::report;
use anyhow::Context;
use hugemm_sim::{StopFlag, StopReason};
use rayon::prelude::*;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

impl Sweep {
    /// Runs every point not done yet into `out/points/`, then writes `out/results.csv`,
    /// `out/results.parquet` and the plot; stops early, keeping what is done, when
    /// `stop` is raised.
    pub fn run(
        &self,
        out: &Path,
        stop: &StopFlag,
        provenance: &Provenance,
        log: &dyn Log,
    ) -> anyhow::Result<Outcome> {
        let started = Instant::now();
        remove_temp_files(out)?;
        let (store, removed) = Store::open(out.join("points"))?;
        if removed > 0 {
            log.line(&format!(
                "sweep: removed {removed} unfinished point(s) an interrupted run left"
            ));
        }
        let pending = self.pending(&store, log)?;
        let total = self.points.len();
        let skipped = total - pending.len();
        let (done, failed) = self.run_points(&pending, &store, stop, provenance, log);
        if let Some(reason) = stop.requested() {
            for f in &failed {
                log.line(&format!("sweep: {f}"));
            }
            log.line(&stopped(reason, skipped + done, total, &store.dir));
            return Ok(Outcome {
                report: String::new(),
                stopped: Some(reason),
            });
        }
        if !failed.is_empty() {
            anyhow::bail!(
                "{} of {total} points failed (the {} done are kept; running the sweep \
                 again retries the others): {}",
                failed.len(),
                skipped + done,
                failed.join("; ")
            );
        }
        let report = self.write_results(out, &store, provenance, log)?;
        Ok(Outcome {
            report: format!(
                "sweep {}: {total} points ({done} run now, {skipped} already done) in {:.1} s\n\
                 {report}",
                self.file,
                started.elapsed().as_secs_f64()
            ),
            stopped: None,
        })
    }

    /// The points not done yet, saying how many there are (and how many finished points
    /// of other grids `store` holds).
    fn pending(&self, store: &Store, log: &dyn Log) -> anyhow::Result<Vec<&Point>> {
        let ids: Vec<&str> = self.points.iter().map(|p| p.id.as_str()).collect();
        let mut pending = Vec::new();
        for p in &self.points {
            if !store.done(&p.id, &p.config, &ids)? {
                pending.push(p);
            }
        }
        log.line(&format!(
            "sweep {}: {} points, {} already done (skipped), {} to run on {} thread(s)",
            self.file,
            self.points.len(),
            self.points.len() - pending.len(),
            pending.len(),
            rayon::current_num_threads()
        ));
        let others = store.others(&ids)?;
        if others > 0 {
            log.line(&format!(
                "sweep: {} holds {others} finished point(s) of another grid or \
                 configuration; left alone, not in the tables",
                store.dir.display()
            ));
        }
        Ok(pending)
    }

    /// Runs `pending` in parallel (none once `stop` is raised), logging each as it is
    /// done; returns how many were done and a line for each that failed.
    fn run_points(
        &self,
        pending: &[&Point],
        store: &Store,
        stop: &StopFlag,
        provenance: &Provenance,
        log: &dyn Log,
    ) -> (usize, Vec<String>) {
        let total = self.points.len();
        let before = total - pending.len();
        let done = AtomicUsize::new(0);
        log.to_run(pending.len());
        let failed: Vec<Option<String>> = pending
            .par_iter()
            .map(|p| {
                if stop.requested().is_some() {
                    return None;
                }
                let t = Instant::now();
                match self.run_point(p, store, stop, provenance) {
                    Ok(false) => None,
                    Ok(true) => {
                        log.point_done();
                        let k = before + done.fetch_add(1, Ordering::Relaxed) + 1;
                        log.line(&format!(
                            "sweep: [{k}/{total}] point {} ({}) done in {:.1} s",
                            p.index,
                            self.describe(p.index),
                            t.elapsed().as_secs_f64()
                        ));
                        None
                    }
                    Err(e) => Some(format!(
                        "point {} ({}): {e:#}",
                        p.index,
                        self.describe(p.index)
                    )),
                }
            })
            .collect();
        (done.into_inner(), failed.into_iter().flatten().collect())
    }

    /// Writes the results table and the plot from the points' directories; returns the
    /// report for stdout. Points made by another hugemm than this one (`provenance`)
    /// are used as they are, with a note through `log`: the configuration identifies a
    /// point, not the model that ran it.
    fn write_results(
        &self,
        out: &Path,
        store: &Store,
        provenance: &Provenance,
        log: &dyn Log,
    ) -> anyhow::Result<String> {
        let mut rows = Vec::with_capacity(self.points.len());
        let ours = serde_json::to_value(provenance)?;
        let mut foreign = Vec::new();
        for p in &self.points {
            let path = store.dir.join(&p.id).join("summary.json");
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            let summary: serde_json::Value = serde_json::from_str(&text)
                .with_context(|| format!("reading {}", path.display()))?;
            let metrics =
                table::metrics(&summary).with_context(|| format!("reading {}", path.display()))?;
            rows.push(self.row(p, metrics));
            let made_by = &summary["provenance"];
            if ["hugemm_version", "git_commit"]
                .iter()
                .any(|k| made_by[k] != ours[k])
            {
                foreign.push(p.index.to_string());
            }
        }
        if !foreign.is_empty() {
            log.line(&format!(
                "note: point(s) {} were run by another hugemm (version or commit) than this \
                 one; their results stand as it made them (remove their directories under \
                 {} to run them again)",
                foreign.join(", "),
                store.dir.display()
            ));
        }
        let table = Table::new(&rows);
        let csv = out.join("results.csv");
        let parquet = out.join("results.parquet");
        store::write_atomic(&csv, &table.csv()?)?;
        store::write_atomic(&parquet, &table.parquet()?)?;
        let y = &table
            .column(&self.plot_y)
            .expect("the plot's column was checked against every point's")
            .cells;
        let picks: Vec<Vec<usize>> = self.points.iter().map(|p| p.picks.clone()).collect();
        let figure = figure::figure(&self.grid, &picks, self.plot_x, &self.plot_y, y);
        let svg = figure.svg()?;
        let svg_path = out.join(format!("{}.svg", figure::ID));
        let png_path = out.join(format!("{}.png", figure::ID));
        store::write_atomic(&svg_path, svg.as_bytes())?;
        store::write_atomic(&png_path, &crate::plot::png(&svg)?)?;
        let mut report = self.summary_table(&table);
        let _ = writeln!(
            report,
            "results: {} and {} ({} rows, {} columns; docs/sweeps.md)\nplot: {} and {} ({})",
            csv.display(),
            parquet.display(),
            table.rows(),
            table.columns.len(),
            svg_path.display(),
            png_path.display(),
            figure.title
        );
        Ok(report)
    }

    /// Point `p`'s row: its index and directory, its swept values, then `metrics`. A
    /// metric named like a swept key (a process called `machine`, say) gets `#2`.
    fn row(&self, p: &Point, metrics: Vec<(String, Cell)>) -> Vec<(String, Cell)> {
        let mut row = vec![
            ("point".to_string(), Cell::UInt(p.index as u64)),
            ("id".to_string(), Cell::Text(p.id.clone())),
        ];
        for (param, &v) in self.grid.parameters.iter().zip(&p.picks) {
            let cell = match &param.values[v].scalar {
                Scalar::Int(i) => Cell::Int(*i),
                Scalar::Float(x) => Cell::Float(*x),
                Scalar::Bool(b) => Cell::Bool(*b),
                Scalar::Text(s) => Cell::Text(s.clone()),
            };
            row.push((param.key.clone(), cell));
        }
        for (name, cell) in metrics {
            let mut unique = name.clone();
            let mut k = 1;
            while row.iter().any(|(n, _)| *n == unique) {
                k += 1;
                unique = format!("{name}#{k}");
            }
            row.push((unique, cell));
        }
        row
    }

    /// The swept values and the plotted column of every point, as a text table.
    fn summary_table(&self, table: &Table) -> String {
        let mut header: Vec<&str> = vec!["point"];
        header.extend(self.grid.parameters.iter().map(|p| p.key.as_str()));
        header.push(&self.plot_y);
        let y = &table.column(&self.plot_y).expect("checked").cells;
        let rows: Vec<Vec<String>> = self
            .points
            .iter()
            .map(|p| {
                let mut row = vec![p.index.to_string()];
                for (param, &v) in self.grid.parameters.iter().zip(&p.picks) {
                    row.push(param.values[v].scalar.to_string());
                }
                row.push(y[p.index].number().map_or("-".into(), significant));
                row
            })
            .collect();
        crate::reproduce::table(&header, &rows)
    }
}

impl Sweep {
    /// Runs one point into a temporary directory and moves it into place when complete;
    /// `Ok(false)` when a stop request cut it short (nothing of it is kept).
    fn run_point(
        &self,
        p: &Point,
        store: &Store,
        stop: &StopFlag,
        provenance: &Provenance,
    ) -> anyhow::Result<bool> {
        let temp = store.temp(&p.id)?;
        let run = || -> anyhow::Result<bool> {
            let mut engine = hugemm_sim::Engine::new(p.experiment.clone())?;
            engine.stream_timeseries(Box::new(report::TimeseriesWriter::new(
                temp.join("timeseries.csv"),
            )));
            engine.stop_on(stop.clone());
            let result = engine.run().context("running the experiment")?;
            if matches!(
                result.summary.stopped_by,
                Some(StopReason::Interrupt | StopReason::Terminate)
            ) {
                return Ok(false);
            }
            report::write_dir(&temp, &p.resolved, &result, provenance)?;
            let path = temp.join(store::POINT_FILE);
            std::fs::write(&path, self.point_json(p)?)
                .with_context(|| format!("writing {}", path.display()))?;
            Ok(true)
        };
        match run() {
            Ok(true) => store.commit(&temp, &p.id).map(|()| true),
            other => {
                store::discard(&temp)?;
                other
            }
        }
    }

    /// `point.json` of `p`.
    pub(super) fn point_json(&self, p: &Point) -> anyhow::Result<String> {
        let file = PointFile {
            index: p.index,
            id: &p.id,
            config_hash: p.id.rsplit('-').next().unwrap_or_default(),
            parameters: self
                .grid
                .parameters
                .iter()
                .zip(&p.picks)
                .map(|(param, &v)| store::Parameter {
                    key: &param.key,
                    value: match &param.values[v].scalar {
                        Scalar::Int(i) => (*i).into(),
                        Scalar::Float(x) => (*x).into(),
                        Scalar::Bool(b) => (*b).into(),
                        Scalar::Text(t) => t.as_str().into(),
                    },
                })
                .collect(),
            overrides: p.overrides.iter().map(ToString::to_string).collect(),
        };
        Ok(serde_json::to_string_pretty(&file)? + "\n")
    }
}

/// The line saying a sweep was stopped, how far it got, and how to go on.
fn stopped(reason: StopReason, done: usize, total: usize, points: &Path) -> String {
    let what = match reason {
        StopReason::Terminate => "terminated (SIGTERM)",
        _ => "interrupted (SIGINT)",
    };
    format!(
        "hugemm: sweep {what}: {done} of {total} points done, kept in {}; run the same \
         command again to resume (done points are skipped)",
        points.display()
    )
}

/// Removes the temporary files of tables a killed run was writing.
fn remove_temp_files(out: &Path) -> anyhow::Result<()> {
    let Ok(entries) = std::fs::read_dir(out) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if name.to_string_lossy().starts_with(store::TEMP_PREFIX) && entry.path().is_file() {
            std::fs::remove_file(entry.path())
                .with_context(|| format!("removing {}", entry.path().display()))?;
        }
    }
    Ok(())
}

/// `x` with four significant digits.
fn significant(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return x.to_string();
    }
    let digits = 3 - x.abs().log10().floor() as i32;
    format!("{x:.*}", digits.clamp(0, 12) as usize)
}
