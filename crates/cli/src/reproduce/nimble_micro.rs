//! Nimble (Yan et al., ASPLOS'19) section 4.2 and Table 2: the page-migration
//! microbenchmarks, run on the kernel model's `move_pages` and `exchange_pages` between
//! the two nodes of the experiment's machine (`hugemm_mm::movepages`).
//!
//! Each measurement builds a fresh kernel from the file's machine, starts a process,
//! faults `n` pages of one size on node 0 (and, for an exchange, `n` more moved to node
//! 1 first), then times one call: the model charges every part of it (the call, the
//! kernel work per page, splits and the copy) from the profile's `[costs.migration]`.
//! Throughput is bytes moved over that time, as the paper's microbenchmarks compute it
//! (an exchange moves both pages' bytes).
//!
//! What is fitted and what is predicted: the profile's cost parts are solved from
//! Figure 2 and Figure 8's throughputs and from Figure 3's two numbers the paper's text
//! gives (docs/nimble.md); Figures 9-11 and Table 2's optimised columns are then
//! predictions of the same parts. Figure 3's plotted values and the per-bar splits of
//! Figures 2 and 8 are not in the paper's text, so no paper value is shown for them.

use super::{Claim, Progress, Report, Reproduction, Value};
use crate::plot::{BarGroup, Figure, Series};
use hugemm_hw::{PageSize, Pid, VirtAddr};
use hugemm_mm::{HugeAdvice, Kernel, Mechanism, MemConfig, MigrateOutcome, NodeId, ThpMigration};
use hugemm_sim::{migration_costs, mm_costs};
use serde_json::json;

/// Page counts the paper's Figures 10 and 11 sweep.
const COUNTS: [u64; 10] = [2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];
/// Copy threads the paper's Figures 3 and 9 sweep.
const THREADS: [u32; 5] = [1, 2, 4, 8, 16];
/// Nimble's default copy threads (`limit_mt_num`, and the paper's end-to-end setting).
const NIMBLE_THREADS: u32 = 4;

/// One page size's microbenchmark knobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Size {
    Base,
    Huge,
}

impl Size {
    fn label(self) -> &'static str {
        match self {
            Size::Base => "4 KB",
            Size::Huge => "2 MB",
        }
    }
}

/// A fresh kernel of the reproduction's machine, with its migration costs.
fn kernel(r: &Reproduction) -> anyhow::Result<Kernel> {
    let exp = &r.experiment;
    let cfg = MemConfig {
        bytes: exp.memory_bytes,
        geometry: exp.geometry,
    };
    let nodes = match exp.node_bytes.as_slice() {
        [] => vec![exp.memory_bytes],
        n => n.to_vec(),
    };
    anyhow::ensure!(
        nodes.len() >= 2,
        "Nimble's microbenchmarks migrate between two nodes: give [machine] a profile with \
         tiers and node_memory"
    );
    let mut k = Kernel::with_nodes(&cfg, &nodes, mm_costs(&exp.profile))?;
    let m = migration_costs(&exp.profile).ok_or_else(|| {
        anyhow::anyhow!(
            "profile {} has no [costs.migration]: the microbenchmarks need its parts",
            exp.profile.name
        )
    })?;
    k.set_migration_costs(m)?;
    Ok(k)
}

/// `n` pages of `size` faulted (written) on node 0; their addresses.
fn populate(k: &mut Kernel, n: u64, size: Size) -> anyhow::Result<(Pid, Vec<VirtAddr>)> {
    let pid = k.create_process();
    Ok((pid, fault_pages(k, pid, n, size)?))
}

/// `n` new pages of `size` of `pid`, written (so each has a frame), on node 0 while it
/// has room; their addresses.
fn fault_pages(k: &mut Kernel, pid: Pid, n: u64, size: Size) -> anyhow::Result<Vec<VirtAddr>> {
    let (bytes, advice, ps) = match size {
        Size::Base => (4096, HugeAdvice::None, PageSize::Base),
        Size::Huge => (2 << 20, HugeAdvice::Hugepage, PageSize::Huge),
    };
    let va = k.mmap(pid, n * bytes, advice)?;
    let pages: Vec<VirtAddr> = (0..n).map(|i| VirtAddr(va.0 + i * bytes)).collect();
    for &p in &pages {
        k.fault(pid, p, true, ps);
    }
    Ok(pages)
}

/// One `move_pages` call of `n` pages of `size` from node 0 to node 1 with `mech`, one
/// address per page (a huge page's start: under Linux's mechanism that splits it and
/// moves its 512 base pages).
fn migrate(
    r: &Reproduction,
    n: u64,
    size: Size,
    mech: Mechanism,
) -> anyhow::Result<MigrateOutcome> {
    let mut k = kernel(r)?;
    let (pid, pages) = populate(&mut k, n, size)?;
    let out = k.move_pages(pid, &pages, NodeId(1), &mech)?;
    anyhow::ensure!(
        out.failed == 0,
        "{} of {n} pages failed to migrate",
        out.failed
    );
    Ok(out)
}

/// `n` pages of `size` moved each way with `mech`: the two calls a policy without
/// exchange makes (Figure 11's "2 page migrations"), added up.
fn migrate_both_ways(
    r: &Reproduction,
    n: u64,
    size: Size,
    mech: Mechanism,
) -> anyhow::Result<MigrateOutcome> {
    let mut k = kernel(r)?;
    let (pid, up) = populate(&mut k, n, size)?;
    let down = populate_far(&mut k, pid, n, size)?;
    let a = k.move_pages(pid, &up, NodeId(1), &mech)?;
    let b = k.move_pages(pid, &down, NodeId(0), &mech)?;
    anyhow::ensure!(a.failed + b.failed == 0, "pages failed to migrate");
    let mut both = a;
    both.add(&b);
    Ok(both)
}

/// `n` pairs of pages of `size`, one of each on either node, exchanged with `mech`.
fn exchange(
    r: &Reproduction,
    n: u64,
    size: Size,
    mech: Mechanism,
) -> anyhow::Result<MigrateOutcome> {
    let mut k = kernel(r)?;
    let (pid, a) = populate(&mut k, n, size)?;
    let b = populate_far(&mut k, pid, n, size)?;
    let pairs: Vec<(VirtAddr, VirtAddr)> = a.into_iter().zip(b).collect();
    let out = k.exchange_pages(pid, &pairs, &mech)?;
    anyhow::ensure!(out.failed == 0, "{} pairs failed to exchange", out.failed);
    Ok(out)
}

/// `n` more pages of `size` for `pid`, moved to node 1 (natively, so huge pages stay huge).
fn populate_far(k: &mut Kernel, pid: Pid, n: u64, size: Size) -> anyhow::Result<Vec<VirtAddr>> {
    let pages = fault_pages(k, pid, n, size)?;
    let moved = k.move_pages(pid, &pages, NodeId(1), &Mechanism::THP)?;
    anyhow::ensure!(moved.failed == 0, "node 1 could not hold the far pages");
    Ok(pages)
}

/// Nimble's optimised mechanism: native THP migration, `threads` copy threads, `in_flight`
/// pages per batch.
fn optimised(threads: u32, in_flight: u32) -> Mechanism {
    Mechanism {
        thp: ThpMigration::Native,
        threads,
        in_flight,
    }
}

/// The mechanism for `size` pages with Linux's single thread: base pages (huge ones
/// split) or native THP.
fn serial(size: Size) -> Mechanism {
    match size {
        Size::Base => Mechanism::LINUX,
        Size::Huge => Mechanism::THP,
    }
}

fn us(ns: hugemm_hw::Nanos) -> f64 {
    ns.0 as f64 / 1000.0
}

fn f2(x: f64) -> String {
    format!("{x:.2}")
}

fn within(x: f64, lo: f64, hi: f64) -> bool {
    (lo..=hi).contains(&x)
}

/// Figures 2 and 8's four cases: one 4 KB page, 512 4 KB pages, a THP split then
/// migrated, a THP migrated natively (Linux's `move_pages` for the first three).
fn breakdown(r: &Reproduction) -> anyhow::Result<Vec<(&'static str, f64, MigrateOutcome)>> {
    let cases: [(&str, f64, u64, Size, Mechanism); 4] = [
        ("1 x 4 KB", 0.04, 1, Size::Base, Mechanism::LINUX),
        ("512 x 4 KB", 0.75, 512, Size::Base, Mechanism::LINUX),
        ("split THP", 0.75, 1, Size::Huge, Mechanism::LINUX),
        ("THP", 2.15, 1, Size::Huge, Mechanism::THP),
    ];
    cases
        .into_iter()
        .map(|(name, paper, n, size, mech)| Ok((name, paper, migrate(r, n, size, mech)?)))
        .collect()
}

/// Figure 2 (and Figure 8, its last three bars): what migrating one page costs, split
/// into the copy and the kernel's work.
pub fn figure2(r: &Reproduction, progress: Progress<'_>) -> anyhow::Result<Report> {
    let _ = progress.start("Nimble Figure 2: cost breakdown of migrating a page");
    breakdown_report(r, "Figure 2", "fig2", &[0, 1, 2, 3])
}

/// Figure 8: native THP migration against migrating 512 base pages or a split THP.
pub fn figure8(r: &Reproduction, progress: Progress<'_>) -> anyhow::Result<Report> {
    let _ = progress.start("Nimble Figure 8: native THP migration");
    breakdown_report(r, "Figure 8", "fig8", &[1, 2, 3])
}

fn breakdown_report(
    r: &Reproduction,
    item: &str,
    id: &str,
    pick: &[usize],
) -> anyhow::Result<Report> {
    let all = breakdown(r)?;
    let cases: Vec<_> = pick.iter().map(|&i| all[i]).collect();
    let header = [
        "case",
        "paper GB/s",
        "hugemm GB/s",
        "time (us)",
        "copy (us)",
        "kernel (us)",
        "split (us)",
    ];
    let rows: Vec<Vec<String>> = cases
        .iter()
        .map(|(name, paper, o)| {
            vec![
                name.to_string(),
                f2(*paper),
                f2(o.gbps()),
                format!("{:.1}", us(o.cost())),
                format!("{:.1}", us(o.copy)),
                format!("{:.1}", us(o.call + o.kernel)),
                format!("{:.1}", us(o.split)),
            ]
        })
        .collect();
    let values = cases
        .iter()
        .map(|(name, paper, o)| Value::new(item, name, "throughput (GB/s)", *paper, Some(o.gbps())))
        .collect();
    let g = |name: &str| all.iter().find(|c| c.0 == name).map_or(0.0, |c| c.2.gbps());
    let native = g("THP") / g("split THP");
    let mut claims = vec![Claim::new(
        "native THP migration moves a THP about 2.9x as fast as splitting it and migrating its base pages",
        "2.9x (2.15 vs 0.75 GB/s)",
        format!("{native:.2}x"),
        Some(within(native, 2.6, 3.2)),
    )];
    let same = g("split THP") / g("512 x 4 KB");
    claims.push(Claim::new(
        "migrating a split THP is about as fast as migrating 512 base pages",
        "0.75 vs 0.75 GB/s",
        format!("{same:.3}x"),
        Some(within(same, 0.95, 1.05)),
    ));
    if pick.contains(&0) {
        let single = all[0].2;
        let share = (single.call + single.kernel).0 as f64 / single.cost().0 as f64;
        claims.push(Claim::new(
            "migrating one base page is mostly kernel work, the copy a small fraction",
            "40 MB/s; copy a small part of the bar",
            format!(
                "{:.0} MB/s; kernel {:.0}% of the time",
                single.gbps() * 1000.0,
                share * 100.0
            ),
            Some(share > 0.9),
        ));
    }
    let categories: Vec<String> = cases.iter().map(|c| c.0.to_string()).collect();
    let bar = |name: &str, f: &dyn Fn(&MigrateOutcome) -> f64| BarGroup {
        name: name.into(),
        values: cases.iter().map(|c| Some(f(&c.2))).collect(),
    };
    let figures = vec![
        Figure::bars(
            &format!("{id}-time"),
            &format!("Nimble {item}: time to migrate (us)"),
            "time (us)",
            categories.clone(),
            vec![
                bar("page copy", &|o| us(o.copy)),
                bar("kernel activity", &|o| us(o.call + o.kernel + o.split)),
            ],
        ),
        super::paper_beside_hugemm(
            &format!("{id}-throughput"),
            &format!("Nimble {item}: migration throughput"),
            "GB/s",
            categories,
            cases.iter().map(|c| Some(c.1)).collect(),
            cases.iter().map(|c| Some(c.2.gbps())).collect(),
        ),
    ];
    let data = json!(cases
        .iter()
        .map(|(n, p, o)| json!({"case": n, "paper_gbps": p, "gbps": o.gbps(), "outcome": o}))
        .collect::<Vec<_>>());
    Ok(Report {
        title: format!("Nimble {item}: migrating one page, Linux's way and natively"),
        tables: vec![super::table(&header, &rows)],
        values,
        claims,
        figures,
        data,
        ..Report::default()
    })
}

/// Figure 3: raw copy throughput between the nodes by thread count and transfer size:
/// the copy model the profile's `copy_gbps`, `thread_launch_ns` and `link_gbps` make.
pub fn figure3(r: &Reproduction, progress: Progress<'_>) -> anyhow::Result<Report> {
    let _ = progress.start("Nimble Figure 3: raw copy throughput");
    let m = migration_costs(&r.experiment.profile)
        .ok_or_else(|| anyhow::anyhow!("profile has no [costs.migration]"))?;
    let sizes: Vec<u64> = (12..=30).step_by(2).map(|s| 1u64 << s).collect();
    let gbps = |bytes: u64, t: u32| bytes as f64 / m.copy_time(bytes, t).0 as f64;
    let series: Vec<Series> = THREADS
        .iter()
        .map(|&t| Series {
            name: format!("{t} thread{}", if t > 1 { "s" } else { "" }),
            points: sizes
                .iter()
                .map(|&b| ((b as f64).log2(), gbps(b, t)))
                .collect(),
        })
        .collect();
    let two_mb_best = THREADS
        .iter()
        .map(|&t| gbps(2 << 20, t))
        .fold(0.0, f64::max);
    let max = THREADS
        .iter()
        .map(|&t| gbps(1 << 30, t))
        .fold(0.0, f64::max);
    let header: Vec<String> = std::iter::once("size".to_string())
        .chain(THREADS.iter().map(|t| format!("{t} thr GB/s")))
        .collect();
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let rows: Vec<Vec<String>> = sizes
        .iter()
        .map(|&b| {
            std::iter::once(size_label(b))
                .chain(THREADS.iter().map(|&t| f2(gbps(b, t))))
                .collect()
        })
        .collect();
    let claims = vec![
        Claim::new(
            "copying 2 MB can reach about 10x the 0.75 GB/s of Linux's page migration",
            "about 7.5 GB/s (section 1: \"10x slower than what is achievable with a 2MB data size\"; fitted)",
            format!("{two_mb_best:.2} GB/s at the best thread count"),
            Some(within(two_mb_best, 6.5, 8.5)),
        ),
        Claim::new(
            "the maximum cross-socket copy throughput is around 16 GB/s",
            "about 16 GB/s (section 4.2.2; fitted)",
            format!("{max:.2} GB/s copying 1 GB"),
            Some(within(max, 14.0, 17.0)),
        ),
    ];
    let values = vec![
        Value::new(
            "Figure 3",
            "2 MB, best thread count",
            "copy GB/s",
            7.5,
            Some(two_mb_best),
        ),
        Value::new(
            "Figure 3",
            "largest transfer, best thread count",
            "copy GB/s",
            16.0,
            Some(max),
        ),
    ];
    Ok(Report {
        title: "Nimble Figure 3: raw copy throughput by threads and transfer size (the fitted copy model)".into(),
        tables: vec![super::table(&header, &rows)],
        values,
        claims,
        figures: vec![Figure::lines(
            "fig3",
            "Nimble Figure 3: copy throughput between nodes",
            "transfer size (log2 bytes)",
            "GB/s",
            series,
        )],
        data: json!({"sizes": sizes, "threads": THREADS, "copy": m}),
        ..Report::default()
    })
}

fn size_label(b: u64) -> String {
    match b {
        b if b >= 1 << 30 => format!("{} GB", b >> 30),
        b if b >= 1 << 20 => format!("{} MB", b >> 20),
        b => format!("{} KB", b >> 10),
    }
}

/// Figure 9: multi-threaded copy of single-page migrations (serial, `in_flight` 1),
/// 2 MB and 4 KB pages, by thread count; 512 pages a call.
pub fn figure9(r: &Reproduction, progress: Progress<'_>) -> anyhow::Result<Report> {
    let _ = progress.start("Nimble Figure 9: multi-threaded page migration");
    let n = 512;
    let mut table_rows = Vec::new();
    let mut series = Vec::new();
    let mut by = Vec::new();
    for size in [Size::Huge, Size::Base] {
        let mut points = Vec::new();
        for &t in &THREADS {
            let mech = Mechanism {
                threads: t,
                ..serial(size)
            };
            let o = migrate(r, n, size, mech)?;
            points.push((t as f64, o.gbps()));
            table_rows.push(vec![size.label().into(), t.to_string(), f2(o.gbps())]);
        }
        by.push(points.clone());
        series.push(Series {
            name: size.label().into(),
            points,
        });
    }
    let best = |p: &[(f64, f64)]| p.iter().map(|x| x.1).fold(0.0, f64::max);
    let huge_up = best(&by[0]) / by[0][0].1;
    let base_up = best(&by[1]) / by[1][0].1;
    let claims = vec![
        Claim::new(
            "parallel copy speeds up 2 MB THP migration about 2.8x",
            "2.8x (section 4.2.2)",
            format!("{huge_up:.2}x at the best thread count"),
            Some(within(huge_up, 2.4, 3.2)),
        ),
        Claim::new(
            "parallel copy does not improve 4 KB page migration (thread launches are not amortised)",
            "no improvement",
            format!("{base_up:.2}x at the best thread count"),
            Some(base_up <= 1.05),
        ),
    ];
    let values = vec![
        Value::new(
            "Figure 9",
            "2 MB",
            "speedup of the best thread count over 1",
            2.8,
            Some(huge_up),
        ),
        Value::new(
            "Figure 9",
            "4 KB",
            "speedup of the best thread count over 1",
            1.0,
            Some(base_up),
        ),
    ];
    Ok(Report {
        title: "Nimble Figure 9: multi-threaded single-page migration, 2 MB and 4 KB".into(),
        tables: vec![super::table(&["page size", "threads", "GB/s"], &table_rows)],
        values,
        claims,
        figures: vec![Figure::lines(
            "fig9",
            "Nimble Figure 9: migration throughput by copy threads (512 pages, one at a time)",
            "copy threads",
            "GB/s",
            series,
        )],
        data: json!({"pages": n, "threads": THREADS, "gbps": by}),
        ..Report::default()
    })
}

/// A sweep over [`COUNTS`] of one measurement; GB/s per count.
fn sweep(f: impl Fn(u64) -> anyhow::Result<MigrateOutcome>) -> anyhow::Result<Vec<(f64, f64)>> {
    COUNTS
        .iter()
        .map(|&n| Ok((n as f64, f(n)?.gbps())))
        .collect()
}

fn at(points: &[(f64, f64)], n: u64) -> f64 {
    points.iter().find(|p| p.0 == n as f64).map_or(0.0, |p| p.1)
}

/// The relative gain of curve `better` over curve `base` at each of [`COUNTS`], with
/// its lowest and highest.
fn gains_over(better: &[(f64, f64)], base: &[(f64, f64)]) -> (Vec<f64>, f64, f64) {
    let gain: Vec<f64> = COUNTS
        .iter()
        .map(|&n| at(better, n) / at(base, n) - 1.0)
        .collect();
    let lo = gain.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = gain.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (gain, lo, hi)
}

/// Figure 10: concurrent migration (4 threads, every page of the call in one batch)
/// against 4-thread serial copies and Linux's and native THP migration, by page count.
pub fn figure10(r: &Reproduction, progress: Progress<'_>) -> anyhow::Result<Report> {
    let _ = progress.start("Nimble Figure 10: concurrent page migration");
    let mut lines = Vec::new();
    let mut rows = Vec::new();
    let mut gains = Vec::new();
    for size in [Size::Huge, Size::Base] {
        let base = sweep(|n| migrate(r, n, size, Mechanism::LINUX))?;
        let thp = sweep(|n| migrate(r, n, Size::Huge, Mechanism::THP))?;
        let par = sweep(|n| {
            migrate(
                r,
                n,
                size,
                Mechanism {
                    threads: NIMBLE_THREADS,
                    ..serial(size)
                },
            )
        })?;
        let conc = sweep(|n| {
            migrate(
                r,
                n,
                size,
                Mechanism {
                    threads: NIMBLE_THREADS,
                    in_flight: 0,
                    ..serial(size)
                },
            )
        })?;
        for (i, &n) in COUNTS.iter().enumerate() {
            rows.push(vec![
                size.label().into(),
                n.to_string(),
                f2(base[i].1),
                f2(thp[i].1),
                f2(par[i].1),
                f2(conc[i].1),
            ]);
        }
        gains.push((size, base.clone(), par.clone(), conc.clone()));
        for (name, p) in [
            ("base page migration", base),
            ("THP migration", thp),
            ("4-thread non-concurrent", par),
            ("4-thread concurrent", conc),
        ] {
            lines.push((
                size,
                Series {
                    name: name.into(),
                    points: p,
                },
            ));
        }
    }
    let (_, _, hpar, hconc) = &gains[0];
    let (_, lo, hi) = gains_over(hconc, hpar);
    let (_, bbase, bpar, bconc) = &gains[1];
    let par_worse = COUNTS.iter().all(|&n| at(bpar, n) < at(bbase, n));
    let cross = COUNTS.iter().find(|&&n| at(bconc, n) > at(bbase, n));
    let claims = vec![
        Claim::new(
            "for 2 MB pages, concurrency adds 10-25% over parallel copies alone",
            "10-25% (section 4.2.3)",
            format!("{:.0}% to {:.0}%", lo * 100.0, hi * 100.0),
            Some(lo >= 0.05 && hi <= 0.35),
        ),
        Claim::new(
            "for 4 KB pages, parallel non-concurrent migration is always slower than single-threaded",
            "always inferior",
            format!("slower at {} of {} counts", COUNTS.iter().filter(|&&n| at(bpar, n) < at(bbase, n)).count(), COUNTS.len()),
            Some(par_worse),
        ),
        Claim::new(
            "for 4 KB pages, concurrent parallel migration beats the baseline only at large page counts",
            "only at sufficiently large counts",
            match cross {
                Some(n) => format!("from {n} pages"),
                None => "never".into(),
            },
            Some(cross.is_some_and(|&n| n >= 16)),
        ),
    ];
    let figures = [Size::Huge, Size::Base]
        .into_iter()
        .map(|size| {
            Figure::lines(
                &format!("fig10-{}", if size == Size::Huge { "2m" } else { "4k" }),
                &format!(
                    "Nimble Figure 10: concurrent migration, {} pages",
                    size.label()
                ),
                "pages moved (log2)",
                "GB/s",
                lines
                    .iter()
                    .filter(|(s, l)| {
                        *s == size && !(size == Size::Base && l.name == "THP migration")
                    })
                    .map(|(_, l)| Series {
                        name: l.name.clone(),
                        points: l.points.iter().map(|&(x, y)| (x.log2(), y)).collect(),
                    })
                    .collect(),
            )
        })
        .collect();
    Ok(Report {
        title: "Nimble Figure 10: concurrent page migration".into(),
        tables: vec![super::table(
            &[
                "page size",
                "pages",
                "base GB/s",
                "THP GB/s",
                "4-thr GB/s",
                "4-thr concurrent GB/s",
            ],
            &rows,
        )],
        values: vec![
            Value::new(
                "Figure 10",
                "2 MB",
                "lowest gain of concurrency over parallel (%)",
                10.0,
                Some(lo * 100.0),
            ),
            Value::new(
                "Figure 10",
                "2 MB",
                "highest gain of concurrency over parallel (%)",
                25.0,
                Some(hi * 100.0),
            ),
        ],
        claims,
        figures,
        data: json!({"counts": COUNTS, "rows": rows}),
        ..Report::default()
    })
}

/// Figure 11: exchanging pairs (4 threads, concurrent) against two concurrent
/// migrations, one each way, and the single-threaded baselines, by page count.
pub fn figure11(r: &Reproduction, progress: Progress<'_>) -> anyhow::Result<Report> {
    let _ = progress.start("Nimble Figure 11: exchanging pages");
    let mut rows = Vec::new();
    let mut figures = Vec::new();
    let mut curves = Vec::new();
    for size in [Size::Huge, Size::Base] {
        let opt = optimised(NIMBLE_THREADS, 0);
        let opt = match size {
            Size::Base => Mechanism {
                thp: ThpMigration::Split,
                ..opt
            },
            Size::Huge => opt,
        };
        let base = sweep(|n| migrate(r, n, size, Mechanism::LINUX))?;
        let thp = sweep(|n| migrate(r, n, Size::Huge, Mechanism::THP))?;
        let two = sweep(|n| migrate_both_ways(r, n, size, opt))?;
        let exch = sweep(|n| exchange(r, n, size, opt))?;
        for (i, &n) in COUNTS.iter().enumerate() {
            rows.push(vec![
                size.label().into(),
                n.to_string(),
                f2(base[i].1),
                f2(thp[i].1),
                f2(two[i].1),
                f2(exch[i].1),
            ]);
        }
        let mut series = vec![Series {
            name: "base page migration".into(),
            points: base.clone(),
        }];
        if size == Size::Huge {
            series.push(Series {
                name: "THP migration".into(),
                points: thp,
            });
        }
        series.push(Series {
            name: "4-thread concur migrate (x2)".into(),
            points: two.clone(),
        });
        series.push(Series {
            name: "4-thread concur exchange".into(),
            points: exch.clone(),
        });
        figures.push(Figure::lines(
            &format!("fig11-{}", if size == Size::Huge { "2m" } else { "4k" }),
            &format!(
                "Nimble Figure 11: exchange vs two migrations, {} pages",
                size.label()
            ),
            "pages exchanged (log2)",
            "GB/s",
            series
                .into_iter()
                .map(|s| Series {
                    name: s.name,
                    points: s.points.iter().map(|&(x, y)| (x.log2(), y)).collect(),
                })
                .collect(),
        ));
        curves.push((base, two, exch));
    }
    let (_, htwo, hexch) = &curves[0];
    let (gain, lo, hi) = gains_over(hexch, htwo);
    let small_best = gain.first().copied().unwrap_or(0.0) >= gain.last().copied().unwrap_or(0.0);
    let big = at(hexch, 512);
    let (bbase, _, bexch) = &curves[1];
    let base_exch = at(bexch, 512);
    let base_gain = base_exch / at(bbase, 512) - 1.0;
    let claims = vec![
        Claim::new(
            "exchanging THPs is 10-50% faster than two concurrent migrations, most for few pages",
            "10-50%, largest at small counts (section 4.2.4)",
            format!("{:.0}% to {:.0}%, largest at {}", lo * 100.0, hi * 100.0, if small_best { "small counts" } else { "large counts" }),
            Some(lo >= 0.05 && hi <= 0.6 && small_best),
        ),
        Claim::new(
            "exchanging two lists of 512 THPs reaches 11.2 GB/s",
            "11.2 GB/s",
            format!("{big:.2} GB/s"),
            Some(within(big / 11.2, 0.85, 1.15)),
        ),
        Claim::new(
            "exchanging 512 base-page pairs reaches 1.1 GB/s, 37.5% above Linux's base-page migration",
            "1.1 GB/s, +37.5%",
            format!("{base_exch:.2} GB/s, {:+.0}%", base_gain * 100.0),
            Some(within(base_exch / 1.1, 0.85, 1.15) && base_gain > 0.2),
        ),
    ];
    Ok(Report {
        title: "Nimble Figure 11: exchanging pages".into(),
        tables: vec![super::table(
            &[
                "page size",
                "pairs",
                "base GB/s",
                "THP GB/s",
                "2 x concur migrate GB/s",
                "concur exchange GB/s",
            ],
            &rows,
        )],
        values: vec![
            Value::new(
                "Figure 11",
                "2 MB, 512 pairs",
                "exchange GB/s",
                11.2,
                Some(big),
            ),
            Value::new(
                "Figure 11",
                "4 KB, 512 pairs",
                "exchange GB/s",
                1.1,
                Some(base_exch),
            ),
            Value::new(
                "Figure 11",
                "2 MB",
                "lowest gain of exchange over two migrations (%)",
                10.0,
                Some(lo * 100.0),
            ),
            Value::new(
                "Figure 11",
                "2 MB",
                "highest gain of exchange over two migrations (%)",
                50.0,
                Some(hi * 100.0),
            ),
        ],
        claims,
        figures,
        data: json!({"counts": COUNTS, "rows": rows}),
        ..Report::default()
    })
}

/// Table 2, Xeon row: the highest huge-page migration throughput of each mechanism,
/// over thread counts and page counts for the optimised ones ("optimal tunable
/// parameters").
pub fn table2(r: &Reproduction, progress: Progress<'_>) -> anyhow::Result<Report> {
    let _ = progress.start("Nimble Table 2: maximum huge-page migration throughput");
    let base = migrate(r, 512, Size::Huge, Mechanism::LINUX)?.gbps();
    let thp = migrate(r, 1, Size::Huge, Mechanism::THP)?.gbps();
    let mut opt: (f64, u32, u64) = (0.0, 0, 0);
    let mut exch: (f64, u32, u64) = (0.0, 0, 0);
    for &t in &THREADS {
        for &n in &[8u64, 64, 512] {
            let m = optimised(t, 0);
            let o = migrate(r, n, Size::Huge, m)?.gbps();
            if o > opt.0 {
                opt = (o, t, n);
            }
            let e = exchange(r, n, Size::Huge, m)?.gbps();
            if e > exch.0 {
                exch = (e, t, n);
            }
        }
    }
    let paper = [
        ("base page", 0.75),
        ("THP", 2.15),
        ("opt.", 9.80),
        ("opt. exch.", 11.23),
    ];
    let ours = [base, thp, opt.0, exch.0];
    let rows: Vec<Vec<String>> = paper
        .iter()
        .zip(ours)
        .map(|((n, p), h)| vec![n.to_string(), f2(*p), f2(h), f2(h / p)])
        .collect();
    let ratios = [thp / base, opt.0 / thp, exch.0 / opt.0, exch.0 / base];
    let claims = vec![
        Claim::new(
            "native THP migration: 2.9x base-page migration",
            "2.9x",
            format!("{:.2}x", ratios[0]),
            Some(within(ratios[0], 2.6, 3.2)),
        ),
        Claim::new(
            "parallel + concurrent: a further 4.6x",
            "4.6x",
            format!("{:.2}x", ratios[1]),
            Some(within(ratios[1], 3.9, 5.3)),
        ),
        Claim::new(
            "exchange: a further 1.1x",
            "1.1x",
            format!("{:.2}x", ratios[2]),
            Some(within(ratios[2], 1.03, 1.25)),
        ),
        Claim::new(
            "all together: about 15x base-page migration",
            "15x (0.75 -> 11.23 GB/s)",
            format!("{:.1}x", ratios[3]),
            Some(within(ratios[3], 12.5, 17.5)),
        ),
    ];
    Ok(Report {
        title: "Nimble Table 2 (Intel Xeon row): maximum huge-page migration throughput".into(),
        tables: vec![
            super::table(
                &["mechanism", "paper GB/s", "hugemm GB/s", "hugemm/paper"],
                &rows,
            ),
            format!(
                "best opt.: {} threads, {} THPs a call; best opt. exch.: {} threads, {} pairs\n",
                opt.1, opt.2, exch.1, exch.2
            ),
        ],
        values: paper
            .iter()
            .zip(ours)
            .map(|((n, p), h)| Value::new("Table 2", n, "GB/s", *p, Some(h)))
            .collect(),
        claims,
        figures: vec![super::paper_beside_hugemm(
            "table2",
            "Nimble Table 2: huge-page migration throughput (Xeon)",
            "GB/s",
            paper.iter().map(|p| p.0.to_string()).collect(),
            paper.iter().map(|p| Some(p.1)).collect(),
            ours.iter().map(|&h| Some(h)).collect(),
        )],
        data: json!({"gbps": ours, "best_opt": {"threads": opt.1, "pages": opt.2}, "best_exchange": {"threads": exch.1, "pairs": exch.2}}),
        ..Report::default()
    })
}
