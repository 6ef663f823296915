//! Live: this test process maps and touches memory, and the observation layer must see
//! it in its own smaps and pagemap. Skips (saying why) where pagemap is unreadable.

use hugemm_agent::observe::pagemap::{pfns_visible, HugeMapping, KPageFlags, Pagemap, Summariser};
use hugemm_agent::observe::smaps::Smaps;
use hugemm_agent::{Geometry, HostPid, HugeRange, VirtAddr};
use memmap2::{Advice, MmapMut, MmapOptions};

const G: Geometry = Geometry::X86_64;
const MB: usize = 1 << 20;
const PAGE: usize = 4096;

/// This process's pagemap, or `None` (with the reason printed) where it cannot be read.
fn own_pagemap() -> Option<Pagemap> {
    match Pagemap::open_self() {
        Ok(pm) => Some(pm),
        Err(e) => {
            println!("skipped: {e} (pagemap unreadable here)");
            None
        }
    }
}

/// An anonymous mapping with room for `regions` whole 2 MB regions, and their range.
fn mapping(regions: u64) -> (MmapMut, HugeRange) {
    let bytes = (regions as usize + 1) * 2 * MB;
    let map = MmapOptions::new()
        .len(bytes)
        .map_anon()
        .expect("anonymous mapping");
    let first = (map.as_ptr() as u64).next_multiple_of(G.huge_bytes());
    let end = VirtAddr(first + regions * G.huge_bytes());
    let range = HugeRange::new(VirtAddr(first), end, &G).unwrap();
    (map, range)
}

/// Write one byte in every `stride`-th base page of the region `index` of `range`.
fn touch(map: &mut MmapMut, range: &HugeRange, index: u64, stride: usize) {
    let offset = (range.start().0 - map.as_ptr() as u64) as usize + index as usize * 2 * MB;
    for page in (0..2 * MB / PAGE).step_by(stride) {
        map[offset + page * PAGE] = 1;
    }
}

#[test]
fn the_pagemap_summary_counts_the_pages_this_process_touched() {
    let Some(pm) = own_pagemap() else { return };
    let (mut map, range) = mapping(4);
    touch(&mut map, &range, 0, 1);
    touch(&mut map, &range, 1, 2);
    touch(&mut map, &range, 2, 8);
    let s = Summariser::new(&pm).range(&range).unwrap();
    assert_eq!(s.len(), 4);
    let present: Vec<u32> = s.iter().map(|r| r.present).collect();
    assert_eq!(present, [512, 256, 64, 0]);
    assert!(s[0].exclusive == 512 && s[0].swapped == 0);
    assert!(s[1..].iter().all(|r| matches!(r.huge, HugeMapping::No(_))));
}

#[test]
fn advised_regions_the_kernel_made_huge_are_seen_as_huge() {
    let Some(pm) = own_pagemap() else { return };
    let (mut map, range) = mapping(4);
    if let Err(e) = map.advise(Advice::HugePage) {
        println!("skipped: MADV_HUGEPAGE refused: {e}");
        return;
    }
    for r in 0..4 {
        touch(&mut map, &range, r, 1);
    }
    let smaps = Smaps::read(HostPid(std::process::id())).unwrap();
    let vma = smaps.vma_at(range.start()).expect("the mapping's VMA");
    assert!(vma.flags.hugepage());
    let huge_in_vma = vma.anon_huge_pages.0 / G.huge_bytes();
    let kpf = KPageFlags::open_if_readable().unwrap();
    let frames = pfns_visible(&G).unwrap();
    let summariser = Summariser::new(&pm);
    let s = match (&kpf, frames) {
        (Some(k), true) => summariser.kpageflags(k).range(&range).unwrap(),
        _ => summariser.range(&range).unwrap(),
    };
    let huge = s
        .iter()
        .filter(|r| matches!(r.huge, HugeMapping::Yes(_)))
        .count() as u64;
    println!(
        "live: {huge} of 4 regions huge by pagemap, AnonHugePages {} kB; kpageflags {}, frames {}",
        vma.anon_huge_pages.0 / 1024,
        if kpf.is_some() {
            "readable"
        } else {
            "unreadable"
        },
        if frames { "visible" } else { "hidden" },
    );
    assert!(s.iter().all(|r| r.present == 512));
    if kpf.is_some() && frames {
        assert_eq!(huge, huge_in_vma, "kpageflags and AnonHugePages agree");
    }
}
