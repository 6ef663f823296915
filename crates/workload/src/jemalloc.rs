//! A jemalloc-like allocator (jemalloc 5, the allocator Redis links with): size classes,
//! slabs for small objects, page-granular extents for large ones, and freed memory given
//! back to the kernel with `madvise(MADV_DONTNEED)`.
//!
//! What it models, from jemalloc 5's design (`sc.c`, `extent.c`, `arena.c`):
//! - **Size classes** with 4 KiB pages and a 16-byte quantum: 8, 16, then 16-byte steps
//!   to 128, then four classes per doubling (160, 192, 224, 256, 320, ...). Classes up
//!   to 14 KiB are *small*; larger ones are *large*.
//! - **Slabs**: a small class lives in slabs of `lcm(page, class)` bytes (jemalloc's
//!   `slab_size` looks for exactly that: the least common multiple), each holding a
//!   whole number of regions. An allocation takes the lowest free region of the
//!   lowest-addressed slab that has one (jemalloc keeps non-full slabs in a heap ordered
//!   by age and address); a slab left empty is freed as an extent.
//! - **Extents**: a large allocation, or a new slab, takes the smallest free extent that
//!   fits (lowest address among equals), splitting off the rest; without one it extends
//!   the arena's used end. Freed extents coalesce with free neighbours.
//! - **Purging**: the pages of a freed extent are returned to the kernel at once
//!   (`MADV_DONTNEED`; jemalloc's `dirty_decay_ms` set to 0). jemalloc's default decays
//!   dirty pages over 10 s; HawkEye's Redis experiments describe the pages as returned
//!   when keys are deleted, which the immediate purge gives.
//!
//! Simplifications: one arena (Redis's main thread allocates everything), no thread
//! cache, no `retain` of virtual memory (a freed extent keeps its addresses for reuse),
//! and the whole heap is one reserved virtual range carved from the bottom (jemalloc maps
//! its memory in chunks; the kernel sees the same pages touched, in one VMA instead of
//! several). Addresses are offsets into that range.

use std::collections::{BTreeMap, BTreeSet};

/// Bytes in a page.
pub const PAGE: u64 = 4096;
/// Largest small size class.
pub const SMALL_MAX: u64 = 14 * 1024;

/// The size class of a request of `size` bytes (at least 1).
pub fn size_class(size: u64) -> u64 {
    let size = size.max(1);
    if size <= 8 {
        return 8;
    }
    if size <= 128 {
        return size.div_ceil(16) * 16;
    }
    // Four classes per doubling: (2^k, 2^(k+1)] in steps of 2^(k-2).
    let k = 63 - (size - 1).leading_zeros() as u64; // 2^k < size <= 2^(k+1)
    let step = 1u64 << (k - 2);
    size.div_ceil(step) * step
}

/// Bytes of the slab of small class `class`: the least common multiple of it and a page.
pub fn slab_bytes(class: u64) -> u64 {
    let gcd = |mut a: u64, mut b: u64| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    class / gcd(class, PAGE) * PAGE
}

/// One slab: its extent, its class and which regions are in use.
#[derive(Clone, Debug)]
struct Slab {
    class: u64,
    regions: u32,
    used: Vec<bool>,
    in_use: u32,
}

/// Where a live allocation lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Allocation {
    /// Offset of its first byte in the heap.
    pub offset: u64,
    /// Its size class (bytes it may use).
    pub class: u64,
}

/// The allocator's state.
#[derive(Clone, Debug, Default)]
pub struct Jemalloc {
    /// Free extents by start: length.
    free: BTreeMap<u64, u64>,
    /// The same, ordered by (length, start) for best fit.
    by_size: BTreeSet<(u64, u64)>,
    /// Slabs by start.
    slabs: BTreeMap<u64, Slab>,
    /// Per small class, starts of its slabs with a free region.
    nonfull: BTreeMap<u64, BTreeSet<u64>>,
    /// Large allocations by start: their extent length.
    large: BTreeMap<u64, u64>,
    /// First offset never handed out.
    end: u64,
    /// Bytes in extents handed out (slabs and large), for reports.
    pub active_bytes: u64,
}

/// A range of the heap given back to the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Purge {
    /// Offset of the first page.
    pub offset: u64,
    /// Bytes (whole pages).
    pub len: u64,
}

impl Jemalloc {
    /// An empty heap.
    pub fn new() -> Self {
        Jemalloc::default()
    }

    /// The heap's used extent: offsets below this have been handed out at some time.
    pub fn end(&self) -> u64 {
        self.end
    }

    /// Allocate `size` bytes.
    pub fn malloc(&mut self, size: u64) -> Allocation {
        let class = size_class(size);
        if class <= SMALL_MAX {
            return self.malloc_small(class);
        }
        let len = class.div_ceil(PAGE) * PAGE;
        let offset = self.extent(len);
        self.large.insert(offset, len);
        Allocation { offset, class }
    }

    /// Free an allocation made by [`Jemalloc::malloc`]; returns the pages purged.
    /// Freeing something not allocated is ignored (and returns nothing).
    pub fn free(&mut self, a: Allocation) -> Option<Purge> {
        if let Some(len) = self.large.remove(&a.offset) {
            return Some(self.release(a.offset, len));
        }
        let (&start, slab) = self.slabs.range_mut(..=a.offset).next_back()?;
        let i = ((a.offset - start) / slab.class) as usize;
        if slab.class != a.class || !slab.used.get(i).copied().unwrap_or(false) {
            return None;
        }
        slab.used[i] = false;
        slab.in_use -= 1;
        let (class, in_use) = (slab.class, slab.in_use);
        if in_use > 0 {
            self.nonfull.entry(class).or_default().insert(start);
            return None;
        }
        self.slabs.remove(&start);
        if let Some(set) = self.nonfull.get_mut(&class) {
            set.remove(&start);
        }
        Some(self.release(start, slab_bytes(class)))
    }

    fn malloc_small(&mut self, class: u64) -> Allocation {
        let start = match self.nonfull.get(&class).and_then(|s| s.first().copied()) {
            Some(s) => s,
            None => {
                let bytes = slab_bytes(class);
                let s = self.extent(bytes);
                let regions = (bytes / class) as u32;
                self.slabs.insert(
                    s,
                    Slab {
                        class,
                        regions,
                        used: vec![false; regions as usize],
                        in_use: 0,
                    },
                );
                self.nonfull.entry(class).or_default().insert(s);
                s
            }
        };
        let slab = self.slabs.get_mut(&start).expect("non-full slab exists");
        let i = slab.used.iter().position(|u| !u).expect("a free region");
        slab.used[i] = true;
        slab.in_use += 1;
        if slab.in_use == slab.regions {
            if let Some(set) = self.nonfull.get_mut(&class) {
                set.remove(&start);
            }
        }
        Allocation {
            offset: start + i as u64 * class,
            class,
        }
    }

    /// An extent of `len` bytes (a multiple of a page): best fit among free extents,
    /// else from the end.
    fn extent(&mut self, len: u64) -> u64 {
        self.active_bytes += len;
        if let Some(&(flen, start)) = self.by_size.range((len, 0)..).next() {
            self.take_free(start, flen);
            if flen > len {
                self.put_free(start + len, flen - len);
            }
            return start;
        }
        let start = self.end;
        self.end += len;
        start
    }

    /// Return an extent: purge its pages and coalesce it with free neighbours.
    fn release(&mut self, start: u64, len: u64) -> Purge {
        self.active_bytes -= len;
        let purge = Purge { offset: start, len };
        let (mut s, mut l) = (start, len);
        if let Some((&ps, &pl)) = self.free.range(..s).next_back() {
            if ps + pl == s {
                self.take_free(ps, pl);
                s = ps;
                l += pl;
            }
        }
        if let Some(&nl) = self.free.get(&(s + l)) {
            self.take_free(s + l, nl);
            l += nl;
        }
        self.put_free(s, l);
        purge
    }

    fn take_free(&mut self, start: u64, len: u64) {
        self.free.remove(&start);
        self.by_size.remove(&(len, start));
    }

    fn put_free(&mut self, start: u64, len: u64) {
        self.free.insert(start, len);
        self.by_size.insert((len, start));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_classes_follow_jemalloc() {
        let classes: Vec<u64> = [
            1, 8, 9, 17, 100, 129, 160, 161, 257, 4096, 4097, 4102, 14336,
        ]
        .iter()
        .map(|&s| size_class(s))
        .collect();
        assert_eq!(
            classes,
            [8, 8, 16, 32, 112, 160, 160, 192, 320, 4096, 5120, 5120, 14336]
        );
        assert_eq!(size_class(14337), 16384);
        assert_eq!(size_class(2 << 20), 2 << 20);
        assert_eq!(size_class((2 << 20) + 1), 5 << 19, "2.5 MiB");
    }

    #[test]
    fn slabs_are_the_lcm_of_page_and_class() {
        assert_eq!(slab_bytes(4096), 4096);
        assert_eq!(slab_bytes(5120), 20480);
        assert_eq!(slab_bytes(80), 20480);
        assert_eq!(slab_bytes(64), 4096);
    }

    #[test]
    fn small_objects_pack_into_slabs_and_an_empty_slab_is_purged() {
        let mut j = Jemalloc::new();
        let a: Vec<Allocation> = (0..4).map(|_| j.malloc(5000)).collect();
        assert_eq!(
            a.iter().map(|x| x.offset).collect::<Vec<_>>(),
            [0, 5120, 10240, 15360]
        );
        assert_eq!(j.end(), 20480);
        let fifth = j.malloc(5000);
        assert_eq!(fifth.offset, 20480, "a second slab");
        for x in &a[..3] {
            assert_eq!(j.free(*x), None, "the slab still holds objects");
        }
        assert_eq!(
            j.free(a[3]),
            Some(Purge {
                offset: 0,
                len: 20480
            })
        );
        assert_eq!(j.free(a[3]), None, "a double free is ignored");
        // The next slab comes from the freed extent.
        assert_eq!(j.malloc(64).offset, 0);
    }

    #[test]
    fn large_extents_are_best_fit_and_coalesce() {
        let mut j = Jemalloc::new();
        let a = j.malloc(16384);
        let b = j.malloc(32768);
        let c = j.malloc(16384);
        assert_eq!((a.offset, b.offset, c.offset), (0, 16384, 49152));
        j.free(a);
        j.free(b);
        // One free extent of 48 KiB at 0: a 20 KiB request splits it.
        let d = j.malloc(20000);
        assert_eq!(d.offset, 0);
        assert_eq!(j.malloc(28000).offset, 20480, "the rest, 28 KiB");
        assert_eq!(j.active_bytes, 16384 + 20480 + 28672);
    }
}
