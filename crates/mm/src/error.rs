//! The kernel model's error types and `Result` alias (conventions 7).
//!
//! Owns only the vocabulary of failure; it must not decide anything. Every fallible public
//! entry point of the crate returns one of these instead of panicking.

use hugemm_hw::Pid;
use thiserror::Error;

/// A failure of a kernel-model operation.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum MmError {
    /// The machine configuration cannot be modelled.
    #[error("invalid memory configuration: {what}")]
    InvalidConfig {
        /// What is wrong with it.
        what: &'static str,
    },
    /// No live process has this pid.
    #[error("no process with pid {}", .0 .0)]
    NoSuchProcess(Pid),
    /// An argument is out of range (unaligned address, zero length, order too high...).
    #[error("invalid argument: {what}")]
    InvalidArgument {
        /// Which argument and why.
        what: &'static str,
    },
    /// No gap in the process's address space is large enough.
    #[error("out of virtual address space")]
    NoVirtualSpace,
    /// No free block of physical memory can satisfy the request.
    #[error("out of memory")]
    OutOfMemory,
    /// The region is not mapped by a huge (or huge-zero) entry.
    #[error("region at {0:#x} is not huge-mapped")]
    NotHuge(u64),
    /// A frame was freed that is not the head of an allocated block of that order.
    #[error("bad free of frame {pfn}: {what}")]
    BadFree {
        /// The frame number.
        pfn: u64,
        /// Why the free was refused.
        what: &'static str,
    },
    /// A fallback policy chose a block the allocator cannot use.
    #[error("fallback policy `{policy}` chose an unusable block")]
    FallbackChoice {
        /// The policy's name.
        policy: &'static str,
    },
    /// A consistency check of the model's data structures failed (a bug in the model).
    #[error("invariant violated: {what} (at {at:#x})")]
    Invariant {
        /// Which invariant.
        what: &'static str,
        /// The frame number or address it was found at.
        at: u64,
    },
    /// A collapse failed.
    #[error(transparent)]
    Collapse(#[from] CollapseError),
}

/// Why a collapse (promotion of a 2 MB region to a huge page) failed.
#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum CollapseError {
    /// The region is not mapped by a table of 4 KB PTEs (empty, or already huge).
    #[error("region is not mapped by a page table")]
    NotTable,
    /// No free order-9 block (the caller may compact and retry).
    #[error("no free huge block")]
    NoMemory,
    /// The region is not entirely inside one VMA, or the process does not exist.
    #[error("region is not inside one VMA")]
    NotInVma,
    /// The caller's collapse budget is spent for now (the live agent's rate limit, or a
    /// transient failure of the real kernel): nothing was done; try the same region
    /// again later. The model kernel never returns it.
    #[error("collapse deferred: the caller's rate limit is reached")]
    Deferred,
}

/// The kernel model's result type.
pub type Result<T, E = MmError> = std::result::Result<T, E>;
