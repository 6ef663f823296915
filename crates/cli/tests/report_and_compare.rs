//! `hugemm report DIR` and `hugemm compare DIR...`: pages of runs' outputs, and bad input
//! (directories that are not run outputs) refused with exit code 2 and nothing written.

use std::path::Path;
use std::process::{Command, Output};

/// A small run that samples often: a 64 MiB buffer read at random.
const EXPERIMENT: &str = r#"[machine]
profile = "epyc-milan-kvm"
memory = "256MiB"
cores = 1

[sim]
seed = 1
sample_interval_ms = 1

[[process]]
name = "reader"

[[process.phase]]
op = "mmap"
buffer = "b"
size = "64MiB"

[[process.phase]]
op = "touch"
buffer = "b"

[[process.phase]]
op = "access"
buffer = "b"
pattern = "uniform"
refs = 300000
"#;

fn hugemm(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hugemm"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

fn ok(o: &Output) {
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Runs the experiment with THP `enabled` into `out`.
fn run(dir: &Path, out: &str, enabled: &str) {
    std::fs::write(dir.join("exp.toml"), EXPERIMENT).unwrap();
    ok(&hugemm(
        &[
            "run",
            "exp.toml",
            "--out",
            out,
            "--set",
            &format!("policy.linux.enabled={enabled}"),
        ],
        dir,
    ));
}

#[test]
fn a_report_of_a_run_tabulates_and_draws_its_processes_and_the_system() {
    let tmp = tempfile::tempdir().unwrap();
    run(tmp.path(), "never", "never");
    let o = hugemm(&["report", "never"], tmp.path());
    ok(&o);
    assert!(String::from_utf8_lossy(&o.stdout).contains("never/report.html"));
    let md = std::fs::read_to_string(tmp.path().join("never/report.md")).unwrap();
    for text in [
        "## Process reader",
        "| runtime (s) |",
        "## System",
        "## Over time",
    ] {
        assert!(md.contains(text), "{text} missing from {md}");
    }
    for figure in [
        "run-mmu-overhead",
        "run-huge-pages",
        "run-rss-bytes",
        "run-system-frames-free",
    ] {
        let svg = std::fs::read_to_string(tmp.path().join(format!("never/{figure}.svg")))
            .unwrap_or_else(|e| panic!("{figure}.svg: {e}"));
        assert!(svg.contains("<polyline"), "{figure} has a line");
        assert!(tmp.path().join(format!("never/{figure}.png")).exists());
        assert!(
            md.contains(&format!("({figure}.svg)")),
            "{figure} on the page"
        );
    }
    let html = std::fs::read_to_string(tmp.path().join("never/report.html")).unwrap();
    assert!(html.matches("<svg").count() >= 4, "figures inlined");
}

#[test]
fn compare_tabulates_runs_with_ratios_to_the_first_and_overlays_their_series() {
    let tmp = tempfile::tempdir().unwrap();
    run(tmp.path(), "never", "never");
    run(tmp.path(), "always", "always");
    let o = hugemm(&["compare", "never", "always", "--out", "cmp"], tmp.path());
    ok(&o);
    let md = std::fs::read_to_string(tmp.path().join("cmp/compare.md")).unwrap();
    assert!(md.contains("| quantity | never | always |"), "{md}");
    // Huge pages at the end: none without THP, some with; the ratio row is there.
    let huge = md
        .lines()
        .find(|l| l.starts_with("| huge pages at end |"))
        .unwrap();
    assert!(huge.starts_with("| huge pages at end | 0 | "), "{huge}");
    let runtime = md
        .lines()
        .find(|l| l.starts_with("| runtime (s) |"))
        .unwrap();
    assert!(runtime.contains("(x0."), "THP always is faster: {runtime}");
    let svg =
        std::fs::read_to_string(tmp.path().join("cmp/compare-reader-mmu-overhead.svg")).unwrap();
    // plotters writes a text's content on a line of its own.
    let texts: Vec<&str> = svg.lines().map(str::trim).collect();
    assert!(
        texts.contains(&"never") && texts.contains(&"always"),
        "both runs in the legend"
    );
    assert!(svg.matches("<polyline").count() >= 2, "a line per run");
}

#[test]
fn what_is_not_a_run_output_is_refused_with_exit_2_and_nothing_written() {
    let tmp = tempfile::tempdir().unwrap();
    run(tmp.path(), "good", "always");
    std::fs::create_dir(tmp.path().join("empty")).unwrap();
    std::fs::create_dir(tmp.path().join("badjson")).unwrap();
    std::fs::write(tmp.path().join("badjson/summary.json"), "{not json").unwrap();
    std::fs::create_dir(tmp.path().join("other")).unwrap();
    std::fs::write(tmp.path().join("other/summary.json"), "{\"x\": 1}").unwrap();
    for (bad, says) in [
        ("empty", "no readable summary.json"),
        ("missing", "not a directory"),
        ("badjson", "summary.json is not JSON"),
        ("other", "not a run's summary"),
    ] {
        let o = hugemm(&["compare", "good", bad, "--out", "cmp"], tmp.path());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{bad}: {err}");
        assert!(err.contains(bad) && err.contains(says), "{bad}: {err}");
        assert!(!tmp.path().join("cmp").exists(), "{bad}: nothing written");
        let o = hugemm(&["report", bad], tmp.path());
        assert_eq!(o.status.code(), Some(2), "report {bad}");
        assert!(!tmp.path().join(bad).join("report.html").exists());
    }
    // One directory is not a comparison.
    let o = hugemm(&["compare", "good", "--out", "cmp"], tmp.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(!tmp.path().join("cmp").exists());
}
