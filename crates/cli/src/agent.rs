//! `hugemm agent`: the live agent's command line (`docs/agent.md`).
//!
//! Live, it runs `hugemm_agent::run::Agent` on this host; with `--simulate FILE` the
//! binary runs FILE in the model kernel with the same agent policy
//! (`hugemm_policy::AgentPolicy`) beside the file's Linux kernel.

use crate::config::agent::{load_agent, parse_agent, AgentFile};
use anyhow::Context;
use hugemm_agent::metrics::Metrics;
use hugemm_agent::run::{Agent, Options, Summary};
use hugemm_agent::targets::Selector;
use hugemm_agent::HostPid;
use hugemm_policy::{AgentPolicy, LinuxConfig};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// What `hugemm agent --help` shows after the options.
pub const EXAMPLES: &str = "Examples:\n  \
    hugemm agent --name '^redis-server$' --dry-run --once     # what would be collapsed, now\n  \
    hugemm agent --config deploy/agent.toml                   # as the systemd unit runs it\n  \
    hugemm agent --pid 4242 --policy linux --duration 60s     # khugepaged's order, for a minute\n  \
    hugemm agent --config deploy/agent.toml --simulate examples/agent-sim.toml\n\n\
    Needs: CAP_SYS_NICE (process_madvise) and ptrace-read access to each target (same user,\n\
    or CAP_SYS_PTRACE); root reads /proc/kpageflags to tell huge mappings exactly.";

/// A flag the agent cannot use (exit code 2, as for a bad configuration).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Whether `e` is bad input to `hugemm agent` (a flag, the configuration, the targets),
/// which exits with code 2.
pub fn is_bad_input(e: &anyhow::Error) -> bool {
    use hugemm_agent::run::StartError;
    e.downcast_ref::<UsageError>().is_some()
        || e.downcast_ref::<hugemm_agent::targets::SelectError>()
            .is_some()
        || e.downcast_ref::<hugemm_agent::metrics::MetricsError>()
            .is_some()
        || matches!(
            e.downcast_ref::<StartError>(),
            Some(
                StartError::Config(_)
                    | StartError::Select(_)
                    | StartError::Target(_)
                    | StartError::Coverage(_)
            )
        )
}

/// Log line format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event, `key=value` fields.
    Text,
    /// One JSON object per event.
    Json,
}

/// `hugemm agent`'s options. Flags override the configuration file.
#[derive(Clone, Debug, clap::Args)]
pub struct Args {
    /// Configuration file: an [agent] table and the [policy] table of experiment files.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// A target process (repeatable).
    #[arg(long = "pid", value_name = "PID")]
    pub pids: Vec<u32>,
    /// Target processes whose name (comm) matches this regular expression.
    #[arg(long, value_name = "REGEX")]
    pub name: Option<String>,
    /// Target the processes of this cgroup v2 directory.
    #[arg(long, value_name = "DIR")]
    pub cgroup: Option<PathBuf>,
    /// The promoter: hawkeye, linux (khugepaged's order) or ingens; replaces policy.name.
    #[arg(long)]
    pub policy: Option<String>,
    /// Decide and log, collapse nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Stop once every daemon of the promoter has run twice (sleeps capped at 1 s).
    #[arg(long)]
    pub once: bool,
    /// Stop after this long (e.g. 90s, 10m).
    #[arg(long, value_parser = humantime::parse_duration)]
    pub duration: Option<Duration>,
    /// Collapses per second at most (agent.max_collapses_per_s).
    #[arg(long)]
    pub max_collapses_per_s: Option<f64>,
    /// Share of one core the agent may use (agent.cpu_budget).
    #[arg(long)]
    pub cpu_budget: Option<f64>,
    /// What the agent knows of accesses (agent.coverage): population (all the live agent
    /// reads today) or accessed-bits (the model's, with --simulate).
    #[arg(long, value_parser = ["population", "accessed-bits"])]
    pub coverage: Option<String>,
    /// Serve Prometheus metrics at this loopback address (agent.metrics).
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics: Option<SocketAddr>,
    /// Log format (on stderr).
    #[arg(long, value_enum, default_value = "text")]
    pub log_format: LogFormat,
    /// Log level: error, warn, info, or debug (every collapse).
    #[arg(long, default_value = "info")]
    pub log_level: tracing::Level,
    /// Run the agent in the model kernel instead: FILE is an experiment file whose
    /// [policy] is linux (the host kernel the agent runs beside).
    #[arg(long, value_name = "FILE")]
    pub simulate: Option<PathBuf>,
    /// With --simulate: the output directory (default results/agent-<file stem>).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// The configuration file with the flags applied, checked.
pub fn resolve(args: &Args) -> anyhow::Result<AgentFile> {
    let mut cfg = match &args.config {
        Some(path) => load_agent(path, args.policy.as_deref())?,
        None => parse_agent("", "(no --config)", args.policy.as_deref())?,
    };
    cfg.pids.extend(&args.pids);
    if args.name.is_some() {
        cfg.name.clone_from(&args.name);
    }
    if args.cgroup.is_some() {
        cfg.cgroup.clone_from(&args.cgroup);
    }
    if let Some(r) = args.max_collapses_per_s {
        cfg.limits.max_collapses_per_s = r;
    }
    if let Some(b) = args.cpu_budget {
        cfg.limits.cpu_budget = b;
    }
    if let Some(m) = args.metrics {
        if !m.ip().is_loopback() {
            return Err(UsageError(format!(
                "--metrics {m}: expected a loopback address (127.0.0.1 or ::1)"
            ))
            .into());
        }
        cfg.metrics = Some(m);
    }
    cfg.dry_run |= args.dry_run;
    match args.coverage.as_deref() {
        Some("accessed-bits") => cfg.coverage = hugemm_policy::Coverage::AccessedBits,
        Some(_) => cfg.coverage = hugemm_policy::Coverage::Population,
        None => {}
    }
    AgentPolicy::check(&cfg.policy(LinuxConfig::default())).map_err(|e| {
        UsageError(format!(
            "{e} (from --max-collapses-per-s / --cpu-budget or the configuration)"
        ))
    })?;
    Ok(cfg)
}

/// Send logs to stderr in `format` at `level` and above.
pub fn init_logs(format: LogFormat, level: tracing::Level) {
    use std::io::IsTerminal;
    let b = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(level)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false);
    // A second initialisation (tests calling twice) keeps the first.
    let _ = match format {
        LogFormat::Text => b.try_init(),
        LogFormat::Json => b.json().flatten_event(true).try_init(),
    };
}

/// Run the agent on this host until a stop condition; `stop` is set by a signal.
pub fn run_live(args: &Args, stop: Arc<AtomicBool>) -> anyhow::Result<Summary> {
    let cfg = resolve(args)?;
    let selector = Selector::new(
        cfg.pids.iter().map(|p| HostPid(*p)).collect(),
        cfg.name.as_deref(),
        cfg.cgroup.as_deref(),
    )?;
    let metrics = Metrics::new();
    if let Some(addr) = cfg.metrics {
        let served = metrics.serve(addr)?;
        tracing::info!(event = "metrics", address = %served, path = "/metrics");
    }
    let opts = Options {
        dry_run: cfg.dry_run,
        once: args.once,
        duration: args.duration,
        rescan: cfg.rescan,
    };
    let mut agent = Agent::start(&cfg.policy(host_kernel()), selector, opts, metrics)?;
    agent.run(&stop).context("re-reading the targets")
}

/// The host's THP settings as far as the agent's policy needs them (it never acts on
/// them live: the kernel's fault path is the kernel's): Linux's defaults, with `enabled`
/// read from sysfs where it can be.
fn host_kernel() -> LinuxConfig {
    let mut k = LinuxConfig::default();
    if let Ok(s) = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled") {
        let chosen = s.split_whitespace().find(|w| w.starts_with('['));
        k.enabled = match chosen {
            Some("[madvise]") => hugemm_policy::ThpMode::Madvise,
            Some("[never]") => hugemm_policy::ThpMode::Never,
            _ => hugemm_policy::ThpMode::Always,
        };
    }
    k
}

/// The summary as text lines.
pub fn summary_text(s: &Summary) -> String {
    let mut out = format!(
        "hugemm agent ({} promoter, access source {}{}): stopped ({:?}) after {:.1} s; \
         {} collapses, {} deferred by the rate limit; agent CPU {:.2} s ({:.1}% of one core)\n",
        s.promoter,
        s.access_source,
        if s.dry_run { ", dry run" } else { "" },
        s.stopped,
        s.wall_s,
        s.collapsed,
        s.deferred,
        s.cpu_s,
        100.0 * s.cpu_s / s.wall_s.max(1e-9)
    );
    for t in &s.targets {
        out += &format!(
            "  pid {} ({}): {} collapsed{}{}{}\n",
            t.pid,
            t.comm,
            t.collapsed,
            match (t.first_collapse_s, t.last_collapse_s) {
                (Some(f), Some(l)) => format!(" from {f:.1} s to {l:.1} s"),
                _ => String::new(),
            },
            if t.failed.is_empty() {
                String::new()
            } else {
                format!(", failed {:?}", t.failed)
            },
            if t.exited { ", exited" } else { "" }
        );
    }
    out
}
