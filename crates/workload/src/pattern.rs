//! Address streams: turning a [`Pattern`] into byte offsets inside a buffer, one reference
//! at a time, and describing what a run of skipped references would have touched.
//!
//! The stream is the per-reference hot path of the simulator, so generating an offset is a
//! handful of integer operations. For sampled simulation a stream can also skip `n`
//! references without generating them; [`Stream::skip`] reports their footprint either as
//! an exact page range (sequential sweeps) or as a per-page probability of having been
//! touched ([`Stream::page_probability`]), which the engine applies to first touches and
//! accessed bits. A sweep interleaved with gathers ([`Pattern::SweepGather`]) reports
//! both: the sweep's pages exactly and the gathers as random references.

use crate::spec::Pattern;
use rand::RngCore;
use rand_distr::{Distribution, Zipf};
use sweep_gather::SweepGather;

mod sweep_gather;

/// Bytes in a cache line: the granularity of generated offsets.
pub const LINE: u64 = 64;
/// Bytes in a base page: the granularity of skip coverage.
pub const PAGE: u64 = 4096;

/// Uniform integer in `0..n` from a 64-bit random word (Lemire's multiply-shift; the bias
/// is below 2^-40 for the sizes used here).
#[inline]
fn below(x: u64, n: u64) -> u64 {
    ((x as u128 * n as u128) >> 64) as u64
}

/// The footprint of skipped references.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SkipCoverage {
    /// Every page in `first_page .. first_page + pages` (taken modulo the buffer's pages)
    /// was touched, with probability 1.
    Pages {
        /// First page touched.
        first_page: u64,
        /// Number of consecutive pages touched (at most the buffer's pages).
        pages: u64,
    },
    /// Each page `p` was touched with probability `page_probability(p, refs)`,
    /// independently.
    Random {
        /// Number of references skipped.
        refs: u64,
    },
    /// Both: every page of up to two ranges `(first_page, pages)` was touched (a sweep
    /// that wrapped inside its part of the buffer gives two), and `refs` random
    /// references were drawn as [`SkipCoverage::Random`] says (for
    /// [`Pattern::SweepGather`], [`Stream::page_share`] is the share of one gather).
    Mixed {
        /// Swept page ranges, `(first_page, pages)`; `pages` may be 0.
        swept: [(u64, u64); 2],
        /// Random references skipped.
        refs: u64,
    },
}

/// A generator of offsets for one access phase over one buffer.
#[derive(Clone, Debug)]
pub struct Stream {
    pattern: Pattern,
    len: u64,
    lines: u64,
    pages: u64,
    cursor: u64,
    zipf: Option<ZipfPages>,
    hot: Option<HotRange>,
    sg: Option<SweepGather>,
    chase: Option<ChaseOrder>,
}

#[derive(Clone, Debug)]
struct ZipfPages {
    dist: Zipf<f64>,
    start_page: u64,
    exponent: f64,
    norm: f64,
}

#[derive(Clone, Copy, Debug)]
struct HotRange {
    first_line: u64,
    lines: u64,
    share_threshold: u64,
    hot_share: f64,
}

/// The order of a [`Pattern::Chase`]: a bijection of `0..lines` built from a bijection of
/// the `bits`-bit integers (`lines` rounded up to a power of two) by cycle-walking (values
/// at or above `lines` are mapped again until they fall inside, which keeps it a
/// bijection). The bijection is two rounds of multiplying by an odd constant and folding
/// the high half into the low half, each invertible modulo `2^bits`, so the order needs no
/// table (a membench-style permutation of 128 M lines would take 512 MB). The order is a
/// fixed function of the buffer's line count, not of the seed: any pseudo-random order
/// serves, and two chases over buffers of one size follow the same one.
#[derive(Clone, Copy, Debug)]
struct ChaseOrder {
    lines: u64,
    mask: u64,
    shift: u32,
}

impl ChaseOrder {
    fn new(lines: u64) -> ChaseOrder {
        let bits = 64 - (lines - 1).leading_zeros();
        ChaseOrder {
            lines,
            mask: if bits >= 64 {
                u64::MAX
            } else {
                (1 << bits) - 1
            },
            shift: (bits / 2).max(1),
        }
    }

    /// A bijection of `0..=mask`.
    #[inline]
    fn mix(&self, mut x: u64) -> u64 {
        x = x.wrapping_mul(0x9E37_79B9_7F4A_7C15) & self.mask;
        x ^= x >> self.shift;
        x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9) & self.mask;
        x ^= x >> self.shift;
        x
    }

    /// The `i`-th line of a round (`i < lines`).
    #[inline]
    fn line(&self, i: u64) -> u64 {
        let mut x = self.mix(i);
        while x >= self.lines {
            x = self.mix(x);
        }
        x
    }
}

impl Stream {
    /// A stream over a buffer of `len` bytes (at least one page).
    ///
    /// Returns `None` if the pattern's parameters are out of range (the configuration layer
    /// validates them first; this is the backstop).
    pub fn new(pattern: Pattern, len: u64) -> Option<Stream> {
        if len < PAGE {
            return None;
        }
        let (lines, pages) = (len / LINE, len / PAGE);
        let mut s = Stream {
            pattern,
            len,
            lines,
            pages,
            cursor: 0,
            zipf: None,
            hot: None,
            sg: None,
            chase: None,
        };
        match pattern {
            Pattern::Uniform => {}
            Pattern::Chase => s.chase = Some(ChaseOrder::new(lines)),
            Pattern::Sequential { stride } => {
                if stride == 0 {
                    return None;
                }
            }
            Pattern::Zipf { exponent, position } => {
                if !(exponent > 0.0 && (0.0..=1.0).contains(&position)) {
                    return None;
                }
                let dist = Zipf::new(pages, exponent).ok()?;
                let start_page = ((position * pages as f64) as u64).min(pages - 1);
                let norm = harmonic(pages, exponent);
                s.zipf = Some(ZipfPages {
                    dist,
                    start_page,
                    exponent,
                    norm,
                });
            }
            Pattern::HotRange {
                hot_fraction,
                hot_share,
                position,
            } => {
                let ok = |f: f64| (0.0..=1.0).contains(&f);
                if !(ok(hot_fraction) && ok(hot_share) && ok(position)) {
                    return None;
                }
                let hot_lines = ((hot_fraction * lines as f64) as u64).clamp(1, lines);
                let first_line = ((position * lines as f64) as u64).min(lines - hot_lines);
                let share_threshold = (hot_share * u64::MAX as f64) as u64;
                s.hot = Some(HotRange {
                    first_line,
                    lines: hot_lines,
                    share_threshold,
                    hot_share,
                });
            }
            Pattern::SweepGather { .. } => s.sg = Some(SweepGather::new(pattern, len)?),
        }
        Some(s)
    }

    /// The pattern this stream follows.
    pub fn pattern(&self) -> Pattern {
        self.pattern
    }

    /// Pages in the buffer.
    pub fn pages(&self) -> u64 {
        self.pages
    }

    /// The byte offset of the next reference.
    #[inline(always)]
    pub fn next_offset(&mut self, rng: &mut impl RngCore) -> u64 {
        match self.pattern {
            Pattern::Uniform => below(rng.next_u64(), self.lines) * LINE,
            Pattern::Chase => self.next_chase(),
            Pattern::Sequential { stride } => {
                let off = self.cursor;
                self.cursor += stride;
                if self.cursor >= self.len {
                    self.cursor -= self.len;
                }
                off
            }
            Pattern::Zipf { .. } => self.next_zipf(rng),
            Pattern::HotRange { .. } => self.next_hot(rng),
            Pattern::SweepGather { .. } => self.next_sweep_gather(rng),
        }
    }

    #[inline]
    fn next_sweep_gather(&mut self, rng: &mut impl RngCore) -> u64 {
        let g = self
            .sg
            .as_mut()
            .expect("sweep-gather stream has its ranges");
        g.count += 1;
        if g.count >= g.every {
            g.count = 0;
            return (g.gather_first_line + below(rng.next_u64(), g.gather_lines)) * LINE;
        }
        let off = g.sweep_start + self.cursor;
        self.cursor += g.stride;
        if self.cursor >= g.sweep_len {
            self.cursor -= g.sweep_len;
        }
        off
    }

    /// The chase's next line: the `cursor`-th of its round (the cursor counts lines).
    #[inline]
    fn next_chase(&mut self) -> u64 {
        let order = self.chase.expect("chase stream has its order");
        let line = order.line(self.cursor);
        self.cursor += 1;
        if self.cursor == self.lines {
            self.cursor = 0;
        }
        line * LINE
    }

    fn next_zipf(&mut self, rng: &mut impl RngCore) -> u64 {
        let z = self
            .zipf
            .as_ref()
            .expect("zipf stream has its distribution");
        let rank = z.dist.sample(rng) as u64 - 1;
        let page = (z.start_page + rank) % self.pages;
        page * PAGE + below(rng.next_u64(), PAGE / LINE) * LINE
    }

    fn next_hot(&mut self, rng: &mut impl RngCore) -> u64 {
        let h = self.hot.expect("hot-range stream has its range");
        let (coin, pick) = (rng.next_u64(), rng.next_u64());
        if coin < h.share_threshold {
            (h.first_line + below(pick, h.lines)) * LINE
        } else {
            below(pick, self.lines) * LINE
        }
    }

    /// Skip `refs` references without generating them; say what they touched.
    pub fn skip(&mut self, refs: u64) -> SkipCoverage {
        match self.pattern {
            Pattern::Sequential { stride } => {
                let first_page = self.cursor / PAGE;
                let bytes = refs.saturating_mul(stride);
                let end = self.cursor.saturating_add(bytes);
                let last_page = end.saturating_sub(1) / PAGE;
                let pages = if refs == 0 {
                    0
                } else {
                    (last_page - first_page + 1).min(self.pages)
                };
                self.cursor = ((self.cursor as u128 + bytes as u128) % self.len as u128) as u64;
                SkipCoverage::Pages { first_page, pages }
            }
            Pattern::SweepGather { .. } => {
                let g = self
                    .sg
                    .as_mut()
                    .expect("sweep-gather stream has its ranges");
                let total = u64::from(g.count) + refs;
                let gathers = total / u64::from(g.every);
                g.count = (total % u64::from(g.every)) as u32;
                let g = *g;
                let swept = g.swept(self.cursor, refs - gathers);
                let bytes = (refs - gathers) as u128 * g.stride as u128;
                self.cursor = ((self.cursor as u128 + bytes) % g.sweep_len as u128) as u64;
                SkipCoverage::Mixed {
                    swept,
                    refs: gathers,
                }
            }
            Pattern::Chase => {
                // The lines skipped are distinct within a round; reported as independent
                // uniform references, which touch slightly fewer distinct pages than the
                // chase does (a choice: the engine's sampled coverage has no "without
                // replacement" form).
                self.cursor = ((self.cursor as u128 + refs as u128) % self.lines as u128) as u64;
                SkipCoverage::Random { refs }
            }
            _ => SkipCoverage::Random { refs },
        }
    }

    /// The probability that one reference falls in page `page`.
    pub fn page_share(&self, page: u64) -> f64 {
        match self.pattern {
            Pattern::Uniform | Pattern::Chase => 1.0 / self.pages as f64,
            Pattern::Sequential { .. } => 1.0 / self.pages as f64,
            Pattern::Zipf { .. } => {
                let z = self
                    .zipf
                    .as_ref()
                    .expect("zipf stream has its distribution");
                let rank = (page + self.pages - z.start_page) % self.pages + 1;
                (rank as f64).powf(-z.exponent) / z.norm
            }
            Pattern::HotRange { .. } => {
                let h = self.hot.expect("hot-range stream has its range");
                let lines_per_page = PAGE / LINE;
                let (first, last) = (page * lines_per_page, (page + 1) * lines_per_page);
                let overlap = last
                    .min(h.first_line + h.lines)
                    .saturating_sub(first.max(h.first_line));
                let hot = h.hot_share * overlap as f64 / h.lines as f64;
                hot + (1.0 - h.hot_share) / self.pages as f64
            }
            Pattern::SweepGather { .. } => {
                let g = self.sg.expect("sweep-gather stream has its ranges");
                let lines_per_page = PAGE / LINE;
                let (first, last) = (page * lines_per_page, (page + 1) * lines_per_page);
                let overlap = last
                    .min(g.gather_first_line + g.gather_lines)
                    .saturating_sub(first.max(g.gather_first_line));
                overlap as f64 / g.gather_lines as f64
            }
        }
    }

    /// The pages the pattern can reference (its working set, given a long enough run):
    /// the whole buffer, except a hot range taking every reference and a sweep with
    /// gathers, which reach only their ranges. For sequential strides above a page this
    /// is an upper bound.
    pub fn reach_pages(&self) -> u64 {
        match self.pattern {
            Pattern::HotRange { hot_share, .. } if hot_share >= 1.0 => {
                let h = self.hot.expect("hot-range stream has its range");
                lines_to_pages(h.first_line, h.lines)
            }
            Pattern::SweepGather { .. } => {
                let g = self.sg.expect("sweep-gather stream has its ranges");
                let gather = page_span(g.gather_first_line * LINE, g.gather_lines * LINE);
                if g.every == 1 {
                    return gather.1 - gather.0;
                }
                let sweep = page_span(g.sweep_start, g.sweep_len);
                let overlap = sweep.1.min(gather.1).saturating_sub(sweep.0.max(gather.0));
                (sweep.1 - sweep.0) + (gather.1 - gather.0) - overlap
            }
            _ => self.pages,
        }
    }

    /// The probability that page `page` was touched by at least one of `refs` skipped
    /// references (references drawn independently).
    pub fn page_probability(&self, page: u64, refs: u64) -> f64 {
        at_least_once(self.page_share(page), refs)
    }

    /// The probability that page `page` was written by at least one of `refs` skipped
    /// references, a `write_fraction` of which are writes.
    pub fn page_write_probability(&self, page: u64, refs: u64, write_fraction: f64) -> f64 {
        at_least_once(self.page_share(page) * write_fraction, refs)
    }
}

/// The pages `[first, end)` holding the bytes `[start, start + len)`, `len > 0`.
fn page_span(start: u64, len: u64) -> (u64, u64) {
    (start / PAGE, (start + len - 1) / PAGE + 1)
}

/// The number of pages holding `lines` lines from `first_line`.
fn lines_to_pages(first_line: u64, lines: u64) -> u64 {
    let (a, b) = page_span(first_line * LINE, lines * LINE);
    b - a
}

/// The probability that an event of probability `q` per draw happens at least once in
/// `refs` independent draws: 1 - (1 - q)^refs, computed without cancellation.
fn at_least_once(q: f64, refs: u64) -> f64 {
    let q = q.min(1.0);
    if q >= 1.0 {
        return 1.0;
    }
    -((refs as f64) * (-q).ln_1p()).exp_m1()
}

/// The generalised harmonic number H(n, s) = sum over k = 1..=n of k^-s: exact for the
/// first 10,000 terms, Euler-Maclaurin for the tail (relative error below 1e-9 there).
fn harmonic(n: u64, s: f64) -> f64 {
    const EXACT: u64 = 10_000;
    let head: f64 = (1..=n.min(EXACT)).map(|k| (k as f64).powf(-s)).sum();
    if n <= EXACT {
        return head;
    }
    let (a, b) = (EXACT as f64, n as f64);
    let f = |x: f64| x.powf(-s);
    let integral = if (s - 1.0).abs() < 1e-12 {
        (b / a).ln()
    } else {
        (b.powf(1.0 - s) - a.powf(1.0 - s)) / (1.0 - s)
    };
    // Sum over k = a+1..=b of f(k) ~ integral + (f(b) - f(a))/2 - (f'(b) - f'(a))/12.
    let fp = |x: f64| -s * x.powf(-s - 1.0);
    head + integral + (f(b) - f(a)) / 2.0 + (fp(b) - fp(a)) / 12.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    const MB: u64 = 1 << 20;

    fn rng() -> Xoshiro256PlusPlus {
        Xoshiro256PlusPlus::seed_from_u64(7)
    }

    #[test]
    fn uniform_offsets_stay_inside_the_buffer_and_line_aligned() {
        let mut s = Stream::new(Pattern::Uniform, 3 * MB).unwrap();
        let mut r = rng();
        for _ in 0..10_000 {
            let o = s.next_offset(&mut r);
            assert!(o < 3 * MB && o.is_multiple_of(LINE));
        }
    }

    #[test]
    fn a_chase_visits_every_line_once_a_round_in_the_same_scattered_order() {
        // 3 MB + a page: a line count that is not a power of two, so cycle-walking runs.
        let len = 3 * MB + PAGE;
        let lines = len / LINE;
        let mut s = Stream::new(Pattern::Chase, len).unwrap();
        let mut r = rng();
        let round: Vec<u64> = (0..lines).map(|_| s.next_offset(&mut r) / LINE).collect();
        let mut seen = vec![false; lines as usize];
        for &l in &round {
            assert!(l < lines && !seen[l as usize], "line {l} twice in a round");
            seen[l as usize] = true;
        }
        let again: Vec<u64> = (0..lines).map(|_| s.next_offset(&mut r) / LINE).collect();
        assert_eq!(round, again, "every round follows the same order");
        // Scattered: consecutive references are rarely in one page, and the low bits (a
        // cache's set index) of the first 4096 references cover the 64 sets evenly.
        let same_page = round.windows(2).filter(|w| w[0] / 64 == w[1] / 64).count();
        assert!(
            same_page < round.len() / 100,
            "{same_page} neighbours share a page"
        );
        let mut sets = [0u32; 64];
        for &l in &round[..4096] {
            sets[(l % 64) as usize] += 1;
        }
        assert!(sets.iter().all(|&n| (32..=96).contains(&n)), "{sets:?}");
    }

    #[test]
    fn skipping_part_of_a_chase_resumes_where_the_round_would_be() {
        let mut a = Stream::new(Pattern::Chase, MB).unwrap();
        let mut b = a.clone();
        let mut r = rng();
        for _ in 0..1000 {
            a.next_offset(&mut r);
        }
        assert_eq!(b.skip(1000), SkipCoverage::Random { refs: 1000 });
        for _ in 0..20_000 {
            assert_eq!(a.next_offset(&mut r), b.next_offset(&mut r));
        }
        assert_eq!(a.page_share(3), 1.0 / a.pages() as f64);
    }

    #[test]
    fn sequential_wraps_and_skip_reports_the_range_it_covered() {
        let mut s = Stream::new(Pattern::Sequential { stride: PAGE }, 4 * PAGE).unwrap();
        let mut r = rng();
        let got: Vec<u64> = (0..5).map(|_| s.next_offset(&mut r)).collect();
        assert_eq!(got, vec![0, PAGE, 2 * PAGE, 3 * PAGE, 0]);
        assert_eq!(
            s.skip(2),
            SkipCoverage::Pages {
                first_page: 1,
                pages: 2
            }
        );
        assert_eq!(s.next_offset(&mut r), 3 * PAGE);
        assert_eq!(
            s.skip(100),
            SkipCoverage::Pages {
                first_page: 0,
                pages: 4
            }
        );
    }

    #[test]
    fn hot_range_sends_its_share_of_references_to_the_hot_range() {
        let p = Pattern::HotRange {
            hot_fraction: 0.1,
            hot_share: 0.9,
            position: 1.0,
        };
        let mut s = Stream::new(p, 100 * MB).unwrap();
        let mut r = rng();
        let n = 100_000;
        let hot = (0..n).filter(|_| s.next_offset(&mut r) >= 90 * MB).count();
        // 0.9 hot + 0.1 * 0.1 of the uniform rest lands in the top 10%.
        let expect = 0.91 * n as f64;
        assert!((hot as f64 - expect).abs() < 0.01 * n as f64, "hot {hot}");
    }

    #[test]
    fn zipf_hottest_page_is_at_the_chosen_position() {
        let p = Pattern::Zipf {
            exponent: 1.2,
            position: 0.5,
        };
        let mut s = Stream::new(p, 64 * MB).unwrap();
        let mut r = rng();
        let mut counts = vec![0u32; s.pages() as usize];
        for _ in 0..50_000 {
            counts[(s.next_offset(&mut r) / PAGE) as usize] += 1;
        }
        let hottest = counts
            .iter()
            .enumerate()
            .max_by_key(|(_, c)| **c)
            .unwrap()
            .0 as u64;
        assert_eq!(hottest, s.pages() / 2);
        let share = s.page_share(hottest);
        let observed = counts[hottest as usize] as f64 / 50_000.0;
        assert!(
            (share - observed).abs() < 0.02,
            "model {share} observed {observed}"
        );
    }

    #[test]
    fn page_shares_sum_to_one() {
        let patterns = [
            Pattern::Uniform,
            Pattern::Zipf {
                exponent: 0.9,
                position: 0.2,
            },
            Pattern::HotRange {
                hot_fraction: 0.25,
                hot_share: 0.8,
                position: 0.3,
            },
        ];
        for p in patterns {
            let s = Stream::new(p, 32 * MB).unwrap();
            let total: f64 = (0..s.pages()).map(|pg| s.page_share(pg)).sum();
            assert!((total - 1.0).abs() < 1e-6, "{p:?}: {total}");
        }
    }

    #[test]
    fn harmonic_tail_approximation_matches_the_exact_sum() {
        for s in [0.6, 1.0, 1.5] {
            let n = 50_000;
            let exact: f64 = (1..=n).map(|k| (k as f64).powf(-s)).sum();
            assert!((harmonic(n, s) - exact).abs() / exact < 1e-9, "s={s}");
        }
    }

    #[test]
    fn touch_probability_grows_with_skipped_references() {
        let s = Stream::new(Pattern::Uniform, 4 * MB).unwrap();
        let (p1, p2) = (s.page_probability(0, 100), s.page_probability(0, 10_000));
        assert!(0.0 < p1 && p1 < p2 && p2 <= 1.0);
        assert!((p1 - (1.0 - (1.0 - 1.0 / 1024.0f64).powi(100))).abs() < 1e-12);
    }

    fn spmv(every: u32) -> Pattern {
        Pattern::SweepGather {
            stride: 8,
            sweep_position: 0.0,
            sweep_fraction: 0.5,
            gather_position: 0.75,
            gather_fraction: 0.25,
            every,
        }
    }

    #[test]
    fn sweep_gather_interleaves_a_sweep_with_gathers_into_their_range() {
        let mut s = Stream::new(spmv(3), 8 * MB).unwrap();
        let mut r = rng();
        let got: Vec<u64> = (0..9).map(|_| s.next_offset(&mut r)).collect();
        for (i, o) in got.iter().enumerate() {
            if i % 3 == 2 {
                assert!((6 * MB..8 * MB).contains(o) && o % LINE == 0, "gather {o}");
            } else {
                assert_eq!(*o, (i as u64 - i as u64 / 3) * 8, "sweep {i}");
            }
        }
        // Gathers only, uniform over their quarter of the buffer.
        let mut g = Stream::new(spmv(1), 8 * MB).unwrap();
        let high = (0..10_000)
            .filter(|_| g.next_offset(&mut r) >= 7 * MB)
            .count();
        assert!(
            (4_500..5_500).contains(&high),
            "upper half of the range {high}"
        );
    }

    #[test]
    fn sweep_gather_skip_reports_swept_pages_and_gathers_and_keeps_the_cycle() {
        let len = 8 * PAGE;
        let p = Pattern::SweepGather {
            stride: PAGE,
            sweep_position: 0.25,
            sweep_fraction: 0.5,
            gather_position: 0.0,
            gather_fraction: 0.25,
            every: 2,
        };
        let mut s = Stream::new(p, len).unwrap();
        let mut r = rng();
        assert_eq!(s.next_offset(&mut r), 2 * PAGE);
        // 5 more: references 2..=6 of the cycle; gathers at 2, 4, 6.
        assert_eq!(
            s.skip(5),
            SkipCoverage::Mixed {
                swept: [(3, 2), (0, 0)],
                refs: 3
            }
        );
        // Sweep at page 5, then wraps to page 2 inside the swept half.
        assert_eq!(s.next_offset(&mut r), 5 * PAGE);
        assert!(s.next_offset(&mut r) < 2 * PAGE, "a gather");
        assert_eq!(s.next_offset(&mut r), 2 * PAGE);
        assert_eq!(
            s.skip(6),
            SkipCoverage::Mixed {
                swept: [(3, 3), (0, 0)],
                refs: 3
            }
        );
        // From page 2 again: one sweep, then one more, then three that wrap.
        let mixed = |a: (u64, u64), b: (u64, u64), refs: u64| SkipCoverage::Mixed {
            swept: [a, b],
            refs,
        };
        assert_eq!(s.skip(3), mixed((2, 1), (0, 0), 2));
        assert_eq!(s.skip(2), mixed((3, 1), (0, 0), 1));
        assert_eq!(s.skip(6), mixed((4, 2), (2, 1), 3));
        assert_eq!(
            s.skip(20),
            SkipCoverage::Mixed {
                swept: [(2, 4), (0, 0)],
                refs: 10
            }
        );
    }

    #[test]
    fn reach_is_the_ranges_a_pattern_can_reference() {
        assert_eq!(
            Stream::new(Pattern::Uniform, 8 * MB).unwrap().reach_pages(),
            2048
        );
        // Sweep over the first half, gathers over the last quarter.
        assert_eq!(Stream::new(spmv(3), 8 * MB).unwrap().reach_pages(), 1536);
        assert_eq!(Stream::new(spmv(1), 8 * MB).unwrap().reach_pages(), 512);
        let only_hot = Pattern::HotRange {
            hot_fraction: 0.25,
            hot_share: 1.0,
            position: 1.0,
        };
        assert_eq!(Stream::new(only_hot, 8 * MB).unwrap().reach_pages(), 512);
    }

    #[test]
    fn sweep_gather_page_shares_are_the_gathers() {
        let s = Stream::new(spmv(3), 8 * MB).unwrap();
        let total: f64 = (0..s.pages()).map(|pg| s.page_share(pg)).sum();
        assert!((total - 1.0).abs() < 1e-9);
        assert_eq!(s.page_share(0), 0.0);
        assert!(s.page_share(s.pages() - 1) > 0.0);
    }

    #[test]
    fn bad_parameters_are_refused() {
        assert!(Stream::new(spmv(0), MB).is_none());
        assert!(Stream::new(Pattern::Sequential { stride: 0 }, MB).is_none());
        assert!(Stream::new(
            Pattern::Zipf {
                exponent: -1.0,
                position: 0.0
            },
            MB
        )
        .is_none());
        assert!(Stream::new(Pattern::Uniform, 100).is_none());
    }
}
