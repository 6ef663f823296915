//! HawkEye's huge-page promotion (Panwar, Bansal, Gopinath; ASPLOS'19, sections 3.3-3.4):
//! access-coverage tracking in a per-process `access_map`, and fairness by MMU overhead,
//! estimated from access-coverage (HawkEye-G) or measured by performance counters
//! (HawkEye-PMU).
//!
//! - **Access-coverage** of a 2 MB region is the number of its base pages whose accessed
//!   bit is set 1 s after the bits were cleared; it is sampled every 30 s
//!   ([`crate::access`]) and smoothed by an exponential moving average.
//! - **access_map**: per process, 10 buckets by EMA coverage (0-49, 50-99, ..., 450-512).
//!   A region that moves up is inserted at the head of its new bucket, one that moves
//!   down at the tail; promotion takes a bucket's head first.
//! - **HawkEye-G** promotes from the highest non-empty bucket across all processes,
//!   round-robin among the processes that have regions there.
//! - **HawkEye-PMU** picks the process with the highest measured MMU overhead (Table 4:
//!   walk cycles of loads and stores over unhalted cycles), round-robin among processes
//!   within a tolerance of it, takes that process's regions from its highest bucket down,
//!   and stops promoting a process whose overhead is below 2%.
//! - Huge pages are mapped at the first fault when a free order-9 block exists (the paper
//!   takes them from pre-zeroed memory: pre-zeroing is the kernel's daemon, on by default
//!   with this policy, see hugemm-sim). A fault never compacts: HawkEye's point is to keep
//!   fault latency low, so when no block is free the fault takes a base page and
//!   promotion catches up later.
//! - **Bloat recovery** ([`crate::bloat`], section 3.2): above 85% of memory allocated,
//!   zero-filled base pages of huge pages are de-duplicated, lowest MMU overhead first,
//!   until allocated memory is below 70%; a fault that finds no frame runs it at once.
//!   HawkEye-PMU orders processes by measured MMU overhead; HawkEye-G by its estimate, the
//!   summed EMA access-coverage of the process's regions still mapped by base pages (the
//!   base pages that need TLB entries; a process all in huge pages estimates 0).
//!
//! Choices where the paper is silent (each a knob where it is a number):
//! - EMA weight: the released code's `w = (6 w + 4 x) / 10`, i.e. a new sample counts
//!   0.4 ([`HawkeyeConfig::ema_alpha`]). A region entering the map takes its first sample
//!   as its EMA (starting from zero would hold every new hot region in a low bucket for
//!   several 30 s periods).
//! - Which regions are tracked: every region mapped by a table of base pages with at least
//!   one present page; a region leaves the map when it becomes huge or is unmapped.
//! - Order among regions that move up into the same bucket in one period: ascending EMA,
//!   each inserted at the head, so the hottest ends first; regions moving down are
//!   appended in descending EMA, so the coldest ends last. New regions count as moving up.
//! - Round-robin among processes restarts at the first process (in start order) whenever
//!   the level being served changes; this reproduces the paper's example order
//!   A1,B1,C1,C2,B2,C3,C4,B3,B4,A2,C5,A3 (a test).
//! - Rate: the promotion thread is khugepaged rewritten, so by default it keeps
//!   khugepaged's pace: every 10 s, up to 8 promotions (khugepaged's 4096 PTEs a pass),
//!   sleeping 60 s after a failed allocation, and compacting once before giving up
//!   (khugepaged's `defrag`).
//! - HawkEye-PMU measures each process's overhead over the interval since the previous
//!   pass (the released profiler measures 1 s of every 10 s; a model can afford all of
//!   it). Processes within 10% (relative) of the highest overhead count as similar.
//! - Every region in the map is eventually promotable, bucket 0 included (the paper
//!   defers cold regions; the released code requires bucket >= 2: the `min_bucket` knob).
//! - While bloat recovery is on (memory pressure), HawkEye conserves memory: faults map
//!   base pages, and promotion takes only regions whose every base page is present, so
//!   no new huge page brings zero-filled pages for recovery to take back (section 4,
//!   Table 7: "switching from aggressive huge page allocations under low memory pressure
//!   to memory conserving strategy at runtime"; how it switches, the paper does not say).

use crate::access::{AccessSampler, ProcessSample, SamplerConfig};
use crate::bloat::{BloatConfig, BloatRecovery};
use crate::ops::collapse_or_compact;
use crate::{DaemonRun, DaemonSpec, Defrag, MemoryOps, Policy, Pressure, Reclaimed};
use hugemm_hw::{Nanos, PageSize, Picos, Pid, Pmu, VirtAddr};
use hugemm_mm::{CollapseError, FaultInfo, HugeAdvice, RegionState};
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};

/// Buckets in an access_map.
pub const BUCKETS: usize = 10;

/// The bucket of an EMA access-coverage (0..=512): 0-49 is bucket 0, ..., 450-512 is 9.
pub fn bucket_of(coverage: f64) -> usize {
    ((coverage.max(0.0) / 50.0) as usize).min(BUCKETS - 1)
}

/// How HawkEye estimates which process suffers most from translation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Variant {
    /// From access-coverage alone (portable: no performance counters needed).
    G,
    /// From measured MMU overhead (performance counters).
    Pmu,
}

/// HawkEye's knobs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct HawkeyeConfig {
    /// G or PMU.
    pub variant: Variant,
    /// Access-coverage sampling: clear, count after `window` (1 s), every `period` (30 s).
    pub sampling: SamplerConfig,
    /// Weight of a new coverage sample in the EMA (0.4).
    pub ema_alpha: f64,
    /// Sleep between promotion passes (10 s).
    pub scan_sleep: Nanos,
    /// Promotion attempts per pass (8).
    pub promotions_per_pass: u32,
    /// Sleep after a pass ended by a failed huge-page allocation (60 s).
    pub alloc_sleep: Nanos,
    /// Compact directly when a promotion finds no free huge block, then retry once.
    pub defrag: bool,
    /// Lowest bucket promoted from (0: all).
    pub min_bucket: usize,
    /// HawkEye-PMU: processes below this MMU overhead are not promoted (0.02).
    pub pmu_threshold: f64,
    /// HawkEye-PMU: processes within this fraction of the highest overhead are served
    /// round-robin (0.1).
    pub pmu_similar: f64,
    /// Bloat recovery.
    pub bloat: BloatConfig,
}

impl Default for HawkeyeConfig {
    fn default() -> Self {
        HawkeyeConfig {
            variant: Variant::G,
            sampling: SamplerConfig {
                period: Nanos::from_millis(30_000),
                window: Nanos::from_millis(1_000),
            },
            ema_alpha: 0.4,
            scan_sleep: Nanos::from_millis(10_000),
            promotions_per_pass: 8,
            alloc_sleep: Nanos::from_millis(60_000),
            defrag: true,
            min_bucket: 0,
            pmu_threshold: 0.02,
            pmu_similar: 0.1,
            bloat: BloatConfig::default(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Entry {
    ema: f64,
    bucket: usize,
}

/// One process's access_map: regions in buckets by EMA access-coverage.
#[derive(Clone, Debug, Default)]
pub struct AccessMap {
    buckets: [VecDeque<VirtAddr>; BUCKETS],
    entries: BTreeMap<u64, Entry>,
}

impl AccessMap {
    /// Apply one sampling period: `coverage` holds every tracked region's new sample (low
    /// to high address); tracked regions missing from it leave the map.
    pub fn update(&mut self, coverage: &[(VirtAddr, u32)], alpha: f64) {
        let mut up: Vec<Vec<(f64, VirtAddr)>> = vec![Vec::new(); BUCKETS];
        let mut down: Vec<Vec<(f64, VirtAddr)>> = vec![Vec::new(); BUCKETS];
        let mut next: BTreeMap<u64, Entry> = BTreeMap::new();
        for &(r, c) in coverage {
            let sample = c as f64;
            let (ema, old) = match self.entries.get(&r.0) {
                Some(e) => (alpha * sample + (1.0 - alpha) * e.ema, Some(e.bucket)),
                None => (sample, None),
            };
            let bucket = bucket_of(ema);
            match old {
                Some(b) if b == bucket => {}
                Some(b) if b > bucket => down[bucket].push((ema, r)),
                _ => up[bucket].push((ema, r)),
            }
            next.insert(r.0, Entry { ema, bucket });
        }
        for (b, list) in self.buckets.iter_mut().enumerate() {
            list.retain(|r| next.get(&r.0).is_some_and(|e| e.bucket == b));
            up[b].sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1 .0.cmp(&y.1 .0)));
            for &(_, r) in &up[b] {
                list.push_front(r);
            }
            down[b].sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1 .0.cmp(&y.1 .0)));
            for &(_, r) in &down[b] {
                list.push_back(r);
            }
        }
        self.entries = next;
    }

    /// Put `region` at the head (or tail) of `bucket` with an EMA at the bucket's floor
    /// (for building maps in tests and examples).
    pub fn insert(&mut self, region: VirtAddr, bucket: usize, head: bool) {
        self.remove(region);
        let bucket = bucket.min(BUCKETS - 1);
        let ema = bucket as f64 * 50.0;
        self.entries.insert(region.0, Entry { ema, bucket });
        if head {
            self.buckets[bucket].push_front(region);
        } else {
            self.buckets[bucket].push_back(region);
        }
    }

    /// Forget `region`.
    pub fn remove(&mut self, region: VirtAddr) {
        if let Some(e) = self.entries.remove(&region.0) {
            self.buckets[e.bucket].retain(|r| *r != region);
        }
    }

    /// The highest non-empty bucket.
    pub fn top(&self) -> Option<usize> {
        (0..BUCKETS).rev().find(|&b| !self.buckets[b].is_empty())
    }

    /// Take the head of `bucket` out of the map.
    pub fn pop(&mut self, bucket: usize) -> Option<VirtAddr> {
        let r = self.buckets.get_mut(bucket)?.pop_front()?;
        self.entries.remove(&r.0);
        Some(r)
    }

    /// Put back a region taken by [`AccessMap::pop`] whose promotion could not be done now.
    fn push_back_head(&mut self, region: VirtAddr, bucket: usize) {
        self.insert(region, bucket, true);
    }

    /// The summed EMA access-coverage of the tracked regions: base pages of base-page
    /// regions accessed in a window, HawkEye-G's estimate of the process's TLB pressure.
    pub fn coverage_sum(&self) -> f64 {
        self.entries.values().map(|e| e.ema).sum()
    }

    /// Regions tracked.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no region is tracked.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The regions of `bucket`, head first.
    pub fn bucket(&self, bucket: usize) -> impl Iterator<Item = VirtAddr> + '_ {
        self.buckets[bucket].iter().copied()
    }
}

/// HawkEye-G's choice: the head of the highest non-empty bucket across all processes,
/// round-robin among the processes that have one there. The round-robin restarts at the
/// first process when the level changes.
#[derive(Clone, Debug, Default)]
pub struct GlobalRoundRobin {
    level: Option<usize>,
    next: usize,
}

impl GlobalRoundRobin {
    /// Take the next region to promote from `maps` (processes in start order), skipping
    /// buckets below `min_bucket`. Returns the position of the process in `maps`, the
    /// region and its bucket.
    pub fn take(
        &mut self,
        maps: &mut [(Pid, AccessMap)],
        min_bucket: usize,
    ) -> Option<(usize, VirtAddr, usize)> {
        let top = maps.iter().filter_map(|(_, m)| m.top()).max()?;
        if top < min_bucket {
            return None;
        }
        if self.level != Some(top) {
            self.level = Some(top);
            self.next = 0;
        }
        let n = maps.len();
        for k in 0..n {
            let i = (self.next + k) % n;
            if let Some(r) = maps[i].1.pop(top) {
                self.next = (i + 1) % n;
                return Some((i, r, top));
            }
        }
        None
    }
}

/// HawkEye.
#[derive(Clone, Debug)]
pub struct HawkeyePolicy {
    cfg: HawkeyeConfig,
    sampler: AccessSampler,
    /// access_maps of live processes, in start order.
    maps: Vec<(Pid, AccessMap)>,
    g: GlobalRoundRobin,
    /// PMU: counters at the previous pass, and the overhead measured over the interval.
    pmu_last: BTreeMap<u32, Pmu>,
    /// PMU: the position in `maps` after the last process served.
    pmu_next: usize,
    /// Promotions per process (by pid), for reports.
    promotions: BTreeMap<u32, u64>,
    /// Bloat recovery.
    recovery: BloatRecovery,
    /// PMU counters at the bloat daemon's previous pass, and the overhead measured then.
    bloat_pmu_last: BTreeMap<u32, (Pmu, f64)>,
}

/// Daemon indices.
const SAMPLER: usize = 0;
const PROMOTER: usize = 1;
const BLOAT: usize = 2;

/// MMU overhead between two readings of a process's counters.
fn overhead_between(before: &Pmu, now: &Pmu) -> f64 {
    let cycles = now.cycles.saturating_sub(before.cycles);
    let walk = (now.walk_cycles_load + now.walk_cycles_store)
        .saturating_sub(before.walk_cycles_load + before.walk_cycles_store);
    if cycles == 0 {
        0.0
    } else {
        walk as f64 / cycles as f64
    }
}

impl HawkeyePolicy {
    /// HawkEye with `cfg`.
    pub fn new(cfg: HawkeyeConfig) -> Self {
        HawkeyePolicy {
            cfg,
            sampler: AccessSampler::new(cfg.sampling),
            maps: Vec::new(),
            g: GlobalRoundRobin::default(),
            pmu_last: BTreeMap::new(),
            pmu_next: 0,
            promotions: BTreeMap::new(),
            recovery: BloatRecovery::new(cfg.bloat),
            bloat_pmu_last: BTreeMap::new(),
        }
    }

    /// Bloat recovery's state.
    pub fn recovery(&self) -> &BloatRecovery {
        &self.recovery
    }

    /// Live processes, lowest MMU overhead first (measured since the last call for
    /// HawkEye-PMU, estimated from access-coverage for HawkEye-G), ties in start order.
    fn lowest_overhead_first(&mut self, ops: &dyn MemoryOps) -> Vec<Pid> {
        let mut ranked: Vec<(f64, usize, Pid)> = Vec::with_capacity(self.maps.len());
        for (i, (pid, map)) in self.maps.iter().enumerate() {
            let overhead = match self.cfg.variant {
                Variant::G => map.coverage_sum(),
                // Without counters (a direct reclaim inside a fault) the last measurement.
                Variant::Pmu => match ops.pmu(*pid) {
                    Some(now) => {
                        let before = self.bloat_pmu_last.get(&pid.0).map(|b| &b.0);
                        let o = overhead_between(before.unwrap_or(&Pmu::default()), &now);
                        self.bloat_pmu_last.insert(pid.0, (now, o));
                        o
                    }
                    None => self.bloat_pmu_last.get(&pid.0).map_or(0.0, |b| b.1),
                },
            };
            ranked.push((overhead, i, *pid));
        }
        ranked.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        ranked.into_iter().map(|(_, _, pid)| pid).collect()
    }

    /// The access_map of `pid`, if it is tracked.
    pub fn access_map(&self, pid: Pid) -> Option<&AccessMap> {
        self.maps.iter().find(|(p, _)| *p == pid).map(|(_, m)| m)
    }

    /// Successful promotions per pid so far.
    pub fn promotions(&self) -> &BTreeMap<u32, u64> {
        &self.promotions
    }

    fn apply_samples(&mut self, samples: &[ProcessSample]) {
        for s in samples {
            let Some((_, map)) = self.maps.iter_mut().find(|(p, _)| *p == s.pid) else {
                continue;
            };
            let coverage: Vec<(VirtAddr, u32)> = s
                .regions
                .iter()
                .filter(|(_, i)| i.state == RegionState::Table && i.present > i.zero)
                .map(|(r, i)| (*r, i.accessed))
                .collect();
            map.update(&coverage, self.cfg.ema_alpha);
        }
    }

    /// HawkEye-PMU: each process's MMU overhead since the previous pass.
    fn measure(&mut self, ops: &dyn MemoryOps) -> Vec<f64> {
        self.maps
            .iter()
            .map(|(pid, _)| {
                let Some(now) = ops.pmu(*pid) else {
                    return 0.0;
                };
                let before = self.pmu_last.insert(pid.0, now.clone()).unwrap_or_default();
                overhead_between(&before, &now)
            })
            .collect()
    }

    /// HawkEye-PMU's choice: round-robin among the processes whose overhead is within
    /// `pmu_similar` of the highest, above `pmu_threshold`, with a region to promote.
    fn take_pmu(&mut self, overhead: &[f64]) -> Option<(usize, VirtAddr, usize)> {
        let min_bucket = self.cfg.min_bucket;
        let eligible = |i: usize, maps: &[(Pid, AccessMap)]| {
            overhead[i] >= self.cfg.pmu_threshold
                && maps[i].1.top().is_some_and(|b| b >= min_bucket)
        };
        let max = (0..self.maps.len())
            .filter(|&i| eligible(i, &self.maps))
            .map(|i| overhead[i])
            .fold(f64::NAN, f64::max);
        if max.is_nan() {
            return None;
        }
        let n = self.maps.len();
        for k in 0..n {
            let i = (self.pmu_next + k) % n;
            if eligible(i, &self.maps) && overhead[i] >= max * (1.0 - self.cfg.pmu_similar) {
                let b = self.maps[i].1.top()?;
                let r = self.maps[i].1.pop(b)?;
                self.pmu_next = (i + 1) % n;
                return Some((i, r, b));
            }
        }
        None
    }

    /// One promotion pass. Returns its CPU time and whether an allocation failed.
    fn promote_pass(&mut self, ops: &mut dyn MemoryOps) -> (Picos, bool) {
        let per_pte = ops.scan_cost_per_pte();
        let overhead = match self.cfg.variant {
            Variant::Pmu => self.measure(ops),
            Variant::G => Vec::new(),
        };
        let mut cpu = Picos(0);
        for _ in 0..self.cfg.promotions_per_pass {
            let picked = match self.cfg.variant {
                Variant::G => self.g.take(&mut self.maps, self.cfg.min_bucket),
                Variant::Pmu => self.take_pmu(&overhead),
            };
            let Some((i, region, bucket)) = picked else {
                break;
            };
            let pid = self.maps[i].0;
            let info = ops.region_info(pid, region);
            cpu += Picos(per_pte.0 * 512);
            if info.state != RegionState::Table || info.present == info.zero {
                continue;
            }
            let full = info.present - info.zero == 512;
            if self.recovery.active() && !full {
                // Conserving memory: a collapse would add zero-filled pages. The region
                // stays in the map for when pressure is gone.
                self.maps[i].1.push_back_head(region, bucket);
                continue;
            }
            let (result, compaction) = collapse_or_compact(ops, pid, region, self.cfg.defrag);
            cpu += Picos::from(compaction);
            match result {
                Ok(done) => {
                    cpu += Picos::from(done.cost);
                    *self.promotions.entry(pid.0).or_default() += 1;
                }
                Err(CollapseError::NoMemory) => {
                    self.maps[i].1.push_back_head(region, bucket);
                    return (cpu, true);
                }
                Err(CollapseError::Deferred) => {
                    // The next pass starts with this region.
                    self.maps[i].1.push_back_head(region, bucket);
                    return (cpu, false);
                }
                Err(_) => {}
            }
        }
        (cpu, false)
    }
}

impl Policy for HawkeyePolicy {
    fn name(&self) -> &'static str {
        "hawkeye"
    }

    fn fault_size(&mut self, _pid: Pid, info: &FaultInfo) -> PageSize {
        if !self.recovery.active()
            && info.advice != HugeAdvice::NoHugepage
            && info.huge_fits
            && info.region_empty
        {
            PageSize::Huge
        } else {
            PageSize::Base
        }
    }

    fn fault_defrag(&self, _info: &FaultInfo) -> Defrag {
        Defrag::Never
    }

    fn daemons(&self) -> Vec<DaemonSpec> {
        vec![
            DaemonSpec {
                name: "hawkeye-sampler",
                first_run: self.cfg.sampling.window,
            },
            DaemonSpec {
                name: "hawkeye-promoter",
                first_run: self.cfg.scan_sleep,
            },
            DaemonSpec {
                name: "hawkeye-bloat",
                first_run: self.cfg.bloat.period,
            },
        ]
    }

    fn run_daemon(&mut self, index: usize, ops: &mut dyn MemoryOps) -> DaemonRun {
        match index {
            SAMPLER => {
                let run = self.sampler.run(ops);
                self.apply_samples(&run.samples);
                DaemonRun {
                    cpu: run.cpu.to_nanos(),
                    sleep: run.sleep,
                }
            }
            PROMOTER => {
                let (cpu, failed) = self.promote_pass(ops);
                DaemonRun {
                    cpu: cpu.to_nanos(),
                    sleep: if failed {
                        self.cfg.alloc_sleep
                    } else {
                        self.cfg.scan_sleep
                    },
                }
            }
            BLOAT => {
                let order = self.lowest_overhead_first(ops);
                let run = self.recovery.pass(ops, &order);
                DaemonRun {
                    cpu: run.cpu,
                    sleep: self.cfg.bloat.period,
                }
            }
            _ => DaemonRun::default(),
        }
    }

    /// A fault found no frame: recover bloat at once (kswapd's pressure is left to the
    /// rate-limited daemon and its watermarks).
    fn reclaim(&mut self, ops: &mut dyn MemoryOps, want: u64, pressure: Pressure) -> Reclaimed {
        match pressure {
            Pressure::Kswapd => Reclaimed::default(),
            Pressure::Direct => {
                let order = self.lowest_overhead_first(ops);
                self.recovery.recover(ops, &order, want)
            }
        }
    }

    fn process_started(&mut self, pid: Pid) {
        self.maps.push((pid, AccessMap::default()));
    }

    fn process_exited(&mut self, pid: Pid) {
        if let Some(i) = self.maps.iter().position(|(p, _)| *p == pid) {
            self.maps.remove(i);
            if self.pmu_next > i {
                self.pmu_next -= 1;
            }
            if self.pmu_next >= self.maps.len() {
                self.pmu_next = 0;
            }
            self.g = GlobalRoundRobin::default();
        }
        self.pmu_last.remove(&pid.0);
        self.bloat_pmu_last.remove(&pid.0);
        self.recovery.process_exited(pid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn va(n: u64) -> VirtAddr {
        VirtAddr(n << 21)
    }

    #[test]
    fn buckets_are_fifty_wide_and_the_last_takes_450_to_512() {
        assert_eq!(bucket_of(0.0), 0);
        assert_eq!(bucket_of(49.9), 0);
        assert_eq!(bucket_of(50.0), 1);
        assert_eq!(bucket_of(449.0), 8);
        assert_eq!(bucket_of(450.0), 9);
        assert_eq!(bucket_of(512.0), 9);
    }

    /// The paper's Figure 4 example (section 3.4): HawkEye-G promotes
    /// A1,B1,C1,C2,B2,C3,C4,B3,B4,A2,C5,A3. The figure's bucket contents are not in the
    /// text; this arrangement is the one the order implies (level 9: A1 | B1 | C1 C2;
    /// level 8: B2 | C3 C4; level 7: B3 B4; level 6: A2 A3 | C5).
    #[test]
    fn hawkeye_g_follows_the_papers_example_order() {
        let (a, b, c) = (Pid(1), Pid(2), Pid(3));
        let mut maps = vec![
            (a, AccessMap::default()),
            (b, AccessMap::default()),
            (c, AccessMap::default()),
        ];
        let names = [(1, "A1"), (2, "A2"), (3, "A3"), (11, "B1"), (12, "B2")]
            .into_iter()
            .chain([(13, "B3"), (14, "B4"), (21, "C1"), (22, "C2"), (23, "C3")])
            .chain([(24, "C4"), (25, "C5")])
            .collect::<BTreeMap<u64, &str>>();
        let layout: [(usize, u64, usize); 12] = [
            (0, 1, 9),
            (1, 11, 9),
            (2, 21, 9),
            (2, 22, 9),
            (1, 12, 8),
            (2, 23, 8),
            (2, 24, 8),
            (1, 13, 7),
            (1, 14, 7),
            (0, 2, 6),
            (0, 3, 6),
            (2, 25, 6),
        ];
        for (p, r, bucket) in layout {
            maps[p].1.insert(va(r), bucket, false);
        }
        let mut rr = GlobalRoundRobin::default();
        let mut order = Vec::new();
        while let Some((_, r, _)) = rr.take(&mut maps, 0) {
            order.push(names[&(r.0 >> 21)]);
        }
        assert_eq!(
            order,
            ["A1", "B1", "C1", "C2", "B2", "C3", "C4", "B3", "B4", "A2", "C5", "A3"]
        );
    }

    #[test]
    fn moving_up_goes_to_the_head_and_moving_down_to_the_tail() {
        let mut m = AccessMap::default();
        // Three regions start in bucket 2 (coverage 100..149), in address order.
        m.update(&[(va(1), 120), (va(2), 110), (va(3), 100)], 1.0);
        assert_eq!(m.bucket(2).collect::<Vec<_>>(), [va(1), va(2), va(3)]);
        // Region 4 joins bucket 2 from above (it was in 5), region 5 from below (was 0).
        m.update(
            &[
                (va(1), 120),
                (va(2), 110),
                (va(3), 100),
                (va(4), 250),
                (va(5), 10),
            ],
            1.0,
        );
        m.update(
            &[
                (va(1), 120),
                (va(2), 110),
                (va(3), 100),
                (va(4), 125),
                (va(5), 130),
            ],
            1.0,
        );
        assert_eq!(
            m.bucket(2).collect::<Vec<_>>(),
            [va(5), va(1), va(2), va(3), va(4)]
        );
        // A region missing from a sample leaves the map.
        m.update(&[(va(1), 120)], 1.0);
        assert_eq!(m.len(), 1);
        assert_eq!(m.top(), Some(2));
    }

    #[test]
    fn the_ema_smooths_coverage_with_the_released_weight() {
        let mut m = AccessMap::default();
        m.update(&[(va(1), 500)], 0.4);
        assert_eq!(m.top(), Some(9));
        // 0.4 * 0 + 0.6 * 500 = 300: bucket 6, then 180: bucket 3.
        m.update(&[(va(1), 0)], 0.4);
        assert_eq!(m.top(), Some(6));
        m.update(&[(va(1), 0)], 0.4);
        assert_eq!(m.top(), Some(3));
    }

    #[test]
    fn pmu_serves_the_highest_overhead_and_skips_processes_below_the_threshold() {
        let mut h = HawkeyePolicy::new(HawkeyeConfig {
            variant: Variant::Pmu,
            ..HawkeyeConfig::default()
        });
        for p in 1..=3 {
            h.process_started(Pid(p));
            for r in 0..4 {
                h.maps[p as usize - 1]
                    .1
                    .insert(va(p as u64 * 100 + r), 9, false);
            }
        }
        // Process 2 suffers most, 3 is within 10% of it, 1 is below 2%.
        let overhead = [0.01, 0.40, 0.37];
        let serve = |h: &mut HawkeyePolicy, overhead: &[f64]| {
            let i = h.take_pmu(overhead).unwrap().0;
            h.maps[i].0 .0
        };
        let served: Vec<u32> = (0..4).map(|_| serve(&mut h, &overhead)).collect();
        assert_eq!(served, [2, 3, 2, 3]);
        // Far apart: only the highest is served.
        let overhead = [0.30, 0.10, 0.05];
        let served: Vec<u32> = (0..3).map(|_| serve(&mut h, &overhead)).collect();
        assert_eq!(served, [1, 1, 1]);
        // Everyone below the threshold: nothing.
        assert!(h.take_pmu(&[0.01, 0.0, 0.019]).is_none());
    }
}
