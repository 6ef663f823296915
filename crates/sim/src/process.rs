//! The runtime state of a simulated process: where it is in its phases, its buffers, its
//! random generator and its counters.

use crate::coverage::LazyCoverage;
use crate::lookahead::Lookahead;
use crate::sampling::Sampler;
use hugemm_hw::{Nanos, Picos, Pid, Pmu, VirtAddr};
use hugemm_workload::{AccessPhase, Amount, ProcessSpec, Stream};
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

/// A mapped buffer.
#[derive(Clone, Debug)]
pub(crate) struct Buffer {
    pub start: VirtAddr,
    pub bytes: u64,
    /// Skipped references' accessed bits not yet applied.
    pub coverage: Option<LazyCoverage>,
    /// Some page may not be present (after mmap or DONTNEED, until a skip's eager pass
    /// finds every page present).
    pub maybe_unpopulated: bool,
}

/// An access phase being run.
#[derive(Clone, Debug)]
pub(crate) struct AccessRun {
    pub phase: AccessPhase,
    pub stream: Stream,
    /// References left, for `Amount::Refs`.
    pub refs_left: u64,
    /// Core time at which the phase ends, for `Amount::Duration`.
    pub deadline: Picos,
    /// `write_fraction` as a threshold on a 64-bit random word.
    pub write_threshold: u64,
    pub sampler: Option<Sampler>,
    /// Fractional references and picoseconds carried between skips.
    pub carry_refs: f64,
    pub carry_ps: f64,
    /// Fractional PMU events carried between skips.
    pub carry_events: crate::sampling::SkipCarry,
    /// References generated ahead of time so the simulator can prefetch its own data
    /// structures for them; kept across turns so the stream's sequence does not depend on
    /// where turns end.
    pub ahead: Lookahead,
    /// The buffer offset over 32 KB (eight 4 KB pages: one page-table line) of the last
    /// reference generated whose page-table line's cache sets were prefetched, so a
    /// sequential sweep prefetches them once per line (simulator speed only).
    pub prefetched_pt_line: u64,
}

impl AccessRun {
    /// Whether the phase is over at core time `now`.
    pub fn done(&self, now: Picos) -> bool {
        match self.phase.amount {
            Amount::Refs(_) => self.refs_left == 0,
            Amount::Duration(_) => now >= self.deadline,
        }
    }
}

/// What the process is doing within its current phase.
#[derive(Clone, Debug)]
pub(crate) enum Activity {
    /// About to begin phase `phase`.
    Begin,
    /// In an access phase.
    Access(Box<AccessRun>),
    /// In a phase of the key-value server.
    Kv(Box<crate::kvrun::KvRun>),
    /// Sleeping until a core time.
    Sleep(Picos),
    /// In a paced stress-highalloc pass.
    HighAlloc(Box<crate::kactivity::HighAllocPass>),
}

/// A process.
#[derive(Clone, Debug)]
pub(crate) struct Proc {
    pub spec: ProcessSpec,
    pub core: usize,
    pub pid: Option<Pid>,
    pub phase: usize,
    pub activity: Activity,
    pub buffers: Vec<Option<Buffer>>,
    pub rng: Xoshiro256PlusPlus,
    pub seed: u64,
    pub pmu: Pmu,
    pub fault_time: Nanos,
    /// Of `fault_time`: allocating (buddy, reclaim, the policy's direct reclaim,
    /// compaction stalls) and clearing frames.
    pub fault_alloc: Nanos,
    pub fault_zeroing: Nanos,
    /// Latency of each fault taken, in ns (2 significant digits, up to 73 minutes).
    pub fault_latency: hdrhistogram::Histogram<u64>,
    pub faults_huge_fallback: u64,
    /// Regions promoted (collapsed) by the policy's daemons.
    pub promotions: u64,
    /// References simulated one by one.
    pub references_exact: u64,
    /// References a sampled phase skipped (priced by its windows' means).
    pub references_skipped: u64,
    pub start: Nanos,
    pub end: Option<Nanos>,
    pub oom: bool,
    /// Killed by the script driving the run ([`crate::Engine::kill`]).
    pub killed: bool,
    pub error: Option<String>,
    pub huge_end: u64,
    pub rss_end: u64,
    /// Useful (written) bytes at the end, or when killed.
    pub useful_end: u64,
    /// When it was killed for want of memory.
    pub oom_at: Option<Nanos>,
    /// PMU at the previous time-series sample, for interval overheads.
    pub last_sample: Pmu,
    /// The key-value server's heap and state, from its first phase on.
    pub kv: Option<crate::kvrun::KvHeap>,
    /// What each key-value phase did.
    pub kv_results: Vec<crate::results::KvPhaseResult>,
    /// Time to wait at the next turn: pages in flight a tiering policy was migrating,
    /// TLB-miss samples taken.
    pub stall: Picos,
    /// All such waiting so far.
    pub migration_stall: Nanos,
    /// Its pages per node when it ended (machines of several nodes).
    pub nodes_end: Vec<hugemm_mm::NodeUse>,
    /// Its TLB misses being sampled (SysMon-H), while they are.
    pub tlb_sampler: Option<Box<crate::tlbsample::TlbSampler>>,
    /// What TLB-miss sampling has cost it so far.
    pub tlb_sampling_overhead: Nanos,
    /// Each sampling window's misses per 2 MB region, with when it ended.
    pub tlb_windows: Vec<crate::results::TlbWindow>,
}

impl Proc {
    /// A process not yet started, with its own generator derived from the run's seed.
    pub fn new(spec: ProcessSpec, index: usize, core: usize, seed: u64) -> Self {
        let seed = crate::coverage::key(&[seed, index as u64, 0x9E37]);
        Proc {
            buffers: vec![None; spec.buffer_count()],
            start: spec.start,
            spec,
            core,
            pid: None,
            phase: 0,
            activity: Activity::Begin,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            seed,
            pmu: Pmu::default(),
            fault_time: Nanos::ZERO,
            fault_alloc: Nanos::ZERO,
            fault_zeroing: Nanos::ZERO,
            fault_latency: hdrhistogram::Histogram::new_with_bounds(1, 1 << 42, 2)
                .expect("valid bounds"),
            faults_huge_fallback: 0,
            promotions: 0,
            references_exact: 0,
            references_skipped: 0,
            end: None,
            oom: false,
            killed: false,
            error: None,
            huge_end: 0,
            rss_end: 0,
            useful_end: 0,
            oom_at: None,
            last_sample: Pmu::default(),
            kv: None,
            kv_results: Vec::new(),
            stall: Picos(0),
            migration_stall: Nanos::ZERO,
            nodes_end: Vec::new(),
            tlb_sampler: None,
            tlb_sampling_overhead: Nanos::ZERO,
            tlb_windows: Vec::new(),
        }
    }

    /// Started and not yet ended.
    pub fn running(&self) -> bool {
        self.pid.is_some() && self.end.is_none()
    }
}
