//! The memory-management unit of one simulated core and the cost of one memory reference:
//! the calibrated heart of the simulator.
//!
//! # Structure
//!
//! The structure follows Intel's *64 and IA-32 Architectures Optimization Reference
//! Manual* (the TLB and page-miss-handler descriptions of each microarchitecture), the
//! paging-structure caches of the *Intel SDM* vol. 3A §4.10.3, and AMD's *Software
//! Optimization Guide* for Zen (family 17h/19h):
//!
//! * **L1 DTLBs**: one or more arrays, each serving some page sizes (Intel: one per size;
//!   Zen: one for all sizes). A hit costs nothing beyond the load itself.
//! * **STLB**: a second-level TLB shared by the sizes the profile allows, each size limited
//!   to `max_ways` ways of a set (Sapphire Rapids lets 2 MB entries use half of them). A hit
//!   costs `tlb.stlb.hit_cycles`; the lookup is also paid before any walk.
//! * **Page walk**: loads one entry per remaining level, from the root (level 4, PML4) down
//!   to the leaf (1 for 4 KB, 2 for 2 MB, 3 for 1 GB). The **page-walk caches** let it start
//!   lower: the deepest hit among the PDE cache (key: ASID, VA >> 21), the PDPTE cache
//!   (VA >> 30) and the PML4E cache (VA >> 39) decides where. A cache at or below the leaf
//!   level is not consulted (a 2 MB walk ends at its PDE, so the PDE cache cannot help it).
//!   Each load is a 64-byte **page-table line** looked up in the core's cache hierarchy
//!   (`cache.rs`) next to the data lines, so page tables compete with data for cache space
//!   and a walk's cost depends on where its lines are found: walk cycles =
//!   `walk_base_cycles` + the sum of the latencies of the levels that held each line
//!   (L1D/L2/L3 `latency_cycles`, or DRAM). The walk fills the PWCs for the non-leaf
//!   entries it loaded, the STLB (under the size's way limit) and the L1 TLB (each is
//!   filled when it misses, which is equivalent since the walk reads none of them).
//! * **Data**: the reference's line (`pa >> 6`) is looked up in the same hierarchy.
//!
//! Every TLB and PWC tag includes the ASID (see `tags.rs`), so a context switch needs no
//! flush; [`Mmu::invalidate`] drops the TLB entries overlapping a range and, like
//! `INVLPG` (SDM §4.10.4.1), all page-walk-cache entries of the address space.
//!
//! # Time
//!
//! With `x` the translation cycles (0 on an L1 hit, `hit_cycles` on an STLB hit,
//! `hit_cycles + walk` on a walk) and `d` the data latency:
//!
//! * a **dependent** reference (its address comes from the previous one, pointer chasing)
//!   costs `max(issue_cycles, x + d)`: translation and data are serialised;
//! * an **independent** reference costs
//!   `max(issue_cycles, h / m, x / page_walkers, (x + d) * i / reorder_window)`:
//!   out-of-order execution overlaps up to `m` references, `page_walkers` walks and
//!   `reorder_window / i` references of `i` instructions each; the slowest resource
//!   bounds throughput. `m` is `mlp` (the line fill buffers) for data
//!   the caches serve, and `dram_mlp` (at most `mlp`; `mlp` when the profile has none)
//!   for data from memory. `h` is how long a reference holds its place among the `m`:
//!   its data latency `d`, or `x + d` in a profile with `mlp_holds_translation`.
//!
//! What overlaps, for independent references: one reference's translation and its data
//! access stay serial, but consecutive references overlap, and two resources bound how
//! many are in flight. Each walk holds a page walker for all of its cycles (its
//! page-table loads and, in a guest, its host walks), so walks overlap up to
//! `page_walkers`; each data miss holds a fill buffer, so data misses overlap up to
//! `mlp`, and those that go to memory only up to `dram_mlp`. A fill buffer holding a
//! miss to memory is held for the *loaded* latency, which on a machine with many misses
//! in flight is longer than the idle latency a chase measures (queueing in the
//! interconnect and the memory controller, and DRAM row misses); `dram_mlp` is that
//! effect folded into a count, fitted, not a documented structure. The page-table loads
//! of a walk are counted against the walker, not against `mlp`. Throughput is set by
//! whichever resource is busier per reference (Little's law: `m` places, each held `h`).
//! This is checked against membench's independent loads and GUPS updates in
//! `docs/calibration.md`.
//!
//! The window: the reorder buffer retires in order, so every instruction behind an
//! incomplete load stays in it until that load completes, and a reference's `i`
//! instructions (its own and the work that computes its address and uses its value) hold
//! `i` entries for about the reference's latency `x + d`; by Little's law `W` entries so
//! held allow `W / (i (x + d))` references a cycle. `W` is the profile's
//! `reorder_window`, `i` the running phase's instructions per reference
//! ([`Mmu::set_instructions_per_ref`]); either unset, no bound. This is what makes a loop
//! with more work per load overlap fewer loads on the same machine: membench's
//! `indep_pad` rows measure it (`docs/calibration.md`, "The reorder window").
//!
//! Which `h`: a fill buffer is taken only once the load's address is translated, so if
//! the fill buffers were the bound, `h = d`. The Xeon guest's data say the bound is
//! something a load holds from its issue (its load-buffer entry, the scheduler and
//! reorder-buffer entries behind it): at 256 MiB-4 GiB, 2 MB and 4 KB pages alike, a
//! dependent chase is 11-16 times an independent load's time, i.e. a constant number of
//! whole references overlap, walk included, where `h = d` overlaps the walks of 4 KB
//! pages for free whenever `x / page_walkers < d / m` (`docs/calibration.md`, "What
//! bounds independent references"). `mlp_holds_translation` chooses `h = x + d`; no
//! other profile sets it, so their results keep `h = d`.
//!
//! The walk time reported to the PMU ([`AccessCost::walk`]) is the cycles a walker is busy
//! as `DTLB_LOAD_MISSES.WALK_DURATION` counts them: the whole walk for a dependent
//! reference, `walk / page_walkers` for an independent one. Cycles become integer
//! picoseconds at `freq_ghz`, rounded to nearest.
//!
//! # Approximations (known gaps)
//!
//! * No speculative or merged walks, no TLB prefetching, no walk bypass of the L1D
//!   (Haswell's undocumented walk behaviours are ignored); STLB hits of independent
//!   references are bounded by `page_walkers` like walks, a conservative choice.
//! * Stores cost like loads (write-allocate, no store buffer); `write` only matters to
//!   the PMU.
//! * A virtual machine's walks are two-dimensional: a profile with a `[guest]` table
//!   translates every guest page-table page and the final guest-physical address through
//!   the host's page table, caches them in a nested TLB and host paging-structure caches,
//!   and caches the combined translation in the TLBs at the smaller of the guest's and
//!   the host's page size (`nested.rs` says which hardware this follows); the STLB may
//!   limit such splintered translations to fewer ways than native ones.
//! * Caches have no prefetchers, so sequential streams pay DRAM latency per line divided
//!   by `mlp`; TLB sets are indexed by low page-number bits (no hashing, no skew).
//! * ASIDs are reduced modulo 2^16 in tags.
//!
//! This module must not know about processes, page tables' contents or policies: the
//! kernel model resolves a reference to a page size and physical address first.

use crate::cache::{CacheHierarchy, LINE_SHIFT};
use crate::nested::Nested;
use crate::profile::{AssocProfile, MachineProfile};
use crate::setassoc::{SetAssoc, WayLimit};
use crate::tags::{TagScheme, SIZE_MASK};
use crate::units::{Geometry, PageSize, Picos, VirtAddr};

/// The highest page-table level with a page-walk cache (PML4).
const PWC_TOP: u32 = 4;

/// Index of the splintered translations' way limit in [`Mmu`]'s `stlb_limit`.
const SPLINTERED_LIMIT: usize = 3;
/// Shootdowns whose range is held under at most this many TLB tags (a 4 KB page's: its
/// own, its 2 MB and 1 GB pages', its splintered piece's) scan only those tags' sets.
const SMALL_SHOOTDOWN: usize = 16;

/// One memory reference, already resolved by the kernel model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reference {
    /// Address-space identifier (the process).
    pub asid: u32,
    /// Virtual address referenced.
    pub va: VirtAddr,
    /// Size of the page mapping `va`.
    pub size: PageSize,
    /// Physical byte address referenced.
    pub pa: u64,
    /// Whether the address depends on the previous reference (no overlap).
    pub dependent: bool,
    /// Whether the reference is a store.
    pub write: bool,
}

/// Where the translation was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TlbOutcome {
    /// In an L1 TLB.
    L1Hit,
    /// In the STLB.
    StlbHit,
    /// By a page walk.
    Walk,
}

/// The cost of one reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccessCost {
    /// Time the reference adds to the core's execution.
    pub time: Picos,
    /// Time attributed to page walking (what `WALK_DURATION` counts).
    pub walk: Picos,
    /// Where the translation was found.
    pub outcome: TlbOutcome,
}

/// Timing parameters, in cycles, precomputed from a profile.
#[derive(Clone, Copy, Debug)]
struct Timing {
    stlb_cycles: f64,
    walk_base_cycles: f64,
    issue_cycles: f64,
    inv_mlp: f64,
    /// `1 / dram_mlp`, for data slower than `cached_cycles`.
    inv_dram_mlp: f64,
    /// The last cache level's latency: data that took longer came from memory.
    cached_cycles: f64,
    inv_walkers: f64,
    /// 1 when a reference holds its place among the `m` in flight during its
    /// translation too (`mlp_holds_translation`), else 0.
    xlat_held: f64,
    /// `i / reorder_window`: the share of the window one reference of the running phase
    /// holds (0: no window bound).
    window_share: f64,
    picos_per_cycle: f64,
}

impl Timing {
    fn new(p: &MachineProfile) -> Timing {
        Timing {
            stlb_cycles: p.tlb.stlb.hit_cycles,
            walk_base_cycles: p.walk_base_cycles,
            issue_cycles: p.issue_cycles,
            inv_mlp: 1.0 / p.mlp.max(1.0),
            inv_dram_mlp: 1.0 / p.dram_mlp.unwrap_or(p.mlp).clamp(1.0, p.mlp.max(1.0)),
            cached_cycles: p.caches.last().map_or(0.0, |c| c.latency_cycles),
            inv_walkers: 1.0 / p.page_walkers.max(1) as f64,
            xlat_held: if p.mlp_holds_translation { 1.0 } else { 0.0 },
            window_share: 0.0,
            picos_per_cycle: p.picos_per_cycle(),
        }
    }

    /// The cost of a reference (see the module doc for the model).
    #[inline]
    fn cost(&self, outcome: TlbOutcome, walk: f64, data: f64, dependent: bool) -> AccessCost {
        let xlat = match outcome {
            TlbOutcome::L1Hit => 0.0,
            TlbOutcome::StlbHit => self.stlb_cycles,
            TlbOutcome::Walk => self.stlb_cycles + walk,
        };
        let (time, walk) = if dependent {
            (self.issue_cycles.max(xlat + data), walk)
        } else {
            let inv_mlp = if data > self.cached_cycles {
                self.inv_dram_mlp
            } else {
                self.inv_mlp
            };
            let held = data + xlat * self.xlat_held;
            let t = self
                .issue_cycles
                .max(held * inv_mlp)
                .max(xlat * self.inv_walkers)
                .max((xlat + data) * self.window_share);
            (t, walk * self.inv_walkers)
        };
        AccessCost {
            time: self.picos(time),
            walk: self.picos(walk),
            outcome,
        }
    }

    /// `(cycles * picos_per_cycle + 0.5) as u64`, twice per simulated reference: through
    /// the signed conversion, which truncates the same on `[0, 2^63)` in a third of the
    /// instructions (x86-64 has no unsigned one); the unsigned formula elsewhere.
    #[inline]
    fn picos(&self, cycles: f64) -> Picos {
        let x = cycles * self.picos_per_cycle + 0.5;
        if (0.0..TWO_POW_63).contains(&x) {
            Picos(x as i64 as u64)
        } else {
            Picos(to_u64_cold(x))
        }
    }
}

/// 2^63 as an `f64`.
const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;

/// `x as u64`, out of line so the compiler keeps [`Timing::picos`]'s fast path apart.
#[cold]
#[inline(never)]
fn to_u64_cold(x: f64) -> u64 {
    x as u64
}

/// The MMU and caches of one core (see the module doc).
#[derive(Clone, Debug)]
pub struct Mmu {
    tags: TagScheme,
    levels: u32,
    /// Index into `l1` of the array serving each page size.
    l1_of_size: [Option<u8>; 3],
    l1: Vec<SetAssoc>,
    stlb: SetAssoc,
    /// The STLB's way limit of each page size, then ([`SPLINTERED_LIMIT`]) of a guest's
    /// splintered translations (`nested.rs`).
    stlb_limit: [WayLimit; 4],
    /// Whether splintered translations have their own way limit; if not, they are
    /// native 4 KB entries.
    splintered_own_ways: bool,
    /// Page-walk caches for levels 2 (PDE), 3 (PDPTE), 4 (PML4E).
    pwc: [SetAssoc; 3],
    caches: CacheHierarchy,
    timing: Timing,
    /// The profile's `reorder_window`, if any (see [`Mmu::set_instructions_per_ref`]).
    reorder_window: Option<f64>,
    /// The host dimension of a guest's walks; `None` on bare metal.
    nested: Option<Box<Nested>>,
}

fn array(a: AssocProfile) -> SetAssoc {
    SetAssoc::new(a.entries as usize, a.ways as usize)
}

impl Mmu {
    /// A cold MMU for `profile` (expected validated; invalid geometry is clamped, never a
    /// panic) and the paging `geometry`.
    pub fn new(profile: &MachineProfile, geometry: Geometry) -> Mmu {
        let t = &profile.tlb;
        let mut l1_of_size = [None; 3];
        for (i, l1) in t.l1.iter().enumerate().take(u8::MAX as usize) {
            for size in &l1.sizes {
                l1_of_size[size.index()] = Some(i as u8);
            }
        }
        let l1 =
            t.l1.iter()
                .map(|l| {
                    array(AssocProfile {
                        entries: l.entries,
                        ways: l.ways,
                    })
                })
                .collect();
        let stlb = array(AssocProfile {
            entries: t.stlb.entries,
            ways: t.stlb.ways,
        });
        let limit = |ways: u32| WayLimit {
            class_mask: SIZE_MASK,
            max_ways: ways as usize,
        };
        let splintered = profile.guest.as_ref().and_then(|g| g.stlb_splintered_ways);
        let [l4k, l2m, l1g] = PageSize::ALL.map(|s| limit(t.stlb.max_ways.get(s)));
        let stlb_limit = [l4k, l2m, l1g, splintered.map_or(l4k, limit)];
        let pwc = [
            array(profile.pwc.pde),
            array(profile.pwc.pdpte),
            array(profile.pwc.pml4e),
        ];
        let dram_cycles = profile.dram_latency_ns * profile.freq_ghz;
        Mmu {
            tags: TagScheme::new(geometry),
            levels: geometry.levels,
            l1_of_size,
            l1,
            stlb,
            stlb_limit,
            splintered_own_ways: splintered.is_some(),
            pwc,
            caches: CacheHierarchy::new(&profile.caches, dram_cycles),
            timing: Timing::new(profile),
            reorder_window: profile.reorder_window,
            nested: profile
                .guest
                .as_ref()
                .map(|g| Box::new(Nested::new(g, geometry.levels, profile.freq_ghz))),
        }
    }

    /// A guest's host page sizes are decided by a host model from now on (see
    /// `nested.rs`): `regions` guest-physical 2 MB regions, all on host 4 KB pages until
    /// [`Mmu::set_host_huge`] says otherwise. Nothing on bare metal.
    pub fn use_host_map(&mut self, regions: u64) {
        if let Some(n) = self.nested.as_deref_mut() {
            n.use_host_map(regions);
        }
    }

    /// The host now maps guest-physical 2 MB region `region` with a 2 MB page (`huge`) or
    /// 4 KB pages. Returns whether that changed the map; the caller flushes what the
    /// hypervisor would (KVM flushes the guest's TLBs when it changes a mapping it had).
    pub fn set_host_huge(&mut self, region: u64, huge: bool) -> bool {
        self.nested
            .as_deref_mut()
            .is_some_and(|n| n.set_host_huge(region, huge))
    }

    /// Whether this MMU translates in two dimensions (its profile is a guest's).
    pub fn is_guest(&self) -> bool {
        self.nested.is_some()
    }

    /// Another core's caching stores wrote `bytes` from physical byte address `pa`
    /// through the shared last-level cache: fill each line into this core's last level.
    pub fn fill_llc(&mut self, pa: u64, bytes: u64) {
        let first = pa >> LINE_SHIFT;
        for line in first..first + (bytes >> LINE_SHIFT) {
            self.caches.fill_last(line);
        }
    }

    /// DRAM latency scaled by `factor` (>= 1) from now on: memory bandwidth another
    /// agent is using (1 restores it).
    pub fn set_dram_load(&mut self, factor: f64) {
        self.caches.set_dram_load(factor);
    }

    /// Memory nodes past node 0 as `(first physical byte, latency in ns)`, ascending:
    /// data found in no cache costs the latency of the node holding it.
    pub fn set_far_nodes(&mut self, nodes: &[(u64, f64)], freq_ghz: f64) {
        let cycles: Vec<(u64, f64)> = nodes.iter().map(|&(a, ns)| (a, ns * freq_ghz)).collect();
        self.caches.set_far_nodes(&cycles);
    }

    /// Node `node`'s latency scaled by `factor` (>= 1) from now on: bandwidth other
    /// agents use on it (1 restores it).
    pub fn set_node_load(&mut self, node: usize, factor: f64) {
        self.caches.set_node_load(node, factor);
    }

    /// Lines of traffic each memory node has had from this core's data misses, node 0
    /// first; empty on a machine of one node (see [`CacheHierarchy::access_data`]).
    pub fn node_lines(&self) -> impl Iterator<Item = u64> + '_ {
        self.caches.node_lines()
    }

    /// The instructions each reference comes with from now on (the running phase's: see
    /// the module doc, "Time"); `None`, or a profile without `reorder_window`: no window
    /// bound. Cheap; the engine calls it each time a phase takes its turn on the core.
    #[inline]
    pub fn set_instructions_per_ref(&mut self, instructions: Option<f64>) {
        self.timing.window_share = match (instructions, self.reorder_window) {
            (Some(i), Some(w)) => i / w,
            _ => 0.0,
        };
    }

    /// Translates and serves one reference, updating every structure; returns its cost.
    #[inline]
    pub fn access(&mut self, r: &Reference) -> AccessCost {
        let (outcome, walk) = self.translate(r);
        let data = self.caches.access_data(r.pa >> LINE_SHIFT, r.write);
        self.timing.cost(outcome, walk, data, r.dependent)
    }

    /// Prefetch into the host's caches what translating `va` in `asid` at page size
    /// `size` will read from large host arrays — the last-level cache set of the leaf
    /// page-table line — ahead of [`Mmu::access`]. Simulator speed only: no modelled
    /// state changes. (TLBs, page-walk caches and the inner cache levels are small enough
    /// to stay in the host's caches.)
    #[inline]
    pub fn prefetch_translation(&self, asid: u32, va: VirtAddr, size: PageSize) {
        self.caches
            .prefetch(self.tags.pt_line(asid, va, size.index() as u32 + 1));
    }

    /// Prefetch the cache sets of the data line at physical address `pa`.
    #[inline]
    pub fn prefetch_data(&self, pa: u64) {
        self.caches.prefetch(pa >> LINE_SHIFT);
    }

    /// Finds the translation of `r`; returns where, and the walk cycles if it walked.
    ///
    /// Each TLB and PWC is probed with lookup-and-fill: a structure that misses is filled
    /// at once rather than after the walk. Nothing in between reads it, so the outcome is
    /// the same and each structure is probed once.
    #[inline]
    fn translate(&mut self, r: &Reference) -> (TlbOutcome, f64) {
        let (s, tag, class) = match &self.nested {
            None => (
                r.size.index(),
                self.tags.tlb(r.asid, r.va, r.size),
                r.size.index(),
            ),
            Some(n) => self.guest_tlb_key(n, r),
        };
        if let Some(i) = self.l1_of_size[s] {
            if self.l1[usize::from(i)].access(tag) {
                return (TlbOutcome::L1Hit, 0.0);
            }
        }
        let limit = self.stlb_limit[class];
        if limit.max_ways > 0 && self.stlb.access_limited(tag, limit) {
            return (TlbOutcome::StlbHit, 0.0);
        }
        (TlbOutcome::Walk, self.walk(r.asid, r.va, r.size, r.pa))
    }

    /// A guest's TLB key for `r`: the size index and tag of the smaller of its page and
    /// the host's, and the index of its STLB way limit ([`SPLINTERED_LIMIT`] for a
    /// splintered piece when the profile gives those their own ways).
    #[inline]
    fn guest_tlb_key(&self, n: &Nested, r: &Reference) -> (usize, u64, usize) {
        let cached = n.effective(r.size, r.pa);
        let s = cached.index();
        if self.splintered_own_ways && cached != r.size {
            (s, self.tags.splintered(r.asid, r.va), SPLINTERED_LIMIT)
        } else {
            (s, self.tags.tlb(r.asid, r.va, cached), s)
        }
    }

    /// Walks the page table for the `size` page holding `va` (mapped at `pa`); returns the
    /// walk cycles. In a guest each page-table page's address and `pa` itself are
    /// translated by the host dimension as well (`nested.rs`).
    #[inline]
    fn walk(&mut self, asid: u32, va: VirtAddr, size: PageSize, pa: u64) -> f64 {
        let leaf = size.index() as u32 + 1;
        // The highest level whose entry must be loaded: one below the deepest PWC hit.
        // Deepest first; every PWC that misses caches the entry this walk loads.
        let mut start = self.levels;
        for level in (leaf + 1)..=self.levels.min(PWC_TOP) {
            if self.pwc[(level - 2) as usize].access(self.tags.pwc(asid, va, level)) {
                start = level - 1;
                break;
            }
        }
        let mut cycles = self.timing.walk_base_cycles;
        for level in (leaf..=start).rev() {
            let line = self.tags.pt_line(asid, va, level);
            if let Some(n) = self.nested.as_deref_mut() {
                let gpa = Nested::pt_gpa(asid, va, level, self.tags.entry_shift(level));
                cycles += n.translate(gpa, &self.tags, &mut self.caches);
            }
            let found = self.caches.access_level(line);
            cycles += self.caches.latency_of(found);
        }
        if let Some(n) = self.nested.as_deref_mut() {
            cycles += n.translate(pa, &self.tags, &mut self.caches);
        }
        cycles
    }

    /// Shootdown of `[start, end)` in address space `asid`: drops every TLB entry whose
    /// page overlaps the range, and all page-walk-cache entries of `asid`.
    pub fn invalidate(&mut self, asid: u32, start: VirtAddr, end: VirtAddr) {
        self.invalidate_within(asid, start, end, SMALL_SHOOTDOWN);
    }

    /// [`Mmu::invalidate`], scanning only the sets of the TLB tags overlapping the range
    /// when there are at most `most` of them.
    fn invalidate_within(&mut self, asid: u32, start: VirtAddr, end: VirtAddr, most: usize) {
        if end.0 <= start.0 {
            return;
        }
        let (tags, asid) = (self.tags, self.tags.asid(asid));
        let overlaps = |tag: u64| {
            let shift = tags.size_shift(tags.size_of(tag));
            let (a, first, last) = tags.region_of(tag, shift);
            a == asid && first < end.0 && last >= start.0
        };
        // A small range (a migrated page's shootdown) can only be held under the tags of
        // the few pages of each size overlapping it: scan their sets, not every set.
        match tags.tlb_tags_overlapping(asid, start, end, most) {
            Some(candidates) => {
                for a in &mut self.l1 {
                    a.retain_in_sets_of(&candidates, |t| !overlaps(t));
                }
                self.stlb.retain_in_sets_of(&candidates, |t| !overlaps(t));
            }
            None => {
                for a in &mut self.l1 {
                    a.retain(|t| !overlaps(t));
                }
                self.stlb.retain(|t| !overlaps(t));
            }
        }
        self.flush_pwc(asid);
    }

    /// Drops every TLB and page-walk-cache entry of `asid`.
    pub fn flush_asid(&mut self, asid: u32) {
        let (tags, asid) = (self.tags, self.tags.asid(asid));
        let other = |t: u64| tags.region_of(t, 0).0 != asid;
        for a in &mut self.l1 {
            a.retain(other);
        }
        self.stlb.retain(other);
        self.flush_pwc(asid);
    }

    fn flush_pwc(&mut self, asid: u32) {
        let tags = self.tags;
        for a in &mut self.pwc {
            a.retain(|t| tags.region_of(t, 0).0 != asid);
        }
    }

    /// Drops every TLB and page-walk-cache entry (the caches keep their lines).
    pub fn flush_all(&mut self) {
        self.l1.iter_mut().for_each(SetAssoc::clear);
        self.stlb.clear();
        self.pwc.iter_mut().for_each(SetAssoc::clear);
        if let Some(n) = self.nested.as_deref_mut() {
            n.flush();
        }
    }

    /// Empties the data caches too: a cold core.
    pub fn flush_caches(&mut self) {
        self.caches.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const GB: u64 = 1 << 30;

    /// Every tag of every TLB array, set by set, most recently used first.
    fn tlb_state(m: &Mmu) -> Vec<Vec<u64>> {
        m.l1.iter()
            .chain(std::iter::once(&m.stlb))
            .flat_map(|a| (0..a.sets()).map(|i| a.set_tags(i)))
            .collect()
    }

    /// A small shootdown that scans only its tags' sets leaves every TLB exactly as one
    /// scanning every set: for ranges inside and across pages of each size, two ASIDs, a
    /// full STLB of base and huge pages, on profiles of LRU and list sets.
    #[test]
    fn a_small_shootdown_scanning_its_sets_equals_one_scanning_all() {
        for name in ["haswell-e5-2690v3", "sapphire-rapids", "epyc-milan-kvm"] {
            let p = MachineProfile::builtin(name).expect("built in");
            let mut m = Mmu::new(&p, Geometry::X86_64);
            let base = 0x7f00_0000_0000u64;
            let mut x = 0x2545_f491_4f6c_dd1du64;
            for i in 0..20_000u64 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let size = if i % 5 == 0 {
                    PageSize::Huge
                } else {
                    PageSize::Base
                };
                let va = base + (x % (8 * GB));
                let page = Geometry::X86_64.bytes(size);
                m.access(&Reference {
                    asid: 1 + (i % 2) as u32,
                    va: VirtAddr(va),
                    size,
                    pa: (va / page % 4096) * page + va % page,
                    dependent: false,
                    write: false,
                });
            }
            for (start, len) in [
                (0x5000u64, 0x1000u64),
                (2 << 20, 0x3000),
                (0x1ff000, 0x2000),
            ] {
                for k in 0..64u64 {
                    let s = VirtAddr(base + start + k * 0x1234_5000 % (8 * GB));
                    let e = VirtAddr(s.0 + len);
                    let (mut a, mut b) = (m.clone(), m.clone());
                    a.invalidate_within(1, s, e, SMALL_SHOOTDOWN);
                    b.invalidate_within(1, s, e, 0);
                    assert_eq!(tlb_state(&a), tlb_state(&b), "{name}: {s:?}..{e:?}");
                }
            }
        }
    }

    #[test]
    fn picos_round_as_the_unsigned_formula() {
        let mut t = Timing::new(&MachineProfile::builtin("epyc-milan-kvm").expect("built in"));
        for ppc in [322.58, 1.0, 1e-300, 1e300] {
            t.picos_per_cycle = ppc;
            for c in [
                0.0,
                0.3,
                1.0,
                -0.2,
                -3.0,
                7.25,
                1e9 + 0.5,
                TWO_POW_63 / 322.58,
                1e40,
                f64::INFINITY,
                f64::NAN,
            ] {
                let want = (c * ppc + 0.5) as u64;
                assert_eq!(t.picos(c), Picos(want), "cycles {c} at {ppc} ps/cycle");
            }
        }
    }
}
