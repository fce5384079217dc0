//! apimachinery's merge of a merging list of objects keyed by `name` (`mergeSlice`,
//! `mergePatchIntoOriginal`), ported naively: linear lookups, Go's stable insertion sort with its
//! comparator, and the live list as a fixed backing array that deletions and appends edit in
//! place, as Go slices do.

use serde_json::{json, Value};

type R<T> = Result<T, ()>;

fn key(v: &Value) -> Option<&Value> {
    v.get("name")
}

/// `index`: the first position whose key equals the item's (a missing key is nil, and nil
/// equals nil).
fn index(list: &[Value], item: &Value) -> Option<usize> {
    list.iter().position(|v| key(v) == key(item))
}

/// `sort.SliceStable` (an insertion sort for these sizes) with `normalizeSliceOrder`'s `less`.
fn normalize_slice_order(to_sort: Vec<Value>, order: &[Value]) -> R<Vec<Value>> {
    if to_sort.iter().chain(order).any(|v| !v.is_object() || key(v).is_none()) {
        return Err(());
    }
    let (mut keep, deletes): (Vec<Value>, Vec<Value>) = to_sort.into_iter().partition(|v| v.get("$patch") != Some(&json!("delete")));
    let less = |a: &Value, b: &Value| match (index(order, a), index(order, b)) {
        (Some(i), Some(j)) => i < j,
        _ => true,
    };
    for i in 1..keep.len() {
        let mut j = i;
        while j > 0 && less(&keep[j], &keep[j - 1]) {
            keep.swap(j, j - 1);
            j -= 1;
        }
    }
    keep.extend(deletes);
    Ok(keep)
}

fn normalize_element_order(patch: Vec<Value>, server_only: Vec<Value>, patch_order: &[Value], server_order: &[Value]) -> R<Vec<Value>> {
    let right = normalize_slice_order(patch, patch_order)?;
    let left = normalize_slice_order(server_only, server_order)?;
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < left.len() && j < right.len() {
        match (index(server_order, &left[i]), index(server_order, &right[j])) {
            (Some(a), Some(b)) if a < b => {
                out.push(left[i].clone());
                i += 1;
            }
            _ => {
                out.push(right[j].clone());
                j += 1;
            }
        }
    }
    out.extend_from_slice(&left[i..]);
    out.extend_from_slice(&right[j..]);
    Ok(out)
}

fn partition(merged: &[Value], by: &[Value]) -> R<(Vec<Value>, Vec<Value>)> {
    let (mut inside, mut outside) = (Vec::new(), Vec::new());
    for v in merged {
        let k = key(v).ok_or(())?;
        if by.iter().any(|p| key(p) == Some(k)) {
            inside.push(v.clone());
        } else {
            outside.push(v.clone());
        }
    }
    Ok((inside, outside))
}

fn merge_item(orig: &Value, patch: &Value) -> Value {
    let mut out = orig.clone();
    for (k, v) in patch.as_object().into_iter().flatten() {
        out[k] = v.clone();
    }
    out
}

/// `mergeSlice` on `arr` (the live list's backing array, edited in place).
pub fn merge_slice(arr: &mut [Value], patch: &[Value]) -> R<Vec<Value>> {
    if arr.is_empty() && patch.is_empty() {
        return Ok(Vec::new());
    }
    let n = arr.len();
    let mut len = n;
    let mut without = Vec::new();
    let mut replace = false;
    for v in patch {
        match v.get("$patch").map(|d| d.as_str()) {
            None => without.push(v.clone()),
            Some(Some("delete")) => {
                let k = key(v).ok_or(())?.clone();
                while let Some(i) = arr[..len].iter().position(|x| key(x) == Some(&k)) {
                    for j in i..len - 1 {
                        arr[j] = arr[j + 1].clone();
                    }
                    len -= 1;
                }
            }
            Some(Some("replace")) => replace = true,
            _ => return Err(()),
        }
    }
    // The slice `original` of mergeSlice, over its array, and what appends make of it.
    let (mut own, server_len, patch2): (Option<Vec<Value>>, usize, Vec<Value>) =
        if replace { (Some(without.clone()), without.len(), Vec::new()) } else { (None, len, without.clone()) };
    let mut cur_len = server_len;
    for v in &patch2 {
        let k = key(v).ok_or(())?;
        let slice: &mut [Value] = match &mut own {
            Some(o) => o.as_mut_slice(),
            None => &mut arr[..cur_len],
        };
        if let Some(i) = slice.iter().position(|x| key(x) == Some(k)) {
            slice[i] = merge_item(&slice[i], v);
        } else {
            match &mut own {
                Some(o) => o.push(v.clone()),
                None if cur_len < n => {
                    arr[cur_len] = v.clone();
                    cur_len += 1;
                }
                None => {
                    let mut o = arr[..cur_len].to_vec();
                    o.push(v.clone());
                    own = Some(o);
                }
            }
        }
    }
    let merged = match &own {
        Some(o) => o.clone(),
        None => arr[..cur_len].to_vec(),
    };
    let server_order: Vec<Value> = if replace { without[..server_len].to_vec() } else { arr[..server_len].to_vec() };
    let (p, s) = partition(&merged, &patch2)?;
    normalize_element_order(p, s, &patch2, &server_order)
}

/// `validatePatchWithSetOrderList`.
fn validate(patch: &[Value], order: &[Value]) -> R<()> {
    if order.is_empty() || patch.is_empty() {
        return Ok(());
    }
    let items: Vec<&Value> = patch.iter().filter(|v| v.get("$patch") != Some(&json!("delete"))).collect();
    let (mut pi, mut oi) = (0, 0);
    while pi < items.len() && oi < order.len() {
        if items[pi].get("$patch").is_some() {
            pi += 1;
            continue;
        }
        let (a, b) = (key(items[pi]).ok_or(())?, key(&order[oi]).ok_or(())?);
        if a == b {
            pi += 1;
        }
        oi += 1;
    }
    if pi < items.len() {
        Err(())
    } else {
        Ok(())
    }
}

/// The list after applying `patch` (a `mergingList` and maybe its `$setElementOrder`) to
/// `live`.
pub fn apply(live: &[Value], patch_list: Option<&[Value]>, order: Option<&[Value]>) -> R<Vec<Value>> {
    let mut arr = live.to_vec();
    let Some(order) = order else {
        return match patch_list {
            Some(p) => merge_slice(&mut arr, p),
            None => Ok(arr),
        };
    };
    validate(patch_list.unwrap_or_default(), order)?;
    if live.is_empty() && patch_list.unwrap_or_default().is_empty() {
        return Err(()); // `sliceElementType` finds no elements.
    }
    let merged = match patch_list {
        Some(p) => merge_slice(&mut arr, p)?,
        None => arr.clone(),
    };
    let (p, s) = partition(&merged, order)?;
    normalize_element_order(p, s, order, &arr)
}
