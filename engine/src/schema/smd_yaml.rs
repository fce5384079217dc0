//! Loader for structured-merge-diff's own schema YAML (the `typed.NewParser` format).

use super::{Atom, ElementRelationship, List, Map, Scalar, Schema, StructField, TypeDef, TypeRef};
use crate::{Error, Result};
use serde_json::Value;
use std::sync::Arc;

/// Parses a schema in structured-merge-diff's YAML format:
/// `types: [{name, scalar|list|map}]`, type references as `namedType: X` or an inline atom.
///
/// # Errors
/// [`Error::Schema`] naming the offending place when the document is not YAML or does not
/// follow the format (unknown scalar kind, unknown element relationship, a list without one).
pub fn parse_smd_yaml(text: &str) -> Result<Schema> {
    let doc: Value = serde_yaml::from_str(text).map_err(|e| Error::Schema { path: "document".into(), reason: e.to_string() })?;
    let types = match doc.get("types") {
        Some(Value::Array(a)) => a,
        Some(Value::Null) | None => return Ok(Schema::new(Vec::new())),
        Some(_) => return Err(err("types", "must be a list")),
    };
    let mut out = Vec::with_capacity(types.len());
    for (i, t) in types.iter().enumerate() {
        let path = format!("types[{i}]");
        let name = t.get("name").and_then(Value::as_str).ok_or_else(|| err(&path, "missing name"))?;
        let atom = parse_atom(t, &format!("types[{name}]"))?;
        out.push(TypeDef { name: name.to_string(), atom });
    }
    Ok(Schema::new(out))
}

fn err(path: &str, reason: &str) -> Error {
    Error::Schema { path: path.to_string(), reason: reason.to_string() }
}

fn parse_atom(v: &Value, path: &str) -> Result<Atom> {
    let mut atom = Atom::default();
    if let Some(s) = v.get("scalar") {
        atom.scalar = Some(match s.as_str() {
            Some("numeric") => Scalar::Numeric,
            Some("string") => Scalar::String,
            Some("boolean") => Scalar::Boolean,
            Some("untyped") => Scalar::Untyped,
            _ => return Err(err(&format!("{path}.scalar"), &format!("unknown scalar kind {s}"))),
        });
    }
    if let Some(l) = v.get("list") {
        let p = format!("{path}.list");
        let element_type = parse_ref(l.get("elementType"), &format!("{p}.elementType"))?;
        // structured-merge-diff accepts a list with no (or an unknown) relationship and then
        // identifies its items by position.
        let relationship = parse_relationship(l.get("elementRelationship").and_then(Value::as_str).unwrap_or(""));
        let keys = match l.get("keys") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a
                .iter()
                .map(|k| k.as_str().map(str::to_string).ok_or_else(|| err(&format!("{p}.keys"), "keys must be strings")))
                .collect::<Result<_>>()?,
            Some(_) => return Err(err(&format!("{p}.keys"), "must be a list")),
        };
        atom.list = Some(List { element_type, relationship, keys: keys.into_iter().map(Into::into).collect() });
    }
    if let Some(m) = v.get("map") {
        let p = format!("{path}.map");
        let mut fields = Vec::new();
        if let Some(fs) = m.get("fields") {
            let fs = fs.as_array().ok_or_else(|| err(&format!("{p}.fields"), "must be a list"))?;
            for (i, f) in fs.iter().enumerate() {
                let fp = format!("{p}.fields[{i}]");
                let name = f.get("name").and_then(Value::as_str).ok_or_else(|| err(&fp, "missing name"))?;
                let ty = parse_ref(f.get("type"), &format!("{fp}.type"))?;
                let default = f.get("default").filter(|d| !d.is_null()).cloned();
                fields.push(StructField { default, ..StructField::new(name, ty) });
            }
        }
        let element_type = parse_ref(m.get("elementType"), &format!("{p}.elementType"))?;
        let relationship = parse_relationship(m.get("elementRelationship").and_then(Value::as_str).unwrap_or(""));
        atom.map = Some(Map::new(fields, element_type, relationship));
    }
    Ok(atom)
}

/// `atomic` and `associative` are the relationships with a meaning of their own; anything else
/// (`separable`, `granular`, nothing) is separable, as structured-merge-diff treats it.
fn parse_relationship(r: &str) -> ElementRelationship {
    match r {
        "atomic" => ElementRelationship::Atomic,
        "associative" => ElementRelationship::Associative,
        _ => ElementRelationship::Separable,
    }
}

fn parse_ref(v: Option<&Value>, path: &str) -> Result<TypeRef> {
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return Ok(TypeRef::Empty);
    };
    if let Some(n) = v.get("namedType").and_then(Value::as_str) {
        return Ok(TypeRef::Named(n.to_string(), None));
    }
    let atom = parse_atom(v, path)?;
    if atom.scalar.is_none() && atom.list.is_none() && atom.map.is_none() {
        return Ok(TypeRef::Empty);
    }
    Ok(TypeRef::Inline(Arc::new(atom)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_named_and_inline_types() {
        let s = parse_smd_yaml(
            "types:\n- name: root\n  map:\n    fields:\n    - name: a\n      type:\n        scalar: string\n    - name: l\n      type:\n        list:\n          elementType:\n            namedType: item\n          elementRelationship: associative\n          keys: [name]\n- name: item\n  map:\n    fields:\n    - name: name\n      type:\n        scalar: string\n",
        )
        .unwrap();
        let root = s.named("root").unwrap();
        let m = s.resolve(&root).unwrap().map.as_ref().unwrap();
        let l = s.resolve(&m.find_field("l").unwrap().ty).unwrap().list.as_ref().unwrap();
        assert_eq!(l.keys, vec![fieldstore_codec::fieldpath::Name::from("name")]);
        assert!(s.resolve(&l.element_type).unwrap().map.is_some());
    }

    #[test]
    fn unknown_relationship_is_separable() {
        let s =
            parse_smd_yaml("types:\n- name: r\n  list:\n    elementType:\n      scalar: string\n    elementRelationship: weird\n").unwrap();
        let l = s.resolve(&s.named("r").unwrap()).unwrap().list.as_ref().unwrap().relationship;
        assert_eq!(l, ElementRelationship::Separable);
    }

    #[test]
    fn rejects_unknown_scalar() {
        let e = parse_smd_yaml("types:\n- name: r\n  scalar: text\n");
        assert!(matches!(e, Err(Error::Schema { .. })));
    }
}
