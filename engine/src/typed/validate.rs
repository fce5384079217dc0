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

/// The problems [`validate`] finds in `v` (none: it conforms).
pub(crate) fn node(schema: &Schema, tr: &TypeRef, v: &Value) -> ValidationErrors {
    walk(schema, tr, v, &mut NoCopy)
}

/// A copy of `v`, built while `v` is validated (one read of each subtree instead of two), and
/// the problems found; the copy is meaningful only when there are none.
pub(crate) fn copy(schema: &Schema, tr: &TypeRef, v: &Value) -> (Value, ValidationErrors) {
    let mut c = Copy(Vec::new());
    let errs = walk(schema, tr, v, &mut c);
    (c.0.pop().unwrap_or(Value::Null), errs)
}

/// What a validation walk builds besides its verdict.
trait Out {
    /// A leaf value, or a list item, was validated.
    fn leaf(&mut self, v: &Value);
    /// A container starts (its children follow, then `end`).
    fn start(&mut self, list: bool);
    /// The last child's value belongs to the current map container under `key`.
    fn entry(&mut self, key: &str);
    /// The last child's value is the current list container's next item.
    fn item(&mut self);
}

/// Builds nothing.
struct NoCopy;

impl Out for NoCopy {
    fn leaf(&mut self, _: &Value) {}
    fn start(&mut self, _: bool) {}
    fn entry(&mut self, _: &str) {}
    fn item(&mut self) {}
}

/// Builds a copy on a stack: containers and leaves are pushed, children are folded into their
/// container as soon as they are complete.
struct Copy(Vec<Value>);

impl Copy {
    fn child(&mut self) -> Option<(Value, &mut Value)> {
        let v = self.0.pop()?;
        self.0.last_mut().map(|parent| (v, parent))
    }
}

impl Out for Copy {
    fn leaf(&mut self, v: &Value) {
        self.0.push(v.clone());
    }
    fn start(&mut self, list: bool) {
        self.0.push(if list { Value::Array(Vec::new()) } else { Value::Object(serde_json::Map::new()) });
    }
    fn entry(&mut self, key: &str) {
        if let Some((v, Value::Object(m))) = self.child() {
            m.insert(key.to_string(), v);
        }
    }
    fn item(&mut self) {
        if let Some((v, Value::Array(a))) = self.child() {
            a.push(v);
        }
    }
}

fn walk(schema: &Schema, tr: &TypeRef, v: &Value, out: &mut impl Out) -> ValidationErrors {
    let atom = match resolve(schema, tr) {
        Ok(a) => a,
        Err(e) => return e,
    };
    match deduce(atom, Some(v)) {
        Kind::Scalar(s) => {
            out.leaf(v);
            validate_scalar(s, Some(v), "").err().unwrap_or_default()
        }
        Kind::List(list) => {
            let Value::Array(items) = v else { return not_container(v, "list", out) };
            out.start(true);
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
                // An item is validated, then copied whole while it is in the cache.
                let child = walk(schema, &list.element_type, item, &mut NoCopy);
                out.leaf(item);
                out.item();
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
            let Value::Object(m) = v else { return not_container(v, "map", out) };
            out.start(false);
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
                let e = walk(schema, ty, val, out);
                out.entry(k);
                if !e.is_empty() {
                    errs.extend(e.prefixed(&PathElement::field(k.as_str())));
                }
            }
            errs
        }
        Kind::Invalid => invalid_atom(tr),
    }
}

/// A value of a container type that is not that container: fine when `null` (no value), else
/// the error naming what was `expected`.
fn not_container(v: &Value, expected: &str, out: &mut impl Out) -> ValidationErrors {
    out.leaf(v);
    match v {
        Value::Null => ValidationErrors::default(),
        _ => ValidationErrors::one(format!("expected {expected}, got {}", kind_name(v))),
    }
}
