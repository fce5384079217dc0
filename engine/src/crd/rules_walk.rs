//! The CEL rules of a custom resource evaluated over it: every node of the value whose schema
//! has rules, with the old value correlated as kube-apiserver correlates it (object fields and
//! map values by key, map-list items by their keys; nothing for items of other lists), one
//! runtime budget for the whole object.

use super::cel::Budget;
use super::structural::{Additional, Structural};
use crate::typed::ValidationError;
use serde_json::Value;
use std::collections::HashMap;

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Where the failures of rules go: errors, and (kube-apiserver 1.37) warnings for the failures
/// of an unchanged value, which ratchets.
pub(crate) struct Failures<'a> {
    pub errors: &'a mut Vec<ValidationError>,
    pub ratcheted: &'a mut Vec<ValidationError>,
}

/// Evaluates the rules of `s` and of the schemas below it on `v` (at `path`; `old` its
/// correlated old value), adding their failures to `out`: an unchanged value's (but a
/// transition rule's) to its ratcheted ones.
pub(crate) fn check(s: &Structural, v: &Value, old: Option<&Value>, path: &str, budget: &mut Budget, out: &mut Failures<'_>) {
    walk(s, v, old, path, budget, out, false);
}

fn walk(s: &Structural, v: &Value, old: Option<&Value>, path: &str, budget: &mut Budget, out: &mut Failures<'_>, unchanged: bool) {
    if !s.has_rules || v.is_null() || budget.is_exhausted() {
        return;
    }
    // Ratcheting: an unchanged value passes every rule but a transition rule; what it fails
    // is a warning.
    let unchanged = unchanged || (!s.has_transition_rules && old == Some(v));
    if let Some(rules) = &s.rules {
        // Below an unchanged value everything is unchanged: its rules' failures are ratcheted.
        let failed = rules.check_ratcheted(v, if unchanged { Some(v) } else { old }, path, budget, out.ratcheted);
        out.errors.extend(failed);
    }
    match v {
        Value::Object(m) => {
            let old = old.and_then(Value::as_object);
            for (k, x) in m {
                // At the root, metadata, apiVersion and kind are not the schema's.
                if path.is_empty() && matches!(k.as_str(), "metadata" | "apiVersion" | "kind") && !s.properties.contains_key(k) {
                    continue;
                }
                let f = match (s.properties.get(k), &s.additional) {
                    (Some(f), _) => f,
                    (None, Some(Additional::Schema(f))) => f,
                    _ => continue,
                };
                walk(f, x, old.and_then(|o| o.get(k)), &child(path, k), budget, out, unchanged);
            }
        }
        Value::Array(items) => {
            let Some(item) = &s.items else { return };
            if !item.has_rules {
                return;
            }
            let keyed = s.list_type.as_deref() == Some("map") && !s.list_map_keys.is_empty();
            let key = |x: &Value| serde_json::to_string(&s.list_map_keys.iter().map(|k| x.get(k)).collect::<Vec<_>>()).ok();
            let prior: HashMap<String, &Value> = match (old.and_then(Value::as_array), keyed) {
                (Some(o), true) => o.iter().filter_map(|x| Some((key(x)?, x))).collect(),
                _ => HashMap::new(),
            };
            for (i, x) in items.iter().enumerate() {
                let before = if keyed { key(x).and_then(|k| prior.get(&k).copied()) } else { None };
                walk(item, x, before, &format!("{path}[{i}]"), budget, out, unchanged);
            }
        }
        _ => {}
    }
}
