//! A Redis-like key-value server (HawkEye section 2.1 Figure 1, section 4 Tables 7 and 8):
//! a hash table of keys whose values live in a jemalloc-like heap ([`crate::jemalloc`]),
//! serving inserts, deletes and gets, each turned into the memory references, copies,
//! page returns and CPU time the server spends on it.
//!
//! What one request does, from Redis's data structures (`dict.c`, `object.c`, `sds.h`):
//! - The keyspace is a `dict`: an array of 8-byte bucket pointers (a large allocation
//!   of a power-of-two number of buckets) with one `dictEntry` (24 bytes) per key,
//!   chained. The key is an `sds` string (the key bytes plus a 3-byte header and a NUL),
//!   the value a `robj` (16 bytes) pointing at an `sds` of the value. Each is its own
//!   allocation, as in Redis.
//! - **Get**: the bucket, the entry, the key and the `robj` are read, each a dependent
//!   random line; then the value is copied into the reply (one reference per page, the
//!   bytes at the copy bandwidth). Then the request's fixed CPU time.
//! - **Insert** of a new key: the bucket is read, the four allocations made, the entry,
//!   key and `robj` written (one reference each), the value written (one reference per
//!   page, the bytes at the copy bandwidth, so every page of it is written and faulted
//!   in), the bucket written. When keys outnumber buckets the table doubles: the new
//!   table is allocated, every key's bucket written into it, the old one freed (Redis
//!   rehashes incrementally; the model does it at once).
//! - **Delete** of a random live key: bucket, entry, key and `robj` read, the four
//!   allocations freed (pages given back when an extent empties), the bucket written.
//!
//! The CPU time of a request apart from its memory (`request_cpu`, default 9 us) is the
//! network stack, parsing and reply of an unpipelined request: HawkEye's Table 7 measures
//! about 106-114K requests a second for 4 KB gets on one Redis process.
//!
//! Choices: which live key a delete or get picks is uniform; inserted keys are new. The
//! value size is the `sds` allocation (value bytes plus a 9-byte header), rounded to
//! jemalloc's size class.

use crate::jemalloc::{Allocation, Jemalloc, Purge, PAGE};
use crate::spec::{Phase, ProcessSpec};
use hugemm_hw::Nanos;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::Serialize;

/// Bytes of a cache line.
const LINE: u64 = 64;
/// `sizeof(dictEntry)`.
pub(crate) const ENTRY_BYTES: u64 = 24;
/// `sizeof(robj)`.
pub(crate) const ROBJ_BYTES: u64 = 16;
/// An `sds` header (`sdshdr32`: length, allocation, flags) and the terminating NUL.
pub(crate) const SDS_OVERHEAD: u64 = 10;
/// Buckets of a new dict (Redis's `DICT_HT_INITIAL_SIZE`).
pub(crate) const INITIAL_BUCKETS: u64 = 4;

/// The server's fixed parameters.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct KvServer {
    /// Virtual bytes reserved for the heap (its one VMA).
    pub heap_bytes: u64,
    /// CPU time of a request apart from its memory references and copies.
    pub request_cpu: Nanos,
    /// Bytes of a key.
    pub key_bytes: u64,
    /// Seed of the keys' choice.
    pub seed: u64,
}

impl Default for KvServer {
    fn default() -> Self {
        KvServer {
            heap_bytes: 64 << 30,
            request_cpu: Nanos(9_000),
            key_bytes: 10,
            seed: 1,
        }
    }
}

/// One step of the server's run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum KvOp {
    /// Insert `keys` new keys, each with a value of `value_bytes`.
    Insert {
        /// Keys inserted.
        keys: u64,
        /// Bytes of each value.
        value_bytes: u64,
    },
    /// Delete this share of the live keys, chosen uniformly.
    Delete {
        /// Share of the live keys (0..=1).
        share: f64,
    },
    /// Serve `requests` gets of uniformly chosen live keys.
    Get {
        /// Requests served.
        requests: u64,
    },
}

/// A phase of the server: its parameters and one step.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct KvPhase {
    /// The server (the same in every phase of one process).
    pub server: KvServer,
    /// The step.
    pub op: KvOp,
}

/// What a request does to memory, in order. Offsets are into the heap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KvAction {
    /// A reference to the line at `offset`.
    Ref {
        /// Heap offset.
        offset: u64,
        /// A write.
        write: bool,
    },
    /// Copy `len` bytes at `offset` in (a write) or out (a read): one reference per page,
    /// the bytes at the copy bandwidth.
    Copy {
        /// Heap offset.
        offset: u64,
        /// Bytes.
        len: u64,
        /// Into the heap.
        write: bool,
    },
    /// Give `len` bytes of pages at `offset` back (`MADV_DONTNEED`).
    Purge {
        /// Heap offset.
        offset: u64,
        /// Bytes.
        len: u64,
    },
    /// CPU time.
    Cpu(Nanos),
}

/// The allocations of one key.
#[derive(Clone, Copy, Debug)]
struct Key {
    id: u64,
    entry: Allocation,
    key: Allocation,
    robj: Allocation,
    value: Allocation,
    value_bytes: u64,
}

/// The server's state: heap, dict and keys.
#[derive(Clone, Debug)]
pub struct KvState {
    server: KvServer,
    heap: Jemalloc,
    table: Allocation,
    buckets: u64,
    keys: Vec<Key>,
    next_id: u64,
    rng: Xoshiro256PlusPlus,
}

impl KvState {
    /// An empty server (its initial dict allocated).
    pub fn new(server: KvServer) -> KvState {
        let mut heap = Jemalloc::new();
        let table = heap.malloc(INITIAL_BUCKETS * 8);
        KvState {
            server,
            heap,
            table,
            buckets: INITIAL_BUCKETS,
            keys: Vec::new(),
            next_id: 0,
            rng: Xoshiro256PlusPlus::seed_from_u64(server.seed),
        }
    }

    /// Live keys.
    pub fn live(&self) -> u64 {
        self.keys.len() as u64
    }

    /// Bytes of heap in use (slabs and large extents), what Redis's `used_memory`
    /// roughly reports.
    pub fn heap_active_bytes(&self) -> u64 {
        self.heap.active_bytes
    }

    /// Offsets ever handed out end here; the heap's VMA must be at least this big.
    pub fn heap_end(&self) -> u64 {
        self.heap.end()
    }

    /// The server's parameters.
    pub fn server(&self) -> &KvServer {
        &self.server
    }

    fn bucket(&self, id: u64) -> u64 {
        // Redis hashes with SipHash; any well-mixed hash spreads keys alike.
        let h = id.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29);
        self.table.offset + (h % self.buckets) * 8
    }

    fn read_chain(&self, k: &Key, out: &mut Vec<KvAction>) {
        let read = |offset| KvAction::Ref {
            offset,
            write: false,
        };
        out.push(read(self.bucket(k.id)));
        out.push(read(k.entry.offset));
        out.push(read(k.key.offset));
        out.push(read(k.robj.offset));
    }

    /// One insert of a new key with a value of `value_bytes`; its actions into `out`.
    pub fn insert(&mut self, value_bytes: u64, out: &mut Vec<KvAction>) {
        out.clear();
        let id = self.next_id;
        self.next_id += 1;
        if self.keys.len() as u64 >= self.buckets {
            self.rehash(out);
        }
        out.push(KvAction::Ref {
            offset: self.bucket(id),
            write: false,
        });
        let k = Key {
            id,
            entry: self.heap.malloc(ENTRY_BYTES),
            key: self.heap.malloc(self.server.key_bytes + SDS_OVERHEAD),
            robj: self.heap.malloc(ROBJ_BYTES),
            value: self.heap.malloc(value_bytes + SDS_OVERHEAD),
            value_bytes,
        };
        for offset in [k.entry.offset, k.key.offset, k.robj.offset] {
            out.push(KvAction::Ref {
                offset,
                write: true,
            });
        }
        out.push(KvAction::Copy {
            offset: k.value.offset,
            len: value_bytes + SDS_OVERHEAD,
            write: true,
        });
        out.push(KvAction::Ref {
            offset: self.bucket(id),
            write: true,
        });
        out.push(KvAction::Cpu(self.server.request_cpu));
        self.keys.push(k);
    }

    /// Double the dict: a new table, every key's bucket written, the old table freed.
    fn rehash(&mut self, out: &mut Vec<KvAction>) {
        let old = self.table;
        self.buckets *= 2;
        self.table = self.heap.malloc(self.buckets * 8);
        for i in 0..self.keys.len() {
            let offset = self.bucket(self.keys[i].id);
            out.push(KvAction::Ref {
                offset,
                write: true,
            });
        }
        if let Some(p) = self.heap.free(old) {
            out.push(purge(p));
        }
    }

    /// One delete of a uniformly chosen live key (nothing when none is left).
    pub fn delete(&mut self, out: &mut Vec<KvAction>) {
        out.clear();
        if self.keys.is_empty() {
            return;
        }
        let i = self.rng.gen_range(0..self.keys.len());
        let k = self.keys.swap_remove(i);
        self.read_chain(&k, out);
        for a in [k.entry, k.key, k.robj, k.value] {
            if let Some(p) = self.heap.free(a) {
                out.push(purge(p));
            }
        }
        out.push(KvAction::Ref {
            offset: self.bucket(k.id),
            write: true,
        });
        out.push(KvAction::Cpu(self.server.request_cpu));
    }

    /// One get of a uniformly chosen live key (only CPU when none is left).
    pub fn get(&mut self, out: &mut Vec<KvAction>) {
        out.clear();
        if let Some(k) =
            (!self.keys.is_empty()).then(|| self.keys[self.rng.gen_range(0..self.keys.len())])
        {
            self.read_chain(&k, out);
            out.push(KvAction::Copy {
                offset: k.value.offset,
                len: k.value_bytes + SDS_OVERHEAD,
                write: false,
            });
        }
        out.push(KvAction::Cpu(self.server.request_cpu));
    }
}

/// One step of a server's program: a phase of requests, or idle time.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum KvStep {
    /// Requests.
    Op(KvOp),
    /// No requests for this long (the server waits; its kernel daemons run).
    Idle(Nanos),
}

/// The process of a key-value server called `name`, starting at `start`, running `steps`.
pub fn kv_server(name: &str, start: Nanos, server: KvServer, steps: &[KvStep]) -> ProcessSpec {
    let phases = steps
        .iter()
        .map(|s| match *s {
            KvStep::Op(op) => Phase::Kv(KvPhase { server, op }),
            KvStep::Idle(d) => Phase::Sleep(d),
        })
        .collect();
    ProcessSpec {
        name: name.into(),
        start,
        core: None,
        phases,
    }
}

fn purge(p: Purge) -> KvAction {
    KvAction::Purge {
        offset: p.offset,
        len: p.len,
    }
}

/// The pages a copy of `len` bytes at `offset` touches, as the offsets it references:
/// `offset` itself, then the first byte of every further page.
pub fn copy_pages(offset: u64, len: u64) -> impl Iterator<Item = u64> {
    let last = (offset + len.max(1) - 1) / PAGE;
    let first = offset / PAGE;
    std::iter::once(offset).chain((first + 1..=last).map(|p| p * PAGE))
}

/// The line holding `offset`.
pub fn line_of(offset: u64) -> u64 {
    offset & !(LINE - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn purged(actions: &[KvAction]) -> u64 {
        actions
            .iter()
            .map(|a| match a {
                KvAction::Purge { len, .. } => *len,
                _ => 0,
            })
            .sum()
    }

    #[test]
    fn an_insert_writes_its_value_pages_and_a_get_reads_them() {
        let mut s = KvState::new(KvServer::default());
        let mut out = Vec::new();
        s.insert(4086, &mut out);
        let copy = out
            .iter()
            .find_map(|a| match a {
                KvAction::Copy { offset, len, write } => Some((*offset, *len, *write)),
                _ => None,
            })
            .unwrap();
        assert_eq!((copy.1, copy.2), (4096, true), "a 4 KiB sds: one page");
        assert_eq!(copy.0 % PAGE, 0, "the 4 KiB class is a page-aligned slab");
        s.get(&mut out);
        assert_eq!(
            out.iter()
                .filter(|a| matches!(a, KvAction::Ref { .. }))
                .count(),
            4
        );
        assert!(matches!(out.last(), Some(KvAction::Cpu(Nanos(9_000)))));
    }

    #[test]
    fn deleting_keys_of_page_sized_values_gives_their_pages_back() {
        let mut s = KvState::new(KvServer::default());
        let mut out = Vec::new();
        for _ in 0..1000 {
            s.insert(4086, &mut out);
        }
        let full = s.heap_active_bytes();
        let mut back = 0;
        for _ in 0..600 {
            s.delete(&mut out);
            back += purged(&out);
        }
        assert_eq!(s.live(), 400);
        // Every value page of a deleted key is purged; the small objects' slabs mostly
        // still hold live keys.
        assert!(back >= 600 * PAGE, "{back}");
        assert_eq!(s.heap_active_bytes(), full - back);
    }

    #[test]
    fn the_dict_doubles_when_keys_outnumber_buckets() {
        let mut s = KvState::new(KvServer::default());
        let mut out = Vec::new();
        for _ in 0..4 {
            s.insert(100, &mut out);
        }
        s.insert(100, &mut out);
        let writes = out
            .iter()
            .filter(|a| matches!(a, KvAction::Ref { write: true, .. }))
            .count();
        // 4 rehashed buckets, entry, key, robj, the new bucket.
        assert_eq!(writes, 4 + 3 + 1);
        assert_eq!(s.buckets, 8);
    }

    #[test]
    fn copies_touch_each_page_once() {
        let pages: Vec<u64> = copy_pages(100, 8192).collect();
        assert_eq!(pages, [100, 4096, 8192]);
        assert_eq!(copy_pages(4096, 4096).collect::<Vec<_>>(), [4096]);
        assert_eq!(line_of(130), 128);
    }
}
