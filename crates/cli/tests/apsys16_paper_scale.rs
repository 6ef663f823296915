//! The APSys'16 claims that hold at the paper's scale, run from the shipped files (two
//! full kernel builds of about 7,000 units with 5 GiB of products: `experiments/apsys16/`,
//! `docs/kbuild-measurement.md`). Each run takes 30-50 s of one core, so these are the
//! slowest tests of the suite; they keep `experiments/apsys16/README.md`'s verdicts true.
//! Seed 1, as the files; the numbers in the comments are that run's (2026-11-26).
//!
//! Asserted, because they hold in seeds 1-3: Table 2's orderings, OPBS's tainting under
//! half the default's at the end of Figure 2, and APBS allocating more huge pages than
//! the default at stress-highalloc's first attempt. Not asserted, because they do not
//! hold at this scale or hold in some seeds only (the README gives every seed's numbers):
//! the default's tainting growing from the first build to the second (Figure 2; 2 of 3
//! seeds), Table 1's share of tainted user pageblocks (paper 81%, hugemm under 2%), Table
//! 2's Fu(9) (1.00 at the end for every kernel: page cache fills memory), Figure 3's KML
//! (no block above order 7) and KMU-2 (Fu near 1 above order 5), and stress-highalloc at
//! rest (100% for all).

use hugemm_cli::reproduce::{self, apsys16, Reproduction};
use serde_json::Value;
use std::path::Path;

fn shipped(name: &str) -> Reproduction {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../experiments/apsys16")
        .join(name);
    let r = reproduce::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let build = &r.resolved.kernel_builds[0];
    assert_eq!(build.units, Some(7000), "{name} is at the paper's scale");
    r
}

fn variant<'a>(data: &'a Value, name: &str) -> &'a Value {
    data.as_array()
        .unwrap()
        .iter()
        .find(|v| v["variant"] == name)
        .unwrap_or_else(|| panic!("no variant {name}"))
}

/// Table 2: AAF, OPBS and APBS each taint fewer user pageblocks than Linux 4.1's
/// fallback after two builds (paper 134 / 508 / 874 against 1,683; hugemm seed 1: 4 / 3 /
/// 8 against 22). Tolerance: none; strictly fewer, as the paper's ordering says.
#[test]
fn aaf_opbs_and_apbs_taint_fewer_pageblocks_than_the_default_after_two_builds() {
    let mut r = shipped("table2.toml");
    // Linux 6.15's rule is not one of the paper's claims: left out to save a run.
    r.variants.retain(|v| v != "claim-first");
    assert_eq!(r.variants, ["default", "aaf", "opbs", "apbs"]);
    let report = apsys16::table2(&r, &|_: &str| {}).unwrap();
    let tainted = |v: &str| variant(&report.data, v)["end"]["tainted"].as_u64().unwrap();
    let default = tainted("default");
    for v in ["aaf", "opbs", "apbs"] {
        assert!(
            tainted(v) < default,
            "{v} taints {} pageblocks, the default {default}",
            tainted(v)
        );
    }
    // The orderings rest on kernel fallbacks that find no whole free pageblock: the
    // only ones where the policies choose differently (the README's explanation).
    let below = variant(&report.data, "default")["end"]["fallback"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["alloc"] != "Movable" && e["order"].as_u64().unwrap() < 9)
        .count();
    assert!(below > 0, "no kernel fallback below a pageblock");
}

/// Figure 2 (2 GiB): OPBS's tainting grows far more slowly than the default's: under half
/// of it at the end (paper: a figure, no numbers; hugemm seed 1: 5 against 17).
/// Tolerance: the "far more slowly" read as under half.
#[test]
fn opbs_taints_under_half_as_many_pageblocks_as_the_default_in_figure_2() {
    let r = shipped("fig2.toml");
    assert_eq!(r.variants, ["default", "opbs"]);
    let report = apsys16::figure2(&r, &|_: &str| {}).unwrap();
    let end = |v: &str| {
        let points = variant(&report.data, v)["points"].as_array().unwrap();
        points.last().unwrap()["tainted"].as_u64().unwrap()
    };
    let (default, opbs) = (end("default"), end("opbs"));
    assert!(default > 0, "the default taints nothing");
    assert!(2 * opbs < default, "OPBS {opbs}, the default {default}");
}

/// Section 5.3: at stress-highalloc's first attempt after two builds (3 GiB), APBS
/// allocates more huge pages than Linux 4.1's fallback (paper 7% against 0%; hugemm seed
/// 1: 167 against 138 of 1,459). Tolerance: none; strictly more.
#[test]
fn apbs_allocates_more_huge_pages_at_stress_highalloc_s_first_attempt() {
    let r = shipped("highalloc.toml");
    assert_eq!(r.variants, ["default", "apbs"]);
    let report = apsys16::highalloc(&r, &|_: &str| {}).unwrap();
    let first = |v: &str| {
        variant(&report.data, v)["attempts"][0]["allocated"]
            .as_u64()
            .unwrap()
    };
    let (default, apbs) = (first("default"), first("apbs"));
    assert!(apbs > default, "APBS {apbs}, the default {default}");
}
