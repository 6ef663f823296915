//! The stealing mechanism behind a fallback decision (`mm/page_alloc.c`:
//! `__rmqueue_fallback`'s `do_steal`, `steal_suitable_fallback`, `move_freepages_block`,
//! `change_pageblock_range`).
//!
//! Owns moving free blocks between migrate types' lists, retyping pageblocks, queueing
//! AAF's evacuations and counting fallback events
//! ([`FallbackStats`](crate::stats::FallbackStats)). It must not decide
//! which block to steal or whether to claim a pageblock: it asks the
//! [`FallbackPolicy`](crate::fallback::FallbackPolicy). It must not migrate pages either:
//! evacuations are queued for the kernel ([`PhysMem::take_evacuations`]).

use crate::error::{MmError, Result};
use crate::phys::buddy::PhysMem;
use crate::phys::fallback::{FallbackChoice, FallbackRules, FreeAreaView, PageblockCensus};
use crate::phys::frame::FrameState;
use crate::phys::pageblock::MigrateType;
use hugemm_hw::{Order, Pfn};

impl PhysMem {
    /// Ask the policy for a block and steal it for `migrate`, leaving a block of order >=
    /// `order` on `migrate`'s lists.
    pub(crate) fn rmqueue_fallback(&mut self, order: u8, migrate: MigrateType) -> Result<()> {
        let view = FreeAreaView::new(
            &self.frames,
            &self.areas[self.zone],
            &self.blocks,
            &self.counters,
            self.index.as_ref().map(|index| &index[self.zone]),
            self.max_order().0,
            self.rules,
            self.zone_range(),
        );
        let choice = self
            .policy
            .choose(&view, Order(order), migrate)
            .ok_or(MmError::OutOfMemory)?;
        let (head, taken_order, taken_from) = self.check_choice(&choice, order)?;
        if migrate != MigrateType::Movable && taken_order < self.blocks.order() {
            self.count_kernel_census(migrate, taken_order);
        }
        self.fallback_stats.fallbacks += 1;
        if self.nodes.nodes() == 1 && self.nodes.count() > 1 {
            let by_zone = &mut self.fallback_stats.by_zone;
            by_zone.resize(self.nodes.count(), 0);
            by_zone[self.zone] += 1;
        }
        self.fallback_stats.pageblocks_scanned += u64::from(choice.scanned);
        let claimed_before = self.fallback_stats.pageblocks_claimed;
        let boosts = choice.boosts.unwrap_or(taken_order < self.blocks.order());
        self.boosting_fallbacks += u64::from(boosts);
        self.steal_suitable_fallback(head, &choice, migrate);
        let claimed = self.fallback_stats.pageblocks_claimed > claimed_before;
        self.fallback_stats
            .record_event(migrate, taken_from, taken_order, claimed);
        Ok(())
    }

    /// Add the zone's free frames on each type's lists to
    /// [`MovableFallbackCensus`](crate::stats::MovableFallbackCensus): a movable request
    /// is about to fall back (constant time: a count per order and type).
    pub(crate) fn count_movable_census(&mut self) {
        let (area, orders) = (&self.areas[self.zone], 0..=self.max_order().0);
        let c = &mut self.fallback_stats.movable_census;
        c.fallbacks += 1;
        for mt in MigrateType::ALL {
            let free: u64 = orders.clone().map(|o| area.count(o, mt) << o).sum();
            c.free_on[mt.index()] += free;
        }
    }

    /// Add where the kernel pageblocks' frames are now to
    /// [`KernelFallbackCensus`](crate::stats::KernelFallbackCensus) (linear in the
    /// pageblocks and the per-CPU lists; run only on a kernel fallback below a pageblock).
    fn count_kernel_census(&mut self, migrate: MigrateType, taken_order: u8) {
        let kernel = |mt| matches!(mt, MigrateType::Unmovable | MigrateType::Reclaimable);
        const TYPES: usize = MigrateType::REQUESTS.len();
        let mut per_cpu = [0u64; TYPES];
        for (pfn, order, list) in self.pcp_blocks() {
            if kernel(self.blocks.type_of(pfn)) {
                per_cpu[list.index()] += 1u64 << order;
            }
        }
        let pb_frames = 1u32 << self.blocks.order();
        let k = &self.counters;
        let (mut blocks, mut frames, mut free, mut pinned) = (0, 0, 0, 0);
        let mut free_on = [0u64; TYPES];
        for pb in 0..k.len() {
            if kernel(self.blocks.type_of(pb as u32 * pb_frames)) {
                blocks += 1;
                frames += u64::from(k.frames_in(pb));
                free += u64::from(k.free(pb));
                pinned += u64::from(k.pinned(pb));
                for mt in MigrateType::REQUESTS {
                    free_on[mt.index()] += u64::from(k.free_on(pb, mt));
                }
            }
        }
        let other = match migrate {
            MigrateType::Reclaimable => MigrateType::Unmovable,
            _ => MigrateType::Reclaimable,
        };
        let area = &self.areas[self.zone];
        let largest = (0..=self.max_order().0)
            .rev()
            .find(|&o| area.count(o, other) > 0)
            .map_or(0, |o| o as usize + 1);
        let orders = self.max_order().0 as usize + 1;
        let censuses = &mut self.fallback_stats.kernel_census;
        let c = match migrate {
            MigrateType::Reclaimable => &mut censuses.reclaimable,
            _ => &mut censuses.unmovable,
        };
        c.fallbacks += 1;
        c.pageblocks += blocks;
        c.kernel += pinned;
        c.movable += frames - free - pinned - per_cpu.iter().sum::<u64>();
        for mt in 0..TYPES {
            c.free_on[mt] += free_on[mt];
            c.per_cpu[mt] += per_cpu[mt];
        }
        c.other_kernel_largest.resize(orders + 1, 0);
        c.other_kernel_largest[largest] += 1;
        c.taken_order.resize(orders, 0);
        c.taken_order[taken_order as usize] += 1;
    }

    /// The chosen block's head, order and free-list type, if it is a free block of at
    /// least `order`.
    fn check_choice(&self, choice: &FallbackChoice, order: u8) -> Result<(u32, u8, MigrateType)> {
        let bad = MmError::FallbackChoice {
            policy: self.policy.name(),
        };
        match self.frame(choice.block).map(|f| f.state()) {
            Some(FrameState::FreeHead { order: o, migrate }) if o.0 >= order => {
                Ok((choice.block.0 as u32, o.0, migrate))
            }
            _ => Err(bad),
        }
    }

    /// `steal_suitable_fallback`: move the block (and, when allowed, every free page of
    /// its pageblock) to `start`'s lists; claim the pageblock when the policy agrees (or
    /// always, queueing an evacuation, for AAF's `evacuate`).
    fn steal_suitable_fallback(&mut self, head: u32, choice: &FallbackChoice, start: MigrateType) {
        let order = self.frames.at(head).order_bits();
        let pb_order = self.blocks.order();
        if order >= pb_order {
            self.blocks.set_range(head, order, start);
            self.fallback_stats.pageblocks_claimed += 1 << (order - pb_order);
            return self.move_block(head, start);
        }
        let pb_frames = self.blocks.frames_per_block();
        let pb_start = head & !(pb_frames - 1);
        if !choice.whole_block || pb_start as u64 + pb_frames as u64 > self.frames_total() {
            self.fallback_stats.stolen_without_claim += 1;
            return self.move_block(head, start);
        }
        let old = self.blocks.type_of(head);
        let (free, movable) = self.move_freepages_block(pb_start, start);
        let mut census = PageblockCensus::new(old, start, pb_frames, free, movable);
        if self.rules == FallbackRules::Linux41 {
            census.alike = 0; // 4.1 counts only the pages it moved
        }
        self.settle_pageblock(pb_start, &census, choice, start);
    }

    /// After its free pages moved: claim the pageblock at `pb_start` for `start` when the
    /// policy agrees or AAF asks, and queue AAF's evacuation when movable frames remain.
    fn settle_pageblock(
        &mut self,
        pb_start: u32,
        census: &PageblockCensus,
        choice: &FallbackChoice,
        start: MigrateType,
    ) {
        if !choice.evacuate && !self.policy.claims_pageblock(census, start) {
            self.fallback_stats.stolen_without_claim += 1;
            return;
        }
        self.blocks.set(pb_start, start);
        self.fallback_stats.pageblocks_claimed += 1;
        if choice.evacuate && census.movable > 0 {
            self.evacuations.push(Pfn(pb_start as u64));
            self.fallback_stats.evacuations_requested += 1;
        }
    }

    /// Move one free block to `mt`'s list at the same order (`move_to_free_list`).
    fn move_block(&mut self, head: u32, mt: MigrateType) {
        let (order, _) = self.list_remove(head);
        self.list_push(head, order, mt);
    }

    /// `move_freepages_block`: move every free block of the pageblock at `pb_start` to
    /// `mt`'s lists; returns (free frames, allocated frames of movable owners).
    fn move_freepages_block(&mut self, pb_start: u32, mt: MigrateType) -> (u32, u32) {
        let end = pb_start + self.blocks.frames_per_block();
        let (mut pfn, mut free, mut movable) = (pb_start, 0u32, 0u32);
        while pfn < end {
            let f = self.frames.at(pfn);
            match f.state() {
                FrameState::FreeHead { order, .. } => {
                    self.move_block(pfn, mt);
                    free += 1 << order.0;
                    pfn += 1 << order.0;
                }
                _ => {
                    movable += u32::from(f.owner().is_some_and(|o| o.is_movable()));
                    pfn += 1;
                }
            }
        }
        (free, movable)
    }
}

#[cfg(test)]
mod tests {
    use crate::phys::buddy::{AllocRequest, PhysMem};
    use crate::phys::fallback::FallbackRules;
    use crate::phys::frame::OwnerKind;
    use crate::phys::pageblock::MigrateType;
    use hugemm_hw::{Geometry, Order, Pfn};

    fn kernel_page() -> AllocRequest {
        AllocRequest::new(Order(0))
            .migrate(MigrateType::Unmovable)
            .owner(OwnerKind::KernelUnmovable)
    }

    #[test]
    fn an_unmovable_page_claims_a_whole_max_order_block() {
        let mut m = PhysMem::new(2048, Geometry::X86_64).unwrap();
        let b = m.alloc(&kernel_page()).unwrap();
        assert_eq!(b.pfn, Pfn(0));
        // The order-10 block was found, so both of its pageblocks changed type.
        assert_eq!(m.pageblocks(MigrateType::Unmovable), 2);
        assert_eq!(m.free_frames(MigrateType::Unmovable), 1023);
        assert_eq!(m.free_frames(MigrateType::Movable), 1024);
        let events = m.fallback_stats().events;
        assert_eq!(events.len(), 1);
        let e = events[0];
        assert_eq!(
            (e.alloc, e.taken_from),
            (MigrateType::Unmovable, MigrateType::Movable)
        );
        assert_eq!((e.order, e.claimed, e.count), (10, true, 1));
    }

    #[test]
    fn a_movable_fallback_counts_where_the_zones_free_memory_was() {
        let mut m = PhysMem::new(512, Geometry::X86_64).unwrap();
        // The kernel page claims the one pageblock: its 511 free frames go to the
        // Unmovable lists, the Movable lists are empty.
        m.alloc(&kernel_page()).unwrap();
        assert_eq!(m.fallback_stats().movable_census.fallbacks, 0);
        m.alloc(&AllocRequest::new(Order(0))).unwrap();
        let c = m.fallback_stats().movable_census;
        assert_eq!((c.fallbacks, c.free_on), (1, [511, 0, 0, 0]));
        // Its steal claimed the pageblock back (511 free >= 256): the next movable page
        // is on its own lists, no fallback.
        m.alloc(&AllocRequest::new(Order(0))).unwrap();
        assert_eq!(m.fallback_stats().movable_census.fallbacks, 1);
    }

    #[test]
    fn stealing_part_of_a_mostly_used_pageblock_leaves_its_type() {
        let mut m = PhysMem::new(512, Geometry::X86_64).unwrap();
        // 300 movable frames in use, 212 free (as order-2 and smaller pieces).
        let used: Vec<_> = (0..300)
            .map(|_| m.alloc(&AllocRequest::new(Order(0))).unwrap())
            .collect();
        assert_eq!(used.len(), 300);
        let b = m.alloc(&kernel_page()).unwrap();
        assert_eq!(
            m.frame(b.pfn).unwrap().owner(),
            Some(OwnerKind::KernelUnmovable)
        );
        // free 212 + alike 0 < 256: the pageblock stays movable, its free pages moved.
        assert_eq!(m.pageblock_type(b.pfn), Some(MigrateType::Movable));
        assert_eq!(m.free_frames(MigrateType::Unmovable), 211);
        assert_eq!(m.free_frames(MigrateType::Movable), 0);
        // The largest free piece (212 = 128 + 64 + 16 + 4) was taken, without a claim.
        let events = m.fallback_stats().events;
        assert_eq!(events.len(), 1);
        assert_eq!((events[0].order, events[0].claimed), (7, false));
    }

    /// One pageblock: 300 movable frames, then 212 kernel ones (the first a steal that
    /// does not claim), then 100 movable frames freed, and one more kernel page: a second
    /// steal from the same pageblock, 100 free and 212 alike. Returns its claim.
    fn second_steal_claims(rules: FallbackRules) -> bool {
        let mut m = PhysMem::new(512, Geometry::X86_64).unwrap();
        m.set_fallback_rules(rules);
        let used: Vec<_> = (0..300)
            .map(|_| m.alloc(&AllocRequest::new(Order(0))).unwrap())
            .collect();
        for _ in 0..212 {
            m.alloc(&kernel_page()).unwrap();
        }
        for b in &used[..100] {
            m.free(b.pfn, Order(0)).unwrap();
        }
        m.alloc(&kernel_page()).unwrap();
        let stats = m.fallback_stats();
        assert_eq!(stats.fallbacks, 2);
        let claimed = stats.pageblocks_claimed == 1;
        assert_eq!(
            claimed,
            m.pageblock_type(Pfn(0)) == Some(MigrateType::Unmovable)
        );
        claimed
    }

    #[test]
    fn linux_4_13_counts_alike_pages_to_claim_and_linux_4_1_only_free_ones() {
        // 4.13+: 100 free + 212 alike >= 256 claims; 4.1: 100 moved < 256 does not.
        assert!(second_steal_claims(FallbackRules::Linux413));
        assert!(!second_steal_claims(FallbackRules::Linux41));
    }

    #[test]
    fn allocations_never_fail_while_any_block_fits() {
        let mut m = PhysMem::new(1024, Geometry::X86_64).unwrap();
        let types = [
            MigrateType::Unmovable,
            MigrateType::Reclaimable,
            MigrateType::Movable,
        ];
        for i in 0..1024 {
            let req = AllocRequest::new(Order(0)).migrate(types[i % 3]);
            assert!(m.alloc(&req).is_ok(), "allocation {i} failed");
        }
        assert_eq!(m.frames_free(), 0);
        assert!(m.alloc(&AllocRequest::new(Order(0))).is_err());
    }

    #[test]
    fn a_kernel_fallback_below_a_pageblock_counts_where_the_kernel_pageblocks_are() {
        let mut m = PhysMem::new(1024, Geometry::X86_64).unwrap();
        let movable = AllocRequest::new(Order(0));
        let user: Vec<_> = (0..401).map(|_| m.alloc(&movable).unwrap()).collect();
        // The first kernel page claims the free pageblock 1 (a census of nothing: the
        // block taken is a whole pageblock), the next 511 fill it.
        let kernel: Vec<_> = (0..512).map(|_| m.alloc(&kernel_page()).unwrap()).collect();
        assert!(kernel.iter().all(|b| b.pfn.0 >= 512));
        assert_eq!(m.fallback_stats().kernel_census.unmovable.fallbacks, 0);
        for b in &kernel[..3] {
            m.free(b.pfn, Order(0)).unwrap();
        }
        // Pageblock 0's last 111 frames, then a movable page stolen from pageblock 1.
        for _ in 0..112 {
            m.alloc(&movable).unwrap();
        }
        assert_eq!(m.pageblock_type(Pfn(0)), Some(MigrateType::Movable));
        for _ in 0..2 {
            m.alloc(&kernel_page()).unwrap();
        }
        for b in &user[..5] {
            m.free(b.pfn, Order(0)).unwrap();
        }
        // The unmovable lists are empty: this one falls back into pageblock 0.
        let b = m.alloc(&kernel_page()).unwrap();
        assert!(b.pfn.0 < 512);
        let c = m.fallback_stats().kernel_census.unmovable;
        assert_eq!((c.fallbacks, c.pageblocks), (1, 1));
        assert_eq!((c.kernel, c.movable), (511, 1));
        assert_eq!((c.free_on, c.per_cpu), ([0; 3], [0; 3]));
        // Nothing on the reclaimable lists; the five freed frames 0-4 merged into blocks
        // of order 2 and 0, and the largest was taken.
        assert_eq!((c.other_kernel_largest[0], c.taken_order[2]), (1, 1));
        assert_eq!(m.fallback_stats().kernel_census.reclaimable.fallbacks, 0);
    }
}
