//! Unit tests of superpage reservations: reserving at the first fault, populating,
//! promotion in place, breaking under pressure and on mapping changes.

use crate::api::{FaultKind, FaultRequest, HugeAdvice, Madvise, RegionState};
use crate::kernel::Kernel;
use crate::phys::buddy::AllocRequest;
use crate::phys::frame::OwnerKind;
use crate::pressure::kmem::KmemKind;
use crate::testutil::{kernel, HUGE, PAGE};
use hugemm_hw::{Nanos, Order, PageSize, Pfn, Pid, VirtAddr};

fn reserving() -> FaultRequest {
    FaultRequest::new(PageSize::Base).reserve(true)
}

/// A process with one 2 MB-aligned VMA of `len` bytes.
fn process(k: &mut Kernel, len: u64) -> (Pid, VirtAddr) {
    let pid = k.create_process();
    let va = k.mmap(pid, len, HugeAdvice::None).unwrap();
    (pid, va)
}

/// Write-fault pages `pages` of the region at `va`, asking to reserve.
fn touch(k: &mut Kernel, pid: Pid, va: VirtAddr, pages: impl Iterator<Item = u64>) {
    for i in pages {
        let out = k.fault_with(pid, VirtAddr(va.0 + i * PAGE), true, reserving());
        assert!(!out.oom);
    }
}

fn pfn_of(k: &Kernel, pid: Pid, va: u64) -> Pfn {
    Pfn(k.translate(pid, VirtAddr(va)).unwrap().pa / PAGE)
}

#[test]
fn the_first_fault_reserves_a_block_and_maps_the_frame_at_its_offset() {
    let mut k = kernel(64);
    let (pid, va) = process(&mut k, HUGE);
    let free = k.phys().frames_free();
    let out = k.fault_with(pid, VirtAddr(va.0 + 7 * PAGE), true, reserving());
    // trap 1000 + table page (100 + 1000) + frame (100 + 1000 clearing) + PTE 10: the
    // cost of a plain 4 KB fault.
    assert_eq!(
        (out.kind, out.size, out.cost),
        (FaultKind::Base, PageSize::Base, Nanos(3210))
    );
    let r = k.reservation(pid, va).unwrap();
    assert_eq!(r.populated, 1);
    assert_eq!(r.base.0 % 512, 0);
    assert_eq!(pfn_of(&k, pid, va.0 + 7 * PAGE), Pfn(r.base.0 + 7));
    assert_eq!(
        k.phys().frames_free(),
        free - 512 - 1,
        "block and table page"
    );
    assert_eq!(k.stats().reservations_made, 1);
    assert!(k.fault_info(pid, va).unwrap().region_reserved);
    k.check_invariants().unwrap();
}

#[test]
fn touching_all_512_pages_promotes_in_place_without_a_copy() {
    let mut k = kernel(64);
    let (pid, va) = process(&mut k, HUGE);
    touch(&mut k, pid, va, 0..511);
    let base = k.reservation(pid, va).unwrap().base;
    k.take_tlb_flushes();
    let last = k.fault_with(pid, VirtAddr(va.0 + 511 * PAGE), true, reserving());
    // A base fault (trap 1000 + 100 + 1000 clearing + PTE 10) + the PMD write 10 + the
    // flush 300: no table page, no copy, no 2 MB clearing.
    assert_eq!((last.kind, last.size), (FaultKind::Base, PageSize::Huge));
    assert_eq!(last.cost, Nanos(2110 + 10 + 300));
    assert_eq!(k.region_info(pid, va).state, RegionState::Huge);
    assert_eq!(k.huge_pages(pid), 1);
    assert_eq!(pfn_of(&k, pid, va.0 + 300 * PAGE), Pfn(base.0 + 300));
    let s = k.stats();
    assert_eq!((s.promotions_in_place, s.collapses, s.splits), (1, 0, 0));
    assert_eq!(s.promotion_time, Nanos(310));
    assert_eq!(k.reservation(pid, va), None, "a promoted reservation ends");
    assert_eq!(k.take_tlb_flushes().len(), 1);
    assert_eq!(
        k.phys().frames_free(),
        k.phys().frames_total() - 512,
        "the table page is freed"
    );
    k.check_invariants().unwrap();
}

#[test]
fn a_sparse_touch_keeps_the_reservation_and_base_pages() {
    let mut k = kernel(64);
    let (pid, va) = process(&mut k, HUGE);
    touch(&mut k, pid, va, (0..512).step_by(5).take(100));
    let r = k.reservation(pid, va).unwrap();
    assert_eq!(r.populated, 100);
    assert_eq!(k.region_info(pid, va).state, RegionState::Table);
    assert_eq!(k.rss_bytes(pid), 100 * PAGE);
    let c = k.reservation_census();
    assert_eq!((c.live, c.full, c.unused_frames), (1, 0, 412));
    assert_eq!(k.stats().promotions_in_place, 0);
    k.check_invariants().unwrap();
}

#[test]
fn memory_pressure_breaks_a_reservation_returning_exactly_its_unused_frames() {
    let mut k = kernel(64);
    let (pid, va) = process(&mut k, HUGE);
    touch(&mut k, pid, va, 0..100);
    let base = k.reservation(pid, va).unwrap().base;
    let mut handles = Vec::new();
    let free_before = loop {
        let free = k.phys().frames_free();
        let (h, _) = k.kmalloc(KmemKind::Unmovable, Order(0)).unwrap();
        handles.push(h);
        if k.stats().reservations_reclaimed > 0 {
            break free;
        }
    };
    assert_eq!(k.phys().frames_free(), free_before - 1 + 412);
    let s = k.stats();
    assert_eq!((s.reservations_broken, s.reserv_frames_returned), (1, 412));
    assert_eq!(s.pgsteal_kswapd, 0, "no page cache was needed");
    assert_eq!(k.reservation(pid, va), None);
    assert_eq!(
        pfn_of(&k, pid, va.0 + 42 * PAGE),
        Pfn(base.0 + 42),
        "used pages stay"
    );
    // The next fault in the region takes a plain frame and reserves nothing.
    k.fault_with(pid, VirtAddr(va.0 + 200 * PAGE), true, reserving());
    assert_eq!(k.stats().reservations_made, 1);
    k.check_invariants().unwrap();
}

#[test]
fn pressure_breaks_the_least_recently_changed_reservation_first() {
    let mut k = kernel(64);
    let (pid, va) = process(&mut k, 2 * HUGE);
    let (a, b) = (va, VirtAddr(va.0 + HUGE));
    touch(&mut k, pid, a, 0..10);
    touch(&mut k, pid, b, 0..10);
    touch(&mut k, pid, a, 10..11); // `a` changed last
    let mut handles = Vec::new();
    while k.stats().reservations_reclaimed == 0 {
        handles.push(k.kmalloc(KmemKind::Unmovable, Order(0)).unwrap().0);
    }
    assert!(k.reservation(pid, a).is_some() && k.reservation(pid, b).is_none());
    k.check_invariants().unwrap();
}

#[test]
fn a_failed_small_allocation_breaks_reservations_before_it_fails() {
    let mut k = kernel(64);
    let (pid, va) = process(&mut k, HUGE);
    touch(&mut k, pid, va, 0..1);
    // Drain the buddy allocator without reclaim or kswapd.
    let req = AllocRequest::new(Order(0)).owner(OwnerKind::KernelReclaimable);
    while k.alloc_pages(&req).is_ok() {}
    assert_eq!(k.phys().frames_free(), 0);
    let (_, cost) = k.kmalloc(KmemKind::Unmovable, Order(0)).unwrap();
    assert_eq!(k.stats().reservations_reclaimed, 1);
    assert_eq!(
        k.stats().allocstall,
        0,
        "breaking a reservation is not a stall"
    );
    // One run (pages 1..512) freed: one buddy operation (100), charged to the caller.
    assert_eq!(k.stats().reserv_break_time, Nanos(100));
    assert!(cost >= Nanos(100), "{cost:?}");
    assert_eq!(k.stats().reserv_frames_returned, 511);
    k.check_invariants().unwrap();
}

#[test]
fn without_a_free_order_9_block_a_fault_takes_a_plain_page() {
    let mut k = kernel(8);
    let (pid, va) = process(&mut k, HUGE);
    let small = AllocRequest::new(Order(0)).owner(OwnerKind::KernelReclaimable);
    k.alloc_pages(&small).unwrap();
    let req = AllocRequest::new(Order(9)).owner(OwnerKind::KernelReclaimable);
    while k.alloc_pages(&req).is_ok() {}
    assert!(k.phys().frames_free() > 0);
    let out = k.fault_with(pid, va, true, reserving());
    assert!(!out.oom);
    assert_eq!(k.reservation(pid, va), None);
    assert_eq!(k.stats().reservations_made, 0);
    k.check_invariants().unwrap();
}

#[test]
fn only_regions_wholly_inside_a_vma_and_without_frames_are_reserved() {
    let mut k = kernel(64);
    let (pid, va) = process(&mut k, HUGE + HUGE / 2);
    touch(&mut k, pid, VirtAddr(va.0 + HUGE), 0..1);
    assert_eq!(
        k.reservation(pid, VirtAddr(va.0 + HUGE)),
        None,
        "partial region"
    );
    k.fault(pid, va, true, PageSize::Base); // a plain frame first
    touch(&mut k, pid, va, 1..2);
    assert_eq!(
        k.reservation(pid, va),
        None,
        "the region already has a frame"
    );
    k.check_invariants().unwrap();
}

#[test]
fn zero_page_reads_leave_the_region_reservable_and_cow_takes_the_reserved_frame() {
    let mut k = kernel(64);
    let (pid, va) = process(&mut k, HUGE);
    k.fault_with(pid, VirtAddr(va.0 + 3 * PAGE), false, reserving());
    assert_eq!(k.reservation(pid, va), None, "a read maps the zero page");
    let out = k.fault_with(pid, VirtAddr(va.0 + 3 * PAGE), true, reserving());
    assert_eq!(out.kind, FaultKind::CowZeroPage);
    let base = k.reservation(pid, va).unwrap().base;
    assert_eq!(pfn_of(&k, pid, va.0 + 3 * PAGE), Pfn(base.0 + 3));
    k.check_invariants().unwrap();
}

#[test]
fn with_promotion_off_a_full_reservation_stays_4k_and_cannot_be_broken_by_pressure() {
    let mut k = kernel(64);
    let (pid, va) = process(&mut k, HUGE);
    for i in 0..512 {
        let req = reserving().promote(false);
        k.fault_with(pid, VirtAddr(va.0 + i * PAGE), true, req);
    }
    assert_eq!(k.region_info(pid, va).state, RegionState::Table);
    let c = k.reservation_census();
    assert_eq!((c.live, c.full, c.unused_frames), (1, 1, 0));
    assert_eq!(k.reservation(pid, va).unwrap().populated, 512);
    let req = AllocRequest::new(Order(0)).owner(OwnerKind::KernelReclaimable);
    while k.alloc_pages(&req).is_ok() {}
    assert!(k.kmalloc(KmemKind::Unmovable, Order(0)).is_err());
    assert_eq!(k.reservation_census().full, 1, "nothing unused to return");
    k.check_invariants().unwrap();
    k.exit_process(pid);
    assert_eq!(k.reservation_census().live, 0);
    k.check_invariants().unwrap();
}

#[test]
fn unmapping_part_of_a_reserved_region_breaks_it() {
    let mut k = kernel(64);
    let (pid, va) = process(&mut k, HUGE);
    touch(&mut k, pid, va, 0..20);
    let base = k.reservation(pid, va).unwrap().base;
    let cost = k
        .madvise(pid, VirtAddr(va.0 + 5 * PAGE), 5 * PAGE, Madvise::DontNeed)
        .unwrap();
    assert_eq!(k.reservation(pid, va), None);
    let s = k.stats();
    assert_eq!((s.reservations_broken, s.reserv_frames_returned), (1, 492));
    // One run (20..512) of unused frames: 100; five PTEs: 50; a flush: 300.
    assert_eq!(cost, Nanos(100 + 50 + 300));
    assert_eq!(pfn_of(&k, pid, va.0 + 12 * PAGE), Pfn(base.0 + 12));
    assert_eq!(k.phys().frames_free(), k.phys().frames_total() - 15 - 1);
    k.check_invariants().unwrap();
    k.munmap(pid, va, HUGE).unwrap();
    assert_eq!(k.phys().frames_free(), k.phys().frames_total());
}

#[test]
fn process_exit_returns_every_reserved_frame() {
    let mut k = kernel(64);
    let (pid, va) = process(&mut k, 4 * HUGE);
    for r in 0..4 {
        touch(&mut k, pid, VirtAddr(va.0 + r * HUGE), 0..(r * 100 + 1));
    }
    assert_eq!(k.reservation_census().live, 4);
    k.exit_process(pid);
    assert_eq!(k.reservation_census().live, 0);
    assert_eq!(k.stats().reservations_broken, 4);
    assert_eq!(k.phys().frames_free(), k.phys().frames_total());
    k.check_invariants().unwrap();
}

#[test]
fn advice_cutting_the_region_breaks_its_reservation() {
    let mut k = kernel(64);
    let (pid, va) = process(&mut k, HUGE);
    touch(&mut k, pid, va, 0..3);
    k.madvise(pid, VirtAddr(va.0 + PAGE), PAGE, Madvise::Hugepage)
        .unwrap();
    assert_eq!(k.reservation(pid, va), None);
    k.check_invariants().unwrap();
}

#[test]
fn reserved_frames_are_not_migrated_and_a_collapse_breaks_the_reservation() {
    let mut k = kernel(64);
    let (pid, va) = process(&mut k, HUGE);
    touch(&mut k, pid, va, 0..10);
    let src = pfn_of(&k, pid, va.0);
    let dst = k.phys.alloc(&AllocRequest::new(Order(0))).unwrap().pfn;
    assert!(k.migrate_frame(src, dst).is_err());
    k.phys.free(dst, Order(0)).unwrap();
    k.compact(crate::CompactRequest::Full);
    assert_eq!(pfn_of(&k, pid, va.0), src, "compaction skipped it");
    k.check_invariants().unwrap();
    k.collapse(pid, va).unwrap();
    assert_eq!(k.reservation(pid, va), None);
    assert_eq!(k.stats().reserv_frames_returned, 502);
    k.check_invariants().unwrap();
}

#[test]
fn splitting_a_promoted_page_is_a_plain_demotion() {
    let mut k = kernel(64);
    let (pid, va) = process(&mut k, HUGE);
    touch(&mut k, pid, va, 0..512);
    let base = pfn_of(&k, pid, va.0);
    k.split(pid, va).unwrap();
    assert_eq!(pfn_of(&k, pid, va.0 + 9 * PAGE), Pfn(base.0 + 9));
    assert_eq!(k.reservation(pid, va), None);
    k.madvise(pid, va, PAGE, Madvise::DontNeed).unwrap();
    assert_eq!(k.stats().reservations_broken, 0);
    k.check_invariants().unwrap();
}

#[test]
fn a_corrupt_reservation_is_caught_by_the_checker() {
    let mut k = kernel(64);
    let (pid, va) = process(&mut k, HUGE);
    touch(&mut k, pid, va, 0..2);
    let id = k.reserv.find(pid, va.0).unwrap();
    k.reserv.populate(id, 300); // claims a page no PTE maps
    assert!(k.check_invariants().is_err());
}
