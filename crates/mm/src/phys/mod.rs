//! Physical memory: frames and their metadata, memory nodes, the buddy allocator with its
//! free lists, pageblocks and their migrate types, per-CPU page lists, pageblock fallback
//! (the stealing mechanism and the policies that choose), the superpage reservation
//! table, and the fragmentation metrics read from all of these.
//!
//! The lowest group (`lib.rs` tells the order). It may import the shared leaves (`api`,
//! `costs`, `error`, `stats`) and nothing else of the crate: no address space, page cache
//! or mechanism above. Frames name their owners (a process and page, a file and index)
//! only as plain ids.

pub mod boot;
pub mod buddy;
pub mod fallback;
pub mod frame;
pub(crate) mod freelist;
pub mod kpageflags;
pub mod metrics;
pub mod node;
pub mod pageblock;
pub mod pcp;
mod preserve;
pub(crate) mod reserv;
mod steal;
