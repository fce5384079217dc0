//! Watch streams: HTTP 200, chunked, one compact `{"type":…,"object":…}` JSON line per event,
//! headers sent at once. Bookmarks (`allowWatchBookmarks`), watch-list (`sendInitialEvents`,
//! ending with the `k8s.io/initial-events-end` bookmark) and `timeoutSeconds` as Kubernetes;
//! a watch that cannot start because its resourceVersion is compacted is a 200 with one ERROR
//! event carrying the 410 Status, as kube-apiserver answers it.

use super::fallback::to_table;
use super::negotiate::Accept;
use super::reply::{Failure, Reply};
use super::verbs::Ctx;
use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use fieldstore_engine::store::{WatchEvent, WatchOptions};
use fieldstore_engine::Reason;
use http::{header, HeaderValue};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// How long a watch without `timeoutSeconds` lasts (kube-apiserver picks 30 to 60 minutes).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);

/// Serves a watch of the context's resource (of one object when the path names it).
pub(crate) async fn serve(ctx: &Ctx<'_>) -> Reply {
    ctx.admit("watch")?;
    let mut field_selector = ctx.q.string("fieldSelector");
    if let Some(name) = &ctx.t.name {
        let by_name = format!("metadata.name={name}");
        field_selector = Some(field_selector.map_or(by_name.clone(), |f| format!("{f},{by_name}")));
    }
    let opts = WatchOptions {
        resource_version: ctx.q.string("resourceVersion"),
        label_selector: ctx.q.string("labelSelector"),
        field_selector,
        allow_bookmarks: ctx.q.flag("allowWatchBookmarks")?,
        send_initial_events: ctx.q.opt_flag("sendInitialEvents")?,
    };
    let timeout = ctx.q.number("timeoutSeconds")?.map_or(DEFAULT_TIMEOUT, Duration::from_secs);
    let table = (ctx.accept == Accept::Table).then_some(()).map(|_| ctx.t.spec.clone());
    let include = if table.is_some() { Some(ctx.include_object()?) } else { None };
    let slot = ctx.h.svc.reserve_watch(&ctx.id.user)?;
    let (resource, ns) = (ctx.t.spec.resource(), ctx.t.namespace.clone());
    let started = ctx.call(move |s| s.watch(&resource, ns.as_deref(), &opts)).await;
    let (api_version, kind) = (ctx.t.spec.api_version(), ctx.t.spec.kind.clone());
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::convert::Infallible>>(256);
    let mut watch = match started {
        Ok(w) => w,
        // A start before the compacted revision: 200, then the 410 as an ERROR event.
        Err(f) if f.reason() == Reason::Expired.as_str() => {
            let line = line(&json!({"type": "ERROR", "object": f.0}));
            let _ = tx.try_send(Ok(line));
            drop(tx);
            return Ok(stream(rx));
        }
        Err(f) => return Err(f),
    };
    let shutdown = ctx.h.svc.shutdown.clone();
    let store = ctx.h.svc.store.clone();
    let allow_bookmarks = ctx.q.flag("allowWatchBookmarks")?;
    // A thread of its own per watch, as the gRPC watches: they are long-lived, and the
    // blocking pool is what unary requests run on.
    let spawned = std::thread::Builder::new().name("fieldstore-http-watch".into()).spawn(move || {
        let _slot = slot;
        let end = Instant::now() + timeout;
        let mut columns_sent = false;
        let send = |ev: &WatchEvent, columns_sent: &mut bool| -> bool {
            let mut event = ev.to_json(&api_version, &kind);
            if let (Some(spec), Some(include), WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o)) =
                (&table, include, ev)
            {
                let meta = json!({"resourceVersion": o.pointer("/metadata/resourceVersion").cloned().unwrap_or(Value::Null)});
                let mut t = to_table(spec, std::slice::from_ref(&**o), include, meta);
                // Column definitions come with the first event only, as kube-apiserver sends them.
                if *columns_sent {
                    t["columnDefinitions"] = json!([]);
                }
                *columns_sent = true;
                event["object"] = t;
            }
            tx.blocking_send(Ok(line(&event))).is_ok()
        };
        loop {
            if *shutdown.borrow() {
                if allow_bookmarks {
                    // The server is stopping: a last bookmark tells the client where to resume.
                    send(&WatchEvent::Bookmark { revision: store.revision(), initial_events_end: false }, &mut columns_sent);
                }
                return;
            }
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            match watch.next_timeout(left.min(Duration::from_millis(200))) {
                Some(ev) => {
                    let is_error = matches!(ev, WatchEvent::Error(_));
                    if !send(&ev, &mut columns_sent) || is_error {
                        return;
                    }
                }
                None if watch.is_ended() || tx.is_closed() => return,
                None => {}
            }
        }
    });
    spawned.map_err(|e| Failure::new(Reason::InternalError, format!("cannot start the watch: {e}")))?;
    Ok(stream(rx))
}

/// One event as a line of compact JSON.
fn line(event: &Value) -> Bytes {
    let mut b = serde_json::to_vec(event).unwrap_or_default();
    b.push(b'\n');
    Bytes::from(b)
}

/// The streaming 200 response of a watch.
fn stream(rx: tokio::sync::mpsc::Receiver<Result<Bytes, std::convert::Infallible>>) -> Response {
    let body = Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(rx));
    let mut r = Response::new(body);
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache, private"));
    r
}
