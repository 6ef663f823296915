//! Virtual memory areas: the anonymous mappings of a process, sorted by start address,
//! with their huge-page advice (`VM_HUGEPAGE` / `VM_NOHUGEPAGE`).
//!
//! Owns the sorted map and its splitting and merging (Linux `split_vma`, `vma_merge`:
//! adjacent areas with the same advice become one) and the gap search of `mmap`. It must
//! not touch page tables or frames: unmapping the pages of a range is `unmap.rs`'s.

use crate::api::HugeAdvice;
use hugemm_hw::VirtAddr;
use serde::Serialize;
use std::cell::Cell;
use std::collections::BTreeMap;

/// One anonymous mapping `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Vma {
    /// First address.
    pub start: VirtAddr,
    /// First address past the end.
    pub end: VirtAddr,
    /// Huge-page advice.
    pub advice: HugeAdvice,
}

impl Vma {
    /// Whether `va` lies inside.
    pub fn contains(&self, va: u64) -> bool {
        self.start.0 <= va && va < self.end.0
    }
}

/// The VMAs of one address space, keyed by start address, never overlapping.
#[derive(Clone, Debug, Default)]
pub(crate) struct VmaMap {
    map: BTreeMap<u64, Vma>,
    /// The VMA found last (Linux's per-thread VMA cache): a fault looks its VMA up
    /// several times. Cleared by every change.
    last: Cell<Option<Vma>>,
}

impl VmaMap {
    /// The VMA containing `va`.
    #[inline]
    pub fn find(&self, va: u64) -> Option<Vma> {
        if let Some(v) = self.last.get().filter(|v| v.contains(va)) {
            return Some(v);
        }
        let found = self
            .map
            .range(..=va)
            .next_back()
            .map(|(_, v)| *v)
            .filter(|v| v.contains(va));
        if found.is_some() {
            self.last.set(found);
        }
        found
    }

    /// All VMAs, low to high.
    pub fn iter(&self) -> impl Iterator<Item = &Vma> + '_ {
        self.map.values()
    }

    /// The lowest `align`-aligned address >= `base` where `len` bytes fit below `limit`
    /// without overlapping any VMA (first fit, like `vm_unmapped_area` bottom-up).
    pub fn find_gap(&self, len: u64, align: u64, base: u64, limit: u64) -> Option<u64> {
        let mut cur = align_up(base, align)?;
        for v in self.map.values() {
            if v.end.0 <= cur {
                continue;
            }
            if cur.checked_add(len)? <= v.start.0 {
                return Some(cur);
            }
            cur = align_up(v.end.0, align)?;
        }
        (cur.checked_add(len)? <= limit).then_some(cur)
    }

    /// Add a VMA over a free range, merging with equal neighbours.
    pub fn insert(&mut self, vma: Vma) {
        self.last.set(None);
        self.map.insert(vma.start.0, vma);
        self.merge_around(vma.start.0, vma.end.0);
    }

    /// Remove `[start, end)` from every VMA, splitting the ones that straddle its ends.
    pub fn remove_range(&mut self, start: u64, end: u64) {
        self.last.set(None);
        self.split_at(start);
        self.split_at(end);
        let keys: Vec<u64> = self.map.range(start..end).map(|(&k, _)| k).collect();
        for k in keys {
            self.map.remove(&k);
        }
    }

    /// Set the advice of `[start, end)` (holes skipped), splitting and re-merging.
    pub fn set_advice(&mut self, start: u64, end: u64, advice: HugeAdvice) {
        self.last.set(None);
        self.split_at(start);
        self.split_at(end);
        for v in self.map.range_mut(start..end).map(|(_, v)| v) {
            v.advice = advice;
        }
        self.merge_around(start, end);
    }

    /// `split_vma`: cut the VMA straddling `at` in two.
    fn split_at(&mut self, at: u64) {
        let Some(v) = self.find(at) else {
            return;
        };
        self.last.set(None);
        if v.start.0 == at {
            return;
        }
        self.map.insert(
            v.start.0,
            Vma {
                end: VirtAddr(at),
                ..v
            },
        );
        self.map.insert(
            at,
            Vma {
                start: VirtAddr(at),
                ..v
            },
        );
    }

    /// Merge touching VMAs with equal advice from the one before `start` to the one
    /// at `end`.
    fn merge_around(&mut self, start: u64, end: u64) {
        let from = self
            .map
            .range(..start)
            .next_back()
            .map_or(start, |(&k, _)| k);
        let keys: Vec<u64> = self.map.range(from..=end).map(|(&k, _)| k).collect();
        for pair in keys.windows(2) {
            let (Some(a), Some(b)) = (self.find(pair[0]), self.map.get(&pair[1]).copied()) else {
                continue;
            };
            if a.end == b.start && a.advice == b.advice {
                self.last.set(None);
                self.map.remove(&b.start.0);
                self.map.insert(a.start.0, Vma { end: b.end, ..a });
            }
        }
    }
}

/// `x` rounded up to a multiple of the power of two `align`, if it fits.
pub(crate) fn align_up(x: u64, align: u64) -> Option<u64> {
    Some(x.checked_add(align - 1)? & !(align - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vma(start: u64, end: u64, advice: HugeAdvice) -> Vma {
        Vma {
            start: VirtAddr(start),
            end: VirtAddr(end),
            advice,
        }
    }

    fn starts(m: &VmaMap) -> Vec<(u64, u64)> {
        m.iter().map(|v| (v.start.0, v.end.0)).collect()
    }

    #[test]
    fn adjacent_equal_vmas_merge() {
        let mut m = VmaMap::default();
        m.insert(vma(0x1000, 0x3000, HugeAdvice::None));
        m.insert(vma(0x3000, 0x5000, HugeAdvice::None));
        m.insert(vma(0x5000, 0x6000, HugeAdvice::Hugepage));
        assert_eq!(starts(&m), vec![(0x1000, 0x5000), (0x5000, 0x6000)]);
        assert_eq!(m.find(0x4fff).unwrap().advice, HugeAdvice::None);
        assert!(m.find(0x6000).is_none() && m.find(0x0fff).is_none());
    }

    #[test]
    fn advice_on_part_of_a_vma_splits_it_and_merges_back() {
        let mut m = VmaMap::default();
        m.insert(vma(0x1000, 0x9000, HugeAdvice::None));
        m.set_advice(0x3000, 0x5000, HugeAdvice::Hugepage);
        assert_eq!(
            starts(&m),
            vec![(0x1000, 0x3000), (0x3000, 0x5000), (0x5000, 0x9000)]
        );
        m.set_advice(0x3000, 0x5000, HugeAdvice::None);
        assert_eq!(starts(&m), vec![(0x1000, 0x9000)]);
    }

    #[test]
    fn the_cached_vma_never_outlives_a_change() {
        let mut m = VmaMap::default();
        m.insert(vma(0x1000, 0x9000, HugeAdvice::None));
        assert_eq!(m.find(0x2000).unwrap().end.0, 0x9000);
        m.set_advice(0x1000, 0x3000, HugeAdvice::Hugepage);
        assert_eq!(m.find(0x2000).unwrap().advice, HugeAdvice::Hugepage);
        assert_eq!(m.find(0x2000).unwrap().end.0, 0x3000);
        m.remove_range(0x1000, 0x3000);
        assert!(m.find(0x2000).is_none());
        assert_eq!(m.find(0x4000).unwrap().start.0, 0x3000);
    }

    #[test]
    fn removing_a_middle_range_leaves_two_vmas() {
        let mut m = VmaMap::default();
        m.insert(vma(0x1000, 0x9000, HugeAdvice::None));
        m.remove_range(0x3000, 0x4000);
        assert_eq!(starts(&m), vec![(0x1000, 0x3000), (0x4000, 0x9000)]);
        m.remove_range(0, 0x10000);
        assert_eq!(m.iter().count(), 0);
    }

    #[test]
    fn gaps_are_first_fit_and_aligned() {
        let mut m = VmaMap::default();
        assert_eq!(
            m.find_gap(0x1000, 0x1000, 0x10_0000, 1 << 47),
            Some(0x10_0000)
        );
        m.insert(vma(0x10_0000, 0x10_1000, HugeAdvice::None));
        m.insert(vma(0x30_0000, 0x40_0000, HugeAdvice::None));
        assert_eq!(
            m.find_gap(0x1000, 0x1000, 0x10_0000, 1 << 47),
            Some(0x10_1000)
        );
        assert_eq!(
            m.find_gap(0x20_0000, 0x20_0000, 0x10_0000, 1 << 47),
            Some(0x40_0000)
        );
        assert_eq!(m.find_gap(u64::MAX - 5, 0x1000, 0x10_0000, 1 << 47), None);
        assert_eq!(
            m.find_gap(0x10_0000, 0x1000, 0x10_0000, 0x40_0000),
            Some(0x10_1000)
        );
    }
}
