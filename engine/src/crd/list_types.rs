//! The checks of `x-kubernetes-list-type`, `x-kubernetes-list-map-keys` and
//! `x-kubernetes-map-type` in a CRD's schema, with apiextensions' messages.

use super::validation::quoted;
use crate::typed::ValidationError;
use serde_json::{Map, Value};

fn err(out: &mut Vec<ValidationError>, path: String, message: String) {
    out.push(ValidationError { path, message });
}

/// The list- and map-type problems of the schema node `m` at `path`.
pub(crate) fn check(m: &Map<String, Value>, path: &str, out: &mut Vec<ValidationError>) {
    let t = m.get("type").and_then(Value::as_str).unwrap_or("");
    let list_type = m.get("x-kubernetes-list-type").and_then(Value::as_str);
    let map_type = m.get("x-kubernetes-map-type").and_then(Value::as_str);
    let keys: Vec<&str> = m
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let items = m.get("items").and_then(Value::as_object);
    let item_type = items.and_then(|i| i.get("type")).and_then(Value::as_str).unwrap_or("");
    if let Some(mt) = map_type {
        if t != "object" {
            match t {
                "" => err(out, format!("{path}.type"), "Required value: must be object if x-kubernetes-map-type is specified".into()),
                _ => err(
                    out,
                    format!("{path}.type"),
                    format!("Invalid value: {}: must be object if x-kubernetes-map-type is specified", quoted(t)),
                ),
            }
        }
        if mt != "atomic" && mt != "granular" {
            err(
                out,
                format!("{path}.x-kubernetes-map-type"),
                format!("Unsupported value: {}: supported values: \"atomic\", \"granular\"", quoted(mt)),
            );
        }
    }
    if let Some(lt) = list_type {
        if t != "array" {
            match t {
                "" => err(out, format!("{path}.type"), "Required value: must be array if x-kubernetes-list-type is specified".into()),
                _ => err(
                    out,
                    format!("{path}.type"),
                    format!("Invalid value: {}: must be array if x-kubernetes-list-type is specified", quoted(t)),
                ),
            }
        } else if lt == "set" {
            let item = |k: &str| items.and_then(|i| i.get(k)).and_then(Value::as_str);
            match item_type {
                "array" if item("x-kubernetes-list-type").is_some_and(|x| x != "atomic") => {
                    let v = item("x-kubernetes-list-type").unwrap_or("");
                    err(
                        out,
                        format!("{path}.items.x-kubernetes-list-type"),
                        format!("Invalid value: {}: must be atomic as item of a list with x-kubernetes-list-type=set", quoted(v)),
                    );
                }
                "object" if item("x-kubernetes-map-type") != Some("atomic") => {
                    err(
                        out,
                        format!("{path}.items.x-kubernetes-map-type"),
                        "Invalid value: null: must be atomic as item of a list with x-kubernetes-list-type=set".into(),
                    );
                }
                _ => {}
            }
        }
        if !matches!(lt, "atomic" | "set" | "map") {
            err(
                out,
                format!("{path}.x-kubernetes-list-type"),
                format!("Unsupported value: {}: supported values: \"atomic\", \"set\", \"map\"", quoted(lt)),
            );
        }
    }
    if !keys.is_empty() {
        match list_type {
            None => err(
                out,
                format!("{path}.x-kubernetes-list-type"),
                "Required value: must be map if x-kubernetes-list-map-keys is non-empty".into(),
            ),
            Some(lt) if lt != "map" => err(
                out,
                format!("{path}.x-kubernetes-list-type"),
                format!("Invalid value: {}: must be map if x-kubernetes-list-map-keys is non-empty", quoted(lt)),
            ),
            _ => {}
        }
    }
    if list_type == Some("map") {
        let shown_keys = Value::from(keys.clone()).to_string();
        if keys.is_empty() {
            err(
                out,
                format!("{path}.x-kubernetes-list-map-keys"),
                "Required value: must not be empty if x-kubernetes-list-type is map".into(),
            );
        }
        match items {
            None => err(out, format!("{path}.items"), "Required value: must have a schema if x-kubernetes-list-type is map".into()),
            Some(_) if item_type != "object" => err(
                out,
                format!("{path}.items.type"),
                format!("Invalid value: {}: must be object if parent array's x-kubernetes-list-type is map", quoted(item_type)),
            ),
            Some(i) => {
                let props = i.get("properties").and_then(Value::as_object);
                let mut seen = Vec::new();
                for k in &keys {
                    match props.and_then(|p| p.get(*k)) {
                        Some(p) => {
                            if matches!(p.get("type").and_then(Value::as_str), Some("array" | "object")) {
                                err(
                                    out,
                                    format!("{path}.items.properties[{k}].type"),
                                    "Invalid value: \"object\": must be a scalar type if parent array's x-kubernetes-list-type is map"
                                        .into(),
                                );
                            }
                        }
                        None => err(
                            out,
                            format!("{path}.x-kubernetes-list-map-keys"),
                            format!("Invalid value: {shown_keys}: entries must all be names of item properties"),
                        ),
                    }
                    if seen.contains(k) {
                        err(
                            out,
                            format!("{path}.x-kubernetes-list-map-keys"),
                            format!("Invalid value: {shown_keys}: must not contain duplicate entries"),
                        );
                    }
                    seen.push(k);
                }
            }
        }
    }
    // validateMapListKeysMapSet
    if let (Some(lt @ ("set" | "map")), Some(i)) = (list_type, items) {
        if i.get("nullable") == Some(&Value::Bool(true)) {
            err(out, format!("{path}.items.nullable"), format!("Forbidden: cannot be nullable when x-kubernetes-list-type is {lt}"));
        }
        if lt == "map" {
            let required: Vec<&str> =
                i.get("required").and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
            for k in &keys {
                let Some(p) = i.get("properties").and_then(|p| p.get(*k)) else { continue };
                if !required.contains(k) && p.get("default").is_none() {
                    err(out, format!("{path}.items.properties[{k}].default"), "Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property".into());
                }
                if p.get("nullable") == Some(&Value::Bool(true)) {
                    err(
                        out,
                        format!("{path}.items.properties[{k}].nullable"),
                        "Forbidden: this property is in x-kubernetes-list-map-keys, so it cannot be nullable".into(),
                    );
                }
            }
        }
    }
}
