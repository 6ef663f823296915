//! What the captured files in `tests/data` hold, written down once from the files and
//! `data/capture/capture.py`'s layout, for every test file to share.
#![allow(dead_code)]

use hugemm_agent::VirtAddr;
use std::path::PathBuf;

/// The captured file `name`.
pub fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// The text of the captured file `name`.
pub fn text(name: &str) -> String {
    std::fs::read_to_string(data(name)).expect("captured file")
}

/// 2 MB.
pub const REGION: u64 = 2 << 20;

/// The 64 MiB mapping of the captured process (regions r0..r31 in capture.py).
pub const BASE: u64 = 0x7f62_5ee0_0000;

/// The first address of region `r` of the captured mapping.
pub fn region(r: u64) -> VirtAddr {
    VirtAddr(BASE + r * REGION)
}

/// First frames of the 2 MB regions whose frames were captured from kpageflags: r3 and r4
/// (huge faults under MADV_HUGEPAGE) and r22 (MADV_COLLAPSE).
pub const HUGE_FRAMES: [(u64, u64); 3] = [(3, 0x14a600), (4, 0x10d400), (22, 0x164400)];

/// The shared zero page's frame on the capturing host (r23's 512 entries all point at it).
pub const ZERO_PFN: u64 = 0x3b34;
