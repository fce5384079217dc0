//! Watch streams: HTTP 200, chunked, one compact `{"type":…,"object":…}` JSON line per event,
//! headers sent at once. Bookmarks (`allowWatchBookmarks`), watch-list (`sendInitialEvents`,
//! ending with the `k8s.io/initial-events-end` bookmark) and `timeoutSeconds` as Kubernetes;
//! a watch that cannot start because its resourceVersion is compacted is a 200 with one ERROR
//! event carrying the 410 Status, as kube-apiserver answers it.

use super::negotiate::Form;
use super::reply::Reply;
use super::request::Ctx;
use super::table::{table as to_table, IncludeObject};
use crate::api::{body, next_event, Next, Request, Response as Answer};
use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use fieldstore_engine::store::{WatchEvent, WatchOptions};
use fieldstore_engine::Reason;
use http::{header, HeaderValue};
use serde_json::{json, Value};
use std::time::Duration;

/// How long a watch without `timeoutSeconds` lasts (kube-apiserver picks 30 to 60 minutes).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);

/// Serves a watch of the context's resource (of one object when the path names it).
pub(crate) async fn serve(ctx: &Ctx<'_>) -> Reply {
    ctx.q.list_options(true)?;
    let mut field_selector = ctx.q.string("fieldSelector");
    if let Some(name) = &ctx.t.name {
        let by_name = format!("metadata.name={name}");
        field_selector = Some(field_selector.map_or(by_name.clone(), |f| format!("{f},{by_name}")));
    }
    let allow_bookmarks = ctx.q.flag("allowWatchBookmarks");
    let opts = WatchOptions {
        resource_version: ctx.q.string("resourceVersion"),
        label_selector: ctx.q.string("labelSelector"),
        field_selector,
        allow_bookmarks,
        send_initial_events: ctx.q.opt_flag("sendInitialEvents"),
    };
    let timeout = ctx.q.number("timeoutSeconds")?.map_or(DEFAULT_TIMEOUT, Duration::from_secs);
    // A timeout beyond what the clock can count (`timeoutSeconds=18446744073709551615`) is a
    // watch without end, not an overflow.
    let end = tokio::time::Instant::now().checked_add(timeout);
    let table = (ctx.accept.form == Form::Table).then_some(()).map(|_| ctx.t.spec.clone());
    let include = if table.is_some() { Some(ctx.include_object()?) } else { None };
    let started = ctx.run(Request::Watch { of: ctx.collection(), opts }).await;
    let (api_version, kind) = (ctx.t.spec.api_version(), ctx.t.spec.kind.clone());
    let opened = match started {
        Ok(Answer::Watch(o)) => o,
        Ok(_) => return Err(super::reply::Failure::from(crate::api::mismatch("a watch"))),
        // A start before the compacted revision: 200, then the 410 as an ERROR event.
        Err(f) if f.reason() == Reason::Expired.as_str() => {
            let media = ctx.accept.media;
            return Ok(stream_response(Body::from(frame(&json!({"type": "ERROR", "object": f.0}), media)), media));
        }
        Err(f) => return Err(f),
    };
    let stream = HttpWatch {
        watch: opened.watch,
        _slot: opened.slot,
        shutdown: ctx.h.shutdown.clone(),
        store: ctx.h.api.store().clone(),
        allow_bookmarks,
        end,
        api_version,
        kind,
        table: table.zip(include),
        media: if ctx.accept.media == body::PROTOBUF { body::PROTOBUF } else { body::JSON },
        partial: matches!(ctx.accept.form, Form::Partial | Form::PartialList),
        columns_sent: false,
        done: false,
        encodings: ctx.h.encodings.clone(),
    };
    // Polled by the connection's task: a watch is a task, not a thread.
    let media = stream.media;
    Ok(stream_response(Body::from_stream(futures_util::stream::unfold(stream, HttpWatch::next)), media))
}

/// One HTTP watch stream: the store's watch and how its events are written.
struct HttpWatch {
    watch: fieldstore_engine::store::Watch,
    _slot: crate::api::WatchSlot,
    shutdown: tokio::sync::watch::Receiver<bool>,
    store: fieldstore_engine::store::Store,
    allow_bookmarks: bool,
    /// When the watch ends (`timeoutSeconds`); `None` when that is beyond the clock's range.
    end: Option<tokio::time::Instant>,
    api_version: String,
    kind: String,
    /// Events as Table rows (`as=Table`): the type and whether objects are included.
    table: Option<(fieldstore_engine::store::TypeSpec, IncludeObject)>,
    /// JSON lines, or length-prefixed protobuf `WatchEvent` frames.
    media: &'static str,
    /// Events carry PartialObjectMetadata (`as=PartialObjectMetadata`).
    partial: bool,
    /// Column definitions come with the first event only, as kube-apiserver sends them.
    columns_sent: bool,
    /// The last line was sent (an error, or the bookmark of a stopping server).
    done: bool,
    encodings: std::sync::Arc<crate::api::EventEncodings>,
}

impl HttpWatch {
    /// The next line of the stream, and the stream; `None` once it has ended.
    async fn next(mut self) -> Option<(Result<Bytes, std::convert::Infallible>, Self)> {
        if self.done || self.end.is_some_and(|end| tokio::time::Instant::now() >= end) {
            return None;
        }
        let end = self.end;
        let timeout = async move {
            match end {
                Some(end) => tokio::time::sleep_until(end).await,
                None => std::future::pending().await,
            }
        };
        let next = tokio::select! {
            biased;
            next = next_event(&mut self.watch, &mut self.shutdown) => next,
            () = timeout => return None,
        };
        let ev = match next {
            Next::Event(ev) => ev,
            Next::Ended => return None,
            // The server is stopping: a last bookmark tells the client where to resume.
            Next::Stopping => {
                self.done = true;
                if !self.allow_bookmarks {
                    return None;
                }
                WatchEvent::Bookmark { revision: self.store.revision(), initial_events_end: false }
            }
        };
        self.done |= matches!(ev, WatchEvent::Error(_));
        let plain = self.media == body::JSON && !self.partial;
        if let (true, None, WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o)) = (plain, &self.table, &ev) {
            // The object's JSON is encoded once for every watcher of the change (shared with
            // the gRPC watches), then framed as this event's line.
            if let Ok(json) = self.encodings.json(o) {
                let mut b = Vec::with_capacity(json.len() + 32);
                b.extend_from_slice(b"{\"type\":\"");
                b.extend_from_slice(ev.type_name().as_bytes());
                b.extend_from_slice(b"\",\"object\":");
                b.extend_from_slice(&json);
                b.extend_from_slice(b"}\n");
                return Some((Ok(Bytes::from(b)), self));
            }
        }
        let pb = self.media == body::PROTOBUF && !self.partial;
        if let (true, None, WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o)) = (pb, &self.table, &ev) {
            // The event's frame is encoded once for every watcher of the change.
            if let Ok(frame) = self.encodings.message(ev.type_name(), o, body::PROTOBUF, protobuf_frame) {
                return Some((Ok(frame), self));
            }
        }
        let mut event = ev.to_json(&self.api_version, &self.kind);
        if let (Some((spec, include)), WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o)) = (&self.table, &ev) {
            let meta = json!({"resourceVersion": o.get("metadata").and_then(|m| m.get("resourceVersion")).cloned().unwrap_or(Value::Null)});
            let mut t = to_table(spec, std::slice::from_ref(&**o), *include, meta);
            if self.columns_sent {
                t["columnDefinitions"] = json!([]);
            }
            self.columns_sent = true;
            event["object"] = t;
        }
        // Bookmarks too, as kube-apiserver transforms every object of the stream: client-go's
        // reflector drops an event of another kind than it expects, and in watch-list mode
        // gives up on the stream for a LIST when the `initial-events-end` bookmark is one.
        if self.partial && !matches!(ev, WatchEvent::Error(_)) {
            event["object"] = super::negotiate::partial(&event["object"]);
        }
        Some((Ok(frame(&event, self.media)), self))
    }
}

/// One event as a line of compact JSON or, for protobuf, as kube-apiserver frames it: a 4-byte
/// big-endian length, then the bare `meta.v1.WatchEvent` message (`type` = 1, `object` = 2, a
/// `RawExtension` whose `raw` = 1 is the object's `k8s\0` envelope).
fn frame(event: &Value, media: &str) -> Bytes {
    if media != body::PROTOBUF {
        let mut b = serde_json::to_vec(event).unwrap_or_default();
        b.push(b'\n');
        return Bytes::from(b);
    }
    let object = body::encode(&event["object"], body::PROTOBUF).map(|b| b.data).unwrap_or_default();
    framed(event["type"].as_str().unwrap_or(""), &object)
}

/// The protobuf frame of an event of type `kind` whose object's envelope is `object` (an
/// [`crate::api::Build`], so that a change is framed once for all its watchers).
fn protobuf_frame(kind: &'static str, object: body::Body, _revision: u64) -> Bytes {
    framed(kind, &object.data)
}

/// The 4-byte length, then the `WatchEvent` of type `kind` carrying the envelope `object`.
fn framed(kind: &str, object: &[u8]) -> Bytes {
    let mut raw = Vec::with_capacity(object.len() + 8);
    field(&mut raw, 1, object);
    let mut message = Vec::with_capacity(raw.len() + 24);
    field(&mut message, 1, kind.as_bytes());
    field(&mut message, 2, &raw);
    let mut out = Vec::with_capacity(message.len() + 4);
    out.extend_from_slice(&u32::try_from(message.len()).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(&message);
    Bytes::from(out)
}

/// A length-delimited protobuf field.
fn field(out: &mut Vec<u8>, number: u8, bytes: &[u8]) {
    out.push(number << 3 | 2);
    let mut n = bytes.len();
    while n >= 0x80 {
        out.push(u8::try_from(n & 0x7f).unwrap_or(0) | 0x80);
        n >>= 7;
    }
    out.push(u8::try_from(n).unwrap_or(0));
    out.extend_from_slice(bytes);
}

/// The streaming 200 response of a watch.
fn stream_response(stream: Body, media: &str) -> Response {
    let mut r = Response::new(stream);
    let content_type = if media == body::PROTOBUF { "application/vnd.kubernetes.protobuf;stream=watch" } else { "application/json" };
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache, private"));
    r
}
