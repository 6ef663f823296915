//! hugemm's hardware model: the quantities every layer uses, machine profiles, and the cost
//! of translating and serving a memory reference (TLBs, page-walk caches, caches holding
//! page-table and data lines, memory-level parallelism), counted by a simulated PMU.
//!
//! This crate knows nothing about operating-system state: the kernel model (`hugemm-mm`)
//! says which page size maps a reference and at which physical address; this crate says
//! what that reference costs.
//!
//! Modules: [`units`] (quantities), [`profile`] and [`error`] (machine profiles and their
//! loading), [`setassoc`] (the associative array behind every TLB and cache), [`cache`]
//! (a core's cache hierarchy), [`mmu`] (translation and the cost model), [`pmu`]
//! (counters).

#![warn(missing_docs)]
#![deny(unsafe_code)]

pub mod cache;
pub mod error;
mod lrulist;
mod lruset;
pub mod mmu;
mod nested;
pub mod plru;
pub mod pmu;
pub mod prefetch;
pub mod profile;
pub mod setassoc;
mod tags;
pub mod units;
mod validate;

pub use error::ProfileError;
pub use mmu::{AccessCost, Mmu, Reference, TlbOutcome};
pub use pmu::{Pmu, Skipped};
pub use profile::{
    AssocProfile, CacheLevelProfile, GuestProfile, KernelCosts, L1TlbProfile, MachineProfile,
    PerSize, PwcProfile, StlbProfile, TlbProfile,
};
pub use units::*;
