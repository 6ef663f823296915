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
//! 3. its own type's lists, order H;
//! 4. the installed fallback policy, as without the knob, then steps 1-3 on what it
//!    moved.
//!
//! Requests of order H or above are served as without the knob.
//!
//! # Why so
//!
//! - The paper speaks of Linux 3.16's "11 free page lists ... with orders ranging from 0
//!   to 10"; Linux keeps those lists per migrate type, and the rule is applied to the
//!   lists a request is served from: "pages in other order slabs are all allocated" is
//!   read as: no block of another order on those lists could serve the request.
//! - Linux already takes the smallest order first within one type's lists, so the rule
//!   changes one thing: blocks above H go before blocks of H (step 2). That costs the
//!   same huge-page capacity as splitting an order-H block (an order-10 block is two
//!   order-9 blocks; after the split one is left) but keeps the order-9 list stocked,
//!   which is what the paper wants for constant-time huge allocations. Order-10 requests
//!   (rare: no huge page is order 10) lose a block sooner. So in this model the knob
//!   moves which large block is split, not how many huge blocks survive; in the kernel
//!   build run below it left the pageblock types and the final FMFI as Linux's. The
//!   paper's "fewer memory fragments than original Linux" does not follow from this
//!   rule alone.
//! - Another type's small free blocks are not taken before an order-H block (the fallback
//!   stays last, as in Linux's `__rmqueue`). A variant that did so for movable requests
//!   (a steal of the smallest block below H, without claiming its pageblock, before
//!   step 3) was built and measured: on a 1 GiB machine through two 200-unit kernel
//!   builds (`experiments/apsys16/highalloc.toml` scaled down), user pages ate the free
//!   holes of kernel pageblocks, kernel allocations then claimed movable pageblocks in
//!   their place, and the machine ended with 110 unmovable and 34 reclaimable pageblocks
//!   where Linux (and this rule) has 2 and 1: kernel memory scattered over the pageblocks
//!   huge pages need, the opposite of the paper's aim (APSys'16 2.3).
//! - The fallback policy's own choice comes last: Linux's `__rmqueue_fallback` takes the
//!   largest block of another type and claims its pageblock, which a rule about the
//!   order-9 list cannot improve without becoming a fallback policy itself.
//!
//! # With zeroed-first and placement policies
//!
//! - Zeroed-first (`rmqueue_zeroed`, HawkEye's zero list) looks for zeroed blocks in
//!   steps 1 and 2 only, smallest first. It never splits a zeroed order-H block for a
//!   smaller request: that is the most valuable free block (a huge fault takes it without
//!   clearing 2 MB). A request that finds no zeroed block there goes on as any request
//!   (steps 1-4, heads first: at order H the dirty blocks, which sit at the list heads,
//!   go before the zeroed ones).
//! - A placement policy (KML/KMU, `rmqueue_placed`) keeps choosing the block at its end
//!   of memory, but within each step: the lowest (or highest) block over the orders of
//!   step 1, then of step 2, then of step 3.
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
//! This module owns the order of the search; it must not steal from other types' lists
//! (the fallback policy does) or free anything.

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

    /// Steps 1-3 for a request of `order` below the huge order on `mt`'s lists, whose
    /// placement is `at`.
    #[inline(never)]
    pub(crate) fn rmqueue_preserving(
        &mut self,
        order: u8,
        mt: MigrateType,
        at: Placement,
    ) -> Option<u32> {
        let h = self.preserve_below;
        let max = self.max_order().0;
        [order..=h - 1, h + 1..=max, h..=h]
            .into_iter()
            .find_map(|orders| self.take_in(order, orders, mt, at))
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
            let (head, cur) = self.index.as_ref()?[self.zone].extreme_in(orders, mt, at)?;
            self.list_remove(head);
            return Some(self.expand_toward(head, order, cur, mt, at == Placement::Highest));
        }
        for cur in orders {
            if let Some(pfn) = self.areas[self.zone].pop(&mut self.frames, cur, mt) {
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
