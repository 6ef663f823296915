//! Migration between nodes: what moves, what stays, and the cost's parts.

use super::*;
use crate::api::HugeAdvice;
use crate::costs::MmCosts;
use crate::kernel::MemConfig;
use hugemm_hw::{Geometry, PageSize};

const PAGE: u64 = 4096;
const HUGE: u64 = 2 << 20;

fn costs() -> MmCosts {
    MmCosts {
        fault_trap: Nanos(1000),
        alloc: Nanos(100),
        zero_gbps: 10.0,
        copy_gbps: 4.0,
        pte_update: Nanos(10),
        tlb_flush: Nanos(300),
        zero_nt_gbps: 10.0,
        scan_gbps: 20.0,
        scan_page: Nanos(100),
        compound_tail: Nanos(2),
    }
}

fn migration() -> MigrationCosts {
    MigrationCosts {
        call: Nanos(50_000),
        page: Nanos(2_000),
        huge_page: Nanos(30_000),
        free: Nanos(100),
        thread_launch: Nanos(10_000),
        copy_gbps: 2.0,
        link_gbps: 6.0,
    }
}

/// 32 MiB on node 0, 32 MiB on node 1, with migration costs.
fn two_nodes() -> Kernel {
    let cfg = MemConfig {
        bytes: 64 << 20,
        geometry: Geometry::X86_64,
    };
    let mut k = Kernel::with_nodes(&cfg, &[32 << 20, 32 << 20], costs()).unwrap();
    k.set_migration_costs(migration()).unwrap();
    k
}

fn node_of(k: &Kernel, pid: Pid, va: u64) -> NodeId {
    k.phys()
        .node_of(Pfn(k.translate(pid, VirtAddr(va)).unwrap().pa / PAGE))
}

#[test]
fn the_copy_engine_launches_threads_and_is_capped_by_the_link() {
    let m = migration();
    assert_eq!(m.copy_time(4096, 1), Nanos(2048));
    // 4 threads: 4 launches, 8 GB/s capped to 6.
    assert_eq!(m.copy_time(6_000_000, 4), Nanos(40_000 + 1_000_000));
    assert_eq!(m.copy_time(6_000_000, 2), Nanos(20_000 + 1_500_000));
}

#[test]
fn base_pages_move_with_their_bits_and_content_and_cost_their_parts() {
    let mut k = two_nodes();
    let pid = k.create_process();
    let va = k.mmap(pid, 4 * PAGE, HugeAdvice::None).unwrap();
    for i in 0..4 {
        k.fault(pid, VirtAddr(va.0 + i * PAGE), true, PageSize::Base);
    }
    k.take_tlb_flushes();
    let before = k.region_info(pid, va);
    let pages: Vec<VirtAddr> = (0..4).map(|i| VirtAddr(va.0 + i * PAGE)).collect();
    let out = k
        .move_pages(pid, &pages, NodeId(1), &Mechanism::LINUX)
        .unwrap();
    assert_eq!((out.base_pages, out.failed, out.bytes), (4, 0, 4 * PAGE));
    for p in &pages {
        assert_eq!(node_of(&k, pid, p.0), NodeId(1));
    }
    let after = k.region_info(pid, va);
    assert_eq!(
        (after.accessed, after.dirty),
        (before.accessed, before.dirty)
    );
    assert_eq!(k.take_tlb_flushes().len(), 4);
    // call + 4 x (page 2000 + flush 300 + 2 entries 20 + alloc 100 + free 100) + 4 copies.
    assert_eq!(out.call, Nanos(50_000));
    assert_eq!(out.kernel, Nanos(4 * 2_520));
    assert_eq!(out.copy, Nanos(4 * 2048));
    assert_eq!(k.phys().node_frames_free(NodeId(1)), (32 << 20) / PAGE - 4);
    assert_eq!(
        k.migration_traffic(),
        &[4 * PAGE, 4 * PAGE],
        "read on node 0, written on node 1"
    );
    // Moving again does nothing: every page is on node 1 already.
    let again = k
        .move_pages(pid, &pages, NodeId(1), &Mechanism::LINUX)
        .unwrap();
    assert_eq!(
        (again.base_pages, again.bytes, again.kernel),
        (0, 0, Nanos::ZERO)
    );
    assert_eq!(k.tier_stats().calls, 2);
    k.check_invariants().unwrap();
}

#[test]
fn a_huge_page_splits_under_linux_and_moves_whole_natively() {
    for (mech, huge_after) in [(Mechanism::LINUX, 0), (Mechanism::THP, 1)] {
        let mut k = two_nodes();
        let pid = k.create_process();
        let va = k.mmap(pid, HUGE, HugeAdvice::Hugepage).unwrap();
        k.fault(pid, va, true, PageSize::Huge);
        let pages: Vec<VirtAddr> = (0..512).map(|i| VirtAddr(va.0 + i * PAGE)).collect();
        let out = k.move_pages(pid, &pages, NodeId(1), &mech).unwrap();
        assert_eq!(k.huge_pages(pid), huge_after, "{mech:?}");
        assert_eq!(out.bytes, HUGE);
        assert_eq!(node_of(&k, pid, va.0 + 300 * PAGE), NodeId(1));
        match mech.thp {
            ThpMigration::Split => {
                assert_eq!((out.splits, out.base_pages, out.huge_pages), (1, 512, 0));
                assert!(out.split > Nanos::ZERO);
            }
            ThpMigration::Native => {
                assert_eq!((out.splits, out.base_pages, out.huge_pages), (0, 0, 1));
                // huge_page + flush + 2 entries + alloc + free + 2 x 511 tails.
                assert_eq!(
                    out.kernel,
                    Nanos(30_000 + 300 + 20 + 100 + 100 + 2 * 511 * 2)
                );
                assert_eq!(out.copy, Nanos(HUGE / 2));
            }
        }
        assert_eq!(k.rss_bytes(pid), HUGE);
        k.check_invariants().unwrap();
    }
}

#[test]
fn concurrent_copies_batch_pages_under_one_launch() {
    let mut k = two_nodes();
    let pid = k.create_process();
    let va = k.mmap(pid, 4 * HUGE, HugeAdvice::Hugepage).unwrap();
    for i in 0..4 {
        k.fault(pid, VirtAddr(va.0 + i * HUGE), true, PageSize::Huge);
    }
    let pages: Vec<VirtAddr> = (0..4).map(|i| VirtAddr(va.0 + i * HUGE)).collect();
    let serial = Mechanism {
        threads: 4,
        ..Mechanism::THP
    };
    let concurrent = Mechanism {
        in_flight: 0,
        ..serial
    };
    let a = k.move_pages(pid, &pages, NodeId(1), &serial).unwrap();
    let b = k.move_pages(pid, &pages, NodeId(0), &concurrent).unwrap();
    let m = migration();
    assert_eq!(a.copy, Nanos(4 * m.copy_time(HUGE, 4).0));
    assert_eq!(b.copy, m.copy_time(4 * HUGE, 4));
    assert!(b.cost() < a.cost());
    k.check_invariants().unwrap();
}

#[test]
fn an_exchange_swaps_frames_keeps_each_pages_bits_and_allocates_nothing() {
    let mut k = two_nodes();
    let pid = k.create_process();
    let va = k.mmap(pid, 2 * HUGE, HugeAdvice::Hugepage).unwrap();
    let (a, b) = (va.0, va.0 + HUGE);
    k.fault(pid, VirtAddr(a), true, PageSize::Huge);
    k.fault(pid, VirtAddr(b), true, PageSize::Huge);
    k.move_pages(pid, &[VirtAddr(b)], NodeId(1), &Mechanism::THP)
        .unwrap();
    let (pa, pb) = (
        k.translate(pid, VirtAddr(a)).unwrap().pa,
        k.translate(pid, VirtAddr(b)).unwrap().pa,
    );
    let free = k.phys().frames_free();
    let out = k
        .exchange_pages(pid, &[(VirtAddr(a), VirtAddr(b))], &Mechanism::THP)
        .unwrap();
    assert_eq!((out.huge_pages, out.failed, out.bytes), (2, 0, 2 * HUGE));
    assert_eq!(k.translate(pid, VirtAddr(a)).unwrap().pa, pb);
    assert_eq!(k.translate(pid, VirtAddr(b)).unwrap().pa, pa);
    assert_eq!(k.phys().frames_free(), free, "nothing allocated or freed");
    assert_eq!(
        k.migration_traffic(),
        &[3 * HUGE, 3 * HUGE],
        "the move, then both pages read and written on both nodes"
    );
    // 2 x (huge_page + flush + 2 entries): no allocation, free or compound setup.
    assert_eq!(out.kernel, Nanos(2 * (30_000 + 300 + 20)));
    k.check_invariants().unwrap();
    // A huge page and a base page do not exchange natively.
    let c = k.mmap(pid, PAGE, HugeAdvice::None).unwrap();
    k.fault(pid, c, true, PageSize::Base);
    let bad = k
        .exchange_pages(pid, &[(VirtAddr(a), c)], &Mechanism::THP)
        .unwrap();
    assert_eq!((bad.failed, bad.bytes), (1, 0));
}

#[test]
fn migration_needs_costs_a_live_process_a_real_node_and_sane_threads() {
    let cfg = MemConfig {
        bytes: 64 << 20,
        geometry: Geometry::X86_64,
    };
    let mut k = Kernel::with_nodes(&cfg, &[32 << 20, 32 << 20], costs()).unwrap();
    let pid = k.create_process();
    assert!(matches!(
        k.move_pages(pid, &[], NodeId(1), &Mechanism::LINUX),
        Err(MmError::InvalidConfig { .. })
    ));
    k.set_migration_costs(migration()).unwrap();
    assert!(k
        .move_pages(pid, &[], NodeId(2), &Mechanism::LINUX)
        .is_err());
    assert_eq!(
        k.move_pages(Pid(99), &[], NodeId(1), &Mechanism::LINUX),
        Err(MmError::NoSuchProcess(Pid(99)))
    );
    let zero = Mechanism {
        threads: 0,
        ..Mechanism::LINUX
    };
    assert!(k.move_pages(pid, &[], NodeId(1), &zero).is_err());
    assert!(Kernel::with_nodes(&cfg, &[32 << 20, 16 << 20], costs()).is_err());
    let bad = MigrationCosts {
        link_gbps: 0.0,
        ..migration()
    };
    assert!(k.set_migration_costs(bad).is_err());
}

#[test]
fn a_full_target_node_fails_the_page_and_leaves_it_in_place() {
    let cfg = MemConfig {
        bytes: 36 << 20,
        geometry: Geometry::X86_64,
    };
    let mut k = Kernel::with_nodes(&cfg, &[32 << 20, 4 << 20], costs()).unwrap();
    k.set_migration_costs(migration()).unwrap();
    let pid = k.create_process();
    // Fill node 1 with another process's huge pages, moved there.
    let hog = k.create_process();
    let h = k.mmap(hog, 2 * HUGE, HugeAdvice::Hugepage).unwrap();
    let hp = [h, VirtAddr(h.0 + HUGE)];
    for p in hp {
        k.fault(hog, p, true, PageSize::Huge);
    }
    let moved = k.move_pages(hog, &hp, NodeId(1), &Mechanism::THP).unwrap();
    assert_eq!(moved.huge_pages, 2);
    assert_eq!(k.phys().node_frames_free(NodeId(1)), 0);
    let va = k.mmap(pid, PAGE, HugeAdvice::None).unwrap();
    k.fault(pid, va, true, PageSize::Base);
    let out = k
        .move_pages(pid, &[va], NodeId(1), &Mechanism::LINUX)
        .unwrap();
    assert_eq!((out.failed, out.base_pages), (1, 0));
    assert_eq!(node_of(&k, pid, va.0), NodeId(0));
    k.check_invariants().unwrap();
}
