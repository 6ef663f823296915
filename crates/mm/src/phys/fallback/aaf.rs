//! AAF, Active Anti-Fragmentation (APSys'16 4.1, after Joonsoo Kim's 2015 patch): every
//! kernel (unmovable or reclaimable) fallback reserves the whole pageblock: it always
//! claims it and asks for its user pages to be migrated out
//! ([`FallbackChoice::evacuate`]; the kernel drains
//! [`PhysMem::take_evacuations`](crate::PhysMem::take_evacuations)).
//!
//! Which pageblock: Linux's pick (the head of the highest-order non-empty fallback list).
//! The paper gives AAF no selection rule of its own (Algorithm 2's `get_page_AAF`), and
//! Kim's patch evacuates the pageblock the normal steal hit. The paper (5.2) observed its
//! AAF picks "aligned towards KML": with boot memory queued lowest address first, the list
//! heads are low addresses until churn reorders them, and this pick reproduces that
//! without a rule of its own. Movable requests fall back as Linux does. Must not mutate
//! the allocator.

use super::{FallbackChoice, FallbackPolicy, FreeAreaView, LinuxDefault};
use crate::phys::pageblock::MigrateType;
use hugemm_hw::Order;

/// Active Anti-Fragmentation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Aaf;

impl FallbackPolicy for Aaf {
    fn name(&self) -> &'static str {
        "aaf"
    }

    fn choose(
        &mut self,
        view: &FreeAreaView<'_>,
        order: Order,
        migrate: MigrateType,
    ) -> Option<FallbackChoice> {
        let linux = LinuxDefault.choose(view, order, migrate)?;
        Some(match migrate {
            MigrateType::Movable => linux,
            _ => linux.with_evacuation(),
        })
    }
}
