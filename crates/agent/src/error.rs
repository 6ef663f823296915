//! The error of every observation: a file that cannot be read, or text or binary content
//! that is not what the kernel writes.
//!
//! Each variant names the file; parse errors also name the 1-based line, what was expected
//! and what was found (conventions 6 and 7). There is no `From<io::Error>`: an I/O error
//! without its path is useless to an operator, so every read goes through a helper that
//! attaches it.

use std::io;
use std::path::{Path, PathBuf};

/// The result of an observation.
pub type Result<T> = std::result::Result<T, ObserveError>;

/// An observation that failed.
#[derive(Debug, thiserror::Error)]
pub enum ObserveError {
    /// The file could not be opened or read (absent, no permission, the process exited...).
    #[error("{}: cannot read: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// A line is not in the format the kernel writes.
    #[error("{}:{line}: expected {expected}, found `{found}`", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The 1-based line (one past the last line when the file ends too early).
        line: usize,
        /// What the parser expected there.
        expected: String,
        /// The offending text, cut to 80 characters.
        found: String,
    },
    /// A binary file of 64-bit entries (pagemap, kpageflags) does not hold the entries asked
    /// for: the range lies outside a captured excerpt, or past the end of the file.
    #[error("{}: entries {first}..{} are not in the file", path.display(), first + count)]
    Missing {
        /// The file.
        path: PathBuf,
        /// The first entry asked for (a virtual page number or a frame number).
        first: u64,
        /// How many entries were asked for.
        count: u64,
    },
}

impl ObserveError {
    /// A read error on `path`.
    pub fn read(path: &Path, source: io::Error) -> ObserveError {
        ObserveError::Read {
            path: path.to_path_buf(),
            source,
        }
    }

    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            ObserveError::Read { path, .. }
            | ObserveError::Parse { path, .. }
            | ObserveError::Missing { path, .. } => path,
        }
    }

    /// The 1-based line of a parse error.
    pub fn line(&self) -> Option<usize> {
        match self {
            ObserveError::Parse { line, .. } => Some(*line),
            _ => None,
        }
    }
}
