//! Fallback policies by name ([`build`]), as experiment files and the CLI name them.
//!
//! Owns the name table; it must not hold policy logic.

use super::{
    Aaf, Apbs, ClaimFirst, FallbackPolicy, KernelLayout, LinuxDefault, Opbs, Placement, Rpbs,
};
use crate::api::MigrateType;
use thiserror::Error;

/// Every name [`build`] accepts.
pub const NAMES: &[&str] = &[
    "default",
    "opbs",
    "apbs",
    "aaf",
    "rpbs",
    "kml",
    "kmu",
    "claim-first",
];

/// [`build`] was given a name it does not know.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("unknown fallback policy `{name}`: expected one of {}", NAMES.join(", "))]
pub struct UnknownPolicy {
    /// The name given.
    pub name: String,
}

/// The fallback policy called `name`; `seed` seeds the randomised ones (`rpbs`, `apbs`).
pub fn build(name: &str, seed: u64) -> Result<Box<dyn FallbackPolicy>, UnknownPolicy> {
    Ok(match name {
        "default" => Box::new(LinuxDefault),
        "opbs" => Box::new(Opbs),
        "apbs" => Box::new(Apbs::new(seed)),
        "aaf" => Box::new(Aaf),
        "rpbs" => Box::new(Rpbs::new(seed)),
        "kml" => Box::new(KernelLayout::kml()),
        "kmu" => Box::new(KernelLayout::kmu()),
        "claim-first" => Box::new(ClaimFirst),
        _ => {
            return Err(UnknownPolicy {
                name: name.to_owned(),
            })
        }
    })
}

/// Whether the policy called `name` places blocks by address, so that the allocator keeps
/// an address index of each zone's free blocks ([`FallbackPolicy::placement`]:
/// `kml`, `kmu`); false for a name [`build`] does not know.
pub fn places_by_address(name: &str) -> bool {
    build(name, 0).is_ok_and(|p| {
        MigrateType::REQUESTS
            .iter()
            .any(|&m| p.placement(m) != Placement::ListHead)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_builds_a_policy_of_that_name() {
        for &name in NAMES {
            assert_eq!(build(name, 1).unwrap().name(), name);
        }
    }

    #[test]
    fn only_kml_and_kmu_place_blocks_by_address() {
        let by_address: Vec<&str> = NAMES
            .iter()
            .copied()
            .filter(|n| places_by_address(n))
            .collect();
        assert_eq!(by_address, ["kml", "kmu"]);
        assert!(!places_by_address("opsb"));
    }

    #[test]
    fn an_unknown_name_lists_the_valid_ones() {
        let e = build("opsb", 1).unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown fallback policy `opsb`: expected one of default, opbs, apbs, aaf, rpbs, kml, kmu, claim-first"
        );
    }
}
