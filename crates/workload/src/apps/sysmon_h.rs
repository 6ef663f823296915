//! The four applications of SysMon-H's Figure 1 (the SysMon-H / H-Policy paper, section
//! 3.1: TLB misses per 2 MB huge page over each one's address space in a 5 s window).
//! The paper says this of them, and nothing more:
//! - Memcached: its "memory accesses spans a 4GB address space, and most of the hot huge
//!   pages are mainly in the left half of the address space" ([`memcached`]);
//! - Redis: "the distribution of hot huge pages of Redis is uneven among its 22GB address
//!   space" ([`redis_uneven`]);
//! - mcf_r (SPEC CPU 2017): its "memory accesses are in a 350MB range" ([`mcf`]);
//! - deepsjeng_r: "most of the pages are accessed without a significant difference"
//!   ([`deepsjeng`]).
//!
//! It names no client, request rate, key distribution, value size or input. Each model
//! takes those from what the program does (its data structures and its allocator, cited
//! beside each constant), as the HawkEye models of the parent module do, and reuses their
//! pieces: the Redis model's request stream and bursts, the key-value server's object
//! sizes ([`crate::kv`]) and allocator ([`crate::jemalloc`]). One thing comes from Figure
//! 1's description itself: that Memcached's hot items lie low. A reproduction of Figure 1
//! therefore shows whether the monitor finds heat where the models put it, not why the
//! programs put it there. Nothing is fitted to a result.
//!
//! **Footprints.** Every `[[app]]` gives its `memory`, so the paper's sizes are constants
//! here ([`MEMCACHED_PAPER_BYTES`], [`REDIS_UNEVEN_PAPER_BYTES`], [`MCF_PAPER_BYTES`],
//! [`DEEPSJENG_PAPER_BYTES`]) for experiment files to quote. Each model lays out whatever
//! memory it is given in the proportions of its data structures, so experiments may run
//! scaled down (a 22 GB Redis does not fit a test's machine): the shape of the heat over
//! the address space is kept, up to the power-of-two rounding of the hash tables each
//! model documents; the number of huge pages, and so the counts per huge page, are not.

use super::{bursts, init, init_advised, pages_of, serving, work, Redis};
use crate::jemalloc::size_class;
use crate::kv::{KvServer, ENTRY_BYTES, INITIAL_BUCKETS, ROBJ_BYTES, SDS_OVERHEAD};
use crate::pattern::PAGE;
use crate::spec::*;
use hugemm_hw::Nanos;

/// Memcached's address space in Figure 1: "a 4GB address space".
pub const MEMCACHED_PAPER_BYTES: u64 = 4 << 30;

/// Redis's address space in Figure 1 and section 3.3: 22 GB.
pub const REDIS_UNEVEN_PAPER_BYTES: u64 = 22 << 30;

/// mcf_r's range in Figure 1: "a 350MB range".
pub const MCF_PAPER_BYTES: u64 = 350 << 20;

/// deepsjeng_r's footprint, about 700 MB, nearly all of it the transposition table: the
/// size of SPEC CPU 2017's rate version as the task that asked for this model gives it
/// (the paper gives none, and SPEC's documents were not at hand to check it).
pub const DEEPSJENG_PAPER_BYTES: u64 = 700 << 20;

/// Bytes of a Memcached item's slab chunk: memcached 1.6's item header (48 bytes and 8
/// for the CAS value), a 10-byte key (the key-value server's, [`KvServer`]) with its NUL
/// and a 1 KiB value (HawkEye's Redis keys) with its "\r\n" make 1,093 bytes, stored in
/// the 1,184-byte slab class (classes start at 96 bytes and grow by the default factor
/// 1.25, 8-byte aligned).
pub const MEMCACHED_ITEM_BYTES: u64 = 1184;

/// Memcached's smallest hash table: the default `hashpower` of 16.
pub const MEMCACHED_MIN_BUCKETS: u64 = 1 << 16;

/// Zipf exponent of Memcached's key popularity: YCSB's default for its `zipfian` request
/// distribution (0.99), the usual key-value benchmark's.
pub const MEMCACHED_ZIPF: f64 = 0.99;

/// The request stream of the [`memcached`] model: the Redis model's ([`Redis::default`]:
/// 10,000 requests a second in bursts every 100 ms, 10 us of CPU a request) with two
/// references a request, its bucket and its item.
pub fn memcached_requests() -> Redis {
    Redis {
        refs_per_request: 2,
        ..Redis::default()
    }
}

/// Bytes of [`memcached`]'s hash table in `bytes` of memory: 8-byte buckets, the smallest
/// power of two (at least [`MEMCACHED_MIN_BUCKETS`]) holding the items at memcached's
/// growth threshold of 1.5 items a bucket. Under 1% of the memory from
/// [`super::App::MIN_BYTES`] up.
pub fn memcached_table_bytes(bytes: u64) -> u64 {
    let items = bytes / MEMCACHED_ITEM_BYTES;
    let buckets = (items * 2).div_ceil(3).next_power_of_two();
    (8 * buckets.max(MEMCACHED_MIN_BUCKETS)).min(pages_of(bytes, 0.5))
}

/// A Memcached-like cache (SysMon-H's Figure 1: 4 GB, "most of the hot huge pages are
/// mainly in the left half of the address space").
///
/// **Layout.** Memcached allocates its hash table (`assoc_init`) before its slab arena
/// (`slabs_init`): the model maps the table first, below the arena, at its final size
/// ([`memcached_table_bytes`]), as a server started with `-o hashpower=N` for a known load
/// has it (otherwise memcached doubles it while loading; that is not modelled). The arena
/// is the rest of `bytes`. The server runs with `-L`, which on Linux allocates the whole
/// memory limit at start (`alloc_large_chunk`: 2 MB-aligned, `madvise(MADV_HUGEPAGE)`)
/// and carves 1 MiB slab pages from it in address order as items are stored: the arena
/// is advised `MADV_HUGEPAGE`, and items lie in the order they were stored. Items are 1
/// KiB values under 10-byte keys, in 1,184-byte chunks ([`MEMCACHED_ITEM_BYTES`]). The
/// load writes every page of both (the touch).
///
/// **Heat.** A `GET` reads its bucket, a uniformly random line of the table (keys hash
/// uniformly), then its item: the header and key on its first line (the value's further
/// lines are in the same page, so one reference stands for them). Keys are requested by
/// a Zipf law of exponent 0.99 ([`MEMCACHED_ZIPF`]) and the most popular were stored
/// first, so item popularity falls with address from the arena's start
/// ([`Pattern::Zipf`] at position 0, per 4 KiB page: a page holds about 3.5 items, the
/// per-item law summed over neighbours). That the popular items were stored first is the
/// assumption taken from Figure 1 (the paper names no client): it is what a client gives
/// that loads keys in order and requests them by an unscrambled Zipf law over key
/// numbers (YCSB's `ZipfianGenerator`). At the paper's size about 95% of item references
/// fall in the arena's low half.
///
/// **Requests.** Gets only, in the Redis model's bursts ([`memcached_requests`]): 1,000
/// requests every 100 ms, a request's 10 us of CPU (network stack, parsing, reply:
/// memcached's is of Redis's order) spread over its two references, which are dependent
/// (the item's address is read from the bucket's chain); then idle. Gets write nothing
/// (memcached moves an item in its LRU at most once a minute); sets after the load are not
/// modelled. A burst is one phase of bucket references and one of item references: the
/// mix per burst is the server's, the interleaving within it coarser.
///
/// `bytes` is the table and the arena together: any size from [`super::App::MIN_BYTES`]
/// keeps the layout (the table under 1% of it, its power-of-two size rounding the share).
pub fn memcached(bytes: u64, run: Amount, r: &Redis) -> Vec<Phase> {
    let table = memcached_table_bytes(bytes);
    let arena = bytes - table;
    let requests = r.refs_per_batch() / r.refs_per_request.max(1);
    let item = Pattern::Zipf {
        exponent: MEMCACHED_ZIPF,
        position: 0.0,
    };
    let serve = [
        serving(0, Pattern::Uniform, requests, r),
        serving(1, item, r.refs_per_batch() - requests, r),
    ];
    let mut v = init(0, table).to_vec();
    v.extend(init_advised(1, arena, Advice::Hugepage));
    v.extend(bursts(run, r, &serve));
    v
}

/// Bytes of each value of [`redis_uneven`]: HawkEye's Redis keys (Figure 8: 1 KB), as the
/// `redis` model has them.
pub const REDIS_VALUE_BYTES: u64 = 1024;

/// Heap bytes of one key of the Redis-like server: its dict entry, key `sds`, `robj` and
/// value `sds`, each in its jemalloc size class (the key-value server's sizes,
/// [`crate::kv`]): 32 + 32 + 16 + 1,280 = 1,360 bytes.
pub fn redis_key_bytes() -> u64 {
    let key = KvServer::default().key_bytes + SDS_OVERHEAD;
    let value = REDIS_VALUE_BYTES + SDS_OVERHEAD;
    [ENTRY_BYTES, key, ROBJ_BYTES, value]
        .map(size_class)
        .iter()
        .sum()
}

/// Where [`redis_uneven`]'s bucket array lies in a heap of `bytes`: `(offset, len)`.
///
/// The heap holds the most keys `K` that fit with the table: `K` keys' objects
/// ([`redis_key_bytes`]) and `S` 8-byte buckets, `S` the smallest power of two of at
/// least `K` (Redis doubles the dict when the keys reach its buckets). The table was
/// allocated at the last doubling, when `S / 2` keys were stored, at the heap's end then
/// (no freed extent was large enough): above those keys' objects and the `S / 2`-bucket
/// table it replaced, whose space later keys' slabs refilled. A band past the end of
/// `bytes` (a key count just past a power of two) is clamped by the pattern.
pub fn redis_table(bytes: u64) -> (u64, u64) {
    let per_key = redis_key_bytes();
    let buckets = |k: u64| k.next_power_of_two().max(INITIAL_BUCKETS);
    let fits = |k: u64| k * per_key + 8 * buckets(k) <= bytes;
    // The most keys that fit, by bisection: `fits` holds at `lo` and not at `hi`.
    let (mut lo, mut hi) = (0, bytes / per_key + 1);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let s = buckets(lo);
    (s / 2 * (per_key + 8), 8 * s)
}

/// A Redis-like server whose heat is uneven (SysMon-H's Figure 1: 22 GB, "the
/// distribution of hot huge pages of Redis is uneven").
///
/// The HawkEye work's [`super::redis`] model with its layout made explicit. The same
/// request stream (`r`; [`Redis::default`]: 10,000 gets a second of uniformly chosen keys
/// in 100 ms bursts, each four dependent reads: bucket, dict entry, key and value object)
/// over a dataset written at start; but where `redis` sends every reference to a random
/// line of the whole dataset, here a request's bucket read goes to the dict's bucket
/// array, where the server's heap put it ([`redis_table`]), and its other three go
/// anywhere.
///
/// The heap is the key-value server's ([`crate::kv`], from Redis's `dict.c` and jemalloc
/// 5): per key a dict entry, a key `sds`, a `robj` and a 1 KiB value `sds`, 1,360 bytes
/// in size classes ([`redis_key_bytes`]); keys fill `bytes`. jemalloc carves each size
/// class's objects from slabs in insertion order, so entries, keys, `robj`s and values
/// interleave page by page and their references spread evenly at 2 MB. The bucket array
/// does not: it is one allocation of `8 S` bytes (0.6% to 1.2% of the heap, by how far the
/// key count is past a power of two) taking a quarter of the references. At the paper's
/// size it lies at 97% of the heap, its huge pages about 30 times as hot as the rest;
/// scaled, it lies between about halfway up the heap (a key count just past a power of
/// two) and the top (just below the next).
///
/// Requests read only, as `redis`'s do. `run` counts references or simulated time;
/// either becomes whole bursts, at least one.
pub fn redis_uneven(bytes: u64, run: Amount, r: &Redis) -> Vec<Phase> {
    let (offset, len) = redis_table(bytes);
    let len = len as f64;
    let bucket = Pattern::HotRange {
        hot_fraction: (len / bytes as f64).min(1.0),
        hot_share: 1.0 / r.refs_per_request.max(1) as f64,
        position: (offset as f64 / bytes as f64).min(1.0),
    };
    let mut v = init(0, bytes).to_vec();
    v.extend(bursts(run, r, &[serving(0, bucket, r.refs_per_batch(), r)]));
    v
}

/// Bytes of an mcf node: ZIB MCF's `MCF_node` (`mcfdefs.h`), thirteen 8-byte fields.
pub const MCF_NODE_BYTES: f64 = 104.0;

/// Bytes of an mcf arc: ZIB MCF's `MCF_arc`, eight 8-byte fields.
pub const MCF_ARC_BYTES: f64 = 64.0;

/// Arcs per node in mcf's network: assumed (the reference input's node and arc counts
/// are not at hand here). A timetabled trip has a node at each end and dead-head arcs to
/// the trips it can be followed by; 16 makes the nodes 9.2% of the memory.
pub const MCF_ARCS_PER_NODE: f64 = 16.0;

/// SPEC CPU 2017 505.mcf_r-like: MCF's network simplex for single-depot vehicle
/// scheduling (SysMon-H's Figure 1: "memory accesses are in a 350MB range").
///
/// **Layout.** MCF reads the network into a node array, then an arc array, allocated in
/// that order: one buffer, the nodes at the bottom (104 bytes a node, `MCF_node`), the arcs
/// above (64 bytes an arc, `MCF_arc`), an assumed 16 arcs a node
/// ([`MCF_ARCS_PER_NODE`]): the nodes are 9.2% of `bytes`. Every page is referenced: the
/// paper's 350 MB is the range accessed, so spare room the arc array may keep for column
/// generation is not modelled as cold memory.
///
/// **Work.** Most of mcf's time is pricing (`primal_bea_mpp`): a scan through the arcs in
/// address order reading, for each arc, its tail's and head's potentials to compute its
/// reduced cost. The model is a [`Pattern::SweepGather`]: per arc two references to the
/// swept arc (stride 32: its 64 bytes are one line, the second reference a cache hit) and
/// two gathers, uniformly random lines of the node array (an arc's ends are arbitrary
/// trips). The basis-tree updates between pricing rounds (`refresh_potential`, the ratio
/// test's walk up the predecessors) chase node pointers in tree order, random in address
/// order: they are folded into the gathers. References are dependent: a node's address
/// is read from its arc and a data-dependent branch on the reduced cost follows, so
/// misses overlap little (mcf is the usual example of pointer chasing). Reads only: the
/// simplex's writes (potentials, tree links, flows) go to lines its reads bring in. No
/// compute between references (a subtraction and a compare).
pub fn mcf(bytes: u64, run: Amount) -> Vec<Phase> {
    let nodes = pages_of(
        bytes,
        MCF_NODE_BYTES / (MCF_NODE_BYTES + MCF_ARCS_PER_NODE * MCF_ARC_BYTES),
    );
    let share = |b: u64| (b as f64 / bytes as f64).min(1.0);
    let pricing = Pattern::SweepGather {
        stride: 32,
        sweep_position: share(nodes),
        // Half a page more, so that rounding the sweep to pages keeps the top one.
        sweep_fraction: share(bytes - nodes + PAGE / 2),
        gather_position: 0.0,
        gather_fraction: share(nodes),
        every: 2,
    };
    let mut v = init(0, bytes).to_vec();
    v.push(work(0, pricing, run, true, 0.0));
    v
}

/// Core time of deepsjeng's search per position, apart from its table reference:
/// assumed 1 us (engines of its generation search on the order of a million positions a
/// second on one core).
pub const DEEPSJENG_POSITION_TIME: Nanos = Nanos(1_000);

/// Share of probed table entries deepsjeng writes back: assumed one half (a position's
/// result is stored into its entry unless the entry keeps a deeper search's result,
/// Deep Sjeng's depth-preferred replacement).
pub const DEEPSJENG_STORE_SHARE: f64 = 0.5;

/// SPEC CPU 2017 531.deepsjeng_r-like: Deep Sjeng's alpha-beta chess search (SysMon-H's
/// Figure 1: "most of the pages are accessed without a significant difference").
///
/// **Layout.** One buffer, the transposition table, cleared at start (the touch); the
/// program's other data (board, move stacks, small pawn and evaluation caches, a few MB)
/// is left out.
///
/// **Work.** Each searched position probes its table entry, the line its Zobrist hash
/// indexes, uniformly random over the table ([`Pattern::Uniform`]): one reference a
/// position. Its result is stored back into the same line (a cache hit, not a reference
/// of its own) [`DEEPSJENG_STORE_SHARE`] of the time, so that share of references write.
/// They are dependent: the probe decides whether the position is cut off before the
/// search goes on, and the next probe's position comes out of that search. Between them
/// lies the search's own work, move generation and evaluation:
/// [`DEEPSJENG_POSITION_TIME`]. No page is favoured, as Figure 1 shows.
pub fn deepsjeng(bytes: u64, run: Amount) -> Vec<Phase> {
    let probe = AccessPhase {
        buffer: BufferId(0),
        pattern: Pattern::Uniform,
        amount: run,
        dependent: true,
        write_fraction: DEEPSJENG_STORE_SHARE,
        compute: DEEPSJENG_POSITION_TIME,
        instructions_per_ref: None,
        writes: Writes::default(),
    };
    let mut v = init(0, bytes).to_vec();
    v.push(Phase::Access(probe));
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kv::{KvAction, KvState};
    use crate::{SkipCoverage, Stream};

    const MIB: u64 = 1 << 20;
    /// A huge page: Figure 1's unit.
    const REGION: u64 = 2 * MIB;
    /// A run long enough to hold many bursts.
    const RUN: Amount = Amount::Refs(1_000_000);

    fn is_touch(a: &AccessPhase) -> bool {
        a.write_fraction == 1.0 && a.pattern == Pattern::Sequential { stride: PAGE }
    }

    fn work_phases(phases: &[Phase]) -> Vec<AccessPhase> {
        phases
            .iter()
            .filter_map(|ph| match ph {
                Phase::Access(a) if !is_touch(a) => Some(*a),
                _ => None,
            })
            .collect()
    }

    /// The probability that one reference of `pattern` over `len` bytes falls in each
    /// page, passed to `add(page, share)`: [`Stream::page_share`] for random references,
    /// and for a sweep with gathers the sweep's share spread over the pages it covers.
    fn page_shares(pattern: Pattern, len: u64, mut add: impl FnMut(u64, f64)) {
        let s = Stream::new(pattern, len).unwrap();
        let (gathers, swept) = match pattern {
            Pattern::SweepGather { every, .. } => {
                // Enough references to sweep the whole range.
                let SkipCoverage::Mixed { swept, .. } = s.clone().skip(len * u64::from(every))
                else {
                    unreachable!("a sweep with gathers skips as both")
                };
                (1.0 / f64::from(every), swept[0])
            }
            _ => (1.0, (0, 0)),
        };
        for page in 0..s.pages() {
            add(page, gathers * s.page_share(page));
        }
        let (first, pages) = swept;
        for page in first..first + pages {
            add(page, (1.0 - gathers) / pages as f64);
        }
    }

    /// Figure 1 as a model defines it: the share of its work references falling in each
    /// 2 MiB region of the process's memory, the buffers placed as `mmap` places them (in
    /// mapping order, one of 2 MiB or more on a 2 MiB boundary).
    fn heat(p: &[Phase]) -> Vec<f64> {
        let mut at = Vec::new();
        let mut end = 0u64;
        for ph in p {
            if let Phase::Mmap { bytes, .. } = ph {
                if *bytes >= REGION {
                    end = end.next_multiple_of(REGION);
                }
                at.push((end, *bytes));
                end += bytes;
            }
        }
        // References of each distinct (buffer, pattern) of the work.
        let mut work: Vec<(usize, Pattern, f64)> = Vec::new();
        for a in work_phases(p) {
            let Amount::Refs(n) = a.amount else {
                panic!("heat needs runs counted in references")
            };
            match work
                .iter_mut()
                .find(|w| (w.0, w.1) == (a.buffer.0, a.pattern))
            {
                Some(w) => w.2 += n as f64,
                None => work.push((a.buffer.0, a.pattern, n as f64)),
            }
        }
        let total: f64 = work.iter().map(|w| w.2).sum();
        let mut regions = vec![0.0; end.div_ceil(REGION) as usize];
        for (buffer, pattern, refs) in work {
            let (start, len) = at[buffer];
            page_shares(pattern, len, |page, share| {
                regions[((start + page * PAGE) / REGION) as usize] += refs / total * share;
            });
        }
        regions
    }

    /// Shares of the references in the low and the high half of the address space.
    fn halves(heat: &[f64]) -> (f64, f64) {
        let (low, high) = heat.split_at(heat.len() / 2);
        (low.iter().sum(), high.iter().sum())
    }

    fn median(heat: &[f64]) -> f64 {
        let mut h = heat.to_vec();
        h.sort_by(f64::total_cmp);
        h[h.len() / 2]
    }

    #[test]
    fn heat_of_a_process_sums_to_one() {
        for phases in [
            memcached(256 * MIB, RUN, &memcached_requests()),
            redis_uneven(256 * MIB, RUN, &Redis::default()),
            mcf(256 * MIB, RUN),
            deepsjeng(256 * MIB, RUN),
        ] {
            let total: f64 = heat(&phases).iter().sum();
            assert!((total - 1.0).abs() < 1e-6, "{total}");
        }
    }

    #[test]
    fn memcached_hot_huge_pages_are_mainly_in_the_left_half() {
        for bytes in [
            MEMCACHED_PAPER_BYTES,
            256 * MIB,
            super::super::App::MIN_BYTES,
        ] {
            let h = heat(&memcached(bytes, RUN, &memcached_requests()));
            let (low, high) = halves(&h);
            assert!(
                low > 0.9 && low > 10.0 * high,
                "{bytes}: {low} low, {high} high"
            );
            // Hot huge pages (above the mean) lie in the low half only.
            let mean = 1.0 / h.len() as f64;
            let hot: Vec<usize> = (0..h.len()).filter(|i| h[*i] > mean).collect();
            assert!(
                !hot.is_empty() && hot.iter().all(|i| *i < h.len() / 2),
                "{hot:?}"
            );
        }
    }

    #[test]
    fn memcached_maps_its_table_below_a_hugepage_advised_arena() {
        let p = memcached(MEMCACHED_PAPER_BYTES, RUN, &memcached_requests());
        let maps: Vec<(u64, Advice)> = p
            .iter()
            .filter_map(|ph| match ph {
                Phase::Mmap { bytes, advice, .. } => Some((*bytes, *advice)),
                _ => None,
            })
            .collect();
        // 4 GiB of 1,184-byte items: 3.6 M, over 1.5 x 2^21, so 2^22 buckets.
        assert_eq!(maps[0], (32 * MIB, Advice::Default));
        assert_eq!(
            maps[1],
            (MEMCACHED_PAPER_BYTES - 32 * MIB, Advice::Hugepage)
        );
        let work = work_phases(&p);
        assert!(work.iter().all(|a| a.dependent && a.write_fraction == 0.0));
        // One bucket and one item reference a request, 10 us of CPU between them.
        assert_eq!(work[0].amount, work[1].amount);
        assert_eq!(work[0].compute, Nanos(5_000));
    }

    #[test]
    fn redis_uneven_heats_one_band_of_its_address_space() {
        for bytes in [REDIS_UNEVEN_PAPER_BYTES, 256 * MIB] {
            let h = heat(&redis_uneven(bytes, RUN, &Redis::default()));
            let (offset, len) = redis_table(bytes);
            let band = (offset / REGION) as usize..(offset + len).div_ceil(REGION) as usize;
            let hottest = (0..h.len()).max_by(|a, b| h[*a].total_cmp(&h[*b])).unwrap();
            assert!(
                band.contains(&hottest),
                "{bytes}: {hottest} outside {band:?}"
            );
            assert!(h[hottest] > 10.0 * median(&h), "{bytes}: not uneven");
            // The band takes a request's bucket read: a quarter of the references.
            let share: f64 = h[band].iter().sum();
            assert!((share - 0.25).abs() < 0.02, "{bytes}: band {share}");
            // HawkEye's `redis` over the same memory is even.
            let even = heat(&super::super::redis(bytes, RUN, &Redis::default()));
            let (lo, hi) = even
                .iter()
                .fold((1.0f64, 0.0f64), |(l, h), x| (l.min(*x), h.max(*x)));
            assert!(hi < 1.01 * lo, "{bytes}: redis {lo}..{hi}");
        }
    }

    #[test]
    fn redis_table_at_the_papers_size_is_near_the_top() {
        let bytes = REDIS_UNEVEN_PAPER_BYTES;
        let (offset, len) = redis_table(bytes);
        // 17.2 M keys of 1,360 bytes: 2^25 buckets, allocated when 2^24 keys were stored.
        assert_eq!(len, 8 << 25);
        assert_eq!(offset, (1 << 24) * 1368);
        assert!((0.96..0.98).contains(&(offset as f64 / bytes as f64)));
    }

    #[test]
    fn redis_table_lies_where_the_kv_servers_heap_puts_it() {
        // Three quarters of the way from one doubling to the next: 2^15 buckets.
        let keys = 3 << 13;
        let mut kv = KvState::new(KvServer::default());
        let mut out = Vec::new();
        for _ in 0..keys {
            kv.insert(REDIS_VALUE_BYTES, &mut out);
        }
        // The lowest bucket a few thousand gets read is about the table's start.
        let first_bucket = (0..5_000)
            .filter_map(|_| {
                kv.get(&mut out);
                match out[0] {
                    KvAction::Ref { offset, .. } => Some(offset),
                    _ => None,
                }
            })
            .min()
            .unwrap();
        let heap = kv.heap_end().next_multiple_of(PAGE);
        let (offset, len) = redis_table(heap);
        assert_eq!(len, 8 << 15);
        let error = offset.abs_diff(first_bucket) as f64 / heap as f64;
        assert!(error < 0.01, "model {offset}, kv {first_bucket} in {heap}");
    }

    #[test]
    fn mcf_references_all_of_its_range_chasing_pointers() {
        for bytes in [MCF_PAPER_BYTES, super::super::App::MIN_BYTES] {
            let p = mcf(bytes, RUN);
            let [w] = work_phases(&p)[..] else {
                panic!("one work phase")
            };
            assert!(w.dependent);
            let s = Stream::new(w.pattern, bytes).unwrap();
            assert_eq!(s.reach_pages(), s.pages(), "the whole range is accessed");
            // Half the references go to the nodes, 9.2% of the memory at the bottom, half
            // to the arcs: a node huge page is 0.908 / 0.092 times as hot as an arc one.
            let h = heat(&p);
            let ratio = h[0] / h[h.len() / 2];
            assert!(
                (ratio / (0.908 / 0.092) - 1.0).abs() < 0.05,
                "{bytes}: {ratio}"
            );
        }
    }

    #[test]
    fn deepsjeng_accesses_its_pages_without_a_significant_difference() {
        for bytes in [DEEPSJENG_PAPER_BYTES, 256 * MIB] {
            let p = deepsjeng(bytes, RUN);
            let h = heat(&p);
            // Every whole huge page alike (the last may be partial).
            let whole = &h[..(bytes / REGION) as usize];
            let (lo, hi) = whole
                .iter()
                .fold((1.0f64, 0.0f64), |(l, h), x| (l.min(*x), h.max(*x)));
            assert!(hi < 1.000_001 * lo, "{bytes}: {lo}..{hi}");
            let [w] = work_phases(&p)[..] else {
                panic!("one work phase")
            };
            assert!(w.dependent && w.write_fraction == DEEPSJENG_STORE_SHARE);
            assert_eq!(w.compute, DEEPSJENG_POSITION_TIME);
        }
    }
}
