//! Property tests of the fragmentation issue (conventions 12): random mixes of anonymous
//! faults, page-cache reads, kernel allocations, reclaim, compaction (either mode) and
//! pageblock evacuation, with H-Policy's order-9 preservation on or off, keep every invariant of `check_invariants`; compaction and evacuation
//! preserve every translation (same pages mapped, same sizes, each moved page's frame
//! naming it) and every cached page, and conserve free frames; reclaim only drops
//! page-cache pages.

mod common;

use common::{machine, PAGE};
use hugemm_hw::{Order, PageSize, Pfn, Pid, VirtAddr};
use hugemm_mm::{
    CompactMode, CompactRequest, FileId, HugeAdvice, Kernel, KmemCache, KmemHandle, KmemKind,
    OwnerKind, Touch,
};
use proptest::prelude::*;

const FILES: u32 = 3;
const FILE_PAGES: u64 = 3000;

#[derive(Clone, Debug)]
enum Op {
    Fault {
        page: u32,
        count: u16,
        huge: bool,
    },
    Read {
        file: u32,
        first: u64,
        pages: u16,
    },
    Delete {
        file: u32,
    },
    Kmalloc {
        order: u8,
        reclaimable: bool,
    },
    /// `count` objects of a small-object cache (a dentry-like reclaimable one, or a
    /// kmalloc-512-like unmovable one in order-1 slabs).
    Objects {
        count: u8,
        reclaimable: bool,
    },
    Kfree {
        idx: u16,
    },
    Unmap {
        page: u32,
        pages: u16,
    },
    Reclaim {
        pages: u16,
    },
    Compact {
        kind: u8,
        order: u8,
    },
    Evacuate {
        block: u16,
    },
    /// H-Policy's knobs: order-9 preservation and hole-aware compaction.
    Knobs {
        preserve: bool,
        hole_aware: bool,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u32..8192, 1u16..2000, any::<bool>()).prop_map(|(page, count, huge)| Op::Fault { page, count, huge }),
        5 => (0..FILES, 0..FILE_PAGES, 1u16..3000).prop_map(|(file, first, pages)| Op::Read { file, first, pages }),
        1 => (0..FILES).prop_map(|file| Op::Delete { file }),
        3 => (0u8..4, any::<bool>()).prop_map(|(order, reclaimable)| Op::Kmalloc { order, reclaimable }),
        3 => (1u8..60, any::<bool>()).prop_map(|(count, reclaimable)| Op::Objects { count, reclaimable }),
        2 => any::<u16>().prop_map(|idx| Op::Kfree { idx }),
        2 => (0u32..8192, 1u16..1500).prop_map(|(page, pages)| Op::Unmap { page, pages }),
        1 => (1u16..2000).prop_map(|pages| Op::Reclaim { pages }),
        3 => (0u8..3, 0u8..11).prop_map(|(kind, order)| Op::Compact { kind, order }),
        2 => any::<u16>().prop_map(|block| Op::Evacuate { block }),
        1 => (any::<bool>(), any::<bool>()).prop_map(|(preserve, hole_aware)| Op::Knobs { preserve, hole_aware }),
    ]
}

/// What a process maps at every page of its area: (frame or zero page, page size).
type Mapping = Vec<Option<(bool, PageSize)>>;

struct World {
    k: Kernel,
    pid: Pid,
    va: VirtAddr,
    pages: u64,
    kmem: Vec<KmemHandle>,
}

impl World {
    fn mapping(&self) -> Mapping {
        (0..self.pages)
            .map(|i| {
                self.k
                    .translate(self.pid, VirtAddr(self.va.0 + i * PAGE))
                    .map(|t| (t.zero_page, t.size))
            })
            .collect()
    }

    fn cached(&self) -> Vec<(u32, u64)> {
        (0..FILES)
            .flat_map(|f| (0..FILE_PAGES).map(move |i| (f, i)))
            .filter(|&(f, i)| self.k.page_cache_frame(FileId(f), i).is_some())
            .collect()
    }

    /// Every mapped frame is allocated anonymous memory (the invariant checker checks
    /// its reverse map names this page).
    fn frames_owned(&self) -> Result<(), TestCaseError> {
        for i in 0..self.pages {
            if let Some(t) = self.k.translate(self.pid, VirtAddr(self.va.0 + i * PAGE)) {
                if !t.zero_page {
                    let f = self.k.phys().frame(Pfn(t.pa / PAGE)).unwrap();
                    prop_assert_eq!(f.owner(), Some(OwnerKind::Anon));
                }
            }
        }
        Ok(())
    }

    fn apply(&mut self, op: &Op) -> Result<(), TestCaseError> {
        match *op {
            Op::Fault { page, count, huge } => {
                let want = if huge { PageSize::Huge } else { PageSize::Base };
                for p in page as u64..(page as u64 + count as u64).min(self.pages) {
                    let a = VirtAddr(self.va.0 + p * PAGE);
                    if self.k.touch(self.pid, a, true) != Touch::NotPresent {
                        continue;
                    }
                    if self.k.fault(self.pid, a, true, want).oom {
                        prop_assert_eq!(self.k.page_cache_pages(), 0, "OOM with cache left");
                        break;
                    }
                }
            }
            Op::Read { file, first, pages } => {
                let pages = (pages as u64).min(FILE_PAGES - first);
                let out = self.k.file_read(FileId(file), first, pages);
                prop_assert!(
                    !out.oom || self.k.page_cache_pages() == 0,
                    "OOM with cache left"
                );
            }
            Op::Delete { file } => {
                self.k.file_delete(FileId(file));
            }
            Op::Kmalloc { order, reclaimable } => {
                let kind = [KmemKind::Unmovable, KmemKind::Reclaimable][reclaimable as usize];
                if let Ok((h, _)) = self.k.kmalloc(kind, Order(order)) {
                    self.kmem.push(h);
                }
            }
            Op::Objects { count, reclaimable } => {
                let cache = if reclaimable {
                    KmemCache {
                        kind: KmemKind::Reclaimable,
                        order: Order(0),
                        object_bytes: 192,
                    }
                } else {
                    KmemCache {
                        kind: KmemKind::Unmovable,
                        order: Order(1),
                        object_bytes: 512,
                    }
                };
                for _ in 0..count {
                    if let Ok((h, _)) = self.k.kmem_cache_alloc(cache) {
                        self.kmem.push(h);
                    }
                }
            }
            Op::Kfree { idx } => {
                if !self.kmem.is_empty() {
                    let h = self.kmem.swap_remove(idx as usize % self.kmem.len());
                    self.k.kfree(h).unwrap();
                    prop_assert!(self.k.kfree(h).is_err(), "double free accepted");
                }
            }
            Op::Unmap { page, pages } => {
                let start = VirtAddr(self.va.0 + (page as u64 % self.pages) * PAGE);
                let len = (pages as u64 * PAGE).min(self.va.0 + self.pages * PAGE - start.0);
                self.k
                    .madvise(self.pid, start, len, hugemm_mm::Madvise::DontNeed)
                    .unwrap();
            }
            Op::Reclaim { pages } => {
                let (mapping, cached) = (self.mapping(), self.cached());
                let (slab, shrunk) = (self.slab(), self.k.stats().slab_reclaimed_pages);
                let out = self.k.reclaim(pages as u64);
                prop_assert_eq!(self.mapping(), mapping, "reclaim touched anonymous memory");
                let after = self.cached();
                let slab_freed = slab - self.slab();
                prop_assert_eq!(self.k.stats().slab_reclaimed_pages, shrunk + slab_freed);
                prop_assert_eq!(
                    after.len() as u64 + out.freed,
                    cached.len() as u64 + slab_freed
                );
                // The reclaimable object cache's CPU slab (one frame) is kept even when
                // the shrinker has emptied it, as SLUB keeps it.
                prop_assert!(
                    out.freed + 1 >= (pages as u64).min(cached.len() as u64 + slab),
                    "reclaim stopped short of what it was asked with memory left to free"
                );
                prop_assert!(after.iter().all(|p| cached.contains(p)));
            }
            Op::Compact { kind, order } => {
                let req = match kind {
                    0 => CompactRequest::Direct {
                        order: Order(order),
                    },
                    1 => CompactRequest::Full,
                    _ => CompactRequest::Proactive,
                };
                self.preserving(|k| {
                    k.compact(req);
                })?;
            }
            Op::Knobs {
                preserve,
                hole_aware,
            } => {
                self.k.set_preserve_huge_blocks(preserve);
                self.k.set_compaction_mode(match hole_aware {
                    true => CompactMode::HoleAware,
                    false => CompactMode::Linux,
                });
            }
            Op::Evacuate { block } => {
                let blocks = self.k.phys().pageblock_count();
                let start = Pfn((block as u64 % blocks) * 512);
                self.preserving(|k| {
                    k.evacuate_pageblock(start).unwrap();
                })?;
            }
        }
        Ok(())
    }

    /// Frames of live reclaimable kernel memory.
    fn slab(&self) -> u64 {
        self.k.stats().kmem_reclaimable_pages
    }

    /// Run `f`, checking it keeps translations, cached pages and free frames.
    fn preserving(&mut self, f: impl FnOnce(&mut Kernel)) -> Result<(), TestCaseError> {
        let (mapping, cached) = (self.mapping(), self.cached());
        let free = self.k.phys().frames_free();
        f(&mut self.k);
        prop_assert_eq!(self.mapping(), mapping, "a translation changed");
        prop_assert_eq!(self.cached(), cached, "a cached page was lost");
        prop_assert_eq!(self.k.phys().frames_free(), free, "frames not conserved");
        self.frames_owned()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, max_shrink_iters: 500, ..ProptestConfig::default() })]

    #[test]
    fn fragmentation_mechanisms_keep_every_invariant(ops in prop::collection::vec(op(), 1..40)) {
        let mut k = machine(32);
        let pid = k.create_process();
        let pages = 8192;
        let va = k.mmap(pid, pages * PAGE, HugeAdvice::None).unwrap();
        let mut w = World { k, pid, va, pages, kmem: Vec::new() };
        for op in &ops {
            w.apply(op)?;
            if let Err(e) = w.k.check_invariants() {
                return Err(TestCaseError::fail(format!("after {op:?}: {e}")));
            }
        }
        let total = w.k.phys().frames_total();
        w.k.exit_process(pid);
        for h in std::mem::take(&mut w.kmem) {
            w.k.kfree(h).unwrap();
        }
        w.k.drop_caches();
        w.k.kmem_cache_shrink();
        w.k.check_invariants().unwrap();
        prop_assert_eq!(w.k.phys().frames_free(), total, "frames leaked");
    }
}
