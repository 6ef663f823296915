//! Virtual machines under a host kernel: a host [`Engine`] whose processes are VMs, and
//! one guest [`Engine`] per VM, run in lockstep ([`HostedRun`]).
//!
//! # Model
//!
//! A VM is what KVM makes it: a process of the host (QEMU) whose anonymous memory is the
//! guest's physical memory. Guest-physical byte `gpa` of VM `v` is byte `gpa` of VM `v`'s
//! one buffer in the host, mapped with `MADV_HUGEPAGE` as QEMU maps guest RAM (unless
//! [`GuestVm::advice`] says otherwise).
//! Two kernels, two policies:
//!
//! - the **guest** engine runs the guest's processes over the guest's kernel and policy on
//!   a guest machine profile (one with a `[guest]` table, whose walks are two-dimensional,
//!   `hugemm-hw`'s `nested.rs`);
//! - the **host** engine runs the host's kernel and policy (linux, ingens, hawkeye...) on
//!   the bare-metal version of the same profile. Its policy's daemons scan, promote and
//!   demote the VMs' memory as they would any process's, with their own CPU time.
//!
//! What flows between them:
//!
//! 1. **First touch.** A guest fault that maps a new guest frame (the guest kernel zeroes
//!    it) touches every 4 KB of it in the host, synchronously ([`HostMemory::populate`]):
//!    host faults, sized by the host's policy, whose time the guest's fault pays. A guest
//!    2 MB fault on a host that answers with 4 KB pages costs 512 host faults. Guest
//!    page-cache reads into new frames and the guest's pre-zeroing of free blocks do the
//!    same (the reader and the pre-zeroing daemon pay).
//! 2. **Accessed bits.** Only a walk sets an accessed bit, and in a guest every walk ends
//!    with the host translation of the data's gPA. The guest engine records the gPA page
//!    of every walk; at each lockstep the host sets those pages' accessed bits
//!    ([`hugemm_mm::Kernel::mark_accessed`]). A page the guest kernel wrote without a
//!    fault (a guest collapse's copy, a migration) is first seen here and is populated
//!    then, at the host's cost. The nested TLB is ignored for this purpose: a walk whose
//!    host translation hit the NTLB sets no host bit on real hardware; here it does.
//! 3. **Host page sizes.** A host fault's size reaches the guest cores' MMUs at once.
//!    After each lockstep, every range the host's kernel flushed (a promotion, a split,
//!    an unmap: each mapping it changed) is re-read and its regions' sizes written into
//!    the guest cores' MMUs ([`Engine::set_host_regions`]); if any changed, every guest
//!    core's TLBs are flushed, as KVM flushes a VM's TLBs when it changes a mapping the VM
//!    may have cached.
//! 4. **Ballooning.** A guest's balloon driver (`Phase::Balloon`) hands guest pages to the
//!    host, which discards their backing at once ([`HostMemory::discard`]: `MADV_DONTNEED`
//!    per 4 KB page, as QEMU's virtio-balloon does, so a host huge page a balloon page
//!    falls in is split).
//!
//! Time: each lockstep lets every guest run [`HostedRun::QUANTUM`] of simulated time in
//! turn, then the host. Host daemons run on the host's own core: their CPU is reported, not
//! taken from the vCPUs (the host is assumed to have cores the vCPUs do not use).
//!
//! 5. **Same-page merging and free page reporting** (optional, [`Ksm`],
//!    [`FreePageReporting`]): the host maps guest pages whose content is zero to its zero
//!    page; the guests' balloon drivers report free 2 MB blocks, whose backing the host
//!    drops. With a guest's pre-zeroing these are the mechanisms of HawkEye's Figure 11.
//!
//! 6. **Swap** (optional, [`HostSwap`], `swap.rs`): an overcommitted host writes VM memory
//!    out to a swap device, least recently used first by the host's accessed bits, and
//!    reads it back when the guest next uses it, the guest waiting.
//!
//! What this leaves out: host access bits from references
//! the guest skipped in sampled mode (only measured windows and first touches reach the
//! host; the host's view of every VM is thinned by the same factor, so its rankings keep
//! their order).

use crate::engine::Engine;
use crate::experiment::Experiment;
use crate::results::RunResult;
use crate::{Result, SimError};
use hugemm_hw::{Nanos, PageSize, VirtAddr};
use hugemm_workload::{Advice, BufferId, Phase, ProcessSpec};
use std::cell::{RefCell, RefMut};
use std::rc::Rc;
use swap::{is_set, RegionBits, SharedSwap, Swap};

mod swap;

pub use swap::{HostSwap, SwapStats};

/// How long a VM process sleeps in the host: past any run (and within the picosecond
/// clock's range, about 213 days).
const VM_LIFETIME: Nanos = Nanos(10_000_000 * 1_000_000_000);

/// The bytes of one guest-physical region the host can map with one huge page.
const REGION_SHIFT: u32 = 21;

/// What a guest engine asks of its host.
pub trait HostMemory {
    /// The guest kernel wrote guest-physical `[gpa, gpa + bytes)` for the first time
    /// (`bytes` within one 2 MB region): the host backs it. Returns the host's time and
    /// whether the host now maps that region with a huge page.
    fn populate(&mut self, gpa: u64, bytes: u64) -> Populated;

    /// The guest's balloon driver gave up guest-physical `[gpa, gpa + bytes)`: the host
    /// discards its backing (`MADV_DONTNEED`, as QEMU does for each page the balloon
    /// reports). Returns the host's time.
    fn discard(&mut self, gpa: u64, bytes: u64) -> Nanos;
}

/// What [`HostMemory::populate`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Populated {
    /// Host fault time, paid by the guest's fault.
    pub time: Nanos,
    /// The region is now on a host huge page.
    pub huge: bool,
}

/// A guest engine's side of its host: the link, and what it gathered since the last
/// lockstep.
pub(crate) struct GuestHost {
    link: Box<dyn HostMemory>,
    /// One bit per guest-physical 4 KB page: walked since the last lockstep.
    young: Vec<u64>,
    /// The pages whose bit is set, in the order first walked.
    young_pages: Vec<u64>,
    /// One bit per guest-physical 4 KB page: merged by the host into its zero page.
    merged: Vec<u64>,
    /// One bit per guest-physical 2 MB region: swapped out by the host (`swap.rs`).
    swapped: Option<RegionBits>,
    /// One bit per guest-physical 2 MB region: reported free, not backed since.
    reported: Vec<u64>,
    /// Bytes reported free over the run.
    pub reported_bytes: u64,
    /// Host faults taken on merged pages (see [`VmResult::ksm_unmerge_faults`]).
    pub unmerge_faults: u64,
    /// Regions whose host size a populate changed, for the other cores.
    pub changed: Vec<(u64, bool)>,
    /// Host fault time the guest's faults paid.
    pub fault_time: Nanos,
    /// Host time discarding balloon pages.
    pub balloon_time: Nanos,
}

impl GuestHost {
    fn new(link: Box<dyn HostMemory>, guest_bytes: u64) -> GuestHost {
        GuestHost {
            link,
            young: vec![0; (guest_bytes >> 12).div_ceil(64) as usize],
            young_pages: Vec::new(),
            merged: vec![0; (guest_bytes >> 12).div_ceil(64) as usize],
            swapped: None,
            reported: vec![0; (guest_bytes >> REGION_SHIFT).div_ceil(64) as usize],
            reported_bytes: 0,
            unmerge_faults: 0,
            changed: Vec::new(),
            fault_time: Nanos::ZERO,
            balloon_time: Nanos::ZERO,
        }
    }

    /// A guest walk ended at guest-physical byte `gpa`. Returns the host's time when it
    /// is a `write` to a page the host had merged into its zero page (a read is served by
    /// the zero page), or any reference to a region the host swapped out; zero almost
    /// always.
    #[inline]
    pub fn walked(&mut self, gpa: u64, write: bool) -> Nanos {
        let page = gpa >> 12;
        if self
            .swapped
            .as_ref()
            .is_some_and(|s| is_set(s, gpa >> REGION_SHIFT))
        {
            return self.swap_in(gpa);
        }
        let (word, bit) = ((page / 64) as usize, 1u64 << (page % 64));
        if let Some(w) = self.young.get_mut(word) {
            if *w & bit == 0 {
                *w |= bit;
                self.young_pages.push(page);
            }
        }
        if write && self.merged.get(word).is_some_and(|w| w & bit != 0) {
            return self.unmerge(page);
        }
        Nanos::ZERO
    }

    /// The guest touches a page the host's same-page merging had mapped to the zero page:
    /// a host fault backs it again (copy-on-write of the zero page), at the guest's cost.
    #[cold]
    fn unmerge(&mut self, page: u64) -> Nanos {
        self.populate(page << 12, 4096).time
    }

    /// The guest references a region the host swapped out: the host reads it back (its
    /// link's populate does), at the guest's cost.
    #[cold]
    fn swap_in(&mut self, gpa: u64) -> Nanos {
        self.populate(gpa & !0xfff, 4096).time
    }

    /// Whether the host has guest-physical page `page`'s region swapped out.
    fn is_swapped(&self, page: u64) -> bool {
        self.swapped
            .as_ref()
            .is_some_and(|s| is_set(s, page >> (REGION_SHIFT - 12)))
    }

    /// The host merged guest-physical page `page` into its zero page.
    fn mark_merged(&mut self, page: u64) {
        if let Some(w) = self.merged.get_mut((page / 64) as usize) {
            *w |= 1 << (page % 64);
        }
    }

    /// Whether the host has page `page` merged into its zero page.
    fn is_merged(&self, page: u64) -> bool {
        self.merged
            .get((page / 64) as usize)
            .is_some_and(|w| w >> (page % 64) & 1 != 0)
    }

    /// The host backs `[gpa, gpa + bytes)` (a page of it the host had merged into its
    /// zero page is unmerged: a host fault, counted).
    pub fn populate(&mut self, gpa: u64, bytes: u64) -> Populated {
        for page in gpa >> 12..(gpa + bytes).div_ceil(4096) {
            let (word, bit) = ((page / 64) as usize, 1u64 << (page % 64));
            if let Some(w) = self.merged.get_mut(word) {
                if *w & bit != 0 {
                    *w &= !bit;
                    self.unmerge_faults += 1;
                }
            }
        }
        let region = gpa >> REGION_SHIFT;
        if let Some(w) = self.reported.get_mut((region / 64) as usize) {
            *w &= !(1 << (region % 64));
        }
        let p = self.link.populate(gpa, bytes);
        self.fault_time += p.time;
        self.changed.push((gpa >> REGION_SHIFT, p.huge));
        p
    }

    /// The host discards `[gpa, gpa + bytes)` (a balloon page).
    pub fn discard(&mut self, gpa: u64, bytes: u64) -> Nanos {
        let t = self.link.discard(gpa, bytes);
        self.balloon_time += t;
        t
    }

    /// The guest-physical pages walked since the last call, in the order first walked.
    fn take_young(&mut self) -> Vec<u64> {
        for &page in &self.young_pages {
            self.young[(page / 64) as usize] = 0;
        }
        std::mem::take(&mut self.young_pages)
    }
}

impl Engine {
    /// Run this engine as a guest of a host model: faults that map new guest frames ask
    /// `link` to back them, walks are recorded for the host's accessed bits, and the MMUs
    /// take their host page sizes from [`Engine::set_host_regions`]. The profile must be a
    /// guest's (one with a `[guest]` table).
    pub fn attach_host(&mut self, link: Box<dyn HostMemory>) -> Result<()> {
        if !self.cores.iter().all(|c| c.mmu.is_guest()) {
            return Err(SimError::Host(format!(
                "profile '{}' is not a guest's (it has no [guest] table)",
                self.exp.profile.name
            )));
        }
        let regions = self.exp.memory_bytes.div_ceil(1 << REGION_SHIFT);
        for core in &mut self.cores {
            core.mmu.use_host_map(regions);
        }
        self.host = Some(GuestHost::new(link, self.exp.memory_bytes));
        Ok(())
    }

    /// The host now maps each `(region, huge)`: set every core's MMU, and flush every
    /// core's TLBs if any region changed. Returns whether any did.
    pub fn set_host_regions(&mut self, regions: &[(u64, bool)]) -> bool {
        let changed = self.host_backed(regions);
        if changed {
            self.flush_tlbs();
        }
        changed
    }

    /// Flush every core's TLBs (the host unmapped memory the guest may have cached).
    pub fn flush_tlbs(&mut self) {
        for core in &mut self.cores {
            core.mmu.flush_all();
        }
    }

    /// The host backed `regions` outside a guest fault (`(region, huge)`): every core's
    /// MMU learns their size, with no flush (nothing cached them at the host's size).
    /// Returns whether any size changed.
    pub fn host_backed(&mut self, regions: &[(u64, bool)]) -> bool {
        let mut changed = false;
        for core in &mut self.cores {
            for &(r, huge) in regions {
                changed |= core.mmu.set_host_huge(r, huge);
            }
        }
        changed
    }

    /// Regions populates changed since the last call reach every core (no flush: a region
    /// just backed had no translation to keep).
    pub(crate) fn apply_host_populates(&mut self) {
        let Some(h) = self.host.as_mut() else {
            return;
        };
        let changed = std::mem::take(&mut h.changed);
        self.host_backed(&changed);
    }

    /// A reference by process `i` into its buffer `b` at byte `offset`, made from outside
    /// the engine (a VM's guest touching its memory): it faults as the process's own
    /// would, the policy choosing the page size, its trap priced by the profile's
    /// `costs.vm_fault_trap_ns` when it has one. Returns the fault time (zero when mapped)
    /// and the size now mapping it. The process's core's clock is left as it was.
    pub fn external_touch(
        &mut self,
        i: usize,
        b: usize,
        offset: u64,
        write: bool,
    ) -> std::result::Result<(Nanos, PageSize), String> {
        let (start, bytes) = self
            .buffer(i, b)
            .ok_or_else(|| format!("process {i} has no buffer {b} mapped"))?;
        if offset >= bytes {
            return Err(format!(
                "offset {offset:#x} past buffer {b} ({bytes} bytes)"
            ));
        }
        let c = self.procs[i].core;
        let before = self.cores[c].now;
        let va = VirtAddr(start.0 + offset);
        // Every caller touches a VM's memory: the host's trap for a VM's fault prices it.
        let vm_trap = self.exp.profile.costs.vm_fault_trap_ns;
        let own_trap = vm_trap.map(|t| self.kernel.set_fault_trap(crate::engine::ns(t)));
        let (procs, mut ctx) = self.split_ctx(c);
        let r = ctx.resolve(&mut procs[i], va, write);
        if let Some(t) = own_trap {
            self.kernel.set_fault_trap(t);
        }
        self.cores[c].now = before;
        match r {
            Ok((_, size, _, spent)) => Ok((spent.to_nanos(), size)),
            Err(crate::run::Stop::Oom) => Err("the host ran out of memory".into()),
            Err(crate::run::Stop::Error(e)) => Err(e),
        }
    }

    /// `MADV_DONTNEED` on `[offset, offset + len)` of process `i`'s buffer `b`, made from
    /// outside the engine (a VM's balloon page): its frames are freed, a huge page it cuts
    /// is split. Returns the kernel's time.
    pub fn external_discard(
        &mut self,
        i: usize,
        b: usize,
        offset: u64,
        len: u64,
    ) -> std::result::Result<Nanos, String> {
        let (start, bytes) = self
            .buffer(i, b)
            .ok_or_else(|| format!("process {i} has no buffer {b} mapped"))?;
        if offset.checked_add(len).is_none_or(|end| end > bytes) {
            return Err(format!(
                "range {offset:#x}+{len:#x} past buffer {b} ({bytes} bytes)"
            ));
        }
        let pid = self.procs[i].pid.ok_or("the process has not started")?;
        let t = self
            .kernel
            .madvise(
                pid,
                VirtAddr(start.0 + offset),
                len,
                hugemm_mm::Madvise::DontNeed,
            )
            .map_err(|e| e.to_string())?;
        self.apply_tlb_flushes();
        Ok(t)
    }

    /// Start and length of process `i`'s buffer `b`, if mapped.
    pub fn buffer(&self, i: usize, b: usize) -> Option<(VirtAddr, u64)> {
        let buf = self.procs.get(i)?.buffers.get(b)?.as_ref()?;
        Some((buf.start, buf.bytes))
    }

    /// Set the balloon to `target` bytes (as [`Phase::Balloon`] does, from outside: a
    /// host's automatic ballooning). Returns the driver's time.
    pub fn set_balloon(&mut self, target: u64) -> Nanos {
        let t = self.balloon_to(target).to_nanos();
        self.apply_tlb_flushes();
        t
    }

    /// Free frames of this engine's kernel.
    pub fn free_bytes(&self) -> u64 {
        self.kernel.phys().frames_free() * self.exp.geometry.base_bytes()
    }

    /// Whether the content of frame `page` (a guest-physical page, in a guest) is known to
    /// be zero: what the host's same-page merging compares.
    pub fn frame_is_zero(&self, page: u64) -> bool {
        self.kernel
            .phys()
            .frame(hugemm_hw::Pfn(page))
            .is_some_and(|f| f.is_zeroed())
    }

    /// Free page reporting ([`FreePageReporting`]): every free block of at least 2 MB
    /// not reported since it was last backed is reported, and the host drops its backing.
    /// Returns the host's time.
    pub fn report_free_pages(&mut self) -> Nanos {
        let Some(h) = self.host.as_mut() else {
            return Nanos::ZERO;
        };
        let phys = self.kernel.phys();
        let per = 1u64 << (REGION_SHIFT - 12);
        let mut time = Nanos::ZERO;
        for r in 0..phys.frames_total() / per {
            let (word, bit) = ((r / 64) as usize, 1u64 << (r % 64));
            if h.reported.get(word).is_none_or(|w| w & bit != 0) {
                continue;
            }
            // Buddy blocks are aligned: a region's first frame heads a free block of at
            // least 2 MB, or lies inside a larger one.
            let free = match phys.frame(hugemm_hw::Pfn(r * per)).map(|f| f.state()) {
                Some(hugemm_mm::FrameState::FreeHead { order, .. }) => {
                    u32::from(order.0) >= REGION_SHIFT - 12
                }
                Some(hugemm_mm::FrameState::FreeTail) => true,
                _ => false,
            };
            if free {
                time += h.discard(r << REGION_SHIFT, 1 << REGION_SHIFT);
                h.reported[word] |= bit;
                h.reported_bytes += 1 << REGION_SHIFT;
            }
        }
        self.apply_tlb_flushes();
        time
    }

    /// Bytes the balloon driver holds.
    pub fn balloon_bytes(&self) -> u64 {
        self.balloon.len() as u64 * self.exp.geometry.base_bytes()
    }

    /// Host fault time this guest's faults have paid so far.
    pub fn host_fault_time(&self) -> Nanos {
        self.host.as_ref().map_or(Nanos::ZERO, |h| h.fault_time)
    }
}

/// The host engine, shared by the guests' links.
type SharedHost = Rc<RefCell<Engine>>;

/// The host engine, borrowed for one step of a guest or of the lockstep (never twice at
/// once: a guest's populate runs inside the guest's step, the host's own steps outside
/// every guest's).
fn lock(host: &SharedHost) -> RefMut<'_, Engine> {
    host.borrow_mut()
}

/// VM `proc`'s link to the host engine.
struct HostPort {
    host: SharedHost,
    proc: usize,
    swap: SharedSwap,
}

/// Most regions one host fault writes out before it gives up (each frees up to 2 MB).
const DIRECT_RECLAIM_TRIES: u32 = 8;

impl HostMemory for HostPort {
    fn populate(&mut self, gpa: u64, bytes: u64) -> Populated {
        let mut host = lock(&self.host);
        let mut swap = self.swap.borrow_mut();
        let region = gpa >> REGION_SHIFT;
        // The old content must come back first: the host cannot know it is dead.
        let mut time = Nanos::ZERO;
        if let Some(s) = swap.as_mut() {
            time += s.swap_in(&mut host, self.proc, region);
            s.used(self.proc, region); // the guest writes it now
        }
        let mut huge = false;
        let mut off = gpa & !0xfff;
        let mut tries = 0;
        while off < gpa + bytes {
            match host.external_touch(self.proc, 0, off, true) {
                Ok((t, size)) => {
                    time += t;
                    huge = size == PageSize::Huge;
                    if huge {
                        // The rest of the region came with it.
                        off = (off | ((1 << REGION_SHIFT) - 1)) + 1;
                        continue;
                    }
                }
                Err(_) if tries < DIRECT_RECLAIM_TRIES && swap.is_some() => {
                    tries += 1;
                    let s = swap.as_mut().expect("checked");
                    time += s.direct_reclaim(&mut host, (self.proc, region));
                    continue;
                }
                // A host out of memory leaves the page unbacked; the host's own summary
                // reports its processes' faults.
                Err(_) => break,
            }
            off += 4096;
        }
        Populated { time, huge }
    }

    fn discard(&mut self, gpa: u64, bytes: u64) -> Nanos {
        if let Some(s) = self.swap.borrow_mut().as_mut() {
            s.forget(self.proc, gpa, bytes);
        }
        // A range the host never backed, or past the VM's memory, costs nothing.
        lock(&self.host)
            .external_discard(self.proc, 0, gpa, bytes)
            .unwrap_or(Nanos::ZERO)
    }
}

/// One VM: its guest engine and its process in the host.
struct Vm {
    name: String,
    guest: Engine,
    /// The VM's process index in the host engine.
    proc: usize,
    regions: u64,
    /// Times the guest's TLBs were flushed for a host mapping change.
    flushes: u64,
    /// The next guest-physical page the host's same-page merging looks at.
    ksm_cursor: u64,
    /// Pages the host merged into its zero page.
    ksm_merged: u64,
}

/// What one VM did, with its host's view.
#[derive(Clone, Debug)]
pub struct VmResult {
    /// The VM's name.
    pub name: String,
    /// The guest's run.
    pub guest: RunResult,
    /// Host fault time the guest's faults paid (ns).
    pub host_fault_ns: u64,
    /// Guest-physical 2 MB regions on host huge pages at the end.
    pub host_huge_regions: u64,
    /// Guest-physical 2 MB regions the host backs at all at the end.
    pub host_backed_regions: u64,
    /// Guest TLB flushes for host mapping changes.
    pub host_flushes: u64,
    /// Bytes the guest's balloon held at the end.
    pub balloon_bytes: u64,
    /// Bytes the guest reported free over the run ([`FreePageReporting`]).
    pub reported_bytes: u64,
    /// Host time discarding the balloon's pages (ns).
    pub host_balloon_ns: u64,
    /// Pages the host's same-page merging mapped to its zero page.
    pub ksm_merged_pages: u64,
    /// Host faults on merged pages: guest writes to them, and guest faults or page-cache
    /// reads that wrote them again.
    pub ksm_unmerge_faults: u64,
    /// Host memory backing the VM at the end (its process's resident bytes).
    pub host_rss_bytes: u64,
    /// What the host's swap did to the VM (zeros without [`HostSwap`]).
    pub swap: SwapStats,
}

/// What a hosted run produced.
#[derive(Clone, Debug)]
pub struct HostedResult {
    /// Each VM, in the order given.
    pub vms: Vec<VmResult>,
    /// CPU time of the host's same-page merging (ns).
    pub ksm_cpu_ns: u64,
    /// Device time of the host's kswapd writing VM memory out (ns).
    pub kswapd_swap_ns: u64,
    /// The host's run (its processes are the VMs, and whatever else it ran).
    pub host: RunResult,
}

impl HostedResult {
    /// Process `name` of whichever guest ran it.
    pub fn guest_process(&self, name: &str) -> Option<&crate::ProcessSummary> {
        self.vms
            .iter()
            .flat_map(|vm| &vm.guest.summary.processes)
            .find(|p| p.name == name)
    }
}

/// A VM to run: its name, its guest's experiment, and the advice QEMU gives the host for
/// its memory.
#[derive(Clone, Debug)]
pub struct GuestVm {
    /// The VM's name.
    pub name: String,
    /// The guest: its machine (a guest profile), memory, policy and processes.
    pub guest: Experiment,
    /// How the VM's memory is advised in the host: QEMU maps guest RAM with
    /// `MADV_HUGEPAGE` ([`Advice::Hugepage`], the default), so a Linux host with THP
    /// `defrag = madvise` compacts at its faults; [`Advice::Default`] is a VMM that
    /// does not.
    pub advice: Advice,
}

impl GuestVm {
    /// VM `name` running `guest`, its memory advised as QEMU advises it.
    pub fn new(name: impl Into<String>, guest: Experiment) -> GuestVm {
        GuestVm {
            name: name.into(),
            guest,
            advice: Advice::Hugepage,
        }
    }
}

/// The host's same-page merging, of zero pages only (Linux's KSM with
/// `use_zero_pages`): `ksmd` looks at `pages_per_s` guest pages a second, round robin over
/// the VMs' memory, and maps each the host backs and whose content is zero to the zero
/// page, freeing its frame (a huge page it falls in is split). A later guest write to
/// such a page takes a host fault; a read is served by the zero page.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ksm {
    /// Pages looked at per second (Linux: `pages_to_scan` every `sleep_millisecs`; its
    /// default is 100 every 20 ms, 5,000 a second).
    pub pages_per_s: u64,
}

/// Ballooning without a balloon manager: virtio-balloon's free page reporting
/// (`VIRTIO_BALLOON_F_REPORTING`, Linux 5.7+). Every [`FreePageReporting::period`] each
/// guest reports its free blocks of at least 2 MB (pageblock order, as Linux reports)
/// that it has not reported since they were last used, and the host drops their backing
/// (`MADV_DONTNEED`, as QEMU does). The blocks stay free in the guest: it allocates them
/// as it would any, and their next use faults in the host again. A target-driven balloon
/// (one a manager inflates, `Phase::Balloon`) takes memory from the guest instead, and
/// needs the manager to know how much the guest will want; reporting returns exactly what
/// is free, which is what Figure 11's "ballooning enabled on all VMs" recovers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FreePageReporting {
    /// How often the guests report (Linux: 2 s after free memory first crosses the
    /// reporting threshold, `page_reporting_delay`).
    pub period: Nanos,
}

/// Guests under one host, run in lockstep (see the module doc).
pub struct HostedRun {
    host: SharedHost,
    vms: Vec<Vm>,
    ksm: Option<Ksm>,
    /// Fraction of a page of `ksm`'s budget carried between locksteps.
    ksm_carry: f64,
    /// The VM `ksmd` looks at next.
    ksm_vm: usize,
    ksm_cpu: Nanos,
    reporting: Option<FreePageReporting>,
    next_report: Nanos,
    swap: SharedSwap,
    now: Nanos,
}

impl HostedRun {
    /// The lockstep period: guests and host each run this long in turn.
    pub const QUANTUM: Nanos = Nanos(1_000_000);

    /// `host` (its processes run as the host's own: a fragmenter, say) with `guests` as
    /// its VMs, each a process of its guest's `memory_bytes` of host memory started at
    /// host time 0.
    pub fn new(host: Experiment, guests: Vec<GuestVm>) -> Result<HostedRun> {
        if host.profile.guest.is_some() {
            return Err(SimError::Host(format!(
                "the host's profile '{}' is itself a guest's; give the bare-metal one",
                host.profile.name
            )));
        }
        let mut host = Engine::new(host)?;
        host.mapping_log = Some(Vec::new());
        let host = Rc::new(RefCell::new(host));
        let swap: SharedSwap = Rc::new(RefCell::new(None));
        let mut vms = Vec::new();
        for GuestVm {
            name,
            guest: exp,
            advice,
        } in guests
        {
            let bytes = exp.memory_bytes;
            let proc = {
                let mut h = lock(&host);
                h.spawn(ProcessSpec {
                    name: format!("vm:{name}"),
                    start: Nanos::ZERO,
                    core: None,
                    phases: vec![
                        Phase::Mmap {
                            buffer: BufferId(0),
                            bytes,
                            advice,
                        },
                        Phase::Sleep(VM_LIFETIME),
                    ],
                });
                h.procs.len() - 1
            };
            let mut guest = Engine::new(exp)?;
            guest.attach_host(Box::new(HostPort {
                host: Rc::clone(&host),
                proc,
                swap: Rc::clone(&swap),
            }))?;
            let regions = bytes.div_ceil(1 << REGION_SHIFT);
            vms.push(Vm {
                name,
                guest,
                proc,
                regions,
                flushes: 0,
                ksm_cursor: 0,
                ksm_merged: 0,
            });
        }
        // Let the VM processes map their memory before any guest touches it (each maps,
        // then sleeps; they share the host's cores in turn).
        for _ in 0..1000 {
            let h = lock(&host);
            if vms.iter().all(|vm| h.buffer(vm.proc, 0).is_some()) {
                break;
            }
            drop(h);
            lock(&host).advance(Nanos(100_000))?;
        }
        for vm in &vms {
            if lock(&host).buffer(vm.proc, 0).is_none() {
                return Err(SimError::Host(format!(
                    "VM '{}' could not map its memory in the host",
                    vm.name
                )));
            }
        }
        Ok(HostedRun {
            host,
            vms,
            ksm: None,
            ksm_carry: 0.0,
            ksm_vm: 0,
            ksm_cpu: Nanos::ZERO,
            reporting: None,
            next_report: Nanos::ZERO,
            swap,
            now: Nanos::ZERO,
        })
    }

    /// Give the host a swap device for its VMs' memory ([`HostSwap`], `swap.rs`).
    pub fn with_swap(mut self, dev: HostSwap) -> HostedRun {
        let mut swap = Swap::new(dev);
        for vm in &mut self.vms {
            let bits = swap.add_vm(vm.proc, vm.regions);
            // The guest's walks test the same bits (`new` attached every guest).
            if let Some(h) = vm.guest.host.as_mut() {
                h.swapped = Some(bits);
            }
        }
        *self.swap.borrow_mut() = Some(swap);
        self
    }

    /// Run the host's same-page merging of zero pages ([`Ksm`]).
    pub fn with_ksm(mut self, ksm: Ksm) -> HostedRun {
        self.ksm = Some(ksm);
        self
    }

    /// Let the guests report their free memory to the host ([`FreePageReporting`]).
    pub fn with_free_page_reporting(mut self, r: FreePageReporting) -> HostedRun {
        self.next_report = r.period;
        self.reporting = Some(r);
        self
    }

    /// Run until every guest's processes have ended (or its time limit).
    pub fn run(mut self) -> Result<HostedResult> {
        while self
            .vms
            .iter()
            .any(|vm| !vm.guest.idle() && !vm.guest.at_limit())
        {
            self.step()?;
        }
        let host = lock(&self.host);
        let pids: Vec<_> = self.vms.iter().map(|vm| vm.proc).collect();
        let mut census = Vec::new();
        for (vm, &i) in self.vms.iter().zip(&pids) {
            let (start, _) = host.buffer(i, 0).expect("mapped at start");
            let pid = host.procs[i].pid.expect("started");
            let sizes: Vec<PageSize> = (0..vm.regions)
                .filter_map(|r| {
                    // The region's size, from its first page the host backs.
                    (0..1u64 << (REGION_SHIFT - 12)).find_map(|k| {
                        let va = VirtAddr(start.0 + (r << REGION_SHIFT) + (k << 12));
                        host.kernel().peek(pid, va).map(|(_, size)| size)
                    })
                })
                .collect();
            let huge = sizes.iter().filter(|&&s| s == PageSize::Huge).count() as u64;
            let rss = host.kernel().rss_bytes(pid);
            census.push((sizes.len() as u64, huge, rss));
        }
        drop(host);
        let mut vms = Vec::new();
        for (vm, (backed, huge, rss)) in self.vms.into_iter().zip(census) {
            vms.push(VmResult {
                balloon_bytes: vm.guest.balloon_bytes(),
                reported_bytes: vm.guest.host.as_ref().map_or(0, |h| h.reported_bytes),
                host_balloon_ns: vm.guest.host.as_ref().map_or(0, |h| h.balloon_time.0),
                ksm_merged_pages: vm.ksm_merged,
                ksm_unmerge_faults: vm.guest.host.as_ref().map_or(0, |h| h.unmerge_faults),
                host_rss_bytes: rss,
                swap: self
                    .swap
                    .borrow()
                    .as_ref()
                    .map_or(SwapStats::default(), |s| s.stats(vm.proc)),
                host_fault_ns: vm.guest.host_fault_time().0,
                host_huge_regions: huge,
                host_backed_regions: backed,
                host_flushes: vm.flushes,
                name: vm.name,
                // Consumes the guest and with it its link to the host.
                guest: vm.guest.results(),
            });
        }
        let host = Rc::try_unwrap(self.host)
            .map_err(|_| SimError::Host("a guest still holds the host".into()))?
            .into_inner();
        let kswapd_swap_ns = self.swap.borrow().as_ref().map_or(0, |s| s.kswapd_ns);
        Ok(HostedResult {
            vms,
            ksm_cpu_ns: self.ksm_cpu.0,
            kswapd_swap_ns,
            host: host.results(),
        })
    }

    /// One lockstep's share of [`Ksm`]'s scan.
    fn merge_zero_pages(&mut self, host: &mut Engine, ksm: Ksm) {
        if self.vms.is_empty() {
            return;
        }
        let budget = ksm.pages_per_s as f64 * Self::QUANTUM.0 as f64 / 1e9 + self.ksm_carry;
        let pages = budget.floor() as u64;
        self.ksm_carry = budget - pages as f64;
        let costs = *host.kernel().costs();
        let n = self.vms.len();
        for _ in 0..pages {
            let vm = &mut self.vms[self.ksm_vm];
            self.ksm_vm = (self.ksm_vm + 1) % n;
            let total = vm.regions << (REGION_SHIFT - 12);
            let page = vm.ksm_cursor;
            vm.ksm_cursor = (page + 1) % total.max(1);
            let (start, _) = host.buffer(vm.proc, 0).expect("mapped at start");
            let pid = host.procs[vm.proc].pid.expect("started");
            if host
                .kernel()
                .peek(pid, VirtAddr(start.0 + (page << 12)))
                .is_none()
            {
                self.ksm_cpu += costs.scan_time(1, 0);
                continue;
            }
            // A backed page is read (up to its first non-zero byte; a zero one whole).
            let zero = vm.guest.frame_is_zero(page);
            self.ksm_cpu += costs.scan_time(1, if zero { 4096 } else { 64 });
            if zero && host.external_discard(vm.proc, 0, page << 12, 4096).is_ok() {
                vm.ksm_merged += 1;
                if let Some(h) = vm.guest.host.as_mut() {
                    h.mark_merged(page);
                }
            }
        }
    }

    /// One lockstep: every guest, then the host, then the host's page sizes to the guests.
    fn step(&mut self) -> Result<()> {
        if let Some(s) = self.swap.borrow_mut().as_mut() {
            s.now = self.now;
        }
        for vm in &mut self.vms {
            vm.guest.advance(Self::QUANTUM)?;
        }
        let shared = Rc::clone(&self.host);
        let mut host = lock(&shared);
        for vm in &mut self.vms {
            let young = vm
                .guest
                .host
                .as_mut()
                .map(GuestHost::take_young)
                .unwrap_or_default();
            let (start, _) = host.buffer(vm.proc, 0).expect("mapped at start");
            let pid = host.procs[vm.proc].pid.expect("started");
            let mut backed = Vec::new();
            let link = vm.guest.host.as_ref();
            // A merged page has no frame to mark; a swapped-out one is read back at its
            // next walk (one the guest made before its region went out found it in).
            let young: Vec<u64> = young
                .into_iter()
                .filter(|&p| !link.is_some_and(|h| h.is_merged(p) || h.is_swapped(p)))
                .collect();
            if let Some(s) = self.swap.borrow_mut().as_mut() {
                let mut last = u64::MAX;
                for &page in &young {
                    let region = page >> (REGION_SHIFT - 12);
                    if region != last {
                        s.used(vm.proc, region);
                        last = region;
                    }
                }
            }
            for page in young {
                let va = VirtAddr(start.0 + (page << 12));
                if !host.kernel.mark_accessed(pid, va) {
                    // Written by the guest kernel without a fault: backed now.
                    if let Ok((_, size)) = host.external_touch(vm.proc, 0, page << 12, true) {
                        backed.push((page >> (REGION_SHIFT - 12), size == PageSize::Huge));
                    }
                    host.kernel.mark_accessed(pid, va);
                }
            }
            vm.guest.host_backed(&backed);
        }
        host.advance(Self::QUANTUM)?;
        self.now += Self::QUANTUM;
        if let Some(s) = self.swap.borrow_mut().as_mut() {
            s.kswapd(&mut host, Self::QUANTUM);
        }
        if let Some(ksm) = self.ksm {
            self.merge_zero_pages(&mut host, ksm);
        }
        if let Some(r) = self.reporting {
            if self.now >= self.next_report {
                self.next_report = self.now + r.period;
                drop(host);
                for vm in &mut self.vms {
                    vm.guest.report_free_pages();
                }
                host = lock(&shared);
                host.apply_tlb_flushes();
            }
        }
        let log = host
            .mapping_log
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default();
        for vm in &mut self.vms {
            let (start, bytes) = host.buffer(vm.proc, 0).expect("mapped at start");
            let pid = host.procs[vm.proc].pid.expect("started");
            let mut changes = Vec::new();
            for f in log.iter().filter(|f| f.pid == pid) {
                let lo = f.start.0.max(start.0) - start.0;
                let hi = f.end.0.min(start.0 + bytes).saturating_sub(start.0);
                if hi <= lo {
                    continue;
                }
                for r in (lo >> REGION_SHIFT)..=((hi - 1) >> REGION_SHIFT) {
                    let va = VirtAddr(start.0 + (r << REGION_SHIFT));
                    // Compared with what the guest's MMUs hold, which populates also set.
                    let huge = matches!(host.kernel().peek(pid, va), Some((_, PageSize::Huge)));
                    changes.push((r, huge));
                }
            }
            let swapped_out = self
                .swap
                .borrow_mut()
                .as_mut()
                .is_some_and(|s| s.take_flush(vm.proc));
            if vm.guest.set_host_regions(&changes) {
                vm.flushes += 1;
            } else if swapped_out {
                vm.guest.flush_tlbs();
                vm.flushes += 1;
            }
        }
        Ok(())
    }
}
