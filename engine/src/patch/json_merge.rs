//! JSON merge patch (RFC 7386, also RFC 7396), applied with the `json-patch` crate's `merge`,
//! and computed the way Kubernetes computes it (`jsonmergepatch.CreateThreeWayJSONMergePatch`
//! over evanphx/json-patch's `CreateMergePatch`).

use super::{at_error, At, PatchErrorKind as K};
use crate::Result;
use serde_json::{Map, Value};

/// Applies the JSON merge patch `patch` to `original` (RFC 7386): objects merge recursively,
/// `null` deletes a member, anything else (arrays included) replaces. Any JSON value is a valid
/// merge patch, so this cannot fail.
///
/// # Examples
/// ```
/// # use fieldstore_engine::patch::merge_patch;
/// # use serde_json::json;
/// let out = merge_patch(&json!({"a": "b", "c": {"d": "e", "f": "g"}}), &json!({"a": "z", "c": {"f": null}}));
/// assert_eq!(out, json!({"a": "z", "c": {"d": "e"}}));
/// ```
pub fn merge_patch(original: &Value, patch: &Value) -> Value {
    let mut doc = original.clone();
    merge_patch_in_place(&mut doc, patch);
    doc
}

/// [`merge_patch`] on a document in place.
pub fn merge_patch_in_place(doc: &mut Value, patch: &Value) {
    json_patch::merge(doc, patch);
}

/// The JSON merge patch from `original` to `modified` (evanphx/json-patch `CreateMergePatch`):
/// changed and added members, `null` for removed ones; arrays and values of a changed kind are
/// sent whole. When either document is not an object the patch is `modified` itself.
///
/// # Examples
/// ```
/// # use fieldstore_engine::patch::{create_merge_patch, merge_patch};
/// # use serde_json::json;
/// let (a, b) = (json!({"x": 1, "y": [1, 2]}), json!({"y": [2], "z": true}));
/// let patch = create_merge_patch(&a, &b);
/// assert_eq!(patch, json!({"x": null, "y": [2], "z": true}));
/// assert_eq!(merge_patch(&a, &patch), b);
/// ```
pub fn create_merge_patch(original: &Value, modified: &Value) -> Value {
    match (original, modified) {
        (Value::Object(o), Value::Object(m)) => Value::Object(diff(o, m)),
        _ => modified.clone(),
    }
}

fn diff(original: &Map<String, Value>, modified: &Map<String, Value>) -> Map<String, Value> {
    let mut patch = Map::new();
    for (key, m) in modified {
        match (original.get(key), m) {
            (Some(Value::Object(o)), Value::Object(m)) => {
                let d = diff(o, m);
                if !d.is_empty() {
                    patch.insert(key.clone(), Value::Object(d));
                }
            }
            (Some(o), m) if o == m => {}
            _ => {
                patch.insert(key.clone(), m.clone());
            }
        }
    }
    for key in original.keys() {
        if !modified.contains_key(key) {
            patch.insert(key.clone(), Value::Null);
        }
    }
    patch
}

/// Kubernetes' three-way JSON merge patch (`CreateThreeWayJSONMergePatch`, used by kubectl
/// apply for types without a strategic schema): the additions and changes from `current` to
/// `modified`, plus the deletions from `original` to `modified`.
///
/// # Examples
/// ```
/// # use fieldstore_engine::patch::create_three_way_merge_patch;
/// # use serde_json::json;
/// let last = json!({"a": 1, "b": 2});
/// let live = json!({"a": 1, "b": 2, "status": "x"});
/// let new = json!({"a": 3});
/// assert_eq!(create_three_way_merge_patch(&last, &new, &live)?, json!({"a": 3, "b": null}));
/// # Ok::<(), fieldstore_engine::Error>(())
/// ```
///
/// # Errors
/// [`crate::Error::Patch`] of kind [`K::InvalidJson`] when a document is not an object (`null`
/// counts as `{}`); [`K::Conflict`] when the additions and the deletions disagree on a member.
pub fn create_three_way_merge_patch(original: &Value, modified: &Value, current: &Value) -> Result<Value> {
    let doc = |v: &Value, what: &str| -> Result<Map<String, Value>> {
        match v {
            Value::Object(m) => Ok(m.clone()),
            Value::Null => Ok(Map::new()),
            _ => Err(at_error(K::InvalidJson, At::ROOT, format!("the {what} document must be a JSON object"))),
        }
    };
    let (original, modified, current) = (doc(original, "original")?, doc(modified, "modified")?, doc(current, "current")?);
    let add_and_change = keep_or_delete_null(&diff(&current, &modified), false);
    let deletions = keep_or_delete_null(&diff(&original, &modified), true);
    let (add_and_change, deletions) = (Value::Object(add_and_change), Value::Object(deletions));
    if has_conflicts(&add_and_change, &deletions) {
        return Err(at_error(K::Conflict, At::ROOT, "the additions and the deletions of the patch disagree"));
    }
    let mut patch = deletions;
    json_patch::merge(&mut patch, &add_and_change);
    Ok(patch)
}

/// Keeps only the `null`s of a patch (`keep_null`), or everything but them
/// (`keepOrDeleteNullInObj`); empty objects count as values, not as empty patches.
fn keep_or_delete_null(m: &Map<String, Value>, keep_null: bool) -> Map<String, Value> {
    let mut out = Map::new();
    for (key, v) in m {
        match v {
            Value::Null if keep_null => {
                out.insert(key.clone(), Value::Null);
            }
            Value::Null => {}
            Value::Object(sub) if sub.is_empty() => {
                if !keep_null {
                    out.insert(key.clone(), v.clone());
                }
            }
            Value::Object(sub) => {
                let filtered = keep_or_delete_null(sub, keep_null);
                if !filtered.is_empty() {
                    out.insert(key.clone(), Value::Object(filtered));
                }
            }
            _ => {
                if !keep_null {
                    out.insert(key.clone(), v.clone());
                }
            }
        }
    }
    out
}

/// Whether two patches set a member differently (`mergepatch.HasConflicts`).
fn has_conflicts(left: &Value, right: &Value) -> bool {
    match (left, right) {
        (Value::Object(l), Value::Object(r)) => l.iter().any(|(k, lv)| r.get(k).is_some_and(|rv| has_conflicts(lv, rv))),
        (Value::Object(_), _) => true,
        (Value::Array(l), Value::Array(r)) => l.len() != r.len() || l.iter().zip(r).any(|(a, b)| has_conflicts(a, b)),
        (Value::Array(_), _) => true,
        (l, r) => l != r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn int64_max_survives() {
        let max = json!({"n": i64::MAX, "u": u64::MAX});
        let out = merge_patch(&json!({"n": 1}), &max);
        assert_eq!(out["n"].as_i64(), Some(i64::MAX));
        assert_eq!(out["u"].as_u64(), Some(u64::MAX));
        assert_eq!(out.to_string(), r#"{"n":9223372036854775807,"u":18446744073709551615}"#);
    }

    #[test]
    fn three_way_keeps_live_only_fields() {
        let p =
            create_three_way_merge_patch(&json!({"a": {"b": 1, "c": 2}}), &json!({"a": {"b": 1}}), &json!({"a": {"b": 5, "c": 2, "d": 1}}));
        assert_eq!(p.ok(), Some(json!({"a": {"b": 1, "c": null}})));
    }
}
