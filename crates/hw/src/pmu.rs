//! The simulated performance-monitoring unit of one process: the counters a real PMU would
//! give HawkEye-PMU and the reports (`CPU_CLK_UNHALTED`, `DTLB_*_MISSES.WALK_DURATION`,
//! STLB hits, walks, faults by kind).
//!
//! Time is accumulated exactly in picoseconds and the cycle counters are derived from it,
//! so per-reference rounding (an overlapped reference may cost a fraction of a cycle) does
//! not accumulate. The engine counts faults into the `faults_*` fields itself; this module
//! must not know about the kernel model.

use crate::mmu::{AccessCost, TlbOutcome};
use crate::units::Picos;
use serde::Serialize;

/// Counters of one process (see the module doc).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Pmu {
    /// References served.
    pub references: u64,
    /// Core cycles spent serving them (`CPU_CLK_UNHALTED`).
    pub cycles: u64,
    /// Cycles a walker was busy for loads (`DTLB_LOAD_MISSES.WALK_DURATION`).
    pub walk_cycles_load: u64,
    /// Cycles a walker was busy for stores (`DTLB_STORE_MISSES.WALK_DURATION`).
    pub walk_cycles_store: u64,
    /// Translations found in an L1 TLB.
    pub l1_tlb_hits: u64,
    /// Translations found in the STLB.
    pub stlb_hits: u64,
    /// Page walks.
    pub walks: u64,
    /// Base-page faults.
    pub faults_4k: u64,
    /// Huge-page faults.
    pub faults_2m: u64,
    /// Faults that mapped the shared zero page.
    pub faults_zero_page: u64,
    /// Copy-on-write faults (of the zero page).
    pub faults_cow: u64,
    /// Total time of the references, exact.
    pub time: Picos,
    /// Walk time of loads, exact.
    pub walk_time_load: Picos,
    /// Walk time of stores, exact.
    pub walk_time_store: Picos,
}

impl Pmu {
    /// Counts one reference of cost `cost`; `cycles_per_pico` converts time to cycles
    /// ([`crate::MachineProfile::cycles_per_pico`]).
    pub fn record(&mut self, cost: &AccessCost, write: bool, cycles_per_pico: f64) {
        self.count(cost, write);
        self.sync_cycles(cycles_per_pico);
    }

    /// [`Pmu::record`] without the cycle counters: they lag the times until
    /// [`Pmu::sync_cycles`], so a batch of references converts time to cycles once rather
    /// than per reference. The cycle counters are functions of the times alone, so a
    /// batch ends with the same counters as recording one by one.
    #[inline]
    pub fn count(&mut self, cost: &AccessCost, write: bool) {
        self.references += 1;
        self.time += cost.time;
        match cost.outcome {
            TlbOutcome::L1Hit => self.l1_tlb_hits += 1,
            TlbOutcome::StlbHit => self.stlb_hits += 1,
            TlbOutcome::Walk => self.walks += 1,
        }
        if write {
            self.walk_time_store += cost.walk;
        } else {
            self.walk_time_load += cost.walk;
        }
    }

    /// [`Pmu::record_compute`] without the cycle counters (see [`Pmu::count`]).
    #[inline]
    pub fn count_compute(&mut self, time: Picos) {
        self.time += time;
    }

    /// Brings the cycle counters up to the times (after [`Pmu::count`]).
    pub fn sync_cycles(&mut self, cycles_per_pico: f64) {
        self.cycles = to_cycles(self.time, cycles_per_pico);
        self.walk_cycles_load = to_cycles(self.walk_time_load, cycles_per_pico);
        self.walk_cycles_store = to_cycles(self.walk_time_store, cycles_per_pico);
    }

    /// Counts `time` of user-mode execution that made no reference (computation between
    /// references).
    pub fn record_compute(&mut self, time: Picos, cycles_per_pico: f64) {
        self.count_compute(time);
        self.cycles = to_cycles(self.time, cycles_per_pico);
    }

    /// Counts references that were not simulated one by one (sampled mode's skips):
    /// their number, their total time and walk time, and where they translated.
    pub fn record_skipped(&mut self, skipped: &Skipped, cycles_per_pico: f64) {
        self.references += skipped.references;
        self.l1_tlb_hits += skipped.l1_tlb_hits;
        self.stlb_hits += skipped.stlb_hits;
        self.walks += skipped.walks;
        self.time += skipped.time;
        self.walk_time_load += skipped.walk_time_load;
        self.walk_time_store += skipped.walk_time_store;
        self.cycles = to_cycles(self.time, cycles_per_pico);
        self.walk_cycles_load = to_cycles(self.walk_time_load, cycles_per_pico);
        self.walk_cycles_store = to_cycles(self.walk_time_store, cycles_per_pico);
    }

    /// The share of cycles spent walking page tables, as HawkEye-PMU computes it:
    /// `(walk_cycles_load + walk_cycles_store) / cycles`, 0 when no cycle was counted.
    pub fn mmu_overhead(&self) -> f64 {
        if self.cycles == 0 {
            return 0.0;
        }
        (self.walk_cycles_load + self.walk_cycles_store) as f64 / self.cycles as f64
    }

    /// TLB misses that reached the STLB (hits plus walks).
    pub fn l1_tlb_misses(&self) -> u64 {
        self.stlb_hits + self.walks
    }
}

/// A batch of references counted without being simulated one by one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Skipped {
    /// References.
    pub references: u64,
    /// Of which hit the L1 TLB.
    pub l1_tlb_hits: u64,
    /// Of which hit the STLB.
    pub stlb_hits: u64,
    /// Of which walked.
    pub walks: u64,
    /// Their time.
    pub time: Picos,
    /// Their walk time, loads.
    pub walk_time_load: Picos,
    /// Their walk time, stores.
    pub walk_time_store: Picos,
}

/// `t` in cycles, rounded to nearest: `(t * cycles_per_pico + 0.5) as u64`, which x86-64
/// has no single instruction for in either direction (unsigned conversions). Below 2^52
/// picoseconds (52 days) through signed conversions, whose results are the same there
/// (`t` is exact as an `f64`, and a result below 2^63 or negative converts identically),
/// at a third of the instructions: this runs once per simulated reference.
#[inline]
fn to_cycles(t: Picos, cycles_per_pico: f64) -> u64 {
    if t.0 < 1 << 52 && cycles_per_pico < 1024.0 {
        ((t.0 as i64) as f64 * cycles_per_pico + 0.5).max(0.0) as i64 as u64
    } else {
        (t.0 as f64 * cycles_per_pico + 0.5) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cost(time: u64, walk: u64, outcome: TlbOutcome) -> AccessCost {
        AccessCost {
            time: Picos(time),
            walk: Picos(walk),
            outcome,
        }
    }

    #[test]
    fn record_counts_outcomes_and_cycles() {
        let mut p = Pmu::default();
        let cpp = 2.0 / 1000.0; // 2 GHz
        p.record(&cost(500, 0, TlbOutcome::L1Hit), false, cpp);
        p.record(&cost(1500, 0, TlbOutcome::StlbHit), false, cpp);
        p.record(&cost(50_000, 40_000, TlbOutcome::Walk), false, cpp);
        p.record(&cost(50_000, 20_000, TlbOutcome::Walk), true, cpp);
        assert_eq!(
            (p.references, p.l1_tlb_hits, p.stlb_hits, p.walks),
            (4, 1, 1, 2)
        );
        assert_eq!(p.cycles, 204);
        assert_eq!((p.walk_cycles_load, p.walk_cycles_store), (80, 40));
        assert!((p.mmu_overhead() - 120.0 / 204.0).abs() < 1e-12);
        assert_eq!(p.l1_tlb_misses(), 3);
    }

    #[test]
    fn counting_then_syncing_equals_recording_one_by_one() {
        let cpp = 3.1 / 1000.0;
        let (mut one, mut batch) = (Pmu::default(), Pmu::default());
        for i in 0..1000u64 {
            let c = cost(137 + i % 91, (i % 3) * 411, TlbOutcome::Walk);
            one.record(&c, i % 5 == 0, cpp);
            batch.count(&c, i % 5 == 0);
            if i % 7 == 0 {
                one.record_compute(Picos(333), cpp);
                batch.count_compute(Picos(333));
            }
        }
        batch.sync_cycles(cpp);
        assert_eq!(one, batch);
    }

    #[test]
    fn fractional_cycles_do_not_accumulate_rounding() {
        let mut p = Pmu::default();
        let cpp = 1.0 / 1000.0; // 1 GHz: 400 ps = 0.4 cycles
        for _ in 0..1000 {
            p.record(&cost(400, 0, TlbOutcome::L1Hit), false, cpp);
        }
        assert_eq!(p.cycles, 400);
    }

    #[test]
    fn cycle_conversion_matches_the_unsigned_formula() {
        for t in [
            0,
            1,
            399,
            400,
            1_000_000_007,
            (1 << 52) - 1,
            1 << 52,
            u64::MAX / 3,
        ] {
            for cpp in [0.0, 1e-3, 3.1e-3, 0.5, 2000.0, f64::NAN] {
                let want = (t as f64 * cpp + 0.5) as u64;
                assert_eq!(to_cycles(Picos(t), cpp), want, "t {t} cpp {cpp}");
            }
        }
    }

    #[test]
    fn overhead_of_an_idle_process_is_zero() {
        assert_eq!(Pmu::default().mmu_overhead(), 0.0);
    }
}
