//! The stored form of an object version.
//!
//! ```text
//! record  = format (u8 = 1) ‖ flags (u8: bit 0 = tombstone) ‖ body ‖ entries
//! body    = uvarint length ‖ the object as compact JSON, without metadata.resourceVersion
//!           (the revision is in the key) and without metadata.managedFields
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

use super::owners::EntryFields;
use crate::{Error, Result};
use fieldstore_codec::managed_fields::{self, ManagedFieldsEntry, Operation, FIELDS_TYPE_V1};
use fieldstore_codec::{fields_binary, fields_v1};
use serde_json::Value;

const FORMAT: u8 = 1;
const TOMBSTONE: u8 = 1;

/// Encodes `object` (whose managedFields, if any, are in Kubernetes' JSON form) as a record,
/// also returning its managedFields entries as the owner index sees them.
pub(crate) fn encode_with_entries(object: &mut Value, tombstone: bool) -> Result<(Vec<u8>, Vec<EntryFields>)> {
    // The body is the object without resourceVersion and managedFields: they are taken out for
    // the serialization and put back, rather than cloning a possibly large object.
    let saved = match object.get_mut("metadata") {
        Some(Value::Object(meta)) => (meta.remove("resourceVersion"), meta.remove("managedFields")),
        _ => (None, None),
    };
    let json = serde_json::to_vec(&*object).map_err(|e| Error::BadRequest(format!("cannot encode object: {e}")));
    let entries: std::result::Result<Vec<ManagedFieldsEntry>, _> = match &saved.1 {
        Some(mf) if !mf.is_null() => serde::Deserialize::deserialize(mf).map_err(|e| Error::BadRequest(format!("invalid managedFields: {e}"))),
        _ => Ok(Vec::new()),
    };
    if let Some(Value::Object(meta)) = object.get_mut("metadata") {
        if let Some(rv) = saved.0 {
            meta.insert("resourceVersion".into(), rv);
        }
        if let Some(mf) = saved.1 {
            meta.insert("managedFields".into(), mf);
        }
    }
    let (json, entries) = (json?, entries?);
    let mut out = Vec::with_capacity(json.len() + 64);
    out.push(FORMAT);
    out.push(if tombstone { TOMBSTONE } else { 0 });
    put_bytes(&mut out, &json);
    put_uvarint(&mut out, entries.len() as u64);
    let mut fields = Vec::with_capacity(entries.len());
    for e in &entries {
        put_bytes(&mut out, e.manager.as_bytes());
        out.push(match e.operation {
            Operation::Apply => 0,
            Operation::Update => 1,
        });
        put_bytes(&mut out, e.api_version.as_bytes());
        put_bytes(&mut out, e.time.as_deref().unwrap_or("").as_bytes());
        put_bytes(&mut out, e.subresource.as_bytes());
        let set = match e.fields_v1_json() {
            Some(json) => fields_v1::from_json(json.as_bytes())?,
            None => fieldstore_codec::Set::new(),
        };
        let bin = fields_binary::encode(&set);
        put_bytes(&mut out, &bin);
        fields.push(EntryFields { manager: e.manager.clone(), operation: operation_name(e.operation, &e.subresource), fields: bin });
    }
    Ok((out, fields))
}

/// `Apply`, `Update`, or `Update/status` for an entry written through a subresource.
fn operation_name(op: Operation, subresource: &str) -> String {
    let op = match op {
        Operation::Apply => "Apply",
        Operation::Update => "Update",
    };
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
    let mut r = Reader { bytes: record.get(2..).unwrap_or_default() };
    r.bytes()?;
    let n = r.uvarint()?;
    let mut out = Vec::new();
    for _ in 0..n {
        let manager = r.string()?;
        let op = match r.byte()? {
            0 => Operation::Apply,
            _ => Operation::Update,
        };
        r.bytes()?;
        r.bytes()?;
        let subresource = r.string()?;
        let fields = r.bytes()?.to_vec();
        out.push(EntryFields { manager, operation: operation_name(op, &subresource), fields });
    }
    Ok(out)
}

/// Whether a record is a tombstone (without decoding it).
pub(crate) fn is_tombstone(record: &[u8]) -> bool {
    record.get(1).is_some_and(|f| f & TOMBSTONE != 0)
}

/// The JSON view of a record stored at `revision`.
pub(crate) fn decode(record: &[u8], revision: u64) -> Result<Value> {
    let mut r = Reader { bytes: record };
    if r.byte()? != FORMAT {
        return Err(Error::Corrupt("unknown object record format".into()));
    }
    let _flags = r.byte()?;
    let body = r.bytes()?;
    let mut object: Value = serde_json::from_slice(body).map_err(|e| Error::Corrupt(format!("object body: {e}")))?;
    let n = r.uvarint()?;
    let mut entries = Vec::new();
    for _ in 0..n {
        let manager = r.string()?;
        let operation = match r.byte()? {
            0 => Operation::Apply,
            1 => Operation::Update,
            t => return Err(Error::Corrupt(format!("unknown operation {t}"))),
        };
        let api_version = r.string()?;
        let time = r.string()?;
        let subresource = r.string()?;
        let set = fields_binary::decode(r.bytes()?)?;
        let raw = serde_json::value::RawValue::from_string(fields_v1::to_json_string(&set)).map_err(|e| Error::Corrupt(e.to_string()))?;
        entries.push(ManagedFieldsEntry {
            manager,
            operation,
            api_version,
            time: (!time.is_empty()).then_some(time),
            fields_type: FIELDS_TYPE_V1.to_string(),
            fields_v1: Some(raw),
            subresource,
        });
    }
    if !r.bytes.is_empty() {
        return Err(Error::Corrupt("trailing bytes in object record".into()));
    }
    let Value::Object(root) = &mut object else {
        return Err(Error::Corrupt("object body is not a JSON object".into()));
    };
    let meta = root.entry("metadata").or_insert_with(|| Value::Object(serde_json::Map::new()));
    if let Value::Object(meta) = meta {
        meta.insert("resourceVersion".into(), Value::String(revision.to_string()));
        if !entries.is_empty() {
            let list: Value = serde_json::from_slice(&managed_fields::encode_entries(&entries)).map_err(|e| Error::Corrupt(e.to_string()))?;
            meta.insert("managedFields".into(), list);
        }
    }
    Ok(object)
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn record_round_trips_with_managed_fields() {
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "resourceVersion": "3",
            "managedFields": [{"manager": "m", "operation": "Apply", "apiVersion": "v1", "time": "2024-01-02T03:04:05Z",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}}]}, "data": {"a": "1"}});
        let (rec, entries) = encode_with_entries(&mut obj.clone(), false).unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!(entry_fields(&rec).unwrap(), entries);
        assert!(!is_tombstone(&rec));
        let mut back = decode(&rec, 9).unwrap();
        assert_eq!(back["metadata"]["resourceVersion"], "9");
        back["metadata"]["resourceVersion"] = json!("3");
        assert_eq!(back, obj);
        assert!(is_tombstone(&encode_with_entries(&mut obj.clone(), true).unwrap().0));
    }
}
