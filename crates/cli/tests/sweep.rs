//! `hugemm sweep` on the real binary: a grid becomes one directory per point and one
//! results table (CSV and Parquet, read back here), the same whatever the threads; a
//! rerun runs only what is missing, including after SIGKILL, SIGINT or SIGTERM; bad
//! input exits 2 and writes nothing; `--emit-tasks` writes tasks whose results gather
//! into the same table as a direct sweep.

mod common;

use arrow_array::{Array, Float64Array, Int64Array, RecordBatch, StringArray, UInt64Array};
use arrow_schema::DataType;
use common::BASE;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant, SystemTime};

/// Two policies by two seeds.
const TWO_BY_TWO: &str = "\"policy.name\" = [\"linux\", \"hawkeye\"]\n\"sim.seed\" = [1, 2]\n";

/// `BASE` with enough references that a point takes a few tenths of a second.
fn slow_base() -> String {
    let slow = BASE
        .replace("refs = 1000", "refs = 3_000_000")
        .replace("size = \"4MiB\"", "size = \"32MiB\"");
    assert_ne!(slow, BASE);
    slow
}

/// Writes `dir/sweep.toml`: `base`, then a `[sweep]` table holding `sweep`.
fn sweep_file(dir: &Path, base: &str, sweep: &str) {
    std::fs::write(dir.join("sweep.toml"), format!("{base}\n[sweep]\n{sweep}")).unwrap();
}

fn command(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hugemm"));
    c.current_dir(dir).args(args);
    c
}

/// `hugemm ARGS` in `dir`.
fn hugemm(dir: &Path, args: &[&str]) -> Output {
    command(dir, args).output().expect("starting hugemm")
}

/// `hugemm sweep sweep.toml --out OUT ARGS` in `dir`, which must succeed; its stderr.
fn sweep_ok(dir: &Path, out: &str, args: &[&str]) -> String {
    let mut all = vec!["sweep", "sweep.toml", "--out", out];
    all.extend(args);
    let o = hugemm(dir, &all);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    err
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The finished points' directories under `out/points` (not the temporary ones).
fn finished(out: &Path) -> Vec<PathBuf> {
    entries(&out.join("points"), |n| !n.starts_with('.'))
}

/// The temporary directories under `out/points`.
fn temporary(out: &Path) -> Vec<PathBuf> {
    entries(&out.join("points"), |n| n.starts_with(".tmp-"))
}

fn entries(dir: &Path, keep: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = read
        .map(|e| e.unwrap())
        .filter(|e| keep(&e.file_name().to_string_lossy()))
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

/// Asserts that point directory `p` holds everything a finished point does.
fn assert_whole(p: &Path) {
    for f in [
        "config.resolved.toml",
        "summary.json",
        "timeseries.csv",
        "point.json",
    ] {
        assert!(p.join(f).is_file(), "{} has no {f}", p.display());
    }
}

/// `results.csv` and `results.parquet` of `out`.
fn tables(out: &Path) -> (String, Vec<u8>) {
    (
        std::fs::read_to_string(out.join("results.csv")).unwrap(),
        std::fs::read(out.join("results.parquet")).unwrap(),
    )
}

/// `results.parquet` of `out`, read back with the parquet crate.
fn parquet(out: &Path) -> RecordBatch {
    let file = std::fs::File::open(out.join("results.parquet")).unwrap();
    let reader =
        parquet::arrow::arrow_reader::ParquetRecordBatchReader::try_new(file, 1024).unwrap();
    let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
    assert_eq!(batches.len(), 1);
    batches.into_iter().next().unwrap()
}

fn column<'a, T: 'static>(batch: &'a RecordBatch, name: &str) -> &'a T {
    batch
        .column_by_name(name)
        .unwrap_or_else(|| panic!("no column {name}"))
        .as_any()
        .downcast_ref::<T>()
        .unwrap_or_else(|| panic!("column {name} has another type"))
}

#[test]
fn a_two_by_two_grid_writes_four_points_and_one_table_in_csv_and_parquet() {
    let dir = tempfile::tempdir().unwrap();
    sweep_file(dir.path(), BASE, TWO_BY_TWO);
    let err = sweep_ok(dir.path(), "out", &[]);
    assert!(
        err.contains("4 points, 0 already done (skipped), 4 to run"),
        "{err}"
    );
    let out = dir.path().join("out");
    let points = finished(&out);
    assert_eq!(points.len(), 4, "{points:?}");
    for p in &points {
        assert_whole(p);
    }
    // Each point ran with its own values: the summaries say which policy and seed.
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(points[2].join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["system"]["policy"], "hawkeye");
    assert_eq!(summary["system"]["seed"], 1);

    let (csv, _) = tables(&out);
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(
        header[..6],
        [
            "point",
            "id",
            "policy.name",
            "sim.seed",
            "complete",
            "p.runtime_s"
        ]
    );
    for c in [
        "p.mmu_overhead",
        "p.huge_pages_end",
        "p.faults_2m",
        "system.collapses",
    ] {
        assert!(header.iter().any(|h| h == c), "no column {c}: {header:?}");
    }
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let grid: Vec<(&str, &str)> = rows.iter().map(|r| (&r[2], &r[3])).collect();
    assert_eq!(
        grid,
        [
            ("linux", "1"),
            ("linux", "2"),
            ("hawkeye", "1"),
            ("hawkeye", "2")
        ]
    );
    assert_eq!(
        &rows[2][1],
        points[2].file_name().unwrap().to_str().unwrap()
    );

    let batch = parquet(&out);
    assert_eq!(batch.num_rows(), 4);
    let names: Vec<&str> = batch
        .schema_ref()
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    assert_eq!(names, header, "the Parquet file has the CSV's columns");
    let policy = column::<StringArray>(&batch, "policy.name");
    let seed = column::<Int64Array>(&batch, "sim.seed");
    let runtime = column::<Float64Array>(&batch, "p.runtime_s");
    let huge = column::<UInt64Array>(&batch, "p.huge_pages_end");
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(policy.value(i), &row[2]);
        assert_eq!(seed.value(i).to_string(), &row[3]);
        assert_eq!(runtime.value(i).to_string(), &row[5]);
        assert!(runtime.value(i) > 0.0);
        assert_eq!(
            huge.value(i).to_string(),
            row[header.iter().position(|h| h == "p.huge_pages_end").unwrap()]
        );
    }
    assert_eq!(
        batch
            .schema_ref()
            .field_with_name("complete")
            .unwrap()
            .data_type(),
        &DataType::Boolean
    );
    for f in ["plot.svg", "plot.png"] {
        assert!(out.join(f).is_file(), "no {f}");
    }
}

#[test]
fn the_results_are_the_same_on_one_thread_or_two() {
    let dir = tempfile::tempdir().unwrap();
    sweep_file(
        dir.path(),
        BASE,
        "\"sim.seed\" = [1, 2, 3, 4]\n\"machine.memory\" = [\"64MiB\", \"128MiB\"]\n",
    );
    sweep_ok(dir.path(), "one", &["--jobs", "1"]);
    sweep_ok(dir.path(), "two", &["--jobs", "2"]);
    let (one, two) = (dir.path().join("one"), dir.path().join("two"));
    assert_eq!(tables(&one), tables(&two));
    let svg = |d: &Path| std::fs::read_to_string(d.join("plot.svg")).unwrap();
    assert_eq!(svg(&one), svg(&two));
    // The seeds made different runs, so the equality says something.
    let runtimes = column::<Float64Array>(&parquet(&one), "p.runtime_s").clone();
    assert!(
        runtimes
            .iter()
            .any(|r| r != runtimes.iter().next().unwrap()),
        "{runtimes:?}"
    );
}

#[test]
fn a_rerun_runs_only_the_missing_points() {
    let dir = tempfile::tempdir().unwrap();
    sweep_file(dir.path(), BASE, TWO_BY_TWO);
    sweep_ok(dir.path(), "out", &[]);
    let out = dir.path().join("out");
    let before = tables(&out);
    let mtime = |p: &Path| -> SystemTime {
        std::fs::metadata(p.join("summary.json"))
            .unwrap()
            .modified()
            .unwrap()
    };
    let points = finished(&out);
    let times: Vec<SystemTime> = points.iter().map(|p| mtime(p)).collect();
    std::fs::remove_dir_all(&points[1]).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    let err = sweep_ok(dir.path(), "out", &[]);
    assert!(
        err.contains("4 points, 3 already done (skipped), 1 to run"),
        "{err}"
    );
    assert!(
        err.contains("point 1 (policy.name=linux, sim.seed=2) done"),
        "{err}"
    );
    assert_eq!(finished(&out), points);
    for (i, p) in points.iter().enumerate() {
        assert_eq!(
            mtime(p) == times[i],
            i != 1,
            "point {i} was (not) run again"
        );
    }
    assert_eq!(tables(&out), before);
}

#[test]
fn a_grown_grid_keeps_the_points_it_already_has() {
    let dir = tempfile::tempdir().unwrap();
    sweep_file(dir.path(), BASE, "\"sim.seed\" = [1, 2]\n");
    sweep_ok(dir.path(), "out", &[]);
    // Seeds 1 and 2 move from indices 0, 1 to 1, 2: found by their configuration.
    sweep_file(dir.path(), BASE, "\"sim.seed\" = [7, 1, 2]\n");
    let err = sweep_ok(dir.path(), "out", &[]);
    assert!(
        err.contains("3 points, 2 already done (skipped), 1 to run"),
        "{err}"
    );
    let names: Vec<String> = finished(&dir.path().join("out"))
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy()[..4].to_string())
        .collect();
    assert_eq!(names, ["000-", "001-", "002-"]);
    // A changed experiment is a new grid: nothing is reused, the old points stay apart.
    let changed = BASE.replace("refs = 1000", "refs = 2000");
    sweep_file(dir.path(), &changed, "\"sim.seed\" = [7, 1, 2]\n");
    let err = sweep_ok(dir.path(), "out", &[]);
    assert!(
        err.contains("3 points, 0 already done (skipped), 3 to run"),
        "{err}"
    );
    assert!(
        err.contains("holds 3 finished point(s) of another grid"),
        "{err}"
    );
    let csv = tables(&dir.path().join("out")).0;
    assert_eq!(csv.lines().count(), 4, "{csv}");
}

#[test]
fn points_made_by_another_hugemm_are_used_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    sweep_file(dir.path(), BASE, TWO_BY_TWO);
    sweep_ok(dir.path(), "out", &[]);
    let out = dir.path().join("out");
    let before = tables(&out);
    let summary = finished(&out)[3].join("summary.json");
    let mut s: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
    s["provenance"]["git_commit"] = "0123456789abcdef".into();
    std::fs::write(&summary, serde_json::to_string_pretty(&s).unwrap()).unwrap();
    let err = sweep_ok(dir.path(), "out", &[]);
    assert!(err.contains("4 already done (skipped), 0 to run"), "{err}");
    assert!(
        err.contains("note: point(s) 3 were run by another hugemm"),
        "{err}"
    );
    assert_eq!(tables(&out), before);
}

/// Starts a sweep of `points` slow points on two threads in `dir`, and waits until at
/// least one point is finished and another is in flight.
fn start_slow_sweep(dir: &Path, points: usize) -> Child {
    let seeds: Vec<String> = (1..=points).map(|s| s.to_string()).collect();
    sweep_file(
        dir,
        &slow_base(),
        &format!("\"sim.seed\" = [{}]\n", seeds.join(", ")),
    );
    let mut child = command(dir, &["sweep", "sweep.toml", "--out", "out", "--jobs", "2"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting hugemm");
    let out = dir.join("out");
    let started = Instant::now();
    while finished(&out).is_empty() || temporary(&out).is_empty() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the sweep ended before it was stopped: {status}");
        }
        if started.elapsed() > Duration::from_secs(120) {
            child.kill().unwrap();
            panic!("no point finished in 120 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child
}

/// Waits (at most a minute) for `child` to end.
fn wait(mut child: Child) -> Output {
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("hugemm did not stop within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn a_killed_sweep_resumes_to_the_table_of_an_uninterrupted_one() {
    const POINTS: usize = 6;
    let dir = tempfile::tempdir().unwrap();
    let mut child = start_slow_sweep(dir.path(), POINTS);
    child.kill().unwrap(); // SIGKILL
    wait(child);
    let out = dir.path().join("out");
    let done = finished(&out);
    assert!(done.len() < POINTS, "killed before the end");
    assert!(!out.join("results.csv").exists());
    for p in &done {
        // A point is there whole, or not at all.
        assert_whole(p);
    }
    let left = temporary(&out).len();
    assert!(left > 0, "the point in flight left its temporary directory");

    let err = sweep_ok(dir.path(), "out", &["--jobs", "2"]);
    assert!(
        err.contains(&format!("removed {left} unfinished point(s)")),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "{POINTS} points, {} already done (skipped)",
            done.len()
        )),
        "{err}"
    );
    assert!(temporary(&out).is_empty());
    assert_eq!(finished(&out).len(), POINTS);

    let fresh = tempfile::tempdir().unwrap();
    let seeds: Vec<String> = (1..=POINTS).map(|s| s.to_string()).collect();
    sweep_file(
        fresh.path(),
        &slow_base(),
        &format!("\"sim.seed\" = [{}]\n", seeds.join(", ")),
    );
    sweep_ok(fresh.path(), "out", &["--jobs", "2"]);
    assert_eq!(tables(&out), tables(&fresh.path().join("out")));
}

#[test]
fn sigint_and_sigterm_stop_a_sweep_keeping_its_finished_points() {
    for (signal, code, said) in [
        ("-INT", 130, "interrupted (SIGINT)"),
        ("-TERM", 143, "terminated (SIGTERM)"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let child = start_slow_sweep(dir.path(), 8);
        let sent = Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let o = wait(child);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(code), "{err}");
        let out = dir.path().join("out");
        let done = finished(&out).len();
        assert!(
            err.contains(&format!("sweep {said}: {done} of 8 points done")),
            "{err}"
        );
        assert!(
            err.contains("run the same command again to resume"),
            "{err}"
        );
        assert!(
            temporary(&out).is_empty(),
            "points in flight are abandoned whole"
        );
        assert!(!out.join("results.csv").exists());
    }
}

/// Runs `hugemm sweep` on BASE with `sweep` as its grid and `args`; asserts exit code 2,
/// that stderr says each of `said`, and that no output directory was made.
fn expect_bad(sweep: Option<&str>, args: &[&str], said: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    match sweep {
        Some(s) => sweep_file(dir.path(), BASE, s),
        None => std::fs::write(dir.path().join("sweep.toml"), BASE).unwrap(),
    }
    let mut all = vec!["sweep", "sweep.toml", "--out", "out"];
    all.extend(args);
    let o = hugemm(dir.path(), &all);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?} {sweep:?}: {err}");
    for s in said {
        assert!(err.contains(s), "stderr does not say {s:?}: {err}");
    }
    assert!(!dir.path().join("out").exists(), "{err}");
}

#[test]
fn bad_input_exits_2_naming_the_problem_and_writes_nothing() {
    // The first line of the grid, after BASE, a blank line and `[sweep]`.
    let line = BASE.lines().count() + 3;
    let at = |col: usize| format!("sweep.toml:{line}:{col}: ");
    expect_bad(
        None,
        &[],
        &["sweep.toml: key `sweep`: expected a [sweep] table"],
    );
    expect_bad(Some(""), &[], &["found an empty [sweep] table"]);
    expect_bad(
        Some("\"sim.seed\" = []"),
        &[],
        &[&at(1), "key `sweep.\"sim.seed\"`", "found an empty array"],
    );
    expect_bad(
        Some("\"sim.seed\" = 3"),
        &[],
        &["an array of the values to sweep", "found integer"],
    );
    expect_bad(
        Some("\"policy.nmae\" = [\"linux\"]"),
        &[],
        &[
            &at(18),
            "key `policy.nmae`: unknown field",
            "did you mean `name`?",
        ],
    );
    expect_bad(
        Some("\"policy.name\" = [\"linux\", \"hawkey\"]"),
        &[],
        &[
            "sweep point 1 of 2 (policy.name=hawkey)",
            &at(27),
            "did you mean \"hawkeye\"?",
        ],
    );
    expect_bad(
        Some("\"machine.memory\" = [\"64MiB\", \"3MiB\"]"),
        &[],
        &[
            &at(30),
            "key `machine.memory`: expected a multiple of 4 MiB",
        ],
    );
    expect_bad(
        Some("\"sim.seed\" = [1]\nplot = { y = \"p.runtme_s\" }"),
        &[],
        &["key `sweep.plot.y`", "did you mean \"p.runtime_s\"?"],
    );
    expect_bad(
        Some("\"sim.seed\" = [1]"),
        &["--plot-x", "sim.sed"],
        &[
            "(--plot-x sim.sed): key `sweep.plot.x`",
            "did you mean \"sim.seed\"?",
        ],
    );
    expect_bad(Some("\"sim.seed\" = [1]"), &["--jobs", "0"], &["--jobs"]);
    expect_bad(
        Some("\"sim.seed\" = [1]"),
        &["--set", "sim.seed=4"],
        &["(--set sim.seed=4)", "[sweep] sweeps `sim.seed`"],
    );
}

#[test]
fn bad_input_leaves_an_existing_sweep_untouched() {
    let dir = tempfile::tempdir().unwrap();
    sweep_file(dir.path(), BASE, TWO_BY_TWO);
    sweep_ok(dir.path(), "out", &[]);
    let out = dir.path().join("out");
    let snapshot = || -> Vec<(PathBuf, SystemTime, u64)> {
        let mut files = Vec::new();
        let mut stack = vec![out.clone()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap().map(Result::unwrap) {
                let m = e.metadata().unwrap();
                if m.is_dir() {
                    stack.push(e.path());
                }
                files.push((e.path(), m.modified().unwrap(), m.len()));
            }
        }
        files.sort();
        files
    };
    let before = snapshot();
    sweep_file(
        dir.path(),
        BASE,
        "\"policy.name\" = [\"linux\", \"hawkey\"]\n",
    );
    let o = hugemm(dir.path(), &["sweep", "sweep.toml", "--out", "out"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(snapshot(), before);
}

#[test]
fn emitted_tasks_run_anywhere_and_gather_into_the_same_table() {
    let dir = tempfile::tempdir().unwrap();
    sweep_file(dir.path(), BASE, TWO_BY_TWO);
    let o = hugemm(
        dir.path(),
        &[
            "sweep",
            "sweep.toml",
            "--out",
            "out",
            "--emit-tasks",
            "tasks",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!dir.path().join("out").exists(), "emitting runs nothing");
    let tasks = dir.path().join("tasks");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(tasks.join("tasks.json")).unwrap()).unwrap();
    let list = manifest["tasks"].as_array().unwrap();
    assert_eq!(list.len(), 4);
    let sbatch = std::fs::read_to_string(tasks.join("sweep.sbatch")).unwrap();
    assert!(sbatch.contains("#SBATCH --array=0-3"), "{sbatch}");
    assert!(
        sbatch.contains("run-task.sh \"$SLURM_ARRAY_TASK_ID\""),
        "{sbatch}"
    );

    // Each task file is an experiment `hugemm run` accepts, from anywhere.
    let elsewhere = tempfile::tempdir().unwrap();
    for (i, t) in list.iter().enumerate() {
        let file = tasks.join(t["file"].as_str().unwrap());
        let run = format!("run{i}");
        let o = hugemm(
            elsewhere.path(),
            &["run", file.to_str().unwrap(), "--out", &run],
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    // run-task.sh for every point, then the sweep only gathers.
    for t in list {
        let n = t["index"].to_string();
        let o = Command::new(tasks.join("run-task.sh"))
            .arg(&n)
            .output()
            .unwrap();
        assert!(o.status.success(), "task {n}: {}", stderr(&o));
    }
    let err = sweep_ok(dir.path(), "out", &[]);
    assert!(
        err.contains("4 points, 4 already done (skipped), 0 to run"),
        "{err}"
    );
    sweep_ok(dir.path(), "direct", &[]);
    assert_eq!(
        tables(&dir.path().join("out")),
        tables(&dir.path().join("direct"))
    );

    // Emitting into a directory with something in it is refused, and leaves it alone.
    let o = hugemm(
        dir.path(),
        &["sweep", "sweep.toml", "--emit-tasks", "tasks"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("tasks: exists and is not an empty directory"));
    assert!(tasks.join("tasks.json").is_file());
}

#[test]
fn the_example_sweep_validates_every_point() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sweeps/thp-by-footprint.toml");
    let plot = hugemm_cli::sweep::grid::PlotSpec::default();
    let sweep =
        hugemm_cli::sweep::Sweep::load(&path, &[], &plot).unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(sweep.points.len(), 8);
    assert_eq!(
        sweep.grid.parameters[sweep.plot_x].key,
        "process[0].phase[0].size"
    );
    assert_eq!(sweep.plot_y, "gups.runtime_s");
    assert_eq!(
        sweep.describe(7),
        "policy.linux.enabled=always, process[0].phase[0].size=1GiB"
    );
}
