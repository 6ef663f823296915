//! Accessed-bit sampling as a kernel daemon does it: clear the page-table accessed bits of
//! a process's regions, let it run for a window, then count the bits that came back.
//!
//! HawkEye measures *access-coverage* this way (clear, count after 1 s, every 30 s;
//! paper section 3.3). Ingens tracks idleness with the same bits read and cleared at a
//! fixed period (every 4 s in its released code, `osa/hugepage_scan.c`): that is the
//! continuous form, where the window is the whole period and each run counts, then clears.
//!
//! The CPU cost is the page-table entries read: 512 for a region mapped by a table of
//! 4 KB PTEs, one for a huge mapping or an empty PMD, for the clear and again for the count.

use crate::MemoryOps;
use hugemm_hw::{Nanos, Picos, Pid, VirtAddr};
use hugemm_mm::{RegionInfo, RegionState};

/// When the sampler runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SamplerConfig {
    /// From the start of one sample to the start of the next.
    pub period: Nanos,
    /// From clearing the bits to counting them. Equal to `period` for continuous
    /// sampling (count, then clear at once for the next period).
    pub window: Nanos,
}

/// What a count found in one process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessSample {
    /// The process.
    pub pid: Pid,
    /// Every region of the process lying wholly in a VMA, low to high, with what the count
    /// read: state, population and the accessed bits set since the clear.
    pub regions: Vec<(VirtAddr, RegionInfo)>,
}

/// What one run of the sampler did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SamplerRun {
    /// Counts taken in this run (empty when it only cleared).
    pub samples: Vec<ProcessSample>,
    /// CPU time spent reading and clearing entries.
    pub cpu: Picos,
    /// Sleep before the next run.
    pub sleep: Nanos,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Next {
    Clear,
    Count,
}

/// A two-phase (clear, count) accessed-bit sampler over every live process.
#[derive(Clone, Debug)]
pub struct AccessSampler {
    cfg: SamplerConfig,
    next: Next,
    /// Processes whose bits were cleared at the last clear (only they can be counted).
    cleared: Vec<Pid>,
}

/// Entries read to observe (or clear) one region in `state`.
fn entries(state: RegionState) -> u64 {
    match state {
        RegionState::Table => 512,
        RegionState::Unmapped | RegionState::Huge | RegionState::HugeZero => 1,
    }
}

impl AccessSampler {
    /// A sampler that has not run yet; its first run clears.
    pub fn new(cfg: SamplerConfig) -> Self {
        AccessSampler {
            cfg,
            next: Next::Clear,
            cleared: Vec::new(),
        }
    }

    /// Whether the window is the whole period (count and clear in the same run).
    fn continuous(&self) -> bool {
        self.cfg.window >= self.cfg.period
    }

    /// Clear the bits of every region of every live process.
    fn clear(&mut self, ops: &mut dyn MemoryOps) -> Picos {
        let per_pte = ops.scan_cost_per_pte();
        let mut cpu = Picos(0);
        self.cleared = ops.processes();
        for &pid in &self.cleared {
            for r in ops.regions(pid) {
                let info = ops.region_info(pid, r.start);
                ops.clear_accessed(pid, r.start);
                cpu += Picos(per_pte.0 * entries(info.state));
            }
        }
        cpu
    }

    /// Count the bits of every process cleared last time that still lives.
    fn count(&mut self, ops: &mut dyn MemoryOps) -> (Vec<ProcessSample>, Picos) {
        let per_pte = ops.scan_cost_per_pte();
        let live = ops.processes();
        let mut cpu = Picos(0);
        let mut samples = Vec::new();
        for &pid in self.cleared.iter().filter(|p| live.contains(p)) {
            let regions: Vec<(VirtAddr, RegionInfo)> = ops
                .regions(pid)
                .into_iter()
                .map(|r| (r.start, ops.region_info(pid, r.start)))
                .collect();
            cpu += Picos(per_pte.0 * regions.iter().map(|(_, i)| entries(i.state)).sum::<u64>());
            samples.push(ProcessSample { pid, regions });
        }
        (samples, cpu)
    }

    /// One run: clear, or count (and, when continuous, clear again).
    pub fn run(&mut self, ops: &mut dyn MemoryOps) -> SamplerRun {
        if self.continuous() {
            let (samples, count_cpu) = match self.next {
                Next::Clear => (Vec::new(), Picos(0)),
                Next::Count => self.count(ops),
            };
            let cpu = count_cpu + self.clear(ops);
            self.next = Next::Count;
            return SamplerRun {
                samples,
                cpu,
                sleep: self.cfg.period,
            };
        }
        match self.next {
            Next::Clear => {
                let cpu = self.clear(ops);
                self.next = Next::Count;
                SamplerRun {
                    samples: Vec::new(),
                    cpu,
                    sleep: self.cfg.window,
                }
            }
            Next::Count => {
                let (samples, cpu) = self.count(ops);
                self.next = Next::Clear;
                SamplerRun {
                    samples,
                    cpu,
                    sleep: Nanos(self.cfg.period.0 - self.cfg.window.0),
                }
            }
        }
    }
}
