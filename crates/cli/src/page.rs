//! Pages of results: what a reproduction's `report.md` and `report.html`, a directory's
//! index, `hugemm report` and `hugemm compare` show, as data ([`Page`]), rendered as
//! Markdown (for a repository or a note) and as one self-contained HTML file (figures
//! inlined as SVG, styles inline: it opens from a mail attachment or a cluster's scratch
//! directory with nothing beside it).
//!
//! The Markdown page links each figure's `<id>.svg` (and names its PNG) beside it, so it
//! renders where the files are, e.g. on a code forge.

use crate::plot::Figure;
use maud::{html, Markup, PreEscaped, DOCTYPE};
use std::fmt::Write as _;

/// A page: a title, facts about what made it, and sections.
#[derive(Clone, Debug, Default)]
pub struct Page {
    /// Title (the HTML title and first heading).
    pub title: String,
    /// (what, value) lines under the title: scale, commit, date, wall time.
    pub meta: Vec<(String, String)>,
    /// The sections, in order.
    pub sections: Vec<Section>,
}

/// A headed part of a page.
#[derive(Clone, Debug)]
pub struct Section {
    /// Heading.
    pub heading: String,
    /// Its content, in order.
    pub blocks: Vec<Block>,
}

/// A piece of a section.
#[derive(Clone, Debug)]
pub enum Block {
    /// A paragraph of plain text.
    Para(String),
    /// A table; its first column names the row.
    Table {
        /// Column names.
        header: Vec<String>,
        /// Rows of cells.
        rows: Vec<Vec<Cell>>,
    },
    /// Preformatted text (a text table as hugemm prints it).
    Pre(String),
    /// A figure and its SVG.
    Figure {
        /// What to draw (its id names the files beside the page).
        figure: Figure,
        /// The figure drawn ([`Figure::svg`]).
        svg: String,
    },
}

/// A table cell: text, optionally a link, optionally a verdict (coloured in HTML).
#[derive(Clone, Debug, Default)]
pub struct Cell {
    /// The text.
    pub text: String,
    /// Where it links to (relative to the page).
    pub href: Option<String>,
    /// A claim's verdict: `Some(true)` holds, `Some(false)` does not.
    pub verdict: Option<bool>,
}

impl From<String> for Cell {
    fn from(text: String) -> Self {
        Cell {
            text,
            ..Cell::default()
        }
    }
}

impl From<&str> for Cell {
    fn from(text: &str) -> Self {
        Cell::from(text.to_string())
    }
}

impl Cell {
    /// A link.
    pub fn link(text: impl Into<String>, href: impl Into<String>) -> Cell {
        Cell {
            text: text.into(),
            href: Some(href.into()),
            verdict: None,
        }
    }

    /// A claim's verdict: "yes", "no", or "-" when it could not be judged.
    pub fn verdict(holds: Option<bool>) -> Cell {
        Cell {
            text: match holds {
                Some(true) => "yes",
                Some(false) => "no",
                None => "-",
            }
            .into(),
            href: None,
            verdict: holds,
        }
    }
}

impl Section {
    /// A section of `blocks`.
    pub fn new(heading: impl Into<String>, blocks: Vec<Block>) -> Section {
        Section {
            heading: heading.into(),
            blocks,
        }
    }
}

impl Block {
    /// A table of `header` and `rows`.
    pub fn table(header: &[&str], rows: Vec<Vec<Cell>>) -> Block {
        Block::Table {
            header: header.iter().map(|h| h.to_string()).collect(),
            rows,
        }
    }
}

/// `text` made safe for a Markdown table cell: pipes escaped, lines joined.
fn md_cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

impl Page {
    /// The page as Markdown.
    pub fn markdown(&self) -> String {
        let mut out = format!("# {}\n\n", self.title);
        for (what, value) in &self.meta {
            let _ = writeln!(out, "- {what}: {value}");
        }
        for section in &self.sections {
            let _ = write!(out, "\n## {}\n", section.heading);
            for block in &section.blocks {
                out.push('\n');
                match block {
                    Block::Para(text) => {
                        let _ = writeln!(out, "{text}");
                    }
                    Block::Table { header, rows } => {
                        let _ = writeln!(
                            out,
                            "| {} |",
                            header
                                .iter()
                                .map(|h| md_cell(h))
                                .collect::<Vec<_>>()
                                .join(" | ")
                        );
                        let _ = writeln!(out, "|{}", "---|".repeat(header.len()));
                        for row in rows {
                            let cells: Vec<String> = row
                                .iter()
                                .map(|c| match &c.href {
                                    Some(href) => format!("[{}]({href})", md_cell(&c.text)),
                                    None => md_cell(&c.text),
                                })
                                .collect();
                            let _ = writeln!(out, "| {} |", cells.join(" | "));
                        }
                    }
                    Block::Pre(text) => {
                        let _ = writeln!(out, "```\n{}\n```", text.trim_end());
                    }
                    Block::Figure { figure, .. } => {
                        let _ = writeln!(
                            out,
                            "![{}]({id}.svg)\n\n(also [{id}.png]({id}.png))",
                            figure.title,
                            id = figure.id
                        );
                    }
                }
            }
        }
        out
    }

    /// The page as one self-contained HTML document.
    pub fn html(&self) -> String {
        let page: Markup = html! {
            (DOCTYPE)
            html lang="en" {
                head {
                    meta charset="utf-8";
                    meta name="viewport" content="width=device-width, initial-scale=1";
                    meta name="generator" content="hugemm";
                    title { (self.title) }
                    style { (PreEscaped(STYLE)) }
                }
                body {
                    h1 { (self.title) }
                    @if !self.meta.is_empty() {
                        dl.meta {
                            @for (what, value) in &self.meta {
                                dt { (what) } dd { (value) }
                            }
                        }
                    }
                    @for section in &self.sections {
                        section {
                            h2 { (section.heading) }
                            @for block in &section.blocks { (html_block(block)) }
                        }
                    }
                }
            }
        };
        page.into_string()
    }
}

fn html_block(block: &Block) -> Markup {
    match block {
        Block::Para(text) => html! { p { (text) } },
        Block::Pre(text) => html! { pre { (text.trim_end()) } },
        Block::Table { header, rows } => html! {
            table {
                thead { tr { @for h in header { th { (h) } } } }
                tbody {
                    @for row in rows {
                        tr {
                            @for cell in row {
                                td class=[cell_class(cell)] {
                                    @if let Some(href) = &cell.href {
                                        a href=(href) { (cell.text) }
                                    } @else {
                                        (cell.text)
                                    }
                                }
                            }
                        }
                    }
                }
            }
        },
        Block::Figure { figure, svg } => html! {
            figure id=(figure.id) {
                (PreEscaped(svg))
                figcaption {
                    (figure.title) " ("
                    a href={ (figure.id) ".svg" } { "SVG" } ", "
                    a href={ (figure.id) ".png" } { "PNG" } ")"
                }
            }
        },
    }
}

/// A cell's style: its verdict's colour, else right-aligned if it reads as a number
/// ("1.25", "-3%", "27.45x", "12 s"), else none (left-aligned text).
fn cell_class(cell: &Cell) -> Option<&'static str> {
    match cell.verdict {
        Some(true) => Some("holds"),
        Some(false) => Some("fails"),
        None => {
            // A number ("1,345", "27.45x", "-3%"), then at most a unit of seconds or a
            // ratio in parentheses ("12 s", "3.04 (x0.48)").
            let text = cell.text.trim();
            let (first, rest) = text.split_once(' ').unwrap_or((text, ""));
            let first = first.trim_end_matches(['x', '%']).replace(',', "");
            let number = first.parse::<f64>().is_ok_and(f64::is_finite);
            let unit = rest
                .chars()
                .all(|c| !c.is_alphabetic() || c == 'x' || c == 's');
            (number && unit).then_some("num")
        }
    }
}

/// The pages' style sheet, inlined.
const STYLE: &str = "
body { font-family: system-ui, sans-serif; max-width: 1100px; margin: 2em auto; padding: 0 1em;
       color: #222; line-height: 1.45; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ddd; }
dl.meta { display: grid; grid-template-columns: max-content auto; gap: 0.1em 1em; color: #555; }
dl.meta dt { font-weight: 600; } dl.meta dd { margin: 0; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.92em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.holds { background: #e3f4e3; color: #135c13; font-weight: 600; }
td.fails { background: #fbe5e1; color: #8a1f11; font-weight: 600; }
pre { background: #f7f7f7; padding: 0.8em; overflow-x: auto; font-size: 0.85em; }
figure { margin: 1.5em 0; } figure svg { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #555; font-size: 0.9em; }
";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::Series;

    fn page() -> Page {
        let figure = Figure::lines(
            "fig6",
            "MMU overhead <over> time",
            "s",
            "%",
            vec![Series {
                name: "linux".into(),
                points: vec![(0.0, 1.0), (1.0, 2.0)],
            }],
        );
        let svg = figure.svg().unwrap();
        Page {
            title: "HawkEye Figure 6 & more".into(),
            meta: vec![("scale".into(), "1/8".into())],
            sections: vec![Section::new(
                "Claims",
                vec![
                    Block::table(
                        &["claim", "holds"],
                        vec![
                            vec!["a | b".into(), Cell::verdict(Some(true))],
                            vec![
                                Cell::link("run", "runs/x/summary.json"),
                                Cell::verdict(Some(false)),
                            ],
                        ],
                    ),
                    Block::Pre("a  b\n1  2\n".into()),
                    Block::Figure { figure, svg },
                ],
            )],
        }
    }

    #[test]
    fn markdown_has_the_tables_escaped_and_links_the_figures_files() {
        let md = page().markdown();
        assert!(md.starts_with("# HawkEye Figure 6 & more\n"));
        assert!(md.contains("| a \\| b | yes |"), "{md}");
        assert!(md.contains("| [run](runs/x/summary.json) | no |"), "{md}");
        assert!(md.contains("![MMU overhead <over> time](fig6.svg)"), "{md}");
        assert!(md.contains("```\na  b\n1  2\n```"), "{md}");
    }

    #[test]
    fn html_escapes_text_inlines_the_figure_and_colours_verdicts() {
        let html = page().html();
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("<title>HawkEye Figure 6 &amp; more</title>"));
        assert!(html.contains("MMU overhead &lt;over&gt; time"));
        assert!(html.contains("<svg"), "the figure is inlined");
        assert!(html.contains(r#"<td class="holds">yes</td>"#), "{html}");
        assert!(html.contains(r#"<td class="fails">no</td>"#), "{html}");
        assert!(html.contains(r#"<a href="runs/x/summary.json">run</a>"#));
    }

    #[test]
    fn numbers_are_right_aligned_and_text_is_not() {
        let class = |t: &str| cell_class(&Cell::from(t));
        for n in [
            "1.25",
            "-3%",
            "27.45x",
            "12 s",
            "2270",
            "1,345",
            "3.04 (x0.48)",
            "+1.5%",
        ] {
            assert_eq!(class(n), Some("num"), "{n}");
        }
        for t in [
            "redis linux-4k",
            "speed / linux-4k's",
            "4k",
            "-",
            "1 of 3 claims",
        ] {
            assert_eq!(class(t), None, "{t}");
        }
    }
}
