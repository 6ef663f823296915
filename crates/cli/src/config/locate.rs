//! Where an error points: the line and column of a key in an experiment file, "did you
//! mean" for a misspelt key or choice, and the deprecated names of renamed keys.
//!
//! Errors are found by key path (`process[0].phase[1].size`), after parsing; this module
//! maps a path back to the text with `toml_edit`'s spans, so validation errors point at
//! the value as parse errors do. It decides nothing about what is valid.

use toml_edit::{ImDocument, Item, Table};

/// The 1-based line and column (in characters) of byte `offset` of `text`.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line = before.matches('\n').count() + 1;
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[start..].chars().count() + 1)
}

/// A parsed document to look keys up in (`None` if the text is not TOML; then no error
/// gets a position from it).
pub struct Spans<'a> {
    text: &'a str,
    doc: Option<ImDocument<&'a str>>,
}

impl<'a> Spans<'a> {
    /// Parses `text` once for lookups.
    pub fn new(text: &'a str) -> Spans<'a> {
        Spans {
            text,
            doc: ImDocument::parse(text).ok(),
        }
    }

    /// Line and column of the value at `key` (a dotted path, `name[i]` indexing arrays
    /// of tables or values), or of the nearest enclosing table the file writes.
    pub fn locate(&self, key: &str) -> Option<(usize, usize)> {
        let doc = self.doc.as_ref()?;
        let mut table: &Table = doc.as_table();
        let mut found = None;
        for part in key.split('.') {
            let (name, index) = split_index(part);
            let Some((k, item)) = table.get_key_value(name) else {
                break;
            };
            let item = match index {
                None => item,
                Some(i) => match item {
                    Item::ArrayOfTables(a) => {
                        let t = a.get(i)?;
                        found = t.span().or(found);
                        table = t;
                        continue;
                    }
                    Item::Value(v) => {
                        let v = v.as_array()?.get(i)?;
                        return v.span().map(|s| line_col(self.text, s.start));
                    }
                    _ => return None,
                },
            };
            found = item.span().or_else(|| k.span()).or(found);
            match item.as_table_like() {
                Some(_) if item.is_table() => table = item.as_table()?,
                _ => {
                    // A value: the path ends here (or goes into an inline table, which
                    // has no separate spans worth finding).
                    break;
                }
            }
        }
        found.map(|s| line_col(self.text, s.start))
    }

    /// Whether `key` (a dotted table path, then a key) is written in the file.
    pub fn has(&self, table: &str, key: &str) -> bool {
        let Some(doc) = self.doc.as_ref() else {
            return false;
        };
        let mut item: Option<&Item> = None;
        let mut t: &dyn toml_edit::TableLike = doc.as_table();
        for part in table.split('.') {
            let Some(next) = t.get(part) else {
                return false;
            };
            let Some(tl) = next.as_table_like() else {
                return false;
            };
            item = Some(next);
            t = tl;
        }
        item.is_some() && t.contains_key(key)
    }
}

/// `name[3]` -> (`name`, Some(3)); `name` -> (`name`, None).
fn split_index(part: &str) -> (&str, Option<usize>) {
    match part.split_once('[') {
        Some((name, rest)) => (name, rest.trim_end_matches(']').parse().ok()),
        None => (part, None),
    }
}

/// The closest of `candidates` to `word`, if one is close enough to be a likely typo.
pub fn did_you_mean<'c>(word: &str, candidates: &[&'c str]) -> Option<&'c str> {
    candidates
        .iter()
        .map(|c| (strsim::jaro_winkler(word, c), *c))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

/// Rewrites serde's unknown-field or unknown-variant message ("unknown field `x`,
/// expected one of `a`, `b`" or "expected `a`"): deprecated names leave the list, and a
/// likely typo gets "did you mean", a Linux knob the model lacks its reason. `None` for
/// any other message.
pub fn explain_unknown(message: &str) -> Option<String> {
    let (what, rest) = if let Some(r) = message.strip_prefix("unknown field `") {
        ("field", r)
    } else {
        ("variant", message.strip_prefix("unknown variant `")?)
    };
    let (word, rest) = rest.split_once('`')?;
    let deprecated = |c: &&str| RENAMED.iter().any(|(_, old, _)| old == c);
    let candidates: Vec<&str> = rest
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|c| !deprecated(c))
        .collect();
    let listed: Vec<String> = candidates.iter().map(|c| format!("`{c}`")).collect();
    let mut out = match listed.len() {
        0 => format!("unknown {what} `{word}`"),
        1 => format!("unknown {what} `{word}`, expected {}", listed[0]),
        2 => format!(
            "unknown {what} `{word}`, expected {} or {}",
            listed[0], listed[1]
        ),
        _ => format!(
            "unknown {what} `{word}`, expected one of {}",
            listed.join(", ")
        ),
    };
    if let Some(c) = did_you_mean(word, &candidates) {
        out.push_str(&format!("; did you mean `{c}`?"));
    }
    Some(out)
}

/// A key renamed to Linux's spelling: (the table it lives in, the old name, the new).
/// The old name is still read (serde's `alias`), with a note on stderr.
pub const RENAMED: &[(&str, &str, &str)] = &[
    (
        "policy.linux.khugepaged",
        "scan_sleep_ms",
        "scan_sleep_millisecs",
    ),
    (
        "policy.linux.khugepaged",
        "alloc_sleep_ms",
        "alloc_sleep_millisecs",
    ),
    ("policy.ingens", "scan_sleep_ms", "scan_sleep_millisecs"),
    ("policy.ingens", "alloc_sleep_ms", "alloc_sleep_millisecs"),
    ("policy.hawkeye", "scan_sleep_ms", "scan_sleep_millisecs"),
    ("policy.hawkeye", "alloc_sleep_ms", "alloc_sleep_millisecs"),
    (
        "kernel.kcompactd",
        "proactiveness",
        "compaction_proactiveness",
    ),
];

/// Linux knobs read and checked as Linux checks them, that can change nothing in the
/// model, which lacks what they govern: (table, key, why). Linux without swap or shared
/// anonymous pages behaves the same whatever their values, so accepting them is faithful;
/// a note says so, so that nobody expects an effect.
pub const INERT: &[(&str, &str, &str)] = &[
    (
        "policy.linux.khugepaged",
        "max_ptes_swap",
        "the model has no swap, so khugepaged never meets a swapped-out PTE",
    ),
    (
        "policy.linux.khugepaged",
        "max_ptes_shared",
        "the model has no anonymous pages shared between processes (no fork)",
    ),
];

/// Keys a note is printed for when a file (or an override) uses them, as (table, key,
/// what the note says of it): the deprecated names of [`RENAMED`] and the knobs of
/// [`INERT`].
pub fn noted_keys() -> impl Iterator<Item = (&'static str, &'static str, String)> {
    let renamed = RENAMED.iter().map(|(table, old, new)| {
        (
            *table,
            *old,
            format!("is deprecated: it is now `{new}`, as Linux spells it"),
        )
    });
    let inert = INERT
        .iter()
        .map(|(table, key, why)| (*table, *key, format!("has no effect here: {why}")));
    renamed.chain(inert)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "[machine]\nmemory = \"8GiB\"\n\n[[process]]\nname = \"a\"\n\
                        [[process.phase]]\nop = \"mmap\"\n[[process.phase]]\nop = \"touch\"\n\
                        size = [1, 2]\n[policy.linux.khugepaged]\nscan_sleep_ms = 5\n";

    #[test]
    fn keys_are_found_at_their_values() {
        let s = Spans::new(TEXT);
        assert_eq!(s.locate("machine.memory"), Some((2, 10)));
        assert_eq!(s.locate("process[0].name"), Some((5, 8)));
        assert_eq!(s.locate("process[0].phase[1].op"), Some((9, 6)));
        assert_eq!(s.locate("process[0].phase[1].size[1]"), Some((10, 12)));
        // A key the file does not write: the nearest enclosing table.
        assert_eq!(s.locate("process[0].phase[1].buffer"), Some((8, 1)));
        assert_eq!(s.locate("process[0].count"), Some((4, 1)));
        assert_eq!(s.locate("nothing.here"), None);
    }

    #[test]
    fn columns_count_characters() {
        assert_eq!(line_col("a = \"é\"\nb", 9), (2, 1));
        assert_eq!(line_col("é = 1", 2), (1, 2));
        assert_eq!(line_col("é = 1", 3), (1, 3));
    }

    #[test]
    fn misspellings_get_a_suggestion_and_strangers_do_not() {
        let m = "unknown field `scan_sleep_msecs`, expected one of `pages_to_scan`, \
                 `scan_sleep_millisecs`, `scan_sleep_ms`, `alloc_sleep_millisecs`";
        assert_eq!(
            explain_unknown(m).as_deref(),
            Some(
                "unknown field `scan_sleep_msecs`, expected one of `pages_to_scan`, \
                 `scan_sleep_millisecs`, `alloc_sleep_millisecs`; did you mean \
                 `scan_sleep_millisecs`?"
            )
        );
        let m = "unknown field `zzz`, expected one of `pages_to_scan`, `defrag`";
        assert!(!explain_unknown(m).unwrap().contains("did you mean"));
        let m = "unknown field `nmae`, expected `name`";
        assert!(explain_unknown(m)
            .unwrap()
            .ends_with("; did you mean `name`?"));
        assert_eq!(explain_unknown("invalid type: integer"), None);
        assert_eq!(
            did_you_mean("hawkey", &["linux", "hawkeye"]),
            Some("hawkeye")
        );
    }

    #[test]
    fn every_renamed_and_inert_key_has_a_note() {
        let noted: Vec<_> = noted_keys().collect();
        assert_eq!(noted.len(), RENAMED.len() + INERT.len());
        assert!(noted
            .iter()
            .any(|(t, k, what)| *t == "policy.linux.khugepaged"
                && *k == "scan_sleep_ms"
                && what.contains("now `scan_sleep_millisecs`")));
        assert!(noted
            .iter()
            .any(|(_, k, what)| *k == "max_ptes_swap" && what.contains("no swap")));
    }
}
