//! Page migration between memory nodes: `move_pages` and Nimble's `exchange_pages`
//! (Yan et al., ASPLOS'19, section 3.1), with each of Nimble's mechanism choices as a
//! knob of [`Mechanism`].
//!
//! What happens to the pages:
//! - [`Kernel::move_pages`] moves each named page of a process to a frame of the target
//!   node (`alloc_pages_node(__GFP_THISNODE)`); a page already there is left alone, a
//!   page that is not present is skipped, and a page whose target cannot be allocated
//!   fails (counted, nothing changed). A base page moves with `migrate_frame`: its PTE is
//!   rewritten keeping its accessed and dirty bits, its reverse map and content move, a
//!   flush of the page is recorded and the old frame is freed. A huge page either moves
//!   whole to an order-9 block of the target ([`ThpMigration::Native`], Nimble 3.1.1) or
//!   is split first and its base pages move ([`ThpMigration::Split`], Linux 4.14's only
//!   way for `move_pages`). Either way the first address inside a huge region moves the
//!   region; later addresses in it find their page on the target already.
//! - [`Kernel::exchange_pages`] swaps two pages of a process (Nimble 3.1.4): each page's
//!   entry points at the other's frame, keeping its own accessed and dirty bits, and the
//!   contents and reverse maps swap; nothing is allocated or freed. Both pages must have
//!   one size; with [`ThpMigration::Split`] huge pages are split first and their base
//!   pages exchanged pairwise. A pair that cannot be exchanged (sizes differ, a page not
//!   present) fails: the caller falls back to two migrations, as Nimble's does.
//!
//! What it costs, from the parts [`MigrationCosts`] holds (a machine profile's
//! `[costs.migration]`, fitted in docs/nimble.md):
//! - one `call` per `move_pages`/`exchange_pages` call;
//! - per page moved, kernel work: `page` (or `huge_page`) + allocating the target +
//!   `free` for the source (for a huge page, each also sets up or checks 511 tail
//!   pages: `MmCosts::compound_tail`) + one shootdown + two entry writes (unmap, remap).
//!   Exchange has no allocation and no free;
//! - splits, at what the split mechanism charges (`split.rs`);
//! - copying: the pages' bytes (twice the bytes for an exchange, which reads and writes
//!   both pages) through [`MigrationCosts::copy_time`] with `threads` threads. Serial
//!   migration (`in_flight` = 1) copies page by page, each a launch of its own; concurrent
//!   migration (Nimble 3.1.3) copies `in_flight` pages as one batch, one launch for all
//!   (0: the whole call as one batch).
//!
//! The time is the caller's to charge (a policy daemon's CPU); this module does not know
//! which process waits. Owns the migration mechanisms between nodes (their vocabulary is
//! `pressure/movepages.rs`'s); it must not choose which pages move (policies do).

use crate::error::{MmError, Result};
use crate::kernel::Kernel;
use crate::phys::buddy::AllocRequest;
use crate::phys::frame::{FrameState, OwnerKind};
use crate::phys::node::{NodeId, NodePref};
use crate::pressure::movepages::{
    Mechanism, MigrateOutcome, MigrationCosts, NodeUse, PageScan, ThpMigration, TierStats,
};
use crate::space::pagetable::Slot;
use crate::space::pte::Pte;
use hugemm_hw::{Nanos, Order, Pfn, Pid, VirtAddr, Vpn};

/// One call's copies: page sizes in order, batched per the mechanism at the end.
struct Copies {
    bytes: Vec<u64>,
}

impl Copies {
    fn time(&self, c: &MigrationCosts, m: &Mechanism) -> Nanos {
        let batch = match m.in_flight {
            0 => self.bytes.len().max(1),
            n => n as usize,
        };
        self.bytes.chunks(batch).fold(Nanos::ZERO, |t, b| {
            t + c.copy_time(b.iter().sum(), m.threads)
        })
    }
}

impl Kernel {
    /// Set the parts of migration's cost; without them, migration between nodes is
    /// refused.
    pub fn set_migration_costs(&mut self, costs: MigrationCosts) -> Result<()> {
        costs.validate()?;
        self.migration = Some(costs);
        Ok(())
    }

    /// Make `node` the node allocations try first (see [`crate::node`]).
    pub fn set_home_node(&mut self, node: NodeId) -> Result<()> {
        self.phys.set_home_node(node)
    }

    /// Migrations between nodes so far.
    pub fn tier_stats(&self) -> TierStats {
        self.tier_stats
    }

    /// Bytes migration has read and written on each node so far (index = node; shorter
    /// than the node count until a migration touches the last nodes): a page moved
    /// from `a` to `b` is its bytes read on `a` and written on `b`; an exchanged pair
    /// reads and writes both pages' bytes on each of the two nodes.
    pub fn migration_traffic(&self) -> &[u64] {
        &self.migration_traffic
    }

    /// Count `bytes` of migration traffic on the node of `pfn`.
    fn note_traffic(&mut self, pfn: Pfn, bytes: u64) {
        let n = self.phys.node_of(pfn).0 as usize;
        if self.migration_traffic.len() <= n {
            self.migration_traffic.resize(n + 1, 0);
        }
        self.migration_traffic[n] += bytes;
    }

    /// Move the pages of `pid` holding `pages` to node `to` with `mech` (see the module
    /// doc). Fails, changing nothing, if the process, the node or the migration costs are
    /// missing or the mechanism is invalid.
    pub fn move_pages(
        &mut self,
        pid: Pid,
        pages: &[VirtAddr],
        to: NodeId,
        mech: &Mechanism,
    ) -> Result<MigrateOutcome> {
        let costs = self.migration_setup(pid, mech)?;
        if self.phys.node_frames(to).is_none() {
            return Err(MmError::InvalidArgument {
                what: "no such target node",
            });
        }
        let mut out = MigrateOutcome {
            call: costs.call,
            ..MigrateOutcome::default()
        };
        let mut copies = Copies { bytes: Vec::new() };
        for &va in pages {
            self.move_one(pid, va.0, to, mech, &mut out, &mut copies)?;
        }
        out.copy = copies.time(&costs, mech);
        self.note_migration(&out);
        Ok(out)
    }

    /// Exchange the pages of `pid` holding each pair's two addresses (see the module
    /// doc). Fails, changing nothing, as [`Kernel::move_pages`] does.
    pub fn exchange_pages(
        &mut self,
        pid: Pid,
        pairs: &[(VirtAddr, VirtAddr)],
        mech: &Mechanism,
    ) -> Result<MigrateOutcome> {
        let costs = self.migration_setup(pid, mech)?;
        let mut out = MigrateOutcome {
            call: costs.call,
            ..MigrateOutcome::default()
        };
        let mut copies = Copies { bytes: Vec::new() };
        for &(a, b) in pairs {
            self.exchange_one(pid, (a.0, b.0), mech, &mut out, &mut copies)?;
        }
        out.copy = copies.time(&costs, mech);
        self.note_migration(&out);
        Ok(out)
    }

    fn migration_setup(&self, pid: Pid, mech: &Mechanism) -> Result<MigrationCosts> {
        mech.validate()?;
        let costs = self.migration.ok_or(MmError::InvalidConfig {
            what: "the machine profile has no migration costs ([costs.migration])",
        })?;
        if !self.is_live(pid) {
            return Err(MmError::NoSuchProcess(pid));
        }
        Ok(costs)
    }

    fn note_migration(&mut self, out: &MigrateOutcome) {
        self.tier_stats.total.add(out);
        self.tier_stats.calls += 1;
    }

    /// What maps `va` in `pid`: a huge page's block, a base page's frame, or nothing.
    fn mapped(&self, pid: Pid, va: u64) -> Mapped {
        let l = self.layout;
        match self.space(pid).and_then(|s| s.pt.slot(l.region_of(va))) {
            Some(Slot::Huge { pfn, .. }) => Mapped::Huge(*pfn),
            Some(Slot::Table(t)) => {
                let pte = t.get(l.page_index(va));
                if pte.is_frame() {
                    Mapped::Base(pte.pfn())
                } else {
                    Mapped::None
                }
            }
            _ => Mapped::None,
        }
    }

    fn move_one(
        &mut self,
        pid: Pid,
        va: u64,
        to: NodeId,
        mech: &Mechanism,
        out: &mut MigrateOutcome,
        copies: &mut Copies,
    ) -> Result<()> {
        match self.mapped(pid, va) {
            Mapped::None => {}
            Mapped::Base(pfn) | Mapped::Huge(pfn) if self.phys.node_of(pfn) == to => {}
            Mapped::Base(pfn) => self.move_base(pfn, to, out, copies),
            Mapped::Huge(pfn) if mech.thp == ThpMigration::Native => {
                self.move_huge(pid, va, pfn, to, out, copies)?;
            }
            Mapped::Huge(_) => {
                let region = self.layout.region_of(va);
                out.split += self.split(pid, VirtAddr(region))?;
                out.splits += 1;
                for i in 0..self.layout.fanout {
                    let sub = region + (i << self.layout.base_shift);
                    if let Mapped::Base(pfn) = self.mapped(pid, sub) {
                        self.move_base(pfn, to, out, copies);
                    }
                }
            }
        }
        Ok(())
    }

    /// Kernel work of migrating one page of `2^order` frames, allocation and free
    /// included unless `exchange`.
    fn page_work(&self, order: u8, exchange: bool) -> Nanos {
        let m = self.migration.expect("checked by migration_setup");
        let tails = Nanos(self.costs.compound_tail.0 * ((1u64 << order) - 1));
        let per = if order == 0 { m.page } else { m.huge_page };
        let shared = per + self.costs.tlb_flush + Nanos(2 * self.costs.pte_update.0);
        match exchange {
            true => shared,
            false => shared + self.costs.alloc + m.free + tails + tails,
        }
    }

    fn move_base(&mut self, src: Pfn, to: NodeId, out: &mut MigrateOutcome, copies: &mut Copies) {
        let movable = matches!(
            self.phys.frame(src).map(|f| f.state()),
            Some(FrameState::Allocated {
                order: Order(0),
                owner: OwnerKind::Anon
            })
        ) && !self.reserv.holds(src);
        let req = AllocRequest::new(Order(0)).node(NodePref::Only(to));
        let dst = match movable.then(|| self.phys.alloc(&req)) {
            Some(Ok(block)) => block.pfn,
            _ => {
                out.failed += 1;
                return;
            }
        };
        match self.migrate_frame(src, dst) {
            Ok(_) => {
                let bytes = self.layout.base_bytes();
                out.base_pages += 1;
                out.kernel += self.page_work(0, false);
                out.bytes += bytes;
                copies.bytes.push(bytes);
                self.note_traffic(src, bytes);
                self.note_traffic(dst, bytes);
            }
            Err(_) => {
                out.failed += 1;
                self.stats.internal_errors += self.phys.free(dst, Order(0)).is_err() as u64;
            }
        }
    }

    fn move_huge(
        &mut self,
        pid: Pid,
        va: u64,
        src: Pfn,
        to: NodeId,
        out: &mut MigrateOutcome,
        copies: &mut Copies,
    ) -> Result<()> {
        let l = self.layout;
        let (order, n) = (l.huge_order(), l.fanout);
        let req = AllocRequest::new(Order(order)).node(NodePref::Only(to));
        let block = match (!self.reserv.holds(src)).then(|| self.phys.alloc(&req)) {
            Some(Ok(block)) => block,
            _ => {
                out.failed += 1;
                return Ok(());
            }
        };
        let region = l.region_of(va);
        let vpn = Vpn(region >> l.base_shift);
        self.phys.map_frames(block.pfn, n, pid, vpn);
        for i in 0..n {
            self.phys.copy_content(Pfn(src.0 + i), Pfn(block.pfn.0 + i));
        }
        self.repoint_huge(pid, region, block.pfn)?;
        self.phys.free(src, Order(order))?;
        self.record_flush(pid, region, l.region_bytes());
        out.huge_pages += 1;
        out.kernel += self.page_work(order, false);
        out.bytes += l.region_bytes();
        copies.bytes.push(l.region_bytes());
        self.note_traffic(src, l.region_bytes());
        self.note_traffic(block.pfn, l.region_bytes());
        Ok(())
    }

    /// Point the huge mapping of `region` at `pfn`, keeping its bits.
    fn repoint_huge(&mut self, pid: Pid, region: u64, pfn: Pfn) -> Result<()> {
        let space = self
            .procs
            .get_mut(pid.0 as usize)
            .and_then(Option::as_mut)
            .ok_or(MmError::NoSuchProcess(pid))?;
        match space.pt.slot_mut_uncached(region) {
            Some(Slot::Huge { pfn: p, .. }) => {
                *p = pfn;
                Ok(())
            }
            _ => Err(MmError::Invariant {
                what: "a huge page being migrated lost its mapping",
                at: pfn.0,
            }),
        }
    }

    fn record_flush(&mut self, pid: Pid, start: u64, bytes: u64) {
        self.flushes.push(crate::api::TlbFlush {
            pid,
            start: VirtAddr(start),
            end: VirtAddr(start + bytes),
        });
    }

    fn exchange_one(
        &mut self,
        pid: Pid,
        (a, b): (u64, u64),
        mech: &Mechanism,
        out: &mut MigrateOutcome,
        copies: &mut Copies,
    ) -> Result<()> {
        match (self.mapped(pid, a), self.mapped(pid, b)) {
            (Mapped::Base(fa), Mapped::Base(fb)) => {
                self.exchange_frames(pid, (a, fa), (b, fb), 0, out, copies)
            }
            (Mapped::Huge(fa), Mapped::Huge(fb)) if mech.thp == ThpMigration::Native => {
                self.exchange_frames(pid, (a, fa), (b, fb), self.layout.huge_order(), out, copies)
            }
            (Mapped::Huge(_), _) | (_, Mapped::Huge(_)) if mech.thp == ThpMigration::Split => {
                let (ra, rb) = (self.layout.region_of(a), self.layout.region_of(b));
                for r in [ra, rb] {
                    if let Mapped::Huge(_) = self.mapped(pid, r) {
                        out.split += self.split(pid, VirtAddr(r))?;
                        out.splits += 1;
                    }
                }
                for i in 0..self.layout.fanout {
                    let off = i << self.layout.base_shift;
                    let pair = (self.mapped(pid, ra + off), self.mapped(pid, rb + off));
                    match pair {
                        (Mapped::Base(fa), Mapped::Base(fb)) => self.exchange_frames(
                            pid,
                            (ra + off, fa),
                            (rb + off, fb),
                            0,
                            out,
                            copies,
                        )?,
                        _ => out.failed += 1,
                    }
                }
                Ok(())
            }
            _ => {
                out.failed += 1;
                Ok(())
            }
        }
    }

    /// Swap the pages of `order` at `a` and `b` (their frames `fa`, `fb`).
    fn exchange_frames(
        &mut self,
        pid: Pid,
        (a, fa): (u64, Pfn),
        (b, fb): (u64, Pfn),
        order: u8,
        out: &mut MigrateOutcome,
        copies: &mut Copies,
    ) -> Result<()> {
        let l = self.layout;
        let n = 1u64 << order;
        let huge = order > 0;
        let (ra, rb) = if huge {
            (l.region_of(a), l.region_of(b))
        } else {
            (a & !(l.base_bytes() - 1), b & !(l.base_bytes() - 1))
        };
        if ra == rb || self.reserv.holds(fa) || self.reserv.holds(fb) {
            out.failed += 1;
            return Ok(());
        }
        for i in 0..n {
            let (x, y) = (Pfn(fa.0 + i), Pfn(fb.0 + i));
            let (cx, cy) = (self.phys.frame(x), self.phys.frame(y));
            if let (Some(cx), Some(cy)) = (cx, cy) {
                self.phys
                    .set_content_and_rmap(x, cy, pid, Vpn((rb >> l.base_shift) + i));
                self.phys
                    .set_content_and_rmap(y, cx, pid, Vpn((ra >> l.base_shift) + i));
            }
        }
        if huge {
            self.repoint_huge(pid, ra, fb)?;
            self.repoint_huge(pid, rb, fa)?;
        } else {
            self.repoint_base(pid, ra, fb)?;
            self.repoint_base(pid, rb, fa)?;
        }
        let bytes = n << l.base_shift;
        self.record_flush(pid, ra, bytes);
        self.record_flush(pid, rb, bytes);
        match huge {
            true => out.huge_pages += 2,
            false => out.base_pages += 2,
        }
        out.kernel += Nanos(2 * self.page_work(order, true).0);
        out.bytes += 2 * bytes;
        copies.bytes.push(2 * bytes);
        self.note_traffic(fa, 2 * bytes);
        self.note_traffic(fb, 2 * bytes);
        Ok(())
    }

    /// Point the PTE of base page `va` at `pfn`, keeping its bits.
    fn repoint_base(&mut self, pid: Pid, va: u64, pfn: Pfn) -> Result<()> {
        let l = self.layout;
        let space = self
            .procs
            .get_mut(pid.0 as usize)
            .and_then(Option::as_mut)
            .ok_or(MmError::NoSuchProcess(pid))?;
        let Some(Slot::Table(t)) = space.pt.slot_mut_uncached(va) else {
            return Err(MmError::Invariant {
                what: "a base page being exchanged lost its table",
                at: pfn.0,
            });
        };
        let pte = t.get(l.page_index(va));
        t.set(
            l.page_index(va),
            Pte::frame(pfn, pte.accessed(), pte.dirty()).with_written(pte.written()),
        );
        Ok(())
    }
}

impl Kernel {
    /// The pages mapped to frames in the 2 MB region at `region` of `pid` (zero-page
    /// entries have no frame and are left out), appended to `out`, each with its node and
    /// whether its accessed bit was set; the bits are cleared as x86 Linux's
    /// `page_referenced` clears them: a 4 KB entry without a flush
    /// (`ptep_clear_flush_young` skips it), a huge entry found young with a flush of its
    /// 2 MB range (`pmdp_clear_flush_young`; see [`Kernel::clear_referenced`]). Returns
    /// the entries examined.
    pub fn scan_pages(&mut self, pid: Pid, region: VirtAddr, out: &mut Vec<PageScan>) -> u32 {
        let l = self.layout;
        let start = l.region_of(region.0);
        let Some(space) = self.procs.get_mut(pid.0 as usize).and_then(Option::as_mut) else {
            return 0;
        };
        let phys = &self.phys;
        match space.pt.slot_mut_uncached(start) {
            Some(Slot::Huge { pfn, accessed, .. }) => {
                let referenced = std::mem::take(accessed);
                out.push(PageScan {
                    va: VirtAddr(start),
                    huge: true,
                    node: phys.node_of(*pfn),
                    referenced,
                });
                if referenced {
                    self.record_flush(pid, start, l.region_bytes());
                }
                1
            }
            Some(Slot::Table(t)) => {
                for i in 0..l.fanout as usize {
                    let pte = t.get(i);
                    if !pte.is_frame() {
                        continue;
                    }
                    if pte.accessed() {
                        t.set(
                            i,
                            Pte::frame(pte.pfn(), false, pte.dirty()).with_written(pte.written()),
                        );
                    }
                    out.push(PageScan {
                        va: VirtAddr(start + ((i as u64) << l.base_shift)),
                        huge: false,
                        node: phys.node_of(pte.pfn()),
                        referenced: pte.accessed(),
                    });
                }
                l.fanout as u32
            }
            _ => 0,
        }
    }
}

impl Kernel {
    /// `pid`'s pages on each node (index = node).
    pub fn node_usage(&self, pid: Pid) -> Vec<NodeUse> {
        let mut use_ = vec![NodeUse::default(); self.phys.node_count()];
        let Some(space) = self.space(pid) else {
            return use_;
        };
        for (_, slot) in space.pt.slots() {
            match slot {
                Slot::Huge { pfn, .. } => use_[self.phys.node_of(*pfn).0 as usize].huge_pages += 1,
                Slot::Table(t) => {
                    for pte in t.ptes().iter().filter(|p| p.is_frame()) {
                        use_[self.phys.node_of(pte.pfn()).0 as usize].base_pages += 1;
                    }
                }
                _ => {}
            }
        }
        use_
    }
}

/// What maps an address.
enum Mapped {
    None,
    Base(Pfn),
    Huge(Pfn),
}

#[cfg(test)]
#[path = "movepages_tests.rs"]
mod tests;
