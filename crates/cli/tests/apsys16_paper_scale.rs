//! The APSys'16 claims that hold at the paper's scale, run from the shipped files (two
//! full kernel builds of about 7,000 units with 5 GiB of products: `experiments/apsys16/`,
//! `docs/kbuild-measurement.md`) on Linux 4.1's allocator as the files model it (its
//! fallback rules, watermarks, tail placement of freed blocks, boot order, per-CPU lists
//! and reserve pageblocks). The Table 2 run takes a few minutes of one core per kernel, so
//! this is the slowest test of the suite; it keeps `experiments/apsys16/README.md`'s
//! verdicts true. Seed 1, as the files; the numbers in the comments are that run's and
//! seeds 2 and 3's (2026-11-28, with 4.1's reserve).
//!
//! Asserted, because it holds in seeds 1-3: AAF, OPBS and APBS leave fewer kernel fallbacks
//! below a pageblock than the default (Table 2: 87 / 95 / 217, 231 / 150 / 204 and 390 /
//! 266 / 196 against 776 / 586 / 592), the step at which the paper's policies act. Not
//! asserted, because they hold in some seeds only (the README gives every seed's numbers):
//! the tainted counts' orderings in Table 2 (the default 10 / 5 / 6 against AAF 2 / 8 / 8,
//! OPBS 5 / 3 / 4, APBS 22 / 15 / 7), Figure 2's growth of the default's tainting and OPBS
//! under half of it (seed 3 only), APBS allocating more huge pages than the default at
//! stress-highalloc's first pass (seed 3 only: 1,288 against 1,278, under load as mmtests
//! runs it). Not asserted either: Table 1's share of tainted user pageblocks (paper 81%,
//! hugemm 0.2-0.5%), Table 2's Fu(9) (0.97-0.98 at the end for every kernel: page cache
//! fills memory), Figure 3's KML (no block above order 7) and KMU-2 (Fu near 1 above order
//! 5), which disagree in every seed, KMU-1 (lower Fu(9) after compaction in every seed, by
//! about 0.01: margins that small have moved with every change to the model), and
//! stress-highalloc at rest (1,459 of 1,459 for all). Asserted too: none of Table 2's
//! builds' allocations above order 0 would have failed Linux 4.1's per-order watermark
//! check.

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

/// Table 2 (4 GiB): AAF, OPBS and APBS leave fewer kernel fallbacks below a pageblock
/// (kernel requests that found no free block of a whole pageblock, the only ones where
/// the paper's policies choose differently from Linux's rule) than the default. hugemm
/// seeds 1 / 2 / 3: AAF 87 / 95 / 217, OPBS 231 / 150 / 204, APBS 390 / 266 / 196 against
/// 776 / 586 / 592. The paper's claim is one step later, fewer tainted pageblocks at the
/// end, which holds in some seeds only (module doc). Tolerance: none (strictly fewer).
#[test]
fn the_papers_policies_leave_fewer_kernel_fallbacks_below_a_pageblock_than_the_default() {
    let mut r = shipped("table2.toml");
    // Linux 6.15's rule is not one of the paper's claims: left out to save a run.
    let asserted = ["default", "aaf", "opbs", "apbs"];
    r.variants.retain(|v| asserted.contains(&v.as_str()));
    assert_eq!(r.variants, asserted);
    let report = apsys16::table2(&r, &|_: &str| {}).unwrap();
    let below = |v: &str| -> u64 {
        variant(&report.data, v)["end"]["fallback"]["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["alloc"] != "Movable" && e["order"].as_u64().unwrap() < 9)
            .map(|e| e["count"].as_u64().unwrap())
            .sum()
    };
    // The builds never need Linux 4.1's slow path: every allocation above order 0
    // (reclaimable slab in order-1 and order-2 slabs: 26,441 in the default's run) passes
    // 4.1's per-order watermark check at `low`, so the model's order-0 check takes the
    // same path 4.1 would (experiments/apsys16/README.md, "The paper's kernel").
    for run in &report.runs {
        let kernel = &run.result.summary.system.kernel;
        assert_eq!(kernel.order_watermark_misses, 0, "{:?}", run.path);
    }
    let default = below("default");
    assert!(default > 0, "no kernel fallback below a pageblock");
    for v in ["aaf", "opbs", "apbs"] {
        assert!(
            below(v) < default,
            "{v} has {} kernel fallbacks below a pageblock, the default {default}",
            below(v)
        );
    }
}
