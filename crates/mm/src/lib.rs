//! hugemm's kernel model: physical memory (frames, the buddy allocator, pageblocks and
//! their fallback policy), per-process address spaces (VMAs and page tables with accessed
//! and dirty bits), and the mechanisms policies drive: faults (4 KB, 2 MB, zero page,
//! copy-on-write of the zero page), collapse, split, unmap and `madvise`.
//!
//! The kernel model offers mechanisms; policies (hugemm-policy) decide (STYLE.md 3). Time
//! is charged from [`MmCosts`]; nothing here reads a clock. The hardware's view of a
//! reference (TLBs, walks) is hugemm-hw's business: [`Kernel::touch`] only says which page
//! size maps an address and at which physical address.

#![deny(unsafe_code)]

mod addrspace;
mod api;
pub mod buddy;
mod collapse;
pub mod costs;
pub mod error;
pub mod fallback;
mod fault;
pub mod frame;
mod freelist;
mod invariants;
pub mod kernel;
mod mech;
mod mmap;
pub mod pageblock;
mod pagetable;
pub mod pte;
mod split;
pub mod stats;
mod steal;
#[cfg(test)]
mod testutil;
mod unmap;
pub mod vma;

pub use api::{
    CollapseOutcome, FaultInfo, FaultKind, FaultOutcome, HugeAdvice, Madvise, RegionInfo,
    RegionState, TlbFlush, Touch, Translation,
};
pub use buddy::{AllocRequest, Block, PhysMem};
pub use costs::MmCosts;
pub use error::{CollapseError, MmError, Result};
pub use fallback::{
    Aaf, Apbs, FallbackChoice, FallbackPolicy, FreeAreaView, KernelLayout, LinuxDefault, Opbs,
    PageblockCensus, Placement, Rpbs, UnknownPolicy,
};
pub use frame::{Frame, FrameState, OwnerKind, BYTES_PER_FRAME};
pub use kernel::{Kernel, MemConfig};
pub use pageblock::MigrateType;
pub use pte::Pte;
pub use stats::{FallbackStats, FaultCounts, KernelStats};
pub use vma::Vma;
