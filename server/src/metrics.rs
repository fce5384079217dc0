//! Server metrics in the Prometheus text format: request counts by RPC and gRPC status, latency
//! histograms by RPC, open watches, the revision and the compaction lag — served on
//! `GET /metrics` of `--metrics ADDR`. Requests are also logged (`tracing`, debug level).

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

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
    requests: Mutex<BTreeMap<(String, String), u64>>,
    latency: Mutex<BTreeMap<String, Histogram>>,
    /// Watches open now.
    pub open_watches: AtomicI64,
}

impl Metrics {
    /// Records one finished request of `method` with gRPC status `code`.
    pub fn observe(&self, method: &str, code: &str, elapsed: Duration) {
        *self.requests.lock().entry((method.to_string(), code.to_string())).or_default() += 1;
        let secs = elapsed.as_secs_f64();
        let mut lat = self.latency.lock();
        let h = lat.entry(method.to_string()).or_default();
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
        let method = req.uri().path().rsplit('/').next().unwrap_or("").to_string();
        let start = Instant::now();
        let fut = self.inner.call(req);
        let metrics = self.metrics.clone();
        Box::pin(async move {
            let res = fut.await;
            // Errors answered at once carry grpc-status in the headers; successes (and stream
            // ends) carry it in the trailers, counted as OK here.
            let code = match &res {
                Ok(r) => r.headers().get("grpc-status").and_then(|v| v.to_str().ok()).unwrap_or("0").to_string(),
                Err(_) => "transport".into(),
            };
            let elapsed = start.elapsed();
            tracing::debug!(%method, %code, elapsed_ms = elapsed.as_secs_f64() * 1000.0, "request");
            metrics.observe(&method, &code, elapsed);
            res
        })
    }
}

/// Serves `GET /metrics` on `listener` until the process ends.
pub async fn serve(listener: tokio::net::TcpListener, metrics: Arc<Metrics>, store: fieldstore_engine::store::Store) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    loop {
        let Ok((mut sock, _)) = listener.accept().await else { continue };
        let metrics = metrics.clone();
        let store = store.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 4096];
            let mut n = 0;
            while n < buf.len() {
                match sock.read(&mut buf[n..]).await {
                    Ok(0) | Err(_) => return,
                    Ok(k) => n += k,
                }
                if buf[..n].windows(4).any(|w| w == b"\r\n\r\n") {
                    break;
                }
            }
            let head = String::from_utf8_lossy(&buf[..n]);
            let (status, body) = if head.starts_with("GET /metrics ") {
                ("200 OK", metrics.render(store.revision(), store.compacted_revision()))
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
}
