//! The free area: one intrusive doubly-linked list of free-block heads per order per
//! migrate type (Linux `struct free_area`, `add_to_free_list`, `del_page_from_free_list`).
//!
//! Owns the list heads, the links stored in frame metadata, and the counters. It must not
//! split, merge or choose blocks: that is the buddy allocator's job.

use crate::frame::{FrameTable, NIL};
use crate::pageblock::MigrateType;

const MTS: usize = MigrateType::COUNT;

/// Free lists per order per migrate type, with block and frame counts.
#[derive(Clone, Debug)]
pub(crate) struct FreeArea {
    heads: Vec<[u32; MTS]>,
    blocks: Vec<[u64; MTS]>,
    frames_by_mt: [u64; MTS],
}

impl FreeArea {
    /// Empty lists for orders `0..=max_order`.
    pub fn new(max_order: u8) -> FreeArea {
        let n = max_order as usize + 1;
        FreeArea {
            heads: vec![[NIL; MTS]; n],
            blocks: vec![[0; MTS]; n],
            frames_by_mt: [0; MTS],
        }
    }

    /// Put the block at `pfn` at the head of `mt`'s list at `order`, marking its first frame.
    pub fn push(&mut self, frames: &mut FrameTable, pfn: u32, order: u8, mt: MigrateType) {
        let (o, m) = (order as usize, mt.index());
        let head = self.heads[o][m];
        frames.update(pfn, |f| {
            f.set_free_head(order, mt);
            f.set_links(NIL, head);
        });
        if head != NIL {
            frames.update(head, |f| f.set_prev(pfn));
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
        if next != NIL {
            frames.update(next, |f| f.set_prev(prev));
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

    /// The first block of `mt`'s list at `order`.
    pub fn first(&self, order: u8, mt: MigrateType) -> Option<u32> {
        let head = *self.heads.get(order as usize)?.get(mt.index())?;
        (head != NIL).then_some(head)
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
    use crate::frame::FrameState;

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
    }
}
