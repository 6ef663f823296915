//! HawkEye Table 3's qualitative claim (§2.4), at a small scale: mg.D has the larger
//! working set but far lower MMU overhead than cg.D, and cg.D gains more from 2 MB pages.
//! The overheads come out of the access patterns through the hardware model; nothing here
//! is special-cased.

use hugemm_cli::reproduce::{self, hawkeye_table3};
use std::path::Path;

/// `experiments/hawkeye/table3.toml` at 1/64 of the paper's memory and fewer references.
const SMALL: &str = r#"
[reproduce]
kind = "hawkeye-table3"
scale = "test: 1/64 of the paper's memory"

[machine]
profile = "haswell-e5-2690v3"
memory = "1GiB"
cores = 2

[policy]
name = "linux"

[sim]
mode = "sampled"
seed = 1

[[app]]
model = "mg.D"
memory = "416MiB"
refs = 4_000_000_000

[[app]]
model = "cg.D"
memory = "256MiB"
refs = 1_500_000_000
"#;

/// [`SMALL`]'s processes also in a VM (Table 3's virtual column).
const VM: &str = r#"
[guest]
host_huge_fraction = 0.0
host_walk_base_cycles = 13.0
nested_tlb_hit_cycles = 1.0
nested_tlb = { entries = 32, ways = 32 }
host_pwc = { pml4e = { entries = 2, ways = 2 }, pdpte = { entries = 4, ways = 4 }, pde = { entries = 32, ways = 32 } }

[[vm]]
name = "vm"
memory = "768MiB"
cores = 2
processes = ["mg.D", "cg.D"]
"#;

fn measure() -> Vec<hawkeye_table3::Measured> {
    measure_text(SMALL)
}

fn measure_text(text: &str) -> Vec<hawkeye_table3::Measured> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("table3.toml");
    std::fs::write(&file, text).unwrap();
    let r = reproduce::load(&file).unwrap_or_else(|e| panic!("{e}"));
    hawkeye_table3::measure(&r, &|_: &str| {}).unwrap()
}

#[test]
fn mg_has_the_larger_working_set_but_far_lower_mmu_overhead_and_gains_less_from_2mb() {
    let rows = measure();
    let (mg, cg) = (&rows[0], &rows[1]);
    assert_eq!((mg.name.as_str(), cg.name.as_str()), ("mg.D", "cg.D"));
    let show = |m: &hawkeye_table3::Measured| {
        format!(
            "{}: wss {} tlb {:.4} mmu4k {:.4} mmu2m {:.4} speedup {:.3}",
            m.name, m.wss_bytes, m.tlb_miss_4k, m.mmu_4k, m.mmu_2m, m.speedup
        )
    };
    let both = format!("{}\n{}", show(mg), show(cg));
    assert!(mg.wss_bytes > cg.wss_bytes, "{both}");
    assert!(cg.mmu_4k > 10.0 * mg.mmu_4k, "{both}");
    assert!(cg.tlb_miss_4k > 10.0 * mg.tlb_miss_4k, "{both}");
    assert!(cg.speedup > mg.speedup + 0.1, "{both}");
    assert!(mg.speedup < 1.05, "{both}");
    // 2 MB pages remove nearly all of both overheads.
    assert!(mg.mmu_2m < 0.01 && cg.mmu_2m < 0.01, "{both}");
}

#[test]
fn huge_pages_buy_more_in_a_vm_and_most_for_cg() {
    let rows = measure_text(&format!("{SMALL}{VM}"));
    let (mg, cg) = (&rows[0], &rows[1]);
    let v = |m: &hawkeye_table3::Measured| m.speedup_virtual.expect("the VM ran");
    let both = format!(
        "mg.D native {:.3} virtual {:.3}; cg.D native {:.3} virtual {:.3}",
        mg.speedup,
        v(mg),
        cg.speedup,
        v(cg)
    );
    // The paper: mg.D 1.01 -> 1.11, cg.D 1.62 -> 2.7.
    assert!(v(cg) > cg.speedup + 0.2, "{both}");
    assert!(v(mg) > mg.speedup, "{both}");
    assert!(v(cg) > v(mg) + 0.5, "{both}");
    // Nested walks cost more: the VM's 4 KB overhead exceeds the native one.
    let (vm4k, vm2m) = (cg.mmu_virtual_4k.unwrap(), cg.mmu_virtual_2m.unwrap());
    assert!(
        vm4k > cg.mmu_4k && vm2m < 0.05,
        "cg.D in a VM: {vm4k:.3} at 4 KB, {vm2m:.3} at 2 MB"
    );
}

#[test]
fn the_shipped_table3_file_validates() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/hawkeye/table3.toml");
    let r = reproduce::load(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.kind, "hawkeye-table3");
    let names: Vec<&str> = r
        .experiment
        .processes
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(names, ["mg.D", "cg.D"]);
    assert_eq!(r.vms.len(), 1, "the virtual column's VM");
    assert!(r.guest_profile.is_some());
}

/// Every shipped reproduction file (APSys'16 and HawkEye) loads and validates, so a
/// change to the configuration cannot silently break `hugemm reproduce` on them.
#[test]
fn every_shipped_reproduction_file_validates() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments");
    let mut seen = 0;
    for dir in ["apsys16", "hawkeye"] {
        let mut files: Vec<_> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        files.sort();
        for f in files {
            let r = reproduce::load(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            assert!(!r.variants.is_empty(), "{}", f.display());
            seen += 1;
        }
    }
    assert_eq!(seen, 21, "9 APSys'16 and 12 HawkEye files");
}
