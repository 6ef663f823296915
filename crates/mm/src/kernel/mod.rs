//! [`Kernel`]: physical memory, the address spaces of processes, the page cache, the
//! recorded TLB flushes and the counters, behind the kernel model's interface (docs/design.md).
//!
//! The facade, the top group (`lib.rs` tells the order): it may import every group. Owns
//! the process table, the hot translation path ([`Kernel::touch`]) and the read-only
//! observations policies use. The files beside this one are `impl Kernel` blocks: the
//! operations that need the whole kernel (`fault`; `mmap`, `munmap`, `madvise` and
//! process exit; `migrate`; `movepages`; `compaction`'s scanners and `compaction_holes`;
//! `kmem`; `invariants`), and thin entry points to the mechanisms of the groups below
//! (`huge`, `pressure`, `metrics`). This module must not make policy decisions (page size
//! at fault time, what to promote or split).

mod compaction;
mod compaction_holes;
mod fault;
mod huge;
mod invariants;
mod kmem;
mod metrics;
pub(crate) mod migrate;
mod mmap;
mod movepages;
pub(crate) mod pressure;
#[cfg(test)]
mod zones_tests;

use crate::api::{
    AccessedBits, FaultInfo, PerCpuSizes, RegionInfo, RegionState, TlbFlush, Touch, Translation,
    WatermarkCheck,
};
use crate::costs::{FragCosts, MmCosts};
use crate::error::{MmError, Result};
use crate::phys::buddy::{AllocRequest, Block, PhysMem, PrezeroScope, ZeroedFirst};
use crate::phys::fallback::{FallbackPolicy, FallbackRules};
use crate::phys::frame::OwnerKind;
use crate::phys::pcp::PcpConfig;
use crate::phys::reserv::ReservTable;
use crate::pressure::compaction::CompactState;
use crate::pressure::lru::PageCache;
use crate::pressure::movepages::{MigrationCosts, TierStats};
use crate::pressure::reclaim::{
    default_min_free_kbytes, zone_watermark_ok_4_1, Mem, Watermarks, WATERMARK_SCALE_FACTOR,
};
use crate::pressure::slab::SlabCaches;
use crate::pressure::zones::{Mark, Zones};
use crate::space::addrspace::AddressSpace;
use crate::space::content::{ContentDraw, Quantiles, WriteContent};
use crate::space::mech::Mech;
use crate::space::pagetable::{Slot, VaLayout, Walked, ZeroPages};
use crate::space::pte::Pte;
use crate::space::vma::{align_up, Vma};
use crate::stats::KernelStats;
use hugemm_hw::{Geometry, Nanos, Order, PageSize, Pfn, Pid, VirtAddr};
use serde::{Deserialize, Serialize};

/// The machine's memory: its size and MMU geometry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemConfig {
    /// Bytes of physical memory (a multiple of the base page size).
    pub bytes: u64,
    /// Page sizes, table fan-out and buddy orders.
    pub geometry: Geometry,
}

/// The kernel model.
#[derive(Clone, Debug)]
pub struct Kernel {
    pub(crate) layout: VaLayout,
    pub(crate) geometry: Geometry,
    pub(crate) costs: MmCosts,
    /// `costs.zero_time` of one base page, computed once: the fault path charges it
    /// at every 4 KB fault, and a division there is measurable (simulator speed only).
    clear_base: Nanos,
    pub(crate) phys: PhysMem,
    /// Index = pid; pid 0 is never used (a frame's reverse map reads pid 0 as "none").
    pub(crate) procs: Vec<Option<AddressSpace>>,
    pub(crate) stats: KernelStats,
    pub(crate) flushes: Vec<TlbFlush>,
    pub(crate) zero: ZeroPages,
    pub(crate) cache: PageCache,
    pub(crate) frag: FragCosts,
    pub(crate) wmark: Watermarks,
    /// Linux 4.1's zones' watermarks, reserves and batches, on a machine of zones
    /// ([`Kernel::with_zones`]); `wmark` is then the highest zone's, which 4.1's one-zone
    /// checks read ([`PhysMem::checked_frames_free`]).
    pub(crate) zones: Option<Zones>,
    /// `vm.min_free_kbytes` and `vm.watermark_scale_factor`, which `wmark` follows.
    min_free_kb: u64,
    wmark_scale: u32,
    /// The watermark check of high-order allocations the engine makes through
    /// [`Kernel::alloc_pages_checked`], and direct compaction's rules.
    pub(crate) wmark_check: WatermarkCheck,
    pub(crate) compact: CompactState,
    pub(crate) reserv: ReservTable,
    /// Every live kernel allocation, in its slab cache; the reclaimable ones are shrunk
    /// under memory pressure.
    pub(crate) slab: SlabCaches,
    /// Seed of the page-content draws (`content.rs`).
    pub(crate) content_seed: u64,
    /// Quantile tables of first non-zero bytes, one per mean in use.
    pub(crate) quantiles: Vec<Quantiles>,
    /// Clear frames not known zero at fault and collapse (see [`Kernel::set_clear_pages`]).
    pub(crate) clear_pages: bool,
    /// The parts of migration's cost between nodes, once set.
    pub(crate) migration: Option<MigrationCosts>,
    /// Migrations between nodes so far.
    pub(crate) tier_stats: TierStats,
    /// Bytes migration has read and written on each node (index = node).
    pub(crate) migration_traffic: Vec<u64>,
    /// When references set accessed bits (see [`Kernel::set_accessed_bits`]).
    pub(crate) accessed_bits: AccessedBits,
}

impl Kernel {
    /// A machine with all memory free (and dirty), no processes, Linux's default
    /// pageblock fallback.
    pub fn new(cfg: &MemConfig, costs: MmCosts) -> Result<Kernel> {
        Kernel::with_nodes(cfg, &[cfg.bytes], costs)
    }

    /// [`Kernel::new`] with memory split into nodes of `node_bytes` each (node 0 first:
    /// see [`crate::node`]); they must add up to `cfg.bytes`.
    pub fn with_nodes(cfg: &MemConfig, node_bytes: &[u64], costs: MmCosts) -> Result<Kernel> {
        Kernel::boot(cfg, node_bytes, costs, PhysMem::with_nodes)
    }

    /// [`Kernel::new`] with one node split into zones of `zone_bytes` each, lowest
    /// addresses first (Linux's DMA, DMA32, Normal: see [`crate::node`]); they must add
    /// up to `cfg.bytes`. Allocation then walks the zones as Linux 4.1 does, with each
    /// zone's watermarks, `lowmem_reserve` and fair-policy batch (`zones.rs`), and
    /// kswapd balances zones, reclaiming from each zone's own LRU lists.
    pub fn with_zones(cfg: &MemConfig, zone_bytes: &[u64], costs: MmCosts) -> Result<Kernel> {
        let mut k = Kernel::boot(cfg, zone_bytes, costs, PhysMem::with_zones)?;
        if zone_bytes.len() > 1 {
            let starts: Vec<u32> = (1..k.phys.zone_count())
                .filter_map(|z| k.phys.zone_frames(z))
                .map(|(a, _)| a.0 as u32)
                .collect();
            k.cache.set_zones(&starts);
            k.set_zone_marks();
        }
        Ok(k)
    }

    fn boot(
        cfg: &MemConfig,
        node_bytes: &[u64],
        costs: MmCosts,
        phys: fn(&[u64], Geometry) -> Result<PhysMem>,
    ) -> Result<Kernel> {
        costs.validate()?;
        let layout = VaLayout::new(cfg.geometry)?;
        let base = cfg.geometry.base_bytes();
        if !cfg.bytes.is_multiple_of(base) {
            return Err(MmError::InvalidConfig {
                what: "memory size must be a multiple of the base page size",
            });
        }
        if node_bytes.iter().sum::<u64>() != cfg.bytes {
            return Err(MmError::InvalidConfig {
                what: "the nodes' memory must add up to the machine's memory",
            });
        }
        if node_bytes.iter().any(|b| !b.is_multiple_of(base)) {
            return Err(MmError::InvalidConfig {
                what: "each node's memory must be a multiple of the base page size",
            });
        }
        let frames: Vec<u64> = node_bytes.iter().map(|b| b / base).collect();
        let phys = phys(&frames, cfg.geometry)?;
        let min_free_kb = default_min_free_kbytes(phys.frames_total() * base / 1024);
        let wmark = Watermarks::with(
            phys.frames_total(),
            base,
            min_free_kb,
            WATERMARK_SCALE_FACTOR,
        );
        let compact = CompactState::new();
        let reserv = ReservTable::new(
            phys.frames_total(),
            layout.huge_order(),
            layout.region_bytes(),
        );
        let huge =
            align_up(cfg.bytes + base, layout.region_bytes()).ok_or(MmError::InvalidConfig {
                what: "memory size too large",
            })?;
        Ok(Kernel {
            layout,
            geometry: cfg.geometry,
            clear_base: costs.zero_time(base),
            costs,
            phys,
            procs: vec![None],
            stats: KernelStats::default(),
            flushes: Vec::new(),
            zero: ZeroPages {
                base: cfg.bytes,
                huge,
            },
            cache: PageCache::default(),
            frag: FragCosts::derived(&costs, base),
            wmark,
            zones: None,
            min_free_kb,
            wmark_scale: WATERMARK_SCALE_FACTOR,
            wmark_check: WatermarkCheck::default(),
            compact,
            reserv,
            slab: SlabCaches::default(),
            content_seed: 0,
            quantiles: Vec::new(),
            clear_pages: true,
            migration: None,
            tier_stats: TierStats::default(),
            migration_traffic: Vec::new(),
            accessed_bits: AccessedBits::Walk,
        })
    }

    /// The MMU geometry.
    pub fn geometry(&self) -> Geometry {
        self.geometry
    }

    /// The costs the kernel charges.
    pub fn costs(&self) -> &MmCosts {
        &self.costs
    }

    /// Price the faults from here on with the trap `trap`; returns the trap it replaces.
    /// A host prices a fault on a virtual machine's memory so for the length of that
    /// fault (the engine's `external_touch`).
    pub fn set_fault_trap(&mut self, trap: Nanos) -> Nanos {
        std::mem::replace(&mut self.costs.fault_trap, trap)
    }

    /// The costs of page-cache reads, reclaim and compaction.
    pub fn frag_costs(&self) -> &FragCosts {
        &self.frag
    }

    /// Replace the costs of page-cache reads, reclaim and compaction.
    pub fn set_frag_costs(&mut self, frag: FragCosts) -> Result<()> {
        frag.validate()?;
        self.frag = frag;
        Ok(())
    }

    /// Physical memory, the page cache and the counters, for allocating with reclaim.
    pub(crate) fn mem(&mut self) -> Mem<'_> {
        Mem {
            phys: &mut self.phys,
            cache: &mut self.cache,
            stats: &mut self.stats,
            frag: &self.frag,
            wmark: self.wmark,
            frame_bytes: self.layout.base_bytes(),
            reserv: &mut self.reserv,
            costs: &self.costs,
            slab: &mut self.slab,
            zones: self.zones.as_mut(),
        }
    }

    /// Start a process with an empty address space whose writes leave data
    /// ([`WriteContent::default`]). Pids are never reused.
    pub fn create_process(&mut self) -> Pid {
        let pid = Pid(self.procs.len() as u32);
        let c = WriteContent::default();
        let draw = ContentDraw::new(c, self.content_seed, pid, self.quantiles_of(c));
        self.procs.push(Some(AddressSpace::new(self.layout, draw)));
        pid
    }

    /// The quantile table of `c`'s mean, built on first use.
    fn quantiles_of(&mut self, c: WriteContent) -> Quantiles {
        let mean = c.mean_first_nonzero;
        if let Some(q) = self.quantiles.iter().find(|q| q.mean() == mean) {
            return q.clone();
        }
        let q = Quantiles::new(mean);
        self.quantiles.push(q.clone());
        q
    }

    /// Whether faults and collapses clear the frames they map when these are not known
    /// zero (default: yes, as every kernel must). Off is HawkEye Table 1's hypothetical
    /// "no page-zeroing" Linux: the clearing is not charged, and the frames are still
    /// modelled as zero-filled (a real kernel would leak the previous owner's data).
    pub fn set_clear_pages(&mut self, yes: bool) {
        self.clear_pages = yes;
    }

    /// Seed the draws of page contents of processes created from now on (the run's
    /// seed: the same seed gives the same contents).
    pub fn set_content_seed(&mut self, seed: u64) {
        self.content_seed = seed;
    }

    /// What `pid`'s first writes to pages leave in them from now on (`content.rs`).
    pub fn set_write_content(&mut self, pid: Pid, content: WriteContent) -> Result<()> {
        content.validate()?;
        if !self.is_live(pid) {
            return Err(MmError::NoSuchProcess(pid));
        }
        let draw = ContentDraw::new(content, self.content_seed, pid, self.quantiles_of(content));
        if let Some(Some(space)) = self.procs.get_mut(pid.0 as usize) {
            space.content = draw;
        }
        Ok(())
    }

    /// The address space of a live process.
    pub(crate) fn space(&self, pid: Pid) -> Option<&AddressSpace> {
        self.procs.get(pid.0 as usize)?.as_ref()
    }

    /// A live process's address space and the mechanism context, borrowed together.
    pub(crate) fn parts(&mut self, pid: Pid) -> Option<(&mut AddressSpace, Mech<'_>)> {
        let space = self.procs.get_mut(pid.0 as usize)?.as_mut()?;
        let mech = Mech {
            phys: &mut self.phys,
            costs: &self.costs,
            stats: &mut self.stats,
            flushes: &mut self.flushes,
            layout: self.layout,
            pid,
            cache: &mut self.cache,
            frag: &self.frag,
            wmark: self.wmark,
            reserv: &mut self.reserv,
            slab: &mut self.slab,
            zones: self.zones.as_mut(),
            clear_pages: self.clear_pages,
            clear_base: self.clear_base,
        };
        Some((space, mech))
    }

    /// When references set accessed bits from now on: [`AccessedBits::Walk`] (the
    /// default, as x86 does: only a walk sets the bit, and the caller, which knows
    /// whether the reference walked, sets it with [`Kernel::mark_accessed`]) or
    /// [`AccessedBits::EveryReference`] ([`Kernel::touch`] sets it).
    pub fn set_accessed_bits(&mut self, mode: AccessedBits) {
        self.accessed_bits = mode;
    }

    /// When references set accessed bits.
    pub fn accessed_bits(&self) -> AccessedBits {
        self.accessed_bits
    }

    /// The hot path, once per simulated reference: translate `va`, setting the dirty bit
    /// on a write, and the accessed bit under [`AccessedBits::EveryReference`] only;
    /// [`Touch::Mapped`]'s `young` says whether the accessed bit is set (under
    /// [`AccessedBits::Walk`], a reference that walks and finds it clear must call
    /// [`Kernel::mark_accessed`]). O(1) on the cached chunk, allocation-free.
    #[inline(always)]
    pub fn touch(&mut self, pid: Pid, va: VirtAddr, write: bool) -> Touch {
        let Some(Some(space)) = self.procs.get_mut(pid.0 as usize) else {
            return Touch::Segfault;
        };
        let every = self.accessed_bits == AccessedBits::EveryReference;
        match space.pt.touch(va.0, write, every, self.zero) {
            Walked::Hit(t) => t,
            Walked::FirstWrite(t) => {
                record_first_write(space, &mut self.phys, self.layout, va.0);
                t
            }
            Walked::Miss if space.vmas.find(va.0).is_some() => Touch::NotPresent,
            Walked::Miss => Touch::Segfault,
        }
    }

    /// Set the accessed bit of the entry mapping `va` in `pid`, as a page walk does (the
    /// dirty bit is [`Kernel::touch`]'s). Returns whether anything maps `va`.
    pub fn mark_accessed(&mut self, pid: Pid, va: VirtAddr) -> bool {
        match self.procs.get_mut(pid.0 as usize) {
            Some(Some(space)) => space.pt.mark_accessed(va.0),
            _ => false,
        }
    }

    /// Prefetch into the host's caches the page-table entry translating `va`, ahead of a
    /// [`Kernel::touch`] (simulator speed only; changes nothing). Returns the size of the
    /// page that maps `va`, as far as its region's page-table slot tells (a 4 KB entry
    /// may still be absent), so the caller can prefetch more; `None` when nothing maps
    /// the region.
    #[inline]
    pub fn prefetch(&self, pid: Pid, va: VirtAddr) -> Option<PageSize> {
        match self.procs.get(pid.0 as usize) {
            Some(Some(space)) => space.pt.prefetch(va.0),
            _ => None,
        }
    }

    /// The physical address and page size `va` maps to, if mapped, without setting
    /// accessed bits.
    #[inline]
    pub fn peek(&self, pid: Pid, va: VirtAddr) -> Option<(u64, PageSize)> {
        match self.procs.get(pid.0 as usize) {
            Some(Some(space)) => space.pt.peek(va.0, self.zero),
            _ => None,
        }
    }

    /// What the fault path needs to decide a page size; `None` outside every VMA.
    pub fn fault_info(&self, pid: Pid, va: VirtAddr) -> Option<FaultInfo> {
        let space = self.space(pid)?;
        let vma = space.vma(va.0)?;
        let region = self.layout.region_of(va.0);
        let slot = space.slot(region);
        Some(FaultInfo {
            advice: vma.advice,
            huge_fits: space
                .vma_covering(region, self.layout.region_bytes())
                .is_some(),
            region_empty: matches!(slot, None | Some(Slot::Empty)),
            region_huge_zero: matches!(slot, Some(Slot::HugeZero { .. })),
            region_reserved: self.reserv.find(pid, region).is_some(),
        })
    }

    /// The state of the 2 MB region holding `region` (any address in it).
    pub fn region_info(&self, pid: Pid, region: VirtAddr) -> RegionInfo {
        let n = self.layout.fanout as u32;
        let all = |bit: bool| if bit { n } else { 0 };
        let info = |state, present, zero, accessed, dirty| RegionInfo {
            state,
            present,
            zero,
            accessed,
            dirty,
        };
        match self.space(pid).and_then(|s| s.slot(region.0)) {
            Some(Slot::Huge {
                accessed, dirty, ..
            }) => info(RegionState::Huge, n, 0, all(*accessed), all(*dirty)),
            Some(Slot::HugeZero { accessed }) => {
                info(RegionState::HugeZero, n, n, all(*accessed), 0)
            }
            Some(Slot::Table(t)) => {
                let count = |f: fn(&Pte) -> bool| t.ptes().iter().filter(|p| f(p)).count() as u32;
                info(
                    RegionState::Table,
                    t.present(),
                    t.zero(),
                    count(|p| p.accessed()),
                    count(|p| p.dirty()),
                )
            }
            None | Some(Slot::Empty) => info(RegionState::Unmapped, 0, 0, 0, 0),
        }
    }

    /// The regions the process maps with huge pages (the huge zero page excluded), low to
    /// high.
    pub fn huge_regions(&self, pid: Pid) -> Vec<VirtAddr> {
        self.space(pid).map_or_else(Vec::new, |s| {
            s.pt.slots()
                .filter(|(_, slot)| matches!(slot, Slot::Huge { .. }))
                .map(|(r, _)| VirtAddr(r))
                .collect()
        })
    }

    /// The 2 MB-aligned regions intersecting the process's VMAs, low to high.
    pub fn regions(&self, pid: Pid) -> impl Iterator<Item = VirtAddr> + '_ {
        let rb = self.layout.region_bytes();
        let mut last = None;
        self.space(pid)
            .into_iter()
            .flat_map(|s| s.vmas())
            .flat_map(move |v| (v.start.0 & !(rb - 1)..v.end.0).step_by(rb as usize))
            .filter(move |r| last.replace(*r) != Some(*r))
            .map(VirtAddr)
    }

    /// Clear the accessed bits of the region holding `region`; returns how many base
    /// pages had theirs set (a huge entry counts 512). No TLB flush, as x86's
    /// `ptep_clear_flush_young` skips it: under [`AccessedBits::Walk`] a page whose
    /// translation stays in a TLB keeps its bit clear until its next walk.
    pub fn clear_accessed(&mut self, pid: Pid, region: VirtAddr) -> usize {
        let n = self.layout.fanout as usize;
        let Some(Some(space)) = self.procs.get_mut(pid.0 as usize) else {
            return 0;
        };
        match space.pt.slot_mut_uncached(region.0) {
            Some(Slot::Table(t)) => t.clear_accessed() as usize,
            Some(Slot::Huge { accessed, .. } | Slot::HugeZero { accessed }) => {
                std::mem::take(accessed) as usize * n
            }
            None | Some(Slot::Empty) => 0,
        }
    }

    /// Clear the accessed bits of the region holding `region` as Linux's reverse-map
    /// walk (`folio_referenced`) does on x86; returns how many base pages had theirs set.
    /// 4 KB entries are cleared without a flush (`ptep_clear_flush_young`), like
    /// [`Kernel::clear_accessed`]; a huge entry found young is cleared *and its 2 MB range
    /// flushed* (`pmdp_clear_flush_young`, arch/x86/mm/pgtable.c, since Linux 2.6.38), so
    /// its next reference walks and sets the bit again even if the translation was cached.
    pub fn clear_referenced(&mut self, pid: Pid, region: VirtAddr) -> usize {
        let huge = matches!(
            self.space(pid).and_then(|s| s.pt.slot(region.0)),
            Some(Slot::Huge { .. } | Slot::HugeZero { .. })
        );
        let set = self.clear_accessed(pid, region);
        if huge && set > 0 {
            let bytes = self.layout.region_bytes();
            let start = self.layout.region_of(region.0);
            self.flushes.push(TlbFlush {
                pid,
                start: VirtAddr(start),
                end: VirtAddr(start + bytes),
            });
        }
        set
    }

    /// Translate `va` without touching any bit.
    pub fn translate(&self, pid: Pid, va: VirtAddr) -> Option<Translation> {
        let l = self.layout;
        let huge_off = va.0 & (l.region_bytes() - 1);
        let (pa, size, zero_page) = match self.space(pid)?.slot(va.0)? {
            Slot::Huge { pfn, .. } => ((pfn.0 << l.base_shift) + huge_off, PageSize::Huge, false),
            Slot::HugeZero { .. } => (self.zero.huge + huge_off, PageSize::Huge, true),
            Slot::Table(t) => {
                let pte = t.get(l.page_index(va.0));
                let off = va.0 & (l.base_bytes() - 1);
                match (pte.is_present(), pte.is_zero_page()) {
                    (false, _) => return None,
                    (true, true) => (self.zero.base + off, PageSize::Base, true),
                    (true, false) => ((pte.pfn().0 << l.base_shift) + off, PageSize::Base, false),
                }
            }
            Slot::Empty => return None,
        };
        Some(Translation {
            pa,
            size,
            zero_page,
        })
    }

    /// The process's VMAs, low to high.
    pub fn vmas(&self, pid: Pid) -> impl Iterator<Item = Vma> + '_ {
        self.space(pid).into_iter().flat_map(|s| s.vmas().copied())
    }

    /// Whether `pid` is a live process.
    pub fn is_live(&self, pid: Pid) -> bool {
        self.space(pid).is_some()
    }

    /// Drain the TLB shootdowns mechanisms recorded.
    pub fn take_tlb_flushes(&mut self) -> Vec<TlbFlush> {
        std::mem::take(&mut self.flushes)
    }

    /// Kernel-wide counters.
    pub fn stats(&self) -> &KernelStats {
        &self.stats
    }

    /// Set `vm.min_free_kbytes` (Linux computes it from memory; THP raises it, see
    /// [`Watermarks::with_min_free_kbytes`]); the watermarks follow. Later per-CPU lists
    /// are sized from the new low watermark.
    pub fn set_min_free_kbytes(&mut self, kb: u64) {
        self.min_free_kb = kb;
        self.update_watermarks();
    }

    /// Set `vm.watermark_scale_factor` (Linux 4.6+, default 10; 0 gives Linux 4.1's
    /// watermarks, see [`Watermarks::with`]); the watermarks follow. Later per-CPU lists
    /// are sized from the new low watermark.
    pub fn set_watermark_scale_factor(&mut self, scale: u32) {
        self.wmark_scale = scale;
        self.update_watermarks();
    }

    /// Choose the watermark check of high-order requests and direct compaction's rules
    /// ([`WatermarkCheck`]).
    pub fn set_watermark_check(&mut self, check: WatermarkCheck) {
        self.wmark_check = check;
    }

    /// The watermark check in force.
    pub fn watermark_check(&self) -> WatermarkCheck {
        self.wmark_check
    }

    fn update_watermarks(&mut self) {
        let base = self.geometry.base_bytes();
        let managed = self.phys.frames_total();
        self.wmark = Watermarks::with(managed, base, self.min_free_kb, self.wmark_scale);
        if self.zones.is_some() {
            self.set_zone_marks();
        }
    }

    /// The zones' watermarks from `min_free_kb` and `wmark_scale`, and `wmark` the
    /// highest zone's.
    fn set_zone_marks(&mut self) {
        let managed: Vec<u64> = (0..self.phys.zone_count())
            .filter_map(|z| self.phys.zone_frames(z))
            .map(|(a, b)| b.0 - a.0)
            .collect();
        let base = self.geometry.base_bytes();
        let mut zones = Zones::new(&managed, base, self.min_free_kb, self.wmark_scale);
        if let Some(old) = &self.zones {
            zones.kswapd = old.kswapd;
        }
        self.wmark = zones.checked();
        self.zones = Some(zones);
    }

    /// The zones' watermarks and `lowmem_reserve`, on a machine of zones.
    pub fn zones(&self) -> Option<&Zones> {
        self.zones.as_ref()
    }

    /// What the slab shrinker does to the reclaimable objects it scans from now on
    /// ([`Shrinker`](crate::Shrinker); the default frees every one).
    pub fn set_shrinker(&mut self, shrinker: crate::api::Shrinker) {
        self.slab.set_shrinker(shrinker);
    }

    /// Give every page-cache page written from then on a buffer head: a reclaimable slab
    /// object of [`BUFFER_HEAD_BYTES`](crate::slab::BUFFER_HEAD_BYTES) (39 to an order-0
    /// slab), allocated when the page is first written ([`Kernel::file_write`]) and freed
    /// when it leaves the cache (reclaim, deletion, `drop_caches`), never by the slab
    /// shrinker. That is what a file system of 4 KiB blocks that keeps buffer heads
    /// (ext4's buffered writes: `create_empty_buffers`; freed by `try_to_free_buffers`)
    /// adds to every page it writes: 2.5% of the written page cache in reclaimable slab,
    /// which lives and dies with the cache rather than with the files' dentries and
    /// inodes. Pages only read carry none (ext4 reads through `mpage_readpages`). Off by
    /// default.
    pub fn set_buffer_heads(&mut self) -> Result<()> {
        self.slab.buffer_heads(self.layout.base_bytes())?;
        Ok(())
    }

    /// Give every file read or written from then on its inode and dentry, and its
    /// page-cache tree its nodes, as reclaimable slab objects of Linux 4.1's ext4 sizes,
    /// each living as long as what holds it in Linux (`vfs.rs`: inodes until the file is
    /// deleted, dentries until the shrinker frees them, tree nodes until deletion or
    /// `drop_caches`; only the dentries are shrunk). What a workload allocates itself as
    /// reclaimable memory comes on top. Off by default; call before anything is read.
    pub fn set_vfs_objects(&mut self) -> Result<()> {
        if self.cache.vfs.is_none() {
            let caches = self.slab.vfs_caches(self.layout.base_bytes())?;
            self.cache.vfs = Some(crate::pressure::vfs::Vfs::new(caches));
        }
        Ok(())
    }

    /// Keep Linux 4.1's `MIGRATE_RESERVE` pageblocks (`setup_zone_migrate_reserve`):
    /// the `min` watermark rounded up to whole pageblocks, at most 2
    /// ([`reserve_pageblocks`]), at the start of memory ([`PhysMem::set_migrate_reserve`]
    /// says what they do). Call after the watermarks are set and before anything is
    /// allocated; returns the pageblocks kept per node.
    pub fn set_migrate_reserve(&mut self) -> Result<u32> {
        let pb_frames = 1u64 << self.phys.pageblock_order().0;
        let blocks: Vec<u32> = match &self.zones {
            Some(zones) => zones
                .wmark
                .iter()
                .map(|w| reserve_pageblocks(w.min, pb_frames))
                .collect(),
            None => vec![reserve_pageblocks(self.wmark.min, pb_frames); self.phys.zone_count()],
        };
        self.phys.set_migrate_reserve_per_zone(&blocks)?;
        Ok(self.phys.migrate_reserve())
    }

    /// Keep Linux's per-CPU page lists for `cpus` CPUs from now on, sized from this
    /// zone and its low watermark ([`PcpConfig::linux`]; `pcp.rs`).
    pub fn enable_per_cpu_lists(&mut self, cpus: usize) {
        self.enable_per_cpu_lists_as(PerCpuSizes::Linux6, cpus);
    }

    /// [`Kernel::enable_per_cpu_lists`] with the lists `sizes` says: Linux 6.x's, or
    /// Linux 4.1's ([`PcpConfig::linux_4_1`]).
    pub fn enable_per_cpu_lists_as(&mut self, sizes: PerCpuSizes, cpus: usize) {
        let config = |managed: u64, low: u64| match sizes {
            PerCpuSizes::Linux6 => PcpConfig::linux(managed, low, cpus),
            PerCpuSizes::Linux4_1 => PcpConfig::linux_4_1(managed, cpus),
        };
        match &self.zones {
            // Each zone's lists sized from that zone (`zone_pcp_init`).
            Some(zones) => {
                let configs: Vec<PcpConfig> = (zones.managed.iter().zip(&zones.wmark))
                    .map(|(&managed, w)| config(managed, w.low))
                    .collect();
                if let Err(e) = self.phys.enable_per_cpu_lists_per_zone(&configs) {
                    unreachable!("one config per zone, alike but for their sizes: {e}");
                }
            }
            None => {
                let managed = self.phys.frames_total();
                self.phys
                    .enable_per_cpu_lists(config(managed, self.wmark.low));
            }
        }
    }

    /// Make `cpu` the CPU whose per-CPU lists later allocations and frees use (no effect
    /// without them).
    pub fn set_cpu(&mut self, cpu: usize) {
        self.phys.set_cpu(cpu);
    }

    /// Physical memory, read-only.
    pub fn phys(&self) -> &PhysMem {
        &self.phys
    }

    /// Free a block likely to merge to the tail of its list, as Linux does
    /// ([`PhysMem::set_buddy_merge_likely`]; off by default).
    pub fn set_buddy_merge_likely(&mut self, on: bool) {
        self.phys.set_buddy_merge_likely(on);
    }

    /// Allocate the highest addresses first, as Linux before 5.10 queued boot memory
    /// ([`PhysMem::queue_boot_memory_highest_first`]); only before anything is allocated.
    pub fn queue_boot_memory_highest_first(&mut self) -> Result<()> {
        self.phys.queue_boot_memory_highest_first()
    }

    /// Give the kernel the pageblocks a booted kernel holds
    /// ([`crate::phys::buddy::PhysMem::boot_kernel_memory`]), taken in the boot order
    /// (`highest_first` for Linux before 5.10). Before any allocation.
    pub fn boot_kernel_memory(
        &mut self,
        boot: &crate::phys::boot::BootKernelMemory,
        highest_first: bool,
    ) -> Result<()> {
        self.phys.boot_kernel_memory(boot, highest_first)
    }

    /// Follow `rules`' common pageblock fallback rules.
    pub fn set_fallback_rules(&mut self, rules: FallbackRules) {
        self.phys.set_fallback_rules(rules);
    }

    /// `vm.watermark_boost_factor` (Linux 5.0+; 0, the default here, turns watermark
    /// boosting off: `pressure/reclaim.rs`).
    pub fn set_watermark_boost_factor(&mut self, factor: u32) {
        self.phys.set_watermark_boost_factor(factor);
    }

    /// Whether kswapd reclaimed for a watermark boost since the last call, so that
    /// kcompactd is due for a pageblock (the engine wakes it, as `balance_pgdat` does).
    pub fn take_boost_compaction(&mut self) -> bool {
        self.phys.take_boost_compaction()
    }

    /// Replace the pageblock fallback policy (APSys'16's policies plug in here).
    pub fn set_fallback_policy(&mut self, policy: Box<dyn FallbackPolicy>) {
        self.phys.set_fallback_policy(policy);
    }

    /// Resident bytes of a process: frames it maps (zero pages excluded).
    pub fn rss_bytes(&self, pid: Pid) -> u64 {
        self.space(pid).map_or(0, |s| {
            s.rss_pages(self.layout.fanout) << self.layout.base_shift
        })
    }

    /// Useful bytes of a process: the base pages it maps (in base-page or huge mappings)
    /// that it has written since they were allocated (`content.rs`). Resident bytes
    /// beyond these are bloat: pages the process never wrote.
    pub fn useful_bytes(&self, pid: Pid) -> u64 {
        self.space(pid)
            .map_or(0, |s| s.written_pages << self.layout.base_shift)
    }

    /// Zero free blocks in place, up to `budget` frames (whole blocks only): one run of a
    /// pre-zeroing daemon (HawkEye section 3.1). `scope` says which blocks. Returns the
    /// blocks zeroed (first frame, order); clearing them is the daemon's cost, not the
    /// kernel's.
    pub fn prezero(&mut self, budget: u64, scope: PrezeroScope) -> Vec<(Pfn, Order)> {
        let blocks = self.phys.prezero(budget, scope);
        self.stats.prezeroed_pages += blocks.iter().map(|b| 1u64 << b.1 .0).sum::<u64>();
        blocks
    }

    /// Whether allocations of anonymous memory take zeroed free blocks first (HawkEye's
    /// zero list, the default) or take blocks in list order (the released code).
    pub fn set_zeroed_first(&mut self, mode: ZeroedFirst) {
        self.phys.set_zeroed_first(mode);
    }

    /// H-Policy's order-9 preservation (SysMon-H / H-Policy section 4, rule iii; the rule
    /// is in `phys/preserve.rs`): requests below the huge order take blocks of other
    /// orders before one of the huge order is split. Off by default (Linux).
    pub fn set_preserve_huge_blocks(&mut self, on: bool) {
        self.phys.set_preserve_huge_blocks(on);
    }

    /// Huge pages a process maps (the huge zero page excluded).
    pub fn huge_pages(&self, pid: Pid) -> u64 {
        self.space(pid).map_or(0, |s| s.huge_pages)
    }

    /// Allocate frames for a kernel owner straight from the buddy allocator: no reclaim,
    /// no kswapd ([`Kernel::kmalloc`] is the path with both). Process memory and page
    /// tables are allocated only by the mechanisms, page-cache pages by
    /// [`Kernel::file_read`].
    pub fn alloc_pages(&mut self, req: &AllocRequest) -> Result<Block> {
        kernel_request(req)?;
        let fast =
            req.order().0 == 0 || zone_watermark_ok_4_1(&self.phys, req.order(), self.wmark.low);
        let block = self.phys.alloc(req)?;
        self.stats.order_watermark_misses += u64::from(!fast);
        Ok(block)
    }

    /// [`Kernel::alloc_pages`] behind Linux 4.1's per-order watermark check
    /// (`get_page_from_freelist`): `None`, with nothing allocated, unless
    /// [`zone_watermark_ok_4_1`] passes for the watermark `mark` and a block is free. On
    /// a machine of zones, each zone of the request's zonelist in turn, highest first,
    /// with its own watermark and its `lowmem_reserve` for the request's classzone (the
    /// fair policy left out: these are the slow path's and the stress tests' requests).
    /// Not counted in `order_watermark_misses`: the check was made. Refuses what
    /// [`Kernel::alloc_pages`] refuses.
    pub fn alloc_pages_checked(&mut self, req: &AllocRequest, mark: Mark) -> Result<Option<Block>> {
        kernel_request(req)?;
        let order = req.order();
        if self.zones.is_none() {
            if !zone_watermark_ok_4_1(&self.phys, order, self.wmark.get(mark)) {
                return Ok(None);
            }
            return Ok(self.phys.alloc(req).ok());
        }
        let list = req.node_pref();
        let Some(class) = self.phys.zonelist_zone(list, 0) else {
            return Ok(None);
        };
        Ok(self
            .mem()
            .zone_walk(req, list, class, mark, false)
            .ok()
            .flatten())
    }

    /// Free a block allocated by [`Kernel::alloc_pages`].
    pub fn free_pages(&mut self, pfn: Pfn, order: Order) -> Result<()> {
        match self.phys.frame(pfn).and_then(|f| f.owner()) {
            Some(OwnerKind::KernelUnmovable | OwnerKind::KernelReclaimable) => {
                self.phys.free(pfn, order)
            }
            _ => Err(MmError::BadFree {
                pfn: pfn.0,
                what: "not a kernel block",
            }),
        }
    }
}

/// [`Kernel::alloc_pages`]'s rule: only kernel owners allocate straight from the buddy
/// allocator.
fn kernel_request(req: &AllocRequest) -> Result<()> {
    match req.owner_kind() {
        OwnerKind::KernelUnmovable | OwnerKind::KernelReclaimable => Ok(()),
        _ => Err(MmError::InvalidArgument {
            what: "anonymous, page-table and page-cache frames have their own paths",
        }),
    }
}

/// A write through a mapping of `va` whose frame may not record one yet: if the frame's
/// process has not written it since it was allocated, draw what the write leaves
/// (`content.rs`) and count the page as written. Out of line: once per page.
#[cold]
#[inline(never)]
fn record_first_write(space: &mut AddressSpace, phys: &mut PhysMem, l: VaLayout, va: u64) {
    let idx = l.page_index(va);
    let (pfn, unwritten) = match space.pt.slot_mut_uncached(va) {
        Some(Slot::Huge { pfn, unwritten, .. }) => (Pfn(pfn.0 + idx as u64), Some(unwritten)),
        Some(Slot::Table(t)) => (t.get(idx).pfn(), None),
        _ => return,
    };
    if phys.frame(pfn).is_none_or(|f| f.is_written()) {
        return;
    }
    if let Some(n) = unwritten {
        *n = n.saturating_sub(1);
    }
    let content = space.content.draw(hugemm_hw::Vpn(va >> l.base_shift));
    phys.frames.update(pfn.0 as u32, |f| f.set_written(content));
    space.written_pages += 1;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::HugeAdvice;
    use crate::testutil::{costs, kernel, HUGE, PAGE};
    use crate::MigrateType;

    #[test]
    fn the_kernel_can_move_between_threads() {
        fn send<T: Send>() {}
        send::<Kernel>();
    }

    #[test]
    fn bad_configurations_are_refused() {
        let g = Geometry::X86_64;
        assert!(Kernel::new(
            &MemConfig {
                bytes: 4097,
                geometry: g
            },
            costs()
        )
        .is_err());
        assert!(Kernel::new(
            &MemConfig {
                bytes: 0,
                geometry: g
            },
            costs()
        )
        .is_err());
        let bad = MmCosts {
            zero_gbps: 0.0,
            ..costs()
        };
        assert!(Kernel::new(
            &MemConfig {
                bytes: 1 << 20,
                geometry: g
            },
            bad
        )
        .is_err());
        let odd = Geometry {
            base_shift: 40,
            ..g
        };
        assert!(Kernel::new(
            &MemConfig {
                bytes: 1 << 20,
                geometry: odd
            },
            costs()
        )
        .is_err());
    }

    #[test]
    fn regions_cover_vmas_once_each() {
        let mut k = kernel(64);
        let pid = k.create_process();
        let a = k.mmap(pid, PAGE, HugeAdvice::None).unwrap();
        k.mmap(pid, PAGE, HugeAdvice::Hugepage).unwrap(); // same region, another VMA
        let b = k.mmap(pid, 2 * HUGE, HugeAdvice::None).unwrap();
        let regions: Vec<_> = k.regions(pid).collect();
        assert_eq!(regions, vec![a, b, VirtAddr(b.0 + HUGE)]);
        assert_eq!(k.regions(Pid(42)).count(), 0);
    }

    #[test]
    fn fault_info_describes_the_region() {
        let mut k = kernel(64);
        let pid = k.create_process();
        let va = k.mmap(pid, HUGE + PAGE, HugeAdvice::Hugepage).unwrap();
        let info = k.fault_info(pid, va).unwrap();
        assert_eq!(
            info,
            FaultInfo {
                advice: HugeAdvice::Hugepage,
                huge_fits: true,
                region_empty: true,
                region_huge_zero: false,
                region_reserved: false
            }
        );
        assert!(!k.fault_info(pid, VirtAddr(va.0 + HUGE)).unwrap().huge_fits);
        k.fault(pid, va, false, PageSize::Huge);
        assert!(k.fault_info(pid, va).unwrap().region_huge_zero);
        assert_eq!(k.fault_info(pid, VirtAddr(va.0 + 2 * HUGE)), None);
    }

    #[test]
    fn clearing_accessed_bits_counts_base_pages() {
        let mut k = kernel(64);
        let pid = k.create_process();
        let va = k.mmap(pid, 2 * HUGE, HugeAdvice::None).unwrap();
        k.fault(pid, va, true, PageSize::Huge);
        k.fault(pid, VirtAddr(va.0 + HUGE), true, PageSize::Base);
        assert_eq!(k.clear_accessed(pid, va), 512);
        assert_eq!(k.clear_accessed(pid, va), 0);
        assert_eq!(k.clear_accessed(pid, VirtAddr(va.0 + HUGE + 5)), 1);
        // A reference whose translation is cached sets nothing; its walk does.
        k.touch(pid, VirtAddr(va.0 + 100), false);
        assert_eq!(k.region_info(pid, va).accessed, 0);
        assert!(k.mark_accessed(pid, VirtAddr(va.0 + 100)));
        assert_eq!(k.region_info(pid, va).accessed, 512);
    }

    #[test]
    fn clearing_a_referenced_huge_entry_flushes_it_and_a_base_one_does_not() {
        let mut k = kernel(64);
        let pid = k.create_process();
        let va = k.mmap(pid, 2 * HUGE, HugeAdvice::Hugepage).unwrap();
        k.fault(pid, va, true, PageSize::Huge);
        let base = VirtAddr(va.0 + HUGE);
        k.fault(pid, base, true, PageSize::Base);
        k.take_tlb_flushes();
        // Faults map young: the huge entry's clear flushes its 2 MB, once.
        assert_eq!(k.clear_referenced(pid, va), 512);
        let f = k.take_tlb_flushes();
        assert_eq!(f.len(), 1);
        assert_eq!((f[0].start, f[0].end), (va, VirtAddr(va.0 + HUGE)));
        assert_eq!(k.clear_referenced(pid, va), 0);
        assert!(k.take_tlb_flushes().is_empty(), "nothing was set: no flush");
        // A 4 KB entry is cleared without a flush, as x86's ptep_clear_flush_young does.
        assert_eq!(k.clear_referenced(pid, base), 1);
        assert!(k.take_tlb_flushes().is_empty());
        // The no-flush clear never flushes.
        k.mark_accessed(pid, va);
        assert_eq!(k.clear_accessed(pid, va), 512);
        assert!(k.take_tlb_flushes().is_empty());
    }

    #[test]
    fn touch_sets_accessed_bits_only_when_every_reference_does() {
        let mut k = kernel(64);
        let pid = k.create_process();
        let va = k.mmap(pid, HUGE, HugeAdvice::None).unwrap();
        k.fault(pid, va, true, PageSize::Base);
        let young = |t: Touch| matches!(t, Touch::Mapped { young: true, .. });
        assert!(young(k.touch(pid, va, false)), "faults map entries young");
        k.clear_accessed(pid, va);
        assert!(!young(k.touch(pid, va, true)));
        let info = k.region_info(pid, va);
        assert_eq!((info.accessed, info.dirty), (0, 1));
        k.set_accessed_bits(AccessedBits::EveryReference);
        assert!(young(k.touch(pid, va, false)));
        assert_eq!(k.region_info(pid, va).accessed, 1);
        assert!(
            !k.mark_accessed(pid, VirtAddr(va.0 + 4 * PAGE)),
            "not mapped"
        );
    }

    #[test]
    fn kernel_pages_cannot_impersonate_process_memory() {
        let mut k = kernel(64);
        assert!(k.alloc_pages(&AllocRequest::new(Order(0))).is_err());
        let pid = k.create_process();
        let va = k.mmap(pid, PAGE, HugeAdvice::None).unwrap();
        k.fault(pid, va, true, PageSize::Base);
        let pfn = Pfn(k.translate(pid, va).unwrap().pa / PAGE);
        assert!(k.free_pages(pfn, Order(0)).is_err());
        let req = AllocRequest::new(Order(3))
            .migrate(MigrateType::Reclaimable)
            .owner(OwnerKind::KernelReclaimable);
        let b = k.alloc_pages(&req).unwrap();
        k.free_pages(b.pfn, b.order).unwrap();
        k.check_invariants().unwrap();
    }

    #[test]
    fn touch_outside_anything_is_a_segfault() {
        let mut k = kernel(64);
        assert_eq!(k.touch(Pid(0), VirtAddr(0), false), Touch::Segfault);
        let pid = k.create_process();
        assert_eq!(k.touch(pid, VirtAddr(u64::MAX), true), Touch::Segfault);
        let va = k.mmap(pid, PAGE, HugeAdvice::None).unwrap();
        assert_eq!(k.touch(pid, va, true), Touch::NotPresent);
    }
}

/// Linux 4.1's count of `MIGRATE_RESERVE` pageblocks for a zone whose `min` watermark is
/// `min` frames: `min` rounded up to pageblocks of `pageblock_frames`, at most 2
/// (`setup_zone_migrate_reserve`: "A min_free_kbytes value that would result in more
/// than 2 reserve blocks ... is assumed to be in place to help anti-fragmentation").
pub fn reserve_pageblocks(min: u64, pageblock_frames: u64) -> u32 {
    min.div_ceil(pageblock_frames).min(2) as u32
}

#[cfg(test)]
mod reserve_tests {
    use super::reserve_pageblocks;

    #[test]
    fn the_reserve_is_the_min_watermark_in_pageblocks_at_most_two() {
        assert_eq!(reserve_pageblocks(0, 512), 0);
        assert_eq!(reserve_pageblocks(300, 512), 1);
        assert_eq!(reserve_pageblocks(512, 512), 1);
        assert_eq!(reserve_pageblocks(685, 512), 2, "a 512 MiB zone");
        assert_eq!(
            reserve_pageblocks(2048, 512),
            2,
            "4 GiB: 4 rounded, capped at 2"
        );
    }
}
