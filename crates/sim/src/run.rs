//! Running a process on its core: beginning phases, making references (with the faults
//! they cause), and in sampled mode alternating measured windows with skips.
//!
//! # Accessed bits
//!
//! A reference ([`Ctx::reference`]) is translated by the kernel model first
//! ([`Kernel::touch`]: physical address, page size, the dirty bit on a write) and priced by
//! the core's MMU after ([`Mmu::access`]). Under `[kernel] accessed_bits = "walk"` (the
//! default, as x86 does) the touch leaves the accessed bit alone and says whether it is
//! set; only when the MMU reports a page walk ([`TlbOutcome::Walk`]) and the bit is clear
//! does the engine set it ([`Kernel::mark_accessed`]): one more page-table lookup per
//! first walk after a clear, none on the other references. A bit a scanner clears without
//! a flush therefore stays clear while the translation stays in this core's TLBs, and is
//! set by the walk after the entry is evicted or shot down. Under "every-reference" the
//! touch sets it, as hugemm did before.
//!
//! Skipped references (sampled mode) are not translated: each sets its accessed bit with
//! the probability that a reference to a page of its size walked in the last measured
//! window ([`crate::sampling::WalkShares`]). Those drawn from the lookahead ring and those
//! of sweeps do so here, one coin each; skipped random references do so lazily, when
//! their region is observed (`coverage.rs`, which gives the reasoning and its bias).

use crate::compaction::{direct_compact, Kcompactd};
use crate::coverage::{coin, key, skipped_touch, LazyCoverage};
use crate::engine::{Core, Engine, SLICE};
use crate::experiment::Mode;
use crate::kactivity::HighAllocPass;
use crate::lookahead::{Ahead, AHEAD};
use crate::ops::{EngineOps, LiveProc, Procs};
use crate::process::{AccessRun, Activity, Buffer, Proc};
use crate::sampling::{whole, Sampler, Stage, WalkShares, WindowAcc};
use crate::Result;
use hugemm_hw::{AccessCost, Mmu, Picos, Pmu, Reference, TlbOutcome, VirtAddr};
use hugemm_hw::{Nanos, PageSize, Pid};
use hugemm_mm::WriteContent;
use hugemm_mm::{AccessedBits, FaultInfo, FaultKind, FaultRequest, Kernel, Madvise, Touch};
use hugemm_policy::{Defrag, Policy, Pressure, Reclaimed};
use hugemm_workload::{Advice, Amount, MadviseKind, Phase, SkipCoverage, Stream};
use rand::RngCore;

/// Why a process stopped early.
pub(crate) enum Stop {
    /// Memory ran out at a fault.
    Oom,
    /// A workload error (reference outside any mapping...).
    Error(String),
}

/// Frames a fault that found none asks the policy's direct reclaim for at a time
/// (`SWAP_CLUSTER_MAX`, the batch Linux's direct reclaim aims at).
const DIRECT_RECLAIM_BATCH: u64 = 32;
/// Direct reclaims one fault may run before it is declared out of memory.
const DIRECT_RECLAIM_TRIES: u32 = 16;

/// The pieces of the engine a reference needs, borrowed apart.
pub(crate) struct Ctx<'a> {
    pub kernel: &'a mut Kernel,
    pub policy: &'a mut dyn Policy,
    pub core: &'a mut Core,
    pub cycles_per_ps: f64,
    pub kcompactd: &'a mut Kcompactd,
    /// The live processes, for the policy's direct reclaim.
    pub live: &'a [LiveProc],
    pub scan_cost: Picos,
    /// The host, when this engine runs a VM's guest.
    pub host: Option<&'a mut crate::host::GuestHost>,
}

impl Ctx<'_> {
    /// Resolve `va` to a mapping, faulting as needed; returns the physical address, the
    /// page size, whether the entry's accessed bit is set, and the fault time spent.
    #[inline]
    pub(crate) fn resolve(
        &mut self,
        p: &mut Proc,
        va: VirtAddr,
        write: bool,
    ) -> std::result::Result<Resolved, Stop> {
        let pid = p.pid.expect("running process has a pid");
        match self.kernel.touch(pid, va, write) {
            Touch::Mapped { pa, size, young } => Ok((pa, size, young, Picos(0))),
            first => self.resolve_faulting(p, va, write, first),
        }
    }

    /// [`Ctx::resolve`] after a `first` touch that did not map `va`: fault and touch
    /// again, up to three faults. Out of line: few references fault.
    #[cold]
    #[inline(never)]
    fn resolve_faulting(
        &mut self,
        p: &mut Proc,
        va: VirtAddr,
        write: bool,
        first: Touch,
    ) -> std::result::Result<Resolved, Stop> {
        let pid = p.pid.expect("running process has a pid");
        let mut spent = Picos(0);
        let mut touch = first;
        for attempt in 0..3 {
            match touch {
                Touch::Mapped { pa, size, young } => return Ok((pa, size, young, spent)),
                Touch::NotPresent | Touch::WriteToZeroPage => spent += self.fault(p, va, write)?,
                Touch::Segfault => {
                    return Err(Stop::Error(format!(
                        "reference to unmapped address {:#x}",
                        va.0
                    )))
                }
            }
            if attempt < 2 {
                touch = self.kernel.touch(pid, va, write);
            }
        }
        Err(Stop::Error(format!("fault at {:#x} did not resolve", va.0)))
    }

    /// Take one fault: ask the policy for the page size (and, for 4 KB, whether to
    /// reserve a superpage), let the kernel map it. A fault that finds no frame at all
    /// asks the policy to give memory back ([`Policy::reclaim`], direct) and retries,
    /// up to [`DIRECT_RECLAIM_TRIES`] times, before the process is out of memory.
    fn fault(
        &mut self,
        p: &mut Proc,
        va: VirtAddr,
        write: bool,
    ) -> std::result::Result<Picos, Stop> {
        let pid = p.pid.expect("running process has a pid");
        let Some(info) = self.kernel.fault_info(pid, va) else {
            return Err(Stop::Error(format!(
                "fault outside any mapping at {:#x}",
                va.0
            )));
        };
        let want = self.policy.fault_size(pid, &info);
        let stall = self.defrag(want, &info);
        let reserve = want == PageSize::Base && self.policy.reserve_at_fault(pid, &info);
        let req = FaultRequest::new(want)
            .reserve(reserve)
            .promote(self.policy.promote_reservations())
            .huge_zero_page(self.policy.use_huge_zero_page());
        let mut out = self.kernel.fault_with(pid, va, write, req);
        let (mut cost, mut alloc, mut zeroing) = (out.cost, out.alloc, out.zeroing);
        let mut tries = 0;
        while out.oom && tries < DIRECT_RECLAIM_TRIES {
            tries += 1;
            let now = self.core.now + Picos::from(stall + cost);
            let r = self.direct_reclaim(now.to_nanos());
            cost += r.cpu;
            alloc += r.cpu;
            if r.freed == 0 {
                break;
            }
            out = self.kernel.fault_with(pid, va, write, req);
            cost += out.cost;
            alloc += out.alloc;
            zeroing += out.zeroing;
        }
        p.fault_time += cost + stall;
        p.fault_alloc += alloc + stall;
        p.fault_zeroing += zeroing;
        self.core.now += Picos::from(stall);
        if out.oom {
            let _ = p.fault_latency.record((cost + stall).0.max(1));
            self.core.now += Picos::from(cost);
            return Err(Stop::Oom);
        }
        count_fault(&mut p.pmu, out.kind);
        let region = va.0 & !(self.kernel.geometry().huge_bytes() - 1);
        let mapped = match out.kind {
            FaultKind::HugeZeroPage => PageSize::Base,
            _ => out.size,
        };
        self.policy.fault_taken(pid, VirtAddr(region), mapped);
        if out.kind == FaultKind::HugeFallback {
            p.faults_huge_fallback += 1;
        }
        if self.host.is_some() && !matches!(out.kind, FaultKind::ZeroPage | FaultKind::HugeZeroPage)
        {
            let host = self.host_populate(pid, va);
            p.fault_time += host;
            p.fault_alloc += host;
            cost += host;
        }
        let _ = p.fault_latency.record((cost + stall).0.max(1));
        let t = Picos::from(cost);
        self.core.now += t;
        Ok(t)
    }

    /// In a guest: the host backs the frame a fault just mapped at `va`; returns the
    /// host's time, which the fault pays (`host/`).
    #[cold]
    fn host_populate(&mut self, pid: Pid, va: VirtAddr) -> Nanos {
        let (Some(h), Some((pa, size))) = (self.host.as_deref_mut(), self.kernel.peek(pid, va))
        else {
            return Nanos::ZERO;
        };
        let bytes = self.kernel.geometry().bytes(size);
        let done = h.populate(pa & !(bytes - 1), bytes);
        self.core.mmu.set_host_huge(pa >> 21, done.huge);
        done.time
    }

    /// The policy's direct reclaim, for a fault that found no frame.
    #[cold]
    fn direct_reclaim(&mut self, now: Nanos) -> Reclaimed {
        let mut ops = EngineOps {
            kernel: self.kernel,
            procs: Procs::Live(self.live),
            now,
            scan_cost: self.scan_cost,
        };
        self.policy
            .reclaim(&mut ops, DIRECT_RECLAIM_BATCH, Pressure::Direct)
    }

    /// Before a huge-page fault with no free huge block: compact directly or wake
    /// kcompactd, as the policy's defrag setting says. Returns the stall.
    fn defrag(&mut self, want: PageSize, info: &FaultInfo) -> Nanos {
        let order = self.kernel.geometry().huge_order();
        if want != PageSize::Huge || self.kernel.phys().has_free_block(order) {
            return Nanos::ZERO;
        }
        match self.policy.fault_defrag(info) {
            Defrag::Direct => direct_compact(self.kernel, order),
            Defrag::Wake => {
                self.kcompactd.wake = Some(order);
                Nanos::ZERO
            }
            Defrag::Never => Nanos::ZERO,
        }
    }

    /// One reference: resolve, price, count (the PMU's cycle counters lag until
    /// [`Pmu::sync_cycles`]), and set the accessed bit if it walked (see the module doc).
    /// Returns its cost, the fault time it took and the size of the page referenced.
    /// `prefetch_data`: whether to prefetch the data line's cache sets (speed only).
    #[inline]
    pub(crate) fn reference(
        &mut self,
        p: &mut Proc,
        va: VirtAddr,
        write: bool,
        dependent: bool,
        prefetch_data: bool,
    ) -> std::result::Result<(AccessCost, Picos, PageSize), Stop> {
        let pid = p.pid.expect("running process has a pid");
        let (pa, size, young, faulted) = match self.kernel.touch(pid, va, write) {
            Touch::Mapped { pa, size, young } => (pa, size, young, Picos(0)),
            first => self.resolve_faulting(p, va, write, first)?,
        };
        // The data line's sets are looked up last, after the translation: start bringing
        // them into the host's caches now (speed only), unless the caller says the
        // reference stays in the page of the one before (a sweep, whose sets the host's
        // caches follow anyway).
        if prefetch_data {
            self.core.mmu.prefetch_data(pa);
        }
        let cost = self.core.mmu.access(&Reference {
            asid: pid.0,
            va,
            size,
            pa,
            dependent,
            write,
        });
        p.pmu.count(&cost, write);
        self.core.now += cost.time;
        if cost.outcome == TlbOutcome::Walk {
            if !young {
                self.kernel.mark_accessed(pid, va);
            }
            if let Some(s) = p.tlb_sampler.as_deref_mut() {
                s.walk(va);
            }
            if let Some(h) = self.host.as_deref_mut() {
                let t = h.walked(pa, write);
                if t > Nanos::ZERO {
                    p.fault_time += t;
                    self.core.now += Picos::from(t);
                }
            }
        }
        Ok((cost, faulted, size))
    }
}

/// What [`Ctx::resolve`] found: physical address, page size, whether the entry's accessed
/// bit is set, fault time spent.
type Resolved = (u64, PageSize, bool, Picos);

fn count_fault(pmu: &mut Pmu, kind: FaultKind) {
    match kind {
        FaultKind::Base | FaultKind::HugeFallback => pmu.faults_4k += 1,
        FaultKind::Huge => pmu.faults_2m += 1,
        FaultKind::ZeroPage | FaultKind::HugeZeroPage => pmu.faults_zero_page += 1,
        FaultKind::CowZeroPage => {
            pmu.faults_cow += 1;
            pmu.faults_4k += 1;
        }
    }
}

impl Engine {
    /// Give core `c` its turn, up to core time `bound`.
    pub(crate) fn run_core(&mut self, c: usize, bound: Picos) -> Result<()> {
        let Some(&i) = self.cores[c].queue.front() else {
            return Ok(());
        };
        if let Some(bw) = &mut self.bandwidth {
            bw.turn_start(&self.cores[c], &self.procs[i]);
        }
        let outcome = self.step(i, c, bound);
        if let Some(bw) = &mut self.bandwidth {
            bw.turn_end(i, &self.cores[c], &self.procs[i]);
        }
        let now = self.cores[c].now;
        self.background_reclaim(now);
        if self.kcompactd.wake.is_some() {
            self.wake_kcompactd(now);
        }
        match outcome {
            Ok(true) => {}
            Ok(false) => {
                self.exit(i, now);
                self.rotate(c, true);
                return Ok(());
            }
            Err(stop) => {
                match stop {
                    Stop::Oom => self.procs[i].oom = true,
                    Stop::Error(e) => self.procs[i].error = Some(e),
                }
                self.exit(i, now);
                self.rotate(c, true);
                return Ok(());
            }
        }
        if now >= self.cores[c].slice_end {
            self.rotate(c, false);
        }
        Ok(())
    }

    /// Next process's slice on core `c`; `drop_head` when the head process ended.
    fn rotate(&mut self, c: usize, drop_head: bool) {
        let core = &mut self.cores[c];
        if drop_head {
            core.queue.pop_front();
        } else if core.queue.len() > 1 {
            core.queue.rotate_left(1);
        }
        core.slice_end = core.now + SLICE;
    }

    /// Run process `i` on core `c` until `bound`. `Ok(false)` when it has no phase left.
    fn step(&mut self, i: usize, c: usize, bound: Picos) -> std::result::Result<bool, Stop> {
        // Pages a tiering policy had in flight held the process up.
        let stall = std::mem::take(&mut self.procs[i].stall);
        self.cores[c].now += stall;
        while self.cores[c].now < bound {
            let p = &mut self.procs[i];
            match &mut p.activity {
                Activity::Begin => {
                    if p.phase >= p.spec.phases.len() {
                        return Ok(false);
                    }
                    self.begin_phase(i, c)?;
                }
                Activity::Sleep(until) => {
                    let until = *until;
                    let core = &mut self.cores[c];
                    core.now = until.min(bound);
                    if core.now >= until {
                        p.phase += 1;
                        p.activity = Activity::Begin;
                    }
                }
                Activity::Access(_) => {
                    if self.access(i, c, bound)? {
                        let p = &mut self.procs[i];
                        p.phase += 1;
                        p.activity = Activity::Begin;
                    }
                }
                Activity::HighAlloc(_) => {
                    if self.high_alloc_turn(i, c, bound) {
                        let p = &mut self.procs[i];
                        p.phase += 1;
                        p.activity = Activity::Begin;
                    }
                }
                Activity::Kv(_) => {
                    if self.kv_turn(i, c, bound)? {
                        let p = &mut self.procs[i];
                        p.phase += 1;
                        p.activity = Activity::Begin;
                    }
                }
            }
            self.apply_tlb_flushes();
            if self.kernel.kswapd_woken() {
                // kswapd on its own thread was woken: end the turn here, so that its
                // first step runs now rather than after the rest of the turn.
                break;
            }
        }
        Ok(true)
    }

    fn begin_phase(&mut self, i: usize, c: usize) -> std::result::Result<(), Stop> {
        let sampled = matches!(self.exp.mode, Mode::Sampled(_));
        let warmup = match self.exp.mode {
            Mode::Sampled(s) => s.phase_warmup_refs,
            Mode::Exact => 0,
        };
        let syscall = Picos((self.exp.profile.costs.fault_trap_ns * 1000.0) as u64);
        let core_now = self.cores[c].now;
        let phase = self.procs[i].spec.phases[self.procs[i].phase].clone();
        if let Phase::HighAlloc {
            label,
            share,
            interval: Some(interval),
            gfp,
        } = &phase
        {
            let pass = HighAllocPass::new(self, label, *share, *gfp, Some(*interval), core_now);
            self.procs[i].activity = Activity::HighAlloc(Box::new(pass));
            return Ok(());
        }
        if phase.is_kernel_side() {
            let cost = syscall + self.kernel_phase(i, c, &phase)?;
            self.cores[c].now += cost;
            self.procs[i].phase += 1;
            return Ok(());
        }
        let p = &mut self.procs[i];
        let pid = p.pid.expect("running");
        let kernel = &mut self.kernel;
        let mut next = Activity::Begin;
        let mut cost = syscall;
        match phase {
            Phase::Mmap {
                buffer,
                bytes,
                advice,
            } => {
                let adv = match advice {
                    Advice::Default => hugemm_mm::HugeAdvice::None,
                    Advice::Hugepage => hugemm_mm::HugeAdvice::Hugepage,
                    Advice::NoHugepage => hugemm_mm::HugeAdvice::NoHugepage,
                };
                let start = kernel
                    .mmap(pid, bytes, adv)
                    .map_err(|e| Stop::Error(format!("mmap of {bytes} bytes: {e}")))?;
                p.buffers[buffer.0] = Some(Buffer {
                    start,
                    bytes,
                    coverage: None,
                    maybe_unpopulated: true,
                });
            }
            Phase::Access(a) => {
                let b = p.buffers[a.buffer.0].as_mut().ok_or_else(|| {
                    Stop::Error(format!(
                        "access to buffer {} before it is mapped",
                        a.buffer.0
                    ))
                })?;
                if let Some(mut cov) = b.coverage.take() {
                    cov.materialise_all(kernel, pid, b.start);
                }
                let stream = Stream::new(a.pattern, b.bytes).ok_or_else(|| {
                    Stop::Error(format!(
                        "pattern {:?} does not fit buffer {}",
                        a.pattern, a.buffer.0
                    ))
                })?;
                let (refs_left, deadline) = match a.amount {
                    Amount::Refs(n) => (n, Picos(u64::MAX)),
                    Amount::Duration(d) => (u64::MAX, core_now + Picos::from(d)),
                };
                let content = WriteContent {
                    nonzero_share: a.writes.nonzero_share,
                    mean_first_nonzero: a.writes.mean_first_nonzero,
                };
                kernel
                    .set_write_content(pid, content)
                    .map_err(|e| Stop::Error(format!("access phase writes: {e}")))?;
                let write_threshold = (a.write_fraction.clamp(0.0, 1.0) * u64::MAX as f64) as u64;
                let sampler = sampled.then(|| Sampler::new(core_now, warmup));
                cost = Picos(0);
                next = Activity::Access(Box::new(AccessRun {
                    phase: a,
                    stream,
                    refs_left,
                    deadline,
                    write_threshold,
                    sampler,
                    carry_refs: 0.0,
                    carry_ps: 0.0,
                    carry_events: Default::default(),
                    ahead: Default::default(),
                    prefetched_pt_line: u64::MAX,
                }));
            }
            Phase::Madvise {
                buffer,
                offset,
                len,
                advice,
            } => {
                let b = p.buffers[buffer.0].as_mut().ok_or_else(|| {
                    Stop::Error(format!(
                        "madvise of buffer {} before it is mapped",
                        buffer.0
                    ))
                })?;
                let adv = match advice {
                    MadviseKind::Hugepage => Madvise::Hugepage,
                    MadviseKind::NoHugepage => Madvise::NoHugepage,
                    MadviseKind::DontNeed => Madvise::DontNeed,
                };
                if let Some(cov) = b.coverage.as_mut() {
                    cov.materialise_all(kernel, pid, b.start);
                }
                b.maybe_unpopulated |= advice == MadviseKind::DontNeed;
                let t = kernel
                    .madvise(pid, VirtAddr(b.start.0 + offset), len, adv)
                    .map_err(|e| Stop::Error(format!("madvise: {e}")))?;
                cost += Picos::from(t);
            }
            Phase::Munmap { buffer } => {
                let b = p.buffers[buffer.0].take().ok_or_else(|| {
                    Stop::Error(format!("munmap of buffer {} that is not mapped", buffer.0))
                })?;
                let t = kernel
                    .munmap(pid, b.start, b.bytes)
                    .map_err(|e| Stop::Error(format!("munmap: {e}")))?;
                cost += Picos::from(t);
            }
            Phase::Sleep(d) => {
                cost = Picos(0);
                next = Activity::Sleep(core_now + Picos::from(d));
            }
            Phase::Kv(k) => {
                next = crate::kvrun::begin(kernel, p, pid, k, core_now)?;
            }
            _ => unreachable!("kernel phases are carried out above"),
        }
        self.cores[c].now += cost;
        let p = &mut self.procs[i];
        if matches!(next, Activity::Begin) {
            p.phase += 1;
        }
        p.activity = next;
        Ok(())
    }

    /// Advance process `i`'s paced stress-highalloc pass on core `c` until `bound`: each
    /// request when its time comes (its cost on the core's clock), waiting in between;
    /// `true` once the last request returned and the pass freed what it held.
    fn high_alloc_turn(&mut self, i: usize, c: usize, bound: Picos) -> bool {
        let Activity::HighAlloc(mut pass) =
            std::mem::replace(&mut self.procs[i].activity, Activity::Begin)
        else {
            unreachable!("high_alloc_turn() on another activity")
        };
        loop {
            if pass.made == pass.requested {
                let end = self.cores[c].now;
                self.high_alloc_end(i, *pass, end);
                return true;
            }
            let now = self.cores[c].now;
            if now >= bound {
                break;
            }
            if now < pass.next {
                self.cores[c].now = pass.next.min(bound);
                continue;
            }
            pass.next = now + pass.interval.unwrap_or(Picos(0));
            let cost = self.high_alloc_one(&mut pass);
            self.cores[c].now += cost;
        }
        self.procs[i].activity = Activity::HighAlloc(pass);
        false
    }

    /// The processes, and apart from them the pieces a reference on core `c` needs.
    pub(crate) fn split_ctx(&mut self, c: usize) -> (&mut [Proc], Ctx<'_>) {
        let ctx = Ctx {
            kernel: &mut self.kernel,
            policy: self.policy.as_mut(),
            core: &mut self.cores[c],
            cycles_per_ps: self.cycles_per_ps,
            kcompactd: &mut self.kcompactd,
            live: &self.live,
            scan_cost: self.scan_cost,
            host: self.host.as_mut(),
        };
        (&mut self.procs, ctx)
    }

    /// Advance the access phase of process `i`. `Ok(true)` when the phase is over.
    fn access(&mut self, i: usize, c: usize, bound: Picos) -> std::result::Result<bool, Stop> {
        let mode = self.exp.mode;
        let (procs, mut ctx) = self.split_ctx(c);
        let p = &mut procs[i];
        let Activity::Access(mut run) = std::mem::replace(&mut p.activity, Activity::Begin) else {
            unreachable!("access() on a non-access activity")
        };
        ctx.core
            .mmu
            .set_instructions_per_ref(run.phase.instructions_per_ref.map(f64::from));
        let result = match (mode, run.sampler.as_ref().map(|s| s.stage)) {
            (Mode::Sampled(cfg), Some(stage)) => {
                sampled_turn(&mut ctx, p, &mut run, bound, cfg, stage)
            }
            _ => exact_refs(&mut ctx, p, &mut run, u64::MAX, bound, None).map(|_| ()),
        };
        let done = run.done(ctx.core.now);
        p.activity = Activity::Access(run);
        result.map(|_| done)
    }
}

/// Generate the next reference of `run`'s stream into its lookahead ring, and prefetch the
/// page-table entry that will translate it and the modelled caches' sets (beyond the
/// first level) of the page-table line its walk ends at: that line's tag depends on the
/// virtual address alone, so no second page-table lookup is needed, and a random
/// reference's walk otherwise stalls the simulator on host memory at its leaf line.
#[inline(always)]
fn generate(
    kernel: &Kernel,
    mmu: &Mmu,
    p: &mut Proc,
    run: &mut AccessRun,
    base: VirtAddr,
    pid: Pid,
) {
    let off = run.stream.next_offset(&mut p.rng);
    let write = run.write_threshold != 0 && p.rng.next_u64() <= run.write_threshold;
    let va = VirtAddr(base.0 + off);
    if let Some(size) = kernel.prefetch(pid, va) {
        if off >> PT_LINE_SPAN_SHIFT != run.prefetched_pt_line {
            run.prefetched_pt_line = off >> PT_LINE_SPAN_SHIFT;
            mmu.prefetch_translation(pid.0, va, size);
        }
    }
    run.ahead.push(Ahead { off, write });
}

/// log2 of the bytes of buffer whose 4 KB pages share a page-table line (eight entries).
const PT_LINE_SPAN_SHIFT: u32 = 15;

/// Fill `run`'s lookahead ring but for one reference: kept out of line, so the hot loop
/// of [`exact_refs`] (which generates one reference per reference made) stays small.
#[cold]
#[inline(never)]
fn fill_ahead(
    kernel: &Kernel,
    mmu: &Mmu,
    p: &mut Proc,
    run: &mut AccessRun,
    base: VirtAddr,
    pid: Pid,
) {
    while run.ahead.len() + 1 < AHEAD {
        generate(kernel, mmu, p, run, base, pid);
    }
}

/// Up to `max` exact references, stopping at `bound` or the end of the phase; measured into
/// `acc` if given. Returns the references made.
fn exact_refs(
    ctx: &mut Ctx,
    p: &mut Proc,
    run: &mut AccessRun,
    max: u64,
    bound: Picos,
    acc: Option<&mut WindowAcc>,
) -> std::result::Result<u64, Stop> {
    let made = exact_loop(ctx, p, run, max, bound, acc);
    // The loop counts without converting to cycles; nothing reads the PMU before this.
    p.pmu.sync_cycles(ctx.cycles_per_ps);
    made
}

/// [`exact_refs`] but for the PMU's cycle counters.
#[inline(always)]
fn exact_loop(
    ctx: &mut Ctx,
    p: &mut Proc,
    run: &mut AccessRun,
    max: u64,
    bound: Picos,
    mut acc: Option<&mut WindowAcc>,
) -> std::result::Result<u64, Stop> {
    let base = p.buffers[run.phase.buffer.0]
        .as_ref()
        .map(|b| b.start)
        .ok_or_else(|| Stop::Error("access to an unmapped buffer".into()))?;
    let compute = Picos::from(run.phase.compute);
    let mut done = 0;
    let pid = p.pid.expect("running process has a pid");
    // The 4 KB page of the buffer the last reference fell in (data-line prefetch only).
    let mut last_page = u64::MAX;
    while done < max && ctx.core.now < bound && !run.done(ctx.core.now) {
        // The ring is full before each reference: one short after the last one, more only
        // at a phase's start or after a skip.
        if run.ahead.len() + 1 < AHEAD {
            fill_ahead(ctx.kernel, &ctx.core.mmu, p, run, base, pid);
        }
        if !run.ahead.is_full() {
            generate(ctx.kernel, &ctx.core.mmu, p, run, base, pid);
        }
        let Some(Ahead { off, write }) = run.ahead.pop() else {
            unreachable!("filled above")
        };
        let before = ctx.core.now;
        let new_page = off >> 12 != last_page;
        last_page = off >> 12;
        let (cost, faulted, size) = ctx.reference(
            p,
            VirtAddr(base.0 + off),
            write,
            run.phase.dependent,
            new_page,
        )?;
        if compute.0 > 0 {
            ctx.core.now += compute;
            p.pmu.count_compute(compute);
        }
        run.refs_left = run.refs_left.saturating_sub(1);
        p.references_exact += 1;
        done += 1;
        if let Some(acc) = acc.as_deref_mut() {
            acc.refs += 1;
            acc.time += ctx.core.now - before - faulted;
            acc.fault_time += faulted;
            if write {
                acc.walk_store += cost.walk;
            } else {
                acc.walk_load += cost.walk;
            }
            let walked = cost.outcome == TlbOutcome::Walk;
            match cost.outcome {
                TlbOutcome::L1Hit => acc.l1_hits += 1,
                TlbOutcome::StlbHit => acc.stlb_hits += 1,
                TlbOutcome::Walk => acc.walks += 1,
            }
            if size == PageSize::Base {
                acc.base_refs += 1;
                acc.base_walks += walked as u64;
            }
        }
    }
    Ok(done)
}

/// One turn of a sampled access phase.
fn sampled_turn(
    ctx: &mut Ctx,
    p: &mut Proc,
    run: &mut AccessRun,
    bound: Picos,
    cfg: crate::experiment::SampledConfig,
    stage: Stage,
) -> std::result::Result<(), Stop> {
    let mut sampler = run.sampler.take().expect("sampled phase has a sampler");
    let r = match stage {
        Stage::PhaseWarmup { left } => {
            if sampler.next_window <= ctx.core.now {
                // The schedule starts with the phase (and again should a long warm-up
                // outlast a period).
                sampler.next_window = ctx.core.now + Picos::from(cfg.period);
            }
            let mut acc = sampler.acc;
            let n = exact_refs(ctx, p, run, left, bound, Some(&mut acc))?;
            sampler.phase_refs += n;
            sampler.acc = acc;
            sampler.stage = if n < left {
                Stage::PhaseWarmup { left: left - n }
            } else {
                sampler.acc = WindowAcc::default();
                match sampler.finish_warmup_block(acc.means(), cfg.phase_warmup_max_refs) {
                    Some(next) => Stage::PhaseWarmup { left: next },
                    // The first window starts now.
                    None => Stage::Warmup { left: 0 },
                }
            };
            Ok(())
        }
        Stage::Warmup { left } => {
            if sampler.next_window <= ctx.core.now {
                // A window due now (not one brought forward by a capped skip) sets the
                // schedule: the next is due a period after it starts.
                sampler.next_window = ctx.core.now + Picos::from(cfg.period);
            }
            let n = exact_refs(ctx, p, run, left, bound, None)?;
            sampler.phase_refs += n;
            sampler.stage = if n >= left {
                Stage::Measure {
                    left: cfg.window_refs,
                }
            } else {
                Stage::Warmup { left: left - n }
            };
            sampler.acc = WindowAcc::default();
            Ok(())
        }
        Stage::Measure { left } => {
            let mut acc = sampler.acc;
            let n = exact_refs(ctx, p, run, left, bound, Some(&mut acc))?;
            sampler.phase_refs += n;
            sampler.acc = acc;
            let short_of_walks = acc.walks < cfg.window_walks && acc.refs < 20 * cfg.window_refs;
            if n >= left && short_of_walks {
                sampler.stage = Stage::Measure {
                    left: cfg.window_refs,
                };
            } else if n >= left {
                let settled = match acc.means() {
                    Some(m) => sampler.finish_window(m),
                    None => sampler.means.is_some(),
                };
                sampler.acc = WindowAcc::default();
                sampler.stage = if settled {
                    Stage::Skip
                } else {
                    Stage::Measure {
                        left: cfg.window_refs,
                    }
                };
            } else {
                sampler.stage = Stage::Measure { left: left - n };
            }
            Ok(())
        }
        Stage::Skip => skip(ctx, p, run, &mut sampler, bound, cfg),
    };
    run.sampler = Some(sampler);
    r
}

/// Skip references until the next window, the bound or the end of the phase.
fn skip(
    ctx: &mut Ctx,
    p: &mut Proc,
    run: &mut AccessRun,
    s: &mut Sampler,
    bound: Picos,
    cfg: crate::experiment::SampledConfig,
) -> std::result::Result<(), Stop> {
    if ctx.core.now >= s.next_window {
        s.stage = Stage::Warmup {
            left: cfg.warmup_refs,
        };
        return Ok(());
    }
    let Some(m) = s.means else {
        // Nothing measured yet (cannot happen with window_refs >= 1): stay exact.
        return exact_refs(ctx, p, run, u64::MAX, bound, None).map(|_| ());
    };
    let until = bound.min(s.next_window).min(run.deadline);
    let budget = until.0.saturating_sub(ctx.core.now.0) as f64;
    // Sized with the window's faults (WindowMeans::fault_ps), charged without them.
    let per_ref = m.time_ps + m.fault_ps;
    let by_time = whole(budget / per_ref.max(1e-3), &mut run.carry_refs).min(run.refs_left);
    let n = by_time.min(s.skip_limit());
    if n == 0 {
        // Less than one reference fits before `until`: let the clock reach it.
        ctx.core.now = until;
        return Ok(());
    }
    if n < by_time {
        // Capped by the phase's length so far: measure again right after this skip.
        s.stage = Stage::Warmup {
            left: cfg.warmup_refs,
        };
    }
    s.phase_refs += n;
    ctx.core.now += Picos(whole(n as f64 * m.time_ps, &mut run.carry_ps));
    run.refs_left = run.refs_left.saturating_sub(n);
    // The clock advanced by the carried total above; the PMU takes the rounded means, so
    // the two may differ by under a nanosecond per skip.
    let skipped = m.scaled(n, &mut run.carry_events);
    p.pmu.record_skipped(&skipped, ctx.cycles_per_ps);
    p.references_skipped += n;
    if let Some(s) = p.tlb_sampler.as_deref_mut() {
        s.skipped(skipped.walks);
    }
    // References already generated into the lookahead ring come first: their footprint
    // is applied one by one, and the stream skips the rest.
    let from_ring = (run.ahead.len() as u64).min(n);
    let base = p.buffers[run.phase.buffer.0]
        .as_ref()
        .map(|b| b.start)
        .ok_or_else(|| Stop::Error("skip over an unmapped buffer".into()))?;
    let shares = match ctx.kernel.accessed_bits() {
        AccessedBits::Walk => Some(m.walk_shares),
        AccessedBits::EveryReference => None,
    };
    let pid = p.pid.expect("running process has a pid");
    for i in 0..from_ring {
        let Some(Ahead { off, write }) = run.ahead.pop() else {
            unreachable!("counted above")
        };
        let va = VirtAddr(base.0 + off);
        let (_, size, young, _) = ctx.resolve(p, va, write)?;
        if let (Some(w), false) = (shares, young) {
            if coin(key(&[p.seed, off, p.pmu.references, i, WALK_COIN])) < w.of(size) {
                ctx.kernel.mark_accessed(pid, va);
            }
        }
    }
    let coverage = run.stream.skip(n - from_ring);
    apply_footprint(ctx, p, run, coverage, n - from_ring, shares)
}

/// Salt of the coins that decide whether a skipped reference walked.
const WALK_COIN: u64 = 0xACCE55ED;

/// Apply what `coverage` (of `refs` skipped references) touched: first touches (faults)
/// now, accessed bits now for sequential sweeps and lazily for random patterns. `shares`:
/// the shares of references that walk (`None` when every reference sets the bit).
fn apply_footprint(
    ctx: &mut Ctx,
    p: &mut Proc,
    run: &mut AccessRun,
    coverage: SkipCoverage,
    refs: u64,
    shares: Option<WalkShares>,
) -> std::result::Result<(), Stop> {
    match coverage {
        SkipCoverage::Pages {
            first_page,
            pages: n,
        } => {
            let sweep = shares.map(|w| (w, refs as f64 / n.max(1) as f64));
            touch_range(ctx, p, run, first_page, n, sweep)
        }
        SkipCoverage::Random { refs } => random_footprint(ctx, p, run, refs, shares),
        SkipCoverage::Mixed {
            swept,
            refs: random,
        } => {
            let pages: u64 = swept.iter().map(|s| s.1).sum();
            let per_page = refs.saturating_sub(random) as f64 / pages.max(1) as f64;
            for (first_page, n) in swept {
                touch_range(ctx, p, run, first_page, n, shares.map(|w| (w, per_page)))?;
            }
            if random > 0 {
                random_footprint(ctx, p, run, random, shares)?;
            }
            Ok(())
        }
    }
}

/// The probability that a sweep's references to one 4 KB page of a mapping of `size` set
/// the mapping's accessed bit, when `per_page` of them reach each 4 KB page and a share
/// `walks` of references to pages of that size walk: the walks expected per mapping,
/// capped at 1 (a sweep over more than the TLBs hold walks each page once per pass, one
/// they hold walks it never), spread over its 4 KB pages so that a whole 2 MB page swept
/// draws it once.
fn sweep_walk_probability(size: PageSize, walks: f64, per_page: f64) -> f64 {
    let pages = match size {
        PageSize::Base => 1.0,
        _ => 512.0,
    };
    let per_mapping = (walks * per_page * pages).min(1.0);
    1.0 - (1.0 - per_mapping).powf(1.0 / pages)
}

/// The start and the pages of the buffer `run` references.
fn run_buffer(p: &Proc, run: &AccessRun) -> std::result::Result<(VirtAddr, u64), Stop> {
    match p.buffers[run.phase.buffer.0].as_ref() {
        Some(buf) => Ok((buf.start, buf.bytes / 4096)),
        None => Err(Stop::Error("skip over an unmapped buffer".into())),
    }
}

/// Touch the `n` pages from `first_page` (modulo the buffer's pages) in order, each a
/// write with the phase's write fraction. `sweep`: the walk shares and the references
/// per page, for the accessed bits ([`sweep_walk_probability`]); `None` when the touch
/// sets them.
fn touch_range(
    ctx: &mut Ctx,
    p: &mut Proc,
    run: &AccessRun,
    first_page: u64,
    n: u64,
    sweep: Option<(WalkShares, f64)>,
) -> std::result::Result<(), Stop> {
    let (base, pages) = run_buffer(p, run)?;
    let w = run.phase.write_fraction;
    let epoch = p.pmu.references;
    let pid = p.pid.expect("running process has a pid");
    for k in 0..n {
        let page = (first_page + k) % pages;
        let write = w >= 1.0 || (w > 0.0 && coin(key(&[p.seed, page, epoch])) < w);
        let (_, size, young, _) = touch_page(ctx, p, base, page, write)?;
        if let (Some((shares, per_page)), false) = (sweep, young) {
            let walk = sweep_walk_probability(size, shares.of(size), per_page);
            if coin(key(&[p.seed, page, epoch, WALK_COIN])) < walk {
                ctx.kernel
                    .mark_accessed(pid, VirtAddr(base.0 + page * 4096));
            }
        }
    }
    Ok(())
}

/// The footprint of `refs` skipped random references: first touches eagerly, accessed
/// bits lazily (`shares` of them walk; `None`: the touches set the bits).
fn random_footprint(
    ctx: &mut Ctx,
    p: &mut Proc,
    run: &mut AccessRun,
    refs: u64,
    shares: Option<WalkShares>,
) -> std::result::Result<(), Stop> {
    let b = run.phase.buffer.0;
    let (base, pages) = run_buffer(p, run)?;
    let w = run.phase.write_fraction;
    let epoch = p.pmu.references;
    let pid = p.pid.expect("running process has a pid");
    if p.buffers[b]
        .as_ref()
        .is_some_and(|buf| buf.maybe_unpopulated)
    {
        // First touches, eagerly, of the pages not yet present; their accessed
        // bits, like everyone's, come from the lazy coverage below (setting a bit
        // twice changes nothing).
        let mut missing = false;
        for page in 0..pages {
            let va = VirtAddr(base.0 + page * 4096);
            if ctx.kernel.peek(pid, va).is_some() {
                continue;
            }
            let k = key(&[p.seed, page, epoch]);
            match skipped_touch(&run.stream, page, refs, w, k) {
                Some(write) => {
                    touch_page(ctx, p, base, page, write)?;
                }
                None => missing = true,
            }
        }
        p.buffers[b].as_mut().expect("checked").maybe_unpopulated = missing;
    }
    let regions = pages.div_ceil(512) as usize;
    let seed = p.seed;
    let buf = p.buffers[b].as_mut().expect("checked");
    buf.coverage
        .get_or_insert_with(|| LazyCoverage::new(run.stream.clone(), w, regions, seed))
        .add(refs, shares.unwrap_or(WalkShares::ALL));
    Ok(())
}

fn touch_page(
    ctx: &mut Ctx,
    p: &mut Proc,
    base: VirtAddr,
    page: u64,
    write: bool,
) -> std::result::Result<Resolved, Stop> {
    ctx.resolve(p, VirtAddr(base.0 + page * 4096), write)
}
