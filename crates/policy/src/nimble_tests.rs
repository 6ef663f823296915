//! Nimble's policy over the kernel model: hot pages on the slow node come up, cold ones
//! on the fast node go down, by exchange or by two migrations, and nothing moves when the
//! fast node is full of hot pages.

use super::*;
use hugemm_hw::{Geometry, PageSize};
use hugemm_mm::{HugeAdvice, Kernel, MemConfig, MigrationCosts, MmCosts, MmError};

/// [`TierOps`] straight over a kernel (the engine's adds sampled-mode bookkeeping).
struct KernelOps<'a> {
    k: &'a mut Kernel,
    pids: Vec<Pid>,
}

impl TierOps for KernelOps<'_> {
    fn tier_processes(&self) -> Vec<Pid> {
        self.pids.clone()
    }
    fn node_count(&self) -> usize {
        self.k.phys().node_count()
    }
    fn node_free_bytes(&self, node: NodeId) -> u64 {
        self.k.phys().node_frames_free(node) * BASE
    }
    fn node_bytes(&self, node: NodeId) -> u64 {
        self.k
            .phys()
            .node_frames(node)
            .map_or(0, |(a, b)| (b.0 - a.0) * BASE)
    }
    fn scan_pages(&mut self, pid: Pid, out: &mut Vec<PageScan>) -> u64 {
        let regions: Vec<VirtAddr> = self.k.regions(pid).collect();
        regions
            .into_iter()
            .map(|r| self.k.scan_pages(pid, r, out) as u64)
            .sum()
    }
    fn scan_cost_per_entry(&self) -> Nanos {
        Nanos(10)
    }
    fn move_pages(
        &mut self,
        pid: Pid,
        pages: &[VirtAddr],
        to: NodeId,
        mech: &Mechanism,
    ) -> Result<MigrateOutcome, MmError> {
        self.k.move_pages(pid, pages, to, mech)
    }
    fn exchange_pages(
        &mut self,
        pid: Pid,
        pairs: &[(VirtAddr, VirtAddr)],
        mech: &Mechanism,
    ) -> Result<MigrateOutcome, MmError> {
        self.k.exchange_pages(pid, pairs, mech)
    }
}

fn kernel() -> Kernel {
    let costs = MmCosts {
        fault_trap: Nanos(1000),
        alloc: Nanos(100),
        zero_gbps: 10.0,
        copy_gbps: 4.0,
        pte_update: Nanos(10),
        tlb_flush: Nanos(300),
        zero_nt_gbps: 10.0,
        scan_gbps: 20.0,
        scan_page: Nanos(100),
        compound_tail: Nanos(2),
    };
    let cfg = MemConfig {
        bytes: 32 << 20,
        geometry: Geometry::X86_64,
    };
    let mut k = Kernel::with_nodes(&cfg, &[16 << 20, 16 << 20], costs).unwrap();
    k.set_migration_costs(MigrationCosts {
        call: Nanos(50_000),
        page: Nanos(2_000),
        huge_page: Nanos(30_000),
        free: Nanos(100),
        thread_launch: Nanos(10_000),
        copy_gbps: 2.0,
        link_gbps: 6.0,
    })
    .unwrap();
    k
}

/// A process with `n` huge pages faulted on `node` (the allocator's home set to it).
fn huge_pages(k: &mut Kernel, pid: Pid, n: u64, node: u8) -> Vec<VirtAddr> {
    k.set_home_node(NodeId(node)).unwrap();
    let va = k.mmap(pid, n * HUGE, HugeAdvice::Hugepage).unwrap();
    let pages: Vec<VirtAddr> = (0..n).map(|i| VirtAddr(va.0 + i * HUGE)).collect();
    for &p in &pages {
        k.fault(pid, p, true, PageSize::Huge);
    }
    k.set_home_node(NodeId(0)).unwrap();
    pages
}

fn node(k: &Kernel, pid: Pid, va: VirtAddr) -> NodeId {
    k.phys()
        .node_of(hugemm_hw::Pfn(k.translate(pid, va).unwrap().pa / BASE))
}

/// Touch `pages`, run the policy once.
fn period(p: &mut NimblePolicy, k: &mut Kernel, pid: Pid, touched: &[VirtAddr]) -> TierRun {
    // No MMU here: a reference to a page whose young huge entry the last scan flushed
    // walks, and the walk sets the accessed bit (a touch alone no longer does).
    for &va in touched {
        k.touch(pid, va, false);
        k.mark_accessed(pid, va);
    }
    p.run(&mut KernelOps { k, pids: vec![pid] })
}

/// Node 0 holds 6 cold huge pages and has room for one more beyond the reserve; node 1
/// holds 3 hot ones.
fn setup() -> (Kernel, Pid, Vec<VirtAddr>, Vec<VirtAddr>) {
    let mut k = kernel();
    let pid = k.create_process();
    let hot = huge_pages(&mut k, pid, 3, 1);
    let cold = huge_pages(&mut k, pid, 6, 0);
    assert!(hot.iter().all(|&h| node(&k, pid, h) == NodeId(1)));
    assert!(cold.iter().all(|&c| node(&k, pid, c) == NodeId(0)));
    (k, pid, hot, cold)
}

#[test]
fn hot_pages_come_up_and_cold_ones_go_down_by_exchange() {
    let (mut k, pid, hot, cold) = setup();
    let mut p = NimblePolicy::new(NimbleConfig::default());
    // First run: every page was just written, so every page is active; hot pages on
    // node 1 are promoted while node 0 has room (one fits).
    let first = period(&mut p, &mut k, pid, &[]);
    let up = hot
        .iter()
        .filter(|&&h| node(&k, pid, h) == NodeId(0))
        .count();
    assert_eq!(up, 1, "one huge page of room on node 0");
    assert!(first.cpu > Nanos::ZERO);
    // Second run: only the hot pages were referenced; the cold ones are inactive on
    // node 0 and are exchanged with the hot ones still on node 1.
    let second = period(&mut p, &mut k, pid, &hot);
    assert!(
        hot.iter().all(|&h| node(&k, pid, h) == NodeId(0)),
        "every hot page up"
    );
    let down = cold
        .iter()
        .filter(|&&c| node(&k, pid, c) == NodeId(1))
        .count();
    assert_eq!(down, 2, "two cold pages swapped down");
    assert!(second
        .stalls
        .iter()
        .any(|&(q, s)| q == pid && s > Nanos::ZERO));
    assert_eq!(k.huge_pages(pid), 9, "native migration keeps huge pages");
    k.check_invariants().unwrap();
    // Third run: hot pages are all up; nothing to do but scan.
    let before = k.tier_stats();
    period(&mut p, &mut k, pid, &hot);
    assert_eq!(k.tier_stats(), before);
}

#[test]
fn without_exchange_cold_pages_go_down_first_then_hot_ones_up() {
    let (mut k, pid, hot, cold) = setup();
    let cfg = NimbleConfig {
        exchange: false,
        ..NimbleConfig::default()
    };
    let mut p = NimblePolicy::new(cfg);
    period(&mut p, &mut k, pid, &[]);
    period(&mut p, &mut k, pid, &hot);
    assert!(hot.iter().all(|&h| node(&k, pid, h) == NodeId(0)));
    assert!(
        cold.iter()
            .filter(|&&c| node(&k, pid, c) == NodeId(1))
            .count()
            >= 2
    );
    k.check_invariants().unwrap();
}

#[test]
fn linux_base_page_migration_splits_the_huge_pages_it_moves() {
    let (mut k, pid, hot, _) = setup();
    let cfg = NimbleConfig {
        mechanism: Mechanism::LINUX,
        exchange: false,
        ..NimbleConfig::default()
    };
    let mut p = NimblePolicy::new(cfg);
    period(&mut p, &mut k, pid, &[]);
    period(&mut p, &mut k, pid, &hot);
    assert!(hot.iter().all(|&h| node(&k, pid, h) == NodeId(0)));
    assert!(k.huge_pages(pid) < 9, "moved huge pages were split");
    k.check_invariants().unwrap();
}

#[test]
fn a_fast_node_full_of_hot_pages_keeps_them() {
    let (mut k, pid, hot, cold) = setup();
    let mut p = NimblePolicy::new(NimbleConfig::default());
    let all: Vec<VirtAddr> = hot.iter().chain(&cold).copied().collect();
    period(&mut p, &mut k, pid, &all);
    let stats = k.tier_stats();
    period(&mut p, &mut k, pid, &all);
    assert_eq!(
        k.tier_stats(),
        stats,
        "no inactive page on node 0: no migration"
    );
    assert!(cold.iter().all(|&c| node(&k, pid, c) == NodeId(0)));
}

#[test]
fn more_pages_in_flight_stall_the_process_longer() {
    let stall_with = |in_flight| {
        let (mut k, pid, hot, _) = setup();
        let cfg = NimbleConfig {
            mechanism: Mechanism {
                in_flight,
                ..NimbleConfig::default().mechanism
            },
            ..NimbleConfig::default()
        };
        let mut p = NimblePolicy::new(cfg);
        period(&mut p, &mut k, pid, &[]);
        let run = period(&mut p, &mut k, pid, &hot);
        run.stalls.iter().map(|s| s.1 .0).sum::<u64>()
    };
    assert!(stall_with(0) > stall_with(1));
}
