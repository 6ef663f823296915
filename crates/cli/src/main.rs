//! The `hugemm` binary: argument parsing and exit codes. Exit code 2 means bad input
//! (command line or experiment file), 1 a failure while running; a `hugemm run` stopped
//! by SIGINT (Ctrl-C) or SIGTERM writes its partial results and exits 130 or 143, the
//! shell's codes for those signals.

use anyhow::Context;
use clap::{Parser, Subcommand};
use hugemm_cli::provenance::Provenance;
use hugemm_cli::{bench, config, demo, progress, report, reproduce, sweep};
use std::io::Write;
use std::path::{Path, PathBuf};

/// `println!` that returns an error when stdout is gone (its reader closed the pipe, as
/// `hugemm demo | head` does) instead of panicking.
macro_rules! outln {
    ($($t:tt)*) => { writeln!(std::io::stdout(), $($t)*)? };
}

/// `print!`, likewise.
macro_rules! out {
    ($($t:tt)*) => { write!(std::io::stdout(), $($t)*)? };
}
use hugemm_hw::Nanos;
use hugemm_sim::{StopFlag, StopReason};
use rayon::prelude::*;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// hugemm: a model kernel for huge-page and tiered-memory management policies.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Print nothing but errors and notes: no progress, no report on stdout (the
    /// results are written all the same).
    #[arg(long, short = 'q', global = true)]
    quiet: bool,
    /// Print one JSON document on stdout saying what was done and where the results
    /// are, instead of text (for scripts).
    #[arg(long, global = true)]
    json: bool,
}

/// What a command prints, from `--quiet` and `--json`.
#[derive(Clone, Copy)]
struct Print {
    quiet: bool,
    json: bool,
}

impl Print {
    /// Whether to print text reports on stdout.
    fn text(self) -> bool {
        !self.quiet && !self.json
    }

    /// Print `value` as JSON on stdout if asked to.
    fn json(self, value: &impl serde::Serialize) -> anyhow::Result<()> {
        if self.json {
            outln!("{}", serde_json::to_string_pretty(value)?);
        }
        Ok(())
    }
}

#[derive(Subcommand)]
enum Command {
    /// Run an experiment file and write its results.
    #[command(
        after_help = "Examples:\n  hugemm run examples/random-4g.toml                      # results in results/random-4g\n  \
                            hugemm run examples/random-4g.toml --set policy.name=hawkeye --out results/hawkeye\n  \
                            hugemm run examples/random-4g.toml --json | jq .summary.processes"
    )]
    Run {
        /// The experiment file (TOML).
        file: PathBuf,
        /// Output directory (default: results/<file stem>).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Override the file's seed.
        #[arg(long)]
        seed: Option<u64>,
        /// Override a key of the file: `--set key.path=value` (repeatable), e.g.
        /// `--set policy.name=hawkeye` or `--set process[0].count=2`; checked like the
        /// file and written into the resolved configuration.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<config::Override>,
        /// Also write the model's physical memory every SECONDS of simulated time (at
        /// the first sample after each multiple, and at the end) as /proc/kpageflags
        /// files in OUT/frame-maps/, for tools/linux-4.1-guest/layout.py. 8 bytes a
        /// frame before gzip. Not for experiments with virtual machines.
        #[arg(long, value_name = "SECONDS", value_parser = positive_seconds)]
        frame_maps: Option<Nanos>,
    },
    /// Run a reproduction of a paper's experiment (a file under experiments/), writing
    /// reproduction.json, report.md and report.html with figures.
    #[command(
        after_help = "Examples:\n  hugemm reproduce --list                                 # what there is, and how long it takes\n  \
                            hugemm reproduce experiments/hawkeye/table8.toml        # results/table8/report.html\n  \
                            hugemm reproduce experiments                            # everything; results/index.html\n  \
                            hugemm reproduce experiments/apsys16 --jobs 1 --quiet"
    )]
    Reproduce {
        /// Reproduction files (TOML with a [reproduce] table), or directories standing
        /// for the *.toml files in them (e.g. experiments/apsys16), run in order.
        #[arg(required_unless_present = "list")]
        paths: Vec<PathBuf>,
        /// List the reproductions PATHS stand for (default: experiments) with their
        /// paper item, runs and typical wall time; run nothing.
        #[arg(long)]
        list: bool,
        /// Output directory (default: results/<file stem>); with several files or a
        /// directory, each file writes to DIR/<file stem>.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Override the file's seed.
        #[arg(long)]
        seed: Option<u64>,
        /// Override a key of the file: `--set key.path=value` (repeatable), e.g.
        /// `--set policy.name=hawkeye` or `--set process[0].count=2`; checked like the
        /// file and written into the resolved configuration.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<config::Override>,
        /// Runs at once: the variants and sets of a reproduction, and the files of a
        /// directory, run in parallel on this many threads (default: every core). The
        /// results are the same whatever N.
        #[arg(long, short = 'j', value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
        jobs: Option<u16>,
    },
    /// Make a page of a run's output: report.md, report.html and figures of its time
    /// series (per process and for the system), written into the directory.
    #[command(
        after_help = "Example:\n  hugemm run examples/random-4g.toml --out results/random\n  \
                            hugemm report results/random    # writes results/random/report.html"
    )]
    Report {
        /// A run's output directory (`hugemm run --out DIR`, or a reproduction's
        /// runs/<set>/<variant>).
        dir: PathBuf,
    },
    /// Put runs side by side: one table of their summaries with ratios to the first, and
    /// their time series overlaid (compare.md, compare.html, figures).
    #[command(
        after_help = "Example:\n  hugemm run examples/random-4g.toml --out results/never --set policy.linux.enabled=never\n  \
                            hugemm run examples/random-4g.toml --out results/always --set policy.linux.enabled=always\n  \
                            hugemm compare results/never results/always --out results/never-vs-always"
    )]
    Compare {
        /// Run output directories (two or more); the first is the baseline of the ratios.
        #[arg(required = true, num_args = 2..)]
        dirs: Vec<PathBuf>,
        /// Where to write the comparison (default: results/compare).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Run an experiment over a grid of configuration values (its [sweep] table), in
    /// parallel and resumably, into one results table (CSV, Parquet) and a plot.
    #[command(after_long_help = sweep::EXAMPLE)]
    Sweep(sweep::Args),
    /// Run the built-in comparison: a TLB-hungry program under THP never vs always.
    #[command(after_help = "Example:\n  hugemm demo --seed 2")]
    Demo {
        /// Seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Measure the simulator's throughput.
    #[command(
        after_help = "Example:\n  hugemm bench --reps 5          # medians of 5 repetitions\n  \
                            hugemm bench --json > bench.json\n  \
                            hugemm bench --figure kbuild   # one figure alone"
    )]
    Bench {
        /// Repetitions behind each median.
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
        reps: u32,
        /// Measure this figure alone, in this process (without it, every figure runs in a
        /// process of its own).
        #[arg(long, value_enum)]
        figure: Option<bench::Figure>,
    },
    /// Run the live agent: a promotion policy (HawkEye, khugepaged's or Ingens' order)
    /// applied to processes of this host with process_madvise(MADV_COLLAPSE); or, with
    /// --simulate, the same agent in the model kernel.
    #[command(after_help = hugemm_cli::agent::EXAMPLES)]
    Agent(Box<hugemm_cli::agent::Args>),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let print = Print {
        quiet: cli.quiet,
        json: cli.json,
    };
    let ok = |r: anyhow::Result<()>| r.map(|()| ExitCode::SUCCESS);
    let result = match cli.command {
        Command::Run {
            file,
            out,
            seed,
            set,
            frame_maps,
        } => run(file, out, seed, &set, frame_maps, print),
        Command::Reproduce {
            paths, list: true, ..
        } => ok(run_list(&paths, print)),
        Command::Reproduce {
            paths,
            out,
            seed,
            set,
            jobs,
            ..
        } => ok(run_reproduce(&paths, out, seed, &set, jobs, print)),
        Command::Report { dir } => ok(run_report(&dir, print)),
        Command::Compare { dirs, out } => ok(run_compare(&dirs, out, print)),
        Command::Demo { seed } => ok(run_demo(seed, print)),
        Command::Bench { reps, figure } => ok(run_bench(print, reps, figure)),
        Command::Sweep(args) => run_sweep(&args, print),
        Command::Agent(args) => run_agent(&args, print),
    };
    match result {
        Ok(code) => code,
        Err(e) if broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            if e.downcast_ref::<config::ConfigError>().is_some()
                || e.downcast_ref::<hugemm_cli::provenance::BadSourceDateEpoch>()
                    .is_some()
                || hugemm_cli::agent::is_bad_input(&e)
            {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}

/// The reader of our stdout went away: nothing left to tell anyone.
fn broken_pipe(e: &anyhow::Error) -> bool {
    e.downcast_ref::<std::io::Error>()
        .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
}

/// Print a loaded file's notes (deprecated key names) to stderr.
fn print_notes(loaded: &config::Loaded) {
    for note in &loaded.notes {
        eprintln!("{note}");
    }
}

/// Raise `stop` on SIGINT and SIGTERM, so that the run ends at its next event and writes
/// what it has; a second signal of the same kind ends the process at once, with the
/// shell's code for it (130, 143), for when writing takes too long.
fn stop_on_signals(stop: &StopFlag) -> anyhow::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    for (signal, reason, code) in [
        (SIGINT, StopReason::Interrupt, 130),
        (SIGTERM, StopReason::Terminate, 143),
    ] {
        let seen = Arc::new(AtomicBool::new(false));
        // Registered first, so it sees the flag as it was before this signal.
        signal_hook::flag::register_conditional_shutdown(signal, code, Arc::clone(&seen))
            .context("installing a signal handler")?;
        signal_hook::flag::register(signal, seen).context("installing a signal handler")?;
        signal_hook::flag::register_usize(signal, stop.atomic(), reason.code())
            .context("installing a signal handler")?;
    }
    Ok(())
}

fn run(
    file: PathBuf,
    out: Option<PathBuf>,
    seed: Option<u64>,
    set: &[config::Override],
    frame_maps: Option<Nanos>,
    print: Print,
) -> anyhow::Result<ExitCode> {
    let provenance = Provenance::of_this_process()?;
    let mut loaded = config::load_with(&file, set)?;
    print_notes(&loaded);
    if loaded.resolved.reproduce.is_some() {
        return Err(config::ConfigError::Invalid {
            file: file.display().to_string(),
            at: None,
            key: "reproduce".into(),
            expected: "no [reproduce] table in an experiment file (run reproductions with \
                       `hugemm reproduce`)"
                .into(),
        }
        .into());
    }
    if let Some(s) = seed {
        loaded.experiment.seed = s;
        loaded.resolved.sim.seed = Some(s as i64);
    }
    let out =
        out.unwrap_or_else(|| PathBuf::from("results").join(file.file_stem().unwrap_or_default()));
    if !loaded.vms.is_empty() {
        if frame_maps.is_some() {
            anyhow::bail!(
                "--frame-maps: {} has virtual machines ([[vm]]); frame maps are written \
                 for bare-metal experiments only",
                file.display()
            );
        }
        return run_hosted(&file, loaded, &out, print, &provenance);
    }
    run_loaded(&file, loaded, &out, frame_maps, print, &provenance)
}

/// A `--frame-maps` value: a positive, finite number of seconds.
fn positive_seconds(s: &str) -> Result<Nanos, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v * 1e9 < u64::MAX as f64 => {
            Ok(Nanos((v * 1e9).round().max(1.0) as u64))
        }
        _ => Err(format!("expected a positive number of seconds, got '{s}'")),
    }
}

/// Run a loaded bare-metal experiment and write its results to `out`.
fn run_loaded(
    file: &Path,
    loaded: config::Loaded,
    out: &Path,
    frame_maps: Option<Nanos>,
    print: Print,
    provenance: &Provenance,
) -> anyhow::Result<ExitCode> {
    let time_limit_s = loaded.experiment.time_limit.0 as f64 / 1e9;
    let stop = StopFlag::new();
    stop_on_signals(&stop)?;
    let mut engine = hugemm_sim::Engine::new(loaded.experiment)?;
    engine.stream_timeseries(Box::new(report::TimeseriesWriter::new(
        out.join("timeseries.csv"),
    )));
    if let Some(every) = frame_maps {
        let writer = hugemm_cli::framemap::FrameMapWriter::new(out.join("frame-maps"));
        engine.watch_frame_maps(every, Box::new(writer));
    }
    engine.stop_on(stop);
    let display = progress::Display::new(progress::Mode::detect(print.quiet));
    if let Some(spinner) = display.run(&file.display().to_string()) {
        engine.watch_samples(spinner);
    }
    let result = engine.run().context("running the experiment")?;
    report::write_dir(out, &loaded.resolved, &result, provenance)?;
    let summary = &result.summary;
    let at = summary.system.sim_time_ns as f64 / 1e9;
    let code = match summary.stopped_by {
        None => ExitCode::SUCCESS,
        Some(StopReason::TimeLimit) => {
            eprintln!(
                "note: the run reached its time limit (sim.time_limit_s = {time_limit_s}) with \
                 processes left; summary.json says \"complete\": false"
            );
            ExitCode::SUCCESS
        }
        Some(why @ (StopReason::Interrupt | StopReason::Terminate)) => {
            let (what, code) = match why {
                StopReason::Interrupt => ("interrupted (SIGINT)", 130),
                _ => ("terminated (SIGTERM)", 143),
            };
            eprintln!(
                "hugemm: {what} at simulated {at:.3} s; partial results written to {} \
                 (summary.json says \"complete\": false)",
                out.display()
            );
            ExitCode::from(code)
        }
    };
    if print.text() {
        out!("{}", report::table(summary));
        outln!("results written to {}", out.display());
    }
    print.json(&serde_json::json!({"out": out, "summary": summary}))?;
    Ok(code)
}

/// `hugemm agent`: live until a stop condition, or `--simulate FILE` in the model.
fn run_agent(args: &hugemm_cli::agent::Args, print: Print) -> anyhow::Result<ExitCode> {
    use hugemm_cli::agent;
    agent::init_logs(args.log_format, args.log_level);
    if let Some(file) = &args.simulate {
        return run_agent_simulated(args, file, print);
    }
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .context("installing a signal handler")?;
    }
    let summary = agent::run_live(args, stop)?;
    if print.text() {
        out!("{}", agent::summary_text(&summary));
    }
    print.json(&summary)?;
    Ok(ExitCode::SUCCESS)
}

/// `hugemm agent --simulate FILE`: FILE's processes run in the model kernel, FILE's Linux
/// kernel deciding faults and running its khugepaged, and the agent's promoter beside it
/// (every process of FILE is a target). Results as `hugemm run` writes them, plus
/// `OUT/agent.json`: the agent that ran.
fn run_agent_simulated(
    args: &hugemm_cli::agent::Args,
    file: &Path,
    print: Print,
) -> anyhow::Result<ExitCode> {
    let cfg = hugemm_cli::agent::resolve(args)?;
    if args.once || args.duration.is_some() || args.metrics.is_some() {
        return Err(hugemm_cli::agent::UsageError(
            "--once, --duration and --metrics apply to the live agent, not to --simulate \
             (the experiment file's processes and time limit decide how long it runs)"
                .into(),
        )
        .into());
    }
    if !cfg.pids.is_empty() || cfg.name.is_some() || cfg.cgroup.is_some() {
        eprintln!(
            "note: --simulate targets every process of {}; the configured targets are not used",
            file.display()
        );
    }
    let provenance = Provenance::of_this_process()?;
    let mut loaded = config::load(file)?;
    print_notes(&loaded);
    if loaded.resolved.reproduce.is_some() || !loaded.vms.is_empty() {
        return Err(hugemm_cli::agent::UsageError(format!(
            "{}: --simulate runs a bare-metal experiment file (no [reproduce] table, no [[vm]] tables)",
            file.display()
        ))
        .into());
    }
    let kernel = match &loaded.experiment.policy {
        hugemm_policy::PolicyConfig::Linux(k) => *k,
        _ => {
            return Err(config::ConfigError::Invalid {
                file: file.display().to_string(),
                at: None,
                key: "policy.name".into(),
                expected: "\"linux\" with --simulate: the file's policy is the host kernel the \
                           agent runs beside (its THP mode decides faults; the agent only collapses)"
                    .into(),
            }
            .into())
        }
    };
    let agent = cfg.policy(kernel);
    loaded.experiment.policy = hugemm_policy::PolicyConfig::Agent(Box::new(agent.clone()));
    let stem = file.file_stem().unwrap_or_default().to_string_lossy();
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("results").join(format!("agent-{stem}")));
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    std::fs::write(
        out.join("agent.json"),
        serde_json::to_string_pretty(&agent)?,
    )
    .with_context(|| format!("writing {}", out.join("agent.json").display()))?;
    run_loaded(file, loaded, &out, None, print, &provenance)
}

/// `hugemm run` of a file with `[[vm]]` tables: the machine hosts the VMs
/// (`docs/virtualization.md`). Writes the host's run to `OUT/host/` and each VM's guest to
/// `OUT/vm-NAME/` (each as a plain run's directory), and `OUT/vms.json`: what each VM
/// cost the host.
fn run_hosted(
    file: &Path,
    loaded: config::Loaded,
    out: &Path,
    print: Print,
    provenance: &Provenance,
) -> anyhow::Result<ExitCode> {
    if let Some(i) = loaded.vms.iter().position(|v| v.layout.is_some()) {
        return Err(config::ConfigError::Invalid {
            file: file.display().to_string(),
            at: None,
            key: format!("vm[{i}].layout"),
            expected: "no layout in an experiment file (layouts are for reproductions, \
                       `hugemm reproduce`)"
                .into(),
        }
        .into());
    }
    let profile = loaded
        .guest_profile
        .as_ref()
        .context("validation gives [[vm]] tables a guest profile")?;
    let run: Vec<&config::vms::VmSpec> = loaded.vms.iter().collect();
    let (host, guests) = config::vms::hosted(&loaded.experiment, profile, &run, &loaded.vms);
    if print.text() {
        eprintln!(
            "run: {} with {} VM(s) under a host model (no progress display)",
            file.display(),
            guests.len()
        );
    }
    let result = loaded
        .host
        .apply(hugemm_sim::HostedRun::new(host, guests)?)
        .run()
        .context("running the experiment")?;
    report::write_dir(
        &out.join("host"),
        &loaded.resolved,
        &result.host,
        provenance,
    )?;
    let mut vms = Vec::new();
    for vm in &result.vms {
        report::write_dir(
            &out.join(format!("vm-{}", vm.name)),
            &loaded.resolved,
            &vm.guest,
            provenance,
        )?;
        vms.push(serde_json::json!({
            "name": vm.name,
            "host_fault_ns": vm.host_fault_ns,
            "host_huge_regions": vm.host_huge_regions,
            "host_backed_regions": vm.host_backed_regions,
            "host_flushes": vm.host_flushes,
            "host_rss_bytes": vm.host_rss_bytes,
            "balloon_bytes": vm.balloon_bytes,
            "host_balloon_ns": vm.host_balloon_ns,
            "reported_bytes": vm.reported_bytes,
            "ksm_merged_pages": vm.ksm_merged_pages,
            "ksm_unmerge_faults": vm.ksm_unmerge_faults,
            "swap_out_bytes": vm.swap.out_bytes,
            "swap_in_bytes": vm.swap.in_bytes,
            "swap_ins": vm.swap.ins,
            "swap_wait_ns": vm.swap.wait_ns,
            "complete": vm.guest.summary.stopped_by.is_none(),
        }));
    }
    let doc = serde_json::json!({
        "vms": vms,
        "ksm_cpu_ns": result.ksm_cpu_ns,
        "kswapd_swap_ns": result.kswapd_swap_ns,
    });
    std::fs::write(
        out.join("vms.json"),
        serde_json::to_string_pretty(&doc)? + "\n",
    )
    .with_context(|| format!("writing {}", out.join("vms.json").display()))?;
    if print.text() {
        outln!("host:");
        out!("{}", report::table(&result.host.summary));
        for vm in &result.vms {
            outln!(
                "VM {}: host backs {} of its 2 MB regions, {} with huge pages; host faults {:.1} ms",
                vm.name,
                vm.host_backed_regions,
                vm.host_huge_regions,
                vm.host_fault_ns as f64 / 1e6
            );
            out!("{}", report::table(&vm.guest.summary));
        }
        outln!("results written to {}", out.display());
    }
    print.json(&serde_json::json!({"out": out, "vms": doc["vms"]}))?;
    Ok(ExitCode::SUCCESS)
}

fn run_report(dir: &Path, print: Print) -> anyhow::Result<()> {
    let provenance = Provenance::of_this_process()?;
    let page = hugemm_cli::runs::report(dir, &provenance)?;
    if print.text() {
        outln!("report written to {}", page.display());
    }
    print.json(&serde_json::json!({ "page": page }))
}

fn run_compare(dirs: &[PathBuf], out: Option<PathBuf>, print: Print) -> anyhow::Result<()> {
    let provenance = Provenance::of_this_process()?;
    let out = out.unwrap_or_else(|| PathBuf::from("results/compare"));
    let page = hugemm_cli::runs::compare(dirs, &out, &provenance)?;
    if print.text() {
        outln!("comparison written to {}", page.display());
    }
    print.json(&serde_json::json!({ "page": page }))
}

fn run_list(paths: &[PathBuf], print: Print) -> anyhow::Result<()> {
    let default = [PathBuf::from("experiments")];
    let paths = if paths.is_empty() {
        &default[..]
    } else {
        paths
    };
    let listed = reproduce::list(paths)?;
    if print.text() {
        out!("{}", reproduce::list_table(&listed));
    }
    print.json(&listed)
}

fn run_reproduce(
    paths: &[PathBuf],
    out: Option<PathBuf>,
    seed: Option<u64>,
    set: &[config::Override],
    jobs: Option<u16>,
    print: Print,
) -> anyhow::Result<()> {
    let provenance = Provenance::of_this_process()?;
    if let Some(n) = jobs {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n.into())
            .build_global()
            .context("starting the thread pool")?;
    }
    let files = reproduce::files(paths)?;
    let dirs = reproduce::output_dirs(paths, &files, out.as_deref())?;
    // Every file is checked before any runs, so a mistake in the last one costs no time.
    let mut loaded = Vec::new();
    for file in &files {
        let mut r = reproduce::load_with(file, set)?;
        for note in &r.notes {
            eprintln!("{note}");
        }
        if let Some(s) = seed {
            r.experiment.seed = s;
            r.resolved.sim.seed = Some(s as i64);
        }
        loaded.push(r);
    }
    // Workloads several reproductions start from run once (reproduce/shared.rs).
    let shared = std::sync::Arc::new(reproduce::shared::SharedRuns::plan(&loaded));
    if !shared.is_empty() && print.text() {
        eprintln!(
            "reproduce: {} workload(s) shared between reproductions, each run once",
            shared.len()
        );
    }
    for r in &mut loaded {
        r.shared = shared.clone();
    }
    let started = std::time::Instant::now();
    // Every file at once (each parallel inside too); reports are printed and written in
    // file order once all have run.
    let several = files.len() > 1;
    let display = progress::Display::new(progress::Mode::detect(print.quiet));
    let reports: Vec<anyhow::Result<(reproduce::Report, f64)>> = loaded
        .par_iter()
        .zip(&files)
        .map(|(r, file)| {
            let stem = file.file_stem().unwrap_or_default().to_string_lossy();
            let watcher = display.reproduction(
                &file.display().to_string(),
                r.runs() as u64,
                several.then_some(&*stem),
            );
            let started = std::time::Instant::now();
            let report = reproduce::run(r, &watcher)
                .with_context(|| format!("reproducing {}", file.display()));
            watcher.finish();
            let wall_s = started.elapsed().as_secs_f64();
            if report.is_ok() && several {
                display.note(&format!(
                    "reproduce: {} done in {wall_s:.1} s",
                    file.display()
                ));
            }
            Ok((report?, wall_s))
        })
        .collect();
    let mut written = Vec::new();
    for (i, ((r, out), report)) in loaded.iter().zip(&dirs).zip(reports).enumerate() {
        if several && print.text() {
            outln!(
                "{}== {} ({} of {})\n",
                if i > 0 { "\n" } else { "" },
                files[i].display(),
                i + 1,
                files.len()
            );
        }
        let (report, wall_s) = report?;
        if print.text() {
            out!("{report}");
        }
        written.push(reproduce::output::write(
            out,
            &files[i],
            r,
            &report,
            wall_s,
            &provenance,
        )?);
        if print.text() {
            outln!(
                "\n(wall time {wall_s:.1} s) results written to {} (report: {})",
                out.display(),
                out.join("report.html").display()
            );
        }
    }
    let index = several.then(|| index_dir(&dirs));
    if let Some(root) = &index {
        reproduce::output::write_index(root, &written, &provenance)?;
        if print.text() {
            outln!(
                "\n{} reproductions in {:.1} s; index of every report: {}",
                files.len(),
                started.elapsed().as_secs_f64(),
                root.join("index.html").display()
            );
        }
    }
    print.json(&serde_json::json!({
        "reproductions": written.iter().map(|w| serde_json::json!({
            "file": w.file,
            "kind": w.kind,
            "paper": reproduce::output::paper_item(&w.kind),
            "dir": w.dir,
            "report": w.dir.join("report.html"),
            "claims": w.claims.len(),
            "claims_holding": w.claims.iter().filter(|c| c.holds == Some(true)).count(),
            "wall_s": w.wall_s,
        })).collect::<Vec<_>>(),
        "index": index.map(|root| root.join("index.html")),
    }))?;
    Ok(())
}

/// Where a directory run's index goes: the longest directory every result directory is
/// below (`results` for `results/apsys16/table1` and `results/hawkeye/fig5`).
fn index_dir(dirs: &[PathBuf]) -> PathBuf {
    let mut common: Option<PathBuf> = None;
    for dir in dirs {
        let parent = dir.parent().map(Path::to_path_buf).unwrap_or_default();
        common = Some(match common {
            None => parent,
            Some(c) => c
                .components()
                .zip(parent.components())
                .take_while(|(a, b)| a == b)
                .map(|(a, _)| a)
                .collect(),
        });
    }
    common.unwrap_or_default()
}

/// `hugemm sweep`: its logic is `sweep::main`'s; here, signals and exit codes (a sweep
/// stopped by SIGINT or SIGTERM keeps its finished points and exits 130 or 143).
fn run_sweep(args: &sweep::Args, print: Print) -> anyhow::Result<ExitCode> {
    let stop = StopFlag::new();
    if args.emit_tasks.is_none() {
        stop_on_signals(&stop)?;
    }
    let display = progress::Display::new(progress::Mode::detect(print.quiet));
    let log = display.sweep(&args.file.display().to_string());
    let outcome = sweep::main(args, &stop, &log);
    log.finish();
    let outcome = outcome?;
    if print.text() {
        out!("{}", outcome.report);
    }
    print.json(&serde_json::json!({
        "report": outcome.report,
        "stopped": outcome.stopped.map(|s| s.code()),
    }))?;
    Ok(match outcome.stopped {
        None => ExitCode::SUCCESS,
        Some(StopReason::Terminate) => ExitCode::from(143),
        Some(_) => ExitCode::from(130),
    })
}

fn run_demo(seed: u64, print: Print) -> anyhow::Result<()> {
    if !print.text() {
        let (never, always) = demo::run(seed)?;
        return print.json(&serde_json::json!({
            "never": never.summary,
            "always": always.summary,
        }));
    }
    outln!(
        "hugemm demo: a program randomly reading 4 GiB ({} dependent references) on {}",
        demo::REFS,
        demo::PROFILE
    );
    let (never, always) = demo::run(seed)?;
    outln!("\n== THP never ==");
    out!("{}", report::table(&never.summary));
    outln!("\n== THP always ==");
    out!("{}", report::table(&always.summary));
    let (n, a) = (&never.summary.processes[0], &always.summary.processes[0]);
    outln!(
        "\nTHP always vs never: runtime {:.3} s vs {:.3} s (speedup {:.2}x); MMU overhead {:.1}% vs {:.1}%; faults {} vs {}",
        a.runtime_ns as f64 / 1e9,
        n.runtime_ns as f64 / 1e9,
        n.runtime_ns as f64 / a.runtime_ns.max(1) as f64,
        a.mmu_overhead * 100.0,
        n.mmu_overhead * 100.0,
        a.faults_4k + a.faults_2m,
        n.faults_4k + n.faults_2m
    );
    Ok(())
}

fn run_bench(print: Print, reps: u32, figure: Option<bench::Figure>) -> anyhow::Result<()> {
    let json = print.json;
    if cfg!(debug_assertions) {
        eprintln!("warning: this is a debug build; measure with `cargo run --release -- bench`");
    }
    if let Some(figure) = figure {
        let values = figure.measure(reps)?;
        if json {
            outln!("{}", serde_json::to_string_pretty(&values)?);
        } else {
            for (k, v) in &values {
                outln!("{k} = {v} (median of {reps})");
            }
        }
        return Ok(());
    }
    let exe = std::env::current_exe()
        .map_err(|e| anyhow::anyhow!("finding this program to run each figure apart: {e}"))?;
    let r = bench::run(reps, &exe, |what| {
        if !print.quiet {
            eprintln!("bench: {what} ...")
        }
    })?;
    if json {
        outln!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        out!("{r}");
    }
    Ok(())
}
