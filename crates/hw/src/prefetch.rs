//! Software prefetch of the simulator's own data structures into the host's caches: the
//! only unsafe code of the hardware model (conventions 8).
//!
//! A simulated reference touches several large host arrays (the page table, the modelled
//! caches' sets) at addresses known several references in advance; prefetching them keeps
//! the simulator from stalling on host memory. Prefetching changes no value the model
//! computes, so results stay byte-identical with or without it.
#![allow(unsafe_code)]

/// Hint the host CPU to bring the cache line holding `r` into its caches.
#[inline(always)]
pub fn prefetch<T>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 never faults and has no architectural effect; the pointer comes
    // from a live reference, so it is valid and aligned anyway.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
            (r as *const T).cast::<i8>(),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
}
