//! mmtests' stress-highalloc as the engine runs it: a paced pass holds its huge pages
//! while other processes run, and a script can kill processes mid-run (`killall`).

mod common;

use common::*;
use hugemm_hw::Nanos;
use hugemm_policy::ThpMode;
use hugemm_sim::Engine;
use hugemm_workload::{HighAllocGfp, Phase, ProcessSpec};

fn script(name: &str, phases: Vec<Phase>) -> ProcessSpec {
    ProcessSpec {
        name: name.into(),
        start: Nanos::ZERO,
        core: None,
        phases,
    }
}

fn pass(interval: Option<Nanos>) -> Phase {
    Phase::HighAlloc {
        label: "1".into(),
        share: 0.5,
        interval,
        gfp: HighAllocGfp::HighuserMovable,
    }
}

/// 64 MiB: half of it asked for as 16 huge pages, one every 100 ms. The pass lasts its
/// 15 intervals (and its requests' own time), holds what it got until its last request
/// (free memory is down by the pages taken halfway through), and gives it all back.
#[test]
fn a_paced_pass_spaces_its_requests_and_holds_its_pages_to_the_end() {
    let interval = Nanos::from_millis(100);
    let s =
        Scenario::new(64 * MIB, ThpMode::Never).process(script("ha", vec![pass(Some(interval))]));
    let mut engine = Engine::new(s.exp).unwrap();
    let free_at_start = engine.kernel().phys().frames_free();
    engine.advance(Nanos::from_millis(750)).unwrap();
    assert!(engine.highalloc_passes().is_empty(), "still under way");
    let held = free_at_start - engine.kernel().phys().frames_free();
    // Requests at 0, 100, ..., 700 ms: 8 huge pages taken and held.
    assert_eq!(held, 8 * 512, "{held} frames held halfway");
    engine.run_until_idle().unwrap();
    let p = &engine.highalloc_passes()[0];
    assert_eq!((p.requested, p.allocated, p.first_failure), (16, 16, None));
    assert!(
        p.duration_ns >= 1_500_000_000 && p.duration_ns < 1_600_000_000,
        "15 intervals and the last request: {} ns",
        p.duration_ns
    );
    assert_eq!(engine.kernel().phys().frames_free(), free_at_start);
    // All at once, the same requests take no interval at all.
    let s = Scenario::new(64 * MIB, ThpMode::Never).process(script("ha", vec![pass(None)]));
    let mut engine = Engine::new(s.exp).unwrap();
    engine.run_until_idle().unwrap();
    let p = &engine.highalloc_passes()[0];
    assert_eq!(p.allocated, 16);
    assert!(p.duration_ns < 10_000_000, "{} ns", p.duration_ns);
}

/// `Engine::kill` ends the processes named so at once, frees their memory and reports
/// them unfinished; the others run on.
#[test]
fn killed_processes_exit_at_once_and_give_their_memory_back() {
    let mut build = alloc_touch("make-0", 16 * MIB);
    // Holds its memory: sleeps before its munmap.
    build.phases.insert(2, Phase::Sleep(Nanos::from_secs(100)));
    let mut later = alloc_touch("make-1", 16 * MIB);
    later.start = Nanos::from_secs(50);
    let other = script("other", vec![Phase::Sleep(Nanos::from_secs(2))]);
    let s = Scenario::new(64 * MIB, ThpMode::Never)
        .process(build)
        .process(later)
        .process(other);
    let mut engine = Engine::new(s.exp).unwrap();
    engine.advance(Nanos::from_secs(1)).unwrap();
    let free = engine.kernel().phys().frames_free();
    assert_eq!(engine.kill("make"), 2, "one running, one not started");
    assert!(engine.kernel().phys().frames_free() >= free + 4096);
    engine.run_until_idle().unwrap();
    let end = engine.now();
    assert!(end < Nanos::from_secs(3), "only `other` was left: {end:?}");
    let r = engine.results();
    let by = |n: &str| r.summary.processes.iter().find(|p| p.name == n).unwrap();
    assert!(!by("make-0").finished && by("other").finished);
    let killed_at = by("make-0").end_ns;
    assert!(
        (1_000_000_000..1_001_000_000).contains(&killed_at),
        "ended when killed: {killed_at} ns"
    );
    assert!(by("make-0").killed && by("make-1").killed && !by("other").killed);
}

/// A pass cut short by a kill gives its huge pages back and is recorded as it stood.
#[test]
fn a_pass_killed_halfway_gives_back_what_it_holds() {
    let s = Scenario::new(64 * MIB, ThpMode::Never)
        .process(script("ha", vec![pass(Some(Nanos::from_millis(100)))]));
    let mut engine = Engine::new(s.exp).unwrap();
    let free_at_start = engine.kernel().phys().frames_free();
    engine.advance(Nanos::from_millis(750)).unwrap();
    assert_eq!(engine.kill("ha"), 1);
    assert_eq!(engine.kernel().phys().frames_free(), free_at_start);
    let p = &engine.highalloc_passes()[0];
    assert_eq!((p.requested, p.allocated), (16, 8));
}
