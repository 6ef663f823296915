//! Stage two for `[[app]]`: the models of the papers' applications
//! (`hugemm_workload::apps`), each table becoming one process or `count` identical ones.

use super::raw::RawApp;
use super::validate::{Validator, R};
use hugemm_hw::Nanos;
use hugemm_workload::apps::{App, AppModel, Redis};
use hugemm_workload::{Amount, ProcessSpec};

/// Most identical instances of one `[[app]]`.
const MAX_COUNT: i64 = 4096;

impl Validator<'_> {
    /// `[[app]]` number `i`: its processes.
    pub(super) fn app(&self, i: usize, a: &mut RawApp, memory: u64) -> R<Vec<ProcessSpec>> {
        let key = |k: &str| format!("app[{i}].{k}");
        let model_name = a.model.as_deref().ok_or_else(|| {
            self.bad(
                &key("model"),
                format!("one of {}", AppModel::NAMES.join(", ")),
            )
        })?;
        let model = AppModel::from_name(model_name)
            .ok_or_else(|| self.not_one_of(&key("model"), model_name, &AppModel::NAMES))?;
        a.name = Some(a.name.clone().unwrap_or_else(|| model.name().into()));
        let name = self.name(&key("name"), &a.name)?;
        let count = self.int(&key("count"), a.count, 1, 1, MAX_COUNT)?;
        let start = self.start(&key("start_ms"), &mut a.start_ms)?;
        let bytes = self.app_memory(&key("memory"), a, memory)?;
        // The length key the file gave, for errors.
        let given = if a.refs.is_some() {
            "refs"
        } else {
            "duration_s"
        };
        let run = if model.runs_to_completion() {
            if a.refs.is_some() || a.duration_s.is_some() {
                let k = given;
                return Err(self.bad(
                    &key(k),
                    format!(
                        "no `{k}` for model \"{}\": it runs until its initialisation is done",
                        model.name()
                    ),
                ));
            }
            Amount::Refs(0)
        } else {
            self.app_run(&key, a)?
        };
        let requests_per_s = match (a.requests_per_s, model.requests()) {
            (None, _) => None,
            (Some(_), None) => {
                return Err(self.bad(
                    &key("requests_per_s"),
                    format!(
                        "no `requests_per_s` for model \"{}\": only the servers (redis, \
                         redis-uneven, memcached) take requests",
                        model.name()
                    ),
                ))
            }
            (Some(x), Some(_)) => {
                Some(self.float(&key("requests_per_s"), Some(x), 0.0, 1.0, 1e8)?)
            }
        };
        if let Some(mut r) = model.requests() {
            if let Some(rate) = requests_per_s {
                r.requests_per_s = rate;
            }
            self.bursts(&key(given), model, &r, run, count as u64)?;
        }
        Ok((0..count)
            .map(|k| {
                App {
                    model,
                    name: if count == 1 {
                        name.clone()
                    } else {
                        format!("{name}-{k}")
                    },
                    bytes,
                    start,
                    run,
                    requests_per_s,
                }
                .process()
            })
            .collect())
    }

    /// A server model's run must fit in [`Redis::MAX_BATCHES`] bursts over all its
    /// instances (each burst is phases of the process, generated up front).
    fn bursts(&self, key: &str, model: AppModel, r: &Redis, run: Amount, count: u64) -> R<()> {
        let batches = r.batches(run);
        if batches.saturating_mul(count) <= Redis::MAX_BATCHES {
            return Ok(());
        }
        let batch_ms = r.batch.0 / 1_000_000;
        Err(self.bad(
            key,
            format!(
                "a {} run of at most {} bursts of {batch_ms} ms in all instances \
                 ({} s, or {} references), found {batches} x {count}",
                model.name(),
                Redis::MAX_BATCHES,
                Redis::MAX_BATCHES * batch_ms / 1000,
                Redis::MAX_BATCHES * r.refs_per_batch()
            ),
        ))
    }

    fn app_memory(&self, key: &str, a: &RawApp, memory: u64) -> R<u64> {
        let raw = a
            .memory
            .as_ref()
            .ok_or_else(|| self.bad(key, "the memory the application uses, e.g. \"4GiB\""))?;
        let bytes = self.size(key, raw)?;
        if bytes < App::MIN_BYTES || bytes % 4096 != 0 || bytes > memory {
            return Err(self.bad(
                key,
                format!(
                    "a multiple of 4 KiB from {} MiB to the machine's memory ({memory} bytes), found {bytes}",
                    App::MIN_BYTES >> 20
                ),
            ));
        }
        Ok(bytes)
    }

    fn app_run(&self, key: &dyn Fn(&str) -> String, a: &RawApp) -> R<Amount> {
        match (a.refs, a.duration_s) {
            (Some(n), None) => Ok(Amount::Refs(
                self.int(&key("refs"), Some(n), 0, 1, i64::MAX)? as u64,
            )),
            (None, Some(s)) => {
                let s = self.float(&key("duration_s"), Some(s), 0.0, 1e-6, 1e9)?;
                Ok(Amount::Duration(Nanos((s * 1e9).round() as u64)))
            }
            _ => Err(self.bad(
                &key("refs"),
                "exactly one of `refs` (memory references after initialisation) and \
                 `duration_s` (simulated seconds after initialisation)",
            )),
        }
    }
}
