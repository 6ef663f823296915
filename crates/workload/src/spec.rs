//! The typed description of a process: its phases and the access patterns they use.
//!
//! Values here are validated by whoever builds them (the configuration layer); this module
//! documents what each field means and what the engine will do with it.

use hugemm_hw::Nanos;
use serde::Serialize;

/// Index of a buffer (a named anonymous mapping) within one process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct BufferId(pub usize);

/// Huge-page advice given when a buffer is mapped (`madvise(MADV_HUGEPAGE)` and friends
/// right after `mmap`, as applications that want THPs under `madvise` mode do).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Advice {
    /// No advice: THP only if the system mode is `always`.
    Default,
    /// `MADV_HUGEPAGE`.
    Hugepage,
    /// `MADV_NOHUGEPAGE`.
    NoHugepage,
}

/// `madvise` calls a phase can make on part of a mapped buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum MadviseKind {
    /// `MADV_HUGEPAGE`.
    Hugepage,
    /// `MADV_NOHUGEPAGE`.
    NoHugepage,
    /// `MADV_DONTNEED`: free the range; the next touch faults a fresh zeroed page.
    DontNeed,
}

/// Where the references of an access phase fall inside its buffer.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum Pattern {
    /// Every cache line of the buffer equally likely (GUPS-like random access).
    Uniform,
    /// A pointer chase through a random cyclic permutation of the buffer's cache lines, as
    /// a linked structure walked over and over (and `tools/membench`'s dependent loads) is:
    /// every line once a round, in the same pseudo-random order every round. Its pages
    /// are as likely as `Uniform`'s, but its reuse distance is the whole buffer, so a cache
    /// smaller than the buffer keeps almost none of it under LRU, where uniform
    /// references hit in proportion to the cache's share of the buffer.
    Chase,
    /// A sweep from the start of the buffer, `stride` bytes apart, wrapping at the end.
    Sequential {
        /// Distance between consecutive references, in bytes (>= 1).
        stride: u64,
    },
    /// Pages ranked by a Zipf law with exponent `exponent`; the hottest ranks sit
    /// contiguously from `position` (0 = start of the buffer, 1 = its end), wrapping.
    /// Within a page the line is uniform.
    Zipf {
        /// Zipf exponent s (> 0); larger means more skewed.
        exponent: f64,
        /// Where the hottest page lies, as a fraction of the buffer (0..=1).
        position: f64,
    },
    /// A hot range holding `hot_share` of the references, the rest uniform over the whole
    /// buffer.
    HotRange {
        /// Size of the hot range as a fraction of the buffer (0..=1).
        hot_fraction: f64,
        /// Fraction of references that go to the hot range (0..=1).
        hot_share: f64,
        /// Start of the hot range as a fraction of the buffer (0..=1); the range is
        /// clamped to end inside the buffer.
        position: f64,
    },
    /// A sweep through one range of the buffer interleaved with uniformly random
    /// references to another: a sparse matrix-vector product streaming the matrix and
    /// gathering from the vector. Every `every`-th reference is a gather; the others
    /// continue the sweep, `stride` bytes apart, wrapping at the end of its range.
    SweepGather {
        /// Distance between consecutive sweep references, in bytes (>= 1).
        stride: u64,
        /// Start of the swept range as a fraction of the buffer (0..=1).
        sweep_position: f64,
        /// Size of the swept range as a fraction of the buffer (0..=1, at least a page);
        /// clamped to end inside the buffer.
        sweep_fraction: f64,
        /// Start of the gathered range as a fraction of the buffer (0..=1).
        gather_position: f64,
        /// Size of the gathered range as a fraction of the buffer (0..=1, at least a
        /// line); clamped to end inside the buffer.
        gather_fraction: f64,
        /// One reference in `every` is a gather (>= 1; 1 means gathers only).
        every: u32,
    },
}

/// How long an access phase runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Amount {
    /// A fixed number of references.
    Refs(u64),
    /// Until the process has spent this much simulated time in the phase.
    Duration(Nanos),
}

/// What a process's first write to a page leaves in it: the page's content, which a scan
/// for zero-filled pages reads (the kernel model's `content.rs`). A page is written once
/// for this purpose: the first write after it is allocated decides.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Writes {
    /// Share of first writes that leave data (1: every page written holds data; 0: the
    /// process writes zeros, as a JVM or a VMM pre-touching its memory does).
    pub nonzero_share: f64,
    /// Mean offset of the first non-zero byte of a page holding data, in bytes.
    pub mean_first_nonzero: f64,
}

impl Writes {
    /// HawkEye's measured mean distance to the first non-zero byte of an in-use page
    /// (section 3.2, Figure 3: 9.11 bytes over 56 workloads).
    pub const HAWKEYE_MEAN_FIRST_NONZERO: f64 = 9.11;

    /// Writes of zeros only.
    pub const ZEROS: Writes = Writes {
        nonzero_share: 0.0,
        mean_first_nonzero: Writes::HAWKEYE_MEAN_FIRST_NONZERO,
    };
}

impl Default for Writes {
    /// Every page written holds data, its first non-zero byte HawkEye's mean distance in.
    fn default() -> Self {
        Writes {
            nonzero_share: 1.0,
            mean_first_nonzero: Writes::HAWKEYE_MEAN_FIRST_NONZERO,
        }
    }
}

/// A phase of references to one buffer.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct AccessPhase {
    /// The buffer referenced.
    pub buffer: BufferId,
    /// Where the references fall.
    pub pattern: Pattern,
    /// How long the phase runs.
    pub amount: Amount,
    /// Dependent references (pointer chasing: each waits for the previous) or independent
    /// ones (overlapped by the core's memory-level parallelism).
    pub dependent: bool,
    /// Fraction of references that are writes (0..=1).
    pub write_fraction: f64,
    /// Computation between two references, in nanoseconds of core time.
    pub compute: Nanos,
    /// Instructions the program runs per reference (the reference's own, and the work
    /// that computes its address and uses its value): with the profile's
    /// `reorder_window`, at most `reorder_window / instructions_per_ref` independent
    /// references are in flight (`hugemm_hw::Mmu::set_instructions_per_ref`). `None`, the
    /// default: not said, no such bound. An `f32`: a count needs no more, and an `f64`
    /// made every phase 16 bytes larger, which slowed `hugemm bench`'s kernel build by 2%.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions_per_ref: Option<f32>,
    /// What the phase's writes leave in the pages they write first.
    pub writes: Writes,
}

/// One step of a process.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum Phase {
    /// `mmap` an anonymous buffer of `bytes`, with huge-page advice.
    Mmap {
        /// The buffer created.
        buffer: BufferId,
        /// Its length in bytes.
        bytes: u64,
        /// Advice applied right after mapping.
        advice: Advice,
    },
    /// References, first touches included (a "touch" phase is a sequential access phase
    /// with a page stride, as HawkEye's alloc-and-touch microbenchmark does).
    Access(AccessPhase),
    /// `madvise` a byte range of a buffer.
    Madvise {
        /// The buffer.
        buffer: BufferId,
        /// Start of the range, in bytes from the buffer start.
        offset: u64,
        /// Length of the range in bytes.
        len: u64,
        /// The advice.
        advice: MadviseKind,
    },
    /// `munmap` a whole buffer.
    Munmap {
        /// The buffer.
        buffer: BufferId,
    },
    /// Compute without memory references (or wait) for a while.
    Sleep(Nanos),
    /// Read `bytes` of a file from `offset` through the page cache (pages not cached are
    /// allocated, movable and reclaimable; cached ones are hits).
    FileRead {
        /// The file (shared by every process).
        file: FileId,
        /// First byte read.
        offset: u64,
        /// Bytes read.
        bytes: u64,
    },
    /// Write `bytes` of a file from `offset` through the page cache: as a read (the
    /// pages are cached, and stay clean: the model has no dirty state or writeback), and
    /// with buffer heads on each page written carries one (ext4's buffered write), where
    /// a read attaches none.
    FileWrite {
        /// The file (shared by every process).
        file: FileId,
        /// First byte written.
        offset: u64,
        /// Bytes written.
        bytes: u64,
    },
    /// Look a file's or directory's name up without reading it (a `stat`, a directory
    /// walked through, a compiler probing its include path): with the kernel's VFS
    /// objects on, a name `found` gets an inode and a dentry, one not found a negative
    /// dentry; no pages are read. A name whose file exists (was read or written and not
    /// deleted) is found whatever `found` says.
    FileLookup {
        /// The name (shared by every process, as files are).
        file: FileId,
        /// Whether the name exists.
        found: bool,
    },
    /// Delete a file: its cached pages are freed (`unlink` of a file nobody holds open).
    FileDelete {
        /// The file.
        file: FileId,
    },
    /// Kernel allocations made on the process's behalf: `bytes` in blocks of `2^order`
    /// base pages, or in objects of a slab cache whose slabs are such blocks, each freed
    /// when `lifetime` says.
    KernelAlloc {
        /// Unmovable or reclaimable.
        kind: KernelMem,
        /// Buddy order of each block (of each slab, for objects).
        order: u8,
        /// `None`: whole blocks. `Some(n)`: objects of `n` bytes, packed into shared
        /// slabs of their cache (kind, order and size; `hugemm_mm`'s `slab.rs`): a slab is
        /// freed only when its last object is.
        object_bytes: Option<u64>,
        /// Total bytes (rounded up to whole blocks or objects).
        bytes: u64,
        /// When the blocks are freed.
        lifetime: Lifetime,
    },
    /// `echo 1 > /proc/sys/vm/drop_caches`: free every clean page-cache page.
    DropCaches,
    /// `echo 1 > /proc/sys/vm/compact_memory`: compact all of memory.
    CompactMemory,
    /// A step of a Redis-like key-value server ([`crate::kv`]): inserts, deletes or gets,
    /// on the process's heap (one VMA of `server.heap_bytes`, mapped at the first such
    /// phase).
    Kv(crate::kv::KvPhase),
    /// Set the machine's balloon to `target` bytes, as a virtio-balloon driver does when
    /// its host asks: inflating allocates base pages one at a time (movable, no reclaim:
    /// it stops at the first failure, as the driver's `__GFP_NORETRY` allocation gives
    /// up) and hands each to the host, which discards its backing; deflating frees them
    /// back to the guest. On a machine with no host the pages are only held.
    Balloon {
        /// The balloon's size to reach, in bytes (whole base pages).
        target: u64,
    },
    /// One attempt (a pass) of mmtests' stress-highalloc: request huge pages (order 9, as
    /// the benchmark's kernel module does) until `share` of memory is requested, holding
    /// those it gets; report the success rate and free them all at the end.
    HighAlloc {
        /// Label of the attempt in the results.
        label: String,
        /// Memory requested, as a fraction of the machine's memory (0..=1).
        share: f64,
        /// Time from one request's start to the next one's (the module's `ms_delay`,
        /// which mmtests derives from its `HIGHALLOC_ALLOC_RATE`, 16 MB/s: 125 ms for a
        /// 2 MiB page); a request that took longer is followed at once. Other processes
        /// run in between. `None`: every request at once, as one step of the process.
        interval: Option<Nanos>,
        /// The requests' GFP flags.
        gfp: HighAllocGfp,
    },
}

/// The GFP flags of stress-highalloc's requests (mmtests' `HIGHALLOC_GFPFLAGS`). They
/// differ only where the kernel's slow path honours `__GFP_REPEAT`
/// (`hugemm_mm::WatermarkCheck::Linux4_1`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum HighAllocGfp {
    /// `GFP_HIGHUSER_MOVABLE`, mmtests' default (`config-global-dhp__stress-highalloc-
    /// performance`, 2014-2018).
    #[default]
    HighuserMovable,
    /// `GFP_ALLOC_LIKE_HUGETLB`: `GFP_HIGHUSER_MOVABLE | __GFP_REPEAT`, as hugetlbfs
    /// asked in Linux 4.1 (the module's other setting).
    LikeHugetlb,
}

impl HighAllocGfp {
    /// The names configuration files use (mmtests' own).
    pub const NAMED: [(&'static str, HighAllocGfp); 2] = [
        ("GFP_HIGHUSER_MOVABLE", HighAllocGfp::HighuserMovable),
        ("GFP_ALLOC_LIKE_HUGETLB", HighAllocGfp::LikeHugetlb),
    ];

    /// `__GFP_REPEAT` is set.
    pub fn repeat(self) -> bool {
        self == HighAllocGfp::LikeHugetlb
    }
}

/// A file in the page cache, shared by every process that names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct FileId(pub u32);

/// The mobility of kernel memory (the migrate type it is allocated with).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum KernelMem {
    /// Slab objects, kernel stacks, page tables of the kernel: never moved or freed early.
    Unmovable,
    /// Dentry and inode caches and the like: freed by shrinkers, never moved.
    Reclaimable,
}

/// When kernel memory allocated by a [`Phase::KernelAlloc`] is freed.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum Lifetime {
    /// This long after the allocation.
    Fixed(Nanos),
    /// After a time drawn, per block, from an exponential distribution with this mean
    /// (from the process's seeded generator).
    Exponential(Nanos),
    /// When the process exits.
    Process,
    /// Never, within the run.
    Forever,
    /// When the file is deleted (a [`Phase::FileDelete`] of it, by any process); never if
    /// it is not: the dentry, inode and other objects a file system keeps for a file.
    UntilDeleted(FileId),
}

/// A process: a name, when it starts, and what it does.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProcessSpec {
    /// Name in reports.
    pub name: String,
    /// Simulated time at which it starts.
    pub start: Nanos,
    /// Core it is pinned to; `None` lets the engine place it (round-robin by start order).
    pub core: Option<u32>,
    /// Its phases, run in order; the process exits after the last one.
    pub phases: Vec<Phase>,
}

impl Phase {
    /// Whether the phase is the kernel's work on the process's behalf (page cache, kernel
    /// memory, compaction...) rather than the process's own references and mappings.
    pub fn is_kernel_side(&self) -> bool {
        matches!(
            self,
            Phase::FileRead { .. }
                | Phase::FileWrite { .. }
                | Phase::FileLookup { .. }
                | Phase::FileDelete { .. }
                | Phase::KernelAlloc { .. }
                | Phase::DropCaches
                | Phase::CompactMemory
                | Phase::HighAlloc { .. }
                | Phase::Balloon { .. }
        )
    }
}

impl ProcessSpec {
    /// Number of buffers the process maps (one more than the highest buffer id used).
    pub fn buffer_count(&self) -> usize {
        self.phases
            .iter()
            .map(|p| match p {
                Phase::Mmap { buffer, .. }
                | Phase::Madvise { buffer, .. }
                | Phase::Munmap { buffer } => buffer.0 + 1,
                Phase::Access(a) => a.buffer.0 + 1,
                Phase::Kv(_)
                | Phase::Sleep(_)
                | Phase::FileRead { .. }
                | Phase::FileWrite { .. }
                | Phase::FileLookup { .. }
                | Phase::FileDelete { .. }
                | Phase::KernelAlloc { .. }
                | Phase::DropCaches
                | Phase::CompactMemory
                | Phase::HighAlloc { .. }
                | Phase::Balloon { .. } => 0,
            })
            .max()
            .unwrap_or(0)
    }
}
