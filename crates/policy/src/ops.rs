//! The narrow interface policies see: observations of processes, regions, counters and
//! free memory, and the actions they may take.
//!
//! The model engine implements it over the kernel model; the live agent will implement it
//! over a running Linux host (`/proc`, DAMON, `process_madvise(MADV_COLLAPSE)`). Nothing
//! here may assume which one is underneath.

use hugemm_hw::{Nanos, Order, Picos, Pid, Pmu, VirtAddr};
use hugemm_mm::{
    CollapseError, CollapseOutcome, HugeAdvice, MmError, RegionInfo, ZeroScan, ZeroScanOutcome,
};

/// A 2 MB-aligned virtual region of a process that lies wholly inside one VMA.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegionRef {
    /// First address of the region.
    pub start: VirtAddr,
    /// The huge-page advice of the VMA holding it.
    pub advice: HugeAdvice,
}

/// System memory as a policy sees it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MemInfo {
    /// Frames of physical memory.
    pub frames_total: u64,
    /// Free frames.
    pub frames_free: u64,
    /// Free blocks of at least huge-page order (what a huge-page allocation can take
    /// without compaction).
    pub free_huge_blocks: u64,
    /// Free memory fragmentation index for the huge-page order (Ingens' FMFI, the
    /// unusable free space index Fu(9)): 0 when all free memory is in huge blocks, near 1
    /// when none is.
    pub fmfi: f64,
}

/// A PEBS-like sampler of a process's TLB misses (SysMon-H's monitor): in frequency
/// mode, as `perf` samples by default, it takes about `hz` samples a second of the
/// process's running time, each recording the data address of a load or store that
/// missed the TLBs and walked, and each costing the process `cost`.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct TlbSampling {
    /// Samples per second of the process's running time.
    pub hz: f64,
    /// What one sample costs the sampled process.
    pub cost: Nanos,
}

/// What a TLB-miss sampler counted for one process between its start and now.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TlbMisses {
    /// Sampled misses per 4 KB page that had any, `(page address, samples)`, in address
    /// order. Samples are expected counts (see the engine's sampler), so fractional.
    pub pages: Vec<(VirtAddr, f64)>,
    /// Samples taken, all pages together.
    pub samples: f64,
    /// Page walks the samples stand for.
    pub walks: f64,
    /// Time the sampling cost the process.
    pub overhead: Nanos,
}

/// What a policy can observe and do.
pub trait MemoryOps {
    /// Current simulated (or wall) time.
    fn now(&self) -> Nanos;
    /// Live processes, in the order they started.
    fn processes(&self) -> Vec<Pid>;
    /// Huge-page-sized regions of `pid` lying wholly inside a VMA, low to high address.
    fn regions(&self, pid: Pid) -> Vec<RegionRef>;
    /// The regions of `pid` mapped by huge pages (the huge zero page excluded), low to
    /// high address.
    fn huge_regions(&self, pid: Pid) -> Vec<VirtAddr>;
    /// The population and accessed/dirty counts of one region.
    fn region_info(&mut self, pid: Pid, region: VirtAddr) -> RegionInfo;
    /// Clear the accessed bits of one region without a TLB flush, as HawkEye's scanner
    /// and idle-page tracking do; returns how many were set (a huge entry counts 512).
    fn clear_accessed(&mut self, pid: Pid, region: VirtAddr) -> usize;
    /// Clear them as the kernel's reverse-map walk (`folio_referenced`) does on x86: the
    /// same for 4 KB entries, but a huge entry found set has its 2 MB range flushed from
    /// the TLBs, so a translation that stays cached sets the bit again at its next
    /// reference (`hugemm_mm::Kernel::clear_referenced`).
    fn clear_referenced(&mut self, pid: Pid, region: VirtAddr) -> usize;
    /// Promote one region to a huge page (khugepaged's collapse, MADV_COLLAPSE).
    fn collapse(&mut self, pid: Pid, region: VirtAddr) -> Result<CollapseOutcome, CollapseError>;
    /// Demote one huge mapping to base pages.
    fn split(&mut self, pid: Pid, region: VirtAddr) -> Result<Nanos, MmError>;
    /// Scan one huge page for zero-filled base pages and, if more than `scan.max_zero`
    /// are, split it and map them to the shared zero page, freeing their frames.
    fn dedup_zero_subpages(
        &mut self,
        pid: Pid,
        region: VirtAddr,
        scan: ZeroScan,
    ) -> Result<ZeroScanOutcome, MmError>;
    /// The performance counters of `pid`, where available.
    fn pmu(&self, pid: Pid) -> Option<Pmu>;
    /// Resident memory of `pid` in bytes (0 if it is not live).
    fn rss_bytes(&self, pid: Pid) -> u64;
    /// Huge pages mapped by `pid`.
    fn huge_pages(&self, pid: Pid) -> u64;
    /// Free memory.
    fn mem_info(&self) -> MemInfo;
    /// The cost of reading (scanning) one page-table entry, charged to scanners.
    fn scan_cost_per_pte(&self) -> Picos;
    /// Direct compaction for a failed allocation of `order` by the calling daemon (subject
    /// to the kernel's compaction deferral); returns the time it took.
    fn compact_for(&mut self, order: Order) -> Nanos;
    /// The buddy order of a huge page.
    fn huge_order(&self) -> Order;
    /// Start sampling the TLB misses of `pid` (restarting if it was sampled); `false`
    /// when this host cannot (no such process, no sampler).
    fn start_tlb_sampling(&mut self, pid: Pid, sampling: TlbSampling) -> bool {
        let _ = (pid, sampling);
        false
    }
    /// Stop sampling `pid` and take what was counted since the start (`None` if it was
    /// not being sampled).
    fn take_tlb_misses(&mut self, pid: Pid) -> Option<TlbMisses> {
        let _ = pid;
        None
    }
    /// A monitor's second phase for `pid`'s last window is done: of the `cold` huge pages
    /// it checked, `very_hot` were found accessed often enough to be kept (for the
    /// record only; does nothing by default).
    fn note_phase_two(&mut self, pid: Pid, cold: u64, very_hot: u64) {
        let _ = (pid, cold, very_hot);
    }
}

/// Promote one region as khugepaged does with `defrag` on: try the collapse; when no free
/// huge block exists and `defrag` is set, compact directly for one (subject to the
/// kernel's deferral) and try once more. Returns the outcome and the compaction time
/// spent, which the caller charges to its daemon.
pub fn collapse_or_compact(
    ops: &mut dyn MemoryOps,
    pid: Pid,
    region: VirtAddr,
    defrag: bool,
) -> (Result<CollapseOutcome, CollapseError>, Nanos) {
    let first = ops.collapse(pid, region);
    if !(defrag && matches!(first, Err(CollapseError::NoMemory))) {
        return (first, Nanos::ZERO);
    }
    let compaction = ops.compact_for(ops.huge_order());
    (ops.collapse(pid, region), compaction)
}
