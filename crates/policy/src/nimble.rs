//! Nimble's tiering policy (Yan et al., ASPLOS'19, section 3.2 and Figure 7; the
//! released `do_mm_manage`).
//!
//! Every [`NimbleConfig::period`] (5 s, the paper's), for each process in turn:
//! 1. **Lists.** Every mapped page (a huge page counts as one) has its referenced bit
//!    tested and cleared. A referenced page is on its node's active list, an unreferenced
//!    one on its inactive list; a page keeps the time it entered its list, so the inactive
//!    list's oldest pages are the coldest. Figure 7(b) with no code pages and no sharing
//!    (the workloads have neither) is exactly this: a page moves active -> inactive when
//!    its hardware bit is clear and inactive -> active when it is set; the software bit
//!    decides nothing for these pages. Unlike Linux, inactive pages are never reclaimed:
//!    they are the candidates to leave the fast node.
//! 2. **Promote.** Active pages of the slow nodes move to node 0 (the fast node), oldest
//!    first, while node 0 has room beyond a reserve ([`NimbleConfig::fast_reserve_pct`],
//!    so the allocator keeps some free memory on it).
//! 3. **Make room.** If hot pages are left, inactive pages of node 0 go down, coldest
//!    first: with [`NimbleConfig::exchange`], hot and cold pages of one size are
//!    exchanged in pairs; otherwise enough cold pages are moved to node 1 first and the
//!    hot ones that then fit are moved up. With no inactive page on node 0 nothing moves
//!    ("if the fast memory is full and does not contain inactive pages, no migration will
//!    occur").
//!
//! New memory is placed by the allocator (node 0 first while it has room); this policy
//! never migrates on the allocation path.
//!
//! Cost: the daemon's CPU is the scan (one page-table entry read per entry examined) and
//! every migration call's time. A page in flight cannot be used: a process whose hot
//! pages are being moved waits, for each call, the call's time divided by its batches
//! (pages in flight at once, [`Mechanism::in_flight`]) times the share of the process's
//! active pages the call moves: a fluid approximation of the chance that its next
//! references fall on a page while that page is in flight. Cold pages are taken to be
//! unreferenced while they move.

use crate::tiering::{TierOps, TierRun, Tiering};
use hugemm_hw::{Nanos, Pid, VirtAddr};
use hugemm_mm::{Mechanism, MigrateOutcome, NodeId, PageScan, ThpMigration};
use serde::Serialize;
use std::collections::BTreeMap;

/// The knobs, with the paper's defaults (Opt. Exchange Pages).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct NimbleConfig {
    /// Time between runs (5 s).
    pub period: Nanos,
    /// How pages migrate: native THP migration, 4 copy threads, 8 pages in flight.
    pub mechanism: Mechanism,
    /// Exchange hot and cold pages when the fast node is full (else two migrations).
    pub exchange: bool,
    /// Share of node 0 (percent) promotions leave free.
    pub fast_reserve_pct: f64,
}

impl Default for NimbleConfig {
    fn default() -> NimbleConfig {
        NimbleConfig {
            period: Nanos(5_000_000_000),
            mechanism: Mechanism {
                thp: ThpMigration::Native,
                threads: 4,
                in_flight: 8,
            },
            exchange: true,
            fast_reserve_pct: 1.0,
        }
    }
}

/// A page's place in its node's lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Listed {
    active: bool,
    /// The run at which it entered its list.
    since: u64,
}

/// A page this run may move.
#[derive(Clone, Copy, Debug)]
struct Candidate {
    since: u64,
    va: VirtAddr,
    huge: bool,
}

impl Candidate {
    fn bytes(&self, huge_bytes: u64, base_bytes: u64) -> u64 {
        if self.huge {
            huge_bytes
        } else {
            base_bytes
        }
    }
}

/// Nimble's policy.
#[derive(Clone, Debug)]
pub struct NimblePolicy {
    cfg: NimbleConfig,
    /// Per process, each page's list state, by address.
    lists: BTreeMap<Pid, BTreeMap<u64, Listed>>,
    runs: u64,
}

const BASE: u64 = 4096;
const HUGE: u64 = 2 << 20;

impl NimblePolicy {
    /// A policy with `cfg`.
    pub fn new(cfg: NimbleConfig) -> NimblePolicy {
        NimblePolicy {
            cfg,
            lists: BTreeMap::new(),
            runs: 0,
        }
    }

    /// Update `pid`'s lists from `scan`; returns the slow node's active pages and node
    /// 0's inactive pages, oldest first, and the count of active pages.
    fn classify(&mut self, pid: Pid, scan: &[PageScan]) -> (Vec<Candidate>, Vec<Candidate>, u64) {
        let run = self.runs;
        let old = self.lists.remove(&pid).unwrap_or_default();
        let mut lists = BTreeMap::new();
        let (mut hot, mut cold, mut active) = (Vec::new(), Vec::new(), 0);
        for p in scan {
            let was = old.get(&p.va.0).copied();
            let now = match (was, p.referenced) {
                (Some(l), r) if l.active == r => l,
                (_, r) => Listed {
                    active: r,
                    since: run,
                },
            };
            lists.insert(p.va.0, now);
            let c = Candidate {
                since: now.since,
                va: p.va,
                huge: p.huge,
            };
            active += now.active as u64;
            match (now.active, p.node) {
                (true, n) if n != NodeId(0) => hot.push(c),
                (false, NodeId(0)) => cold.push(c),
                _ => {}
            }
        }
        self.lists.insert(pid, lists);
        hot.sort_by_key(|c| (c.since, c.va));
        cold.sort_by_key(|c| (c.since, c.va));
        (hot, cold, active)
    }

    /// The time `pid` waits for the `hot` of its `active` pages moved by a call `o`.
    fn stall(&self, o: &MigrateOutcome, hot: usize, active: u64) -> Nanos {
        let pages = (o.base_pages + o.huge_pages).max(1);
        let batches = match self.cfg.mechanism.in_flight {
            0 => 1,
            n => pages.div_ceil(n as u64),
        };
        let share = (hot as f64 / active.max(1) as f64).min(1.0);
        Nanos((o.cost().0 as f64 * share / batches as f64).round() as u64)
    }

    /// Promote, then make room, for one process; adds to `out`.
    fn migrate(
        &self,
        ops: &mut dyn TierOps,
        pid: Pid,
        (hot, cold, active): (Vec<Candidate>, Vec<Candidate>, u64),
        out: &mut TierRun,
    ) {
        if hot.is_empty() {
            return;
        }
        let mech = self.cfg.mechanism;
        let fast = NodeId(0);
        let reserve = (ops.node_bytes(fast) as f64 * self.cfg.fast_reserve_pct / 100.0) as u64;
        let mut room = ops.node_free_bytes(fast).saturating_sub(reserve);
        let (mut up, mut rest) = (Vec::new(), Vec::new());
        for c in hot {
            let b = c.bytes(HUGE, BASE);
            if b <= room {
                room -= b;
                up.push(c.va);
            } else {
                rest.push(c);
            }
        }
        self.call(ops, pid, out, active, (up.len(), up.len()), |ops| {
            ops.move_pages(pid, &up, fast, &mech)
        });
        if rest.is_empty() || cold.is_empty() {
            return;
        }
        if self.cfg.exchange {
            let pairs = pair_by_size(&rest, &cold);
            let n = pairs.len();
            self.call(ops, pid, out, active, (n, n), |ops| {
                ops.exchange_pages(pid, &pairs, &mech)
            });
        } else {
            let need: u64 = rest.iter().map(|c| c.bytes(HUGE, BASE)).sum();
            let (mut down, mut freed) = (Vec::new(), 0);
            for c in &cold {
                if freed >= need {
                    break;
                }
                freed += c.bytes(HUGE, BASE);
                down.push(c.va);
            }
            self.call(ops, pid, out, active, (down.len(), 0), |ops| {
                ops.move_pages(pid, &down, NodeId(1), &mech)
            });
            let mut room = ops.node_free_bytes(fast).saturating_sub(reserve);
            let up: Vec<VirtAddr> = rest
                .iter()
                .filter(|c| {
                    let b = c.bytes(HUGE, BASE);
                    let fits = b <= room;
                    room -= if fits { b } else { 0 };
                    fits
                })
                .map(|c| c.va)
                .collect();
            self.call(ops, pid, out, active, (up.len(), up.len()), |ops| {
                ops.move_pages(pid, &up, fast, &mech)
            });
        }
    }

    /// Make one migration call of `pages` pages (or pairs), `hot` of them hot, unless it
    /// has none; charge its time and the stall of its hot pages.
    fn call(
        &self,
        ops: &mut dyn TierOps,
        pid: Pid,
        out: &mut TierRun,
        active: u64,
        (pages, hot): (usize, usize),
        f: impl FnOnce(&mut dyn TierOps) -> Result<MigrateOutcome, hugemm_mm::MmError>,
    ) {
        if pages == 0 {
            return;
        }
        let Ok(o) = f(ops) else {
            // The process exited or a knob is invalid (validated at load): nothing moved.
            return;
        };
        out.cpu += o.cost();
        let stall = self.stall(&o, hot, active);
        if stall > Nanos::ZERO {
            out.stalls.push((pid, stall));
        }
    }
}

/// Hot pages paired with cold pages of the same size, coldest first.
fn pair_by_size(hot: &[Candidate], cold: &[Candidate]) -> Vec<(VirtAddr, VirtAddr)> {
    let mut cold_huge = cold.iter().filter(|c| c.huge);
    let mut cold_base = cold.iter().filter(|c| !c.huge);
    hot.iter()
        .filter_map(|h| {
            let c = if h.huge {
                cold_huge.next()
            } else {
                cold_base.next()
            };
            c.map(|c| (h.va, c.va))
        })
        .collect()
}

impl Tiering for NimblePolicy {
    fn name(&self) -> &'static str {
        "nimble"
    }

    fn period(&self) -> Nanos {
        self.cfg.period
    }

    fn run(&mut self, ops: &mut dyn TierOps) -> TierRun {
        self.runs += 1;
        let mut out = TierRun::default();
        if ops.node_count() < 2 {
            return out;
        }
        let mut scan = Vec::new();
        for pid in ops.tier_processes() {
            scan.clear();
            let entries = ops.scan_pages(pid, &mut scan);
            out.cpu += Nanos(ops.scan_cost_per_entry().0 * entries);
            let lists = self.classify(pid, &scan);
            self.migrate(ops, pid, lists, &mut out);
        }
        out
    }

    fn process_exited(&mut self, pid: Pid) {
        self.lists.remove(&pid);
    }
}

#[cfg(test)]
#[path = "nimble_tests.rs"]
mod tests;
