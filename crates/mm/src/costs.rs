//! [`MmCosts`]: the kernel model's view of what its software mechanisms cost.
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

    /// Check every cost is finite and plausible, so no sum of costs can overflow.
    pub fn validate(&self) -> Result<()> {
        let fixed = [self.fault_trap, self.alloc, self.pte_update, self.tlb_flush];
        if fixed.iter().any(|c| *c > MAX_COST) {
            return Err(MmError::InvalidConfig {
                what: "a kernel cost exceeds 1000 s",
            });
        }
        for gbps in [self.zero_gbps, self.copy_gbps] {
            if !gbps.is_finite() || gbps < MIN_GBPS {
                return Err(MmError::InvalidConfig {
                    what: "zero/copy bandwidth must be finite and >= 0.001 GB/s",
                });
            }
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
        }
    }

    #[test]
    fn bandwidths_turn_bytes_into_nanoseconds() {
        assert_eq!(costs().zero_time(4096), Nanos(410));
        assert_eq!(costs().copy_time(2 << 20), Nanos(419_430));
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
