//! The kernel model's layering (`src/lib.rs`): no module imports from a group above its
//! own. The groups, low to high: the shared leaves (`api`, `costs`, `error`, `stats`),
//! `phys`, `pressure`, `space`, `huge`, `kernel`. A module may name its own group, any
//! lower group and the shared leaves; `lib.rs`, which assembles the public API, may name
//! anything.
//!
//! Checked on the source text: every `crate::` path (in `use` lines and inline, braces
//! expanded) and every `super::` path that climbs to the crate root, outside comments and
//! string literals. Test code is exempt: `#[cfg(test)]` modules and the files they load,
//! and `testutil.rs`, may build a whole `Kernel` to drive a mechanism end to end.

use std::fs;
use std::path::{Path, PathBuf};

/// The groups and shared leaves, each with its level (higher may import lower).
const LEVELS: [(&str, u8); 9] = [
    ("api", 0),
    ("costs", 0),
    ("error", 0),
    ("stats", 0),
    ("phys", 1),
    ("pressure", 2),
    ("space", 3),
    ("huge", 4),
    ("kernel", 5),
];

const ORDER: &str =
    "shared leaves (api, costs, error, stats) < phys < pressure < space < huge < kernel";

fn level(name: &str) -> Option<u8> {
    LEVELS.iter().find(|(n, _)| *n == name).map(|(_, l)| *l)
}

/// One import that breaks the layering, or names a module the check cannot place.
#[derive(Debug, PartialEq)]
struct Violation {
    file: String,
    line: usize,
    message: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "src/{}:{}: {}", self.file, self.line, self.message)
    }
}

/// `text` with comments and the contents of string and char literals blanked out, byte
/// for byte (newlines kept), so offsets and line numbers stay those of `text`.
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut [u8], from: usize, to: usize| {
        for c in &mut out[from..to.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        let end = if b[i..].starts_with(b"//") {
            let e = b[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |k| i + k);
            blank(&mut out, i, e);
            e
        } else if b[i..].starts_with(b"/*") {
            let e = (i + 2..b.len())
                .find(|&k| b[k..].starts_with(b"*/"))
                .map_or(b.len(), |k| k + 2);
            blank(&mut out, i, e);
            e
        } else if b[i] == b'"' {
            let mut k = i + 1;
            while k < b.len() && b[k] != b'"' {
                k += if b[k] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i + 1, k);
            k + 1
        } else if b[i] == b'\'' && b.get(i + 1) == Some(&b'\\') {
            let e = (i + 3..b.len())
                .find(|&k| b[k] == b'\'')
                .map_or(b.len(), |k| k + 1);
            blank(&mut out, i + 1, e - 1);
            e
        } else if b[i] == b'\'' && b.get(i + 2) == Some(&b'\'') {
            blank(&mut out, i + 1, i + 2);
            i + 3
        } else {
            i + 1
        };
        i = end;
    }
    String::from_utf8(out).expect("blanking keeps UTF-8: whole characters are replaced")
}

/// Byte ranges of `code` that are `#[cfg(test)]` inline modules.
fn test_regions(code: &str) -> Vec<(usize, usize)> {
    let mut regions = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("#[cfg(test)]") {
        let start = from + at;
        let after = &code[start + "#[cfg(test)]".len()..];
        let rest = after.trim_start();
        let brace = rest.find(['{', ';']).map(|k| (k, rest.as_bytes()[k]));
        from = start + 1;
        let Some((k, b'{')) = brace else { continue };
        if !rest[..k].trim_start().starts_with("mod ") {
            continue;
        }
        let open = start + "#[cfg(test)]".len() + (after.len() - rest.len()) + k;
        let mut depth = 0usize;
        let mut end = code.len();
        for (j, c) in code[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + j + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        regions.push((start, end));
        from = end;
    }
    regions
}

/// Modules `#[cfg(test)] mod name;` loads from another file, in `code` (`raw` blanked
/// by [`code_only`]): each file name and whether a `#[path]` gave it.
fn test_module_files(code: &str, raw: &str) -> Vec<(String, bool)> {
    let mut files = Vec::new();
    for (at, _) in code.match_indices("#[cfg(test)]") {
        let rest = raw[at + "#[cfg(test)]".len()..].trim_start();
        let (path, rest) = match rest.strip_prefix("#[path = \"") {
            Some(r) => {
                let (p, after) = r.split_once('"').unwrap_or(("", ""));
                (
                    Some(p.to_string()),
                    after.split_once(']').map_or("", |x| x.1),
                )
            }
            None => (None, rest),
        };
        let Some(decl) = rest.trim_start().strip_prefix("mod ") else {
            continue;
        };
        let name: String = decl
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if decl[name.len()..].trim_start().starts_with(';') {
            let by_path = path.is_some();
            files.push((path.unwrap_or(format!("{name}.rs")), by_path));
        }
    }
    files
}

/// The module path of a source file (`phys/fallback/aaf.rs` -> `[phys, fallback, aaf]`).
fn module_path(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The first segment of each path a `crate::` (or root-reaching `super::`) use names,
/// with its byte offset.
fn root_names(code: &str, depth: usize) -> Vec<(usize, String)> {
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut names = Vec::new();
    let mut push_after = |at: usize, rest: &str| {
        let rest = rest.trim_start();
        if let Some(inner) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut item_start = 0;
            for (j, c) in inner.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' | ',' if depth == 1 => {
                        let name = ident(&inner[item_start..j]);
                        if !name.is_empty() {
                            names.push((at, name));
                        }
                        item_start = j + 1;
                        if c == '}' {
                            break;
                        }
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
        } else {
            names.push((at, ident(rest)));
        }
    };
    for (at, _) in code.match_indices("crate::") {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // e.g. `hugemm_crate::`
        }
        push_after(at, &code[at + "crate::".len()..]);
    }
    // `super::` from a module at depth d climbs to the root after d supers.
    if depth > 0 {
        let climb = "super::".repeat(depth);
        for (at, _) in code.match_indices(&climb) {
            let prev = code[..at].trim_end();
            if prev.ends_with("super::") || prev.ends_with("::") {
                continue;
            }
            push_after(at, &code[at + climb.len()..]);
        }
    }
    names
}

/// The layering violations of the file at `rel` (relative to `src/`) with text `raw`.
fn violations_in(rel: &str, raw: &str) -> Vec<Violation> {
    let path = module_path(rel);
    let Some(own) = path.first().and_then(|g| level(g)) else {
        return Vec::new(); // lib.rs assembles the API; testutil.rs is test code
    };
    let code = code_only(raw);
    let tests = test_regions(&code);
    let group = &path[0];
    let mut out = Vec::new();
    for (at, name) in root_names(&code, path.len()) {
        if tests.iter().any(|&(a, b)| (a..b).contains(&at)) {
            continue;
        }
        let line = raw[..at].matches('\n').count() + 1;
        let message = match level(&name) {
            Some(l) if l <= own => continue,
            Some(_) => format!("names `{name}`, above `{group}` ({ORDER})"),
            None => format!(
                "names `crate::{name}`, which is not a group or shared leaf: import through \
                 the group's path (crate::phys::buddy, ...) so the layering can be checked"
            ),
        };
        out.push(Violation {
            file: rel.to_string(),
            line,
            message,
        });
    }
    out
}

/// Every `.rs` file under `dir`, relative to `root`, with `/` separators.
fn sources(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            sources(root, &p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            let rel = p
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            out.push((rel, p));
        }
    }
}

/// The files only test builds load: those a `#[cfg(test)] mod x;` declares (`testutil.rs`,
/// `*_tests.rs`, ...). A `#[path]` is relative to the declaring file's directory; a plain
/// `mod x;` in `d/f.rs` loads `d/f/x.rs`, in `d/mod.rs` or `lib.rs` `d/x.rs`.
fn test_only_files(files: &[(String, PathBuf)]) -> Vec<String> {
    let mut test_only = Vec::new();
    for (rel, p) in files {
        let raw = fs::read_to_string(p).unwrap();
        let (dir, file) = match rel.rsplit_once('/') {
            Some((d, f)) => (format!("{d}/"), f),
            None => (String::new(), rel.as_str()),
        };
        let owns_dir = file == "mod.rs" || file == "lib.rs";
        for (loaded, by_path) in test_module_files(&code_only(&raw), &raw) {
            test_only.push(match by_path || owns_dir {
                true => format!("{dir}{loaded}"),
                false => format!("{dir}{}/{loaded}", file.trim_end_matches(".rs")),
            });
        }
    }
    test_only
}

#[test]
fn no_module_imports_from_a_group_above_its_own() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &root, &mut files);
    assert!(
        files.len() > 40,
        "found only {} source files under src/",
        files.len()
    );
    let test_only = test_only_files(&files);
    let mut violations = Vec::new();
    let mut checked = 0;
    for (rel, p) in &files {
        if test_only.contains(rel) {
            continue;
        }
        checked += 1;
        violations.extend(violations_in(rel, &fs::read_to_string(p).unwrap()));
    }
    assert!(checked > 40, "checked only {checked} files");
    let report: Vec<String> = violations.iter().map(ToString::to_string).collect();
    assert!(
        report.is_empty(),
        "imports against the layering (see src/lib.rs):\n{}",
        report.join("\n")
    );
}

#[test]
fn the_check_sees_upward_imports_and_ignores_tests_comments_and_strings() {
    let bad = "use crate::phys::buddy::PhysMem;\nuse crate::{error::Result, kernel::Kernel};\n";
    let v = violations_in("pressure/reclaim.rs", bad);
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0].line, 2);
    assert!(v[0].message.contains("`kernel`"), "{}", v[0].message);

    let inline = "fn f() { let _ = crate::huge::split::split_region; }\n";
    assert_eq!(violations_in("space/mech.rs", inline).len(), 1);
    let flat = "use crate::buddy::PhysMem;\n";
    assert!(violations_in("phys/pcp.rs", flat)[0]
        .message
        .contains("not a group"));
    let escape = "use super::super::kernel::Kernel;\n";
    assert_eq!(
        violations_in("phys/fallback/aaf.rs", escape).len(),
        0,
        "still inside phys"
    );
    assert_eq!(violations_in("phys/buddy.rs", escape).len(), 1);

    let exempt = "//! See [`Kernel`](crate::kernel::Kernel).\nconst S: &str = \"crate::kernel\";\n\
                  #[cfg(test)]\nmod tests {\n    use crate::kernel::Kernel;\n    fn f() { {} }\n}\n";
    assert_eq!(violations_in("phys/frame.rs", exempt), Vec::new());
    let after_tests = format!("{exempt}use crate::kernel::Kernel;\n");
    assert_eq!(violations_in("phys/frame.rs", &after_tests).len(), 1);
    assert_eq!(violations_in("kernel/mod.rs", bad), Vec::new());
}

#[test]
fn test_only_files_are_found_from_their_declarations() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &root, &mut files);
    let test_only = test_only_files(&files);
    for f in [
        "testutil.rs",
        "phys/buddy_tests.rs",
        "phys/fallback/proptests.rs",
    ] {
        assert!(
            test_only.iter().any(|t| t == f),
            "{f} not among {test_only:?}"
        );
    }
    assert!(!test_only.iter().any(|t| t.ends_with("conformance.rs")));
}
