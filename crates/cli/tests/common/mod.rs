//! What the CLI's integration tests share: a small valid experiment and a way to compare
//! outputs apart from their provenance.
#![allow(dead_code)]

use std::path::Path;

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
