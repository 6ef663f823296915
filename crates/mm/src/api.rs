//! The plain data types of the kernel's public interface (docs/design.md,
//! hugemm-mm): advice, touch results, fault outcomes, region observations, TLB flushes,
//! file ids and migrate types.
//!
//! Owns vocabulary only; it must not hold state or behaviour beyond trivial accessors. A
//! shared leaf (see `lib.rs`): every group may import it, and it imports no group.

use hugemm_hw::{Nanos, PageSize, Pfn, Pid, VirtAddr};
use serde::{Deserialize, Serialize};

/// Huge-page advice of a VMA (`VM_HUGEPAGE` / `VM_NOHUGEPAGE`). The kernel model records
/// it for policies; its mechanisms do not enforce it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum HugeAdvice {
    /// No advice.
    #[default]
    None,
    /// `MADV_HUGEPAGE`.
    Hugepage,
    /// `MADV_NOHUGEPAGE`.
    NoHugepage,
}

/// A `madvise` request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Madvise {
    /// Set `VM_HUGEPAGE` on the range.
    Hugepage,
    /// Set `VM_NOHUGEPAGE` on the range.
    NoHugepage,
    /// `MADV_DONTNEED`: free the range's pages; the VMA stays.
    DontNeed,
}

/// What a memory reference found in the page table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Touch {
    /// Mapped: the physical byte address and the page size mapping it.
    Mapped {
        /// Physical byte address (frame * page size + offset).
        pa: u64,
        /// The size of the mapping.
        size: PageSize,
        /// Whether the entry's accessed bit is set after the touch. Under
        /// [`AccessedBits::Walk`] the touch leaves it as it was: a caller whose reference
        /// turns out to walk and finds it clear sets it with `Kernel::mark_accessed`.
        young: bool,
    },
    /// Inside a VMA but not mapped: a fault is needed.
    NotPresent,
    /// A write to a (huge) zero-page mapping: a copy-on-write fault is needed.
    WriteToZeroPage,
    /// Outside every VMA (or no such process).
    Segfault,
}

/// When the hardware model sets a page-table entry's accessed bit (`[kernel]
/// accessed_bits` in experiment files).
///
/// x86 sets it only when a page walk uses the entry (Intel SDM vol. 3A section 4.8; a TLB
/// entry is only ever cached from an entry whose accessed bit is set, section 4.10.2.3),
/// so a bit that software clears without a TLB flush stays clear for as long as the
/// translation stays cached (section 4.10.4.3). The dirty bit is set by every write
/// that finds it clear under either setting (see `space/pagetable.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AccessedBits {
    /// As x86 hardware does: only a reference whose translation is a page walk sets the
    /// bit (the default).
    #[default]
    Walk,
    /// Every reference sets the bit, TLB hits included: hugemm's behaviour before issue
    /// 20, kept to compare with. A bit cleared without a flush then comes back at the
    /// next reference, so scans count pages whose translations stayed cached.
    EveryReference,
}

impl AccessedBits {
    /// Every setting with its name in experiment files.
    pub const NAMED: [(&'static str, AccessedBits); 2] = [
        ("walk", AccessedBits::Walk),
        ("every-reference", AccessedBits::EveryReference),
    ];

    /// The setting's name in experiment files.
    pub fn name(self) -> &'static str {
        match self {
            AccessedBits::Walk => "walk",
            AccessedBits::EveryReference => "every-reference",
        }
    }
}

/// Which free memory a freshly booted kernel allocates first (`[kernel] boot_order` in
/// experiment files).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BootOrder {
    /// The lowest addresses: Linux 5.10 and later free boot memory to the tail of the
    /// free lists (`FPI_TO_TAIL`). The default.
    #[default]
    LowestFirst,
    /// The highest addresses: Linux before 5.10 (4.1 included) freed boot memory in
    /// ascending order to the head of the lists
    /// ([`crate::Kernel::queue_boot_memory_highest_first`]).
    HighestFirst,
}

impl BootOrder {
    /// Every setting with its name in experiment files.
    pub const NAMED: [(&'static str, BootOrder); 2] = [
        ("lowest-first", BootOrder::LowestFirst),
        ("highest-first", BootOrder::HighestFirst),
    ];

    /// The setting's name in experiment files.
    pub fn name(self) -> &'static str {
        match self {
            BootOrder::LowestFirst => "lowest-first",
            BootOrder::HighestFirst => "highest-first",
        }
    }
}

/// When kswapd does its work (`[kernel] kswapd` in experiment files).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KswapdMode {
    /// At once, inside the allocation that woke it (its time is kswapd's, not the
    /// caller's): free memory never lingers below the mark kswapd was woken at. The
    /// default, and the only mode without zones.
    #[default]
    Immediate,
    /// On its own thread, as Linux's: the wake marks it awake and the engine runs its
    /// reclaim as a daemon, a step at a time, while allocations go on
    /// ([`crate::Kernel::kswapd_step`]). Needs a machine of zones.
    Async,
}

impl KswapdMode {
    /// Every setting with its name in experiment files.
    pub const NAMED: [(&'static str, KswapdMode); 2] = [
        ("immediate", KswapdMode::Immediate),
        ("async", KswapdMode::Async),
    ];

    /// The setting's name in experiment files.
    pub fn name(self) -> &'static str {
        match self {
            KswapdMode::Immediate => "immediate",
            KswapdMode::Async => "async",
        }
    }
}

/// What the slab shrinker does to a reclaimable object it scans (`[kernel] shrinker` in
/// experiment files; `slab.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Shrinker {
    /// Frees it: an upper bound on slab reclaim. The default.
    #[default]
    #[serde(rename = "upper-bound")]
    UpperBound,
    /// Linux 4.1's dentry and inode LRUs: an object enters its cache's LRU referenced
    /// (`dput` sets `DCACHE_REFERENCED`, `iput_final` `I_REFERENCED` as it adds the
    /// inode), and a scan of a referenced object clears the flag and rotates it to the
    /// LRU's tail (`LRU_ROTATE` in `dentry_lru_isolate` and `inode_lru_isolate`), costing
    /// the scan as a free would; scanned again, it is freed. Not modelled: a lookup that
    /// references an object again (the model's objects are not looked up), and an inode
    /// reaching its LRU only when its dentry is freed (the model's objects are not
    /// dentries and inodes one by one, only sizes of slab object per unit).
    #[serde(rename = "linux-4.1")]
    Linux4_1,
}

impl Shrinker {
    /// Every setting with its name in experiment files.
    pub const NAMED: [(&'static str, Shrinker); 2] = [
        ("upper-bound", Shrinker::UpperBound),
        ("linux-4.1", Shrinker::Linux4_1),
    ];

    /// The setting's name in experiment files.
    pub fn name(self) -> &'static str {
        match self {
            Shrinker::UpperBound => "upper-bound",
            Shrinker::Linux4_1 => "linux-4.1",
        }
    }
}

/// Which Linux the per-CPU page lists' sizes follow (`[kernel] per_cpu_sizes` in
/// experiment files; `pcp.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PerCpuSizes {
    /// Linux 6.x: orders 0-3, `zone_batchsize` from up to 1 MiB, `high` from the low
    /// watermark ([`crate::PcpConfig::linux`]). The default.
    #[default]
    #[serde(rename = "linux-6")]
    Linux6,
    /// Linux 4.1: order 0 only, `zone_batchsize` from up to 512 KiB, `high` six batches
    /// ([`crate::PcpConfig::linux_4_1`]).
    #[serde(rename = "linux-4.1")]
    Linux4_1,
}

impl PerCpuSizes {
    /// Every setting with its name in experiment files.
    pub const NAMED: [(&'static str, PerCpuSizes); 2] = [
        ("linux-6", PerCpuSizes::Linux6),
        ("linux-4.1", PerCpuSizes::Linux4_1),
    ];

    /// The setting's name in experiment files.
    pub fn name(self) -> &'static str {
        match self {
            PerCpuSizes::Linux6 => "linux-6",
            PerCpuSizes::Linux4_1 => "linux-4.1",
        }
    }
}

/// Which watermark check high-order allocations get, and what follows when it fails
/// (`[kernel] watermark_check` in experiment files).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum WatermarkCheck {
    /// The model's own: watermarks at order 0 only; an allocation takes any free block,
    /// and kswapd wakes after one that leaves free frames below `low`
    /// (`pressure/reclaim.rs`). The default: every result published before the model had
    /// the other was made so.
    #[default]
    #[serde(rename = "order-0")]
    Order0,
    /// Linux 4.1's, where the engine asks for it (stress-highalloc's requests): the
    /// per-order check ([`crate::reclaim::zone_watermark_ok_4_1`]) at `low`, and on
    /// failure the slow path of `__alloc_pages_slowpath` (kswapd woken at the order,
    /// [`crate::Kernel::kswapd_4_1`]; the check again at `min`; direct compaction, which
    /// then stops only once the check at `low` passes; direct reclaim and retries).
    /// Direct compaction follows 4.1's `compaction_suitable` and `compact_finished`.
    #[serde(rename = "linux-4.1")]
    Linux4_1,
}

impl WatermarkCheck {
    /// Every setting with its name in experiment files.
    pub const NAMED: [(&'static str, WatermarkCheck); 2] = [
        ("order-0", WatermarkCheck::Order0),
        ("linux-4.1", WatermarkCheck::Linux4_1),
    ];

    /// The setting's name in experiment files.
    pub fn name(self) -> &'static str {
        match self {
            WatermarkCheck::Order0 => "order-0",
            WatermarkCheck::Linux4_1 => "linux-4.1",
        }
    }
}

/// What the fault path's policy question needs to know about a faulting address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultInfo {
    /// The VMA's advice.
    pub advice: HugeAdvice,
    /// The 2 MB region lies entirely inside the VMA.
    pub huge_fits: bool,
    /// Nothing maps the region yet.
    pub region_empty: bool,
    /// The region maps the huge zero page.
    pub region_huge_zero: bool,
    /// The region has a superpage reservation (FreeBSD): its 4 KB faults take their
    /// frames from it whatever the policy answers.
    pub region_reserved: bool,
}

/// What a fault asks of the kernel, built fluently:
/// `FaultRequest::new(PageSize::Base).reserve(true)`.
///
/// `size` is the page size wanted (as [`Kernel::fault`](crate::Kernel::fault) takes it);
/// `reserve` asks a 4 KB fault in an empty region lying wholly inside its VMA to reserve
/// an order-9 block for the region (FreeBSD's `vm_reserv_alloc_page`); `promote` lets a
/// fault that maps the last base page of a reservation promote the region in place
/// (FreeBSD's `pmap_promote_pde`, `vm.pmap.pg_ps_enabled`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultRequest {
    /// The page size wanted.
    pub size: PageSize,
    /// Reserve an order-9 block at a 4 KB fault where one can be reserved.
    pub reserve: bool,
    /// Promote a reservation in place once all its base pages are mapped.
    pub promote: bool,
    /// A 2 MB read fault maps the huge zero page (`transparent_hugepage/use_zero_page`,
    /// default 1); when false it allocates a huge page as a write would, zeroed and
    /// unwritten.
    pub huge_zero_page: bool,
}

impl FaultRequest {
    /// A fault wanting `size`: no new reservation, promotion of full ones allowed.
    pub fn new(size: PageSize) -> FaultRequest {
        FaultRequest {
            size,
            reserve: false,
            promote: true,
            huge_zero_page: true,
        }
    }

    /// Set whether to reserve.
    pub fn reserve(mut self, yes: bool) -> FaultRequest {
        self.reserve = yes;
        self
    }

    /// Set whether a full reservation is promoted in place.
    pub fn promote(mut self, yes: bool) -> FaultRequest {
        self.promote = yes;
        self
    }

    /// Set whether a 2 MB read fault maps the huge zero page.
    pub fn huge_zero_page(mut self, yes: bool) -> FaultRequest {
        self.huge_zero_page = yes;
        self
    }
}

/// A superpage reservation as observers see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReservationInfo {
    /// First frame of the reserved order-9 block.
    pub base: Pfn,
    /// Base pages of the region mapped from it.
    pub populated: u32,
}

/// All reservations now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ReservationCensus {
    /// Live reservations.
    pub live: u64,
    /// Of those, fully populated (not promoted: promotion was off).
    pub full: u64,
    /// Reserved frames no page maps: allocated for the buddy allocator, unused.
    pub unused_frames: u64,
}

/// The kind of fault that was served.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FaultKind {
    /// A write fault served with a new 4 KB page (also reported for faults that mapped
    /// nothing: outside any VMA, or already mapped; those are counted apart in
    /// [`FaultCounts`](crate::FaultCounts)).
    Base,
    /// A write fault served with a new 2 MB page.
    Huge,
    /// A read fault served with the shared zero page.
    ZeroPage,
    /// A read fault served with the huge zero page.
    HugeZeroPage,
    /// A write to the zero page, served with a new 4 KB page.
    CowZeroPage,
    /// Wanted 2 MB, no order-9 block: served with 4 KB.
    HugeFallback,
}

/// The result of a fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultOutcome {
    /// What was done.
    pub kind: FaultKind,
    /// The size of the new mapping (`Huge` also when a 4 KB fault completed a
    /// reservation and promoted it in place).
    pub size: PageSize,
    /// Time charged to the faulting process: the trap and page-table work, plus
    /// `alloc`, plus `zeroing`.
    pub cost: Nanos,
    /// Of `cost`, allocating frames (buddy allocations and direct reclaim).
    pub alloc: Nanos,
    /// Of `cost`, clearing frames.
    pub zeroing: Nanos,
    /// No frame could be allocated: nothing was mapped.
    pub oom: bool,
}

/// The state of a 2 MB region.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RegionState {
    /// Nothing mapped.
    Unmapped,
    /// A table of 4 KB PTEs.
    Table,
    /// A huge page.
    Huge,
    /// The huge zero page.
    HugeZero,
}

/// An observation of one 2 MB region, in base pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegionInfo {
    /// How the region is mapped.
    pub state: RegionState,
    /// Present base pages (zero-page ones included; 512 for huge mappings).
    pub present: u32,
    /// Base pages mapping the zero page (512 for the huge zero page).
    pub zero: u32,
    /// Base pages whose accessed bit is set (all 512 when a huge entry's is).
    pub accessed: u32,
    /// Base pages whose dirty bit is set (all 512 when a huge entry's is).
    pub dirty: u32,
}

/// The result of a collapse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CollapseOutcome {
    /// Time charged to the caller (khugepaged or the `MADV_COLLAPSE` caller).
    pub cost: Nanos,
    /// Base pages copied into the huge page.
    pub copied: u32,
    /// Base pages filled with zeros.
    pub zero_filled: u32,
}

/// A TLB shootdown a mechanism needs: invalidate `[start, end)` of `pid` on every core.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct TlbFlush {
    /// The address space.
    pub pid: Pid,
    /// First address.
    pub start: VirtAddr,
    /// First address past the range.
    pub end: VirtAddr,
}

/// A side-effect-free translation (for observers and tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Translation {
    /// Physical byte address.
    pub pa: u64,
    /// Size of the mapping.
    pub size: PageSize,
    /// Maps the (huge) zero page, read-only.
    pub zero_page: bool,
}

/// A file, named by number.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct FileId(pub u32);

/// The mobility class of an allocation and of a pageblock (Linux `enum migratetype`, the
/// three page-allocator types; same numbering), and Linux 4.1's reserve.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[repr(u8)]
pub enum MigrateType {
    /// Kernel allocations that can never move (`MIGRATE_UNMOVABLE`).
    Unmovable = 0,
    /// User pages that compaction can migrate (`MIGRATE_MOVABLE`).
    Movable = 1,
    /// Kernel caches that can be reclaimed (`MIGRATE_RECLAIMABLE`).
    Reclaimable = 2,
    /// Linux 4.1's `MIGRATE_RESERVE` (removed in 4.4): a pageblock type and free lists,
    /// never a request's type. A few pageblocks at the start of the zone whose free
    /// pages any request takes only when its own lists and its fallbacks are empty
    /// (`PhysMem::set_migrate_reserve`). Absent unless a kernel keeps it.
    Reserve = 3,
}

impl MigrateType {
    /// Number of migrate types, the reserve included (per-type arrays).
    pub const COUNT: usize = 4;
    /// All migrate types, in Linux's numbering, the reserve last.
    pub const ALL: [MigrateType; 4] = [
        MigrateType::Unmovable,
        MigrateType::Movable,
        MigrateType::Reclaimable,
        MigrateType::Reserve,
    ];
    /// The types requests have (`MIGRATE_PCPTYPES`: the three with per-CPU lists).
    pub const REQUESTS: [MigrateType; 3] = [
        MigrateType::Unmovable,
        MigrateType::Movable,
        MigrateType::Reclaimable,
    ];

    /// Dense index 0..4 for per-type arrays.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Short label for reports.
    pub const fn label(self) -> &'static str {
        match self {
            MigrateType::Unmovable => "unmovable",
            MigrateType::Movable => "movable",
            MigrateType::Reclaimable => "reclaimable",
            MigrateType::Reserve => "reserve",
        }
    }

    /// Decode two bits of frame metadata.
    pub(crate) const fn from_bits(bits: u32) -> MigrateType {
        match bits & 3 {
            0 => MigrateType::Unmovable,
            1 => MigrateType::Movable,
            2 => MigrateType::Reclaimable,
            _ => MigrateType::Reserve,
        }
    }
}
