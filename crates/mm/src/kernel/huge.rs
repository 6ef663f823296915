//! The kernel's entry points to the huge-page mechanisms (`huge/`): collapse, split,
//! zero-subpage de-duplication, and observing superpage reservations. Each borrows the
//! process's address space and the mechanism context ([`Kernel::parts`]), runs the
//! mechanism and counts it in the kernel's statistics.
//!
//! Owns the entry points and their counting only: the mechanisms are `huge/`'s, and which
//! region to collapse, split or scan is a policy's decision.

use crate::api::{CollapseOutcome, ReservationCensus, ReservationInfo};
use crate::error::{CollapseError, MmError, Result};
use crate::huge::collapse::collapse_region;
use crate::huge::dedup::{dedup_region, ZeroScan, ZeroScanOutcome};
use crate::huge::split::split_region;
use crate::kernel::Kernel;
use hugemm_hw::{Nanos, Pid, VirtAddr};

impl Kernel {
    /// Collapse the region holding `region` into a huge page.
    pub fn collapse(
        &mut self,
        pid: Pid,
        region: VirtAddr,
    ) -> Result<CollapseOutcome, CollapseError> {
        let result = match self.parts(pid) {
            Some((space, mut m)) => collapse_region(space, &mut m, region.0),
            None => Err(CollapseError::NotInVma),
        };
        match &result {
            Ok(out) => {
                self.stats.collapses += 1;
                self.stats.collapse_time += out.cost;
            }
            Err(_) => self.stats.collapse_failures += 1,
        }
        result
    }

    /// Split the huge (or huge-zero) mapping of the region holding `region`.
    pub fn split(&mut self, pid: Pid, region: VirtAddr) -> Result<Nanos> {
        let (space, mut m) = self.parts(pid).ok_or(MmError::NoSuchProcess(pid))?;
        let cost = split_region(space, &mut m, region.0)?;
        self.stats.split_time += cost;
        Ok(cost)
    }

    /// Scan the huge page mapping `region` of `pid` for zero-filled base pages and
    /// de-duplicate them if more than `scan.max_zero` are. Fails, changing nothing, when
    /// the region is not a huge page.
    pub fn dedup_zero_subpages(
        &mut self,
        pid: Pid,
        region: VirtAddr,
        scan: ZeroScan,
    ) -> Result<ZeroScanOutcome> {
        let (space, mut m) = self.parts(pid).ok_or(MmError::NoSuchProcess(pid))?;
        let out = dedup_region(space, &mut m, region.0, scan)?;
        let s = &mut self.stats;
        s.zero_scan_huge_pages += 1;
        s.zero_scan_bytes += out.bytes_read;
        s.zero_subpages_found += out.zero as u64;
        s.zero_dedup_splits += out.split as u64;
        s.zero_subpages_recovered += out.recovered as u64;
        s.zero_scan_time += out.cost;
        Ok(out)
    }

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
