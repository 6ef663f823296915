//! H-Policy (the SysMon-H / H-Policy paper, section 4): huge pages where SysMon-H's TLB
//! misses say they pay, base pages where they do not.
//!
//! - **Faults** are Linux's THP `always`: a huge page wherever one fits, else a base
//!   page (H-Policy is built on Linux's THP), with Linux's default `defrag` (`madvise`).
//! - **Split under pressure** (rule i): when allocated memory (all frames but the free
//!   ones) reaches [`HPolicyConfig::high_pressure`] (90%), the process whose H-Tree has
//!   the fewest total TLB misses gives up its under-utilised huge pages first, coldest
//!   first (the left part of its tree: below `high_tlb` and not found very hot by phase
//!   two), then the next process, until allocated memory falls below the watermark.
//!   "After splitting a huge page, the freed base pages (marked by explicit hints)
//!   return to buddy system": the model frees the base pages the process never wrote
//!   (zero-filled), as HawkEye's bloat recovery does, through the same mechanism
//!   (`MemoryOps::dedup_zero_subpages`); a huge page with none is left whole, since
//!   splitting it would free nothing. The watermark is checked every
//!   [`HPolicyConfig::pressure_check`] (1 s; the paper does not say how often), at most
//!   [`HPolicyConfig::splits_per_pass`] huge pages a pass, and at once, without the
//!   limit, when a fault finds no memory.
//! - **Promote** (rule ii): every [`HPolicyConfig::promote_period`] (30 s), a 2 MB space
//!   mapped by base pages at least [`HPolicyConfig::promote_space`] (90%) of whose 4 KB
//!   pages are hot in its latest H-Tree is collapsed into a huge page (migrating and
//!   compacting as khugepaged does, `collapse_or_compact`).
//! - **Order-9 preservation and hole-aware compaction** (rules iii and iv) are the
//!   kernel's: an experiment sets them in `[kernel]`.
//!
//! The monitor is [`crate::sysmon`]; its daemon and this policy's run on the daemon core.

use crate::bloat::allocated;
use crate::ops::collapse_or_compact;
use crate::sysmon::{SysMon, SysMonConfig};
use crate::{DaemonRun, DaemonSpec, MemoryOps, Policy, Pressure, Reclaimed};
use hugemm_hw::{Nanos, PageSize, Pid, VirtAddr};
use hugemm_mm::{FaultInfo, HugeAdvice, ScanStyle, ZeroScan};
use serde::Serialize;

/// H-Policy's knobs, with the paper's values where it gives them.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct HPolicyConfig {
    /// The monitor.
    pub sysmon: SysMonConfig,
    /// Allocated share of memory at which under-utilised huge pages are split (0.90).
    pub high_pressure: f64,
    /// Share of a 2 MB space's 4 KB pages that must be hot to promote it (0.90).
    pub promote_space: f64,
    /// Time between promotion passes (30 s).
    pub promote_period: Nanos,
    /// How often the pressure watermark is checked (1 s; not in the paper).
    pub pressure_check: Nanos,
    /// Huge pages split per pressure pass at most (512; not in the paper).
    pub splits_per_pass: u32,
}

impl Default for HPolicyConfig {
    fn default() -> HPolicyConfig {
        HPolicyConfig {
            sysmon: SysMonConfig::default(),
            high_pressure: 0.90,
            promote_space: 0.90,
            promote_period: Nanos::from_millis(30_000),
            pressure_check: Nanos::from_millis(1_000),
            splits_per_pass: 512,
        }
    }
}

/// The policy (see the module doc).
#[derive(Clone, Debug)]
pub struct HPolicy {
    cfg: HPolicyConfig,
    monitor: SysMon,
    /// When the next promotion pass is due.
    next_promotion: Nanos,
    /// Huge pages split so far.
    pub splits: u64,
    /// Frames their splits freed.
    pub freed: u64,
    /// Base-page regions promoted.
    pub promoted: u64,
}

impl HPolicy {
    /// The policy with `cfg`.
    pub fn new(cfg: HPolicyConfig) -> HPolicy {
        HPolicy {
            monitor: SysMon::new(cfg.sysmon),
            next_promotion: cfg.promote_period,
            cfg,
            splits: 0,
            freed: 0,
            promoted: 0,
        }
    }

    /// The monitor, for reports.
    pub fn monitor(&self) -> &SysMon {
        &self.monitor
    }

    /// Split under-utilised huge pages, fewest-misses process first, until allocated
    /// memory is below the watermark (when `until_below`) or `want` frames are free,
    /// `budget` huge pages at most.
    fn split_cold(&mut self, ops: &mut dyn MemoryOps, budget: u32, want: Option<u64>) -> Reclaimed {
        let scan = ZeroScan {
            max_zero: 0,
            style: ScanStyle::Full,
        };
        let mut out = Reclaimed::default();
        let mut left = budget;
        let high = self.cfg.high_pressure;
        let enough = |ops: &dyn MemoryOps, freed: u64| match want {
            Some(w) => freed >= w,
            None => allocated(ops) < high,
        };
        for pid in self.monitor.by_total_misses() {
            let Some(tree) = self.monitor.tree(pid) else {
                continue;
            };
            let cold: Vec<VirtAddr> = tree.underutilised().map(|e| e.region).collect();
            for r in cold {
                if left == 0 || enough(&*ops, out.freed) {
                    return out;
                }
                left -= 1;
                if let Ok(s) = ops.dedup_zero_subpages(pid, r, scan) {
                    out.freed += u64::from(s.recovered);
                    out.cpu += s.cost;
                    if s.split {
                        self.splits += 1;
                    }
                }
                if let Some(t) = self.monitor.tree_mut(pid) {
                    t.remove(r);
                }
            }
        }
        self.freed += out.freed;
        out
    }

    /// Collapse the base-page regions whose 4 KB pages are mostly hot.
    fn promote(&mut self, ops: &mut dyn MemoryOps) -> Nanos {
        let mut cpu = Nanos::ZERO;
        let need = (self.cfg.promote_space * 512.0).ceil() as u32;
        for pid in ops.processes() {
            let Some(tree) = self.monitor.tree(pid) else {
                continue;
            };
            let hot: Vec<VirtAddr> = tree
                .base
                .iter()
                .filter(|b| b.hot_pages >= need)
                .map(|b| b.region)
                .collect();
            for r in hot {
                let (result, compaction) = collapse_or_compact(ops, pid, r, true);
                cpu += compaction;
                if let Ok(o) = result {
                    cpu += o.cost;
                    self.promoted += 1;
                }
            }
        }
        cpu
    }
}

impl Policy for HPolicy {
    fn name(&self) -> &'static str {
        "hpolicy"
    }

    fn fault_size(&mut self, _pid: Pid, info: &FaultInfo) -> PageSize {
        if info.advice != HugeAdvice::NoHugepage && info.huge_fits && info.region_empty {
            PageSize::Huge
        } else {
            PageSize::Base
        }
    }

    fn fault_defrag(&self, info: &FaultInfo) -> crate::Defrag {
        match info.advice {
            HugeAdvice::Hugepage => crate::Defrag::Direct,
            _ => crate::Defrag::Never,
        }
    }

    fn daemons(&self) -> Vec<DaemonSpec> {
        vec![
            DaemonSpec {
                name: "sysmon",
                first_run: Nanos(1),
            },
            DaemonSpec {
                name: "hpolicy",
                first_run: self.cfg.pressure_check,
            },
        ]
    }

    fn run_daemon(&mut self, index: usize, ops: &mut dyn MemoryOps) -> DaemonRun {
        match index {
            0 => {
                let (cpu, sleep) = self.monitor.step(ops);
                DaemonRun { cpu, sleep }
            }
            _ => {
                let mut cpu = Nanos::ZERO;
                if allocated(ops) >= self.cfg.high_pressure {
                    cpu += self.split_cold(ops, self.cfg.splits_per_pass, None).cpu;
                }
                if ops.now() >= self.next_promotion {
                    cpu += self.promote(ops);
                    self.next_promotion = ops.now() + self.cfg.promote_period;
                }
                DaemonRun {
                    cpu,
                    sleep: self.cfg.pressure_check,
                }
            }
        }
    }

    fn reclaim(&mut self, ops: &mut dyn MemoryOps, want: u64, pressure: Pressure) -> Reclaimed {
        match pressure {
            Pressure::Kswapd => Reclaimed::default(),
            Pressure::Direct => self.split_cold(ops, u32::MAX, Some(want)),
        }
    }

    fn process_exited(&mut self, pid: Pid) {
        self.monitor.process_exited(pid);
    }
}
