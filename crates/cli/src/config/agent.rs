//! `hugemm agent`'s configuration file: an `[agent]` table (targets, limits, metrics) and
//! the same `[policy]` table as experiment files, read by the same code, so a promoter
//! tuned in the model is deployed with the same knobs.
//!
//! ```toml
//! [agent]
//! name = "^redis-server$"        # targets: pids = [...], name = "regex", cgroup = "dir"
//! max_collapses_per_s = 50
//! burst = 10
//! cpu_budget = 0.05              # share of one core
//! rescan_ms = 2000
//! metrics = "127.0.0.1:9187"     # loopback only
//!
//! [policy]
//! name = "hawkeye"               # or linux (khugepaged's order), ingens
//! [policy.hawkeye]
//! scan_sleep_millisecs = 1000
//! promotions_per_pass = 50
//! ```
//!
//! HawkEye's bloat recovery is off unless the file turns it on, which is an error: the
//! agent never frees a target's memory.

use super::raw::{RawBloat, RawHawkeye, RawPolicy};
use super::validate::{deserialize, Validator, R};
use super::{ConfigError, Source};
use hugemm_policy::{
    AgentLimits, AgentPolicy, AgentPolicyConfig, Coverage, LinuxConfig, PolicyConfig,
};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The file as written.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawAgentFile {
    /// `[agent]`.
    pub agent: Option<RawAgent>,
    /// `[policy]`.
    pub policy: Option<RawPolicy>,
}

/// `[agent]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawAgent {
    /// Target pids.
    pub pids: Option<Vec<i64>>,
    /// Target process-name pattern (a regular expression on `comm`).
    pub name: Option<String>,
    /// Target cgroup (v2 directory, absolute or under /sys/fs/cgroup).
    pub cgroup: Option<String>,
    /// Collapses per second at most.
    pub max_collapses_per_s: Option<f64>,
    /// Collapses back to back at most.
    pub burst: Option<i64>,
    /// Share of one core the agent may use.
    pub cpu_budget: Option<f64>,
    /// How often targets are re-read (ms).
    pub rescan_ms: Option<i64>,
    /// Metrics endpoint (loopback address:port).
    pub metrics: Option<String>,
    /// Decide and log, collapse nothing.
    pub dry_run: Option<bool>,
    /// What the agent knows of accesses: population or accessed-bits (the latter only
    /// with --simulate).
    pub coverage: Option<String>,
}

/// A validated agent configuration.
#[derive(Clone, Debug)]
pub struct AgentFile {
    /// Target pids.
    pub pids: Vec<u32>,
    /// Target name pattern.
    pub name: Option<String>,
    /// Target cgroup.
    pub cgroup: Option<PathBuf>,
    /// The agent's limits.
    pub limits: AgentLimits,
    /// How often targets are re-read.
    pub rescan: Duration,
    /// Where metrics are served.
    pub metrics: Option<SocketAddr>,
    /// Dry run.
    pub dry_run: bool,
    /// The promoter.
    pub promoter: PolicyConfig,
    /// What the agent knows of accesses.
    pub coverage: Coverage,
}

impl AgentFile {
    /// The agent beside a host kernel configured as `kernel`.
    pub fn policy(&self, kernel: LinuxConfig) -> AgentPolicyConfig {
        AgentPolicyConfig {
            kernel,
            promoter: self.promoter.clone(),
            limits: self.limits,
            coverage: self.coverage,
        }
    }
}

/// Read and validate an agent configuration; `policy_name`, when given, replaces
/// `policy.name` (the `--policy` flag).
pub fn load_agent(path: &Path, policy_name: Option<&str>) -> Result<AgentFile, ConfigError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|error| ConfigError::Io {
        file: file.clone(),
        error,
    })?;
    parse_agent(&text, &file, policy_name)
}

/// [`load_agent`] of `text`, named `file` in errors.
pub fn parse_agent(
    text: &str,
    file: &str,
    policy_name: Option<&str>,
) -> Result<AgentFile, ConfigError> {
    let source = Source {
        file: file.into(),
        original: text.to_string(),
        text: text.to_string(),
        overrides: Vec::new(),
    };
    let mut raw: RawAgentFile = deserialize(&source)?;
    let base = Path::new(".");
    Validator::new(file, base)
        .agent_file(&mut raw, policy_name)
        .map_err(|e| source.place(e))
}

impl Validator<'_> {
    fn agent_file(&self, raw: &mut RawAgentFile, policy_name: Option<&str>) -> R<AgentFile> {
        let a = raw.agent.take().unwrap_or_default();
        let mut p = raw.policy.take().unwrap_or_default();
        if let Some(n) = policy_name {
            p.name = Some(n.to_string());
        }
        let name = p.name.get_or_insert_with(|| "hawkeye".into()).clone();
        if !["linux", "ingens", "hawkeye"].contains(&name.as_str()) {
            return Err(self.bad(
                "policy.name",
                format!(
                    "a promoter the agent can run: linux (khugepaged's order), ingens or \
                     hawkeye, found \"{name}\""
                ),
            ));
        }
        // Bloat recovery is off for the agent unless the file asks (refused below).
        let h = p.hawkeye.get_or_insert_with(RawHawkeye::default);
        let b = h.bloat.get_or_insert_with(RawBloat::default);
        b.enabled.get_or_insert(false);
        let (promoter, _) = self.policy(&mut p)?;
        let d = AgentLimits::default();
        let limits = AgentLimits {
            max_collapses_per_s: self.float(
                "agent.max_collapses_per_s",
                a.max_collapses_per_s,
                d.max_collapses_per_s,
                0.001,
                100_000.0,
            )?,
            burst: self.int("agent.burst", a.burst, i64::from(d.burst), 1, 100_000)? as u32,
            cpu_budget: self.float("agent.cpu_budget", a.cpu_budget, d.cpu_budget, 0.001, 1.0)?,
        };
        let pids = a
            .pids
            .unwrap_or_default()
            .into_iter()
            .map(|p| {
                u32::try_from(p).ok().filter(|p| *p > 0).ok_or_else(|| {
                    self.bad("agent.pids", format!("process ids above 0, found {p}"))
                })
            })
            .collect::<R<Vec<u32>>>()?;
        let metrics = a
            .metrics
            .map(|m| {
                let addr: SocketAddr = m.parse().map_err(|_| {
                    self.bad(
                        "agent.metrics",
                        format!("an address:port such as 127.0.0.1:9187, found \"{m}\""),
                    )
                })?;
                if !addr.ip().is_loopback() {
                    return Err(self.bad(
                        "agent.metrics",
                        format!("a loopback address (127.0.0.1 or ::1), found \"{m}\""),
                    ));
                }
                Ok(addr)
            })
            .transpose()?;
        let cfg = AgentFile {
            pids,
            name: a.name,
            cgroup: a.cgroup.map(PathBuf::from),
            limits,
            rescan: Duration::from_millis(self.int(
                "agent.rescan_ms",
                a.rescan_ms,
                2000,
                100,
                3_600_000,
            )? as u64),
            metrics,
            dry_run: a.dry_run.unwrap_or(false),
            promoter,
            coverage: self.choice(
                "agent.coverage",
                a.coverage.as_deref(),
                "population",
                &[
                    ("population", Coverage::Population),
                    ("accessed-bits", Coverage::AccessedBits),
                ],
            )?,
        };
        AgentPolicy::check(&cfg.policy(LinuxConfig::default())).map_err(|e| {
            let key = match &e {
                hugemm_policy::AgentConfigError::Bloat => "policy.hawkeye.bloat.enabled",
                hugemm_policy::AgentConfigError::Limit { key, .. } => key,
                hugemm_policy::AgentConfigError::Promoter(_) => "policy.name",
            };
            self.bad(key, e.to_string())
        })?;
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_file_is_hawkeye_without_bloat_recovery_at_the_default_limits() {
        let a = parse_agent("", "agent.toml", None).unwrap();
        match &a.promoter {
            PolicyConfig::Hawkeye(h) => assert!(!h.bloat.enabled),
            other => panic!("{other:?}"),
        }
        assert_eq!(a.limits, AgentLimits::default());
        assert!(a.metrics.is_none() && !a.dry_run);
    }

    #[test]
    fn knobs_have_the_model_policy_tables_names() {
        let a = parse_agent(
            "[agent]\npids = [42]\nmax_collapses_per_s = 20\n[policy]\nname = \"linux\"\n\
             [policy.linux.khugepaged]\npages_to_scan = 8192\n",
            "agent.toml",
            None,
        )
        .unwrap();
        assert_eq!(a.pids, [42]);
        assert_eq!(a.limits.max_collapses_per_s, 20.0);
        match &a.promoter {
            PolicyConfig::Linux(l) => assert_eq!(l.khugepaged.pages_to_scan, 8192),
            other => panic!("{other:?}"),
        }
        let b = parse_agent("", "agent.toml", Some("ingens")).unwrap();
        assert!(matches!(b.promoter, PolicyConfig::Ingens(_)));
    }

    #[test]
    fn bad_values_name_their_key() {
        let err = |text: &str| {
            parse_agent(text, "agent.toml", None)
                .unwrap_err()
                .to_string()
        };
        assert!(err("[agent]\nmetrics = \"0.0.0.0:9187\"\n").contains("agent.metrics"));
        assert!(err("[agent]\ncpu_budget = 2.0\n").contains("agent.cpu_budget"));
        assert!(err("[agent]\npids = [-1]\n").contains("agent.pids"));
        assert!(err("[agent]\nbogus = 1\n").contains("bogus"));
        assert!(err("[policy]\nname = \"freebsd\"\n").contains("policy.name"));
        let e = err("[policy.hawkeye.bloat]\nenabled = true\n");
        assert!(e.contains("policy.hawkeye.bloat.enabled"), "{e}");
    }
}
