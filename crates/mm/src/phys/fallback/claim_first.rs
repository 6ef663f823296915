//! Linux 6.15's fallback, claim first (`__rmqueue_claim`, then `__rmqueue_steal`, in
//! `mm/page_alloc.c` since 6.15): the rule of the kernel this project's machines run
//! (6.18), beside the paper's rule in [`LinuxDefault`](super::LinuxDefault).
//!
//! - **Claim.** Orders from the highest down to the request's. At each order, the head
//!   block of the first fallback type with one is tried. The whole pageblock is claimed if
//!   the block is at least a pageblock, or if at least half the pageblock is free or
//!   compatible (`try_to_claim_block`). A block that cannot claim its pageblock is left
//!   alone, and the search goes on to the next lower order. A movable request does not try
//!   blocks below half a pageblock (`should_try_claim_block`); the claim search ends there.
//! - **Steal.** If nothing could be claimed, the smallest fitting block of the first
//!   fallback type is taken, without its pageblock's other free pages and without
//!   retyping the pageblock.
//!
//! The Linux 6.1-6.14 rule ([`LinuxDefault`](super::LinuxDefault), like the paper's
//! Algorithm 1) differs in three ways:
//! - it takes the largest block whether or not its pageblock can be claimed;
//! - on a failed claim it still moves the pageblock's free pages to the requester;
//! - a kernel request that cannot claim steals the largest block, where 6.15 steals the
//!   smallest.
//!
//! Choices where the model differs from Linux 6.15:
//! - **The split remainder of a stolen block.** Linux's steal leaves the split remainder
//!   of a stolen block on the lists of the type it came from (`page_del_and_expand`). Here
//!   the stolen block moves to the requester's lists before it is split, as every policy's
//!   steal does (`steal.rs`). The steal takes the smallest fitting block, so a remainder is
//!   rare.
//! - **Per-CPU frames.** With per-CPU lists on (`pcp.rs`), the frames they hold count
//!   as movable in this policy's pre-check (the view has no count of them) but not in
//!   the steal's census. A movable request can then expect a claim the census refuses;
//!   the block is taken with its pageblock's free pages, unclaimed, as before 6.15.
//! - **`ALLOC_NOFRAGMENT`.** Linux first tries a lower zone before any fallback below a
//!   pageblock. The model has one zone, so this is not modelled.
//!
//! Cost: O(orders), plus one counter read per order tried. Must not mutate the allocator.

use super::{
    FallbackChoice, FallbackPolicy, FreeAreaView, LinuxDefault, PageblockCensus, FALLBACKS,
};
use crate::phys::pageblock::MigrateType;
use hugemm_hw::{Order, Pfn};

/// Linux 6.15's claim-then-steal fallback (see the module doc).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClaimFirst;

impl ClaimFirst {
    /// The first fallback type with a free block at `order`, and that block.
    fn head(view: &FreeAreaView<'_>, order: u8, migrate: MigrateType) -> Option<Pfn> {
        FALLBACKS[migrate.index()]
            .into_iter()
            .find_map(|mt| view.first(Order(order), mt))
    }

    /// `try_to_claim_block`'s test: the block at `head` (of `order`) covers whole
    /// pageblocks, or its pageblock lies wholly in memory and the census the steal would
    /// take passes [`FallbackPolicy::claims_pageblock`] (at least half free or alike).
    fn claimable(
        &self,
        view: &FreeAreaView<'_>,
        head: Pfn,
        order: u8,
        migrate: MigrateType,
    ) -> bool {
        let pb = view.pageblock_order().0;
        if order >= pb {
            return true;
        }
        let frames = view.pageblock_frames(head);
        let Some(old) = view.pageblock_type(head).filter(|_| frames >= 1 << pb) else {
            return false;
        };
        let free = view.pageblock_free(head);
        let movable = frames - free - view.pageblock_pinned(head);
        let census = PageblockCensus::new(old, migrate, frames, free, movable);
        self.claims_pageblock(&census, migrate)
    }
}

impl FallbackPolicy for ClaimFirst {
    fn name(&self) -> &'static str {
        "claim-first"
    }

    fn choose(
        &mut self,
        view: &FreeAreaView<'_>,
        order: Order,
        migrate: MigrateType,
    ) -> Option<FallbackChoice> {
        let (max, pb) = (view.max_order().0, view.pageblock_order().0);
        // `try_to_claim_block` boosts the watermark on every try below a pageblock,
        // whether or not the claim then succeeds.
        let mut tried_below = false;
        for cur in (order.0..=max).rev() {
            // `should_try_claim_block` is 6.14's `can_steal_fallback` under a new name: a
            // kernel request may claim from any order, a movable one from half a pageblock.
            if !LinuxDefault::can_steal(cur, pb, migrate) {
                break;
            }
            let Some(head) = Self::head(view, cur, migrate) else {
                continue;
            };
            tried_below |= cur < pb;
            if self.claimable(view, head, cur, migrate) {
                return Some(FallbackChoice::new(head, true).with_boost(tried_below));
            }
        }
        (order.0..=max).find_map(|cur| {
            Self::head(view, cur, migrate)
                .map(|head| FallbackChoice::new(head, false).with_boost(tried_below))
        })
    }
}
