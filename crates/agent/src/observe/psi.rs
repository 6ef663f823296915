//! Pressure stall information: `/proc/pressure/memory` (and the same format for `cpu` and
//! `io`), `kernel/sched/psi.c`. Needs `CONFIG_PSI`, and `psi=1` on the kernel command line
//! where the kernel is built with `CONFIG_PSI_DEFAULT_DISABLED` (as this project's
//! development machines are; the file is then present).
//!
//! ```text
//! some avg10=0.00 avg60=0.00 avg300=0.00 total=0
//! full avg10=0.00 avg60=0.00 avg300=0.00 total=0
//! ```
//!
//! `avgN` is the share of wall time (in percent) over the last N seconds in which some (or
//! all non-idle) tasks stalled on the resource; `total` is the stall time in microseconds
//! since boot. This module owns the parsing; it must not judge pressure.

use super::text::{self, lines, read_text, Line};
use crate::error::Result;
use serde::Serialize;
use std::path::Path;
use std::time::Duration;

/// Where the kernel serves memory pressure.
pub const MEMORY_PATH: &str = "/proc/pressure/memory";

/// One line: stall shares and the total stall time.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PressureLine {
    /// Percent of the last 10 s.
    pub avg10: f64,
    /// Percent of the last 60 s.
    pub avg60: f64,
    /// Percent of the last 300 s.
    pub avg300: f64,
    /// Stall time since boot.
    pub total: Duration,
}

/// A pressure file.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Pressure {
    /// Time in which at least one task stalled.
    pub some: PressureLine,
    /// Time in which all non-idle tasks stalled (absent from `cpu` on older kernels).
    pub full: Option<PressureLine>,
}

impl Pressure {
    /// Read and parse the host's `/proc/pressure/memory`.
    pub fn read_memory() -> Result<Pressure> {
        Pressure::read_path(Path::new(MEMORY_PATH))
    }

    /// Read and parse `path`.
    pub fn read_path(path: &Path) -> Result<Pressure> {
        Pressure::parse(path, &read_text(path)?)
    }

    /// Parse `text`, read from `path`: a `some` line, then optionally a `full` line.
    pub fn parse(path: &Path, text: &str) -> Result<Pressure> {
        let mut it = lines(path, text);
        let some = it
            .next()
            .ok_or_else(|| text::early_end(path, text, "a `some` line"))?;
        let some = pressure_line(&some, "some")?;
        let full = it.next().map(|l| pressure_line(&l, "full")).transpose()?;
        if let Some(extra) = it.next() {
            return Err(extra.error("end of file after the `full` line", extra.text));
        }
        Ok(Pressure { some, full })
    }
}

/// `kind avg10=A avg60=B avg300=C total=T`, keys in that order.
fn pressure_line(line: &Line<'_>, kind: &str) -> Result<PressureLine> {
    let mut tokens = line.text.split_whitespace();
    line.expect(&mut tokens, kind)?;
    let mut value = |key: &str| -> Result<&str> {
        let token = line.next(&mut tokens, &format!("`{key}=`"))?;
        token
            .strip_prefix(key)
            .and_then(|t| t.strip_prefix('='))
            .ok_or_else(|| line.error(format!("`{key}=`"), token))
    };
    let share = |text: &str| -> Result<f64> {
        let p: f64 = line.parse(text, "a percentage 0.00..=100.00")?;
        if !(0.0..=100.0).contains(&p) {
            return Err(line.error("a percentage 0.00..=100.00", text));
        }
        Ok(p)
    };
    let avg10 = share(value("avg10")?)?;
    let avg60 = share(value("avg60")?)?;
    let avg300 = share(value("avg300")?)?;
    let total = Duration::from_micros(line.parse(value("total")?, "microseconds")?);
    if let Some(extra) = tokens.next() {
        return Err(line.error("end of line after `total=`", extra));
    }
    Ok(PressureLine {
        avg10,
        avg60,
        avg300,
        total,
    })
}
