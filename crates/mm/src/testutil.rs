//! Builders for the crate's unit tests.

use crate::costs::MmCosts;
use crate::kernel::{Kernel, MemConfig};
use hugemm_hw::{Geometry, Nanos};

/// Round numbers: zeroing or copying a 4 KB page takes 1000 ns.
pub fn costs() -> MmCosts {
    MmCosts {
        fault_trap: Nanos(1000),
        alloc: Nanos(100),
        zero_gbps: 4.096,
        copy_gbps: 4.096,
        pte_update: Nanos(10),
        tlb_flush: Nanos(300),
        zero_nt_gbps: 4.096,
        scan_gbps: 8.192,
        scan_page: Nanos(100),
        compound_tail: Nanos::ZERO,
    }
}

/// An x86-64 machine of `mb` megabytes.
pub fn kernel(mb: u64) -> Kernel {
    Kernel::new(
        &MemConfig {
            bytes: mb << 20,
            geometry: Geometry::X86_64,
        },
        costs(),
    )
    .unwrap()
}

pub const PAGE: u64 = 4096;
pub const HUGE: u64 = 2 << 20;
