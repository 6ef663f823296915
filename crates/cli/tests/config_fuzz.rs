//! No experiment text makes configuration panic, and every refusal names the file and a
//! key. Feeds arbitrary strings, TOML-looking soup and mutations of a valid experiment to
//! `hugemm_cli::config::parse`; experiments that parse are checked, never run. Experiments
//! generated from the newer keys (`[kernel.prezero]`, `[policy.hawkeye.bloat]`,
//! `[[kv_server]]`, ...), each value valid or not, must be accepted exactly when every
//! value is valid, and refused naming a key that is not.

use hugemm_cli::config::{parse, ConfigError, Loaded};
use proptest::prelude::*;
use proptest::sample::{select, Index};
use std::path::Path;

/// A valid experiment touching most keys: both modes' tables, every op and pattern, the
/// kernel's and HawkEye's bloat-recovery tables, every key-value step.
const VALID: &str = r#"[machine]
profile = "epyc-milan-kvm"
memory = "256MiB"
cores = 2

[policy]
name = "linux"

[policy.linux]
enabled = "always"
defrag = "madvise"
shrink_underused = true

[policy.linux.khugepaged]
enabled = true
pages_to_scan = 4096
scan_sleep_millisecs = 10000
alloc_sleep_millisecs = 60000
max_ptes_none = 511

[policy.hawkeye.bloat]
enabled = true
high_watermark = 0.85
low_watermark = 0.7
period_ms = 1000
huge_pages_per_pass = 512
max_zero = 0

[kernel]
clear_pages = true
preserve_huge_blocks = true
compaction = "hole-aware"

[kernel.prezero]
enabled = true
rate_pages_per_s = 10000
period_ms = 0.5
stores = "caching"
lists = "released"
stress = false

[kernel.boot]
unmovable_pageblocks = 4
unmovable_free = [1, 0, 2]
reclaimable_pageblocks = 1
reclaimable_free = []

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
nonzero_share = 0.0

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
instructions_per_ref = 12
nonzero_share = 0.5
mean_first_nonzero = 9.11

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

[[process.phase]]
op = "access"
buffer = "x"
pattern = "chase"
refs = 100

[[app]]
model = "redis"
name = "kv"
count = 2
memory = "64MiB"
start_ms = 5
duration_s = 0.5

[[app]]
model = "jvm-spinup"
memory = "64MiB"

[[kv_server]]
name = "kv"
start_ms = 1
heap = "64MiB"
request_cpu_us = 9
key_size = 10

[[kv_server.step]]
op = "insert"
keys = 1000
value_size = 4086

[[kv_server.step]]
op = "get"
requests = 1000

[[kv_server.step]]
op = "delete"
share = 0.5

[[kv_server.step]]
op = "idle"
duration_s = 0.01
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
    "\"hawkeye\"",
    "\"nt\"",
    "\"caching\"",
    "\"fast\"",
    "\"paper\"",
    "\"released\"",
    "\"insert\"",
    "\"delete\"",
    "\"get\"",
    "\"idle\"",
    "\"put\"",
    "\"sparsehash\"",
    "\"hacc-io\"",
    "\"jvm-spinup\"",
    "\"vm-spinup\"",
    "\"1KiB\"",
    "\"1MiB\"",
    "\"64TiB\"",
    "\"65TiB\"",
    "0.001",
    "1.5",
    "511",
    "600",
    "4095",
    "1099511627777",
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
    "scan_sleep_millisecs",
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
    "instructions_per_ref",
    "stride",
    "exponent",
    "position",
    "hot_fraction",
    "hot_share",
    "nonzero_share",
    "mean_first_nonzero",
    "clear_pages",
    "preserve_huge_blocks",
    "compaction",
    "prezero",
    "rate_pages_per_s",
    "stores",
    "lists",
    "stress",
    "shrink_underused",
    "use_zero_page",
    "bloat",
    "high_watermark",
    "low_watermark",
    "huge_pages_per_pass",
    "max_zero",
    "heap",
    "request_cpu_us",
    "key_size",
    "keys",
    "value_size",
    "share",
    "requests",
    "step",
    "kv_server",
    "kernel",
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
    "[kernel]",
    "[kernel.prezero]",
    "[kernel.boot]",
    "[policy.hawkeye]",
    "[policy.hawkeye.bloat]",
    "[[kv_server]]",
    "[[kv_server.step]]",
    "[kv_server]",
    "[[kernel.prezero]]",
    "[[kv_server.step.step]]",
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

/// A generated value: its TOML text, whether its key accepts it, and the number it
/// stands for when it does.
#[derive(Clone, Debug)]
struct Val {
    text: String,
    ok: bool,
    num: f64,
}

fn good(x: f64) -> Val {
    Val {
        // `{:?}` is the shortest text that reads back as the same f64 (TOML reads it).
        text: format!("{x:?}"),
        ok: true,
        num: x,
    }
}

/// A valid value that is not a number (a name, a boolean).
fn word(text: impl Into<String>) -> Val {
    Val {
        text: text.into(),
        ok: true,
        num: f64::NAN,
    }
}

/// A valid whole number.
fn whole(x: i64) -> Val {
    Val {
        text: x.to_string(),
        ok: true,
        num: x as f64,
    }
}

fn bad(text: &str) -> Val {
    Val {
        text: text.into(),
        ok: false,
        num: f64::NAN,
    }
}

/// Wrong types for any key that is not a string.
const NOT_NUMBERS: &[&str] = &["\"x\"", "true", "[1]", "{ a = 1 }"];

/// A value from `valid` in most cases, else one from `invalid`: a file of a dozen
/// generated keys is then often valid, and when not, usually for one key.
fn mostly(valid: BoxedStrategy<Val>, invalid: BoxedStrategy<Val>) -> BoxedStrategy<Val> {
    prop_oneof![19 => valid, 1 => invalid].boxed()
}

fn bool_val() -> BoxedStrategy<Val> {
    mostly(
        any::<bool>().prop_map(|b| word(b.to_string())).boxed(),
        select(&["1", "0", "\"yes\"", "\"true\"", "0.5"][..])
            .prop_map(bad)
            .boxed(),
    )
}

/// An integer key taking `min..=max` (both well inside i64).
fn int_val(min: i64, max: i64) -> BoxedStrategy<Val> {
    mostly(
        prop_oneof![Just(min), Just(max), min..=max]
            .prop_map(whole)
            .boxed(),
        prop_oneof![
            prop_oneof![Just(min - 1), Just(max + 1), Just(i64::MIN), Just(i64::MAX)]
                .prop_map(|x| bad(&x.to_string())),
            select(&["1.5", "1e3", "nan", "\"1\"", "true"][..]).prop_map(bad),
        ]
        .boxed(),
    )
}

/// Numbers from `min..=max`, as floats or (when whole numbers fit) integers.
fn float_in(min: f64, max: f64) -> BoxedStrategy<Val> {
    let (lo, hi) = (min.ceil() as i64, max.floor() as i64);
    let floats = prop_oneof![Just(min), Just(max), min..=max].prop_map(good);
    if lo > hi {
        return floats.boxed();
    }
    prop_oneof![
        3 => floats,
        1 => (lo..=hi).prop_map(whole),
    ]
    .boxed()
}

/// A number key taking `min..=max`.
fn float_val(min: f64, max: f64) -> BoxedStrategy<Val> {
    let below = if min > 0.0 { min / 2.0 } else { min - 1.0 };
    mostly(
        float_in(min, max),
        prop_oneof![
            prop_oneof![Just(below), Just(max * 2.0 + 1.0), Just(-1e300)]
                .prop_map(|x| bad(&format!("{x:?}"))),
            select(&["nan", "inf", "-inf"][..]).prop_map(bad),
            select(NOT_NUMBERS).prop_map(bad),
        ]
        .boxed(),
    )
}

/// A string key taking one of `names`.
fn choice_val(names: &'static [&'static str]) -> BoxedStrategy<Val> {
    mostly(
        select(names).prop_map(|n| word(format!("\"{n}\""))).boxed(),
        select(
            &[
                "\"fast\"",
                "\"\"",
                "\"NT\"",
                "\"Paper\"",
                "\"put\"",
                "1",
                "true",
                "[\"nt\"]",
            ][..],
        )
        .prop_map(bad)
        .boxed(),
    )
}

/// A size key taking `min..=max` bytes in multiples of `grain`.
fn size_val(min: u64, max: u64, grain: u64) -> BoxedStrategy<Val> {
    let named = [
        ("\"1MiB\"", 1 << 20),
        ("\"64MiB\"", 64 << 20),
        ("\"1.5GiB\"", 3 << 29),
        ("\"64TiB\"", 1 << 46),
        ("\"4086 B\"", 4086),
        ("\"1KiB\"", 1 << 10),
        ("\"65TiB\"", 65 << 40),
    ];
    let fits = move |b: u64| (min..=max).contains(&b) && b.is_multiple_of(grain);
    let (valid, invalid): (Vec<_>, Vec<_>) = named.into_iter().partition(|&(_, b)| fits(b));
    let named = |v: Vec<(&'static str, u64)>| {
        select(v).prop_map(move |(text, bytes)| Val {
            text: text.into(),
            ok: fits(bytes),
            num: bytes as f64,
        })
    };
    mostly(
        prop_oneof![
            (min / grain..=max / grain).prop_map(move |n| whole((n * grain) as i64)),
            named(valid),
        ]
        .boxed(),
        prop_oneof![
            named(invalid),
            prop_oneof![
                Just(min.saturating_sub(grain)),
                Just(max + grain),
                Just(min + 1)
            ]
            .prop_filter("an invalid size", move |&b| !fits(b))
            .prop_map(|b| bad(&b.to_string())),
            select(&["-4096", "\"4 XB\"", "\"-4GiB\"", "1.5", "true"][..]).prop_map(bad),
        ]
        .boxed(),
    )
}

/// A step's `value_size`: any size of a byte or more (whether it fits the server's heap
/// is decided with the heap's value).
fn value_size() -> BoxedStrategy<Val> {
    mostly(
        prop_oneof![
            8 => (1i64..=1 << 16).prop_map(whole),
            1 => (1i64..=1 << 47).prop_map(whole),
            1 => select(&[("\"4086 B\"", 4086u64), ("\"1MiB\"", 1 << 20), ("\"64TiB\"", 1 << 46)][..])
                .prop_map(|(text, bytes)| Val {
                    text: text.into(),
                    ok: true,
                    num: bytes as f64,
                }),
        ]
        .boxed(),
        select(&["0", "-1", "\"4 XB\"", "1.5", "true"][..])
            .prop_map(bad)
            .boxed(),
    )
}

type Fields = Vec<(&'static str, Val)>;

/// Each key of `keys` absent (in a share `1 - present` of cases) or given a value.
fn fields(present: f64, keys: Vec<(&'static str, BoxedStrategy<Val>)>) -> BoxedStrategy<Fields> {
    keys.into_iter()
        .map(|(k, v)| prop::option::weighted(present, v).prop_map(move |v| v.map(|v| (k, v))))
        .collect::<Vec<_>>()
        .prop_map(|v| v.into_iter().flatten().collect())
        .boxed()
}

fn render(fields: &Fields) -> String {
    fields
        .iter()
        .map(|(k, v)| format!("{k} = {}\n", v.text))
        .collect()
}

fn get<'a>(fields: &'a Fields, key: &str) -> Option<&'a Val> {
    fields.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
}

/// The keys of `fields` whose value their key refuses, under `at`.
fn refused(at: &str, fields: &Fields) -> Vec<String> {
    fields
        .iter()
        .filter(|(_, v)| !v.ok)
        .map(|(k, _)| format!("{at}.{k}"))
        .collect()
}

/// A generated `[[kv_server.step]]`: its op (absent, one of the four, or wrong) and keys.
#[derive(Clone, Debug)]
struct KvStepGen {
    op: Option<Val>,
    fields: Fields,
}

const KV_OPS: &[&str] = &["insert", "delete", "get", "idle"];

/// The keys `op` takes.
fn kv_keys(op: &str) -> &'static [&'static str] {
    match op {
        "insert" => &["keys", "value_size"],
        "delete" => &["share"],
        "get" => &["requests"],
        "idle" => &["duration_s"],
        _ => &[],
    }
}

fn kv_step() -> impl Strategy<Value = KvStepGen> {
    let op = prop_oneof![
        30 => choice_val(KV_OPS).prop_map(Some),
        1 => Just(None),
    ];
    op.prop_flat_map(|op| {
        let name = op
            .as_ref()
            .filter(|v| v.ok)
            .map(|v| v.text.trim_matches('"').to_string());
        let own = kv_keys(name.as_deref().unwrap_or(""));
        let key = |k: &'static str, v: BoxedStrategy<Val>| {
            let p = if own.contains(&k) { 0.97 } else { 0.02 };
            fields(p, vec![(k, v)])
        };
        (
            Just(op),
            key("keys", int_val(1, 1 << 32)),
            key("value_size", value_size()),
            key("share", float_val(0.0, 1.0)),
            key("requests", int_val(1, 1 << 32)),
            key("duration_s", float_val(1e-6, 1e9)),
        )
            .prop_map(|(op, a, b, c, d, e)| KvStepGen {
                op,
                fields: [a, b, c, d, e].concat(),
            })
    })
}

/// A generated `[[kv_server]]`.
#[derive(Clone, Debug)]
struct KvServerGen {
    fields: Fields,
    steps: Vec<KvStepGen>,
}

fn kv_server() -> impl Strategy<Value = KvServerGen> {
    let name = prop_oneof![
        19 => select(&["\"kv\"", "\"redis-1\"", "\"a,b\""][..]).prop_map(word),
        1 => select(&["\"system\"", "\"a\\nb\"", "\"\"", "3"][..]).prop_map(bad),
    ];
    (
        fields(0.98, vec![("name", name.boxed())]),
        fields(
            0.5,
            vec![
                ("start_ms", float_val(0.0, 1e12)),
                ("heap", size_val(1 << 20, 1 << 46, 4096)),
                ("request_cpu_us", float_val(0.0, 1e9)),
                ("key_size", int_val(1, 1 << 20)),
            ],
        ),
        prop_oneof![
            1 => Just(Vec::new()),
            19 => prop::collection::vec(kv_step(), 1..4),
        ],
    )
        .prop_map(|(name, rest, steps)| KvServerGen {
            fields: [name, rest].concat(),
            steps,
        })
}

/// An experiment built from the newer keys and tables, each key absent, valid or not, and
/// which keys it gives values their key refuses.
#[derive(Clone, Debug)]
struct Generated {
    policy: &'static str,
    linux: Option<Fields>,
    bloat: Option<Fields>,
    kernel: Option<Fields>,
    prezero: Option<Fields>,
    /// Keys of the mmap, touch and access phases (only the last two take them).
    phases: [Fields; 3],
    /// (model, keys) of each `[[app]]`.
    apps: Vec<(&'static str, Fields)>,
    kv_servers: Vec<KvServerGen>,
}

/// The keys of a phase that says what its first writes leave.
fn write_content(present: f64) -> BoxedStrategy<Fields> {
    fields(
        present,
        vec![
            ("nonzero_share", float_val(0.0, 1.0)),
            ("mean_first_nonzero", float_val(0.0, 4095.0)),
        ],
    )
}

fn app() -> impl Strategy<Value = (&'static str, Fields)> {
    let refs = || {
        mostly(
            select(&["1", "10", "1000"][..]).prop_map(word).boxed(),
            select(&["0", "-5", "1.5"][..]).prop_map(bad).boxed(),
        )
    };
    // Which of `refs` and `duration_s` a table gives.
    let run = move |p: [u32; 4]| {
        let (r, d) = (refs().prop_map(|v| vec![("refs", v)]), float_val(1e-6, 1e9));
        let d = d.prop_map(|v| vec![("duration_s", v)]);
        prop_oneof![
            p[0] => Just(Vec::new()),
            p[1] => r.clone(),
            p[2] => d.clone(),
            p[3] => (r, d).prop_map(|(r, d)| [r, d].concat()),
        ]
    };
    prop_oneof![
        // These run to completion: any run length is refused.
        4 => select(&["sparsehash", "hacc-io", "jvm-spinup", "vm-spinup"][..])
            .prop_flat_map(move |m| (Just(m), run([36, 2, 1, 1]))),
        // The others need exactly one.
        1 => (Just("random"), run([1, 18, 18, 1])),
    ]
}

fn generated() -> impl Strategy<Value = Generated> {
    let table = |p: f64, keys| prop::option::weighted(0.7, fields(p, keys));
    (
        select(&["linux", "hawkeye"][..]),
        table(
            0.8,
            vec![
                ("shrink_underused", bool_val()),
                ("use_zero_page", bool_val()),
            ],
        ),
        table(
            0.4,
            vec![
                ("enabled", bool_val()),
                // Mostly a high watermark above the low one (the default high is 0.85).
                (
                    "high_watermark",
                    prop_oneof![1 => float_in(0.85, 1.0), 1 => float_val(0.0, 1.0)].boxed(),
                ),
                (
                    "low_watermark",
                    prop_oneof![3 => float_in(0.0, 0.85), 1 => float_val(0.0, 1.0)].boxed(),
                ),
                ("period_ms", int_val(1, 1 << 32)),
                ("huge_pages_per_pass", int_val(1, 1 << 30)),
                ("max_zero", int_val(0, 511)),
            ],
        ),
        table(0.8, vec![("clear_pages", bool_val())]),
        table(
            0.4,
            vec![
                ("enabled", bool_val()),
                ("rate_pages_per_s", int_val(1, 1 << 40)),
                ("period_ms", float_val(0.001, 1e9)),
                ("stores", choice_val(&["nt", "caching"])),
                ("lists", choice_val(&["paper", "released"])),
                ("stress", bool_val()),
            ],
        ),
        (write_content(0.02), write_content(0.5), write_content(0.5)),
        prop::collection::vec(app(), 0..3),
        prop::collection::vec(kv_server(), 0..3),
    )
        .prop_map(
            |(policy, linux, bloat, kernel, prezero, (mmap, touch, access), apps, kv_servers)| {
                Generated {
                    policy,
                    linux,
                    bloat,
                    kernel,
                    prezero,
                    phases: [mmap, touch, access],
                    apps,
                    kv_servers,
                }
            },
        )
}

impl Generated {
    fn text(&self) -> String {
        let mut t = format!(
            "[machine]\nprofile = \"epyc-milan-kvm\"\nmemory = \"256MiB\"\n\n\
             [policy]\nname = \"{}\"\n",
            self.policy
        );
        let mut table = |header: &str, f: &Option<Fields>| {
            if let Some(f) = f {
                t += &format!("\n[{header}]\n{}", render(f));
            }
        };
        table("policy.linux", &self.linux);
        table("policy.hawkeye.bloat", &self.bloat);
        table("kernel", &self.kernel);
        table("kernel.prezero", &self.prezero);
        t += "\n[[process]]\nname = \"p\"\n";
        let [mmap, touch, access] = &self.phases;
        t += &format!(
            "\n[[process.phase]]\nop = \"mmap\"\nbuffer = \"b\"\nsize = \"4MiB\"\n{}",
            render(mmap)
        );
        t += &format!(
            "\n[[process.phase]]\nop = \"touch\"\nbuffer = \"b\"\n{}",
            render(touch)
        );
        t += &format!(
            "\n[[process.phase]]\nop = \"access\"\nbuffer = \"b\"\nrefs = 100\n{}",
            render(access)
        );
        for (model, f) in &self.apps {
            t += &format!(
                "\n[[app]]\nmodel = \"{model}\"\nmemory = \"64MiB\"\n{}",
                render(f)
            );
        }
        for k in &self.kv_servers {
            t += &format!("\n[[kv_server]]\n{}", render(&k.fields));
            for s in &k.steps {
                t += "\n[[kv_server.step]]\n";
                if let Some(op) = &s.op {
                    t += &format!("op = {}\n", op.text);
                }
                t += &render(&s.fields);
            }
        }
        t
    }

    /// Every key the validation may refuse: a file is valid exactly when there is none,
    /// and a refusal must name one of them.
    fn faults(&self) -> Vec<String> {
        let mut f = Vec::new();
        let mut table = |at: &str, fields: &Option<Fields>| {
            if let Some(fields) = fields {
                f.extend(refused(at, fields));
            }
        };
        table("policy.linux", &self.linux);
        table("policy.hawkeye.bloat", &self.bloat);
        table("kernel", &self.kernel);
        table("kernel.prezero", &self.prezero);
        if let Some(b) = &self.bloat {
            // Defaults: high 0.85, low 0.70.
            let share = |k, d| get(b, k).map_or(Some(d), |v| v.ok.then_some(v.num));
            if let (Some(high), Some(low)) =
                (share("high_watermark", 0.85), share("low_watermark", 0.70))
            {
                if low > high {
                    f.push("policy.hawkeye.bloat.low_watermark".into());
                }
            }
        }
        for (j, ph) in self.phases.iter().enumerate() {
            let at = format!("process[0].phase[{j}]");
            f.extend(refused(&at, ph));
            if j == 0 {
                // mmap takes neither key.
                f.extend(ph.iter().map(|(k, _)| format!("{at}.{k}")));
            }
        }
        for (i, (model, a)) in self.apps.iter().enumerate() {
            let at = format!("app[{i}]");
            f.extend(refused(&at, a));
            let (refs, secs) = (get(a, "refs").is_some(), get(a, "duration_s").is_some());
            if *model == "random" {
                if refs == secs {
                    f.push(format!("{at}.refs"));
                }
            } else {
                // The models that run to completion take neither.
                f.extend(a.iter().map(|(k, _)| format!("{at}.{k}")));
            }
        }
        for (i, k) in self.kv_servers.iter().enumerate() {
            let at = format!("kv_server[{i}]");
            f.extend(refused(&at, &k.fields));
            if get(&k.fields, "name").is_none() {
                f.push(format!("{at}.name"));
            }
            if k.steps.is_empty() {
                f.push(format!("{at}.step"));
            }
            let heap = get(&k.fields, "heap")
                .filter(|v| v.ok)
                .map_or(64u64 << 30, |v| v.num as u64);
            for (j, s) in k.steps.iter().enumerate() {
                let at = format!("{at}.step[{j}]");
                f.extend(refused(&at, &s.fields));
                let Some(op) = s.op.as_ref().filter(|v| v.ok) else {
                    f.push(format!("{at}.op"));
                    continue;
                };
                let op = op.text.trim_matches('"');
                let takes = kv_keys(op);
                for (key, _) in &s.fields {
                    if !takes.contains(key) {
                        f.push(format!("{at}.{key}"));
                    }
                }
                // Required keys (delete's share has a default).
                for key in takes.iter().filter(|&&k| k != "share") {
                    if get(&s.fields, key).is_none() {
                        f.push(format!("{at}.{key}"));
                    }
                }
                if let Some(v) = get(&s.fields, "value_size").filter(|v| v.ok) {
                    if v.num as u64 > heap / 2 {
                        f.push(format!("{at}.value_size"));
                    }
                }
            }
        }
        f
    }
}

/// What every parse must satisfy: an error names the file and a key; an experiment is
/// within bounds and its resolved form means the same experiment.
fn check(text: &str) -> Result<(), TestCaseError> {
    match parse(text, FILE, Path::new(".")) {
        Err(e) => {
            let msg = e.to_string();
            // `FILE: key` or, where the key is in the text, `FILE:LINE:COLUMN: key`.
            let after = msg.strip_prefix(FILE).unwrap_or_default();
            let after = match after.split_once(": key `") {
                Some((pos, rest)) if pos.is_empty() || is_line_col(pos) => rest,
                _ => "",
            };
            prop_assert!(
                !after.is_empty(),
                "error does not name the file and a key: {msg}"
            );
            prop_assert!(
                !matches!(e, ConfigError::Io { .. }),
                "parse cannot fail to read: {msg}"
            );
            let rest = after.split_once("`: ").map_or("", |(_, r)| r.trim());
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
    assert_eq!(loaded.experiment.processes.len(), 7);
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

#[test]
fn generated_experiments_are_often_valid_and_often_refused_for_one_key() {
    // Else the property below would test little: everything refused at the first key,
    // or nothing refused.
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let (mut valid, mut one) = (0, 0);
    for _ in 0..1000 {
        let g = generated().new_tree(&mut runner).unwrap().current();
        match g.faults().len() {
            0 => valid += 1,
            1 => one += 1,
            _ => {}
        }
    }
    assert!(
        valid >= 200 && one >= 200,
        "{valid} valid, {one} with one bad key"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn newer_keys_are_accepted_exactly_when_valid(g in generated()) {
        let text = g.text();
        check(&text)?;
        let faults = g.faults();
        match parse(&text, FILE, Path::new(".")) {
            Ok(_) => prop_assert!(
                faults.is_empty(),
                "accepted despite bad {faults:?}:\n{text}"
            ),
            Err(ConfigError::Parse { key, .. } | ConfigError::Invalid { key, .. }) => {
                prop_assert!(
                    faults.contains(&key),
                    "refused at `{key}`, but the bad keys are {faults:?}:\n{text}"
                )
            }
            Err(e) => prop_assert!(false, "unexpected error {e}:\n{text}"),
        }
    }
}

/// `:LINE:COLUMN`, both positive numbers.
fn is_line_col(s: &str) -> bool {
    let parts: Vec<&str> = s.split(':').collect();
    parts.len() == 3
        && parts[0].is_empty()
        && parts[1..]
            .iter()
            .all(|n| n.parse::<usize>().is_ok_and(|n| n > 0))
}
