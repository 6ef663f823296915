//! Huge pages on a fragmented machine: page cache fills memory the way HawkEye's file
//! reader does, then a process faults in anonymous memory under Linux THP `always`.
//! Whether it gets huge pages depends on the `defrag` setting, as on Linux.

mod common;

use common::*;
use hugemm_hw::Nanos;
use hugemm_policy::{DefragMode, LinuxConfig, PolicyConfig, ThpMode};
use hugemm_workload::{FileId, Phase, ProcessSpec};

/// 256 MiB of memory: a reader caches 248 MiB in 16 KiB files and deletes every other
/// one, leaving half the cache's memory free in 16 KiB holes; then a process touches
/// 64 MiB.
fn fragmented(defrag: DefragMode) -> hugemm_sim::RunResult {
    let files = 248 * MIB / (16 << 10);
    let mut phases: Vec<Phase> = (0..files as u32)
        .map(|f| Phase::FileRead {
            file: FileId(f),
            offset: 0,
            bytes: 16 << 10,
        })
        .collect();
    phases.extend(
        (1..files as u32)
            .step_by(2)
            .map(|f| Phase::FileDelete { file: FileId(f) }),
    );
    let reader = ProcessSpec {
        name: "reader".into(),
        start: Nanos::ZERO,
        core: None,
        phases,
    };
    let mut app = alloc_touch("app", 64 * MIB);
    app.start = Nanos::from_secs(10);
    let mut s = Scenario::new(256 * MIB, ThpMode::Always)
        .process(reader)
        .process(app);
    s.exp.policy = PolicyConfig::Linux(LinuxConfig {
        enabled: ThpMode::Always,
        defrag,
        ..LinuxConfig::default()
    });
    s.exp.kernel.kcompactd.enabled = false;
    s.run()
}

#[test]
fn a_cache_filled_machine_gives_huge_pages_only_when_defrag_compacts() {
    let never = fragmented(DefragMode::Never);
    let always = fragmented(DefragMode::Always);
    let (n, a) = (&never.summary.processes[1], &always.summary.processes[1]);
    assert!(n.finished && a.finished);
    // Without compaction only the few whole free blocks above the cache become huge pages.
    assert!(
        n.faults_2m <= 4,
        "defrag=never still got {} huge pages",
        n.faults_2m
    );
    // With direct compaction (and the reclaim it needs), most of the 32 regions are huge.
    assert!(
        a.faults_2m >= 16,
        "defrag=always got only {} huge pages",
        a.faults_2m
    );
    let k = &always.summary.system.kernel;
    assert!(k.compact_stall > 0 && k.pgmigrate_success > 0);
    assert!(
        a.fault_time_ns > n.fault_time_ns / 4,
        "compaction time is charged"
    );
}

#[test]
fn kernel_memory_is_freed_when_its_lifetime_ends() {
    use hugemm_workload::{KernelMem, Lifetime};
    let alloc = |bytes, lifetime| Phase::KernelAlloc {
        kind: KernelMem::Unmovable,
        order: 0,
        object_bytes: None,
        bytes,
        lifetime,
    };
    let p = ProcessSpec {
        name: "k".into(),
        start: Nanos::ZERO,
        core: None,
        phases: vec![
            alloc(4 * MIB, Lifetime::Fixed(Nanos::from_millis(5))),
            alloc(2 * MIB, Lifetime::Process),
            alloc(MIB, Lifetime::Forever),
            Phase::Sleep(Nanos::from_millis(20)),
        ],
    };
    let r = Scenario::new(64 * MIB, ThpMode::Never).process(p).run();
    let frames = r.summary.system.frames_total;
    let free = r.summary.system.frames_free_end;
    // Only the `forever` megabyte is still allocated at the end.
    assert_eq!(frames - free, MIB / 4096);
    assert_eq!(r.summary.system.kmem_free_errors, 0);
}

/// Memory held until a file is deleted goes with the file's deletion (by any process)
/// and not before; that of a file never deleted stays.
#[test]
fn kernel_memory_held_until_a_file_is_deleted_goes_with_it() {
    use hugemm_workload::{FileId, KernelMem, Lifetime};
    let alloc = |bytes, file| Phase::KernelAlloc {
        kind: KernelMem::Reclaimable,
        order: 0,
        object_bytes: None,
        bytes,
        lifetime: Lifetime::UntilDeleted(FileId(file)),
    };
    let holder = ProcessSpec {
        name: "holder".into(),
        start: Nanos::ZERO,
        core: None,
        phases: vec![
            alloc(3 * MIB, 7),
            alloc(MIB, 8),
            Phase::Sleep(Nanos::from_millis(50)),
        ],
    };
    let deleter = ProcessSpec {
        name: "deleter".into(),
        start: Nanos::from_millis(10),
        core: None,
        phases: vec![Phase::FileDelete { file: FileId(7) }],
    };
    let r = Scenario::new(64 * MIB, ThpMode::Never)
        .process(holder)
        .process(deleter)
        .run();
    let held = r.summary.system.frames_total - r.summary.system.frames_free_end;
    assert_eq!(held, MIB / 4096, "file 8's megabyte stays; file 7's went");
    assert_eq!(r.summary.system.kmem_free_errors, 0);
}

/// Slab objects share pages: a page holding seven short-lived objects and one long-lived
/// one stays allocated after the seven are freed, so 16 long-lived 512-byte objects hold
/// 16 pages (64 KiB), where as whole blocks they would hold 2 (8 KiB).
#[test]
fn a_long_lived_slab_object_keeps_its_page() {
    use hugemm_workload::{KernelMem, Lifetime};
    let objects = |count: u64, lifetime| Phase::KernelAlloc {
        kind: KernelMem::Unmovable,
        order: 0,
        object_bytes: Some(512),
        bytes: count * 512,
        lifetime,
    };
    let mut phases = Vec::new();
    for _ in 0..16 {
        phases.push(objects(7, Lifetime::Fixed(Nanos::from_millis(5))));
        phases.push(objects(1, Lifetime::Forever));
    }
    phases.push(Phase::Sleep(Nanos::from_millis(20)));
    let p = ProcessSpec {
        name: "k".into(),
        start: Nanos::ZERO,
        core: None,
        phases,
    };
    let r = Scenario::new(64 * MIB, ThpMode::Never).process(p).run();
    let held = r.summary.system.frames_total - r.summary.system.frames_free_end;
    assert_eq!(held, 16, "one page per long-lived object");
    assert_eq!(r.summary.system.kmem_free_errors, 0);
}
