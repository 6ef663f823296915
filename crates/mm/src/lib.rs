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

mod api;
pub mod costs;
pub mod error;
mod huge;
pub mod kernel;
mod phys;
mod pressure;
mod space;
pub mod stats;
#[cfg(test)]
mod testutil;

pub use phys::{buddy, fallback, frame, metrics, pageblock, pcp};
pub use pressure::{compaction, kmem, pagecache, reclaim};
pub use space::{content, pte, vma};

pub use api::{
    CollapseOutcome, FaultInfo, FaultKind, FaultOutcome, FaultRequest, HugeAdvice, Madvise,
    RegionInfo, RegionState, ReservationCensus, ReservationInfo, TlbFlush, Touch, Translation,
};
pub use buddy::{AllocRequest, Block, PhysMem, PrezeroScope, ZeroedFirst};
pub use compaction::{CompactOutcome, CompactRequest};
pub use content::WriteContent;
pub use costs::{FragCosts, MmCosts};
pub use error::{CollapseError, MmError, Result};
pub use fallback::{
    Aaf, Apbs, FallbackChoice, FallbackPolicy, FreeAreaView, KernelLayout, LinuxDefault, Opbs,
    PageblockCensus, Placement, Rpbs, UnknownPolicy,
};
pub use frame::{Frame, FrameState, OwnerKind, BYTES_PER_FRAME};
pub use huge::dedup::{ScanStyle, ZeroScan, ZeroScanOutcome};
pub use kernel::migrate::EvacuateOutcome;
pub use kernel::{Kernel, MemConfig};
pub use kmem::{KmemHandle, KmemKind};
pub use metrics::{FragMetrics, PageblockCounts};
pub use pageblock::MigrateType;
pub use pagecache::{FileId, FileRead};
pub use pcp::PcpConfig;
pub use pte::Pte;
pub use reclaim::{ReclaimOutcome, Watermarks};
pub use stats::{FallbackEventCount, FallbackStats, FaultCounts, KernelStats};
pub use vma::Vma;
