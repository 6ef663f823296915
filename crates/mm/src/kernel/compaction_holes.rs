//! Hole-aware compaction: H-Policy's rule (iv) (SysMon-H / H-Policy paper, section 4),
//! the compaction mode [`CompactMode::HoleAware`](crate::compaction::CompactMode) (Linux's
//! scanners are the default).
//!
//! The paper: "H-Policy tries to migrate fewer pages for creating the large blocks, as
//! enabling page migration in Linux kernel may incur performance slowdown. In our
//! design, H-Policy tracks the 'holes' in physical memory by using counters in the buddy
//! system's slabs and is able to have large blocks by removing the relatively small
//! holes in memory address space via the page migration operations (large holes bring
//! more page migration overheads)." It gives no algorithm; this is the one chosen.
//!
//! # The algorithm
//!
//! Memory is cut into aligned units of the order a run wants: the pageblock order (the
//! huge order), or a direct request's order when it is larger. A unit holding no in-use
//! frame is already a free block (buddies merge as far as they can) and is left alone.
//! The others are ranked once per run by the per-pageblock counters
//! (`PageblockCounters`: free frames, pinned frames), with no frame scanned:
//! 1. units that may be emptied, fewest in-use frames first (lowest address on a tie);
//! 2. then the units that may not be emptied: any pageblock with a pinned (kernel or
//!    page-table) frame, or held by a superpage reservation, or, for direct runs, not
//!    Movable (`suitable_migration_source`), or cut short by the end of the zone.
//!
//! Two ends walk the ranking towards each other, as Linux's scanners walk addresses:
//! - the source end takes units from the front and empties each: its frames are scanned,
//!   and if every in-use frame can migrate (movable, order 0, outside reservations) each
//!   moves out; if one cannot (a huge page, say) the unit is passed over with nothing
//!   moved;
//! - the destination end takes free frames from the back: first the units that can never
//!   be emptied, then the fullest of the others. Only Movable pageblocks give frames
//!   (`suitable_migration_target`), and never a wholly free one (that would break the
//!   free block being made).
//!
//! A run stops when the ends meet, when the next source has more in-use frames than the
//! destinations between the ends have free ones (every later source has at least as
//! many), or when the request is met, checked after each unit: a direct request's order
//! is free, or the proactive score is at most the low mark. A full run goes on until the
//! ends meet or the destinations run out.
//!
//! # How this reads the paper
//!
//! - "Holes" are read both ways the paper allows, and both lead to the same choice. The
//!   in-use frames that keep a unit from being a free block are its holes: the smallest
//!   ones are removed first, because a larger one costs more migrations (the paper's
//!   parenthesis). The free gaps among in-use frames are holes too: the smallest ones
//!   (in the fullest pageblocks) are filled first, since they would never become a large
//!   block themselves ("fill small holes first", issue 19).
//! - "Counters in the buddy system's slabs" are the per-pageblock free and pinned
//!   counters the buddy allocator keeps in O(1) per list operation. Ranking reads them
//!   and is not charged, as Linux's pageblock-flag tests are not.
//! - Units that cannot be emptied are the first destinations: their free frames are lost
//!   to huge pages anyway, so filling them costs no future huge block.
//! - The pre-scan of a source before moving anything is not Linux's (which migrates
//!   what it isolated even if the pageblock then stays in use). It costs the scan of a
//!   unit that is passed over, and saves migrations that cannot make a free block.
//!
//! # Costs and rules shared with Linux's mode
//!
//! Pages move through [`Kernel::migrate_frame`] into frames taken with
//! `PhysMem::alloc_frame_in`, as the free scanner takes them, so each migration costs what
//! it costs there; each frame either end scans costs `FragCosts::compact_scan`. The
//! requests, `compaction_suitable`, the per-CPU drain, the statistics, and what may not
//! move (kernel frames, page tables, compound pages, reserved frames) are
//! `compaction.rs`'s. The Linux scanners' cached positions are neither read nor changed.
//! With per-CPU lists, the lists are drained after each emptied unit, as `compact_zone`
//! drains on leaving an order-aligned block, so the freed frames merge before the
//! stopping rule looks (the model's Linux mode drains only when a run starts).
//!
//! This module owns the ranking and the two ends; it must not decide when to compact.

use crate::kernel::Kernel;
use crate::phys::frame::{FrameState, OwnerKind};
use crate::phys::pageblock::MigrateType;
use crate::pressure::compaction::CompactOutcome;
use hugemm_hw::{Nanos, Order, Pfn};

/// One hole-aware run: the ranked units and the two ends.
struct HoleRun {
    /// Frames per unit.
    unit: u64,
    /// Unit starts, in rank order.
    units: Vec<u64>,
    /// How many units at the front may be emptied.
    sources: usize,
    /// The next source (index into `units`).
    src: usize,
    /// The current destination (index into `units`), above `src` while the ends apart.
    dst: usize,
    /// The next frame the destination end examines in `units[dst]`.
    dst_pos: u64,
    /// Free frames the destinations between the ends still offer.
    room: u64,
    out: CompactOutcome,
}

impl Kernel {
    /// A hole-aware run over units of `unit_order`; `movable_only` keeps sources to
    /// Movable pageblocks (direct runs); `finished` is asked after each unit.
    pub(super) fn compact_holes(
        &mut self,
        unit_order: Order,
        movable_only: bool,
        finished: impl Fn(&Kernel) -> bool,
    ) -> CompactOutcome {
        let mut run = self.rank_units(unit_order.0, movable_only);
        while run.src < run.sources && run.src < run.dst {
            let start = run.units[run.src];
            run.room = run.room.saturating_sub(self.room_in(start, run.unit));
            if self.in_use(start, run.unit) > run.room {
                break;
            }
            let emptied = self.empty_unit(&mut run, start);
            run.src += 1;
            if emptied {
                // The moved pages' old frames may sit on per-CPU lists: back to the buddy
                // allocator, where they merge (`compact_zone` drains on leaving a block).
                self.stats.internal_errors += self.phys.drain_per_cpu_lists().is_err() as u64;
                if finished(self) {
                    break;
                }
            }
        }
        let scanned = run.out.migrate_scanned + run.out.free_scanned;
        run.out.cost += Nanos(self.frag.compact_scan.0 * scanned);
        run.out
    }

    /// Rank the units of `order` that hold in-use frames (see the module doc).
    fn rank_units(&self, order: u8, movable_only: bool) -> HoleRun {
        let unit = 1u64 << order;
        let end = self.phys.zone_end();
        let mut ranked: Vec<(bool, u64, u64)> = (0..end.div_ceil(unit))
            .map(|i| i * unit)
            .filter(|&start| self.in_use(start, unit) > 0)
            .map(|start| {
                let fixed = !self.may_empty(start, unit, movable_only);
                (fixed, self.in_use(start, unit), start)
            })
            .collect();
        ranked.sort_unstable();
        let sources = ranked.iter().take_while(|(fixed, ..)| !fixed).count();
        let units: Vec<u64> = ranked.into_iter().map(|(.., start)| start).collect();
        let room = units.iter().map(|&s| self.room_in(s, unit)).sum();
        let dst = units.len().saturating_sub(1);
        HoleRun {
            unit,
            dst_pos: units.get(dst).copied().unwrap_or(0),
            units,
            sources,
            src: 0,
            dst,
            room,
            out: CompactOutcome::default(),
        }
    }

    /// The pageblocks (index, first frame) of the unit at `start`, within the zone.
    fn pageblocks_of(&self, start: u64, unit: u64) -> impl Iterator<Item = (usize, u64)> + '_ {
        let pb = 1u64 << self.phys.pageblock_order().0;
        let end = (start + unit).min(self.phys.zone_end());
        let c = &self.phys.counters;
        (start..end)
            .step_by(pb as usize)
            .map(move |s| (c.index_of(s), s))
    }

    /// In-use frames of the unit at `start` (from the counters).
    fn in_use(&self, start: u64, unit: u64) -> u64 {
        let c = &self.phys.counters;
        self.pageblocks_of(start, unit)
            .map(|(pb, _)| u64::from(c.frames_in(pb) - c.free(pb)))
            .sum()
    }

    /// Whether the unit at `start` could become a free block: whole, no pinned frame, no
    /// reservation, and (for direct runs) Movable throughout.
    fn may_empty(&self, start: u64, unit: u64, movable_only: bool) -> bool {
        let c = &self.phys.counters;
        start + unit <= self.phys.zone_end()
            && self.pageblocks_of(start, unit).all(|(pb, first)| {
                c.pinned(pb) == 0
                    && !self.reserv.holds(Pfn(first))
                    && (!movable_only
                        || self.phys.pageblock_type(Pfn(first)) == Some(MigrateType::Movable))
            })
    }

    /// Free frames the unit at `start` offers as a destination: those of its Movable
    /// pageblocks that are not wholly free.
    fn room_in(&self, start: u64, unit: u64) -> u64 {
        self.pageblocks_of(start, unit)
            .filter(|&(pb, first)| self.gives_frames(pb, first))
            .map(|(pb, _)| u64::from(self.phys.counters.free(pb)))
            .sum()
    }

    /// Whether pageblock `pb` (holding frame `pfn`) gives destination frames: Movable,
    /// with free frames, not wholly free.
    fn gives_frames(&self, pb: usize, pfn: u64) -> bool {
        let c = &self.phys.counters;
        let free = c.free(pb);
        free > 0
            && free < c.frames_in(pb)
            && self.phys.pageblock_type(Pfn(pfn)) == Some(MigrateType::Movable)
    }

    /// Move every in-use frame out of the unit at `start` if all can migrate; returns
    /// whether the unit was emptied (or had nothing movable left to move).
    fn empty_unit(&mut self, run: &mut HoleRun, start: u64) -> bool {
        let Some(pages) = self.migratable_frames(run, start) else {
            return false;
        };
        for (src, owner) in pages {
            let Some(dst) = self.next_hole(run, owner) else {
                return false; // cannot happen while `room` is exact
            };
            run.room = run.room.saturating_sub(1);
            self.migrate_counted(src, dst, &mut run.out);
        }
        true
    }

    /// Scan the unit at `start`: its in-use frames if every one can migrate, `None` if
    /// one cannot (a compound page, a kernel frame, a reserved frame).
    fn migratable_frames(&self, run: &mut HoleRun, start: u64) -> Option<Vec<(Pfn, OwnerKind)>> {
        let end = (start + run.unit).min(self.phys.zone_end());
        let mut pages = Vec::new();
        let mut pfn = start;
        while pfn < end {
            let step = match self.phys.frames.at(pfn as u32).state() {
                FrameState::Allocated {
                    order: Order(0),
                    owner,
                } if owner.is_movable() && !self.reserv.holds(Pfn(pfn)) => {
                    pages.push((Pfn(pfn), owner));
                    1
                }
                FrameState::FreeHead { order, .. } => 1 << order.0,
                _ => {
                    run.out.migrate_scanned += 1;
                    return None;
                }
            };
            pfn += step;
            run.out.migrate_scanned += step;
        }
        Some(pages)
    }

    /// The destination end: allocate for `owner` the next free frame of the current
    /// destination, moving to the next one towards the source end when it has none. A
    /// pageblock whose counters say it has no frame to give is left unscanned.
    fn next_hole(&mut self, run: &mut HoleRun, owner: OwnerKind) -> Option<Pfn> {
        let pb = 1u64 << self.phys.pageblock_order().0;
        while run.dst > run.src {
            let end = (run.units[run.dst] + run.unit).min(self.phys.zone_end());
            if run.dst_pos >= end {
                run.dst -= 1;
                run.dst_pos = run.units[run.dst];
                continue;
            }
            let pos = run.dst_pos;
            if !self.gives_frames(self.phys.counters.index_of(pos), pos) {
                run.dst_pos = (pos | (pb - 1)) + 1;
                continue;
            }
            match self.take_free_at(pos, owner, &mut run.out) {
                Ok(taken) => {
                    run.dst_pos += 1;
                    return taken;
                }
                Err(step) => run.dst_pos += step,
            }
        }
        None
    }
}

#[cfg(test)]
#[path = "compaction_holes_tests.rs"]
mod tests;
