//! Stage two for the kernel side of an experiment file: `[kernel]`, the kernel phases of
//! processes (`file_read`, `file_write`, `file_lookup`, `file_delete`, `kernel_alloc`,
//! `drop_caches`, `compact_memory`, `highalloc`) and the generated system workloads
//! (`[[kernel_build]]`, `[[file_reader]]`, `[[memhog]]`).

use super::raw::*;
use super::validate::{Phases, Validator, R};
use hugemm_hw::Nanos;
use hugemm_mm::{
    AccessedBits, BootOrder, CompactMode, KswapdMode, PerCpuSizes, Shrinker, WatermarkCheck,
};
use hugemm_sim::{KcompactdConfig, KernelConfig, PrezeroConfig, Stores, ZeroLists};
use hugemm_workload::kbuild::{self, FileIds, KernelBuild};
use hugemm_workload::{HighAllocGfp, KernelMem, Lifetime, Phase, ProcessSpec};

impl Validator<'_> {
    /// `[kernel]`; `policy` is the policy's name (pre-zeroing is on by default with
    /// `hawkeye`; order-9 preservation and hole-aware compaction with `hpolicy`, the
    /// paper's kernel, and Linux's allocator otherwise).
    pub(super) fn kernel(
        &self,
        k: &mut RawKernel,
        memory_bytes: u64,
        policy: &str,
    ) -> R<KernelConfig> {
        let fallback = k.fallback.clone().unwrap_or_else(|| "default".into());
        if !hugemm_mm::fallback::NAMES.contains(&fallback.as_str()) {
            return Err(self.not_one_of("kernel.fallback", &fallback, hugemm_mm::fallback::NAMES));
        }
        let rules_name = k
            .fallback_rules
            .clone()
            .unwrap_or_else(|| hugemm_mm::FallbackRules::default().name().into());
        let fallback_rules = hugemm_mm::FallbackRules::from_name(&rules_name).ok_or_else(|| {
            self.not_one_of(
                "kernel.fallback_rules",
                &rules_name,
                &hugemm_mm::FallbackRules::NAMES,
            )
        })?;
        k.fallback_rules = Some(rules_name);
        let d = KcompactdConfig::default();
        let raw = k.kcompactd.get_or_insert_with(Default::default);
        let kcompactd = KcompactdConfig {
            enabled: raw.enabled.unwrap_or(d.enabled),
            proactiveness: self.int(
                "kernel.kcompactd.compaction_proactiveness",
                raw.compaction_proactiveness,
                d.proactiveness as i64,
                0,
                100,
            )? as u32,
        };
        raw.enabled = Some(kcompactd.enabled);
        raw.compaction_proactiveness = Some(kcompactd.proactiveness as i64);
        k.fallback = Some(fallback.clone());
        // Sizes with the lists not mentioned are a forgotten `per_cpu_lists = true`; with
        // the lists turned off by name (as `--set kernel.per_cpu_lists=false` does to a
        // file that sizes them) the sizes wait unused.
        if k.per_cpu_sizes.is_some() && k.per_cpu_lists.is_none() {
            return Err(self.bad(
                "kernel.per_cpu_sizes",
                "kernel.per_cpu_lists = true beside it (it sizes the per-CPU lists)",
            ));
        }
        let per_cpu_sizes = self.choice(
            "kernel.per_cpu_sizes",
            k.per_cpu_sizes.as_deref(),
            PerCpuSizes::default().name(),
            &PerCpuSizes::NAMED,
        )?;
        let per_cpu_lists = *k.per_cpu_lists.get_or_insert(false);
        if per_cpu_lists {
            k.per_cpu_sizes = Some(per_cpu_sizes.name().into());
        }
        let watermark_boost_factor = self.int(
            "kernel.watermark_boost_factor",
            k.watermark_boost_factor,
            0,
            0,
            100_000,
        )? as u32;
        k.watermark_boost_factor = Some(i64::from(watermark_boost_factor));
        // Linux accepts 1-3000; 0 is the model's name for the gaps before the factor
        // existed (Linux 4.1).
        let watermark_scale_factor = self.int(
            "kernel.watermark_scale_factor",
            k.watermark_scale_factor,
            i64::from(hugemm_mm::WATERMARK_SCALE_FACTOR),
            0,
            3000,
        )? as u32;
        k.watermark_scale_factor = Some(i64::from(watermark_scale_factor));
        let buddy_merge_likely = *k.buddy_merge_likely.get_or_insert(false);
        let migrate_reserve = *k.migrate_reserve.get_or_insert(false);
        let buffer_heads = *k.buffer_heads.get_or_insert(false);
        let vfs_objects = *k.vfs_objects.get_or_insert(false);
        let shrinker = self.choice(
            "kernel.shrinker",
            k.shrinker.as_deref(),
            Shrinker::default().name(),
            &Shrinker::NAMED,
        )?;
        k.shrinker = Some(shrinker.name().into());
        let boot_order = self.choice(
            "kernel.boot_order",
            k.boot_order.as_deref(),
            BootOrder::default().name(),
            &BootOrder::NAMED,
        )?;
        k.boot_order = Some(boot_order.name().into());
        let boot = match k.boot.as_mut() {
            Some(raw) => self.boot(raw, memory_bytes)?,
            None => hugemm_mm::BootKernelMemory::default(),
        };
        let kswapd = self.choice(
            "kernel.kswapd",
            k.kswapd.as_deref(),
            KswapdMode::default().name(),
            &KswapdMode::NAMED,
        )?;
        k.kswapd = Some(kswapd.name().into());
        let watermark_check = self.choice(
            "kernel.watermark_check",
            k.watermark_check.as_deref(),
            WatermarkCheck::default().name(),
            &WatermarkCheck::NAMED,
        )?;
        k.watermark_check = Some(watermark_check.name().into());
        // Unset means Linux's own value for this memory, which the resolved file
        // leaves unset too (it follows the memory size).
        let min_free_kbytes = match k.min_free_kbytes {
            None => None,
            Some(kb) => Some(self.int(
                "kernel.min_free_kbytes",
                Some(kb),
                0,
                1,
                (memory_bytes / 1024 / 2) as i64,
            )? as u64),
        };
        let clear_pages = *k.clear_pages.get_or_insert(true);
        let h_policy = policy == "hpolicy";
        let preserve_huge_blocks = *k.preserve_huge_blocks.get_or_insert(h_policy);
        let default_mode = match h_policy {
            true => CompactMode::HoleAware,
            false => CompactMode::Linux,
        };
        let compaction = self.choice(
            "kernel.compaction",
            k.compaction.as_deref(),
            default_mode.name(),
            &CompactMode::NAMED,
        )?;
        k.compaction = Some(compaction.name().into());
        let accessed_bits = self.choice(
            "kernel.accessed_bits",
            k.accessed_bits.as_deref(),
            AccessedBits::default().name(),
            &AccessedBits::NAMED,
        )?;
        k.accessed_bits = Some(accessed_bits.name().into());
        let raw = k.prezero.get_or_insert_with(Default::default);
        let prezero = self.prezero(raw, policy == "hawkeye")?;
        Ok(KernelConfig {
            fallback,
            fallback_rules,
            kcompactd,
            per_cpu_lists,
            per_cpu_sizes,
            watermark_boost_factor,
            watermark_scale_factor,
            buddy_merge_likely,
            migrate_reserve,
            buffer_heads,
            vfs_objects,
            shrinker,
            boot_order,
            boot,
            kswapd,
            watermark_check,
            min_free_kbytes,
            clear_pages,
            prezero,
            preserve_huge_blocks,
            compaction,
            accessed_bits,
        })
    }

    /// `[kernel.boot]`, resolved in place: pageblock counts at most the machine's, free
    /// blocks listed by order from 0 up to the largest, 10 (where they fit is checked
    /// when the machine boots).
    fn boot(&self, r: &mut RawBoot, memory_bytes: u64) -> R<hugemm_mm::BootKernelMemory> {
        let pageblocks = (memory_bytes >> 21) as i64;
        let side = |name: &str,
                    blocks: &mut Option<i64>,
                    free: &mut Option<Vec<i64>>|
         -> R<hugemm_mm::BootPageblocks> {
            let key = format!("kernel.boot.{name}_pageblocks");
            let n = self.int(&key, *blocks, 0, 0, pageblocks)?;
            *blocks = Some(n);
            let list = free.get_or_insert_with(Vec::new);
            let key = format!("kernel.boot.{name}_free");
            if list.len() > 11 {
                return Err(self.bad(&key, "at most 11 counts, orders 0 to 10"));
            }
            if list.iter().any(|&c| !(0..=1_000_000_000).contains(&c)) {
                return Err(self.bad(&key, "counts of free blocks, each 0 or more"));
            }
            let frames: i64 = list.iter().enumerate().map(|(o, &c)| c << o).sum();
            if frames > n * 512 {
                return Err(self.bad(
                    &key,
                    format!(
                        "free blocks that fit in the {n} pageblocks of `{name}_pageblocks` \
                         ({frames} frames listed, {} in them)",
                        n * 512
                    ),
                ));
            }
            Ok(hugemm_mm::BootPageblocks {
                pageblocks: n as u32,
                free: list.iter().map(|&c| c as u64).collect(),
            })
        };
        let unmovable = side(
            "unmovable",
            &mut r.unmovable_pageblocks,
            &mut r.unmovable_free,
        )?;
        let reclaimable = side(
            "reclaimable",
            &mut r.reclaimable_pageblocks,
            &mut r.reclaimable_free,
        )?;
        Ok(hugemm_mm::BootKernelMemory {
            unmovable,
            reclaimable,
        })
    }

    /// `[kernel.prezero]`, resolved in place; on by default when `on` says so.
    fn prezero(&self, r: &mut RawPrezero, on: bool) -> R<PrezeroConfig> {
        let d = PrezeroConfig::default();
        let stores = self.choice(
            "kernel.prezero.stores",
            r.stores.as_deref(),
            "nt",
            &[("nt", Stores::NonTemporal), ("caching", Stores::Caching)],
        )?;
        let lists = self.choice(
            "kernel.prezero.lists",
            r.lists.as_deref(),
            "paper",
            &[
                ("paper", ZeroLists::Paper),
                ("released", ZeroLists::Released),
            ],
        )?;
        let period_ms = self.float(
            "kernel.prezero.period_ms",
            r.period_ms,
            d.period.0 as f64 / 1e6,
            0.001,
            1e9,
        )?;
        let cfg = PrezeroConfig {
            enabled: r.enabled.unwrap_or(on),
            rate_pages_per_s: self.int(
                "kernel.prezero.rate_pages_per_s",
                r.rate_pages_per_s,
                d.rate_pages_per_s as i64,
                1,
                1 << 40,
            )? as u64,
            period: Nanos((period_ms * 1e6) as u64),
            stores,
            lists,
            stress: r.stress.unwrap_or(d.stress),
        };
        *r = RawPrezero {
            enabled: Some(cfg.enabled),
            rate_pages_per_s: Some(cfg.rate_pages_per_s as i64),
            period_ms: Some(period_ms),
            stores: Some(r.stores.clone().unwrap_or_else(|| "nt".into())),
            lists: Some(r.lists.clone().unwrap_or_else(|| "paper".into())),
            stress: Some(cfg.stress),
        };
        Ok(cfg)
    }

    /// A process name: present, one line (it heads rows of text tables; `timeseries.csv`
    /// quotes commas and quotes as CSV does), and apart from `system`, the system rows'.
    pub(super) fn name(&self, key: &str, v: &Option<String>) -> R<String> {
        let name = v.clone().ok_or_else(|| self.bad(key, "a name"))?;
        if name.is_empty() || name == "system" || name.contains(char::is_control) {
            return Err(self.bad(
                key,
                format!(
                    "a non-empty name on one line (no newlines or other control characters), \
                     other than \"system\", found {name:?}"
                ),
            ));
        }
        Ok(name)
    }

    pub(super) fn start(&self, key: &str, v: &mut Option<f64>) -> R<Nanos> {
        let ms = self.float(key, *v, 0.0, 0.0, 1e12)?;
        *v = Some(ms);
        Ok(Nanos((ms * 1e6) as u64))
    }

    fn opt_size(&self, key: &str, v: &mut Option<RawSize>, default: u64, min: u64) -> R<u64> {
        let bytes = match v {
            Some(raw) => self.size(key, raw)?,
            None => default,
        };
        if bytes < min {
            return Err(self.bad(key, format!("at least {min} bytes, found {bytes}")));
        }
        *v = Some(RawSize::Bytes(bytes as i64));
        Ok(bytes)
    }

    fn seconds(&self, key: &str, v: &mut Option<f64>, default: Nanos) -> R<Nanos> {
        let s = self.float(key, *v, default.0 as f64 / 1e9, 0.0, 1e9)?;
        *v = Some(s);
        Ok(Nanos((s * 1e9) as u64))
    }

    /// An object of `bytes` in a slab of `order` (4 KiB pages): at least a byte, at most
    /// the slab.
    pub(super) fn slab_object(&self, key: &str, bytes: u64, order: u8) -> R<u64> {
        let slab = 4096u64 << order;
        if bytes == 0 || bytes > slab {
            return Err(self.bad(
                key,
                format!(
                    "an object size of 1 byte to its slab's {slab} bytes (order {order}), found {bytes}"
                ),
            ));
        }
        Ok(bytes)
    }

    /// Three percentages (slab orders 0, 1, 2) that sum to 100.
    fn order_percent(&self, key: &str, v: &mut Option<Vec<i64>>, default: [u8; 3]) -> R<[u8; 3]> {
        let Some(raw) = v else {
            *v = Some(default.iter().map(|&p| i64::from(p)).collect());
            return Ok(default);
        };
        let expected = "three percentages for slab orders 0, 1 and 2, each 0-100, summing to 100";
        let shares: Vec<u8> = raw
            .iter()
            .filter_map(|&p| u8::try_from(p).ok().filter(|&p| p <= 100))
            .collect();
        match <[u8; 3]>::try_from(shares) {
            Ok(p) if raw.len() == 3 && p.iter().map(|&x| u32::from(x)).sum::<u32>() == 100 => Ok(p),
            _ => Err(self.bad(key, format!("{expected}, found {raw:?}"))),
        }
    }

    /// Three object sizes in bytes, for slabs of order 0, 1 and 2, each fitting its slab.
    fn object_sizes(&self, key: &str, v: &mut Option<Vec<i64>>) -> R<[u64; 3]> {
        let Some(raw) = v else {
            let d = KernelBuild::default().reclaimable_object_bytes;
            *v = Some(d.iter().map(|&b| b as i64).collect());
            return Ok(d);
        };
        let expected = "three object sizes in bytes, for slabs of order 0, 1 and 2 (each 1 byte to its slab's 4096, 8192 or 16384 bytes)";
        let sizes: Vec<u64> = raw
            .iter()
            .enumerate()
            .filter_map(|(order, &b)| {
                u64::try_from(b)
                    .ok()
                    .filter(|&b| b >= 1 && b <= 4096 << order)
            })
            .collect();
        match <[u64; 3]>::try_from(sizes) {
            Ok(s) if raw.len() == 3 => Ok(s),
            _ => Err(self.bad(key, format!("{expected}, found {raw:?}"))),
        }
    }

    /// `[[kernel_build]]` number `i`: its worker processes.
    pub(super) fn kernel_build(
        &self,
        i: usize,
        b: &mut RawKernelBuild,
        seed: u64,
        ids: &mut FileIds,
    ) -> R<Vec<ProcessSpec>> {
        let key = |k: &str| format!("kernel_build[{i}].{k}");
        let d = KernelBuild::default();
        let name = self.name(&key("name"), &b.name)?;
        let start = self.start(&key("start_ms"), &mut b.start_ms)?;
        let int = |k: &str, v: &mut Option<i64>, default: u64, min: i64, max: i64| {
            let x = self.int(&key(k), *v, default as i64, min, max)?;
            *v = Some(x);
            Ok::<u64, super::ConfigError>(x as u64)
        };
        let jobs = int("jobs", &mut b.jobs, u64::from(d.jobs), 1, 256)? as u32;
        let builds = int("builds", &mut b.builds, u64::from(d.builds), 1, 100)? as u32;
        let units = int("units", &mut b.units, u64::from(d.units), 1, 1_000_000)? as u32;
        let headers = int(
            "headers",
            &mut b.headers,
            u64::from(d.headers),
            0,
            1_000_000,
        )? as u32;
        let header_reads = int(
            "header_reads",
            &mut b.header_reads,
            u64::from(d.header_reads),
            0,
            10_000,
        )? as u32;
        let heap_min = self.opt_size(&key("heap_min"), &mut b.heap_min, d.heap_bytes.0, 4096)?;
        let heap_max = self.opt_size(&key("heap_max"), &mut b.heap_max, d.heap_bytes.1, 4096)?;
        if heap_max < heap_min {
            return Err(self.bad(
                &key("heap_max"),
                format!("at least heap_min ({heap_min} bytes), found {heap_max}"),
            ));
        }
        let compute_ms = self.float(
            &key("compute_ms"),
            b.compute_ms,
            d.compute.0 as f64 / 1e6,
            0.0,
            1e9,
        )?;
        b.compute_ms = Some(compute_ms);
        let reclaimable_order_percent = self.order_percent(
            &key("reclaimable_order_percent"),
            &mut b.reclaimable_order_percent,
            d.reclaimable_order_percent,
        )?;
        let unmovable_slab_order = int(
            "unmovable_slab_order",
            &mut b.unmovable_slab_order,
            u64::from(d.unmovable_object.0),
            0,
            3,
        )? as u8;
        let unmovable_object_size = self.opt_size(
            &key("unmovable_object_size"),
            &mut b.unmovable_object_size,
            d.unmovable_object.1,
            0,
        )?;
        self.slab_object(
            &key("unmovable_object_size"),
            unmovable_object_size,
            unmovable_slab_order,
        )?;
        let reclaimable_object_bytes = self.object_sizes(
            &key("reclaimable_object_sizes"),
            &mut b.reclaimable_object_sizes,
        )?;
        let reclaimable_until_clean = *b.reclaimable_until_clean.get_or_insert(false);
        // Objects that live until `make clean` have no lifetime of their own; the resolved
        // configuration leaves the key out rather than show one that does nothing.
        let reclaimable_lifetime = if reclaimable_until_clean {
            if b.reclaimable_lifetime_s.is_some() {
                return Err(self.bad(
                    &key("reclaimable_lifetime_s"),
                    "no lifetime with reclaimable_until_clean = true (the memory lives \
                     until its unit's object file is deleted)",
                ));
            }
            d.reclaimable_lifetime
        } else {
            self.seconds(
                &key("reclaimable_lifetime_s"),
                &mut b.reclaimable_lifetime_s,
                d.reclaimable_lifetime,
            )?
        };
        let directories = int(
            "directories",
            &mut b.directories,
            u64::from(d.directories),
            0,
            1_000_000,
        )? as u32;
        let missing_names = int(
            "missing_names",
            &mut b.missing_names,
            u64::from(d.missing_names),
            0,
            10_000_000,
        )? as u32;
        let missing_lookups = int(
            "missing_lookups",
            &mut b.missing_lookups,
            u64::from(d.missing_lookups),
            0,
            100_000,
        )? as u32;
        let missing_per_unit = int(
            "missing_per_unit",
            &mut b.missing_per_unit,
            u64::from(d.missing_per_unit),
            0,
            1_000,
        )? as u32;
        if missing_lookups > 0 && missing_names == 0 {
            return Err(self.bad(
                &key("missing_lookups"),
                "0 without missing_names (the names each unit looks up are drawn from them)",
            ));
        }
        let build = KernelBuild {
            jobs,
            builds,
            units,
            source_bytes: self.opt_size(
                &key("source_size"),
                &mut b.source_size,
                d.source_bytes,
                0,
            )?,
            headers,
            header_bytes: self.opt_size(
                &key("header_size"),
                &mut b.header_size,
                d.header_bytes,
                0,
            )?,
            header_reads,
            object_bytes: self.opt_size(
                &key("object_size"),
                &mut b.object_size,
                d.object_bytes,
                0,
            )?,
            heap_bytes: (heap_min, heap_max),
            compute: Nanos((compute_ms * 1e6) as u64),
            unmovable_per_unit: self.opt_size(
                &key("unmovable_per_unit"),
                &mut b.unmovable_per_unit,
                d.unmovable_per_unit,
                0,
            )?,
            unmovable_pages_per_unit: self.opt_size(
                &key("unmovable_pages_per_unit"),
                &mut b.unmovable_pages_per_unit,
                d.unmovable_pages_per_unit,
                0,
            )?,
            unmovable_pages_lifetime: self.seconds(
                &key("unmovable_pages_lifetime_s"),
                &mut b.unmovable_pages_lifetime_s,
                d.unmovable_pages_lifetime,
            )?,
            pinned_per_unit: self.opt_size(
                &key("pinned_per_unit"),
                &mut b.pinned_per_unit,
                d.pinned_per_unit,
                0,
            )?,
            pinned_lifetime: self.seconds(
                &key("pinned_lifetime_s"),
                &mut b.pinned_lifetime_s,
                d.pinned_lifetime,
            )?,
            reclaimable_per_unit: self.opt_size(
                &key("reclaimable_per_unit"),
                &mut b.reclaimable_per_unit,
                d.reclaimable_per_unit,
                0,
            )?,
            reclaimable_order_percent,
            unmovable_object: (unmovable_slab_order, unmovable_object_size),
            reclaimable_object_bytes,
            reclaimable_lifetime,
            reclaimable_until_clean,
            cmd_bytes: self.opt_size(&key("cmd_size"), &mut b.cmd_size, d.cmd_bytes, 0)?,
            depfile_bytes: self.opt_size(
                &key("depfile_size"),
                &mut b.depfile_size,
                d.depfile_bytes,
                0,
            )?,
            directories,
            missing_names,
            missing_lookups,
            missing_per_unit,
            seed: seed.wrapping_add(i as u64),
        };
        Ok(build.processes(&name, start, ids))
    }

    /// `[[file_reader]]` number `i`.
    pub(super) fn file_reader(
        &self,
        i: usize,
        r: &mut RawFileReader,
        ids: &mut FileIds,
    ) -> R<ProcessSpec> {
        let key = |k: &str| format!("file_reader[{i}].{k}");
        let name = self.name(&key("name"), &r.name)?;
        let start = self.start(&key("start_ms"), &mut r.start_ms)?;
        let files = self.int(&key("files"), r.files, 1, 1, 1_000_000)?;
        r.files = Some(files);
        let size = r
            .file_size
            .as_ref()
            .ok_or_else(|| self.bad(&key("file_size"), "the size of each file, e.g. \"1GiB\""))?;
        let bytes = self.size(&key("file_size"), size)?;
        if bytes == 0 {
            return Err(self.bad(&key("file_size"), "a size above zero"));
        }
        let delete_every = self.int(&key("delete_every"), r.delete_every, 0, 0, 1_000_000)?;
        r.delete_every = Some(delete_every);
        let mut p = kbuild::file_reader(&name, files as u32, bytes, delete_every as u32, ids);
        p.start = start;
        Ok(p)
    }

    /// `[[memhog]]` number `i`.
    pub(super) fn memhog(&self, i: usize, m: &mut RawMemhog, memory: u64) -> R<ProcessSpec> {
        let key = |k: &str| format!("memhog[{i}].{k}");
        let name = self.name(&key("name"), &m.name)?;
        let start = self.start(&key("start_ms"), &mut m.start_ms)?;
        let size = m
            .size
            .as_ref()
            .ok_or_else(|| self.bad(&key("size"), "the memory to touch, e.g. \"2GiB\""))?;
        let bytes = self.size(&key("size"), size)?;
        if bytes == 0 || bytes % 4096 != 0 || bytes > memory {
            return Err(self.bad(&key("size"), format!("a multiple of 4 KiB no larger than the machine's memory ({memory} bytes), found {bytes}")));
        }
        let hold = self.float(&key("hold_ms"), m.hold_ms, 0.0, 0.0, 1e12)?;
        m.hold_ms = Some(hold);
        let mut p = kbuild::memhog(&name, bytes, Nanos((hold * 1e6) as u64));
        p.start = start;
        Ok(p)
    }
}

impl Phases<'_, '_> {
    /// The kernel phases; `None` when `op` is not one of them.
    pub(super) fn kernel_phase(
        &mut self,
        j: usize,
        op: &str,
        ph: &mut RawPhase,
    ) -> Option<R<Phase>> {
        Some(match op {
            "file_read" | "file_write" => self.file_io(j, op, ph),
            "file_lookup" => self.only(j, ph, op, &["file", "found"]).and_then(|()| {
                let found = ph.found.ok_or_else(|| {
                    self.v.bad(
                        &self.key(j, "found"),
                        "true (the name exists: an inode and a dentry) or false (a negative dentry)",
                    )
                })?;
                Ok(Phase::FileLookup {
                    file: self.file(j, ph)?,
                    found,
                })
            }),
            "file_delete" => self.only(j, ph, op, &["file"]).and_then(|()| {
                Ok(Phase::FileDelete {
                    file: self.file(j, ph)?,
                })
            }),
            "kernel_alloc" => self.kernel_alloc(j, ph),
            "drop_caches" => self.only(j, ph, op, &[]).map(|()| Phase::DropCaches),
            "compact_memory" => self.only(j, ph, op, &[]).map(|()| Phase::CompactMemory),
            "highalloc" => self.highalloc(j, ph),
            "balloon" => self.balloon(j, ph),
            _ => return None,
        })
    }

    fn file(&self, j: usize, ph: &RawPhase) -> R<hugemm_workload::FileId> {
        let name = ph
            .file
            .as_deref()
            .filter(|n| !n.is_empty())
            .ok_or_else(|| self.v.bad(&self.key(j, "file"), "the name of a file"))?;
        Ok(self.v.file_id(name))
    }

    /// `op = "file_read"` or `"file_write"`: a file, its bytes and where they start.
    fn file_io(&mut self, j: usize, op: &str, ph: &mut RawPhase) -> R<Phase> {
        self.only(j, ph, op, &["file", "size", "offset"])?;
        let file = self.file(j, ph)?;
        let size = ph.size.as_ref().ok_or_else(|| {
            self.v.bad(
                &self.key(j, "size"),
                "the bytes to read or write, e.g. \"64MiB\"",
            )
        })?;
        let bytes = self.v.size(&self.key(j, "size"), size)?;
        let offset = match &ph.offset {
            Some(o) => self.v.size(&self.key(j, "offset"), o)?,
            None => 0,
        };
        if bytes == 0 || offset.checked_add(bytes).is_none_or(|end| end > 1 << 50) {
            return Err(self.v.bad(
                &self.key(j, "size"),
                format!("a size above zero ending below 1 PiB, found {bytes} at offset {offset}"),
            ));
        }
        ph.offset = Some(RawSize::Bytes(offset as i64));
        Ok(if op == "file_write" {
            Phase::FileWrite {
                file,
                offset,
                bytes,
            }
        } else {
            Phase::FileRead {
                file,
                offset,
                bytes,
            }
        })
    }

    /// `op = "balloon"`: the balloon's target size.
    fn balloon(&mut self, j: usize, ph: &mut RawPhase) -> R<Phase> {
        self.only(j, ph, "balloon", &["size"])?;
        let size = ph.size.as_ref().ok_or_else(|| {
            self.v.bad(
                &self.key(j, "size"),
                "the balloon's target size, e.g. \"1GiB\" (0 deflates it)",
            )
        })?;
        let target = self.v.size(&self.key(j, "size"), size)?;
        if target > self.memory || target % 4096 != 0 {
            return Err(self.v.bad(
                &self.key(j, "size"),
                format!(
                    "whole 4 KiB pages no more than the machine's memory, found {target} bytes"
                ),
            ));
        }
        Ok(Phase::Balloon { target })
    }

    fn kernel_alloc(&mut self, j: usize, ph: &mut RawPhase) -> R<Phase> {
        self.only(
            j,
            ph,
            "kernel_alloc",
            &[
                "kind",
                "order",
                "object_size",
                "size",
                "lifetime",
                "lifetime_ms",
                "file",
            ],
        )?;
        let kind = self.v.choice(
            &self.key(j, "kind"),
            ph.kind.as_deref(),
            "unmovable",
            &[
                ("unmovable", KernelMem::Unmovable),
                ("reclaimable", KernelMem::Reclaimable),
            ],
        )?;
        ph.kind = Some(ph.kind.clone().unwrap_or_else(|| "unmovable".into()));
        let order = self.v.int(&self.key(j, "order"), ph.order, 0, 0, 10)?;
        ph.order = Some(order);
        let size = ph.size.as_ref().ok_or_else(|| {
            self.v
                .bad(&self.key(j, "size"), "the bytes to allocate, e.g. \"1MiB\"")
        })?;
        let bytes = self.v.size(&self.key(j, "size"), size)?;
        if bytes == 0 || bytes > self.memory {
            return Err(self.v.bad(
                &self.key(j, "size"),
                format!("a size above zero no larger than the machine's memory, found {bytes}"),
            ));
        }
        let object_bytes = match &ph.object_size {
            None => None,
            Some(raw) => {
                let key = self.key(j, "object_size");
                let object = self.v.size(&key, raw)?;
                Some(self.v.slab_object(&key, object, order as u8)?)
            }
        };
        let lifetime = self.lifetime(j, ph)?;
        Ok(Phase::KernelAlloc {
            kind,
            order: order as u8,
            object_bytes,
            bytes,
            lifetime,
        })
    }

    fn lifetime(&self, j: usize, ph: &mut RawPhase) -> R<Lifetime> {
        let name = ph.lifetime.clone().unwrap_or_else(|| "process".into());
        let ms = |ph: &RawPhase| {
            let v = ph.lifetime_ms.ok_or_else(|| {
                self.v.bad(
                    &self.key(j, "lifetime_ms"),
                    format!("a time in ms for lifetime \"{name}\""),
                )
            })?;
            let ms = self
                .v
                .float(&self.key(j, "lifetime_ms"), Some(v), 0.0, 0.0, 1e12)?;
            Ok::<Nanos, super::ConfigError>(Nanos((ms * 1e6) as u64))
        };
        if name != "until-deleted" && ph.file.is_some() {
            return Err(self.v.bad(
                &self.key(j, "file"),
                format!("no file for lifetime \"{name}\" (only \"until-deleted\" names one)"),
            ));
        }
        let life = match name.as_str() {
            "process" | "forever" | "until-deleted" if ph.lifetime_ms.is_some() => {
                return Err(self.v.bad(
                    &self.key(j, "lifetime_ms"),
                    format!("no lifetime_ms for lifetime \"{name}\""),
                ))
            }
            "process" => Lifetime::Process,
            "forever" => Lifetime::Forever,
            "fixed" => Lifetime::Fixed(ms(ph)?),
            "exponential" => Lifetime::Exponential(ms(ph)?),
            "until-deleted" => Lifetime::UntilDeleted(self.file(j, ph)?),
            other => {
                return Err(self.v.bad(
                    &self.key(j, "lifetime"),
                    format!(
                        "one of process, forever, fixed, exponential, until-deleted, \
                         found \"{other}\""
                    ),
                ))
            }
        };
        ph.lifetime = Some(name);
        Ok(life)
    }

    fn highalloc(&mut self, j: usize, ph: &mut RawPhase) -> R<Phase> {
        self.only(
            j,
            ph,
            "highalloc",
            &["label", "share", "interval_ms", "gfp"],
        )?;
        let label = ph.label.clone().unwrap_or_else(|| format!("phase-{j}"));
        ph.label = Some(label.clone());
        let share = self
            .v
            .float(&self.key(j, "share"), ph.share, 0.95, 0.0, 1.0)?;
        ph.share = Some(share);
        let interval = match ph.interval_ms {
            None => None,
            Some(ms) => {
                let ms = self
                    .v
                    .float(&self.key(j, "interval_ms"), Some(ms), 0.0, 0.0, 1e9)?;
                Some(Nanos((ms * 1e6) as u64))
            }
        };
        let default = HighAllocGfp::NAMED[0].0;
        let gfp = self.v.choice(
            &self.key(j, "gfp"),
            ph.gfp.as_deref(),
            default,
            &HighAllocGfp::NAMED,
        )?;
        ph.gfp.get_or_insert_with(|| default.to_string());
        Ok(Phase::HighAlloc {
            label,
            share,
            interval,
            gfp,
        })
    }
}
