//! Applying a strategic merge patch: apimachinery's `mergeMap` / `mergeSlice` with every
//! directive, on owned `serde_json` values.
//!
//! The same merge also combines two patches into one (three-way patch creation), with
//! [`COMBINE`] options: directives are then carried into the result instead of being executed.
//!
//! Lists ([`lists`]) are merged in O(n): items are indexed by merge key (or by value for scalar
//! sets) in hash maps, and the result order — `$setElementOrder` first, then the patch's order,
//! then the live list's order — comes from ranks computed once per item and a linear merge.

use super::meta::{FieldMeta, Strategy, Ty};
use super::{at_error, At, PatchErrorKind as K, PatchMeta};
use crate::Result;
use serde_json::{Map, Value};
use std::collections::{HashMap as StdHashMap, HashSet as StdHashSet};

mod element_order;
mod go_sort;
mod lists;
use element_order::merge_set_element_order;
use go_sort::{sort_by_rank, Ranked};
use lists::merge_slice;

// Keys are hashed once per list item: a fast hasher matters on large lists.
type HashMap<K, V> = StdHashMap<K, V, ahash::RandomState>;
type HashSet<K> = StdHashSet<K, ahash::RandomState>;

fn map_with<K, V>(capacity: usize) -> HashMap<K, V> {
    HashMap::with_capacity_and_hasher(capacity, ahash::RandomState::new())
}

/// The `$patch` directive key and its values.
pub(crate) const DIRECTIVE: &str = "$patch";
pub(crate) const DELETE: &str = "delete";
pub(crate) const REPLACE: &str = "replace";
pub(crate) const MERGE: &str = "merge";
/// The `$retainKeys` directive key.
pub(crate) const RETAIN_KEYS: &str = "$retainKeys";
/// The prefixes of the parallel-list directives, followed by `/<field>`.
pub(crate) const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";
pub(crate) const SET_ELEMENT_ORDER: &str = "$setElementOrder";

pub(crate) type Object = Map<String, Value>;

/// How a merge treats directives and nulls (apimachinery's `MergeOptions`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct MergeMode {
    /// Execute the parallel lists (`$deleteFromPrimitiveList`) and `$retainKeys`; when false
    /// they are copied into the result (merging two patches).
    pub merge_parallel_list: bool,
    /// Drop `null`s that delete nothing; when false they are kept (merging two patches).
    pub ignore_unmatched_nulls: bool,
}

/// Applying a patch to an object.
pub(crate) const APPLY: MergeMode = MergeMode { merge_parallel_list: true, ignore_unmatched_nulls: true };
/// Merging a patch into another patch.
pub(crate) const COMBINE: MergeMode = MergeMode { merge_parallel_list: false, ignore_unmatched_nulls: false };

/// Applies the strategic merge patch `patch` to `original`, using the patch metadata of `meta`.
///
/// Maps merge key by key and `null` deletes a key; lists with the `merge` strategy (or
/// `x-kubernetes-list-type: map`) merge by merge key, merging scalar lists are sets, other lists
/// are replaced. Directives: `$patch: replace | delete` on a map and as a list item (`delete`
/// removes every item with that merge key), `$deleteFromPrimitiveList/<field>`,
/// `$setElementOrder/<field>`, `$retainKeys`. A `null` document counts as `{}`.
///
/// # Examples
/// ```
/// # use fieldstore_engine::patch::{strategic_merge, PatchMeta};
/// # use serde_json::json;
/// let live = json!({"labels": {"a": "1", "b": "2"}});
/// let out = strategic_merge(&live, &json!({"labels": {"a": null, "c": "3"}}), &PatchMeta::untyped())?;
/// assert_eq!(out, json!({"labels": {"b": "2", "c": "3"}}));
/// # Ok::<(), fieldstore_engine::Error>(())
/// ```
///
/// # Errors
/// [`crate::Error::Patch`] naming the path: [`K::InvalidJson`] when `original` is not an
/// object, [`K::InvalidPatch`] when `patch` is not, [`K::UnknownDirective`] /
/// [`K::InvalidDirective`] for bad directives, [`K::MissingMergeKey`], [`K::UnknownField`] when
/// the schema lacks a field the merge must look up, [`K::TypeMismatch`], [`K::Schema`].
/// `original` is never modified.
pub fn strategic_merge(original: &Value, patch: &Value, meta: &PatchMeta<'_>) -> Result<Value> {
    let empty = Object::new();
    let original = match original {
        Value::Object(m) => m,
        Value::Null => &empty,
        _ => return Err(at_error(K::InvalidJson, At::ROOT, "the object to patch must be a JSON object")),
    };
    let patch = match patch {
        Value::Object(m) => m,
        Value::Null => &empty,
        _ => return Err(at_error(K::InvalidPatch, At::ROOT, "a strategic merge patch must be a JSON object")),
    };
    merge_map(original, patch, meta.root(), APPLY, At::ROOT).map(Value::Object)
}

/// The JSON kind of a value as Go's decoder types it; integers (`int64`) and other numbers
/// (`float64`) are different kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum JsonKind {
    Map,
    List,
    String,
    Int,
    Float,
    Bool,
    Null,
}

pub(crate) fn kind(v: &Value) -> JsonKind {
    match v {
        Value::Object(_) => JsonKind::Map,
        Value::Array(_) => JsonKind::List,
        Value::String(_) => JsonKind::String,
        Value::Number(n) if n.is_i64() => JsonKind::Int,
        Value::Number(_) => JsonKind::Float,
        Value::Bool(_) => JsonKind::Bool,
        Value::Null => JsonKind::Null,
    }
}

/// The one kind of the elements of `lists` (`sliceElementType`).
pub(crate) fn element_kind(lists: &[&[Value]], at: At<'_>) -> Result<JsonKind> {
    let mut found: Option<JsonKind> = None;
    for v in lists.iter().flat_map(|l| l.iter()) {
        let k = kind(v);
        match found {
            None => {
                if k == JsonKind::List {
                    return Err(at_error(K::TypeMismatch, at, "lists of lists are not supported"));
                }
                if k == JsonKind::Null {
                    return Err(at_error(K::TypeMismatch, at, "list items must not be null"));
                }
                found = Some(k);
            }
            Some(prev) if prev != k => {
                return Err(at_error(K::TypeMismatch, at, "list element types are not identical"));
            }
            Some(_) => {}
        }
    }
    found.ok_or_else(|| at_error(K::TypeMismatch, at, "no elements in any of the given lists"))
}

/// Splits `$deleteFromPrimitiveList/<field>` or `$setElementOrder/<field>` into the field name.
pub(crate) fn extract_key<'k>(key: &'k str, prefix: &str, at: At<'_>) -> Result<&'k str> {
    match key.split_once('/') {
        Some((p, rest)) if p == prefix => Ok(rest),
        _ => Err(at_error(K::InvalidDirective, at, format!("invalid patch format of {prefix}: expected {prefix}/<field>"))),
    }
}

/// Merges `patch` into `original` (`mergeMap`), building a new object: members the patch does
/// not touch are copied once, the others computed from the original and the patch.
pub(crate) fn merge_map(original: &Object, patch: &Object, ty: Ty<'_>, opts: MergeMode, at: At<'_>) -> Result<Object> {
    if let Some(d) = patch.get(DIRECTIVE) {
        return match d.as_str() {
            Some(REPLACE) => {
                let mut replaced = patch.clone();
                replaced.remove(DIRECTIVE);
                Ok(replaced)
            }
            Some(DELETE) => Ok(Object::new()),
            _ => Err(at_error(K::UnknownDirective, at.field(DIRECTIVE), format!("unknown patch type {d} in map"))),
        };
    }
    let mut edit = Edit::new(original);
    apply_retain_keys(&mut edit, patch, opts, at)?;
    let ordered = merge_set_element_order(&mut edit, patch, ty, opts, at)?;

    for (k, patch_v) in patch {
        // Directives handled above, and lists `$setElementOrder` already merged.
        if k == RETAIN_KEYS || k.starts_with(SET_ELEMENT_ORDER) || ordered.contains(&k.as_str()) {
            continue;
        }
        let key_at = at.field(k);
        let (key, is_delete_list) = if k.starts_with(DELETE_FROM_PRIMITIVE_LIST) {
            if !opts.merge_parallel_list {
                edit.set(k, patch_v.clone());
                continue;
            }
            if !patch_v.is_array() {
                return Err(at_error(K::InvalidDirective, key_at, "invalid patch format of $deleteFromPrimitiveList: must be a list"));
            }
            (extract_key(k, DELETE_FROM_PRIMITIVE_LIST, key_at)?, true)
        } else {
            (k.as_str(), false)
        };
        let field_at = at.field(key);

        if patch_v.is_null() {
            edit.remove(key);
            if opts.ignore_unmatched_nulls {
                continue;
            }
        }
        let Some(current) = edit.get(key) else {
            if !is_delete_list {
                put(&mut edit, key, patch_v, opts);
            }
            continue;
        };
        if kind(current) != kind(patch_v) {
            if !is_delete_list {
                put(&mut edit, key, patch_v, opts);
            }
            continue;
        }
        let merged = merge_member(current, patch_v, ty, key, opts, is_delete_list, field_at)?;
        edit.set(key, merged);
    }
    Ok(edit.finish())
}

/// Merges the patch's value of member `key` of an object of type `ty` into its current value,
/// of the same kind: maps by [`merge_map`] and merging lists by [`merge_slice`] (a
/// `$deleteFromPrimitiveList` when `is_delete_list`), unless the schema says to replace them;
/// scalars are replaced.
fn merge_member(
    current: &Value,
    patch_v: &Value,
    ty: Ty<'_>,
    key: &str,
    opts: MergeMode,
    is_delete_list: bool,
    field_at: At<'_>,
) -> Result<Value> {
    Ok(match (current, patch_v) {
        (Value::Object(o), Value::Object(p)) => {
            let meta = ty.field(key, field_at)?;
            if meta.strategy == Strategy::Replace {
                Value::Object(p.clone())
            } else {
                Value::Object(merge_map(o, p, meta.ty, opts, field_at)?)
            }
        }
        (Value::Array(o), Value::Array(p)) => {
            let meta = ty.list_field(key, field_at)?;
            if meta.strategy == Strategy::Merge || is_delete_list {
                Value::Array(merge_slice(o, p, &meta, opts, is_delete_list, field_at, None)?)
            } else {
                Value::Array(p.clone())
            }
        }
        // Scalars of the same kind: directives cannot hide in them.
        (_, p) => p.clone(),
    })
}

/// An object being edited: the members set so far, over the original's, minus those removed.
/// Untouched members are copied when the edit finishes, so each is copied once.
struct Edit<'o> {
    original: &'o Object,
    out: Object,
    removed: HashSet<String>,
}

impl<'o> Edit<'o> {
    fn new(original: &'o Object) -> Self {
        Edit { original, out: Object::new(), removed: HashSet::default() }
    }

    fn get(&self, key: &str) -> Option<&Value> {
        match self.out.get(key) {
            Some(v) => Some(v),
            None if self.removed.contains(key) => None,
            None => self.original.get(key),
        }
    }

    fn set(&mut self, key: &str, v: Value) {
        self.out.insert(key.to_string(), v);
    }

    fn remove(&mut self, key: &str) {
        self.out.remove(key);
        if self.original.contains_key(key) {
            self.removed.insert(key.to_string());
        }
    }

    fn finish(self) -> Object {
        let Edit { original, out, removed } = self;
        if out.is_empty() && removed.is_empty() {
            return original.clone();
        }
        // When the members the edit replaces or removes are small, copying the whole map (a
        // bulk copy of its tree) and then editing it is the cheapest way; otherwise copy the
        // untouched members one by one, so a large replaced member is not copied for nothing.
        let mut budget = 64;
        let touched = out.keys().chain(removed.iter()).filter_map(|k| original.get(k));
        if touched.into_iter().all(|v| small(v, &mut budget)) {
            let mut copy = original.clone();
            for k in &removed {
                if !out.contains_key(k) {
                    copy.remove(k);
                }
            }
            for (k, v) in out {
                copy.insert(k, v);
            }
            return copy;
        }
        // Two sorted runs: collecting builds the map in bulk, without a search per member.
        let mut members: Vec<(String, Value)> = Vec::with_capacity(original.len() + out.len());
        for (k, v) in original {
            if !out.contains_key(k) && !removed.contains(k.as_str()) {
                members.push((k.clone(), v.clone()));
            }
        }
        members.extend(out);
        members.into_iter().collect()
    }
}

/// Whether `v` has at most `budget` values in all (the budget is shared between calls).
fn small(v: &Value, budget: &mut usize) -> bool {
    if *budget == 0 {
        return false;
    }
    *budget -= 1;
    match v {
        Value::Array(a) => a.iter().all(|v| small(v, budget)),
        Value::Object(m) => m.values().all(|v| small(v, budget)),
        _ => true,
    }
}

/// Sets `key` to a copy of a patch value taken as is: nulls inside it are dropped when applying
/// (`discardNullValuesFromPatch`), maps carrying `$patch` are left out (`removeDirectives`).
fn put(edit: &mut Edit<'_>, key: &str, v: &Value, opts: MergeMode) {
    match copy_patch_value(v, opts.ignore_unmatched_nulls) {
        Some(v) => edit.set(key, v),
        None => edit.remove(key),
    }
}

/// A copy of `v` without the maps that carry a `$patch` directive, and without null members
/// when `drop_nulls`; `None` when `v` itself is such a map.
pub(crate) fn copy_patch_value(v: &Value, drop_nulls: bool) -> Option<Value> {
    match v {
        Value::Object(m) => {
            if m.get(DIRECTIVE).is_some_and(|d| !(drop_nulls && d.is_null())) {
                return None;
            }
            let kept = m.iter().filter(|(_, item)| !(drop_nulls && item.is_null()));
            Some(Value::Object(kept.filter_map(|(k, item)| Some((k.clone(), copy_patch_value(item, drop_nulls)?))).collect()))
        }
        Value::Array(a) => Some(Value::Array(a.iter().filter_map(|item| copy_patch_value(item, drop_nulls)).collect())),
        other => Some(other.clone()),
    }
}

/// `$retainKeys`: when applying, every non-null patch key must be listed, and the original keeps
/// only the listed keys; when combining patches, the directive is carried over.
fn apply_retain_keys(edit: &mut Edit<'_>, patch: &Object, opts: MergeMode, at: At<'_>) -> Result<()> {
    let Some(retain) = patch.get(RETAIN_KEYS) else {
        return Ok(());
    };
    let rk_at = at.field(RETAIN_KEYS);
    if !opts.merge_parallel_list {
        match edit.get(RETAIN_KEYS) {
            Some(o) if o != retain => {
                return Err(at_error(K::InvalidDirective, rk_at, format!("{o} and {retain} are not deep equal")));
            }
            Some(_) => {}
            None => edit.set(RETAIN_KEYS, retain.clone()),
        }
        return Ok(());
    }
    let Value::Array(list) = retain else {
        return Err(at_error(K::InvalidDirective, rk_at, "invalid patch format of retainKeys: must be a list"));
    };
    let mut keep: HashSet<&str> = HashSet::with_capacity_and_hasher(list.len(), ahash::RandomState::new());
    for item in list {
        let Some(name) = item.as_str() else {
            return Err(at_error(K::InvalidDirective, rk_at, format!("invalid patch format of retainKeys: {item} is not a field name")));
        };
        keep.insert(name);
    }
    for (k, v) in patch {
        if k == RETAIN_KEYS || v.is_null() || k.starts_with(DELETE_FROM_PRIMITIVE_LIST) || k.starts_with(SET_ELEMENT_ORDER) {
            continue;
        }
        if !keep.contains(k.as_str()) {
            return Err(at_error(
                K::InvalidDirective,
                rk_at,
                format!("invalid patch format of retainKeys: the patch sets {k:?} but $retainKeys does not list it"),
            ));
        }
    }
    let original = edit.original;
    for k in original.keys() {
        if !keep.contains(k.as_str()) {
            edit.remove(k);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;
    use serde_json::json;

    fn apply(original: Value, patch: Value) -> Result<Value> {
        strategic_merge(&original, &patch, &PatchMeta::untyped())
    }

    #[test]
    fn null_deletes_and_maps_merge() {
        let out = apply(json!({"a": {"b": 1, "c": 2}, "d": 3}), json!({"a": {"b": null, "e": 4}, "d": null}));
        assert_eq!(out.ok(), Some(json!({"a": {"c": 2, "e": 4}})));
    }

    #[test]
    fn map_directives() {
        let replaced = apply(json!({"a": {"b": 1}}), json!({"a": {"$patch": "replace", "c": 2}}));
        assert_eq!(replaced.ok(), Some(json!({"a": {"c": 2}})));
        let deleted = apply(json!({"a": {"b": 1}}), json!({"a": {"$patch": "delete"}}));
        assert_eq!(deleted.ok(), Some(json!({"a": {}})));
        let bad = apply(json!({"a": {"b": 1}}), json!({"a": {"$patch": "frobnicate"}}));
        assert!(matches!(bad, Err(Error::Patch { kind: K::UnknownDirective, ref path, .. }) if path == ".a.$patch"));
    }

    #[test]
    fn retain_keys_must_list_patch_keys() {
        let err = apply(json!({"a": {"b": 1}}), json!({"a": {"$retainKeys": ["b"], "c": 1}}));
        assert!(matches!(err, Err(Error::Patch { kind: K::InvalidDirective, ref path, .. }) if path == ".a.$retainKeys"));
        let ok = apply(json!({"a": {"b": 1, "x": 2}}), json!({"a": {"$retainKeys": ["b", "c"], "c": 1}}));
        assert_eq!(ok.ok(), Some(json!({"a": {"b": 1, "c": 1}})));
    }

    #[test]
    fn malformed_parallel_lists_are_errors() {
        let err = apply(json!({"l": [1]}), json!({"$deleteFromPrimitiveList/l": 1}));
        assert!(matches!(err, Err(Error::Patch { kind: K::InvalidDirective, ref path, .. }) if path == ".$deleteFromPrimitiveList/l"));
        let err = apply(json!({"l": [1]}), json!({"$setElementOrder/l": {"a": 1}}));
        assert!(matches!(err, Err(Error::Patch { kind: K::InvalidDirective, .. })));
        let err = apply(json!({"l": [1]}), json!({"$setElementOrderl": [1]}));
        assert!(matches!(err, Err(Error::Patch { kind: K::InvalidDirective, .. })));
    }

    #[test]
    fn copies_of_patch_values_drop_directive_maps_and_nulls() {
        let v = json!({"a": {"$patch": "delete"}, "b": [1, {"$patch": "x"}], "c": null});
        assert_eq!(copy_patch_value(&v, false), Some(json!({"b": [1], "c": null})));
        assert_eq!(copy_patch_value(&v, true), Some(json!({"b": [1]})));
        assert_eq!(copy_patch_value(&json!({"$patch": "delete"}), false), None);
    }
}
