//! The address-ordered index of free blocks behind [`Placement`] (KML/KMU, APSys'16 3.2),
//! and the placed variant of `__rmqueue_smallest` that uses it.
//!
//! The paper's layouts ran on "an array-based bank buddy allocator"; we keep Linux's buddy
//! allocator and add, only while a policy asks for a placement other than
//! [`Placement::ListHead`], one hierarchical bitmap per order per list (bit `i` of order
//! `o` set iff a free head at frame `i << o` is on that list). Insert and remove are
//! O(log64 frames) (at most 5 word updates on a 2^30-frame machine); the lowest and highest
//! set bit are found in as many steps. One more bitmap per list holds every order's heads
//! by frame, so a search over all orders (an order-0 request) is one descent. Memory:
//! about 3 bits per frame per list.
//!
//! `PhysMem` keeps one index per zone (each zone has its own free lists), over the zone's
//! frames: the extremes a policy reads are the zone's, so a request served from a zone
//! is placed at that zone's end, never pointed at a block on another zone's lists.
//!
//! This is allocator mechanism kept by `PhysMem` (the hooks are in `buddy.rs`); it lives
//! beside the policies only because they alone need it. It must not decide which end a
//! request is served from: [`FallbackPolicy::placement`](super::FallbackPolicy) does.

use super::Placement;
use crate::error::{MmError, Result};
use crate::phys::buddy::PhysMem;
use crate::phys::frame::{FrameState, FrameTable};
use crate::phys::pageblock::MigrateType;
use std::ops::RangeInclusive;

/// A set of `0..n` as a bitmap with one summary level per 64x (a van Emde Boas-like
/// "bitmap tree"): level 0 holds the bits, bit `w` of level `l + 1` says word `w` of level
/// `l` is non-zero.
#[derive(Clone, Debug)]
struct BitTree {
    levels: Vec<Vec<u64>>,
}

impl BitTree {
    fn new(n: usize) -> BitTree {
        let mut levels = Vec::new();
        let mut words = n.div_ceil(64).max(1);
        loop {
            levels.push(vec![0u64; words]);
            if words == 1 {
                break;
            }
            words = words.div_ceil(64);
        }
        BitTree { levels }
    }

    fn insert(&mut self, mut i: usize) {
        for level in &mut self.levels {
            let (w, b) = (i / 64, i % 64);
            let was = level[w];
            level[w] |= 1 << b;
            if was != 0 {
                return;
            }
            i = w;
        }
    }

    fn remove(&mut self, mut i: usize) {
        for level in &mut self.levels {
            let (w, b) = (i / 64, i % 64);
            level[w] &= !(1 << b);
            if level[w] != 0 {
                return;
            }
            i = w;
        }
    }

    /// How many members it can hold (`0..n`, rounded up to a word).
    fn capacity(&self) -> usize {
        self.levels[0].len() * 64
    }

    fn contains(&self, i: usize) -> bool {
        self.levels[0]
            .get(i / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    /// The smallest (`high == false`) or largest member.
    fn extreme(&self, high: bool) -> Option<usize> {
        let mut i = 0usize;
        for level in self.levels.iter().rev() {
            let w = level[i];
            if w == 0 {
                return None;
            }
            let bit = if high {
                63 - w.leading_zeros() as usize
            } else {
                w.trailing_zeros() as usize
            };
            i = i * 64 + bit;
        }
        Some(i)
    }

    #[cfg_attr(not(test), allow(dead_code))] // for tests and debug checks
    fn len(&self) -> u64 {
        self.levels[0].iter().map(|w| w.count_ones() as u64).sum()
    }
}

/// Free-block heads by address, per order per migrate type, of one zone's frames.
#[derive(Clone, Debug)]
pub(crate) struct AddrIndex {
    /// The zone's first frame: bit `i` of order `o` stands for frame `base + (i << o)`.
    /// Zones of a machine with several start at multiples of `2^max_order` frames
    /// (`NodeMap`), so a block's alignment is the same counted from here.
    base: u32,
    sets: Vec<[BitTree; MigrateType::COUNT]>,
    /// Every order's heads together, by frame: bit `p` set iff a free head at frame `p`
    /// is on that list at some order (blocks never overlap, so a frame heads at most one).
    /// A search over all orders (an order-0 request: most of them) is then one descent
    /// instead of one per order; the order is read back from `sets`.
    any: [BitTree; MigrateType::COUNT],
}

impl AddrIndex {
    /// An index of every block on zone `zone`'s free lists (O(zone frames / 64 + free
    /// blocks)).
    pub fn build(p: &PhysMem, zone: usize) -> AddrIndex {
        let (base, end) = p.nodes.range(zone);
        let n = (end - base) as usize;
        let sets = (0..=p.max_order().0)
            .map(|o| std::array::from_fn(|_| BitTree::new(n >> o)))
            .collect();
        let any = std::array::from_fn(|_| BitTree::new(n));
        let mut index = AddrIndex { base, sets, any };
        for order in 0..=p.max_order().0 {
            for mt in MigrateType::ALL {
                for pfn in p.areas[zone].iter(&p.frames, order, mt) {
                    index.insert(pfn, order, mt);
                }
            }
        }
        index
    }

    pub fn insert(&mut self, pfn: u32, order: u8, mt: MigrateType) {
        let i = pfn - self.base;
        self.sets[order as usize][mt.index()].insert((i >> order) as usize);
        self.any[mt.index()].insert(i as usize);
    }

    pub fn remove(&mut self, pfn: u32, order: u8, mt: MigrateType) {
        let i = pfn - self.base;
        self.sets[order as usize][mt.index()].remove((i >> order) as usize);
        self.any[mt.index()].remove(i as usize);
    }

    pub fn lowest(&self, order: u8, mt: MigrateType) -> Option<u32> {
        let set = &self.sets.get(order as usize)?[mt.index()];
        set.extreme(false)
            .map(|i| self.base + ((i as u32) << order))
    }

    pub fn highest(&self, order: u8, mt: MigrateType) -> Option<u32> {
        let set = &self.sets.get(order as usize)?[mt.index()];
        set.extreme(true).map(|i| self.base + ((i as u32) << order))
    }

    /// The lowest or highest block on `mt`'s lists of order `>= min`: (head, order).
    pub fn extreme(&self, min: u8, mt: MigrateType, at: Placement) -> Option<(u32, u8)> {
        let top = self.sets.len().saturating_sub(1) as u8;
        if min == 0 {
            let i = self.any[mt.index()].extreme(at == Placement::Highest)?;
            let order = (0..=top).find(|&o| {
                i.is_multiple_of(1 << o) && self.sets[o as usize][mt.index()].contains(i >> o)
            })?;
            return Some((self.base + i as u32, order));
        }
        self.extreme_in(min..=top, mt, at)
    }

    /// The lowest or highest block on `mt`'s lists of an order in `orders`: (head, order).
    pub fn extreme_in(
        &self,
        orders: RangeInclusive<u8>,
        mt: MigrateType,
        at: Placement,
    ) -> Option<(u32, u8)> {
        let found = orders.filter_map(|o| {
            let pfn = match at {
                Placement::Highest => self.highest(o, mt),
                _ => self.lowest(o, mt),
            };
            pfn.map(|p| (p, o))
        });
        match at {
            Placement::Highest => found.max_by_key(|&(p, _)| p),
            _ => found.min_by_key(|&(p, _)| p),
        }
    }

    /// Every indexed block is a free head on that list and every list block is indexed.
    #[cfg_attr(not(test), allow(dead_code))] // for tests and debug checks
    pub fn check(
        &self,
        frames: &FrameTable,
        listed: impl Fn(u8, MigrateType) -> u64,
    ) -> Result<()> {
        for (o, sets) in self.sets.iter().enumerate() {
            for mt in MigrateType::ALL {
                let set = &sets[mt.index()];
                let n = set.len();
                if n != listed(o as u8, mt) {
                    return Err(MmError::Invariant {
                        what: "address index size differs from its free list",
                        at: n,
                    });
                }
                let expect = FrameState::FreeHead {
                    order: hugemm_hw::Order(o as u8),
                    migrate: mt,
                };
                let bad = (0..self.any[0].capacity() >> o).find(|&i| {
                    set.contains(i)
                        && (frames.at(self.base + (i << o) as u32).state() != expect
                            || !self.any[mt.index()].contains(i << o))
                });
                if let Some(i) = bad {
                    return Err(MmError::Invariant {
                        what: "address index names a block not on its list",
                        at: u64::from(self.base) + (i << o) as u64,
                    });
                }
            }
        }
        for mt in MigrateType::ALL {
            let heads: u64 = self.sets.iter().map(|sets| sets[mt.index()].len()).sum();
            if self.any[mt.index()].len() != heads {
                return Err(MmError::Invariant {
                    what: "address index's all-orders set differs from its per-order sets",
                    at: heads,
                });
            }
        }
        Ok(())
    }
}

impl PhysMem {
    /// `__rmqueue_smallest` under a placement: the lowest or highest block on `mt`'s lists
    /// of order >= `order`, split keeping the part at that end. O(log64 frames) for order
    /// 0, O(orders x log64 frames) above.
    pub(crate) fn rmqueue_placed(
        &mut self,
        order: u8,
        mt: MigrateType,
        at: Placement,
    ) -> Option<u32> {
        let (head, cur) = self.index.as_ref()?[self.zone].extreme(order, mt, at)?;
        self.list_remove(head);
        Some(self.expand_toward(head, order, cur, mt, at == Placement::Highest))
    }

    /// `expand`, keeping the highest `2^low` frames when `high_end`; returns the kept head.
    pub(crate) fn expand_toward(
        &mut self,
        mut pfn: u32,
        low: u8,
        mut high: u8,
        mt: MigrateType,
        high_end: bool,
    ) -> u32 {
        while high > low {
            high -= 1;
            if high_end {
                self.list_push(pfn, high, mt);
                pfn += 1 << high;
            } else {
                self.list_push(pfn + (1 << high), high, mt);
            }
        }
        pfn
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bit_tree_finds_its_extremes_across_levels() {
        let mut t = BitTree::new(300_000);
        assert_eq!(t.extreme(false), None);
        for i in [5, 70_000, 299_999, 4096] {
            t.insert(i);
        }
        assert_eq!(
            (t.extreme(false), t.extreme(true)),
            (Some(5), Some(299_999))
        );
        t.remove(5);
        t.remove(299_999);
        assert_eq!(
            (t.extreme(false), t.extreme(true)),
            (Some(4096), Some(70_000))
        );
        t.remove(4096);
        t.remove(70_000);
        assert_eq!(t.extreme(true), None);
        assert_eq!(t.len(), 0);
    }

    #[test]
    fn a_tiny_bit_tree_has_one_level() {
        let mut t = BitTree::new(1);
        t.insert(0);
        assert!(t.contains(0));
        assert_eq!(t.extreme(true), Some(0));
    }
}
