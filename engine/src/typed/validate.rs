//! Validation of a value against its type.

use super::{deduce, invalid_atom, kind_name, list_item_pe, resolve, validate_scalar, Kind, ValidationErrors};
use crate::schema::{ElementRelationship, Schema, TypeRef};
use fieldstore_codec::PathElement;
use serde_json::Value;
use std::collections::HashSet;

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
            let mut seen: HashSet<PathElement> = HashSet::new();
            for (i, item) in items.iter().enumerate() {
                let pe = if list.relationship != ElementRelationship::Associative {
                    PathElement::Index(i as i64)
                } else {
                    match list_item_pe(schema, list, i, item) {
                        Ok(pe) => pe,
                        Err(e) => {
                            errs.extend(ValidationErrors::one(format!("element {i}: {e}")));
                            return errs;
                        }
                    }
                };
                let child = node(schema, &list.element_type, item).prefixed(&pe);
                if !seen.insert(pe.clone()) {
                    errs.extend(ValidationErrors::one(format!("duplicate entries for key {pe}")));
                }
                errs.extend(child);
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
                errs.extend(node(schema, ty, val).prefixed(&PathElement::field(k.as_str())));
            }
            errs
        }
        Kind::Invalid => invalid_atom(tr),
    }
}
