//! Detection of access sources: on the capturing host's DAMON tree and kernel config, on
//! made-up trees for the cases this host does not have, and live (read only).

mod common;

use common::data;
use flate2::{write::GzEncoder, Compression};
use hugemm_agent::observe::damon::{DamonSysfs, KdamondState};
use hugemm_agent::observe::kconfig::{ConfigValue, KernelConfig};
use hugemm_agent::observe::sources::{AccessSource, Probe, SourceReport};
use hugemm_agent::ObserveError;
use std::fs;
use std::io::Write;
use std::path::Path;
use tempfile::TempDir;

/// Copy the directory `from` into `to`, so the copy is this test's to write.
fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A sysfs `mm` directory with an empty DAMON admin tree (no kdamond yet).
fn empty_damon(dir: &TempDir) -> std::path::PathBuf {
    let mm = dir.path().join("mm");
    fs::create_dir_all(mm.join("damon/admin/kdamonds")).unwrap();
    fs::write(mm.join("damon/admin/kdamonds/nr_kdamonds"), "0\n").unwrap();
    mm
}

fn config(dir: &TempDir, lines: &str) -> std::path::PathBuf {
    let path = dir.path().join("config");
    fs::write(&path, lines).unwrap();
    path
}

fn finding(
    report: &SourceReport,
    source: AccessSource,
) -> &hugemm_agent::observe::sources::Finding {
    report.findings.iter().find(|f| f.source == source).unwrap()
}

#[test]
fn the_capturing_host_falls_back_to_population_and_says_why() {
    let dir = TempDir::new().unwrap();
    copy_tree(&data("sys-kernel-mm"), &dir.path().join("mm"));
    let report = Probe::host()
        .sysfs_mm(dir.path().join("mm"))
        .kernel_config(data("config-excerpt"))
        .pfns_visible(true)
        .detect()
        .unwrap();
    assert_eq!(report.best, AccessSource::Population);
    let vaddr = finding(&report, AccessSource::DamonVaddr);
    assert!(
        !vaddr.usable && vaddr.reason.contains("avail_operations lists [paddr]"),
        "{}",
        vaddr.reason
    );
    let idle = finding(&report, AccessSource::PageIdle);
    assert!(
        !idle.usable && idle.reason.contains("CONFIG_IDLE_PAGE_TRACKING is not set"),
        "{}",
        idle.reason
    );
    let paddr = finding(&report, AccessSource::DamonPaddr);
    assert!(
        !paddr.usable && paddr.reason.contains("did not create (1 running)"),
        "{}",
        paddr.reason
    );
    let DamonSysfs::Present { kdamonds, .. } = &report.damon else {
        panic!("{:?}", report.damon)
    };
    assert_eq!(
        (kdamonds[0].state, kdamonds[0].pid),
        (KdamondState::On, Some(77))
    );
    assert_eq!(kdamonds[0].contexts[0].operations, "paddr");
    let text = report.to_string();
    assert!(
        text.starts_with("access source: population (population-based coverage"),
        "{text}"
    );
    assert!(
        text.contains("kdamond 0 (not the agent's, left alone): on, pid 77, operations [paddr]"),
        "{text}"
    );
}

#[test]
fn the_capturing_hosts_config_lacks_vaddr_and_idle_tracking() {
    let c = KernelConfig::read_path(&data("config-excerpt")).unwrap();
    assert_eq!(c.get("CONFIG_DAMON_VADDR"), Some(&ConfigValue::NotSet));
    assert!(c.enabled("CONFIG_DAMON_PADDR") && c.enabled("CONFIG_DAMON_SYSFS"));
    assert!(!c.enabled("CONFIG_IDLE_PAGE_TRACKING") && !c.enabled("CONFIG_NOT_IN_THE_FILE"));
}

#[test]
fn an_empty_damon_tree_with_vaddr_configured_is_the_first_choice() {
    let dir = TempDir::new().unwrap();
    let mm = empty_damon(&dir);
    let cfg = config(
        &dir,
        "CONFIG_DAMON=y\nCONFIG_DAMON_SYSFS=y\nCONFIG_DAMON_VADDR=y\n",
    );
    let report = Probe::host()
        .sysfs_mm(mm)
        .kernel_config(cfg)
        .pfns_visible(false)
        .detect()
        .unwrap();
    assert_eq!(report.best, AccessSource::DamonVaddr);
    assert!(finding(&report, AccessSource::DamonVaddr)
        .reason
        .contains("its own kdamond"));
}

#[test]
fn a_gzipped_config_is_read_like_proc_config_gz() {
    let dir = TempDir::new().unwrap();
    let mm = empty_damon(&dir);
    let gz = dir.path().join("config.gz");
    let mut enc = GzEncoder::new(fs::File::create(&gz).unwrap(), Compression::default());
    enc.write_all(
        b"# comment\n\nCONFIG_DAMON_VADDR=m\nCONFIG_HZ=250\nCONFIG_LOCALVERSION=\"-x\"\n",
    )
    .unwrap();
    enc.finish().unwrap();
    let c = KernelConfig::read_path(&gz).unwrap();
    assert_eq!(c.get("CONFIG_DAMON_VADDR"), Some(&ConfigValue::Module));
    assert_eq!(c.get("CONFIG_HZ"), Some(&ConfigValue::Value("250".into())));
    let report = Probe::host()
        .sysfs_mm(mm)
        .kernel_config(gz)
        .pfns_visible(true)
        .detect()
        .unwrap();
    assert_eq!(report.best, AccessSource::DamonVaddr);
}

#[test]
fn the_page_idle_bitmap_needs_visible_frames() {
    let dir = TempDir::new().unwrap();
    let mm = empty_damon(&dir);
    fs::create_dir_all(mm.join("page_idle")).unwrap();
    fs::write(mm.join("page_idle/bitmap"), "").unwrap();
    let cfg = config(&dir, "CONFIG_DAMON_PADDR=y\nCONFIG_IDLE_PAGE_TRACKING=y\n");
    let probe = Probe::host().sysfs_mm(&mm).kernel_config(&cfg);
    assert_eq!(
        probe.clone().pfns_visible(true).detect().unwrap().best,
        AccessSource::PageIdle
    );
    let hidden = probe.pfns_visible(false).detect().unwrap();
    assert_eq!(hidden.best, AccessSource::Population);
    assert!(finding(&hidden, AccessSource::PageIdle)
        .reason
        .contains("CAP_SYS_ADMIN"));
    assert!(finding(&hidden, AccessSource::DamonPaddr)
        .reason
        .contains("CAP_SYS_ADMIN"));
}

#[test]
fn damon_paddr_is_the_third_choice() {
    let dir = TempDir::new().unwrap();
    let mm = empty_damon(&dir);
    let cfg = config(
        &dir,
        "# CONFIG_DAMON_VADDR is not set\nCONFIG_DAMON_PADDR=y\n",
    );
    let report = Probe::host()
        .sysfs_mm(mm)
        .kernel_config(cfg)
        .pfns_visible(true)
        .detect()
        .unwrap();
    assert_eq!(report.best, AccessSource::DamonPaddr);
}

#[test]
fn without_damon_sysfs_or_any_config_nothing_but_population_is_claimed() {
    let dir = TempDir::new().unwrap();
    let report = Probe::host()
        .sysfs_mm(dir.path())
        .without_kernel_config()
        .pfns_visible(true)
        .detect()
        .unwrap();
    assert_eq!(report.best, AccessSource::Population);
    assert!(finding(&report, AccessSource::DamonVaddr)
        .reason
        .contains("CONFIG_DAMON_SYSFS"));
    let mm = empty_damon(&dir);
    let report = Probe::host()
        .sysfs_mm(mm)
        .without_kernel_config()
        .pfns_visible(true)
        .detect()
        .unwrap();
    assert!(finding(&report, AccessSource::DamonVaddr)
        .reason
        .contains("cannot tell"));
    assert!(report.kernel_config.is_none());
}

#[test]
fn a_malformed_kdamond_state_is_an_error_naming_the_file() {
    let dir = TempDir::new().unwrap();
    copy_tree(&data("sys-kernel-mm"), &dir.path().join("mm"));
    let state = dir.path().join("mm/damon/admin/kdamonds/0/state");
    fs::write(&state, "maybe\n").unwrap();
    let err = Probe::host()
        .sysfs_mm(dir.path().join("mm"))
        .pfns_visible(true)
        .detect()
        .unwrap_err();
    assert!(matches!(&err, ObserveError::Parse { line: 1, .. }), "{err}");
    assert_eq!(err.path(), state);
}

#[test]
fn detection_on_this_host_is_read_only_and_explains_itself() {
    let before = fs::read_to_string("/sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds").ok();
    let report = Probe::host().detect().unwrap();
    println!("{report}");
    assert_eq!(report.findings.len(), 4);
    assert!(report.findings.iter().all(|f| !f.reason.is_empty()));
    let after = fs::read_to_string("/sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds").ok();
    assert_eq!(before, after);
}
