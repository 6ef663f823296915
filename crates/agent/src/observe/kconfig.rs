//! The running kernel's build configuration: `/proc/config.gz` (`CONFIG_IKCONFIG_PROC`) or
//! `/boot/config-$(uname -r)`, in Kconfig's `.config` format:
//!
//! ```text
//! CONFIG_DAMON_PADDR=y
//! # CONFIG_DAMON_VADDR is not set
//! ```
//!
//! An option missing from a full `.config` is disabled (its dependencies are not met).
//! This module owns reading and parsing the file; it must not decide what an option means
//! for the agent.

use super::text::{lines, read_text, Line};
use crate::error::{ObserveError, Result};
use flate2::read::GzDecoder;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// Where the kernel serves its own configuration.
pub const PROC_CONFIG: &str = "/proc/config.gz";

/// The value of one option.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum ConfigValue {
    /// `=y`: built in.
    Yes,
    /// `=m`: a module.
    Module,
    /// `# CONFIG_X is not set`.
    NotSet,
    /// Any other value (a number or a quoted string), as written.
    Value(String),
}

/// A parsed kernel configuration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KernelConfig {
    path: PathBuf,
    options: BTreeMap<String, ConfigValue>,
}

impl KernelConfig {
    /// The running kernel's configuration from the first readable of [`host_paths`];
    /// `None` when none is readable.
    pub fn read_host() -> Result<Option<KernelConfig>> {
        for path in host_paths() {
            match KernelConfig::read_path(&path) {
                Ok(config) => return Ok(Some(config)),
                Err(ObserveError::Read { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }

    /// Read and parse `path`, gunzipping it when its name ends in `.gz`.
    pub fn read_path(path: &Path) -> Result<KernelConfig> {
        let text = if path.extension().is_some_and(|e| e == "gz") {
            gunzip(path).map_err(|e| ObserveError::read(path, e))?
        } else {
            read_text(path)?
        };
        KernelConfig::parse(path, &text)
    }

    /// Parse `text`, read from `path`.
    pub fn parse(path: &Path, text: &str) -> Result<KernelConfig> {
        let mut options = BTreeMap::new();
        for line in lines(path, text) {
            if let Some((name, value)) = option(&line)? {
                options.insert(name.to_string(), value);
            }
        }
        Ok(KernelConfig {
            path: path.to_path_buf(),
            options,
        })
    }

    /// Where the configuration was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The value of `name` (`CONFIG_...`), if the file lists it.
    pub fn get(&self, name: &str) -> Option<&ConfigValue> {
        self.options.get(name)
    }

    /// Whether `name` is built in or a module (an option not listed is not).
    pub fn enabled(&self, name: &str) -> bool {
        matches!(self.get(name), Some(ConfigValue::Yes | ConfigValue::Module))
    }
}

/// Where the running kernel's configuration may be: `/proc/config.gz`, then
/// `/boot/config-RELEASE` (the release read from `/proc/sys/kernel/osrelease`).
pub fn host_paths() -> Vec<PathBuf> {
    let mut paths = vec![PathBuf::from(PROC_CONFIG)];
    if let Ok(release) = std::fs::read_to_string("/proc/sys/kernel/osrelease") {
        paths.push(PathBuf::from(format!("/boot/config-{}", release.trim())));
    }
    paths
}

fn gunzip(path: &Path) -> io::Result<String> {
    let mut text = String::new();
    GzDecoder::new(File::open(path)?).read_to_string(&mut text)?;
    Ok(text)
}

/// One line: an option, or a comment or blank line (`None`).
fn option<'t>(line: &Line<'t>) -> Result<Option<(&'t str, ConfigValue)>> {
    let t = line.text.trim_end();
    if let Some(comment) = t.strip_prefix('#') {
        let unset = comment.trim().strip_suffix(" is not set");
        return Ok(unset
            .filter(|n| is_name(n))
            .map(|n| (n, ConfigValue::NotSet)));
    }
    if t.is_empty() {
        return Ok(None);
    }
    let (name, value) = t
        .split_once('=')
        .filter(|(n, v)| is_name(n) && !v.is_empty())
        .ok_or_else(|| line.error("`CONFIG_NAME=value`, a comment or a blank line", t))?;
    let value = match value {
        "y" => ConfigValue::Yes,
        "m" => ConfigValue::Module,
        v => ConfigValue::Value(v.to_string()),
    };
    Ok(Some((name, value)))
}

fn is_name(name: &str) -> bool {
    name.strip_prefix("CONFIG_")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
}
