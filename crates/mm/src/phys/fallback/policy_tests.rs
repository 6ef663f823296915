//! Each policy's defining choice on small hand-built machines, and every policy through
//! the conformance suite.

use super::*;
use crate::phys::buddy::{AllocRequest, Block, PhysMem};
use crate::phys::frame::OwnerKind;
use hugemm_hw::Geometry;

fn mem(frames: u64) -> PhysMem {
    PhysMem::new(frames, Geometry::X86_64).unwrap()
}

fn kernel_page() -> AllocRequest {
    AllocRequest::new(Order(0))
        .migrate(MigrateType::Unmovable)
        .owner(OwnerKind::KernelUnmovable)
}

fn user_page() -> AllocRequest {
    AllocRequest::new(Order(0))
}

/// A full machine of user pages, with `free` (first frame, order) blocks given back:
/// every free block is on the movable lists.
fn carved(frames: u64, free: &[(u64, u8)]) -> PhysMem {
    let mut m = mem(frames);
    let blocks: Vec<Block> = (0..frames)
        .map(|_| m.alloc(&user_page()).unwrap())
        .collect();
    assert!(blocks.iter().enumerate().all(|(i, b)| b.pfn.0 == i as u64));
    for &(pfn, order) in free {
        for f in pfn..pfn + (1 << order) {
            m.free(Pfn(f), Order(0)).unwrap();
        }
    }
    m
}

/// Pageblock 1 holds one free order-5 block (32 frames); pageblock 3 holds 200 free
/// frames, every other one, so none merge.
fn opbs_machine() -> PhysMem {
    let mut free = vec![(512 + 64, 5)];
    free.extend((0..200).map(|i| (1536 + 2 * i, 0)));
    carved(4096, &free)
}

fn pageblock_of(pfn: Pfn) -> u64 {
    pfn.0 >> 9
}

macro_rules! conformance_test {
    ($test:ident, $name:literal) => {
        #[test]
        fn $test() {
            conformance::run(|| build($name, 11).unwrap());
        }
    };
}

conformance_test!(opbs_passes_the_conformance_suite, "opbs");
conformance_test!(aaf_passes_the_conformance_suite, "aaf");
conformance_test!(rpbs_passes_the_conformance_suite, "rpbs");
conformance_test!(apbs_passes_the_conformance_suite, "apbs");
conformance_test!(kml_passes_the_conformance_suite, "kml");
conformance_test!(kmu_passes_the_conformance_suite, "kmu");
conformance_test!(claim_first_passes_the_conformance_suite, "claim-first");

#[test]
fn the_counters_see_the_carved_machine() {
    let m = opbs_machine();
    let v = m.view();
    assert_eq!(v.pageblock_free(Pfn(512)), 32);
    assert_eq!(v.pageblock_free(Pfn(1536)), 200);
    assert_eq!(
        v.pageblock_top_order(Pfn(512), MigrateType::Movable),
        Some(Order(5))
    );
    assert_eq!(
        v.pageblock_top_order(Pfn(1536), MigrateType::Movable),
        Some(Order(0))
    );
    assert_eq!(v.pageblock_top_order(Pfn(0), MigrateType::Movable), None);
    m.check_counters().unwrap();
}

#[test]
fn opbs_picks_the_pageblock_with_most_free_pages_where_linux_takes_the_list_head() {
    let m = opbs_machine();
    let linux = LinuxDefault
        .choose(&m.view(), Order(0), MigrateType::Unmovable)
        .unwrap();
    assert_eq!(linux.block, Pfn(512 + 64), "Linux: the highest-order block");
    let opbs = Opbs
        .choose(&m.view(), Order(0), MigrateType::Unmovable)
        .unwrap();
    assert_eq!(opbs.block, Pfn(1536), "OPBS: pageblock 3, 200 free frames");
    assert!(opbs.whole_block && !opbs.evacuate);
    assert_eq!(opbs.scanned, 8, "one pass over the eight pageblocks");
}

#[test]
fn opbs_steals_every_free_page_of_its_pageblock_and_claims_by_linux_rule() {
    let mut m = opbs_machine();
    m.set_fallback_policy(Box::new(Opbs));
    let b = m.alloc(&kernel_page()).unwrap();
    assert_eq!(pageblock_of(b.pfn), 3);
    // 200 free < 256: stolen, not claimed.
    assert_eq!(m.pageblock_type(b.pfn), Some(MigrateType::Movable));
    assert_eq!(m.free_frames(MigrateType::Unmovable), 199);
    let s = m.fallback_stats();
    assert_eq!(
        (s.fallbacks, s.pageblocks_claimed, s.stolen_without_claim),
        (1, 0, 1)
    );
    assert_eq!(s.pageblocks_scanned, 8);
    m.check_counters().unwrap();
}

#[test]
fn opbs_keeps_linux_pick_when_it_reserves_a_whole_pageblock() {
    let m = carved(4096, &[(1024, 9), (1536, 0)]);
    let c = Opbs
        .choose(&m.view(), Order(0), MigrateType::Unmovable)
        .unwrap();
    assert_eq!(c, FallbackChoice::new(Pfn(1024), true), "nothing scanned");
}

#[test]
fn aaf_always_claims_and_queues_an_evacuation() {
    let mut m = carved(1024, &[(512 + 7, 0), (512 + 100, 0)]);
    m.set_fallback_policy(Box::new(Aaf));
    let b = m.alloc(&kernel_page()).unwrap();
    assert_eq!(pageblock_of(b.pfn), 1);
    assert_eq!(
        m.pageblock_type(b.pfn),
        Some(MigrateType::Unmovable),
        "claimed with 2 free"
    );
    assert_eq!(m.take_evacuations(), vec![Pfn(512)]);
    assert!(m.take_evacuations().is_empty(), "the queue drains");
    let s = m.fallback_stats();
    assert_eq!((s.pageblocks_claimed, s.evacuations_requested), (1, 1));
}

#[test]
fn linux_leaves_the_same_pageblock_unclaimed_and_evacuates_nothing() {
    let mut m = carved(1024, &[(512 + 7, 0), (512 + 100, 0)]);
    let b = m.alloc(&kernel_page()).unwrap();
    assert_eq!(m.pageblock_type(b.pfn), Some(MigrateType::Movable));
    assert!(m.take_evacuations().is_empty());
    assert_eq!(m.fallback_stats().stolen_without_claim, 1);
}

#[test]
fn aaf_queues_nothing_for_an_already_free_pageblock() {
    let mut m = mem(2048);
    m.set_fallback_policy(Box::new(Aaf));
    m.alloc(&kernel_page()).unwrap();
    assert!(m.take_evacuations().is_empty());
    assert_eq!(
        m.fallback_stats().pageblocks_claimed,
        2,
        "an order-10 block"
    );
}

#[test]
fn aaf_leaves_movable_requests_to_linux() {
    let m = opbs_machine();
    let view = m.view();
    let aaf = Aaf.choose(&view, Order(0), MigrateType::Movable);
    assert_eq!(
        aaf,
        LinuxDefault.choose(&view, Order(0), MigrateType::Movable)
    );
}

#[test]
fn apbs_levels_follow_the_order_found() {
    let pb = Order(9);
    let levels: Vec<Level> = (0..=10).map(|o| Level::of(Order(o), pb)).collect();
    use Level::*;
    let expect = [
        Critical, Critical, Critical, Critical, High, High, High, Medium, Medium, Low, Low,
    ];
    assert_eq!(levels, expect);
}

#[test]
fn apbs_takes_linux_pick_at_the_low_level() {
    let m = carved(4096, &[(1024, 9), (1536, 0)]);
    let mut apbs = Apbs::new(3);
    let c = apbs
        .choose(&m.view(), Order(0), MigrateType::Unmovable)
        .unwrap();
    assert_eq!(c, FallbackChoice::new(Pfn(1024), true));
    assert_eq!(apbs.levels_seen(), [1, 0, 0, 0]);
}

#[test]
fn apbs_takes_the_best_of_four_random_top_order_blocks_at_the_medium_level() {
    // The top order is 7: one block in pageblock 1 (128 free frames there), one in
    // pageblock 2 with 100 single frames beside it (228). Pageblock 3 has 200 single free
    // frames but no order-7 block, so it is not on the list the medium level draws from.
    let mut free = vec![(512 + 128, 7), (1024 + 256, 7)];
    free.extend((0..100).map(|i| (1024 + 2 * i, 0)));
    free.extend((0..200).map(|i| (1536 + 2 * i, 0)));
    let m = carved(4096, &free);
    let mut picked = [0u32; 4];
    for seed in 1..=16 {
        let mut apbs = Apbs::new(seed);
        let c = apbs
            .choose(&m.view(), Order(0), MigrateType::Unmovable)
            .unwrap();
        assert_eq!(apbs.levels_seen(), [0, 1, 0, 0]);
        assert!(!c.evacuate);
        assert!(c.scanned >= 4, "four list entries drawn");
        picked[pageblock_of(c.block) as usize] += 1;
    }
    assert_eq!(picked[3], 0, "never a pageblock without an order-7 block");
    assert!(
        picked[2] > picked[1],
        "the best of four draws from two blocks is mostly the better one: {picked:?}"
    );
}

#[test]
fn apbs_uses_aaf_at_the_high_level() {
    let m = opbs_machine(); // top block order 5
    let mut apbs = Apbs::new(3);
    let c = apbs
        .choose(&m.view(), Order(0), MigrateType::Unmovable)
        .unwrap();
    assert_eq!(apbs.levels_seen(), [0, 0, 1, 0]);
    assert_eq!(
        c,
        FallbackChoice::new(Pfn(512 + 64), true).with_evacuation()
    );
}

#[test]
fn apbs_uses_rpbs_at_the_critical_level() {
    // Only single frames are free: pageblock 2 has 5, pageblock 3 has 200.
    let mut free: Vec<(u64, u8)> = (0..5).map(|i| (1024 + 2 * i, 0)).collect();
    free.extend((0..200).map(|i| (1536 + 2 * i, 0)));
    let m = carved(4096, &free);
    let mut apbs = Apbs::new(3);
    let c = apbs
        .choose(&m.view(), Order(0), MigrateType::Unmovable)
        .unwrap();
    assert_eq!(apbs.levels_seen(), [0, 0, 0, 1]);
    assert_eq!(
        pageblock_of(c.block),
        3,
        "the best of 64 draws over two pageblocks"
    );
    assert!(!c.evacuate);
}

#[test]
fn rpbs_takes_the_best_of_its_random_candidates() {
    let m = opbs_machine();
    let mut rpbs = Rpbs::new(9);
    let c = rpbs
        .choose(&m.view(), Order(0), MigrateType::Unmovable)
        .unwrap();
    assert_eq!(
        c.block,
        Pfn(1536),
        "pageblock 3 beats pageblock 1 among 64 draws"
    );
    assert!(c.scanned >= 64 && c.scanned <= 64 * 16);
}

#[test]
fn rpbs_with_the_same_seed_draws_the_same() {
    let mut free: Vec<(u64, u8)> = (0..100).map(|i| (2 * i, 0)).collect();
    free.extend((0..8).flat_map(|pb| (0..pb * 10).map(move |i| (pb * 512 + 2 * i + 1, 0))));
    let m = carved(4096, &free);
    let draw = |seed| {
        let mut p = Rpbs::new(seed);
        (0..5)
            .map(|_| p.choose(&m.view(), Order(0), MigrateType::Unmovable))
            .collect::<Vec<_>>()
    };
    assert_eq!(draw(5), draw(5));
}

#[test]
fn kml_places_kernel_pages_lowest_and_user_pages_highest() {
    let mut m = mem(4096 + 300);
    m.set_fallback_policy(build("kml", 0).unwrap());
    for i in 0..100u64 {
        assert_eq!(m.alloc(&kernel_page()).unwrap().pfn, Pfn(i));
        assert_eq!(m.alloc(&user_page()).unwrap().pfn, Pfn(4395 - i));
    }
    m.free(Pfn(50), Order(0)).unwrap();
    m.free(Pfn(10), Order(0)).unwrap();
    assert_eq!(
        m.alloc(&kernel_page()).unwrap().pfn,
        Pfn(10),
        "the lowest hole first"
    );
    let big = AllocRequest::new(Order(3))
        .migrate(MigrateType::Reclaimable)
        .owner(OwnerKind::KernelReclaimable);
    assert_eq!(
        m.alloc(&big).unwrap().pfn,
        Pfn(104),
        "reclaimable pages low too"
    );
    m.check_counters().unwrap();
}

#[test]
fn kmu_places_kernel_pages_highest_and_user_pages_lowest() {
    let mut m = mem(4096);
    m.set_fallback_policy(build("kmu", 0).unwrap());
    for i in 0..100u64 {
        assert_eq!(m.alloc(&kernel_page()).unwrap().pfn, Pfn(4095 - i));
        assert_eq!(m.alloc(&user_page()).unwrap().pfn, Pfn(i));
    }
    let big = AllocRequest::new(Order(2))
        .migrate(MigrateType::Unmovable)
        .owner(OwnerKind::KernelUnmovable);
    assert_eq!(
        m.alloc(&big).unwrap().pfn,
        Pfn(3992),
        "split keeping the top part"
    );
    m.check_counters().unwrap();
}

#[test]
fn kml_falls_back_to_the_lowest_pageblock() {
    // Kernel lists empty; movable free blocks in pageblocks 1 (order 5) and 3 (order 0).
    let mut m = opbs_machine();
    m.set_fallback_policy(Box::new(KernelLayout::kml()));
    assert_eq!(m.alloc(&kernel_page()).unwrap().pfn, Pfn(512 + 64));
    let mut m = opbs_machine();
    m.set_fallback_policy(Box::new(KernelLayout::kmu()));
    assert_eq!(m.alloc(&kernel_page()).unwrap().pfn, Pfn(1536 + 398));
    m.check_counters().unwrap();
}

/// On a machine of zones each zone has its own lists and its own address index: a request
/// served from a zone is placed at that zone's end, its fallback steals the zone's extreme
/// pageblock (before the index was per zone, the extreme of the whole machine was chosen,
/// a block on another zone's lists, and the allocation failed).
#[test]
fn kml_and_kmu_place_at_the_ends_of_the_zone_allocated_from() {
    for (name, kernel_end, user_end) in [("kml", 0, 4095), ("kmu", 4095, 0)] {
        let mut m = PhysMem::with_zones(&[4096, 4096, 4096], Geometry::X86_64).unwrap();
        m.set_fallback_policy(build(name, 0).unwrap());
        for zone in [1u64, 2, 0] {
            let base = zone * 4096;
            let kernel = m.alloc_in_zone(&kernel_page(), zone as usize).unwrap();
            let user = m.alloc_in_zone(&user_page(), zone as usize).unwrap();
            assert_eq!(
                (kernel.pfn, user.pfn),
                (Pfn(base + kernel_end), Pfn(base + user_end)),
                "{name}, zone {zone}"
            );
        }
        m.check_counters().unwrap();
    }
}

#[test]
fn switching_back_to_a_list_head_policy_drops_the_index() {
    let mut m = mem(2048);
    m.set_fallback_policy(Box::new(KernelLayout::kml()));
    assert!(m.view().has_address_index());
    m.alloc(&kernel_page()).unwrap();
    m.set_fallback_policy(Box::new(LinuxDefault));
    assert!(!m.view().has_address_index());
    m.set_fallback_policy(Box::new(KernelLayout::kmu()));
    m.check_counters().unwrap();
}

#[test]
fn the_counter_check_catches_drift() {
    let mut m = opbs_machine();
    m.check_counters().unwrap();
    m.counters.on_alloc(0, 0, OwnerKind::KernelUnmovable);
    assert!(
        m.check_counters().is_err(),
        "a pinned frame that is not allocated"
    );
    m.counters.on_free(0, 0, OwnerKind::KernelUnmovable);
    m.counters.on_push(0, 0, MigrateType::Reclaimable);
    assert!(
        m.check_counters().is_err(),
        "a listed block that is not free"
    );
}

#[test]
fn the_index_check_catches_drift() {
    let mut m = opbs_machine();
    m.set_fallback_policy(Box::new(KernelLayout::kml()));
    m.check_counters().unwrap();
    if let Some(index) = m.index.as_mut().map(|zones| &mut zones[0]) {
        index.remove(1536, 0, MigrateType::Movable);
        index.insert(1537, 0, MigrateType::Movable);
    }
    assert!(
        m.check_counters().is_err(),
        "an indexed frame that is allocated"
    );
}

/// Pageblock 1 holds one free order-7 block (128 frames: not half a pageblock);
/// pageblock 3 a free order-6 block and 200 more single free frames (264 free: claimable).
fn claim_machine() -> PhysMem {
    let mut free = vec![(512 + 128, 7), (1536, 6)];
    free.extend((0..200).map(|i| (1536 + 64 + 1 + 2 * i, 0)));
    carved(4096, &free)
}

#[test]
fn claim_first_skips_a_larger_block_it_cannot_claim_for_a_smaller_one_it_can() {
    let mut m = claim_machine();
    let linux = LinuxDefault
        .choose(&m.view(), Order(0), MigrateType::Unmovable)
        .unwrap();
    assert_eq!(linux.block, Pfn(512 + 128), "Linux 6.1: the largest block");
    m.set_fallback_policy(build("claim-first", 1).unwrap());
    let b = m.alloc(&kernel_page()).unwrap();
    assert_eq!(pageblock_of(b.pfn), 3);
    assert_eq!(m.pageblock_type(b.pfn), Some(MigrateType::Unmovable));
    assert_eq!(m.pageblock_type(Pfn(512)), Some(MigrateType::Movable));
    let s = m.fallback_stats();
    assert_eq!((s.pageblocks_claimed, s.stolen_without_claim), (1, 0));
    assert_eq!((s.events[0].order, s.events[0].claimed), (6, true));
    m.check_counters().unwrap();
}

#[test]
fn claim_first_steals_the_smallest_block_when_no_pageblock_can_be_claimed() {
    // Pageblock 1: a free order-7 block; pageblock 2: one free frame. Neither is claimable.
    let mut m = carved(4096, &[(512 + 128, 7), (1024 + 9, 0)]);
    m.set_fallback_policy(build("claim-first", 1).unwrap());
    let b = m.alloc(&kernel_page()).unwrap();
    assert_eq!(
        b.pfn,
        Pfn(1024 + 9),
        "the single free frame, not the order-7 block"
    );
    assert_eq!(m.pageblock_type(b.pfn), Some(MigrateType::Movable));
    assert_eq!(
        m.free_frames(MigrateType::Movable),
        128,
        "the other pageblock's free pages stay movable"
    );
    let s = m.fallback_stats();
    assert_eq!((s.pageblocks_claimed, s.stolen_without_claim), (0, 1));
}

#[test]
fn claim_first_never_claims_for_a_movable_request_below_half_a_pageblock() {
    // Both pageblocks unmovable and full, then every other frame of the second one freed:
    // 256 single free frames, half the pageblock, claimable by count.
    let mut m = mem(1024);
    let kernel: Vec<Block> = (0..1024)
        .map(|_| m.alloc(&kernel_page()).unwrap())
        .collect();
    for b in kernel[512..].iter().step_by(2) {
        m.free(b.pfn, Order(0)).unwrap();
    }
    let reclaimable = ClaimFirst
        .choose(&m.view(), Order(0), MigrateType::Reclaimable)
        .unwrap();
    assert!(
        reclaimable.whole_block,
        "a kernel request claims from any order"
    );
    let movable = ClaimFirst
        .choose(&m.view(), Order(0), MigrateType::Movable)
        .unwrap();
    assert!(
        !movable.whole_block,
        "a movable one only steals below order 4"
    );
    m.set_fallback_policy(Box::new(ClaimFirst));
    let b = m.alloc(&user_page()).unwrap();
    assert_eq!(m.pageblock_type(b.pfn), Some(MigrateType::Unmovable));
    assert_eq!(m.fallback_stats().stolen_without_claim, 1);
    // Watermark boosting: 6.15 boosts only when it tries a claim below a pageblock; the
    // kernel request tried one, the movable request none.
    assert_eq!(reclaimable.boosts, Some(true));
    assert_eq!(movable.boosts, Some(false));
    assert_eq!(m.take_boosting_fallbacks_for_test(), 0);
}

#[test]
fn linux_up_to_6_14_boosts_on_every_fallback_below_a_pageblock() {
    // A movable request stealing single frames from a full unmovable pageblock boosts
    // (5.0-6.14 boost before deciding whether to claim); one taking a whole free
    // pageblock of another type does not.
    let mut m = mem(1024);
    let kernel: Vec<Block> = (0..512).map(|_| m.alloc(&kernel_page()).unwrap()).collect();
    m.free(kernel[3].pfn, Order(0)).unwrap();
    let users: Vec<Block> = (0..512).map(|_| m.alloc(&user_page()).unwrap()).collect();
    assert!(
        users.iter().all(|b| b.pfn.0 >= 512),
        "the movable pageblock first"
    );
    assert_eq!(m.take_boosting_fallbacks_for_test(), 0, "no fallback yet");
    m.alloc(&user_page()).unwrap();
    assert_eq!(
        m.take_boosting_fallbacks_for_test(),
        1,
        "a steal below a pageblock"
    );
    let mut whole = mem(2048);
    whole.alloc(&kernel_page()).unwrap();
    assert_eq!(
        whole.take_boosting_fallbacks_for_test(),
        0,
        "a whole free pageblock claimed: no boost"
    );
}

/// Every policy under Linux 4.1's reserve: the conformance suite (no request fails while a
/// block fits, the reserve included; counters exact; buddies coalesce back), and no
/// fallback takes from the reserve or retypes its pageblocks.
#[test]
fn every_fallback_policy_passes_the_conformance_suite_with_4_1s_reserve() {
    for &name in crate::phys::fallback::NAMES {
        conformance::run_with_reserve(|| build(name, 11).unwrap());
    }
}
