//! hugemm's live agent: hugemm's huge-page policies applied to real Linux processes.
//!
//! The **observation layer** ([`observe`]): strict, read-only parsers of the kernel
//! interfaces the agent reads, and the detection of which access-information source the
//! running kernel offers. The **action layer** ([`act`]): `process_madvise(MADV_COLLAPSE)`
//! on a target held by a pidfd, its failures classified by errno. [`live::LiveOps`]: the
//! policy interface (`hugemm_policy::MemoryOps`) over both, so `hugemm_policy`'s
//! promoters run unchanged on a real host. [`run::Agent`]: the loop that schedules the
//! promoter's daemons in wall time, tracks targets ([`targets`]), logs and keeps the
//! [`metrics`]. `hugemm agent` (crates/cli) is its command line; `docs/agent.md` the
//! operator's page. The only thing this crate asks of the kernel beyond reading is
//! `MADV_COLLAPSE`, which changes no byte a target can see.
//!
//! # Observation sources and what each needs
//!
//! | module | reads | needs |
//! |---|---|---|
//! | [`observe::smaps`] | `/proc/PID/smaps`: VMAs, `Rss`, `Anonymous`, `AnonHugePages`, `VmFlags` | ptrace-read access to PID (same user and `kernel.yama.ptrace_scope` permitting, or `CAP_SYS_PTRACE`) |
//! | [`observe::pagemap`] | `/proc/PID/pagemap`: present, swapped, exclusive bits per 4 KB page | the same access; page frame numbers read as 0 without `CAP_SYS_ADMIN` |
//! | [`observe::pagemap`] ([`KPageFlags`]) | `/proc/kpageflags`: THP and compound-page bits per frame | root (the file is mode 0400), and visible frame numbers; `CONFIG_PROC_PAGE_MONITOR` |
//! | [`observe::buddyinfo`] | `/proc/buddyinfo`: free blocks per order per zone | nothing |
//! | [`observe::pagetypeinfo`] | `/proc/pagetypeinfo`: the same per migrate type, and pageblocks per type | root (mode 0400) |
//! | [`observe::psi`] | `/proc/pressure/memory` | `CONFIG_PSI`, and `psi=1` where `CONFIG_PSI_DEFAULT_DISABLED` |
//! | [`observe::sources`] | `/sys/kernel/mm/damon/admin`, `/sys/kernel/mm/page_idle/bitmap`, the kernel config | reading only; tells which access source the agent could use and why the others are not usable |
//!
//! What can be told about a 2 MB region without privileges is written in
//! [`observe::pagemap`]'s documentation: how many 4 KB pages are present always; whether a
//! huge page maps it exactly only with frame numbers and `/proc/kpageflags` (root), and
//! otherwise only where the VMA's `AnonHugePages` settles it.
//!
//! # Conventions
//!
//! Quantities are the model's types ([`VirtAddr`], [`Pfn`], [`Order`], `hugemm_mm`'s
//! `NodeId`) or this crate's ([`HostPid`], [`Bytes`], [`HugeRange`]); the page geometry is a
//! [`Geometry`] parameter. Every parser takes the text and the path it came from, so tests
//! parse captured files, and fails with an [`ObserveError`] naming the file, the line and
//! what was expected; no input makes it panic. There is no `unsafe` code: reads at an offset
//! use `std`'s `FileExt`, and the one question asked of the kernel beyond reading
//! (`faccessat`) goes through `rustix`.

#![warn(missing_docs)]
#![deny(unsafe_code)]

pub mod act;
pub mod error;
pub mod live;
pub mod metrics;
pub mod observe;
pub mod run;
pub mod targets;
pub mod units;

pub use error::{ObserveError, Result};
pub use hugemm_hw::{Geometry, Order, Pfn, VirtAddr};
pub use observe::pagemap::KPageFlags;
pub use units::{Bytes, HostPid, HugeRange};
