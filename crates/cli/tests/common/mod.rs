//! What the CLI's integration tests share: a small valid experiment, a way to run one
//! and a way to compare outputs apart from their provenance.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

/// `hugemm run FILE --out OUT` with `extra` arguments after them, which must exit 0.
pub fn run_ok(file: &Path, out: &Path, extra: &[&str]) {
    let o = Command::new(env!("CARGO_BIN_EXE_hugemm"))
        .arg("run")
        .arg(file)
        .arg("--out")
        .arg(out)
        .args(extra)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// `--set` arguments that shrink the APSys'16 files' full-scale kernel builds (7,000
/// units, 16-64 MiB compiler heaps, 5 GiB of products; minutes a run) to `units` units
/// with 1-4 MiB heaps and 64 MiB of products, for tests that check the machinery, not the
/// paper's results (`crates/cli/tests/apsys16_paper_scale.rs` checks those).
pub fn small_build(units: u32) -> Vec<String> {
    [
        format!("kernel_build[0].units={units}"),
        "kernel_build[0].heap_min=\"1MiB\"".to_string(),
        "kernel_build[0].heap_max=\"4MiB\"".to_string(),
        "kernel_build[0].object_size=\"64MiB\"".to_string(),
    ]
    .into_iter()
    .flat_map(|s| ["--set".to_string(), s])
    .collect()
}

/// A small valid experiment (tests break or change one thing at a time).
pub const BASE: &str = r#"[machine]
profile = "epyc-milan-kvm"
memory = "64MiB"
cores = 1

[sim]
seed = 1

[[process]]
name = "p"

[[process.phase]]
op = "mmap"
buffer = "b"
size = "4MiB"

[[process.phase]]
op = "touch"
buffer = "b"

[[process.phase]]
op = "access"
buffer = "b"
refs = 1000
"#;

/// An output file's text without what only says what made it (the command and date
/// differ between a run and the run of its resolved file): the `provenance` object of
/// JSON, the provenance comments of the resolved configuration.
pub fn without_provenance(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    if path.extension().is_some_and(|e| e == "json") {
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let p = v.as_object_mut().unwrap().remove("provenance");
        assert!(p.is_some_and(|p| p["hugemm_version"].is_string()), "{text}");
        return serde_json::to_string_pretty(&v).unwrap();
    }
    text.lines()
        .filter(|l| {
            !["# hugemm ", "# command: ", "# date: "]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .collect::<Vec<_>>()
        .join("\n")
}
