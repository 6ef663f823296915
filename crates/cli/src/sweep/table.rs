//! The results table of a sweep: one row per point (its index, its directory, the swept
//! values, then the metrics of its `summary.json`), written as `results.csv` and
//! `results.parquet`.
//!
//! The metrics are read from each point's `summary.json` on disk, for points run now and
//! points found done alike, so a resumed sweep's table is byte-identical to an
//! uninterrupted one's. This module does not run anything and does not know the grid's
//! file: it turns rows into files.

use anyhow::Context;
use arrow_array::{ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch};
use arrow_array::{StringArray, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use serde_json::Value;
use std::sync::Arc;

/// One cell.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// No value (a process this point does not have).
    Null,
    /// A signed integer (a swept integer).
    Int(i64),
    /// A count.
    UInt(u64),
    /// A ratio, or a time in seconds.
    Float(f64),
    /// A yes/no.
    Bool(bool),
    /// Text.
    Text(String),
}

impl Cell {
    /// The cell as a number, for the plot (`None` for text and empty cells).
    pub fn number(&self) -> Option<f64> {
        match self {
            Cell::Int(i) => Some(*i as f64),
            Cell::UInt(u) => Some(*u as f64),
            Cell::Float(x) => Some(*x),
            Cell::Bool(b) => Some(f64::from(u8::from(*b))),
            Cell::Null | Cell::Text(_) => None,
        }
    }
}

/// What a metric is: how it is read from `summary.json`.
#[derive(Clone, Copy)]
enum Read {
    /// An integer field.
    Count,
    /// A float field.
    Ratio,
    /// A boolean field.
    Flag,
    /// An integer of nanoseconds, as seconds.
    Seconds,
}

/// Per-process metrics: the column's suffix (after `<process>.`), and the field of the
/// process's object in `summary.json`.
const PROCESS_METRICS: &[(&str, &str, Read)] = &[
    ("runtime_s", "/runtime_ns", Read::Seconds),
    ("finished", "/finished", Read::Flag),
    ("oom", "/oom", Read::Flag),
    ("references", "/references", Read::Count),
    ("mmu_overhead", "/mmu_overhead", Read::Ratio),
    ("faults_4k", "/faults_4k", Read::Count),
    ("faults_2m", "/faults_2m", Read::Count),
    ("faults_huge_fallback", "/faults_huge_fallback", Read::Count),
    ("fault_time_s", "/fault_time_ns", Read::Seconds),
    ("fault_p99_ns", "/fault_p99_ns", Read::Count),
    ("promotions", "/promotions", Read::Count),
    ("huge_pages_end", "/huge_pages_end", Read::Count),
    ("rss_bytes_end", "/rss_bytes_end", Read::Count),
    ("bloat_bytes_end", "/bloat_bytes_end", Read::Count),
];

/// System metrics: the column (after `system.`) and its field in `summary.json`.
const SYSTEM_METRICS: &[(&str, &str, Read)] = &[
    ("sim_time_s", "/system/sim_time_ns", Read::Seconds),
    ("collapses", "/system/collapses", Read::Count),
    (
        "collapse_failures",
        "/system/collapse_failures",
        Read::Count,
    ),
    ("splits", "/system/splits", Read::Count),
    (
        "promotions_in_place",
        "/system/promotions_in_place",
        Read::Count,
    ),
    ("oom_events", "/system/oom_events", Read::Count),
    ("frames_free_end", "/system/frames_free_end", Read::Count),
    ("fmfi_end", "/system/fragmentation_end/fmfi", Read::Ratio),
    (
        "page_cache_pages_end",
        "/system/page_cache_pages_end",
        Read::Count,
    ),
];

/// The metric columns' names for a point whose processes are called `names` (in
/// experiment order): the columns a plot may name before anything has run.
pub fn metric_columns(names: &[String]) -> Vec<String> {
    let mut out = vec!["complete".to_string()];
    for name in process_prefixes(names) {
        out.extend(PROCESS_METRICS.iter().map(|(m, ..)| format!("{name}.{m}")));
    }
    out.extend(SYSTEM_METRICS.iter().map(|(m, ..)| format!("system.{m}")));
    out
}

/// The metric columns in words, for an error naming a column that does not exist.
pub fn describe_columns(names: &[String]) -> String {
    let process: Vec<&str> = PROCESS_METRICS.iter().map(|(m, ..)| *m).collect();
    let system: Vec<&str> = SYSTEM_METRICS.iter().map(|(m, ..)| *m).collect();
    format!(
        "complete, <process>.<metric> for a process of the experiment ({}) and a metric \
         ({}), or system.<metric> ({})",
        process_prefixes(names).join(", "),
        process.join(", "),
        system.join(", ")
    )
}

/// The metrics of one point, from its `summary.json`: `complete`, each process's (as
/// `<name>.<metric>`), then the system's (as `system.<metric>`).
pub fn metrics(summary: &Value) -> anyhow::Result<Vec<(String, Cell)>> {
    let processes = summary["processes"]
        .as_array()
        .context("summary.json has no \"processes\" array")?;
    let names: Vec<String> = processes
        .iter()
        .map(|p| p["name"].as_str().unwrap_or_default().to_string())
        .collect();
    let mut out = vec![(
        "complete".to_string(),
        read(summary, "/complete", Read::Flag)?,
    )];
    for (p, prefix) in processes.iter().zip(process_prefixes(&names)) {
        for (metric, field, how) in PROCESS_METRICS {
            out.push((format!("{prefix}.{metric}"), read(p, field, *how)?));
        }
    }
    for (metric, field, how) in SYSTEM_METRICS {
        out.push((format!("system.{metric}"), read(summary, field, *how)?));
    }
    Ok(out)
}

/// The column prefix of each process: its name, with `#2`, `#3`... for the second and
/// later of one name (an experiment may give two processes the same name).
fn process_prefixes(names: &[String]) -> Vec<String> {
    names
        .iter()
        .enumerate()
        .map(
            |(i, n)| match names[..i].iter().filter(|m| *m == n).count() {
                0 => n.clone(),
                k => format!("{n}#{}", k + 1),
            },
        )
        .collect()
}

fn read(v: &Value, field: &str, how: Read) -> anyhow::Result<Cell> {
    let x = v
        .pointer(field)
        .with_context(|| format!("summary.json has no {field}"))?;
    let bad = || format!("summary.json: {field} is {x}, not the number or flag expected");
    Ok(match how {
        Read::Count => Cell::UInt(x.as_u64().with_context(bad)?),
        Read::Ratio => Cell::Float(x.as_f64().with_context(bad)?),
        Read::Flag => Cell::Bool(x.as_bool().with_context(bad)?),
        Read::Seconds => Cell::Float(x.as_u64().with_context(bad)? as f64 / 1e9),
    })
}

/// A column: its name, its type and a cell per row.
#[derive(Debug)]
pub struct Column {
    /// Header.
    pub name: String,
    /// The type of every cell that is not empty.
    pub kind: DataType,
    /// One cell per row.
    pub cells: Vec<Cell>,
}

/// The results table.
#[derive(Debug)]
pub struct Table {
    /// The columns, in order.
    pub columns: Vec<Column>,
}

impl Table {
    /// The table of `rows`, each a list of (column, cell): the columns are every name
    /// any row has, in order of first appearance, and a row without one has an empty
    /// cell there. Each column's type is its cells': integers, counts, booleans, floats
    /// (integers and floats mixed), else text.
    pub fn new(rows: &[Vec<(String, Cell)>]) -> Table {
        let mut names: Vec<&str> = Vec::new();
        for row in rows {
            for (name, _) in row {
                if !names.contains(&name.as_str()) {
                    names.push(name);
                }
            }
        }
        let columns = names
            .into_iter()
            .map(|name| {
                let cells = rows
                    .iter()
                    .map(|row| {
                        row.iter()
                            .find(|(n, _)| n == name)
                            .map_or(Cell::Null, |(_, c)| c.clone())
                    })
                    .collect();
                Column::typed(name.to_string(), cells)
            })
            .collect();
        Table { columns }
    }

    /// The column called `name`.
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.name == name)
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, |c| c.cells.len())
    }

    /// The table as CSV (RFC 4180, a header line, empty fields for empty cells; floats
    /// in Rust's shortest form that reads back to the same number).
    pub fn csv(&self) -> anyhow::Result<Vec<u8>> {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(self.columns.iter().map(|c| c.name.as_str()))?;
        for i in 0..self.rows() {
            w.write_record(self.columns.iter().map(|c| text(&c.cells[i])))?;
        }
        w.into_inner().context("writing CSV")
    }

    /// The table as a Parquet file: one row group, no compression, every column
    /// nullable, typed as in [`Table::new`].
    pub fn parquet(&self) -> anyhow::Result<Vec<u8>> {
        let fields: Vec<Field> = self
            .columns
            .iter()
            .map(|c| Field::new(&c.name, c.kind.clone(), true))
            .collect();
        let schema = Arc::new(Schema::new(fields));
        let arrays: Vec<ArrayRef> = self.columns.iter().map(Column::array).collect();
        let batch = RecordBatch::try_new(Arc::clone(&schema), arrays)
            .context("building the Parquet table")?;
        let mut out = Vec::new();
        let mut writer = parquet::arrow::ArrowWriter::try_new(&mut out, schema, None)
            .context("writing Parquet")?;
        writer.write(&batch).context("writing Parquet")?;
        writer.close().context("writing Parquet")?;
        Ok(out)
    }
}

impl Column {
    /// A column of `cells`, typed by them (and converted to that type).
    fn typed(name: String, cells: Vec<Cell>) -> Column {
        let present = || cells.iter().filter(|c| **c != Cell::Null);
        let all = |f: fn(&Cell) -> bool| present().all(f);
        let kind = if all(|c| matches!(c, Cell::Int(_))) {
            DataType::Int64
        } else if all(|c| matches!(c, Cell::UInt(_))) {
            DataType::UInt64
        } else if all(|c| matches!(c, Cell::Bool(_))) {
            DataType::Boolean
        } else if all(|c| matches!(c, Cell::Int(_) | Cell::UInt(_) | Cell::Float(_))) {
            DataType::Float64
        } else {
            DataType::Utf8
        };
        let cells = cells
            .into_iter()
            .map(|c| match (&kind, c) {
                (_, Cell::Null) => Cell::Null,
                (DataType::Float64, c) => Cell::Float(c.number().expect("a number")),
                (DataType::Utf8, c) => Cell::Text(text(&c)),
                (_, c) => c,
            })
            .collect();
        Column { name, kind, cells }
    }

    fn array(&self) -> ArrayRef {
        let cells = self.cells.iter();
        match self.kind {
            DataType::Int64 => Arc::new(Int64Array::from_iter(cells.map(|c| match c {
                Cell::Int(x) => Some(*x),
                _ => None,
            }))),
            DataType::UInt64 => Arc::new(UInt64Array::from_iter(cells.map(|c| match c {
                Cell::UInt(x) => Some(*x),
                _ => None,
            }))),
            DataType::Boolean => Arc::new(BooleanArray::from_iter(cells.map(|c| match c {
                Cell::Bool(x) => Some(*x),
                _ => None,
            }))),
            DataType::Float64 => Arc::new(Float64Array::from_iter(cells.map(Cell::number))),
            _ => Arc::new(StringArray::from_iter(cells.map(|c| match c {
                Cell::Null => None,
                c => Some(text(c)),
            }))),
        }
    }
}

/// A cell as text.
fn text(c: &Cell) -> String {
    match c {
        Cell::Null => String::new(),
        Cell::Int(x) => x.to_string(),
        Cell::UInt(x) => x.to_string(),
        Cell::Float(x) => x.to_string(),
        Cell::Bool(x) => x.to_string(),
        Cell::Text(x) => x.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(cells: &[(&str, Cell)]) -> Vec<(String, Cell)> {
        cells
            .iter()
            .map(|(n, c)| (n.to_string(), c.clone()))
            .collect()
    }

    #[test]
    fn columns_are_the_union_in_order_and_typed_by_their_cells() {
        let t = Table::new(&[
            row(&[
                ("a", Cell::Int(1)),
                ("x", Cell::Int(2)),
                ("p.n", Cell::UInt(5)),
            ]),
            row(&[
                ("a", Cell::Int(2)),
                ("x", Cell::Float(0.5)),
                ("q.n", Cell::UInt(7)),
            ]),
        ]);
        let names: Vec<_> = t.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["a", "x", "p.n", "q.n"]);
        assert_eq!(t.column("a").unwrap().kind, DataType::Int64);
        assert_eq!(t.column("x").unwrap().kind, DataType::Float64);
        assert_eq!(t.column("q.n").unwrap().cells, [Cell::Null, Cell::UInt(7)]);
        let csv = String::from_utf8(t.csv().unwrap()).unwrap();
        assert_eq!(csv, "a,x,p.n,q.n\n1,2,5,\n2,0.5,,7\n");
    }

    #[test]
    fn duplicate_process_names_get_numbered_columns() {
        let names = ["a", "b", "a"].map(String::from);
        assert_eq!(process_prefixes(&names), ["a", "b", "a#2"]);
        let cols = metric_columns(&names);
        assert!(cols.contains(&"a#2.runtime_s".to_string()));
        assert_eq!(cols[0], "complete");
    }

    #[test]
    fn parquet_holds_the_same_rows() {
        use arrow_array::Array;
        let t = Table::new(&[
            row(&[("k", Cell::Text("linux".into())), ("v", Cell::UInt(3))]),
            row(&[("k", Cell::Text("hawkeye".into())), ("w", Cell::Bool(true))]),
        ]);
        let mut file = tempfile::tempfile().unwrap();
        std::io::Write::write_all(&mut file, &t.parquet().unwrap()).unwrap();
        let reader =
            parquet::arrow::arrow_reader::ParquetRecordBatchReader::try_new(file, 16).unwrap();
        let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
        let b = &batches[0];
        assert_eq!(b.num_rows(), 2);
        let k = b.column(0).as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!((k.value(0), k.value(1)), ("linux", "hawkeye"));
        let v = b.column(1).as_any().downcast_ref::<UInt64Array>().unwrap();
        assert!(v.is_valid(0) && v.value(0) == 3 && v.is_null(1));
    }
}
