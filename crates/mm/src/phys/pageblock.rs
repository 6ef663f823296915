//! Pageblocks: blocks of `2^pageblock_order` frames (order 9 on x86-64, Linux's
//! `pageblock_order`) each tagged with the migrate type it serves
//! (`include/linux/pageblock-flags.h`, `get_pageblock_migratetype`). [`MigrateType`]
//! itself is shared vocabulary (`api.rs`: the counters and every group name it), re-exported
//! here at its public path `hugemm_mm::pageblock::MigrateType`.
//!
//! Owns the per-pageblock type array and its counters, and `PageblockCounters`: free
//! frames, frames of non-movable owners and free blocks per list per order of every
//! pageblock, kept by the buddy allocator's hooks in O(1) per list operation (O(blocks
//! spanned) for blocks above pageblock order) so fallback policies choose without
//! scanning frames. It must not move free pages: stealing is the buddy allocator's and the
//! fallback policy's business.

pub use crate::api::MigrateType;
use crate::error::{MmError, Result};
use crate::phys::frame::{FrameState, FrameTable, OwnerKind};

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

/// Per-pageblock counters kept by the buddy allocator (`buddy.rs` calls the `on_*` hooks
/// on every free-list push and remove, allocation and free).
///
/// A free block is counted in `free` of every pageblock it overlaps, and in `listed` (its
/// list and order) of the pageblock holding its head only, so a block above pageblock
/// order is found once. `pinned` counts allocated frames whose owner pins its pageblock
/// ([`OwnerKind::is_pinned`]): a pageblock with `pinned > 0` is "tainted" (APSys'16 2.3).
#[derive(Clone, Debug)]
pub(crate) struct PageblockCounters {
    pb_order: u8,
    orders: usize,
    frames: u64,
    free: Vec<u32>,
    pinned: Vec<u32>,
    /// Free blocks by `[pageblock][list][order]`.
    listed: Vec<u32>,
    /// Bit `o` of `[pageblock][list]` is set iff `listed` at order `o` is non-zero.
    masks: Vec<u32>,
}

const MTS: usize = MigrateType::COUNT;

impl PageblockCounters {
    /// Counters of an empty machine (every frame allocated to nobody; boot frees fill them).
    pub fn new(frames: u64, pb_order: u8, max_order: u8) -> PageblockCounters {
        let n = frames.div_ceil(1 << pb_order) as usize;
        let orders = max_order as usize + 1;
        PageblockCounters {
            pb_order,
            orders,
            frames,
            free: vec![0; n],
            pinned: vec![0; n],
            listed: vec![0; n * MTS * orders],
            masks: vec![0; n * MTS],
        }
    }

    /// Number of pageblocks.
    pub fn len(&self) -> usize {
        self.free.len()
    }

    /// The pageblock index of frame `pfn`.
    pub fn index_of(&self, pfn: u64) -> usize {
        (pfn >> self.pb_order) as usize
    }

    /// Frames in pageblock `pb` (the last may be partial).
    pub fn frames_in(&self, pb: usize) -> u32 {
        let start = (pb as u64) << self.pb_order;
        self.frames.saturating_sub(start).min(1 << self.pb_order) as u32
    }

    /// Free frames in pageblock `pb`.
    pub fn free(&self, pb: usize) -> u32 {
        self.free.get(pb).copied().unwrap_or(0)
    }

    /// Allocated frames of non-movable owners in pageblock `pb`.
    pub fn pinned(&self, pb: usize) -> u32 {
        self.pinned.get(pb).copied().unwrap_or(0)
    }

    /// Free frames in pageblock `pb` in blocks on `mt`'s lists whose head is in `pb` (a
    /// block above pageblock order counts the frames it has in `pb`).
    pub fn free_on(&self, pb: usize, mt: MigrateType) -> u32 {
        let at = (pb * MTS + mt.index()) * self.orders;
        let Some(counts) = self.listed.get(at..at + self.orders) else {
            return 0;
        };
        let whole = self.frames_in(pb);
        counts
            .iter()
            .enumerate()
            .map(|(o, &n)| n * (1u32 << o.min(31)).min(whole))
            .sum()
    }

    /// Bit `o` set iff a free block of order `o` on `mt`'s list has its head in `pb`.
    pub fn orders_listed(&self, pb: usize, mt: MigrateType) -> u32 {
        self.masks.get(pb * MTS + mt.index()).copied().unwrap_or(0)
    }

    /// (pageblock, frames of the block inside it) for every pageblock the block overlaps.
    fn spans(&self, pfn: u32, order: u8) -> impl Iterator<Item = (usize, u32)> {
        let first = (pfn >> self.pb_order) as usize;
        let (n, each) = match order.checked_sub(self.pb_order) {
            Some(extra) => (1usize << extra, 1u32 << self.pb_order),
            None => (1, 1u32 << order),
        };
        (first..first + n).map(move |pb| (pb, each))
    }

    /// A free block was put on `mt`'s list.
    pub fn on_push(&mut self, pfn: u32, order: u8, mt: MigrateType) {
        for (pb, n) in self.spans(pfn, order) {
            self.free[pb] += n;
        }
        let pb = (pfn >> self.pb_order) as usize;
        let at = (pb * MTS + mt.index()) * self.orders + order as usize;
        self.listed[at] += 1;
        self.masks[pb * MTS + mt.index()] |= 1 << order;
    }

    /// A free block was taken off `mt`'s list.
    pub fn on_remove(&mut self, pfn: u32, order: u8, mt: MigrateType) {
        for (pb, n) in self.spans(pfn, order) {
            self.free[pb] -= n;
        }
        let pb = (pfn >> self.pb_order) as usize;
        let at = (pb * MTS + mt.index()) * self.orders + order as usize;
        self.listed[at] -= 1;
        if self.listed[at] == 0 {
            self.masks[pb * MTS + mt.index()] &= !(1 << order);
        }
    }

    /// A block was allocated to `owner`.
    pub fn on_alloc(&mut self, pfn: u32, order: u8, owner: OwnerKind) {
        if owner.is_pinned() {
            for (pb, n) in self.spans(pfn, order) {
                self.pinned[pb] += n;
            }
        }
    }

    /// A block of `owner` was freed.
    pub fn on_free(&mut self, pfn: u32, order: u8, owner: OwnerKind) {
        if owner.is_pinned() {
            for (pb, n) in self.spans(pfn, order) {
                self.pinned[pb] -= n;
            }
        }
    }

    /// Compare every counter with a recount from the frame table (tests and debug runs;
    /// linear in memory).
    #[cfg_attr(not(test), allow(dead_code))] // for tests and debug checks
    pub fn check(&self, frames: &FrameTable) -> Result<()> {
        let mut fresh = PageblockCounters::new(self.frames, self.pb_order, self.orders as u8 - 1);
        let mut pfn = 0u64;
        while pfn < self.frames {
            let step = match frames.at(pfn as u32).state() {
                FrameState::FreeHead { order, migrate } => {
                    fresh.on_push(pfn as u32, order.0, migrate);
                    1u64 << order.0
                }
                FrameState::Allocated { order, owner } => {
                    fresh.on_alloc(pfn as u32, order.0, owner);
                    1u64 << order.0
                }
                _ => 1,
            };
            pfn += step;
        }
        let diff = |a: &[u32], b: &[u32]| a.iter().zip(b).position(|(x, y)| x != y);
        let bad = |what, at: Option<usize>| match at {
            Some(at) => Err(MmError::Invariant {
                what,
                at: at as u64,
            }),
            None => Ok(()),
        };
        bad(
            "pageblock free counter differs from a recount",
            diff(&self.free, &fresh.free),
        )?;
        bad(
            "pageblock pinned counter differs from a recount",
            diff(&self.pinned, &fresh.pinned),
        )?;
        bad(
            "pageblock list counter differs from a recount",
            diff(&self.listed, &fresh.listed),
        )?;
        bad(
            "pageblock order mask differs from a recount",
            diff(&self.masks, &fresh.masks),
        )
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

#[cfg(test)]
mod counter_tests {
    use super::*;

    #[test]
    fn big_blocks_count_in_every_pageblock_but_list_at_the_head() {
        let mut c = PageblockCounters::new(2048 + 100, 9, 10);
        c.on_push(1024, 10, MigrateType::Movable);
        assert_eq!((c.free(2), c.free(3), c.free(4)), (512, 512, 0));
        assert_eq!(c.orders_listed(2, MigrateType::Movable), 1 << 10);
        assert_eq!(c.orders_listed(3, MigrateType::Movable), 0);
        assert_eq!(c.frames_in(4), 100);
        c.on_remove(1024, 10, MigrateType::Movable);
        c.on_alloc(1024, 0, OwnerKind::KernelUnmovable);
        c.on_alloc(1025, 0, OwnerKind::Anon);
        assert_eq!(
            (
                c.free(2),
                c.pinned(2),
                c.orders_listed(2, MigrateType::Movable)
            ),
            (0, 1, 0)
        );
        c.on_free(1024, 0, OwnerKind::KernelUnmovable);
        assert_eq!(c.pinned(2), 0);
    }

    #[test]
    fn a_mask_bit_clears_with_the_last_block_of_its_order() {
        let mut c = PageblockCounters::new(512, 9, 10);
        c.on_push(0, 0, MigrateType::Unmovable);
        c.on_push(1, 0, MigrateType::Unmovable);
        c.on_remove(0, 0, MigrateType::Unmovable);
        assert_eq!(c.orders_listed(0, MigrateType::Unmovable), 1);
        c.on_remove(1, 0, MigrateType::Unmovable);
        assert_eq!(c.orders_listed(0, MigrateType::Unmovable), 0);
    }
}
