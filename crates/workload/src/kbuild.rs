//! System workloads that fragment physical memory the way the papers do: a kernel build
//! (APSys'16 sections 3 and 5, HawkEye section 4), a file reader (HawkEye's fragmenter)
//! and memhog (mmtests).
//!
//! Each builder returns plain [`ProcessSpec`]s; the engine carries them out like any other
//! process. Every number below is an assumption about the real program, written next to
//! its default with the reason; none is fitted to a paper's result.

use crate::builtin::touch;
use crate::spec::*;
use hugemm_hw::Nanos;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const PAGE: u64 = 4 * KIB;

/// A kernel build (`make -j<jobs>`, run `builds` times with `make clean` between), as the
/// kernel and page-cache activity it causes.
///
/// `jobs` worker processes share the compilation units; each unit forks a compiler that
/// allocates kernel memory (its stack, task and mm structures, VMAs, open files: unmovable,
/// freed when it exits; a few slab pages pinned much longer by objects that outlive it;
/// dentries and inodes of the files it opens: reclaimable), reads its source and some
/// headers through the page cache, builds an anonymous heap, computes, writes an
/// object-sized temporary that is deleted again (modversions' `.tmp_foo.o`, or an
/// assembler file) and an object file that stays cached. With `cmd_bytes`,
/// `depfile_bytes`, `directories` and the `missing_*` counts it also writes kbuild's own
/// files and looks up the names a real build does (`docs/kbuild-measurement.md`, "A real
/// build's names"). A second build first deletes the objects (and `.cmd` files) of the
/// first (`make clean`).
#[derive(Clone, Debug, PartialEq)]
pub struct KernelBuild {
    /// Parallel jobs (`make -j`), one worker process each.
    pub jobs: u32,
    /// Consecutive builds.
    pub builds: u32,
    /// Compilation units per build. Default 2,000: a distribution config builds a few
    /// thousand objects.
    pub units: u32,
    /// Source bytes in all (each unit reads its share once). Default 800 MiB: a Linux 4.x
    /// tree without `.git`.
    pub source_bytes: u64,
    /// Header files in the shared pool, and bytes of each. Default 4,000 x 16 KiB.
    pub headers: u32,
    /// Bytes of one header file.
    pub header_bytes: u64,
    /// Headers each unit reads (mostly page-cache hits after the first units). Default 8.
    pub header_reads: u32,
    /// Object bytes in all, written to the page cache. Default 1.5 GiB: objects and
    /// modules of a distribution config with debug information.
    pub object_bytes: u64,
    /// Compiler heap per unit, drawn uniformly in `[min, max]`. Default 16..64 MiB
    /// (cc1's resident size on kernel sources).
    pub heap_bytes: (u64, u64),
    /// Compute time of one unit. Default 300 ms.
    pub compute: Nanos,
    /// Unmovable slab objects per unit, freed when the unit ends. Default 96 KiB (an
    /// assumption): task and mm structures, VMAs, anon_vma, open files of the unit's
    /// processes (a kernel stack comes on top, as a page allocation).
    pub unmovable_per_unit: u64,
    /// Unmovable page allocations per unit, in order-0 pages freed when the unit ends:
    /// the page tables of the unit's short-lived processes (make's shell, the compiler
    /// driver, the assembler, fixdep; the model maps only the compiler's heap and
    /// allocates its page tables itself), the TLB-gather batches of their unmaps, pipe
    /// buffers. Default 0: `unmovable_per_unit` stood for them before they were measured.
    /// Measured on Linux 6.18 here (`tools/kbuild-probe/pagealloc.py`,
    /// `docs/kbuild-measurement.md`): 2,559 KiB of unmovable page allocations per unit,
    /// so about 2,400 KiB less the compiler heap's page tables (about 80 KiB) and new
    /// slab pages (35 KiB), which the model makes itself;
    /// `experiments/apsys16/traced-build-slub.toml` uses that. They live for
    /// `unmovable_pages_lifetime`.
    pub unmovable_pages_per_unit: u64,
    /// Mean lifetime of those pages (each drawn from an exponential law). Default 265
    /// ms, measured with them (`pagealloc.py --lifetimes`): page tables lived a mean 349
    /// ms (median 25 ms: most belong to short-lived processes; 90th percentile 990 ms,
    /// the compiler's), TLB-gather batches 7.9 ms; 265 ms is the mean weighted by their
    /// bytes. The mean is what matters for how many coexist (Little's law).
    pub unmovable_pages_lifetime: Nanos,
    /// Unmovable kernel memory per unit kept for much longer (slab pages pinned by a few
    /// long-lived objects). Default 626 bytes, measured: `SUnreclaim` grew 1.5 MiB over
    /// the 2,531 compilation units of a real build (docs/kbuild-measurement.md). Amounts
    /// below a page accumulate over units: a page is allocated whenever a whole one is due.
    pub pinned_per_unit: u64,
    /// Mean lifetime of the pinned pages. Default 600 s.
    pub pinned_lifetime: Nanos,
    /// Reclaimable kernel memory per unit: the inodes, dentries, buffer heads and
    /// page-cache tree nodes of the files a unit reads and writes. Default 18 KiB,
    /// measured: `SReclaimable` grew 44.4 MiB over the 2,531 units of a real build
    /// (docs/kbuild-measurement.md). Accumulates over units like `pinned_per_unit`.
    pub reclaimable_per_unit: u64,
    /// How reclaimable memory splits over slab orders 0, 1 and 2, in percent of its
    /// bytes. Default `[32, 11, 57]`, measured from the reclaimable slab caches that grew
    /// in that build: inodes live in order-2 slabs (57% of the growth), page-cache tree
    /// nodes in order-1 slabs (11%), dentries, buffer heads and extent-status entries in
    /// order-0 slabs (32%).
    pub reclaimable_order_percent: [u8; 3],
    /// The slab order and object size of the unit's unmovable slab memory
    /// (`unmovable_per_unit` and `pinned_per_unit` share the cache, as a task's
    /// short-lived structures and the few objects that outlive it share slabs in Linux).
    /// Default order 0, 4,096 bytes: an object as large as its slab, so each is a page
    /// allocation of its own (whole pages, the model's kernel memory before slab
    /// objects). Order 1 and 512 bytes is `kmalloc-512`, which with `lsm_inode_cache` is
    /// the unmovable cache that grew in the measured build (`docs/kbuild-measurement.md`;
    /// 16 objects a slab); `experiments/apsys16/traced-build-slub.toml` runs it, and the
    /// README there says why it is not the default.
    pub unmovable_object: (u8, u64),
    /// Bytes of one reclaimable object in the slabs of order 0, 1 and 2. Default `[4096,
    /// 8192, 16384]`: whole slabs (page allocations). The measured caches' objects are
    /// `[192, 584, 1128]`: `objsize` in `/proc/slabinfo` of `dentry` (21 a page),
    /// `radix_tree_node` (14 an order-1 slab) and `ext4_inode_cache` (14 an order-2 slab),
    /// the largest grower of each order in the measured build, read on this project's
    /// Linux 6.18 machine (`buffer_head`, 104 bytes, grew as much as `dentry`).
    pub reclaimable_object_bytes: [u64; 3],
    /// Mean lifetime of reclaimable memory when nothing presses on memory (its files are
    /// deleted or their dentries and inodes age out). Default 1,200 s: the measured
    /// build's reclaimable slab only grew. Under memory pressure the kernel's slab
    /// shrinker frees it sooner (`hugemm_mm`'s `slab.rs`).
    pub reclaimable_lifetime: Nanos,
    /// Whether a unit's reclaimable memory lives until its object file is deleted (the
    /// next build's `make clean`) instead of for `reclaimable_lifetime`: the dentries and
    /// inodes of a unit's files stay cached until the files go or the slab shrinker frees
    /// them, as measured (`docs/kbuild-measurement.md`: `SReclaimable` only grew during
    /// a build, on Linux 6.18 as on the Linux 4.1 guest, and the second build after
    /// `make clean` added none). Default false (every published run used the lifetime).
    pub reclaimable_until_clean: bool,
    /// Bytes of the units' `.cmd` files in all, one a unit, written after its object and
    /// kept until the next build's `make clean`: kbuild's record of the unit's command
    /// and of every header it read (fixdep writes `.foo.o.tmp` from the dependency file
    /// and renames it `.foo.o.cmd`; a rename moves the dentry, so the model writes the
    /// `.cmd` under its own name). Default 0: none.
    pub cmd_bytes: u64,
    /// Bytes of the units' dependency files in all, one a unit (`.foo.o.d`, written by
    /// the compiler's `-Wp,-MD`, read by fixdep and deleted: a temporary that leaves a
    /// negative dentry). Default 0: none.
    pub depfile_bytes: u64,
    /// Directories the build's files lie in, each a name looked up and found (an inode
    /// and a dentry the build never deletes: `make clean` leaves directories): the units
    /// are split over them in order, and each looks its directory up before reading its
    /// source. Default 0: none.
    pub directories: u32,
    /// Names the build looks up and never finds, a negative dentry each: the compiler's
    /// probes of its include path for headers that live in a later directory of it,
    /// kbuild's optional files, `PATH` searches. Default 0: none.
    pub missing_names: u32,
    /// Of those, the names each unit looks up (drawn at random from them, as headers
    /// are; a name looked up again references its dentry). Default 0.
    pub missing_lookups: u32,
    /// Names each unit looks up and never finds that are its own (the same in every
    /// build): the compiler's probe for a precompiled `foo.c.gch`, modversions' probe for
    /// `foo.symref`. Looked up before the unit reads its source. Default 0: none.
    pub missing_per_unit: u32,
    /// Seed of the builder's own choices (heap sizes, headers read).
    pub seed: u64,
}

impl Default for KernelBuild {
    fn default() -> Self {
        KernelBuild {
            jobs: 2,
            builds: 1,
            units: 2_000,
            source_bytes: 800 * MIB,
            headers: 4_000,
            header_bytes: 16 * KIB,
            header_reads: 8,
            object_bytes: 1536 * MIB,
            heap_bytes: (16 * MIB, 64 * MIB),
            compute: Nanos::from_millis(300),
            unmovable_per_unit: 96 * KIB,
            unmovable_pages_per_unit: 0,
            unmovable_pages_lifetime: Nanos::from_millis(265),
            pinned_per_unit: 626,
            pinned_lifetime: Nanos::from_millis(600_000),
            reclaimable_per_unit: 18 * KIB,
            reclaimable_order_percent: [32, 11, 57],
            unmovable_object: (0, PAGE),
            reclaimable_object_bytes: [PAGE, 2 * PAGE, 4 * PAGE],
            reclaimable_lifetime: Nanos::from_millis(1_200_000),
            reclaimable_until_clean: false,
            cmd_bytes: 0,
            depfile_bytes: 0,
            directories: 0,
            missing_names: 0,
            missing_lookups: 0,
            missing_per_unit: 0,
            seed: 1,
        }
    }
}

/// Hands out file ids so that several generated workloads never share a file by accident.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileIds {
    next: u32,
}

impl FileIds {
    /// Ids from `first` up.
    pub fn from(first: u32) -> FileIds {
        FileIds { next: first }
    }

    /// A fresh id.
    pub fn fresh(&mut self) -> FileId {
        self.next += 1;
        FileId(self.next - 1)
    }

    /// The next id that would be handed out.
    pub fn peek(&self) -> u32 {
        self.next
    }
}

impl KernelBuild {
    /// The worker processes, named `<name>-<job>`, starting at `start`.
    ///
    /// A unit's files keep their names from one build to the next (a real tree rebuilds
    /// `foo.o` where `make clean` deleted it: the name's negative dentry is found again
    /// and given the new inode); the names are handed out in the first build, in the
    /// order its units run.
    pub fn processes(&self, name: &str, start: Nanos, ids: &mut FileIds) -> Vec<ProcessSpec> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(self.seed);
        let jobs = self.jobs.max(1);
        let headers: Vec<FileId> = (0..self.headers).map(|_| ids.fresh()).collect();
        let sources: Vec<FileId> = (0..self.units).map(|_| ids.fresh()).collect();
        let names = Names {
            headers,
            directories: (0..self.directories).map(|_| ids.fresh()).collect(),
            missing: (0..self.missing_names).map(|_| ids.fresh()).collect(),
        };
        let mut phases: Vec<Vec<Phase>> = vec![Vec::new(); jobs as usize];
        let mut kept: Vec<Vec<FileId>> = vec![Vec::new(); jobs as usize];
        let mut units: Vec<UnitFiles> = Vec::with_capacity(self.units as usize);
        let mut owed = Owed::default();
        for build in 0..self.builds {
            for (job, old) in kept.iter_mut().enumerate() {
                if build > 0 {
                    let clean = old.drain(..).map(|file| Phase::FileDelete { file });
                    phases[job].extend(clean);
                }
            }
            for unit in 0..self.units {
                let job = (unit % jobs) as usize;
                if build == 0 {
                    units.push(self.unit_files(ids));
                }
                let files = units[unit as usize];
                kept[job].push(files.object);
                kept[job].extend(files.cmd);
                let source = sources[unit as usize];
                let directory = (!names.directories.is_empty()).then(|| {
                    let d = u64::from(unit) * names.directories.len() as u64
                        / u64::from(self.units.max(1));
                    names.directories[d as usize]
                });
                let unit_phases = self.unit(&mut rng, &mut owed, source, directory, &names, files);
                phases[job].extend(unit_phases);
            }
        }
        phases
            .into_iter()
            .enumerate()
            .map(|(job, phases)| ProcessSpec {
                name: format!("{name}-{job}"),
                start,
                core: None,
                phases,
            })
            .collect()
    }

    /// A unit's names: its object and temporary, and its `.cmd` and dependency file if
    /// the build has them.
    fn unit_files(&self, ids: &mut FileIds) -> UnitFiles {
        let object = ids.fresh();
        let temp = ids.fresh();
        let cmd = (self.cmd_bytes > 0).then(|| ids.fresh());
        let depfile = (self.depfile_bytes > 0).then(|| ids.fresh());
        let missing = FileId(ids.peek());
        for _ in 0..self.missing_per_unit {
            ids.fresh();
        }
        UnitFiles {
            object,
            temp,
            cmd,
            depfile,
            missing,
        }
    }

    fn unit(
        &self,
        rng: &mut Xoshiro256PlusPlus,
        owed: &mut Owed,
        source: FileId,
        directory: Option<FileId>,
        names: &Names,
        files: UnitFiles,
    ) -> Vec<Phase> {
        let units = u64::from(self.units.max(1));
        let heap = BufferId(0);
        let (lo, hi) = self.heap_bytes;
        let heap_bytes = round_page(rng.gen_range(lo..=hi.max(lo)));
        let unit_life = Lifetime::Fixed(Nanos(self.compute.0 + self.compute.0 / 10));
        let UnitFiles {
            object,
            temp,
            cmd,
            depfile,
            missing,
        } = files;
        let object_bytes = (self.object_bytes / units).max(4 * KIB);
        let (slab_order, slab_object) = self.unmovable_object;
        let mut v = vec![
            kalloc(KernelMem::Unmovable, 2, None, 16 * KIB, unit_life),
            kalloc(
                KernelMem::Unmovable,
                slab_order,
                Some(slab_object),
                self.unmovable_per_unit,
                unit_life,
            ),
        ];
        v.push(kalloc(
            KernelMem::Unmovable,
            0,
            None,
            self.unmovable_pages_per_unit,
            Lifetime::Exponential(self.unmovable_pages_lifetime),
        ));
        let pinned = owed.pinned.take(self.pinned_per_unit, slab_object);
        let pinned_life = Lifetime::Exponential(self.pinned_lifetime);
        v.push(kalloc(
            KernelMem::Unmovable,
            slab_order,
            Some(slab_object),
            pinned,
            pinned_life,
        ));
        for (order, percent) in self.reclaimable_order_percent.iter().enumerate() {
            let bytes = self.reclaimable_per_unit * u64::from(*percent) / 100;
            let size = self.reclaimable_object_bytes[order];
            let due = owed.reclaimable[order].take(bytes, size);
            let life = if self.reclaimable_until_clean {
                Lifetime::UntilDeleted(object)
            } else {
                Lifetime::Exponential(self.reclaimable_lifetime)
            };
            v.push(kalloc(
                KernelMem::Reclaimable,
                order as u8,
                Some(size),
                due,
                life,
            ));
        }
        v.retain(|ph| !matches!(ph, Phase::KernelAlloc { bytes: 0, .. }));
        if let Some(file) = directory {
            v.push(Phase::FileLookup { file, found: true });
        }
        for n in 0..self.missing_per_unit {
            let file = FileId(missing.0 + n);
            v.push(Phase::FileLookup { file, found: false });
        }
        if !names.missing.is_empty() {
            for _ in 0..self.missing_lookups {
                let file = names.missing[rng.gen_range(0..names.missing.len())];
                v.push(Phase::FileLookup { file, found: false });
            }
        }
        v.push(read(source, (self.source_bytes / units).max(4 * KIB)));
        let headers = &names.headers;
        if !headers.is_empty() {
            for _ in 0..self.header_reads {
                let h = headers[rng.gen_range(0..headers.len())];
                v.push(read(h, self.header_bytes));
            }
        }
        v.extend([
            Phase::Mmap {
                buffer: heap,
                bytes: heap_bytes,
                advice: Advice::Default,
            },
            Phase::Access(touch(heap, heap_bytes)),
            Phase::Sleep(self.compute),
        ]);
        let share = |total: u64| (total / units).max(4 * KIB);
        if let Some(d) = depfile {
            v.push(write(d, share(self.depfile_bytes)));
        }
        v.extend([
            write(temp, object_bytes),
            Phase::FileDelete { file: temp },
            write(object, object_bytes),
            Phase::Munmap { buffer: heap },
        ]);
        // fixdep, after the compiler exits: the dependency file becomes the `.cmd`.
        if let Some(d) = depfile {
            v.extend([
                read(d, share(self.depfile_bytes)),
                Phase::FileDelete { file: d },
            ]);
        }
        if let Some(c) = cmd {
            v.push(write(c, share(self.cmd_bytes)));
        }
        v
    }
}

/// The names a build shares between its units.
struct Names {
    headers: Vec<FileId>,
    directories: Vec<FileId>,
    missing: Vec<FileId>,
}

/// A unit's own files, the same names in every build.
#[derive(Clone, Copy)]
struct UnitFiles {
    object: FileId,
    temp: FileId,
    cmd: Option<FileId>,
    depfile: Option<FileId>,
    /// The first of its `missing_per_unit` names never found (consecutive ids).
    missing: FileId,
}

/// Kernel memory owed across units, so that per-unit amounts below an object (a measured
/// 626 bytes of pinned slab per unit, say) are neither lost nor rounded up to an object
/// per unit: each account allocates the whole objects due so far and carries the rest.
#[derive(Default)]
struct Owed {
    pinned: Account,
    reclaimable: [Account; 3],
}

#[derive(Default)]
struct Account(u64);

impl Account {
    /// Adds `bytes`; returns the bytes of whole `block`s (objects) now due, keeping the
    /// remainder.
    fn take(&mut self, bytes: u64, block: u64) -> u64 {
        self.0 += bytes;
        let due = self.0 / block * block;
        self.0 -= due;
        due
    }
}

fn round_page(bytes: u64) -> u64 {
    bytes.div_ceil(PAGE) * PAGE
}

fn kalloc(
    kind: KernelMem,
    order: u8,
    object_bytes: Option<u64>,
    bytes: u64,
    lifetime: Lifetime,
) -> Phase {
    Phase::KernelAlloc {
        kind,
        order,
        object_bytes,
        bytes,
        lifetime,
    }
}

fn read(file: FileId, bytes: u64) -> Phase {
    Phase::FileRead {
        file,
        offset: 0,
        bytes,
    }
}

fn write(file: FileId, bytes: u64) -> Phase {
    Phase::FileWrite {
        file,
        offset: 0,
        bytes,
    }
}

/// HawkEye's fragmenter (section 4: "we fragment memory by reading files"): read
/// `files` files of `bytes_each` through the page cache, one after another, and exit. The
/// pages stay cached, interleaved with whatever else was allocated meanwhile, until
/// reclaim or `drop_caches` frees them.
///
/// With `delete_every = n > 0`, every `n`-th file is deleted once all are read (as a
/// build or a log rotation leaves a file system): free memory is then scattered in
/// file-sized holes between cached pages, and reclaiming the cache in LRU order (the order
/// it was read) does not give back whole 2 MB blocks until a block's every file has gone.
/// Without it, reclaim frees the files in the order they were laid out and memory is
/// barely fragmented once the cache is under pressure.
pub fn file_reader(
    name: &str,
    files: u32,
    bytes_each: u64,
    delete_every: u32,
    ids: &mut FileIds,
) -> ProcessSpec {
    let read_ids: Vec<FileId> = (0..files).map(|_| ids.fresh()).collect();
    let mut phases: Vec<Phase> = read_ids.iter().map(|&f| read(f, bytes_each)).collect();
    if delete_every > 0 {
        phases.extend(
            read_ids
                .iter()
                .skip(delete_every as usize - 1)
                .step_by(delete_every as usize)
                .map(|&file| Phase::FileDelete { file }),
        );
    }
    ProcessSpec {
        name: name.into(),
        start: Nanos::ZERO,
        core: None,
        phases,
    }
}

/// mmtests' memhog: map `bytes` of anonymous memory, write every page, hold it for
/// `hold`, and free it (putting the page cache and everything movable under pressure).
pub fn memhog(name: &str, bytes: u64, hold: Nanos) -> ProcessSpec {
    let buffer = BufferId(0);
    ProcessSpec {
        name: name.into(),
        start: Nanos::ZERO,
        core: None,
        phases: vec![
            Phase::Mmap {
                buffer,
                bytes,
                advice: Advice::Default,
            },
            Phase::Access(touch(buffer, bytes)),
            Phase::Sleep(hold),
            Phase::Munmap { buffer },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn small() -> KernelBuild {
        KernelBuild {
            units: 10,
            builds: 2,
            headers: 5,
            ..KernelBuild::default()
        }
    }

    #[test]
    fn a_build_splits_its_units_over_the_jobs() {
        let mut ids = FileIds::from(0);
        let procs = small().processes("make", Nanos::ZERO, &mut ids);
        assert_eq!(procs.len(), 2);
        let mmaps = |p: &ProcessSpec| {
            p.phases
                .iter()
                .filter(|ph| matches!(ph, Phase::Mmap { .. }))
                .count()
        };
        // 10 units x 2 builds over 2 jobs.
        assert_eq!(mmaps(&procs[0]) + mmaps(&procs[1]), 20);
        assert_eq!(mmaps(&procs[0]), 10);
    }

    #[test]
    fn the_second_build_deletes_the_first_builds_objects() {
        let mut ids = FileIds::from(0);
        let procs = small().processes("make", Nanos::ZERO, &mut ids);
        let deletes: usize = procs
            .iter()
            .flat_map(|p| &p.phases)
            .filter(|ph| matches!(ph, Phase::FileDelete { .. }))
            .count();
        // One temporary file per unit per build, plus the first build's 10 objects.
        assert_eq!(deletes, 20 + 10);
    }

    /// A real build's files: a unit's `.cmd` kept until `make clean`, its dependency file
    /// deleted, its directory and the names its compiler probes for looked up, and every
    /// name the same in the second build.
    #[test]
    fn a_unit_keeps_its_names_from_one_build_to_the_next() {
        let build = KernelBuild {
            cmd_bytes: 10 * 48 * KIB,
            depfile_bytes: 10 * 40 * KIB,
            directories: 2,
            missing_names: 3,
            missing_lookups: 2,
            missing_per_unit: 2,
            ..small()
        };
        let procs = build.processes("make", Nanos::ZERO, &mut FileIds::from(0));
        let (mut written, mut writes, mut deletes) = (BTreeSet::new(), 0, 0);
        let (mut found, mut missing, mut missing_lookups) = (BTreeSet::new(), BTreeSet::new(), 0);
        for ph in procs.iter().flat_map(|p| &p.phases) {
            match ph {
                Phase::FileWrite { file, .. } => {
                    written.insert(*file);
                    writes += 1;
                }
                Phase::FileDelete { .. } => deletes += 1,
                Phase::FileLookup { file, found: true } => {
                    found.insert(*file);
                }
                Phase::FileLookup { file, found: false } => {
                    missing.insert(*file);
                    missing_lookups += 1;
                }
                _ => {}
            }
        }
        // Per unit an object, a temporary, a `.cmd` and a dependency file: 40 names,
        // each written in both builds.
        assert_eq!((written.len(), writes), (40, 80));
        // Per unit and build the temporary and the dependency file; then the clean of
        // the first build's objects and `.cmd` files.
        assert_eq!(deletes, 2 * 10 * 2 + 2 * 10);
        assert_eq!(found.len(), 2, "two directories");
        // Three shared names and two of each unit's own, looked up in both builds.
        assert!(missing.len() > 2 * 10 && missing.len() <= 3 + 2 * 10);
        assert_eq!(missing_lookups, (2 + 2) * 10 * 2);
        assert!(found.is_disjoint(&missing));
        assert!(written.is_disjoint(&found) && written.is_disjoint(&missing));
    }

    #[test]
    fn the_same_seed_gives_the_same_build_and_ids_never_collide() {
        let (mut a, mut b) = (FileIds::from(100), FileIds::from(100));
        let pa = small().processes("m", Nanos::ZERO, &mut a);
        let pb = small().processes("m", Nanos::ZERO, &mut b);
        assert_eq!(pa, pb);
        let reader = file_reader("r", 3, 1 << 20, 0, &mut a);
        let first_reader_file = match reader.phases[0] {
            Phase::FileRead { file, .. } => file,
            _ => unreachable!("a reader only reads"),
        };
        assert!(first_reader_file.0 >= b.peek());
    }

    #[test]
    fn kernel_memory_per_unit_accumulates_in_whole_objects() {
        let build = KernelBuild {
            units: 100,
            builds: 1,
            headers: 0,
            unmovable_object: (1, 512),
            reclaimable_object_bytes: [192, 584, 1128],
            ..KernelBuild::default()
        };
        let procs = build.processes("make", Nanos::ZERO, &mut FileIds::from(0));
        let mut bytes = std::collections::BTreeMap::new();
        for ph in procs.iter().flat_map(|p| &p.phases) {
            if let Phase::KernelAlloc {
                kind,
                order,
                object_bytes: Some(object),
                bytes: b,
                lifetime: Lifetime::Exponential(_),
            } = ph
            {
                assert_eq!(b % object, 0, "whole objects");
                *bytes
                    .entry((*kind == KernelMem::Reclaimable, *order, *object))
                    .or_insert(0) += b;
            }
        }
        let due = |per_unit: u64, object: u64| 100 * per_unit / object * object;
        // 626 B of pinned slab per unit: 122 objects of 512 B over 100 units.
        assert_eq!(bytes[&(false, 1, 512)], due(626, 512));
        assert_eq!(bytes[&(false, 1, 512)], 122 * 512);
        // 18 KiB reclaimable per unit split 32/11/57 over orders 0, 1, 2, in dentries,
        // page-cache tree nodes and inodes.
        let r = build.reclaimable_per_unit;
        assert_eq!(bytes[&(true, 0, 192)], due(r * 32 / 100, 192));
        assert_eq!(bytes[&(true, 1, 584)], due(r * 11 / 100, 584));
        assert_eq!(bytes[&(true, 2, 1128)], due(r * 57 / 100, 1128));
        assert_eq!(bytes.len(), 4);
        // The defaults are whole pages: 626 B per unit is 15 pages over 100 units.
        let procs = KernelBuild {
            unmovable_object: KernelBuild::default().unmovable_object,
            ..build
        }
        .processes("make", Nanos::ZERO, &mut FileIds::from(0));
        let pinned: u64 = procs
            .iter()
            .flat_map(|p| &p.phases)
            .filter_map(|ph| match ph {
                Phase::KernelAlloc {
                    kind: KernelMem::Unmovable,
                    bytes,
                    lifetime: Lifetime::Exponential(_),
                    ..
                } => Some(*bytes),
                _ => None,
            })
            .sum();
        assert_eq!(pinned, 15 * PAGE);
    }

    #[test]
    fn reclaimable_memory_can_live_until_make_clean_deletes_its_object() {
        let build = KernelBuild {
            reclaimable_until_clean: true,
            ..small()
        };
        let procs = build.processes("make", Nanos::ZERO, &mut FileIds::from(0));
        let (mut held, mut deleted, mut units) = (0, std::collections::BTreeSet::new(), 0);
        for p in &procs {
            // A unit: its kernel allocations, then its reads and writes; its object is the
            // last file it writes before it unmaps its heap.
            let (mut pending, mut last_read) = (Vec::new(), None);
            for ph in &p.phases {
                match ph {
                    Phase::KernelAlloc {
                        kind: KernelMem::Reclaimable,
                        lifetime,
                        ..
                    } => pending.push(*lifetime),
                    Phase::FileWrite { file, .. } => last_read = Some(*file),
                    Phase::FileDelete { file } => {
                        deleted.insert(*file);
                    }
                    Phase::Munmap { .. } => {
                        let object = last_read.expect("a unit writes its object");
                        for life in pending.drain(..) {
                            assert_eq!(life, Lifetime::UntilDeleted(object));
                            held += 1;
                        }
                        units += 1;
                    }
                    _ => {}
                }
            }
        }
        assert_eq!(units, 20);
        // 18 KiB a unit, in whole objects of 4, 8 and 16 KiB.
        assert!(held >= 20, "{held} allocations");
        // The first build's objects are deleted by the second build's clean.
        assert_eq!(
            deleted.len(),
            10 + 10,
            "the units' temporaries (the same names in both builds) and the first build's objects"
        );
    }

    #[test]
    fn memhog_touches_and_frees_its_memory() {
        let p = memhog("hog", 64 << 20, Nanos::from_millis(10));
        assert_eq!(p.phases.len(), 4);
        assert!(matches!(p.phases[3], Phase::Munmap { .. }));
    }
}
