//! Physical memory.

pub mod buddy;
pub mod fallback;
pub mod frame;
pub(crate) mod freelist;
pub mod metrics;
pub mod pageblock;
pub mod pcp;
pub(crate) mod reserv;
mod steal;
