//! hugemm's command line as a library: experiment files ([`config`]), the built-in demo
//! ([`demo`]), throughput benchmarks ([`bench`]), reports and output files
//! ([`report`]) and what made them ([`provenance`]). The binary in `main.rs` only parses arguments and maps errors to exit
//! codes.

pub mod agent;
pub mod bench;
pub mod config;
pub mod demo;
pub mod framemap;
pub mod page;
pub mod plot;
pub mod progress;
pub mod provenance;
pub mod report;
pub mod reproduce;
pub mod runs;
pub mod sweep;
