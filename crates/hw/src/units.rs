//! Quantities as types: frame numbers, addresses, orders, page sizes and durations.
//!
//! Every crate of hugemm speaks in these types rather than bare integers (conventions 1). This
//! module owns only the vocabulary and the geometry of the modelled MMU; it must not hold
//! any state or policy.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A physical page frame number (4 KB frames on x86-64).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Pfn(pub u64);

/// A virtual address in a process's address space.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct VirtAddr(pub u64);

/// A virtual page number: a virtual address divided by the base page size.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Vpn(pub u64);

/// A buddy-allocator order: a block of `2^order` base frames.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Order(pub u8);

/// A process identifier inside the model (not a host pid).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Pid(pub u32);

/// A duration or instant of simulated time, in integer nanoseconds.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Nanos(pub u64);

/// A span of simulated time in integer picoseconds, used where per-reference costs are
/// summed (a single reference costs a fraction of a nanosecond when memory-level
/// parallelism overlaps it), so rounding does not accumulate.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Picos(pub u64);

impl Nanos {
    /// Zero time.
    pub const ZERO: Nanos = Nanos(0);
    /// `ms` milliseconds.
    pub const fn from_millis(ms: u64) -> Nanos {
        Nanos(ms * 1_000_000)
    }
    /// `s` seconds.
    pub const fn from_secs(s: u64) -> Nanos {
        Nanos(s * 1_000_000_000)
    }
    /// This duration in seconds, for reports only.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// Saturating subtraction.
    pub fn saturating_sub(self, other: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(other.0))
    }
}

impl Picos {
    /// This span rounded down to whole nanoseconds.
    pub const fn to_nanos(self) -> Nanos {
        Nanos(self.0 / 1000)
    }
}

impl From<Nanos> for Picos {
    fn from(n: Nanos) -> Picos {
        Picos(n.0 * 1000)
    }
}

macro_rules! arith {
    ($t:ident) => {
        impl Add for $t {
            type Output = $t;
            fn add(self, o: $t) -> $t {
                $t(self.0 + o.0)
            }
        }
        impl AddAssign for $t {
            fn add_assign(&mut self, o: $t) {
                self.0 += o.0;
            }
        }
        impl Sub for $t {
            type Output = $t;
            fn sub(self, o: $t) -> $t {
                $t(self.0 - o.0)
            }
        }
    };
}
arith!(Nanos);
arith!(Picos);

impl fmt::Display for Nanos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.3} s", self.as_secs_f64())
    }
}

/// The page sizes the modelled MMU can map (x86-64: 4 KB, 2 MB, 1 GB).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum PageSize {
    /// A base page (4 KB), mapped by a PTE.
    Base,
    /// A huge page (2 MB), mapped by a PMD entry.
    Huge,
    /// A giant page (1 GB), mapped by a PUD entry.
    Giant,
}

impl PageSize {
    /// All page sizes, smallest first.
    pub const ALL: [PageSize; 3] = [PageSize::Base, PageSize::Huge, PageSize::Giant];
    /// Dense index 0..3, for per-size arrays.
    pub const fn index(self) -> usize {
        self as usize
    }
    /// Short label used in reports and TOML keys.
    pub const fn label(self) -> &'static str {
        match self {
            PageSize::Base => "4k",
            PageSize::Huge => "2m",
            PageSize::Giant => "1g",
        }
    }
}

/// The geometry of the modelled MMU: page sizes, table fan-out and buddy orders, in one
/// place so tests can build a tiny machine (conventions 2). x86-64 four-level paging is the
/// default.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Geometry {
    /// log2 of the base page size in bytes (12 for 4 KB).
    pub base_shift: u32,
    /// log2 of entries per page-table page (9 for 512).
    pub level_bits: u32,
    /// Number of page-table levels (4: PML4, PDPT, PD, PT).
    pub levels: u32,
    /// Highest buddy order (10 in Linux: MAX_PAGE_ORDER).
    pub max_order: u8,
}

impl Default for Geometry {
    fn default() -> Self {
        Geometry::X86_64
    }
}

impl Geometry {
    /// x86-64 with four-level paging.
    pub const X86_64: Geometry = Geometry {
        base_shift: 12,
        level_bits: 9,
        levels: 4,
        max_order: 10,
    };
    /// Bytes in a base page.
    pub const fn base_bytes(&self) -> u64 {
        1 << self.base_shift
    }
    /// The buddy order of a huge page (and of a pageblock): 9 on x86-64.
    pub const fn huge_order(&self) -> Order {
        Order(self.level_bits as u8)
    }
    /// Base pages in a huge page (512).
    pub const fn pages_per_huge(&self) -> u64 {
        1 << self.level_bits
    }
    /// Bytes in a huge page (2 MB).
    pub const fn huge_bytes(&self) -> u64 {
        1 << (self.base_shift + self.level_bits)
    }
    /// log2 of the bytes mapped by one entry at `page_size`.
    pub const fn shift(&self, page_size: PageSize) -> u32 {
        self.base_shift + self.level_bits * page_size as u32
    }
    /// Bytes mapped by one entry at `page_size`.
    pub const fn bytes(&self, page_size: PageSize) -> u64 {
        1 << self.shift(page_size)
    }
    /// The virtual page number of `va`.
    pub const fn vpn(&self, va: VirtAddr) -> Vpn {
        Vpn(va.0 >> self.base_shift)
    }
    /// The first address of `vpn`.
    pub const fn addr_of(&self, vpn: Vpn) -> VirtAddr {
        VirtAddr(vpn.0 << self.base_shift)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn x86_geometry_matches_the_architecture() {
        let g = Geometry::X86_64;
        assert_eq!(g.base_bytes(), 4096);
        assert_eq!(g.huge_bytes(), 2 << 20);
        assert_eq!(g.bytes(PageSize::Giant), 1 << 30);
        assert_eq!(g.pages_per_huge(), 512);
        assert_eq!(g.huge_order(), Order(9));
    }

    #[test]
    fn picos_round_down_to_nanos() {
        assert_eq!(Picos(1999).to_nanos(), Nanos(1));
        assert_eq!(Picos::from(Nanos(3)), Picos(3000));
    }
}
