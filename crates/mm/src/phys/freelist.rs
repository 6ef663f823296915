//! The free area: one intrusive doubly-linked list of free-block heads per order per
//! migrate type (Linux `struct free_area`, `add_to_free_list`, `del_page_from_free_list`).
//!
//! Zeroed blocks (a free block whose head frame is zeroed is zeroed throughout: the
//! buddy allocator keeps that so) go to the tail of their list, dirty ones to the head,
//! so each list is HawkEye's two lists (section 3.1: non-zero, then zero) joined end to
//! end: the head is the first dirty block if there is one, the tail the last zeroed one.
//! With nothing zeroed (no pre-zeroing) every push is at the head, as Linux's, but for
//! a block the buddy allocator frees where a merge is likely, which Linux puts at the
//! tail ([`FreeArea::push_dirty_tail`]).
//!
//! Owns the list heads and tails, the links stored in frame metadata, and the counters.
//! It must not split, merge or choose blocks: that is the buddy allocator's job.

use crate::phys::frame::{FrameTable, NIL};
use crate::phys::pageblock::MigrateType;

const MTS: usize = MigrateType::COUNT;

/// Free lists per order per migrate type, with block and frame counts.
#[derive(Clone, Debug)]
pub(crate) struct FreeArea {
    heads: Vec<[u32; MTS]>,
    tails: Vec<[u32; MTS]>,
    blocks: Vec<[u64; MTS]>,
    frames_by_mt: [u64; MTS],
    /// Free frames in zeroed blocks, all lists.
    zeroed_frames: u64,
}

impl FreeArea {
    /// Empty lists for orders `0..=max_order`.
    pub fn new(max_order: u8) -> FreeArea {
        let n = max_order as usize + 1;
        FreeArea {
            heads: vec![[NIL; MTS]; n],
            tails: vec![[NIL; MTS]; n],
            blocks: vec![[0; MTS]; n],
            frames_by_mt: [0; MTS],
            zeroed_frames: 0,
        }
    }

    /// Put the block at `pfn` on `mt`'s list at `order`, marking its first frame: at the
    /// head when it is dirty, at the tail when its head frame says it is zeroed.
    pub fn push(&mut self, frames: &mut FrameTable, pfn: u32, order: u8, mt: MigrateType) {
        if frames.at(pfn).is_zeroed() {
            self.link_at_tail(frames, pfn, order, mt);
            self.zeroed_frames += 1 << order;
        } else {
            self.link_at_head(frames, pfn, order, mt);
        }
    }

    /// Put the dirty block at `pfn` on `mt`'s list at `order` at the tail, where the
    /// allocator reaches it last (`__free_one_page` when a merge is likely), unless the
    /// list ends in zeroed blocks: those must stay at the tail (the zero list's), so it
    /// goes to the head as any dirty block (an approximation only pre-zeroing can see).
    pub fn push_dirty_tail(
        &mut self,
        frames: &mut FrameTable,
        pfn: u32,
        order: u8,
        mt: MigrateType,
    ) {
        let tail = self.tails[order as usize][mt.index()];
        if frames.at(pfn).is_zeroed() || (tail != NIL && frames.at(tail).is_zeroed()) {
            return self.push(frames, pfn, order, mt);
        }
        self.link_at_tail(frames, pfn, order, mt);
    }

    /// Link the block at `pfn` in as the last of `mt`'s list at `order`, and count it.
    #[inline]
    fn link_at_tail(&mut self, frames: &mut FrameTable, pfn: u32, order: u8, mt: MigrateType) {
        let (o, m) = (order as usize, mt.index());
        let tail = self.tails[o][m];
        frames.update(pfn, |f| {
            f.set_free_head(order, mt);
            f.set_links(tail, NIL);
        });
        match tail {
            NIL => self.heads[o][m] = pfn,
            t => frames.update(t, |f| f.set_next(pfn)),
        }
        self.tails[o][m] = pfn;
        self.blocks[o][m] += 1;
        self.frames_by_mt[m] += 1 << order;
    }

    /// Link the block at `pfn` in as the first of `mt`'s list at `order`, and count it.
    #[inline]
    fn link_at_head(&mut self, frames: &mut FrameTable, pfn: u32, order: u8, mt: MigrateType) {
        let (o, m) = (order as usize, mt.index());
        let head = self.heads[o][m];
        frames.update(pfn, |f| {
            f.set_free_head(order, mt);
            f.set_links(NIL, head);
        });
        match head {
            NIL => self.tails[o][m] = pfn,
            h => frames.update(h, |f| f.set_prev(pfn)),
        }
        self.heads[o][m] = pfn;
        self.blocks[o][m] += 1;
        self.frames_by_mt[m] += 1 << order;
    }

    /// Unlink the free head at `pfn` from its list; its first frame becomes a free tail.
    /// Returns the block's order and list.
    pub fn remove(&mut self, frames: &mut FrameTable, pfn: u32) -> (u8, MigrateType) {
        let f = frames.at(pfn);
        let (order, mt) = (f.order_bits(), f.migrate_bits());
        let (prev, next) = f.links();
        if prev == NIL {
            self.heads[order as usize][mt.index()] = next;
        } else {
            frames.update(prev, |f| f.set_next(next));
        }
        if next == NIL {
            self.tails[order as usize][mt.index()] = prev;
        } else {
            frames.update(next, |f| f.set_prev(prev));
        }
        if f.is_zeroed() {
            self.zeroed_frames -= 1 << order;
        }
        frames.update(pfn, |f| f.set_free_tail());
        self.blocks[order as usize][mt.index()] -= 1;
        self.frames_by_mt[mt.index()] -= 1 << order;
        (order, mt)
    }

    /// Take the first block of `mt`'s list at `order`.
    pub fn pop(&mut self, frames: &mut FrameTable, order: u8, mt: MigrateType) -> Option<u32> {
        let head = self.first(order, mt)?;
        self.remove(frames, head);
        Some(head)
    }

    /// Take the last block of `mt`'s list at `order` if it is zeroed (the zero list's).
    pub fn pop_zeroed(
        &mut self,
        frames: &mut FrameTable,
        order: u8,
        mt: MigrateType,
    ) -> Option<u32> {
        let tail = *self.tails.get(order as usize)?.get(mt.index())?;
        if tail == NIL || !frames.at(tail).is_zeroed() {
            return None;
        }
        self.remove(frames, tail);
        Some(tail)
    }

    /// The first block of `mt`'s list at `order`.
    pub fn first(&self, order: u8, mt: MigrateType) -> Option<u32> {
        let head = *self.heads.get(order as usize)?.get(mt.index())?;
        (head != NIL).then_some(head)
    }

    /// Free frames in zeroed blocks, all lists.
    pub fn zeroed_frames(&self) -> u64 {
        self.zeroed_frames
    }

    /// Blocks on `mt`'s list at `order`.
    pub fn count(&self, order: u8, mt: MigrateType) -> u64 {
        self.blocks.get(order as usize).map_or(0, |b| b[mt.index()])
    }

    /// Free blocks at `order`, all migrate types.
    pub fn count_order(&self, order: u8) -> u64 {
        self.blocks
            .get(order as usize)
            .map_or(0, |b| b.iter().sum())
    }

    /// Free frames on `mt`'s lists.
    pub fn frames(&self, mt: MigrateType) -> u64 {
        self.frames_by_mt[mt.index()]
    }

    /// Free frames on all lists.
    pub fn frames_total(&self) -> u64 {
        self.frames_by_mt.iter().sum()
    }

    /// The heads on `mt`'s list at `order`, in list order.
    pub fn iter<'a>(&self, frames: &'a FrameTable, order: u8, mt: MigrateType) -> ListIter<'a> {
        ListIter {
            frames,
            next: self.first(order, mt).unwrap_or(NIL),
        }
    }
}

/// Walks one free list.
#[derive(Clone, Debug)]
pub(crate) struct ListIter<'a> {
    frames: &'a FrameTable,
    next: u32,
}

impl Iterator for ListIter<'_> {
    type Item = u32;
    fn next(&mut self) -> Option<u32> {
        let cur = self.next;
        self.next = self.frames.get(cur as u64)?.links().1;
        Some(cur)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phys::frame::FrameState;

    #[test]
    fn push_and_pop_are_lifo_per_list() {
        let mut frames = FrameTable::zeroed(16);
        let mut fa = FreeArea::new(3);
        fa.push(&mut frames, 0, 2, MigrateType::Movable);
        fa.push(&mut frames, 8, 3, MigrateType::Movable);
        fa.push(&mut frames, 4, 2, MigrateType::Movable);
        assert_eq!(
            fa.iter(&frames, 2, MigrateType::Movable)
                .collect::<Vec<_>>(),
            vec![4, 0]
        );
        assert_eq!(fa.frames(MigrateType::Movable), 16);
        assert_eq!(fa.pop(&mut frames, 2, MigrateType::Movable), Some(4));
        assert_eq!(frames.at(4).state(), FrameState::FreeTail);
        assert_eq!(fa.count(2, MigrateType::Movable), 1);
        assert_eq!(fa.count_order(3), 1);
        assert_eq!(fa.pop(&mut frames, 2, MigrateType::Unmovable), None);
    }

    #[test]
    fn removing_from_the_middle_relinks_neighbours() {
        let mut frames = FrameTable::zeroed(8);
        let mut fa = FreeArea::new(0);
        for pfn in [0, 1, 2] {
            fa.push(&mut frames, pfn, 0, MigrateType::Unmovable);
        }
        fa.remove(&mut frames, 1);
        assert_eq!(
            fa.iter(&frames, 0, MigrateType::Unmovable)
                .collect::<Vec<_>>(),
            vec![2, 0]
        );
        assert_eq!(frames.at(0).links(), (2, NIL));
        assert_eq!(fa.frames_total(), 2);
        fa.remove(&mut frames, 0);
        fa.remove(&mut frames, 2);
        assert_eq!(fa.first(0, MigrateType::Unmovable), None);
        fa.push(&mut frames, 5, 0, MigrateType::Unmovable);
        assert_eq!(fa.iter(&frames, 0, MigrateType::Unmovable).count(), 1);
    }

    #[test]
    fn a_dirty_block_pushed_at_the_tail_comes_last_but_never_after_zeroed_ones() {
        let mut frames = FrameTable::zeroed(8);
        let mut area = FreeArea::new(0);
        for pfn in [0, 1] {
            area.push(&mut frames, pfn, 0, MigrateType::Movable);
        }
        area.push_dirty_tail(&mut frames, 2, 0, MigrateType::Movable);
        let order: Vec<u32> = area.iter(&frames, 0, MigrateType::Movable).collect();
        assert_eq!(order, vec![1, 0, 2]);
        assert_eq!(area.count(0, MigrateType::Movable), 3);
        // With a zeroed block at the tail, a dirty one goes to the head instead.
        frames.update(3, |f| f.set_zeroed(true));
        area.push(&mut frames, 3, 0, MigrateType::Movable);
        area.push_dirty_tail(&mut frames, 4, 0, MigrateType::Movable);
        let order: Vec<u32> = area.iter(&frames, 0, MigrateType::Movable).collect();
        assert_eq!(order, vec![4, 1, 0, 2, 3]);
        assert_eq!(
            area.pop_zeroed(&mut frames, 0, MigrateType::Movable),
            Some(3)
        );
    }

    #[test]
    fn zeroed_blocks_go_to_the_tail_and_dirty_ones_to_the_head() {
        let mut frames = FrameTable::zeroed(8);
        let mut fa = FreeArea::new(0);
        let mt = MigrateType::Movable;
        frames.update(1, |f| f.set_zeroed(true));
        frames.update(3, |f| f.set_zeroed(true));
        for pfn in [1, 0, 3, 2] {
            fa.push(&mut frames, pfn, 0, mt);
        }
        assert_eq!(
            fa.iter(&frames, 0, mt).collect::<Vec<_>>(),
            vec![2, 0, 1, 3]
        );
        assert_eq!(fa.zeroed_frames(), 2);
        assert_eq!(fa.pop_zeroed(&mut frames, 0, mt), Some(3));
        assert_eq!(
            fa.pop(&mut frames, 0, mt),
            Some(2),
            "dirty first from the head"
        );
        assert_eq!(fa.pop_zeroed(&mut frames, 0, mt), Some(1));
        assert_eq!(fa.pop_zeroed(&mut frames, 0, mt), None, "only dirty left");
        assert_eq!(fa.zeroed_frames(), 0);
        assert_eq!(fa.pop(&mut frames, 0, mt), Some(0));
        assert_eq!(fa.pop(&mut frames, 0, mt), None);
    }
}
