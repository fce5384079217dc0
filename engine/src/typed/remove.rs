//! Removing a set of fields from a value (structured-merge-diff's `RemoveItems`).

use super::{deduce, list_item_pe, Kind};
use crate::schema::{ElementRelationship, Schema, TypeRef};
use fieldstore_codec::{PathElement, Set};
use serde_json::Value;

/// `v` without the fields in `to_remove` (a member removes its whole subtree).
///
/// Like structured-merge-diff, a container that ends up empty becomes `null` rather than
/// disappearing from its parent, and an empty result at the root is `null`. That is how a struct
/// emptied by pruning survives as `"spec": null` while some manager still owns it.
pub fn remove_items(schema: &Schema, tr: &TypeRef, v: &Value, to_remove: &Set) -> Value {
    node(schema, tr, v, to_remove).unwrap_or(Value::Null)
}

fn node(schema: &Schema, tr: &TypeRef, v: &Value, to_remove: &Set) -> Option<Value> {
    let atom = schema.resolve(tr)?;
    match deduce(atom, Some(v)) {
        Kind::Scalar(_) => Some(v.clone()),
        Kind::List(list) => {
            let Value::Array(items) = v else { return None };
            if items.is_empty() || list.relationship == ElementRelationship::Atomic {
                return None;
            }
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                // Items whose key cannot be computed were rejected by validation; keep them as is.
                let pe = list_item_pe(schema, list, i, item).unwrap_or(PathElement::Index(i as i64));
                if to_remove.has_member(&pe) {
                    continue;
                }
                match to_remove.child(&pe).filter(|s| !s.is_empty()) {
                    Some(sub) => out.push(node(schema, &list.element_type, item, sub).unwrap_or(Value::Null)),
                    None => out.push(item.clone()),
                }
            }
            (!out.is_empty()).then_some(Value::Array(out))
        }
        Kind::Map(map) => {
            let Value::Object(m) = v else { return None };
            if m.is_empty() || map.relationship == ElementRelationship::Atomic {
                return None;
            }
            let mut out = serde_json::Map::new();
            for (k, val) in m {
                let pe = map.field_element(k);
                if to_remove.has_member(&pe) {
                    continue;
                }
                match to_remove.child(&pe).filter(|s| !s.is_empty()) {
                    Some(sub) => {
                        out.insert(k.clone(), node(schema, map.entry_type(k), val, sub).unwrap_or(Value::Null));
                    }
                    None => {
                        out.insert(k.clone(), val.clone());
                    }
                }
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        Kind::Invalid => None,
    }
}
