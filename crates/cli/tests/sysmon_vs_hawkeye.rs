//! Beyond the papers (issue 19, item 7): H-Policy's split of cold huge pages beside
//! HawkEye's bloat recovery and Linux 6.12's THP shrinker, on a scaled-down version of
//! `experiments/sysmon-h/vs-hawkeye.toml` (a 768 MiB machine instead of 4 GiB: the
//! server at HawkEye Figure 1's test scale, the lookup 480 MiB with a 336 MiB hog).
//! Each observation the reproduction prints is asserted, with the arithmetic behind it.

use hugemm_cli::reproduce::{self, sysmon_vs, zeroing};
use std::path::Path;

/// The machine and the server: HawkEye Figure 1's insert / delete 80% / insert, as in
/// `hawkeye_zeroing.rs`'s Figure 1 test; `{p3}` values of 2 MiB in P3.
const SERVER: &str = r#"
[machine]
profile = "haswell-e5-2690v3"
memory = "768MiB"
cores = 2
[policy]
name = "linux"
[sim]
mode = "sampled"
sample_interval_ms = 1000
time_limit_s = 5000
[[kv_server]]
name = "redis"
heap = "4GiB"
[[kv_server.step]]
op = "insert"
keys = 172_000
value_size = 4086
[[kv_server.step]]
op = "delete"
share = 0.8
[[kv_server.step]]
op = "idle"
duration_s = 450
[[kv_server.step]]
op = "insert"
keys = {p3}
value_size = "2MiB"
"#;

/// The lookup (a 192 MiB arena, one page in 16 written, then a 288 MiB table, 7
/// records in 8 filled, probed at random for 120 s) and a 336 MiB hog at 60 s: 816 MiB
/// wanted of 768.
const LOOKUP: &str = r#"
[[process]]
name = "lookup"
[[process.phase]]
op = "mmap"
buffer = "table"
size = "288MiB"
[[process.phase]]
op = "mmap"
buffer = "arena"
size = "192MiB"
[[process.phase]]
op = "touch"
buffer = "arena"
stride = "64KiB"
[[process.phase]]
op = "touch"
buffer = "table"
nonzero_share = 0.875
[[process.phase]]
op = "access"
buffer = "table"
pattern = "uniform"
duration_ms = 120_000
dependent = true
[[memhog]]
name = "hog"
size = "336MiB"
start_ms = 60_000
hold_ms = 60_000
"#;

/// Zero-filled base pages of an arena huge page: 512 less the 32 the 64 KiB stride
/// wrote.
const ARENA_ZERO_PAGES: u64 = 480;

fn load(text: &str) -> (tempfile::TempDir, reproduce::Reproduction) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("vs.toml");
    std::fs::write(&file, text).unwrap();
    let r = reproduce::load(&file).unwrap_or_else(|e| panic!("{e}"));
    (dir, r)
}

fn outcomes(text: &str) -> Vec<sysmon_vs::Outcome> {
    let (_dir, r) = load(text);
    sysmon_vs::outcomes(&zeroing::run_all(&r, &|_: &str| {}).unwrap())
}

fn of<'a>(o: &'a [sysmon_vs::Outcome], set: &str, variant: &str) -> &'a sysmon_vs::Outcome {
    o.iter()
        .find(|x| x.set == set && x.variant == variant)
        .unwrap_or_else(|| panic!("{set} under {variant}"))
}

#[test]
fn h_policy_splits_only_cold_huge_pages_where_hawkeye_splits_the_hot_table_too() {
    let text = format!(
        "[reproduce]\nkind = \"sysmon-vs-hawkeye\"\n\
         variants = [\"linux-2m\", \"linux-shrink-409\", \"hawkeye\", \"hpolicy\"]\n\
         sets = [[\"redis\"], [\"lookup\", \"hog\"]]\n{}{LOOKUP}",
        SERVER.replace("{p3}", "265")
    );
    let o = outcomes(&text);
    for c in sysmon_vs::observations(&o) {
        assert_eq!(c.holds, Some(true), "{}: {}", c.claim, c.hugemm);
    }
    // The server: Linux's khugepaged refills the deletions' holes and P3 runs out of
    // memory; H-Policy has nothing refilling them and needs no recovery; HawkEye
    // recovers what its own promoter refilled.
    let (linux, hp, he) = (
        of(&o, "redis", "linux-2m"),
        of(&o, "redis", "hpolicy"),
        of(&o, "redis", "hawkeye"),
    );
    assert_eq!(linux.oom, vec!["redis"]);
    assert!(hp.oom.is_empty() && hp.recovered_bytes < 64 << 20);
    assert_eq!(
        hp.huge_pages_onset,
        Some(0),
        "P2 split them all; none came back"
    );
    assert!(he.oom.is_empty() && he.recovered_bytes > 256 << 20);
    // The lookup: H-Policy and the shrinker split arena huge pages only (480 zero-filled
    // base pages each; a table huge page holds about 64, under the shrinker's 409 and
    // hot for SysMon-H); HawkEye splits every huge page, table included.
    let arena_only = |v: &str| {
        let x = of(&o, "lookup+hog", v);
        assert!(x.oom.is_empty(), "{v}: {:?}", x.oom);
        assert!(x.recovery_splits > 0, "{v}");
        assert_eq!(
            x.recovered_bytes,
            x.recovery_splits * ARENA_ZERO_PAGES * 4096,
            "{v}"
        );
        assert!(x.time_to_recover_s.is_some_and(|t| t <= 2.0), "{v}");
        assert!(x.mmu_after.unwrap() < 0.001, "{v}: {:?}", x.mmu_after);
    };
    arena_only("hpolicy");
    arena_only("linux-shrink-409");
    let he = of(&o, "lookup+hog", "hawkeye");
    assert_eq!((he.huge_pages_onset, he.recovery_splits), (Some(240), 240));
    assert!(he.mmu_after.unwrap() > 0.10, "{:?}", he.mmu_after);
    assert_eq!(of(&o, "lookup+hog", "linux-2m").oom, vec!["hog"]);
}

/// H-Policy splits only the huge pages its latest H-Tree lists; those P3 maps in a
/// burst (each 2 MiB value's extent leaving an unwritten tail) are not among them, so a
/// slightly larger P3 runs it out of memory where HawkEye, which scans the huge pages
/// mapped when it recovers, completes.
#[test]
fn h_policy_cannot_split_the_huge_pages_a_burst_maps_between_its_rounds() {
    let text = format!(
        "[reproduce]\nkind = \"sysmon-vs-hawkeye\"\nvariants = [\"hawkeye\", \"hpolicy\"]\n\
         sets = [[\"redis\"]]\n{}",
        SERVER.replace("{p3}", "300")
    );
    let o = outcomes(&text);
    let (hp, he) = (of(&o, "redis", "hpolicy"), of(&o, "redis", "hawkeye"));
    assert_eq!(hp.oom, vec!["redis"]);
    assert_eq!(hp.recovered_bytes, 0);
    assert!(he.oom.is_empty(), "{:?}", he.oom);
    assert!(he.recovered_after_onset_bytes.unwrap() > 256 << 20);
}

/// The table's huge pages fit the STLB, so after its first window the lookup walks
/// almost never and every one of its huge pages has 0 sampled misses: SysMon-H's first
/// phase sorts nothing out. Phase two's accessed-bit checks find the table's pages
/// accessed and keep them; with it off (`cold_misses = 0`: no page is checked), H-Policy
/// splits in address order and takes the table, mapped below the arena, first.
#[test]
fn phase_two_is_what_keeps_the_hot_table_whole() {
    let text = format!(
        "[reproduce]\nkind = \"sysmon-vs-hawkeye\"\nvariants = [\"hpolicy\"]\n\
         sets = [[\"lookup\", \"hog\"]]\n{}{LOOKUP}[policy.hpolicy]\ncold_misses = 0.0\n",
        SERVER.replace("{p3}", "1")
    );
    let o = outcomes(&text);
    let hp = of(&o, "lookup+hog", "hpolicy");
    assert!(hp.oom.is_empty(), "{:?}", hp.oom);
    assert!(
        hp.recovered_bytes < hp.recovery_splits * ARENA_ZERO_PAGES * 4096,
        "table huge pages (about 64 zero-filled base pages each) were split too"
    );
    assert!(hp.mmu_after.unwrap() > 0.10, "{:?}", hp.mmu_after);
}

#[test]
fn the_hpolicy_variant_runs_h_policys_kernel() {
    let (_dir, r) = load(&format!(
        "[reproduce]\nkind = \"hawkeye-fig1\"\nvariants = [\"hpolicy\"]\n{}",
        SERVER.replace("{p3}", "1")
    ));
    let exp = zeroing::experiment(&r, &[], "hpolicy");
    assert!(matches!(
        exp.policy,
        hugemm_policy::PolicyConfig::HPolicy(c) if c == r.policies.hpolicy
    ));
    assert!(exp.kernel.preserve_huge_blocks);
    assert_eq!(exp.kernel.compaction, hugemm_mm::CompactMode::HoleAware);
    assert!(!exp.kernel.prezero.enabled);
}

#[test]
fn an_unknown_variant_is_named_with_the_allowed_ones() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("vs.toml");
    let text = format!(
        "[reproduce]\nkind = \"sysmon-vs-hawkeye\"\nvariants = [\"h-policy\"]\n{}",
        SERVER.replace("{p3}", "1")
    );
    std::fs::write(&file, text).unwrap();
    let e = reproduce::load(&file).unwrap_err().to_string();
    assert!(
        e.contains("reproduce.variants") && e.contains("\"h-policy\"") && e.contains("hpolicy"),
        "{e}"
    );
}

#[test]
fn the_shipped_file_validates() {
    let file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/sysmon-h/vs-hawkeye.toml");
    let r = reproduce::load(&file).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.kind, "sysmon-vs-hawkeye");
    assert_eq!(
        r.variants,
        ["linux-2m", "linux-shrink-409", "hawkeye", "hpolicy"]
    );
    assert_eq!(r.sets, [vec!["redis"], vec!["lookup", "hog"]]);
    assert!(r.typical_wall_s.is_some_and(|w| w > 0.0 && w < 180.0));
}
