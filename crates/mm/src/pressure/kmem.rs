//! Kernel allocations' vocabulary: the two kinds (`GFP_KERNEL` unmovable,
//! `__GFP_RECLAIMABLE`) with their migrate type and owner, the shape of a slab cache, and
//! the handle a holder frees.
//!
//! `kmalloc`, `kmem_cache_alloc` and `kfree` are the kernel's (`kernel/kmem.rs`): a
//! kernel allocation may trigger evacuation of pageblocks, which migrates pages through
//! their page tables. Every kernel block lives in a slab cache (`slab.rs`), whose
//! reclaimable caches reclaim shrinks. This module owns the vocabulary only; it must not
//! allocate.

use crate::error::{MmError, Result};
use crate::phys::frame::OwnerKind;
use crate::phys::pageblock::MigrateType;
use hugemm_hw::{Order, Pfn};
use serde::{Deserialize, Serialize};

/// The mobility of a kernel allocation (`GFP_KERNEL` vs `__GFP_RECLAIMABLE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
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

/// The shape of a slab cache: objects of `object_bytes` packed into slabs of `2^order`
/// base pages, of one kind. Caches of the same shape are one cache (as SLUB merges caches
/// of equal size and flags).
///
/// An object as large as its slab is a page allocation (`alloc_pages`, or a kmalloc too
/// large for any slab): each is its own block, freed with it. A smaller object shares its
/// slab with others, and the slab goes back to the buddy allocator only when the last of
/// them is freed: that is how short-lived and long-lived kernel objects keep each other's
/// pages, and so the pageblocks those pages fell into, occupied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct KmemCache {
    /// Unmovable or reclaimable.
    pub kind: KmemKind,
    /// Buddy order of each slab.
    pub order: Order,
    /// Bytes of one object (with its metadata, as `/proc/slabinfo`'s `objsize`).
    pub object_bytes: u64,
}

impl KmemCache {
    /// Whole blocks of `2^order` base pages of `base_bytes` each (one object per block).
    pub fn pages(kind: KmemKind, order: Order, base_bytes: u64) -> KmemCache {
        KmemCache {
            kind,
            order,
            object_bytes: base_bytes << order.0,
        }
    }

    /// Objects in one slab with base pages of `base_bytes`; refuses an empty object and
    /// one larger than its slab.
    pub fn objects_per_slab(&self, base_bytes: u64) -> Result<u32> {
        let slab = base_bytes << self.order.0;
        if self.object_bytes == 0 || self.object_bytes > slab {
            return Err(MmError::InvalidConfig {
                what: "a slab object must be at least one byte and fit in its slab",
            });
        }
        Ok(u32::try_from(slab / self.object_bytes).unwrap_or(u32::MAX))
    }
}

/// A kernel allocation: its first frame, order and id. For an object in a shared slab,
/// the frame and order are its slab's.
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
