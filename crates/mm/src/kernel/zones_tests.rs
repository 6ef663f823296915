//! Linux 4.1's zones in the allocation path (`pressure/zones.rs`, `Mem::alloc_zoned`).

use crate::kernel::{Kernel, MemConfig, PerCpuSizes};
use crate::pagecache::FileId;
use crate::pressure::kmem::KmemKind;
use crate::testutil::costs;
use hugemm_hw::{Geometry, Order, Pfn};

const MIB: u64 = 1 << 20;

/// DMA 16 MiB, DMA32 368 MiB, Normal 128 MiB: 512 MiB, `min_free_kbytes` 2,896.
fn zoned() -> Kernel {
    let cfg = MemConfig {
        bytes: 512 * MIB,
        geometry: Geometry::X86_64,
    };
    Kernel::with_zones(&cfg, &[16 * MIB, 368 * MIB, 128 * MIB], costs()).unwrap()
}

fn free(k: &Kernel) -> [u64; 3] {
    [0, 1, 2].map(|z| k.phys.zone_frames_free(z))
}

#[test]
fn the_fair_policy_spreads_allocations_over_the_zones_by_their_batches() {
    let mut k = zoned();
    let zones = k.zones().unwrap().clone();
    // Normal's batch is high - low of its share of min: 181 / 4 = 45 frames.
    let batch: Vec<u64> = zones.wmark.iter().map(|w| w.high - w.low).collect();
    assert_eq!(batch, vec![5, 130, 45]);
    let before = free(&k);
    let n = 16_384u64;
    for _ in 0..n {
        k.kmalloc(KmemKind::Unmovable, Order(0)).unwrap();
    }
    let after = free(&k);
    let round: u64 = batch.iter().sum();
    for z in 0..3 {
        let taken = before[z] - after[z];
        let share = n * batch[z] / round;
        assert!(
            taken.abs_diff(share) <= batch[z],
            "zone {z}: {taken} frames, its share {share} (batch {})",
            batch[z]
        );
    }
    assert_eq!(k.stats().kswapd_wakes, 0, "no zone is near low yet");
    k.check_invariants().unwrap();
}

#[test]
fn no_zone_goes_below_min_and_its_lowmem_reserve() {
    let mut k = zoned();
    let zones = k.zones().unwrap().clone();
    let floor: Vec<u64> = (0..3)
        .map(|z| zones.wmark[z].min + zones.lowmem_reserve[z][2])
        .collect();
    // DMA keeps (DMA32 + Normal) / 256 against Normal requests, DMA32 Normal / 256.
    assert_eq!(zones.lowmem_reserve[0][2], (94_208 + 32_768) / 256);
    assert_eq!(zones.lowmem_reserve[1][2], 32_768 / 256);
    let mut allocated = 0u64;
    while k.kmalloc(KmemKind::Unmovable, Order(0)).is_ok() {
        allocated += 1;
        let f = free(&k);
        for z in 0..3 {
            assert!(
                f[z] >= floor[z],
                "zone {z}: {} free, floor {}",
                f[z],
                floor[z]
            );
        }
    }
    // Nothing is reclaimable: the request fails at min, with the floors left free.
    let f = free(&k);
    for z in 0..3 {
        assert!(f[z] <= floor[z] + 1, "zone {z} was used down to its floor");
    }
    assert_eq!(allocated + f.iter().sum::<u64>(), 131_072);
    assert!(k.stats().kswapd_wakes > 0, "the slow path woke kswapd");
    assert_eq!(k.stats().pgsteal_kswapd, 0, "with nothing to reclaim");
    k.check_invariants().unwrap();
}

#[test]
fn kswapd_balances_each_zone_from_its_own_lru_lists_before_reclaim_is_direct() {
    let mut k = zoned();
    // Read a file of twice the memory: every zone fills with page cache and kswapd
    // keeps them all above min, so no request reclaims for itself.
    let pages = 2 * 131_072;
    let r = k.file_read(FileId(1), 0, pages);
    assert!(!r.oom);
    assert_eq!(r.inserted, pages);
    let s = *k.stats();
    assert!(s.kswapd_wakes > 0 && s.pgsteal_kswapd > 0);
    assert_eq!(s.allocstall, 0, "no direct reclaim: {s:?}");
    let zones = k.zones().unwrap().clone();
    let f = free(&k);
    for (z, free) in f.into_iter().enumerate() {
        assert!(free >= zones.wmark[z].min, "zone {z}: {free} free");
        assert!(k.cache.zone_pages(z) > 0, "zone {z} caches pages");
    }
    k.check_invariants().unwrap();
}

#[test]
fn each_zone_has_its_own_reserve_and_per_cpu_lists() {
    let mut k = zoned();
    k.set_watermark_scale_factor(0);
    // min: DMA 22, DMA32 520 (more than a pageblock), Normal 181.
    let mins: Vec<u64> = k.zones().unwrap().wmark.iter().map(|w| w.min).collect();
    assert_eq!(mins, vec![22, 520, 181]);
    assert_eq!(k.set_migrate_reserve().unwrap(), 1 + 2 + 1);
    k.enable_per_cpu_lists_as(PerCpuSizes::Linux4_1, 2);
    for z in 0..3 {
        let (start, _) = k.phys.zone_frames(z).unwrap();
        assert_eq!(
            k.phys.pageblock_type(start),
            Some(crate::MigrateType::Reserve),
            "zone {z} starts with its reserve"
        );
    }
    // A request served from a zone takes from (and refills) that zone's lists.
    for z in [2, 1, 0] {
        let req = crate::AllocRequest::new(Order(0));
        let b = k.phys.alloc_in_zone(&req, z).unwrap();
        assert_eq!(k.phys.zone_of(b.pfn), z);
    }
    assert!(k.phys.zone_of(Pfn(0)) == 0 && k.phys.frames_on_per_cpu_lists() > 0);
    k.phys.drain_per_cpu_lists().unwrap();
    assert_eq!(k.phys.frames_on_per_cpu_lists(), 0);
}

#[test]
fn zones_must_add_up_and_hold_whole_max_order_blocks() {
    let cfg = MemConfig {
        bytes: 512 * MIB,
        geometry: Geometry::X86_64,
    };
    assert!(Kernel::with_zones(&cfg, &[16 * MIB, 368 * MIB], costs()).is_err());
    assert!(Kernel::with_zones(&cfg, &[15 * MIB, 369 * MIB, 128 * MIB], costs()).is_err());
    // One zone is the machine without zones.
    let k = Kernel::with_zones(&cfg, &[512 * MIB], costs()).unwrap();
    assert!(k.zones().is_none());
}

#[test]
fn checked_requests_walk_the_zones_and_leave_each_its_floor() {
    use crate::pressure::zones::Mark;
    let mut k = zoned();
    let huge = crate::AllocRequest::new(Order(9))
        .migrate(crate::MigrateType::Movable)
        .owner(crate::OwnerKind::KernelUnmovable);
    let b = k.alloc_pages_checked(&huge, Mark::Low).unwrap().unwrap();
    assert_eq!(k.phys.zone_of(b.pfn), 2, "Normal first");
    while k.kmalloc(KmemKind::Unmovable, Order(0)).is_ok() {}
    // Every zone at its floor: DMA keeps its lowmem_reserve, which no request of a
    // Normal classzone may take, though its frames are free.
    let page = crate::AllocRequest::new(Order(0))
        .migrate(crate::MigrateType::Unmovable)
        .owner(crate::OwnerKind::KernelUnmovable);
    assert_eq!(k.alloc_pages_checked(&page, Mark::Min).unwrap(), None);
    assert!(k.phys.zone_frames_free(0) > k.zones().unwrap().lowmem_reserve[0][2]);
    k.check_invariants().unwrap();
}

#[test]
fn kswapd_on_its_own_thread_lets_zones_sit_below_low_until_its_steps_balance_them() {
    use crate::{KswapdMode, KswapdNext};
    let mut k = zoned();
    k.set_kswapd(KswapdMode::Async).unwrap();
    let zones = k.zones().unwrap().clone();
    // Fill memory with page cache until the slow path wakes kswapd.
    let mut page = 0;
    while !k.kswapd_woken() {
        let r = k.file_read(FileId(1), page, 1);
        assert!(!r.oom && r.inserted == 1);
        page += 1;
    }
    assert!(
        k.take_kswapd_wake() && !k.take_kswapd_wake(),
        "one wake, taken once"
    );
    assert_eq!(k.stats().kswapd_wakes, 1);
    assert_eq!(k.stats().pgsteal_kswapd, 0, "woken, but it has not run");
    // Allocations go on below low, toward min, while kswapd waits for its CPU (the
    // zones' low - min gaps add up to 180 frames).
    for _ in 0..100 {
        assert!(!k.file_read(FileId(1), page, 1).oom);
        page += 1;
    }
    let f = free(&k);
    assert!(
        (0..3).any(|z| f[z] < zones.wmark[z].low),
        "some zone below low: {f:?}"
    );
    assert_eq!(k.stats().pgsteal_kswapd, 0);
    assert_eq!(k.stats().allocstall, 0, "no zone at min yet");
    assert_eq!(
        k.stats().kswapd_wakes,
        1,
        "a wake while awake is not another"
    );
    // Each step takes at most SWAP_CLUSTER_MAX pages from each zone, and kswapd sleeps
    // once every zone is balanced at high.
    let mut steps = 0;
    loop {
        let before = k.stats().pgsteal_kswapd;
        let (t, next) = k.kswapd_step();
        let got = k.stats().pgsteal_kswapd - before;
        assert!(got <= 3 * 32, "a step reclaimed {got}");
        assert_eq!(t, k.mem().reclaim_time(got));
        steps += 1;
        assert!(steps < 10_000);
        if next == KswapdNext::Nap {
            break;
        }
        assert_eq!(next, KswapdNext::Step);
    }
    assert!(steps > 1, "balancing took several steps");
    for (z, free) in free(&k).into_iter().enumerate() {
        assert!(free > zones.wmark[z].high, "zone {z}: {free} free");
    }
    // During the nap a zone falls below high, though not below low: at the nap's end
    // kswapd balances it again, unwoken, then naps, then sleeps.
    while k.phys.zone_frames_free(2) >= zones.wmark[2].high {
        assert!(!k.file_read(FileId(1), page, 1).oom);
        page += 1;
    }
    assert!(!k.kswapd_woken() && !k.kswapd_awake());
    let wakes = k.stats().kswapd_wakes;
    let (t, next) = k.kswapd_step();
    assert!(t > hugemm_hw::Nanos::ZERO, "balancing again");
    assert_eq!(k.stats().kswapd_wakes, wakes, "not a wake");
    let mut next = next;
    while next == KswapdNext::Step {
        next = k.kswapd_step().1;
    }
    assert_eq!(next, KswapdNext::Nap);
    assert_eq!(k.kswapd_step(), (hugemm_hw::Nanos::ZERO, KswapdNext::Sleep));
    assert_eq!(k.kswapd_step(), (hugemm_hw::Nanos::ZERO, KswapdNext::Sleep));
    k.check_invariants().unwrap();
    // Asynchronous kswapd needs zones.
    let cfg = MemConfig {
        bytes: 512 * MIB,
        geometry: Geometry::X86_64,
    };
    let mut flat = Kernel::new(&cfg, costs()).unwrap();
    assert!(flat.set_kswapd(KswapdMode::Async).is_err());
    assert!(flat.set_kswapd(KswapdMode::Immediate).is_ok());
}

#[test]
fn a_scanning_fallback_policy_picks_pageblocks_of_the_zone_it_allocates_from() {
    // OPBS scans pageblocks for the best one to steal; on a machine of zones it must
    // scan the zone being allocated from, whose lists the block must be on (it scanned
    // every zone's, and chose blocks of another: "chose an unusable block").
    for name in ["opbs", "apbs", "rpbs"] {
        let mut k = zoned();
        k.set_fallback_policy(crate::fallback::build(name, 1).unwrap());
        // Two files read page by page in turn fill every zone; deleting one leaves
        // movable pageblocks half free, in pieces.
        for index in 0..60_000 {
            k.file_read(FileId(1), index, 1);
            k.file_read(FileId(2), index, 1);
        }
        k.file_delete(FileId(1));
        for _ in 0..20_000 {
            k.kmalloc(KmemKind::Unmovable, Order(0))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        assert!(k.phys.fallback_stats().fallbacks > 0, "{name} fell back");
        k.check_invariants().unwrap();
    }
}

/// Two files read page by page in turn, then one deleted: movable pageblocks half free,
/// in pieces; the free huge blocks left are taken by a driver, so none is free.
fn zoned_fragmented() -> Kernel {
    use crate::phys::buddy::AllocRequest;
    use crate::phys::frame::OwnerKind;
    let mut k = zoned();
    for index in 0..60_000 {
        k.file_read(FileId(1), index, 1);
        k.file_read(FileId(2), index, 1);
    }
    k.file_delete(FileId(1));
    let req = AllocRequest::new(Order(9)).owner(OwnerKind::KernelUnmovable);
    for z in 0..3 {
        while k.phys.alloc_in_zone(&req, z).is_ok() {}
    }
    assert!(!k.phys.has_free_block(Order(9)));
    k
}

fn cached(k: &Kernel) -> [u64; 3] {
    [0, 1, 2].map(|z| k.cache.zone_pages(z))
}

#[test]
fn compaction_moves_each_page_within_its_own_zone() {
    use crate::pressure::compaction::CompactRequest;
    // compact_memory: every zone on its own (compact_node), so no page crosses into
    // another zone, and each zone regains huge blocks of its own.
    let mut k = zoned_fragmented();
    let before = cached(&k);
    assert!(before[1] > 0 && before[2] > 0, "{before:?}");
    let out = k.compact(CompactRequest::Full);
    assert!(out.success && out.migrated > 1000, "{out:?}");
    assert_eq!(cached(&k), before, "pages stay in their zones");
    for z in 1..3 {
        let huge: u64 = (9..=10).map(|o| k.phys.zone_free_blocks(z, Order(o))).sum();
        assert!(huge > 0, "zone {z} has free huge blocks after compaction");
    }
    k.check_invariants().unwrap();

    // A direct request walks the zonelist from Normal down and stops in the first zone
    // that has what it needs.
    let mut k = zoned_fragmented();
    k.set_watermark_check(crate::api::WatermarkCheck::Linux4_1);
    let before = cached(&k);
    let out = k.compact(CompactRequest::Direct { order: Order(9) });
    assert!(out.ran && out.success, "{out:?}");
    assert_eq!(cached(&k), before, "pages stay in their zones");
    let normal: u64 = (9..=10).map(|o| k.phys.zone_free_blocks(2, Order(o))).sum();
    assert!(
        normal > 0,
        "Normal, the zonelist's first, has the huge block"
    );
    assert_eq!(k.compact.position(1), None, "DMA32 was not reached");
    assert!(
        k.compact.position(2).is_some(),
        "Normal's positions are cached"
    );
    k.check_invariants().unwrap();
}

#[test]
fn kswapd_woken_for_an_order_leaves_it_to_compaction_where_compaction_could_run() {
    // Fragmented zones with plenty free: no zone is balanced at order 9, so kswapd
    // wakes, but compaction could run in each, so it tests order 0 there (balanced) and
    // reclaims nothing (4.1's kswapd_shrink_zone).
    let mut k = zoned_fragmented();
    k.set_watermark_check(crate::api::WatermarkCheck::Linux4_1);
    let wakes = k.stats().kswapd_wakes;
    let cached = k.cache.pages();
    k.kswapd_4_1(Order(9));
    assert_eq!(k.stats().kswapd_wakes, wakes + 1, "unbalanced at order 9");
    assert_eq!(k.cache.pages(), cached, "nothing reclaimed");
    k.check_invariants().unwrap();
}

#[test]
fn kswapd_woken_for_an_order_reclaims_at_it_where_memory_is_too_short_to_compact() {
    // Page cache fills every zone to its watermarks: compaction would be skipped (not
    // low + 2 << 9 frames free), so kswapd reclaims at order 9, stopping once the pass
    // reclaimed 2 << 9 pages or the zones' balance at order 0 (as 4.1 does then) holds.
    let mut k = zoned();
    k.set_watermark_check(crate::api::WatermarkCheck::Linux4_1);
    let r = k.file_read(FileId(1), 0, 2 * 131_072);
    assert!(!r.oom);
    let zones = k.zones().unwrap().clone();
    let f = free(&k);
    assert!(
        (1..3).all(|z| f[z] < zones.wmark[z].low + 1024),
        "too little free to compact: {f:?}"
    );
    let before = k.stats().pgsteal_kswapd;
    k.kswapd_4_1(Order(9));
    let got = k.stats().pgsteal_kswapd - before;
    assert!(got >= 2 << 9, "reclaimed {got} for the order");
    // Each pass takes at most high pages a zone; 12 passes at most.
    let most: u64 = zones.wmark.iter().map(|w| w.high.max(32)).sum::<u64>() * 12;
    assert!(got <= most, "reclaimed {got}, at most {most}");
    k.check_invariants().unwrap();

    // On its own thread the same wake only marks kswapd awake; its steps reclaim.
    use crate::{KswapdMode, KswapdNext};
    let mut k = zoned();
    k.set_watermark_check(crate::api::WatermarkCheck::Linux4_1);
    k.set_kswapd(KswapdMode::Async).unwrap();
    assert!(!k.file_read(FileId(1), 0, 2 * 131_072).oom);
    while k.kswapd_step().1 != KswapdNext::Sleep {}
    let before = k.stats().pgsteal_kswapd;
    k.kswapd_4_1(Order(9));
    assert!(k.kswapd_woken() && k.kswapd_awake());
    assert_eq!(k.stats().pgsteal_kswapd, before, "not at once");
    let mut steps = 0;
    while k.kswapd_step().1 == KswapdNext::Step {
        steps += 1;
        assert!(steps < 10_000);
    }
    // The steps stop once they reclaimed 2 << 9 pages and order 0 is balanced, or once
    // zones of a quarter of the node's pages are balanced at order 9 (`pgdat_balanced`).
    let got = k.stats().pgsteal_kswapd - before;
    let managed: u64 = zones.managed.iter().sum();
    let at_order: u64 = (0..3)
        .filter(|&z| {
            let mark = zones.wmark[z].high;
            crate::pressure::zones::zone_watermark_ok(&k.phys, z, Order(9), mark, 0)
        })
        .map(|z| zones.managed[z])
        .sum();
    assert!(
        steps > 1 && (got >= 2 << 9 || at_order >= managed / 4),
        "{steps} steps reclaimed {got}; balanced at order 9: {at_order} of {managed}"
    );
    k.check_invariants().unwrap();
}

#[test]
fn direct_reclaim_for_a_costly_order_passes_over_zones_where_compaction_is_ready() {
    let mut k = zoned();
    k.set_watermark_check(crate::api::WatermarkCheck::Linux4_1);
    assert!(!k.file_read(FileId(1), 0, 2 * 131_072).oom);
    // Free much of DMA32 (its oldest pages): compaction is ready there, not in Normal.
    k.mem().shrink_zone(1, 20_000, true);
    let before = cached(&k);
    let r = k.direct_reclaim_4_1(Order(9));
    let after = cached(&k);
    assert!(!r.compaction_ready && r.freed >= 2 << 9, "{r:?}");
    assert_eq!(
        after[1], before[1],
        "DMA32, ready for compaction, is passed over"
    );
    assert!(after[2] < before[2], "Normal gives pages");
    k.check_invariants().unwrap();
    // With every zone ready, reclaim stands aside and reports progress all the same.
    let mut k = zoned_fragmented();
    k.set_watermark_check(crate::api::WatermarkCheck::Linux4_1);
    let r = k.direct_reclaim_4_1(Order(9));
    assert!(
        r.compaction_ready && r.freed == 0 && r.progress() == 1,
        "{r:?}"
    );
}

#[test]
fn compaction_is_deferred_zone_by_zone() {
    use crate::phys::buddy::AllocRequest;
    use crate::phys::frame::OwnerKind;
    use crate::phys::pageblock::MigrateType;
    use crate::pressure::compaction::CompactRequest;
    let order = Order(9);
    // Normal full of pinned pages, every other one freed: half free, in single frames
    // nothing can move, so compaction there runs to the scanners' meeting and fails.
    // DMA32 is empty.
    let mut k = zoned();
    k.set_watermark_check(crate::api::WatermarkCheck::Linux4_1);
    let pinned = AllocRequest::new(Order(0))
        .migrate(MigrateType::Movable)
        .owner(OwnerKind::KernelUnmovable);
    let mut held = Vec::new();
    while let Ok(b) = k.phys.alloc_in_zone(&pinned, 2) {
        held.push(b.pfn);
    }
    for pfn in held.iter().step_by(2) {
        k.phys.free(*pfn, Order(0)).unwrap();
    }
    let normal = k.phys.zone_frames(2).unwrap().0;
    let dma32 = k.phys.zone_frames(1).unwrap().0;

    // Asynchronous: Normal's run fails but is not deferred; DMA32 ends the walk.
    let out = k.compact(CompactRequest::Deferred { order, sync: false });
    assert!(out.ran && out.ready, "{out:?}");
    assert!(!k.compaction_deferral(normal).deferred(order));

    // Synchronous: the failed run defers Normal, and only Normal.
    let out = k.compact(CompactRequest::Deferred { order, sync: true });
    assert!(out.ran && out.ready, "{out:?}");
    assert!(
        k.compaction_deferral(normal).deferred(order),
        "Normal deferred"
    );
    assert!(!k.compaction_deferral(dma32).deferred(order), "DMA32 not");

    // Deferred, Normal is passed over: no scanning there, DMA32 still serves the walk.
    k.compaction_deferral(normal).defer(order);
    let scanned = k.stats().compact_migrate_scanned;
    let out = k.compact(CompactRequest::Deferred { order, sync: true });
    assert!(out.ready && !out.ran, "{out:?}");
    assert_eq!(k.stats().compact_migrate_scanned, scanned);
    // Without the deferral the same request scans Normal again.
    k.compact(CompactRequest::Direct { order });
    assert!(k.stats().compact_migrate_scanned > scanned);
    k.check_invariants().unwrap();
}

/// Linux 4.1 shrinks the slab in proportion to the classzone's scanning only
/// (`shrink_zone`'s `is_classzone`): direct reclaim's classzone is the highest zone,
/// kswapd's the highest it balances; reclaim from a lower zone shrinks nothing.
#[test]
fn only_the_classzones_scanning_shrinks_the_slab() {
    let dentry = crate::KmemCache {
        kind: KmemKind::Reclaimable,
        order: Order(0),
        object_bytes: 192,
    };
    let shrunk = |list: &[usize]| {
        let mut k = zoned();
        assert!(!k.file_read(FileId(1), 0, 2 * 131_072).oom);
        for _ in 0..1_000 {
            k.kmem_cache_alloc(dentry).unwrap();
        }
        let cached = k.page_cache_pages();
        let out = k.reclaim_zones(list, 10_000);
        assert!(out.freed >= 10_000 && k.page_cache_pages() < cached);
        k.check_invariants().unwrap();
        k.stats().slab_shrunk_objects
    };
    assert_eq!(shrunk(&[1]), 0, "DMA32's scanning alone shrinks nothing");
    assert!(shrunk(&[2, 1]) > 0, "Normal's does");
}
