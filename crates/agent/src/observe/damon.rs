//! DAMON's sysfs interface, read only: `/sys/kernel/mm/damon/admin` (`mm/damon/sysfs.c`,
//! `Documentation/admin-guide/mm/damon/usage.rst`), needs `CONFIG_DAMON_SYSFS` and root.
//!
//! This module reads which kdamonds exist, their state, and the operation sets a context
//! offers (`avail_operations`), and asks (with `faccessat`, writing nothing) whether this
//! process could write `nr_kdamonds`. It must never write a DAMON file: writing
//! `nr_kdamonds` removes and recreates every kdamond directory (and fails with `EBUSY`
//! while any kdamond runs), which would destroy a configuration the agent did not create.

use super::text::{read_text, single_value};
use crate::error::{ObserveError, Result};
use rustix::fs::{accessat, Access, AtFlags, CWD};
use serde::Serialize;
use std::io;
use std::path::{Path, PathBuf};

/// The state of a kdamond (its `state` file reads `on` or `off`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum KdamondState {
    /// Running.
    On,
    /// Stopped.
    Off,
}

impl std::fmt::Display for KdamondState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            KdamondState::On => "on",
            KdamondState::Off => "off",
        })
    }
}

/// One monitoring context of a kdamond.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DamonContext {
    /// The operation set it uses (`vaddr`, `fvaddr`, `paddr`).
    pub operations: String,
    /// The operation sets the kernel offers (Linux 6.2; empty before).
    pub avail_operations: Vec<String>,
}

/// One kdamond directory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Kdamond {
    /// Its index under `kdamonds/`.
    pub index: u32,
    /// Running or not.
    pub state: KdamondState,
    /// The kernel thread's pid while it runs.
    pub pid: Option<u32>,
    /// Its contexts.
    pub contexts: Vec<DamonContext>,
}

/// What DAMON's sysfs interface shows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum DamonSysfs {
    /// The admin directory does not exist (no `CONFIG_DAMON_SYSFS`).
    Absent,
    /// It exists but this process may not read it.
    Unreadable {
        /// The read error, as text.
        reason: String,
    },
    /// It was read.
    Present {
        /// The kdamonds it holds, none of which this crate created.
        kdamonds: Vec<Kdamond>,
        /// Whether this process may write `kdamonds/nr_kdamonds`.
        writable: bool,
    },
}

impl DamonSysfs {
    /// Read the admin directory `admin` (`/sys/kernel/mm/damon/admin` on a host).
    pub fn read(admin: &Path) -> Result<DamonSysfs> {
        if !admin.is_dir() {
            return Ok(DamonSysfs::Absent);
        }
        let nr_path = admin.join("kdamonds/nr_kdamonds");
        let nr: u32 = match read_text(&nr_path) {
            Ok(text) => single_value(&nr_path, &text, "a kdamond count")?,
            Err(ObserveError::Read { source, .. }) if denied(&source) => {
                let reason = format!("{}: {source}", nr_path.display());
                return Ok(DamonSysfs::Unreadable { reason });
            }
            Err(e) => return Err(e),
        };
        let kdamonds = (0..nr)
            .map(|i| read_kdamond(&admin.join("kdamonds"), i))
            .collect::<Result<_>>()?;
        let writable = accessat(CWD, &nr_path, Access::WRITE_OK, AtFlags::EACCESS).is_ok();
        Ok(DamonSysfs::Present { kdamonds, writable })
    }

    /// The operation sets the kernel offers, from the first context that lists them;
    /// `None` when no context exists to ask (the list lives only inside a context).
    pub fn avail_operations(&self) -> Option<&[String]> {
        let DamonSysfs::Present { kdamonds, .. } = self else {
            return None;
        };
        kdamonds
            .iter()
            .flat_map(|k| &k.contexts)
            .map(|c| c.avail_operations.as_slice())
            .find(|ops| !ops.is_empty())
    }
}

fn denied(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::PermissionDenied
}

fn read_kdamond(kdamonds: &Path, index: u32) -> Result<Kdamond> {
    let dir = kdamonds.join(index.to_string());
    let state = read_value::<String>(&dir.join("state"), "`on` or `off`")?;
    let state = match state.as_str() {
        "on" => KdamondState::On,
        "off" => KdamondState::Off,
        _ => {
            return Err(super::text::parse_error(
                &dir.join("state"),
                1,
                "`on` or `off`",
                &state,
            ))
        }
    };
    let pid: i64 = read_value(&dir.join("pid"), "a pid or -1")?;
    let contexts_dir = dir.join("contexts");
    let nr: u32 = read_value(&contexts_dir.join("nr_contexts"), "a context count")?;
    let contexts = (0..nr)
        .map(|i| read_context(&contexts_dir.join(i.to_string())))
        .collect::<Result<_>>()?;
    Ok(Kdamond {
        index,
        state,
        pid: u32::try_from(pid).ok(),
        contexts,
    })
}

fn read_context(dir: &Path) -> Result<DamonContext> {
    let operations = read_value(&dir.join("operations"), "an operation set name")?;
    let avail_path: PathBuf = dir.join("avail_operations");
    let avail_operations = match read_text(&avail_path) {
        Ok(text) => text.split_whitespace().map(str::to_string).collect(),
        Err(ObserveError::Read { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
            Vec::new()
        }
        Err(e) => return Err(e),
    };
    Ok(DamonContext {
        operations,
        avail_operations,
    })
}

fn read_value<T: std::str::FromStr>(path: &Path, expected: &str) -> Result<T> {
    single_value(path, &read_text(path)?, expected)
}
