//! Memory under pressure: the reclaimable memory (the page cache with its LRU lists, the
//! slab of reclaimable kernel memory), allocation with reclaim ([`reclaim::Mem`]: direct
//! reclaim, kswapd, watermarks, breaking reservations), page-cache reads, and the
//! vocabulary and state of kernel allocations, compaction and migration between nodes.
//!
//! Above physical memory, below address spaces: the model has no file mappings and no
//! swap, so reclaim never touches a page table, while every mechanism on an address space
//! allocates through reclaim. It may import `phys` and the shared leaves. Compaction's
//! scanners, migration (`move_pages`, `exchange_pages`) and `kmalloc` run on the whole
//! kernel (they move or may move mapped pages), so they are the facade's (`kernel/`).

pub mod compaction;
pub mod kmem;
pub(crate) mod lru;
pub mod movepages;
pub mod pagecache;
pub mod reclaim;
pub(crate) mod slab;
pub mod vfs;
pub mod zones;
