//! Migrate types and pageblocks: blocks of `2^pageblock_order` frames (order 9 on x86-64,
//! Linux's `pageblock_order`) each tagged with the migrate type it serves
//! (`include/linux/pageblock-flags.h`, `get_pageblock_migratetype`).
//!
//! Owns the per-pageblock type array and its counters. It must not move free pages:
//! stealing is the buddy allocator's and the fallback policy's business.

use serde::{Deserialize, Serialize};

/// The mobility class of an allocation and of a pageblock (Linux `enum migratetype`, the
/// three page-allocator types; same numbering).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[repr(u8)]
pub enum MigrateType {
    /// Kernel allocations that can never move (`MIGRATE_UNMOVABLE`).
    Unmovable = 0,
    /// User pages that compaction can migrate (`MIGRATE_MOVABLE`).
    Movable = 1,
    /// Kernel caches that can be reclaimed (`MIGRATE_RECLAIMABLE`).
    Reclaimable = 2,
}

impl MigrateType {
    /// Number of migrate types.
    pub const COUNT: usize = 3;
    /// All migrate types, in Linux's numbering.
    pub const ALL: [MigrateType; 3] = [
        MigrateType::Unmovable,
        MigrateType::Movable,
        MigrateType::Reclaimable,
    ];

    /// Dense index 0..3 for per-type arrays.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Short label for reports.
    pub const fn label(self) -> &'static str {
        match self {
            MigrateType::Unmovable => "unmovable",
            MigrateType::Movable => "movable",
            MigrateType::Reclaimable => "reclaimable",
        }
    }

    /// Decode two bits of frame metadata (3 never occurs; read as unmovable).
    pub(crate) const fn from_bits(bits: u32) -> MigrateType {
        match bits & 3 {
            1 => MigrateType::Movable,
            2 => MigrateType::Reclaimable,
            _ => MigrateType::Unmovable,
        }
    }
}

/// The migrate type of every pageblock, with a count per type.
#[derive(Clone, Debug)]
pub(crate) struct Pageblocks {
    types: Vec<MigrateType>,
    counts: [u64; MigrateType::COUNT],
    order: u8,
}

impl Pageblocks {
    /// Pageblocks covering `frames` frames (the last may be partial), all Movable as at
    /// Linux boot (`memmap_init_range` marks every pageblock `MIGRATE_MOVABLE`).
    pub fn new(frames: u64, order: u8) -> Pageblocks {
        let n = frames.div_ceil(1 << order) as usize;
        let mut counts = [0; MigrateType::COUNT];
        counts[MigrateType::Movable.index()] = n as u64;
        Pageblocks {
            types: vec![MigrateType::Movable; n],
            counts,
            order,
        }
    }

    /// Number of pageblocks.
    pub fn len(&self) -> usize {
        self.types.len()
    }

    /// The pageblock order.
    pub fn order(&self) -> u8 {
        self.order
    }

    /// Frames in one (full) pageblock.
    pub fn frames_per_block(&self) -> u32 {
        1 << self.order
    }

    /// The migrate type of the pageblock holding `pfn` (Unmovable past the end).
    pub fn type_of(&self, pfn: u32) -> MigrateType {
        self.get(pfn).unwrap_or(MigrateType::Unmovable)
    }

    /// The migrate type of the pageblock holding `pfn`, if it exists.
    pub fn get(&self, pfn: u32) -> Option<MigrateType> {
        self.types.get((pfn >> self.order) as usize).copied()
    }

    /// Set the type of the pageblock holding `pfn` (`set_pageblock_migratetype`).
    pub fn set(&mut self, pfn: u32, mt: MigrateType) {
        if let Some(t) = self.types.get_mut((pfn >> self.order) as usize) {
            self.counts[t.index()] -= 1;
            self.counts[mt.index()] += 1;
            *t = mt;
        }
    }

    /// Set the type of every pageblock of the block `pfn` of `order` >= pageblock order
    /// (`change_pageblock_range`).
    pub fn set_range(&mut self, pfn: u32, order: u8, mt: MigrateType) {
        let blocks = 1u32 << order.saturating_sub(self.order);
        for b in 0..blocks {
            self.set(pfn + (b << self.order), mt);
        }
    }

    /// Number of pageblocks of type `mt`.
    pub fn count(&self, mt: MigrateType) -> u64 {
        self.counts[mt.index()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boot_pageblocks_are_all_movable() {
        let p = Pageblocks::new(1000, 9);
        assert_eq!(p.len(), 2);
        assert_eq!(p.count(MigrateType::Movable), 2);
        assert_eq!(p.type_of(999), MigrateType::Movable);
        assert_eq!(p.get(1024), None);
    }

    #[test]
    fn changing_a_range_keeps_counts() {
        let mut p = Pageblocks::new(4096, 9);
        p.set_range(1024, 10, MigrateType::Unmovable);
        assert_eq!(p.count(MigrateType::Unmovable), 2);
        assert_eq!(p.count(MigrateType::Movable), 6);
        assert_eq!(p.type_of(1536), MigrateType::Unmovable);
        p.set(1024, MigrateType::Reclaimable);
        assert_eq!(p.count(MigrateType::Reclaimable), 1);
        assert_eq!(p.count(MigrateType::Unmovable), 1);
    }

    #[test]
    fn migrate_types_decode_from_bits() {
        for mt in MigrateType::ALL {
            assert_eq!(MigrateType::from_bits(mt as u32), mt);
        }
    }
}
