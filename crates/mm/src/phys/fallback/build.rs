//! Fallback policies by name ([`build`]), as experiment files and the CLI name them.
//!
//! Owns the name table; it must not hold policy logic.

use super::{Aaf, Apbs, ClaimFirst, FallbackPolicy, KernelLayout, LinuxDefault, Opbs, Rpbs};
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
    fn an_unknown_name_lists_the_valid_ones() {
        let e = build("opsb", 1).unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown fallback policy `opsb`: expected one of default, opbs, apbs, aaf, rpbs, kml, kmu, claim-first"
        );
    }
}
