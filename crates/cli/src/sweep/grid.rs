//! The `[sweep]` table of a sweep file, read: its parameters (configuration keys by
//! dotted path, each with an array of values, in file order), the plot it asks for, and
//! the experiment's text without the table.
//!
//! This module only reads the table's shape. Whether a value suits its key, and whether
//! the key exists at all, is the configuration's business: each grid point becomes a list
//! of [`Override`]s that the experiment is validated with, exactly as `--set` is.

use crate::config::locate::line_col;
use crate::config::{ConfigError, Override, Pos};
use std::ops::Range;
use toml_edit::{ImDocument, Item, Key, TableLike, Value};

/// The most points a grid may have: beyond it a sweep is more likely a mistake (a
/// forgotten key) than a plan, and its validation alone would take minutes.
pub const MAX_POINTS: usize = 100_000;

/// A sweep file's `[sweep]` table and the experiment around it.
#[derive(Debug)]
pub struct Grid {
    /// The swept keys, in file order: the first varies slowest.
    pub parameters: Vec<Parameter>,
    /// `plot = { x = "...", y = "..." }`, as written.
    pub plot: PlotSpec,
    /// The file's text with every line of the `[sweep]` table blanked, so the experiment
    /// parses as a plain one and its errors keep their line numbers.
    pub experiment: String,
}

/// One swept key and its values.
#[derive(Debug)]
pub struct Parameter {
    /// The key's path, as `--set` takes it (`policy.name`, `process[0].count`).
    pub key: String,
    /// Its values, in file order.
    pub values: Vec<GridValue>,
}

/// One value of a parameter.
#[derive(Debug)]
pub struct GridValue {
    /// The value as an override of the parameter's key.
    pub set: Override,
    /// The value for the results table and the plot.
    pub scalar: Scalar,
    /// Where the value is written.
    pub at: Option<Pos>,
}

/// A parameter's value as the results table holds it.
#[derive(Clone, Debug, PartialEq)]
pub enum Scalar {
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A boolean.
    Bool(bool),
    /// A string (without its quotes), or another TOML value as written.
    Text(String),
}

impl std::fmt::Display for Scalar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Scalar::Int(i) => write!(f, "{i}"),
            Scalar::Float(x) => write!(f, "{x}"),
            Scalar::Bool(b) => write!(f, "{b}"),
            Scalar::Text(s) => f.write_str(s),
        }
    }
}

/// The plot a sweep file asks for (either may be left to the command line or the
/// default).
#[derive(Clone, Debug, Default)]
pub struct PlotSpec {
    /// The parameter along x.
    pub x: Option<String>,
    /// The results column along y.
    pub y: Option<String>,
}

impl Grid {
    /// Reads the `[sweep]` table of `text` (the file `file`).
    pub fn parse(text: &str, file: &str) -> Result<Grid, ConfigError> {
        let doc = ImDocument::parse(text).map_err(|e| ConfigError::Parse {
            file: file.into(),
            at: e.span().map(|s| pos(text, s.start)),
            key: "(file)".into(),
            message: e.message().trim().to_string(),
        })?;
        let reader = Reader { text, file };
        let Some((key, item)) = doc.as_table().get_key_value("sweep") else {
            return Err(reader.bad(
                "sweep",
                None,
                "a [sweep] table: configuration keys by their dotted path, each with an \
                 array of values, e.g. \"policy.name\" = [\"linux\", \"hawkeye\"] (see \
                 docs/sweeps.md)",
            ));
        };
        let table = item
            .as_table_like()
            .ok_or_else(|| reader.bad("sweep", span_pos(text, item.span()), "a table ([sweep])"))?;
        let mut grid = Grid {
            parameters: Vec::new(),
            plot: PlotSpec::default(),
            experiment: String::new(),
        };
        let mut found = Vec::new();
        reader.walk(table, "", &mut grid.plot, &mut found)?;
        found.sort_by_key(|(start, _)| *start);
        grid.parameters = found.into_iter().map(|(_, p)| p).collect();
        reader.check_parameters(&grid.parameters, item)?;
        let mut lines = Vec::new();
        item_lines(key, item, &mut lines);
        grid.experiment = blank_lines(text, &lines);
        Ok(grid)
    }

    /// How many points the grid has (the product of the parameters' value counts).
    pub fn len(&self) -> usize {
        self.parameters.iter().map(|p| p.values.len()).product()
    }

    /// Whether the grid has no point (never, once parsed: every parameter has a value).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `i`-th point, as the index of its value for each parameter: the grid is the
    /// Cartesian product in file order, the last parameter varying fastest (as nested
    /// loops over the parameters in file order would visit it).
    pub fn point(&self, i: usize) -> Vec<usize> {
        let mut rest = i;
        let mut picks = vec![0; self.parameters.len()];
        for (p, pick) in self.parameters.iter().zip(&mut picks).rev() {
            *pick = rest % p.values.len();
            rest /= p.values.len();
        }
        picks
    }
}

/// The reading of one file's `[sweep]` table.
struct Reader<'a> {
    text: &'a str,
    file: &'a str,
}

impl Reader<'_> {
    fn bad(&self, key: &str, at: Option<Pos>, expected: impl Into<String>) -> ConfigError {
        ConfigError::Invalid {
            file: self.file.into(),
            at,
            key: key.into(),
            expected: expected.into(),
        }
    }

    /// Collects the parameters of `table` (at dotted path `prefix` inside `[sweep]`),
    /// each with the offset of its key, and the plot.
    fn walk(
        &self,
        table: &dyn TableLike,
        prefix: &str,
        plot: &mut PlotSpec,
        found: &mut Vec<(usize, Parameter)>,
    ) -> Result<(), ConfigError> {
        for (name, item) in table.iter() {
            let (k, _) = table.get_key_value(name).expect("a key the table lists");
            let key = if prefix.is_empty() {
                name.to_string()
            } else {
                format!("{prefix}.{name}")
            };
            let at = k.span().or_else(|| item.span());
            if prefix.is_empty() && name == "plot" {
                *plot = self.plot(item)?;
            } else if let Some(Value::Array(values)) = item.as_value() {
                let parameter = self.parameter(&key, k, values)?;
                found.push((at.map_or(0, |s| s.start), parameter));
            } else if let Some(inner) = item.as_table_like() {
                self.walk(inner, &key, plot, found)?;
            } else {
                return Err(self.bad(
                    &sweep_key(&key),
                    span_pos(self.text, item.span().or(at)),
                    format!(
                        "an array of the values to sweep, e.g. \"{key}\" = [a, b] (for one \
                         value, [a]), found {}",
                        item.type_name()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// One swept key and its array of values.
    fn parameter(
        &self,
        key: &str,
        k: &Key,
        values: &toml_edit::Array,
    ) -> Result<Parameter, ConfigError> {
        let shown = sweep_key(key);
        let key_at = span_pos(self.text, k.span().or_else(|| values.span()));
        if values.is_empty() {
            return Err(self.bad(
                &shown,
                key_at,
                "at least one value to sweep, found an empty array",
            ));
        }
        let mut out = Vec::new();
        for v in values.iter() {
            let span = v.span().expect("a parsed value has a span");
            let written = self.text[span.clone()].trim();
            let set = format!("{key}={written}")
                .parse::<Override>()
                .map_err(|problem| self.bad(&shown, key_at, problem))?;
            let scalar = scalar(v, written);
            if out.iter().any(|o: &GridValue| o.scalar == scalar) {
                return Err(self.bad(
                    &shown,
                    span_pos(self.text, Some(span)),
                    format!("each value once, found {written} twice"),
                ));
            }
            out.push(GridValue {
                set,
                scalar,
                at: span_pos(self.text, Some(span)),
            });
        }
        Ok(Parameter {
            key: out[0].set.key(),
            values: out,
        })
    }

    /// `plot = { x = "...", y = "..." }` (or a `[sweep.plot]` table).
    fn plot(&self, item: &Item) -> Result<PlotSpec, ConfigError> {
        let at = span_pos(self.text, item.span());
        let table = item.as_table_like().ok_or_else(|| {
            self.bad(
                "sweep.plot",
                at,
                "a table: plot = { x = \"<swept key>\", y = \"<results column>\" }",
            )
        })?;
        let mut spec = PlotSpec::default();
        for (name, value) in table.iter() {
            let place = span_pos(self.text, value.span()).or(at);
            let text = value.as_str().map(str::to_string);
            match (name, text) {
                ("x", Some(x)) => spec.x = Some(x),
                ("y", Some(y)) => spec.y = Some(y),
                ("x" | "y", None) => {
                    return Err(self.bad(
                        &format!("sweep.plot.{name}"),
                        place,
                        format!("a string, found {}", value.type_name()),
                    ))
                }
                _ => {
                    return Err(self.bad(
                        &format!("sweep.plot.{name}"),
                        place,
                        "only x (a swept key) and y (a results column) in sweep.plot",
                    ))
                }
            }
        }
        Ok(spec)
    }

    /// No key swept twice, or inside another swept key (`policy.linux` and
    /// `policy.linux.enabled`), and a grid of a sensible size.
    fn check_parameters(&self, parameters: &[Parameter], sweep: &Item) -> Result<(), ConfigError> {
        let sweep_at = span_pos(self.text, sweep.span());
        if parameters.is_empty() {
            return Err(self.bad(
                "sweep",
                sweep_at,
                "at least one key to sweep, e.g. \"policy.name\" = [\"linux\", \"hawkeye\"]; \
                 found an empty [sweep] table",
            ));
        }
        for (i, p) in parameters.iter().enumerate() {
            for q in &parameters[..i] {
                let (a, b) = (&p.values[0].set, &q.values[0].set);
                if a.covers(&q.key) || b.covers(&p.key) {
                    return Err(self.bad(
                        &sweep_key(&p.key),
                        p.values[0].at,
                        format!("a key no other sweeps, but `{}` is swept too", q.key),
                    ));
                }
            }
        }
        let points = parameters
            .iter()
            .try_fold(1usize, |n, p| n.checked_mul(p.values.len()))
            .filter(|n| *n <= MAX_POINTS);
        if points.is_none() {
            return Err(self.bad(
                "sweep",
                sweep_at,
                format!(
                    "a grid of at most {MAX_POINTS} points (the product of the numbers of values)"
                ),
            ));
        }
        Ok(())
    }
}

/// How errors name a swept key: `sweep."policy.name"`.
fn sweep_key(key: &str) -> String {
    format!("sweep.\"{key}\"")
}

/// The value for the table: numbers and booleans as such, strings without their quotes,
/// anything else as written.
fn scalar(v: &Value, written: &str) -> Scalar {
    match v {
        Value::Integer(i) => Scalar::Int(*i.value()),
        Value::Float(x) => Scalar::Float(*x.value()),
        Value::Boolean(b) => Scalar::Bool(*b.value()),
        Value::String(s) => Scalar::Text(s.value().clone()),
        _ => Scalar::Text(written.split_whitespace().collect::<Vec<_>>().join(" ")),
    }
}

fn pos(text: &str, offset: usize) -> Pos {
    let (line, col) = line_col(text, offset);
    Pos { line, col }
}

fn span_pos(text: &str, span: Option<Range<usize>>) -> Option<Pos> {
    span.map(|s| pos(text, s.start))
}

/// The byte ranges the `[sweep]` item `item` (under `key`) is written on: table headers,
/// and each key with its value.
fn item_lines(key: &Key, item: &Item, out: &mut Vec<Range<usize>>) {
    match item {
        Item::Value(v) => {
            if let Some(end) = v.span().map(|s| s.end) {
                let start = key.span().or_else(|| v.span()).map_or(end, |s| s.start);
                out.push(start..end);
            }
        }
        Item::Table(t) => {
            out.extend(t.span());
            for (name, _) in t.iter() {
                let (k, i) = t.get_key_value(name).expect("a key the table lists");
                item_lines(k, i, out);
            }
        }
        Item::ArrayOfTables(a) => {
            for t in a.iter() {
                out.extend(t.span());
                for (name, _) in t.iter() {
                    let (k, i) = t.get_key_value(name).expect("a key the table lists");
                    item_lines(k, i, out);
                }
            }
        }
        Item::None => {}
    }
}

/// `text` with every line touched by `ranges` emptied (its newline kept), so the line
/// numbers of the rest stay as they were.
fn blank_lines(text: &str, ranges: &[Range<usize>]) -> String {
    let mut blank = vec![false; text.len()];
    for r in ranges {
        let start = text[..r.start].rfind('\n').map_or(0, |i| i + 1);
        let end = text[r.end..].find('\n').map_or(text.len(), |i| r.end + i);
        blank[start..end].iter_mut().for_each(|b| *b = true);
    }
    text.char_indices()
        .filter(|(i, c)| *c == '\n' || !blank[*i])
        .map(|(_, c)| c)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "[sim]\nseed = 1\n\n[sweep]  # the grid\n\"policy.name\" = [\"linux\", \
                        'hawkeye']\nmachine.memory = [\n  \"1GiB\", # small\n  2147483648,\n]\n\
                        plot = { x = \"machine.memory\", y = \"p.runtime_s\" }\n\n[[process]]\n\
                        name = \"p\"\n";

    #[test]
    fn parameters_are_read_in_file_order_and_the_table_is_blanked() {
        let g = Grid::parse(FILE, "f.toml").unwrap();
        let keys: Vec<_> = g.parameters.iter().map(|p| p.key.as_str()).collect();
        assert_eq!(keys, ["policy.name", "machine.memory"]);
        let memory = &g.parameters[1].values;
        assert_eq!(memory[0].scalar, Scalar::Text("1GiB".into()));
        assert_eq!(memory[1].scalar, Scalar::Int(2147483648));
        assert_eq!(memory[0].at, Some(Pos { line: 7, col: 3 }));
        assert_eq!(
            g.parameters[0].values[1].set.to_string(),
            "policy.name='hawkeye'"
        );
        assert_eq!(g.plot.x.as_deref(), Some("machine.memory"));
        assert_eq!(g.plot.y.as_deref(), Some("p.runtime_s"));
        // Same lines, and nothing of the sweep left.
        assert_eq!(g.experiment.lines().count(), FILE.lines().count());
        assert!(!g.experiment.contains("sweep") && !g.experiment.contains("GiB"));
        assert!(g.experiment.starts_with("[sim]\nseed = 1\n"));
        assert!(g.experiment.ends_with("\n[[process]]\nname = \"p\"\n"));
    }

    #[test]
    fn points_are_the_product_with_the_last_key_fastest() {
        let g = Grid::parse(FILE, "f.toml").unwrap();
        assert_eq!(g.len(), 4);
        let points: Vec<_> = (0..4).map(|i| g.point(i)).collect();
        assert_eq!(points, [[0, 0], [0, 1], [1, 0], [1, 1]]);
    }

    #[test]
    fn a_sweep_written_as_a_dotted_key_is_blanked_too() {
        let text = "sweep.\"sim.seed\" = [1, 2]\n[sim]\nseed = 3\n";
        let g = Grid::parse(text, "f.toml").unwrap();
        assert_eq!(g.parameters[0].key, "sim.seed");
        assert_eq!(g.experiment, "\n[sim]\nseed = 3\n");
    }

    fn error(sweep: &str) -> String {
        let text = format!("[sim]\nseed = 1\n[sweep]\n{sweep}\n");
        Grid::parse(&text, "f.toml").unwrap_err().to_string()
    }

    #[test]
    fn malformed_grids_say_what_is_wrong_and_where() {
        let e = Grid::parse("[sim]\nseed = 1\n", "f.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("key `sweep`: expected a [sweep] table"), "{e}");
        assert!(error("").contains("found an empty [sweep] table"));
        let e = error("\"sim.seed\" = []");
        assert!(e.starts_with("f.toml:4:1: key `sweep.\"sim.seed\"`"), "{e}");
        assert!(e.contains("found an empty array"), "{e}");
        let e = error("\"sim.seed\" = 3");
        assert!(e.contains("an array of the values to sweep"), "{e}");
        assert!(e.contains("found integer"), "{e}");
        let e = error("\"sim.seed\" = [1, 2, 1]");
        assert!(
            e.starts_with("f.toml:4:21:") && e.contains("found 1 twice"),
            "{e}"
        );
        let e = error("\"sim..seed\" = [1]");
        assert!(e.contains("not a key"), "{e}");
        let e = error("\"policy.linux\" = [{enabled = true}]\n\"policy.linux.enabled\" = [false]");
        assert!(e.contains("`policy.linux` is swept too"), "{e}");
        let e = error("plot = { x = \"sim.seed\", z = 1 }\n\"sim.seed\" = [1]");
        assert!(e.contains("key `sweep.plot.z`"), "{e}");
        // 10 x 10 x 10 x 10 x 11 = 110,000 points.
        let ten = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]";
        let e = error(&format!(
            "\"a.b\" = {ten}\n\"c.d\" = {ten}\n\"e.f\" = {ten}\n\"g.h\" = {ten}\n\
             \"i.j\" = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"
        ));
        assert!(e.contains("at most 100000 points"), "{e}");
    }
}
