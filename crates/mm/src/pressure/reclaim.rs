//! Reclaim of page-cache pages and reclaimable slab: the zone watermarks, kswapd-like
//! background reclaim, and direct reclaim in the allocation path (`mm/vmscan.c`,
//! `mm/page_alloc.c`).
//!
//! Watermarks follow `__setup_per_zone_wmarks` for one zone: `min_free_kbytes =
//! int_sqrt(16 * lowmem_kbytes)` clamped to [128 KB, 256 MB] (`calculate_min_free_kbytes`);
//! `low = min + max(min / 4, managed * watermark_scale_factor / 10000)` with the default
//! factor 10; `high = min + 2 * (low - min)`. `vm.watermark_scale_factor` came with Linux
//! 4.6; before it the gaps were `min / 4` and `min / 2`, which the same formula gives with
//! a factor of 0 ([`Watermarks::with`]).
//!
//! **Watermark boosting** (Linux 5.0+, `boost_watermark`; off unless
//! [`PhysMem::set_watermark_boost_factor`] turns it on): each fallback that fragments (a
//! block smaller than a pageblock taken from another type's lists; since 6.15 only a
//! claim tried from one) raises the zone's boost by a pageblock, up to `high *
//! watermark_boost_factor / 10000`, and wakes kswapd even above `low`; kswapd then
//! reclaims to `high + boost` and the boost is spent. Linux's kswapd runs later and may
//! see several boosts at once; the model's runs at once, so it sees one fallback's
//! (the allocation that fell back gets its page first, as in Linux). After reclaiming
//! for a boost kswapd wakes kcompactd for a pageblock-sized block, as Linux's
//! `balance_pgdat` does ([`PhysMem::take_boost_compaction`]; the engine wakes it).
//!
//! Every allocation of the model's own paths (anonymous and page-table pages, `kmalloc`,
//! page-cache reads) goes through [`Mem::alloc`]:
//! - when the buddy allocator fails an order <= `PAGE_ALLOC_COSTLY_ORDER` (3), direct
//!   reclaim frees `SWAP_CLUSTER_MAX` (32) pages at a time and the allocation is retried
//!   until it succeeds or nothing is reclaimable (`__alloc_pages_direct_reclaim`,
//!   `should_reclaim_retry`); its time is charged to the caller. Costly orders (a 2 MB
//!   fault, a collapse) fail at once: for them compaction, a policy's call, is the remedy
//!   (`__GFP_NORETRY` THP allocations do the same).
//! - after a successful allocation that leaves free frames below `low`, kswapd reclaims
//!   until free frames reach `high` (`wakeup_kswapd`, `balance_pgdat`). The model runs it
//!   at once; its time goes to `KernelStats::kswapd_time`, not to the caller. On a
//!   machine of zones it may instead run on its own thread, as Linux's does
//!   ([`Mem::kswapd_step`]).
//!
//! Superpage reservations (`reserv.rs`) come first, as FreeBSD's `vm_page_alloc` calls
//! `vm_reserv_reclaim_inactive` when the physical allocator fails: a failed allocation
//! of order <= 3 breaks the least recently changed partially populated reservation and
//! retries before reclaiming page cache (time to the caller, not an `allocstall`), and
//! kswapd breaks such reservations up to `high` before shrinking the page cache (their
//! unused frames count as allocated here, unlike FreeBSD, which counts them free).
//!
//! Allocations are not refused below `min` (no `ALLOC_WMARK_MIN` check: the model has no
//! atomic reserves to protect), so an allocation only fails when no block is free.
//! Watermarks are checked at order 0 only. Linux checks them per order: 4.1's
//! `__zone_watermark_ok` ([`zone_watermark_ok_4_1`]) discounts the free pages below the
//! requested order, halving the mark at each order; 4.4 and later ask for one free block
//! of the order instead. The model does not act on the per-order check; it counts the
//! allocations above order 0 that 4.1's would have sent to its slow path
//! (`KernelStats::order_watermark_misses`): none in the APSys'16 paper-scale builds
//! (`experiments/apsys16/README.md`, "The paper's kernel"). Where the engine runs 4.1's
//! slow path (stress-highalloc's requests on `WatermarkCheck::Linux4_1`), kswapd woken for
//! an order is 4.1's too (`Kernel::kswapd_4_1`). On a machine of zones every slow path
//! wakes kswapd for its request's order, and kswapd balances the zones at it
//! ([`Mem::kswapd_zones`]), at once or on its thread.
//! Clean page cache and reclaimable kernel memory (`KmemKind::Reclaimable`, through the
//! slab shrinker of `slab.rs`, which scans twice the fraction of it that reclaim scans of
//! the LRU lists' and frees a slab when its last object goes) are reclaimable; anonymous
//! memory is not (no swap). This module owns when and how much to reclaim; the LRU order
//! is `lru.rs`'s, which slab object goes next `slab.rs`'s.

use crate::costs::{FragCosts, MmCosts};
use crate::error::{MmError, Result};
use crate::phys::buddy::{AllocRequest, Block, PhysMem};
use crate::phys::node::NodePref;
use crate::phys::reserv::{break_cost, break_reservation, ReservTable};
use crate::pressure::lru::{int_sqrt, PageCache};
use crate::pressure::slab::SlabCaches;
use crate::pressure::zones::{
    watermark_ok_4_1, zone_watermark_ok, KswapdNext, KswapdWake, Mark, Zones,
};
use crate::stats::KernelStats;
use hugemm_hw::{Nanos, Order};
use serde::Serialize;

/// Pages reclaimed per batch (`SWAP_CLUSTER_MAX`).
pub const SWAP_CLUSTER_MAX: u64 = 32;
/// Highest order the allocator retries after direct reclaim (`PAGE_ALLOC_COSTLY_ORDER`).
pub const PAGE_ALLOC_COSTLY_ORDER: u8 = 3;
/// `vm.watermark_scale_factor`'s default, in 1/10000 of managed memory.
pub const WATERMARK_SCALE_FACTOR: u32 = 10;

/// The zone watermarks, in frames.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Watermarks {
    /// `WMARK_MIN`.
    pub min: u64,
    /// `WMARK_LOW`: kswapd wakes below it.
    pub low: u64,
    /// `WMARK_HIGH`: kswapd sleeps again at it.
    pub high: u64,
}

impl Watermarks {
    /// Linux's watermarks for one zone of `managed` frames of `frame_bytes` each.
    pub fn for_zone(managed: u64, frame_bytes: u64) -> Watermarks {
        let lowmem_kb = managed * frame_bytes / 1024;
        Watermarks::with_min_free_kbytes(managed, frame_bytes, default_min_free_kbytes(lowmem_kb))
    }

    /// The watermarks when `vm.min_free_kbytes` is `min_kb` (set by hand, or raised by
    /// THP's `set_recommended_min_free_kbytes`): `min` is that many KiB, and `low` and
    /// `high` follow from it as in [`Watermarks::for_zone`].
    pub fn with_min_free_kbytes(managed: u64, frame_bytes: u64, min_kb: u64) -> Watermarks {
        Watermarks::with(managed, frame_bytes, min_kb, WATERMARK_SCALE_FACTOR)
    }

    /// The watermarks when `vm.min_free_kbytes` is `min_kb` and
    /// `vm.watermark_scale_factor` is `scale` (1/10000 of `managed`): the gap from `min`
    /// to `low`, and from `low` to `high`, is the larger of `min / 4` and the scale's
    /// share (`__setup_per_zone_wmarks`, Linux 4.6+). `scale` 0 gives Linux 4.1's
    /// watermarks, `low = min + min / 4` and `high = min + min / 2`, from before the
    /// factor existed.
    pub fn with(managed: u64, frame_bytes: u64, min_kb: u64, scale: u32) -> Watermarks {
        let min = (min_kb * 1024 / frame_bytes).min(managed);
        let gap = (min / 4).max(managed * u64::from(scale) / 10_000);
        Watermarks {
            min,
            low: (min + gap).min(managed),
            high: (min + 2 * gap).min(managed),
        }
    }
}

/// Linux 4.1's `__zone_watermark_ok` for an allocation of `order` against `mark` (no
/// `ALLOC_HIGH` or `ALLOC_HARDER` discount, no lowmem reserve: one zone): after the
/// `2^order - 1` pages the allocation takes beyond its first, more than `mark` frames
/// must be free, and at each order below `order` the free frames in blocks above it
/// must exceed a mark halved once more. So an order-9 allocation at 4 GiB (`low` 2,560)
/// needs more than 2,560 + 511 frames free, more than 1,280 + 511 of them in blocks of
/// order 1 and up, ..., more than 5 + 511 in blocks of order 9 and up: one free order-9
/// block is never enough. Free frames are the buddy allocator's
/// ([`PhysMem::frames_free`]), without the per-CPU lists, as `NR_FREE_PAGES`; on a node
/// split into zones, the highest zone's ([`PhysMem::checked_frames_free`]; the zonelist
/// walk checks each zone with `zones.rs`'s `zone_watermark_ok`).
pub fn zone_watermark_ok_4_1(phys: &PhysMem, order: Order, mark: u64) -> bool {
    match phys.checked_zone() {
        Some(z) => zone_watermark_ok(phys, z, order, mark, 0),
        None => watermark_ok_4_1(phys.frames_free(), |o| phys.free_blocks(o), order, mark, 0),
    }
}

/// `calculate_min_free_kbytes`: `int_sqrt(16 * lowmem_kbytes)`, clamped to [128 KB,
/// 256 MB].
pub fn default_min_free_kbytes(lowmem_kb: u64) -> u64 {
    int_sqrt(lowmem_kb * 16).clamp(128, 262_144)
}

/// The result of an explicit reclaim request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ReclaimOutcome {
    /// Frames freed: page cache and reclaimable slab.
    pub freed: u64,
    /// Time charged to the caller.
    pub cost: Nanos,
}

/// What allocation with reclaim borrows from the kernel.
#[derive(Debug)]
pub(crate) struct Mem<'a> {
    pub phys: &'a mut PhysMem,
    pub cache: &'a mut PageCache,
    pub stats: &'a mut KernelStats,
    pub frag: &'a FragCosts,
    pub wmark: Watermarks,
    pub frame_bytes: u64,
    pub reserv: &'a mut ReservTable,
    pub costs: &'a MmCosts,
    pub slab: &'a mut SlabCaches,
    /// The zones' watermarks and batches, on a machine of zones (`zones.rs`).
    pub zones: Option<&'a mut Zones>,
}

impl Mem<'_> {
    /// Allocate `req`, reclaiming directly on failure and waking kswapd below `low`.
    /// Returns the block and the direct-reclaim time the caller pays. On a machine of
    /// zones, Linux 4.1's zonelist walk ([`Mem::alloc_zoned`]).
    pub fn alloc(&mut self, req: &AllocRequest) -> Result<(Block, Nanos)> {
        if self.zones.is_some() {
            return self.alloc_zoned(req);
        }
        let (mut spent, mut stalled) = (Nanos::ZERO, false);
        let retry = req.order().0 <= PAGE_ALLOC_COSTLY_ORDER;
        let fast_4_1 =
            req.order().0 == 0 || zone_watermark_ok_4_1(self.phys, req.order(), self.wmark.low);
        let mut first = true;
        let block = loop {
            match self.phys.alloc(req) {
                Ok(b) => {
                    self.stats.order_watermark_misses += u64::from(first && !fast_4_1);
                    break b;
                }
                Err(MmError::OutOfMemory) if retry && self.reserv.oldest_partial().is_some() => {
                    spent += self.reclaim_reservation();
                }
                Err(MmError::OutOfMemory) if retry && self.reclaimable() > 0 => {
                    self.stats.allocstall += !std::mem::replace(&mut stalled, true) as u64;
                    spent += self.direct_reclaim();
                }
                Err(e) => return Err(e),
            }
            first = false;
        };
        self.stats.watermark_boosts += self.phys.apply_watermark_boost(self.wmark.high);
        self.wake_kswapd();
        Ok((block, spent))
    }

    /// Linux 4.1's `__alloc_pages_nodemask` on a machine of zones:
    /// - the fast path (`get_page_from_freelist` with `ALLOC_WMARK_LOW | ALLOC_FAIR`):
    ///   the request's zones highest first, each passed over when the fair policy spent
    ///   its batch or when it fails [`zone_watermark_ok`] at `low` with its
    ///   `lowmem_reserve` for the request's classzone; again without fairness, the
    ///   batches reset, if a zone was passed over for fairness;
    /// - the slow path: kswapd balances the zones up to the classzone ([`Mem::kswapd_zones`]),
    ///   the walk again at `min`; then, for orders up to `PAGE_ALLOC_COSTLY_ORDER`, a
    ///   reservation broken or a batch of direct reclaim before each new walk at `min`,
    ///   until one succeeds or nothing is reclaimable. The model has no OOM killer in
    ///   the kernel: the request then fails (its process is out of memory).
    ///
    /// kswapd is woken only from the slow path, so a zone can sit between `min` and
    /// `low` while the others serve requests, as in 4.1 (without zones the model's
    /// kswapd runs after every allocation that leaves free memory below `low`).
    fn alloc_zoned(&mut self, req: &AllocRequest) -> Result<(Block, Nanos)> {
        let list = req.node_pref();
        let Some(class) = self.phys.zonelist_zone(list, 0) else {
            return Err(MmError::OutOfMemory);
        };
        if let Some(b) = self.zone_walk(req, list, class, Mark::Low, true)? {
            return Ok((b, Nanos::ZERO));
        }
        self.kswapd_zones(class, req.order());
        if let Some(b) = self.zone_walk(req, list, class, Mark::Min, false)? {
            return Ok((b, Nanos::ZERO));
        }
        let (mut spent, mut stalled) = (Nanos::ZERO, false);
        while req.order().0 <= PAGE_ALLOC_COSTLY_ORDER {
            if self.reserv.oldest_partial().is_some() {
                spent += self.reclaim_reservation();
            } else if self.reclaimable() > 0 {
                self.stats.allocstall += !std::mem::replace(&mut stalled, true) as u64;
                spent += self.direct_reclaim();
            } else {
                break;
            }
            if let Some(b) = self.zone_walk(req, list, class, Mark::Min, false)? {
                return Ok((b, spent));
            }
        }
        Err(MmError::OutOfMemory)
    }

    /// `get_page_from_freelist` over the zonelist of `list` for a request of classzone
    /// `class`, checking `mark`, with the fair policy when `fair`.
    pub(crate) fn zone_walk(
        &mut self,
        req: &AllocRequest,
        list: NodePref,
        class: usize,
        mark: Mark,
        fair: bool,
    ) -> Result<Option<Block>> {
        let order = req.order();
        let mut skipped = false;
        let mut next = 0;
        while let Some(z) = self.phys.zonelist_zone(list, next) {
            next += 1;
            let zones = self.zones.as_deref_mut().expect("a machine of zones");
            if fair && zones.depleted(z) {
                skipped = true;
                continue;
            }
            let (w, reserve) = (zones.wmark[z].get(mark), zones.lowmem_reserve[z][class]);
            if !zone_watermark_ok(self.phys, z, order, w, reserve) {
                continue;
            }
            match self.phys.alloc_in_zone(req, z) {
                Ok(b) => {
                    zones.charge(z, 1u64 << order.0);
                    return Ok(Some(b));
                }
                Err(MmError::OutOfMemory) => continue,
                Err(e) => return Err(e),
            }
        }
        if fair && skipped {
            if let Some(zones) = self.zones.as_deref_mut() {
                zones.reset_batches();
            }
            return self.zone_walk(req, list, class, mark, false);
        }
        Ok(None)
    }

    /// kswapd woken for a request of `order` and classzone `class` (`wakeup_kswapd`,
    /// `balance_pgdat`; the machines of zones have one node, so it balances every zone up
    /// to `class`). A zone is balanced at `order` with `gap` for a classzone when 4.1's
    /// per-order check passes at `high` plus `gap` plus its `lowmem_reserve` for that
    /// classzone (`zone_balanced`; its second test, that compaction would not be skipped,
    /// always passes when the first does). kswapd sleeps unless some zone up to `class`
    /// is unbalanced at `order` for its own class (no reserve: `wakeup_kswapd`'s check).
    /// Each pass finds the highest such zone, `end`, and reclaims from the LRU lists of
    /// every zone up to `end` not balanced with its gap (`min(low, 1%)`) for classzone
    /// `end` at the order it tests (`kswapd_shrink_zone`: order 0 where compaction would
    /// not be skipped, which then makes the order): at order 0 as much as brings it to
    /// `high` and at least `SWAP_CLUSTER_MAX`; above, `SWAP_CLUSTER_MAX` at a time until it
    /// is balanced or `high` pages are reclaimed (`nr_to_reclaim`). Once a pass has
    /// reclaimed `2 << order` pages, later passes test order 0. Passes end when the node
    /// is balanced (`pgdat_balanced`: every zone up to `class` at order 0; above it,
    /// zones of at least a quarter of those zones' pages), a pass frees nothing, or after
    /// 12 (`DEF_PRIORITY`). 4.1's passes scan more at each priority and stop once the
    /// node is balanced, so they end a little past `high`; the model's reclaim exactly
    /// what `high` needs. So 4.1's `compact_pgdat`, which runs only when a pass reclaimed
    /// more than its `nr_to_reclaim` added up, never runs here (as `Kernel::kswapd_4_1`
    /// finds for one zone). Its time goes to `kswapd_time`.
    ///
    /// With kswapd on its own thread (`zones::KswapdThread`) the wake only marks it awake
    /// for `class` and `order` (raising both if it is awake: `kswapd_max_order`);
    /// [`Mem::kswapd_step`] does the passes' work later, a step at a time.
    pub fn kswapd_zones(&mut self, class: usize, order: Order) {
        let zones = self.zones.as_deref_mut().expect("a machine of zones");
        if zones.kswapd.enabled {
            if let Some(woken) = zones.kswapd.woken.as_mut() {
                woken.class = woken.class.max(class);
                woken.order = woken.order.max(order);
                return;
            }
            if self.kswapd_end(class, order).is_some() {
                // Asleep or napping (a wake during the nap ends it early).
                let zones = self.zones.as_deref_mut().expect("a machine of zones");
                zones.kswapd.woken = Some(KswapdWake { class, order });
                zones.kswapd.nap = None;
                zones.kswapd.reclaimed = 0;
                zones.kswapd.fresh = true;
                self.stats.kswapd_wakes += 1;
            }
            return;
        }
        if self.kswapd_end(class, order).is_none() {
            return;
        }
        self.stats.kswapd_wakes += 1;
        let mut order = order;
        for _priority in 0..12 {
            let Some(end) = self.kswapd_end(class, order) else {
                break;
            };
            let freed = self.kswapd_pass(end, order, false);
            if order.0 > 0 && freed >= 2 << order.0 {
                order = Order(0);
            }
            if freed == 0 || self.pgdat_balanced(class, order) {
                break;
            }
        }
    }

    /// One step of kswapd on its own thread: a pass of [`Mem::kswapd_zones`] that takes
    /// at most `SWAP_CLUSTER_MAX` pages from the zone with the most LRU pages and the
    /// others' share by their LRU pages ([`Mem::kswapd_step_cap`]; `shrink_lruvec`
    /// reclaims in batches of `SWAP_CLUSTER_MAX`); once the steps since the wake have
    /// reclaimed `2 << order` pages, it balances at order 0. When the node is balanced for the classzone and order it was
    /// woken for, or the step freed nothing, kswapd naps (`kswapd_try_to_sleep`); the step
    /// at the nap's end balances again if the node is not balanced
    /// (`prepare_kswapd_sleep` fails: `KSWAPD_HIGH_WMARK_HIT_QUICKLY`), else kswapd
    /// sleeps until woken. Returns the step's time, which also goes to `kswapd_time`
    /// (zero when there was nothing to do), and what kswapd does next.
    pub fn kswapd_step(&mut self) -> (Nanos, KswapdNext) {
        let Some(zones) = self.zones.as_deref_mut() else {
            return (Nanos::ZERO, KswapdNext::Sleep);
        };
        let k = &mut zones.kswapd;
        let wake = match (k.woken, k.nap.take()) {
            (Some(wake), _) => wake,
            (None, Some(wake)) if !self.pgdat_balanced(wake.class, wake.order) => {
                let zones = self.zones.as_deref_mut().expect("a machine of zones");
                zones.kswapd.woken = Some(wake);
                zones.kswapd.reclaimed = 0;
                wake
            }
            (None, _) => return (Nanos::ZERO, KswapdNext::Sleep),
        };
        let before = self.stats.kswapd_time;
        let freed = match self.kswapd_end(wake.class, wake.order) {
            Some(end) => self.kswapd_pass(end, wake.order, true),
            None => 0,
        };
        let zones = self.zones.as_deref_mut().expect("a machine of zones");
        zones.kswapd.reclaimed += freed;
        let mut wake = wake;
        if wake.order.0 > 0 && zones.kswapd.reclaimed >= 2 << wake.order.0 {
            wake.order = Order(0);
        }
        zones.kswapd.woken = Some(wake);
        let next = if freed == 0 || self.pgdat_balanced(wake.class, wake.order) {
            let zones = self.zones.as_deref_mut().expect("a machine of zones");
            zones.kswapd.woken = None;
            zones.kswapd.nap = Some(wake);
            KswapdNext::Nap
        } else {
            KswapdNext::Step
        };
        (Nanos(self.stats.kswapd_time.0 - before.0), next)
    }

    /// Zone `z` is balanced at `order` with `gap` above `high` for classzone `class`.
    fn zone_balanced(&self, z: usize, order: Order, gap: u64, class: usize) -> bool {
        let zones = self.zones.as_deref().expect("a machine of zones");
        let mark = zones.wmark[z].high + gap;
        zone_watermark_ok(self.phys, z, order, mark, zones.lowmem_reserve[z][class])
    }

    /// The highest zone up to `class` not balanced at `order` for its own class, if any:
    /// where kswapd's pass ends.
    fn kswapd_end(&self, class: usize, order: Order) -> Option<usize> {
        (0..=class)
            .rev()
            .find(|&z| !self.zone_balanced(z, order, 0, z))
    }

    /// `pgdat_balanced`: at order 0, every zone up to `class` balanced for its own class;
    /// above, zones holding at least a quarter of those zones' managed pages.
    fn pgdat_balanced(&self, class: usize, order: Order) -> bool {
        if order.0 == 0 {
            return self.kswapd_end(class, order).is_none();
        }
        let zones = self.zones.as_deref().expect("a machine of zones");
        let (mut managed, mut balanced) = (0, 0);
        for z in 0..=class {
            managed += zones.managed[z];
            if self.zone_balanced(z, order, 0, z) {
                balanced += zones.managed[z];
            }
        }
        balanced >= managed >> 2
    }

    /// One pass of kswapd at `order` over the zones up to `end` (see
    /// [`Mem::kswapd_zones`]); a `step` of kswapd on its own thread takes at most
    /// [`Mem::kswapd_step_cap`] frames from each zone. Returns the frames freed.
    fn kswapd_pass(&mut self, end: usize, order: Order, step: bool) -> u64 {
        let mut freed = 0;
        for z in 0..=end {
            let cap = match step {
                true => self.kswapd_step_cap(z),
                false => u64::MAX,
            };
            let zones = self.zones.as_deref().expect("a machine of zones");
            let (gap, high) = (zones.balance_gap(z), zones.wmark[z].high);
            let test =
                match order.0 > 0 && !zones.compaction_not_skipped_4_1(self.phys, z, order, end) {
                    true => order,
                    false => Order(0),
                };
            if self.zone_balanced(z, test, gap, end) || self.cache.zone_pages(z) == 0 {
                continue;
            }
            let got = if test.0 == 0 {
                let need = (high + 1).saturating_sub(self.phys.zone_frames_free(z));
                self.shrink_zone(z, need.max(SWAP_CLUSTER_MAX).min(cap), z == end)
            } else {
                let target = high.max(SWAP_CLUSTER_MAX).min(cap);
                let mut got = 0;
                while got < target && !self.zone_balanced(z, test, 0, end) {
                    let batch = self.shrink_zone(z, SWAP_CLUSTER_MAX.min(target - got), z == end);
                    if batch == 0 {
                        break;
                    }
                    got += batch;
                }
                got
            };
            self.stats.pgsteal_kswapd += got;
            self.stats.kswapd_time += self.reclaim_time(got);
            freed += got;
        }
        freed
    }

    /// The frames a step of kswapd on its own thread reclaims from zone `z` at most:
    /// `SWAP_CLUSTER_MAX` from the zone with the most LRU pages and from each other zone
    /// its share by its LRU pages (at least one). 4.1's `shrink_lruvec` scans
    /// `lru_size >> priority` of each zone's lists at a priority, so kswapd reclaims the
    /// zones it balances in proportion to their LRU pages (the 4 GiB guest's build:
    /// `pgscan_kswapd_dma32` 347,724 against `pgscan_kswapd_normal` 109,040, as its
    /// zones' sizes); equal batches would reclaim a small zone as fast as a large one.
    fn kswapd_step_cap(&self, z: usize) -> u64 {
        let zones = self.cache.zones();
        let most = (0..zones)
            .map(|z| self.cache.zone_pages(z))
            .max()
            .unwrap_or(0);
        (SWAP_CLUSTER_MAX * self.cache.zone_pages(z))
            .div_ceil(most.max(1))
            .max(1)
    }

    /// One batch of direct reclaim; returns its time.
    fn direct_reclaim(&mut self) -> Nanos {
        let freed = self.shrink(SWAP_CLUSTER_MAX);
        let cost = self.reclaim_time(freed);
        self.stats.pgsteal_direct += freed;
        self.stats.direct_reclaim_time += cost;
        cost
    }

    /// Break the least recently changed partially populated reservation, returning its
    /// unused frames (`vm_reserv_reclaim_inactive`); returns its time.
    fn reclaim_reservation(&mut self) -> Nanos {
        let Some(id) = self.reserv.oldest_partial() else {
            return Nanos::ZERO;
        };
        let b = break_reservation(self.reserv, self.phys, self.stats, id);
        let cost = break_cost(self.costs.alloc, b);
        self.stats.reservations_reclaimed += 1;
        self.stats.reserv_break_time += cost;
        cost
    }

    /// kswapd: below `low`, or with the watermark boosted, break partially populated
    /// reservations, then reclaim page cache, up to `high` plus the boost, which is then
    /// spent.
    pub fn wake_kswapd(&mut self) {
        let free = self.phys.frames_free();
        let boost = self.phys.watermark_boost();
        let high = self.wmark.high + boost;
        self.phys.spend_watermark_boost();
        if (free >= self.wmark.low && boost == 0)
            || free >= high
            || (self.reclaimable() == 0 && self.reserv.oldest_partial().is_none())
        {
            return;
        }
        self.stats.kswapd_wakes += 1;
        while self.phys.frames_free() < high && self.reserv.oldest_partial().is_some() {
            let t = self.reclaim_reservation();
            self.stats.kswapd_time += t;
        }
        let free = self.phys.frames_free();
        if free >= high || self.reclaimable() == 0 {
            return;
        }
        let freed = self.shrink(high - free);
        self.stats.pgsteal_kswapd += freed;
        self.stats.kswapd_time += self.reclaim_time(freed);
    }

    pub fn reclaim_time(&self, pages: u64) -> Nanos {
        Nanos(self.frag.reclaim_page.0 * pages)
    }

    /// Frames reclaim can free: clean page cache and reclaimable slab.
    fn reclaimable(&self) -> u64 {
        self.cache.pages() + self.slab.shrinkable()
    }

    /// Free about `pages` frames: page-cache pages from the inactive tail in batches of
    /// `SWAP_CLUSTER_MAX`, deactivating active pages when the inactive list is low, each
    /// batch followed by the slab shrinker's share (`slab.rs`); with the page cache empty,
    /// slab alone. The last batch's slab share may overshoot `pages`. Returns the frames
    /// freed.
    /// On a machine of zones each zone gives its share, in proportion to its LRU pages
    /// (4.1's `shrink_zones` scans every zone of the zonelist so).
    pub fn shrink(&mut self, pages: u64) -> u64 {
        let zones = self.cache.zones();
        if zones == 1 || self.cache.pages() == 0 {
            return self.shrink_zone(0, pages, true);
        }
        self.shrink_zones((0..zones).rev(), pages)
    }

    /// [`Mem::shrink`] from the zones `list` only, each its share by its LRU pages, in
    /// the list's order; the slab shrinks with the highest zone's scanning only
    /// ([`Mem::shrink_zone`]).
    pub fn shrink_zones(&mut self, list: impl Iterator<Item = usize> + Clone, pages: u64) -> u64 {
        let lru: u64 = list.clone().map(|z| self.cache.zone_pages(z)).sum();
        if lru == 0 {
            let first = list.clone().next();
            return first.map_or(0, |z| self.shrink_zone(z, pages, true));
        }
        // Every request the model makes may use the highest zone (none is GFP_DMA or
        // GFP_DMA32): that is direct reclaim's classzone, even when the list leaves it out.
        let class = self.cache.zones() - 1;
        let mut freed = 0;
        for z in list {
            let share = (pages * self.cache.zone_pages(z)).div_ceil(lru);
            if share > 0 && freed < pages {
                freed += self.shrink_zone(z, share.min(pages - freed), z == class);
            }
        }
        freed
    }

    /// [`Mem::shrink`] from zone `zone`'s LRU lists (slab alone when no page is cached
    /// anywhere); returns the frames freed. The slab shrinkers get their share of the
    /// zone's scanning only if `slab` (`is_classzone`): Linux 4.1's `shrink_zone` calls
    /// `shrink_slab` with a zone's scanning against the zone's LRU pages only for the
    /// request's classzone (direct reclaim: the highest zone of its zonelist) or the
    /// highest zone kswapd balances (`end_zone`), so the scanning of lower zones shrinks
    /// nothing. One zone is its own classzone; since 4.8 reclaim is per node and
    /// `shrink_node` shrinks slab in proportion to all of it.
    pub fn shrink_zone(&mut self, zone: usize, pages: u64, slab: bool) -> u64 {
        let mut freed = 0;
        while freed < pages && self.reclaimable() > 0 {
            let lru = self.cache.zone_pages(zone);
            if lru == 0 {
                if self.cache.pages() > 0 {
                    break;
                }
                self.slab.charge_pages(pages - freed);
                freed += self.shrink_slab();
                continue;
            }
            let (inactive, _) = self.cache.list_lens(zone);
            if inactive == 0 || self.cache.inactive_is_low(zone, self.frame_bytes) {
                self.cache.deactivate(zone, SWAP_CLUSTER_MAX);
            }
            let (batch, mut scanned) = (SWAP_CLUSTER_MAX.min(pages - freed), 0);
            for _ in 0..batch {
                let Some(page) = self.cache.inactive_tail(zone) else {
                    break;
                };
                self.evict_page(page.file, page.index);
                scanned += 1;
            }
            freed += scanned;
            if let Some(zones) = self.zones.as_deref_mut() {
                zones.scanned[zone] += scanned;
            }
            if slab {
                self.slab.charge(scanned, lru);
                freed += self.shrink_slab();
            }
        }
        freed
    }

    /// Free the reclaimable objects the shrinkers' work covers, and the slabs that
    /// empties; returns frames freed.
    fn shrink_slab(&mut self) -> u64 {
        let mut freed = 0;
        for (pfn, order) in self.slab.shrink_due() {
            if self.phys.free(pfn, order).is_err() {
                self.stats.internal_errors += 1;
            }
            freed += 1u64 << order.0;
        }
        self.stats.slab_shrunk_objects = self.slab.shrunk_objects();
        self.stats.slab_rotated_objects = self.slab.rotated_objects();
        self.stats.slab_reclaimed_pages += freed;
        self.sync_vfs_stats();
        freed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::Kernel;
    use crate::pressure::kmem::KmemKind;
    use crate::pressure::pagecache::FileId;
    use crate::testutil::kernel;

    #[test]
    fn a_raised_min_free_kbytes_moves_every_watermark() {
        // 4 GB with THP's recommended 67,584 KB (33 pageblocks over three zones): min is
        // 16,896 pages, the gap min / 4 = 4,224 (above 0.1% of the zone).
        let w = Watermarks::with_min_free_kbytes(1 << 20, 4096, 67_584);
        assert_eq!((w.min, w.low, w.high), (16_896, 21_120, 25_344));
        let mut k = Kernel::new(
            &crate::kernel::MemConfig {
                bytes: 4 << 30,
                geometry: hugemm_hw::Geometry::X86_64,
            },
            crate::testutil::costs(),
        )
        .unwrap();
        assert_eq!(k.watermarks().min, 2048, "Linux's default for 4 GB: 8 MB");
        k.set_min_free_kbytes(67_584);
        assert_eq!(k.watermarks(), w);
    }

    #[test]
    fn watermarks_follow_linux_for_small_and_large_zones() {
        // 64 MB: min_free_kbytes = int_sqrt(16 * 65536) = 1024 KB = 256 pages.
        let w = Watermarks::for_zone(16_384, 4096);
        assert_eq!(
            w,
            Watermarks {
                min: 256,
                low: 320,
                high: 384
            }
        );
        // 16 GB: int_sqrt(16 * 16 GB in KB) = 16384 KB = 4096 pages; scale factor wins.
        let w = Watermarks::for_zone(4 << 20, 4096);
        assert_eq!(w.min, 4096);
        assert_eq!((w.low, w.high), (4096 + 4194, 4096 + 2 * 4194));
        // 1 TB: 128 MB; 8 TB hits the 256 MB cap.
        assert_eq!(Watermarks::for_zone(256 << 20, 4096).min, 32_768);
        assert_eq!(Watermarks::for_zone(2 << 30, 4096).min, 65_536);
    }

    #[test]
    fn linux_4_1s_watermark_check_discounts_the_free_pages_below_the_order() {
        // 8,192 frames, all allocated; then 2,048 single frames freed (every other frame
        // of the first 4,096, so none merges) and two whole order-10 blocks.
        let mut m = PhysMem::new(8192, hugemm_hw::Geometry::X86_64).unwrap();
        let req = crate::phys::buddy::AllocRequest::new(Order(0));
        for _ in 0..8192 {
            m.alloc(&req).unwrap();
        }
        for pfn in (0..4096).step_by(2).chain(4096..6144) {
            m.free(hugemm_hw::Pfn(pfn), Order(0)).unwrap();
        }
        assert_eq!(
            (m.free_blocks(Order(0)), m.free_blocks(Order(10))),
            (2048, 2)
        );
        let ok = |m: &PhysMem, order: u8, mark: u64| zone_watermark_ok_4_1(m, Order(order), mark);
        // Order 0 is a plain count: more than `mark` free.
        assert!(ok(&m, 0, 4095) && !ok(&m, 0, 4096));
        // Order 9 at 4 GiB's low watermark (2,560): 4,096 - 511 > 2,560, and without the
        // 2,048 order-0 frames 1,537 > 1,280.
        assert!(ok(&m, 9, 2560));
        // One order-10 block taken: 3,072 - 511 > 2,560 still, but the frames above order
        // 0 are 1,024 - 511 = 513, not above 1,280. Refused with an order-10 block free.
        let b = m
            .alloc(&crate::phys::buddy::AllocRequest::new(Order(10)))
            .unwrap();
        assert!(ok(&m, 0, 2560) && m.free_blocks(Order(10)) == 1);
        assert!(!ok(&m, 9, 2560));
        // Without the order-0 frames' weight (a lower mark: 1,024 halves to 512), it passes.
        assert!(ok(&m, 9, 1024));
        m.free(b.pfn, Order(10)).unwrap();
        // The total comes first: 4,096 - 1,023 is not above 3,073; at 2,048, 1,025 frames
        // above order 0 exceed 1,024.
        assert!(!ok(&m, 10, 3073) && ok(&m, 10, 2048));
    }

    #[test]
    fn a_scale_factor_of_zero_gives_linux_4_1s_watermarks() {
        // 4 GB: min 2,048 pages. Linux 4.1: low = min + min / 4, high = min + min / 2;
        // 4.6+'s default factor widens both gaps to 0.1% of the zone (1,048 pages).
        let (managed, min_kb) = (1 << 20, 8192);
        let old = Watermarks::with(managed, 4096, min_kb, 0);
        assert_eq!((old.min, old.low, old.high), (2048, 2560, 3072));
        let new = Watermarks::with(managed, 4096, min_kb, WATERMARK_SCALE_FACTOR);
        assert_eq!(
            (new.min, new.low, new.high),
            (2048, 2048 + 1048, 2048 + 2096)
        );
        assert_eq!(new, Watermarks::with_min_free_kbytes(managed, 4096, min_kb));
    }

    #[test]
    fn linux_4_1s_kswapd_woken_for_a_huge_page_reclaims_until_the_zone_is_balanced_at_its_order() {
        // 64 MB (low 320, high 384) full of page cache: free memory sits near `high`,
        // no order-9 block is free, and there is too little for compaction (`low + 2 <<
        // 9` = 1,344 frames), so kswapd woken for order 9 reclaims at order 9, at most
        // `high` (384) pages a pass.
        let mut k = kernel(64);
        k.file_read(FileId(1), 0, 20_000);
        let w = k.watermarks();
        assert_eq!((w.low, w.high), (320, 384));
        // The model's kswapd stops at `high`; 4.1's sleeps only above it.
        k.kswapd_4_1(Order(0));
        let free = k.phys().frames_free();
        assert!(
            free > 384 && free < 2 * 384,
            "memory is full: {free} frames free"
        );
        assert!(!k.phys().has_free_block(Order(9)));
        // Balanced at order 0: woken for it again, kswapd does nothing.
        let (wakes, before) = (k.stats().kswapd_wakes, k.stats().pgsteal_kswapd);
        k.kswapd_4_1(Order(0));
        assert_eq!(k.stats().kswapd_wakes, wakes, "balanced at order 0");
        k.kswapd_4_1(Order(9));
        let reclaimed = k.stats().pgsteal_kswapd - before;
        assert_eq!(k.stats().kswapd_wakes, wakes + 1);
        // It stopped once the zone was balanced at order 9 (the page cache, read in
        // order, freed whole blocks: 608 pages reclaimed, two passes, 1,021 frames
        // free) or compaction could run (more than 1,344 frames free).
        let after = k.phys().frames_free();
        assert!(k.zone_watermark_ok_4_1(Order(9), w.high) || after > w.low + 1024);
        assert!(reclaimed > 384, "more than one pass: {reclaimed} pages");
        assert!(reclaimed <= 12 * 384, "at most twelve passes");
        k.check_invariants().unwrap();
        // Woken again for order 9, it leaves the rest to compaction: nothing reclaimed.
        k.kswapd_4_1(Order(9));
        assert_eq!(k.stats().pgsteal_kswapd - before, reclaimed);
    }

    #[test]
    fn linux_4_1s_direct_reclaim_for_a_huge_page_frees_twice_its_size_unless_compaction_is_ready() {
        // 64 MB (low 320, high 384, balance gap 164) full of page cache: free memory near
        // `high`, too little for compaction (`low + 2 << 9` = 1,344 frames).
        let mut k = kernel(64);
        k.file_read(FileId(1), 0, 20_000);
        k.kswapd_4_1(Order(0));
        let before = k.phys().frames_free();
        assert!(before < 2 * 384, "memory is full: {before} frames free");
        // Order 9: reclaim/compaction mode reclaims in 32-page rounds until 2 << 9 pages
        // are freed (the page cache holds more), and then on while compaction is skipped.
        let r = k.direct_reclaim_4_1(Order(9));
        assert!(!r.compaction_ready);
        assert!(r.freed >= 1024, "{} pages", r.freed);
        assert_eq!(r.freed % SWAP_CLUSTER_MAX, 0, "whole rounds: {}", r.freed);
        assert_eq!(r.progress(), r.freed);
        assert_eq!(k.phys().frames_free(), before + r.freed);
        // With more than high + gap + 2 << 9 frames free and compaction not skipped, the
        // next request's reclaim stands aside, and reports progress.
        k.reclaim(512);
        let w = k.watermarks();
        assert!(k.phys().frames_free() > w.high + 164 + 1024);
        let again = k.direct_reclaim_4_1(Order(9));
        assert!(again.compaction_ready);
        assert_eq!((again.freed, again.progress()), (0, 1));
        // At order 3 and below: one round of 32, whatever compaction could do.
        let small = k.direct_reclaim_4_1(Order(3));
        assert!(!small.compaction_ready);
        assert_eq!(small.freed, SWAP_CLUSTER_MAX);
        k.check_invariants().unwrap();
    }

    #[test]
    fn a_fragmenting_fallback_boosts_kswapd_by_a_pageblock_when_boosting_is_on() {
        // 64 MB (high watermark 384 frames) filled with page cache, so kswapd holds free
        // memory near `high`; then a kernel page, which must fall back into a movable
        // pageblock with a block smaller than a pageblock.
        let after_kernel_page = |factor: u32| {
            let mut k = kernel(64);
            k.set_watermark_boost_factor(factor);
            k.file_read(FileId(1), 0, 20_000);
            let before = k.phys().frames_free();
            assert!(before < 2 * 384, "memory is full: {before} frames free");
            k.kmalloc(KmemKind::Unmovable, hugemm_hw::Order(0)).unwrap();
            k.check_invariants().unwrap();
            assert_eq!(k.phys().watermark_boost(), 0, "kswapd spent the boost");
            (k.phys().frames_free(), k.stats().watermark_boosts)
        };
        let (off, off_boosts) = after_kernel_page(0);
        assert_eq!(off_boosts, 0);
        assert!(off < 2 * 384, "no boost: {off} frames free");
        // On: one boost of a pageblock (512 frames; the cap is 1.5 x 384 = 576), so
        // kswapd reclaims to 384 + 512.
        let (on, on_boosts) = after_kernel_page(15_000);
        assert_eq!(on_boosts, 1);
        // The boosted reclaim asks for kcompactd (once); the unboosted one does not.
        let mut k = kernel(64);
        k.set_watermark_boost_factor(15_000);
        k.file_read(FileId(1), 0, 20_000);
        assert!(!k.take_boost_compaction(), "no boost yet");
        k.kmalloc(KmemKind::Unmovable, hugemm_hw::Order(0)).unwrap();
        assert!(k.take_boost_compaction());
        assert!(!k.take_boost_compaction(), "taken");
        assert!(
            (384 + 512..384 + 512 + 32).contains(&on),
            "boosted: {on} frames free"
        );
    }

    #[test]
    fn explicit_reclaim_frees_the_oldest_pages_first() {
        let mut k = kernel(64);
        k.file_read(FileId(1), 0, 100);
        k.file_read(FileId(1), 0, 10); // pages 0..10 become active
        let free = k.phys().frames_free();
        let out = k.reclaim(50);
        assert_eq!(out.freed, 50);
        assert_eq!(out.cost, Nanos(50 * 1000));
        assert_eq!(k.phys().frames_free(), free + 50);
        assert_eq!(
            k.file_read(FileId(1), 0, 10).hits,
            10,
            "active pages survive"
        );
        assert_eq!(k.reclaim(1000).freed, 50);
        assert_eq!(k.page_cache_pages(), 0);
        k.check_invariants().unwrap();
    }
}
