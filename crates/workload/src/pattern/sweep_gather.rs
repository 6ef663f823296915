//! The geometry of [`Pattern::SweepGather`]: where its sweep and its gathers fall in the
//! buffer, and which pages a run of sweep references covers. The stream itself (the
//! per-reference choice between sweep and gather) is in the parent module.

use super::{LINE, PAGE};
use crate::spec::Pattern;

/// [`Pattern::SweepGather`] in bytes and lines; the sweep's cursor is `Stream::cursor`,
/// relative to `sweep_start`.
#[derive(Clone, Copy, Debug)]
pub(super) struct SweepGather {
    pub(super) stride: u64,
    pub(super) sweep_start: u64,
    pub(super) sweep_len: u64,
    pub(super) gather_first_line: u64,
    pub(super) gather_lines: u64,
    pub(super) every: u32,
    /// References since the last gather (0..every).
    pub(super) count: u32,
}

impl SweepGather {
    /// The byte and line geometry of a [`Pattern::SweepGather`] over `len` bytes, or
    /// `None` if its parameters are out of range.
    pub(super) fn new(p: Pattern, len: u64) -> Option<SweepGather> {
        let Pattern::SweepGather {
            stride,
            sweep_position,
            sweep_fraction,
            gather_position,
            gather_fraction,
            every,
        } = p
        else {
            return None;
        };
        let ok = |f: f64| (0.0..=1.0).contains(&f);
        let fractions = [
            sweep_position,
            sweep_fraction,
            gather_position,
            gather_fraction,
        ];
        if every == 0 || stride == 0 || !fractions.into_iter().all(ok) {
            return None;
        }
        let lines = len / LINE;
        let sweep_len = (((sweep_fraction * len as f64) as u64) / PAGE * PAGE).clamp(PAGE, len);
        let sweep_start =
            (((sweep_position * len as f64) as u64) / PAGE * PAGE).min(len - sweep_len);
        let gather_lines = ((gather_fraction * lines as f64) as u64).clamp(1, lines);
        let gather_first_line = ((gather_position * lines as f64) as u64).min(lines - gather_lines);
        if stride > sweep_len {
            return None;
        }
        Some(SweepGather {
            stride,
            sweep_start,
            sweep_len,
            gather_first_line,
            gather_lines,
            every,
            count: 0,
        })
    }

    /// The pages `sweeps` sweep references from `cursor` cover, as at most two ranges
    /// (the sweep wraps inside its own part of the buffer).
    pub(super) fn swept(&self, cursor: u64, sweeps: u64) -> [(u64, u64); 2] {
        let range = |from: u64, to: u64| (from / PAGE, (to - 1) / PAGE - from / PAGE + 1);
        let end = self.sweep_start + self.sweep_len;
        let bytes = sweeps.saturating_mul(self.stride);
        if sweeps == 0 {
            return [(0, 0); 2];
        }
        if bytes >= self.sweep_len {
            return [range(self.sweep_start, end), (0, 0)];
        }
        let from = self.sweep_start + cursor;
        // The last reference starts `bytes - stride` after the first.
        let to = from + bytes - self.stride + 1;
        if to <= end {
            [range(from, to), (0, 0)]
        } else {
            let wrapped = to - end;
            [
                range(from, end),
                range(self.sweep_start, self.sweep_start + wrapped),
            ]
        }
    }
}
