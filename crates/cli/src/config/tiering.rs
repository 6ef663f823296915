//! `[tiering]` and `[tiering.nimble]`: the tiering policy beside the huge-page policy,
//! and the node allocations try first. The resolved file writes every knob.

use super::raw::{RawNimble, RawTiering};
use super::validate::{Validator, R};
use hugemm_hw::Nanos;
use hugemm_mm::{Mechanism, ThpMigration};
use hugemm_policy::{NimbleConfig, TieringConfig};

impl Validator<'_> {
    /// The home node and the tiering policy, on a machine of `nodes` nodes.
    pub(super) fn tiering(
        &self,
        t: &mut Option<RawTiering>,
        nodes: usize,
    ) -> R<(u8, Option<TieringConfig>)> {
        let Some(t) = t else {
            return Ok((0, None));
        };
        let name = t.policy.clone().unwrap_or_else(|| "none".into());
        if !TieringConfig::NAMES.contains(&name.as_str()) {
            return Err(self.not_one_of("tiering.policy", &name, TieringConfig::NAMES));
        }
        t.policy = Some(name.clone());
        let home = self.int("tiering.home_node", t.home_node, 0, 0, nodes as i64 - 1)? as u8;
        t.home_node = Some(home as i64);
        if name == "none" {
            return Ok((home, None));
        }
        if nodes < 2 {
            return Err(self.bad(
                "tiering.policy",
                format!("\"none\" on a machine of one memory node, found \"{name}\" (give [machine] a profile with tiers and node_memory)"),
            ));
        }
        let raw = t.nimble.get_or_insert_with(RawNimble::default);
        Ok((home, Some(TieringConfig::Nimble(self.nimble(raw)?))))
    }

    fn nimble(&self, n: &mut RawNimble) -> R<NimbleConfig> {
        let d = NimbleConfig::default();
        let key = |k: &str| format!("tiering.nimble.{k}");
        let period_ms = self.int(
            &key("period_ms"),
            n.period_ms,
            (d.period.0 / 1_000_000) as i64,
            1,
            3_600_000,
        )?;
        let thp = self.choice(
            &key("thp_migration"),
            n.thp_migration.as_deref(),
            "native",
            &[
                ("native", ThpMigration::Native),
                ("split", ThpMigration::Split),
            ],
        )?;
        let threads = self.int(
            &key("threads"),
            n.threads,
            d.mechanism.threads as i64,
            1,
            64,
        )? as u32;
        let in_flight = self.int(
            &key("pages_in_flight"),
            n.pages_in_flight,
            d.mechanism.in_flight as i64,
            0,
            1 << 20,
        )? as u32;
        let exchange = n.exchange.unwrap_or(d.exchange);
        let reserve = self.float(
            &key("fast_reserve_pct"),
            n.fast_reserve_pct,
            d.fast_reserve_pct,
            0.0,
            50.0,
        )?;
        n.period_ms = Some(period_ms);
        n.thp_migration = Some(match thp {
            ThpMigration::Native => "native".into(),
            ThpMigration::Split => "split".into(),
        });
        n.threads = Some(threads as i64);
        n.pages_in_flight = Some(in_flight as i64);
        n.exchange = Some(exchange);
        n.fast_reserve_pct = Some(reserve);
        Ok(NimbleConfig {
            period: Nanos(period_ms as u64 * 1_000_000),
            mechanism: Mechanism {
                thp,
                threads,
                in_flight,
            },
            exchange,
            fast_reserve_pct: reserve,
        })
    }
}
