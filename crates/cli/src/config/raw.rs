//! Stage one of configuration: the experiment file as written, parsed with serde and
//! nothing more. Unknown keys and wrong types are refused here; every value is checked in
//! stage two ([`super::validate`]). The same structures, with every default filled in,
//! are written back as `config.resolved.toml`.

use serde::{Deserialize, Serialize};

/// A size: bytes as an integer, or a string with a unit ("4GiB", "512 MiB", "1.5GB").
#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(untagged)]
pub enum RawSize {
    /// Bytes.
    Bytes(i64),
    /// A number with a unit.
    Text(String),
}

// By hand rather than `#[serde(untagged)]`, whose error ("data did not match any variant
// of untagged enum RawSize") does not say what a size looks like.
impl<'de> Deserialize<'de> for RawSize {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = RawSize;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "a size: a whole number of bytes or a string such as \"64MiB\" or \"4GiB\"",
                )
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<RawSize, E> {
                Ok(RawSize::Bytes(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<RawSize, E> {
                i64::try_from(v)
                    .map(RawSize::Bytes)
                    .map_err(|_| E::invalid_value(serde::de::Unexpected::Unsigned(v), &self))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<RawSize, E> {
                Ok(RawSize::Text(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

/// `machine.profile`: a name or path, or the profile itself.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(untagged)]
pub enum RawProfile {
    /// A built-in profile's name or a path to a profile file.
    Named(String),
    /// The profile's tables in place (`[machine.profile]`, the shape of `profiles/*.toml`).
    Inline(Box<hugemm_hw::MachineProfile>),
}

// By hand rather than `#[serde(untagged)]`, so that an error inside an inline profile
// names its key (`machine.profile.tlb.stlb.ways`) instead of "did not match any variant".
impl<'de> Deserialize<'de> for RawProfile {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = RawProfile;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a profile's name, a path to a profile file, or a profile table")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<RawProfile, E> {
                Ok(RawProfile::Named(v.to_string()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<RawProfile, A::Error> {
                let de = serde::de::value::MapAccessDeserializer::new(map);
                Ok(RawProfile::Inline(Box::new(Deserialize::deserialize(de)?)))
            }
        }
        d.deserialize_any(V)
    }
}

/// The whole experiment file.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawExperiment {
    /// The machine (a missing table is reported by validation as its missing keys).
    #[serde(default)]
    pub machine: RawMachine,
    /// The policy.
    #[serde(default)]
    pub policy: RawPolicy,
    /// Simulation settings.
    #[serde(default)]
    pub sim: RawSim,
    /// `[reproduce]`: present in reproduction files (`hugemm reproduce`), which are
    /// experiment files plus this table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reproduce: Option<RawReproduce>,
    /// Kernel settings apart from the huge-page policy.
    #[serde(default)]
    pub kernel: RawKernel,
    /// `[tiering]`: the tiering policy (machines of several nodes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tiering: Option<RawTiering>,
    /// Processes.
    #[serde(default, rename = "process")]
    pub processes: Vec<RawProcess>,
    /// Kernel builds (generated worker processes).
    #[serde(
        default,
        rename = "kernel_build",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub kernel_builds: Vec<RawKernelBuild>,
    /// File readers (HawkEye's fragmenter).
    #[serde(default, rename = "file_reader", skip_serializing_if = "Vec::is_empty")]
    pub file_readers: Vec<RawFileReader>,
    /// memhogs.
    #[serde(default, rename = "memhog", skip_serializing_if = "Vec::is_empty")]
    pub memhogs: Vec<RawMemhog>,
    /// Models of the papers' applications (generated processes).
    #[serde(default, rename = "app", skip_serializing_if = "Vec::is_empty")]
    pub apps: Vec<RawApp>,
    /// Redis-like key-value servers (generated processes).
    #[serde(default, rename = "kv_server", skip_serializing_if = "Vec::is_empty")]
    pub kv_servers: Vec<RawKvServer>,
    /// `[guest]`: the machine's nested-paging hardware, for its `[[vm]]`s (the keys of a
    /// profile's `[guest]` table).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest: Option<hugemm_hw::GuestProfile>,
    /// Virtual machines the machine hosts.
    #[serde(default, rename = "vm", skip_serializing_if = "Vec::is_empty")]
    pub vms: Vec<RawVm>,
    /// `[host]`: what the host does with its VMs' memory besides its kernel's and
    /// policy's work (same-page merging, free page reporting, swap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<RawHost>,
}

/// `[host]` (see `hugemm_sim::host`); every mechanism is off unless its key is given.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawHost {
    /// Same-page merging of zero pages: guest pages looked at per second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ksm_pages_per_s: Option<i64>,
    /// Ballooning by free page reporting: how often the guests report (ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub free_page_reporting_ms: Option<f64>,
    /// Swap of VM memory: the device's latency per I/O (us).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swap_latency_us: Option<f64>,
    /// Swap of VM memory: the device's bandwidth, each direction (MB/s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swap_mb_s: Option<f64>,
}

/// `[[vm]]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawVm {
    /// Its name.
    pub name: Option<String>,
    /// The layout it belongs to (reproductions run each layout on its own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout: Option<String>,
    /// Guest-physical memory.
    pub memory: Option<RawSize>,
    /// vCPUs (default 1).
    pub cores: Option<i64>,
    /// Names of the file's processes it runs.
    pub processes: Option<Vec<String>>,
    /// How the VMM advises the VM's memory in the host: "hugepage" (QEMU, the default) or
    /// "none".
    pub host_advice: Option<String>,
}

/// `[[kv_server]]` (see `hugemm_workload::kv`).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawKvServer {
    /// Process name.
    pub name: Option<String>,
    /// Start time (ms).
    pub start_ms: Option<f64>,
    /// Virtual bytes reserved for the heap.
    pub heap: Option<RawSize>,
    /// CPU time of a request apart from memory (us).
    pub request_cpu_us: Option<f64>,
    /// Bytes of a key.
    pub key_size: Option<i64>,
    /// The server's steps.
    #[serde(default, rename = "step")]
    pub steps: Vec<RawKvStep>,
}

/// `[[kv_server.step]]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawKvStep {
    /// insert, delete, get, idle.
    pub op: Option<String>,
    /// insert: keys.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keys: Option<i64>,
    /// insert: bytes of each value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value_size: Option<RawSize>,
    /// delete: share of the live keys.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub share: Option<f64>,
    /// get: requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<i64>,
    /// idle: duration (s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
}

/// `[reproduce]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawReproduce {
    /// Which reproduction (e.g. `apsys16-table2`).
    pub kind: Option<String>,
    /// The variants compared: pageblock fallback policies (APSys'16) or policy setups
    /// (HawkEye).
    pub variants: Option<Vec<String>>,
    /// HawkEye reproductions: the sets of processes run together, each a list of process
    /// names (a name also matches its `count` instances).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sets: Option<Vec<Vec<String>>>,
    /// How the experiment is scaled from the paper's, in words (printed with the results).
    pub scale: Option<String>,
    /// Simulated seconds of the "later" measurement (Figure 3's KMU-2, stress-highalloc's
    /// second attempt).
    pub settle_s: Option<f64>,
    /// Typical wall time (s) of the whole reproduction run serially (`--jobs 1`) on the
    /// project's 2-core machines, for `hugemm reproduce --list`; say when it was measured
    /// in a comment beside it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub typical_wall_s: Option<f64>,
    /// `apsys16-highalloc`: how stress-highalloc is run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub highalloc: Option<RawHighAlloc>,
}

/// `[reproduce.highalloc]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawHighAlloc {
    /// `mmtests` (passes 1-2 under load, paced, pass 3 at rest) or `after-builds` (every
    /// pass at once after the builds end).
    pub procedure: Option<String>,
    /// The requests' GFP flags: `GFP_HIGHUSER_MOVABLE` or `GFP_ALLOC_LIKE_HUGETLB`.
    pub gfp: Option<String>,
}

/// `[kernel]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawKernel {
    /// Pageblock fallback policy.
    pub fallback: Option<String>,
    /// Which Linux the fallback policies' common rules follow: "linux-4.13" (the
    /// default, up to 6.14) or "linux-4.1".
    pub fallback_rules: Option<String>,
    /// `[kernel.kcompactd]`.
    pub kcompactd: Option<RawKcompactd>,
    /// Keep Linux's per-CPU page lists.
    pub per_cpu_lists: Option<bool>,
    /// Which Linux the per-CPU lists' sizes follow: "linux-6" (default) or "linux-4.1".
    pub per_cpu_sizes: Option<String>,
    /// `vm.watermark_boost_factor` (default 0: no boosting; Linux 5.0+ uses 15000).
    pub watermark_boost_factor: Option<i64>,
    /// `vm.watermark_scale_factor` (default 10, Linux 4.6+; 0: Linux 4.1's watermarks).
    pub watermark_scale_factor: Option<i64>,
    /// Free a block likely to merge to the tail of its list (default false).
    pub buddy_merge_likely: Option<bool>,
    /// Keep Linux 4.1's `MIGRATE_RESERVE` pageblocks (default false: Linux 4.4+).
    pub migrate_reserve: Option<bool>,
    /// Give every page-cache page a buffer head (default false).
    pub buffer_heads: Option<bool>,
    /// Give every file read or written its inode, dentry and page-cache tree nodes as
    /// slab objects (default false).
    pub vfs_objects: Option<bool>,
    /// What the slab shrinker does to an object it scans: "upper-bound" (default: frees
    /// it) or "linux-4.1" (a referenced object is rotated once first).
    pub shrinker: Option<String>,
    /// Which free memory a booted kernel allocates first: "lowest-first" (default, Linux
    /// 5.10+) or "highest-first" (Linux before 5.10).
    pub boot_order: Option<String>,
    /// `[kernel.boot]`: kernel memory the booted kernel holds.
    pub boot: Option<RawBoot>,
    /// When kswapd reclaims: "immediate" (default: inside the allocation that woke it)
    /// or "async" (on its own thread; needs `machine.zones`).
    pub kswapd: Option<String>,
    /// The watermark check of stress-highalloc's requests and direct compaction's rules:
    /// "order-0" (default) or "linux-4.1".
    pub watermark_check: Option<String>,
    /// `vm.min_free_kbytes` (default: Linux's value for the memory size).
    pub min_free_kbytes: Option<i64>,
    /// Clear pages at fault (false: HawkEye Table 1's kernel without page zeroing).
    pub clear_pages: Option<bool>,
    /// `[kernel.prezero]`.
    pub prezero: Option<RawPrezero>,
    /// H-Policy's order-9 preservation in the buddy allocator.
    pub preserve_huge_blocks: Option<bool>,
    /// Compaction mode: linux or hole-aware (H-Policy).
    pub compaction: Option<String>,
    /// When references set accessed bits: walk (as x86 does) or every-reference.
    pub accessed_bits: Option<String>,
}

/// `[kernel.boot]` (see `hugemm_mm::BootKernelMemory`).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawBoot {
    /// Unmovable pageblocks the booted kernel holds.
    pub unmovable_pageblocks: Option<i64>,
    /// Free blocks in them by order, from order 0 (as `/proc/pagetypeinfo` lists them).
    pub unmovable_free: Option<Vec<i64>>,
    /// Reclaimable pageblocks the booted kernel holds.
    pub reclaimable_pageblocks: Option<i64>,
    /// Free blocks in them by order, from order 0.
    pub reclaimable_free: Option<Vec<i64>>,
}

/// `[kernel.prezero]` (see `hugemm_sim::PrezeroConfig`).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawPrezero {
    /// Run the pre-zeroing daemon (default: with the hawkeye policy).
    pub enabled: Option<bool>,
    /// Pages zeroed per second.
    pub rate_pages_per_s: Option<i64>,
    /// Time between runs (ms).
    pub period_ms: Option<f64>,
    /// nt (non-temporal) or caching.
    pub stores: Option<String>,
    /// paper (two lists) or released (per-frame flag).
    pub lists: Option<String>,
    /// Zero at the full rate even with nothing left to zero.
    pub stress: Option<bool>,
}

/// `[kernel.kcompactd]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawKcompactd {
    /// Run kcompactd.
    pub enabled: Option<bool>,
    /// `vm.compaction_proactiveness` (0..=100).
    #[serde(alias = "proactiveness")]
    pub compaction_proactiveness: Option<i64>,
}

/// `[[kernel_build]]`: see `hugemm_workload::kbuild::KernelBuild` for each default.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawKernelBuild {
    /// Name prefix of the worker processes.
    pub name: Option<String>,
    /// Start time (ms).
    pub start_ms: Option<f64>,
    /// `make -j`.
    pub jobs: Option<i64>,
    /// Consecutive builds.
    pub builds: Option<i64>,
    /// Compilation units per build.
    pub units: Option<i64>,
    /// Source bytes in all.
    pub source_size: Option<RawSize>,
    /// Header files in the pool.
    pub headers: Option<i64>,
    /// Bytes of each header.
    pub header_size: Option<RawSize>,
    /// Headers read per unit.
    pub header_reads: Option<i64>,
    /// Object bytes in all.
    pub object_size: Option<RawSize>,
    /// Smallest compiler heap.
    pub heap_min: Option<RawSize>,
    /// Largest compiler heap.
    pub heap_max: Option<RawSize>,
    /// Compute per unit (ms).
    pub compute_ms: Option<f64>,
    /// Unmovable slab objects per unit.
    pub unmovable_per_unit: Option<RawSize>,
    /// Unmovable page allocations per unit.
    pub unmovable_pages_per_unit: Option<RawSize>,
    /// Mean lifetime of those pages (s).
    pub unmovable_pages_lifetime_s: Option<f64>,
    /// Long-lived unmovable kernel memory per unit.
    pub pinned_per_unit: Option<RawSize>,
    /// Mean lifetime of the long-lived part (s).
    pub pinned_lifetime_s: Option<f64>,
    /// Reclaimable kernel memory per unit.
    pub reclaimable_per_unit: Option<RawSize>,
    /// Percent of the reclaimable memory in slabs of order 0, 1 and 2.
    pub reclaimable_order_percent: Option<Vec<i64>>,
    /// Mean lifetime of reclaimable memory (s).
    pub reclaimable_lifetime_s: Option<f64>,
    /// Free a unit's reclaimable memory when its object file is deleted (default false).
    pub reclaimable_until_clean: Option<bool>,
    /// Bytes of the units' `.cmd` files in all.
    pub cmd_size: Option<RawSize>,
    /// Bytes of the units' dependency files (`.o.d`) in all.
    pub depfile_size: Option<RawSize>,
    /// Directories the build's files lie in.
    pub directories: Option<i64>,
    /// Names looked up and never found.
    pub missing_names: Option<i64>,
    /// Of those, lookups per unit.
    pub missing_lookups: Option<i64>,
    /// Names each unit looks up and never finds of its own.
    pub missing_per_unit: Option<i64>,
    /// Buddy order of the slabs of the unit's unmovable objects.
    pub unmovable_slab_order: Option<i64>,
    /// Bytes of one unmovable object.
    pub unmovable_object_size: Option<RawSize>,
    /// Bytes of one reclaimable object in the slabs of order 0, 1 and 2.
    pub reclaimable_object_sizes: Option<Vec<i64>>,
}

/// `[[file_reader]]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawFileReader {
    /// Process name.
    pub name: Option<String>,
    /// Start time (ms).
    pub start_ms: Option<f64>,
    /// Files read.
    pub files: Option<i64>,
    /// Bytes of each file.
    pub file_size: Option<RawSize>,
    /// Delete every n-th file after reading them all (0: keep all).
    pub delete_every: Option<i64>,
}

/// `[[memhog]]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawMemhog {
    /// Process name.
    pub name: Option<String>,
    /// Start time (ms).
    pub start_ms: Option<f64>,
    /// Anonymous memory touched.
    pub size: Option<RawSize>,
    /// How long it is held (ms).
    pub hold_ms: Option<f64>,
}

/// `[[app]]`: see `hugemm_workload::apps` for each model.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawApp {
    /// Which model (`hugemm_workload::apps::AppModel::NAMES`).
    pub model: Option<String>,
    /// Process name (default: the model's name).
    pub name: Option<String>,
    /// Identical instances (named `name-0`, `name-1`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<i64>,
    /// Memory the application allocates and initialises.
    pub memory: Option<RawSize>,
    /// Start time (ms).
    pub start_ms: Option<f64>,
    /// Run length after initialisation: memory references.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refs: Option<i64>,
    /// Run length after initialisation: simulated seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
    /// A server model's request rate (redis, redis-uneven, memcached).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests_per_s: Option<f64>,
}

/// `[machine]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawMachine {
    /// A built-in profile's name, a path to a profile file, or the profile itself (an
    /// inline table: what the resolved configuration writes).
    pub profile: Option<RawProfile>,
    /// Physical memory.
    pub memory: Option<RawSize>,
    /// Cores used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cores: Option<i64>,
    /// Memory of each node, node 0 first, for a profile with tiers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_memory: Option<Vec<RawSize>>,
    /// `"none"` (default) or `"linux-x86"`: Linux 4.1's DMA, DMA32 and Normal zones.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zones: Option<String>,
}

/// `[policy]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawPolicy {
    /// Policy name.
    pub name: Option<String>,
    /// `[policy.linux]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub linux: Option<RawLinux>,
    /// `[policy.ingens]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ingens: Option<RawIngens>,
    /// `[policy.hawkeye]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hawkeye: Option<RawHawkeye>,
    /// `[policy.freebsd]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub freebsd: Option<RawFreeBsd>,
    /// `[policy.hpolicy]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hpolicy: Option<RawHPolicy>,
}

/// `[policy.hpolicy]` (see `hugemm_policy::HPolicyConfig` and `SysMonConfig`).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawHPolicy {
    /// Allocated share of memory at which cold huge pages are split.
    pub high_pressure: Option<f64>,
    /// Share of a 2 MB space's 4 KB pages that must be hot to promote it.
    pub promote_space: Option<f64>,
    /// Time between promotion passes (ms).
    pub promote_period_ms: Option<i64>,
    /// Time between checks of the pressure watermark (ms).
    pub pressure_check_ms: Option<i64>,
    /// Huge pages split per pressure pass at most.
    pub splits_per_pass: Option<i64>,
    /// SysMon-H: time between monitoring rounds (ms).
    pub sysmon_period_ms: Option<i64>,
    /// SysMon-H: TLB-miss sampling window per process (ms).
    pub sysmon_window_ms: Option<i64>,
    /// SysMon-H: samples per second of running time.
    pub sample_hz: Option<f64>,
    /// SysMon-H: cost of one sample (ns).
    pub sample_cost_ns: Option<i64>,
    /// SysMon-H: misses below which a huge page gets phase two's checks.
    pub cold_misses: Option<f64>,
    /// SysMon-H: misses at which a huge page is highly utilised.
    pub high_tlb: Option<f64>,
    /// SysMon-H: accessed-bit checks of phase two.
    pub checks: Option<i64>,
    /// SysMon-H: time between them (ms).
    pub check_interval_ms: Option<i64>,
    /// SysMon-H: checks that must find a page accessed for it to be very hot.
    pub hot_checks: Option<i64>,
    /// SysMon-H: where phase one's heat comes from: tlb-misses or accessed-bits.
    pub sysmon_source: Option<String>,
    /// SysMon-H with accessed-bits: scans of every huge page per window.
    pub access_scans: Option<i64>,
}

/// `[policy.ingens]` (see `hugemm_policy::IngensConfig`).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawIngens {
    /// Populated fraction of a region needed for promotion when fragmented.
    pub util_threshold: Option<f64>,
    /// FMFI above which memory counts as fragmented.
    pub fmfi_threshold: Option<f64>,
    /// Sleep between promotion passes (ms).
    #[serde(alias = "scan_sleep_ms")]
    pub scan_sleep_millisecs: Option<i64>,
    /// Regions examined per pass.
    pub regions_per_pass: Option<i64>,
    /// Sleep after a failed allocation (ms).
    #[serde(alias = "alloc_sleep_ms")]
    pub alloc_sleep_millisecs: Option<i64>,
    /// Compact when a promotion finds no huge block.
    pub defrag: Option<bool>,
    /// Accessed-bit tracking period (ms).
    pub track_period_ms: Option<i64>,
    /// Idle memory tax rate.
    pub idle_tax: Option<f64>,
}

/// `[policy.hawkeye]` (see `hugemm_policy::HawkeyeConfig`).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawHawkeye {
    /// g or pmu.
    pub variant: Option<String>,
    /// Access-coverage sampling period (ms).
    pub sample_period_ms: Option<i64>,
    /// Clear-to-count window (ms).
    pub sample_window_ms: Option<i64>,
    /// Weight of a new sample in the EMA.
    pub ema_alpha: Option<f64>,
    /// Sleep between promotion passes (ms).
    #[serde(alias = "scan_sleep_ms")]
    pub scan_sleep_millisecs: Option<i64>,
    /// Promotion attempts per pass.
    pub promotions_per_pass: Option<i64>,
    /// Sleep after a failed allocation (ms).
    #[serde(alias = "alloc_sleep_ms")]
    pub alloc_sleep_millisecs: Option<i64>,
    /// Compact when a promotion finds no huge block.
    pub defrag: Option<bool>,
    /// Lowest bucket promoted from.
    pub min_bucket: Option<i64>,
    /// PMU: overhead below which a process is not promoted.
    pub pmu_threshold: Option<f64>,
    /// PMU: relative tolerance for round-robin among the highest.
    pub pmu_similar: Option<f64>,
    /// `[policy.hawkeye.bloat]`.
    pub bloat: Option<RawBloat>,
}

/// `[policy.hawkeye.bloat]` (see `hugemm_policy::BloatConfig`).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawBloat {
    /// Run bloat recovery.
    pub enabled: Option<bool>,
    /// Allocated share of memory that starts it.
    pub high_watermark: Option<f64>,
    /// Allocated share that stops it.
    pub low_watermark: Option<f64>,
    /// Time between passes (ms).
    pub period_ms: Option<i64>,
    /// Huge pages scanned per pass.
    pub huge_pages_per_pass: Option<i64>,
    /// Zero-filled base pages a huge page may keep.
    pub max_zero: Option<i64>,
}

/// `[policy.freebsd]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawFreeBsd {
    /// Superpage reservations at fault time.
    pub reservations: Option<bool>,
    /// `vm.pmap.pg_ps_enabled`: promote full reservations in place.
    pub pg_ps_enabled: Option<bool>,
}

/// `[policy.linux]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawLinux {
    /// `transparent_hugepage/enabled`: always, madvise, never.
    pub enabled: Option<String>,
    /// `transparent_hugepage/defrag`: always, defer, defer+madvise, madvise, never.
    pub defrag: Option<String>,
    /// `[policy.linux.khugepaged]`.
    pub khugepaged: Option<RawKhugepaged>,
    /// `transparent_hugepage/shrink_underused`: the THP shrinker.
    pub shrink_underused: Option<bool>,
    /// `transparent_hugepage/use_zero_page`: huge read faults map the huge zero page.
    pub use_zero_page: Option<bool>,
}

/// `[policy.linux.khugepaged]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawKhugepaged {
    /// Run khugepaged.
    pub enabled: Option<bool>,
    /// PTEs per pass.
    pub pages_to_scan: Option<i64>,
    /// Sleep between passes (ms).
    #[serde(alias = "scan_sleep_ms")]
    pub scan_sleep_millisecs: Option<i64>,
    /// Sleep after an allocation failure (ms).
    #[serde(alias = "alloc_sleep_ms")]
    pub alloc_sleep_millisecs: Option<i64>,
    /// max_ptes_none.
    pub max_ptes_none: Option<i64>,
    /// `khugepaged/defrag`: compact when a collapse finds no huge block.
    pub defrag: Option<bool>,
    /// `khugepaged/max_ptes_swap`: accepted, without effect (the model has no swap).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_ptes_swap: Option<i64>,
    /// `khugepaged/max_ptes_shared`: accepted, without effect (no shared anonymous pages).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_ptes_shared: Option<i64>,
}

/// `[sim]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawSim {
    /// exact or sampled.
    pub mode: Option<String>,
    /// Seed.
    pub seed: Option<i64>,
    /// Time-series interval (ms).
    pub sample_interval_ms: Option<i64>,
    /// Longest a core runs ahead of the others (microseconds).
    pub turn_us: Option<f64>,
    /// Time limit (s).
    pub time_limit_s: Option<f64>,
    /// Core running kernel daemons.
    pub daemon_core: Option<i64>,
    /// `[sim.sampled]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampled: Option<RawSampled>,
}

/// `[sim.sampled]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawSampled {
    /// Warm-up references per window.
    pub warmup_refs: Option<i64>,
    /// Measured references per window.
    pub window_refs: Option<i64>,
    /// Window period (ms).
    pub period_ms: Option<f64>,
    /// Walks a window must see before it ends (up to 20 x window_refs).
    pub window_walks: Option<i64>,
    /// Least warm-up references at the start of each access phase.
    pub phase_warmup_refs: Option<i64>,
    /// Most warm-up references at the start of each access phase.
    pub phase_warmup_max_refs: Option<i64>,
}

/// `[[process]]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawProcess {
    /// Name.
    pub name: Option<String>,
    /// Identical instances (named `name-0`, `name-1`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<i64>,
    /// Start time (ms).
    pub start_ms: Option<f64>,
    /// Core to pin to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub core: Option<i64>,
    /// Phases.
    #[serde(default, rename = "phase")]
    pub phases: Vec<RawPhase>,
}

/// `[[process.phase]]`: one table for every operation; which keys apply depends on `op`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawPhase {
    /// mmap, touch, access, madvise, munmap, sleep.
    pub op: Option<String>,
    /// Buffer name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffer: Option<String>,
    /// mmap: size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<RawSize>,
    /// mmap/madvise: advice.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub advice: Option<String>,
    /// madvise: offset into the buffer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<RawSize>,
    /// madvise: length.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub length: Option<RawSize>,
    /// access: pattern.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// access: number of references.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refs: Option<i64>,
    /// access/sleep: duration (ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<f64>,
    /// access: dependent references.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dependent: Option<bool>,
    /// access/touch: fraction of writes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_fraction: Option<f64>,
    /// access: compute between references (ns).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compute_ns: Option<f64>,
    /// access: instructions the program runs per reference (the profile's
    /// `reorder_window` then bounds how many independent references overlap).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions_per_ref: Option<f64>,
    /// access/touch: share of pages whose first write leaves data (0: writes zeros).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nonzero_share: Option<f64>,
    /// access/touch: mean offset of a data page's first non-zero byte.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_first_nonzero: Option<f64>,
    /// sequential/touch: stride.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stride: Option<RawSize>,
    /// zipf: exponent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exponent: Option<f64>,
    /// zipf/hot: position of the hot set (0..1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<f64>,
    /// hot: hot range size as a fraction of the buffer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hot_fraction: Option<f64>,
    /// hot: share of references to the hot range.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hot_share: Option<f64>,
    /// file_read/file_write/file_lookup/file_delete: file name (shared by all processes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// file_lookup: whether the name exists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub found: Option<bool>,
    /// kernel_alloc: unmovable or reclaimable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// kernel_alloc: buddy order of each block.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order: Option<i64>,
    /// kernel_alloc: bytes of one slab object (absent: whole blocks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_size: Option<RawSize>,
    /// kernel_alloc: process, forever, fixed, exponential.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lifetime: Option<String>,
    /// kernel_alloc: the fixed lifetime or the exponential mean (ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lifetime_ms: Option<f64>,
    /// highalloc: label in the results.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// highalloc: share of memory requested as huge pages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub share: Option<f64>,
    /// highalloc: time from one request's start to the next's (ms; absent: all at once).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval_ms: Option<f64>,
    /// highalloc: GFP_HIGHUSER_MOVABLE or GFP_ALLOC_LIKE_HUGETLB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gfp: Option<String>,
}

/// `[tiering]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawTiering {
    /// `none` or `nimble`.
    pub policy: Option<String>,
    /// The node allocations try first.
    pub home_node: Option<i64>,
    /// `[tiering.nimble]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nimble: Option<RawNimble>,
}

/// `[tiering.nimble]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawNimble {
    /// Time between runs, ms.
    pub period_ms: Option<i64>,
    /// `native` or `split`.
    pub thp_migration: Option<String>,
    /// Copy threads.
    pub threads: Option<i64>,
    /// Pages copied as one batch (0: the whole call).
    pub pages_in_flight: Option<i64>,
    /// Exchange pages when the fast node is full.
    pub exchange: Option<bool>,
    /// Share of the fast node promotions leave free, percent.
    pub fast_reserve_pct: Option<f64>,
}
