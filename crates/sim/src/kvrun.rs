//! Running the phases of a key-value server ([`hugemm_workload::kv`]): its heap is one
//! anonymous VMA mapped at its first phase; each request's actions are carried out
//! through the same reference path as access phases (TLBs, caches, faults), copies cost
//! one reference per page plus the bytes at the profile's copy bandwidth, and freed pages
//! go back with `madvise(MADV_DONTNEED)` as jemalloc gives them.

use crate::engine::Engine;
use crate::process::{Activity, Proc};
use crate::results::KvPhaseResult;
use crate::run::Stop;
use hugemm_hw::{Nanos, Picos, Pid, VirtAddr};
use hugemm_mm::{HugeAdvice, Kernel, Madvise, WriteContent};
use hugemm_workload::kv::{copy_pages, line_of, KvAction, KvOp, KvPhase, KvState};

/// A server's heap: its VMA and the allocator's and keys' state.
#[derive(Clone, Debug)]
pub(crate) struct KvHeap {
    pub base: VirtAddr,
    pub bytes: u64,
    pub state: KvState,
}

/// A server phase being run.
#[derive(Clone, Debug)]
pub(crate) struct KvRun {
    op: KvOp,
    /// Requests left.
    left: u64,
    requests: u64,
    start: Picos,
    /// The current request's actions (reused).
    actions: Vec<KvAction>,
}

/// Begin a server phase: map the heap at the first one.
pub(crate) fn begin(
    kernel: &mut Kernel,
    p: &mut Proc,
    pid: Pid,
    k: KvPhase,
    now: Picos,
) -> Result<Activity, Stop> {
    if p.kv.is_none() {
        let base = kernel
            .mmap(pid, k.server.heap_bytes, HugeAdvice::None)
            .map_err(|e| Stop::Error(format!("kv heap of {} bytes: {e}", k.server.heap_bytes)))?;
        p.kv = Some(KvHeap {
            base,
            bytes: k.server.heap_bytes,
            state: KvState::new(k.server),
        });
    }
    // Keys and values hold data.
    kernel
        .set_write_content(pid, WriteContent::default())
        .map_err(|e| Stop::Error(format!("kv writes: {e}")))?;
    let live = p.kv.as_ref().map_or(0, |h| h.state.live());
    let left = match k.op {
        KvOp::Insert { keys, .. } => keys,
        KvOp::Delete { share } => (share.clamp(0.0, 1.0) * live as f64).round() as u64,
        KvOp::Get { requests } => requests,
    };
    Ok(Activity::Kv(Box::new(KvRun {
        op: k.op,
        left,
        requests: 0,
        start: now,
        actions: Vec::new(),
    })))
}

fn op_name(op: KvOp) -> &'static str {
    match op {
        KvOp::Insert { .. } => "insert",
        KvOp::Delete { .. } => "delete",
        KvOp::Get { .. } => "get",
    }
}

impl Engine {
    /// Serve requests of process `i`'s server phase on core `c` until `bound`. `Ok(true)`
    /// when the phase is over.
    pub(crate) fn kv_turn(&mut self, i: usize, c: usize, bound: Picos) -> Result<bool, Stop> {
        let Activity::Kv(mut run) = std::mem::replace(&mut self.procs[i].activity, Activity::Begin)
        else {
            unreachable!("kv_turn() on another activity")
        };
        let mut heap = self.procs[i]
            .kv
            .take()
            .expect("the heap is mapped at begin");
        let result = self.serve(i, c, bound, &mut run, &mut heap);
        let p = &mut self.procs[i];
        p.kv = Some(heap);
        result?;
        let now = self.cores[c].now;
        if run.left > 0 {
            p.activity = Activity::Kv(run);
            return Ok(false);
        }
        let pid = p.pid.expect("running");
        let state = &p.kv.as_ref().expect("put back").state;
        let secs = (now.0.saturating_sub(run.start.0)) as f64 / 1e12;
        let result = KvPhaseResult {
            op: op_name(run.op).into(),
            requests: run.requests,
            start_ns: run.start.to_nanos().0,
            end_ns: now.to_nanos().0,
            requests_per_s: if secs > 0.0 {
                run.requests as f64 / secs
            } else {
                0.0
            },
            keys_end: state.live(),
            heap_bytes_end: state.heap_active_bytes(),
            rss_bytes_end: self.kernel.rss_bytes(pid),
            useful_bytes_end: self.kernel.useful_bytes(pid),
        };
        p.kv_results.push(result);
        Ok(true)
    }

    fn serve(
        &mut self,
        i: usize,
        c: usize,
        bound: Picos,
        run: &mut KvRun,
        heap: &mut KvHeap,
    ) -> Result<(), Stop> {
        let copy_gbps = self.kernel.costs().copy_gbps;
        let syscall = Picos((self.exp.profile.costs.fault_trap_ns * 1000.0) as u64);
        // A request's work per reference is not modelled: no reorder-window bound.
        self.cores[c].mmu.set_instructions_per_ref(None);
        while run.left > 0 && self.cores[c].now < bound {
            match run.op {
                KvOp::Insert { value_bytes, .. } => {
                    heap.state.insert(value_bytes, &mut run.actions)
                }
                KvOp::Delete { .. } => heap.state.delete(&mut run.actions),
                KvOp::Get { .. } => heap.state.get(&mut run.actions),
            }
            if heap.state.heap_end() > heap.bytes {
                return Err(Stop::Error(format!(
                    "kv heap outgrew its {} bytes (kv_server heap)",
                    heap.bytes
                )));
            }
            for a in run.actions.iter().copied() {
                self.act(i, c, heap.base, a, copy_gbps, syscall)?;
            }
            self.procs[i].pmu.sync_cycles(self.cycles_per_ps);
            run.left -= 1;
            run.requests += 1;
        }
        Ok(())
    }

    /// Carry out one action of a request of process `i` on core `c`.
    fn act(
        &mut self,
        i: usize,
        c: usize,
        base: VirtAddr,
        a: KvAction,
        copy_gbps: f64,
        syscall: Picos,
    ) -> Result<(), Stop> {
        let va = |off: u64| VirtAddr(base.0 + off);
        match a {
            KvAction::Ref { offset, write } => {
                let (procs, mut ctx) = self.split_ctx(c);
                ctx.reference(&mut procs[i], va(line_of(offset)), write, true, true)
                    .map(|_| ())
            }
            KvAction::Copy { offset, len, write } => {
                for page in copy_pages(offset, len) {
                    let (procs, mut ctx) = self.split_ctx(c);
                    ctx.reference(&mut procs[i], va(line_of(page)), write, false, true)?;
                }
                let t = Picos::from(Nanos((len as f64 / copy_gbps).round() as u64));
                self.cores[c].now += t;
                self.procs[i].pmu.count_compute(t);
                Ok(())
            }
            KvAction::Purge { offset, len } => {
                let pid = self.procs[i].pid.expect("running");
                let t = self
                    .kernel
                    .madvise(pid, va(offset), len, Madvise::DontNeed)
                    .map_err(|e| Stop::Error(format!("kv purge: {e}")))?;
                self.cores[c].now += syscall + Picos::from(t);
                Ok(())
            }
            KvAction::Cpu(t) => {
                let t = Picos::from(t);
                self.cores[c].now += t;
                self.procs[i].pmu.count_compute(t);
                Ok(())
            }
        }
    }
}
