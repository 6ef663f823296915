//! Memory bandwidth shared by the processes and daemons using each node (Nimble, issue
//! 18): a fluid approximation with a queueing delay, on machines of several nodes.
//!
//! - **Traffic.** Time is cut into windows of [`WINDOW`]. In each, a node's traffic is
//!   - the data lines of every process that missed every cache level on a frame of the
//!     node, 64 bytes each and twice for a written line (its later write-back; see
//!     `CacheHierarchy::access_data`), counted by each core's caches per turn and put
//!     on the process whose turn it was;
//!   - for the references a sampled phase skipped, the lines the process's simulated
//!     references missed per reference, over its last [`RATE_REFS`] or more simulated
//!     ones, times the references skipped;
//!   - the bytes migration read and wrote on the node (`Kernel::migration_traffic`),
//!     spread evenly over the run of the daemon that migrated them;
//!   - the pre-zeroing daemon's stores, spread over its period, on node 0 (the daemon
//!     zeroes free blocks wherever they are; the model puts its traffic where most
//!     allocations land).
//! - **Sharing.** At the end of a window a node's utilisation is `u = traffic / (window
//!   x bandwidth)`, its bandwidth the profile's (`dram_gbps` for node 0, `gbps` of each
//!   tier). A data line the node serves in the next window costs its idle latency
//!   times `1 / (1 - u)`, a single-server queue's delay at that utilisation (u capped
//!   at 0.9: at most ten times idle), the form `prezero.rs` uses on one node. The
//!   factor moves from its last value to this target by the geometric mean each
//!   window: a process that is itself the node's main user sees its own traffic fall
//!   as its latency rises, and without damping the lagged estimate would swing.
//! - **Reported.** Each node's traffic over the run (`system.tiers.nodes[].traffic_bytes`
//!   in `summary.json`), the highest windowed utilisation, and its bandwidth in use
//!   between samples (`bandwidth_gbps` on the `node:<name>` rows of `timeseries.csv`).
//!
//! Choices and limits. The window lags traffic by one window (1 ms: the engine's
//! [`crate::SYNC`], so the cores' turns already end there). The single-queue delay is
//! pessimistic below saturation: measured loaded-latency curves stay nearly flat to
//! about 60-70% of peak bandwidth and rise steeply after, where this one rises from the
//! start; with one core's traffic (well under 1 GB/s for the workloads here) the
//! difference is a few percent of latency, and it matters mostly during migration
//! bursts. Page-table lines, prefetches and the copy threads' cache misses are not
//! traffic, and reads and writes share one queue. A machine of one node is left to its
//! calibrated latency (and to pre-zeroing's own term): the model runs only where there
//! are nodes to share.

use crate::engine::Core;
use crate::process::Proc;
use hugemm_hw::{MachineProfile, Picos};

/// Bytes in a cache line.
const LINE_BYTES: u64 = 64;

/// Length of a window over which traffic is added up (1 ms).
pub const WINDOW: Picos = Picos(1_000_000_000);
/// Simulated references over which a process's lines per reference are measured before
/// the rate its skipped references are charged at is updated.
pub const RATE_REFS: u64 = 1024;
/// Highest utilisation the delay is computed at.
pub const MAX_UTILISATION: f64 = 0.9;

/// Migration or zeroing traffic spread over an interval.
#[derive(Clone, Copy, Debug)]
struct Burst {
    node: usize,
    start: Picos,
    end: Picos,
    bytes: f64,
}

/// A process's traffic rate, for the references it skips.
#[derive(Clone, Debug, Default)]
struct Meter {
    /// Lines per simulated reference on each node, from the last full measurement.
    rate: Vec<f64>,
    /// Lines and simulated references since that measurement.
    lines: Vec<u64>,
    exact: u64,
}

/// What one turn started from.
#[derive(Clone, Debug, Default)]
struct TurnStart {
    lines: Vec<u64>,
    refs: u64,
    skipped: u64,
}

/// The shared-bandwidth model of a run (see the module doc).
#[derive(Clone, Debug)]
pub(crate) struct Bandwidth {
    /// When the current window ends.
    pub next: Picos,
    /// Bytes per picosecond each node can serve (0: not modelled).
    bytes_per_ps: Vec<f64>,
    /// Bytes of the current window so far.
    window_bytes: Vec<f64>,
    /// Bytes over the run, and at the last sample.
    total_bytes: Vec<f64>,
    sampled_bytes: Vec<f64>,
    /// The latency factor in force.
    factor: Vec<f64>,
    /// Highest utilisation of any window.
    peak: Vec<f64>,
    bursts: Vec<Burst>,
    meters: Vec<Meter>,
    turn: TurnStart,
    /// `Kernel::migration_traffic` as last seen.
    migration_seen: Vec<u64>,
}

/// A node's traffic over a run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct NodeTraffic {
    pub bytes: u64,
    pub peak_utilisation: f64,
}

impl Bandwidth {
    /// The model for a machine of `nodes` nodes described by `profile`; `None` for one
    /// node (see the module doc).
    pub fn new(profile: &MachineProfile, nodes: usize) -> Option<Bandwidth> {
        (nodes > 1).then(|| {
            let bytes_per_ps = (0..nodes)
                .map(|n| profile.node_gbps(n).unwrap_or(0.0) * 1e-3)
                .collect();
            Bandwidth {
                next: WINDOW,
                bytes_per_ps,
                window_bytes: vec![0.0; nodes],
                total_bytes: vec![0.0; nodes],
                sampled_bytes: vec![0.0; nodes],
                factor: vec![1.0; nodes],
                peak: vec![0.0; nodes],
                bursts: Vec::new(),
                meters: Vec::new(),
                turn: TurnStart::default(),
                migration_seen: Vec::new(),
            }
        })
    }

    /// Note where process `p` starts a turn on `core`.
    pub fn turn_start(&mut self, core: &Core, p: &Proc) {
        self.turn.lines.clear();
        self.turn.lines.extend(core.mmu.node_lines());
        self.turn.refs = p.pmu.references;
        self.turn.skipped = p.references_skipped;
    }

    /// Charge process `i` (`p`) with the traffic of the turn it just ended on `core`.
    pub fn turn_end(&mut self, i: usize, core: &Core, p: &Proc) {
        if self.meters.len() <= i {
            self.meters.resize_with(i + 1, Meter::default);
        }
        let nodes = self.window_bytes.len();
        let meter = &mut self.meters[i];
        meter.lines.resize(nodes, 0);
        meter.rate.resize(nodes, 0.0);
        let skipped = p.references_skipped - self.turn.skipped;
        let exact = (p.pmu.references - self.turn.refs).saturating_sub(skipped);
        meter.exact += exact;
        for (n, now) in core.mmu.node_lines().enumerate().take(nodes) {
            let lines = now - self.turn.lines.get(n).copied().unwrap_or(0);
            meter.lines[n] += lines;
            let estimated = lines as f64 + skipped as f64 * meter.rate[n];
            self.window_bytes[n] += estimated * LINE_BYTES as f64;
        }
        if meter.exact >= RATE_REFS {
            for n in 0..nodes {
                meter.rate[n] = meter.lines[n] as f64 / meter.exact as f64;
                meter.lines[n] = 0;
            }
            meter.exact = 0;
        }
    }

    /// Spread the migration traffic since the last call (`traffic`: the kernel's running
    /// totals per node) over `start..end`.
    pub fn migrated(&mut self, traffic: &[u64], start: Picos, end: Picos) {
        self.migration_seen.resize(traffic.len(), 0);
        for (n, &now) in traffic.iter().enumerate() {
            let seen = std::mem::replace(&mut self.migration_seen[n], now);
            if now > seen {
                self.burst(n, now - seen, start, end);
            }
        }
    }

    /// Spread `bytes` on node `node` over `start..end`.
    pub fn burst(&mut self, node: usize, bytes: u64, start: Picos, end: Picos) {
        if node < self.window_bytes.len() && bytes > 0 {
            self.bursts.push(Burst {
                node,
                start,
                end: end.max(start + Picos(1)),
                bytes: bytes as f64,
            });
        }
    }

    /// Close the window ending at `t`: price each node for the next window on every
    /// core.
    pub fn window_end(&mut self, t: Picos, cores: &mut [Core]) {
        let from = Picos(t.0.saturating_sub(WINDOW.0));
        for b in &self.bursts {
            let overlap = b.end.min(t).0.saturating_sub(b.start.max(from).0);
            self.window_bytes[b.node] += b.bytes * overlap as f64 / (b.end.0 - b.start.0) as f64;
        }
        self.bursts.retain(|b| b.end > t);
        for n in 0..self.window_bytes.len() {
            let bytes = std::mem::take(&mut self.window_bytes[n]);
            self.total_bytes[n] += bytes;
            let capacity = self.bytes_per_ps[n] * WINDOW.0 as f64;
            if capacity <= 0.0 {
                continue;
            }
            let u = bytes / capacity;
            self.peak[n] = self.peak[n].max(u);
            let target = 1.0 / (1.0 - u.min(MAX_UTILISATION));
            let factor = (self.factor[n] * target).sqrt();
            if factor != self.factor[n] {
                self.factor[n] = factor;
                for core in cores.iter_mut() {
                    core.mmu.set_node_load(n, factor);
                }
            }
        }
        self.next = t + WINDOW;
    }

    /// Each node's bandwidth in use since the last call `interval` ago, in GB/s.
    pub fn sample(&mut self, interval: Picos) -> Vec<f64> {
        self.total_bytes
            .iter()
            .zip(&mut self.sampled_bytes)
            .map(|(&total, last)| {
                let gbps = match interval.0 {
                    0 => 0.0,
                    ps => (total - *last) / ps as f64 * 1e3,
                };
                *last = total;
                gbps
            })
            .collect()
    }

    /// Each node's traffic over the run so far (the open window's included).
    pub fn traffic(&self) -> Vec<NodeTraffic> {
        self.total_bytes
            .iter()
            .zip(&self.window_bytes)
            .zip(&self.peak)
            .map(|((&b, &open), &peak)| NodeTraffic {
                bytes: (b + open).round() as u64,
                peak_utilisation: peak,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hugemm_hw::Geometry;

    fn profile() -> MachineProfile {
        MachineProfile::builtin("xeon-e5-2650v3-2node").expect("built in")
    }

    #[test]
    fn one_node_has_no_model() {
        assert!(Bandwidth::new(&profile(), 1).is_none());
    }

    #[test]
    fn a_burst_loads_its_node_for_the_windows_it_spans_then_the_load_decays() {
        let p = profile();
        let mut bw = Bandwidth::new(&p, 2).unwrap();
        let mut cores = vec![Core::new(&p, Geometry::X86_64)];
        // Half of node 1's bandwidth (17 GB/s) over 2.5 windows.
        let per_window = 17e9 * 1e-3 / 2.0;
        let bytes = (2.5 * per_window) as u64;
        bw.burst(1, bytes, Picos(0), Picos(2_500_000_000));
        let mut factors = Vec::new();
        for w in 1..=5u64 {
            bw.window_end(Picos(w * WINDOW.0), &mut cores);
            factors.push(bw.factor[1]);
            assert_eq!(bw.factor[0], 1.0, "node 0 has no traffic");
        }
        // Target 2 (u = 0.5): 2^(1/2), 2^(3/4), then u = 0.25 in the third window.
        assert!((factors[0] - 2f64.sqrt()).abs() < 1e-9, "{factors:?}");
        assert!((factors[1] - 2f64.powf(0.75)).abs() < 1e-9, "{factors:?}");
        assert!(
            factors[2] < factors[1] && factors[4] < factors[3],
            "{factors:?}"
        );
        let t = bw.traffic();
        assert_eq!(t[1].bytes, bytes);
        assert!((t[1].peak_utilisation - 0.5).abs() < 1e-9);
        let gbps = bw.sample(Picos(5 * WINDOW.0));
        assert!((gbps[1] - bytes as f64 / 5e6).abs() < 1e-6, "{gbps:?}");
        assert_eq!(bw.sample(Picos(WINDOW.0))[1], 0.0, "nothing since");
    }

    #[test]
    fn utilisation_past_the_cap_costs_at_most_ten_times_idle() {
        let p = profile();
        let mut bw = Bandwidth::new(&p, 2).unwrap();
        let mut cores = vec![Core::new(&p, Geometry::X86_64)];
        for w in 1..=60u64 {
            let t = Picos(w * WINDOW.0);
            bw.burst(0, 1 << 40, Picos(t.0 - WINDOW.0), t);
            bw.window_end(t, &mut cores);
        }
        assert!(
            bw.factor[0] <= 10.0 && bw.factor[0] > 9.99,
            "{}",
            bw.factor[0]
        );
    }

    #[test]
    fn migration_traffic_is_charged_once() {
        let p = profile();
        let mut bw = Bandwidth::new(&p, 2).unwrap();
        let mut cores = vec![Core::new(&p, Geometry::X86_64)];
        bw.migrated(&[4096, 8192], Picos(0), Picos(10));
        bw.migrated(&[4096, 8192], Picos(10), Picos(20));
        bw.window_end(WINDOW, &mut cores);
        let t = bw.traffic();
        assert_eq!((t[0].bytes, t[1].bytes), (4096, 8192));
    }
}
