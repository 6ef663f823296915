//! The APSys'16 claims that hold at the paper's scale, run from the shipped files (two
//! full kernel builds of about 7,000 units with 5 GiB of products: `experiments/apsys16/`,
//! `docs/kbuild-measurement.md`) on Linux 4.1's allocator as the files model it (its
//! fallback rules, watermarks and tail placement of freed blocks). Each run takes 30-50 s
//! of one core, so these are the slowest tests of the suite; they keep
//! `experiments/apsys16/README.md`'s verdicts true. Seed 1, as the files; the numbers in
//! the comments are that run's and seeds 2 and 3's (2026-11-27).
//!
//! Asserted, because they hold in seeds 1-3: AAF tainting fewer pageblocks than the
//! default (Table 2), OPBS and APBS tainting no more than it (strictly fewer in seeds 2
//! and 3, as many in seed 1), and in Figure 2 the default's tainting growing from the
//! first build to the second and OPBS's staying under half of it. Not asserted, because
//! they do not hold at this scale or hold in some seeds only (the README gives every
//! seed's numbers): APBS allocating more huge pages than the default at
//! stress-highalloc's first attempt (seeds 2 and 3; seed 1 has 117 against 143), Table
//! 1's share of tainted user pageblocks (paper 81%, hugemm under 1%), Table 2's Fu(9)
//! (1.00 at the end for every kernel: page cache fills memory), Figure 3's KML (no block
//! above order 7) and KMU-2 (Fu near 1 above order 5), and stress-highalloc at rest (100%
//! for all).

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

/// Table 2: AAF taints fewer user pageblocks than Linux 4.1's fallback after two builds,
/// and OPBS and APBS no more (paper 134 / 508 / 874 against 1,683; hugemm seeds 1 / 2 / 3:
/// AAF 2 / 2 / 4, OPBS 4 / 4 / 5, APBS 4 / 4 / 7 against 4 / 9 / 9). Tolerance: none for
/// AAF (strictly fewer, the paper's ordering); a tie for OPBS and APBS, which seed 1 has.
#[test]
fn aaf_taints_fewer_pageblocks_than_the_default_and_opbs_and_apbs_no_more() {
    let mut r = shipped("table2.toml");
    // Linux 6.15's rule is not one of the paper's claims: left out to save a run.
    r.variants.retain(|v| v != "claim-first");
    assert_eq!(r.variants, ["default", "aaf", "opbs", "apbs"]);
    let report = apsys16::table2(&r, &|_: &str| {}).unwrap();
    let tainted = |v: &str| variant(&report.data, v)["end"]["tainted"].as_u64().unwrap();
    let default = tainted("default");
    assert!(default > 0, "the default taints nothing");
    assert!(
        tainted("aaf") < default,
        "AAF taints {} pageblocks, the default {default}",
        tainted("aaf")
    );
    for v in ["opbs", "apbs"] {
        assert!(
            tainted(v) <= default,
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

/// Figure 2 (2 GiB): the default's tainting grows from the first build to the second, and
/// OPBS's grows far more slowly: under half of the default's at the end (paper: a figure,
/// no numbers). hugemm seeds 1 / 2 / 3: the default ends at 40 / 37 / 36 tainted
/// pageblocks against at most 23 / 9 / 20 in the run's first half, OPBS at 4 / 18 / 12.
/// Tolerance: "grows" read as the end above the first half's most; "far more slowly" as
/// under half.
#[test]
fn the_default_s_tainting_grows_and_opbs_stays_under_half_of_it_in_figure_2() {
    let r = shipped("fig2.toml");
    assert_eq!(r.variants, ["default", "opbs"]);
    let report = apsys16::figure2(&r, &|_: &str| {}).unwrap();
    let points = |v: &str| {
        variant(&report.data, v)["points"]
            .as_array()
            .unwrap()
            .clone()
    };
    let tainted = |p: &Value| p["tainted"].as_u64().unwrap();
    let end = |v: &str| tainted(points(v).last().unwrap());
    let (default, opbs) = (end("default"), end("opbs"));
    assert!(default > 0, "the default taints nothing");
    assert!(2 * opbs < default, "OPBS {opbs}, the default {default}");
    let all = points("default");
    let first_half = all[..all.len() / 2].iter().map(tainted).max().unwrap();
    assert!(
        default > first_half,
        "the default ends at {default}, had {first_half} in the first half"
    );
}
