//! Accessed bits as x86 sets them, through the engine (issue 20, item 4): a bit cleared
//! without a flush stays clear while the translation stays in a TLB, and comes back at the
//! walk after a flush or an eviction; under `accessed_bits = "every-reference"` it comes
//! back at the next reference, as before.

use crate::experiment::{Experiment, KernelConfig, Mode};
use crate::Engine;
use hugemm_hw::{Geometry, MachineProfile, Nanos, Pid, VirtAddr};
use hugemm_mm::AccessedBits;
use hugemm_policy::{LinuxConfig, PolicyConfig, ThpMode};
use hugemm_workload::{builtin, Advice, Amount, Phase};

/// One process randomly reading `bytes` of 4 KB pages for a simulated second, after
/// touching them.
fn engine(bits: AccessedBits, bytes: u64) -> Engine {
    let mut spec = builtin::random_access("r", bytes, 1, Advice::NoHugepage);
    if let Some(Phase::Access(a)) = spec.phases.last_mut() {
        a.amount = Amount::Duration(Nanos::from_secs(1));
    }
    let exp = Experiment {
        profile: MachineProfile::builtin("epyc-milan-kvm").expect("built-in profile"),
        cores: 1,
        memory_bytes: 1 << 30,
        node_bytes: Vec::new(),
        zone_bytes: Vec::new(),
        home_node: 0,
        tiering: None,
        geometry: Geometry::X86_64,
        policy: PolicyConfig::Linux(LinuxConfig {
            enabled: ThpMode::Never,
            ..LinuxConfig::default()
        }),
        processes: vec![spec],
        mode: Mode::Exact,
        seed: 1,
        sample_interval: Nanos::from_secs(10),
        turn: crate::SYNC.to_nanos(),
        time_limit: Nanos::from_secs(10),
        daemon_core: 0,
        kernel: KernelConfig {
            accessed_bits: bits,
            ..KernelConfig::default()
        },
    };
    Engine::new(exp).expect("valid experiment")
}

/// The process's pid and its buffer's 2 MB regions, once it runs.
fn regions(e: &Engine) -> (Pid, Vec<VirtAddr>) {
    let pid = e.procs[0].pid.expect("started");
    (pid, e.kernel.regions(pid).collect())
}

/// Accessed base pages over `regions`, as a scan reads them.
fn accessed(e: &Engine, pid: Pid, regions: &[VirtAddr]) -> u32 {
    regions
        .iter()
        .map(|r| e.kernel.region_info(pid, *r).accessed)
        .sum()
}

/// Clear every accessed bit of the process (no flush, as x86 Linux does).
fn clear(e: &mut Engine, pid: Pid, regions: &[VirtAddr]) -> usize {
    regions
        .iter()
        .map(|r| e.kernel.clear_accessed(pid, *r))
        .sum()
}

#[test]
fn a_cleared_accessed_bit_stays_clear_while_the_translation_is_cached() {
    // 16 pages: every translation stays in the L1 DTLB once loaded.
    let mut e = engine(AccessedBits::Walk, 64 << 10);
    e.advance(Nanos::from_millis(1)).unwrap();
    let (pid, regions) = regions(&e);
    assert_eq!(clear(&mut e, pid, &regions), 16, "faults map pages young");
    e.advance(Nanos::from_millis(1)).unwrap();
    assert_eq!(
        accessed(&e, pid, &regions),
        0,
        "TLB hits set no accessed bit"
    );
    for core in &mut e.cores {
        core.mmu.flush_all();
    }
    e.advance(Nanos::from_millis(1)).unwrap();
    assert_eq!(
        accessed(&e, pid, &regions),
        16,
        "each walk after the flush sets its page's bit"
    );
}

#[test]
fn every_reference_sets_the_bit_again_without_a_flush() {
    let mut e = engine(AccessedBits::EveryReference, 64 << 10);
    e.advance(Nanos::from_millis(1)).unwrap();
    let (pid, regions) = regions(&e);
    clear(&mut e, pid, &regions);
    e.advance(Nanos::from_millis(1)).unwrap();
    assert_eq!(accessed(&e, pid, &regions), 16);
}

#[test]
fn pages_beyond_the_tlbs_reach_walk_and_set_their_bits_again() {
    // 64 MiB of 4 KB pages, 8 times the STLB's reach: almost every reference walks.
    let mut e = engine(AccessedBits::Walk, 64 << 20);
    e.advance(Nanos::from_millis(50)).unwrap();
    let (pid, regions) = regions(&e);
    assert_eq!(clear(&mut e, pid, &regions), 16384);
    let refs = e.procs[0].pmu.references;
    e.advance(Nanos::from_millis(20)).unwrap();
    let refs = e.procs[0].pmu.references - refs;
    let seen = accessed(&e, pid, &regions) as f64;
    // Uniform references reach 1 - (1 - 1/16384)^refs of the pages; nearly all walk.
    let reached = 16384.0 * (1.0 - (-(refs as f64) / 16384.0).exp());
    assert!(
        seen > 0.95 * reached && seen <= reached * 1.05,
        "{seen} pages accessed after {refs} references; {reached:.0} expected"
    );
}
