//! HawkEye's bloat recovery (section 3.2; `hawkeye_modules/bloat_recovery/remove.c`):
//! under memory pressure, find the zero-filled base pages inside huge pages and give their
//! frames back by de-duplicating them to the shared zero page.
//!
//! - **When.** Allocated memory (all frames but the free ones: anonymous, page cache,
//!   kernel) above the high watermark (85% of memory) switches recovery on; it runs a pass
//!   every `period` until allocated memory falls below the low watermark (70%). A fault
//!   that finds no frame at all runs it at once, without the rate limit, until a frame is
//!   freed or nothing is left to scan (`Policy::reclaim` with `Pressure::Direct`).
//! - **Whom first.** The process with the lowest MMU overhead, measured or estimated as
//!   the caller says (the order is the caller's, [`BloatRecovery::pass`]): the process
//!   that needs huge pages least gives them up first, consistent with promotion (2.3).
//! - **What.** Each huge page of the chosen process, low to high address, resuming where
//!   the last pass stopped: every base page read up to its first non-zero byte; a huge
//!   page holding more than `max_zero` zero-filled base pages is split and those pages
//!   map the zero page (`MemoryOps::dedup_zero_subpages`, `ScanStyle::Full`). A process
//!   whose huge pages have all been scanned in this episode is passed over until
//!   recovery switches off and on again.
//!
//! Choices where the paper is silent (each a knob):
//! - The rate: `huge_pages_per_pass` (512) every `period` (1 s), i.e. up to 1 GB of huge
//!   pages scanned a second. The paper calls the thread rate-limited without a number;
//!   the released module wakes every 120 s and scans everything. At 9.11 bytes a page an
//!   in-use huge page costs 512 cache misses to scan (about 85 us here), a bloated one up
//!   to 2 MB of reads, so a pass costs a few percent of a core to about a fifth of one.
//! - The threshold: `max_zero` = 0, the released code's (every zero-filled base page is
//!   recovered, whatever the rest of the huge page holds). The paper says only "beyond a
//!   threshold".

use crate::{MemoryOps, Reclaimed};
use hugemm_hw::{Nanos, Pid, VirtAddr};
use hugemm_mm::{ScanStyle, ZeroScan};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// The knobs of bloat recovery.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct BloatConfig {
    /// Run it at all.
    pub enabled: bool,
    /// Allocated share of memory above which recovery starts (0.85).
    pub high_watermark: f64,
    /// Allocated share below which it stops (0.70).
    pub low_watermark: f64,
    /// Time between passes (1 s); also how often the watermark is checked.
    pub period: Nanos,
    /// Huge pages scanned per pass at most (512).
    pub huge_pages_per_pass: u32,
    /// Zero-filled base pages a huge page may hold and stay whole (0).
    pub max_zero: u32,
}

impl Default for BloatConfig {
    fn default() -> Self {
        BloatConfig {
            enabled: true,
            high_watermark: 0.85,
            low_watermark: 0.70,
            period: Nanos::from_millis(1000),
            huge_pages_per_pass: 512,
            max_zero: 0,
        }
    }
}

/// Bloat recovery's state: whether an episode is on, and how far each process's huge
/// pages have been scanned in it.
#[derive(Clone, Debug)]
pub struct BloatRecovery {
    cfg: BloatConfig,
    active: bool,
    /// Per pid, the next region to scan.
    cursor: BTreeMap<u32, u64>,
    /// Pids whose huge pages have all been scanned in this episode.
    done: BTreeSet<u32>,
    /// Frames freed so far, for reports.
    freed_total: u64,
}

/// Allocated share of memory.
pub(crate) fn allocated(ops: &dyn MemoryOps) -> f64 {
    let m = ops.mem_info();
    if m.frames_total == 0 {
        return 0.0;
    }
    (m.frames_total - m.frames_free) as f64 / m.frames_total as f64
}

impl BloatRecovery {
    /// Recovery with `cfg`, not yet active.
    pub fn new(cfg: BloatConfig) -> Self {
        BloatRecovery {
            cfg,
            active: false,
            cursor: BTreeMap::new(),
            done: BTreeSet::new(),
            freed_total: 0,
        }
    }

    /// The knobs.
    pub fn config(&self) -> &BloatConfig {
        &self.cfg
    }

    /// Whether an episode is on.
    pub fn active(&self) -> bool {
        self.active
    }

    /// Frames freed since the start.
    pub fn freed_total(&self) -> u64 {
        self.freed_total
    }

    /// One periodic pass: check the watermarks, and while recovery is on scan up to
    /// `huge_pages_per_pass` huge pages of the processes in `order` (lowest MMU overhead
    /// first). Returns what it freed and its CPU time.
    pub fn pass(&mut self, ops: &mut dyn MemoryOps, order: &[Pid]) -> Reclaimed {
        if !self.cfg.enabled {
            return Reclaimed::default();
        }
        let used = allocated(ops);
        if !self.active && used > self.cfg.high_watermark {
            self.start_episode();
        }
        if !self.active {
            return Reclaimed::default();
        }
        let low = self.cfg.low_watermark;
        let out = self.scan(ops, order, self.cfg.huge_pages_per_pass, &|ops| {
            allocated(ops) < low
        });
        if allocated(ops) < low {
            self.active = false;
        }
        out
    }

    /// Recover at once, without the rate limit, until `want` frames are freed or every
    /// huge page of the processes in `order` has been scanned (a fault found no memory).
    pub fn recover(&mut self, ops: &mut dyn MemoryOps, order: &[Pid], want: u64) -> Reclaimed {
        if !self.cfg.enabled {
            return Reclaimed::default();
        }
        if !self.active {
            self.start_episode();
        }
        let mut total = Reclaimed::default();
        while total.freed < want {
            let need = want - total.freed;
            let out = self.scan(ops, order, u32::MAX, &|_| false);
            total.freed += out.freed;
            total.cpu += out.cpu;
            if out.freed >= need || self.done_with(order) {
                break;
            }
        }
        total
    }

    fn start_episode(&mut self) {
        self.active = true;
        self.cursor.clear();
        self.done.clear();
    }

    fn done_with(&self, order: &[Pid]) -> bool {
        order.iter().all(|p| self.done.contains(&p.0))
    }

    /// Scan up to `budget` huge pages, process by process in `order`, stopping early when
    /// `enough` says so.
    fn scan(
        &mut self,
        ops: &mut dyn MemoryOps,
        order: &[Pid],
        budget: u32,
        enough: &dyn Fn(&dyn MemoryOps) -> bool,
    ) -> Reclaimed {
        let scan = ZeroScan {
            max_zero: self.cfg.max_zero,
            style: ScanStyle::Full,
        };
        let mut out = Reclaimed::default();
        let mut left = budget;
        'processes: for &pid in order {
            if self.done.contains(&pid.0) {
                continue;
            }
            let from = self.cursor.get(&pid.0).copied().unwrap_or(0);
            let huge: Vec<VirtAddr> = ops
                .huge_regions(pid)
                .into_iter()
                .filter(|r| r.0 >= from)
                .collect();
            for r in huge {
                if left == 0 || enough(&*ops) {
                    break 'processes;
                }
                left -= 1;
                self.cursor.insert(pid.0, r.0 + 1);
                if let Ok(s) = ops.dedup_zero_subpages(pid, r, scan) {
                    out.freed += s.recovered as u64;
                    out.cpu += s.cost;
                }
            }
            self.done.insert(pid.0);
        }
        self.freed_total += out.freed;
        out
    }

    /// Forget a process that exited.
    pub fn process_exited(&mut self, pid: Pid) {
        self.cursor.remove(&pid.0);
        self.done.remove(&pid.0);
    }
}
