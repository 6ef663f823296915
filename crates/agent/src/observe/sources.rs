//! Which source of access information the running kernel offers the agent, detected once
//! at start, read only: it never creates, changes or stops a kdamond.
//!
//! Sources in the order of preference of issue 22:
//!
//! 1. DAMON virtual-address monitoring: needs `/sys/kernel/mm/damon/admin`
//!    (`CONFIG_DAMON_SYSFS`), the `vaddr` operations (`CONFIG_DAMON_VADDR`; a context's
//!    `avail_operations` says so authoritatively, else the kernel config), write access to
//!    `nr_kdamonds` (root), and no kdamond the agent did not create: adding a kdamond
//!    rewrites the whole `kdamonds/` directory, and fails with `EBUSY` while one runs.
//! 2. The page-idle bitmap, `/sys/kernel/mm/page_idle/bitmap` (`CONFIG_IDLE_PAGE_TRACKING`):
//!    read and write access (root) and frame numbers from pagemap (`CAP_SYS_ADMIN`).
//! 3. DAMON physical-address monitoring (`CONFIG_DAMON_PADDR`), mapped back to processes
//!    through pagemap: what 1 needs, with `paddr`, plus frame numbers.
//! 4. Otherwise population-based coverage: present pages per region from pagemap, no
//!    access bits. Always available.
//!
//! This module owns the detection and its explanation; it must not start a source.

use super::damon::{DamonSysfs, KdamondState};
use super::kconfig::KernelConfig;
use super::pagemap;
use crate::error::Result;
use hugemm_hw::Geometry;
use rustix::fs::{accessat, Access, AtFlags, CWD};
use serde::Serialize;
use std::fmt;
use std::path::{Path, PathBuf};

/// A source of access information.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum AccessSource {
    /// DAMON monitoring the target's virtual address space.
    DamonVaddr,
    /// The page-idle bitmap, over the target's frames.
    PageIdle,
    /// DAMON monitoring physical memory, mapped back through pagemap.
    DamonPaddr,
    /// Present pages per region only: no access bits.
    Population,
}

impl AccessSource {
    /// All sources, most preferred first.
    pub const PREFERENCE: [AccessSource; 4] = [
        AccessSource::DamonVaddr,
        AccessSource::PageIdle,
        AccessSource::DamonPaddr,
        AccessSource::Population,
    ];

    /// Short name for logs and configuration.
    pub fn name(self) -> &'static str {
        match self {
            AccessSource::DamonVaddr => "damon-vaddr",
            AccessSource::PageIdle => "page-idle",
            AccessSource::DamonPaddr => "damon-paddr",
            AccessSource::Population => "population",
        }
    }

    /// A sentence saying what the source gives.
    pub fn description(self) -> &'static str {
        match self {
            AccessSource::DamonVaddr => {
                "DAMON virtual-address monitoring: access frequency per address range of the target"
            }
            AccessSource::PageIdle => {
                "the page-idle bitmap: which of the target's frames were accessed since marked idle"
            }
            AccessSource::DamonPaddr => {
                "DAMON physical-address monitoring: access frequency per frame range, \
                 mapped back to the target through pagemap"
            }
            AccessSource::Population => {
                "population-based coverage: present 4 KB pages per 2 MB region from pagemap, \
                 no access information"
            }
        }
    }
}

impl fmt::Display for AccessSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), self.description())
    }
}

/// Whether one source is usable, and why (not).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The source.
    pub source: AccessSource,
    /// Whether the agent could use it.
    pub usable: bool,
    /// Why, in a sentence.
    pub reason: String,
}

impl Finding {
    fn yes(source: AccessSource, reason: impl Into<String>) -> Finding {
        Finding {
            source,
            usable: true,
            reason: reason.into(),
        }
    }

    fn no(source: AccessSource, reason: impl Into<String>) -> Finding {
        Finding {
            source,
            usable: false,
            reason: reason.into(),
        }
    }
}

/// The outcome of detection.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SourceReport {
    /// The most preferred usable source.
    pub best: AccessSource,
    /// One finding per source, in order of preference.
    pub findings: Vec<Finding>,
    /// What DAMON's sysfs interface showed (its kdamonds are never the agent's).
    pub damon: DamonSysfs,
    /// Whether pagemap shows frame numbers to this process.
    pub pfns_visible: bool,
    /// The kernel configuration consulted, if one was readable.
    pub kernel_config: Option<PathBuf>,
}

impl fmt::Display for SourceReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "access source: {}", self.best)?;
        for finding in &self.findings {
            let verdict = if finding.usable {
                "usable"
            } else {
                "not usable"
            };
            writeln!(
                f,
                "  {}: {verdict}: {}",
                finding.source.name(),
                finding.reason
            )?;
        }
        if let DamonSysfs::Present { kdamonds, .. } = &self.damon {
            for k in kdamonds {
                let ops: Vec<&str> = k.contexts.iter().map(|c| c.operations.as_str()).collect();
                let pid = k.pid.map_or("-".to_string(), |p| p.to_string());
                writeln!(
                    f,
                    "  kdamond {} (not the agent's, left alone): {}, pid {pid}, operations [{}]",
                    k.index,
                    k.state,
                    ops.join(", ")
                )?;
            }
        }
        let config = self
            .kernel_config
            .as_ref()
            .map_or("none readable".into(), |p| p.display().to_string());
        write!(
            f,
            "  frame numbers visible: {}; kernel config: {config}",
            self.pfns_visible
        )
    }
}

/// Where a probe reads the kernel configuration from.
#[derive(Clone, Debug)]
enum ConfigFrom {
    Host,
    Path(PathBuf),
    Nowhere,
}

/// Detects the access sources; builder options point it at other files for tests.
#[derive(Clone, Debug)]
pub struct Probe {
    sysfs_mm: PathBuf,
    config: ConfigFrom,
    pfns_visible: Option<bool>,
    geometry: Geometry,
}

impl Probe {
    /// A probe of this host: `/sys/kernel/mm`, the host's kernel config, and this
    /// process's own pagemap for frame-number visibility.
    pub fn host() -> Probe {
        Probe {
            sysfs_mm: PathBuf::from("/sys/kernel/mm"),
            config: ConfigFrom::Host,
            pfns_visible: None,
            geometry: Geometry::X86_64,
        }
    }

    /// Read DAMON and page-idle files under `dir` instead of `/sys/kernel/mm`.
    pub fn sysfs_mm(mut self, dir: impl Into<PathBuf>) -> Probe {
        self.sysfs_mm = dir.into();
        self
    }

    /// Read the kernel configuration from `path` (`.gz` or plain).
    pub fn kernel_config(mut self, path: impl Into<PathBuf>) -> Probe {
        self.config = ConfigFrom::Path(path.into());
        self
    }

    /// Consult no kernel configuration.
    pub fn without_kernel_config(mut self) -> Probe {
        self.config = ConfigFrom::Nowhere;
        self
    }

    /// Take frame-number visibility as given instead of asking pagemap.
    pub fn pfns_visible(mut self, visible: bool) -> Probe {
        self.pfns_visible = Some(visible);
        self
    }

    /// Detect the sources.
    pub fn detect(&self) -> Result<SourceReport> {
        let damon = DamonSysfs::read(&self.sysfs_mm.join("damon/admin"))?;
        let config = match &self.config {
            ConfigFrom::Host => KernelConfig::read_host()?,
            ConfigFrom::Path(p) => Some(KernelConfig::read_path(p)?),
            ConfigFrom::Nowhere => None,
        };
        // A process that cannot read its own pagemap sees no frame numbers either.
        let pfns_visible = self
            .pfns_visible
            .unwrap_or_else(|| pagemap::pfns_visible(&self.geometry).unwrap_or(false));
        let facts = Facts {
            damon: &damon,
            config: config.as_ref(),
            pfns_visible,
        };
        let findings = vec![
            facts.damon_finding(AccessSource::DamonVaddr, "vaddr", "CONFIG_DAMON_VADDR"),
            facts.page_idle_finding(&self.sysfs_mm.join("page_idle/bitmap")),
            facts.damon_finding(AccessSource::DamonPaddr, "paddr", "CONFIG_DAMON_PADDR"),
            Finding::yes(
                AccessSource::Population,
                "pagemap is readable for any process the agent may trace",
            ),
        ];
        let best = findings
            .iter()
            .find(|f| f.usable)
            .map_or(AccessSource::Population, |f| f.source);
        let kernel_config = config.map(|c| c.path().to_path_buf());
        Ok(SourceReport {
            best,
            findings,
            damon,
            pfns_visible,
            kernel_config,
        })
    }
}

/// What detection found, to judge each source by.
struct Facts<'a> {
    damon: &'a DamonSysfs,
    config: Option<&'a KernelConfig>,
    pfns_visible: bool,
}

const NO_PFNS: &str = "pagemap hides frame numbers from this process (needs CAP_SYS_ADMIN)";
const NO_DAMON_SYSFS: &str = "no /sys/kernel/mm/damon/admin (kernel without CONFIG_DAMON_SYSFS)";
const DAMON_NOT_WRITABLE: &str = "no write access to kdamonds/nr_kdamonds (needs root)";

impl Facts<'_> {
    fn damon_finding(&self, source: AccessSource, ops: &str, option: &str) -> Finding {
        let needs_frames = source == AccessSource::DamonPaddr;
        match self.damon_blocker(ops, option, needs_frames) {
            Some(why) => Finding::no(source, why),
            None => Finding::yes(
                source,
                format!("`{ops}` operations offered; the agent would add its own kdamond"),
            ),
        }
    }

    /// What stops the agent from monitoring with DAMON's `ops` operations, if anything.
    fn damon_blocker(&self, ops: &str, option: &str, needs_frames: bool) -> Option<String> {
        let (kdamonds, writable) = match self.damon {
            DamonSysfs::Absent => return Some(NO_DAMON_SYSFS.into()),
            DamonSysfs::Unreadable { reason } => {
                return Some(format!(
                    "cannot read DAMON's sysfs files (needs root): {reason}"
                ))
            }
            DamonSysfs::Present { kdamonds, writable } => (kdamonds, *writable),
        };
        if let Err(why) = self.offers(ops, option) {
            return Some(why);
        }
        if !writable {
            return Some(DAMON_NOT_WRITABLE.into());
        }
        if !kdamonds.is_empty() {
            let running = kdamonds
                .iter()
                .filter(|k| k.state == KdamondState::On)
                .count();
            return Some(format!(
                "{} kdamond(s) exist that the agent did not create ({running} running); \
                 adding one rewrites kdamonds/ (EBUSY while one runs), so DAMON is left alone",
                kdamonds.len()
            ));
        }
        (needs_frames && !self.pfns_visible).then(|| NO_PFNS.into())
    }

    /// Whether the kernel offers the DAMON operation set `ops`, and what says so.
    fn offers(&self, ops: &str, option: &str) -> std::result::Result<(), String> {
        if let Some(avail) = self.damon.avail_operations() {
            if avail.iter().any(|o| o == ops) {
                return Ok(());
            }
            return Err(format!(
                "avail_operations lists [{}], not `{ops}`",
                avail.join(", ")
            ));
        }
        match self.config {
            Some(c) if c.enabled(option) => Ok(()),
            Some(c) => Err(format!("{option} is not set in {}", c.path().display())),
            None => Err(format!(
                "cannot tell whether the kernel has `{ops}`: \
                 no DAMON context to ask and no kernel config readable"
            )),
        }
    }

    fn page_idle_finding(&self, bitmap: &Path) -> Finding {
        let source = AccessSource::PageIdle;
        match self.page_idle_blocker(bitmap) {
            Some(why) => Finding::no(source, why),
            None => Finding::yes(
                source,
                format!(
                    "{} is readable and writable, frames are visible",
                    bitmap.display()
                ),
            ),
        }
    }

    /// What stops the agent from using the page-idle bitmap, if anything.
    fn page_idle_blocker(&self, bitmap: &Path) -> Option<String> {
        if !bitmap.exists() {
            let config = match self.config {
                Some(c) if !c.enabled("CONFIG_IDLE_PAGE_TRACKING") => {
                    format!(
                        " (CONFIG_IDLE_PAGE_TRACKING is not set in {})",
                        c.path().display()
                    )
                }
                _ => String::new(),
            };
            return Some(format!("no {}{config}", bitmap.display()));
        }
        let read_write = Access::READ_OK | Access::WRITE_OK;
        if accessat(CWD, bitmap, read_write, AtFlags::EACCESS).is_err() {
            return Some(format!(
                "no read and write access to {} (needs root)",
                bitmap.display()
            ));
        }
        (!self.pfns_visible).then(|| NO_PFNS.into())
    }
}
