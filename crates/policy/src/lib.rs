//! hugemm's policies: the decisions of huge-page management, written once against a
//! narrow interface ([`MemoryOps`]) that both the model kernel and, later, the live agent
//! implement.
//!
//! A policy decides; the kernel model's mechanisms do (conventions 3). A policy answers the
//! fault path's question "which page size?" and runs periodic kernel daemons (khugepaged,
//! HawkEye's scanners, Ingens' promoter...) that observe regions and ask for promotions
//! and splits. Each policy is one module. This crate must not reach into the kernel
//! model's internals: everything goes through [`MemoryOps`].

pub mod access;
pub mod agent;
pub mod bloat;
pub mod freebsd;
pub mod hawkeye;
pub mod hpolicy;
pub mod ingens;
pub mod linux;
pub mod nimble;
pub mod ops;
pub mod shrinker;
pub mod sysmon;
pub mod tiering;

use hugemm_hw::{Nanos, PageSize, Pid, VirtAddr};
use hugemm_mm::FaultInfo;

pub use agent::{
    AgentConfigError, AgentLimits, AgentPolicy, AgentPolicyConfig, Coverage, TokenBucket,
};
pub use bloat::{BloatConfig, BloatRecovery};
pub use freebsd::{FreeBsdConfig, FreeBsdPolicy};
pub use hawkeye::{HawkeyeConfig, HawkeyePolicy, Variant as HawkeyeVariant};
pub use hpolicy::{HPolicy, HPolicyConfig};
pub use ingens::{IngensConfig, IngensPolicy};
pub use linux::{DefragMode, KhugepagedConfig, LinuxConfig, LinuxPolicy, ThpMode};
pub use nimble::{NimbleConfig, NimblePolicy};
pub use ops::{MemInfo, MemoryOps, RegionRef, TlbMisses, TlbSampling};
pub use sysmon::{HTree, Source as SysMonSource, SysMon, SysMonConfig};
pub use tiering::{TierOps, TierRun, Tiering, TieringConfig};

/// What the fault path does when the policy wants a huge page and no free block of the
/// huge order exists (Linux's `transparent_hugepage/defrag` for the faulting VMA).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Defrag {
    /// Fall back to a base page at once.
    Never,
    /// Compact directly (the faulting task stalls, subject to compaction deferral).
    Direct,
    /// Fall back at once and wake the background compaction daemon (kcompactd).
    Wake,
}

/// A periodic kernel daemon a policy runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DaemonSpec {
    /// Name in reports (e.g. `khugepaged`).
    pub name: &'static str,
    /// Delay before its first run.
    pub first_run: Nanos,
}

/// What one run of a daemon did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DaemonRun {
    /// CPU time the run took (charged to the core the engine runs daemons on).
    pub cpu: Nanos,
    /// How long the daemon sleeps before its next run.
    pub sleep: Nanos,
}

/// Who asks a policy to give memory back ([`Policy::reclaim`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pressure {
    /// Background reclaim: free memory is below the low watermark (Linux's kswapd, which
    /// runs the shrinkers, the THP shrinker among them).
    Kswapd,
    /// A fault found no free frame after reclaiming the page cache: the faulting process
    /// stalls for this, and is killed if nothing is freed.
    Direct,
}

/// What [`Policy::reclaim`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reclaimed {
    /// Frames freed.
    pub freed: u64,
    /// CPU time it took (charged to the faulting process for [`Pressure::Direct`], to
    /// the daemon core for [`Pressure::Kswapd`]).
    pub cpu: Nanos,
}

/// A huge-page management policy (the catalogue: `linux`, `freebsd`, and later `ingens`,
/// `hawkeye`, `hpolicy`, `nimble`). A policy can be cloned with the run it belongs to
/// (`dyn_clone::clone_box`): a forked run continues from the same state.
pub trait Policy: dyn_clone::DynClone + Send {
    /// The policy's name, as written in experiment files.
    fn name(&self) -> &'static str;

    /// The page size an anonymous fault at `info` should try to map. The kernel model
    /// falls back to a base page when a huge one cannot be had.
    fn fault_size(&mut self, pid: Pid, info: &FaultInfo) -> PageSize;

    /// What to do when [`Policy::fault_size`] asked for a huge page and no free huge block
    /// exists. Default: fall back at once.
    fn fault_defrag(&self, info: &FaultInfo) -> Defrag {
        let _ = info;
        Defrag::Never
    }

    /// Whether a 4 KB fault at `info` (consulted when [`Policy::fault_size`] returned
    /// [`PageSize::Base`]) should reserve an order-9 block for its region, FreeBSD's
    /// superpage reservation. The kernel reserves only where it can: a region lying
    /// wholly inside the VMA, mapping no frame, without a reservation, with a free
    /// order-9 block. A region that has one (`info.region_reserved`) takes its frames
    /// from it whatever this says. Default: never.
    fn reserve_at_fault(&mut self, pid: Pid, info: &FaultInfo) -> bool {
        let _ = (pid, info);
        false
    }

    /// Whether a fault that maps the last base page of a reservation promotes the region
    /// to a huge mapping in place (FreeBSD's `vm.pmap.pg_ps_enabled`). Default: yes
    /// (only policies that reserve create reservations).
    fn promote_reservations(&self) -> bool {
        true
    }

    /// Whether a 2 MB read fault maps the huge zero page rather than allocating a huge
    /// page (Linux's `transparent_hugepage/use_zero_page`). Default: yes, Linux's default.
    fn use_huge_zero_page(&self) -> bool {
        true
    }

    /// The daemons this policy runs, indexed by position in the returned list.
    fn daemons(&self) -> Vec<DaemonSpec> {
        Vec::new()
    }

    /// Run daemon `index` once.
    fn run_daemon(&mut self, index: usize, ops: &mut dyn MemoryOps) -> DaemonRun {
        let _ = (index, ops);
        DaemonRun::default()
    }

    /// A fault of `pid` mapped a page of `size` in the huge-page-sized region starting
    /// at `region` (for policies that track faults, e.g. Ingens' recently faulted regions,
    /// Linux's deferred-split queue of new huge pages).
    fn fault_taken(&mut self, pid: Pid, region: VirtAddr, size: PageSize) {
        let _ = (pid, region, size);
    }

    /// Memory is short: free up to `want` frames of what the policy's huge pages hold
    /// beyond their use (bloat), if the policy can. `pressure` says who asks: kswapd
    /// below the low watermark, or a fault that found no frame at all (after the page
    /// cache and reclaimable kernel memory were reclaimed). Default: nothing to free.
    fn reclaim(&mut self, ops: &mut dyn MemoryOps, want: u64, pressure: Pressure) -> Reclaimed {
        let _ = (ops, want, pressure);
        Reclaimed::default()
    }

    /// A process started (in start order: policies that serve processes
    /// first-come-first-serve rely on it).
    fn process_started(&mut self, pid: Pid) {
        let _ = pid;
    }

    /// A process exited; forget its state.
    fn process_exited(&mut self, pid: Pid) {
        let _ = pid;
    }
}

/// A policy and its configuration, as chosen in an experiment file.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub enum PolicyConfig {
    /// Linux THP + khugepaged.
    Linux(LinuxConfig),
    /// Ingens.
    Ingens(IngensConfig),
    /// HawkEye (G or PMU).
    Hawkeye(HawkeyeConfig),
    /// FreeBSD superpage reservations with in-place promotion.
    FreeBsd(FreeBsdConfig),
    /// H-Policy over SysMon-H.
    HPolicy(HPolicyConfig),
    /// A live agent's promoter beside a Linux host kernel (`hugemm agent --simulate`),
    /// checked by [`AgentPolicy::check`] when it was read.
    Agent(Box<AgentPolicyConfig>),
}

impl PolicyConfig {
    /// The names of the policies that can be built, for error messages.
    pub const NAMES: &'static [&'static str] =
        &["linux", "freebsd", "ingens", "hawkeye", "hpolicy"];

    /// Build the policy.
    pub fn build(&self) -> Box<dyn Policy> {
        match self {
            PolicyConfig::Linux(cfg) => Box::new(LinuxPolicy::new(*cfg)),
            PolicyConfig::Ingens(cfg) => Box::new(IngensPolicy::new(*cfg)),
            PolicyConfig::Hawkeye(cfg) => Box::new(HawkeyePolicy::new(*cfg)),
            PolicyConfig::FreeBsd(cfg) => Box::new(FreeBsdPolicy::new(*cfg)),
            PolicyConfig::HPolicy(cfg) => Box::new(HPolicy::new(*cfg)),
            PolicyConfig::Agent(cfg) => Box::new(AgentPolicy::build(cfg)),
        }
    }
}

dyn_clone::clone_trait_object!(Policy);
