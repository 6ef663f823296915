//! A set-associative array of `u64` tags with least-recently-used replacement: the one
//! structure behind every TLB, page-walk cache and data cache of the model.
//!
//! Layout: one contiguous `Vec` of sets; a set holds its tags in blocks of eight ways (one
//! 64-byte host cache line each, padded with [`INVALID`]), then one word per block of the
//! eight one-byte fingerprints of its tags and one word per block of the eight one-byte
//! LRU ages of its ways. The number of blocks per set is a const generic, chosen once per
//! array (1 block up to 8 ways, then 2, 3, 4, 8, 16), so the per-set code is unrolled and
//! free of bounds checks. The set of a tag is `tag & (sets - 1)`, so callers choose which
//! bits of a key index the array by how they build the tag.
//!
//! * **LRU as ages.** The ways of a set carry distinct ages `0..ways` (0: most recently
//!   used). Touching a way of age `a` ages every way younger than `a` by one and makes it 0;
//!   the victim of a fill is the way of age `ways - 1`. Empty ways ([`INVALID`]) are always
//!   the oldest, so they are filled first. This is exact LRU (no pseudo-LRU), and every
//!   step is a few SWAR operations per block: no serial minimum over use stamps (the
//!   textbook layout, which measured as the largest single cost of a simulated reference),
//!   and tags never move.
//! * **LRU as lists beyond three blocks.** Sets of more than 24 ways (the fully
//!   associative 64-entry L1 DTLBs and page-directory caches) keep the same exact LRU as
//!   a linked list of ways instead (`lrulist.rs`): there a touch costs O(1) rather than
//!   one SWAR step per block, and the victim is the list's tail rather than a scan.
//! * **Fingerprint scan.** A lookup compares a block's eight fingerprints at once with
//!   SWAR arithmetic (no `unsafe`, no SIMD intrinsics) and reads a tag only where a
//!   fingerprint matches (a false match costs one compare, probability 1/256 per way).
//!
//! Ages are 7-bit, so a set has at most [`MAX_WAYS`] ways.
//!
//! A *way limit* ([`WayLimit`]) caps how many ways of a set one class of tags may occupy:
//! this models an STLB shared between page sizes where, say, 2 MB translations may use only
//! half of the ways (`tlb.stlb.max_ways` in a profile).
//!
//! This module owns no notion of addresses, page sizes or time: it must stay a plain,
//! allocation-free container on the hot path (every simulated reference probes several of
//! these arrays).

use crate::lrulist::{ListSet, LIST_MIN_WAYS};
use crate::lruset::{LruWays, Set, LANES};

/// The tag value of an empty way. Callers must never insert it.
pub const INVALID: u64 = u64::MAX;

/// The most ways a set can have (ages are kept in 7 bits).
pub const MAX_WAYS: usize = 127;

/// Caps how many ways of one set the tags of a class may hold. The class of a tag is
/// `tag & class_mask`; [`INVALID`] belongs to no class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WayLimit {
    /// Bits of a tag that name its class.
    pub class_mask: u64,
    /// The most ways of one set that tags of the inserted tag's class may hold (0: the
    /// class is never cached).
    pub max_ways: usize,
}

/// The sets of an array, by blocks per set.
#[derive(Clone, Debug)]
enum Sets {
    B1(Vec<Set<1>>),
    B2(Vec<Set<2>>),
    B3(Vec<Set<3>>),
    L4(Vec<ListSet<4>>),
    L8(Vec<ListSet<8>>),
    L16(Vec<ListSet<16>>),
}

/// Runs `$body` with `$sets` bound to the array's `Vec<Set<B>>`, whatever `B`.
macro_rules! each {
    ($sets:expr, $v:ident => $body:expr) => {
        match $sets {
            Sets::B1($v) => $body,
            Sets::B2($v) => $body,
            Sets::B3($v) => $body,
            Sets::L4($v) => $body,
            Sets::L8($v) => $body,
            Sets::L16($v) => $body,
        }
    };
}

/// A set-associative LRU array of `u64` tags (see the module doc).
#[derive(Clone, Debug)]
pub struct SetAssoc {
    sets: Sets,
    ways: usize,
    set_mask: u64,
}

impl SetAssoc {
    /// An array of `entries` tags in sets of `ways`. Geometry is validated by the profile
    /// loader; here out-of-range values are clamped rather than rejected (at least one set
    /// of one way, `ways <= min(entries, MAX_WAYS)`, and the set count rounded down to a
    /// power of two), so construction never panics.
    pub fn new(entries: usize, ways: usize) -> SetAssoc {
        let entries = entries.max(1);
        let ways = ways.clamp(1, entries.min(MAX_WAYS));
        let n = prev_power_of_two(entries / ways);
        // SWAR ages up to three blocks, linked lists beyond (`lrulist.rs`).
        const _: () = assert!(LIST_MIN_WAYS == 3 * LANES);
        let blocks = ways.div_ceil(LANES);
        let sets = if ways <= LIST_MIN_WAYS {
            match blocks {
                1 => Sets::B1(vec![Set::empty(ways); n]),
                2 => Sets::B2(vec![Set::empty(ways); n]),
                _ => Sets::B3(vec![Set::empty(ways); n]),
            }
        } else {
            match blocks {
                4 => Sets::L4(vec![ListSet::empty(ways); n]),
                5..=8 => Sets::L8(vec![ListSet::empty(ways); n]),
                _ => Sets::L16(vec![ListSet::empty(ways); n]),
            }
        };
        SetAssoc {
            sets,
            ways,
            set_mask: n as u64 - 1,
        }
    }

    /// A fully associative array (one set) of `entries` tags.
    pub fn fully_associative(entries: usize) -> SetAssoc {
        SetAssoc::new(entries, entries)
    }

    /// Ways per set.
    pub fn ways(&self) -> usize {
        self.ways
    }

    /// Number of sets (a power of two).
    pub fn sets(&self) -> usize {
        self.set_mask as usize + 1
    }

    /// Total number of tags the array can hold.
    pub fn capacity(&self) -> usize {
        self.sets() * self.ways
    }

    /// Number of valid tags held.
    pub fn len(&self) -> usize {
        each!(&self.sets, v => v.iter().flat_map(|s| s.tags.iter().flatten()).filter(|&&t| t != INVALID).count())
    }

    /// True when no tag is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The set `tag` maps to.
    #[inline]
    pub fn set_of(&self, tag: u64) -> usize {
        (tag & self.set_mask) as usize
    }

    /// The tags of set `set`, most recently used first, empty ways ([`INVALID`]) last; for
    /// tests and inspection.
    pub fn set_tags(&self, set: usize) -> Vec<u64> {
        let i = set & self.set_mask as usize;
        each!(&self.sets, v => v[i].by_recency(self.ways))
    }

    /// The age of the oldest way.
    #[inline]
    fn oldest(&self) -> u8 {
        (self.ways - 1) as u8
    }

    /// True if `tag` is present; does not update LRU order.
    pub fn contains(&self, tag: u64) -> bool {
        let i = self.set_of(tag);
        each!(&self.sets, v => v[i].find(tag).is_some())
    }

    /// Looks `tag` up; on a hit makes it the most recently used and returns true.
    #[inline(always)]
    pub fn lookup(&mut self, tag: u64) -> bool {
        let i = self.set_of(tag);
        each!(&mut self.sets, v => v[i].lookup(tag))
    }

    /// Looks `tag` up and inserts it on a miss (a cache access with fill). Returns true on
    /// a hit.
    #[inline(always)]
    pub fn access(&mut self, tag: u64) -> bool {
        let (i, oldest) = (self.set_of(tag), self.oldest());
        each!(&mut self.sets, v => v[i].access(tag, oldest))
    }

    /// [`SetAssoc::access`] under a way limit: on a miss `tag` is filled as by
    /// [`SetAssoc::fill_limited`] (not at all when `limit.max_ways == 0`).
    #[inline]
    pub fn access_limited(&mut self, tag: u64, limit: WayLimit) -> bool {
        if limit.max_ways >= self.ways {
            return self.access(tag);
        }
        if self.lookup(tag) {
            return true;
        }
        self.fill_limited(tag, limit);
        false
    }

    /// Inserts `tag` as the most recently used, evicting the set's LRU tag if the set is
    /// full. Returns the evicted valid tag, if any. Inserting a present tag only touches it.
    pub fn insert(&mut self, tag: u64) -> Option<u64> {
        if self.lookup(tag) {
            return None;
        }
        self.fill(tag)
    }

    /// Fills `tag`, which the caller knows to be absent (it has just missed a lookup and
    /// nothing changed the array since), as the most recently used; returns the evicted
    /// valid tag, if any. Filling a present tag would hold it twice.
    #[inline]
    pub fn fill(&mut self, tag: u64) -> Option<u64> {
        debug_assert!(!self.contains(tag));
        let (i, oldest) = (self.set_of(tag), self.oldest());
        each!(&mut self.sets, v => v[i].fill(tag, oldest))
    }

    /// Inserts `tag` under a way limit: if the set already holds `limit.max_ways` tags of
    /// `tag`'s class, the LRU tag of that class is replaced; otherwise the set's LRU way is.
    /// With `max_ways == 0` nothing is inserted. Returns the evicted valid tag, if any.
    pub fn insert_limited(&mut self, tag: u64, limit: WayLimit) -> Option<u64> {
        if limit.max_ways == 0 || self.lookup(tag) {
            return None;
        }
        self.fill_limited(tag, limit)
    }

    /// [`SetAssoc::insert_limited`] of a `tag` the caller knows to be absent (see
    /// [`SetAssoc::fill`]).
    #[inline]
    pub fn fill_limited(&mut self, tag: u64, limit: WayLimit) -> Option<u64> {
        if limit.max_ways >= self.ways {
            return self.fill(tag);
        }
        if limit.max_ways == 0 {
            return None;
        }
        debug_assert!(!self.contains(tag));
        let (i, ways) = (self.set_of(tag), self.ways);
        each!(&mut self.sets, v => v[i].fill_limited(tag, limit, ways))
    }

    /// Drops `tag` if present; returns whether it was.
    pub fn invalidate(&mut self, tag: u64) -> bool {
        let (i, ways) = (self.set_of(tag), self.ways);
        each!(&mut self.sets, v => {
            let set = &mut v[i];
            match set.find(tag) {
                Some(w) => {
                    set.invalidate_way(w, ways);
                    true
                }
                None => false,
            }
        })
    }

    /// Keeps only the tags for which `keep` returns true, in their LRU order; returns how
    /// many were dropped.
    pub fn retain(&mut self, mut keep: impl FnMut(u64) -> bool) -> usize {
        let ways = self.ways;
        each!(&mut self.sets, v => v.iter_mut().map(|s| s.retain(&mut keep, ways)).sum())
    }

    /// [`SetAssoc::retain`] over only the sets `tags` map to (each set once, in index
    /// order): the same result as `retain` whenever every tag `keep` would drop is one of
    /// `tags`, at the cost of those sets rather than the whole array. Returns how many
    /// were dropped.
    pub fn retain_in_sets_of(&mut self, tags: &[u64], mut keep: impl FnMut(u64) -> bool) -> usize {
        let ways = self.ways;
        let mut sets: Vec<usize> = tags.iter().map(|&t| self.set_of(t)).collect();
        sets.sort_unstable();
        sets.dedup();
        each!(&mut self.sets, v => sets.iter().map(|&i| v[i].retain(&mut keep, ways)).sum())
    }

    /// Empties the array.
    pub fn clear(&mut self) {
        let ways = self.ways;
        each!(&mut self.sets, v => v.iter_mut().for_each(|s| s.clear(ways)))
    }
}

/// The largest power of two `<= n`, and 1 for 0.
fn prev_power_of_two(n: usize) -> usize {
    if n <= 1 {
        1
    } else {
        1 << (usize::BITS - 1 - n.leading_zeros())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hit_after_insert() {
        let mut a = SetAssoc::new(64, 4);
        assert!(!a.lookup(42));
        assert_eq!(a.insert(42), None);
        assert!(a.lookup(42));
        assert!(a.access(42));
        assert_eq!(a.len(), 1);
    }

    #[test]
    fn access_fills_on_miss() {
        let mut a = SetAssoc::new(8, 2);
        assert!(!a.access(5));
        assert!(a.access(5));
    }

    #[test]
    fn lru_evicts_least_recently_used_in_order() {
        let mut a = SetAssoc::new(16, 4); // 4 sets: tags 0,4,8,.. share set 0
        for t in [0, 4, 8, 12] {
            a.insert(t);
        }
        assert!(a.lookup(0)); // 4 is now the LRU
        assert_eq!(a.insert(16), Some(4));
        assert_eq!(a.insert(20), Some(8));
        assert_eq!(a.insert(24), Some(12));
        assert_eq!(a.insert(28), Some(0));
        assert!(a.contains(16) && a.contains(28));
    }

    #[test]
    fn sets_are_independent() {
        let mut a = SetAssoc::new(4, 1); // direct mapped, 4 sets
        a.insert(1);
        a.insert(2);
        assert!(a.contains(1) && a.contains(2));
        assert_eq!(a.insert(5), Some(1));
        assert!(a.contains(2));
    }

    #[test]
    fn way_limit_caps_a_class() {
        let mut a = SetAssoc::new(8, 8); // one set
        let class = |c: u64, n: u64| (c << 60) | n;
        let limit = WayLimit {
            class_mask: 0xf << 60,
            max_ways: 2,
        };
        for n in 0..5 {
            a.insert_limited(class(1, n), limit);
        }
        let count1 = a
            .set_tags(0)
            .iter()
            .filter(|&&t| t != INVALID && t >> 60 == 1)
            .count();
        assert_eq!(count1, 2);
        assert!(a.contains(class(1, 3)) && a.contains(class(1, 4)));
        // The other class still has the remaining ways.
        for n in 0..6 {
            a.insert(class(0, n));
        }
        assert_eq!(a.len(), 8);
        let zero = WayLimit {
            max_ways: 0,
            ..limit
        };
        assert_eq!(a.insert_limited(class(2, 0), zero), None);
        assert!(!a.contains(class(2, 0)));
    }

    #[test]
    fn limited_class_evicts_its_own_lru_when_full() {
        let mut a = SetAssoc::new(4, 4);
        let limit = WayLimit {
            class_mask: 1 << 62,
            max_ways: 2,
        };
        a.insert(1 << 2); // class 0
        a.insert_limited((1 << 62) | 4, limit);
        a.insert_limited((1 << 62) | 8, limit);
        a.insert(3 << 2); // class 0; set has one free way
        assert_eq!(a.insert_limited((1 << 62) | 12, limit), Some((1 << 62) | 4));
    }

    #[test]
    fn fully_associative_holds_any_tags() {
        let mut a = SetAssoc::fully_associative(64);
        assert_eq!(a.sets(), 1);
        for t in 0..64u64 {
            a.insert(t * 1024);
        }
        assert!((0..64u64).all(|t| a.contains(t * 1024)));
        assert_eq!(a.insert(1 << 40), Some(0));
    }

    #[test]
    fn invalidate_retain_and_clear() {
        let mut a = SetAssoc::new(16, 4);
        for t in 0..16 {
            a.insert(t);
        }
        assert!(a.invalidate(3));
        assert!(!a.contains(3));
        assert_eq!(a.retain(|t| t % 2 == 0), 7);
        assert_eq!(a.len(), 8);
        a.clear();
        assert!(a.is_empty());
    }

    #[test]
    fn sets_keep_most_recent_first_and_empty_ways_last() {
        let mut a = SetAssoc::new(4, 4);
        for t in [1, 2, 3] {
            a.insert(t);
        }
        assert!(a.lookup(1));
        assert_eq!(a.set_tags(0), [1, 3, 2, INVALID]);
        a.invalidate(3);
        assert_eq!(a.set_tags(0), [1, 2, INVALID, INVALID]);
    }

    #[test]
    fn bad_geometry_is_clamped_not_panicking() {
        let a = SetAssoc::new(0, 0);
        assert_eq!((a.sets(), a.ways()), (1, 1));
        let b = SetAssoc::new(24, 4); // 6 sets -> 4
        assert_eq!((b.sets(), b.ways()), (4, 4));
        let c = SetAssoc::fully_associative(1000);
        assert_eq!((c.sets(), c.ways()), (4, MAX_WAYS));
    }
}
