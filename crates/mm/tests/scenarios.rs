//! Scenario tests, each a claim about Linux's huge-page mechanisms the model reproduces.

mod common;

use common::{machine, HUGE, MB, PAGE};
use hugemm_hw::{Geometry, Order, PageSize, Pfn, VirtAddr};
use hugemm_mm::{
    AllocRequest, FaultKind, FrameState, HugeAdvice, Kernel, Madvise, MemConfig, MigrateType,
    OwnerKind, RegionState, Touch,
};

/// Touch every page of `[va, va + len)` for writing, faulting with `want` when needed.
fn write_all(k: &mut Kernel, pid: hugemm_hw::Pid, va: VirtAddr, len: u64, want: PageSize) {
    for off in (0..len).step_by(PAGE as usize) {
        let addr = VirtAddr(va.0 + off);
        if let Touch::NotPresent = k.touch(pid, addr, true) {
            let out = k.fault(pid, addr, true, want);
            assert!(!out.oom);
            assert!(matches!(k.touch(pid, addr, true), Touch::Mapped { .. }));
        }
    }
}

#[test]
fn touching_2gb_with_4k_faults_takes_524288_faults() {
    let mut k = machine(3 << 10);
    let pid = k.create_process();
    let va = k.mmap(pid, 2 << 30, HugeAdvice::None).unwrap();
    write_all(&mut k, pid, va, 2 << 30, PageSize::Base);
    assert_eq!(k.stats().faults.base, 524_288);
    assert_eq!(k.stats().faults.total(), 524_288);
    assert_eq!(k.rss_bytes(pid), 2 << 30);
    k.check_invariants().unwrap();
}

#[test]
fn touching_2gb_with_2m_faults_takes_1024_faults() {
    let mut k = machine(3 << 10);
    let pid = k.create_process();
    let va = k.mmap(pid, 2 << 30, HugeAdvice::Hugepage).unwrap();
    assert_eq!(va.0 % HUGE, 0, "2 MB-aligned like thp_get_unmapped_area");
    write_all(&mut k, pid, va, 2 << 30, PageSize::Huge);
    assert_eq!(k.stats().faults.huge, 1024);
    assert_eq!(k.stats().faults.total(), 1024);
    assert_eq!(k.huge_pages(pid), 1024);
    k.check_invariants().unwrap();
}

#[test]
fn a_fully_fragmented_machine_falls_back_to_4k() {
    let mut k = machine(64);
    let kernel_page = AllocRequest::new(Order(0))
        .migrate(MigrateType::Unmovable)
        .owner(OwnerKind::KernelUnmovable);
    let pages: Vec<_> = (0..k.phys().frames_total())
        .map(|_| k.alloc_pages(&kernel_page).unwrap())
        .collect();
    for b in pages.iter().step_by(2) {
        k.free_pages(b.pfn, b.order).unwrap();
    }
    assert_eq!(k.phys().free_blocks_at_least(Order(9)), 0);
    assert!(k
        .alloc_pages(&AllocRequest::new(Order(9)).owner(OwnerKind::PageCache))
        .is_err());
    let pid = k.create_process();
    let va = k.mmap(pid, HUGE, HugeAdvice::Hugepage).unwrap();
    let out = k.fault(pid, va, true, PageSize::Huge);
    assert_eq!(
        (out.kind, out.size, out.oom),
        (FaultKind::HugeFallback, PageSize::Base, false)
    );
    assert_eq!(k.stats().faults.huge_fallback, 1);
    k.check_invariants().unwrap();
}

#[test]
fn reading_then_writing_a_huge_zero_region_splits_it_and_copies_on_write() {
    let mut k = machine(64);
    let pid = k.create_process();
    let va = k.mmap(pid, HUGE, HugeAdvice::Hugepage).unwrap();
    let read = k.fault(pid, va, false, PageSize::Huge);
    assert_eq!(
        (read.kind, read.size),
        (FaultKind::HugeZeroPage, PageSize::Huge)
    );
    assert!(matches!(
        k.touch(pid, VirtAddr(va.0 + MB), false),
        Touch::Mapped {
            size: PageSize::Huge,
            ..
        }
    ));
    assert_eq!(k.touch(pid, va, true), Touch::WriteToZeroPage);
    let write = k.fault(pid, va, true, PageSize::Huge);
    assert_eq!(
        (write.kind, write.size),
        (FaultKind::CowZeroPage, PageSize::Base)
    );
    assert_eq!(k.stats().splits, 1);
    let info = k.region_info(pid, va);
    assert_eq!(
        (info.state, info.present, info.zero),
        (RegionState::Table, 512, 511)
    );
    assert_eq!(k.rss_bytes(pid), PAGE);
    k.check_invariants().unwrap();
}

#[test]
fn unmapping_half_a_huge_page_splits_it_and_frees_256_frames() {
    let mut k = machine(64);
    let pid = k.create_process();
    let va = k.mmap(pid, HUGE, HugeAdvice::Hugepage).unwrap();
    k.fault(pid, va, true, PageSize::Huge);
    let pfn = k.translate(pid, va).unwrap().pa / PAGE;
    let free = k.phys().frames_free();
    k.munmap(pid, VirtAddr(va.0 + MB), MB).unwrap();
    // 256 frames of the huge page freed, one page-table page allocated for the other half.
    assert_eq!(k.phys().frames_free(), free + 256 - 1);
    for i in 256..512 {
        let state = k.phys().frame(Pfn(pfn + i)).unwrap().state();
        assert!(
            matches!(state, FrameState::FreeHead { .. } | FrameState::FreeTail),
            "frame {i} still allocated"
        );
    }
    assert_eq!(
        (k.stats().splits, k.huge_pages(pid), k.rss_bytes(pid)),
        (1, 0, MB)
    );
    assert!(k.translate(pid, VirtAddr(va.0 + MB)).is_none());
    assert_eq!(
        k.translate(pid, VirtAddr(va.0 + MB - PAGE)).unwrap().pa,
        (pfn + 255) * PAGE
    );
    assert_eq!(k.touch(pid, VirtAddr(va.0 + MB), false), Touch::Segfault);
    k.check_invariants().unwrap();
}

#[test]
fn running_out_of_memory_is_reported_not_a_panic() {
    let mut k = machine(16);
    let pid = k.create_process();
    let va = k.mmap(pid, 64 * MB, HugeAdvice::None).unwrap();
    let mut oom_at = None;
    for off in (0..64 * MB).step_by(PAGE as usize) {
        let out = k.fault(pid, VirtAddr(va.0 + off), true, PageSize::Huge);
        if out.oom {
            oom_at = Some(off);
            break;
        }
    }
    assert!(oom_at.is_some());
    assert_eq!(k.stats().oom_events, 1);
    assert_eq!(k.phys().frames_free(), 0);
    k.check_invariants().unwrap();
    k.exit_process(pid);
    assert_eq!(k.phys().frames_free(), k.phys().frames_total());
}

#[test]
fn collapse_copies_present_pages_and_zero_fills_the_rest() {
    let mut k = machine(64);
    let pid = k.create_process();
    let va = k.mmap(pid, HUGE, HugeAdvice::None).unwrap();
    write_all(&mut k, pid, va, 100 * PAGE, PageSize::Base);
    k.fault(pid, VirtAddr(va.0 + 200 * PAGE), false, PageSize::Base);
    let free = k.phys().frames_free();
    let out = k.collapse(pid, va).unwrap();
    assert_eq!((out.copied, out.zero_filled), (100, 412));
    // 512 allocated, 100 frames and the page-table page freed.
    assert_eq!(k.phys().frames_free(), free - 512 + 101);
    assert_eq!(k.region_info(pid, va).state, RegionState::Huge);
    assert_eq!(
        (k.huge_pages(pid), k.rss_bytes(pid), k.stats().collapses),
        (1, HUGE, 1)
    );
    assert_eq!(k.take_tlb_flushes().len(), 1);
    assert_eq!(
        k.collapse(pid, va).unwrap_err(),
        hugemm_mm::CollapseError::NotTable
    );
    k.check_invariants().unwrap();
}

#[test]
fn dontneed_frees_pages_but_keeps_the_mapping() {
    let mut k = machine(64);
    let pid = k.create_process();
    let va = k.mmap(pid, 2 * HUGE, HugeAdvice::None).unwrap();
    k.fault(pid, va, true, PageSize::Huge);
    write_all(&mut k, pid, VirtAddr(va.0 + HUGE), HUGE, PageSize::Base);
    k.madvise(pid, va, 2 * HUGE, Madvise::DontNeed).unwrap();
    assert_eq!(k.rss_bytes(pid), 0);
    assert_eq!(k.phys().frames_free(), k.phys().frames_total());
    assert_eq!(k.touch(pid, va, false), Touch::NotPresent);
    k.check_invariants().unwrap();
}

#[test]
fn exit_returns_every_frame() {
    let mut k = machine(64);
    let (a, b) = (k.create_process(), k.create_process());
    for pid in [a, b] {
        let va = k.mmap(pid, 5 * MB, HugeAdvice::Hugepage).unwrap();
        write_all(&mut k, pid, va, 5 * MB, PageSize::Huge);
    }
    k.exit_process(a);
    assert_eq!(k.rss_bytes(a), 0);
    k.check_invariants().unwrap();
    k.exit_process(b);
    assert_eq!(k.phys().frames_free(), k.phys().frames_total());
    assert_eq!(k.phys().free_blocks(Order(10)), 64 * MB / PAGE / 1024);
}

/// Not a bound, a measurement: 64 GB (16M frames) must set up well under a second.
#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "timing is meaningful in release builds only"
)]
fn setting_up_64gb_is_fast() {
    let start = std::time::Instant::now();
    let k = Kernel::new(
        &MemConfig {
            bytes: 64 << 30,
            geometry: Geometry::X86_64,
        },
        common::costs(),
    )
    .unwrap();
    let took = start.elapsed();
    assert_eq!(k.phys().frames_total(), 16 << 20);
    println!(
        "64 GB Kernel::new: {:.1} ms ({} bytes/frame)",
        took.as_secs_f64() * 1e3,
        std::mem::size_of::<hugemm_mm::Frame>()
    );
}

/// Not a bound, a measurement of the hot path on a mix of 4 KB and 2 MB mappings.
#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "timing is meaningful in release builds only"
)]
fn touch_throughput() {
    let mut k = machine(1 << 10);
    let pid = k.create_process();
    let small = k.mmap(pid, 64 * MB, HugeAdvice::None).unwrap();
    let big = k.mmap(pid, 256 * MB, HugeAdvice::Hugepage).unwrap();
    write_all(&mut k, pid, small, 64 * MB, PageSize::Base);
    write_all(&mut k, pid, big, 256 * MB, PageSize::Huge);
    let n = 20_000_000u64;
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let start = std::time::Instant::now();
    let mut sum = 0u64;
    for i in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let va = if i % 4 == 0 {
            small.0 + x % (64 * MB)
        } else {
            big.0 + x % (256 * MB)
        };
        if let Touch::Mapped { pa, .. } = k.touch(pid, VirtAddr(va), i % 3 == 0) {
            sum = sum.wrapping_add(pa);
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "Kernel::touch: {:.1} M/s (checksum {sum:x})",
        n as f64 / secs / 1e6
    );
}
