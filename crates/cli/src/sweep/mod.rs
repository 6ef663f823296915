//! `hugemm sweep FILE`: an experiment run over a grid of configuration values (the
//! file's `[sweep]` table), its points in parallel, resumably, into one results table
//! (`results.csv`, `results.parquet`) and a plot; or, with `--emit-tasks DIR`, written
//! out as one self-contained task per point for a cluster scheduler. `docs/sweeps.md` is
//! the user's guide.
//!
//! A grid point is a list of [`Override`]s, the `--set` ones and then one per swept key,
//! so every point is validated exactly as `hugemm run --set` would validate it, and every
//! point is validated before any runs. The parts: [`grid`] reads the `[sweep]` table,
//! [`store`] keeps the finished points' directories, [`table`] and [`figure`] turn them
//! into the results, `run` runs the points and `tasks` writes the cluster tasks. Signal
//! handling and exit codes stay in `main.rs`.

pub mod figure;
pub mod grid;
mod run;
pub mod store;
pub mod table;
mod tasks;

use crate::config::locate::{did_you_mean, Spans};
use crate::config::raw::RawExperiment;
use crate::config::{self, ConfigError, Override};
use crate::provenance::Provenance;
use anyhow::Context;
use grid::{Grid, PlotSpec};
use hugemm_sim::{Experiment, StopFlag, StopReason};
use std::path::{Path, PathBuf};

/// Long help of `hugemm sweep`: an example.
pub const EXAMPLE: &str = "\
Example: a sweep file is an experiment file plus a [sweep] table of configuration keys
(by their dotted path, as --set takes them), each with an array of values; the grid is
every combination, the first key varying slowest:

    [sweep]
    \"policy.linux.enabled\" = [\"never\", \"always\"]
    \"process[0].phase[0].size\" = [\"16MiB\", \"64MiB\", \"256MiB\", \"1GiB\"]
    plot = { x = \"process[0].phase[0].size\", y = \"gups.runtime_s\" }

    hugemm sweep examples/sweeps/thp-by-footprint.toml --jobs 2
    hugemm sweep examples/sweeps/thp-by-footprint.toml --emit-tasks tasks   # Slurm, Ray

It writes DIR/points/<index>-<hash>/ per point (as `hugemm run` would), then
DIR/results.csv, DIR/results.parquet and DIR/plot.svg (.png). Stopped (Ctrl-C, SIGTERM,
or killed), it keeps every finished point: run the same command again to resume.
See docs/sweeps.md.";

/// The arguments of `hugemm sweep`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The sweep file: an experiment file (TOML) with a [sweep] table.
    pub file: PathBuf,
    /// Output directory (default: results/sweeps/<file stem>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Override a key of the file for every point: `--set key.path=value` (repeatable),
    /// as `hugemm run` takes it; it may not name a swept key.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<config::Override>,
    /// Points run at once (default: every core). The results are the same whatever N.
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,
    /// The swept key along the plot's x axis (default: the file's `plot.x`, else the
    /// first swept key).
    #[arg(long, value_name = "KEY")]
    pub plot_x: Option<String>,
    /// The results column along the plot's y axis, e.g. `app.runtime_s` (default: the
    /// file's `plot.y`, else the first process's runtime_s).
    #[arg(long, value_name = "COLUMN")]
    pub plot_y: Option<String>,
    /// Run nothing: write one self-contained task per point into DIR (a new or empty
    /// directory), with a Slurm job-array script and `run-task.sh N`, whose results the
    /// same `hugemm sweep` command then gathers.
    #[arg(long, value_name = "DIR")]
    pub emit_tasks: Option<PathBuf>,
}

/// How a sweep ended: what to print on stdout, and the signal that stopped it, if one
/// did (its points are kept; the tables are not written).
pub struct Outcome {
    /// For stdout.
    pub report: String,
    /// SIGINT or SIGTERM, when one stopped the sweep.
    pub stopped: Option<StopReason>,
}

/// What follows a sweep: its lines for stderr, and (for a progress bar) how many points
/// it is to run and each one done.
pub trait Log: Sync {
    /// A line for stderr.
    fn line(&self, line: &str);

    /// The sweep is about to run `points` points.
    fn to_run(&self, _points: usize) {}

    /// One more point is done.
    fn point_done(&self) {}
}

/// A function of the line is a log that shows no bar.
impl<F: Fn(&str) + Sync> Log for F {
    fn line(&self, line: &str) {
        self(line)
    }
}

/// `hugemm sweep`: checks every point, then runs the sweep (stopping when `stop` is
/// raised) or writes its tasks. `log` takes progress lines for stderr.
pub fn main(args: &Args, stop: &StopFlag, log: &dyn Log) -> anyhow::Result<Outcome> {
    let provenance = Provenance::of_this_process()?;
    let plot = PlotSpec {
        x: args.plot_x.clone(),
        y: args.plot_y.clone(),
    };
    let sweep = Sweep::load(&args.file, &args.set, &plot)?;
    for note in &sweep.notes {
        log.line(note);
    }
    let out = args.out.clone().unwrap_or_else(|| {
        Path::new("results/sweeps").join(args.file.file_stem().unwrap_or_default())
    });
    if let Some(dir) = &args.emit_tasks {
        let report = tasks::emit(&sweep, dir, &out, &provenance)?;
        return Ok(Outcome {
            report,
            stopped: None,
        });
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.jobs.map_or(0, usize::from))
        .build()
        .context("starting the thread pool")?;
    pool.install(|| sweep.run(&out, stop, &provenance, log))
}

/// A sweep file, read and every point validated.
pub struct Sweep {
    /// The file, as errors name it.
    pub file: String,
    /// Its grid.
    pub grid: Grid,
    /// The `--set` overrides every point applies.
    pub set: Vec<Override>,
    /// The points, in grid order.
    pub points: Vec<Point>,
    /// The parameter along the plot's x axis (index into the grid's parameters).
    pub plot_x: usize,
    /// The results column along its y axis.
    pub plot_y: String,
    /// Notes on the file's keys, for stderr (deprecated names).
    pub notes: Vec<String>,
}

/// One point of the grid, validated.
pub struct Point {
    /// Position in the grid.
    pub index: usize,
    /// Its directory's name: `<index>-<hash of config>`.
    pub id: String,
    /// Each parameter's value, as an index into its values.
    pub picks: Vec<usize>,
    /// The overrides that make it (`--set` ones, then one per swept key).
    pub overrides: Vec<Override>,
    /// The experiment to run.
    pub experiment: Experiment,
    /// Its resolved configuration.
    pub resolved: RawExperiment,
    /// That configuration as TOML (what the id hashes).
    pub config: String,
    /// Its processes' names, in order (the columns of its metrics).
    pub processes: Vec<String>,
}

impl Sweep {
    /// Reads `path`, applies `set` and validates every grid point; `plot` (the command
    /// line's) takes precedence over the file's plot.
    pub fn load(path: &Path, set: &[Override], plot: &PlotSpec) -> anyhow::Result<Sweep> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|error| ConfigError::Io {
            file: file.clone(),
            error,
        })?;
        let grid = Grid::parse(&text, &file)?;
        no_swept_key_in(set, &grid, &file)?;
        let width = (grid.len() - 1).to_string().len().max(3);
        let mut points = Vec::with_capacity(grid.len());
        let mut notes = Vec::new();
        for index in 0..grid.len() {
            let (point, point_notes) =
                Point::load(&grid, index, width, set, path).with_context(|| {
                    format!(
                        "sweep point {index} of {} ({})",
                        grid.len(),
                        describe(&grid, &grid.point(index))
                    )
                })?;
            if index == 0 {
                notes = point_notes;
            }
            points.push(point);
        }
        let mut sweep = Sweep {
            file,
            grid,
            set: set.to_vec(),
            points,
            plot_x: 0,
            plot_y: String::new(),
            notes,
        };
        sweep.choose_plot(&text, plot)?;
        Ok(sweep)
    }

    /// The plot's axes: the command line's, else the file's, else the first swept key
    /// and the first process's runtime; each checked against the grid and the columns.
    fn choose_plot(&mut self, text: &str, flags: &PlotSpec) -> Result<(), ConfigError> {
        let keys: Vec<&str> = self
            .grid
            .parameters
            .iter()
            .map(|p| p.key.as_str())
            .collect();
        if let Some(x) = flags.x.as_ref().or(self.grid.plot.x.as_ref()) {
            let found = keys.iter().position(|k| k == x);
            self.plot_x = found.ok_or_else(|| {
                let expected = format!(
                    "one of the swept keys, {}, found \"{x}\"{}",
                    keys.join(", "),
                    hint(x, &keys)
                );
                self.plot_error(text, "x", flags.x.as_ref(), expected)
            })?;
        }
        let mut columns = std::collections::BTreeSet::new();
        for p in &self.points {
            columns.extend(table::metric_columns(&p.processes));
        }
        let processes = &self.points[0].processes;
        let default = processes
            .first()
            .map_or("system.sim_time_s".to_string(), |p| {
                format!("{p}.runtime_s")
            });
        let y = flags
            .y
            .clone()
            .or(self.grid.plot.y.clone())
            .unwrap_or(default);
        if !columns.contains(&y) {
            let names: Vec<&str> = columns.iter().map(String::as_str).collect();
            let expected = format!(
                "a column of the results: {}, found \"{y}\"{}",
                table::describe_columns(processes),
                hint(&y, &names)
            );
            return Err(self.plot_error(text, "y", flags.y.as_ref(), expected));
        }
        self.plot_y = y;
        Ok(())
    }

    /// An error about the plot's `axis`: naming the `--plot-<axis>` flag when the value
    /// came from it (`flag`, its value), else pointing at its place in the file `text`.
    fn plot_error(
        &self,
        text: &str,
        axis: &str,
        flag: Option<&String>,
        expected: String,
    ) -> ConfigError {
        let key = format!("sweep.plot.{axis}");
        let (file, at) = match flag {
            Some(value) => (format!("{} (--plot-{axis} {value})", self.file), None),
            None => {
                let at = Spans::new(text).locate(&key);
                (
                    self.file.clone(),
                    at.map(|(line, col)| config::Pos { line, col }),
                )
            }
        };
        ConfigError::Invalid {
            file,
            at,
            key,
            expected,
        }
    }

    /// The grid's values of point `index`, as `key=value, ...`.
    pub fn describe(&self, index: usize) -> String {
        describe(&self.grid, &self.points[index].picks)
    }
}

fn hint(found: &str, names: &[&str]) -> String {
    did_you_mean(found, names)
        .map(|n| format!(" (did you mean \"{n}\"?)"))
        .unwrap_or_default()
}

/// `key=value, ...` of a point's swept values.
fn describe(grid: &Grid, picks: &[usize]) -> String {
    let parts: Vec<String> = grid
        .parameters
        .iter()
        .zip(picks)
        .map(|(p, &v)| format!("{}={}", p.key, p.values[v].scalar))
        .collect();
    parts.join(", ")
}

/// A `--set` may not name a swept key (or a table holding one, or a key inside one):
/// which value would the point have?
fn no_swept_key_in(set: &[Override], grid: &Grid, file: &str) -> Result<(), ConfigError> {
    for o in set {
        if let Some(p) = grid
            .parameters
            .iter()
            .find(|p| o.covers(&p.key) || p.values[0].set.covers(&o.key()))
        {
            return Err(ConfigError::Invalid {
                file: format!("{file} (--set {o})"),
                at: None,
                key: o.key(),
                expected: format!(
                    "a key the sweep does not vary, but [sweep] sweeps `{}`: set its values \
                     there",
                    p.key
                ),
            });
        }
    }
    Ok(())
}

impl Point {
    /// Point `index` of `grid`, validated as `hugemm run --set` would validate it, with
    /// the notes on its keys; `width` is the digits of its index in its id.
    fn load(
        grid: &Grid,
        index: usize,
        width: usize,
        set: &[Override],
        path: &Path,
    ) -> anyhow::Result<(Point, Vec<String>)> {
        let file = path.display().to_string();
        let picks = grid.point(index);
        let mut overrides = set.to_vec();
        overrides.extend(
            grid.parameters
                .iter()
                .zip(&picks)
                .map(|(p, &v)| p.values[v].set.clone()),
        );
        let loaded =
            config::parse_with(&grid.experiment, &file, config::base_dir(path), &overrides)
                .map_err(|e| at_grid_value(e, &file, grid, &picks))?;
        if loaded.resolved.reproduce.is_some() {
            return Err(ConfigError::Invalid {
                file,
                at: None,
                key: "reproduce".into(),
                expected: "no [reproduce] table in a sweep file (run reproductions with \
                           `hugemm reproduce`)"
                    .into(),
            }
            .into());
        }
        let config =
            toml::to_string(&loaded.resolved).context("serialising the resolved configuration")?;
        let point = Point {
            index,
            id: format!("{index:0width$}-{}", store::config_hash(&config)),
            picks,
            overrides,
            processes: loaded
                .experiment
                .processes
                .iter()
                .map(|p| p.name.clone())
                .collect(),
            experiment: loaded.experiment,
            resolved: loaded.resolved,
            config,
        };
        Ok((point, loaded.notes))
    }
}

/// An error the configuration found in a swept value (which it names as the `--set`
/// argument the value became) pointed at the value in `[sweep]` instead.
fn at_grid_value(mut err: ConfigError, file: &str, grid: &Grid, picks: &[usize]) -> ConfigError {
    if let ConfigError::Parse { file: f, at, .. } | ConfigError::Invalid { file: f, at, .. } =
        &mut err
    {
        for (p, &v) in grid.parameters.iter().zip(picks) {
            let value = &p.values[v];
            if *f == format!("{file} (--set {})", value.set) {
                *f = file.to_string();
                *at = value.at;
            }
        }
    }
    err
}
