//! [`MmCosts`] and [`FragCosts`]: the kernel model's view of what its software mechanisms cost.
//!
//! The engine builds it from the machine profile's `KernelCosts` (hugemm-hw), so this crate
//! does not depend on how profiles are written. This module owns the arithmetic turning
//! bytes into time; it must not hold state or pick numbers of its own.

use crate::error::{MmError, Result};
use hugemm_hw::Nanos;
use serde::{Deserialize, Serialize};

/// Longest single software cost accepted (1000 s): larger means a unit mistake.
const MAX_COST: Nanos = Nanos(1_000_000_000_000);
/// Slowest bandwidth accepted (1 MB/s).
const MIN_GBPS: f64 = 1e-3;

/// Software costs of the kernel's mechanisms, charged to the faulting process or to the
/// daemon that runs the mechanism.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MmCosts {
    /// Exception entry and exit plus the fault handler's software path.
    pub fault_trap: Nanos,
    /// One buddy allocation (any order).
    pub alloc: Nanos,
    /// Bandwidth of clearing pages, in GB/s (10^9 bytes a second).
    pub zero_gbps: f64,
    /// Bandwidth of copying pages with one thread, in GB/s.
    pub copy_gbps: f64,
    /// Writing one page-table entry.
    pub pte_update: Nanos,
    /// A local flush of a range, or one shootdown.
    pub tlb_flush: Nanos,
    /// Bandwidth of clearing pages with non-temporal stores (pre-zeroing), in GB/s.
    pub zero_nt_gbps: f64,
    /// Bandwidth of scanning a page for a non-zero byte (`memchr_inv`), in GB/s.
    pub scan_gbps: f64,
    /// Reaching a page a scan has not read yet: its first line is a cache miss (the
    /// hardware prefetchers stop at page boundaries).
    pub scan_page: Nanos,
    /// Setting up one tail page of a new compound (huge) page (`prep_compound_page`
    /// initialises 511 `struct page`s of a 2 MB page), charged to huge faults and
    /// collapses.
    pub compound_tail: Nanos,
}

impl MmCosts {
    /// Time to clear `bytes` bytes.
    pub fn zero_time(&self, bytes: u64) -> Nanos {
        transfer_time(bytes, self.zero_gbps)
    }

    /// Time to copy `bytes` bytes.
    pub fn copy_time(&self, bytes: u64) -> Nanos {
        transfer_time(bytes, self.copy_gbps)
    }

    /// Time to clear `bytes` bytes with non-temporal stores.
    pub fn zero_nt_time(&self, bytes: u64) -> Nanos {
        transfer_time(bytes, self.zero_nt_gbps)
    }

    /// Time to scan `pages` pages reading `bytes` bytes in all, each stopping at its
    /// first non-zero byte.
    pub fn scan_time(&self, pages: u64, bytes: u64) -> Nanos {
        Nanos(self.scan_page.0 * pages) + transfer_time(bytes, self.scan_gbps)
    }

    /// Check every cost is finite and plausible, so no sum of costs can overflow.
    pub fn validate(&self) -> Result<()> {
        let fixed = [
            self.fault_trap,
            self.alloc,
            self.pte_update,
            self.tlb_flush,
            self.scan_page,
            self.compound_tail,
        ];
        if fixed.iter().any(|c| *c > MAX_COST) {
            return Err(MmError::InvalidConfig {
                what: "a kernel cost exceeds 1000 s",
            });
        }
        for gbps in [
            self.zero_gbps,
            self.copy_gbps,
            self.zero_nt_gbps,
            self.scan_gbps,
        ] {
            if !gbps.is_finite() || gbps < MIN_GBPS {
                return Err(MmError::InvalidConfig {
                    what: "zero/copy/scan bandwidth must be finite and >= 0.001 GB/s",
                });
            }
        }
        Ok(())
    }
}

/// Costs of the fragmentation mechanisms: page-cache reads, reclaim and the compaction
/// scanners. Kept apart from [`MmCosts`] so the engine's `MmCosts` literal (hugemm-sim)
/// still compiles; [`Kernel::new`](crate::Kernel::new) derives them with
/// [`FragCosts::derived`] and [`Kernel::set_frag_costs`](crate::Kernel::set_frag_costs)
/// replaces them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FragCosts {
    /// Reading one base page into the page cache on a miss, beyond copying it out to the
    /// reader. Default: one buddy allocation plus a copy of the page (the file is modelled
    /// as RAM-backed, like tmpfs or `brd`: no device latency).
    pub page_cache_read: Nanos,
    /// One frame examined by a compaction scanner (`isolate_migratepages_block`,
    /// `isolate_freepages_block` read one `struct page`, a mostly streamed 64 B line).
    /// Default 5 ns.
    pub compact_scan: Nanos,
    /// Reclaiming one clean, unmapped page-cache page (`shrink_folio_list`: LRU isolation,
    /// `__remove_mapping`, the free). Default 1 us, about 4 GB/s of clean cache a thread,
    /// the order kswapd reaches on current hardware (an estimate, not a measurement).
    pub reclaim_page: Nanos,
}

impl FragCosts {
    /// The defaults described on each field, from the machine's `MmCosts` and base page.
    pub fn derived(c: &MmCosts, base_bytes: u64) -> FragCosts {
        FragCosts {
            page_cache_read: c.alloc + c.copy_time(base_bytes),
            compact_scan: Nanos(5),
            reclaim_page: Nanos(1000),
        }
    }

    /// Check every cost is plausible, so no sum of costs can overflow.
    pub fn validate(&self) -> Result<()> {
        let all = [self.page_cache_read, self.compact_scan, self.reclaim_page];
        if all.iter().any(|c| *c > MAX_COST) {
            return Err(MmError::InvalidConfig {
                what: "a fragmentation cost exceeds 1000 s",
            });
        }
        Ok(())
    }
}

/// `bytes` at `gbps` GB/s, rounded to the nearest nanosecond (1 GB/s moves 1 byte a ns).
fn transfer_time(bytes: u64, gbps: f64) -> Nanos {
    if !gbps.is_finite() || gbps <= 0.0 {
        return Nanos::ZERO;
    }
    Nanos((bytes as f64 / gbps).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn costs() -> MmCosts {
        MmCosts {
            fault_trap: Nanos(1000),
            alloc: Nanos(100),
            zero_gbps: 10.0,
            copy_gbps: 5.0,
            pte_update: Nanos(5),
            tlb_flush: Nanos(500),
            zero_nt_gbps: 10.0,
            scan_gbps: 20.0,
            scan_page: Nanos(100),
            compound_tail: Nanos::ZERO,
        }
    }

    #[test]
    fn bandwidths_turn_bytes_into_nanoseconds() {
        assert_eq!(costs().zero_time(4096), Nanos(410));
        assert_eq!(costs().copy_time(2 << 20), Nanos(419_430));
        assert_eq!(costs().scan_time(2, 4096 + 10), Nanos(200 + 205));
    }

    #[test]
    fn implausible_costs_are_refused() {
        assert!(costs().validate().is_ok());
        let bad = MmCosts {
            zero_gbps: f64::NAN,
            ..costs()
        };
        assert!(bad.validate().is_err());
        let bad = MmCosts {
            tlb_flush: Nanos(u64::MAX),
            ..costs()
        };
        assert!(bad.validate().is_err());
        let frag = FragCosts::derived(&costs(), 4096);
        assert_eq!(frag.page_cache_read, Nanos(100 + 819));
        assert!(frag.validate().is_ok());
        let bad = FragCosts {
            reclaim_page: MAX_COST + Nanos(1),
            ..frag
        };
        assert!(bad.validate().is_err());
        assert_eq!(
            MmCosts {
                copy_gbps: 0.0,
                ..costs()
            }
            .copy_time(4096),
            Nanos::ZERO
        );
    }
}
