//! Quantities of the host that the model's units (`hugemm_hw::units`) do not name: a host
//! process id, a byte count read from `/proc`, and a range of whole huge-page regions.
//!
//! This module owns only vocabulary; it must not read anything from the host.

use hugemm_hw::{Geometry, VirtAddr};
use serde::Serialize;
use std::fmt;
use std::path::PathBuf;

/// A process id on the host (the model's `hugemm_hw::Pid` numbers modelled processes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct HostPid(pub u32);

impl HostPid {
    /// The process's directory under `/proc`.
    pub fn proc_dir(self) -> PathBuf {
        PathBuf::from(format!("/proc/{}", self.0))
    }
}

impl fmt::Display for HostPid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pid {}", self.0)
    }
}

/// A number of bytes, as `/proc` reports sizes (in kB, converted on reading).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Bytes(pub u64);

impl Bytes {
    /// `kib` kilobytes of 1024 bytes (what `/proc` calls `kB`).
    pub const fn from_kib(kib: u64) -> Bytes {
        Bytes(kib.saturating_mul(1024))
    }
}

/// A non-empty range of virtual addresses whose both ends are aligned to the huge-page
/// size: a whole number of regions that a huge page could map.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct HugeRange {
    start: VirtAddr,
    end: VirtAddr,
}

impl HugeRange {
    /// `[start, end)` if it is non-empty and both ends are aligned to `geometry`'s huge page.
    pub fn new(start: VirtAddr, end: VirtAddr, geometry: &Geometry) -> Option<HugeRange> {
        let mask = geometry.huge_bytes() - 1;
        (start < end && start.0 & mask == 0 && end.0 & mask == 0)
            .then_some(HugeRange { start, end })
    }

    /// The largest aligned range inside `[start, end)`, if it holds a whole region.
    pub fn inside(start: VirtAddr, end: VirtAddr, geometry: &Geometry) -> Option<HugeRange> {
        let huge = geometry.huge_bytes();
        let first = start.0.checked_next_multiple_of(huge)?;
        HugeRange::new(VirtAddr(first), VirtAddr(end.0 - end.0 % huge), geometry)
    }

    /// The first address.
    pub fn start(&self) -> VirtAddr {
        self.start
    }

    /// One past the last address.
    pub fn end(&self) -> VirtAddr {
        self.end
    }

    /// How many huge-page regions the range holds.
    pub fn regions(&self, geometry: &Geometry) -> u64 {
        (self.end.0 - self.start.0) / geometry.huge_bytes()
    }

    /// The first address of each region, in order.
    pub fn region_starts(&self, geometry: &Geometry) -> impl Iterator<Item = VirtAddr> {
        let huge = geometry.huge_bytes();
        (self.start.0..self.end.0)
            .step_by(huge as usize)
            .map(VirtAddr)
    }
}

impl fmt::Display for HugeRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}-{:#x}", self.start.0, self.end.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: Geometry = Geometry::X86_64;
    const MB2: u64 = 2 << 20;

    #[test]
    fn a_huge_range_needs_aligned_non_empty_ends() {
        assert!(HugeRange::new(VirtAddr(MB2), VirtAddr(2 * MB2), &G).is_some());
        assert!(HugeRange::new(VirtAddr(MB2), VirtAddr(MB2), &G).is_none());
        assert!(HugeRange::new(VirtAddr(MB2 + 4096), VirtAddr(2 * MB2), &G).is_none());
    }

    #[test]
    fn the_aligned_inside_of_a_range_rounds_inwards() {
        let r = HugeRange::inside(VirtAddr(MB2 - 4096), VirtAddr(3 * MB2 + 4096), &G).unwrap();
        assert_eq!((r.start(), r.end()), (VirtAddr(MB2), VirtAddr(3 * MB2)));
        assert_eq!(r.regions(&G), 2);
        let starts: Vec<_> = r.region_starts(&G).collect();
        assert_eq!(starts, vec![VirtAddr(MB2), VirtAddr(2 * MB2)]);
        assert!(HugeRange::inside(VirtAddr(4096), VirtAddr(MB2 + 4096), &G).is_none());
        assert!(HugeRange::inside(VirtAddr(u64::MAX - 4095), VirtAddr(u64::MAX), &G).is_none());
    }
}
