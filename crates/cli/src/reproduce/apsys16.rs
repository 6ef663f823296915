//! "A Case for Protecting Huge Pages from the Kernel" (Panwar, Patel, Gopinath; APSys'16):
//! Figure 2, Table 1, Figure 3, Table 2 and section 5.3, scripted over the model kernel.
//! The paper's numbers are quoted from its text; its figures give
//! no numbers, so for them we quote the claim the text makes.

use super::{
    par_map, run_workload, snapshot, table, variant, Progress, Report, Reproduction, Snapshot,
};
use hugemm_hw::{Nanos, Order};
use hugemm_mm::{FallbackStats, MigrateType};
use hugemm_sim::Engine;
use hugemm_workload::{Phase, ProcessSpec};
use serde_json::json;

/// Table 1: user pageblocks by degree of pollution after two kernel builds, 4 GB. The
/// paper's rows for >10, >25 and >40 are cumulative (121 includes the 4 above 25%).
pub const TABLE1_PAPER: [(&str, u64); 7] = [
    ("<1", 112),
    ("1-2", 89),
    ("2-4", 241),
    ("4-10", 781),
    (">10", 121),
    (">25", 4),
    (">40", 0),
];
/// Table 1's text: 1345 of 1667 user pageblocks tainted.
pub const TABLE1_PAPER_TAINTED: (u64, u64) = (1345, 1667);

/// Table 2: tainted pageblocks and Fu(9) per kernel, 4 GB.
pub const TABLE2_PAPER: [(&str, u64, f64); 4] = [
    ("default", 1683, 0.61),
    ("aaf", 134, 0.24),
    ("opbs", 508, 0.21),
    ("apbs", 874, 0.31),
];

/// Section 5.3: stress-highalloc success, first attempt and at rest, 3 GB.
pub const HIGHALLOC_PAPER: [(&str, f64, f64); 2] = [("default", 0.0, 0.13), ("apbs", 0.07, 0.37)];

fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

fn script(name: &str, phase: Phase) -> ProcessSpec {
    ProcessSpec {
        name: name.into(),
        start: Nanos::ZERO,
        core: None,
        phases: vec![phase],
    }
}

/// Run a one-phase script process to completion.
fn run_script(engine: &mut Engine, name: &str, phase: Phase) -> anyhow::Result<()> {
    engine.spawn(script(name, phase));
    engine.run_until_idle()?;
    Ok(())
}

/// Table 1's rows from our histogram (bins <1, 1-2, 2-4, 4-10, 10-25, 25-40, >=40), the
/// last three made cumulative as the paper prints them.
pub fn pollution_rows(h: &[u64]) -> [u64; 7] {
    let g = |i: usize| h.get(i).copied().unwrap_or(0);
    [
        g(0),
        g(1),
        g(2),
        g(3),
        g(4) + g(5) + g(6),
        g(5) + g(6),
        g(6),
    ]
}

/// Figure 2: tainted pageblocks over time, default vs OPBS (paper: 2 GB; OPBS's count
/// grows far more slowly). One point every `settle_s` of simulated time.
pub fn figure2(r: &Reproduction, progress: Progress<'_>) -> anyhow::Result<Report> {
    let step = Nanos((r.settle_s.max(0.001) * 1e9) as u64);
    let series = par_map(&r.variants, |v| {
        progress(&format!("figure 2: {v}"));
        let mut engine = Engine::new(variant(r, v))?;
        let mut points = vec![snapshot(&engine)];
        while !engine.idle() {
            engine.advance(step)?;
            points.push(snapshot(&engine));
        }
        Ok((v.clone(), points))
    })?;
    let len = series.iter().map(|(_, p)| p.len()).max().unwrap_or(0);
    let mut header = vec!["time s".to_string()];
    header.extend(series.iter().map(|(v, _)| format!("{v} tainted")));
    let rows: Vec<Vec<String>> = (0..len)
        .map(|i| {
            let t = series
                .iter()
                .find_map(|(_, p)| p.get(i))
                .map_or(0.0, |s| s.time_s);
            let mut row = vec![format!("{t:.0}")];
            row.extend(series.iter().map(|(_, p)| {
                p.get(i)
                    .or(p.last())
                    .map_or(String::new(), |s| s.tainted.to_string())
            }));
            row
        })
        .collect();
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    Ok(Report {
        title: "APSys'16 Figure 2: tainted pageblock formation over time".into(),
        tables: vec![
            "paper (2 GB, kernel builds): the default's tainted pageblocks grow steadily; \
             OPBS's grow far more slowly (no numbers in the text)\n"
                .to_string(),
            table(&header, &rows),
        ],
        data: json!(series
            .iter()
            .map(|(v, p)| json!({"variant": v, "points": p}))
            .collect::<Vec<_>>()),
        ..Report::default()
    })
}

/// Table 1: degree of pollution after the builds, first variant (the paper's: default).
pub fn table1(r: &Reproduction, progress: Progress<'_>) -> anyhow::Result<Report> {
    let v = &r.variants[0];
    progress(&format!("table 1: {v}"));
    let engine = run_workload(variant(r, v))?;
    let s = snapshot(&engine);
    let ours = pollution_rows(&s.pollution);
    let (paper_tainted, paper_user) = TABLE1_PAPER_TAINTED;
    let share = |n: u64, of: u64| format!("{:.0}%", 100.0 * n as f64 / of.max(1) as f64);
    let rows: Vec<Vec<String>> = TABLE1_PAPER
        .iter()
        .zip(ours)
        .map(|((bin, paper), n)| {
            vec![
                bin.to_string(),
                paper.to_string(),
                share(*paper, paper_tainted),
                n.to_string(),
                share(n, s.tainted),
            ]
        })
        .collect();
    let mut t = table(
        &["pollution %", "paper", "paper %", "hugemm", "hugemm %"],
        &rows,
    );
    t.push_str(&format!(
        "tainted user pageblocks: paper {paper_tainted} of {paper_user} ({}), hugemm {} of {} ({})\n",
        share(paper_tainted, paper_user),
        s.tainted,
        s.user_pageblocks,
        share(s.tainted, s.user_pageblocks)
    ));
    Ok(Report {
        title: format!("APSys'16 Table 1: degree of pollution of user pageblocks ({v})"),
        tables: vec![t],
        data: json!({"variant": v, "snapshot": s, "rows": ours}),
        ..Report::default()
    })
}

/// Compact all memory and take a snapshot.
fn compact_and_snapshot(engine: &mut Engine) -> anyhow::Result<Snapshot> {
    run_script(engine, "compact", Phase::CompactMemory)?;
    Ok(snapshot(engine))
}

/// Figure 3: Fu(j) after a full compaction for each layout, and `settle_s` later with the
/// workload running again (the paper's KMU-2).
pub fn figure3(r: &Reproduction, progress: Progress<'_>) -> anyhow::Result<Report> {
    let out = par_map(&r.variants, |v| {
        progress(&format!("figure 3: {v}"));
        let exp = variant(r, v);
        let workload = exp.processes.clone();
        let mut engine = run_workload(exp)?;
        let after = compact_and_snapshot(&mut engine)?;
        for p in &workload {
            let mut p = p.clone();
            p.name = format!("{}-again", p.name);
            engine.spawn(p);
        }
        engine.advance(Nanos((r.settle_s * 1e9) as u64))?;
        let later = snapshot(&engine);
        Ok((v.clone(), after, later))
    })?;
    let orders = out.first().map_or(0, |(_, s, _)| s.fu.len());
    let mut header = vec!["order".to_string()];
    for (v, ..) in &out {
        header.push(format!("{v}-1"));
        header.push(format!("{v}-2"));
    }
    let rows: Vec<Vec<String>> = (0..orders)
        .map(|j| {
            let mut row = vec![j.to_string()];
            for (_, a, l) in &out {
                row.push(format!("{:.2}", a.fu[j]));
                row.push(format!("{:.2}", l.fu[j]));
            }
            row
        })
        .collect();
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    Ok(Report {
        title: "APSys'16 Figure 3: unusable free space index Fu(j) after a full compaction (-1) \
                and later (-2)"
            .into(),
        tables: vec![
            "paper: KML cannot form any block above order 7 after compaction; KMU does better \
             than the default right after compaction (KMU-1), but soon after (KMU-2) Fu \
             reaches almost 1 for every order above 5, worse than the other two\n"
                .to_string(),
            table(&header, &rows),
        ],
        data: json!(out
            .iter()
            .map(|(v, a, l)| json!({"variant": v, "after_compaction": a, "later": l}))
            .collect::<Vec<_>>()),
        ..Report::default()
    })
}

/// "N (claimed/stolen)": fallbacks so far, and how many claimed their pageblock or stole
/// without claiming (the `change_ownership` split of Linux's extfrag tracepoint).
fn fallback_kinds(f: &FallbackStats) -> String {
    let claimed: u64 = f.events.iter().filter(|e| e.claimed).map(|e| e.count).sum();
    format!("{} ({claimed}/{})", f.fallbacks, f.fallbacks - claimed)
}

/// Kernel (unmovable or reclaimable) fallbacks that found no free block of a whole
/// pageblock (`pageblock` the pageblock order). Of kernel fallbacks, only these can leave
/// kernel pages in a user pageblock, and only at these do the paper's policies choose
/// differently from Linux: with a whole free pageblock at hand, every policy claims one
/// (APBS's low level is Linux's pick). A movable fallback into a kernel pageblock can also
/// taint, and no kernel-side policy changes those.
fn kernel_fallbacks_below(f: &FallbackStats, pageblock: Order) -> u64 {
    f.events
        .iter()
        .filter(|e| e.alloc != MigrateType::Movable && e.order < pageblock.0)
        .map(|e| e.count)
        .sum()
}

/// Table 2: tainted pageblocks and Fu(9) per fallback policy, after the builds and after a
/// full compaction, with the fallbacks and the kernel fallbacks below a pageblock.
pub fn table2(r: &Reproduction, progress: Progress<'_>) -> anyhow::Result<Report> {
    let huge = r.experiment.geometry.huge_order().0 as usize;
    let (rows, data): (Vec<_>, Vec<_>) = par_map(&r.variants, |v| {
        progress(&format!("table 2: {v}"));
        let mut engine = run_workload(variant(r, v))?;
        let end = snapshot(&engine);
        let compacted = compact_and_snapshot(&mut engine)?;
        let paper = TABLE2_PAPER.iter().find(|(n, ..)| n == v);
        let row = vec![
            v.clone(),
            paper.map_or("-".into(), |p| p.1.to_string()),
            end.tainted.to_string(),
            paper.map_or("-".into(), |p| format!("{:.2}", p.2)),
            format!("{:.2}", end.fu[huge]),
            format!("{:.2}", compacted.fu[huge]),
            fallback_kinds(&end.fallback),
            kernel_fallbacks_below(&end.fallback, engine.kernel().phys().pageblock_order())
                .to_string(),
        ];
        let datum = json!({"variant": v, "end": end, "after_compaction": compacted});
        Ok((row, datum))
    })?
    .into_iter()
    .unzip();
    Ok(Report {
        title: "APSys'16 Table 2: tainted pageblocks and Fu(9) by fallback policy".into(),
        tables: vec![table(
            &[
                "kernel",
                "paper tainted",
                "hugemm tainted",
                "paper Fu(9)",
                "hugemm Fu(9) end",
                "hugemm Fu(9) compacted",
                "hugemm fallbacks (claimed/stolen)",
                "kernel fallbacks below a pageblock",
            ],
            &rows,
        )],
        data: json!(data),
        ..Report::default()
    })
}

/// Section 5.3: stress-highalloc after the builds: attempt 1 at once, attempt 2
/// `settle_s` later, attempt 3 at rest after dropping the page cache. Beside the rates:
/// the tainted pageblocks and the kernel fallbacks below a pageblock when the builds end,
/// what the paper credits APBS's gain to.
pub fn highalloc(r: &Reproduction, progress: Progress<'_>) -> anyhow::Result<Report> {
    let share = 0.95;
    let (rows, data): (Vec<_>, Vec<_>) = par_map(&r.variants, |v| {
        progress(&format!("stress-highalloc: {v}"));
        let mut engine = run_workload(variant(r, v))?;
        let built = snapshot(&engine);
        let pageblock = engine.kernel().phys().pageblock_order();
        let attempt = |label: &str| Phase::HighAlloc {
            label: label.into(),
            share,
        };
        run_script(&mut engine, "highalloc-1", attempt("1"))?;
        engine.advance(Nanos((r.settle_s * 1e9) as u64))?;
        run_script(&mut engine, "highalloc-2", attempt("2"))?;
        run_script(&mut engine, "drop-caches", Phase::DropCaches)?;
        run_script(&mut engine, "highalloc-3", attempt("3"))?;
        let result = engine.results();
        let rates: Vec<f64> = result
            .summary
            .system
            .highalloc
            .iter()
            .map(|h| h.success_rate)
            .collect();
        let paper = HIGHALLOC_PAPER.iter().find(|(n, ..)| n == v);
        let g = |i: usize| rates.get(i).copied().map_or("-".into(), pct);
        let row = vec![
            v.clone(),
            paper.map_or("-".into(), |p| pct(p.1)),
            g(0),
            g(1),
            paper.map_or("-".into(), |p| pct(p.2)),
            g(2),
            built.tainted.to_string(),
            kernel_fallbacks_below(&built.fallback, pageblock).to_string(),
        ];
        let datum = json!({
            "variant": v,
            "after_builds": built,
            "attempts": result.summary.system.highalloc,
        });
        Ok((row, datum))
    })?
    .into_iter()
    .unzip();
    Ok(Report {
        title: format!(
            "APSys'16 section 5.3: stress-highalloc success rate ({:.0}% of memory requested as huge pages)",
            share * 100.0
        ),
        tables: vec![table(
            &[
                "kernel",
                "paper 1st",
                "hugemm 1st",
                "hugemm 2nd",
                "paper at rest",
                "hugemm at rest",
                "hugemm tainted",
                "kernel fallbacks below a pageblock",
            ],
            &rows,
        )],
        data: json!(data),
        ..Report::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pollution_rows_are_cumulative_above_ten_percent() {
        assert_eq!(
            pollution_rows(&[1, 2, 3, 4, 5, 6, 7]),
            [1, 2, 3, 4, 18, 13, 7]
        );
        // The paper's own rows obey the same rule.
        assert!(TABLE1_PAPER[4].1 >= TABLE1_PAPER[5].1 && TABLE1_PAPER[5].1 >= TABLE1_PAPER[6].1);
    }

    #[test]
    fn kernel_fallbacks_below_a_pageblock_leave_out_movable_requests_and_whole_blocks() {
        use hugemm_mm::FallbackEventCount;
        let event = |alloc, order, count| FallbackEventCount {
            alloc,
            taken_from: MigrateType::Movable,
            order,
            claimed: true,
            count,
        };
        let stats = FallbackStats {
            events: vec![
                event(MigrateType::Unmovable, 8, 3),
                event(MigrateType::Reclaimable, 4, 5),
                event(MigrateType::Unmovable, 9, 7),
                event(MigrateType::Reclaimable, 10, 11),
                event(MigrateType::Movable, 2, 13),
            ],
            ..FallbackStats::default()
        };
        assert_eq!(kernel_fallbacks_below(&stats, Order(9)), 3 + 5);
        assert_eq!(kernel_fallbacks_below(&stats, Order(11)), 3 + 5 + 7 + 11);
    }
}
