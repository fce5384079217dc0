//! Stand-ins for the Table and OpenAPI modules (`table.rs`, `openapi.rs`), written on another
//! branch: a NAME/AGE Table, and 404 for the OpenAPI documents. When those modules are merged:
//! - [`to_table`]'s body becomes `super::table::table(spec, objects, include_object.into(), list_meta)`
//!   (or [`IncludeObject`] is replaced by `super::table::IncludeObject`, same variants);
//! - [`openapi_v2`] becomes `let doc = super::openapi::v2(types); Some(if protobuf {
//!   (super::openapi::v2_protobuf(&doc), "application/com.github.proto-openapi.spec.v2@v1.0+protobuf") }
//!   else { (serde_json::to_vec(&doc).unwrap_or_default(), "application/json") })`;
//! - [`openapi_v3_index`] becomes `Some(super::openapi::v3_index(types))`, and
//!   [`openapi_v3_group_version`] `super::openapi::v3_group_version(types, group, version)`.
//!
//! `server/tests/kubectl/kubectl.sh` then runs `explain`, `diff` and client-side validation too
//! (it checks `/openapi/v3`).

use fieldstore_engine::store::TypeSpec;
use serde_json::{json, Value};

/// What a Table row carries besides its cells (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IncludeObject {
    /// Nothing.
    None,
    /// The object's metadata, as a `PartialObjectMetadata` (the default).
    Metadata,
    /// The whole object.
    Object,
}

/// A `meta.k8s.io/v1` Table of `objects` with NAME and AGE columns.
pub(crate) fn to_table(_spec: &TypeSpec, objects: &[Value], include_object: IncludeObject, list_meta: Value) -> Value {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0);
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            let name = o.pointer("/metadata/name").cloned().unwrap_or(Value::Null);
            let created = o.pointer("/metadata/creationTimestamp").and_then(Value::as_str).and_then(fieldstore_codec::rfc3339::parse);
            let age = created.map_or_else(|| "<unknown>".to_string(), |(s, _)| human_duration(now - s));
            let mut row = json!({"cells": [name, age]});
            match include_object {
                IncludeObject::None => {}
                IncludeObject::Metadata => {
                    row["object"] = json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                        "metadata": o.get("metadata").cloned().unwrap_or(json!({}))});
                }
                IncludeObject::Object => row["object"] = o.clone(),
            }
            row
        })
        .collect();
    json!({
        "kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta,
        "columnDefinitions": [
            {"name": "Name", "type": "string", "format": "name", "description": "Name must be unique within a namespace.", "priority": 0},
            {"name": "Age", "type": "string", "format": "", "description": "CreationTimestamp is a timestamp representing the server time when this object was created.", "priority": 0},
        ],
        "rows": rows,
    })
}

/// A duration as kubectl prints ages (`45s`, `3m2s`, `5h`, `2d3h`, `3y`), as
/// k8s.io/apimachinery's `duration.HumanDuration`.
fn human_duration(secs: i64) -> String {
    let s = secs.max(0);
    let (m, h, d) = (s / 60, s / 3600, s / 86400);
    match s {
        _ if s < 120 => format!("{s}s"),
        _ if m < 10 => match s % 60 {
            0 => format!("{m}m"),
            r => format!("{m}m{r}s"),
        },
        _ if h < 3 => format!("{m}m"),
        _ if h < 8 => match m % 60 {
            0 => format!("{h}h"),
            r => format!("{h}h{r}m"),
        },
        _ if h < 48 => format!("{h}h"),
        _ if h < 24 * 8 => match h % 24 {
            0 => format!("{d}d"),
            r => format!("{d}d{r}h"),
        },
        _ if h < 24 * 365 * 2 => format!("{d}d"),
        _ if h < 24 * 365 * 8 => match d % 365 {
            0 => format!("{}y", d / 365),
            r => format!("{}y{r}d", d / 365),
        },
        _ => format!("{}y", d / 365),
    }
}

/// `/openapi/v2` (JSON, or gnostic protobuf when `protobuf`): not served until the OpenAPI
/// module is merged.
pub(crate) fn openapi_v2(_types: &[TypeSpec], _protobuf: bool) -> Option<(Vec<u8>, &'static str)> {
    None
}

/// `/openapi/v3`: not served until the OpenAPI module is merged.
pub(crate) fn openapi_v3_index(_types: &[TypeSpec]) -> Option<Value> {
    None
}

/// `/openapi/v3/apis/GROUP/VERSION` (or `api/v1`): not served until the OpenAPI module is
/// merged.
pub(crate) fn openapi_v3_group_version(_types: &[TypeSpec], _group: &str, _version: &str) -> Option<Value> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_print_as_kubectl_prints_them() {
        for (s, want) in [
            (5, "5s"),
            (130, "2m10s"),
            (3600, "60m"),
            (4 * 3600 + 60, "4h1m"),
            (30 * 3600, "30h"),
            (3 * 86400, "3d"),
            (400 * 86400, "400d"),
        ] {
            assert_eq!(human_duration(s), want);
        }
    }
}
