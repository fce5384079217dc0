//! Merging lists (`mergeSlice`): lists of maps by merge key, with their `$patch` items, lists
//! of scalars as sets, and the order apimachinery gives the result.

use super::*;

/// Whether a list item is a `$patch: delete` item.
pub(super) fn is_delete_item(v: &Value) -> bool {
    v.get(DIRECTIVE).and_then(Value::as_str) == Some(DELETE)
}

/// `normalizeElementOrder`: the ordered items (`order` rank) in their order, the others in live
/// order, then the others woven in before the first ordered item that comes after them in the
/// live list (`mergeSortedSlice`).
pub(super) fn normalize_element_order(items: Vec<Ranked>) -> Vec<Ranked> {
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
pub(super) fn item_key<'v>(item: &'v Value, mk: &str, at: At<'_>) -> Result<&'v Value> {
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
        return Ok(merge_scalar_slice(original, patch, opts, is_delete_list, ranks));
    }
    let mk = meta.merge_key.ok_or_else(|| at_error(K::Schema, at, "cannot merge lists of objects without a merge key"))?;
    let PatchItems { kept, delete_order, replace } = PatchItems::split(patch, mk, at)?;
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

    let (patch_keys, patch_first) = patch_keys(kept, mk, at)?;
    let (mut items, first, in_place) = live_items(base, mk, replace, &gone, !edited, original.len());
    let (targets, in_place) = targets(&patch_keys, &first, in_place);
    drop(first);
    let appended = merge_items(&mut items, kept, &targets, meta, opts, at)?;
    if in_place && still_in_place(&items, &targets, &patch_keys, mk) {
        if let Some(ranks) = ranks {
            *ranks = (0..items.len()).map(Some).collect();
        }
        return Ok(items);
    }
    let out = reorder(items, appended, &patch_first, mk, at)?;
    if let Some(ranks) = ranks {
        *ranks = match &trace {
            Some((keys, deletion)) => {
                let added = patch_keys.iter().zip(&targets).filter(|(_, t)| matches!(t, Target::New)).map(|(k, _)| *k);
                traced_ranks(&out, keys, deletion, if replace { None } else { Some(added) }, mk, at)?
            }
            None => out.iter().map(|r| r.server).collect(),
        };
    }
    Ok(out.into_iter().map(|r| r.value).collect())
}

/// Merges two lists of scalars: a `$deleteFromPrimitiveList` removes its items when applied,
/// other lists merge as sets ([`merge_scalars`]), their live ranks reported in `ranks`.
fn merge_scalar_slice(
    original: &[Value],
    patch: &[Value],
    opts: MergeMode,
    is_delete_list: bool,
    ranks: Option<&mut Vec<Option<usize>>>,
) -> Vec<Value> {
    if opts.merge_parallel_list && is_delete_list {
        let gone: HashSet<&Value> = patch.iter().collect();
        return original.iter().filter(|v| !gone.contains(v)).cloned().collect();
    }
    let merged = merge_scalars(original, patch);
    if let Some(ranks) = ranks {
        *ranks = merged.iter().map(|r| r.server).collect();
    }
    merged.into_iter().map(|r| r.value).collect()
}

/// A merging list's patch items, its `$patch` items taken out: deletions by merge key, a
/// replacement of the whole list (any other directive fails).
struct PatchItems<'p> {
    /// The other items, with their index in the patch.
    kept: Vec<(usize, &'p Value)>,
    /// The merge keys to delete, in patch order.
    delete_order: Vec<&'p Value>,
    /// Whether the list is replaced.
    replace: bool,
}

impl<'p> PatchItems<'p> {
    /// The items of `patch`, a list merged by merge key `mk`.
    fn split(patch: &'p [Value], mk: &str, at: At<'_>) -> Result<Self> {
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
                Some(DELETE) => delete_order.push(item.get(mk).ok_or_else(|| {
                    at_error(K::MissingMergeKey, item_at, format!("map: {item} does not contain declared merge key: {mk}"))
                })?),
                Some(REPLACE) => replace = true,
                Some(MERGE) => {
                    return Err(at_error(K::UnknownDirective, item_at, "merging lists cannot yet be specified in the patch"));
                }
                _ => return Err(at_error(K::UnknownDirective, item_at, format!("unknown patch type {d} in list item"))),
            }
        }
        Ok(PatchItems { kept, delete_order, replace })
    }
}

/// The merge keys of the patch items `kept`, and the first position of each among them.
type PatchKeys<'p> = (Vec<&'p Value>, HashMap<&'p Value, usize>);

/// The merge keys (`mk`) of the patch items `kept` in their order, each key's first position.
fn patch_keys<'p>(kept: &[(usize, &'p Value)], mk: &str, at: At<'_>) -> Result<PatchKeys<'p>> {
    let mut patch_keys = Vec::with_capacity(kept.len());
    let mut patch_first: HashMap<&Value, usize> = map_with(kept.len());
    for (j, (i, item)) in kept.iter().enumerate() {
        let key = item_key(item, mk, at.index(*i))?;
        patch_keys.push(key);
        patch_first.entry(key).or_insert(j);
    }
    Ok((patch_keys, patch_first))
}

/// One sweep over the live items `base` (the kept patch items of a replaced list; room for
/// `capacity` made): a copy of each (but those whose key is `gone`), the first position of
/// each key, and whether the merge can still keep the live order as it is (`in_place` so far):
/// every live item keyed, unique and plain. (Then, with every patch item naming a live item in
/// live order, apimachinery's reordering is the identity, and is skipped.)
fn live_items<'v>(
    base: impl Iterator<Item = &'v Value>,
    mk: &str,
    replace: bool,
    gone: &HashSet<&Value>,
    mut in_place: bool,
    capacity: usize,
) -> (Vec<Value>, HashMap<&'v Value, usize>, bool) {
    let mut items: Vec<Value> = Vec::with_capacity(capacity);
    let mut first: HashMap<&Value, usize> = map_with(capacity);
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
    (items, first, in_place)
}

/// Where each patch item (keyed `patch_keys`) goes, given the first live item of each key
/// (`first`); whether the live order is still kept (`in_place` so far): every patch item names
/// a live item, in live order.
fn targets(patch_keys: &[&Value], first: &HashMap<&Value, usize>, mut in_place: bool) -> (Vec<Target>, bool) {
    let mut targets: Vec<Target> = Vec::with_capacity(patch_keys.len());
    let mut added: HashMap<&Value, usize> = map_with(0);
    let mut previous: Option<usize> = None;
    for key in patch_keys {
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
    (targets, in_place)
}

/// Merges each patch item of `kept` into its target: a live item of `items`, or an item an
/// earlier patch item added; the added items, in patch order.
fn merge_items(
    items: &mut [Value],
    kept: &[(usize, &Value)],
    targets: &[Target],
    meta: &FieldMeta<'_>,
    opts: MergeMode,
    at: At<'_>,
) -> Result<Vec<Value>> {
    let mut appended: Vec<Value> = Vec::new();
    for ((i, item), target) in kept.iter().zip(targets) {
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
    Ok(appended)
}

/// Whether the live items that patch items merged into still hold their keys and no delete
/// marker (so the live order stands).
fn still_in_place(items: &[Value], targets: &[Target], patch_keys: &[&Value], mk: &str) -> bool {
    targets.iter().zip(patch_keys).all(|(target, key)| match target {
        Target::Live(t) => {
            let item = items.get(*t).unwrap_or(&Value::Null);
            item.get(mk) == Some(*key) && !is_delete_item(item)
        }
        _ => true,
    })
}

/// The merged list in apimachinery's order: patch items by patch order (`patch_first`), the
/// others by live order (first position of their key in the merged live list, as `index`
/// finds it), woven together; `appended` items after the live ones.
fn reorder(items: Vec<Value>, appended: Vec<Value>, patch_first: &HashMap<&Value, usize>, mk: &str, at: At<'_>) -> Result<Vec<Ranked>> {
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
    Ok(normalize_element_order(ranked))
}

/// The ranks of the merged items `out` in the live order as apimachinery's in-place edits
/// leave it (the live keys `keys` after `deletion`, then the `added` keys unless the list was
/// replaced).
fn traced_ranks<'k>(
    out: &[Ranked],
    keys: &[Option<Value>],
    deletion: &DeletionTrace,
    added: Option<impl Iterator<Item = &'k Value>>,
    mk: &str,
    at: At<'_>,
) -> Result<Vec<Option<usize>>> {
    let visible = deletion.visible(keys, added);
    let mut first: HashMap<&Value, usize> = map_with(visible.len());
    for (i, k) in visible.iter().enumerate() {
        let k = k.as_ref().ok_or_else(|| at_error(K::MissingMergeKey, at, format!("a live item does not contain the merge key {mk}")))?;
        first.entry(k).or_insert(i);
    }
    Ok(out.iter().map(|r| r.value.get(mk).and_then(|k| first.get(k).copied())).collect())
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
