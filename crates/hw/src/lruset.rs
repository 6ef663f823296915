//! One set of a set-associative LRU array, as SWAR words: the per-set mechanics behind
//! [`crate::setassoc::SetAssoc`] (see its module doc for the layout and why).
//!
//! A set is `B` blocks of eight ways: the blocks' tags (one 64-byte host cache line per
//! block), one word per block of the ways' one-byte tag fingerprints, and one word per
//! block of their one-byte LRU ages (a permutation of `0..ways`, 0 = most recently used;
//! padding lanes hold [`PAD_AGE`]). `B` is a const generic so loops over blocks unroll and
//! indexing needs no bounds checks. This module must stay free of allocation on its hot
//! paths and knows nothing of what tags mean.

use crate::setassoc::{WayLimit, INVALID};

/// Ways per block (bytes per SWAR word).
pub(crate) const LANES: usize = 8;
pub(crate) const ONES: u64 = 0x0101_0101_0101_0101;
const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
const HIGH: u64 = 0x8080_8080_8080_8080;
/// Age of a padding lane: never younger than a real age, never the victim's.
const PAD_AGE: u8 = 0x7f;

/// The one-byte fingerprint of a tag: the top byte of a multiplicative hash, so tags of
/// one set (which share their low bits) still differ.
#[inline(always)]
pub(crate) const fn fingerprint(tag: u64) -> u8 {
    (tag.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8
}

/// High bit of every byte of `x` that is zero (exact: no carries across bytes).
#[inline(always)]
fn zero_bytes(x: u64) -> u64 {
    !(((x & LOW7) + LOW7) | x | LOW7)
}

/// High bit of every byte of `w` equal to the byte broadcast in `pattern`.
#[inline(always)]
pub(crate) fn eq_bytes(w: u64, pattern: u64) -> u64 {
    zero_bytes(w ^ pattern)
}

/// High bit of every byte of `w` below `a` (all bytes and `a` below 128, so the per-byte
/// subtraction `(x | 0x80) - a` never borrows).
#[inline(always)]
fn lt_bytes(w: u64, a: u8) -> u64 {
    !((w | HIGH) - u64::from(a) * ONES) & HIGH
}

/// The first way whose byte has its high bit set in `hits` of block `k`.
#[inline(always)]
fn lane(hits: u64) -> usize {
    (hits.trailing_zeros() / 8) as usize
}

/// A way: block and lane.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Way {
    block: usize,
    lane: usize,
}

/// What the two LRU set representations (the SWAR ages here, the linked list of
/// `lrulist.rs`) provide; a lookup and an access are written once on top of it.
pub(crate) trait LruWays {
    /// A way of the set.
    type Way: Copy;

    /// The way holding `tag`, if any.
    fn find(&self, tag: u64) -> Option<Self::Way>;

    /// Makes `w` the most recently used way.
    fn touch(&mut self, w: Self::Way);

    /// Fills `tag` into the least recently used way (`oldest`: the set's oldest age, for
    /// the SWAR sets); returns the tag it evicted.
    fn fill(&mut self, tag: u64, oldest: u8) -> Option<u64>;

    /// Whether `tag` is present, making it the most recently used on a hit.
    #[inline(always)]
    fn lookup(&mut self, tag: u64) -> bool {
        match self.find(tag) {
            Some(w) => {
                self.touch(w);
                true
            }
            None => false,
        }
    }

    /// [`LruWays::lookup`], filling `tag` on a miss.
    #[inline(always)]
    fn access(&mut self, tag: u64, oldest: u8) -> bool {
        match self.find(tag) {
            Some(w) => {
                self.touch(w);
                true
            }
            None => {
                self.fill(tag, oldest);
                false
            }
        }
    }
}

/// One set of `B` blocks of eight ways.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
pub(crate) struct Set<const B: usize> {
    pub(crate) tags: [[u64; LANES]; B],
    fps: [u64; B],
    ages: [u64; B],
}

impl<const B: usize> Set<B> {
    /// An empty set of `ways` ways: ages 0..ways in way order, padding lanes last.
    pub(crate) fn empty(ways: usize) -> Self {
        let mut ages = [0u64; B];
        for (k, word) in ages.iter_mut().enumerate() {
            let bytes = std::array::from_fn(|l| match k * LANES + l {
                w if w < ways => w as u8,
                _ => PAD_AGE,
            });
            *word = u64::from_le_bytes(bytes);
        }
        let fps = u64::from(fingerprint(INVALID)) * ONES;
        Set {
            tags: [[INVALID; LANES]; B],
            fps: [fps; B],
            ages,
        }
    }

    /// Empties the set.
    pub(crate) fn clear(&mut self, ways: usize) {
        *self = Self::empty(ways);
    }

    #[inline(always)]
    fn tag(&self, w: Way) -> u64 {
        self.tags[w.block % B][w.lane % LANES]
    }

    #[inline(always)]
    fn age(&self, w: Way) -> u8 {
        (self.ages[w.block % B] >> (8 * (w.lane % LANES))) as u8
    }

    #[inline(always)]
    fn set_age(&mut self, w: Way, age: u8) {
        let (word, shift) = (&mut self.ages[w.block % B], 8 * (w.lane % LANES));
        *word = (*word & !(0xff << shift)) | (u64::from(age) << shift);
    }

    /// [`LruWays::touch`] of a way whose age `a` the caller knows.
    #[inline(always)]
    fn touch_aged(&mut self, w: Way, a: u8) {
        for word in &mut self.ages {
            *word += lt_bytes(*word, a) >> 7;
        }
        self.set_age(w, 0);
    }

    /// The way of age `oldest` (the LRU way when `oldest == ways - 1`).
    #[inline(always)]
    fn victim(&self, oldest: u8) -> Way {
        let pattern = u64::from(oldest) * ONES;
        for block in 0..B {
            let hits = eq_bytes(self.ages[block], pattern);
            if hits != 0 {
                return Way {
                    block,
                    lane: lane(hits),
                };
            }
        }
        Way { block: 0, lane: 0 } // unreachable while ages are a permutation
    }

    /// Puts `tag` in `w` as the most recently used; returns the valid tag it replaced.
    #[inline(always)]
    fn replace(&mut self, w: Way, tag: u64) -> Option<u64> {
        self.replace_aged(w, self.age(w), tag)
    }

    /// [`Set::replace`] of a way whose age `a` the caller knows.
    #[inline(always)]
    fn replace_aged(&mut self, w: Way, a: u8, tag: u64) -> Option<u64> {
        let (block, lane) = (w.block % B, w.lane % LANES);
        let old = std::mem::replace(&mut self.tags[block][lane], tag);
        let shift = 8 * lane;
        let fps = &mut self.fps[block];
        *fps = (*fps & !(0xff << shift)) | (u64::from(fingerprint(tag)) << shift);
        self.touch_aged(w, a);
        (old != INVALID).then_some(old)
    }

    /// Every way of the set, in way order.
    fn ways(ways: usize) -> impl Iterator<Item = Way> {
        (0..ways).map(|i| Way {
            block: i / LANES,
            lane: i % LANES,
        })
    }

    pub(crate) fn fill_limited(&mut self, tag: u64, limit: WayLimit, ways: usize) -> Option<u64> {
        let class = tag & limit.class_mask;
        let (mut count, mut lru) = (0, (0, Way { block: 0, lane: 0 }));
        for w in Self::ways(ways) {
            let t = self.tag(w);
            if t != INVALID && t & limit.class_mask == class {
                count += 1;
                if self.age(w) >= lru.0 {
                    lru = (self.age(w), w);
                }
            }
        }
        // At the limit, the class's own least recently used tag makes room.
        if count < limit.max_ways {
            return self.fill(tag, (ways - 1) as u8);
        }
        self.replace(lru.1, tag)
    }

    /// Empties `w`, making it the oldest.
    pub(crate) fn invalidate_way(&mut self, w: Way, ways: usize) {
        let a = self.age(w);
        for v in Self::ways(ways) {
            let age = self.age(v);
            if age > a {
                self.set_age(v, age - 1);
            }
        }
        self.set_age(w, (ways - 1) as u8);
        self.tags[w.block % B][w.lane % LANES] = INVALID;
        let shift = 8 * (w.lane % LANES);
        let fps = &mut self.fps[w.block % B];
        *fps = (*fps & !(0xff << shift)) | (u64::from(fingerprint(INVALID)) << shift);
    }

    pub(crate) fn retain(&mut self, keep: &mut impl FnMut(u64) -> bool, ways: usize) -> usize {
        let mut dropped = 0;
        for w in Self::ways(ways) {
            let t = self.tag(w);
            if t != INVALID && !keep(t) {
                self.invalidate_way(w, ways);
                dropped += 1;
            }
        }
        dropped
    }

    /// Tags most recently used first.
    pub(crate) fn by_recency(&self, ways: usize) -> Vec<u64> {
        let mut v: Vec<(u8, u64)> = Self::ways(ways)
            .map(|w| (self.age(w), self.tag(w)))
            .collect();
        v.sort_unstable();
        v.into_iter().map(|(_, t)| t).collect()
    }
}

impl<const B: usize> LruWays for Set<B> {
    type Way = Way;

    #[inline(always)]
    fn find(&self, tag: u64) -> Option<Way> {
        let pattern = u64::from(fingerprint(tag)) * ONES;
        for block in 0..B {
            let mut hits = eq_bytes(self.fps[block], pattern);
            while hits != 0 {
                let w = Way {
                    block,
                    lane: lane(hits),
                };
                if self.tag(w) == tag {
                    return Some(w);
                }
                hits &= hits - 1;
            }
        }
        None
    }

    /// Makes `w` the most recently used: every way younger than it ages by one.
    #[inline(always)]
    fn touch(&mut self, w: Way) {
        self.touch_aged(w, self.age(w));
    }

    /// Fills `tag` into the least recently used way (age `oldest`).
    #[inline(always)]
    fn fill(&mut self, tag: u64, oldest: u8) -> Option<u64> {
        self.replace_aged(self.victim(oldest), oldest, tag)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swar_byte_compares_are_exact() {
        let w = u64::from_le_bytes([0, 1, 5, 126, 127, 5, 64, 3]);
        assert_eq!(
            lt_bytes(w, 5),
            u64::from_le_bytes([0x80, 0x80, 0, 0, 0, 0, 0, 0x80])
        );
        assert_eq!(
            eq_bytes(w, 5 * ONES),
            u64::from_le_bytes([0, 0, 0x80, 0, 0, 0x80, 0, 0])
        );
    }

    #[test]
    fn fingerprint_collisions_are_resolved_by_the_full_tag() {
        // Tags sharing a fingerprint (and, fully associative, a set) stay distinct.
        let mut a = crate::setassoc::SetAssoc::new(16, 16);
        let fp = fingerprint(1);
        let twins: Vec<u64> = (2..).filter(|&t| fingerprint(t) == fp).take(3).collect();
        a.insert(1);
        for &t in &twins {
            assert!(!a.contains(t));
            a.insert(t);
        }
        assert!(a.contains(1) && twins.iter().all(|&t| a.contains(t)));
        assert_eq!(a.len(), 4);
        assert!(a.invalidate(twins[1]));
        assert!(a.contains(twins[0]) && !a.contains(twins[1]));
    }
}
