//! The set of fields a value holds (`ToFieldSet`), and the named-fields closure used by pruning.

use super::ItemKey;
use super::{bare, deduce, invalid_atom, list_item_pe, resolve, Kind, ValidationErrors};
use crate::schema::{ElementRelationship, List, Schema, TypeRef};
use fieldstore_codec::fieldpath::Name;
use fieldstore_codec::{PathElement, Set};
use serde_json::Value;

/// The fields `v` sets, as an applier of `v` would own them: scalars, atomic containers, empty
/// maps and nulls are leaves; map-list and set items are members with their fields below; a
/// struct field holding a non-empty struct is not a member, only its children are; an empty
/// granular list owns nothing.
///
/// # Errors
/// Malformed list items or schema errors, at their paths.
pub fn to_field_set(schema: &Schema, tr: &TypeRef, v: &Value) -> Result<Set, ValidationErrors> {
    node(schema, tr, v).map(|(_, s)| s)
}

/// Returns (whether the node itself is a leaf member, the set of its children).
fn node(schema: &Schema, tr: &TypeRef, v: &Value) -> Result<(bool, Set), ValidationErrors> {
    let atom = resolve(schema, tr)?;
    match deduce(atom, Some(v)) {
        Kind::Scalar(_) => Ok((true, Set::new())),
        Kind::List(list) => {
            if list.relationship == ElementRelationship::Atomic {
                return Ok((true, Set::new()));
            }
            let Value::Array(items) = v else { return Ok((false, Set::new())) };
            let mut members = Vec::with_capacity(items.len());
            let mut children: Vec<(PathElement, Set)> = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let pe = list_item_pe(schema, list, i, item).map_err(|e| ValidationErrors::one(format!("element {i}: {e}")))?;
                // Items owning the same fields share one node (less memory, and FieldsV1 written
                // once for them all): an item owning exactly those of the item before it is
                // found so without building its set.
                let child = match children.last().map(|(_, p)| p).filter(|p| same_node(schema, &list.element_type, item, p) == Some(false))
                {
                    Some(previous) => previous.clone(),
                    None => node(schema, &list.element_type, item).map_err(|e| e.prefixed(&pe))?.1,
                };
                if !child.is_empty() {
                    children.push((pe.clone(), child));
                }
                members.push(pe);
            }
            Ok((false, Set::from_parts(members, children)))
        }
        Kind::Map(map) => {
            if map.relationship == ElementRelationship::Atomic {
                return Ok((true, Set::new()));
            }
            let Value::Object(m) = v else { return Ok((false, Set::new())) };
            let mut members = Vec::new();
            let mut children = Vec::new();
            for (k, val) in m {
                let field = map.find_field(k);
                let ty = field.map(|f| &f.ty).unwrap_or(&map.element_type);
                let pe = PathElement::FieldName(field.map_or_else(|| k.as_str().into(), |f| f.name.clone()));
                let (leaf, child) = node(schema, ty, val).map_err(|e| e.prefixed(&pe))?;
                let empty_map = matches!(val, Value::Object(o) if o.is_empty());
                let member = leaf || val.is_null() || empty_map || field.is_none();
                if !child.is_empty() {
                    children.push((pe.clone(), child));
                }
                if member {
                    members.push(pe);
                }
            }
            // Map keys arrive sorted, so this sort is a linear check.
            Ok((false, Set::from_parts(members, children)))
        }
        Kind::Invalid => Err(invalid_atom(tr)),
    }
}

/// `set` plus, at every level, the declared struct fields that have children in `set` as members
/// themselves (structured-merge-diff's `EnsureNamedFieldsAreMembers`), so that removing such a
/// set removes the struct too unless someone still owns part of it.
pub fn ensure_named_fields_are_members(schema: &Schema, tr: &TypeRef, set: &Set) -> Set {
    let atom = schema.resolve(tr);
    let map = atom.and_then(|a| a.map.as_ref());
    let list = atom.and_then(|a| a.list.as_ref());
    let mut members: Vec<PathElement> = set.members().to_vec();
    let mut children = Vec::with_capacity(set.children().len());
    for (pe, child) in set.children() {
        let mut child_tr = &TypeRef::Empty;
        match pe {
            PathElement::FieldName(name) => {
                if let Some(m) = map {
                    if m.find_field(name).is_some() {
                        members.push(pe.clone());
                    }
                    child_tr = m.entry_type(name);
                }
            }
            PathElement::Key(_) => {
                if let Some(l) = list {
                    child_tr = &l.element_type;
                }
            }
            _ => {}
        }
        children.push((pe.clone(), ensure_named_fields_are_members(schema, child_tr, child)));
    }
    Set::from_parts(members, children)
}

/// Whether [`to_field_set`] of `v` would be exactly `set`, decided without building it: the
/// check that lets an applier re-applying the same fields keep its set (no allocation, no
/// pruning), which is what most applies are.
pub fn is_field_set_of(schema: &Schema, tr: &TypeRef, v: &Value, set: &Set) -> bool {
    same_node(schema, tr, v, set).is_some()
}

type HashMap<K, V> = std::collections::HashMap<K, V, ahash::RandomState>;

/// The members and children of a list's set, by the [`ItemKey`] each path element stands for.
fn index_by_key<'a>(list: &List, set: &'a Set) -> (HashMap<ItemKey<'a>, ()>, HashMap<ItemKey<'a>, usize>) {
    let members = set.members().iter().filter_map(|pe| pe_key(list, pe)).map(|k| (k, ())).collect();
    let children = set.children().iter().enumerate().filter_map(|(j, (pe, _))| pe_key(list, pe).map(|k| (k, j))).collect();
    (members, children)
}

/// The [`ItemKey`] a list item's path element stands for, borrowing its values.
fn pe_key<'a>(list: &List, pe: &'a PathElement) -> Option<ItemKey<'a>> {
    match pe {
        PathElement::Index(i) => usize::try_from(*i).ok().map(ItemKey::Index),
        PathElement::Value(v) if list.keys.is_empty() => Some(ItemKey::One(v)),
        PathElement::Key(fields) if !list.keys.is_empty() && fields.len() == list.keys.len() => {
            let value = |name: &Name| fields.iter().find(|(n, _)| n == name).map(|(_, v)| v);
            if list.keys.len() == 1 {
                value(&list.keys[0]).map(ItemKey::One)
            } else {
                list.keys.iter().map(value).collect::<Option<Vec<_>>>().map(ItemKey::Many)
            }
        }
        _ => None,
    }
}

/// What [`join_sorted`] found.
pub(super) enum Join {
    /// The items are the members; for each item, the position of its child set in the set's
    /// children (`usize::MAX` when it has none).
    Matched(Vec<usize>),
    /// The items are not the members.
    Mismatch,
    /// The keys are not single strings; the caller looks items up by hashing instead.
    Unsupported,
}

/// Matches `items` against the members of `set` from `mc` on and its children from `cc` on, by
/// sorting the items' keys (one string per item) by abbreviation and walking the set in its
/// order. A large list in random order then reads the set once in order and the items' keys
/// once in theirs, where a hash index would chase a pointer into the set for every item.
pub(super) fn join_sorted(schema: &Schema, list: &List, items: &[Value], set: &Set, mc: usize, cc: usize) -> Join {
    let (members, children) = (&set.members()[mc.min(set.members().len())..], &set.children()[cc.min(set.children().len())..]);
    if members.len() != items.len() || u32::try_from(items.len()).is_err() {
        return Join::Mismatch;
    }
    // (abbreviation, item), and each item's key string.
    let mut order: Vec<(u128, u32)> = Vec::with_capacity(items.len());
    let mut strs: Vec<&str> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let Ok(key) = super::item_key(schema, list, i, item) else { return Join::Mismatch };
        let ItemKey::One(Value::String(s)) = key else { return Join::Unsupported };
        order.push((fieldstore_codec::fieldpath::abbreviation(s.as_bytes()), i as u32));
        strs.push(s);
    }
    order.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| strs[a.1 as usize].cmp(strs[b.1 as usize])));
    let mut child_of = vec![usize::MAX; items.len()];
    let mut c = 0;
    for ((abbr, i), pe) in order.into_iter().zip(members) {
        let s = strs[i as usize];
        let member = match pe {
            PathElement::Key(fields) if list.keys.len() == 1 => match &fields[..] {
                [(n, Value::String(w))] if *n == list.keys[0] => w,
                _ => return Join::Mismatch,
            },
            PathElement::Value(Value::String(w)) if list.keys.is_empty() => w,
            _ => return Join::Mismatch,
        };
        // Equal abbreviations of equal lengths up to 16 bytes are equal strings: the item's key
        // is not read again.
        let same = member.len() == s.len()
            && fieldstore_codec::fieldpath::abbreviation(member.as_bytes()) == abbr
            && (s.len() <= 16 || member == s);
        if !same {
            return Join::Mismatch;
        }
        if children.get(c).is_some_and(|(cpe, _)| cpe == pe) {
            child_of[i as usize] = cc + c;
            c += 1;
        }
    }
    Join::Matched(child_of)
}

static EMPTY: std::sync::OnceLock<Set> = std::sync::OnceLock::new();

pub(super) fn empty() -> &'static Set {
    EMPTY.get_or_init(Set::new)
}

/// `Some(leaf)` when the children set of `v` equals `set`, `leaf` telling whether the node is
/// itself a leaf member; `None` at the first difference.
pub(super) fn same_node(schema: &Schema, tr: &TypeRef, v: &Value, set: &Set) -> Option<bool> {
    let atom = resolve(schema, tr).ok()?;
    match deduce(atom, Some(v)) {
        Kind::Scalar(_) => bare(set).then_some(true),
        Kind::List(list) => {
            if list.relationship == ElementRelationship::Atomic {
                return bare(set).then_some(true);
            }
            let Value::Array(items) = v else { return bare(set).then_some(false) };
            if set.members().len() != items.len() {
                return None;
            }
            let mut with_children = 0;
            // Cursors into the sorted set: items in key order are found where the last one ended.
            // At the first item out of order, the set's elements are indexed by key instead: a
            // binary search per item would miss the cache at every step on large lists.
            let (mut mc, mut cc) = (0usize, 0usize);
            let mut index: Option<(HashMap<ItemKey<'_>, ()>, HashMap<ItemKey<'_>, usize>)> = None;
            for (i, item) in items.iter().enumerate() {
                let key = super::item_key(schema, list, i, item).ok()?;
                let find = |pe: &PathElement| super::cmp_item_pe(list, &key, pe);
                let in_order = index.is_none() && set.members().get(mc).is_some_and(|pe| find(pe).is_eq());
                let child = if in_order {
                    mc += 1;
                    match set.children().get(cc) {
                        Some((pe, c)) if find(pe).is_eq() => {
                            cc += 1;
                            with_children += 1;
                            c
                        }
                        _ => empty(),
                    }
                } else {
                    if index.is_none() {
                        // The rest of the items must be exactly the rest of the members.
                        match join_sorted(schema, list, &items[i..], set, mc, cc) {
                            Join::Matched(child_of) => {
                                for (item, j) in items[i..].iter().zip(child_of) {
                                    let child = match set.children().get(j) {
                                        Some((_, c)) => {
                                            with_children += 1;
                                            c
                                        }
                                        None => empty(),
                                    };
                                    same_node(schema, &list.element_type, item, child)?;
                                }
                                return (with_children == set.children().len()).then_some(false);
                            }
                            Join::Mismatch => return None,
                            Join::Unsupported => {}
                        }
                    }
                    let (members, children) = index.get_or_insert_with(|| index_by_key(list, set));
                    members.get(&key)?;
                    match children.get(&key) {
                        Some(&j) => {
                            with_children += 1;
                            &set.children()[j].1
                        }
                        None => empty(),
                    }
                };
                same_node(schema, &list.element_type, item, child)?;
            }
            (with_children == set.children().len()).then_some(false)
        }
        Kind::Map(map) => {
            if map.relationship == ElementRelationship::Atomic {
                return bare(set).then_some(true);
            }
            let Value::Object(m) = v else { return bare(set).then_some(false) };
            let (members, children) = (set.members(), set.children());
            let (mut mi, mut ci) = (0, 0);
            for (k, val) in m {
                let field = map.find_field(k);
                let ty = field.map(|f| &f.ty).unwrap_or(&map.element_type);
                let child = match children.get(ci) {
                    Some((PathElement::FieldName(n), c)) if **n == **k => {
                        ci += 1;
                        c
                    }
                    _ => empty(),
                };
                let leaf = same_node(schema, ty, val, child)?;
                let empty_map = matches!(val, Value::Object(o) if o.is_empty());
                if leaf || val.is_null() || empty_map || field.is_none() {
                    match members.get(mi) {
                        Some(PathElement::FieldName(n)) if **n == **k => mi += 1,
                        _ => return None,
                    }
                }
            }
            (mi == members.len() && ci == children.len()).then_some(false)
        }
        Kind::Invalid => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::parse_smd_yaml;
    use serde_json::json;

    #[test]
    fn list_items_owning_the_fields_of_the_item_before_share_its_node() {
        let schema = parse_smd_yaml(
            "types:\n- name: root\n  map:\n    fields:\n    - name: items\n      type:\n        list:\n          elementType:\n            namedType: item\n          elementRelationship: associative\n          keys:\n          - name\n- name: item\n  map:\n    fields:\n    - name: name\n      type:\n        scalar: string\n    - name: image\n      type:\n        scalar: string\n",
        )
        .unwrap();
        let root = schema.named("root").unwrap();
        let v = json!({"items": [
            {"name": "a", "image": "x"}, {"name": "b", "image": "y"}, {"name": "c"}, {"name": "d", "image": "z"}, {"name": "e", "image": "z"},
        ]});
        let set = to_field_set(&schema, &root, &v).unwrap();
        let items = set.children()[0].1.children();
        assert_eq!(items.len(), 5);
        assert!(items[1].1.is_same_node(&items[0].1));
        assert!(!items[2].1.is_same_node(&items[1].1) && items[2].1 != items[1].1);
        assert!(!items[3].1.is_same_node(&items[2].1) && items[3].1 == items[0].1);
        assert!(items[4].1.is_same_node(&items[3].1));
    }
}
