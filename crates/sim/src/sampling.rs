//! Sampled mode: which references of an access phase are simulated exactly and how the
//! skipped ones are priced.
//!
//! Each access phase alternates between a *window* — `warmup_refs` references that
//! re-warm the TLBs, page-walk caches and caches after a skip, then at least
//! `window_refs` measured ones, continuing until `window_walks` page walks have been seen
//! (at most 20 x `window_refs`), so that patterns which walk rarely (sequential sweeps)
//! are measured over enough walks to average their periodic structure — and a *skip* lasting until the next window is due, `period` after the
//! previous one began. A skip of `n` references advances the clock by `n` times the mean
//! cost of a measured reference (fault time excluded: faults caused by skipped first
//! touches are carried out for real and charged as they happen), adds `n` references and
//! the measured mean walk and compute cycles to the process's counters, and applies the
//! references' footprint (first touches now, accessed bits lazily, see [`crate::coverage`]).
//!
//! Skips leave the modelled TLBs and caches as the last window left them, which is right
//! for a stationary pattern but never warms them: a phase's first window is therefore
//! preceded by a *phase warm-up* of exact references that lasts until the caches left
//! cold by a previous phase (a touch pass) have converged. It is measured in blocks:
//! the two halves of `phase_warmup_refs` (rounded down), then blocks as long as the warm-up so far
//! (doubling it), and it ends at the first block whose means agree with the block
//! before it as two windows must ([`agree`]), or at `phase_warmup_max_refs`. Doubling
//! blocks see a slow transient that consecutive equal blocks would not: the change
//! between blocks of a fixed length shrinks with the length, the change between
//! doubling ones is about the transient still to come. A phase that has settled by
//! `phase_warmup_refs` warms exactly that many, as a fixed count did.
//!
//! The first window of a phase starts with the phase; a phase shorter than one window is
//! simulated exactly. A window is trusted only when its mean time and mean walk time per
//! reference are within [`CONVERGED`] of the window before it: otherwise (a cold start after a touch phase, a
//! cache still filling with a skewed pattern's hot set) another window is measured at
//! once, up to [`MAX_STREAK`] in a row, so a transient is never extrapolated over a whole
//! period. Early in a phase a skip is also limited to the references made so far
//! ([`Sampler::skip_limit`]), so the schedule starts dense and thins out geometrically. Skips are cut at the next engine event (a daemon, a sample, another
//! core's progress), so daemons observe state at the right simulated time.

use hugemm_hw::{PageSize, Picos, Skipped};

/// Relative change of the mean time per reference between two consecutive windows below
/// which the later window is trusted.
pub const CONVERGED: f64 = 0.02;
/// Most windows measured back to back before skipping anyway.
pub const MAX_STREAK: u32 = 16;

/// Where an access phase is in its window/skip cycle.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Stage {
    /// Exact references of a phase warm-up block, measured only to decide whether the
    /// warm-up has converged ([`Sampler::finish_warmup_block`]).
    PhaseWarmup {
        /// References left in the block.
        left: u64,
    },
    /// Exact references whose cost is not measured.
    Warmup {
        /// References left.
        left: u64,
    },
    /// Exact references whose cost is measured.
    Measure {
        /// References left.
        left: u64,
    },
    /// Skipping until the next window.
    Skip,
}

/// The measured costs of the last window, per reference.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WindowMeans {
    /// Mean time per reference, compute included, faults excluded (picoseconds).
    pub time_ps: f64,
    /// Mean fault time per reference (picoseconds). A skip does not charge it (the
    /// faults of its first touches are carried out and charged as they happen) but
    /// counts it when choosing its length, so that a skip over first touches (a touch
    /// pass: a fault a reference) ends near the time it was sized for instead of running
    /// past it by every fault's time, which would let one core fault thousands of pages
    /// while the others wait.
    pub fault_ps: f64,
    /// Mean walk time of loads per reference (picoseconds).
    pub walk_load_ps: f64,
    /// Mean walk time of stores per reference (picoseconds).
    pub walk_store_ps: f64,
    /// Share of references that hit the L1 TLB.
    pub l1_hits: f64,
    /// Share of references that hit the STLB.
    pub stlb_hits: f64,
    /// Share of references that walked.
    pub walks: f64,
    /// Share of references that walked, by the size of the page referenced.
    pub walk_shares: WalkShares,
}

/// The share of references that walked, by the size of the page they referenced: a
/// skipped reference sets its entry's accessed bit with this probability, as an exact one
/// does when it walks (`coverage.rs`). A size the window did not reference takes the
/// window's overall share.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WalkShares {
    /// References to 4 KB pages (and the 4 KB zero page).
    pub base: f64,
    /// References to 2 MB (and larger) pages.
    pub huge: f64,
}

impl WalkShares {
    /// Every reference counts as a walk: `[kernel] accessed_bits = "every-reference"`.
    pub const ALL: WalkShares = WalkShares {
        base: 1.0,
        huge: 1.0,
    };

    /// The share for references to pages of `size`.
    pub fn of(&self, size: PageSize) -> f64 {
        match size {
            PageSize::Base => self.base,
            _ => self.huge,
        }
    }
}

/// The fractions of the PMU's event counts that skips have not yet added, carried to the
/// next skip of the phase: a skip of a few thousand references at a rare event's rate
/// (a sequential sweep walks once per 2 MB page) would otherwise round its walks to 0
/// every time.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SkipCarry {
    l1_hits: f64,
    stlb_hits: f64,
    walks: f64,
}

impl WindowMeans {
    /// What `n` references at these means add to the PMU: times rounded to the
    /// picosecond, event counts to whole events with their fractions kept in `carry`.
    pub fn scaled(&self, n: u64, carry: &mut SkipCarry) -> Skipped {
        let x = |m: f64| (m * n as f64).round() as u64;
        let count = |m: f64, c: &mut f64| whole(m * n as f64, c);
        Skipped {
            references: n,
            l1_tlb_hits: count(self.l1_hits, &mut carry.l1_hits),
            stlb_hits: count(self.stlb_hits, &mut carry.stlb_hits),
            walks: count(self.walks, &mut carry.walks),
            time: Picos(x(self.time_ps)),
            walk_time_load: Picos(x(self.walk_load_ps)),
            walk_time_store: Picos(x(self.walk_store_ps)),
        }
    }
}

/// Sampling state of one access phase.
#[derive(Clone, Debug)]
pub struct Sampler {
    /// Current stage.
    pub stage: Stage,
    /// When the next window is due.
    pub next_window: Picos,
    /// Means of the last measured window.
    pub means: Option<WindowMeans>,
    /// Sums over the current measured window.
    pub acc: WindowAcc,
    /// Windows measured back to back so far.
    pub streak: u32,
    /// References of this phase so far, exact and skipped: a skip may not be longer
    /// (see [`Sampler::skip_limit`]).
    pub phase_refs: u64,
    /// Means of the phase warm-up's previous block.
    warmup_block: Option<WindowMeans>,
}

/// Sums accumulated over a measured window.
#[derive(Clone, Copy, Debug, Default)]
pub struct WindowAcc {
    /// References measured.
    pub refs: u64,
    /// Their time, compute included, faults excluded.
    pub time: Picos,
    /// Their faults' time.
    pub fault_time: Picos,
    /// Their walk time, loads.
    pub walk_load: Picos,
    /// Their walk time, stores.
    pub walk_store: Picos,
    /// L1 TLB hits.
    pub l1_hits: u64,
    /// STLB hits.
    pub stlb_hits: u64,
    /// Walks.
    pub walks: u64,
    /// References to 4 KB pages.
    pub base_refs: u64,
    /// Walks of references to 4 KB pages.
    pub base_walks: u64,
}

impl WindowAcc {
    /// The per-reference means, if anything was measured.
    pub fn means(&self) -> Option<WindowMeans> {
        if self.refs == 0 {
            return None;
        }
        let n = self.refs as f64;
        let share = |walks: u64, refs: u64| match refs {
            0 => self.walks as f64 / n,
            _ => walks as f64 / refs as f64,
        };
        let walk_shares = WalkShares {
            base: share(self.base_walks, self.base_refs),
            huge: share(self.walks - self.base_walks, self.refs - self.base_refs),
        };
        Some(WindowMeans {
            time_ps: self.time.0 as f64 / n,
            fault_ps: self.fault_time.0 as f64 / n,
            walk_load_ps: self.walk_load.0 as f64 / n,
            walk_store_ps: self.walk_store.0 as f64 / n,
            l1_hits: self.l1_hits as f64 / n,
            stlb_hits: self.stlb_hits as f64 / n,
            walks: self.walks as f64 / n,
            walk_shares,
        })
    }
}

impl Sampler {
    /// The longest skip allowed now: as many references as the phase has made so far.
    /// Skips therefore at most double the phase's length, so a window taken during a
    /// slow transient (caches still warming after a touch phase) is never extrapolated
    /// over more of the phase than it was drawn from; once the phase is long, the period
    /// is the binding limit.
    pub fn skip_limit(&self) -> u64 {
        self.phase_refs.max(1)
    }

    /// A window just finished with `new`: keep it, and say whether the estimate has
    /// settled (skip now) or another window should follow at once.
    pub fn finish_window(&mut self, new: WindowMeans) -> bool {
        let settled = self.means.is_some_and(|old| agree(&old, &new));
        self.means = Some(new);
        self.streak += 1;
        let done = settled || self.streak >= MAX_STREAK;
        if done {
            self.streak = 0;
        }
        done
    }

    /// A phase warm-up block just finished with `block` (`None`: it measured nothing):
    /// return the length of the next block, or `None` when the warm-up is over (see the
    /// module doc). `max` is `phase_warmup_max_refs`; the phase's references so far,
    /// [`Sampler::phase_refs`], are the warm-up's.
    pub fn finish_warmup_block(&mut self, block: Option<WindowMeans>, max: u64) -> Option<u64> {
        let converged = match (self.warmup_block, block) {
            (Some(old), Some(new)) => agree(&old, &new),
            _ => false,
        };
        if block.is_some() {
            self.warmup_block = block;
        }
        let next = self.phase_refs.min(max.saturating_sub(self.phase_refs));
        (!converged && next > 0).then_some(next)
    }

    /// A sampler for a phase starting at `now`, warming up over at least `warmup`
    /// references (see the module doc).
    pub fn new(now: Picos, warmup: u64) -> Self {
        let stage = match warmup {
            0 | 1 => Stage::Warmup { left: warmup },
            _ => Stage::PhaseWarmup { left: warmup / 2 },
        };
        Sampler {
            stage,
            next_window: now,
            means: None,
            acc: WindowAcc::default(),
            streak: 0,
            phase_refs: 0,
            warmup_block: None,
        }
    }
}

/// Whether two consecutive measurements agree: mean time per reference within
/// [`CONVERGED`] of the earlier one, and walk time too, since independent references can
/// be bound by data while their walks still change (near-zero walk time agrees when the
/// change is a negligible share of the time).
pub fn agree(old: &WindowMeans, new: &WindowMeans) -> bool {
    let (walk_new, walk_old) = (
        new.walk_load_ps + new.walk_store_ps,
        old.walk_load_ps + old.walk_store_ps,
    );
    let time_ok = (new.time_ps - old.time_ps).abs() <= CONVERGED * old.time_ps;
    let walk_ok = (walk_new - walk_old).abs() <= CONVERGED * walk_old.max(0.1 * old.time_ps);
    time_ok && walk_ok
}

/// Integer part of `x` plus a carry, so that summing many fractional skips loses nothing:
/// returns the whole units of `x + *carry` and keeps the fraction in `carry`.
pub fn whole(x: f64, carry: &mut f64) -> u64 {
    let t = x + *carry;
    let w = t.floor().max(0.0);
    *carry = t - w;
    w as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_carries_fractions_across_calls() {
        let mut carry = 0.0;
        let total: u64 = (0..10).map(|_| whole(0.25, &mut carry)).sum();
        assert_eq!(total, 2);
        assert!((carry - 0.5).abs() < 1e-12);
    }

    #[test]
    fn a_window_is_trusted_only_once_it_agrees_with_the_one_before() {
        let mut s = Sampler::new(Picos(0), 0);
        let m = |t: f64| WindowMeans {
            time_ps: t,
            ..Default::default()
        };
        assert!(
            !s.finish_window(m(100.0)),
            "a first window has nothing to agree with"
        );
        assert!(!s.finish_window(m(150.0)), "a 50% change is a transient");
        assert!(
            s.finish_window(m(151.0)),
            "within 2% of the previous: settled"
        );
        for _ in 0..MAX_STREAK - 1 {
            assert!(!s.finish_window(m(if s.streak.is_multiple_of(2) {
                100.0
            } else {
                200.0
            })));
        }
        assert!(s.finish_window(m(100.0)), "the streak is capped");
    }

    #[test]
    fn a_phase_warmup_doubles_until_two_blocks_agree_or_the_most_is_reached() {
        let m = |t: f64, walk: f64| {
            Some(WindowMeans {
                time_ps: t,
                walk_load_ps: walk,
                ..Default::default()
            })
        };
        // Settled by the least (100,000): two halves that agree end it there.
        let mut s = Sampler::new(Picos(0), 100_000);
        assert_eq!(s.stage, Stage::PhaseWarmup { left: 50_000 });
        s.phase_refs = 50_000;
        assert_eq!(
            s.finish_warmup_block(m(200.0, 100.0), 1_600_000),
            Some(50_000)
        );
        s.phase_refs = 100_000;
        assert_eq!(s.finish_warmup_block(m(201.0, 101.0), 1_600_000), None);
        // A transient: each block as long as the warm-up so far, until the walk time
        // (the time alone would pass) stops moving, or at the most.
        let mut s = Sampler::new(Picos(0), 100_000);
        let mut lengths = Vec::new();
        let mut next = Some(50_000);
        for walk in [80.0, 90.0, 95.0, 97.0, 97.5] {
            let n = next.expect("still warming");
            lengths.push(n);
            s.phase_refs += n;
            next = s.finish_warmup_block(m(300.0, walk), 1_600_000);
        }
        assert_eq!(lengths, [50_000, 50_000, 100_000, 200_000, 400_000]);
        assert_eq!(next, None, "97.0 -> 97.5 agree (95 -> 97 did not)");
        let mut s = Sampler::new(Picos(0), 100_000);
        let mut total = 0;
        let mut next = Some(50_000);
        let mut walk = 10.0;
        while let Some(n) = next {
            total += n;
            s.phase_refs += n;
            walk *= 2.0;
            next = s.finish_warmup_block(m(300.0, walk), 300_000);
        }
        assert_eq!(total, 300_000, "capped at the most");
        // A most equal to the least is the fixed count of old.
        let mut s = Sampler::new(Picos(0), 100_000);
        s.phase_refs = 50_000;
        assert_eq!(s.finish_warmup_block(m(100.0, 0.0), 100_000), Some(50_000));
        s.phase_refs = 100_000;
        assert_eq!(s.finish_warmup_block(m(500.0, 0.0), 100_000), None);
        assert_eq!(Sampler::new(Picos(0), 0).stage, Stage::Warmup { left: 0 });
    }

    #[test]
    fn a_skip_is_never_longer_than_the_phase_so_far() {
        let mut s = Sampler::new(Picos(0), 0);
        assert_eq!(s.skip_limit(), 1);
        s.phase_refs = 7_000;
        assert_eq!(s.skip_limit(), 7_000);
    }

    #[test]
    fn window_means_divide_by_references() {
        let acc = WindowAcc {
            refs: 4,
            time: Picos(400),
            walk_load: Picos(40),
            walks: 2,
            ..Default::default()
        };
        let m = acc.means().unwrap();
        assert_eq!((m.time_ps, m.walk_load_ps, m.walks), (100.0, 10.0, 0.5));
        let s = m.scaled(10, &mut SkipCarry::default());
        assert_eq!(
            (s.references, s.time, s.walk_time_load, s.walks),
            (10, Picos(1000), Picos(100), 5)
        );
        assert!(WindowAcc::default().means().is_none());
    }

    #[test]
    fn walk_shares_are_per_page_size_with_the_overall_share_for_a_size_not_seen() {
        let acc = WindowAcc {
            refs: 10,
            walks: 5,
            base_refs: 4,
            base_walks: 4,
            ..Default::default()
        };
        let w = acc.means().unwrap().walk_shares;
        assert_eq!(
            (w.of(PageSize::Base), w.of(PageSize::Huge)),
            (1.0, 1.0 / 6.0)
        );
        let only_huge = WindowAcc {
            base_refs: 0,
            base_walks: 0,
            ..acc
        };
        let w = only_huge.means().unwrap().walk_shares;
        assert_eq!((w.base, w.huge), (0.5, 0.5));
    }

    /// A walk every 1,024 references, skipped 256 at a time: every skip's share is a
    /// quarter of a walk, and the carry adds them up (powers of two: exact in floats).
    #[test]
    fn rare_events_add_up_over_short_skips() {
        let m = WindowMeans {
            walks: 1.0 / 1024.0,
            stlb_hits: 0.25,
            ..Default::default()
        };
        let mut carry = SkipCarry::default();
        let (walks, stlb): (u64, u64) = (0..100)
            .map(|_| m.scaled(256, &mut carry))
            .fold((0, 0), |(w, h), s| (w + s.walks, h + s.stlb_hits));
        assert_eq!((walks, stlb), (25, 6_400));
    }
}
