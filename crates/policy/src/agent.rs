//! The live agent's policy: a promotion policy (HawkEye, or the Linux-like and
//! Ingens-like orders) run *beside* a host kernel, with the agent's rate limit and CPU
//! budget.
//!
//! A user-space agent cannot change what the kernel does at a page fault, nor stop
//! khugepaged: the host kernel keeps deciding page sizes at faults under its own THP
//! mode, and the agent only adds promotions (`process_madvise(MADV_COLLAPSE)`) in the
//! order its promoter chooses. [`AgentPolicy`] composes exactly that:
//!
//! - faults, reclaim (the THP shrinker) and the host's khugepaged are the `kernel`'s, a
//!   [`LinuxPolicy`] with the host's THP settings;
//! - the promoter's daemons (HawkEye's sampler and promoter, khugepaged's scan, Ingens'
//!   promoter and tracker) run through [`Limited`], which enforces the agent's collapse
//!   rate limit and answers [`CollapseError::Deferred`] when it is spent; after each run
//!   the sleep is stretched so that the agent's CPU time stays within its budget.
//!
//! The same value runs in both of hugemm's forms. In the model (`hugemm agent
//! --simulate`), the engine schedules its daemons in simulated time over the model
//! kernel; live (`hugemm agent`), the agent's loop schedules the promoter's daemons in
//! wall time over the host's `/proc` and `process_madvise`. So the promoter tried in the
//! model is the one deployed: nothing of its logic is copied.
//!
//! What the promoter may not do live: split huge pages or free zero-filled base pages
//! (HawkEye's bloat recovery) are destructive to a process the agent does not own, so
//! [`AgentPolicy::new`] refuses a promoter with bloat recovery on; a promoter's fault-time
//! hooks ([`Policy::fault_size`], [`Policy::fault_taken`]) are never consulted, since the
//! agent never sees faults.

use crate::ops::{MemInfo, MemoryOps, RegionRef, TlbMisses, TlbSampling};
use crate::{DaemonRun, DaemonSpec, Defrag, LinuxConfig, LinuxPolicy, Policy, PolicyConfig};
use crate::{Pressure, Reclaimed};
use hugemm_hw::{Nanos, Order, PageSize, Picos, Pid, Pmu, VirtAddr};
use hugemm_mm::{
    CollapseError, CollapseOutcome, FaultInfo, MmError, RegionInfo, ZeroScan, ZeroScanOutcome,
};

/// The agent's own limits (`[agent]` in its configuration).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct AgentLimits {
    /// Collapses per second at most, over time (a token bucket).
    pub max_collapses_per_s: f64,
    /// Collapses that may be made back to back (the bucket's depth).
    pub burst: u32,
    /// The share of one core the agent may use, in (0, 1].
    pub cpu_budget: f64,
}

impl Default for AgentLimits {
    /// 50 collapses a second (a 2 MB copy takes about 0.2-0.5 ms here, so at most a few
    /// percent of a core), bursts of 10, and 5% of a core.
    fn default() -> Self {
        AgentLimits {
            max_collapses_per_s: 50.0,
            burst: 10,
            cpu_budget: 0.05,
        }
    }
}

/// What the agent knows of accesses to a region.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Coverage {
    /// Present pages only: a region's `accessed` count is its population, and clearing
    /// does nothing (what the live agent has where no access source is usable, as on the
    /// development machines).
    #[default]
    Population,
    /// The page tables' accessed bits, as the host offers them (the model kernel's; live,
    /// a source such as DAMON or page-idle tracking).
    AccessedBits,
}

impl Coverage {
    /// The name in configuration files.
    pub fn name(self) -> &'static str {
        match self {
            Coverage::Population => "population",
            Coverage::AccessedBits => "accessed-bits",
        }
    }
}

/// An agent: the host kernel it runs beside, its promoter, and its limits.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct AgentPolicyConfig {
    /// The host kernel's THP settings (its fault path, shrinker and khugepaged).
    pub kernel: LinuxConfig,
    /// The promoter: `linux` (khugepaged's order), `ingens` or `hawkeye`.
    pub promoter: PolicyConfig,
    /// The agent's limits.
    pub limits: AgentLimits,
    /// What the agent sees of accesses. In the model, [`Coverage::Population`] hides
    /// the model's accessed bits from the promoter, so a simulation sees what the
    /// deployed agent sees.
    pub coverage: Coverage,
}

/// Why an agent cannot be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AgentConfigError {
    /// The promoter is not one an agent can run.
    #[error(
        "the agent runs the linux, ingens or hawkeye promoter, not `{0}` (it needs \
         what a user-space agent cannot do: reservations at fault time, or TLB-miss sampling)"
    )]
    Promoter(&'static str),
    /// HawkEye's bloat recovery would split huge pages and free memory of processes the
    /// agent does not own.
    #[error(
        "policy.hawkeye.bloat.enabled must be false for the agent: bloat recovery splits \
         huge pages and frees memory of the target, which the agent never does"
    )]
    Bloat,
    /// A limit is out of range.
    #[error("{key}: expected {expected}")]
    Limit {
        /// The key.
        key: &'static str,
        /// What was expected.
        expected: &'static str,
    },
}

/// A token bucket over a clock of [`Nanos`] (the policy's, [`MemoryOps::now`]): at most
/// `per_s` actions a second on average, at most `burst` back to back; full at first use.
#[derive(Clone, Copy, Debug)]
pub struct TokenBucket {
    per_s: f64,
    depth: f64,
    tokens: f64,
    last: Option<Nanos>,
}

impl TokenBucket {
    /// `per_s` actions a second (> 0), bursts of up to `burst` (at least 1).
    pub fn new(per_s: f64, burst: u32) -> TokenBucket {
        let depth = f64::from(burst.max(1));
        TokenBucket {
            per_s: per_s.max(f64::MIN_POSITIVE),
            depth,
            tokens: depth,
            last: None,
        }
    }

    fn refill(&mut self, now: Nanos) {
        let elapsed = self
            .last
            .map_or(0.0, |t| now.0.saturating_sub(t.0) as f64 / 1e9);
        self.tokens = (self.tokens + elapsed * self.per_s).min(self.depth);
        self.last = Some(now);
    }

    /// Take a token if one is there at `now`.
    pub fn take(&mut self, now: Nanos) -> bool {
        self.refill(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// How long from `now` until a token is there.
    pub fn wait(&mut self, now: Nanos) -> Nanos {
        self.refill(now);
        if self.tokens >= 1.0 {
            Nanos::ZERO
        } else {
            Nanos(((1.0 - self.tokens) / self.per_s * 1e9).ceil() as u64)
        }
    }
}

/// The sleep after a daemon run that took `cpu` and asked for `sleep`, so that the run's
/// share of the time up to the next one is at most `budget`: `cpu / (cpu + sleep) <=
/// budget`.
pub fn budget_sleep(cpu: Nanos, sleep: Nanos, budget: f64) -> Nanos {
    if budget >= 1.0 {
        return sleep;
    }
    let needed = cpu.0 as f64 * (1.0 - budget) / budget;
    Nanos(sleep.0.max(needed.ceil() as u64))
}

/// The report name of a promoter's daemon running in an agent (distinct from the host
/// kernel's own khugepaged).
fn agent_daemon_name(name: &'static str) -> &'static str {
    match name {
        "khugepaged" => "agent-khugepaged",
        "ingens-promoter" => "agent-ingens-promoter",
        "ingens-tracker" => "agent-ingens-tracker",
        "hawkeye-sampler" => "agent-hawkeye-sampler",
        "hawkeye-promoter" => "agent-hawkeye-promoter",
        "hawkeye-bloat" => "agent-hawkeye-bloat",
        other => other,
    }
}

/// A promotion policy run by an agent beside a host kernel (see the module doc).
#[derive(Clone)]
pub struct AgentPolicy {
    kernel: LinuxPolicy,
    kernel_daemons: usize,
    promoter: Box<dyn Policy>,
    limits: AgentLimits,
    coverage: Coverage,
    bucket: TokenBucket,
    deferred: u64,
}

impl std::fmt::Debug for AgentPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentPolicy")
            .field("promoter", &self.promoter.name())
            .field("limits", &self.limits)
            .field("deferred", &self.deferred)
            .finish_non_exhaustive()
    }
}

impl AgentPolicy {
    /// An agent for `cfg`, checked ([`AgentPolicy::check`]).
    pub fn new(cfg: &AgentPolicyConfig) -> Result<AgentPolicy, AgentConfigError> {
        Self::check(cfg)?;
        Ok(Self::build(cfg))
    }

    /// Whether `cfg` is an agent that can run: a promoter the agent can run, bloat
    /// recovery off, limits in range.
    pub fn check(cfg: &AgentPolicyConfig) -> Result<(), AgentConfigError> {
        match &cfg.promoter {
            PolicyConfig::Linux(_) | PolicyConfig::Ingens(_) => {}
            PolicyConfig::Hawkeye(h) if h.bloat.enabled => return Err(AgentConfigError::Bloat),
            PolicyConfig::Hawkeye(_) => {}
            PolicyConfig::FreeBsd(_) => return Err(AgentConfigError::Promoter("freebsd")),
            PolicyConfig::HPolicy(_) => return Err(AgentConfigError::Promoter("hpolicy")),
            PolicyConfig::Agent(_) => return Err(AgentConfigError::Promoter("agent")),
        }
        let l = &cfg.limits;
        if !(l.max_collapses_per_s > 0.0 && l.max_collapses_per_s <= 100_000.0) {
            return Err(AgentConfigError::Limit {
                key: "agent.max_collapses_per_s",
                expected: "a rate above 0 and at most 100000",
            });
        }
        if !(l.cpu_budget > 0.0 && l.cpu_budget <= 1.0) {
            return Err(AgentConfigError::Limit {
                key: "agent.cpu_budget",
                expected: "a share of one core above 0 and at most 1",
            });
        }
        if l.burst == 0 {
            return Err(AgentConfigError::Limit {
                key: "agent.burst",
                expected: "at least 1",
            });
        }
        Ok(())
    }

    /// The agent for `cfg` as it is, unchecked (what [`PolicyConfig::build`] does for a
    /// configuration its reader checked with [`AgentPolicy::check`]).
    pub(crate) fn build(cfg: &AgentPolicyConfig) -> AgentPolicy {
        let kernel = LinuxPolicy::new(cfg.kernel);
        AgentPolicy {
            kernel_daemons: kernel.daemons().len(),
            kernel,
            promoter: cfg.promoter.build(),
            limits: cfg.limits,
            coverage: cfg.coverage,
            bucket: TokenBucket::new(cfg.limits.max_collapses_per_s, cfg.limits.burst),
            deferred: 0,
        }
    }

    /// The promoter's name (`linux`, `ingens`, `hawkeye`).
    pub fn promoter_name(&self) -> &'static str {
        self.promoter.name()
    }

    /// The promoter's daemons, indexed as [`AgentPolicy::run_promoter`] takes them.
    pub fn promoter_daemons(&self) -> Vec<DaemonSpec> {
        self.promoter
            .daemons()
            .into_iter()
            .map(|d| DaemonSpec {
                name: agent_daemon_name(d.name),
                first_run: d.first_run,
            })
            .collect()
    }

    /// Run the promoter's daemon `index` once over `ops`, through the rate limit; the
    /// sleep is stretched to keep the run's CPU time within the budget. This is the agent
    /// loop's one step, live or in the model.
    pub fn run_promoter(&mut self, index: usize, ops: &mut dyn MemoryOps) -> DaemonRun {
        let mut limited = Limited {
            inner: ops,
            bucket: &mut self.bucket,
            coverage: self.coverage,
            deferred: 0,
        };
        let run = self.promoter.run_daemon(index, &mut limited);
        self.deferred += limited.deferred;
        DaemonRun {
            cpu: run.cpu,
            sleep: budget_sleep(run.cpu, run.sleep, self.limits.cpu_budget),
        }
    }

    /// Collapses refused by the rate limit so far.
    pub fn deferred(&self) -> u64 {
        self.deferred
    }

    /// The agent's limits.
    pub fn limits(&self) -> &AgentLimits {
        &self.limits
    }

    /// A target appeared (the agent calls this live; the engine in the model).
    pub fn target_started(&mut self, pid: Pid) {
        self.promoter.process_started(pid);
    }

    /// A target went away.
    pub fn target_exited(&mut self, pid: Pid) {
        self.promoter.process_exited(pid);
    }
}

impl Policy for AgentPolicy {
    fn name(&self) -> &'static str {
        "agent"
    }

    fn fault_size(&mut self, pid: Pid, info: &FaultInfo) -> PageSize {
        self.kernel.fault_size(pid, info)
    }

    fn fault_defrag(&self, info: &FaultInfo) -> Defrag {
        self.kernel.fault_defrag(info)
    }

    fn use_huge_zero_page(&self) -> bool {
        self.kernel.use_huge_zero_page()
    }

    /// The host kernel's daemons, then the promoter's.
    fn daemons(&self) -> Vec<DaemonSpec> {
        let mut d = self.kernel.daemons();
        d.extend(self.promoter_daemons());
        d
    }

    fn run_daemon(&mut self, index: usize, ops: &mut dyn MemoryOps) -> DaemonRun {
        if index < self.kernel_daemons {
            self.kernel.run_daemon(index, ops)
        } else {
            self.run_promoter(index - self.kernel_daemons, ops)
        }
    }

    fn fault_taken(&mut self, pid: Pid, region: VirtAddr, size: PageSize) {
        self.kernel.fault_taken(pid, region, size);
    }

    fn reclaim(&mut self, ops: &mut dyn MemoryOps, want: u64, pressure: Pressure) -> Reclaimed {
        self.kernel.reclaim(ops, want, pressure)
    }

    fn process_started(&mut self, pid: Pid) {
        self.kernel.process_started(pid);
        self.target_started(pid);
    }

    fn process_exited(&mut self, pid: Pid) {
        self.kernel.process_exited(pid);
        self.target_exited(pid);
    }
}

/// [`MemoryOps`] as the agent sees them: a collapse with no token left in the rate limit
/// is refused with [`CollapseError::Deferred`] (nothing done, try later), and under
/// [`Coverage::Population`] a region's accessed count is its population and clearing does
/// nothing; everything else passes through.
pub struct Limited<'a> {
    inner: &'a mut dyn MemoryOps,
    bucket: &'a mut TokenBucket,
    coverage: Coverage,
    deferred: u64,
}

impl MemoryOps for Limited<'_> {
    fn now(&self) -> Nanos {
        self.inner.now()
    }
    fn processes(&self) -> Vec<Pid> {
        self.inner.processes()
    }
    fn regions(&self, pid: Pid) -> Vec<RegionRef> {
        self.inner.regions(pid)
    }
    fn huge_regions(&self, pid: Pid) -> Vec<VirtAddr> {
        self.inner.huge_regions(pid)
    }
    fn region_info(&mut self, pid: Pid, region: VirtAddr) -> RegionInfo {
        let info = self.inner.region_info(pid, region);
        match self.coverage {
            Coverage::AccessedBits => info,
            Coverage::Population => RegionInfo {
                accessed: info.present,
                dirty: 0,
                ..info
            },
        }
    }
    fn clear_accessed(&mut self, pid: Pid, region: VirtAddr) -> usize {
        match self.coverage {
            Coverage::AccessedBits => self.inner.clear_accessed(pid, region),
            Coverage::Population => 0,
        }
    }
    fn clear_referenced(&mut self, pid: Pid, region: VirtAddr) -> usize {
        match self.coverage {
            Coverage::AccessedBits => self.inner.clear_referenced(pid, region),
            Coverage::Population => 0,
        }
    }
    fn collapse(&mut self, pid: Pid, region: VirtAddr) -> Result<CollapseOutcome, CollapseError> {
        if !self.bucket.take(self.inner.now()) {
            self.deferred += 1;
            return Err(CollapseError::Deferred);
        }
        self.inner.collapse(pid, region)
    }
    fn split(&mut self, pid: Pid, region: VirtAddr) -> Result<Nanos, MmError> {
        self.inner.split(pid, region)
    }
    fn dedup_zero_subpages(
        &mut self,
        pid: Pid,
        region: VirtAddr,
        scan: ZeroScan,
    ) -> Result<ZeroScanOutcome, MmError> {
        self.inner.dedup_zero_subpages(pid, region, scan)
    }
    fn pmu(&self, pid: Pid) -> Option<Pmu> {
        self.inner.pmu(pid)
    }
    fn rss_bytes(&self, pid: Pid) -> u64 {
        self.inner.rss_bytes(pid)
    }
    fn huge_pages(&self, pid: Pid) -> u64 {
        self.inner.huge_pages(pid)
    }
    fn mem_info(&self) -> MemInfo {
        self.inner.mem_info()
    }
    fn scan_cost_per_pte(&self) -> Picos {
        self.inner.scan_cost_per_pte()
    }
    fn compact_for(&mut self, order: Order) -> Nanos {
        self.inner.compact_for(order)
    }
    fn huge_order(&self) -> Order {
        self.inner.huge_order()
    }
    fn start_tlb_sampling(&mut self, pid: Pid, sampling: TlbSampling) -> bool {
        self.inner.start_tlb_sampling(pid, sampling)
    }
    fn take_tlb_misses(&mut self, pid: Pid) -> Option<TlbMisses> {
        self.inner.take_tlb_misses(pid)
    }
    fn note_phase_two(&mut self, pid: Pid, cold: u64, very_hot: u64) {
        self.inner.note_phase_two(pid, cold, very_hot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_stretches_the_sleep_to_keep_the_cpu_share() {
        let ms = Nanos::from_millis;
        // 10 ms of CPU at a 5% budget needs 190 ms of sleep after it.
        assert_eq!(budget_sleep(ms(10), ms(100), 0.05), ms(190));
        // A long enough sleep is kept.
        assert_eq!(budget_sleep(ms(10), ms(1000), 0.05), ms(1000));
        assert_eq!(budget_sleep(ms(10), ms(1), 1.0), ms(1));
    }

    #[test]
    fn the_bucket_allows_a_burst_then_the_rate() {
        let mut b = TokenBucket::new(10.0, 3);
        let t0 = Nanos::from_millis(1000);
        assert!((0..3).all(|_| b.take(t0)));
        assert!(!b.take(t0));
        assert_eq!(b.wait(t0), Nanos::from_millis(100));
        // 100 ms later, one more.
        assert!(b.take(Nanos::from_millis(1100)));
        assert!(!b.take(Nanos::from_millis(1100)));
        // Idle for a minute: the bucket holds only its depth.
        let later = Nanos::from_millis(61_100);
        assert_eq!(b.wait(later), Nanos::ZERO);
        assert!((0..3).all(|_| b.take(later)));
        assert!(!b.take(later));
    }

    /// HawkEye as an agent runs it: without bloat recovery.
    fn hawkeye() -> crate::HawkeyeConfig {
        let mut h = crate::HawkeyeConfig::default();
        h.bloat.enabled = false;
        h
    }

    fn cfg(promoter: PolicyConfig) -> AgentPolicyConfig {
        AgentPolicyConfig {
            kernel: LinuxConfig::default(),
            promoter,
            limits: AgentLimits::default(),
            coverage: Coverage::Population,
        }
    }

    #[test]
    fn only_promoters_an_agent_can_run_are_accepted() {
        use crate::FreeBsdConfig;
        assert!(AgentPolicy::new(&cfg(PolicyConfig::Hawkeye(hawkeye()))).is_ok());
        assert_eq!(
            AgentPolicy::new(&cfg(PolicyConfig::FreeBsd(FreeBsdConfig::default()))).err(),
            Some(AgentConfigError::Promoter("freebsd"))
        );
        let mut h = hawkeye();
        h.bloat.enabled = true;
        assert_eq!(
            AgentPolicy::new(&cfg(PolicyConfig::Hawkeye(h))).err(),
            Some(AgentConfigError::Bloat)
        );
        let mut c = cfg(PolicyConfig::Linux(LinuxConfig::default()));
        c.limits.cpu_budget = 0.0;
        assert!(matches!(
            AgentPolicy::new(&c),
            Err(AgentConfigError::Limit {
                key: "agent.cpu_budget",
                ..
            })
        ));
    }

    #[test]
    fn daemons_are_the_kernels_then_the_promoters_renamed() {
        let a = AgentPolicy::new(&cfg(PolicyConfig::Hawkeye(hawkeye()))).unwrap();
        let names: Vec<&str> = a.daemons().iter().map(|d| d.name).collect();
        assert_eq!(
            names,
            [
                "khugepaged",
                "agent-hawkeye-sampler",
                "agent-hawkeye-promoter",
                "agent-hawkeye-bloat"
            ]
        );
    }
}
