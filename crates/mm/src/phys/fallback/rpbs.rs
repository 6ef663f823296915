//! RPBS, Regulated pBlock Selection (APSys'16 4.3, APBS's critical level): on a kernel
//! fallback, the eligible pageblock reserving the most free pages among up to 64 drawn at
//! random (uniformly, with replacement, by probing random pageblocks' counters: at most
//! 16 probes per wanted sample), so the cost is bounded whatever the memory size. When no
//! eligible pageblock is drawn it takes Linux's pick. Claims by Linux's rule; movable
//! requests fall back as Linux does. The generator is seeded at construction, so a run is
//! reproducible. Must not mutate the allocator.

use super::select::{self, PolicyRng};
use super::{FallbackChoice, FallbackPolicy, FreeAreaView, LinuxDefault};
use crate::phys::pageblock::MigrateType;
use hugemm_hw::Order;

/// Regulated pBlock Selection: best of `samples` random eligible pageblocks.
#[derive(Clone, Debug)]
pub struct Rpbs {
    rng: PolicyRng,
    samples: u32,
}

impl Rpbs {
    /// The paper's number of candidates.
    pub const SAMPLES: u32 = 64;

    /// RPBS drawing [`Rpbs::SAMPLES`] candidates, seeded with `seed`.
    pub fn new(seed: u64) -> Rpbs {
        Rpbs {
            rng: select::rng(seed),
            samples: Self::SAMPLES,
        }
    }
}

impl FallbackPolicy for Rpbs {
    fn name(&self) -> &'static str {
        "rpbs"
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
        select::best_of_random(view, &mut self.rng, order, migrate, self.samples)
    }
}
