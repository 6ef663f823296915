//! Order-H preservation against Linux's `__rmqueue_smallest`, step by step of the rule in
//! `preserve.rs`, and the allocator's completeness with it on.

use crate::phys::buddy::{AllocRequest, PhysMem, PrezeroScope};
use crate::phys::fallback;
use crate::phys::frame::OwnerKind;
use crate::phys::pageblock::MigrateType;
use hugemm_hw::{Geometry, Order, Pfn};

fn mem(frames: u64, preserve: bool) -> PhysMem {
    let mut m = PhysMem::new(frames, Geometry::X86_64).unwrap();
    m.set_preserve_huge_blocks(preserve);
    m
}

fn page() -> AllocRequest {
    AllocRequest::new(Order(0))
}

fn kernel(order: u8) -> AllocRequest {
    AllocRequest::new(Order(order))
        .migrate(MigrateType::Unmovable)
        .owner(OwnerKind::KernelUnmovable)
}

fn is_free_huge(m: &PhysMem, pfn: u64) -> bool {
    m.frame(Pfn(pfn)).unwrap().is_free_head_of(9)
}

#[test]
fn the_knob_is_off_by_default_and_reads_back() {
    let mut m = PhysMem::new(1024, Geometry::X86_64).unwrap();
    assert!(!m.preserves_huge_blocks());
    m.set_preserve_huge_blocks(true);
    assert!(m.preserves_huge_blocks());
    m.set_preserve_huge_blocks(false);
    assert!(!m.preserves_huge_blocks());
}

/// An order-9 block at 512 and an order-10 block at 1024, nothing smaller: Linux splits
/// the order-9 block, preservation the order-10 one (step 2), which leaves the order-9
/// list two blocks for the same huge-page capacity.
#[test]
fn small_requests_split_an_order_10_block_before_an_order_9_block() {
    for preserve in [false, true] {
        let mut m = mem(2048, preserve);
        m.alloc(&AllocRequest::new(Order(9))).unwrap();
        let mut taken = Vec::new();
        for _ in 0..512 {
            taken.push(m.alloc(&page()).unwrap().pfn.0);
        }
        if preserve {
            assert_eq!(taken[0], 1024, "the order-10 block was split");
            assert!(is_free_huge(&m, 512) && is_free_huge(&m, 1536));
            assert_eq!((m.free_blocks(Order(9)), m.free_blocks(Order(10))), (2, 0));
        } else {
            assert_eq!(taken[0], 512, "Linux splits the smallest block");
            assert!(!is_free_huge(&m, 512));
            assert_eq!((m.free_blocks(Order(9)), m.free_blocks(Order(10))), (0, 1));
        }
        assert_eq!(m.free_blocks_at_least(Order(9)), 2, "the same capacity");
        m.check_counters().unwrap();
    }
}

/// Four order-10 blocks, the first split by an order-9 allocation: 1536 4 KB pages split
/// the three order-10 blocks (step 2), each leaving its order-9 buddy, while Linux splits
/// each order-9 block as soon as it is the smallest and keeps two order-10 blocks whole.
/// When only order-9 blocks remain, they serve 4 KB pages too (step 3), to the last
/// frame.
#[test]
fn a_run_of_small_requests_leaves_the_order_9_list_stocked() {
    for preserve in [false, true] {
        let mut m = mem(4096, preserve);
        m.alloc(&AllocRequest::new(Order(9))).unwrap();
        for _ in 0..3 * 512 {
            m.alloc(&page()).unwrap();
        }
        let lists = (m.free_blocks(Order(9)), m.free_blocks(Order(10)));
        match preserve {
            true => assert_eq!(lists, (4, 0)),
            false => assert_eq!(lists, (0, 2)),
        }
        assert_eq!(m.free_blocks_at_least(Order(9)), 4, "the same capacity");
        assert_eq!(m.frames_free(), 4 * 512);
        while m.frames_free() > 0 {
            m.alloc(&page()).unwrap();
        }
        assert!(m.alloc(&page()).is_err());
        m.check_counters().unwrap();
    }
}

/// Movable lists hold one order-9 block (at 1536); unmovable lists hold 511 frames in
/// blocks of orders 0-8 (513..1024).
fn movable_huge_block_beside_kernel_holes(preserve: bool) -> PhysMem {
    let mut m = mem(2048, preserve);
    m.alloc(&kernel(9)).unwrap(); // claims 0..1024 for the kernel
    m.alloc(&kernel(0)).unwrap(); // splits the kernel's order-9 block at 512
    m.alloc(&AllocRequest::new(Order(9))).unwrap(); // 1024..1536, leaving 1536 free
    assert_eq!(m.free_blocks_of(Order(9), MigrateType::Movable), 1);
    assert_eq!(m.free_frames(MigrateType::Unmovable), 511);
    assert_eq!(m.free_frames(MigrateType::Movable), 512);
    m
}

/// The rule stays within the request's own lists: a 4 KB user page splits its type's
/// order-9 block before it takes a kernel pageblock's hole, with the knob as without.
/// (Taking the holes made kernel allocations claim movable pageblocks instead: see
/// `preserve.rs`.)
#[test]
fn user_pages_split_their_own_huge_block_before_kernel_holes() {
    for preserve in [false, true] {
        let mut m = movable_huge_block_beside_kernel_holes(preserve);
        let before = m.fallback_stats();
        let b = m.alloc(&page()).unwrap();
        assert_eq!(b.pfn, Pfn(1536));
        assert_eq!(m.fallback_stats(), before, "no fallback");
        assert_eq!(m.free_frames(MigrateType::Unmovable), 511);
        m.check_counters().unwrap();
    }
}

/// Kernel lists hold one order-9 block (1536); movable lists hold small blocks (and the
/// order-9 block at 512). A kernel page splits its own huge block rather than taint a
/// movable pageblock.
#[test]
fn kernel_pages_do_not_steal_small_user_blocks() {
    for preserve in [false, true] {
        let mut m = mem(2048, preserve);
        m.alloc(&page()).unwrap(); // splits the movable order-10 block at 0
        m.alloc(&kernel(9)).unwrap(); // claims 1024..2048, leaving 1536 free
        let before = m.fallback_stats();
        let b = m.alloc(&kernel(0)).unwrap();
        assert_eq!(b.pfn, Pfn(1536));
        assert_eq!(m.fallback_stats(), before, "no fallback");
        assert_eq!(m.free_frames(MigrateType::Movable), 1023);
        m.check_counters().unwrap();
    }
}

/// A zeroed order-9 block and dirty smaller ones: HawkEye's zeroed-first takes the
/// zeroed huge block for a 4 KB page; preservation keeps it for a huge fault.
#[test]
fn zeroed_first_does_not_split_a_zeroed_huge_block() {
    for preserve in [false, true] {
        let mut m = mem(1024, preserve);
        m.alloc(&page()).unwrap();
        let zeroed = m.prezero(512, PrezeroScope::AllOrders);
        assert_eq!(zeroed, vec![(Pfn(512), Order(9))]);
        let b = m.alloc(&page().prefer_zeroed(true)).unwrap();
        if preserve {
            assert_eq!((b.pfn, b.zeroed), (Pfn(1), false));
            assert_eq!(m.zeroed_free_frames(), 512);
            assert!(is_free_huge(&m, 512));
        } else {
            assert_eq!((b.pfn, b.zeroed), (Pfn(512), true));
            assert_eq!(m.zeroed_free_frames(), 511);
        }
        m.check_counters().unwrap();
    }
}

/// With KML, user pages go to the highest free block of any order; an order-9 block at
/// the top is split by Linux's placed search, while preservation takes the highest
/// block below order 9.
#[test]
fn a_placement_policy_places_within_each_step() {
    for preserve in [false, true] {
        let mut m = mem(1024, preserve);
        m.set_fallback_policy(fallback::build("kml", 1).unwrap());
        let top = m.alloc(&AllocRequest::new(Order(9))).unwrap();
        assert_eq!(top.pfn, Pfn(512), "user memory from the top");
        m.alloc(&page()).unwrap(); // 511: the low order-9 block split downwards
        m.free(top.pfn, top.order).unwrap();
        assert!(is_free_huge(&m, 512));
        let b = m.alloc(&page()).unwrap();
        match preserve {
            true => assert_eq!(b.pfn, Pfn(510)),
            false => assert_eq!(b.pfn, Pfn(1023)),
        }
        assert_eq!(is_free_huge(&m, 512), preserve);
        m.check_counters().unwrap();
    }
}

/// Completeness under every fallback policy: the shared conformance suite (no request
/// fails while a block fits, frames conserved, counters exact, buddies coalesce back)
/// with the knob on.
#[test]
fn every_fallback_policy_passes_the_conformance_suite_with_the_knob_on() {
    for &name in fallback::NAMES {
        fallback::conformance::run_preserving(|| fallback::build(name, 11).unwrap());
    }
}
