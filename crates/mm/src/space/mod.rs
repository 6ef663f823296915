//! Address spaces.

pub(crate) mod addrspace;
pub mod content;
pub(crate) mod mech;
pub(crate) mod pagetable;
pub mod pte;
pub(crate) mod unmap;
pub mod vma;
