//! The mechanism context: the pieces of the kernel one mechanism (fault, collapse, split,
//! unmap) borrows besides the address space it works on, with the allocation, freeing,
//! flushing and reservation-breaking steps they share. Allocations go through reclaim
//! (`pressure/reclaim.rs`): direct reclaim time is part of the allocation's cost.
//!
//! Owns how those shared steps are charged. It must not decide anything a policy decides,
//! nor touch page tables (the mechanisms do).

use crate::api::TlbFlush;
use crate::costs::{FragCosts, MmCosts};
use crate::error::Result;
use crate::phys::buddy::{AllocRequest, Block, PhysMem};
use crate::phys::frame::OwnerKind;
use crate::phys::pageblock::MigrateType;
use crate::phys::reserv::{break_cost, break_reservation, ReservTable};
use crate::pressure::lru::PageCache;
use crate::pressure::reclaim::{Mem, Watermarks};
use crate::pressure::slab::SlabCaches;
use crate::pressure::zones::Zones;
use crate::space::pagetable::VaLayout;
use crate::stats::KernelStats;
use hugemm_hw::{Nanos, Order, Pfn, Pid, VirtAddr, Vpn};

/// A frame (or block) just allocated, with what allocating it cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Alloc {
    pub pfn: Pfn,
    /// Everything: the allocation, any direct reclaim, and clearing.
    pub cost: Nanos,
    /// Of `cost`, clearing the frames.
    pub zeroing: Nanos,
}

/// Everything a mechanism borrows from the kernel apart from the address space.
#[derive(Debug)]
pub(crate) struct Mech<'a> {
    pub phys: &'a mut PhysMem,
    pub costs: &'a MmCosts,
    pub stats: &'a mut KernelStats,
    pub flushes: &'a mut Vec<TlbFlush>,
    pub layout: VaLayout,
    pub pid: Pid,
    pub cache: &'a mut PageCache,
    pub frag: &'a FragCosts,
    pub wmark: Watermarks,
    pub reserv: &'a mut ReservTable,
    pub slab: &'a mut SlabCaches,
    /// The zones' watermarks and batches, on a machine of zones.
    pub zones: Option<&'a mut Zones>,
    /// Clear frames that are not known zero before mapping them (Linux always does; off
    /// only for HawkEye Table 1's hypothetical kernel without page zeroing).
    pub clear_pages: bool,
    /// `costs.zero_time` of one base page (the kernel computes it once).
    pub clear_base: Nanos,
}

impl Mech<'_> {
    /// Base pages in a region.
    pub fn fanout(&self) -> u64 {
        self.layout.fanout
    }

    /// The virtual page number of `va`.
    pub fn vpn(&self, va: u64) -> Vpn {
        Vpn(va >> self.layout.base_shift)
    }

    /// Allocate `2^order` movable anonymous frames mapped from `va`: reverse maps set,
    /// content zero and unwritten. Costs one allocation plus clearing, unless every frame
    /// was known zero (pre-zeroed).
    pub fn alloc_anon(&mut self, order: u8, va: u64) -> Result<Alloc> {
        let req = AllocRequest::new(Order(order))
            .migrate(MigrateType::Movable)
            .prefer_zeroed(true);
        let (block, reclaim) = self.alloc(&req)?;
        let frames = 1u64 << order;
        self.phys
            .map_frames(block.pfn, frames, self.pid, self.vpn(va));
        let zeroing = self.clearing(block.zeroed, frames);
        let compound = Nanos(self.costs.compound_tail.0 * (frames - 1));
        Ok(Alloc {
            pfn: block.pfn,
            cost: self.costs.alloc + compound + zeroing + reclaim,
            zeroing,
        })
    }

    /// The time to clear `frames` frames, unless they were known zero (or clearing is
    /// off); counted in the kernel's statistics.
    pub fn clearing(&mut self, known_zero: bool, frames: u64) -> Nanos {
        if known_zero {
            self.stats.clear_skipped_pages += frames;
            return Nanos::ZERO;
        }
        if !self.clear_pages {
            return Nanos::ZERO;
        }
        self.stats.cleared_pages += frames;
        if frames == 1 {
            return self.clear_base;
        }
        self.costs.zero_time(frames << self.layout.base_shift)
    }

    /// Allocate through reclaim (`reclaim.rs`): returns the block and the direct-reclaim
    /// time charged to the caller.
    pub fn alloc(&mut self, req: &AllocRequest) -> Result<(Block, Nanos)> {
        Mem {
            phys: self.phys,
            cache: self.cache,
            stats: self.stats,
            frag: self.frag,
            wmark: self.wmark,
            frame_bytes: self.layout.base_bytes(),
            reserv: self.reserv,
            costs: self.costs,
            slab: self.slab,
            zones: self.zones.as_deref_mut(),
        }
        .alloc(req)
    }

    /// Allocate a page-table page for `region` (order 0, unmovable, owner page table,
    /// zeroed like Linux's `__GFP_ZERO` page-table allocations).
    pub fn alloc_table(&mut self, region: u64) -> Result<Alloc> {
        let req = AllocRequest::new(Order(0))
            .migrate(MigrateType::Unmovable)
            .owner(OwnerKind::PageTable);
        let (block, reclaim) = self.alloc(&req)?;
        self.phys
            .map_frames(block.pfn, 1, self.pid, self.vpn(region));
        // Page-table pages are always cleared (`__GFP_ZERO`), whatever `clear_pages` says.
        let zeroing = if block.zeroed {
            Nanos::ZERO
        } else {
            self.costs.zero_time(self.layout.base_bytes())
        };
        Ok(Alloc {
            pfn: block.pfn,
            cost: self.costs.alloc + zeroing + reclaim,
            zeroing,
        })
    }

    /// Free a block the caller owns. A refusal means the model is inconsistent: it is
    /// counted in `stats.internal_errors` (the invariant checker reports it) instead of
    /// panicking.
    pub fn release(&mut self, pfn: Pfn, order: u8) {
        if self.phys.free(pfn, Order(order)).is_err() {
            self.stats.internal_errors += 1;
        }
    }

    /// Free a block of frames a process mapped, taking its written frames off the
    /// process's count of `written` pages.
    pub fn release_mapped(&mut self, written: &mut u64, pfn: Pfn, order: u8) {
        *written -= self.written_in(pfn, 1 << order);
        self.release(pfn, order);
    }

    /// How many of the `n` frames from `pfn` their process has written.
    pub fn written_in(&self, pfn: Pfn, n: u64) -> u64 {
        (0..n)
            .filter(|&i| {
                self.phys
                    .frame(Pfn(pfn.0 + i))
                    .is_some_and(|f| f.is_written())
            })
            .count() as u64
    }

    /// Whether the process has written frame `pfn`.
    pub fn is_written(&self, pfn: Pfn) -> bool {
        self.phys.frame(pfn).is_some_and(|f| f.is_written())
    }

    /// Record a shootdown of `[start, end)`; returns its cost.
    pub fn flush(&mut self, start: u64, end: u64) -> Nanos {
        self.flushes.push(TlbFlush {
            pid: self.pid,
            start: VirtAddr(start),
            end: VirtAddr(end),
        });
        self.costs.tlb_flush
    }

    /// The cost of writing `n` page-table entries.
    pub fn pte_updates(&self, n: u64) -> Nanos {
        Nanos(self.costs.pte_update.0 * n)
    }
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
