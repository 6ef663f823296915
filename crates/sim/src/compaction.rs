//! When the kernel compacts: direct compaction with Linux's deferral after failures
//! (`mm/compaction.c`: `compaction_deferred`, `defer_compaction`,
//! `compaction_defer_reset`), and kcompactd, the background compaction daemon (woken by
//! failed huge-page faults under `defrag=defer`, and proactive compaction every 500 ms
//! while the fragmentation score is above its high watermark).
//!
//! Owns the timing; the compaction mechanism itself, and each zone's deferral state as
//! Linux keeps it in `struct zone`, are the kernel model's ([`Kernel::compact`],
//! [`Kernel::compaction_deferral`]). It must not decide page sizes or promotions.
//!
//! Linux 4.1's slow path ([`alloc_4_1`]) defers zone by zone, as 4.1 does. The modern
//! path ([`direct_compact`]) keeps one deferral, its classzone's (the highest zone; the
//! only one without zones), and defers after any run that left no free block of the
//! order, where 6.x defers a zone only after a synchronous run: the model's direct
//! compaction for faults is asynchronous only.

use hugemm_hw::{Nanos, Order, Pfn};
use hugemm_mm::zones::Mark;
use hugemm_mm::{AllocRequest, CompactRequest, Kernel, MigrateType, OwnerKind};
use serde::Serialize;

/// Direct compaction for a failed allocation of `order`, unless deferred, after reclaiming
/// page cache if free memory is too low for compaction to run. Returns the time it took
/// (charged to the allocating task). Success, for the deferral, is a free block of
/// `order` afterwards (`COMPACT_SUCCESS`); the caller then retries its allocation.
///
/// Cold and out of line: the fault path calls it only when a huge-page fault finds no
/// free huge block, and kept apart it leaves that path's code as it was before the
/// deferral moved into the kernel (`kbuild_16gib_s`, alternated with 608179c: 2.178 s
/// against 2.181 s, medians of 6; 2.1% slower inline).
#[cold]
#[inline(never)]
pub(crate) fn direct_compact(kernel: &mut Kernel, order: Order) -> Nanos {
    if kernel.compaction_classzone_deferral().deferred(order) {
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
    let success = kernel.phys().has_free_block(order);
    kernel
        .compaction_classzone_deferral()
        .record(order, success);
    cost
}

/// What one high-order request of [`alloc_4_1`] got and cost.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Attempt {
    /// The block, if the request succeeded.
    pub block: Option<Pfn>,
    /// Direct reclaim's time (charged to the requester).
    pub reclaim: Nanos,
    /// Direct compaction's time (charged to the requester).
    pub compaction: Nanos,
}

/// A high-order request of `req` as Linux 4.1's `__alloc_pages_nodemask` serves one, on
/// [`hugemm_mm::WatermarkCheck::Linux4_1`], with `__GFP_REPEAT` if `repeat`:
/// 1. the fast path takes a block only if 4.1's per-order watermark check passes at
///    `low` ([`Kernel::alloc_pages_checked`]);
/// 2. else, and at every retry: kswapd is woken for the order ([`Kernel::kswapd_4_1`],
///    run at once), and the check is made again at `min`;
/// 3. direct compaction ([`compact_4_1`]; asynchronous the first time, synchronous
///    after), then the check at `min`;
/// 4. direct reclaim ([`Kernel::direct_reclaim_4_1`]: nothing if compaction is ready,
///    else up to `2 << order` pages for an order this high), then the check at `min`;
/// 5. `should_alloc_retry`: with `__GFP_REPEAT`, back to 2 while the progress reclaim
///    reports adds up to less than the request's `2^order` pages; otherwise one last
///    synchronous compaction. Progress of nothing ends the request (the OOM path gives
///    up on costly orders).
///
/// Left out: `wait_iff_congested`'s 20 ms before a retry (no time passes within a
/// request, so kswapd does not run in between), and the difference between
/// asynchronous and synchronous migration, which never fails in the model (the mode
/// only decides when compaction is deferred).
pub(crate) fn alloc_4_1(kernel: &mut Kernel, req: &AllocRequest, repeat: bool) -> Attempt {
    let order = req.order();
    let mut out = Attempt {
        block: take(kernel, req, Mark::Low),
        ..Attempt::default()
    };
    let (mut reclaimed, mut sync) = (0u64, false);
    while out.block.is_none() {
        kernel.kswapd_4_1(order);
        out.block = take(kernel, req, Mark::Min)
            .or_else(|| compact_4_1(kernel, req, sync, &mut out.compaction));
        if out.block.is_some() {
            break;
        }
        sync = true;
        let r = kernel.direct_reclaim_4_1(order);
        out.reclaim += r.cost;
        reclaimed += r.progress();
        out.block = take(kernel, req, Mark::Min);
        if out.block.is_some() || r.progress() == 0 {
            // No progress: the OOM path, which gives up on costly orders (`nopage`).
            break;
        }
        if !(repeat && reclaimed < 1u64 << order.0) {
            out.block = compact_4_1(kernel, req, true, &mut out.compaction);
            break;
        }
    }
    out
}

/// `GFP_HIGHUSER_MOVABLE` asked by a kernel module or driver that holds the pages
/// (stress-highalloc's module, the balloon): from the movable lists, but pinned frames.
pub(crate) fn pinned_movable(order: Order) -> AllocRequest {
    AllocRequest::new(order)
        .migrate(MigrateType::Movable)
        .owner(OwnerKind::KernelUnmovable)
}

/// A block for `req` if 4.1's per-order check passes at `mark` and one is free.
fn take(kernel: &mut Kernel, req: &AllocRequest, mark: Mark) -> Option<Pfn> {
    let block = kernel.alloc_pages_checked(req, mark).ok().flatten()?;
    Some(block.pfn)
}

/// Linux 4.1's `__alloc_pages_direct_compact`: `try_to_compact_pages`
/// ([`CompactRequest::Deferred`]: `hugemm_mm` walks the zonelist with each zone's
/// deferral, passing over zones where the order is deferred, forgetting the order's
/// failures in a zone the walk leaves ready, deferring a zone where a synchronous run's
/// scanners met; asynchronous runs never defer), then, if a run started, the check at
/// `min`; the allocation it lets through resets its zone's deferral
/// (`compaction_defer_reset(.., true)`).
fn compact_4_1(
    kernel: &mut Kernel,
    req: &AllocRequest,
    sync: bool,
    time: &mut Nanos,
) -> Option<Pfn> {
    let order = req.order();
    let run = kernel.compact(CompactRequest::Deferred { order, sync });
    *time += run.cost;
    if !run.ran {
        return None;
    }
    let pfn = take(kernel, req, Mark::Min)?;
    kernel.compaction_deferral(pfn).reset(order, true);
    Some(pfn)
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
    use hugemm_mm::compaction::MAX_DEFER_SHIFT;
    use hugemm_mm::{FileId, WatermarkCheck};

    /// 64 MB on Linux 4.1's watermark check, empty.
    fn kernel_4_1() -> Kernel {
        let mem = hugemm_mm::MemConfig {
            bytes: 64 << 20,
            geometry: hugemm_hw::Geometry::X86_64,
        };
        let profile = hugemm_hw::MachineProfile::builtin("epyc-milan-kvm").unwrap();
        let mut k = Kernel::new(&mem, crate::mm_costs(&profile)).unwrap();
        k.set_watermark_check(WatermarkCheck::Linux4_1);
        k
    }

    /// [`kernel_4_1`] full of page cache read in order.
    fn full_4_1_kernel() -> Kernel {
        let mut k = kernel_4_1();
        k.file_read(FileId(1), 0, 20_000);
        k
    }

    fn huge_request() -> AllocRequest {
        pinned_movable(Order(9))
    }

    #[test]
    fn linux_4_1s_slow_path_gets_a_huge_page_its_fast_path_refuses() {
        let mut k = full_4_1_kernel();
        let low = k.watermarks().low;
        assert!(
            !k.zone_watermark_ok_4_1(Order(9), low),
            "the fast path refuses"
        );
        let wakes = k.stats().kswapd_wakes;
        let a = alloc_4_1(&mut k, &huge_request(), false);
        let pfn = a.block.expect("the slow path found a block");
        assert!(
            k.stats().kswapd_wakes > wakes,
            "kswapd was woken for order 9"
        );
        assert!(
            !k.compaction_deferral(pfn).deferred(Order(9)),
            "nothing failed, nothing deferred"
        );
        assert_eq!(
            k.stats().order_watermark_misses,
            0,
            "every block passed a check"
        );
        k.free_pages(pfn, Order(9)).unwrap();
        k.check_invariants().unwrap();
    }

    #[test]
    fn linux_4_1s_slow_path_gives_up_when_nothing_can_be_freed() {
        // Everything but a few free frames is unmovable kernel memory: neither reclaim
        // nor compaction can make a huge page, and the request fails without looping.
        let mut k = full_4_1_kernel();
        k.drop_caches();
        while k.phys().frames_free() > 600 {
            let req = AllocRequest::new(Order(0)).owner(OwnerKind::KernelUnmovable);
            k.alloc_pages(&req).unwrap();
        }
        let a = alloc_4_1(&mut k, &huge_request(), false);
        assert!(a.block.is_none());
        assert_eq!(a.reclaim, Nanos::ZERO, "nothing was reclaimable");
        k.check_invariants().unwrap();
    }

    #[test]
    fn with_gfp_repeat_a_request_retries_until_deferred_compaction_may_run_again() {
        // Page cache in 4-page files, every other one deleted: 64 MB with free memory in
        // 4-page holes, plenty for compaction, no free huge page. Compaction of order 9
        // is deferred for its next 64 considerations.
        let mut k = kernel_4_1();
        let files = (k.phys().frames_free() - 600) / 4;
        for f in 0..files {
            k.file_read(FileId(f as u32), 0, 4);
        }
        // What is left whole is taken (pinned) before the holes are made.
        while k.phys().has_free_block(Order(9)) {
            k.alloc_pages(&huge_request()).unwrap();
        }
        for f in (0..files).step_by(2) {
            k.file_delete(FileId(f as u32));
        }
        assert!(!k.phys().has_free_block(Order(9)));
        for _ in 0..MAX_DEFER_SHIFT {
            k.compaction_deferral(Pfn(0)).defer(Order(9));
        }
        // GFP_HIGHUSER_MOVABLE: compaction deferred, reclaim stands aside for it
        // (`compaction_ready`), one last compaction deferred too: the request fails.
        let mut plain = k.clone();
        let a = alloc_4_1(&mut plain, &huge_request(), false);
        assert!(a.block.is_none());
        assert_eq!((a.compaction, a.reclaim), (Nanos::ZERO, Nanos::ZERO));
        // __GFP_REPEAT: reclaim's progress (1 a round, standing aside) stays below 512,
        // so the request retries, each round counting against the deferral, until
        // compaction may run again and makes the huge page.
        let mut repeat = k;
        let a = alloc_4_1(&mut repeat, &huge_request(), true);
        let pfn = a.block.expect("compaction ran once the deferral expired");
        assert!(a.compaction > Nanos::ZERO);
        assert_eq!(a.reclaim, Nanos::ZERO, "reclaim stood aside every round");
        repeat.free_pages(pfn, Order(9)).unwrap();
        repeat.check_invariants().unwrap();
    }
}
