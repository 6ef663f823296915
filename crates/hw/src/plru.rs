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
///
/// Layout: per set, one *meta* record holding the used mask and then the set's
/// fingerprint words, padded to a power-of-two number of words so a record never
/// straddles a host cache line; the tags live apart. A miss, the common case in the large
/// levels, reads only the set's meta record and writes one tag; the tags are read only
/// where a fingerprint matches.
#[derive(Clone, Debug)]
pub struct PlruArray {
    meta: Meta,
    tags: Vec<u64>,
    ways: usize,
    set_mask: u64,
    full: u64,
}

/// The meta records of an array, by fingerprint words per set (`W`) and record words
/// (`S`, at least `W + 1`), so the per-set code is unrolled and bounds-checked once.
#[derive(Clone, Debug)]
enum Meta {
    W1(Vec<[u64; 2]>),
    W2(Vec<[u64; 4]>),
    W8(Vec<[u64; 16]>),
}

/// Runs `$body` with `$m` bound to the array's records and `$w` to their fingerprint
/// words, whatever their size.
macro_rules! each {
    ($meta:expr, $m:ident, $w:ident => $body:expr) => {
        match $meta {
            Meta::W1($m) => {
                const $w: usize = 1;
                $body
            }
            Meta::W2($m) => {
                const $w: usize = 2;
                $body
            }
            Meta::W8($m) => {
                const $w: usize = 8;
                $body
            }
        }
    };
}

/// An empty meta record: nothing used, every fingerprint `EMPTY`'s.
fn empty_record<const S: usize>() -> [u64; S] {
    let mut r = [u64::from(fingerprint(EMPTY)) * ONES; S];
    r[0] = 0;
    r
}

impl PlruArray {
    /// `entries` tags in sets of `ways` (at most 64); the number of sets is rounded down to
    /// a power of two (validated profiles already have one), at least one.
    pub fn new(entries: usize, ways: usize) -> PlruArray {
        let ways = ways.clamp(1, 64);
        let sets = (entries / ways).max(1);
        let sets = 1usize << (usize::BITS - 1 - sets.leading_zeros());
        let meta = match ways.div_ceil(8) {
            1 => Meta::W1(vec![empty_record(); sets]),
            2 => Meta::W2(vec![empty_record(); sets]),
            _ => Meta::W8(vec![empty_record(); sets]),
        };
        PlruArray {
            meta,
            tags: vec![EMPTY; sets * ways],
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
        self.set_mask as usize + 1
    }

    #[inline(always)]
    fn set_of(&self, tag: u64) -> usize {
        (tag & self.set_mask) as usize
    }

    /// The way of `set` holding `tag` (fingerprint broadcast `pattern`), if any, given
    /// the set's meta record (fingerprint words from index 1) and all tags.
    #[inline(always)]
    fn find<const W: usize, const S: usize>(
        record: &[u64; S],
        tags: &[u64],
        set: usize,
        ways: usize,
        tag: u64,
        pattern: u64,
    ) -> Option<usize> {
        for w in 0..W {
            let mut hits = eq_bytes(record[(1 + w) % S], pattern);
            while hits != 0 {
                let way = w * 8 + (hits.trailing_zeros() / 8) as usize;
                // Padding lanes have no tag.
                if way < ways && tags.get(set * ways + way) == Some(&tag) {
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
        self.access_fp(tag, fingerprint(tag))
    }

    /// [`PlruArray::access`] of a tag whose fingerprint `fp` the caller has computed (the
    /// levels of a hierarchy share it).
    #[inline(always)]
    pub(crate) fn access_fp(&mut self, tag: u64, fp: u8) -> bool {
        let set = self.set_of(tag);
        let (ways, full) = (self.ways, self.full);
        let pattern = u64::from(fp) * ONES;
        let tags = &mut self.tags;
        each!(&mut self.meta, m, W => {
            let Some(record) = m.get_mut(set) else {
                return false; // unreachable: `set <= set_mask < m.len()`
            };
            match Self::find::<W, _>(record, tags, set, ways, tag, pattern) {
                Some(way) => {
                    mark(&mut record[0], way, full);
                    true
                }
                None => {
                    let way = (record[0].trailing_ones() as usize).min(ways - 1);
                    if let Some(t) = tags.get_mut(set * ways + way) {
                        *t = tag;
                    }
                    let (word, shift) = (&mut record[(1 + way / 8) % record.len()], 8 * (way % 8));
                    *word = (*word & !(0xff << shift)) | (u64::from(fp) << shift);
                    mark(&mut record[0], way, full);
                    false
                }
            }
        })
    }

    /// Whether `tag` is present (no state change).
    pub fn contains(&self, tag: u64) -> bool {
        let set = self.set_of(tag);
        let pattern = u64::from(fingerprint(tag)) * ONES;
        each!(&self.meta, m, W => Self::find::<W, _>(&m[set], &self.tags, set, self.ways, tag, pattern).is_some())
    }

    /// Prefetch (into the host's caches) what an access to `tag` will read and write: its
    /// set's meta record and first tags.
    #[inline(always)]
    pub fn prefetch(&self, tag: u64) {
        let set = self.set_of(tag);
        each!(&self.meta, m, _W => {
            if let Some(r) = m.get(set) {
                crate::prefetch::prefetch(r);
            }
        });
        if let Some(t) = self.tags.get(set * self.ways) {
            crate::prefetch::prefetch(t);
        }
    }

    /// Empties the array.
    pub fn clear(&mut self) {
        self.tags.fill(EMPTY);
        each!(&mut self.meta, m, _W => m.fill(empty_record()));
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
                let mut seen: Vec<u64> = a.tags[set * ways..(set + 1) * ways].iter().copied().filter(|x| *x != EMPTY).collect();
                let n = seen.len();
                seen.sort_unstable();
                seen.dedup();
                prop_assert_eq!(seen.len(), n, "a tag is held once");
            }
        }
    }
}
