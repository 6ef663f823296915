//! Bad input to the real `hugemm` binary: every mistake exits with code 2 and a message
//! naming the file, the key and what was expected. Also: the examples validate, and a
//! tiny run writes a `config.resolved.toml` that reproduces the run byte for byte.

mod common;

use common::{without_provenance, BASE};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn hugemm(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hugemm"))
        .args(args)
        .output()
        .expect("starting hugemm")
}

/// `BASE` with `from` (which must occur exactly once) replaced by `to`.
fn edit(from: &str, to: &str) -> String {
    assert_eq!(
        BASE.matches(from).count(),
        1,
        "`{from}` must occur once in BASE"
    );
    BASE.replace(from, to)
}

/// Writes `text` to a temp file and runs `hugemm run` on it; returns the file's path
/// (as the binary will print it) and the output. The temp dir lives as long as `dir`.
fn run_text(dir: &tempfile::TempDir, text: &str) -> (String, Output) {
    let file = dir.path().join("exp.toml");
    std::fs::write(&file, text).unwrap();
    let out = dir.path().join("out");
    let output = hugemm(&[
        "run".as_ref(),
        file.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    (file.display().to_string(), output)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs `text` and asserts exit code 2 and a message naming the file, `key` and every
/// string of `expected`.
fn expect_bad(text: &str, key: &str, expected: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let (file, o) = run_text(&dir, text);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "exit code; stderr: {err}");
    assert!(
        err.contains(&file),
        "stderr does not name the file {file}: {err}"
    );
    assert!(
        err.contains(&format!("key `{key}`")),
        "stderr does not name key `{key}`: {err}"
    );
    for e in expected {
        assert!(err.contains(e), "stderr does not say {e:?}: {err}");
    }
    assert!(!err.contains("panicked"), "hugemm panicked: {err}");
    assert!(
        !dir.path().join("out").exists(),
        "bad input must not produce results"
    );
    err
}

#[test]
fn base_experiment_is_valid() {
    hugemm_cli::config::parse(BASE, "base.toml", Path::new(".")).expect("BASE must be valid");
}

#[test]
fn unknown_top_level_key() {
    expect_bad(
        &format!("bogus = 1\n{BASE}"),
        "bogus",
        &["unknown field `bogus`", "expected one of `machine`"],
    );
}

#[test]
fn unknown_key_in_machine() {
    expect_bad(
        &edit("cores = 1\n", "cores = 1\nfoo = 2\n"),
        "machine.foo",
        &[
            "unknown field `foo`",
            "expected one of `profile`, `memory`, `cores`",
        ],
    );
}

#[test]
fn unknown_key_in_phase() {
    expect_bad(
        &edit("refs = 1000\n", "refs = 1000\nrefz = 1\n"),
        "process[0].phase[2].refz",
        &["unknown field `refz`"],
    );
}

#[test]
fn memory_of_wrong_type() {
    expect_bad(
        &edit("memory = \"64MiB\"", "memory = true"),
        "machine.memory",
        &["invalid type: boolean `true`", "expected a size"],
    );
    expect_bad(
        &edit("memory = \"64MiB\"", "memory = 1.5"),
        "machine.memory",
        &["floating point", "expected a size"],
    );
}

#[test]
fn seed_of_wrong_type() {
    expect_bad(
        &edit("seed = 1", "seed = \"x\""),
        "sim.seed",
        &["invalid type: string \"x\"", "expected i64"],
    );
}

#[test]
fn memory_larger_than_1_tib() {
    expect_bad(
        &edit("memory = \"64MiB\"", "memory = \"2TiB\""),
        "machine.memory",
        &[
            "a multiple of 4 MiB from 64 MiB to 1 TiB",
            "found 2199023255552 bytes",
        ],
    );
}

#[test]
fn memory_not_a_multiple_of_4_mib() {
    expect_bad(
        &edit("memory = \"64MiB\"", "memory = \"66MiB\""),
        "machine.memory",
        &[
            "a multiple of 4 MiB from 64 MiB to 1 TiB",
            "found 69206016 bytes",
        ],
    );
}

#[test]
fn memory_smaller_than_64_mib() {
    expect_bad(
        &edit("memory = \"64MiB\"", "memory = \"60MiB\""),
        "machine.memory",
        &["from 64 MiB to 1 TiB"],
    );
}

#[test]
fn zero_cores() {
    expect_bad(
        &edit("cores = 1", "cores = 0"),
        "machine.cores",
        &["an integer from 1 to 1024, found 0"],
    );
}

#[test]
fn negative_sampled_period() {
    expect_bad(
        &edit(
            "seed = 1\n",
            "seed = 1\nmode = \"sampled\"\n\n[sim.sampled]\nperiod_ms = -5\n",
        ),
        "sim.sampled.period_ms",
        &["a number from", "found -5"],
    );
}

#[test]
fn a_phase_warmup_whose_most_is_below_its_least() {
    expect_bad(
        &edit(
            "seed = 1\n",
            "seed = 1\nmode = \"sampled\"\n\n[sim.sampled]\nphase_warmup_refs = 200000\nphase_warmup_max_refs = 1000\n",
        ),
        "sim.sampled.phase_warmup_max_refs",
        &["at least sim.sampled.phase_warmup_refs (200000), found 1000"],
    );
}

#[test]
fn negative_scan_sleep() {
    expect_bad(
        &format!("{BASE}\n[policy.linux.khugepaged]\nscan_sleep_millisecs = -1\n"),
        "policy.linux.khugepaged.scan_sleep_millisecs",
        &["an integer from 1 to", "found -1"],
    );
}

#[test]
fn unknown_policy_name() {
    expect_bad(
        &format!("{BASE}\n[policy]\nname = \"hawkeye2\"\n"),
        "policy.name",
        &["one of linux", "found \"hawkeye2\""],
    );
}

#[test]
fn unknown_thp_mode() {
    expect_bad(
        &format!("{BASE}\n[policy.linux]\nenabled = \"sometimes\"\n"),
        "policy.linux.enabled",
        &["one of always, madvise, never", "found \"sometimes\""],
    );
}

#[test]
fn use_zero_page_of_wrong_type() {
    expect_bad(
        &format!("{BASE}\n[policy.linux]\nuse_zero_page = 0\n"),
        "policy.linux.use_zero_page",
        &["invalid type: integer `0`", "expected a boolean"],
    );
}

#[test]
fn migrate_reserve_of_wrong_type() {
    expect_bad(
        &format!("{BASE}\n[kernel]\nmigrate_reserve = \"linux-4.1\"\n"),
        "kernel.migrate_reserve",
        &["invalid type: string \"linux-4.1\"", "expected a boolean"],
    );
}

#[test]
fn shrink_underused_of_wrong_type() {
    expect_bad(
        &format!("{BASE}\n[policy.linux]\nshrink_underused = 1\n"),
        "policy.linux.shrink_underused",
        &["invalid type: integer `1`", "expected a boolean"],
    );
    expect_bad(
        &format!("{BASE}\n[policy.linux]\nshrink_underused = \"never\"\n"),
        "policy.linux.shrink_underused",
        &["invalid type: string \"never\"", "expected a boolean"],
    );
}

#[test]
fn unknown_profile_name() {
    expect_bad(
        &edit("\"epyc-milan-kvm\"", "\"nope\""),
        "machine.profile",
        &["epyc-milan-kvm", "or a path to a profile", "found \"nope\""],
    );
}

#[test]
fn broken_profile_file_is_named_once() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("prof.toml"), "foo = 1\n").unwrap();
    let (file, o) = run_text(&dir, &edit("\"epyc-milan-kvm\"", "\"prof.toml\""));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&file) && err.contains("key `machine.profile`"),
        "{err}"
    );
    assert!(
        err.contains("prof.toml:1: key `foo`: unknown field `foo`"),
        "{err}"
    );
    assert_eq!(
        err.matches("unknown field `foo`").count(),
        1,
        "the profile's error is repeated: {err}"
    );
}

#[test]
fn sampled_table_with_exact_mode() {
    expect_bad(
        &edit(
            "seed = 1\n",
            "seed = 1\nmode = \"exact\"\n\n[sim.sampled]\nperiod_ms = 5\n",
        ),
        "sim.sampled",
        &["no [sim.sampled] table when sim.mode is \"exact\""],
    );
}

#[test]
fn buffer_bigger_than_memory() {
    expect_bad(
        &edit("size = \"4MiB\"", "size = \"128MiB\""),
        "process[0].phase[0].size",
        &[
            "no larger than the machine's memory (67108864 bytes)",
            "found 134217728",
        ],
    );
}

#[test]
fn access_to_a_buffer_never_mapped() {
    expect_bad(
        &format!("{BASE}\n[[process.phase]]\nop = \"access\"\nbuffer = \"nope\"\nrefs = 5\n"),
        "process[0].phase[3].buffer",
        &["a buffer mapped by an earlier mmap phase", "found \"nope\""],
    );
}

#[test]
fn access_after_munmap() {
    expect_bad(
        &format!("{BASE}\n[[process.phase]]\nop = \"munmap\"\nbuffer = \"b\"\n\n[[process.phase]]\nop = \"touch\"\nbuffer = \"b\"\n"),
        "process[0].phase[4].buffer",
        &["a buffer mapped by an earlier mmap phase", "found \"b\""],
    );
}

#[test]
fn phase_key_not_valid_for_its_op() {
    expect_bad(
        &edit("size = \"4MiB\"\n", "size = \"4MiB\"\nstride = 64\n"),
        "process[0].phase[0].stride",
        &["no `stride` for op \"mmap\" (it takes: buffer, size, advice)"],
    );
    expect_bad(
        &edit("refs = 1000\n", "refs = 1000\nexponent = 1.2\n"),
        "process[0].phase[2].exponent",
        &["no `exponent` for op \"access\""],
    );
}

#[test]
fn both_refs_and_duration() {
    expect_bad(
        &edit("refs = 1000\n", "refs = 1000\nduration_ms = 5\n"),
        "process[0].phase[2].refs",
        &["exactly one of `refs` and `duration_ms`"],
    );
}

#[test]
fn write_content_out_of_range() {
    expect_bad(
        &edit("refs = 1000\n", "refs = 1000\nnonzero_share = 1.5\n"),
        "process[0].phase[2].nonzero_share",
        &["a number from 0 to 1, found 1.5"],
    );
    expect_bad(
        &edit(
            "op = \"touch\"\nbuffer = \"b\"\n",
            "op = \"touch\"\nbuffer = \"b\"\nnonzero_share = -0.5\n",
        ),
        "process[0].phase[1].nonzero_share",
        &["a number from 0 to 1, found -0.5"],
    );
    expect_bad(
        &edit(
            "op = \"touch\"\nbuffer = \"b\"\n",
            "op = \"touch\"\nbuffer = \"b\"\nmean_first_nonzero = 5000\n",
        ),
        "process[0].phase[1].mean_first_nonzero",
        &["a number from 0 to 4095, found 5000"],
    );
    expect_bad(
        &edit("refs = 1000\n", "refs = 1000\nmean_first_nonzero = nan\n"),
        "process[0].phase[2].mean_first_nonzero",
        &["a number from 0 to 4095, found NaN"],
    );
    expect_bad(
        &edit("refs = 1000\n", "refs = 1000\nnonzero_share = \"all\"\n"),
        "process[0].phase[2].nonzero_share",
        &["invalid type: string \"all\"", "expected f64"],
    );
}

#[test]
fn write_content_keys_only_for_touch_and_access() {
    expect_bad(
        &edit(
            "size = \"4MiB\"\n",
            "size = \"4MiB\"\nnonzero_share = 0.5\n",
        ),
        "process[0].phase[0].nonzero_share",
        &["no `nonzero_share` for op \"mmap\" (it takes: buffer, size, advice)"],
    );
    expect_bad(
        &format!(
            "{BASE}\n[[process.phase]]\nop = \"sleep\"\nduration_ms = 1\nmean_first_nonzero = 9\n"
        ),
        "process[0].phase[3].mean_first_nonzero",
        &["no `mean_first_nonzero` for op \"sleep\""],
    );
}

#[test]
fn bad_size_string() {
    expect_bad(
        &edit("size = \"4MiB\"", "size = \"4 XB\""),
        "process[0].phase[0].size",
        &["a size such as 4096", "found \"4 XB\""],
    );
    expect_bad(
        &edit("size = \"4MiB\"", "size = -4096"),
        "process[0].phase[0].size",
        &["a non-negative size, found -4096"],
    );
}

#[test]
fn madvise_range_past_the_end_even_when_it_overflows() {
    let madvise = "\n[[process.phase]]\nop = \"madvise\"\nbuffer = \"b\"\nadvice = \"hugepage\"\n";
    expect_bad(
        &format!("{BASE}{madvise}offset = \"2MiB\"\nlength = \"4MiB\"\n"),
        "process[0].phase[3].length",
        &["a page-aligned range inside the buffer (4194304 bytes)"],
    );
    // 2^63 + 2^63 wraps to 0 in u64: must still be refused, not accepted (or panic).
    expect_bad(
        &format!("{BASE}{madvise}offset = \"8388608TiB\"\nlength = \"8388608TiB\"\n"),
        "process[0].phase[3].length",
        &[
            "a page-aligned range inside the buffer",
            "offset 9223372036854775808",
        ],
    );
}

#[test]
fn no_process() {
    let text = BASE.split("[[process]]").next().unwrap();
    expect_bad(
        text,
        "process",
        &["at least one [[process]], [[kernel_build]]"],
    );
}

#[test]
fn no_machine_table_names_its_first_missing_key() {
    let text = BASE.replace(
        "[machine]\nprofile = \"epyc-milan-kvm\"\nmemory = \"64MiB\"\ncores = 1\n",
        "",
    );
    assert!(!text.contains("[machine]"));
    expect_bad(
        &text,
        "machine.profile",
        &["expected a profile: one of", "epyc-milan-kvm"],
    );
}

#[test]
fn malformed_toml_names_the_line() {
    expect_bad(
        &edit("cores = 1", "cores = = 1"),
        "(file)",
        &["exp.toml:4:9: "],
    );
    expect_bad(
        &edit("cores = 1", "memory = 5"),
        "(file)",
        &["exp.toml:4:1: ", "duplicate key `memory`"],
    );
    expect_bad(&edit("[sim]", "[sim"), "(file)", &["exp.toml:6:5: "]);
    // toml's own message is empty for a control character in a comment.
    expect_bad(
        &edit("[sim]", "#\u{1}\n[sim]"),
        "(file)",
        &["exp.toml:6:2: ", "malformed TOML"],
    );
}

#[test]
fn missing_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("missing.toml");
    let o = hugemm(&[
        "run".as_ref(),
        file.as_os_str(),
        "--out".as_ref(),
        dir.path().join("out").as_os_str(),
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("{}: cannot read", file.display())),
        "{err}"
    );
    let os = std::fs::read_to_string(&file).unwrap_err().to_string();
    assert_eq!(
        err.matches(&os).count(),
        1,
        "the I/O error should be said once: {err}"
    );
}

#[test]
fn bad_command_lines_exit_2() {
    let cases: [(&[&str], &str); 4] = [
        (&["frobnicate"], "unrecognized subcommand 'frobnicate'"),
        (
            &["run", "x.toml", "--seed", "abc"],
            "invalid value 'abc' for '--seed <SEED>'",
        ),
        (&["run"], "required arguments were not provided"),
        (
            &["run", "x.toml", "--bogus"],
            "unexpected argument '--bogus'",
        ),
    ];
    for (args, expected) in cases {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_ref()).collect();
        let o = hugemm(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(expected), "{args:?}: {err}");
    }
}

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

#[test]
fn examples_load_and_their_resolved_form_reparses() {
    for (name, processes, cores) in [
        ("alloc-and-touch.toml", 1, 1),
        ("random-4g.toml", 1, 1),
        ("three-processes-sampled.toml", 3, 3),
    ] {
        let path = example(name);
        let loaded = hugemm_cli::config::load(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(loaded.experiment.processes.len(), processes, "{name}");
        assert_eq!(loaded.experiment.cores, cores, "{name}");
        // The resolved form (written beside results) must mean the same experiment.
        let text = toml::to_string(&loaded.resolved).unwrap();
        let again =
            hugemm_cli::config::parse(&text, "resolved.toml", hugemm_cli::config::base_dir(&path))
                .unwrap_or_else(|e| panic!("{name} resolved: {e}\n{text}"));
        assert_eq!(
            format!("{:?}", again.experiment),
            format!("{:?}", loaded.experiment),
            "{name}"
        );
    }
}

#[test]
fn tiny_run_writes_outputs_and_its_resolved_config_reproduces_it() {
    let dir = tempfile::tempdir().unwrap();
    let (_, o) = run_text(&dir, BASE);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = dir.path().join("out");
    for f in ["config.resolved.toml", "summary.json", "timeseries.csv"] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let p = &summary["processes"][0];
    assert_eq!(p["name"], "p");
    for k in ["faults_4k", "faults_2m", "references", "runtime_ns"] {
        assert!(p[k].is_u64(), "processes[0].{k} is not a count: {p}");
    }
    assert!(p["references"].as_u64().unwrap() >= 1000, "{p}");
    assert_eq!(summary["system"]["seed"], 1);

    // Run the resolved file, same seed, into a second directory: same bytes.
    let out2 = dir.path().join("out2");
    let resolved = out.join("config.resolved.toml");
    let o = hugemm(&[
        "run".as_ref(),
        resolved.as_os_str(),
        "--out".as_ref(),
        out2.as_os_str(),
        "--seed".as_ref(),
        "1".as_ref(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for f in ["summary.json", "timeseries.csv", "config.resolved.toml"] {
        let (a, b) = (
            without_provenance(&out.join(f)),
            without_provenance(&out2.join(f)),
        );
        assert!(
            a == b,
            "{f} differs between the run and the run of its resolved config"
        );
    }
}

#[test]
fn a_closed_stdout_ends_the_run_quietly_instead_of_panicking() {
    // `hugemm run FILE | head -1` closes the pipe early; that must not panic (exit 101).
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("exp.toml");
    std::fs::write(&file, BASE).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_hugemm"))
        .arg("run")
        .arg(&file)
        .arg("--out")
        .arg(dir.path().join("out"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the reader goes away before anything is printed
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.code(), Some(0), "{err}");
}

#[test]
fn unknown_fallback_policy_lists_the_valid_ones() {
    let text = BASE.replace(
        "[[process]]",
        "[kernel]\nfallback = \"best\"\n\n[[process]]",
    );
    expect_bad(
        &text,
        "kernel.fallback",
        &["one of default, opbs", "\"best\""],
    );
}

#[test]
fn per_cpu_lists_of_wrong_type() {
    let text = BASE.replace(
        "[[process]]",
        "[kernel]\nper_cpu_lists = \"yes\"\n\n[[process]]",
    );
    expect_bad(
        &text,
        "kernel.per_cpu_lists",
        &["expected a boolean", "\"yes\""],
    );
}

#[test]
fn min_free_kbytes_above_half_the_memory() {
    let text = BASE.replace(
        "[[process]]",
        "[kernel]\nmin_free_kbytes = 99999999\n\n[[process]]",
    );
    expect_bad(
        &text,
        "kernel.min_free_kbytes",
        &["an integer from 1 to", "99999999"],
    );
}

#[test]
fn negative_watermark_boost_factor() {
    let text = BASE.replace(
        "[[process]]",
        "[kernel]\nwatermark_boost_factor = -1\n\n[[process]]",
    );
    expect_bad(
        &text,
        "kernel.watermark_boost_factor",
        &["an integer from 0 to 100000", "-1"],
    );
}

#[test]
fn watermark_scale_factor_out_of_range() {
    let text = BASE.replace(
        "[[process]]",
        "[kernel]\nwatermark_scale_factor = 3001\n\n[[process]]",
    );
    expect_bad(
        &text,
        "kernel.watermark_scale_factor",
        &["an integer from 0 to 3000", "3001"],
    );
}

#[test]
fn buddy_merge_likely_of_wrong_type() {
    expect_bad(
        &format!("{BASE}\n[kernel]\nbuddy_merge_likely = \"yes\"\n"),
        "kernel.buddy_merge_likely",
        &["invalid type: string \"yes\"", "expected a boolean"],
    );
}

#[test]
fn watermark_check_not_a_known_one() {
    expect_bad(
        &format!("{BASE}\n[kernel]\nwatermark_check = \"linux-4.4\"\n"),
        "kernel.watermark_check",
        &["linux-4.4", "order-0", "linux-4.1"],
    );
}

#[test]
fn boot_order_not_a_known_one() {
    expect_bad(
        &format!("{BASE}\n[kernel]\nboot_order = \"top-down\"\n"),
        "kernel.boot_order",
        &["top-down", "lowest-first", "highest-first"],
    );
}

#[test]
fn per_cpu_sizes_without_the_lists_or_not_a_known_one() {
    expect_bad(
        &format!("{BASE}\n[kernel]\nper_cpu_sizes = \"linux-4.1\"\n"),
        "kernel.per_cpu_sizes",
        &["kernel.per_cpu_lists = true beside it"],
    );
    expect_bad(
        &format!("{BASE}\n[kernel]\nper_cpu_lists = true\nper_cpu_sizes = \"linux-5\"\n"),
        "kernel.per_cpu_sizes",
        &["linux-5", "linux-6", "linux-4.1"],
    );
    // The lists turned off by name keep the sizes for later: no error.
    let text = format!("{BASE}\n[kernel]\nper_cpu_lists = false\nper_cpu_sizes = \"linux-4.1\"\n");
    hugemm_cli::config::parse(&text, "off.toml", Path::new(".")).expect("sizes beside lists off");
}

/// `file_write` takes `file_read`'s keys and refuses others by its own name; it is a
/// write, so with buffer heads on its pages carry them.
#[test]
fn file_write_is_a_phase_of_its_own_with_file_reads_keys() {
    let phase = |extra: &str| {
        format!(
            "{BASE}\n[[process.phase]]\nop = \"file_write\"\nfile = \"o\"\nsize = \"64KiB\"\n{extra}"
        )
    };
    expect_bad(
        &phase("buffer = \"b\"\n"),
        "process[0].phase[3].buffer",
        &["\"file_write\""],
    );
    expect_bad(
        &format!("{BASE}\n[[process.phase]]\nop = \"file_write\"\nfile = \"o\"\n"),
        "process[0].phase[3].size",
        &["the bytes to read or write"],
    );
    let exp = hugemm_cli::config::parse(&phase(""), "w.toml", Path::new(".")).expect("a write");
    let last = exp.experiment.processes[0].phases.last().unwrap().clone();
    assert!(
        matches!(last, hugemm_workload::Phase::FileWrite { bytes: 65536, .. }),
        "{last:?}"
    );
}

#[test]
fn a_shrinker_must_be_one_the_model_has() {
    expect_bad(
        &format!("{BASE}\n[kernel]\nshrinker = \"linux-6\"\n"),
        "kernel.shrinker",
        &["\"linux-6\"", "upper-bound", "linux-4.1"],
    );
    expect_bad(
        &format!("{BASE}\n[kernel]\nshrinker = true\n"),
        "kernel.shrinker",
        &["invalid type: boolean `true`"],
    );
    let text = format!("{BASE}\n[kernel]\nshrinker = \"linux-4.1\"\n");
    let exp = hugemm_cli::config::parse(&text, "s.toml", Path::new(".")).expect("a known one");
    assert_eq!(
        exp.experiment.kernel.shrinker,
        hugemm_mm::Shrinker::Linux4_1
    );
}

#[test]
fn clear_pages_of_wrong_type() {
    expect_bad(
        &format!("{BASE}\n[kernel]\nclear_pages = \"no\"\n"),
        "kernel.clear_pages",
        &["invalid type: string \"no\"", "expected a boolean"],
    );
}

#[test]
fn preserve_huge_blocks_of_wrong_type() {
    expect_bad(
        &format!("{BASE}\n[kernel]\npreserve_huge_blocks = \"on\"\n"),
        "kernel.preserve_huge_blocks",
        &["invalid type: string \"on\"", "expected a boolean"],
    );
}

#[test]
fn unknown_compaction_mode_lists_the_valid_ones() {
    expect_bad(
        &format!("{BASE}\n[kernel]\ncompaction = \"hole_aware\"\n"),
        "kernel.compaction",
        &[
            "one of linux, hole-aware",
            "\"hole_aware\"",
            "did you mean \"hole-aware\"",
        ],
    );
}

#[test]
fn compaction_mode_of_wrong_type() {
    expect_bad(
        &format!("{BASE}\n[kernel]\ncompaction = 1\n"),
        "kernel.compaction",
        &["invalid type: integer `1`", "expected a string"],
    );
}

#[test]
fn unknown_accessed_bits_mode_lists_the_valid_ones() {
    expect_bad(
        &format!("{BASE}\n[kernel]\naccessed_bits = \"every_reference\"\n"),
        "kernel.accessed_bits",
        &[
            "one of walk, every-reference",
            "\"every_reference\"",
            "did you mean \"every-reference\"",
        ],
    );
    expect_bad(
        &format!("{BASE}\n[kernel]\naccessed_bits = \"always\"\n"),
        "kernel.accessed_bits",
        &["one of walk, every-reference", "\"always\""],
    );
}

#[test]
fn accessed_bits_mode_of_wrong_type() {
    expect_bad(
        &format!("{BASE}\n[kernel]\naccessed_bits = true\n"),
        "kernel.accessed_bits",
        &["invalid type: boolean `true`", "expected a string"],
    );
}

/// `BASE` with a `[kernel.prezero]` table of `keys` appended.
fn with_prezero(keys: &str) -> String {
    format!("{BASE}\n[kernel.prezero]\n{keys}")
}

#[test]
fn unknown_prezero_stores_and_lists_list_the_valid_ones() {
    expect_bad(
        &with_prezero("stores = \"fast\"\n"),
        "kernel.prezero.stores",
        &["one of nt, caching", "found \"fast\""],
    );
    expect_bad(
        &with_prezero("lists = \"linux\"\n"),
        "kernel.prezero.lists",
        &["one of paper, released", "found \"linux\""],
    );
}

#[test]
fn prezero_rate_and_period_out_of_range() {
    for (keys, key, says) in [
        (
            "rate_pages_per_s = 0",
            "rate_pages_per_s",
            "an integer from 1 to 1099511627776, found 0",
        ),
        (
            "rate_pages_per_s = 1099511627777",
            "rate_pages_per_s",
            "an integer from 1 to 1099511627776, found 1099511627777",
        ),
        (
            "period_ms = 0",
            "period_ms",
            "a number from 0.001 to 1000000000, found 0",
        ),
        (
            "period_ms = -1",
            "period_ms",
            "a number from 0.001 to 1000000000, found -1",
        ),
        (
            "period_ms = 2e9",
            "period_ms",
            "a number from 0.001 to 1000000000, found 2000000000",
        ),
        (
            "period_ms = inf",
            "period_ms",
            "a number from 0.001 to 1000000000, found inf",
        ),
    ] {
        expect_bad(
            &with_prezero(&format!("{keys}\n")),
            &format!("kernel.prezero.{key}"),
            &[says],
        );
    }
}

#[test]
fn prezero_knobs_of_wrong_type_or_unknown() {
    expect_bad(
        &with_prezero("enabled = 1\n"),
        "kernel.prezero.enabled",
        &["invalid type: integer `1`", "expected a boolean"],
    );
    expect_bad(
        &with_prezero("stress = \"yes\"\n"),
        "kernel.prezero.stress",
        &["invalid type: string \"yes\"", "expected a boolean"],
    );
    expect_bad(
        &with_prezero("rate_pages_per_s = 2.5\n"),
        "kernel.prezero.rate_pages_per_s",
        &["invalid type: floating point `2.5`", "expected i64"],
    );
    expect_bad(
        &with_prezero("stores = true\n"),
        "kernel.prezero.stores",
        &["invalid type: boolean `true`", "expected a string"],
    );
    expect_bad(
        &with_prezero("threads = 2\n"),
        "kernel.prezero.threads",
        &["unknown field `threads`", "expected one of `enabled`"],
    );
}

#[test]
fn kernel_alloc_with_a_bad_lifetime_is_refused() {
    let text = format!(
        "{BASE}\n[[process.phase]]\nop = \"kernel_alloc\"\nsize = \"1MiB\"\nlifetime = \"fixed\"\n"
    );
    expect_bad(
        &text,
        "process[0].phase[3].lifetime_ms",
        &["a time in ms", "fixed"],
    );
}

#[test]
fn kernel_memory_held_until_a_deletion_needs_its_file_and_only_then() {
    let phase = |extra: &str| {
        format!("{BASE}\n[[process.phase]]\nop = \"kernel_alloc\"\nsize = \"1MiB\"\n{extra}")
    };
    expect_bad(
        &phase("lifetime = \"until-deleted\"\n"),
        "process[0].phase[3].file",
        &["the name of a file"],
    );
    expect_bad(
        &phase("lifetime = \"forever\"\nfile = \"a.o\"\n"),
        "process[0].phase[3].file",
        &["no file for lifetime \"forever\""],
    );
}

#[test]
fn kernel_build_memory_until_clean_has_no_lifetime_of_its_own() {
    let text = format!(
        "{BASE}\n[[kernel_build]]\nname = \"make\"\nreclaimable_until_clean = true\nreclaimable_lifetime_s = 60\n"
    );
    expect_bad(
        &text,
        "kernel_build[0].reclaimable_lifetime_s",
        &["no lifetime with reclaimable_until_clean = true"],
    );
}

#[test]
fn kernel_build_lookups_need_names_to_draw_from() {
    let text = format!("{BASE}\n[[kernel_build]]\nname = \"make\"\nmissing_lookups = 8\n");
    expect_bad(
        &text,
        "kernel_build[0].missing_lookups",
        &["0 without missing_names"],
    );
    let text = format!("{BASE}\n[[kernel_build]]\nname = \"make\"\ndirectories = -1\n");
    expect_bad(&text, "kernel_build[0].directories", &["-1"]);
}

#[test]
fn a_lookup_says_whether_its_name_exists() {
    let phase = |extra: &str| format!("{BASE}\n[[process.phase]]\nop = \"file_lookup\"\n{extra}");
    expect_bad(
        &phase("file = \"include/linux\"\n"),
        "process[0].phase[3].found",
        &["true (the name exists", "false (a negative dentry)"],
    );
    expect_bad(
        &phase("found = true\n"),
        "process[0].phase[3].file",
        &["the name of a file"],
    );
    expect_bad(
        &phase("file = \"a.h\"\nfound = false\nsize = \"4KiB\"\n"),
        "process[0].phase[3].size",
        &["expected no `size` for op \"file_lookup\" (it takes: file, found)"],
    );
}

#[test]
fn a_reproduction_file_is_refused_by_run() {
    let text = format!("[reproduce]\nkind = \"apsys16-table2\"\n\n{BASE}");
    expect_bad(&text, "reproduce", &["hugemm reproduce"]);
}

#[test]
fn kernel_build_with_a_heap_range_upside_down_is_refused() {
    let text = format!(
        "{BASE}\n[[kernel_build]]\nname = \"make\"\nheap_min = \"8MiB\"\nheap_max = \"4MiB\"\n"
    );
    expect_bad(&text, "kernel_build[0].heap_max", &["at least heap_min"]);
}

#[test]
fn kernel_build_slab_order_shares_must_be_three_percentages_summing_to_100() {
    for shares in ["[50, 50]", "[50, 40, 5]", "[-1, 51, 50]", "[0, 0, 101]"] {
        let text = format!(
            "{BASE}\n[[kernel_build]]\nname = \"make\"\nreclaimable_order_percent = {shares}\n"
        );
        expect_bad(
            &text,
            "kernel_build[0].reclaimable_order_percent",
            &["summing to 100"],
        );
    }
}

#[test]
fn slab_objects_must_fit_their_slabs() {
    for sizes in [
        "[192, 584]",
        "[0, 584, 1128]",
        "[4097, 584, 1128]",
        "[192, 584, 16385]",
    ] {
        let text = format!(
            "{BASE}\n[[kernel_build]]\nname = \"make\"\nreclaimable_object_sizes = {sizes}\n"
        );
        expect_bad(
            &text,
            "kernel_build[0].reclaimable_object_sizes",
            &["three object sizes", "16384"],
        );
    }
    let text = format!(
        "{BASE}\n[[kernel_build]]\nname = \"make\"\nunmovable_slab_order = 0\nunmovable_object_size = \"8KiB\"\n"
    );
    expect_bad(
        &text,
        "kernel_build[0].unmovable_object_size",
        &["its slab's 4096 bytes (order 0)", "found 8192"],
    );
    let text = format!(
        "{BASE}\n[[process.phase]]\nop = \"kernel_alloc\"\nsize = \"1MiB\"\nobject_size = \"5KiB\"\n"
    );
    expect_bad(
        &text,
        "process[0].phase[3].object_size",
        &["its slab's 4096 bytes"],
    );
}

/// `BASE` with an `[[app]]` table of `keys` appended.
fn with_app(keys: &str) -> String {
    format!("{BASE}\n[[app]]\n{keys}")
}

#[test]
fn app_with_an_unknown_key_is_refused() {
    expect_bad(
        &with_app("model = \"cg.D\"\nmemory = \"64MiB\"\nrefs = 10\nthreads = 4\n"),
        "app[0].threads",
        &["unknown field `threads`", "expected one of `model`"],
    );
}

#[test]
fn app_with_an_unknown_or_missing_model_is_refused() {
    expect_bad(
        &with_app("model = \"cg\"\nmemory = \"64MiB\"\nrefs = 10\n"),
        "app[0].model",
        &["one of graph500, xsbench, cg.D, mg.D", "found \"cg\""],
    );
    expect_bad(
        &with_app("memory = \"64MiB\"\nrefs = 10\n"),
        "app[0].model",
        &["one of graph500"],
    );
    expect_bad(
        &with_app("model = 3\nmemory = \"64MiB\"\nrefs = 10\n"),
        "app[0].model",
        &["invalid type: integer `3`"],
    );
}

#[test]
fn app_memory_must_be_pages_within_the_machine() {
    for (memory, found) in [
        ("\"32MiB\"", "found 33554432"),
        ("\"128MiB\"", "found 134217728"),
        ("67112960", "found 67112960"),
    ] {
        expect_bad(
            &with_app(&format!(
                "model = \"random\"\nmemory = {memory}\nrefs = 10\n"
            )),
            "app[0].memory",
            &[
                "a multiple of 4 KiB from 64 MiB to the machine's memory",
                found,
            ],
        );
    }
    expect_bad(
        &with_app("model = \"random\"\nrefs = 10\n"),
        "app[0].memory",
        &["the memory the application uses"],
    );
    expect_bad(
        &with_app("model = \"random\"\nmemory = true\nrefs = 10\n"),
        "app[0].memory",
        &["expected a size"],
    );
}

#[test]
fn app_needs_exactly_one_run_length() {
    for keys in ["", "refs = 10\nduration_s = 1.0\n"] {
        expect_bad(
            &with_app(&format!("model = \"mg.D\"\nmemory = \"64MiB\"\n{keys}")),
            "app[0].refs",
            &["exactly one of `refs`", "`duration_s`"],
        );
    }
    expect_bad(
        &with_app("model = \"mg.D\"\nmemory = \"64MiB\"\nrefs = 0\n"),
        "app[0].refs",
        &["an integer from 1"],
    );
    expect_bad(
        &with_app("model = \"mg.D\"\nmemory = \"64MiB\"\nduration_s = -1\n"),
        "app[0].duration_s",
        &["a number from"],
    );
    expect_bad(
        &with_app("model = \"mg.D\"\nmemory = \"64MiB\"\nduration_s = nan\n"),
        "app[0].duration_s",
        &["a number from"],
    );
}

#[test]
fn app_names_and_counts_are_checked() {
    expect_bad(
        &with_app("model = \"xsbench\"\nname = \"a\\nb\"\nmemory = \"64MiB\"\nrefs = 10\n"),
        "app[0].name",
        &["a non-empty name on one line", "found \"a\\nb\""],
    );
    expect_bad(
        &with_app("model = \"xsbench\"\ncount = 0\nmemory = \"64MiB\"\nrefs = 10\n"),
        "app[0].count",
        &["an integer from 1 to 4096, found 0"],
    );
    expect_bad(
        &with_app("model = \"xsbench\"\nmemory = \"64MiB\"\nrefs = 10\nstart_ms = -5\n"),
        "app[0].start_ms",
        &["a number from 0"],
    );
}

#[test]
fn a_server_run_too_long_to_generate_is_refused() {
    for model in ["redis", "redis-uneven", "memcached"] {
        expect_bad(
            &with_app(&format!(
                "model = \"{model}\"\nmemory = \"64MiB\"\nduration_s = 1e9\n"
            )),
            "app[0].duration_s",
            &[&format!("a {model} run of at most 100000 bursts of 100 ms")],
        );
        expect_bad(
            &with_app(&format!(
                "model = \"{model}\"\nmemory = \"64MiB\"\ncount = 4096\n\
                 refs = 9223372036854775807\n"
            )),
            "app[0].refs",
            &[&format!("a {model} run of at most")],
        );
    }
    // Two references a memcached request, four a redis one: the same bursts hold half
    // the references.
    expect_bad(
        &with_app("model = \"memcached\"\nmemory = \"64MiB\"\nduration_s = 1e5\n"),
        "app[0].duration_s",
        &["(10000 s, or 200000000 references), found 1000000 x 1"],
    );
}

#[test]
fn apps_that_run_to_completion_take_no_run_length() {
    for model in ["sparsehash", "hacc-io", "jvm-spinup", "vm-spinup"] {
        for (keys, key) in [
            ("refs = 10\n", "refs"),
            ("duration_s = 1.0\n", "duration_s"),
            ("refs = 10\nduration_s = 1.0\n", "refs"),
        ] {
            expect_bad(
                &with_app(&format!("model = \"{model}\"\nmemory = \"64MiB\"\n{keys}")),
                &format!("app[0].{key}"),
                &[&format!(
                    "no `{key}` for model \"{model}\": it runs until its initialisation is done"
                )],
            );
        }
    }
}

#[test]
fn apps_run_and_are_named_after_their_table() {
    let dir = tempfile::tempdir().unwrap();
    let machine = BASE.split("[[process]]").next().unwrap();
    let text = machine.replacen("\"64MiB\"", "\"256MiB\"", 1)
        + "[[app]]\nmodel = \"mg.D\"\nmemory = \"64MiB\"\nrefs = 1000\n\n\
           [[app]]\nmodel = \"random\"\nname = \"r\"\ncount = 2\nmemory = \"64MiB\"\nrefs = 1000\n";
    let (_, o) = run_text(&dir, &text);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let summary = std::fs::read_to_string(dir.path().join("out/summary.json")).unwrap();
    for name in ["\"mg.D\"", "\"r-0\"", "\"r-1\""] {
        assert!(summary.contains(name), "{name} missing from {summary}");
    }
}

#[test]
fn sysmon_h_apps_run_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let machine = BASE.split("[[process]]").next().unwrap();
    let mut text = machine.replacen("\"64MiB\"", "\"512MiB\"", 1);
    for model in ["memcached", "redis-uneven", "mcf", "deepsjeng"] {
        text += &format!("[[app]]\nmodel = \"{model}\"\nmemory = \"64MiB\"\nrefs = 5000\n\n");
    }
    let (_, o) = run_text(&dir, &text);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let summary = std::fs::read_to_string(dir.path().join("out/summary.json")).unwrap();
    for name in [
        "\"memcached\"",
        "\"redis-uneven\"",
        "\"mcf\"",
        "\"deepsjeng\"",
    ] {
        assert!(summary.contains(name), "{name} missing from {summary}");
    }
}

/// `BASE` with a `[[kv_server]]` named "kv" with `keys`, and a step of `step`, appended.
fn with_kv(keys: &str, step: &str) -> String {
    format!("{BASE}\n[[kv_server]]\nname = \"kv\"\n{keys}\n[[kv_server.step]]\n{step}")
}

#[test]
fn kv_server_heap_must_be_pages_from_1_mib_to_64_tib() {
    for (heap, found) in [
        ("\"1KiB\"", "found 1024"),
        ("\"65TiB\"", "found 71468255805440"),
        ("1048577", "found 1048577"),
        ("0", "found 0"),
    ] {
        expect_bad(
            &with_kv(&format!("heap = {heap}\n"), "op = \"get\"\nrequests = 10\n"),
            "kv_server[0].heap",
            &["a multiple of 4 KiB from 1 MiB to 64 TiB", found],
        );
    }
    expect_bad(
        &with_kv("heap = \"4 XB\"\n", "op = \"get\"\nrequests = 10\n"),
        "kv_server[0].heap",
        &["a size such as 4096", "found \"4 XB\""],
    );
}

#[test]
fn kv_server_knobs_out_of_range_are_refused() {
    let step = "op = \"get\"\nrequests = 10\n";
    expect_bad(
        &with_kv("key_size = 0\n", step),
        "kv_server[0].key_size",
        &["an integer from 1 to 1048576, found 0"],
    );
    expect_bad(
        &with_kv("request_cpu_us = -1\n", step),
        "kv_server[0].request_cpu_us",
        &["a number from 0 to 1000000000, found -1"],
    );
    expect_bad(
        &with_kv("start_ms = -5\n", step),
        "kv_server[0].start_ms",
        &["a number from 0"],
    );
    expect_bad(
        &format!("{BASE}\n[[kv_server]]\n\n[[kv_server.step]]\n{step}"),
        "kv_server[0].name",
        &["a name"],
    );
    expect_bad(
        &with_kv("threads = 4\n", step),
        "kv_server[0].threads",
        &["unknown field `threads`", "expected one of `name`"],
    );
}

#[test]
fn kv_server_without_steps_is_refused() {
    expect_bad(
        &format!("{BASE}\n[[kv_server]]\nname = \"kv\"\n"),
        "kv_server[0].step",
        &[
            "at least one [[kv_server.step]]",
            "insert, delete, get or idle",
        ],
    );
}

#[test]
fn kv_step_with_an_unknown_or_missing_op_is_refused() {
    expect_bad(
        &with_kv("", "op = \"put\"\nkeys = 10\n"),
        "kv_server[0].step[0].op",
        &["one of insert, delete, get, idle, found \"put\""],
    );
    expect_bad(
        &with_kv("", "keys = 10\n"),
        "kv_server[0].step[0].op",
        &["an op: one of insert, delete, get, idle"],
    );
    expect_bad(
        &with_kv("", "op = 1\n"),
        "kv_server[0].step[0].op",
        &["invalid type: integer `1`", "expected a string"],
    );
    expect_bad(
        &with_kv("", "op = \"get\"\nrequests = 10\nvalue = 5\n"),
        "kv_server[0].step[0].value",
        &["unknown field `value`"],
    );
}

#[test]
fn kv_step_key_not_valid_for_its_op() {
    for (step, key, says) in [
        (
            "op = \"delete\"\nkeys = 10\n",
            "keys",
            "no `keys` for op \"delete\" (it takes: share)",
        ),
        (
            "op = \"get\"\nvalue_size = 100\n",
            "value_size",
            "no `value_size` for op \"get\" (it takes: requests)",
        ),
        (
            "op = \"idle\"\nrequests = 10\n",
            "requests",
            "no `requests` for op \"idle\" (it takes: duration_s)",
        ),
        (
            "op = \"insert\"\nkeys = 10\nvalue_size = 100\nshare = 0.5\n",
            "share",
            "no `share` for op \"insert\" (it takes: keys, value_size)",
        ),
        (
            "op = \"delete\"\nduration_s = 1.0\n",
            "duration_s",
            "no `duration_s` for op \"delete\" (it takes: share)",
        ),
    ] {
        expect_bad(
            &with_kv("", step),
            &format!("kv_server[0].step[0].{key}"),
            &[says],
        );
    }
}

#[test]
fn kv_step_values_missing_or_out_of_range() {
    for (keys, step, key, says) in [
        (
            "",
            "op = \"insert\"\nkeys = 10\n",
            "value_size",
            "the bytes of each value",
        ),
        (
            "",
            "op = \"insert\"\nvalue_size = 100\n",
            "keys",
            "the number of keys to insert",
        ),
        (
            "",
            "op = \"insert\"\nkeys = 10\nvalue_size = 0\n",
            "value_size",
            "a size from 1 byte to half the heap, found 0",
        ),
        (
            "heap = \"1MiB\"\n",
            "op = \"insert\"\nkeys = 10\nvalue_size = \"1MiB\"\n",
            "value_size",
            "a size from 1 byte to half the heap, found 1048576",
        ),
        (
            "",
            "op = \"insert\"\nkeys = 10\nvalue_size = -1\n",
            "value_size",
            "a non-negative size, found -1",
        ),
        (
            "",
            "op = \"delete\"\nshare = 1.5\n",
            "share",
            "a number from 0 to 1, found 1.5",
        ),
        (
            "",
            "op = \"get\"\nrequests = 0\n",
            "requests",
            "an integer from 1 to 4294967296, found 0",
        ),
        (
            "",
            "op = \"get\"\nrequests = 4294967297\n",
            "requests",
            "an integer from 1 to 4294967296, found 4294967297",
        ),
        (
            "",
            "op = \"idle\"\nduration_s = 0\n",
            "duration_s",
            "a number from 0.000001 to 1000000000, found 0",
        ),
        (
            "",
            "op = \"idle\"\n",
            "duration_s",
            "the idle time in seconds",
        ),
        (
            "",
            "op = \"get\"\n",
            "requests",
            "the number of gets to serve",
        ),
    ] {
        expect_bad(
            &with_kv(keys, step),
            &format!("kv_server[0].step[0].{key}"),
            &[says],
        );
    }
}

#[test]
fn kv_errors_name_the_server_and_step_they_are_in() {
    let text = format!(
        "{}\n[[kv_server.step]]\nop = \"delete\"\nshare = 2\n\n\
         [[kv_server]]\nname = \"kv2\"\nkey_size = 0\n\n[[kv_server.step]]\nop = \"get\"\nrequests = 1\n",
        with_kv("", "op = \"get\"\nrequests = 10\n")
    );
    expect_bad(
        &text,
        "kv_server[0].step[1].share",
        &["a number from 0 to 1, found 2"],
    );
    let text = text.replace("share = 2", "share = 0.5");
    expect_bad(
        &text,
        "kv_server[1].key_size",
        &["an integer from 1 to 1048576, found 0"],
    );
}

#[test]
fn unknown_key_in_policy_freebsd() {
    expect_bad(
        &format!("{BASE}\n[policy]\nname = \"freebsd\"\n[policy.freebsd]\npromote = true\n"),
        "policy.freebsd.promote",
        &[
            "unknown field `promote`",
            "expected `reservations` or `pg_ps_enabled`",
        ],
    );
}

#[test]
fn freebsd_knob_of_wrong_type() {
    expect_bad(
        &format!("{BASE}\n[policy]\nname = \"freebsd\"\n[policy.freebsd]\npg_ps_enabled = 1\n"),
        "policy.freebsd.pg_ps_enabled",
        &["invalid type: integer `1`", "expected a boolean"],
    );
    expect_bad(
        &format!(
            "{BASE}\n[policy]\nname = \"freebsd\"\n[policy.freebsd]\nreservations = \"yes\"\n"
        ),
        "policy.freebsd.reservations",
        &["invalid type: string \"yes\"", "expected a boolean"],
    );
}

#[test]
fn a_freebsd_run_reports_in_place_promotions_and_its_resolved_config_reproduces_it() {
    let dir = tempfile::tempdir().unwrap();
    let (_, o) = run_text(&dir, &format!("{BASE}\n[policy]\nname = \"freebsd\"\n"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = dir.path().join("out");
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let system = &summary["system"];
    // BASE touches 4 MiB: two regions reserved, filled and promoted in place.
    assert_eq!(system["policy"], "freebsd");
    assert_eq!(system["promotions_in_place"], 2, "{system}");
    assert_eq!(system["reservations_made"], 2, "{system}");
    assert_eq!(system["collapses"], 0);
    assert_eq!(system["kernel"]["promotions_in_place"], 2);
    assert_eq!(summary["processes"][0]["faults_2m"], 0);
    assert_eq!(summary["processes"][0]["huge_pages_end"], 2);
    let resolved = std::fs::read_to_string(out.join("config.resolved.toml")).unwrap();
    assert!(
        resolved.contains("[policy.freebsd]\nreservations = true\npg_ps_enabled = true"),
        "{resolved}"
    );
    assert!(!resolved.contains("[policy.linux]"), "{resolved}");
    let out2 = dir.path().join("out2");
    let o = hugemm(&[
        "run".as_ref(),
        out.join("config.resolved.toml").as_os_str(),
        "--out".as_ref(),
        out2.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        without_provenance(&out.join("summary.json"))
            == without_provenance(&out2.join("summary.json")),
        "summary.json differs between the run and the run of its resolved config"
    );
}

#[test]
fn hawkeye_and_ingens_knobs_out_of_range_are_refused() {
    let with = |table: &str| format!("{BASE}\n[policy]\nname = \"hawkeye\"\n{table}");
    expect_bad(
        &with("[policy.hawkeye]\nvariant = \"pmc\"\n"),
        "policy.hawkeye.variant",
        &["one of g, pmu", "found \"pmc\""],
    );
    expect_bad(
        &with("[policy.hawkeye]\nsample_period_ms = 1000\nsample_window_ms = 2000\n"),
        "policy.hawkeye.sample_window_ms",
        &["no longer than sample_period_ms (1000 ms)", "found 2000 ms"],
    );
    expect_bad(
        &with("[policy.hawkeye]\nmin_bucket = 10\n"),
        "policy.hawkeye.min_bucket",
        &["an integer from 0 to 9", "found 10"],
    );
    expect_bad(
        &with("[policy.hawkeye]\nema_alpha = 0\n"),
        "policy.hawkeye.ema_alpha",
        &["a number from 0.01 to 1", "found 0"],
    );
    expect_bad(
        &with("[policy.hawkeye]\nscan_sleep_millisecs = -5\n"),
        "policy.hawkeye.scan_sleep_millisecs",
        &["from 1 to", "found -5"],
    );
    expect_bad(
        &with("[policy.ingens]\nutil_threshold = 1.5\n"),
        "policy.ingens.util_threshold",
        &["a number from 0 to 1", "found 1.5"],
    );
    expect_bad(
        &with("[policy.ingens]\nidle_tax = 1.0\n"),
        "policy.ingens.idle_tax",
        &["a number from 0 to 0.99", "found 1"],
    );
    expect_bad(
        &with("[policy.ingens]\nthreshold = 0.5\n"),
        "policy.ingens.threshold",
        &["unknown field `threshold`"],
    );
}

#[test]
fn hawkeye_bloat_knobs_out_of_range_are_refused() {
    let with = |keys: &str| {
        format!("{BASE}\n[policy]\nname = \"hawkeye\"\n[policy.hawkeye.bloat]\n{keys}")
    };
    for (keys, key, says) in [
        (
            "high_watermark = 1.5",
            "high_watermark",
            "a number from 0 to 1, found 1.5",
        ),
        (
            "low_watermark = -0.1",
            "low_watermark",
            "a number from 0 to 1, found -0.1",
        ),
        (
            "high_watermark = nan",
            "high_watermark",
            "a number from 0 to 1, found NaN",
        ),
        (
            "high_watermark = 0.5\nlow_watermark = 0.9",
            "low_watermark",
            "a share no higher than high_watermark (0.5), found 0.9",
        ),
        // Above the default high watermark (0.85).
        (
            "low_watermark = 0.9",
            "low_watermark",
            "a share no higher than high_watermark (0.85), found 0.9",
        ),
        (
            "max_zero = 600",
            "max_zero",
            "an integer from 0 to 511, found 600",
        ),
        (
            "max_zero = -1",
            "max_zero",
            "an integer from 0 to 511, found -1",
        ),
        (
            "huge_pages_per_pass = 0",
            "huge_pages_per_pass",
            "an integer from 1 to 1073741824, found 0",
        ),
        (
            "huge_pages_per_pass = 1073741825",
            "huge_pages_per_pass",
            "an integer from 1 to 1073741824, found 1073741825",
        ),
        (
            "period_ms = 0",
            "period_ms",
            "an integer from 1 to 4294967296, found 0",
        ),
    ] {
        expect_bad(
            &with(&format!("{keys}\n")),
            &format!("policy.hawkeye.bloat.{key}"),
            &[says],
        );
    }
    expect_bad(
        &with("enabled = \"yes\"\n"),
        "policy.hawkeye.bloat.enabled",
        &["invalid type: string \"yes\"", "expected a boolean"],
    );
    expect_bad(
        &with("period_ms = 1.5\n"),
        "policy.hawkeye.bloat.period_ms",
        &["invalid type: floating point `1.5`", "expected i64"],
    );
    expect_bad(
        &with("threshold = 0.5\n"),
        "policy.hawkeye.bloat.threshold",
        &["unknown field `threshold`", "expected one of `enabled`"],
    );
}

#[test]
fn every_policy_runs_the_base_experiment_and_resolves_its_table() {
    for (name, table) in [
        ("hawkeye", "[policy.hawkeye]\nvariant = \"g\""),
        ("ingens", "[policy.ingens]\nutil_threshold = 0.9"),
        ("freebsd", "[policy.freebsd]\nreservations = true"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (_, o) = run_text(&dir, &format!("{BASE}\n[policy]\nname = \"{name}\"\n"));
        assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
        let resolved =
            std::fs::read_to_string(dir.path().join("out").join("config.resolved.toml")).unwrap();
        assert!(resolved.contains(table), "{name}: {resolved}");
    }
}

/// Writes `text` and runs `hugemm reproduce` on it.
fn reproduce_text(dir: &tempfile::TempDir, text: &str) -> (String, Output) {
    let file = dir.path().join("repro.toml");
    std::fs::write(&file, text).unwrap();
    let out = dir.path().join("out");
    let output = hugemm(&[
        "reproduce".as_ref(),
        file.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    (file.display().to_string(), output)
}

#[test]
fn hawkeye_reproductions_check_their_variants_and_sets() {
    let cases = [
        (
            "variants = [\"4k\", \"thp\"]\nsets = [[\"p\"]]",
            "reproduce.variants",
            "found \"thp\"",
        ),
        (
            "variants = [\"4k\"]\nsets = [[\"q\"]]",
            "reproduce.sets",
            "names of processes in the file, found \"q\"",
        ),
        (
            "variants = [\"4k\"]",
            "reproduce.sets",
            "non-empty lists of process names",
        ),
        (
            "variants = [\"4k\"]\nsets = [[]]",
            "reproduce.sets",
            "non-empty lists of process names",
        ),
    ];
    for (keys, key, says) in cases {
        let dir = tempfile::tempdir().unwrap();
        let text = format!("[reproduce]\nkind = \"hawkeye-fig5\"\n{keys}\n\n{BASE}");
        let (file, o) = reproduce_text(&dir, &text);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{keys}: {err}");
        assert!(
            err.contains(&file) && err.contains(&format!("key `{key}`")),
            "{err}"
        );
        assert!(err.contains(says), "{keys}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn a_tiny_hawkeye_reproduction_prints_every_variant() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "[reproduce]\nkind = \"hawkeye-fig5\"\nvariants = [\"4k\", \"linux\", \"ingens\", \
         \"hawkeye-g\", \"hawkeye-pmu\", \"freebsd\"]\nsets = [[\"p\"]]\n\n{BASE}"
    );
    let (_, o) = reproduce_text(&dir, &text);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let printed = String::from_utf8_lossy(&o.stdout);
    for v in [
        "4k",
        "linux",
        "ingens",
        "hawkeye-g",
        "hawkeye-pmu",
        "freebsd",
    ] {
        assert!(
            printed.lines().any(|l| l.starts_with('p') && l.contains(v)),
            "no row for {v}: {printed}"
        );
    }
    assert!(dir.path().join("out").join("reproduction.json").exists());
}

/// A tiny valid reproduction (HawkEye Figure 5's script over `BASE`).
fn tiny_reproduction() -> String {
    format!("[reproduce]\nkind = \"hawkeye-fig5\"\nvariants = [\"4k\"]\nsets = [[\"p\"]]\n\n{BASE}")
}

/// Runs `hugemm reproduce` on `paths` with `--out out`.
fn reproduce_paths(paths: &[&Path], out: &Path) -> Output {
    let mut args: Vec<&std::ffi::OsStr> = vec!["reproduce".as_ref()];
    args.extend(paths.iter().map(|p| p.as_os_str()));
    args.extend(["--out".as_ref(), out.as_os_str()]);
    hugemm(&args)
}

#[test]
fn a_directory_runs_its_reproductions_in_name_order_each_into_its_own_directory() {
    let dir = tempfile::tempdir().unwrap();
    let papers = dir.path().join("paper");
    std::fs::create_dir(&papers).unwrap();
    for name in ["b.toml", "a.toml"] {
        std::fs::write(papers.join(name), tiny_reproduction()).unwrap();
    }
    std::fs::write(papers.join("README.md"), "not a reproduction").unwrap();
    let out = dir.path().join("out");
    let o = reproduce_paths(&[&papers], &out);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let printed = String::from_utf8_lossy(&o.stdout);
    let (a, b) = (
        printed.find("a.toml (1 of 2)"),
        printed.find("b.toml (2 of 2)"),
    );
    assert!(a.is_some() && b.is_some() && a < b, "{printed}");
    assert!(printed.contains("2 reproductions in"), "{printed}");
    for stem in ["a", "b"] {
        assert!(out.join(stem).join("reproduction.json").exists(), "{stem}");
    }
}

#[test]
fn every_reproduction_is_checked_before_any_runs() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.toml");
    let bad = dir.path().join("bad.toml");
    std::fs::write(&good, tiny_reproduction()).unwrap();
    std::fs::write(&bad, tiny_reproduction().replace("[\"4k\"]", "[\"thp\"]")).unwrap();
    let out = dir.path().join("out");
    let o = reproduce_paths(&[&good, &bad], &out);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&bad.display().to_string()) && err.contains("key `reproduce.variants`"),
        "{err}"
    );
    assert!(
        !out.exists(),
        "nothing may run before every file is checked"
    );
}

#[test]
fn reproduce_refuses_an_empty_directory_and_two_files_writing_one_directory() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = dir.path().join("out");
    let o = reproduce_paths(&[&empty], &out);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&empty.display().to_string()) && err.contains("without reproduction files"),
        "{err}"
    );

    let (one, two) = (dir.path().join("one"), dir.path().join("two"));
    for d in [&one, &two] {
        std::fs::create_dir(d).unwrap();
        std::fs::write(d.join("fig.toml"), tiny_reproduction()).unwrap();
    }
    let o = reproduce_paths(&[&one.join("fig.toml"), &two.join("fig.toml")], &out);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&two.join("fig.toml").display().to_string())
            && err.contains(&one.join("fig.toml").display().to_string())
            && err.contains("run them separately"),
        "{err}"
    );
    assert!(!out.exists());
}

#[test]
fn a_directory_of_one_reproduction_still_writes_into_its_stem() {
    let dir = tempfile::tempdir().unwrap();
    let papers = dir.path().join("paper");
    std::fs::create_dir(&papers).unwrap();
    std::fs::write(papers.join("only.toml"), tiny_reproduction()).unwrap();
    let out = dir.path().join("out");
    let o = reproduce_paths(&[&papers], &out);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(out.join("only").join("reproduction.json").exists());
    assert!(!out.join("reproduction.json").exists());
}

#[test]
fn a_directory_of_paper_directories_runs_them_all_each_into_its_own_place() {
    let dir = tempfile::tempdir().unwrap();
    let all = dir.path().join("experiments");
    for paper in ["p1", "p2"] {
        std::fs::create_dir_all(all.join(paper)).unwrap();
        // The same stem in both papers: their results must not collide.
        std::fs::write(all.join(paper).join("table1.toml"), tiny_reproduction()).unwrap();
        std::fs::write(all.join(paper).join("README.md"), "not a reproduction").unwrap();
    }
    let out = dir.path().join("out");
    let o = reproduce_paths(&[&all], &out);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let printed = String::from_utf8_lossy(&o.stdout);
    let (a, b) = (
        printed.find("p1/table1.toml (1 of 2)"),
        printed.find("p2/table1.toml (2 of 2)"),
    );
    assert!(a.is_some() && b.is_some() && a < b, "{printed}");
    for paper in ["p1", "p2"] {
        let json = out.join(paper).join("table1").join("reproduction.json");
        assert!(json.exists(), "{}", json.display());
    }
}

#[test]
fn memory_nodes_must_match_the_profile_and_add_up() {
    let nimble = "profile = \"xeon-e5-2650v3-2node\"";
    let two = |nodes: &str| {
        edit(
            "profile = \"epyc-milan-kvm\"",
            &format!("{nimble}\nnode_memory = {nodes}"),
        )
    };
    expect_bad(
        &edit("profile = \"epyc-milan-kvm\"", nimble),
        "machine.node_memory",
        &["each node's memory", "local, disaggregated"],
    );
    expect_bad(
        &two("[\"64MiB\"]"),
        "machine.node_memory",
        &["one size per node", "(2), found 1"],
    );
    expect_bad(
        &two("[\"32MiB\", \"16MiB\"]"),
        "machine.node_memory",
        &[
            "adding up to machine.memory (67108864 bytes)",
            "found 50331648",
        ],
    );
    expect_bad(
        &two("[\"64MiB\", \"0MiB\"]"),
        "machine.node_memory[1]",
        &["a node with no memory is not a node"],
    );
    expect_bad(
        &two("[\"62MiB\", \"2MiB\"]"),
        "machine.node_memory[0]",
        &["multiple of 4 MiB"],
    );
    let pcp = format!(
        "{}\n[kernel]\nper_cpu_lists = true\n",
        two("[\"32MiB\", \"32MiB\"]")
    );
    expect_bad(&pcp, "kernel.per_cpu_lists", &["several memory nodes"]);
}

#[test]
fn a_two_node_machine_runs_and_a_tier_profile_rejects_bad_latency() {
    let text = edit(
        "profile = \"epyc-milan-kvm\"",
        "profile = \"xeon-e5-2650v3-2node\"\nnode_memory = [\"32MiB\", \"32MiB\"]",
    );
    let dir = tempfile::tempdir().unwrap();
    let (_, o) = run_text(&dir, &text);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let resolved = std::fs::read_to_string(dir.path().join("out/config.resolved.toml")).unwrap();
    assert!(
        resolved.contains("node_memory = [33554432, 33554432]"),
        "{resolved}"
    );
}

#[test]
fn hpolicy_window_longer_than_its_period() {
    expect_bad(
        &format!(
            "{BASE}\n[policy]\nname = \"hpolicy\"\n[policy.hpolicy]\nsysmon_window_ms = 40000\n"
        ),
        "policy.hpolicy.sysmon_window_ms",
        &[
            "a window no longer than sysmon_period_ms (30000 ms)",
            "found 40000 ms",
        ],
    );
}

#[test]
fn hpolicy_more_hot_checks_than_checks() {
    expect_bad(
        &format!(
            "{BASE}\n[policy]\nname = \"hpolicy\"\n[policy.hpolicy]\nchecks = 2\nhot_checks = 3\n"
        ),
        "policy.hpolicy.hot_checks",
        &["an integer from 1 to 2", "found 3"],
    );
}

#[test]
fn hpolicy_unknown_monitor_source() {
    expect_bad(
        &format!(
            "{BASE}\n[policy]\nname = \"hpolicy\"\n[policy.hpolicy]\nsysmon_source = \"access-bits\"\n"
        ),
        "policy.hpolicy.sysmon_source",
        &["tlb-misses, accessed-bits", "\"access-bits\""],
    );
}

#[test]
fn hpolicy_no_access_scans() {
    expect_bad(
        &format!(
            "{BASE}\n[policy]\nname = \"hpolicy\"\n[policy.hpolicy]\nsysmon_source = \"accessed-bits\"\naccess_scans = 0\n"
        ),
        "policy.hpolicy.access_scans",
        &["an integer from 1 to 100000", "found 0"],
    );
}

/// BASE on a bare-metal profile with `[guest]` and `vm` (a `[[vm]]` table's body).
fn with_vm(guest: &str, vm: &str) -> String {
    let text = edit(
        "profile = \"epyc-milan-kvm\"",
        "profile = \"haswell-e5-2690v3\"",
    );
    format!("{text}\n{guest}\n[[vm]]\n{vm}\n")
}

const GUEST: &str = "[guest]\nhost_huge_fraction = 0.0\nhost_walk_base_cycles = 13.0\n\
nested_tlb_hit_cycles = 1.0\nnested_tlb = { entries = 32, ways = 32 }\n\
host_pwc = { pml4e = { entries = 2, ways = 2 }, pdpte = { entries = 4, ways = 4 }, \
pde = { entries = 32, ways = 32 } }\n";

#[test]
fn virtual_machines_are_validated() {
    let ok_vm = "name = \"vm\"\nmemory = \"32MiB\"\nprocesses = [\"p\"]";
    // A guest profile cannot host VMs.
    expect_bad(
        &format!("{BASE}\n{GUEST}\n[[vm]]\n{ok_vm}\n"),
        "machine.profile",
        &["bare-metal", "epyc-milan-kvm"],
    );
    expect_bad(&with_vm("", ok_vm), "guest", &["[guest] table"]);
    expect_bad(
        &with_vm(&GUEST.replace("= 0.0", "= 2.0"), ok_vm),
        "guest",
        &["host_huge_fraction"],
    );
    expect_bad(
        &with_vm(GUEST, &ok_vm.replace("[\"p\"]", "[\"q\"]")),
        "vm[0].processes",
        &["found \"q\""],
    );
    expect_bad(
        &with_vm(GUEST, &ok_vm.replace("32MiB", "3MiB")),
        "vm[0].memory",
        &["multiple of 2 MiB"],
    );
    expect_bad(
        &with_vm(
            GUEST,
            &format!("{ok_vm}\n\n[[vm]]\n{}", ok_vm.replace("\"vm\"", "\"vm2\"")),
        ),
        "vm[1].processes",
        &["\"p\" runs in \"vm\""],
    );
    // Layouts are for reproductions.
    expect_bad(
        &with_vm(GUEST, &format!("{ok_vm}\nlayout = \"host\"")),
        "vm[0].layout",
        &["reproductions"],
    );
}

#[test]
fn the_host_table_is_validated() {
    let ok_vm = "name = \"vm\"\nmemory = \"32MiB\"\nprocesses = [\"p\"]";
    let with_host = |host: &str| format!("{}\n[host]\n{host}\n", with_vm(GUEST, ok_vm));
    let ok = with_host(
        "ksm_pages_per_s = 5000\nfree_page_reporting_ms = 2000\n\
         swap_latency_us = 100\nswap_mb_s = 500",
    );
    hugemm_cli::config::parse(&ok, "h.toml", Path::new(".")).expect("a valid [host]");
    // Only a host of VMs has one.
    expect_bad(
        &format!("{BASE}\n[host]\nksm_pages_per_s = 5000\n"),
        "host",
        &["[[vm]]"],
    );
    expect_bad(
        &with_host("ksm_pages_per_s = 0"),
        "host.ksm_pages_per_s",
        &["found 0"],
    );
    expect_bad(
        &with_host("free_page_reporting_ms = -5"),
        "host.free_page_reporting_ms",
        &["found -5"],
    );
    // A swap device needs both its numbers.
    expect_bad(
        &with_host("swap_mb_s = 500"),
        "host.swap_latency_us",
        &["latency"],
    );
    expect_bad(
        &with_host("swap_latency_us = 100"),
        "host.swap_mb_s",
        &["bandwidth"],
    );
    expect_bad(
        &with_host("swap_latency_us = 100\nswap_mb_s = 0"),
        "host.swap_mb_s",
        &["found 0"],
    );
    expect_bad(
        &with_host("swap = true"),
        "host.swap",
        &["unknown field `swap`"],
    );
}

#[test]
fn requests_per_s_is_for_servers_only() {
    let app = |model: &str, rate: &str| {
        format!(
            "{BASE}\n[[app]]\nmodel = \"{model}\"\nmemory = \"64MiB\"\nrefs = 1000\nrequests_per_s = {rate}\n"
        )
    };
    hugemm_cli::config::parse(&app("redis", "100000"), "a.toml", Path::new("."))
        .expect("a server's rate");
    expect_bad(
        &app("graph500", "100000"),
        "app[0].requests_per_s",
        &["only the servers"],
    );
    expect_bad(&app("redis", "0"), "app[0].requests_per_s", &["found 0"]);
}

#[test]
fn a_file_with_a_vm_runs_under_the_host_model() {
    let dir = tempfile::tempdir().unwrap();
    let vm = "name = \"vm\"\nmemory = \"32MiB\"\nprocesses = [\"p\"]";
    let (_, o) = run_text(&dir, &with_vm(GUEST, vm));
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let out = dir.path().join("out");
    for f in ["host/summary.json", "vm-vm/summary.json", "vms.json"] {
        assert!(out.join(f).exists(), "{f} missing");
    }
    let vms: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("vms.json")).unwrap()).unwrap();
    let v = &vms["vms"][0];
    // The guest's process ran in the VM and its touches were backed by the host.
    assert!(v["host_backed_regions"].as_u64().unwrap() >= 2, "{v}");
    assert!(v["host_fault_ns"].as_u64().unwrap() > 0, "{v}");
    let guest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("vm-vm/summary.json")).unwrap())
            .unwrap();
    assert_eq!(guest["processes"][0]["name"], "p");
}

#[test]
fn a_balloon_phase_is_validated() {
    let with =
        |size: &str| format!("{BASE}\n[[process.phase]]\nop = \"balloon\"\nsize = \"{size}\"\n");
    hugemm_cli::config::parse(&with("32MiB"), "b.toml", Path::new(".")).expect("a valid balloon");
    expect_bad(
        &with("1GiB"),
        "process[0].phase[3].size",
        &["machine's memory"],
    );
    expect_bad(
        &with("6KiB"),
        "process[0].phase[3].size",
        &["whole 4 KiB pages"],
    );
    expect_bad(
        &format!("{BASE}\n[[process.phase]]\nop = \"balloon\"\n"),
        "process[0].phase[3].size",
        &["target size"],
    );
}

#[test]
fn a_highalloc_phase_with_a_bad_interval_or_gfp_is_refused() {
    let phase = |keys: &str| format!("{BASE}\n[[process.phase]]\nop = \"highalloc\"\n{keys}\n");
    expect_bad(
        &phase("interval_ms = -5"),
        "process[0].phase[3].interval_ms",
        &["a number from 0"],
    );
    expect_bad(
        &phase("gfp = \"GFP_HIGHUSER\""),
        "process[0].phase[3].gfp",
        &[
            "GFP_HIGHUSER_MOVABLE, GFP_ALLOC_LIKE_HUGETLB",
            "found \"GFP_HIGHUSER\"",
        ],
    );
    expect_bad(
        &format!("{BASE}\n[[process.phase]]\nop = \"sleep\"\nduration_ms = 1\ngfp = \"GFP_HIGHUSER_MOVABLE\"\n"),
        "process[0].phase[3].gfp",
        &["no `gfp` for op \"sleep\""],
    );
}

#[test]
fn a_reproduce_highalloc_table_is_checked() {
    let cases = [
        (
            "apsys16-highalloc",
            "[reproduce.highalloc]\nprocedure = \"at-rest\"",
            "reproduce.highalloc.procedure",
            "one of mmtests, after-builds, found \"at-rest\"",
        ),
        (
            "apsys16-highalloc",
            "[reproduce.highalloc]\ngfp = \"GFP_KERNEL\"",
            "reproduce.highalloc.gfp",
            "found \"GFP_KERNEL\"",
        ),
        (
            "apsys16-table2",
            "[reproduce.highalloc]\ngfp = \"GFP_HIGHUSER_MOVABLE\"",
            "reproduce.highalloc",
            "it is for apsys16-highalloc",
        ),
    ];
    for (kind, table, key, says) in cases {
        let dir = tempfile::tempdir().unwrap();
        let text =
            format!("[reproduce]\nkind = \"{kind}\"\nvariants = [\"default\"]\n{table}\n\n{BASE}");
        let (file, o) = reproduce_text(&dir, &text);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{table}: {err}");
        assert!(
            err.contains(&file) && err.contains(&format!("key `{key}`")),
            "{err}"
        );
        assert!(err.contains(says), "{table}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn a_turn_of_zero_microseconds() {
    expect_bad(
        &edit("seed = 1\n", "seed = 1\nturn_us = 0\n"),
        "sim.turn_us",
        &["a number from", "found 0"],
    );
}

#[test]
fn frame_maps_every_zero_seconds() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/alloc-and-touch.toml");
    let o = hugemm(&[
        "run".as_ref(),
        file.as_os_str(),
        "--frame-maps".as_ref(),
        "0".as_ref(),
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "exit code; stderr: {err}");
    assert!(
        err.contains("--frame-maps") && err.contains("a positive number of seconds, got '0'"),
        "{err}"
    );
}

#[test]
fn zones_must_be_known_and_fit_the_machine() {
    let zoned = |extra: &str| {
        edit(
            "cores = 1",
            &format!("cores = 1\nzones = \"linux-x86\"{extra}"),
        )
    };
    expect_bad(
        &edit("cores = 1", "cores = 1\nzones = \"linux\""),
        "machine.zones",
        &["\"linux\"", "linux-x86"],
    );
    expect_bad(
        &edit("cores = 1", "cores = 1\nzones = 3"),
        "machine.zones",
        &["invalid type: integer `3`"],
    );
    expect_bad(
        &format!("{}\n[kernel]\nwatermark_boost_factor = 15000\n", zoned("")),
        "machine.zones",
        &["watermark_boost_factor"],
    );
    let tiered = edit(
        "profile = \"epyc-milan-kvm\"",
        "profile = \"xeon-e5-2650v3-2node\"\nnode_memory = [\"32MiB\", \"32MiB\"]\nzones = \"linux-x86\"",
    );
    expect_bad(&tiered, "machine.zones", &["several memory nodes"]);
    expect_bad(
        &format!("{}\n[kernel]\nkswapd = \"later\"\n", zoned("")),
        "kernel.kswapd",
        &["\"later\"", "immediate", "async"],
    );
    expect_bad(
        &edit("cores = 1", "cores = 1\n[kernel]\nkswapd = \"async\""),
        "kernel.kswapd",
        &["needs machine.zones"],
    );
}

#[test]
fn instructions_per_ref_is_a_count_of_at_least_one_on_access_phases() {
    expect_bad(
        &edit("refs = 1000\n", "refs = 1000\ninstructions_per_ref = 0.5\n"),
        "process[0].phase[2].instructions_per_ref",
        &["a number from 1 to 1000000, found 0.5"],
    );
    expect_bad(
        &edit(
            "size = \"4MiB\"\n",
            "size = \"4MiB\"\ninstructions_per_ref = 12\n",
        ),
        "process[0].phase[0].instructions_per_ref",
        &["no `instructions_per_ref` for op \"mmap\""],
    );
}

#[test]
fn boot_kernel_memory_must_fit_the_machine() {
    expect_bad(
        &format!("{BASE}\n[kernel.boot]\nunmovable_pageblocks = 40\n"),
        "kernel.boot.unmovable_pageblocks",
        &["from 0 to 32", "40"],
    );
    expect_bad(
        &format!("{BASE}\n[kernel.boot]\nreclaimable_free = [1]\n"),
        "kernel.boot.reclaimable_free",
        &["fit in the 0 pageblocks"],
    );
    expect_bad(
        &format!("{BASE}\n[kernel.boot]\nunmovable_pageblocks = 1\nunmovable_free = [0,0,0,0,0,0,0,0,0,0,0,1]\n"),
        "kernel.boot.unmovable_free",
        &["at most 11 counts"],
    );
    expect_bad(
        &format!("{BASE}\n[kernel.boot]\nunmovable_pageblocks = 1\nunmovable_free = [-1]\n"),
        "kernel.boot.unmovable_free",
        &["each 0 or more"],
    );
    // Listed frames within the pageblocks, but more free blocks of an order than can lie
    // apart in them (two free halves of one pageblock would be one free pageblock): the
    // machine refuses to boot, naming the table.
    let dir = tempfile::tempdir().unwrap();
    let (_, o) = run_text(
        &dir,
        &format!("{BASE}\n[kernel.boot]\nunmovable_pageblocks = 2\nunmovable_free = [0,0,0,0,0,0,0,0,4]\n"),
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("kernel.boot: the free blocks do not fit"),
        "{err}"
    );
    assert_eq!(err.matches("kernel.boot").count(), 1, "said once: {err}");
}
