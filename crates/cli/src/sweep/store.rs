//! The points directory of a sweep (`<out>/points/`): one directory per finished point,
//! each made in a temporary sibling and renamed into place only when complete, so that a
//! point is either wholly there or not at all, whatever kills the process.
//!
//! A point's directory is named `<index>-<hash>`, the hash being of the point's resolved
//! configuration: a changed experiment, grid or `--set` never finds a stale result, and a
//! point whose configuration is unchanged is found again even when its index moved (the
//! grid grew). Rename is atomic against the process dying (SIGKILL, a crash), not against
//! the machine losing power: nothing is fsync'd.

use anyhow::Context;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// The prefix of temporary point directories, removed on the next start.
pub const TEMP_PREFIX: &str = ".tmp-";

/// The file that marks a point directory as a sweep's (written last, before the rename).
pub const POINT_FILE: &str = "point.json";

/// `point.json`: what a point is, for a reader of the directory and for resuming.
#[derive(Debug, Serialize)]
pub struct PointFile<'a> {
    /// Position in the grid (0-based).
    pub index: usize,
    /// The directory's name.
    pub id: &'a str,
    /// Hash of the resolved configuration (FNV-1a, 64 bits, hex).
    pub config_hash: &'a str,
    /// The swept keys' values.
    pub parameters: Vec<Parameter<'a>>,
    /// Every override the point applies to the experiment (`--set` ones first).
    pub overrides: Vec<String>,
}

/// One swept key's value in `point.json`.
#[derive(Debug, Serialize)]
pub struct Parameter<'a> {
    /// The key.
    pub key: &'a str,
    /// Its value.
    pub value: serde_json::Value,
}

/// The hash a point's directory is named by: FNV-1a (64 bits) of its resolved
/// configuration, as 12 hex digits. Chosen for being fixed forever (std's hasher may
/// change between Rust releases); it needs no strength, as a found directory's
/// configuration is compared in full before it is trusted.
pub fn config_hash(resolved: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in resolved.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{:012x}", h >> 16)
}

/// A resolved configuration file without its leading comment lines (the provenance),
/// to compare two.
pub fn config_body(text: &str) -> String {
    text.lines()
        .skip_while(|l| l.starts_with('#') || l.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The points directory.
pub struct Store {
    /// `<out>/points`.
    pub dir: PathBuf,
}

impl Store {
    /// Creates the directory if needed, and removes what killed runs left in it: the
    /// temporary directories of points that never finished. Returns how many there were.
    pub fn open(dir: PathBuf) -> anyhow::Result<(Store, usize)> {
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let mut removed = 0;
        for entry in read_dir(&dir)? {
            let name = entry.file_name();
            if name.to_string_lossy().starts_with(TEMP_PREFIX) {
                let path = entry.path();
                remove(&path).with_context(|| format!("removing {}", path.display()))?;
                removed += 1;
            }
        }
        Ok((Store { dir }, removed))
    }

    /// Whether point `id` (with resolved configuration `config`) is done: its directory
    /// exists and holds that configuration. A directory of another index with the same
    /// hash (the grid changed around an unchanged point), and not named as one of this
    /// grid's points (`ids`), is renamed to `id` and counts.
    /// A directory that holds another configuration is an error: it was edited by hand
    /// (or, once in 2^48, the hash collided), and only its owner can say which is right.
    pub fn done(&self, id: &str, config: &str, ids: &[&str]) -> anyhow::Result<bool> {
        let path = self.dir.join(id);
        if !path.exists() {
            let Some(moved) = self.same_hash_elsewhere(id, ids)? else {
                return Ok(false);
            };
            std::fs::rename(&moved, &path)
                .with_context(|| format!("renaming {} to {}", moved.display(), path.display()))?;
        }
        let found = std::fs::read_to_string(path.join("config.resolved.toml"))
            .ok()
            .filter(|_| path.join(POINT_FILE).is_file() && path.join("summary.json").is_file());
        match found {
            Some(text) if config_body(&text) == config_body(config) => Ok(true),
            _ => anyhow::bail!(
                "{} is not this sweep's point {id}: it lacks {POINT_FILE}, summary.json or \
                 config.resolved.toml, or holds another configuration; remove it and run \
                 the sweep again",
                path.display()
            ),
        }
    }

    /// A point directory `<other index>-<hash of id>` that is none of `ids`, if any.
    fn same_hash_elsewhere(&self, id: &str, ids: &[&str]) -> anyhow::Result<Option<PathBuf>> {
        let hash = id.rsplit('-').next().unwrap_or(id);
        for entry in read_dir(&self.dir)? {
            let name = entry.file_name().to_string_lossy().into_owned();
            if ids.contains(&name.as_str()) {
                continue;
            }
            let index = name.strip_suffix(hash).and_then(|i| i.strip_suffix('-'));
            if index.is_some_and(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit())) {
                return Ok(Some(entry.path()));
            }
        }
        Ok(None)
    }

    /// A fresh temporary directory for point `id`.
    pub fn temp(&self, id: &str) -> anyhow::Result<PathBuf> {
        let path = self
            .dir
            .join(format!("{TEMP_PREFIX}{id}-{}", std::process::id()));
        if path.exists() {
            remove(&path).with_context(|| format!("removing {}", path.display()))?;
        }
        std::fs::create_dir(&path).with_context(|| format!("creating {}", path.display()))?;
        Ok(path)
    }

    /// Moves the complete temporary directory `temp` into place as point `id`. If the
    /// point appeared meanwhile (another process ran it), that one is kept.
    pub fn commit(&self, temp: &Path, id: &str) -> anyhow::Result<()> {
        let path = self.dir.join(id);
        if let Err(e) = std::fs::rename(temp, &path) {
            if path.join(POINT_FILE).is_file() {
                return discard(temp);
            }
            return Err(e)
                .with_context(|| format!("renaming {} to {}", temp.display(), path.display()));
        }
        Ok(())
    }

    /// How many directories other than `ids` hold finished points (of another grid).
    pub fn others(&self, ids: &[&str]) -> anyhow::Result<usize> {
        let mut n = 0;
        for entry in read_dir(&self.dir)? {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !ids.contains(&name.as_str()) && entry.path().join(POINT_FILE).is_file() {
                n += 1;
            }
        }
        Ok(n)
    }
}

/// Removes an unfinished point's temporary directory.
pub fn discard(temp: &Path) -> anyhow::Result<()> {
    remove(temp).with_context(|| format!("removing {}", temp.display()))
}

fn remove(path: &Path) -> std::io::Result<()> {
    if path.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    }
}

fn read_dir(dir: &Path) -> anyhow::Result<Vec<std::fs::DirEntry>> {
    let entries = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    let mut out: Vec<_> = entries
        .collect::<Result<_, _>>()
        .with_context(|| format!("reading {}", dir.display()))?;
    out.sort_by_key(|e| e.file_name());
    Ok(out)
}

/// Writes `bytes` as `path` through a temporary file renamed over it, so a reader (or
/// a killed writer) never sees half a file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let temp = path.with_file_name(format!("{TEMP_PREFIX}{name}-{}", std::process::id()));
    std::fs::write(&temp, bytes).with_context(|| format!("writing {}", temp.display()))?;
    std::fs::rename(&temp, path).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_fixed_and_the_body_ignores_provenance() {
        // FNV-1a of "" is cbf29ce484222325; its top 48 bits:
        assert_eq!(config_hash(""), "cbf29ce48422");
        assert_ne!(
            config_hash("[sim]\nseed = 1\n"),
            config_hash("[sim]\nseed = 2\n")
        );
        assert_eq!(
            config_body("# hugemm 0.1.0\n# date: x\n\n[sim]\nseed = 1\n"),
            config_body("# hugemm 0.1.0\n# date: y\n\n[sim]\nseed = 1")
        );
    }

    #[test]
    fn temporary_directories_are_removed_on_open_and_points_found_by_hash() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("points");
        std::fs::create_dir_all(dir.join(".tmp-000-abc-1/inner")).unwrap();
        let (store, removed) = Store::open(dir.clone()).unwrap();
        assert_eq!(removed, 1);
        assert!(!store.done("000-abc", "x", &["000-abc"]).unwrap());
        // A finished point at another index is moved to this one's name.
        let old = dir.join("007-abc");
        std::fs::create_dir(&old).unwrap();
        for f in [POINT_FILE, "summary.json"] {
            std::fs::write(old.join(f), "{}").unwrap();
        }
        std::fs::write(old.join("config.resolved.toml"), "# c\n\n[sim]\n").unwrap();
        // (Not while 007-abc is a point of this grid too.)
        assert!(!store
            .done("000-abc", "[sim]\n", &["000-abc", "007-abc"])
            .unwrap());
        assert!(store.done("000-abc", "[sim]\n", &["000-abc"]).unwrap());
        assert!(dir.join("000-abc").is_dir() && !old.exists());
        // The same name holding another configuration is refused.
        let e = store.done("000-abc", "[sim]\nseed = 2\n", &[]).unwrap_err();
        assert!(e.to_string().contains("holds another configuration"), "{e}");
    }
}
