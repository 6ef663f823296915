//! Kernel allocations' vocabulary: the two kinds (`GFP_KERNEL` unmovable,
//! `__GFP_RECLAIMABLE`) with their migrate type and owner, and the handle a holder frees.
//!
//! `kmalloc` and `kfree` are the kernel's (`kernel/kmem.rs`): a kernel allocation may
//! trigger evacuation of pageblocks, which migrates pages through their page tables.
//! Reclaimable blocks live in the slab (`slab.rs`), which reclaim shrinks. This module
//! owns the vocabulary only; it must not allocate.

use crate::phys::frame::OwnerKind;
use crate::phys::pageblock::MigrateType;
use hugemm_hw::{Order, Pfn};
use serde::{Deserialize, Serialize};

/// The mobility of a kernel allocation (`GFP_KERNEL` vs `__GFP_RECLAIMABLE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum KmemKind {
    /// `MIGRATE_UNMOVABLE`, owner `KernelUnmovable`.
    Unmovable,
    /// `MIGRATE_RECLAIMABLE`, owner `KernelReclaimable`.
    Reclaimable,
}

impl KmemKind {
    pub(crate) fn migrate(self) -> MigrateType {
        match self {
            KmemKind::Unmovable => MigrateType::Unmovable,
            KmemKind::Reclaimable => MigrateType::Reclaimable,
        }
    }

    pub(crate) fn owner(self) -> OwnerKind {
        match self {
            KmemKind::Unmovable => OwnerKind::KernelUnmovable,
            KmemKind::Reclaimable => OwnerKind::KernelReclaimable,
        }
    }
}

/// A kernel allocation: its first frame, order and id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct KmemHandle {
    /// First frame.
    pub pfn: Pfn,
    /// Order of the block.
    pub order: Order,
    /// The allocation's id, unique over the kernel's life: a reclaimable block's frames
    /// may be shrunk and reused, and the id tells its holder's `kfree` apart from a free
    /// of whatever reuses them.
    pub id: u64,
}
