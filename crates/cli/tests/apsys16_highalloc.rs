//! Stress-highalloc run as mmtests runs it (`experiments/apsys16/highalloc.toml`), on a
//! smaller machine than the paper's so that it takes seconds: the shipped file with
//! 512 MiB of memory and builds of 2,000 units writing 1 GiB (`--set`). What is checked is
//! the procedure, not the paper's numbers (`apsys16_paper_scale.rs` and the README give
//! those): the passes' timing, the builds killed, every pass asking for 95% of memory.

use hugemm_cli::config::Override;
use hugemm_cli::reproduce::{self, apsys16};
use serde_json::Value;
use std::path::Path;

#[test]
fn stress_highalloc_runs_its_passes_on_mmtests_clock_and_kills_the_builds() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/apsys16/highalloc.toml");
    let sets: Vec<Override> = [
        "machine.memory=512MiB",
        "kernel_build[0].units=2000",
        "kernel_build[0].object_size=1GiB",
        "kernel_build[0].heap_min=8MiB",
        "kernel_build[0].heap_max=24MiB",
        "reproduce.variants=[\"default\"]",
    ]
    .iter()
    .map(|s| s.parse().unwrap())
    .collect();
    let r = reproduce::load_with(&path, &sets).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        r.highalloc.under_load,
        "the shipped file runs mmtests' procedure"
    );
    let report = apsys16::highalloc(&r, &|_: &str| {}).unwrap();
    let run = &report.data[0];
    let passes = run["attempts"].as_array().unwrap();
    assert_eq!(passes.len(), 3);
    let s = |p: &Value, k: &str| p[k].as_u64().unwrap() as f64 / 1e9;
    // 95% of 512 MiB in 2 MiB pages, one request every 125 ms: 242 intervals at least.
    for p in passes {
        assert_eq!(p["requested"], 243);
        assert!(s(p, "duration_ns") >= 242.0 * 0.125, "{p}");
    }
    // Pass 1 when the builds have run 300 s in full memory; pass 2 five seconds after
    // pass 1; pass 3 after 5 + 180 s more, the kill, and the drop of the page cache.
    let start = |i: usize| s(&passes[i], "time_ns");
    let end = |i: usize| start(i) + s(&passes[i], "duration_ns");
    assert!(start(0) > 300.0, "pass 1 at {} s", start(0));
    assert!(
        (start(1) - end(0) - 5.0).abs() < 1.0,
        "pass 2 at {} s",
        start(1)
    );
    assert!(
        (start(2) - end(1) - 185.0).abs() < 1.0,
        "pass 3 at {} s",
        start(2)
    );
    let snapshot = run["at_first_attempt"]["time_s"].as_f64().unwrap();
    assert!((snapshot - start(0)).abs() < 0.1, "{snapshot} s");
    // Every build worker (make -j4) was killed, unless memory ran out first.
    let killed = run["processes_killed"].as_u64().unwrap();
    let oom = run["processes_oom_killed"].as_u64().unwrap();
    assert_eq!(killed + oom, 4, "killed {killed}, oom {oom}");
    // At rest, with the page cache dropped, at least as many as under load.
    let got = |i: usize| passes[i]["allocated"].as_u64().unwrap();
    assert!(got(2) >= got(0) && got(2) >= got(1), "{passes:?}");
    // The procedure is recorded with the data.
    assert_eq!(run["procedure"], "mmtests");
}
