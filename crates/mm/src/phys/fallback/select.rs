//! Pageblock selection shared by OPBS, RPBS and APBS (APSys'16 4.2-4.3): which pageblocks
//! a fallback may steal from, how many free pages stealing one would reserve, and where
//! its largest eligible free block is.
//!
//! A pageblock is *eligible* for a request of order `r` and type `t` when a free block of
//! order >= `r` on one of `t`'s fallback lists ([`FALLBACKS`]) has its head in it; stealing
//! it reserves the pageblock's free frames (`move_freepages_block` moves them all), or the
//! whole block when that is larger than a pageblock. Everything here reads the
//! per-pageblock counters in O(1) per pageblock, except [`block_in`], which walks the
//! blocks of the one chosen pageblock, and [`sample_listed`], which walks a free list to
//! each block it draws. It must not mutate anything.

use super::{FallbackChoice, FallbackPolicy, FreeAreaView, LinuxDefault, FALLBACKS};
use crate::phys::frame::FrameState;
use crate::phys::pageblock::MigrateType;
use hugemm_hw::{Order, Pfn};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// The seedable generator of the randomised policies (deterministic for a seed).
pub(super) type PolicyRng = Xoshiro256PlusPlus;

/// A generator for `seed`.
pub(super) fn rng(seed: u64) -> PolicyRng {
    PolicyRng::seed_from_u64(seed)
}

/// Random probes allowed per wanted sample before [`sample`] gives up.
const PROBES_PER_SAMPLE: u32 = 16;

/// An eligible pageblock and what stealing it would reserve.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Candidate {
    /// Its first frame.
    pub start: Pfn,
    /// The highest order of an eligible free block in it.
    pub top: Order,
    /// Free frames a steal would reserve.
    pub reserve: u64,
}

/// The candidate for the pageblock starting at `start`, if it is eligible.
pub(super) fn candidate(
    view: &FreeAreaView<'_>,
    start: Pfn,
    migrate: MigrateType,
    min: Order,
) -> Option<Candidate> {
    let top = FALLBACKS[migrate.index()]
        .iter()
        .filter_map(|&mt| view.pageblock_top_order(start, mt))
        .max()?;
    (top >= min).then(|| Candidate {
        start,
        top,
        reserve: reserve(view, start, top),
    })
}

fn reserve(view: &FreeAreaView<'_>, start: Pfn, top: Order) -> u64 {
    if top >= view.pageblock_order() {
        1 << top.0
    } else {
        u64::from(view.pageblock_free(start))
    }
}

fn pageblock_of(view: &FreeAreaView<'_>, pfn: Pfn) -> Pfn {
    Pfn(pfn.0 >> view.pageblock_order().0 << view.pageblock_order().0)
}

/// Linux's choice and what it would reserve.
pub(super) fn default_pick(
    view: &FreeAreaView<'_>,
    order: Order,
    migrate: MigrateType,
) -> Option<(FallbackChoice, u64)> {
    let choice = LinuxDefault.choose(view, order, migrate)?;
    let top = match view.frame_state(choice.block)? {
        FrameState::FreeHead { order, .. } => order,
        _ => return None,
    };
    Some((choice, reserve(view, pageblock_of(view, choice.block), top)))
}

/// The highest order >= `min` with a free block on `migrate`'s fallback lists (the order
/// Algorithm 1's search, line 2, stops at).
pub(super) fn top_fallback_order(
    view: &FreeAreaView<'_>,
    migrate: MigrateType,
    min: Order,
) -> Option<Order> {
    (min.0..=view.max_order().0).rev().map(Order).find(|&o| {
        FALLBACKS[migrate.index()]
            .iter()
            .any(|&mt| view.nr_free(o, mt) > 0)
    })
}

/// The eligible pageblock reserving strictly more than `beat`, scanning all pageblocks
/// (the lowest-addressed on ties); returns it and the pageblocks examined. O(pageblocks).
pub(super) fn scan_all(
    view: &FreeAreaView<'_>,
    migrate: MigrateType,
    min: Order,
    beat: u64,
) -> (Option<Candidate>, u32) {
    let n = view.pageblock_count();
    let best = (0..n)
        .filter_map(|i| candidate(view, view.pageblock_start(i), migrate, min))
        .fold(None, |best: Option<Candidate>, c| {
            let bar = best.map_or(beat, |b| b.reserve);
            if c.reserve > bar {
                Some(c)
            } else {
                best
            }
        });
    (best, n.min(u32::MAX as u64) as u32)
}

/// The best of up to `k` eligible pageblocks drawn uniformly at random (with
/// replacement) by probing random pageblocks, at most `PROBES_PER_SAMPLE * k` probes;
/// returns it (the first drawn on ties) and the probes made. O(k).
pub(super) fn sample(
    view: &FreeAreaView<'_>,
    rng: &mut PolicyRng,
    migrate: MigrateType,
    min: Order,
    k: u32,
) -> (Option<Candidate>, u32) {
    let n = view.pageblock_count();
    let (mut best, mut found, mut probes) = (None::<Candidate>, 0u32, 0u32);
    while found < k && probes < k.saturating_mul(PROBES_PER_SAMPLE) && n > 0 {
        probes += 1;
        let start = view.pageblock_start(rng.gen_range(0..n));
        if let Some(c) = candidate(view, start, migrate, min) {
            found += 1;
            if best.is_none_or(|b| c.reserve > b.reserve) {
                best = Some(c);
            }
        }
    }
    (best, probes)
}

/// The best of `k` blocks drawn uniformly at random (with replacement) from `migrate`'s
/// fallback lists at order `top`, the highest order they hold (APBS's medium level,
/// `get_random_page`): returns the candidate of the pageblock holding the best (the first
/// drawn on ties) and the list entries walked. O(k x blocks listed at `top`).
pub(super) fn sample_listed(
    view: &FreeAreaView<'_>,
    rng: &mut PolicyRng,
    migrate: MigrateType,
    top: Order,
    k: u32,
) -> (Option<Candidate>, u32) {
    let lists = FALLBACKS[migrate.index()];
    let total: u64 = lists.iter().map(|&mt| view.nr_free(top, mt)).sum();
    if total == 0 {
        return (None, 0);
    }
    let (mut best, mut walked) = (None::<Candidate>, 0u32);
    for _ in 0..k {
        let mut i = rng.gen_range(0..total);
        let drawn = lists.iter().find_map(|&mt| {
            let n = view.nr_free(top, mt);
            if i < n {
                return view.blocks(top, mt).nth(i as usize);
            }
            i -= n;
            None
        });
        walked = walked.saturating_add(u32::try_from(i + 1).unwrap_or(u32::MAX));
        let Some(c) = drawn.and_then(|pfn| candidate(view, pageblock_of(view, pfn), migrate, top))
        else {
            continue;
        };
        if best.is_none_or(|b| c.reserve > b.reserve) {
            best = Some(c);
        }
    }
    (best, walked)
}

/// The lowest-addressed free block of order `c.top` on a fallback list of `migrate` in
/// `c`'s pageblock: a walk over that pageblock's blocks (at most its frame count).
pub(super) fn block_in(
    view: &FreeAreaView<'_>,
    c: &Candidate,
    migrate: MigrateType,
) -> Option<Pfn> {
    let lists = FALLBACKS[migrate.index()];
    let end = c.start.0 + u64::from(view.pageblock_frames(c.start));
    let mut pfn = c.start.0;
    while pfn < end {
        pfn += match view.frame_state(Pfn(pfn))? {
            FrameState::FreeHead { order, migrate: mt }
                if order == c.top && lists.contains(&mt) =>
            {
                return Some(Pfn(pfn))
            }
            FrameState::FreeHead { order, .. } | FrameState::Allocated { order, .. } => {
                1 << order.0
            }
            _ => 1,
        };
    }
    None
}

/// The fallback choice stealing `c`'s largest eligible block.
pub(super) fn choice_for(
    view: &FreeAreaView<'_>,
    c: &Candidate,
    migrate: MigrateType,
    scanned: u32,
) -> Option<FallbackChoice> {
    let whole = LinuxDefault::can_steal(c.top.0, view.pageblock_order().0, migrate);
    Some(FallbackChoice::new(block_in(view, c, migrate)?, whole).with_scanned(scanned))
}

/// Best of `k` random eligible pageblocks, or Linux's choice when none was drawn.
pub(super) fn best_of_random(
    view: &FreeAreaView<'_>,
    rng: &mut PolicyRng,
    order: Order,
    migrate: MigrateType,
    k: u32,
) -> Option<FallbackChoice> {
    best_or_linux(view, sample(view, rng, migrate, order, k), order, migrate)
}

/// The choice for a sampled candidate (with the probes it took), or Linux's choice when
/// the sample found none.
pub(super) fn best_or_linux(
    view: &FreeAreaView<'_>,
    sampled: (Option<Candidate>, u32),
    order: Order,
    migrate: MigrateType,
) -> Option<FallbackChoice> {
    match sampled {
        (Some(c), probes) => choice_for(view, &c, migrate, probes),
        (None, probes) => Some(
            LinuxDefault
                .choose(view, order, migrate)?
                .with_scanned(probes),
        ),
    }
}
