//! `mmap`, `munmap` and `madvise` of anonymous memory, and process exit: VMA bookkeeping
//! plus, for unmapping, `MADV_DONTNEED` and exit, the page-freeing mechanism of
//! [`crate::space::unmap`].
//!
//! Addresses are chosen deterministically, first fit going up from `MMAP_BASE`
//! (0x7000_0000_0000 on x86-64), 2 MB-aligned when the length is at least 2 MB (like
//! `thp_get_unmapped_area`). Adjacent VMAs with the same advice merge. `madvise` of a
//! range with holes applies to the mapped parts and does not report the holes (Linux
//! applies it and returns `ENOMEM`). Advice cutting a VMA through a region with a
//! superpage reservation breaks the reservation (a huge mapping cannot span two VMAs).
//! This module must not decide page sizes.

use crate::api::{HugeAdvice, Madvise};
use crate::error::{MmError, Result};
use crate::huge::reserv::break_if_cut;
use crate::huge::split::split_region;
use crate::kernel::Kernel;
use crate::space::addrspace::AddressSpace;
use crate::space::mech::Mech;
use crate::space::pagetable::{Slot, VaLayout};
use crate::space::unmap::zap_range;
use crate::space::vma::{align_up, Vma};
use hugemm_hw::{Nanos, Pid, VirtAddr};

/// The lowest address `mmap` hands out: 16 TB below the top of the user half (or the
/// middle of a smaller address space).
fn mmap_base(l: &VaLayout) -> u64 {
    l.va_limit - (l.va_limit / 2).min(1 << 44)
}

/// `[start, start + len rounded up to pages)`, checked. `len` must be positive.
fn user_range(l: &VaLayout, start: VirtAddr, len: u64) -> Result<(u64, u64)> {
    if !start.0.is_multiple_of(l.base_bytes()) {
        return Err(MmError::InvalidArgument {
            what: "start must be page-aligned",
        });
    }
    if len == 0 {
        return Err(MmError::InvalidArgument {
            what: "length must be positive",
        });
    }
    let end = align_up(len, l.base_bytes()).and_then(|len| start.0.checked_add(len));
    match end {
        Some(end) if end <= l.va_limit => Ok((start.0, end)),
        _ => Err(MmError::InvalidArgument {
            what: "range beyond the user address space",
        }),
    }
}

/// Before a VMA is cut at `s` or `e`, split a huge mapping straddling the cut, as
/// `split_vma` does through `vma_adjust_trans_huge`, so no huge page spans two VMAs.
/// Fails (changing nothing else) if a page-table page cannot be allocated.
fn split_at_boundaries(
    space: &mut AddressSpace,
    m: &mut Mech<'_>,
    s: u64,
    e: u64,
) -> Result<Nanos> {
    let mut cost = Nanos::ZERO;
    for cut in [s, e] {
        let inside = space.vma(cut).is_some_and(|v| v.start.0 != cut);
        let huge = matches!(
            space.slot(cut),
            Some(Slot::Huge { .. } | Slot::HugeZero { .. })
        );
        if inside && huge && cut % m.layout.region_bytes() != 0 {
            cost += split_region(space, m, cut)?;
        }
    }
    Ok(cost)
}

impl Kernel {
    /// Map `len` bytes of anonymous memory (rounded up to pages) with `advice`; returns
    /// its address, 2 MB-aligned when `len` >= 2 MB.
    pub fn mmap(&mut self, pid: Pid, len: u64, advice: HugeAdvice) -> Result<VirtAddr> {
        let l = self.layout;
        let space = self
            .procs
            .get_mut(pid.0 as usize)
            .and_then(Option::as_mut)
            .ok_or(MmError::NoSuchProcess(pid))?;
        if len == 0 {
            return Err(MmError::InvalidArgument {
                what: "length must be positive",
            });
        }
        let len = align_up(len, l.base_bytes()).ok_or(MmError::NoVirtualSpace)?;
        let align = if len >= l.region_bytes() {
            l.region_bytes()
        } else {
            l.base_bytes()
        };
        let start = space
            .vmas
            .find_gap(len, align, mmap_base(&l), l.va_limit)
            .ok_or(MmError::NoVirtualSpace)?;
        space.vmas.insert(Vma {
            start: VirtAddr(start),
            end: VirtAddr(start + len),
            advice,
        });
        Ok(VirtAddr(start))
    }

    /// `madvise` a range: set or clear huge-page advice (splitting VMAs at the range's
    /// ends, and a huge mapping straddling a cut), or free its pages (`DontNeed`, the
    /// VMAs stay). A zero length does nothing. Returns the time spent.
    pub fn madvise(
        &mut self,
        pid: Pid,
        start: VirtAddr,
        len: u64,
        advice: Madvise,
    ) -> Result<Nanos> {
        if len == 0 && self.space(pid).is_some() {
            return Ok(Nanos::ZERO);
        }
        let (s, e) = user_range(&self.layout, start, len)?;
        let (space, mut m) = self.parts(pid).ok_or(MmError::NoSuchProcess(pid))?;
        let advice = match advice {
            Madvise::Hugepage => HugeAdvice::Hugepage,
            Madvise::NoHugepage => HugeAdvice::NoHugepage,
            Madvise::DontNeed => return Ok(zap_range(space, &mut m, s, e, true)),
        };
        let mut cost = split_at_boundaries(space, &mut m, s, e)?;
        space.vmas.set_advice(s, e, advice);
        for cut in [s, e] {
            let region = m.layout.region_of(cut);
            cost += break_if_cut(space, &mut m, region);
        }
        Ok(cost)
    }

    /// Unmap a range: free its pages and remove it from the VMAs. Returns the time spent.
    pub fn munmap(&mut self, pid: Pid, start: VirtAddr, len: u64) -> Result<Nanos> {
        let (s, e) = user_range(&self.layout, start, len)?;
        let (space, mut m) = self.parts(pid).ok_or(MmError::NoSuchProcess(pid))?;
        let cost = zap_range(space, &mut m, s, e, true);
        space.vmas.remove_range(s, e);
        Ok(cost)
    }

    /// End a process: free every frame and page-table page it holds. Returns the time
    /// spent. No flush is recorded: pids (address-space ids) are never reused.
    pub fn exit_process(&mut self, pid: Pid) -> Nanos {
        let limit = self.layout.va_limit;
        let Some((space, mut m)) = self.parts(pid) else {
            return Nanos::ZERO;
        };
        let cost = zap_range(space, &mut m, 0, limit, false);
        if let Some(p) = self.procs.get_mut(pid.0 as usize) {
            *p = None;
        }
        cost
    }
}

#[cfg(test)]
mod tests {
    use crate::api::{HugeAdvice, Madvise, RegionState};
    use crate::error::MmError;
    use crate::testutil::{kernel, HUGE, PAGE};
    use hugemm_hw::{PageSize, Pid, VirtAddr};

    #[test]
    fn mmap_goes_up_from_the_base_aligning_large_requests() {
        let mut k = kernel(64);
        let pid = k.create_process();
        let a = k.mmap(pid, 10, HugeAdvice::None).unwrap();
        assert_eq!(a, VirtAddr(0x7000_0000_0000));
        let b = k.mmap(pid, HUGE + 1, HugeAdvice::None).unwrap();
        assert_eq!(b, VirtAddr(0x7000_0020_0000));
        let c = k.mmap(pid, PAGE, HugeAdvice::None).unwrap();
        assert_eq!(
            c,
            VirtAddr(a.0 + PAGE),
            "first fit reuses the alignment gap"
        );
        k.munmap(pid, a, PAGE).unwrap();
        assert_eq!(k.mmap(pid, PAGE, HugeAdvice::Hugepage).unwrap(), a);
        assert_eq!(k.vmas(pid).count(), 3);
    }

    #[test]
    fn bad_ranges_are_errors() {
        let mut k = kernel(64);
        let pid = k.create_process();
        assert!(matches!(
            k.mmap(pid, 0, HugeAdvice::None),
            Err(MmError::InvalidArgument { .. })
        ));
        assert_eq!(
            k.mmap(pid, 1 << 46, HugeAdvice::None),
            Err(MmError::NoVirtualSpace)
        );
        assert_eq!(
            k.mmap(pid, u64::MAX, HugeAdvice::None),
            Err(MmError::NoVirtualSpace)
        );
        assert_eq!(
            k.mmap(Pid(5), PAGE, HugeAdvice::None),
            Err(MmError::NoSuchProcess(Pid(5)))
        );
        assert!(k.munmap(pid, VirtAddr(3), PAGE).is_err());
        assert!(k.munmap(pid, VirtAddr(0), 0).is_err());
        assert!(k.munmap(pid, VirtAddr(!4095), PAGE).is_err());
        assert_eq!(
            k.madvise(pid, VirtAddr(0), 0, Madvise::DontNeed).unwrap().0,
            0
        );
    }

    #[test]
    fn advice_cutting_a_huge_page_splits_it() {
        let mut k = kernel(64);
        let pid = k.create_process();
        let va = k.mmap(pid, HUGE, HugeAdvice::None).unwrap();
        k.fault(pid, va, true, PageSize::Huge);
        k.madvise(pid, VirtAddr(va.0 + PAGE), PAGE, Madvise::NoHugepage)
            .unwrap();
        assert_eq!(k.region_info(pid, va).state, RegionState::Table);
        assert_eq!(k.vmas(pid).count(), 3);
        let advice = k.fault_info(pid, VirtAddr(va.0 + PAGE)).unwrap().advice;
        assert_eq!(advice, HugeAdvice::NoHugepage);
        k.madvise(pid, va, HUGE, Madvise::Hugepage).unwrap();
        assert_eq!(k.vmas(pid).count(), 1, "equal neighbours merge back");
        k.check_invariants().unwrap();
    }
}
