//! Bad input: every parser fails with an error naming the file and the line, never a
//! panic, and accepts nothing the kernel would not write.

mod common;

use common::{data, text};
use hugemm_agent::observe::buddyinfo::BuddyInfo;
use hugemm_agent::observe::kconfig::KernelConfig;
use hugemm_agent::observe::pagemap::Pagemap;
use hugemm_agent::observe::pagetypeinfo::PageTypeInfo;
use hugemm_agent::observe::psi::Pressure;
use hugemm_agent::observe::smaps::{parse_maps, Smaps};
use hugemm_agent::{Geometry, ObserveError, Result, VirtAddr};
use std::path::Path;

/// Assert `result` is a parse error at `line` whose message names the file and contains
/// `says`.
#[track_caller]
fn parse_error_at<T: std::fmt::Debug>(result: Result<T>, line: usize, says: &str) {
    let err = result.unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, ObserveError::Parse { .. }), "{message}");
    assert_eq!(err.line(), Some(line), "{message}");
    assert!(
        message.starts_with(&format!("{}:{line}: expected", err.path().display())),
        "{message}"
    );
    assert!(message.contains(says), "`{says}` not in: {message}");
}

/// `file`'s captured text with its line `n` (1-based) replaced by `with`.
fn with_line(file: &str, n: usize, with: &str) -> String {
    let mut lines: Vec<String> = text(file).lines().map(str::to_string).collect();
    lines[n - 1] = with.to_string();
    lines.join("\n") + "\n"
}

fn smaps(text: &str) -> Result<Smaps> {
    Smaps::parse(&data("smaps"), text)
}

#[test]
fn smaps_with_a_bad_counter_deep_in_the_file_names_that_line() {
    let bad = with_line("smaps", 155, "Rss:               ten kB");
    parse_error_at(smaps(&bad), 155, "a number of kB");
    let no_unit = with_line("smaps", 155, "Rss:               10240");
    parse_error_at(smaps(&no_unit), 155, "`Rss:` N kB");
}

#[test]
fn smaps_headers_are_checked_field_by_field() {
    let header = |h: &str| smaps(&with_line("smaps", 151, h));
    parse_error_at(
        header("7f625ee00000+7f6260e00000 rw-p 00000000 00:00 0"),
        151,
        "`start-end`",
    );
    parse_error_at(
        header("7f6260e00000-7f625ee00000 rw-p 00000000 00:00 0"),
        151,
        "start below the end",
    );
    parse_error_at(
        header("7f625ee00000-7f6260e00000 rw-q 00000000 00:00 0"),
        151,
        "`p` or `s`",
    );
    parse_error_at(
        header("7f625ee00000-7f6260e00000 rwzp 00000000 00:00 0"),
        151,
        "permissions",
    );
    parse_error_at(
        header("7f625ee00000-7f6260e00000 rw-p zz 00:00 0"),
        151,
        "hex file offset",
    );
    parse_error_at(
        header("7f625ee00000-7f6260e00000 rw-p 00000000 0000 0"),
        151,
        "device",
    );
    parse_error_at(
        header("7f625ee00000-7f6260e00000 rw-p 00000000 00:00 x"),
        151,
        "inode",
    );
    parse_error_at(
        header("7f625ee00000-7f6260e00000 rw-p 00000000 00:00"),
        151,
        "inode",
    );
}

#[test]
fn a_vma_missing_a_required_counter_is_named_by_its_header_line() {
    let without: String = text("smaps")
        .lines()
        .enumerate()
        .filter(|(i, _)| *i + 1 != 166) // line 166: the hg VMA's AnonHugePages
        .map(|(_, l)| format!("{l}\n"))
        .collect();
    parse_error_at(smaps(&without), 151, "`AnonHugePages:`");
    let wrong_size = with_line("smaps", 152, "Size:              32764 kB");
    parse_error_at(smaps(&wrong_size), 151, "`Size:` of 32768 kB");
}

#[test]
fn smaps_fields_must_be_well_formed_and_appear_once() {
    parse_error_at(smaps("Rss: 4 kB\n"), 1, "a VMA header line first");
    parse_error_at(smaps(""), 1, "a VMA header line");
    parse_error_at(
        smaps(&with_line("smaps", 175, "VmFlags: rd wr mrx")),
        175,
        "two-letter VmFlags",
    );
    parse_error_at(
        smaps(&with_line("smaps", 174, "THPeligible:           2")),
        174,
        "0 or 1",
    );
    parse_error_at(
        smaps(&with_line("smaps", 173, "Locked:                0 MB")),
        173,
        "`Name: N kB`",
    );
    parse_error_at(
        smaps(&with_line("smaps", 173, "Rss:                   0 kB")),
        173,
        "each field once",
    );
    parse_error_at(smaps(&with_line("smaps", 173, "")), 173, "`start-end`");
}

#[test]
fn maps_with_a_bad_line_names_it() {
    let bad = with_line("maps", 7, "7f625ee00000-7f6260e00000 rw-p");
    parse_error_at(parse_maps(&data("maps"), &bad), 7, "hex file offset");
}

#[test]
fn buddyinfo_lines_must_agree_and_name_known_zones() {
    let b = |t: &str| BuddyInfo::parse(&data("buddyinfo"), t);
    let short = with_line("buddyinfo", 2, "Node 0, zone    DMA32      1      1      4");
    parse_error_at(b(&short), 2, "as many on every line (11)");
    let zone = with_line("buddyinfo", 3, "Node 0, zone   Highest   1");
    parse_error_at(b(&zone), 3, "a zone (DMA");
    parse_error_at(b("Node 0 zone DMA 1\n"), 1, "a node number and a comma");
    parse_error_at(b("Node 0, zone DMA 1 -2\n"), 1, "a free-block count");
    parse_error_at(b("Node 0, zone DMA\n"), 1, "1 to 32 counts");
    parse_error_at(b(""), 1, "`Node N, zone NAME`");
    let many = format!("Node 0, zone DMA{}\n", " 1".repeat(40));
    parse_error_at(b(&many), 1, "1 to 32 counts");
}

#[test]
fn pagetypeinfo_is_checked_section_by_section() {
    let p = |t: &str| PageTypeInfo::parse(&data("pagetypeinfo"), t);
    parse_error_at(
        p(&with_line("pagetypeinfo", 2, "Pages per block:  256")),
        2,
        "2^(pageblock order)",
    );
    parse_error_at(
        p(&with_line(
            "pagetypeinfo",
            4,
            "Free pages count per migrate type at order 0 1 3",
        )),
        4,
        "order 2",
    );
    let short_row = "Node    0, zone      DMA, type    Unmovable      0      0";
    parse_error_at(
        p(&with_line("pagetypeinfo", 5, short_row)),
        5,
        "11 free counts",
    );
    let counts = "      0      0      0      0      0      0      0      0      1      0      0";
    let bad_type = format!("Node    0, zone      DMA, type    Sticky{counts}");
    parse_error_at(
        p(&with_line("pagetypeinfo", 5, &bad_type)),
        5,
        "a migrate type",
    );
    let no_comma = format!("Node    0, zone      DMA type    Unmovable{counts}");
    parse_error_at(
        p(&with_line("pagetypeinfo", 5, &no_comma)),
        5,
        "a zone name",
    );
    parse_error_at(
        p(&with_line(
            "pagetypeinfo",
            23,
            "Node 0, zone      DMA            1            7",
        )),
        23,
        "5 pageblock counts",
    );
    parse_error_at(p("Node 0, zone DMA 1\n"), 1, "a section header");
    let truncated: String = text("pagetypeinfo")
        .lines()
        .take(20)
        .map(|l| format!("{l}\n"))
        .collect();
    parse_error_at(p(&truncated), 21, "`Number of blocks type`");
}

#[test]
fn psi_lines_need_every_key_in_order_and_real_percentages() {
    let p = |t: &str| Pressure::parse(&data("pressure-memory"), t);
    parse_error_at(
        p("some avg60=0.00 avg10=0.00 avg300=0.00 total=0\n"),
        1,
        "`avg10=`",
    );
    parse_error_at(
        p("some avg10=100.01 avg60=0.00 avg300=0.00 total=0\n"),
        1,
        "a percentage",
    );
    parse_error_at(
        p("some avg10=NaN avg60=0.00 avg300=0.00 total=0\n"),
        1,
        "a percentage",
    );
    parse_error_at(p("some avg10=0.00 avg60=0.00 avg300=0.00\n"), 1, "`total=`");
    parse_error_at(
        p("some avg10=0.00 avg60=0.00 avg300=0.00 total=-1\n"),
        1,
        "microseconds",
    );
    parse_error_at(
        p("some avg10=0.00 avg60=0.00 avg300=0.00 total=1 x\n"),
        1,
        "end of line",
    );
    let three = text("pressure-memory") + "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
    parse_error_at(p(&three), 3, "end of file after the `full` line");
    parse_error_at(
        p(&with_line(
            "pressure-memory",
            2,
            "some avg10=0.00 avg60=0.00 avg300=0.00 total=0",
        )),
        2,
        "`full`",
    );
    parse_error_at(p(""), 1, "a `some` line");
}

#[test]
fn kernel_config_lines_are_options_comments_or_blank() {
    let c = |t: &str| KernelConfig::parse(Path::new("config"), t);
    parse_error_at(c("CONFIG_A=y\nCONFIG_B\n"), 2, "`CONFIG_NAME=value`");
    parse_error_at(c("FOO=y\n"), 1, "`CONFIG_NAME=value`");
    parse_error_at(c("CONFIG_A=\n"), 1, "`CONFIG_NAME=value`");
    let not_gz = KernelConfig::read_path(&data("config-excerpt.gz-missing.gz")).unwrap_err();
    assert!(matches!(not_gz, ObserveError::Read { .. }), "{not_gz}");
}

#[test]
fn a_pagemap_shorter_than_the_range_asked_is_missing_entries() {
    let g = Geometry::X86_64;
    let pm = Pagemap::open_excerpt(&data("pagemap-r3-r5.bin"), VirtAddr(0x1000_0000), &g).unwrap();
    let err = pm
        .entries(VirtAddr(0x1000_0000 + 1535 * 4096), 2, &g)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}: entries {}..{} are not in the file",
            data("pagemap-r3-r5.bin").display(),
            0x10000 + 1535,
            0x10000 + 1537
        )
    );
    let absent = Pagemap::open_path(&data("no-such-pagemap")).unwrap_err();
    assert!(
        absent.to_string().contains("no-such-pagemap: cannot read"),
        "{absent}"
    );
}
