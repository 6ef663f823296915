//! HawkEye Figure 9 (virtual machines, Table 6's layouts) at a small scale: the shipped
//! file validates, and the orderings that hold at this scale are asserted.
//! `experiments/hawkeye/README.md` gives the full-scale results and the disagreements.

use hugemm_cli::reproduce::{self, hawkeye_vm};
use std::path::Path;

fn shipped() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/hawkeye/fig9.toml")
}

#[test]
fn the_shipped_fig9_file_validates_with_tables_6_layouts() {
    let r = reproduce::load(&shipped()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.variants, ["host", "guest", "both"]);
    assert_eq!(r.runs(), 12);
    let layout = |l: &str| {
        r.vms
            .iter()
            .filter(|v| v.layout.as_deref() == Some(l))
            .count()
    };
    assert_eq!((layout("host"), layout("guest"), layout("both")), (2, 1, 2));
}

/// fig9.toml at 1/32 of the paper's memory, 1/10 of the work, the cg.D set only.
fn small() -> String {
    let text = std::fs::read_to_string(shipped()).unwrap();
    let mut out = text
        .replace(
            "sets = [[\"xsbench\", \"redis\"], [\"cg\", \"redis\"]]",
            "sets = [[\"cg\", \"redis\"]]",
        )
        .replace(
            "variants = [\"host\", \"guest\", \"both\"]",
            "variants = [\"host\", \"guest\"]",
        );
    for (from, to) in [
        ("memory = \"24GiB\"", "memory = \"3GiB\""),
        ("files = 409600", "files = 51200"),
        ("files = 196608", "files = 24576"),
        ("files = 327680", "files = 40960"),
        ("files = 122880", "files = 15360"),
        ("files = 245760", "files = 30720"),
        ("memory = \"4GiB\"", "memory = \"512MiB\""),
        ("memory = \"6GiB\"", "memory = \"768MiB\""),
        ("memory = \"12GiB\"", "memory = \"1536MiB\""),
        ("memory = \"20GiB\"", "memory = \"2560MiB\""),
        ("memory = \"7680MiB\"", "memory = \"960MiB\""),
        ("memory = \"15GiB\"", "memory = \"1920MiB\""),
        ("refs = 97_000_000_000", "refs = 10_000_000_000"),
        ("duration_s = 450", "duration_s = 60"),
        ("start_ms = 60000", "start_ms = 10000"),
        ("start_ms = 61000", "start_ms = 11000"),
    ] {
        assert!(out.contains(from), "fig9.toml no longer has {from}");
        out = out.replace(from, to);
    }
    out
}

#[test]
fn hawkeye_in_the_guest_speeds_cg_up_and_a_linux_host_backs_advised_vms_with_huge_pages() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("fig9.toml");
    std::fs::write(&file, small()).unwrap();
    let r = reproduce::load(&file).unwrap_or_else(|e| panic!("{e}"));
    let report = hawkeye_vm::figure9(&r, &|_: &str| {}).unwrap();
    let data = report
        .data
        .as_array()
        .expect("one entry per set and layout")
        .clone();
    let entry = |layout: &str| {
        data.iter()
            .find(|d| d["layout"] == layout)
            .unwrap_or_else(|| panic!("no {layout} entry"))
            .clone()
    };
    let guest = entry("guest");
    let speedup = guest["speedup"].as_f64().expect("both runs finished");
    // The paper: 18-90% in every layout. At this scale the guest layout gives a few %.
    assert!(
        speedup > 1.02,
        "HawkEye in the guest: {speedup:.3}x over Linux"
    );
    // A Linux host with THP compacts at the faults of QEMU's advised guest memory: nearly
    // every region the VMs touched is on a host huge page (why HawkEye at the host has
    // little to add here, experiments/hawkeye/README.md).
    let host = entry("host");
    for vm in host["linux"]["vms"].as_array().unwrap() {
        let (huge, backed) = (
            vm["host_huge_regions"].as_u64().unwrap(),
            vm["host_backed_regions"].as_u64().unwrap(),
        );
        assert!(backed > 0 && huge * 10 >= backed * 9, "{vm}");
    }
}
