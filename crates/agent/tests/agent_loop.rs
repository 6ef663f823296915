//! The agent's loop against real child processes: it collapses their memory in the
//! policy's order, logs and skips a child that exits mid-run, stops when every target is
//! gone, refuses an unknown pid before doing anything, and in a dry run changes nothing.
//!
//! The children are this test binary run again with `HUGEMM_AGENT_TEST_CHILD=MIB,SECONDS`:
//! the `child_body` test then maps and touches MIB of anonymous memory, says `ready`, and
//! sleeps. Collapsing another process needs `CAP_SYS_NICE`; without it the tests that
//! collapse say so and skip.

use hugemm_agent::metrics::Metrics;
use hugemm_agent::observe::smaps::Smaps;
use hugemm_agent::run::{Agent, Options, StartError, Stopped, Summary};
use hugemm_agent::targets::Selector;
use hugemm_agent::HostPid;
use hugemm_hw::Nanos;
use hugemm_policy::access::SamplerConfig;
use hugemm_policy::{
    AgentLimits, AgentPolicyConfig, Coverage, HawkeyeConfig, LinuxConfig, PolicyConfig,
};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

const CHILD: &str = "HUGEMM_AGENT_TEST_CHILD";

/// The child's body; does nothing in a normal test run.
#[test]
fn child_body() {
    let Ok(spec) = std::env::var(CHILD) else {
        return;
    };
    let (mib, secs) = spec.split_once(',').expect("MIB,SECONDS");
    let bytes = mib.parse::<usize>().unwrap() << 20;
    let mut map = memmap2::MmapOptions::new().len(bytes).map_anon().unwrap();
    for page in (0..bytes).step_by(4096) {
        map[page] = 1;
    }
    println!("ready");
    std::thread::sleep(Duration::from_secs_f64(secs.parse().unwrap()));
    drop(map);
    std::process::exit(0);
}

/// A child holding `mib` MiB of touched memory for `secs` seconds, once it is ready.
fn child(mib: u32, secs: f64) -> Child {
    let mut c = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_body", "--nocapture", "--test-threads=1"])
        .env(CHILD, format!("{mib},{secs}"))
        .stdout(Stdio::piped())
        .spawn()
        .expect("starting a child");
    let mut lines = BufReader::new(c.stdout.take().unwrap()).lines();
    assert!(
        lines.any(|l| l.is_ok_and(|l| l.contains("ready"))),
        "the child never got ready"
    );
    c
}

/// HawkEye at test speed: sample every 400 ms, promote 64 regions every 100 ms.
fn agent_config() -> AgentPolicyConfig {
    let mut h = HawkeyeConfig {
        sampling: SamplerConfig {
            period: Nanos::from_millis(400),
            window: Nanos::from_millis(100),
        },
        scan_sleep: Nanos::from_millis(100),
        promotions_per_pass: 64,
        ..HawkeyeConfig::default()
    };
    h.bloat.enabled = false;
    AgentPolicyConfig {
        kernel: LinuxConfig::default(),
        promoter: PolicyConfig::Hawkeye(h),
        limits: AgentLimits {
            max_collapses_per_s: 2000.0,
            burst: 100,
            cpu_budget: 1.0,
        },
        coverage: Coverage::Population,
    }
}

/// The agent's summary, or `None` (saying why) where this process may not collapse
/// another's memory.
fn run(pids: &[u32], opts: Options) -> Option<Summary> {
    let selector = Selector::new(pids.iter().map(|p| HostPid(*p)).collect(), None, None).unwrap();
    match Agent::start(&agent_config(), selector, opts, Metrics::new()) {
        Ok(mut agent) => Some(agent.run(&AtomicBool::new(false)).unwrap()),
        Err(StartError::NoCapability) => {
            println!("skipped: this test process lacks CAP_SYS_NICE");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

fn anon_huge_bytes(pid: u32) -> u64 {
    Smaps::read(HostPid(pid))
        .unwrap()
        .vmas
        .iter()
        .map(|v| v.anon_huge_pages.0)
        .sum()
}

#[test]
fn the_agent_collapses_live_children_and_survives_one_exiting() {
    let mut short = child(32, 1.0);
    let mut long = child(32, 4.0);
    let summary = run(
        &[short.id(), long.id()],
        Options {
            rescan: Duration::from_millis(200),
            duration: Some(Duration::from_secs(20)),
            ..Options::default()
        },
    );
    let Some(summary) = summary else {
        for mut c in [short, long] {
            c.kill().unwrap();
            c.wait().unwrap();
        }
        return;
    };
    short.wait().unwrap();
    long.wait().unwrap();
    let by_pid = |pid: u32| summary.targets.iter().find(|t| t.pid == pid).unwrap();
    assert_eq!(summary.access_source, "population");
    // Both exited while tracked, and the agent stopped because of it, long before the
    // 20 s limit.
    assert_eq!(summary.stopped, Stopped::TargetsExited, "{summary:?}");
    assert!(summary.wall_s < 10.0, "{summary:?}");
    assert!(by_pid(short.id()).exited && by_pid(long.id()).exited);
    // The long-lived child's 32 MiB hold 15-16 whole regions; every one was collapsed
    // (none was huge before: THP is in madvise mode on these machines, and the child
    // does not advise).
    let long_report = by_pid(long.id());
    assert!(
        (15..=16).contains(&long_report.collapsed),
        "{long_report:?}"
    );
    assert!(summary.collapsed >= long_report.collapsed);
}

#[test]
fn a_dry_run_decides_but_changes_nothing() {
    let mut c = child(16, 6.0);
    let before = anon_huge_bytes(c.id());
    let summary = run(
        &[c.id()],
        Options {
            dry_run: true,
            once: true,
            rescan: Duration::from_millis(200),
            ..Options::default()
        },
    );
    let after = anon_huge_bytes(c.id());
    c.kill().unwrap();
    c.wait().unwrap();
    // A dry run needs no capability.
    let summary = summary.expect("a dry run starts without CAP_SYS_NICE");
    assert_eq!(summary.stopped, Stopped::Once);
    assert!(summary.dry_run);
    assert!(summary.collapsed >= 7, "{summary:?}");
    assert_eq!(before, after, "a dry run collapsed something");
}

#[test]
fn an_unknown_pid_is_refused_before_anything_is_done() {
    let mut c = Command::new("true").spawn().unwrap();
    let gone = c.id();
    c.wait().unwrap();
    let selector = Selector::new(vec![HostPid(gone)], None, None).unwrap();
    let err = Agent::start(
        &agent_config(),
        selector,
        Options::default(),
        Metrics::new(),
    )
    .err()
    .expect("a pid that exited");
    assert!(matches!(err, StartError::Target(_)), "{err}");
    assert!(err.to_string().contains(&gone.to_string()), "{err}");
}
