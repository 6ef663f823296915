//! "A Case for Protecting Huge Pages from the Kernel" (Panwar, Patel, Gopinath; APSys'16):
//! Figure 2, Table 1, Figure 3, Table 2 and section 5.3, scripted over the model kernel.
//! The paper's numbers are quoted from its text; its figures give
//! no numbers, so for them we quote the claim the text makes.

use super::{
    engine, paper_beside_hugemm, par_map, run_workload, snapshot, table, variant, Claim, Progress,
    Report, Reproduction, Snapshot, Value, VariantRun,
};
use crate::config::raw::RawHighAlloc;
use crate::plot::{BarGroup, Figure, Series};
use hugemm_hw::{Nanos, Order};
use hugemm_mm::{FallbackStats, MigrateType};
use hugemm_sim::Engine;
use hugemm_workload::{HighAllocGfp, Phase, ProcessSpec};
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
        let mut engine = engine(progress, &format!("figure 2: {v}"), variant(r, v))?;
        let mut points = vec![snapshot(&engine)];
        while !engine.idle() {
            engine.advance(step)?;
            points.push(snapshot(&engine));
        }
        Ok((v.clone(), points, engine.results()))
    })?;
    let (series, results): (Vec<_>, Vec<_>) =
        series.into_iter().map(|(v, p, res)| ((v, p), res)).unzip();
    let end = |v: &str| {
        series
            .iter()
            .find(|(n, _)| n == v)
            .and_then(|(_, p)| p.last())
            .map(|s| s.tainted)
    };
    let text =
        "OPBS's tainted pageblocks grow far more slowly than the default's (under half at the end)";
    let said = "no numbers in the text";
    let claims = vec![match (end("default"), end("opbs")) {
        (Some(d), Some(o)) => Claim::new(
            text,
            said,
            format!("{o} vs {d} at the end"),
            Some(d > 0 && 2 * o < d),
        ),
        _ => Claim::unjudged(text, said, "needs default and opbs"),
    }];
    let figures = vec![Figure::lines(
        "fig2-tainted",
        "Figure 2: tainted pageblocks over time",
        "time (s)",
        "tainted pageblocks",
        series
            .iter()
            .map(|(v, p)| Series {
                name: v.clone(),
                points: p.iter().map(|s| (s.time_s, s.tainted as f64)).collect(),
            })
            .collect(),
    )];
    let runs = r
        .variants
        .iter()
        .zip(results)
        .map(|(v, res)| VariantRun::new(&[v], res))
        .collect();
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
        claims,
        figures,
        runs,
        ..Report::default()
    })
}

/// Table 1: degree of pollution after the builds, first variant (the paper's: default).
pub fn table1(r: &Reproduction, progress: Progress<'_>) -> anyhow::Result<Report> {
    let v = &r.variants[0];
    let engine = run_workload(r, progress, &format!("table 1: {v}"), variant(r, v))?;
    let s = snapshot(&engine);
    let ours = pollution_rows(&s.pollution);
    let mut values: Vec<Value> = TABLE1_PAPER
        .iter()
        .zip(ours)
        .map(|((bin, paper), n)| {
            Value::new(
                "Table 1",
                &format!("{bin}% polluted"),
                "user pageblocks",
                *paper as f64,
                Some(n as f64),
            )
        })
        .collect();
    values.push(Value::new(
        "Table 1",
        "tainted",
        "user pageblocks",
        TABLE1_PAPER_TAINTED.0 as f64,
        Some(s.tainted as f64),
    ));
    let share_of = |n: u64, of: u64| 100.0 * n as f64 / of.max(1) as f64;
    let claims = vec![Claim::new(
        "most user pageblocks are tainted after two kernel builds",
        "1,345 of 1,667 (81%)",
        format!(
            "{} of {} ({:.0}%)",
            s.tainted,
            s.user_pageblocks,
            share_of(s.tainted, s.user_pageblocks)
        ),
        Some(2 * s.tainted > s.user_pageblocks),
    )];
    let figures = vec![paper_beside_hugemm(
        "table1-pollution",
        "Table 1: user pageblocks by degree of pollution (% of tainted ones)",
        "% of tainted pageblocks",
        TABLE1_PAPER
            .iter()
            .map(|(bin, _)| format!("{bin}%"))
            .collect(),
        TABLE1_PAPER
            .iter()
            .map(|(_, n)| Some(share_of(*n, TABLE1_PAPER_TAINTED.0)))
            .collect(),
        ours.iter()
            .map(|n| (s.tainted > 0).then(|| share_of(*n, s.tainted)))
            .collect(),
    )];
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
        values,
        claims,
        figures,
        data: json!({"variant": v, "snapshot": s, "rows": ours}),
        runs: vec![VariantRun::new(&[v], engine.results())],
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
        let exp = variant(r, v);
        let workload = exp.processes.clone();
        let mut engine = run_workload(r, progress, &format!("figure 3: {v}"), exp)?;
        let after = compact_and_snapshot(&mut engine)?;
        for p in &workload {
            let mut p = p.clone();
            p.name = format!("{}-again", p.name);
            engine.spawn(p);
        }
        engine.advance(Nanos((r.settle_s * 1e9) as u64))?;
        let later = snapshot(&engine);
        Ok((v.clone(), after, later, engine.results()))
    })?;
    let (out, results): (Vec<_>, Vec<_>) = out
        .into_iter()
        .map(|(v, a, l, res)| ((v, a, l), res))
        .unzip();
    let huge = r.experiment.geometry.huge_order().0 as usize;
    let claims = figure3_claims(&out, huge);
    let figures = vec![Figure::lines(
        "fig3-fu",
        "Figure 3: unusable free space index by order, after compaction (-1) and later (-2)",
        "order",
        "Fu(j)",
        out.iter()
            .flat_map(|(v, a, l)| {
                [(format!("{v}-1"), a), (format!("{v}-2"), l)].map(|(name, s)| Series {
                    name,
                    points: s
                        .fu
                        .iter()
                        .enumerate()
                        .map(|(j, f)| (j as f64, *f))
                        .collect(),
                })
            })
            .collect(),
    )];
    let runs = r
        .variants
        .iter()
        .zip(results)
        .map(|(v, res)| VariantRun::new(&[v], res))
        .collect();
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
        claims,
        figures,
        runs,
        ..Report::default()
    })
}

/// Figure 3's claims from its (variant, after compaction, later) snapshots; `huge` is
/// the huge-page order.
fn figure3_claims(out: &[(String, Snapshot, Snapshot)], huge: usize) -> Vec<Claim> {
    let of = |v: &str| out.iter().find(|(n, ..)| n == v);
    let above = |s: &Snapshot, j: usize| {
        s.fu.iter()
            .skip(j + 1)
            .copied()
            .fold(f64::INFINITY, f64::min)
    };
    let mut claims = Vec::new();
    let text = "KML cannot form any block above order 7 after compaction (Fu = 1 above 7)";
    let said = "Fu(j) = 1 for j > 7";
    claims.push(match of("kml") {
        Some((_, a, _)) => {
            let least = above(a, 7);
            Claim::new(
                text,
                said,
                format!("least Fu above order 7: {least:.2}"),
                Some(least >= 0.999),
            )
        }
        None => Claim::unjudged(text, said, "needs kml"),
    });
    let text = "right after compaction KMU has more huge-page-sized free blocks than the default";
    let said = "KMU-1 below the default";
    claims.push(match (of("kmu"), of("default")) {
        (Some((_, k, _)), Some((_, d, _))) => Claim::new(
            text,
            said,
            format!("Fu({huge}) {:.2} vs {:.2}", k.fu[huge], d.fu[huge]),
            Some(k.fu[huge] < d.fu[huge]),
        ),
        _ => Claim::unjudged(text, said, "needs kmu and default"),
    });
    let text = "soon after, KMU's Fu is almost 1 for every order above 5 (at least 0.95)";
    let said = "KMU-2 almost 1 above order 5";
    claims.push(match of("kmu") {
        Some((_, _, l)) => {
            let least = above(l, 5);
            Claim::new(
                text,
                said,
                format!("least Fu above order 5: {least:.2}"),
                Some(least >= 0.95),
            )
        }
        None => Claim::unjudged(text, said, "needs kmu"),
    });
    claims
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
        let mut engine = run_workload(r, progress, &format!("table 2: {v}"), variant(r, v))?;
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
        Ok(((row, (end, compacted)), (datum, engine.results())))
    })?
    .into_iter()
    .unzip();
    let (rows, snaps): (Vec<_>, Vec<_>) = rows.into_iter().unzip();
    let (data, results): (Vec<_>, Vec<_>) = data.into_iter().unzip();
    let mut values = Vec::new();
    let mut claims = Vec::new();
    let tainted = |v: &str| {
        r.variants
            .iter()
            .position(|n| n == v)
            .map(|i| snaps[i].0.tainted)
    };
    for (v, (end, _)) in r.variants.iter().zip(&snaps) {
        if let Some(p) = TABLE2_PAPER.iter().find(|(n, ..)| n == v) {
            values.push(Value::new(
                "Table 2",
                v,
                "tainted pageblocks",
                p.1 as f64,
                Some(end.tainted as f64),
            ));
            values.push(Value::new(
                "Table 2",
                v,
                &format!("Fu({huge})"),
                p.2,
                Some(end.fu[huge]),
            ));
        }
    }
    for (v, paper) in [("aaf", 134), ("opbs", 508), ("apbs", 874)] {
        let text = format!("{v} taints fewer pageblocks than the default");
        let said = format!("{paper} vs 1683");
        claims.push(match (tainted(v), tainted("default")) {
            (Some(t), Some(d)) => Claim::new(&text, &said, format!("{t} vs {d}"), Some(t < d)),
            _ => Claim::unjudged(&text, &said, "needs it and default"),
        });
    }
    let figures = vec![
        paper_beside_hugemm(
            "table2-tainted",
            "Table 2: tainted pageblocks by fallback policy",
            "tainted pageblocks",
            r.variants.clone(),
            r.variants
                .iter()
                .map(|v| {
                    TABLE2_PAPER
                        .iter()
                        .find(|(n, ..)| n == v)
                        .map(|p| p.1 as f64)
                })
                .collect(),
            snaps.iter().map(|(e, _)| Some(e.tainted as f64)).collect(),
        ),
        Figure::bars(
            "table2-fu",
            &format!("Table 2: Fu({huge}) by fallback policy"),
            &format!("Fu({huge})"),
            r.variants.clone(),
            vec![
                BarGroup {
                    name: "paper".into(),
                    values: r
                        .variants
                        .iter()
                        .map(|v| TABLE2_PAPER.iter().find(|(n, ..)| n == v).map(|p| p.2))
                        .collect(),
                },
                BarGroup {
                    name: "hugemm".into(),
                    values: snaps.iter().map(|(e, _)| Some(e.fu[huge])).collect(),
                },
                BarGroup {
                    name: "hugemm compacted".into(),
                    values: snaps.iter().map(|(_, c)| Some(c.fu[huge])).collect(),
                },
            ],
        ),
    ];
    let runs = r
        .variants
        .iter()
        .zip(results)
        .map(|(v, res)| VariantRun::new(&[v], res))
        .collect();
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
        values,
        claims,
        figures,
        data: json!(data),
        runs,
        ..Report::default()
    })
}

/// How `apsys16-highalloc` runs stress-highalloc (`[reproduce.highalloc]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HighAllocSetup {
    /// mmtests' procedure ([`under_load`]); `false`: every pass at once after the builds
    /// end ([`after_builds`]).
    pub under_load: bool,
    /// The requests' GFP flags.
    pub gfp: HighAllocGfp,
}

impl Default for HighAllocSetup {
    /// mmtests' procedure and default flags.
    fn default() -> Self {
        HighAllocSetup {
            under_load: true,
            gfp: HighAllocGfp::default(),
        }
    }
}

impl HighAllocSetup {
    /// `procedure`'s names.
    const PROCEDURES: [(&'static str, bool); 2] = [("mmtests", true), ("after-builds", false)];

    /// The setup `raw` asks for (absent keys: [`HighAllocSetup::default`]), and `raw` with
    /// every key filled in; or the key that is wrong and what it should be.
    pub(crate) fn read(
        mut raw: RawHighAlloc,
    ) -> Result<(HighAllocSetup, RawHighAlloc), (&'static str, String)> {
        fn pick<T: Copy>(
            key: &'static str,
            v: &mut Option<String>,
            named: &[(&'static str, T)],
        ) -> Result<T, (&'static str, String)> {
            let name = v.get_or_insert_with(|| named[0].0.to_string());
            named
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, t)| *t)
                .ok_or_else(|| {
                    let names: Vec<&str> = named.iter().map(|(n, _)| *n).collect();
                    (
                        key,
                        format!("one of {}, found \"{name}\"", names.join(", ")),
                    )
                })
        }
        let setup = HighAllocSetup {
            under_load: pick(
                "reproduce.highalloc.procedure",
                &mut raw.procedure,
                &Self::PROCEDURES,
            )?,
            gfp: pick(
                "reproduce.highalloc.gfp",
                &mut raw.gfp,
                &HighAllocGfp::NAMED,
            )?,
        };
        Ok((setup, raw))
    }
}

/// Memory stress-highalloc requests, as a share of the machine's (mmtests'
/// `HIGHALLOC_PERCENTAGE`).
const HIGHALLOC_SHARE: f64 = 0.95;
/// Time from one request's start to the next's: mmtests' `HIGHALLOC_ALLOC_RATE` of 16 MB/s
/// for 2 MiB pages (`bench-stresshighalloc.sh`: 2,097,152 / (16 x 1,048,576 / 1,000) =
/// 125 ms, in its integer arithmetic).
const MMTESTS_INTERVAL: Nanos = Nanos::from_millis(125);
/// mmtests sleeps 5 minutes (10 x 30 s) with its builds running before pass 1.
const MMTESTS_WARMUP: Nanos = Nanos::from_millis(300_000);
/// ... 5 seconds after each pass under load ...
const MMTESTS_PAUSE: Nanos = Nanos::from_millis(5_000);
/// ... and 180 seconds after pass 2 before it kills the builds.
const MMTESTS_WAIT: Nanos = Nanos::from_millis(180_000);
/// `vm.min_free_kbytes` for the pass at rest.
const MMTESTS_REST_MIN_FREE_KB: u64 = 1024;

/// mmtests' stress-highalloc (`vmr/bin/bench-stresshighalloc.sh`, which its
/// `config-global-dhp__stress-highalloc-performance` runs), on the machine `engine` is
/// about to run: its builds start; 300 s after memory first fills (kswapd's first
/// wake-up: mmtests fills memory copying its kernel trees before its 300 s start) pass 1
/// requests 95% of memory as huge pages one every 125 ms while the builds go on, holding
/// what it gets until its last request; pass 2 follows 5 s later; 180 s after pass 2 every
/// process is killed, the page cache dropped (mmtests deletes its trees, writes and reads
/// a file the size of memory and drops the caches), `min_free_kbytes` set to 1,024, and
/// pass 3 runs at rest, paced as the others. Returns the fragmentation when pass 1 starts
/// and the processes killed.
fn under_load(engine: &mut Engine, gfp: HighAllocGfp) -> anyhow::Result<(Snapshot, usize)> {
    let second = Nanos::from_millis(1_000);
    while engine.kernel().stats().kswapd_wakes == 0 && !engine.idle() && !engine.at_limit() {
        engine.advance(second)?;
    }
    engine.advance(MMTESTS_WARMUP)?;
    let at_pass_1 = snapshot(engine);
    for pass in ["1", "2"] {
        let done = engine.highalloc_passes().len() + 1;
        engine.spawn(script(&format!("highalloc-{pass}"), paced(pass, gfp)));
        while engine.highalloc_passes().len() < done && !engine.at_limit() {
            engine.advance(second)?;
        }
        engine.advance(MMTESTS_PAUSE)?;
    }
    engine.advance(MMTESTS_WAIT)?;
    let killed = engine.kill("");
    run_script(engine, "drop-caches", Phase::DropCaches)?;
    engine.set_min_free_kbytes(MMTESTS_REST_MIN_FREE_KB);
    run_script(engine, "highalloc-3", paced("3", gfp))?;
    Ok((at_pass_1, killed))
}

/// A pass at mmtests' pace.
fn paced(label: &str, gfp: HighAllocGfp) -> Phase {
    Phase::HighAlloc {
        label: label.into(),
        share: HIGHALLOC_SHARE,
        interval: Some(MMTESTS_INTERVAL),
        gfp,
    }
}

/// The model's procedure before mmtests' (kept to compare): the builds run to their end;
/// attempt 1 at once, attempt 2 `settle_s` later, attempt 3 at rest after dropping the
/// page cache. Returns the fragmentation when the builds end.
fn after_builds(engine: &mut Engine, settle_s: f64, gfp: HighAllocGfp) -> anyhow::Result<Snapshot> {
    let built = snapshot(engine);
    let attempt = |label: &str| Phase::HighAlloc {
        label: label.into(),
        share: HIGHALLOC_SHARE,
        interval: None,
        gfp,
    };
    run_script(engine, "highalloc-1", attempt("1"))?;
    engine.advance(Nanos((settle_s * 1e9) as u64))?;
    run_script(engine, "highalloc-2", attempt("2"))?;
    run_script(engine, "drop-caches", Phase::DropCaches)?;
    run_script(engine, "highalloc-3", attempt("3"))?;
    Ok(built)
}

/// Section 5.3: stress-highalloc's three passes ([`HighAllocSetup`] says how they are
/// run). Beside the rates: the tainted pageblocks and the kernel fallbacks below a
/// pageblock when the first pass starts, what the paper credits APBS's gain to.
pub fn highalloc(r: &Reproduction, progress: Progress<'_>) -> anyhow::Result<Report> {
    let share = HIGHALLOC_SHARE;
    let setup = r.highalloc;
    let (rows, data): (Vec<_>, Vec<_>) = par_map(&r.variants, |v| {
        let what = format!("stress-highalloc: {v}");
        let (engine, built, killed) = if setup.under_load {
            let mut engine = engine(progress, &what, variant(r, v))?;
            let (built, killed) = under_load(&mut engine, setup.gfp)?;
            (engine, built, killed)
        } else {
            let mut engine = run_workload(r, progress, &what, variant(r, v))?;
            let built = after_builds(&mut engine, r.settle_s, setup.gfp)?;
            (engine, built, 0)
        };
        let pageblock = engine.kernel().phys().pageblock_order();
        let result = engine.results();
        let oom_killed = result.summary.processes.iter().filter(|p| p.oom).count();
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
            "procedure": if setup.under_load { "mmtests" } else { "after-builds" },
            "at_first_attempt": built,
            "attempts": result.summary.system.highalloc,
            "processes_killed": killed,
            "processes_oom_killed": oom_killed,
        });
        Ok(((row, rates), (datum, result)))
    })?
    .into_iter()
    .unzip();
    let (rows, rates): (Vec<_>, Vec<Vec<f64>>) = rows.into_iter().unzip();
    let (data, results): (Vec<_>, Vec<_>) = data.into_iter().unzip();
    let rate = |v: &str, i: usize| {
        r.variants
            .iter()
            .position(|n| n == v)
            .and_then(|k| rates[k].get(i).copied())
    };
    let mut values = Vec::new();
    for (v, first, rest) in HIGHALLOC_PAPER {
        values.push(Value::new(
            "section 5.3",
            v,
            "success, 1st attempt (%)",
            first * 100.0,
            rate(v, 0).map(|x| x * 100.0),
        ));
        values.push(Value::new(
            "section 5.3",
            v,
            "success at rest (%)",
            rest * 100.0,
            rate(v, 2).map(|x| x * 100.0),
        ));
    }
    let mut claims = Vec::new();
    for (i, when, said) in [
        (0, "at the first attempt", "7% vs 0%"),
        (2, "at rest", "37% vs 13%"),
    ] {
        let text = format!("APBS allocates more huge pages than the default {when}");
        claims.push(match (rate("apbs", i), rate("default", i)) {
            (Some(a), Some(d)) => Claim::new(
                &text,
                said,
                format!("{} vs {}", pct(a), pct(d)),
                Some(a > d),
            ),
            _ => Claim::unjudged(&text, said, "needs apbs and default"),
        });
    }
    // Success of attempt `i` (%), the paper's (`paper` of its row) beside hugemm's.
    let attempt = |id: &str, title: &str, i: usize, paper: fn(&(&str, f64, f64)) -> f64| {
        paper_beside_hugemm(
            id,
            title,
            "success (%)",
            r.variants.clone(),
            r.variants
                .iter()
                .map(|v| {
                    HIGHALLOC_PAPER
                        .iter()
                        .find(|p| p.0 == v)
                        .map(|p| paper(p) * 100.0)
                })
                .collect(),
            r.variants
                .iter()
                .map(|v| rate(v, i).map(|x| x * 100.0))
                .collect(),
        )
    };
    let figures = vec![
        attempt(
            "highalloc-first",
            "stress-highalloc: success at the first attempt (%)",
            0,
            |p| p.1,
        ),
        attempt(
            "highalloc-rest",
            "stress-highalloc: success at rest (%)",
            2,
            |p| p.2,
        ),
    ];
    let runs = r
        .variants
        .iter()
        .zip(results)
        .map(|(v, res)| VariantRun::new(&[v], res))
        .collect();
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
        values,
        claims,
        figures,
        data: json!(data),
        runs,
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
