//! Scenario tests of the `freebsd` policy against Linux THP `never` and `always`, each a
//! claim HawkEye (ASPLOS'19, section 2) makes of FreeBSD's reservations: dense regions end
//! as huge pages at 4 KB fault costs, sparse ones do not bloat, and the reserved but
//! unused memory goes back under pressure.

mod common;

use common::*;
use hugemm_hw::Nanos;
use hugemm_policy::{FreeBsdConfig, ThpMode};
use hugemm_sim::RunResult;
use hugemm_workload::Writes;
use hugemm_workload::{builtin, AccessPhase, Amount, BufferId, Pattern, Phase, ProcessSpec};

const PAGE: u64 = 4096;

/// The three policies compared.
#[derive(Clone, Copy, Debug)]
enum Pol {
    FreeBsd,
    Never,
    Always,
}

fn scenario(memory: u64, pol: Pol) -> Scenario {
    match pol {
        Pol::FreeBsd => Scenario::new(memory, ThpMode::Never).freebsd(FreeBsdConfig::default()),
        Pol::Never => Scenario::new(memory, ThpMode::Never),
        Pol::Always => Scenario::new(memory, ThpMode::Always),
    }
}

fn run(memory: u64, pol: Pol, procs: &[ProcessSpec]) -> RunResult {
    procs
        .iter()
        .fold(scenario(memory, pol), |s, p| s.process(p.clone()))
        .run()
}

/// One process, stopped at `limit` while it still runs.
fn run_until(memory: u64, pol: Pol, p: &ProcessSpec, limit: Nanos) -> RunResult {
    scenario(memory, pol)
        .process(p.clone())
        .time_limit(limit)
        .run()
}

/// Map `bytes`, write every `stride`-th page once, then idle for `idle`.
fn touch_every(name: &str, bytes: u64, stride: u64, idle: Nanos, start: Nanos) -> ProcessSpec {
    let b = BufferId(0);
    ProcessSpec {
        name: name.into(),
        start,
        core: None,
        phases: vec![
            Phase::Mmap {
                buffer: b,
                bytes,
                advice: hugemm_workload::Advice::Default,
            },
            Phase::Access(AccessPhase {
                buffer: b,
                pattern: Pattern::Sequential {
                    stride: stride * PAGE,
                },
                amount: Amount::Refs(bytes.div_ceil(stride * PAGE)),
                dependent: false,
                write_fraction: 1.0,
                compute: Nanos::ZERO,
                instructions_per_ref: None,
                writes: Writes::default(),
            }),
            Phase::Sleep(idle),
        ],
    }
}

#[test]
fn a_dense_buffer_ends_in_huge_pages_promoted_in_place_at_4k_fault_costs() {
    let gups = builtin::random_access("gups", 64 * MIB, 400_000, hugemm_workload::Advice::Default);
    let [bsd, never, always] =
        [Pol::FreeBsd, Pol::Never, Pol::Always].map(|p| run(GIB, p, std::slice::from_ref(&gups)));
    let (b, n, a) = (
        &bsd.summary.processes[0],
        &never.summary.processes[0],
        &always.summary.processes[0],
    );
    // 64 MiB = 32 regions of 512 pages: every fault is 4 KB, every region is promoted.
    assert_eq!(
        (b.faults_4k, b.faults_2m, b.huge_pages_end),
        (16_384, 0, 32)
    );
    assert_eq!((a.faults_4k, a.faults_2m, a.huge_pages_end), (0, 32, 32));
    let sys = &bsd.summary.system;
    assert_eq!(
        (
            sys.promotions_in_place,
            sys.collapses,
            sys.reservations_made
        ),
        (32, 0, 32)
    );
    assert_eq!(sys.reservations_broken, 0);
    assert_eq!(sys.kernel.promotions_in_place, 32);
    // Fault time is Linux-never's (4 KB faults) plus 32 PMD writes and flushes, less 32
    // page-table pages freed... within 2 %; Linux always pays 32 traps, not 16,384.
    let ratio = b.fault_time_ns as f64 / n.fault_time_ns as f64;
    assert!(
        (0.98..1.02).contains(&ratio),
        "freebsd/never fault time {ratio}"
    );
    assert!(a.fault_time_ns < b.fault_time_ns);
    // Translation: as cheap as Linux always once promoted.
    assert!(
        b.mmu_overhead < n.mmu_overhead / 4.0,
        "freebsd {} vs 4 KB {}",
        b.mmu_overhead,
        n.mmu_overhead
    );
    assert!(b.mmu_overhead < 1.5 * a.mmu_overhead + 0.01);
}

#[test]
fn a_sparse_buffer_keeps_base_pages_and_does_not_bloat_unlike_thp_always() {
    // Every 5th page: 103 of each region's 512. Observed while it idles.
    let sparse = touch_every("sparse", 64 * MIB, 5, Nanos::from_secs(10), Nanos::ZERO);
    let [bsd, never, always] = [Pol::FreeBsd, Pol::Never, Pol::Always]
        .map(|p| run_until(GIB, p, &sparse, Nanos::from_secs(5)));
    let touched = (64 * MIB / PAGE).div_ceil(5);
    let rss = |r: &RunResult| r.summary.processes[0].rss_bytes_end;
    assert_eq!(rss(&bsd), touched * PAGE);
    assert_eq!(rss(&never), touched * PAGE);
    assert_eq!(
        rss(&always),
        64 * MIB,
        "THP always bloats to whole huge pages"
    );
    assert_eq!(bsd.summary.processes[0].huge_pages_end, 0);
    let r = bsd.summary.system.reservations_end;
    assert_eq!((r.live, r.full), (32, 0));
    assert_eq!(
        r.unused_frames,
        32 * 512 - touched,
        "held, but returned under pressure"
    );
    assert_eq!(bsd.summary.system.promotions_in_place, 0);
}

#[test]
fn memory_pressure_breaks_reservations_where_thp_always_runs_out_of_memory() {
    // 256 MiB: a sparse 128 MiB buffer (25 MiB touched) that stays mapped, then a 150
    // MiB hog. THP always has given the sparse buffer 128 MiB of huge pages.
    let sparse = touch_every("sparse", 128 * MIB, 5, Nanos::from_secs(2), Nanos::ZERO);
    let hog = touch_every("hog", 150 * MIB, 1, Nanos::ZERO, Nanos::from_millis(500));
    let procs = [sparse, hog];
    let bsd = run(256 * MIB, Pol::FreeBsd, &procs);
    let always = run(256 * MIB, Pol::Always, &procs);
    let hog_of = |r: &RunResult| r.summary.processes[1].clone();
    assert!(hog_of(&always).oom, "THP always cannot fit the hog");
    assert!(
        !hog_of(&bsd).oom && hog_of(&bsd).finished,
        "FreeBSD gives the reserved memory back"
    );
    let sys = &bsd.summary.system;
    assert!(sys.kernel.reservations_reclaimed > 0);
    assert!(sys.reserv_frames_returned > 0);
    assert_eq!(sys.kernel.internal_errors, 0);
    assert_eq!(sys.oom_events, 0);
}

#[test]
fn a_freebsd_run_is_identical_across_two_runs_with_the_same_seed() {
    let sparse = touch_every("sparse", 32 * MIB, 3, Nanos::from_millis(10), Nanos::ZERO);
    let gups = builtin::random_access("gups", 32 * MIB, 100_000, hugemm_workload::Advice::Default);
    let procs = [sparse, gups];
    let (a, b) = (
        run(GIB, Pol::FreeBsd, &procs),
        run(GIB, Pol::FreeBsd, &procs),
    );
    assert_eq!(a, b);
    assert_eq!(a.summary.system.policy, "freebsd");
    assert!(a.summary.system.promotions_in_place > 0);
}
