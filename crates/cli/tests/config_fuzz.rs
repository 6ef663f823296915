//! No experiment text makes configuration panic, and every refusal names the file and a
//! key. Feeds arbitrary strings, TOML-looking soup and mutations of a valid experiment to
//! `hugemm_cli::config::parse`; experiments that parse are checked, never run.

use hugemm_cli::config::{parse, ConfigError, Loaded};
use proptest::prelude::*;
use proptest::sample::{select, Index};
use std::path::Path;

/// A valid experiment touching most keys: both modes' tables, every op and pattern.
const VALID: &str = r#"[machine]
profile = "epyc-milan-kvm"
memory = "256MiB"
cores = 2

[policy]
name = "linux"

[policy.linux]
enabled = "always"
defrag = "madvise"

[policy.linux.khugepaged]
enabled = true
pages_to_scan = 4096
scan_sleep_ms = 10000
alloc_sleep_ms = 60000
max_ptes_none = 511

[sim]
mode = "sampled"
seed = 1
sample_interval_ms = 100
time_limit_s = 10.0
daemon_core = 1

[sim.sampled]
warmup_refs = 2000
window_refs = 5000
period_ms = 10

[[process]]
name = "a"
count = 2
start_ms = 0
core = 1

[[process.phase]]
op = "mmap"
buffer = "heap"
size = "64MiB"
advice = "hugepage"

[[process.phase]]
op = "touch"
buffer = "heap"
stride = "4KiB"
write_fraction = 1.0

[[process.phase]]
op = "madvise"
buffer = "heap"
advice = "nohugepage"
offset = "2MiB"
length = "4MiB"

[[process.phase]]
op = "access"
buffer = "heap"
pattern = "zipf"
exponent = 1.1
position = 0.5
refs = 10000
dependent = false
write_fraction = 0.1
compute_ns = 5

[[process.phase]]
op = "sleep"
duration_ms = 1.5

[[process.phase]]
op = "munmap"
buffer = "heap"

[[process]]
name = "b"

[[process.phase]]
op = "mmap"
buffer = "x"
size = 8388608

[[process.phase]]
op = "access"
buffer = "x"
pattern = "hot"
hot_fraction = 0.25
hot_share = 0.9
duration_ms = 100

[[process.phase]]
op = "access"
buffer = "x"
pattern = "sequential"
stride = 64
refs = 100

[[app]]
model = "redis"
name = "kv"
count = 2
memory = "64MiB"
start_ms = 5
duration_s = 0.5
"#;

const FILE: &str = "fuzz.toml";

/// Values a mutation may put on the right of `=`: wrong types, edges, overflow, names.
const TOKENS: &[&str] = &[
    "-1",
    "0",
    "1",
    "3",
    "4097",
    "0.5",
    "-0.0",
    "1e-300",
    "1e400",
    "nan",
    "inf",
    "-inf",
    "\"x\"",
    "\"\"",
    "true",
    "false",
    "[]",
    "[1, 2]",
    "{}",
    "{ a = 1 }",
    "\"99999TiB\"",
    "\"8388608TiB\"",
    "\"4 XB\"",
    "\"4KiB\"",
    "\"1.5GiB\"",
    "\"1TiB\"",
    "\"-4GiB\"",
    "9223372036854775807",
    "-9223372036854775808",
    "99999999999999999999",
    "1979-05-27T07:32:00Z",
    "\"system\"",
    "\"exact\"",
    "\"sampled\"",
    "\"hugepage\"",
    "\"dontneed\"",
    "\"mmap\"",
    "\"touch\"",
    "\"access\"",
    "\"madvise\"",
    "\"munmap\"",
    "\"sleep\"",
    "\"uniform\"",
    "\"sequential\"",
    "\"zipf\"",
    "\"hot\"",
    "\"heap\"",
    "\"redis\"",
    "\"cg.D\"",
    "1e9",
    "\"x\\ny\"",
    "\"prof.toml\"",
    "\"freebsd\"",
    "\"linux\"",
    "\"../../profiles/haswell-e5-2690v3.toml\"",
];

/// Keys a mutation may put on the left of `=`: real ones (often in the wrong place).
const KEYS: &[&str] = &[
    "profile",
    "memory",
    "cores",
    "name",
    "enabled",
    "defrag",
    "pages_to_scan",
    "scan_sleep_ms",
    "max_ptes_none",
    "reservations",
    "pg_ps_enabled",
    "mode",
    "seed",
    "time_limit_s",
    "daemon_core",
    "period_ms",
    "window_refs",
    "count",
    "start_ms",
    "core",
    "op",
    "buffer",
    "size",
    "advice",
    "offset",
    "length",
    "pattern",
    "refs",
    "duration_ms",
    "dependent",
    "write_fraction",
    "compute_ns",
    "stride",
    "exponent",
    "position",
    "hot_fraction",
    "hot_share",
    "model",
    "duration_s",
    "machine",
    "sim",
    "process",
    "phase",
];

/// Table headers a mutation may insert.
const HEADERS: &[&str] = &[
    "[machine]",
    "[policy]",
    "[policy.linux]",
    "[policy.linux.khugepaged]",
    "[policy.freebsd]",
    "[sim]",
    "[sim.sampled]",
    "[[process]]",
    "[[process.phase]]",
    "[[app]]",
    "[process]",
    "[[machine]]",
    "[bogus]",
    "[process.phase]",
];

#[derive(Clone, Debug)]
enum Mutation {
    Delete(Index),
    Duplicate(Index),
    Swap(Index, Index),
    Value(Index, String),
    Key(Index, String),
    Header(Index, String),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let key = prop_oneof![select(KEYS).prop_map(String::from), "[a-z_][a-z0-9_]{0,11}"];
    prop_oneof![
        any::<Index>().prop_map(Mutation::Delete),
        any::<Index>().prop_map(Mutation::Duplicate),
        (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mutation::Swap(a, b)),
        (any::<Index>(), select(TOKENS)).prop_map(|(i, t)| Mutation::Value(i, t.into())),
        (any::<Index>(), key).prop_map(|(i, k)| Mutation::Key(i, k)),
        (any::<Index>(), select(HEADERS)).prop_map(|(i, h)| Mutation::Header(i, h.into())),
    ]
}

fn mutate(text: &str, mutations: &[Mutation]) -> String {
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    for m in mutations {
        if lines.is_empty() {
            break;
        }
        match m {
            Mutation::Delete(i) => {
                lines.remove(i.index(lines.len()));
            }
            Mutation::Duplicate(i) => {
                let j = i.index(lines.len());
                lines.insert(j, lines[j].clone());
            }
            Mutation::Swap(a, b) => {
                let n = lines.len();
                lines.swap(a.index(n), b.index(n));
            }
            Mutation::Value(i, token) => {
                let j = i.index(lines.len());
                if let Some((k, _)) = lines[j].split_once(" = ") {
                    lines[j] = format!("{k} = {token}");
                }
            }
            Mutation::Key(i, key) => {
                let j = i.index(lines.len());
                if let Some((_, v)) = lines[j].split_once(" = ") {
                    lines[j] = format!("{key} = {v}");
                }
            }
            Mutation::Header(i, header) => {
                let j = i.index(lines.len() + 1);
                lines.insert(j, header.clone());
            }
        }
    }
    lines.join("\n") + "\n"
}

/// TOML-looking soup: fragments of experiment files in any order.
fn soup() -> impl Strategy<Value = String> {
    let fragment = prop_oneof![
        select(HEADERS).prop_map(|h| format!("\n{h}\n")),
        (select(KEYS), select(TOKENS)).prop_map(|(k, v)| format!("{k} = {v}\n")),
        select(&["=", "\n", "\"", "[", "]", "{", "}", ".", "#", " ", "'", "\\", "\u{0}", "é"][..])
            .prop_map(String::from),
    ];
    prop::collection::vec(fragment, 0..40).prop_map(|v| v.concat())
}

/// What every parse must satisfy: an error names the file and a key; an experiment is
/// within bounds and its resolved form means the same experiment.
fn check(text: &str) -> Result<(), TestCaseError> {
    match parse(text, FILE, Path::new(".")) {
        Err(e) => {
            let msg = e.to_string();
            prop_assert!(
                msg.starts_with(&format!("{FILE}: key `")),
                "error does not name the file and a key: {msg}"
            );
            prop_assert!(
                !matches!(e, ConfigError::Io { .. }),
                "parse cannot fail to read: {msg}"
            );
            let rest = msg.split_once("`: ").map_or("", |(_, r)| r.trim());
            // Past an optional "line N:", something must say what is wrong.
            let rest = match rest.strip_prefix("line ").and_then(|r| r.split_once(':')) {
                Some((n, r)) if n.parse::<usize>().is_ok() => r.trim(),
                _ => rest,
            };
            prop_assert!(!rest.is_empty(), "error says nothing after the key: {msg}");
        }
        Ok(Loaded {
            experiment: x,
            resolved,
            ..
        }) => {
            prop_assert!(!x.processes.is_empty());
            prop_assert!((1..=1024).contains(&x.cores), "cores {}", x.cores);
            prop_assert!(
                (64 << 20..=1 << 40).contains(&x.memory_bytes),
                "memory {}",
                x.memory_bytes
            );
            prop_assert_eq!(x.memory_bytes % (4 << 20), 0);
            let again = toml::to_string(&resolved)
                .map_err(|e| TestCaseError::fail(format!("resolved does not serialise: {e}")))?;
            match parse(&again, FILE, Path::new(".")) {
                Ok(y) => prop_assert_eq!(
                    format!("{:?}", y.experiment),
                    format!("{x:?}"),
                    "resolved form differs:\n{}",
                    again
                ),
                Err(e) => prop_assert!(false, "resolved form refused: {e}\n{again}"),
            }
        }
    }
    Ok(())
}

#[test]
fn valid_experiment_parses() {
    let loaded = parse(VALID, FILE, Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(loaded.experiment.processes.len(), 5);
    check(VALID).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn mutated_experiments_never_panic(mutations in prop::collection::vec(mutation(), 1..5)) {
        check(&mutate(VALID, &mutations))?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn arbitrary_strings_never_panic(text in any::<String>()) {
        check(&text)?;
    }

    #[test]
    fn toml_soup_never_panics(text in soup()) {
        check(&text)?;
    }
}
