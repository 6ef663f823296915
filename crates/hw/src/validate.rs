//! The second stage of profile loading: checks that a parsed [`MachineProfile`] describes a
//! machine the model can build, and names the key and the expectation of the first value
//! that does not (conventions 6).
//!
//! This module only judges values; it must not change them nor fill in defaults.

use crate::error::{ProfileError, Result};
use crate::profile::{
    AssocProfile, CacheLevelProfile, GuestProfile, KernelCosts, MachineProfile, MigrationCosts,
    TierProfile, TlbProfile,
};
use crate::units::PageSize;

/// Cache line size the model assumes, in bytes.
pub(crate) const LINE_BYTES: u64 = 64;

/// Validates `p`, naming `origin` in the error.
pub(crate) fn validate(p: &MachineProfile, origin: &str) -> Result<()> {
    let v = Validator { origin };
    v.check(
        !p.name.trim().is_empty(),
        "name",
        "a non-empty name",
        "an empty string",
    )?;
    v.check(p.cores >= 1, "cores", "at least 1", &p.cores.to_string())?;
    v.positive("freq_ghz", p.freq_ghz)?;
    validate_tlb(&v, &p.tlb)?;
    v.assoc("pwc.pml4e", p.pwc.pml4e)?;
    v.assoc("pwc.pdpte", p.pwc.pdpte)?;
    v.assoc("pwc.pde", p.pwc.pde)?;
    validate_caches(&v, &p.caches)?;
    v.positive("dram_latency_ns", p.dram_latency_ns)?;
    if let Some(x) = p.dram_gbps {
        v.positive("dram_gbps", x)?;
    }
    validate_tiers(&v, &p.tiers, p.dram_latency_ns)?;
    v.check(
        p.mlp.is_finite() && p.mlp >= 1.0,
        "mlp",
        "a number >= 1",
        &p.mlp.to_string(),
    )?;
    if let Some(d) = p.dram_mlp {
        let expected = format!(
            "a number from 1 to mlp = {} (DRAM misses hold fill buffers too)",
            p.mlp
        );
        v.check(
            d.is_finite() && (1.0..=p.mlp).contains(&d),
            "dram_mlp",
            &expected,
            &d.to_string(),
        )?;
    }
    if let Some(w) = p.reorder_window {
        v.check(
            w.is_finite() && w >= 1.0,
            "reorder_window",
            "a number of instructions >= 1",
            &w.to_string(),
        )?;
    }
    let w = p.page_walkers;
    v.check(w >= 1, "page_walkers", "at least 1", &w.to_string())?;
    v.non_negative("walk_base_cycles", p.walk_base_cycles)?;
    if let Some(g) = &p.guest {
        validate_guest(&v, g, p.tlb.stlb.ways)?;
    }
    v.positive("issue_cycles", p.issue_cycles)?;
    validate_costs(&v, &p.costs)
}

fn validate_tlb(v: &Validator, t: &TlbProfile) -> Result<()> {
    let mut seen = [false; 3];
    for (i, l1) in t.l1.iter().enumerate() {
        let key = format!("tlb.l1[{i}]");
        v.check(
            !l1.sizes.is_empty(),
            &format!("{key}.sizes"),
            "at least one page size",
            "[]",
        )?;
        for &size in &l1.sizes {
            let dup = std::mem::replace(&mut seen[size.index()], true);
            let expected = "each page size in at most one L1 TLB";
            v.check(
                !dup,
                &format!("{key}.sizes"),
                expected,
                &format!("{} again", size.label()),
            )?;
        }
        v.assoc(
            &key,
            AssocProfile {
                entries: l1.entries,
                ways: l1.ways,
            },
        )?;
    }
    let s = &t.stlb;
    v.assoc(
        "tlb.stlb",
        AssocProfile {
            entries: s.entries,
            ways: s.ways,
        },
    )?;
    v.non_negative("tlb.stlb.hit_cycles", s.hit_cycles)?;
    for size in PageSize::ALL {
        let m = s.max_ways.get(size);
        let key = format!("tlb.stlb.max_ways.{}", size.label());
        let expected = format!("at most tlb.stlb.ways = {}", s.ways);
        v.check(m <= s.ways, &key, &expected, &m.to_string())?;
    }
    Ok(())
}

/// Each tier named, with a positive latency no lower than the node before it (tiers are
/// listed nearest first) and a positive bandwidth.
fn validate_tiers(v: &Validator, tiers: &[TierProfile], dram_latency_ns: f64) -> Result<()> {
    let mut previous = dram_latency_ns;
    for (i, t) in tiers.iter().enumerate() {
        let key = |f: &str| format!("tiers[{i}].{f}");
        v.check(
            !t.name.trim().is_empty(),
            &key("name"),
            "a non-empty name",
            "\"\"",
        )?;
        v.positive(&key("latency_ns"), t.latency_ns)?;
        let expected = format!("at least the nearer node's latency ({previous} ns)");
        v.check(
            t.latency_ns >= previous,
            &key("latency_ns"),
            &expected,
            &t.latency_ns.to_string(),
        )?;
        previous = t.latency_ns;
        v.positive(&key("gbps"), t.gbps)?;
    }
    Ok(())
}

fn validate_guest(v: &Validator, g: &GuestProfile, stlb_ways: u32) -> Result<()> {
    let f = g.host_huge_fraction;
    v.check(
        (0.0..=1.0).contains(&f),
        "guest.host_huge_fraction",
        "a fraction in [0, 1]",
        &f.to_string(),
    )?;
    v.non_negative("guest.host_walk_base_cycles", g.host_walk_base_cycles)?;
    v.non_negative("guest.nested_tlb_hit_cycles", g.nested_tlb_hit_cycles)?;
    v.non_negative("guest.host_pt_extra_ns", g.host_pt_extra_ns)?;
    v.assoc("guest.nested_tlb", g.nested_tlb)?;
    v.assoc("guest.host_pwc.pml4e", g.host_pwc.pml4e)?;
    v.assoc("guest.host_pwc.pdpte", g.host_pwc.pdpte)?;
    v.assoc("guest.host_pwc.pde", g.host_pwc.pde)?;
    if let Some(w) = g.stlb_splintered_ways {
        let expected = format!("at most tlb.stlb.ways = {stlb_ways}");
        v.check(
            w <= stlb_ways,
            "guest.stlb_splintered_ways",
            &expected,
            &w.to_string(),
        )?;
    }
    Ok(())
}

fn validate_migration(v: &Validator, m: &MigrationCosts) -> Result<()> {
    let key = |f: &str| format!("costs.migration.{f}");
    v.non_negative(&key("call_ns"), m.call_ns)?;
    v.non_negative(&key("page_ns"), m.page_ns)?;
    v.non_negative(&key("huge_page_ns"), m.huge_page_ns)?;
    v.non_negative(&key("free_ns"), m.free_ns)?;
    v.non_negative(&key("thread_launch_ns"), m.thread_launch_ns)?;
    v.positive(&key("link_gbps"), m.link_gbps)
}

fn validate_caches(v: &Validator, caches: &[CacheLevelProfile]) -> Result<()> {
    v.check(
        !caches.is_empty(),
        "caches",
        "at least one cache level",
        "none",
    )?;
    let mut previous = 0.0;
    for (i, c) in caches.iter().enumerate() {
        let key = |f: &str| format!("caches[{i}].{f}");
        v.check(
            !c.name.trim().is_empty(),
            &key("name"),
            "a non-empty name",
            "\"\"",
        )?;
        let found = c.bytes.to_string();
        let whole = c.bytes > 0 && c.bytes % LINE_BYTES == 0;
        v.check(
            whole,
            &key("bytes"),
            "a positive multiple of 64 (the line size)",
            &found,
        )?;
        let lines = c.bytes / LINE_BYTES;
        let entries = u32::try_from(lines).unwrap_or(u32::MAX);
        v.check(entries < u32::MAX, &key("bytes"), "at most 256 GiB", &found)?;
        v.assoc(
            &format!("caches[{i}]"),
            AssocProfile {
                entries,
                ways: c.ways,
            },
        )?;
        v.positive(&key("latency_cycles"), c.latency_cycles)?;
        let expected = format!("at least the previous level's latency ({previous})");
        v.check(
            c.latency_cycles >= previous,
            &key("latency_cycles"),
            &expected,
            &c.latency_cycles.to_string(),
        )?;
        previous = c.latency_cycles;
    }
    Ok(())
}

fn validate_costs(v: &Validator, c: &KernelCosts) -> Result<()> {
    v.non_negative("costs.fault_trap_ns", c.fault_trap_ns)?;
    if let Some(x) = c.vm_fault_trap_ns {
        v.non_negative("costs.vm_fault_trap_ns", x)?;
    }
    v.non_negative("costs.alloc_ns", c.alloc_ns)?;
    v.positive("costs.zero_gbps", c.zero_gbps)?;
    v.positive("costs.copy_gbps", c.copy_gbps)?;
    v.non_negative("costs.pte_update_ns", c.pte_update_ns)?;
    v.non_negative("costs.tlb_flush_ns", c.tlb_flush_ns)?;
    if let Some(x) = c.zero_nt_gbps {
        v.positive("costs.zero_nt_gbps", x)?;
    }
    if let Some(x) = c.scan_gbps {
        v.positive("costs.scan_gbps", x)?;
    }
    if let Some(x) = c.compound_tail_ns {
        v.non_negative("costs.compound_tail_ns", x)?;
    }
    if let Some(x) = c.scan_page_ns {
        v.non_negative("costs.scan_page_ns", x)?;
    }
    match &c.migration {
        Some(m) => validate_migration(v, m),
        None => Ok(()),
    }
}

/// Builds [`ProfileError::Invalid`] for one origin.
struct Validator<'a> {
    origin: &'a str,
}

impl Validator<'_> {
    fn check(&self, ok: bool, key: &str, expected: &str, found: &str) -> Result<()> {
        if ok {
            return Ok(());
        }
        Err(ProfileError::Invalid {
            origin: self.origin.to_string(),
            key: key.to_string(),
            expected: expected.to_string(),
            found: found.to_string(),
        })
    }

    fn positive(&self, key: &str, x: f64) -> Result<()> {
        self.check(
            x.is_finite() && x > 0.0,
            key,
            "a finite number > 0",
            &x.to_string(),
        )
    }

    fn non_negative(&self, key: &str, x: f64) -> Result<()> {
        self.check(
            x.is_finite() && x >= 0.0,
            key,
            "a finite number >= 0",
            &x.to_string(),
        )
    }

    /// `entries` and `ways` of the structure at `key`: both positive, ways dividing
    /// entries into a power-of-two number of sets.
    fn assoc(&self, key: &str, a: AssocProfile) -> Result<()> {
        let (e, w) = (a.entries, a.ways);
        let entries_key = format!("{key}.entries");
        let ways_key = format!("{key}.ways");
        self.check(e >= 1, &entries_key, "at least 1", &e.to_string())?;
        self.check(w >= 1, &ways_key, "at least 1", &w.to_string())?;
        let max = crate::setassoc::MAX_WAYS;
        let expected = format!("at most {max} (LRU ages are 7-bit)");
        self.check(w as usize <= max, &ways_key, &expected, &w.to_string())?;
        let divides = e % w == 0;
        self.check(
            divides,
            &ways_key,
            &format!("a divisor of {entries_key} = {e}"),
            &w.to_string(),
        )?;
        let sets = e / w;
        let expected = format!("entries / ways to be a power of two (sets), {e} / {w} = {sets}");
        self.check(sets.is_power_of_two(), &ways_key, &expected, &w.to_string())
    }
}
