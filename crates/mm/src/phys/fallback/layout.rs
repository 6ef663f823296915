//! KML and KMU kernel memory layouts (APSys'16 3.2): kernel pages (unmovable and
//! reclaimable requests) towards the lower (KML) or upper (KMU) end of physical memory,
//! user pages (movable requests) towards the other end.
//!
//! The paper used "an array-based bank buddy allocator"; we keep Linux's buddy allocator
//! and pageblocks and steer both places a block is taken from. On a request's own lists,
//! [`FallbackPolicy::placement`] makes the allocator take the lowest- or highest-addressed
//! free block of order >= the request's (whatever its order: address first, like a bank
//! allocator whose banks are single blocks) and keep the part at that end when splitting.
//! On fallback, [`KernelLayout::choose`] takes the lowest- or highest-addressed block
//! among all of the fallback lists' blocks of order >= the request's (so kernel fallbacks
//! steal the pageblocks nearest their end, not the fallbacks table's first type), stealing
//! and claiming as Linux does (`can_steal_fallback`, at least half free or alike).
//!
//! Both read the address index the allocator keeps while this policy is installed:
//! O(orders x log64 frames) per allocation. Must not mutate the allocator.
//!
//! On a machine of zones (Linux 4.1's DMA, DMA32 and Normal) the layout holds within each
//! zone: a request is served from the zone its zonelist walk reached, at that zone's end.
//! The paper does not say how its bank allocator met the zones; kernel requests walk
//! from Normal down like user ones, so a per-zone layout keeps each zone's kernel pages
//! together at one end, which is what the paper's layouts are for. A single layout across
//! the zones would have to give up either the zone order or the address order.

use super::{FallbackChoice, FallbackPolicy, FreeAreaView, LinuxDefault, Placement, FALLBACKS};
use crate::phys::pageblock::MigrateType;
use hugemm_hw::{Order, Pfn};

/// A kernel memory layout: where kernel pages go; user pages go to the other end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelLayout {
    kernel: Placement,
}

impl KernelLayout {
    /// KML: kernel memory lower.
    pub const fn kml() -> KernelLayout {
        KernelLayout {
            kernel: Placement::Lowest,
        }
    }

    /// KMU: kernel memory upper.
    pub const fn kmu() -> KernelLayout {
        KernelLayout {
            kernel: Placement::Highest,
        }
    }

    /// The extreme block of order >= `order` on `migrate`'s fallback lists: (head, order).
    fn extreme(
        view: &FreeAreaView<'_>,
        order: Order,
        migrate: MigrateType,
        at: Placement,
    ) -> Option<(Pfn, Order)> {
        let blocks = FALLBACKS[migrate.index()].into_iter().flat_map(|mt| {
            (order.0..=view.max_order().0).filter_map(move |o| {
                let pfn = match at {
                    Placement::Highest => view.highest(Order(o), mt),
                    _ => view.lowest(Order(o), mt),
                };
                pfn.map(|p| (p, Order(o)))
            })
        });
        match at {
            Placement::Highest => blocks.max_by_key(|&(p, _)| p),
            _ => blocks.min_by_key(|&(p, _)| p),
        }
    }
}

impl FallbackPolicy for KernelLayout {
    fn name(&self) -> &'static str {
        match self.kernel {
            Placement::Highest => "kmu",
            _ => "kml",
        }
    }

    /// The extreme fallback block at this request's end; Linux's choice if the allocator
    /// keeps no address index (only when the policy is used outside `PhysMem`).
    fn choose(
        &mut self,
        view: &FreeAreaView<'_>,
        order: Order,
        migrate: MigrateType,
    ) -> Option<FallbackChoice> {
        if !view.has_address_index() {
            return LinuxDefault.choose(view, order, migrate);
        }
        let (block, found) = Self::extreme(view, order, migrate, self.placement(migrate))?;
        let whole = LinuxDefault::can_steal(found.0, view.pageblock_order().0, migrate);
        Some(FallbackChoice::new(block, whole))
    }

    fn placement(&self, migrate: MigrateType) -> Placement {
        match (migrate, self.kernel) {
            (MigrateType::Movable, Placement::Lowest) => Placement::Highest,
            (MigrateType::Movable, _) => Placement::Lowest,
            _ => self.kernel,
        }
    }
}
