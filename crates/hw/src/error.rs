//! Errors of this crate: loading and validating machine profiles.
//!
//! Every error names where the profile came from (a file path or `builtin:<name>`), the key
//! path inside it in the form `tlb.stlb.ways` / `caches[1].bytes`, and what was expected
//! (conventions 6 and 7). The hardware model itself cannot fail: it is built from a validated
//! profile and its hot path takes no fallible input.

use std::fmt;
use std::io;

/// An invalid or unreadable machine profile.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The profile file could not be read.
    #[error("{origin}: cannot read the profile: {source}")]
    Read {
        /// The file path.
        origin: String,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// The text is not TOML, or does not have the profile's shape: an unknown key, a
    /// missing key or a value of the wrong type.
    #[error("{origin}{}: key `{key}`: {message}", Line(*.line))]
    Parse {
        /// The file path or builtin name.
        origin: String,
        /// The 1-based line of the offending text, when known.
        line: Option<usize>,
        /// The key path (`.` for the document itself).
        key: String,
        /// What was wrong and what was expected.
        message: String,
    },
    /// A value of the right type that the model cannot use (a zero size, ways that do not
    /// divide entries, a negative latency...).
    #[error("{origin}: key `{key}`: expected {expected}, found {found}")]
    Invalid {
        /// The file path or builtin name.
        origin: String,
        /// The key path.
        key: String,
        /// What the model needs.
        expected: String,
        /// The value given.
        found: String,
    },
}

impl ProfileError {
    /// The key path the error is about, if any.
    pub fn key(&self) -> Option<&str> {
        match self {
            ProfileError::Read { .. } => None,
            ProfileError::Parse { key, .. } | ProfileError::Invalid { key, .. } => Some(key),
        }
    }
}

/// The result of a profile operation.
pub type Result<T, E = ProfileError> = std::result::Result<T, E>;

/// Formats an optional line number as `:N`.
struct Line(Option<usize>);

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(n) => write!(f, ":{n}"),
            None => Ok(()),
        }
    }
}
