//! Linux's transparent huge pages: the fault-time decision of `transparent_hugepage/enabled`
//! and khugepaged's background collapse, with the kernel's defaults.
//!
//! Follows Linux 6.x `mm/huge_memory.c` (`thp_vma_allowable_order`,
//! `do_huge_pmd_anonymous_page`) and `mm/khugepaged.c` (`khugepaged_do_scan`,
//! `khugepaged_scan_mm_slot`, `hpage_collapse_scan_pmd`):
//!
//! - `enabled = always` maps a huge page at fault in any anonymous VMA not marked
//!   `MADV_NOHUGEPAGE`; `madvise` only in `MADV_HUGEPAGE` VMAs; `never` nowhere.
//! - khugepaged wakes every `scan_sleep` (10 s), scans `pages_to_scan` (4096) PTEs' worth of
//!   regions — each 2 MB region scanned counts 512, whatever its state, as in
//!   `khugepaged_scan_mm_slot` — walking processes first-come-first-serve (the order their
//!   mm joined khugepaged's list, which is start order here) and each process's regions from
//!   low to high address, resuming where the last pass stopped. A pass may wrap around the
//!   list once (`pass_through_head < 2`).
//! - A region collapses when at most `max_ptes_none` (511) of its PTEs are empty or map
//!   the zero page and at least one PTE is young (`SCAN_LACK_REFERENCED_PAGE` otherwise).
//!   A failed huge-page allocation ends the pass and khugepaged sleeps `alloc_sleep`
//!   (60 s) instead.
//! - The `defrag` setting decides what a fault does when no free order-9 block exists
//!   ([`Policy::fault_defrag`]): compact directly (`always`; `madvise` and
//!   `defer+madvise` in `MADV_HUGEPAGE` regions), wake kcompactd and fall back (`defer`;
//!   `defer+madvise` elsewhere), or just fall back. khugepaged's own `defrag` (default on)
//!   compacts directly when a collapse cannot get its huge page, then retries once.
//!
//! - `use_zero_page` (default 1): a read fault that would map a huge page maps the huge
//!   zero page instead; at 0 it allocates the huge page.
//! - Linux 6.12's THP shrinker (`shrink_underused`, `shrinker.rs`) splits huge pages
//!   holding more than `max_ptes_none` zero-filled base pages under reclaim; at the
//!   default `max_ptes_none` of 511 it splits nothing.
//!
//! Simplification: an ineligible region (THP not allowed in its VMA) costs one unit of
//! scan progress, where Linux charges one unit per ineligible VMA.

use crate::ops::collapse_or_compact;
use crate::shrinker::ThpShrinker;
use crate::{DaemonRun, DaemonSpec, Defrag, MemoryOps, Policy, Pressure, Reclaimed};
use hugemm_hw::{Nanos, PageSize, Picos, Pid, VirtAddr};
use hugemm_mm::{CollapseError, FaultInfo, HugeAdvice, RegionState};
use serde::Serialize;

/// `/sys/kernel/mm/transparent_hugepage/enabled`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ThpMode {
    /// Huge pages for every eligible anonymous mapping.
    Always,
    /// Huge pages only where the application asked with `MADV_HUGEPAGE`.
    Madvise,
    /// No transparent huge pages.
    Never,
}

/// `/sys/kernel/mm/transparent_hugepage/defrag`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum DefragMode {
    /// Direct compaction on every failed huge-page fault.
    Always,
    /// Wake kcompactd, never stall.
    Defer,
    /// Defer, and direct compaction for `MADV_HUGEPAGE` regions.
    DeferMadvise,
    /// Direct compaction only for `MADV_HUGEPAGE` regions (the kernel default).
    Madvise,
    /// Never compact for THP.
    Never,
}

/// khugepaged's knobs (`/sys/kernel/mm/transparent_hugepage/khugepaged/`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct KhugepagedConfig {
    /// Run khugepaged at all.
    pub enabled: bool,
    /// `pages_to_scan`: PTEs scanned per pass (default 4096, i.e. 8 regions).
    pub pages_to_scan: u64,
    /// `scan_sleep_millisecs`: sleep between passes (default 10 s).
    pub scan_sleep: Nanos,
    /// `alloc_sleep_millisecs`: sleep after a failed huge-page allocation (default 60 s).
    pub alloc_sleep: Nanos,
    /// `max_ptes_none`: empty or zero-page PTEs a region may have and still collapse
    /// (default 511).
    pub max_ptes_none: u32,
    /// `khugepaged/defrag`: compact directly when the huge page for a collapse cannot be
    /// allocated (default on).
    pub defrag: bool,
}

impl Default for KhugepagedConfig {
    fn default() -> Self {
        KhugepagedConfig {
            enabled: true,
            pages_to_scan: 4096,
            scan_sleep: Nanos::from_millis(10_000),
            alloc_sleep: Nanos::from_millis(60_000),
            max_ptes_none: 511,
            defrag: true,
        }
    }
}

/// The `linux` policy's configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LinuxConfig {
    /// THP mode.
    pub enabled: ThpMode,
    /// Defrag mode (see the module doc).
    pub defrag: DefragMode,
    /// khugepaged.
    pub khugepaged: KhugepagedConfig,
    /// `transparent_hugepage/shrink_underused` (Linux 6.12, default on): the THP shrinker
    /// splits huge pages with more than `khugepaged.max_ptes_none` zero-filled base pages
    /// under reclaim.
    pub shrink_underused: bool,
    /// `transparent_hugepage/use_zero_page` (default on): a read fault in a region
    /// eligible for a huge page maps the huge zero page; off, it allocates a huge page
    /// (zeroed, as a write fault would).
    pub use_zero_page: bool,
}

impl Default for LinuxConfig {
    /// Linux's defaults as shipped by most distributions: `always`, `madvise`.
    fn default() -> Self {
        LinuxConfig {
            enabled: ThpMode::Always,
            defrag: DefragMode::Madvise,
            khugepaged: KhugepagedConfig::default(),
            shrink_underused: true,
            use_zero_page: true,
        }
    }
}

/// Linux THP with khugepaged.
#[derive(Clone, Debug)]
pub struct LinuxPolicy {
    cfg: LinuxConfig,
    /// Processes in the order they joined khugepaged's list.
    slots: Vec<Pid>,
    /// Where the last pass stopped: index into `slots` and the next region address.
    cursor: (usize, u64),
    /// The deferred-split queue of the THP shrinker.
    shrinker: ThpShrinker,
}

impl LinuxPolicy {
    /// A Linux policy with `cfg`.
    pub fn new(cfg: LinuxConfig) -> Self {
        LinuxPolicy {
            cfg,
            slots: Vec::new(),
            cursor: (0, 0),
            shrinker: ThpShrinker::new(cfg.shrink_underused, cfg.khugepaged.max_ptes_none),
        }
    }

    /// Whether THP is allowed in a VMA with `advice` (`thp_vma_allowable_order`).
    fn allowed(&self, advice: HugeAdvice) -> bool {
        match (self.cfg.enabled, advice) {
            (_, HugeAdvice::NoHugepage) | (ThpMode::Never, _) => false,
            (ThpMode::Always, _) => true,
            (ThpMode::Madvise, a) => a == HugeAdvice::Hugepage,
        }
    }

    /// One khugepaged pass: returns the CPU time it took and whether an allocation failed.
    fn scan_pass(&mut self, ops: &mut dyn MemoryOps) -> (Picos, bool) {
        let budget = self.cfg.khugepaged.pages_to_scan;
        let per_pte = ops.scan_cost_per_pte();
        let (mut progress, mut cpu, mut passes_through_head) = (0u64, Picos(0), 0);
        while progress < budget && passes_through_head < 2 && !self.slots.is_empty() {
            if self.cursor.0 >= self.slots.len() {
                self.cursor = (0, 0);
            }
            if self.cursor == (0, 0) {
                passes_through_head += 1;
            }
            let pid = self.slots[self.cursor.0];
            let regions = ops.regions(pid);
            let start = regions.partition_point(|r| r.start.0 < self.cursor.1);
            for r in &regions[start..] {
                if progress >= budget {
                    self.cursor.1 = r.start.0;
                    return (cpu, false);
                }
                if !self.allowed(r.advice) {
                    progress += 1;
                    continue;
                }
                progress += 512;
                let info = ops.region_info(pid, r.start);
                cpu += Picos(per_pte.0 * 512);
                if info.state != RegionState::Table {
                    continue;
                }
                let none_or_zero = 512 - (info.present - info.zero);
                if none_or_zero > self.cfg.khugepaged.max_ptes_none || info.accessed == 0 {
                    continue;
                }
                let (result, compaction) =
                    collapse_or_compact(ops, pid, r.start, self.cfg.khugepaged.defrag);
                cpu += Picos::from(compaction);
                match result {
                    Ok(done) => {
                        cpu += Picos::from(done.cost);
                        self.shrinker.queue(pid, r.start);
                    }
                    Err(CollapseError::NoMemory) => {
                        self.cursor.1 = r.start.0;
                        return (cpu, true);
                    }
                    Err(CollapseError::Deferred) => {
                        // The next pass resumes at this region.
                        self.cursor.1 = r.start.0;
                        return (cpu, false);
                    }
                    Err(_) => {}
                }
            }
            // Next process; past the last one the scan restarts from the head (Linux's
            // `khugepaged_scan.mm_slot = NULL`), not at an index that a process joining
            // the list later would take.
            self.cursor = if self.cursor.0 + 1 < self.slots.len() {
                (self.cursor.0 + 1, 0)
            } else {
                (0, 0)
            };
        }
        (cpu, false)
    }
}

impl Policy for LinuxPolicy {
    fn name(&self) -> &'static str {
        "linux"
    }

    fn fault_size(&mut self, _pid: Pid, info: &FaultInfo) -> PageSize {
        if self.allowed(info.advice) && info.huge_fits && info.region_empty {
            PageSize::Huge
        } else {
            PageSize::Base
        }
    }

    fn use_huge_zero_page(&self) -> bool {
        self.cfg.use_zero_page
    }

    /// `transparent_hugepage/defrag` (`vma_thp_gfp_mask`): `always` stalls; `defer` wakes
    /// kcompactd; `defer+madvise` stalls in `MADV_HUGEPAGE` regions and wakes kcompactd
    /// elsewhere; `madvise` stalls only in `MADV_HUGEPAGE` regions; `never` does neither.
    fn fault_defrag(&self, info: &FaultInfo) -> Defrag {
        let madvised = info.advice == HugeAdvice::Hugepage;
        match (self.cfg.defrag, madvised) {
            (DefragMode::Always, _) | (DefragMode::DeferMadvise | DefragMode::Madvise, true) => {
                Defrag::Direct
            }
            (DefragMode::Defer | DefragMode::DeferMadvise, _) => Defrag::Wake,
            (DefragMode::Madvise | DefragMode::Never, _) => Defrag::Never,
        }
    }

    fn daemons(&self) -> Vec<DaemonSpec> {
        let k = &self.cfg.khugepaged;
        if k.enabled && self.cfg.enabled != ThpMode::Never {
            vec![DaemonSpec {
                name: "khugepaged",
                first_run: k.scan_sleep,
            }]
        } else {
            Vec::new()
        }
    }

    fn run_daemon(&mut self, _index: usize, ops: &mut dyn MemoryOps) -> DaemonRun {
        let (cpu, alloc_failed) = self.scan_pass(ops);
        let k = &self.cfg.khugepaged;
        DaemonRun {
            cpu: cpu.to_nanos(),
            sleep: if alloc_failed {
                k.alloc_sleep
            } else {
                k.scan_sleep
            },
        }
    }

    fn fault_taken(&mut self, pid: Pid, region: VirtAddr, size: PageSize) {
        if size == PageSize::Huge {
            self.shrinker.queue(pid, region);
        }
    }

    /// The THP shrinker runs under any reclaim, kswapd's or a failing allocation's.
    fn reclaim(&mut self, ops: &mut dyn MemoryOps, want: u64, _pressure: Pressure) -> Reclaimed {
        self.shrinker.scan(ops, want)
    }

    fn process_started(&mut self, pid: Pid) {
        self.slots.push(pid);
    }

    fn process_exited(&mut self, pid: Pid) {
        self.shrinker.process_exited(pid);
        if let Some(i) = self.slots.iter().position(|p| *p == pid) {
            self.slots.remove(i);
            if self.cursor.0 > i {
                self.cursor.0 -= 1;
            } else if self.cursor.0 == i {
                self.cursor.1 = 0;
            }
        }
    }
}
