//! Sampled mode: which references of an access phase are simulated exactly and how the
//! skipped ones are priced.
//!
//! Each access phase alternates between a *window* — `warmup_refs` references that
//! re-warm the TLBs, page-walk caches and caches after a skip, then `window_refs`
//! measured ones — and a *skip* lasting until the next window is due, `period` after the
//! previous one began. A skip of `n` references advances the clock by `n` times the mean
//! cost of a measured reference (fault time excluded: faults caused by skipped first
//! touches are carried out for real and charged as they happen), adds `n` references and
//! the measured mean walk and compute cycles to the process's counters, and applies the
//! references' footprint (first touches now, accessed bits lazily, see [`crate::coverage`]).
//!
//! The first window of a phase starts with the phase; a phase shorter than one window is
//! simulated exactly. Skips are cut at the next engine event (a daemon, a sample, another
//! core's progress), so daemons observe state at the right simulated time.

use hugemm_hw::Picos;

/// Where an access phase is in its window/skip cycle.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Stage {
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
    /// Mean time per reference (picoseconds, fractional).
    pub time_ps: f64,
    /// Mean walk time per reference.
    pub walk_ps: f64,
    /// Mean cycles of load walks per reference.
    pub walk_cycles_load: f64,
    /// Mean cycles of store walks per reference.
    pub walk_cycles_store: f64,
    /// Mean cycles per reference.
    pub cycles: f64,
    /// Share of references that hit the STLB.
    pub stlb_hits: f64,
    /// Share of references that walked.
    pub walks: f64,
    /// Share of references that hit the L1 TLB.
    pub l1_hits: f64,
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
}

/// Sums accumulated over a measured window.
#[derive(Clone, Copy, Debug, Default)]
pub struct WindowAcc {
    /// References measured.
    pub refs: u64,
    /// Time of those references, faults excluded.
    pub time: Picos,
    /// Walk time.
    pub walk: Picos,
    /// PMU deltas.
    pub walk_cycles_load: u64,
    /// PMU deltas.
    pub walk_cycles_store: u64,
    /// PMU deltas.
    pub cycles: u64,
    /// PMU deltas.
    pub stlb_hits: u64,
    /// PMU deltas.
    pub walks: u64,
    /// PMU deltas.
    pub l1_hits: u64,
}

impl WindowAcc {
    /// The per-reference means, if anything was measured.
    pub fn means(&self) -> Option<WindowMeans> {
        if self.refs == 0 {
            return None;
        }
        let n = self.refs as f64;
        Some(WindowMeans {
            time_ps: self.time.0 as f64 / n,
            walk_ps: self.walk.0 as f64 / n,
            walk_cycles_load: self.walk_cycles_load as f64 / n,
            walk_cycles_store: self.walk_cycles_store as f64 / n,
            cycles: self.cycles as f64 / n,
            stlb_hits: self.stlb_hits as f64 / n,
            walks: self.walks as f64 / n,
            l1_hits: self.l1_hits as f64 / n,
        })
    }
}

impl Sampler {
    /// A sampler starting a window at `now`.
    pub fn new(now: Picos, warmup: u64) -> Self {
        Sampler { stage: Stage::Warmup { left: warmup }, next_window: now, means: None, acc: WindowAcc::default() }
    }
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
    fn window_means_divide_by_references() {
        let acc = WindowAcc { refs: 4, time: Picos(400), cycles: 8, walks: 2, ..Default::default() };
        let m = acc.means().unwrap();
        assert_eq!((m.time_ps, m.cycles, m.walks), (100.0, 2.0, 0.5));
        assert!(WindowAcc::default().means().is_none());
    }
}
