//! Superpage reservations (FreeBSD `sys/vm/vm_reserv.c`, Navarro et al., OSDI'02): the
//! mechanisms that create, populate, promote and break them. The reservation table and
//! breaking one are physical memory's (`phys/reserv.rs`), since reclaim breaks them too.
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
//! This module owns the mechanisms (its entry points for observers are `kernel/huge.rs`'s);
//! whether to reserve and whether to promote are the policy's (passed in the fault
//! request).

use crate::error::Result;
use crate::phys::buddy::AllocRequest;
use crate::phys::pageblock::MigrateType;
use crate::phys::reserv::{break_cost, break_reservation};
use crate::space::addrspace::AddressSpace;
use crate::space::mech::{Alloc, Mech};
use crate::space::pagetable::Slot;
use hugemm_hw::{Nanos, Order, Pfn};

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

#[cfg(test)]
#[path = "reserv_tests.rs"]
mod tests;
