//! Address spaces: VMAs, page tables and their entries, the per-process draw of page
//! contents, the mechanism context ([`mech::Mech`]: what a mechanism on an address space
//! borrows from the kernel, with the allocation, freeing, flushing and
//! reservation-breaking steps they share) and unmapping.
//!
//! It may import `pressure`, `phys` and the shared leaves, never a huge-page mechanism or
//! the kernel. The fault path and `mmap`/`madvise` also split huge pages and reserve
//! superpages, so they are the facade's (`kernel/fault.rs`, `kernel/mmap.rs`).

pub(crate) mod addrspace;
pub mod content;
pub(crate) mod mech;
pub(crate) mod pagetable;
pub mod pte;
pub(crate) mod unmap;
pub mod vma;
