//! JSON patch (RFC 6902), applied with the `json-patch` crate.
//!
//! The operations are checked here first, so a malformed one is reported with its index and
//! field; the crate then applies them to a copy of the document, and its failures are classified
//! by walking the failing pointer over the document as it was when the operation ran: a missing
//! member, an index past the end, a malformed index.
//!
//! One departure from RFC 6902, as kube-apiserver's JSON patch (evanphx/json-patch) departs: a
//! `test` for `null` (or without a `value`) passes when the member it names is missing from an
//! object that exists — kube-rs's finalizer helper sends `test /metadata/finalizers null` before
//! its first `add` (`engine/DIFFERENCES.md`).

use super::PatchErrorKind as K;
use crate::{Error, Result};
use serde_json::Value;

/// Applies the JSON patch `patch` (a list of operations) to `original`.
///
/// # Examples
/// ```
/// # use fieldstore_engine::patch::{json_patch, PatchErrorKind};
/// # use fieldstore_engine::Error;
/// # use serde_json::json;
/// let live = json!({"spec": {"replicas": 1, "ports": [80]}});
/// let out = json_patch(&live, &json!([
///     {"op": "test", "path": "/spec/replicas", "value": 1},
///     {"op": "replace", "path": "/spec/replicas", "value": 3},
///     {"op": "add", "path": "/spec/ports/-", "value": 443},
/// ]))?;
/// assert_eq!(out, json!({"spec": {"replicas": 3, "ports": [80, 443]}}));
///
/// let err = json_patch(&live, &json!([{"op": "remove", "path": "/spec/ports/5"}]));
/// assert!(matches!(err, Err(Error::Patch { kind: PatchErrorKind::IndexOutOfRange, .. })));
/// # Ok::<(), fieldstore_engine::Error>(())
/// ```
///
/// # Errors
/// [`Error::Patch`] with the JSON pointer at fault: [`K::InvalidPatch`] for a malformed operation,
/// [`K::InvalidPointer`] for a malformed pointer or array index, [`K::TestFailed`],
/// [`K::PathNotFound`], [`K::IndexOutOfRange`]. `original` is never modified.
pub fn json_patch(original: &Value, patch: &Value) -> Result<Value> {
    json_patch_limited(original, patch, usize::MAX)
}

/// The most operations a JSON patch may have, as kube-apiserver allows.
pub const MAX_OPERATIONS: usize = 10_000;

/// [`json_patch()`] with the document it makes bounded: the operations that add to it (`add`,
/// `replace`, and `copy`, which can double it each time) are counted against `max_bytes` of
/// JSON *before* they run, so an oversized document is never built.
///
/// # Errors
/// Those of [`json_patch()`]; [`K::TooLarge`] when the document would grow past `max_bytes`
/// or the patch has more than [`MAX_OPERATIONS`] operations.
pub fn json_patch_limited(original: &Value, patch: &Value, max_bytes: usize) -> Result<Value> {
    let ops = parse(patch)?;
    let mut doc = original.clone();
    let bounded = max_bytes != usize::MAX;
    let mut size = if bounded { json_size(&doc) } else { 0 };
    for (i, op) in ops.iter().enumerate() {
        if bounded {
            use json_patch::PatchOperation as Op;
            let grows = match op {
                Op::Add(a) => json_size(&a.value),
                Op::Replace(r) => json_size(&r.value),
                Op::Copy(c) => doc.pointer(c.from.as_str()).map_or(0, json_size),
                _ => 0,
            };
            size = size.saturating_add(grows);
            if size > max_bytes {
                return Err(invalid(
                    K::TooLarge,
                    format!("/{i}"),
                    format!("operation {i} would make the document larger than the limit of {max_bytes} bytes"),
                ));
            }
        }
        if let json_patch::PatchOperation::Test(t) = op {
            if t.value.is_null() && names_missing_member(&doc, t.path.as_str()) {
                continue;
            }
        }
        // One operation at a time: on failure `doc` is the document that operation saw.
        json_patch::patch_unsafe(&mut doc, std::slice::from_ref(op)).map_err(|e| classify(&doc, &ops, i, &e))?;
    }
    Ok(doc)
}

/// Whether `pointer` names a member missing from an object that exists in `doc` (what a `test`
/// for `null` accepts, as kube-apiserver does).
fn names_missing_member(doc: &Value, pointer: &str) -> bool {
    let Some((parent, last)) = pointer.rsplit_once('/') else { return false };
    let last = last.replace("~1", "/").replace("~0", "~");
    matches!(doc.pointer(parent), Some(Value::Object(m)) if !m.contains_key(&last))
}

/// About the size of `v` written as compact JSON: a bound that costs one walk, no writing.
fn json_size(v: &Value) -> usize {
    let mut total = 0usize;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        total = total.saturating_add(match v {
            Value::Null | Value::Bool(_) => 5,
            Value::Number(_) => 8,
            Value::String(s) => s.len() + 2,
            Value::Array(a) => {
                stack.extend(a.iter());
                a.len() + 2
            }
            Value::Object(m) => {
                stack.extend(m.values());
                m.keys().map(|k| k.len() + 4).sum::<usize>() + 2
            }
        });
    }
    total
}

/// [`json_patch()`] on a document in place; on error the document is unchanged.
///
/// # Errors
/// As [`json_patch()`].
pub fn json_patch_in_place(doc: &mut Value, patch: &Value) -> Result<()> {
    *doc = json_patch(doc, patch)?;
    Ok(())
}

fn invalid(kind: K, path: impl Into<String>, message: impl Into<String>) -> Error {
    Error::Patch { kind, path: path.into(), message: message.into() }
}

/// Checks every operation's shape and converts it.
fn parse(patch: &Value) -> Result<Vec<json_patch::PatchOperation>> {
    let Value::Array(ops) = patch else {
        return Err(invalid(K::InvalidPatch, "", "a JSON patch must be a list of operations"));
    };
    if ops.len() > MAX_OPERATIONS {
        return Err(invalid(
            K::TooLarge,
            "",
            format!("The allowed maximum operations in a JSON patch is {MAX_OPERATIONS}, got {}", ops.len()),
        ));
    }
    let mut out = Vec::with_capacity(ops.len());
    for (i, op) in ops.iter().enumerate() {
        let Value::Object(m) = op else {
            return Err(invalid(K::InvalidPatch, format!("/{i}"), "an operation must be an object"));
        };
        let name = match m.get("op") {
            Some(Value::String(s)) => s.as_str(),
            Some(_) => return Err(invalid(K::InvalidPatch, format!("/{i}/op"), "op must be a string")),
            None => return Err(invalid(K::InvalidPatch, format!("/{i}"), "operation has no op")),
        };
        let (needs_from, needs_value) = match name {
            "add" | "replace" | "test" => (false, true),
            "remove" => (false, false),
            "move" | "copy" => (true, false),
            _ => return Err(invalid(K::InvalidPatch, format!("/{i}/op"), format!("unknown operation {name:?}"))),
        };
        pointer_field(m, "path", i)?;
        if needs_from {
            pointer_field(m, "from", i)?;
        }
        let mut op = op.clone();
        if needs_value && !m.contains_key("value") {
            if name != "test" {
                return Err(invalid(K::InvalidPatch, format!("/{i}"), format!("{name} operation has no value")));
            }
            // kube-apiserver's JSON patch tests a missing value as `null`.
            op["value"] = Value::Null;
        }
        let parsed = serde_json::from_value(op)
            .map_err(|e| invalid(K::InvalidPatch, format!("/{i}"), format!("malformed {name} operation: {e}")))?;
        out.push(parsed);
    }
    Ok(out)
}

/// Checks that `m[field]` is a JSON pointer: empty, or `/`-separated tokens with only `~0` and
/// `~1` escapes.
fn pointer_field(m: &serde_json::Map<String, Value>, field: &str, i: usize) -> Result<()> {
    let p = match m.get(field) {
        Some(Value::String(p)) => p,
        Some(_) => return Err(invalid(K::InvalidPatch, format!("/{i}/{field}"), format!("{field} must be a string"))),
        None => return Err(invalid(K::InvalidPatch, format!("/{i}"), format!("operation has no {field}"))),
    };
    if !p.is_empty() && !p.starts_with('/') {
        return Err(invalid(K::InvalidPointer, p.as_str(), "a JSON pointer must be empty or start with /"));
    }
    let mut chars = p.chars();
    while let Some(c) = chars.next() {
        if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
            return Err(invalid(K::InvalidPointer, p.as_str(), "~ must be followed by 0 or 1 in a JSON pointer"));
        }
    }
    Ok(())
}

/// Turns a failure of the crate into a typed error, looking at the pointer of the failing
/// operation in `doc` (the document as the operation saw it).
fn classify(doc: &Value, ops: &[json_patch::PatchOperation], index: usize, e: &json_patch::PatchError) -> Error {
    use json_patch::{PatchErrorKind as E, PatchOperation as Op};
    let op = ops.get(index);
    let name = match op {
        Some(Op::Add(_)) => "add",
        Some(Op::Remove(_)) => "remove",
        Some(Op::Replace(_)) => "replace",
        Some(Op::Move(_)) => "move",
        Some(Op::Copy(_)) => "copy",
        Some(Op::Test(_)) => "test",
        None => "operation",
    };
    let context = format!("operation {index} ({name})");
    match e.kind {
        E::TestFailed => invalid(K::TestFailed, e.path.as_str(), format!("{context}: the value differs")),
        E::CannotMoveInsideItself => invalid(K::InvalidPatch, e.path.as_str(), format!("{context}: cannot move a value inside itself")),
        E::InvalidFromPointer => {
            let from = match op {
                Some(Op::Move(m)) => m.from.as_str(),
                Some(Op::Copy(c)) => c.from.as_str(),
                _ => e.path.as_str(),
            };
            let (kind, why) = diagnose(doc, from, false);
            invalid(kind, from, format!("{context}: from: {why}"))
        }
        _ => {
            // `add`, and the target of `move` and `copy`, may name the member to create or the
            // position after the last item.
            let creates = matches!(op, Some(Op::Add(_) | Op::Move(_) | Op::Copy(_)));
            let (kind, why) = diagnose(doc, e.path.as_str(), creates);
            invalid(kind, e.path.as_str(), format!("{context}: {why}"))
        }
    }
}

/// Why `pointer` does not resolve in `doc`.
fn diagnose(doc: &Value, pointer: &str, creates: bool) -> (K, String) {
    if pointer.is_empty() {
        return (K::InvalidPointer, "the operation cannot apply to the whole document".into());
    }
    let tokens: Vec<String> = pointer.split('/').skip(1).map(|t| t.replace("~1", "/").replace("~0", "~")).collect();
    let mut cur = doc;
    for (i, tok) in tokens.iter().enumerate() {
        let last = i + 1 == tokens.len();
        match cur {
            Value::Object(m) => match m.get(tok) {
                Some(v) => cur = v,
                None if last && creates => break,
                None => return (K::PathNotFound, format!("no member {tok:?}")),
            },
            Value::Array(a) => {
                if tok == "-" {
                    if last && creates {
                        break;
                    }
                    return (K::IndexOutOfRange, format!("index - is past the end of a list of {} items", a.len()));
                }
                let well_formed = !tok.is_empty() && tok.bytes().all(|b| b.is_ascii_digit()) && (tok == "0" || !tok.starts_with('0'));
                let Some(index) = tok.parse::<usize>().ok().filter(|_| well_formed) else {
                    return (K::InvalidPointer, format!("{tok:?} is not an array index"));
                };
                let limit = if last && creates { a.len() + 1 } else { a.len() };
                match a.get(index) {
                    _ if index >= limit => {
                        return (K::IndexOutOfRange, format!("index {index} is past the end of a list of {} items", a.len()));
                    }
                    Some(v) => cur = v,
                    None => break,
                }
            }
            _ => return (K::PathNotFound, format!("cannot look up {tok:?} in a scalar")),
        }
    }
    (K::InvalidPointer, "the path is invalid".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kind_of(r: Result<Value>) -> Option<(K, String)> {
        match r {
            Err(Error::Patch { kind, path, .. }) => Some((kind, path)),
            _ => None,
        }
    }

    #[test]
    fn failures_are_typed() {
        let doc = json!({"a": [1, 2], "b": {"c": 1}});
        let cases = [
            (json!([{"op": "test", "path": "/b/c", "value": 2}]), K::TestFailed, "/b/c"),
            (json!([{"op": "remove", "path": "/a/2"}]), K::IndexOutOfRange, "/a/2"),
            (json!([{"op": "add", "path": "/a/3", "value": 0}]), K::IndexOutOfRange, "/a/3"),
            (json!([{"op": "replace", "path": "/a/01", "value": 0}]), K::InvalidPointer, "/a/01"),
            (json!([{"op": "remove", "path": "/x/y"}]), K::PathNotFound, "/x/y"),
            (json!([{"op": "remove", "path": "a"}]), K::InvalidPointer, "a"),
            (json!([{"op": "move", "from": "/nope", "path": "/b/d"}]), K::PathNotFound, "/nope"),
            (json!([{"op": "frob", "path": "/a"}]), K::InvalidPatch, "/0/op"),
            (json!([{"op": "add", "path": "/a"}]), K::InvalidPatch, "/0"),
            (json!({"op": "add"}), K::InvalidPatch, ""),
        ];
        for (patch, kind, path) in cases {
            assert_eq!(kind_of(json_patch(&doc, &patch)), Some((kind, path.to_string())), "{patch}");
        }
    }

    #[test]
    fn patches_are_bounded_in_operations_and_in_what_they_make() {
        let doc = json!({"data": {"k": "x".repeat(1000)}});
        let ops: Vec<Value> = (0..18).map(|i| json!({"op": "copy", "from": "/data", "path": format!("/data/c{i}")})).collect();
        let bomb = Value::Array(ops);
        let e = json_patch_limited(&doc, &bomb, 3 << 20).unwrap_err();
        assert!(matches!(&e, Error::Patch { kind: K::TooLarge, .. }), "{e}");
        assert_eq!(e.reason(), crate::Reason::RequestEntityTooLarge);
        // Eleven doublings fit in 3 MiB, and the bound counts at most twice the real size.
        let fits = Value::Array(bomb.as_array().unwrap()[..11].to_vec());
        let out = json_patch_limited(&doc, &fits, 3 << 20).unwrap();
        assert!(serde_json::to_vec(&out).unwrap().len() <= 3 << 20);
        let many = Value::Array(vec![json!({"op": "test", "path": "/data/k", "value": "x".repeat(1000)}); MAX_OPERATIONS + 1]);
        assert!(matches!(json_patch(&doc, &many), Err(Error::Patch { kind: K::TooLarge, .. })));
        let ok = Value::Array(vec![json!({"op": "test", "path": "/data/k", "value": "x".repeat(1000)}); MAX_OPERATIONS]);
        assert!(json_patch(&doc, &ok).is_ok());
        let added = json!([{"op": "add", "path": "/big", "value": "y".repeat(5000)}]);
        assert!(matches!(json_patch_limited(&doc, &added, 4096), Err(Error::Patch { kind: K::TooLarge, .. })));
    }

    #[test]
    fn a_test_for_null_passes_on_a_missing_member_as_kube_apiserver_does() {
        let doc = json!({"metadata": {"name": "x"}, "list": [1]});
        // kube-rs's finalizer helper: test that there are no finalizers, then add the first.
        let patch = json!([
            {"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "add", "path": "/metadata/finalizers", "value": ["f"]},
        ]);
        assert_eq!(json_patch(&doc, &patch).unwrap()["metadata"]["finalizers"], json!(["f"]));
        // Without a value, the test is for null too.
        assert!(json_patch(&doc, &json!([{"op": "test", "path": "/metadata/x"}])).is_ok());
        // A present value is compared; a missing parent, or an index, still fails.
        let cases = [
            (json!([{"op": "test", "path": "/metadata/name", "value": null}]), K::TestFailed, "/metadata/name"),
            (json!([{"op": "test", "path": "/metadata/name"}]), K::TestFailed, "/metadata/name"),
            (json!([{"op": "test", "path": "/nope/x", "value": null}]), K::PathNotFound, "/nope/x"),
            (json!([{"op": "test", "path": "/list/3", "value": null}]), K::IndexOutOfRange, "/list/3"),
            (json!([{"op": "test", "path": "/metadata/finalizers", "value": []}]), K::PathNotFound, "/metadata/finalizers"),
        ];
        for (patch, kind, path) in cases {
            assert_eq!(kind_of(json_patch(&doc, &patch)), Some((kind, path.to_string())), "{patch}");
        }
    }

    #[test]
    fn failure_leaves_the_document_untouched() {
        let mut doc = json!({"a": [1, 2]});
        let before = doc.clone();
        let patch = json!([{"op": "add", "path": "/a/-", "value": 3}, {"op": "test", "path": "/a/0", "value": 9}]);
        assert!(json_patch_in_place(&mut doc, &patch).is_err());
        assert_eq!(doc, before);
    }
}
