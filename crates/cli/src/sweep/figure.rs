//! The sweep's figure: a chosen results column (y) against a chosen swept key (x), one
//! line or bar group per combination of the other swept keys' values.
//!
//! A key whose values are all numbers gives lines over x; any other (policy names,
//! sizes written with units) gives grouped bars with one category per value, in the
//! file's order. Each point is drawn as it is: several seeds give several lines, not
//! their mean. Drawing is [`crate::plot`]'s.

use super::grid::{Grid, Scalar};
use super::table::Cell;
use crate::plot::{BarGroup, Figure, Series};

/// The file stem of the figure (`plot.svg`, `plot.png`).
pub const ID: &str = "plot";

/// The figure of `y` (the column called `y_name`, one cell per point) against parameter
/// `x` of `grid`; `picks[i]` is point i's value index for each parameter.
pub fn figure(grid: &Grid, picks: &[Vec<usize>], x: usize, y_name: &str, y: &[Cell]) -> Figure {
    let key = &grid.parameters[x].key;
    let title = format!("{y_name} against {key}");
    let groups = groups(grid, picks, x);
    let numeric = grid.parameters[x]
        .values
        .iter()
        .all(|v| matches!(v.scalar, Scalar::Int(_) | Scalar::Float(_)));
    if numeric {
        let series = groups
            .into_iter()
            .map(|(name, members)| {
                let mut points: Vec<(f64, f64)> = members
                    .iter()
                    .filter_map(|&i| {
                        Some((
                            number(&grid.parameters[x].values[picks[i][x]].scalar),
                            y[i].number()?,
                        ))
                    })
                    .collect();
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
                Series {
                    name: name.unwrap_or_else(|| y_name.to_string()),
                    points,
                }
            })
            .collect();
        return Figure::lines(ID, &title, key, y_name, series);
    }
    let categories: Vec<String> = grid.parameters[x]
        .values
        .iter()
        .map(|v| v.scalar.to_string())
        .collect();
    let bars = groups
        .into_iter()
        .map(|(name, members)| {
            let mut values = vec![None; categories.len()];
            for &i in &members {
                values[picks[i][x]] = y[i].number();
            }
            BarGroup {
                name: name.unwrap_or_else(|| y_name.to_string()),
                values,
            }
        })
        .collect();
    let mut figure = Figure::bars(ID, &title, y_name, categories, bars);
    figure.x_label = key.clone();
    figure
}

/// The points grouped by the values of every parameter but `x`, in order of first
/// appearance, each group with its name (`None` when `x` is the only parameter).
fn groups(grid: &Grid, picks: &[Vec<usize>], x: usize) -> Vec<(Option<String>, Vec<usize>)> {
    let mut out: Vec<(Vec<usize>, Option<String>, Vec<usize>)> = Vec::new();
    for (i, pick) in picks.iter().enumerate() {
        let mut others = pick.clone();
        others.remove(x);
        match out.iter_mut().find(|(o, ..)| *o == others) {
            Some((_, _, members)) => members.push(i),
            None => {
                let name = grid
                    .parameters
                    .iter()
                    .zip(pick)
                    .enumerate()
                    .filter(|(j, _)| *j != x)
                    .map(|(_, (p, &v))| format!("{}={}", p.key, p.values[v].scalar))
                    .collect::<Vec<_>>();
                let name = (!name.is_empty()).then(|| name.join(", "));
                out.push((others, name, vec![i]));
            }
        }
    }
    out.into_iter().map(|(_, n, m)| (n, m)).collect()
}

fn number(s: &Scalar) -> f64 {
    match s {
        Scalar::Int(i) => *i as f64,
        Scalar::Float(x) => *x,
        _ => f64::NAN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::Plot;

    fn grid(sweep: &str) -> (Grid, Vec<Vec<usize>>) {
        let g = Grid::parse(&format!("[sweep]\n{sweep}\n"), "f.toml").unwrap();
        let picks = (0..g.len()).map(|i| g.point(i)).collect();
        (g, picks)
    }

    #[test]
    fn a_numeric_key_gives_a_line_per_combination_of_the_others() {
        let (g, picks) = grid("\"policy.name\" = [\"linux\", \"hawkeye\"]\n\"sim.seed\" = [2, 1]");
        let y: Vec<Cell> = (0..4).map(|i| Cell::Float(i as f64)).collect();
        let f = figure(&g, &picks, 1, "p.runtime_s", &y);
        let Plot::Lines { series } = &f.plot else {
            panic!("lines expected")
        };
        assert_eq!(series.len(), 2);
        assert_eq!(series[0].name, "policy.name=linux");
        // Sorted by x: seed 1 (point 1) before seed 2 (point 0).
        assert_eq!(series[0].points, [(1.0, 1.0), (2.0, 0.0)]);
        assert_eq!(series[1].points, [(1.0, 3.0), (2.0, 2.0)]);
        assert_eq!(f.x_label, "sim.seed");
    }

    #[test]
    fn other_keys_give_bars_with_a_category_per_value() {
        let (g, picks) = grid("\"machine.memory\" = [\"1GiB\", \"2GiB\"]");
        let y = [Cell::UInt(5), Cell::Null];
        let f = figure(&g, &picks, 0, "p.huge_pages_end", &y);
        let Plot::Bars { categories, groups } = &f.plot else {
            panic!("bars expected")
        };
        assert_eq!(categories, &["1GiB", "2GiB"]);
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].name, "p.huge_pages_end");
        assert_eq!(groups[0].values, [Some(5.0), None]);
    }
}
