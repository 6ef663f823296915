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

/// A bit-PLRU set-associative array of `u64` tags.
#[derive(Clone, Debug)]
pub struct PlruArray {
    tags: Vec<u64>,
    /// Per set, `words` words of one-byte tag fingerprints (empty ways: `EMPTY`'s).
    fps: Vec<u64>,
    words: usize,
    used: Vec<u64>,
    ways: usize,
    set_mask: u64,
    full: u64,
}

impl PlruArray {
    /// `entries` tags in sets of `ways` (at most 64); the number of sets is rounded down to
    /// a power of two (validated profiles already have one), at least one.
    pub fn new(entries: usize, ways: usize) -> PlruArray {
        let ways = ways.clamp(1, 64);
        let sets = (entries / ways).max(1);
        let sets = 1usize << (usize::BITS - 1 - sets.leading_zeros());
        let words = ways.div_ceil(8);
        PlruArray {
            tags: vec![EMPTY; sets * ways],
            fps: vec![u64::from(fingerprint(EMPTY)) * ONES; sets * words],
            words,
            used: vec![0; sets],
            ways,
            set_mask: sets as u64 - 1,
            full: if ways == 64 {
                u64::MAX
            } else {
                (1 << ways) - 1
            },
        }
    }

    /// Number of sets.
    pub fn sets(&self) -> usize {
        self.used.len()
    }

    #[inline(always)]
    fn set_of(&self, tag: u64) -> usize {
        (tag & self.set_mask) as usize
    }

    #[inline(always)]
    fn mark(&mut self, set: usize, way: usize) {
        let u = self.used[set] | (1 << way);
        self.used[set] = if u == self.full { 1 << way } else { u };
    }

    /// The way of `set` holding `tag`, if any.
    #[inline(always)]
    fn find(&self, set: usize, tag: u64) -> Option<usize> {
        let pattern = u64::from(fingerprint(tag)) * ONES;
        for w in 0..self.words {
            let mut hits = eq_bytes(self.fps[set * self.words + w], pattern);
            while hits != 0 {
                let way = w * 8 + (hits.trailing_zeros() / 8) as usize;
                if way < self.ways && self.tags[set * self.ways + way] == tag {
                    return Some(way);
                }
                hits &= hits - 1;
            }
        }
        None
    }

    /// Looks `tag` up; on a hit marks it used and returns true, on a miss fills it into
    /// the victim way and returns false.
    #[inline]
    pub fn access(&mut self, tag: u64) -> bool {
        let set = self.set_of(tag);
        if let Some(way) = self.find(set, tag) {
            self.mark(set, way);
            return true;
        }
        let way = (self.used[set].trailing_ones() as usize).min(self.ways - 1);
        self.tags[set * self.ways + way] = tag;
        let (word, shift) = (set * self.words + way / 8, 8 * (way % 8));
        self.fps[word] =
            (self.fps[word] & !(0xff << shift)) | (u64::from(fingerprint(tag)) << shift);
        self.mark(set, way);
        false
    }

    /// Whether `tag` is present (no state change).
    pub fn contains(&self, tag: u64) -> bool {
        self.find(self.set_of(tag), tag).is_some()
    }

    /// A reference to the first tag of `tag`'s set, for prefetching.
    #[inline(always)]
    pub fn set_slot(&self, tag: u64) -> &u64 {
        &self.tags[self.set_of(tag) * self.ways]
    }

    /// Empties the array.
    pub fn clear(&mut self) {
        self.tags.fill(EMPTY);
        self.fps.fill(u64::from(fingerprint(EMPTY)) * ONES);
        self.used.fill(0);
    }
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
                let mut seen: Vec<u64> = a.tags[set * ways..(set + 1) * ways].iter().copied().filter(|x| *x != EMPTY).collect();
                let n = seen.len();
                seen.sort_unstable();
                seen.dedup();
                prop_assert_eq!(seen.len(), n, "a tag is held once");
            }
        }
    }
}
