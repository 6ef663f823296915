//! `Engine::fork`: a copy of a run part-way continues exactly as the run itself does, so
//! `hugemm reproduce` may run a workload several reproductions share once and fork it.

mod common;

use common::*;
use hugemm_hw::Nanos;
use hugemm_policy::{HawkeyeVariant, PolicyConfig, ThpMode};
use hugemm_sim::{Engine, Experiment, SampledConfig};
use hugemm_workload::kbuild::{self, FileIds};
use hugemm_workload::{Amount, KernelMem, Lifetime, Pattern, Phase, ProcessSpec};

/// A run with every kind of state a fork must copy: page cache filled past memory (so
/// reclaim runs) with every other file deleted, slab objects and kernel pages with
/// lifetimes, a policy whose daemons promote and choose at random (`common`'s fast
/// daemons, so promotions happen within seconds), and sampled mode's windows.
fn busy(policy: PolicyConfig) -> Experiment {
    let mut ids = FileIds::from(0);
    let reader = kbuild::file_reader("reader", 560 * 1024 / 16, 16 << 10, 2, &mut ids);
    let kernel = ProcessSpec {
        name: "kernel".into(),
        start: Nanos::ZERO,
        core: None,
        phases: (0..400u64)
            .map(|i| Phase::KernelAlloc {
                kind: if i % 2 == 0 {
                    KernelMem::Unmovable
                } else {
                    KernelMem::Reclaimable
                },
                order: 0,
                object_bytes: Some(512),
                bytes: 64 << 10,
                lifetime: Lifetime::Fixed(Nanos::from_millis(1 + 37 * i % 4000)),
            })
            .collect(),
    };
    let mut app = access(
        "app",
        96 * MIB,
        Pattern::HotRange {
            hot_fraction: 0.25,
            hot_share: 0.9,
            position: 0.75,
        },
        Amount::Duration(Nanos::from_secs(8)),
        true,
    );
    app.start = Nanos::from_millis(500);
    Scenario::new(512 * MIB, ThpMode::Always)
        .sampled(SampledConfig::default())
        .policy(policy)
        .seed(7)
        .time_limit(Nanos::from_secs(60))
        .process(reader)
        .process(kernel)
        .process(app)
        .exp
}

fn forked_runs_match(policy: PolicyConfig) {
    let exp = busy(policy);
    let whole = Engine::new(exp.clone()).unwrap().run().unwrap();

    let end = whole
        .summary
        .processes
        .iter()
        .map(|p| p.end_ns)
        .max()
        .unwrap();
    let mut original = Engine::new(exp).unwrap();
    original.advance(Nanos(end / 2)).unwrap();
    assert!(!original.idle(), "the fork must come part-way through");
    let mut copy = Engine::attach(original.fork().expect("a bare-metal run forks"));
    original.run_until_idle().unwrap();
    copy.run_until_idle().unwrap();
    let (original, copy) = (original.results(), copy.results());
    assert_eq!(copy, original, "the fork continued differently");
    // `run` adds a last timeseries row the step-wise driving does not; the rest is equal.
    assert_eq!(
        original.summary, whole.summary,
        "stopping part-way changed the run"
    );
    assert!(original.summary.processes.iter().all(|p| p.finished));
    let s = &original.summary.system;
    assert!(
        s.collapses + s.promotions_in_place > 0,
        "the policy's daemons must have acted after the fork: {s:?}"
    );
}

#[test]
fn a_forked_hawkeye_run_continues_as_the_run_itself() {
    forked_runs_match(hawkeye(HawkeyeVariant::G));
}

#[test]
fn a_forked_ingens_run_continues_as_the_run_itself() {
    forked_runs_match(ingens());
}
