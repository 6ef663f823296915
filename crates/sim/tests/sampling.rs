//! Sampled mode agrees with exact mode within its stated tolerance (5% on runtime and on
//! MMU overhead, see `hugemm_sim::matrix`) on a small matrix of patterns x sizes x page
//! sizes. The full matrix is in docs/sampling.md. A short period makes even these short
//! runs alternate many windows and skips.

use hugemm_hw::{MachineProfile, Nanos};
use hugemm_sim::matrix::{compare, pattern_label, Case};
use hugemm_sim::SampledConfig;
use hugemm_workload::Pattern;

#[test]
fn sampled_mode_agrees_with_exact_mode_on_the_test_matrix() {
    let profile = MachineProfile::builtin("epyc-milan-kvm").unwrap();
    let sampled = SampledConfig {
        period: Nanos::from_millis(20),
        ..SampledConfig::default()
    };
    let patterns = hugemm_sim::matrix::patterns();
    let mut failures = Vec::new();
    for (pattern, dependent) in patterns {
        for bytes in [64u64 << 20, 512 << 20] {
            for huge in [false, true] {
                let r = compare(
                    Case {
                        pattern,
                        dependent,
                        bytes,
                        huge,
                        refs: 2_000_000,
                    },
                    sampled,
                    &profile,
                )
                .unwrap();
                assert!(r.sampled_runtime > 0 && r.exact_runtime > 0);
                if !r.agrees() {
                    failures.push(format!(
                        "{} {} MiB huge={huge}: {r:?}",
                        pattern_label(pattern, dependent),
                        bytes >> 20
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "disagreements:\n{}",
        failures.join("\n")
    );
}

#[test]
fn sampled_mode_simulates_few_references_one_by_one() {
    // The point of sampling: a long run simulates only its windows exactly.
    let profile = MachineProfile::builtin("epyc-milan-kvm").unwrap();
    let case = Case {
        pattern: Pattern::Uniform,
        dependent: true,
        bytes: 64 << 20,
        huge: false,
        refs: 20_000_000,
    };
    let r = compare(case, SampledConfig::default(), &profile).unwrap();
    assert_eq!(
        r.sampled_refs,
        case.refs + (64 << 20) / 4096,
        "every reference is counted, touch included"
    );
    assert!(
        r.sampled_exact_refs * 20 < r.sampled_refs,
        "{} of {} simulated exactly",
        r.sampled_exact_refs,
        r.sampled_refs
    );
    assert!(r.agrees(), "{r:?}");
}

#[test]
fn regression_issue2_a_sampled_touch_pass_faults_every_page() {
    // References generated ahead for prefetching must not be lost when a skip ends the
    // phase: a sampled touch of 64 MiB takes exactly one fault per page.
    let profile = MachineProfile::builtin("epyc-milan-kvm").unwrap();
    let case = Case {
        pattern: Pattern::Zipf {
            exponent: 0.99,
            position: 0.0,
        },
        dependent: true,
        bytes: 64 << 20,
        huge: false,
        refs: 1_000_000,
    };
    let mut exp = hugemm_sim::matrix::experiment_for(
        &case,
        hugemm_sim::Mode::Sampled(SampledConfig {
            phase_warmup_refs: 1_000,
            ..SampledConfig::default()
        }),
        &profile,
    );
    exp.seed = 5;
    let r = hugemm_sim::Engine::new(exp).unwrap().run().unwrap();
    assert_eq!(r.summary.processes[0].faults_4k, (64 << 20) / 4096);
}
