//! `timeseries.csv` as a CSV reader sees it: the documented columns in their order, and
//! process names with commas and quotes read back as they were written.

mod common;

use common::run_ok;

/// The columns of `timeseries.csv`, in order, as `docs/output.md` lists them (this order
/// predates the `csv` crate and must not change).
const COLUMNS: &str = "time_ns,process,pid,references,mmu_overhead,huge_pages,rss_bytes,\
faults_4k,faults_2m,promotions,frames_free,collapses,splits,page_cache_pages,fmfi,\
tainted_pageblocks,pageblocks_unmovable,pageblocks_reclaimable,pages_migrated,useful_bytes,\
faults,zeroed_free_frames,zero_subpages_recovered,bandwidth_gbps";

/// Two processes, one named with a comma and quotes, sampled every millisecond.
const EXPERIMENT: &str = r#"[machine]
profile = "epyc-milan-kvm"
memory = "64MiB"
cores = 2

[sim]
seed = 1
sample_interval_ms = 1

[[process]]
name = 'a,"b"'

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
duration_ms = 5

[[process]]
name = "plain"

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
duration_ms = 5
"#;

#[test]
fn a_name_with_a_comma_and_quotes_round_trips_through_the_time_series() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("exp.toml");
    std::fs::write(&file, EXPERIMENT).unwrap();
    let out = dir.path().join("out");
    run_ok(&file, &out, &[]);

    let text = std::fs::read_to_string(out.join("timeseries.csv")).unwrap();
    assert_eq!(text.lines().next(), Some(COLUMNS));
    assert!(
        text.contains("\n1000000,\"a,\"\"b\"\"\","),
        "the name is quoted, its quotes doubled: {text}"
    );

    let mut reader = csv::Reader::from_path(out.join("timeseries.csv")).unwrap();
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert!(rows.iter().all(|r| r.len() == COLUMNS.split(',').count()));
    let named = |name: &str| rows.iter().filter(|r| &r[1] == name).count();
    // A system row at every sample and one more at the end, when the processes are gone.
    let samples = named("system") - 1;
    assert!(samples >= 5, "a sample every ms of a 5 ms run: {samples}");
    assert_eq!(named("a,\"b\""), samples, "one row per sample for a,\"b\"");
    assert_eq!(named("plain"), samples);
    assert_eq!(rows.len(), 3 * samples + 1, "nothing else: {rows:?}");
    for r in rows.iter().filter(|r| &r[1] == "a,\"b\"") {
        assert_eq!(&r[2], "1", "pid of the first process");
        let overhead = &r[4];
        assert_eq!(
            overhead.split('.').nth(1).map(str::len),
            Some(6),
            "mmu_overhead with 6 decimals: {overhead}"
        );
        assert!(r[14].is_empty(), "no fmfi in a process row");
    }
    let fmfi = &rows.iter().find(|r| &r[1] == "system").unwrap()[14];
    assert_eq!(fmfi.split('.').nth(1).map(str::len), Some(4), "{fmfi}");

    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let last = rows.last().unwrap();
    assert_eq!(&last[1], "system");
    assert_eq!(
        last[0].parse::<u64>().unwrap(),
        summary["system"]["sim_time_ns"].as_u64().unwrap(),
        "the last row is the state at the end"
    );
    assert_eq!(summary["processes"][0]["name"], "a,\"b\"");
}
