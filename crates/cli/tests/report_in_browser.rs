//! Reports looked at as a user would: the pages `hugemm reproduce` writes are rendered by
//! headless Chromium, and a script in the rendered page checks that every figure and
//! table is there, laid out and not empty.
//!
//! Needs Chromium (`chromium`, or `CHROMIUM=/path/to/it`); `.ci/run` installs Debian's
//! package. Without it the test fails and says so: set `HUGEMM_SKIP_BROWSER_TESTS=1` to
//! skip it knowingly.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The Chromium to use, or `None` when the test is to be skipped.
fn chromium() -> Option<PathBuf> {
    if std::env::var_os("HUGEMM_SKIP_BROWSER_TESTS").is_some() {
        eprintln!("HUGEMM_SKIP_BROWSER_TESTS is set: not rendering the reports");
        return None;
    }
    if let Some(path) = std::env::var_os("CHROMIUM") {
        return Some(path.into());
    }
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        let found = std::env::var_os("PATH").map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(name))
                .find(|f| f.is_file())
        });
        if let Some(Some(path)) = found {
            return Some(path);
        }
    }
    panic!(
        "no Chromium found (chromium, chromium-browser or google-chrome on PATH, or \
         CHROMIUM=...): install Debian's `chromium` package (.ci/run does), or set \
         HUGEMM_SKIP_BROWSER_TESTS=1 to skip this test"
    );
}

/// What the check script reports about a rendered page: per figure (its id, the width
/// and height of its drawing, and how many of its shapes have an area or a length), per
/// table (rows, and cells with no text).
const CHECK: &str = r#"
<!DOCTYPE html><html><body><pre id="result">pending</pre>
<iframe id="page" src="PAGE" style="width:1200px;height:900px"></iframe>
<script>
document.getElementById('page').addEventListener('load', () => {
  const doc = document.getElementById('page').contentDocument;
  const figures = [...doc.querySelectorAll('figure')].map(f => {
    const svg = f.querySelector('svg');
    const box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
    const shapes = svg ? [...svg.querySelectorAll('rect, polyline, path, circle, line')]
      .filter(s => { const b = s.getBBox(); return b.width > 0 || b.height > 0; }).length : 0;
    const texts = svg ? [...svg.querySelectorAll('text')].filter(t => t.textContent.trim()).length : 0;
    return {id: f.id, width: box.width, height: box.height, shapes, texts};
  });
  const tables = [...doc.querySelectorAll('table')].map(t => ({
    rows: t.querySelectorAll('tbody tr').length,
    empty_cells: [...t.querySelectorAll('tbody td')].filter(c => !c.textContent.trim()).length,
    visible: t.getBoundingClientRect().height > 0,
  }));
  document.getElementById('result').textContent =
    JSON.stringify({title: doc.title, figures, tables});
});
</script></body></html>
"#;

/// `page` rendered by `chromium`, as the check script saw it.
fn render(chromium: &Path, page: &Path) -> serde_json::Value {
    let dir = page.parent().unwrap();
    let check = dir.join(format!(
        "check-{}.html",
        page.file_stem().unwrap().to_string_lossy()
    ));
    std::fs::write(
        &check,
        CHECK.replace("PAGE", &page.file_name().unwrap().to_string_lossy()),
    )
    .unwrap();
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--allow-file-access-from-files",
            "--virtual-time-budget=15000",
            "--dump-dom",
        ])
        .arg(format!(
            "file://{}",
            check.canonicalize().unwrap().display()
        ))
        .output()
        .expect("running chromium");
    let dom = String::from_utf8_lossy(&out.stdout);
    let json = dom
        .split("<pre id=\"result\">")
        .nth(1)
        .and_then(|rest| rest.split("</pre>").next())
        .unwrap_or_else(|| {
            panic!(
                "no result in Chromium's DOM (status {}): {dom}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            )
        });
    let json = json.replace("&quot;", "\"").replace("&amp;", "&");
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"))
}

#[test]
fn every_figure_and_table_of_the_reports_and_the_index_is_drawn_and_filled() {
    let Some(chromium) = chromium() else { return };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("results");
    let status = Command::new(env!("CARGO_BIN_EXE_hugemm"))
        .args(["reproduce", "--out"])
        .arg(&out)
        .arg(root.join("experiments/apsys16/fig2.toml"))
        .arg(root.join("experiments/apsys16/table1.toml"))
        .args(common::small_build(300))
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );

    for name in ["fig2", "table1"] {
        let dir = out.join(name);
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("reproduction.json")).unwrap())
                .unwrap();
        let seen = render(&chromium, &dir.join("report.html"));
        assert_eq!(seen["title"], json["title"], "{name}");
        // Every figure of reproduction.json, in order, drawn at a readable size, with its
        // axes, data and legend (more than a few shapes) and its labels.
        let figures = seen["figures"].as_array().unwrap();
        let expected: Vec<&str> = json["figures"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["id"].as_str().unwrap())
            .collect();
        assert!(!expected.is_empty(), "{name} has figures");
        assert_eq!(
            figures
                .iter()
                .map(|f| f["id"].as_str().unwrap())
                .collect::<Vec<_>>(),
            expected,
            "{name}"
        );
        for f in figures {
            assert!(f["width"].as_f64().unwrap() > 300.0, "{name}: {f}");
            assert!(f["height"].as_f64().unwrap() > 150.0, "{name}: {f}");
            assert!(f["shapes"].as_u64().unwrap() >= 5, "{name}: {f}");
            assert!(f["texts"].as_u64().unwrap() >= 5, "{name}: {f}");
        }
        // Tables: the claims (if any), the paper's values (if any) and the runs, each
        // with rows and no empty cell.
        let tables = seen["tables"].as_array().unwrap();
        let count = |key: &str| usize::from(!json[key].as_array().unwrap().is_empty());
        assert_eq!(
            tables.len(),
            count("claims") + count("values") + count("runs"),
            "{name}: {tables:?}"
        );
        for t in tables {
            assert!(t["rows"].as_u64().unwrap() > 0, "{name}: {t}");
            assert_eq!(t["empty_cells"], 0, "{name}: {t}");
            assert_eq!(t["visible"], true, "{name}: {t}");
        }
    }

    // The index: a row per reproduction, a row per claim, no empty cell.
    let seen = render(&chromium, &out.join("index.html"));
    let tables = seen["tables"].as_array().unwrap();
    assert_eq!(tables.len(), 2, "{seen}");
    assert_eq!(tables[0]["rows"], 2, "{seen}");
    assert!(tables[1]["rows"].as_u64().unwrap() >= 2, "{seen}");
    for t in tables {
        assert_eq!(t["empty_cells"], 0, "{seen}");
    }
}
