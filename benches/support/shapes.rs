//! The object shapes shared by the apply and patch benches and `examples/ssa_cost.rs`: the same
//! schema and lists as the structured-merge-diff oracle's bench, so their figures compare.
//! A struct root whose `spec.items` is a map list keyed by `name` (items of 5 scalars) and
//! `data`, a granular string map.
#![allow(dead_code)]

use serde_json::{json, Value};

/// The bench schema, in structured-merge-diff YAML; root type `root`.
pub const SCHEMA: &str = "types:
- name: root
  map:
    fields:
    - name: spec
      type:
        namedType: spec
    - name: data
      type:
        map:
          elementType:
            scalar: string
- name: spec
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
- name: item
  map:
    fields:
    - name: name
      type:
        scalar: string
    - name: image
      type:
        scalar: string
    - name: value
      type:
        scalar: string
    - name: port
      type:
        scalar: numeric
    - name: flag
      type:
        scalar: boolean
";

/// How the N items or keys are laid out.
#[derive(Clone, Copy, PartialEq)]
pub enum Shape {
    List,
    ListRand,
    Map,
}

impl Shape {
    /// The shape's name in bench ids.
    pub fn name(self) -> &'static str {
        match self {
            Shape::List => "list",
            Shape::ListRand => "listrand",
            Shape::Map => "map",
        }
    }
}

/// The key of item `i` (a permuted one for `ListRand`).
pub fn item_name(shape: Shape, i: usize) -> String {
    if shape == Shape::ListRand {
        // The oracle bench's permutation: a multiplicative hash, unique for i < 2^32.
        format!("item-{:08x}", (i as u32).wrapping_mul(2_654_435_761))
    } else {
        format!("item-{i:06}")
    }
}

/// Item `i` of the list.
pub fn list_item(shape: Shape, i: usize, value: &str) -> Value {
    json!({
        "name": item_name(shape, i),
        "image": format!("registry.example/img-{i}:v1"),
        "value": value,
        "port": 8000 + (i % 1000) as i64,
        "flag": i.is_multiple_of(2),
    })
}

/// The N-item (or N-key) config; item `changed` gets another value.
pub fn config(shape: Shape, n: usize, changed: Option<usize>) -> Value {
    let val = |i: usize| if Some(i) == changed { "CHANGED".to_string() } else { format!("value-{i}") };
    match shape {
        Shape::Map => {
            let data: serde_json::Map<String, Value> = (0..n).map(|i| (format!("key-{i:06}"), Value::String(val(i)))).collect();
            json!({ "data": data })
        }
        _ => json!({ "spec": { "items": (0..n).map(|i| list_item(shape, i, &val(i))).collect::<Vec<_>>() } }),
    }
}

/// A second manager's config: one new item or key.
pub fn second_config(shape: Shape, n: usize) -> Value {
    match shape {
        Shape::Map => json!({ "data": { format!("key-{:06}", n + 1): "from-B" } }),
        _ => json!({ "spec": { "items": [list_item(shape, n + 1, "from-B")] } }),
    }
}

/// `live` with one field of one item changed, as a controller's update.
pub fn updated(shape: Shape, live: &Value, n: usize) -> Value {
    let mut c = live.clone();
    match shape {
        Shape::Map => c["data"][format!("key-{:06}", n / 2)] = json!("controller-set"),
        _ => c["spec"]["items"][n / 2]["image"] = json!("registry.example/controller-set:v2"),
    }
    c
}
