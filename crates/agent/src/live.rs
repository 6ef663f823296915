//! [`LiveOps`]: the policy interface ([`MemoryOps`]) over a running Linux host, the live
//! twin of the model engine's.
//!
//! | policy asks | answered from |
//! |---|---|
//! | `processes` | the targets the agent tracks, in the order it found them |
//! | `regions` | `/proc/PID/smaps`: the 2 MB regions of each VMA `MADV_COLLAPSE` could act on that holds resident memory |
//! | `region_info` | `/proc/PID/pagemap` (present pages), with `/proc/kpageflags` where readable (huge or not); see below for `accessed` |
//! | `clear_accessed` | nothing: no access source the agent uses can clear bits (returns 0) |
//! | `collapse` | `process_madvise(pidfd, MADV_COLLAPSE)` on the region; its wall time is the cost |
//! | `split`, `dedup_zero_subpages` | refused: destructive to a process the agent does not own |
//! | `pmu` | none (HawkEye-G's order applies; `perf_event_open` walk counters are not read) |
//! | `mem_info` | `sysinfo(2)` for total memory, `/proc/buddyinfo` for free blocks and FMFI |
//! | `compact_for` | nothing: `MADV_COLLAPSE` compacts and reclaims for itself, in the kernel |
//!
//! **Access information.** The agent uses population-based coverage: a region's
//! `accessed` count is its present pages, as if every resident page had been touched in
//! the sampling window. That is the one source every kernel offers; the better ones
//! ([`AccessSource::DamonVaddr`], [`AccessSource::PageIdle`], [`AccessSource::DamonPaddr`])
//! are detected and named in the log when present, but not used yet. Under it HawkEye's
//! access-coverage is a region's population, and its order the population buckets'
//! (highest first, round-robin across processes).
//!
//! **Dry run.** With `dry_run`, `collapse` decides nothing differently but calls nothing:
//! it records the collapse it would have made and answers success at no cost.
//!
//! Every outcome of a collapse is recorded as an [`Event`] for the loop to log and count.

use crate::act::{Failure, Target};
use crate::observe::buddyinfo::BuddyInfo;
use crate::observe::pagemap::{HugeMapping, KPageFlags, Pagemap, RegionSummary, Summariser};
use crate::observe::smaps::{EligibleRange, Smaps};
use crate::observe::sources::AccessSource;
use crate::units::{HostPid, HugeRange};
use hugemm_hw::{Geometry, Nanos, Order, Picos, Pid, Pmu, VirtAddr};
use hugemm_mm::{
    CollapseError, CollapseOutcome, HugeAdvice, MmError, RegionInfo, RegionState, ZeroScan,
    ZeroScanOutcome,
};
use hugemm_policy::{MemInfo, MemoryOps, RegionRef};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// What happened to one collapse the policy asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Collapsed (or, in a dry run, would have been).
    Collapsed,
    /// The kernel refused it.
    Failed(Failure),
}

/// One collapse the policy asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// The target.
    pub pid: HostPid,
    /// The region's first address.
    pub region: VirtAddr,
    /// Present base pages before the collapse.
    pub present: u32,
    /// What happened.
    pub outcome: Outcome,
    /// The system call's wall time.
    pub took: Duration,
}

/// A target the agent tracks.
#[derive(Debug)]
struct Tracked {
    target: Target,
    name: String,
    pagemap: Pagemap,
    /// Set when a collapse found it gone; the loop drops it at its next rescan.
    gone: bool,
}

/// [`MemoryOps`] over the host (see the module doc).
#[derive(Debug)]
pub struct LiveOps {
    start: Instant,
    geometry: Geometry,
    dry_run: bool,
    max_vma_bytes: u64,
    /// Targets by pid, and the order they were found in.
    targets: BTreeMap<u32, Tracked>,
    order: Vec<u32>,
    kpageflags: Option<KPageFlags>,
    events: Vec<Event>,
}

/// Why a target could not be added.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// No such process.
    #[error("no process with pid {0}")]
    NoSuchProcess(HostPid),
    /// Its memory maps cannot be read (ptrace access).
    #[error(
        "cannot read the memory maps of pid {pid}: {source} (the agent needs ptrace-read access: \
         the same user, or CAP_SYS_PTRACE)"
    )]
    Permission {
        /// The target.
        pid: HostPid,
        /// The read's error.
        #[source]
        source: crate::ObserveError,
    },
    /// Anything else.
    #[error("pid {pid}: {what}")]
    Other {
        /// The target.
        pid: HostPid,
        /// What failed.
        what: String,
    },
}

impl LiveOps {
    /// Ops over no target yet. `kpageflags` tells huge mappings exactly (root only).
    pub fn new(dry_run: bool, kpageflags: Option<KPageFlags>) -> LiveOps {
        LiveOps {
            start: Instant::now(),
            geometry: Geometry::X86_64,
            dry_run,
            max_vma_bytes: 1 << 40,
            targets: BTreeMap::new(),
            order: Vec::new(),
            kpageflags,
            events: Vec::new(),
        }
    }

    /// The access source the agent uses (see the module doc).
    pub fn access_source(&self) -> AccessSource {
        AccessSource::Population
    }

    /// Whether huge mappings are told from kpageflags.
    pub fn has_kpageflags(&self) -> bool {
        self.kpageflags.is_some()
    }

    /// Start tracking `pid`: open a pidfd and its pagemap, and read its smaps once to be
    /// sure they can be read.
    pub fn add(&mut self, pid: HostPid, name: String) -> Result<(), TargetError> {
        let target = Target::open(pid).map_err(|e| match e.raw_os_error() {
            Some(libc::ESRCH) => TargetError::NoSuchProcess(pid),
            _ => TargetError::Other {
                pid,
                what: format!("pidfd_open: {e}"),
            },
        })?;
        let denied = |source: crate::ObserveError| {
            if !pid.proc_dir().exists() {
                TargetError::NoSuchProcess(pid)
            } else {
                TargetError::Permission { pid, source }
            }
        };
        Smaps::read(pid).map_err(denied)?;
        let pagemap = Pagemap::open(pid).map_err(denied)?;
        self.targets.insert(
            pid.0,
            Tracked {
                target,
                name,
                pagemap,
                gone: false,
            },
        );
        self.order.push(pid.0);
        Ok(())
    }

    /// Stop tracking `pid`.
    pub fn remove(&mut self, pid: HostPid) {
        self.targets.remove(&pid.0);
        self.order.retain(|p| *p != pid.0);
    }

    /// The tracked targets, in the order they were found, with their names.
    pub fn targets(&self) -> Vec<(HostPid, &str)> {
        self.order
            .iter()
            .filter_map(|p| self.targets.get(p).map(|t| (HostPid(*p), t.name.as_str())))
            .collect()
    }

    /// Targets a collapse found gone.
    pub fn gone(&self) -> Vec<HostPid> {
        self.targets
            .iter()
            .filter(|(_, t)| t.gone)
            .map(|(p, _)| HostPid(*p))
            .collect()
    }

    /// Take the collapse events recorded since the last call.
    pub fn take_events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.events)
    }

    /// The summaries of every region the policy may act on in `pid` (for the loop's
    /// gauges: regions tracked, huge pages).
    pub fn summaries(&self, pid: HostPid) -> Vec<RegionSummary> {
        let Some(t) = self.targets.get(&pid.0) else {
            return Vec::new();
        };
        let Ok(smaps) = Smaps::read(pid) else {
            return Vec::new();
        };
        let s = self.summariser(&t.pagemap);
        let mut out = Vec::new();
        for e in self.acted_on(&smaps) {
            if let Ok(r) = s.eligible(&e) {
                out.extend(r);
            }
        }
        out
    }

    /// The eligible ranges of `smaps` the policy may act on: holding resident memory, and
    /// no larger than `max_vma_bytes`.
    fn acted_on<'a>(&self, smaps: &'a Smaps) -> impl Iterator<Item = EligibleRange<'a>> {
        let max = self.max_vma_bytes;
        smaps
            .eligible_ranges(self.geometry)
            .filter(move |e| e.vma.rss.0 > 0 && e.range.end().0 - e.range.start().0 <= max)
    }

    fn summariser<'a>(&'a self, pagemap: &'a Pagemap) -> Summariser<'a> {
        let s = Summariser::new(pagemap).geometry(self.geometry);
        match &self.kpageflags {
            Some(k) => s.kpageflags(k),
            None => s,
        }
    }

    fn summary(&self, pid: Pid, region: VirtAddr) -> Option<RegionSummary> {
        let t = self.targets.get(&pid.0)?;
        let g = &self.geometry;
        let range = HugeRange::new(region, VirtAddr(region.0 + g.huge_bytes()), g)?;
        self.summariser(&t.pagemap)
            .range(&range)
            .ok()?
            .into_iter()
            .next()
    }
}

/// What the policy sees of a region from its summary, under population-based coverage.
pub fn region_info(s: &RegionSummary) -> RegionInfo {
    let (state, present) = match s.huge {
        HugeMapping::Yes(_) => (RegionState::Huge, 512),
        _ if s.present == 0 => (RegionState::Unmapped, 0),
        // Unknown (every page present, nothing tells how): a collapse of a region already
        // huge is cheap and changes nothing.
        _ => (RegionState::Table, s.present),
    };
    RegionInfo {
        state,
        present,
        zero: 0,
        accessed: present,
        dirty: 0,
    }
}

impl MemoryOps for LiveOps {
    fn now(&self) -> Nanos {
        Nanos(self.start.elapsed().as_nanos() as u64)
    }

    fn processes(&self) -> Vec<Pid> {
        self.order
            .iter()
            .filter(|p| self.targets.get(p).is_some_and(|t| !t.gone))
            .map(|p| Pid(*p))
            .collect()
    }

    fn regions(&self, pid: Pid) -> Vec<RegionRef> {
        if !self.targets.contains_key(&pid.0) {
            return Vec::new();
        }
        // A target that exited has no smaps: no regions; the loop's next rescan finds it
        // gone and logs it.
        let Ok(smaps) = Smaps::read(HostPid(pid.0)) else {
            return Vec::new();
        };
        let g = self.geometry;
        self.acted_on(&smaps)
            .flat_map(|e| {
                let advice = if e.vma.flags.hugepage() {
                    HugeAdvice::Hugepage
                } else {
                    HugeAdvice::None
                };
                e.range
                    .region_starts(&g)
                    .map(move |start| RegionRef { start, advice })
            })
            .collect()
    }

    fn huge_regions(&self, pid: Pid) -> Vec<VirtAddr> {
        self.summaries(HostPid(pid.0))
            .into_iter()
            .filter(|s| matches!(s.huge, HugeMapping::Yes(_)))
            .map(|s| s.start)
            .collect()
    }

    fn region_info(&mut self, pid: Pid, region: VirtAddr) -> RegionInfo {
        match self.summary(pid, region) {
            Some(s) => region_info(&s),
            None => RegionInfo {
                state: RegionState::Unmapped,
                present: 0,
                zero: 0,
                accessed: 0,
                dirty: 0,
            },
        }
    }

    fn clear_accessed(&mut self, _pid: Pid, _region: VirtAddr) -> usize {
        0
    }

    fn clear_referenced(&mut self, _pid: Pid, _region: VirtAddr) -> usize {
        0
    }

    fn collapse(&mut self, pid: Pid, region: VirtAddr) -> Result<CollapseOutcome, CollapseError> {
        let g = self.geometry;
        let Some(range) = HugeRange::new(region, VirtAddr(region.0 + g.huge_bytes()), &g) else {
            return Err(CollapseError::NotInVma);
        };
        let present = self.summary(pid, region).map_or(0, |s| s.present);
        let Some(t) = self.targets.get_mut(&pid.0) else {
            return Err(CollapseError::NotInVma);
        };
        let began = Instant::now();
        let result = if self.dry_run {
            Ok(())
        } else {
            t.target.collapse(&range)
        };
        let took = began.elapsed();
        let event = |outcome| Event {
            pid: HostPid(pid.0),
            region,
            present,
            outcome,
            took,
        };
        match result {
            Ok(()) => {
                self.events.push(event(Outcome::Collapsed));
                Ok(CollapseOutcome {
                    cost: Nanos(took.as_nanos() as u64),
                    copied: present,
                    zero_filled: 512 - present.min(512),
                })
            }
            Err(e) => {
                self.events.push(event(Outcome::Failed(e.failure)));
                match e.failure {
                    Failure::Gone => {
                        t.gone = true;
                        Err(CollapseError::NotInVma)
                    }
                    // No huge page to be had (or part of the range unmapped): the policy
                    // backs off as from a failed allocation.
                    Failure::NoMemory => Err(CollapseError::NoMemory),
                    Failure::Transient => Err(CollapseError::Deferred),
                    Failure::Permission | Failure::NotEligible | Failure::Other(_) => {
                        Err(CollapseError::NotInVma)
                    }
                }
            }
        }
    }

    fn split(&mut self, _pid: Pid, _region: VirtAddr) -> Result<Nanos, MmError> {
        Err(MmError::InvalidArgument {
            what: "the live agent never splits a target's huge pages",
        })
    }

    fn dedup_zero_subpages(
        &mut self,
        _pid: Pid,
        _region: VirtAddr,
        _scan: ZeroScan,
    ) -> Result<ZeroScanOutcome, MmError> {
        Err(MmError::InvalidArgument {
            what: "the live agent never frees a target's memory",
        })
    }

    fn pmu(&self, _pid: Pid) -> Option<Pmu> {
        None
    }

    fn rss_bytes(&self, pid: Pid) -> u64 {
        Smaps::read(HostPid(pid.0)).map_or(0, |s| s.vmas.iter().map(|v| v.rss.0).sum())
    }

    fn huge_pages(&self, pid: Pid) -> u64 {
        Smaps::read(HostPid(pid.0)).map_or(0, |s| {
            s.vmas.iter().map(|v| v.anon_huge_pages.0).sum::<u64>() / self.geometry.huge_bytes()
        })
    }

    fn mem_info(&self) -> MemInfo {
        let huge = self.huge_order();
        let info = rustix::system::sysinfo();
        let frames_total =
            info.totalram as u64 * u64::from(info.mem_unit) / self.geometry.base_bytes();
        let Ok(buddy) = BuddyInfo::read() else {
            return MemInfo {
                frames_total,
                ..MemInfo::default()
            };
        };
        let frames_free: u64 = buddy.zones.iter().map(|z| z.free.base_pages()).sum();
        let free_huge_blocks = buddy.free_huge_blocks(huge);
        let usable = free_huge_blocks << huge.0;
        MemInfo {
            frames_total,
            frames_free,
            free_huge_blocks,
            fmfi: if frames_free == 0 {
                1.0
            } else {
                1.0 - usable as f64 / frames_free as f64
            },
        }
    }

    /// The CPU time of reading is measured by the loop, not priced per entry.
    fn scan_cost_per_pte(&self) -> Picos {
        Picos(0)
    }

    fn compact_for(&mut self, _order: Order) -> Nanos {
        Nanos::ZERO
    }

    fn huge_order(&self) -> Order {
        self.geometry.huge_order()
    }
}
