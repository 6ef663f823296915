//! Unmapping the pages of a range (`zap_page_range` for `munmap` and
//! `madvise(MADV_DONTNEED)`, and process exit).
//!
//! Fully covered huge mappings free their order-9 block; a partly covered one is split
//! first: the compound page is split at once and the unmapped frames freed (Linux maps
//! the rest with PTEs and leaves the frames to the deferred-split shrinker; the model
//! does not queue them). Tables left empty free their page-table page. Cost: one PTE write
//! per entry cleared (a huge entry counts one), the page-table pages a split needs, and
//! one TLB flush if anything was unmapped. A superpage reservation of a region the range
//! touches is broken first (its unused frames freed, `phys/reserv.rs`), at one buddy
//! operation per run of unused frames. Owns this mechanism only; VMAs are changed, and
//! processes ended, by the callers (`kernel/mmap.rs`).

use crate::space::addrspace::AddressSpace;
use crate::space::mech::{break_range, Mech};
use crate::space::pagetable::{PteTable, Slot};
use crate::space::pte::Pte;
use hugemm_hw::{Nanos, Pfn};

/// Unmap every page of `[start, end)` (page-aligned). Records one flush of the range when
/// `flush` and anything was mapped. Returns the time spent.
pub(crate) fn zap_range(
    space: &mut AddressSpace,
    m: &mut Mech<'_>,
    start: u64,
    end: u64,
    flush: bool,
) -> Nanos {
    let mut cost = break_range(m, start, end);
    let mut cleared = 0u64;
    for region in space.pt.mapped_regions(start, end) {
        let rb = m.layout.region_bytes();
        let lo = (start.max(region) - region) >> m.layout.base_shift;
        let hi = (end.min(region + rb) - region) >> m.layout.base_shift;
        let (c, n) = zap_region(space, m, region, lo, hi);
        cost += c;
        cleared += n;
    }
    cost += m.pte_updates(cleared);
    if flush && cleared > 0 {
        cost += m.flush(start, end);
    }
    cost
}

/// Unmap pages `lo..hi` of `region`; returns (extra cost, entries cleared).
fn zap_region(
    space: &mut AddressSpace,
    m: &mut Mech<'_>,
    region: u64,
    lo: u64,
    hi: u64,
) -> (Nanos, u64) {
    let full = lo == 0 && hi == m.fanout();
    let part = match space.slot(region) {
        Some(&Slot::Huge { pfn, .. }) if full => {
            space.pt.take(region);
            m.release_mapped(&mut space.written_pages, pfn, m.layout.huge_order());
            space.huge_pages -= 1;
            return (Nanos::ZERO, 1);
        }
        Some(Slot::HugeZero { .. }) if full => {
            space.pt.take(region);
            return (Nanos::ZERO, 1);
        }
        Some(&Slot::Huge {
            pfn,
            accessed,
            dirty,
            ..
        }) => Pte::frame(pfn, accessed, dirty),
        Some(&Slot::HugeZero { accessed }) => Pte::zero_page(accessed),
        Some(Slot::Table(_)) => return (Nanos::ZERO, zap_table(space, m, region, lo, hi)),
        None | Some(Slot::Empty) => return (Nanos::ZERO, 0),
    };
    (zap_huge_part(space, m, region, part, lo, hi), hi - lo)
}

/// Unmap pages `lo..hi` of a huge (`first` maps a frame) or huge-zero mapping: split the
/// compound page, free the covered frames, map the rest with a new table.
fn zap_huge_part(
    space: &mut AddressSpace,
    m: &mut Mech<'_>,
    region: u64,
    first: Pte,
    lo: u64,
    hi: u64,
) -> Nanos {
    let n = m.fanout();
    if first.is_frame() {
        free_covered(space, m, first.pfn(), lo, hi);
    }
    let written: Vec<bool> = match first.is_frame() {
        true => (0..n)
            .map(|i| m.is_written(Pfn(first.pfn().0 + i)))
            .collect(),
        false => Vec::new(),
    };
    let pte_at = |i: u64| match first.is_frame() {
        true => Pte::frame(Pfn(first.pfn().0 + i), first.accessed(), first.dirty())
            .with_written(written[i as usize]),
        false => first,
    };
    m.stats.splits += 1;
    let Ok(t) = m.alloc_table(region) else {
        // Unreachable for frames (a frame was just freed). For the huge zero page, the
        // rest of the region reads as zero once faulted again: nothing is lost.
        let rest = (0..n).filter(|i| !(lo..hi).contains(i)).map(pte_at);
        drop_mapping(space, m, region, rest);
        return m.costs.alloc;
    };
    let table = PteTable::filled(t.pfn, n, |i| {
        if (lo..hi).contains(&i) {
            Pte::NONE
        } else {
            pte_at(i)
        }
    });
    space.pt.replace(region, Slot::Table(table));
    t.cost + m.pte_updates(n)
}

/// Split the compound page at `pfn` and free its frames `lo..hi`.
fn free_covered(space: &mut AddressSpace, m: &mut Mech<'_>, pfn: Pfn, lo: u64, hi: u64) {
    if m.phys.split_compound(pfn).is_err() {
        m.stats.internal_errors += 1;
    }
    (lo..hi).for_each(|i| m.release_mapped(&mut space.written_pages, Pfn(pfn.0 + i), 0));
    space.huge_pages -= 1;
    space.base_pages += m.fanout() - (hi - lo);
}

/// Last resort when no page-table page can hold the rest of a split mapping: free it.
fn drop_mapping(
    space: &mut AddressSpace,
    m: &mut Mech<'_>,
    region: u64,
    rest: impl Iterator<Item = Pte>,
) {
    space.pt.take(region);
    for pte in rest.filter(|p| p.is_frame()) {
        m.stats.internal_errors += 1;
        m.release_mapped(&mut space.written_pages, pte.pfn(), 0);
        space.base_pages -= 1;
    }
}

/// Clear PTEs `lo..hi` of a table, freeing their frames and, if the table ends up empty,
/// its page. Returns the entries cleared.
fn zap_table(space: &mut AddressSpace, m: &mut Mech<'_>, region: u64, lo: u64, hi: u64) -> u64 {
    let Some(Slot::Table(t)) = space.pt.slot_mut_uncached(region) else {
        return 0;
    };
    let mut cleared = 0;
    for i in lo..hi {
        let old = t.set(i as usize, Pte::NONE);
        cleared += old.is_present() as u64;
        if old.is_frame() {
            m.release_mapped(&mut space.written_pages, old.pfn(), 0);
            space.base_pages -= 1;
        }
    }
    if t.present() == 0 {
        let table_pfn = t.table_pfn();
        space.pt.take(region);
        m.release(table_pfn, 0);
    }
    cleared
}

#[cfg(test)]
mod tests {
    use crate::api::{HugeAdvice, Madvise, RegionState, Touch};
    use crate::testutil::{kernel, HUGE, PAGE};
    use hugemm_hw::{PageSize, VirtAddr};

    #[test]
    fn unmapping_part_of_the_huge_zero_page_leaves_zero_ptes() {
        let mut k = kernel(64);
        let pid = k.create_process();
        let va = k.mmap(pid, HUGE, HugeAdvice::None).unwrap();
        k.fault(pid, va, false, PageSize::Huge);
        k.madvise(pid, VirtAddr(va.0 + PAGE), PAGE, Madvise::DontNeed)
            .unwrap();
        let info = k.region_info(pid, va);
        assert_eq!(
            (info.state, info.present, info.zero),
            (RegionState::Table, 511, 511)
        );
        assert_eq!(
            k.touch(pid, VirtAddr(va.0 + PAGE), false),
            Touch::NotPresent
        );
        assert_eq!(k.stats().splits, 1);
        k.check_invariants().unwrap();
    }

    #[test]
    fn a_table_emptied_by_an_unmap_frees_its_page() {
        let mut k = kernel(64);
        let pid = k.create_process();
        let va = k.mmap(pid, HUGE, HugeAdvice::None).unwrap();
        k.fault(pid, va, true, PageSize::Base);
        k.fault(pid, VirtAddr(va.0 + PAGE), false, PageSize::Base);
        let cost = k.munmap(pid, va, 2 * PAGE).unwrap();
        assert_eq!(cost.0, 2 * 10 + 300, "two PTE writes and a flush");
        assert_eq!(k.phys().frames_free(), k.phys().frames_total());
        assert_eq!(k.region_info(pid, va).state, RegionState::Unmapped);
        assert_eq!(k.take_tlb_flushes().len(), 1);
        k.check_invariants().unwrap();
    }

    #[test]
    fn unmapping_nothing_records_no_flush() {
        let mut k = kernel(64);
        let pid = k.create_process();
        let va = k.mmap(pid, HUGE, HugeAdvice::None).unwrap();
        assert_eq!(k.munmap(pid, va, HUGE).unwrap().0, 0);
        assert!(k.take_tlb_flushes().is_empty());
        assert_eq!(k.exit_process(pid).0, 0);
        assert_eq!(k.exit_process(pid).0, 0, "exiting twice is harmless");
    }
}
