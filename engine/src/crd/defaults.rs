//! Defaulting of custom resources (kube-apiserver's structural defaulting): a missing field
//! whose schema declares a `default` gets it — so does a `null` where null is not allowed —,
//! top-down, so that a defaulted object gets the defaults of its own fields; then the nulls that
//! are neither allowed nor defaulted are dropped. kube-apiserver does this when it decodes a
//! request and when it reads an object from storage; so does the store.

use super::structural::{Additional, Structural};
use serde_json::Value;

/// Applies the defaults of `schema` to `v`, then drops the nulls of fields that are not
/// `nullable` and have no default. Whether anything changed.
pub fn apply(schema: &Structural, v: &mut Value) -> bool {
    let mut changed = default(schema, v);
    changed |= prune_nulls(Some(schema), v);
    changed
}

fn non_nullable_null(v: &Value, s: Option<&Structural>) -> bool {
    v.is_null() && s.is_some_and(|s| !s.nullable)
}

fn default(s: &Structural, v: &mut Value) -> bool {
    let mut changed = false;
    match v {
        Value::Object(m) => {
            for (k, prop) in &s.properties {
                let Some(d) = &prop.default else { continue };
                match m.get(k) {
                    Some(x) if !non_nullable_null(x, Some(prop)) => {}
                    _ => {
                        m.insert(k.clone(), d.clone());
                        changed = true;
                    }
                }
            }
            for (k, x) in m.iter_mut() {
                if let Some(prop) = s.properties.get(k) {
                    changed |= default(prop, x);
                } else if let Some(Additional::Schema(a)) = &s.additional {
                    if let (true, Some(d)) = (non_nullable_null(x, Some(a)), &a.default) {
                        *x = d.clone();
                        changed = true;
                    }
                    changed |= default(a, x);
                }
            }
        }
        Value::Array(items) => {
            let Some(item) = &s.items else { return false };
            for x in items {
                if let (true, Some(d)) = (non_nullable_null(x, Some(item)), &item.default) {
                    *x = d.clone();
                    changed = true;
                }
                changed |= default(item, x);
            }
        }
        _ => {}
    }
    changed
}

fn prune_nulls(s: Option<&Structural>, v: &mut Value) -> bool {
    let mut changed = false;
    match v {
        Value::Object(m) => {
            let before = m.len();
            m.retain(|k, x| {
                let f = s.and_then(|s| s.field(k));
                !(x.is_null() && f.is_some_and(|f| !f.nullable && f.default.is_none()))
            });
            changed |= m.len() != before;
            for (k, x) in m.iter_mut() {
                changed |= prune_nulls(s.and_then(|s| s.field(k)), x);
            }
        }
        Value::Array(items) => {
            let item = s.and_then(|s| s.items.as_deref());
            for x in items {
                changed |= prune_nulls(item, x);
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

    fn schema() -> Structural {
        Structural::read(&json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "default": {},
                    "properties": {
                        "replicas": {"type": "integer", "default": 1},
                        "image": {"type": "string"},
                        "note": {"type": "string", "nullable": true},
                        "ports": {"type": "array", "items": {"type": "object", "properties": {"protocol": {"type": "string", "default": "TCP"}}}},
                        "env": {"type": "object", "additionalProperties": {"type": "object", "properties": {"v": {"type": "string", "default": "x"}}}}
                    }
                }
            }
        }))
    }

    #[test]
    fn a_missing_object_gets_its_default_and_the_defaults_of_its_fields() {
        let mut v = json!({"metadata": {"name": "a"}});
        assert!(apply(&schema(), &mut v));
        assert_eq!(v["spec"], json!({"replicas": 1}));
    }

    #[test]
    fn items_and_map_values_are_defaulted_and_given_values_kept() {
        let mut v = json!({"spec": {"replicas": 3, "ports": [{}, {"protocol": "UDP"}], "env": {"a": {}}}});
        apply(&schema(), &mut v);
        assert_eq!(v["spec"]["replicas"], 3);
        assert_eq!(v["spec"]["ports"], json!([{"protocol": "TCP"}, {"protocol": "UDP"}]));
        assert_eq!(v["spec"]["env"]["a"]["v"], "x");
    }

    #[test]
    fn nulls_are_defaulted_dropped_or_kept_as_the_schema_says() {
        let mut v = json!({"spec": {"replicas": null, "image": null, "note": null, "unknown": null}});
        apply(&schema(), &mut v);
        assert_eq!(v["spec"], json!({"replicas": 1, "note": null, "unknown": null}));
    }

    #[test]
    fn nothing_to_default_changes_nothing() {
        let mut v = json!({"spec": {"replicas": 2}});
        assert!(!apply(&schema(), &mut v));
    }
}
