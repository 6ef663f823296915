//! Built-in workloads, each a function building a [`ProcessSpec`] and documenting what it
//! assumes about the program it models.

use crate::spec::*;
use hugemm_hw::Nanos;

/// HawkEye's alloc-and-touch microbenchmark (paper section 2.2, Table 1): map a buffer,
/// write one byte in every 4 KB page in address order, then unmap it; `rounds` times.
///
/// Assumes the program does nothing else, so its runtime is dominated by page faults and
/// their zeroing. The paper uses 10 GB and 10 rounds (about 100 GB allocated in all).
pub fn alloc_and_touch(name: &str, bytes: u64, rounds: u32, advice: Advice) -> ProcessSpec {
    let buffer = BufferId(0);
    let mut phases = Vec::new();
    for _ in 0..rounds {
        phases.push(Phase::Mmap {
            buffer,
            bytes,
            advice,
        });
        phases.push(Phase::Access(touch(buffer, bytes)));
        phases.push(Phase::Munmap { buffer });
    }
    ProcessSpec {
        name: name.into(),
        start: Nanos::ZERO,
        core: None,
        phases,
    }
}

/// A sequential first-touch pass writing one byte per 4 KB page of a `bytes`-long buffer.
pub fn touch(buffer: BufferId, bytes: u64) -> AccessPhase {
    AccessPhase {
        buffer,
        pattern: Pattern::Sequential {
            stride: crate::pattern::PAGE,
        },
        amount: Amount::Refs(bytes / crate::pattern::PAGE),
        dependent: false,
        write_fraction: 1.0,
        compute: Nanos::ZERO,
        instructions_per_ref: None,
        writes: Writes::default(),
    }
}

/// A TLB-hungry random-access program (GUPS-like): map `bytes`, touch it all, then make
/// `refs` uniformly random dependent reads over it.
///
/// Assumes every reference misses the data caches' working set as the buffer is far larger
/// than the last-level cache, so translation cost is exposed in full: the workload of
/// `hugemm demo`.
pub fn random_access(name: &str, bytes: u64, refs: u64, advice: Advice) -> ProcessSpec {
    let buffer = BufferId(0);
    let access = AccessPhase {
        buffer,
        pattern: Pattern::Uniform,
        amount: Amount::Refs(refs),
        dependent: true,
        write_fraction: 0.0,
        compute: Nanos::ZERO,
        instructions_per_ref: None,
        writes: Writes::default(),
    };
    let phases = vec![
        Phase::Mmap {
            buffer,
            bytes,
            advice,
        },
        Phase::Access(touch(buffer, bytes)),
        Phase::Access(access),
    ];
    ProcessSpec {
        name: name.into(),
        start: Nanos::ZERO,
        core: None,
        phases,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alloc_and_touch_maps_touches_and_unmaps_each_round() {
        let p = alloc_and_touch("a", 1 << 30, 2, Advice::Default);
        assert_eq!(p.phases.len(), 6);
        assert_eq!(p.buffer_count(), 1);
        match &p.phases[1] {
            Phase::Access(a) => assert_eq!(a.amount, Amount::Refs(262_144)),
            other => panic!("expected a touch phase, got {other:?}"),
        }
    }
}
