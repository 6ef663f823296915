//! Property tests (conventions 12): random sequences of operations on a small machine keep
//! every invariant of [`Kernel::check_invariants`] (frames conserved, free blocks disjoint
//! and maximally coalesced, mappings point at allocated anonymous frames whose reverse map
//! names them, counters agree with a recount), and split and collapse preserve
//! translations; pre-zeroing keeps zeroed blocks zeroed throughout and behind the dirty
//! ones on every list, and de-duplication of zero subpages keeps every present page's
//! content (zero-filled ones read as the zero page).

mod common;

use common::{machine, HUGE, PAGE};
use hugemm_hw::{Order, PageSize, Pid, VirtAddr};
use hugemm_mm::{
    AllocRequest, Block, HugeAdvice, Kernel, Madvise, MigrateType, MmError, OwnerKind,
    PrezeroScope, ScanStyle, Touch, Translation, ZeroScan,
};
use proptest::prelude::*;

/// One step. Indices pick among live processes, their VMAs and pages modulo their counts.
#[derive(Clone, Debug)]
enum Op {
    Spawn,
    Mmap {
        proc: u8,
        pages: u32,
        advice: u8,
    },
    Fault {
        proc: u8,
        vma: u8,
        page: u32,
        count: u16,
        write: bool,
        huge: bool,
    },
    Touch {
        proc: u8,
        vma: u8,
        page: u32,
        write: bool,
    },
    Collapse {
        proc: u8,
        vma: u8,
        page: u32,
    },
    Split {
        proc: u8,
        vma: u8,
        page: u32,
    },
    Munmap {
        proc: u8,
        vma: u8,
        page: u32,
        pages: u32,
    },
    DontNeed {
        proc: u8,
        vma: u8,
        page: u32,
        pages: u32,
    },
    Advise {
        proc: u8,
        vma: u8,
        page: u32,
        pages: u32,
        huge: bool,
    },
    KernelAlloc {
        order: u8,
        reclaimable: bool,
    },
    KernelFree {
        idx: u16,
    },
    Exit {
        proc: u8,
    },
    Prezero {
        frames: u16,
        max_order_only: bool,
    },
    Dedup {
        proc: u8,
        vma: u8,
        page: u32,
        max_zero: u16,
        linux: bool,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let page = 0u32..4096;
    prop_oneof![
        1 => Just(Op::Spawn),
        3 => (any::<u8>(), 1u32..5000, 0u8..3).prop_map(|(proc, pages, advice)| Op::Mmap { proc, pages, advice }),
        8 => (any::<u8>(), any::<u8>(), page.clone(), 1u16..3000, any::<bool>(), any::<bool>())
            .prop_map(|(proc, vma, page, count, write, huge)| Op::Fault { proc, vma, page, count, write, huge }),
        2 => (any::<u8>(), any::<u8>(), page.clone(), any::<bool>()).prop_map(|(proc, vma, page, write)| Op::Touch { proc, vma, page, write }),
        3 => (any::<u8>(), any::<u8>(), page.clone()).prop_map(|(proc, vma, page)| Op::Collapse { proc, vma, page }),
        3 => (any::<u8>(), any::<u8>(), page.clone()).prop_map(|(proc, vma, page)| Op::Split { proc, vma, page }),
        2 => (any::<u8>(), any::<u8>(), page.clone(), 1u32..1200).prop_map(|(proc, vma, page, pages)| Op::Munmap { proc, vma, page, pages }),
        2 => (any::<u8>(), any::<u8>(), page.clone(), 1u32..1200).prop_map(|(proc, vma, page, pages)| Op::DontNeed { proc, vma, page, pages }),
        1 => (any::<u8>(), any::<u8>(), page, 1u32..1200, any::<bool>())
            .prop_map(|(proc, vma, page, pages, huge)| Op::Advise { proc, vma, page, pages, huge }),
        2 => (0u8..11, any::<bool>()).prop_map(|(order, reclaimable)| Op::KernelAlloc { order, reclaimable }),
        2 => any::<u16>().prop_map(|idx| Op::KernelFree { idx }),
        1 => any::<u8>().prop_map(|proc| Op::Exit { proc }),
        2 => (any::<u16>(), any::<bool>()).prop_map(|(frames, max_order_only)| Op::Prezero { frames, max_order_only }),
        2 => (any::<u8>(), any::<u8>(), page_any(), 0u16..512, any::<bool>())
            .prop_map(|(proc, vma, page, max_zero, linux)| Op::Dedup { proc, vma, page, max_zero, linux }),
    ]
}

fn page_any() -> impl Strategy<Value = u32> {
    0u32..4096
}

struct World {
    k: Kernel,
    pids: Vec<Pid>,
    kernel_blocks: Vec<Block>,
}

impl World {
    fn pid(&self, i: u8) -> Option<Pid> {
        (!self.pids.is_empty()).then(|| self.pids[i as usize % self.pids.len()])
    }

    /// An address inside a VMA of process `proc`.
    fn addr(&self, proc: u8, vma: u8, page: u32) -> Option<(Pid, VirtAddr)> {
        let pid = self.pid(proc)?;
        let vmas: Vec<_> = self.k.vmas(pid).collect();
        let v = vmas.get(vma as usize % vmas.len().max(1))?;
        let pages = (v.end.0 - v.start.0) / PAGE;
        Some((pid, VirtAddr(v.start.0 + (page as u64 % pages) * PAGE)))
    }

    fn region_translations(&self, pid: Pid, va: VirtAddr) -> Vec<Option<Translation>> {
        let region = va.0 & !(HUGE - 1);
        (0..512)
            .map(|i| self.k.translate(pid, VirtAddr(region + i * PAGE)))
            .collect()
    }

    fn apply(&mut self, op: &Op) -> Result<(), TestCaseError> {
        match *op {
            Op::Spawn => self.pids.push(self.k.create_process()),
            Op::Mmap {
                proc,
                pages,
                advice,
            } => {
                if let Some(pid) = self.pid(proc) {
                    let advice = [
                        HugeAdvice::None,
                        HugeAdvice::Hugepage,
                        HugeAdvice::NoHugepage,
                    ][advice as usize];
                    let va = self.k.mmap(pid, pages as u64 * PAGE, advice).unwrap();
                    prop_assert!(pages < 512 || va.0.is_multiple_of(HUGE));
                }
            }
            Op::Fault {
                proc,
                vma,
                page,
                count,
                write,
                huge,
            } => self.fault(proc, vma, page, count, write, huge)?,
            Op::Touch {
                proc,
                vma,
                page,
                write,
            } => {
                if let Some((pid, va)) = self.addr(proc, vma, page) {
                    prop_assert_ne!(self.k.touch(pid, va, write), Touch::Segfault);
                }
            }
            Op::Collapse { proc, vma, page } => self.collapse(proc, vma, page)?,
            Op::Split { proc, vma, page } => self.split(proc, vma, page)?,
            Op::Munmap {
                proc,
                vma,
                page,
                pages,
            } => self.munmap(proc, vma, page, pages)?,
            Op::DontNeed {
                proc,
                vma,
                page,
                pages,
            } => {
                if let Some((pid, va)) = self.addr(proc, vma, page) {
                    self.k
                        .madvise(pid, va, pages as u64 * PAGE, Madvise::DontNeed)
                        .unwrap();
                    let last = (va.0 + pages as u64 * PAGE)
                        .min(self.k.vmas(pid).find(|v| v.contains(va.0)).unwrap().end.0);
                    for a in (va.0..last).step_by(PAGE as usize) {
                        prop_assert_eq!(self.k.touch(pid, VirtAddr(a), false), Touch::NotPresent);
                    }
                }
            }
            Op::Advise {
                proc,
                vma,
                page,
                pages,
                huge,
            } => {
                if let Some((pid, va)) = self.addr(proc, vma, page) {
                    let advice = if huge {
                        Madvise::Hugepage
                    } else {
                        Madvise::NoHugepage
                    };
                    // Cutting a VMA inside a huge mapping splits it, which needs a
                    // page-table page: the only way advice can fail.
                    match self.k.madvise(pid, va, pages as u64 * PAGE, advice) {
                        Ok(_) | Err(MmError::OutOfMemory) => {}
                        Err(e) => prop_assert!(false, "madvise failed: {e}"),
                    }
                }
            }
            Op::KernelAlloc { order, reclaimable } => {
                let (mt, owner) = match reclaimable {
                    true => (MigrateType::Reclaimable, OwnerKind::KernelReclaimable),
                    false => (MigrateType::Unmovable, OwnerKind::KernelUnmovable),
                };
                let req = AllocRequest::new(Order(order)).migrate(mt).owner(owner);
                let fits = self.k.phys().has_free_block(Order(order));
                match self.k.alloc_pages(&req) {
                    Ok(b) => self.kernel_blocks.push(b),
                    Err(_) => prop_assert!(!fits, "allocation failed although a block fits"),
                }
            }
            Op::KernelFree { idx } => {
                if !self.kernel_blocks.is_empty() {
                    let b = self
                        .kernel_blocks
                        .swap_remove(idx as usize % self.kernel_blocks.len());
                    self.k.free_pages(b.pfn, b.order).unwrap();
                }
            }
            Op::Exit { proc } => {
                if let Some(pid) = self.pid(proc) {
                    self.k.exit_process(pid);
                    self.pids.retain(|&p| p != pid);
                    prop_assert_eq!(self.k.rss_bytes(pid), 0);
                }
            }
            Op::Prezero {
                frames,
                max_order_only,
            } => {
                let scope = match max_order_only {
                    true => PrezeroScope::MaxOrder,
                    false => PrezeroScope::AllOrders,
                };
                let before = self.k.phys().zeroed_free_frames();
                let done: u64 = self
                    .k
                    .prezero(frames as u64, scope)
                    .iter()
                    .map(|b| 1u64 << b.1 .0)
                    .sum();
                prop_assert!(done <= frames as u64);
                prop_assert_eq!(self.k.phys().zeroed_free_frames(), before + done);
            }
            Op::Dedup {
                proc,
                vma,
                page,
                max_zero,
                linux,
            } => self.dedup(proc, vma, page, max_zero as u32, linux)?,
        }
        Ok(())
    }

    fn dedup(
        &mut self,
        proc: u8,
        vma: u8,
        page: u32,
        max_zero: u32,
        linux: bool,
    ) -> Result<(), TestCaseError> {
        let Some((pid, va)) = self.addr(proc, vma, page) else {
            return Ok(());
        };
        let before = self.region_translations(pid, va);
        let (rss, useful) = (self.k.rss_bytes(pid), self.k.useful_bytes(pid));
        let style = if linux {
            ScanStyle::Underused
        } else {
            ScanStyle::Full
        };
        let Ok(out) = self
            .k
            .dedup_zero_subpages(pid, va, ZeroScan { max_zero, style })
        else {
            return Ok(());
        };
        prop_assert!(
            !out.split || out.zero > max_zero,
            "split a page that was not underused"
        );
        let after = self.region_translations(pid, va);
        let remapped = before
            .iter()
            .zip(&after)
            .filter(|(b, a)| b.map(|t| t.pa) != a.map(|t| t.pa))
            .count() as u32;
        prop_assert_eq!(remapped, out.recovered, "only recovered pages moved");
        prop_assert!(after.iter().all(|t| t.is_some()), "a page went missing");
        prop_assert_eq!(self.k.rss_bytes(pid), rss - out.recovered as u64 * PAGE);
        prop_assert!(self.k.useful_bytes(pid) <= useful);
        Ok(())
    }

    fn fault(
        &mut self,
        proc: u8,
        vma: u8,
        page: u32,
        count: u16,
        write: bool,
        huge: bool,
    ) -> Result<(), TestCaseError> {
        let Some((pid, va)) = self.addr(proc, vma, page) else {
            return Ok(());
        };
        let want = if huge { PageSize::Huge } else { PageSize::Base };
        for i in 0..count as u64 {
            let a = VirtAddr(va.0 + i * PAGE);
            let before = self.k.touch(pid, a, write);
            if before == Touch::Segfault {
                break;
            }
            let out = self.k.fault(pid, a, write, want);
            if out.oom {
                prop_assert_eq!(
                    self.k.touch(pid, a, write),
                    before,
                    "an OOM fault changed the mapping"
                );
                break;
            }
            prop_assert!(
                matches!(self.k.touch(pid, a, write), Touch::Mapped { .. }),
                "fault did not map {:?}",
                a
            );
        }
        Ok(())
    }

    fn collapse(&mut self, proc: u8, vma: u8, page: u32) -> Result<(), TestCaseError> {
        let Some((pid, va)) = self.addr(proc, vma, page) else {
            return Ok(());
        };
        let before = self.region_translations(pid, va);
        let rss = self.k.rss_bytes(pid);
        if let Ok(out) = self.k.collapse(pid, va) {
            let after = self.region_translations(pid, va);
            let frames = before.iter().flatten().filter(|t| !t.zero_page).count() as u32;
            prop_assert_eq!(out.copied, frames);
            for (b, a) in before.iter().zip(&after) {
                prop_assert!(b.is_none() || a.is_some(), "collapse lost a present page");
                prop_assert_eq!(a.map(|t| t.size), Some(PageSize::Huge));
            }
            prop_assert_eq!(self.k.rss_bytes(pid), rss + (512 - frames as u64) * PAGE);
        }
        Ok(())
    }

    fn split(&mut self, proc: u8, vma: u8, page: u32) -> Result<(), TestCaseError> {
        let Some((pid, va)) = self.addr(proc, vma, page) else {
            return Ok(());
        };
        let before = self.region_translations(pid, va);
        let rss = self.k.rss_bytes(pid);
        if self.k.split(pid, va).is_ok() {
            let after = self.region_translations(pid, va);
            for (b, a) in before.iter().zip(&after) {
                // Frames stay put; the huge zero page becomes 4 KB zero-page entries.
                let key = |t: &Option<Translation>| {
                    t.map(|t| if t.zero_page { None } else { Some(t.pa) })
                };
                prop_assert_eq!(key(b), key(a), "split moved a page");
                prop_assert_eq!(a.map(|t| t.size), Some(PageSize::Base));
            }
            prop_assert_eq!(self.k.rss_bytes(pid), rss);
        }
        Ok(())
    }

    fn munmap(&mut self, proc: u8, vma: u8, page: u32, pages: u32) -> Result<(), TestCaseError> {
        let Some((pid, va)) = self.addr(proc, vma, page) else {
            return Ok(());
        };
        let len = pages as u64 * PAGE;
        self.k.munmap(pid, va, len).unwrap();
        for a in (va.0..va.0 + len).step_by(PAGE as usize) {
            prop_assert_eq!(self.k.touch(pid, VirtAddr(a), false), Touch::Segfault);
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, max_shrink_iters: 2000, ..ProptestConfig::default() })]

    #[test]
    fn random_operations_keep_every_invariant(mb in prop_oneof![Just(16u64), Just(32)], ops in prop::collection::vec(op(), 1..100)) {
        let mut w = World { k: machine(mb), pids: Vec::new(), kernel_blocks: Vec::new() };
        w.pids.push(w.k.create_process());
        for op in &ops {
            w.apply(op)?;
            if let Err(e) = w.k.check_invariants() {
                return Err(TestCaseError::fail(format!("after {op:?}: {e}")));
            }
        }
        let total = w.k.phys().frames_total();
        for pid in w.pids.clone() {
            w.k.exit_process(pid);
        }
        for b in std::mem::take(&mut w.kernel_blocks) {
            w.k.free_pages(b.pfn, b.order).unwrap();
        }
        w.k.check_invariants().unwrap();
        prop_assert_eq!(w.k.phys().frames_free(), total, "frames leaked");
    }
}
