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
//!
//! # Layout
//!
//! The modules sit in groups, low to high; a module may import from its own group and the
//! groups below, never from one above (`tests/layering.rs` checks it on the source):
//!
//! | level | group | what it holds |
//! |---|---|---|
//! | 0 | shared leaves `api`, `costs`, `error`, `stats` | vocabulary, costs, errors and counters every group names; they import no group |
//! | 1 | `phys/` | frames, memory nodes, free lists, buddy allocator, pageblocks, per-CPU lists, fallback, the reservation table, fragmentation metrics |
//! | 2 | `pressure/` | page cache and LRU, slab, allocation with reclaim (watermarks, kswapd), the vocabulary of kernel allocations, compaction and migration between nodes |
//! | 3 | `space/` | VMAs, page tables, PTEs, page contents, the mechanism context, unmapping |
//! | 4 | `huge/` | collapse, split, zero-subpage de-duplication, superpage reservations |
//! | 5 | `kernel/` | the facade: [`Kernel`], the whole-kernel operations (faults, `mmap`, migration, `move_pages` and `exchange_pages`, compaction's scanners, `kmalloc`, the invariant checker) and the entry points to the groups below |
//!
//! Reclaim sits below address spaces because the model has no file mappings and no swap:
//! reclaim never touches a page table, and every mechanism on an address space allocates
//! through it. Each group's `mod.rs` says what it may import. Test code (`#[cfg(test)]`
//! modules, `testutil.rs`) may build a whole [`Kernel`] in any group. This file only
//! declares the groups and re-exports the public API at its paths (`hugemm_mm::buddy`,
//! `hugemm_mm::Kernel`, ...), which the layout does not change.

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

// The public modules at their paths; the items below are listed as re-exports of them
// (`doc(no_inline)`), as when the modules sat at the root.
pub use phys::{buddy, fallback, frame, kpageflags, metrics, node, pageblock, pcp};
pub use pressure::{compaction, kmem, movepages, pagecache, reclaim, zones};
pub use space::{content, pte, vma};

pub use api::{
    AccessedBits, BootOrder, CollapseOutcome, FaultInfo, FaultKind, FaultOutcome, FaultRequest,
    HugeAdvice, KswapdMode, Madvise, PerCpuSizes, RegionInfo, RegionState, ReservationCensus,
    ReservationInfo, Shrinker, TlbFlush, Touch, Translation, WatermarkCheck,
};
#[doc(no_inline)]
pub use buddy::{AllocRequest, Block, PhysMem, PrezeroScope, ZeroedFirst};
#[doc(no_inline)]
pub use compaction::{CompactMode, CompactOutcome, CompactRequest, Deferral};
#[doc(no_inline)]
pub use content::WriteContent;
pub use costs::{FragCosts, MmCosts};
pub use error::{CollapseError, MmError, Result};
#[doc(no_inline)]
pub use fallback::{
    Aaf, Apbs, FallbackChoice, FallbackPolicy, FallbackRules, FreeAreaView, KernelLayout,
    LinuxDefault, Opbs, PageblockCensus, Placement, Rpbs, UnknownPolicy,
};
#[doc(no_inline)]
pub use frame::{Frame, FrameState, OwnerKind, BYTES_PER_FRAME};
pub use huge::dedup::{ScanStyle, ZeroScan, ZeroScanOutcome};
pub use kernel::migrate::EvacuateOutcome;
pub use kernel::pressure::DirectReclaim4_1;
pub use kernel::{Kernel, MemConfig};
#[doc(no_inline)]
pub use kmem::{KmemCache, KmemHandle, KmemKind};
#[doc(no_inline)]
pub use metrics::{FragMetrics, PageblockCounts};
#[doc(no_inline)]
pub use movepages::{
    Mechanism, MigrateOutcome, MigrationCosts, NodeUse, PageScan, ThpMigration, TierStats,
};
#[doc(no_inline)]
pub use node::{NodeId, NodePref};
#[doc(no_inline)]
pub use pageblock::MigrateType;
#[doc(no_inline)]
pub use pagecache::{FileId, FileRead};
#[doc(no_inline)]
pub use pcp::{PcpConfig, PcpDrain};
pub use phys::boot::{BootKernelMemory, BootPageblocks};
#[doc(no_inline)]
pub use pte::Pte;
#[doc(no_inline)]
pub use reclaim::{ReclaimOutcome, Watermarks, WATERMARK_SCALE_FACTOR};
pub use stats::{FallbackEventCount, FallbackStats, FaultCounts, KernelStats};
#[doc(no_inline)]
pub use vma::Vma;
#[doc(no_inline)]
pub use zones::{KswapdNext, Zones, KSWAPD_NAP};
