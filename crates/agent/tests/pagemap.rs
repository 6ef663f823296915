//! Pagemap excerpts and kpageflags frames of the captured process: population per region,
//! and whether a huge page maps it, with and without the privileges that show frames.

mod common;

use common::{data, region, HUGE_FRAMES, REGION, ZERO_PFN};
use hugemm_agent::observe::pagemap::{
    Basis, HugeMapping, KPageFlags, PageFlags, Pagemap, RegionSummary, Summariser,
};
use hugemm_agent::observe::smaps::Smaps;
use hugemm_agent::{Geometry, HugeRange, ObserveError, Pfn};
use std::fs::{self, File};
use std::os::unix::fs::FileExt;
use tempfile::TempDir;

const G: Geometry = Geometry::X86_64;

fn excerpt_r3() -> Pagemap {
    Pagemap::open_excerpt(&data("pagemap-r3-r5.bin"), region(3), &G).unwrap()
}

fn excerpt_r16() -> Pagemap {
    Pagemap::open_excerpt(&data("pagemap-r16-r23.bin"), region(16), &G).unwrap()
}

fn range(first: u64, end: u64) -> HugeRange {
    HugeRange::new(region(first), region(end), &G).unwrap()
}

/// A sparse file laid out as /proc/kpageflags holding the captured frames' flags.
fn captured_kpageflags(dir: &TempDir) -> KPageFlags {
    let path = dir.path().join("kpageflags");
    let file = File::create(&path).unwrap();
    for (_, pfn) in HUGE_FRAMES {
        let flags = fs::read(data(&format!("kpageflags-{pfn:x}.bin"))).unwrap();
        file.write_all_at(&flags, pfn * 8).unwrap();
    }
    KPageFlags::open_path(&path).unwrap()
}

/// A copy of an excerpt as an unprivileged reader sees it: frame numbers zeroed.
fn without_frames(dir: &TempDir, name: &str, first_region: u64) -> Pagemap {
    let bytes = fs::read(data(name)).unwrap();
    let hidden: Vec<u8> = bytes
        .chunks_exact(8)
        .flat_map(|c| (u64::from_le_bytes(c.try_into().unwrap()) & !((1 << 55) - 1)).to_le_bytes())
        .collect();
    let path = dir.path().join(name);
    fs::write(&path, hidden).unwrap();
    Pagemap::open_excerpt(&path, region(first_region), &G).unwrap()
}

fn present(summaries: &[RegionSummary]) -> Vec<u32> {
    summaries.iter().map(|s| s.present).collect()
}

fn huge(summaries: &[RegionSummary]) -> Vec<HugeMapping> {
    summaries.iter().map(|s| s.huge).collect()
}

#[test]
fn entries_carry_the_bits_the_kernel_set() {
    let pm = excerpt_r16();
    let e = pm.entries(region(16), 2, &G).unwrap();
    assert!(e[0].present() && e[0].exclusive() && !e[0].swapped() && !e[0].file_or_shared());
    assert!(
        !e[0].soft_dirty(),
        "no CONFIG_MEM_SOFT_DIRTY on the capturing host"
    );
    assert_eq!(e[0].pfn(), Some(Pfn(0x174513)));
    let zero = pm.entries(region(23), 1, &G).unwrap()[0];
    assert!(zero.present() && !zero.exclusive());
    assert_eq!(zero.pfn(), Some(Pfn(ZERO_PFN)));
}

#[test]
fn population_counts_the_touched_base_pages_of_each_region() {
    let s = Summariser::new(&excerpt_r16())
        .range(&range(16, 24))
        .unwrap();
    // r16 written, r17 every 2nd page, r18-r19 untouched, r20 every 4th page, r21 written,
    // r22 written and collapsed, r23 read only (the zero page).
    assert_eq!(present(&s), [512, 256, 0, 0, 128, 512, 512, 512]);
    assert_eq!(
        s.iter().map(|r| r.exclusive).collect::<Vec<_>>(),
        [512, 256, 0, 0, 128, 512, 512, 0]
    );
    assert!(s.iter().all(|r| r.swapped == 0));
    assert_eq!(s[5].start, region(21));
}

#[test]
fn kpageflags_tells_huge_faults_from_an_empty_region() {
    let dir = TempDir::new().unwrap();
    let kpf = captured_kpageflags(&dir);
    let s = Summariser::new(&excerpt_r3())
        .kpageflags(&kpf)
        .range(&range(3, 6))
        .unwrap();
    assert_eq!(
        present(&s),
        [512, 512, 0],
        "one byte written in r4 faulted a whole huge page"
    );
    assert_eq!(
        huge(&s),
        [
            HugeMapping::Yes(Basis::PageFlags),
            HugeMapping::Yes(Basis::PageFlags),
            HugeMapping::No(Basis::Population)
        ]
    );
}

#[test]
fn kpageflags_of_a_huge_page_are_a_thp_head_then_thp_tails() {
    let dir = TempDir::new().unwrap();
    let flags = captured_kpageflags(&dir).read(Pfn(0x164400), 512).unwrap();
    assert!(flags[0].thp() && flags[0].compound_head() && !flags[0].compound_tail());
    assert!(flags[1..]
        .iter()
        .all(|f| f.thp() && f.compound_tail() && !f.compound_head()));
    assert!(flags.iter().all(|f| !f.hugetlb() && f.has(PageFlags::ANON)));
}

#[test]
fn with_frames_only_a_collapsed_region_is_huge() {
    let dir = TempDir::new().unwrap();
    let kpf = captured_kpageflags(&dir);
    let s = Summariser::new(&excerpt_r16())
        .kpageflags(&kpf)
        .range(&range(16, 24))
        .unwrap();
    use HugeMapping::*;
    assert_eq!(
        huge(&s),
        [
            No(Basis::Frames),
            No(Basis::Population),
            No(Basis::Population),
            No(Basis::Population),
            No(Basis::Population),
            No(Basis::Frames),
            Yes(Basis::PageFlags),
            No(Basis::Frames), // 512 entries, one zero page
        ]
    );
}

#[test]
fn without_kpageflags_an_aligned_run_is_settled_by_the_vma_total() {
    let smaps = Smaps::read_path(&data("smaps")).unwrap();
    let eligible = smaps
        .eligible_ranges(G)
        .find(|e| e.range.start() == region(20))
        .unwrap();
    let s = Summariser::new(&excerpt_r16()).eligible(&eligible).unwrap();
    assert_eq!(
        huge(&s),
        [
            HugeMapping::No(Basis::Population),
            HugeMapping::No(Basis::Frames),
            HugeMapping::Yes(Basis::VmaTotal),
            HugeMapping::No(Basis::Frames),
        ]
    );
}

#[test]
fn unprivileged_the_full_regions_of_a_partly_huge_vma_stay_unknown() {
    let dir = TempDir::new().unwrap();
    let pm = without_frames(&dir, "pagemap-r16-r23.bin", 16);
    let smaps = Smaps::read_path(&data("smaps")).unwrap();
    let eligible = smaps
        .eligible_ranges(G)
        .find(|e| e.range.start() == region(20))
        .unwrap();
    let s = Summariser::new(&pm).eligible(&eligible).unwrap();
    assert_eq!(
        present(&s),
        [128, 512, 512, 512],
        "population needs no privilege"
    );
    // AnonHugePages says one of r21-r23 is huge, not which.
    use HugeMapping::*;
    assert_eq!(huge(&s), [No(Basis::Population), Unknown, Unknown, Unknown]);
}

#[test]
fn unprivileged_a_vma_without_huge_pages_settles_every_region() {
    let dir = TempDir::new().unwrap();
    let pm = without_frames(&dir, "pagemap-r16-r23.bin", 16);
    let mut smaps = Smaps::read_path(&data("smaps")).unwrap();
    // The nh VMA (AnonHugePages 0) as if it were eligible: its full region r16 is settled.
    let nh = smaps
        .vmas
        .iter_mut()
        .find(|v| v.mapping.start == region(16))
        .unwrap();
    nh.flags = Default::default();
    let eligible = smaps
        .eligible_ranges(G)
        .find(|e| e.range.start() == region(16))
        .unwrap();
    let s = Summariser::new(&pm).eligible(&eligible).unwrap();
    assert_eq!(s[0].huge, HugeMapping::No(Basis::VmaTotal));
    assert_eq!(s[1].huge, HugeMapping::No(Basis::Population));
}

#[test]
fn a_range_outside_an_excerpt_is_an_error_naming_the_file() {
    let err = Summariser::new(&excerpt_r3())
        .range(&range(5, 7))
        .unwrap_err();
    assert!(matches!(err, ObserveError::Missing { .. }), "{err}");
    assert!(err.to_string().contains("pagemap-r3-r5.bin"), "{err}");
    let before = Summariser::new(&excerpt_r3())
        .range(&range(2, 3))
        .unwrap_err();
    assert!(matches!(before, ObserveError::Missing { .. }), "{before}");
}

#[test]
fn regions_are_read_in_chunks_without_losing_any() {
    // 150 regions of holes in this process's own pagemap span three chunks of 64.
    let pm = Pagemap::open_self().unwrap();
    let r = HugeRange::new(
        hugemm_agent::VirtAddr(1 << 40),
        hugemm_agent::VirtAddr((1 << 40) + 150 * REGION),
        &G,
    )
    .unwrap();
    let s = Summariser::new(&pm).range(&r).unwrap();
    assert_eq!(s.len(), 150);
    assert_eq!(s[149].start.0, (1 << 40) + 149 * REGION);
    assert!(s.iter().all(|r| r.present == 0));
}
