use super::*;
use crate::api::{HugeAdvice, WatermarkCheck};
use crate::pressure::pagecache::FileId;
use crate::testutil::{kernel, PAGE};
use hugemm_hw::{PageSize, Pid, VirtAddr};

/// A machine whose memory alternates anonymous and page-cache pages until about 400
/// frames are free, then the file is deleted: every other frame is free and no order-1
/// block is. Returns the kernel, the process and its mapped length.
fn fragmented(mb: u64) -> (Kernel, Pid, u64) {
    let mut k = kernel(mb);
    let pid = k.create_process();
    let len = (mb << 20) / 2;
    let va = k.mmap(pid, len, HugeAdvice::None).unwrap();
    let mut i = 0;
    while k.phys.frames_free() > 400 {
        k.file_read(FileId(1), i, 1);
        k.fault(pid, VirtAddr(va.0 + i * PAGE), true, PageSize::Base);
        i += 1;
    }
    k.file_delete(FileId(1));
    assert_eq!(k.phys.free_blocks_at_least(Order(9)), 0);
    (k, pid, i * PAGE)
}

fn mapped(k: &Kernel, pid: Pid, len: u64) -> Vec<u64> {
    let va = k.vmas(pid).next().unwrap().start.0;
    (0..len / PAGE)
        .map(|i| {
            let t = k.translate(pid, VirtAddr(va + i * PAGE)).unwrap();
            assert!(!t.zero_page);
            t.pa / PAGE
        })
        .collect()
}

#[test]
fn full_compaction_regains_huge_blocks_and_keeps_every_page() {
    let (mut k, pid, len) = fragmented(64);
    let before = mapped(&k, pid, len);
    assert!(k.fragmentation_score() > 90);
    let out = k.compact(CompactRequest::Full);
    assert!(out.success && out.migrated > 3000 && out.failed == 0);
    let free = k.phys.frames_free();
    // Only the pageblocks where the scanners met stay partly used.
    assert!(k.phys.free_blocks_at_least(Order(9)) * 512 >= free - 3 * 512);
    assert!(k.fragmentation_score() < 20);
    let after = mapped(&k, pid, len);
    assert_eq!(before.len(), after.len());
    let moved = before.iter().zip(&after).filter(|(b, a)| b != a).count();
    assert_eq!(moved as u64, out.migrated);
    assert_eq!(k.take_tlb_flushes().len() as u64, out.migrated);
    let scan = Nanos(5 * (out.migrate_scanned + out.free_scanned));
    assert_eq!(out.cost, scan + Nanos(out.migrated * (1000 + 10 + 300)));
    assert_eq!(k.stats().compact_stall, 0, "compact_memory is not a stall");
    k.check_invariants().unwrap();
}

#[test]
fn direct_compaction_stops_once_one_huge_block_is_free() {
    let (mut k, _, _) = fragmented(64);
    let out = k.compact(CompactRequest::Direct { order: Order(9) });
    assert!(out.success);
    assert_eq!(k.phys.free_blocks_at_least(Order(9)), 1);
    assert!(
        out.migrated <= 512,
        "one pageblock's worth: {}",
        out.migrated
    );
    assert_eq!((k.stats().compact_stall, k.stats().compact_success), (1, 1));
    assert!(
        k.compact.position(0).is_some_and(|p| p.migrate_pfn > 0),
        "the scanner position is cached"
    );
    // The next direct run resumes above the first one's pageblocks.
    let first_scan = out.migrate_scanned;
    let mut taken = 0;
    while k.phys.has_free_block(Order(9)) {
        let req = crate::phys::buddy::AllocRequest::new(Order(9)).owner(OwnerKind::KernelUnmovable);
        k.phys.alloc(&req).unwrap();
        taken += 1;
    }
    assert_eq!(taken, 1);
    let again = k.compact(CompactRequest::Direct { order: Order(9) });
    assert!(again.success && again.migrate_scanned <= first_scan + 512);
    k.check_invariants().unwrap();
}

#[test]
fn linux_4_1s_direct_compaction_goes_on_until_the_orders_watermark_is_met() {
    // Free memory is single frames, so 4.1's check for order 9 at `low` fails. A run
    // ends when it passes (`compact_finished`), not at the first free order-9 block.
    let (mut k, _, _) = fragmented(64);
    k.set_watermark_check(WatermarkCheck::Linux4_1);
    let low = k.watermarks().low;
    assert!(!k.zone_watermark_ok_4_1(Order(9), low));
    let out = k.compact(CompactRequest::Direct { order: Order(9) });
    assert!(out.success && out.ran && !out.complete);
    assert!(k.zone_watermark_ok_4_1(Order(9), low));
    // Met already: the next request does not run (`COMPACT_PARTIAL`).
    let again = k.compact(CompactRequest::Direct { order: Order(9) });
    assert!(again.success && !again.ran);
    assert_eq!((k.stats().compact_stall, k.stats().compact_success), (1, 1));
    k.check_invariants().unwrap();
}

#[test]
fn direct_compaction_drains_the_cpus_lists_after_each_block_it_migrated_from() {
    // Per-CPU lists large enough to hold every frame migration frees: without the drain
    // after each pageblock the evacuated pageblocks' frames would stay on them, never
    // merge, and the run would go on to the scanners' meeting.
    let (mut k, _, _) = fragmented(64);
    k.phys.enable_per_cpu_lists(crate::pcp::PcpConfig {
        cpus: 1,
        batch: 31,
        high: 1 << 20,
        max_order: 0,
        drain: crate::pcp::PcpDrain::Linux41,
    });
    let out = k.compact(CompactRequest::Direct { order: Order(9) });
    assert!(out.success);
    assert!(
        out.migrated <= 512,
        "one pageblock's worth: {}",
        out.migrated
    );
    assert!(k.phys.has_free_block(Order(9)));
    k.check_invariants().unwrap();
    // A whole-zone run (`cc->order == -1`) does not drain as it goes: what it frees stays
    // on the list until something drains it.
    let out = k.compact(CompactRequest::Full);
    assert!(out.migrated > 512);
    assert!(k.phys.frames_on_per_cpu_lists() >= out.migrated);
    k.check_invariants().unwrap();
}

#[test]
fn direct_compaction_is_skipped_when_the_order_is_free_or_memory_short() {
    let mut k = kernel(64);
    let out = k.compact(CompactRequest::Direct { order: Order(9) });
    assert!(out.success && out.migrate_scanned == 0);
    assert_eq!(k.stats().compact_stall, 0);
    let bad = k.compact(CompactRequest::Direct { order: Order(20) });
    assert!(!bad.success);
    let (mut k, _, _) = fragmented(64);
    while k.phys.frames_free() >= 1000 {
        k.kmalloc(crate::KmemKind::Unmovable, Order(0)).unwrap();
    }
    let out = k.compact(CompactRequest::Direct { order: Order(9) });
    assert!(
        !out.success && out.migrate_scanned == 0,
        "below low + compact_gap"
    );
}

#[test]
fn proactive_compaction_runs_down_to_the_low_mark() {
    let (mut k, _, _) = fragmented(64);
    assert!(k.set_compaction_proactiveness(101).is_err());
    k.set_compaction_proactiveness(0).unwrap();
    assert_eq!(k.compact(CompactRequest::Proactive).migrated, 0);
    k.set_compaction_proactiveness(50).unwrap();
    assert_eq!(k.proactive_wmarks(), (50, 60));
    let out = k.compact(CompactRequest::Proactive);
    assert!(out.success && out.migrated > 0);
    assert!(k.fragmentation_score() <= 50);
    assert!(
        k.fragmentation_score() > 10,
        "stopped early, not a full run"
    );
    let again = k.compact(CompactRequest::Proactive);
    assert_eq!(again.migrated, 0, "below the high mark: nothing to do");
    k.check_invariants().unwrap();
}

#[test]
fn a_kernel_page_keeps_its_pageblock_from_becoming_free() {
    let (mut k, _, _) = fragmented(64);
    // Put one unmovable frame in a free frame of the first Movable pageblock with pages.
    let block = (0..32u64)
        .map(|b| b * 512)
        .find(|&s| {
            k.phys.pageblock_type(Pfn(s)) == Some(MigrateType::Movable)
                && k.movable_frames_in(s, s + 512) > 0
        })
        .unwrap();
    let tainted = k.frag_metrics().tainted_pageblocks;
    let hole = (block..block + 512)
        .find(|&p| k.phys.frames.at(p as u32).is_free_head_of(0))
        .unwrap();
    k.phys
        .alloc_frame_in(Pfn(hole), Pfn(hole), OwnerKind::KernelUnmovable)
        .unwrap();
    let ev = k.evacuate_pageblock(Pfn(block)).unwrap();
    assert!(ev.migrated > 0 && ev.failed == 0);
    let out = k.compact(CompactRequest::Full);
    assert!(out.success);
    assert!(
        !k.in_free_block_of(block, 9),
        "the kernel page pins the pageblock"
    );
    assert_eq!(k.frag_metrics().tainted_pageblocks, tainted + 1);
    k.check_invariants().unwrap();
}

#[test]
fn the_fragmentation_index_tells_lack_of_memory_from_fragmentation() {
    let k = kernel(64);
    assert_eq!(k.fragmentation_index(Order(9)), -1000);
    let (k, _, _) = fragmented(64);
    assert!(k.fragmentation_index(Order(9)) > 900);
}
