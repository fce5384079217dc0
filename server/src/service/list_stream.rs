//! `ListStream`: a list sent over gRPC as it is read. Each message is one chunk of the store's
//! [`ListStream`] (about [`ListStream::CHUNK_BYTES`] of items), read on a blocking thread when
//! the connection takes the message before it: a slow client holds neither a thread nor a
//! database iterator, and the server holds a message of items at a time.
//!
//! gRPC frames each message with its own length, so unlike the HTTP door's protobuf list
//! (`http::list_body`, whose envelope's length comes before its items) every encoding is sent
//! in one pass, the first items as soon as they are read.

use super::status::IntoGrpc;
use crate::api::body;
use crate::proto::pb;
use fieldstore_engine::store::{ListMeta, ListStream};
use fieldstore_engine::{Error, Result};
use tonic::Status;

/// The messages of a streamed list.
pub type Chunks = std::pin::Pin<Box<dyn futures_util::Stream<Item = Result<pb::ListChunk, Status>> + Send>>;

/// A list being sent: the rest of it and how its items are encoded.
struct Sending {
    stream: ListStream,
    api_version: String,
    kind: String,
    accept: String,
}

/// The messages of `stream`, its items encoded as `accept` asks (as a `Get` of each object
/// answers it). The first message is read before this returns, so that the errors of its chunk
/// (a record that does not decode, an item that does not encode) are the call's status.
///
/// # Errors
/// The first chunk's, as a gRPC status carrying the Kubernetes `Status`.
pub(super) async fn chunks(stream: ListStream, api_version: String, kind: String, accept: String) -> Result<Chunks, Status> {
    let (first, rest) = blocking(Sending { stream, api_version, kind, accept }).await?;
    // The state is the rest of the list; `None` once its last message is made.
    let rest = futures_util::stream::unfold(rest, |rest| async move {
        match blocking(rest?).await {
            Ok((chunk, rest)) => Some((Ok(chunk), rest)),
            Err(status) => {
                tracing::warn!(%status, "a streamed list failed after its first message");
                Some((Err(status), None))
            }
        }
    });
    Ok(Box::pin(futures_util::StreamExt::chain(futures_util::stream::once(async move { Ok(first) }), rest)))
}

/// The next message, read on a blocking thread, and the rest of the list (`None` after the last).
async fn blocking(mut sending: Sending) -> Result<(pb::ListChunk, Option<Sending>), Status> {
    let next = tokio::task::spawn_blocking(move || -> Result<_> {
        let chunk = sending.next()?;
        let rest = chunk.list.is_none().then_some(sending);
        Ok((chunk, rest))
    });
    match next.await {
        Ok(r) => r.grpc(),
        Err(join) => Err(Status::internal(format!("list failed: {join}"))),
    }
}

impl Sending {
    /// Reads and encodes the next chunk of items; the last message carries the list.
    fn next(&mut self) -> Result<pb::ListChunk> {
        let mut items = Vec::new();
        let mut content_type = String::new();
        let (api_version, kind, accept) = (&self.api_version, &self.kind, &self.accept);
        let meta = self.stream.next_chunk(ListStream::CHUNK_BYTES, &mut |json| {
            let item = body::encode_json(json.to_vec(), api_version, kind, accept).map_err(|e| match e {
                Error::BadRequest(m) => Error::BadRequest(format!(".items[{}]: {m}", items.len())),
                other => other,
            })?;
            content_type = item.content_type;
            items.push(item.data);
            Ok(())
        })?;
        let list = match meta {
            Some(meta) => {
                let list = self.list(&meta)?;
                content_type.clone_from(&list.content_type);
                Some(list.into())
            }
            None => None,
        };
        Ok(pb::ListChunk { content_type, items, list })
    }

    /// The list without items, as `accept` asks.
    fn list(&self, meta: &ListMeta) -> Result<body::Body> {
        let list_kind = format!("{}List", self.kind);
        let list = serde_json::json!({"apiVersion": self.api_version, "items": [], "kind": list_kind, "metadata": meta.to_json()});
        let json = serde_json::to_vec(&list).map_err(|e| Error::Corrupt(format!("list: {e}")))?;
        body::encode_json(json, &self.api_version, &list_kind, &self.accept)
    }
}
