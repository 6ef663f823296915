//! APBS, Adaptive pBlock Selection (APSys'16 4.3, Algorithm 2): a kernel fallback first
//! finds the highest order with a free block on its fallback lists (Algorithm 1, line 2)
//! and reads the fragmentation [`Level`] from it: low (orders 9-10 on x86-64) takes
//! Linux's pick; medium (7-8) the best of 4 random pageblocks; high (4-6) AAF (Linux's
//! pick, always claimed, user pages evacuated); critical (below 4) RPBS (best of 64).
//! Thresholds are relative to the pageblock order (9, 7 and 4 are `pb`, `pb - 2`, `pb -
//! 5`), so a tiny test geometry keeps the paper's shape. Movable requests fall back as
//! Linux does. Must not mutate the allocator.
//!
//! The medium level's "four random pBlocks" are the pageblocks of four blocks drawn at
//! random from the fallback lists at the order the search found, the one that reserves the
//! most winning. That is our reading of Algorithm 2's `get_random_page(USER, order)`
//! beside the low level's `get_head_page(USER, order)`: the same list, a random entry
//! instead of its head. An earlier reading drew from every pageblock with any free block
//! of the requested order; those often reserve fewer pages than the list head Linux takes
//! (which has at least 2^7 free frames), so that APBS tainted more than the default.

use super::select::{self, PolicyRng};
use super::{Aaf, FallbackChoice, FallbackPolicy, FreeAreaView, LinuxDefault, Rpbs};
use crate::phys::pageblock::MigrateType;
use hugemm_hw::Order;

/// APBS's fragmentation levels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Whole pageblocks are still free: Linux's pick.
    Low,
    /// Best of four random pageblocks.
    Medium,
    /// AAF.
    High,
    /// RPBS.
    Critical,
}

impl Level {
    /// Random candidates at the medium level.
    pub const MEDIUM_SAMPLES: u32 = 4;

    /// The level when the largest fallback block has order `top`.
    pub fn of(top: Order, pageblock_order: Order) -> Level {
        let pb = pageblock_order.0;
        match top.0 {
            o if o >= pb => Level::Low,
            o if o + 2 >= pb => Level::Medium,
            o if o + 5 >= pb => Level::High,
            _ => Level::Critical,
        }
    }
}

/// Adaptive pBlock Selection, with counts of the levels it has seen.
#[derive(Clone, Debug)]
pub struct Apbs {
    rng: PolicyRng,
    seen: [u64; 4],
}

impl Apbs {
    /// APBS seeded with `seed` (for the medium and critical levels' draws).
    pub fn new(seed: u64) -> Apbs {
        Apbs {
            rng: select::rng(seed),
            seen: [0; 4],
        }
    }

    /// Kernel fallbacks decided at each level, in [`Level`] order.
    pub fn levels_seen(&self) -> [u64; 4] {
        self.seen
    }
}

impl FallbackPolicy for Apbs {
    fn name(&self) -> &'static str {
        "apbs"
    }

    fn choose(
        &mut self,
        view: &FreeAreaView<'_>,
        order: Order,
        migrate: MigrateType,
    ) -> Option<FallbackChoice> {
        if migrate == MigrateType::Movable {
            return LinuxDefault.choose(view, order, migrate);
        }
        let top = select::top_fallback_order(view, migrate, order)?;
        let level = Level::of(top, view.pageblock_order());
        self.seen[level as usize] += 1;
        let rng = &mut self.rng;
        match level {
            Level::Low => LinuxDefault.choose(view, order, migrate),
            Level::Medium => {
                let sampled = select::sample_listed(view, rng, migrate, top, Level::MEDIUM_SAMPLES);
                select::best_or_linux(view, sampled, order, migrate)
            }
            Level::High => Aaf.choose(view, order, migrate),
            Level::Critical => select::best_of_random(view, rng, order, migrate, Rpbs::SAMPLES),
        }
    }
}
