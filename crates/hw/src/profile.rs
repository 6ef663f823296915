//! Machine profiles: the TOML description of one machine's translation hardware, caches,
//! clock and kernel software costs, and its loading.
//!
//! Loading is two-stage (conventions 6): serde parses the text into these types with
//! `deny_unknown_fields` (syntax, shape and types; `serde_path_to_error` supplies the key
//! path of a failure), then [`MachineProfile::validate`] checks the values the model
//! needs (positive sizes, ways dividing entries into a power-of-two number of sets, finite
//! positive clock and latencies...). Profiles shipped with hugemm live in `/profiles` and
//! are compiled in with `include_str!` ([`MachineProfile::builtin`]); every number in them
//! carries its source in a comment.
//!
//! This module only describes a machine; the structures it parameterises are built in
//! `mmu.rs` and `cache.rs`, and the kernel model reads [`KernelCosts`].

use crate::error::{ProfileError, Result};
use crate::units::{Nanos, PageSize};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One machine: clock, TLBs, page-walk caches, caches, memory and kernel costs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineProfile {
    /// Short identifier (the file stem of a builtin profile).
    pub name: String,
    /// One-line description, for reports.
    pub description: String,
    /// Cores the simulated machine has.
    pub cores: u32,
    /// Core clock in GHz (cycles per nanosecond).
    pub freq_ghz: f64,
    /// L1 TLBs per page size and the second-level TLB.
    pub tlb: TlbProfile,
    /// Page-walk caches (paging-structure caches).
    pub pwc: PwcProfile,
    /// Cache levels, nearest first; they hold both data and page-table lines.
    pub caches: Vec<CacheLevelProfile>,
    /// Load-to-use latency of DRAM, in ns.
    pub dram_latency_ns: f64,
    /// Sustained DRAM bandwidth of the memory the cores share, GB/s: what another agent's
    /// traffic (a pre-zeroing daemon's) is measured against. Unset: that traffic does not
    /// slow anyone (no bandwidth model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dram_gbps: Option<f64>,
    /// Slower memory tiers beyond the local DRAM, nearest first: node 0 is the local DRAM
    /// (`dram_latency_ns`, `dram_gbps`), node `i` is `tiers[i - 1]`. Empty (the default):
    /// one node. How much memory each node has is the experiment's (`[machine]
    /// node_memory`), not the profile's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tiers: Vec<TierProfile>,
    /// Memory-level parallelism: independent data misses that overlap (line fill buffers).
    pub mlp: f64,
    /// Independent data misses *to DRAM* that overlap, when fewer than `mlp`: misses the
    /// caches serve overlap up to `mlp`, misses to memory up to this (see `mmu.rs`,
    /// "Time"). Unset, the default: `mlp` for both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dram_mlp: Option<f64>,
    /// Whether an independent reference holds its place among the `mlp` (`dram_mlp`)
    /// references in flight for its translation as well as its data: then `m` references
    /// overlap whole, `(translation + data) / m` a reference, rather than their data
    /// misses alone, `data / m` (see `mmu.rs`, "Time"). Unset, the default: `false`, data
    /// alone. Set where the calibration data show it (`docs/calibration.md`, "What bounds
    /// independent references").
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mlp_holds_translation: bool,
    /// Instructions the core keeps in flight behind an incomplete load: the reorder
    /// buffer, or a smaller structure every instruction takes (the physical register
    /// file). With it, independent references overlap at most `reorder_window /
    /// instructions_per_ref` at a time, the instructions a reference of the running phase
    /// comes with (see `mmu.rs`, "Time"). Unset, the default, or for a phase that does not
    /// say its instructions: no such bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reorder_window: Option<f64>,
    /// Page walks that can be in flight at once.
    pub page_walkers: u32,
    /// Fixed cycles of a page walk besides its page-table loads.
    pub walk_base_cycles: f64,
    /// The machine is a virtual-machine guest: its TLB misses walk two dimensions
    /// (nested paging). Unset, the default: bare metal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest: Option<GuestProfile>,
    /// Minimum cycles per reference (throughput bound of independent references).
    pub issue_cycles: f64,
    /// Kernel software costs.
    pub costs: KernelCosts,
}

/// A guest's second translation dimension: how the host backs guest-physical memory and
/// the structures that cache host translations (see `mmu.rs`, "Nested translation").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuestProfile {
    /// Fraction of guest-physical 2 MB regions the host maps with a 2 MB page (the rest
    /// with 4 KB pages), when no host kernel model decides. Which regions are huge follows
    /// a fixed low-discrepancy sequence over region numbers, so it is the same on every
    /// run and every stretch of guest memory has this share.
    pub host_huge_fraction: f64,
    /// Fixed cycles of one host walk (the second dimension) besides its page-table loads.
    pub host_walk_base_cycles: f64,
    /// Cycles of a nested-TLB hit (paid for each guest-physical address a walk
    /// translates through it).
    #[serde(default)]
    pub nested_tlb_hit_cycles: f64,
    /// The nested TLB: guest-physical to host-physical translations of host pages,
    /// consulted for every guest-physical address a guest walk produces (AMD's NTLB;
    /// Intel keeps EPT's guest-physical mappings in its TLBs).
    pub nested_tlb: AssocProfile,
    /// The host's paging-structure caches, keyed by guest-physical address.
    pub host_pwc: PwcProfile,
    /// Ways of an STLB set that *splintered* translations may hold: the 4 KB pieces of
    /// guest huge pages the host maps with 4 KB pages (`nested.rs`). Absent: they share
    /// the ways native 4 KB translations may use, as native ones. 0: the STLB keeps none,
    /// so every reference to a splintered page that misses the L1 TLB walks. Neither
    /// vendor documents which; the calibration measures it (docs/calibration.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stlb_splintered_ways: Option<u32>,
    /// Latency, in ns, that a host page-table line no cache holds costs over a data line
    /// from memory (`dram_latency_ns`). 0, the default: the same. A measured figure for
    /// a machine whose walks pay more for the host's tables than for data, for a reason
    /// the guest cannot see (the host's tables on a remote node, for example); the
    /// calibration fits it (docs/calibration.md, "The host's page-table lines").
    #[serde(default, skip_serializing_if = "is_zero")]
    pub host_pt_extra_ns: f64,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// One memory tier (a NUMA node without CPUs, or the far socket's memory) as the cores
/// see it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TierProfile {
    /// Short name for reports (`"disaggregated"`, `"cxl"`).
    pub name: String,
    /// Load-to-use latency of a data line on this tier, in ns.
    pub latency_ns: f64,
    /// Sustained bandwidth of this tier, GB/s.
    pub gbps: f64,
}

/// The parts the cost of migrating pages between nodes is made of (Nimble, ASPLOS'19,
/// section 3.1 and Figure 4's five steps): what the kernel does per `move_pages` call,
/// per page and per huge page besides allocating (`alloc_ns`), flushing (`tlb_flush_ns`)
/// and writing entries (`pte_update_ns`), and the copy engine: one thread copies at `copy_gbps`, helper threads each cost a
/// launch, and all threads together are capped by the link between the nodes. The
/// kernel model composes them per mechanism (hugemm-mm `migration`); how each number was
/// fitted is written beside it in the profile.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MigrationCosts {
    /// Fixed software cost of one `move_pages`/`exchange_pages` call (entry, draining the
    /// per-CPU LRU caches on every CPU, looking up the pages), ns.
    pub call_ns: f64,
    /// Kernel work to migrate one base page besides allocating its target, freeing its
    /// source, the shootdown and the two entry writes (LRU isolation, locking, the
    /// reverse-map walks of unmap and remap), ns.
    pub page_ns: f64,
    /// The same for one huge page migrated whole (native THP migration), ns.
    pub huge_page_ns: f64,
    /// Freeing the source page after a migration, ns (exchange frees nothing).
    pub free_ns: f64,
    /// Starting one helper copy thread (queueing its work item, waking it, waiting for
    /// it), ns; a one-thread copy has none.
    pub thread_launch_ns: f64,
    /// Most bytes per ns all copy threads together move between two nodes (the link's
    /// sustained copy throughput), GB/s.
    pub link_gbps: f64,
}

/// The TLB hierarchy: first-level TLBs and the second-level TLB (STLB).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlbProfile {
    /// First-level data TLBs. Each serves the page sizes it lists; a size no L1 TLB lists
    /// always goes to the STLB. An array listing several sizes is shared by them (AMD Zen's
    /// 64-entry fully associative L1 DTLB holds all three sizes).
    pub l1: Vec<L1TlbProfile>,
    /// The second-level TLB.
    pub stlb: StlbProfile,
}

/// One first-level TLB array.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct L1TlbProfile {
    /// Page sizes this array holds, as `"4k"`, `"2m"`, `"1g"`.
    #[serde(with = "size_labels")]
    pub sizes: Vec<PageSize>,
    /// Entries.
    pub entries: u32,
    /// Ways per set (`ways == entries`: fully associative).
    pub ways: u32,
}

/// The second-level TLB, possibly shared by several page sizes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StlbProfile {
    /// Entries.
    pub entries: u32,
    /// Ways per set.
    pub ways: u32,
    /// Cycles of an L1 TLB miss that hits the STLB (also paid before a walk starts).
    pub hit_cycles: f64,
    /// Per page size, how many ways of a set that size may occupy (0: not cached here).
    pub max_ways: PerSize<u32>,
}

/// A value per page size, written in TOML as `{ 4k = .., 2m = .., 1g = .. }`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerSize<T> {
    /// For 4 KB pages.
    #[serde(rename = "4k")]
    pub base: T,
    /// For 2 MB pages.
    #[serde(rename = "2m")]
    pub huge: T,
    /// For 1 GB pages.
    #[serde(rename = "1g")]
    pub giant: T,
}

impl<T: Copy> PerSize<T> {
    /// The value for `size`.
    pub fn get(&self, size: PageSize) -> T {
        match size {
            PageSize::Base => self.base,
            PageSize::Huge => self.huge,
            PageSize::Giant => self.giant,
        }
    }
}

/// Page-walk caches: each caches upper-level entries so a walk can skip levels.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PwcProfile {
    /// Cache of PML4 entries (keyed by VA bits 47..39).
    pub pml4e: AssocProfile,
    /// Cache of PDPT entries (keyed by VA bits 47..30).
    pub pdpte: AssocProfile,
    /// Cache of non-leaf PD entries (keyed by VA bits 47..21).
    pub pde: AssocProfile,
}

/// The geometry of a small associative structure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AssocProfile {
    /// Entries.
    pub entries: u32,
    /// Ways per set (`ways == entries`: fully associative).
    pub ways: u32,
}

/// One cache level as one core sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheLevelProfile {
    /// Name for reports (`L1D`, `L2`, `L3`).
    pub name: String,
    /// Capacity one core sees, in bytes (its share of a shared level).
    pub bytes: u64,
    /// Ways per set.
    pub ways: u32,
    /// Load-to-use latency of a hit at this level, in core cycles.
    pub latency_cycles: f64,
}

/// Kernel software costs, in ns or GB/s (= bytes per ns).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelCosts {
    /// Exception entry/exit plus the software path of a page fault, without allocation,
    /// zeroing or the PTE write.
    pub fault_trap_ns: f64,
    /// The same for a fault this machine takes, as a host, on a virtual machine's memory
    /// (a guest's first touch): the EPT or NPT violation's exit, the host's fault path and
    /// the return to the guest, without allocation or zeroing. A property of the host and
    /// its hypervisor, so it belongs to the profile a host runs on; a guest profile's
    /// value prices the host `calibrate` builds from it (the guest profile without its
    /// `[guest]` table). Unset: `fault_trap_ns`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vm_fault_trap_ns: Option<f64>,
    /// One buddy allocation.
    pub alloc_ns: f64,
    /// Clearing pages (fault-time zeroing), GB/s.
    pub zero_gbps: f64,
    /// Copying pages with one thread (collapse, migration), GB/s.
    pub copy_gbps: f64,
    /// Writing one page-table entry.
    pub pte_update_ns: f64,
    /// A local flush of a range, or one TLB shootdown.
    pub tlb_flush_ns: f64,
    /// Clearing pages with non-temporal stores (asynchronous pre-zeroing), GB/s. Unset:
    /// `zero_gbps` (HawkEye 3.1: for sequential clearing non-temporal stores perform like
    /// caching ones).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zero_nt_gbps: Option<f64>,
    /// Reading pages for their first non-zero byte (`memchr_inv`, a bloat-recovery
    /// scan), GB/s. Unset: `copy_gbps` (a copy reads as much and writes it too, so this
    /// errs slow).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scan_gbps: Option<f64>,
    /// Reaching each page a scan reads (its first line misses the caches: prefetchers
    /// stop at page boundaries), ns. Unset: `dram_latency_ns`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scan_page_ns: Option<f64>,
    /// Setting up one tail page of a new huge page (`prep_compound_page`), ns. Unset: 0
    /// (the cost is then inside whatever the profile's zeroing bandwidth was fitted to).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compound_tail_ns: Option<f64>,
    /// The parts of page migration between nodes (Nimble). Unset: a profile of one node
    /// cannot run tiering experiments (`move_pages` between nodes is refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migration: Option<MigrationCosts>,
}

impl KernelCosts {
    /// Time to clear `bytes`.
    pub fn zero_time(&self, bytes: u64) -> Nanos {
        bytes_at(bytes, self.zero_gbps)
    }

    /// Time for one thread to copy `bytes`.
    pub fn copy_time(&self, bytes: u64) -> Nanos {
        bytes_at(bytes, self.copy_gbps)
    }
}

/// `bytes` at `gbps` GB/s (= bytes/ns), rounded to the nearest ns. A non-positive rate
/// (rejected by validation) saturates instead of panicking.
fn bytes_at(bytes: u64, gbps: f64) -> Nanos {
    Nanos((bytes as f64 / gbps).round() as u64)
}

/// The profiles shipped in `/profiles`, compiled in.
const BUILTINS: [(&str, &str); 7] = [
    (
        "haswell-e5-2690v3",
        include_str!("../../../profiles/haswell-e5-2690v3.toml"),
    ),
    (
        "sapphire-rapids",
        include_str!("../../../profiles/sapphire-rapids.toml"),
    ),
    (
        "epyc-milan-kvm",
        include_str!("../../../profiles/epyc-milan-kvm.toml"),
    ),
    (
        "xeon-e5-2650v3-2node",
        include_str!("../../../profiles/xeon-e5-2650v3-2node.toml"),
    ),
    (
        "nehalem-i7",
        include_str!("../../../profiles/nehalem-i7.toml"),
    ),
    (
        "xeon-emerald-rapids-kvm",
        include_str!("../../../profiles/xeon-emerald-rapids-kvm.toml"),
    ),
    (
        "epyc-genoa-kvm",
        include_str!("../../../profiles/epyc-genoa-kvm.toml"),
    ),
];

const BUILTIN_NAMES: [&str; 7] = [
    BUILTINS[0].0,
    BUILTINS[1].0,
    BUILTINS[2].0,
    BUILTINS[3].0,
    BUILTINS[4].0,
    BUILTINS[5].0,
    BUILTINS[6].0,
];

impl MachineProfile {
    /// The builtin profile `name`, or `None` if there is no such profile. Builtins are
    /// validated by this crate's tests; use [`MachineProfile::builtin_checked`] to see the
    /// error if one were broken.
    pub fn builtin(name: &str) -> Option<MachineProfile> {
        MachineProfile::builtin_checked(name)?.ok()
    }

    /// The builtin profile `name` with its load result, or `None` if there is no such
    /// profile.
    pub fn builtin_checked(name: &str) -> Option<Result<MachineProfile>> {
        let (_, text) = BUILTINS.iter().find(|(n, _)| *n == name)?;
        Some(MachineProfile::from_toml_str(
            text,
            &format!("builtin:{name}"),
        ))
    }

    /// Names of the builtin profiles.
    pub fn builtin_names() -> &'static [&'static str] {
        &BUILTIN_NAMES
    }

    /// Parses and validates a profile; `origin` names the source in errors.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<MachineProfile> {
        let de = toml::Deserializer::new(text);
        let profile: MachineProfile =
            serde_path_to_error::deserialize(de).map_err(|e| parse_error(e, text, origin))?;
        profile.validate(origin)?;
        Ok(profile)
    }

    /// Reads, parses and validates the profile at `path`.
    pub fn load(path: &Path) -> Result<MachineProfile> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Read {
            origin: origin.clone(),
            source,
        })?;
        MachineProfile::from_toml_str(&text, &origin)
    }

    /// Checks every value the model depends on (the second stage of loading).
    pub fn validate(&self, origin: &str) -> Result<()> {
        crate::validate::validate(self, origin)
    }

    /// Memory nodes: 1 + the slower tiers.
    pub fn node_count(&self) -> usize {
        1 + self.tiers.len()
    }

    /// Load-to-use latency of node `node`'s memory in ns (node 0: `dram_latency_ns`);
    /// `None` past the last node.
    pub fn node_latency_ns(&self, node: usize) -> Option<f64> {
        match node {
            0 => Some(self.dram_latency_ns),
            n => self.tiers.get(n - 1).map(|t| t.latency_ns),
        }
    }

    /// Sustained bandwidth of node `node` in GB/s, if the profile gives it.
    pub fn node_gbps(&self, node: usize) -> Option<f64> {
        match node {
            0 => self.dram_gbps,
            n => self.tiers.get(n - 1).map(|t| t.gbps),
        }
    }

    /// Name of node `node` (node 0 is `"local"`).
    pub fn node_name(&self, node: usize) -> Option<&str> {
        match node {
            0 => Some("local"),
            n => self.tiers.get(n - 1).map(|t| t.name.as_str()),
        }
    }

    /// Picoseconds per core cycle.
    pub fn picos_per_cycle(&self) -> f64 {
        1000.0 / self.freq_ghz
    }

    /// Core cycles per picosecond (the factor [`crate::Pmu::record`] takes).
    pub fn cycles_per_pico(&self) -> f64 {
        self.freq_ghz / 1000.0
    }
}

/// Turns a path-tracked TOML error into a [`ProfileError::Parse`] naming the key.
fn parse_error(
    e: serde_path_to_error::Error<toml::de::Error>,
    text: &str,
    origin: &str,
) -> ProfileError {
    // The path names the offending key itself, unknown keys included.
    let key = e.path().to_string();
    let inner = e.into_inner();
    let message = inner.message().trim().to_string();
    let line = inner.span().map(|s| line_of(text, s.start));
    ProfileError::Parse {
        origin: origin.to_string(),
        line,
        key,
        message,
    }
}

/// The 1-based line holding byte `offset` of `text`.
fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Serde for a list of page sizes written as their labels (`"4k"`, `"2m"`, `"1g"`).
mod size_labels {
    use crate::units::PageSize;
    use serde::de::Error;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(sizes: &[PageSize], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(sizes.iter().map(|p| p.label()))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<PageSize>, D::Error> {
        let labels = Vec::<String>::deserialize(d)?;
        labels
            .iter()
            .map(|l| {
                PageSize::ALL
                    .into_iter()
                    .find(|p| p.label() == l)
                    .ok_or_else(|| {
                        D::Error::custom(format!(
                            "unknown page size `{l}`, expected one of \"4k\", \"2m\", \"1g\""
                        ))
                    })
            })
            .collect()
    }
}
