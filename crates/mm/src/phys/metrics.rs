//! Fragmentation metrics ([`Kernel::frag_metrics`](crate::Kernel::frag_metrics)): free
//! blocks by order, the unusable free space index, pageblocks by type, tainted pageblocks
//! and the degree of pollution of APSys'16 (Panwar et al., "A Case for Protecting Huge
//! Pages from the Kernel").
//!
//! - `Fu(j) = (TotalFree - sum_{i>=j} 2^i k_i) / TotalFree` (the paper's equation 1,
//!   Gorman's unusable free space index): the fraction of free memory unusable for an
//!   order-`j` request. With nothing free it is defined as 0 (Linux's `extfrag_for_order`
//!   returns 0 then: no free memory is not fragmented free memory).
//! - `fmfi` is `Fu(9)`, Ingens' free memory fragmentation index for huge pages.
//! - [`Kernel::fragmentation_score`](crate::Kernel::fragmentation_score) is
//!   `Fu(pageblock order) * 100` rounded down, Linux's `fragmentation_score_zone` for one
//!   zone (`extfrag_for_order`).
//! - A tainted pageblock is a Movable pageblock (the paper's "user pBlock") holding at
//!   least one kernel frame: `KernelUnmovable`, `KernelReclaimable` or `PageTable`.
//! - The degree of pollution of a tainted pageblock is the percentage of its frames that
//!   are kernel frames. The paper's Table 1 prints the rows "<1", "1-2", "2-4", "4-10",
//!   ">10", ">25" and ">40"; the model uses the half-open bins [0,1), [1,2), [2,4),
//!   [4,10), [10,25), [25,40) and [40,100], so every tainted pageblock is counted once
//!   (the paper's ">25" and ">40" rows overlap its ">10" row; the sum of the model's last
//!   three bins is its ">10").
//!
//! Kernel frames per pageblock come from the allocator's per-pageblock `pinned` counters
//! (frames of owners that are not movable: exactly the kernel owners above), so a
//! measurement is one pass over the pageblocks, not over the frames. This module owns the
//! definitions, computed from physical memory alone (the kernel's entry points are
//! `kernel/metrics.rs`'s); it must not change anything.

use crate::phys::buddy::PhysMem;
use crate::phys::pageblock::MigrateType;
use serde::Serialize;

/// Upper bounds (exclusive, in percent) of the pollution bins but the last.
pub const POLLUTION_BOUNDS: [u64; 6] = [1, 2, 4, 10, 25, 40];
/// Labels of the pollution bins.
pub const POLLUTION_LABELS: [&str; 7] = ["<1", "1-2", "2-4", "4-10", "10-25", "25-40", ">=40"];

/// Pageblocks by migrate type.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PageblockCounts {
    /// `MIGRATE_UNMOVABLE` pageblocks.
    pub unmovable: u64,
    /// `MIGRATE_MOVABLE` pageblocks.
    pub movable: u64,
    /// `MIGRATE_RECLAIMABLE` pageblocks.
    pub reclaimable: u64,
    /// Linux 4.1's `MIGRATE_RESERVE` pageblocks (left out of reports when there are
    /// none, as without a reserve).
    #[serde(skip_serializing_if = "is_zero")]
    pub reserve: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A snapshot of physical memory's fragmentation.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FragMetrics {
    /// Free blocks per order, index = order.
    pub free_blocks: Vec<u64>,
    /// Free frames.
    pub free_frames: u64,
    /// `Fu(j)` per order `j`, index = order.
    pub unusable_free_index: Vec<f64>,
    /// `Fu(9)` (Ingens' FMFI).
    pub fmfi: f64,
    /// Pageblocks by migrate type.
    pub pageblocks: PageblockCounts,
    /// Movable pageblocks holding kernel frames.
    pub tainted_pageblocks: u64,
    /// Tainted pageblocks by degree of pollution (see [`POLLUTION_LABELS`]).
    pub pollution: [u64; 7],
    /// Kernel frames (kernel memory and page tables) in all pageblocks.
    pub kernel_frames: u64,
}

impl FragMetrics {
    /// `Fu(j)`; 1 for orders above the highest (no free block is that large).
    pub fn unusable_free_index(&self, j: usize) -> f64 {
        self.unusable_free_index.get(j).copied().unwrap_or(1.0)
    }
}

/// `Fu(j)` from free blocks per order.
pub fn unusable_free_index(free_blocks: &[u64], j: usize) -> f64 {
    let total: u64 = free_blocks.iter().enumerate().map(|(i, k)| k << i).sum();
    if total == 0 {
        return 0.0;
    }
    let usable: u64 = free_blocks
        .iter()
        .enumerate()
        .skip(j)
        .map(|(i, k)| k << i)
        .sum();
    (total - usable) as f64 / total as f64
}

/// Measure fragmentation (one pass over the pageblocks' counters).
pub(crate) fn frag_metrics(p: &PhysMem) -> FragMetrics {
    let free_blocks = p.free_blocks_by_order();
    let ufi: Vec<f64> = (0..free_blocks.len())
        .map(|j| unusable_free_index(&free_blocks, j))
        .collect();
    let kernel = kernel_frames_per_pageblock(p);
    let pb_frames = 1u64 << p.pageblock_order().0;
    let mut m = FragMetrics {
        fmfi: unusable_free_index(&free_blocks, p.pageblock_order().0 as usize),
        free_blocks,
        free_frames: p.frames_free(),
        unusable_free_index: ufi,
        pageblocks: PageblockCounts {
            unmovable: p.pageblocks(MigrateType::Unmovable),
            movable: p.pageblocks(MigrateType::Movable),
            reclaimable: p.pageblocks(MigrateType::Reclaimable),
            reserve: p.pageblocks(MigrateType::Reserve),
        },
        tainted_pageblocks: 0,
        pollution: [0; 7],
        kernel_frames: kernel.iter().map(|&k| k as u64).sum(),
    };
    for (b, &k) in kernel.iter().enumerate() {
        let start = b as u64 * pb_frames;
        if !tainted(p, hugemm_hw::Pfn(start), k) {
            continue;
        }
        let frames = pb_frames.min(p.frames_total() - start);
        let percent_x = k as u64 * 100; // compare k/frames*100 with each bound
        let bin = POLLUTION_BOUNDS
            .iter()
            .position(|&bound| percent_x < bound * frames)
            .unwrap_or(POLLUTION_BOUNDS.len());
        m.tainted_pageblocks += 1;
        m.pollution[bin] += 1;
    }
    m
}

/// Tainted pageblocks (Movable ones holding kernel frames, as [`frag_metrics`] counts
/// them) in each zone (each node on a machine of nodes).
pub(crate) fn tainted_by_zone(p: &PhysMem) -> Vec<u64> {
    let mut by_zone = vec![0; p.zone_count()];
    let pb_frames = 1u64 << p.pageblock_order().0;
    for (b, k) in kernel_frames_per_pageblock(p).into_iter().enumerate() {
        let start = hugemm_hw::Pfn(b as u64 * pb_frames);
        if tainted(p, start, k) {
            by_zone[p.zone_of(start)] += 1;
        }
    }
    by_zone
}

/// A pageblock starting at `start` with `kernel` kernel frames is tainted: a Movable
/// pageblock holding kernel frames.
fn tainted(p: &PhysMem, start: hugemm_hw::Pfn, kernel: u32) -> bool {
    kernel > 0 && p.pageblock_type(start) == Some(MigrateType::Movable)
}

/// `fragmentation_score_zone`: `Fu(pageblock order) * 100`, rounded down.
pub(crate) fn fragmentation_score(p: &PhysMem) -> u64 {
    let free = p.frames_free();
    if free == 0 {
        return 0;
    }
    let usable = p.free_blocks_at_least(p.pageblock_order()) << p.pageblock_order().0;
    (free - usable) * 100 / free
}

/// Kernel frames in each pageblock: the allocator's pinned counters, which count the
/// frames of every owner that is not movable (page tables and kernel memory).
fn kernel_frames_per_pageblock(p: &PhysMem) -> Vec<u32> {
    let c = &p.counters;
    (0..c.len()).map(|pb| c.pinned(pb)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::HugeAdvice;
    use crate::phys::frame::{FrameState, OwnerKind};
    use crate::testutil::{kernel, PAGE};
    use hugemm_hw::{PageSize, Pfn};

    #[test]
    fn the_unusable_free_index_follows_equation_one() {
        // 4 free order-0 frames and one order-2 block: 8 frames free.
        let blocks = [4, 0, 1, 0];
        assert_eq!(unusable_free_index(&blocks, 0), 0.0);
        assert_eq!(unusable_free_index(&blocks, 1), 0.5);
        assert_eq!(unusable_free_index(&blocks, 2), 0.5);
        assert_eq!(unusable_free_index(&blocks, 3), 1.0);
        assert_eq!(unusable_free_index(&[0, 0], 1), 0.0, "nothing free");
    }

    #[test]
    fn a_fresh_machine_is_unfragmented() {
        let k = kernel(64);
        let m = k.frag_metrics();
        assert_eq!((m.fmfi, k.fragmentation_score()), (0.0, 0));
        assert_eq!(m.free_frames, 16_384);
        assert_eq!((m.pageblocks.movable, m.tainted_pageblocks), (32, 0));
        assert_eq!(m.unusable_free_index(99), 1.0);
    }

    #[test]
    fn kernel_frames_in_user_pageblocks_taint_them_by_degree() {
        let mut k = kernel(64);
        // A page table lands in a pageblock stolen for Unmovable: not a user pageblock.
        let pid = k.create_process();
        let va = k.mmap(pid, 8 * PAGE, HugeAdvice::None).unwrap();
        k.fault(pid, va, true, PageSize::Base);
        let claimed = k.frag_metrics().pageblocks.unmovable;
        assert_eq!(claimed, 2, "an order-10 block (two pageblocks) was claimed");
        assert_eq!(k.frag_metrics().tainted_pageblocks, 0);
        // Kernel frames placed by hand in a Movable pageblock: 6 of 512 = 1.17 %.
        let movable_block = (0..32u64)
            .map(|b| b * 512)
            .find(|&s| k.phys.pageblock_type(Pfn(s)) == Some(MigrateType::Movable))
            .unwrap();
        for i in 0..6 {
            let pfn = Pfn(movable_block + 100 + i);
            let head = (0..=10u8)
                .map(|o| pfn.0 & !((1 << o) - 1))
                .find(|&h| matches!(k.phys.frames.at(h as u32).state(), FrameState::FreeHead { order, .. } if h + (1 << order.0) > pfn.0))
                .unwrap();
            k.phys
                .alloc_frame_in(Pfn(head), pfn, OwnerKind::KernelUnmovable)
                .unwrap();
        }
        let m = k.frag_metrics();
        assert_eq!(m.tainted_pageblocks, 1);
        assert_eq!(m.pollution, [0, 1, 0, 0, 0, 0, 0]);
        assert_eq!(m.kernel_frames, 7);
        assert!(m.fmfi > 0.0 && k.fragmentation_score() > 0);
    }
}
