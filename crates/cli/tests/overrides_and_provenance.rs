//! `--set` overrides, provenance and the resolved configuration, through the real binary:
//! an override is validated like the file and recorded in the resolved configuration;
//! every output says which hugemm made it, from which commit, with which command line and
//! when; the resolved configuration carries its machine profile, so it re-runs anywhere;
//! renamed knobs still load under their old names with a one-line note.

mod common;

use common::BASE;
use std::path::Path;
use std::process::{Command, Output};

fn hugemm(args: &[&std::ffi::OsStr], dir: &Path, env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hugemm"));
    c.args(args).current_dir(dir);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("starting hugemm")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn ok(o: &Output) {
    assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

/// `hugemm run FILE --out OUT ARGS...` in `dir`.
fn run(dir: &Path, file: &str, out: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut all: Vec<&std::ffi::OsStr> = vec!["run".as_ref(), file.as_ref(), "--out".as_ref()];
    all.push(out.as_ref());
    all.extend(args.iter().map(std::ffi::OsStr::new));
    hugemm(&all, dir, env)
}

#[test]
fn an_override_changes_the_run_and_is_recorded_in_the_resolved_configuration() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("exp.toml"), BASE).unwrap();
    ok(&run(dir.path(), "exp.toml", "plain", &[], &[]));
    ok(&run(
        dir.path(),
        "exp.toml",
        "set",
        &[
            "--set",
            "process[0].phase[2].refs=5000",
            "--set",
            "policy.name=hawkeye",
        ],
        &[],
    ));
    let plain = json(&dir.path().join("plain/summary.json"));
    let set = json(&dir.path().join("set/summary.json"));
    let refs = |s: &serde_json::Value| s["processes"][0]["references"].as_u64().unwrap();
    assert!(refs(&plain) < 5000, "{plain}");
    assert!(
        refs(&set) >= 5000,
        "the override did not reach the run: {set}"
    );
    assert_eq!(set["system"]["policy"], "hawkeye", "{set}");

    // The resolved configuration holds the overridden values, so running it runs the
    // overridden experiment (same seed, same time series).
    let resolved = read(&dir.path().join("set/config.resolved.toml"));
    assert!(resolved.contains("name = \"hawkeye\""), "{resolved}");
    assert!(resolved.contains("refs = 5000"), "{resolved}");
    assert!(
        resolved.contains("--set 'process[0].phase[2].refs=5000'"),
        "the command line in the provenance comments keeps the override: {resolved}"
    );
    ok(&run(
        dir.path(),
        "set/config.resolved.toml",
        "again",
        &[],
        &[],
    ));
    assert_eq!(
        read(&dir.path().join("set/timeseries.csv")),
        read(&dir.path().join("again/timeseries.csv"))
    );
}

#[test]
fn a_bad_override_is_refused_like_the_file_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("exp.toml"), BASE).unwrap();
    for (set, expected) in [
        (
            "policy.linux.enabled=alwayz",
            &[
                "exp.toml (--set policy.linux.enabled=alwayz)",
                "did you mean \"always\"",
            ][..],
        ),
        (
            "machine.memory=63MiB",
            &[
                "exp.toml (--set machine.memory=63MiB)",
                "key `machine.memory`",
            ][..],
        ),
        (
            "sim.sead=2",
            &["unknown field `sead`", "did you mean `seed`"][..],
        ),
        ("policy.name", &["--set", "KEY=VALUE"][..]),
        (
            "process[7].count=2",
            &["process[7]", "only one `[[process]]` table"][..],
        ),
    ] {
        let o = run(dir.path(), "exp.toml", "out", &["--set", set], &[]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "--set {set}: {err}");
        for e in expected {
            assert!(
                err.contains(e),
                "--set {set}: stderr does not say {e:?}: {err}"
            );
        }
        assert!(!err.contains("panicked"), "{err}");
        assert!(
            !dir.path().join("out").exists(),
            "--set {set} wrote results"
        );
    }
}

#[test]
fn every_output_carries_its_provenance_and_a_fixed_date_makes_outputs_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("exp.toml"), BASE).unwrap();
    let env = [("SOURCE_DATE_EPOCH", "1764000000")];
    ok(&run(dir.path(), "exp.toml", "a", &[], &env));
    ok(&run(dir.path(), "exp.toml", "b", &[], &env));
    let summary = json(&dir.path().join("a/summary.json"));
    let p = &summary["provenance"];
    assert_eq!(p["hugemm_version"], env!("CARGO_PKG_VERSION"), "{p}");
    assert_eq!(p["date"], "2025-11-24T16:00:00Z", "{p}");
    let command = p["command_line"].as_str().unwrap();
    assert!(command.ends_with("run exp.toml --out a"), "{command}");
    // Built from this repository's checkout, the commit is known and is 40 hex digits.
    let commit = p["git_commit"]
        .as_str()
        .expect("the commit is known in a checkout");
    assert!(
        commit.len() == 40 && commit.chars().all(|c| c.is_ascii_hexdigit()),
        "{commit}"
    );
    let resolved = read(&dir.path().join("a/config.resolved.toml"));
    for line in [
        format!("# hugemm {} (commit {commit})", env!("CARGO_PKG_VERSION")),
        "# date: 2025-11-24T16:00:00Z".to_string(),
    ] {
        assert!(resolved.contains(&line), "no {line:?} in {resolved}");
    }
    // Same command, same seed, same date: the same bytes, apart from the output directory
    // named in the command line.
    for f in ["summary.json", "config.resolved.toml", "timeseries.csv"] {
        assert_eq!(
            read(&dir.path().join("a").join(f)).replace("--out a", "--out X"),
            read(&dir.path().join("b").join(f)).replace("--out b", "--out X"),
            "{f}"
        );
    }
}

#[test]
fn a_bad_source_date_epoch_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("exp.toml"), BASE).unwrap();
    let o = run(
        dir.path(),
        "exp.toml",
        "out",
        &[],
        &[("SOURCE_DATE_EPOCH", "yesterday")],
    );
    let err = stderr(&o);
    assert_ne!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("SOURCE_DATE_EPOCH"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_relative_profile_path_is_embedded_so_the_resolved_file_runs_from_anywhere() {
    let dir = tempfile::tempdir().unwrap();
    let exp = dir.path().join("exp");
    std::fs::create_dir_all(exp.join("profiles")).unwrap();
    // A profile of one's own, beside the experiment, named by a relative path.
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../profiles/epyc-milan-kvm.toml");
    let mine: String = read(&shipped)
        .lines()
        .map(|l| {
            if l.starts_with("dram_latency_ns") {
                "dram_latency_ns = 123.0\n".to_string()
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    assert!(mine.contains("dram_latency_ns = 123.0"));
    std::fs::write(exp.join("profiles/mine.toml"), &mine).unwrap();
    std::fs::write(
        exp.join("exp.toml"),
        BASE.replace("\"epyc-milan-kvm\"", "\"profiles/mine.toml\""),
    )
    .unwrap();
    ok(&run(&exp, "exp.toml", "out", &[], &[]));
    let resolved = read(&exp.join("out/config.resolved.toml"));
    assert!(resolved.contains("[machine.profile]"), "{resolved}");
    assert!(!resolved.contains("mine.toml"), "{resolved}");
    assert!(resolved.contains("dram_latency_ns = 123.0"), "{resolved}");

    // Copied somewhere else, away from profiles/, the resolved file runs the same run.
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::copy(
        exp.join("out/config.resolved.toml"),
        elsewhere.join("again.toml"),
    )
    .unwrap();
    ok(&run(&elsewhere, "again.toml", "out", &[], &[]));
    assert_eq!(
        read(&exp.join("out/timeseries.csv")),
        read(&elsewhere.join("out/timeseries.csv"))
    );
    let strip = |v: serde_json::Value| {
        let mut v = v;
        v.as_object_mut().unwrap().remove("provenance");
        v
    };
    assert_eq!(
        strip(json(&exp.join("out/summary.json"))),
        strip(json(&elsewhere.join("out/summary.json")))
    );
}

#[test]
fn a_renamed_knob_still_loads_under_its_old_name_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let text = BASE.replace(
        "[sim]",
        "[policy.linux.khugepaged]\nscan_sleep_ms = 5000\n\n[sim]",
    );
    std::fs::write(dir.path().join("exp.toml"), text).unwrap();
    let o = run(dir.path(), "exp.toml", "out", &[], &[]);
    ok(&o);
    let err = stderr(&o);
    let notes: Vec<&str> = err.lines().filter(|l| l.starts_with("note:")).collect();
    assert_eq!(notes.len(), 1, "{err}");
    assert!(
        notes[0].contains("exp.toml:")
            && notes[0].contains("scan_sleep_ms` is deprecated")
            && notes[0].contains("scan_sleep_millisecs"),
        "{err}"
    );
    // The resolved configuration uses the new name only.
    let resolved = read(&dir.path().join("out/config.resolved.toml"));
    assert!(
        resolved.contains("scan_sleep_millisecs = 5000"),
        "{resolved}"
    );
    assert!(!resolved.contains("scan_sleep_ms"), "{resolved}");
}

#[test]
fn reproduce_takes_overrides_and_its_outputs_carry_provenance() {
    let dir = tempfile::tempdir().unwrap();
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/apsys16/table1.toml");
    let mut args: Vec<&std::ffi::OsStr> = vec![
        "reproduce".as_ref(),
        file.as_os_str(),
        "--out".as_ref(),
        "out".as_ref(),
    ];
    let small = common::small_build(50);
    args.extend(small.iter().map(std::ffi::OsStr::new));
    let o = hugemm(&args, dir.path(), &[]);
    ok(&o);
    let text = read(&dir.path().join("out/reproduction.json"));
    assert!(
        text.starts_with(
            "{\n  \"schema\": \"hugemm-reproduction\",\n  \"schema_version\": 1,\n  \"provenance\": {"
        ),
        "its schema, then its provenance, first: {text}"
    );
    let r: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(r["kind"], "apsys16-table1");
    assert!(r["provenance"]["command_line"]
        .as_str()
        .unwrap()
        .contains("--set 'kernel_build[0].units=50'"));
    let resolved = read(&dir.path().join("out/config.resolved.toml"));
    assert!(resolved.contains("units = 50"), "{resolved}");

    let o = hugemm(
        &[
            "reproduce".as_ref(),
            file.as_os_str(),
            "--out".as_ref(),
            "bad".as_ref(),
            "--set".as_ref(),
            "kernel_build[0].unitz=50".as_ref(),
        ],
        dir.path(),
        &[],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("did you mean `units`"), "{err}");
    assert!(!dir.path().join("bad").exists());
}

#[test]
fn use_zero_page_off_makes_huge_read_faults_allocate() {
    let dir = tempfile::tempdir().unwrap();
    // Read 64 MiB never written: THP always maps the huge zero page, or, with
    // use_zero_page off, allocates huge pages that stay unwritten.
    let text = BASE
        .replace("size = \"4MiB\"", "size = \"64MiB\"")
        .replace("[[process.phase]]\nop = \"touch\"\nbuffer = \"b\"\n\n", "")
        .replace("refs = 1000", "refs = 100000\nwrite_fraction = 0.0")
        .replace("memory = \"64MiB\"", "memory = \"256MiB\"");
    std::fs::write(dir.path().join("exp.toml"), text).unwrap();
    let mut got = Vec::new();
    for on in ["true", "false"] {
        let set = format!("policy.linux.use_zero_page={on}");
        ok(&run(dir.path(), "exp.toml", on, &["--set", &set], &[]));
        let p = json(&dir.path().join(on).join("summary.json"))["processes"][0].clone();
        got.push((
            p["faults_zero_page"].as_u64().unwrap(),
            p["faults_2m"].as_u64().unwrap(),
            p["rss_bytes_end"].as_u64().unwrap(),
            p["useful_bytes_end"].as_u64().unwrap(),
        ));
    }
    assert_eq!(got[0], (32, 0, 0, 0), "use_zero_page on");
    assert_eq!(got[1], (0, 32, 64 << 20, 0), "use_zero_page off");
}

#[test]
fn linux_knobs_the_model_cannot_use_are_checked_accepted_and_noted() {
    let dir = tempfile::tempdir().unwrap();
    let text = BASE.replace(
        "[sim]",
        "[policy.linux.khugepaged]\nmax_ptes_swap = 64\n\n[sim]",
    );
    std::fs::write(dir.path().join("exp.toml"), text).unwrap();
    let o = run(
        dir.path(),
        "exp.toml",
        "out",
        &["--set", "policy.linux.khugepaged.max_ptes_shared=256"],
        &[],
    );
    ok(&o);
    let err = stderr(&o);
    let notes: Vec<&str> = err.lines().filter(|l| l.starts_with("note:")).collect();
    assert_eq!(notes.len(), 2, "{err}");
    assert!(
        notes[0].starts_with(
            "note: exp.toml:7:17: `policy.linux.khugepaged.max_ptes_swap` has no effect here"
        ) && notes[0].contains("no swap"),
        "{err}"
    );
    assert!(
        notes[1].starts_with(
            "note: exp.toml (--set policy.linux.khugepaged.max_ptes_shared=256): \
             `policy.linux.khugepaged.max_ptes_shared` has no effect here"
        ),
        "{err}"
    );
    let resolved = read(&dir.path().join("out/config.resolved.toml"));
    assert!(resolved.contains("max_ptes_swap = 64"), "{resolved}");
    assert!(resolved.contains("max_ptes_shared = 256"), "{resolved}");

    // Checked as Linux's sysfs checks them: at most 511.
    let o = run(
        dir.path(),
        "exp.toml",
        "bad",
        &["--set", "policy.linux.khugepaged.max_ptes_swap=512"],
        &[],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("an integer from 0 to 511, found 512"), "{err}");
}

#[test]
fn errors_point_into_the_file_as_written_even_when_overrides_add_lines() {
    let dir = tempfile::tempdir().unwrap();
    // `refs` is on line 24 of the file; the overrides add keys to [sim] above it.
    let text = BASE.replace("refs = 1000", "refs = -5");
    assert_eq!(
        text.lines().position(|l| l == "refs = -5"),
        Some(23),
        "line 24"
    );
    std::fs::write(dir.path().join("exp.toml"), text).unwrap();
    let o = run(
        dir.path(),
        "exp.toml",
        "out",
        &[
            "--set",
            "sim.sample_interval_ms=5",
            "--set",
            "sim.mode=exact",
        ],
        &[],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("exp.toml:24:8: key `process[0].phase[2].refs`"),
        "{err}"
    );
}
