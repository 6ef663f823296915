//! Split: one huge mapping becomes a table of 512 PTEs on the same frames
//! (`__split_huge_pmd`, then the compound page is split like `split_huge_page`: each frame
//! an order-0 anonymous frame keeping its reverse map; accessed and dirty bits copy to
//! every PTE). The huge zero page becomes 512 zero-page PTEs
//! (`__split_huge_zero_page_pmd`).
//!
//! Linux takes the page-table page deposited at fault time; the model allocates it here,
//! so a split can fail for lack of memory. Cost: the page-table page (allocation and
//! clearing) + 512 PTE writes + a TLB flush. Owns only the splitting mechanism; it must
//! not decide what to split.

use crate::error::{MmError, Result};
use crate::space::addrspace::AddressSpace;
use crate::space::mech::Mech;
use crate::space::pagetable::{PteTable, Slot};
use crate::space::pte::Pte;
use hugemm_hw::{Nanos, Pfn};

/// Split the region holding `va`; fails unless it is huge-mapped.
pub(crate) fn split_region(space: &mut AddressSpace, m: &mut Mech<'_>, va: u64) -> Result<Nanos> {
    let region = m.layout.region_of(va);
    match space.slot(region) {
        Some(&Slot::Huge {
            pfn,
            accessed,
            dirty,
            ..
        }) => {
            let t = m.alloc_table(region)?;
            if m.phys.split_compound(pfn).is_err() {
                m.stats.internal_errors += 1;
            }
            let n = m.fanout();
            let table = PteTable::filled(t.pfn, n, |i| {
                let f = Pfn(pfn.0 + i);
                Pte::frame(f, accessed, dirty).with_written(m.is_written(f))
            });
            Ok(t.cost + install_split_table(space, m, region, table))
        }
        Some(&Slot::HugeZero { accessed }) => {
            let t = m.alloc_table(region)?;
            Ok(t.cost + install_zero_table(space, m, region, t.pfn, accessed))
        }
        _ => Err(MmError::NotHuge(region)),
    }
}

/// Replace the huge-zero mapping of `region` by a table (in page `table_pfn`) of
/// zero-page PTEs. Returns the PTE writes and flush.
pub(crate) fn install_zero_table(
    space: &mut AddressSpace,
    m: &mut Mech<'_>,
    region: u64,
    table_pfn: Pfn,
    accessed: bool,
) -> Nanos {
    let table = PteTable::filled(table_pfn, m.fanout(), |_| Pte::zero_page(accessed));
    install_split_table(space, m, region, table)
}

/// Install the table replacing a huge or huge-zero mapping, fixing the counters.
fn install_split_table(
    space: &mut AddressSpace,
    m: &mut Mech<'_>,
    region: u64,
    table: PteTable,
) -> Nanos {
    let frames = table.present() - table.zero();
    if let Slot::Huge { .. } = space.pt.replace(region, Slot::Table(table)) {
        space.huge_pages -= 1;
        space.base_pages += frames as u64;
    }
    m.stats.splits += 1;
    m.pte_updates(m.fanout()) + m.flush(region, region + m.layout.region_bytes())
}

#[cfg(test)]
mod tests {
    use crate::api::{HugeAdvice, RegionState};
    use crate::error::MmError;
    use crate::phys::buddy::AllocRequest;
    use crate::phys::frame::OwnerKind;
    use crate::testutil::{kernel, HUGE, PAGE};
    use hugemm_hw::{Nanos, Order, PageSize, Pid, VirtAddr};

    #[test]
    fn a_split_keeps_frames_and_bits_and_costs_a_table_page_ptes_and_a_flush() {
        let mut k = kernel(64);
        let pid = k.create_process();
        let va = k.mmap(pid, HUGE, HugeAdvice::Hugepage).unwrap();
        k.fault(pid, va, true, PageSize::Huge);
        let pa = k.translate(pid, VirtAddr(va.0 + 7 * PAGE)).unwrap().pa;
        let cost = k.split(pid, va).unwrap();
        // table page: alloc 100 + zeroing 1000; 512 PTEs at 10; flush 300
        assert_eq!(cost, Nanos(100 + 1000 + 5120 + 300));
        assert_eq!(k.translate(pid, VirtAddr(va.0 + 7 * PAGE)).unwrap().pa, pa);
        let info = k.region_info(pid, va);
        assert_eq!(
            (info.state, info.present, info.accessed, info.dirty),
            (RegionState::Table, 512, 512, 512)
        );
        assert_eq!(
            (k.stats().splits, k.stats().split_time, k.huge_pages(pid)),
            (1, cost, 0)
        );
        assert_eq!(k.rss_bytes(pid), HUGE);
        k.check_invariants().unwrap();
    }

    #[test]
    fn only_huge_mappings_split() {
        let mut k = kernel(64);
        let pid = k.create_process();
        let va = k.mmap(pid, HUGE, HugeAdvice::None).unwrap();
        assert_eq!(k.split(pid, va), Err(MmError::NotHuge(va.0)));
        k.fault(pid, va, true, PageSize::Base);
        assert!(matches!(k.split(pid, va), Err(MmError::NotHuge(_))));
        assert_eq!(k.split(Pid(77), va), Err(MmError::NoSuchProcess(Pid(77))));
    }

    #[test]
    fn a_split_without_memory_fails_and_changes_nothing() {
        let mut k = kernel(4);
        let pid = k.create_process();
        let va = k.mmap(pid, HUGE, HugeAdvice::None).unwrap();
        k.fault(pid, va, false, PageSize::Huge);
        let req = AllocRequest::new(Order(0)).owner(OwnerKind::KernelReclaimable);
        while k.alloc_pages(&req).is_ok() {}
        assert_eq!(k.split(pid, va), Err(MmError::OutOfMemory));
        assert_eq!(k.region_info(pid, va).state, RegionState::HugeZero);
        k.check_invariants().unwrap();
    }
}
