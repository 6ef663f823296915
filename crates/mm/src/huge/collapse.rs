//! Collapse: replace a region's table of 4 KB PTEs by one huge page (khugepaged's
//! `collapse_huge_page` and `MADV_COLLAPSE`, `mm/khugepaged.c`).
//!
//! The region must be a table inside one VMA. An order-9 movable block is allocated
//! (without a free block the collapse fails with `NoMemory`; compacting first is the
//! caller's choice); every present
//! PTE with a frame of its own is copied (`__collapse_huge_page_copy`), the rest (empty or
//! zero-page) is zero-filled unless the new frames were known zero; the old frames and the
//! page-table page are freed, and a TLB flush is recorded. The new PMD is young and dirty
//! (`mk_huge_pmd` on x86 sets the accessed bit; the collapse sets dirty).
//!
//! A superpage reservation of the region is broken once the new block is allocated (its
//! unused frames freed; its used ones are copied and freed like any others).
//!
//! Cost: allocation + copies + zero-fill + PTE writes (each present PTE cleared, the PMD
//! written) + the flush (+ breaking a reservation). Owns only the mechanism; which regions to collapse is policy.

use crate::api::CollapseOutcome;
use crate::error::CollapseError;
use crate::phys::buddy::AllocRequest;
use crate::space::addrspace::AddressSpace;
use crate::space::mech::{break_range, Mech};
use crate::space::pagetable::{PteTable, Slot};
use hugemm_hw::{Nanos, Order, Pfn};

pub(crate) fn collapse_region(
    space: &mut AddressSpace,
    m: &mut Mech<'_>,
    va: u64,
) -> Result<CollapseOutcome, CollapseError> {
    let region = m.layout.region_of(va);
    check_collapsible(space, m, region)?;
    let req = AllocRequest::new(Order(m.layout.huge_order())).prefer_zeroed(true);
    let (block, _) = m.alloc(&req).map_err(|_| CollapseError::NoMemory)?;
    let unreserve = break_range(m, region, region + 1);
    let huge = Slot::Huge {
        pfn: block.pfn,
        accessed: true,
        dirty: true,
        unwritten: 0,
    };
    let Slot::Table(table) = space.pt.replace(region, huge) else {
        return Err(CollapseError::NotTable); // unreachable: checked above
    };
    let zero_fill = fill_cost(m, &table, block.pfn);
    m.phys
        .map_frames(block.pfn, m.fanout(), m.pid, m.vpn(region));
    let copied = release_table(space, m, &table, block.pfn);
    let written = m.written_in(block.pfn, m.fanout());
    if let Some(Slot::Huge { unwritten, .. }) = space.pt.slot_mut_uncached(region) {
        *unwritten = (m.fanout() - written) as u16;
    }
    space.huge_pages += 1;
    let copies = Nanos(m.costs.copy_time(m.layout.base_bytes()).0 * copied as u64);
    let ptes = m.pte_updates(table.present() as u64 + 1);
    let flush = m.flush(region, region + m.layout.region_bytes());
    let compound = Nanos(m.costs.compound_tail.0 * (m.fanout() - 1));
    let cost = m.costs.alloc + compound + copies + zero_fill + ptes + flush + unreserve;
    Ok(CollapseOutcome {
        cost,
        copied,
        zero_filled: m.fanout() as u32 - copied,
    })
}

/// The region must be a table lying inside one VMA.
fn check_collapsible(space: &AddressSpace, m: &Mech<'_>, region: u64) -> Result<(), CollapseError> {
    if space
        .vma_covering(region, m.layout.region_bytes())
        .is_none()
    {
        return Err(CollapseError::NotInVma);
    }
    match space.slot(region) {
        Some(Slot::Table(_)) => Ok(()),
        _ => Err(CollapseError::NotTable),
    }
}

/// Time to zero-fill the subpages no PTE provides, skipping frames known zero.
fn fill_cost(m: &mut Mech<'_>, table: &PteTable, pfn: Pfn) -> Nanos {
    let (mut dirty, mut known) = (0, 0);
    for i in (0..m.fanout()).filter(|&i| !table.get(i as usize).is_frame()) {
        match m.phys.frame(Pfn(pfn.0 + i)).is_some_and(|f| f.is_zeroed()) {
            true => known += 1,
            false => dirty += 1,
        }
    }
    m.clearing(true, known);
    m.clearing(false, dirty)
}

/// Copy each mapped frame's content into the huge page at `huge`, free the old frames
/// and the page-table page; returns how many frames were copied. The process's written
/// pages stay as many: each copy keeps its original's content.
fn release_table(space: &mut AddressSpace, m: &mut Mech<'_>, table: &PteTable, huge: Pfn) -> u32 {
    let mut copied = 0;
    for (i, pte) in table
        .ptes()
        .iter()
        .enumerate()
        .filter(|(_, p)| p.is_frame())
    {
        m.phys.copy_content(pte.pfn(), Pfn(huge.0 + i as u64));
        m.release(pte.pfn(), 0);
        copied += 1;
    }
    space.base_pages -= copied as u64;
    m.release(table.table_pfn(), 0);
    copied
}

#[cfg(test)]
mod tests {
    use crate::api::{HugeAdvice, RegionState};
    use crate::error::CollapseError;
    use crate::testutil::{kernel, HUGE, PAGE};
    use hugemm_hw::{Nanos, PageSize, Pid, VirtAddr};

    #[test]
    fn collapse_costs_alloc_copies_fills_ptes_and_a_flush() {
        let mut k = kernel(64);
        let pid = k.create_process();
        let va = k.mmap(pid, HUGE, HugeAdvice::None).unwrap();
        for i in 0..3 {
            k.fault(pid, VirtAddr(va.0 + i * PAGE), true, PageSize::Base);
        }
        k.fault(pid, VirtAddr(va.0 + 9 * PAGE), false, PageSize::Base);
        let out = k.collapse(pid, va).unwrap();
        assert_eq!((out.copied, out.zero_filled), (3, 509));
        // alloc 100 + 3 copies + 509 fills (1000 each) + 5 PTE writes + flush 300
        assert_eq!(out.cost, Nanos(100 + 3000 + 509_000 + 50 + 300));
        let info = k.region_info(pid, va);
        assert_eq!(
            (info.state, info.accessed, info.dirty),
            (RegionState::Huge, 512, 512)
        );
        k.check_invariants().unwrap();
    }

    #[test]
    fn collapse_needs_a_table_inside_one_vma() {
        let mut k = kernel(64);
        let pid = k.create_process();
        let va = k.mmap(pid, HUGE + HUGE / 2, HugeAdvice::None).unwrap();
        assert_eq!(k.collapse(pid, va), Err(CollapseError::NotTable));
        k.fault(pid, VirtAddr(va.0 + HUGE), true, PageSize::Base);
        assert_eq!(
            k.collapse(pid, VirtAddr(va.0 + HUGE)),
            Err(CollapseError::NotInVma)
        );
        assert_eq!(k.collapse(Pid(9), va), Err(CollapseError::NotInVma));
        assert_eq!((k.stats().collapses, k.stats().collapse_failures), (0, 3));
    }

    #[test]
    fn collapse_without_a_free_huge_block_fails() {
        let mut k = kernel(2);
        let pid = k.create_process();
        let va = k.mmap(pid, HUGE, HugeAdvice::None).unwrap();
        k.fault(pid, va, true, PageSize::Base);
        assert_eq!(k.collapse(pid, va), Err(CollapseError::NoMemory));
        k.check_invariants().unwrap();
    }
}
