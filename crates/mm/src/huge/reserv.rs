//! Superpage reservations (FreeBSD `sys/vm/vm_reserv.c`, Navarro et al., OSDI'02): the
//! reservation table and the mechanisms that create, populate, promote and break them.
//!
//! A reservation ties one order-9 physical block to one 2 MB region of one process. It
//! is made at a 4 KB fault that asks for it ([`crate::FaultRequest::reserve`]) in a
//! region lying wholly inside its VMA and mapping no frame yet, when a free order-9 block
//! exists (no compaction, no reclaim: `vm_reserv_alloc_page` only takes a free block).
//! Its frames are allocated for the buddy allocator (order-0 anonymous frames after
//! `split_compound`); the frame at page index `i` of the block is the only frame that may
//! back page `i` of the region. Unused ("reserved but unmapped") frames have no reverse
//! map. Later 4 KB faults in the region take their frame from the reservation
//! (`vm_reserv_alloc_page` finding it), each paying a buddy allocation's cost and the
//! clearing of its 4 KB, as a base fault does.
//!
//! When the last base page is mapped, the fault promotes the region in place
//! (`pmap_promote_pde`, run by `pmap_enter` for the last PTE): the 512 PTEs become one
//! huge mapping of the same frames, the frames become one compound block, the page-table
//! page is freed, and the old 4 KB translations are flushed. Cost: one PMD write plus the
//! flush (`pmap_update_pde` invalidates the 4 KB entries). The 512 PTE reads by which
//! `pmap_promote_pde` checks contiguity are not charged: the fault just wrote those lines
//! and a read of a cached PTE is well under the PTE-write cost the model has. No copy, no
//! allocation. The reservation then ends (FreeBSD keeps the fully populated `vm_reserv`
//! until its pages are freed; here the promoted page is an ordinary huge page, so a later
//! split is a plain demotion and a partial unmap frees frames as for any huge page).
//!
//! A reservation is broken (its unused frames freed, its used frames left as ordinary
//! 4 KB pages) under memory pressure, least recently changed first
//! (`vm_reserv_reclaim_inactive` takes the head of the partially populated queue, which
//! `vm_reserv_populate` keeps in order of the last change), before page cache is
//! reclaimed (see `reclaim.rs`); and whenever a mapping change invalidates it: an unmap
//! or `MADV_DONTNEED` touching the region, process exit, `madvise` advice cutting a VMA
//! through the region, a collapse of the region. FreeBSD's `vm_reserv_depopulate` keeps a
//! reservation whose pages are freed one by one until the last goes; the model breaks it
//! at once, since its `MADV_DONTNEED` frees pages (Linux semantics) and a region cut by
//! an unmap cannot be promoted as one mapping anyway. Breaking costs one buddy
//! operation (`MmCosts::alloc`) per contiguous run of unused frames
//! (`vm_reserv_break` frees runs with `vm_phys_enqueue_contig`).
//!
//! Frames of a reservation are not migrated (compaction and evacuation skip them, as they
//! skip compound pages): moving one would break the frame-at-its-offset rule.
//!
//! Space: the table indexes reservations by block (`pfn >> 9`, like FreeBSD's
//! `vm_reserv_array`: 4 bytes per 512 frames) and by (pid, region); a live reservation
//! costs its 64-byte population map plus map entries. Per-frame metadata is unchanged.
//! This module owns the reservation state and its mechanisms; whether to reserve and
//! whether to promote are the policy's (passed in the fault request).

use crate::api::{ReservationCensus, ReservationInfo};
use crate::error::{MmError, Result};
use crate::kernel::Kernel;
use crate::phys::buddy::{AllocRequest, PhysMem};
use crate::phys::pageblock::MigrateType;
use crate::space::addrspace::AddressSpace;
use crate::space::mech::{Alloc, Mech};
use crate::space::pagetable::Slot;
use crate::stats::KernelStats;
use hugemm_hw::{Nanos, Order, Pfn, Pid, VirtAddr};
use std::collections::BTreeMap;

/// A reservation's slot in the table.
pub(crate) type ResId = u32;

/// One reservation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Reservation {
    pub pid: Pid,
    /// First address of the region.
    pub region: u64,
    /// First frame of the reserved block.
    pub base: Pfn,
    /// Base pages mapped from the block (popcount of `popmap`).
    pub pop: u32,
    /// Bit `i` set: page `i` of the region maps frame `base + i`.
    popmap: Vec<u64>,
    /// When it last changed (a per-table counter), its key in the LRU queue.
    stamp: u64,
}

impl Reservation {
    /// Whether page `i` of the region is mapped from the reservation.
    pub fn is_populated(&self, i: u64) -> bool {
        self.popmap
            .get((i / 64) as usize)
            .is_some_and(|w| w >> (i % 64) & 1 == 1)
    }
}

/// Every reservation, indexed by block, by (pid, region), and partially populated ones
/// by their last change (the LRU queue `partpop`).
#[derive(Clone, Debug)]
pub(crate) struct ReservTable {
    order: u8,
    fanout: u64,
    region_bytes: u64,
    slots: Vec<Option<Reservation>>,
    free_slots: Vec<ResId>,
    /// Per order-9 block: slot + 1, 0 = none (a zeroed vector: nothing reserved).
    by_block: Vec<u32>,
    by_region: BTreeMap<(Pid, u64), ResId>,
    /// Partially populated reservations, least recently changed first.
    partpop: BTreeMap<u64, ResId>,
    clock: u64,
}

impl ReservTable {
    /// An empty table for `frames` frames with huge pages of `order` mapping regions of
    /// `region_bytes`.
    pub fn new(frames: u64, order: u8, region_bytes: u64) -> ReservTable {
        ReservTable {
            order,
            fanout: 1 << order,
            region_bytes,
            slots: Vec::new(),
            free_slots: Vec::new(),
            by_block: vec![0; frames.div_ceil(1 << order) as usize],
            by_region: BTreeMap::new(),
            partpop: BTreeMap::new(),
            clock: 0,
        }
    }

    /// The reservation of `pid`'s region starting at `region`.
    pub fn find(&self, pid: Pid, region: u64) -> Option<ResId> {
        self.by_region.get(&(pid, region)).copied()
    }

    /// Reservation `id`, which must be live.
    pub fn get(&self, id: ResId) -> Option<&Reservation> {
        self.slots.get(id as usize)?.as_ref()
    }

    /// Whether frame `pfn` belongs to a reservation.
    pub fn holds(&self, pfn: Pfn) -> bool {
        self.by_block
            .get((pfn.0 >> self.order) as usize)
            .is_some_and(|&s| s != 0)
    }

    /// Live reservations, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = (ResId, &Reservation)> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.as_ref().map(|r| (i as ResId, r)))
    }

    /// The reservations of `pid` whose region intersects `[start, end)`, low to high.
    pub fn overlapping(&self, pid: Pid, start: u64, end: u64) -> Vec<ResId> {
        let lo = start & !(self.region_bytes - 1);
        if lo >= end {
            return Vec::new();
        }
        // Regions are aligned: every key in [lo, end) intersects the range.
        self.by_region
            .range((pid, lo)..(pid, end))
            .map(|(_, &id)| id)
            .collect()
    }

    /// Record a new reservation of `base` for `pid`'s `region`; nothing populated yet.
    pub fn insert(&mut self, pid: Pid, region: u64, base: Pfn) -> ResId {
        let words = self.fanout.div_ceil(64) as usize;
        let r = Reservation {
            pid,
            region,
            base,
            pop: 0,
            popmap: vec![0; words],
            stamp: self.tick(),
        };
        let id = match self.free_slots.pop() {
            Some(id) => {
                self.slots[id as usize] = Some(r);
                id
            }
            None => {
                self.slots.push(Some(r));
                (self.slots.len() - 1) as ResId
            }
        };
        if let Some(b) = self.by_block.get_mut((base.0 >> self.order) as usize) {
            *b = id + 1;
        }
        self.by_region.insert((pid, region), id);
        let stamp = self.slots[id as usize].as_ref().map_or(0, |r| r.stamp);
        self.partpop.insert(stamp, id);
        id
    }

    /// Mark page `i` populated and move the reservation to the queue's tail (or off the
    /// queue once full). Returns `false` (changing nothing) if it already was.
    pub fn populate(&mut self, id: ResId, i: u64) -> bool {
        let stamp = self.tick();
        let fanout = self.fanout as u32;
        let Some(r) = self.slots.get_mut(id as usize).and_then(Option::as_mut) else {
            return false;
        };
        let (w, bit) = ((i / 64) as usize, 1u64 << (i % 64));
        if r.popmap.get(w).is_none_or(|x| x & bit != 0) {
            return false;
        }
        r.popmap[w] |= bit;
        r.pop += 1;
        self.partpop.remove(&r.stamp);
        r.stamp = stamp;
        if r.pop < fanout {
            self.partpop.insert(stamp, id);
        }
        true
    }

    /// Forget reservation `id`; returns it.
    pub fn remove(&mut self, id: ResId) -> Option<Reservation> {
        let r = self.slots.get_mut(id as usize)?.take()?;
        self.free_slots.push(id);
        if let Some(b) = self.by_block.get_mut((r.base.0 >> self.order) as usize) {
            *b = 0;
        }
        self.by_region.remove(&(r.pid, r.region));
        self.partpop.remove(&r.stamp);
        Some(r)
    }

    /// The least recently changed partially populated reservation.
    pub fn oldest_partial(&self) -> Option<ResId> {
        self.partpop.values().next().copied()
    }

    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// Live reservations, full ones, and unused reserved frames.
    pub fn census(&self) -> (u64, u64, u64) {
        self.iter().fold((0, 0, 0), |(n, full, unused), (_, r)| {
            let full_now = r.pop as u64 == self.fanout;
            (
                n + 1,
                full + full_now as u64,
                unused + self.fanout - r.pop as u64,
            )
        })
    }

    /// The indexes agree with the reservations (for the invariant checker).
    pub fn check(&self) -> Result<()> {
        let bad = |what, at| Err(MmError::Invariant { what, at });
        let (mut live, mut partial) = (0u64, 0u64);
        for (id, r) in self.iter() {
            live += 1;
            partial += ((r.pop as u64) < self.fanout) as u64;
            let block = (r.base.0 >> self.order) as usize;
            if r.base.0 % self.fanout != 0 || self.by_block.get(block) != Some(&(id + 1)) {
                return bad("reservation block index differs", r.base.0);
            }
            if self.by_region.get(&(r.pid, r.region)) != Some(&id) {
                return bad("reservation region index differs", r.region);
            }
            let pop: u32 = r.popmap.iter().map(|w| w.count_ones()).sum();
            let queued = self.partpop.get(&r.stamp) == Some(&id);
            if pop != r.pop || queued != ((r.pop as u64) < self.fanout) {
                return bad("reservation population or queue differs", r.base.0);
            }
        }
        let blocks = self.by_block.iter().filter(|&&b| b != 0).count() as u64;
        let listed = self.by_region.len() as u64;
        if blocks != live || listed != live || self.partpop.len() as u64 != partial {
            return bad("reservation indexes hold stale entries", blocks);
        }
        Ok(())
    }
}

/// What breaking one reservation freed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Broken {
    /// Unused frames returned to the buddy allocator.
    pub frames: u64,
    /// Contiguous runs they formed (one buddy operation each).
    pub runs: u64,
}

/// Break reservation `id`: free its unused frames, forget it; its used frames stay as
/// ordinary order-0 anonymous frames. Counts it in `stats`.
pub(crate) fn break_reservation(
    table: &mut ReservTable,
    phys: &mut PhysMem,
    stats: &mut KernelStats,
    id: ResId,
) -> Broken {
    let Some(r) = table.remove(id) else {
        return Broken::default();
    };
    let mut out = Broken::default();
    let mut in_run = false;
    for i in 0..table.fanout {
        let unused = !r.is_populated(i);
        if unused {
            if phys.free(Pfn(r.base.0 + i), Order(0)).is_err() {
                stats.internal_errors += 1;
            }
            out.frames += 1;
            out.runs += !in_run as u64;
        }
        in_run = unused;
    }
    stats.reservations_broken += 1;
    stats.reserv_frames_returned += out.frames;
    out
}

/// The time breaking cost: one buddy operation per run freed.
pub(crate) fn break_cost(alloc: Nanos, b: Broken) -> Nanos {
    Nanos(alloc.0 * b.runs)
}

/// Break `m.pid`'s reservations intersecting `[start, end)` (an unmap is changing
/// them). Returns the time.
pub(crate) fn break_range(m: &mut Mech<'_>, start: u64, end: u64) -> Nanos {
    let mut cost = Nanos::ZERO;
    for id in m.reserv.overlapping(m.pid, start, end) {
        let b = break_reservation(m.reserv, m.phys, m.stats, id);
        cost += break_cost(m.costs.alloc, b);
    }
    m.stats.reserv_break_time += cost;
    cost
}

/// Break `m.pid`'s reservation of `region` if it no longer lies inside one VMA.
pub(crate) fn break_if_cut(space: &AddressSpace, m: &mut Mech<'_>, region: u64) -> Nanos {
    let covered = space
        .vma_covering(region, m.layout.region_bytes())
        .is_some();
    match m.reserv.find(m.pid, region) {
        Some(id) if !covered => {
            let b = break_reservation(m.reserv, m.phys, m.stats, id);
            let cost = break_cost(m.costs.alloc, b);
            m.stats.reserv_break_time += cost;
            cost
        }
        _ => Nanos::ZERO,
    }
}

/// The frame for a 4 KB anonymous fault at `page`: from the region's reservation if it
/// has one; else from a new reservation if `reserve` and the region can have one; else
/// an order-0 frame from the buddy allocator.
pub(crate) fn anon_frame(
    space: &AddressSpace,
    m: &mut Mech<'_>,
    page: u64,
    reserve: bool,
) -> Result<Alloc> {
    let region = m.layout.region_of(page);
    if let Some(a) = take_reserved(m, region, page) {
        return Ok(a);
    }
    if reserve && reservable(space, m, region) {
        if let Some(a) = reserve_region(m, region, page) {
            return Ok(a);
        }
    }
    m.alloc_anon(0, page)
}

/// A region can be reserved when it lies inside one VMA, has no reservation and maps
/// no frame (zero-page entries allowed).
fn reservable(space: &AddressSpace, m: &Mech<'_>, region: u64) -> bool {
    let inside = space
        .vma_covering(region, m.layout.region_bytes())
        .is_some();
    let no_frames = match space.slot(region) {
        None | Some(Slot::Empty | Slot::HugeZero { .. }) => true,
        Some(Slot::Table(t)) => t.present() == t.zero(),
        Some(Slot::Huge { .. }) => false,
    };
    inside && no_frames && m.reserv.find(m.pid, region).is_none()
}

/// Map page `page`'s frame from the region's reservation, if it has one.
fn take_reserved(m: &mut Mech<'_>, region: u64, page: u64) -> Option<Alloc> {
    let id = m.reserv.find(m.pid, region)?;
    let i = m.layout.page_index(page) as u64;
    let pfn = Pfn(m.reserv.get(id)?.base.0 + i);
    if !m.reserv.populate(id, i) {
        m.stats.internal_errors += 1; // the PTE would have mapped it: no fault
        return None;
    }
    let zeroed = m.phys.frame(pfn).is_some_and(|f| f.is_zeroed());
    m.phys.map_frames(pfn, 1, m.pid, m.vpn(page));
    let zeroing = m.clearing(zeroed, 1);
    Some(Alloc {
        pfn,
        cost: m.costs.alloc + zeroing,
        zeroing,
    })
}

/// Reserve a free order-9 block for `region` and map `page` from it. `None` (nothing
/// changed) without a free block.
fn reserve_region(m: &mut Mech<'_>, region: u64, page: u64) -> Option<Alloc> {
    let order = Order(m.layout.huge_order());
    if !m.phys.has_free_block(order) {
        return None;
    }
    let req = AllocRequest::new(order)
        .migrate(MigrateType::Movable)
        .prefer_zeroed(true);
    let (block, reclaim) = m.alloc(&req).ok()?;
    if m.phys.split_compound(block.pfn).is_err() {
        m.stats.internal_errors += 1;
        m.release(block.pfn, order.0);
        return None;
    }
    m.reserv.insert(m.pid, region, block.pfn);
    m.stats.reservations_made += 1;
    let mut a = take_reserved(m, region, page)?;
    a.cost += reclaim;
    Some(a)
}

/// If `region`'s reservation is fully populated, promote it in place; returns the cost.
pub(crate) fn promote_if_full(
    space: &mut AddressSpace,
    m: &mut Mech<'_>,
    region: u64,
) -> Option<Nanos> {
    let id = m.reserv.find(m.pid, region)?;
    let r = m.reserv.get(id)?;
    if r.pop as u64 != m.fanout() {
        return None;
    }
    let base = r.base;
    let Some(Slot::Table(t)) = space.slot(region) else {
        m.stats.internal_errors += 1;
        return None;
    };
    let contiguous = t
        .ptes()
        .iter()
        .enumerate()
        .all(|(i, p)| p.is_frame() && p.pfn().0 == base.0 + i as u64);
    if !contiguous {
        m.stats.internal_errors += 1;
        return None;
    }
    let accessed = t.ptes().iter().any(|p| p.accessed());
    let dirty = t.ptes().iter().any(|p| p.dirty());
    m.reserv.remove(id);
    let huge = Slot::Huge {
        pfn: base,
        accessed,
        dirty,
        unwritten: (m.fanout() - m.written_in(base, m.fanout())) as u16,
    };
    if let Slot::Table(old) = space.pt.replace(region, huge) {
        m.release(old.table_pfn(), 0);
    }
    if m.phys
        .make_compound(base, Order(m.layout.huge_order()))
        .is_err()
    {
        m.stats.internal_errors += 1;
    }
    space.base_pages -= m.fanout();
    space.huge_pages += 1;
    let cost = m.pte_updates(1) + m.flush(region, region + m.layout.region_bytes());
    m.stats.promotions_in_place += 1;
    m.stats.promotion_time += cost;
    Some(cost)
}

impl Kernel {
    /// The superpage reservation of the region holding `va` in `pid`, if it has one.
    pub fn reservation(&self, pid: Pid, va: VirtAddr) -> Option<ReservationInfo> {
        let id = self.reserv.find(pid, self.layout.region_of(va.0))?;
        self.reserv.get(id).map(|r| ReservationInfo {
            base: r.base,
            populated: r.pop,
        })
    }

    /// Every reservation now: how many, how many are full, and their unused frames.
    pub fn reservation_census(&self) -> ReservationCensus {
        let (live, full, unused_frames) = self.reserv.census();
        ReservationCensus {
            live,
            full,
            unused_frames,
        }
    }
}

#[cfg(test)]
#[path = "reserv_tests.rs"]
mod tests;
