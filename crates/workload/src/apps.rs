//! Models of the applications in HawkEye's evaluation (ASPLOS'19 §2.4 and §4): Graph500,
//! XSBench, NPB cg.D and mg.D, the random and sequential microbenchmarks of Table 9, a
//! lightly loaded Redis server (Figure 8), and Table 8's workloads whose speed is the
//! fault handler's: SparseHash, HACC-IO, and JVM and VM spin-up. Nimble's SPEC ACCEL-like
//! stencil codes are here too, and the four applications of SysMon-H's Figure 1
//! (Memcached, an unevenly heated Redis, mcf and deepsjeng) in [`sysmon_h`].
//!
//! Each model turns a few parameters ([`App`]: name, memory, start, run length) into a
//! [`ProcessSpec`] built from the ordinary phase and pattern vocabulary. What a model
//! fixes — its layout, where its hot data lies, whether its references wait for each
//! other, what it computes between them — comes from what the real program does, written
//! beside each constant; none is fitted to a result in the paper. The MMU overheads the
//! models show are whatever the hardware model makes of these patterns.
//!
//! Every model first maps its memory and writes every page in address order (the
//! programs allocate and initialise all their data before the measured work), then runs
//! its work phase for [`App::run`]: a number of memory references, or a duration of
//! simulated time.
//!
//! References are made at the granularity the program makes them: a sweep over an array
//! of doubles references every 8 bytes (seven of eight hit the line the first brought),
//! a random probe one cache line.

use crate::builtin::touch;
use crate::spec::*;
use hugemm_hw::Nanos;

pub mod sysmon_h;

pub use sysmon_h::{deepsjeng, mcf, memcached, memcached_requests, redis_uneven};

const MIB: u64 = 1 << 20;

/// Which application.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AppModel {
    /// Graph500 breadth-first search ([`graph500`]).
    Graph500,
    /// XSBench cross-section lookups ([`xsbench`]).
    XsBench,
    /// NPB CG, class D ([`cg_d`]).
    CgD,
    /// NPB MG, class D ([`mg_d`]).
    MgD,
    /// HawkEye's random-access microbenchmark ([`random`]).
    Random,
    /// HawkEye's sequential microbenchmark ([`sequential`]).
    Sequential,
    /// A lightly loaded Redis server ([`redis`]).
    Redis,
    /// A growing open-addressing hash map ([`sparsehash`]).
    SparseHash,
    /// HACC-IO's checkpoint to an in-memory file system ([`hacc_io`]).
    HaccIo,
    /// A JVM starting with its whole heap pre-touched ([`jvm_spinup`]).
    JvmSpinup,
    /// A virtual machine starting with its memory preallocated ([`vm_spinup`]).
    VmSpinup,
    /// SPEC ACCEL 551.ppalm-like large-eddy simulation ([`ppalm`]).
    Ppalm,
    /// SPEC ACCEL 556.psp-like scalar penta-diagonal solver ([`psp`]).
    Psp,
    /// SPEC ACCEL 553.pclvrleaf-like hydrodynamics ([`pclvrleaf`]).
    Pclvrleaf,
    /// A Memcached-like cache, hot items in its low half ([`memcached`]).
    Memcached,
    /// A Redis-like server whose hash table makes its heat uneven ([`redis_uneven`]).
    RedisUneven,
    /// SPEC CPU 2017 mcf_r-like network simplex ([`mcf`]).
    Mcf,
    /// SPEC CPU 2017 deepsjeng_r-like chess search ([`deepsjeng`]).
    Deepsjeng,
    /// The STREAM memory-bandwidth benchmark ([`stream`]; APSys'16 Tables 3-4).
    Stream,
    /// PARSEC canneal's simulated annealing over a netlist ([`canneal`]; APSys'16
    /// Tables 3-4).
    Canneal,
}

impl AppModel {
    /// Every model, in the order of [`AppModel::NAMES`].
    pub const ALL: [AppModel; 20] = [
        AppModel::Graph500,
        AppModel::XsBench,
        AppModel::CgD,
        AppModel::MgD,
        AppModel::Random,
        AppModel::Sequential,
        AppModel::Redis,
        AppModel::SparseHash,
        AppModel::HaccIo,
        AppModel::JvmSpinup,
        AppModel::VmSpinup,
        AppModel::Ppalm,
        AppModel::Psp,
        AppModel::Pclvrleaf,
        AppModel::Memcached,
        AppModel::RedisUneven,
        AppModel::Mcf,
        AppModel::Deepsjeng,
        AppModel::Stream,
        AppModel::Canneal,
    ];

    /// The names used in experiment files.
    pub const NAMES: [&'static str; 20] = [
        "graph500",
        "xsbench",
        "cg.D",
        "mg.D",
        "random",
        "sequential",
        "redis",
        "sparsehash",
        "hacc-io",
        "jvm-spinup",
        "vm-spinup",
        "551.ppalm",
        "556.psp",
        "553.pclvrleaf",
        "memcached",
        "redis-uneven",
        "mcf",
        "deepsjeng",
        "stream",
        "canneal",
    ];

    /// Whether the model is all initialisation, with no work phase to run for a given
    /// length (Table 8's workloads).
    pub fn runs_to_completion(self) -> bool {
        matches!(
            self,
            AppModel::SparseHash | AppModel::HaccIo | AppModel::JvmSpinup | AppModel::VmSpinup
        )
    }

    /// The request stream of a model that serves requests in bursts (the Redis-like and
    /// Memcached-like servers): a run becomes whole bursts, at most
    /// [`Redis::MAX_BATCHES`] of them. `None` for the others.
    pub fn requests(self) -> Option<Redis> {
        match self {
            AppModel::Redis | AppModel::RedisUneven => Some(Redis::default()),
            AppModel::Memcached => Some(memcached_requests()),
            _ => None,
        }
    }

    /// The model called `name` in experiment files.
    pub fn from_name(name: &str) -> Option<AppModel> {
        let i = Self::NAMES.iter().position(|n| *n == name)?;
        Some(Self::ALL[i])
    }

    /// Its name in experiment files.
    pub fn name(self) -> &'static str {
        let i = Self::ALL
            .iter()
            .position(|m| *m == self)
            .expect("every model is in ALL");
        Self::NAMES[i]
    }
}

/// One application instance to generate.
#[derive(Clone, Debug, PartialEq)]
pub struct App {
    /// Which model.
    pub model: AppModel,
    /// Process name.
    pub name: String,
    /// Memory the program allocates and initialises, in bytes (a multiple of 4 KiB, at
    /// least [`App::MIN_BYTES`]).
    pub bytes: u64,
    /// When it starts.
    pub start: Nanos,
    /// How long its work phase runs after initialisation: references, or simulated time
    /// (ignored by the models that [run to completion](AppModel::runs_to_completion)).
    pub run: Amount,
    /// A server model's request rate, in place of its default ([`Redis::requests_per_s`];
    /// ignored by the other models). A rate the server cannot keep up with makes it
    /// serve back to back, so its run's length measures its throughput.
    pub requests_per_s: Option<f64>,
}

impl App {
    /// The smallest memory a model accepts: every model's layout has room for its parts
    /// (cg.D's 12 MiB vector among them) from here on.
    pub const MIN_BYTES: u64 = 64 * MIB;

    /// A server model's request stream ([`AppModel::requests`] at this app's rate).
    pub fn requests(&self) -> Option<Redis> {
        let mut r = self.model.requests()?;
        if let Some(rate) = self.requests_per_s {
            r.requests_per_s = rate;
        }
        Some(r)
    }

    /// The process.
    pub fn process(&self) -> ProcessSpec {
        let (bytes, run) = (self.bytes, self.run);
        let requests = self.requests().unwrap_or_default();
        let phases = match self.model {
            AppModel::Graph500 => graph500(bytes, run),
            AppModel::XsBench => xsbench(bytes, run),
            AppModel::CgD => cg_d(bytes, run),
            AppModel::MgD => mg_d(bytes, run),
            AppModel::Random => random(bytes, run),
            AppModel::Sequential => sequential(bytes, run),
            AppModel::Redis => redis(bytes, run, &requests),
            AppModel::SparseHash => sparsehash(bytes),
            AppModel::HaccIo => hacc_io(bytes),
            AppModel::JvmSpinup => jvm_spinup(bytes),
            AppModel::VmSpinup => vm_spinup(bytes),
            AppModel::Ppalm => ppalm(bytes, run),
            AppModel::Psp => psp(bytes, run),
            AppModel::Pclvrleaf => pclvrleaf(bytes, run),
            AppModel::Memcached => memcached(bytes, run, &requests),
            AppModel::RedisUneven => redis_uneven(bytes, run, &requests),
            AppModel::Mcf => mcf(bytes, run),
            AppModel::Deepsjeng => deepsjeng(bytes, run),
            AppModel::Stream => stream(bytes, run),
            AppModel::Canneal => canneal(bytes, run),
        };
        ProcessSpec {
            name: self.name.clone(),
            start: self.start,
            core: None,
            phases,
        }
    }
}

/// Map buffer `id` of `bytes` and write every page of it, in address order.
fn init(id: usize, bytes: u64) -> [Phase; 2] {
    init_advised(id, bytes, Advice::Default)
}

/// [`init`] with huge-page advice on the buffer.
fn init_advised(id: usize, bytes: u64, advice: Advice) -> [Phase; 2] {
    let buffer = BufferId(id);
    [
        Phase::Mmap {
            buffer,
            bytes,
            advice,
        },
        Phase::Access(touch(buffer, bytes)),
    ]
}

/// `bytes * share`, rounded down to whole pages, at least one page.
fn pages_of(bytes: u64, share: f64) -> u64 {
    (((bytes as f64 * share) as u64) / 4096 * 4096).max(4096)
}

/// An access phase over `buffer`, no compute between references.
fn work(buffer: usize, pattern: Pattern, run: Amount, dependent: bool, writes: f64) -> Phase {
    Phase::Access(AccessPhase {
        buffer: BufferId(buffer),
        pattern,
        amount: run,
        dependent,
        write_fraction: writes,
        compute: Nanos::ZERO,
        instructions_per_ref: None,
        writes: Writes::default(),
    })
}

/// Graph500's reference BFS (`seq-csr`, edge factor 16) over a graph filling `bytes`.
///
/// The program generates an edge list (two 8-byte vertex ids per edge, 16 edges per
/// vertex: 256 bytes a vertex), builds a CSR graph from it (an offsets array, 16 bytes a
/// vertex, and adjacency lists holding each undirected edge twice, 256 bytes a vertex),
/// then runs breadth-first searches writing a parent array (8 bytes a vertex) and a
/// visited bitmap. Per vertex that is 536 bytes, of which the edge list (48%) is cold
/// during the searches.
///
/// The model maps the edge list first and the graph second, so the graph lies higher in
/// the address space, and touches both. During a search each vertex taken from the
/// frontier reads its offsets, then its adjacency list (32 entries, 4 cache lines in one
/// random place), and checks the parent of every neighbour (32 random probes). The
/// parents, offsets and bitmap are the hot set: 24 of the graph's 280 bytes a vertex
/// (8.6%), placed at its top (HawkEye's Figure 6: Graph500's hot regions are in its high
/// virtual addresses); they take 33 of the 37 line references a vertex (89%), the
/// adjacency lists the rest, modelled as random lines over the graph. Probes are
/// dependent: each is followed by a data-dependent branch on the visited check that
/// often mispredicts, which keeps searches from overlapping misses much. One probe in
/// 37 writes (a vertex's parent, set once). The result validation pass is not modelled.
pub fn graph500(bytes: u64, run: Amount) -> Vec<Phase> {
    let edges = pages_of(bytes, 256.0 / 536.0);
    let graph = bytes.saturating_sub(edges).max(4096);
    let hot = Pattern::HotRange {
        hot_fraction: 24.0 / 280.0,
        hot_share: 33.0 / 37.0,
        position: 1.0,
    };
    let mut v = Vec::new();
    v.extend(init(0, edges));
    v.extend(init(1, graph));
    v.push(work(1, hot, run, true, 1.0 / 37.0));
    v
}

/// XSBench's event-based cross-section lookups ("large" problem: 355 nuclides, 11,303
/// energy points each).
///
/// The program builds per-nuclide grids (6 doubles a point: 192 MB), a unionized energy
/// grid (one double per point of every nuclide: 32 MB) and its index grid (one 4-byte
/// index per nuclide per unionized point: 5.7 GB), 96.2% / 0.5% / 3.2% of its memory.
/// A lookup binary-searches the unionized grid (about 22 dependent probes), reads one
/// row of the index grid (1.4 KB, one page), then for each nuclide of the sampled
/// material (about 55 on average) reads the two bracketing points of its grid.
///
/// The model lays the index grid low and the energy and nuclide grids on top (HawkEye's
/// Figure 6: XSBench's hot regions are in its high virtual addresses). Per lookup that is
/// about 132 random probes of the top 3.8% (binary search and nuclide grids) and one
/// random page of the index grid (its other lines hit the same page): 99% of references
/// go to the hot range. Probes are dependent: the binary search is a chain, and the
/// nuclide loop's bounds come from it. Lookups only read (results stay in registers).
pub fn xsbench(bytes: u64, run: Amount) -> Vec<Phase> {
    let hot = Pattern::HotRange {
        hot_fraction: 0.5 / 100.0 + 3.2 / 100.0,
        hot_share: 132.0 / 133.0,
        position: 1.0,
    };
    let mut v = init(0, bytes).to_vec();
    v.push(work(0, hot, run, true, 0.0));
    v
}

/// Bytes of NPB CG class D's vectors: `na` = 1,500,000 doubles (plus 2).
pub const CG_D_VECTOR_BYTES: u64 = 12 * MIB;

/// Share of cg.D's memory the conjugate-gradient iterations use: HawkEye's Table 3
/// gives 7-8 GB of working set in 16 GB resident (matrix construction's scratch arrays
/// are written once and left). An input of the model, not a result.
pub const CG_D_WORKING_SHARE: f64 = 7.5 / 16.0;

/// NPB CG class D: conjugate gradient on a random sparse matrix (1.5 M rows).
///
/// The program builds the matrix in scratch arrays, compresses it to CSR (an 8-byte value
/// and a 4-byte column index per non-zero), then iterates sparse matrix-vector products
/// `q = A p`: a stream through the values and column indices, and for each non-zero a
/// load of `p[col]`, where the columns are uniformly random (`makea` draws them so).
///
/// The model's buffer holds the scratch at the bottom, then the matrix and the five
/// vectors on top (together [`CG_D_WORKING_SHARE`] of it), all touched at start. The work is a
/// [`Pattern::SweepGather`]: two sweep references a non-zero (its value and its index,
/// 12 bytes: a stride of 6) and one gather, uniform over `p`. `p` keeps its class-D size
/// ([`CG_D_VECTOR_BYTES`]) whatever the memory, because the TLB behaviour depends on
/// the vector's size against the TLB's reach; the matrix scales with the memory.
/// References are independent (successive gathers do not wait for each other) and read
/// only (the few writes of `q` and the vector updates are left out).
pub fn cg_d(bytes: u64, run: Amount) -> Vec<Phase> {
    let len = bytes as f64;
    let vector = CG_D_VECTOR_BYTES as f64 / len;
    // The other vectors (x, z, q, r) sit above p.
    let vectors = (5.0 * vector).min(0.5);
    let matrix = (CG_D_WORKING_SHARE - vectors).max(vector);
    let pattern = Pattern::SweepGather {
        stride: 6,
        sweep_position: 1.0 - vectors - matrix,
        sweep_fraction: matrix,
        gather_position: 1.0 - vectors,
        gather_fraction: vector,
        every: 3,
    };
    let mut v = init(0, bytes).to_vec();
    v.push(work(0, pattern, run, false, 0.0));
    v
}

/// NPB MG class D: multigrid V-cycles on a 1024^3 grid.
///
/// The program keeps three grids of doubles (the solution `u`, the right-hand side `v`
/// and the residual `r`, 8 GB each at the finest level, plus coarser levels of 1/8 the
/// size each), and spends its time in stencil sweeps (`resid`, `psinv`, `rprj3`,
/// `interp`) that run through them in address order: HawkEye's Table 3 gives 24 GB of
/// working set in 26 GB resident.
///
/// The model sweeps its whole buffer in address order, one reference per double
/// (stride 8), independent references (a stencil's loads do not wait for each other),
/// one in three a write (`r = v - A u` reads two grids and writes one). The stencil's
/// reuse of neighbouring points from the L1 cache is not modelled as references: it would
/// add cache hits only.
pub fn mg_d(bytes: u64, run: Amount) -> Vec<Phase> {
    let mut v = init(0, bytes).to_vec();
    v.push(work(
        0,
        Pattern::Sequential { stride: 8 },
        run,
        false,
        1.0 / 3.0,
    ));
    v
}

/// HawkEye's `random` microbenchmark (Table 9: 4 GB, 60% MMU overhead at 4 KB).
///
/// The paper gives no code. The model reads 8-byte words at uniformly random lines of
/// its buffer, each address computed from the previous word read (a random pointer
/// chase, the usual way to defeat the out-of-order core), after touching it all.
pub fn random(bytes: u64, run: Amount) -> Vec<Phase> {
    let mut v = init(0, bytes).to_vec();
    v.push(work(0, Pattern::Uniform, run, true, 0.0));
    v
}

/// HawkEye's `sequential` microbenchmark (Table 9: 4 GB, under 1% MMU overhead).
///
/// The paper gives no code. The model reads its buffer in address order, one 8-byte word
/// per reference, independent references (a summing loop), wrapping at the end.
pub fn sequential(bytes: u64, run: Amount) -> Vec<Phase> {
    let mut v = init(0, bytes).to_vec();
    v.push(work(0, Pattern::Sequential { stride: 8 }, run, false, 0.0));
    v
}

/// STREAM (McCalpin), as APSys'16 ran it "with default input array size": three arrays
/// of doubles filling `bytes` (10 M elements each by default, 229 MiB), the Copy, Scale,
/// Add and Triad kernels repeated.
///
/// The model sweeps the arrays in address order, one 8-byte element per reference,
/// independent references (the kernels are vectorisable loops with no dependence between
/// elements). Of a repetition's 10 element references per index (Copy and Scale read 1 and
/// write 1, Add and Triad read 2 and write 1), 4 are stores. The real kernels walk two or
/// three arrays side by side; one sweep touches each page as often, so TLB misses per
/// reference are the same, with one stream where the real loop has two or three.
pub fn stream(bytes: u64, run: Amount) -> Vec<Phase> {
    let mut v = init(0, bytes).to_vec();
    v.push(work(0, Pattern::Sequential { stride: 8 }, run, false, 0.4));
    v
}

/// PARSEC canneal: simulated-annealing placement of a netlist (the native input: 2.5 M
/// elements), its memory `bytes`.
///
/// Each move picks two random elements and, for each, reads its fan-in and fan-out lists
/// and the locations of the elements they name, to price swapping the two; every one of
/// these is a load from a pointer just loaded, to a random place in the netlist. The model
/// makes each reference a dependent load of a uniformly random line of the netlist, with
/// no compute between them (canneal is memory-bound: PARSEC's characterisation gives it
/// the suite's largest working set and miss rates). A swap, accepted or not, writes the two
/// elements' locations: about 1 reference in 10 is a store.
pub fn canneal(bytes: u64, run: Amount) -> Vec<Phase> {
    let mut v = init(0, bytes).to_vec();
    v.push(work(0, Pattern::Uniform, run, true, 0.1));
    v
}

/// An access phase over `buffer`: a sweep of `stride`, once through, writing
/// (`write`) or reading.
fn sweep(buffer: usize, bytes: u64, stride: u64, write: bool) -> Phase {
    Phase::Access(AccessPhase {
        buffer: BufferId(buffer),
        pattern: Pattern::Sequential { stride },
        amount: Amount::Refs(bytes.div_ceil(stride)),
        dependent: false,
        write_fraction: if write { 1.0 } else { 0.0 },
        compute: Nanos::ZERO,
        instructions_per_ref: None,
        writes: Writes::default(),
    })
}

/// Bytes of the smallest table [`sparsehash`] starts from.
pub const SPARSEHASH_FIRST_TABLE: u64 = 32 * MIB;

/// Google's `dense_hash_map` growing by inserts (HawkEye Table 8: SparseHash, 36 GB).
///
/// The paper names the library and the footprint only. The model is the library's
/// growth: 16-byte entries (8-byte key and value), the table doubling when half full
/// (`dense_hash_map`'s default maximum load). Each table is a fresh allocation (large,
/// so `mmap`ed); it is first filled with the empty key (a sequential write of every
/// line), then every element of the old table is reinserted and new ones are inserted
/// until it is half full — one write of a uniformly random line per element, `table /
/// 32` of them — and the old table is freed. Tables double from
/// [`SPARSEHASH_FIRST_TABLE`] while the old and the new one fit in `bytes` together
/// (the peak of a resize); `bytes` is that peak.
pub fn sparsehash(bytes: u64) -> Vec<Phase> {
    let mut v = Vec::new();
    let mut table = SPARSEHASH_FIRST_TABLE;
    let mut id = 0;
    while table + table / 2 <= bytes.max(SPARSEHASH_FIRST_TABLE * 3 / 2) {
        let b = BufferId(id);
        v.push(Phase::Mmap {
            buffer: b,
            bytes: table,
            advice: Advice::Default,
        });
        v.push(sweep(id, table, 64, true));
        v.push(work(
            id,
            Pattern::Uniform,
            Amount::Refs(table / 32),
            false,
            1.0,
        ));
        if id > 0 {
            v.push(Phase::Munmap {
                buffer: BufferId(id - 1),
            });
        }
        id += 1;
        table *= 2;
    }
    v
}

/// HACC-IO (HawkEye Table 8: 6 GB, "a parallel IO benchmark used with an in-memory file
/// system").
///
/// The benchmark fills its particle arrays (nine variables a particle), writes them to
/// a checkpoint file, reads the file back and verifies it. With the file system in
/// memory (tmpfs), the file's pages are anonymous-like memory allocated, zeroed and
/// filled as the file is written. The model: half of `bytes` of arrays mapped and
/// written line by line, the other half (the file) mapped and written line by line as
/// the arrays are read line by line, then both read back line by line.
pub fn hacc_io(bytes: u64) -> Vec<Phase> {
    let half = pages_of(bytes, 0.5);
    let map = |id: usize| Phase::Mmap {
        buffer: BufferId(id),
        bytes: half,
        advice: Advice::Default,
    };
    vec![
        map(0),
        sweep(0, half, 64, true),
        map(1),
        sweep(0, half, 64, false),
        sweep(1, half, 64, true),
        sweep(1, half, 64, false),
        sweep(0, half, 64, false),
    ]
}

/// A JVM starting with `-Xms` = `-Xmx` = `bytes` and `-XX:+AlwaysPreTouch` (HawkEye
/// Table 8: JVM spin-up, 36 GB, "configured to allocate all memory during
/// initialization").
///
/// HotSpot maps the heap and pre-touches it: `os::pretouch_memory` stores a zero into
/// every page, one thread, in address order. The pages stay zero-filled (written, but
/// with zeros). Spin-up ends there.
pub fn jvm_spinup(bytes: u64) -> Vec<Phase> {
    spinup(bytes, Advice::Default)
}

/// A KVM virtual machine started by QEMU with `-mem-prealloc` (HawkEye Table 8: KVM
/// spin-up, 36 GB).
///
/// QEMU maps guest memory, advises `MADV_HUGEPAGE` on it (`qemu_madvise` in
/// `ram_block_add`), and preallocates it by writing one zero byte into every page
/// (`touch_all_pages`), one thread, in address order. Spin-up ends there.
pub fn vm_spinup(bytes: u64) -> Vec<Phase> {
    spinup(bytes, Advice::Hugepage)
}

fn spinup(bytes: u64, advice: Advice) -> Vec<Phase> {
    let b = BufferId(0);
    let mut touch = touch(b, bytes);
    touch.writes = Writes::ZEROS;
    vec![
        Phase::Mmap {
            buffer: b,
            bytes,
            advice,
        },
        Phase::Access(touch),
    ]
}

/// The request stream of the Redis model ([`redis`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Redis {
    /// Requests a second. Default 10,000: HawkEye §4 (Figure 8), "servicing 10K requests
    /// per second".
    pub requests_per_s: f64,
    /// Memory references a request makes to the dataset. Default 4: a `GET` walks the
    /// hash table's bucket, the dict entry, the key and the value object, each a
    /// dependent random line (the 1 KB value's further lines are in the same page).
    pub refs_per_request: u64,
    /// CPU time of a request apart from those references. Default 10 us: a Redis core
    /// serves about 100,000 unpipelined `GET`s a second (redis.io, "Redis benchmark"), the
    /// time going to the network stack, parsing and reply.
    pub cpu_per_request: Nanos,
    /// Requests are served in bursts, one every `batch`, idle in between. Default 100 ms.
    pub batch: Nanos,
}

impl Redis {
    /// Most bursts a run may have: each is two or three phases of the process (its
    /// references, one phase per buffer, then its idle time).
    pub const MAX_BATCHES: u64 = 100_000;

    /// References of one burst (at least one request's).
    pub fn refs_per_batch(&self) -> u64 {
        let requests = (self.requests_per_s.max(0.0) * self.batch.0 as f64 / 1e9) as u64;
        requests.max(1) * self.refs_per_request.max(1)
    }

    /// The bursts of a run of length `run` (at least one; callers keep it below
    /// [`Redis::MAX_BATCHES`]).
    pub fn batches(&self, run: Amount) -> u64 {
        match run {
            Amount::Refs(n) => n.div_ceil(self.refs_per_batch()),
            Amount::Duration(d) => d.0.div_ceil(self.batch.0.max(1)),
        }
        .max(1)
    }
}

impl Default for Redis {
    fn default() -> Self {
        Redis {
            requests_per_s: 10_000.0,
            refs_per_request: 4,
            cpu_per_request: Nanos(10_000),
            batch: Nanos::from_millis(100),
        }
    }
}

/// A lightly loaded Redis server (HawkEye §4, Figure 8: 40 M keys of 1 KB, 10K requests a
/// second of randomly chosen keys).
///
/// The dataset fills the buffer and is written once at start (the load phase). The
/// server then handles requests in bursts: every `batch` it serves that period's
/// requests — `refs_per_request` dependent references to uniformly random lines of the
/// dataset, `cpu_per_request` of computation spread between them — and sleeps for the
/// rest of the period (an idle server is not running, so its PMU counts no cycles). The
/// burst's own duration is not subtracted from the sleep, so the achieved rate is
/// slightly below the nominal one. Every huge-page region is referenced (high access
/// coverage over time), but few references per second reach the TLB.
///
/// `run` counts references (`Amount::Refs`) or simulated time (`Amount::Duration`); either
/// becomes whole bursts, at least one.
pub fn redis(bytes: u64, run: Amount, r: &Redis) -> Vec<Phase> {
    let serve = serving(0, Pattern::Uniform, r.refs_per_batch(), r);
    let mut v = init(0, bytes).to_vec();
    v.extend(bursts(run, r, &[serve]));
    v
}

/// A server's access phase: `refs` of its requests' references to `buffer`, as [`redis`]
/// makes them: dependent reads, a request's CPU time spread between its references.
fn serving(buffer: usize, pattern: Pattern, refs: u64, r: &Redis) -> Phase {
    Phase::Access(AccessPhase {
        buffer: BufferId(buffer),
        pattern,
        amount: Amount::Refs(refs),
        dependent: true,
        write_fraction: 0.0,
        compute: Nanos(r.cpu_per_request.0 / r.refs_per_request.max(1)),
        instructions_per_ref: None,
        writes: Writes::default(),
    })
}

/// The bursts of a server's run (see [`redis`]): [`Redis::batches`] times the phases
/// `serve` (one burst's references), each followed by the idle rest of its period.
fn bursts(run: Amount, r: &Redis, serve: &[Phase]) -> Vec<Phase> {
    let requests = r.refs_per_batch() / r.refs_per_request.max(1);
    let busy = r.cpu_per_request.0 * requests;
    let idle = Nanos(r.batch.0.saturating_sub(busy));
    let mut v = Vec::new();
    for _ in 0..r.batches(run) {
        v.extend_from_slice(serve);
        if idle.0 > 0 {
            v.push(Phase::Sleep(idle));
        }
    }
    v
}

/// A SPEC ACCEL-like stencil code (Nimble's end-to-end workloads, ASPLOS'19 section 4.3,
/// footprints scaled to the experiment's memory): `cold` of its memory is written at
/// start and not read again (input decks, setup and grid-generation arrays, I/O buffers),
/// mapped first as a program reads its input before it allocates its fields; the rest
/// holds the fields every time step sweeps. Each step streams through the fields (8-byte
/// stride, independent references, `writes` of them stores) and one reference in
/// `every` is a random line of the fields (a neighbour in another plane, or a
/// line-solve's stride). Nimble's paper gives neither the footprints' hot/cold split nor
/// the access patterns; these are assumptions from what each program computes, written
/// beside each model. None is fitted to a result.
fn stencil(bytes: u64, run: Amount, cold: f64, every: u32, writes: f64) -> Vec<Phase> {
    let cold_bytes = pages_of(bytes, cold);
    let fields = bytes.saturating_sub(cold_bytes).max(4096);
    let pattern = Pattern::SweepGather {
        stride: 8,
        sweep_position: 0.0,
        sweep_fraction: 1.0,
        gather_position: 0.0,
        gather_fraction: 1.0,
        every,
    };
    let mut v = Vec::new();
    v.extend(init(0, cold_bytes));
    v.extend(init(1, fields));
    v.push(work(1, pattern, run, false, writes));
    v
}

/// 551.ppalm-like: PALM's large-eddy simulation keeps its prognostic fields (u, v, w, pt,
/// q, e and their tendencies) hot and a large share of setup, topography and output
/// arrays cold. Assumed: 40% cold; a stencil's random neighbour one reference in 4; one
/// in 4 a store (tendency updates).
pub fn ppalm(bytes: u64, run: Amount) -> Vec<Phase> {
    stencil(bytes, run, 0.40, 4, 0.25)
}

/// 556.psp-like: NPB SP's scalar penta-diagonal solver sweeps five solution and
/// right-hand-side arrays in x, y and z every step; little is cold. Assumed: 10% cold;
/// one reference in 3 jumps (the y and z line solves stride across planes); one in 3 a
/// store.
pub fn psp(bytes: u64, run: Amount) -> Vec<Phase> {
    stencil(bytes, run, 0.10, 3, 1.0 / 3.0)
}

/// 553.pclvrleaf-like: CloverLeaf's explicit hydrodynamics updates some 30 cell and node
/// arrays per step; its advection and halo buffers are touched every step, its
/// visualisation and setup arrays are not. Assumed: 25% cold; one reference in 6 a
/// neighbour off the stream; one in 4 a store.
pub fn pclvrleaf(bytes: u64, run: Amount) -> Vec<Phase> {
    stencil(bytes, run, 0.25, 6, 0.25)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mapped(phases: &[Phase]) -> Vec<u64> {
        phases
            .iter()
            .filter_map(|p| match p {
                Phase::Mmap { bytes, .. } => Some(*bytes),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn sparsehash_doubles_its_table_within_the_peak() {
        let p = sparsehash(1 << 30);
        // 32, 64, ..., 512 MiB: 512 + 256 fits in 1 GiB, 1024 + 512 does not.
        assert_eq!(mapped(&p), (5..=9).map(|k| MIB << k).collect::<Vec<_>>());
        let inserts: u64 = p
            .iter()
            .filter_map(|ph| match ph {
                Phase::Access(a) if a.pattern == Pattern::Uniform => match a.amount {
                    Amount::Refs(n) => Some(n),
                    _ => None,
                },
                _ => None,
            })
            .sum();
        assert_eq!(inserts, (1023 - 31) * MIB / 32);
    }

    #[test]
    fn spinups_write_zeros_into_every_page() {
        for p in [jvm_spinup(1 << 30), vm_spinup(1 << 30)] {
            let Phase::Access(a) = &p[1] else { panic!() };
            assert_eq!(a.writes, Writes::ZEROS);
            assert_eq!(a.amount, Amount::Refs((1 << 30) / 4096));
        }
        assert!(matches!(
            vm_spinup(1 << 30)[0],
            Phase::Mmap {
                advice: Advice::Hugepage,
                ..
            }
        ));
    }

    #[test]
    fn hacc_io_writes_its_file_from_its_arrays() {
        let p = hacc_io(1 << 30);
        assert_eq!(mapped(&p), [512 * MIB, 512 * MIB]);
        assert_eq!(p.len(), 7);
    }
    use crate::Stream;

    const GIB: u64 = 1 << 30;

    fn app(model: AppModel, bytes: u64) -> ProcessSpec {
        App {
            model,
            name: model.name().into(),
            bytes,
            start: Nanos::ZERO,
            run: Amount::Refs(1_000_000),
            requests_per_s: None,
        }
        .process()
    }

    fn access_phases(phases: &[Phase]) -> Vec<AccessPhase> {
        phases
            .iter()
            .filter_map(|ph| match ph {
                Phase::Access(a) => Some(*a),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn names_round_trip() {
        for (i, m) in AppModel::ALL.into_iter().enumerate() {
            assert_eq!(m.name(), AppModel::NAMES[i]);
            assert_eq!(AppModel::from_name(AppModel::NAMES[i]), Some(m));
        }
        // No model or name twice (from_name would find the first only).
        for i in 0..AppModel::ALL.len() {
            for j in 0..i {
                assert_ne!(AppModel::ALL[i], AppModel::ALL[j]);
                assert_ne!(AppModel::NAMES[i], AppModel::NAMES[j]);
            }
        }
        assert_eq!(AppModel::from_name("cg"), None);
        assert_eq!(AppModel::from_name("Memcached"), None);
    }

    #[test]
    fn the_servers_and_only_they_serve_requests_in_bursts() {
        let servers = [AppModel::Redis, AppModel::RedisUneven, AppModel::Memcached];
        for m in AppModel::ALL {
            assert_eq!(m.requests().is_some(), servers.contains(&m), "{m:?}");
        }
        assert_eq!(AppModel::Redis.requests(), Some(Redis::default()));
        let p = app(AppModel::Memcached, GIB);
        let sleeps = p
            .phases
            .iter()
            .filter(|ph| matches!(ph, Phase::Sleep(_)))
            .count() as u64;
        assert_eq!(
            sleeps,
            memcached_requests().batches(Amount::Refs(1_000_000))
        );
    }

    #[test]
    fn every_model_maps_and_touches_all_its_memory_before_working() {
        // Table 8's models are all initialisation: tested on their own above.
        for m in AppModel::ALL
            .into_iter()
            .filter(|m| !m.runs_to_completion())
        {
            for bytes in [App::MIN_BYTES, 3 * GIB + 4096] {
                let p = app(m, bytes);
                let mapped: u64 = p
                    .phases
                    .iter()
                    .filter_map(|ph| match ph {
                        Phase::Mmap { bytes, .. } => Some(*bytes),
                        _ => None,
                    })
                    .sum();
                assert_eq!(mapped, bytes, "{m:?}");
                let touched: u64 = access_phases(&p.phases)
                    .iter()
                    .filter(|a| a.write_fraction == 1.0)
                    .map(|a| match a.amount {
                        Amount::Refs(n) => n * 4096,
                        Amount::Duration(_) => 0,
                    })
                    .sum();
                assert_eq!(touched, bytes, "{m:?}");
            }
        }
    }

    #[test]
    fn every_pattern_fits_its_buffer() {
        for m in AppModel::ALL {
            for bytes in [App::MIN_BYTES, 16 * GIB] {
                let p = app(m, bytes);
                let mut sizes = Vec::new();
                for ph in &p.phases {
                    match ph {
                        Phase::Mmap { bytes, .. } => sizes.push(*bytes),
                        Phase::Access(a) => {
                            assert!(Stream::new(a.pattern, sizes[a.buffer.0]).is_some(), "{m:?}")
                        }
                        _ => {}
                    }
                }
            }
        }
    }

    #[test]
    fn hot_sets_of_graph500_and_xsbench_lie_in_high_addresses() {
        for m in [AppModel::Graph500, AppModel::XsBench] {
            let p = app(m, GIB);
            let work = *access_phases(&p.phases).last().unwrap();
            let Pattern::HotRange { position, .. } = work.pattern else {
                panic!("{m:?} works on a hot range");
            };
            assert_eq!(position, 1.0);
            // The graph500 work buffer is the second, mapped above the edge list.
            assert_eq!(work.buffer.0, p.buffer_count() - 1);
        }
    }

    #[test]
    fn cg_gathers_from_a_class_d_vector_at_any_scale() {
        for bytes in [App::MIN_BYTES, GIB, 16 * GIB] {
            let p = app(AppModel::CgD, bytes);
            let work = *access_phases(&p.phases).last().unwrap();
            let s = Stream::new(work.pattern, bytes).unwrap();
            let gathered = (0..s.pages()).filter(|pg| s.page_share(*pg) > 0.0).count() as u64;
            let want = CG_D_VECTOR_BYTES / 4096;
            assert!(gathered.abs_diff(want) <= 1, "{bytes}: {gathered} pages");
            assert!(!work.dependent);
        }
    }

    #[test]
    fn redis_serves_in_bursts_at_its_request_rate() {
        let r = Redis::default();
        let p = redis(GIB, Amount::Duration(Nanos::from_millis(1_000)), &r);
        let serve = access_phases(&p)[1..].to_vec();
        assert_eq!(serve.len(), 10);
        assert_eq!(serve[0].amount, Amount::Refs(4_000));
        assert_eq!(serve[0].compute, Nanos(2_500));
        let sleeps: Vec<Nanos> = p
            .iter()
            .filter_map(|ph| match ph {
                Phase::Sleep(d) => Some(*d),
                _ => None,
            })
            .collect();
        assert_eq!(sleeps, vec![Nanos::from_millis(90); 10]);
        let by_refs = redis(GIB, Amount::Refs(8_001), &r);
        assert_eq!(access_phases(&by_refs).len(), 1 + 3);
    }
}
