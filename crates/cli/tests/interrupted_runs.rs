//! Runs that do not reach their end keep what they did: a run stopped by SIGINT, SIGTERM
//! or its time limit leaves a valid `summary.json` marked incomplete and the time series
//! up to where it stopped (written as the run went), and says so on stderr; a run too
//! short for one sample still ends its time series with a row.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// One process reading 64 MiB for `duration_ms` of simulated time, sampled every ms.
fn experiment(duration_ms: u64, extra_sim: &str) -> String {
    format!(
        r#"[machine]
profile = "epyc-milan-kvm"
memory = "256MiB"
cores = 1

[sim]
seed = 1
sample_interval_ms = 1
{extra_sim}

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
duration_ms = {duration_ms}
"#
    )
}

fn spawn(dir: &Path, text: &str) -> Child {
    std::fs::write(dir.join("exp.toml"), text).unwrap();
    Command::new(env!("CARGO_BIN_EXE_hugemm"))
        .current_dir(dir)
        .args(["run", "exp.toml", "--out", "out"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting hugemm")
}

fn summary(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("out/summary.json")).unwrap()).unwrap()
}

/// The time series' rows; each has every column, and the last is the state at the end
/// of the run.
fn rows(dir: &Path, summary: &serde_json::Value) -> Vec<csv::StringRecord> {
    let mut reader = csv::Reader::from_path(dir.join("out/timeseries.csv")).unwrap();
    let columns = reader.headers().unwrap().len();
    let rows: Vec<_> = reader.records().map(Result::unwrap).collect();
    assert!(rows.iter().all(|r| r.len() == columns));
    let last = rows.last().expect("at least one row");
    assert_eq!(&last[1], "system");
    assert_eq!(
        last[0].parse::<u64>().unwrap(),
        summary["system"]["sim_time_ns"].as_u64().unwrap(),
        "the last row is the state where the run ended"
    );
    rows
}

/// Data rows of the time series on disk now (0 while the file does not exist yet).
fn rows_on_disk(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("out/timeseries.csv"))
        .map(|t| t.lines().count().saturating_sub(1))
        .unwrap_or(0)
}

/// Start a run that would take hours, wait until its time series is on disk (so it is
/// running, its handlers installed, and rows are written as it goes), then send it
/// `signal`; return its output and the rows that were on disk before the signal.
fn stop_with(dir: &Path, signal: &str) -> (Output, usize) {
    let mut child = spawn(dir, &experiment(3_600_000, ""));
    let started = Instant::now();
    let before = loop {
        let n = rows_on_disk(dir);
        if n > 0 {
            break n;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("hugemm ended before it was stopped: {status}");
        }
        if started.elapsed() > Duration::from_secs(120) {
            child.kill().unwrap();
            panic!("no time-series row reached the disk in 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let sent = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    // Bounded wait: a run that ignores the signal fails the test instead of hanging it.
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("hugemm did not stop within 60 s of {signal}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    (child.wait_with_output().unwrap(), before)
}

fn check_stopped(signal: &str, code: i32, reason: &str, said: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (o, before) = stop_with(dir.path(), signal);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(code), "{err}");
    assert!(err.contains(said), "stderr does not say {said:?}: {err}");
    assert!(err.contains("partial results written to out"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let s = summary(dir.path());
    assert_eq!(s["complete"], false, "{s}");
    assert_eq!(s["stopped_by"], reason, "{s}");
    assert_eq!(s["processes"][0]["finished"], false, "{s}");
    assert!(s["processes"][0]["references"].as_u64().unwrap() > 0, "{s}");
    let rows = rows(dir.path(), &s);
    assert!(
        rows.len() >= before,
        "rows written before the signal are kept"
    );
    assert!(dir.path().join("out/config.resolved.toml").is_file());
}

#[test]
fn ctrl_c_leaves_an_incomplete_summary_and_the_time_series_and_exits_130() {
    check_stopped("-INT", 130, "interrupt", "interrupted (SIGINT)");
}

#[test]
fn sigterm_leaves_an_incomplete_summary_and_the_time_series_and_exits_143() {
    check_stopped("-TERM", 143, "terminate", "terminated (SIGTERM)");
}

#[test]
fn the_time_limit_ends_a_run_incomplete_with_its_time_series() {
    let dir = tempfile::tempdir().unwrap();
    let o = spawn(dir.path(), &experiment(10_000, "time_limit_s = 0.02"))
        .wait_with_output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("time limit"), "{err}");
    let s = summary(dir.path());
    assert_eq!(s["complete"], false, "{s}");
    assert_eq!(s["stopped_by"], "time_limit", "{s}");
    // The limit stops the clock within one core turn (at most 1 ms) of 20 ms.
    let end = s["system"]["sim_time_ns"].as_u64().unwrap();
    assert!((20_000_000..21_000_000).contains(&end), "{end}");
    let rows = rows(dir.path(), &s);
    // A sample every ms up to the limit, and the state at the end: the process still
    // runs, so it has a row there too.
    let reader: Vec<_> = rows.iter().filter(|r| &r[1] == "reader").collect();
    assert_eq!(reader.len(), 21, "{rows:?}");
    assert_eq!(reader[20][0].parse::<u64>().unwrap(), end);
}

#[test]
fn a_complete_run_says_so_and_a_run_shorter_than_a_sample_still_has_a_row() {
    let dir = tempfile::tempdir().unwrap();
    // Sampled every 10 s, over in well under one.
    let text = experiment(1, "").replace("sample_interval_ms = 1", "sample_interval_ms = 10000");
    let o = spawn(dir.path(), &text).wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.is_empty(), "nothing to say about a complete run: {err}");
    let s = summary(dir.path());
    assert_eq!(s["complete"], true, "{s}");
    assert_eq!(s["stopped_by"], serde_json::Value::Null, "{s}");
    assert!(s["system"]["sim_time_ns"].as_u64().unwrap() < 10_000_000_000);
    assert_eq!(rows(dir.path(), &s).len(), 1);
}
