//! One set of a highly associative LRU array, with its recency order as a doubly linked
//! list: the per-set mechanics behind [`crate::setassoc::SetAssoc`] for sets of more than
//! [`LIST_MIN_WAYS`] ways (in practice the fully associative 64-entry L1 DTLBs and
//! page-directory caches).
//!
//! The tags and their one-byte fingerprints are laid out and scanned as in `lruset.rs`
//! (blocks of eight ways). What differs is the LRU state: the SWAR ages of `lruset.rs`
//! cost one word operation per block on every touch and a scan for the victim on every
//! fill, which for 64 ways (eight blocks) was the largest cost of a simulated TLB miss.
//! Here each way links to the next older and the next younger way, so a touch is an
//! unlink and a push at the head and the victim is the tail: O(1) whatever the
//! associativity. The replacement is the same exact LRU (the property tests compare both
//! with a list model), so results do not depend on which representation a set uses.
//!
//! Empty ways ([`INVALID`]) sit at the old end of the list, so they are filled first.

use crate::lruset::{eq_bytes, fingerprint, LruWays, LANES, ONES};
use crate::setassoc::{WayLimit, INVALID};

/// Sets of more ways than this use the list representation.
pub(crate) const LIST_MIN_WAYS: usize = 3 * LANES;

/// A way: its index in the set (block `w / 8`, lane `w % 8`).
pub(crate) type ListWay = u8;

/// One set of `B` blocks of eight ways with linked-list LRU (see the module doc).
#[derive(Clone, Debug)]
#[repr(C, align(64))]
pub(crate) struct ListSet<const B: usize> {
    pub(crate) tags: [[u64; LANES]; B],
    fps: [u64; B],
    /// The next older way of each way (meaningless for the tail).
    older: [[u8; LANES]; B],
    /// The next younger way of each way (meaningless for the head).
    younger: [[u8; LANES]; B],
    /// The most recently used way.
    head: u8,
    /// The least recently used way (the victim).
    tail: u8,
}

impl<const B: usize> ListSet<B> {
    /// An empty set of `ways` ways (`1..=8 * B`), in way order from most to least recent.
    pub(crate) fn empty(ways: usize) -> Self {
        let ways = ways.clamp(1, B * LANES);
        let mut s = ListSet {
            tags: [[INVALID; LANES]; B],
            fps: [u64::from(fingerprint(INVALID)) * ONES; B],
            older: [[0; LANES]; B],
            younger: [[0; LANES]; B],
            head: 0,
            tail: (ways - 1) as u8,
        };
        for w in 0..ways {
            s.set_older(w as u8, (w + 1).min(ways - 1) as u8);
            s.set_younger(w as u8, w.saturating_sub(1) as u8);
        }
        s
    }

    /// Empties the set.
    pub(crate) fn clear(&mut self, ways: usize) {
        *self = Self::empty(ways);
    }

    #[inline(always)]
    fn tag(&self, w: ListWay) -> u64 {
        let w = usize::from(w);
        self.tags[(w / LANES) % B][w % LANES]
    }

    #[inline(always)]
    fn older(&self, w: ListWay) -> ListWay {
        let w = usize::from(w);
        self.older[(w / LANES) % B][w % LANES]
    }

    #[inline(always)]
    fn younger(&self, w: ListWay) -> ListWay {
        let w = usize::from(w);
        self.younger[(w / LANES) % B][w % LANES]
    }

    #[inline(always)]
    fn set_older(&mut self, w: ListWay, v: ListWay) {
        let w = usize::from(w);
        self.older[(w / LANES) % B][w % LANES] = v;
    }

    #[inline(always)]
    fn set_younger(&mut self, w: ListWay, v: ListWay) {
        let w = usize::from(w);
        self.younger[(w / LANES) % B][w % LANES] = v;
    }

    #[inline(always)]
    fn set_tag(&mut self, w: ListWay, tag: u64) -> u64 {
        let w = usize::from(w);
        let (block, lane) = ((w / LANES) % B, w % LANES);
        let shift = 8 * lane;
        let fps = &mut self.fps[block];
        *fps = (*fps & !(0xff << shift)) | (u64::from(fingerprint(tag)) << shift);
        std::mem::replace(&mut self.tags[block][lane], tag)
    }

    /// Takes `w` out of the list (the list must hold another way).
    #[inline(always)]
    fn unlink(&mut self, w: ListWay) {
        let (y, o) = (self.younger(w), self.older(w));
        if w == self.head {
            self.head = o;
        } else {
            self.set_older(y, o);
        }
        if w == self.tail {
            self.tail = y;
        } else {
            self.set_younger(o, y);
        }
    }

    /// Makes `w` the least recently used.
    fn demote(&mut self, w: ListWay) {
        if w == self.tail {
            return;
        }
        self.unlink(w);
        let tail = self.tail;
        self.set_younger(w, tail);
        self.set_older(tail, w);
        self.tail = w;
    }

    /// Puts `tag` in `w` as the most recently used; returns the valid tag it replaced.
    #[inline(always)]
    fn replace(&mut self, w: ListWay, tag: u64) -> Option<u64> {
        let old = self.set_tag(w, tag);
        self.touch(w);
        (old != INVALID).then_some(old)
    }

    /// The ways from least to most recently used.
    fn oldest_first(&self, ways: usize) -> impl Iterator<Item = ListWay> + '_ {
        let mut w = self.tail;
        (0..ways).map(move |i| {
            if i > 0 {
                w = self.younger(w);
            }
            w
        })
    }

    pub(crate) fn fill_limited(&mut self, tag: u64, limit: WayLimit, ways: usize) -> Option<u64> {
        let class = tag & limit.class_mask;
        let (mut count, mut lru) = (0, None);
        for w in self.oldest_first(ways) {
            let t = self.tag(w);
            if t != INVALID && t & limit.class_mask == class {
                count += 1;
                lru = lru.or(Some(w));
            }
        }
        // At the limit, the class's own least recently used tag makes room.
        match lru {
            Some(w) if count >= limit.max_ways => self.replace(w, tag),
            _ => self.fill(tag, 0),
        }
    }

    /// Empties `w`, making it the oldest.
    pub(crate) fn invalidate_way(&mut self, w: ListWay, _ways: usize) {
        self.set_tag(w, INVALID);
        self.demote(w);
    }

    pub(crate) fn retain(&mut self, keep: &mut impl FnMut(u64) -> bool, ways: usize) -> usize {
        let mut dropped = 0;
        for w in 0..ways as u8 {
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
        let mut v: Vec<u64> = self.oldest_first(ways).map(|w| self.tag(w)).collect();
        v.reverse();
        v
    }
}

impl<const B: usize> LruWays for ListSet<B> {
    type Way = ListWay;

    #[inline(always)]
    fn find(&self, tag: u64) -> Option<ListWay> {
        let pattern = u64::from(fingerprint(tag)) * ONES;
        // All blocks' matches first, without a branch (the compiler vectorises this), so
        // a miss, the common case of a large fully associative set, costs no scan.
        let matches: [u64; B] = std::array::from_fn(|block| eq_bytes(self.fps[block], pattern));
        if matches.iter().fold(0, |any, m| any | m) == 0 {
            return None;
        }
        for (block, &hits) in matches.iter().enumerate() {
            let mut hits = hits;
            while hits != 0 {
                let lane = (hits.trailing_zeros() / 8) as usize;
                if self.tags[block][lane % LANES] == tag {
                    return Some((block * LANES + lane) as u8);
                }
                hits &= hits - 1;
            }
        }
        None
    }

    /// Makes `w` the most recently used.
    #[inline(always)]
    fn touch(&mut self, w: ListWay) {
        if w == self.head {
            return;
        }
        self.unlink(w);
        let head = self.head;
        self.set_older(w, head);
        self.set_younger(head, w);
        self.head = w;
    }

    /// Fills `tag` into the least recently used way (`_oldest` is for the SWAR sets).
    #[inline(always)]
    fn fill(&mut self, tag: u64, _oldest: u8) -> Option<u64> {
        self.replace(self.tail, tag)
    }
}
