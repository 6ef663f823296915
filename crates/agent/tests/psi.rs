//! Pressure files of the capturing host.

mod common;

use common::data;
use hugemm_agent::observe::psi::Pressure;
use std::time::Duration;

#[test]
fn an_idle_hosts_memory_pressure_is_zero() {
    let p = Pressure::read_path(&data("pressure-memory")).unwrap();
    assert_eq!((p.some.avg10, p.some.avg60, p.some.avg300), (0.0, 0.0, 0.0));
    assert_eq!(p.some.total, Duration::ZERO);
    assert_eq!(p.full.unwrap().total, Duration::ZERO);
}

#[test]
fn io_pressure_in_the_same_format_reads_every_field() {
    let p = Pressure::read_path(&data("pressure-io")).unwrap();
    assert_eq!(
        (p.some.avg10, p.some.avg60, p.some.avg300),
        (0.12, 0.17, 0.42)
    );
    assert_eq!(p.some.total, Duration::from_micros(11_110_422));
    let full = p.full.unwrap();
    assert_eq!((full.avg10, full.avg60, full.avg300), (0.0, 0.03, 0.19));
    assert_eq!(full.total, Duration::from_micros(8_248_723));
}

#[test]
fn a_file_with_only_some_has_no_full() {
    let p = Pressure::parse(
        &data("x"),
        "some avg10=1.50 avg60=0.00 avg300=0.00 total=7\n",
    )
    .unwrap();
    assert_eq!(p.some.avg10, 1.5);
    assert!(p.full.is_none());
}
