//! A LIST's answer written as it is read: the body of a JSON or protobuf list, chunk by chunk
//! from a [`ListStream`], as kube-apiserver's streaming list encoders write it (since 1.34).
//!
//! Each chunk is one step of the list's scan on a blocking thread, taken when the connection
//! asks for more: a slow client holds neither a thread nor a database iterator, and the server
//! holds one chunk of the answer (about [`ListStream::CHUNK_BYTES`] of items) at a time.
//!
//! The bytes are those of the list answered whole: JSON `{"apiVersion":…,"items":[…],"kind":…,
//! "metadata":…}` (keys sorted, as every answer of this server), whose `metadata` comes last and
//! so is known once the items are read; protobuf the `k8s\x00` envelope of the List message,
//! whose `raw` length comes first: its items are sized in a first pass over the list (at the
//! same revision), keeping the first [`PROTOBUF_KEPT_BYTES`] of them encoded, and the rest is
//! encoded again as it is sent. An item whose object's encoding the API keeps
//! ([`ObjectEncodings`]: the objects it answered reads and writes of) is copied from there, not
//! encoded; past the kept items, one whose encoding's length is known there (of many more
//! objects: every encoding made, a list's included) is not encoded to be sized, so that a list
//! sized before is sized by reading its keys alone.
//!
//! # Errors
//! An error before the first byte (the list's options, a record that does not decode in the
//! first chunk, any error of the protobuf sizing pass) is the usual `Status` answer. Once the
//! first byte is sent the status cannot change: as kube-apiserver, which then can only append
//! its Status to a broken body, the answer ends there — the body is cut off (the connection
//! closes, or the HTTP/2 stream is reset) so that no client takes a truncated list for a whole
//! one. That happens when the store is compacted past the list's revision while it is read, or
//! a later record fails to decode or encode.

use super::reply::{encoded, Failure, Reply};
use crate::api::{body, Encoding, ObjectEncodings};
use axum::body::Body;
use bytes::Bytes;
use fieldstore_codec::k8s_protobuf::ListEncoder;
use fieldstore_engine::store::{ListMeta, ListStream, Listed};
use fieldstore_engine::{Error, Result};
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::Arc;

/// How many bytes of items a protobuf answer's sizing pass encodes and keeps, to send without
/// encoding them again (the whole of a list this small is encoded once).
pub(crate) const PROTOBUF_KEPT_BYTES: usize = 2 * 1024 * 1024;

/// About how many bytes of kept items a chunk after the first holds (made in memory, so larger
/// than a chunk read from the store: fewer wake-ups of the connection).
const KEPT_CHUNK_BYTES: usize = 256 * 1024;

/// How many bytes of items' encodings found in [`ObjectEncodings`] a protobuf answer's sizing
/// pass keeps (shared, not copied), to send without reading them again.
pub(crate) const PROTOBUF_SHARED_BYTES: usize = 64 * 1024 * 1024;

/// A list answered as JSON, its `metadata` with `continue` always (even empty) when
/// `always_continue` (kube-apiserver's lists of custom resources carry it).
pub(crate) async fn json(stream: ListStream, api_version: &str, kind: &str, always_continue: bool) -> Reply {
    let writer = JsonList {
        stream,
        list_kind: format!("{kind}List"),
        api_version: api_version.to_owned(),
        always_continue,
        items: 0,
        started: false,
        done: false,
    };
    respond(Chunks::Json(writer), body::JSON).await
}

/// A list of a built-in kind answered as protobuf, its items' encodings copied from `objects`
/// where kept there.
pub(crate) async fn protobuf(stream: ListStream, objects: Arc<ObjectEncodings>, api_version: &str, kind: &str) -> Reply {
    let (api_version, list_kind) = (api_version.to_owned(), format!("{kind}List"));
    let sized = blocking(move || ProtobufList::size(stream, objects, &api_version, &list_kind)).await?;
    respond(Chunks::Protobuf(sized), body::PROTOBUF).await
}

/// Reads the first chunk (its errors are the answer's), then answers 200 with the body of it
/// and of the chunks read as the connection takes them; a list read whole in its first chunk is
/// one body with its length, as before lists were streamed.
async fn respond(chunks: Chunks, content_type: &'static str) -> Reply {
    let whole =
        |data: Vec<u8>| Ok(encoded(body::Body { content_type: content_type.into(), data: data.into() }, axum::http::StatusCode::OK));
    let Some((first, chunks)) = blocking(move || next(chunks)).await? else {
        return whole(Vec::new());
    };
    if chunks.finished() {
        return whole(first);
    }
    let rest = futures_util::stream::unfold(Some(chunks), |chunks| async move {
        let chunks = chunks?;
        // Chunks of what is in memory are made here; reading the store takes a blocking thread.
        let made = if chunks.made_in_memory() { next(chunks).map_err(Failure::from) } else { blocking(move || next(chunks)).await };
        match made {
            Ok(Some((bytes, chunks))) => Some((Ok(Bytes::from(bytes)), Some(chunks))),
            Ok(None) => None,
            Err(f) => {
                tracing::warn!(status = %f.0, "a streamed list failed after its first byte: the body is cut off");
                Some((Err(std::io::Error::other(f.0.to_string())), None))
            }
        }
    });
    let first = futures_util::stream::once(async move { Ok::<_, std::io::Error>(Bytes::from(first)) });
    let mut r = axum::response::Response::new(Body::from_stream(futures_util::StreamExt::chain(first, rest)));
    if let Ok(v) = axum::http::HeaderValue::from_str(content_type) {
        r.headers_mut().insert(axum::http::header::CONTENT_TYPE, v);
    }
    Ok(r)
}

/// Runs `f` on a blocking thread, its error the `Status` of a failure.
async fn blocking<R: Send + 'static>(f: impl FnOnce() -> Result<R> + Send + 'static) -> Result<R, Failure> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r.map_err(Failure::from),
        Err(join) => Err(Failure::new(fieldstore_engine::Reason::InternalError, format!("list failed: {join}"))),
    }
}

/// A list's answer being written.
enum Chunks {
    Json(JsonList),
    Protobuf(ProtobufList),
}

impl Chunks {
    /// Whether the next chunk is made without reading the store (of a protobuf list's items
    /// kept by its sizing pass, or its tail).
    fn made_in_memory(&self) -> bool {
        match self {
            Chunks::Json(_) => false,
            Chunks::Protobuf(w) => w.done || w.head.is_some() || !w.kept.is_empty() || w.rest.is_none(),
        }
    }

    /// Whether the last chunk is written.
    fn finished(&self) -> bool {
        match self {
            Chunks::Json(w) => w.done,
            Chunks::Protobuf(w) => w.done,
        }
    }
}

/// The next chunk of the answer and the rest of it; `None` once it is all written.
fn next(chunks: Chunks) -> Result<Option<(Vec<u8>, Chunks)>> {
    match chunks {
        Chunks::Json(mut w) => Ok(w.next()?.map(|b| (b, Chunks::Json(w)))),
        Chunks::Protobuf(mut w) => Ok(w.next()?.map(|b| (b, Chunks::Protobuf(w)))),
    }
}

/// A JSON list being written.
struct JsonList {
    /// The rest of the list.
    stream: ListStream,
    api_version: String,
    list_kind: String,
    always_continue: bool,
    /// Items written so far.
    items: usize,
    /// Whether the first chunk is written.
    started: bool,
    /// Whether the last chunk is written.
    done: bool,
}

impl JsonList {
    fn next(&mut self) -> Result<Option<Vec<u8>>> {
        if self.done {
            return Ok(None);
        }
        let mut out = Vec::with_capacity(ListStream::CHUNK_BYTES + 4096);
        if !self.started {
            // Keys in sorted order, as serde_json's map writes them.
            out.extend_from_slice(b"{\"apiVersion\":");
            write_json(&mut out, &Value::String(self.api_version.clone()))?;
            out.extend_from_slice(b",\"items\":[");
            self.started = true;
        }
        let items = &mut self.items;
        let meta = self.stream.next_chunk(ListStream::CHUNK_BYTES, &mut |item| {
            if *items > 0 {
                out.push(b',');
            }
            out.extend_from_slice(item);
            *items += 1;
            Ok(())
        })?;
        if let Some(mut meta) = meta {
            if self.always_continue && meta.continue_token.is_none() {
                meta.continue_token = Some(String::new());
            }
            out.extend_from_slice(b"],\"kind\":");
            write_json(&mut out, &Value::String(self.list_kind.clone()))?;
            out.extend_from_slice(b",\"metadata\":");
            write_json(&mut out, &meta.to_json())?;
            out.push(b'}');
            self.done = true;
        }
        Ok(Some(out))
    }
}

fn write_json(out: &mut Vec<u8>, v: &Value) -> Result<()> {
    serde_json::to_writer(out, v).map_err(|e| Error::Corrupt(format!("list: {e}")))
}

/// A protobuf list being written: its head, the items kept from the sizing pass, then the
/// items after them encoded again (or copied from [`ObjectEncodings`]), then the envelope's tail.
struct ProtobufList {
    encoder: ListEncoder,
    objects: Arc<ObjectEncodings>,
    /// The answer's first bytes, until written.
    head: Option<Vec<u8>>,
    /// The item messages kept from the sizing pass, not written yet.
    kept: VecDeque<Encoding>,
    /// The rest of the list after the kept items, at the same revision (`None`: all kept, or
    /// written).
    rest: Option<ListStream>,
    /// What the rest must come to: its items' encoded size, and the list's metadata.
    rest_bytes: u64,
    meta: ListMeta,
    /// The items of the rest written so far, and their bytes.
    index: usize,
    written: u64,
    done: bool,
}

/// A listed object's message: the encoding kept for it, else encoded from its JSON (`None`: the
/// list's selectors leave it out); and whether it was kept.
fn item_message(
    encoder: &ListEncoder,
    objects: &ObjectEncodings,
    key: &mut Vec<u8>,
    mut listed: Listed<'_>,
    index: usize,
) -> Result<Option<(Encoding, bool)>> {
    if listed.selected_by_reading() && listed.json()?.is_none() {
        return Ok(None);
    }
    if let Some(kept) = objects.get(key, encoder.item_message(), listed.namespace(), listed.name(), listed.revision()) {
        return Ok(Some((kept, true)));
    }
    Ok(encode(encoder, objects, key, listed, index)?.map(|message| (message, false)))
}

/// A listed object's message encoded from its JSON (`None`: the list's selectors leave it out),
/// its length noted in `objects` for the lists after this one.
fn encode(
    encoder: &ListEncoder,
    objects: &ObjectEncodings,
    key: &mut Vec<u8>,
    mut listed: Listed<'_>,
    index: usize,
) -> Result<Option<Encoding>> {
    let (namespace, name, revision) = (listed.namespace(), listed.name(), listed.revision());
    let Some(json) = listed.json()? else { return Ok(None) };
    let message: Encoding = encoder.encode_item(json, index).map_err(encoding)?.into();
    objects.note_encoded_len(key, encoder.item_message(), namespace, name, revision, message.len());
    Ok(Some(message))
}

/// The length of a listed object's message (`None`: the list's selectors leave it out): as
/// [`ObjectEncodings`] knows it (its kept encodings included), else from encoding it.
fn item_len(
    encoder: &ListEncoder,
    objects: &ObjectEncodings,
    key: &mut Vec<u8>,
    mut listed: Listed<'_>,
    index: usize,
) -> Result<Option<usize>> {
    if listed.selected_by_reading() && listed.json()?.is_none() {
        return Ok(None);
    }
    if let Some(len) = objects.encoded_len(key, encoder.item_message(), listed.namespace(), listed.name(), listed.revision()) {
        return Ok(Some(len));
    }
    Ok(encode(encoder, objects, key, listed, index)?.map(|message| message.len()))
}

impl ProtobufList {
    /// The sizing pass: reads the whole list, keeping the first items' messages (up to
    /// [`PROTOBUF_KEPT_BYTES`] of them encoded here, and up to [`PROTOBUF_SHARED_BYTES`] of
    /// them shared with [`ObjectEncodings`]) and the size of the rest.
    fn size(stream: ListStream, objects: Arc<ObjectEncodings>, api_version: &str, list_kind: &str) -> Result<ProtobufList> {
        let mut sizing = stream;
        let mut kept = VecDeque::new();
        let (mut encoded_bytes, mut shared_bytes, mut kept_bytes) = (0usize, 0usize, 0u64);
        let (mut index, mut rest_bytes) = (0usize, 0u64);
        // The rest of the list after the kept items, and how many items were kept.
        let mut rest: Option<(ListStream, usize)> = None;
        let mut key = Vec::new();
        // The list's metadata is read with its items; the encoder needs it first. It is made
        // for the empty list's metadata and replaced once the pass is done.
        let header = |meta: &ListMeta| {
            serde_json::to_vec(&serde_json::json!({"apiVersion": api_version, "kind": list_kind, "metadata": meta.to_json()}))
                .map_err(|e| Error::Corrupt(format!("list: {e}")))
        };
        let unknown = ListMeta { resource_version: sizing.resource_version(), continue_token: None, remaining_item_count: None };
        let encoder = ListEncoder::new(&header(&unknown)?).map_err(encoding)?;
        let meta = loop {
            let keep = rest.is_none() && encoded_bytes < PROTOBUF_KEPT_BYTES && shared_bytes < PROTOBUF_SHARED_BYTES;
            if !keep && rest.is_none() {
                rest = Some((sizing.clone(), index));
            }
            let meta = sizing.next_chunk_of(ListStream::CHUNK_BYTES, &mut |listed| {
                let size = if keep {
                    let Some((message, shared)) = item_message(&encoder, &objects, &mut key, listed, index)? else {
                        return Ok(None);
                    };
                    let size = encoder.item_size(message.len());
                    *(if shared { &mut shared_bytes } else { &mut encoded_bytes }) += size;
                    kept_bytes += size as u64;
                    kept.push_back(message);
                    size
                } else {
                    let Some(len) = item_len(&encoder, &objects, &mut key, listed, index)? else {
                        return Ok(None);
                    };
                    let size = encoder.item_size(len);
                    rest_bytes += size as u64;
                    size
                };
                index += 1;
                Ok(Some(size))
            })?;
            if let Some(meta) = meta {
                break meta;
            }
        };
        let encoder = ListEncoder::new(&header(&meta)?).map_err(encoding)?;
        let head = encoder.head(kept_bytes + rest_bytes);
        let (rest, index) = rest.map_or((None, 0), |(stream, kept)| (Some(stream), kept));
        Ok(ProtobufList { encoder, objects, head: Some(head), kept, rest, rest_bytes, meta, index, written: 0, done: false })
    }

    fn next(&mut self) -> Result<Option<Vec<u8>>> {
        if self.done {
            return Ok(None);
        }
        // The first chunk holds what a list answered whole held: the head and its kept items.
        let (mut out, limit) = match self.head.take() {
            Some(mut head) => {
                head.reserve(
                    PROTOBUF_KEPT_BYTES.min(self.encoder.item_size(0) * self.kept.len() + self.kept.iter().map(|k| k.len()).sum::<usize>()),
                );
                (head, PROTOBUF_KEPT_BYTES)
            }
            None if !self.kept.is_empty() => (Vec::with_capacity(KEPT_CHUNK_BYTES + 4096), KEPT_CHUNK_BYTES),
            None => (Vec::with_capacity(ListStream::CHUNK_BYTES + 4096), ListStream::CHUNK_BYTES),
        };
        while out.len() < limit {
            let Some(message) = self.kept.pop_front() else { break };
            self.encoder.put_item(&message, &mut out);
        }
        if !self.kept.is_empty() {
            return Ok(Some(out));
        }
        let Some(stream) = self.rest.as_mut() else {
            out.extend_from_slice(&self.encoder.tail());
            self.done = true;
            return Ok(Some(out));
        };
        if !out.is_empty() {
            return Ok(Some(out));
        }
        let (encoder, objects, index, written) = (&self.encoder, &*self.objects, &mut self.index, &mut self.written);
        let mut key = Vec::new();
        let meta = stream.next_chunk_of(ListStream::CHUNK_BYTES, &mut |listed| {
            let Some((message, _)) = item_message(encoder, objects, &mut key, listed, *index)? else {
                return Ok(None);
            };
            let size = encoder.put_item(&message, &mut out);
            *written += size as u64;
            *index += 1;
            Ok(Some(size))
        })?;
        if let Some(meta) = meta {
            // The second pass read the list the first sized: the same revision and keys, so
            // the same items, unless something is badly wrong.
            if self.written != self.rest_bytes || meta != self.meta {
                return Err(Error::Corrupt(format!(
                    "a list read twice at revision {} differs: {} bytes of items sized, {} written",
                    self.meta.resource_version, self.rest_bytes, self.written
                )));
            }
            self.rest = None;
        }
        Ok(Some(out))
    }
}

/// An item that does not encode as protobuf: before the first byte, the 400 the list answered
/// whole gives.
fn encoding(e: fieldstore_codec::Error) -> Error {
    Error::BadRequest(format!("cannot encode as protobuf: {e}"))
}
