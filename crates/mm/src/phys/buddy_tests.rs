//! Unit tests of the buddy allocator: splitting, merging, accounting.

use super::*;

fn mem(frames: u64) -> PhysMem {
    PhysMem::new(frames, Geometry::X86_64).unwrap()
}

#[test]
fn boot_memory_is_maximal_blocks_lowest_first() {
    let m = mem(3 * 1024 + 512 + 3);
    assert_eq!(m.free_blocks(Order(10)), 3);
    assert_eq!(m.free_blocks(Order(9)), 1);
    assert_eq!(m.free_blocks_by_order()[..2], [1, 1]);
    assert_eq!(m.frames_free(), m.frames_total());
    assert_eq!(
        m.view().first(Order(10), MigrateType::Movable),
        Some(Pfn(0))
    );
    assert!(
        !m.frame(Pfn(5)).unwrap().is_zeroed(),
        "boot memory is dirty"
    );
}

#[test]
fn linux_4_1s_boot_order_allocates_the_highest_addresses_first() {
    let mut m = mem(4 * 1024);
    m.queue_boot_memory_highest_first().unwrap();
    assert_eq!(m.free_blocks(Order(10)), 4);
    let list: Vec<u32> = m.areas[0]
        .iter(&m.frames, 10, MigrateType::Movable)
        .collect();
    assert_eq!(list, vec![3072, 2048, 1024, 0]);
    // The highest block is split, and its low half is taken (`expand`), as in 4.1.
    let b = m.alloc(&AllocRequest::new(Order(0))).unwrap();
    assert_eq!(b.pfn, Pfn(3072));
    let b = m.alloc(&AllocRequest::new(Order(10))).unwrap();
    assert_eq!(b.pfn, Pfn(2048), "then the next highest whole block");
    // Only at boot.
    let e = m.queue_boot_memory_highest_first().unwrap_err();
    assert!(
        e.to_string().contains("before any frame is allocated"),
        "{e}"
    );
}

#[test]
fn allocation_splits_the_smallest_block_and_keeps_the_low_half() {
    let mut m = mem(1024);
    let b = m.alloc(&AllocRequest::new(Order(0))).unwrap();
    assert_eq!(
        b,
        Block {
            pfn: Pfn(0),
            order: Order(0),
            zeroed: false
        }
    );
    for o in 0..10 {
        assert_eq!(m.free_blocks(Order(o)), 1, "order {o}");
    }
    let b9 = m.alloc(&AllocRequest::new(Order(9))).unwrap();
    assert_eq!(b9.pfn, Pfn(512));
}

#[test]
fn freeing_merges_buddies_maximally() {
    let mut m = mem(1024);
    let blocks: Vec<_> = (0..1024)
        .map(|_| m.alloc(&AllocRequest::new(Order(0))).unwrap())
        .collect();
    assert_eq!(m.frames_free(), 0);
    for b in blocks.iter().rev() {
        m.free(b.pfn, Order(0)).unwrap();
    }
    assert_eq!(m.free_blocks(Order(10)), 1);
    assert_eq!(m.free_blocks_by_order().iter().sum::<u64>(), 1);
}

#[test]
fn bad_frees_are_errors_not_panics() {
    let mut m = mem(1024);
    assert!(matches!(
        m.free(Pfn(0), Order(0)),
        Err(MmError::BadFree { .. })
    ));
    assert!(matches!(
        m.free(Pfn(1 << 40), Order(0)),
        Err(MmError::BadFree { .. })
    ));
    let b = m.alloc(&AllocRequest::new(Order(2))).unwrap();
    assert!(m.free(b.pfn, Order(1)).is_err());
    assert!(m.free(Pfn(b.pfn.0 + 1), Order(0)).is_err());
    m.free(b.pfn, Order(2)).unwrap();
    assert!(m.free(b.pfn, Order(2)).is_err(), "double free");
    assert!(m.alloc(&AllocRequest::new(Order(11))).is_err());
}

#[test]
fn freed_frames_are_dirty_and_zeroed_frames_are_reported() {
    let mut m = mem(1024);
    // Zeroed as free memory must be (marking free frames directly would skip the free
    // area's count of zeroed frames, which debug builds catch as an underflow).
    m.prezero(1024, PrezeroScope::AllOrders);
    let b = m.alloc(&AllocRequest::new(Order(9))).unwrap();
    assert!(b.zeroed);
    m.free(b.pfn, b.order).unwrap();
    assert!(!m.frame(Pfn(3)).unwrap().is_zeroed());
}

#[test]
fn compound_blocks_split_into_order_zero_frames_with_rmaps() {
    let mut m = mem(1024);
    let b = m.alloc(&AllocRequest::new(Order(9))).unwrap();
    m.map_frames(b.pfn, 512, Pid(3), Vpn(1000));
    m.split_compound(b.pfn).unwrap();
    let f = m.frame(Pfn(b.pfn.0 + 7)).unwrap();
    assert_eq!(
        f.state(),
        FrameState::Allocated {
            order: Order(0),
            owner: OwnerKind::Anon
        }
    );
    assert_eq!(f.rmap(), Some((Pid(3), Vpn(1007))));
    for i in 0..512 {
        m.free(Pfn(b.pfn.0 + i), Order(0)).unwrap();
    }
    assert_eq!(m.free_blocks(Order(10)), 1);
}

#[test]
fn free_blocks_at_least_counts_in_units_of_the_order() {
    let mut m = mem(2048 + 512);
    assert_eq!(m.free_blocks_at_least(Order(9)), 5);
    m.alloc(&AllocRequest::new(Order(0))).unwrap();
    assert_eq!(m.free_blocks_at_least(Order(9)), 4);
}

#[test]
fn a_tiny_geometry_works_too() {
    let g = Geometry {
        base_shift: 12,
        level_bits: 3,
        levels: 4,
        max_order: 4,
    };
    let mut m = PhysMem::new(40, g).unwrap();
    assert_eq!(m.pageblock_order(), Order(3));
    assert_eq!(m.free_blocks(Order(4)), 2);
    assert_eq!(m.free_blocks(Order(3)), 1);
    let b = m.alloc(&AllocRequest::new(Order(3))).unwrap();
    assert_eq!(b.pfn, Pfn(32));
}

#[test]
fn invalid_machines_are_refused() {
    assert!(PhysMem::new(0, Geometry::X86_64).is_err());
    assert!(PhysMem::new(1 << 32, Geometry::X86_64).is_err());
    let g = Geometry {
        max_order: 8,
        ..Geometry::X86_64
    };
    assert!(PhysMem::new(1024, g).is_err());
}

/// Found by the property test: a zeroed buddy merged as the lower half of a step in the
/// middle of a merge chain kept its bit inside the dirty merged block, and a later split
/// made it the head of a "zeroed" block holding dirty frames.
#[test]
fn a_zeroed_buddy_merged_mid_chain_is_not_zeroed_when_split_out_again() {
    let mut m = mem(8);
    let blocks: Vec<Block> = (0..8)
        .map(|_| m.alloc(&AllocRequest::new(Order(0))).unwrap())
        .collect();
    // Free 0..4 (a dirty order-2 block at 0) and 4, 5, 7; zero the order-1 block at 4.
    for b in [0, 1, 2, 3, 4, 5, 7] {
        m.free(blocks[b].pfn, Order(0)).unwrap();
    }
    assert_eq!(
        m.prezero(2, PrezeroScope::AllOrders),
        vec![(Pfn(4), Order(1))]
    );
    // Freeing 6 merges with 7, then with the zeroed block at 4, then with the block at 0.
    m.free(blocks[6].pfn, Order(0)).unwrap();
    assert_eq!(m.free_blocks(Order(3)), 1);
    // An order-0 request splits it: the order-2 half at 4 holds dirty 6 and 7.
    let b = m.alloc(&AllocRequest::new(Order(0))).unwrap();
    assert_eq!(b.pfn, Pfn(0));
    assert_eq!(
        m.frame(Pfn(4)).unwrap().state(),
        FrameState::FreeHead {
            order: Order(2),
            migrate: MigrateType::Movable
        }
    );
    assert!(
        !m.frame(Pfn(4)).unwrap().is_zeroed(),
        "a zeroed head over dirty frames"
    );
    assert_eq!(m.zeroed_free_frames(), 0);
    m.check_counters().unwrap();
}

#[test]
fn allocation_fills_the_preferred_node_first_and_frees_to_the_owning_node() {
    use crate::phys::node::{NodeId, NodePref};
    let mut m = PhysMem::with_nodes(&[1024, 2048], Geometry::X86_64).unwrap();
    assert_eq!(m.node_count(), 2);
    assert_eq!(m.node_frames(NodeId(1)), Some((Pfn(1024), Pfn(3072))));
    let req = AllocRequest::new(Order(9));
    let a = m.alloc(&req).unwrap();
    let b = m.alloc(&req).unwrap();
    assert_eq!((m.node_of(a.pfn), m.node_of(b.pfn)), (NodeId(0), NodeId(0)));
    let c = m.alloc(&req).unwrap();
    assert_eq!(m.node_of(c.pfn), NodeId(1), "node 0 full: the next node");
    assert_eq!(m.node_frames_free(NodeId(0)), 0);
    m.free(a.pfn, a.order).unwrap();
    assert_eq!(m.node_frames_free(NodeId(0)), 512);
    let only = req.node(NodePref::Only(NodeId(1)));
    let d = m.alloc(&only).unwrap();
    assert_eq!(m.node_of(d.pfn), NodeId(1), "Only never leaves its node");
    let far_first = req.node(NodePref::Prefer(NodeId(1)));
    let e = m.alloc(&far_first).unwrap();
    assert_eq!(m.node_of(e.pfn), NodeId(1));
    // Node 1 now has 512 frames left; Only(1) takes them, then fails though node 0 has
    // free frames.
    m.alloc(&only).unwrap();
    assert_eq!(m.alloc(&only), Err(MmError::OutOfMemory));
    assert_eq!(m.frames_free(), 512);
    assert!(m.alloc(&AllocRequest::new(Order(10))).is_err());
    assert_eq!(
        m.alloc(&req.node(NodePref::Only(NodeId(2)))),
        Err(MmError::OutOfMemory)
    );
    m.check_counters().unwrap();
}

/// All 1,024 frames allocated, then frames 2 and 3 freed (a free order-1 block), then
/// frame 8 and frame 0: frame 0's order-1 parent has a free buddy (2-3), so a merge is
/// likely. Returns the order-0 free list, head first, and the frame the next order-0
/// allocation takes.
fn free_next_to_a_free_buddy(merge_likely: bool) -> (Vec<u32>, Pfn, PhysMem) {
    let mut m = mem(1024);
    m.set_buddy_merge_likely(merge_likely);
    for _ in 0..1024 {
        m.alloc(&AllocRequest::new(Order(0))).unwrap();
    }
    for pfn in [2, 3, 8, 0] {
        m.free(Pfn(pfn), Order(0)).unwrap();
    }
    let list = m.areas[0]
        .iter(&m.frames, 0, MigrateType::Movable)
        .collect();
    let next = m.alloc(&AllocRequest::new(Order(0))).unwrap().pfn;
    (list, next, m)
}

#[test]
fn a_block_likely_to_merge_is_freed_to_the_tail_and_allocated_last() {
    // Linux (`__free_one_page`): frame 0 goes behind frame 8, so 8 is allocated first
    // and 0 is still free when frame 1 comes back: 0-3 merge into an order-2 block.
    let (list, next, mut m) = free_next_to_a_free_buddy(true);
    assert_eq!(list, vec![8, 0]);
    assert_eq!(next, Pfn(8));
    m.free(Pfn(1), Order(0)).unwrap();
    assert_eq!(m.free_blocks(Order(2)), 1, "0-3 merged");
    // Every block at the head, as the model did before: 0 is taken first.
    let (list, next, mut m) = free_next_to_a_free_buddy(false);
    assert_eq!(list, vec![0, 8]);
    assert_eq!(next, Pfn(0));
    m.free(Pfn(1), Order(0)).unwrap();
    assert_eq!(
        m.free_blocks(Order(2)),
        0,
        "frame 0 is taken, nothing merges"
    );
}

#[test]
fn no_tail_placement_at_the_top_two_orders() {
    // Linux tests `order < MAX_ORDER - 2`, so an order-9 block (max_order - 1) goes to the
    // head even when the order-10 block that would merge with its parent is free.
    let mut m = mem(4096);
    m.set_buddy_merge_likely(true);
    for _ in 0..8 {
        m.alloc(&AllocRequest::new(Order(9))).unwrap();
    }
    for pfn in [1024, 1536, 3072, 512] {
        m.free(Pfn(pfn), Order(9)).unwrap();
    }
    assert_eq!(m.free_blocks(Order(10)), 1, "1024-2047 merged");
    let list: Vec<u32> = m.areas[0]
        .iter(&m.frames, 9, MigrateType::Movable)
        .collect();
    assert_eq!(
        list,
        vec![512, 3072],
        "512 at the head although 1024-2047 is free"
    );
}

/// 8 pageblocks (4 order-10 blocks) with Linux 4.1's reserve of 2 pageblocks.
fn mem_with_reserve() -> PhysMem {
    let mut m = mem(4096);
    m.set_migrate_reserve(2).unwrap();
    m
}

fn req(order: u8, mt: MigrateType) -> AllocRequest {
    AllocRequest::new(Order(order)).migrate(mt)
}

#[test]
fn the_reserve_is_the_first_pageblocks_and_its_free_frames_stay_off_the_other_lists() {
    let m = mem_with_reserve();
    assert_eq!(m.migrate_reserve(), 2);
    assert_eq!(m.pageblocks(MigrateType::Reserve), 2);
    assert_eq!(m.pageblocks(MigrateType::Movable), 6);
    assert_eq!(m.pageblock_type(Pfn(0)), Some(MigrateType::Reserve));
    assert_eq!(m.pageblock_type(Pfn(512)), Some(MigrateType::Reserve));
    assert_eq!(m.pageblock_type(Pfn(1024)), Some(MigrateType::Movable));
    assert_eq!(m.free_frames(MigrateType::Reserve), 1024);
    assert_eq!(m.free_frames(MigrateType::Movable), 3072);
    assert_eq!(
        m.frames_free(),
        4096,
        "the reserve's frames are free frames"
    );
    m.check_counters().unwrap();
}

#[test]
fn requests_take_the_reserve_only_when_their_lists_and_fallbacks_are_empty() {
    let mut m = mem_with_reserve();
    // Movable requests use the three Movable order-10 blocks and never the reserve.
    let movable: Vec<Block> = (0..3)
        .map(|_| m.alloc(&req(10, MigrateType::Movable)).unwrap())
        .collect();
    assert!(movable.iter().all(|b| b.pfn.0 >= 1024));
    assert_eq!(m.free_frames(MigrateType::Reserve), 1024);
    // Nothing left on any other list: a kernel request falls back to nothing, and takes
    // the reserve rather than fail, without counting a fallback.
    let fallbacks = m.fallback_stats().fallbacks;
    let k = m.alloc(&req(0, MigrateType::Unmovable)).unwrap();
    assert!(k.pfn.0 < 1024, "from the reserve: {:?}", k.pfn);
    assert_eq!(m.fallback_stats().fallbacks, fallbacks);
    assert_eq!(
        m.pageblock_type(k.pfn),
        Some(MigrateType::Reserve),
        "taking from the reserve claims nothing"
    );
    // Its split halves stay on the reserve's lists, and a freed frame goes back there.
    assert_eq!(m.free_frames(MigrateType::Reserve), 1023);
    assert_eq!(m.free_frames(MigrateType::Unmovable), 0);
    m.free(k.pfn, k.order).unwrap();
    assert_eq!(m.free_frames(MigrateType::Reserve), 1024);
    assert_eq!(
        m.free_blocks_of(Order(10), MigrateType::Reserve),
        1,
        "merged back whole"
    );
    // A frame freed in a Movable pageblock goes to the Movable lists, as before.
    m.free(movable[0].pfn, movable[0].order).unwrap();
    assert_eq!(m.free_frames(MigrateType::Movable), 1024);
    m.check_counters().unwrap();
}

#[test]
fn fallbacks_take_other_types_lists_before_the_reserve() {
    let mut m = mem_with_reserve();
    let k = m.alloc(&req(0, MigrateType::Unmovable)).unwrap();
    assert!(k.pfn.0 >= 1024, "a fallback to Movable, not the reserve");
    assert_eq!(m.fallback_stats().fallbacks, 1);
    assert_eq!(m.free_frames(MigrateType::Reserve), 1024);
    // Without a reserve the same request takes the lowest block.
    let mut plain = mem(4096);
    assert_eq!(
        plain.alloc(&req(0, MigrateType::Unmovable)).unwrap().pfn,
        Pfn(0)
    );
}

#[test]
fn the_reserve_is_set_up_once_before_allocation_and_is_no_requests_type() {
    let mut m = mem(4096);
    m.alloc(&AllocRequest::new(Order(0))).unwrap();
    let e = m.set_migrate_reserve(2).unwrap_err();
    assert!(
        e.to_string().contains("before any frame is allocated"),
        "{e}"
    );
    let mut m = mem_with_reserve();
    assert!(m.set_migrate_reserve(1).is_err(), "only once");
    let e = m.alloc(&req(0, MigrateType::Reserve)).unwrap_err();
    assert!(e.to_string().contains("reserve"), "{e}");
}

#[test]
fn a_freed_reserve_frame_goes_by_the_movable_per_cpu_list_back_to_the_reserve() {
    use crate::phys::pcp::{PcpConfig, PcpDrain};
    let mut m = mem_with_reserve();
    m.enable_per_cpu_lists(PcpConfig {
        cpus: 1,
        batch: 4,
        high: 1024,
        max_order: 0,
        drain: PcpDrain::Linux41,
    });
    for _ in 0..3 {
        m.alloc(&req(10, MigrateType::Movable)).unwrap();
    }
    // A refill from an empty zone but for the reserve: the reserve lends its frames.
    let a = m.alloc(&req(0, MigrateType::Movable)).unwrap();
    assert_eq!(m.pageblock_type(a.pfn), Some(MigrateType::Reserve));
    m.free(a.pfn, a.order).unwrap();
    let b = m.alloc(&req(0, MigrateType::Movable)).unwrap();
    assert_eq!(
        b.pfn, a.pfn,
        "reused from the Movable per-CPU list, as 4.1 lists it"
    );
    m.free(b.pfn, b.order).unwrap();
    m.drain_per_cpu_lists().unwrap();
    assert_eq!(
        m.free_frames(MigrateType::Reserve),
        1024,
        "all back on the reserve"
    );
    assert_eq!(m.free_frames(MigrateType::Movable), 0);
    m.check_counters().unwrap();
}
