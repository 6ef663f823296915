//! Invariants over generated input: parsers never panic, whatever the bytes; eligible
//! ranges are aligned, inside their VMA, ordered and cover every whole region of a
//! candidate VMA.

mod common;

use common::{data, text};
use hugemm_agent::observe::buddyinfo::BuddyInfo;
use hugemm_agent::observe::kconfig::KernelConfig;
use hugemm_agent::observe::pagetypeinfo::PageTypeInfo;
use hugemm_agent::observe::psi::Pressure;
use hugemm_agent::observe::smaps::Smaps;
use hugemm_agent::Geometry;
use proptest::prelude::*;
use std::path::Path;

const FILES: [&str; 5] = [
    "smaps",
    "buddyinfo",
    "pagetypeinfo",
    "pressure-io",
    "config-excerpt",
];

/// Run the parser of `file` on `text`; only its not panicking matters.
fn parse(file: &str, text: &str) {
    let path = Path::new(file);
    let _ = match file {
        "smaps" => Smaps::parse(path, text).map(drop),
        "buddyinfo" => BuddyInfo::parse(path, text).map(drop),
        "pagetypeinfo" => PageTypeInfo::parse(path, text).map(drop),
        "pressure-io" => Pressure::parse(path, text).map(drop),
        _ => KernelConfig::parse(path, text).map(drop),
    };
}

/// One generated VMA: start page (in 4 KB pages above 1 GB), length in pages, and kind.
fn vma_strategy() -> impl Strategy<Value = (u64, u64, u8)> {
    (0u64..4096, 1u64..2048, 0u8..6)
}

/// smaps text for VMAs laid out one after another with gaps.
fn smaps_text(vmas: &[(u64, u64, u8)]) -> String {
    let mut out = String::new();
    let mut next = 1u64 << 18; // pages: 1 GB
    for &(gap, len, kind) in vmas {
        let start = (next + gap) * 4096;
        let end = start + len * 4096;
        next = end / 4096;
        let (perms, path, flags) = match kind {
            0 => ("rw-p", "", "rd wr mr mw me ac"),
            1 => ("rw-p", "", "rd wr mr mw me ac nh"),
            2 => ("r--p", "", "rd mr mw me ac"),
            3 => ("rw-s", "/dev/zero (deleted)", "rd wr sh mr mw me ms"),
            4 => ("rw-p", "[heap]", "rd wr mr mw me ac hg"),
            _ => ("rw-p", "/lib/x.so", "rd wr mr mw me ac"),
        };
        let inode = if path.starts_with('/') { 7 } else { 0 };
        out += &format!("{start:x}-{end:x} {perms} 00000000 00:00 {inode}  {path}\n");
        out += &format!(
            "Size: {} kB\nRss: 0 kB\nAnonymous: 0 kB\nAnonHugePages: 0 kB\n",
            len * 4
        );
        out += &format!("VmFlags: {flags}\n");
    }
    out
}

proptest! {
    #[test]
    fn no_bytes_make_a_parser_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let text = String::from_utf8_lossy(&bytes);
        for file in FILES {
            parse(file, &text);
        }
    }

    #[test]
    fn a_captured_file_with_one_line_mangled_never_panics(
        which in 0..FILES.len(),
        line in 0usize..200,
        junk in "[ -~]{0,40}",
    ) {
        let file = FILES[which];
        let original = text(file);
        let mut lines: Vec<&str> = original.lines().collect();
        let n = line % lines.len();
        lines[n] = &junk;
        parse(file, &lines.join("\n"));
        let cut = original.len() * line / 200;
        if original.is_char_boundary(cut) {
            parse(file, &original[..cut]);
        }
    }

    #[test]
    fn eligible_ranges_are_aligned_whole_regions_of_candidate_vmas(
        vmas in proptest::collection::vec(vma_strategy(), 1..12),
    ) {
        let g = Geometry::X86_64;
        let smaps = Smaps::parse(Path::new("generated"), &smaps_text(&vmas)).unwrap();
        prop_assert_eq!(smaps.vmas.len(), vmas.len());
        let ranges: Vec<_> = smaps.eligible_ranges(g).collect();
        for pair in ranges.windows(2) {
            prop_assert!(pair[0].range.end() <= pair[1].range.start());
        }
        for e in &ranges {
            let m = &e.vma.mapping;
            prop_assert!(e.vma.is_collapse_candidate());
            prop_assert!(m.start <= e.range.start() && e.range.end() <= m.end);
            prop_assert_eq!(e.range.start().0 % g.huge_bytes(), 0);
            prop_assert_eq!(e.range.end().0 % g.huge_bytes(), 0);
        }
        for v in smaps.vmas.iter().filter(|v| v.is_collapse_candidate()) {
            let huge = g.huge_bytes();
            let whole = v.mapping.end.0 / huge > v.mapping.start.0.div_ceil(huge);
            prop_assert_eq!(whole, ranges.iter().any(|e| std::ptr::eq(e.vma, v)));
        }
    }
}

#[test]
fn the_captured_files_parse() {
    for file in FILES {
        let path = data(file);
        let text = text(file);
        match file {
            "smaps" => drop(Smaps::parse(&path, &text).unwrap()),
            "buddyinfo" => drop(BuddyInfo::parse(&path, &text).unwrap()),
            "pagetypeinfo" => drop(PageTypeInfo::parse(&path, &text).unwrap()),
            "pressure-io" => drop(Pressure::parse(&path, &text).unwrap()),
            _ => drop(KernelConfig::parse(&path, &text).unwrap()),
        }
    }
}
