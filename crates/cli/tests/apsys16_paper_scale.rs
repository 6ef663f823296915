//! The APSys'16 claims that hold at the paper's scale, run from the shipped files (two
//! full kernel builds of about 7,000 units with 5 GiB of products: `experiments/apsys16/`,
//! `docs/kbuild-measurement.md`) on Linux 4.1 as the files model it (its fallback rules,
//! watermarks, tail placement of freed blocks, boot order, per-CPU lists, reserve
//! pageblocks, zones, kswapd on its own thread, the pageblocks a booted 4.1 holds, and the
//! build's reclaimable kernel memory by 4.1's parts: buffer heads, inodes, dentries and
//! page-cache tree nodes, and a real build's names: `.cmd` and dependency files,
//! directories, names never found). The Table 2 run takes a few minutes of one core per
//! kernel, so this is the slowest test of the suite; it keeps
//! `experiments/apsys16/README.md`'s verdicts true. Seed 1, as the files; the numbers in
//! the comments are that run's and seeds 2 and 3's (2026-11-29, twelfth session).
//!
//! Asserted, because they hold in seeds 1-3:
//! - AAF, OPBS and APBS leave fewer kernel fallbacks below a pageblock than the default
//!   (Table 2: 1,176 / 1,009 / 959, 998 / 798 / 970 and 915 / 977 / 1,057 against 1,242 /
//!   1,506 / 1,275), the step at which the paper's policies act;
//! - AAF, OPBS and APBS taint fewer pageblocks than the default at the end (30 / 122 / 37,
//!   22 / 116 / 46 and 22 / 110 / 58 against 146 / 160 / 136), the paper's Table 2.
//!
//! Not asserted, because they hold in some seeds only or by margins that have moved with
//! changes to the model (the README gives every seed's numbers): APBS allocating more huge
//! pages than the default at stress-highalloc's first pass (1,022 / 967 / 1,029 against
//! 1,008 / 970 / 1,032: ahead in seed 1 only), and Figure 2's OPBS under half the
//! default's tainting at the end (30 / 46 / 44 against 96 / 70 / 69: in seed 1 only; its
//! run would add minutes here). Not asserted because they disagree in every seed: Table
//! 1's share of tainted user pageblocks (paper 81%, hugemm 7-8%), Table 2's Fu(9)
//! (0.91-0.92 at the end for every kernel: page cache fills memory), Figure 2's growth in
//! the second build (none beyond a few pageblocks), stress-highalloc at rest (1,447-1,453
//! of 1,459 for all), and Figure 3's KML and KMU-2 (README). Asserted too: none of Table
//! 2's builds' allocations above order 0 would have failed Linux 4.1's per-order
//! watermark check.

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
/// the paper's policies choose differently from Linux's rule) than the default, and taint
/// fewer pageblocks than the default at the end. hugemm seeds 1 / 2 / 3 in the module
/// doc. Tolerance: none (strictly fewer); the tainted counts' margins are 57-86% of the
/// default's for AAF and APBS, 16-28% for OPBS (24 pageblocks in seed 1).
#[test]
fn the_papers_policies_fall_back_below_a_pageblock_and_taint_less_than_the_default() {
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
    // (reclaimable slab in order-1 and order-2 slabs) passes
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
    let tainted = |v: &str| variant(&report.data, v)["end"]["tainted"].as_u64().unwrap();
    let default = tainted("default");
    assert!(default > 0, "nothing tainted under the default");
    for v in ["aaf", "opbs", "apbs"] {
        assert!(
            tainted(v) < default,
            "{v} taints {} pageblocks, the default {default}",
            tainted(v)
        );
    }
}
