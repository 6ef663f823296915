//! The second dimension of a virtual machine's page walk: translating guest-physical
//! addresses to host-physical ones (AMD's nested paging, Intel's EPT).
//!
//! # Model
//!
//! A guest's TLB miss walks the guest's page table as on bare metal (`mmu.rs`), but every
//! guest page-table page sits at a guest-physical address (gPA) that the host must
//! translate before the guest entry can be loaded, and so does the final gPA of the data:
//! up to 4 × 5 + 4 = 24 loads for a 4 KB guest page on 4 KB host pages (Bhargava et al.,
//! "Accelerating two-dimensional page walks for virtualized systems", ASPLOS'08). Each
//! such gPA is translated by [`Nested::translate`]:
//!
//! 1. the **nested TLB** (AMD's NTLB, 16 entries on early parts; Intel keeps EPT's
//!    "guest-physical mappings" in its TLBs, SDM vol. 3C §29.4) caches gPA → hPA per host
//!    page; a hit costs `nested_tlb_hit_cycles`;
//! 2. on a miss, a **host walk** from the host's root down to the host page's leaf. The
//!    host's **paging-structure caches** (keyed by gPA, as Intel's EPT paging-structure
//!    caches and AMD's page-walk cache hold host entries) let it start lower, exactly as
//!    the guest's PWCs do for the guest dimension; each host page-table line is looked up
//!    in the core's caches beside data and guest page-table lines. It costs
//!    `host_walk_base_cycles` plus the latency of each line; a line no cache holds
//!    costs `guest.host_pt_extra_ns` more than a data line from memory (0 unless a
//!    calibration measured otherwise: docs/calibration.md, "The host's page-table
//!    lines").
//!
//! The guest's own page-walk caches are what Intel calls *combined* paging-structure
//! caches: keyed by guest-virtual address, they yield the host-physical address of the
//! next guest table, so a guest PWC hit skips both that guest level and its host
//! translation. That is how `mmu.rs` uses them already.
//!
//! **Page sizes.** The TLB caches the combined gVA → hPA translation at the *smaller* of
//! the guest's and the host's page size: a guest 2 MB page on host 4 KB pages takes one
//! TLB entry per 4 KB it touches ("splintering"), while the guest walk still ends at the
//! guest's PDE. [`Nested::effective`] gives that size. The host maps guest memory with
//! 4 KB and 2 MB pages only (1 GB host pages are not modelled). The STLB may hold such
//! splintered pieces in fewer ways than native 4 KB translations
//! (`guest.stlb_splintered_ways`, a separate size class in `tags.rs`): neither vendor
//! documents how its second-level TLB treats them, and the calibration data of both
//! development machines say it keeps far fewer of them than native ones
//! (docs/calibration.md).
//!
//! **Host backing.** Which guest-physical 2 MB regions the host maps with a 2 MB page is
//! decided in one of two ways:
//!
//! - by the profile's `guest.host_huge_fraction` alone (no host model): a region is huge
//!   when its number's place in a fixed low-discrepancy sequence ([`weyl`]) falls below
//!   the fraction, so the same regions are huge on every run and any stretch of guest
//!   memory, however short, has the fraction's share of huge ones;
//! - by a **host model** (`hugemm-sim`'s `host/`): a host kernel and its policy decide,
//!   and the engine writes each region's size into a map here
//!   ([`Nested::set_host_huge`]). Guest page-table pages, whose gPAs are synthetic
//!   ([`Nested::pt_gpa`]), then follow the same rule at the share of the guest's backed
//!   regions the host currently maps huge: the guest kernel allocates its page tables
//!   from the same memory as data, so they get the same share of host huge pages.
//!
//! **Host page-table lines** are tagged like the guest's ([`TagScheme::pt_line`]) in the
//! reserved address space [`HOST_ASID`], with the gPA as the "virtual" address.
//!
//! What this leaves out: host-side page faults (a guest touching guest-physical memory
//! the host has not backed yet is a kernel cost, not a walk), host TLB shootdowns, and the
//! NTLB's replacement details (modelled as LRU like every array here).

use crate::cache::CacheHierarchy;
use crate::profile::{AssocProfile, GuestProfile};
use crate::setassoc::SetAssoc;
use crate::tags::TagScheme;
use crate::units::{PageSize, VirtAddr};

/// The address-space identifier host page-table lines and nested-TLB entries are tagged
/// with (tags keep 16 ASID bits; guest processes never reach it).
pub(crate) const HOST_ASID: u32 = 0xFFFF;

/// The highest page-table level with a paging-structure cache (PML4).
const PWC_TOP: u32 = 4;

/// The host dimension of one guest core's MMU (see the module doc).
#[derive(Clone, Debug)]
pub(crate) struct Nested {
    ntlb: SetAssoc,
    /// Host paging-structure caches for levels 2 (PDE), 3 (PDPTE), 4 (PML4E).
    host_pwc: [SetAssoc; 3],
    /// Regions whose [`weyl`] value is below this (out of 2^32) are backed by host 2 MB pages
    /// (with a host map: only the regions outside it).
    huge_threshold: u64,
    /// With a host model: one bit per guest-physical 2 MB region, set when the host maps
    /// it with a 2 MB page.
    map: Option<HostMap>,
    host_walk_base_cycles: f64,
    /// `guest.host_pt_extra_ns` in cycles: added to a host page-table line from memory.
    host_pt_extra_cycles: f64,
    ntlb_hit_cycles: f64,
    levels: u32,
}

fn array(a: AssocProfile) -> SetAssoc {
    SetAssoc::new(a.entries as usize, a.ways as usize)
}

impl Nested {
    /// The host dimension `guest` describes, for a host of `levels` page-table levels
    /// and a core at `freq_ghz`.
    pub(crate) fn new(guest: &GuestProfile, levels: u32, freq_ghz: f64) -> Nested {
        let fraction = guest.host_huge_fraction;
        Nested {
            ntlb: array(guest.nested_tlb),
            host_pwc: [
                array(guest.host_pwc.pde),
                array(guest.host_pwc.pdpte),
                array(guest.host_pwc.pml4e),
            ],
            huge_threshold: threshold(fraction),
            map: None,
            host_walk_base_cycles: guest.host_walk_base_cycles,
            host_pt_extra_cycles: guest.host_pt_extra_ns * freq_ghz,
            ntlb_hit_cycles: guest.nested_tlb_hit_cycles,
            levels,
        }
    }

    /// Let a host model decide the host's page sizes from now on, for `regions` 2 MB
    /// regions of guest-physical memory, all on 4 KB host pages until
    /// [`Nested::set_host_huge`] says otherwise.
    pub(crate) fn use_host_map(&mut self, regions: u64) {
        self.map = Some(HostMap {
            bits: vec![0; regions.div_ceil(64) as usize],
            regions,
            huge: 0,
        });
        self.huge_threshold = 0;
    }

    /// With a host map: the host now maps guest-physical 2 MB region `region` with a
    /// page of 2 MB (`huge`) or 4 KB. Returns whether that changed anything.
    pub(crate) fn set_host_huge(&mut self, region: u64, huge: bool) -> bool {
        let Some(m) = self.map.as_mut() else {
            return false;
        };
        if region >= m.regions {
            return false;
        }
        let (word, bit) = ((region / 64) as usize, 1u64 << (region % 64));
        if (m.bits[word] & bit != 0) == huge {
            return false;
        }
        m.bits[word] ^= bit;
        if huge {
            m.huge += 1;
        } else {
            m.huge -= 1;
        }
        self.huge_threshold = threshold(m.huge as f64 / m.regions.max(1) as f64);
        true
    }

    /// The page size the host maps guest-physical byte `gpa` with.
    #[inline]
    pub(crate) fn host_size(&self, gpa: u64) -> PageSize {
        if let Some(m) = &self.map {
            let region = gpa >> 21;
            if region < m.regions {
                return if m.bits[(region / 64) as usize] >> (region % 64) & 1 != 0 {
                    PageSize::Huge
                } else {
                    PageSize::Base
                };
            }
        }
        if (weyl(gpa >> 21) >> 32) < self.huge_threshold {
            PageSize::Huge
        } else {
            PageSize::Base
        }
    }

    /// The size the TLB caches a guest `size` page at gPA `gpa` with: the smaller of the
    /// guest's and the host's page.
    #[inline]
    pub(crate) fn effective(&self, size: PageSize, gpa: u64) -> PageSize {
        match size {
            PageSize::Base => PageSize::Base,
            _ => self.host_size(gpa),
        }
    }

    /// The guest-physical address of the page-table page at `level` (1 = PT) that
    /// translates `va` in `asid`, given `entry_shift`, the log2 of the bytes one entry at
    /// that level maps. Page-table pages of neighbouring regions are neighbours in
    /// guest-physical memory, as a guest kernel allocating them at fault time mostly
    /// places them: the host translations of a walk's tables share host page-table lines
    /// and paging-structure-cache entries as they would. The area sits at the top of a
    /// 48-bit guest-physical space: 2^47 + (level - 1) * 2^45 + (asid mod 64) * 2^39 +
    /// table index * 4 KB (the table index of `va` at that level needs at most 27 bits).
    #[inline]
    pub(crate) fn pt_gpa(asid: u32, va: VirtAddr, level: u32, entry_shift: u32) -> u64 {
        let table = (va.0 & ((1 << 48) - 1)) >> (entry_shift + 9);
        (1 << 47)
            | (u64::from(level.saturating_sub(1) & 3) << 45)
            | (u64::from(asid & 63) << 39)
            | ((table & ((1 << 27) - 1)) << 12)
    }

    /// Translates guest-physical byte `gpa` to host-physical: the nested TLB, else a host
    /// walk. Returns the cycles spent.
    #[inline]
    pub(crate) fn translate(
        &mut self,
        gpa: u64,
        tags: &TagScheme,
        caches: &mut CacheHierarchy,
    ) -> f64 {
        let size = self.host_size(gpa);
        let ga = VirtAddr(gpa);
        if self.ntlb.access(tags.tlb(HOST_ASID, ga, size)) {
            return self.ntlb_hit_cycles;
        }
        let leaf = size.index() as u32 + 1;
        let mut start = self.levels;
        for level in (leaf + 1)..=self.levels.min(PWC_TOP) {
            if self.host_pwc[(level - 2) as usize].access(tags.pwc(HOST_ASID, ga, level)) {
                start = level - 1;
                break;
            }
        }
        let mut cycles = self.ntlb_hit_cycles + self.host_walk_base_cycles;
        for level in (leaf..=start).rev() {
            let found = caches.access_level(tags.pt_line(HOST_ASID, ga, level));
            cycles += caches.latency_of(found);
            if found == caches.depth() {
                cycles += self.host_pt_extra_cycles;
            }
        }
        cycles
    }

    /// Drops every cached host translation (a host-side flush, or a cold core).
    pub(crate) fn flush(&mut self) {
        self.ntlb.clear();
        self.host_pwc.iter_mut().for_each(SetAssoc::clear);
    }
}

/// The host's page sizes as a host model decides them.
#[derive(Clone, Debug)]
struct HostMap {
    bits: Vec<u64>,
    regions: u64,
    /// Regions set.
    huge: u64,
}

/// The threshold (out of 2^32) below which a region's [`weyl`] value makes it huge, for a
/// share `fraction`.
fn threshold(fraction: f64) -> u64 {
    (fraction.clamp(0.0, 1.0) * 4_294_967_296.0).round() as u64
}

/// Region `x`'s place in a Weyl sequence, `frac(x / golden ratio)` scaled to 2^64: the
/// regions below a threshold are spread evenly over guest memory *in every window*, not
/// only on average (a window of n regions holds the fraction's share to within about
/// log n regions; a hash gave 37.5% instead of 53% over the 32 regions of a 64 MiB
/// buffer), and without the period a stride could alias with.
#[inline]
fn weyl(x: u64) -> u64 {
    x.wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::PwcProfile;

    fn guest(fraction: f64) -> GuestProfile {
        let a = |entries| AssocProfile {
            entries,
            ways: entries,
        };
        GuestProfile {
            host_huge_fraction: fraction,
            host_walk_base_cycles: 10.0,
            nested_tlb_hit_cycles: 1.0,
            nested_tlb: a(16),
            host_pwc: PwcProfile {
                pml4e: a(2),
                pdpte: a(4),
                pde: a(16),
            },
            stlb_splintered_ways: None,
            host_pt_extra_ns: 0.0,
        }
    }

    #[test]
    fn the_huge_fraction_is_met_over_many_regions_and_is_stable() {
        for f in [0.0, 0.25, 0.6, 1.0] {
            let n = Nested::new(&guest(f), 4, 2.0);
            let huge = (0..100_000u64)
                .filter(|r| n.host_size(r << 21) == PageSize::Huge)
                .count();
            let got = huge as f64 / 100_000.0;
            assert!((got - f).abs() < 0.01, "fraction {f}: {got}");
            // Every byte of a region shares its region's size.
            assert_eq!(n.host_size(5 << 21), n.host_size((5 << 21) + 0x1f_ffff));
            // And short stretches meet it too: any 32 neighbouring regions (a 64 MiB
            // buffer) hold f * 32 huge ones to within two.
            for start in (0..10_000u64).step_by(97) {
                let huge = (start..start + 32)
                    .filter(|r| n.host_size(r << 21) == PageSize::Huge)
                    .count() as f64;
                assert!(
                    (huge - f * 32.0).abs() <= 2.0,
                    "{f}: {huge} of 32 from {start}"
                );
            }
        }
    }

    #[test]
    fn a_host_map_decides_regions_and_page_tables_follow_its_share() {
        let mut n = Nested::new(&guest(1.0), 4, 2.0);
        n.use_host_map(1000);
        assert_eq!(
            n.host_size(7 << 21),
            PageSize::Base,
            "a map starts all 4 KB"
        );
        assert_eq!(
            n.host_size(1 << 47),
            PageSize::Base,
            "page tables at share 0"
        );
        assert!(n.set_host_huge(7, true));
        assert!(!n.set_host_huge(7, true), "no change the second time");
        assert!(!n.set_host_huge(1000, true), "outside the map");
        assert_eq!(n.host_size((7 << 21) + 4096), PageSize::Huge);
        assert_eq!(n.host_size(8 << 21), PageSize::Base);
        for r in 0..500 {
            n.set_host_huge(r, true);
        }
        let pt_huge = (0..10_000u64)
            .filter(|i| n.host_size((1 << 47) + (i << 21)) == PageSize::Huge)
            .count();
        assert!((4_500..5_500).contains(&pt_huge), "{pt_huge} of 10000");
        assert!(n.set_host_huge(7, false));
        assert_eq!(n.host_size(7 << 21), PageSize::Base);
    }

    #[test]
    fn a_host_page_table_line_from_memory_costs_the_extra_and_a_cached_one_does_not() {
        use crate::profile::CacheLevelProfile;
        let l1 = CacheLevelProfile {
            name: "L1D".into(),
            bytes: 32 * 1024,
            ways: 8,
            latency_cycles: 4.0,
        };
        let tags = TagScheme::new(crate::units::Geometry::X86_64);
        let walk = |extra_ns: f64| {
            let mut g = guest(0.0);
            g.host_pt_extra_ns = extra_ns;
            let mut n = Nested::new(&g, 4, 2.0);
            let mut caches = CacheHierarchy::new(std::slice::from_ref(&l1), 200.0);
            let cold = n.translate(5 << 21, &tags, &mut caches);
            // The nested TLB forgets, the caches keep the lines: a second walk of the
            // same address finds them all cached.
            n.ntlb.clear();
            let warm = n.translate(5 << 21, &tags, &mut caches);
            (cold, warm)
        };
        let (cold, warm) = walk(0.0);
        let (cold_extra, warm_extra) = walk(30.0);
        // guest(0.0): every region on host 4 KB pages; the host PWCs start empty, so the
        // first walk loads four lines from memory and pays 4 x 30 ns x 2 GHz more.
        assert_eq!(cold_extra - cold, 4.0 * 60.0);
        assert_eq!(warm_extra, warm, "cached lines cost no extra");
    }

    #[test]
    fn guest_huge_pages_are_cached_at_the_hosts_size() {
        let n = Nested::new(&guest(0.0), 4, 2.0);
        assert_eq!(n.effective(PageSize::Huge, 0), PageSize::Base);
        let n = Nested::new(&guest(1.0), 4, 2.0);
        assert_eq!(n.effective(PageSize::Huge, 0), PageSize::Huge);
        assert_eq!(n.effective(PageSize::Base, 0), PageSize::Base);
    }
}
