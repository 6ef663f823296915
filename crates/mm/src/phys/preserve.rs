//! Order-H preservation: H-Policy's rule (iii) (SysMon-H / H-Policy paper, section 4),
//! a knob of the buddy allocator, off by default ([`PhysMem::set_preserve_huge_blocks`]).
//!
//! The paper: "H-Policy does not split the blocks in the order-9 slab for 4KB page
//! allocations unless pages in other order slabs are all allocated (i.e., delaying
//! splitting the blocks that can be directly used for allocating huge pages)", so that
//! "OS can allocate a huge page in constant time without other unnecessary operations,
//! e.g., breaking the large blocks or data compactions". H, the huge order, is the
//! geometry's (9 on x86-64; the pageblock order here), not a literal 9.
//!
//! # The rule
//!
//! A request of order `r < H` on one node takes the first block found by:
//! 1. its own type's lists, orders `r..H`, smallest first (Linux's `__rmqueue_smallest`
//!    below H);
//! 2. its own type's lists, orders `H+1..=max_order`, smallest first: splitting an
//!    order-10 block hands its order-9 buddy back to the order-9 list;
//! 3. movable requests only: one block of order `r..H` stolen from another type's lists
//!    ([`PhysMem::steal_alone`]: smallest order first, Linux's fallback order of types,
//!    no pageblock claimed), then step 1;
//! 4. its own type's lists, order H;
//! 5. the installed fallback policy, as without the knob (any order), then steps 1-4 on
//!    what it moved.
//!
//! Requests of order H or above are served as without the knob.
//!
//! # Why so
//!
//! - The paper speaks of Linux 3.16's "11 free page lists ... with orders ranging from 0
//!   to 10"; Linux keeps those lists per migrate type. "Pages in other order slabs are
//!   all allocated" is read as: no free block of another order could serve the request.
//! - Linux already takes the smallest order first within one type's lists, so within a
//!   type the rule changes one thing: blocks above H go before blocks of H (step 2).
//!   That costs the same huge-page capacity as splitting an order-H block (an order-10
//!   block is two order-9 blocks; after the split one is left) but keeps the order-9 list
//!   stocked, which is what the paper wants for constant-time huge allocations. Order-10
//!   requests (rare: no huge page is order 10) lose a block sooner.
//! - Across types (step 3), the paper's 4 KB allocations are user pages, which are
//!   movable: they take the small free blocks of kernel pageblocks before breaking a
//!   movable order-9 block. A movable page in a kernel pageblock can be migrated out
//!   again. The pageblock is not claimed (its type and its other free blocks stay): that
//!   is the fallback policy's decision, not this rule's.
//! - Unmovable and reclaimable requests skip step 3: a kernel page in a movable pageblock
//!   pins it against compaction for its lifetime (APSys'16 2.3, "tainted"), the opposite
//!   of preserving huge blocks. They break an order-H block of their own type, which
//!   keeps kernel pages together, as Linux does.
//! - The fallback policy comes last (step 5): Linux's `__rmqueue_fallback` takes the
//!   largest block of another type and claims its pageblock, which breaks a huge block
//!   anyway and retypes a pageblock.
//!
//! # With zeroed-first and placement policies
//!
//! - Zeroed-first (`rmqueue_zeroed`, HawkEye's zero list) looks for zeroed blocks in
//!   steps 1 and 2 only, smallest first. It never splits a zeroed order-H block for a
//!   smaller request: that is the most valuable free block (a huge fault takes it without
//!   clearing 2 MB). A request that finds no zeroed block there goes on as any request
//!   (steps 1-5, heads first: at order H the dirty blocks, which sit at the list heads,
//!   go before the zeroed ones).
//! - A placement policy (KML/KMU, `rmqueue_placed`) keeps choosing the block at its end
//!   of memory, but within each step: the lowest (or highest) block over the orders of
//!   step 1, then of step 2, and so on. Step 3 takes the block at that end of the
//!   smallest order found.
//!
//! # Elsewhere
//!
//! Per-CPU list refills take each block through the steps. With several nodes the steps
//! run on each node in turn, as Linux's zonelist exhausts the local node first: a node's
//! order-H block is split before another node is tried. Compaction's free scanner picks
//! its target frames itself (`alloc_frame_in`) and superpage reservations take whole
//! order-H blocks: neither is changed. No extra cost is charged: an allocation costs
//! `MmCosts::alloc` whatever list served it.
//!
//! # Speed
//!
//! Off, the allocator's hot path is unchanged: `__rmqueue_smallest` tests one byte per
//! migrate type that says whether anything (a placement policy, or this knob) leaves the
//! list-head search, as it tested the placement before. On, every request of that type
//! takes the out-of-line path, which tests `order < H` and comes here.
//!
//! This module owns the order of the search; it must not choose what to steal beyond
//! step 3's block (the fallback policy does) or free anything.

use crate::phys::buddy::PhysMem;
use crate::phys::fallback::Placement;
use crate::phys::pageblock::MigrateType;
use std::ops::RangeInclusive;

impl PhysMem {
    /// Turn order-H preservation on or off (see `preserve.rs`); off is Linux's
    /// `__rmqueue_smallest`.
    pub fn set_preserve_huge_blocks(&mut self, on: bool) {
        self.preserve_below = if on { self.pageblock_order().0 } else { 0 };
        self.update_special();
    }

    /// Whether order-H preservation is on.
    pub fn preserves_huge_blocks(&self) -> bool {
        self.preserve_below > 0
    }

    /// Steps 1-4 for a request of `order` below the huge order on `mt`'s lists, whose
    /// placement is `at`.
    #[inline(never)]
    pub(crate) fn rmqueue_preserving(
        &mut self,
        order: u8,
        mt: MigrateType,
        at: Placement,
    ) -> Option<u32> {
        let h = self.preserve_below;
        let below = order..=h - 1;
        let above = h + 1..=self.max_order().0;
        if let Some(pfn) = self.take_in(order, below.clone(), mt, at) {
            return Some(pfn);
        }
        if let Some(pfn) = self.take_in(order, above, mt, at) {
            return Some(pfn);
        }
        if mt == MigrateType::Movable && self.steal_alone(below.clone(), mt, at) {
            if let Some(pfn) = self.take_in(order, below, mt, at) {
                return Some(pfn);
            }
        }
        self.take_in(order, h..=h, mt, at)
    }

    /// A block of `order` split from the first block on `mt`'s lists of an order in
    /// `orders`: the smallest order's head, or the block at `at`'s end of memory.
    fn take_in(
        &mut self,
        order: u8,
        orders: RangeInclusive<u8>,
        mt: MigrateType,
        at: Placement,
    ) -> Option<u32> {
        if at != Placement::ListHead {
            let (head, cur) = self.index.as_ref()?.extreme_in(orders, mt, at)?;
            self.list_remove(head);
            return Some(self.expand_toward(head, order, cur, mt, at == Placement::Highest));
        }
        for cur in orders {
            if let Some(pfn) = self.areas[self.node].pop(&mut self.frames, cur, mt) {
                self.note_removed(pfn, cur, mt);
                self.expand(pfn, order, cur, mt);
                return Some(pfn);
            }
        }
        None
    }
}

#[cfg(test)]
#[path = "preserve_tests.rs"]
mod tests;
