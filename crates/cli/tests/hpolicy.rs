//! H-Policy's SysMon-H monitor on a running model: TLB misses are sampled in a 5 s
//! window per process every 30 s, at the sampler's rate, and what the samples cost is
//! charged to the process.

use hugemm_cli::config;
use hugemm_sim::{Engine, RunResult};
use std::path::Path;

/// XSBench over 3 GiB of a 4 GiB Haswell (more huge pages than its STLB holds, so its
/// references keep walking) under `hpolicy` for 40 simulated seconds.
fn run() -> RunResult {
    let text = "[machine]\nprofile = \"haswell-e5-2690v3\"\nmemory = \"4GiB\"\ncores = 2\n\
                [policy]\nname = \"hpolicy\"\n[sim]\nmode = \"sampled\"\nseed = 1\n\
                sample_interval_ms = 5000\n\
                [[app]]\nmodel = \"xsbench\"\nmemory = \"3GiB\"\nduration_s = 40\n";
    let loaded =
        config::parse(text, "hpolicy.toml", Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
    Engine::new(loaded.experiment).unwrap().run().unwrap()
}

#[test]
fn sysmon_samples_a_window_every_round_at_its_rate_and_charges_for_it() {
    let r = run();
    let w = &r.tlb_windows;
    // Rounds start at 0 s and 30 s; each window ends 5 s later.
    let ends: Vec<u64> = w.iter().map(|w| w.time_ns / 1_000_000_000).collect();
    assert_eq!(ends, vec![5, 35], "{ends:?}");
    for win in w {
        assert_eq!(win.process, "xsbench");
        // 4,000 samples a second of running time, fewer only if it walked less.
        assert!(
            win.samples <= 4000.0 * 5.0 * 1.01 && win.samples >= 0.5 * 4000.0 * 5.0,
            "{} samples",
            win.samples
        );
        assert!(win.walks > win.samples, "{} walks", win.walks);
        let counted: f64 = win.regions.iter().map(|r| r.1).sum();
        assert!((counted / win.samples - 1.0).abs() < 1e-6);
        // XSBench's grids spread the misses over most of its 1,536 huge pages.
        assert!(win.regions.len() > 1000, "{} regions", win.regions.len());
    }
    let total: f64 = w.iter().map(|w| w.samples).sum();
    let p = &r.summary.processes[0];
    // 250 ns a sample, rounded per window.
    assert!((p.tlb_sampling_ns as f64 - total * 250.0).abs() <= w.len() as f64);
    assert!(
        r.summary.system.daemon_cpu_ns["sysmon"] > 0,
        "phase two's checks cost"
    );
}

/// H-Policy's kernel is the paper's by default (order-9 preservation, hole-aware
/// compaction); each mechanism can be turned off on its own, and other policies keep
/// Linux's allocator.
#[test]
fn hpolicy_turns_on_its_allocator_mechanisms_by_default() {
    use hugemm_mm::CompactMode;
    let kernel = |policy: &str, extra: &str| {
        let text = format!(
            "[machine]\nprofile = \"haswell-e5-2690v3\"\nmemory = \"1GiB\"\n\
             [policy]\nname = \"{policy}\"\n{extra}\
             [[app]]\nmodel = \"xsbench\"\nmemory = \"256MiB\"\nduration_s = 1\n"
        );
        let k = config::parse(&text, "k.toml", Path::new("."))
            .unwrap_or_else(|e| panic!("{e}"))
            .experiment
            .kernel;
        (k.preserve_huge_blocks, k.compaction)
    };
    assert_eq!(kernel("hpolicy", ""), (true, CompactMode::HoleAware));
    assert_eq!(kernel("linux", ""), (false, CompactMode::Linux));
    assert_eq!(
        kernel("hpolicy", "[kernel]\npreserve_huge_blocks = false\n"),
        (false, CompactMode::HoleAware)
    );
    assert_eq!(
        kernel("hpolicy", "[kernel]\ncompaction = \"linux\"\n"),
        (true, CompactMode::Linux)
    );
}

/// Section 3.3's prior approach: every huge page's accessed bit read and cleared 200
/// times in each 5 s window, two PTE accesses a page a scan; no TLB sampling.
#[test]
fn the_accessed_bit_source_scans_every_huge_page_each_round() {
    let text = "[machine]\nprofile = \"nehalem-i7\"\nmemory = \"2GiB\"\ncores = 1\n\
                [policy]\nname = \"hpolicy\"\n[policy.hpolicy]\nsysmon_source = \"accessed-bits\"\n\
                sysmon_period_ms = 10000\n\
                [sim]\nmode = \"exact\"\nseed = 1\n\
                [[app]]\nmodel = \"deepsjeng\"\nmemory = \"64MiB\"\nduration_s = 16\n";
    let loaded = config::parse(text, "ab.toml", Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
    let per_pte = loaded.experiment.profile.costs.pte_update_ns; // an accessed-bit read
    let r = Engine::new(loaded.experiment).unwrap().run().unwrap();
    assert!(r.tlb_windows.is_empty(), "no TLB sampling");
    assert_eq!(r.summary.processes[0].tlb_sampling_ns, 0);
    // The round at 0 s finds no huge page yet (the process has not started); the one at
    // 10 s clears the 32 huge pages' bits once, then scans them 200 times by 15 s.
    let want = 32.0 * 201.0 * 2.0 * per_pte;
    let got = r.summary.system.daemon_cpu_ns["sysmon"] as f64;
    assert!((got / want - 1.0).abs() < 0.01, "{got} ns, expected {want}");
}
