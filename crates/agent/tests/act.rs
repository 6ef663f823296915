//! `process_madvise(MADV_COLLAPSE)` on a live process (this test's own), and on one that
//! has exited. Skips, saying why, where the kernel refuses (no `MADV_COLLAPSE`, THP
//! `never`, or no permission).

use hugemm_agent::act::{Failure, Target};
use hugemm_agent::{Geometry, HostPid, HugeRange, VirtAddr};

/// `AnonHugePages` of this process's mapping that contains `addr`, in kB.
fn anon_huge_kb(addr: usize) -> u64 {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let mut inside = false;
    for line in smaps.lines() {
        if let Some((range, _)) = line.split_once(' ') {
            if let Some((a, b)) = range.split_once('-') {
                if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
                {
                    inside = (a..b).contains(&addr);
                    continue;
                }
            }
        }
        if inside {
            if let Some(v) = line.strip_prefix("AnonHugePages:") {
                return v.trim().trim_end_matches("kB").trim().parse().unwrap();
            }
        }
    }
    0
}

#[test]
fn collapsing_a_touched_range_maps_it_with_huge_pages() {
    let g = Geometry::X86_64;
    let huge = g.huge_bytes() as usize;
    let mut buf = memmap2::MmapMut::map_anon(8 * huge).unwrap();
    for i in (0..buf.len()).step_by(4096) {
        buf[i] = 1;
    }
    let start = (buf.as_ptr() as usize).next_multiple_of(huge);
    let range = HugeRange::new(
        VirtAddr(start as u64),
        VirtAddr((start + 4 * huge) as u64),
        &g,
    )
    .unwrap();
    let before = anon_huge_kb(start);
    let me = Target::open(HostPid(std::process::id())).unwrap();
    // `EAGAIN` is transient by the kernel's own account (a page locked or under
    // writeback for a moment): a few tries, as the agent itself would try again later.
    let mut tries = 0;
    loop {
        tries += 1;
        match me.collapse(&range) {
            Ok(()) => break,
            Err(e) if matches!(e.failure, Failure::NotEligible | Failure::Permission) => {
                eprintln!("skipped: this kernel refuses MADV_COLLAPSE here: {e}");
                return;
            }
            Err(e) if e.failure == Failure::Transient && tries < 5 => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => panic!("after {tries} tries: {e}"),
        }
    }
    let after = anon_huge_kb(start);
    assert!(
        after >= before + 4 * 2048,
        "AnonHugePages {before} -> {after} kB"
    );
    // The content is unchanged.
    assert!((0..buf.len()).step_by(4096).all(|i| buf[i] == 1));
}

#[test]
fn a_target_that_exited_is_gone_not_an_error_to_panic_on() {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = HostPid(child.id());
    // Held before it exits: the pidfd stays valid, the process does not.
    let target = Target::open(pid).unwrap();
    child.wait().unwrap();
    let g = Geometry::X86_64;
    let range =
        HugeRange::new(VirtAddr(1 << 30), VirtAddr((1 << 30) + g.huge_bytes()), &g).unwrap();
    let e = target.collapse(&range).expect_err("it exited");
    assert!(
        matches!(
            e.failure,
            Failure::Gone | Failure::NoMemory | Failure::NotEligible
        ),
        "{e}"
    );
    // And a pid that no longer exists cannot be opened.
    assert!(Target::open(pid).is_err());
}
