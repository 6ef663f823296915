//! Linux 6.12's THP shrinker, "split underused THPs" (`mm/huge_memory.c`:
//! `deferred_split_folio`, `deferred_split_scan`, `thp_underused`; sysfs
//! `transparent_hugepage/shrink_underused`).
//!
//! Every huge page mapped at a fault or made by a collapse joins the deferred-split queue.
//! Under reclaim (kswapd, or a direct reclaim of a failing allocation) the shrinker takes
//! queued huge pages in order: one with more than `max_ptes_none` zero-filled base pages
//! is split and its zero-filled pages map the shared zero page (`ScanStyle::Underused`);
//! either way it leaves the queue, so each huge page is examined once. With the default
//! `max_ptes_none` of 511 the kernel declares nothing underused (`thp_underused` returns
//! false at once), so nothing is queued: a user who wants the shrinker to act lowers
//! `max_ptes_none` (409 and 256 are the settings the reproductions use).
//!
//! Simplifications: Linux queues a huge page partially unmapped by `MADV_DONTNEED` too;
//! the model frees such frames at once (`unmap.rs`), so there is nothing to queue. The
//! queue is per system, not per memory cgroup.

use crate::{MemoryOps, Reclaimed};
use hugemm_hw::{Pid, VirtAddr};
use hugemm_mm::{ScanStyle, ZeroScan};
use std::collections::VecDeque;

/// `HPAGE_PMD_NR - 1`: at this `max_ptes_none` nothing is underused.
const NEVER_UNDERUSED: u32 = 511;

/// The deferred-split queue and its shrinker.
#[derive(Clone, Debug, Default)]
pub struct ThpShrinker {
    queue: VecDeque<(Pid, VirtAddr)>,
    max_ptes_none: u32,
    enabled: bool,
}

impl ThpShrinker {
    /// A shrinker splitting huge pages with more than `max_ptes_none` zero-filled base
    /// pages, if `enabled`.
    pub fn new(enabled: bool, max_ptes_none: u32) -> Self {
        ThpShrinker {
            queue: VecDeque::new(),
            max_ptes_none,
            enabled: enabled && max_ptes_none < NEVER_UNDERUSED,
        }
    }

    /// A new huge page of `pid` at `region` (a fault or a collapse).
    pub fn queue(&mut self, pid: Pid, region: VirtAddr) {
        if self.enabled {
            self.queue.push_back((pid, region));
        }
    }

    /// Huge pages waiting to be examined.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Examine queued huge pages until `want` frames are freed or the queue is empty.
    pub fn scan(&mut self, ops: &mut dyn MemoryOps, want: u64) -> Reclaimed {
        let scan = ZeroScan {
            max_zero: self.max_ptes_none,
            style: ScanStyle::Underused,
        };
        let mut out = Reclaimed::default();
        while out.freed < want {
            let Some((pid, region)) = self.queue.pop_front() else {
                break;
            };
            // A huge page split or unmapped since it was queued is no longer there.
            if let Ok(s) = ops.dedup_zero_subpages(pid, region, scan) {
                out.freed += s.recovered as u64;
                out.cpu += s.cost;
            }
        }
        out
    }

    /// Forget the huge pages of a process that exited.
    pub fn process_exited(&mut self, pid: Pid) {
        self.queue.retain(|(p, _)| *p != pid);
    }
}
