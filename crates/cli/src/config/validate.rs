//! Stage two of configuration: checking every value of a parsed experiment file and
//! building the typed [`Experiment`], plus the resolved file (every default filled in)
//! that `hugemm run` writes beside the results.

use super::locate::{self, Spans};
use super::overrides::Override;
use super::raw::*;
use super::size;
use hugemm_hw::{Geometry, MachineProfile, Nanos};
use hugemm_policy::{DefragMode, KhugepagedConfig, LinuxConfig, PolicyConfig, ThpMode};
use hugemm_sim::{Experiment, Mode, SampledConfig};
use hugemm_workload::kbuild::FileIds;
use hugemm_workload::FileId;
use hugemm_workload::Writes;
use hugemm_workload::{
    AccessPhase, Advice, Amount, BufferId, MadviseKind, Pattern, Phase, ProcessSpec,
};
use std::cell::RefCell;
use std::collections::HashMap;

/// The operations a phase can have.
const OPS: &str =
    "mmap, touch, access, madvise, munmap, sleep, file_read, file_write, file_lookup, file_delete, \
                   kernel_alloc, drop_caches, compact_memory, highalloc";
use std::path::Path;

/// The largest machine hugemm will model: 16 bytes of frame metadata per 4 KB frame must
/// fit comfortably in the host's memory.
pub const MAX_MEMORY: u64 = 1 << 40;
/// The machine's memory must be whole largest buddy blocks (order 10, 4 MB).
pub const MEMORY_GRAIN: u64 = 4 << 20;

/// Linux's x86-64 zones for `memory` bytes of RAM: DMA, the first 16 MiB; DMA32, the rest
/// of the RAM below the 32-bit PCI hole; Normal, the RAM above 4 GiB (none if all fits
/// below). Where the hole starts is the machine's: here it is QEMU's `pc` machine's, on
/// which `tools/linux-4.1-guest` ran Linux 4.1, 3 GiB of RAM below 4 GiB when the guest
/// has 3.5 GiB or more, else all of it (`pc_init1`'s `lowmem`). The paper's laptop's map
/// is not given.
pub fn linux_x86_zones(memory: u64) -> Vec<u64> {
    const DMA: u64 = 16 << 20;
    let below_4g = match memory >= 0xe000_0000 {
        true => 3 << 30,
        false => memory,
    };
    let mut zones = vec![DMA, below_4g - DMA];
    if memory > below_4g {
        zones.push(memory - below_4g);
    }
    zones
}

/// A configuration error: which file, which key, what was expected.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{file}: cannot read: {error}")]
    Io {
        /// The file.
        file: String,
        /// Why (in the message, not also `source()`, so `{:#}` does not repeat it).
        error: std::io::Error,
    },
    /// A key has the wrong type, is unknown, or the TOML is malformed.
    #[error("{file}{}: key `{key}`: {message}", Pos::show(at))]
    Parse {
        /// The file (and the `--set` argument, when the value came from one).
        file: String,
        /// Where in the file, when known.
        at: Option<Pos>,
        /// Dotted key path (`process[0].phase[1].size`), or `(file)` for syntax errors.
        key: String,
        /// The parser's message.
        message: String,
    },
    /// A value is out of range or inconsistent.
    #[error("{file}{}: key `{key}`: expected {expected}", Pos::show(at))]
    Invalid {
        /// The file (and the `--set` argument, when the value came from one).
        file: String,
        /// Where in the file, when known.
        at: Option<Pos>,
        /// Dotted key path.
        key: String,
        /// What was expected (and what was found).
        expected: String,
    },
    /// A path given on the command line does not lead to what the command needs.
    #[error("{path}: {problem}")]
    Path {
        /// The path.
        path: String,
        /// What is wrong with it.
        problem: String,
    },
    /// The machine profile could not be loaded.
    #[error("{file}: key `machine.profile`: {error}")]
    Profile {
        /// The experiment file.
        file: String,
        /// The profile's own error (naming the profile file and its key); in the message,
        /// not also `source()`, so `{:#}` does not repeat it.
        error: hugemm_hw::ProfileError,
    },
}

/// A line and column (1-based) in an experiment file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pos {
    /// Line.
    pub line: usize,
    /// Column, in characters.
    pub col: usize,
}

impl Pos {
    fn show(at: &Option<Pos>) -> String {
        at.map(|p| format!(":{}:{}", p.line, p.col))
            .unwrap_or_default()
    }
}

/// The text an experiment was read from, to point errors found after parsing at it.
#[derive(Clone, Debug)]
pub struct Source {
    /// The file's name as errors print it.
    pub file: String,
    /// The file's text.
    pub original: String,
    /// The text parsed: the file with the overrides applied.
    pub text: String,
    /// The `--set` overrides applied.
    pub overrides: Vec<Override>,
}

impl Source {
    /// Points an error about this file at its place: the line and column of its key, or
    /// the `--set` argument its value came from.
    pub fn place(&self, mut err: ConfigError) -> ConfigError {
        if let ConfigError::Parse { file, at, key, .. }
        | ConfigError::Invalid { file, at, key, .. } = &mut err
        {
            if *file != self.file {
                return err;
            }
            if let Some(o) = self.overrides.iter().rev().find(|o| o.covers(key)) {
                *file = format!("{} (--set {o})", self.file);
                *at = None;
            } else if at.is_none() || !self.overrides.is_empty() {
                // Positions in the overridden text can be off by the lines an override
                // added: find the key in the file as written.
                *at = Spans::new(&self.original)
                    .locate(key)
                    .map(|(line, col)| Pos { line, col });
            }
        }
        err
    }

    /// One-line notes on keys the file or its overrides use that deserve one: deprecated
    /// names and knobs without effect in the model (`locate::noted_keys`), each at its
    /// place in the file or naming its `--set` argument.
    pub fn notes(&self) -> Vec<String> {
        let spans = Spans::new(&self.original);
        let mut notes = Vec::new();
        for (table, key, what) in locate::noted_keys() {
            let full = format!("{table}.{key}");
            let place = if let Some(o) = self.overrides.iter().rev().find(|o| o.covers(&full)) {
                format!("{} (--set {o})", self.file)
            } else if spans.has(table, key) {
                let at = spans
                    .locate(&full)
                    .map(|(l, c)| format!(":{l}:{c}"))
                    .unwrap_or_default();
                format!("{}{at}", self.file)
            } else {
                continue;
            };
            notes.push(format!("note: {place}: `{full}` {what}"));
        }
        notes
    }
}

/// A validated experiment and its resolved configuration.
#[derive(Debug)]
pub struct Loaded {
    /// The experiment, ready to run.
    pub experiment: Experiment,
    /// Every policy's configuration, from the file's tables or the defaults (what
    /// reproductions compare).
    pub policies: PolicyCatalog,
    /// The file as resolved: every default written out.
    pub resolved: RawExperiment,
    /// What it was read from.
    pub source: Source,
    /// Notes for stderr: deprecated key names the file uses.
    pub notes: Vec<String>,
    /// With `[[vm]]` tables: the guests' profile (the machine's with `[guest]`).
    pub guest_profile: Option<MachineProfile>,
    /// The `[[vm]]` tables.
    pub vms: Vec<super::vms::VmSpec>,
    /// The `[host]` table.
    pub host: super::vms::HostSpec,
}

/// The configuration of every policy an experiment file can name.
#[derive(Clone, Debug)]
pub struct PolicyCatalog {
    /// `[policy.linux]`.
    pub linux: LinuxConfig,
    /// `[policy.ingens]`.
    pub ingens: hugemm_policy::IngensConfig,
    /// `[policy.hawkeye]`.
    pub hawkeye: hugemm_policy::HawkeyeConfig,
    /// `[policy.freebsd]`.
    pub freebsd: hugemm_policy::FreeBsdConfig,
    /// `[policy.hpolicy]`.
    pub hpolicy: hugemm_policy::HPolicyConfig,
}

/// Read and validate an experiment file.
pub fn load(path: &Path) -> Result<Loaded, ConfigError> {
    load_with(path, &[])
}

/// Read an experiment file, apply `--set` overrides, and validate the result.
pub fn load_with(path: &Path, overrides: &[Override]) -> Result<Loaded, ConfigError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|error| ConfigError::Io {
        file: file.clone(),
        error,
    })?;
    parse_with(&text, &file, super::base_dir(path), overrides)
}

/// Parse and validate experiment text; `file` names it in errors and `base` resolves
/// relative profile paths.
pub fn parse(text: &str, file: &str, base: &Path) -> Result<Loaded, ConfigError> {
    parse_with(text, file, base, &[])
}

/// [`parse`] with `--set` overrides applied to the text first.
pub fn parse_with(
    text: &str,
    file: &str,
    base: &Path,
    overrides: &[Override],
) -> Result<Loaded, ConfigError> {
    let source = Source {
        file: file.into(),
        original: text.to_string(),
        text: super::overrides::apply(text, file, overrides)?,
        overrides: overrides.to_vec(),
    };
    let raw: RawExperiment = deserialize(&source)?;
    let mut loaded = Validator::new(file, base)
        .experiment(raw)
        .map_err(|e| source.place(e))?;
    loaded.notes = source.notes();
    loaded.source = source;
    Ok(loaded)
}

pub(crate) struct Validator<'a> {
    file: String,
    base: &'a Path,
    /// File names of the page cache, by id (shared by every process).
    files: RefCell<HashMap<String, FileId>>,
}

pub(crate) type R<T> = Result<T, ConfigError>;

impl<'a> Validator<'a> {
    /// A validator of `file`, resolving relative paths from `base`.
    pub(super) fn new(file: &str, base: &'a Path) -> Validator<'a> {
        Validator {
            file: file.into(),
            base,
            files: RefCell::new(HashMap::new()),
        }
    }
}

impl Validator<'_> {
    /// The id of the file called `name`, given on first use.
    pub(super) fn file_id(&self, name: &str) -> FileId {
        let mut files = self.files.borrow_mut();
        let next = FileId(files.len() as u32);
        *files.entry(name.to_string()).or_insert(next)
    }

    pub(super) fn bad(&self, key: &str, expected: impl Into<String>) -> ConfigError {
        ConfigError::Invalid {
            file: self.file.clone(),
            at: None,
            key: key.into(),
            expected: expected.into(),
        }
    }

    pub(super) fn int(
        &self,
        key: &str,
        v: Option<i64>,
        default: i64,
        min: i64,
        max: i64,
    ) -> R<i64> {
        let x = v.unwrap_or(default);
        if x < min || x > max {
            return Err(self.bad(key, format!("an integer from {min} to {max}, found {x}")));
        }
        Ok(x)
    }

    pub(super) fn float(
        &self,
        key: &str,
        v: Option<f64>,
        default: f64,
        min: f64,
        max: f64,
    ) -> R<f64> {
        let x = v.unwrap_or(default);
        if !x.is_finite() || x < min || x > max {
            return Err(self.bad(key, format!("a number from {min} to {max}, found {x}")));
        }
        Ok(x)
    }

    pub(super) fn size(&self, key: &str, v: &RawSize) -> R<u64> {
        size::parse(v).map_err(|e| self.bad(key, e))
    }

    /// "one of a, b, c, found "x"", with a suggestion when `found` looks like a typo.
    pub(super) fn not_one_of(&self, key: &str, found: &str, names: &[&str]) -> ConfigError {
        let hint = locate::did_you_mean(found, names)
            .map(|n| format!(" (did you mean \"{n}\"?)"))
            .unwrap_or_default();
        self.bad(
            key,
            format!("one of {}, found \"{found}\"{hint}", names.join(", ")),
        )
    }

    pub(super) fn choice<T: Copy>(
        &self,
        key: &str,
        v: Option<&str>,
        default: &str,
        options: &[(&str, T)],
    ) -> R<T> {
        let s = v.unwrap_or(default);
        options
            .iter()
            .find(|(n, _)| *n == s)
            .map(|(_, t)| *t)
            .ok_or_else(|| {
                let names: Vec<&str> = options.iter().map(|(n, _)| *n).collect();
                self.not_one_of(key, s, &names)
            })
    }

    fn experiment(&self, mut raw: RawExperiment) -> R<Loaded> {
        let profile = self.profile(&raw.machine)?;
        let (memory_bytes, node_bytes) = self.memory_nodes(&raw.machine, &profile)?;
        let cores = self.int(
            "machine.cores",
            raw.machine.cores,
            profile.cores as i64,
            1,
            1024,
        )? as u32;
        let (policy, policies) = self.policy(&mut raw.policy)?;
        let (mode, seed, sample_interval, turn, time_limit, daemon_core) =
            self.sim(&mut raw.sim, cores)?;
        let policy_name = raw.policy.name.clone().unwrap_or_default();
        let kernel = self.kernel(&mut raw.kernel, memory_bytes, &policy_name)?;
        let (home_node, tiering) = self.tiering(&mut raw.tiering, node_bytes.len().max(1))?;
        // Nimble's microbenchmarks make their own processes.
        let micro = raw
            .reproduce
            .as_ref()
            .and_then(|r| r.kind.as_deref())
            .is_some_and(|k| crate::reproduce::MICROBENCHMARKS.contains(&k));
        if !micro
            && raw.processes.is_empty()
            && raw.kernel_builds.is_empty()
            && raw.file_readers.is_empty()
            && raw.memhogs.is_empty()
            && raw.apps.is_empty()
            && raw.kv_servers.is_empty()
        {
            return Err(self.bad(
                "process",
                "at least one [[process]], [[kernel_build]], [[file_reader]], [[memhog]], [[app]] or [[kv_server]] table",
            ));
        }
        let mut processes = Vec::new();
        for (i, p) in raw.processes.iter_mut().enumerate() {
            processes.extend(self.process(i, p, cores, memory_bytes)?);
        }
        // Generated workloads take file ids after every named file.
        let mut ids = FileIds::from(self.files.borrow().len() as u32);
        for (i, b) in raw.kernel_builds.iter_mut().enumerate() {
            processes.extend(self.kernel_build(i, b, seed, &mut ids)?);
        }
        for (i, r) in raw.file_readers.iter_mut().enumerate() {
            processes.push(self.file_reader(i, r, &mut ids)?);
        }
        for (i, m) in raw.memhogs.iter_mut().enumerate() {
            processes.push(self.memhog(i, m, memory_bytes)?);
        }
        for (i, a) in raw.apps.iter_mut().enumerate() {
            processes.extend(self.app(i, a, memory_bytes)?);
        }
        for (i, k) in raw.kv_servers.iter_mut().enumerate() {
            processes.push(self.kv_server(i, k, seed)?);
        }
        // The profile itself, not its name or path, so the resolved file runs anywhere.
        raw.machine.profile = Some(RawProfile::Inline(Box::new(profile.clone())));
        raw.machine.memory = Some(RawSize::Bytes(memory_bytes as i64));
        if !node_bytes.is_empty() {
            raw.machine.node_memory = Some(
                node_bytes
                    .iter()
                    .map(|&b| RawSize::Bytes(b as i64))
                    .collect(),
            );
        }
        if node_bytes.len() > 1 {
            self.one_node_features(&kernel)?;
        }
        let zone_bytes = self.zones(&raw.machine, memory_bytes, node_bytes.len(), &kernel)?;
        raw.machine.cores = Some(cores as i64);
        let (guest_profile, vms) = self.vms(&raw.guest, &mut raw.vms, &profile, &processes)?;
        let host = self.host(&mut raw.host, !vms.is_empty(), memory_bytes)?;
        let experiment = Experiment {
            profile,
            cores,
            memory_bytes,
            node_bytes,
            zone_bytes,
            home_node,
            tiering,
            geometry: Geometry::X86_64,
            policy,
            processes,
            mode,
            seed,
            sample_interval,
            turn,
            time_limit,
            daemon_core,
            kernel,
        };
        Ok(Loaded {
            experiment,
            policies,
            resolved: raw,
            source: Source {
                file: self.file.clone(),
                original: String::new(),
                text: String::new(),
                overrides: Vec::new(),
            },
            notes: Vec::new(),
            guest_profile,
            vms,
            host,
        })
    }

    fn profile(&self, m: &RawMachine) -> R<MachineProfile> {
        let name = match &m.profile {
            Some(RawProfile::Inline(p)) => {
                let origin = "the inline [machine.profile] table";
                p.validate(origin).map_err(|error| ConfigError::Profile {
                    file: self.file.clone(),
                    error,
                })?;
                return Ok((**p).clone());
            }
            Some(RawProfile::Named(name)) => Some(name.as_str()),
            None => None,
        };
        let name = name.ok_or_else(|| {
            self.bad(
                "machine.profile",
                format!(
                    "a profile: one of {} or a path to a profile file",
                    MachineProfile::builtin_names().join(", ")
                ),
            )
        })?;
        if let Some(p) = MachineProfile::builtin_checked(name) {
            return p.map_err(|error| ConfigError::Profile {
                file: self.file.clone(),
                error,
            });
        }
        let path = self.base.join(name);
        if name.ends_with(".toml") && path.exists() {
            return MachineProfile::load(&path).map_err(|error| ConfigError::Profile {
                file: self.file.clone(),
                error,
            });
        }
        Err(self.bad(
            "machine.profile",
            format!(
                "one of {} or a path to a profile .toml file, found \"{name}\"",
                MachineProfile::builtin_names().join(", ")
            ),
        ))
    }

    /// `machine.memory` and `machine.node_memory`: the machine's memory and, for a
    /// profile with tiers, each node's (they must add up; `memory` may be left out).
    fn memory_nodes(&self, m: &RawMachine, profile: &MachineProfile) -> R<(u64, Vec<u64>)> {
        let nodes = profile.node_count();
        let Some(list) = &m.node_memory else {
            if nodes > 1 {
                let names: Vec<&str> = (0..nodes).filter_map(|n| profile.node_name(n)).collect();
                return Err(self.bad(
                    "machine.node_memory",
                    format!(
                        "each node's memory, node 0 first: profile {} has {nodes} ({}), e.g. [\"16GiB\", \"40GiB\"]",
                        profile.name,
                        names.join(", ")
                    ),
                ));
            }
            return Ok((self.memory(m)?, Vec::new()));
        };
        if list.len() != nodes {
            return Err(self.bad(
                "machine.node_memory",
                format!(
                    "one size per node of profile {} ({nodes}), found {}",
                    profile.name,
                    list.len()
                ),
            ));
        }
        let mut bytes = Vec::with_capacity(nodes);
        for (i, raw) in list.iter().enumerate() {
            let key = format!("machine.node_memory[{i}]");
            let b = self.size(&key, raw)?;
            if b == 0 || b % MEMORY_GRAIN != 0 {
                return Err(self.bad(
                    &key,
                    format!("a positive multiple of 4 MiB (a node with no memory is not a node), found {b} bytes"),
                ));
            }
            bytes.push(b);
        }
        let total: u64 = bytes.iter().sum();
        if m.memory.is_some() {
            let memory = self.memory(m)?;
            if memory != total {
                return Err(self.bad(
                    "machine.node_memory",
                    format!(
                        "sizes adding up to machine.memory ({memory} bytes), found {total} bytes"
                    ),
                ));
            }
        } else if !(16 * MEMORY_GRAIN..=MAX_MEMORY).contains(&total) {
            return Err(self.bad(
                "machine.node_memory",
                format!("sizes adding up to 64 MiB to 1 TiB, found {total} bytes"),
            ));
        }
        Ok((total, bytes))
    }

    /// What a machine of several nodes does not model: per-CPU page lists (one set of
    /// lists would mix nodes) and placement fallback policies (KML/KMU: where a kernel
    /// layout puts each node's kernel pages is not modelled).
    fn one_node_features(&self, k: &hugemm_sim::KernelConfig) -> R<()> {
        if k.per_cpu_lists {
            return Err(self.bad(
                "kernel.per_cpu_lists",
                "false on a machine of several memory nodes (per-CPU lists are modelled for one node)",
            ));
        }
        if hugemm_mm::fallback::places_by_address(&k.fallback) {
            return Err(self.bad(
                "kernel.fallback",
                format!("a list-head fallback policy on a machine of several memory nodes, found \"{}\"", k.fallback),
            ));
        }
        Ok(())
    }

    /// `machine.zones`: the zones' sizes, lowest first (empty without zones).
    fn zones(
        &self,
        m: &RawMachine,
        memory: u64,
        nodes: usize,
        k: &hugemm_sim::KernelConfig,
    ) -> R<Vec<u64>> {
        const KEY: &str = "machine.zones";
        let zones = match m.zones.as_deref().unwrap_or("none") {
            "none" if k.kswapd == hugemm_mm::KswapdMode::Async => {
                return Err(self.bad(
                    "kernel.kswapd",
                    "\"immediate\" on a machine without zones (\"async\" is Linux 4.1's kswapd, which needs machine.zones = \"linux-x86\": without zones no watermark stops order-0 allocations while kswapd lags)",
                ))
            }
            "none" => return Ok(Vec::new()),
            "linux-x86" => linux_x86_zones(memory),
            other => return Err(self.not_one_of(KEY, other, &["none", "linux-x86"])),
        };
        if nodes > 1 {
            return Err(self.bad(
                KEY,
                "\"none\" on a machine of several memory nodes (zones are modelled for one node)",
            ));
        }
        if k.watermark_boost_factor > 0 {
            return Err(self.bad(
                KEY,
                "\"none\" with kernel.watermark_boost_factor above 0 (zones are Linux 4.1's, which has no boosting)",
            ));
        }
        Ok(zones)
    }

    fn memory(&self, m: &RawMachine) -> R<u64> {
        let raw = m.memory.as_ref().ok_or_else(|| {
            self.bad(
                "machine.memory",
                "the machine's physical memory, e.g. \"16GiB\"",
            )
        })?;
        let bytes = self.size("machine.memory", raw)?;
        if !(16 * MEMORY_GRAIN..=MAX_MEMORY).contains(&bytes) || bytes % MEMORY_GRAIN != 0 {
            return Err(self.bad(
                "machine.memory",
                format!("a multiple of 4 MiB from 64 MiB to 1 TiB, found {bytes} bytes"),
            ));
        }
        Ok(bytes)
    }

    /// `[policy]`: the named policy, and every policy's configuration. The resolved file
    /// keeps the tables of the named policy and of any the file wrote.
    pub(super) fn policy(&self, p: &mut RawPolicy) -> R<(PolicyConfig, PolicyCatalog)> {
        let name = p.name.clone().unwrap_or_else(|| "linux".into());
        if !PolicyConfig::NAMES.contains(&name.as_str()) {
            return Err(self.not_one_of("policy.name", &name, PolicyConfig::NAMES));
        }
        p.name = Some(name.clone());
        // Each table is resolved into a copy, kept in the resolved file only when the
        // file wrote it or named its policy.
        macro_rules! table {
            ($field:ident, $parse:ident, $policy:literal) => {{
                let mut raw = p.$field.clone().unwrap_or_default();
                let cfg = self.$parse(&mut raw)?;
                if p.$field.is_some() || name == $policy {
                    p.$field = Some(raw);
                }
                cfg
            }};
        }
        let linux = table!(linux, linux, "linux");
        let ingens = table!(ingens, ingens, "ingens");
        let hawkeye = table!(hawkeye, hawkeye, "hawkeye");
        let freebsd = table!(freebsd, freebsd, "freebsd");
        let hpolicy = table!(hpolicy, hpolicy, "hpolicy");
        let chosen = match name.as_str() {
            "hpolicy" => PolicyConfig::HPolicy(hpolicy),
            "ingens" => PolicyConfig::Ingens(ingens),
            "hawkeye" => PolicyConfig::Hawkeye(hawkeye),
            "freebsd" => PolicyConfig::FreeBsd(freebsd),
            _ => PolicyConfig::Linux(linux),
        };
        Ok((
            chosen,
            PolicyCatalog {
                linux,
                ingens,
                hawkeye,
                freebsd,
                hpolicy,
            },
        ))
    }

    /// `[policy.linux]`, resolved in place.
    fn linux(&self, l: &mut RawLinux) -> R<LinuxConfig> {
        let enabled = self.choice(
            "policy.linux.enabled",
            l.enabled.as_deref(),
            "always",
            &[
                ("always", ThpMode::Always),
                ("madvise", ThpMode::Madvise),
                ("never", ThpMode::Never),
            ],
        )?;
        let defrag = self.choice(
            "policy.linux.defrag",
            l.defrag.as_deref(),
            "madvise",
            &[
                ("always", DefragMode::Always),
                ("defer", DefragMode::Defer),
                ("defer+madvise", DefragMode::DeferMadvise),
                ("madvise", DefragMode::Madvise),
                ("never", DefragMode::Never),
            ],
        )?;
        let d = KhugepagedConfig::default();
        let k = l.khugepaged.get_or_insert_with(Default::default);
        let khugepaged = KhugepagedConfig {
            enabled: k.enabled.unwrap_or(d.enabled),
            pages_to_scan: self.int(
                "policy.linux.khugepaged.pages_to_scan",
                k.pages_to_scan,
                d.pages_to_scan as i64,
                1,
                1 << 30,
            )? as u64,
            scan_sleep: Nanos::from_millis(self.int(
                "policy.linux.khugepaged.scan_sleep_millisecs",
                k.scan_sleep_millisecs,
                10_000,
                1,
                1 << 32,
            )? as u64),
            alloc_sleep: Nanos::from_millis(self.int(
                "policy.linux.khugepaged.alloc_sleep_millisecs",
                k.alloc_sleep_millisecs,
                60_000,
                1,
                1 << 32,
            )? as u64),
            max_ptes_none: self.int(
                "policy.linux.khugepaged.max_ptes_none",
                k.max_ptes_none,
                511,
                0,
                511,
            )? as u32,
            defrag: k.defrag.unwrap_or(d.defrag),
        };
        // Checked as Linux's sysfs store checks them (at most HPAGE_PMD_NR - 1); they
        // govern nothing the model has (`locate::INERT`), so they stay as written.
        for (key, v) in [
            ("max_ptes_swap", k.max_ptes_swap),
            ("max_ptes_shared", k.max_ptes_shared),
        ] {
            if v.is_some() {
                self.int(&format!("policy.linux.khugepaged.{key}"), v, 0, 0, 511)?;
            }
        }
        *k = RawKhugepaged {
            enabled: Some(khugepaged.enabled),
            pages_to_scan: Some(khugepaged.pages_to_scan as i64),
            scan_sleep_millisecs: Some((khugepaged.scan_sleep.0 / 1_000_000) as i64),
            alloc_sleep_millisecs: Some((khugepaged.alloc_sleep.0 / 1_000_000) as i64),
            max_ptes_none: Some(khugepaged.max_ptes_none as i64),
            defrag: Some(khugepaged.defrag),
            max_ptes_swap: k.max_ptes_swap,
            max_ptes_shared: k.max_ptes_shared,
        };
        l.enabled = Some(l.enabled.clone().unwrap_or_else(|| "always".into()));
        l.defrag = Some(l.defrag.clone().unwrap_or_else(|| "madvise".into()));
        let shrink_underused = *l
            .shrink_underused
            .get_or_insert(LinuxConfig::default().shrink_underused);
        let use_zero_page = *l
            .use_zero_page
            .get_or_insert(LinuxConfig::default().use_zero_page);
        Ok(LinuxConfig {
            enabled,
            defrag,
            khugepaged,
            shrink_underused,
            use_zero_page,
        })
    }

    fn sim(&self, s: &mut RawSim, cores: u32) -> R<(Mode, u64, Nanos, Nanos, Nanos, u32)> {
        let exact = self.choice(
            "sim.mode",
            s.mode.as_deref(),
            "exact",
            &[("exact", true), ("sampled", false)],
        )?;
        let seed = self.int("sim.seed", s.seed, 1, 0, i64::MAX)? as u64;
        let interval = self.int(
            "sim.sample_interval_ms",
            s.sample_interval_ms,
            1000,
            1,
            1 << 40,
        )? as u64;
        let default_turn_us = hugemm_sim::SYNC.0 as f64 / 1e6;
        let turn_us = self.float("sim.turn_us", s.turn_us, default_turn_us, 0.1, 1e6)?;
        let limit = self.float("sim.time_limit_s", s.time_limit_s, 86_400.0, 1e-6, 1e9)?;
        let daemon_core =
            self.int("sim.daemon_core", s.daemon_core, 0, 0, cores as i64 - 1)? as u32;
        let d = SampledConfig::default();
        let mode = if exact {
            if s.sampled.is_some() {
                return Err(self.bad(
                    "sim.sampled",
                    "no [sim.sampled] table when sim.mode is \"exact\"",
                ));
            }
            Mode::Exact
        } else {
            let t = s.sampled.get_or_insert_with(Default::default);
            let mut cfg = SampledConfig {
                warmup_refs: self.int(
                    "sim.sampled.warmup_refs",
                    t.warmup_refs,
                    d.warmup_refs as i64,
                    0,
                    1 << 40,
                )? as u64,
                window_refs: self.int(
                    "sim.sampled.window_refs",
                    t.window_refs,
                    d.window_refs as i64,
                    1,
                    1 << 40,
                )? as u64,
                period: Nanos(
                    (self.float(
                        "sim.sampled.period_ms",
                        t.period_ms,
                        d.period.0 as f64 / 1e6,
                        1e-3,
                        1e9,
                    )? * 1e6) as u64,
                ),
                window_walks: self.int(
                    "sim.sampled.window_walks",
                    t.window_walks,
                    d.window_walks as i64,
                    0,
                    1 << 40,
                )? as u64,
                phase_warmup_refs: self.int(
                    "sim.sampled.phase_warmup_refs",
                    t.phase_warmup_refs,
                    d.phase_warmup_refs as i64,
                    0,
                    1 << 40,
                )? as u64,
                phase_warmup_max_refs: 0,
            };
            // The most defaults to the default most, or to the least when a file sets a
            // least above it.
            let max_default = d.phase_warmup_max_refs.max(cfg.phase_warmup_refs);
            if let Some(max) = t.phase_warmup_max_refs {
                if max < cfg.phase_warmup_refs as i64 {
                    return Err(self.bad(
                        "sim.sampled.phase_warmup_max_refs",
                        format!(
                            "at least sim.sampled.phase_warmup_refs ({}), found {max}",
                            cfg.phase_warmup_refs
                        ),
                    ));
                }
            }
            cfg.phase_warmup_max_refs = self.int(
                "sim.sampled.phase_warmup_max_refs",
                t.phase_warmup_max_refs,
                max_default as i64,
                0,
                1 << 40,
            )? as u64;
            *t = RawSampled {
                warmup_refs: Some(cfg.warmup_refs as i64),
                window_refs: Some(cfg.window_refs as i64),
                period_ms: Some(cfg.period.0 as f64 / 1e6),
                window_walks: Some(cfg.window_walks as i64),
                phase_warmup_refs: Some(cfg.phase_warmup_refs as i64),
                phase_warmup_max_refs: Some(cfg.phase_warmup_max_refs as i64),
            };
            Mode::Sampled(cfg)
        };
        s.mode = Some(if exact { "exact" } else { "sampled" }.into());
        s.seed = Some(seed as i64);
        s.sample_interval_ms = Some(interval as i64);
        s.turn_us = Some(turn_us);
        s.time_limit_s = Some(limit);
        s.daemon_core = Some(daemon_core as i64);
        Ok((
            mode,
            seed,
            Nanos::from_millis(interval),
            Nanos((turn_us * 1e3).round() as u64),
            Nanos((limit * 1e9) as u64),
            daemon_core,
        ))
    }

    fn process(
        &self,
        i: usize,
        p: &mut RawProcess,
        cores: u32,
        memory: u64,
    ) -> R<Vec<ProcessSpec>> {
        let key = |k: &str| format!("process[{i}].{k}");
        let name = self.name(&key("name"), &p.name)?;
        let count = self.int(&key("count"), p.count, 1, 1, 4096)? as usize;
        let start = self.float(&key("start_ms"), p.start_ms, 0.0, 0.0, 1e12)?;
        p.start_ms = Some(start);
        let core = match p.core {
            None => None,
            Some(c) => Some(self.int(&key("core"), Some(c), 0, 0, cores as i64 - 1)? as u32),
        };
        if p.phases.is_empty() {
            return Err(self.bad(&key("phase"), "at least one [[process.phase]]"));
        }
        let phases = Phases::new(self, i, memory).build(&mut p.phases)?;
        Ok((0..count)
            .map(|k| ProcessSpec {
                name: if count == 1 {
                    name.clone()
                } else {
                    format!("{name}-{k}")
                },
                start: Nanos((start * 1e6) as u64),
                core,
                phases: phases.clone(),
            })
            .collect())
    }
}

/// Validation of one process's phases, tracking its buffers by name.
pub(super) struct Phases<'a, 'b> {
    pub(super) v: &'a Validator<'b>,
    process: usize,
    pub(super) memory: u64,
    ids: HashMap<String, BufferId>,
    sizes: HashMap<String, u64>,
}

impl<'a, 'b> Phases<'a, 'b> {
    fn new(v: &'a Validator<'b>, process: usize, memory: u64) -> Self {
        Phases {
            v,
            process,
            memory,
            ids: HashMap::new(),
            sizes: HashMap::new(),
        }
    }

    fn build(&mut self, raw: &mut [RawPhase]) -> R<Vec<Phase>> {
        raw.iter_mut()
            .enumerate()
            .map(|(j, ph)| self.phase(j, ph))
            .collect()
    }

    pub(super) fn key(&self, j: usize, k: &str) -> String {
        format!("process[{}].phase[{j}].{k}", self.process)
    }

    /// Refuse keys that `op` does not use, so a misplaced key is never silently ignored.
    pub(super) fn only(&self, j: usize, ph: &RawPhase, op: &str, allowed: &[&str]) -> R<()> {
        let present: [(&str, bool); 30] = [
            ("file", ph.file.is_some()),
            ("found", ph.found.is_some()),
            ("interval_ms", ph.interval_ms.is_some()),
            ("gfp", ph.gfp.is_some()),
            ("kind", ph.kind.is_some()),
            ("order", ph.order.is_some()),
            ("lifetime", ph.lifetime.is_some()),
            ("lifetime_ms", ph.lifetime_ms.is_some()),
            ("label", ph.label.is_some()),
            ("share", ph.share.is_some()),
            ("buffer", ph.buffer.is_some()),
            ("size", ph.size.is_some()),
            ("advice", ph.advice.is_some()),
            ("offset", ph.offset.is_some()),
            ("length", ph.length.is_some()),
            ("pattern", ph.pattern.is_some()),
            ("refs", ph.refs.is_some()),
            ("duration_ms", ph.duration_ms.is_some()),
            ("dependent", ph.dependent.is_some()),
            ("write_fraction", ph.write_fraction.is_some()),
            ("compute_ns", ph.compute_ns.is_some()),
            ("instructions_per_ref", ph.instructions_per_ref.is_some()),
            ("stride", ph.stride.is_some()),
            ("exponent", ph.exponent.is_some()),
            ("position", ph.position.is_some()),
            ("hot_fraction", ph.hot_fraction.is_some()),
            ("hot_share", ph.hot_share.is_some()),
            ("nonzero_share", ph.nonzero_share.is_some()),
            ("mean_first_nonzero", ph.mean_first_nonzero.is_some()),
            ("op", true),
        ];
        for (k, set) in present {
            if set && k != "op" && !allowed.contains(&k) {
                return Err(self.v.bad(
                    &self.key(j, k),
                    format!(
                        "no `{k}` for op \"{op}\" (it takes: {})",
                        if allowed.is_empty() {
                            "no other key".to_string()
                        } else {
                            allowed.join(", ")
                        }
                    ),
                ));
            }
        }
        Ok(())
    }

    fn buffer(&self, j: usize, ph: &RawPhase) -> R<(BufferId, u64)> {
        let name = ph
            .buffer
            .as_deref()
            .ok_or_else(|| self.v.bad(&self.key(j, "buffer"), "the name of a buffer"))?;
        match (self.ids.get(name), self.sizes.get(name)) {
            (Some(id), Some(size)) => Ok((*id, *size)),
            _ => Err(self.v.bad(
                &self.key(j, "buffer"),
                format!("a buffer mapped by an earlier mmap phase, found \"{name}\""),
            )),
        }
    }

    fn phase(&mut self, j: usize, ph: &mut RawPhase) -> R<Phase> {
        let op = ph
            .op
            .clone()
            .ok_or_else(|| self.v.bad(&self.key(j, "op"), format!("one of {OPS}")))?;
        if let Some(phase) = self.kernel_phase(j, &op, ph) {
            return phase;
        }
        match op.as_str() {
            "mmap" => self.mmap(j, ph),
            "touch" => self.touch(j, ph),
            "access" => self.access(j, ph),
            "madvise" => self.madvise(j, ph),
            "munmap" => {
                self.only(j, ph, "munmap", &["buffer"])?;
                let (buffer, _) = self.buffer(j, ph)?;
                self.sizes.remove(ph.buffer.as_deref().unwrap_or_default());
                Ok(Phase::Munmap { buffer })
            }
            "sleep" => {
                self.only(j, ph, "sleep", &["duration_ms"])?;
                let ms =
                    self.v
                        .float(&self.key(j, "duration_ms"), ph.duration_ms, -1.0, 0.0, 1e12)?;
                Ok(Phase::Sleep(Nanos((ms * 1e6) as u64)))
            }
            other => {
                let ops: Vec<&str> = OPS.split(", ").collect();
                Err(self.v.not_one_of(&self.key(j, "op"), other, &ops))
            }
        }
    }

    fn mmap(&mut self, j: usize, ph: &mut RawPhase) -> R<Phase> {
        self.only(j, ph, "mmap", &["buffer", "size", "advice"])?;
        let name = ph.buffer.clone().ok_or_else(|| {
            self.v
                .bad(&self.key(j, "buffer"), "a name for the new buffer")
        })?;
        if self.sizes.contains_key(&name) {
            return Err(self.v.bad(
                &self.key(j, "buffer"),
                format!("a buffer not already mapped, found \"{name}\""),
            ));
        }
        let raw = ph.size.as_ref().ok_or_else(|| {
            self.v
                .bad(&self.key(j, "size"), "the buffer's size, e.g. \"4GiB\"")
        })?;
        let bytes = self.v.size(&self.key(j, "size"), raw)?;
        if bytes == 0 || bytes % 4096 != 0 || bytes > self.memory {
            return Err(self.v.bad(&self.key(j, "size"), format!("a multiple of 4 KiB no larger than the machine's memory ({} bytes), found {bytes}", self.memory)));
        }
        let advice = self.v.choice(
            &self.key(j, "advice"),
            ph.advice.as_deref(),
            "none",
            &[
                ("none", Advice::Default),
                ("hugepage", Advice::Hugepage),
                ("nohugepage", Advice::NoHugepage),
            ],
        )?;
        ph.advice = Some(ph.advice.clone().unwrap_or_else(|| "none".into()));
        let next = BufferId(self.ids.len());
        let buffer = *self.ids.entry(name.clone()).or_insert(next);
        self.sizes.insert(name, bytes);
        Ok(Phase::Mmap {
            buffer,
            bytes,
            advice,
        })
    }

    fn touch(&mut self, j: usize, ph: &mut RawPhase) -> R<Phase> {
        self.only(
            j,
            ph,
            "touch",
            &[
                "buffer",
                "write_fraction",
                "stride",
                "nonzero_share",
                "mean_first_nonzero",
            ],
        )?;
        let (buffer, bytes) = self.buffer(j, ph)?;
        let stride = match &ph.stride {
            Some(s) => self.v.size(&self.key(j, "stride"), s)?,
            None => 4096,
        };
        if stride == 0 || stride > bytes {
            return Err(self.v.bad(
                &self.key(j, "stride"),
                format!("a stride from 1 byte to the buffer's size, found {stride}"),
            ));
        }
        let write_fraction = self.v.float(
            &self.key(j, "write_fraction"),
            ph.write_fraction,
            1.0,
            0.0,
            1.0,
        )?;
        ph.write_fraction = Some(write_fraction);
        ph.stride = Some(RawSize::Bytes(stride as i64));
        let writes = self.writes(j, ph)?;
        Ok(Phase::Access(AccessPhase {
            buffer,
            pattern: Pattern::Sequential { stride },
            amount: Amount::Refs(bytes.div_ceil(stride)),
            dependent: false,
            write_fraction,
            compute: Nanos::ZERO,
            instructions_per_ref: None,
            writes,
        }))
    }

    /// What the phase's first writes to pages leave in them (`nonzero_share`,
    /// `mean_first_nonzero`), resolved in place.
    fn writes(&self, j: usize, ph: &mut RawPhase) -> R<Writes> {
        let d = Writes::default();
        let writes = Writes {
            nonzero_share: self.v.float(
                &self.key(j, "nonzero_share"),
                ph.nonzero_share,
                d.nonzero_share,
                0.0,
                1.0,
            )?,
            mean_first_nonzero: self.v.float(
                &self.key(j, "mean_first_nonzero"),
                ph.mean_first_nonzero,
                d.mean_first_nonzero,
                0.0,
                4095.0,
            )?,
        };
        ph.nonzero_share = Some(writes.nonzero_share);
        ph.mean_first_nonzero = Some(writes.mean_first_nonzero);
        Ok(writes)
    }

    fn access(&mut self, j: usize, ph: &mut RawPhase) -> R<Phase> {
        let common = [
            "buffer",
            "pattern",
            "refs",
            "duration_ms",
            "dependent",
            "write_fraction",
            "compute_ns",
            "instructions_per_ref",
            "nonzero_share",
            "mean_first_nonzero",
        ];
        let (buffer, bytes) = self.buffer(j, ph)?;
        let pattern_name = ph.pattern.clone().unwrap_or_else(|| "uniform".into());
        let extra: &[&str] = match pattern_name.as_str() {
            "sequential" => &["stride"],
            "zipf" => &["exponent", "position"],
            "hot" => &["hot_fraction", "hot_share", "position"],
            _ => &[],
        };
        self.only(j, ph, "access", &[&common[..], extra].concat())?;
        let pattern = self.pattern(j, ph, &pattern_name, bytes)?;
        let amount = match (ph.refs, ph.duration_ms) {
            (Some(_), Some(_)) | (None, None) => {
                return Err(self.v.bad(
                    &self.key(j, "refs"),
                    "exactly one of `refs` and `duration_ms`",
                ))
            }
            (Some(n), None) => {
                Amount::Refs(self.v.int(&self.key(j, "refs"), Some(n), 0, 1, i64::MAX)? as u64)
            }
            (None, Some(ms)) => Amount::Duration(Nanos(
                (self
                    .v
                    .float(&self.key(j, "duration_ms"), Some(ms), 0.0, 1e-6, 1e12)?
                    * 1e6) as u64,
            )),
        };
        let dependent = ph.dependent.unwrap_or(true);
        let write_fraction = self.v.float(
            &self.key(j, "write_fraction"),
            ph.write_fraction,
            0.0,
            0.0,
            1.0,
        )?;
        let compute = self
            .v
            .float(&self.key(j, "compute_ns"), ph.compute_ns, 0.0, 0.0, 1e9)?;
        ph.pattern = Some(pattern_name);
        ph.dependent = Some(dependent);
        ph.write_fraction = Some(write_fraction);
        ph.compute_ns = Some(compute);
        let instructions_per_ref = ph
            .instructions_per_ref
            .map(|x| {
                self.v
                    .float(&self.key(j, "instructions_per_ref"), Some(x), 0.0, 1.0, 1e6)
                    .map(|x| x as f32)
            })
            .transpose()?;
        let writes = self.writes(j, ph)?;
        Ok(Phase::Access(AccessPhase {
            buffer,
            pattern,
            amount,
            dependent,
            write_fraction,
            compute: Nanos(compute.round() as u64),
            instructions_per_ref,
            writes,
        }))
    }

    fn pattern(&self, j: usize, ph: &mut RawPhase, name: &str, bytes: u64) -> R<Pattern> {
        let fraction =
            |k: &str, v: Option<f64>, d: f64| self.v.float(&self.key(j, k), v, d, 0.0, 1.0);
        let p = match name {
            "uniform" => Pattern::Uniform,
            "chase" => Pattern::Chase,
            "sequential" => {
                let stride = match &ph.stride {
                    Some(s) => self.v.size(&self.key(j, "stride"), s)?,
                    None => 64,
                };
                if stride == 0 || stride > bytes {
                    return Err(self.v.bad(
                        &self.key(j, "stride"),
                        format!("a stride from 1 byte to the buffer's size, found {stride}"),
                    ));
                }
                ph.stride = Some(RawSize::Bytes(stride as i64));
                Pattern::Sequential { stride }
            }
            "zipf" => {
                let exponent =
                    self.v
                        .float(&self.key(j, "exponent"), ph.exponent, 1.0, 1e-3, 20.0)?;
                let position = fraction("position", ph.position, 0.0)?;
                ph.exponent = Some(exponent);
                ph.position = Some(position);
                Pattern::Zipf { exponent, position }
            }
            "hot" => {
                let hot_fraction = fraction("hot_fraction", ph.hot_fraction, 0.1)?;
                let hot_share = fraction("hot_share", ph.hot_share, 0.9)?;
                let position = fraction("position", ph.position, 0.0)?;
                (ph.hot_fraction, ph.hot_share, ph.position) =
                    (Some(hot_fraction), Some(hot_share), Some(position));
                Pattern::HotRange {
                    hot_fraction,
                    hot_share,
                    position,
                }
            }
            other => {
                return Err(self.v.bad(
                    &self.key(j, "pattern"),
                    format!("one of uniform, chase, sequential, zipf, hot, found \"{other}\""),
                ))
            }
        };
        Ok(p)
    }

    fn madvise(&mut self, j: usize, ph: &mut RawPhase) -> R<Phase> {
        self.only(j, ph, "madvise", &["buffer", "advice", "offset", "length"])?;
        let (buffer, bytes) = self.buffer(j, ph)?;
        let advice = self.v.choice(
            &self.key(j, "advice"),
            ph.advice.as_deref(),
            "",
            &[
                ("hugepage", MadviseKind::Hugepage),
                ("nohugepage", MadviseKind::NoHugepage),
                ("dontneed", MadviseKind::DontNeed),
            ],
        )?;
        let offset = match &ph.offset {
            Some(o) => self.v.size(&self.key(j, "offset"), o)?,
            None => 0,
        };
        let len = match &ph.length {
            Some(l) => self.v.size(&self.key(j, "length"), l)?,
            None => bytes.saturating_sub(offset),
        };
        if offset % 4096 != 0
            || len == 0
            || len % 4096 != 0
            || offset > bytes
            || len > bytes - offset
        {
            return Err(self.v.bad(&self.key(j, "length"), format!("a page-aligned range inside the buffer ({bytes} bytes), found offset {offset} length {len}")));
        }
        (ph.offset, ph.length) = (
            Some(RawSize::Bytes(offset as i64)),
            Some(RawSize::Bytes(len as i64)),
        );
        Ok(Phase::Madvise {
            buffer,
            offset,
            len,
            advice,
        })
    }
}

/// Deserialize `source`'s text (overrides applied) into `T`; an error names the file, the
/// line and column, and the key.
pub(super) fn deserialize<T: serde::de::DeserializeOwned>(
    source: &Source,
) -> Result<T, ConfigError> {
    let (file, text) = (&source.file, source.text.as_str());
    let de = toml::Deserializer::new(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let key = e.path().to_string();
        let inner = e.into_inner();
        let mut message = inner.message().trim().to_string();
        if message.is_empty() {
            // toml says nothing for, e.g., a control character in a comment.
            message = "malformed TOML (a control character?)".into();
        }
        if let Some(explained) = locate::explain_unknown(&message) {
            message = explained;
        }
        let at = inner.span().map(|s| {
            let (line, col) = locate::line_col(text, s.start);
            Pos { line, col }
        });
        source.place(ConfigError::Parse {
            file: file.clone(),
            at,
            key: if key == "." { "(file)".into() } else { key },
            message,
        })
    })
}
