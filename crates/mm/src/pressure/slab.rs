//! Slab shrinking: reclaimable kernel memory (dentry, inode and buffer-head caches, the
//! `KmemKind::Reclaimable` allocations) freed under memory pressure in proportion to
//! page-cache reclaim, as `shrink_slab` does (`mm/vmscan.c`, `mm/shrinker.c`).
//!
//! Linux scans a cache's `freeable` objects at `4 / seeks` times the rate at which reclaim
//! scans the LRU lists: `do_shrink_slab` adds `delta = 4 * nr_scanned / seeks * freeable /
//! (nr_eligible + 1)` to the shrinker's work (Linux 4.x; 6.x computes `freeable >>
//! priority` against `lru_size >> priority`, the same ratio), and every filesystem cache
//! uses `DEFAULT_SEEKS` (2). So reclaiming a fraction `f` of the LRU scans a fraction `2f`
//! of each cache. Work below a page is carried over, as Linux carries `nr_deferred`, and
//! the carried work never exceeds twice the cache (`do_shrink_slab`'s cap on
//! `total_scan`).
//!
//! Choices where the model is coarser than Linux, each written here:
//! - Page granularity. The model's kernel memory is whole slab pages, so a scanned page
//!   is a freed page, oldest first (a cache's LRU is roughly its allocation order). Real
//!   shrinkers free objects, skip referenced ones once, and a slab page returns to the
//!   buddy allocator only when all its objects are gone, so Linux frees fewer pages for
//!   the same scan: this is an upper bound on slab reclaim.
//! - One cache. All reclaimable kernel memory is one shrinker's, oldest first; Linux
//!   balances per cache (and per memcg and node), which is the same ratio applied to each.
//! - With the LRU lists empty, reclaim shrinks the slab alone (Linux's priority falls to
//!   0 and shrinkers scan their whole cache).
//!
//! A block the shrinker freed while a workload still holds its handle is remembered, so
//! the holder's later `kfree` is a no-op rather than a double free (in Linux the object is
//! simply gone: its owner, a dentry or inode, would be looked up again). This module owns
//! which reclaimable blocks are live and which to shrink next; how much to reclaim is
//! `reclaim.rs`'s.

use hugemm_hw::{Order, Pfn};
use std::collections::{BTreeMap, BTreeSet};

/// `4 / DEFAULT_SEEKS`: cache scanned per LRU scanned.
pub const SHRINK_RATIO: u64 = 2;
/// Work is counted in thousandths of a page so that small scans accumulate.
const MILLI: u64 = 1000;

/// The live reclaimable kernel blocks and the shrinker's carried-over work.
#[derive(Clone, Debug, Default)]
pub(crate) struct SlabCaches {
    /// Live blocks by allocation id (ids grow with time, so the first is the oldest).
    live: BTreeMap<u64, (Pfn, Order)>,
    /// Ids shrunk while their holder still had the handle.
    shrunk: BTreeSet<u64>,
    /// Frames in live blocks.
    pages: u64,
    /// Shrinker work owed, in thousandths of a page (`nr_deferred`).
    debt: u64,
}

/// What [`SlabCaches::state`] finds for a handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Release {
    /// The block is live; its holder's free releases its frames.
    Live,
    /// The shrinker already freed it; its holder's free only forgets it.
    Shrunk,
    /// Not a reclaimable block this cache knows (never allocated, freed twice, or not the
    /// block the id was given to).
    Unknown,
}

impl SlabCaches {
    /// Frames held by live reclaimable blocks.
    pub fn pages(&self) -> u64 {
        self.pages
    }

    /// Record a new live block.
    pub fn insert(&mut self, id: u64, pfn: Pfn, order: Order) {
        self.live.insert(id, (pfn, order));
        self.pages += 1 << order.0;
    }

    /// What a free of `id`'s handle (naming `pfn` and `order`) would find. Changes nothing.
    pub fn state(&self, id: u64, pfn: Pfn, order: Order) -> Release {
        match self.live.get(&id) {
            Some(&block) if block == (pfn, order) => Release::Live,
            Some(_) => Release::Unknown,
            None if self.shrunk.contains(&id) => Release::Shrunk,
            None => Release::Unknown,
        }
    }

    /// The holder of `id` frees it (after [`SlabCaches::state`] said `Live` or `Shrunk`):
    /// forget it.
    pub fn release(&mut self, id: u64) {
        if let Some((_, order)) = self.live.remove(&id) {
            self.pages -= 1 << order.0;
        } else {
            self.shrunk.remove(&id);
        }
    }

    /// Reclaim scanned `scanned` LRU pages out of `lru` on the lists: add the shrinker's
    /// share of work (`SHRINK_RATIO * scanned / (lru + 1)` of the cache).
    pub fn charge(&mut self, scanned: u64, lru: u64) {
        let share = u128::from(SHRINK_RATIO * scanned) * u128::from(self.pages * MILLI)
            / u128::from(lru + 1);
        let cap = SHRINK_RATIO * self.pages * MILLI;
        self.debt = (self.debt + u64::try_from(share).unwrap_or(cap)).min(cap);
    }

    /// Owe at least `pages` pages of work (reclaim with nothing on the LRU lists).
    /// At least the oldest block is owed, so that a call frees something.
    pub fn charge_pages(&mut self, pages: u64) {
        let oldest = self
            .live
            .first_key_value()
            .map_or(0, |(_, &(_, order))| 1u64 << order.0);
        self.debt = self.debt.max(pages.min(self.pages).max(oldest) * MILLI);
    }

    /// The oldest live block if the work owed covers it: removes it, pays for it and
    /// remembers its id as shrunk. `None` when the work owed is below its size.
    pub fn take_due(&mut self) -> Option<(Pfn, Order)> {
        let (&id, &(pfn, order)) = self.live.first_key_value()?;
        let cost = (1u64 << order.0) * MILLI;
        if self.debt < cost {
            return None;
        }
        self.debt -= cost;
        self.live.remove(&id);
        self.shrunk.insert(id);
        self.pages -= 1 << order.0;
        if self.live.is_empty() {
            self.debt = 0;
        }
        Some((pfn, order))
    }

    /// Every live block, oldest first (for the invariant check).
    pub fn iter(&self) -> impl Iterator<Item = (Pfn, Order)> + '_ {
        self.live.values().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(blocks: &[(u64, u8)]) -> SlabCaches {
        let mut s = SlabCaches::default();
        for (i, &(pfn, order)) in blocks.iter().enumerate() {
            s.insert(i as u64 + 1, Pfn(pfn), Order(order));
        }
        s
    }

    fn drain(s: &mut SlabCaches) -> Vec<u64> {
        std::iter::from_fn(|| s.take_due())
            .map(|(p, _)| p.0)
            .collect()
    }

    #[test]
    fn reclaiming_a_fraction_of_the_lru_shrinks_twice_that_fraction_oldest_first() {
        let mut s = cache(&(0..100).map(|i| (i, 0)).collect::<Vec<_>>());
        s.charge(100, 999); // 10% of the LRU
        assert_eq!(drain(&mut s), (0..20).collect::<Vec<_>>());
        assert_eq!(s.pages(), 80);
    }

    #[test]
    fn small_scans_accumulate_until_a_block_is_due() {
        let mut s = cache(&[(0, 2), (4, 0)]); // 5 pages, the oldest an order-2 block
        for _ in 0..3 {
            s.charge(1, 9_999); // 2 * 5 / 10,000 of a page each
            assert_eq!(s.take_due(), None);
        }
        for _ in 0..4_000 {
            s.charge(1, 9_999);
        }
        assert_eq!(
            s.take_due(),
            Some((Pfn(0), Order(2))),
            "4 pages owed by now"
        );
        assert_eq!(s.pages(), 1);
    }

    #[test]
    fn work_owed_is_capped_at_twice_the_cache() {
        let mut s = cache(&[(0, 0), (1, 0)]);
        s.charge(1_000_000, 0);
        assert_eq!(drain(&mut s).len(), 2);
        s.insert(10, Pfn(7), Order(0));
        assert_eq!(s.take_due(), None, "an emptied cache owes nothing");
    }

    #[test]
    fn holders_of_shrunk_blocks_release_them_once() {
        let mut s = cache(&[(0, 0), (1, 1)]);
        s.charge_pages(1);
        assert_eq!(s.take_due(), Some((Pfn(0), Order(0))));
        assert_eq!(s.state(1, Pfn(0), Order(0)), Release::Shrunk);
        s.release(1);
        assert_eq!(s.state(1, Pfn(0), Order(0)), Release::Unknown, "twice");
        assert_eq!(s.state(2, Pfn(1), Order(0)), Release::Unknown, "order");
        assert_eq!(s.state(2, Pfn(0), Order(1)), Release::Unknown, "frame");
        assert_eq!(s.state(2, Pfn(1), Order(1)), Release::Live);
        assert_eq!(s.pages(), 2, "asking changes nothing");
        s.release(2);
        assert_eq!(s.state(2, Pfn(1), Order(1)), Release::Unknown, "twice");
        assert_eq!(s.pages(), 0);
    }
}
