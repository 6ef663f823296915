//! The kernel memory a file costs besides its pages: its inode, its dentry and the nodes
//! of its page-cache tree, as reclaimable slab objects of Linux 4.1's x86-64 ext4 sizes
//! (on with [`Kernel::set_vfs_objects`](crate::Kernel::set_vfs_objects)). With buffer
//! heads ([`Kernel::set_buffer_heads`](crate::Kernel::set_buffer_heads), on the pages
//! written) these are what a kernel build's reclaimable slab is made of: measured on the
//! Linux 4.1 guest after a build, 64% buffer heads, 16% tree nodes, 13% inodes, 4%
//! dentries (`docs/kbuild-measurement.md`, "What 4.1's reclaimable slab is made of").
//! Each lives as long as what holds it does in Linux, which is what decides whether
//! reclaim can take it:
//!
//! - **Inode** (`ext4_inode_cache`, [`INODE_BYTES`], 16 to an order-2 slab): allocated
//!   when a file is first read or written (a lookup's `iget`, or `ext4_new_inode`), freed
//!   when the file is deleted (`iput_final` of an unlinked inode evicts it). Never shrunk:
//!   an inode is on the inode LRU, where the icache shrinker finds it, only once no dentry
//!   holds it (`iput_final` of a linked inode), and the build's were held: the guest's
//!   builds kept every inode they made (17,979 more after build 1) and its inode
//!   shrinkers dropped no page cache (`pginodesteal` 0). Chosen: an inode whose dentry
//!   the shrinker frees stays until its file is deleted (4.1 would put it on the inode
//!   LRU; the guest's build never showed that path).
//! - **Dentry** (`dentry`, [`DENTRY_BYTES`], 21 to an order-0 slab): allocated with the
//!   inode; on the dcache's LRU, the one VFS object the slab shrinker scans. Each access
//!   to the file references it again ([`SlabCaches::reference`]: `dput` sets
//!   `DCACHE_REFERENCED`), which under [`Shrinker::Linux4_1`](crate::Shrinker) spares it
//!   one more scan. Deleting the file leaves it negative (`d_delete` keeps an unused
//!   dentry and drops its inode): it stays until the shrinker frees it. A later access to
//!   a file whose dentry was shrunk looks it up again: a new dentry.
//! - **Tree nodes** (`radix_tree_node`, [`TREE_NODE_BYTES`], 14 to an order-1 slab): the
//!   nodes a file's page-cache radix tree needs for its highest page cached so far
//!   ([`tree_nodes`]; a file is taken as dense from page 0, which the model's files are),
//!   allocated as pages go in. Reclaim leaves them: since Linux 3.15 an evicted page
//!   leaves a shadow entry (`workingset_eviction`) that keeps its node, and the shadow-
//!   node shrinker only trims trees once shadow nodes outnumber an eighth of the file LRU
//!   (`count_shadow_nodes`), which the guest's build never reached (39,452 nodes after
//!   build 1: exactly four for each object of 183 pages, one for each source and header,
//!   all still there although most objects' pages had been reclaimed). Not modelled: that
//!   shrinker. They go when the file is deleted (truncation clears the shadow entries) or
//!   when `drop_caches` invalidates a file that has pages cached.
//!
//! A name looked up without being read or written
//! ([`Kernel::file_lookup`](crate::Kernel::file_lookup)) is a directory or a file
//! `stat`ed (found: its inode and dentry, as for an access) or a name that does not exist
//! (a negative dentry only, which the name takes over if its file is created later, as
//! Linux's `d_instantiate` does). The model's files have no path: a workload says which
//! directories its files lie in by looking them up.
//!
//! Not modelled: ext4's extent-status entries (40 bytes, 0.4% of the guest's reclaimable
//! slab). This module owns which objects each file holds and when they are allocated and
//! freed, on the borrow of allocation with reclaim (`Mem`, as `pagecache.rs`, which calls
//! it); the slabs are `slab.rs`'s.

use crate::api::FileId;
use crate::pressure::kmem::KmemKind;
use crate::pressure::reclaim::Mem;
use hugemm_hw::Nanos;
use std::collections::HashMap;

/// Bytes of an ext4 inode (`/proc/slabinfo`'s `objsize` of `ext4_inode_cache` on the
/// Linux 4.1 guest: 1,000, 16 to a 4-page slab).
pub const INODE_BYTES: u64 = 1000;
/// Bytes of a dentry (`dentry`: 192, 21 to a page; the same in 6.18).
pub const DENTRY_BYTES: u64 = 192;
/// Bytes of a page-cache tree node (`radix_tree_node`: 584, 14 to a 2-page slab).
pub const TREE_NODE_BYTES: u64 = 584;
/// Slots of a tree node (`RADIX_TREE_MAP_SIZE`, 1 << `RADIX_TREE_MAP_SHIFT` = 6).
const TREE_SLOTS: u64 = 64;

/// Nodes of a radix tree holding pages `0..pages`: none for a single page (kept in the
/// root: `radix_tree_insert` at height 0), else a leaf for every 64 pages and the levels
/// above them up to a single root.
pub fn tree_nodes(pages: u64) -> u64 {
    if pages <= 1 {
        return 0;
    }
    let (mut nodes, mut span) = (0, pages);
    loop {
        let level = span.div_ceil(TREE_SLOTS);
        nodes += level;
        if level <= 1 {
            return nodes;
        }
        span = level;
    }
}

/// The slab caches of the VFS objects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct VfsCaches {
    pub inode: usize,
    pub dentry: usize,
    pub tree_node: usize,
}

/// One file's objects (slab ids; 0: none).
#[derive(Clone, Debug, Default)]
pub(crate) struct FileObjects {
    /// Its inode, while the file exists.
    pub inode: u64,
    /// Its dentry: positive while the inode is there, negative after deletion. The
    /// shrinker may have freed it (then its id is only a handle to release).
    pub dentry: u64,
    /// Its page-cache tree nodes.
    pub nodes: Vec<u64>,
}

/// Every file's VFS objects.
#[derive(Clone, Debug)]
pub(crate) struct Vfs {
    pub caches: VfsCaches,
    files: HashMap<u32, FileObjects>,
}

impl Vfs {
    pub fn new(caches: VfsCaches) -> Vfs {
        Vfs {
            caches,
            files: HashMap::new(),
        }
    }

    /// The inode and dentry of `file` (0: none).
    pub fn names(&self, file: FileId) -> (u64, u64) {
        self.files
            .get(&file.0)
            .map_or((0, 0), |f| (f.inode, f.dentry))
    }

    /// The tree nodes `file` holds.
    pub fn nodes(&self, file: FileId) -> u64 {
        self.files.get(&file.0).map_or(0, |f| f.nodes.len() as u64)
    }

    fn file_mut(&mut self, file: FileId) -> &mut FileObjects {
        self.files.entry(file.0).or_default()
    }

    /// Every id held whose object must be live: inodes and tree nodes (a dentry may have
    /// been shrunk), for the invariant check.
    pub fn held_live(&self) -> impl Iterator<Item = u64> + '_ {
        self.files.values().flat_map(|f| {
            std::iter::once(f.inode)
                .filter(|&id| id != 0)
                .chain(f.nodes.iter().copied())
        })
    }
}

impl Mem<'_> {
    /// Look `file` up before it is read or written: give it an inode if it has none and a
    /// dentry if it has none or the shrinker freed it, else reference its dentry again.
    /// Returns the direct-reclaim time new slabs needed. An object no slab could be had
    /// for is left out and tried again at the next access.
    pub(crate) fn vfs_lookup(&mut self, file: FileId) -> Nanos {
        let Some(vfs) = &self.cache.vfs else {
            return Nanos::ZERO;
        };
        let caches = vfs.caches;
        let mut cost = Nanos::ZERO;
        if vfs.names(file).0 == 0 {
            if let Ok((id, _, reclaim)) = self.slab_alloc(caches.inode) {
                cost += reclaim;
                self.vfs_mut().file_mut(file).inode = id;
            }
        }
        cost += self.vfs_dentry(file);
        self.sync_vfs_stats();
        cost
    }

    /// Reference `file`'s dentry again, or give it one if it has none or the shrinker
    /// freed it; returns the direct-reclaim time a new slab needed.
    fn vfs_dentry(&mut self, file: FileId) -> Nanos {
        let vfs = self.vfs_mut();
        let (cache, dentry) = (vfs.caches.dentry, vfs.names(file).1);
        if dentry != 0 && self.slab.is_live(dentry) {
            self.slab.reference(dentry);
            return Nanos::ZERO;
        }
        if dentry != 0 {
            // Shrunk: only the handle is left.
            self.slab_free(dentry);
            self.vfs_mut().file_mut(file).dentry = 0;
        }
        match self.slab_alloc(cache) {
            Ok((id, _, reclaim)) => {
                self.vfs_mut().file_mut(file).dentry = id;
                reclaim
            }
            Err(_) => Nanos::ZERO,
        }
    }

    /// Look `file`'s name up without reading or writing it (a `stat`, or the walk through
    /// a directory on the way to a file): `found`, the name exists and gets its inode and
    /// dentry as for an access ([`Mem::vfs_lookup`]); else the lookup fails and leaves a
    /// negative dentry (`d_add` of a dentry without an inode after `ext4_lookup` found
    /// nothing), or references the one it left before. A name whose file exists is found
    /// whatever `found` says: the model's inodes are its files' existence. Returns the
    /// direct-reclaim time new slabs needed.
    pub(crate) fn vfs_lookup_name(&mut self, file: FileId, found: bool) -> Nanos {
        let Some(vfs) = &self.cache.vfs else {
            return Nanos::ZERO;
        };
        if found || vfs.names(file).0 != 0 {
            return self.vfs_lookup(file);
        }
        let cost = self.vfs_dentry(file);
        self.sync_vfs_stats();
        cost
    }

    /// Grow `file`'s tree to `nodes` nodes (it has fewer); returns the direct-reclaim
    /// time and the nodes it now has (fewer if no slab could be had).
    pub(crate) fn vfs_grow(&mut self, file: FileId, nodes: u64) -> (Nanos, u64) {
        let Some(vfs) = &self.cache.vfs else {
            return (Nanos::ZERO, 0);
        };
        let c = vfs.caches.tree_node;
        let mut have = vfs.nodes(file);
        let mut cost = Nanos::ZERO;
        while have < nodes {
            let Ok((id, _, reclaim)) = self.slab_alloc(c) else {
                break;
            };
            cost += reclaim;
            self.vfs_mut().file_mut(file).nodes.push(id);
            have += 1;
        }
        self.sync_vfs_stats();
        (cost, have)
    }

    /// `file` was deleted (its pages are gone): free its inode and tree nodes; its dentry
    /// stays, negative.
    pub(crate) fn vfs_delete(&mut self, file: FileId) {
        let Some(f) = self
            .cache
            .vfs
            .as_mut()
            .and_then(|v| v.files.get_mut(&file.0))
        else {
            return;
        };
        let inode = std::mem::take(&mut f.inode);
        if inode != 0 {
            self.slab_free(inode);
        }
        self.vfs_drop_tree(file);
    }

    /// `drop_caches` invalidated `file`'s pages: free its tree nodes (and their shadow
    /// entries); the inode and dentry stay.
    pub(crate) fn vfs_drop_tree(&mut self, file: FileId) {
        let Some(vfs) = &mut self.cache.vfs else {
            return;
        };
        let Some(f) = vfs.files.get_mut(&file.0) else {
            return;
        };
        for id in std::mem::take(&mut f.nodes) {
            self.slab_free(id);
        }
        self.sync_vfs_stats();
    }

    fn vfs_mut(&mut self) -> &mut Vfs {
        self.cache.vfs.as_mut().expect("called with VFS objects on")
    }

    /// The live-object gauges and the reclaimable slab follow the VFS's caches.
    pub(crate) fn sync_vfs_stats(&mut self) {
        if let Some(vfs) = &self.cache.vfs {
            let c = vfs.caches;
            self.stats.vfs_inodes = self.slab.live_objects(c.inode);
            self.stats.vfs_dentries = self.slab.live_objects(c.dentry);
            self.stats.vfs_tree_nodes = self.slab.live_objects(c.tree_node);
        }
        self.stats.kmem_reclaimable_pages = self.slab.frames(KmemKind::Reclaimable);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::kernel;
    use crate::{Kernel, Shrinker};

    /// Live (inodes, dentries, tree nodes).
    fn census(k: &Kernel) -> (u64, u64, u64) {
        let s = k.stats();
        (s.vfs_inodes, s.vfs_dentries, s.vfs_tree_nodes)
    }

    #[test]
    fn a_file_holds_its_inode_and_tree_until_deleted_and_its_dentry_after() {
        let mut k = kernel(64);
        k.file_write(FileId(1), 0, 183);
        assert_eq!(census(&k), (0, 0, 0), "off by default");
        k.file_delete(FileId(1));
        k.set_vfs_objects().unwrap();
        k.file_write(FileId(1), 0, 183);
        assert_eq!(census(&k), (1, 1, 4));
        // An inode's order-2 slab, a dentry's page and a tree node's order-1 slab.
        assert_eq!(k.stats().kmem_reclaimable_pages, 4 + 1 + 2);
        k.file_read(FileId(2), 0, 1);
        assert_eq!(census(&k), (2, 2, 4), "a one-page file has no tree node");
        assert_eq!(k.stats().kmem_reclaimable_pages, 7, "objects share slabs");
        k.check_invariants().unwrap();
        // Reclaim takes every page and shrinks the dentries (the default shrinker frees
        // what it scans); the inodes and the tree nodes, holding shadow entries, stay.
        k.reclaim(184);
        assert_eq!(k.page_cache_pages(), 0);
        assert_eq!(census(&k), (2, 0, 4));
        k.check_invariants().unwrap();
        // A lookup after the shrinker took the dentry makes a new one, not a new inode.
        k.file_read(FileId(1), 0, 1);
        assert_eq!(census(&k), (2, 1, 4));
        // drop_caches frees the trees of the files it finds pages of, not their inodes.
        k.drop_caches();
        assert_eq!(census(&k), (2, 1, 0));
        // Deleting a file frees its inode; its dentry stays, negative.
        k.file_write(FileId(1), 0, 100);
        assert_eq!(census(&k), (2, 1, 3));
        k.file_delete(FileId(1));
        assert_eq!(census(&k), (1, 1, 0));
        k.check_invariants().unwrap();
    }

    #[test]
    fn a_name_not_found_leaves_a_negative_dentry_that_its_file_later_takes() {
        let mut k = kernel(64);
        assert_eq!(k.file_lookup(FileId(5), false), Nanos::ZERO);
        assert_eq!(census(&k), (0, 0, 0), "off by default");
        k.set_vfs_objects().unwrap();
        k.file_lookup(FileId(5), false);
        k.file_lookup(FileId(5), false);
        assert_eq!(
            census(&k),
            (0, 1, 0),
            "one negative dentry, looked up twice"
        );
        k.file_lookup(FileId(6), true);
        assert_eq!(
            census(&k),
            (1, 2, 0),
            "a directory found: its inode and dentry"
        );
        assert_eq!(k.stats().kmem_reclaimable_pages, 4 + 1);
        // The name is created: its negative dentry takes the new inode.
        k.file_write(FileId(5), 0, 2);
        assert_eq!(census(&k), (2, 2, 1));
        // A file that exists is found whatever the lookup says.
        k.file_lookup(FileId(5), false);
        assert_eq!(census(&k), (2, 2, 1));
        k.file_delete(FileId(5));
        assert_eq!(census(&k), (1, 2, 0), "negative again");
        k.check_invariants().unwrap();
        // The shrinker frees negative dentries like any other; a later lookup makes one.
        k.reclaim(1);
        assert_eq!(census(&k).1, 0);
        k.file_lookup(FileId(5), false);
        assert_eq!(census(&k), (1, 1, 0));
        k.check_invariants().unwrap();
    }

    /// Under Linux 4.1's LRUs a dentry enters referenced and a lookup references it
    /// again: after both dentries were rotated once, the one whose file was read since is
    /// rotated a second time where the other is freed.
    #[test]
    fn a_lookup_references_the_dentry_again_under_linux_4_1() {
        let run = |read_again: bool| {
            let mut k = kernel(64);
            k.set_vfs_objects().unwrap();
            k.set_shrinker(Shrinker::Linux4_1);
            k.file_read(FileId(1), 0, 1);
            k.file_read(FileId(2), 0, 1);
            k.drop_caches();
            // Two objects' work: both dentries are scanned once, referenced: rotated.
            k.slab.charge_pages(2);
            assert!(k.slab.shrink_due().is_empty());
            if read_again {
                k.file_read(FileId(1), 0, 1);
                k.drop_caches();
            }
            // Reclaim with nothing cached shrinks until a page is free: both dentries.
            k.reclaim(1);
            assert_eq!(census(&k), (2, 0, 0), "the inodes stay");
            k.check_invariants().unwrap();
            (
                k.stats().slab_rotated_objects,
                k.stats().slab_shrunk_objects,
            )
        };
        assert_eq!(run(false), (2, 2));
        assert_eq!(run(true), (3, 2), "the dentry read again is rotated again");
    }

    #[test]
    fn a_tree_has_a_leaf_per_64_pages_and_levels_up_to_one_root() {
        assert_eq!(tree_nodes(0), 0);
        assert_eq!(tree_nodes(1), 0, "one page sits in the root");
        assert_eq!(tree_nodes(2), 1);
        assert_eq!(tree_nodes(64), 1);
        assert_eq!(tree_nodes(65), 3, "two leaves and a root");
        // The guest's objects: 750 KiB, 183 pages, four nodes each (39,452 nodes after
        // build 1 = 7,000 objects x 4 + a node for each source and header).
        assert_eq!(tree_nodes(183), 4);
        assert_eq!(tree_nodes(4096), 65);
        assert_eq!(tree_nodes(4097), 65 + 2 + 1);
    }
}
