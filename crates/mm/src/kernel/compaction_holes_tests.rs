use crate::api::{HugeAdvice, Madvise};
use crate::compaction::{CompactMode, CompactRequest};
use crate::kernel::Kernel;
use crate::phys::frame::{FrameState, OwnerKind};
use crate::phys::pageblock::MigrateType;
use crate::testutil::{kernel, PAGE};
use hugemm_hw::{Nanos, Order, PageSize, Pfn, Pid, VirtAddr};
use std::collections::BTreeMap;

/// A machine of one process's 4 KB pages, built so Linux's scanners and the hole-aware
/// mode part ways: the highest fully used Movable pageblock keeps 8 pages (nearly empty),
/// the six lowest keep 412 (nearly full: holes of 100 frames), the rest stay full, and no
/// order-9 block is free.
struct Holes {
    k: Kernel,
    pid: Pid,
    /// Pages mapped from the start of the VMA.
    pages: u64,
    /// The first frame of the nearly empty pageblock.
    nearly_empty: u64,
    /// The first frames of the nearly full pageblocks.
    nearly_full: Vec<u64>,
}

fn holes() -> Holes {
    let mut k = kernel(64);
    let pid = k.create_process();
    let va = k.mmap(pid, 64 << 20, HugeAdvice::None).unwrap().0;
    let mut pages = 0;
    while k.phys.frames_free() > 400 {
        k.fault(pid, VirtAddr(va + pages * PAGE), true, PageSize::Base);
        pages += 1;
    }
    let mut by_block: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for i in 0..pages {
        let a = va + i * PAGE;
        let pfn = k.translate(pid, VirtAddr(a)).unwrap().pa / PAGE;
        by_block.entry(pfn & !511).or_default().push(a);
    }
    let full: Vec<u64> = by_block
        .iter()
        .filter(|(&b, v)| {
            v.len() == 512 && k.phys.pageblock_type(Pfn(b)) == Some(MigrateType::Movable)
        })
        .map(|(&b, _)| b)
        .collect();
    assert!(full.len() >= 12, "{} full pageblocks", full.len());
    let nearly_empty = *full.last().unwrap();
    let nearly_full = full[..6].to_vec();
    let dontneed = |k: &mut Kernel, a: u64| {
        k.madvise(pid, VirtAddr(a), PAGE, Madvise::DontNeed)
            .unwrap();
    };
    for &a in &by_block[&nearly_empty][8..] {
        dontneed(&mut k, a);
    }
    for b in &nearly_full {
        for &a in &by_block[b][..100] {
            dontneed(&mut k, a);
        }
    }
    assert_eq!(k.phys.free_blocks_at_least(Order(9)), 0);
    Holes {
        k,
        pid,
        pages,
        nearly_empty,
        nearly_full,
    }
}

/// The frame of every page still mapped, by page index (`None`: not mapped).
fn mapped(h: &Holes) -> Vec<Option<u64>> {
    let va = h.k.vmas(h.pid).next().unwrap().start.0;
    (0..h.pages)
        .map(|i| {
            h.k.translate(h.pid, VirtAddr(va + i * PAGE))
                .filter(|t| !t.zero_page)
                .map(|t| t.pa / PAGE)
        })
        .collect()
}

fn moved(before: &[Option<u64>], after: &[Option<u64>]) -> u64 {
    assert_eq!(
        before.iter().map(Option::is_some).collect::<Vec<_>>(),
        after.iter().map(Option::is_some).collect::<Vec<_>>(),
        "compaction mapped or unmapped a page"
    );
    before.iter().zip(after).filter(|(b, a)| b != a).count() as u64
}

/// Whether the pageblock at `start` lies in a free block of order 9 or more.
fn free_huge(k: &Kernel, start: u64) -> bool {
    (9..=k.phys.max_order().0).any(|o| {
        let head = start & !((1u64 << o) - 1);
        k.phys.frame(Pfn(head)).unwrap().is_free_head_of(o)
    })
}

fn direct(k: &mut Kernel) -> crate::compaction::CompactOutcome {
    k.compact(CompactRequest::Direct { order: Order(9) })
}

#[test]
fn the_mode_is_linux_by_default_and_reads_back() {
    let mut k = kernel(64);
    assert_eq!(k.compaction_mode(), CompactMode::Linux);
    k.set_compaction_mode(CompactMode::HoleAware);
    assert_eq!(k.compaction_mode(), CompactMode::HoleAware);
    let names: Vec<_> = CompactMode::NAMED
        .iter()
        .map(|(n, m)| (*n, m.name()))
        .collect();
    assert_eq!(names, [("linux", "linux"), ("hole-aware", "hole-aware")]);
}

/// Issue 19's "fill small holes first": the nearly empty pageblock is emptied into the
/// nearly full ones' holes (8 migrations), where Linux's migrate scanner empties the
/// lowest Movable pageblock it can (hundreds).
#[test]
fn a_nearly_empty_pageblock_is_emptied_into_small_holes() {
    let mut linux = holes();
    let out = direct(&mut linux.k);
    assert!(out.success, "{out:?}");
    assert!(out.migrated >= 400, "Linux moved {}", out.migrated);

    let mut h = holes();
    h.k.set_compaction_mode(CompactMode::HoleAware);
    let before = mapped(&h);
    h.k.take_tlb_flushes();
    let out = direct(&mut h.k);
    assert!(out.success && out.failed == 0, "{out:?}");
    assert_eq!(out.migrated, 8);
    assert!(free_huge(&h.k, h.nearly_empty));
    assert_eq!(h.k.phys.free_blocks_at_least(Order(9)), 1);
    // The pages went into the holes of the pageblock page tables pin (which can never
    // be emptied), not into one that could.
    let after = mapped(&h);
    assert_eq!(moved(&before, &after), 8);
    let c = &h.k.phys.counters;
    for (b, a) in before.iter().zip(&after).filter(|(b, a)| b != a) {
        assert_eq!(b.unwrap() & !511, h.nearly_empty);
        assert!(c.pinned(c.index_of(a.unwrap())) > 0, "moved to {a:?}");
    }
    let scan = Nanos(5 * (out.migrate_scanned + out.free_scanned));
    assert_eq!(out.cost, scan + Nanos(8 * (1000 + 10 + 300)));
    assert_eq!(h.k.take_tlb_flushes().len(), 8);
    let s = h.k.stats();
    assert_eq!((s.compact_stall, s.compact_success), (1, 1));
    assert_eq!(s.pgmigrate_success, 8);
    h.k.check_invariants().unwrap();
}

/// With per-CPU lists, the 8 frames freed by emptying the pageblock go to a CPU's list;
/// the drain after the unit lets them merge, so the run stops after 8 migrations.
#[test]
fn per_cpu_lists_are_drained_after_each_emptied_pageblock() {
    let mut h = holes();
    h.k.enable_per_cpu_lists(2);
    h.k.set_compaction_mode(CompactMode::HoleAware);
    let out = direct(&mut h.k);
    assert!(out.success, "{out:?}");
    assert_eq!(out.migrated, 8);
    assert!(free_huge(&h.k, h.nearly_empty));
    assert_eq!(h.k.phys.frames_on_per_cpu_lists(), 0);
    h.k.check_invariants().unwrap();
}

#[test]
fn a_kernel_page_keeps_its_pageblock_out_of_the_sources() {
    let mut h = holes();
    h.k.set_compaction_mode(CompactMode::HoleAware);
    let b = h.nearly_empty;
    let hole = (b..b + 512)
        .find(|&p| {
            matches!(
                h.k.phys.frames.at(p as u32).state(),
                FrameState::FreeHead { .. }
            )
        })
        .unwrap();
    h.k.phys
        .alloc_frame_in(Pfn(hole), Pfn(hole), OwnerKind::KernelUnmovable)
        .unwrap();
    let before = mapped(&h);
    let out = direct(&mut h.k);
    assert!(out.success, "{out:?}");
    assert!(!free_huge(&h.k, b), "the kernel page pins it");
    assert_eq!(
        h.k.phys.frame(Pfn(hole)).unwrap().owner(),
        Some(OwnerKind::KernelUnmovable)
    );
    // The next fewest: one of the nearly full pageblocks (412 pages).
    let freed = h.nearly_full.iter().filter(|&&s| free_huge(&h.k, s));
    assert_eq!(freed.count(), 1);
    assert_eq!(out.migrated, 412);
    assert_eq!(moved(&before, &mapped(&h)), 412);
    h.k.check_invariants().unwrap();
}

/// The layout's free frames outside the pinned pageblock (1104) make two free
/// pageblocks at most. Hole-aware compaction makes both, moving the nearly empty
/// pageblock's 8 pages and one nearly full pageblock's 412, then stops: the 412 pages of
/// the next would not fit in the holes left. Linux's scanners move more (the pinned
/// pageblock's movable pages too, which frees nothing) for fewer blocks.
#[test]
fn a_full_run_empties_what_it_can_and_keeps_every_page() {
    let mut got = Vec::new();
    for mode in [CompactMode::Linux, CompactMode::HoleAware] {
        let mut h = holes();
        h.k.set_compaction_mode(mode);
        let before = mapped(&h);
        let out = h.k.compact(CompactRequest::Full);
        assert!(out.success && out.failed == 0, "{mode:?}: {out:?}");
        assert_eq!(moved(&before, &mapped(&h)), out.migrated, "{mode:?}");
        assert_eq!(
            h.k.stats().compact_stall,
            0,
            "compact_memory is not a stall"
        );
        h.k.check_invariants().unwrap();
        got.push((out.migrated, h.k.phys.free_blocks_at_least(Order(9))));
    }
    let [(linux, linux_blocks), (holes, holes_blocks)] = got[..] else {
        unreachable!()
    };
    assert_eq!((holes, holes_blocks), (8 + 412, 2));
    assert!(
        linux_blocks >= 1 && linux > holes,
        "Linux: {linux} pages, {linux_blocks} blocks"
    );
}

#[test]
fn proactive_hole_aware_compaction_runs_down_to_the_low_mark() {
    let mut h = holes();
    h.k.set_compaction_mode(CompactMode::HoleAware);
    h.k.set_compaction_proactiveness(50).unwrap();
    assert!(h.k.fragmentation_score() > 60);
    let out = h.k.compact(CompactRequest::Proactive);
    assert!(out.success && out.migrated > 0, "{out:?}");
    assert!(h.k.fragmentation_score() <= 50);
    h.k.check_invariants().unwrap();
}

#[test]
fn the_linux_scanners_cached_positions_are_left_alone() {
    let mut h = holes();
    let before = h.k.compact.position(0);
    h.k.set_compaction_mode(CompactMode::HoleAware);
    direct(&mut h.k);
    assert_eq!(h.k.compact.position(0), before);
}

/// Both H-Policy knobs on through a churn of faults, unmaps, kernel pages and every
/// kind of compaction: every invariant holds after each step.
#[test]
fn an_h_policy_kernel_keeps_every_invariant() {
    let mut h = holes();
    h.k.set_preserve_huge_blocks(true);
    h.k.set_compaction_mode(CompactMode::HoleAware);
    let va = h.k.vmas(h.pid).next().unwrap().start.0;
    for round in 0..6u64 {
        for i in (round..h.pages).step_by(7) {
            h.k.madvise(h.pid, VirtAddr(va + i * PAGE), PAGE, Madvise::DontNeed)
                .unwrap();
        }
        h.k.kmalloc(crate::KmemKind::Unmovable, Order(0)).unwrap();
        let req = match round % 3 {
            0 => CompactRequest::Direct { order: Order(9) },
            1 => CompactRequest::Full,
            _ => CompactRequest::Proactive,
        };
        h.k.compact(req);
        h.k.check_invariants().unwrap();
        for i in (round..h.pages).step_by(11) {
            h.k.fault(h.pid, VirtAddr(va + i * PAGE), true, PageSize::Base);
        }
        h.k.check_invariants().unwrap();
    }
}

#[test]
fn reserved_frames_stay_at_their_offsets() {
    let mut k = kernel(64);
    let owner = k.create_process();
    let region = k.mmap(owner, 2 << 20, HugeAdvice::None).unwrap().0;
    let reserve = crate::api::FaultRequest::new(PageSize::Base).reserve(true);
    for i in 0..8 {
        k.fault_with(owner, VirtAddr(region + i * PAGE), true, reserve);
    }
    let base = k.reservation(owner, VirtAddr(region)).unwrap().base.0;
    // Fragment the rest: anonymous pages between page-cache pages, then the file goes.
    let pid = k.create_process();
    let va = k.mmap(pid, 32 << 20, HugeAdvice::None).unwrap().0;
    let mut i = 0;
    while k.phys.frames_free() > 400 {
        k.file_read(crate::FileId(1), i, 1);
        k.fault(pid, VirtAddr(va + i * PAGE), true, PageSize::Base);
        i += 1;
    }
    k.file_delete(crate::FileId(1));
    k.set_compaction_mode(CompactMode::HoleAware);
    let out = k.compact(CompactRequest::Full);
    assert!(out.success && out.migrated > 0, "{out:?}");
    assert!(k.phys.free_blocks_at_least(Order(9)) > 0);
    for i in 0..8 {
        let pa = k.translate(owner, VirtAddr(region + i * PAGE)).unwrap().pa;
        assert_eq!(pa / PAGE, base + i);
    }
    assert_eq!(k.reservation(owner, VirtAddr(region)).unwrap().populated, 8);
    k.check_invariants().unwrap();
}
