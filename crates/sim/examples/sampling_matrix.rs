//! Prints the sampled-vs-exact matrix of `docs/sampling.md` as a Markdown table.
//! Run: `cargo run --release -p hugemm-sim --example sampling_matrix [REFS_MILLIONS]`.

use hugemm_hw::MachineProfile;
use hugemm_sim::matrix::{compare, pattern_label, patterns, Case};
use hugemm_sim::SampledConfig;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let millions: u64 = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(40);
    let profile = MachineProfile::builtin("epyc-milan-kvm").ok_or("profile")?;
    let sampled = SampledConfig::default();
    println!(
        "sampled mode: {:?}; {} M references per case after the touch\n",
        sampled, millions
    );
    println!("| pattern | buffer | pages | exact runtime s | sampled runtime s | error | exact MMU % | sampled MMU % | error | agrees |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let (mut n, mut ok) = (0, 0);
    for (pattern, dependent) in patterns() {
        for bytes in [256u64 << 20, 1 << 30, 4 << 30] {
            for huge in [false, true] {
                let case = Case {
                    pattern,
                    dependent,
                    bytes,
                    huge,
                    refs: millions * 1_000_000,
                };
                let r = compare(case, sampled, &profile)?;
                n += 1;
                ok += r.agrees() as u32;
                println!(
                    "| {} | {} MiB | {} | {:.3} | {:.3} | {:.2}% | {:.2} | {:.2} | {} | {} |",
                    pattern_label(pattern, dependent),
                    bytes >> 20,
                    if huge { "2M" } else { "4K" },
                    r.exact_runtime as f64 / 1e9,
                    r.sampled_runtime as f64 / 1e9,
                    r.runtime_error() * 100.0,
                    r.exact_mmu * 100.0,
                    r.sampled_mmu * 100.0,
                    if r.exact_mmu < 0.01 {
                        format!("{:+.2} pp", (r.sampled_mmu - r.exact_mmu) * 100.0)
                    } else {
                        format!("{:.2}%", r.mmu_error() * 100.0)
                    },
                    if r.agrees() { "yes" } else { "NO" }
                );
            }
        }
    }
    println!("\n{ok} of {n} cases within tolerance");
    Ok(())
}
