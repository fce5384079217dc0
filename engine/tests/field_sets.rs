//! The field set of a value, and the check that a value's fields are exactly a given set, on
//! lists large enough to take the paths built for large lists: items in random key order (sorted
//! by key abbreviations, matched against the set in its order), keys that share long prefixes,
//! keys that are prefixes of one another, and numeric keys (looked up by hashing).

use fieldstore_engine::schema::{parse_smd_yaml, Schema};
use fieldstore_engine::{typed, TypeRef};
use proptest::prelude::*;
use serde_json::{json, Value};

const SCHEMA: &str = "types:
- name: root
  map:
    fields:
    - name: items
      type:
        list:
          elementType:
            namedType: item
          elementRelationship: associative
          keys:
          - name
    - name: tags
      type:
        list:
          elementType:
            scalar: string
          elementRelationship: associative
    - name: ports
      type:
        list:
          elementType:
            namedType: port
          elementRelationship: associative
          keys:
          - port
- name: item
  map:
    fields:
    - name: name
      type:
        scalar: string
    - name: value
      type:
        scalar: string
    - name: sub
      type:
        map:
          elementType:
            scalar: string
- name: port
  map:
    fields:
    - name: port
      type:
        scalar: numeric
    - name: proto
      type:
        scalar: string
";

/// Key strings: short, long with a long shared prefix, prefixes of one another, non-ASCII.
fn key_of(n: u32, style: u8) -> String {
    match style % 4 {
        0 => format!("k{n:x}"),
        1 => format!("a-shared-prefix-longer-than-sixteen-bytes-{n}"),
        2 => "ab".repeat((n % 40) as usize + 1) + &n.to_string(),
        _ => format!("ключ-{n}"),
    }
}

fn item(name: &str, v: u8) -> Value {
    match v % 3 {
        0 => json!({"name": name}),
        1 => json!({"name": name, "value": format!("v{v}")}),
        _ => json!({"name": name, "value": "x", "sub": {"a": "1"}}),
    }
}

/// `v` with the items of each list in the order of their path elements (the set's order).
fn sorted_lists(v: &Value) -> Value {
    let mut v = v.clone();
    let sort = |v: &mut Value, f: &str, key: fn(&Value) -> (u64, String)| {
        if let Some(l) = v.get_mut(f).and_then(Value::as_array_mut) {
            l.sort_by_key(key);
        }
    };
    sort(&mut v, "items", |i| (0, i["name"].as_str().unwrap_or_default().to_string()));
    sort(&mut v, "tags", |t| (0, t.as_str().unwrap_or_default().to_string()));
    sort(&mut v, "ports", |p| (p["port"].as_u64().unwrap_or_default(), String::new()));
    v
}

/// A root value with `n` of each list's entries in an order given by `perm`.
fn object(ids: &[u32], style: u8, shape: &[u8]) -> Value {
    let names: Vec<String> = ids.iter().map(|&i| key_of(i, style)).collect();
    let items: Vec<Value> = names.iter().zip(shape.iter().cycle()).map(|(n, &v)| item(n, v)).collect();
    let tags: Vec<Value> = names.iter().map(|n| Value::String(n.clone())).collect();
    let ports: Vec<Value> = ids.iter().map(|&i| json!({"port": i, "proto": "TCP"})).collect();
    json!({"items": items, "tags": tags, "ports": ports})
}

/// Distinct ids in a shuffled order.
fn ids(max: usize) -> impl Strategy<Value = Vec<u32>> {
    prop::collection::btree_set(0u32..5_000, 0..max).prop_map(|s| s.into_iter().collect::<Vec<_>>()).prop_shuffle()
}

fn schema() -> (Schema, TypeRef) {
    let s = parse_smd_yaml(SCHEMA).expect("schema");
    let r = s.named("root").expect("root");
    (s, r)
}

/// One change to an object's fields.
#[derive(Debug, Clone)]
enum Edit {
    None,
    DropItem(usize),
    AddItem(u32),
    RenameItem(usize, u32),
    ChangeShape(usize),
    Shuffle,
    DropTag(usize),
    DropPort(usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        Just(Edit::None),
        any::<usize>().prop_map(Edit::DropItem),
        (5_000u32..6_000).prop_map(Edit::AddItem),
        (any::<usize>(), 5_000u32..6_000).prop_map(|(i, n)| Edit::RenameItem(i, n)),
        any::<usize>().prop_map(Edit::ChangeShape),
        Just(Edit::Shuffle),
        any::<usize>().prop_map(Edit::DropTag),
        any::<usize>().prop_map(Edit::DropPort),
    ]
}

fn apply_edit(v: &mut Value, e: &Edit, style: u8) {
    let list = |v: &mut Value, f: &str| -> Vec<Value> { v[f].as_array().cloned().unwrap_or_default() };
    match *e {
        Edit::None => {}
        Edit::DropItem(i) | Edit::RenameItem(i, _) | Edit::ChangeShape(i) => {
            let mut items = list(v, "items");
            if items.is_empty() {
                return;
            }
            let i = i % items.len();
            match *e {
                Edit::DropItem(_) => {
                    items.remove(i);
                }
                Edit::RenameItem(_, n) => items[i]["name"] = Value::String(key_of(n, style)),
                _ => {
                    let name = items[i]["name"].as_str().unwrap_or_default().to_string();
                    let shape = if items[i].get("sub").is_some() { 0 } else { 2 };
                    items[i] = item(&name, shape);
                }
            }
            v["items"] = Value::Array(items);
        }
        Edit::AddItem(n) => {
            let mut items = list(v, "items");
            items.insert(items.len() / 2, item(&key_of(n, style), 1));
            v["items"] = Value::Array(items);
        }
        Edit::Shuffle => {
            let mut items = list(v, "items");
            items.reverse();
            v["items"] = Value::Array(items);
        }
        Edit::DropTag(i) | Edit::DropPort(i) => {
            let f = if matches!(e, Edit::DropTag(_)) { "tags" } else { "ports" };
            let mut l = list(v, f);
            if !l.is_empty() {
                let i = i % l.len();
                l.remove(i);
                v[f] = Value::Array(l);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// `is_field_set_of(v, s)` says exactly whether `to_field_set(v) == s`, for `s` the set of
    /// the value before an edit (so equal sets with items reordered, and sets one field apart).
    #[test]
    fn is_field_set_of_agrees_with_building_the_set(
        ids in ids(400), style in 0u8..4, shape in prop::collection::vec(0u8..3, 1..5), e in edit(),
    ) {
        let (s, root) = schema();
        let before = object(&ids, style, &shape);
        let set = typed::to_field_set(&s, &root, &before).expect("set of before");
        let mut after = before.clone();
        apply_edit(&mut after, &e, style);
        typed::validate(&s, &root, &after).expect("edited value is valid");
        let built = typed::to_field_set(&s, &root, &after).expect("set of after");
        prop_assert_eq!(typed::is_field_set_of(&s, &root, &after, &set), built == set, "edit {:?}", e);
        prop_assert!(typed::is_field_set_of(&s, &root, &after, &built));
        // The merge's walk tells the same while it merges `after` into a live object (lined up
        // with it, realigned, or all new), or leaves it to `is_field_set_of` (`None`) when it
        // meets multi-field keys out of the set's order (`ports`, in `after`, and in the live
        // objects `before` and `after`, which realign them). With `ports` in the set's order on
        // both sides, it always tells.
        // Items out of the set's order (string keys, matched by sorting them) are told too.
        let in_order = sorted_lists(&after);
        let mut items_shuffled = in_order.clone();
        items_shuffled["items"] = after["items"].clone();
        let other = json!({"items": [item(&key_of(7_000, style), 0)]});
        let lives = [(&before, false), (&after, false), (&in_order, true), (&items_shuffled, true), (&json!({}), true), (&other, true)];
        for (live, told) in lives {
            for sets in [false, true] {
                for (owned, want) in [(&set, built == set), (&built, true)] {
                    for config in [&after, &in_order, &items_shuffled] {
                        let opts = typed::MergeOptions { sets, validate: true, owned: Some(owned), defer: false };
                        let o = typed::merge_and_compare_with(&s, &root, live, config, opts).expect("merge");
                        // Deferring the config's parts: the same verdict, and once they are
                        // moved in, the same merged value.
                        let d = typed::merge_and_compare_with(&s, &root, live, config, typed::MergeOptions { defer: true, ..opts }).expect("merge");
                        prop_assert_eq!(d.owned, o.owned);
                        prop_assert_eq!(d.same, o.same);
                        if !o.same {
                            let mut filled = d.value.clone().unwrap_or(Value::Null);
                            if let Some(f) = d.fill.clone() {
                                f.put(&mut filled, &mut config.clone(), true);
                            }
                            prop_assert_eq!(Some(&filled), o.value.as_ref(), "deferred merge of {} into {}", config, live);
                        }
                        if told && config != &after {
                            prop_assert_eq!(o.owned, Some(want), "edit {:?}, live {}, sets {}", e, live, sets);
                        } else {
                            prop_assert!(o.owned.is_none_or(|o| o == want), "edit {:?}, live {}, sets {}", e, live, sets);
                        }
                    }
                }
            }
        }
    }

    /// The set of a value does not depend on the order of its list items.
    #[test]
    fn field_sets_do_not_depend_on_item_order(ids in ids(400), style in 0u8..4) {
        let (s, root) = schema();
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        let a = typed::to_field_set(&s, &root, &object(&ids, style, &[1])).expect("set");
        let b = typed::to_field_set(&s, &root, &object(&sorted, style, &[1])).expect("set");
        prop_assert_eq!(a, b);
    }
}

/// The merge's walk matches each list member once (duplicate items in a config nobody
/// validated cannot both match one member), and every child set of a list, including one for
/// an item the set does not hold as a member (what is left after another manager took the
/// item itself).
#[test]
fn the_merge_walk_matches_each_member_once_and_every_child_set() {
    let (s, root) = schema();
    let owned = |live: &Value, config: &Value, set: &fieldstore_codec::Set| {
        let opts = typed::MergeOptions { sets: true, validate: false, owned: Some(set), defer: false };
        typed::merge_and_compare_with(&s, &root, live, config, opts).expect("merge").owned
    };
    let two = typed::to_field_set(&s, &root, &json!({"items": [item("a", 0), item("b", 0)]})).expect("set");
    let dup = json!({"items": [item("a", 0), item("a", 0)]});
    assert!(!typed::is_field_set_of(&s, &root, &dup, &two));
    assert_ne!(owned(&dup, &dup, &two), Some(true), "lined up with equally duplicated live items");

    let config = json!({"items": [item("a", 1)]});
    let set = typed::to_field_set(&s, &root, &config).expect("set");
    let orphan = fieldstore_codec::fields_v1::from_json(br#"{"f:items":{"k:{\"name\":\"z\"}":{"f:value":{}}}}"#).expect("FieldsV1");
    let with_orphan = set.union(&orphan);
    assert!(!typed::is_field_set_of(&s, &root, &config, &with_orphan));
    for live in [&config, &json!({}), &json!({"items": [item("z", 1), item("a", 1)]})] {
        assert_eq!(owned(live, &config, &with_orphan), Some(false), "live {live}");
        assert_eq!(owned(live, &config, &set), Some(true), "live {live}");
    }
}
