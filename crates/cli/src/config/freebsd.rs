//! `[policy.freebsd]`: FreeBSD's superpage knobs, every key optional, FreeBSD's defaults
//! written back.

use super::raw::RawFreeBsd;
use super::validate::{Validator, R};
use hugemm_policy::FreeBsdConfig;

impl Validator<'_> {
    /// `[policy.freebsd]`, resolved in place.
    pub(super) fn freebsd(&self, raw: &mut RawFreeBsd) -> R<FreeBsdConfig> {
        let d = FreeBsdConfig::default();
        let cfg = FreeBsdConfig {
            reservations: raw.reservations.unwrap_or(d.reservations),
            pg_ps_enabled: raw.pg_ps_enabled.unwrap_or(d.pg_ps_enabled),
        };
        *raw = RawFreeBsd {
            reservations: Some(cfg.reservations),
            pg_ps_enabled: Some(cfg.pg_ps_enabled),
        };
        Ok(cfg)
    }
}
