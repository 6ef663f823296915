//! A set-associative array with bit-PLRU replacement (the "MRU-bit" scheme): the
//! replacement of the modelled data caches.
//!
//! Each way has one *used* bit. A hit or a fill sets it; when that would set every bit of
//! the set, the others are cleared instead. The victim is the lowest-numbered way whose
//! bit is clear. This is the pseudo-LRU that Intel and AMD describe for their L1/L2 caches
//! (and that the literature calls PLRUm or NRU); last-level caches use adaptive variants
//! of it rather than true LRU. It keeps one tag scan and one mask update per access,
//! where exact LRU must reorder ages on every hit: the caches are probed several times per
//! simulated reference, so this is where the model's speed comes from.
//!
//! A lookup compares one-byte fingerprints of the set's tags eight at a time (the SWAR
//! helpers of `lruset.rs`) and checks the full tag only where a fingerprint matches.
//! Tags must never equal [`EMPTY`]; sets are indexed by the tag's low bits (see
//! `cache.rs`). This module knows nothing of what tags mean.

use crate::lruset::{eq_bytes, fingerprint, ONES};

/// The tag of an empty way.
pub const EMPTY: u64 = u64::MAX;

/// Ways per fingerprint word.
const LANES: usize = 8;

/// A bit-PLRU set-associative array of `u64` tags.
///
/// Layout: one record per set holding the used mask, the fingerprint words and the tags,
/// in that order and unpadded, so one base address and one bounds check serve a whole
/// access, and a miss, the common case in the large levels, reads the mask and
/// fingerprints (the record's first bytes) and writes one tag; other tags are read only
/// where a fingerprint matches. Ways past `ways` in the last fingerprint word are padding:
/// their tag is [`EMPTY`], which no looked-up tag equals, and they are never victims.
#[derive(Clone, Debug)]
pub struct PlruArray {
    sets: Sets,
    ways: usize,
    set_mask: u64,
    full: u64,
}

/// One set of `W` fingerprint words (up to `8 * W` ways).
#[derive(Clone, Debug)]
#[repr(C)]
struct PlruSet<const W: usize> {
    used: u64,
    fps: [u64; W],
    tags: [[u64; LANES]; W],
}

/// The sets of an array, by fingerprint words per set, so the per-set code is unrolled
/// and indexed without further bounds checks.
#[derive(Clone, Debug)]
enum Sets {
    W1(Vec<PlruSet<1>>),
    W2(Vec<PlruSet<2>>),
    W3(Vec<PlruSet<3>>),
    W8(Vec<PlruSet<8>>),
}

/// Runs `$body` with `$v` bound to the array's `Vec<PlruSet<W>>`, whatever `W`.
macro_rules! each {
    ($sets:expr, $v:ident => $body:expr) => {
        match $sets {
            Sets::W1($v) => $body,
            Sets::W2($v) => $body,
            Sets::W3($v) => $body,
            Sets::W8($v) => $body,
        }
    };
}

impl<const W: usize> PlruSet<W> {
    /// An empty set: nothing used, every tag [`EMPTY`].
    fn empty() -> Self {
        PlruSet {
            used: 0,
            fps: [u64::from(fingerprint(EMPTY)) * ONES; W],
            tags: [[EMPTY; LANES]; W],
        }
    }

    /// The way holding `tag` (fingerprint broadcast `pattern`), if any.
    #[inline(always)]
    fn find(&self, tag: u64, pattern: u64) -> Option<usize> {
        for w in 0..W {
            let mut hits = eq_bytes(self.fps[w], pattern);
            while hits != 0 {
                let lane = (hits.trailing_zeros() / 8) as usize;
                if self.tags[w][lane % LANES] == tag {
                    return Some(w * LANES + lane);
                }
                hits &= hits - 1;
            }
        }
        None
    }

    /// Looks `tag` (fingerprint `fp`) up; marks it used on a hit, fills it into the victim
    /// way on a miss. Returns whether it hit.
    #[inline(always)]
    fn access(&mut self, tag: u64, fp: u8, ways: usize, full: u64) -> bool {
        if let Some(way) = self.find(tag, u64::from(fp) * ONES) {
            mark(&mut self.used, way, full);
            return true;
        }
        // The first unused way: `mark` never leaves all of `full` set but with one way.
        let way = (self.used.trailing_ones() as usize).min(ways - 1);
        let (w, lane) = ((way / LANES) % W, way % LANES);
        self.tags[w][lane] = tag;
        let shift = 8 * lane;
        self.fps[w] = (self.fps[w] & !(0xff << shift)) | (u64::from(fp) << shift);
        mark(&mut self.used, way, full);
        false
    }
}

impl PlruArray {
    /// `entries` tags in sets of `ways` (at most 64); the number of sets is rounded down to
    /// a power of two (validated profiles already have one), at least one.
    pub fn new(entries: usize, ways: usize) -> PlruArray {
        let ways = ways.clamp(1, 64);
        let sets = (entries / ways).max(1);
        let sets = 1usize << (usize::BITS - 1 - sets.leading_zeros());
        let set_mask = sets as u64 - 1;
        let sets = match ways.div_ceil(LANES) {
            1 => Sets::W1(vec![PlruSet::empty(); sets]),
            2 => Sets::W2(vec![PlruSet::empty(); sets]),
            3 => Sets::W3(vec![PlruSet::empty(); sets]),
            _ => Sets::W8(vec![PlruSet::empty(); sets]),
        };
        PlruArray {
            sets,
            ways,
            set_mask,
            full: if ways == 64 {
                u64::MAX
            } else {
                (1 << ways) - 1
            },
        }
    }

    /// Number of sets.
    pub fn sets(&self) -> usize {
        self.set_mask as usize + 1
    }

    #[inline(always)]
    fn set_of(&self, tag: u64) -> usize {
        (tag & self.set_mask) as usize
    }

    /// Looks `tag` up; on a hit marks it used and returns true, on a miss fills it into
    /// the victim way and returns false.
    #[inline]
    pub fn access(&mut self, tag: u64) -> bool {
        self.access_fp(tag, fingerprint(tag))
    }

    /// [`PlruArray::access`] of a tag whose fingerprint `fp` the caller has computed (the
    /// levels of a hierarchy share it).
    #[inline(always)]
    pub(crate) fn access_fp(&mut self, tag: u64, fp: u8) -> bool {
        let set = self.set_of(tag);
        let (ways, full) = (self.ways, self.full);
        each!(&mut self.sets, v => match v.get_mut(set) {
            Some(s) => s.access(tag, fp, ways, full),
            None => false, // unreachable: `set <= set_mask < v.len()`
        })
    }

    /// Whether `tag` is present (no state change).
    pub fn contains(&self, tag: u64) -> bool {
        let set = self.set_of(tag);
        let pattern = u64::from(fingerprint(tag)) * ONES;
        each!(&self.sets, v => v.get(set).is_some_and(|s| s.find(tag, pattern).is_some()))
    }

    /// Prefetch (into the host's caches) what an access to `tag` will read and write: the
    /// start of its set's record (mask and fingerprints) and its first tags.
    #[inline(always)]
    pub fn prefetch(&self, tag: u64) {
        let set = self.set_of(tag);
        each!(&self.sets, v => {
            if let Some(s) = v.get(set) {
                crate::prefetch::prefetch(&s.used);
                crate::prefetch::prefetch(&s.tags[0][LANES - 1]);
            }
        });
    }

    /// Empties the array.
    pub fn clear(&mut self) {
        each!(&mut self.sets, v => v.fill(PlruSet::empty()));
    }

    /// The tags of set `set` in way order, [`EMPTY`] for empty ways (for tests).
    #[cfg(test)]
    fn set_tags(&self, set: usize) -> Vec<u64> {
        let ways = self.ways;
        each!(&self.sets, v => v[set].tags.iter().flatten().copied().take(ways).collect())
    }
}

/// Marks `way` used in the set's `used` mask (see the module doc).
#[inline(always)]
fn mark(used: &mut u64, way: usize, full: u64) {
    let u = *used | (1 << way);
    *used = if u == full { 1 << way } else { u };
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_filled_tag_hits_and_the_victim_is_the_first_unused_way() {
        let mut a = PlruArray::new(4, 4); // one set of four ways
        for t in [0, 4, 8] {
            assert!(!a.access(t * 4));
        }
        assert!(a.access(0));
        // used bits: ways 0,1,2 set; filling way 3 would set all, so only way 3 stays.
        assert!(!a.access(12 * 4));
        // Now the victim is way 0 (lowest clear bit): tag 0 goes.
        assert!(!a.access(16 * 4));
        assert!(!a.contains(0));
        assert!(a.contains(48) && a.contains(64) && a.contains(16) && a.contains(32));
    }

    #[test]
    fn sets_are_indexed_by_low_bits() {
        let mut a = PlruArray::new(8, 2); // four sets
        assert_eq!(a.sets(), 4);
        for t in 0..8 {
            a.access(t);
        }
        assert!((0..8).all(|t| a.contains(t)), "two tags per set fit");
    }

    proptest! {
        #[test]
        fn the_most_recent_access_always_stays(tags in proptest::collection::vec(0u64..64, 1..300), ways in 1usize..9) {
            let mut a = PlruArray::new(ways * 4, ways);
            for t in tags {
                a.access(t);
                prop_assert!(a.contains(t));
                let set = (t & 3) as usize;
                let mut seen: Vec<u64> = a.set_tags(set).into_iter().filter(|x| *x != EMPTY).collect();
                let n = seen.len();
                seen.sort_unstable();
                seen.dedup();
                prop_assert_eq!(seen.len(), n, "a tag is held once");
            }
        }
    }
}
