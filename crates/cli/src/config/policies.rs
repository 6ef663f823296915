//! `[policy.ingens]`, `[policy.hawkeye]` and `[policy.hpolicy]`: the knobs of the policies beyond
//! Linux. Every knob defaults to the value documented on the policy's config type (the
//! paper's, or the released code's where the paper is silent); the resolved file writes
//! each one out.

use super::raw::{RawBloat, RawHPolicy, RawHawkeye, RawIngens};
use super::validate::{Validator, R};
use hugemm_hw::Nanos;
use hugemm_policy::access::SamplerConfig;
use hugemm_policy::{
    BloatConfig, HPolicyConfig, HawkeyeConfig, HawkeyeVariant, IngensConfig, SysMonConfig,
    SysMonSource, TlbSampling,
};

/// The longest period a knob may take (about 49 days, in ms).
const MAX_MS: i64 = 1 << 32;

fn ms(n: Nanos) -> i64 {
    (n.0 / 1_000_000) as i64
}

impl Validator<'_> {
    /// A period in milliseconds, at least 1 ms.
    fn period(&self, key: &str, v: Option<i64>, default: Nanos) -> R<Nanos> {
        Ok(Nanos::from_millis(
            self.int(key, v, ms(default), 1, MAX_MS)? as u64,
        ))
    }

    /// A sampling period and the window within it, each in milliseconds (keys
    /// `<table>.<period>` and `<table>.<window>`): the window may not be the longer.
    fn window_in_period(
        &self,
        table: &str,
        (period_key, period_v, period_d): (&str, Option<i64>, Nanos),
        (window_key, window_v, window_d): (&str, Option<i64>, Nanos),
    ) -> R<(Nanos, Nanos)> {
        let period = self.period(&format!("{table}.{period_key}"), period_v, period_d)?;
        let window = self.period(&format!("{table}.{window_key}"), window_v, window_d)?;
        if window > period {
            return Err(self.bad(
                &format!("{table}.{window_key}"),
                format!(
                    "a window no longer than {period_key} ({} ms), found {} ms",
                    ms(period),
                    ms(window)
                ),
            ));
        }
        Ok((period, window))
    }

    /// `[policy.ingens]`, resolved in place.
    pub(super) fn ingens(&self, r: &mut RawIngens) -> R<IngensConfig> {
        let d = IngensConfig::default();
        let k = |name: &str| format!("policy.ingens.{name}");
        let cfg = IngensConfig {
            util_threshold: self.float(
                &k("util_threshold"),
                r.util_threshold,
                d.util_threshold,
                0.0,
                1.0,
            )?,
            fmfi_threshold: self.float(
                &k("fmfi_threshold"),
                r.fmfi_threshold,
                d.fmfi_threshold,
                0.0,
                1.0,
            )?,
            scan_sleep: self.period(
                &k("scan_sleep_millisecs"),
                r.scan_sleep_millisecs,
                d.scan_sleep,
            )?,
            regions_per_pass: self.int(
                &k("regions_per_pass"),
                r.regions_per_pass,
                d.regions_per_pass as i64,
                1,
                1 << 20,
            )? as u32,
            alloc_sleep: self.period(
                &k("alloc_sleep_millisecs"),
                r.alloc_sleep_millisecs,
                d.alloc_sleep,
            )?,
            defrag: r.defrag.unwrap_or(d.defrag),
            track_period: self.period(&k("track_period_ms"), r.track_period_ms, d.track_period)?,
            idle_tax: self.float(&k("idle_tax"), r.idle_tax, d.idle_tax, 0.0, 0.99)?,
        };
        *r = RawIngens {
            util_threshold: Some(cfg.util_threshold),
            fmfi_threshold: Some(cfg.fmfi_threshold),
            scan_sleep_millisecs: Some(ms(cfg.scan_sleep)),
            regions_per_pass: Some(cfg.regions_per_pass as i64),
            alloc_sleep_millisecs: Some(ms(cfg.alloc_sleep)),
            defrag: Some(cfg.defrag),
            track_period_ms: Some(ms(cfg.track_period)),
            idle_tax: Some(cfg.idle_tax),
        };
        Ok(cfg)
    }

    /// `[policy.hawkeye]`, resolved in place.
    pub(super) fn hawkeye(&self, r: &mut RawHawkeye) -> R<HawkeyeConfig> {
        let d = HawkeyeConfig::default();
        let k = |name: &str| format!("policy.hawkeye.{name}");
        let variant = self.choice(
            &k("variant"),
            r.variant.as_deref(),
            "g",
            &[("g", HawkeyeVariant::G), ("pmu", HawkeyeVariant::Pmu)],
        )?;
        let (period, window) = self.window_in_period(
            "policy.hawkeye",
            ("sample_period_ms", r.sample_period_ms, d.sampling.period),
            ("sample_window_ms", r.sample_window_ms, d.sampling.window),
        )?;
        let cfg = HawkeyeConfig {
            variant,
            sampling: SamplerConfig { period, window },
            ema_alpha: self.float(&k("ema_alpha"), r.ema_alpha, d.ema_alpha, 0.01, 1.0)?,
            scan_sleep: self.period(
                &k("scan_sleep_millisecs"),
                r.scan_sleep_millisecs,
                d.scan_sleep,
            )?,
            promotions_per_pass: self.int(
                &k("promotions_per_pass"),
                r.promotions_per_pass,
                d.promotions_per_pass as i64,
                1,
                1 << 20,
            )? as u32,
            alloc_sleep: self.period(
                &k("alloc_sleep_millisecs"),
                r.alloc_sleep_millisecs,
                d.alloc_sleep,
            )?,
            defrag: r.defrag.unwrap_or(d.defrag),
            min_bucket: self.int(&k("min_bucket"), r.min_bucket, d.min_bucket as i64, 0, 9)?
                as usize,
            pmu_threshold: self.float(
                &k("pmu_threshold"),
                r.pmu_threshold,
                d.pmu_threshold,
                0.0,
                1.0,
            )?,
            pmu_similar: self.float(&k("pmu_similar"), r.pmu_similar, d.pmu_similar, 0.0, 1.0)?,
            bloat: self.bloat(r.bloat.get_or_insert_with(Default::default))?,
        };
        let bloat = r.bloat.take();
        *r = RawHawkeye {
            variant: Some(
                match variant {
                    HawkeyeVariant::G => "g",
                    HawkeyeVariant::Pmu => "pmu",
                }
                .into(),
            ),
            sample_period_ms: Some(ms(period)),
            sample_window_ms: Some(ms(window)),
            ema_alpha: Some(cfg.ema_alpha),
            scan_sleep_millisecs: Some(ms(cfg.scan_sleep)),
            promotions_per_pass: Some(cfg.promotions_per_pass as i64),
            alloc_sleep_millisecs: Some(ms(cfg.alloc_sleep)),
            defrag: Some(cfg.defrag),
            min_bucket: Some(cfg.min_bucket as i64),
            pmu_threshold: Some(cfg.pmu_threshold),
            pmu_similar: Some(cfg.pmu_similar),
            bloat,
        };
        Ok(cfg)
    }

    /// `[policy.hpolicy]`, resolved in place.
    pub(super) fn hpolicy(&self, r: &mut RawHPolicy) -> R<HPolicyConfig> {
        let d = HPolicyConfig::default();
        let m = d.sysmon;
        let k = |name: &str| format!("policy.hpolicy.{name}");
        let (period, window) = self.window_in_period(
            "policy.hpolicy",
            ("sysmon_period_ms", r.sysmon_period_ms, m.period),
            ("sysmon_window_ms", r.sysmon_window_ms, m.window),
        )?;
        let checks = self.int(&k("checks"), r.checks, m.checks as i64, 0, 100)? as u32;
        let hot_checks = self.int(
            &k("hot_checks"),
            r.hot_checks,
            m.hot_checks as i64,
            1,
            i64::from(checks.max(1)),
        )? as u32;
        let tlb = matches!(m.source, SysMonSource::TlbMisses);
        let source = self.choice(
            &k("sysmon_source"),
            r.sysmon_source.as_deref(),
            if tlb { "tlb-misses" } else { "accessed-bits" },
            &[("tlb-misses", false), ("accessed-bits", true)],
        )?;
        let scans = self.int(&k("access_scans"), r.access_scans, 200, 1, 100_000)? as u32;
        let source = match source {
            false => SysMonSource::TlbMisses,
            true => SysMonSource::AccessedBits { scans },
        };
        let sysmon = SysMonConfig {
            source,
            period,
            window,
            sampling: TlbSampling {
                hz: self.float(&k("sample_hz"), r.sample_hz, m.sampling.hz, 1.0, 1e6)?,
                cost: Nanos(self.int(
                    &k("sample_cost_ns"),
                    r.sample_cost_ns,
                    m.sampling.cost.0 as i64,
                    0,
                    1_000_000,
                )? as u64),
            },
            cold_misses: self.float(&k("cold_misses"), r.cold_misses, m.cold_misses, 0.0, 1e12)?,
            high_tlb: self.float(&k("high_tlb"), r.high_tlb, m.high_tlb, 0.0, 1e12)?,
            checks,
            check_interval: self.period(
                &k("check_interval_ms"),
                r.check_interval_ms,
                m.check_interval,
            )?,
            hot_checks,
        };
        let cfg = HPolicyConfig {
            sysmon,
            high_pressure: self.float(
                &k("high_pressure"),
                r.high_pressure,
                d.high_pressure,
                0.0,
                1.0,
            )?,
            promote_space: self.float(
                &k("promote_space"),
                r.promote_space,
                d.promote_space,
                0.0,
                1.0,
            )?,
            promote_period: self.period(
                &k("promote_period_ms"),
                r.promote_period_ms,
                d.promote_period,
            )?,
            pressure_check: self.period(
                &k("pressure_check_ms"),
                r.pressure_check_ms,
                d.pressure_check,
            )?,
            splits_per_pass: self.int(
                &k("splits_per_pass"),
                r.splits_per_pass,
                d.splits_per_pass as i64,
                1,
                1 << 30,
            )? as u32,
        };
        *r = RawHPolicy {
            high_pressure: Some(cfg.high_pressure),
            promote_space: Some(cfg.promote_space),
            promote_period_ms: Some(ms(cfg.promote_period)),
            pressure_check_ms: Some(ms(cfg.pressure_check)),
            splits_per_pass: Some(cfg.splits_per_pass as i64),
            sysmon_period_ms: Some(ms(period)),
            sysmon_window_ms: Some(ms(window)),
            sample_hz: Some(sysmon.sampling.hz),
            sample_cost_ns: Some(sysmon.sampling.cost.0 as i64),
            cold_misses: Some(sysmon.cold_misses),
            high_tlb: Some(sysmon.high_tlb),
            checks: Some(checks as i64),
            check_interval_ms: Some(ms(sysmon.check_interval)),
            hot_checks: Some(hot_checks as i64),
            sysmon_source: Some(
                match source {
                    SysMonSource::TlbMisses => "tlb-misses",
                    SysMonSource::AccessedBits { .. } => "accessed-bits",
                }
                .into(),
            ),
            access_scans: Some(i64::from(scans)),
        };
        Ok(cfg)
    }

    /// `[policy.hawkeye.bloat]`, resolved in place.
    fn bloat(&self, r: &mut RawBloat) -> R<BloatConfig> {
        let k = |key: &str| format!("policy.hawkeye.bloat.{key}");
        let d = BloatConfig::default();
        let high = self.float(
            &k("high_watermark"),
            r.high_watermark,
            d.high_watermark,
            0.0,
            1.0,
        )?;
        let low = self.float(
            &k("low_watermark"),
            r.low_watermark,
            d.low_watermark,
            0.0,
            1.0,
        )?;
        if low > high {
            return Err(self.bad(
                &k("low_watermark"),
                format!("a share no higher than high_watermark ({high}), found {low}"),
            ));
        }
        let cfg = BloatConfig {
            enabled: r.enabled.unwrap_or(d.enabled),
            high_watermark: high,
            low_watermark: low,
            period: self.period(&k("period_ms"), r.period_ms, d.period)?,
            huge_pages_per_pass: self.int(
                &k("huge_pages_per_pass"),
                r.huge_pages_per_pass,
                d.huge_pages_per_pass as i64,
                1,
                1 << 30,
            )? as u32,
            max_zero: self.int(&k("max_zero"), r.max_zero, d.max_zero as i64, 0, 511)? as u32,
        };
        *r = RawBloat {
            enabled: Some(cfg.enabled),
            high_watermark: Some(high),
            low_watermark: Some(low),
            period_ms: Some(ms(cfg.period)),
            huge_pages_per_pass: Some(cfg.huge_pages_per_pass as i64),
            max_zero: Some(cfg.max_zero as i64),
        };
        Ok(cfg)
    }
}
