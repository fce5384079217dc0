//! Kubernetes protobuf ⇄ JSON transcoding for the built-in kinds, byte for byte as kube-apiserver
//! does it.
//!
//! Built-in objects travel and are stored as `k8s\x00` + `runtime.Unknown` whose `raw` is the
//! object gogo-encoded ([`crate::envelope`]), and are served as JSON written by Go's
//! `encoding/json`. This module converts between the two without generated structs: the compiled
//! Kubernetes protos ([`descriptor_pool`]) give field numbers and types, and the Go struct facts
//! (`codec/k8s-api/gofields.json`: JSON names, `omitempty`/`omitzero`, pointer or value, inline
//! embedding) give everything the `.proto` files do not say. Both directions follow Go exactly:
//!
//! - **protobuf → JSON** ([`MessageType::to_json`], [`decode_envelope`]): fields in Go struct
//!   order (= proto declaration order), `kind` and `apiVersion` first; `omitempty`, `null` for nil
//!   pointers/slices/maps, map keys sorted, inline structs flattened, Go's string escaping and float
//!   format; `metav1.Time`/`MicroTime`/`Duration`, `IntOrString`, `Quantity` (canonicalised),
//!   `RawExtension`, `FieldsV1` and apiextensions' `JSON*` types as their Go marshallers write
//!   them.
//! - **JSON → protobuf** ([`MessageType::from_json`], [`encode_envelope`]): the bytes gogo writes
//!   for the Go struct encoding/json decodes: ascending field numbers, non-pointer fields always
//!   written (zero included), pointers iff set, repeated fields and maps iff non-empty, map keys
//!   sorted, 10-byte negative varints.
//!
//! `codec/K8S_PROTOBUF.md` lists every rule with the upstream fixture (or test) that evidences it,
//! and where this differs from Go; `codec/tests/k8s_protobuf.rs` checks all 59 upstream fixture pairs
//! byte for byte in both directions.
//!
//! # Examples
//!
//! ```
//! use fieldstore_codec::k8s_protobuf::{self, JsonStyle, MessageType};
//!
//! let json = br#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cfg"},"data":{"b":"2","a":"1"}}"#;
//! let envelope = k8s_protobuf::encode_envelope(json).unwrap();
//! assert!(envelope.starts_with(b"k8s\0"));
//! let back = k8s_protobuf::decode_envelope(&envelope, JsonStyle::Compact).unwrap();
//! // Go's order: metadata, then data with sorted keys; creationTimestamp (zero) omitted.
//! assert_eq!(back, br#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cfg"},"data":{"a":"1","b":"2"}}"#);
//!
//! let pod = MessageType::for_kind("v1", "Pod").unwrap();
//! let err = pod.from_json(br#"{"spec":{"containers":[{"name":"c","ports":[{"containerPort":"80"}]}]}}"#).unwrap_err();
//! assert!(err.to_string().contains(".spec.containers[0].ports[0].containerPort"));
//! ```

mod base64;
mod decode;
mod descriptors;
mod encode;
mod json_in;
mod json_out;
mod list;
mod path;
mod quantity;
mod schema;
mod time;
mod wire;

use serde_json::Value;

pub use descriptors::{comments, descriptor_pool, descriptor_set_bytes};
pub use json_out::JsonStyle;
pub use list::ListEncoder;

use crate::envelope::Envelope;
use crate::{Error, Result};
use path::PathError;
use schema::{MsgId, Schema};

/// The deepest JSON nesting either direction handles (objects and arrays, embedded raw JSON
/// included); deeper input is an error, not a stack overflow.
pub const MAX_DEPTH: usize = 256;

/// A message type of the Kubernetes protos: a built-in kind such as `k8s.io.api.core.v1.Pod`, or
/// any message nested in one.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct MessageType(MsgId);

impl std::fmt::Debug for MessageType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MessageType({})", self.full_name())
    }
}

impl MessageType {
    /// The message of a built-in kind: `apiVersion` `v1`, `apps/v1`, … (see [`built_in_kinds`]) and
    /// a kind whose Go type embeds `TypeMeta`, or one of the meta/v1 kinds every group version serves
    /// (`Status`, `WatchEvent`, `DeleteOptions`, `ListOptions`, …, `APIGroup`, `APIVersions`).
    ///
    /// # Errors
    ///
    /// [`Error::NotBuiltIn`] for anything else (custom resources, groups without protos here).
    pub fn for_kind(api_version: &str, kind: &str) -> Result<Self> {
        Schema::get()
            .for_kind(api_version, kind)
            .map(MessageType)
            .ok_or_else(|| Error::NotBuiltIn { api_version: api_version.to_owned(), kind: kind.to_owned() })
    }

    /// The message with this fully qualified protobuf name, e.g. `k8s.io.api.core.v1.PodSpec`.
    #[must_use]
    pub fn from_full_name(full_name: &str) -> Option<Self> {
        Schema::get().by_name(full_name).map(MessageType)
    }

    /// The fully qualified protobuf name, e.g. `k8s.io.api.core.v1.Pod`.
    #[must_use]
    pub fn full_name(self) -> &'static str {
        Schema::get().message(self.0).full_name
    }

    /// Whether the Go type embeds `metav1.TypeMeta`, i.e. its JSON starts with `kind` and
    /// `apiVersion` (which protobuf carries in the envelope, not in the message).
    #[must_use]
    pub fn has_type_meta(self) -> bool {
        Schema::get().message(self.0).type_meta
    }

    /// The message's descriptor in [`descriptor_pool`] (fields, comments).
    #[must_use]
    pub fn descriptor(self) -> Option<prost_reflect::MessageDescriptor> {
        descriptor_pool().get_message_by_name(self.full_name())
    }

    /// The JSON of the protobuf message `protobuf` (the bare message, e.g. an envelope's `raw`),
    /// without `kind`/`apiVersion`.
    ///
    /// # Errors
    ///
    /// [`Error::K8sProtobuf`], naming the field path, when the bytes are not a valid encoding of this
    /// message or hold a value Go cannot write as JSON.
    pub fn to_json(self, protobuf: &[u8], style: JsonStyle) -> Result<Vec<u8>> {
        decode_to_json(self, None, protobuf, style)
    }

    /// Like [`to_json`](Self::to_json), with `kind` and `apiVersion` first (each when non-empty, and
    /// only if the type embeds TypeMeta), as kube-apiserver writes a top-level object.
    ///
    /// # Errors
    ///
    /// As [`to_json`](Self::to_json).
    pub fn to_json_with_type_meta(self, api_version: &str, kind: &str, protobuf: &[u8], style: JsonStyle) -> Result<Vec<u8>> {
        decode_to_json(self, Some((api_version, kind)), protobuf, style)
    }

    /// The protobuf message as a [`serde_json::Value`] (member order is lost: use
    /// [`to_json`](Self::to_json) for text). Nesting is limited to serde_json's 128 levels.
    ///
    /// # Errors
    ///
    /// As [`to_json`](Self::to_json).
    pub fn to_value(self, protobuf: &[u8]) -> Result<Value> {
        Ok(serde_json::from_slice(&self.to_json(protobuf, JsonStyle::Compact)?)?)
    }

    /// The protobuf encoding of this message from its Kubernetes JSON text. Keys this message does
    /// not have (`kind`, `apiVersion`, unknown fields) are ignored. Embedded raw JSON
    /// (`RawExtension`, `FieldsV1`, apiextensions `JSON`) is stored compacted, with its keys, numbers
    /// and escapes as written.
    ///
    /// # Errors
    ///
    /// [`Error::K8sJson`], naming the field path, for invalid JSON text or JSON whose shape or values
    /// do not fit the message (what Go's decoder rejects).
    pub fn from_json(self, json: &[u8]) -> Result<Vec<u8>> {
        let text = json_in::lossy_utf8(json);
        let node = json_in::parse(&text, MAX_DEPTH).map_err(|reason| self.json_error(PathError::new(reason)))?;
        self.encode(&node)
    }

    /// Like [`from_json`](Self::from_json) from a [`serde_json::Value`]. Raw JSON fields are written
    /// as serde_json serialises them (keys sorted, its number format).
    ///
    /// # Errors
    ///
    /// As [`from_json`](Self::from_json).
    pub fn from_value(self, json: &Value) -> Result<Vec<u8>> {
        self.encode(json)
    }

    /// Whether `json` encodes as this message, as [`from_value`](Self::from_value) would say,
    /// looking only at the fields present and, given `old` (another version of the same object,
    /// which encoded), only at those that differ from `old`'s. An absent field takes its zero
    /// value, which always encodes; what is looked at is encoded into a scratch buffer, not
    /// kept. The error is [`from_value`](Self::from_value)'s for those fields.
    ///
    /// # Errors
    ///
    /// As [`from_value`](Self::from_value), for the fields looked at.
    pub fn check(self, json: &Value, old: Option<&Value>) -> Result<()> {
        let schema = Schema::get();
        let mut encoder = encode::Encoder::new(schema, 256);
        encoder.message_changed(schema.message(self.0), Some(json), old, 0).map_err(|e| self.json_error(e))
    }

    fn encode<J: json_in::JsonIn>(self, json: &J) -> Result<Vec<u8>> {
        let schema = Schema::get();
        let message = schema.message(self.0);
        let mut encoder = encode::Encoder::new(schema, 1024);
        encoder.message(message, Some(json), 0).map_err(|e| self.json_error(e))?;
        Ok(encoder.out)
    }

    fn json_error(self, e: PathError) -> Error {
        Error::K8sJson { message: self.full_name().to_owned(), path: e.path(), reason: e.reason }
    }
}

fn decode_to_json(message: MessageType, type_meta: Option<(&str, &str)>, protobuf: &[u8], style: JsonStyle) -> Result<Vec<u8>> {
    let schema = Schema::get();
    let mut decoder = decode::Decoder::new(schema, style, protobuf.len() * 2 + 64);
    decoder.object(schema.message(message.0), type_meta, protobuf).map_err(|e| Error::K8sProtobuf {
        message: message.full_name().to_owned(),
        path: e.path(),
        reason: e.reason,
    })?;
    Ok(decoder.w.finish())
}

/// Builds the protobuf schema now (every other function here builds it on first use, a few
/// milliseconds): a server calls it on a thread of its own once it is ready, so that its first
/// protobuf request does not wait for it.
pub fn prepare() {
    let _ = Schema::get();
}

/// Whether `api_version`/`kind` is a built-in kind [`MessageType::for_kind`] resolves.
#[must_use]
pub fn is_built_in(api_version: &str, kind: &str) -> bool {
    Schema::get().for_kind(api_version, kind).is_some()
}

/// Every built-in (apiVersion, kind) with its message, in no particular order.
pub fn built_in_kinds() -> impl Iterator<Item = (&'static str, &'static str, MessageType)> {
    Schema::get().kinds().map(|(api_version, kind, id)| (api_version, kind, MessageType(id)))
}

/// The JSON of the object in a `k8s\x00` envelope whose `raw` is protobuf (empty content type),
/// its message found from the envelope's `typeMeta`: `kind` and `apiVersion` first, then the
/// object's fields, as kube-apiserver serves it.
///
/// # Errors
///
/// [`Error::Envelope`] for a malformed envelope or one whose `raw` is not plain protobuf (a content
/// type or encoding is set); [`Error::NotBuiltIn`] when the typeMeta names no built-in kind (custom
/// resources are stored as JSON); [`Error::K8sProtobuf`] for a bad `raw`.
pub fn decode_envelope(bytes: &[u8], style: JsonStyle) -> Result<Vec<u8>> {
    let envelope = protobuf_envelope(bytes)?;
    let message = MessageType::for_kind(&envelope.api_version, &envelope.kind)?;
    message.to_json_with_type_meta(&envelope.api_version, &envelope.kind, &envelope.raw, style)
}

/// Like [`decode_envelope`] for an envelope known to hold `message` (for types without TypeMeta,
/// whose envelope names no kind: `WatchEvent`).
///
/// # Errors
///
/// As [`decode_envelope`], without [`Error::NotBuiltIn`].
pub fn decode_envelope_as(message: MessageType, bytes: &[u8], style: JsonStyle) -> Result<Vec<u8>> {
    let envelope = protobuf_envelope(bytes)?;
    message.to_json_with_type_meta(&envelope.api_version, &envelope.kind, &envelope.raw, style)
}

fn protobuf_envelope(bytes: &[u8]) -> Result<Envelope> {
    let envelope = Envelope::decode(bytes)?;
    if !envelope.content_type.is_empty() || !envelope.content_encoding.is_empty() {
        return Err(Error::Envelope {
            reason: format!(
                "raw is not plain protobuf (contentType {:?}, contentEncoding {:?})",
                envelope.content_type, envelope.content_encoding
            ),
        });
    }
    Ok(envelope)
}

/// The `k8s\x00` envelope of a built-in object given as Kubernetes JSON text: `typeMeta` from its
/// `apiVersion` and `kind`, `raw` its protobuf encoding, empty content type and encoding — the bytes
/// kube-apiserver writes to etcd.
///
/// # Errors
///
/// [`Error::NotBuiltIn`] when the JSON's apiVersion/kind is not a built-in kind (keep custom
/// resources as JSON); [`Error::K8sJson`] for invalid JSON or JSON that does not fit the schema.
pub fn encode_envelope(json: &[u8]) -> Result<Vec<u8>> {
    let text = json_in::lossy_utf8(json);
    let node = json_in::parse(&text, MAX_DEPTH).map_err(|reason| Error::K8sJson { message: String::new(), path: ".".into(), reason })?;
    envelope_of(None, &node)
}

/// Like [`encode_envelope`] from a [`serde_json::Value`].
///
/// # Errors
///
/// As [`encode_envelope`].
pub fn encode_envelope_value(json: &Value) -> Result<Vec<u8>> {
    envelope_of(None, json)
}

/// Like [`encode_envelope`] for an object known to be a `message` (for types without TypeMeta:
/// `WatchEvent`, whose envelope `typeMeta` is then empty).
///
/// # Errors
///
/// As [`encode_envelope`], without [`Error::NotBuiltIn`].
pub fn encode_envelope_as(message: MessageType, json: &[u8]) -> Result<Vec<u8>> {
    let text = json_in::lossy_utf8(json);
    let node = json_in::parse(&text, MAX_DEPTH).map_err(|reason| message.json_error(PathError::new(reason)))?;
    envelope_of(Some(message), &node)
}

fn envelope_of<J: json_in::JsonIn>(message: Option<MessageType>, json: &J) -> Result<Vec<u8>> {
    let type_meta_string = |key: &'static str| -> Result<String> {
        match json.members().filter(|(k, _)| *k == key).last().map(|(_, v)| v.view()) {
            None | Some(json_in::View::Null) => Ok(String::new()),
            Some(json_in::View::String(s)) => Ok(s.to_owned()),
            Some(other) => Err(Error::K8sJson {
                message: message.map(|m| m.full_name().to_owned()).unwrap_or_default(),
                path: format!(".{key}"),
                reason: format!("cannot unmarshal {} into a field of type string", other.name()),
            }),
        }
    };
    let (api_version, kind) = (type_meta_string("apiVersion")?, type_meta_string("kind")?);
    let message = match message {
        Some(message) => message,
        None => MessageType::for_kind(&api_version, &kind)?,
    };
    let raw = message.encode(json)?;
    let (api_version, kind) = if Schema::get().message(message.0).type_meta { (api_version, kind) } else { (String::new(), String::new()) };
    Ok(Envelope { api_version, kind, raw, content_encoding: String::new(), content_type: String::new() }.encode())
}

/// The `k8s\x00` envelope of a list of a built-in kind given in parts, as kube-apiserver answers a
/// protobuf LIST: `header` is the list's JSON without items (`apiVersion`, `kind` such as
/// `ConfigMapList`, `metadata`), `items` each item's JSON text. Items are encoded one at a time
/// and appended as the list's `items` field, so the whole list is never held as one JSON tree.
///
/// # Errors
///
/// As [`encode_envelope`]; an item's error names its path from the list (`.items[3].data`).
pub fn encode_list_envelope<'a>(header: &[u8], items: impl IntoIterator<Item = &'a [u8]>) -> Result<Vec<u8>> {
    let list = ListEncoder::new(header)?;
    let mut encoded = Vec::new();
    for (i, json) in items.into_iter().enumerate() {
        list.item(json, i, &mut encoded)?;
    }
    let mut out = list.head(encoded.len() as u64);
    out.append(&mut encoded);
    out.extend_from_slice(&list.tail());
    Ok(out)
}

/// The object a `k8s\x00` envelope carries, whatever its `raw` holds: the Kubernetes protobuf
/// encoding of a built-in kind (empty content type) decoded as [`decode_envelope`] does, or JSON
/// (`application/json`, as custom resources travel) with the envelope's `apiVersion` and `kind`
/// filled in where the JSON lacks them.
///
/// # Errors
///
/// As [`decode_envelope`] for protobuf; [`Error::Envelope`] for another content type or encoding,
/// or JSON `raw` that does not parse as an object.
pub fn object_of_envelope(bytes: &[u8]) -> Result<Value> {
    let envelope = Envelope::decode(bytes)?;
    if envelope.content_type.is_empty() && envelope.content_encoding.is_empty() {
        let message = MessageType::for_kind(&envelope.api_version, &envelope.kind)?;
        let json = message.to_json_with_type_meta(&envelope.api_version, &envelope.kind, &envelope.raw, JsonStyle::Compact)?;
        return Ok(serde_json::from_slice(&json)?);
    }
    let media = envelope.content_type.split(';').next().unwrap_or("").trim();
    if media != crate::envelope::CONTENT_TYPE_JSON || !envelope.content_encoding.is_empty() {
        return Err(Error::Envelope {
            reason: format!(
                "raw must be protobuf (empty contentType) or {} (contentType {:?}, contentEncoding {:?})",
                crate::envelope::CONTENT_TYPE_JSON,
                envelope.content_type,
                envelope.content_encoding
            ),
        });
    }
    let mut object: Value =
        serde_json::from_slice(&envelope.raw).map_err(|e| Error::Envelope { reason: format!("raw is not valid JSON: {e}") })?;
    let Value::Object(members) = &mut object else {
        return Err(Error::Envelope { reason: format!("raw JSON must be an object, got {}", crate::value::kind_name(&object)) });
    };
    for (key, value) in [("apiVersion", envelope.api_version), ("kind", envelope.kind)] {
        if !value.is_empty() {
            members.entry(key).or_insert(Value::String(value));
        }
    }
    Ok(object)
}

/// The `k8s\x00` envelope of an object given as JSON text of `api_version`/`kind`, as
/// kube-apiserver writes it: a built-in kind's protobuf encoding ([`encode_envelope`]); for any
/// other kind (custom resources) the JSON itself, with content type `application/json`.
///
/// # Errors
///
/// As [`encode_envelope`] for built-in kinds.
pub fn envelope_of_object(json: &[u8], api_version: &str, kind: &str) -> Result<Vec<u8>> {
    if is_built_in(api_version, kind) {
        return encode_envelope(json);
    }
    Ok(Envelope {
        api_version: api_version.into(),
        kind: kind.into(),
        raw: json.to_vec(),
        content_encoding: String::new(),
        content_type: crate::envelope::CONTENT_TYPE_JSON.into(),
    }
    .encode())
}
