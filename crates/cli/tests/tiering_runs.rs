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

/// Two stencil processes on cores of their own, memory on `home` (of 256 MiB local and
/// 768 MiB remote), for one simulated second; `two`: both run, else only the first.
fn stencils(home: u8, two: bool) -> RunResult {
    let second = if two {
        "[[app]]\nmodel = \"551.ppalm\"\nname = \"b\"\nmemory = \"128MiB\"\nduration_s = 1\n"
    } else {
        ""
    };
    let text = format!(
        "[machine]\nprofile = \"xeon-e5-2650v3-2node\"\nnode_memory = [\"256MiB\", \"768MiB\"]\n\
         cores = 2\n[policy]\nname = \"linux\"\n[tiering]\npolicy = \"none\"\nhome_node = {home}\n\
         [sim]\nmode = \"sampled\"\nseed = 1\nsample_interval_ms = 100\n\
         [[app]]\nmodel = \"551.ppalm\"\nname = \"a\"\nmemory = \"128MiB\"\nduration_s = 1\n{second}"
    );
    let loaded =
        config::parse(&text, "stencils.toml", Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
    Engine::new(loaded.experiment).unwrap().run().unwrap()
}

#[test]
fn a_node_s_bandwidth_is_shared_by_the_processes_using_it() {
    let alone = stencils(1, false);
    let shared = stencils(1, true);
    let tiers = |r: &RunResult| r.summary.system.tiers.clone().unwrap();
    // All the traffic is on the slow node, and each sample's bandwidth adds up to it.
    let t = tiers(&alone);
    assert_eq!(t.nodes[0].traffic_bytes, 0, "{t:?}");
    let remote = t.nodes[1].traffic_bytes as f64;
    assert!(remote > 1e9, "{t:?}");
    let rows: Vec<_> = alone
        .timeseries
        .iter()
        .filter(|r| r.process == "node:disaggregated")
        .collect();
    let mut sampled = 0.0;
    let mut last = 0;
    for r in &rows {
        sampled += r.bandwidth_gbps.unwrap() * (r.time_ns - last) as f64;
        last = r.time_ns;
    }
    assert!(
        (sampled / remote - 1.0).abs() < 0.01,
        "{sampled} vs {remote}"
    );
    // A second user of the node raises its utilisation and slows the first.
    let peak = |r: &RunResult| tiers(r).nodes[1].peak_utilisation;
    assert!(
        peak(&shared) > 1.5 * peak(&alone),
        "{} {}",
        peak(&shared),
        peak(&alone)
    );
    let (a, b) = (refs(&alone), refs(&shared));
    assert!(
        (b as f64) < 0.95 * a as f64,
        "alone {a}, sharing {b} references"
    );
    // On the fast node, with twice the bandwidth, sharing costs less.
    let (fa, fb) = (refs(&stencils(0, false)), refs(&stencils(0, true)));
    assert!(
        fb as f64 / fa as f64 > b as f64 / a as f64,
        "fast {fb}/{fa}, slow {b}/{a}"
    );
}
