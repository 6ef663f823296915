//! Property tests of superpage reservations (conventions 12): random sequences of faults
//! that reserve (dense and sparse), unmaps, `MADV_DONTNEED`, advice cuts, kernel
//! allocations and page-cache reads that put memory under pressure, collapses, splits,
//! compaction and exits keep every invariant of [`Kernel::check_invariants`] (which
//! checks reservations: each reserved frame owned by one reservation, allocated, mapped
//! at its offset if populated and by nobody otherwise), lose no frame, and are
//! deterministic: the same operations give the same kernel, bit for bit.

mod common;

use common::{machine, HUGE, PAGE};
use hugemm_hw::{Order, PageSize, Pid, VirtAddr};
use hugemm_mm::{
    CompactRequest, FaultRequest, FileId, HugeAdvice, Kernel, KmemHandle, KmemKind, Madvise,
    MmError, Touch, Translation,
};
use proptest::prelude::*;

/// One step. Indices pick among live processes, their VMAs and pages modulo their counts.
#[derive(Clone, Debug)]
enum Op {
    Spawn,
    Mmap {
        proc: u8,
        pages: u32,
    },
    Fault {
        proc: u8,
        vma: u8,
        page: u32,
        count: u16,
        stride: u8,
        write: bool,
        reserve: bool,
        promote: bool,
    },
    /// Write every page of the region holding the address, in a rotated order.
    Fill {
        proc: u8,
        vma: u8,
        page: u32,
        rotate: u16,
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
    },
    Kmalloc {
        order: u8,
        count: u16,
    },
    Kfree {
        idx: u16,
        count: u16,
    },
    FileRead {
        file: u8,
        pages: u16,
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
    Compact,
    Exit {
        proc: u8,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let page = 0u32..4096;
    prop_oneof![
        1 => Just(Op::Spawn),
        3 => (any::<u8>(), 1u32..3000).prop_map(|(proc, pages)| Op::Mmap { proc, pages }),
        10 => (any::<u8>(), any::<u8>(), page.clone(), 1u16..1100, 1u8..8, prop::bool::weighted(0.85), prop::bool::weighted(0.9), prop::bool::weighted(0.8))
            .prop_map(|(proc, vma, page, count, stride, write, reserve, promote)| Op::Fault { proc, vma, page, count, stride, write, reserve, promote }),
        3 => (any::<u8>(), any::<u8>(), page.clone(), 0u16..512).prop_map(|(proc, vma, page, rotate)| Op::Fill { proc, vma, page, rotate }),
        2 => (any::<u8>(), any::<u8>(), page.clone(), 1u32..1200).prop_map(|(proc, vma, page, pages)| Op::Munmap { proc, vma, page, pages }),
        2 => (any::<u8>(), any::<u8>(), page.clone(), 1u32..1200).prop_map(|(proc, vma, page, pages)| Op::DontNeed { proc, vma, page, pages }),
        1 => (any::<u8>(), any::<u8>(), page.clone(), 1u32..600).prop_map(|(proc, vma, page, pages)| Op::Advise { proc, vma, page, pages }),
        3 => (0u8..4, 1u16..400).prop_map(|(order, count)| Op::Kmalloc { order, count }),
        2 => (any::<u16>(), 1u16..400).prop_map(|(idx, count)| Op::Kfree { idx, count }),
        2 => (0u8..4, 1u16..1500).prop_map(|(file, pages)| Op::FileRead { file, pages }),
        1 => (any::<u8>(), any::<u8>(), page.clone()).prop_map(|(proc, vma, page)| Op::Collapse { proc, vma, page }),
        1 => (any::<u8>(), any::<u8>(), page).prop_map(|(proc, vma, page)| Op::Split { proc, vma, page }),
        1 => Just(Op::Compact),
        1 => any::<u8>().prop_map(|proc| Op::Exit { proc }),
    ]
}

struct World {
    k: Kernel,
    pids: Vec<Pid>,
    kmem: Vec<KmemHandle>,
}

impl World {
    fn new(mb: u64) -> World {
        let mut k = machine(mb);
        let pids = vec![k.create_process()];
        World {
            k,
            pids,
            kmem: Vec::new(),
        }
    }

    fn pid(&self, i: u8) -> Option<Pid> {
        (!self.pids.is_empty()).then(|| self.pids[i as usize % self.pids.len()])
    }

    fn addr(&self, proc: u8, vma: u8, page: u32) -> Option<(Pid, VirtAddr)> {
        let pid = self.pid(proc)?;
        let vmas: Vec<_> = self.k.vmas(pid).collect();
        let v = vmas.get(vma as usize % vmas.len().max(1))?;
        let pages = (v.end.0 - v.start.0) / PAGE;
        Some((pid, VirtAddr(v.start.0 + (page as u64 % pages) * PAGE)))
    }

    fn apply(&mut self, op: &Op) -> Result<(), TestCaseError> {
        match *op {
            Op::Spawn => self.pids.push(self.k.create_process()),
            Op::Mmap { proc, pages } => {
                if let Some(pid) = self.pid(proc) {
                    self.k
                        .mmap(pid, pages as u64 * PAGE, HugeAdvice::None)
                        .unwrap();
                }
            }
            Op::Fault {
                proc,
                vma,
                page,
                count,
                stride,
                write,
                reserve,
                promote,
            } => {
                let req = FaultRequest::new(PageSize::Base)
                    .reserve(reserve)
                    .promote(promote);
                self.fault(proc, vma, page, count, stride, write, req)?;
            }
            Op::Fill {
                proc,
                vma,
                page,
                rotate,
            } => self.fill(proc, vma, page, rotate)?,
            Op::Munmap {
                proc,
                vma,
                page,
                pages,
            } => {
                if let Some((pid, va)) = self.addr(proc, vma, page) {
                    self.k.munmap(pid, va, pages as u64 * PAGE).unwrap();
                }
            }
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
                    prop_assert_eq!(self.k.touch(pid, va, false), Touch::NotPresent);
                }
            }
            Op::Advise {
                proc,
                vma,
                page,
                pages,
            } => {
                if let Some((pid, va)) = self.addr(proc, vma, page) {
                    match self
                        .k
                        .madvise(pid, va, pages as u64 * PAGE, Madvise::NoHugepage)
                    {
                        Ok(_) | Err(MmError::OutOfMemory) => {}
                        Err(e) => prop_assert!(false, "madvise failed: {e}"),
                    }
                }
            }
            Op::Kmalloc { order, count } => {
                for _ in 0..count {
                    match self.k.kmalloc(KmemKind::Unmovable, Order(order)) {
                        Ok((h, _)) => self.kmem.push(h),
                        Err(_) => break,
                    }
                }
            }
            Op::Kfree { idx, count } => {
                for i in 0..count as usize {
                    if self.kmem.is_empty() {
                        break;
                    }
                    let h = self.kmem.swap_remove((idx as usize + i) % self.kmem.len());
                    self.k.kfree(h).unwrap();
                }
            }
            Op::FileRead { file, pages } => {
                self.k.file_read(FileId(file as u32), 0, pages as u64);
            }
            Op::Collapse { proc, vma, page } => {
                if let Some((pid, va)) = self.addr(proc, vma, page) {
                    let before = self.translations(pid, va);
                    if self.k.collapse(pid, va).is_ok() {
                        prop_assert!(self.k.reservation(pid, va).is_none());
                        let after = self.translations(pid, va);
                        for (b, a) in before.iter().zip(&after) {
                            prop_assert!(b.is_none() || a.is_some(), "collapse lost a page");
                        }
                    }
                }
            }
            Op::Split { proc, vma, page } => {
                if let Some((pid, va)) = self.addr(proc, vma, page) {
                    let _ = self.k.split(pid, va);
                }
            }
            Op::Compact => {
                let reserved: Vec<_> = self.reserved_translations();
                self.k.compact(CompactRequest::Full);
                prop_assert_eq!(
                    reserved,
                    self.reserved_translations(),
                    "compaction moved a reserved frame"
                );
            }
            Op::Exit { proc } => {
                if let Some(pid) = self.pid(proc) {
                    self.k.exit_process(pid);
                    self.pids.retain(|&p| p != pid);
                }
            }
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn fault(
        &mut self,
        proc: u8,
        vma: u8,
        page: u32,
        count: u16,
        stride: u8,
        write: bool,
        req: FaultRequest,
    ) -> Result<(), TestCaseError> {
        let Some((pid, va)) = self.addr(proc, vma, page) else {
            return Ok(());
        };
        for i in 0..count as u64 {
            let a = VirtAddr(va.0 + i * stride as u64 * PAGE);
            let before = self.k.touch(pid, a, write);
            if before == Touch::Segfault {
                break;
            }
            let out = self.k.fault_with(pid, a, write, req);
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
            if let Some(r) = self.k.reservation(pid, a) {
                let pa = self.k.translate(pid, a).unwrap();
                if !pa.zero_page {
                    let i = (a.0 % HUGE) / PAGE;
                    prop_assert_eq!(
                        pa.pa / PAGE,
                        r.base.0 + i,
                        "reserved page not at its offset"
                    );
                }
            }
        }
        Ok(())
    }

    /// Write-fault every page of the region holding the address (reserving, promoting),
    /// starting at page `rotate`; a region inside its VMA with a free block, touched
    /// from empty, ends as one huge mapping.
    fn fill(&mut self, proc: u8, vma: u8, page: u32, rotate: u16) -> Result<(), TestCaseError> {
        let Some((pid, va)) = self.addr(proc, vma, page) else {
            return Ok(());
        };
        let region = va.0 & !(HUGE - 1);
        let fresh = self
            .k
            .fault_info(pid, VirtAddr(region))
            .is_some_and(|i| i.huge_fits && i.region_empty);
        let req = FaultRequest::new(PageSize::Base).reserve(true);
        let mut reserved_all = fresh;
        for i in 0..512u64 {
            let a = VirtAddr(region + ((i + rotate as u64) % 512) * PAGE);
            if self.k.touch(pid, a, true) == Touch::Segfault {
                continue;
            }
            let out = self.k.fault_with(pid, a, true, req);
            if out.oom {
                return Ok(());
            }
            reserved_all &=
                i == 0 || self.k.reservation(pid, a).is_some() || out.size == PageSize::Huge;
        }
        if reserved_all {
            let t = self.k.translate(pid, VirtAddr(region)).unwrap();
            prop_assert_eq!(
                t.size,
                PageSize::Huge,
                "a fully populated reservation was not promoted"
            );
        }
        Ok(())
    }

    fn translations(&self, pid: Pid, va: VirtAddr) -> Vec<Option<Translation>> {
        let region = va.0 & !(HUGE - 1);
        (0..512)
            .map(|i| self.k.translate(pid, VirtAddr(region + i * PAGE)))
            .collect()
    }

    /// Every page of every VMA mapped from a reservation, with its physical address.
    fn reserved_translations(&self) -> Vec<(Pid, u64, u64)> {
        let mut out = Vec::new();
        for &pid in &self.pids {
            for v in self.k.vmas(pid) {
                for a in (v.start.0..v.end.0).step_by(PAGE as usize) {
                    if self.k.reservation(pid, VirtAddr(a)).is_some() {
                        if let Some(t) = self.k.translate(pid, VirtAddr(a)) {
                            out.push((pid, a, t.pa));
                        }
                    }
                }
            }
        }
        out
    }

    /// Everything observable: counters, free memory, reservations, every translation.
    fn fingerprint(&self) -> String {
        let mut s = format!("{:?}\n{:?}\n", self.k.stats(), self.k.reservation_census());
        s += &format!("{:?}\n", self.k.phys().free_blocks_by_order());
        for &pid in &self.pids {
            for v in self.k.vmas(pid) {
                for a in (v.start.0..v.end.0).step_by(PAGE as usize) {
                    s += &format!("{:?}", self.k.translate(pid, VirtAddr(a)));
                }
            }
        }
        s
    }
}

fn run(mb: u64, ops: &[Op]) -> Result<World, TestCaseError> {
    let mut w = World::new(mb);
    for op in ops {
        w.apply(op)?;
        if let Err(e) = w.k.check_invariants() {
            return Err(TestCaseError::fail(format!("after {op:?}: {e}")));
        }
    }
    Ok(w)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, max_shrink_iters: 2000, ..ProptestConfig::default() })]

    #[test]
    fn random_operations_with_reservations_keep_every_invariant_and_are_deterministic(
        mb in prop_oneof![Just(16u64), Just(32)],
        ops in prop::collection::vec(op(), 1..80),
    ) {
        let mut w = run(mb, &ops)?;
        let again = run(mb, &ops)?;
        prop_assert_eq!(w.fingerprint(), again.fingerprint(), "same operations, different kernels");
        let total = w.k.phys().frames_total();
        for pid in w.pids.clone() {
            w.k.exit_process(pid);
        }
        for h in std::mem::take(&mut w.kmem) {
            w.k.kfree(h).unwrap();
        }
        w.k.drop_caches();
        w.k.check_invariants().unwrap();
        prop_assert_eq!(w.k.reservation_census().live, 0);
        prop_assert_eq!(w.k.phys().frames_free(), total, "frames leaked");
    }
}
