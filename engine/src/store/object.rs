//! The stored form of an object version.
//!
//! ```text
//! record  = format (u8 = 1) ‖ flags (u8: bit 0 = tombstone, bit 1 = protobuf body) ‖ body ‖ entries
//! body    = uvarint length ‖ the object without metadata.resourceVersion (the revision is in
//!           the key) and without metadata.managedFields: as compact JSON, or (bit 1) as the
//!           `k8s\x00` envelope of its Kubernetes protobuf encoding, as kube-apiserver stores it
//! entries = uvarint count ‖ entry*
//! entry   = str manager ‖ u8 operation (0 Apply, 1 Update) ‖ str apiVersion ‖ str time ("" none)
//!           ‖ str subresource ‖ bytes fields (binary FieldsV1, `fieldstore_codec::fields_binary`)
//! str     = uvarint length ‖ UTF-8;  bytes = uvarint length ‖ bytes
//! ```
//!
//! A tombstone is the object's last state, written by a delete at the deleting revision. The
//! JSON view ([`decode`]) puts the revision back as `metadata.resourceVersion` and the
//! managedFields back in Kubernetes' JSON form; the object's keys are sorted (serde_json's map),
//! so the view is byte-stable.

use crate::fieldmanager::StoredEntry;
use crate::{Error, Result};
use fieldstore_codec::managed_fields::{Operation, FIELDS_TYPE_V1};
use fieldstore_codec::{fields_binary, fields_v1, k8s_protobuf};
use serde_json::Value;

const FORMAT: u8 = 1;
const TOMBSTONE: u8 = 1;
/// The body is a `k8s\x00` envelope holding the object's Kubernetes protobuf encoding.
const PROTOBUF: u8 = 2;
/// The version was written by a create whose history record leaves the body to this record.
const CREATED: u8 = 4;

/// A managedFields entry but its field set, as read from the object's JSON form.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct EntryMeta {
    #[serde(default)]
    manager: String,
    operation: Operation,
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    time: Option<String>,
    #[serde(default)]
    subresource: String,
}

/// The version an object replaces: its managedFields (JSON form, from [`decode`]) and their
/// binary sets in the same order (from [`entry_fields`] of its record), and the same entries
/// decoded when the write decoded them (else empty).
pub(crate) struct Previous<'a> {
    pub managed_fields: Option<&'a Value>,
    pub entries: &'a [EntryFields],
    pub decoded: &'a [StoredEntry],
    /// The sets of the new version's entries, in order, when the field manager has just written
    /// them (empty otherwise).
    pub written: &'a [fieldstore_codec::Set],
}

/// A version encoded: its record, its managedFields entries as the owner index sees them, and
/// the same entries decoded when every set was at hand (parsed from the JSON, or reused with
/// the previous version's decoded set), for the object cache.
pub(crate) struct Encoded {
    pub record: Vec<u8>,
    pub entries: Vec<EntryFields>,
    pub decoded: Option<Vec<StoredEntry>>,
}

/// How an object's body is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyEncoding {
    /// Compact JSON.
    Json,
    /// The Kubernetes protobuf envelope where the object is of a built-in kind and reads back
    /// exactly as written (unknown fields, nulls, non-canonical quantities or times keep JSON).
    Protobuf,
}

/// Encodes `object` (whose managedFields, if any, are in Kubernetes' JSON form) as a record,
/// also returning its managedFields entries as the owner index sees them. An entry whose field
/// set is unchanged from `previous` reuses its binary form (and decoded set) instead of parsing
/// it again.
pub(crate) fn encode_with_entries(
    object: &mut Value,
    tombstone: bool,
    previous: Option<Previous<'_>>,
    encoding: BodyEncoding,
) -> Result<Encoded> {
    // The body is the object without resourceVersion and managedFields: they are taken out for
    // the serialization and put back, rather than cloning a possibly large object.
    let saved = match object.get_mut("metadata") {
        Some(Value::Object(meta)) => (meta.remove("resourceVersion"), meta.remove("managedFields")),
        _ => (None, None),
    };
    let body = match encoding {
        BodyEncoding::Protobuf => protobuf_body(object).map(|b| (b, PROTOBUF)),
        BodyEncoding::Json => None,
    }
    .unwrap_or_else(|| (fieldstore_codec::json_text::to_vec(object), 0));
    let entries = encode_entries(saved.1.as_ref(), previous.as_ref());
    if let Some(Value::Object(meta)) = object.get_mut("metadata") {
        if let Some(rv) = saved.0 {
            meta.insert("resourceVersion".into(), rv);
        }
        if let Some(mf) = saved.1 {
            meta.insert("managedFields".into(), mf);
        }
    }
    let ((body, body_flag), entries) = (body, entries?);
    let mut out = Vec::with_capacity(body.len() + 64);
    out.push(FORMAT);
    out.push(if tombstone { TOMBSTONE } else { 0 } | body_flag);
    put_bytes(&mut out, &body);
    put_uvarint(&mut out, entries.len() as u64);
    let mut fields = Vec::with_capacity(entries.len());
    let mut decoded = Some(Vec::with_capacity(entries.len()));
    for (e, bin, set) in entries {
        put_bytes(&mut out, e.manager.as_bytes());
        out.push(match e.operation {
            Operation::Apply => 0,
            Operation::Update => 1,
        });
        put_bytes(&mut out, e.api_version.as_bytes());
        put_bytes(&mut out, e.time.as_deref().unwrap_or("").as_bytes());
        put_bytes(&mut out, e.subresource.as_bytes());
        put_bytes(&mut out, &bin);
        decoded = decoded.zip(set.clone()).map(|(mut d, set)| {
            d.push(StoredEntry {
                manager: e.manager.clone(),
                operation: e.operation,
                api_version: e.api_version,
                time: e.time.unwrap_or_default(),
                subresource: e.subresource.clone(),
                set,
            });
            d
        });
        fields.push(EntryFields { manager: e.manager, operation: operation_name(e.operation, &e.subresource), fields: bin, set });
    }
    Ok(Encoded { record: out, entries: fields, decoded })
}

/// The protobuf envelope of an object of a built-in kind, when it decodes to exactly `object`;
/// `None` for other kinds and for objects the Kubernetes encoding would change (unknown fields,
/// `null`s, empty optional strings, non-canonical quantities or times): they keep a JSON body, so
/// a read always returns what was written.
fn protobuf_body(object: &Value) -> Option<Vec<u8>> {
    let envelope = k8s_protobuf::encode_envelope_value(object).ok()?;
    (k8s_protobuf::object_of_envelope(&envelope).ok()? == *object).then_some(envelope)
}

/// One entry of a record being encoded: its metadata, its set in binary form, and the set
/// decoded when at hand (parsed from the JSON, or the previous version's set when the write
/// decoded it and the binary is reused).
type EncodedEntry = (EntryMeta, Vec<u8>, Option<fieldstore_codec::Set>);

/// The entries of a managedFields list with their sets in binary form.
fn encode_entries(mf: Option<&Value>, previous: Option<&Previous<'_>>) -> Result<Vec<EncodedEntry>> {
    let items = match mf {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(Error::BadRequest("invalid managedFields: expected a list".into())),
    };
    let old_items: &[Value] = previous.and_then(|p| p.managed_fields).and_then(Value::as_array).map_or(&[], Vec::as_slice);
    let old_bins = previous.map_or(&[][..], |p| p.entries);
    let old_sets = previous.map_or(&[][..], |p| p.decoded);
    let written = previous.map_or(&[][..], |p| p.written);
    let written = if written.len() == items.len() { written } else { &[] };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let meta: EntryMeta =
            serde::Deserialize::deserialize(item).map_err(|e| Error::BadRequest(format!("invalid managedFields: {e}")))?;
        let fields = item.get("fieldsV1").filter(|f| !f.is_null());
        let same = |old: &Value| {
            ["manager", "operation", "apiVersion", "subresource"].iter().all(|k| old.get(k) == item.get(k))
                && old.get("fieldsV1").filter(|f| !f.is_null()) == fields
        };
        let reused = old_items
            .iter()
            .position(same)
            .filter(|&i| i < old_bins.len() && old_items.len() == old_bins.len())
            .map(|i| (old_bins[i].fields.clone(), old_sets.get(i).filter(|_| old_sets.len() == old_bins.len()).map(|e| e.set.clone())));
        let (bin, set) = match (reused, fields, written.get(i)) {
            (Some(reused), ..) => reused,
            (None, _, Some(set)) => (fields_binary::encode(set), Some(set.clone())),
            (None, f, None) => {
                let set = match f {
                    Some(f) => crate::fieldmanager::fields_set(f).map_err(|e| Error::BadRequest(format!("invalid managedFields: {e}")))?,
                    None => fieldstore_codec::Set::new(),
                };
                (fields_binary::encode(&set), Some(set))
            }
        };
        out.push((meta, bin, set));
    }
    Ok(out)
}

/// `Apply`, `Update`, or `Update/status` for an entry written through a subresource.
fn operation_name(op: Operation, subresource: &str) -> String {
    let op = op.as_str();
    if subresource.is_empty() {
        op.to_string()
    } else {
        format!("{op}/{subresource}")
    }
}

/// The managedFields entries of a record as the owner index sees them (none for a tombstone).
pub(crate) fn entry_fields(record: &[u8]) -> Result<Vec<EntryFields>> {
    if is_tombstone(record) {
        return Ok(Vec::new());
    }
    let entries = parts(record)?.entries()?;
    Ok(entries
        .into_iter()
        .map(|e| EntryFields {
            operation: operation_name(e.operation, &e.subresource),
            manager: e.manager,
            fields: e.fields.to_vec(),
            set: None,
        })
        .collect())
}

/// The managedFields entries of a record, still encoded (empty for a tombstone); decoded by
/// [`stored_entries`].
pub(crate) fn entries_bytes(record: &[u8]) -> Result<&[u8]> {
    if is_tombstone(record) {
        return Ok(&[]);
    }
    Ok(parts(record)?.entries)
}

/// The managedFields entries [`entries_bytes`] returned, with their sets decoded from binary:
/// what the field manager works on, without the JSON form in between.
pub(crate) fn stored_entries(entries: &[u8]) -> Result<Vec<StoredEntry>> {
    if entries.is_empty() {
        return Ok(Vec::new());
    }
    Parts { body: &[], protobuf: false, entries }.stored_entries()
}

/// Marks a record as written by a create whose history record leaves the body to it: history
/// reads the created version here, and compaction copies it into the history record before
/// the version goes ([`is_created`]).
pub(crate) fn mark_created(record: &mut [u8]) {
    if let Some(flags) = record.get_mut(1) {
        *flags |= CREATED;
    }
}

/// Whether [`mark_created`] marked a record (without decoding it).
pub(crate) fn is_created(record: &[u8]) -> bool {
    record.get(1).is_some_and(|f| f & CREATED != 0)
}

/// A version's body as history keeps a created one: compact JSON without managedFields and
/// resourceVersion, which a record's body never holds (a JSON body as it is, a protobuf one as
/// JSON).
///
/// # Errors
/// [`Error::Corrupt`] when the record does not decode.
pub(crate) fn history_body(record: &[u8]) -> Result<String> {
    let p = parts(record)?;
    if p.protobuf {
        let object = k8s_protobuf::object_of_envelope(p.body).map_err(|e| Error::Corrupt(format!("object body: {e}")))?;
        return Ok(crate::history::compact(&object));
    }
    String::from_utf8(p.body.to_vec()).map_err(|e| Error::Corrupt(format!("object body: {e}")))
}

/// Whether a record is a tombstone (without decoding it).
pub(crate) fn is_tombstone(record: &[u8]) -> bool {
    record.get(1).is_some_and(|f| f & TOMBSTONE != 0)
}

/// A record's pieces: the body and its managedFields entries, still encoded.
pub(crate) struct Parts<'a> {
    /// The object as compact JSON with sorted keys, or (when `protobuf`) its Kubernetes protobuf
    /// envelope.
    pub body: &'a [u8],
    /// Whether the body is a protobuf envelope.
    pub protobuf: bool,
    entries: &'a [u8],
}

/// Splits a record into its pieces.
pub(crate) fn parts(record: &[u8]) -> Result<Parts<'_>> {
    let mut r = Reader { bytes: record };
    if r.byte()? != FORMAT {
        return Err(Error::Corrupt("unknown object record format".into()));
    }
    let flags = r.byte()?;
    let body = r.bytes()?;
    Ok(Parts { body, protobuf: flags & PROTOBUF != 0, entries: r.bytes })
}

/// One managedFields entry of a record, its field set still in binary form.
struct RawEntry<'a> {
    manager: String,
    operation: Operation,
    api_version: String,
    time: String,
    subresource: String,
    fields: &'a [u8],
}

impl<'a> Parts<'a> {
    /// The record's managedFields entries, in order.
    fn entries(&self) -> Result<Vec<RawEntry<'a>>> {
        let mut r = Reader { bytes: self.entries };
        let n = r.uvarint()?;
        let mut out = Vec::new();
        for _ in 0..n {
            let manager = r.string()?;
            let operation = match r.byte()? {
                0 => Operation::Apply,
                1 => Operation::Update,
                t => return Err(Error::Corrupt(format!("unknown operation {t}"))),
            };
            let (api_version, time, subresource) = (r.string()?, r.string()?, r.string()?);
            out.push(RawEntry { manager, operation, api_version, time, subresource, fields: r.bytes()? });
        }
        if !r.bytes.is_empty() {
            return Err(Error::Corrupt("trailing bytes in object record".into()));
        }
        Ok(out)
    }

    /// Whether the record has managedFields entries.
    pub(crate) fn has_managed_fields(&self) -> Result<bool> {
        Ok(Reader { bytes: self.entries }.uvarint()? > 0)
    }

    /// Appends the managedFields as the JSON text `serde_json` writes for
    /// [`decode`]'s managedFields (each entry's keys in byte order), without building the
    /// value: a list's JSON view of each object.
    pub(crate) fn write_managed_fields(&self, out: &mut Vec<u8>) -> Result<()> {
        let string = |out: &mut Vec<u8>, key: &[u8], s: &str| {
            out.extend_from_slice(key);
            fieldstore_codec::value::write_json_string(out, s);
        };
        out.push(b'[');
        for (i, RawEntry { manager, operation, api_version, time, subresource, fields }) in self.entries()?.into_iter().enumerate() {
            let set = fields_binary::decode(fields)?;
            out.extend_from_slice(if i == 0 { b"{" } else { b",{" });
            // The keys of `managed_fields`' map, in byte order; empty strings and a missing time
            // omitted, as there.
            if !api_version.is_empty() {
                string(out, b"\"apiVersion\":", &api_version);
                out.push(b',');
            }
            string(out, b"\"fieldsType\":", FIELDS_TYPE_V1);
            out.extend_from_slice(b",\"fieldsV1\":");
            fields_v1::write_value_json(&set, out);
            if !manager.is_empty() {
                string(out, b",\"manager\":", &manager);
            }
            string(out, b",\"operation\":", operation.as_str());
            if !subresource.is_empty() {
                string(out, b",\"subresource\":", &subresource);
            }
            if !time.is_empty() {
                string(out, b",\"time\":", &time);
            }
            out.push(b'}');
        }
        out.push(b']');
        Ok(())
    }

    /// The record's managedFields entries with their sets decoded.
    fn stored_entries(&self) -> Result<Vec<StoredEntry>> {
        self.entries()?
            .into_iter()
            .map(|RawEntry { manager, operation, api_version, time, subresource, fields }| {
                Ok(StoredEntry { set: fields_binary::decode(fields)?, manager, operation, api_version, time, subresource })
            })
            .collect()
    }
}

/// Entries in Kubernetes' managedFields JSON form (`None` when there are none), each as
/// ObjectMeta serializes it (empty strings and a missing time omitted), built as a JSON value
/// directly rather than rendered and parsed again.
fn managed_fields_value(stored: &[StoredEntry]) -> Option<Value> {
    let string = |s: &str| Value::String(s.to_owned());
    let entries: Vec<Value> = stored
        .iter()
        .map(|StoredEntry { manager, operation, api_version, time, subresource, set }| {
            let mut e = serde_json::Map::new();
            if !manager.is_empty() {
                e.insert("manager".into(), string(manager));
            }
            e.insert("operation".into(), string(operation.as_str()));
            if !api_version.is_empty() {
                e.insert("apiVersion".into(), string(api_version));
            }
            if !time.is_empty() {
                e.insert("time".into(), string(time));
            }
            e.insert("fieldsType".into(), string(FIELDS_TYPE_V1));
            e.insert("fieldsV1".into(), fields_v1::to_value(set));
            if !subresource.is_empty() {
                e.insert("subresource".into(), string(subresource));
            }
            Value::Object(e)
        })
        .collect();
    (!entries.is_empty()).then_some(Value::Array(entries))
}

/// The JSON view of a record stored at `revision`.
pub(crate) fn decode(record: &[u8], revision: u64) -> Result<Value> {
    Ok(decode_with_entries(record, revision)?.0)
}

/// [`decode`], and the record's managedFields entries with their decoded sets, as
/// [`stored_entries`] gives them.
pub(crate) fn decode_with_entries(record: &[u8], revision: u64) -> Result<(Value, Vec<StoredEntry>)> {
    let parts = parts(record)?;
    let mut object: Value = if parts.protobuf {
        k8s_protobuf::object_of_envelope(parts.body).map_err(|e| Error::Corrupt(format!("object body: {e}")))?
    } else {
        serde_json::from_slice(parts.body).map_err(|e| Error::Corrupt(format!("object body: {e}")))?
    };
    let stored = parts.stored_entries()?;
    let managed_fields = managed_fields_value(&stored);
    let Value::Object(root) = &mut object else {
        return Err(Error::Corrupt("object body is not a JSON object".into()));
    };
    let meta = root.entry("metadata").or_insert_with(|| Value::Object(serde_json::Map::new()));
    if let Value::Object(meta) = meta {
        meta.insert("resourceVersion".into(), Value::String(revision.to_string()));
        if let Some(mf) = managed_fields {
            meta.insert("managedFields".into(), mf);
        }
    }
    Ok((object, stored))
}

fn put_uvarint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_uvarint(out, b.len() as u64);
    out.extend_from_slice(b);
}

struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn byte(&mut self) -> Result<u8> {
        let (&b, rest) = self.bytes.split_first().ok_or_else(|| Error::Corrupt("truncated object record".into()))?;
        self.bytes = rest;
        Ok(b)
    }

    fn uvarint(&mut self) -> Result<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(Error::Corrupt("overlong varint".into()))
    }

    fn bytes(&mut self) -> Result<&'a [u8]> {
        let n = usize::try_from(self.uvarint()?).map_err(|_| Error::Corrupt("length overflow".into()))?;
        if n > self.bytes.len() {
            return Err(Error::Corrupt("truncated object record".into()));
        }
        let (b, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(b)
    }

    fn string(&mut self) -> Result<String> {
        String::from_utf8(self.bytes()?.to_vec()).map_err(|_| Error::Corrupt("invalid UTF-8 in object record".into()))
    }
}

/// A managedFields entry as the index sees it: whose, which operation, and its set (binary).
#[derive(Debug, Clone)]
pub(crate) struct EntryFields {
    pub manager: String,
    pub operation: String,
    pub fields: Vec<u8>,
    /// The set `fields` encodes, when the write had it decoded already (an entry it encoded, or
    /// reused from a previous version whose sets it decoded); `None` for entries read from a
    /// record, or reused from a version not decoded.
    pub set: Option<fieldstore_codec::Set>,
}

/// Entries are equal by what the record holds (the decoded set is a cache of `fields`).
impl PartialEq for EntryFields {
    fn eq(&self, other: &Self) -> bool {
        (&self.manager, &self.operation, &self.fields) == (&other.manager, &other.operation, &other.fields)
    }
}

impl Eq for EntryFields {}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn record_round_trips_with_managed_fields() {
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "resourceVersion": "3",
            "managedFields": [{"manager": "m", "operation": "Apply", "apiVersion": "v1", "time": "2024-01-02T03:04:05Z",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}}]}, "data": {"a": "1"}});
        let Encoded { record: rec, entries, decoded } = encode_with_entries(&mut obj.clone(), false, None, BodyEncoding::Json).unwrap();
        assert_eq!(entries.len(), 1);
        let from_record = stored_entries(entries_bytes(&rec).unwrap()).unwrap();
        assert!(same_entries(&decoded.unwrap(), &from_record), "the sets parsed are the record's");
        assert_eq!(entry_fields(&rec).unwrap(), entries);
        assert!(!is_tombstone(&rec));
        let mut back = decode(&rec, 9).unwrap();
        assert_eq!(back["metadata"]["resourceVersion"], "9");
        back["metadata"]["resourceVersion"] = json!("3");
        assert_eq!(back, obj);
        assert!(is_tombstone(&encode_with_entries(&mut obj.clone(), true, None, BodyEncoding::Json).unwrap().record));
        // Re-encoding against the decoded version reuses its binary sets, with the same bytes,
        // and its decoded sets when it has them.
        let mut view = decode(&rec, 9).unwrap();
        let mf = view["metadata"]["managedFields"].clone();
        let previous = |decoded| Previous { managed_fields: Some(&mf), entries: &entries, decoded, written: &[] };
        let again = encode_with_entries(&mut view, false, Some(previous(&[])), BodyEncoding::Json).unwrap();
        assert_eq!(again.record, rec);
        assert!(again.decoded.is_none(), "a reused binary without its set");
        let again = encode_with_entries(&mut view, false, Some(previous(&from_record)), BodyEncoding::Json).unwrap();
        assert_eq!(again.record, rec);
        assert!(same_entries(&again.decoded.unwrap(), &from_record));
        // A changed entry is parsed; the others keep the previous version's sets.
        let mut two = view.clone();
        two["metadata"]["managedFields"].as_array_mut().unwrap().push(json!({"manager": "n", "operation": "Update",
            "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:b": {}}}}));
        let encoded = encode_with_entries(&mut two, false, Some(previous(&from_record)), BodyEncoding::Json).unwrap();
        let from_record = stored_entries(entries_bytes(&encoded.record).unwrap()).unwrap();
        assert_eq!(from_record.len(), 2);
        assert!(same_entries(&encoded.decoded.unwrap(), &from_record));
    }

    fn same_entries(a: &[StoredEntry], b: &[StoredEntry]) -> bool {
        let key =
            |e: &StoredEntry| (e.manager.clone(), e.operation, e.api_version.clone(), e.time.clone(), e.subresource.clone(), e.set.clone());
        a.iter().map(key).eq(b.iter().map(key))
    }

    #[test]
    fn protobuf_bodies_for_builtin_kinds_that_read_back_exactly() {
        let mf = json!([{"manager": "m", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}}]);
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns", "managedFields": mf}, "data": {"a": "1"}});
        let rec = encode_with_entries(&mut cm.clone(), false, None, BodyEncoding::Protobuf).unwrap().record;
        let parts = parts(&rec).unwrap();
        assert!(parts.protobuf && parts.body.starts_with(b"k8s\0"));
        let mut back = decode(&rec, 7).unwrap();
        assert_eq!(back["metadata"]["resourceVersion"], "7");
        back["metadata"].as_object_mut().unwrap().remove("resourceVersion");
        assert_eq!(back, cm);
        // A tombstone keeps the flag apart.
        let tomb = encode_with_entries(&mut cm.clone(), true, None, BodyEncoding::Protobuf).unwrap().record;
        assert!(is_tombstone(&tomb) && parts_of(&tomb));
        // What the protobuf encoding would change keeps JSON: an unknown field, a null, a
        // non-canonical quantity, and custom resources.
        for keeps_json in [
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"a": "1"}, "extra": 1}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": null}}),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c",
                "resources": {"limits": {"cpu": "1000m"}}}]}}),
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}),
        ] {
            let rec = encode_with_entries(&mut keeps_json.clone(), false, None, BodyEncoding::Protobuf).unwrap().record;
            assert!(!parts_of(&rec), "{keeps_json}");
            let mut back = decode(&rec, 1).unwrap();
            back["metadata"].as_object_mut().unwrap().remove("resourceVersion");
            assert_eq!(back, keeps_json);
        }
    }

    fn parts_of(rec: &[u8]) -> bool {
        parts(rec).unwrap().protobuf
    }
}
