//! Property tests of the set-associative array against a reference model: a set never
//! holds a tag twice nor more tags than its ways, way limits hold, and the array keeps
//! exactly the tags, in exactly the recency order, of a list-based LRU (sets of 1 to 19
//! ways, so sets spanning several 8-way blocks are covered, and of 25 to 70 ways, which
//! keep their recency as linked lists).

use hugemm_hw::setassoc::{SetAssoc, WayLimit, INVALID};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Access(u64),
    Insert(u64),
    InsertLimited(u64),
    Invalidate(u64),
}

fn op() -> impl Strategy<Value = Op> {
    // Tags 0..64 with a class bit (bit 62) for way-limited inserts.
    let tag = (0u64..64, any::<bool>()).prop_map(|(t, c)| t | ((c as u64) << 62));
    prop_oneof![
        tag.clone().prop_map(Op::Access),
        tag.clone().prop_map(Op::Insert),
        tag.clone().prop_map(Op::InsertLimited),
        tag.prop_map(Op::Invalidate),
    ]
}

/// A list-based LRU per set: most recent last.
struct Model {
    sets: Vec<Vec<u64>>,
    ways: usize,
}

impl Model {
    fn set(&mut self, tag: u64) -> &mut Vec<u64> {
        let n = self.sets.len() as u64;
        &mut self.sets[(tag & (n - 1)) as usize]
    }

    fn touch_or_insert(&mut self, tag: u64) -> bool {
        let ways = self.ways;
        let set = self.set(tag);
        if let Some(i) = set.iter().position(|&t| t == tag) {
            set.remove(i);
            set.push(tag);
            return true;
        }
        if set.len() == ways {
            set.remove(0);
        }
        set.push(tag);
        false
    }
}

proptest! {
    #[test]
    fn sets_hold_distinct_tags_within_their_ways(
        (sets_log, ways) in (0u32..3, prop_oneof![1usize..20, 25usize..71]),
        max_ways in 0usize..72,
        ops in prop::collection::vec(op(), 1..400),
    ) {
        let sets = 1usize << sets_log;
        let mut a = SetAssoc::new(sets * ways, ways);
        let limit = WayLimit { class_mask: 1 << 62, max_ways };
        let mut limited_only = true; // class-1 tags inserted only under the limit
        for op in &ops {
            match *op {
                Op::Access(t) => { limited_only &= t >> 62 == 0; a.access(t); }
                Op::Insert(t) => { limited_only &= t >> 62 == 0; a.insert(t); }
                Op::InsertLimited(t) => {
                    a.insert_limited(t, limit);
                    if max_ways > 0 { prop_assert!(a.contains(t)); }
                }
                Op::Invalidate(t) => { a.invalidate(t); prop_assert!(!a.contains(t)); }
            }
            prop_assert!(a.len() <= a.capacity());
            for s in 0..sets {
                let mut valid: Vec<u64> = a.set_tags(s).iter().copied().filter(|&t| t != INVALID).collect();
                prop_assert!(valid.len() <= ways);
                prop_assert!(valid.iter().all(|&t| a.set_of(t) == s));
                let limited = valid.iter().filter(|&&t| t >> 62 == 1).count();
                if limited_only && max_ways < ways {
                    prop_assert!(limited <= max_ways);
                }
                let n = valid.len();
                valid.sort_unstable();
                valid.dedup();
                prop_assert_eq!(valid.len(), n, "a tag twice in set {}", s);
            }
        }
    }

    #[test]
    fn access_matches_a_list_lru(
        (sets_log, ways) in (0u32..3, prop_oneof![1usize..20, 25usize..71]),
        tags in prop::collection::vec(0u64..160, 1..600),
    ) {
        let sets = 1usize << sets_log;
        let mut a = SetAssoc::new(sets * ways, ways);
        let mut m = Model { sets: vec![Vec::new(); sets], ways };
        for t in tags {
            prop_assert_eq!(a.access(t), m.touch_or_insert(t));
        }
        for (s, model) in m.sets.iter().enumerate() {
            // Same tags in the same recency order (most recent first), empty ways last.
            let held = a.set_tags(s);
            let want: Vec<u64> = model.iter().rev().copied().collect();
            prop_assert_eq!(&held[..want.len()], &want[..]);
            prop_assert!(held[want.len()..].iter().all(|&t| t == INVALID));
        }
    }
}
