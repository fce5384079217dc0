//! Computing strategic merge patches: two-way (original → modified) and kubectl's three-way
//! patch (last applied, new configuration, live object) with its conflict detection —
//! apimachinery's `CreateTwoWayMergePatch` / `CreateThreeWayMergePatch`.
//!
//! The output matches apimachinery's byte for byte once serialized with sorted keys: lists are
//! compared after sorting by the Go `%v` text of their merge keys (or values), deletions are
//! `{"<key>": v, "$patch": "delete"}` items after the other items, `$setElementOrder/<field>` is
//! emitted whenever a merging list changes, and `$retainKeys` lists the keys a `retainKeys` map
//! keeps.

use super::meta::{Strategy, Ty};
use super::strategic::{
    element_kind, kind, merge_map, JsonKind, Object, COMBINE, DELETE, DELETE_FROM_PRIMITIVE_LIST, DIRECTIVE, RETAIN_KEYS, SET_ELEMENT_ORDER,
};
use super::{at_error, At, PatchErrorKind as K, PatchMeta};
use crate::{Error, Result};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

/// What a diff records (apimachinery's `DiffOptions`).
#[derive(Clone, Copy, Debug, Default)]
struct DiffOptions {
    /// Emit `$setElementOrder/<field>` for changed merging lists.
    set_element_order: bool,
    /// Leave out additions and changes (keep deletions only).
    ignore_changes_and_additions: bool,
    /// Leave out deletions.
    ignore_deletions: bool,
    /// Emit `$retainKeys` for this map (its field has the `retainKeys` strategy).
    build_retain_keys: bool,
}

/// The strategic merge patch that turns `original` into `modified`.
///
/// # Examples
/// ```
/// # use fieldstore_engine::patch::{create_two_way, strategic_merge, PatchMeta};
/// # use serde_json::json;
/// let (a, b) = (json!({"x": 1, "y": {"z": 2}}), json!({"y": {"z": 3}}));
/// let patch = create_two_way(&a, &b, &PatchMeta::untyped())?;
/// assert_eq!(patch, json!({"x": null, "y": {"z": 3}}));
/// assert_eq!(strategic_merge(&a, &patch, &PatchMeta::untyped())?, b);
/// # Ok::<(), fieldstore_engine::Error>(())
/// ```
///
/// # Errors
/// [`crate::Error::Patch`]: [`K::InvalidJson`] when a document is not an object (`null` counts
/// as `{}`), [`K::UnknownField`] when two differing maps or lists sit at a field the schema
/// lacks, [`K::MissingMergeKey`], [`K::TypeMismatch`], [`K::Schema`].
pub fn create_two_way(original: &Value, modified: &Value, meta: &PatchMeta<'_>) -> Result<Value> {
    let original = document(original, "original")?;
    let modified = document(modified, "modified")?;
    let opts = DiffOptions { set_element_order: true, ..DiffOptions::default() };
    diff_maps(original, modified, meta.root(), opts, At::ROOT).map(Value::Object)
}

/// kubectl's three-way strategic merge patch: the changes from `current` (the live object) to
/// `modified` (the new configuration), without deletions, plus the deletions from `original`
/// (the last applied configuration) to `modified`.
///
/// Unless `overwrite`, the patch is refused when it changes a field that was also changed, in a
/// different way, between `original` and `current` (apimachinery's `MergingMapsHaveConflicts`).
///
/// # Examples
/// ```
/// # use fieldstore_engine::patch::{create_three_way, PatchMeta};
/// # use serde_json::json;
/// let last = json!({"replicas": 1, "image": "a"});
/// let live = json!({"replicas": 5, "image": "a", "status": "ok"});
/// let new = json!({"replicas": 1, "image": "b"});
/// let patch = create_three_way(&last, &new, &live, &PatchMeta::untyped(), true)?;
/// assert_eq!(patch, json!({"replicas": 1, "image": "b"}));
/// assert!(create_three_way(&last, &json!({"replicas": 2}), &live, &PatchMeta::untyped(), false).is_err());
/// # Ok::<(), fieldstore_engine::Error>(())
/// ```
///
/// # Errors
/// As [`create_two_way`], and [`K::Conflict`] when `overwrite` is false and the patch conflicts
/// with the changes made to the live object.
pub fn create_three_way(original: &Value, modified: &Value, current: &Value, meta: &PatchMeta<'_>, overwrite: bool) -> Result<Value> {
    let original = document(original, "original")?;
    let modified = document(modified, "modified")?;
    let current = document(current, "current")?;
    let ty = meta.root();
    let delta_opts = DiffOptions { ignore_deletions: true, set_element_order: true, ..DiffOptions::default() };
    let delta = diff_maps(current, modified, ty, delta_opts, At::ROOT)?;
    let deletion_opts = DiffOptions { set_element_order: true, ignore_changes_and_additions: true, ..DiffOptions::default() };
    let deletions = diff_maps(original, modified, ty, deletion_opts, At::ROOT)?;
    let patch = merge_map(&deletions, &delta, ty, COMBINE, At::ROOT)?;
    if !overwrite {
        let changed = diff_maps(original, current, ty, DiffOptions::default(), At::ROOT)?;
        if let Some(path) = maps_conflict(&patch, &changed, ty, At::ROOT)? {
            return Err(Error::Patch {
                kind: K::Conflict,
                message: format!("the patch changes {path}, which was changed differently in the live object since the last apply"),
                path,
            });
        }
    }
    Ok(Value::Object(patch))
}

static EMPTY: std::sync::OnceLock<Object> = std::sync::OnceLock::new();

fn document<'v>(v: &'v Value, what: &str) -> Result<&'v Object> {
    match v {
        Value::Object(m) => Ok(m),
        Value::Null => Ok(EMPTY.get_or_init(Object::new)),
        _ => Err(at_error(K::InvalidJson, At::ROOT, format!("the {what} document must be a JSON object"))),
    }
}

/// The patch from `original` to `modified` (`diffMaps`).
fn diff_maps(original: &Object, modified: &Object, ty: Ty<'_>, opts: DiffOptions, at: At<'_>) -> Result<Object> {
    let mut patch = Object::new();
    let mut retain: Vec<&str> = Vec::new();
    for (key, m) in modified {
        if opts.build_retain_keys && !m.is_null() {
            retain.push(key);
        }
        let Some(o) = original.get(key) else {
            if !opts.ignore_changes_and_additions {
                patch.insert(key.clone(), m.clone());
            }
            continue;
        };
        let key_at = at.field(key);
        if key == DIRECTIVE {
            let (Some(os), Some(ms)) = (o.as_str(), m.as_str()) else {
                return Err(at_error(K::InvalidDirective, key_at, "invalid value for special key: $patch"));
            };
            if os != ms {
                patch.insert(key.clone(), m.clone());
            }
            continue;
        }
        if kind(o) != kind(m) {
            if !opts.ignore_changes_and_additions {
                patch.insert(key.clone(), m.clone());
            }
            continue;
        }
        match (o, m) {
            (Value::Object(o), Value::Object(m)) => {
                let meta = match ty.field(key, key_at) {
                    Ok(meta) => meta,
                    Err(_) if o == m => continue,
                    Err(e) => return Err(e),
                };
                if meta.strategy == Strategy::Replace {
                    // apimachinery sends a replaced map even when it did not change.
                    if !opts.ignore_changes_and_additions {
                        patch.insert(key.clone(), Value::Object(m.clone()));
                    }
                    continue;
                }
                let child = DiffOptions { build_retain_keys: meta.retain_keys, ..opts };
                let p = diff_maps(o, m, meta.ty, child, key_at)?;
                if !p.is_empty() {
                    patch.insert(key.clone(), Value::Object(p));
                }
            }
            (Value::Array(o), Value::Array(m)) => {
                let meta = match ty.list_field(key, key_at) {
                    Ok(meta) => meta,
                    Err(_) if o == m => continue,
                    Err(e) => return Err(e),
                };
                if meta.strategy != Strategy::Merge {
                    if !opts.ignore_changes_and_additions && o != m {
                        patch.insert(key.clone(), Value::Array(m.clone()));
                    }
                    continue;
                }
                let child = DiffOptions { build_retain_keys: meta.retain_keys, ..opts };
                let lists = diff_lists(o, m, meta.ty, meta.merge_key, child, key_at)?;
                if !lists.add.is_empty() {
                    patch.insert(key.clone(), Value::Array(lists.add));
                }
                if !lists.delete.is_empty() {
                    patch.insert(format!("{DELETE_FROM_PRIMITIVE_LIST}/{key}"), Value::Array(lists.delete));
                }
                if !lists.order.is_empty() {
                    patch.insert(format!("{SET_ELEMENT_ORDER}/{key}"), Value::Array(lists.order));
                }
            }
            (o, m) => {
                if !opts.ignore_changes_and_additions && o != m {
                    patch.insert(key.clone(), m.clone());
                }
            }
        }
    }
    if !opts.ignore_deletions {
        for key in original.keys() {
            if !modified.contains_key(key) {
                patch.insert(key.clone(), Value::Null);
            }
        }
    }
    // `$retainKeys` when the patch does something, or when the original has keys to clear.
    let clears = || original.iter().any(|(k, v)| !v.is_null() && !modified.contains_key(k));
    if !retain.is_empty() && (!patch.is_empty() || clears()) {
        retain.sort_unstable();
        patch.insert(RETAIN_KEYS.to_string(), Value::Array(retain.into_iter().map(|k| Value::String(k.to_string())).collect()));
    }
    Ok(patch)
}

/// The three parts of a merging list's diff.
#[derive(Default)]
struct ListDiff {
    /// Changed and added items (then deletion items, for lists of objects).
    add: Vec<Value>,
    /// `$deleteFromPrimitiveList` values.
    delete: Vec<Value>,
    /// `$setElementOrder` items.
    order: Vec<Value>,
}

/// The diff of a merging list (`diffLists`).
fn diff_lists(original: &[Value], modified: &[Value], elem: Ty<'_>, mk: Option<&str>, opts: DiffOptions, at: At<'_>) -> Result<ListDiff> {
    if original.is_empty() {
        if modified.is_empty() || opts.ignore_changes_and_additions {
            return Ok(ListDiff::default());
        }
        return Ok(ListDiff { add: modified.to_vec(), ..ListDiff::default() });
    }
    let element = element_kind(&[original, modified], at)?;
    if element == JsonKind::Map {
        let mk = mk.ok_or_else(|| at_error(K::Schema, at, "cannot merge lists of objects without a merge key"))?;
        let (changes, deletions) = diff_lists_of_maps(original, modified, elem, mk, opts, at)?;
        let mut add = order_like(changes, modified, Some(mk), at)?;
        let mut order_same = original.len() == modified.len();
        if order_same {
            for (o, m) in original.iter().zip(modified) {
                if key_of(o, mk, at)? != key_of(m, mk, at)? {
                    order_same = false;
                    break;
                }
            }
        }
        add.extend(deletions);
        let mut order = Vec::new();
        if opts.set_element_order
            && ((!opts.ignore_changes_and_additions && (!add.is_empty() || !order_same)) || (!opts.ignore_deletions && !add.is_empty()))
        {
            order = modified
                .iter()
                .map(|v| {
                    let mut m = Map::new();
                    m.insert(mk.to_string(), v.get(mk).cloned().unwrap_or(Value::Null));
                    Value::Object(m)
                })
                .collect();
        }
        return Ok(ListDiff { add, delete: Vec::new(), order });
    }
    // Scalars: a walk over both lists sorted by their Go text.
    let sorted_o = go_sort(original.iter().map(|v| (go_text(v), v)).collect());
    let sorted_m = go_sort(modified.iter().map(|v| (go_text(v), v)).collect());
    let (mut i, mut j) = (0, 0);
    let mut add = Vec::new();
    let mut delete = Vec::new();
    loop {
        match (sorted_o.get(i), sorted_m.get(j)) {
            (None, None) => break,
            (Some((os, _)), Some((ms, _))) if os == ms => {
                i += 1;
                j += 1;
            }
            (None, Some((_, m))) => {
                add.push((*m).clone());
                j += 1;
            }
            (Some((os, _)), Some((ms, m))) if os > ms => {
                add.push((*m).clone());
                j += 1;
            }
            (Some((_, o)), _) => {
                delete.push((*o).clone());
                i += 1;
            }
        }
    }
    if opts.ignore_changes_and_additions {
        add.clear();
    }
    if opts.ignore_deletions {
        delete.clear();
    }
    let delete = go_dedup(delete);
    let add = order_like(add, modified, None, at)?;
    // apimachinery sorts the original list in place before comparing it with the modified one,
    // so an unchanged but unsorted list still emits its order.
    let sorted_equal = sorted_o.len() == modified.len() && sorted_o.iter().zip(modified).all(|((_, o), m)| *o == m);
    let mut order = Vec::new();
    if opts.set_element_order && ((!opts.ignore_deletions && !delete.is_empty()) || (!opts.ignore_changes_and_additions && !sorted_equal)) {
        order = modified.to_vec();
    }
    Ok(ListDiff { add, delete, order })
}

/// The merge key value of a list item, which must be an object that has it.
fn key_of<'v>(item: &'v Value, mk: &str, at: At<'_>) -> Result<&'v Value> {
    let Value::Object(m) = item else {
        return Err(at_error(K::TypeMismatch, at, format!("expected a list of objects, found {item}")));
    };
    m.get(mk).ok_or_else(|| at_error(K::MissingMergeKey, at, format!("map: {item} does not contain declared merge key: {mk}")))
}

/// Orders `items` as their keys (or values) first appear in `order`, deletion items last
/// (`normalizeSliceOrder`).
fn order_like(items: Vec<Value>, order: &[Value], mk: Option<&str>, at: At<'_>) -> Result<Vec<Value>> {
    let mut first: HashMap<&Value, usize> = HashMap::with_capacity(order.len());
    for (i, v) in order.iter().enumerate() {
        let k = match mk {
            Some(mk) => key_of(v, mk, at.index(i))?,
            None => v,
        };
        first.entry(k).or_insert(i);
    }
    let mut ranked = Vec::with_capacity(items.len());
    let mut deletes = Vec::new();
    for v in items {
        let rank = match mk {
            Some(mk) => first.get(key_of(&v, mk, at)?).copied(),
            None => first.get(&v).copied(),
        };
        if mk.is_some() && v.get(DIRECTIVE).and_then(Value::as_str) == Some(DELETE) {
            deletes.push(v);
        } else {
            ranked.push((rank.unwrap_or(usize::MAX), v));
        }
    }
    ranked.sort_by_key(|(r, _)| *r);
    Ok(ranked.into_iter().map(|(_, v)| v).chain(deletes).collect())
}

/// Changes/additions and deletions of a merging list of objects (`diffListsOfMaps`).
fn diff_lists_of_maps(
    original: &[Value],
    modified: &[Value],
    elem: Ty<'_>,
    mk: &str,
    opts: DiffOptions,
    at: At<'_>,
) -> Result<(Vec<Value>, Vec<Value>)> {
    static NULL: Value = Value::Null;
    let sorted_o = go_sort(original.iter().map(|v| (go_text(v.get(mk).unwrap_or(&NULL)), v)).collect());
    let sorted_m = go_sort(modified.iter().map(|v| (go_text(v.get(mk).unwrap_or(&NULL)), v)).collect());
    let mut changes = Vec::with_capacity(modified.len());
    let mut deletions = Vec::new();
    let (mut i, mut j) = (0, 0);
    loop {
        let o = sorted_o.get(i);
        let m = sorted_m.get(j);
        if o.is_none() && m.is_none() {
            break;
        }
        // Both items must be objects holding the merge key (`getMapAndMergeKeyValueByIndex`).
        if let Some((_, o)) = o {
            key_of(o, mk, at)?;
        }
        if let Some((_, m)) = m {
            key_of(m, mk, at)?;
        }
        match (o, m) {
            (Some((os, Value::Object(om))), Some((ms, Value::Object(mm)))) if os == ms => {
                let item_at = at.index(j);
                let mut p = diff_maps(om, mm, elem, opts, item_at)?;
                if !p.is_empty() {
                    p.insert(mk.to_string(), mm.get(mk).cloned().unwrap_or(Value::Null));
                    changes.push(Value::Object(p));
                }
                i += 1;
                j += 1;
            }
            (None, Some((_, m))) => {
                if !opts.ignore_changes_and_additions {
                    changes.push((*m).clone());
                }
                j += 1;
            }
            (Some((os, _)), Some((ms, m))) if os > ms => {
                if !opts.ignore_changes_and_additions {
                    changes.push((*m).clone());
                }
                j += 1;
            }
            (Some((_, o)), _) => {
                if !opts.ignore_deletions {
                    let mut d = Map::new();
                    d.insert(mk.to_string(), o.get(mk).cloned().unwrap_or(Value::Null));
                    d.insert(DIRECTIVE.to_string(), Value::String(DELETE.to_string()));
                    deletions.push(Value::Object(d));
                }
                i += 1;
            }
            (None, None) => break,
        }
    }
    Ok((changes, deletions))
}

/// Sorts by text as Go's `sort.Sort` does with apimachinery's `Less` (`a <= b`): for up to 12
/// items that is an insertion sort, which puts equal items in reverse order; longer lists keep
/// equal items in order (Go leaves their order unspecified).
fn go_sort<S: Ord, T>(mut items: Vec<(S, T)>) -> Vec<(S, T)> {
    items.sort_by(|a, b| a.0.cmp(&b.0));
    if items.len() <= 12 {
        let mut start = 0;
        while start < items.len() {
            let mut end = start + 1;
            while end < items.len() && items[end].0 == items[start].0 {
                end += 1;
            }
            items[start..end].reverse();
            start = end;
        }
    }
    items
}

/// apimachinery's `deduplicateScalars`: each later duplicate is replaced by the last item,
/// which reorders the list; kept as is because the output order of `$deleteFromPrimitiveList`
/// depends on it.
fn go_dedup(mut s: Vec<Value>) -> Vec<Value> {
    let mut seen = HashSet::with_capacity(s.len());
    if s.iter().all(|v| seen.insert(v)) {
        return s;
    }
    let mut length = s.len() - 1;
    let mut i = 0;
    while i < length {
        let mut j = i + 1;
        while j <= length {
            if s[i] == s[j] {
                s.swap(j, length);
                s.truncate(length);
                length -= 1;
            } else {
                j += 1;
            }
        }
        i += 1;
    }
    s
}

/// A value as Go's `fmt.Sprintf("%v")` prints what `encoding/json` decoded it to.
pub(crate) fn go_text(v: &Value) -> Cow<'_, str> {
    if let Value::String(s) = v {
        return Cow::Borrowed(s);
    }
    let mut out = String::new();
    write_go_text(v, &mut out);
    Cow::Owned(out)
}

fn write_go_text(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::String(s) => out.push_str(s),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => {
                let _ = write!(out, "{i}");
            }
            (None, Some(f)) => write_go_float(f, out),
            (None, None) => {
                let _ = write!(out, "{n}");
            }
        },
        Value::Array(a) => {
            out.push('[');
            for (i, item) in a.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                write_go_text(item, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push_str("map[");
            for (i, (k, item)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(k);
                out.push(':');
                write_go_text(item, out);
            }
            out.push(']');
        }
    }
}

/// Go's `%v` for a float64 (`strconv.FormatFloat(f, 'g', -1, 64)`): the shortest digits, in
/// `%e` form when the exponent is below -4 or at least 6, else plain.
fn write_go_float(f: f64, out: &mut String) {
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (neg, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if neg {
        out.push('-');
    }
    if !(-4..6).contains(&exp) {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let _ = write!(out, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    } else if exp < 0 {
        out.push_str("0.");
        for _ in 0..(-exp - 1) {
            out.push('0');
        }
        out.push_str(&digits);
    } else {
        let point = usize::try_from(exp).unwrap_or(0) + 1;
        if digits.len() <= point {
            out.push_str(&digits);
            for _ in digits.len()..point {
                out.push('0');
            }
        } else {
            out.push_str(&digits[..point]);
            out.push('.');
            out.push_str(&digits[point..]);
        }
    }
}

/// Whether `left` and `right` (two patches) change a field differently; the path of the first
/// conflict found (`mergingMapFieldsHaveConflicts`).
fn fields_conflict(left: &Value, right: &Value, ty: Ty<'_>, strategy: Strategy, mk: Option<&str>, at: At<'_>) -> Result<Option<String>> {
    match left {
        Value::Object(l) => {
            let Value::Object(r) = right else {
                return Ok(Some(at.render()));
            };
            let (lm, rm) = (l.get(DIRECTIVE), r.get(DIRECTIVE));
            if (lm.is_some() || rm.is_some()) && lm != rm {
                return Ok(Some(at.render()));
            }
            if strategy == Strategy::Replace {
                return Ok(None);
            }
            maps_conflict(l, r, ty, at)
        }
        Value::Array(l) => {
            let Value::Array(r) = right else {
                return Ok(Some(at.render()));
            };
            slices_conflict(l, r, ty, strategy, mk, at)
        }
        _ => Ok((left != right).then(|| at.render())),
    }
}

fn maps_conflict(left: &Object, right: &Object, ty: Ty<'_>, at: At<'_>) -> Result<Option<String>> {
    for (key, lv) in left {
        if key == DIRECTIVE || key == RETAIN_KEYS {
            continue;
        }
        let Some(rv) = right.get(key) else {
            continue;
        };
        let key_at = at.field(key);
        let found = match lv {
            Value::Array(_) => {
                let meta = ty.list_field(key, key_at)?;
                fields_conflict(lv, rv, meta.ty, meta.strategy, meta.merge_key, key_at)?
            }
            Value::Object(_) => {
                let meta = ty.field(key, key_at)?;
                fields_conflict(lv, rv, meta.ty, meta.strategy, meta.merge_key, key_at)?
            }
            _ => fields_conflict(lv, rv, Ty::Untyped, Strategy::Default, None, key_at)?,
        };
        if found.is_some() {
            return Ok(found);
        }
    }
    Ok(None)
}

fn slices_conflict(
    left: &[Value],
    right: &[Value],
    elem: Ty<'_>,
    strategy: Strategy,
    mk: Option<&str>,
    at: At<'_>,
) -> Result<Option<String>> {
    let element = element_kind(&[left, right], at)?;
    if strategy == Strategy::Merge {
        // Merging scalar lists never conflict; merging object lists compare items by key.
        if element != JsonKind::Map {
            return Ok(None);
        }
        let mk = mk.ok_or_else(|| at_error(K::Schema, at, "cannot merge lists of objects without a merge key"))?;
        let (lmap, rmap) = (by_key(left, mk, at)?, by_key(right, mk, at)?);
        let mut keys: Vec<(&String, &(usize, &Value))> = lmap.iter().collect();
        keys.sort_by_key(|(_, (i, _))| *i);
        for (k, (i, lv)) in keys {
            if let Some((_, rv)) = rmap.get(k) {
                if let Some(p) = fields_conflict(lv, rv, elem, Strategy::Default, None, at.index(*i))? {
                    return Ok(Some(p));
                }
            }
        }
        return Ok(None);
    }
    if left.len() != right.len() {
        return Ok(Some(at.render()));
    }
    let (l, r): (Vec<Value>, Vec<Value>) = if element == JsonKind::Map {
        (left.to_vec(), right.to_vec())
    } else {
        let sorted = |s: &[Value]| -> Vec<Value> {
            let deduped = go_dedup(s.to_vec());
            go_sort(deduped.iter().map(|v| (go_text(v), v)).collect()).into_iter().map(|(_, v)| v.clone()).collect()
        };
        (sorted(left), sorted(right))
    };
    if l.len() != r.len() {
        return Ok(Some(at.render()));
    }
    for (i, (lv, rv)) in l.iter().zip(&r).enumerate() {
        if let Some(p) = fields_conflict(lv, rv, elem, Strategy::Default, None, at.index(i))? {
            return Ok(Some(p));
        }
    }
    Ok(None)
}

/// The items of a merging list by the JSON text of their merge key, with their positions
/// (`sliceOfMapsToMapOfMaps`; a later duplicate wins).
fn by_key<'v>(list: &'v [Value], mk: &str, at: At<'_>) -> Result<HashMap<String, (usize, &'v Value)>> {
    let mut out = HashMap::with_capacity(list.len());
    for (i, v) in list.iter().enumerate() {
        let k = key_of(v, mk, at.index(i))?;
        out.insert(k.to_string(), (i, v));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn go_text_matches_fmt_v() {
        assert_eq!(go_text(&json!(1.0e6)), "1e+06");
        assert_eq!(go_text(&json!(100000.5)), "100000.5");
        assert_eq!(go_text(&json!(0.0001)), "0.0001");
        assert_eq!(go_text(&json!(0.00001)), "1e-05");
        assert_eq!(go_text(&json!(-2.5)), "-2.5");
        assert_eq!(go_text(&json!(9223372036854775807_i64)), "9223372036854775807");
        assert_eq!(go_text(&json!(null)), "<nil>");
        assert_eq!(go_text(&json!({"a": [1, "x"]})), "map[a:[1 x]]");
    }

    #[test]
    fn go_dedup_reorders_like_go() {
        assert_eq!(go_dedup(vec![json!("a"), json!("a"), json!("b"), json!("c")]), vec![json!("a"), json!("c"), json!("b")]);
        assert_eq!(go_dedup(vec![json!(1), json!(2)]), vec![json!(1), json!(2)]);
    }

    #[test]
    fn go_sort_reverses_ties_in_short_lists() {
        let out = go_sort(vec![("2", 'a'), ("1", 'b'), ("2", 'c')]);
        assert_eq!(out.into_iter().map(|(_, c)| c).collect::<String>(), "bca");
    }
}
