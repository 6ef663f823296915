//! Builders shared by the integration tests.

#![allow(dead_code)]

use hugemm_hw::{Geometry, Nanos};
use hugemm_mm::{Kernel, MemConfig, MmCosts};

/// Plausible costs (the numbers do not matter to these tests).
pub fn costs() -> MmCosts {
    MmCosts {
        fault_trap: Nanos(1000),
        alloc: Nanos(150),
        zero_gbps: 10.0,
        copy_gbps: 8.0,
        pte_update: Nanos(5),
        tlb_flush: Nanos(400),
        zero_nt_gbps: 10.0,
        scan_gbps: 16.0,
        scan_page: Nanos(150),
        compound_tail: Nanos::ZERO,
    }
}

/// An x86-64 machine with `mb` megabytes.
pub fn machine(mb: u64) -> Kernel {
    Kernel::new(
        &MemConfig {
            bytes: mb << 20,
            geometry: Geometry::X86_64,
        },
        costs(),
    )
    .expect("machine")
}

pub const MB: u64 = 1 << 20;
pub const HUGE: u64 = 2 << 20;
pub const PAGE: u64 = 4096;
