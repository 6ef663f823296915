//! The APSys'16 claims that hold at the paper's scale, run from the shipped files (two
//! full kernel builds of about 7,000 units with 5 GiB of products: `experiments/apsys16/`,
//! `docs/kbuild-measurement.md`). Each run takes 30-50 s of one core, so these are the
//! slowest tests of the suite; they are what keeps `experiments/apsys16/README.md`'s
//! verdicts true. Seed 1, as the files; the numbers in the comments are that run's
//! (2026-11-26).
//!
//! Claims that do **not** hold at this scale, so are not asserted (the README says why):
//! Table 1's share of tainted user pageblocks (paper 81%, hugemm under 1%), Table 2's
//! Fu(9) (1.00 at the end for every kernel: page cache fills memory), Figure 3's KML (no
//! block above order 7) and KMU-2 (Fu near 1 above order 5), and stress-highalloc at rest
//! (100% for both: nothing pins memory once the page cache is dropped).

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
/// fallback after two builds (paper 134 / 508 / 874 against 1,683; hugemm 2 / 3 / 4
/// against 7). Tolerance: none; strictly fewer, as the paper's ordering says.
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

/// Figure 2 (2 GiB): the default's tainted pageblocks grow with the builds (at the end
/// of the second build above anything during the first: hugemm 49 against at most 33),
/// and OPBS's grow far more slowly (under half the default's at the end: 10).
#[test]
fn the_defaults_tainting_grows_with_builds_and_opbs_taints_under_half_as_many() {
    let r = shipped("fig2.toml");
    let report = apsys16::figure2(&r, &|_: &str| {}).unwrap();
    let series = |v: &str| -> Vec<(f64, u64)> {
        variant(&report.data, v)["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p["time_s"].as_f64().unwrap(),
                    p["tainted"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let default = series("default");
    let &(end_s, at_end) = default.last().unwrap();
    // The two builds are alike, so the first ends about halfway.
    let first_build = default
        .iter()
        .filter(|(t, _)| *t <= end_s / 2.0)
        .map(|(_, n)| *n)
        .max()
        .unwrap();
    assert!(
        at_end > first_build,
        "default: {at_end} tainted at the end, up to {first_build} during the first build"
    );
    let opbs = series("opbs").last().unwrap().1;
    assert!(
        2 * opbs < at_end,
        "OPBS {opbs}, default {at_end} at the end"
    );
}

/// Section 5.3 (3 GiB): APBS allocates more huge pages than the default at
/// stress-highalloc's first attempt (paper 7% against 0%; hugemm 132 against 107 of
/// 1,459, 9.0% against 7.3%). Tolerance: none; strictly more.
#[test]
fn apbs_allocates_more_huge_pages_than_the_default_at_the_first_attempt() {
    let r = shipped("highalloc.toml");
    assert_eq!(r.variants, ["default", "apbs"]);
    let report = apsys16::highalloc(&r, &|_: &str| {}).unwrap();
    let first = |v: &str| {
        variant(&report.data, v)["attempts"][0]["allocated"]
            .as_u64()
            .unwrap()
    };
    assert!(
        first("apbs") > first("default"),
        "first attempt: APBS {}, default {}",
        first("apbs"),
        first("default")
    );
}
