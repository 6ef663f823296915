//! Progress on stderr: on a terminal, indicatif bars (a reproduction's runs done out of
//! its runs, with the elapsed time and an ETA from the runs done so far, and under it a
//! line per run in flight with its simulated time and how fast it goes); elsewhere (a
//! log, CI), one plain line per run as it starts; with `--quiet`, nothing.
//!
//! A run's own length is not known before it ends (its processes run until their work
//! is done), so a run gets a spinner, not a bar: the ETA is per reproduction, counted in
//! runs.

use crate::reproduce::Watch;
use hugemm_sim::{TimeseriesRow, TimeseriesSink};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// How progress is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Bars (stderr is a terminal).
    Bars,
    /// A line per run (stderr is a file or a pipe).
    Lines,
    /// Nothing (`--quiet`).
    Quiet,
}

impl Mode {
    /// Bars on a terminal, lines elsewhere, nothing when `quiet`.
    pub fn detect(quiet: bool) -> Mode {
        if quiet {
            Mode::Quiet
        } else if std::io::stderr().is_terminal() {
            Mode::Bars
        } else {
            Mode::Lines
        }
    }
}

/// The progress display of a command.
pub struct Display {
    mode: Mode,
    bars: MultiProgress,
}

impl Display {
    /// A display in `mode`.
    pub fn new(mode: Mode) -> Display {
        let target = if mode == Mode::Bars {
            ProgressDrawTarget::stderr_with_hz(4)
        } else {
            ProgressDrawTarget::hidden()
        };
        Display {
            mode,
            bars: MultiProgress::with_draw_target(target),
        }
    }

    /// Print `line` to stderr above the bars (or plainly), unless quiet.
    pub fn note(&self, line: &str) {
        match self.mode {
            Mode::Bars => self.bars.suspend(|| eprintln!("{line}")),
            Mode::Lines => eprintln!("{line}"),
            Mode::Quiet => {}
        }
    }

    /// A bar of `runs` runs for `name` (a reproduction file), and the watcher of its runs
    /// (each run's line says `prefix: what` when `prefix` is given).
    pub fn reproduction(&self, name: &str, runs: u64, prefix: Option<&str>) -> RunsWatcher<'_> {
        let bar = (self.mode == Mode::Bars).then(|| {
            let bar = self.bars.add(ProgressBar::new(runs));
            bar.set_style(
                ProgressStyle::with_template(
                    "{prefix:.bold} [{bar:30.cyan/blue}] {pos}/{len} runs, {elapsed} elapsed, ETA {eta}",
                )
                .expect("a valid template")
                .progress_chars("=> "),
            );
            bar.set_prefix(name.to_string());
            bar.enable_steady_tick(Duration::from_millis(250));
            bar
        });
        RunsWatcher {
            display: self,
            bar,
            prefix: prefix.map(String::from),
        }
    }

    /// A spinner for a single run (`hugemm run`), fed by the returned watcher.
    pub fn run(&self, what: &str) -> Option<Box<dyn TimeseriesSink>> {
        match self.mode {
            Mode::Bars => Some(Box::new(RunSpinner::new(&self.bars, what, None))),
            Mode::Lines | Mode::Quiet => None,
        }
    }
}

/// Follows the runs of one reproduction.
pub struct RunsWatcher<'a> {
    display: &'a Display,
    bar: Option<ProgressBar>,
    prefix: Option<String>,
}

impl RunsWatcher<'_> {
    /// The reproduction is done: its bar goes.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Watch for RunsWatcher<'_> {
    fn start(&self, what: &str) -> Option<Box<dyn TimeseriesSink>> {
        let what = match &self.prefix {
            Some(p) => format!("{p}: {what}"),
            None => what.to_string(),
        };
        match self.display.mode {
            Mode::Bars => Some(Box::new(RunSpinner::new(
                &self.display.bars,
                &what,
                self.bar.clone(),
            ))),
            Mode::Lines => {
                eprintln!("reproduce: {what} ...");
                None
            }
            Mode::Quiet => None,
        }
    }
}

/// The line of a run in flight: its simulated time and simulated seconds per second of
/// wall time; when it ends (the engine drops it), it goes and its reproduction's bar
/// counts one more run.
struct RunSpinner {
    spinner: ProgressBar,
    runs: Option<ProgressBar>,
    started: Instant,
}

impl RunSpinner {
    fn new(bars: &MultiProgress, what: &str, runs: Option<ProgressBar>) -> RunSpinner {
        let spinner = bars.add(ProgressBar::new_spinner());
        spinner.set_style(
            ProgressStyle::with_template("  {spinner} {prefix} {msg}").expect("a valid template"),
        );
        spinner.set_prefix(what.to_string());
        spinner.set_message("starting");
        spinner.enable_steady_tick(Duration::from_millis(250));
        RunSpinner {
            spinner,
            runs,
            started: Instant::now(),
        }
    }
}

impl TimeseriesSink for RunSpinner {
    fn write(&mut self, rows: &[TimeseriesRow]) -> std::io::Result<()> {
        if let Some(row) = rows.last() {
            let sim = row.time_ns as f64 / 1e9;
            let wall = self.started.elapsed().as_secs_f64().max(1e-3);
            self.spinner.set_message(format!(
                "simulated {sim:.1} s ({:.1} simulated s per s)",
                sim / wall
            ));
        }
        Ok(())
    }
}

impl Drop for RunSpinner {
    fn drop(&mut self) {
        self.spinner.finish_and_clear();
        if let Some(runs) = &self.runs {
            runs.inc(1);
        }
    }
}

/// Follows a sweep: its lines above a bar of its points done, with an ETA (on a
/// terminal), or plainly (elsewhere), or not at all (quiet).
pub struct SweepLog<'a> {
    display: &'a Display,
    bar: Option<ProgressBar>,
}

impl Display {
    /// The log of a sweep of `name` (its file).
    pub fn sweep(&self, name: &str) -> SweepLog<'_> {
        let bar = (self.mode == Mode::Bars).then(|| {
            let bar = self.bars.add(ProgressBar::new(0));
            bar.set_style(
                ProgressStyle::with_template(
                    "{prefix:.bold} [{bar:30.cyan/blue}] {pos}/{len} points, {elapsed} elapsed, ETA {eta}",
                )
                .expect("a valid template")
                .progress_chars("=> "),
            );
            bar.set_prefix(name.to_string());
            bar
        });
        SweepLog { display: self, bar }
    }
}

impl SweepLog<'_> {
    /// The sweep is over: its bar goes.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl crate::sweep::Log for SweepLog<'_> {
    fn line(&self, line: &str) {
        self.display.note(line);
    }

    fn to_run(&self, points: usize) {
        if let Some(bar) = &self.bar {
            bar.set_length(points as u64);
            bar.reset_eta();
            bar.enable_steady_tick(Duration::from_millis(250));
        }
    }

    fn point_done(&self) {
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
    }
}
