//! Files of little-endian 64-bit entries indexed by a number (`/proc/PID/pagemap` by virtual
//! page number, `/proc/kpageflags` by frame number), or a captured excerpt of one whose
//! first entry has a known index. Owns the positioned reads; must not interpret an entry.

use crate::error::{ObserveError, Result};
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Bytes in one entry.
const ENTRY_BYTES: u64 = 8;

/// An open file of 64-bit entries.
#[derive(Debug)]
pub(crate) struct EntryFile {
    file: File,
    path: PathBuf,
    /// The index of the file's first entry (0 for the kernel's own files).
    first_index: u64,
}

impl EntryFile {
    /// Open `path`, whose first entry has index `first_index`.
    pub fn open(path: &Path, first_index: u64) -> Result<EntryFile> {
        let file = File::open(path).map_err(|e| ObserveError::read(path, e))?;
        Ok(EntryFile {
            file,
            path: path.to_path_buf(),
            first_index,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Entries `first..first + count`, in one positioned read.
    pub fn read(&self, first: u64, count: usize) -> Result<Vec<u64>> {
        let missing = || ObserveError::Missing {
            path: self.path.clone(),
            first,
            count: count as u64,
        };
        let offset = first
            .checked_sub(self.first_index)
            .and_then(|i| i.checked_mul(ENTRY_BYTES))
            .ok_or_else(missing)?;
        let bytes = count
            .checked_mul(ENTRY_BYTES as usize)
            .ok_or_else(missing)?;
        let mut buf = vec![0u8; bytes];
        match self.file.read_exact_at(&mut buf, offset) {
            Ok(()) => Ok(buf
                .as_chunks::<8>()
                .0
                .iter()
                .map(|c| u64::from_le_bytes(*c))
                .collect()),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Err(missing()),
            Err(e) => Err(ObserveError::read(&self.path, e)),
        }
    }
}
