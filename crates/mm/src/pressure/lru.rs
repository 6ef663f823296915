//! The page cache's data: each file's sparse index (page index -> cached page) and the
//! two LRU lists of Linux's file LRU (`mm/vmscan.c`, `mm/swap.c`).
//!
//! Pages enter at the head of the inactive list, referenced (the read that brought them in
//! is their first access, `filemap_read` -> `folio_mark_accessed`). `mark_accessed`
//! follows `folio_mark_accessed`: an unreferenced page becomes referenced; a referenced
//! inactive page is activated (moved to the active head, reference cleared). Reclaim takes
//! pages from the inactive tail; clean unmapped file pages are reclaimed even when
//! referenced (`folio_check_references` returns `FOLIOREF_RECLAIM_CLEAN`). When the
//! inactive list is low (`inactive_is_low`: `inactive * ratio < active`, `ratio =
//! int_sqrt(10 * GB)` or 1 below 1 GB), pages move from the active tail to the inactive
//! head (`shrink_active_list`), keeping their referenced bit.
//!
//! A machine of several zones keeps a pair of lists per zone (Linux 4.1's per-zone
//! `lruvec`; since 4.8 the lists are per node), so reclaim can aim at one zone
//! ([`PageCache::set_zones`]). A page migrated to another zone moves to the head of the
//! same list in its new zone, as `putback_lru_page` puts the new page.
//!
//! Owns the index, the list nodes (a slab with intrusive links, so every operation is
//! O(1) apart from the index's O(log n)) and their counts. It must not allocate or free
//! frames: the page-cache and reclaim mechanisms do, and keep frame reverse maps in step.

use crate::pressure::pagecache::FileId;
use crate::pressure::vfs::Vfs;
use hugemm_hw::Pfn;
use std::collections::BTreeMap;

const NIL: u32 = u32::MAX;
const INACTIVE: usize = 0;
const ACTIVE: usize = 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Node {
    prev: u32,
    next: u32,
    pfn: u32,
    file: u32,
    index: u32,
    list: u8,
    referenced: bool,
    /// The zone whose lists hold the page.
    zone: u8,
}

/// A cached page found in the index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cached {
    pub file: FileId,
    pub index: u32,
    pub pfn: Pfn,
}

/// One zone's inactive and active lists.
#[derive(Clone, Copy, Debug)]
struct Lru {
    head: [u32; 2],
    tail: [u32; 2],
    len: [u64; 2],
}

impl Default for Lru {
    fn default() -> Lru {
        Lru {
            head: [NIL; 2],
            tail: [NIL; 2],
            len: [0; 2],
        }
    }
}

/// Every file's cached pages and the active/inactive LRU lists.
#[derive(Clone, Debug)]
pub(crate) struct PageCache {
    files: BTreeMap<u32, BTreeMap<u32, u32>>,
    nodes: Vec<Node>,
    spare: Vec<u32>,
    /// The lists of each zone.
    lru: Vec<Lru>,
    /// The first frame of each zone after the first.
    zone_starts: Vec<u32>,
    /// Pages on every zone's lists.
    total: u64,
    /// The kernel object each node's page carries (its buffer head's slab id; 0: none),
    /// by node id; empty while no page carries one.
    objects: Vec<u64>,
    /// Each file's inode, dentry and tree nodes, with VFS objects on (`vfs.rs`).
    pub vfs: Option<Vfs>,
}

impl Default for PageCache {
    fn default() -> PageCache {
        PageCache {
            files: BTreeMap::new(),
            nodes: Vec::new(),
            spare: Vec::new(),
            lru: vec![Lru::default()],
            zone_starts: Vec::new(),
            total: 0,
            objects: Vec::new(),
            vfs: None,
        }
    }
}

impl PageCache {
    /// Keep a pair of lists per zone, the zones after the first starting at the frames
    /// `starts` (ascending). Only while nothing is cached.
    pub fn set_zones(&mut self, starts: &[u32]) {
        debug_assert_eq!(self.pages(), 0, "zones are set on an empty cache");
        self.zone_starts = starts.to_vec();
        self.lru = vec![Lru::default(); starts.len() + 1];
    }

    /// The zone of frame `pfn`.
    #[inline]
    fn zone_of(&self, pfn: u32) -> u8 {
        self.zone_starts.partition_point(|&s| s <= pfn) as u8
    }

    /// Number of zones, each with its lists.
    pub fn zones(&self) -> usize {
        self.lru.len()
    }

    /// Pages cached, both lists, every zone.
    pub fn pages(&self) -> u64 {
        self.total
    }

    /// Pages cached in zone `zone`, both lists.
    pub fn zone_pages(&self, zone: usize) -> u64 {
        self.lru
            .get(zone)
            .map_or(0, |l| l.len[INACTIVE] + l.len[ACTIVE])
    }

    /// Pages on zone `zone`'s (inactive, active) lists.
    pub fn list_lens(&self, zone: usize) -> (u64, u64) {
        self.lru
            .get(zone)
            .map_or((0, 0), |l| (l.len[INACTIVE], l.len[ACTIVE]))
    }

    /// The node caching page `index` of `file`.
    pub fn lookup(&self, file: FileId, index: u32) -> Option<u32> {
        self.files.get(&file.0)?.get(&index).copied()
    }

    /// The frame of a node.
    pub fn pfn(&self, node: u32) -> Pfn {
        Pfn(self.nodes[node as usize].pfn as u64)
    }

    /// Cache `pfn` as page `index` of `file`, at the inactive head, referenced. The
    /// caller checked the page is not cached.
    pub fn insert(&mut self, file: FileId, index: u32, pfn: Pfn) {
        let node = Node {
            prev: NIL,
            next: NIL,
            pfn: pfn.0 as u32,
            file: file.0,
            index,
            list: INACTIVE as u8,
            referenced: true,
            zone: self.zone_of(pfn.0 as u32),
        };
        let id = match self.spare.pop() {
            Some(id) => {
                self.nodes[id as usize] = node;
                id
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        };
        self.push_head(id, INACTIVE);
        self.files.entry(file.0).or_default().insert(index, id);
    }

    /// `folio_mark_accessed`: reference, or activate a referenced inactive page.
    pub fn mark_accessed(&mut self, id: u32) {
        let n = self.nodes[id as usize];
        if n.referenced && n.list as usize == INACTIVE {
            self.unlink(id);
            self.nodes[id as usize].referenced = false;
            self.push_head(id, ACTIVE);
        } else {
            self.nodes[id as usize].referenced = true;
        }
    }

    /// Drop page `index` of `file` from the cache; returns its frame and the kernel
    /// object it carried ([`PageCache::attach`]; 0: none), which the caller frees.
    pub fn remove(&mut self, file: FileId, index: u32) -> Option<(Pfn, u64)> {
        let pages = self.files.get_mut(&file.0)?;
        let id = pages.remove(&index)?;
        if pages.is_empty() {
            self.files.remove(&file.0);
        }
        self.unlink(id);
        self.spare.push(id);
        let object = self.objects.get_mut(id as usize).map_or(0, std::mem::take);
        Some((self.pfn(id), object))
    }

    /// The kernel object page `index` of `file` carries (0: none, or not cached).
    pub fn object(&self, file: FileId, index: u32) -> u64 {
        self.lookup(file, index)
            .and_then(|id| self.objects.get(id as usize).copied())
            .unwrap_or(0)
    }

    /// Page `index` of `file` now carries kernel object `object` (a buffer head), freed
    /// with it; false if the page is not cached.
    pub fn attach(&mut self, file: FileId, index: u32, object: u64) -> bool {
        let Some(id) = self.lookup(file, index) else {
            return false;
        };
        if self.objects.len() <= id as usize {
            self.objects.resize(self.nodes.len(), 0);
        }
        self.objects[id as usize] = object;
        true
    }

    /// Every cached page of `file`, by index.
    pub fn file_pages(&self, file: FileId) -> Vec<Cached> {
        self.files.get(&file.0).map_or(Vec::new(), |pages| {
            pages
                .iter()
                .map(|(&index, &id)| Cached {
                    file,
                    index,
                    pfn: self.pfn(id),
                })
                .collect()
        })
    }

    /// Every cached page, by file then index.
    pub fn iter(&self) -> impl Iterator<Item = Cached> + '_ {
        self.files.iter().flat_map(move |(&file, pages)| {
            pages.iter().map(move |(&index, &id)| Cached {
                file: FileId(file),
                index,
                pfn: self.pfn(id),
            })
        })
    }

    /// The page at zone `zone`'s inactive tail, the next to reclaim there.
    pub fn inactive_tail(&self, zone: usize) -> Option<Cached> {
        let id = self.lru.get(zone)?.tail[INACTIVE];
        (id != NIL).then(|| {
            let n = self.nodes[id as usize];
            Cached {
                file: FileId(n.file),
                index: n.index,
                pfn: Pfn(n.pfn as u64),
            }
        })
    }

    /// `inactive_is_low` for zone `zone`'s file LRU, with `frame_bytes` per page.
    pub fn inactive_is_low(&self, zone: usize, frame_bytes: u64) -> bool {
        let gb = (self.zone_pages(zone) * frame_bytes) >> 30;
        let ratio = if gb == 0 { 1 } else { int_sqrt(10 * gb) };
        let (inactive, active) = self.list_lens(zone);
        inactive * ratio < active
    }

    /// Move up to `n` pages from zone `zone`'s active tail to its inactive head; returns
    /// how many.
    pub fn deactivate(&mut self, zone: usize, n: u64) -> u64 {
        let mut moved = 0;
        while moved < n && self.lru.get(zone).is_some_and(|l| l.tail[ACTIVE] != NIL) {
            let id = self.lru[zone].tail[ACTIVE];
            self.unlink(id);
            self.push_head(id, INACTIVE);
            moved += 1;
        }
        moved
    }

    /// Point page `index` of `file` at `new` (migration); false unless it was at `old`.
    /// A page that changes zone moves to the head of the same list in the new zone.
    pub fn set_pfn(&mut self, file: FileId, index: u32, old: Pfn, new: Pfn) -> bool {
        match self.lookup(file, index) {
            Some(id) if self.pfn(id) == old => {
                let zone = self.zone_of(new.0 as u32);
                let node = self.nodes[id as usize];
                if zone != node.zone {
                    self.unlink(id);
                    self.nodes[id as usize].zone = zone;
                    self.push_head(id, node.list as usize);
                }
                self.nodes[id as usize].pfn = new.0 as u32;
                true
            }
            _ => false,
        }
    }

    /// Walk both lists: links consistent, lengths equal to the counters and to the index.
    /// Every zone's lists: links consistent, each page in its frame's zone, lengths
    /// equal to the counters and to the index.
    pub fn lists_consistent(&self) -> bool {
        let walk = |zone: usize, list: usize| {
            let lru = &self.lru[zone];
            let (mut id, mut prev, mut n) = (lru.head[list], NIL, 0u64);
            while id != NIL && n <= self.nodes.len() as u64 {
                let node = self.nodes[id as usize];
                if node.prev != prev
                    || node.list as usize != list
                    || node.zone as usize != zone
                    || self.zone_of(node.pfn) != node.zone
                {
                    return None;
                }
                let indexed = self.lookup(FileId(node.file), node.index) == Some(id);
                if !indexed {
                    return None;
                }
                (prev, id, n) = (id, node.next, n + 1);
            }
            (prev == lru.tail[list] && n == lru.len[list]).then_some(n)
        };
        let indexed: u64 = self.files.values().map(|p| p.len() as u64).sum();
        let mut listed = 0;
        for zone in 0..self.lru.len() {
            match (walk(zone, INACTIVE), walk(zone, ACTIVE)) {
                (Some(a), Some(b)) => listed += a + b,
                _ => return false,
            }
        }
        listed == indexed && listed == self.total
    }

    fn push_head(&mut self, id: u32, list: usize) {
        let zone = self.nodes[id as usize].zone as usize;
        let old = self.lru[zone].head[list];
        let n = &mut self.nodes[id as usize];
        (n.prev, n.next, n.list) = (NIL, old, list as u8);
        if old == NIL {
            self.lru[zone].tail[list] = id;
        } else {
            self.nodes[old as usize].prev = id;
        }
        self.lru[zone].head[list] = id;
        self.lru[zone].len[list] += 1;
        self.total += 1;
    }

    fn unlink(&mut self, id: u32) {
        let Node {
            prev,
            next,
            list,
            zone,
            ..
        } = self.nodes[id as usize];
        let (list, lru) = (list as usize, &mut self.lru[zone as usize]);
        match prev {
            NIL => lru.head[list] = next,
            p => self.nodes[p as usize].next = next,
        }
        match next {
            NIL => lru.tail[list] = prev,
            n => self.nodes[n as usize].prev = prev,
        }
        lru.len[list] -= 1;
        self.total -= 1;
    }
}

/// Linux's `int_sqrt`: the floor of the square root.
pub(crate) fn int_sqrt(x: u64) -> u64 {
    let mut r = (x as f64).sqrt() as u64;
    while r * r > x {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= x {
        r += 1;
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(pages: u32) -> PageCache {
        let mut c = PageCache::default();
        for i in 0..pages {
            c.insert(FileId(1), i, Pfn(100 + i as u64));
        }
        c
    }

    #[test]
    fn new_pages_enter_the_inactive_list_and_leave_from_its_tail() {
        let mut c = cache(3);
        assert_eq!(c.list_lens(0), (3, 0));
        assert_eq!(c.inactive_tail(0).map(|p| p.index), Some(0));
        assert_eq!(c.remove(FileId(1), 0), Some((Pfn(100), 0)));
        assert_eq!(c.inactive_tail(0).map(|p| p.index), Some(1));
        assert!(c.lists_consistent());
    }

    #[test]
    fn a_second_access_activates_an_inactive_page() {
        let mut c = cache(2);
        let id = c.lookup(FileId(1), 0).unwrap();
        c.mark_accessed(id);
        assert_eq!(c.list_lens(0), (1, 1));
        c.mark_accessed(id); // active: just referenced again
        assert_eq!(c.list_lens(0), (1, 1));
        assert!(!c.inactive_is_low(0, 4096));
        c.mark_accessed(c.lookup(FileId(1), 1).unwrap());
        assert_eq!(c.list_lens(0), (0, 2));
        assert!(c.inactive_is_low(0, 4096));
        assert_eq!(c.deactivate(0, 5), 2);
        assert_eq!(c.list_lens(0), (2, 0));
        assert!(c.lists_consistent());
    }

    #[test]
    fn migration_repoints_only_the_matching_page() {
        let mut c = cache(2);
        assert!(!c.set_pfn(FileId(1), 1, Pfn(5), Pfn(6)));
        assert!(c.set_pfn(FileId(1), 1, Pfn(101), Pfn(7)));
        assert_eq!(c.pfn(c.lookup(FileId(1), 1).unwrap()), Pfn(7));
        assert_eq!(c.file_pages(FileId(1)).len(), 2);
        assert_eq!(c.iter().count(), 2);
        assert_eq!(c.remove(FileId(2), 0), None);
    }

    #[test]
    fn each_zone_has_its_lists_and_a_migrated_page_follows_its_frame() {
        // Zones 0..100, 100..200, 200.. .
        let mut c = PageCache::default();
        c.set_zones(&[100, 200]);
        c.insert(FileId(1), 0, Pfn(50));
        c.insert(FileId(1), 1, Pfn(150));
        c.insert(FileId(1), 2, Pfn(250));
        c.insert(FileId(1), 3, Pfn(260));
        assert_eq!((c.zones(), c.pages()), (3, 4));
        assert_eq!(
            (c.zone_pages(0), c.zone_pages(1), c.zone_pages(2)),
            (1, 1, 2)
        );
        assert_eq!(c.inactive_tail(2).map(|p| p.index), Some(2));
        c.mark_accessed(c.lookup(FileId(1), 3).unwrap());
        c.mark_accessed(c.lookup(FileId(1), 3).unwrap());
        assert_eq!(c.list_lens(2), (1, 1));
        // Compaction moves the active page from zone 2 to zone 0: zone 0's active head.
        assert!(c.set_pfn(FileId(1), 3, Pfn(260), Pfn(10)));
        assert_eq!((c.list_lens(0), c.list_lens(2)), ((1, 1), (1, 0)));
        assert_eq!(c.deactivate(2, 5), 0);
        assert_eq!(c.deactivate(0, 5), 1);
        assert_eq!(c.inactive_tail(0).map(|p| p.index), Some(0));
        assert!(c.lists_consistent());
    }
}
