//! Slab caches: every kernel allocation is an object of a cache ([`KmemCache`]); objects
//! smaller than a slab share slabs as SLUB packs them, and the reclaimable caches are
//! shrunk under memory pressure as `shrink_slab` does (`mm/vmscan.c`, `mm/shrinker.c`).
//!
//! **Placement (SLUB, `mm/slub.c`).** A cache fills one slab at a time (the CPU slab).
//! When it is full, the cache takes the slab at the head of its partial list, and only
//! when that list is empty a new slab from the buddy allocator. A free into a full slab
//! puts the slab at the tail of the partial list (`__slab_free`'s `add_partial(...,
//! DEACTIVATE_TO_TAIL)`), so partial slabs are refilled oldest first; a free that empties
//! a slab other than the CPU slab returns its pages to the buddy allocator. So a slab
//! lives as long as its longest-lived object, and short-lived objects keep refilling the
//! slabs long-lived ones hold: the persistence of kernel pages in whatever pageblocks
//! they fell into. Simplified: one CPU slab per cache (SLUB has one per CPU, plus per-CPU
//! partial lists), and an emptied slab is freed at once (SLUB keeps up to `min_partial`,
//! 5-10, empty slabs per node; a few pages a cache). An object as large as its slab is a
//! page allocation: never a CPU slab, freed with its object.
//!
//! **Shrinking.** Linux scans a cache's `freeable` objects at `4 / seeks` times the rate
//! at which reclaim scans the LRU lists: `do_shrink_slab` adds `delta = 4 * nr_scanned /
//! seeks * freeable / (nr_eligible + 1)` to the shrinker's work (Linux 4.x; 6.x computes
//! `freeable >> priority` against `lru_size >> priority`, the same ratio), and every
//! filesystem cache uses `DEFAULT_SEEKS` (2). So reclaiming a fraction `f` of the LRU
//! scans a fraction `2f` of each reclaimable cache's objects, each cache on its own (as
//! each has its own shrinker), oldest object first (a cache's LRU is roughly its
//! allocation order). Work below an object is carried over, as Linux carries
//! `nr_deferred`, and the carried work never exceeds twice the cache (`do_shrink_slab`'s
//! cap on `total_scan`). What a scan does to an object is [`Shrinker`]'s: by default it
//! is freed, an upper bound on slab reclaim; under [`Shrinker::Linux4_1`] an object enters
//! its LRU referenced, as a dentry and an inode do, and its first scan only clears that
//! and rotates it to the tail (its second frees it). A slab's pages return to the buddy
//! allocator only when its last object goes, shrunk or freed by its holder. With the LRU
//! lists empty, reclaim shrinks the slab alone (Linux's priority falls to 0 and shrinkers
//! scan their whole cache).
//!
//! **Buffer heads.** The page cache's buffer heads ([`SlabCaches::buffer_heads`], on with
//! `Kernel::set_buffer_heads`) are a reclaimable cache the shrinker passes over: a buffer
//! head is freed with its page (`try_to_free_buffers` in reclaim, truncation), not by a
//! shrinker, so it is neither counted in [`SlabCaches::shrinkable`] nor scanned.
//!
//! An object the shrinker freed while a workload still holds its handle is remembered, so
//! the holder's later `kfree` is a no-op rather than a double free (in Linux the object is
//! simply gone: its owner, a dentry or inode, would be looked up again). This module owns
//! which objects are live, in which slab, and which to shrink next; it never touches a
//! frame: it names the slabs to allocate and free, the kernel does both. How much to
//! reclaim is `reclaim.rs`'s.

use crate::api::Shrinker;
use crate::error::MmError;
use crate::pressure::kmem::{KmemCache, KmemKind};
use crate::pressure::vfs::{VfsCaches, DENTRY_BYTES, INODE_BYTES, TREE_NODE_BYTES};
use hugemm_hw::{Order, Pfn};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// Bytes of a `struct buffer_head` (`/proc/slabinfo`'s `objsize` of `buffer_head`: 104
/// on x86-64 in Linux 4.1 as in 6.18), 39 to a 4 KiB slab.
pub const BUFFER_HEAD_BYTES: u64 = 104;

/// `4 / DEFAULT_SEEKS`: cache scanned per LRU scanned.
pub const SHRINK_RATIO: u64 = 2;
/// Work is counted in thousandths of an object so that small scans accumulate.
const MILLI: u64 = 1000;

/// One slab: how many objects it holds and, if on the partial list, its place there.
#[derive(Clone, Copy, Debug)]
struct Slab {
    inuse: u32,
    partial: Option<u64>,
}

/// One cache's slabs and objects.
#[derive(Clone, Debug)]
struct Cache {
    spec: KmemCache,
    /// Objects per slab.
    per_slab: u32,
    /// Whether each object is its own block (a page allocation).
    direct: bool,
    slabs: BTreeMap<Pfn, Slab>,
    /// Partial slabs by the order they became partial (head = first).
    partial: BTreeMap<u64, Pfn>,
    /// The slab being filled (SLUB's CPU slab); never set for a direct cache.
    current: Option<Pfn>,
    /// Live objects by their place on the shrinker's LRU, oldest first, kept only for a
    /// cache the shrinker scans ([`Cache::shrunk_by_reclaim`]; the others need no order,
    /// and a buffer head's would cost a tree insertion a page written): key -> id. An
    /// object enters at its id (ids grow with time); one rotated by a scan
    /// ([`Shrinker::Linux4_1`]) is re-entered at a fresh id, so `key != id` marks it
    /// scanned once, no longer referenced.
    live: BTreeMap<u64, u64>,
    /// Live objects, of every cache.
    count: u64,
    /// Shrinker work owed, in thousandths of an object (`nr_deferred`).
    debt: u64,
    /// Whether the slab shrinker frees this cache's objects: every reclaimable cache a
    /// workload allocates from, not the page cache's buffer heads
    /// ([`SlabCaches::buffer_heads`]), which go with their pages.
    shrinker: bool,
}

impl Cache {
    fn shrunk_by_reclaim(&self) -> bool {
        self.shrinker && self.spec.kind == KmemKind::Reclaimable
    }

    fn frames(&self) -> u64 {
        (self.slabs.len() as u64) << self.spec.order.0
    }

    fn has_room(&self, pfn: Pfn) -> bool {
        self.slabs
            .get(&pfn)
            .is_some_and(|s| s.inuse < self.per_slab)
    }
}

/// What [`SlabCaches::state`] finds for a handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Release {
    /// The object is live, of this kind; its holder's free releases it.
    Live(KmemKind),
    /// The shrinker already freed it; its holder's free only forgets it.
    Shrunk,
    /// Not an object this kernel knows (never allocated, freed twice, or not in the slab
    /// the handle names).
    Unknown,
}

/// Every slab cache, the live objects and the shrinker's state.
#[derive(Clone, Debug, Default)]
pub(crate) struct SlabCaches {
    caches: Vec<Cache>,
    by_spec: BTreeMap<KmemCache, usize>,
    /// Live objects: their cache, slab and key on the cache's LRU. Looked up only, never
    /// iterated in an order that matters.
    objects: HashMap<u64, (usize, Pfn, u64)>,
    /// Ids shrunk while their holder still had the handle.
    shrunk: BTreeSet<u64>,
    /// Frames held by slabs of each kind (index: unmovable, reclaimable).
    frames: [u64; 2],
    /// Objects freed by the shrinker so far.
    shrunk_objects: u64,
    /// Objects the shrinker scanned and rotated, referenced ([`Shrinker::Linux4_1`]).
    rotated_objects: u64,
    /// Placement sequence of the partial lists.
    seq: u64,
    /// The last object id handed out ([`SlabCaches::next_id`]).
    last_id: u64,
    /// The buffer-head cache, once created.
    buffer_heads: Option<usize>,
    /// Objects referenced again since the shrinker rotated them
    /// ([`SlabCaches::reference`]).
    referenced_again: HashSet<u64>,
    /// What a scan does to an object.
    shrinker: Shrinker,
}

fn kind_index(kind: KmemKind) -> usize {
    match kind {
        KmemKind::Unmovable => 0,
        KmemKind::Reclaimable => 1,
    }
}

impl SlabCaches {
    /// Frames held by the slabs of `kind`.
    pub fn frames(&self, kind: KmemKind) -> u64 {
        self.frames[kind_index(kind)]
    }

    /// Frames reclaim could free by shrinking: those of the shrinkable caches, while
    /// any of them holds an object (an emptied CPU slab alone is not shrinkable).
    pub fn shrinkable(&self) -> u64 {
        let shrunk = || self.caches.iter().filter(|c| c.shrunk_by_reclaim());
        if shrunk().any(|c| !c.live.is_empty()) {
            shrunk().map(Cache::frames).sum()
        } else {
            0
        }
    }

    /// What the shrinker does to the objects it scans, from now on.
    pub fn set_shrinker(&mut self, shrinker: Shrinker) {
        self.shrinker = shrinker;
    }

    /// The buffer-head cache, if buffer heads are on.
    pub fn buffer_head_cache(&self) -> Option<usize> {
        self.buffer_heads
    }

    /// The VFS's caches ([`VfsCaches`]: inodes, dentries, page-cache tree nodes, of Linux
    /// 4.1's sizes), created once, never merged with a workload's; of them only the
    /// dentries are shrunk (`vfs.rs` says why).
    pub fn vfs_caches(&mut self, base_bytes: u64) -> Result<VfsCaches, MmError> {
        let spec = |order, object_bytes| KmemCache {
            kind: KmemKind::Reclaimable,
            order: Order(order),
            object_bytes,
        };
        Ok(VfsCaches {
            inode: self.new_cache(spec(2, INODE_BYTES), base_bytes, false)?,
            dentry: self.new_cache(spec(0, DENTRY_BYTES), base_bytes, true)?,
            tree_node: self.new_cache(spec(1, TREE_NODE_BYTES), base_bytes, false)?,
        })
    }

    /// Whether object `id` is live (allocated and not shrunk or freed).
    pub fn is_live(&self, id: u64) -> bool {
        self.objects.contains_key(&id)
    }

    /// Live objects of cache `c`.
    pub fn live_objects(&self, c: usize) -> u64 {
        self.caches[c].count
    }

    /// Live object `id` is used again (a dentry's `dput` sets `DCACHE_REFERENCED`): under
    /// [`Shrinker::Linux4_1`], one the shrinker already rotated is rotated again rather
    /// than freed at its next scan. Its place on the LRU does not change.
    pub fn reference(&mut self, id: u64) {
        if self.shrinker != Shrinker::Linux4_1 {
            return;
        }
        if let Some(&(_, _, key)) = self.objects.get(&id) {
            if key != id {
                self.referenced_again.insert(id);
            }
        }
    }

    /// The shape of cache `c`.
    pub fn spec(&self, c: usize) -> KmemCache {
        self.caches[c].spec
    }

    /// A fresh object id (ids are never reused).
    pub fn next_id(&mut self) -> u64 {
        self.last_id += 1;
        self.last_id
    }

    /// Objects the shrinker has freed so far.
    pub fn shrunk_objects(&self) -> u64 {
        self.shrunk_objects
    }

    /// Objects the shrinker has scanned and rotated so far ([`Shrinker::Linux4_1`]).
    pub fn rotated_objects(&self) -> u64 {
        self.rotated_objects
    }

    /// The cache of shape `spec` with base pages of `base_bytes` (created on first use);
    /// refuses a shape whose object does not fit its slab.
    pub fn cache(&mut self, spec: KmemCache, base_bytes: u64) -> Result<usize, MmError> {
        if let Some(&c) = self.by_spec.get(&spec) {
            return Ok(c);
        }
        let c = self.new_cache(spec, base_bytes, true)?;
        self.by_spec.insert(spec, c);
        Ok(c)
    }

    /// The page cache's buffer heads (`buffer_head`: [`BUFFER_HEAD_BYTES`], reclaimable,
    /// order-0 slabs): a cache of its own, never merged with a workload's and never
    /// shrunk (a buffer head goes with its page: `try_to_free_buffers`).
    pub fn buffer_heads(&mut self, base_bytes: u64) -> Result<usize, MmError> {
        if let Some(c) = self.buffer_heads {
            return Ok(c);
        }
        let spec = KmemCache {
            kind: KmemKind::Reclaimable,
            order: Order(0),
            object_bytes: BUFFER_HEAD_BYTES,
        };
        let c = self.new_cache(spec, base_bytes, false)?;
        self.buffer_heads = Some(c);
        Ok(c)
    }

    fn new_cache(
        &mut self,
        spec: KmemCache,
        base_bytes: u64,
        shrinker: bool,
    ) -> Result<usize, MmError> {
        let per_slab = spec.objects_per_slab(base_bytes)?;
        self.caches.push(Cache {
            spec,
            per_slab,
            direct: spec.object_bytes == base_bytes << spec.order.0,
            slabs: BTreeMap::new(),
            partial: BTreeMap::new(),
            current: None,
            live: BTreeMap::new(),
            count: 0,
            debt: 0,
            shrinker,
        });
        Ok(self.caches.len() - 1)
    }

    /// A slab of cache `c` with room for one more object, as SLUB finds one: the CPU
    /// slab, else the head of the partial list (which becomes the CPU slab). `None`: a new
    /// slab is needed ([`SlabCaches::add_slab`]).
    pub fn slab_with_room(&mut self, c: usize) -> Option<Pfn> {
        let cache = &mut self.caches[c];
        if let Some(pfn) = cache.current.filter(|&p| cache.has_room(p)) {
            return Some(pfn);
        }
        let (_, pfn) = cache.partial.pop_first()?;
        if let Some(s) = cache.slabs.get_mut(&pfn) {
            s.partial = None;
        }
        // The full CPU slab is left alone (SLUB tracks no full slabs).
        cache.current = Some(pfn);
        Some(pfn)
    }

    /// A new, empty slab of cache `c` at `pfn` (the kernel allocated it); it becomes the
    /// CPU slab. Returns a previous CPU slab to free if it was left empty meanwhile
    /// (reclaim during the allocation may shrink it).
    pub fn add_slab(&mut self, c: usize, pfn: Pfn) -> Option<(Pfn, Order)> {
        let kind = kind_index(self.caches[c].spec.kind);
        let cache = &mut self.caches[c];
        cache.slabs.insert(
            pfn,
            Slab {
                inuse: 0,
                partial: None,
            },
        );
        self.frames[kind] += 1 << cache.spec.order.0;
        if cache.direct {
            return None;
        }
        let old = cache.current.replace(pfn)?;
        match cache.slabs.get(&old).map(|s| s.inuse) {
            Some(0) => self.drop_slab(c, old),
            Some(n) if n < self.caches[c].per_slab => {
                self.add_partial(c, old);
                None
            }
            _ => None,
        }
    }

    /// Place object `id` in slab `pfn` of cache `c` (which has room).
    pub fn place(&mut self, c: usize, pfn: Pfn, id: u64) {
        let cache = &mut self.caches[c];
        let slab = cache.slabs.get_mut(&pfn).expect("placed in a live slab");
        slab.inuse += 1;
        cache.count += 1;
        if cache.shrunk_by_reclaim() {
            cache.live.insert(id, id);
        }
        self.objects.insert(id, (c, pfn, id));
    }

    /// What a free of `id`'s handle (naming `pfn` and `order`) would find. Changes nothing.
    pub fn state(&self, id: u64, pfn: Pfn, order: Order) -> Release {
        match self.objects.get(&id) {
            Some(&(c, slab, _)) if slab == pfn && self.caches[c].spec.order == order => {
                Release::Live(self.caches[c].spec.kind)
            }
            Some(_) => Release::Unknown,
            None if self.shrunk.contains(&id) => Release::Shrunk,
            None => Release::Unknown,
        }
    }

    /// The holder of `id` frees it (after [`SlabCaches::state`] said `Live` or `Shrunk`).
    /// Returns the slab to free if the object was its last.
    pub fn release(&mut self, id: u64) -> Option<(Pfn, Order)> {
        if self.shrunk.remove(&id) {
            return None;
        }
        let (c, pfn, key) = self.objects.remove(&id)?;
        let cache = &mut self.caches[c];
        cache.count -= 1;
        if cache.shrunk_by_reclaim() {
            cache.live.remove(&key);
            self.referenced_again.remove(&id);
        }
        self.unplace(c, pfn)
    }

    /// One object fewer in slab `pfn` of cache `c`: move the slab between lists as SLUB
    /// does; returns it if it is to be freed.
    fn unplace(&mut self, c: usize, pfn: Pfn) -> Option<(Pfn, Order)> {
        let cache = &mut self.caches[c];
        let slab = cache.slabs.get_mut(&pfn).expect("object in a live slab");
        let was_full = slab.inuse == cache.per_slab;
        slab.inuse -= 1;
        let (inuse, partial) = (slab.inuse, slab.partial);
        if cache.current == Some(pfn) {
            return None;
        }
        if inuse == 0 {
            if let Some(seq) = partial {
                cache.partial.remove(&seq);
            }
            return self.drop_slab(c, pfn);
        }
        if was_full {
            self.add_partial(c, pfn);
        }
        None
    }

    fn add_partial(&mut self, c: usize, pfn: Pfn) {
        self.seq += 1;
        let cache = &mut self.caches[c];
        cache.partial.insert(self.seq, pfn);
        if let Some(s) = cache.slabs.get_mut(&pfn) {
            s.partial = Some(self.seq);
        }
    }

    fn drop_slab(&mut self, c: usize, pfn: Pfn) -> Option<(Pfn, Order)> {
        let cache = &mut self.caches[c];
        cache.slabs.remove(&pfn)?;
        let order = cache.spec.order;
        self.frames[kind_index(cache.spec.kind)] -= 1 << order.0;
        Some((pfn, order))
    }

    /// `kmem_cache_shrink` of every cache: the empty CPU slabs are let go; returns them.
    pub fn release_empty(&mut self) -> Vec<(Pfn, Order)> {
        let mut out = Vec::new();
        for c in 0..self.caches.len() {
            let cache = &mut self.caches[c];
            let Some(pfn) = cache.current else { continue };
            if cache.slabs.get(&pfn).is_some_and(|s| s.inuse == 0) {
                cache.current = None;
                out.extend(self.drop_slab(c, pfn));
            }
        }
        out
    }

    /// Reclaim scanned `scanned` LRU pages out of `lru` on the lists: add each reclaimable
    /// cache's share of work (`SHRINK_RATIO * scanned / (lru + 1)` of its objects).
    pub fn charge(&mut self, scanned: u64, lru: u64) {
        for cache in self.reclaimable_mut() {
            let objects = cache.live.len() as u64;
            let share = u128::from(SHRINK_RATIO * scanned) * u128::from(objects * MILLI)
                / u128::from(lru + 1);
            let cap = SHRINK_RATIO * objects * MILLI;
            cache.debt = (cache.debt + u64::try_from(share).unwrap_or(cap)).min(cap);
        }
    }

    /// Owe the work of freeing about `pages` pages with nothing on the LRU lists: each
    /// reclaimable cache that share of its objects (its objects times `pages` over its
    /// frames), at least its oldest object, so that a call frees something.
    pub fn charge_pages(&mut self, pages: u64) {
        for cache in self.reclaimable_mut() {
            let objects = cache.live.len() as u64;
            let frames = cache.frames().max(1);
            let owed = (pages.saturating_mul(objects).div_ceil(frames)).clamp(1, objects);
            cache.debt = cache.debt.max(owed * MILLI);
        }
    }

    fn reclaimable_mut(&mut self) -> impl Iterator<Item = &mut Cache> {
        self.caches
            .iter_mut()
            .filter(|c| c.shrunk_by_reclaim() && !c.live.is_empty())
    }

    /// Scan the objects the shrinkers' work covers, oldest first in each cache, freeing
    /// each (or, under [`Shrinker::Linux4_1`], rotating each not yet scanned: `LRU_ROTATE`
    /// of `dentry_lru_isolate` and `inode_lru_isolate`); returns the slabs emptied (to
    /// return to the buddy allocator), in the order they emptied.
    pub fn shrink_due(&mut self) -> Vec<(Pfn, Order)> {
        let mut emptied = Vec::new();
        for c in 0..self.caches.len() {
            if !self.caches[c].shrunk_by_reclaim() {
                continue;
            }
            while self.caches[c].debt >= MILLI {
                let Some((key, id)) = self.caches[c].live.pop_first() else {
                    self.caches[c].debt = 0;
                    break;
                };
                self.caches[c].debt -= MILLI;
                let referenced = key == id || self.referenced_again.remove(&id);
                if self.shrinker == Shrinker::Linux4_1 && referenced {
                    let tail = self.next_id();
                    self.caches[c].live.insert(tail, id);
                    if let Some(o) = self.objects.get_mut(&id) {
                        o.2 = tail;
                    }
                    self.rotated_objects += 1;
                    continue;
                }
                let (_, pfn, _) = self.objects.remove(&id).expect("a live object is indexed");
                self.caches[c].count -= 1;
                self.shrunk.insert(id);
                self.shrunk_objects += 1;
                emptied.extend(self.unplace(c, pfn));
            }
            if self.caches[c].live.is_empty() {
                self.caches[c].debt = 0;
            }
        }
        emptied
    }

    /// Every slab with its order, kind and objects in use (for the invariant check), and
    /// each cache's count of live objects against its slabs' counts.
    pub fn audit(&self) -> Result<Vec<(Pfn, Order, KmemKind)>, &'static str> {
        let mut per_slab: HashMap<(usize, Pfn), u32> = HashMap::new();
        for &(c, pfn, key) in self.objects.values() {
            *per_slab.entry((c, pfn)).or_default() += 1;
            let cache = &self.caches[c];
            if cache.shrunk_by_reclaim() != cache.live.contains_key(&key) {
                return Err("a live object is not on its cache's LRU, or on one it has not");
            }
        }
        let mut out = Vec::new();
        let mut frames = [0u64; 2];
        for (c, cache) in self.caches.iter().enumerate() {
            let indexed = self.objects.values().filter(|o| o.0 == c).count() as u64;
            let listed = cache.live.len() as u64;
            if cache.count != indexed || (cache.shrunk_by_reclaim() && listed != indexed) {
                return Err("a cache's live objects disagree with the object index");
            }
            for (&pfn, slab) in &cache.slabs {
                let inuse = per_slab.get(&(c, pfn)).copied().unwrap_or(0);
                if inuse != slab.inuse || inuse > cache.per_slab {
                    return Err("a slab's object count disagrees with its objects");
                }
                let on_list = slab
                    .partial
                    .is_some_and(|seq| cache.partial.get(&seq) == Some(&pfn));
                let should = cache.current != Some(pfn) && inuse > 0 && inuse < cache.per_slab;
                if on_list != should || (inuse == 0 && cache.current != Some(pfn)) {
                    return Err("a slab is on the wrong list (partial, CPU or freed)");
                }
                frames[kind_index(cache.spec.kind)] += 1 << cache.spec.order.0;
                out.push((pfn, cache.spec.order, cache.spec.kind));
            }
            if cache.partial.len() != cache.slabs.values().filter(|s| s.partial.is_some()).count() {
                return Err("a partial list names a slab that is not partial");
            }
        }
        if frames != self.frames {
            return Err("the slabs' frames disagree with the per-kind totals");
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: u64 = 4096;

    /// A cache of `per` objects per order-0 slab (`direct` when `per` is 1).
    fn spec(kind: KmemKind, per: u64) -> KmemCache {
        KmemCache {
            kind,
            order: Order(0),
            object_bytes: PAGE / per,
        }
    }

    /// Allocates as the kernel does, with frames handed out from `next`.
    struct World {
        s: SlabCaches,
        next: u64,
        freed: Vec<u64>,
    }

    impl World {
        fn new() -> World {
            World {
                s: SlabCaches::default(),
                next: 0,
                freed: Vec::new(),
            }
        }

        fn alloc(&mut self, spec: KmemCache) -> (u64, Pfn) {
            let c = self.s.cache(spec, PAGE).unwrap();
            let pfn = match self.s.slab_with_room(c) {
                Some(p) => p,
                None => {
                    let p = Pfn(self.next);
                    self.next += 1;
                    let dropped = self.s.add_slab(c, p);
                    self.freed.extend(dropped.map(|(p, _)| p.0));
                    p
                }
            };
            let id = self.s.next_id();
            self.s.place(c, pfn, id);
            (id, pfn)
        }

        fn free(&mut self, id: u64) {
            let dropped = self.s.release(id);
            self.freed.extend(dropped.map(|(p, _)| p.0));
        }

        fn shrink(&mut self) -> Vec<u64> {
            self.s.shrink_due().into_iter().map(|(p, _)| p.0).collect()
        }
    }

    #[test]
    fn objects_share_slabs_and_a_slab_is_freed_with_its_last_object() {
        let mut w = World::new();
        let dentry = spec(KmemKind::Reclaimable, 4);
        let ids: Vec<_> = (0..8).map(|_| w.alloc(dentry)).collect();
        assert_eq!(w.s.frames(KmemKind::Reclaimable), 2, "8 objects, 4 a slab");
        assert_eq!(ids[3].1, Pfn(0));
        assert_eq!(ids[4].1, Pfn(1));
        // Three of the first slab's objects go: it stays, held by the fourth.
        for (id, _) in &ids[..3] {
            w.free(*id);
        }
        assert!(w.freed.is_empty());
        assert_eq!(w.s.frames(KmemKind::Reclaimable), 2);
        w.free(ids[3].0);
        assert_eq!(w.freed, vec![0], "its last object frees it");
        assert_eq!(w.s.frames(KmemKind::Reclaimable), 1);
        w.s.audit().unwrap();
    }

    #[test]
    fn partial_slabs_are_refilled_oldest_first_before_a_new_slab() {
        let mut w = World::new();
        let c = spec(KmemKind::Unmovable, 2);
        let a: Vec<_> = (0..6).map(|_| w.alloc(c)).collect(); // slabs 0, 1, 2 full
        w.free(a[3].0); // slab 1 becomes partial first
        w.free(a[0].0); // then slab 0
        assert_eq!(w.alloc(c).1, Pfn(1), "the head of the partial list");
        assert_eq!(w.alloc(c).1, Pfn(0));
        assert_eq!(w.alloc(c).1, Pfn(3), "no partial slab left: a new one");
        w.s.audit().unwrap();
    }

    #[test]
    fn the_cpu_slab_stays_when_emptied_and_is_freed_once_replaced() {
        let mut w = World::new();
        let c = spec(KmemKind::Unmovable, 2);
        let (first, _) = w.alloc(c);
        w.free(first);
        assert!(w.freed.is_empty(), "the CPU slab is kept empty");
        let (again, _) = w.alloc(c);
        assert_eq!(w.s.frames(KmemKind::Unmovable), 1, "and refilled");
        assert!(w.s.release_empty().is_empty(), "in use");
        w.free(again);
        assert_eq!(w.s.release_empty(), vec![(Pfn(0), Order(0))]);
        assert_eq!(w.s.frames(KmemKind::Unmovable), 0);
        w.s.audit().unwrap();
    }

    #[test]
    fn page_allocations_are_their_own_blocks() {
        let mut w = World::new();
        let pages = spec(KmemKind::Unmovable, 1);
        let (a, pa) = w.alloc(pages);
        let (b, pb) = w.alloc(pages);
        assert_ne!(pa, pb);
        w.free(a);
        assert_eq!(w.freed, vec![pa.0], "freed with its object");
        w.free(b);
        assert_eq!(w.freed, vec![pa.0, pb.0]);
        assert_eq!(w.s.frames(KmemKind::Unmovable), 0);
        w.s.audit().unwrap();
    }

    #[test]
    fn reclaiming_a_fraction_of_the_lru_shrinks_twice_that_fraction_of_objects_oldest_first() {
        let mut w = World::new();
        let c = spec(KmemKind::Reclaimable, 1);
        for _ in 0..100 {
            w.alloc(c);
        }
        w.s.charge(100, 999); // 10% of the LRU
        assert_eq!(w.shrink(), (0..20).collect::<Vec<_>>());
        assert_eq!(w.s.frames(KmemKind::Reclaimable), 80);
        assert_eq!(w.s.shrunk_objects(), 20);
        w.s.audit().unwrap();
    }

    /// Linux 4.1's LRUs: the first scan of an object rotates it, the second frees it;
    /// each costs a unit of the shrinker's work, and the order stays oldest first.
    #[test]
    fn under_linux_4_1_a_scanned_object_is_rotated_once_then_freed() {
        let mut w = World::new();
        w.s.set_shrinker(Shrinker::Linux4_1);
        let c = spec(KmemKind::Reclaimable, 1);
        let ids: Vec<_> = (0..10).map(|_| w.alloc(c)).collect();
        w.s.charge(100, 999); // 10% of the LRU: 2 objects' work
        assert!(
            w.shrink().is_empty(),
            "the two oldest are rotated, not freed"
        );
        assert_eq!((w.s.rotated_objects(), w.s.shrunk_objects()), (2, 0));
        w.s.charge(400, 999); // 8 objects' work: the other 8 are rotated
        assert!(w.shrink().is_empty());
        w.s.charge(150, 999); // 3 objects' work: the two oldest again, then the third
        assert_eq!(w.shrink(), vec![ids[0].1 .0, ids[1].1 .0, ids[2].1 .0]);
        assert_eq!((w.s.rotated_objects(), w.s.shrunk_objects()), (10, 3));
        // A new object goes behind the rotated ones; its holder can still free it, and
        // a rotated object's holder too.
        let (young, _) = w.alloc(c);
        w.free(young);
        w.free(ids[5].0);
        w.s.audit().unwrap();
        // The upper bound frees what it scans.
        let mut u = World::new();
        (0..10).for_each(|_| {
            u.alloc(c);
        });
        u.s.charge(100, 999);
        assert_eq!(u.shrink().len(), 2);
    }

    /// An object used again after its rotation is rotated again at its next scan
    /// (`DCACHE_REFERENCED` set anew by `dput`); the upper bound ignores uses.
    #[test]
    fn an_object_referenced_again_is_rotated_again() {
        let mut w = World::new();
        w.s.set_shrinker(Shrinker::Linux4_1);
        let c = spec(KmemKind::Reclaimable, 1);
        let ids: Vec<_> = (0..3).map(|_| w.alloc(c)).collect();
        w.s.reference(ids[1].0); // not rotated yet: nothing to mark
        w.s.charge(500, 999); // 3 objects' work: every one rotated
        assert!(w.shrink().is_empty());
        w.s.reference(ids[1].0);
        w.s.charge(500, 999);
        assert_eq!(w.shrink(), vec![ids[0].1 .0, ids[2].1 .0]);
        assert_eq!((w.s.rotated_objects(), w.s.shrunk_objects()), (4, 2));
        w.s.charge(500, 999); // the one left: its work
        assert_eq!(w.shrink(), vec![ids[1].1 .0]);
        w.s.audit().unwrap();
        let mut u = World::new();
        let ids: Vec<_> = (0..3).map(|_| u.alloc(c)).collect();
        u.s.reference(ids[0].0);
        u.s.charge(167, 999); // one object's work
        assert_eq!(u.shrink(), vec![ids[0].1 .0]);
    }

    #[test]
    fn shrinking_objects_frees_only_the_slabs_it_empties() {
        let mut w = World::new();
        let c = spec(KmemKind::Reclaimable, 4);
        let ids: Vec<_> = (0..8).map(|_| w.alloc(c).0).collect();
        // Objects 2-4 go and three new ones (ids 9-11) take their slots in slab 0, the
        // head of the partial list: slab 0 holds the oldest object (1) and three young
        // ones.
        for id in &ids[1..4] {
            w.free(*id);
        }
        for _ in 0..3 {
            assert_eq!(w.alloc(c).1, Pfn(0));
        }
        w.s.charge_pages(1); // owe 1 page's share: 8 objects over 2 frames -> 4 objects
                             // The four oldest live objects are 1 (slab 0) and 5, 6, 7 (slab 1): slab 1 keeps
                             // object 8, slab 0 its three young ones; nothing is emptied.
        assert_eq!(w.shrink(), Vec::<u64>::new());
        assert_eq!(w.s.shrunk_objects(), 4);
        assert_eq!(w.s.frames(KmemKind::Reclaimable), 2);
        w.s.audit().unwrap();
    }

    #[test]
    fn small_scans_accumulate_until_an_object_is_due() {
        let mut w = World::new();
        let c = spec(KmemKind::Reclaimable, 1);
        for _ in 0..5 {
            w.alloc(c);
        }
        for _ in 0..3 {
            w.s.charge(1, 9_999); // 2 * 5 / 10,000 of an object each
            assert!(w.shrink().is_empty());
        }
        for _ in 0..1_000 {
            w.s.charge(1, 9_999);
        }
        assert_eq!(w.shrink(), vec![0], "one object owed by now");
    }

    #[test]
    fn work_owed_is_capped_at_twice_the_cache_and_unmovable_caches_are_never_shrunk() {
        let mut w = World::new();
        let r = spec(KmemKind::Reclaimable, 1);
        let u = spec(KmemKind::Unmovable, 1);
        w.alloc(r);
        w.alloc(u);
        w.alloc(r);
        w.s.charge(1_000_000, 0);
        assert_eq!(w.shrink(), vec![0, 2]);
        assert_eq!(w.s.frames(KmemKind::Unmovable), 1);
        assert_eq!(w.s.shrinkable(), 0);
        w.alloc(r);
        assert!(w.shrink().is_empty(), "an emptied cache owes nothing");
    }

    #[test]
    fn holders_of_shrunk_objects_release_them_once() {
        let mut w = World::new();
        let c = spec(KmemKind::Reclaimable, 1);
        let (a, pa) = w.alloc(c);
        let (b, pb) = w.alloc(KmemCache {
            order: Order(1),
            object_bytes: 2 * PAGE,
            ..c
        });
        w.s.charge_pages(1);
        assert_eq!(w.shrink(), vec![pa.0, pb.0], "each cache owes at least one");
        assert_eq!(w.s.state(a, pa, Order(0)), Release::Shrunk);
        w.free(a);
        assert_eq!(w.s.state(a, pa, Order(0)), Release::Unknown, "twice");
        let (c2, pc) = w.alloc(c);
        assert_eq!(w.s.state(c2, pc, Order(1)), Release::Unknown, "order");
        assert_eq!(w.s.state(c2, Pfn(99), Order(0)), Release::Unknown, "frame");
        assert_eq!(
            w.s.state(c2, pc, Order(0)),
            Release::Live(KmemKind::Reclaimable)
        );
        w.free(b);
        w.s.audit().unwrap();
    }
}
