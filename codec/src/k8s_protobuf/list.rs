//! A protobuf LIST answer written in parts, as kube-apiserver's streaming list encoder writes it
//! (`runtime/serializer/protobuf`, `streamingEncodeUnknownList`): the `k8s\x00` envelope's
//! `runtime.Unknown` up to its `raw` field, the list's `metadata`, then each item as it comes,
//! then the envelope's last (empty) fields.
//!
//! Protobuf puts a length before `raw`, so the head needs the items' total size
//! ([`ListEncoder::head`]): a caller that cannot hold every item sizes them first
//! ([`ListEncoder::item`] into a scratch buffer) and writes them in a second pass.

use super::{json_in, wire, Error, MessageType, Result, MAX_DEPTH};
use crate::envelope::MAGIC;

/// The parts of the protobuf answer to a LIST of a built-in kind.
#[derive(Debug, Clone)]
pub struct ListEncoder {
    api_version: String,
    kind: String,
    /// The list message without its items (its `metadata` field).
    meta: Vec<u8>,
    items_field: u32,
    item: MessageType,
}

impl ListEncoder {
    /// The encoder of a list whose JSON without items is `header` (`apiVersion`, `kind` such as
    /// `ConfigMapList`, `metadata`).
    ///
    /// # Errors
    /// [`Error::K8sJson`] for a header that is not such JSON, [`Error::NotBuiltIn`] for a kind
    /// that is not a built-in list.
    pub fn new(header: &[u8]) -> Result<Self> {
        use json_in::JsonIn as _;
        let text = json_in::lossy_utf8(header);
        let node =
            json_in::parse(&text, MAX_DEPTH).map_err(|reason| Error::K8sJson { message: String::new(), path: ".".into(), reason })?;
        let field = |key: &str| match node.members().filter(|(k, _)| *k == key).last().map(|(_, v)| v.view()) {
            Some(json_in::View::String(s)) => s.to_owned(),
            _ => String::new(),
        };
        let (api_version, kind) = (field("apiVersion"), field("kind"));
        let list = MessageType::for_kind(&api_version, &kind)?;
        let not_a_list = || Error::NotBuiltIn { api_version: api_version.clone(), kind: kind.clone() };
        let items_field = list.descriptor().and_then(|d| d.get_field_by_name("items")).ok_or_else(not_a_list)?;
        let item = items_field.kind().as_message().and_then(|m| MessageType::from_full_name(m.full_name())).ok_or_else(not_a_list)?;
        let items_field = items_field.number();
        let meta = list.encode(&node)?;
        Ok(ListEncoder { api_version, kind, meta, items_field, item })
    }

    /// Appends to `out` item number `index` (counted from 0, for error paths) from its JSON
    /// text, as the list's `items` field (key, length, message); answers how many bytes it
    /// appended.
    ///
    /// # Errors
    /// As [`MessageType::from_json`], the path from the list (`.items[3].data`).
    pub fn item(&self, json: &[u8], index: usize, out: &mut Vec<u8>) -> Result<usize> {
        let encoded = self.encode_item(json, index)?;
        Ok(self.put_item(&encoded, out))
    }

    /// The message of the list's items (`v1.ConfigMap` for a `ConfigMapList`).
    #[must_use]
    pub fn item_message(&self) -> MessageType {
        self.item
    }

    /// The encoding of item number `index` from its JSON text: the item's message alone, which
    /// [`ListEncoder::put_item`] appends as the list's `items` field.
    ///
    /// # Errors
    /// As [`ListEncoder::item`].
    pub fn encode_item(&self, json: &[u8], index: usize) -> Result<Vec<u8>> {
        self.item.from_json(json).map_err(|e| match e {
            Error::K8sJson { message, path, reason } => Error::K8sJson { message, path: format!(".items[{index}]{path}"), reason },
            other => other,
        })
    }

    /// Appends to `out` an item's message (as [`ListEncoder::encode_item`] encodes it) as the
    /// list's `items` field; answers how many bytes it appended.
    pub fn put_item(&self, encoded: &[u8], out: &mut Vec<u8>) -> usize {
        let before = out.len();
        wire::put_key(out, self.items_field, 2);
        wire::put_varint(out, encoded.len() as u64);
        out.extend_from_slice(encoded);
        out.len() - before
    }

    /// How many bytes [`ListEncoder::put_item`] appends for an item's message of `len` bytes.
    #[must_use]
    pub fn item_size(&self, len: usize) -> usize {
        wire::key_len(self.items_field) + wire::varint_len(len as u64) + len
    }

    /// The answer's first bytes, when its items take `items_len` bytes (the sum of what
    /// [`ListEncoder::item`] appended for each): the envelope up to `raw`'s content and the
    /// list's `metadata`.
    #[must_use]
    pub fn head(&self, items_len: u64) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.meta.len());
        out.extend_from_slice(&MAGIC);
        // runtime.Unknown: typeMeta (1) with apiVersion (1) and kind (2), always written, as
        // apimachinery's gogo-generated marshaller writes every field.
        let mut type_meta = Vec::with_capacity(8 + self.api_version.len() + self.kind.len());
        for (number, s) in [(1, &self.api_version), (2, &self.kind)] {
            wire::put_key(&mut type_meta, number, 2);
            wire::put_varint(&mut type_meta, s.len() as u64);
            type_meta.extend_from_slice(s.as_bytes());
        }
        wire::put_key(&mut out, 1, 2);
        wire::put_varint(&mut out, type_meta.len() as u64);
        out.extend_from_slice(&type_meta);
        // raw (2): the list message.
        wire::put_key(&mut out, 2, 2);
        wire::put_varint(&mut out, self.meta.len() as u64 + items_len);
        out.extend_from_slice(&self.meta);
        out
    }

    /// The answer's last bytes, after the items: the envelope's empty `contentEncoding` (3) and
    /// `contentType` (4).
    #[must_use]
    pub fn tail(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(4);
        for number in [3, 4] {
            wire::put_key(&mut out, number, 2);
            wire::put_varint(&mut out, 0);
        }
        out
    }
}
