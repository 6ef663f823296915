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

use hugemm_hw::{Pid, VirtAddr};
use hugemm_mm::Kernel;
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

/// Pending accessed/dirty bits of one buffer.
#[derive(Clone, Debug)]
pub struct LazyCoverage {
    stream: Stream,
    write_fraction: f64,
    total: u64,
    seen: Vec<u64>,
    seed: u64,
}

impl LazyCoverage {
    /// Coverage for a buffer of `regions` 2 MB regions, referenced by `stream`.
    pub fn new(stream: Stream, write_fraction: f64, regions: usize, seed: u64) -> Self {
        LazyCoverage {
            stream,
            write_fraction,
            total: 0,
            seen: vec![0; regions],
            seed,
        }
    }

    /// Record `refs` more skipped references.
    pub fn add(&mut self, refs: u64) {
        self.total += refs;
    }

    /// Whether any region has bits still to apply.
    pub fn pending(&self) -> bool {
        self.seen.iter().any(|s| *s < self.total)
    }

    /// Bring region `index` (of the buffer starting at `base`) up to date.
    pub fn materialise(&mut self, kernel: &mut Kernel, pid: Pid, base: VirtAddr, index: usize) {
        let Some(seen) = self.seen.get_mut(index) else {
            return;
        };
        let refs = self.total - *seen;
        *seen = self.total;
        if refs == 0 {
            return;
        }
        let pages_per_region = 512u64;
        let first = index as u64 * pages_per_region;
        let last = (first + pages_per_region).min(self.stream.pages());
        for page in first..last {
            let k = key(&[self.seed, pid.0 as u64, page, self.total]);
            if let Some(write) = skipped_touch(&self.stream, page, refs, self.write_fraction, k) {
                // Only bits: a page that is not present stays so (its first touch was
                // applied eagerly when it was skipped, or it was since freed).
                let _ = kernel.touch(pid, VirtAddr(base.0 + page * 4096), write);
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
    fn coins_are_uniform_enough_and_deterministic() {
        let n = 100_000u64;
        let mean = (0..n).map(|i| coin(key(&[1, i]))).sum::<f64>() / n as f64;
        assert!((mean - 0.5).abs() < 0.01);
        assert_eq!(coin(key(&[3, 4])), coin(key(&[3, 4])));
        assert_ne!(coin(key(&[3, 4])), coin(key(&[4, 3])));
    }
}
