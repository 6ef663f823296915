//! Scenario tests of the engine with the `linux` policy, each a claim the model kernel
//! must satisfy, stated as the paper or the kernel would.

mod common;

use common::*;
use hugemm_hw::Nanos;
use hugemm_policy::{KhugepagedConfig, ThpMode};
use hugemm_sim::{Engine, StopFlag, StopReason, TimeseriesRow, TimeseriesSink};
use hugemm_workload::{Amount, Pattern};

#[test]
fn touching_2gib_with_thp_never_takes_524288_base_faults() {
    let r = Scenario::new(4 * GIB, ThpMode::Never)
        .process(alloc_touch("t", 2 * GIB))
        .run();
    let p = &r.summary.processes[0];
    assert_eq!((p.faults_4k, p.faults_2m), (524_288, 0));
    assert!(p.finished && !p.oom);
}

#[test]
fn touching_2gib_with_thp_always_takes_1024_huge_faults_on_an_unfragmented_machine() {
    let r = Scenario::new(4 * GIB, ThpMode::Always)
        .process(alloc_touch("t", 2 * GIB))
        .run();
    let p = &r.summary.processes[0];
    assert_eq!((p.faults_4k, p.faults_2m), (0, 1024));
    assert_eq!(p.faults_huge_fallback, 0);
}

#[test]
fn huge_pages_cut_the_mmu_overhead_of_random_access_over_4gib() {
    let run = |thp| {
        let p = access(
            "gups",
            4 * GIB,
            Pattern::Uniform,
            Amount::Refs(2_000_000),
            true,
        );
        Scenario::new(6 * GIB, thp)
            .process(p)
            .run()
            .summary
            .processes[0]
            .clone()
    };
    let (base, huge) = (run(ThpMode::Never), run(ThpMode::Always));
    assert!(
        base.mmu_overhead > 0.2,
        "4 KB pages over 4 GiB should walk often: {}",
        base.mmu_overhead
    );
    assert!(
        huge.mmu_overhead < base.mmu_overhead / 4.0,
        "2 MB {} vs 4 KB {}",
        huge.mmu_overhead,
        base.mmu_overhead
    );
    assert!(
        huge.runtime_ns < base.runtime_ns,
        "huge pages should also run faster"
    );
    assert!(base.walks > 10 * huge.walks.max(1));
}

#[test]
fn a_chase_over_twice_the_last_cache_misses_it_where_uniform_references_hit_half_the_time() {
    // THP, so no reference walks: the difference is the data caches'. A chase reuses a
    // line only after the whole buffer, so a cache half its size keeps none of it; uniform
    // references find about half their lines in it.
    let profile = Scenario::new(GIB, ThpMode::Always).exp.profile;
    let last = profile.caches.last().expect("a cache level").clone();
    let bytes = (2 * last.bytes).next_multiple_of(2 * MIB);
    let refs = 8 * bytes / 64;
    let per_ref = |pattern| {
        let run = |amount| {
            Scenario::new(bytes + 64 * MIB, ThpMode::Always)
                .process(access("p", bytes, pattern, amount, true))
                .run()
                .summary
                .processes[0]
                .runtime_ns
        };
        (run(Amount::Refs(refs + 1)) - run(Amount::Refs(1))) as f64 / refs as f64
    };
    let (chase, uniform) = (per_ref(Pattern::Chase), per_ref(Pattern::Uniform));
    let dram = profile.dram_latency_ns;
    let cached = last.latency_cycles / profile.freq_ghz;
    assert!(chase > 0.9 * dram, "chase {chase:.1} ns, DRAM {dram} ns");
    let half = (dram + cached) / 2.0;
    assert!(
        (uniform - half).abs() < 0.15 * half,
        "uniform {uniform:.1} ns, half-way between the last cache and DRAM {half:.1} ns"
    );
}

#[test]
fn khugepaged_promotes_at_the_rate_its_defaults_imply() {
    // 256 MiB = 128 regions, 4 KB-populated and eligible; idle 65 s. khugepaged wakes
    // every 10 s and scans 4096 PTEs = 8 regions a pass: passes at 10, 20, ..., 60 s.
    let p = base_then_eligible("idle", 256 * MIB, Nanos::from_secs(65), Nanos::ZERO);
    let r = Scenario::new(GIB, ThpMode::Always).process(p).run();
    assert_eq!(r.summary.system.collapses, 6 * 8);
    assert_eq!(r.summary.processes[0].huge_pages_end, 48);
    assert!(r.summary.system.daemon_cpu_ns["khugepaged"] > 0);
}

#[test]
fn khugepaged_scan_budget_is_a_knob() {
    let k = KhugepagedConfig {
        pages_to_scan: 512 * 3,
        ..KhugepagedConfig::default()
    };
    let p = base_then_eligible("idle", 256 * MIB, Nanos::from_secs(35), Nanos::ZERO);
    let r = Scenario::new(GIB, ThpMode::Always)
        .khugepaged(k)
        .process(p)
        .run();
    assert_eq!(r.summary.system.collapses, 3 * 3);
}

#[test]
fn khugepaged_serves_processes_first_come_first_serve_low_to_high() {
    // Two identical processes; the first to start is promoted first.
    let a = base_then_eligible("first", 32 * MIB, Nanos::from_secs(40), Nanos::ZERO);
    let b = base_then_eligible(
        "second",
        32 * MIB,
        Nanos::from_secs(40),
        Nanos::from_millis(1),
    );
    // Huge pages of ("first", "second") when the run is stopped at `limit`.
    let huge_at = |limit| {
        let r = Scenario::new(GIB, ThpMode::Always)
            .cores(2)
            .process(b.clone())
            .process(a.clone())
            .time_limit(limit)
            .run();
        let by = |n: &str| {
            r.summary
                .processes
                .iter()
                .find(|p| p.name == n)
                .unwrap()
                .huge_pages_end
        };
        (by("first"), by("second"))
    };
    // One pass by 15 s: 8 regions, all from the process that started first.
    assert_eq!(huge_at(Nanos::from_secs(15)), (8, 0));
    // The second pass finishes "first" (16 regions) before starting on "second".
    assert_eq!(huge_at(Nanos::from_secs(25)), (16, 0));
}

#[test]
fn khugepaged_leaves_regions_alone_under_thp_never_and_madvise_without_advice() {
    let p = base_then_eligible("idle", 64 * MIB, Nanos::from_secs(25), Nanos::ZERO);
    let r = Scenario::new(GIB, ThpMode::Never).process(p).run();
    assert_eq!(r.summary.system.collapses, 0);
    let p = alloc_touch("plain", 64 * MIB);
    let r = Scenario::new(GIB, ThpMode::Madvise).process(p).run();
    assert_eq!(
        r.summary.processes[0].faults_2m, 0,
        "madvise mode maps huge pages only where asked"
    );
}

#[test]
fn running_out_of_memory_is_an_event_in_the_results_not_a_crash() {
    let big = alloc_touch("hog", 96 * MIB);
    let r = Scenario::new(64 * MIB, ThpMode::Never).process(big).run();
    let p = &r.summary.processes[0];
    assert!(p.oom && !p.finished);
    assert!(r.summary.system.oom_events >= 1);
    assert_eq!(
        r.summary.system.frames_free_end, r.summary.system.frames_total,
        "an OOM-killed process frees its memory"
    );
}

#[test]
fn the_same_seed_gives_identical_results_and_another_seed_does_not() {
    let mk = |seed| {
        let p = access(
            "r",
            256 * MIB,
            Pattern::Zipf {
                exponent: 0.8,
                position: 0.5,
            },
            Amount::Refs(300_000),
            false,
        );
        Scenario::new(GIB, ThpMode::Always)
            .seed(seed)
            .process(p)
            .run()
    };
    let (a, b, c) = (mk(5), mk(5), mk(6));
    assert_eq!(a, b);
    assert_ne!(a.summary.processes[0].cycles, c.summary.processes[0].cycles);
}

#[test]
fn processes_sharing_a_core_take_turns() {
    let p = |n: &str| access(n, 64 * MIB, Pattern::Uniform, Amount::Refs(400_000), true);
    let alone = Scenario::new(GIB, ThpMode::Never).process(p("a")).run();
    let shared = Scenario::new(GIB, ThpMode::Never)
        .cores(1)
        .process(p("a"))
        .process(p("b"))
        .run();
    let t_alone = alone.summary.processes[0].runtime_ns as f64;
    let t_shared = shared.summary.processes[0]
        .runtime_ns
        .max(shared.summary.processes[1].runtime_ns) as f64;
    assert!(
        t_shared > 1.6 * t_alone,
        "two processes on one core take about twice as long: {t_shared} vs {t_alone}"
    );
}

/// Process `r` reading 256 MiB uniformly for `d` of simulated time.
fn reader(d: Nanos) -> hugemm_workload::ProcessSpec {
    access("r", 256 * MIB, Pattern::Uniform, Amount::Duration(d), true)
}

#[test]
fn the_timeseries_has_a_row_per_process_and_one_for_the_system_per_sample() {
    let p = reader(Nanos::from_millis(3500));
    let r = Scenario::new(GIB, ThpMode::Never).process(p).run();
    let system_rows = r
        .timeseries
        .iter()
        .filter(|t| t.process == "system")
        .count();
    assert_eq!(system_rows, 4, "samples at 1, 2, 3 s and at the end");
    // The process has exited by the end: its rows are the three samples'.
    assert_eq!(r.timeseries.len(), 7);
    let last = r.timeseries.last().unwrap();
    assert_eq!(last.process, "system");
    assert_eq!(last.time_ns, r.summary.system.sim_time_ns);
    assert!(r.summary.complete && r.summary.stopped_by.is_none());
    assert!(r
        .timeseries
        .iter()
        .filter(|t| t.process == "r")
        .all(|t| t.mmu_overhead.unwrap() > 0.0));
}

/// Collects streamed rows, to check what a sink is given.
struct Collect(std::rc::Rc<std::cell::RefCell<Vec<Vec<TimeseriesRow>>>>);

impl TimeseriesSink for Collect {
    fn write(&mut self, rows: &[TimeseriesRow]) -> std::io::Result<()> {
        self.0.borrow_mut().push(rows.to_vec());
        Ok(())
    }
}

#[test]
fn a_streamed_time_series_is_the_kept_one_one_sample_time_per_write() {
    let scenario = || Scenario::new(GIB, ThpMode::Never).process(reader(Nanos::from_millis(3500)));
    let kept = scenario().run();
    let batches = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let mut engine = Engine::new(scenario().exp).unwrap();
    engine.stream_timeseries(Box::new(Collect(batches.clone())));
    let streamed = engine.run().unwrap();
    assert!(streamed.timeseries.is_empty(), "streamed rows are not kept");
    assert_eq!(streamed.summary, kept.summary);
    let batches = batches.borrow();
    assert_eq!(batches.len(), 4, "samples at 1, 2, 3 s and the end");
    assert!(batches
        .iter()
        .all(|b| b.iter().all(|r| r.time_ns == b[0].time_ns)));
    assert_eq!(batches.concat(), kept.timeseries);
}

#[test]
fn a_raised_stop_flag_ends_the_run_incomplete_and_says_why() {
    let p = reader(Nanos::from_secs(3600));
    let mut engine = Engine::new(Scenario::new(GIB, ThpMode::Never).process(p).exp).unwrap();
    let stop = StopFlag::new();
    stop.request(StopReason::Terminate);
    engine.stop_on(stop);
    let r = engine.run().unwrap();
    assert!(!r.summary.complete);
    assert_eq!(r.summary.stopped_by, Some(StopReason::Terminate));
    assert!(!r.summary.processes[0].finished);
    // Stopped before its first event; the time series still ends with the state then.
    assert_eq!(r.summary.system.sim_time_ns, 0);
    assert_eq!(r.timeseries.len(), 1);
}

#[test]
fn the_time_limit_ends_a_run_incomplete() {
    let p = reader(Nanos::from_secs(3600));
    let r = Scenario::new(GIB, ThpMode::Never)
        .process(p)
        .time_limit(Nanos::from_millis(1500))
        .run();
    assert!(!r.summary.complete);
    assert_eq!(r.summary.stopped_by, Some(StopReason::TimeLimit));
    let last = r.timeseries.last().unwrap();
    assert_eq!(last.time_ns, r.summary.system.sim_time_ns);
}

#[test]
fn linux_4_1s_watermarks_and_tail_freeing_reach_the_kernel() {
    // 4 GiB: min 2,048 pages; Linux 4.1's gaps are min/4 and min/2, 4.6+'s default 0.1%
    // of memory (1,048 pages).
    let e = Engine::new(Scenario::new(4096 * MIB, ThpMode::Never).exp).unwrap();
    let w = e.kernel().watermarks();
    assert_eq!((w.min, w.low, w.high), (2048, 3096, 4144));
    assert!(!e.kernel().phys().buddy_merge_likely());
    let mut exp = Scenario::new(4096 * MIB, ThpMode::Never).exp;
    exp.kernel.watermark_scale_factor = 0;
    exp.kernel.buddy_merge_likely = true;
    let e = Engine::new(exp).unwrap();
    let w = e.kernel().watermarks();
    assert_eq!((w.min, w.low, w.high), (2048, 2560, 3072));
    assert!(e.kernel().phys().buddy_merge_likely());
}

#[test]
fn linux_4_1s_per_cpu_lists_reach_the_kernel() {
    let mut exp = Scenario::new(4096 * MIB, ThpMode::Never).exp;
    exp.kernel.per_cpu_lists = true;
    let e = Engine::new(exp.clone()).unwrap();
    let c = e.kernel().phys().per_cpu_lists().unwrap();
    assert_eq!((c.batch, c.max_order), (63, 3), "Linux 6.x");
    exp.kernel.per_cpu_sizes = hugemm_mm::PerCpuSizes::Linux4_1;
    let e = Engine::new(exp).unwrap();
    let c = e.kernel().phys().per_cpu_lists().unwrap();
    assert_eq!((c.batch, c.high, c.max_order), (31, 186, 0), "Linux 4.1");
}

#[test]
fn the_boot_order_decides_where_the_first_allocation_lands() {
    let mut exp = Scenario::new(64 * MIB, ThpMode::Never).exp;
    // The block the first allocation splits: the head of the order-10 list.
    let first = |exp: hugemm_sim::Experiment| {
        let e = Engine::new(exp).unwrap();
        let view = e.kernel().phys().view();
        view.first(hugemm_hw::Order(10), hugemm_mm::MigrateType::Movable)
    };
    assert_eq!(first(exp.clone()), Some(hugemm_hw::Pfn(0)), "Linux 5.10+");
    exp.kernel.boot_order = hugemm_mm::BootOrder::HighestFirst;
    // 64 MiB: 16 order-10 blocks, the highest at 15 x 1024.
    assert_eq!(first(exp), Some(hugemm_hw::Pfn(15 * 1024)), "Linux 4.1");
}

#[test]
fn a_phase_with_more_instructions_a_reference_overlaps_fewer_under_a_reorder_window() {
    // Independent references over 1 GiB of THP on a machine whose profile has a window of
    // 200 instructions: a phase of 100 instructions a reference keeps 2 in flight, so its
    // references take half a dependent chase's time; a phase that does not say its
    // instructions keeps the profile's `mlp` in flight, as before the window existed.
    let run = |window: Option<f64>, instructions: Option<f64>, dependent: bool, refs: u64| {
        let mut p = access("p", GIB, Pattern::Uniform, Amount::Refs(refs), dependent);
        if let Some(hugemm_workload::Phase::Access(a)) = p.phases.last_mut() {
            a.instructions_per_ref = instructions.map(|x: f64| x as f32);
        }
        let mut s = Scenario::new(2 * GIB, ThpMode::Always).process(p);
        s.exp.profile.reorder_window = window;
        s.run().summary.processes[0].runtime_ns as f64
    };
    // The references' time: the run less the same run with one reference.
    let refs = |window, instructions, dependent| {
        run(window, instructions, dependent, 200_001) - run(window, instructions, dependent, 1)
    };
    let dependent = refs(Some(200.0), None, true);
    let unsaid = refs(Some(200.0), None, false);
    let heavy = refs(Some(200.0), Some(100.0), false);
    assert_eq!(
        unsaid,
        refs(None, Some(100.0), false),
        "no bound unless both say"
    );
    let ratio = heavy / dependent;
    assert!(
        (0.45..=0.55).contains(&ratio),
        "100 of a 200-instruction window: {heavy} ns against a chase's {dependent} ns"
    );
    assert!(
        unsaid < 0.5 * heavy,
        "without the phase's instructions: {unsaid} ns, against {heavy} ns"
    );
}
