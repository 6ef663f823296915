//! The buddy allocator over all physical frames ([`PhysMem`]): orders `0..=max_order`,
//! free lists per order per migrate type, pageblocks, and a pluggable fallback policy.
//!
//! Follows `mm/page_alloc.c` of Linux 6.x: allocation is `__rmqueue_smallest` (the
//! smallest block on the request's own lists, split by `expand`), then a fallback policy
//! (`__rmqueue_fallback` up to 6.14, `__rmqueue_claim` and `__rmqueue_steal` since: see
//! `steal.rs` and [`crate::fallback`]); with H-Policy's order-H preservation on (off by
//! default), a request below the huge order searches the orders in another order
//! (`preserve.rs`); freeing is
//! `__free_one_page`, merging with the buddy as long as it is a free block of the same
//! order, the merged block going to the head of its list (or, with
//! [`PhysMem::set_buddy_merge_likely`], to the tail when a merge one order up is likely,
//! as Linux does). Per-CPU page lists are optional (`pcp.rs`, off by default). Each zone
//! (`node.rs`: one per node, or Linux 4.1's DMA, DMA32 and Normal in one node) has its
//! own free area, per-CPU lists and reserve; which zone an allocation may take from, and
//! the watermarks, are the kernel's (`reclaim.rs`). `ALLOC_NOFRAGMENT` is not modelled.
//!
//! Zeroing state: every frame boots dirty (content unknown, as Linux assumes of boot
//! memory) and a freed frame becomes dirty; the allocator reports whether all frames of a
//! block were known zero so the caller can skip clearing them. Pre-zeroing
//! ([`PhysMem::prezero`], HawkEye section 3.1) zeroes free blocks in place; zeroed blocks
//! sit at the tails of the free lists (`freelist.rs`), and a request that prefers zeroed
//! frames takes the smallest zeroed block first ([`ZeroedFirst`]). Invariant: a free
//! block whose head frame is zeroed is zeroed throughout: every merge step clears the
//! bit of the merged block's head (the freed part is dirty), so a zeroed frame inside a
//! dirty block never heads a block again unless its own zeroed block is split out.
//!
//! Bookkeeping hooks: every free-list push and remove goes through `PhysMem::list_push`
//! and `PhysMem::list_remove`, which keep the per-pageblock counters
//! (`PageblockCounters`) and, while a placement policy is installed, the address index;
//! allocation and free update the pinned-frame counters.
//!
//! This module owns frame metadata and free lists. It must not know about processes or
//! page tables: callers record reverse maps through the crate-private setters.

use crate::error::{MmError, Result};
use crate::phys::fallback::addr_index::AddrIndex;
use crate::phys::fallback::{FallbackPolicy, FallbackRules, FreeAreaView, LinuxDefault, Placement};
use crate::phys::frame::{Frame, FrameState, FrameTable, OwnerKind, NIL};
use crate::phys::freelist::FreeArea;
use crate::phys::node::{NodeId, NodeMap, NodePref};
use crate::phys::pageblock::{MigrateType, PageblockCounters, Pageblocks};
use crate::phys::pcp::PerCpuLists;
use crate::stats::FallbackStats;
use hugemm_hw::{Geometry, Order, Pfn, Pid, Vpn};
use serde::{Deserialize, Serialize};

/// Highest order the frame metadata can record.
const ORDER_LIMIT: u8 = 30;

/// An allocation request, built fluently:
/// `AllocRequest::new(Order(9)).migrate(MigrateType::Movable)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllocRequest {
    order: Order,
    migrate: MigrateType,
    owner: OwnerKind,
    prefer_zeroed: bool,
    node: NodePref,
}

impl AllocRequest {
    /// A request for `2^order` frames of movable anonymous memory.
    pub fn new(order: Order) -> AllocRequest {
        AllocRequest {
            order,
            migrate: MigrateType::Movable,
            owner: OwnerKind::Anon,
            prefer_zeroed: false,
            node: NodePref::Home,
        }
    }
    /// Set the nodes the request may be served from (default: the home node first, then
    /// the others nearest first; see [`crate::node`]).
    pub fn node(mut self, node: NodePref) -> AllocRequest {
        self.node = node;
        self
    }
    /// The nodes the request may be served from.
    pub fn node_pref(&self) -> NodePref {
        self.node
    }
    /// Set the migrate type (which free lists serve the request first).
    pub fn migrate(mut self, migrate: MigrateType) -> AllocRequest {
        self.migrate = migrate;
        self
    }
    /// Set the owner recorded in the frames.
    pub fn owner(mut self, owner: OwnerKind) -> AllocRequest {
        self.owner = owner;
        self
    }
    /// Prefer frames known to be zero (anonymous memory, which must be cleared): with
    /// [`ZeroedFirst::Yes`] a zeroed block is taken before a dirty one.
    pub fn prefer_zeroed(mut self, yes: bool) -> AllocRequest {
        self.prefer_zeroed = yes;
        self
    }
    /// The requested order.
    pub fn order(&self) -> Order {
        self.order
    }
    /// The requested migrate type.
    pub fn migrate_type(&self) -> MigrateType {
        self.migrate
    }
    /// The owner the frames will carry.
    pub fn owner_kind(&self) -> OwnerKind {
        self.owner
    }
    /// Whether zeroed frames are preferred.
    pub fn wants_zeroed(&self) -> bool {
        self.prefer_zeroed
    }
}

/// A block handed out by the allocator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    /// Its first frame.
    pub pfn: Pfn,
    /// Its order.
    pub order: Order,
    /// Whether every frame of it was known to be zero.
    pub zeroed: bool,
}

/// Whether requests preferring zeroed frames take zeroed blocks first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ZeroedFirst {
    /// HawkEye's two lists (section 3.1): the smallest zeroed block of a large enough
    /// order first, then as without preference.
    #[default]
    Yes,
    /// The released code's per-frame flag (`asynczero.c`, `PG_zeroed`): allocation takes
    /// blocks in list order whatever they hold, and a block that happens to be zeroed is
    /// not cleared again.
    No,
}

/// Which free blocks [`PhysMem::prezero`] zeroes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum PrezeroScope {
    /// Dirty blocks of the movable lists, highest order first (the paper's daemon moving
    /// pages from the non-zero to the zero list; which blocks first it does not say: the
    /// largest serve huge-page faults).
    #[default]
    AllOrders,
    /// Dirty blocks of the movable list at the highest order only (the released code:
    /// `MAX_ORDER - 1` blocks, head of the list, zeroed ones put back at the tail).
    MaxOrder,
}

/// Physical memory: frame metadata, the buddy free area of each zone and the pageblocks.
#[derive(Clone, Debug)]
pub struct PhysMem {
    pub(crate) frames: FrameTable,
    /// The free lists of each zone.
    pub(crate) areas: Vec<FreeArea>,
    /// The frame ranges of the nodes and their zones.
    pub(crate) nodes: NodeMap,
    /// The zone an allocation is being served from: the free lists a fallback policy and
    /// `__rmqueue` see. 0 between allocations.
    pub(crate) zone: usize,
    /// The node allocations try first by default ([`NodePref::Home`]).
    home: usize,
    pub(crate) blocks: Pageblocks,
    pub(crate) policy: Box<dyn FallbackPolicy>,
    /// Per-pageblock free / pinned / listed counters, kept by the hooks below.
    pub(crate) counters: PageblockCounters,
    /// Free heads by address, one index per zone, kept only while `placement` is not all
    /// `ListHead`.
    pub(crate) index: Option<Vec<AddrIndex>>,
    /// The policy's placement per migrate type, read when it was installed.
    pub(crate) placement: [Placement; MigrateType::COUNT],
    /// Per migrate type: whether `__rmqueue_smallest` leaves Linux's list-head search (a
    /// placement, or order-H preservation), so the hot path tests one byte for both.
    special: [bool; MigrateType::COUNT],
    /// Pageblocks (start frames) AAF claimed and wants emptied of movable frames.
    pub(crate) evacuations: Vec<Pfn>,
    pub(crate) fallback_stats: FallbackStats,
    /// Fallbacks since the kernel last looked that would boost the watermark
    /// ([`FallbackChoice::boosts`](crate::fallback::FallbackChoice)).
    pub(crate) boosting_fallbacks: u64,
    /// `vm.watermark_boost_factor`, in 1/10000 of the high watermark; 0: no boosting.
    boost_factor: u32,
    /// `zone->watermark_boost`, frames: kswapd's extra target (`reclaim.rs`).
    watermark_boost: u64,
    /// kswapd reclaimed for a boost since the engine last looked, so kcompactd is due
    /// (`balance_pgdat`'s `wakeup_kcompactd(pgdat, pageblock_order, ...)`).
    boost_compaction: bool,
    /// The Linux whose common fallback rules apply.
    pub(crate) rules: FallbackRules,
    max_order: u8,
    /// Per-CPU page lists, when kept (`pcp.rs`).
    pub(crate) pcp: Option<PerCpuLists>,
    /// The CPU whose lists allocations and frees use.
    pub(crate) cpu: usize,
    /// Whether zeroed-preferring requests take zeroed blocks first.
    zeroed_first: ZeroedFirst,
    /// Order-H preservation (`preserve.rs`): the huge order while it is on, 0 while off
    /// (`order < preserve_below` says whether a request is preserved against).
    pub(crate) preserve_below: u8,
    /// Free a block to the tail of its list when the buddy of the block one order up
    /// that holds it is free ([`PhysMem::set_buddy_merge_likely`]).
    merge_likely: bool,
    /// Reserve pageblocks per zone (Linux 4.1's `MIGRATE_RESERVE`,
    /// [`PhysMem::set_migrate_reserve`]); empty without a reserve.
    reserve_blocks: Vec<u32>,
}

impl PhysMem {
    /// `frames` dirty free frames in maximal aligned blocks, all pageblocks Movable, with
    /// Linux's default fallback. Boot blocks are queued lowest address first, as Linux's
    /// `__free_pages_core` frees boot memory to the tail of the lists (`FPI_TO_TAIL`,
    /// 5.10+; [`PhysMem::queue_boot_memory_highest_first`] gives the older order).
    pub fn new(frames: u64, geometry: Geometry) -> Result<PhysMem> {
        PhysMem::with_nodes(&[frames], geometry)
    }

    /// Memory of several nodes, `frames[n]` frames on node `n` (node 0 from frame 0, the
    /// others following; see [`crate::node`]), each booted as [`PhysMem::new`] boots one.
    pub fn with_nodes(node_frames: &[u64], geometry: Geometry) -> Result<PhysMem> {
        PhysMem::boot(node_frames, geometry, NodeMap::new)
    }

    /// Memory of one node split into zones of `zone_frames[z]` frames each, lowest
    /// addresses first (Linux's DMA, DMA32, Normal; see [`crate::node`]), each a multiple
    /// of the largest buddy block when there are several, each booted as
    /// [`PhysMem::new`] boots one.
    pub fn with_zones(zone_frames: &[u64], geometry: Geometry) -> Result<PhysMem> {
        PhysMem::boot(zone_frames, geometry, NodeMap::with_zones)
    }

    fn boot(
        node_frames: &[u64],
        geometry: Geometry,
        map: fn(&[u64], u8) -> Result<NodeMap>,
    ) -> Result<PhysMem> {
        let max_order = geometry.max_order;
        let pb_order = geometry.huge_order().0;
        let frames: u64 = node_frames.iter().sum();
        if frames == 0 || frames >= NIL as u64 {
            return Err(MmError::InvalidConfig {
                what: "frame count must be between 1 and 2^32 - 2",
            });
        }
        if max_order > ORDER_LIMIT || pb_order > max_order {
            return Err(MmError::InvalidConfig {
                what: "need huge order <= max_order <= 30",
            });
        }
        let nodes = map(node_frames, max_order)?;
        let mut mem = PhysMem {
            frames: FrameTable::zeroed(frames as usize),
            areas: vec![FreeArea::new(max_order); nodes.count()],
            nodes,
            zone: 0,
            home: 0,
            blocks: Pageblocks::new(frames, pb_order),
            policy: Box::new(LinuxDefault),
            counters: PageblockCounters::new(frames, pb_order, max_order),
            index: None,
            placement: [Placement::ListHead; MigrateType::COUNT],
            special: [false; MigrateType::COUNT],
            evacuations: Vec::new(),
            fallback_stats: FallbackStats::default(),
            boosting_fallbacks: 0,
            boost_factor: 0,
            watermark_boost: 0,
            boost_compaction: false,
            rules: FallbackRules::default(),
            max_order,
            pcp: None,
            cpu: 0,
            zeroed_first: ZeroedFirst::Yes,
            preserve_below: 0,
            merge_likely: false,
            reserve_blocks: Vec::new(),
        };
        for n in 0..mem.nodes.count() {
            let (start, end) = mem.nodes.range(n);
            for (pfn, order) in boot_blocks(end - start, max_order).into_iter().rev() {
                mem.list_push(start + pfn, order, MigrateType::Movable);
            }
        }
        Ok(mem)
    }

    /// Make `node` the one allocations try first by default (Nimble's "all remote"
    /// bound runs from the slow node).
    pub fn set_home_node(&mut self, node: NodeId) -> Result<()> {
        if node.0 as usize >= self.nodes.nodes() {
            return Err(MmError::InvalidArgument {
                what: "no such home node",
            });
        }
        self.home = node.0 as usize;
        Ok(())
    }

    /// Number of memory nodes.
    pub fn node_count(&self) -> usize {
        self.nodes.nodes()
    }

    /// The node holding frame `pfn`.
    pub fn node_of(&self, pfn: Pfn) -> NodeId {
        NodeId(self.nodes.node_of_zone(self.zone_of(pfn)) as u8)
    }

    /// Frames `start..end` of node `node` (`None` if there is no such node).
    pub fn node_frames(&self, node: NodeId) -> Option<(Pfn, Pfn)> {
        let n = node.0 as usize;
        (n < self.nodes.nodes()).then(|| {
            let (a, b) = self.nodes.node_range(n);
            (Pfn(a as u64), Pfn(b as u64))
        })
    }

    /// Free frames on node `node` (0 if there is no such node).
    pub fn node_frames_free(&self, node: NodeId) -> u64 {
        let n = node.0 as usize;
        match n < self.nodes.nodes() {
            true => self
                .nodes
                .zones_of(n)
                .map(|z| self.zone_frames_free(z))
                .sum(),
            false => 0,
        }
    }

    /// Number of zones, of every node (one per node unless a node is split into zones).
    pub fn zone_count(&self) -> usize {
        self.nodes.count()
    }

    /// The zone holding frame `pfn` (zones are numbered from the lowest addresses).
    pub fn zone_of(&self, pfn: Pfn) -> usize {
        self.nodes.of(u32::try_from(pfn.0).unwrap_or(u32::MAX))
    }

    /// Frames `start..end` of zone `zone` (`None` if there is no such zone).
    pub fn zone_frames(&self, zone: usize) -> Option<(Pfn, Pfn)> {
        (zone < self.nodes.count()).then(|| {
            let (a, b) = self.nodes.range(zone);
            (Pfn(a as u64), Pfn(b as u64))
        })
    }

    /// Free frames in zone `zone`'s buddy lists (0 if there is no such zone), as its
    /// `NR_FREE_PAGES`: per-CPU lists not counted.
    pub fn zone_frames_free(&self, zone: usize) -> u64 {
        self.areas.get(zone).map_or(0, FreeArea::frames_total)
    }

    /// Free blocks of exactly `order`, all migrate types, in zone `zone`.
    pub fn zone_free_blocks(&self, zone: usize, order: Order) -> u64 {
        self.areas.get(zone).map_or(0, |a| a.count_order(order.0))
    }

    /// The zone Linux 4.1's one-zone checks read (`zone_watermark_ok_4_1`, its kswapd,
    /// direct reclaim and compaction suitability, which the model runs for one zone): on
    /// a node split into zones, the highest, where requests go first; `None` otherwise,
    /// when they read all memory.
    pub(crate) fn checked_zone(&self) -> Option<usize> {
        (self.nodes.nodes() == 1 && self.nodes.count() > 1).then(|| self.nodes.count() - 1)
    }

    /// Free frames of the zone 4.1's one-zone checks read (all free frames without zones).
    pub fn checked_frames_free(&self) -> u64 {
        match self.checked_zone() {
            Some(z) => self.zone_frames_free(z),
            None => self.frames_free(),
        }
    }

    /// Frames of the zone 4.1's one-zone checks read (all frames without zones).
    pub fn checked_frames_total(&self) -> u64 {
        match self.checked_zone().and_then(|z| self.zone_frames(z)) {
            Some((a, b)) => b.0 - a.0,
            None => self.frames_total(),
        }
    }

    /// The end of node 0, the range compaction works in without zones: all memory with
    /// one node; node 0 only with several (per-node compaction is not modelled). A node
    /// split into zones is compacted a zone at a time (`kernel/compaction.rs`).
    pub(crate) fn zone_end(&self) -> u64 {
        self.nodes.node_range(0).1 as u64
    }

    /// Free a block to the tail of its list, where allocations reach it last, when the
    /// block one order up that would merge with it is free: pages are being freed near
    /// it, so it may soon merge (`__free_one_page`'s tail placement, Linux 2.6.35 on;
    /// `buddy_merge_likely` since 5.x). Below `max_order - 1`, as Linux's `order <
    /// MAX_ORDER - 2`. Off by default: every result made before the model had it was made
    /// without it, every block freed at the head.
    pub fn set_buddy_merge_likely(&mut self, on: bool) {
        self.merge_likely = on;
    }

    /// Whether a block likely to merge is freed to the tail of its list.
    pub fn buddy_merge_likely(&self) -> bool {
        self.merge_likely
    }

    /// Keep Linux 4.1's `MIGRATE_RESERVE` (`setup_zone_migrate_reserve`; removed in 4.4):
    /// the first `blocks` pageblocks of each node that are Movable and wholly free become
    /// reserve pageblocks, their free blocks (a block headed in one, whole) move to the
    /// reserve's lists, and from then on a request takes from those lists only when its
    /// own lists and its fallbacks have nothing (`__rmqueue`'s `retry_reserve`); frames
    /// freed in a reserve pageblock go back to them. Fallbacks never take from the
    /// reserve nor claim its pageblocks; compaction never migrates into them (its free
    /// scanner wants Movable pageblocks, as 4.1's `suitable_migration_target`) and out
    /// of them only when it scans every pageblock. The reserve's free frames count
    /// toward the watermarks, as every free frame does: that is its effect on a small
    /// zone, where it can be larger than the `low` watermark, so the other lists run dry
    /// before kswapd wakes. 4.1 sizes it as the `min` watermark rounded up to
    /// pageblocks, at most 2 ([`reserve_pageblocks`](crate::kernel::reserve_pageblocks)).
    /// Call once, before any allocation; `blocks` 0 keeps no reserve (the default, Linux
    /// since 4.4).
    pub fn set_migrate_reserve(&mut self, blocks: u32) -> Result<()> {
        self.set_migrate_reserve_per_zone(&vec![blocks; self.nodes.count()])
    }

    /// [`PhysMem::set_migrate_reserve`] with `blocks[z]` reserve pageblocks in zone `z`
    /// (4.1 sizes each zone's from its own `min` watermark).
    pub fn set_migrate_reserve_per_zone(&mut self, blocks: &[u32]) -> Result<()> {
        if blocks.len() != self.nodes.count() {
            return Err(MmError::InvalidArgument {
                what: "a reserve size is needed for every zone",
            });
        }
        if !self.reserve_blocks.is_empty() || self.frames_free() != self.frames_total() {
            return Err(MmError::InvalidConfig {
                what: "the migrate reserve can only be set up once, before any frame is allocated",
            });
        }
        let pb = self.blocks.order();
        for (n, &blocks) in blocks.iter().enumerate() {
            let (start, end) = self.nodes.range(n);
            let mut left = blocks;
            let mut pfn = start;
            while left > 0 && pfn + (1 << pb) <= end {
                if self.blocks.type_of(pfn) == MigrateType::Movable {
                    self.blocks.set(pfn, MigrateType::Reserve);
                    self.move_free_blocks_headed_in(pfn, MigrateType::Reserve);
                    left -= 1;
                }
                pfn += 1 << pb;
            }
        }
        if blocks.iter().any(|&b| b > 0) {
            self.reserve_blocks = blocks.to_vec();
        }
        Ok(())
    }

    /// Reserve pageblocks of every zone together (0: no reserve).
    pub fn migrate_reserve(&self) -> u32 {
        self.reserve_blocks.iter().sum()
    }

    /// Move every free block whose head lies in the pageblock at `start` to `mt`'s lists
    /// (`move_freepages_block` for the reserve's setup).
    fn move_free_blocks_headed_in(&mut self, start: u32, mt: MigrateType) {
        let end = start + self.blocks.frames_per_block();
        let mut pfn = start;
        while pfn < end {
            match self.frames.at(pfn).state() {
                FrameState::FreeHead { order, .. } => {
                    self.list_remove(pfn);
                    self.list_push(pfn, order.0, mt);
                    pfn += 1 << order.0;
                }
                _ => pfn += 1,
            }
        }
    }

    /// Queue boot memory as Linux before 5.10 did, so that allocations take the highest
    /// addresses first: `__free_pages_memory` freed the boot blocks in ascending address
    /// order, each to the head of its list (`__free_pages`; Linux 4.1), so the last, the
    /// highest, came first. Linux 5.10's `FPI_TO_TAIL` freed them to the tail instead,
    /// which [`PhysMem::new`]'s lowest-first order models. Reverses every free list, so
    /// it must run at boot, before any frame is allocated or zeroed; an error after.
    pub fn queue_boot_memory_highest_first(&mut self) -> Result<()> {
        if self.frames_free() != self.frames_total()
            || self.areas.iter().any(|a| a.zeroed_frames() != 0)
        {
            return Err(MmError::InvalidConfig {
                what: "the boot order can only be chosen before any frame is allocated or zeroed",
            });
        }
        for n in 0..self.areas.len() {
            for order in 0..=self.max_order {
                for mt in MigrateType::ALL {
                    let heads: Vec<u32> = self.areas[n].iter(&self.frames, order, mt).collect();
                    for &pfn in &heads {
                        self.list_remove_on(n, pfn);
                    }
                    // Pushed to the head in their old order: the list ends reversed.
                    for &pfn in &heads {
                        self.list_push_on(n, pfn, order, mt);
                    }
                }
            }
        }
        Ok(())
    }

    /// Follow `rules`' common fallback rules ([`FallbackRules`]).
    pub fn set_fallback_rules(&mut self, rules: FallbackRules) {
        self.rules = rules;
    }

    /// The common fallback rules in force.
    pub fn fallback_rules(&self) -> FallbackRules {
        self.rules
    }

    /// Replace the pageblock fallback policy; builds or drops the address index its
    /// placement needs (O(frames / 64 + free blocks) when built).
    pub fn set_fallback_policy(&mut self, policy: Box<dyn FallbackPolicy>) {
        self.placement = MigrateType::ALL.map(|mt| policy.placement(mt));
        self.update_special();
        self.policy = policy;
        let placed = self.placement.iter().any(|&p| p != Placement::ListHead);
        self.index = match (placed, self.index.take()) {
            (false, _) => None,
            (true, Some(index)) => Some(index),
            (true, None) => Some(
                (0..self.nodes.count())
                    .map(|zone| AddrIndex::build(self, zone))
                    .collect(),
            ),
        };
    }

    /// Recompute which migrate types leave the list-head search (after a change of
    /// placement or of order-H preservation).
    pub(crate) fn update_special(&mut self) {
        let preserve = self.preserve_below > 0;
        self.special = self
            .placement
            .map(|at| preserve || at != Placement::ListHead);
    }

    /// Fallback events so far.
    pub fn fallback_stats(&self) -> FallbackStats {
        self.fallback_stats.clone()
    }

    /// Take the pageblocks (start frames, in the order claimed) whose movable frames the
    /// fallback policy asked to migrate out (AAF). The kernel drains this after an
    /// allocation and evacuates each; the allocator itself cannot migrate.
    pub fn take_evacuations(&mut self) -> Vec<Pfn> {
        std::mem::take(&mut self.evacuations)
    }

    /// Put a free block on `mt`'s list, keeping the counters and the index.
    #[inline]
    pub(crate) fn list_push(&mut self, pfn: u32, order: u8, mt: MigrateType) {
        self.list_push_on(self.nodes.of(pfn), pfn, order, mt);
    }

    /// [`PhysMem::list_push`] for a block known to be in zone `n`.
    #[inline]
    fn list_push_on(&mut self, n: usize, pfn: u32, order: u8, mt: MigrateType) {
        self.areas[n].push(&mut self.frames, pfn, order, mt);
        self.note_pushed(pfn, order, mt);
    }

    /// The bookkeeping of a block put on `mt`'s list at `order`.
    #[inline]
    fn note_pushed(&mut self, pfn: u32, order: u8, mt: MigrateType) {
        self.counters.on_push(pfn, order, mt);
        if let Some(index) = &mut self.index {
            index[self.nodes.of(pfn)].insert(pfn, order, mt);
        }
    }

    /// Take the free head at `pfn` off its list, keeping the counters and the index.
    #[inline]
    pub(crate) fn list_remove(&mut self, pfn: u32) -> (u8, MigrateType) {
        self.list_remove_on(self.nodes.of(pfn), pfn)
    }

    /// [`PhysMem::list_remove`] for a block known to be in zone `n`.
    #[inline]
    fn list_remove_on(&mut self, n: usize, pfn: u32) -> (u8, MigrateType) {
        let (order, mt) = self.areas[n].remove(&mut self.frames, pfn);
        self.note_removed(pfn, order, mt);
        (order, mt)
    }

    /// The bookkeeping of a block taken off `mt`'s list at `order`.
    pub(crate) fn note_removed(&mut self, pfn: u32, order: u8, mt: MigrateType) {
        self.counters.on_remove(pfn, order, mt);
        if let Some(index) = &mut self.index {
            index[self.nodes.of(pfn)].remove(pfn, order, mt);
        }
    }

    /// Compare the per-pageblock counters and the address index with a recount (tests and
    /// debug runs; linear in memory).
    #[cfg_attr(not(test), allow(dead_code))] // for tests and debug checks
    pub(crate) fn check_counters(&self) -> Result<()> {
        self.counters.check(&self.frames)?;
        let Some(index) = &self.index else {
            return Ok(());
        };
        index
            .iter()
            .zip(&self.areas)
            .try_for_each(|(index, area)| index.check(&self.frames, |o, mt| area.count(o, mt)))
    }

    /// `vm.watermark_boost_factor` from now on (Linux 5.0+; its default there is 15000,
    /// 150% of the high watermark): how far fallbacks that fragment may raise the
    /// watermark kswapd reclaims to. 0, the model's default, turns boosting off, as in
    /// Linux before 5.0 (every result published before the model had it was made so).
    pub fn set_watermark_boost_factor(&mut self, factor: u32) {
        self.boost_factor = factor;
    }

    /// `boost_watermark` once for each fallback since the last call that boosts
    /// ([`FallbackChoice::boosts`](crate::fallback::FallbackChoice)), given the high
    /// watermark `high`: the boost grows by a pageblock each, up to `high *
    /// factor / 10000` (at least a pageblock); nothing when boosting is off or memory
    /// is under four pageblocks. Returns the boosts applied.
    pub(crate) fn apply_watermark_boost(&mut self, high: u64) -> u64 {
        let n = std::mem::take(&mut self.boosting_fallbacks);
        let pageblock = self.blocks.frames_per_block() as u64;
        if n == 0 || self.boost_factor == 0 || pageblock * 4 > self.frames_total() {
            return 0;
        }
        let max = high * u64::from(self.boost_factor) / 10_000;
        if max == 0 {
            return 0;
        }
        let max = max.max(pageblock);
        self.watermark_boost = (self.watermark_boost + n * pageblock).min(max);
        n
    }

    /// Take the count [`PhysMem::apply_watermark_boost`] would apply (tests only).
    #[cfg(test)]
    pub(crate) fn take_boosting_fallbacks_for_test(&mut self) -> u64 {
        std::mem::take(&mut self.boosting_fallbacks)
    }

    /// The zone's watermark boost, frames (0 when not boosted).
    pub fn watermark_boost(&self) -> u64 {
        self.watermark_boost
    }

    /// kswapd has reclaimed for the boost: it is spent, and kcompactd is due.
    pub(crate) fn spend_watermark_boost(&mut self) {
        self.boost_compaction |= self.watermark_boost > 0;
        self.watermark_boost = 0;
    }

    /// Whether kswapd reclaimed for a boost since the last call: Linux then wakes
    /// kcompactd to compact for a pageblock-sized block.
    pub fn take_boost_compaction(&mut self) -> bool {
        std::mem::take(&mut self.boost_compaction)
    }

    /// The fallback policy's name.
    pub fn fallback_policy_name(&self) -> &'static str {
        self.policy.name()
    }

    /// Allocate a block (`__rmqueue`: smallest fit on the request's lists, else fallback)
    /// from the first node of the request's preference that has one.
    pub fn alloc(&mut self, req: &AllocRequest) -> Result<Block> {
        if self.nodes.count() == 1 && req.node == NodePref::Home {
            return self.alloc_on_node(req);
        }
        let mut result = Err(MmError::OutOfMemory);
        let mut next = 0;
        while let Some(z) = self.zonelist_zone(req.node, next) {
            next += 1;
            self.zone = z;
            result = self.alloc_on_node(req);
            if !matches!(result, Err(MmError::OutOfMemory)) {
                break;
            }
        }
        self.zone = 0;
        result
    }

    /// The zones an allocation with preference `pref` tries, in order (the zonelist:
    /// nodes nearest first, each node's zones highest first).
    pub(crate) fn zonelist(&self, pref: NodePref) -> &[usize] {
        self.nodes.order(pref, self.home)
    }

    /// Entry `i` of [`PhysMem::zonelist`] (`None` past its end): for a walk that
    /// allocates as it goes, and so cannot hold the list.
    pub(crate) fn zonelist_zone(&self, pref: NodePref, i: usize) -> Option<usize> {
        self.zonelist(pref).get(i).copied()
    }

    /// Allocate a block from zone `zone` only, whatever the request's node preference
    /// (the kernel's zonelist walk, `reclaim.rs`, chooses the zone).
    pub fn alloc_in_zone(&mut self, req: &AllocRequest, zone: usize) -> Result<Block> {
        if zone >= self.nodes.count() {
            return Err(MmError::InvalidArgument {
                what: "no such zone",
            });
        }
        self.zone = zone;
        let result = self.alloc_on_node(req);
        self.zone = 0;
        result
    }

    /// [`PhysMem::alloc`] on the zone `self.zone`.
    fn alloc_on_node(&mut self, req: &AllocRequest) -> Result<Block> {
        let order = req.order.0;
        if order > self.max_order {
            return Err(MmError::InvalidArgument {
                what: "order above max_order",
            });
        }
        if req.migrate == MigrateType::Reserve {
            return Err(MmError::InvalidArgument {
                what: "no request is of the reserve's migrate type",
            });
        }
        let zeroed_first = req.prefer_zeroed && self.zeroed_first == ZeroedFirst::Yes;
        let pfn = if let Some(pfn) = zeroed_first
            .then(|| self.rmqueue_zeroed(order, req.migrate))
            .flatten()
        {
            pfn
        } else if self.uses_pcp(order) {
            match self.pcp_take(order, req.migrate) {
                Some(pfn) => pfn,
                None => {
                    // drain_all_pages, then one more try before failing.
                    self.drain_per_cpu_lists()?;
                    self.rmqueue(order, req.migrate)?
                }
            }
        } else {
            self.rmqueue(order, req.migrate)?
        };
        let zeroed = self.mark_allocated(pfn, order, req.owner);
        Ok(Block {
            pfn: Pfn(pfn as u64),
            order: req.order,
            zeroed,
        })
    }

    /// `__rmqueue`: the request's own lists, then a fallback.
    pub(crate) fn rmqueue(&mut self, order: u8, mt: MigrateType) -> Result<u32> {
        match self.rmqueue_smallest(order, mt) {
            Some(pfn) => Ok(pfn),
            None => self.rmqueue_via_fallback(order, mt),
        }
    }

    fn rmqueue_via_fallback(&mut self, order: u8, mt: MigrateType) -> Result<u32> {
        let area = &self.areas[self.zone];
        if !(order..=self.max_order).any(|o| area.count_order(o) > 0) {
            return Err(MmError::OutOfMemory);
        }
        if mt == MigrateType::Movable {
            self.count_movable_census();
        }
        if let Err(e) = self.rmqueue_fallback(order, mt) {
            // 4.1's `__rmqueue`: "Use MIGRATE_RESERVE rather than fail an allocation".
            let reserve = self.reserve_blocks.get(self.zone).copied().unwrap_or(0);
            return match (&e, reserve) {
                (MmError::OutOfMemory, 1..) => {
                    self.rmqueue_list_head(order, MigrateType::Reserve).ok_or(e)
                }
                _ => Err(e),
            };
        }
        if self.pcp_holds(order, mt) {
            self.fallback_stats.beside_per_cpu_blocks += 1;
        }
        self.rmqueue_smallest(order, mt)
            .ok_or(MmError::FallbackChoice {
                policy: self.policy.name(),
            })
    }

    /// `__rmqueue_smallest`: the first block on `mt`'s lists of order >= `order`, split
    /// (or the block at the policy's end of memory, see [`Placement`]; or, with order-H
    /// preservation on and `order` below the huge order, in `preserve.rs`'s order).
    pub(crate) fn rmqueue_smallest(&mut self, order: u8, mt: MigrateType) -> Option<u32> {
        if self.special[mt.index()] {
            return self.rmqueue_special(order, mt);
        }
        self.rmqueue_list_head(order, mt)
    }

    /// [`PhysMem::rmqueue_smallest`] under a placement or order-H preservation.
    #[inline(never)]
    fn rmqueue_special(&mut self, order: u8, mt: MigrateType) -> Option<u32> {
        let at = self.placement[mt.index()];
        if order < self.preserve_below {
            return self.rmqueue_preserving(order, mt, at);
        }
        match at {
            Placement::ListHead => self.rmqueue_list_head(order, mt),
            _ => self.rmqueue_placed(order, mt, at),
        }
    }

    /// Linux's `__rmqueue_smallest`: the head of the smallest non-empty list of order >=
    /// `order` on `mt`'s lists, split.
    #[inline(always)]
    fn rmqueue_list_head(&mut self, order: u8, mt: MigrateType) -> Option<u32> {
        for cur in order..=self.max_order {
            if let Some(pfn) = self.areas[self.zone].pop(&mut self.frames, cur, mt) {
                self.note_removed(pfn, cur, mt);
                self.expand(pfn, order, cur, mt);
                return Some(pfn);
            }
        }
        None
    }

    /// The smallest zeroed block of order >= `order` on `mt`'s lists, split (HawkEye's
    /// zero list first); `None` when there is none. Placement policies (KML/KMU) are not
    /// consulted: zeroed blocks exist only with pre-zeroing, which they do not model.
    /// With order-H preservation on, a zeroed block of the huge order is not split for a
    /// smaller request (`preserve.rs`).
    fn rmqueue_zeroed(&mut self, order: u8, mt: MigrateType) -> Option<u32> {
        if self.areas[self.zone].zeroed_frames() == 0 {
            return None;
        }
        if order < self.preserve_below {
            return self.rmqueue_zeroed_preserving(order, mt);
        }
        for cur in order..=self.max_order {
            if let Some(pfn) = self.areas[self.zone].pop_zeroed(&mut self.frames, cur, mt) {
                self.note_removed(pfn, cur, mt);
                self.expand(pfn, order, cur, mt);
                return Some(pfn);
            }
        }
        None
    }

    /// [`PhysMem::rmqueue_zeroed`] under order-H preservation: the zeroed blocks of every
    /// order but the huge order, smallest first (`preserve.rs`).
    #[inline(never)]
    fn rmqueue_zeroed_preserving(&mut self, order: u8, mt: MigrateType) -> Option<u32> {
        let h = self.preserve_below;
        for cur in (order..=self.max_order).filter(|&o| o != h) {
            if let Some(pfn) = self.areas[self.zone].pop_zeroed(&mut self.frames, cur, mt) {
                self.note_removed(pfn, cur, mt);
                self.expand(pfn, order, cur, mt);
                return Some(pfn);
            }
        }
        None
    }

    /// Zero free blocks of the movable lists in place, whole blocks only, until
    /// `budget` frames have been zeroed or nothing is left to zero (`scope` says which);
    /// a zeroed block goes back at the tail of its list. Returns the blocks zeroed (first
    /// frame and order).
    pub fn prezero(&mut self, budget: u64, scope: PrezeroScope) -> Vec<(Pfn, Order)> {
        let mt = MigrateType::Movable;
        let lowest = match scope {
            PrezeroScope::AllOrders => 0,
            PrezeroScope::MaxOrder => self.max_order,
        };
        let (mut done, mut blocks) = (0, Vec::new());
        let max = self.max_order;
        for (n, order) in
            (0..self.nodes.count()).flat_map(|n| (lowest..=max).rev().map(move |o| (n, o)))
        {
            let frames = 1u64 << order;
            while done + frames <= budget {
                // Dirty blocks sit at the head: a zeroed head means none is left.
                let Some(pfn) = self.areas[n].first(order, mt) else {
                    break;
                };
                if self.frames.at(pfn).is_zeroed() {
                    break;
                }
                self.list_remove(pfn);
                self.frames
                    .update_range(pfn, frames as u32, |_, f| f.set_zeroed(true));
                self.list_push(pfn, order, mt);
                blocks.push((Pfn(pfn as u64), Order(order)));
                done += frames;
            }
        }
        blocks
    }

    /// Free frames in zeroed blocks (HawkEye's zero lists).
    pub fn zeroed_free_frames(&self) -> u64 {
        self.areas.iter().map(FreeArea::zeroed_frames).sum()
    }

    /// Whether zeroed-preferring requests take zeroed blocks first.
    pub fn set_zeroed_first(&mut self, mode: ZeroedFirst) {
        self.zeroed_first = mode;
    }

    /// `expand`: keep the low `2^low` frames, return the upper halves to `mt`'s lists
    /// (of the zone being allocated from, where the block was).
    pub(crate) fn expand(&mut self, pfn: u32, low: u8, mut high: u8, mt: MigrateType) {
        while high > low {
            high -= 1;
            self.list_push_on(self.zone, pfn + (1 << high), high, mt);
        }
    }

    /// Mark a block allocated; returns whether all its frames were known zero.
    pub(crate) fn mark_allocated(&mut self, pfn: u32, order: u8, owner: OwnerKind) -> bool {
        let zeroed = self.frames.range(pfn, 1 << order).all(|f| f.is_zeroed());
        self.frames.update_range(pfn, 1 << order, |i, f| match i {
            0 => f.set_allocated(order, owner),
            _ => f.set_allocated_tail(owner),
        });
        self.counters.on_alloc(pfn, order, owner);
        zeroed
    }

    /// Free the block at `pfn` of `order` (`__free_one_page`): its frames become dirty and
    /// it merges with free buddies as far as it can, onto the list of its pageblock's type.
    pub fn free(&mut self, pfn: Pfn, order: Order) -> Result<()> {
        let head = self.check_free(pfn, order)?;
        let owner = self.frames.at(head).owner().unwrap_or(OwnerKind::Anon);
        if !self.uses_pcp(order.0) {
            return self.free_to_buddy(head, order.0, owner);
        }
        // free_unref_page: to this CPU's list, dirty, held by no one else.
        self.counters.on_free(head, order.0, owner);
        self.frames.update_range(head, 1 << order.0, |i, f| {
            match i {
                0 => f.set_allocated(order.0, OwnerKind::PerCpu),
                _ => f.set_allocated_tail(OwnerKind::PerCpu),
            }
            f.set_zeroed(false);
        });
        self.counters.on_alloc(head, order.0, OwnerKind::PerCpu);
        self.pcp_give(head, order.0)
    }

    /// `__free_one_page` for the allocated block at `head` of `order`, held by `owner`,
    /// onto the lists of its pageblock's type.
    pub(crate) fn free_to_buddy(&mut self, head: u32, order: u8, owner: OwnerKind) -> Result<()> {
        let mt = self.blocks.type_of(head);
        self.free_to_buddy_as(head, order, owner, mt)
    }

    /// [`PhysMem::free_to_buddy`] onto `mt`'s lists, whatever the pageblock's type (Linux
    /// 4.1 returns a per-CPU page to the lists of the type it was listed as, its
    /// `freepage_migratetype`), but for a reserve pageblock's frames, which go back to the
    /// reserve (4.1 lists a freed reserve page on the Movable per-CPU list with
    /// `freepage_migratetype` `MIGRATE_RESERVE`, and a page the reserve lent to a per-CPU
    /// refill keeps that type too).
    pub(crate) fn free_to_buddy_as(
        &mut self,
        head: u32,
        order: u8,
        owner: OwnerKind,
        mt: MigrateType,
    ) -> Result<()> {
        let mt = match self.reserve_blocks.is_empty() {
            true => mt,
            false if self.blocks.type_of(head) == MigrateType::Reserve => MigrateType::Reserve,
            false => mt,
        };
        let (mut pfn, mut order) = (head, order);
        self.counters.on_free(head, order, owner);
        self.frames.update_range(pfn, 1 << order, |_, f| {
            f.set_free_tail();
            f.set_zeroed(false);
        });
        // A block and its buddies are in one zone (zones hold whole max-order blocks).
        let node = self.nodes.of(pfn);
        while order < self.max_order {
            let buddy = pfn ^ (1 << order);
            if !self
                .frames
                .get(buddy as u64)
                .is_some_and(|f| f.is_free_head_of(order))
            {
                break;
            }
            self.list_remove_on(node, buddy);
            pfn = pfn.min(buddy);
            order += 1;
            // The merged block holds the dirty frames just freed: its head (maybe a
            // zeroed buddy's) must not say zeroed, here or when a later split makes it
            // a head again.
            self.frames.update(pfn, |f| f.set_zeroed(false));
        }
        if self.merge_likely && order + 1 < self.max_order && self.merge_is_likely(pfn, order) {
            self.push_tail_on(node, pfn, order, mt);
        } else {
            self.list_push_on(node, pfn, order, mt);
        }
        Ok(())
    }

    /// [`PhysMem::list_push_on`] at the list's tail (`FreeArea::push_dirty_tail`). Kept
    /// out of line: the free path with tail placement off should not grow for it.
    #[inline(never)]
    fn push_tail_on(&mut self, n: usize, pfn: u32, order: u8, mt: MigrateType) {
        self.areas[n].push_dirty_tail(&mut self.frames, pfn, order, mt);
        self.note_pushed(pfn, order, mt);
    }

    /// Whether the free block at `pfn` of `order` (merged as far as it goes) is likely to
    /// merge soon: the buddy of the block one order up that holds it is a free block of
    /// that order (`buddy_merge_likely`), so freeing the rest of its own buddy would make
    /// a block two orders up.
    #[inline(never)]
    fn merge_is_likely(&self, pfn: u32, order: u8) -> bool {
        let higher = pfn & !((2u32 << order) - 1);
        let higher_buddy = higher ^ (2u32 << order);
        self.frames
            .get(higher_buddy as u64)
            .is_some_and(|f| f.is_free_head_of(order + 1))
    }

    fn check_free(&self, pfn: Pfn, order: Order) -> Result<u32> {
        let bad = |what| MmError::BadFree { pfn: pfn.0, what };
        let f = self.frames.get(pfn.0).ok_or(bad("beyond memory"))?;
        match f.state() {
            FrameState::Allocated { order: o, .. } if o == order => Ok(pfn.0 as u32),
            FrameState::Allocated { .. } => Err(bad("order differs from the allocation")),
            _ => Err(bad("not the head of an allocated block")),
        }
    }

    /// Split an allocated compound block into order-0 frames with the same owner
    /// (`split_page` / the tail of `split_huge_page`), keeping reverse maps.
    pub(crate) fn split_compound(&mut self, pfn: Pfn) -> Result<()> {
        let (order, owner) = match self.frame(pfn).map(|f| f.state()) {
            Some(FrameState::Allocated { order, owner }) => (order.0, owner),
            _ => {
                return Err(MmError::Invariant {
                    what: "split of a frame that is not a block head",
                    at: pfn.0,
                })
            }
        };
        self.frames.update_range(pfn.0 as u32, 1 << order, |_, f| {
            let rmap = f.rmap();
            f.set_allocated(0, owner);
            if let Some((pid, vpn)) = rmap {
                f.set_rmap(pid, vpn);
            }
        });
        Ok(())
    }

    /// The inverse of [`PhysMem::split_compound`]: make the `2^order` allocated order-0
    /// frames of one owner from `pfn` (aligned) one compound block, keeping reverse maps
    /// and zeroed bits (an in-place promotion). Fails, changing nothing, unless every
    /// frame is an order-0 block head of the same owner.
    pub(crate) fn make_compound(&mut self, pfn: Pfn, order: Order) -> Result<()> {
        let n = 1u64 << order.0;
        let bad = Err(MmError::Invariant {
            what: "compound of frames that are not order-0 blocks of one owner",
            at: pfn.0,
        });
        if order.0 > self.max_order || !pfn.0.is_multiple_of(n) || pfn.0 + n > self.frames_total() {
            return bad;
        }
        let owner = self.frames.at(pfn.0 as u32).owner();
        let same = self.frames.range(pfn.0 as u32, n as u32).all(|f| {
            matches!(f.state(), FrameState::Allocated { order: Order(0), owner: o } if Some(o) == owner)
        });
        let Some(owner) = owner.filter(|_| same) else {
            return bad;
        };
        self.frames.update_range(pfn.0 as u32, n as u32, |i, f| {
            let rmap = f.rmap();
            match i {
                0 => f.set_allocated(order.0, owner),
                _ => f.set_allocated_tail(owner),
            }
            if let Some((pid, vpn)) = rmap {
                f.set_rmap(pid, vpn);
            }
        });
        Ok(())
    }

    /// Record the reverse map of `count` frames from `pfn`: frame `i` maps `vpn + i`.
    /// Their content is zero and unwritten: the caller cleared them, or they were known
    /// zero (a caller copying a page into one records its content after).
    pub(crate) fn map_frames(&mut self, pfn: Pfn, count: u64, pid: Pid, vpn: Vpn) {
        self.frames
            .update_range(pfn.0 as u32, count as u32, |i, f| {
                f.set_rmap(pid, Vpn(vpn.0 + i as u64));
                f.set_zeroed(true);
            });
    }

    /// Record the content a write of its process left in the allocated frame `pfn`.
    pub(crate) fn set_written(&mut self, pfn: Pfn, first_nonzero: Option<u16>) {
        if pfn.0 < self.frames_total() {
            self.frames
                .update(pfn.0 as u32, |f| f.set_written(first_nonzero));
        }
    }

    /// Give the allocated frame `pfn` the content of `from` (a frame's metadata read
    /// before) and the reverse map `(pid, vpn)`: one side of an exchange.
    pub(crate) fn set_content_and_rmap(&mut self, pfn: Pfn, from: Frame, pid: Pid, vpn: Vpn) {
        if pfn.0 < self.frames_total() {
            self.frames.update(pfn.0 as u32, |f| {
                f.copy_content(from);
                f.set_rmap(pid, vpn);
            });
        }
    }

    /// Give the allocated frame `dst` the content of frame `src` (a page copied).
    pub(crate) fn copy_content(&mut self, src: Pfn, dst: Pfn) {
        if let (Some(from), true) = (self.frame(src), dst.0 < self.frames_total()) {
            self.frames.update(dst.0 as u32, |f| f.copy_content(from));
        }
    }

    /// Whether a free block of order >= `order` exists on any list.
    pub fn has_free_block(&self, order: Order) -> bool {
        (order.0..=self.max_order).any(|o| self.free_blocks(Order(o)) > 0)
    }

    /// Free blocks of order >= `order`, counted as blocks of `order` (how many order-9
    /// requests could be served without splitting anything else).
    pub fn free_blocks_at_least(&self, order: Order) -> u64 {
        (order.0..=self.max_order)
            .map(|o| self.free_blocks(Order(o)) << (o - order.0))
            .sum()
    }

    /// Number of frames.
    pub fn frames_total(&self) -> u64 {
        self.frames.len() as u64
    }

    /// Number of free frames.
    pub fn frames_free(&self) -> u64 {
        self.areas.iter().map(FreeArea::frames_total).sum()
    }

    /// Free blocks of exactly `order`, all migrate types.
    pub fn free_blocks(&self, order: Order) -> u64 {
        self.areas.iter().map(|a| a.count_order(order.0)).sum()
    }

    /// Free blocks per order, index = order.
    pub fn free_blocks_by_order(&self) -> Vec<u64> {
        (0..=self.max_order)
            .map(|o| self.free_blocks(Order(o)))
            .collect()
    }

    /// Free blocks of `order` on `mt`'s list.
    pub fn free_blocks_of(&self, order: Order, mt: MigrateType) -> u64 {
        self.areas.iter().map(|a| a.count(order.0, mt)).sum()
    }

    /// Free frames on `mt`'s lists.
    pub fn free_frames(&self, mt: MigrateType) -> u64 {
        self.areas.iter().map(|a| a.frames(mt)).sum()
    }

    /// Pageblocks of type `mt`.
    pub fn pageblocks(&self, mt: MigrateType) -> u64 {
        self.blocks.count(mt)
    }

    /// Number of pageblocks (the last may be partial).
    pub fn pageblock_count(&self) -> u64 {
        self.blocks.len() as u64
    }

    /// The migrate type of the pageblock holding `pfn`.
    pub fn pageblock_type(&self, pfn: Pfn) -> Option<MigrateType> {
        u32::try_from(pfn.0).ok().and_then(|p| self.blocks.get(p))
    }

    /// The metadata of frame `pfn`.
    pub fn frame(&self, pfn: Pfn) -> Option<Frame> {
        self.frames.get(pfn.0)
    }

    /// The highest buddy order.
    pub fn max_order(&self) -> Order {
        Order(self.max_order)
    }

    /// The pageblock order.
    pub fn pageblock_order(&self) -> Order {
        Order(self.blocks.order())
    }

    /// The frames of the zone being allocated from.
    pub(crate) fn zone_range(&self) -> (Pfn, Pfn) {
        let (a, b) = self.nodes.range(self.zone);
        (Pfn(a as u64), Pfn(b as u64))
    }

    /// A read-only view of the free lists of the zone being allocated from (zone 0
    /// between allocations), as fallback policies see them.
    pub fn view(&self) -> FreeAreaView<'_> {
        FreeAreaView::new(
            &self.frames,
            &self.areas[self.zone],
            &self.blocks,
            &self.counters,
            self.index.as_ref().map(|index| &index[self.zone]),
            self.max_order,
            self.rules,
            self.zone_range(),
        )
    }

    /// Allocate the free frame `pfn` as an order-0 block of `owner`, carving it out of
    /// the free block whose head is `head` (compaction's free scanner taking a target
    /// page: `isolate_freepages_block`, `split_page`); the rest of the block goes back on
    /// the list it was on. Returns whether the frame was known zero; `None` (nothing
    /// changed) unless `head` is a free head whose block holds `pfn`.
    pub(crate) fn alloc_frame_in(&mut self, head: Pfn, pfn: Pfn, owner: OwnerKind) -> Option<bool> {
        let (h, t) = (u32::try_from(head.0).ok()?, u32::try_from(pfn.0).ok()?);
        match self.frames.get(head.0)?.state() {
            FrameState::FreeHead { order, .. } if t >= h && t - h < (1u32 << order.0) => {}
            _ => return None,
        }
        let node = self.nodes.of(h);
        let (mut order, mt) = self.list_remove_on(node, h);
        let mut h = h;
        while order > 0 {
            order -= 1;
            let upper = h + (1 << order);
            let (keep, give) = if t < upper { (h, upper) } else { (upper, h) };
            self.list_push_on(node, give, order, mt);
            h = keep;
        }
        Some(self.mark_allocated(t, 0, owner))
    }
}

/// Maximal aligned blocks covering `0..frames`, lowest first.
fn boot_blocks(frames: u32, max_order: u8) -> Vec<(u32, u8)> {
    let mut out = Vec::with_capacity((frames >> max_order) as usize + 32);
    let mut pfn = 0u32;
    while pfn < frames {
        let fits = 31 - (frames - pfn).leading_zeros();
        let order = (pfn.trailing_zeros()).min(fits).min(max_order as u32) as u8;
        out.push((pfn, order));
        pfn += 1 << order;
    }
    out
}

#[cfg(test)]
#[path = "buddy_tests.rs"]
mod tests;
