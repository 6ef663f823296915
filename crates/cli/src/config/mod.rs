//! Experiment files: parsing ([`raw`]), validation into a typed
//! [`hugemm_sim::Experiment`] ([`validate`]), and sizes with units ([`size`]).
//!
//! Every error names the file, the key and what was expected (conventions 6).

pub mod agent;
mod apps;
mod freebsd;
mod kernel;
mod kv;
pub mod locate;
pub mod overrides;
mod policies;
pub mod raw;
pub mod size;
mod tiering;
pub mod validate;
pub mod vms;

use std::path::Path;

pub use overrides::Override;
pub use validate::{
    load, load_with, parse, parse_with, ConfigError, Loaded, PolicyCatalog, Pos, Source,
};

/// The directory an experiment file's relative paths (profiles) are resolved from.
pub fn base_dir(path: &Path) -> &Path {
    path.parent().unwrap_or(Path::new("."))
}
