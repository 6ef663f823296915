//! A run on a machine of two memory nodes with Nimble's tiering policy: hot pages come to
//! the fast node, so the run beats first-touch placement and running from the slow node,
//! and stays behind running all from the fast node; the summary and time series say
//! where memory is and what moved.

use hugemm_cli::config::{self, overrides::Override};
use hugemm_sim::{Engine, RunResult};
use std::path::Path;

fn run(sets: &[&str]) -> RunResult {
    let file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tiering/nimble-graph500.toml");
    let overrides: Vec<Override> = sets.iter().map(|s| s.parse().unwrap()).collect();
    let loaded = config::load_with(&file, &overrides).unwrap_or_else(|e| panic!("{e}"));
    Engine::new(loaded.experiment).unwrap().run().unwrap()
}

fn refs(r: &RunResult) -> u64 {
    r.summary.processes[0].references
}

#[test]
fn nimble_brings_hot_pages_up_and_sits_between_the_bounds() {
    let nimble = run(&[]);
    let first_touch = run(&["tiering.policy=none"]);
    let remote = run(&["tiering.policy=none", "tiering.home_node=1"]);
    let local = run(&[
        "tiering.policy=none",
        "machine.node_memory=[\"768MiB\", \"256MiB\"]",
    ]);
    let (n, f, r, l) = (
        refs(&nimble),
        refs(&first_touch),
        refs(&remote),
        refs(&local),
    );
    assert!(
        l > n && n > f && f >= r,
        "local {l}, nimble {n}, first-touch {f}, remote {r}"
    );
    let tiers = nimble
        .summary
        .system
        .tiers
        .as_ref()
        .expect("a tier summary");
    assert_eq!(tiers.policy, "nimble");
    assert_eq!(tiers.nodes.len(), 2);
    assert!(tiers.migrated.huge_pages > 0, "{tiers:?}");
    assert_eq!(
        tiers.migrated.base_pages, 0,
        "native THP migration moves huge pages whole"
    );
    let p = &nimble.summary.processes[0];
    assert!(p.migration_stall_ns > 0);
    assert_eq!(p.nodes.len(), 2);
    let rows: Vec<_> = nimble
        .timeseries
        .iter()
        .filter(|r| r.process.starts_with("node:"))
        .collect();
    assert!(rows.iter().any(|r| r.process == "node:disaggregated"));
    assert!(rows.iter().all(|r| r.frames_free.is_some()));
    // No tiering: nothing moves, and the summary says so.
    let none = first_touch.summary.system.tiers.as_ref().unwrap();
    assert_eq!((none.policy.as_str(), none.calls), ("none", 0));
}

#[test]
fn linux_base_page_migration_splits_what_it_moves() {
    let linux = run(&[
        "tiering.nimble.thp_migration=\"split\"",
        "tiering.nimble.threads=1",
        "tiering.nimble.pages_in_flight=1",
        "tiering.nimble.exchange=false",
    ]);
    let tiers = linux.summary.system.tiers.as_ref().unwrap();
    assert!(
        tiers.migrated.splits > 0 && tiers.migrated.base_pages > 0,
        "{tiers:?}"
    );
}

#[test]
fn tiering_on_one_node_is_refused() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/random-4g.toml");
    let set: Override = "tiering.policy=\"nimble\"".parse().unwrap();
    let e = config::load_with(&file, &[set])
        .expect_err("one node")
        .to_string();
    assert!(
        e.contains("tiering.policy") && e.contains("one memory node"),
        "{e}"
    );
}
