//! SysMon-H (the SysMon-H / H-Policy paper, section 3): which huge pages a process uses,
//! from sampled TLB misses per 2 MB region, with accessed bits to confirm the cold ones.
//!
//! Every [`SysMonConfig::period`] (30 s) a round monitors the live processes one by one
//! ("SysMon-H collects the information for each application one by one"):
//! 1. **Phase one.** The process's TLB misses are sampled for [`SysMonConfig::window`]
//!    (5 s) by a PEBS-like sampler ([`crate::MemoryOps::start_tlb_sampling`]: in the
//!    model, `perf`'s default 4,000 samples a second, 250 ns each; see
//!    [`SysMonConfig::sampling`]). Each huge page's misses are the samples on its 4 KB
//!    pages; each 4 KB page of a region mapped by base pages keeps its own.
//! 2. **Phase two.** Huge pages with fewer than [`SysMonConfig::cold_misses`] (10) misses
//!    may still be "very hot" pages that stay in the TLB. Their accessed bits are
//!    cleared, then read and cleared [`SysMonConfig::checks`] (3) times
//!    [`SysMonConfig::check_interval`] (1 s) apart; a page found accessed at least
//!    [`SysMonConfig::hot_checks`] (2) times is very hot. Each check costs two
//!    page-table-entry reads a huge page (read, then clear), as Ingens' tracker does.
//! 3. **H-Tree.** The result is the process's [`HTree`]: its huge pages sorted by misses,
//!    with its total misses and the watermark `high_tlb` (50) at the root, and its
//!    base-page regions with the share of their 4 KB pages that are hot.
//!
//! Section 3.3 compares phase one with "the approach that only samples the access_bit"
//! (200 loops during a window); [`Source::AccessedBits`] is that approach, for the
//! comparison: every huge page's accessed bit read and cleared `scans` times over the
//! window, its heat the number of scans that found it set, and no phase two (every page
//! was already checked). Its scans cost what phase two's checks cost.
//!
//! Choices where the paper is silent:
//! - A process's round is its window then its checks (8 s with the defaults); the next
//!   process's window starts after. A round that outlasts the period delays the next.
//! - The paper gives no count for a hot 4 KB page. A 4 KB page is hot here when its
//!   misses reach `high_tlb / 512`: a region of such pages would, mapped by one huge
//!   page, reach `high_tlb`.
//! - The H-Tree is an ordered map (a B-tree), not the paper's unbalanced binary sort
//!   tree: the order, the root's watermark and the totals are the paper's; the shape
//!   only changes the cost of a lookup, which the model does not charge.

use crate::{MemoryOps, TlbMisses, TlbSampling};
use hugemm_hw::{Nanos, Picos, Pid, VirtAddr};
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};

/// Bytes of a huge page (x86-64).
const HUGE: u64 = 2 << 20;
/// Base pages in a huge page.
const FANOUT: f64 = 512.0;

/// Where phase one's heat comes from.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// Sampled TLB misses: SysMon-H.
    TlbMisses,
    /// Accessed bits read and cleared `scans` times over the window, evenly spaced (the
    /// prior approaches of section 3.3; the paper's runs used 200): a huge page's heat
    /// is the number of scans that found it accessed.
    AccessedBits {
        /// Scans of every huge page per window.
        scans: u32,
    },
}

/// SysMon-H's knobs, with the paper's values.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SysMonConfig {
    /// Where phase one's heat comes from (TLB misses).
    pub source: Source,
    /// Time from the start of one round to the start of the next (30 s).
    pub period: Nanos,
    /// How long each process's TLB misses are sampled (5 s).
    pub window: Nanos,
    /// The sampler: 4,000 samples a second (`perf`'s default frequency), 250 ns each
    /// (assumed: the order of one PEBS record written by the assist, with the buffer
    /// drained rarely; the paper gives no figure).
    pub sampling: TlbSampling,
    /// Misses below which a huge page gets phase two's checks (10).
    pub cold_misses: f64,
    /// Misses at which a huge page is highly utilised: the H-Tree's root (50).
    pub high_tlb: f64,
    /// Accessed-bit checks of phase two (3).
    pub checks: u32,
    /// Time between them (1 s).
    pub check_interval: Nanos,
    /// Checks that must find the page accessed for it to be very hot (2).
    pub hot_checks: u32,
}

impl Default for SysMonConfig {
    fn default() -> SysMonConfig {
        SysMonConfig {
            source: Source::TlbMisses,
            period: Nanos::from_millis(30_000),
            window: Nanos::from_millis(5_000),
            sampling: TlbSampling {
                hz: 4000.0,
                cost: Nanos(250),
            },
            cold_misses: 10.0,
            high_tlb: 50.0,
            checks: 3,
            check_interval: Nanos::from_millis(1_000),
            hot_checks: 2,
        }
    }
}

/// One huge page in an [`HTree`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HugeEntry {
    /// Its region.
    pub region: VirtAddr,
    /// TLB misses sampled on it in the window.
    pub misses: f64,
    /// Phase two found it accessed in at least `hot_checks` checks.
    pub very_hot: bool,
}

/// One 2 MB region mapped by base pages in an [`HTree`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BaseRegion {
    /// Its first address.
    pub region: VirtAddr,
    /// TLB misses sampled on its pages.
    pub misses: f64,
    /// Its 4 KB pages whose misses reached `high_tlb / 512`.
    pub hot_pages: u32,
}

/// A process's huge pages sorted by TLB misses (the paper's Figure 3), and its
/// base-page regions.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HTree {
    /// The root's watermark: misses at which a huge page is highly utilised.
    pub high_tlb: f64,
    /// All misses sampled in the window (huge and base pages).
    pub total_misses: f64,
    /// Huge pages by (misses in thousandths, address): the left part is the coldest.
    huge: BTreeMap<(u64, u64), HugeEntry>,
    /// Base-page regions by address.
    pub base: Vec<BaseRegion>,
    /// When the window ended.
    pub measured_at: Nanos,
}

impl HTree {
    /// The tree of one window's misses, `huge` being the process's huge regions then.
    pub fn build(misses: &TlbMisses, huge: &[VirtAddr], high_tlb: f64, at: Nanos) -> HTree {
        let mut per_region: BTreeMap<u64, (f64, u32)> = BTreeMap::new();
        let hot = high_tlb / FANOUT;
        for &(page, n) in &misses.pages {
            let e = per_region.entry(page.0 & !(HUGE - 1)).or_default();
            e.0 += n;
            e.1 += u32::from(n >= hot);
        }
        let mut tree = HTree {
            high_tlb,
            total_misses: misses.samples,
            measured_at: at,
            ..HTree::default()
        };
        for &r in huge {
            let misses = per_region.remove(&r.0).map_or(0.0, |e| e.0);
            tree.insert(HugeEntry {
                region: r,
                misses,
                very_hot: false,
            });
        }
        tree.base = per_region
            .into_iter()
            .map(|(r, (misses, hot_pages))| BaseRegion {
                region: VirtAddr(r),
                misses,
                hot_pages,
            })
            .collect();
        tree
    }

    fn insert(&mut self, e: HugeEntry) {
        let key = ((e.misses * 1000.0).round() as u64, e.region.0);
        self.huge.insert(key, e);
    }

    /// Huge pages, coldest first.
    pub fn huge_pages(&self) -> impl Iterator<Item = &HugeEntry> {
        self.huge.values()
    }

    /// The under-utilised huge pages, coldest first: below `high_tlb` and not very hot
    /// (the left part of the tree).
    pub fn underutilised(&self) -> impl Iterator<Item = &HugeEntry> {
        let high = self.high_tlb;
        self.huge
            .values()
            .take_while(move |e| e.misses < high)
            .filter(|e| !e.very_hot)
    }

    /// Mark the huge page at `region` very hot (phase two).
    pub fn mark_very_hot(&mut self, region: VirtAddr) {
        if let Some(e) = self.huge.values_mut().find(|e| e.region == region) {
            e.very_hot = true;
        }
    }

    /// Forget the huge page at `region` (it was split).
    pub fn remove(&mut self, region: VirtAddr) {
        self.huge.retain(|_, e| e.region != region);
    }
}

/// Where a round is.
#[derive(Clone, Debug, PartialEq)]
enum Stage {
    /// Waiting for the next round.
    Idle,
    /// Sampling `pid`'s TLB misses.
    Window { pid: Pid },
    /// Scanning `pid`'s accessed bits ([`Source::AccessedBits`]): `done` scans made of
    /// its huge pages, with how many times each was found accessed.
    Scans {
        pid: Pid,
        done: u32,
        pages: Vec<(VirtAddr, u32)>,
    },
    /// Phase two for `pid`: `done` checks made of the cold huge pages `cold`, with how
    /// many times each was found accessed.
    Checks {
        pid: Pid,
        done: u32,
        cold: Vec<(VirtAddr, u32)>,
    },
}

/// The monitor's state (see the module doc).
#[derive(Clone, Debug)]
pub struct SysMon {
    cfg: SysMonConfig,
    stage: Stage,
    /// Processes left in this round.
    queue: VecDeque<Pid>,
    /// The latest tree of each process.
    trees: BTreeMap<u32, HTree>,
    /// The window's misses, kept for phase two.
    pending: Option<HTree>,
    /// When the current round started.
    round_start: Nanos,
    /// TLB-miss samples taken over the run.
    pub samples: f64,
    /// What they cost the sampled processes.
    pub sampling_cost: Nanos,
    /// Accessed-bit checks of phase two made (one a huge page a check).
    pub checks_made: u64,
    /// Accessed-bit reads of [`Source::AccessedBits`]'s scans (one a huge page a scan).
    pub scanned: u64,
}

impl SysMon {
    /// A monitor with `cfg`, idle until its first round.
    pub fn new(cfg: SysMonConfig) -> SysMon {
        SysMon {
            cfg,
            stage: Stage::Idle,
            queue: VecDeque::new(),
            trees: BTreeMap::new(),
            pending: None,
            round_start: Nanos::ZERO,
            samples: 0.0,
            sampling_cost: Nanos::ZERO,
            checks_made: 0,
            scanned: 0,
        }
    }

    /// The knobs.
    pub fn config(&self) -> &SysMonConfig {
        &self.cfg
    }

    /// The latest H-Tree of `pid`.
    pub fn tree(&self, pid: Pid) -> Option<&HTree> {
        self.trees.get(&pid.0)
    }

    /// The latest H-Tree of `pid`, to change (a split page leaves it).
    pub fn tree_mut(&mut self, pid: Pid) -> Option<&mut HTree> {
        self.trees.get_mut(&pid.0)
    }

    /// Processes with a tree, fewest total misses first.
    pub fn by_total_misses(&self) -> Vec<Pid> {
        let mut v: Vec<(f64, u32)> = self
            .trees
            .iter()
            .map(|(&p, t)| (t.total_misses, p))
            .collect();
        v.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        v.into_iter().map(|(_, p)| Pid(p)).collect()
    }

    /// One step of the monitor at `ops.now()`; returns its CPU time and how long to sleep.
    pub fn step(&mut self, ops: &mut dyn MemoryOps) -> (Nanos, Nanos) {
        let now = ops.now();
        match std::mem::replace(&mut self.stage, Stage::Idle) {
            Stage::Idle => {
                if self.queue.is_empty() {
                    self.round_start = now;
                    self.queue = ops.processes().into();
                }
                self.next_process(ops)
            }
            Stage::Window { pid } => {
                let Some(misses) = ops.take_tlb_misses(pid) else {
                    return self.next_process(ops);
                };
                self.samples += misses.samples;
                self.sampling_cost += misses.overhead;
                let huge = ops.huge_regions(pid);
                let tree = HTree::build(&misses, &huge, self.cfg.high_tlb, now);
                let cold: Vec<(VirtAddr, u32)> = tree
                    .huge_pages()
                    .take_while(|e| e.misses < self.cfg.cold_misses)
                    .map(|e| (e.region, 0))
                    .collect();
                self.pending = Some(tree);
                if cold.is_empty() || self.cfg.checks == 0 {
                    self.publish(pid);
                    return self.next_process(ops);
                }
                // Clear the bits, so the first check sees one interval's accesses.
                let cpu = self.check(ops, pid, &cold, false).0;
                self.checks_made += cold.len() as u64;
                self.stage = Stage::Checks { pid, done: 0, cold };
                (cpu, self.cfg.check_interval)
            }
            Stage::Scans { pid, done, pages } => {
                let (cpu, pages) = self.check(ops, pid, &pages, true);
                self.scanned += pages.len() as u64;
                let Source::AccessedBits { scans } = self.cfg.source else {
                    unreachable!("scans only with accessed bits")
                };
                if done + 1 < scans {
                    self.stage = Stage::Scans {
                        pid,
                        done: done + 1,
                        pages,
                    };
                    return (cpu, self.scan_interval(scans));
                }
                self.pending = Some(HTree::build(
                    &scan_counts(&pages),
                    &pages.iter().map(|p| p.0).collect::<Vec<_>>(),
                    self.cfg.high_tlb,
                    now,
                ));
                self.publish(pid);
                let (more, sleep) = self.next_process(ops);
                (cpu + more, sleep)
            }
            Stage::Checks { pid, done, cold } => {
                let (cpu, cold) = self.check(ops, pid, &cold, true);
                self.checks_made += cold.len() as u64;
                let done = done + 1;
                if done < self.cfg.checks {
                    self.stage = Stage::Checks { pid, done, cold };
                    return (cpu, self.cfg.check_interval);
                }
                let hot: Vec<VirtAddr> = cold
                    .iter()
                    .filter(|c| c.1 >= self.cfg.hot_checks)
                    .map(|c| c.0)
                    .collect();
                if let Some(tree) = &mut self.pending {
                    for &r in &hot {
                        tree.mark_very_hot(r);
                    }
                }
                ops.note_phase_two(pid, cold.len() as u64, hot.len() as u64);
                self.publish(pid);
                let (more, sleep) = self.next_process(ops);
                (cpu + more, sleep)
            }
        }
    }

    /// Read and clear the accessed bits of `cold`, counting those found set when
    /// `count`; returns the CPU time and the updated counts.
    fn check(
        &mut self,
        ops: &mut dyn MemoryOps,
        pid: Pid,
        cold: &[(VirtAddr, u32)],
        count: bool,
    ) -> (Nanos, Vec<(VirtAddr, u32)>) {
        let per_pte = ops.scan_cost_per_pte();
        let mut cpu = Picos(0);
        let out = cold
            .iter()
            .map(|&(r, n)| {
                // SysMon-H's prototype (Linux 3.16) reads a huge page's bit through the
                // kernel's reverse-map path, which flushes a young huge entry on x86
                // (`pmdp_clear_flush_young`): phase two exists to find hot pages whose
                // translations stay in the TLB, which a no-flush clear could never see.
                let set = ops.clear_referenced(pid, r) > 0;
                cpu += Picos(per_pte.0 * 2);
                (r, n + u32::from(count && set))
            })
            .collect();
        (cpu.to_nanos(), out)
    }

    fn publish(&mut self, pid: Pid) {
        if let Some(tree) = self.pending.take() {
            self.trees.insert(pid.0, tree);
        }
    }

    /// Time between two scans of [`Source::AccessedBits`].
    fn scan_interval(&self, scans: u32) -> Nanos {
        Nanos((self.cfg.window.0 / u64::from(scans.max(1))).max(1))
    }

    /// Start the next process's window, or sleep until the next round.
    fn next_process(&mut self, ops: &mut dyn MemoryOps) -> (Nanos, Nanos) {
        while let Some(pid) = self.queue.pop_front() {
            if let Source::AccessedBits { scans } = self.cfg.source {
                let pages: Vec<(VirtAddr, u32)> =
                    ops.huge_regions(pid).into_iter().map(|r| (r, 0)).collect();
                if pages.is_empty() || scans == 0 {
                    continue;
                }
                // Clear the bits, so the first scan sees one interval's accesses.
                let (cpu, pages) = self.check(ops, pid, &pages, false);
                self.scanned += pages.len() as u64;
                self.stage = Stage::Scans {
                    pid,
                    done: 0,
                    pages,
                };
                return (cpu, self.scan_interval(scans));
            }
            if ops.start_tlb_sampling(pid, self.cfg.sampling) {
                self.stage = Stage::Window { pid };
                return (Nanos::ZERO, self.cfg.window);
            }
        }
        self.stage = Stage::Idle;
        let next = self.round_start + self.cfg.period;
        (Nanos::ZERO, next.saturating_sub(ops.now()).max(Nanos(1)))
    }

    /// Forget a process that exited.
    pub fn process_exited(&mut self, pid: Pid) {
        self.trees.remove(&pid.0);
        self.queue.retain(|p| *p != pid);
    }
}

/// Accessed-bit scan counts as the misses [`HTree::build`] reads: each huge page's count
/// on its first 4 KB page.
fn scan_counts(pages: &[(VirtAddr, u32)]) -> TlbMisses {
    TlbMisses {
        pages: pages
            .iter()
            .filter(|p| p.1 > 0)
            .map(|&(r, n)| (r, f64::from(n)))
            .collect(),
        samples: pages.iter().map(|p| f64::from(p.1)).sum(),
        walks: 0.0,
        overhead: Nanos::ZERO,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn misses(pages: &[(u64, f64)]) -> TlbMisses {
        TlbMisses {
            pages: pages.iter().map(|&(a, n)| (VirtAddr(a), n)).collect(),
            samples: pages.iter().map(|p| p.1).sum(),
            walks: 0.0,
            overhead: Nanos::ZERO,
        }
    }

    #[test]
    fn the_tree_sorts_huge_pages_by_misses_and_keeps_base_regions_apart() {
        let h = |i: u64| i * HUGE;
        let m = misses(&[
            (h(0) + 4096, 30.0),
            (h(0) + 8192, 40.0), // huge page 0: 70
            (h(1), 5.0),         // huge page 1: 5
            (h(3), 0.2),         // base region 3: one page above 50/512
            (h(3) + 4096, 0.05),
        ]);
        let mut t = HTree::build(
            &m,
            &[VirtAddr(h(0)), VirtAddr(h(1)), VirtAddr(h(2))],
            50.0,
            Nanos(7),
        );
        let order: Vec<(u64, f64)> = t.huge_pages().map(|e| (e.region.0, e.misses)).collect();
        assert_eq!(order, vec![(h(2), 0.0), (h(1), 5.0), (h(0), 70.0)]);
        assert_eq!(t.total_misses, 75.25);
        let cold: Vec<u64> = t.underutilised().map(|e| e.region.0).collect();
        assert_eq!(cold, vec![h(2), h(1)], "below high_tlb, coldest first");
        t.mark_very_hot(VirtAddr(h(1)));
        let cold: Vec<u64> = t.underutilised().map(|e| e.region.0).collect();
        assert_eq!(cold, vec![h(2)], "a very hot page is not under-utilised");
        assert_eq!(
            t.base,
            vec![BaseRegion {
                region: VirtAddr(h(3)),
                misses: 0.25,
                hot_pages: 1
            }]
        );
        t.remove(VirtAddr(h(2)));
        assert_eq!(t.huge_pages().count(), 2);
    }
}
