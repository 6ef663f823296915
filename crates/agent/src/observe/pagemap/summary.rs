//! The population of each huge-page region of a range, and whether a huge page maps it
//! where that can be told (see the table in [`super`]).
//!
//! A region is not huge-mapped if any of its base pages is absent. With frame numbers, a
//! region whose frames are not one aligned contiguous run is not huge-mapped either; with
//! kpageflags too, a run that is one PMD-sized transparent huge page (a `THP` compound head
//! followed by `THP` tails) is. Without frame numbers, a VMA's `AnonHugePages` (counted
//! only for PMD mappings) settles its fully populated regions when it equals the number
//! already known huge (then none of the others is) or that number plus all the unknown
//! ones (then all are); otherwise they stay [`HugeMapping::Unknown`].

use super::{KPageFlags, PageFlags, Pagemap, PagemapEntry};
use crate::error::Result;
use crate::observe::smaps::{EligibleRange, Vma};
use crate::units::HugeRange;
use hugemm_hw::{Geometry, Pfn, VirtAddr};
use serde::Serialize;

/// Regions read from pagemap in one positioned read (64 regions: 256 KB of entries).
const CHUNK_REGIONS: u64 = 64;

/// How a region's mapping size was told.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Basis {
    /// Not every base page is present, so no huge page maps the region.
    Population,
    /// The frames are not one aligned contiguous run.
    Frames,
    /// The frames' kpageflags.
    PageFlags,
    /// The VMA's `AnonHugePages` total from smaps.
    VmaTotal,
}

/// Whether a huge page maps a region.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum HugeMapping {
    /// A huge page maps it.
    Yes(Basis),
    /// Base pages (or nothing) map it.
    No(Basis),
    /// Every base page is present, and nothing available tells how they are mapped.
    Unknown,
}

/// The population of one huge-page region.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct RegionSummary {
    /// The region's first address.
    pub start: VirtAddr,
    /// Base pages present (the shared zero page included).
    pub present: u32,
    /// Present base pages mapped by this process only (the zero page is not).
    pub exclusive: u32,
    /// Base pages in swap.
    pub swapped: u32,
    /// Whether a huge page maps the region.
    pub huge: HugeMapping,
}

/// Summarises ranges of one pagemap, with kpageflags when given.
#[derive(Clone, Copy, Debug)]
pub struct Summariser<'a> {
    pagemap: &'a Pagemap,
    kpageflags: Option<&'a KPageFlags>,
    geometry: Geometry,
}

impl<'a> Summariser<'a> {
    /// A summariser of `pagemap` for x86-64's geometry, without kpageflags.
    pub fn new(pagemap: &'a Pagemap) -> Summariser<'a> {
        Summariser {
            pagemap,
            kpageflags: None,
            geometry: Geometry::X86_64,
        }
    }

    /// Use `kpageflags` to tell huge mappings (needs frame numbers in the pagemap).
    pub fn kpageflags(mut self, kpageflags: &'a KPageFlags) -> Summariser<'a> {
        self.kpageflags = Some(kpageflags);
        self
    }

    /// Use `geometry`'s base and huge page sizes.
    pub fn geometry(mut self, geometry: Geometry) -> Summariser<'a> {
        self.geometry = geometry;
        self
    }

    /// One summary per region of `range`, in address order.
    ///
    /// The cost is proportional to the range's size, populated or not: the kernel copies
    /// 8 bytes of pagemap per 4 KB page (4 KB per region), 64 regions per read. A caller
    /// bounds the ranges it asks for (a sanitizer's shadow mapping is writable private
    /// anonymous memory of many terabytes).
    pub fn range(&self, range: &HugeRange) -> Result<Vec<RegionSummary>> {
        let g = &self.geometry;
        let per_region = g.pages_per_huge() as usize;
        let mut out = Vec::new();
        let mut start = range.start();
        while start < range.end() {
            let regions = ((range.end().0 - start.0) / g.huge_bytes()).min(CHUNK_REGIONS);
            let entries = self
                .pagemap
                .entries(start, regions as usize * per_region, g)?;
            for (i, chunk) in entries.chunks_exact(per_region).enumerate() {
                out.push(self.region(VirtAddr(start.0 + i as u64 * g.huge_bytes()), chunk)?);
            }
            start = VirtAddr(start.0 + regions * g.huge_bytes());
        }
        Ok(out)
    }

    /// The regions of an eligible range, with those the frames leave unknown settled by
    /// the VMA's `AnonHugePages` where it can.
    pub fn eligible(&self, eligible: &EligibleRange<'_>) -> Result<Vec<RegionSummary>> {
        let mut regions = self.range(&eligible.range)?;
        settle_by_vma_total(&mut regions, eligible.vma, &self.geometry);
        Ok(regions)
    }

    fn region(&self, start: VirtAddr, entries: &[PagemapEntry]) -> Result<RegionSummary> {
        let count = |f: fn(PagemapEntry) -> bool| entries.iter().filter(|e| f(**e)).count() as u32;
        let present = count(PagemapEntry::present);
        let huge = if present as usize == entries.len() {
            self.huge_by_frames(entries)?
        } else {
            HugeMapping::No(Basis::Population)
        };
        Ok(RegionSummary {
            start,
            present,
            exclusive: count(|e| e.present() && e.exclusive()),
            swapped: count(PagemapEntry::swapped),
            huge,
        })
    }

    /// The mapping of a fully present region, from its frames and their flags.
    fn huge_by_frames(&self, entries: &[PagemapEntry]) -> Result<HugeMapping> {
        let Some(first) = entries.first().and_then(|e| e.pfn()) else {
            return Ok(HugeMapping::Unknown);
        };
        let n = entries.len() as u64;
        let aligned_run = first.0 % n == 0
            && (0..n)
                .zip(entries)
                .all(|(i, e)| e.pfn() == Some(Pfn(first.0 + i)));
        if !aligned_run {
            let hidden = entries.iter().any(|e| e.pfn().is_none());
            return Ok(if hidden {
                HugeMapping::Unknown
            } else {
                HugeMapping::No(Basis::Frames)
            });
        }
        let Some(kpageflags) = self.kpageflags else {
            return Ok(HugeMapping::Unknown);
        };
        let flags = kpageflags.read(first, entries.len())?;
        Ok(if is_pmd_sized_thp(&flags) {
            HugeMapping::Yes(Basis::PageFlags)
        } else {
            HugeMapping::No(Basis::PageFlags)
        })
    }
}

/// One transparent huge page spanning all of `flags`: a head, then tails, all `THP`.
fn is_pmd_sized_thp(flags: &[PageFlags]) -> bool {
    let Some((head, tails)) = flags.split_first() else {
        return false;
    };
    head.thp() && head.compound_head() && tails.iter().all(|t| t.thp() && t.compound_tail())
}

/// Settle the unknown regions of `vma`'s eligible range from its `AnonHugePages`.
fn settle_by_vma_total(regions: &mut [RegionSummary], vma: &Vma, geometry: &Geometry) {
    let total = vma.anon_huge_pages.0 / geometry.huge_bytes();
    let yes = regions
        .iter()
        .filter(|r| matches!(r.huge, HugeMapping::Yes(_)))
        .count() as u64;
    let unknown = regions
        .iter()
        .filter(|r| r.huge == HugeMapping::Unknown)
        .count() as u64;
    let settled = if unknown == 0 {
        return;
    } else if total == yes {
        HugeMapping::No(Basis::VmaTotal)
    } else if total == yes + unknown {
        HugeMapping::Yes(Basis::VmaTotal)
    } else {
        return;
    };
    for r in regions
        .iter_mut()
        .filter(|r| r.huge == HugeMapping::Unknown)
    {
        r.huge = settled;
    }
}
