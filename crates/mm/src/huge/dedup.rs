//! Zero-subpage de-duplication: scan a huge page's base pages for zero-filled ones and,
//! when more are zero than allowed, split it and map the zero-filled ones to the shared
//! zero page, freeing their frames. A later write to such a page takes a copy-on-write
//! fault of the zero page, as any.
//!
//! Two users, two scans ([`ScanStyle`]):
//! - HawkEye's bloat recovery (section 3.2; `hawkeye_modules/bloat_recovery/remove.c`)
//!   reads every base page up to its first non-zero byte, then de-duplicates the zero
//!   ones: one pass.
//! - Linux 6.12's THP shrinker (`deferred_split_scan`): `thp_underused` reads base pages
//!   until the verdict is known (more than `max_ptes_none` zero-filled, or enough filled
//!   that there cannot be), and a split of an underused page checks every base page again
//!   as it remaps (`try_to_map_unused_to_zeropage`, `RMP_USE_SHARED_ZEROPAGE`).
//!
//! The split frees the zero-filled frames first and then allocates the page-table page,
//! so it cannot fail for want of memory: a recovery run when nothing at all is free (a
//! fault's direct reclaim) still works, as Linux's does with the page-table page it
//! deposited at the huge fault.
//!
//! Cost: the scans (`MmCosts::scan_time`: a cache miss to reach each page, then the bytes
//! read, `content.rs`), the split (the page-table page, 512 PTE writes, a flush). Owns
//! the mechanism only: which huge pages to scan, and when, is the policy's.

use crate::error::{MmError, Result};
use crate::space::addrspace::AddressSpace;
use crate::space::content::bytes_scanned;
use crate::space::mech::Mech;
use crate::space::pagetable::PteTable;
use crate::space::pagetable::Slot;
use crate::space::pte::Pte;
use hugemm_hw::{Nanos, Pfn};
use serde::{Deserialize, Serialize};

/// How a huge page's base pages are scanned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ScanStyle {
    /// Every base page, once (HawkEye).
    Full,
    /// Until the verdict is known, then every base page again at the split (Linux).
    Underused,
}

/// What to de-duplicate: split when more than `max_zero` base pages are zero-filled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ZeroScan {
    /// Zero-filled base pages a huge page may hold and stay whole (Linux:
    /// `max_ptes_none`; HawkEye: its bloat threshold).
    pub max_zero: u32,
    /// How the base pages are read.
    pub style: ScanStyle,
}

/// What a scan found and did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ZeroScanOutcome {
    /// Base pages read (both scans).
    pub pages_read: u64,
    /// Bytes read (both scans).
    pub bytes_read: u64,
    /// Zero-filled base pages found.
    pub zero: u32,
    /// Whether the huge page was split.
    pub split: bool,
    /// Base pages remapped to the zero page, their frames freed.
    pub recovered: u32,
    /// Time charged to the caller.
    pub cost: Nanos,
}

pub(crate) fn dedup_region(
    space: &mut AddressSpace,
    m: &mut Mech<'_>,
    va: u64,
    scan: ZeroScan,
) -> Result<ZeroScanOutcome> {
    let region = m.layout.region_of(va);
    let Some(&Slot::Huge {
        pfn,
        accessed,
        dirty,
        ..
    }) = space.slot(region)
    else {
        return Err(MmError::NotHuge(region));
    };
    let mut out = first_scan(m, pfn, scan);
    out.cost = m.costs.scan_time(out.pages_read, out.bytes_read);
    let underused = out.zero > scan.max_zero;
    if !underused {
        return Ok(out);
    }
    if scan.style == ScanStyle::Underused {
        let (pages, bytes) = read_all(m, pfn);
        out.pages_read += pages;
        out.bytes_read += bytes;
        out.cost += m.costs.scan_time(pages, bytes);
    }
    let (cost, recovered) = split_dedup(space, m, region, pfn, (accessed, dirty));
    out.split = true;
    out.cost += cost;
    out.recovered = recovered;
    Ok(out)
}

/// The scan deciding whether the huge page at `pfn` is underused.
fn first_scan(m: &Mech<'_>, pfn: Pfn, scan: ZeroScan) -> ZeroScanOutcome {
    let n = m.fanout();
    let mut out = ZeroScanOutcome::default();
    let mut filled = 0u64;
    for i in 0..n {
        let first = first_nonzero(m, Pfn(pfn.0 + i));
        out.pages_read += 1;
        out.bytes_read += bytes_scanned(first, m.layout.base_bytes());
        match first {
            None => out.zero += 1,
            Some(_) => filled += 1,
        }
        if scan.style == ScanStyle::Underused
            && (out.zero > scan.max_zero || filled >= n.saturating_sub(scan.max_zero as u64))
        {
            break;
        }
    }
    out
}

/// Read every base page of the huge page at `pfn`: (pages, bytes).
fn read_all(m: &Mech<'_>, pfn: Pfn) -> (u64, u64) {
    let bytes = (0..m.fanout())
        .map(|i| bytes_scanned(first_nonzero(m, Pfn(pfn.0 + i)), m.layout.base_bytes()))
        .sum();
    (m.fanout(), bytes)
}

/// The first non-zero byte of an allocated anonymous frame (`None`: zero-filled).
fn first_nonzero(m: &Mech<'_>, pfn: Pfn) -> Option<u16> {
    m.phys.frame(pfn).and_then(|f| f.first_nonzero())
}

/// Split the huge page at `pfn` mapping `region` (with its accessed and dirty bits):
/// free its zero-filled frames, then map the rest with a new table whose entries for the
/// freed pages map the zero page. Returns the cost and the frames freed (at least one:
/// the caller found more zero-filled pages than allowed).
fn split_dedup(
    space: &mut AddressSpace,
    m: &mut Mech<'_>,
    region: u64,
    pfn: Pfn,
    (accessed, dirty): (bool, bool),
) -> (Nanos, u32) {
    let n = m.fanout();
    if m.phys.split_compound(pfn).is_err() {
        m.stats.internal_errors += 1;
    }
    let zero: Vec<bool> = (0..n)
        .map(|i| m.phys.frame(Pfn(pfn.0 + i)).is_some_and(|f| f.is_zeroed()))
        .collect();
    let mut recovered = 0;
    for i in (0..n).filter(|&i| zero[i as usize]) {
        m.release_mapped(&mut space.written_pages, Pfn(pfn.0 + i), 0);
        recovered += 1;
    }
    space.huge_pages -= 1;
    space.base_pages += n - recovered;
    m.stats.splits += 1;
    let Ok(t) = m.alloc_table(region) else {
        // Unreachable: frames were just freed. Drop the rest rather than leave a huge
        // mapping over freed frames; the invariant checker reports the error.
        m.stats.internal_errors += 1;
        space.pt.take(region);
        for i in (0..n).filter(|&i| !zero[i as usize]) {
            m.release_mapped(&mut space.written_pages, Pfn(pfn.0 + i), 0);
        }
        space.base_pages -= n - recovered;
        return (Nanos::ZERO, recovered as u32);
    };
    let table = PteTable::filled(t.pfn, n, |i| match zero[i as usize] {
        true => Pte::zero_page(accessed),
        false => {
            let f = Pfn(pfn.0 + i);
            Pte::frame(f, accessed, dirty).with_written(m.is_written(f))
        }
    });
    space.pt.replace(region, Slot::Table(table));
    let cost = t.cost + m.pte_updates(n) + m.flush(region, region + m.layout.region_bytes());
    (cost, recovered as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{HugeAdvice, RegionState, Touch};
    use crate::kernel::Kernel;
    use crate::space::content::WriteContent;
    use crate::testutil::{kernel, HUGE, PAGE};
    use hugemm_hw::{PageSize, Pid, VirtAddr};

    const HAWKEYE: ZeroScan = ZeroScan {
        max_zero: 0,
        style: ScanStyle::Full,
    };

    /// A huge page of which the first `written` base pages were written with data whose
    /// first non-zero byte is at offset 0.
    fn sparse_huge(written: u64) -> (Kernel, Pid, VirtAddr) {
        let mut k = kernel(64);
        let pid = k.create_process();
        let first_byte = WriteContent {
            nonzero_share: 1.0,
            mean_first_nonzero: 0.0,
        };
        k.set_write_content(pid, first_byte).unwrap();
        let va = k.mmap(pid, HUGE, HugeAdvice::Hugepage).unwrap();
        k.fault(pid, va, true, PageSize::Huge);
        for i in 1..written {
            k.touch(pid, VirtAddr(va.0 + i * PAGE), true);
        }
        (k, pid, va)
    }

    #[test]
    fn zero_subpages_map_the_zero_page_and_their_frames_are_freed() {
        let (mut k, pid, va) = sparse_huge(100);
        let free = k.phys().frames_free();
        let out = k.dedup_zero_subpages(pid, va, HAWKEYE).unwrap();
        assert_eq!((out.zero, out.split, out.recovered), (412, true, 412));
        // 100 pages read to their first byte, 412 read whole.
        assert_eq!(out.bytes_read, 100 + 412 * PAGE);
        assert_eq!(out.pages_read, 512);
        let info = k.region_info(pid, va);
        assert_eq!(
            (info.state, info.present, info.zero),
            (RegionState::Table, 512, 412)
        );
        assert_eq!(k.rss_bytes(pid), 100 * PAGE);
        // The table page came out of the freed frames.
        assert_eq!(k.phys().frames_free(), free + 412 - 1);
        assert_eq!(
            k.touch(pid, VirtAddr(va.0 + 200 * PAGE), true),
            Touch::WriteToZeroPage,
            "a later write copies on write"
        );
        k.check_invariants().unwrap();
    }

    #[test]
    fn the_scan_cost_is_linear_in_the_bytes_it_reads() {
        let (mut k, pid, va) = sparse_huge(512);
        let out = k.dedup_zero_subpages(pid, va, HAWKEYE).unwrap();
        assert_eq!((out.zero, out.split, out.bytes_read), (0, false, 512));
        // 512 page misses of 100 ns and 512 bytes at 8.192 GB/s.
        assert_eq!(out.cost, Nanos(51_200 + 63));
        assert_eq!(k.region_info(pid, va).state, RegionState::Huge);
    }

    #[test]
    fn linux_stops_reading_once_the_verdict_is_known_and_rereads_at_the_split() {
        let linux = |max_zero| ZeroScan {
            max_zero,
            style: ScanStyle::Underused,
        };
        // 409 filled pages come first: with max_ptes_none 409 the page cannot be
        // underused once 512 - 409 = 103 are filled.
        let (mut k, pid, va) = sparse_huge(409);
        let out = k.dedup_zero_subpages(pid, va, linux(409)).unwrap();
        assert_eq!((out.pages_read, out.split), (103, false));
        // With max_ptes_none 64, the 65th zero page decides, then the split rereads all.
        let out = k.dedup_zero_subpages(pid, va, linux(64)).unwrap();
        assert_eq!((out.zero, out.split, out.recovered), (65, true, 103));
        assert_eq!(out.pages_read, 409 + 65 + 512);
        k.check_invariants().unwrap();
    }

    #[test]
    fn written_zeros_are_deduplicated_too_and_leave_the_useful_count() {
        let mut k = kernel(64);
        let pid = k.create_process();
        k.set_write_content(pid, WriteContent::ZEROS).unwrap();
        let va = k.mmap(pid, HUGE, HugeAdvice::Hugepage).unwrap();
        k.fault(pid, va, true, PageSize::Huge);
        k.touch(pid, VirtAddr(va.0 + PAGE), true);
        assert_eq!(k.useful_bytes(pid), 2 * PAGE);
        let out = k.dedup_zero_subpages(pid, va, HAWKEYE).unwrap();
        assert_eq!(out.recovered, 512);
        assert_eq!((k.useful_bytes(pid), k.rss_bytes(pid)), (0, 0));
        k.check_invariants().unwrap();
    }

    #[test]
    fn recovery_works_with_no_frame_free() {
        let (mut k, pid, va) = sparse_huge(1);
        let req = crate::phys::buddy::AllocRequest::new(hugemm_hw::Order(0))
            .owner(crate::phys::frame::OwnerKind::KernelUnmovable);
        while k.alloc_pages(&req).is_ok() {}
        assert_eq!(k.phys().frames_free(), 0);
        let out = k.dedup_zero_subpages(pid, va, HAWKEYE).unwrap();
        assert_eq!((out.split, out.recovered), (true, 511));
        assert_eq!(
            k.phys().frames_free(),
            510,
            "one frame became the page table"
        );
        k.check_invariants().unwrap();
    }

    #[test]
    fn only_huge_pages_are_scanned() {
        let mut k = kernel(64);
        let pid = k.create_process();
        let va = k.mmap(pid, HUGE, HugeAdvice::None).unwrap();
        k.fault(pid, va, true, PageSize::Base);
        assert_eq!(
            k.dedup_zero_subpages(pid, va, HAWKEYE),
            Err(MmError::NotHuge(va.0))
        );
        assert!(k.dedup_zero_subpages(Pid(9), va, HAWKEYE).is_err());
        assert_eq!(k.stats().zero_scan_huge_pages, 0);
    }
}
