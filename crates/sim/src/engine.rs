//! The event loop: starts processes, gives cores their turns, wakes daemons, takes
//! time-series samples, and assembles the results.
//!
//! Cores advance in turns of at most the experiment's turn ([`SYNC`] unless set) of
//! simulated time past the slowest other busy core, so processes on different cores
//! interleave their use of the shared kernel state finely and in a fixed order. Several
//! processes on one core share it round-robin in [`SLICE`]-long time slices. Events due
//! at the same instant are ordered: process starts, then daemons, then samples, then
//! cores, each by index.

use crate::bandwidth::Bandwidth;
use crate::compaction::{Kcompactd, KCOMPACTD_PERIOD};
use crate::experiment::{Experiment, Mode};
use crate::kactivity::KmemLedger;
use crate::ops::{EngineOps, LiveProc, Procs};
use crate::prezero::Prezero;
use crate::process::{Activity, Proc};
use crate::results::{
    HighAllocResult, NodeSummary, ProcessSummary, RunResult, StopReason, Summary, SystemSummary,
    TierSummary, TimeseriesRow, ZoneSummary,
};
use crate::{Result, SimError};
use hugemm_hw::{Geometry, KernelCosts, MachineProfile, Mmu, Nanos, Picos};
use hugemm_mm::{Kernel, KswapdNext, MemConfig, MigrationCosts, MmCosts};
use hugemm_policy::{DaemonRun, DaemonSpec, Policy, Pressure, Tiering};
use hugemm_workload::ProcessSpec;
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Longest a core runs ahead of the slowest other busy core, unless the experiment says
/// otherwise ([`Experiment::turn`], `[sim] turn_us`). Turns this long let a core fault
/// hundreds of pages while the others wait, so two cores' allocations interleave in runs
/// of hundreds of frames, where real CPUs allocating at once interleave by the per-CPU
/// lists' refills (31 or 63 pages). An experiment comparing physical memory's layout with
/// a real kernel's sets a shorter turn (`examples/kbuild-4.1-guest-512m.toml`: 5 us); the
/// APSys'16 reproductions keep this one, at a fifth of the cost
/// (docs/kbuild-measurement.md, "Where the pages lie").
pub const SYNC: Picos = Picos(1_000_000_000); // 1 ms
/// Time slice of processes sharing a core (CFS's default minimum granularity scale).
pub const SLICE: Picos = Picos(4_000_000_000); // 4 ms
/// The next run of a daemon that sleeps until something wakes it.
const ASLEEP: Picos = Picos(u64::MAX);
/// A daemon's sleep until something wakes it (kswapd's, until an allocation's slow path
/// does: [`Engine::wake_kswapd`]).
const UNTIL_WOKEN: Nanos = Nanos(u64::MAX);

/// A request to stop a run early, shared between the engine and whoever may make it (a
/// signal handler, another thread). It holds 0 while the run may go on, else the code of
/// a [`StopReason`]; the engine looks at it before every event, so a run stops within one
/// core turn (at most [`SYNC`] of simulated time) of the request.
#[derive(Clone, Debug, Default)]
pub struct StopFlag(Arc<AtomicUsize>);

impl StopFlag {
    /// A flag nobody has raised.
    pub fn new() -> StopFlag {
        StopFlag::default()
    }

    /// Ask the run to stop, for `why`.
    pub fn request(&self, why: StopReason) {
        self.0.store(why.code(), Ordering::Relaxed);
    }

    /// Why a stop was asked for, if it was.
    pub fn requested(&self) -> Option<StopReason> {
        StopReason::from_code(self.0.load(Ordering::Relaxed))
    }

    /// The atomic itself, for code that can only store a number into it, such as a
    /// signal handler (`signal_hook::flag::register_usize` with [`StopReason::code`]).
    pub fn atomic(&self) -> Arc<AtomicUsize> {
        Arc::clone(&self.0)
    }
}

/// Where a run's time-series rows go as they are sampled, instead of being kept for
/// [`RunResult::timeseries`]: a file written as the run goes survives the run being
/// stopped or killed. Each call gets the rows of one sample time.
pub trait TimeseriesSink {
    /// Take the rows of one sample time; an error stops the run with
    /// [`SimError::Output`].
    fn write(&mut self, rows: &[TimeseriesRow]) -> std::io::Result<()>;

    /// Make everything written so far durable; called at the end of [`Engine::run`].
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Where a run's frame maps go ([`Engine::watch_frame_maps`]): every frame's
/// `/proc/kpageflags` word ([`PhysMem::kpageflags`](hugemm_mm::PhysMem::kpageflags)), so
/// that the model's physical memory can be laid beside a real kernel's.
pub trait FrameMapSink {
    /// Take the map at `time_ns`; an error stops the run with [`SimError::Output`].
    fn write(&mut self, time_ns: u64, kpageflags: &[u64]) -> std::io::Result<()>;
}

/// Frame maps wanted every `every`, the next at the first sample at or after `next`.
struct FrameMaps {
    every: Picos,
    next: Picos,
    /// When the last map was written.
    written: Option<Picos>,
    sink: Box<dyn FrameMapSink>,
}

/// A simulated core.
#[derive(Clone)]
pub(crate) struct Core {
    pub mmu: Mmu,
    pub now: Picos,
    pub queue: VecDeque<usize>,
    pub slice_end: Picos,
}

impl Core {
    /// An idle core of `profile` at time 0.
    pub fn new(profile: &MachineProfile, geometry: Geometry) -> Core {
        Core {
            mmu: Mmu::new(profile, geometry),
            now: Picos(0),
            queue: VecDeque::new(),
            slice_end: SLICE,
        }
    }
}

#[derive(Clone)]
struct Daemon {
    spec: DaemonSpec,
    kind: DaemonKind,
    next: Picos,
    cpu: Nanos,
}

/// Whose daemon it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DaemonKind {
    /// The policy's daemon of this index.
    Policy(usize),
    /// The kernel's background compaction.
    Kcompactd,
    /// Asynchronous pre-zeroing of free memory.
    Prezero,
    /// The tiering policy.
    Tiering,
    /// kswapd on its own thread (`[kernel] kswapd = "async"`): asleep until an
    /// allocation wakes it, then a step of reclaim after another until the zones are
    /// balanced (`hugemm_mm::Kernel::kswapd_step`).
    Kswapd,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    Start(usize),
    Daemon(usize),
    Sample,
    /// The end of a window of the shared-bandwidth model.
    Bandwidth,
    Core(usize),
}

/// A run in progress.
pub struct Engine {
    pub(crate) exp: Experiment,
    pub(crate) kernel: Kernel,
    pub(crate) policy: Box<dyn Policy>,
    /// The tiering policy, if the experiment has one.
    pub(crate) tiering: Option<Box<dyn Tiering>>,
    pub(crate) cores: Vec<Core>,
    pub(crate) procs: Vec<Proc>,
    daemons: Vec<Daemon>,
    next_sample: Picos,
    /// When the last sample was taken.
    last_sample: Option<Picos>,
    timeseries: Vec<TimeseriesRow>,
    /// Where sampled rows go, when not into `timeseries`.
    sink: Option<Box<dyn TimeseriesSink>>,
    /// What sees every sample's rows besides (a progress display).
    watcher: Option<Box<dyn TimeseriesSink>>,
    /// Where frame maps go, if anywhere.
    frame_maps: Option<FrameMaps>,
    /// Looked at before every event: set, the run stops.
    stop: Option<StopFlag>,
    pub(crate) cycles_per_ps: f64,
    pub(crate) scan_cost: Picos,
    pub(crate) ledger: KmemLedger,
    pub(crate) kcompactd: Kcompactd,
    pub(crate) highalloc: Vec<HighAllocResult>,
    /// Kernel frees the model refused (a bug if ever non-zero; reported).
    pub(crate) kmem_errors: u64,
    /// The latest simulated time any event reached.
    now: Picos,
    /// The live processes as of the current turn (for direct reclaim inside a fault).
    pub(crate) live: Vec<LiveProc>,
    /// The pre-zeroing daemon's state.
    prezero: Prezero,
    /// kswapd wake-ups seen by the last background reclaim check.
    kswapd_wakes_seen: u64,
    /// CPU time of the policy's background reclaim (kswapd's shrinkers).
    policy_reclaim_cpu: Nanos,
    /// Frames the policy's background reclaim freed.
    policy_reclaim_freed: u64,
    /// The nodes' shared bandwidth, on a machine of several nodes.
    pub(crate) bandwidth: Option<Bandwidth>,
    /// The host, when this engine runs a VM's guest (`host/`).
    pub(crate) host: Option<crate::host::GuestHost>,
    /// When this engine is a host of VMs: every TLB flush its kernel asked for since the
    /// last look, i.e. every mapping it changed (`host/`).
    pub(crate) mapping_log: Option<Vec<hugemm_mm::TlbFlush>>,
    /// The frames the balloon driver holds (`Phase::Balloon`).
    pub(crate) balloon: Vec<hugemm_hw::Pfn>,
}

/// A run's state without its observers or host ([`Engine::fork`]): unlike an
/// [`Engine`], it can move between threads, and clones into further forks.
#[derive(Clone)]
pub struct Detached {
    exp: Experiment,
    kernel: Kernel,
    policy: Box<dyn Policy>,
    tiering: Option<Box<dyn Tiering>>,
    cores: Vec<Core>,
    procs: Vec<Proc>,
    daemons: Vec<Daemon>,
    next_sample: Picos,
    last_sample: Option<Picos>,
    timeseries: Vec<TimeseriesRow>,
    stop: Option<StopFlag>,
    cycles_per_ps: f64,
    scan_cost: Picos,
    ledger: KmemLedger,
    kcompactd: Kcompactd,
    highalloc: Vec<HighAllocResult>,
    kmem_errors: u64,
    now: Picos,
    live: Vec<LiveProc>,
    prezero: Prezero,
    kswapd_wakes_seen: u64,
    policy_reclaim_cpu: Nanos,
    policy_reclaim_freed: u64,
    bandwidth: Option<Bandwidth>,
    balloon: Vec<hugemm_hw::Pfn>,
}

/// A detached run must stay movable between threads (what it is for).
const _: fn() = || {
    fn send<T: Send>() {}
    send::<Detached>();
};

pub(crate) fn ns(x: f64) -> Nanos {
    Nanos(x.max(0.0).round() as u64)
}

/// The kernel model's view of a profile's software costs (the optional ones default as
/// [`KernelCosts`] documents).
pub fn mm_costs(p: &MachineProfile) -> MmCosts {
    let k: &KernelCosts = &p.costs;
    MmCosts {
        fault_trap: ns(k.fault_trap_ns),
        alloc: ns(k.alloc_ns),
        zero_gbps: k.zero_gbps,
        copy_gbps: k.copy_gbps,
        pte_update: ns(k.pte_update_ns),
        tlb_flush: ns(k.tlb_flush_ns),
        zero_nt_gbps: k.zero_nt_gbps.unwrap_or(k.zero_gbps),
        scan_gbps: k.scan_gbps.unwrap_or(k.copy_gbps),
        scan_page: ns(k.scan_page_ns.unwrap_or(p.dram_latency_ns)),
        compound_tail: ns(k.compound_tail_ns.unwrap_or(0.0)),
    }
}

/// The kernel model's migration costs from a profile's `[costs.migration]`, if it has
/// them (one thread copies at the profile's `copy_gbps`).
pub fn migration_costs(p: &MachineProfile) -> Option<MigrationCosts> {
    let m = p.costs.migration.as_ref()?;
    Some(MigrationCosts {
        call: ns(m.call_ns),
        page: ns(m.page_ns),
        huge_page: ns(m.huge_page_ns),
        free: ns(m.free_ns),
        thread_launch: ns(m.thread_launch_ns),
        copy_gbps: p.costs.copy_gbps,
        link_gbps: m.link_gbps,
    })
}

/// Nodes past node 0 as the MMU prices them: (first physical byte, latency in ns).
fn far_nodes(exp: &Experiment) -> Vec<(u64, f64)> {
    let mut start = 0;
    let mut far = Vec::new();
    for (n, bytes) in exp.node_bytes.iter().enumerate() {
        if n > 0 {
            let latency = exp
                .profile
                .node_latency_ns(n)
                .unwrap_or(exp.profile.dram_latency_ns);
            far.push((start, latency));
        }
        start += bytes;
    }
    far
}

impl Engine {
    /// Set up the machine, the policy and the processes of `exp`.
    pub fn new(exp: Experiment) -> Result<Engine> {
        let costs = mm_costs(&exp.profile);
        let cfg = MemConfig {
            bytes: exp.memory_bytes,
            geometry: exp.geometry,
        };
        let mut kernel = match (exp.node_bytes.as_slice(), exp.zone_bytes.as_slice()) {
            ([], []) => Kernel::new(&cfg, costs)?,
            ([], zones) => Kernel::with_zones(&cfg, zones, costs)?,
            (nodes, []) => Kernel::with_nodes(&cfg, nodes, costs)?,
            _ => {
                return Err(hugemm_mm::MmError::InvalidConfig {
                    what: "a machine of several nodes cannot also be split into zones",
                }
                .into())
            }
        };
        if let Some(m) = migration_costs(&exp.profile) {
            kernel.set_migration_costs(m)?;
        }
        if exp.home_node != 0 {
            kernel.set_home_node(hugemm_mm::NodeId(exp.home_node))?;
        }
        if exp.kernel.boot_order == hugemm_mm::BootOrder::HighestFirst {
            kernel.queue_boot_memory_highest_first()?;
        }
        kernel.set_watermark_check(exp.kernel.watermark_check);
        kernel.set_content_seed(exp.seed);
        kernel.set_clear_pages(exp.kernel.clear_pages);
        if exp.kernel.prezero.enabled {
            kernel.set_zeroed_first(exp.kernel.prezero.zeroed_first());
        }
        let fallback = hugemm_mm::fallback::build(&exp.kernel.fallback, exp.seed)?;
        kernel.set_fallback_policy(fallback);
        kernel.set_fallback_rules(exp.kernel.fallback_rules);
        kernel.set_compaction_proactiveness(exp.kernel.kcompactd.proactiveness.min(100) as u8)?;
        kernel.set_buddy_merge_likely(exp.kernel.buddy_merge_likely);
        kernel.set_watermark_scale_factor(exp.kernel.watermark_scale_factor);
        if let Some(kb) = exp.kernel.min_free_kbytes {
            kernel.set_min_free_kbytes(kb);
        }
        kernel.set_kswapd(exp.kernel.kswapd)?;
        if exp.kernel.migrate_reserve {
            kernel.set_migrate_reserve()?;
        }
        if exp.kernel.buffer_heads {
            kernel.set_buffer_heads()?;
        }
        if exp.kernel.vfs_objects {
            kernel.set_vfs_objects()?;
        }
        kernel.set_shrinker(exp.kernel.shrinker);
        if !exp.kernel.boot.is_empty() {
            let highest_first = exp.kernel.boot_order == hugemm_mm::BootOrder::HighestFirst;
            kernel.boot_kernel_memory(&exp.kernel.boot, highest_first)?;
        }
        if exp.kernel.per_cpu_lists {
            kernel.enable_per_cpu_lists_as(exp.kernel.per_cpu_sizes, exp.cores as usize);
        }
        kernel.set_watermark_boost_factor(exp.kernel.watermark_boost_factor);
        kernel.set_preserve_huge_blocks(exp.kernel.preserve_huge_blocks);
        kernel.set_compaction_mode(exp.kernel.compaction);
        kernel.set_accessed_bits(exp.kernel.accessed_bits);
        let policy = exp.policy.build();
        let far = far_nodes(&exp);
        let cores = (0..exp.cores)
            .map(|_| {
                let mut core = Core::new(&exp.profile, exp.geometry);
                core.mmu.set_far_nodes(&far, exp.profile.freq_ghz);
                core
            })
            .collect();
        let mut next_core = 0usize;
        let procs = exp
            .processes
            .iter()
            .enumerate()
            .map(|(i, spec)| {
                let core = match spec.core {
                    Some(c) => c as usize,
                    None => {
                        next_core += 1;
                        (next_core - 1) % exp.cores as usize
                    }
                };
                Proc::new(spec.clone(), i, core, exp.seed)
            })
            .collect();
        let mut daemons: Vec<Daemon> = policy
            .daemons()
            .into_iter()
            .enumerate()
            .map(|(i, spec)| Daemon {
                next: Picos::from(spec.first_run),
                spec,
                kind: DaemonKind::Policy(i),
                cpu: Nanos::ZERO,
            })
            .collect();
        if exp.kernel.kcompactd.enabled {
            daemons.push(Daemon {
                spec: DaemonSpec {
                    name: "kcompactd",
                    first_run: KCOMPACTD_PERIOD,
                },
                kind: DaemonKind::Kcompactd,
                next: Picos::from(KCOMPACTD_PERIOD),
                cpu: Nanos::ZERO,
            });
        }
        let prezero = &exp.kernel.prezero;
        if prezero.enabled {
            daemons.push(Daemon {
                spec: DaemonSpec {
                    name: "prezero",
                    first_run: prezero.period,
                },
                kind: DaemonKind::Prezero,
                next: Picos::from(prezero.period),
                cpu: Nanos::ZERO,
            });
        }
        if exp.kernel.kswapd == hugemm_mm::KswapdMode::Async {
            daemons.push(Daemon {
                spec: DaemonSpec {
                    name: "kswapd",
                    first_run: Nanos::ZERO,
                },
                kind: DaemonKind::Kswapd,
                next: ASLEEP,
                cpu: Nanos::ZERO,
            });
        }
        let tiering = exp.tiering.as_ref().map(|t| t.build());
        if let Some(t) = &tiering {
            daemons.push(Daemon {
                spec: DaemonSpec {
                    name: t.name(),
                    first_run: t.period(),
                },
                kind: DaemonKind::Tiering,
                next: Picos::from(t.period()),
                cpu: Nanos::ZERO,
            });
        }
        let cycles_per_ps = exp.profile.freq_ghz / 1000.0;
        let scan_cost = Picos((exp.profile.costs.pte_update_ns * 1000.0).round() as u64);
        Ok(Engine {
            kernel,
            policy,
            tiering,
            cores,
            procs,
            daemons,
            next_sample: Picos::from(exp.sample_interval),
            last_sample: None,
            timeseries: Vec::new(),
            sink: None,
            watcher: None,
            frame_maps: None,
            stop: None,
            cycles_per_ps,
            scan_cost,
            ledger: KmemLedger::default(),
            kcompactd: Kcompactd::default(),
            highalloc: Vec::new(),
            kmem_errors: 0,
            now: Picos(0),
            live: Vec::new(),
            prezero: Prezero::default(),
            kswapd_wakes_seen: 0,
            policy_reclaim_cpu: Nanos::ZERO,
            policy_reclaim_freed: 0,
            bandwidth: Bandwidth::new(&exp.profile, exp.node_bytes.len()),
            host: None,
            mapping_log: None,
            balloon: Vec::new(),
            exp,
        })
    }

    /// Send time-series rows to `sink` as they are sampled instead of keeping them for
    /// [`RunResult::timeseries`] (which is then empty).
    pub fn stream_timeseries(&mut self, sink: Box<dyn TimeseriesSink>) {
        self.sink = Some(sink);
    }

    /// Show `watcher` every sample's rows as they are taken (a progress display follows
    /// the run with it); unlike [`Engine::stream_timeseries`], the rows stay in
    /// [`RunResult::timeseries`].
    pub fn watch_samples(&mut self, watcher: Box<dyn TimeseriesSink>) {
        self.watcher = Some(watcher);
    }

    /// Give `sink` the frame map ([`FrameMapSink`]) at the first sample at or after each
    /// multiple of `every` of simulated time (so the first at the first sample), and at
    /// the run's end. A map is 8 bytes a frame: meant for runs of a few GiB and a few
    /// dozen maps.
    pub fn watch_frame_maps(&mut self, every: Nanos, sink: Box<dyn FrameMapSink>) {
        self.frame_maps = Some(FrameMaps {
            every: Picos::from(every).max(Picos(1)),
            next: Picos(0),
            written: None,
            sink,
        });
    }

    /// Stop the run when `flag` is raised (see [`StopFlag`]).
    pub fn stop_on(&mut self, flag: StopFlag) {
        self.stop = Some(flag);
    }

    /// Run to completion (every process ended), to the time limit or until the stop flag
    /// is raised. The time series ends with a sample at the end (unless one was just
    /// taken then), so even a run shorter than one sampling interval has a row, and a
    /// stopped run's last rows show where it stopped. The summary says whether the run
    /// was complete and, if not, what stopped it.
    pub fn run(mut self) -> Result<RunResult> {
        self.run_until_idle()?;
        let end = self.now;
        // Processes left (running, or not yet started): a stop request or, failing that,
        // the time limit came first.
        let stopped_by = self
            .live()
            .then(|| self.stop_requested().unwrap_or(StopReason::TimeLimit));
        if self.last_sample != Some(end) {
            self.sample(end)?;
        }
        self.frame_map(end, true)?;
        if let Some(sink) = &mut self.sink {
            sink.flush().map_err(SimError::Output)?;
        }
        Ok(self.finish(end, stopped_by))
    }

    fn stop_requested(&self) -> Option<StopReason> {
        self.stop.as_ref().and_then(StopFlag::requested)
    }

    /// Run until every process has ended or the time limit is reached; the engine can
    /// then be inspected, given more processes ([`Engine::spawn`]) and run again, as a
    /// script drives a machine (the reproductions do).
    pub fn run_until_idle(&mut self) -> Result<()> {
        self.run_events(Picos::from(self.exp.time_limit), true)
    }

    /// Let `d` of simulated time pass: processes run, daemons wake, kernel memory expires,
    /// even if no process is left.
    pub fn advance(&mut self, d: Nanos) -> Result<()> {
        let until = (self.now + Picos::from(d)).min(Picos::from(self.exp.time_limit));
        self.run_events(until, false)?;
        self.now = self.now.max(until);
        for core in &mut self.cores {
            if core.queue.is_empty() {
                core.now = core.now.max(self.now);
            }
        }
        Ok(())
    }

    fn run_events(&mut self, limit: Picos, stop_when_idle: bool) -> Result<()> {
        while let Some((t, ev)) = self.next_event(stop_when_idle) {
            if self.stop_requested().is_some() {
                break;
            }
            if t > limit {
                if !stop_when_idle {
                    break;
                }
                self.now = self.now.max(limit);
                break;
            }
            self.now = self.now.max(t);
            // The CPU whose per-CPU page lists the kernel uses: the core whose turn it is,
            // else the core daemons run on.
            self.kernel.set_cpu(match ev {
                Event::Core(c) => c,
                _ => self.exp.daemon_core as usize,
            });
            self.expire_kmem(t);
            match ev {
                Event::Start(i) => self.start(i, t),
                Event::Daemon(d) => self.run_daemon(d, t),
                Event::Sample => self.sample(t)?,
                Event::Bandwidth => {
                    if let Some(bw) = &mut self.bandwidth {
                        bw.window_end(t, &mut self.cores);
                    }
                }
                Event::Core(c) => {
                    let bound = self.turn_bound(c);
                    self.run_core(c, bound)?;
                    self.now = self.now.max(self.cores[c].now);
                }
            }
            // An allocation in this event (a process's, a daemon's) woke kswapd.
            self.wake_kswapd(self.now);
        }
        Ok(())
    }

    /// Add a process starting now (its `start` is ignored).
    pub fn spawn(&mut self, mut spec: ProcessSpec) {
        spec.start = self.now.to_nanos();
        let i = self.procs.len();
        let core = match spec.core {
            Some(c) => c as usize % self.cores.len(),
            None => i % self.cores.len(),
        };
        self.procs.push(Proc::new(spec, i, core, self.exp.seed));
    }

    /// Kill every live process whose name starts with `prefix` now (`killall -KILL`): it
    /// exits where it stands (its memory freed as at any exit) and is reported
    /// unfinished; one not started yet never starts. Returns how many were killed.
    pub fn kill(&mut self, prefix: &str) -> usize {
        let now = self.now;
        let mut killed = 0;
        for i in 0..self.procs.len() {
            let p = &mut self.procs[i];
            if p.end.is_some() || !p.spec.name.starts_with(prefix) {
                continue;
            }
            killed += 1;
            p.killed = true;
            if p.pid.is_none() {
                p.end = Some(now.to_nanos());
                continue;
            }
            for core in &mut self.cores {
                core.queue.retain(|&j| j != i);
            }
            self.exit(i, now);
        }
        self.refresh_live();
        killed
    }

    /// The stress-highalloc passes finished so far.
    pub fn highalloc_passes(&self) -> &[HighAllocResult] {
        &self.highalloc
    }

    /// Set `vm.min_free_kbytes` now; the watermarks follow.
    pub fn set_min_free_kbytes(&mut self, kb: u64) {
        self.kernel.set_min_free_kbytes(kb);
    }

    /// The simulated time reached so far.
    pub fn now(&self) -> Nanos {
        self.now.to_nanos()
    }

    /// CPU time the kernel daemons called `name` have used so far (ns).
    pub fn daemon_cpu_ns(&self, name: &str) -> u64 {
        self.daemons
            .iter()
            .filter(|d| d.spec.name == name)
            .map(|d| d.cpu.0)
            .sum()
    }

    /// The kernel model, for inspection.
    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    /// The results so far (processes still running are reported as they stand; the
    /// summary is complete only if none is left).
    pub fn results(self) -> RunResult {
        let end = self.now;
        let stopped_by = self.live().then(|| self.stop_requested()).flatten();
        self.finish(end, stopped_by)
    }

    /// The experiment's time limit is reached.
    pub fn at_limit(&self) -> bool {
        self.now >= Picos::from(self.exp.time_limit)
    }

    /// A copy of this run in its present state, which continues exactly as this one
    /// would (the same kernel, policies, processes, clocks and random streams) once
    /// [`Engine::attach`]ed, for callers that run several continuations of one prefix:
    /// `hugemm reproduce` runs a workload several reproductions share once and forks it
    /// for each. The copy has no timeseries sink or watcher (rows it samples stay in
    /// memory) and shares the stop flag. `None` for a VM's guest or a host of VMs, whose
    /// memory is tied to another engine's.
    pub fn fork(&self) -> Option<Detached> {
        if self.host.is_some() || self.mapping_log.is_some() {
            return None;
        }
        Some(Detached {
            exp: self.exp.clone(),
            kernel: self.kernel.clone(),
            policy: dyn_clone::clone_box(&*self.policy),
            tiering: self.tiering.as_ref().map(|t| dyn_clone::clone_box(&**t)),
            cores: self.cores.clone(),
            procs: self.procs.clone(),
            daemons: self.daemons.clone(),
            next_sample: self.next_sample,
            last_sample: self.last_sample,
            timeseries: self.timeseries.clone(),
            stop: self.stop.clone(),
            cycles_per_ps: self.cycles_per_ps,
            scan_cost: self.scan_cost,
            ledger: self.ledger.clone(),
            kcompactd: self.kcompactd,
            highalloc: self.highalloc.clone(),
            kmem_errors: self.kmem_errors,
            now: self.now,
            live: self.live.clone(),
            prezero: self.prezero.clone(),
            kswapd_wakes_seen: self.kswapd_wakes_seen,
            policy_reclaim_cpu: self.policy_reclaim_cpu,
            policy_reclaim_freed: self.policy_reclaim_freed,
            bandwidth: self.bandwidth.clone(),
            balloon: self.balloon.clone(),
        })
    }

    /// A forked run made a run again, with no sink or watcher.
    pub fn attach(d: Detached) -> Engine {
        Engine {
            exp: d.exp,
            kernel: d.kernel,
            policy: d.policy,
            tiering: d.tiering,
            cores: d.cores,
            procs: d.procs,
            daemons: d.daemons,
            next_sample: d.next_sample,
            last_sample: d.last_sample,
            timeseries: d.timeseries,
            sink: None,
            watcher: None,
            frame_maps: None,
            stop: d.stop,
            cycles_per_ps: d.cycles_per_ps,
            scan_cost: d.scan_cost,
            ledger: d.ledger,
            kcompactd: d.kcompactd,
            highalloc: d.highalloc,
            kmem_errors: d.kmem_errors,
            now: d.now,
            live: d.live,
            prezero: d.prezero,
            kswapd_wakes_seen: d.kswapd_wakes_seen,
            policy_reclaim_cpu: d.policy_reclaim_cpu,
            policy_reclaim_freed: d.policy_reclaim_freed,
            bandwidth: d.bandwidth,
            host: None,
            mapping_log: None,
            balloon: d.balloon,
        }
    }

    /// Every process has ended.
    pub fn idle(&self) -> bool {
        !self.live()
    }

    fn live(&self) -> bool {
        self.procs.iter().any(|p| p.end.is_none())
    }

    fn next_event(&self, stop_when_idle: bool) -> Option<(Picos, Event)> {
        if stop_when_idle && !self.live() {
            return None;
        }
        let starts = self
            .procs
            .iter()
            .enumerate()
            .filter(|(_, p)| p.pid.is_none() && p.end.is_none());
        let starts = starts.map(|(i, p)| (Picos::from(p.start), Event::Start(i)));
        let daemons = self
            .daemons
            .iter()
            .enumerate()
            .map(|(i, d)| (d.next, Event::Daemon(i)));
        let sample = std::iter::once((self.next_sample, Event::Sample));
        let bandwidth = self.bandwidth.as_ref().map(|b| (b.next, Event::Bandwidth));
        let cores = self
            .cores
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.queue.is_empty());
        let cores = cores.map(|(i, c)| (c.now, Event::Core(i)));
        starts
            .chain(daemons)
            .chain(sample)
            .chain(bandwidth)
            .chain(cores)
            .min()
    }

    /// How far core `c` may run in this turn.
    fn turn_bound(&self, c: usize) -> Picos {
        let now = self.cores[c].now;
        let turn = Picos::from(self.exp.turn);
        let mut bound = now + turn;
        for p in &self.procs {
            if p.pid.is_none() && p.end.is_none() {
                bound = bound.min(Picos::from(p.start).max(now));
            }
        }
        for d in &self.daemons {
            bound = bound.min(d.next.max(now));
        }
        bound = bound.min(self.next_sample.max(now));
        if let Some(bw) = &self.bandwidth {
            bound = bound.min(bw.next.max(now));
        }
        for (i, other) in self.cores.iter().enumerate() {
            if i != c && !other.queue.is_empty() {
                bound = bound.min(other.now + turn);
            }
        }
        if self.cores[c].queue.len() > 1 {
            bound = bound.min(self.cores[c].slice_end);
        }
        bound.max(now + Picos(1))
    }

    fn start(&mut self, i: usize, t: Picos) {
        let pid = self.kernel.create_process();
        let p = &mut self.procs[i];
        p.pid = Some(pid);
        let core = &mut self.cores[p.core];
        if core.queue.is_empty() {
            core.now = core.now.max(t);
            core.slice_end = core.now + SLICE;
        }
        core.queue.push_back(i);
        p.start = t.to_nanos();
        self.policy.process_started(pid);
        self.refresh_live();
    }

    fn run_daemon(&mut self, d: usize, t: Picos) {
        let run = match self.daemons[d].kind {
            DaemonKind::Policy(index) => {
                let (policy, mut ops) = self.policy_ops(t);
                policy.run_daemon(index, &mut ops)
            }
            DaemonKind::Kcompactd => DaemonRun {
                cpu: self
                    .kcompactd
                    .run(&mut self.kernel, &self.exp.kernel.kcompactd),
                sleep: KCOMPACTD_PERIOD,
            },
            DaemonKind::Prezero => self.run_prezero(t),
            DaemonKind::Tiering => self.run_tiering(t),
            DaemonKind::Kswapd => {
                let (cpu, next) = self.kernel.kswapd_step();
                let sleep = match next {
                    KswapdNext::Step => Nanos::ZERO,
                    KswapdNext::Nap => hugemm_mm::KSWAPD_NAP,
                    KswapdNext::Sleep => UNTIL_WOKEN,
                };
                DaemonRun { cpu, sleep }
            }
        };
        let daemon = &mut self.daemons[d];
        daemon.cpu += run.cpu;
        daemon.next = match run.sleep {
            UNTIL_WOKEN => ASLEEP,
            sleep => t + Picos::from(run.cpu) + Picos::from(sleep).max(Picos(1)),
        };
        let core = &mut self.cores[self.exp.daemon_core as usize];
        core.now = core.now.max(t) + Picos::from(run.cpu);
        self.apply_tlb_flushes();
    }

    /// The policy, and apart from it the interface it acts through at time `t`, between
    /// turns (every process visible).
    fn policy_ops(&mut self, t: Picos) -> (&mut dyn Policy, EngineOps<'_>) {
        let ops = EngineOps {
            kernel: &mut self.kernel,
            procs: Procs::All(&mut self.procs),
            now: t.to_nanos(),
            scan_cost: self.scan_cost,
        };
        (self.policy.as_mut(), ops)
    }

    /// One run of the pre-zeroing daemon, and its effect on every core's last-level cache
    /// and DRAM latency until the next run (see `prezero.rs`).
    fn run_prezero(&mut self, t: Picos) -> DaemonRun {
        let cfg = self.exp.kernel.prezero;
        let mut run = self.prezero.run(&mut self.kernel, &cfg);
        if let Some(h) = self.host.as_mut() {
            // In a guest the stores are first writes as far as the host knows: it backs
            // each block, and the daemon's vCPU waits for its faults.
            let page = self.exp.geometry.base_bytes();
            let region = self.exp.geometry.huge_bytes();
            for &(pfn, frames) in &run.zeroed {
                let (mut at, end) = (pfn.0 * page, (pfn.0 + frames) * page);
                while at < end {
                    let next = ((at / region) + 1) * region;
                    run.cpu += h.populate(at, next.min(end) - at).time;
                    at = next;
                }
            }
        }
        let base = self.exp.geometry.base_bytes();
        for core in &mut self.cores {
            for &(pfn, frames) in &run.cached {
                core.mmu.fill_llc(pfn.0 * base, frames * base);
            }
        }
        if let Some(bw) = &mut self.bandwidth {
            // Several nodes: the traffic joins the shared-bandwidth model.
            bw.burst(0, run.traffic, t, t + Picos::from(cfg.period));
        } else if let Some(gbps) = self.exp.profile.dram_gbps {
            let secs = cfg.period.0 as f64 / 1e9;
            let u = (run.traffic as f64 / (secs * gbps * 1e9)).min(0.9);
            for core in &mut self.cores {
                core.mmu.set_dram_load(1.0 / (1.0 - u));
            }
        }
        // The rate is per period: the run's own time comes out of its sleep.
        DaemonRun {
            cpu: run.cpu,
            sleep: cfg.period.saturating_sub(run.cpu),
        }
    }

    /// One run of the tiering policy: its CPU goes to the daemon core, and each process
    /// waits, at its next turn, for its pages that were in flight.
    fn run_tiering(&mut self, t: Picos) -> DaemonRun {
        let Some(mut tiering) = self.tiering.take() else {
            return DaemonRun::default();
        };
        let period = tiering.period();
        let ops_run = {
            let mut ops = EngineOps {
                kernel: &mut self.kernel,
                procs: Procs::All(&mut self.procs),
                now: t.to_nanos(),
                scan_cost: self.scan_cost,
            };
            tiering.run(&mut ops)
        };
        self.tiering = Some(tiering);
        if let Some(bw) = &mut self.bandwidth {
            let end = t + Picos::from(ops_run.cpu);
            bw.migrated(self.kernel.migration_traffic(), t, end);
        }
        for (pid, stall) in ops_run.stalls {
            if let Some(p) = self.procs.iter_mut().find(|p| p.pid == Some(pid)) {
                p.stall += Picos::from(stall);
                p.migration_stall += stall;
            }
        }
        DaemonRun {
            cpu: ops_run.cpu,
            sleep: period.saturating_sub(ops_run.cpu),
        }
    }

    /// Rebuild the list of live processes direct reclaim sees (at every start and exit).
    fn refresh_live(&mut self) {
        self.live.clear();
        for p in self.procs.iter().filter(|p| p.running()) {
            self.live.push(LiveProc {
                pid: p.pid.expect("running"),
                start: p.start,
            });
        }
    }

    /// After a turn: when free memory is below the low watermark, or kswapd ran, let the
    /// policy give memory back as kswapd's shrinkers would ([`Pressure::Kswapd`]); its CPU
    /// time goes to the daemon core.
    pub(crate) fn background_reclaim(&mut self, t: Picos) {
        if self.kernel.take_boost_compaction() && self.exp.kernel.kcompactd.enabled {
            // Boosted reclaim wakes kcompactd for a pageblock (`balance_pgdat`).
            let pageblock = self.kernel.phys().pageblock_order();
            self.kcompactd.wake = self.kcompactd.wake.max(Some(pageblock));
            self.wake_kcompactd(t);
        }
        let wakes = self.kernel.stats().kswapd_wakes;
        let free = self.kernel.phys().frames_free();
        let wmark = self.kernel.watermarks();
        if free >= wmark.low && wakes == self.kswapd_wakes_seen {
            return;
        }
        self.kswapd_wakes_seen = wakes;
        let want = wmark.high.saturating_sub(free).max(1);
        let (policy, mut ops) = self.policy_ops(t);
        let r = policy.reclaim(&mut ops, want, Pressure::Kswapd);
        self.policy_reclaim_cpu += r.cpu;
        self.policy_reclaim_freed += r.freed;
        let core = &mut self.cores[self.exp.daemon_core as usize];
        core.now = core.now.max(t) + Picos::from(r.cpu);
        self.apply_tlb_flushes();
    }

    /// When an allocation woke kswapd on its own thread, its first step runs at `now`.
    pub(crate) fn wake_kswapd(&mut self, now: Picos) {
        if self.kernel.take_kswapd_wake() {
            for d in &mut self.daemons {
                if d.kind == DaemonKind::Kswapd {
                    d.next = d.next.min(now);
                }
            }
        }
    }

    /// Bring kcompactd's next run forward to `now` (a fault asked for it).
    pub(crate) fn wake_kcompactd(&mut self, now: Picos) {
        for d in &mut self.daemons {
            if d.kind == DaemonKind::Kcompactd {
                d.next = d.next.min(now);
            }
        }
    }

    /// Carry out TLB shootdowns the kernel recorded, on every core.
    pub(crate) fn apply_tlb_flushes(&mut self) {
        if self.host.is_some() {
            self.apply_host_populates();
        }
        for f in self.kernel.take_tlb_flushes() {
            for core in &mut self.cores {
                core.mmu.invalidate(f.pid.0, f.start, f.end);
            }
            if let Some(log) = &mut self.mapping_log {
                log.push(f);
            }
        }
    }

    fn sample(&mut self, t: Picos) -> Result<()> {
        let first = self.timeseries.len();
        let time_ns = t.to_nanos().0;
        for p in self.procs.iter_mut().filter(|p| p.running()) {
            let pid = p.pid.expect("running process has a pid");
            let (dw, dc) = (
                p.pmu.walk_cycles_load + p.pmu.walk_cycles_store
                    - p.last_sample.walk_cycles_load
                    - p.last_sample.walk_cycles_store,
                p.pmu.cycles - p.last_sample.cycles,
            );
            self.timeseries.push(TimeseriesRow {
                time_ns,
                process: p.spec.name.clone(),
                pid: Some(pid.0),
                references: Some(p.pmu.references),
                mmu_overhead: Some(if dc == 0 {
                    0.0
                } else {
                    (dw as f64 / dc as f64).min(1.0)
                }),
                huge_pages: Some(self.kernel.huge_pages(pid)),
                rss_bytes: Some(self.kernel.rss_bytes(pid)),
                useful_bytes: Some(self.kernel.useful_bytes(pid)),
                faults: Some(p.fault_latency.len()),
                faults_4k: Some(p.pmu.faults_4k),
                faults_2m: Some(p.pmu.faults_2m),
                promotions: Some(p.promotions),
                ..Default::default()
            });
            p.last_sample = p.pmu.clone();
        }
        let stats = self.kernel.stats();
        let frag = self.kernel.frag_metrics();
        self.timeseries.push(TimeseriesRow {
            time_ns,
            process: "system".into(),
            frames_free: Some(self.kernel.phys().frames_free()),
            collapses: Some(stats.collapses),
            splits: Some(stats.splits),
            page_cache_pages: Some(self.kernel.page_cache_pages()),
            fmfi: Some(frag.fmfi),
            tainted_pageblocks: Some(frag.tainted_pageblocks),
            pageblocks_unmovable: Some(frag.pageblocks.unmovable),
            pageblocks_reclaimable: Some(frag.pageblocks.reclaimable),
            pages_migrated: Some(stats.pgmigrate_success),
            zeroed_free_frames: Some(self.kernel.phys().zeroed_free_frames()),
            zero_subpages_recovered: Some(stats.zero_subpages_recovered),
            ..Default::default()
        });
        let interval = t - self.last_sample.unwrap_or(Picos(0));
        self.sample_nodes(time_ns, interval);
        self.frame_map(t, false)?;
        self.next_sample = t + Picos::from(self.exp.sample_interval);
        self.last_sample = Some(t);
        if let Some(watcher) = &mut self.watcher {
            watcher
                .write(&self.timeseries[first..])
                .map_err(SimError::Output)?;
        }
        if let Some(sink) = &mut self.sink {
            sink.write(&self.timeseries[first..])
                .map_err(SimError::Output)?;
            self.timeseries.truncate(first);
        }
        Ok(())
    }

    /// The frame map at `t`, if one is wanted and due (or `last`: the run's end) and not
    /// already written at `t`.
    fn frame_map(&mut self, t: Picos, last: bool) -> Result<()> {
        let Some(maps) = &mut self.frame_maps else {
            return Ok(());
        };
        if maps.written == Some(t) || (t < maps.next && !last) {
            return Ok(());
        }
        let flags = self.kernel.phys().kpageflags();
        maps.sink
            .write(t.to_nanos().0, &flags)
            .map_err(SimError::Output)?;
        maps.written = Some(t);
        while maps.next <= t {
            maps.next += maps.every;
        }
        Ok(())
    }

    /// On a machine of several nodes, a row per node after the system row: `node:<name>`
    /// with the node's free frames, the pages moved between nodes so far and the
    /// bandwidth in use over the last `interval`.
    fn sample_nodes(&mut self, time_ns: u64, interval: Picos) {
        let phys = self.kernel.phys();
        if phys.node_count() < 2 {
            return;
        }
        let gbps = self
            .bandwidth
            .as_mut()
            .map(|b| b.sample(interval))
            .unwrap_or_default();
        let moved = self.kernel.tier_stats().total;
        for n in 0..phys.node_count() {
            let name = self.exp.profile.node_name(n).unwrap_or("?");
            self.timeseries.push(TimeseriesRow {
                time_ns,
                process: format!("node:{name}"),
                frames_free: Some(phys.node_frames_free(hugemm_mm::NodeId(n as u8))),
                pages_migrated: Some(moved.base_pages + moved.huge_pages),
                bandwidth_gbps: gbps.get(n).copied(),
                ..Default::default()
            });
        }
    }

    /// End process `i` at core time `t`: record its final state and free its memory.
    pub(crate) fn exit(&mut self, i: usize, t: Picos) {
        let p = &mut self.procs[i];
        let Some(pid) = p.pid else { return };
        p.huge_end = self.kernel.huge_pages(pid);
        p.rss_end = self.kernel.rss_bytes(pid);
        p.useful_end = self.kernel.useful_bytes(pid);
        if self.kernel.phys().node_count() > 1 {
            p.nodes_end = self.kernel.node_usage(pid);
        }
        if p.oom {
            p.oom_at = Some(t.to_nanos());
        }
        p.end = Some(t.to_nanos());
        // A stress-highalloc pass cut short (a killed process) gives back what it holds.
        if let Activity::HighAlloc(pass) = std::mem::replace(&mut p.activity, Activity::Begin) {
            self.high_alloc_end(i, *pass, t);
        }
        self.kernel.exit_process(pid);
        self.free_exit_kmem(i);
        self.policy.process_exited(pid);
        if let Some(t) = &mut self.tiering {
            t.process_exited(pid);
        }
        self.apply_tlb_flushes();
        self.refresh_live();
    }

    /// The nodes and migrations, on a machine of several nodes.
    fn tier_summary(&self) -> Option<TierSummary> {
        let phys = self.kernel.phys();
        if phys.node_count() < 2 {
            return None;
        }
        let base = self.exp.geometry.base_bytes();
        let traffic = self
            .bandwidth
            .as_ref()
            .map(Bandwidth::traffic)
            .unwrap_or_default();
        let nodes = (0..phys.node_count())
            .map(|n| {
                let id = hugemm_mm::NodeId(n as u8);
                let (a, b) = phys.node_frames(id).unwrap_or_default();
                let t = traffic.get(n).copied().unwrap_or_default();
                NodeSummary {
                    name: self.exp.profile.node_name(n).unwrap_or("?").to_string(),
                    bytes: (b.0 - a.0) * base,
                    free_bytes_end: phys.node_frames_free(id) * base,
                    traffic_bytes: t.bytes,
                    peak_utilisation: t.peak_utilisation,
                }
            })
            .collect();
        let stats = self.kernel.tier_stats();
        Some(TierSummary {
            policy: self
                .tiering
                .as_ref()
                .map_or("none", |t| t.name())
                .to_string(),
            nodes,
            migrated: stats.total,
            calls: stats.calls,
        })
    }

    /// The zones, on a node split into zones.
    fn zone_summary(&self) -> Vec<ZoneSummary> {
        let Some(zones) = self.kernel.zones() else {
            return Vec::new();
        };
        let phys = self.kernel.phys();
        let names: &[&str] = match zones.count() {
            2 => &["DMA", "DMA32"],
            _ => &["DMA", "DMA32", "Normal", "Movable"],
        };
        let by_zone = phys.fallback_stats().by_zone;
        let tainted = self.kernel.tainted_pageblocks_by_zone();
        (0..zones.count())
            .map(|z| ZoneSummary {
                name: names.get(z).unwrap_or(&"?").to_string(),
                bytes: zones.managed[z] * self.exp.geometry.base_bytes(),
                watermarks: zones.wmark[z],
                lowmem_reserve: zones.lowmem_reserve[z].clone(),
                free_frames_end: phys.zone_frames_free(z),
                page_cache_pages_end: self.kernel.zone_page_cache_pages(z),
                pgscan: zones.scanned[z],
                fallbacks: by_zone.get(z).copied().unwrap_or(0),
                tainted_pageblocks_end: tainted.get(z).copied().unwrap_or(0),
            })
            .collect()
    }

    fn finish(mut self, end: Picos, stopped_by: Option<StopReason>) -> RunResult {
        let complete = !self.live() && stopped_by.is_none();
        for i in 0..self.procs.len() {
            if self.procs[i].running() {
                let pid = self.procs[i].pid.expect("running");
                self.procs[i].huge_end = self.kernel.huge_pages(pid);
                self.procs[i].rss_end = self.kernel.rss_bytes(pid);
                self.procs[i].useful_end = self.kernel.useful_bytes(pid);
                if self.kernel.phys().node_count() > 1 {
                    self.procs[i].nodes_end = self.kernel.node_usage(pid);
                }
            }
        }
        let end_ns = end.to_nanos().0;
        let mut processes: Vec<ProcessSummary> =
            self.procs.iter().map(|p| summarise(p, end_ns)).collect();
        for (p, s) in self.procs.iter().zip(&mut processes) {
            s.nodes = p.nodes_end.clone();
        }
        let stats = self.kernel.stats();
        let mut daemon_cpu_ns = BTreeMap::new();
        for d in &self.daemons {
            *daemon_cpu_ns.entry(d.spec.name.to_string()).or_insert(0) += d.cpu.0;
        }
        let system = SystemSummary {
            profile: self.exp.profile.name.clone(),
            policy: self.policy.name().to_string(),
            mode: match self.exp.mode {
                Mode::Exact => "exact".into(),
                Mode::Sampled(_) => "sampled".into(),
            },
            seed: self.exp.seed,
            sim_time_ns: end_ns,
            frames_total: self.kernel.phys().frames_total(),
            frames_free_end: self.kernel.phys().frames_free(),
            collapses: stats.collapses,
            collapse_failures: stats.collapse_failures,
            splits: stats.splits,
            promotions_in_place: stats.promotions_in_place,
            reservations_made: stats.reservations_made,
            reservations_broken: stats.reservations_broken,
            reserv_frames_returned: stats.reserv_frames_returned,
            reservations_end: self.kernel.reservation_census(),
            oom_events: stats.oom_events,
            daemon_cpu_ns,
            highalloc: self.highalloc.clone(),
            fallback_policy: self.kernel.phys().fallback_policy_name().to_string(),
            kernel: *stats,
            fallback: self.kernel.phys().fallback_stats(),
            fragmentation_end: self.kernel.frag_metrics(),
            page_cache_pages_end: self.kernel.page_cache_pages(),
            kmem_free_errors: self.kmem_errors,
            prezero_pages: self.prezero.pages,
            prezero_traffic_bytes: self.prezero.traffic,
            zeroed_free_frames_end: self.kernel.phys().zeroed_free_frames(),
            policy_kswapd_reclaim_ns: self.policy_reclaim_cpu.0,
            policy_kswapd_reclaim_frames: self.policy_reclaim_freed,
            tiers: self.tier_summary(),
            zones: self.zone_summary(),
        };
        let mut tlb_windows: Vec<_> = self
            .procs
            .iter_mut()
            .flat_map(|p| std::mem::take(&mut p.tlb_windows))
            .collect();
        tlb_windows.sort_by_key(|w| (w.time_ns, w.pid));
        RunResult {
            summary: Summary {
                schema: 1,
                complete,
                stopped_by,
                processes,
                system,
            },
            timeseries: self.timeseries,
            tlb_windows,
        }
    }
}

fn summarise(p: &Proc, end_ns: u64) -> ProcessSummary {
    let finished = p.end.is_some() && !p.oom && !p.killed && p.error.is_none();
    let end = p.end.map(|e| e.0).unwrap_or(end_ns);
    let walk = p.pmu.walk_cycles_load + p.pmu.walk_cycles_store;
    ProcessSummary {
        name: p.spec.name.clone(),
        pid: p.pid.map(|x| x.0).unwrap_or(0),
        start_ns: p.start.0,
        end_ns: end,
        runtime_ns: end.saturating_sub(p.start.0),
        finished,
        killed: p.killed,
        references: p.pmu.references,
        references_exact: p.references_exact,
        faults_4k: p.pmu.faults_4k,
        faults_2m: p.pmu.faults_2m,
        faults_zero_page: p.pmu.faults_zero_page,
        faults_huge_fallback: p.faults_huge_fallback,
        promotions: p.promotions,
        fault_time_ns: p.fault_time.0,
        faults: p.fault_latency.len(),
        fault_alloc_ns: p.fault_alloc.0,
        fault_zeroing_ns: p.fault_zeroing.0,
        fault_trap_ns: p
            .fault_time
            .0
            .saturating_sub(p.fault_alloc.0 + p.fault_zeroing.0),
        fault_mean_ns: match p.fault_latency.len() {
            0 => 0.0,
            n => p.fault_time.0 as f64 / n as f64,
        },
        fault_p99_ns: p.fault_latency.value_at_quantile(0.99),
        cycles: p.pmu.cycles,
        walk_cycles: walk,
        mmu_overhead: p.pmu.mmu_overhead(),
        l1_tlb_hits: p.pmu.l1_tlb_hits,
        stlb_hits: p.pmu.stlb_hits,
        walks: p.pmu.walks,
        huge_pages_end: p.huge_end,
        rss_bytes_end: p.rss_end,
        useful_bytes_end: p.useful_end,
        bloat_bytes_end: p.rss_end.saturating_sub(p.useful_end),
        oom: p.oom,
        oom_time_ns: p.oom_at.map(|t| t.0),
        kv: p.kv_results.clone(),
        error: p.error.clone(),
        migration_stall_ns: p.migration_stall.0,
        tlb_sampling_ns: p.tlb_sampling_overhead.0,
        nodes: Vec::new(),
    }
}
