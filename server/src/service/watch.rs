//! Watch streams over gRPC: each stream a task fed by the store's watch hub, and each event's
//! whole message (`fieldstore.v1.WatchEvent`) encoded once for every stream it goes to.
//!
//! Every watcher of a change in the same media type receives the same message: its type, the
//! object's body and its resourceVersion. [`EventEncodings`] (the request layer's, shared with
//! the HTTP door) keeps the message encoded, and the
//! Watch route ([`StoreApi`]) writes it with a codec that copies those bytes into the stream
//! ([`EncodedEvent`]), where the generated route would run prost's encoder for each stream.

use super::status::IntoGrpc;
use super::StoreService;
use crate::api::{body, EventEncodings, Opened, WatchSlot};
use crate::api::{next_event, Next};
use crate::proto::pb::{self, store_server::StoreServer};
use bytes::{BufMut, Bytes};
use fieldstore_engine::store::{Store, Watch, WatchEvent};
use prost::Message;
use std::sync::Arc;
use std::task::{Context, Poll};
use tonic::codec::{Codec, EncodeBuf, Encoder, ProstCodec};
use tonic::codegen::{BoxFuture, StdError};
use tonic::server::NamedService;
use tonic::Status;

/// A watch event's message, encoded.
fn event_message(kind: &str, body: body::Body, resource_version: u64) -> Bytes {
    pb::WatchEvent { r#type: kind.to_string(), object: Some(body.into()), resource_version }.encode_to_vec().into()
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

impl WatchStream {
    /// The stream of an opened watch, its events encoded as `accept`.
    pub(super) fn new(opened: Opened, service: &StoreService, accept: String) -> Self {
        WatchStream {
            api_version: opened.spec.api_version(),
            kind: opened.spec.kind.clone(),
            watch: opened.watch,
            _slot: opened.slot,
            shutdown: service.shutdown.clone(),
            store: service.api.store.clone(),
            accept,
            encodings: service.encodings.clone(),
            done: false,
        }
    }
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
                self.encodings.message(ev.type_name(), o, &self.accept, event_message)
            }
            _ => body::encode(&ev.to_json(&self.api_version, &self.kind)["object"], &self.accept)
                .map(|b| event_message(ev.type_name(), b, ev.revision().map_or(0, |r| r.0))),
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
    use serde_json::{json, Value};

    #[test]
    fn a_shared_event_message_decodes_to_its_fields() {
        let encodings = EventEncodings::default();
        let object = Arc::new(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "resourceVersion": "42"}}));
        let ev = EncodedEvent(encodings.message("MODIFIED", &object, body::JSON, event_message).unwrap()).decode().unwrap();
        assert_eq!((ev.r#type.as_str(), ev.resource_version), ("MODIFIED", 42));
        let b = ev.object.unwrap();
        assert_eq!(b.content_type, body::JSON);
        assert_eq!(serde_json::from_slice::<Value>(&b.data).unwrap(), *object);
        let pb = EncodedEvent(encodings.message("ADDED", &object, body::PROTOBUF, event_message).unwrap()).decode().unwrap();
        assert_eq!(pb.object.unwrap().content_type, body::PROTOBUF);
    }
}
