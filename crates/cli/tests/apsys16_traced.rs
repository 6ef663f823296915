//! The protocol of the kernel build we traced on Linux 6.18
//! (`experiments/apsys16/traced-build.toml`, `docs/kbuild-measurement.md`), with the traced
//! kernel's fallback rule (`claim-first`) at two machine sizes. The real run fell back 40
//! times, every fallback claiming its pageblock, 10 of them movable requests claiming
//! kernel pageblocks, and its builds tainted 3-13 pageblocks. With memory as tight as on
//! that machine the model must do the same kinds of thing; with room to spare only the
//! kernel's own claims of whole free blocks are left. Nothing here is special-cased: the
//! counts come out of the kernel-build workload, reclaim and the allocator.

use hugemm_cli::reproduce::{self, apsys16};
use serde_json::Value;
use std::path::Path;

/// Table 2's end-of-builds state for the claim-first variant alone of the shipped
/// `experiments/apsys16/NAME`, after `edit` (which must change what it means to: it is
/// given the text and returns the text to run).
fn claim_first_end(name: &str, edit: impl Fn(&str) -> String) -> Value {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../experiments/apsys16")
        .join(name);
    let text = std::fs::read_to_string(&shipped).unwrap().replace(
        "variants = [\"claim-first\", \"default\", \"aaf\", \"opbs\", \"apbs\"]",
        "variants = [\"claim-first\"]",
    );
    assert!(text.contains("[\"claim-first\"]"), "{name}: variants");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(name);
    std::fs::write(&file, edit(&text)).unwrap();
    let r = reproduce::load(&file).unwrap_or_else(|e| panic!("{e}"));
    let report = apsys16::table2(&r, &|_: &str| {}).unwrap();
    report.data[0]["end"].clone()
}

/// Fallback events at `end` that `keep` accepts.
fn fallbacks(end: &Value, keep: impl Fn(&Value) -> bool) -> u64 {
    end["fallback"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| keep(e))
        .map(|e| e["count"].as_u64().unwrap())
        .sum()
}

/// Fallbacks, fallbacks of movable requests, fallbacks that did not claim, and tainted
/// pageblocks at the end of the two builds on a machine of `memory`.
fn traced_build(memory: &str) -> (u64, u64, u64, u64) {
    let end = claim_first_end("traced-build.toml", |text| {
        let sized = format!("memory = \"{memory}\"");
        let text = text.replace("memory = \"224MiB\"", &sized);
        assert!(text.contains(&sized));
        text
    });
    (
        fallbacks(&end, |_| true),
        fallbacks(&end, |e| e["alloc"] == "Movable"),
        fallbacks(&end, |e| e["claimed"] == false),
        end["tainted"].as_u64().unwrap(),
    )
}

#[test]
fn tight_memory_brings_the_traced_kernels_movable_claims_and_room_removes_them() {
    let (all, movable, unclaimed, tainted) = traced_build("224MiB");
    let tight = format!(
        "224 MiB: {all} fallbacks, {movable} movable, {unclaimed} unclaimed, {tainted} tainted"
    );
    assert!((20..=80).contains(&all), "{tight}: the real run made 40");
    assert!(
        movable >= 5,
        "{tight}: the real run made 10 movable fallbacks"
    );
    assert_eq!(unclaimed, 0, "{tight}: every real fallback claimed");
    assert!(
        tainted > 0,
        "{tight}: the real builds tainted 3-13 pageblocks"
    );

    let (all, movable, _, tainted) = traced_build("384MiB");
    let roomy = format!("384 MiB: {all} fallbacks, {movable} movable, {tainted} tainted");
    assert!(all < 10, "{roomy}");
    assert_eq!((movable, tainted), (0, 0), "{roomy}");
}

/// Figure 3 on the same protocol (`experiments/apsys16/fig3-traced.toml`, seed 1): two of
/// the paper's three statements on kernel page placement and compaction hold there (seeds
/// 1-3 were checked by hand: `experiments/apsys16/README.md`). KMU compacts better than
/// the default, and soon after compaction KMU is worse than both others. The third, that
/// KML forms no block above order 7, does not hold and is not asserted.
#[test]
fn kmu_compacts_best_then_fragments_worst_on_the_traced_protocol() {
    let shipped =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/apsys16/fig3-traced.toml");
    let r = reproduce::load(&shipped).unwrap_or_else(|e| panic!("{e}"));
    let report = apsys16::figure3(&r, &|_: &str| {}).unwrap();
    let fu = |variant: &str, when: &str| -> Vec<f64> {
        let v = report
            .data
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["variant"] == variant)
            .unwrap_or_else(|| panic!("no {variant}"));
        v[when]["fu"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    };
    // Fu summed over orders 4 to 10: how little of free memory large requests can use.
    let large = |fu: &[f64]| fu[4..=10].iter().sum::<f64>();
    let (default1, kmu1) = (
        fu("default", "after_compaction"),
        fu("kmu", "after_compaction"),
    );
    let shown = format!("default-1 {default1:.2?}\nkmu-1 {kmu1:.2?}");
    assert!(kmu1[9] < default1[9], "KMU compacts better\n{shown}");
    assert!(large(&kmu1) < large(&default1), "{shown}");
    let later: Vec<(&str, Vec<f64>)> = ["default", "kml", "kmu"]
        .into_iter()
        .map(|v| (v, fu(v, "later")))
        .collect();
    let shown = format!("{later:.2?}");
    let kmu2 = &later[2].1;
    assert!(kmu2[9] >= 0.9, "KMU-2 Fu(9) nearly 1\n{shown}");
    for (v, other) in &later[..2] {
        assert!(
            large(kmu2) > large(other),
            "KMU-2 worse than {v}-2\n{shown}"
        );
    }
}

/// `traced-build-slub.toml` (seed 1, claim-first), the detailed kernel memory, without
/// per-CPU lists, with and without the traced kernel's watermark boosting: boosting cuts
/// the movable requests' steals (211 -> 9 when measured on 2026-11-27, fifth stop; 217 ->
/// 4 and 64 -> 0 in seeds 2 and 3). With the file's per-CPU lists on, drained as Linux
/// 6.x drains them, boosting raises them instead in every seed (109 -> 181, 169 -> 316,
/// 0 -> 132; not asserted, not traced); until the drain was corrected the other way round
/// (253 -> 159 in seed 1). `experiments/apsys16/README.md` gives the rest.
#[test]
fn watermark_boosting_cuts_the_detailed_models_steals_without_per_cpu_lists() {
    let steals = |factor: u32| -> u64 {
        let end = claim_first_end("traced-build-slub.toml", |text| {
            let (boost, lists) = ("watermark_boost_factor = 15000", "per_cpu_lists = true");
            assert!(text.contains(boost) && text.contains(lists));
            text.replace(boost, &format!("watermark_boost_factor = {factor}"))
                .replace(lists, "per_cpu_lists = false")
        });
        fallbacks(&end, |e| e["alloc"] == "Movable" && e["claimed"] == false)
    };
    let (off, on) = (steals(0), steals(15_000));
    let shown = format!("movable steals: {off} without boosting, {on} with");
    assert!(
        off >= 50,
        "{shown}: the detailed model steals hundreds of times"
    );
    assert!(on < off, "{shown}");
}
