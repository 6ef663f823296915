//! Unit tests of the fault path.

use crate::api::{FaultKind, FaultRequest, HugeAdvice, Touch};
use crate::phys::buddy::{PrezeroScope, ZeroedFirst};
use crate::testutil::kernel;

fn frames(blocks: &[(Pfn, hugemm_hw::Order)]) -> u64 {
    blocks.iter().map(|b| 1u64 << b.1 .0).sum()
}
use hugemm_hw::{Nanos, PageSize, Pfn, VirtAddr};

#[test]
fn a_write_fault_costs_trap_alloc_zeroing_and_a_pte() {
    let mut k = kernel(64);
    let pid = k.create_process();
    let va = k.mmap(pid, 1 << 20, HugeAdvice::None).unwrap();
    let out = k.fault(pid, va, true, PageSize::Base);
    assert_eq!(out.kind, FaultKind::Base);
    // trap 1000 + table page (100 + 1000 zeroing) + frame (100 + 1000) + pte 10
    assert_eq!(out.cost, Nanos(3210));
    assert_eq!((out.alloc, out.zeroing), (Nanos(200), Nanos(2000)));
    let out = k.fault(pid, VirtAddr(va.0 + 4096), true, PageSize::Base);
    assert_eq!(out.cost, Nanos(2110));
    k.check_invariants().unwrap();
}

#[test]
fn known_zero_frames_are_not_cleared_again() {
    let mut k = kernel(64);
    let pid = k.create_process();
    let va = k.mmap(pid, 4 << 20, HugeAdvice::None).unwrap();
    k.phys.prezero(u64::MAX, PrezeroScope::AllOrders);
    let out = k.fault(pid, va, true, PageSize::Huge);
    assert_eq!(
        (out.kind, out.cost),
        (FaultKind::Huge, Nanos(1000 + 100 + 10))
    );
    assert_eq!((out.alloc, out.zeroing), (Nanos(100), Nanos::ZERO));
    let first = k.translate(pid, va).unwrap().pa / 4096;
    let written = k.phys().frame(Pfn(first)).unwrap();
    assert!(
        written.is_written() && !written.is_zeroed(),
        "the faulting write left data"
    );
    let untouched = k.phys().frame(Pfn(first + 1)).unwrap();
    assert!(untouched.is_zeroed() && !untouched.is_written());
    assert_eq!((k.useful_bytes(pid), k.rss_bytes(pid)), (4096, 2 << 20));
}

#[test]
fn pre_zeroed_memory_serves_huge_faults_without_clearing() {
    let mut k = kernel(64);
    let pid = k.create_process();
    let va = k.mmap(pid, 8 << 20, HugeAdvice::None).unwrap();
    // Two order-9 blocks' worth: the daemon zeroes whole blocks, largest first (the
    // 64 MB machine's free memory is order-10 blocks).
    assert_eq!(frames(&k.prezero(2048, PrezeroScope::AllOrders)), 2048);
    assert_eq!(k.phys().zeroed_free_frames(), 2048);
    let out = k.fault(pid, va, true, PageSize::Huge);
    assert_eq!((out.kind, out.zeroing), (FaultKind::Huge, Nanos::ZERO));
    // The rest of the zeroed order-10 block serves the next huge fault.
    let out = k.fault(pid, VirtAddr(va.0 + (2 << 20)), true, PageSize::Huge);
    assert_eq!(out.zeroing, Nanos::ZERO);
    assert_eq!(k.stats().clear_skipped_pages, 1024);
    k.check_invariants().unwrap();
    // The released code's flag: allocation takes list order, dirty blocks first.
    k.set_zeroed_first(ZeroedFirst::No);
    let out = k.fault(pid, VirtAddr(va.0 + (4 << 20)), true, PageSize::Huge);
    assert!(out.zeroing > Nanos::ZERO);
    k.check_invariants().unwrap();
}

#[test]
fn base_faults_take_zeroed_frames_first_and_kernel_memory_takes_dirty_ones() {
    let mut k = kernel(64);
    let pid = k.create_process();
    let va = k.mmap(pid, 1 << 20, HugeAdvice::None).unwrap();
    k.prezero(1024, PrezeroScope::AllOrders);
    let out = k.fault(pid, va, true, PageSize::Base);
    // The page-table page (unmovable, dirty first) is cleared; the data page is not.
    assert_eq!(out.zeroing, Nanos(1000));
    assert_eq!(k.phys().zeroed_free_frames(), 1023);
    k.check_invariants().unwrap();
}

#[test]
fn without_page_clearing_faults_cost_no_zeroing() {
    let mut k = kernel(64);
    k.set_clear_pages(false);
    let pid = k.create_process();
    let va = k.mmap(pid, 4 << 20, HugeAdvice::None).unwrap();
    let out = k.fault(pid, va, true, PageSize::Huge);
    assert_eq!((out.kind, out.zeroing), (FaultKind::Huge, Nanos::ZERO));
    assert_eq!(out.cost, Nanos(1000 + 100 + 10));
}

#[test]
fn a_read_fault_maps_the_zero_page_without_a_frame() {
    let mut k = kernel(64);
    let pid = k.create_process();
    let va = k.mmap(pid, 1 << 20, HugeAdvice::None).unwrap();
    let free = k.phys().frames_free();
    let out = k.fault(pid, va, false, PageSize::Base);
    assert_eq!(out.kind, FaultKind::ZeroPage);
    assert_eq!(k.phys().frames_free(), free - 1, "only the page-table page");
    assert_eq!(k.rss_bytes(pid), 0);
    let zero = k.touch(pid, VirtAddr(va.0 + 8), false);
    assert_eq!(
        zero,
        Touch::Mapped {
            pa: (64 << 20) + 8,
            size: PageSize::Base,
            young: true,
        }
    );
    assert_eq!(k.touch(pid, va, true), Touch::WriteToZeroPage);
    let cow = k.fault(pid, va, true, PageSize::Base);
    assert_eq!(cow.kind, FaultKind::CowZeroPage);
    assert_eq!(k.take_tlb_flushes().len(), 1);
    assert_eq!(k.rss_bytes(pid), 4096);
}

#[test]
fn a_huge_read_fault_maps_the_huge_zero_page_unless_use_zero_page_is_off() {
    let mut k = kernel(64);
    let pid = k.create_process();
    let va = k.mmap(pid, 4 << 20, HugeAdvice::None).unwrap();
    let free = k.phys().frames_free();
    let zero = k.fault(pid, va, false, PageSize::Huge);
    assert_eq!(zero.kind, FaultKind::HugeZeroPage);
    assert_eq!(
        k.phys().frames_free(),
        free,
        "no frame for the huge zero page"
    );
    assert_eq!(k.rss_bytes(pid), 0);

    // use_zero_page = 0: the read allocates a huge page, as a write would, but writes
    // none of it.
    let second = VirtAddr(va.0 + (2 << 20));
    let req = FaultRequest::new(PageSize::Huge).huge_zero_page(false);
    let out = k.fault_with(pid, second, false, req);
    assert_eq!(out.kind, FaultKind::Huge);
    assert_eq!(k.phys().frames_free(), free - 512);
    assert_eq!(k.huge_pages(pid), 1);
    assert_eq!(k.rss_bytes(pid), 2 << 20);
    assert_eq!(k.useful_bytes(pid), 0, "read, never written");
    k.check_invariants().unwrap();
}

#[test]
fn faults_outside_vmas_or_on_mapped_pages_do_nothing() {
    let mut k = kernel(64);
    let pid = k.create_process();
    let va = k.mmap(pid, 4096, HugeAdvice::None).unwrap();
    let out = k.fault(pid, VirtAddr(va.0 + 4096), true, PageSize::Base);
    assert_eq!(
        (out.kind, out.oom, out.cost),
        (FaultKind::Base, false, Nanos(1000))
    );
    assert_eq!(k.stats().faults.segfault, 1);
    k.fault(pid, va, true, PageSize::Base);
    k.fault(pid, va, true, PageSize::Base);
    assert_eq!(k.stats().faults.spurious, 1);
    assert_eq!(k.stats().faults.base, 1);
    let ghost = k.fault(hugemm_hw::Pid(99), va, true, PageSize::Base);
    assert!(!ghost.oom);
    k.check_invariants().unwrap();
}

#[test]
fn a_huge_fault_needs_the_whole_region_inside_the_vma() {
    let mut k = kernel(64);
    let pid = k.create_process();
    let va = k.mmap(pid, 3 << 20, HugeAdvice::Hugepage).unwrap();
    let first = k.fault(pid, va, true, PageSize::Huge);
    assert_eq!((first.kind, first.size), (FaultKind::Huge, PageSize::Huge));
    let tail = k.fault(pid, VirtAddr(va.0 + (2 << 20)), true, PageSize::Huge);
    assert_eq!((tail.kind, tail.size), (FaultKind::Base, PageSize::Base));
    assert_eq!(k.huge_pages(pid), 1);
    assert_eq!(k.rss_bytes(pid), (2 << 20) + 4096);
    k.check_invariants().unwrap();
}
