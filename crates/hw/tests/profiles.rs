//! Profile loading: every builtin loads and validates, and every kind of bad input gets an
//! error naming its origin and key.

use hugemm_hw::{MachineProfile, PageSize, ProfileError};

const HASWELL: &str = include_str!("../../../profiles/haswell-e5-2690v3.toml");

fn err(text: &str) -> ProfileError {
    MachineProfile::from_toml_str(text, "test.toml").expect_err("profile should be rejected")
}

fn assert_names(e: &ProfileError, key: &str) {
    assert_eq!(e.key(), Some(key), "{e}");
    let shown = e.to_string();
    assert!(shown.starts_with("test.toml"), "origin missing: {shown}");
    assert!(shown.contains(key), "key missing: {shown}");
}

#[test]
fn every_builtin_profile_loads_and_validates() {
    assert_eq!(MachineProfile::builtin_names().len(), 7);
    for name in MachineProfile::builtin_names() {
        let p = match MachineProfile::builtin_checked(name) {
            Some(Ok(p)) => p,
            other => panic!("{name}: {other:?}"),
        };
        assert_eq!(&p.name, name);
        assert!(p.picos_per_cycle() > 0.0);
    }
    assert!(MachineProfile::builtin("no-such-machine").is_none());
}

#[test]
fn the_nimble_testbed_has_two_nodes_with_table_1_numbers() {
    let p = MachineProfile::builtin("xeon-e5-2650v3-2node").unwrap();
    assert_eq!(p.node_count(), 2);
    assert_eq!(p.node_latency_ns(0), Some(84.9));
    assert_eq!(p.node_gbps(0), Some(34.0));
    assert_eq!(p.node_latency_ns(1), Some(199.2));
    assert_eq!(p.node_gbps(1), Some(17.0));
    assert_eq!(p.node_name(1), Some("disaggregated"));
    assert_eq!(p.node_latency_ns(2), None);
    let m = p.costs.migration.as_ref().expect("migration costs");
    assert_eq!(m.link_gbps, 16.0);
    // A one-node profile has none of this.
    let h = MachineProfile::builtin("haswell-e5-2690v3").unwrap();
    assert_eq!(h.node_count(), 1);
    assert!(h.costs.migration.is_none());
}

#[test]
fn bad_tiers_and_migration_costs_are_named() {
    let nimble = include_str!("../../../profiles/xeon-e5-2650v3-2node.toml");
    let e = err(&nimble.replace("latency_ns = 199.2", "latency_ns = -1.0"));
    assert_names(&e, "tiers[0].latency_ns");
    let e = err(&nimble.replace("latency_ns = 199.2", "latency_ns = 50.0"));
    assert_names(&e, "tiers[0].latency_ns");
    assert!(e.to_string().contains("nearer node"), "{e}");
    let e = err(&nimble.replace("gbps = 17.0", "gbps = 0.0"));
    assert_names(&e, "tiers[0].gbps");
    let e = err(&nimble.replace("link_gbps = 16.0", "link_gbps = 0.0"));
    assert_names(&e, "costs.migration.link_gbps");
    let e = err(&nimble.replace("page_ns = 2746.0", "page_ns = -2.0"));
    assert_names(&e, "costs.migration.page_ns");
    let e = err(&nimble.replace("call_ns = 97130.0", "call_ms = 97.0"));
    assert!(e.to_string().contains("call_ms"), "{e}");
}

#[test]
fn haswell_follows_the_hawkeye_testbed() {
    let p = MachineProfile::builtin("haswell-e5-2690v3").unwrap();
    assert_eq!(p.freq_ghz, 2.3);
    assert_eq!(p.tlb.stlb.entries, 1024);
    let l1_2m = p
        .tlb
        .l1
        .iter()
        .find(|l| l.sizes == [PageSize::Huge])
        .unwrap();
    assert_eq!(l1_2m.entries, 8);
    // 2 MB zeroing at the rate derived from Table 1 takes ~452 us.
    let t = p.costs.zero_time(2 << 20).0;
    assert!((440_000..465_000).contains(&t), "{t}");
}

#[test]
fn unknown_key_is_named() {
    let text = HASWELL.replace("hit_cycles = 8.0", "hit_cycles = 8.0\nhit_cycle = 3");
    let e = err(&text);
    assert_names(&e, "tlb.stlb.hit_cycle");
    assert!(e.to_string().contains("unknown field"), "{e}");
}

#[test]
fn unknown_top_level_key_is_named() {
    let e = err(&format!("colour = \"red\"\n{HASWELL}"));
    assert_names(&e, "colour");
    assert!(e.to_string().starts_with("test.toml:1:"), "{e}");
}

#[test]
fn wrong_type_is_named_with_its_line() {
    let text = HASWELL.replace(
        "ways = 8                    # [intel] 8-way",
        "ways = \"8\"",
    );
    let e = err(&text);
    assert_names(&e, "tlb.stlb.ways");
    assert!(e.to_string().contains("expected u32"), "{e}");
    if let ProfileError::Parse { line, .. } = &e {
        let expected = text
            .lines()
            .position(|l| l.starts_with("ways = \"8\""))
            .unwrap()
            + 1;
        assert_eq!(*line, Some(expected));
    }
}

#[test]
fn zero_ways_is_rejected_naming_the_key() {
    let text = HASWELL.replace("ways = 8                    # [intel] 8-way", "ways = 0");
    let e = err(&text);
    assert_names(&e, "tlb.stlb.ways");
    assert!(e.to_string().contains("expected at least 1"), "{e}");
}

#[test]
fn ways_must_split_entries_into_power_of_two_sets() {
    let e = err(&HASWELL.replace(
        "pde = { entries = 32, ways = 32 }",
        "pde = { entries = 48, ways = 16 }",
    ));
    assert_names(&e, "pwc.pde.ways");
    let e = err(&HASWELL.replace(
        "pde = { entries = 32, ways = 32 }",
        "pde = { entries = 32, ways = 5 }",
    ));
    assert_names(&e, "pwc.pde.ways");
}

#[test]
fn too_many_ways_are_rejected() {
    let e = err(&HASWELL.replace(
        "pde = { entries = 32, ways = 32 }",
        "pde = { entries = 128, ways = 128 }",
    ));
    assert_names(&e, "pwc.pde.ways");
}

#[test]
fn bad_cache_level_is_named_by_index() {
    let e = err(&HASWELL.replace("bytes = 262144", "bytes = 1000"));
    assert_names(&e, "caches[1].bytes");
    let e = err(&HASWELL.replace("latency_cycles = 42.0", "latency_cycles = 10.0"));
    assert_names(&e, "caches[2].latency_cycles");
}

#[test]
fn stlb_way_limit_cannot_exceed_the_ways() {
    let e = err(&HASWELL.replace("2m = 8, 1g = 0", "2m = 9, 1g = 0"));
    assert_names(&e, "tlb.stlb.max_ways.2m");
}

#[test]
fn unknown_page_size_and_duplicate_l1_are_rejected() {
    let e = err(&HASWELL.replace("sizes = [\"1g\"]", "sizes = [\"3m\"]"));
    assert_names(&e, "tlb.l1[2].sizes");
    let e = err(&HASWELL.replace("sizes = [\"1g\"]", "sizes = [\"2m\"]"));
    assert_names(&e, "tlb.l1[2].sizes");
}

#[test]
fn missing_key_and_bad_numbers_are_named() {
    let e = err(&HASWELL.replace("mlp = 10.0", ""));
    assert!(e.to_string().contains("missing field `mlp`"), "{e}");
    let e = err(&HASWELL.replace("freq_ghz = 2.3", "freq_ghz = -1.0"));
    assert_names(&e, "freq_ghz");
    let e = err(&HASWELL.replace("zero_gbps = 4.6", "zero_gbps = 0.0"));
    assert_names(&e, "costs.zero_gbps");
    // Misses to DRAM hold fill buffers too: more of them than `mlp` is an error.
    let e = err(&HASWELL.replace("mlp = 10.0", "mlp = 10.0\ndram_mlp = 12.0"));
    assert_names(&e, "dram_mlp");
    assert!(e.to_string().contains("from 1 to mlp = 10"), "{e}");
    let e = err(&HASWELL.replace("mlp = 10.0", "mlp = 10.0\ndram_mlp = 0.5"));
    assert_names(&e, "dram_mlp");
    let e = err(&HASWELL.replace("mlp = 10.0", "mlp = 10.0\nreorder_window = 0.5"));
    assert_names(&e, "reorder_window");
    assert!(e.to_string().contains("instructions >= 1"), "{e}");
    let e = err(&HASWELL.replace(
        "zero_gbps = 4.6",
        "zero_gbps = 4.6\nvm_fault_trap_ns = -1.0",
    ));
    assert_names(&e, "costs.vm_fault_trap_ns");
}

#[test]
fn syntax_error_names_the_origin_and_line() {
    let e = err("name = \"x\"\ncores = \n");
    assert!(e.to_string().starts_with("test.toml:2"), "{e}");
}

#[test]
fn load_reads_files_and_names_them() {
    let dir = std::env::temp_dir().join(format!("hugemm-hw-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("good.toml");
    std::fs::write(&good, HASWELL).unwrap();
    assert_eq!(
        MachineProfile::load(&good).unwrap().name,
        "haswell-e5-2690v3"
    );
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, HASWELL.replace("cores = 24", "cores = 0")).unwrap();
    let e = MachineProfile::load(&bad).unwrap_err();
    assert!(e.to_string().starts_with(&bad.display().to_string()), "{e}");
    assert_eq!(e.key(), Some("cores"));
    let missing = MachineProfile::load(&dir.join("absent.toml")).unwrap_err();
    assert!(matches!(missing, ProfileError::Read { .. }));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// SysMon-H's testbed: Nehalem's 2 MB translations have the first-level DTLB's 32
/// entries only (its 512-entry STLB holds 4 KB pages), so huge pages beyond 64 MB miss.
#[test]
fn the_nehalem_testbed_keeps_2m_translations_out_of_its_stlb() {
    let p = MachineProfile::builtin("nehalem-i7").unwrap();
    assert_eq!(p.freq_ghz, 2.8);
    assert_eq!(p.tlb.stlb.entries, 512);
    assert_eq!(p.tlb.stlb.max_ways.get(PageSize::Huge), 0);
    let l1_2m: u32 = p
        .tlb
        .l1
        .iter()
        .filter(|a| a.sizes.contains(&PageSize::Huge))
        .map(|a| a.entries)
        .sum();
    assert_eq!(l1_2m, 32);
}

#[test]
fn bad_guest_values_are_named() {
    let epyc = include_str!("../../../profiles/epyc-milan-kvm.toml");
    let line = |key: &str| {
        epyc.lines()
            .find(|l| l.starts_with(key))
            .unwrap_or_else(|| panic!("{key} in the profile"))
            .split('#')
            .next()
            .unwrap()
            .trim()
            .to_string()
    };
    let fraction = line("host_huge_fraction");
    let e = err(&epyc.replace(&fraction, "host_huge_fraction = 1.5"));
    assert_names(&e, "guest.host_huge_fraction");
    assert!(e.to_string().contains("[0, 1]"), "{e}");
    let base = line("host_walk_base_cycles");
    let e = err(&epyc.replace(&base, "host_walk_base_cycles = -3.0"));
    assert_names(&e, "guest.host_walk_base_cycles");
    let extra = line("host_pt_extra_ns");
    let e = err(&epyc.replace(&extra, "host_pt_extra_ns = -10.0"));
    assert_names(&e, "guest.host_pt_extra_ns");
    let ntlb = line("nested_tlb =");
    let e = err(&epyc.replace(&ntlb, "nested_tlb = { entries = 24, ways = 16 }"));
    assert_names(&e, "guest.nested_tlb.ways");
    // Splintered translations cannot have more ways than the STLB (16 on this profile).
    let splintered = line("stlb_splintered_ways");
    let e = err(&epyc.replace(&splintered, "stlb_splintered_ways = 17"));
    assert_names(&e, "guest.stlb_splintered_ways");
    assert!(e.to_string().contains("at most tlb.stlb.ways = 16"), "{e}");
    let e = err(&epyc.replace(&splintered, "stlb_splintered_ways = -1"));
    assert!(e.to_string().contains("stlb_splintered_ways"), "{e}");
    // The retired single-number nested model is an unknown key now.
    let e = err(&epyc.replace(&fraction, "nested_dram_walk_cycles = 250.0"));
    assert!(e.to_string().contains("nested_dram_walk_cycles"), "{e}");
}

#[test]
fn only_the_kvm_profiles_are_guests() {
    for name in MachineProfile::builtin_names() {
        let p = MachineProfile::builtin(name).unwrap();
        assert_eq!(p.guest.is_some(), name.ends_with("-kvm"), "{name}");
    }
}
