//! Nimble's page-migration microbenchmarks (section 4.2, Table 2), as the shipped
//! reproduction files run them: the paper's claims as orderings and ratios, each with its
//! tolerance. Figures 2 and 8 are what the profile's migration costs were fitted to (so
//! they check the fit); Figures 9-11 and Table 2 are predictions of the same costs.

use hugemm_cli::reproduce::{self, Report};
use std::path::Path;

fn run(name: &str) -> Report {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../experiments/nimble")
        .join(format!("{name}.toml"));
    let r = reproduce::load(&file).unwrap_or_else(|e| panic!("{e}"));
    reproduce::run(&r, &|_: &str| {}).unwrap_or_else(|e| panic!("{name}: {e:#}"))
}

/// hugemm's value of `row` (and `quantity`, if given) in `report`.
fn value(report: &Report, row: &str, quantity: &str) -> f64 {
    report
        .values
        .iter()
        .find(|v| v.row == row && v.quantity.contains(quantity))
        .and_then(|v| v.hugemm)
        .unwrap_or_else(|| panic!("no value {row} / {quantity}"))
}

fn holds(report: &Report, starts: &str) -> bool {
    let c = report
        .claims
        .iter()
        .find(|c| c.claim.starts_with(starts))
        .unwrap_or_else(|| panic!("no claim starting {starts:?}"));
    c.holds == Some(true)
}

#[test]
fn the_fit_reproduces_figure_2_and_8_throughputs_within_5_percent() {
    let r = run("fig2");
    for (row, paper) in [
        ("1 x 4 KB", 0.04),
        ("512 x 4 KB", 0.75),
        ("split THP", 0.75),
        ("THP", 2.15),
    ] {
        let h = value(&r, row, "throughput");
        assert!((h / paper - 1.0).abs() < 0.05, "{row}: {h} vs {paper}");
    }
    assert!(holds(&r, "native THP migration moves a THP about 2.9x"));
    assert!(holds(&r, "migrating one base page is mostly kernel work"));
    let r8 = run("fig8");
    assert!(holds(&r8, "migrating a split THP is about as fast"));
}

#[test]
fn threads_help_huge_pages_and_not_base_pages() {
    let r = run("fig9");
    let huge = value(&r, "2 MB", "speedup");
    let base = value(&r, "4 KB", "speedup");
    // Paper: 2.8x for 2 MB; none for 4 KB. Tolerance: 2.4-3.2x, and at most 5% for 4 KB.
    assert!((2.4..=3.2).contains(&huge), "2 MB: {huge}");
    assert!(base <= 1.05, "4 KB: {base}");
}

#[test]
fn concurrency_adds_to_parallel_copies_for_huge_pages_only_at_scale_for_base_pages() {
    let r = run("fig10");
    // Paper: +10-25% for 2 MB pages; tolerance: the model's range within 5-35%.
    let lo = value(&r, "2 MB", "lowest gain");
    let hi = value(&r, "2 MB", "highest gain");
    assert!(lo >= 5.0 && hi <= 35.0 && lo < hi, "{lo}..{hi}");
    assert!(holds(
        &r,
        "for 4 KB pages, parallel non-concurrent migration is always slower"
    ));
    assert!(holds(
        &r,
        "for 4 KB pages, concurrent parallel migration beats the baseline only"
    ));
}

#[test]
fn exchange_beats_two_migrations_most_for_few_pages() {
    let r = run("fig11");
    assert!(holds(&r, "exchanging THPs is 10-50% faster"));
    assert!(holds(&r, "exchanging 512 base-page pairs reaches 1.1 GB/s"));
    // The paper's 11.2 GB/s with 4 threads is out of the model's reach: 4 threads copy
    // at most 4 x copy_gbps (10.4 GB/s on this profile) before any kernel work. The test
    // guards that reason, so the disagreement stays explained (docs/nimble.md).
    let profile = hugemm_hw::MachineProfile::builtin("xeon-e5-2650v3-2node").unwrap();
    let exch = value(&r, "2 MB, 512 pairs", "exchange GB/s");
    assert!(exch < 4.0 * profile.costs.copy_gbps, "{exch}");
    assert!(exch > 0.7 * 11.2, "{exch}");
}

#[test]
fn table_2_is_predicted_within_10_percent_and_its_ratios_hold() {
    let r = run("table2");
    for (row, paper) in [
        ("base page", 0.75),
        ("THP", 2.15),
        ("opt.", 9.80),
        ("opt. exch.", 11.23),
    ] {
        let h = value(&r, row, "GB/s");
        assert!((h / paper - 1.0).abs() < 0.10, "{row}: {h} vs {paper}");
    }
    assert!(
        r.claims.iter().all(|c| c.holds == Some(true)),
        "{:?}",
        r.claims
    );
}

#[test]
fn the_copy_model_meets_figure_3s_two_stated_numbers() {
    let r = run("fig3");
    assert!(
        r.claims.iter().all(|c| c.holds == Some(true)),
        "{:?}",
        r.claims
    );
}
