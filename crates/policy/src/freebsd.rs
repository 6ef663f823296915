//! FreeBSD's superpages: reservations made at fault time and promotion in place
//! (Navarro, Iyer, Druschel, Cox, "Practical, transparent operating system support for
//! superpages", OSDI'02; FreeBSD `sys/vm/vm_reserv.c`, `sys/amd64/amd64/pmap.c`).
//!
//! - Every anonymous fault maps a 4 KB page (FreeBSD's anonymous faults never map a
//!   superpage directly from an empty region).
//! - The first fault in a 2 MB region lying wholly inside its mapping reserves an order-9
//!   block if the physical allocator has one free (`vm_reserv_alloc_page`); this and
//!   later faults in the region map the frame at the matching offset of the block.
//! - When the last of the 512 pages is mapped, the region is promoted in place
//!   (`pmap_promote_pde`, attempted by `pmap_enter`), unless `vm.pmap.pg_ps_enabled`
//!   is 0.
//! - Under memory pressure the kernel breaks partially populated reservations, least
//!   recently changed first (`vm_reserv_reclaim_inactive`), before reclaiming page cache.
//!
//! The mechanisms are the kernel model's (`hugemm_mm`, `reserv.rs`); this policy only
//! answers the fault path's questions. It runs no daemon: FreeBSD promotes only at fault
//! time, with no khugepaged-like scanner. Linux's huge-page advice (`MADV_HUGEPAGE`,
//! `MADV_NOHUGEPAGE`) is ignored: FreeBSD has no such advice.

use crate::Policy;
use hugemm_hw::{PageSize, Pid};
use hugemm_mm::FaultInfo;
use serde::Serialize;

/// The `freebsd` policy's configuration, with FreeBSD's (amd64) defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct FreeBsdConfig {
    /// Make superpage reservations at fault time. FreeBSD builds them in on amd64
    /// (`VM_NRESERVLEVEL` = 1; the kernel has no run-time switch): default on. Off, the
    /// policy is plain 4 KB paging.
    pub reservations: bool,
    /// `vm.pmap.pg_ps_enabled`: promote a fully populated reservation to a 2 MB mapping
    /// in place (default 1). Off, reservations still give physical contiguity but every
    /// page stays mapped with 4 KB entries.
    pub pg_ps_enabled: bool,
}

impl Default for FreeBsdConfig {
    fn default() -> Self {
        FreeBsdConfig {
            reservations: true,
            pg_ps_enabled: true,
        }
    }
}

/// FreeBSD superpage reservations.
#[derive(Clone, Debug)]
pub struct FreeBsdPolicy {
    cfg: FreeBsdConfig,
}

impl FreeBsdPolicy {
    /// A FreeBSD policy with `cfg`.
    pub fn new(cfg: FreeBsdConfig) -> Self {
        FreeBsdPolicy { cfg }
    }
}

impl Policy for FreeBsdPolicy {
    fn name(&self) -> &'static str {
        "freebsd"
    }

    fn fault_size(&mut self, _pid: Pid, _info: &FaultInfo) -> PageSize {
        PageSize::Base
    }

    /// Reserve at the first fault of a region that lies wholly inside its mapping
    /// (`vm_reserv_alloc_page` refuses ranges past the object's end).
    fn reserve_at_fault(&mut self, _pid: Pid, info: &FaultInfo) -> bool {
        self.cfg.reservations && info.huge_fits && !info.region_reserved
    }

    fn promote_reservations(&self) -> bool {
        self.cfg.pg_ps_enabled
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PolicyConfig;
    use hugemm_mm::HugeAdvice;

    fn info(huge_fits: bool, region_reserved: bool, advice: HugeAdvice) -> FaultInfo {
        FaultInfo {
            advice,
            huge_fits,
            region_empty: !region_reserved,
            region_huge_zero: false,
            region_reserved,
        }
    }

    #[test]
    fn every_fault_is_4k_and_a_whole_region_is_reserved_whatever_the_advice() {
        let mut p = FreeBsdPolicy::new(FreeBsdConfig::default());
        for advice in [
            HugeAdvice::None,
            HugeAdvice::Hugepage,
            HugeAdvice::NoHugepage,
        ] {
            let i = info(true, false, advice);
            assert_eq!(p.fault_size(Pid(1), &i), PageSize::Base);
            assert!(p.reserve_at_fault(Pid(1), &i), "{advice:?}");
        }
        assert!(!p.reserve_at_fault(Pid(1), &info(false, false, HugeAdvice::None)));
        assert!(!p.reserve_at_fault(Pid(1), &info(true, true, HugeAdvice::None)));
        assert!(p.promote_reservations());
        assert!(p.daemons().is_empty());
    }

    #[test]
    fn the_knobs_turn_reservations_and_promotion_off() {
        let cfg = FreeBsdConfig {
            reservations: false,
            pg_ps_enabled: false,
        };
        let mut p = FreeBsdPolicy::new(cfg);
        assert!(!p.reserve_at_fault(Pid(1), &info(true, false, HugeAdvice::None)));
        assert!(!p.promote_reservations());
    }

    #[test]
    fn the_catalogue_builds_it_by_name() {
        assert!(PolicyConfig::NAMES.contains(&"freebsd"));
        let p = PolicyConfig::FreeBsd(FreeBsdConfig::default()).build();
        assert_eq!(p.name(), "freebsd");
    }
}
