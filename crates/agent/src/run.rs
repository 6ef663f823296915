//! The agent's loop: find targets, run the promoter's daemons in wall time over
//! [`LiveOps`], log what they did, keep the metrics.
//!
//! One thread does everything, in the order the policy's daemons fall due; the model
//! engine schedules the same daemons ([`AgentPolicy::run_promoter`]) in simulated time.
//! After each run the next is put off by what the daemon asked for, stretched so that the
//! agent's CPU time stays within its budget: the larger of the CPU the policy reported
//! (the collapses' wall time) and the thread's measured CPU time counts.
//!
//! Targets are re-read every `rescan`: a process that appears is added (and told to the
//! policy); one that exited, or that a collapse found gone, is logged and dropped. No
//! failure of one target stops the agent. The agent stops at a signal (the caller's
//! flag), after `duration`, when every pid given explicitly has exited and nothing else
//! selects processes, or with `once` when every daemon has run twice (HawkEye: one clear
//! and one count of the sampler, then two promotion passes), its sleeps capped at 1 s.

use crate::act::Failure;
use crate::live::{Event, LiveOps, Outcome, TargetError};
use crate::metrics::Metrics;
use crate::observe::pagemap::{HugeMapping, KPageFlags};
use crate::observe::psi::Pressure;
use crate::observe::sources::{AccessSource, Probe};
use crate::targets::{SelectError, Selector};
use crate::units::HostPid;
use hugemm_hw::{Nanos, Pid};
use hugemm_policy::agent::budget_sleep;
use hugemm_policy::{AgentConfigError, AgentPolicy, AgentPolicyConfig, Coverage, MemoryOps};
use rustix::time::{clock_gettime, ClockId};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tracing::{debug, info, warn};

/// How the loop runs.
#[derive(Clone, Debug)]
pub struct Options {
    /// Decide and log, collapse nothing.
    pub dry_run: bool,
    /// Stop when every daemon has run twice, with sleeps capped at 1 s.
    pub once: bool,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// How often targets are re-read.
    pub rescan: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            dry_run: false,
            once: false,
            duration: None,
            rescan: Duration::from_secs(2),
        }
    }
}

/// Why the agent cannot start. Nothing was done when one is returned.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The policy configuration.
    #[error(transparent)]
    Config(#[from] AgentConfigError),
    /// The target selection.
    #[error(transparent)]
    Select(#[from] SelectError),
    /// A pid given explicitly cannot be a target.
    #[error(transparent)]
    Target(#[from] TargetError),
    /// The configuration asks for an access source the live agent does not read.
    #[error(
        "agent.coverage = \"{0}\": the live agent reads population only (accessed bits are \
         the model's, for --simulate)"
    )]
    Coverage(&'static str),
    /// The agent may not act on other processes.
    #[error(
        "the agent lacks CAP_SYS_NICE, which process_madvise(MADV_COLLAPSE) on another \
         process needs (run it as root, give it the capability, e.g. the systemd unit's \
         AmbientCapabilities=CAP_SYS_NICE, or use --dry-run)"
    )]
    NoCapability,
    /// The access sources cannot be probed.
    #[error("probing the access sources: {0}")]
    Probe(crate::ObserveError),
}

/// Why the loop stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Stopped {
    /// The caller's stop flag (a signal).
    Signal,
    /// `duration` passed.
    Duration,
    /// `once` was done.
    Once,
    /// Every pid given explicitly exited, and nothing else selects processes.
    TargetsExited,
}

/// What one target got.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TargetReport {
    /// The process.
    pub pid: u32,
    /// Its `comm`.
    pub comm: String,
    /// Regions collapsed in it.
    pub collapsed: u64,
    /// Collapses refused, by reason.
    pub failed: BTreeMap<&'static str, u64>,
    /// When it was first collapsed, seconds after the agent started.
    pub first_collapse_s: Option<f64>,
    /// When it was last collapsed.
    pub last_collapse_s: Option<f64>,
    /// Whether it exited while tracked.
    pub exited: bool,
}

/// What the agent did.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// The access source used.
    pub access_source: &'static str,
    /// The promoter.
    pub promoter: &'static str,
    /// Whether nothing was collapsed on purpose.
    pub dry_run: bool,
    /// Why it stopped.
    pub stopped: Stopped,
    /// Wall time, seconds.
    pub wall_s: f64,
    /// The agent's CPU time, seconds (user + system).
    pub cpu_s: f64,
    /// Collapses made (or, dry, decided).
    pub collapsed: u64,
    /// Collapses the rate limit put off.
    pub deferred: u64,
    /// Per target, in the order found.
    pub targets: Vec<TargetReport>,
}

/// The live agent.
pub struct Agent {
    policy: AgentPolicy,
    ops: LiveOps,
    selector: Selector,
    opts: Options,
    metrics: Metrics,
    names: Vec<&'static str>,
    first_run: Vec<Duration>,
    reports: BTreeMap<u32, TargetReport>,
    found_order: Vec<u32>,
    refused: BTreeSet<u32>,
    started: Instant,
    deferred_seen: u64,
    cpu_seen: f64,
}

/// `CAP_SYS_NICE` (bit 23) in this process's effective set, from `/proc/self/status`.
fn has_cap_sys_nice() -> bool {
    const CAP_SYS_NICE: u32 = 23;
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        })
        .is_some_and(|caps| caps & (1 << CAP_SYS_NICE) != 0)
}

/// This process's CPU time (user + system), in seconds.
pub fn process_cpu_seconds() -> f64 {
    let t = clock_gettime(ClockId::ProcessCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

fn thread_cpu() -> Nanos {
    let t = clock_gettime(ClockId::ThreadCPUTime);
    Nanos(t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64)
}

impl Agent {
    /// Check everything and find the first targets: the configuration, the selection,
    /// the access sources (logged), and that each pid given explicitly exists and its
    /// memory can be read. Nothing is collapsed before [`Agent::run`].
    pub fn start(
        cfg: &AgentPolicyConfig,
        selector: Selector,
        opts: Options,
        metrics: Metrics,
    ) -> Result<Agent, StartError> {
        let policy = AgentPolicy::new(cfg)?;
        if cfg.coverage != Coverage::Population {
            return Err(StartError::Coverage(cfg.coverage.name()));
        }
        if !opts.dry_run && !has_cap_sys_nice() {
            return Err(StartError::NoCapability);
        }
        let report = Probe::host().detect().map_err(StartError::Probe)?;
        for f in &report.findings {
            info!(
                event = "access-source",
                source = f.source.name(),
                usable = f.usable,
                reason = %f.reason,
            );
        }
        let kpageflags = KPageFlags::open_if_readable().ok().flatten();
        let mut ops = LiveOps::new(opts.dry_run, kpageflags.filter(|_| report.pfns_visible));
        let used = ops.access_source();
        if report.best != used {
            info!(
                event = "access-source-chosen",
                source = used.name(),
                offered = report.best.name(),
                note = "this agent version uses population-based coverage; the better source is not used yet",
            );
        } else {
            info!(
                event = "access-source-chosen",
                source = used.name(),
                description = used.description()
            );
        }
        info!(
            event = "start",
            promoter = policy.promoter_name(),
            dry_run = opts.dry_run,
            max_collapses_per_s = policy.limits().max_collapses_per_s,
            burst = policy.limits().burst,
            cpu_budget = policy.limits().cpu_budget,
            huge_mappings = if ops.has_kpageflags() {
                "kpageflags"
            } else {
                "pagemap population and smaps AnonHugePages"
            },
        );
        // Every pid given explicitly must be usable before anything is done.
        for &pid in selector.explicit() {
            let comm = crate::targets::comm(pid.0)
                .filter(|_| crate::targets::alive(pid.0))
                .ok_or(TargetError::NoSuchProcess(pid))?;
            ops.add(pid, comm)?;
            ops.remove(pid);
        }
        let daemons = policy.promoter_daemons();
        let mut agent = Agent {
            names: daemons.iter().map(|d| d.name).collect(),
            first_run: daemons
                .iter()
                .map(|d| Duration::from_nanos(d.first_run.0))
                .collect(),
            policy,
            ops,
            selector,
            opts,
            metrics,
            reports: BTreeMap::new(),
            found_order: Vec::new(),
            refused: BTreeSet::new(),
            started: Instant::now(),
            deferred_seen: 0,
            cpu_seen: process_cpu_seconds(),
        };
        agent.rescan()?;
        Ok(agent)
    }

    /// The access source in use.
    pub fn access_source(&self) -> AccessSource {
        self.ops.access_source()
    }

    /// Re-read the targets: add new ones, drop those gone.
    fn rescan(&mut self) -> Result<(), SelectError> {
        let selected = self.selector.select()?;
        let now: BTreeSet<u32> = selected.iter().map(|s| s.pid.0).collect();
        let mut gone: BTreeSet<u32> = self.ops.gone().iter().map(|p| p.0).collect();
        for (pid, _) in self.ops.targets() {
            if !now.contains(&pid.0) || !crate::targets::alive(pid.0) {
                gone.insert(pid.0);
            }
        }
        for pid in gone {
            self.ops.remove(HostPid(pid));
            self.policy.target_exited(Pid(pid));
            if let Some(r) = self.reports.get_mut(&pid) {
                r.exited = true;
                info!(event = "target-exited", pid, comm = %r.comm, collapsed = r.collapsed);
            }
        }
        for s in selected {
            let tracked = self.ops.targets().iter().any(|(p, _)| *p == s.pid);
            if tracked
                || self.refused.contains(&s.pid.0)
                || self.reports.get(&s.pid.0).is_some_and(|r| r.exited)
            {
                continue;
            }
            match self.ops.add(s.pid, s.comm.clone()) {
                Ok(()) => {
                    self.policy.target_started(Pid(s.pid.0));
                    info!(event = "target-added", pid = s.pid.0, comm = %s.comm);
                    self.found_order.push(s.pid.0);
                    self.reports.insert(
                        s.pid.0,
                        TargetReport {
                            pid: s.pid.0,
                            comm: s.comm,
                            ..TargetReport::default()
                        },
                    );
                }
                // It exited between the listing and the open.
                Err(TargetError::NoSuchProcess(_)) => {}
                Err(e) => {
                    warn!(event = "target-refused", pid = s.pid.0, comm = %s.comm, error = %e);
                    self.refused.insert(s.pid.0);
                }
            }
        }
        self.update_gauges();
        Ok(())
    }

    fn update_gauges(&mut self) {
        let (mut regions, mut huge) = (0i64, 0i64);
        let targets = self.ops.targets();
        for (pid, _) in &targets {
            for s in self.ops.summaries(*pid) {
                regions += 1;
                huge += i64::from(matches!(s.huge, HugeMapping::Yes(_)));
            }
        }
        self.metrics.targets.set(targets.len() as i64);
        self.metrics.regions.set(regions);
        self.metrics.huge_regions.set(huge);
        let mem = self.ops.mem_info();
        self.metrics
            .free_huge_blocks
            .set(mem.free_huge_blocks as i64);
        self.metrics.fmfi.set(mem.fmfi);
        // PSI may be compiled out or disabled: then the gauges stay absent.
        if let Ok(p) = Pressure::read_memory() {
            self.metrics.set_pressure("some", p.some.avg10);
            if let Some(full) = p.full {
                self.metrics.set_pressure("full", full.avg10);
            }
        }
        let cpu = process_cpu_seconds();
        self.metrics
            .cpu_seconds
            .inc_by((cpu - self.cpu_seen).max(0.0));
        self.cpu_seen = cpu;
    }

    fn record(&mut self, name: &'static str, cpu: Nanos, events: Vec<Event>) {
        let at = self.started.elapsed().as_secs_f64();
        let (mut collapsed, mut failed) = (0u64, 0u64);
        for e in events {
            self.metrics.collapse_seconds.inc_by(e.took.as_secs_f64());
            let report = self.reports.get_mut(&e.pid.0);
            match e.outcome {
                Outcome::Collapsed => {
                    collapsed += 1;
                    self.metrics.collapses.inc();
                    if let Some(r) = report {
                        r.collapsed += 1;
                        r.first_collapse_s.get_or_insert(at);
                        r.last_collapse_s = Some(at);
                    }
                    debug!(
                        event = "collapse",
                        pid = e.pid.0,
                        region = %format_args!("{:#x}", e.region.0),
                        present = e.present,
                        took_us = e.took.as_micros() as u64,
                        dry_run = self.opts.dry_run,
                    );
                }
                Outcome::Failed(f) => {
                    failed += 1;
                    self.metrics.failed(f.name());
                    if let Some(r) = report {
                        *r.failed.entry(f.name()).or_default() += 1;
                    }
                    let region = format!("{:#x}", e.region.0);
                    match f {
                        Failure::Gone => {
                            info!(
                                event = "collapse-failed",
                                pid = e.pid.0,
                                region,
                                reason = f.name()
                            )
                        }
                        // Refused for this target (another user's process without
                        // CAP_SYS_PTRACE, a security module): drop it, once.
                        Failure::Permission if self.refused.insert(e.pid.0) => {
                            warn!(
                                event = "target-refused",
                                pid = e.pid.0,
                                region,
                                reason =
                                    "process_madvise: permission denied; the target is dropped",
                            );
                            self.ops.remove(e.pid);
                            self.policy.target_exited(Pid(e.pid.0));
                        }
                        _ => warn!(
                            event = "collapse-failed",
                            pid = e.pid.0,
                            region,
                            reason = f.name()
                        ),
                    }
                }
            }
        }
        let deferred = self.policy.deferred() - self.deferred_seen;
        self.deferred_seen = self.policy.deferred();
        self.metrics.deferred.inc_by(deferred);
        if collapsed + failed + deferred > 0 {
            info!(
                event = "pass",
                daemon = name,
                collapsed,
                failed,
                deferred,
                cpu_ms = cpu.0 as f64 / 1e6,
                dry_run = self.opts.dry_run,
            );
        }
    }

    /// Run until a stop condition (see the module doc); `stop` is polled at least every
    /// 200 ms.
    pub fn run(&mut self, stop: &AtomicBool) -> Result<Summary, SelectError> {
        let cap = |d: Duration, once: bool| {
            if once {
                d.min(Duration::from_secs(1))
            } else {
                d
            }
        };
        let mut next: Vec<Instant> = self
            .first_run
            .iter()
            .map(|d| self.started + cap(*d, self.opts.once))
            .collect();
        let mut runs = vec![0u64; next.len()];
        let mut next_rescan = Instant::now() + self.opts.rescan;
        let explicit_only = self.selector.only_explicit();
        let stopped = loop {
            if stop.load(Ordering::Relaxed) {
                break Stopped::Signal;
            }
            let now = Instant::now();
            if self.opts.duration.is_some_and(|d| now >= self.started + d) {
                break Stopped::Duration;
            }
            if now >= next_rescan {
                self.rescan()?;
                next_rescan = now + self.opts.rescan;
                if explicit_only && self.ops.targets().is_empty() {
                    break Stopped::TargetsExited;
                }
            }
            let Some((i, due)) = next.iter().copied().enumerate().min_by_key(|(_, t)| *t) else {
                break Stopped::Once;
            };
            if due > now {
                let wake = due.min(next_rescan).min(now + Duration::from_millis(200));
                std::thread::sleep(wake.saturating_duration_since(now));
                continue;
            }
            let cpu0 = thread_cpu();
            let run = self.policy.run_promoter(i, &mut self.ops);
            let cpu = Nanos(thread_cpu().0.saturating_sub(cpu0.0));
            let sleep = budget_sleep(cpu.max(run.cpu), run.sleep, self.policy.limits().cpu_budget);
            next[i] = Instant::now() + cap(Duration::from_nanos(sleep.0), self.opts.once);
            runs[i] += 1;
            let events = self.ops.take_events();
            self.record(self.names[i], cpu, events);
            if self.opts.once && runs.iter().all(|r| *r >= 2) {
                break Stopped::Once;
            }
        };
        self.update_gauges();
        let summary = Summary {
            access_source: self.ops.access_source().name(),
            promoter: self.policy.promoter_name(),
            dry_run: self.opts.dry_run,
            stopped,
            wall_s: self.started.elapsed().as_secs_f64(),
            cpu_s: process_cpu_seconds(),
            collapsed: self.reports.values().map(|r| r.collapsed).sum(),
            deferred: self.policy.deferred(),
            targets: self
                .found_order
                .iter()
                .filter_map(|p| self.reports.get(p).cloned())
                .collect(),
        };
        info!(
            event = "stop",
            reason = ?summary.stopped,
            collapsed = summary.collapsed,
            deferred = summary.deferred,
            wall_s = summary.wall_s,
            cpu_s = summary.cpu_s,
        );
        Ok(summary)
    }
}
