//! Asynchronous pre-zeroing (HawkEye section 3.1; `hawkeye_modules/async-zero/
//! asynczero.c`): a rate-limited kernel thread that zeroes free memory ahead of the faults
//! that will need it, and what its stores do to the processes running beside it.
//!
//! - **Rate.** Every `period` the daemon zeroes up to `rate x period` free frames, whole
//!   free blocks, the largest first (`Kernel::prezero`), and sleeps. The default, 10,000
//!   pages a second in runs of one second, is the paper's figure and the released code's
//!   pace (ten 4 MB blocks, then a one-second sleep). Its CPU time is the bytes at the
//!   profile's zeroing bandwidth, with non-temporal or caching stores, on the daemon core.
//! - **Lists.** `paper`: HawkEye's two lists, anonymous faults take zeroed blocks first
//!   (`ZeroedFirst::Yes`), page cache and page tables dirty ones first, and blocks of any
//!   order are zeroed; `released`: the released code's per-frame flag, blocks taken in
//!   list order whatever they hold, and only maximal blocks zeroed.
//! - **Interference** (Figure 10). Two effects on the other cores, after each run:
//!   - *Shared-cache occupancy.* With caching stores every zeroed line is written
//!     through the last-level cache. The model fills each zeroed line into the
//!     last-level cache of every other core, where it takes the place of that core's
//!     least recently used line in its set, as it would in one cache shared by all
//!     cores: a co-runner whose working set lives in the last level loses the share of
//!     it the daemon's recent lines occupy. Limits: the profile sizes the last level as
//!     one core's share, so the daemon's lines compete with each co-runner's whole
//!     share (in a real shared cache they would also displace each other's, and
//!     adaptive insertion policies such as Intel's or AMD's may keep a streaming writer
//!     out of most ways); the lines of one run arrive at once, not spread over the
//!     period (keep `period` short, a few ms, when this matters); write-backs are not
//!     modelled. Non-temporal stores bypass the caches: no line is filled.
//!   - *Memory bandwidth.* Both kinds of store move the bytes to DRAM (caching stores
//!     also read each line first, for ownership: twice the traffic). Over the next
//!     period every other core sees DRAM latency raised as a single-server queue would
//!     at that utilisation, `latency / (1 - u)`, with `u` the daemon's traffic over the
//!     profile's `dram_gbps` (capped at 0.9). A profile without `dram_gbps` has no
//!     bandwidth term. Limits: one queue for all of memory, no bank or channel
//!     parallelism, and the victims' own traffic is not part of `u`.
//! - **Stress** (Figure 10's protocol): the daemon zeroes its whole budget every run
//!   even when no dirty free memory is left, going over free frames again in address
//!   order, to measure worst-case interference at a fixed rate.
//!
//! This module owns the daemon's timing, cost and side effects; the zeroing of free
//! blocks is the kernel model's.

use hugemm_hw::{Nanos, Pfn};
use hugemm_mm::{Kernel, MmCosts, PrezeroScope, ZeroedFirst};
use serde::Serialize;

/// The kind of store the daemon clears memory with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Stores {
    /// Non-temporal stores (`movnti`): bypass the caches.
    NonTemporal,
    /// Ordinary stores: through the caches.
    Caching,
}

/// How free memory is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ZeroLists {
    /// The paper's two lists (see the module doc).
    Paper,
    /// The released code's per-frame flag.
    Released,
}

/// Pre-zeroing's knobs (`[kernel.prezero]`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PrezeroConfig {
    /// Run the daemon.
    pub enabled: bool,
    /// Pages zeroed per second at most (10,000).
    pub rate_pages_per_s: u64,
    /// Time between runs (1 s).
    pub period: Nanos,
    /// Non-temporal (default) or caching stores.
    pub stores: Stores,
    /// The paper's two lists (default) or the released code's flag.
    pub lists: ZeroLists,
    /// Zero at the full rate even when nothing is left to zero (Figure 10's stress).
    pub stress: bool,
}

impl Default for PrezeroConfig {
    fn default() -> Self {
        PrezeroConfig {
            enabled: false,
            rate_pages_per_s: 10_000,
            period: Nanos::from_millis(1000),
            stores: Stores::NonTemporal,
            lists: ZeroLists::Paper,
            stress: false,
        }
    }
}

impl PrezeroConfig {
    /// What allocation does with zeroed blocks under these lists.
    pub fn zeroed_first(&self) -> ZeroedFirst {
        match self.lists {
            ZeroLists::Paper => ZeroedFirst::Yes,
            ZeroLists::Released => ZeroedFirst::No,
        }
    }

    fn scope(&self) -> PrezeroScope {
        match self.lists {
            ZeroLists::Paper => PrezeroScope::AllOrders,
            ZeroLists::Released => PrezeroScope::MaxOrder,
        }
    }

    /// Pages one run may zero.
    fn budget(&self) -> u64 {
        (self.rate_pages_per_s as f64 * self.period.0 as f64 / 1e9).round() as u64
    }
}

/// What one run of the daemon did.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct PrezeroRun {
    /// CPU time of the run.
    pub cpu: Nanos,
    /// Pages cleared (dirty free pages zeroed, and under stress pages zeroed again).
    pub pages: u64,
    /// Physical ranges (first frame, frames) whose lines caching stores wrote.
    pub cached: Vec<(Pfn, u64)>,
    /// DRAM traffic of the run, in bytes.
    pub traffic: u64,
    /// The free blocks zeroed (first frame, frames), not counting stress mode's re-zeroing
    /// (frames zeroed before, which a host under a guest backs already).
    pub zeroed: Vec<(Pfn, u64)>,
}

/// The daemon's state.
#[derive(Clone, Debug, Default)]
pub(crate) struct Prezero {
    /// Pages of budget carried over (a run zeroes whole blocks only).
    carry: u64,
    /// Under stress, the next frame to zero again.
    cursor: u64,
    /// Totals, for the results.
    pub pages: u64,
    pub bytes: u64,
    pub traffic: u64,
}

impl Prezero {
    /// One run: zero what the rate allows.
    pub fn run(&mut self, kernel: &mut Kernel, cfg: &PrezeroConfig) -> PrezeroRun {
        let budget = cfg.budget() + self.carry;
        let blocks = kernel.prezero(budget, cfg.scope());
        let zeroed: u64 = blocks.iter().map(|b| 1u64 << b.1 .0).sum();
        // Keep at most one run's leftover: a run that found nothing dirty does not bank
        // credit for later.
        self.carry = if zeroed == 0 {
            0
        } else {
            (budget - zeroed).min(cfg.budget())
        };
        let mut cached = Vec::new();
        if cfg.stores == Stores::Caching {
            cached.extend(blocks.iter().map(|&(pfn, o)| (pfn, 1u64 << o.0)));
        }
        let mut pages = zeroed;
        if cfg.stress && pages < cfg.budget() {
            let again = cfg.budget() - pages;
            cached.extend(self.rezero(kernel, again, cfg.stores == Stores::Caching));
            pages += again;
        }
        let bytes = pages * kernel.geometry().base_bytes();
        let costs: &MmCosts = kernel.costs();
        let cpu = match cfg.stores {
            Stores::NonTemporal => costs.zero_nt_time(bytes),
            Stores::Caching => costs.zero_time(bytes),
        };
        // Caching stores read each line for ownership before writing it back.
        let traffic = match cfg.stores {
            Stores::NonTemporal => bytes,
            Stores::Caching => 2 * bytes,
        };
        self.pages += pages;
        self.bytes += bytes;
        self.traffic += traffic;
        PrezeroRun {
            cpu,
            pages,
            cached,
            traffic,
            zeroed: blocks.iter().map(|&(pfn, o)| (pfn, 1u64 << o.0)).collect(),
        }
    }

    /// Under stress: `pages` free frames zeroed again, from the cursor on in address
    /// order; returns their ranges when caching stores write their lines.
    fn rezero(&mut self, kernel: &Kernel, pages: u64, caching: bool) -> Vec<(Pfn, u64)> {
        let phys = kernel.phys();
        let total = phys.frames_total();
        let mut out: Vec<(Pfn, u64)> = Vec::new();
        let (mut left, mut seen) = (pages, 0);
        while left > 0 && seen < total {
            let pfn = self.cursor % total;
            self.cursor = (self.cursor + 1) % total;
            seen += 1;
            if phys.frame(Pfn(pfn)).is_some_and(|f| f.is_allocated()) {
                continue;
            }
            left -= 1;
            if caching {
                match out.last_mut() {
                    Some((start, n)) if start.0 + *n == pfn => *n += 1,
                    _ => out.push((Pfn(pfn), 1)),
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hugemm_hw::Geometry;
    use hugemm_mm::MemConfig;

    fn kernel() -> Kernel {
        let costs = MmCosts {
            fault_trap: Nanos(1000),
            alloc: Nanos(100),
            zero_gbps: 4.096,
            copy_gbps: 4.096,
            pte_update: Nanos(10),
            tlb_flush: Nanos(300),
            zero_nt_gbps: 8.192,
            scan_gbps: 8.192,
            scan_page: Nanos(100),
            compound_tail: Nanos::ZERO,
        };
        let mem = MemConfig {
            bytes: 64 << 20,
            geometry: Geometry::X86_64,
        };
        Kernel::new(&mem, costs).unwrap()
    }

    #[test]
    fn the_daemon_zeroes_at_its_rate_and_stops_when_all_is_zeroed() {
        let mut k = kernel();
        let cfg = PrezeroConfig {
            enabled: true,
            rate_pages_per_s: 4096,
            ..PrezeroConfig::default()
        };
        let mut d = Prezero::default();
        let run = d.run(&mut k, &cfg);
        assert_eq!(run.pages, 4096, "four order-10 blocks");
        // 16 MiB at 8.192 GB/s (non-temporal).
        assert_eq!(run.cpu, Nanos(2_048_000));
        assert!(run.cached.is_empty(), "non-temporal stores fill no line");
        assert_eq!(run.traffic, 16 << 20);
        for _ in 0..3 {
            d.run(&mut k, &cfg);
        }
        assert_eq!(k.phys().zeroed_free_frames(), k.phys().frames_total());
        assert_eq!(d.run(&mut k, &cfg).pages, 0, "nothing left");
        k.check_invariants().unwrap();
    }

    #[test]
    fn caching_stores_report_the_lines_they_wrote_and_twice_the_traffic() {
        let mut k = kernel();
        let cfg = PrezeroConfig {
            enabled: true,
            rate_pages_per_s: 1024,
            stores: Stores::Caching,
            ..PrezeroConfig::default()
        };
        let run = Prezero::default().run(&mut k, &cfg);
        assert_eq!(run.cached.iter().map(|r| r.1).sum::<u64>(), 1024);
        assert_eq!(run.traffic, 2 * (4 << 20));
        assert_eq!(run.cpu, Nanos(1_024_000), "4 MiB at 4.096 GB/s");
    }

    #[test]
    fn under_stress_the_rate_holds_when_nothing_is_dirty() {
        let mut k = kernel();
        let cfg = PrezeroConfig {
            enabled: true,
            rate_pages_per_s: 16384,
            stress: true,
            ..PrezeroConfig::default()
        };
        let mut d = Prezero::default();
        d.run(&mut k, &cfg);
        assert_eq!(d.run(&mut k, &cfg).pages, 16384);
        assert_eq!(d.pages, 2 * 16384);
    }
}
