//! Tags of the model's associative structures: TLB and page-walk-cache keys, and the
//! synthetic physical line addresses of page-table entries.
//!
//! * A TLB tag packs the page size (bits 62..61), the ASID (16 bits above the page number)
//!   and the virtual page number at that size, so one STLB can hold several sizes and
//!   address spaces without aliasing; its low bits (the page number's) index the set, as
//!   Intel and AMD TLBs index by low VPN bits. Size class 3 is a *splintered* 4 KB
//!   translation (a piece of a guest huge page the host maps with 4 KB pages:
//!   `nested.rs`), which the STLB may limit apart from native ones. A page-walk-cache tag is the same with the
//!   "page size" of the region an upper-level entry maps (PDE: 2 MB, PDPTE: 1 GB, PML4E:
//!   512 GB).
//! * A page-table line tag stands for the physical 64-byte line holding an entry: from
//!   (ASID, level, entry index / 8), with bit 63 set so it never equals a data line tag
//!   (`pa >> 6` < 2^58). Page-table pages sit at arbitrary physical frames, so the page
//!   part of the key goes through a fixed bijective mix, while the line's position inside
//!   its page-table page (entry index bits 8..3) is kept, as in memory.
//!
//! ASIDs are reduced modulo 2^16 (hardware PCIDs have 12 bits, AMD ASIDs fewer); virtual
//! addresses are masked to the geometry's VA width (48 bits for x86-64 four-level paging),
//! so canonical upper-half addresses do not overflow into other fields. Tags never equal
//! [`crate::setassoc::INVALID`]. This module owns only encodings; it holds no state.

use crate::units::{Geometry, PageSize, VirtAddr};

/// ASID bits kept in a tag.
pub(crate) const ASID_BITS: u32 = 16;
const ASID_MASK: u64 = (1 << ASID_BITS) - 1;
/// Bit position of a TLB tag's page-size field.
const SIZE_SHIFT: u32 = 61;
/// The bits of a TLB tag naming its page size (the class for STLB way limits).
pub(crate) const SIZE_MASK: u64 = 3 << SIZE_SHIFT;
/// The size class of a splintered translation: a 4 KB piece of a guest huge page.
pub(crate) const SPLINTERED: u64 = 3;
/// Bit marking a page-table line tag.
const PT_LINE_BIT: u64 = 1 << 63;
/// Lines per page-table page (4 KB / 64 B) as a shift.
const LINES_PER_TABLE_SHIFT: u32 = 6;
/// Entries per 64-byte line (8-byte entries) as a shift.
const ENTRIES_PER_LINE_SHIFT: u32 = 3;

/// Tag encodings for one geometry.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TagScheme {
    geometry: Geometry,
    va_mask: u64,
    /// Position of the ASID field: the widest page number (base pages) fits below it.
    asid_shift: u32,
}

impl TagScheme {
    /// The encodings for `geometry`.
    pub(crate) fn new(geometry: Geometry) -> TagScheme {
        let va_bits = geometry.base_shift + geometry.level_bits * geometry.levels;
        let va_mask = if va_bits >= 64 {
            u64::MAX
        } else {
            (1 << va_bits) - 1
        };
        // Page numbers of base pages take va_bits - base_shift bits; cap the field so the
        // ASID stays below the size bits even for unusual geometries (wider VAs alias).
        let asid_shift = va_bits
            .saturating_sub(geometry.base_shift)
            .min(SIZE_SHIFT - ASID_BITS);
        TagScheme {
            geometry,
            va_mask,
            asid_shift,
        }
    }

    /// log2 of the bytes mapped by one entry at page-table `level` (1 = PT).
    pub(crate) fn entry_shift(&self, level: u32) -> u32 {
        let g = &self.geometry;
        g.base_shift + g.level_bits * level.saturating_sub(1)
    }

    /// Tag of the region of `1 << shift` bytes holding `va`, in address space `asid`, in
    /// size class `class` (0..=3).
    #[inline]
    fn region_tag(&self, asid: u32, va: VirtAddr, shift: u32, class: u64) -> u64 {
        let page = ((va.0 & self.va_mask) >> shift) & ((1 << self.asid_shift) - 1);
        (class << SIZE_SHIFT) | ((asid as u64 & ASID_MASK) << self.asid_shift) | page
    }

    /// TLB tag of the `size` page holding `va` in `asid`.
    #[inline]
    pub(crate) fn tlb(&self, asid: u32, va: VirtAddr, size: PageSize) -> u64 {
        self.region_tag(asid, va, self.geometry.shift(size), size.index() as u64)
    }

    /// TLB tag of the 4 KB piece holding `va` of a splintered guest huge page in `asid`
    /// (size class [`SPLINTERED`]).
    #[inline]
    pub(crate) fn splintered(&self, asid: u32, va: VirtAddr) -> u64 {
        self.region_tag(asid, va, self.geometry.shift(PageSize::Base), SPLINTERED)
    }

    /// Every TLB tag, of every size class, whose page overlaps `[start, end)` in `asid`
    /// (an ASID as kept in tags), if there are at most `most` of them and the range lies
    /// within the virtual-address width (beyond it tags alias; the caller then scans
    /// everything).
    pub(crate) fn tlb_tags_overlapping(
        &self,
        asid: u32,
        start: VirtAddr,
        end: VirtAddr,
        most: usize,
    ) -> Option<Vec<u64>> {
        if end.0 <= start.0 || end.0 - 1 > self.va_mask {
            return None;
        }
        let classes = [
            (PageSize::Base, 0),
            (PageSize::Huge, 1),
            (PageSize::Giant, 2),
            (PageSize::Base, SPLINTERED),
        ];
        let pages = |size| {
            let shift = self.geometry.shift(size);
            ((end.0 - 1) >> shift) - (start.0 >> shift) + 1
        };
        let total: u64 = classes.iter().map(|&(size, _)| pages(size)).sum();
        if total > most as u64 {
            return None;
        }
        let mut out = Vec::with_capacity(total as usize);
        for (size, class) in classes {
            let shift = self.geometry.shift(size);
            for page in (start.0 >> shift)..=((end.0 - 1) >> shift) {
                out.push(self.region_tag(asid, VirtAddr(page << shift), shift, class));
            }
        }
        Some(out)
    }

    /// Page-walk-cache tag of the upper-level entry at `level` (2 = PDE) covering `va`.
    #[inline]
    pub(crate) fn pwc(&self, asid: u32, va: VirtAddr, level: u32) -> u64 {
        self.region_tag(asid, va, self.entry_shift(level), 0)
    }

    /// Decodes a TLB or PWC tag into (asid, first byte, last byte) of the region it maps,
    /// for region shift `shift`.
    pub(crate) fn region_of(&self, tag: u64, shift: u32) -> (u32, u64, u64) {
        let asid = ((tag >> self.asid_shift) & ASID_MASK) as u32;
        let page = tag & ((1 << self.asid_shift) - 1);
        let first = page << shift;
        (asid, first, first | ((1u64 << shift) - 1))
    }

    /// The page size a TLB tag was made for.
    pub(crate) fn size_of(&self, tag: u64) -> PageSize {
        match (tag >> SIZE_SHIFT) & 3 {
            0 | SPLINTERED => PageSize::Base,
            1 => PageSize::Huge,
            _ => PageSize::Giant,
        }
    }

    /// log2 of the bytes mapped by a TLB entry of `size`.
    pub(crate) fn size_shift(&self, size: PageSize) -> u32 {
        self.geometry.shift(size)
    }

    /// The ASID as it is kept in tags.
    pub(crate) fn asid(&self, asid: u32) -> u32 {
        (asid as u64 & ASID_MASK) as u32
    }

    /// Tag of the physical line holding the page-table entry at `level` (1 = PT) that
    /// translates `va` in `asid`.
    #[inline]
    pub(crate) fn pt_line(&self, asid: u32, va: VirtAddr, level: u32) -> u64 {
        let entry = (va.0 & self.va_mask) >> self.entry_shift(level);
        let line = entry >> ENTRIES_PER_LINE_SHIFT;
        let line_in_table = line & ((1 << LINES_PER_TABLE_SHIFT) - 1);
        let table = line >> LINES_PER_TABLE_SHIFT;
        // table < 2^(va_bits - 12 - 9) <= 2^36 for 57-bit VAs; level < 8; asid < 2^16.
        let key = (((asid as u64 & ASID_MASK) << 3 | (level as u64 & 7)) << 37) | table;
        PT_LINE_BIT | (mix56(key) << LINES_PER_TABLE_SHIFT) | line_in_table
    }
}

/// A fixed bijection on 56-bit values (multiply by odd constants and xor-shift, all modulo
/// 2^56), so distinct page-table pages get distinct, well-spread line addresses.
#[inline]
fn mix56(x: u64) -> u64 {
    const MASK: u64 = (1 << 56) - 1;
    let mut x = x & MASK;
    x = x.wrapping_mul(0x9E37_79B9_7F4A_7C15) & MASK;
    x ^= x >> 29;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9) & MASK;
    x ^= x >> 32;
    x
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::setassoc::INVALID;

    fn scheme() -> TagScheme {
        TagScheme::new(Geometry::X86_64)
    }

    #[test]
    fn tlb_tags_separate_sizes_and_asids() {
        let s = scheme();
        let va = VirtAddr(0x7fff_1234_5000);
        let tags = [
            s.tlb(1, va, PageSize::Base),
            s.tlb(1, va, PageSize::Huge),
            s.tlb(1, va, PageSize::Giant),
            s.tlb(2, va, PageSize::Base),
            s.splintered(1, va),
        ];
        for (i, a) in tags.iter().enumerate() {
            assert_ne!(*a, INVALID);
            for b in &tags[i + 1..] {
                assert_ne!(a, b);
            }
        }
        assert_eq!(s.size_of(tags[1]), PageSize::Huge);
        assert_eq!(s.size_of(tags[2]), PageSize::Giant);
        assert_eq!(s.size_of(tags[4]), PageSize::Base);
        assert_eq!(
            s.tlb(1, va, PageSize::Base),
            s.tlb(1, VirtAddr(va.0 + 0xfff), PageSize::Base)
        );
    }

    #[test]
    fn region_decodes_back() {
        let s = scheme();
        let va = VirtAddr(0x1234_5678_9000);
        let t = s.tlb(7, va, PageSize::Huge);
        let (asid, first, last) = s.region_of(t, 21);
        assert_eq!(asid, 7);
        assert!(first <= va.0 && va.0 <= last);
        assert_eq!(last - first + 1, 2 << 20);
    }

    #[test]
    fn page_table_lines_are_distinct_from_data_and_each_other() {
        let s = scheme();
        let a = s.pt_line(1, VirtAddr(0), 1);
        assert!(a >> 63 == 1 && a != INVALID);
        // Eight PTEs share a line; the ninth is on the next line of the same table.
        assert_eq!(a, s.pt_line(1, VirtAddr(7 << 12), 1));
        assert_eq!(a + 1, s.pt_line(1, VirtAddr(8 << 12), 1));
        assert_ne!(a, s.pt_line(1, VirtAddr(0), 2));
        assert_ne!(a, s.pt_line(2, VirtAddr(0), 1));
        // The PTEs of the next 2 MB region live in another page-table page.
        assert_ne!(a >> 6, s.pt_line(1, VirtAddr(1 << 21), 1) >> 6);
    }

    #[test]
    fn mix_is_injective_on_a_sample() {
        let mut v: Vec<u64> = (0..100_000u64).map(|k| mix56(k * 977)).collect();
        v.sort_unstable();
        v.dedup();
        assert_eq!(v.len(), 100_000);
    }
}
