//! The cache hierarchy of one core, holding both data lines and page-table lines.
//!
//! Each level is a set-associative array of 64-byte line tags with bit-PLRU replacement
//! ([`crate::plru`]), indexed by the low bits
//! of the line address (real L3s hash the address over slices; over the random-ish
//! physical frames the kernel model hands out the difference is small). An access probes
//! the levels nearest first; the latency is that of the first level holding the line, or
//! DRAM's, and the line is filled into every level that missed. Levels are therefore
//! neither inclusive nor exclusive by construction, and there is no write-back, prefetching,
//! coherence or bandwidth contention: the model exists to say *where a page-table line is
//! found* (the dominant term of a walk, Intel's optimization manual notes that page-walk
//! loads go through the data caches) and how far a data line is, not to be a cache
//! simulator.
//!
//! A shared level is sized by the profile as the share one core sees.

use crate::lruset::fingerprint;
use crate::plru::PlruArray;
use crate::profile::CacheLevelProfile;
use crate::validate::LINE_BYTES;

/// log2 of the line size.
pub const LINE_SHIFT: u32 = LINE_BYTES.trailing_zeros();

/// The caches of one core (see the module doc).
#[derive(Clone, Debug)]
pub struct CacheHierarchy {
    levels: Vec<PlruArray>,
    latency_cycles: Vec<f64>,
    dram_cycles: f64,
    /// DRAM latency with no other load.
    dram_idle_cycles: f64,
    /// Memory nodes past the first, in ascending address order: data lines at or above a
    /// node's first line (and below the next node's) cost that node's latency. Empty: one
    /// node, every data line costs `dram_cycles`.
    far: Vec<FarNode>,
    /// Lines node 0 served or will take back, counted only on a machine of several
    /// nodes (see [`CacheHierarchy::access_data`]).
    near_lines: u64,
}

/// A memory node other than node 0, as a range of line addresses with its latency.
#[derive(Clone, Copy, Debug)]
struct FarNode {
    first_line: u64,
    cycles: f64,
    idle_cycles: f64,
    /// Lines the node served or will take back.
    lines: u64,
}

impl CacheHierarchy {
    /// The hierarchy described by `levels` (nearest first) in front of a DRAM whose
    /// latency is `dram_cycles`.
    pub fn new(levels: &[CacheLevelProfile], dram_cycles: f64) -> CacheHierarchy {
        let arrays = levels
            .iter()
            .map(|c| PlruArray::new((c.bytes / LINE_BYTES) as usize, c.ways as usize))
            .collect();
        CacheHierarchy {
            levels: arrays,
            latency_cycles: levels.iter().map(|c| c.latency_cycles).collect(),
            dram_cycles,
            dram_idle_cycles: dram_cycles,
            far: Vec::new(),
            near_lines: 0,
        }
    }

    /// Memory past node 0: `(first byte address, latency in cycles)` of nodes 1, 2, ..
    /// in ascending address order. Node 0 (from address 0) keeps the latency given to
    /// [`CacheHierarchy::new`].
    pub fn set_far_nodes(&mut self, nodes: &[(u64, f64)]) {
        self.far = nodes
            .iter()
            .map(|&(start, cycles)| FarNode {
                first_line: start >> LINE_SHIFT,
                cycles,
                idle_cycles: cycles,
                lines: 0,
            })
            .collect();
    }

    /// Scale node `node`'s latency by `factor` (>= 1) over its idle value: traffic
    /// sharing the node's bandwidth. Node 0 is [`CacheHierarchy::set_dram_load`]'s.
    pub fn set_node_load(&mut self, node: usize, factor: f64) {
        match node {
            0 => self.set_dram_load(factor),
            n => {
                if let Some(f) = self.far.get_mut(n - 1) {
                    f.cycles = f.idle_cycles * factor.max(1.0);
                }
            }
        }
    }

    /// Accesses data line `line` (a physical byte address shifted right by
    /// [`LINE_SHIFT`]) and returns its latency in cycles: a miss in every level costs
    /// the latency of the node holding the line.
    ///
    /// On a machine of several nodes a miss is also counted as traffic on its node
    /// ([`CacheHierarchy::node_lines`]): one line read, and one more for a `write`, the
    /// write-back its eviction will cause (write-backs of lines read and written later
    /// while cached are not counted, nor prefetches).
    #[inline]
    pub fn access_data(&mut self, line: u64, write: bool) -> f64 {
        let level = self.access_level(line);
        match self.latency_cycles.get(level) {
            Some(&c) => c,
            None if self.far.is_empty() => self.dram_cycles,
            None => self.node_cycles(line, 1 + u64::from(write)),
        }
    }

    /// DRAM latency of the node holding data line `line`, counting `lines` of traffic
    /// on it.
    fn node_cycles(&mut self, line: u64, lines: u64) -> f64 {
        match self.far.iter_mut().rev().find(|f| line >= f.first_line) {
            Some(f) => {
                f.lines += lines;
                f.cycles
            }
            None => {
                self.near_lines += lines;
                self.dram_cycles
            }
        }
    }

    /// Lines of traffic each node has had from this core's data misses so far, node 0
    /// first (see [`CacheHierarchy::access_data`]; empty with one node, which counts
    /// none).
    pub fn node_lines(&self) -> impl Iterator<Item = u64> + '_ {
        let near = (!self.far.is_empty()).then_some(self.near_lines);
        near.into_iter().chain(self.far.iter().map(|f| f.lines))
    }

    /// Write line `line` into the last level only, as another core's store through a
    /// shared last-level cache does: it takes the place of this core's least recently
    /// used line in its set (or refreshes itself if present).
    pub fn fill_last(&mut self, line: u64) {
        if let Some(last) = self.levels.last_mut() {
            last.access_fp(line, fingerprint(line));
        }
    }

    /// Scale DRAM latency by `factor` (>= 1) over its idle value: memory shared with a
    /// busy writer.
    pub fn set_dram_load(&mut self, factor: f64) {
        self.dram_cycles = self.dram_idle_cycles * factor.max(1.0);
    }

    /// Accesses line `line` (a byte address shifted right by [`LINE_SHIFT`], or a
    /// page-table line tag) and returns its latency in cycles, filling the levels that
    /// missed.
    #[inline]
    pub fn access(&mut self, line: u64) -> f64 {
        let level = self.access_level(line);
        self.latency_cycles
            .get(level)
            .copied()
            .unwrap_or(self.dram_cycles)
    }

    /// The latency in cycles of level `level` (the number of levels for DRAM).
    #[inline]
    pub fn latency_of(&self, level: usize) -> f64 {
        self.latency_cycles
            .get(level)
            .copied()
            .unwrap_or(self.dram_cycles)
    }

    /// Like [`CacheHierarchy::access`] but returns the index of the level that held the
    /// line (the number of levels for DRAM).
    #[inline]
    pub fn access_level(&mut self, line: u64) -> usize {
        let fp = fingerprint(line);
        for (i, level) in self.levels.iter_mut().enumerate() {
            if level.access_fp(line, fp) {
                return i;
            }
        }
        self.levels.len()
    }

    /// Prefetch (into the host's caches) the sets `line` maps to beyond the first level —
    /// the levels whose arrays are too big to stay in the host's nearest caches — so a
    /// later [`CacheHierarchy::access`] does not stall the simulator.
    #[inline]
    pub fn prefetch(&self, line: u64) {
        for level in self.levels.iter().skip(1) {
            level.prefetch(line);
        }
    }

    /// Number of cache levels.
    pub fn depth(&self) -> usize {
        self.levels.len()
    }

    /// Empties every level.
    pub fn flush(&mut self) {
        self.levels.iter_mut().for_each(PlruArray::clear);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level(name: &str, bytes: u64, ways: u32, latency: f64) -> CacheLevelProfile {
        CacheLevelProfile {
            name: name.into(),
            bytes,
            ways,
            latency_cycles: latency,
        }
    }

    impl CacheHierarchy {
        fn access_data_r(&mut self, line: u64) -> f64 {
            self.access_data(line, false)
        }
    }

    fn tiny() -> CacheHierarchy {
        CacheHierarchy::new(
            &[level("L1D", 256, 2, 4.0), level("L2", 1024, 4, 12.0)],
            200.0,
        )
    }

    #[test]
    fn a_miss_costs_dram_then_hits_the_nearest_level() {
        let mut c = tiny();
        assert_eq!(c.access(10), 200.0);
        assert_eq!(c.access(10), 4.0);
    }

    #[test]
    fn a_line_evicted_from_l1_is_found_in_l2() {
        let mut c = tiny(); // L1: 2 sets x 2 ways
        for line in [0, 2, 4] {
            c.access(line); // three lines in L1 set 0: bit-PLRU evicts line 0 from L1
        }
        assert_eq!(c.access_level(0), 1);
        assert_eq!(c.access(0), 4.0);
    }

    #[test]
    fn flush_empties_every_level() {
        let mut c = tiny();
        c.access(3);
        c.flush();
        assert_eq!(c.access_level(3), c.depth());
    }

    #[test]
    fn data_missing_every_level_costs_the_latency_of_its_node() {
        let mut c = tiny();
        // Node 1 from byte 1 MiB at 500 cycles, node 2 from 2 MiB at 900.
        c.set_far_nodes(&[(1 << 20, 500.0), (2 << 20, 900.0)]);
        let line = |addr: u64| addr >> LINE_SHIFT;
        assert_eq!(c.access_data_r(line(4096)), 200.0);
        assert_eq!(c.access_data_r(line((1 << 20) + 64)), 500.0);
        assert_eq!(c.access_data_r(line(3 << 20)), 900.0);
        assert_eq!(
            c.access_data_r(line(3 << 20)),
            4.0,
            "a hit costs the cache's latency"
        );
        c.set_node_load(1, 2.0);
        assert_eq!(c.access_data_r(line((1 << 20) + 8192)), 1000.0);
        c.set_node_load(1, 0.5);
        assert_eq!(
            c.access_data_r(line((1 << 20) + 16384)),
            500.0,
            "never below idle"
        );
        c.set_node_load(7, 3.0); // no such node: nothing changes
        assert_eq!(c.access_data_r(line(4 << 20)), 900.0);
    }

    #[test]
    fn misses_count_as_traffic_on_their_node_writes_twice() {
        let mut c = tiny();
        assert_eq!(c.node_lines().count(), 0, "one node counts nothing");
        c.access_data(0, true);
        assert_eq!(c.node_lines().count(), 0);
        c.set_far_nodes(&[(1 << 20, 500.0)]);
        let line = |addr: u64| addr >> LINE_SHIFT;
        c.access_data(line(1 << 14), false); // node 0, read
        c.access_data(line(1 << 14), true); // a hit: no traffic
        c.access_data(line((1 << 20) + 64), true); // node 1, written
        c.access_data(line((1 << 20) + 128), false); // node 1, read
        assert_eq!(c.node_lines().collect::<Vec<_>>(), vec![1, 3]);
    }
}
