//! smaps and maps of the captured process: real values read from the files.

mod common;

use common::{data, region, text, BASE, REGION};
use hugemm_agent::observe::smaps::{parse_maps, Pathname, Smaps};
use hugemm_agent::{Bytes, Geometry, VirtAddr};

fn smaps() -> Smaps {
    Smaps::read_path(&data("smaps")).expect("captured smaps parses")
}

#[test]
fn every_vma_of_the_captured_process_is_read() {
    let s = smaps();
    assert_eq!(s.vmas.len(), 30);
    let first = &s.vmas[0].mapping;
    assert_eq!(
        (first.start, first.end),
        (VirtAddr(0x55f1_9587_b000), VirtAddr(0x55f1_9587_c000))
    );
    assert_eq!(
        first.pathname,
        Pathname::File {
            path: "/tmp/hugemm-capture".into(),
            deleted: false
        }
    );
    assert_eq!(
        (first.device.major, first.device.minor, first.inode),
        (0xfe, 0, 9_979_097)
    );
    let last = &s.vmas[29].mapping;
    assert_eq!(last.pathname, Pathname::Special("[vsyscall]".into()));
    assert!(last.perms.exec && !last.perms.read && !last.perms.write);
}

#[test]
fn the_advised_vma_has_hg_and_five_huge_pages() {
    let s = smaps();
    let hg = s.vma_at(region(0)).unwrap();
    assert_eq!((hg.mapping.start, hg.mapping.end), (region(0), region(16)));
    assert!(hg.flags.hugepage() && !hg.flags.nohugepage());
    assert_eq!(hg.rss, Bytes::from_kib(10240));
    assert_eq!(hg.anonymous, Bytes::from_kib(10240));
    assert_eq!(hg.anon_huge_pages, Bytes(5 * REGION));
    assert_eq!(hg.thp_eligible, Some(true));
    assert_eq!(
        hg.flags.codes().collect::<Vec<_>>(),
        ["rd", "wr", "mr", "mw", "me", "ac", "hg"]
    );
}

#[test]
fn the_nohugepage_vma_has_nh_and_no_huge_pages() {
    let s = smaps();
    let nh = s.vma_at(region(16)).unwrap();
    assert_eq!((nh.mapping.start, nh.mapping.end), (region(16), region(20)));
    assert!(nh.flags.nohugepage() && !nh.flags.hugepage());
    assert_eq!(nh.rss, Bytes::from_kib(3072));
    assert_eq!(nh.anon_huge_pages, Bytes(0));
    assert!(!nh.is_collapse_candidate());
}

#[test]
fn a_collapsed_region_counts_in_an_unadvised_vma() {
    let s = smaps();
    let plain = s.vma_at(region(20)).unwrap();
    assert_eq!(
        (plain.mapping.start, plain.mapping.end),
        (region(20), region(24))
    );
    // 128 + 512 + 512 base pages; r23's zero-page reads are not resident memory.
    assert_eq!(plain.rss, Bytes::from_kib(4608));
    assert_eq!(plain.anon_huge_pages, Bytes(REGION));
    assert_eq!(plain.thp_eligible, Some(false), "THP mode is madvise");
    assert!(plain.is_collapse_candidate());
}

#[test]
fn special_and_deleted_pathnames_are_told_apart() {
    let s = smaps();
    let names: Vec<_> = s.vmas.iter().map(|v| v.mapping.pathname.clone()).collect();
    assert!(names.contains(&Pathname::Heap));
    assert!(names.contains(&Pathname::Stack));
    assert!(names.contains(&Pathname::Special("[vdso]".into())));
    assert!(names.contains(&Pathname::Special("[vvar_vclock]".into())));
    let deleted = s.vma_at(VirtAddr(0x7f62_6328_e000)).unwrap();
    assert_eq!(
        deleted.mapping.pathname,
        Pathname::File {
            path: "/tmp/hugemm capture file".into(),
            deleted: true
        }
    );
    assert_eq!(deleted.mapping.inode, 9_979_222);
}

#[test]
fn eligible_ranges_are_the_aligned_writable_private_anonymous_vmas_without_nh() {
    let s = smaps();
    let ranges: Vec<_> = s
        .eligible_ranges(Geometry::X86_64)
        .map(|e| (e.range.start(), e.range.end()))
        .collect();
    // Not: the heap and libc's anonymous VMAs (no whole 2 MB region), r16-r19 (nh),
    // r24-r25 (read-only), files.
    assert_eq!(
        ranges,
        [
            (region(0), region(16)),
            (region(20), region(24)),
            (region(26), region(32))
        ]
    );
    let heap = s
        .vmas
        .iter()
        .find(|v| v.mapping.pathname == Pathname::Heap)
        .unwrap();
    assert!(heap.is_collapse_candidate() && heap.huge_range(&Geometry::X86_64).is_none());
}

#[test]
fn maps_lines_are_the_smaps_headers() {
    let maps = parse_maps(&data("maps"), &text("maps")).unwrap();
    let from_smaps: Vec<_> = smaps().vmas.into_iter().map(|v| v.mapping).collect();
    assert_eq!(maps, from_smaps);
    assert_eq!(
        maps.iter()
            .filter(|m| m.start.0 >= BASE && m.end.0 <= BASE + 32 * REGION)
            .count(),
        5
    );
}
