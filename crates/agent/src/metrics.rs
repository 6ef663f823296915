//! The agent's Prometheus metrics, and the endpoint that serves them on a loopback
//! address.
//!
//! | metric | type | what |
//! |---|---|---|
//! | `hugemm_agent_collapses_total` | counter | regions collapsed (in a dry run: that would have been) |
//! | `hugemm_agent_collapse_failures_total{reason}` | counter | collapses the kernel refused, by errno class (`gone`, `permission`, `not-eligible`, `no-memory`, `transient`, `other`) |
//! | `hugemm_agent_collapses_deferred_total` | counter | collapses the rate limit put off |
//! | `hugemm_agent_collapse_seconds_total` | counter | wall time spent in `process_madvise` |
//! | `hugemm_agent_targets` | gauge | processes tracked |
//! | `hugemm_agent_regions_tracked` | gauge | 2 MB regions of the targets the policy may act on |
//! | `hugemm_agent_huge_regions` | gauge | of those, regions a huge page maps |
//! | `hugemm_agent_cpu_seconds_total` | counter | the agent's own CPU time (user + system) |
//! | `hugemm_agent_free_huge_blocks` | gauge | free 2 MB blocks (`/proc/buddyinfo`, orders >= 9) |
//! | `hugemm_agent_fmfi` | gauge | the free memory fragmentation index for 2 MB (Ingens' FMFI) |
//! | `hugemm_agent_memory_pressure_avg10{kind}` | gauge | `/proc/pressure/memory`'s `some` and `full` avg10, percent |
//!
//! Only a loopback address is accepted: the metrics name processes' memory layout, and an
//! agent that runs as root should not publish them to the network.

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// The agent's metrics (cheap to clone: every handle shares its value).
#[derive(Clone, Debug)]
pub struct Metrics {
    registry: Arc<Registry>,
    /// Regions collapsed.
    pub collapses: Counter,
    /// Collapses refused, by reason.
    pub failures: Family<Vec<(String, String)>, Counter>,
    /// Collapses put off by the rate limit.
    pub deferred: Counter,
    /// Time in `process_madvise`.
    pub collapse_seconds: Counter<f64, AtomicU64>,
    /// Targets tracked.
    pub targets: Gauge,
    /// Regions tracked.
    pub regions: Gauge,
    /// Regions mapped huge.
    pub huge_regions: Gauge,
    /// The agent's CPU time.
    pub cpu_seconds: Counter<f64, AtomicU64>,
    /// Free 2 MB blocks.
    pub free_huge_blocks: Gauge,
    /// FMFI for 2 MB.
    pub fmfi: Gauge<f64, AtomicU64>,
    /// Memory pressure (PSI avg10), by `some` and `full`.
    pub pressure: Family<Vec<(String, String)>, Gauge<f64, AtomicU64>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

/// Why the endpoint cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    /// Not a loopback address.
    #[error(
        "the metrics address {0} is not a loopback address (use 127.0.0.1:PORT or [::1]:PORT)"
    )]
    NotLoopback(SocketAddr),
    /// The address cannot be bound.
    #[error("cannot serve metrics on {addr}: {error}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        error: String,
    },
}

impl Metrics {
    /// Fresh metrics, registered.
    pub fn new() -> Metrics {
        let (collapses, failures, deferred) =
            (Counter::default(), Family::default(), Counter::default());
        let collapse_seconds = Counter::default();
        let (targets, regions, huge_regions) =
            (Gauge::default(), Gauge::default(), Gauge::default());
        let cpu_seconds = Counter::default();
        let (free_huge_blocks, fmfi, pressure) =
            (Gauge::default(), Gauge::default(), Family::default());
        let mut r = Registry::with_prefix("hugemm_agent");
        r.register(
            "collapses",
            "Regions collapsed (in a dry run: that would have been)",
            collapses.clone(),
        );
        r.register(
            "collapse_failures",
            "Collapses the kernel refused, by errno class",
            failures.clone(),
        );
        r.register(
            "collapses_deferred",
            "Collapses the rate limit put off",
            deferred.clone(),
        );
        r.register(
            "collapse_seconds",
            "Wall time spent in process_madvise(MADV_COLLAPSE)",
            collapse_seconds.clone(),
        );
        r.register("targets", "Processes tracked", targets.clone());
        r.register(
            "regions_tracked",
            "2 MB regions of the targets the policy may act on",
            regions.clone(),
        );
        r.register(
            "huge_regions",
            "Tracked regions a huge page maps",
            huge_regions.clone(),
        );
        r.register(
            "cpu_seconds",
            "The agent's own CPU time (user + system)",
            cpu_seconds.clone(),
        );
        r.register(
            "free_huge_blocks",
            "Free 2 MB blocks (buddyinfo, orders >= 9)",
            free_huge_blocks.clone(),
        );
        r.register(
            "fmfi",
            "Free memory fragmentation index for 2 MB (Ingens' FMFI)",
            fmfi.clone(),
        );
        r.register(
            "memory_pressure_avg10",
            "/proc/pressure/memory avg10 (percent), by some and full",
            pressure.clone(),
        );
        Metrics {
            registry: Arc::new(r),
            free_huge_blocks,
            fmfi,
            pressure,
            collapses,
            failures,
            deferred,
            collapse_seconds,
            targets,
            regions,
            huge_regions,
            cpu_seconds,
        }
    }

    /// Set the memory pressure gauge of `kind` (`some`, `full`).
    pub fn set_pressure(&self, kind: &str, avg10: f64) {
        self.pressure
            .get_or_create(&vec![("kind".to_string(), kind.to_string())])
            .set(avg10);
    }

    /// Count one refused collapse.
    pub fn failed(&self, reason: &str) {
        self.failures
            .get_or_create(&vec![("reason".to_string(), reason.to_string())])
            .inc();
    }

    /// The metrics in Prometheus' text format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }

    /// Serve the metrics at `addr` (loopback only; port 0 picks a free one) on a
    /// background thread, for the life of the process. Returns the address served.
    pub fn serve(&self, addr: SocketAddr) -> Result<SocketAddr, MetricsError> {
        if !addr.ip().is_loopback() {
            return Err(MetricsError::NotLoopback(addr));
        }
        let server = tiny_http::Server::http(addr).map_err(|e| MetricsError::Bind {
            addr,
            error: e.to_string(),
        })?;
        let served = server.server_addr().to_ip().unwrap_or(addr);
        let metrics = self.clone();
        std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || {
                let header = tiny_http::Header::from_bytes(
                    &b"Content-Type"[..],
                    &b"text/plain; version=0.0.4; charset=utf-8"[..],
                )
                .ok();
                for request in server.incoming_requests() {
                    let response = if request.url() == "/metrics" {
                        let r = tiny_http::Response::from_string(metrics.render());
                        match &header {
                            Some(h) => r.with_header(h.clone()),
                            None => r,
                        }
                    } else {
                        tiny_http::Response::from_string("see /metrics\n").with_status_code(404)
                    };
                    // A scraper that hung up is no concern of the agent's.
                    let _ = request.respond(response);
                }
            })
            .map_err(|e| MetricsError::Bind {
                addr,
                error: e.to_string(),
            })?;
        Ok(served)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn metrics_render_in_prometheus_text_format() {
        let m = Metrics::new();
        m.collapses.inc_by(3);
        m.failed("gone");
        m.targets.set(2);
        m.set_pressure("some", 1.5);
        m.fmfi.set(0.25);
        let text = m.render();
        assert!(
            text.contains("hugemm_agent_memory_pressure_avg10{kind=\"some\"} 1.5"),
            "{text}"
        );
        assert!(text.contains("hugemm_agent_fmfi 0.25"), "{text}");
        assert!(text.contains("hugemm_agent_collapses_total 3"), "{text}");
        assert!(
            text.contains("hugemm_agent_collapse_failures_total{reason=\"gone\"} 1"),
            "{text}"
        );
        assert!(text.contains("hugemm_agent_targets 2"), "{text}");
    }

    #[test]
    fn only_loopback_is_served_and_it_answers_a_scrape() {
        let m = Metrics::new();
        let public: SocketAddr = "0.0.0.0:0".parse().unwrap();
        assert!(matches!(m.serve(public), Err(MetricsError::NotLoopback(_))));
        m.collapses.inc();
        let addr = m.serve("127.0.0.1:0".parse().unwrap()).unwrap();
        assert!(addr.ip().is_loopback() && addr.port() != 0, "{addr}");
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
        let mut body = String::new();
        s.read_to_string(&mut body).unwrap();
        assert!(
            body.starts_with("HTTP/1.0 200") || body.starts_with("HTTP/1.1 200"),
            "{body}"
        );
        assert!(body.contains("hugemm_agent_collapses_total 1"), "{body}");
    }
}
