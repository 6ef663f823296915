//! `/proc/buddyinfo`: free blocks per order in each zone of each node
//! (`mm/vmstat.c`, `frag_show_print`). Readable by every user.
//!
//! ```text
//! Node 0, zone   Normal   4332   5592  18620  16747   7612   2912   1194    525    253    306    302
//! ```
//!
//! Every line must list the same number of orders. This module owns the parsing and the
//! free-huge-page arithmetic over it; it must not judge fragmentation (policies do).

use super::text::{self, lines, read_text};
use super::zone::{node_zone, FreeCounts, Zone, MAX_ORDERS};
use crate::error::Result;
use hugemm_hw::Order;
use hugemm_mm::NodeId;
use serde::Serialize;
use std::path::Path;

/// Where the kernel serves the file.
pub const PATH: &str = "/proc/buddyinfo";

/// One zone's line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ZoneFree {
    /// The NUMA node.
    pub node: NodeId,
    /// The zone.
    pub zone: Zone,
    /// Free blocks per order.
    pub free: FreeCounts,
}

/// The whole file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BuddyInfo {
    /// The zones in file order.
    pub zones: Vec<ZoneFree>,
}

impl BuddyInfo {
    /// Read and parse the host's `/proc/buddyinfo`.
    pub fn read() -> Result<BuddyInfo> {
        BuddyInfo::read_path(Path::new(PATH))
    }

    /// Read and parse `path`.
    pub fn read_path(path: &Path) -> Result<BuddyInfo> {
        BuddyInfo::parse(path, &read_text(path)?)
    }

    /// Parse `text`, read from `path`.
    pub fn parse(path: &Path, text: &str) -> Result<BuddyInfo> {
        let mut zones: Vec<ZoneFree> = Vec::new();
        for line in lines(path, text) {
            let mut tokens = line.text.split_whitespace();
            let (node, zone) = node_zone(&line, &mut tokens, false)?;
            let counts = tokens
                .map(|t| line.parse(t, "a free-block count"))
                .collect::<Result<Vec<u64>>>()?;
            let orders = zones
                .first()
                .map_or(counts.len(), |z| z.free.counts().len());
            if counts.is_empty() || counts.len() != orders || counts.len() > MAX_ORDERS {
                let expected =
                    format!("1 to {MAX_ORDERS} counts, as many on every line ({orders})");
                return Err(line.error(expected, line.text));
            }
            let free = FreeCounts::new(counts, false);
            zones.push(ZoneFree { node, zone, free });
        }
        if zones.is_empty() {
            return Err(text::early_end(path, text, "a `Node N, zone NAME` line"));
        }
        Ok(BuddyInfo { zones })
    }

    /// The line of `zone` on `node`.
    pub fn zone(&self, node: NodeId, zone: Zone) -> Option<&ZoneFree> {
        self.zones.iter().find(|z| z.node == node && z.zone == zone)
    }

    /// How many huge pages of order `huge` all zones' free blocks of that order or larger
    /// hold (see [`FreeCounts::huge_blocks`]).
    pub fn free_huge_blocks(&self, huge: Order) -> u64 {
        self.zones
            .iter()
            .fold(0, |sum, z| sum.saturating_add(z.free.huge_blocks(huge)))
    }
}
