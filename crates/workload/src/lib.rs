//! hugemm's workloads: what a simulated process does, as typed phases (map memory, touch
//! it, access it in a pattern, advise, unmap, sleep), and the address streams that the
//! patterns generate, and generated workloads: models of the papers' applications
//! ([`apps`]), kernel builds and other system activity ([`kbuild`]).
//!
//! This crate describes behaviour only. It never touches the kernel model or the hardware
//! model: the engine (`hugemm-sim`) carries the phases out. Parsing of experiment files
//! lives in the command-line crate; here every value is already validated and typed.

pub mod apps;
pub mod builtin;
pub mod jemalloc;
pub mod kbuild;
pub mod kv;
pub mod pattern;
pub mod spec;

pub use pattern::{SkipCoverage, Stream};
pub use spec::{
    AccessPhase, Advice, Amount, BufferId, FileId, HighAllocGfp, KernelMem, Lifetime, MadviseKind,
    Pattern, Phase, ProcessSpec, Writes,
};
