//! The lookahead ring of an access phase: references generated before they are simulated,
//! so the simulator can prefetch its own data structures for them (host memory latency
//! would otherwise dominate its time on large buffers).
//!
//! The ring's length is part of the results, not only of the speed: the references it
//! holds have already drawn from the process's generator, so a skip (sampled mode) that
//! consumes the ring and then skips the stream, or the end of a phase that drops the ring,
//! leaves the generator at a point that depends on [`AHEAD`]. Changing it changes results.
//! This module owns the ring only; what is prefetched is `run.rs`'s business.

/// References held ahead of the one being simulated (see the module doc: do not change).
pub(crate) const AHEAD: usize = 8;

const _: () = assert!(AHEAD.is_power_of_two());

/// A reference generated ahead: its offset in the buffer and whether it is a store.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Ahead {
    pub off: u64,
    pub write: bool,
}

/// A fixed ring of at most [`AHEAD`] references, oldest first.
#[derive(Clone, Debug, Default)]
pub(crate) struct Lookahead {
    refs: [Ahead; AHEAD],
    head: usize,
    len: usize,
}

impl Lookahead {
    /// References held.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the ring holds [`AHEAD`] references.
    #[inline]
    pub fn is_full(&self) -> bool {
        self.len == AHEAD
    }

    /// Appends `r` as the newest reference; a full ring is left unchanged (callers fill
    /// only up to [`Lookahead::is_full`]).
    #[inline]
    pub fn push(&mut self, r: Ahead) {
        if self.len < AHEAD {
            self.refs[(self.head + self.len) % AHEAD] = r;
            self.len += 1;
        }
    }

    /// Takes the oldest reference.
    #[inline]
    pub fn pop(&mut self) -> Option<Ahead> {
        if self.len == 0 {
            return None;
        }
        let r = self.refs[self.head % AHEAD];
        self.head = (self.head + 1) % AHEAD;
        self.len -= 1;
        Some(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(off: u64) -> Ahead {
        Ahead { off, write: false }
    }

    #[test]
    fn the_ring_is_first_in_first_out_across_wraps() {
        let mut ring = Lookahead::default();
        let mut next = 0;
        let mut expected = 0;
        for round in 0..5 {
            while !ring.is_full() {
                ring.push(r(next));
                next += 1;
            }
            for _ in 0..=round % AHEAD {
                assert_eq!(ring.pop(), Some(r(expected)));
                expected += 1;
            }
        }
    }

    #[test]
    fn a_full_ring_refuses_more_and_an_empty_one_gives_nothing() {
        let mut ring = Lookahead::default();
        assert_eq!(ring.pop(), None);
        for i in 0..AHEAD as u64 + 3 {
            ring.push(r(i));
        }
        assert_eq!(ring.len(), AHEAD);
        assert_eq!(ring.pop(), Some(r(0)));
    }
}
