//! Fields a value sets that its type does not declare, found and removed in one walk: what
//! kube-apiserver's decoders do with unknown fields under `fieldValidation=Ignore|Warn` (and
//! report under `Strict`).

use super::{deduce, list_item_pe, resolve, Kind};
use crate::schema::{Schema, TypeRef};
use fieldstore_codec::PathElement;
use serde_json::Value;
use std::fmt::Write as _;

/// Removes from `v` every field its type does not declare, at any depth, and returns their
/// paths as validation prints them (`.spec.containers[name="a"].x`), in the order met.
///
/// What is not undeclared is left alone, even when invalid (a wrong scalar kind, a list item
/// without its key): validation reports those.
pub fn prune_undeclared(schema: &Schema, tr: &TypeRef, v: &mut Value) -> Vec<String> {
    let mut found = Vec::new();
    walk(schema, tr, v, &mut String::new(), &mut found);
    found
}

fn walk(schema: &Schema, tr: &TypeRef, v: &mut Value, at: &mut String, found: &mut Vec<String>) {
    let Ok(atom) = resolve(schema, tr) else { return };
    match deduce(atom, Some(v)) {
        Kind::Scalar(_) | Kind::Invalid => {}
        Kind::List(list) => {
            let Value::Array(items) = v else { return };
            for i in 0..items.len() {
                let Some(item) = items.get_mut(i) else { break };
                let Ok(pe) = list_item_pe(schema, list, i, item) else { return };
                let len = at.len();
                let _ = write!(at, "{pe}");
                walk(schema, &list.element_type, item, at, found);
                at.truncate(len);
            }
        }
        Kind::Map(map) => {
            let Value::Object(m) = v else { return };
            if map.element_type.is_empty() {
                let undeclared: Vec<String> = m.keys().filter(|k| map.find_field(k).is_none()).cloned().collect();
                for k in undeclared {
                    found.push(format!("{at}{}", PathElement::field(k.as_str())));
                    m.remove(&k);
                }
            }
            for (k, val) in m.iter_mut() {
                let ty = map.find_field(k).map_or(&map.element_type, |f| &f.ty);
                let len = at.len();
                let _ = write!(at, "{}", PathElement::field(k.as_str()));
                walk(schema, ty, val, at, found);
                at.truncate(len);
            }
        }
    }
}
