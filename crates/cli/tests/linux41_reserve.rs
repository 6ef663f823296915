//! Linux 4.1's `MIGRATE_RESERVE` in the synthetic build the Linux 4.1 guest runs
//! (`examples/kbuild-4.1-guest-512m.toml`, `docs/kbuild-measurement.md`, "The reserve").
//!
//! On a 512 MiB zone the reserve (2 pageblocks, 1,024 frames) is larger than the `low`
//! watermark (about 850 frames), so when page cache fills memory the Movable lists run dry
//! before kswapd wakes, and movable requests fall back to the kernel types' lists: Linux
//! 4.1 did so 172-406 times in the DMA32 zone in three guest runs. Without the reserve the
//! model's movable requests did so 2-3 times; with it, 304-498 (seeds 1-3, 2026-11-28).
//! Asserted with a margin of about three times either way: at least 100 with the reserve,
//! at most 30 without it. Run as one zone (`machine.zones = "none"`), as it was measured
//! before the model had zones (with the example's zones, `linux41_zones.rs`).

mod common;

use common::run_ok;
use serde_json::Value;
use std::path::Path;

fn run(extra: &[&str]) -> Value {
    let file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/kbuild-4.1-guest-512m.toml");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut args = vec!["--set", "machine.zones=none"];
    args.extend_from_slice(extra);
    run_ok(&file, &out, &args);
    serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap()
}

/// Fallbacks of movable requests to the kernel types' lists.
fn movable_fallbacks(summary: &Value) -> u64 {
    let events = summary["system"]["fallback"]["events"].as_array().unwrap();
    events
        .iter()
        .filter(|e| e["alloc"] == "Movable" && e["taken_from"] != "Movable")
        .map(|e| e["count"].as_u64().unwrap())
        .sum()
}

#[test]
fn with_4_1s_reserve_movable_requests_fall_back_when_memory_fills_as_4_1s_did() {
    let with = run(&[]);
    assert_eq!(
        with["system"]["fragmentation_end"]["pageblocks"]["reserve"], 2,
        "the min watermark of 512 MiB rounded up to pageblocks"
    );
    assert!(
        with["system"]["kernel"]["kswapd_wakes"].as_u64().unwrap() > 0,
        "memory filled"
    );
    let movable_with = movable_fallbacks(&with);
    assert!(
        movable_with >= 100,
        "movable fallbacks with the reserve: {movable_with}"
    );

    let without = run(&["--set", "kernel.migrate_reserve=false"]);
    assert!(
        without["system"]["fragmentation_end"]["pageblocks"]
            .get("reserve")
            .is_none(),
        "no reserve, none reported"
    );
    let movable_without = movable_fallbacks(&without);
    assert!(
        movable_without <= 30,
        "movable fallbacks without the reserve: {movable_without}"
    );
}
