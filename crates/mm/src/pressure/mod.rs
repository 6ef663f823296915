//! Reclaimable memory and reclaim.

pub(crate) mod lru;
pub mod pagecache;
pub mod reclaim;
pub(crate) mod slab;
