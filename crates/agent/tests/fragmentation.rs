//! buddyinfo and pagetypeinfo of the capturing host: free blocks per order, per migrate
//! type, pageblocks per type, and the free huge pages they hold.

mod common;

use common::{data, text};
use hugemm_agent::observe::buddyinfo::BuddyInfo;
use hugemm_agent::observe::pagetypeinfo::PageTypeInfo;
use hugemm_agent::observe::zone::{HostMigrateType, Zone};
use hugemm_agent::Order;
use hugemm_mm::NodeId;

const HUGE: Order = Order(9);

#[test]
fn buddyinfo_lists_each_zone_with_eleven_orders() {
    let b = BuddyInfo::read_path(&data("buddyinfo")).unwrap();
    let zones: Vec<_> = b.zones.iter().map(|z| (z.node, z.zone)).collect();
    assert_eq!(
        zones,
        [
            (NodeId(0), Zone::Dma),
            (NodeId(0), Zone::Dma32),
            (NodeId(0), Zone::Normal)
        ]
    );
    let normal = &b.zone(NodeId(0), Zone::Normal).unwrap().free;
    assert_eq!(
        normal.counts(),
        [91, 18, 3, 6932, 7152, 2479, 956, 473, 221, 293, 296]
    );
    assert_eq!(normal.at(Order(10)), Some(296));
    assert_eq!(normal.at(Order(11)), None);
    assert!(!normal.capped());
}

#[test]
fn buddyinfo_counts_free_huge_pages_in_blocks_of_order_nine_and_up() {
    let b = BuddyInfo::read_path(&data("buddyinfo")).unwrap();
    let per_zone: Vec<_> = b.zones.iter().map(|z| z.free.huge_blocks(HUGE)).collect();
    // DMA 1 + 2*3, DMA32 2 + 2*752, Normal 293 + 2*296.
    assert_eq!(per_zone, [7, 1506, 885]);
    assert_eq!(b.free_huge_blocks(HUGE), 2398);
    assert_eq!(b.free_huge_blocks(Order(10)), 3 + 752 + 296);
}

#[test]
fn pagetypeinfo_splits_free_blocks_by_migrate_type() {
    let p = PageTypeInfo::read_path(&data("pagetypeinfo")).unwrap();
    assert_eq!(p.pageblock_order, Order(9));
    assert_eq!(p.free.len(), 15, "three zones, five types");
    let unmovable = p
        .free
        .iter()
        .find(|f| f.zone == Zone::Normal && f.migrate_type == HostMigrateType::Unmovable)
        .unwrap();
    assert_eq!(unmovable.free.counts(), [90, 17, 3, 4, 3, 0, 1, 0, 1, 0, 2]);
    assert_eq!(
        p.free_huge_blocks(HUGE, Some(HostMigrateType::Movable)),
        7 + 1506 + 881
    );
    assert_eq!(
        p.free_huge_blocks(HUGE, Some(HostMigrateType::Unmovable)),
        4
    );
    assert_eq!(
        p.free_huge_blocks(HUGE, Some(HostMigrateType::HighAtomic)),
        0
    );
}

#[test]
fn pagetypeinfo_and_buddyinfo_agree_on_free_huge_pages() {
    let b = BuddyInfo::read_path(&data("buddyinfo")).unwrap();
    let p = PageTypeInfo::read_path(&data("pagetypeinfo")).unwrap();
    assert_eq!(p.free_huge_blocks(HUGE, None), b.free_huge_blocks(HUGE));
}

#[test]
fn pagetypeinfo_counts_pageblocks_per_type() {
    let p = PageTypeInfo::read_path(&data("pagetypeinfo")).unwrap();
    let normal = p.blocks.iter().find(|z| z.zone == Zone::Normal).unwrap();
    assert_eq!(normal.of(HostMigrateType::Unmovable), 112);
    assert_eq!(normal.of(HostMigrateType::Movable), 2645);
    assert_eq!(
        normal.of(HostMigrateType::Cma),
        0,
        "no CMA column on this host"
    );
    assert_eq!(p.pageblocks(HostMigrateType::Movable), 7 + 1528 + 2645);
    assert_eq!(p.pageblocks(HostMigrateType::Reclaimable), 123);
    assert!(p.mixed_blocks.is_empty(), "page_owner is off");
    assert_eq!(
        HostMigrateType::Movable.model(),
        Some(hugemm_mm::MigrateType::Movable)
    );
}

#[test]
fn a_capped_count_is_a_lower_bound() {
    let capped = text("pagetypeinfo").replace(
        "Movable      0      1      0   6927",
        "Movable      0      1      0 >100000",
    );
    let p = PageTypeInfo::parse(&data("pagetypeinfo"), &capped).unwrap();
    let movable = p
        .free
        .iter()
        .find(|f| f.zone == Zone::Normal && f.migrate_type == HostMigrateType::Movable)
        .unwrap();
    assert!(movable.free.capped());
    assert_eq!(movable.free.at(Order(3)), Some(100_000));
}

#[test]
fn a_second_node_section_and_a_mixed_table_are_read() {
    let mut two = text("pagetypeinfo");
    two.push_str(
        &text("pagetypeinfo")
            .replace("Node    0", "Node    1")
            .replace("Node 0", "Node 1"),
    );
    two.push_str("\nNumber of mixed blocks     Unmovable      Movable  Reclaimable");
    two.push_str("   HighAtomic      Isolate \n");
    two.push_str(
        "Node 1, zone   Normal            3            5            0            0            0 \n",
    );
    let p = PageTypeInfo::parse(&data("pagetypeinfo"), &two).unwrap();
    assert_eq!(p.free.len(), 30);
    assert_eq!(p.blocks.len(), 6);
    assert_eq!(p.blocks[3].node, NodeId(1));
    assert_eq!(p.mixed_blocks.len(), 1);
    assert_eq!(p.mixed_blocks[0].of(HostMigrateType::Movable), 5);
}
