//! The engine's implementation of the policy interface ([`MemoryOps`]) over the kernel
//! model. Observing a region first applies any accessed bits that skipped references would
//! have set (sampled mode, see [`crate::coverage`]).

use crate::compaction::{direct_compact, Deferral};
use crate::process::Proc;
use hugemm_hw::{Nanos, Order, Picos, Pid, Pmu, VirtAddr};
use hugemm_mm::{CollapseError, CollapseOutcome, HugeAdvice, Kernel, MmError, RegionInfo};
use hugemm_policy::{MemInfo, MemoryOps, RegionRef};

/// [`MemoryOps`] for one daemon run.
pub(crate) struct EngineOps<'a> {
    pub kernel: &'a mut Kernel,
    pub procs: &'a mut [Proc],
    pub now: Nanos,
    pub scan_cost: Picos,
    pub deferral: &'a mut Deferral,
}

/// Apply pending skipped-reference bits to the 2 MB region at `region` of `pid`.
pub(crate) fn materialise(kernel: &mut Kernel, procs: &mut [Proc], pid: Pid, region: VirtAddr) {
    let huge = kernel.geometry().huge_bytes();
    let Some(proc) = procs
        .iter_mut()
        .find(|p| p.pid == Some(pid) && p.end.is_none())
    else {
        return;
    };
    for b in proc.buffers.iter_mut().flatten() {
        let (start, end) = (b.start.0, b.start.0 + b.bytes);
        if region.0 + huge <= start || region.0 >= end {
            continue;
        }
        if let Some(cov) = b.coverage.as_mut() {
            let first = region.0.saturating_sub(start) / huge;
            let last = (region.0 + huge - 1).min(end - 1).saturating_sub(start) / huge;
            for i in first..=last {
                cov.materialise(kernel, pid, b.start, i as usize);
            }
        }
    }
}

impl MemoryOps for EngineOps<'_> {
    fn now(&self) -> Nanos {
        self.now
    }

    fn processes(&self) -> Vec<Pid> {
        let mut live: Vec<&Proc> = self.procs.iter().filter(|p| p.running()).collect();
        live.sort_by_key(|p| p.start);
        live.iter().filter_map(|p| p.pid).collect()
    }

    fn regions(&self, pid: Pid) -> Vec<RegionRef> {
        let k = &*self.kernel;
        k.regions(pid)
            .map(|start| RegionRef {
                start,
                advice: k
                    .fault_info(pid, start)
                    .map(|i| i.advice)
                    .unwrap_or(HugeAdvice::None),
            })
            .collect()
    }

    fn region_info(&mut self, pid: Pid, region: VirtAddr) -> RegionInfo {
        materialise(self.kernel, self.procs, pid, region);
        self.kernel.region_info(pid, region)
    }

    fn clear_accessed(&mut self, pid: Pid, region: VirtAddr) -> usize {
        materialise(self.kernel, self.procs, pid, region);
        self.kernel.clear_accessed(pid, region)
    }

    fn collapse(&mut self, pid: Pid, region: VirtAddr) -> Result<CollapseOutcome, CollapseError> {
        materialise(self.kernel, self.procs, pid, region);
        let out = self.kernel.collapse(pid, region);
        if out.is_ok() {
            if let Some(p) = self.procs.iter_mut().find(|p| p.pid == Some(pid)) {
                p.promotions += 1;
            }
        }
        out
    }

    fn split(&mut self, pid: Pid, region: VirtAddr) -> Result<Nanos, MmError> {
        materialise(self.kernel, self.procs, pid, region);
        self.kernel.split(pid, region)
    }

    fn pmu(&self, pid: Pid) -> Option<Pmu> {
        self.procs
            .iter()
            .find(|p| p.pid == Some(pid))
            .map(|p| p.pmu.clone())
    }

    fn rss_bytes(&self, pid: Pid) -> u64 {
        self.kernel.rss_bytes(pid)
    }

    fn huge_pages(&self, pid: Pid) -> u64 {
        self.kernel.huge_pages(pid)
    }

    fn mem_info(&self) -> MemInfo {
        let phys = self.kernel.phys();
        MemInfo {
            frames_total: phys.frames_total(),
            frames_free: phys.frames_free(),
            free_huge_blocks: phys.free_blocks_at_least(self.kernel.geometry().huge_order()),
            fmfi: hugemm_mm::metrics::unusable_free_index(
                &phys.free_blocks_by_order(),
                self.kernel.geometry().huge_order().0 as usize,
            ),
        }
    }

    fn scan_cost_per_pte(&self) -> Picos {
        self.scan_cost
    }

    fn compact_for(&mut self, order: Order) -> Nanos {
        direct_compact(self.kernel, self.deferral, order)
    }

    fn huge_order(&self) -> Order {
        self.kernel.geometry().huge_order()
    }
}
