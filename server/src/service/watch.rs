//! Watch streams over gRPC: each stream a task fed by the store's watch hub, and each event's
//! whole message (`fieldstore.v1.WatchEvent`) encoded once for every stream it goes to.
//!
//! Every watcher of a change in the same media type receives the same message: its type, the
//! object's body and its resourceVersion. [`EventEncodings`] keeps the message encoded, and the
//! Watch route ([`StoreApi`]) writes it with a codec that copies those bytes into the stream
//! ([`EncodedEvent`]), where the generated route would run prost's encoder for each stream.

use super::body;
use super::status::IntoGrpc;
use super::{StoreService, WatchSlot};
use crate::api::pb::{self, store_server::StoreServer};
use bytes::{BufMut, Bytes};
use fieldstore_engine::store::{Store, Watch, WatchEvent, WatchOptions};
use fieldstore_engine::Error;
use parking_lot::Mutex;
use prost::Message;
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};
use tonic::codec::{Codec, EncodeBuf, Encoder, ProstCodec};
use tonic::codegen::{BoxFuture, StdError};
use tonic::server::NamedService;
use tonic::Status;

/// The wire encodings of recent watch events, so that a change fanned out to many watchers is
/// serialized once per media type rather than once per watcher.
/// Entries are found by the event object's identity (watchers share the `Arc` the store
/// broadcasts); a `Weak` keeps the allocation, so the address cannot be reused, without keeping
/// the object.
#[derive(Default)]
pub(crate) struct EventEncodings(Mutex<(VecDeque<Encoded>, usize)>);

/// One object's encoding in one media type.
struct Encoded {
    object: Weak<Value>,
    accept: String,
    body: pb::Body,
    /// The object's resourceVersion as a number (read once, not per stream).
    revision: u64,
    /// The gRPC message of the event that carried it, with that event's type.
    message: Option<(&'static str, Bytes)>,
}

impl Encoded {
    /// Whether this is the encoding of `object` (by identity) as `accept`.
    fn is(&self, object: &Arc<Value>, accept: &str) -> bool {
        std::ptr::eq(self.object.as_ptr(), Arc::as_ptr(object)) && self.accept == accept
    }

    /// The bytes it keeps.
    fn bytes(&self) -> usize {
        self.body.data.len() + self.message.as_ref().map_or(0, |(_, m)| m.len())
    }
}

impl EventEncodings {
    /// At most this many recent encodings, and this many bytes of them.
    const KEEP: usize = 64;
    const KEEP_BYTES: usize = 16 << 20;

    /// The object's JSON, encoded once for every watcher of the change.
    pub(crate) fn json(&self, object: &Arc<Value>) -> Result<Bytes, Error> {
        self.entry(object, body::JSON, None)
    }

    /// The gRPC message of the event of type `kind` (`ADDED`, …) carrying `object`, its body
    /// encoded as `accept`: encoded once for every stream it goes to.
    fn message(&self, kind: &'static str, object: &Arc<Value>, accept: &str) -> Result<Bytes, Error> {
        self.entry(object, accept, Some(kind))
    }

    /// The body of `object` in `accept` or, with `kind`, the message of its event; encoded and
    /// kept when not found.
    fn entry(&self, object: &Arc<Value>, accept: &str, kind: Option<&'static str>) -> Result<Bytes, Error> {
        let found = {
            let mut guard = self.0.lock();
            let found = guard.0.iter_mut().rev().find(|e| e.is(object, accept));
            match (found, kind) {
                (None, _) => None,
                (Some(e), None) => return Ok(e.body.data.clone()),
                (Some(e), Some(kind)) => match &e.message {
                    Some((k, m)) if *k == kind => return Ok(m.clone()),
                    // The body without this event's message (encoded outside the lock).
                    _ => Some((e.body.clone(), e.revision)),
                },
            }
        };
        let (body, revision) = match found {
            Some(found) => found,
            None => (body::encode(object, accept)?, WatchEvent::Added(object.clone()).revision().unwrap_or(0)),
        };
        let message = kind.map(|k| (k, event_message(k, body.clone(), revision)));
        let out = message.as_ref().map_or_else(|| body.data.clone(), |(_, m)| m.clone());
        let mut guard = self.0.lock();
        let (recent, bytes) = &mut *guard;
        if let Some(e) = recent.iter_mut().rev().find(|e| e.is(object, accept)) {
            if let Some((kind, m)) = message {
                // The byte count follows the message replaced.
                *bytes += m.len();
                *bytes -= e.message.replace((kind, m)).map_or(0, |(_, old)| old.len());
            }
            return Ok(out);
        }
        let entry = Encoded { object: Arc::downgrade(object), accept: accept.to_string(), body, revision, message };
        *bytes += entry.bytes();
        recent.push_back(entry);
        while recent.len() > Self::KEEP || (*bytes > Self::KEEP_BYTES && recent.len() > 1) {
            if let Some(old) = recent.pop_front() {
                *bytes -= old.bytes();
            }
        }
        Ok(out)
    }
}

/// A watch event's message, encoded.
fn event_message(kind: &str, body: pb::Body, resource_version: u64) -> Bytes {
    pb::WatchEvent { r#type: kind.to_string(), object: Some(body), resource_version }.encode_to_vec().into()
}

/// What a watch stream sends next.
pub(crate) enum Next {
    /// An event of the watch.
    Event(WatchEvent),
    /// The server is stopping (the stream ends, with a last bookmark where allowed).
    Stopping,
    /// The watch ended.
    Ended,
}

/// The watch's next event, or [`Next::Stopping`]: an event that is ready without setting up an
/// await, else the watch and the server's shutdown signal awaited together. Shared by the gRPC
/// and HTTP watch streams.
pub(crate) async fn next_event(watch: &mut Watch, shutdown: &mut tokio::sync::watch::Receiver<bool>) -> Next {
    if *shutdown.borrow() {
        return Next::Stopping;
    }
    if let Some(ev) = watch.try_next() {
        return Next::Event(ev);
    }
    tokio::select! {
        biased;
        Ok(_) = shutdown.wait_for(|stop| *stop) => Next::Stopping,
        ev = watch.next_async(tokio::time::sleep) => ev.map_or(Next::Ended, Next::Event),
    }
}

/// A `fieldstore.v1.WatchEvent` message, encoded (shared by the streams of one event).
#[derive(Debug, Clone)]
pub struct EncodedEvent(Bytes);

impl EncodedEvent {
    /// The message decoded (for the generated route, which `serve` does not mount).
    pub(crate) fn decode(&self) -> Result<pb::WatchEvent, Status> {
        pb::WatchEvent::decode(self.0.clone()).map_err(|e| Status::internal(e.to_string()))
    }
}

impl StoreService {
    /// Opens the watch a request asks for, after authorization and within the caller's watch
    /// limit.
    pub(super) async fn open_watch(&self, req: tonic::Request<pb::WatchRequest>) -> Result<WatchStream, Status> {
        let r = req.get_ref().clone();
        let (id, spec) = self.admit(&req, "watch", &r.resource, &r.namespace)?;
        let spec = spec.ok_or_else(|| super::status::to_grpc(&Error::BadRequest("resource is required".into())))?;
        let slot = self.reserve_watch(&id.user)?;
        let opts = WatchOptions {
            resource_version: Some(r.resource_version.clone()).filter(|s| !s.is_empty()),
            label_selector: Some(r.label_selector.clone()).filter(|s| !s.is_empty()),
            field_selector: Some(r.field_selector.clone()).filter(|s| !s.is_empty()),
            allow_bookmarks: r.allow_watch_bookmarks,
            send_initial_events: r.send_initial_events,
        };
        let resource = spec.resource();
        let ns = r.namespace.clone();
        let watch = self.call(move |s| s.watch(&resource, super::ns_opt(&ns), &opts)).await?;
        Ok(WatchStream {
            watch,
            _slot: slot,
            shutdown: self.shutdown.clone(),
            store: self.store.clone(),
            api_version: spec.api_version(),
            kind: spec.kind.clone(),
            accept: r.accept,
            encodings: self.encodings.clone(),
            done: false,
        })
    }
}

/// One gRPC watch stream: the store's watch and how its events are encoded.
pub(crate) struct WatchStream {
    watch: Watch,
    _slot: WatchSlot,
    shutdown: tokio::sync::watch::Receiver<bool>,
    store: Store,
    api_version: String,
    kind: String,
    accept: String,
    encodings: Arc<EventEncodings>,
    /// The last message was sent (an error, or the bookmark of a stopping server).
    done: bool,
}

/// The messages of a watch stream.
pub(crate) type EncodedEvents = std::pin::Pin<Box<dyn futures_util::Stream<Item = Result<EncodedEvent, Status>> + Send>>;

impl WatchStream {
    /// The stream's messages. The stream is polled by its connection's task: a watch is a task,
    /// not a thread, and a client that stops reading stops the polling, so its hub buffer fills
    /// and it ends with 410 without holding anyone back.
    pub(crate) fn messages(self) -> EncodedEvents {
        Box::pin(futures_util::stream::unfold(Box::new(self), WatchStream::next))
    }

    /// The next message of the stream, and the stream; `None` once it has ended. Boxed, so that
    /// each message moves a pointer through `unfold` rather than the whole stream (three copies
    /// per event otherwise).
    async fn next(mut self: Box<Self>) -> Option<(Result<EncodedEvent, Status>, Box<Self>)> {
        if self.done {
            return None;
        }
        let ev = match next_event(&mut self.watch, &mut self.shutdown).await {
            Next::Event(ev) => ev,
            Next::Ended => return None,
            // The server is stopping: a last bookmark tells the client where to resume.
            Next::Stopping => {
                self.done = true;
                WatchEvent::Bookmark { revision: self.store.revision(), initial_events_end: false }
            }
        };
        self.done |= matches!(ev, WatchEvent::Error(_));
        let message = match &ev {
            // Object events: every watcher of the change shares one message.
            WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => {
                self.encodings.message(ev.type_name(), o, &self.accept)
            }
            _ => body::encode(&ev.to_json(&self.api_version, &self.kind)["object"], &self.accept)
                .map(|b| event_message(ev.type_name(), b, ev.revision().unwrap_or(0))),
        };
        Some((message.map(EncodedEvent).grpc(), self))
    }
}

/// The codec of the Watch route: requests decoded by prost, events written as encoded.
#[derive(Debug, Default, Clone, Copy)]
pub struct WatchCodec;

/// Writes an [`EncodedEvent`]'s bytes.
#[derive(Debug, Clone, Copy)]
pub struct EncodedEventEncoder;

impl Encoder for EncodedEventEncoder {
    type Item = EncodedEvent;
    type Error = Status;

    fn encode(&mut self, item: EncodedEvent, buf: &mut EncodeBuf<'_>) -> Result<(), Status> {
        buf.put_slice(&item.0);
        Ok(())
    }
}

impl Codec for WatchCodec {
    type Encode = EncodedEvent;
    type Decode = pb::WatchRequest;
    type Encoder = EncodedEventEncoder;
    type Decoder = <ProstCodec<pb::WatchRequest, pb::WatchRequest> as Codec>::Decoder;

    fn encoder(&mut self) -> EncodedEventEncoder {
        EncodedEventEncoder
    }

    fn decoder(&mut self) -> Self::Decoder {
        ProstCodec::<pb::WatchRequest, pb::WatchRequest>::default().decoder()
    }
}

/// The gRPC path of Watch.
const WATCH_PATH: &str = "/fieldstore.v1.Store/Watch";

/// The Store service as `serve` mounts it: the generated routes, except Watch, whose events are
/// written as [`EventEncodings`] keeps them (module docs).
#[derive(Clone)]
pub struct StoreApi {
    routes: StoreServer<StoreService>,
    service: StoreService,
    max_decoding_message_size: usize,
}

impl StoreApi {
    /// The routes of `service`; requests up to `max_decoding_message_size` bytes.
    pub fn new(service: StoreService, max_decoding_message_size: usize) -> Self {
        let routes =
            StoreServer::new(service.clone()).max_decoding_message_size(max_decoding_message_size).max_encoding_message_size(usize::MAX);
        StoreApi { routes, service, max_decoding_message_size }
    }
}

impl NamedService for StoreApi {
    const NAME: &'static str = <StoreServer<StoreService> as NamedService>::NAME;
}

/// The Watch method over [`WatchCodec`].
struct WatchMethod(StoreService);

impl tonic::server::ServerStreamingService<pb::WatchRequest> for WatchMethod {
    type Response = EncodedEvent;
    type ResponseStream = EncodedEvents;
    type Future = BoxFuture<tonic::Response<EncodedEvents>, Status>;

    fn call(&mut self, req: tonic::Request<pb::WatchRequest>) -> Self::Future {
        let service = self.0.clone();
        Box::pin(async move { service.open_watch(req).await.map(|s| tonic::Response::new(s.messages())) })
    }
}

impl<B> tower::Service<http::Request<B>> for StoreApi
where
    B: tonic::codegen::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<StdError> + Send + 'static,
{
    type Response = http::Response<tonic::body::BoxBody>;
    type Error = std::convert::Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        if req.uri().path() != WATCH_PATH {
            return self.routes.call(req);
        }
        let method = WatchMethod(self.service.clone());
        let max = self.max_decoding_message_size;
        Box::pin(async move {
            let mut grpc = tonic::server::Grpc::new(WatchCodec).apply_max_message_size_config(Some(max), Some(usize::MAX));
            Ok(grpc.server_streaming(method, req).await)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn configmap(rv: &str) -> Arc<Value> {
        Arc::new(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns", "resourceVersion": rv}, "data": {"k": "v"}}),
        )
    }

    #[test]
    fn an_event_is_encoded_once_for_every_stream_and_decodes_to_its_fields() {
        let encodings = EventEncodings::default();
        let object = configmap("42");
        let first = encodings.message("MODIFIED", &object, body::JSON).unwrap();
        let second = encodings.message("MODIFIED", &object, body::JSON).unwrap();
        assert_eq!(first.as_ptr(), second.as_ptr(), "the second stream shares the first one's bytes");
        let ev = EncodedEvent(first).decode().unwrap();
        assert_eq!((ev.r#type.as_str(), ev.resource_version), ("MODIFIED", 42));
        let body = ev.object.unwrap();
        assert_eq!(body.content_type, body::JSON);
        assert_eq!(serde_json::from_slice::<Value>(&body.data).unwrap(), *object);
        // The HTTP API's JSON of the same object is the same body, not encoded again.
        assert_eq!(encodings.json(&object).unwrap().as_ptr(), body_ptr(&encodings, &object));
        // Another event type carrying the same object gets its own message; another media type
        // its own body.
        let deleted = EncodedEvent(encodings.message("DELETED", &object, body::JSON).unwrap()).decode().unwrap();
        assert_eq!(deleted.r#type, "DELETED");
        let pb = EncodedEvent(encodings.message("MODIFIED", &object, body::PROTOBUF).unwrap()).decode().unwrap();
        assert_eq!(pb.object.unwrap().content_type, body::PROTOBUF);
        // Another object at the same revision is another entry.
        let other = configmap("42");
        let third = encodings.message("MODIFIED", &other, body::JSON).unwrap();
        assert_ne!(third.as_ptr(), second.as_ptr());
    }

    fn body_ptr(encodings: &EventEncodings, object: &Arc<Value>) -> *const u8 {
        let guard = encodings.0.lock();
        let e = guard.0.iter().find(|e| e.is(object, body::JSON)).unwrap();
        e.body.data.as_ptr()
    }

    #[test]
    fn the_byte_count_follows_bodies_and_messages_added_to_an_entry() {
        let encodings = EventEncodings::default();
        for i in 0..3 * EventEncodings::KEEP {
            let o = configmap(&i.to_string());
            // The HTTP API's body first, then gRPC messages of two event types on the entry.
            encodings.json(&o).unwrap();
            for kind in ["MODIFIED", "DELETED", "MODIFIED"] {
                encodings.message(kind, &o, body::JSON).unwrap();
            }
            let guard = encodings.0.lock();
            let kept: usize = guard.0.iter().map(Encoded::bytes).sum();
            assert_eq!(guard.1, kept);
        }
    }

    #[test]
    fn old_encodings_are_dropped_beyond_the_count_kept() {
        let encodings = EventEncodings::default();
        let objects: Vec<_> = (0..EventEncodings::KEEP + 10).map(|i| configmap(&i.to_string())).collect();
        for o in &objects {
            encodings.message("ADDED", o, body::JSON).unwrap();
        }
        let guard = encodings.0.lock();
        assert_eq!(guard.0.len(), EventEncodings::KEEP);
        let kept: usize = guard.0.iter().map(Encoded::bytes).sum();
        assert_eq!(guard.1, kept, "the byte count follows what is kept");
    }
}
