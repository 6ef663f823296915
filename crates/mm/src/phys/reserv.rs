//! The superpage reservation table (FreeBSD `sys/vm/vm_reserv.c`): which order-9 physical
//! blocks are reserved for which 2 MB region of which process, which of their frames are
//! populated, and the partially populated ones in order of their last change; and
//! breaking a reservation, which returns its unused frames to the buddy allocator.
//!
//! It sits with physical memory, as FreeBSD's reservation layer sits between `vm_page` and
//! `vm_phys`: allocation with reclaim (`pressure/reclaim.rs`) breaks reservations under
//! pressure, and compaction and migration skip reserved frames. Reserving at a fault,
//! populating and promoting in place are the huge-page mechanisms' (`huge/reserv.rs`,
//! whose doc tells the whole design).
//!
//! Space: the table indexes reservations by block (`pfn >> 9`, like FreeBSD's
//! `vm_reserv_array`: 4 bytes per 512 frames) and by (pid, region); a live reservation
//! costs its 64-byte population map plus map entries. Per-frame metadata is unchanged.
//! Owns the table and breaking; it must not map pages or decide when to reserve.

use crate::error::{MmError, Result};
use crate::phys::buddy::PhysMem;
use crate::stats::KernelStats;
use hugemm_hw::{Nanos, Order, Pfn, Pid};
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
