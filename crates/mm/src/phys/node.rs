//! Memory nodes: physical memory split into tiers (NUMA nodes), each a contiguous range of
//! frames with its own buddy free lists (Linux's `pg_data_t`, one zone each), and the
//! node preference of an allocation (`alloc_pages_node`, `__GFP_THISNODE`).
//!
//! Node 0 starts at frame 0 and nodes follow in order. Every node holds a whole number of
//! maximal buddy blocks, so no buddy pair spans two nodes and a node's free lists only
//! ever hold its own frames. An allocation tries its preferred node first, then the
//! others nearest first (by node number: tiers are numbered fastest first, so "nearest"
//! is "next fastest"), as Linux walks a zonelist; with [`NodePref::Only`] it tries its
//! node alone. Linux also skips a node below its low watermark before falling back; the
//! model's watermarks are machine-wide, so a node is used until it has no block of the
//! order (a documented simplification: fast-first placement fills the fast tier).
//!
//! This module owns the node ranges and the order of fallback; it must not hold free
//! lists or frames (`buddy.rs` does).

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

/// The frame ranges of the nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NodeMap {
    /// First frame of each node, then the frame count: node `n` is `bounds[n]..bounds[n+1]`.
    bounds: Vec<u32>,
}

impl NodeMap {
    /// Nodes of `frames[n]` frames each, each a multiple of `2^max_order` frames.
    pub fn new(frames: &[u64], max_order: u8) -> Result<NodeMap> {
        let block = 1u64 << max_order;
        if frames.is_empty() || frames.len() > u8::MAX as usize {
            return Err(MmError::InvalidConfig {
                what: "a machine has 1 to 255 memory nodes",
            });
        }
        let mut bounds = vec![0u32];
        let mut end = 0u64;
        for &n in frames {
            if n == 0 {
                return Err(MmError::InvalidConfig {
                    what: "a memory node has no memory",
                });
            }
            if frames.len() > 1 && !n.is_multiple_of(block) {
                return Err(MmError::InvalidConfig {
                    what: "each node's memory must be a multiple of the largest buddy block (4 MiB with 4 KB pages)",
                });
            }
            end += n;
            bounds.push(u32::try_from(end).map_err(|_| MmError::InvalidConfig {
                what: "frame count must be between 1 and 2^32 - 2",
            })?);
        }
        Ok(NodeMap { bounds })
    }

    /// Number of nodes.
    pub fn count(&self) -> usize {
        self.bounds.len() - 1
    }

    /// The node holding frame `pfn` (the last node for frames past the end).
    #[inline]
    pub fn of(&self, pfn: u32) -> usize {
        if self.bounds.len() == 2 {
            return 0;
        }
        self.bounds[1..]
            .partition_point(|&end| end <= pfn)
            .min(self.count() - 1)
    }

    /// Frames `start..end` of node `n`.
    pub fn range(&self, n: usize) -> (u32, u32) {
        (self.bounds[n], self.bounds[n + 1])
    }

    /// The nodes an allocation with preference `pref` tries, in order, `home` being the
    /// home node; empty if the preferred node does not exist.
    pub fn order(&self, pref: NodePref, home: usize) -> Vec<usize> {
        let (first, only) = match pref {
            NodePref::Home => (home, false),
            NodePref::Prefer(n) => (n.0 as usize, false),
            NodePref::Only(n) => (n.0 as usize, true),
        };
        if first >= self.count() {
            return Vec::new();
        }
        if only {
            return vec![first];
        }
        let mut nodes: Vec<usize> = (0..self.count()).collect();
        nodes.sort_by_key(|&n| (n.abs_diff(first), n));
        nodes
    }
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
}
