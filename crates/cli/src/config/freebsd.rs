//! Stage two for `[policy]` with `name = "freebsd"`: the optional `[policy.freebsd]`
//! table, and the rule that a file carries only the table of the policy it names.

use super::raw::{RawFreeBsd, RawPolicy};
use super::validate::{Validator, R};
use hugemm_policy::{FreeBsdConfig, PolicyConfig};

impl Validator<'_> {
    /// `[policy.freebsd]`: every key optional, FreeBSD's defaults written back.
    pub(super) fn freebsd(&self, p: &mut RawPolicy) -> R<PolicyConfig> {
        self.only_table_of(p, "freebsd")?;
        let d = FreeBsdConfig::default();
        let raw = p.freebsd.get_or_insert_with(Default::default);
        let cfg = FreeBsdConfig {
            reservations: raw.reservations.unwrap_or(d.reservations),
            pg_ps_enabled: raw.pg_ps_enabled.unwrap_or(d.pg_ps_enabled),
        };
        *raw = RawFreeBsd {
            reservations: Some(cfg.reservations),
            pg_ps_enabled: Some(cfg.pg_ps_enabled),
        };
        Ok(PolicyConfig::FreeBsd(cfg))
    }

    /// Refuse a `[policy.<other>]` table for a policy other than `name`, the one chosen.
    pub(super) fn only_table_of(&self, p: &RawPolicy, name: &str) -> R<()> {
        let tables = [
            ("linux", p.linux.is_some()),
            ("freebsd", p.freebsd.is_some()),
        ];
        match tables.iter().find(|(t, present)| *present && *t != name) {
            Some((other, _)) => Err(self.bad(
                &format!("policy.{other}"),
                format!("no [policy.{other}] table when policy.name is \"{name}\""),
            )),
            None => Ok(()),
        }
    }
}
