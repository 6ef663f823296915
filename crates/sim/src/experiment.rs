//! The typed, validated description of one run: machine, memory, policy, processes and
//! simulation settings. Built by the configuration layer (or by code, in tests and
//! `hugemm demo`); the engine trusts it.

use crate::compaction::KcompactdConfig;
use crate::prezero::PrezeroConfig;
use hugemm_hw::{Geometry, MachineProfile, Nanos};
use hugemm_mm::{AccessedBits, CompactMode};
use hugemm_policy::{PolicyConfig, TieringConfig};
use hugemm_workload::ProcessSpec;
use serde::Serialize;

/// How references are priced.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum Mode {
    /// Every reference goes through the translation model.
    Exact,
    /// Windows of references are simulated exactly; the rest are skipped and their effects
    /// applied per pattern.
    Sampled(SampledConfig),
}

/// Sampled-mode settings. The defaults simulate about 7,000 of each process's references
/// per simulated second (more while windows have not settled), which keeps a long run of
/// several large processes near a hundred simulated seconds per wall second; the matrix in
/// docs/sampling.md shows what they cost in accuracy.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SampledConfig {
    /// References simulated exactly to re-warm TLBs and caches before each window; they
    /// count, but their cost does not enter the window's average.
    pub warmup_refs: u64,
    /// References simulated exactly and measured in each window.
    pub window_refs: u64,
    /// Simulated time from the start of one window to the start of the next.
    pub period: Nanos,
    /// A window goes on past `window_refs` until it has seen this many page walks (or 20
    /// times `window_refs`), so patterns that walk rarely are measured over enough walks.
    pub window_walks: u64,
    /// Least warm-up references at the start of each access phase, before its first
    /// window: caches left cold by a previous phase converge over many references, and
    /// skips do not warm them. The warm-up goes on, doubling, until it has converged
    /// (`sampling.rs`).
    pub phase_warmup_refs: u64,
    /// Most warm-up references at the start of an access phase, converged or not (at
    /// least `phase_warmup_refs`; equal to it, the warm-up is a fixed count).
    pub phase_warmup_max_refs: u64,
}

impl Default for SampledConfig {
    fn default() -> Self {
        SampledConfig {
            warmup_refs: 2_000,
            window_refs: 5_000,
            period: Nanos::from_millis(1000),
            window_walks: 1_000,
            phase_warmup_refs: 100_000,
            phase_warmup_max_refs: 1_600_000,
        }
    }
}

/// One run.
#[derive(Clone, Debug, Serialize)]
pub struct Experiment {
    /// The machine profile.
    pub profile: MachineProfile,
    /// Cores used (at most the profile's).
    pub cores: u32,
    /// Physical memory in bytes.
    pub memory_bytes: u64,
    /// Memory of each node (tier) in bytes, node 0 first, adding up to `memory_bytes`;
    /// empty: one node of `memory_bytes` (the profile's `tiers` then go unused).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_bytes: Vec<u64>,
    /// Memory of each zone of the one node, lowest addresses first (Linux's DMA, DMA32,
    /// Normal: `hugemm_mm::Kernel::with_zones`); empty: no zones, the node is one zone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zone_bytes: Vec<u64>,
    /// The node allocations try first (0 but for Nimble's "all remote" bound).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub home_node: u8,
    /// The tiering policy, if any (it runs beside `policy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tiering: Option<TieringConfig>,
    /// MMU geometry.
    pub geometry: Geometry,
    /// The policy.
    pub policy: PolicyConfig,
    /// The processes.
    pub processes: Vec<ProcessSpec>,
    /// Pricing mode.
    pub mode: Mode,
    /// Seed of every random choice.
    pub seed: u64,
    /// Interval between time-series samples.
    pub sample_interval: Nanos,
    /// Longest a core runs ahead of the slowest other busy core (`[sim] turn_us`; default
    /// [`SYNC`](crate::engine::SYNC)): how finely processes on different cores interleave
    /// their use of the kernel.
    pub turn: Nanos,
    /// Stop the run at this simulated time even if processes are still running.
    pub time_limit: Nanos,
    /// Core on which kernel daemons run (their CPU time delays the process there).
    pub daemon_core: u32,
    /// Kernel settings that are not the huge-page policy's.
    pub kernel: KernelConfig,
}

/// Kernel settings apart from the huge-page policy: pageblock fallback, background
/// compaction, and H-Policy's two allocator mechanisms.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KernelConfig {
    /// The pageblock fallback policy (`hugemm_mm::fallback::NAMES`): `default` (Linux up
    /// to 6.14), APSys'16's `opbs`, `apbs`, `aaf`, `rpbs`, `kml`, `kmu`, or `claim-first`
    /// (Linux 6.15 and later).
    pub fallback: String,
    /// Which Linux the fallback policies' common rules follow (`linux-4.13`, the
    /// default, up to 6.14; `linux-4.1`, APSys'16's kernel).
    pub fallback_rules: hugemm_mm::FallbackRules,
    /// kcompactd.
    pub kcompactd: KcompactdConfig,
    /// Keep Linux's per-CPU page lists, one set per core (`hugemm_mm::pcp`). Off by
    /// default: every result published before they existed was made without them.
    pub per_cpu_lists: bool,
    /// Which Linux the per-CPU lists' sizes follow, when they are kept (6.x's by
    /// default; 4.1's: order 0 only, batch 31 and high 186 on a 4 GiB zone).
    pub per_cpu_sizes: hugemm_mm::PerCpuSizes,
    /// `vm.watermark_boost_factor` (Linux 5.0+, where it defaults to 15000): after a
    /// fallback that fragments, kswapd reclaims up to `high` plus up to this many
    /// 1/10000 of `high` (`hugemm_mm`'s `pressure/reclaim.rs`). 0, the default here,
    /// turns boosting off, as in Linux before 5.0: every result published before the
    /// model had it was made so.
    pub watermark_boost_factor: u32,
    /// `vm.watermark_scale_factor` (Linux 4.6+, default 10): the gaps between the
    /// watermarks are the larger of `min / 4` and this many 1/10000 of memory. 0 gives
    /// Linux 4.1's gaps, `min / 4` and `min / 2` (`hugemm_mm`'s `pressure/reclaim.rs`).
    pub watermark_scale_factor: u32,
    /// Free a block to the tail of its list when the block that would merge with its
    /// parent is free (`__free_one_page`'s `buddy_merge_likely`, every Linux since
    /// 2.6.35). Off by default: every result published before the model had it was made
    /// with every block freed to the head.
    pub buddy_merge_likely: bool,
    /// Keep Linux 4.1's `MIGRATE_RESERVE` pageblocks (removed in 4.4): the `min`
    /// watermark rounded up to pageblocks, at most 2, at the start of memory, taken from
    /// only when a request's own lists and its fallbacks are empty
    /// (`hugemm_mm::PhysMem::set_migrate_reserve`). Off by default (Linux 4.4 and later).
    pub migrate_reserve: bool,
    /// Give every page-cache page a buffer head, a reclaimable slab object that lives and
    /// dies with its page (`hugemm_mm::Kernel::set_buffer_heads`). Off by default.
    pub buffer_heads: bool,
    /// Give every file read or written its inode and dentry, and its page-cache tree its
    /// nodes, as reclaimable slab objects that live as long as what holds them in Linux
    /// (`hugemm_mm::Kernel::set_vfs_objects`). Off by default.
    pub vfs_objects: bool,
    /// What the slab shrinker does to a reclaimable object it scans
    /// (`hugemm_mm::Shrinker`: frees it, by default, or rotates it once first as Linux
    /// 4.1's dentry and inode LRUs do).
    pub shrinker: hugemm_mm::Shrinker,
    /// Which free memory a freshly booted kernel allocates first: the lowest addresses
    /// (Linux 5.10+, the default) or the highest (Linux before 5.10, 4.1 included).
    pub boot_order: hugemm_mm::BootOrder,
    /// Kernel memory the booted kernel already holds: pageblocks typed Unmovable and
    /// Reclaimable with the free blocks measured in them (`[kernel.boot]`; none by
    /// default, every pageblock Movable and free).
    pub boot: hugemm_mm::BootKernelMemory,
    /// When kswapd does its work: at once inside the allocation that woke it (the
    /// default), or on its own thread, a step at a time as a daemon of the engine while
    /// allocations go on (`async`; needs a machine of zones: Linux 4.1's kswapd).
    pub kswapd: hugemm_mm::KswapdMode,
    /// The watermark check of stress-highalloc's requests and direct compaction's rules:
    /// the model's order-0 check (default) or Linux 4.1's per-order one with its slow
    /// path (`hugemm_mm::WatermarkCheck`).
    pub watermark_check: hugemm_mm::WatermarkCheck,
    /// `vm.min_free_kbytes`; `None` is Linux's default for the memory size
    /// (`calculate_min_free_kbytes`). A THP-enabled Linux raises it
    /// (`set_recommended_min_free_kbytes`: 66 MiB on this project's machines); the model
    /// does so only when told here.
    pub min_free_kbytes: Option<u64>,
    /// Clear pages at fault and collapse (every real kernel does; off is HawkEye Table
    /// 1's hypothetical kernel without page zeroing).
    pub clear_pages: bool,
    /// Asynchronous pre-zeroing of free memory (HawkEye section 3.1).
    pub prezero: PrezeroConfig,
    /// H-Policy's order-9 preservation in the buddy allocator (SysMon-H / H-Policy
    /// section 4, rule iii: `hugemm_mm`'s `phys/preserve.rs`). Off by default (Linux).
    pub preserve_huge_blocks: bool,
    /// How compaction chooses what to migrate: Linux's scanners (default) or H-Policy's
    /// hole-aware mode (rule iv: `hugemm_mm`'s `kernel/compaction_holes.rs`).
    pub compaction: CompactMode,
    /// When references set page-table accessed bits: only when they walk, as x86 does
    /// (default), or on every reference (hugemm before issue 20; `docs/dev/accessed-bits.md`).
    pub accessed_bits: AccessedBits,
}

impl Default for KernelConfig {
    fn default() -> Self {
        KernelConfig {
            fallback: "default".into(),
            fallback_rules: hugemm_mm::FallbackRules::default(),
            kcompactd: KcompactdConfig::default(),
            per_cpu_lists: false,
            per_cpu_sizes: hugemm_mm::PerCpuSizes::default(),
            watermark_boost_factor: 0,
            watermark_scale_factor: hugemm_mm::WATERMARK_SCALE_FACTOR,
            buddy_merge_likely: false,
            migrate_reserve: false,
            buffer_heads: false,
            vfs_objects: false,
            shrinker: hugemm_mm::Shrinker::default(),
            boot_order: hugemm_mm::BootOrder::default(),
            boot: hugemm_mm::BootKernelMemory::default(),
            kswapd: hugemm_mm::KswapdMode::default(),
            watermark_check: hugemm_mm::WatermarkCheck::default(),
            min_free_kbytes: None,
            clear_pages: true,
            prezero: PrezeroConfig::default(),
            preserve_huge_blocks: false,
            compaction: CompactMode::Linux,
            accessed_bits: AccessedBits::Walk,
        }
    }
}

fn is_zero(x: &u8) -> bool {
    *x == 0
}
