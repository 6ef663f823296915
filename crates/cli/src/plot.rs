//! Figures: what a reproduction, a run report or a sweep draws, as data ([`Figure`]),
//! rendered to SVG by plotters and to PNG by resvg.
//!
//! Two kinds cover the papers' figures: lines over a numeric x (MMU overhead or huge
//! pages over time, Fu(j) by order, a metric against a swept parameter) and grouped bars
//! over named categories (speedups per workload and policy). The figure's data is also
//! written into `reproduction.json`, so a reader can redraw it in their own style.
//!
//! The SVG is deterministic (same data, same bytes). Its text is laid out with plotters'
//! own size estimate, so it needs no font files; the PNG is rendered with whatever sans
//! serif font the system has (DejaVu Sans on Debian), so its pixels may differ between
//! machines.

use anyhow::Context;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde::Serialize;
use std::path::Path;
use std::sync::{Arc, OnceLock};

/// Size of every figure, in pixels (SVG user units).
pub const SIZE: (u32, u32) = (880, 500);

/// A figure: a title, axis labels and what to draw.
#[derive(Clone, Debug, Serialize)]
pub struct Figure {
    /// File stem (`fig6-xsbench`): the figure is written as `<id>.svg` and `<id>.png`.
    pub id: String,
    /// Title, drawn above the plot.
    pub title: String,
    /// Label of the x axis.
    pub x_label: String,
    /// Label of the y axis.
    pub y_label: String,
    /// What to draw.
    #[serde(flatten)]
    pub plot: Plot,
}

/// The drawing of a figure.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Plot {
    /// One line per series over a numeric x.
    Lines {
        /// The lines, in legend order.
        series: Vec<Series>,
    },
    /// For each category, one bar per group (a policy, say), side by side.
    Bars {
        /// The categories along x (workloads, say).
        categories: Vec<String>,
        /// The groups; each has a value per category (`None`: not measured).
        groups: Vec<BarGroup>,
    },
}

/// A line: a name for the legend and its points.
#[derive(Clone, Debug, Serialize)]
pub struct Series {
    /// Legend entry.
    pub name: String,
    /// (x, y) points, in x order.
    pub points: Vec<(f64, f64)>,
}

/// A group of bars: a name for the legend and a value per category.
#[derive(Clone, Debug, Serialize)]
pub struct BarGroup {
    /// Legend entry.
    pub name: String,
    /// One value per category (`None`: no bar).
    pub values: Vec<Option<f64>>,
}

impl Figure {
    /// A line figure.
    pub fn lines(id: &str, title: &str, x: &str, y: &str, series: Vec<Series>) -> Self {
        Self {
            id: id.into(),
            title: title.into(),
            x_label: x.into(),
            y_label: y.into(),
            plot: Plot::Lines { series },
        }
    }

    /// A grouped-bar figure.
    pub fn bars(
        id: &str,
        title: &str,
        y: &str,
        categories: Vec<String>,
        groups: Vec<BarGroup>,
    ) -> Self {
        Self {
            id: id.into(),
            title: title.into(),
            x_label: String::new(),
            y_label: y.into(),
            plot: Plot::Bars { categories, groups },
        }
    }

    /// Whether there is anything to draw.
    pub fn is_empty(&self) -> bool {
        match &self.plot {
            Plot::Lines { series } => series.iter().all(|s| s.points.is_empty()),
            Plot::Bars { groups, .. } => {
                groups.iter().all(|g| g.values.iter().all(Option::is_none))
            }
        }
    }

    /// The figure as an SVG document.
    pub fn svg(&self) -> anyhow::Result<String> {
        let mut out = String::new();
        {
            let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
            self.draw(&root)
                .map_err(|e| anyhow::anyhow!("drawing figure {}: {e}", self.id))?;
            root.present()
                .map_err(|e| anyhow::anyhow!("drawing figure {}: {e}", self.id))?;
        }
        Ok(out)
    }

    /// Writes `<id>.svg` and `<id>.png` into `dir`; returns the SVG.
    pub fn write(&self, dir: &Path) -> anyhow::Result<String> {
        let svg = self.svg()?;
        let path = dir.join(format!("{}.svg", self.id));
        std::fs::write(&path, &svg).with_context(|| format!("writing {}", path.display()))?;
        let path = dir.join(format!("{}.png", self.id));
        std::fs::write(&path, png(&svg)?).with_context(|| format!("writing {}", path.display()))?;
        Ok(svg)
    }

    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
    ) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
        root.fill(&WHITE)?;
        match &self.plot {
            Plot::Lines { series } => self.draw_lines(root, series),
            Plot::Bars { categories, groups } => self.draw_bars(root, categories, groups),
        }
    }

    fn draw_lines<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        series: &[Series],
    ) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
        let points = || series.iter().flat_map(|s| s.points.iter());
        let (x0, x1) = span(points().map(|p| p.0), false);
        let (y0, y1) = headroom(span(points().map(|p| p.1), true), series.len());
        let mut chart = ChartBuilder::on(root)
            .caption(&self.title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(x0..x1, y0..y1)?;
        chart
            .configure_mesh()
            .x_desc(&self.x_label)
            .y_desc(&self.y_label)
            .light_line_style(WHITE.mix(0.0))
            .label_style(("sans-serif", 13))
            .draw()?;
        for (i, s) in series.iter().enumerate() {
            let color = colour(i);
            let style = ShapeStyle::from(color).stroke_width(2);
            chart
                .draw_series(LineSeries::new(s.points.iter().copied(), style))?
                .label(&s.name)
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], style));
            if s.points.len() <= 24 {
                chart.draw_series(
                    s.points
                        .iter()
                        .map(|&p| Circle::new(p, 3, ShapeStyle::from(color).filled())),
                )?;
            }
        }
        legend(&mut chart)
    }

    fn draw_bars<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        categories: &[String],
        groups: &[BarGroup],
    ) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
        // Each category is `groups.len()` bars wide and one bar apart from the next.
        let width = groups.len().max(1) as f64 + 1.0;
        let values = || {
            groups
                .iter()
                .flat_map(|g| g.values.iter().flatten().copied())
        };
        let (y0, y1) = headroom(span(values(), true), groups.len());
        let x1 = categories.len().max(1) as f64 * width;
        let mut chart = ChartBuilder::on(root)
            .caption(&self.title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(0.0..x1, y0..y1)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .disable_x_axis()
            .y_desc(&self.y_label)
            .light_line_style(WHITE.mix(0.0))
            .label_style(("sans-serif", 13))
            .draw()?;
        for (g, group) in groups.iter().enumerate() {
            let color = colour(g);
            let bars = group.values.iter().enumerate().filter_map(|(c, v)| {
                let left = c as f64 * width + 0.5 + g as f64;
                v.map(|v| Rectangle::new([(left, 0.0), (left + 1.0, v)], color.filled()))
            });
            chart
                .draw_series(bars)?
                .label(&group.name)
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 14, y + 5)], color.filled())
                });
        }
        // The category names, under the middle of their bars, drawn on the whole area so
        // that the plot's clipping does not cut them.
        let style =
            TextStyle::from(("sans-serif", 13).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
        for (c, name) in categories.iter().enumerate() {
            let (px, py) = chart.backend_coord(&((c as f64 + 0.5) * width, y0));
            root.draw(&Text::new(name.as_str(), (px, py + 6), style.clone()))?;
        }
        legend(&mut chart)
    }
}

/// The legend, top right, on a white box.
fn legend<'a, DB: DrawingBackend + 'a>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .label_font(("sans-serif", 13))
        .draw()
}

/// The axis range of `values`: from the least to the greatest, widened by 5% at the top
/// (and from 0 when `from_zero` and none is negative); a range of one value or none is
/// widened to one of width 1.
fn span(values: impl Iterator<Item = f64>, from_zero: bool) -> (f64, f64) {
    let (mut lo, mut hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if lo > hi {
        return (0.0, 1.0);
    }
    if from_zero && lo >= 0.0 {
        lo = 0.0;
    }
    if hi - lo < 1e-12 {
        hi = lo + 1.0;
    } else if from_zero {
        hi += (hi - lo) * 0.05;
    }
    (lo, hi)
}

/// `(lo, hi)` raised at the top to leave room for a legend of `entries` lines in the
/// upper right corner, over the data.
fn headroom((lo, hi): (f64, f64), entries: usize) -> (f64, f64) {
    (lo, hi + (hi - lo) * (0.04 * entries.min(12) as f64 + 0.04))
}

/// The `i`-th colour: Okabe and Ito's palette for colour-blind readers (without its
/// yellow, too pale on white), then plotters' 99-colour palette.
fn colour(i: usize) -> RGBColor {
    const OKABE_ITO: [RGBColor; 7] = [
        RGBColor(0, 114, 178),
        RGBColor(213, 94, 0),
        RGBColor(0, 158, 115),
        RGBColor(204, 121, 167),
        RGBColor(86, 180, 233),
        RGBColor(230, 159, 0),
        RGBColor(0, 0, 0),
    ];
    OKABE_ITO.get(i).copied().unwrap_or_else(|| {
        let (r, g, b) = Palette99::pick(i).rgb();
        RGBColor(r, g, b)
    })
}

/// The system's fonts, loaded once, with "sans-serif" meaning the first of the usual
/// Linux sans serif families that is installed.
fn fonts() -> Arc<resvg::usvg::fontdb::Database> {
    static FONTS: OnceLock<Arc<resvg::usvg::fontdb::Database>> = OnceLock::new();
    FONTS
        .get_or_init(|| {
            let mut db = resvg::usvg::fontdb::Database::new();
            db.load_system_fonts();
            let installed = |family: &str| {
                db.faces()
                    .any(|f| f.families.iter().any(|(name, _)| name == family))
            };
            if let Some(family) = ["DejaVu Sans", "Liberation Sans", "Noto Sans", "Arial"]
                .into_iter()
                .find(|f| installed(f))
            {
                db.set_sans_serif_family(family);
            }
            Arc::new(db)
        })
        .clone()
}

/// `svg` rendered as a PNG image of the same size.
pub fn png(svg: &str) -> anyhow::Result<Vec<u8>> {
    use resvg::{tiny_skia, usvg};
    let options = usvg::Options {
        fontdb: fonts(),
        ..usvg::Options::default()
    };
    let tree = usvg::Tree::from_str(svg, &options).context("reading a figure's SVG")?;
    let size = tree.size().to_int_size();
    let mut pixmap =
        tiny_skia::Pixmap::new(size.width(), size.height()).context("a figure of zero size")?;
    resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
    pixmap.encode_png().context("encoding a figure as PNG")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line_figure() -> Figure {
        Figure::lines(
            "f",
            "MMU overhead over time",
            "time (s)",
            "MMU overhead (%)",
            vec![
                Series {
                    name: "linux".into(),
                    points: vec![(0.0, 30.0), (10.0, 20.0), (20.0, 5.0)],
                },
                Series {
                    name: "hawkeye-g".into(),
                    points: vec![(0.0, 30.0), (10.0, 2.0), (20.0, 1.0)],
                },
            ],
        )
    }

    #[test]
    fn a_line_figure_has_its_title_labels_and_a_path_per_series() {
        let svg = line_figure().svg().unwrap();
        for text in [
            "MMU overhead over time",
            "time (s)",
            "MMU overhead (%)",
            "linux",
            "hawkeye-g",
        ] {
            assert!(svg.contains(text), "{text} missing from the SVG");
        }
        assert!(svg.matches("<polyline").count() >= 2, "{svg}");
        assert_eq!(
            svg,
            line_figure().svg().unwrap(),
            "the same data draws the same bytes"
        );
    }

    #[test]
    fn a_bar_figure_names_its_categories_and_skips_missing_values() {
        let f = Figure::bars(
            "b",
            "Speedup over 4 KB pages",
            "speedup",
            vec!["graph500".into(), "xsbench".into()],
            vec![
                BarGroup {
                    name: "linux".into(),
                    values: vec![Some(1.1), None],
                },
                BarGroup {
                    name: "hawkeye-g".into(),
                    values: vec![Some(1.2), Some(1.3)],
                },
            ],
        );
        let svg = f.svg().unwrap();
        assert!(svg.contains("graph500") && svg.contains("xsbench") && svg.contains("speedup"));
        // Three bars and two legend swatches, over the white background and the legend box.
        let rects = svg.matches("<rect").count();
        assert!(rects >= 5, "{rects} rectangles in {svg}");
        assert!(!f.is_empty());
    }

    #[test]
    fn a_png_is_a_png_of_the_figures_size() {
        let png = png(&line_figure().svg().unwrap()).unwrap();
        assert_eq!(&png[1..4], b"PNG");
        let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
        let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
        assert_eq!((width, height), SIZE);
    }

    #[test]
    fn ranges_start_at_zero_for_positive_values_and_are_never_empty() {
        assert_eq!(span([2.0, 4.0].into_iter(), true), (0.0, 4.2));
        assert_eq!(span([2.0, 4.0].into_iter(), false), (2.0, 4.0));
        assert_eq!(span(std::iter::empty(), true), (0.0, 1.0));
        assert_eq!(span([3.0].into_iter(), false), (3.0, 4.0));
        assert_eq!(span([f64::NAN, -1.0, 1.0].into_iter(), true), (-1.0, 1.1));
    }
}
