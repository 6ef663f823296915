//! Reclaimable memory and reclaim.

pub mod compaction;
pub mod kmem;
pub(crate) mod lru;
pub mod pagecache;
pub mod reclaim;
pub(crate) mod slab;
