//! The Kubernetes extensions and keywords of a schema node that its conversion reads:
//! `properties`, boolean `x-kubernetes-*` flags, the map type and the list relationship.

use super::super::ElementRelationship;
use super::path::At;
use crate::Result;
use serde_json::{Map as JsonMap, Value};

/// `properties`, `None` when absent.
pub(super) fn properties<'d>(obj: &'d JsonMap<String, Value>, at: &At<'_>) -> Result<Option<&'d JsonMap<String, Value>>> {
    match obj.get("properties") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(p)) => Ok(Some(p)),
        Some(_) => Err(at.field("properties").err("must be an object")),
    }
}

/// A boolean extension `key`, false when absent.
pub(super) fn bool_ext(obj: &JsonMap<String, Value>, key: &str, at: &At<'_>) -> Result<bool> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(at.field(key).err("must be a boolean")),
    }
}

/// `x-kubernetes-map-type`: `atomic` or `granular`, `None` when absent.
pub(super) fn map_relationship(obj: &JsonMap<String, Value>, at: &At<'_>) -> Result<Option<ElementRelationship>> {
    match obj.get("x-kubernetes-map-type") {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_str() {
            Some("atomic") => Ok(Some(ElementRelationship::Atomic)),
            Some("granular") => Ok(Some(ElementRelationship::Separable)),
            _ => Err(at.field("x-kubernetes-map-type").err(format!("unknown map type {v}"))),
        },
    }
}

/// kube-openapi's `getListElementRelationship`: the list type first, then the patch strategy,
/// else atomic.
pub(super) fn list_relationship(obj: &JsonMap<String, Value>, at: &At<'_>) -> Result<(ElementRelationship, Vec<String>)> {
    if let Some(lt) = obj.get("x-kubernetes-list-type").filter(|v| !v.is_null()) {
        return match lt.as_str() {
            Some("atomic") => Ok((ElementRelationship::Atomic, Vec::new())),
            Some("set") => Ok((ElementRelationship::Associative, Vec::new())),
            Some("map") => {
                let kat = at.field("x-kubernetes-list-map-keys");
                let keys = match obj.get("x-kubernetes-list-map-keys") {
                    Some(Value::Array(a)) => a
                        .iter()
                        .map(|k| k.as_str().map(str::to_string).ok_or_else(|| kat.err("keys must be strings")))
                        .collect::<Result<Vec<_>>>()?,
                    None | Some(Value::Null) => return Err(kat.err("missing map keys of a map list")),
                    Some(_) => return Err(kat.err("must be a list of strings")),
                };
                if keys.is_empty() {
                    return Err(kat.err("a map list needs at least one key"));
                }
                Ok((ElementRelationship::Associative, keys))
            }
            _ => Err(at.field("x-kubernetes-list-type").err(format!("unknown list type {lt}"))),
        };
    }
    if let Some(ps) = obj.get("x-kubernetes-patch-strategy").filter(|v| !v.is_null()) {
        return match ps.as_str() {
            Some("merge" | "merge,retainKeys") => match obj.get("x-kubernetes-patch-merge-key").filter(|v| !v.is_null()) {
                Some(Value::String(k)) => Ok((ElementRelationship::Associative, vec![k.clone()])),
                Some(_) => Err(at.field("x-kubernetes-patch-merge-key").err("must be a string")),
                // Merging without a key: a set.
                None => Ok((ElementRelationship::Associative, Vec::new())),
            },
            Some("retainKeys") => Ok((ElementRelationship::Atomic, Vec::new())),
            _ => Err(at.field("x-kubernetes-patch-strategy").err(format!("unknown patch strategy {ps} for a list"))),
        };
    }
    Ok((ElementRelationship::Atomic, Vec::new()))
}
