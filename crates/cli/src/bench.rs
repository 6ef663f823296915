//! `hugemm bench`: the simulator's own throughput, measured in release builds on this
//! machine. Each figure is the median of several repetitions (the machines are shared and
//! noisy); reference rates subtract a run that only sets the buffer up, so they count the
//! references alone. Every figure repeats through `medians_of` and times only what
//! `time` wraps, so what is repeated and what is timed can be read off each function.
//!
//! Each [`Figure`] runs in a process of its own ([`run`] starts `hugemm bench --figure
//! NAME` once per figure). Measured in one process after the other figures, the
//! kernel-build figure moved 5.4% between two builds (c204ccd and 62237b6, medians of
//! four runs each, 2026-11-27) and alone 1.0%, within its noise, with no step at any
//! commit between: what the earlier figures leave behind (their heap, most likely) made
//! the same code slower, so a figure's change could come from a change to another one.

use comfy_table::{CellAlignment, Table};
use hugemm_hw::{Geometry, GuestProfile, MachineProfile, Nanos, PageSize, Pid, VirtAddr};
use hugemm_mm::{
    CompactRequest, FileId, HugeAdvice, Kernel, MemConfig, MmCosts, ScanStyle, Touch, ZeroScan,
};
use hugemm_policy::{LinuxConfig, PolicyConfig, ThpMode};
use hugemm_sim::{Engine, Experiment, Mode, SampledConfig};
use hugemm_workload::kbuild::{FileIds, KernelBuild};
use hugemm_workload::Writes;
use hugemm_workload::{
    builtin, AccessPhase, Advice, Amount, BufferId, Pattern, Phase, ProcessSpec,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

/// The figures `hugemm bench --json` prints.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BenchReport {
    /// Exact mode, uniform random dependent references over 4 GiB of 4 KB pages.
    pub random_4k_refs_per_s: f64,
    /// The same over 2 MB pages.
    pub random_2m_refs_per_s: f64,
    /// The 4 KB figure in a virtual machine: the same profile as a guest whose host backs
    /// all of its memory with 4 KB pages, so every TLB miss walks both dimensions.
    pub random_4k_nested_refs_per_s: f64,
    /// Exact mode, sequential 64-byte-stride references over 4 GiB of 4 KB pages.
    pub sequential_refs_per_s: f64,
    /// Sampled mode, 3 processes randomly reading 8 GiB each (4 KB pages), default
    /// sampling settings: simulated seconds per wall-clock second of the random phase.
    pub sampled_sim_seconds_per_wall_second: f64,
    /// The same over the whole run, including the touch phases' 6M faults.
    pub sampled_whole_run_sim_seconds_per_wall_second: f64,
    /// Bytes of kernel-model metadata per physical frame.
    pub bytes_per_frame: usize,
    /// Wall-clock milliseconds to set up a 64 GiB machine.
    pub setup_64gib_ms: f64,
    /// Wall-clock milliseconds of a full compaction (`compact_memory`) of a 16 GiB machine
    /// whose used 12 GiB alternate page-cache and anonymous frames, the page cache then
    /// deleted (every other used frame free, no free order-9 block).
    pub compact_16gib_ms: f64,
    /// Wall-clock milliseconds of one HawkEye bloat-recovery pass over a 16 GiB machine.
    /// One process maps 12 GiB of anonymous memory with 2 MB pages (6,144 write faults)
    /// and writes data into every 4th base page of each, so each huge page is 3/4 bloat
    /// (384 base pages never written, zero-filled). The pass scans every huge page
    /// (`dedup_zero_subpages`, full scan, `max_zero` 0), splitting each and freeing its
    /// zero-filled frames (9 GiB in all). Only the pass is timed.
    pub bloat_recovery_16gib_ms: f64,
    /// Wall-clock seconds to simulate a 16 GiB machine through two kernel builds
    /// (`make -j4`, 2 x 1,000 units, compiler heaps 4-16 MiB, sampled mode, metrics
    /// sampled every 10 s), with Linux's default fallback. The APSys'16 files' build
    /// before they went to the paper's scale (7,000 units, 16-64 MiB heaps); kept as it
    /// was so that the figure stays comparable with earlier medians. The full-scale
    /// files' wall times are in `experiments/apsys16/README.md`.
    pub kbuild_16gib_s: f64,
    /// Repetitions behind each median.
    pub repetitions: u32,
}

/// The figures as `hugemm bench` prints them: one per row, name, value and unit, in
/// hugemm's one table style (`reproduce::style_table`), the unit left-aligned one space
/// after its value so that the two read as one quantity.
impl std::fmt::Display for BenchReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let rows = [
            (
                "exact, random over 4 GiB, 4 KB pages",
                format!("{:.2}", self.random_4k_refs_per_s / 1e6),
                "M refs/s",
            ),
            (
                "exact, random over 4 GiB, 2 MB pages",
                format!("{:.2}", self.random_2m_refs_per_s / 1e6),
                "M refs/s",
            ),
            (
                "exact, random over 4 GiB, 4 KB nested",
                format!("{:.2}", self.random_4k_nested_refs_per_s / 1e6),
                "M refs/s",
            ),
            (
                "exact, sequential over 4 GiB, 4 KB",
                format!("{:.2}", self.sequential_refs_per_s / 1e6),
                "M refs/s",
            ),
            (
                "sampled, 3 x 8 GiB random phase",
                format!("{:.1}", self.sampled_sim_seconds_per_wall_second),
                "simulated s / wall s",
            ),
            (
                "sampled, same, whole run (with touch)",
                format!("{:.1}", self.sampled_whole_run_sim_seconds_per_wall_second),
                "simulated s / wall s",
            ),
            (
                "kernel-model metadata",
                self.bytes_per_frame.to_string(),
                "bytes / frame",
            ),
            (
                "64 GiB machine set-up",
                format!("{:.1}", self.setup_64gib_ms),
                "ms",
            ),
            (
                "16 GiB full compaction (fragmented)",
                format!("{:.1}", self.compact_16gib_ms),
                "ms",
            ),
            (
                "16 GiB bloat-recovery pass (12 GiB)",
                format!("{:.1}", self.bloat_recovery_16gib_ms),
                "ms",
            ),
            (
                "16 GiB through two kernel builds",
                format!("{:.1}", self.kbuild_16gib_s),
                "s",
            ),
        ];
        let mut t = Table::new();
        t.add_rows(
            rows.iter()
                .map(|(name, value, unit)| [*name, value.as_str(), *unit]),
        );
        crate::reproduce::style_table(&mut t);
        if let Some(unit) = t.column_mut(2) {
            unit.set_padding((1, 0));
            unit.set_cell_alignment(CellAlignment::Left);
        }
        write!(f, "{}", crate::reproduce::render_table(&t))?;
        writeln!(f, "(medians of {} repetitions)", self.repetitions)
    }
}

const GIB: u64 = 1 << 30;

/// The median of `xs`: the middle value, or the mean of the two middle values of an even
/// count; NaN for none.
fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    let n = xs.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => xs[n / 2],
        _ => (xs[n / 2 - 1] + xs[n / 2]) / 2.0,
    }
}

/// Runs `once` `reps` times and returns the median of each of the `N` figures it
/// measures. Several figures come from one repetition when they share its runs (the
/// sampled rates of the random phase alone and of the whole run).
fn medians_of<const N: usize>(
    reps: u32,
    mut once: impl FnMut() -> anyhow::Result<[f64; N]>,
) -> anyhow::Result<[f64; N]> {
    anyhow::ensure!(reps > 0, "a benchmark needs at least one repetition");
    let runs = (0..reps)
        .map(|_| once())
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(std::array::from_fn(|i| {
        median(runs.iter().map(|r| r[i]).collect())
    }))
}

/// Runs `once` `reps` times and returns the median of the figure it measures.
fn median_of(reps: u32, mut once: impl FnMut() -> anyhow::Result<f64>) -> anyhow::Result<f64> {
    let [m] = medians_of(reps, || Ok([once()?]))?;
    Ok(m)
}

/// What `f` returns, and the wall-clock seconds it took. Whatever `f` returns is dropped
/// by the caller, outside the time.
fn time<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let start = Instant::now();
    let out = f();
    (out, start.elapsed().as_secs_f64())
}

fn experiment(
    memory: u64,
    thp: ThpMode,
    processes: Vec<ProcessSpec>,
    mode: Mode,
) -> anyhow::Result<Experiment> {
    // The figures measure the simulator on bare metal: the demo's profile without its
    // guest dimension (`random_4k_nested_refs_per_s` puts it back).
    let mut profile = MachineProfile::builtin(crate::demo::PROFILE)
        .ok_or_else(|| anyhow::anyhow!("profile missing"))?;
    profile.guest = None;
    let policy = PolicyConfig::Linux(LinuxConfig {
        enabled: thp,
        ..LinuxConfig::default()
    });
    let cores = processes.len().max(1) as u32;
    Ok(Experiment {
        profile,
        cores,
        memory_bytes: memory,
        node_bytes: Vec::new(),
        zone_bytes: Vec::new(),
        home_node: 0,
        tiering: None,
        geometry: Geometry::X86_64,
        policy,
        processes,
        mode,
        seed: 1,
        sample_interval: Nanos::from_secs(10),
        turn: hugemm_sim::SYNC.to_nanos(),
        time_limit: Nanos::from_secs(100_000),
        daemon_core: 0,
        kernel: Default::default(),
    })
}

/// Wall seconds to run `exp` (the engine's set-up included), and the simulated seconds
/// it covered.
fn run_timed(exp: Experiment) -> anyhow::Result<(f64, f64)> {
    let (r, wall) = time(|| -> anyhow::Result<_> { Ok(Engine::new(exp)?.run()?) });
    Ok((wall, r?.summary.system.sim_time_ns as f64 / 1e9))
}

fn access_process(bytes: u64, pattern: Pattern, refs: u64) -> ProcessSpec {
    let mut p = builtin::random_access("bench", bytes, 1, Advice::Default);
    if let Some(Phase::Access(a)) = p.phases.last_mut() {
        *a = AccessPhase {
            buffer: BufferId(0),
            pattern,
            amount: Amount::Refs(refs),
            dependent: true,
            write_fraction: 0.0,
            compute: Nanos::ZERO,
            instructions_per_ref: None,
            writes: Writes::default(),
        };
    }
    p
}

/// References per second of exact mode for `pattern` over 4 GiB.
fn refs_per_s(thp: ThpMode, pattern: Pattern, refs: u64, reps: u32) -> anyhow::Result<f64> {
    refs_per_s_on(thp, pattern, refs, reps, None)
}

/// [`refs_per_s`] on `guest`'s machine: the bench profile run as that guest.
fn refs_per_s_on(
    thp: ThpMode,
    pattern: Pattern,
    refs: u64,
    reps: u32,
    guest: Option<&GuestProfile>,
) -> anyhow::Result<f64> {
    let build = |refs| -> anyhow::Result<Experiment> {
        let mut exp = experiment(
            6 * GIB,
            thp,
            vec![access_process(4 * GIB, pattern, refs)],
            Mode::Exact,
        )?;
        exp.profile.guest = guest.cloned();
        Ok(exp)
    };
    median_of(reps, || {
        let setup = run_timed(build(1)?)?.0;
        let full = run_timed(build(refs)?)?.0;
        Ok(refs as f64 / (full - setup).max(1e-9))
    })
}

/// The guest dimension of the bench's profile with every guest page on a host 4 KB page.
fn guest_on_4k_host() -> anyhow::Result<GuestProfile> {
    let mut g = MachineProfile::builtin(crate::demo::PROFILE)
        .and_then(|p| p.guest)
        .ok_or_else(|| anyhow::anyhow!("profile {} is not a guest", crate::demo::PROFILE))?;
    g.host_huge_fraction = 0.0;
    Ok(g)
}

/// Three processes each touching then randomly reading 8 GiB for `seconds`.
fn sampled_experiment(seconds: u64) -> anyhow::Result<Experiment> {
    let procs = (0..3)
        .map(|i| {
            let mut p = builtin::random_access(&format!("p{i}"), 8 * GIB, 1, Advice::Default);
            if let Some(Phase::Access(a)) = p.phases.last_mut() {
                a.amount = Amount::Duration(Nanos::from_secs(seconds));
            }
            p
        })
        .collect();
    experiment(
        32 * GIB,
        ThpMode::Never,
        procs,
        Mode::Sampled(SampledConfig::default()),
    )
}

/// Simulated seconds per wall second of sampled mode: the random phase alone (a run with a
/// 1 s random phase subtracted) and the whole run including the touch phases.
fn sampled_rate(reps: u32) -> anyhow::Result<(f64, f64)> {
    let [steady, whole] = medians_of(reps, || {
        let (w0, s0) = run_timed(sampled_experiment(1)?)?;
        let (w1, s1) = run_timed(sampled_experiment(301)?)?;
        Ok([(s1 - s0) / (w1 - w0).max(1e-9), s1 / w1])
    })?;
    Ok((steady, whole))
}

/// The kernel-model costs of the bench's profile.
fn bench_costs() -> anyhow::Result<MmCosts> {
    let profile = MachineProfile::builtin(crate::demo::PROFILE)
        .ok_or_else(|| anyhow::anyhow!("profile missing"))?;
    Ok(hugemm_sim::mm_costs(&profile))
}

/// A kernel model of `bytes` of x86-64 memory, all free.
fn machine(bytes: u64, costs: MmCosts) -> anyhow::Result<Kernel> {
    let cfg = MemConfig {
        bytes,
        geometry: Geometry::X86_64,
    };
    Ok(Kernel::new(&cfg, costs)?)
}

/// Milliseconds to set up a 64 GiB machine (tearing it down is not timed).
fn setup_ms(reps: u32) -> anyhow::Result<f64> {
    let costs = bench_costs()?;
    median_of(reps, || {
        let (k, s) = time(|| machine(64 * GIB, costs));
        drop(k?);
        Ok(s * 1e3)
    })
}

/// A 16 GiB machine with every other frame of 12 GiB free (see
/// [`BenchReport::compact_16gib_ms`]).
fn fragmented_16gib(costs: MmCosts) -> anyhow::Result<Kernel> {
    const PAGE: u64 = 4096;
    let mut k = machine(16 * GIB, costs)?;
    let pid = k.create_process();
    let va = k.mmap(pid, 16 * GIB, HugeAdvice::None)?;
    let leave = 4 * GIB / PAGE;
    let mut i = 0;
    while k.phys().frames_free() > leave {
        k.file_read(FileId(1), i, 1);
        k.fault(pid, VirtAddr(va.0 + i * PAGE), true, PageSize::Base);
        i += 1;
    }
    k.file_delete(FileId(1));
    Ok(k)
}

/// Milliseconds of one full compaction of [`fragmented_16gib`] (fragmenting it is not
/// timed).
fn compact_ms(reps: u32) -> anyhow::Result<f64> {
    let costs = bench_costs()?;
    median_of(reps, || {
        let mut k = fragmented_16gib(costs)?;
        let (out, s) = time(|| k.compact(CompactRequest::Full));
        anyhow::ensure!(
            out.migrated > 0,
            "the compaction benchmark migrated nothing"
        );
        Ok(s * 1e3)
    })
}

/// A 16 GiB machine whose one process maps 12 GiB with huge pages, every 4th base page
/// written (see [`BenchReport::bloat_recovery_16gib_ms`]).
fn bloated_16gib(costs: MmCosts) -> anyhow::Result<(Kernel, Pid)> {
    const PAGE: u64 = 4096;
    const HUGE: u64 = 2 << 20;
    let mut k = machine(16 * GIB, costs)?;
    let pid = k.create_process();
    let va = k.mmap(pid, 12 * GIB, HugeAdvice::Hugepage)?;
    for region in (va.0..va.0 + 12 * GIB).step_by(HUGE as usize) {
        let out = k.fault(pid, VirtAddr(region), true, PageSize::Huge);
        anyhow::ensure!(
            out.size == PageSize::Huge && !out.oom,
            "the bloat-recovery benchmark got no huge page at {region:#x}"
        );
        for page in (region..region + HUGE).step_by(4 * PAGE as usize) {
            let t = k.touch(pid, VirtAddr(page), true);
            anyhow::ensure!(
                matches!(
                    t,
                    Touch::Mapped {
                        size: PageSize::Huge,
                        ..
                    }
                ),
                "the bloat-recovery benchmark's write at {page:#x} found no huge page"
            );
        }
    }
    Ok((k, pid))
}

/// Milliseconds of one bloat-recovery pass over [`bloated_16gib`] (building it is not
/// timed).
fn bloat_recovery_ms(reps: u32) -> anyhow::Result<f64> {
    let costs = bench_costs()?;
    let scan = ZeroScan {
        max_zero: 0,
        style: ScanStyle::Full,
    };
    median_of(reps, || {
        let (mut k, pid) = bloated_16gib(costs)?;
        let regions = k.huge_regions(pid);
        anyhow::ensure!(
            regions.len() as u64 == 12 * GIB / (2 << 20),
            "the bloat-recovery benchmark mapped {} huge pages",
            regions.len()
        );
        let (recovered, s) = time(|| -> anyhow::Result<u64> {
            let mut recovered = 0u64;
            for region in regions {
                recovered += u64::from(k.dedup_zero_subpages(pid, region, scan)?.recovered);
            }
            Ok(recovered)
        });
        let recovered = recovered?;
        anyhow::ensure!(
            recovered == 12 * GIB / 4096 / 4 * 3,
            "the bloat-recovery benchmark recovered {recovered} frames"
        );
        Ok(s * 1e3)
    })
}

/// Wall seconds of [`BenchReport::kbuild_16gib_s`]'s run.
fn kbuild_16gib_s(reps: u32) -> anyhow::Result<f64> {
    let build = KernelBuild {
        jobs: 4,
        builds: 2,
        units: 1_000,
        heap_bytes: (4 << 20, 16 << 20),
        ..KernelBuild::default()
    };
    median_of(reps, || {
        let mut exp = experiment(
            16 * GIB,
            ThpMode::Never,
            build.processes("make", Nanos::ZERO, &mut FileIds::from(0)),
            Mode::Sampled(SampledConfig::default()),
        )?;
        exp.profile = MachineProfile::builtin("haswell-e5-2690v3")
            .ok_or_else(|| anyhow::anyhow!("profile missing"))?;
        let (wall, sim) = run_timed(exp)?;
        anyhow::ensure!(sim > 0.0, "the kernel-build benchmark simulated nothing");
        Ok(wall)
    })
}

/// The figures of [`BenchReport`] by the runs that measure them; `hugemm bench --figure
/// NAME` measures one alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Figure {
    /// `random_4k_refs_per_s`.
    #[value(name = "random-4k")]
    Random4k,
    /// `random_2m_refs_per_s`.
    #[value(name = "random-2m")]
    Random2m,
    /// `random_4k_nested_refs_per_s`.
    #[value(name = "random-4k-nested")]
    Random4kNested,
    /// `sequential_refs_per_s`.
    Sequential,
    /// `sampled_sim_seconds_per_wall_second` and
    /// `sampled_whole_run_sim_seconds_per_wall_second` (one run measures both).
    Sampled,
    /// `setup_64gib_ms`.
    Setup,
    /// `compact_16gib_ms`.
    Compact,
    /// `bloat_recovery_16gib_ms`.
    BloatRecovery,
    /// `kbuild_16gib_s`.
    Kbuild,
}

impl Figure {
    /// Every figure, in the order `hugemm bench` prints them.
    pub const ALL: [Figure; 9] = [
        Figure::Random4k,
        Figure::Random2m,
        Figure::Random4kNested,
        Figure::Sequential,
        Figure::Sampled,
        Figure::Setup,
        Figure::Compact,
        Figure::BloatRecovery,
        Figure::Kbuild,
    ];

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Figure::Random4k => "random-4k",
            Figure::Random2m => "random-2m",
            Figure::Random4kNested => "random-4k-nested",
            Figure::Sequential => "sequential",
            Figure::Sampled => "sampled",
            Figure::Setup => "setup",
            Figure::Compact => "compact",
            Figure::BloatRecovery => "bloat-recovery",
            Figure::Kbuild => "kbuild",
        }
    }

    /// What the progress line says while it runs.
    fn what(self) -> &'static str {
        match self {
            Figure::Random4k => "random 4 KB",
            Figure::Random2m => "random 2 MB",
            Figure::Random4kNested => "random 4 KB, nested",
            Figure::Sequential => "sequential",
            Figure::Sampled => "sampled 3 x 8 GiB",
            Figure::Setup => "setup 64 GiB",
            Figure::Compact => "compact 16 GiB",
            Figure::BloatRecovery => "bloat recovery 16 GiB",
            Figure::Kbuild => "two kernel builds on 16 GiB",
        }
    }

    /// The [`BenchReport`] fields it measures.
    pub fn fields(self) -> &'static [&'static str] {
        match self {
            Figure::Random4k => &["random_4k_refs_per_s"],
            Figure::Random2m => &["random_2m_refs_per_s"],
            Figure::Random4kNested => &["random_4k_nested_refs_per_s"],
            Figure::Sequential => &["sequential_refs_per_s"],
            Figure::Sampled => &[
                "sampled_sim_seconds_per_wall_second",
                "sampled_whole_run_sim_seconds_per_wall_second",
            ],
            Figure::Setup => &["setup_64gib_ms"],
            Figure::Compact => &["compact_16gib_ms"],
            Figure::BloatRecovery => &["bloat_recovery_16gib_ms"],
            Figure::Kbuild => &["kbuild_16gib_s"],
        }
    }

    /// Measure it in this process, `reps` times: its fields and their medians.
    pub fn measure(self, reps: u32) -> anyhow::Result<Map<String, Value>> {
        let values = match self {
            Figure::Random4k => {
                vec![refs_per_s(
                    ThpMode::Never,
                    Pattern::Uniform,
                    20_000_000,
                    reps,
                )?]
            }
            Figure::Random2m => {
                vec![refs_per_s(
                    ThpMode::Always,
                    Pattern::Uniform,
                    40_000_000,
                    reps,
                )?]
            }
            Figure::Random4kNested => vec![refs_per_s_on(
                ThpMode::Never,
                Pattern::Uniform,
                10_000_000,
                reps,
                Some(&guest_on_4k_host()?),
            )?],
            Figure::Sequential => vec![refs_per_s(
                ThpMode::Never,
                Pattern::Sequential { stride: 64 },
                40_000_000,
                reps,
            )?],
            Figure::Sampled => {
                let (steady, whole) = sampled_rate(reps)?;
                vec![steady, whole]
            }
            Figure::Setup => vec![setup_ms(reps)?],
            Figure::Compact => vec![compact_ms(reps)?],
            Figure::BloatRecovery => vec![bloat_recovery_ms(reps)?],
            Figure::Kbuild => vec![kbuild_16gib_s(reps)?],
        };
        Ok(self
            .fields()
            .iter()
            .zip(values)
            .map(|(&k, v)| (k.to_string(), Value::from(v)))
            .collect())
    }
}

/// Run every figure, `reps` times each, each in a process of its own: `exe` (this
/// program) is started as `hugemm --json --quiet bench --reps N --figure NAME` once per
/// figure, and the report gathers what each prints.
pub fn run(reps: u32, exe: &Path, progress: impl Fn(&str)) -> anyhow::Result<BenchReport> {
    let mut all = Map::new();
    for figure in Figure::ALL {
        progress(figure.what());
        let out = Command::new(exe)
            .args(["--json", "--quiet", "bench", "--reps"])
            .arg(reps.to_string())
            .args(["--figure", figure.name()])
            .output()
            .map_err(|e| {
                anyhow::anyhow!(
                    "starting {} for bench figure {}: {e}",
                    exe.display(),
                    figure.name()
                )
            })?;
        anyhow::ensure!(
            out.status.success(),
            "bench figure {} failed ({}): {}",
            figure.name(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
        all.extend(figure_values(figure, &out.stdout)?);
    }
    all.insert("bytes_per_frame".into(), hugemm_mm::BYTES_PER_FRAME.into());
    all.insert("repetitions".into(), reps.into());
    Ok(serde_json::from_value(Value::Object(all))?)
}

/// The values of `figure`'s fields in `stdout`, the JSON object `hugemm bench --figure`
/// prints; an error naming what is missing or not a number.
fn figure_values(figure: Figure, stdout: &[u8]) -> anyhow::Result<Map<String, Value>> {
    let name = figure.name();
    let v: Value = serde_json::from_slice(stdout)
        .map_err(|e| anyhow::anyhow!("bench figure {name} printed no JSON object: {e}"))?;
    figure
        .fields()
        .iter()
        .map(|&k| match v.get(k) {
            Some(x) if x.is_number() => Ok((k.to_string(), x.clone())),
            _ => Err(anyhow::anyhow!(
                "bench figure {name} printed no number for {k}"
            )),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_figures_measure_every_field_of_the_report_once() {
        let report = BenchReport {
            random_4k_refs_per_s: 1.0,
            random_2m_refs_per_s: 1.0,
            random_4k_nested_refs_per_s: 1.0,
            sequential_refs_per_s: 1.0,
            sampled_sim_seconds_per_wall_second: 1.0,
            sampled_whole_run_sim_seconds_per_wall_second: 1.0,
            bytes_per_frame: 1,
            setup_64gib_ms: 1.0,
            compact_16gib_ms: 1.0,
            bloat_recovery_16gib_ms: 1.0,
            kbuild_16gib_s: 1.0,
            repetitions: 1,
        };
        let Value::Object(fields) = serde_json::to_value(&report).unwrap() else {
            panic!("a report is an object");
        };
        let mut measured: Vec<&str> = Figure::ALL
            .iter()
            .flat_map(|f| f.fields())
            .copied()
            .collect();
        measured.extend(["bytes_per_frame", "repetitions"]);
        measured.sort_unstable();
        let mut all: Vec<&str> = fields.keys().map(String::as_str).collect();
        all.sort_unstable();
        assert_eq!(measured, all);
    }

    #[test]
    fn each_figures_name_is_the_one_the_command_line_takes() {
        use clap::ValueEnum;
        for f in Figure::ALL {
            assert_eq!(Figure::from_str(f.name(), false), Ok(f), "{}", f.name());
        }
        assert_eq!(Figure::value_variants(), Figure::ALL);
    }

    #[test]
    fn a_figures_output_must_hold_a_number_for_each_of_its_fields() {
        let ok = figure_values(Figure::Sampled, br#"{"sampled_sim_seconds_per_wall_second": 2.5, "sampled_whole_run_sim_seconds_per_wall_second": 1}"#).unwrap();
        assert_eq!(ok.len(), 2);
        let missing = figure_values(
            Figure::Sampled,
            br#"{"sampled_sim_seconds_per_wall_second": 2.5}"#,
        );
        let e = missing.unwrap_err().to_string();
        assert!(
            e.contains("sampled_whole_run_sim_seconds_per_wall_second"),
            "{e}"
        );
        let e = figure_values(Figure::Kbuild, b"oops")
            .unwrap_err()
            .to_string();
        assert!(e.contains("kbuild") && e.contains("no JSON object"), "{e}");
    }

    #[test]
    fn the_median_of_an_odd_count_is_the_middle_value() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![5.0]), 5.0);
        assert_eq!(median(vec![9.0, -1.0, 4.0, 4.0, 100.0]), 4.0);
    }

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_two_middle_values() {
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(vec![10.0, 20.0]), 15.0);
        assert!(median(Vec::new()).is_nan());
    }

    #[test]
    fn medians_of_repeats_and_takes_each_figures_median_apart() {
        let mut runs = [[3.0, 30.0], [1.0, 20.0], [2.0, 10.0]].into_iter();
        let mut calls = 0;
        let m = medians_of(3, || {
            calls += 1;
            Ok(runs.next().unwrap())
        })
        .unwrap();
        assert_eq!((m, calls), ([2.0, 20.0], 3));
        let mut x = 0.0;
        let m = median_of(4, || {
            x += 1.0;
            Ok(x)
        });
        assert_eq!(m.unwrap(), 2.5);
    }

    #[test]
    fn a_failing_or_empty_repetition_is_an_error() {
        assert!(median_of(0, || Ok(1.0)).is_err());
        assert!(median_of(3, || anyhow::bail!("broken")).is_err());
    }

    #[test]
    fn the_report_prints_one_aligned_row_per_figure() {
        let r = BenchReport {
            random_4k_refs_per_s: 3_160_000.0,
            random_2m_refs_per_s: 7_650_000.0,
            random_4k_nested_refs_per_s: 2_010_000.0,
            sequential_refs_per_s: 14_960_000.0,
            sampled_sim_seconds_per_wall_second: 79.84,
            sampled_whole_run_sim_seconds_per_wall_second: 43.7,
            bytes_per_frame: 16,
            setup_64gib_ms: 93.4,
            compact_16gib_ms: 112.8,
            bloat_recovery_16gib_ms: 107.6,
            kbuild_16gib_s: 4.31,
            repetitions: 3,
        };
        let text = r.to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 12, "{text}");
        assert_eq!(
            lines[0],
            "exact, random over 4 GiB, 4 KB pages    3.16 M refs/s"
        );
        assert_eq!(
            lines[4],
            "sampled, 3 x 8 GiB random phase         79.8 simulated s / wall s"
        );
        assert_eq!(lines[10], "16 GiB through two kernel builds         4.3 s");
        assert_eq!(lines[11], "(medians of 3 repetitions)");
        // Values end in one column, units start in the next.
        let unit_at = lines[0].find(" M refs/s").unwrap();
        assert!(lines[..11]
            .iter()
            .all(|l| l.as_bytes()[unit_at] == b' ' && l.as_bytes()[unit_at - 1].is_ascii_digit()));
        assert!(text.lines().all(|l| l == l.trim_end()), "{text}");
    }
}
