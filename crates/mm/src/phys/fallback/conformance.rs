//! The shared conformance suite every [`FallbackPolicy`] must pass (conventions 11), enabled
//! for other crates by the `conformance` feature.
//!
//! It drives a small machine through a seeded mix of allocations of every order and
//! migrate type and frees, and asserts (it is a test suite: it panics on failure) that the
//! policy never makes an allocation fail while a large enough free block exists, that the
//! blocks handed out are aligned and owned, that frames are conserved, that the
//! per-pageblock counters and the address index match a recount, that every evacuation
//! asked for is a pageblock start now owned by a kernel type, and that freeing everything
//! restores the boot layout. It must not be used outside tests.

use crate::phys::buddy::{AllocRequest, Block, PhysMem};
use crate::phys::fallback::FallbackPolicy;
use crate::phys::frame::{FrameState, OwnerKind};
use crate::phys::pageblock::MigrateType;
use hugemm_hw::{Geometry, Order, Pfn};

/// Frames of the test machine: 8 max-order blocks plus a partial tail.
const FRAMES: u64 = 8 * 1024 + 300;

/// Run the suite against policies made by `make` (called once per sub-test).
pub fn run(make: impl Fn() -> Box<dyn FallbackPolicy>) {
    run_with(make, |_| {});
}

/// [`run`] with H-Policy's order-9 preservation on
/// ([`PhysMem::set_preserve_huge_blocks`]), which changes the order of the own-list search.
pub fn run_preserving(make: impl Fn() -> Box<dyn FallbackPolicy>) {
    run_with(make, |m| m.set_preserve_huge_blocks(true));
}

/// [`run`] with Linux 4.1's reserve of 2 pageblocks ([`PhysMem::set_migrate_reserve`]),
/// checking besides that no fallback takes from or claims the reserve.
pub fn run_with_reserve(make: impl Fn() -> Box<dyn FallbackPolicy>) {
    run_with(make, |m| {
        m.set_migrate_reserve(2)
            .expect("reserve on a fresh machine")
    });
}

/// The suite on machines with `make`'s policy, each set up by `setup` before use.
fn run_with(make: impl Fn() -> Box<dyn FallbackPolicy>, setup: impl Fn(&mut PhysMem)) {
    let machine = || {
        let mut m = machine(make());
        setup(&mut m);
        m
    };
    for seed in [1u64, 7, 42, 2024] {
        mixed_workload(machine(), seed);
    }
    exhaustion(machine());
}

/// With a reserve: its pageblocks stay the reserve's, and no fallback took from its lists.
fn check_reserve(m: &PhysMem, name: &str) {
    if m.migrate_reserve() == 0 {
        return;
    }
    assert_eq!(
        m.pageblocks(MigrateType::Reserve),
        u64::from(m.migrate_reserve()),
        "{name}: a reserve pageblock changed type"
    );
    let events = m.fallback_stats().events;
    assert!(
        events.iter().all(|e| e.taken_from != MigrateType::Reserve),
        "{name}: a fallback took from the reserve: {events:?}"
    );
}

/// A tiny deterministic generator (xorshift64*), so the suite needs no dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) % n
    }
}

fn machine(policy: Box<dyn FallbackPolicy>) -> PhysMem {
    let mut m = PhysMem::new(FRAMES, Geometry::X86_64).expect("test machine");
    m.set_fallback_policy(policy);
    m
}

fn request(rng: &mut Rng) -> AllocRequest {
    let order = [0u8, 0, 0, 1, 2, 3, 4, 9, 10][rng.below(9) as usize];
    let (mt, owner) = match rng.below(4) {
        0 => (MigrateType::Unmovable, OwnerKind::KernelUnmovable),
        1 => (MigrateType::Reclaimable, OwnerKind::KernelReclaimable),
        _ => (MigrateType::Movable, OwnerKind::Anon),
    };
    AllocRequest::new(Order(order)).migrate(mt).owner(owner)
}

fn mixed_workload(mut m: PhysMem, seed: u64) {
    let name = m.fallback_policy_name();
    let mut rng = Rng(seed | 1);
    let mut live: Vec<Block> = Vec::new();
    let mut used = 0u64;
    for step in 0..4000 {
        if !live.is_empty() && rng.below(5) < 2 {
            let b = live.swap_remove(rng.below(live.len() as u64) as usize);
            m.free(b.pfn, b.order)
                .unwrap_or_else(|e| panic!("{name}: free failed at step {step}: {e}"));
            used -= 1 << b.order.0;
        } else {
            let req = request(&mut rng);
            let fits = m.has_free_block(req.order());
            match m.alloc(&req) {
                Ok(b) => {
                    check_block(&m, &b, &req, name);
                    used += 1 << b.order.0;
                    live.push(b);
                }
                Err(e) => assert!(!fits, "{name}: {e} at step {step} although a block fits"),
            }
        }
        assert_eq!(
            m.frames_free() + used,
            m.frames_total(),
            "{name}: frames not conserved"
        );
        let pbs: u64 = MigrateType::ALL.iter().map(|&mt| m.pageblocks(mt)).sum();
        assert_eq!(pbs, m.pageblock_count(), "{name}: pageblock counts");
        check_evacuations(&mut m, name);
        if step % 97 == 0 {
            check_counters(&m, name);
            check_reserve(&m, name);
        }
    }
    free_all(&mut m, live, name);
}

fn check_counters(m: &PhysMem, name: &str) {
    if let Err(e) = m.check_counters() {
        panic!("{name}: {e}");
    }
}

fn check_evacuations(m: &mut PhysMem, name: &str) {
    let pb_frames = 1u64 << m.pageblock_order().0;
    for start in m.take_evacuations() {
        assert_eq!(
            start.0 % pb_frames,
            0,
            "{name}: evacuation not a pageblock start"
        );
        let mt = m.pageblock_type(Pfn(start.0));
        assert!(
            matches!(mt, Some(MigrateType::Unmovable | MigrateType::Reclaimable)),
            "{name}: evacuating a pageblock that is {mt:?}"
        );
    }
}

fn check_block(m: &PhysMem, b: &Block, req: &AllocRequest, name: &str) {
    assert_eq!(b.order, req.order(), "{name}: wrong order");
    assert_eq!(b.pfn.0 % (1 << b.order.0), 0, "{name}: unaligned block");
    let state = m.frame(b.pfn).map(|f| f.state());
    assert_eq!(
        state,
        Some(FrameState::Allocated {
            order: b.order,
            owner: req.owner_kind()
        }),
        "{name}: head"
    );
}

fn free_all(m: &mut PhysMem, live: Vec<Block>, name: &str) {
    for b in live {
        m.free(b.pfn, b.order)
            .unwrap_or_else(|e| panic!("{name}: final free: {e}"));
    }
    assert_eq!(m.frames_free(), FRAMES, "{name}: frames leaked");
    check_counters(m, name);
    assert_eq!(
        m.free_blocks(m.max_order()),
        FRAMES >> m.max_order().0,
        "{name}: buddies did not coalesce back"
    );
}

fn exhaustion(mut m: PhysMem) {
    let name = m.fallback_policy_name();
    let types = [
        MigrateType::Unmovable,
        MigrateType::Reclaimable,
        MigrateType::Movable,
    ];
    let mut live = Vec::new();
    for i in 0..FRAMES as usize {
        let req = AllocRequest::new(Order(0)).migrate(types[i % 3]);
        live.push(
            m.alloc(&req)
                .unwrap_or_else(|e| panic!("{name}: frame {i} of {FRAMES}: {e}")),
        );
    }
    assert!(
        m.alloc(&AllocRequest::new(Order(0))).is_err(),
        "{name}: allocated beyond memory"
    );
    check_reserve(&m, name);
    free_all(&mut m, live, name);
}
