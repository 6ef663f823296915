//! The kernel-side phases of processes (file I/O through the page cache, kernel
//! allocations with lifetimes, `drop_caches`, `compact_memory`, stress-highalloc attempts)
//! and the ledger that frees kernel memory when its lifetime ends.
//!
//! Owns when kernel memory is freed and how a phase's kernel work is charged to its
//! process. It must not decide anything a policy decides (page sizes, promotions); the
//! mechanisms are the kernel model's.

use crate::compaction::{alloc_4_1, direct_compact, pinned_movable};
use crate::engine::Engine;
use crate::results::HighAllocResult;
use crate::run::Stop;
use hugemm_hw::{Nanos, Order, Pfn, Picos};
use hugemm_mm::{KernelStats, KmemCache, KmemHandle, KmemKind, WatermarkCheck};
use hugemm_workload::{FileId, HighAllocGfp, KernelMem, Lifetime, Phase};
use rand::Rng;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

/// Kernel blocks waiting to be freed: at a time, or when their process exits.
#[derive(Clone, Debug, Default)]
pub(crate) struct KmemLedger {
    /// (free time, sequence, block), earliest first; the sequence keeps frees in
    /// allocation order among equal times.
    timed: BinaryHeap<Reverse<(Picos, u64, KmemHandle)>>,
    /// Blocks freed at exit, per process index.
    at_exit: Vec<Vec<KmemHandle>>,
    /// Blocks freed when a file is deleted, by file, in allocation order.
    with_file: HashMap<FileId, Vec<KmemHandle>>,
    seq: u64,
}

impl KmemLedger {
    /// Remember `h`, allocated by process `proc` at `now`, to free it per `life`.
    fn hold(&mut self, proc: usize, h: KmemHandle, life: Lifetime, now: Picos, draw: Nanos) {
        let at = match life {
            Lifetime::Fixed(d) => now + Picos::from(d),
            Lifetime::Exponential(_) => now + Picos::from(draw),
            Lifetime::Process => {
                if self.at_exit.len() <= proc {
                    self.at_exit.resize_with(proc + 1, Vec::new);
                }
                return self.at_exit[proc].push(h);
            }
            Lifetime::Forever => return,
            Lifetime::UntilDeleted(file) => return self.with_file.entry(file).or_default().push(h),
        };
        self.seq += 1;
        self.timed.push(Reverse((at, self.seq, h)));
    }

    /// Blocks whose time has come by `now`, in order.
    pub fn due(&mut self, now: Picos) -> Vec<KmemHandle> {
        let mut out = Vec::new();
        while let Some(Reverse((at, _, h))) = self.timed.peek().copied() {
            if at > now {
                break;
            }
            self.timed.pop();
            out.push(h);
        }
        out
    }

    /// Blocks to free now that `file` is deleted.
    pub fn take_file(&mut self, file: FileId) -> Vec<KmemHandle> {
        self.with_file.remove(&file).unwrap_or_default()
    }

    /// Blocks to free when process `proc` exits.
    pub fn take_exit(&mut self, proc: usize) -> Vec<KmemHandle> {
        self.at_exit
            .get_mut(proc)
            .map(std::mem::take)
            .unwrap_or_default()
    }
}

/// Draw an exponential lifetime with mean `mean` from `rng` (inverse transform).
fn exponential(rng: &mut impl Rng, mean: Nanos) -> Nanos {
    let u: f64 = rng.gen_range(f64::EPSILON..1.0);
    Nanos((-u.ln() * mean.0 as f64).round() as u64)
}

fn mm_file(f: FileId) -> hugemm_mm::FileId {
    hugemm_mm::FileId(f.0)
}

impl Engine {
    /// Free kernel blocks whose lifetime ended by `now`.
    pub(crate) fn expire_kmem(&mut self, now: Picos) {
        let due = self.ledger.due(now);
        self.kfree_all(due);
    }

    /// Free the ledger's blocks `blocks`, counting the frees the kernel refuses.
    fn kfree_all(&mut self, blocks: Vec<KmemHandle>) {
        for h in blocks {
            if self.kernel.kfree(h).is_err() {
                self.kmem_errors += 1;
            }
        }
    }

    /// Free the kernel blocks process `i` held until its exit.
    pub(crate) fn free_exit_kmem(&mut self, i: usize) {
        let held = self.ledger.take_exit(i);
        self.kfree_all(held);
    }

    /// Carry out a kernel-side phase of process `i` on core `c`; returns its cost.
    pub(crate) fn kernel_phase(
        &mut self,
        i: usize,
        c: usize,
        phase: &Phase,
    ) -> Result<Picos, Stop> {
        let now = self.cores[c].now;
        match phase {
            Phase::FileRead {
                file,
                offset,
                bytes,
            } => self.file_io(*file, *offset, *bytes, false),
            Phase::FileWrite {
                file,
                offset,
                bytes,
            } => self.file_io(*file, *offset, *bytes, true),
            Phase::FileLookup { file, found } => {
                let cost = self.kernel.file_lookup(mm_file(*file), *found);
                Ok(Picos::from(cost))
            }
            Phase::FileDelete { file } => {
                let pages = self.kernel.file_delete(mm_file(*file));
                let held = self.ledger.take_file(*file);
                self.kfree_all(held);
                Ok(self.freeing_cost(pages))
            }
            Phase::KernelAlloc {
                kind,
                order,
                object_bytes,
                bytes,
                lifetime,
            } => {
                let base = self.kernel.geometry().base_bytes();
                let kind = match kind {
                    KernelMem::Unmovable => KmemKind::Unmovable,
                    KernelMem::Reclaimable => KmemKind::Reclaimable,
                };
                let cache = match object_bytes {
                    Some(n) => KmemCache {
                        kind,
                        order: Order(*order),
                        object_bytes: *n,
                    },
                    None => KmemCache::pages(kind, Order(*order), base),
                };
                self.kernel_alloc(i, now, cache, *bytes, *lifetime)
            }
            Phase::DropCaches => {
                let pages = self.kernel.drop_caches();
                Ok(self.freeing_cost(pages))
            }
            Phase::CompactMemory => {
                let out = self.kernel.compact(hugemm_mm::CompactRequest::Full);
                Ok(Picos::from(out.cost))
            }
            Phase::HighAlloc {
                label, share, gfp, ..
            } => Ok(self.high_alloc(i, now, label, *share, *gfp)),
            Phase::Balloon { target } => Ok(self.balloon_to(*target)),
            _ => unreachable!("kernel_phase called with a user phase"),
        }
    }

    /// Freeing `pages` page-cache pages: one allocator operation each.
    fn freeing_cost(&self, pages: u64) -> Picos {
        Picos::from(Nanos(self.kernel.costs().alloc.0 * pages))
    }

    /// A read or (`write`) a write of `bytes` of `file` from `offset`.
    fn file_io(
        &mut self,
        file: FileId,
        offset: u64,
        bytes: u64,
        write: bool,
    ) -> Result<Picos, Stop> {
        let page = self.kernel.geometry().base_bytes();
        let first = offset / page;
        let last = (offset + bytes).div_ceil(page);
        let pages = last.saturating_sub(first);
        let out = if write {
            self.kernel.file_write(mm_file(file), first, pages)
        } else {
            self.kernel.file_read(mm_file(file), first, pages)
        };
        if out.oom {
            return Err(Stop::Oom);
        }
        let mut cost = out.cost;
        if let (true, Some(h)) = (out.inserted > 0, self.host.as_mut()) {
            // In a guest: the frames read into are written for the first time as far as
            // the host knows (a frame it backs already costs a page-table lookup).
            let f = mm_file(file);
            for index in first..last {
                if let Some(pfn) = self.kernel.page_cache_frame(f, index) {
                    cost += h.populate(pfn.0 * page, page).time;
                }
            }
        }
        Ok(Picos::from(cost))
    }

    fn kernel_alloc(
        &mut self,
        i: usize,
        now: Picos,
        cache: KmemCache,
        bytes: u64,
        life: Lifetime,
    ) -> Result<Picos, Stop> {
        let base = self.kernel.geometry().base_bytes();
        if let Err(e) = cache.objects_per_slab(base) {
            return Err(Stop::Error(format!("kernel allocation {cache:?}: {e}")));
        }
        let mut cost = Nanos::ZERO;
        for _ in 0..bytes.div_ceil(cache.object_bytes) {
            let (h, t) = self.kernel.kmem_cache_alloc(cache).map_err(|e| match e {
                hugemm_mm::MmError::OutOfMemory => Stop::Oom,
                e => Stop::Error(format!("kernel allocation {cache:?}: {e}")),
            })?;
            cost += t;
            let draw = match life {
                Lifetime::Exponential(mean) => exponential(&mut self.procs[i].rng, mean),
                _ => Nanos::ZERO,
            };
            self.ledger.hold(i, h, life, now, draw);
        }
        Ok(Picos::from(cost))
    }

    /// Inflate or deflate the balloon to `target` bytes (`Phase::Balloon`); in a guest each
    /// page inflated is discarded by the host (`host/`). Returns the time, charged to
    /// the driver's process.
    pub(crate) fn balloon_to(&mut self, target: u64) -> Picos {
        let page = self.kernel.geometry().base_bytes();
        let want = (target / page) as usize;
        // Balloon pages are movable, held by the driver.
        let req = pinned_movable(Order(0));
        let mut cost = Nanos::ZERO;
        while self.balloon.len() < want {
            let Ok(block) = self.kernel.alloc_pages(&req) else {
                break;
            };
            cost += self.kernel.costs().alloc;
            if let Some(h) = self.host.as_mut() {
                cost += h.discard(block.pfn.0 * page, page);
            }
            self.balloon.push(block.pfn);
        }
        while self.balloon.len() > want {
            let pfn = self.balloon.pop().expect("longer than want");
            cost += self.kernel.costs().alloc;
            if self.kernel.free_pages(pfn, Order(0)).is_err() {
                self.kmem_errors += 1;
            }
        }
        Picos::from(cost)
    }

    /// One stress-highalloc attempt made at once (no `interval`): request `share` of
    /// memory as huge pages back to back, hold them, free them at the end. The attempt's
    /// time is charged to the process.
    fn high_alloc(
        &mut self,
        i: usize,
        now: Picos,
        label: &str,
        share: f64,
        gfp: HighAllocGfp,
    ) -> Picos {
        let mut pass = HighAllocPass::new(self, label, share, gfp, None, now);
        let mut cost = Picos(0);
        while pass.made < pass.requested {
            cost += self.high_alloc_one(&mut pass);
        }
        self.high_alloc_end(i, pass, now + cost);
        cost
    }

    /// The next request of `pass`; returns its time.
    pub(crate) fn high_alloc_one(&mut self, pass: &mut HighAllocPass) -> Picos {
        let huge = self.kernel.geometry().huge_order();
        let req = pinned_movable(huge);
        let mut cost = self.kernel.costs().alloc;
        pass.made += 1;
        let got = if self.kernel.watermark_check() == WatermarkCheck::Linux4_1 {
            let a = alloc_4_1(&mut self.kernel, &req, pass.gfp.repeat());
            cost += a.reclaim + a.compaction;
            pass.compaction += a.compaction;
            a.block
        } else {
            let mut got = self.kernel.alloc_pages(&req).ok();
            if got.is_none() {
                let t = direct_compact(&mut self.kernel, huge);
                cost += t;
                pass.compaction += t;
                got = self.kernel.alloc_pages(&req).ok();
            }
            got.map(|b| b.pfn)
        };
        match got {
            Some(pfn) => pass.held.push(pfn),
            None => {
                pass.first_failure.get_or_insert(pass.made);
            }
        }
        Picos::from(cost)
    }

    /// Free what `pass` holds and record it for process `i`; `end` is when its last
    /// request returned.
    pub(crate) fn high_alloc_end(&mut self, i: usize, pass: HighAllocPass, end: Picos) {
        let huge = self.kernel.geometry().huge_order();
        for pfn in &pass.held {
            if self.kernel.free_pages(*pfn, huge).is_err() {
                self.kmem_errors += 1;
            }
        }
        self.apply_tlb_flushes();
        let stats = self.kernel.stats();
        let allocated = pass.held.len() as u64;
        self.highalloc.push(HighAllocResult {
            process: self.procs[i].spec.name.clone(),
            label: pass.label,
            time_ns: pass.start.to_nanos().0,
            duration_ns: end.0.saturating_sub(pass.start.0) / 1000,
            requested: pass.requested,
            allocated,
            success_rate: if pass.requested == 0 {
                0.0
            } else {
                allocated as f64 / pass.requested as f64
            },
            compaction_time_ns: pass.compaction.0,
            first_failure: pass.first_failure,
            reclaimed_pages: stats.pgsteal_direct - pass.stats_at_start.pgsteal_direct,
            order_watermark_misses: stats.order_watermark_misses
                - pass.stats_at_start.order_watermark_misses,
        });
    }
}

/// A stress-highalloc pass under way ([`Phase::HighAlloc`]).
#[derive(Clone, Debug)]
pub(crate) struct HighAllocPass {
    label: String,
    gfp: HighAllocGfp,
    /// Requests to make, and made so far.
    pub requested: u64,
    pub made: u64,
    /// Time from one request's start to the next's, if paced.
    pub interval: Option<Picos>,
    /// When the next request may start.
    pub next: Picos,
    start: Picos,
    held: Vec<Pfn>,
    first_failure: Option<u64>,
    compaction: Nanos,
    stats_at_start: KernelStats,
}

impl HighAllocPass {
    /// A pass starting at `now` on `engine`'s machine.
    pub(crate) fn new(
        engine: &Engine,
        label: &str,
        share: f64,
        gfp: HighAllocGfp,
        interval: Option<Nanos>,
        now: Picos,
    ) -> HighAllocPass {
        let huge = engine.kernel.geometry().huge_order();
        let frames = engine.kernel.phys().frames_total();
        HighAllocPass {
            label: label.to_string(),
            gfp,
            requested: ((frames as f64 * share.clamp(0.0, 1.0)) as u64) >> huge.0,
            made: 0,
            interval: interval.map(Picos::from),
            next: now,
            start: now,
            held: Vec::new(),
            first_failure: None,
            compaction: Nanos::ZERO,
            stats_at_start: *engine.kernel.stats(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hugemm_hw::Pfn;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn h(pfn: u64) -> KmemHandle {
        KmemHandle {
            pfn: Pfn(pfn),
            order: Order(0),
            id: pfn,
        }
    }

    #[test]
    fn blocks_are_freed_when_their_time_comes_in_allocation_order() {
        let mut l = KmemLedger::default();
        let t = |ms| Picos::from(Nanos::from_millis(ms));
        l.hold(
            0,
            h(1),
            Lifetime::Fixed(Nanos::from_millis(5)),
            t(0),
            Nanos::ZERO,
        );
        l.hold(
            0,
            h(2),
            Lifetime::Fixed(Nanos::from_millis(5)),
            t(0),
            Nanos::ZERO,
        );
        l.hold(
            0,
            h(3),
            Lifetime::Fixed(Nanos::from_millis(1)),
            t(0),
            Nanos::ZERO,
        );
        l.hold(1, h(4), Lifetime::Process, t(0), Nanos::ZERO);
        l.hold(1, h(5), Lifetime::Forever, t(0), Nanos::ZERO);
        assert_eq!(l.due(t(2)), vec![h(3)]);
        assert_eq!(l.due(t(5)), vec![h(1), h(2)]);
        assert!(l.due(t(1_000)).is_empty());
        assert_eq!(l.take_exit(1), vec![h(4)]);
        assert!(l.take_exit(1).is_empty() && l.take_exit(7).is_empty());
    }

    #[test]
    fn exponential_lifetimes_have_the_requested_mean() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let n = 20_000;
        let mean = Nanos::from_millis(100);
        let sum: u64 = (0..n).map(|_| exponential(&mut rng, mean).0).sum();
        let got = sum as f64 / n as f64;
        assert!((got / mean.0 as f64 - 1.0).abs() < 0.03, "mean {got}");
    }
}
