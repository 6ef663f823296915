//! What `hugemm reproduce` writes for a reproduction, into its directory:
//!
//! - `reproduction.json`: one shape for every reproduction (schema in `docs/output.md`,
//!   versioned by [`SCHEMA_VERSION`]): the paper's values beside hugemm's, each claim and
//!   its verdict, the figures' data, the runs, the text tables and the reproduction's own
//!   numbers;
//! - `report.md` and `report.html`: the same as pages, figures included;
//! - `<figure>.svg` and `<figure>.png` for every figure;
//! - `runs/<set>/<variant>/summary.json` and `timeseries.csv`: every run behind the
//!   results, as `hugemm run` writes them, so that any variant can be plotted (or given
//!   to `hugemm report`) without editing anything;
//! - `config.resolved.toml`: the file as run.
//!
//! A directory of reproductions also gets an index page ([`write_index`]).

use super::{Claim, Report, Reproduction, Value, SCHEMA_VERSION};
use crate::page::{Block, Cell, Page, Section};
use crate::plot::Figure;
use crate::provenance::Provenance;
use crate::report;
use anyhow::Context;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// A reproduction's paper and item, by kind (`hugemm reproduce --list`, the pages).
pub fn paper_item(kind: &str) -> &'static str {
    match kind {
        "apsys16-fig2" => "APSys'16 Figure 2",
        "apsys16-table1" => "APSys'16 Table 1",
        "apsys16-fig3" => "APSys'16 Figure 3",
        "apsys16-table2" => "APSys'16 Table 2",
        "apsys16-highalloc" => "APSys'16 section 5.3 (stress-highalloc)",
        "hawkeye-table3" => "HawkEye Table 3",
        "apsys16-table3" => "APSys'16 Tables 3-4 (section 5.4)",
        "hawkeye-fig5" => "HawkEye Figures 5-6",
        "hawkeye-fig7" => "HawkEye Figure 7, Table 5",
        "hawkeye-fig8" => "HawkEye Figure 8",
        "hawkeye-fig9" => "HawkEye Figure 9, Table 6 (virtual machines)",
        "hawkeye-fig11" => "HawkEye Figure 11 (ballooning under overcommit)",
        "hawkeye-table9" => "HawkEye Table 9",
        "hawkeye-fig1" => "HawkEye Figure 1",
        "hawkeye-table1" => "HawkEye Table 1",
        "hawkeye-table7" => "HawkEye Table 7",
        "hawkeye-table8" => "HawkEye Table 8",
        "hawkeye-fig10" => "HawkEye Figure 10",
        "nimble-fig2" => "Nimble Figure 2",
        "nimble-fig3" => "Nimble Figure 3",
        "nimble-fig8" => "Nimble Figure 8",
        "nimble-fig9" => "Nimble Figure 9",
        "nimble-fig10" => "Nimble Figure 10",
        "nimble-fig11" => "Nimble Figure 11",
        "nimble-table2" => "Nimble Table 2",
        "nimble-fig12" => "Nimble Figure 12",
        "nimble-fig13" => "Nimble Figure 13",
        "nimble-fig14" => "Nimble Figure 14",
        "combined-promotion-x-tiering" => "beyond the papers: promotion x tiering",
        "sysmon-fig1" => "SysMon-H Figure 1",
        "sysmon-overhead" => "SysMon-H section 3.3 (overheads)",
        "sysmon-vs-hawkeye" => "beyond the papers: H-Policy vs HawkEye's bloat recovery",
        _ => "",
    }
}

/// What the index page says of one reproduction.
#[derive(Clone, Debug)]
pub struct Written {
    /// The reproduction file.
    pub file: PathBuf,
    /// Where its results are.
    pub dir: PathBuf,
    /// Its kind.
    pub kind: String,
    /// Its report's title.
    pub title: String,
    /// Its claims.
    pub claims: Vec<Claim>,
    /// Wall time of its runs (s).
    pub wall_s: f64,
}

/// A figure as `reproduction.json` lists it: its files, then its data.
#[derive(Serialize)]
struct FigureEntry<'a> {
    svg: String,
    png: String,
    #[serde(flatten)]
    figure: &'a Figure,
}

/// A run as `reproduction.json` lists it.
#[derive(Serialize)]
struct RunEntry {
    /// "xsbench / hawkeye-g".
    name: String,
    /// "runs/xsbench/hawkeye-g", relative to the reproduction's directory.
    dir: String,
}

/// `reproduction.json`.
#[derive(Serialize)]
struct File<'a> {
    schema: &'static str,
    schema_version: u32,
    provenance: &'a Provenance,
    kind: &'a str,
    paper: &'static str,
    title: &'a str,
    scale: &'a str,
    claims: &'a [Claim],
    values: &'a [Value],
    figures: Vec<FigureEntry<'a>>,
    runs: &'a [RunEntry],
    tables: &'a [String],
    data: &'a serde_json::Value,
}

/// A path segment safe as a directory name: `/` and other characters a file system or a
/// shell would mind become `_`.
fn segment(s: &str) -> String {
    let safe: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "+-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    match safe.as_str() {
        "" | "." | ".." => "_".into(),
        _ => safe,
    }
}

/// Write everything of `report` (reproduction `r` from `file`, run in `wall_s`) into
/// `out`.
pub fn write(
    out: &Path,
    file: &Path,
    r: &Reproduction,
    report: &Report,
    wall_s: f64,
    provenance: &Provenance,
) -> anyhow::Result<Written> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let put = |name: &str, text: String| {
        let path = out.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
    };
    put(
        "config.resolved.toml",
        report::resolved_toml(&r.resolved, provenance)?,
    )?;
    let mut runs = Vec::new();
    for run in &report.runs {
        let rel: PathBuf = std::iter::once("runs".to_string())
            .chain(run.path.iter().map(|s| segment(s)))
            .collect();
        let dir = out.join(&rel);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        report::write_summary(&dir, &run.result.summary, provenance)?;
        report::write_timeseries(&dir.join("timeseries.csv"), &run.result.timeseries)?;
        report::write_tlb_windows(&dir, &run.result.tlb_windows)?;
        runs.push(RunEntry {
            name: run.path.join(" / "),
            dir: rel.to_string_lossy().replace('\\', "/"),
        });
    }
    for (name, text) in &report.files {
        put(name, text.clone())?;
    }
    let figures: Vec<&Figure> = report.figures.iter().filter(|f| !f.is_empty()).collect();
    let mut svgs = Vec::new();
    for f in &figures {
        svgs.push(f.write(out)?);
    }
    let json = File {
        schema: "hugemm-reproduction",
        schema_version: SCHEMA_VERSION,
        provenance,
        kind: &r.kind,
        paper: paper_item(&r.kind),
        title: &report.title,
        scale: &report.scale,
        claims: &report.claims,
        values: &report.values,
        figures: figures
            .iter()
            .map(|f| FigureEntry {
                svg: format!("{}.svg", f.id),
                png: format!("{}.png", f.id),
                figure: f,
            })
            .collect(),
        runs: &runs,
        tables: &report.tables,
        data: &report.data,
    };
    put(
        "reproduction.json",
        serde_json::to_string_pretty(&json)? + "\n",
    )?;
    let page = page(file, r, report, wall_s, provenance, &figures, &svgs, &runs);
    put("report.md", page.markdown())?;
    put("report.html", page.html())?;
    Ok(Written {
        file: file.to_path_buf(),
        dir: out.to_path_buf(),
        kind: r.kind.clone(),
        title: report.title.clone(),
        claims: report.claims.clone(),
        wall_s,
    })
}

/// The facts about a page's making: hugemm's version and commit, the date, the command.
pub(crate) fn made_by(provenance: &Provenance) -> Vec<(String, String)> {
    let mut meta = vec![(
        "hugemm".to_string(),
        match &provenance.git_commit {
            Some(c) => format!("{} ({c})", provenance.hugemm_version),
            None => provenance.hugemm_version.clone(),
        },
    )];
    meta.push(("date".into(), provenance.date.clone()));
    meta.push(("command".into(), provenance.command_line.clone()));
    meta
}

/// A claim's cells in the pages' tables: claim, paper, hugemm, holds.
fn claim_cells(c: &Claim) -> [Cell; 4] {
    [
        c.claim.as_str().into(),
        c.paper.as_str().into(),
        c.hugemm.as_str().into(),
        Cell::verdict(c.holds),
    ]
}

/// The claims as a page table.
fn claims_block(claims: &[Claim]) -> Block {
    Block::table(
        &["claim", "paper", "hugemm", "holds"],
        claims.iter().map(|c| claim_cells(c).to_vec()).collect(),
    )
}

/// A number as the pages print it: three significant digits, no exponent below 1e9.
pub(crate) fn number(x: f64) -> String {
    if x.fract() == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let digits = (2 - x.abs().log10().floor() as i32).clamp(0, 6) as usize;
    format!("{x:.digits$}")
}

#[allow(clippy::too_many_arguments)]
fn page(
    file: &Path,
    r: &Reproduction,
    report: &Report,
    wall_s: f64,
    provenance: &Provenance,
    figures: &[&Figure],
    svgs: &[String],
    runs: &[RunEntry],
) -> Page {
    let mut meta = vec![
        ("paper".to_string(), paper_item(&r.kind).to_string()),
        ("reproduction".into(), file.display().to_string()),
        ("scale".into(), report.scale.clone()),
        ("wall time".into(), format!("{wall_s:.1} s")),
    ];
    meta.extend(made_by(provenance));
    let mut sections = Vec::new();
    if !report.claims.is_empty() {
        sections.push(Section::new(
            "Claims",
            vec![
                Block::Para(format!(
                    "{} of {} of the paper's claims hold in hugemm's results.",
                    report
                        .claims
                        .iter()
                        .filter(|c| c.holds == Some(true))
                        .count(),
                    report.claims.len()
                )),
                claims_block(&report.claims),
            ],
        ));
    }
    if !report.values.is_empty() {
        sections.push(Section::new(
            "The paper's numbers beside hugemm's",
            vec![Block::table(
                &[
                    "item",
                    "row",
                    "quantity",
                    "paper",
                    "hugemm",
                    "hugemm / paper",
                ],
                report
                    .values
                    .iter()
                    .map(|v| {
                        vec![
                            v.item.as_str().into(),
                            v.row.as_str().into(),
                            v.quantity.as_str().into(),
                            number(v.paper).into(),
                            v.hugemm.map_or("-".into(), number).into(),
                            v.ratio.map_or("-".into(), |x| format!("{x:.2}")).into(),
                        ]
                    })
                    .collect(),
            )],
        ));
    }
    if !figures.is_empty() {
        sections.push(Section::new(
            "Figures",
            figures
                .iter()
                .zip(svgs)
                .map(|(f, svg)| Block::Figure {
                    figure: (*f).clone(),
                    svg: svg.clone(),
                })
                .collect(),
        ));
    }
    sections.push(Section::new(
        "Tables as printed",
        report
            .tables
            .iter()
            .map(|t| Block::Pre(t.clone()))
            .collect(),
    ));
    if !runs.is_empty() {
        sections.push(Section::new(
            "Runs",
            vec![
                Block::Para(
                    "Every run behind these results, written as `hugemm run` writes a run \
                     (`hugemm report DIR` draws one)."
                        .into(),
                ),
                Block::table(
                    &["run", "summary", "time series"],
                    runs.iter()
                        .map(|run| {
                            vec![
                                run.name.as_str().into(),
                                Cell::link("summary.json", format!("{}/summary.json", run.dir)),
                                Cell::link("timeseries.csv", format!("{}/timeseries.csv", run.dir)),
                            ]
                        })
                        .collect(),
                ),
            ],
        ));
    }
    Page {
        title: report.title.clone(),
        meta,
        sections,
    }
}

/// `to` relative to `from` (both below one directory, as the index and its reports are).
fn relative(from: &Path, to: &Path) -> String {
    let rel = to.strip_prefix(from).unwrap_or(to);
    rel.to_string_lossy().replace('\\', "/")
}

/// Write `index.md` and `index.html` into `out`: every reproduction of `written` linked,
/// with how many of its claims hold, and every claim with its verdict.
pub fn write_index(out: &Path, written: &[Written], provenance: &Provenance) -> anyhow::Result<()> {
    let holds = |c: &[Claim]| c.iter().filter(|c| c.holds == Some(true)).count();
    let all: usize = written.iter().map(|w| w.claims.len()).sum();
    let held: usize = written.iter().map(|w| holds(&w.claims)).sum();
    let wall: f64 = written.iter().map(|w| w.wall_s).sum();
    let summary = Block::table(
        &["reproduction", "paper", "claims holding", "wall time s"],
        written
            .iter()
            .map(|w| {
                vec![
                    Cell::link(
                        w.file.display().to_string(),
                        format!("{}/report.html", relative(out, &w.dir)),
                    ),
                    paper_item(&w.kind).into(),
                    format!("{} of {}", holds(&w.claims), w.claims.len()).into(),
                    format!("{:.1}", w.wall_s).into(),
                ]
            })
            .collect(),
    );
    let mut claims = Vec::new();
    for w in written {
        let stem = w.file.file_stem().unwrap_or_default().to_string_lossy();
        for c in &w.claims {
            let mut row = vec![Cell::link(
                format!("{} ({stem})", paper_item(&w.kind)),
                format!("{}/report.html", relative(out, &w.dir)),
            )];
            row.extend(claim_cells(c));
            claims.push(row);
        }
    }
    let mut meta = vec![
        ("reproductions".to_string(), written.len().to_string()),
        ("claims holding".into(), format!("{held} of {all}")),
        (
            "wall time of the runs, summed".into(),
            format!("{wall:.1} s"),
        ),
    ];
    meta.extend(made_by(provenance));
    let page = Page {
        title: "hugemm: the papers' results reproduced".into(),
        meta,
        sections: vec![
            Section::new("Reproductions", vec![summary]),
            Section::new(
                "Every claim",
                vec![Block::table(
                    &["reproduction", "claim", "paper", "hugemm", "holds"],
                    claims,
                )],
            ),
        ],
    };
    for (name, text) in [("index.md", page.markdown()), ("index.html", page.html())] {
        let path = out.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_safe_directory_names() {
        assert_eq!(segment("xsbench+redis"), "xsbench+redis");
        assert_eq!(segment("a/b c"), "a_b_c");
        assert_eq!(segment(".."), "_");
        assert_eq!(segment(""), "_");
    }

    #[test]
    fn numbers_keep_three_significant_digits() {
        assert_eq!(number(2270.0), "2270");
        assert_eq!(number(1.1349), "1.13");
        assert_eq!(number(0.0123), "0.0123");
        assert_eq!(number(0.0), "0");
        assert_eq!(number(26.2e6), "26200000");
        assert_eq!(number(7.0), "7");
    }

    #[test]
    fn every_kind_has_a_paper_item() {
        for kind in super::super::KINDS {
            assert!(!paper_item(kind).is_empty(), "{kind}");
        }
    }
}
