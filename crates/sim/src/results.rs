//! What a run reports: `summary.json` (per process and for the system) and the rows of
//! `timeseries.csv`. The schema is documented in `docs/output.md`; change both together.

use hugemm_mm::{
    FallbackStats, FragMetrics, KernelStats, MigrateOutcome, NodeUse, ReservationCensus,
};
use serde::Serialize;
use std::collections::BTreeMap;

/// Results of one process.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct ProcessSummary {
    /// Name from the experiment file.
    pub name: String,
    /// Model pid.
    pub pid: u32,
    /// Start time (ns).
    pub start_ns: u64,
    /// Exit time (ns); the run's end if it did not finish.
    pub end_ns: u64,
    /// `end_ns - start_ns`.
    pub runtime_ns: u64,
    /// Whether it ran all its phases (false: time limit, OOM kill, killed by the script
    /// driving the run, or workload error).
    pub finished: bool,
    /// Killed by the script driving the run (`Engine::kill`: a reproduction's `killall`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub killed: bool,
    /// Memory references made.
    pub references: u64,
    /// Of which simulated one by one through the translation model (all of them in exact
    /// mode; the windows' in sampled mode).
    pub references_exact: u64,
    /// Faults that mapped a 4 KB page (including zero-page CoW and huge fallback).
    pub faults_4k: u64,
    /// Faults that mapped a 2 MB page.
    pub faults_2m: u64,
    /// Read faults that mapped the shared zero page (4 KB or huge).
    pub faults_zero_page: u64,
    /// Faults where a huge page was wanted and a base page was mapped.
    pub faults_huge_fallback: u64,
    /// Regions of this process promoted to huge pages by the policy's daemons
    /// (khugepaged's collapses, HawkEye's and Ingens' promotions).
    pub promotions: u64,
    /// Time spent in fault handling (ns): trap and page-table work, allocation, zeroing.
    pub fault_time_ns: u64,
    /// Faults taken (every fault the process took, zero-page and copy-on-write ones
    /// included).
    pub faults: u64,
    /// Of `fault_time_ns`, allocating frames: buddy allocations, direct reclaim of page
    /// cache, the policy's direct reclaim (bloat recovery) and direct compaction (ns).
    pub fault_alloc_ns: u64,
    /// Of `fault_time_ns`, clearing frames (ns).
    pub fault_zeroing_ns: u64,
    /// Of `fault_time_ns`, the rest: trap, page-table writes, flushes (ns).
    pub fault_trap_ns: u64,
    /// Mean latency of a fault (ns).
    pub fault_mean_ns: f64,
    /// 99th percentile of fault latency (ns; two significant digits).
    pub fault_p99_ns: u64,
    /// User-mode cycles (references and compute; fault time excluded, as PMU counts in
    /// user mode).
    pub cycles: u64,
    /// Cycles with a page walk in progress (loads + stores).
    pub walk_cycles: u64,
    /// `walk_cycles / cycles`, 0..1 (HawkEye Table 4's formula).
    pub mmu_overhead: f64,
    /// References that hit the L1 TLB.
    pub l1_tlb_hits: u64,
    /// References that hit the STLB.
    pub stlb_hits: u64,
    /// References that walked the page table.
    pub walks: u64,
    /// Huge pages mapped when it exited (or at the end of the run).
    pub huge_pages_end: u64,
    /// Resident memory when it exited (or at the end of the run).
    pub rss_bytes_end: u64,
    /// Of `rss_bytes_end`, base pages the process had written (its useful memory).
    pub useful_bytes_end: u64,
    /// `rss_bytes_end - useful_bytes_end`: resident pages it never wrote (bloat).
    pub bloat_bytes_end: u64,
    /// Killed because memory ran out.
    pub oom: bool,
    /// When it was killed for want of memory (ns), if it was; its `rss_bytes_end`,
    /// `useful_bytes_end` and `bloat_bytes_end` are from that moment.
    pub oom_time_ns: Option<u64>,
    /// A workload error that stopped it, if any.
    pub error: Option<String>,
    /// Time it waited on pages a tiering policy had in flight (machines of several nodes).
    #[serde(skip_serializing_if = "is_zero")]
    pub migration_stall_ns: u64,
    /// Time TLB-miss sampling (SysMon-H's monitor) cost it.
    #[serde(skip_serializing_if = "is_zero")]
    pub tlb_sampling_ns: u64,
    /// Its pages on each node at the end (machines of several nodes).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<NodeUse>,
    /// The phases of a key-value server, in order (empty for other processes).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kv: Vec<KvPhaseResult>,
}

/// What one phase of a key-value server did.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct KvPhaseResult {
    /// `insert`, `delete` or `get`.
    pub op: String,
    /// Requests served.
    pub requests: u64,
    /// When the phase started and ended (ns).
    pub start_ns: u64,
    /// End of the phase (ns).
    pub end_ns: u64,
    /// `requests` over the phase's simulated time.
    pub requests_per_s: f64,
    /// Live keys at the end.
    pub keys_end: u64,
    /// Heap bytes in use at the end (slabs and large extents, like Redis's
    /// `used_memory`).
    pub heap_bytes_end: u64,
    /// Resident bytes at the end.
    pub rss_bytes_end: u64,
    /// Useful (written) bytes at the end.
    pub useful_bytes_end: u64,
}

/// Results of the whole system.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct SystemSummary {
    /// Machine profile name.
    pub profile: String,
    /// Policy name.
    pub policy: String,
    /// `exact` or `sampled`.
    pub mode: String,
    /// Seed used.
    pub seed: u64,
    /// Simulated time at the end (ns).
    pub sim_time_ns: u64,
    /// Physical frames.
    pub frames_total: u64,
    /// Free frames at the end.
    pub frames_free_end: u64,
    /// Successful promotions (collapses).
    pub collapses: u64,
    /// Collapses that failed for want of a huge block.
    pub collapse_failures: u64,
    /// Huge mappings split.
    pub splits: u64,
    /// Fully populated superpage reservations promoted in place (no copy; not in
    /// `collapses`).
    pub promotions_in_place: u64,
    /// Superpage reservations made at faults.
    pub reservations_made: u64,
    /// Reservations broken before promotion (pressure, unmap, exit...).
    pub reservations_broken: u64,
    /// Unused reserved frames those breaks returned to the buddy allocator.
    pub reserv_frames_returned: u64,
    /// Reservations live at the end, full ones and their unused frames.
    pub reservations_end: ReservationCensus,
    /// Out-of-memory events.
    pub oom_events: u64,
    /// CPU time of each kernel daemon (ns).
    pub daemon_cpu_ns: BTreeMap<String, u64>,
    /// stress-highalloc attempts, in order.
    pub highalloc: Vec<HighAllocResult>,
    /// The pageblock fallback policy.
    pub fallback_policy: String,
    /// Kernel counters: faults, reclaim, compaction, migration, page cache, kernel memory.
    pub kernel: KernelStats,
    /// Pageblock fallback counters.
    pub fallback: FallbackStats,
    /// Fragmentation at the end: free blocks by order, Fu(j), FMFI, pageblocks by type,
    /// tainted pageblocks, degree-of-pollution histogram.
    pub fragmentation_end: FragMetrics,
    /// Page-cache pages at the end.
    pub page_cache_pages_end: u64,
    /// Kernel-memory frees the model refused (always 0 unless the model has a bug).
    pub kmem_free_errors: u64,
    /// Pre-zeroing: pages the daemon cleared (including, under stress, pages cleared
    /// again).
    pub prezero_pages: u64,
    /// Pre-zeroing: DRAM traffic of its stores, in bytes (twice the bytes for caching
    /// stores: each line is read for ownership, then written back).
    pub prezero_traffic_bytes: u64,
    /// Free frames in zeroed blocks at the end.
    pub zeroed_free_frames_end: u64,
    /// CPU time of the policy's reclaim under kswapd (Linux's THP shrinker), ns.
    pub policy_kswapd_reclaim_ns: u64,
    /// Frames that reclaim freed.
    pub policy_kswapd_reclaim_frames: u64,
    /// Memory nodes and migrations between them (machines of several nodes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tiers: Option<TierSummary>,
    /// The zones of a node split into zones (`[machine] zones`), lowest first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub zones: Vec<ZoneSummary>,
}

/// One stress-highalloc attempt ([`hugemm_workload::Phase::HighAlloc`]).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct HighAllocResult {
    /// The process that made it.
    pub process: String,
    /// Its label.
    pub label: String,
    /// When it started (ns).
    pub time_ns: u64,
    /// From its start to its last request's return (ns): its requests' own time, and
    /// when paced the intervals between them.
    pub duration_ns: u64,
    /// Huge pages requested.
    pub requested: u64,
    /// Huge pages obtained.
    pub allocated: u64,
    /// `allocated / requested`.
    pub success_rate: f64,
    /// Time spent in direct compaction during the attempt (ns).
    pub compaction_time_ns: u64,
    /// The first request that failed (1 for the first request), if one did.
    pub first_failure: Option<u64>,
    /// Pages freed by direct reclaim during the attempt, by its requests and by every
    /// other process's allocations meanwhile (`KernelStats::pgsteal_direct`).
    pub reclaimed_pages: u64,
    /// Huge pages of `allocated` taken when Linux 4.1's per-order watermark check at
    /// `low` would have failed (`KernelStats::order_watermark_misses`), by its requests
    /// and every other allocation meanwhile.
    pub order_watermark_misses: u64,
}

/// What stopped a run before every process had ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The simulated clock reached the experiment's time limit (`sim.time_limit_s`).
    TimeLimit,
    /// The operator interrupted it (SIGINT, Ctrl-C).
    Interrupt,
    /// It was asked to terminate (SIGTERM).
    Terminate,
}

impl StopReason {
    /// The reason's code in a [`StopFlag`](crate::StopFlag) (never 0, which means "run on").
    pub const fn code(self) -> usize {
        match self {
            StopReason::TimeLimit => 1,
            StopReason::Interrupt => 2,
            StopReason::Terminate => 3,
        }
    }

    /// The reason a stop flag's code stands for (`None` for 0, "run on", or a code no
    /// reason has).
    pub const fn from_code(code: usize) -> Option<StopReason> {
        match code {
            1 => Some(StopReason::TimeLimit),
            2 => Some(StopReason::Interrupt),
            3 => Some(StopReason::Terminate),
            _ => None,
        }
    }
}

/// `summary.json`.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Summary {
    /// Schema version of this file.
    pub schema: u32,
    /// Whether the run reached its natural end: every process ran to its end (finished,
    /// OOM-killed or failed). False when it was stopped first; see `stopped_by`.
    pub complete: bool,
    /// What stopped the run before its end, if anything did.
    pub stopped_by: Option<StopReason>,
    /// Per process, in experiment order.
    pub processes: Vec<ProcessSummary>,
    /// The system.
    pub system: SystemSummary,
}

/// One row of `timeseries.csv`: a process at a sample time, or the system (`process` =
/// `system`, process columns empty). The fields are in the file's column order (serde
/// serialises them in declaration order); ratios are written with fixed decimals (six for
/// the MMU overhead, four for Fu(9)) so the file does not depend on float printing.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct TimeseriesRow {
    /// Sample time (ns).
    pub time_ns: u64,
    /// Process name, or `system`.
    pub process: String,
    /// Model pid (empty for system).
    pub pid: Option<u32>,
    /// References so far.
    pub references: Option<u64>,
    /// MMU overhead over the last interval.
    #[serde(serialize_with = "six_decimals")]
    pub mmu_overhead: Option<f64>,
    /// Huge pages mapped.
    pub huge_pages: Option<u64>,
    /// Resident bytes.
    pub rss_bytes: Option<u64>,
    /// 4 KB faults so far.
    pub faults_4k: Option<u64>,
    /// 2 MB faults so far.
    pub faults_2m: Option<u64>,
    /// Promotions of this process so far (process rows).
    pub promotions: Option<u64>,
    /// Free frames (system row).
    pub frames_free: Option<u64>,
    /// Collapses so far (system row).
    pub collapses: Option<u64>,
    /// Splits so far (system row).
    pub splits: Option<u64>,
    /// Page-cache pages (system row).
    pub page_cache_pages: Option<u64>,
    /// Fu(9), Ingens' FMFI (system row).
    #[serde(serialize_with = "four_decimals")]
    pub fmfi: Option<f64>,
    /// Movable pageblocks holding kernel frames (system row).
    pub tainted_pageblocks: Option<u64>,
    /// Unmovable pageblocks (system row).
    pub pageblocks_unmovable: Option<u64>,
    /// Reclaimable pageblocks (system row).
    pub pageblocks_reclaimable: Option<u64>,
    /// Pages migrated so far by compaction and evacuation (system row).
    pub pages_migrated: Option<u64>,
    /// Of those, written (useful) bytes.
    pub useful_bytes: Option<u64>,
    /// Faults so far (process rows), for fault rates.
    pub faults: Option<u64>,
    /// Free frames in zeroed blocks (system row).
    pub zeroed_free_frames: Option<u64>,
    /// Zero-filled base pages recovered from huge pages so far (system row).
    pub zero_subpages_recovered: Option<u64>,
    /// The node's memory bandwidth in use since the previous sample, GB/s (`node:` rows).
    #[serde(serialize_with = "four_decimals")]
    pub bandwidth_gbps: Option<f64>,
}

/// A ratio with six decimals (empty when absent).
fn six_decimals<S: serde::Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(x) => s.serialize_str(&format!("{x:.6}")),
        None => s.serialize_none(),
    }
}

/// A ratio with four decimals (empty when absent).
fn four_decimals<S: serde::Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(x) => s.serialize_str(&format!("{x:.4}")),
        None => s.serialize_none(),
    }
}

/// Memory nodes and the migrations between them.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct TierSummary {
    /// The tiering policy (`none` without one).
    pub policy: String,
    /// Each node: its name, bytes and free bytes at the end.
    pub nodes: Vec<NodeSummary>,
    /// Every migration call added up: pages and huge pages moved, splits, failures,
    /// bytes, and time by part.
    pub migrated: MigrateOutcome,
    /// Migration calls made.
    pub calls: u64,
}

/// One node at the end of a run.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct NodeSummary {
    /// Its name in the profile.
    pub name: String,
    /// Its memory.
    pub bytes: u64,
    /// Its free memory at the end.
    pub free_bytes_end: u64,
    /// Memory traffic it served over the run: data misses, migration and zeroing (see
    /// the shared-bandwidth model).
    pub traffic_bytes: u64,
    /// The highest share of its bandwidth in use over any 1 ms window.
    pub peak_utilisation: f64,
}

/// One zone at the end of a run (frames of the base page size).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct ZoneSummary {
    /// Linux's name for it (`DMA`, `DMA32`, `Normal`).
    pub name: String,
    /// Its memory.
    pub bytes: u64,
    /// Its `min`, `low` and `high` watermarks, frames.
    pub watermarks: hugemm_mm::Watermarks,
    /// Frames it keeps free against requests of each classzone (`lowmem_reserve`,
    /// lowest classzone first).
    pub lowmem_reserve: Vec<u64>,
    /// Its free frames at the end (the buddy allocator's, per-CPU lists not counted).
    pub free_frames_end: u64,
    /// Page-cache pages on its LRU lists at the end.
    pub page_cache_pages_end: u64,
    /// Page-cache pages reclaim scanned on its LRU lists over the run (kswapd and
    /// direct: `/proc/vmstat`'s `pgscan_kswapd_<zone>` + `pgscan_direct_<zone>`).
    pub pgscan: u64,
    /// Pageblock fallbacks taken from its free lists over the run.
    pub fallbacks: u64,
    /// Its tainted pageblocks at the end (Movable pageblocks holding kernel frames).
    pub tainted_pageblocks_end: u64,
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}

/// What one window of TLB-miss sampling counted (`tlb_misses.csv`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TlbWindow {
    /// When the window ended (ns).
    pub time_ns: u64,
    /// The sampled process.
    pub process: String,
    /// Its model pid.
    pub pid: u32,
    /// Samples taken.
    pub samples: f64,
    /// Page walks they stand for.
    pub walks: f64,
    /// Sampled misses per 2 MB region that had any, `(region start, misses)`, in
    /// address order.
    pub regions: Vec<(u64, f64)>,
    /// What the monitor's second phase found after this window, once it is done.
    pub phase_two: Option<PhaseTwo>,
}

/// SysMon-H's second phase after one window: accessed-bit checks of the huge pages with
/// few sampled misses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PhaseTwo {
    /// Huge pages checked (those below `cold_misses`).
    pub cold: u64,
    /// Of them, those found accessed in at least `hot_checks` checks ("very hot").
    pub very_hot: u64,
}

/// Everything a run produced.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunResult {
    /// The summary.
    pub summary: Summary,
    /// The time series, in time order (system row after the process rows of each time).
    pub timeseries: Vec<TimeseriesRow>,
    /// Every window of TLB-miss sampling, in time order (empty unless a policy sampled).
    pub tlb_windows: Vec<TlbWindow>,
}
