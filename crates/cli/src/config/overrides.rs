//! Command-line overrides of an experiment file: `--set key.path=value`.
//!
//! An override edits the file's TOML document before it is parsed, so the result goes
//! through exactly the validation the file does (the same errors, exit code 2) and ends
//! up in the resolved configuration like any value written in the file. The document is
//! edited in place (`toml_edit`), so the lines of everything not overridden keep their
//! numbers in error messages.
//!
//! Keys are dotted paths as error messages print them: `policy.linux.enabled`,
//! `process[0].phase[1].size`. A value is TOML (`4`, `0.5`, `true`, `"always"`,
//! `[1, 2]`); anything that is not TOML is taken as a string, so `--set
//! policy.name=hawkeye` and `--set machine.memory=8GiB` need no quotes.

use super::ConfigError;
use std::fmt;
use toml_edit::{DocumentMut, Item, Table, Value};

/// One `--set key.path=value`.
#[derive(Clone, Debug)]
pub struct Override {
    /// The key's path, one segment per table.
    pub path: Vec<Segment>,
    /// The value as written after `=`.
    pub raw: String,
    value: Value,
}

/// One segment of a key path: a key, or a key and an index into an array of tables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// The key.
    pub key: String,
    /// `key[index]`: the index-th table of an array of tables.
    pub index: Option<usize>,
}

impl fmt::Display for Segment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.index {
            Some(i) => write!(f, "{}[{i}]", self.key),
            None => f.write_str(&self.key),
        }
    }
}

impl Override {
    /// The key path as error messages print it (`process[0].phase[1].size`).
    pub fn key(&self) -> String {
        let parts: Vec<String> = self.path.iter().map(Segment::to_string).collect();
        parts.join(".")
    }

    /// Whether an error about `key` is about this override's value: the key itself, or
    /// a key inside the table or array the override set.
    pub fn covers(&self, key: &str) -> bool {
        let own = self.key();
        key == own
            || key
                .strip_prefix(own.as_str())
                .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
    }
}

impl fmt::Display for Override {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.key(), self.raw)
    }
}

impl std::str::FromStr for Override {
    type Err = String;

    /// Parses `key.path=value` (the `--set` argument).
    fn from_str(arg: &str) -> Result<Override, String> {
        let (key, raw) = arg
            .split_once('=')
            .ok_or_else(|| format!("expected key.path=value, found \"{arg}\" (no `=`)"))?;
        let path =
            parse_path(key.trim()).map_err(|problem| format!("in \"{arg}\": the key {problem}"))?;
        let raw = raw.trim().to_string();
        let value = raw
            .parse::<Value>()
            .unwrap_or_else(|_| Value::from(raw.as_str()));
        Ok(Override { path, raw, value })
    }
}

/// Parses `a.b[2].c` into segments.
fn parse_path(key: &str) -> Result<Vec<Segment>, String> {
    if key.is_empty() {
        return Err("is empty".into());
    }
    key.split('.')
        .map(|part| {
            let (name, index) = match part.split_once('[') {
                None => (part, None),
                Some((name, rest)) => {
                    let digits = rest
                        .strip_suffix(']')
                        .ok_or_else(|| format!("`{part}` has `[` without a closing `]`"))?;
                    let i = digits.parse::<usize>().map_err(|_| {
                        format!("`{part}`: expected an index from 0, found \"{digits}\"")
                    })?;
                    (name, Some(i))
                }
            };
            let valid = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
            if name.is_empty() || !name.chars().all(valid) {
                return Err(format!(
                    "`{key}` has a part \"{part}\" that is not a key (letters, digits, `_`, `-`)"
                ));
            }
            Ok(Segment {
                key: name.to_string(),
                index,
            })
        })
        .collect()
}

/// Applies `overrides` in order to the TOML `text` of `file`, and returns the new text.
pub fn apply(text: &str, file: &str, overrides: &[Override]) -> Result<String, ConfigError> {
    if overrides.is_empty() {
        return Ok(text.to_string());
    }
    let mut doc: DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        let at = e.span().map(|s| {
            let (line, col) = super::locate::line_col(text, s.start);
            super::Pos { line, col }
        });
        ConfigError::Parse {
            file: file.into(),
            at,
            key: "(file)".into(),
            message: e.message().trim().to_string(),
        }
    })?;
    for o in overrides {
        set(doc.as_table_mut(), o).map_err(|problem| ConfigError::Parse {
            file: format!("{file} (--set {o})"),
            at: None,
            key: o.key(),
            message: problem,
        })?;
    }
    Ok(doc.to_string())
}

/// Sets one override's value, creating the tables on its path that do not exist.
fn set(root: &mut Table, o: &Override) -> Result<(), String> {
    let (last, parents) = o.path.split_last().expect("a parsed path is never empty");
    let mut table = root;
    let mut walked = Vec::new();
    for seg in parents {
        walked.push(seg.to_string());
        let here = walked.join(".");
        let item = table
            .entry(&seg.key)
            .or_insert_with(|| Item::Table(implicit_table()));
        if let Item::Value(Value::InlineTable(inline)) = item {
            // Make an inline table a normal one, so that it is edited like the others.
            let inline = std::mem::take(inline);
            *item = Item::Table(inline.into_table());
        }
        table = match (seg.index, item) {
            (None, Item::Table(t)) => t,
            (Some(i), Item::ArrayOfTables(array)) => {
                let len = array.len();
                array.get_mut(i).ok_or_else(|| {
                    let tables = match len {
                        1 => format!("only one `[[{}]]` table", seg.key),
                        n => format!("{n} `[[{}]]` tables", seg.key),
                    };
                    format!("`{here}`: the file has {tables} (indices count from 0)")
                })?
            }
            (Some(_), _) => {
                return Err(format!(
                    "`{here}`: `{}` is not an array of tables in the file",
                    seg.key
                ))
            }
            (None, Item::ArrayOfTables(_)) => {
                return Err(format!(
                    "`{here}` is an array of tables: name one, e.g. `{}[0]`",
                    seg.key
                ))
            }
            (None, _) => return Err(format!("`{here}` is a value, not a table")),
        };
    }
    if last.index.is_some() {
        return Err(format!(
            "`{}`: an override sets a value; it cannot index `{}`",
            o.key(),
            last.key
        ));
    }
    table.insert(&last.key, Item::Value(o.value.clone()));
    Ok(())
}

fn implicit_table() -> Table {
    let mut t = Table::new();
    t.set_implicit(true);
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ov(s: &str) -> Override {
        s.parse().unwrap()
    }

    #[test]
    fn values_are_toml_or_else_strings() {
        assert_eq!(ov("sim.seed=5").value.as_integer(), Some(5));
        assert_eq!(ov("a.b=0.5").value.as_float(), Some(0.5));
        assert_eq!(ov("a.b=true").value.as_bool(), Some(true));
        assert_eq!(ov("policy.name=hawkeye").value.as_str(), Some("hawkeye"));
        assert_eq!(ov("machine.memory=8GiB").value.as_str(), Some("8GiB"));
        assert_eq!(ov("a=\"x y\"").value.as_str(), Some("x y"));
    }

    #[test]
    fn paths_with_indices_print_as_errors_do() {
        let o = ov("process[0].phase[12].size=4KiB");
        assert_eq!(o.key(), "process[0].phase[12].size");
        assert!(o.covers("process[0].phase[12].size"));
        assert!(!o.covers("process[0].phase[1]"));
        assert!(ov("policy.linux=1").covers("policy.linux.khugepaged"));
        assert!(!ov("policy.linux=1").covers("policy.linuxx"));
    }

    #[test]
    fn malformed_arguments_say_what_is_wrong() {
        let e = "sim.seed".parse::<Override>().unwrap_err();
        assert!(e.contains("no `=`"), "{e}");
        let e = "a..b=1".parse::<Override>().unwrap_err();
        assert!(e.contains("not a key"), "{e}");
        let e = "p[x].a=1".parse::<Override>().unwrap_err();
        assert!(e.contains("index"), "{e}");
        let e = "p[1.a=1".parse::<Override>().unwrap_err();
        assert!(e.contains("closing"), "{e}");
    }

    #[test]
    fn overrides_edit_in_place_and_create_tables() {
        let text = "[sim]\nseed = 1 # kept\n\n[[process]]\nname = \"a\"\n";
        let out = apply(
            text,
            "f.toml",
            &[
                ov("sim.seed=7"),
                ov("process[0].name=b"),
                ov("policy.linux.khugepaged.max_ptes_none=64"),
            ],
        )
        .unwrap();
        let v: toml::Table = out.parse().unwrap();
        assert_eq!(v["sim"]["seed"].as_integer(), Some(7));
        assert_eq!(v["process"][0]["name"].as_str(), Some("b"));
        assert_eq!(
            v["policy"]["linux"]["khugepaged"]["max_ptes_none"].as_integer(),
            Some(64)
        );
        // The untouched lines keep their place.
        assert!(out.starts_with("[sim]\nseed = 7"), "{out}");
    }

    #[test]
    fn overrides_that_cannot_apply_name_the_problem() {
        let text = "[sim]\nseed = 1\n[[process]]\nname = \"a\"\n";
        let err = |o: &str| apply(text, "f.toml", &[ov(o)]).unwrap_err().to_string();
        assert!(err("process[3].name=x").contains("has only one `[[process]]` table"));
        assert!(err("sim.seed.x=1").contains("is a value, not a table"));
        assert!(err("sim[0].seed=1").contains("not an array of tables"));
        assert!(err("process.name=x").contains("name one, e.g. `process[0]`"));
    }
}
