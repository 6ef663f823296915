//! The kernel's entry points to the fragmentation metrics of physical memory
//! (`phys/metrics.rs`, which defines them). Must not change anything.

use crate::kernel::Kernel;
use crate::phys::metrics::{self, FragMetrics};

impl Kernel {
    /// Measure fragmentation (one pass over the pageblocks' counters).
    pub fn frag_metrics(&self) -> FragMetrics {
        metrics::frag_metrics(&self.phys)
    }

    /// Tainted pageblocks in each zone (node), as [`Kernel::frag_metrics`] counts them.
    pub fn tainted_pageblocks_by_zone(&self) -> Vec<u64> {
        metrics::tainted_by_zone(&self.phys)
    }

    /// `fragmentation_score_zone`: `Fu(pageblock order) * 100`, rounded down.
    pub fn fragmentation_score(&self) -> u64 {
        metrics::fragmentation_score(&self.phys)
    }
}
