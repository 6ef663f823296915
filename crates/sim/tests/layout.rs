//! Physical layout: how finely two cores' page faults interleave in physical memory,
//! and the frame maps that show it. The engine's turn (`[sim] turn_us`) bounds how far
//! one core runs ahead of the other, and sampled mode must respect it when it skips over
//! first touches (a skip is sized with the window's fault time). Real CPUs faulting at
//! once take their per-CPU lists' refills (31 pages with Linux 4.1's sizes) in turn; a
//! Linux 4.1 guest laid its compiler heaps out in runs of 8-31 frames early in a build
//! (docs/kbuild-measurement.md, "Where the pages lie").

mod common;

use common::*;
use hugemm_hw::Nanos;
use hugemm_mm::PerCpuSizes;
use hugemm_policy::ThpMode;
use hugemm_sim::{Engine, Mode, SampledConfig};
use hugemm_workload::{builtin, Advice, Phase};

/// Touch `bytes` page by page, then hold them.
fn touch_and_hold(name: &str, bytes: u64) -> hugemm_workload::ProcessSpec {
    let mut p = builtin::alloc_and_touch(name, bytes, 1, Advice::Default);
    // Hold the heap instead of unmapping it.
    p.phases.pop();
    p.phases.push(Phase::Sleep(Nanos::from_secs(100)));
    p
}

/// Two processes on two cores each fault 64 MiB; the mean length of the runs of
/// consecutive frames mapped by one process, once both have touched everything.
fn mean_run(mode: Mode, turn: Nanos) -> f64 {
    let mut s = Scenario::new(512 * MIB, ThpMode::Never)
        .cores(2)
        .process(touch_and_hold("a", 64 * MIB))
        .process(touch_and_hold("b", 64 * MIB));
    s.exp.mode = mode;
    s.exp.turn = turn;
    s.exp.kernel.per_cpu_lists = true;
    s.exp.kernel.per_cpu_sizes = PerCpuSizes::Linux4_1;
    let mut e = Engine::new(s.exp).expect("engine set-up");
    e.advance(Nanos::from_secs(1)).expect("run");
    let phys = e.kernel().phys();
    let (mut frames, mut runs, mut last) = (0u64, 0u64, None);
    for pfn in 0..phys.frames_total() {
        let owner = phys
            .frame(hugemm_hw::Pfn(pfn))
            .filter(|f| f.owner() == Some(hugemm_mm::OwnerKind::Anon))
            .and_then(|f| f.rmap())
            .map(|(pid, _)| pid);
        if owner.is_some() {
            frames += 1;
            if owner != last {
                runs += 1;
            }
        }
        last = owner;
    }
    assert_eq!(frames, 2 * 64 * MIB / 4096, "both heaps are resident");
    let mean = frames as f64 / runs as f64;
    eprintln!("{mode:?} turn {turn:?}: mean run {mean:.1} frames");
    mean
}

fn sampled() -> Mode {
    // The APSys'16 experiments' windows: most of a touch pass is skipped.
    Mode::Sampled(SampledConfig {
        phase_warmup_refs: 1000,
        warmup_refs: 500,
        window_refs: 1000,
        ..SampledConfig::default()
    })
}

#[test]
fn short_turns_interleave_two_cores_faults_by_per_cpu_refills() {
    let turn = Nanos(5_000);
    let exact = mean_run(Mode::Exact, turn);
    let sampled = mean_run(sampled(), turn);
    // About a refill each (31 frames), rarely two in a row.
    assert!((16.0..48.0).contains(&exact), "exact: {exact}");
    // Sampled mode interleaves as finely: before its skips counted their faults' time,
    // a skip faulted hundreds of pages in a row (a mean run of 104 frames here).
    assert!((16.0..48.0).contains(&sampled), "sampled: {sampled}");
}

#[test]
fn the_default_turn_lets_a_core_fault_hundreds_of_pages_in_a_row() {
    let exact = mean_run(Mode::Exact, hugemm_sim::SYNC.to_nanos());
    assert!(exact > 200.0, "exact: {exact}");
}

/// Keeps the time and the anonymous frames of every map it is given.
struct Maps(std::rc::Rc<std::cell::RefCell<Vec<(u64, usize)>>>);

impl hugemm_sim::FrameMapSink for Maps {
    fn write(&mut self, time_ns: u64, kpageflags: &[u64]) -> std::io::Result<()> {
        let anon = kpageflags
            .iter()
            .filter(|&&f| f & hugemm_mm::kpageflags::KPF_ANON != 0)
            .count();
        self.0.borrow_mut().push((time_ns, anon));
        Ok(())
    }
}

#[test]
fn frame_maps_come_at_the_first_sample_after_each_multiple_and_at_the_end() {
    let mut s = Scenario::new(64 * MIB, ThpMode::Never).process(alloc_touch("a", 16 * MIB));
    s.exp.sample_interval = Nanos::from_millis(2);
    let maps = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let mut e = Engine::new(s.exp).expect("engine set-up");
    e.watch_frame_maps(Nanos::from_millis(5), Box::new(Maps(maps.clone())));
    let end = e.run().expect("run").summary.system.sim_time_ns;
    let maps = maps.borrow();
    let times: Vec<u64> = maps.iter().map(|m| m.0).collect();
    // Samples every 2 ms: maps at 2 ms (the first sample), 6 ms (the first at or after
    // 5), 10 ms, ... and one at the end.
    assert!(times.len() >= 3, "{times:?}");
    assert_eq!(&times[..3], &[2_000_000, 6_000_000, 10_000_000]);
    assert_eq!(*times.last().unwrap(), end);
    assert!(times.windows(2).all(|w| w[0] < w[1]), "{times:?}");
    // The touch pass maps pages as it goes; the process's exit frees them all.
    assert!(maps[0].1 > 0 && maps[0].1 <= 4096, "{maps:?}");
    assert_eq!(maps.last().unwrap().1, 0);
}
