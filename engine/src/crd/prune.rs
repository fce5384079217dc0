//! Pruning of custom resources (kube-apiserver's structural pruning): fields the schema does not
//! declare are dropped, except under `x-kubernetes-preserve-unknown-fields`, in
//! `additionalProperties`, and `apiVersion`, `kind` and `metadata` of the root and of embedded
//! resources. Writes prune through the field manager's schema (with `fieldValidation`); this
//! is for objects stored before their schema changed, as they are read.

use super::structural::{Additional, Structural};
use serde_json::Value;

/// Drops the fields of `v` that `schema` (a whole object's) does not declare. Whether any went.
pub fn apply(schema: &Structural, v: &mut Value) -> bool {
    prune(schema, v, true)
}

fn prune(s: &Structural, v: &mut Value, resource: bool) -> bool {
    let mut changed = false;
    match v {
        Value::Object(m) => {
            if !s.preserve_unknown && !matches!(s.additional, Some(Additional::Schema(_)) | Some(Additional::Allowed(true))) {
                let before = m.len();
                m.retain(|k, _| s.properties.contains_key(k) || (resource && matches!(k.as_str(), "apiVersion" | "kind" | "metadata")));
                changed |= m.len() != before;
            }
            for (k, x) in m.iter_mut() {
                if resource && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") && !s.properties.contains_key(k) {
                    continue;
                }
                if let Some(f) = s.field(k) {
                    changed |= prune(f, x, f.embedded);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = &s.items {
                for x in items {
                    changed |= prune(item, x, item.embedded);
                }
            }
        }
        _ => {}
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn undeclared_fields_go_preserved_ones_stay() {
        let s = Structural::read(&json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "a": {"type": "string"},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "map": {"type": "object", "additionalProperties": {"type": "object", "properties": {"x": {"type": "string"}}}},
            "emb": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"spec": {"type": "string"}}}
        }}}}));
        let mut v = json!({"apiVersion": "x/v1", "kind": "W", "metadata": {"name": "a"}, "extra": 1, "spec": {
            "a": "x", "gone": 1, "free": {"any": 1}, "map": {"k": {"x": "1", "y": 2}},
            "emb": {"apiVersion": "v1", "kind": "Pod", "metadata": {}, "spec": "s", "other": 1}}});
        assert!(apply(&s, &mut v));
        assert_eq!(
            v,
            json!({"apiVersion": "x/v1", "kind": "W", "metadata": {"name": "a"}, "spec": {
            "a": "x", "free": {"any": 1}, "map": {"k": {"x": "1"}},
            "emb": {"apiVersion": "v1", "kind": "Pod", "metadata": {}, "spec": "s"}}})
        );
        assert!(!apply(&s, &mut v));
    }
}
