//! Server metrics in the Prometheus text format: request counts by RPC and gRPC status, latency
//! histograms by RPC, open watches, the revision and the compaction lag — served on
//! `GET /metrics` of `--metrics ADDR`. Requests are also logged (`tracing`, debug level).
//!
//! Every label value comes from a closed set, whatever a client sends: the standard HTTP
//! methods ([`http_method_label`]), the gRPC methods the server's services define
//! ([`grpc_method_label`]), the standard HTTP status codes and the gRPC status codes; anything
//! else is `other`. (A label per distinct value a client chose let unauthenticated requests grow
//! the page without bound.)

use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, LazyLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// The label of what is outside a closed set of label values.
pub const OTHER: &str = "other";

/// The method label of an HTTP API request: `HTTP <METHOD>` for the standard methods,
/// `HTTP other` for any other.
pub fn http_method_label(method: &http::Method) -> &'static str {
    use http::Method;
    match *method {
        Method::GET => "HTTP GET",
        Method::HEAD => "HTTP HEAD",
        Method::POST => "HTTP POST",
        Method::PUT => "HTTP PUT",
        Method::PATCH => "HTTP PATCH",
        Method::DELETE => "HTTP DELETE",
        Method::OPTIONS => "HTTP OPTIONS",
        _ => "HTTP other",
    }
}

/// The code label of an HTTP response: its status code when it is a standard one, else
/// `other`.
pub fn http_code_label(status: http::StatusCode) -> &'static str {
    static CODES: LazyLock<HashMap<u16, String>> = LazyLock::new(|| {
        (100..=599)
            .filter_map(|n| http::StatusCode::from_u16(n).ok())
            .filter(|s| s.canonical_reason().is_some())
            .map(|s| (s.as_u16(), s.as_str().to_string()))
            .collect()
    });
    CODES.get(&status.as_u16()).map_or(OTHER, String::as_str)
}

/// The gRPC status codes (`grpc-status`), 0 (OK) to 16 (Unauthenticated).
const GRPC_CODES: [&str; 17] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16"];

/// The code label of a gRPC response's `grpc-status` (absent: OK, `0`); `other` for a value
/// that is no gRPC status code.
pub fn grpc_code_label(status: Option<&http::HeaderValue>) -> &'static str {
    match status {
        None => GRPC_CODES[0],
        Some(v) => v.to_str().ok().and_then(|s| GRPC_CODES.iter().find(|c| **c == s)).copied().unwrap_or(OTHER),
    }
}

/// The method label of a gRPC request path (`/package.Service/Method`): the method's name for
/// fieldstore's own service (`Apply`), `package.Service/Method` for the health and reflection
/// services and the etcd API (`etcdserverpb.KV/Range`), `other` for any path no service of the
/// server defines.
pub fn grpc_method_label(path: &str) -> &'static str {
    GRPC_METHODS.get(path).map_or(OTHER, String::as_str)
}

/// Every gRPC method the server serves, by path, with its label: read from the descriptor sets
/// of fieldstore's API, gRPC health and reflection (v1), and the etcd API.
static GRPC_METHODS: LazyLock<HashMap<String, String>> = LazyLock::new(|| {
    use prost::Message;
    let own = crate::proto::pb::store_server::SERVICE_NAME;
    let sets = [
        crate::proto::FILE_DESCRIPTOR_SET,
        tonic_health::pb::FILE_DESCRIPTOR_SET,
        tonic_reflection::pb::v1::FILE_DESCRIPTOR_SET,
        crate::proto::ETCD_FILE_DESCRIPTOR_SET,
    ];
    let mut out = HashMap::new();
    for set in sets {
        let Ok(set) = prost_types::FileDescriptorSet::decode(set) else { continue };
        for file in &set.file {
            for service in &file.service {
                let service_name = format!("{}.{}", file.package(), service.name());
                for method in &service.method {
                    let label = if service_name == own { method.name().to_string() } else { format!("{service_name}/{}", method.name()) };
                    out.insert(format!("/{service_name}/{}", method.name()), label);
                }
            }
        }
    }
    out
});

/// Upper bounds of the latency histogram buckets, in seconds.
const BUCKETS: [f64; 10] = [0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1.0, 5.0];

#[derive(Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    total: u64,
    sum: f64,
}

/// What the server counts.
#[derive(Default)]
pub struct Metrics {
    /// Requests by method and code label; labels are `'static`, taken from the closed sets of
    /// the module's label functions, never built from what a client sent.
    requests: Mutex<BTreeMap<(&'static str, &'static str), u64>>,
    latency: Mutex<BTreeMap<&'static str, Histogram>>,
    /// Watches open now.
    pub open_watches: AtomicI64,
}

impl Metrics {
    /// Records one finished request of `method` with status `code` (labels of the closed sets of
    /// [`http_method_label`], [`grpc_method_label`], [`http_code_label`], [`grpc_code_label`]).
    pub fn observe(&self, method: &'static str, code: &'static str, elapsed: Duration) {
        *self.requests.lock().entry((method, code)).or_default() += 1;
        let secs = elapsed.as_secs_f64();
        let mut lat = self.latency.lock();
        let h = lat.entry(method).or_default();
        for (i, b) in BUCKETS.iter().enumerate() {
            if secs <= *b {
                h.counts[i] += 1;
            }
        }
        h.total += 1;
        h.sum += secs;
    }

    /// The Prometheus text exposition, with the store's revision and compacted revision.
    pub fn render(&self, revision: u64, compacted: u64) -> String {
        let mut out = String::new();
        out.push_str(
            "# HELP fieldstore_requests_total Requests by method (gRPC method, or HTTP <METHOD> for the Kubernetes API) and status code.\n# TYPE fieldstore_requests_total counter\n",
        );
        for ((m, c), n) in self.requests.lock().iter() {
            out.push_str(&format!("fieldstore_requests_total{{method=\"{m}\",code=\"{c}\"}} {n}\n"));
        }
        out.push_str("# HELP fieldstore_request_duration_seconds Request latency by method (to the response headers for streams).\n# TYPE fieldstore_request_duration_seconds histogram\n");
        for (m, h) in self.latency.lock().iter() {
            for (i, b) in BUCKETS.iter().enumerate() {
                out.push_str(&format!("fieldstore_request_duration_seconds_bucket{{method=\"{m}\",le=\"{b}\"}} {}\n", h.counts[i]));
            }
            out.push_str(&format!("fieldstore_request_duration_seconds_bucket{{method=\"{m}\",le=\"+Inf\"}} {}\n", h.total));
            out.push_str(&format!("fieldstore_request_duration_seconds_sum{{method=\"{m}\"}} {}\n", h.sum));
            out.push_str(&format!("fieldstore_request_duration_seconds_count{{method=\"{m}\"}} {}\n", h.total));
        }
        out.push_str(&format!(
            "# HELP fieldstore_watches Open watches.\n# TYPE fieldstore_watches gauge\nfieldstore_watches {}\n",
            self.open_watches.load(Ordering::Relaxed)
        ));
        out.push_str(&format!(
            "# HELP fieldstore_revision The store's current revision.\n# TYPE fieldstore_revision gauge\nfieldstore_revision {revision}\n"
        ));
        out.push_str(&format!("# HELP fieldstore_compacted_revision The compacted revision.\n# TYPE fieldstore_compacted_revision gauge\nfieldstore_compacted_revision {compacted}\n"));
        out.push_str(&format!(
            "# HELP fieldstore_compaction_lag_revisions Revisions kept since the compacted revision.\n# TYPE fieldstore_compaction_lag_revisions gauge\nfieldstore_compaction_lag_revisions {}\n",
            revision.saturating_sub(compacted)
        ));
        out
    }
}

/// The tower layer that times every request.
#[derive(Clone)]
pub struct MetricsLayer(pub Arc<Metrics>);

impl<S> tower::Layer<S> for MetricsLayer {
    type Service = MetricsService<S>;
    fn layer(&self, inner: S) -> Self::Service {
        MetricsService { inner, metrics: self.0.clone() }
    }
}

/// A service timed by [`MetricsLayer`].
#[derive(Clone)]
pub struct MetricsService<S> {
    inner: S,
    metrics: Arc<Metrics>,
}

impl<S, B, R> tower::Service<http::Request<B>> for MetricsService<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<R>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let method = grpc_method_label(req.uri().path());
        let start = Instant::now();
        let fut = self.inner.call(req);
        let metrics = self.metrics.clone();
        Box::pin(async move {
            let res = fut.await;
            // Errors answered at once carry grpc-status in the headers; successes (and stream
            // ends) carry it in the trailers, counted as OK here.
            let code = match &res {
                Ok(r) => grpc_code_label(r.headers().get("grpc-status")),
                Err(_) => "transport",
            };
            let elapsed = start.elapsed();
            tracing::debug!(%method, %code, elapsed_ms = elapsed.as_secs_f64() * 1000.0, "request");
            metrics.observe(method, code, elapsed);
            res
        })
    }
}

/// Serves `GET /metrics` on `listener` until the process ends; a client has `header_read_timeout`
/// to send its request.
pub async fn serve(
    listener: tokio::net::TcpListener,
    metrics: Arc<Metrics>,
    store: fieldstore_engine::store::Store,
    header_read_timeout: Duration,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    loop {
        let mut sock = match listener.accept().await {
            Ok((sock, _)) => sock,
            Err(e) => {
                tracing::warn!(error = %e, listener = "metrics", "accept");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let metrics = metrics.clone();
        let store = store.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 4096];
            let mut n = 0;
            let read = async {
                while n < buf.len() {
                    match sock.read(&mut buf[n..]).await {
                        Ok(0) | Err(_) => return false,
                        Ok(k) => n += k,
                    }
                    if buf[..n].windows(4).any(|w| w == b"\r\n\r\n") {
                        break;
                    }
                }
                true
            };
            if !tokio::time::timeout(header_read_timeout, read).await.unwrap_or(false) {
                return;
            }
            let head = String::from_utf8_lossy(&buf[..n]);
            let (status, body) = if head.starts_with("GET /metrics ") {
                ("200 OK", metrics.render(store.revision().0, store.compacted_revision().0))
            } else {
                ("404 Not Found", "not found: try GET /metrics\n".to_string())
            };
            let resp = format!(
                "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = sock.write_all(resp.as_bytes()).await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counts_and_cumulative_buckets() {
        let m = Metrics::default();
        m.observe("Apply", "0", Duration::from_millis(3));
        m.observe("Apply", "10", Duration::from_millis(30));
        let text = m.render(7, 2);
        assert!(text.contains("fieldstore_requests_total{method=\"Apply\",code=\"10\"} 1"));
        assert!(text.contains("fieldstore_request_duration_seconds_bucket{method=\"Apply\",le=\"0.005\"} 1"));
        assert!(text.contains("fieldstore_request_duration_seconds_bucket{method=\"Apply\",le=\"0.05\"} 2"));
        assert!(text.contains("fieldstore_request_duration_seconds_count{method=\"Apply\"} 2"));
        assert!(text.contains("fieldstore_compaction_lag_revisions 5"));
    }

    #[test]
    fn labels_come_from_closed_sets() {
        assert_eq!(grpc_method_label("/fieldstore.v1.Store/Apply"), "Apply");
        assert_eq!(grpc_method_label("/fieldstore.v1.Store/Watch"), "Watch");
        assert_eq!(grpc_method_label("/grpc.health.v1.Health/Check"), "grpc.health.v1.Health/Check");
        assert_eq!(
            grpc_method_label("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"),
            "grpc.reflection.v1.ServerReflection/ServerReflectionInfo"
        );
        for unknown in ["/fieldstore.v1.Store/Nope", "/x.Y/Apply", "Apply", "", "/fieldstore.v1.Store/Apply/x"] {
            assert_eq!(grpc_method_label(unknown), OTHER, "{unknown}");
        }
        assert_eq!(http_method_label(&http::Method::PATCH), "HTTP PATCH");
        assert_eq!(http_method_label(&http::Method::from_bytes(b"BREW").unwrap()), "HTTP other");
        assert_eq!(http_code_label(http::StatusCode::UNAUTHORIZED), "401");
        assert_eq!(http_code_label(http::StatusCode::from_u16(599).unwrap()), OTHER);
        let code = |v: &'static str| grpc_code_label(Some(&http::HeaderValue::from_static(v)));
        assert_eq!((grpc_code_label(None), code("5"), code("16"), code("17"), code("05")), ("0", "5", "16", OTHER, OTHER));
    }
}
