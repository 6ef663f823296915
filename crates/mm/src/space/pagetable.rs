//! A process's page table: a sparse map of 1 GB chunks, each a boxed array of 512 region
//! slots (one per 2 MB region, the PMD level); a slot is empty, a huge mapping, the huge
//! zero page, or a table of 512 PTEs. The PML4/PDPT levels are not materialised: the
//! hardware model prices walks, this structure only has to translate.
//!
//! Owns slots, PTE tables and the address arithmetic of the layout ([`VaLayout`]). The hot
//! path ([`PageTable::touch`]) hits a cached chunk and does no hashing or allocation. This
//! module must not allocate frames: the page-table pages a [`PteTable`] records are
//! allocated and freed by the mechanisms.
//!
//! # Accessed and dirty bits
//!
//! They follow x86 (Intel SDM vol. 3A sections 4.8, 4.10.2.3 and 4.10.4.3) under the
//! default [`crate::AccessedBits::Walk`]:
//!
//! * **Accessed**: only a page walk sets it. A TLB entry is only ever cached from an
//!   entry whose bit is set, so a reference that hits the TLB finds nothing to set, and a
//!   bit cleared without a flush (`Kernel::clear_accessed`, `Kernel::scan_pages`, as
//!   Linux's `ptep_clear_flush_young` and `ptep_test_and_clear_young` do on x86) stays
//!   clear for as long as the translation stays cached. This module does not know
//!   whether a reference walks (the hardware model decides, after translation), so
//!   [`PageTable::touch`] leaves the bit as it is and reports it in
//!   [`Touch::Mapped`]'s `young`; the engine calls [`PageTable::mark_accessed`] (through
//!   `Kernel::mark_accessed`) when the reference walked and the bit was clear — a second
//!   lookup only for the first walk after a clear. Faults map entries young, as x86
//!   Linux does (`vm_page_prot` carries `_PAGE_ACCESSED`): the retried access would walk.
//! * **Dirty**: every write sets it if it is clear. The hardware sets it on a write
//!   through a TLB entry whose cached dirty bit is clear, re-reading the entry; a TLB
//!   entry can only hold a clear dirty bit where the entry's bit is clear too, unless
//!   software cleared the bit without a flush — and the kernel model never clears a dirty
//!   bit at all (frames are mapped dirty by faults and collapses; splits, migrations and
//!   exchanges copy the bit), so "a write sets D if D is clear" is exact here. Whether
//!   the hardware's re-read for D also sets A is not modelled (it would only matter for
//!   an entry mapped clean, which the model never makes).
//!
//! Under [`crate::AccessedBits::EveryReference`] every reference sets the accessed bit,
//! as hugemm did before issue 20.

use crate::api::Touch;
use crate::error::{MmError, Result};
use crate::space::pte::Pte;
use hugemm_hw::{Geometry, PageSize, Pfn};
use std::collections::BTreeMap;

/// Address arithmetic of one geometry, precomputed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct VaLayout {
    pub base_shift: u32,
    pub region_shift: u32,
    pub chunk_shift: u32,
    /// Entries per table (512).
    pub fanout: u64,
    /// First address past the user half of the address space.
    pub va_limit: u64,
}

impl VaLayout {
    /// The layout of `g`, if the model supports it.
    pub fn new(g: Geometry) -> Result<VaLayout> {
        let bad = |what| Err(MmError::InvalidConfig { what });
        if !(9..=21).contains(&g.base_shift) {
            return bad("geometry.base_shift must be in 9..=21");
        }
        if !(1..=10).contains(&g.level_bits) || !(3..=5).contains(&g.levels) {
            return bad("geometry.level_bits must be in 1..=10 and levels in 3..=5");
        }
        let va_bits = g.base_shift + g.level_bits * g.levels;
        if va_bits > 57 {
            return bad("geometry addresses more than 57 bits");
        }
        Ok(VaLayout {
            base_shift: g.base_shift,
            region_shift: g.base_shift + g.level_bits,
            chunk_shift: g.base_shift + 2 * g.level_bits,
            fanout: 1 << g.level_bits,
            va_limit: 1 << (va_bits - 1),
        })
    }

    /// Bytes in a base page.
    pub const fn base_bytes(&self) -> u64 {
        1 << self.base_shift
    }
    /// Bytes in a region (a huge page).
    pub const fn region_bytes(&self) -> u64 {
        1 << self.region_shift
    }
    /// The buddy order of a huge page (9).
    pub const fn huge_order(&self) -> u8 {
        (self.region_shift - self.base_shift) as u8
    }
    /// The region holding `va`.
    #[inline]
    pub const fn region_of(&self, va: u64) -> u64 {
        va & !(self.region_bytes() - 1)
    }
    /// Index of `va`'s PTE in its table.
    #[inline]
    pub const fn page_index(&self, va: u64) -> usize {
        ((va >> self.base_shift) & (self.fanout - 1)) as usize
    }
    /// Index of `va`'s slot in its chunk.
    #[inline]
    pub const fn slot_index(&self, va: u64) -> usize {
        ((va >> self.region_shift) & (self.fanout - 1)) as usize
    }
}

/// Physical addresses of the shared zero pages. Both lie just past the end of managed
/// memory, like Linux's `ZERO_PAGE` in the kernel image; the huge zero page, which Linux
/// allocates lazily from the buddy allocator, is modelled the same way so it never
/// competes for an order-9 block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ZeroPages {
    pub base: u64,
    pub huge: u64,
}

/// 512 PTEs and their counts, with the page-table page holding them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PteTable {
    ptes: Box<[Pte]>,
    table_pfn: Pfn,
    present: u16,
    zero: u16,
}

impl PteTable {
    /// A table in page `table_pfn` whose entry `i` is `entry(i)`.
    pub fn filled(table_pfn: Pfn, fanout: u64, entry: impl Fn(u64) -> Pte) -> PteTable {
        let ptes: Box<[Pte]> = (0..fanout).map(entry).collect();
        let present = ptes.iter().filter(|p| p.is_present()).count() as u16;
        let zero = ptes.iter().filter(|p| p.is_zero_page()).count() as u16;
        PteTable {
            ptes,
            table_pfn,
            present,
            zero,
        }
    }
    /// Entry `i` (none when out of range).
    pub fn get(&self, i: usize) -> Pte {
        self.ptes.get(i).copied().unwrap_or(Pte::NONE)
    }
    /// Replace entry `i`, keeping the counts; returns the old entry.
    pub fn set(&mut self, i: usize, pte: Pte) -> Pte {
        let Some(slot) = self.ptes.get_mut(i) else {
            return Pte::NONE;
        };
        let old = std::mem::replace(slot, pte);
        self.present = self.present + pte.is_present() as u16 - old.is_present() as u16;
        self.zero = self.zero + pte.is_zero_page() as u16 - old.is_zero_page() as u16;
        old
    }
    /// All entries.
    pub fn ptes(&self) -> &[Pte] {
        &self.ptes
    }
    /// Present entries (zero-page entries included).
    pub fn present(&self) -> u32 {
        self.present as u32
    }
    /// Entries mapping the zero page.
    pub fn zero(&self) -> u32 {
        self.zero as u32
    }
    /// The page-table page.
    pub fn table_pfn(&self) -> Pfn {
        self.table_pfn
    }
    /// Clear every accessed bit; returns how many were set.
    pub fn clear_accessed(&mut self) -> u32 {
        self.ptes
            .iter_mut()
            .map(|p| p.clear_accessed() as u32)
            .sum()
    }
}

/// What [`PageTable::touch`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Walked {
    /// Translated (or a write to the zero page found).
    Hit(Touch),
    /// Translated, by a write through a mapping whose frame may not record a write of its
    /// process yet: the caller records the page's content.
    FirstWrite(Touch),
    /// Nothing mapped.
    Miss,
}

/// What maps one 2 MB region.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum Slot {
    /// Nothing.
    #[default]
    Empty,
    /// A huge page on the order-9 block at `pfn`; `unwritten` of its base pages have not
    /// been written by the process since the block was allocated (their frames' content
    /// is still what allocation or collapse left), so writes to it look at frames until
    /// none is left.
    Huge {
        pfn: Pfn,
        accessed: bool,
        dirty: bool,
        unwritten: u16,
    },
    /// The huge zero page (read-only).
    HugeZero { accessed: bool },
    /// A table of base-page PTEs.
    Table(PteTable),
}

/// Entries of a page table's direct-mapped cache of chunk indices (16 GB of contiguous
/// address space hit it whatever the access order).
const RECENT: usize = 16;

/// The page table of one address space.
#[derive(Clone, Debug)]
pub(crate) struct PageTable {
    layout: VaLayout,
    chunks: Vec<Box<[Slot]>>,
    index: BTreeMap<u64, u32>,
    /// (chunk key, index into `chunks`) by key modulo [`RECENT`]: the hot path's lookup,
    /// before `index`. Chunks are never removed, so an entry never goes stale; a key
    /// that is not there (`u64::MAX` is no key) is looked up in `index`.
    recent: [(u64, u32); RECENT],
}

impl PageTable {
    /// An empty page table.
    pub fn new(layout: VaLayout) -> PageTable {
        PageTable {
            layout,
            chunks: Vec::new(),
            index: BTreeMap::new(),
            recent: [(u64::MAX, 0); RECENT],
        }
    }

    /// The index into `chunks` of the chunk with key `key`, if it exists.
    #[inline]
    fn chunk_index(&self, key: u64) -> Option<u32> {
        match self.recent[key as usize % RECENT] {
            (k, idx) if k == key => Some(idx),
            _ => self.index.get(&key).copied(),
        }
    }

    /// The hot path: translate `va`, setting the dirty bit on a write and the accessed bit
    /// only if `accessed` says so (see the module doc: under [`crate::AccessedBits::Walk`]
    /// the caller sets it afterwards with [`PageTable::mark_accessed`] if the reference
    /// walks and [`Touch::Mapped`]'s `young` says it is clear).
    /// [`Walked::FirstWrite`] when a write goes through a mapping whose frame may not
    /// record a write yet (the caller records the page's content); [`Walked::Miss`] when
    /// nothing is mapped there.
    #[inline(always)]
    pub fn touch(&mut self, va: u64, write: bool, accessed: bool, zero: ZeroPages) -> Walked {
        let l = self.layout;
        let Some(slot) = self.slot_mut(va) else {
            return Walked::Miss;
        };
        match slot {
            Slot::Table(t) => match t.ptes.get_mut(l.page_index(va)) {
                Some(pte) => touch_pte(pte, &l, va, write, accessed, zero),
                None => Walked::Miss,
            },
            Slot::Huge {
                pfn,
                accessed: a,
                dirty,
                unwritten,
            } => {
                *a |= accessed;
                *dirty |= write;
                let pa = (pfn.0 << l.base_shift) | (va & (l.region_bytes() - 1));
                let t = Touch::Mapped {
                    pa,
                    size: PageSize::Huge,
                    young: *a,
                };
                if write && *unwritten > 0 {
                    Walked::FirstWrite(t)
                } else {
                    Walked::Hit(t)
                }
            }
            Slot::HugeZero { .. } if write => Walked::Hit(Touch::WriteToZeroPage),
            Slot::HugeZero { accessed: a } => {
                *a |= accessed;
                Walked::Hit(Touch::Mapped {
                    pa: zero.huge + (va & (l.region_bytes() - 1)),
                    size: PageSize::Huge,
                    young: *a,
                })
            }
            Slot::Empty => Walked::Miss,
        }
    }

    /// Set the accessed bit of the entry mapping `va` (a huge entry, a base-page PTE or a
    /// zero-page PTE): what a page walk that uses the entry does. Returns whether an entry
    /// maps `va`. Off the hot path: called once per walk that finds the bit clear.
    #[inline(never)]
    pub fn mark_accessed(&mut self, va: u64) -> bool {
        let l = self.layout;
        match self.slot_mut(va) {
            Some(Slot::Table(t)) => match t.ptes.get_mut(l.page_index(va)) {
                Some(pte) if pte.is_present() => {
                    pte.reference(false, true);
                    true
                }
                _ => false,
            },
            Some(Slot::Huge { accessed, .. } | Slot::HugeZero { accessed }) => {
                *accessed = true;
                true
            }
            Some(Slot::Empty) | None => false,
        }
    }

    /// The slot of `va`'s region, read-only, through the cache of chunk indices.
    #[inline]
    fn slot_peek(&self, va: u64) -> Option<&Slot> {
        let idx = self.chunk_index(va >> self.layout.chunk_shift)?;
        self.chunks
            .get(idx as usize)?
            .get(self.layout.slot_index(va))
    }

    /// Prefetch into the host's caches the entry that translates `va` (simulator speed
    /// only; no state changes). Returns the size of the page mapping `va` as its slot
    /// says now (a table's entry may still be absent), if anything maps its region.
    #[inline]
    pub fn prefetch(&self, va: u64) -> Option<PageSize> {
        match self.slot_peek(va) {
            Some(Slot::Table(t)) => {
                if let Some(pte) = t.ptes.get(self.layout.page_index(va)) {
                    hugemm_hw::prefetch::prefetch(pte);
                }
                Some(PageSize::Base)
            }
            Some(slot @ (Slot::Huge { .. } | Slot::HugeZero { .. })) => {
                hugemm_hw::prefetch::prefetch(slot);
                Some(PageSize::Huge)
            }
            Some(Slot::Empty) | None => None,
        }
    }

    /// The physical address and page size `va` maps to, without touching accessed bits:
    /// `None` when it is not mapped to a frame or the zero page.
    #[inline]
    pub fn peek(&self, va: u64, zero: ZeroPages) -> Option<(u64, PageSize)> {
        let l = self.layout;
        match self.slot_peek(va)? {
            Slot::Table(t) => {
                let pte = t.ptes.get(l.page_index(va))?;
                let off = va & (l.base_bytes() - 1);
                match (pte.is_present(), pte.is_zero_page()) {
                    (false, _) => None,
                    (true, true) => Some((zero.base + off, PageSize::Base)),
                    (true, false) => Some(((pte.pfn().0 << l.base_shift) + off, PageSize::Base)),
                }
            }
            Slot::Huge { pfn, .. } => Some((
                (pfn.0 << l.base_shift) | (va & (l.region_bytes() - 1)),
                PageSize::Huge,
            )),
            Slot::HugeZero { .. } => {
                Some((zero.huge + (va & (l.region_bytes() - 1)), PageSize::Huge))
            }
            Slot::Empty => None,
        }
    }

    /// The slot of `va`'s region, through the cache of chunk indices (updating it).
    #[inline]
    fn slot_mut(&mut self, va: u64) -> Option<&mut Slot> {
        let key = va >> self.layout.chunk_shift;
        let cached = &mut self.recent[key as usize % RECENT];
        let idx = if cached.0 == key {
            cached.1
        } else {
            let idx = *self.index.get(&key)?;
            *cached = (key, idx);
            idx
        };
        let i = self.layout.slot_index(va);
        self.chunks.get_mut(idx as usize)?.get_mut(i)
    }

    /// The slot of `va`'s region, if its chunk exists.
    pub fn slot(&self, va: u64) -> Option<&Slot> {
        let idx = self.chunk_index(va >> self.layout.chunk_shift)?;
        self.chunks
            .get(idx as usize)?
            .get(self.layout.slot_index(va))
    }

    /// The slot of `va`'s region, mutably (without updating the cache of chunk indices).
    pub fn slot_mut_uncached(&mut self, va: u64) -> Option<&mut Slot> {
        let idx = self.chunk_index(va >> self.layout.chunk_shift)?;
        self.chunks
            .get_mut(idx as usize)?
            .get_mut(self.layout.slot_index(va))
    }

    /// Whether `va`'s region is empty (or its chunk absent).
    pub fn is_empty(&self, va: u64) -> bool {
        matches!(self.slot(va), None | Some(Slot::Empty))
    }

    /// Put `slot` in `va`'s region, creating the chunk if needed; returns the old slot.
    pub fn replace(&mut self, va: u64, slot: Slot) -> Slot {
        let key = va >> self.layout.chunk_shift;
        let idx = match self.index.get(&key) {
            Some(&idx) => idx,
            None => self.new_chunk(key),
        };
        let i = self.layout.slot_index(va);
        std::mem::replace(&mut self.chunks[idx as usize][i], slot)
    }

    /// Empty `va`'s region; returns what was there.
    pub fn take(&mut self, va: u64) -> Slot {
        self.slot_mut_uncached(va)
            .map(std::mem::take)
            .unwrap_or_default()
    }

    fn new_chunk(&mut self, key: u64) -> u32 {
        let idx = self.chunks.len() as u32;
        self.chunks
            .push((0..self.layout.fanout).map(|_| Slot::Empty).collect());
        self.index.insert(key, idx);
        self.recent[key as usize % RECENT] = (key, idx);
        idx
    }

    /// Non-empty regions intersecting `[start, end)`, low to high.
    pub fn mapped_regions(&self, start: u64, end: u64) -> Vec<u64> {
        let l = self.layout;
        let mut out = Vec::new();
        if start >= end {
            return out;
        }
        let chunk_bytes = 1u64 << l.chunk_shift;
        for (&key, &idx) in self
            .index
            .range(start >> l.chunk_shift..=(end - 1) >> l.chunk_shift)
        {
            let base = key << l.chunk_shift;
            let (lo, hi) = (start.max(base), end.min(base.saturating_add(chunk_bytes)));
            for s in l.slot_index(lo)..=l.slot_index(hi - 1) {
                if self.chunks[idx as usize][s] != Slot::Empty {
                    out.push(base + ((s as u64) << l.region_shift));
                }
            }
        }
        out
    }

    /// Every non-empty region with its slot, low to high.
    pub fn slots(&self) -> impl Iterator<Item = (u64, &Slot)> + '_ {
        let l = self.layout;
        self.index.iter().flat_map(move |(&key, &idx)| {
            self.chunks[idx as usize]
                .iter()
                .enumerate()
                .filter(|(_, s)| **s != Slot::Empty)
                .map(move |(i, s)| ((key << l.chunk_shift) + ((i as u64) << l.region_shift), s))
        })
    }
}

#[inline]
fn touch_pte(
    pte: &mut Pte,
    l: &VaLayout,
    va: u64,
    write: bool,
    accessed: bool,
    zero: ZeroPages,
) -> Walked {
    let off = va & (l.base_bytes() - 1);
    if pte.is_frame() {
        let young = pte.reference(write, accessed);
        let t = Touch::Mapped {
            pa: (pte.pfn().0 << l.base_shift) | off,
            size: PageSize::Base,
            young,
        };
        if write && !pte.written() {
            *pte = pte.with_written(true);
            return Walked::FirstWrite(t);
        }
        return Walked::Hit(t);
    }
    if !pte.is_present() {
        return Walked::Miss;
    }
    if write {
        return Walked::Hit(Touch::WriteToZeroPage);
    }
    let young = pte.reference(false, accessed);
    Walked::Hit(Touch::Mapped {
        pa: zero.base + off,
        size: PageSize::Base,
        young,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ZERO: ZeroPages = ZeroPages {
        base: 1 << 40,
        huge: 1 << 41,
    };

    fn pt() -> PageTable {
        PageTable::new(VaLayout::new(Geometry::X86_64).unwrap())
    }

    #[test]
    fn x86_layout_matches_the_architecture() {
        let l = VaLayout::new(Geometry::X86_64).unwrap();
        assert_eq!(
            (l.region_bytes(), l.fanout, l.va_limit),
            (2 << 20, 512, 1 << 47)
        );
        assert_eq!(l.page_index(0x7f00_0020_3000), 3);
        assert_eq!(l.slot_index(0x7f00_0020_3000), 1);
        assert!(VaLayout::new(Geometry {
            levels: 6,
            ..Geometry::X86_64
        })
        .is_err());
    }

    #[test]
    fn touch_translates_and_sets_bits() {
        let mut p = pt();
        let va = 0x7f00_0000_0000;
        assert_eq!(p.touch(va, false, true, ZERO), Walked::Miss);
        let t = PteTable::filled(Pfn(9), 512, |i| {
            if i == 1 {
                Pte::frame(Pfn(100), false, false)
            } else {
                Pte::NONE
            }
        });
        p.replace(va, Slot::Table(t));
        let mapped = Touch::Mapped {
            pa: 100 * 4096 + 8,
            size: PageSize::Base,
            young: true,
        };
        assert_eq!(p.touch(va + 0x1008, false, true, ZERO), Walked::Hit(mapped));
        assert_eq!(
            p.touch(va + 0x1008, true, true, ZERO),
            Walked::FirstWrite(mapped),
            "the first write through an entry looks at the frame"
        );
        assert_eq!(p.touch(va + 0x1008, true, true, ZERO), Walked::Hit(mapped));
        let Some(Slot::Table(t)) = p.slot(va) else {
            panic!()
        };
        assert!(t.get(1).accessed() && t.get(1).dirty() && t.get(1).written());
        assert_eq!(p.touch(va, false, true, ZERO), Walked::Miss);
    }

    #[test]
    fn huge_and_huge_zero_slots_translate_at_two_megabytes() {
        let mut p = pt();
        let va = 0x7f00_0040_0000;
        let huge = |accessed, dirty, unwritten| Slot::Huge {
            pfn: Pfn(512),
            accessed,
            dirty,
            unwritten,
        };
        p.replace(va, huge(false, false, 1));
        let t = Touch::Mapped {
            pa: 512 * 4096 + 0x1234,
            size: PageSize::Huge,
            young: true,
        };
        assert_eq!(p.touch(va + 0x1234, false, true, ZERO), Walked::Hit(t));
        assert_eq!(
            p.touch(va + 0x1234, true, true, ZERO),
            Walked::FirstWrite(t)
        );
        assert_eq!(p.slot(va), Some(&huge(true, true, 1)));
        p.replace(va, huge(true, true, 0));
        assert_eq!(p.touch(va + 0x1234, true, true, ZERO), Walked::Hit(t));
        p.replace(va, Slot::HugeZero { accessed: false });
        assert_eq!(
            p.touch(va, true, true, ZERO),
            Walked::Hit(Touch::WriteToZeroPage)
        );
        assert_eq!(
            p.touch(va + 5, false, true, ZERO),
            Walked::Hit(Touch::Mapped {
                pa: ZERO.huge + 5,
                size: PageSize::Huge,
                young: true,
            })
        );
    }

    #[test]
    fn a_touch_that_does_not_walk_sets_dirty_but_not_accessed() {
        let mut p = pt();
        let va = 0x7f00_0000_0000;
        let t = PteTable::filled(Pfn(9), 512, |i| match i {
            0 => Pte::frame(Pfn(100), false, false).with_written(true),
            _ => Pte::zero_page(false),
        });
        p.replace(va, Slot::Table(t));
        let young = |w: Walked| match w {
            Walked::Hit(Touch::Mapped { young, .. }) => young,
            other => panic!("{other:?}"),
        };
        assert!(!young(p.touch(va, true, false, ZERO)));
        assert!(!young(p.touch(va + 0x1000, false, false, ZERO)));
        let Some(Slot::Table(t)) = p.slot(va) else {
            panic!()
        };
        assert!(!t.get(0).accessed() && t.get(0).dirty());
        assert!(!t.get(1).accessed());
        assert!(p.mark_accessed(va) && p.mark_accessed(va + 0x1000));
        assert!(young(p.touch(va, false, false, ZERO)));
        assert!(
            !p.mark_accessed(va + (2 << 20)),
            "nothing maps the next region"
        );
        p.replace(va, Slot::HugeZero { accessed: false });
        assert!(!young(p.touch(va + 5, false, false, ZERO)));
        assert!(p.mark_accessed(va + 5));
        assert_eq!(p.slot(va), Some(&Slot::HugeZero { accessed: true }));
    }

    #[test]
    fn mapped_regions_skip_empty_slots_and_chunks() {
        let mut p = pt();
        for va in [0x4000_0000u64, 0x4020_0000, 0x1_4000_0000] {
            p.replace(va, Slot::HugeZero { accessed: false });
        }
        assert_eq!(
            p.mapped_regions(0x4000_1000, 0x1_4000_0001),
            vec![0x4000_0000, 0x4020_0000, 0x1_4000_0000]
        );
        assert_eq!(
            p.mapped_regions(0x4020_0000, 0x4020_0001),
            vec![0x4020_0000]
        );
        assert_eq!(p.take(0x4020_0000), Slot::HugeZero { accessed: false });
        assert_eq!(p.slots().count(), 2);
    }

    #[test]
    fn table_counts_follow_entries() {
        let mut t = PteTable::filled(Pfn(1), 512, |_| Pte::NONE);
        t.set(0, Pte::zero_page(true));
        t.set(1, Pte::frame(Pfn(5), true, false));
        assert_eq!((t.present(), t.zero()), (2, 1));
        t.set(0, Pte::frame(Pfn(6), false, false));
        assert_eq!((t.present(), t.zero()), (2, 0));
        assert_eq!(t.clear_accessed(), 1);
        assert_eq!(t.set(9999, Pte::NONE), Pte::NONE);
    }
}
