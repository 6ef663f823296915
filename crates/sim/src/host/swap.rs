//! The host's swap of VM memory: what an overcommitted host does when its VMs' memory
//! does not fit (HawkEye's Figure 11 runs VMs whose peaks sum to 1.5 times the host's
//! memory over a 96 GB SSD-backed swap partition).
//!
//! # Model
//!
//! - **Unit.** Swap works on 2 MB regions of a VM's guest-physical memory: a region is
//!   written out whole (as Linux writes out a transparent huge page whole since 4.13,
//!   `THP_SWAP`) and read back whole on its first use, in one I/O of the pages it held.
//!   Linux reads a swapped-out 4 KB page table back page by page with readahead
//!   (`page-cluster`); one I/O per region charges fewer latencies and more bytes, which
//!   favours no variant of Figure 11 over another (all swap the same way).
//! - **Victims.** The least recently used region first, as kswapd's LRU lists order
//!   pages. A region is used when a guest walk ends in it (the walks that set the host's
//!   accessed bits, `host/`), stamped at the lockstep that hands the walks to the host:
//!   an exact LRU at the lockstep's granularity, where Linux approximates one from the
//!   accessed bits it samples. Under pressure the victims are lined up every
//!   [`AGE_PERIOD`], oldest first (ties by VM and address); one used since it was lined
//!   up is passed over. The host knows nothing of what the guest does with a page: a
//!   free guest page it backs is as good a victim as any and costs the same I/O.
//! - **When.** kswapd: at each lockstep, while the host's free memory is below
//!   [`HostSwap::low`], regions are written out up to the device's bandwidth for the
//!   lockstep, until free memory reaches [`HostSwap::high`]; its time is the host's, not
//!   a VM's. Direct reclaim: a host fault (a guest fault's first touch, a swap-in) that
//!   finds no free frame writes a region out itself and waits for the device; the guest
//!   whose fault it is pays.
//! - **Swap-in.** A guest walk ending in a swapped-out region, or a guest write that
//!   backs a page in one (a fault's zeroing, a page-cache read, pre-zeroing: the host
//!   cannot know the old content is dead), reads the region back: one device latency
//!   plus its bytes at the device's bandwidth, then a host fault per page. The guest
//!   waits. A balloon page given up in a swapped-out region frees its slot, no I/O.
//! - **TLBs.** A VM whose regions were written out has every vCPU's TLBs flushed at the
//!   next lockstep (a guest's own direct reclaim inside its step leaves its translations
//!   cached until then, at most one lockstep).
//!
//! The guest-physical pages of the guest's own page tables are not swapped separately:
//! only the data's walk end is checked, so a walk through swapped-out page-table pages
//! costs nothing extra.

use super::REGION_SHIFT;
use crate::engine::Engine;
use hugemm_hw::{Nanos, VirtAddr};
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// The host's swap device.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HostSwap {
    /// Latency of one I/O (a region read or written).
    pub latency: Nanos,
    /// Bandwidth, each direction (bytes a second).
    pub bytes_per_s: u64,
    /// kswapd wakes when the host's free memory falls below this many bytes.
    pub low: u64,
    /// kswapd sleeps again when free memory reaches this many bytes.
    pub high: u64,
}

impl HostSwap {
    /// A SATA/NVMe-class SSD of the HawkEye paper's era: 100 us an I/O, 1 GB/s; kswapd
    /// between 1% and 2% of `host_bytes` free (Linux's watermarks are a fraction of a
    /// percent on a large machine; these leave room for one lockstep's faults of every
    /// VM, which the lockstep cannot reclaim between).
    pub fn ssd(host_bytes: u64) -> HostSwap {
        HostSwap {
            latency: Nanos(100_000),
            bytes_per_s: 1_000_000_000,
            low: host_bytes / 100,
            high: host_bytes / 50,
        }
    }

    /// The device's time to move `bytes` in one I/O.
    pub fn io_time(&self, bytes: u64) -> Nanos {
        let transfer = (bytes as u128 * 1_000_000_000 / self.bytes_per_s.max(1) as u128) as u64;
        Nanos(self.latency.0 + transfer)
    }
}

/// One bit per 2 MB region of a VM: swapped out. Shared by the VM's guest engine (its
/// walks test it) and the host's swap (which sets and clears it); single-threaded, as
/// the whole hosted run is.
pub(crate) type RegionBits = Rc<[Cell<u64>]>;

/// Whether `region`'s bit is set.
#[inline]
pub(crate) fn is_set(bits: &RegionBits, region: u64) -> bool {
    bits.get((region / 64) as usize)
        .is_some_and(|w| w.get() >> (region % 64) & 1 != 0)
}

fn set(bits: &RegionBits, region: u64, on: bool) {
    if let Some(w) = bits.get((region / 64) as usize) {
        let b = 1u64 << (region % 64);
        w.set(if on { w.get() | b } else { w.get() & !b });
    }
}

/// What swap did to one VM.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SwapStats {
    /// Bytes written out.
    pub out_bytes: u64,
    /// Bytes read back.
    pub in_bytes: u64,
    /// Regions read back.
    pub ins: u64,
    /// Time the VM's vCPUs waited for swap: its swap-ins (the device's read, any
    /// direct reclaim it needed, and the host faults that map the region again), and the
    /// writes of direct reclaim its faults made (ns).
    pub wait_ns: u64,
}

/// One VM's swap state.
struct SwapVm {
    /// The VM's process in the host.
    proc: usize,
    regions: u64,
    /// Regions swapped out (shared with the guest's walks).
    out: RegionBits,
    /// Per region, the 4 KB pages that were backed when it was written out (one bit
    /// each, 512 per region), so a swap-in backs what was there and no more.
    pages: Vec<u64>,
    stats: SwapStats,
    /// Regions were written out since the last lockstep: its TLBs must be flushed.
    flush: bool,
}

/// The host's swap space for its VMs, shared by the hosted run and the VMs' links.
pub(crate) struct Swap {
    pub dev: HostSwap,
    vms: Vec<SwapVm>,
    /// Per VM, per region: when a guest walk last ended in it.
    last_young: Vec<Vec<Nanos>>,
    /// Victims in waiting, oldest last: (last young, VM, region).
    candidates: Vec<(Nanos, usize, u64)>,
    /// When `candidates` was built.
    aged_at: Option<Nanos>,
    /// The host's time (set by the hosted run every lockstep).
    pub now: Nanos,
    /// kswapd's device time (ns).
    pub kswapd_ns: u64,
}

/// The host's swap, when it has one, shared by the hosted run and the VMs' links.
pub(crate) type SharedSwap = Rc<RefCell<Option<Swap>>>;

/// How often, under pressure, the host lines up its victims again.
pub const AGE_PERIOD: Nanos = Nanos(100_000_000);

const PAGES_PER_REGION: u64 = 1 << (REGION_SHIFT - 12);
const WORDS_PER_REGION: usize = (PAGES_PER_REGION / 64) as usize;

impl Swap {
    pub fn new(dev: HostSwap) -> Swap {
        Swap {
            dev,
            vms: Vec::new(),
            last_young: Vec::new(),
            candidates: Vec::new(),
            aged_at: None,
            now: Nanos::ZERO,
            kswapd_ns: 0,
        }
    }

    /// Add VM process `proc` of `regions` regions; returns its bits for the guest.
    pub fn add_vm(&mut self, proc: usize, regions: u64) -> RegionBits {
        let out: RegionBits = (0..regions.div_ceil(64)).map(|_| Cell::new(0)).collect();
        self.vms.push(SwapVm {
            proc,
            regions,
            out: Rc::clone(&out),
            pages: vec![0; regions as usize * WORDS_PER_REGION],
            stats: SwapStats::default(),
            flush: false,
        });
        self.last_young.push(vec![Nanos::ZERO; regions as usize]);
        out
    }

    fn vm_of(&self, proc: usize) -> Option<usize> {
        self.vms.iter().position(|v| v.proc == proc)
    }

    /// VM `proc`'s statistics.
    pub fn stats(&self, proc: usize) -> SwapStats {
        self.vm_of(proc)
            .map_or(SwapStats::default(), |v| self.vms[v].stats)
    }

    /// Whether VM `proc` had regions written out since the last call (and forget it).
    pub fn take_flush(&mut self, proc: usize) -> bool {
        self.vm_of(proc)
            .is_some_and(|v| std::mem::take(&mut self.vms[v].flush))
    }

    /// Read VM `proc`'s region `region` back if it is swapped out: back the pages it
    /// held. Returns the device's and the host's time (zero when it was in).
    pub fn swap_in(&mut self, host: &mut Engine, proc: usize, region: u64) -> Nanos {
        let Some(v) = self.vm_of(proc) else {
            return Nanos::ZERO;
        };
        if !is_set(&self.vms[v].out, region) {
            return Nanos::ZERO;
        }
        set(&self.vms[v].out, region, false);
        self.last_young[v][region as usize] = self.now;
        let words = region as usize * WORDS_PER_REGION..(region as usize + 1) * WORDS_PER_REGION;
        let held: Vec<u64> = self.vms[v].pages[words.clone()].to_vec();
        self.vms[v].pages[words].fill(0);
        let n: u64 = held.iter().map(|w| u64::from(w.count_ones())).sum();
        let mut time = self.dev.io_time(n << 12);
        let base = region << REGION_SHIFT;
        'pages: for (w, word) in held.iter().enumerate() {
            let mut bits = *word;
            while bits != 0 {
                let k = w as u64 * 64 + u64::from(bits.trailing_zeros());
                bits &= bits - 1;
                let mut tries = 0;
                loop {
                    match host.external_touch(proc, 0, base + (k << 12), true) {
                        Ok((t, _)) => {
                            time += t;
                            break;
                        }
                        Err(_) if tries < 8 => {
                            tries += 1;
                            time += self.write_out_one(host, (proc, region));
                        }
                        // The host cannot free a frame: the rest stays unbacked (its
                        // content is lost to the model, as an OOM would lose it).
                        Err(_) => break 'pages,
                    }
                }
            }
        }
        let s = &mut self.vms[v].stats;
        s.in_bytes += n << 12;
        s.ins += 1;
        s.wait_ns += time.0;
        time
    }

    /// A balloon page at VM `proc`'s `[gpa, gpa + bytes)` was given up: its swap slots
    /// are freed (the region stays out if other pages of it are).
    pub fn forget(&mut self, proc: usize, gpa: u64, bytes: u64) {
        let Some(v) = self.vm_of(proc) else {
            return;
        };
        let vm = &mut self.vms[v];
        for page in gpa >> 12..(gpa + bytes).div_ceil(4096) {
            let (region, k) = (page / PAGES_PER_REGION, page % PAGES_PER_REGION);
            if let Some(w) = vm
                .pages
                .get_mut(region as usize * WORDS_PER_REGION + (k / 64) as usize)
            {
                *w &= !(1 << (k % 64));
            }
        }
        let (first, last) = (
            gpa >> REGION_SHIFT,
            (gpa + bytes.max(1) - 1) >> REGION_SHIFT,
        );
        for region in first..=last.min(vm.regions.saturating_sub(1)) {
            let words =
                region as usize * WORDS_PER_REGION..(region as usize + 1) * WORDS_PER_REGION;
            if vm.pages[words].iter().all(|&w| w == 0) {
                set(&vm.out, region, false);
            }
        }
    }

    /// Direct reclaim for a host fault of VM region `except` (not a victim): write one
    /// region out. Returns the time the faulting vCPU waits (the write).
    pub fn direct_reclaim(&mut self, host: &mut Engine, except: (usize, u64)) -> Nanos {
        let t = self.write_out_one(host, except);
        if let Some(v) = self.vm_of(except.0) {
            self.vms[v].stats.wait_ns += t.0;
        }
        t
    }

    /// Write one region out (not `except`) and return the device's time for it.
    fn write_out_one(&mut self, host: &mut Engine, except: (usize, u64)) -> Nanos {
        self.evict_one(host, Some(except))
            .map_or(Nanos::ZERO, |b| self.dev.io_time(b))
    }

    /// kswapd, once a lockstep of length `quantum`: below `low` free, write regions out
    /// until `high` is free or the device's bandwidth for the lockstep is spent.
    pub fn kswapd(&mut self, host: &mut Engine, quantum: Nanos) {
        if host.free_bytes() >= self.dev.low {
            return;
        }
        let mut budget = Nanos::ZERO;
        while host.free_bytes() < self.dev.high && budget < quantum {
            match self.evict_one(host, None) {
                Some(bytes) => budget += self.dev.io_time(bytes),
                None => break,
            }
        }
        self.kswapd_ns += budget.0;
    }

    /// VM `proc`'s guest walked into `region` (at [`Swap::now`]).
    pub fn used(&mut self, proc: usize, region: u64) {
        if let Some(v) = self.vm_of(proc) {
            if let Some(t) = self.last_young[v].get_mut(region as usize) {
                *t = self.now;
            }
        }
    }

    /// Line up every region that is in as a victim, least recently used last.
    fn age(&mut self) {
        self.candidates.clear();
        for (v, vm) in self.vms.iter().enumerate() {
            for region in 0..vm.regions {
                if !is_set(&vm.out, region) {
                    self.candidates
                        .push((self.last_young[v][region as usize], v, region));
                }
            }
        }
        // Oldest last (popped first); ties by VM and region, lowest first.
        self.candidates
            .sort_unstable_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)).then(b.2.cmp(&a.2)));
        self.aged_at = Some(self.now);
    }

    /// Write the least recently used region out; returns its bytes, or `None` when no
    /// region the host backs is old enough to go.
    fn evict_one(&mut self, host: &mut Engine, except: Option<(usize, u64)>) -> Option<u64> {
        let stale = self
            .aged_at
            .is_none_or(|t| self.now.saturating_sub(t) >= AGE_PERIOD);
        if stale || self.candidates.is_empty() {
            self.age();
        }
        while let Some((stamp, v, region)) = self.candidates.pop() {
            let proc = self.vms[v].proc;
            if except == Some((proc, region)) || is_set(&self.vms[v].out, region) {
                continue;
            }
            let (Some((start, _)), Some(pid)) = (host.buffer(proc, 0), host.procs[proc].pid) else {
                continue;
            };
            if self.last_young[v][region as usize] != stamp {
                continue; // used since it was lined up
            }
            let va = VirtAddr(start.0 + (region << REGION_SHIFT));
            // Which of its pages the host backs (it maps VM memory only by writes, so
            // never to its zero page).
            let mut held = [0u64; WORDS_PER_REGION];
            let mut n = 0;
            for k in 0..PAGES_PER_REGION {
                let at = VirtAddr(va.0 + (k << 12));
                if host.kernel.peek(pid, at).is_some() {
                    held[(k / 64) as usize] |= 1 << (k % 64);
                    n += 1;
                }
            }
            if n == 0 {
                continue;
            }
            if host
                .external_discard(proc, 0, region << REGION_SHIFT, 1 << REGION_SHIFT)
                .is_err()
            {
                continue;
            }
            let vm = &mut self.vms[v];
            vm.pages[region as usize * WORDS_PER_REGION..][..WORDS_PER_REGION]
                .copy_from_slice(&held);
            set(&vm.out, region, true);
            vm.stats.out_bytes += n << 12;
            vm.flush = true;
            return Some(n << 12);
        }
        None
    }
}
