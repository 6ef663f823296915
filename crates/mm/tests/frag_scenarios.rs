//! Scenario tests of fragmentation, compaction and kernel-page placement, each a claim of
//! APSys'16 ("A Case for Protecting Huge Pages from the Kernel") or of Linux's reclaim
//! the model reproduces.

mod common;

use common::{machine, PAGE};
use hugemm_hw::{Order, PageSize, Pid, VirtAddr};
use hugemm_mm::{CompactRequest, FileId, HugeAdvice, Kernel, KmemKind, OwnerKind};

/// Alternate page-cache and anonymous pages until about `leave` frames are free, then
/// delete the file: every other frame of the used memory is free.
fn interleave_then_delete(k: &mut Kernel, leave: u64) -> Pid {
    let pid = k.create_process();
    let bytes = k.phys().frames_total() * PAGE;
    let va = k.mmap(pid, bytes, HugeAdvice::None).unwrap();
    let mut i = 0;
    while k.phys().frames_free() > leave {
        k.file_read(FileId(7), i, 1);
        k.fault(pid, VirtAddr(va.0 + i * PAGE), true, PageSize::Base);
        i += 1;
    }
    k.file_delete(FileId(7));
    pid
}

#[test]
fn interleaved_page_cache_and_anon_pages_fragment_memory_and_full_compaction_repairs_it() {
    let mut k = machine(128);
    interleave_then_delete(&mut k, 600);
    let before = k.frag_metrics();
    assert_eq!(k.phys().free_blocks_at_least(Order(9)), 0);
    assert!(before.fmfi > 0.95, "fmfi {}", before.fmfi);
    let out = k.compact(CompactRequest::Full);
    assert!(out.success && out.failed == 0);
    let after = k.frag_metrics();
    assert!(after.fmfi < 0.2, "fmfi {}", after.fmfi);
    assert!(k.phys().free_blocks_at_least(Order(9)) >= before.free_frames / 512 - 3);
    assert_eq!(k.stats().pgmigrate_success, out.migrated);
    k.check_invariants().unwrap();
}

#[test]
fn kernel_pages_keep_their_pageblocks_tainted_through_compaction() {
    let mut k = machine(64);
    interleave_then_delete(&mut k, 400);
    for _ in 0..200 {
        k.kmalloc(KmemKind::Unmovable, Order(0)).unwrap();
    }
    let before = k.frag_metrics();
    k.compact(CompactRequest::Full);
    let after = k.frag_metrics();
    assert!(after.tainted_pageblocks >= before.tainted_pageblocks);
    // No pageblock holding a kernel frame became a free huge block.
    let blocks = k.phys().pageblock_count();
    let with_kernel = (0..blocks)
        .filter(|b| {
            (b * 512..(b + 1) * 512).any(|p| {
                k.phys()
                    .frame(hugemm_hw::Pfn(p))
                    .and_then(|f| f.owner())
                    .is_some_and(|o| !o.is_movable())
            })
        })
        .count() as u64;
    assert!(with_kernel > 0);
    assert!(k.phys().free_blocks_at_least(Order(9)) <= blocks - with_kernel);
    let owners: Vec<_> = (0..k.phys().frames_total())
        .filter_map(|p| k.phys().frame(hugemm_hw::Pfn(p)).and_then(|f| f.owner()))
        .filter(|o| *o == OwnerKind::KernelUnmovable)
        .collect();
    assert_eq!(owners.len(), 200, "kernel pages never move or vanish");
    k.check_invariants().unwrap();
}

#[test]
fn reclaim_keeps_free_memory_above_min_while_reading_a_file_larger_than_memory() {
    let mut k = machine(64);
    let total = k.phys().frames_total();
    let min = k.watermarks().min;
    let mut pages = 0;
    while pages < 3 * total {
        let out = k.file_read(FileId(1), pages, 64);
        assert!(!out.oom);
        assert!(k.phys().frames_free() >= min);
        pages += 64;
    }
    assert!(k.stats().pgsteal_kswapd > 2 * total - 1000);
    assert_eq!(k.stats().pgsteal_direct, 0, "kswapd kept up");
    assert!(k.page_cache_pages() < total);
    assert!(k.stats().kswapd_time > hugemm_hw::Nanos::ZERO);
    k.check_invariants().unwrap();
}

#[test]
fn anonymous_memory_takes_frames_back_from_the_page_cache() {
    let mut k = machine(64);
    let total = k.phys().frames_total();
    k.file_read(FileId(1), 0, total);
    let pid = k.create_process();
    let len = (total - 1000) * PAGE;
    let va = k.mmap(pid, len, HugeAdvice::None).unwrap();
    for off in (0..len).step_by(PAGE as usize) {
        assert!(!k.fault(pid, VirtAddr(va.0 + off), true, PageSize::Base).oom);
    }
    assert_eq!(k.rss_bytes(pid), len);
    k.check_invariants().unwrap();
}
