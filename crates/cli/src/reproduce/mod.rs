//! `hugemm reproduce PATH...`: the papers' experiments, each an experiment file with a
//! `[reproduce]` table naming the reproduction and the variants it compares. A reproduction
//! drives the engine as a script drives a machine (run the workload, compact, measure,
//! run more) and prints the paper's numbers beside ours.
//!
//! Owns the scripts and the paper's published values; the mechanisms and policies are the
//! kernel model's, the workloads are the experiment file's.

pub mod apsys16;
pub mod apsys16_hp;
pub mod hawkeye;
pub mod hawkeye_fig11;
pub mod hawkeye_table3;
pub mod hawkeye_vm;
pub mod nimble;
pub mod nimble_micro;
pub mod output;
pub mod shared;
pub mod sysmon;
pub mod sysmon_vs;
pub mod zeroing;

use crate::config::{self, ConfigError, PolicyCatalog};
use crate::plot::Figure;
use comfy_table::{presets, CellAlignment, ContentArrangement, Table};
use hugemm_mm::{FallbackStats, Kernel};
use hugemm_sim::{Engine, Experiment, RunResult, TimeseriesSink};
use rayon::prelude::*;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Who follows a reproduction's runs (progress bars or lines on stderr). Variants run in
/// parallel, so it is called from the pool's threads.
pub type Progress<'a> = &'a dyn Watch;

/// What follows a reproduction's runs.
pub trait Watch: Sync {
    /// A run of `what` starts: note it, and return what should see its samples (a
    /// progress bar), if anything.
    fn start(&self, what: &str) -> Option<Box<dyn TimeseriesSink>>;
}

/// A function of the run's name is a watcher that sees no samples (tests, plain lines).
impl<F: Fn(&str) + Sync> Watch for F {
    fn start(&self, what: &str) -> Option<Box<dyn TimeseriesSink>> {
        self(what);
        None
    }
}

/// An engine for `exp`, the run of `what`, followed by `progress`.
pub(crate) fn engine(
    progress: Progress<'_>,
    what: &str,
    exp: Experiment,
) -> anyhow::Result<Engine> {
    let mut engine = Engine::new(exp)?;
    if let Some(watcher) = progress.start(what) {
        engine.watch_samples(watcher);
    }
    Ok(engine)
}

/// `f` of every item, run in parallel on rayon's pool (`hugemm reproduce --jobs`), in
/// item order: each run is an engine of its own, seeded from its experiment, so the
/// results, and the report made of them, are byte-identical to a serial run's. Of
/// several errors, the first item's is returned.
pub(crate) fn par_map<T: Sync, R: Send>(
    items: &[T],
    f: impl Fn(&T) -> anyhow::Result<R> + Sync + Send,
) -> anyhow::Result<Vec<R>> {
    let results: Vec<anyhow::Result<R>> = items.par_iter().map(f).collect();
    results.into_iter().collect()
}

/// The reproductions, by `[reproduce] kind`.
pub const KINDS: &[&str] = &[
    "apsys16-fig2",
    "apsys16-table1",
    "apsys16-fig3",
    "apsys16-table2",
    "apsys16-highalloc",
    "apsys16-table3",
    "hawkeye-table3",
    "hawkeye-fig5",
    "hawkeye-fig7",
    "hawkeye-fig8",
    "hawkeye-fig9",
    "hawkeye-fig11",
    "hawkeye-table9",
    "hawkeye-fig1",
    "hawkeye-table1",
    "hawkeye-table7",
    "hawkeye-table8",
    "hawkeye-fig10",
    "nimble-fig2",
    "nimble-fig3",
    "nimble-fig8",
    "nimble-fig9",
    "nimble-fig10",
    "nimble-fig11",
    "nimble-table2",
    "nimble-fig12",
    "nimble-fig13",
    "nimble-fig14",
    "combined-promotion-x-tiering",
    "sysmon-fig1",
    "sysmon-overhead",
    "sysmon-vs-hawkeye",
];

/// Nimble's end-to-end reproductions ([`nimble`]): workloads (sets) under tiering
/// configurations (variants).
const NIMBLE_END_TO_END: &[&str] = &["nimble-fig12", "nimble-fig13", "nimble-fig14"];

/// Nimble's microbenchmarks ([`nimble_micro`]): measurements of the kernel model's
/// migration calls, with no processes of the file's and no variants.
pub const MICROBENCHMARKS: &[&str] = &[
    "nimble-fig2",
    "nimble-fig3",
    "nimble-fig8",
    "nimble-fig9",
    "nimble-fig10",
    "nimble-fig11",
    "nimble-table2",
];

/// The reproductions of HawkEye's zeroing and bloat results ([`zeroing`]).
const ZEROING: &[&str] = &[
    "hawkeye-fig1",
    "hawkeye-table1",
    "hawkeye-table7",
    "hawkeye-table8",
    "hawkeye-fig10",
    "sysmon-vs-hawkeye",
];

/// The reproduction files `paths` stand for, in order: a file stands for itself, a
/// directory for the `*.toml` files directly in it, by name (so `experiments/apsys16`
/// runs a paper's reproductions together), or, when it has none, for those of its
/// sub-directories, each in turn by name (so `experiments` runs every paper's). Whether
/// each is a reproduction is [`load`]'s to say.
pub fn files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, ConfigError> {
    let mut out = Vec::new();
    for path in paths {
        if !path.is_dir() {
            out.push(path.clone());
            continue;
        }
        let found = files_in(path)?;
        if found.is_empty() {
            return Err(ConfigError::Path {
                path: path.display().to_string(),
                problem: "a directory without reproduction files (*.toml), in it or in its \
                          sub-directories"
                    .into(),
            });
        }
        out.extend(found);
    }
    Ok(out)
}

/// The `*.toml` files directly in `dir`, by name; if there are none, those its
/// sub-directories stand for, by sub-directory name.
fn files_in(dir: &Path) -> Result<Vec<PathBuf>, ConfigError> {
    let io = |error| ConfigError::Io {
        file: dir.display().to_string(),
        error,
    };
    let (mut tomls, mut subdirs) = (Vec::new(), Vec::new());
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        if path.is_file() && path.extension().is_some_and(|e| e == "toml") {
            tomls.push(path);
        } else if path.is_dir() {
            subdirs.push(path);
        }
    }
    if !tomls.is_empty() {
        tomls.sort();
        return Ok(tomls);
    }
    subdirs.sort();
    let mut all = Vec::new();
    for sub in &subdirs {
        all.extend(files_in(sub)?);
    }
    Ok(all)
}

/// Where each of the `files` that `paths` stand for ([`files`]) writes its results:
/// `out` itself when `paths` is a single file; otherwise, under `out` (or `results`
/// without it), the file's path below the directory argument it came from without
/// `.toml` (`table1` for `experiments/apsys16/table1.toml` from `experiments/apsys16`,
/// `apsys16/table1` from `experiments`), or its stem when it was named itself. Two files
/// that would write to one directory are an error naming both.
pub fn output_dirs(
    paths: &[PathBuf],
    files: &[PathBuf],
    out: Option<&Path>,
) -> Result<Vec<PathBuf>, ConfigError> {
    let single = matches!(paths, [p] if !p.is_dir());
    let dirs: Vec<PathBuf> = files
        .iter()
        .map(|f| {
            let below = paths
                .iter()
                .filter(|p| p.is_dir())
                .find_map(|p| f.strip_prefix(p).ok())
                .map(|rel| rel.with_extension(""))
                .unwrap_or_else(|| PathBuf::from(f.file_stem().unwrap_or_default()));
            match out {
                Some(out) if single => out.to_path_buf(),
                Some(out) => out.join(below),
                None => PathBuf::from("results").join(below),
            }
        })
        .collect();
    for (i, dir) in dirs.iter().enumerate() {
        if let Some(j) = dirs[..i].iter().position(|d| d == dir) {
            return Err(ConfigError::Path {
                path: files[i].display().to_string(),
                problem: format!(
                    "would write its results to {}, as {} does; run them separately with --out",
                    dir.display(),
                    files[j].display()
                ),
            });
        }
    }
    Ok(dirs)
}

/// A validated reproduction file.
#[derive(Debug)]
pub struct Reproduction {
    /// The reproduction's kind (one of [`KINDS`]).
    pub kind: String,
    /// Variants compared: fallback policies (APSys'16) or policy setups (HawkEye, see
    /// [`hawkeye::VARIANTS`]).
    pub variants: Vec<String>,
    /// HawkEye: the sets of processes run together.
    pub sets: Vec<Vec<String>>,
    /// Every policy's configuration from the file.
    pub policies: PolicyCatalog,
    /// The scale, in words.
    pub scale: String,
    /// Seconds of the later measurement.
    pub settle_s: f64,
    /// Typical serial wall time (s), if the file says.
    pub typical_wall_s: Option<f64>,
    /// The experiment every variant starts from.
    pub experiment: Experiment,
    /// The resolved file.
    pub resolved: config::raw::RawExperiment,
    /// Notes for stderr (deprecated key names the file uses).
    pub notes: Vec<String>,
    /// The guests' profile, with `[[vm]]` tables.
    pub guest_profile: Option<hugemm_hw::MachineProfile>,
    /// The file's `[[vm]]` tables.
    pub vms: Vec<config::vms::VmSpec>,
    /// The file's `[host]` table.
    pub host: config::vms::HostSpec,
    /// Workloads this reproduction shares with others of the same `hugemm reproduce`
    /// (none unless [`shared::SharedRuns::plan`] found some).
    pub shared: shared::Shared,
    /// `apsys16-highalloc`: how stress-highalloc runs (`[reproduce.highalloc]`).
    pub highalloc: apsys16::HighAllocSetup,
}

/// The version of `reproduction.json`'s shape (`docs/output.md`): raised when a field
/// changes meaning or goes away, not when one is added.
pub const SCHEMA_VERSION: u32 = 1;

/// What a reproduction found: printed as text, written as `reproduction.json`,
/// `report.md` and `report.html` ([`output`]).
#[derive(Debug, Default)]
pub struct Report {
    /// Title.
    pub title: String,
    /// The scale, in words.
    pub scale: String,
    /// Tables of text (paper beside hugemm), as printed.
    pub tables: Vec<String>,
    /// The paper's numbers beside hugemm's.
    pub values: Vec<Value>,
    /// The paper's claims and whether hugemm's results bear them out.
    pub claims: Vec<Claim>,
    /// Figures, in the style of the paper's.
    pub figures: Vec<Figure>,
    /// Every run behind the results (a variant, of a set), each written as a run's
    /// output is (`summary.json`, `timeseries.csv`).
    pub runs: Vec<VariantRun>,
    /// The numbers behind the tables, in the reproduction's own shape.
    pub data: serde_json::Value,
    /// Further files written into the reproduction's directory, (name, contents): a
    /// figure's data as CSV, say.
    pub files: Vec<(String, String)>,
}

/// One of the paper's numbers beside hugemm's.
#[derive(Clone, Debug, Serialize)]
pub struct Value {
    /// Where the paper gives it ("Table 5").
    pub item: String,
    /// Its row: a workload, a variant, a bin.
    pub row: String,
    /// What it measures, with its unit ("speedup over 4 KB pages").
    pub quantity: String,
    /// The paper's value.
    pub paper: f64,
    /// hugemm's (`None`: not measured by this run, e.g. its variant was not run).
    pub hugemm: Option<f64>,
    /// hugemm / paper (`None` without hugemm's value or when the paper's is 0).
    pub ratio: Option<f64>,
}

impl Value {
    /// The paper's `paper` beside hugemm's `hugemm` for `quantity` of `row` in `item`.
    pub fn new(item: &str, row: &str, quantity: &str, paper: f64, hugemm: Option<f64>) -> Value {
        Value {
            item: item.into(),
            row: row.into(),
            quantity: quantity.into(),
            paper,
            hugemm,
            ratio: hugemm.filter(|_| paper != 0.0).map(|h| h / paper),
        }
    }
}

/// A claim of the paper and whether hugemm's results bear it out.
#[derive(Clone, Debug, Serialize)]
pub struct Claim {
    /// The claim, close to the paper's words.
    pub claim: String,
    /// What the paper measured or says for it.
    pub paper: String,
    /// What hugemm measured.
    pub hugemm: String,
    /// Whether hugemm's result bears the claim out (`None`: this run cannot say, e.g. a
    /// variant it needs was not run).
    pub holds: Option<bool>,
}

impl Claim {
    /// `claim` (the paper: `paper`), judged `holds` on hugemm's `hugemm`.
    pub fn new(claim: &str, paper: &str, hugemm: String, holds: Option<bool>) -> Claim {
        Claim {
            claim: claim.into(),
            paper: paper.into(),
            hugemm,
            holds,
        }
    }

    /// A claim this run cannot judge, saying why.
    pub fn unjudged(claim: &str, paper: &str, why: &str) -> Claim {
        Claim::new(claim, paper, why.into(), None)
    }
}

/// One run behind a reproduction's results.
#[derive(Debug)]
pub struct VariantRun {
    /// Where it is written below the reproduction's directory, one segment per level
    /// (`["xsbench", "hawkeye-g"]`: `runs/xsbench/hawkeye-g/`).
    pub path: Vec<String>,
    /// What it did.
    pub result: RunResult,
}

impl VariantRun {
    /// The run `result` of `path`.
    pub fn new(path: &[&str], result: RunResult) -> VariantRun {
        VariantRun {
            path: path.iter().map(|s| s.to_string()).collect(),
            result,
        }
    }
}

/// A figure of the paper's values beside hugemm's: for each of the `categories`, a bar
/// of `paper` and one of `hugemm` (`None`: no bar).
pub(crate) fn paper_beside_hugemm(
    id: &str,
    title: &str,
    y: &str,
    categories: Vec<String>,
    paper: Vec<Option<f64>>,
    hugemm: Vec<Option<f64>>,
) -> Figure {
    use crate::plot::BarGroup;
    Figure::bars(
        id,
        title,
        y,
        categories,
        vec![
            BarGroup {
                name: "paper".into(),
                values: paper,
            },
            BarGroup {
                name: "hugemm".into(),
                values: hugemm,
            },
        ],
    )
}

/// The claims as a text table (claim, paper, hugemm, holds).
pub(crate) fn claims_table(claims: &[Claim]) -> String {
    let rows: Vec<Vec<String>> = claims
        .iter()
        .map(|c| {
            vec![
                c.claim.clone(),
                c.paper.clone(),
                c.hugemm.clone(),
                match c.holds {
                    Some(h) => h.to_string(),
                    None => "-".into(),
                },
            ]
        })
        .collect();
    let mut t = Table::new();
    t.set_header(["claim", "paper", "hugemm", "holds"]);
    t.add_rows(rows);
    style_table(&mut t);
    for i in 1..3 {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Left);
        }
    }
    render_table(&t)
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "{}", self.title)?;
        writeln!(f, "scale: {}", self.scale)?;
        for t in &self.tables {
            writeln!(f)?;
            write!(f, "{t}")?;
        }
        if !self.claims.is_empty() {
            writeln!(f)?;
            write!(f, "{}", claims_table(&self.claims))?;
        }
        Ok(())
    }
}

/// Load a reproduction file.
pub fn load(path: &Path) -> Result<Reproduction, ConfigError> {
    load_with(path, &[])
}

/// Load a reproduction file with `--set` overrides applied.
pub fn load_with(path: &Path, overrides: &[config::Override]) -> Result<Reproduction, ConfigError> {
    let mut loaded = config::load_with(path, overrides)?;
    let file = path.display().to_string();
    let source = loaded.source.clone();
    let bad = |key: &str, expected: String| {
        source.place(ConfigError::Invalid {
            file: file.clone(),
            at: None,
            key: key.into(),
            expected,
        })
    };
    let r = loaded.resolved.reproduce.as_mut().ok_or_else(|| {
        bad(
            "reproduce",
            "a [reproduce] table (this is a plain experiment file: use `hugemm run`)".into(),
        )
    })?;
    let kind = r.kind.clone().unwrap_or_default();
    if !KINDS.contains(&kind.as_str()) {
        return Err(bad(
            "reproduce.kind",
            format!("one of {}, found \"{kind}\"", KINDS.join(", ")),
        ));
    }
    // HawkEye's promotion reproductions compare policy setups over sets of processes;
    // Table 3 sets the page size itself and takes neither; the zeroing ones compare
    // policy and kernel setups, over sets if the file gives them.
    let zeroing = ZEROING.contains(&kind.as_str());
    let micro = MICROBENCHMARKS.contains(&kind.as_str());
    if micro && r.variants.is_some() {
        return Err(bad(
            "reproduce.variants",
            "no variants: Nimble's microbenchmarks measure every mechanism they compare".into(),
        ));
    }
    let hawkeye = kind.starts_with("hawkeye-") && kind != "hawkeye-table3" && !zeroing;
    let end_to_end = NIMBLE_END_TO_END.contains(&kind.as_str());
    let combined = kind == "combined-promotion-x-tiering";
    let sysmon = kind.starts_with("sysmon-");
    let vm_kind = kind == "hawkeye-fig9";
    let overcommit = kind == "hawkeye-fig11";
    let (allowed, what, default): (&[&str], &str, &str) = if vm_kind {
        (hawkeye_vm::LAYOUTS, "layouts of Table 6", "host")
    } else if overcommit {
        (hawkeye_fig11::VARIANTS, "memory-return setups", "none")
    } else if kind == "sysmon-fig1" {
        (sysmon::FIG1_VARIANTS, "monitors", "tlb-misses")
    } else if kind == "sysmon-overhead" {
        (sysmon::OVERHEAD_VARIANTS, "monitors", "tlb-misses")
    } else if combined {
        (
            nimble::COMBINED_VARIANTS,
            "promotion x tiering cells",
            "linux",
        )
    } else if end_to_end {
        (nimble::VARIANTS, "tiering configurations", "all-remote")
    } else if hawkeye {
        (hawkeye::VARIANTS, "policy setups", "4k")
    } else if zeroing {
        (zeroing::VARIANTS, "policy and kernel setups", "linux-2m")
    } else {
        (hugemm_mm::fallback::NAMES, "fallback policies", "default")
    };
    let variants = match micro {
        true => vec!["model".to_string()],
        false => r.variants.clone().unwrap_or_else(|| vec![default.into()]),
    };
    if variants.is_empty() {
        return Err(bad(
            "reproduce.variants",
            format!("at least one of the {what}"),
        ));
    }
    for v in variants.iter().filter(|_| !micro) {
        if !allowed.contains(&v.as_str()) {
            return Err(bad(
                "reproduce.variants",
                format!("{what} among {}, found \"{v}\"", allowed.join(", ")),
            ));
        }
    }
    let sets = r.sets.clone().unwrap_or_default();
    r.sets = (!sets.is_empty()).then(|| sets.clone());
    if hawkeye || end_to_end || combined || sysmon || (zeroing && !sets.is_empty()) {
        if sets.is_empty() || sets.iter().any(|s| s.is_empty()) {
            return Err(bad(
                "reproduce.sets",
                "a list of non-empty lists of process names, e.g. [[\"xsbench\"]]".into(),
            ));
        }
        let names: Vec<&str> = loaded
            .experiment
            .processes
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        for e in sets.iter().flatten() {
            if !names.iter().any(|n| hawkeye::member(n, e)) {
                return Err(bad(
                    "reproduce.sets",
                    format!("names of processes in the file, found \"{e}\""),
                ));
            }
        }
    } else if !sets.is_empty() {
        return Err(bad(
            "reproduce.sets",
            "no sets: they are for HawkEye's reproductions".into(),
        ));
    }
    if vm_kind {
        for v in &variants {
            if !loaded
                .vms
                .iter()
                .any(|vm| vm.layout.as_deref() == Some(v.as_str()))
            {
                return Err(bad(
                    "vm",
                    format!("a [[vm]] table with layout = \"{v}\" (a variant to run)"),
                ));
            }
        }
    } else if overcommit {
        if loaded.vms.is_empty() || loaded.vms.iter().any(|v| v.layout.is_some()) {
            return Err(bad(
                "vm",
                "[[vm]] tables with no layout (every run of Figure 11 has them all)".into(),
            ));
        }
        if variants.iter().any(|v| v == "balloon") && loaded.host.balloon.is_none() {
            return Err(bad(
                "host.free_page_reporting_ms",
                "the guests' free page reporting, for the \"balloon\" variant".into(),
            ));
        }
    } else if kind == "hawkeye-table3" {
        if loaded.vms.len() > 1 || loaded.vms.iter().any(|v| v.layout.is_some()) {
            return Err(bad(
                "vm",
                "at most one [[vm]] table, with no layout (the VM of Table 3's virtual column)"
                    .into(),
            ));
        }
    } else if !loaded.vms.is_empty() {
        return Err(bad(
            "vm",
            format!(
                "no [[vm]] tables: \"{kind}\" runs on bare metal (hawkeye-fig9, \
                 hawkeye-fig11 and hawkeye-table3 run VMs)"
            ),
        ));
    }
    let highalloc = match (kind == "apsys16-highalloc", r.highalloc.take()) {
        (false, Some(_)) => {
            return Err(bad(
                "reproduce.highalloc",
                format!(
                    "no [reproduce.highalloc] table: it is for apsys16-highalloc, not \"{kind}\""
                ),
            ))
        }
        (false, None) => apsys16::HighAllocSetup::default(),
        (true, raw) => {
            let (setup, resolved) = apsys16::HighAllocSetup::read(raw.unwrap_or_default())
                .map_err(|(key, expected)| bad(key, expected))?;
            r.highalloc = Some(resolved);
            setup
        }
    };
    let settle_s = r.settle_s.unwrap_or(60.0);
    if !settle_s.is_finite() || !(0.0..=1e6).contains(&settle_s) {
        return Err(bad(
            "reproduce.settle_s",
            format!("a number of seconds from 0 to 1000000, found {settle_s}"),
        ));
    }
    let typical_wall_s = r.typical_wall_s;
    if typical_wall_s.is_some_and(|w| !w.is_finite() || w < 0.0) {
        return Err(bad(
            "reproduce.typical_wall_s",
            format!(
                "a number of seconds, at least 0, found {}",
                typical_wall_s.unwrap_or_default()
            ),
        ));
    }
    r.variants = (!micro).then(|| variants.clone());
    r.settle_s = Some(settle_s);
    let scale = r.scale.clone().unwrap_or_else(|| "as in the paper".into());
    Ok(Reproduction {
        kind,
        variants,
        sets,
        policies: loaded.policies,
        scale,
        settle_s,
        typical_wall_s,
        experiment: loaded.experiment,
        resolved: loaded.resolved,
        notes: loaded.notes,
        guest_profile: loaded.guest_profile,
        vms: loaded.vms,
        host: loaded.host,
        shared: Default::default(),
        highalloc,
    })
}

impl Reproduction {
    /// How many runs it makes: variants x sets (Figure 8: twice, one per launch order;
    /// Table 3: its two page sizes).
    pub fn runs(&self) -> usize {
        match self.kind.as_str() {
            "hawkeye-table3" => 2 + 2 * self.vms.len().min(1),
            "apsys16-table3" => 2,
            k if MICROBENCHMARKS.contains(&k) => 1,
            "nimble-fig13" => {
                let migrating = self.variants.iter().filter(|v| *v != "all-remote").count();
                self.sets.len() * (1 + 7 * migrating)
            }
            "hawkeye-fig8" | "hawkeye-fig9" => 2 * self.variants.len() * self.sets.len(),
            _ => self.variants.len() * self.sets.len().max(1),
        }
    }
}

/// One line of `hugemm reproduce --list`.
#[derive(Clone, Debug, Serialize)]
pub struct Listed {
    /// The reproduction file.
    pub file: String,
    /// The paper and item it reproduces.
    pub paper: &'static str,
    /// Its kind.
    pub kind: String,
    /// Runs it makes (variants x sets; Table 3: its two page sizes).
    pub runs: usize,
    /// Typical serial wall time (s), if the file says.
    pub typical_wall_s: Option<f64>,
    /// The scale, in words.
    pub scale: String,
}

/// The reproductions `paths` stand for ([`files`]), each loaded and checked.
pub fn list(paths: &[PathBuf]) -> Result<Vec<Listed>, ConfigError> {
    files(paths)?
        .iter()
        .map(|f| {
            let r = load(f)?;
            let runs = r.runs();
            Ok(Listed {
                file: f.display().to_string(),
                paper: output::paper_item(&r.kind),
                kind: r.kind,
                runs,
                typical_wall_s: r.typical_wall_s,
                scale: r.scale,
            })
        })
        .collect()
}

/// `hugemm reproduce --list`'s table.
pub fn list_table(listed: &[Listed]) -> String {
    let rows: Vec<Vec<String>> = listed
        .iter()
        .map(|l| {
            vec![
                l.file.clone(),
                l.paper.to_string(),
                l.runs.to_string(),
                l.typical_wall_s.map_or("-".into(), |w| format!("{w:.0} s")),
            ]
        })
        .collect();
    let mut t = Table::new();
    t.set_header(["reproduction", "paper", "runs", "typical wall (serial)"]);
    t.add_rows(rows);
    style_table(&mut t);
    if let Some(c) = t.column_mut(1) {
        c.set_cell_alignment(CellAlignment::Left);
    }
    let total: f64 = listed.iter().filter_map(|l| l.typical_wall_s).sum();
    format!(
        "{}{} reproductions; typical wall time of all, one after the other: {:.0} s\n",
        render_table(&t),
        listed.len(),
        total
    )
}

/// Run a reproduction; `progress` hears what is being run.
pub fn run(r: &Reproduction, progress: Progress<'_>) -> anyhow::Result<Report> {
    let mut report = match r.kind.as_str() {
        "apsys16-fig2" => apsys16::figure2(r, progress)?,
        "apsys16-table1" => apsys16::table1(r, progress)?,
        "apsys16-fig3" => apsys16::figure3(r, progress)?,
        "apsys16-table2" => apsys16::table2(r, progress)?,
        "apsys16-highalloc" => apsys16::highalloc(r, progress)?,
        "hawkeye-table3" => hawkeye_table3::table3(r, progress)?,
        "apsys16-table3" => apsys16_hp::tables3_4(r, progress)?,
        "hawkeye-fig5" => hawkeye::figure5(r, progress)?,
        "hawkeye-fig7" => hawkeye::figure7(r, progress)?,
        "hawkeye-fig8" => hawkeye::figure8(r, progress)?,
        "hawkeye-fig9" => hawkeye_vm::figure9(r, progress)?,
        "hawkeye-fig11" => hawkeye_fig11::figure11(r, progress)?,
        "hawkeye-table9" => hawkeye::table9(r, progress)?,
        "hawkeye-fig1" => zeroing::figure1(r, progress)?,
        "hawkeye-table1" => zeroing::table1(r, progress)?,
        "hawkeye-table7" => zeroing::table7(r, progress)?,
        "hawkeye-table8" => zeroing::table8(r, progress)?,
        "hawkeye-fig10" => zeroing::figure10(r, progress)?,
        "nimble-fig2" => nimble_micro::figure2(r, progress)?,
        "nimble-fig3" => nimble_micro::figure3(r, progress)?,
        "nimble-fig8" => nimble_micro::figure8(r, progress)?,
        "nimble-fig9" => nimble_micro::figure9(r, progress)?,
        "nimble-fig10" => nimble_micro::figure10(r, progress)?,
        "nimble-fig11" => nimble_micro::figure11(r, progress)?,
        "nimble-table2" => nimble_micro::table2(r, progress)?,
        "nimble-fig12" => nimble::figure12(r, progress)?,
        "nimble-fig13" => nimble::figure13(r, progress)?,
        "nimble-fig14" => nimble::figure14(r, progress)?,
        "combined-promotion-x-tiering" => nimble::combined(r, progress)?,
        "sysmon-fig1" => sysmon::figure1(r, progress)?,
        "sysmon-overhead" => sysmon::overhead(r, progress)?,
        "sysmon-vs-hawkeye" => sysmon_vs::vs_hawkeye(r, progress)?,
        other => anyhow::bail!("unknown reproduction {other}"),
    };
    report.scale = r.scale.clone();
    let mut oom = Vec::new();
    for run in &report.runs {
        let path = run.path.join("/");
        for p in &run.result.summary.processes {
            if let Some(e) = &p.error {
                anyhow::bail!("run {path}: process {} failed: {e}", p.name);
            }
            if let Some(t) = p.oom_time_ns {
                oom.push(format!(
                    "- runs/{path}: {} out of memory at {:.0} s",
                    p.name,
                    t as f64 / 1e9
                ));
            }
        }
    }
    if !oom.is_empty() {
        // The claims are made on what the runs did; that some processes did not
        // finish must be read beside them.
        report.tables.push(format!(
            "Processes that ran out of memory (their runs ended early):\n{}",
            oom.join("\n")
        ));
    }
    Ok(report)
}

/// The experiment with another fallback policy.
pub(crate) fn variant(r: &Reproduction, fallback: &str) -> Experiment {
    let mut exp = r.experiment.clone();
    exp.kernel.fallback = fallback.to_string();
    exp
}

pub(crate) use shared::run_workload;

/// Fragmentation figures of the moment.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Snapshot {
    /// Simulated time (s).
    pub time_s: f64,
    /// User (movable) pageblocks holding kernel frames.
    pub tainted: u64,
    /// User (movable) pageblocks.
    pub user_pageblocks: u64,
    /// Fu(j) for every order j.
    pub fu: Vec<f64>,
    /// Degree-of-pollution histogram (Table 1's rows).
    pub pollution: Vec<u64>,
    /// Free frames.
    pub free_frames: u64,
    /// Fallbacks so far, by kind (compare with `tools/kbuild-probe/extfrag.py`).
    pub fallback: FallbackStats,
}

pub(crate) fn snapshot(engine: &Engine) -> Snapshot {
    snapshot_of(engine.kernel(), engine.now().0 as f64 / 1e9)
}

pub(crate) fn snapshot_of(kernel: &Kernel, time_s: f64) -> Snapshot {
    let m = kernel.frag_metrics();
    Snapshot {
        time_s,
        tainted: m.tainted_pageblocks,
        user_pageblocks: m.pageblocks.movable,
        fu: m.unusable_free_index.clone(),
        pollution: m.pollution.to_vec(),
        free_frames: m.free_frames,
        fallback: kernel.phys().fallback_stats(),
    }
}

/// A text table of `header` and `rows` in hugemm's table style ([`style_table`]).
pub(crate) fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut t = Table::new();
    t.set_header(header.iter().copied());
    t.add_rows(rows.iter().map(|r| r.iter().map(String::as_str)));
    style_table(&mut t);
    render_table(&t)
}

/// Puts `t`, whose header and rows are already in, in the one style of every text table
/// hugemm prints (reproduction reports, `hugemm run`'s and `demo`'s per-process tables,
/// `hugemm bench`): no borders or rules (comfy-table's [`NOTHING`] preset), columns two
/// spaces apart, the first (the row's name) left-aligned and the rest (the numbers)
/// right-aligned. A caller may realign a text column after this.
///
/// Borderless because these tables are read on terminals, pasted into plain-text and
/// Markdown notes (in a code block) and picked apart with `awk` or by tests that split
/// lines on whitespace: border characters would only be something to strip. It is also
/// the layout the reproduction reports had before hugemm used comfy-table, so their
/// earlier outputs quoted in notes still compare line for line.
///
/// Comfy-table styles only the columns it has, which its header and rows make: hence
/// after them. The width is never the terminal's (content arrangement disabled, and the
/// crate is built without its `tty` feature), so a table prints the same on a terminal
/// and through a pipe.
///
/// [`NOTHING`]: comfy_table::presets::NOTHING
pub(crate) fn style_table(t: &mut Table) -> &mut Table {
    t.load_preset(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled);
    for column in t.column_iter_mut() {
        if column.index == 0 {
            column.set_padding((0, 0));
            column.set_cell_alignment(CellAlignment::Left);
        } else {
            column.set_padding((2, 0));
            column.set_cell_alignment(CellAlignment::Right);
        }
    }
    t
}

/// `t` as text, one line per row, each ending in a newline and none with trailing
/// blanks (a left-aligned last column would otherwise pad its short cells).
pub(crate) fn render_table(t: &Table) -> String {
    let mut out = t.trim_fmt();
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_left_align_the_first_column_and_right_align_the_rest_two_spaces_apart() {
        let rows = vec![
            vec!["linux".to_string(), "1.5".to_string(), "yes".to_string()],
            vec!["hawkeye-g".to_string(), "12.25".to_string()],
        ];
        assert_eq!(
            table(&["variant", "runtime s", "holds"], &rows),
            "variant    runtime s  holds\n\
             linux            1.5    yes\n\
             hawkeye-g      12.25\n"
        );
    }

    #[test]
    fn a_table_of_no_rows_is_its_header() {
        assert_eq!(table(&["claim", "hugemm"], &[]), "claim  hugemm\n");
    }
}
