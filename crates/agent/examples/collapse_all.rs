//! The action layer on its own, with no policy: collapse every populated 2 MB region of a
//! target's eligible memory, in address order (khugepaged's) or highest address first, at
//! a rate limit; print each failure and, at the end, what it did and what it cost.
//!
//! ```text
//! cargo run --release -p hugemm-agent --example collapse_all -- PID RATE_PER_S [address|high-first]
//! ```
//!
//! It is a measuring tool for `tools/agent-demo/` (how much collapsing helps a real
//! program on this machine), not the agent: the agent chooses regions by a policy.

use hugemm_agent::act::{Failure, Target};
use hugemm_agent::observe::smaps::Smaps;
use hugemm_agent::run::process_cpu_seconds;
use hugemm_agent::{Geometry, HostPid, HugeRange, VirtAddr};
use hugemm_hw::Nanos;
use hugemm_policy::TokenBucket;
use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::{Duration, Instant};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: collapse_all PID RATE_PER_S [address|high-first]";
    let (Some(pid), Some(rate)) = (
        args.get(1).and_then(|s| s.parse::<u32>().ok()),
        args.get(2)
            .and_then(|s| s.parse::<f64>().ok())
            .filter(|r| *r > 0.0),
    ) else {
        eprintln!("{usage}");
        return ExitCode::from(2);
    };
    let high_first = match args.get(3).map(String::as_str) {
        None | Some("address") => false,
        Some("high-first") => true,
        Some(o) => {
            eprintln!("unknown order `{o}`; {usage}");
            return ExitCode::from(2);
        }
    };
    let pid = HostPid(pid);
    let g = Geometry::X86_64;
    let smaps = match Smaps::read(pid) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("collapse_all: {e}");
            return ExitCode::from(1);
        }
    };
    let target = match Target::open(pid) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("collapse_all: {pid}: {e}");
            return ExitCode::from(1);
        }
    };
    let mut regions: Vec<HugeRange> = smaps
        .eligible_ranges(g)
        .filter(|r| r.vma.rss.0 > 0 && r.vma.anon_huge_pages.0 < r.vma.rss.0)
        .flat_map(|r| r.range.region_starts(&g).collect::<Vec<_>>())
        .filter_map(|s| HugeRange::new(s, VirtAddr(s.0 + g.huge_bytes()), &g))
        .collect();
    if high_first {
        regions.reverse();
    }
    let (t0, cpu0) = (Instant::now(), process_cpu_seconds());
    let mut limit = TokenBucket::new(rate, 1);
    let now = || Nanos(t0.elapsed().as_nanos() as u64);
    let (mut done, mut failed) = (0u64, BTreeMap::<&str, u64>::new());
    for r in &regions {
        std::thread::sleep(Duration::from_nanos(limit.wait(now()).0));
        limit.take(now());
        match target.collapse(r) {
            Ok(()) => done += 1,
            Err(e) if e.failure == Failure::Gone => {
                eprintln!("collapse_all: {pid} exited; stopping");
                break;
            }
            Err(e) => *failed.entry(e.failure.name()).or_default() += 1,
        }
    }
    let wall = t0.elapsed().as_secs_f64();
    let cpu = process_cpu_seconds() - cpu0;
    println!(
        "collapsed {done} of {} regions in {wall:.1} s ({:.1}/s), failures {failed:?}, \
         agent CPU {cpu:.2} s ({:.0}% of one core)",
        regions.len(),
        done as f64 / wall.max(1e-9),
        100.0 * cpu / wall.max(1e-9)
    );
    ExitCode::SUCCESS
}
