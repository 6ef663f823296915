//! Page contents: what the model knows of the bytes of each 4 KB frame, so that a scan for
//! zero-filled pages (HawkEye's bloat recovery, Linux's THP shrinker) finds what a real
//! one would and costs what it would.
//!
//! A frame is either all zero or has its first non-zero byte at an offset `k` (frame
//! metadata, `frame.rs`). Allocation for a process clears a frame (or takes a pre-zeroed
//! one): its content is zero and nobody has written it. The first write of the mapping
//! process decides the content, drawn per process from its [`WriteContent`]: with
//! probability `nonzero_share` the page holds data whose first non-zero byte lies at a
//! geometric offset of mean `mean_first_nonzero`, else the write left it zero. Later writes
//! do not change it (a page written with zeros and then with data stays zero in the
//! model: the first write to a page after it is allocated decides).
//!
//! Choices where the papers are silent:
//! - The distribution of the first non-zero byte. HawkEye (section 3.2, Figure 3) gives
//!   only the mean over 56 workloads, 9.11 bytes; the figure's per-suite bars are not in
//!   its text. The model draws a geometric offset with that mean, `P(k) = p (1 - p)^k`,
//!   `p = 1 / (mean + 1)`, capped at 4095: most data pages have a non-zero byte within the
//!   first cache line, a few have long zero prefixes. A scan's cost depends on the mean
//!   only (bytes scanned are linear in `k`), so the shape matters little.
//! - The draw is a hash of (the kernel's seed, pid, virtual page), not a generator's next
//!   value: the same page of the same process always gets the same content, whatever the
//!   order in which pages are first written (sampled mode writes pages in another order
//!   than exact mode), so runs stay deterministic. The offset is read from a table of the
//!   distribution's quantiles at 65,536 levels (built once per mean, [`Quantiles`]), so
//!   a first write costs a hash and a load, not a logarithm; the table cuts the tail off
//!   at probability 2^-17 (113 bytes at the default mean).
//!
//! This module owns the draw and the scan arithmetic; frames and PTEs store the result.

use crate::error::{MmError, Result};
use hugemm_hw::{Pid, Vpn};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// HawkEye's measured mean distance to the first non-zero byte of an in-use 4 KB page
/// (section 3.2, Figure 3: 9.11 bytes over 56 workloads).
pub const HAWKEYE_MEAN_FIRST_NONZERO: f64 = 9.11;

/// What a process's first write to a page leaves in it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct WriteContent {
    /// Share of first writes that leave data in the page (1: every written page holds
    /// data; 0: the process writes zeros, as a JVM or a VMM pre-touching memory does).
    pub nonzero_share: f64,
    /// Mean offset of the first non-zero byte of a page holding data, in bytes.
    pub mean_first_nonzero: f64,
}

impl Default for WriteContent {
    /// Every written page holds data, with HawkEye's measured mean first non-zero byte.
    fn default() -> Self {
        WriteContent {
            nonzero_share: 1.0,
            mean_first_nonzero: HAWKEYE_MEAN_FIRST_NONZERO,
        }
    }
}

impl WriteContent {
    /// Writes of zeros only.
    pub const ZEROS: WriteContent = WriteContent {
        nonzero_share: 0.0,
        mean_first_nonzero: HAWKEYE_MEAN_FIRST_NONZERO,
    };

    /// Check the share is in 0..=1 and the mean in 0..=4095.
    pub fn validate(&self) -> Result<()> {
        if !(0.0..=1.0).contains(&self.nonzero_share) {
            return Err(MmError::InvalidConfig {
                what: "nonzero_share must be between 0 and 1",
            });
        }
        if !(0.0..=4095.0).contains(&self.mean_first_nonzero) {
            return Err(MmError::InvalidConfig {
                what: "mean_first_nonzero must be between 0 and 4095 bytes",
            });
        }
        Ok(())
    }
}

/// Levels of the quantile table (a power of two: indexed by the top bits of a hash).
const LEVELS_LOG2: u32 = 16;

/// The offsets of the first non-zero byte at 2^16 evenly spaced quantiles of the
/// geometric distribution of one mean.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Quantiles {
    mean: f64,
    offsets: Arc<[u16]>,
}

impl Quantiles {
    /// The table for `mean` (0: every offset is 0).
    pub fn new(mean: f64) -> Quantiles {
        let p = 1.0 / (mean.max(0.0) + 1.0);
        let ln_q = (1.0 - p).ln();
        let levels = 1usize << LEVELS_LOG2;
        let offsets = (0..levels)
            .map(|j| {
                if ln_q == 0.0 {
                    return 0;
                }
                // The quantile at the middle of level j: P(offset >= k) = q^k.
                let u = (j as f64 + 0.5) / levels as f64;
                (u.ln() / ln_q).floor().min(4095.0) as u16
            })
            .collect();
        Quantiles { mean, offsets }
    }

    /// The mean it was built for.
    pub fn mean(&self) -> f64 {
        self.mean
    }
}

/// A process's [`WriteContent`] prepared for drawing.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ContentDraw {
    /// A hash word below this leaves data (`nonzero_share` of the range).
    threshold: u64,
    quantiles: Quantiles,
    seed: u64,
}

impl ContentDraw {
    /// The draw of `c` for `pid`; `quantiles` must be the table of `c`'s mean.
    pub fn new(c: WriteContent, seed: u64, pid: Pid, quantiles: Quantiles) -> ContentDraw {
        let threshold = if c.nonzero_share >= 1.0 {
            u64::MAX
        } else {
            (c.nonzero_share.max(0.0) * u64::MAX as f64) as u64
        };
        ContentDraw {
            threshold,
            quantiles,
            seed: mix(seed ^ mix(pid.0 as u64 ^ 0x636f_6e74_656e_7473)),
        }
    }

    /// The content the first write of page `vpn` leaves: `None` all zero, `Some(k)` the
    /// first non-zero byte at `k`.
    #[inline]
    pub fn draw(&self, vpn: Vpn) -> Option<u16> {
        let h = mix(self.seed ^ vpn.0);
        if self.threshold != u64::MAX && h >= self.threshold {
            return None;
        }
        // A second, independent word picks the quantile.
        let level = (mix(h) >> (64 - LEVELS_LOG2)) as usize;
        Some(self.quantiles.offsets[level])
    }
}

/// A well-mixed 64-bit hash of `z`: SplitMix64's first output from state `z`.
fn mix(z: u64) -> u64 {
    use rand::{RngCore, SeedableRng};
    rand_xoshiro::SplitMix64::seed_from_u64(z).next_u64()
}

/// Bytes a scan for a zero-filled page reads from a page whose first non-zero byte is
/// `first_nonzero` (`None`: the whole page), stopping at that byte (`memchr_inv`).
pub(crate) fn bytes_scanned(first_nonzero: Option<u16>, page_bytes: u64) -> u64 {
    match first_nonzero {
        None => page_bytes,
        Some(k) => (k as u64 + 1).min(page_bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draw(c: WriteContent, seed: u64, pid: Pid) -> ContentDraw {
        ContentDraw::new(c, seed, pid, Quantiles::new(c.mean_first_nonzero))
    }

    #[test]
    fn the_draw_is_a_function_of_the_page() {
        let d = draw(WriteContent::default(), 7, Pid(3));
        assert_eq!(d.draw(Vpn(12345)), d.draw(Vpn(12345)));
        let other = draw(WriteContent::default(), 7, Pid(4));
        let differ = (0..64)
            .filter(|&v| d.draw(Vpn(v)) != other.draw(Vpn(v)))
            .count();
        assert!(
            differ > 32,
            "another process draws independently ({differ} of 64)"
        );
    }

    #[test]
    fn the_mean_first_nonzero_byte_is_the_configured_mean() {
        let d = draw(WriteContent::default(), 1, Pid(1));
        let n = 200_000;
        let sum: u64 = (0..n).map(|v| d.draw(Vpn(v)).expect("data") as u64).sum();
        let mean = sum as f64 / n as f64;
        assert!((mean - 9.11).abs() < 0.1, "mean {mean}");
    }

    #[test]
    fn the_share_of_data_pages_is_the_configured_share() {
        let c = WriteContent {
            nonzero_share: 0.25,
            ..WriteContent::default()
        };
        let d = draw(c, 1, Pid(1));
        let data = (0..100_000).filter(|&v| d.draw(Vpn(v)).is_some()).count();
        assert!((24_000..26_000).contains(&data), "{data}");
        let zeros = draw(WriteContent::ZEROS, 1, Pid(1));
        assert!((0..1000).all(|v| zeros.draw(Vpn(v)).is_none()));
        let first = draw(
            WriteContent {
                mean_first_nonzero: 0.0,
                ..WriteContent::default()
            },
            1,
            Pid(1),
        );
        assert!((0..1000).all(|v| first.draw(Vpn(v)) == Some(0)));
    }

    #[test]
    fn the_quantile_table_follows_the_geometric_distribution() {
        let q = Quantiles::new(9.11);
        let mean = q.offsets.iter().map(|&k| k as f64).sum::<f64>() / q.offsets.len() as f64;
        assert!((mean - 9.11).abs() < 0.05, "table mean {mean}");
        // P(offset = 0) = p = 1 / 10.11.
        let zero = q.offsets.iter().filter(|&&k| k == 0).count() as f64;
        assert!((zero / q.offsets.len() as f64 - 1.0 / 10.11).abs() < 0.001);
        let long = draw(
            WriteContent {
                mean_first_nonzero: 4095.0,
                ..WriteContent::default()
            },
            3,
            Pid(1),
        );
        assert!((0..1000)
            .filter_map(|v| long.draw(Vpn(v)))
            .any(|k| k == 4095));
    }

    #[test]
    fn a_scan_stops_at_the_first_nonzero_byte() {
        assert_eq!(bytes_scanned(None, 4096), 4096);
        assert_eq!(bytes_scanned(Some(0), 4096), 1);
        assert_eq!(bytes_scanned(Some(9), 4096), 10);
    }

    #[test]
    fn bad_content_is_refused() {
        assert!(WriteContent::default().validate().is_ok());
        let bad = WriteContent {
            nonzero_share: 1.5,
            ..WriteContent::default()
        };
        assert!(bad.validate().is_err());
        let bad = WriteContent {
            mean_first_nonzero: f64::NAN,
            ..WriteContent::default()
        };
        assert!(bad.validate().is_err());
    }
}
