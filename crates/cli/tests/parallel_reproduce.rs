//! `hugemm reproduce --jobs N`: variants, sets and files run in parallel, and the reports
//! and files are the same as a serial run's, byte for byte (apart from what says how
//! they were made: the command line and the wall times).

mod common;

use common::{small_build, without_provenance};
use std::path::Path;
use std::process::{Command, Output};

fn reproduce(dir: &Path, out: &str, jobs: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hugemm"))
        .current_dir(dir)
        .args(["reproduce", "exp", "--out", out, "--jobs", jobs])
        // Smaller builds than the files', so that the test takes seconds.
        .args(small_build(60))
        .output()
        .expect("starting hugemm")
}

/// stdout without the wall-time lines.
fn report(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.contains("wall time") && !l.contains("reproductions in"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_parallel_run_of_a_directory_equals_a_serial_one() {
    let dir = tempfile::tempdir().unwrap();
    let exp = dir.path().join("exp");
    std::fs::create_dir(&exp).unwrap();
    let apsys = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/apsys16");
    // Several variants each (table 2: five fallback policies; figure 3: three layouts).
    for f in ["table2.toml", "fig3.toml"] {
        std::fs::copy(apsys.join(f), exp.join(f)).unwrap();
    }
    let serial = reproduce(dir.path(), "serial", "1");
    let parallel = reproduce(dir.path(), "parallel", "2");
    for o in [&serial, &parallel] {
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    assert_eq!(report(&serial), report(&parallel));
    assert!(report(&serial).contains("== exp/fig3.toml (1 of 2)"));
    for stem in ["table2", "fig3"] {
        // The results, a figure, and one run's own files.
        let figure = if stem == "fig3" {
            "fig3-fu.svg"
        } else {
            "table2-tainted.svg"
        };
        for f in [
            "reproduction.json",
            "config.resolved.toml",
            figure,
            "runs/default/summary.json",
            "runs/default/timeseries.csv",
        ] {
            assert_eq!(
                without_provenance(&dir.path().join("serial").join(stem).join(f)),
                without_provenance(&dir.path().join("parallel").join(stem).join(f)),
                "{stem}/{f}"
            );
        }
    }
    // Progress lines name their file when files run together.
    let err = String::from_utf8_lossy(&parallel.stderr);
    assert!(
        err.contains("reproduce: table2: table 2: opbs ..."),
        "{err}"
    );
}

#[test]
fn zero_jobs_is_refused() {
    let o = Command::new(env!("CARGO_BIN_EXE_hugemm"))
        .args(["reproduce", "experiments", "--jobs", "0"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--jobs"));
}

/// Table 1, Table 2 and Figure 3 start from the same two builds under the default
/// fallback: run together, that workload runs once and the others fork it
/// (`reproduce/shared.rs`), and each report is the one it makes alone.
#[test]
fn reproductions_sharing_a_workload_report_what_they_report_alone() {
    let dir = tempfile::tempdir().unwrap();
    let exp = dir.path().join("exp");
    std::fs::create_dir(&exp).unwrap();
    let apsys = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/apsys16");
    let files = ["table1", "table2", "fig3"];
    for f in files {
        std::fs::copy(
            apsys.join(f).with_extension("toml"),
            exp.join(f).with_extension("toml"),
        )
        .unwrap();
    }
    let run = |args: &[&str], out: &str| {
        let o = Command::new(env!("CARGO_BIN_EXE_hugemm"))
            .current_dir(dir.path())
            .arg("reproduce")
            .args(args)
            .args(["--out", out, "--jobs", "2"])
            .args(small_build(60))
            .output()
            .expect("starting hugemm");
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let err = run(&["exp"], "together");
    assert!(
        err.contains("reproduce: 1 workload(s) shared between reproductions, each run once"),
        "{err}"
    );
    for f in files {
        let err = run(&[&format!("exp/{f}.toml")], &format!("alone/{f}"));
        assert!(
            !err.contains("shared between"),
            "{f} alone shares nothing: {err}"
        );
        for file in [
            "reproduction.json",
            "config.resolved.toml",
            "runs/default/summary.json",
            "runs/default/timeseries.csv",
        ] {
            assert_eq!(
                without_provenance(&dir.path().join("together").join(f).join(file)),
                without_provenance(&dir.path().join("alone").join(f).join(file)),
                "{f}/{file}"
            );
        }
    }
}
