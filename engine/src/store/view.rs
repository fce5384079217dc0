//! The JSON view of an object record written straight as text: the stored body is already the
//! object's compact JSON with sorted keys, so the view is that text with `resourceVersion` and
//! `managedFields` spliced into `metadata` where a sorted map puts them. Lists serve pages this
//! way without parsing every body into a value and serialising it again.
//!
//! The bytes equal `serde_json::to_vec` of [`object::decode`]'s value; a body the splice cannot
//! place with certainty (no `metadata` object, escaped keys, unexpected spacing) takes that path.

use super::object;
use crate::{Error, Result};

/// Appends to `out` the JSON view of `record` stored at `revision`.
pub(crate) fn write_json(record: &[u8], revision: u64, out: &mut Vec<u8>) -> Result<()> {
    let parts = object::parts(record)?;
    if let Some(meta) = metadata_object(parts.body).filter(|_| !parts.protobuf) {
        let (mf_at, rv_at) = (meta.insert_point(b"managedFields"), meta.insert_point(b"resourceVersion"));
        let mut ins = Inserter { body: parts.body, meta: &meta, copied: 0, inserted: false };
        if parts.has_managed_fields()? {
            ins.insert(out, mf_at, b"managedFields", |o| parts.write_managed_fields(o))?;
        }
        ins.insert(out, rv_at, b"resourceVersion", |o| {
            o.push(b'"');
            o.extend_from_slice(revision.to_string().as_bytes());
            o.push(b'"');
            Ok(())
        })?;
        out.extend_from_slice(parts.body.get(ins.copied..).unwrap_or_default());
        return Ok(());
    }
    let view = object::decode(record, revision)?;
    serde_json::to_writer(out, &view).map_err(|e| Error::Corrupt(format!("object view: {e}")))
}

/// Where the `metadata` object of a body lies: its keys (offset of each key's opening quote and
/// the key) and the offset of its closing brace.
struct Meta<'a> {
    keys: Vec<(usize, &'a [u8])>,
    close: usize,
}

/// The keys of the body's top-level `metadata` object, when the body is compact JSON whose
/// metadata keys are plain (no escapes) and hold neither `resourceVersion` nor `managedFields`.
fn metadata_object(body: &[u8]) -> Option<Meta<'_>> {
    let mut i = expect(body, 0, b'{')?;
    if body.get(i) == Some(&b'}') {
        return None;
    }
    loop {
        let (key, after) = key(body, i)?;
        let v = expect(body, after, b':')?;
        if key == b"metadata" {
            return object_keys(body, v).filter(|m| m.keys.iter().all(|(_, k)| *k != b"resourceVersion" && *k != b"managedFields"));
        }
        i = skip_value(body, v)?;
        match body.get(i)? {
            b',' => i += 1,
            _ => return None,
        }
    }
}

/// The keys of the object starting at `at`.
fn object_keys(body: &[u8], at: usize) -> Option<Meta<'_>> {
    let mut i = expect(body, at, b'{')?;
    let mut keys = Vec::new();
    if body.get(i) == Some(&b'}') {
        return Some(Meta { keys, close: i });
    }
    loop {
        let (k, after) = key(body, i)?;
        keys.push((i, k));
        i = skip_value(body, expect(body, after, b':')?)?;
        match body.get(i)? {
            b',' => i += 1,
            b'}' => return Some(Meta { keys, close: i }),
            _ => return None,
        }
    }
}

impl Meta<'_> {
    /// Where a member named `name` goes: before the first key sorting after it, or at the
    /// closing brace.
    fn insert_point(&self, name: &[u8]) -> usize {
        self.keys.iter().find(|(_, k)| *k > name).map_or(self.close, |(p, _)| *p)
    }
}

/// Copies the body to `out` in order, inserting members at offsets of the metadata object.
struct Inserter<'a, 'm> {
    body: &'a [u8],
    meta: &'m Meta<'a>,
    /// How much of the body is copied.
    copied: usize,
    /// Whether a member was inserted at the closing brace already.
    inserted: bool,
}

impl Inserter<'_, '_> {
    fn insert(&mut self, out: &mut Vec<u8>, at: usize, name: &[u8], value: impl FnOnce(&mut Vec<u8>) -> Result<()>) -> Result<()> {
        out.extend_from_slice(self.body.get(self.copied..at).unwrap_or_default());
        self.copied = at;
        let at_close = at == self.meta.close;
        if at_close && (!self.meta.keys.is_empty() || self.inserted) {
            out.push(b',');
        }
        out.push(b'"');
        out.extend_from_slice(name);
        out.extend_from_slice(b"\":");
        value(out)?;
        if at_close {
            self.inserted = true;
        } else {
            out.push(b',');
        }
        Ok(())
    }
}

/// The offset after byte `b` at `i`.
fn expect(body: &[u8], i: usize, b: u8) -> Option<usize> {
    (body.get(i) == Some(&b)).then_some(i + 1)
}

/// A key without escapes at `i`, and the offset after its closing quote.
fn key(body: &[u8], i: usize) -> Option<(&[u8], usize)> {
    let start = expect(body, i, b'"')?;
    let len = body.get(start..)?.iter().position(|&c| c == b'"' || c == b'\\')?;
    let end = start + len;
    (body.get(end) == Some(&b'"')).then(|| (body.get(start..end).unwrap_or_default(), end + 1))
}

/// The offset after the compact JSON value starting at `i`.
fn skip_value(body: &[u8], i: usize) -> Option<usize> {
    match body.get(i)? {
        b'"' => skip_string(body, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match body.get(j)? {
                    b'"' => {
                        j = skip_string(body, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        _ => {
            let len = body.get(i..)?.iter().position(|&c| matches!(c, b',' | b'}' | b']'))?;
            (len > 0).then_some(i + len)
        }
    }
}

/// The offset after the string starting at `i`.
fn skip_string(body: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        j += memchr::memchr2(b'"', b'\\', body.get(j..)?)?;
        match body.get(j)? {
            b'"' => return Some(j + 1),
            _ => j += 2,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn record(obj: &Value) -> Vec<u8> {
        object::encode_with_entries(&mut obj.clone(), false, None, object::BodyEncoding::Json).expect("encode").record
    }

    /// Checks the text view against the decoded one, and whether the splice served it.
    fn check(obj: &Value, spliced: bool) {
        let rec = record(obj);
        assert_eq!(metadata_object(object::parts(&rec).expect("parts").body).is_some(), spliced, "{obj}");
        let mut text = Vec::new();
        write_json(&rec, 42, &mut text).expect("view");
        let want = serde_json::to_vec(&object::decode(&rec, 42).expect("decode")).expect("json");
        assert_eq!(String::from_utf8_lossy(&text), String::from_utf8_lossy(&want), "{obj}");
    }

    #[test]
    fn the_text_view_is_the_bytes_of_the_decoded_view() {
        let mf = json!([{"manager": "m", "operation": "Apply", "apiVersion": "v1", "time": "2024-01-02T03:04:05Z",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}, "f:b\"}": {}}, "f:spec": {"k:{\"name\":\"x\"}": {".": {}}}}},
            {"manager": "u", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {}}}, "subresource": "status"}]);
        let tricky = json!({"s": "}{][\",\\\\\"", "u": "é\u{1}\n", "n": [1, -2.5e-7, 18446744073709551615u64, true, null, {}, []]});
        let cases = [
            (
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "n", "uid": "u", "managedFields": mf}, "data": tricky}),
                true,
            ),
            (json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "uid": "u"}, "data": tricky}), true),
            (json!({"metadata": {}, "zz": 1}), true),
            (json!({"metadata": {"managedFields": mf}}), true),
            (json!({"metadata": {"zzz": 1, "managedFields": mf}}), true),
            (json!({"metadata": {"aaa": {"managedFields": 1}, "o": 2, "managedFields": mf}}), true),
            // The stored body never holds resourceVersion (the revision is in the key).
            (json!({"metadata": {"name": "a", "resourceVersion": "7"}, "a": {"metadata": {}}}), true),
            (json!({"a": {"metadata": {"x": 1}}, "metadata": {"na\"me": "a", "x\\y": 1}}), false),
            (json!({"kind": "NoMetadata"}), false),
            (json!({}), false),
            (json!({"metadata": "not an object"}), false),
            (json!({"metadata": {"labels": {"a": "b"}, "annotations": {"x": "}"}, "managedFields": mf, "generation": 3}}), true),
        ];
        for (c, spliced) in &cases {
            check(c, *spliced);
        }
    }

    #[test]
    fn a_damaged_record_is_an_error_not_a_panic() {
        let rec = record(&json!({"metadata": {"name": "a"}, "data": {"k": "v"}}));
        for cut in 0..rec.len() {
            let _ = write_json(&rec[..cut], 1, &mut Vec::new());
        }
        let mut bad = rec.clone();
        for i in 2..bad.len() {
            bad[i] ^= 0x5a;
            let _ = write_json(&bad, 1, &mut Vec::new());
            bad[i] ^= 0x5a;
        }
        assert!(write_json(&rec[..rec.len() / 2], 1, &mut Vec::new()).is_err());
    }
}
