//! The OpenAPI documents kube-apiserver serves, generated from the registered types:
//! `/openapi/v2` ([`v2`], and its gnostic protobuf form [`v2_protobuf`]), `/openapi/v3`
//! ([`v3_index`]) and `/openapi/v3/api/v1`, `/openapi/v3/apis/GROUP/VERSION`
//! ([`v3_group_version`]).
//!
//! Definitions are named as Kubernetes names them (`io.k8s.api.core.v1.ConfigMap`; a CRD's
//! `com.example.v1.Widget`), each kind's with `x-kubernetes-group-version-kind`, members with the
//! `x-kubernetes-list-type`/`-list-map-keys` and `-patch-strategy`/`-patch-merge-key` markers
//! kubectl reads for client-side apply; `paths` list every operation with `x-kubernetes-action`.
//! Each type publishes a complete schema or an object that keeps unknown fields (see
//! `definitions`). The documents depend only on the registered types: a router keeps a
//! [`Cache`], whose [`Documents`] serialize each document once per set of types.

mod cache;
mod definitions;
mod gnostic;
mod paths;

use definitions::{to_v2, Catalog, DELETE_OPTIONS, PATCH, STATUS, V2_PREFIX, V3_PREFIX, WATCH_EVENT};
use fieldstore_engine::store::TypeSpec;
use paths::Form;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha512};
use std::collections::BTreeMap;

pub use cache::{Cache, Documents};
pub use gnostic::v2_protobuf;

/// The media type `/openapi/v2` answers [`v2_protobuf`] with, whichever of the two accepted
/// forms the client asked for (kube-openapi's `ReturnedContentType`): the `@` of the older
/// form (`…spec.v2@v1.0+protobuf`, which kubectl 1.27 sends) is not valid in a `Content-Type`,
/// and client-go fails to parse a response carrying it.
pub const V2_PROTOBUF_CONTENT_TYPE: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// Whether an `Accept` header asks `/openapi/v2` for [`v2_protobuf`]: either form of gnostic's
/// media type (`…spec.v2@v1.0+protobuf`, `…spec.v2.v1.0+protobuf`).
#[must_use]
pub fn wants_v2_protobuf(accept: &str) -> bool {
    accept.split(',').any(|clause| {
        let media = clause.split(';').next().unwrap_or("").trim();
        media == "application/com.github.proto-openapi.spec.v2@v1.0+protobuf" || media == V2_PROTOBUF_CONTENT_TYPE
    })
}

/// The version `info` gives (Kubernetes puts its own release there).
const INFO_VERSION: &str = "v1.33.0-fieldstore";

/// The meta/v1 definitions every operation set refers to.
const OPERATION_DEFINITIONS: [&str; 4] = [DELETE_OPTIONS, STATUS, WATCH_EVENT, PATCH];

/// The Swagger 2.0 document of every type, as kube-apiserver serves `/openapi/v2`.
///
/// # Examples
/// ```
/// use fieldstore_engine::store::builtin_types;
/// let doc = fieldstore_server::http::openapi::v2(&builtin_types());
/// let cm = &doc["definitions"]["io.k8s.api.core.v1.ConfigMap"];
/// assert_eq!(cm["x-kubernetes-group-version-kind"][0]["kind"], "ConfigMap");
/// assert!(doc["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["patch"].is_object());
/// ```
#[must_use]
pub fn v2(types: &[TypeSpec]) -> Value {
    let (catalog, names) = catalog(types);
    let mut paths = Map::new();
    for (spec, n) in types.iter().zip(&names) {
        paths.extend(paths::paths(spec, n, Form::V2));
    }
    let definitions: Map<String, Value> = catalog.definitions.iter().map(|(k, v)| (k.clone(), to_v2(v))).collect();
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": INFO_VERSION},
        "paths": paths,
        "definitions": definitions,
        "securityDefinitions": {"BearerToken": {"type": "apiKey", "name": "authorization", "in": "header",
            "description": "Bearer Token authentication"}},
        "security": [{"BearerToken": []}],
    })
}

/// The `/openapi/v3` index: every group version's document path with the hash of its bytes
/// (`{"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=…"}, …}}`), the hash
/// being the upper-case hex SHA-512 of `serde_json::to_vec` of [`v3_group_version`]'s document,
/// as kube-openapi computes its ETags. Serve those exact bytes for the hash to hold.
#[must_use]
pub fn v3_index(types: &[TypeSpec]) -> Value {
    let mut paths = Map::new();
    for (group, version) in group_versions(types) {
        let Some(doc) = v3_group_version(types, &group, &version) else { continue };
        let key = paths::prefix(&group, &version).trim_start_matches('/').to_string();
        let url = format!("/openapi/v3/{key}?hash={}", hash(&serde_json::to_vec(&doc).unwrap_or_default()));
        paths.insert(key, json!({"serverRelativeURL": url}));
    }
    json!({"paths": paths})
}

/// The upper-case hex SHA-512 of `bytes` (kube-openapi's ETag of a document).
#[must_use]
pub fn hash(bytes: &[u8]) -> String {
    Sha512::digest(bytes).iter().map(|b| format!("{b:02X}")).collect()
}

/// The OpenAPI 3.0 document of one group version (`""` for the core group), as kube-apiserver
/// serves `/openapi/v3/apis/GROUP/VERSION`: the paths of its types' operations and, under
/// `components.schemas`, every definition they reference, transitively (ObjectMeta from meta/v1
/// and so on). `None` when no registered type is of that group version.
#[must_use]
pub fn v3_group_version(types: &[TypeSpec], group: &str, version: &str) -> Option<Value> {
    let in_gv: Vec<TypeSpec> = types.iter().filter(|t| t.group == group && t.version == version).cloned().collect();
    if in_gv.is_empty() {
        return None;
    }
    let (catalog, names) = catalog(&in_gv);
    let mut paths = Map::new();
    for (spec, n) in in_gv.iter().zip(&names) {
        paths.extend(paths::paths(spec, n, Form::V3));
    }
    let roots = names.iter().flat_map(|n| [n.kind.as_str(), n.list.as_str()]).chain(OPERATION_DEFINITIONS);
    let schemas: Map<String, Value> = catalog.closure(roots).into_iter().collect();
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": INFO_VERSION},
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"BearerToken": {"type": "apiKey", "name": "authorization", "in": "header",
                "description": "Bearer Token authentication"}},
        },
    }))
}

/// Every group version of `types`, sorted.
fn group_versions(types: &[TypeSpec]) -> Vec<(String, String)> {
    let mut gvs: Vec<(String, String)> = types.iter().map(|t| (t.group.clone(), t.version.clone())).collect();
    gvs.sort();
    gvs.dedup();
    gvs
}

/// The definitions of `types` (plus the meta/v1 ones operations use) and each type's names.
fn catalog(types: &[TypeSpec]) -> (Catalog, Vec<definitions::Names>) {
    let mut catalog = Catalog::default();
    let names = types.iter().map(|t| catalog.add(t)).collect();
    for d in OPERATION_DEFINITIONS {
        catalog.add_builtin(d);
    }
    (catalog, names)
}

/// Every `$ref` of `doc` that names no definition of the document (test helper, and a check
/// the router's tests may use): empty for a self-contained document.
#[must_use]
pub fn dangling_refs(doc: &Value) -> Vec<String> {
    let defs = doc.get("definitions").or_else(|| doc.pointer("/components/schemas")).and_then(Value::as_object);
    let mut out = BTreeMap::new();
    fn walk(v: &Value, defs: Option<&Map<String, Value>>, out: &mut BTreeMap<String, ()>) {
        match v {
            Value::Object(o) => {
                for (k, c) in o {
                    match (k.as_str(), c.as_str()) {
                        ("$ref", Some(r)) => {
                            let name = r.strip_prefix(V2_PREFIX).or_else(|| r.strip_prefix(V3_PREFIX));
                            if !name.is_some_and(|n| defs.is_some_and(|d| d.contains_key(n))) {
                                out.insert(r.to_string(), ());
                            }
                        }
                        _ => walk(c, defs, out),
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|c| walk(c, defs, out)),
            _ => {}
        }
    }
    walk(doc, defs, &mut out);
    out.into_keys().collect()
}
