//! `/proc/kpageflags`: 64 flag bits per physical frame (`fs/proc/page.c`,
//! `include/uapi/linux/kernel-page-flags.h`). Root only (mode 0400), and useless without
//! the frame numbers that pagemap hides from all but `CAP_SYS_ADMIN`.

use crate::error::{ObserveError, Result};
use crate::observe::entries::EntryFile;
use hugemm_hw::Pfn;
use serde::Serialize;
use std::io;
use std::path::Path;

/// Where the kernel serves the file.
pub const PATH: &str = "/proc/kpageflags";

/// The flags of one frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct PageFlags(pub u64);

impl PageFlags {
    /// `KPF_ANON`.
    pub const ANON: u32 = 12;
    /// `KPF_COMPOUND_HEAD`: the first frame of a compound page (a large folio).
    pub const COMPOUND_HEAD: u32 = 15;
    /// `KPF_COMPOUND_TAIL`: a later frame of a compound page.
    pub const COMPOUND_TAIL: u32 = 16;
    /// `KPF_HUGE`: a hugetlbfs page (not a transparent huge page).
    pub const HUGE: u32 = 17;
    /// `KPF_THP`: part of a transparent huge page of any order (a 64 KB mTHP too).
    pub const THP: u32 = 22;
    /// `KPF_ZERO_PAGE`: the shared zero page (or the huge zero page).
    pub const ZERO_PAGE: u32 = 24;

    /// Whether bit `bit` is set.
    pub fn has(self, bit: u32) -> bool {
        bit < 64 && self.0 & (1 << bit) != 0
    }

    /// `KPF_THP`.
    pub fn thp(self) -> bool {
        self.has(Self::THP)
    }

    /// `KPF_HUGE` (hugetlbfs).
    pub fn hugetlb(self) -> bool {
        self.has(Self::HUGE)
    }

    /// `KPF_COMPOUND_HEAD`.
    pub fn compound_head(self) -> bool {
        self.has(Self::COMPOUND_HEAD)
    }

    /// `KPF_COMPOUND_TAIL`.
    pub fn compound_tail(self) -> bool {
        self.has(Self::COMPOUND_TAIL)
    }

    /// `KPF_ZERO_PAGE`.
    pub fn zero_page(self) -> bool {
        self.has(Self::ZERO_PAGE)
    }
}

/// An open `/proc/kpageflags` (or a file laid out the same way).
#[derive(Debug)]
pub struct KPageFlags {
    file: EntryFile,
}

impl KPageFlags {
    /// Open the host's `/proc/kpageflags`.
    pub fn open() -> Result<KPageFlags> {
        KPageFlags::open_path(Path::new(PATH))
    }

    /// Open the host's file if this process may read it; `None` when it is absent or
    /// permission is denied.
    pub fn open_if_readable() -> Result<Option<KPageFlags>> {
        match KPageFlags::open() {
            Ok(k) => Ok(Some(k)),
            Err(ObserveError::Read { source, .. })
                if matches!(
                    source.kind(),
                    io::ErrorKind::PermissionDenied | io::ErrorKind::NotFound
                ) =>
            {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Open `path`, laid out as kpageflags (entry `n` describes frame `n`).
    pub fn open_path(path: &Path) -> Result<KPageFlags> {
        Ok(KPageFlags {
            file: EntryFile::open(path, 0)?,
        })
    }

    /// The flags of frames `first..first + count`.
    pub fn read(&self, first: Pfn, count: usize) -> Result<Vec<PageFlags>> {
        Ok(self
            .file
            .read(first.0, count)?
            .into_iter()
            .map(PageFlags)
            .collect())
    }
}
