//! Applying a strategic merge patch: apimachinery's `mergeMap` / `mergeSlice` with every
//! directive, on owned `serde_json` values.
//!
//! The same merge also combines two patches into one (three-way patch creation), with
//! [`COMBINE`] options: directives are then carried into the result instead of being executed.
//!
//! Lists are merged in O(n): items are indexed by merge key (or by value for scalar sets) in
//! hash maps, and the result order — `$setElementOrder` first, then the patch's order, then the
//! live list's order — comes from ranks computed once per item and a linear merge.

use super::meta::{FieldMeta, Strategy, Ty};
use super::{at_error, At, PatchErrorKind as K, PatchMeta};
use crate::Result;
use serde_json::{Map, Value};
use std::collections::{HashMap as StdHashMap, HashSet as StdHashSet};

mod element_order;
mod go_sort;
use element_order::merge_set_element_order;
use go_sort::{sort_by_rank, Ranked};

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
        let merged = match (current, patch_v) {
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
        };
        edit.set(key, merged);
    }
    Ok(edit.finish())
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

fn is_delete_item(v: &Value) -> bool {
    v.get(DIRECTIVE).and_then(Value::as_str) == Some(DELETE)
}

/// `normalizeElementOrder`: the ordered items (`order` rank) in their order, the others in live
/// order, then the others woven in before the first ordered item that comes after them in the
/// live list (`mergeSortedSlice`).
fn normalize_element_order(items: Vec<Ranked>) -> Vec<Ranked> {
    let (mut ordered, mut live_only): (Vec<Ranked>, Vec<Ranked>) = items.into_iter().partition(|r| r.order.is_some());
    sort_by_rank(&mut ordered, |r| r.order);
    sort_by_rank(&mut live_only, |r| r.server);
    let mut out = Vec::with_capacity(ordered.len() + live_only.len());
    let mut left = live_only.into_iter().peekable();
    let mut right = ordered.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (Some(l), Some(r)) => matches!((l.server, r.server), (Some(a), Some(b)) if a < b),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        out.extend(if take_left { left.next() } else { right.next() });
    }
    out
}

/// The merge key value of a list item, which must be an object that has it.
fn item_key<'v>(item: &'v Value, mk: &str, at: At<'_>) -> Result<&'v Value> {
    let Value::Object(m) = item else {
        return Err(at_error(K::TypeMismatch, at, format!("expected a list of objects, found {item}")));
    };
    m.get(mk).ok_or_else(|| at_error(K::MissingMergeKey, at, format!("map: {item} does not contain declared merge key: {mk}")))
}

/// Merges two lists (`mergeSliceHandler` for a merging list / `mergeSlice`) into a new list.
///
/// With `ranks`, also reports each result item's rank in the live order as apimachinery's
/// `$setElementOrder` handling sees it afterwards (see [`DeletionTrace`]).
pub(crate) fn merge_slice(
    original: &[Value],
    patch: &[Value],
    meta: &FieldMeta<'_>,
    opts: MergeMode,
    is_delete_list: bool,
    at: At<'_>,
    ranks: Option<&mut Vec<Option<usize>>>,
) -> Result<Vec<Value>> {
    if original.is_empty() && patch.is_empty() {
        return Ok(Vec::new());
    }
    let element = element_kind(&[original, patch], at)?;
    if element != JsonKind::Map {
        if opts.merge_parallel_list && is_delete_list {
            let gone: HashSet<&Value> = patch.iter().collect();
            return Ok(original.iter().filter(|v| !gone.contains(v)).cloned().collect());
        }
        let merged = merge_scalars(original, patch);
        if let Some(ranks) = ranks {
            *ranks = merged.iter().map(|r| r.server).collect();
        }
        return Ok(merged.into_iter().map(|r| r.value).collect());
    }
    let mk = meta.merge_key.ok_or_else(|| at_error(K::Schema, at, "cannot merge lists of objects without a merge key"))?;

    // `$patch` items: delete by merge key, replace the whole list, or fail.
    let mut kept: Vec<(usize, &Value)> = Vec::with_capacity(patch.len());
    let mut delete_order: Vec<&Value> = Vec::new();
    let mut replace = false;
    for (i, item) in patch.iter().enumerate() {
        let Some(d) = item.get(DIRECTIVE) else {
            kept.push((i, item));
            continue;
        };
        let item_at = at.index(i);
        match d.as_str() {
            Some(DELETE) => {
                delete_order.push(item.get(mk).ok_or_else(|| {
                    at_error(K::MissingMergeKey, item_at, format!("map: {item} does not contain declared merge key: {mk}"))
                })?)
            }
            Some(REPLACE) => replace = true,
            Some(MERGE) => {
                return Err(at_error(K::UnknownDirective, item_at, "merging lists cannot yet be specified in the patch"));
            }
            _ => return Err(at_error(K::UnknownDirective, item_at, format!("unknown patch type {d} in list item"))),
        }
    }
    // Deletions and replacements edit the live array in place, which the caller may need to see.
    let edited = replace || !delete_order.is_empty();
    let trace = match &ranks {
        Some(_) if edited => {
            let keys: Vec<Option<Value>> = original.iter().map(|v| v.get(mk).cloned()).collect();
            let deletion = DeletionTrace::new(&keys, &delete_order);
            Some((keys, deletion))
        }
        _ => None,
    };
    let gone: HashSet<&Value> = delete_order.iter().copied().collect();
    let base: Box<dyn Iterator<Item = &Value>> = if replace { Box::new(kept.iter().map(|(_, v)| *v)) } else { Box::new(original.iter()) };
    let kept: &[(usize, &Value)] = if replace { &[] } else { &kept };

    let mut patch_keys = Vec::with_capacity(kept.len());
    let mut patch_first: HashMap<&Value, usize> = map_with(kept.len());
    for (j, (i, item)) in kept.iter().enumerate() {
        let key = item_key(item, mk, at.index(*i))?;
        patch_keys.push(key);
        patch_first.entry(key).or_insert(j);
    }
    // One sweep over the live items: copy each, index its key (first occurrence), and see
    // whether the merge can keep the live order as it is: every live item keyed, unique and
    // plain, every patch item naming a live item, in live order. Then apimachinery's reordering
    // is the identity, and is skipped.
    let mut items: Vec<Value> = Vec::with_capacity(original.len());
    let mut first: HashMap<&Value, usize> = map_with(original.len());
    let mut in_place = !edited;
    for item in base {
        let key = item.get(mk);
        if !replace && !gone.is_empty() && key.is_some_and(|k| gone.contains(k)) {
            continue;
        }
        let i = items.len();
        match key {
            Some(k) => in_place &= *first.entry(k).or_insert(i) == i,
            None => in_place = false,
        }
        in_place = in_place && !is_delete_item(item);
        items.push(item.clone());
    }
    // Where each patch item goes.
    let mut targets: Vec<Target> = Vec::with_capacity(kept.len());
    let mut added: HashMap<&Value, usize> = map_with(0);
    let mut previous: Option<usize> = None;
    for key in &patch_keys {
        let target = if let Some(&i) = first.get(key) {
            in_place &= match previous {
                Some(p) => p < i,
                None => true,
            };
            previous = Some(i);
            Target::Live(i)
        } else if let Some(&a) = added.get(key) {
            in_place = false;
            Target::Added(a)
        } else {
            in_place = false;
            added.insert(key, added.len());
            Target::New
        };
        targets.push(target);
    }
    drop(first);

    let mut appended: Vec<Value> = Vec::new();
    for ((i, item), target) in kept.iter().zip(&targets) {
        let slot = match target {
            Target::Live(t) => items.get_mut(*t),
            Target::Added(a) => appended.get_mut(*a),
            Target::New => {
                appended.push((*item).clone());
                continue;
            }
        };
        if let (Some(Value::Object(o)), Value::Object(p)) = (slot, item) {
            *o = merge_map(o, p, meta.ty, opts, at.index(*i))?;
        }
    }
    if in_place {
        // The merged items must still hold their keys and no delete marker.
        for (target, key) in targets.iter().zip(&patch_keys) {
            if let Target::Live(t) = target {
                let item = items.get(*t).unwrap_or(&Value::Null);
                in_place &= item.get(mk) == Some(*key) && !is_delete_item(item);
            }
        }
    }
    if in_place {
        if let Some(ranks) = ranks {
            *ranks = (0..items.len()).map(Some).collect();
        }
        return Ok(items);
    }

    // Patch items by patch order, the others by live order (first position of their key in the
    // merged live list, as `index` finds it), woven together.
    let mut server: Vec<Option<usize>> = Vec::with_capacity(items.len());
    {
        let mut first: HashMap<&Value, usize> = map_with(items.len());
        for (i, item) in items.iter().enumerate() {
            server.push(Some(*first.entry(item_key(item, mk, at)?).or_insert(i)));
        }
    }
    let mut ranked = Vec::with_capacity(items.len() + appended.len());
    for (value, server) in items.into_iter().zip(server).chain(appended.into_iter().map(|v| (v, None))) {
        let order = patch_first.get(item_key(&value, mk, at)?).copied();
        let delete = is_delete_item(&value);
        ranked.push(Ranked { value, server, order, delete });
    }
    let out = normalize_element_order(ranked);
    if let Some(ranks) = ranks {
        *ranks = match &trace {
            Some((keys, deletion)) => {
                let added = patch_keys.iter().zip(&targets).filter(|(_, t)| matches!(t, Target::New)).map(|(k, _)| *k);
                let visible = deletion.visible(keys, if replace { None } else { Some(added) });
                let mut first: HashMap<&Value, usize> = map_with(visible.len());
                for (i, k) in visible.iter().enumerate() {
                    let k = k
                        .as_ref()
                        .ok_or_else(|| at_error(K::MissingMergeKey, at, format!("a live item does not contain the merge key {mk}")))?;
                    first.entry(k).or_insert(i);
                }
                out.iter().map(|r| r.value.get(mk).and_then(|k| first.get(k).copied())).collect()
            }
            None => out.iter().map(|r| r.server).collect(),
        };
    }
    Ok(out.into_iter().map(|r| r.value).collect())
}

/// Where a patch item of a merging list goes: into the first live item with its key, into an
/// item an earlier patch item added, or appended.
enum Target {
    Live(usize),
    Added(usize),
    New,
}

/// What apimachinery's in-place list edits leave in the live list's backing array, which its
/// `$setElementOrder` handling then reads as the live order: deletions compact the array and
/// leave stale copies of the last item behind, appended items overwrite the tail.
struct DeletionTrace {
    removed: Vec<bool>,
    /// For each position past the compacted items: the live item left there.
    stale: Vec<Option<usize>>,
}

impl DeletionTrace {
    /// Replays the deletions (each key in patch order, its matching items first to last).
    fn new(keys: &[Option<Value>], deletes: &[&Value]) -> Self {
        let n = keys.len();
        let mut by_key: HashMap<&Value, Vec<usize>> = map_with(keys.len());
        for (i, k) in keys.iter().enumerate() {
            if let Some(k) = k {
                by_key.entry(k).or_default().push(i);
            }
        }
        let mut removed = vec![false; n];
        let mut stale = vec![None; n];
        let mut len = n;
        let mut last = n.checked_sub(1);
        for d in deletes {
            for &i in by_key.get(d).into_iter().flatten() {
                if removed[i] {
                    continue;
                }
                // Removing shifts the tail left; the slot that falls off keeps the last item.
                if let Some(slot) = len.checked_sub(1).and_then(|p| stale.get_mut(p)) {
                    *slot = last;
                }
                removed[i] = true;
                len -= 1;
                while let Some(l) = last.filter(|&l| removed[l]) {
                    last = l.checked_sub(1);
                }
            }
        }
        DeletionTrace { removed, stale }
    }

    /// The keys the array shows through the live list's original length.
    fn visible<'k>(&self, keys: &[Option<Value>], added: Option<impl Iterator<Item = &'k Value>>) -> Vec<Option<Value>> {
        let n = keys.len();
        let mut out: Vec<Option<Value>> = keys.iter().zip(&self.removed).filter(|(_, r)| !**r).map(|(k, _)| k.clone()).collect();
        if let Some(added) = added {
            let room = n - out.len();
            out.extend(added.take(room).map(|k| Some(k.clone())));
        }
        for p in out.len()..n {
            out.push(self.stale.get(p).copied().flatten().and_then(|i| keys.get(i).cloned().flatten()));
        }
        out
    }
}

/// Merges two scalar lists as sets: live items first-seen, then new patch items, ordered as
/// `mergeSlice` orders them.
fn merge_scalars(original: &[Value], patch: &[Value]) -> Vec<Ranked> {
    let mut ranks_o = Vec::with_capacity(original.len());
    let mut new_items = Vec::new();
    {
        let mut first_o: HashMap<&Value, usize> = map_with(original.len());
        for (i, v) in original.iter().enumerate() {
            first_o.entry(v).or_insert(i);
        }
        let mut first_p: HashMap<&Value, usize> = map_with(patch.len());
        for (j, v) in patch.iter().enumerate() {
            first_p.entry(v).or_insert(j);
        }
        for (i, v) in original.iter().enumerate() {
            // Duplicates are dropped (`deduplicateScalars`); the first one stays.
            ranks_o.push((first_o.get(v) == Some(&i), first_p.get(v).copied()));
        }
        for (j, v) in patch.iter().enumerate() {
            if !first_o.contains_key(v) && first_p.get(v) == Some(&j) {
                new_items.push(Ranked { value: v.clone(), server: None, order: Some(j), delete: false });
            }
        }
    }
    let mut items = Vec::with_capacity(original.len() + new_items.len());
    for (i, (value, (keep, order))) in original.iter().zip(ranks_o).enumerate() {
        if keep {
            items.push(Ranked { value: value.clone(), server: Some(i), order, delete: false });
        }
    }
    items.extend(new_items);
    normalize_element_order(items)
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
