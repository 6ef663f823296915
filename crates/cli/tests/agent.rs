//! `hugemm agent` from the command line: bad input exits with code 2 and says what is
//! wrong, before anything is done; `--simulate` runs the agent's promoter beside the
//! file's Linux kernel in the model, and seeing accessed bits there (what a better access
//! source would give the live agent) finds a hot set population cannot.

use std::path::Path;
use std::process::{Command, Output};

fn hugemm(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hugemm"))
        .args(args)
        .output()
        .expect("starting hugemm")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn expect_bad(args: &[&str], expected: &[&str]) {
    let o = hugemm(args);
    let err = stderr(&o);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{args:?}: exit code; stderr: {err}"
    );
    for e in expected {
        assert!(err.contains(e), "{args:?}: stderr lacks `{e}`: {err}");
    }
}

#[test]
fn bad_agent_input_is_refused_with_code_2() {
    expect_bad(&["agent", "--once"], &["no targets"]);
    expect_bad(
        &["agent", "--name", "(", "--once"],
        &["not a regular expression"],
    );
    expect_bad(
        &["agent", "--pid", "1", "--metrics", "0.0.0.0:9187", "--once"],
        &["loopback"],
    );
    expect_bad(
        &["agent", "--pid", "1", "--policy", "freebsd", "--once"],
        &["policy.name", "linux", "hawkeye"],
    );
    expect_bad(
        &["agent", "--pid", "1", "--cpu-budget", "0", "--once"],
        &["agent.cpu_budget"],
    );
    expect_bad(
        &[
            "agent",
            "--pid",
            "1",
            "--coverage",
            "accessed-bits",
            "--once",
        ],
        &["population only"],
    );
    // A pid that no longer exists.
    let mut c = Command::new("true").spawn().unwrap();
    let gone = c.id().to_string();
    c.wait().unwrap();
    expect_bad(&["agent", "--pid", &gone, "--once"], &[&gone]);
}

#[test]
fn a_bad_configuration_file_names_the_file_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("agent.toml");
    std::fs::write(&file, "[agent]\nmax_collapses_per_s = \"fast\"\n").unwrap();
    let f = file.to_str().unwrap();
    expect_bad(
        &["agent", "--config", f, "--once"],
        &[f, "agent.max_collapses_per_s"],
    );
    std::fs::write(&file, "[policy.hawkeye.bloat]\nenabled = true\n").unwrap();
    expect_bad(
        &["agent", "--config", f, "--pid", "1", "--once"],
        &[f, "policy.hawkeye.bloat.enabled"],
    );
    expect_bad(
        &["agent", "--config", "/nonexistent/agent.toml", "--once"],
        &["/nonexistent/agent.toml", "cannot read"],
    );
}

/// A model program reading 512 MiB at random, every read in the bottom half, on a host
/// with THP `madvise`.
const SIM: &str = r#"
[machine]
profile = "epyc-milan-kvm"
memory = "2GiB"
cores = 2
[policy]
name = "linux"
[policy.linux]
enabled = "madvise"
[sim]
mode = "exact"
seed = 1
[[process]]
name = "hog"
[[process.phase]]
op = "mmap"
buffer = "heap"
size = "512MiB"
[[process.phase]]
op = "touch"
buffer = "heap"
[[process.phase]]
op = "access"
buffer = "heap"
pattern = "hot"
hot_fraction = 0.5
hot_share = 1.0
position = 0.0
refs = 30_000_000
dependent = true
"#;

/// The agent at 40 collapses a second, HawkEye sampling every 2 s.
const AGENT: &str = r#"
[agent]
max_collapses_per_s = 40
burst = 40
cpu_budget = 1.0
[policy.hawkeye]
sample_period_ms = 2000
sample_window_ms = 500
scan_sleep_millisecs = 1000
promotions_per_pass = 40
"#;

fn simulate(dir: &Path, coverage: &str) -> serde_json::Value {
    let out = dir.join(coverage);
    let o = hugemm(&[
        "agent",
        "--config",
        dir.join("agent.toml").to_str().unwrap(),
        "--simulate",
        dir.join("sim.toml").to_str().unwrap(),
        "--coverage",
        coverage,
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success(), "{coverage}: {}", stderr(&o));
    let agent: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("agent.json")).unwrap()).unwrap();
    assert_eq!(agent["coverage"], coverage);
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

#[test]
fn simulated_with_accessed_bits_the_agent_finds_a_hot_set_population_cannot() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("sim.toml"), SIM).unwrap();
    std::fs::write(dir.path().join("agent.toml"), AGENT).unwrap();
    let population = simulate(dir.path(), "population");
    let accessed = simulate(dir.path(), "accessed-bits");
    let hog = |s: &serde_json::Value| s["processes"][0].clone();
    let (p, a) = (hog(&population), hog(&accessed));
    // The host kernel alone (THP madvise, no advice) would promote nothing: every
    // promotion is the agent's, at its rate (40 a second: about 200 of the 256 regions
    // before the program ends, 7 s in).
    let promotions = |h: &serde_json::Value| h["promotions"].as_u64().unwrap();
    assert!((120..256).contains(&promotions(&p)), "{p}");
    assert!((120..256).contains(&promotions(&a)), "{a}");
    // Population ties every full region, and HawkEye's tie-break takes the highest
    // address first: the cold half. Accessed bits find the hot (bottom) half, so the
    // program's walks drop and it finishes sooner.
    let mmu = |h: &serde_json::Value| h["mmu_overhead"].as_f64().unwrap();
    let runtime = |h: &serde_json::Value| h["runtime_ns"].as_u64().unwrap();
    assert!(
        mmu(&a) < mmu(&p) - 0.04,
        "mmu: accessed {} population {}",
        mmu(&a),
        mmu(&p)
    );
    assert!(
        runtime(&a) < runtime(&p),
        "{} vs {}",
        runtime(&a),
        runtime(&p)
    );
}

#[test]
fn simulate_needs_a_linux_host_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sim.toml");
    std::fs::write(&file, SIM.replace("name = \"linux\"", "name = \"hawkeye\"")).unwrap();
    let f = file.to_str().unwrap();
    expect_bad(
        &["agent", "--simulate", f],
        &[f, "policy.name", "host kernel"],
    );
    std::fs::write(&file, SIM).unwrap();
    expect_bad(&["agent", "--simulate", f, "--once"], &["--simulate"]);
}
