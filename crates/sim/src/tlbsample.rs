//! The simulated PEBS-like TLB-miss sampler behind SysMon-H (`MemoryOps::
//! start_tlb_sampling`): per-page counts of a process's TLB misses, its sampling rate
//! and what it costs the process.
//!
//! - **What counts.** A TLB miss is a reference that walked the page tables (an STLB
//!   miss: what `MEM_UOPS_RETIRED.STLB_MISS_*` counts and PEBS records with the data
//!   address). Every walk of a simulated reference is counted on its 4 KB page, whether
//!   a base or a huge page maps it; references a sampled phase skipped are counted in
//!   total only and spread over pages in the proportions the simulated ones had.
//! - **Rate.** The sampler runs in frequency mode, as `perf` does by default: about
//!   `hz` samples a second of the process's running time, and never more samples than
//!   walks. The model reports each page's *expected* samples: its share of the walks
//!   times the samples taken. A real sampler's counts scatter around these (a page with
//!   an expected 3 samples may show 0 or 6); that noise is not drawn.
//! - **Cost.** Each sample costs the process `cost` (a PEBS assist writing a record,
//!   and its share of draining the buffer), charged as one delay at the process's next
//!   turn when the sampling stops.
//!
//! With no sampler running, the reference path pays one test of an empty `Option`, and
//! only on walks.

use hugemm_hw::{Nanos, Picos, Pmu, VirtAddr};
use hugemm_policy::{TlbMisses, TlbSampling};
use std::collections::HashMap;

/// A running sampler of one process (see the module doc).
#[derive(Clone, Debug)]
pub(crate) struct TlbSampler {
    sampling: TlbSampling,
    /// Walks of simulated references per 4 KB page number.
    walks: HashMap<u64, u64>,
    /// All walks of simulated references.
    exact: u64,
    /// Walks of skipped references.
    skipped: u64,
    /// The process's running time when sampling started.
    start: Picos,
}

impl TlbSampler {
    /// Start sampling a process whose counters are `pmu`.
    pub fn new(sampling: TlbSampling, pmu: &Pmu) -> TlbSampler {
        TlbSampler {
            sampling,
            walks: HashMap::new(),
            exact: 0,
            skipped: 0,
            start: pmu.time,
        }
    }

    /// A simulated reference to `va` walked.
    #[inline]
    pub fn walk(&mut self, va: VirtAddr) {
        *self.walks.entry(va.0 >> 12).or_insert(0) += 1;
        self.exact += 1;
    }

    /// A sampled phase skipped references that walked `walks` times.
    pub fn skipped(&mut self, walks: u64) {
        self.skipped += walks;
    }

    /// What was sampled up to now, the process's counters being `pmu`.
    pub fn finish(self, pmu: &Pmu) -> TlbMisses {
        let run_s = pmu.time.0.saturating_sub(self.start.0) as f64 * 1e-12;
        let walks = (self.exact + self.skipped) as f64;
        let samples = (self.sampling.hz * run_s).min(walks);
        let per_exact_walk = match self.exact {
            0 => 0.0,
            n => samples / n as f64,
        };
        let mut pages: Vec<(VirtAddr, f64)> = self
            .walks
            .into_iter()
            .map(|(vpn, n)| (VirtAddr(vpn << 12), n as f64 * per_exact_walk))
            .collect();
        pages.sort_by_key(|p| p.0);
        TlbMisses {
            pages,
            samples,
            walks,
            overhead: Nanos((samples * self.sampling.cost.0 as f64).round() as u64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pmu_at(ps: u64) -> Pmu {
        Pmu {
            time: Picos(ps),
            ..Pmu::default()
        }
    }

    #[test]
    fn pages_get_their_share_of_the_samples_taken_at_the_rate() {
        let sampling = TlbSampling {
            hz: 1000.0,
            cost: Nanos(250),
        };
        let mut s = TlbSampler::new(sampling, &pmu_at(0));
        for _ in 0..3000 {
            s.walk(VirtAddr(0x1000));
        }
        for _ in 0..1000 {
            s.walk(VirtAddr(0x200_1234));
        }
        s.skipped(4000);
        // Two seconds of running: 2000 samples over 8000 walks.
        let m = s.finish(&pmu_at(2_000_000_000_000));
        assert_eq!(m.samples, 2000.0);
        assert_eq!(m.walks, 8000.0);
        assert_eq!(
            m.pages,
            vec![(VirtAddr(0x1000), 1500.0), (VirtAddr(0x200_1000), 500.0)]
        );
        assert_eq!(m.overhead, Nanos(500_000));
    }

    #[test]
    fn never_more_samples_than_walks() {
        let sampling = TlbSampling {
            hz: 1e6,
            cost: Nanos(1),
        };
        let mut s = TlbSampler::new(sampling, &pmu_at(0));
        s.walk(VirtAddr(0));
        let m = s.finish(&pmu_at(1_000_000_000_000));
        assert_eq!((m.samples, m.pages[0].1), (1.0, 1.0));
    }
}
