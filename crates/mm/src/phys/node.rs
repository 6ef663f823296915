//! Memory nodes and zones: physical memory split into tiers (NUMA nodes), each a
//! contiguous range of frames, and a node split into zones (Linux's `pg_data_t` and its
//! `struct zone`s), each zone with its own buddy free lists; and the order in which an
//! allocation tries them (`alloc_pages_node`, `__GFP_THISNODE`, the zonelist).
//!
//! Node 0 starts at frame 0 and nodes follow in order; a node's zones follow in order
//! too (lowest addresses first: DMA, DMA32, Normal on x86-64). Machines of several nodes
//! have one zone per node; one node may be split into zones ([`NodeMap::with_zones`],
//! Linux 4.1's zones for the APSys'16 reproductions). Every zone of a machine of more
//! than one zone holds a whole number of maximal buddy blocks, so no buddy pair spans two
//! zones and a zone's free lists only ever hold its own frames. An allocation tries its
//! preferred node first, then the others nearest first (by node number: tiers are
//! numbered fastest first, so "nearest" is "next fastest"), as Linux walks a zonelist;
//! with [`NodePref::Only`] it tries its node alone; within a node it tries the highest
//! zone first (Normal, DMA32, DMA), as a zonelist lists them. Linux also skips a zone
//! below its low watermark before falling back; with zones the kernel does that
//! (`Mem::alloc`, `reclaim.rs`), while the nodes of a tiered machine share machine-wide
//! watermarks, so a node is used until it has no block of the order (a documented
//! simplification: fast-first placement fills the fast tier).
//!
//! This module owns the node and zone ranges and the order of fallback; it must not hold
//! free lists or frames (`buddy.rs` does).

use crate::error::{MmError, Result};
use serde::{Deserialize, Serialize};
use std::fmt;

/// A memory node's number (0: the local DRAM; higher: slower tiers).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct NodeId(pub u8);

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "node {}", self.0)
    }
}

/// Where an allocation may be served from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum NodePref {
    /// The machine's home node first (node 0 unless set otherwise: the node processes
    /// run on), then the others nearest first: every allocation's default.
    #[default]
    Home,
    /// This node first, then the others nearest first (the default, with node 0).
    Prefer(NodeId),
    /// This node only (`__GFP_THISNODE`: a migration's target page).
    Only(NodeId),
}

/// The frame ranges of the zones and the node each belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NodeMap {
    /// First frame of each zone, then the frame count: zone `z` is `bounds[z]..bounds[z+1]`.
    bounds: Vec<u32>,
    /// First zone of each node, then the zone count: node `n` holds zones
    /// `node_zones[n]..node_zones[n+1]`.
    node_zones: Vec<usize>,
    /// The zonelists [`NodeMap::order`] gives, built once: entry `2 n` for node `n`
    /// first then the others, `2 n + 1` for node `n` only.
    zonelists: Vec<Vec<usize>>,
}

impl NodeMap {
    /// Nodes of `frames[n]` frames each, one zone each, each a multiple of `2^max_order`
    /// frames when there are several.
    pub fn new(frames: &[u64], max_order: u8) -> Result<NodeMap> {
        if frames.is_empty() || frames.len() > u8::MAX as usize {
            return Err(MmError::InvalidConfig {
                what: "a machine has 1 to 255 memory nodes",
            });
        }
        let bounds = zone_bounds(frames, max_order)?;
        Ok(NodeMap::with_lists(bounds, (0..=frames.len()).collect()))
    }

    /// One node of zones of `frames[z]` frames each, lowest addresses first, each a
    /// multiple of `2^max_order` frames when there are several.
    pub fn with_zones(frames: &[u64], max_order: u8) -> Result<NodeMap> {
        if frames.is_empty() || frames.len() > MAX_ZONES {
            return Err(MmError::InvalidConfig {
                what: "a node has 1 to 4 zones",
            });
        }
        let bounds = zone_bounds(frames, max_order)?;
        Ok(NodeMap::with_lists(bounds, vec![0, frames.len()]))
    }

    /// Number of zones (of every node).
    pub fn count(&self) -> usize {
        self.bounds.len() - 1
    }

    /// Number of nodes.
    pub fn nodes(&self) -> usize {
        self.node_zones.len() - 1
    }

    /// The zone holding frame `pfn` (the last zone for frames past the end).
    #[inline]
    pub fn of(&self, pfn: u32) -> usize {
        if self.bounds.len() == 2 {
            return 0;
        }
        self.bounds[1..]
            .partition_point(|&end| end <= pfn)
            .min(self.count() - 1)
    }

    /// The node zone `z` belongs to.
    pub fn node_of_zone(&self, z: usize) -> usize {
        self.node_zones[1..].partition_point(|&end| end <= z)
    }

    /// Frames `start..end` of zone `z`.
    pub fn range(&self, z: usize) -> (u32, u32) {
        (self.bounds[z], self.bounds[z + 1])
    }

    /// The zones of node `n`, lowest first.
    pub fn zones_of(&self, n: usize) -> std::ops::Range<usize> {
        self.node_zones[n]..self.node_zones[n + 1]
    }

    /// Frames `start..end` of node `n`.
    pub fn node_range(&self, n: usize) -> (u32, u32) {
        let zones = self.zones_of(n);
        (self.bounds[zones.start], self.bounds[zones.end])
    }

    fn with_lists(bounds: Vec<u32>, node_zones: Vec<usize>) -> NodeMap {
        let mut map = NodeMap {
            bounds,
            node_zones,
            zonelists: Vec::new(),
        };
        map.zonelists = (0..map.nodes())
            .flat_map(|first| [(first, false), (first, true)])
            .map(|(first, only)| map.build_order(first, only))
            .collect();
        map
    }

    /// The zones an allocation with preference `pref` tries, in order, `home` being the
    /// home node: the nodes nearest first, each node's zones highest first; empty if the
    /// preferred node does not exist. Asked on every zoned allocation, so built once.
    pub fn order(&self, pref: NodePref, home: usize) -> &[usize] {
        let (first, only) = match pref {
            NodePref::Home => (home, false),
            NodePref::Prefer(n) => (n.0 as usize, false),
            NodePref::Only(n) => (n.0 as usize, true),
        };
        self.zonelists
            .get(2 * first + usize::from(only))
            .map_or(&[], Vec::as_slice)
    }

    fn build_order(&self, first: usize, only: bool) -> Vec<usize> {
        let mut nodes: Vec<usize> = match only {
            true => vec![first],
            false => (0..self.nodes()).collect(),
        };
        nodes.sort_by_key(|&n| (n.abs_diff(first), n));
        nodes
            .into_iter()
            .flat_map(|n| self.zones_of(n).rev())
            .collect()
    }
}

/// Most zones a node has (`MAX_NR_ZONES` on x86-64: DMA, DMA32, Normal, Movable).
pub const MAX_ZONES: usize = 4;

/// The first frame of each of consecutive ranges of `frames[i]` frames, then the end.
fn zone_bounds(frames: &[u64], max_order: u8) -> Result<Vec<u32>> {
    let block = 1u64 << max_order;
    let mut bounds = vec![0u32];
    let mut end = 0u64;
    for &n in frames {
        if n == 0 {
            return Err(MmError::InvalidConfig {
                what: "a memory node or zone has no memory",
            });
        }
        if frames.len() > 1 && !n.is_multiple_of(block) {
            return Err(MmError::InvalidConfig {
                what: "each node's and zone's memory must be a multiple of the largest buddy block (4 MiB with 4 KB pages)",
            });
        }
        end += n;
        bounds.push(u32::try_from(end).map_err(|_| MmError::InvalidConfig {
            what: "frame count must be between 1 and 2^32 - 2",
        })?);
    }
    Ok(bounds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_map_to_their_node() {
        let m = NodeMap::new(&[1024, 2048, 1024], 10).unwrap();
        assert_eq!(m.count(), 3);
        assert_eq!(
            (m.of(0), m.of(1023), m.of(1024), m.of(3071), m.of(3072)),
            (0, 0, 1, 1, 2)
        );
        assert_eq!(m.range(1), (1024, 3072));
        assert_eq!(NodeMap::new(&[1000], 10).unwrap().of(999), 0);
    }

    #[test]
    fn allocation_tries_the_preferred_node_then_the_nearest() {
        let m = NodeMap::new(&[1024, 1024, 1024], 10).unwrap();
        assert_eq!(m.order(NodePref::default(), 0), vec![0, 1, 2]);
        assert_eq!(m.order(NodePref::Prefer(NodeId(1)), 0), vec![1, 0, 2]);
        assert_eq!(m.order(NodePref::Prefer(NodeId(2)), 0), vec![2, 1, 0]);
        assert_eq!(m.order(NodePref::Only(NodeId(2)), 0), vec![2]);
        assert!(m.order(NodePref::Only(NodeId(3)), 0).is_empty());
        assert_eq!(m.order(NodePref::Home, 1), vec![1, 0, 2]);
    }

    #[test]
    fn nodes_must_hold_whole_max_order_blocks_and_some_memory() {
        assert!(NodeMap::new(&[1024, 0], 10).is_err());
        assert!(NodeMap::new(&[1024, 1000], 10).is_err());
        assert!(NodeMap::new(&[], 10).is_err());
        // One node may be any size, as before nodes existed.
        assert!(NodeMap::new(&[1000], 10).is_ok());
    }

    #[test]
    fn zones_of_one_node_are_tried_highest_first() {
        // DMA, DMA32, Normal.
        let m = NodeMap::with_zones(&[1024, 3072, 2048], 10).unwrap();
        assert_eq!((m.count(), m.nodes()), (3, 1));
        assert_eq!((m.of(1023), m.of(1024), m.of(4096)), (0, 1, 2));
        assert_eq!((m.node_of_zone(0), m.node_of_zone(2)), (0, 0));
        assert_eq!(m.node_range(0), (0, 6144));
        assert_eq!(m.range(2), (4096, 6144));
        assert_eq!(m.order(NodePref::Home, 0), vec![2, 1, 0]);
        assert_eq!(m.order(NodePref::Only(NodeId(0)), 0), vec![2, 1, 0]);
        assert!(m.order(NodePref::Only(NodeId(1)), 0).is_empty());
        assert!(NodeMap::with_zones(&[1024, 1000], 10).is_err());
        assert!(NodeMap::with_zones(&[1024; 5], 10).is_err());
    }

    #[test]
    fn each_node_of_a_tiered_machine_is_one_zone() {
        let m = NodeMap::new(&[1024, 2048], 10).unwrap();
        assert_eq!((m.count(), m.nodes()), (2, 2));
        assert_eq!((m.node_of_zone(0), m.node_of_zone(1)), (0, 1));
        assert_eq!(m.node_range(1), (1024, 3072));
    }
}
