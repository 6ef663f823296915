//! HawkEye's claims about page zeroing, fault latency and bloat (sections 2.1, 2.2, 3.1,
//! 3.2, 4: Figure 1, Tables 1, 7, 8, Figure 10), asserted as orderings and ratios on
//! scaled-down versions of the shipped reproduction files. The numbers come out of the
//! mechanisms and the machine profile; nothing here is special-cased.

use hugemm_cli::reproduce::{self, zeroing};
use hugemm_sim::ProcessSummary;
use std::path::Path;

/// Load `text` as a reproduction file and run every variant.
fn run(text: &str) -> Vec<zeroing::Run> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("repro.toml");
    std::fs::write(&file, text).unwrap();
    let r = reproduce::load(&file).unwrap_or_else(|e| panic!("{e}"));
    zeroing::run_all(&r, &|_: &str| {}).unwrap()
}

fn get<'a>(runs: &'a [zeroing::Run], variant: &str, name: &str) -> &'a ProcessSummary {
    runs.iter()
        .filter(|r| r.variant == variant)
        .find_map(|r| r.process(name))
        .unwrap_or_else(|| panic!("{name} under {variant}"))
}

fn zeroing_share(p: &ProcessSummary) -> f64 {
    p.fault_zeroing_ns as f64 / p.fault_time_ns.max(1) as f64
}

#[test]
fn zeroing_dominates_2mb_faults_and_pre_zeroing_takes_it_out() {
    let runs = run(r#"
[reproduce]
kind = "hawkeye-table1"
variants = ["linux-4k", "linux-2m", "linux-2m-nozero", "hawkeye-2m"]
[machine]
profile = "haswell-e5-2690v3"
memory = "2GiB"
cores = 2
[policy]
name = "linux"
[[process]]
name = "touch"
start_ms = 60000
[[process.phase]]
op = "mmap"
buffer = "b"
size = "512MiB"
[[process.phase]]
op = "touch"
buffer = "b"
[[process.phase]]
op = "munmap"
buffer = "b"
"#);
    let (small, huge) = (
        get(&runs, "linux-4k", "touch"),
        get(&runs, "linux-2m", "touch"),
    );
    // Section 2.2: clearing is about 25% of a 4 KB fault and 97% of a 2 MB one.
    assert!(
        (0.15..0.40).contains(&zeroing_share(small)),
        "{}",
        zeroing_share(small)
    );
    assert!(zeroing_share(huge) > 0.9, "{}", zeroing_share(huge));
    assert_eq!((small.faults_4k, huge.faults_2m), (131_072, 256));
    let none = get(&runs, "linux-2m-nozero", "touch");
    let pre = get(&runs, "hawkeye-2m", "touch");
    for p in [none, pre] {
        assert!(
            huge.fault_mean_ns > 10.0 * p.fault_mean_ns,
            "{} vs {}",
            huge.fault_mean_ns,
            p.fault_mean_ns
        );
    }
    assert_eq!(
        pre.fault_zeroing_ns, 0,
        "the daemon zeroed all 2 GiB in 60 s"
    );
    assert!(pre.runtime_ns < huge.runtime_ns / 5);
}

const KV: &str = r#"
[machine]
profile = "haswell-e5-2690v3"
memory = "768MiB"
cores = 2
[policy]
name = "linux"
[sim]
mode = "sampled"
sample_interval_ms = 10000
time_limit_s = 5000
"#;

#[test]
fn hawkeye_recovers_bloat_only_under_pressure_and_keeps_huge_page_speed_without() {
    let text = format!(
        r#"
[reproduce]
kind = "hawkeye-table7"
variants = ["linux-4k", "linux-2m", "hawkeye", "hawkeye-pressure"]
{KV}
[[kv_server]]
name = "redis"
heap = "4GiB"
[[kv_server.step]]
op = "insert"
keys = 125_000
value_size = 4086
[[kv_server.step]]
op = "delete"
share = 0.6
[[kv_server.step]]
op = "idle"
duration_s = 400
[[kv_server.step]]
op = "idle"
duration_s = 100
[[kv_server.step]]
op = "get"
requests = 20_000
[[memhog]]
name = "pressure"
size = "384MiB"
start_ms = 420_000
hold_ms = 1_000_000
"#
    );
    let runs = run(&text);
    let rss = |v: &str| get(&runs, v, "redis").rss_bytes_end as f64;
    let rate = |v: &str| get(&runs, v, "redis").kv.last().unwrap().requests_per_s;
    let base = rss("linux-4k");
    assert!(
        rss("linux-2m") > 1.8 * base,
        "khugepaged re-bloats the deleted regions"
    );
    assert!(
        rss("hawkeye") > 1.8 * base,
        "without pressure HawkEye keeps the huge pages"
    );
    let pressed = rss("hawkeye-pressure");
    assert!(
        (pressed - base).abs() < 0.10 * base,
        "under pressure HawkEye recovers to base-page memory: {pressed} vs {base}"
    );
    assert!(rate("hawkeye") >= rate("linux-4k"));
    assert!((rate("hawkeye") - rate("linux-2m")).abs() < 0.02 * rate("linux-2m"));
}

#[test]
fn linux_runs_out_of_memory_in_figure1_where_hawkeye_does_not() {
    let text = format!(
        r#"
[reproduce]
kind = "hawkeye-fig1"
variants = ["linux-2m", "hawkeye"]
{KV}
[[kv_server]]
name = "redis"
heap = "4GiB"
[[kv_server.step]]
op = "insert"
keys = 172_000
value_size = 4086
[[kv_server.step]]
op = "delete"
share = 0.8
[[kv_server.step]]
op = "idle"
duration_s = 450
[[kv_server.step]]
op = "insert"
keys = 265
value_size = "2MiB"
"#
    );
    let runs = run(&text);
    let linux = get(&runs, "linux-2m", "redis");
    assert!(linux.oom, "Linux's bloat leaves no room for P3");
    assert!(linux.bloat_bytes_end > linux.useful_bytes_end);
    let hawkeye = get(&runs, "hawkeye", "redis");
    assert!(
        !hawkeye.oom && hawkeye.finished,
        "HawkEye recovers the bloat"
    );
    assert!(hawkeye.useful_bytes_end > linux.useful_bytes_end);
    assert_eq!(hawkeye.kv.len(), 3, "all three request phases ran");
}

#[test]
fn pre_zeroed_huge_pages_make_spinups_an_order_of_magnitude_faster() {
    let runs = run(r#"
[reproduce]
kind = "hawkeye-table8"
variants = ["linux-4k", "linux-2m", "hawkeye-2m"]
sets = [["jvm-spinup"], ["vm-spinup"]]
[machine]
profile = "haswell-e5-2690v3"
memory = "2GiB"
cores = 2
[policy]
name = "linux"
[[app]]
model = "jvm-spinup"
memory = "512MiB"
start_ms = 60000
[[app]]
model = "vm-spinup"
memory = "512MiB"
start_ms = 60000
"#);
    for w in ["jvm-spinup", "vm-spinup"] {
        let t = |v: &str| get(&runs, v, w).runtime_ns as f64;
        assert!(
            t("linux-2m") < t("linux-4k") / 2.0,
            "{w}: huge pages halve spin-up"
        );
        assert!(
            t("hawkeye-2m") < t("linux-2m") / 10.0,
            "{w}: pre-zeroing, 13.6x in the paper"
        );
    }
}

#[test]
fn non_temporal_pre_zeroing_interferes_far_less_than_caching_stores() {
    let runs = run(r#"
[reproduce]
kind = "hawkeye-fig10"
variants = ["prezero-off", "prezero-nt", "prezero-caching"]
[machine]
profile = "haswell-e5-2690v3"
memory = "2GiB"
cores = 2
[policy]
name = "linux"
[kernel.prezero]
rate_pages_per_s = 262144
period_ms = 1
stress = true
[sim]
daemon_core = 1
[[process]]
name = "cache-l3"
core = 0
[[process.phase]]
op = "mmap"
buffer = "ws"
size = "2560KiB"
[[process.phase]]
op = "touch"
buffer = "ws"
[[process.phase]]
op = "access"
buffer = "ws"
pattern = "uniform"
refs = 4_000_000
dependent = true
"#);
    let t = |v: &str| get(&runs, v, "cache-l3").runtime_ns as f64;
    let (nt, caching) = (
        t("prezero-nt") / t("prezero-off"),
        t("prezero-caching") / t("prezero-off"),
    );
    assert!(
        caching > 1.1,
        "caching stores evict the program's L3 lines: {caching}"
    );
    assert!(nt < 1.05, "non-temporal stores cost bandwidth only: {nt}");
    assert!(nt - 1.0 < (caching - 1.0) / 2.0);
}

#[test]
fn the_shipped_zeroing_files_validate() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/hawkeye");
    for (file, kind) in [
        ("fig1.toml", "hawkeye-fig1"),
        ("table1.toml", "hawkeye-table1"),
        ("table7.toml", "hawkeye-table7"),
        ("table8.toml", "hawkeye-table8"),
        ("fig10.toml", "hawkeye-fig10"),
    ] {
        let r = reproduce::load(&dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(r.kind, kind);
        assert!(!r.variants.is_empty());
    }
}
