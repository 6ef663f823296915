//! A process's address space: its VMAs, its page table and the counters of what it maps.
//!
//! Owns the pairing and the resident-set counters (kept incrementally, checked against a
//! recount by the invariant checker). It must not allocate or free frames: mechanisms do,
//! and update the counters as they change mappings.

use crate::space::content::ContentDraw;
use crate::space::pagetable::{PageTable, Slot, VaLayout};
use crate::space::vma::{Vma, VmaMap};

/// One process's virtual memory.
#[derive(Clone, Debug)]
pub(crate) struct AddressSpace {
    pub(crate) vmas: VmaMap,
    pub(crate) pt: PageTable,
    /// Base pages mapped by PTEs to frames of their own (zero-page PTEs excluded).
    pub(crate) base_pages: u64,
    /// Huge mappings of order-9 blocks (the huge zero page excluded).
    pub(crate) huge_pages: u64,
    /// Mapped frames (base pages, and base pages of huge mappings) the process has
    /// written since they were allocated: its useful memory (`content.rs`).
    pub(crate) written_pages: u64,
    /// What the process's first write to a page leaves in it.
    pub(crate) content: ContentDraw,
}

impl AddressSpace {
    pub(crate) fn new(layout: VaLayout, content: ContentDraw) -> AddressSpace {
        AddressSpace {
            vmas: VmaMap::default(),
            pt: PageTable::new(layout),
            base_pages: 0,
            huge_pages: 0,
            written_pages: 0,
            content,
        }
    }

    /// The VMA containing `va`.
    pub(crate) fn vma(&self, va: u64) -> Option<Vma> {
        self.vmas.find(va)
    }

    /// All VMAs, low to high.
    pub(crate) fn vmas(&self) -> impl Iterator<Item = &Vma> + '_ {
        self.vmas.iter()
    }

    /// The VMA holding all of the region `[region, region + bytes)`, if one does.
    pub(crate) fn vma_covering(&self, region: u64, bytes: u64) -> Option<Vma> {
        self.vmas
            .find(region)
            .filter(|v| region.checked_add(bytes).is_some_and(|end| end <= v.end.0))
    }

    /// Resident base pages (frames mapped, huge ones counted as 512).
    pub(crate) fn rss_pages(&self, pages_per_huge: u64) -> u64 {
        self.base_pages + self.huge_pages * pages_per_huge
    }

    /// The slot mapping `va`'s region, if any.
    pub(crate) fn slot(&self, va: u64) -> Option<&Slot> {
        self.pt.slot(va)
    }
}
