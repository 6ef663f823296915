//! The consistency checker ([`Kernel::check_invariants`]): recounts everything the model
//! keeps incrementally and checks the properties conventions 12 asks for. Linear in memory
//! and mappings; meant for tests and debug runs (CONFIG_DEBUG_VM), not the hot path.
//!
//! Physical memory: every frame is in exactly one block; free blocks are aligned, never
//! overlap, are on the list their head says, and coalesce maximally (no free block's buddy
//! is a free block of the same order); free + allocated = total; counters match. Address
//! spaces: every mapping lies in a VMA and points at allocated anonymous frames whose
//! reverse map names that process and page; every table's page is an allocated
//! page-table frame; no anonymous or page-table frame is unaccounted for; resident and
//! huge counters match a recount. Page cache: every cached page's frame is an allocated
//! order-0 page-cache frame whose reverse map names that file and index, every
//! page-cache frame is cached, and the LRU lists agree with the index. Superpage
//! reservations: see `check_reservations`; anonymous frames are those mapped
//! plus the unused reserved ones. Kernel memory: every live `kmalloc` block is allocated
//! kernel memory of its kind and order, and each kind adds up to its counter. It must not
//! modify anything.

use crate::error::{MmError, Result};
use crate::kernel::Kernel;
use crate::phys::buddy::PhysMem;
use crate::phys::frame::{FrameState, OwnerKind};
use crate::phys::freelist::FreeArea;
use crate::phys::pageblock::MigrateType;
use crate::pressure::kmem::KmemKind;
use crate::space::addrspace::AddressSpace;
use crate::space::pagetable::{PteTable, Slot, VaLayout};
use hugemm_hw::{Order, Pfn, Pid, Vpn};

fn fail<T>(what: &'static str, at: u64) -> Result<T> {
    Err(MmError::Invariant { what, at })
}

fn ensure(ok: bool, what: &'static str, at: u64) -> Result<()> {
    if ok {
        Ok(())
    } else {
        fail(what, at)
    }
}

/// Frames counted by the physical scan.
#[derive(Default)]
struct Census {
    free: u64,
    anon: u64,
    tables: u64,
    cached: u64,
}

impl Kernel {
    /// Check every invariant of the model; the first violation found is returned.
    pub fn check_invariants(&self) -> Result<()> {
        ensure(
            self.stats.internal_errors == 0,
            "an internal free was refused",
            self.stats.internal_errors,
        )?;
        let census = check_phys(&self.phys)?;
        self.phys.check_counters()?;
        let (mut anon, mut tables) = (0, 0);
        for (pid, space) in self.procs.iter().enumerate() {
            if let Some(space) = space {
                let (a, t) = check_space(&self.phys, &self.layout, Pid(pid as u32), space)?;
                anon += a;
                tables += t;
            }
        }
        let unused = self.check_reservations()?;
        ensure(
            census.anon == anon + unused,
            "anonymous frames not all mapped exactly once or reserved",
            census.anon,
        )?;
        ensure(
            census.tables == tables,
            "page-table frames not all in use",
            census.tables,
        )?;
        self.check_kmem()?;
        self.check_page_cache(census.cached)
    }

    /// Every slab of every cache is an allocated block of its cache's order owned by
    /// kernel memory of its kind; each slab's object count matches its objects and its
    /// list (`slab.rs`'s audit); each kind's slabs add up to its counter; every inode
    /// and tree node a file holds is live (`vfs.rs`).
    fn check_kmem(&self) -> Result<()> {
        let slabs = self.slab.audit().or_else(|what| fail(what, 0))?;
        let mut pages = [0u64; 2];
        for (pfn, order, kind) in slabs {
            let ok = matches!(
                self.phys.frame(pfn).map(|f| f.state()),
                Some(FrameState::Allocated { order: o, owner })
                    if o == order && owner == kind.owner()
            );
            ensure(
                ok,
                "a live slab is not kernel memory of its kind and order",
                pfn.0,
            )?;
            pages[usize::from(kind == KmemKind::Reclaimable)] += 1u64 << order.0;
        }
        if let Some(vfs) = &self.cache.vfs {
            let dead = vfs.held_live().find(|&id| !self.slab.is_live(id));
            ensure(
                dead.is_none(),
                "a file holds an inode or tree node that is not live",
                dead.unwrap_or(0),
            )?;
        }
        let counters = [
            self.stats.kmem_unmovable_pages,
            self.stats.kmem_reclaimable_pages,
        ];
        ensure(
            pages == counters,
            "live slabs do not add up to their kmem_*_pages counters",
            pages[0],
        )
    }

    /// Every reservation: its indexes agree; its process is live and its region lies in
    /// one VMA and is a table; each of its frames is an order-0 anonymous frame (so on no
    /// free list, and in no other block or reservation) that the PTE at its offset maps
    /// if populated, and that nothing maps (no reverse map) if not; no other frame is
    /// mapped in the region. Returns the unused reserved frames.
    fn check_reservations(&self) -> Result<u64> {
        self.reserv.check()?;
        let l = &self.layout;
        let mut unused = 0;
        for (_, r) in self.reserv.iter() {
            let space = self.space(r.pid).ok_or(MmError::Invariant {
                what: "reservation of a dead process",
                at: r.region,
            })?;
            let inside = space.vma_covering(r.region, l.region_bytes()).is_some();
            ensure(inside, "reserved region not inside one VMA", r.region)?;
            let Some(Slot::Table(t)) = space.slot(r.region) else {
                return fail("reserved region not a table", r.region);
            };
            ensure(r.pop > 0, "reservation with nothing populated", r.region)?;
            for i in 0..l.fanout {
                let pfn = Pfn(r.base.0 + i);
                let populated = r.is_populated(i);
                unused += !populated as u64;
                let vpn = Vpn((r.region >> l.base_shift) + i);
                check_reserved_frame(&self.phys, pfn, r.pid, vpn, populated)?;
                let pte = t.get(i as usize);
                let ok = match populated {
                    true => pte.is_frame() && pte.pfn() == pfn,
                    false => !pte.is_frame(),
                };
                ensure(
                    ok,
                    "reserved region's PTE does not match the population map",
                    pfn.0,
                )?;
            }
        }
        Ok(unused)
    }

    fn check_page_cache(&self, frames: u64) -> Result<()> {
        let page = FrameState::Allocated {
            order: Order(0),
            owner: OwnerKind::PageCache,
        };
        for c in self.cache.iter() {
            let f = self.phys.frame(c.pfn).map(|f| (f.state(), f.cache_rmap()));
            let expect = Some((page, Some((c.file, c.index as u64))));
            ensure(f == expect, "cached page's frame does not name it", c.pfn.0)?;
        }
        ensure(
            frames == self.cache.pages(),
            "page-cache frames not all cached",
            frames,
        )?;
        ensure(self.cache.lists_consistent(), "LRU lists corrupt", 0)
    }
}

/// Frame `pfn`, backing the page at `va` in a reservation of `pid`: an order-0
/// anonymous frame whose reverse map names that page if `populated`, nothing if not.
fn check_reserved_frame(p: &PhysMem, pfn: Pfn, pid: Pid, vpn: Vpn, populated: bool) -> Result<()> {
    let anon = FrameState::Allocated {
        order: Order(0),
        owner: OwnerKind::Anon,
    };
    let rmap = populated.then_some((pid, vpn));
    let found = p.frame(pfn).map(|f| (f.state(), f.rmap()));
    ensure(
        found == Some((anon, rmap)),
        "reserved frame not order-0 anon with its page's (or no) reverse map",
        pfn.0,
    )
}

fn check_phys(p: &PhysMem) -> Result<Census> {
    let census = scan_frames(p)?;
    ensure(
        census.free == p.frames_free(),
        "free counter differs from a recount",
        census.free,
    )?;
    let listed = check_lists(p)?;
    ensure(
        listed == census.free,
        "free heads missing from the free lists",
        listed,
    )?;
    let pbs: u64 = MigrateType::ALL.iter().map(|&mt| p.pageblocks(mt)).sum();
    ensure(pbs == p.pageblock_count(), "pageblock counters", pbs)?;
    for mt in MigrateType::ALL {
        let n = (0..p.pageblock_count())
            .filter(|&b| p.blocks.get((b << p.blocks.order()) as u32) == Some(mt))
            .count();
        ensure(
            n as u64 == p.pageblocks(mt),
            "pageblock count of a type differs from a recount",
            n as u64,
        )?;
    }
    Ok(census)
}

/// Walk all frames block by block.
fn scan_frames(p: &PhysMem) -> Result<Census> {
    let (total, max) = (p.frames_total(), p.max_order().0);
    let mut c = Census::default();
    let mut pfn = 0u64;
    while pfn < total {
        let (order, tail_free) = match p.frames.at(pfn as u32).state() {
            FrameState::FreeHead { order, .. } => (order.0, true),
            FrameState::Allocated { order, owner } => {
                c.anon += (owner == OwnerKind::Anon) as u64 * (1 << order.0);
                c.tables += (owner == OwnerKind::PageTable) as u64;
                c.cached += (owner == OwnerKind::PageCache) as u64 * (1 << order.0);
                (order.0, false)
            }
            _ => return fail("a tail frame outside any block", pfn),
        };
        let size = 1u64 << order;
        ensure(
            order <= max && pfn.is_multiple_of(size) && pfn + size <= total,
            "misaligned or overlong block",
            pfn,
        )?;
        check_tails(p, pfn, size, tail_free)?;
        if tail_free {
            c.free += size;
            let buddy = pfn ^ size;
            let merged =
                order < max && buddy < total && p.frames.at(buddy as u32).is_free_head_of(order);
            ensure(!merged, "free buddies not coalesced", pfn)?;
        }
        pfn += size;
    }
    Ok(c)
}

fn check_tails(p: &PhysMem, head: u64, size: u64, free: bool) -> Result<()> {
    let first = p.frames.at(head as u32);
    let owner = first.owner();
    // A free block whose head is zeroed is zeroed throughout (pre-zeroing relies on it).
    let zeroed = free && first.is_zeroed();
    for f in p.frames.range(head as u32 + 1, size as u32 - 1) {
        let ok = match f.state() {
            FrameState::FreeTail => free,
            FrameState::AllocatedTail { owner: o } => !free && Some(o) == owner,
            _ => false,
        };
        ensure(ok, "blocks overlap", head)?;
        ensure(
            !zeroed || f.is_zeroed(),
            "zeroed free block with a dirty frame",
            head,
        )?;
    }
    Ok(())
}

/// Walk every free list; returns the frames listed.
fn check_lists(p: &PhysMem) -> Result<u64> {
    let (mut listed, mut zeroed) = (0, 0);
    for (node, area) in p.areas.iter().enumerate() {
        for order in 0..=p.max_order().0 {
            listed += check_list(p, node, area, order, &mut zeroed)?;
        }
    }
    ensure(
        zeroed == p.zeroed_free_frames(),
        "zeroed free frames differ from a recount",
        zeroed,
    )?;
    Ok(listed)
}

/// Walk node `node`'s free lists of `order`; returns the frames listed.
fn check_list(
    p: &PhysMem,
    node: usize,
    area: &FreeArea,
    order: u8,
    zeroed: &mut u64,
) -> Result<u64> {
    let mut listed = 0;
    for mt in MigrateType::ALL {
        {
            let mut prev = u32::MAX;
            let mut n = 0;
            let mut seen_zeroed = false;
            for pfn in area.iter(&p.frames, order, mt) {
                let f = p.frames.get(pfn as u64).ok_or(MmError::Invariant {
                    what: "list link out of range",
                    at: pfn as u64,
                })?;
                let expect = FrameState::FreeHead {
                    order: Order(order),
                    migrate: mt,
                };
                ensure(
                    f.state() == expect && f.links().0 == prev,
                    "free list corrupt",
                    pfn as u64,
                )?;
                ensure(n < p.frames_total(), "free list loops", pfn as u64)?;
                ensure(
                    !seen_zeroed || f.is_zeroed(),
                    "a dirty block after a zeroed one on a free list",
                    pfn as u64,
                )?;
                ensure(
                    p.nodes.of(pfn) == node,
                    "a free block on another zone's list",
                    pfn as u64,
                )?;
                seen_zeroed |= f.is_zeroed();
                *zeroed += (f.is_zeroed() as u64) << order;
                prev = pfn;
                n += 1;
            }
            ensure(
                n == area.count(order, mt),
                "free list length differs from its counter",
                n,
            )?;
            listed += n << order;
        }
    }
    Ok(listed)
}

/// Checks of one address space against physical memory.
struct SpaceCheck<'a> {
    p: &'a PhysMem,
    l: &'a VaLayout,
    pid: Pid,
    s: &'a AddressSpace,
}

/// Check one address space; returns (anonymous frames mapped, page-table pages).
fn check_space(p: &PhysMem, l: &VaLayout, pid: Pid, s: &AddressSpace) -> Result<(u64, u64)> {
    let c = SpaceCheck { p, l, pid, s };
    let (mut base, mut huge, mut tables, mut written) = (0u64, 0u64, 0u64, 0u64);
    for (region, slot) in s.pt.slots() {
        let in_vma = s.vma_covering(region, l.region_bytes()).is_some();
        match slot {
            Slot::Huge { pfn, unwritten, .. } => {
                ensure(in_vma, "huge mapping outside a VMA", region)?;
                c.check_huge(*pfn, region)?;
                let w = (0..l.fanout)
                    .filter(|&i| p.frame(Pfn(pfn.0 + i)).is_some_and(|f| f.is_written()))
                    .count() as u64;
                ensure(
                    w + *unwritten as u64 == l.fanout,
                    "a huge page's unwritten count differs from its frames",
                    region,
                )?;
                written += w;
                huge += 1;
            }
            Slot::HugeZero { .. } => ensure(in_vma, "huge zero page outside a VMA", region)?,
            Slot::Table(t) => {
                let (frames, w) = c.check_table(region, t)?;
                base += frames;
                written += w;
                tables += 1;
            }
            Slot::Empty => {}
        }
    }
    ensure(base == s.base_pages, "base-page counter differs", base)?;
    ensure(
        written == s.written_pages,
        "written-page counter differs",
        written,
    )?;
    ensure(huge == s.huge_pages, "huge-page counter differs", huge)?;
    Ok((base + huge * l.fanout, tables))
}

impl SpaceCheck<'_> {
    /// Frame `pfn` is `state` and its reverse map names this process at `va`.
    fn expect_frame(&self, pfn: Pfn, state: FrameState, va: u64, what: &'static str) -> Result<()> {
        let found = self.p.frame(pfn).map(|f| (f.state(), f.rmap()));
        let rmap = Some((self.pid, Vpn(va >> self.l.base_shift)));
        ensure(found == Some((state, rmap)), what, pfn.0)
    }

    fn check_huge(&self, pfn: Pfn, region: u64) -> Result<()> {
        let order = Order(self.l.huge_order());
        let head = FrameState::Allocated {
            order,
            owner: OwnerKind::Anon,
        };
        let tail = FrameState::AllocatedTail {
            owner: OwnerKind::Anon,
        };
        for i in 0..self.l.fanout {
            let state = if i == 0 { head } else { tail };
            let va = region + (i << self.l.base_shift);
            self.expect_frame(
                Pfn(pfn.0 + i),
                state,
                va,
                "huge frame not compound anon naming its page",
            )?;
        }
        Ok(())
    }

    /// Check a table; returns the frames it maps and how many of them are written.
    fn check_table(&self, region: u64, t: &PteTable) -> Result<(u64, u64)> {
        let table = FrameState::Allocated {
            order: Order(0),
            owner: OwnerKind::PageTable,
        };
        self.expect_frame(
            t.table_pfn(),
            table,
            region,
            "table page not a page-table frame",
        )?;
        ensure(t.present() > 0, "empty table kept", region)?;
        let anon = FrameState::Allocated {
            order: Order(0),
            owner: OwnerKind::Anon,
        };
        let (mut present, mut zero, mut frames, mut written) = (0u32, 0u32, 0u64, 0u64);
        for (i, pte) in t.ptes().iter().enumerate().filter(|(_, p)| p.is_present()) {
            let va = region + ((i as u64) << self.l.base_shift);
            ensure(self.s.vma(va).is_some(), "PTE outside a VMA", va)?;
            present += 1;
            zero += pte.is_zero_page() as u32;
            if pte.is_frame() {
                self.expect_frame(pte.pfn(), anon, va, "PTE frame not anon naming its page")?;
                let w = self.p.frame(pte.pfn()).is_some_and(|f| f.is_written());
                ensure(
                    w == pte.written(),
                    "a PTE's written bit differs from its frame's",
                    va,
                )?;
                written += w as u64;
                frames += 1;
            }
        }
        let counts_ok = present == t.present() && zero == t.zero();
        ensure(counts_ok, "table counters differ from a recount", region)?;
        Ok((frames, written))
    }
}

#[cfg(test)]
mod tests {
    use crate::api::HugeAdvice;
    use crate::error::MmError;
    use crate::testutil::{kernel, PAGE};
    use hugemm_hw::{PageSize, Pfn, Pid};

    #[test]
    fn a_healthy_kernel_passes() {
        let mut k = kernel(16);
        let pid = k.create_process();
        let va = k.mmap(pid, 64 * PAGE, HugeAdvice::None).unwrap();
        k.fault(pid, va, true, PageSize::Base);
        k.check_invariants().unwrap();
    }

    #[test]
    fn corruption_is_detected() {
        let mut k = kernel(16);
        let pid = k.create_process();
        let va = k.mmap(pid, 64 * PAGE, HugeAdvice::None).unwrap();
        k.fault(pid, va, true, PageSize::Base);
        if let Some(Some(s)) = k.procs.get_mut(pid.0 as usize) {
            s.base_pages += 1;
        }
        assert!(matches!(
            k.check_invariants(),
            Err(MmError::Invariant { .. })
        ));
        if let Some(Some(s)) = k.procs.get_mut(pid.0 as usize) {
            s.base_pages -= 1;
        }
        let pfn = Pfn(k.translate(pid, va).unwrap().pa / PAGE);
        k.phys.map_frames(pfn, 1, Pid(99), hugemm_hw::Vpn(0));
        assert!(k.check_invariants().is_err(), "a wrong reverse map");
    }
}
