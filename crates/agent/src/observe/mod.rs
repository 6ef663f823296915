//! Read-only observation of a Linux host: one module per kernel interface, each a small
//! strict parser plus the file reads it needs.
//!
//! Parsers take the file's text and its path (`parse(path, text)`), so they run on captured
//! files in tests; `read*` functions read the live file and parse it. Nothing here writes to
//! the kernel, decides anything, or keeps state between observations: that is the agent
//! loop's business (a later increment).

pub mod buddyinfo;
pub mod damon;
mod entries;
pub mod kconfig;
pub mod pagemap;
pub mod pagetypeinfo;
pub mod psi;
pub mod smaps;
pub mod sources;
mod text;
pub mod zone;
