//! `$setElementOrder` directives: the order a patch gives a merged list, and its validation.

use super::lists::{is_delete_item, item_key, merge_slice, normalize_element_order};
use super::*;

/// `$setElementOrder/<field>`: merges the field's list (if the patch has one), then orders the
/// result by the directive, the patch, and the live list (`mergePatchIntoOriginal`). Returns the
/// fields whose lists it merged, which the caller must not merge again.
pub(super) fn merge_set_element_order<'p>(
    edit: &mut Edit<'_>,
    patch: &'p Object,
    ty: Ty<'_>,
    opts: MergeMode,
    at: At<'_>,
) -> Result<Vec<&'p str>> {
    let mut merged_fields = Vec::new();
    for (key, order_v) in patch.iter().filter(|(k, _)| k.starts_with(SET_ELEMENT_ORDER)) {
        let key_at = at.field(key);
        if !opts.merge_parallel_list {
            match edit.get(key) {
                Some(o) if o != order_v => {
                    return Err(at_error(
                        K::InvalidDirective,
                        key_at,
                        "invalid patch format of setElementOrder list: the two patches disagree",
                    ));
                }
                Some(_) => {}
                None => edit.set(key, order_v.clone()),
            }
        }
        let Value::Array(order) = order_v else {
            return Err(at_error(K::InvalidDirective, key_at, "invalid patch format of setElementOrder list: must be a list"));
        };
        let field = extract_key(key, SET_ELEMENT_ORDER, key_at)?;
        let field_at = at.field(field);
        let orig_list = as_list(edit.get(field), field_at)?;
        let patch_list = as_list(patch.get(field), field_at)?;
        let meta = ty.list_field(field, field_at)?;
        validate_order(patch_list.unwrap_or_default(), order, meta.merge_key, field_at)?;
        if orig_list.is_none() && patch_list.is_none() {
            continue;
        }
        let element = element_kind(&[orig_list.unwrap_or_default(), patch_list.unwrap_or_default()], field_at)?;
        let mk = match (element, meta.merge_key) {
            (JsonKind::Map, None) => {
                return Err(at_error(K::Schema, field_at, "cannot order a list of objects without a merge key"));
            }
            (JsonKind::Map, Some(mk)) => Some(mk),
            _ => None,
        };
        let key_of = |v: &'p Value, at: At<'_>| -> Result<&'p Value> {
            match mk {
                Some(mk) => item_key(v, mk, at),
                None => Ok(v),
            }
        };
        merged_fields.push(field);
        // The merged list, and each item's rank in the live order.
        let mut server: Vec<Option<usize>> = Vec::new();
        let merged = match (orig_list, patch_list) {
            (Some(o), None) => {
                server = first_ranks(o, mk, field_at)?;
                o.to_vec()
            }
            (None, Some(p)) => {
                let p = p.iter().filter_map(|v| copy_patch_value(v, false)).collect::<Vec<_>>();
                server.resize(p.len(), None);
                p
            }
            (Some(o), Some(p)) if meta.strategy == Strategy::Merge => merge_slice(o, p, &meta, opts, false, field_at, Some(&mut server))?,
            (Some(o), Some(p)) => {
                let mut first: HashMap<&Value, usize> = map_with(o.len());
                for (i, v) in o.iter().enumerate() {
                    first.entry(owned_key(v, mk, field_at)?).or_insert(i);
                }
                for v in p {
                    server.push(first.get(key_of(v, field_at)?).copied());
                }
                p.to_vec()
            }
            (None, None) => continue,
        };
        // The common case, kubectl's own patches: the directive lists the merged list's keys in
        // the order they already have, and the keys are unique (ranked by their own position).
        let mut identity = order.len() == merged.len() && server.iter().enumerate().all(|(i, r)| *r == Some(i));
        if identity {
            for (o, m) in order.iter().zip(&merged) {
                if key_of(o, field_at)? != owned_key(m, mk, field_at)? || (mk.is_some() && is_delete_item(m)) {
                    identity = false;
                    break;
                }
            }
        }
        if identity {
            edit.set(field, Value::Array(merged));
            continue;
        }
        let mut order_first: HashMap<&Value, usize> = map_with(order.len());
        for (i, v) in order.iter().enumerate() {
            order_first.entry(key_of(v, field_at.index(i))?).or_insert(i);
        }
        let mut ranks = Vec::with_capacity(merged.len());
        let mut sorted = true;
        for value in &merged {
            let order = order_first.get(owned_key(value, mk, field_at)?).copied();
            let delete = mk.is_some() && is_delete_item(value);
            sorted &= !delete
                && order.is_some()
                && match ranks.last() {
                    Some((last, _)) => *last < order,
                    None => true,
                };
            ranks.push((order, delete));
        }
        // Every item listed, in the directive's order: the ordering is the identity.
        if sorted {
            edit.set(field, Value::Array(merged));
            continue;
        }
        let items = merged
            .into_iter()
            .zip(server)
            .zip(ranks)
            .map(|((value, server), (order, delete))| Ranked { value, server, order, delete })
            .collect();
        let out = normalize_element_order(items);
        edit.set(field, Value::Array(out.into_iter().map(|r| r.value).collect()));
    }
    Ok(merged_fields)
}

/// The key of an item of the merged list: its merge key, or the item itself for scalars.
pub(super) fn owned_key<'v>(v: &'v Value, mk: Option<&str>, at: At<'_>) -> Result<&'v Value> {
    match mk {
        Some(mk) => item_key(v, mk, at),
        None => Ok(v),
    }
}

/// Each item's first position in `list` by key (`index` over the live list).
pub(super) fn first_ranks(list: &[Value], mk: Option<&str>, at: At<'_>) -> Result<Vec<Option<usize>>> {
    let mut first: HashMap<&Value, usize> = map_with(list.len());
    let mut out = Vec::with_capacity(list.len());
    for (i, v) in list.iter().enumerate() {
        out.push(Some(*first.entry(owned_key(v, mk, at)?).or_insert(i)));
    }
    Ok(out)
}

pub(super) fn as_list<'v>(v: Option<&'v Value>, at: At<'_>) -> Result<Option<&'v [Value]>> {
    match v {
        None => Ok(None),
        Some(Value::Array(a)) => Ok(Some(a.as_slice())),
        Some(other) => Err(at_error(K::TypeMismatch, at, format!("expected a list, found {other}"))),
    }
}

/// Checks that the patch list's items appear in `$setElementOrder` in the same relative order
/// (`validatePatchWithSetOrderList`); deletions and other directive items are not checked.
pub(super) fn validate_order(patch_list: &[Value], order: &[Value], mk: Option<&str>, at: At<'_>) -> Result<()> {
    if order.is_empty() || patch_list.is_empty() {
        return Ok(());
    }
    let items: Vec<&Value> = match mk {
        Some(_) => {
            let mut out = Vec::with_capacity(patch_list.len());
            for (i, v) in patch_list.iter().enumerate() {
                if !v.is_object() {
                    return Err(at_error(K::TypeMismatch, at.index(i), format!("expected a list of objects, found {v}")));
                }
                if !is_delete_item(v) {
                    out.push(v);
                }
            }
            out
        }
        None => patch_list.iter().collect(),
    };
    let (mut pi, mut oi) = (0, 0);
    while pi < items.len() && oi < order.len() {
        if items[pi].get(DIRECTIVE).is_some() {
            pi += 1;
            continue;
        }
        let equal = match mk {
            None => items[pi] == &order[oi],
            Some(mk) => item_key(items[pi], mk, at)? == item_key(&order[oi], mk, at.index(oi))?,
        };
        if equal {
            pi += 1;
        }
        oi += 1;
    }
    if pi < items.len() {
        return Err(at_error(K::InvalidDirective, at, format!("the order in the patch list doesn't match the {SET_ELEMENT_ORDER} list")));
    }
    Ok(())
}
