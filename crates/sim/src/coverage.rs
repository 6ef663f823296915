//! Lazily applied accessed and dirty bits for references skipped in sampled mode.
//!
//! Skipping `n` random references over a buffer leaves each page accessed with a
//! probability the pattern knows ([`Stream::page_probability`]). Setting those bits eagerly
//! would cost a pass over every page of every buffer at every skip — more than simulating
//! the references. Instead each buffer keeps a running count of references skipped, and
//! each 2 MB region remembers the count at which its bits were last brought up to date.
//! When anyone observes a region (a policy reading or clearing its accessed bits), the
//! bits the skipped references would have set since then are set first, by deterministic
//! coin flips. Because the skipped references are independent draws, skipping `a` then
//! `b` references leaves the same distribution as skipping `a + b`, so materialising late
//! is exact in distribution.
//!
//! Exact references set bits directly as they run, so both kinds compose.
//!
//! # Accessed bits of skipped references
//!
//! Under `[kernel] accessed_bits = "walk"` (the default) only a reference that walks sets
//! its entry's accessed bit (`hugemm_mm`'s `space/pagetable.rs`), and a skipped reference
//! is not translated, so whether it walked is drawn: each skipped reference to a page of
//! size `s` walks with the share `w_s` of references to pages of that size that walked in
//! the window the skip extrapolates ([`crate::sampling::WalkShares`]). The walks of `n`
//! skipped references are then `n w_s` draws of the pattern's page distribution, and a
//! page of share `q` has its bit set with probability `1 - (1 - q)^(n w_s)`, drawn with the
//! same coin as its touch (a page walked is a page touched). Skips of different lengths
//! and shares add their `n w_s`. This is exact for a uniform pattern; for a skewed one it
//! spreads the walks over pages in proportion to their references, where the hot pages,
//! whose translations stay cached, walk less than the average and the cold ones more:
//! coverage of cold pages is under-counted and of hot pages over-counted (the sampled-
//! against-exact tests bound what this does to the results). Dirty bits are unaffected: a
//! write sets one whether or not it walks.

use crate::sampling::WalkShares;
use hugemm_hw::{PageSize, Pid, VirtAddr};
use hugemm_mm::{AccessedBits, Kernel, Touch};
use hugemm_workload::Stream;

/// A deterministic uniform number in [0, 1) from a key (SplitMix64's first output from
/// state `key`).
pub fn coin(key: u64) -> f64 {
    use rand::{RngCore, SeedableRng};
    let z = rand_xoshiro::SplitMix64::seed_from_u64(key).next_u64();
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// Mix several words into one coin key.
pub fn key(words: &[u64]) -> u64 {
    words.iter().fold(0xCBF2_9CE4_8422_2325u64, |h, w| {
        (h ^ w).wrapping_mul(0x0100_0000_01B3).rotate_left(17)
    })
}

/// Whether page `page` was touched by `refs` skipped references of `stream`, decided by
/// the coins of `key`: `None` if not, `Some(written)` if it was. Being written is drawn
/// conditioned on being touched, from the same independent references.
pub fn skipped_touch(
    stream: &Stream,
    page: u64,
    refs: u64,
    write_fraction: f64,
    key: u64,
) -> Option<bool> {
    let touched = stream.page_probability(page, refs);
    if coin(key) >= touched {
        return None;
    }
    let written = stream.page_write_probability(page, refs, write_fraction);
    Some(coin(key ^ 0x5555) * touched < written)
}

/// The probability that an event of probability `q` per draw happens at least once in
/// `draws` independent draws (a real number of them: walks are a share of references).
pub fn at_least_once(q: f64, draws: f64) -> f64 {
    if q >= 1.0 {
        return if draws > 0.0 { 1.0 } else { 0.0 };
    }
    -(draws * (-q).ln_1p()).exp_m1()
}

/// Walk-weighted references by page size: `[4 KB, 2 MB]`.
type Walked = [f64; 2];

fn size_index(size: PageSize) -> usize {
    match size {
        PageSize::Base => 0,
        _ => 1,
    }
}

/// Pending accessed/dirty bits of one buffer.
#[derive(Clone, Debug)]
pub struct LazyCoverage {
    stream: Stream,
    write_fraction: f64,
    total: u64,
    /// Skipped references times the share of them that walked, summed over skips, by
    /// page size.
    walked: Walked,
    /// Per region: `total` and `walked` when it was last brought up to date.
    seen: Vec<(u64, Walked)>,
    seed: u64,
}

impl LazyCoverage {
    /// Coverage for a buffer of `regions` 2 MB regions, referenced by `stream`.
    pub fn new(stream: Stream, write_fraction: f64, regions: usize, seed: u64) -> Self {
        LazyCoverage {
            stream,
            write_fraction,
            total: 0,
            walked: [0.0; 2],
            seen: vec![(0, [0.0; 2]); regions],
            seed,
        }
    }

    /// Record `refs` more skipped references, of which the shares `walks` walked.
    pub fn add(&mut self, refs: u64, walks: WalkShares) {
        self.total += refs;
        self.walked[0] += refs as f64 * walks.base;
        self.walked[1] += refs as f64 * walks.huge;
    }

    /// Whether any region has bits still to apply.
    pub fn pending(&self) -> bool {
        self.seen.iter().any(|s| s.0 < self.total)
    }

    /// Bring region `index` (of the buffer starting at `base`) up to date.
    pub fn materialise(&mut self, kernel: &mut Kernel, pid: Pid, base: VirtAddr, index: usize) {
        let Some(seen) = self.seen.get_mut(index) else {
            return;
        };
        let refs = self.total - seen.0;
        let walked = [self.walked[0] - seen.1[0], self.walked[1] - seen.1[1]];
        *seen = (self.total, self.walked);
        if refs == 0 {
            return;
        }
        // Under "every-reference" the touch sets the accessed bit itself.
        let walk = kernel.accessed_bits() == AccessedBits::Walk;
        let pages_per_region = 512u64;
        let first = index as u64 * pages_per_region;
        let last = (first + pages_per_region).min(self.stream.pages());
        for page in first..last {
            let k = key(&[self.seed, pid.0 as u64, page, self.total]);
            if let Some(write) = skipped_touch(&self.stream, page, refs, self.write_fraction, k) {
                // Only bits: a page that is not present stays so (its first touch was
                // applied eagerly when it was skipped, or it was since freed).
                let va = VirtAddr(base.0 + page * 4096);
                let touch = kernel.touch(pid, va, write);
                if let (
                    true,
                    Touch::Mapped {
                        size, young: false, ..
                    },
                ) = (walk, touch)
                {
                    // The touch's own coin: a page walked is a page touched.
                    let q = self.stream.page_share(page);
                    if coin(k) < at_least_once(q, walked[size_index(size)]) {
                        kernel.mark_accessed(pid, va);
                    }
                }
            }
        }
    }

    /// Bring every region up to date (before the buffer's pattern changes or it goes).
    pub fn materialise_all(&mut self, kernel: &mut Kernel, pid: Pid, base: VirtAddr) {
        for i in 0..self.seen.len() {
            self.materialise(kernel, pid, base, i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_least_once_agrees_with_the_power_and_takes_real_draws() {
        assert_eq!(at_least_once(0.5, 2.0), 0.75);
        assert_eq!(at_least_once(1.0, 0.0), 0.0);
        assert_eq!(at_least_once(1.0, 0.5), 1.0);
        assert!((at_least_once(0.01, 50.5) - (1.0 - 0.99f64.powf(50.5))).abs() < 1e-12);
    }

    /// A process with 2 MB of 4 KB pages mapped and their accessed bits cleared.
    fn cleared_region() -> (Kernel, Pid, VirtAddr) {
        let mem = hugemm_mm::MemConfig {
            bytes: 64 << 20,
            geometry: hugemm_hw::Geometry::X86_64,
        };
        let profile = hugemm_hw::MachineProfile::builtin("epyc-milan-kvm").unwrap();
        let mut k = Kernel::new(&mem, crate::mm_costs(&profile)).unwrap();
        let pid = k.create_process();
        let va = k.mmap(pid, 2 << 20, hugemm_mm::HugeAdvice::None).unwrap();
        for page in 0..512 {
            k.fault(pid, VirtAddr(va.0 + page * 4096), true, PageSize::Base);
        }
        assert_eq!(k.clear_accessed(pid, va), 512);
        (k, pid, va)
    }

    /// Skipped references set accessed bits in proportion to the share that walked: none
    /// when none did (a buffer the TLBs hold), `1 - (1 - 1/512)^(512 w)` of the pages of a
    /// uniform pattern when a share `w` did; dirty bits whatever the share.
    #[test]
    fn skipped_references_set_accessed_bits_as_their_walks_would() {
        let stream = Stream::new(hugemm_workload::Pattern::Uniform, 2 << 20).unwrap();
        let accessed = |w: f64| {
            let (mut k, pid, va) = cleared_region();
            let mut cov = LazyCoverage::new(stream.clone(), 0.0, 1, 7);
            cov.add(512, WalkShares { base: w, huge: 1.0 });
            cov.materialise(&mut k, pid, va, 0);
            assert!(!cov.pending());
            k.region_info(pid, va).accessed as f64
        };
        assert_eq!(accessed(0.0), 0.0, "nothing walked");
        for w in [0.25, 1.0] {
            let want = 512.0 * at_least_once(1.0 / 512.0, 512.0 * w);
            let got = accessed(w);
            assert!(
                (got - want).abs() < 4.0 * want.sqrt(),
                "share {w}: {got} vs {want:.0}"
            );
        }
        let (mut k, pid, va) = cleared_region();
        k.set_accessed_bits(AccessedBits::EveryReference);
        let mut cov = LazyCoverage::new(stream.clone(), 0.0, 1, 7);
        cov.add(
            512,
            WalkShares {
                base: 0.0,
                huge: 0.0,
            },
        );
        cov.materialise(&mut k, pid, va, 0);
        let every = k.region_info(pid, va).accessed as f64;
        let want = 512.0 * at_least_once(1.0 / 512.0, 512.0);
        assert!(
            (every - want).abs() < 4.0 * want.sqrt(),
            "{every} vs {want:.0}"
        );
    }

    #[test]
    fn coins_are_uniform_enough_and_deterministic() {
        let n = 100_000u64;
        let mean = (0..n).map(|i| coin(key(&[1, i]))).sum::<f64>() / n as f64;
        assert!((mean - 0.5).abs() < 0.01);
        assert_eq!(coin(key(&[3, 4])), coin(key(&[3, 4])));
        assert_ne!(coin(key(&[3, 4])), coin(key(&[4, 3])));
    }
}
