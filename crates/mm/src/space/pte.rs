//! A page-table entry for a base page, packed in a `u64` like the hardware's: frame
//! number in bits 12 and up, present, accessed, dirty, and zero-page (maps the shared
//! zero page, read-only, no frame of its own: Linux's `pte_special` zero-pfn PTE), and a
//! software bit, written: the frame's content already records a write of the mapping
//! process (`content.rs`), so writes through this entry need not look at the frame.
//!
//! Owns the bit layout only. It must not know where tables live or what frames are.

use hugemm_hw::Pfn;

const PRESENT: u64 = 1 << 0;
const ACCESSED: u64 = 1 << 1;
const DIRTY: u64 = 1 << 2;
const ZERO_PAGE: u64 = 1 << 3;
const WRITTEN: u64 = 1 << 4;
const PFN_SHIFT: u32 = 12;

/// One PTE.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Pte(u64);

impl Pte {
    /// Not present.
    pub const NONE: Pte = Pte(0);

    /// A present PTE mapping frame `pfn`.
    pub const fn frame(pfn: Pfn, accessed: bool, dirty: bool) -> Pte {
        Pte((pfn.0 << PFN_SHIFT) | PRESENT | (accessed as u64 * ACCESSED) | (dirty as u64 * DIRTY))
    }

    /// This entry with the written bit set as `yes` says.
    pub const fn with_written(self, yes: bool) -> Pte {
        Pte((self.0 & !WRITTEN) | (yes as u64 * WRITTEN))
    }

    /// Whether the frame's content already records a write through this mapping.
    #[inline]
    pub const fn written(self) -> bool {
        self.0 & WRITTEN != 0
    }

    /// A present, read-only PTE mapping the shared zero page.
    pub const fn zero_page(accessed: bool) -> Pte {
        Pte(PRESENT | ZERO_PAGE | (accessed as u64 * ACCESSED))
    }

    /// Whether anything is mapped.
    #[inline]
    pub const fn is_present(self) -> bool {
        self.0 & PRESENT != 0
    }

    /// Whether it maps the shared zero page.
    #[inline]
    pub const fn is_zero_page(self) -> bool {
        self.0 & ZERO_PAGE != 0
    }

    /// Whether it maps a frame of its own (present and not the zero page).
    #[inline]
    pub const fn is_frame(self) -> bool {
        self.0 & (PRESENT | ZERO_PAGE) == PRESENT
    }

    /// The accessed bit.
    pub const fn accessed(self) -> bool {
        self.0 & ACCESSED != 0
    }

    /// The dirty bit.
    pub const fn dirty(self) -> bool {
        self.0 & DIRTY != 0
    }

    /// The mapped frame (meaningful when [`Pte::is_frame`]).
    #[inline]
    pub const fn pfn(self) -> Pfn {
        Pfn(self.0 >> PFN_SHIFT)
    }

    /// A reference through this entry: the dirty bit on a write, the accessed bit only
    /// when `accessed` says (the caller knows whether the reference walks, see
    /// `pagetable.rs`). Returns whether the accessed bit is now set.
    #[inline]
    pub(crate) fn reference(&mut self, write: bool, accessed: bool) -> bool {
        self.0 |= ((accessed as u64) * ACCESSED) | ((write as u64) * DIRTY);
        self.accessed()
    }

    /// Clear the accessed bit; returns whether it was set.
    pub(crate) fn clear_accessed(&mut self) -> bool {
        let was = self.accessed();
        self.0 &= !ACCESSED;
        was
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_ptes_carry_pfn_and_bits() {
        let mut p = Pte::frame(Pfn(0x12345), false, false);
        assert!(p.is_present() && p.is_frame() && !p.is_zero_page());
        assert_eq!(p.pfn(), Pfn(0x12345));
        p.reference(false, true);
        assert!(p.accessed() && !p.dirty());
        p.reference(true, true);
        assert!(p.dirty());
        let mut q = Pte::frame(Pfn(7), false, false);
        assert!(
            !q.reference(true, false),
            "a write through a cached entry sets no A"
        );
        assert!(q.dirty() && !q.accessed());
        assert!(q.reference(false, true) && q.accessed());
        assert!(p.clear_accessed());
        assert!(!p.accessed() && p.dirty());
        assert!(!p.written() && p.with_written(true).written());
        assert_eq!(p.with_written(true).pfn(), Pfn(0x12345));
        assert!(!p.with_written(true).with_written(false).written());
    }

    #[test]
    fn zero_page_ptes_are_present_but_own_no_frame() {
        let p = Pte::zero_page(true);
        assert!(p.is_present() && p.is_zero_page() && !p.is_frame() && p.accessed());
        assert!(!Pte::NONE.is_present() && !Pte::NONE.is_frame());
    }
}
