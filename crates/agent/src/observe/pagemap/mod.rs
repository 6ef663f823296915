//! `/proc/PID/pagemap` (one 64-bit entry per virtual base page, `fs/proc/task_mmu.c`,
//! `Documentation/admin-guide/mm/pagemap.rst`), `/proc/kpageflags` (one per physical
//! frame), and their summary per huge-page region.
//!
//! # What can be told, and with which privileges
//!
//! | question | unprivileged (ptrace-read access to the process) | with `CAP_SYS_ADMIN` (root) |
//! |---|---|---|
//! | how many 4 KB pages of a region are present, swapped, exclusively mapped | yes: bits 63, 62, 56 | yes |
//! | which frames back them | no: the frame number (bits 0-54) reads as 0 | yes |
//! | whether a present page is the shared zero page | only indirectly: present but not exclusive | yes: one frame for all, `ZERO_PAGE` in kpageflags |
//! | whether a huge page maps the region | only if not all 512 pages are present (then no), or where the VMA's `AnonHugePages` settles it (all of its full regions are huge, or none is) | yes: the 512 frames are one PMD-sized THP folio (contiguous, aligned, head then tails, `THP` set in kpageflags) |
//!
//! What cannot be told from these files at all: whether a PMD-sized THP folio is mapped by
//! the PMD or by 512 PTEs (a folio left PTE-mapped after a partial `mprotect`, say, reads
//! the same); Linux 6.7's `PAGEMAP_SCAN` ioctl reports `PAGE_IS_HUGE` per range without
//! privileges and is the better source when a later increment allows an ioctl. The reads
//! are not atomic with each other or with smaps: a region can change between them, and a
//! summary is a snapshot that the agent must tolerate being stale. Bit 55 (soft-dirty)
//! needs `CONFIG_MEM_SOFT_DIRTY`. `KPF_HUGE` (bit 17) marks hugetlbfs pages only; a
//! transparent huge page of any size sets `KPF_THP` (bit 22).
//!
//! This module owns reading and interpreting these files; it must not decide what to
//! collapse.

mod kpageflags;
mod summary;

pub use kpageflags::{KPageFlags, PageFlags};
pub use summary::{Basis, HugeMapping, RegionSummary, Summariser};

use super::entries::EntryFile;
use crate::error::Result;
use crate::units::HostPid;
use hugemm_hw::{Geometry, Pfn, VirtAddr};
use serde::Serialize;
use std::path::Path;

/// One pagemap entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct PagemapEntry(pub u64);

impl PagemapEntry {
    const PRESENT: u64 = 1 << 63;
    const SWAPPED: u64 = 1 << 62;
    const FILE_OR_SHARED: u64 = 1 << 61;
    const EXCLUSIVE: u64 = 1 << 56;
    const SOFT_DIRTY: u64 = 1 << 55;
    const PFN_MASK: u64 = (1 << 55) - 1;

    /// Bit 63: a frame backs the page.
    pub fn present(self) -> bool {
        self.0 & Self::PRESENT != 0
    }

    /// Bit 62: the page is in swap.
    pub fn swapped(self) -> bool {
        self.0 & Self::SWAPPED != 0
    }

    /// Bit 61: a file page or shared anonymous memory.
    pub fn file_or_shared(self) -> bool {
        self.0 & Self::FILE_OR_SHARED != 0
    }

    /// Bit 56: the page is mapped by this process only (Linux 4.2).
    pub fn exclusive(self) -> bool {
        self.0 & Self::EXCLUSIVE != 0
    }

    /// Bit 55: written since the soft-dirty bits were last cleared.
    pub fn soft_dirty(self) -> bool {
        self.0 & Self::SOFT_DIRTY != 0
    }

    /// The frame of a present page, if the reader may see it (bits 0-54; 0 without
    /// `CAP_SYS_ADMIN`, which reads as `None`).
    pub fn pfn(self) -> Option<Pfn> {
        let pfn = self.0 & Self::PFN_MASK;
        (self.present() && pfn != 0).then_some(Pfn(pfn))
    }
}

/// An open pagemap: a process's, or a captured excerpt of one.
#[derive(Debug)]
pub struct Pagemap {
    file: EntryFile,
}

impl Pagemap {
    /// Open `/proc/PID/pagemap`.
    pub fn open(pid: HostPid) -> Result<Pagemap> {
        Pagemap::open_path(&pid.proc_dir().join("pagemap"))
    }

    /// Open this process's pagemap.
    pub fn open_self() -> Result<Pagemap> {
        Pagemap::open_path(Path::new("/proc/self/pagemap"))
    }

    /// Open `path`, laid out as the kernel's pagemap (entry `n` describes virtual page `n`).
    pub fn open_path(path: &Path) -> Result<Pagemap> {
        Ok(Pagemap {
            file: EntryFile::open(path, 0)?,
        })
    }

    /// Open `path`, a captured excerpt of a pagemap whose first entry describes the page at
    /// `first`.
    pub fn open_excerpt(path: &Path, first: VirtAddr, geometry: &Geometry) -> Result<Pagemap> {
        Ok(Pagemap {
            file: EntryFile::open(path, geometry.vpn(first).0)?,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// The entries of `count` base pages from `start` (page-aligned down).
    pub fn entries(
        &self,
        start: VirtAddr,
        count: usize,
        geometry: &Geometry,
    ) -> Result<Vec<PagemapEntry>> {
        let raw = self.file.read(geometry.vpn(start).0, count)?;
        Ok(raw.into_iter().map(PagemapEntry).collect())
    }
}

/// Whether this process may see frame numbers in pagemap (`CAP_SYS_ADMIN`), asked of the
/// entry of one of its own live stack pages.
pub fn pfns_visible(geometry: &Geometry) -> Result<bool> {
    let probe = 0u64;
    let addr = VirtAddr(std::hint::black_box(&probe) as *const u64 as u64);
    let entry = Pagemap::open_self()?.entries(addr, 1, geometry)?;
    Ok(entry.first().and_then(|e| e.pfn()).is_some())
}
