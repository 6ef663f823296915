//! Linux 4.1's zones in the allocation path (`mm/page_alloc.c`, `mm/vmscan.c`): each
//! zone's watermarks and `lowmem_reserve`, the fair zone allocation policy's batches,
//! and the per-zone watermark check. [`Mem::alloc`](crate::reclaim) walks the zonelist
//! with them when the machine has zones ([`Kernel::with_zones`](crate::Kernel)); the
//! specification is `docs/dev/linux-4.1-zones.md`.
//!
//! - **Watermarks** (`__setup_per_zone_wmarks`): `min_free_kbytes` is split over the
//!   zones by their managed pages (`tmp = pages_min * managed / lowmem_pages`); a zone's
//!   `min` is its share, `low = min + tmp / 4` and `high = min + tmp / 2` (4.6+ widens
//!   both gaps to `vm.watermark_scale_factor`'s share of the zone when that is larger:
//!   [`Watermarks::with`]).
//! - **`lowmem_reserve`** (`setup_per_zone_lowmem_reserve`, x86-64's ratios 256 for DMA
//!   and DMA32, 32 for Normal): a request that could have used a higher zone (its
//!   `classzone_idx`, the highest zone of its zonelist) must leave that many more frames
//!   free in a lower one: zone `i` keeps `(managed of zones i+1..=classzone) /
//!   ratio[i]` against it.
//! - **The fair zone allocation policy** (`ALLOC_FAIR`, every request's fast path):
//!   each zone has an allocation batch of `high - low` frames (`NR_ALLOC_BATCH`); an
//!   allocation from a zone takes its frames from the batch (`buffered_rmqueue`), a zone
//!   whose batch is spent is skipped (`ZONE_FAIR_DEPLETED`), and when the walk skipped
//!   one and found nothing, every batch is reset and the walk is made again without
//!   fairness (`reset_alloc_batches`). So allocations interleave across zones in
//!   proportion to their size, in runs of a batch.
//! - **The check** (`__zone_watermark_ok` of 4.1, per zone: [`zone_watermark_ok`]).
//!
//! What the model leaves out: `zone_reclaim_mode` (0 on these machines, so a zone failing
//! its check is passed over), the dirty limits per zone (`zone_dirty_ok`), the
//! `ALLOC_HIGH`/`ALLOC_HARDER` discounts of atomic requests, and highmem (none on
//! x86-64).

use crate::phys::buddy::PhysMem;
use crate::pressure::compaction::EXTFRAG_THRESHOLD;
use crate::pressure::reclaim::Watermarks;
use hugemm_hw::Order;
use serde::Serialize;

/// `sysctl_lowmem_reserve_ratio` of x86-64 (DMA, DMA32, then Normal and above).
pub const LOWMEM_RESERVE_RATIO: [u64; 3] = [256, 256, 32];

/// Which watermark a zonelist walk checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    /// `ALLOC_WMARK_MIN`: the slow path, after kswapd was woken.
    Min,
    /// `ALLOC_WMARK_LOW`: the fast path.
    Low,
    /// `ALLOC_WMARK_HIGH`: kswapd's target.
    High,
}

impl Watermarks {
    /// The watermark `mark` names.
    pub fn get(&self, mark: Mark) -> u64 {
        match mark {
            Mark::Min => self.min,
            Mark::Low => self.low,
            Mark::High => self.high,
        }
    }
}

/// The zones' watermarks, reserves and fair-policy batches.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Zones {
    /// Managed frames of each zone (all its frames: the model has no boot memory).
    pub managed: Vec<u64>,
    /// Each zone's watermarks.
    pub wmark: Vec<Watermarks>,
    /// `lowmem_reserve[z][c]`: frames zone `z` keeps free against a request whose
    /// classzone is `c` (0 for `c <= z`).
    pub lowmem_reserve: Vec<Vec<u64>>,
    /// `NR_ALLOC_BATCH` of each zone.
    #[serde(skip)]
    batch: Vec<i64>,
    /// The node's kswapd when it runs on its own thread.
    #[serde(skip)]
    pub(crate) kswapd: KswapdThread,
    /// Page-cache pages reclaim has scanned on each zone's LRU lists, kswapd's and
    /// direct (`pgscan_kswapd_<zone>` + `pgscan_direct_<zone>`; every page scanned is
    /// reclaimed, all being clean).
    #[serde(skip)]
    pub scanned: Vec<u64>,
}

/// kswapd on its own thread (`[kernel] kswapd = "async"`, [`crate::Kernel::set_kswapd`]):
/// the slow path wakes it (`wakeup_kswapd`) and goes on to its walk at `min`; kswapd
/// then reclaims in steps of at most `SWAP_CLUSTER_MAX` pages a zone, in proportion to
/// the zones' LRU pages ([`crate::Kernel::kswapd_step`]), which the engine runs as a daemon, until the zones
/// up to the classzone it was woken for are balanced at the order it was woken for
/// (`pgdat_balanced`; order 0 once it has reclaimed `2 << order` pages). Allocations go on
/// meanwhile, so a zone can sit between `min` and `low`, as in Linux. Then it naps for
/// [`KSWAPD_NAP`] (`kswapd_try_to_sleep`'s short sleep): if a zone fell below `high`
/// meanwhile it balances again without being woken, else it sleeps until the slow path
/// wakes it. Without it (the default) kswapd runs to completion inside the allocation
/// that woke it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct KswapdThread {
    /// kswapd runs on its own thread.
    pub enabled: bool,
    /// Awake, balancing the zones up to a classzone at an order (`pgdat->classzone_idx`,
    /// `kswapd_max_order`; a wake while awake raises both).
    pub woken: Option<KswapdWake>,
    /// Napping after balancing the zones up to a classzone at an order.
    pub nap: Option<KswapdWake>,
    /// Frames reclaimed since the wake, towards the `2 << order` after which 4.1's
    /// `balance_pgdat` checks order 0 only.
    pub reclaimed: u64,
    /// Woken since the engine last looked ([`crate::Kernel::take_kswapd_wake`]).
    pub fresh: bool,
}

/// What kswapd was woken to balance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KswapdWake {
    /// The zones up to this one.
    pub class: usize,
    /// At this order.
    pub order: Order,
}

/// kswapd's short sleep after balancing (`kswapd_try_to_sleep`: `HZ/10`).
pub const KSWAPD_NAP: hugemm_hw::Nanos = hugemm_hw::Nanos(100_000_000);

/// What kswapd on its own thread does after a step ([`crate::Kernel::kswapd_step`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KswapdNext {
    /// Another step: the zones are not balanced yet.
    Step,
    /// A nap of [`KSWAPD_NAP`], then a look at the zones.
    Nap,
    /// Asleep until an allocation's slow path wakes it.
    Sleep,
}

impl Zones {
    /// Zones of `managed[z]` frames of `frame_bytes` each, with `vm.min_free_kbytes`
    /// `min_kb` and `vm.watermark_scale_factor` `scale` (0: Linux 4.1's gaps).
    pub fn new(managed: &[u64], frame_bytes: u64, min_kb: u64, scale: u32) -> Zones {
        let mut zones = Zones {
            managed: managed.to_vec(),
            wmark: Vec::new(),
            lowmem_reserve: lowmem_reserve(managed),
            batch: Vec::new(),
            kswapd: KswapdThread::default(),
            scanned: vec![0; managed.len()],
        };
        zones.set_watermarks(frame_bytes, min_kb, scale);
        zones
    }

    /// `__setup_per_zone_wmarks`: each zone's watermarks from `min_kb`, and the
    /// allocation batches reset to them.
    pub fn set_watermarks(&mut self, frame_bytes: u64, min_kb: u64, scale: u32) {
        let pages_min = min_kb * 1024 / frame_bytes;
        let lowmem: u64 = self.managed.iter().sum();
        self.wmark = self
            .managed
            .iter()
            .map(|&managed| {
                let tmp = pages_min * managed / lowmem.max(1);
                let quarter = (tmp / 4).max(managed * u64::from(scale) / 10_000);
                // 4.1 adds `tmp >> 1` for high, one more than two quarters when tmp is
                // 2 or 3 modulo 4.
                let half = match scale {
                    0 => tmp / 2,
                    _ => 2 * quarter,
                };
                Watermarks {
                    min: tmp.min(managed),
                    low: (tmp + quarter).min(managed),
                    high: (tmp + half).min(managed),
                }
            })
            .collect();
        self.reset_batches();
    }

    /// Number of zones.
    pub fn count(&self) -> usize {
        self.managed.len()
    }

    /// The highest zone's watermarks: the marks of Linux 4.1's checks the model makes
    /// for one zone (compaction's, 4.1's high-order kswapd and direct reclaim), which
    /// read that zone's free memory ([`PhysMem::checked_frames_free`]).
    pub fn checked(&self) -> Watermarks {
        self.wmark.last().copied().unwrap_or_default()
    }

    /// Whether the fair policy passes over zone `z` (its batch is spent).
    pub fn depleted(&self, z: usize) -> bool {
        self.batch[z] <= 0
    }

    /// An allocation of `frames` from zone `z` (`buffered_rmqueue`'s `NR_ALLOC_BATCH`).
    pub fn charge(&mut self, z: usize, frames: u64) {
        self.batch[z] -= frames as i64;
    }

    /// `reset_alloc_batches`: every batch back to `high - low`.
    pub fn reset_batches(&mut self) {
        self.batch = self.wmark.iter().map(|w| (w.high - w.low) as i64).collect();
    }

    /// kswapd's balance gap of zone `z` (`KSWAPD_ZONE_BALANCE_GAP_RATIO`): the smaller
    /// of its `low` and 1% of it.
    pub fn balance_gap(&self, z: usize) -> u64 {
        self.wmark[z].low.min(self.managed[z].div_ceil(100))
    }

    /// Linux 4.1's `compaction_suitable` for zone `z` past its first test (the order's
    /// watermark at `low` met already, `COMPACT_PARTIAL`): more than `low + 2 << order`
    /// frames free beyond its `lowmem_reserve` for classzone `class`, and the zone's
    /// fragmentation index outside `0..=500` (the failure is fragmentation, not lack of
    /// memory).
    pub(crate) fn compaction_suitable_4_1(
        &self,
        phys: &PhysMem,
        z: usize,
        order: Order,
        class: usize,
    ) -> bool {
        let mark = self.wmark[z].low + (2u64 << order.0);
        zone_watermark_ok(phys, z, Order(0), mark, self.lowmem_reserve[z][class])
            && !(0..=EXTFRAG_THRESHOLD).contains(&zone_fragmentation_index(phys, z, order))
    }

    /// 4.1's `compaction_ready` (vmscan.c) for zone `z`: more than `high`, the balance
    /// gap and `2 << order` frames free, and, unless compaction of the order is
    /// `deferred`, compaction not skipped there. Direct reclaim for a costly order
    /// passes over such a zone.
    pub(crate) fn compaction_ready_4_1(
        &self,
        phys: &PhysMem,
        z: usize,
        order: Order,
        deferred: bool,
    ) -> bool {
        let mark = self.wmark[z].high + self.balance_gap(z) + (2u64 << order.0);
        let watermark_ok = zone_watermark_ok(phys, z, Order(0), mark, 0);
        watermark_ok && (deferred || self.compaction_not_skipped_4_1(phys, z, order, z))
    }

    /// 4.1's `compaction_suitable` for zone `z` is not `COMPACT_SKIPPED`: the order's
    /// watermark at `low` is met, or compaction could run
    /// ([`Zones::compaction_suitable_4_1`]). kswapd then balances the zone at order 0
    /// and leaves the order to compaction (`kswapd_shrink_zone`'s `testorder`).
    pub(crate) fn compaction_not_skipped_4_1(
        &self,
        phys: &PhysMem,
        z: usize,
        order: Order,
        class: usize,
    ) -> bool {
        zone_watermark_ok(
            phys,
            z,
            order,
            self.wmark[z].low,
            self.lowmem_reserve[z][class],
        ) || self.compaction_suitable_4_1(phys, z, order, class)
    }
}

/// `__fragmentation_index` of zone `z` for `order` ([`fragmentation_index`]).
pub(crate) fn zone_fragmentation_index(phys: &PhysMem, z: usize, order: Order) -> i64 {
    fragmentation_index(
        phys.zone_frames_free(z),
        |o| phys.zone_free_blocks(z, o),
        phys.max_order(),
        order,
    )
}

/// `__fragmentation_index` for `order` over `free` frames in `blocks(o)` free blocks of
/// each order `o` up to `max_order`: -1000 when a block of the order is free, towards 0
/// when a failure would be for lack of memory, towards 1000 when it would be for
/// fragmentation; 0 with nothing free.
pub(crate) fn fragmentation_index(
    free: u64,
    blocks: impl Fn(Order) -> u64,
    max_order: Order,
    order: Order,
) -> i64 {
    let total: u64 = (0..=max_order.0).map(|o| blocks(Order(o))).sum();
    if total == 0 {
        return 0;
    }
    if (order.0..=max_order.0).any(|o| blocks(Order(o)) > 0) {
        return -1000;
    }
    1000 - ((1000 + free * 1000 / (1u64 << order.0)) / total) as i64
}

/// `setup_per_zone_lowmem_reserve` for one node's zones of `managed[z]` frames.
fn lowmem_reserve(managed: &[u64]) -> Vec<Vec<u64>> {
    let n = managed.len();
    let mut reserve = vec![vec![0u64; n]; n];
    for class in 0..n {
        let mut above = managed[class];
        for z in (0..class).rev() {
            let ratio = LOWMEM_RESERVE_RATIO[z.min(LOWMEM_RESERVE_RATIO.len() - 1)];
            reserve[z][class] = above / ratio;
            above += managed[z];
        }
    }
    reserve
}

/// Linux 4.1's `__zone_watermark_ok` for zone `zone`: after the `2^order - 1` pages
/// the allocation takes beyond its first, more than `mark + reserve` frames must be free
/// in the zone, and at each order below `order` the free frames in blocks above it must
/// exceed `mark` halved once more ([`crate::reclaim::zone_watermark_ok_4_1`] is the same
/// check over all memory). `reserve` is the zone's `lowmem_reserve` for the request's
/// classzone.
pub fn zone_watermark_ok(
    phys: &PhysMem,
    zone: usize,
    order: Order,
    mark: u64,
    reserve: u64,
) -> bool {
    let free = phys.zone_frames_free(zone);
    watermark_ok_4_1(
        free,
        |o| phys.zone_free_blocks(zone, o),
        order,
        mark,
        reserve,
    )
}

/// `__zone_watermark_ok` of 4.1 over `free` frames, `free_blocks(o)` of them blocks of
/// order `o` (see [`zone_watermark_ok`]).
pub(crate) fn watermark_ok_4_1(
    free: u64,
    free_blocks: impl Fn(Order) -> u64,
    order: Order,
    mark: u64,
    reserve: u64,
) -> bool {
    let mut free = free as i64 - ((1i64 << order.0) - 1);
    let mut min = mark as i64;
    if free <= min + reserve as i64 {
        return false;
    }
    for o in 0..order.0 {
        free -= (free_blocks(Order(o)) as i64) << o;
        min >>= 1;
        if free <= min {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 4 GB guest of `docs/linux-4.1-data/2026-11-28`: DMA 16 MiB, DMA32 3 GiB less
    /// it, Normal 1 GiB; `min_free_kbytes` 8,192 (`int_sqrt(16 * 4 GiB in KiB)`).
    fn guest_4g() -> Zones {
        Zones::new(&[4096, 786_432 - 4096, 262_144], 4096, 8192, 0)
    }

    #[test]
    fn min_free_kbytes_is_split_by_size_and_the_gaps_are_4_1s() {
        let z = guest_4g();
        // pages_min 2,048 over 1,048,576 frames.
        assert_eq!(
            z.wmark[0],
            Watermarks {
                min: 8,
                low: 10,
                high: 12
            }
        );
        assert_eq!(z.wmark[1].min, 2048 * 782_336 / 1_048_576);
        assert_eq!(
            z.wmark[2],
            Watermarks {
                min: 512,
                low: 640,
                high: 768
            }
        );
        assert_eq!(z.checked(), z.wmark[2], "the highest zone's");
    }

    #[test]
    fn lower_zones_keep_a_reserve_against_requests_that_could_go_higher() {
        let z = guest_4g();
        // DMA32 against Normal requests: Normal / 256.
        assert_eq!(z.lowmem_reserve[1][2], 262_144 / 256);
        // DMA against Normal: (Normal + DMA32) / 256; against DMA32: DMA32 / 256.
        assert_eq!(z.lowmem_reserve[0][2], (262_144 + 782_336) / 256);
        assert_eq!(z.lowmem_reserve[0][1], 782_336 / 256);
        // No reserve against one's own class or a lower one.
        assert_eq!((z.lowmem_reserve[2][2], z.lowmem_reserve[1][0]), (0, 0));
    }

    #[test]
    fn a_batch_of_high_minus_low_is_spent_then_reset() {
        let mut z = guest_4g();
        assert!(!z.depleted(2));
        z.charge(2, 127);
        assert!(!z.depleted(2));
        z.charge(2, 1);
        assert!(z.depleted(2), "Normal's batch is 768 - 640 = 128");
        z.reset_batches();
        assert!(!z.depleted(2));
    }

    #[test]
    fn the_scale_factor_widens_the_gaps() {
        let z = Zones::new(&[262_144], 4096, 1024, 10);
        // min 256; the gap max(64, 262) = 262.
        assert_eq!(
            z.wmark[0],
            Watermarks {
                min: 256,
                low: 518,
                high: 780
            }
        );
    }
}
