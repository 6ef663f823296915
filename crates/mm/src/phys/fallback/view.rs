//! [`FreeAreaView`]: what a fallback policy may read of the allocator, in O(1) per query:
//! free-list heads and counts, pageblock types, the per-pageblock counters and, when a
//! placement policy is installed, the address-ordered index of the zone's free blocks.
//!
//! Owns nothing; it must not offer any way to change the allocator.

use super::addr_index::AddrIndex;
use super::FallbackRules;
use crate::phys::frame::{FrameState, FrameTable};
use crate::phys::freelist::FreeArea;
use crate::phys::pageblock::{MigrateType, PageblockCounters, Pageblocks};
use hugemm_hw::{Order, Pfn};

/// A read-only view of the free area and pageblocks for fallback policies.
///
/// Pageblocks are named by any frame inside them (usually their first, as
/// [`FreeAreaView::pageblock_start`] gives).
#[derive(Clone, Copy, Debug)]
pub struct FreeAreaView<'a> {
    frames: &'a FrameTable,
    free: &'a FreeArea,
    blocks: &'a Pageblocks,
    counters: &'a PageblockCounters,
    index: Option<&'a AddrIndex>,
    max_order: u8,
    rules: FallbackRules,
    /// The pageblocks of the zone being allocated from: the first's number and how many.
    zone_blocks: (u64, u64),
}

impl<'a> FreeAreaView<'a> {
    // Each part of the allocator is borrowed on its own, so that the policy (another
    // part) can be borrowed mutably beside the view.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        frames: &'a FrameTable,
        free: &'a FreeArea,
        blocks: &'a Pageblocks,
        counters: &'a PageblockCounters,
        index: Option<&'a AddrIndex>,
        max_order: u8,
        rules: FallbackRules,
        zone: (Pfn, Pfn),
    ) -> Self {
        let order = blocks.order();
        let first = zone.0 .0 >> order;
        let end = (zone.1 .0.div_ceil(1 << order)).min(counters.len() as u64);
        FreeAreaView {
            frames,
            free,
            blocks,
            counters,
            index,
            max_order,
            rules,
            zone_blocks: (first, end.saturating_sub(first)),
        }
    }

    /// The Linux whose common fallback rules the allocator follows.
    pub fn rules(&self) -> FallbackRules {
        self.rules
    }

    /// The highest buddy order.
    pub fn max_order(&self) -> Order {
        Order(self.max_order)
    }

    /// The pageblock order.
    pub fn pageblock_order(&self) -> Order {
        Order(self.blocks.order())
    }

    /// Free blocks of `order` on `mt`'s list.
    pub fn nr_free(&self, order: Order, mt: MigrateType) -> u64 {
        self.free.count(order.0, mt)
    }

    /// Free blocks of `order`, all types (`free_area.nr_free`).
    pub fn nr_free_order(&self, order: Order) -> u64 {
        self.free.count_order(order.0)
    }

    /// The first block of `mt`'s list at `order` (`get_page_from_free_area`).
    pub fn first(&self, order: Order, mt: MigrateType) -> Option<Pfn> {
        self.free.first(order.0, mt).map(|p| Pfn(p as u64))
    }

    /// All blocks of `mt`'s list at `order`, in list order.
    pub fn blocks(&self, order: Order, mt: MigrateType) -> impl Iterator<Item = Pfn> + 'a {
        self.free
            .iter(self.frames, order.0, mt)
            .map(|p| Pfn(p as u64))
    }

    /// The type of the pageblock holding `pfn`.
    pub fn pageblock_type(&self, pfn: Pfn) -> Option<MigrateType> {
        u32::try_from(pfn.0).ok().and_then(|p| self.blocks.get(p))
    }

    /// The state of frame `pfn`.
    pub fn frame_state(&self, pfn: Pfn) -> Option<FrameState> {
        self.frames.get(pfn.0).map(|f| f.state())
    }

    /// Number of pageblocks of the zone being allocated from (the last may be partial).
    /// A policy that scans pageblocks scans these: a block of another zone (or node) is
    /// on another zone's lists, where this allocation cannot take it.
    pub fn pageblock_count(&self) -> u64 {
        self.zone_blocks.1
    }

    /// The first frame of the zone's pageblock number `i` (`0..pageblock_count()`).
    pub fn pageblock_start(&self, i: u64) -> Pfn {
        Pfn((self.zone_blocks.0 + i) << self.blocks.order())
    }

    /// Frames in the pageblock holding `pfn` (0 beyond memory).
    pub fn pageblock_frames(&self, pfn: Pfn) -> u32 {
        self.counters.frames_in(self.counters.index_of(pfn.0))
    }

    /// Free frames in the pageblock holding `pfn`, on any list.
    pub fn pageblock_free(&self, pfn: Pfn) -> u32 {
        self.counters.free(self.counters.index_of(pfn.0))
    }

    /// Allocated frames of non-movable owners in the pageblock holding `pfn` (a pageblock
    /// with any is "tainted", APSys'16 2.3).
    pub fn pageblock_pinned(&self, pfn: Pfn) -> u32 {
        self.counters.pinned(self.counters.index_of(pfn.0))
    }

    /// The highest order of a free block on `mt`'s list whose head is in the pageblock
    /// holding `pfn`.
    pub fn pageblock_top_order(&self, pfn: Pfn, mt: MigrateType) -> Option<Order> {
        let mask = self
            .counters
            .orders_listed(self.counters.index_of(pfn.0), mt);
        (mask != 0).then(|| Order(31 - mask.leading_zeros() as u8))
    }

    /// Whether the allocator keeps the address-ordered index (a placement policy is
    /// installed); [`FreeAreaView::lowest`] and [`FreeAreaView::highest`] need it.
    pub fn has_address_index(&self) -> bool {
        self.index.is_some()
    }

    /// The lowest-addressed block on `mt`'s list at `order` (`None` when the list is empty
    /// or the index is not kept).
    pub fn lowest(&self, order: Order, mt: MigrateType) -> Option<Pfn> {
        self.index?.lowest(order.0, mt).map(|p| Pfn(p as u64))
    }

    /// The highest-addressed block on `mt`'s list at `order` (`None` when the list is
    /// empty or the index is not kept).
    pub fn highest(&self, order: Order, mt: MigrateType) -> Option<Pfn> {
        self.index?.highest(order.0, mt).map(|p| Pfn(p as u64))
    }
}
