//! Anonymous page faults (Linux 6.x `mm/memory.c` `do_anonymous_page`, `do_wp_page`;
//! `mm/huge_memory.c` `do_huge_pmd_anonymous_page`, `do_huge_pmd_wp_page`).
//!
//! The caller (a policy, through the engine) says which page size it wants; the mechanism
//! serves it if it can:
//! - 2 MB wanted, the region inside the VMA and empty: a read maps the huge zero page
//!   (`use_zero_page` = 1, [`FaultRequest::huge_zero_page`]); a write, or a read with
//!   `use_zero_page` = 0, allocates an order-9 movable block. Without a free
//!   order-9 block the fault falls back to 4 KB ([`FaultKind::HugeFallback`]); whether to
//!   compact first ([`Kernel::compact`]) is the policy's call.
//! - Otherwise 4 KB: a read of an untouched page maps the shared zero page; a write
//!   allocates a frame; a write to a zero-page PTE is copy-on-write. A write to a
//!   huge-zero region first splits it into a table of zero-page PTEs, then copies on
//!   write, as `do_huge_pmd_wp_page` falls back (`__split_huge_pmd`, `VM_FAULT_FALLBACK`).
//!
//! - With [`FaultRequest::reserve`] or a reservation already in the region, a 4 KB
//!   fault's frame comes from the region's superpage reservation, and the fault that maps
//!   its last page promotes it in place when [`FaultRequest::promote`] (`reserv.rs`).
//!
//! Cost: trap + allocations (each an `alloc`, plus clearing unless every frame was known
//! zero, plus any direct reclaim of page cache; page-table pages included) + PTE writes +
//! flushes; the outcome splits out the allocations and the clearing. With no frame at
//! all the outcome says `oom`, nothing is mapped, and the fault is counted as an OOM
//! event.
//!
//! A write fault is the process's first write to the page it maps: the page's content is
//! drawn then (`content.rs`); a huge page's other base pages stay zero until written.
//! This module must not choose page sizes.

use crate::api::{FaultKind, FaultOutcome, FaultRequest};
use crate::huge::reserv::{anon_frame, promote_if_full};
use crate::huge::split::install_zero_table;
use crate::kernel::Kernel;
use crate::space::addrspace::AddressSpace;
use crate::space::mech::{Alloc, Mech};
use crate::space::pagetable::{PteTable, Slot};
use crate::space::pte::Pte;
use crate::stats::NoOp;
use hugemm_hw::{Nanos, PageSize, Pid, VirtAddr};

/// A fault either did something (or ran out of memory trying) or nothing at all.
enum Served {
    Done(FaultOutcome),
    NoOp(NoOp, FaultOutcome),
}

/// What maps the faulting address now.
#[derive(Clone, Copy)]
enum Now {
    NoTable,
    Huge,
    HugeZero { accessed: bool },
    Pte(Pte),
}

impl Kernel {
    /// Serve a fault at `va` wanting a page of size `want` (1 GB is served as 2 MB).
    /// A fault outside every VMA, or on an address already mapped, maps nothing: it is
    /// reported as kind `Base` with the trap's cost and counted apart in the stats.
    pub fn fault(&mut self, pid: Pid, va: VirtAddr, write: bool, want: PageSize) -> FaultOutcome {
        self.fault_with(pid, va, write, FaultRequest::new(want))
    }

    /// Serve a fault as [`Kernel::fault`] does, with the superpage-reservation options of
    /// `req` (see [`FaultRequest`] and `reserv.rs`).
    pub fn fault_with(
        &mut self,
        pid: Pid,
        va: VirtAddr,
        write: bool,
        req: FaultRequest,
    ) -> FaultOutcome {
        let trap = self.costs.fault_trap;
        let served = match self.parts(pid) {
            Some((space, mut m)) => fault_in(space, &mut m, va.0, write, req),
            None => noop(NoOp::Segfault, trap, PageSize::Base),
        };
        match served {
            Served::Done(mut out) => {
                // A page-table page may have been a fallback that claimed a pageblock.
                out.cost += self.drain_evacuations();
                self.stats.record_fault(&out);
                out
            }
            Served::NoOp(why, out) => {
                self.stats.record_noop(why, out.cost);
                out
            }
        }
    }
}

/// The time a fault took, and which parts of it went to allocating and clearing.
#[derive(Clone, Copy, Debug, Default)]
struct Spent {
    total: Nanos,
    alloc: Nanos,
    zeroing: Nanos,
}

impl Spent {
    fn trap(cost: Nanos) -> Spent {
        Spent {
            total: cost,
            ..Spent::default()
        }
    }

    /// Add a fixed cost (trap, PTE writes, flushes).
    fn plus(mut self, cost: Nanos) -> Spent {
        self.total += cost;
        self
    }

    /// Add an allocation's cost, split into allocating and clearing.
    fn plus_alloc(mut self, a: &Alloc) -> Spent {
        self.total += a.cost;
        self.alloc += a.cost - a.zeroing;
        self.zeroing += a.zeroing;
        self
    }

    /// Add a failed allocation attempt's cost.
    fn plus_failed(mut self, cost: Nanos) -> Spent {
        self.total += cost;
        self.alloc += cost;
        self
    }
}

fn outcome(kind: FaultKind, size: PageSize, spent: Spent) -> FaultOutcome {
    FaultOutcome {
        kind,
        size,
        cost: spent.total,
        alloc: spent.alloc,
        zeroing: spent.zeroing,
        oom: false,
    }
}

/// Record the first write of the process to the page at `va`, mapped by frame `pfn`.
fn record_write(space: &mut AddressSpace, m: &mut Mech<'_>, pfn: hugemm_hw::Pfn, va: u64) {
    let content = space.content.draw(m.vpn(va));
    m.phys.set_written(pfn, content);
    space.written_pages += 1;
}

fn noop(why: NoOp, cost: Nanos, size: PageSize) -> Served {
    Served::NoOp(why, outcome(FaultKind::Base, size, Spent::trap(cost)))
}

fn oom(kind: FaultKind, spent: Spent) -> Served {
    Served::Done(FaultOutcome {
        oom: true,
        ..outcome(kind, PageSize::Base, spent)
    })
}

fn fault_in(
    space: &mut AddressSpace,
    m: &mut Mech<'_>,
    va: u64,
    write: bool,
    req: FaultRequest,
) -> Served {
    let trap = m.costs.fault_trap;
    if space.vma(va).is_none() {
        return noop(NoOp::Segfault, trap, PageSize::Base);
    }
    let region = m.layout.region_of(va);
    let fits = space
        .vma_covering(region, m.layout.region_bytes())
        .is_some();
    if req.size == PageSize::Base || !fits || !space.pt.is_empty(region) {
        return fault_base(space, m, va, write, Spent::trap(trap), false, req);
    }
    fault_huge(space, m, va, write, req)
}

/// The 2 MB path: the huge zero page on a read, an order-9 block on a write, 4 KB when
/// no block is free.
fn fault_huge(
    space: &mut AddressSpace,
    m: &mut Mech<'_>,
    va: u64,
    write: bool,
    req: FaultRequest,
) -> Served {
    let (region, trap) = (m.layout.region_of(va), Spent::trap(m.costs.fault_trap));
    if !write && req.huge_zero_page {
        space.pt.replace(region, Slot::HugeZero { accessed: true });
        let spent = trap.plus(m.pte_updates(1));
        return Served::Done(outcome(FaultKind::HugeZeroPage, PageSize::Huge, spent));
    }
    match m.alloc_anon(m.layout.huge_order(), region) {
        Ok(a) => {
            let huge = Slot::Huge {
                pfn: a.pfn,
                accessed: true,
                // (`__do_huge_pmd_anonymous_page` maps it dirty on a read too.)
                dirty: true,
                unwritten: (m.fanout() - write as u64) as u16,
            };
            space.pt.replace(region, huge);
            space.huge_pages += 1;
            if write {
                let written = hugemm_hw::Pfn(a.pfn.0 + m.layout.page_index(va) as u64);
                record_write(space, m, written, va);
            }
            let spent = trap.plus_alloc(&a).plus(m.pte_updates(1));
            Served::Done(outcome(FaultKind::Huge, PageSize::Huge, spent))
        }
        Err(_) => {
            let spent = trap.plus_failed(m.costs.alloc);
            fault_base(space, m, va, write, spent, true, req)
        }
    }
}

fn now_at(space: &AddressSpace, region: u64, idx: usize) -> Now {
    match space.slot(region) {
        None | Some(Slot::Empty) => Now::NoTable,
        Some(Slot::Huge { .. }) => Now::Huge,
        Some(Slot::HugeZero { accessed }) => Now::HugeZero {
            accessed: *accessed,
        },
        Some(Slot::Table(t)) => Now::Pte(t.get(idx)),
    }
}

/// The kind of a 4 KB fault, or `None` if nothing needs doing.
fn base_kind(now: Now, write: bool, fallback: bool) -> Option<FaultKind> {
    let cow = match now {
        Now::Huge => return None,
        Now::Pte(p) if p.is_frame() => return None,
        Now::HugeZero { .. } => true,
        Now::Pte(p) => p.is_zero_page(),
        Now::NoTable => false,
    };
    Some(match (write, cow, fallback) {
        (false, true, _) => return None,
        (false, false, _) => FaultKind::ZeroPage,
        (true, _, true) => FaultKind::HugeFallback,
        (true, true, false) => FaultKind::CowZeroPage,
        (true, false, false) => FaultKind::Base,
    })
}

fn fault_base(
    space: &mut AddressSpace,
    m: &mut Mech<'_>,
    va: u64,
    write: bool,
    spent: Spent,
    fallback: bool,
    req: FaultRequest,
) -> Served {
    let (region, idx) = (m.layout.region_of(va), m.layout.page_index(va));
    let now = now_at(space, region, idx);
    let Some(kind) = base_kind(now, write, fallback) else {
        let size = if matches!(now, Now::Huge | Now::HugeZero { .. }) {
            PageSize::Huge
        } else {
            PageSize::Base
        };
        return noop(NoOp::Spurious, spent.total, size);
    };
    let page = va & !(m.layout.base_bytes() - 1);
    let page = write.then_some(page);
    let (table, data) = match allocate(space, m, now, region, page, req.reserve) {
        Ok(allocs) => allocs,
        Err(failed) => return oom(kind, spent.plus_failed(failed)),
    };
    let mut spent = spent;
    if let Some(t) = &table {
        spent = spent
            .plus_alloc(t)
            .plus(install_table(space, m, region, now, t));
    }
    if let Some(a) = &data {
        spent = spent.plus_alloc(a);
        record_write(space, m, a.pfn, va);
    }
    spent = spent.plus(map_page(space, m, region, idx, data));
    if let (FaultKind::CowZeroPage, Some(page)) = (kind, page) {
        // wp_page_copy replaces the zero-page PTE with ptep_clear_flush.
        spent = spent.plus(m.flush(page, page + m.layout.base_bytes()));
    }
    let promoted = match (req.promote, data) {
        (true, Some(_)) => promote_if_full(space, m, region),
        _ => None,
    };
    match promoted {
        Some(p) => Served::Done(outcome(kind, PageSize::Huge, spent.plus(p))),
        None => Served::Done(outcome(kind, PageSize::Base, spent)),
    }
}

/// Allocate what a 4 KB fault needs, all or nothing: a page-table page when the region
/// has no table, a frame when `page` (a write) is given, from the region's reservation
/// if it has one (or gets one, when `reserve`). The table comes first: allocating it may
/// break reservations under pressure. `Err` carries the time spent.
fn allocate(
    space: &AddressSpace,
    m: &mut Mech<'_>,
    now: Now,
    region: u64,
    page: Option<u64>,
    reserve: bool,
) -> Result<(Option<Alloc>, Option<Alloc>), Nanos> {
    let table = match now {
        Now::NoTable | Now::HugeZero { .. } => {
            Some(m.alloc_table(region).map_err(|_| m.costs.alloc)?)
        }
        _ => None,
    };
    let Some(page) = page else {
        return Ok((table, None));
    };
    match anon_frame(space, m, page, reserve) {
        Ok(a) => Ok((table, Some(a))),
        Err(_) => {
            let spent = table.map_or(Nanos::ZERO, |t| {
                m.release(t.pfn, 0);
                t.cost
            });
            Err(spent + m.costs.alloc)
        }
    }
}

/// Put the new page-table page `t` in place: empty, or (splitting the huge zero page)
/// full of zero-page PTEs. Returns the cost beyond allocating it.
fn install_table(
    space: &mut AddressSpace,
    m: &mut Mech<'_>,
    region: u64,
    now: Now,
    t: &Alloc,
) -> Nanos {
    match now {
        Now::HugeZero { accessed } => install_zero_table(space, m, region, t.pfn, accessed),
        _ => {
            space.pt.replace(
                region,
                Slot::Table(PteTable::filled(t.pfn, m.fanout(), |_| Pte::NONE)),
            );
            Nanos::ZERO
        }
    }
}

/// Map the new frame (written by the faulting write), or the zero page when there is
/// none (a read). Returns the PTE write's cost.
fn map_page(
    space: &mut AddressSpace,
    m: &mut Mech<'_>,
    region: u64,
    idx: usize,
    data: Option<Alloc>,
) -> Nanos {
    let pte = match data {
        Some(a) => {
            space.base_pages += 1;
            Pte::frame(a.pfn, true, true).with_written(true)
        }
        None => Pte::zero_page(true),
    };
    set_pte(space, m, region, idx, pte);
    m.pte_updates(1)
}

fn set_pte(space: &mut AddressSpace, m: &mut Mech<'_>, region: u64, idx: usize, pte: Pte) {
    match space.pt.slot_mut_uncached(region) {
        Some(Slot::Table(t)) => {
            t.set(idx, pte);
        }
        _ => m.stats.internal_errors += 1,
    }
}

#[cfg(test)]
#[path = "fault_tests.rs"]
mod tests;
