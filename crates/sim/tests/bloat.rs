//! Scenarios of HawkEye's other half (sections 3.1 and 3.2): asynchronous pre-zeroing
//! makes huge-page faults cheap, bloat recovery gives back the zero-filled base pages of
//! huge pages under memory pressure, Linux's THP shrinker does so only below
//! `max_ptes_none`, and a process that runs out of memory is reported with its useful
//! memory and its bloat while the run goes on.

mod common;

use common::{alloc_touch, Scenario, GIB, MIB};
use hugemm_hw::Nanos;
use hugemm_policy::{HawkeyeConfig, KhugepagedConfig, LinuxConfig, PolicyConfig, ThpMode};
use hugemm_sim::{PrezeroConfig, ProcessSummary};
use hugemm_workload::{AccessPhase, Advice, Amount, BufferId, Pattern, Phase, ProcessSpec, Writes};

/// Map `bytes` (huge pages allowed) and write one page in each 2 MB region: resident
/// huge pages that are almost all bloat.
fn sparse(name: &str, bytes: u64, start: Nanos) -> ProcessSpec {
    let b = BufferId(0);
    ProcessSpec {
        name: name.into(),
        start,
        core: None,
        phases: vec![
            Phase::Mmap {
                buffer: b,
                bytes,
                advice: Advice::Default,
            },
            Phase::Access(AccessPhase {
                buffer: b,
                pattern: Pattern::Sequential { stride: 2 * MIB },
                amount: Amount::Refs(bytes / (2 * MIB)),
                dependent: false,
                write_fraction: 1.0,
                compute: Nanos::ZERO,
                instructions_per_ref: None,
                writes: Writes::default(),
            }),
            Phase::Sleep(Nanos::from_secs(60)),
        ],
    }
}

fn proc<'a>(r: &'a hugemm_sim::RunResult, name: &str) -> &'a ProcessSummary {
    r.summary
        .processes
        .iter()
        .find(|p| p.name == name)
        .expect("process in the results")
}

fn hawkeye() -> PolicyConfig {
    PolicyConfig::Hawkeye(HawkeyeConfig::default())
}

fn prezero(on: bool) -> PrezeroConfig {
    PrezeroConfig {
        enabled: on,
        ..PrezeroConfig::default()
    }
}

#[test]
fn pre_zeroed_memory_cuts_huge_fault_latency_by_an_order_of_magnitude() {
    // 1 GiB machine: the daemon (10,000 pages/s) zeroes all of it in about 27 s; the
    // process starts at 40 s.
    let run = |prezeroing: bool| {
        let mut s = Scenario::new(GIB, ThpMode::Always).policy(hawkeye());
        s.exp.kernel.prezero = prezero(prezeroing);
        let mut p = alloc_touch("touch", 512 * MIB);
        p.start = Nanos::from_secs(40);
        s.process(p).run()
    };
    let (with, without) = (run(true), run(false));
    let (w, wo) = (proc(&with, "touch"), proc(&without, "touch"));
    assert_eq!((w.faults_2m, wo.faults_2m), (256, 256));
    assert_eq!(w.fault_zeroing_ns, 0, "every huge page came pre-zeroed");
    assert!(
        wo.fault_mean_ns > 10.0 * w.fault_mean_ns,
        "mean fault {} ns with pre-zeroing, {} ns without",
        w.fault_mean_ns,
        wo.fault_mean_ns
    );
    assert!(with.summary.system.daemon_cpu_ns["prezero"] > 0);
    assert!(with.summary.system.prezero_pages >= GIB / 4096 - 1024);
}

#[test]
fn hawkeye_recovers_bloat_under_pressure_where_linux_runs_out_of_memory() {
    // 1 GiB machine: a process holding 704 MiB of huge pages with one written page in
    // each, then another wanting 400 MiB.
    let run = |policy: PolicyConfig| {
        let mut s = Scenario::new(GIB, ThpMode::Always).policy(policy);
        s.exp.kernel.prezero = prezero(false);
        s.process(sparse("sparse", 704 * MIB, Nanos::ZERO))
            .process({
                let mut p = alloc_touch("late", 400 * MIB);
                p.start = Nanos::from_secs(5);
                p
            })
            .run()
    };
    let linux = run(PolicyConfig::Linux(LinuxConfig::default()));
    let late = proc(&linux, "late");
    assert!(
        late.oom,
        "Linux keeps the bloat and the late process runs out"
    );
    let oom_at = late.oom_time_ns.expect("killed at a time");
    assert!(oom_at >= 5_000_000_000);
    assert!(late.useful_bytes_end > 0 && late.useful_bytes_end < 400 * MIB);
    let sparse_linux = proc(&linux, "sparse");
    assert_eq!(sparse_linux.useful_bytes_end, 352 * 4096);
    assert_eq!(sparse_linux.bloat_bytes_end, 704 * MIB - 352 * 4096);
    assert!(sparse_linux.finished, "the rest of the run goes on");

    let hawkeye = run(hawkeye());
    let late = proc(&hawkeye, "late");
    assert!(!late.oom && late.finished, "HawkEye recovered the bloat");
    let sparse = proc(&hawkeye, "sparse");
    assert!(
        sparse.rss_bytes_end < 64 * MIB,
        "the sparse process keeps little more than its useful pages: {} bytes",
        sparse.rss_bytes_end
    );
    let k = &hawkeye.summary.system.kernel;
    assert!(
        k.zero_subpages_recovered > 60_000,
        "{}",
        k.zero_subpages_recovered
    );
    assert_eq!(k.zero_dedup_splits, k.zero_subpages_recovered / 511);
}

#[test]
fn linux_thp_shrinker_splits_only_below_max_ptes_none() {
    let run = |max_ptes_none: u32| {
        let linux = LinuxConfig {
            khugepaged: KhugepagedConfig {
                max_ptes_none,
                ..KhugepagedConfig::default()
            },
            ..LinuxConfig::default()
        };
        let mut s = Scenario::new(GIB, ThpMode::Always).policy(PolicyConfig::Linux(linux));
        s.exp.kernel.prezero = prezero(false);
        s.process(sparse("sparse", 704 * MIB, Nanos::ZERO))
            .process({
                let mut p = alloc_touch("late", 400 * MIB);
                p.start = Nanos::from_secs(5);
                p
            })
            .run()
    };
    let default = run(511);
    assert_eq!(default.summary.system.kernel.zero_dedup_splits, 0);
    assert!(proc(&default, "late").oom);
    let tuned = run(256);
    assert!(!proc(&tuned, "late").oom, "the shrinker freed the bloat");
    let s = &tuned.summary.system;
    assert!(s.kernel.zero_dedup_splits > 0);
    assert!(s.policy_kswapd_reclaim_frames > 0 || s.kernel.zero_subpages_recovered > 0);
}
