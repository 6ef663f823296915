//! Stage two for `[[kv_server]]`: a Redis-like key-value server
//! (`hugemm_workload::kv`) and its steps, one process each.

use super::raw::{RawKvServer, RawKvStep, RawSize};
use super::validate::{Validator, R};
use hugemm_hw::Nanos;
use hugemm_workload::kv::{kv_server, KvOp, KvServer, KvStep};
use hugemm_workload::ProcessSpec;

/// Most keys one step may insert, and requests one step may serve.
const MAX_REQUESTS: i64 = 1 << 32;

impl Validator<'_> {
    /// `[[kv_server]]` number `i`.
    pub(super) fn kv_server(&self, i: usize, k: &mut RawKvServer, seed: u64) -> R<ProcessSpec> {
        let key = |s: &str| format!("kv_server[{i}].{s}");
        let d = KvServer::default();
        let name = self.name(&key("name"), &k.name)?;
        let start = self.start(&key("start_ms"), &mut k.start_ms)?;
        let heap_bytes = match &k.heap {
            Some(raw) => self.size(&key("heap"), raw)?,
            None => d.heap_bytes,
        };
        if !(1 << 20..=1 << 46).contains(&heap_bytes) || heap_bytes % 4096 != 0 {
            return Err(self.bad(
                &key("heap"),
                format!("a multiple of 4 KiB from 1 MiB to 64 TiB, found {heap_bytes}"),
            ));
        }
        k.heap = Some(RawSize::Bytes(heap_bytes as i64));
        let cpu_us = self.float(
            &key("request_cpu_us"),
            k.request_cpu_us,
            d.request_cpu.0 as f64 / 1e3,
            0.0,
            1e9,
        )?;
        k.request_cpu_us = Some(cpu_us);
        let key_bytes = self.int(&key("key_size"), k.key_size, d.key_bytes as i64, 1, 1 << 20)?;
        k.key_size = Some(key_bytes);
        let server = KvServer {
            heap_bytes,
            request_cpu: Nanos((cpu_us * 1e3).round() as u64),
            key_bytes: key_bytes as u64,
            seed: seed.wrapping_add(0x6b76 + i as u64),
        };
        if k.steps.is_empty() {
            return Err(self.bad(
                &key("step"),
                "at least one [[kv_server.step]] (op = insert, delete, get or idle)",
            ));
        }
        let steps = k
            .steps
            .iter_mut()
            .enumerate()
            .map(|(j, s)| self.kv_step(&format!("kv_server[{i}].step[{j}]"), s, heap_bytes))
            .collect::<R<Vec<_>>>()?;
        Ok(kv_server(&name, start, server, &steps))
    }

    fn kv_step(&self, at: &str, s: &mut RawKvStep, heap: u64) -> R<KvStep> {
        let key = |k: &str| format!("{at}.{k}");
        let op =
            s.op.clone()
                .ok_or_else(|| self.bad(&key("op"), "an op: one of insert, delete, get, idle"))?;
        let allowed: &[&str] = match op.as_str() {
            "insert" => &["keys", "value_size"],
            "delete" => &["share"],
            "get" => &["requests"],
            "idle" => &["duration_s"],
            _ => {
                return Err(self.bad(
                    &key("op"),
                    format!("one of insert, delete, get, idle, found \"{op}\""),
                ))
            }
        };
        let present = [
            ("keys", s.keys.is_some()),
            ("value_size", s.value_size.is_some()),
            ("share", s.share.is_some()),
            ("requests", s.requests.is_some()),
            ("duration_s", s.duration_s.is_some()),
        ];
        if let Some((k, _)) = present.iter().find(|(k, set)| *set && !allowed.contains(k)) {
            return Err(self.bad(
                &key(k),
                format!(
                    "no `{k}` for op \"{op}\" (it takes: {})",
                    allowed.join(", ")
                ),
            ));
        }
        let required = |v: Option<i64>, k: &str, what: &str| {
            let v = v.ok_or_else(|| self.bad(&key(k), format!("{what}, e.g. 1000")))?;
            self.int(&key(k), Some(v), 0, 1, MAX_REQUESTS)
        };
        Ok(match op.as_str() {
            "insert" => {
                let keys = required(s.keys, "keys", "the number of keys to insert")?;
                let raw = s.value_size.as_ref().ok_or_else(|| {
                    self.bad(&key("value_size"), "the bytes of each value, e.g. \"4086\"")
                })?;
                let value_bytes = self.size(&key("value_size"), raw)?;
                if value_bytes == 0 || value_bytes > heap / 2 {
                    return Err(self.bad(
                        &key("value_size"),
                        format!("a size from 1 byte to half the heap, found {value_bytes}"),
                    ));
                }
                s.keys = Some(keys);
                s.value_size = Some(RawSize::Bytes(value_bytes as i64));
                KvStep::Op(KvOp::Insert {
                    keys: keys as u64,
                    value_bytes,
                })
            }
            "delete" => {
                let share = self.float(&key("share"), s.share, 1.0, 0.0, 1.0)?;
                s.share = Some(share);
                KvStep::Op(KvOp::Delete { share })
            }
            "get" => {
                let requests = required(s.requests, "requests", "the number of gets to serve")?;
                s.requests = Some(requests);
                KvStep::Op(KvOp::Get {
                    requests: requests as u64,
                })
            }
            _ => {
                let secs = s.duration_s.ok_or_else(|| {
                    self.bad(&key("duration_s"), "the idle time in seconds, e.g. 60")
                })?;
                let secs = self.float(&key("duration_s"), Some(secs), 0.0, 1e-6, 1e9)?;
                s.duration_s = Some(secs);
                KvStep::Idle(Nanos((secs * 1e9).round() as u64))
            }
        })
    }
}
