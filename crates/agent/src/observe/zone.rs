//! The vocabulary shared by `/proc/buddyinfo` and `/proc/pagetypeinfo`: memory zones, the
//! host's migrate types, free-block counts per order, and the `Node N, zone NAME` prefix of
//! their lines. Owns no file.

use super::text::Line;
use crate::error::Result;
use hugemm_hw::Order;
use hugemm_mm::{MigrateType, NodeId};
use serde::Serialize;

/// A memory zone (Linux `enum zone_type`, named as `/proc` prints them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Zone {
    /// `DMA`: the first 16 MB on x86-64.
    Dma,
    /// `DMA32`: below 4 GB.
    Dma32,
    /// `Normal`.
    Normal,
    /// `HighMem` (32-bit hosts).
    HighMem,
    /// `Movable`: only movable allocations (`movablecore=`, hot-pluggable memory).
    Movable,
    /// `Device`: device memory (`ZONE_DEVICE`).
    Device,
}

impl Zone {
    /// The zone `/proc` calls `name`.
    pub fn from_name(name: &str) -> Option<Zone> {
        Some(match name {
            "DMA" => Zone::Dma,
            "DMA32" => Zone::Dma32,
            "Normal" => Zone::Normal,
            "HighMem" => Zone::HighMem,
            "Movable" => Zone::Movable,
            "Device" => Zone::Device,
            _ => return None,
        })
    }
}

/// A migrate type as the host kernel has them (Linux `migratetype_names`): the model's
/// three plus the ones only a real kernel has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum HostMigrateType {
    /// `Unmovable`.
    Unmovable,
    /// `Movable`.
    Movable,
    /// `Reclaimable`.
    Reclaimable,
    /// `HighAtomic`: pageblocks reserved for high-order atomic allocations.
    HighAtomic,
    /// `CMA`: the contiguous memory allocator's area (`CONFIG_CMA`).
    Cma,
    /// `Isolate`: pageblocks isolated for migration or offlining.
    Isolate,
}

impl HostMigrateType {
    /// The migrate type `/proc/pagetypeinfo` calls `name`.
    pub fn from_name(name: &str) -> Option<HostMigrateType> {
        Some(match name {
            "Unmovable" => HostMigrateType::Unmovable,
            "Movable" => HostMigrateType::Movable,
            "Reclaimable" => HostMigrateType::Reclaimable,
            "HighAtomic" => HostMigrateType::HighAtomic,
            "CMA" => HostMigrateType::Cma,
            "Isolate" => HostMigrateType::Isolate,
            _ => return None,
        })
    }

    /// The model's migrate type, for the three the model has.
    pub fn model(self) -> Option<MigrateType> {
        match self {
            HostMigrateType::Unmovable => Some(MigrateType::Unmovable),
            HostMigrateType::Movable => Some(MigrateType::Movable),
            HostMigrateType::Reclaimable => Some(MigrateType::Reclaimable),
            _ => None,
        }
    }
}

/// Free blocks per order (index = order), as one line of buddyinfo or pagetypeinfo gives.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FreeCounts {
    counts: Vec<u64>,
    capped: bool,
}

impl FreeCounts {
    /// Counts for orders `0..counts.len()`; `capped` when the kernel stopped counting at
    /// some order (pagetypeinfo prints `>100000`), so the counts are lower bounds.
    pub fn new(counts: Vec<u64>, capped: bool) -> FreeCounts {
        FreeCounts { counts, capped }
    }

    /// Free blocks of `order` (None past the highest order).
    pub fn at(&self, order: Order) -> Option<u64> {
        self.counts.get(order.0 as usize).copied()
    }

    /// The counts, order 0 first.
    pub fn counts(&self) -> &[u64] {
        &self.counts
    }

    /// Whether some count is a lower bound.
    pub fn capped(&self) -> bool {
        self.capped
    }

    /// Free base pages in all blocks (saturating).
    pub fn base_pages(&self) -> u64 {
        self.counts
            .iter()
            .enumerate()
            .fold(0, |sum, (o, &n)| sum.saturating_add(scaled(n, o)))
    }

    /// How many huge pages of order `huge` the free blocks of that order or larger hold
    /// without compaction (a block of order `huge + 1` holds two).
    pub fn huge_blocks(&self, huge: Order) -> u64 {
        let from = huge.0 as usize;
        self.counts
            .iter()
            .enumerate()
            .skip(from)
            .fold(0, |sum, (o, &n)| sum.saturating_add(scaled(n, o - from)))
    }
}

/// The most orders a line may list: Linux has 11 on x86-64 (`NR_PAGE_ORDERS`) and at most
/// 14 elsewhere; more is not a kernel's output.
pub(crate) const MAX_ORDERS: usize = 32;

/// `n` blocks of `2^shift` units, in units (saturating).
fn scaled(n: u64, shift: usize) -> u64 {
    match u32::try_from(shift).ok().and_then(|s| 1u64.checked_shl(s)) {
        Some(unit) => n.saturating_mul(unit),
        None if n == 0 => 0,
        None => u64::MAX,
    }
}

/// Parse the `Node N, zone NAME` prefix from `tokens`; pagetypeinfo writes a comma after
/// the zone name too (`zone_comma`).
pub(crate) fn node_zone<'t>(
    line: &Line<'_>,
    tokens: &mut impl Iterator<Item = &'t str>,
    zone_comma: bool,
) -> Result<(NodeId, Zone)> {
    line.expect(tokens, "Node")?;
    let node = line.next(tokens, "a node number and a comma")?;
    let node = node
        .strip_suffix(',')
        .ok_or_else(|| line.error("a node number and a comma", node))?;
    let node = NodeId(line.parse(node, "a node number 0..=255")?);
    line.expect(tokens, "zone")?;
    let name = line.next(tokens, "a zone name")?;
    let name = match (zone_comma, name.strip_suffix(',')) {
        (true, Some(n)) => n,
        (false, None) => name,
        _ => return Err(line.error("a zone name", name)),
    };
    let zone = Zone::from_name(name).ok_or_else(|| {
        line.error(
            "a zone (DMA, DMA32, Normal, HighMem, Movable, Device)",
            name,
        )
    })?;
    Ok((node, zone))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn larger_blocks_hold_several_huge_pages() {
        let free = FreeCounts::new(vec![3, 0, 0, 0, 0, 0, 0, 0, 0, 2, 5], false);
        assert_eq!(free.huge_blocks(Order(9)), 2 + 5 * 2);
        assert_eq!(free.huge_blocks(Order(10)), 5);
        assert_eq!(free.huge_blocks(Order(11)), 0);
        assert_eq!(free.base_pages(), 3 + 2 * 512 + 5 * 1024);
    }

    #[test]
    fn the_model_has_three_of_the_hosts_migrate_types() {
        assert_eq!(HostMigrateType::Movable.model(), Some(MigrateType::Movable));
        assert_eq!(HostMigrateType::HighAtomic.model(), None);
    }
}
