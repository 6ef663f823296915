//! Scenario tests of the translation-cost model, named for the behaviour they check.

use hugemm_hw::{Geometry, MachineProfile, Mmu, PageSize, Picos, Reference, TlbOutcome, VirtAddr};

const GB: u64 = 1 << 30;
const BASE_VA: u64 = 0x7f00_0000_0000;

fn profile(name: &str) -> MachineProfile {
    MachineProfile::builtin(name).expect("builtin profile")
}

fn mmu(p: &MachineProfile) -> Mmu {
    Mmu::new(p, Geometry::X86_64)
}

/// A reference to `va` mapped by a `size` page; the physical address is a fixed scramble
/// of the page number so pages land at arbitrary frames.
fn reference(va: u64, size: PageSize, dependent: bool) -> Reference {
    let page = Geometry::X86_64.bytes(size);
    let frame = (va / page).wrapping_mul(0x9E37_79B9) & ((64 * GB / page) - 1);
    Reference {
        asid: 1,
        va: VirtAddr(va),
        size,
        pa: frame * page + va % page,
        dependent,
        write: false,
    }
}

/// Seeded random addresses in `[BASE_VA, BASE_VA + span)`.
fn random_vas(n: usize, span: u64, seed: u64) -> Vec<u64> {
    use rand::{RngCore, SeedableRng};
    let mut rng = rand_xoshiro::SplitMix64::seed_from_u64(seed);
    (0..n).map(|_| BASE_VA + rng.next_u64() % span).collect()
}

/// Fractions of L1 hits, STLB hits and walks, and the mean walk time, over `refs` after
/// a warm-up pass over the same references.
fn run(m: &mut Mmu, refs: &[Reference]) -> (f64, f64, f64, f64, Picos) {
    for r in refs {
        m.access(r);
    }
    let (mut l1, mut stlb, mut walks, mut walk_ps, mut time) = (0, 0, 0, 0u64, Picos(0));
    for r in refs {
        let c = m.access(r);
        time += c.time;
        match c.outcome {
            TlbOutcome::L1Hit => l1 += 1,
            TlbOutcome::StlbHit => stlb += 1,
            TlbOutcome::Walk => {
                walks += 1;
                walk_ps += c.walk.0;
            }
        }
    }
    let n = refs.len() as f64;
    let mean_walk = walk_ps as f64 / walks.max(1) as f64;
    (
        l1 as f64 / n,
        stlb as f64 / n,
        walks as f64 / n,
        mean_walk,
        time,
    )
}

#[test]
fn a_repeated_reference_hits_in_the_l1_tlb() {
    for name in MachineProfile::builtin_names() {
        let p = profile(name);
        let mut m = mmu(&p);
        let r = reference(BASE_VA + 0x1234, PageSize::Base, true);
        assert_eq!(m.access(&r).outcome, TlbOutcome::Walk);
        let again = m.access(&r);
        assert_eq!(again.outcome, TlbOutcome::L1Hit, "{name}");
        assert_eq!(again.walk, Picos(0));
        // Translation is free; the data line is now in L1D.
        let l1d = p.caches[0].latency_cycles.max(p.issue_cycles);
        assert_eq!(
            again.time.0,
            (l1d * p.picos_per_cycle()).round() as u64,
            "{name}"
        );
    }
}

#[test]
fn a_cold_walk_loads_every_level_from_dram_and_the_next_one_only_the_pte() {
    let p = profile("haswell-e5-2690v3");
    let mut m = mmu(&p);
    let dram = p.dram_latency_ns * p.freq_ghz;
    let stlb = p.tlb.stlb.hit_cycles;
    let cold = m.access(&reference(BASE_VA, PageSize::Base, true));
    let walk = p.walk_base_cycles + 4.0 * dram;
    let ps = |cycles: f64| (cycles * p.picos_per_cycle()).round() as u64;
    assert_eq!(cold.walk.0, ps(walk));
    assert_eq!(cold.time.0, ps(stlb + walk + dram));
    // Another page of the same 2 MB region: the PDE cache hits and the PTE shares the
    // line just loaded, found in L1D.
    let next = m.access(&reference(BASE_VA + 0x1000, PageSize::Base, true));
    assert_eq!(next.outcome, TlbOutcome::Walk);
    assert_eq!(
        next.walk.0,
        ps(p.walk_base_cycles + p.caches[0].latency_cycles)
    );
}

#[test]
fn random_4k_references_over_4gb_mostly_walk() {
    let p = profile("haswell-e5-2690v3");
    let refs: Vec<_> = random_vas(100_000, 4 * GB, 1)
        .into_iter()
        .map(|va| reference(va, PageSize::Base, false))
        .collect();
    let (_, _, walks, _, _) = run(&mut mmu(&p), &refs);
    assert!(walks > 0.95, "walk fraction {walks}");
}

#[test]
fn random_2m_references_over_4gb_mostly_hit_the_stlb() {
    // Zen 3's 2048-entry STLB holds 2 MB pages in every way: 4 GB of 2 MB pages fit
    // (guest 2 MB pages on host 2 MB pages; host 4 KB pages would splinter them).
    let p = guest(1.0);
    let refs: Vec<_> = random_vas(100_000, 4 * GB, 2)
        .into_iter()
        .map(|va| reference(va, PageSize::Huge, false))
        .collect();
    let (l1, stlb, walks, _, _) = run(&mut mmu(&p), &refs);
    assert!(stlb > 0.9, "stlb {stlb} l1 {l1} walks {walks}");
    // Haswell's 1024-entry STLB covers half of it: about half the references walk, and
    // their walks are short (PDPTE-cache hit, PD line in cache).
    let p = profile("haswell-e5-2690v3");
    let (_, stlb_hsw, walks_hsw, walk_2m, _) = run(&mut mmu(&p), &refs);
    assert!(
        stlb_hsw > 0.4 && walks_hsw < 0.6,
        "stlb {stlb_hsw} walks {walks_hsw}"
    );
    let refs_4k: Vec<_> = refs
        .iter()
        .map(|r| reference(r.va.0, PageSize::Base, false))
        .collect();
    let (_, _, _, walk_4k, _) = run(&mut mmu(&p), &refs_4k);
    assert!(
        walk_2m * 3.0 < walk_4k,
        "2M walk {walk_2m} ps vs 4K walk {walk_4k} ps"
    );
}

#[test]
fn walk_cost_falls_when_the_pde_cache_covers_the_range() {
    // 16 MB of random 4 KB references: 8 PDEs. With a 32-entry PDE cache every walk
    // loads only its PTE line; with a 1-entry one most walks also load a PDE line.
    let covered = profile("haswell-e5-2690v3");
    let mut uncovered = covered.clone();
    uncovered.pwc.pde.entries = 1;
    uncovered.pwc.pde.ways = 1;
    uncovered.validate("test").unwrap();
    let refs: Vec<_> = random_vas(50_000, 16 << 20, 3)
        .into_iter()
        .map(|va| reference(va, PageSize::Base, true))
        .collect();
    let (_, _, walks_c, walk_c, _) = run(&mut mmu(&covered), &refs);
    let (_, _, walks_u, walk_u, _) = run(&mut mmu(&uncovered), &refs);
    assert!((walks_c - walks_u).abs() < 1e-9, "same TLBs, same walks");
    let ppc = covered.picos_per_cycle();
    assert!(
        walk_u - walk_c > 2.0 * ppc,
        "covered {walk_c} ps vs uncovered {walk_u} ps"
    );
}

/// Random 4 KB references over 4 GB all walk. Independent ones overlap their data
/// misses (up to the profile's MLP) and, with several page walkers, their walks; on a
/// machine of one walker the walks run one at a time, which bounds what overlapping the
/// data saves: about half, since a walk here costs about what the data access does
/// (measured ratios, independent over dependent: haswell-e5-2690v3 and the Nimble
/// testbed 0.50, nehalem-i7 0.56; sapphire-rapids 0.12 and epyc-milan-kvm 0.16 with
/// four walkers). So: under half with several walkers, less without.
#[test]
fn independent_references_cost_less_than_dependent_ones() {
    for name in MachineProfile::builtin_names() {
        let p = profile(name);
        let vas = random_vas(50_000, 4 * GB, 4);
        let indep: Vec<_> = vas
            .iter()
            .map(|&va| reference(va, PageSize::Base, false))
            .collect();
        let dep: Vec<_> = vas
            .iter()
            .map(|&va| reference(va, PageSize::Base, true))
            .collect();
        let (_, _, _, _, t_indep) = run(&mut mmu(&p), &indep);
        let (_, _, _, _, t_dep) = run(&mut mmu(&p), &dep);
        let bound = match p.page_walkers {
            1 => t_dep.0,
            _ => t_dep.0 / 2,
        };
        assert!(
            t_indep.0 < bound,
            "{name} ({} walkers): independent {t_indep:?} vs dependent {t_dep:?}",
            p.page_walkers
        );
    }
}

#[test]
fn huge_pages_are_limited_to_half_the_stlb_on_sapphire_rapids() {
    // 2048 2 MB pages: the STLB's 4 ways of 256 sets hold at most 1024 of them.
    let p = profile("sapphire-rapids");
    let refs: Vec<_> = (0..2048u64)
        .map(|i| reference(BASE_VA + i * (2 << 20), PageSize::Huge, false))
        .collect();
    let mut m = mmu(&p);
    for r in &refs {
        m.access(r);
    }
    // Of the most recent 1024 pages, those not in L1 must hit the STLB.
    let hits = refs[1024..]
        .iter()
        .filter(|r| m.access(r).outcome != TlbOutcome::Walk)
        .count();
    assert_eq!(hits, 1024);
    let first = m.access(&refs[0]);
    assert_eq!(first.outcome, TlbOutcome::Walk);
}

#[test]
fn address_spaces_do_not_share_translations() {
    let p = profile("haswell-e5-2690v3");
    let mut m = mmu(&p);
    let a = reference(BASE_VA, PageSize::Base, true);
    let b = Reference { asid: 2, ..a };
    m.access(&a);
    assert_eq!(m.access(&b).outcome, TlbOutcome::Walk);
    assert_eq!(m.access(&a).outcome, TlbOutcome::L1Hit);
}

#[test]
fn invalidate_drops_only_the_range_and_asid() {
    let p = profile("haswell-e5-2690v3");
    let mut m = mmu(&p);
    let inside = reference(BASE_VA + 0x5000, PageSize::Base, true);
    let outside = reference(BASE_VA + 0x9000, PageSize::Base, true);
    let other = Reference { asid: 2, ..inside };
    let huge = reference(BASE_VA + 4 * (2 << 20), PageSize::Huge, true);
    for r in [&inside, &outside, &other, &huge] {
        m.access(r);
    }
    m.invalidate(1, VirtAddr(BASE_VA + 0x5000), VirtAddr(BASE_VA + 0x6000));
    m.invalidate(
        1,
        VirtAddr(BASE_VA + 4 * (2 << 20) + 0x1000),
        VirtAddr(BASE_VA + 4 * (2 << 20) + 0x2000),
    );
    assert_eq!(m.access(&inside).outcome, TlbOutcome::Walk);
    assert_eq!(
        m.access(&huge).outcome,
        TlbOutcome::Walk,
        "a range inside a 2 MB page drops it"
    );
    assert_eq!(m.access(&outside).outcome, TlbOutcome::L1Hit);
    assert_eq!(m.access(&other).outcome, TlbOutcome::L1Hit);
}

#[test]
fn flushes_drop_translations() {
    let p = profile("sapphire-rapids");
    let mut m = mmu(&p);
    let a = reference(BASE_VA, PageSize::Huge, true);
    let b = Reference { asid: 9, ..a };
    m.access(&a);
    m.access(&b);
    m.flush_asid(9);
    assert_eq!(m.access(&a).outcome, TlbOutcome::L1Hit);
    assert_eq!(m.access(&b).outcome, TlbOutcome::Walk);
    m.flush_all();
    assert_eq!(m.access(&a).outcome, TlbOutcome::Walk);
}

#[test]
fn giant_pages_walk_two_levels_at_most() {
    let p = profile("haswell-e5-2690v3");
    let mut m = mmu(&p);
    let dram = p.dram_latency_ns * p.freq_ghz;
    let c = m.access(&reference(BASE_VA, PageSize::Giant, true));
    let ps = |cycles: f64| (cycles * p.picos_per_cycle()).round() as u64;
    assert_eq!(c.walk.0, ps(p.walk_base_cycles + 2.0 * dram));
    assert_eq!(
        m.access(&reference(BASE_VA + 12345, PageSize::Giant, true))
            .outcome,
        TlbOutcome::L1Hit
    );
}

#[test]
fn a_tiny_machine_never_panics() {
    let p = profile("epyc-milan-kvm");
    let g = Geometry {
        base_shift: 12,
        level_bits: 2,
        levels: 2,
        max_order: 3,
    };
    let mut m = Mmu::new(&p, g);
    for size in PageSize::ALL {
        for va in [0u64, 1 << 13, u64::MAX] {
            let r = Reference {
                asid: u32::MAX,
                va: VirtAddr(va),
                size,
                pa: va,
                dependent: false,
                write: true,
            };
            m.access(&r);
        }
    }
    m.invalidate(u32::MAX, VirtAddr(0), VirtAddr(u64::MAX));
}

/// The development machine's profile as a guest whose host maps `fraction` of its memory
/// with 2 MB pages, every line from memory at one price (`host_pt_extra_ns` 0: these
/// tests count loads; `nested.rs` tests the extra).
fn guest(fraction: f64) -> MachineProfile {
    let mut p = profile("epyc-milan-kvm");
    let g = p.guest.as_mut().expect("a guest profile");
    g.host_huge_fraction = fraction;
    g.host_pt_extra_ns = 0.0;
    p
}

/// Walk cycles of the first reference on a cold MMU.
fn cold_walk_cycles(p: &MachineProfile, size: PageSize) -> f64 {
    let mut m = mmu(p);
    let c = m.access(&reference(BASE_VA, size, true));
    assert_eq!(c.outcome, TlbOutcome::Walk);
    c.walk.0 as f64 / p.picos_per_cycle()
}

#[test]
fn a_cold_nested_walk_loads_up_to_24_lines() {
    // Bhargava et al. (ASPLOS'08): a 4 KB guest page on 4 KB host pages needs 4 guest
    // entries, each behind a 4-level host walk, and a last host walk for the data: 24
    // loads. Host 2 MB pages end each host walk a level early (4 + 5 x 3 = 19); a 2 MB
    // guest page on them also ends the guest walk early (3 + 4 x 3 = 15). Cold, every
    // load comes from DRAM, save the few a host page-walk cache serves within the walk.
    let dram = {
        let p = guest(0.0);
        p.dram_latency_ns * p.freq_ghz
    };
    let loads = |fraction, size| {
        let p = guest(fraction);
        let g = p.guest.as_ref().unwrap();
        let host_walks = if size == PageSize::Base { 5.0 } else { 4.0 };
        let fixed =
            p.walk_base_cycles + host_walks * (g.host_walk_base_cycles + g.nested_tlb_hit_cycles);
        (cold_walk_cycles(&p, size) - fixed) / dram
    };
    let (l44, l42, l22) = (
        loads(0.0, PageSize::Base),
        loads(1.0, PageSize::Base),
        loads(1.0, PageSize::Huge),
    );
    assert!((20.0..=24.01).contains(&l44), "4K/4K: {l44} DRAM loads");
    assert!((15.0..=19.01).contains(&l42), "4K/2M: {l42} DRAM loads");
    assert!((11.0..=15.01).contains(&l22), "2M/2M: {l22} DRAM loads");
    assert!(l44 > l42 && l42 > l22, "{l44} {l42} {l22}");
    // Bare metal: 4 loads.
    let mut bare = guest(0.0);
    bare.guest = None;
    let native = (cold_walk_cycles(&bare, PageSize::Base) - bare.walk_base_cycles) / dram;
    assert!((native - 4.0).abs() < 0.01, "bare metal: {native}");
}

#[test]
fn host_4k_backing_splinters_guest_huge_pages_in_the_tlb() {
    // One line in each 4 KB page of 64 MB of guest 2 MB pages: 32 TLB entries if the
    // host maps them with 2 MB pages, 16,384 (far beyond the 2,048-entry STLB) if it
    // splinters them into 4 KB.
    let vas: Vec<u64> = (0..(64u64 << 20) / 4096)
        .map(|i| BASE_VA + i * 4096 + 64 * (i % 64))
        .collect();
    let walks = |fraction| {
        let p = guest(fraction);
        let mut m = mmu(&p);
        let refs: Vec<Reference> = vas
            .iter()
            .map(|&va| reference(va, PageSize::Huge, true))
            .collect();
        run(&mut m, &refs).2
    };
    let (huge, split) = (walks(1.0), walks(0.0));
    assert!(huge < 0.001, "host 2 MB: {huge} of references walk");
    assert!(split > 0.9, "host 4 KB: {split} of references walk");
    // Half and half lands in between, about half of the references walking.
    let half = walks(0.5);
    assert!((0.3..0.7).contains(&half), "host half 2 MB: {half}");
}

#[test]
fn a_guest_pays_more_per_walk_than_bare_metal_and_less_with_host_huge_pages() {
    let refs: Vec<Reference> = random_vas(200_000, 4 * GB, 5)
        .into_iter()
        .map(|va| reference(va, PageSize::Base, true))
        .collect();
    let mean_walk = |p: &MachineProfile| run(&mut mmu(p), &refs).3;
    let mut bare = guest(0.0);
    bare.guest = None;
    let (native, host4k, host2m) = (
        mean_walk(&bare),
        mean_walk(&guest(0.0)),
        mean_walk(&guest(1.0)),
    );
    assert!(
        host4k > 1.3 * native,
        "4K/4K {host4k} ps vs native {native}"
    );
    assert!(
        host2m < host4k && host2m > native,
        "4K/2M {host2m}: between {native} and {host4k}"
    );
}

#[test]
fn the_stlb_keeps_splintered_translations_only_in_the_ways_the_profile_gives_them() {
    // 1,024 random 4 KB pages of 1 GiB, one line each: their translations fit the
    // 2,048-entry STLB, not the 64-entry L1 TLB. Guest 2 MB pages on host 4 KB pages
    // (every one splintered), and the same pages mapped 4 KB by the guest (native).
    let vas = random_vas(1024, GB, 9);
    let stlb_hits = |ways: Option<u32>, size| {
        let mut p = guest(0.0);
        p.guest.as_mut().unwrap().stlb_splintered_ways = ways;
        let refs: Vec<Reference> = vas.iter().map(|&va| reference(va, size, true)).collect();
        let (_, stlb, walks, _, _) = run(&mut mmu(&p), &refs);
        (stlb, walks)
    };
    // Absent: splintered pieces are held as native 4 KB entries.
    let (shared, _) = stlb_hits(None, PageSize::Huge);
    assert!(shared > 0.85, "shared ways: {shared} STLB hits");
    // None kept: every L1 miss walks; native 4 KB translations are still held.
    let (none, walks) = stlb_hits(Some(0), PageSize::Huge);
    assert_eq!(none, 0.0, "0 ways: {none} STLB hits");
    assert!(walks > 0.9, "0 ways: {walks} walks");
    let (native, _) = stlb_hits(Some(0), PageSize::Base);
    assert!(
        native > 0.85,
        "native 4 KB beside 0 splintered ways: {native}"
    );
    // Two of 16 ways (256 entries) for 1,024 pieces visited in a repeated order: LRU
    // keeps almost none; 12 (1,536 entries) keep most.
    let (two, _) = stlb_hits(Some(2), PageSize::Huge);
    assert!(two < 0.1, "2 ways: {two} STLB hits");
    let (twelve, _) = stlb_hits(Some(12), PageSize::Huge);
    assert!(twelve > 0.6, "12 ways: {twelve} STLB hits");
}

/// Mean picoseconds of an independent reference to each of `lines` consecutive lines
/// (2 MB pages), visited in order after a first pass over them: what the caches keep of
/// a cycle that long.
fn independent_line_cost(p: &MachineProfile, lines: u64) -> f64 {
    let mut m = mmu(p);
    let refs: Vec<Reference> = (0..lines)
        .map(|i| reference(BASE_VA + i * 64, PageSize::Huge, false))
        .collect();
    let (.., time) = run(&mut m, &refs);
    time.0 as f64 / lines as f64
}

#[test]
fn independent_misses_to_dram_overlap_only_up_to_dram_mlp() {
    let mut p = profile("haswell-e5-2690v3");
    let last = p.caches.last().unwrap().bytes;
    // Lines that fit the L1 (served by a cache) and lines far more than the last level
    // holds (a line reused after twice its capacity comes from DRAM).
    let (cached, dram) = (64, 2 * last / 64);
    let before = (
        independent_line_cost(&p, cached),
        independent_line_cost(&p, dram),
    );
    p.dram_mlp = Some(p.mlp / 2.0);
    let after = (
        independent_line_cost(&p, cached),
        independent_line_cost(&p, dram),
    );
    assert_eq!(before.0, after.0, "cache hits still overlap up to mlp");
    let ratio = after.1 / before.1;
    assert!(
        (ratio - 2.0).abs() < 0.05,
        "misses to DRAM cost {ratio:.3}x, expected 2x"
    );
    p.dram_mlp = Some(p.mlp);
    assert_eq!(
        independent_line_cost(&p, dram),
        before.1,
        "dram_mlp = mlp changes nothing"
    );
}

/// Total picoseconds of `vas` as 4 KB references, dependent or not, on a fresh MMU (the
/// MMU's state evolves the same either way: only the timing differs).
fn total_time(p: &MachineProfile, vas: &[u64], dependent: bool) -> f64 {
    timed(p, vas, dependent, None)
}

/// [`total_time`] with the references' phase saying `instructions` per reference.
fn timed(p: &MachineProfile, vas: &[u64], dependent: bool, instructions: Option<f64>) -> f64 {
    let mut m = mmu(p);
    m.set_instructions_per_ref(instructions);
    let refs: Vec<Reference> = vas
        .iter()
        .map(|&va| reference(va, PageSize::Base, dependent))
        .collect();
    let (.., time) = run(&mut m, &refs);
    time.0 as f64
}

#[test]
fn with_mlp_holding_translation_independent_references_overlap_whole() {
    // Random 4 KB references over 4 GB mostly walk and miss every cache. With walkers
    // that never bind and one `m` for every miss, holding the translation makes an
    // independent reference cost exactly a dependent one over `m`; without it the walk
    // overlaps for free, so it costs less.
    let mut p = profile("haswell-e5-2690v3");
    p.page_walkers = 1 << 20;
    p.dram_mlp = None;
    p.issue_cycles = 0.0;
    let vas = random_vas(20_000, 4 * GB, 7);
    let dependent = total_time(&p, &vas, true);
    let data_only = total_time(&p, &vas, false);
    p.mlp_holds_translation = true;
    let whole = total_time(&p, &vas, false);
    let expected = dependent / p.mlp;
    // Each reference's time is rounded to a picosecond: at most 0.5 ps each.
    assert!(
        (whole - expected).abs() <= 0.5 * 2.0 * vas.len() as f64,
        "whole references: {whole} ps, dependent / mlp: {expected} ps"
    );
    assert!(
        data_only < 0.8 * whole,
        "data alone ({data_only} ps) should leave the walks free of the {whole} ps"
    );
    assert_eq!(
        total_time(&p, &vas, true),
        dependent,
        "dependent references do not depend on the key"
    );
}

/// Independent references' [`timed`].
fn windowed_time(p: &MachineProfile, vas: &[u64], instructions: Option<f64>) -> f64 {
    timed(p, vas, false, instructions)
}

#[test]
fn the_reorder_window_bounds_independent_references_by_their_instructions() {
    // Random 4 KB references over 4 GB: with fill buffers and walkers that never bind,
    // a window of W instructions overlaps W / i references of i instructions each, so
    // an independent reference costs a dependent one times i / W.
    let mut p = profile("haswell-e5-2690v3");
    p.page_walkers = 1 << 20;
    p.mlp = 1e6;
    p.dram_mlp = None;
    p.issue_cycles = 0.0;
    let vas = random_vas(20_000, 4 * GB, 7);
    let dependent = total_time(&p, &vas, true);
    let unbounded = windowed_time(&p, &vas, Some(20.0));
    p.reorder_window = Some(200.0);
    let ten = windowed_time(&p, &vas, Some(20.0));
    let expected = dependent * 20.0 / 200.0;
    // Each reference's time is rounded to a picosecond: at most 0.5 ps each, twice.
    assert!(
        (ten - expected).abs() <= vas.len() as f64,
        "20 instructions in a window of 200: {ten} ps, dependent / 10: {expected} ps"
    );
    assert!(
        unbounded < 0.01 * ten,
        "no window: {unbounded} ps, against {ten} ps"
    );
    // Twice the instructions, half the overlap.
    let forty = windowed_time(&p, &vas, Some(40.0));
    assert!(
        (forty / ten - 2.0).abs() < 1e-3,
        "40 against 20 instructions: {forty} / {ten} ps"
    );
    // A phase that does not say its instructions is not bounded by the window.
    assert_eq!(windowed_time(&p, &vas, None), unbounded);
    // Dependent references wait for each other whatever the window.
    assert_eq!(total_time(&p, &vas, true), dependent);
}
