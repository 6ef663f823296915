//! The agent's one action on a target process: collapse a 2 MB-aligned range into huge
//! pages with `process_madvise(pidfd, MADV_COLLAPSE)` (Linux 6.1+). Its pace is the
//! policy's (`hugemm_policy::AgentPolicy`'s rate limit, a `hugemm_policy::TokenBucket`).
//!
//! Nothing here is destructive: `MADV_COLLAPSE` copies a range's pages into a new huge
//! page and changes no byte the target can see. The module never issues any other advice
//! (no `MADV_DONTNEED`, no `MADV_PAGEOUT`) and never writes target memory.
//!
//! **Privileges.** Opening a pidfd needs nothing; `process_madvise` on another process
//! needs ptrace read access to it (`PTRACE_MODE_READ_FSCREDS`: same user, or
//! `CAP_SYS_PTRACE`) and, for advice that affects its memory, `CAP_SYS_NICE`. A failure
//! is reported as [`Failure::Permission`].
//!
//! **Failures** are classified by errno so the caller can skip, retry or stop
//! ([`Failure`]); a target that exited or a range that is no longer mapped is an
//! expected outcome, never a panic. This module owns the system calls and their
//! classification; what to collapse and when is the policy loop's business.

use crate::units::{HostPid, HugeRange};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

/// `MADV_COLLAPSE` (`include/uapi/asm-generic/mman-common.h`, Linux 6.1); not in `libc`.
const MADV_COLLAPSE: libc::c_int = 25;

/// Why a collapse failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Failure {
    /// The target exited (`ESRCH`): drop it.
    Gone,
    /// No permission (`EPERM`, `EACCES`): the agent lacks `CAP_SYS_NICE` or ptrace
    /// access to the target.
    Permission,
    /// The range cannot be collapsed (`EINVAL`: not anonymous or file-backed memory a
    /// huge page may map, `MADV_NOHUGEPAGE`, `PR_SET_THP_DISABLE`, or a kernel without
    /// `MADV_COLLAPSE`): skip it.
    NotEligible,
    /// Part of the range is not mapped, or no huge page could be allocated (`ENOMEM`):
    /// skip it for now.
    NoMemory,
    /// A transient failure (`EAGAIN`: a page was locked or under writeback, or
    /// `EBUSY`): retry later.
    Transient,
    /// Any other errno.
    Other(i32),
}

impl Failure {
    /// The failure of errno `e`.
    pub fn from_errno(e: i32) -> Failure {
        match e {
            libc::ESRCH => Failure::Gone,
            libc::EPERM | libc::EACCES => Failure::Permission,
            libc::EINVAL => Failure::NotEligible,
            libc::ENOMEM => Failure::NoMemory,
            libc::EAGAIN | libc::EBUSY => Failure::Transient,
            e => Failure::Other(e),
        }
    }

    /// A short name for logs and metrics labels.
    pub fn name(self) -> &'static str {
        match self {
            Failure::Gone => "gone",
            Failure::Permission => "permission",
            Failure::NotEligible => "not-eligible",
            Failure::NoMemory => "no-memory",
            Failure::Transient => "transient",
            Failure::Other(_) => "other",
        }
    }
}

/// A collapse that failed: the target, the range, why, and the errno.
#[derive(Debug, thiserror::Error)]
#[error("{pid}: MADV_COLLAPSE of {range} failed ({}): {source}", failure.name())]
pub struct CollapseError {
    /// The target.
    pub pid: HostPid,
    /// The range.
    pub range: HugeRange,
    /// The classified failure.
    pub failure: Failure,
    /// The system call's error.
    #[source]
    pub source: io::Error,
}

/// A target process, held by a pidfd so a reused pid can never be acted on.
#[derive(Debug)]
pub struct Target {
    pid: HostPid,
    pidfd: OwnedFd,
}

impl Target {
    /// Open `pid` (`pidfd_open`). Fails when it does not exist.
    pub fn open(pid: HostPid) -> io::Result<Target> {
        let raw = rustix::process::Pid::from_raw(pid.0 as i32)
            .ok_or_else(|| io::Error::from_raw_os_error(libc::ESRCH))?;
        let pidfd = rustix::process::pidfd_open(raw, rustix::process::PidfdFlags::empty())?;
        Ok(Target { pid, pidfd })
    }

    /// The target's pid.
    pub fn pid(&self) -> HostPid {
        self.pid
    }

    /// Collapse `range` of the target into huge pages (`process_madvise(MADV_COLLAPSE)`).
    pub fn collapse(&self, range: &HugeRange) -> Result<(), CollapseError> {
        let iov = libc::iovec {
            iov_base: range.start().0 as *mut libc::c_void,
            iov_len: (range.end().0 - range.start().0) as usize,
        };
        // SAFETY: `process_madvise` reads one `iovec` from `&iov`, which lives across the
        // call; the addresses it names are the target's, never dereferenced here. The
        // pidfd is open for the call's duration (borrowed from `self`).
        #[allow(unsafe_code)]
        let ret = unsafe {
            libc::syscall(
                libc::SYS_process_madvise,
                self.pidfd.as_raw_fd(),
                &iov as *const libc::iovec,
                1usize,
                MADV_COLLAPSE,
                0u32,
            )
        };
        if ret >= 0 {
            return Ok(());
        }
        let source = io::Error::last_os_error();
        Err(CollapseError {
            pid: self.pid,
            range: *range,
            failure: Failure::from_errno(source.raw_os_error().unwrap_or(0)),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errnos_are_classified() {
        assert_eq!(Failure::from_errno(libc::ESRCH), Failure::Gone);
        assert_eq!(Failure::from_errno(libc::EPERM), Failure::Permission);
        assert_eq!(Failure::from_errno(libc::EINVAL), Failure::NotEligible);
        assert_eq!(Failure::from_errno(libc::ENOMEM), Failure::NoMemory);
        assert_eq!(Failure::from_errno(libc::EAGAIN), Failure::Transient);
        assert_eq!(Failure::from_errno(libc::EIO), Failure::Other(libc::EIO));
    }
}
