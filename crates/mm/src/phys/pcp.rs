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
//! returns the oldest blocks to the buddy allocator, a list at a time in round-robin
//! order, until it holds at most `high - batch`.
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

use crate::error::Result;
use crate::phys::buddy::PhysMem;
use crate::phys::frame::OwnerKind;
use crate::phys::pageblock::MigrateType;
use std::collections::VecDeque;

/// Highest order the lists hold (`PAGE_ALLOC_COSTLY_ORDER`).
pub const PCP_MAX_ORDER: u8 = 3;
const ORDERS: usize = PCP_MAX_ORDER as usize + 1;
const LISTS: usize = MigrateType::COUNT * ORDERS;

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
    /// The list the last drain stopped at (`free_pcppages_bulk`'s `pindex`).
    cursor: usize,
}

/// The per-CPU lists of every CPU (see the module doc).
#[derive(Clone, Debug)]
pub(crate) struct PerCpuLists {
    config: PcpConfig,
    cpus: Vec<CpuLists>,
}

fn index(mt: MigrateType, order: u8) -> usize {
    mt.index() * ORDERS + order as usize
}

fn order_of(list: usize) -> u8 {
    (list % ORDERS) as u8
}

impl PerCpuLists {
    pub fn new(config: PcpConfig) -> PerCpuLists {
        PerCpuLists {
            config,
            cpus: vec![CpuLists::default(); config.cpus.max(1)],
        }
    }

    pub fn config(&self) -> PcpConfig {
        self.config
    }

    /// Frames on every CPU's lists.
    pub fn frames(&self) -> u64 {
        self.cpus.iter().map(|c| u64::from(c.frames)).sum()
    }
}

impl PhysMem {
    /// Keep per-CPU page lists of `config`'s sizes from now on (see `pcp.rs`); orders
    /// above [`PCP_MAX_ORDER`] are never listed.
    pub fn enable_per_cpu_lists(&mut self, mut config: PcpConfig) {
        config.max_order = config.max_order.min(PCP_MAX_ORDER);
        self.pcp = Some(PerCpuLists::new(config));
        self.cpu = 0;
    }

    /// The sizes of the per-CPU lists, if they are kept.
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
            self.cpu = cpu % p.cpus.len();
        }
    }

    /// Whether a request of `order` goes through the per-CPU lists.
    pub(crate) fn uses_pcp(&self, order: u8) -> bool {
        self.pcp
            .as_ref()
            .is_some_and(|p| order <= p.config.max_order)
    }

    /// Whether some CPU's list holds a block of `order` for `mt` (one a
    /// `drain_all_pages` would hand to the buddy allocator).
    pub(crate) fn pcp_holds(&self, order: u8, mt: MigrateType) -> bool {
        let at = index(mt, order);
        self.uses_pcp(order)
            && self
                .pcp
                .as_ref()
                .is_some_and(|p| p.cpus.iter().any(|c| !c.lists[at].is_empty()))
    }

    /// Every block held on a per-CPU list, as (first frame, order, the list's type).
    pub(crate) fn pcp_blocks(&self) -> impl Iterator<Item = (u32, u8, MigrateType)> + '_ {
        let cpus = self.pcp.as_ref().map_or(&[][..], |p| &p.cpus[..]);
        cpus.iter().flat_map(|c| {
            c.lists.iter().enumerate().flat_map(|(at, list)| {
                let mt = MigrateType::ALL[at / ORDERS];
                list.iter().map(move |&pfn| (pfn, order_of(at), mt))
            })
        })
    }

    /// `rmqueue_pcplist`: a block of `order` for `mt` from this CPU's list, refilled
    /// from the buddy allocator when empty; `None` if the buddy allocator has none.
    pub(crate) fn pcp_take(&mut self, order: u8, mt: MigrateType) -> Option<u32> {
        let at = index(mt, order);
        let cpu = self.cpu;
        if self.pcp.as_ref()?.cpus[cpu].lists[at].is_empty() {
            self.pcp_refill(order, mt);
        }
        let p = self.pcp.as_mut()?;
        let c = &mut p.cpus[cpu];
        let pfn = c.lists[at].pop_back()?;
        c.frames -= 1 << order;
        Some(pfn)
    }

    /// `rmqueue_bulk`: up to `max(batch >> order, 2)` blocks, each as `__rmqueue` takes
    /// it, to the tail of the list in the order taken.
    fn pcp_refill(&mut self, order: u8, mt: MigrateType) {
        let Some(p) = &self.pcp else { return };
        let n = (p.config.batch >> order).max(2);
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
        let cpu = self.cpu;
        if let Some(p) = &mut self.pcp {
            let c = &mut p.cpus[cpu];
            c.frames += (got.len() as u32) << order;
            // The first block taken is the first handed out: the head is the back.
            c.lists[index(mt, order)].extend(got.into_iter().rev());
        }
    }

    /// `free_unref_page_commit`: put the block at `pfn` of `order` (already marked as
    /// held per CPU) at the head of this CPU's list for its pageblock's type, and drain
    /// the CPU if it now holds `high` frames or more.
    pub(crate) fn pcp_give(&mut self, pfn: u32, order: u8) -> Result<()> {
        let mt = self.blocks.type_of(pfn);
        let cpu = self.cpu;
        let Some(p) = &mut self.pcp else {
            return Ok(());
        };
        let (high, batch) = (p.config.high, p.config.batch);
        let c = &mut p.cpus[cpu];
        let at = index(mt, order);
        c.lists[at].push_back(pfn);
        c.frames += 1 << order;
        c.cursor = at;
        if c.frames >= high {
            self.pcp_drain(cpu, high.saturating_sub(batch))?;
        }
        Ok(())
    }

    /// `free_pcppages_bulk`: return `cpu`'s oldest blocks to the buddy allocator, one list
    /// after another round-robin from the one after the last, until it holds at most
    /// `keep` frames.
    fn pcp_drain(&mut self, cpu: usize, keep: u32) -> Result<()> {
        loop {
            let Some(p) = &mut self.pcp else {
                return Ok(());
            };
            let c = &mut p.cpus[cpu];
            if c.frames <= keep || c.frames == 0 {
                return Ok(());
            }
            let mut list = c.cursor;
            loop {
                list = (list + 1) % LISTS;
                if !c.lists[list].is_empty() {
                    break;
                }
            }
            c.cursor = list;
            let order = order_of(list);
            let mut freed = Vec::new();
            while c.frames > keep {
                let Some(pfn) = c.lists[list].pop_front() else {
                    break;
                };
                c.frames -= 1 << order;
                freed.push(pfn);
            }
            for pfn in freed {
                self.free_to_buddy(pfn, order, OwnerKind::PerCpu)?;
            }
        }
    }

    /// `drain_local_pages`: return the current CPU's lists to the buddy allocator.
    pub fn drain_local_per_cpu_lists(&mut self) -> Result<()> {
        self.pcp_drain(self.cpu, 0)
    }

    /// `drain_all_pages`: return every CPU's lists to the buddy allocator.
    pub fn drain_per_cpu_lists(&mut self) -> Result<()> {
        let cpus = self.pcp.as_ref().map_or(0, |p| p.cpus.len());
        for cpu in 0..cpus {
            self.pcp_drain(cpu, 0)?;
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
