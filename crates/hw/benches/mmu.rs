//! Benchmarks of the hot path, `Mmu::access`, on seeded random references: 4 KB pages and
//! 2 MB pages over 4 GB, independent and dependent. The simulator needs ~10M references/s,
//! so one access must stay well under ~60 ns.

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use hugemm_hw::{Geometry, MachineProfile, Mmu, PageSize, Reference, VirtAddr};

const SPAN: u64 = 4 << 30;
const REFS: usize = 1 << 16;

/// `REFS` random references over `SPAN` bytes mapped by `size` pages, each page at a
/// pseudo-random physical frame (a fixed scramble of its number).
fn references(size: PageSize, dependent: bool, seed: u64) -> Vec<Reference> {
    use rand::{RngCore, SeedableRng};
    let page = Geometry::X86_64.bytes(size);
    let mut rng = rand_xoshiro::SplitMix64::seed_from_u64(seed);
    (0..REFS)
        .map(|_| {
            let va = 0x7f00_0000_0000 + rng.next_u64() % SPAN;
            let pn = (va / page) & (SPAN / page - 1);
            let frame = pn.wrapping_mul(0x9E37_79B9) & (SPAN / page - 1);
            let pa = frame * page + va % page;
            Reference {
                asid: 1,
                va: VirtAddr(va),
                size,
                pa,
                dependent,
                write: false,
            }
        })
        .collect()
}

fn bench_access(c: &mut Criterion) {
    let profile = MachineProfile::builtin("haswell-e5-2690v3").expect("builtin profile");
    let mut g = c.benchmark_group("mmu_access");
    g.throughput(Throughput::Elements(REFS as u64));
    for (name, size, dependent) in [
        ("4k_random_4GB", PageSize::Base, false),
        ("2m_random_4GB", PageSize::Huge, false),
        ("4k_random_4GB_dependent", PageSize::Base, true),
    ] {
        let refs = references(size, dependent, 42);
        let mut mmu = Mmu::new(&profile, Geometry::X86_64);
        // Warm the structures so the measurement sees the steady state.
        for r in references(size, dependent, 7).iter().cycle().take(1 << 20) {
            mmu.access(r);
        }
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut t = 0u64;
                for r in &refs {
                    t = t.wrapping_add(mmu.access(black_box(r)).time.0);
                }
                t
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench_access);
criterion_main!(benches);
