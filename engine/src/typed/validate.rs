//! Validation of a value against its type.

use super::{deduce, invalid_atom, item_key, kind_name, resolve, validate_scalar, Kind, ValidationErrors};
use crate::schema::{ElementRelationship, Schema, TypeRef};
use fieldstore_codec::PathElement;
use serde_json::Value;
type HashSet<K> = std::collections::HashSet<K, ahash::RandomState>;

/// Checks that `v` conforms to `tr`: scalar kinds, declared fields, well-formed list items, and
/// no duplicate keys in map lists or duplicate values in sets (atomic lists may repeat items).
///
/// # Errors
/// Every problem found, each at its path.
pub fn validate(schema: &Schema, tr: &TypeRef, v: &Value) -> Result<(), ValidationErrors> {
    let errs = node(schema, tr, v);
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs)
    }
}

fn node(schema: &Schema, tr: &TypeRef, v: &Value) -> ValidationErrors {
    let atom = match resolve(schema, tr) {
        Ok(a) => a,
        Err(e) => return e,
    };
    match deduce(atom, Some(v)) {
        Kind::Scalar(s) => validate_scalar(s, Some(v), "").err().unwrap_or_default(),
        Kind::List(list) => {
            let items = match v {
                Value::Null => return ValidationErrors::default(),
                Value::Array(a) => a,
                other => return ValidationErrors::one(format!("expected list, got {}", kind_name(other))),
            };
            let mut errs = ValidationErrors::default();
            let associative = list.relationship == ElementRelationship::Associative;
            let mut seen: HashSet<super::ItemKey<'_>> = HashSet::default();
            for (i, item) in items.iter().enumerate() {
                let key = match item_key(schema, list, i, item) {
                    Ok(k) => k,
                    Err(e) => {
                        errs.extend(ValidationErrors::one(format!("element {i}: {e}")));
                        return errs;
                    }
                };
                let child = node(schema, &list.element_type, item);
                if !child.is_empty() {
                    errs.extend(child.prefixed(&key.to_pe(list)));
                }
                if associative && !seen.insert(key.clone()) {
                    errs.extend(ValidationErrors::one(format!("duplicate entries for key {}", key.to_pe(list))));
                }
            }
            errs
        }
        Kind::Map(map) => {
            let m = match v {
                Value::Null => return ValidationErrors::default(),
                Value::Object(m) => m,
                other => return ValidationErrors::one(format!("expected map, got {}", kind_name(other))),
            };
            let mut errs = ValidationErrors::default();
            for (k, val) in m {
                let ty = match map.find_field(k) {
                    Some(f) => &f.ty,
                    None if map.element_type.is_empty() => {
                        errs.extend(ValidationErrors::one("field not declared in schema").prefixed(&PathElement::field(k.as_str())));
                        return errs;
                    }
                    None => &map.element_type,
                };
                let e = node(schema, ty, val);
                if !e.is_empty() {
                    errs.extend(e.prefixed(&PathElement::field(k.as_str())));
                }
            }
            errs
        }
        Kind::Invalid => invalid_atom(tr),
    }
}
