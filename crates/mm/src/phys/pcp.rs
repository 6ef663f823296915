//! Per-CPU page lists (Linux `struct per_cpu_pages`, `rmqueue_pcplist`, `rmqueue_bulk`,
//! `free_unref_page_commit`, `free_pcppages_bulk`), opt in with
//! [`PhysMem::enable_per_cpu_lists`].
//!
//! Each CPU keeps a list per migrate type per order `0..=PAGE_ALLOC_COSTLY_ORDER`. An
//! allocation of such an order takes the most recently freed block of its CPU's list
//! for the request's type. An empty list is first refilled from the buddy allocator with
//! `batch >> order` blocks (at least 2), each taken as an ordinary allocation would take
//! it, fallbacks included. A freed block of such an order goes to the head of its CPU's
//! list for the type of the pageblock it lies in. A CPU holding `high` frames or more
//! returns `batch` frames to the buddy allocator, the oldest of each list, in the order
//! its kernel's `free_pcppages_bulk` takes the lists ([`PcpDrain`]): Linux 6.x empties
//! the list just freed to first, then the next ones; Linux 4.1 takes a page from each
//! list in turn. Under a workload freeing movable pages by the thousand, the drains
//! that follow return the CPU's kernel pages too (in either order), and the CPU's next
//! kernel allocation refills its list from the buddy allocator, falling back when the
//! kernel's buddy lists are empty (`experiments/apsys16/README.md`: 29,083 unmovable
//! refills in a kernel build where keeping movable pages off the lists leaves 2,084).
//!
//! Blocks on these lists are not free to the buddy allocator: they do not merge with
//! their buddies, and [`PhysMem::frames_free`] does not count them, as `NR_FREE_PAGES`
//! does not. Their frames carry the owner [`OwnerKind::PerCpu`], which the pageblock
//! counters count neither as pinned nor as movable. Compaction, and an allocation that
//! would otherwise fail, first return every list to the buddy allocator
//! (`drain_all_pages`).
//!
//! The sizes follow Linux 6.x ([`PcpConfig::linux`]):
//! - `batch` is `zone_batchsize`: a quarter of the smaller of 1/1024 of the zone and
//!   1 MiB of pages, rounded to a power of two less one (63 for any zone of 1 GiB or more).
//! - `high` is `zone_highsize` without the 6.7 auto-tuning: the low watermark split over
//!   the CPUs plus one, and at least `4 * batch`.
//!
//! or Linux 4.1 ([`PcpConfig::linux_4_1`]): order-0 lists only (`buffered_rmqueue` takes
//! higher orders from the buddy allocator), `batch` as above but from at most 512 KiB of
//! pages (31 for any zone of 512 MiB or more), and `high` six batches
//! (`pageset_set_batch`).
//!
//! What the model leaves out:
//! - the high-order THP list;
//! - the auto-tuning of `high` and of the refill size;
//! - `free_high`'s early drain after a high-order free;
//! - the order-0 lists' own zone lock batching.
//!
//! The CPU is the one [`PhysMem::set_cpu`] last named. The engine names the core whose
//! turn it runs.
//!
//! Each zone has its own lists on each CPU (`zone->pageset`), sized from that zone
//! ([`PhysMem::enable_per_cpu_lists_per_zone`]): an allocation from a zone takes and
//! refills that zone's list, a freed block goes to the list of the zone it lies in.

use crate::error::{MmError, Result};
use crate::phys::buddy::PhysMem;
use crate::phys::frame::OwnerKind;
use crate::phys::pageblock::MigrateType;
use std::collections::VecDeque;

/// Highest order the lists hold (`PAGE_ALLOC_COSTLY_ORDER`).
pub const PCP_MAX_ORDER: u8 = 3;
const ORDERS: usize = PCP_MAX_ORDER as usize + 1;
/// `MIGRATE_PCPTYPES`: the request types, which have lists (the reserve has none).
const TYPES: usize = MigrateType::REQUESTS.len();
const LISTS: usize = TYPES * ORDERS;

/// The sizes of the lists, in frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PcpConfig {
    /// CPUs, one set of lists each.
    pub cpus: usize,
    /// Frames moved per refill and per drain (`pcp->batch`).
    pub batch: u32,
    /// Frames a CPU may hold before it drains (`pcp->high`).
    pub high: u32,
    /// Highest order the lists hold: [`PCP_MAX_ORDER`] in Linux 6.x, 0 in 4.1.
    pub max_order: u8,
    /// The order a drain takes the lists in.
    pub drain: PcpDrain,
}

/// The order in which a drain (`free_pcppages_bulk`) takes a CPU's lists, each from its
/// oldest block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PcpDrain {
    /// Linux 5.19 and later ("Ensure requested pindex is drained first"): a drain after a
    /// free starts with the list that block went to and empties it before the next list
    /// (in `pindex` order: by order, then unmovable, movable, reclaimable); a drain of
    /// every list starts at the first.
    Linux6,
    /// Linux 4.1: round-robin over the three types starting after unmovable (4.1 numbers
    /// them unmovable, reclaimable, movable, so: reclaimable, movable, unmovable, ...), one
    /// block from each non-empty list in turn; `batch_free` counts the lists visited, so
    /// a list found after empty ones gives as many blocks as lists were visited, and the
    /// only non-empty list gives all that is left to free.
    Linux41,
}

impl PcpConfig {
    /// Linux's sizes for a zone of `managed` frames with watermark `low`, on `cpus` CPUs.
    pub fn linux(managed: u64, low: u64, cpus: usize) -> PcpConfig {
        let cpus = cpus.max(1);
        let batch = zone_batchsize(managed, 256);
        let high = (low / (cpus as u64 + 1)).max(batch << 2);
        PcpConfig {
            cpus,
            batch: batch as u32,
            high: high.min(u64::from(u32::MAX)) as u32,
            max_order: PCP_MAX_ORDER,
            drain: PcpDrain::Linux6,
        }
    }

    /// Linux 4.1's sizes for a zone of `managed` frames on `cpus` CPUs: order 0 only,
    /// `batch` from at most 512 KiB of 4 KiB pages, `high = 6 * batch`.
    pub fn linux_4_1(managed: u64, cpus: usize) -> PcpConfig {
        let batch = zone_batchsize(managed, 128);
        PcpConfig {
            cpus: cpus.max(1),
            batch: batch as u32,
            high: (6 * batch) as u32,
            max_order: 0,
            drain: PcpDrain::Linux41,
        }
    }
}

/// `zone_batchsize`: a quarter of the smaller of 1/1024 of the zone and `cap` pages,
/// rounded down to a power of two less one after adding half of it.
fn zone_batchsize(managed: u64, cap: u64) -> u64 {
    match ((managed >> 10).min(cap) / 4).max(1) {
        1 => 1,
        b => prev_power_of_two(b + b / 2) - 1,
    }
}

fn prev_power_of_two(n: u64) -> u64 {
    1 << (63 - n.leading_zeros())
}

/// One CPU's lists: heads at the back, oldest at the front.
#[derive(Clone, Debug, Default)]
struct CpuLists {
    lists: [VecDeque<u32>; LISTS],
    frames: u32,
}

/// The list of `pindex` (Linux 6.x's numbering of the lists: by order, then type).
fn list_of_pindex(pindex: usize) -> usize {
    let mt = MigrateType::REQUESTS[pindex % TYPES];
    index(mt, (pindex / TYPES) as u8)
}

/// Linux 4.1's order-0 lists in its numbering (unmovable, reclaimable, movable).
const LISTS_4_1: [MigrateType; 3] = [
    MigrateType::Unmovable,
    MigrateType::Reclaimable,
    MigrateType::Movable,
];

impl CpuLists {
    /// Take the oldest block of `list`: (first frame, order, the list's type).
    fn take_oldest(&mut self, list: usize) -> Option<(u32, u8, MigrateType)> {
        let pfn = self.lists[list].pop_front()?;
        let order = order_of(list);
        self.frames -= 1 << order;
        Some((pfn, order, MigrateType::REQUESTS[list / ORDERS]))
    }

    /// Linux 6.x's `free_pcppages_bulk` from the list `first`: blocks of at least
    /// `to_free` frames (all there are, if fewer), in the order freed.
    fn take_6(&mut self, to_free: u32, first: usize) -> Vec<(u32, u8, MigrateType)> {
        let pindex_of = |list: usize| order_of(list) as usize * TYPES + list / ORDERS;
        let mut left = to_free.min(self.frames) as i64;
        let mut pindex = pindex_of(first) + LISTS - 1;
        let mut freed = Vec::new();
        while left > 0 {
            let list = loop {
                pindex = (pindex + 1) % LISTS;
                if !self.lists[list_of_pindex(pindex)].is_empty() {
                    break list_of_pindex(pindex);
                }
            };
            while left > 0 {
                let Some(block) = self.take_oldest(list) else {
                    break;
                };
                left -= 1 << block.1;
                freed.push(block);
            }
        }
        freed
    }

    /// Linux 4.1's `free_pcppages_bulk` (order-0 lists): `to_free` frames (all there are,
    /// if fewer), in the order freed.
    fn take_4_1(&mut self, to_free: u32) -> Vec<(u32, u8, MigrateType)> {
        let list = |n: usize| index(LISTS_4_1[n], 0);
        let mut to_free = to_free.min(self.lists_4_1_frames());
        let (mut mt, mut batch_free) = (0usize, 0u32);
        let mut freed = Vec::new();
        while to_free > 0 {
            loop {
                batch_free += 1;
                mt = (mt + 1) % LISTS_4_1.len();
                if !self.lists[list(mt)].is_empty() {
                    break;
                }
            }
            // This is the only non-empty list: free them all.
            if batch_free == LISTS_4_1.len() as u32 {
                batch_free = to_free;
            }
            // `do { ... } while (--to_free && --batch_free && !list_empty(list))`
            while let Some(block) = self.take_oldest(list(mt)) {
                freed.push(block);
                to_free -= 1;
                if to_free == 0 {
                    break;
                }
                batch_free -= 1;
                if batch_free == 0 || self.lists[list(mt)].is_empty() {
                    break;
                }
            }
        }
        freed
    }

    /// Frames on the order-0 lists (all a Linux 4.1 CPU holds).
    fn lists_4_1_frames(&self) -> u32 {
        LISTS_4_1
            .iter()
            .map(|&mt| self.lists[index(mt, 0)].len() as u32)
            .sum()
    }
}

/// The per-CPU lists of every CPU and zone (see the module doc).
#[derive(Clone, Debug)]
pub(crate) struct PerCpuLists {
    /// The sizes of each zone's lists (the CPU count, the highest order and the drain
    /// order are the same in every zone).
    configs: Vec<PcpConfig>,
    /// The lists of CPU `c` in zone `z` at `c * zones + z`.
    sets: Vec<CpuLists>,
}

fn index(mt: MigrateType, order: u8) -> usize {
    mt.index() * ORDERS + order as usize
}

fn order_of(list: usize) -> u8 {
    (list % ORDERS) as u8
}

impl PerCpuLists {
    /// Lists for `configs.len()` zones (at least one), sized `configs[z]` in zone `z`.
    pub fn new(configs: Vec<PcpConfig>) -> PerCpuLists {
        let cpus = configs[0].cpus.max(1);
        PerCpuLists {
            sets: vec![CpuLists::default(); cpus * configs.len()],
            configs,
        }
    }

    /// The sizes of the highest zone's lists.
    pub fn config(&self) -> PcpConfig {
        self.configs[self.configs.len() - 1]
    }

    fn cpus(&self) -> usize {
        self.sets.len() / self.configs.len()
    }

    /// The lists of `cpu` in `zone`.
    fn set(&self, cpu: usize, zone: usize) -> usize {
        cpu * self.configs.len() + zone
    }

    /// Frames on every CPU's lists.
    pub fn frames(&self) -> u64 {
        self.sets.iter().map(|c| u64::from(c.frames)).sum()
    }
}

impl PhysMem {
    /// Keep per-CPU page lists of `config`'s sizes from now on (see `pcp.rs`); orders
    /// above [`PCP_MAX_ORDER`] are never listed, nor orders above 0 with Linux 4.1's
    /// drain.
    pub fn enable_per_cpu_lists(&mut self, config: PcpConfig) {
        let configs = vec![config; self.zone_count()];
        self.set_per_cpu_lists(configs);
    }

    /// [`PhysMem::enable_per_cpu_lists`] with zone `z`'s lists sized `configs[z]` (one
    /// config per zone; their CPU count, highest order and drain order must agree).
    pub fn enable_per_cpu_lists_per_zone(&mut self, configs: &[PcpConfig]) -> Result<()> {
        let first = configs.first().copied();
        if configs.len() != self.zone_count()
            || configs.iter().any(|c| {
                first.is_some_and(|f| {
                    (c.cpus, c.max_order, c.drain) != (f.cpus, f.max_order, f.drain)
                })
            })
        {
            return Err(MmError::InvalidArgument {
                what: "per-CPU lists need one size per zone, for the same CPUs, orders and drain",
            });
        }
        self.set_per_cpu_lists(configs.to_vec());
        Ok(())
    }

    fn set_per_cpu_lists(&mut self, mut configs: Vec<PcpConfig>) {
        for config in &mut configs {
            config.max_order = match config.drain {
                // Linux 4.1 kept order-0 lists only, and its drain takes no others.
                PcpDrain::Linux41 => 0,
                PcpDrain::Linux6 => config.max_order.min(PCP_MAX_ORDER),
            };
        }
        self.pcp = Some(PerCpuLists::new(configs));
        self.cpu = 0;
    }

    /// The sizes of the per-CPU lists (of the highest zone), if they are kept.
    pub fn per_cpu_lists(&self) -> Option<PcpConfig> {
        self.pcp.as_ref().map(PerCpuLists::config)
    }

    /// Frames held on per-CPU lists (0 without them).
    pub fn frames_on_per_cpu_lists(&self) -> u64 {
        self.pcp.as_ref().map_or(0, PerCpuLists::frames)
    }

    /// Make `cpu` the CPU whose lists later allocations and frees use (taken modulo the
    /// number of lists).
    pub fn set_cpu(&mut self, cpu: usize) {
        if let Some(p) = &self.pcp {
            self.cpu = cpu % p.cpus();
        }
    }

    /// Whether a request of `order` goes through the per-CPU lists.
    pub(crate) fn uses_pcp(&self, order: u8) -> bool {
        self.pcp
            .as_ref()
            .is_some_and(|p| order <= p.configs[0].max_order)
    }

    /// Whether some CPU's list of the zone being allocated from holds a block of
    /// `order` for `mt` (one a `drain_all_pages` would hand to the buddy allocator).
    pub(crate) fn pcp_holds(&self, order: u8, mt: MigrateType) -> bool {
        let at = index(mt, order);
        let zone = self.zone;
        self.uses_pcp(order)
            && self.pcp.as_ref().is_some_and(|p| {
                (0..p.cpus()).any(|cpu| !p.sets[p.set(cpu, zone)].lists[at].is_empty())
            })
    }

    /// Every block held on a per-CPU list, as (first frame, order, the list's type).
    pub(crate) fn pcp_blocks(&self) -> impl Iterator<Item = (u32, u8, MigrateType)> + '_ {
        let sets = self.pcp.as_ref().map_or(&[][..], |p| &p.sets[..]);
        sets.iter().flat_map(|c| {
            c.lists.iter().enumerate().flat_map(|(at, list)| {
                let mt = MigrateType::REQUESTS[at / ORDERS];
                list.iter().map(move |&pfn| (pfn, order_of(at), mt))
            })
        })
    }

    /// `rmqueue_pcplist`: a block of `order` for `mt` from this CPU's list of the zone
    /// being allocated from, refilled from that zone's buddy lists when empty; `None` if
    /// they have none.
    pub(crate) fn pcp_take(&mut self, order: u8, mt: MigrateType) -> Option<u32> {
        let at = index(mt, order);
        let set = self.pcp.as_ref()?.set(self.cpu, self.zone);
        if self.pcp.as_ref()?.sets[set].lists[at].is_empty() {
            self.pcp_refill(order, mt);
        }
        let p = self.pcp.as_mut()?;
        let c = &mut p.sets[set];
        let pfn = c.lists[at].pop_back()?;
        c.frames -= 1 << order;
        Some(pfn)
    }

    /// `rmqueue_bulk`: up to `max(batch >> order, 2)` blocks, each as `__rmqueue` takes
    /// it, to the tail of the list in the order taken.
    fn pcp_refill(&mut self, order: u8, mt: MigrateType) {
        let Some(p) = &self.pcp else { return };
        let n = (p.configs[self.zone].batch >> order).max(2);
        let mut got = Vec::with_capacity(n as usize);
        for _ in 0..n {
            match self.rmqueue(order, mt) {
                Ok(pfn) => {
                    self.mark_allocated(pfn, order, OwnerKind::PerCpu);
                    got.push(pfn);
                }
                Err(_) => break,
            }
        }
        let (cpu, zone) = (self.cpu, self.zone);
        if let Some(p) = &mut self.pcp {
            let set = p.set(cpu, zone);
            let c = &mut p.sets[set];
            c.frames += (got.len() as u32) << order;
            // The first block taken is the first handed out: the head is the back.
            c.lists[index(mt, order)].extend(got.into_iter().rev());
        }
    }

    /// `free_unref_page_commit`: put the block at `pfn` of `order` (already marked as
    /// held per CPU) at the head of this CPU's list, in the block's zone, for its
    /// pageblock's type, and drain those lists if they now hold `high` frames or more.
    pub(crate) fn pcp_give(&mut self, pfn: u32, order: u8) -> Result<()> {
        // 4.1's `free_hot_cold_page`: a reserve page goes on the Movable list (its
        // `freepage_migratetype` takes it back to the reserve when drained).
        let mt = match self.blocks.type_of(pfn) {
            MigrateType::Reserve => MigrateType::Movable,
            mt => mt,
        };
        let zone = self.nodes.of(pfn);
        let cpu = self.cpu;
        let Some(p) = &mut self.pcp else {
            return Ok(());
        };
        let (high, batch) = (p.configs[zone].high, p.configs[zone].batch);
        let set = p.set(cpu, zone);
        let c = &mut p.sets[set];
        let at = index(mt, order);
        c.lists[at].push_back(pfn);
        c.frames += 1 << order;
        if c.frames >= high {
            self.pcp_drain(set, high.saturating_sub(batch), at)?;
        }
        Ok(())
    }

    /// `free_pcppages_bulk`: return the oldest blocks of the lists `set` (a CPU's in one
    /// zone) to the buddy allocator, the lists taken in [`PcpDrain`]'s order (Linux
    /// 6.x's from `first`, the list just freed to), until they hold at most `keep` frames.
    fn pcp_drain(&mut self, set: usize, keep: u32, first: usize) -> Result<()> {
        let Some(p) = &mut self.pcp else {
            return Ok(());
        };
        let drain = p.configs[0].drain;
        let c = &mut p.sets[set];
        let to_free = c.frames.saturating_sub(keep);
        let freed = match drain {
            PcpDrain::Linux6 => c.take_6(to_free, first),
            PcpDrain::Linux41 => c.take_4_1(to_free),
        };
        for (pfn, order, list) in freed {
            match drain {
                PcpDrain::Linux6 => self.free_to_buddy(pfn, order, OwnerKind::PerCpu)?,
                PcpDrain::Linux41 => self.free_to_buddy_as(pfn, order, OwnerKind::PerCpu, list)?,
            }
        }
        Ok(())
    }

    /// `drain_local_pages`: return the current CPU's lists, in every zone, to the buddy
    /// allocator.
    pub fn drain_local_per_cpu_lists(&mut self) -> Result<()> {
        let Some(p) = &self.pcp else {
            return Ok(());
        };
        let sets: Vec<usize> = (0..p.configs.len()).map(|z| p.set(self.cpu, z)).collect();
        for set in sets {
            self.pcp_drain(set, 0, 0)?;
        }
        Ok(())
    }

    /// `drain_all_pages`: return every CPU's lists to the buddy allocator.
    pub fn drain_per_cpu_lists(&mut self) -> Result<()> {
        let sets = self.pcp.as_ref().map_or(0, |p| p.sets.len());
        for set in 0..sets {
            self.pcp_drain(set, 0, 0)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phys::buddy::AllocRequest;
    use hugemm_hw::{Geometry, Order, Pfn};

    /// 8 pageblocks, per-CPU lists of batch 4 and high 12 on two CPUs.
    fn mem() -> PhysMem {
        let mut m = PhysMem::new(4096, Geometry::X86_64).unwrap();
        m.enable_per_cpu_lists(PcpConfig {
            cpus: 2,
            batch: 4,
            high: 12,
            max_order: PCP_MAX_ORDER,
            drain: PcpDrain::Linux6,
        });
        m
    }

    fn page() -> AllocRequest {
        AllocRequest::new(Order(0))
    }

    #[test]
    fn a_refill_takes_a_batch_and_frees_are_reused_last_in_first_out_per_cpu() {
        let mut m = mem();
        let a = m.alloc(&page()).unwrap().pfn;
        assert_eq!(a, Pfn(0), "the first block of the batch first");
        assert_eq!(m.frames_on_per_cpu_lists(), 3);
        assert_eq!(
            m.frames_free(),
            4096 - 4,
            "listed frames are not free to the buddy"
        );
        assert_eq!(m.alloc(&page()).unwrap().pfn, Pfn(1));
        m.free(a, Order(0)).unwrap();
        assert_eq!(m.alloc(&page()).unwrap().pfn, a, "the last freed, first");
        m.free(a, Order(0)).unwrap();
        m.set_cpu(1);
        let b = m.alloc(&page()).unwrap().pfn;
        assert_ne!(b, a, "another CPU does not see CPU 0's list");
        m.check_counters().unwrap();
    }

    #[test]
    fn a_fallback_while_another_cpu_lists_the_type_is_counted() {
        // Three pageblocks (an order-10 block and an order-9 one), order-0 lists only
        // (orders 1+ go to the buddy allocator).
        let mut m = PhysMem::new(1536, Geometry::X86_64).unwrap();
        m.enable_per_cpu_lists(PcpConfig {
            cpus: 2,
            batch: 4,
            high: 12,
            max_order: 0,
            drain: PcpDrain::Linux6,
        });
        let kernel = |order| AllocRequest::new(Order(order)).migrate(MigrateType::Unmovable);
        // CPU 0's refill claims the order-10 block (pageblocks 0-1) for unmovable; 3
        // frames stay on its list.
        m.alloc(&kernel(0)).unwrap();
        assert_eq!(m.frames_on_per_cpu_lists(), 3);
        // Order-2 requests empty the unmovable free lists (1,020 frames).
        m.set_cpu(1);
        for _ in 0..255 {
            m.alloc(&kernel(2)).unwrap();
        }
        let s = m.fallback_stats();
        assert_eq!((s.fallbacks, s.beside_per_cpu_blocks), (1, 0));
        // CPU 1's list is empty and so are the free lists: it falls back into pageblock 2
        // while CPU 0 holds three unmovable frames.
        m.alloc(&kernel(0)).unwrap();
        let s = m.fallback_stats();
        assert_eq!((s.fallbacks, s.beside_per_cpu_blocks), (2, 1));
        m.check_counters().unwrap();
    }

    /// One CPU's lists holding `blocks` (type, order, first frames, oldest first).
    fn lists(blocks: &[(MigrateType, u8, &[u32])]) -> CpuLists {
        let mut c = CpuLists::default();
        for &(mt, order, pfns) in blocks {
            c.lists[index(mt, order)].extend(pfns);
            c.frames += (pfns.len() as u32) << order;
        }
        c
    }

    #[test]
    fn linux_6_drains_the_list_just_freed_to_first_then_the_next_in_pindex_order() {
        use MigrateType::*;
        let mut c = lists(&[
            (Unmovable, 0, &[1, 2]),
            (Movable, 0, &[20, 21, 22]),
            (Reclaimable, 0, &[10]),
            (Unmovable, 1, &[40]),
        ]);
        let movable = index(Movable, 0);
        let m = Movable;
        assert_eq!(c.take_6(3, movable), [(20, 0, m), (21, 0, m), (22, 0, m)]);
        // Movable's list is empty: reclaimable order 0, then unmovable order 1 (pindex
        // 3), before wrapping round to unmovable order 0.
        assert_eq!(
            c.take_6(3, movable),
            [(10, 0, Reclaimable), (40, 1, Unmovable)]
        );
        assert_eq!((c.frames, c.lists[index(Unmovable, 0)].len()), (2, 2));
    }

    #[test]
    fn linux_4_1_drains_a_page_of_each_type_in_turn_from_reclaimable() {
        use MigrateType::*;
        let mut c = lists(&[
            (Unmovable, 0, &[1, 2]),
            (Movable, 0, &[20, 21, 22, 23, 24, 25, 26, 27]),
            (Reclaimable, 0, &[10, 11]),
        ]);
        let pfns = |v: Vec<(u32, u8, MigrateType)>| v.into_iter().map(|b| b.0).collect::<Vec<_>>();
        assert_eq!(pfns(c.take_4_1(6)), [10, 20, 1, 11, 21, 2]);
        // Reclaimable is empty (batch_free 1), movable gives 2 (batch_free 2); then with
        // unmovable and reclaimable empty, movable is the only list and gives the rest.
        assert_eq!(pfns(c.take_4_1(4)), [22, 23, 24, 25]);
        assert_eq!(c.frames, 2);
    }

    #[test]
    fn linux_4_1_returns_a_drained_page_to_its_lists_type_not_its_pageblocks() {
        // One order-10 block, movable. A page taken for the movable lists and returned
        // as 4.1 returns a per-CPU page listed as reclaimable merges with its free
        // buddies, and the whole block lands on the reclaimable lists.
        let mut m = PhysMem::new(1024, Geometry::X86_64).unwrap();
        let b = m.alloc(&page()).unwrap();
        m.free_to_buddy_as(b.pfn.0 as u32, 0, OwnerKind::Anon, MigrateType::Reclaimable)
            .unwrap();
        assert_eq!(m.free_frames(MigrateType::Reclaimable), 1024);
        assert_eq!(m.pageblock_type(b.pfn), Some(MigrateType::Movable));
    }

    #[test]
    fn a_cpu_at_high_drains_its_oldest_blocks_down_to_high_minus_batch() {
        let mut m = mem();
        let pages: Vec<Pfn> = (0..40).map(|_| m.alloc(&page()).unwrap().pfn).collect();
        for p in &pages[..11] {
            m.free(*p, Order(0)).unwrap();
        }
        // 11 freed + 0 left from the last refill (40 is a multiple of 4).
        assert_eq!(m.frames_on_per_cpu_lists(), 11);
        m.free(pages[11], Order(0)).unwrap();
        assert_eq!(
            m.frames_on_per_cpu_lists(),
            8,
            "12 >= high: drained to 12 - 4"
        );
        // The oldest (first freed) went back to the buddy allocator.
        assert!(matches!(
            m.frame(pages[0]).unwrap().state(),
            crate::phys::frame::FrameState::FreeHead { .. }
                | crate::phys::frame::FrameState::FreeTail
        ));
        m.check_counters().unwrap();
    }

    #[test]
    fn draining_every_list_lets_all_memory_merge_again() {
        let mut m = mem();
        let mut held = Vec::new();
        for cpu in 0..2 {
            m.set_cpu(cpu);
            held.extend((0..30).map(|_| m.alloc(&page()).unwrap().pfn));
        }
        for p in held {
            m.free(p, Order(0)).unwrap();
        }
        assert!(m.frames_on_per_cpu_lists() > 0);
        m.drain_per_cpu_lists().unwrap();
        assert_eq!(m.frames_on_per_cpu_lists(), 0);
        assert_eq!(m.frames_free(), 4096);
        assert_eq!(m.free_blocks(Order(10)), 4, "every block merged back");
        m.check_counters().unwrap();
    }

    #[test]
    fn an_allocation_drains_the_lists_before_it_fails() {
        let mut m = mem();
        let mut held = Vec::new();
        while let Ok(b) = m.alloc(&page()) {
            held.push(b.pfn);
        }
        assert_eq!(held.len(), 4096);
        // Three pages freed on CPU 1 stay on its list (below high).
        m.set_cpu(1);
        for p in held.drain(..3) {
            m.free(p, Order(0)).unwrap();
        }
        assert_eq!((m.frames_free(), m.frames_on_per_cpu_lists()), (0, 3));
        m.set_cpu(0);
        let mut got = 0;
        while m.alloc(&page()).is_ok() {
            got += 1;
        }
        assert_eq!(got, 3, "CPU 0 got the frames CPU 1 had listed");
        m.check_counters().unwrap();
    }

    #[test]
    fn linux_sizes_for_small_and_large_zones() {
        // 4 GiB: batch 63; low 3,096 over 4 CPUs + 1 is 619.
        let c = PcpConfig::linux(1 << 20, 3096, 4);
        assert_eq!((c.batch, c.high), (63, 619));
        // 64 MiB: 16,384 frames >> 10 = 16, / 4 = 4, rounddown_pow2(6) - 1 = 3.
        let c = PcpConfig::linux(16_384, 200, 2);
        assert_eq!((c.batch, c.high), (3, 66));
    }

    #[test]
    fn linux_4_1_sizes_and_order_0_only() {
        // 4 GiB: 1,024 frames per 1/1024, capped at 128 (512 KiB), / 4 = 32,
        // rounddown_pow2(48) - 1 = 31; high 6 x 31.
        let c = PcpConfig::linux_4_1(1 << 20, 4);
        assert_eq!((c.batch, c.high, c.max_order), (31, 186, 0));
        let c = PcpConfig::linux_4_1(16_384, 2);
        assert_eq!((c.batch, c.high), (3, 18));
        let mut m = PhysMem::new(4096, Geometry::X86_64).unwrap();
        m.enable_per_cpu_lists(PcpConfig::linux_4_1(4096, 1));
        assert!(m.uses_pcp(0));
        assert!(!m.uses_pcp(1), "4.1 lists order 0 only");
        m.alloc(&AllocRequest::new(Order(1))).unwrap();
        assert_eq!(
            m.frames_on_per_cpu_lists(),
            0,
            "an order-1 request skips the lists"
        );
        m.alloc(&page()).unwrap();
        assert_eq!(
            m.frames_on_per_cpu_lists(),
            1,
            "a batch of 2, one handed out"
        );
        m.check_counters().unwrap();
    }
}
