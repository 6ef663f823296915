//! OPBS, Optimal pBlock Selection (APSys'16 4.2): on a kernel (unmovable or reclaimable)
//! fallback, steal from the eligible pageblock whose free pages would reserve the most,
//! always taking its free pages and claiming it by Linux's rule (at least half free or
//! alike). Movable requests fall back as Linux does.
//!
//! Cost: O(orders) when Linux's pick already reserves a whole pageblock (nothing can do
//! better, so nothing is scanned); otherwise one pass over the per-pageblock counters,
//! O(pageblocks) (2,048 on a 4 GB machine), plus a walk of the chosen pageblock's blocks
//! (at most 512 frames). No frame or free-list scans. Ties go to Linux's pick, then to the
//! lowest address. Owns nothing but the decision; must not mutate the allocator.

use super::{select, FallbackChoice, FallbackPolicy, FreeAreaView, LinuxDefault};
use crate::phys::pageblock::MigrateType;
use hugemm_hw::Order;

/// Optimal pBlock Selection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Opbs;

impl FallbackPolicy for Opbs {
    fn name(&self) -> &'static str {
        "opbs"
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
        let (linux, reserve) = select::default_pick(view, order, migrate)?;
        if reserve >= 1 << view.pageblock_order().0 {
            return Some(linux);
        }
        match select::scan_all(view, migrate, order, reserve) {
            (Some(best), scanned) => select::choice_for(view, &best, migrate, scanned),
            (None, scanned) => Some(linux.with_scanned(scanned)),
        }
    }
}
