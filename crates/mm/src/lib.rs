//! hugemm's kernel model: physical memory (frames, the buddy allocator, pageblocks and
//! their fallback policy), per-process address spaces (VMAs and page tables with accessed
//! and dirty bits), and the mechanisms policies drive: faults (4 KB, 2 MB, zero page,
//! copy-on-write of the zero page), collapse, split, unmap and `madvise`; FreeBSD's
//! superpage reservations and in-place promotion; kernel
//! allocations, the page cache and its reclaim, page migration, compaction and the
//! fragmentation metrics of APSys'16.
//!
//! The kernel model offers mechanisms; policies (hugemm-policy) decide (conventions 3). Time
//! is charged from [`MmCosts`]; nothing here reads a clock. The hardware's view of a
//! reference (TLBs, walks) is hugemm-hw's business: [`Kernel::touch`] only says which page
//! size maps an address and at which physical address.

#![deny(unsafe_code)]

mod addrspace;
mod api;
pub mod buddy;
mod collapse;
pub mod compaction;
pub mod content;
pub mod costs;
mod dedup;
pub mod error;
pub mod fallback;
mod fault;
pub mod frame;
mod freelist;
mod invariants;
pub mod kernel;
pub mod kmem;
mod lru;
mod mech;
pub mod metrics;
mod migrate;
mod mmap;
pub mod movepages;
pub mod node;
pub mod pageblock;
pub mod pagecache;
mod pagetable;
pub mod pcp;
pub mod pte;
pub mod reclaim;
mod reserv;
mod slab;
mod split;
pub mod stats;
mod steal;
#[cfg(test)]
mod testutil;
mod unmap;
pub mod vma;

pub use api::{
    CollapseOutcome, FaultInfo, FaultKind, FaultOutcome, FaultRequest, HugeAdvice, Madvise,
    RegionInfo, RegionState, ReservationCensus, ReservationInfo, TlbFlush, Touch, Translation,
};
pub use buddy::{AllocRequest, Block, PhysMem, PrezeroScope, ZeroedFirst};
pub use compaction::{CompactOutcome, CompactRequest};
pub use content::WriteContent;
pub use costs::{FragCosts, MmCosts};
pub use dedup::{ScanStyle, ZeroScan, ZeroScanOutcome};
pub use error::{CollapseError, MmError, Result};
pub use fallback::{
    Aaf, Apbs, FallbackChoice, FallbackPolicy, FreeAreaView, KernelLayout, LinuxDefault, Opbs,
    PageblockCensus, Placement, Rpbs, UnknownPolicy,
};
pub use frame::{Frame, FrameState, OwnerKind, BYTES_PER_FRAME};
pub use kernel::{Kernel, MemConfig};
pub use kmem::{KmemHandle, KmemKind};
pub use metrics::{FragMetrics, PageblockCounts};
pub use migrate::EvacuateOutcome;
pub use movepages::{
    Mechanism, MigrateOutcome, MigrationCosts, NodeUse, PageScan, ThpMigration, TierStats,
};
pub use node::{NodeId, NodePref};
pub use pageblock::MigrateType;
pub use pagecache::{FileId, FileRead};
pub use pcp::PcpConfig;
pub use pte::Pte;
pub use reclaim::{ReclaimOutcome, Watermarks};
pub use stats::{FallbackEventCount, FallbackStats, FaultCounts, KernelStats};
pub use vma::Vma;
