//! Huge-page mechanisms: collapse (khugepaged, `MADV_COLLAPSE`), split, zero-subpage
//! de-duplication, and FreeBSD's superpage reservations (reserving at a fault, populating,
//! promoting in place, breaking when a mapping changes).
//!
//! Each works on one address space through the mechanism context (`space/mech.rs`) and
//! decides nothing a policy decides. It may import `space`, `pressure`, `phys` and the
//! shared leaves, never the kernel: the kernel's entry points to these mechanisms are
//! `kernel/huge.rs`'s.

pub(crate) mod collapse;
pub(crate) mod dedup;
pub(crate) mod reserv;
pub(crate) mod split;
