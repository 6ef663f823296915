//! The engine's implementation of the policy interface ([`MemoryOps`]) over the kernel
//! model. Observing a region first applies any accessed bits that skipped references would
//! have set (sampled mode, see [`crate::coverage`]).

use crate::compaction::direct_compact;
use crate::process::Proc;
use crate::results::{PhaseTwo, TlbWindow};
use crate::tlbsample::TlbSampler;
use hugemm_hw::{Nanos, Order, Picos, Pid, Pmu, VirtAddr};
use hugemm_mm::{
    CollapseError, CollapseOutcome, HugeAdvice, Kernel, MmError, RegionInfo, ZeroScan,
    ZeroScanOutcome,
};
use hugemm_mm::{Mechanism, MigrateOutcome, NodeId, PageScan};
use hugemm_policy::{MemInfo, MemoryOps, RegionRef, TierOps, TlbMisses, TlbSampling};

/// A live process as a policy sees it in a direct reclaim, which runs inside another
/// process's fault (when the processes themselves are borrowed): its pid and start.
#[derive(Clone, Debug)]
pub(crate) struct LiveProc {
    pub pid: Pid,
    pub start: Nanos,
}

/// The processes a [`MemoryOps`] sees.
pub(crate) enum Procs<'a> {
    /// All of them (a daemon run between turns).
    All(&'a mut [Proc]),
    /// The live ones (a direct reclaim inside a fault): skipped references' accessed
    /// bits are not applied first, counters are not readable (`pmu` is `None`: policies
    /// use what they last read), and collapses are not counted per process (reclaim does
    /// not collapse).
    Live(&'a [LiveProc]),
}

/// [`MemoryOps`] for one daemon run or reclaim.
pub(crate) struct EngineOps<'a> {
    pub kernel: &'a mut Kernel,
    pub procs: Procs<'a>,
    pub now: Nanos,
    pub scan_cost: Picos,
}

impl EngineOps<'_> {
    fn materialise(&mut self, pid: Pid, region: VirtAddr) {
        if let Procs::All(procs) = &mut self.procs {
            materialise(self.kernel, procs, pid, region);
        }
    }
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
        match &self.procs {
            Procs::All(procs) => {
                let mut live: Vec<&Proc> = procs.iter().filter(|p| p.running()).collect();
                live.sort_by_key(|p| p.start);
                live.iter().filter_map(|p| p.pid).collect()
            }
            Procs::Live(live) => {
                let mut live: Vec<&LiveProc> = live.iter().collect();
                live.sort_by_key(|p| p.start);
                live.iter().map(|p| p.pid).collect()
            }
        }
    }

    fn huge_regions(&self, pid: Pid) -> Vec<VirtAddr> {
        self.kernel.huge_regions(pid)
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
        self.materialise(pid, region);
        self.kernel.region_info(pid, region)
    }

    fn clear_accessed(&mut self, pid: Pid, region: VirtAddr) -> usize {
        self.materialise(pid, region);
        self.kernel.clear_accessed(pid, region)
    }

    fn clear_referenced(&mut self, pid: Pid, region: VirtAddr) -> usize {
        self.materialise(pid, region);
        self.kernel.clear_referenced(pid, region)
    }

    fn collapse(&mut self, pid: Pid, region: VirtAddr) -> Result<CollapseOutcome, CollapseError> {
        self.materialise(pid, region);
        let out = self.kernel.collapse(pid, region);
        if let (true, Procs::All(procs)) = (out.is_ok(), &mut self.procs) {
            if let Some(p) = procs.iter_mut().find(|p| p.pid == Some(pid)) {
                p.promotions += 1;
            }
        }
        out
    }

    fn split(&mut self, pid: Pid, region: VirtAddr) -> Result<Nanos, MmError> {
        self.materialise(pid, region);
        self.kernel.split(pid, region)
    }

    fn dedup_zero_subpages(
        &mut self,
        pid: Pid,
        region: VirtAddr,
        scan: ZeroScan,
    ) -> Result<ZeroScanOutcome, MmError> {
        self.materialise(pid, region);
        self.kernel.dedup_zero_subpages(pid, region, scan)
    }

    fn start_tlb_sampling(&mut self, pid: Pid, sampling: TlbSampling) -> bool {
        let Procs::All(procs) = &mut self.procs else {
            return false;
        };
        let Some(p) = procs.iter_mut().find(|p| p.pid == Some(pid) && p.running()) else {
            return false;
        };
        p.tlb_sampler = Some(Box::new(TlbSampler::new(sampling, &p.pmu)));
        true
    }

    fn take_tlb_misses(&mut self, pid: Pid) -> Option<TlbMisses> {
        let Procs::All(procs) = &mut self.procs else {
            return None;
        };
        let p = procs.iter_mut().find(|p| p.pid == Some(pid))?;
        let misses = p.tlb_sampler.take()?.finish(&p.pmu);
        // The samples' cost delays the process at its next turn.
        p.stall += Picos::from(misses.overhead);
        p.tlb_sampling_overhead += misses.overhead;
        let mut regions: Vec<(u64, f64)> = Vec::new();
        let huge = self.kernel.geometry().huge_bytes();
        for &(page, n) in &misses.pages {
            let r = page.0 & !(huge - 1);
            match regions.last_mut() {
                Some(last) if last.0 == r => last.1 += n,
                _ => regions.push((r, n)),
            }
        }
        p.tlb_windows.push(TlbWindow {
            time_ns: self.now.0,
            process: p.spec.name.clone(),
            pid: pid.0,
            samples: misses.samples,
            walks: misses.walks,
            regions,
            phase_two: None,
        });
        Some(misses)
    }

    fn note_phase_two(&mut self, pid: Pid, cold: u64, very_hot: u64) {
        let Procs::All(procs) = &mut self.procs else {
            return;
        };
        let window = procs
            .iter_mut()
            .find(|p| p.pid == Some(pid))
            .and_then(|p| p.tlb_windows.last_mut());
        if let Some(w) = window {
            w.phase_two = Some(PhaseTwo { cold, very_hot });
        }
    }

    fn pmu(&self, pid: Pid) -> Option<Pmu> {
        match &self.procs {
            Procs::All(procs) => procs
                .iter()
                .find(|p| p.pid == Some(pid))
                .map(|p| p.pmu.clone()),
            Procs::Live(_) => None,
        }
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
        direct_compact(self.kernel, order)
    }

    fn huge_order(&self) -> Order {
        self.kernel.geometry().huge_order()
    }
}

impl TierOps for EngineOps<'_> {
    fn tier_processes(&self) -> Vec<Pid> {
        self.processes()
    }

    fn node_count(&self) -> usize {
        self.kernel.phys().node_count()
    }

    fn node_free_bytes(&self, node: NodeId) -> u64 {
        self.kernel.phys().node_frames_free(node) * self.kernel.geometry().base_bytes()
    }

    fn node_bytes(&self, node: NodeId) -> u64 {
        let base = self.kernel.geometry().base_bytes();
        self.kernel
            .phys()
            .node_frames(node)
            .map_or(0, |(a, b)| (b.0 - a.0) * base)
    }

    fn scan_pages(&mut self, pid: Pid, out: &mut Vec<PageScan>) -> u64 {
        let regions: Vec<VirtAddr> = self.kernel.regions(pid).collect();
        let mut entries = 0;
        for r in regions {
            self.materialise(pid, r);
            entries += self.kernel.scan_pages(pid, r, out) as u64;
        }
        entries
    }

    fn scan_cost_per_entry(&self) -> Nanos {
        self.scan_cost.to_nanos()
    }

    fn move_pages(
        &mut self,
        pid: Pid,
        pages: &[VirtAddr],
        to: NodeId,
        mech: &Mechanism,
    ) -> Result<MigrateOutcome, MmError> {
        self.kernel.move_pages(pid, pages, to, mech)
    }

    fn exchange_pages(
        &mut self,
        pid: Pid,
        pairs: &[(VirtAddr, VirtAddr)],
        mech: &Mechanism,
    ) -> Result<MigrateOutcome, MmError> {
        self.kernel.exchange_pages(pid, pairs, mech)
    }
}
