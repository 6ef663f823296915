//! When the kernel compacts: direct compaction with Linux's deferral after failures
//! (`mm/compaction.c`: `compaction_deferred`, `defer_compaction`,
//! `compaction_defer_reset`), and kcompactd, the background compaction daemon (woken by
//! failed huge-page faults under `defrag=defer`, and proactive compaction every 500 ms
//! while the fragmentation score is above its high watermark).
//!
//! Owns the timing and the deferral state; the compaction mechanism itself is the kernel
//! model's ([`Kernel::compact`]). It must not decide page sizes or promotions.

use hugemm_hw::{Nanos, Order};
use hugemm_mm::{CompactRequest, Kernel};
use serde::Serialize;

/// Linux's `COMPACT_MAX_DEFER_SHIFT`: after repeated failures, direct compaction is
/// skipped for up to 2^6 = 64 attempts.
const MAX_DEFER_SHIFT: u32 = 6;

/// Direct-compaction deferral of the (single) zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Deferral {
    considered: u32,
    defer_shift: u32,
    order_failed: u8,
}

impl Default for Deferral {
    fn default() -> Self {
        Deferral {
            considered: 0,
            defer_shift: 0,
            order_failed: u8::MAX,
        }
    }
}

impl Deferral {
    /// `compaction_deferred`: whether an attempt of `order` is skipped.
    pub fn deferred(&mut self, order: Order) -> bool {
        if order.0 < self.order_failed {
            return false;
        }
        let limit = 1u32 << self.defer_shift;
        self.considered = (self.considered + 1).min(limit);
        self.considered < limit
    }

    /// `defer_compaction` after a failure, `compaction_defer_reset` after a success.
    pub fn record(&mut self, order: Order, success: bool) {
        if success {
            self.considered = 0;
            self.defer_shift = 0;
            if order.0 >= self.order_failed {
                self.order_failed = order.0.saturating_add(1);
            }
        } else {
            self.considered = 0;
            self.defer_shift = (self.defer_shift + 1).min(MAX_DEFER_SHIFT);
            self.order_failed = self.order_failed.min(order.0);
        }
    }
}

/// Direct compaction for a failed allocation of `order`, unless deferred, after reclaiming
/// page cache if free memory is too low for compaction to run. Returns the time it took
/// (charged to the allocating task). Success, for the deferral, is a free block of
/// `order` afterwards (`COMPACT_SUCCESS`); the caller then retries its allocation.
pub(crate) fn direct_compact(kernel: &mut Kernel, deferral: &mut Deferral, order: Order) -> Nanos {
    if deferral.deferred(order) {
        return Nanos::ZERO;
    }
    // `__alloc_pages_slowpath` reclaims when compaction cannot run for want of free
    // pages (`compaction_suitable`: the high watermark plus twice the request).
    let want = kernel.watermarks().high + (2u64 << order.0);
    let free = kernel.phys().frames_free();
    let mut cost = Nanos::ZERO;
    if free < want {
        cost += kernel.reclaim(want - free).cost;
    }
    cost += kernel.compact(CompactRequest::Direct { order }).cost;
    deferral.record(order, kernel.phys().has_free_block(order));
    cost
}

/// kcompactd's settings (`/proc/sys/vm/compaction_proactiveness`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct KcompactdConfig {
    /// Run kcompactd at all (woken by `defrag=defer` faults, and proactively).
    pub enabled: bool,
    /// `compaction_proactiveness`, 0..=100 (Linux default 20; 0 disables proactive
    /// compaction).
    pub proactiveness: u32,
}

impl Default for KcompactdConfig {
    fn default() -> Self {
        KcompactdConfig {
            enabled: true,
            proactiveness: 20,
        }
    }
}

/// `HPAGE_FRAG_CHECK_INTERVAL_MSEC`: how often kcompactd checks the fragmentation score.
pub(crate) const KCOMPACTD_PERIOD: Nanos = Nanos(500_000_000);

/// kcompactd's state between runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Kcompactd {
    /// A failed huge-page fault asked for background compaction of this order.
    pub wake: Option<Order>,
}

impl Kcompactd {
    /// One run: serve a wake-up, then proactive compaction when the score is high.
    /// Returns the CPU time used.
    pub fn run(&mut self, kernel: &mut Kernel, cfg: &KcompactdConfig) -> Nanos {
        let mut cpu = Nanos::ZERO;
        if let Some(order) = self.wake.take() {
            cpu += kernel.compact(CompactRequest::Direct { order }).cost;
        }
        if cfg.proactiveness > 0 {
            // Starts only above the score's high mark; the kernel holds the sysctl.
            cpu += kernel.compact(CompactRequest::Proactive).cost;
        }
        cpu
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_failures_defer_up_to_sixty_four_attempts() {
        let mut d = Deferral::default();
        let o = Order(9);
        assert!(!d.deferred(o));
        d.record(o, false); // shift 1: skip 1 of 2
        assert!(d.deferred(o));
        assert!(!d.deferred(o));
        for _ in 0..10 {
            d.record(o, false);
        }
        let skipped = (0..64).take_while(|_| d.deferred(o)).count();
        assert_eq!(skipped, 63);
        // Lower orders than the failed one are never deferred.
        assert!(!d.deferred(Order(3)));
        d.record(o, true);
        assert!(!d.deferred(o));
    }
}
