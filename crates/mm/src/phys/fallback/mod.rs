//! Pageblock fallback ("stealing") as a policy: when a request's own free lists are empty,
//! which other migrate type's block is taken, and whether the whole pageblock is claimed.
//!
//! APSys'16 ("Protecting Huge Pages from the Kernel") shows this choice decides whether
//! unmovable kernel pages scatter over movable pageblocks; its policies implement
//! [`FallbackPolicy`] next to [`LinuxDefault`], one small module each: [`Opbs`] (4.2),
//! [`Aaf`] (4.1), [`Rpbs`] and [`Apbs`] (4.3, Algorithm 2), and the kernel layouts
//! [`KernelLayout`] KML/KMU (3.2); and [`ClaimFirst`], the rule of Linux 6.15 and later
//! (claim a whole pageblock if any block allows it, else steal the smallest block), which
//! the machines this project measures on run. [`build`] makes one by name.
//!
//! A policy only decides; the mechanisms that move free pages and retype pageblocks
//! (`steal.rs`), keep the per-pageblock counters (`pageblock.rs`, hooks in `buddy.rs`) and
//! place blocks by address (`addr_index`) are elsewhere. Policies read the allocator
//! through [`FreeAreaView`] only: this module must not mutate the allocator.

use crate::phys::pageblock::MigrateType;
use hugemm_hw::{Order, Pfn};
use std::fmt::Debug;

mod aaf;
pub(crate) mod addr_index;
mod apbs;
mod build;
mod claim_first;
#[cfg(any(test, feature = "conformance"))]
pub mod conformance;
mod layout;
mod opbs;
mod rpbs;
mod select;
mod view;

#[cfg(test)]
mod policy_tests;
#[cfg(test)]
mod proptests;

pub use aaf::Aaf;
pub use apbs::{Apbs, Level};
pub use build::{build, places_by_address, UnknownPolicy, NAMES};
pub use claim_first::ClaimFirst;
pub use layout::KernelLayout;
pub use opbs::Opbs;
pub use rpbs::Rpbs;
pub use view::FreeAreaView;

/// Which Linux the common parts of every fallback policy follow: the claim test of
/// `steal_suitable_fallback` ([`FallbackPolicy::claims_pageblock`]'s default) and
/// [`LinuxDefault`]'s search for movable requests. Checked against Linux 4.1.15's
/// `mm/page_alloc.c` (2026-11-26).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FallbackRules {
    /// Linux 4.1 (APSys'16's kernel): a steal claims the pageblock when at least half of
    /// it was free (`move_freepages_block`'s count, `pages >= 1 << (pageblock_order -
    /// 1)`), and every request takes the largest block found, a movable one too.
    #[serde(rename = "linux-4.1")]
    Linux41,
    /// Linux 4.13 to 6.14: the claim also counts the pageblock's allocated pages
    /// compatible with the request (`alike_pages`, 4.13), and a movable request that
    /// cannot steal the whole pageblock takes the smallest fitting block instead of
    /// breaking a large one (`find_smallest`, 4.12).
    #[default]
    #[serde(rename = "linux-4.13")]
    Linux413,
}

impl FallbackRules {
    /// Names in configuration files, in the order of [`FallbackRules::ALL`].
    pub const NAMES: [&'static str; 2] = ["linux-4.1", "linux-4.13"];
    /// Every rule set.
    pub const ALL: [FallbackRules; 2] = [FallbackRules::Linux41, FallbackRules::Linux413];

    /// The rules called `name` in configuration files.
    pub fn from_name(name: &str) -> Option<FallbackRules> {
        let i = Self::NAMES.iter().position(|n| *n == name)?;
        Some(Self::ALL[i])
    }

    /// Its name in configuration files.
    pub fn name(self) -> &'static str {
        match self {
            FallbackRules::Linux41 => Self::NAMES[0],
            FallbackRules::Linux413 => Self::NAMES[1],
        }
    }
}

/// Linux's `fallbacks[][]` table (`mm/page_alloc.c`): the types each request type falls
/// back to, in order, by request type (a request is never of the reserve's type; 4.1's
/// table ends each row with `MIGRATE_RESERVE`, which `find_suitable_fallback` never takes:
/// the reserve comes after every fallback, in `PhysMem::rmqueue`).
pub const FALLBACKS: [[MigrateType; 2]; 3] = [
    [MigrateType::Reclaimable, MigrateType::Movable], // Unmovable
    [MigrateType::Reclaimable, MigrateType::Unmovable], // Movable
    [MigrateType::Unmovable, MigrateType::Movable],   // Reclaimable
];

/// The block a fallback policy chose to steal from, and what to do with its pageblock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FallbackChoice {
    /// Head of a free block of order >= the request's, on another type's list.
    pub block: Pfn,
    /// Whether to try to take the whole pageblock (Linux's `can_steal`).
    pub whole_block: bool,
    /// Active anti-fragmentation (APSys'16 4.1): claim the pageblock whatever its census
    /// says and, if it holds frames of movable owners, queue its start for the kernel to
    /// evacuate ([`PhysMem::take_evacuations`](crate::PhysMem::take_evacuations)).
    /// Ignored unless `whole_block` is set and the pageblock lies wholly in memory.
    pub evacuate: bool,
    /// Pageblocks whose counters the policy examined to choose (for
    /// [`FallbackStats::pageblocks_scanned`](crate::stats::FallbackStats)).
    pub scanned: u32,
    /// Whether this fallback boosts the watermark (`boost_watermark`, Linux 5.0+, when
    /// the kernel enables it). `None`: when the block taken is smaller than a pageblock,
    /// as Linux 5.0-6.14's `steal_suitable_fallback` does whether or not it claims;
    /// Linux 6.15 boosts only when it tries to claim a pageblock from a smaller block
    /// ([`ClaimFirst`] says so here).
    pub boosts: Option<bool>,
}

impl FallbackChoice {
    /// Steal `block`, and its pageblock's free pages when `whole_block`; no evacuation.
    pub fn new(block: Pfn, whole_block: bool) -> FallbackChoice {
        FallbackChoice {
            block,
            whole_block,
            evacuate: false,
            scanned: 0,
            boosts: None,
        }
    }

    /// The same choice with AAF's claim-and-evacuate (which needs the whole pageblock).
    pub fn with_evacuation(self) -> FallbackChoice {
        FallbackChoice {
            whole_block: true,
            evacuate: true,
            ..self
        }
    }

    /// The same choice, recording `n` pageblocks examined.
    pub fn with_scanned(self, n: u32) -> FallbackChoice {
        FallbackChoice { scanned: n, ..self }
    }

    /// The same choice, saying whether it boosts the watermark.
    pub fn with_boost(self, boosts: bool) -> FallbackChoice {
        FallbackChoice {
            boosts: Some(boosts),
            ..self
        }
    }
}

/// Where the allocator takes a block on a request's own free lists
/// ([`FallbackPolicy::placement`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Placement {
    /// Linux: the head of the smallest non-empty list of order >= the request's
    /// (`__rmqueue_smallest`), split keeping the low half.
    #[default]
    ListHead,
    /// The lowest-addressed free block of order >= the request's, split keeping its
    /// lowest part (KML's kernel pages, KMU's user pages).
    Lowest,
    /// The highest-addressed free block of order >= the request's, split keeping its
    /// highest part (KMU's kernel pages, KML's user pages).
    Highest,
}

/// What a pageblock holds, counted by `move_freepages_block` while stealing from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageblockCensus {
    /// The pageblock's type before the steal.
    pub old: MigrateType,
    /// Frames in the pageblock.
    pub frames: u32,
    /// Free frames (now moved to the requester's lists).
    pub free: u32,
    /// Allocated frames of movable owners.
    pub movable: u32,
    /// Allocated frames compatible with the requester (`alike_pages`).
    pub alike: u32,
}

impl PageblockCensus {
    /// The census of a pageblock of type `old` with `frames` frames, `free` of them free
    /// and `movable` allocated to movable owners, as a request of type `start` counts it:
    /// `alike_pages` are its movable frames for a movable request, its other allocated
    /// frames for a kernel request stealing from a movable pageblock, and none otherwise.
    pub fn new(
        old: MigrateType,
        start: MigrateType,
        frames: u32,
        free: u32,
        movable: u32,
    ) -> PageblockCensus {
        let alike = match (start, old) {
            (MigrateType::Movable, _) => movable,
            (_, MigrateType::Movable) => frames - free - movable,
            _ => 0,
        };
        PageblockCensus {
            old,
            frames,
            free,
            movable,
            alike,
        }
    }
}

/// A pageblock fallback policy (cloned with the kernel it belongs to).
pub trait FallbackPolicy: Debug + Send + dyn_clone::DynClone {
    /// Name in reports and errors.
    fn name(&self) -> &'static str;

    /// `__rmqueue_fallback`'s search: the block to steal for a request of `order` and
    /// `migrate` whose own lists are empty, or `None` to fail the allocation. The block
    /// must be a free head of order >= `order`.
    fn choose(
        &mut self,
        free: &FreeAreaView<'_>,
        order: Order,
        migrate: MigrateType,
    ) -> Option<FallbackChoice>;

    /// `steal_suitable_fallback`'s test: whether the requester claims (retypes) the
    /// pageblock it stole free pages from. Default: Linux's, at least half the pageblock
    /// is free or compatible (under [`FallbackRules::Linux41`] the allocator counts no
    /// compatible pages: `alike` is 0).
    fn claims_pageblock(&self, census: &PageblockCensus, _migrate: MigrateType) -> bool {
        census.free + census.alike >= census.frames / 2
    }

    /// Where requests of `migrate` take blocks from their own lists. Read once when the
    /// policy is installed ([`PhysMem::set_fallback_policy`](crate::PhysMem)); anything but
    /// [`Placement::ListHead`] makes the allocator keep an address-ordered index of free
    /// blocks (O(log64 frames) per list operation). Default: Linux's list head.
    fn placement(&self, _migrate: MigrateType) -> Placement {
        Placement::ListHead
    }
}

/// The fallback of Linux up to 6.14, the paper's Algorithm 1 (`__rmqueue_fallback`,
/// `find_suitable_fallback`, `can_steal_fallback`; Linux 6.15 and later is
/// [`ClaimFirst`]): search orders from the highest down, take the first type of the
/// fallbacks table with a free block; steal the whole pageblock when the order found is
/// at least half a pageblock or the request is unmovable/reclaimable. Under
/// [`FallbackRules::Linux413`] a movable request that cannot steal whole blocks takes the
/// smallest fitting block instead; under [`FallbackRules::Linux41`] it breaks the largest
/// as every request does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinuxDefault;

impl LinuxDefault {
    /// `can_steal_fallback`.
    pub(crate) fn can_steal(order: u8, pageblock_order: u8, migrate: MigrateType) -> bool {
        order >= pageblock_order / 2 || migrate != MigrateType::Movable
    }

    /// `find_suitable_fallback` (with `only_stealable == false`).
    fn find_suitable(
        free: &FreeAreaView<'_>,
        order: u8,
        migrate: MigrateType,
    ) -> Option<(MigrateType, bool)> {
        if free.nr_free_order(Order(order)) == 0 {
            return None;
        }
        let fallback = FALLBACKS[migrate.index()]
            .into_iter()
            .find(|&mt| free.nr_free(Order(order), mt) > 0)?;
        Some((
            fallback,
            Self::can_steal(order, free.pageblock_order().0, migrate),
        ))
    }

    fn choice_at(
        free: &FreeAreaView<'_>,
        order: u8,
        mt: MigrateType,
        whole_block: bool,
    ) -> Option<FallbackChoice> {
        Some(FallbackChoice::new(
            free.first(Order(order), mt)?,
            whole_block,
        ))
    }
}

dyn_clone::clone_trait_object!(FallbackPolicy);

impl FallbackPolicy for LinuxDefault {
    fn name(&self) -> &'static str {
        "default"
    }

    fn choose(
        &mut self,
        free: &FreeAreaView<'_>,
        order: Order,
        migrate: MigrateType,
    ) -> Option<FallbackChoice> {
        let max = free.max_order().0;
        for cur in (order.0..=max).rev() {
            let Some((mt, can_steal)) = Self::find_suitable(free, cur, migrate) else {
                continue;
            };
            if !can_steal
                && migrate == MigrateType::Movable
                && cur > order.0
                && free.rules() == FallbackRules::Linux413
            {
                // find_smallest: do not break a large block for a movable request.
                return (order.0..=max).find_map(|o| {
                    let (mt, steal) = Self::find_suitable(free, o, migrate)?;
                    Self::choice_at(free, o, mt, steal)
                });
            }
            return Self::choice_at(free, cur, mt, can_steal);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phys::buddy::{AllocRequest, PhysMem};
    use crate::phys::frame::OwnerKind;
    use hugemm_hw::Geometry;

    fn mem(frames: u64) -> PhysMem {
        PhysMem::new(frames, Geometry::X86_64).unwrap()
    }

    #[test]
    fn linux_default_passes_the_conformance_suite() {
        conformance::run(|| Box::new(LinuxDefault));
    }

    #[test]
    fn the_default_steals_the_largest_block_first() {
        let m = mem(4096); // four order-10 blocks, all movable
        let choice = LinuxDefault
            .choose(&m.view(), Order(0), MigrateType::Unmovable)
            .unwrap();
        assert_eq!(choice, FallbackChoice::new(Pfn(0), true));
    }

    /// A movable request's fallback choice, under `rules`, in 16 frames (one order-4 block,
    /// smaller than a pageblock) after one unmovable page took frame 0: the unmovable
    /// lists hold orders 0..=3 (pfn 1, 2, 4, 8), nothing is movable, and order 3 is below
    /// pageblock_order / 2, so the request cannot steal the pageblock.
    fn movable_choice_among_unmovable_pieces(rules: FallbackRules) -> FallbackChoice {
        let mut m = mem(16);
        m.set_fallback_rules(rules);
        let req = AllocRequest::new(Order(0))
            .migrate(MigrateType::Unmovable)
            .owner(OwnerKind::KernelUnmovable);
        assert_eq!(m.alloc(&req).unwrap().pfn, Pfn(0));
        LinuxDefault
            .choose(&m.view(), Order(0), MigrateType::Movable)
            .unwrap()
    }

    #[test]
    fn a_movable_request_that_cannot_steal_takes_the_smallest_foreign_block() {
        let c = movable_choice_among_unmovable_pieces(FallbackRules::Linux413);
        assert_eq!(c, FallbackChoice::new(Pfn(1), false));
    }

    #[test]
    fn under_linux_4_1_a_movable_request_breaks_the_largest_foreign_block() {
        let c = movable_choice_among_unmovable_pieces(FallbackRules::Linux41);
        assert_eq!(c, FallbackChoice::new(Pfn(8), false));
    }

    #[test]
    fn claiming_needs_half_the_pageblock_free_or_alike() {
        let census = PageblockCensus {
            old: MigrateType::Movable,
            frames: 512,
            free: 200,
            movable: 300,
            alike: 12,
        };
        assert!(!LinuxDefault.claims_pageblock(&census, MigrateType::Unmovable));
        let census = PageblockCensus {
            free: 256,
            ..census
        };
        assert!(LinuxDefault.claims_pageblock(&census, MigrateType::Unmovable));
    }
}
