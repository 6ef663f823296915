//! Line-by-line reading of `/proc` and sysfs text, with errors that name the file and the
//! line. Every text parser of this crate goes through here; it must not know any format.

use crate::error::{ObserveError, Result};
use std::fs;
use std::path::Path;
use std::str::FromStr;

/// Longest excerpt of offending text quoted in an error.
const QUOTE_CHARS: usize = 80;

/// Read `path` as text.
pub(crate) fn read_text(path: &Path) -> Result<String> {
    fs::read_to_string(path).map_err(|e| ObserveError::read(path, e))
}

/// One line of a file, with where it came from.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Line<'a> {
    pub path: &'a Path,
    /// 1-based.
    pub number: usize,
    pub text: &'a str,
}

impl<'a> Line<'a> {
    /// A parse error at this line about `found`.
    pub fn error(&self, expected: impl Into<String>, found: &str) -> ObserveError {
        parse_error(self.path, self.number, expected, found)
    }

    /// `token` as a `T`, or an error saying `expected`.
    pub fn parse<T: FromStr>(&self, token: &str, expected: &str) -> Result<T> {
        token.parse().map_err(|_| self.error(expected, token))
    }

    /// The next whitespace-separated token of `tokens`, or an error saying `expected`.
    pub fn next<'t>(
        &self,
        tokens: &mut impl Iterator<Item = &'t str>,
        expected: &str,
    ) -> Result<&'t str> {
        tokens.next().ok_or_else(|| self.error(expected, self.text))
    }

    /// Check that the next token is `word`.
    pub fn expect<'t>(&self, tokens: &mut impl Iterator<Item = &'t str>, word: &str) -> Result<()> {
        match tokens.next() {
            Some(t) if t == word => Ok(()),
            other => Err(self.error(format!("`{word}`"), other.unwrap_or(self.text))),
        }
    }
}

/// A parse error at `line` of `path`, quoting at most 80 characters of `found`.
pub(crate) fn parse_error(
    path: &Path,
    line: usize,
    expected: impl Into<String>,
    found: &str,
) -> ObserveError {
    let mut quoted: String = found.chars().take(QUOTE_CHARS).collect();
    if quoted.len() < found.len() {
        quoted.push('…');
    }
    ObserveError::Parse {
        path: path.to_path_buf(),
        line,
        expected: expected.into(),
        found: quoted,
    }
}

/// The lines of `text`, numbered from 1.
pub(crate) fn lines<'a>(path: &'a Path, text: &'a str) -> impl Iterator<Item = Line<'a>> {
    text.lines().enumerate().map(move |(i, text)| Line {
        path,
        number: i + 1,
        text,
    })
}

/// An error for a file that ends before `expected`.
pub(crate) fn early_end(path: &Path, text: &str, expected: impl Into<String>) -> ObserveError {
    parse_error(path, text.lines().count() + 1, expected, "end of file")
}

/// The single value of a one-line sysfs file such as `state` or `nr_kdamonds`.
pub(crate) fn single_value<T: FromStr>(path: &Path, text: &str, expected: &str) -> Result<T> {
    let mut it = lines(path, text);
    let line = it.next().ok_or_else(|| early_end(path, text, expected))?;
    if let Some(extra) = it.next() {
        return Err(extra.error("nothing after the value", extra.text));
    }
    line.parse(line.text.trim(), expected)
}
