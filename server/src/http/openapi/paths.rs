//! The operations of a resource type, as kube-apiserver lists them under `paths`: list, create
//! and delete a collection; read, replace, patch and delete an object; watch; the same on the
//! `status` subresource; each with `x-kubernetes-action` and `x-kubernetes-group-version-kind`,
//! rendered in the OpenAPI v2 or v3 form.

use super::definitions::{gvk, Names, DELETE_OPTIONS, PATCH, STATUS, V2_PREFIX, V3_PREFIX, WATCH_EVENT};
use fieldstore_engine::store::TypeSpec;
use serde_json::{json, Map, Value};

/// Which OpenAPI version to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Form {
    /// Swagger 2.0.
    V2,
    /// OpenAPI 3.0.
    V3,
}

/// One operation before it is written in a form.
struct Op {
    method: &'static str,
    /// `x-kubernetes-action`: get, list, post, put, patch, delete, deletecollection, watch,
    /// watchlist.
    action: &'static str,
    operation_id: String,
    /// Query parameters (all strings but the few typed below).
    query: &'static [&'static str],
    /// The request body's definition.
    body: Option<String>,
    /// The 200 response's definition.
    response: String,
    consumes: &'static [&'static str],
    produces: &'static [&'static str],
}

const JSON_YAML_PROTOBUF: &[&str] = &["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"];
const WATCH_MEDIA: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
    "application/json;stream=watch",
    "application/vnd.kubernetes.protobuf;stream=watch",
];
const ANY: &[&str] = &["*/*"];
const PATCH_MEDIA: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];
/// Custom resources take no strategic merge patch (kube-apiserver answers 415).
const PATCH_MEDIA_CUSTOM: &[&str] = &["application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"];

const LIST_QUERY: &[&str] = &[
    "pretty",
    "allowWatchBookmarks",
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
    "watch",
];
const WRITE_QUERY: &[&str] = &["pretty", "dryRun", "fieldManager", "fieldValidation"];
const PATCH_QUERY: &[&str] = &["pretty", "dryRun", "fieldManager", "fieldValidation", "force"];
const DELETE_QUERY: &[&str] = &["pretty", "dryRun", "gracePeriodSeconds", "orphanDependents", "propagationPolicy"];
const DELETE_COLLECTION_QUERY: &[&str] = &[
    "pretty",
    "continue",
    "dryRun",
    "fieldSelector",
    "gracePeriodSeconds",
    "labelSelector",
    "limit",
    "orphanDependents",
    "propagationPolicy",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
];
const READ_QUERY: &[&str] = &["pretty"];

/// The type of a query parameter.
fn query_type(name: &str) -> (&'static str, Option<&'static str>) {
    match name {
        "allowWatchBookmarks" | "watch" | "sendInitialEvents" | "orphanDependents" | "force" => ("boolean", None),
        "limit" | "timeoutSeconds" | "gracePeriodSeconds" => ("integer", None),
        _ => ("string", None),
    }
}

/// `Core`, `Apps`, `RbacAuthorization`, `ComExample`…: the group as operation ids name it.
fn group_id(group: &str) -> String {
    if group.is_empty() {
        return "Core".into();
    }
    group.trim_end_matches(".k8s.io").split(['.', '-']).map(capitalize).collect()
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}

/// `core_v1`, `apps_v1`, `rbacAuthorization_v1`: the tag of a group version's operations.
pub(super) fn tag(spec: &TypeSpec) -> String {
    let g = group_id(&spec.group);
    let mut c = g.chars();
    let g: String = c.next().map(|f| f.to_lowercase().chain(c).collect()).unwrap_or_default();
    format!("{g}_{}", spec.version)
}

/// `/api/v1` or `/apis/GROUP/VERSION`.
pub(super) fn prefix(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    }
}

/// Every path of `spec`'s operations, with its path item, in `form`.
pub(super) fn paths(spec: &TypeSpec, names: &Names, form: Form) -> Vec<(String, Value)> {
    let base = prefix(&spec.group, &spec.version);
    let id = format!("{}{}", group_id(&spec.group), capitalize(&spec.version));
    let kind = &spec.kind;
    let (scope, ns_path, ns_param) = if spec.namespaced { ("Namespaced", "/namespaces/{namespace}", true) } else { ("", "", false) };
    let custom = !matches!(spec.schema, fieldstore_engine::store::SchemaSource::Builtin { .. });
    let patch_media = if custom { PATCH_MEDIA_CUSTOM } else { PATCH_MEDIA };
    let plural = &spec.plural;
    let object = |method, action, verb: &str, query, body: Option<&str>, consumes, produces, suffix: &str| Op {
        method,
        action,
        operation_id: format!("{verb}{id}{scope}{kind}{suffix}"),
        query,
        body: body.map(str::to_string),
        response: names.kind.clone(),
        consumes,
        produces,
    };
    let mut out = Vec::new();
    let collection = vec![
        Op {
            method: "get",
            action: "list",
            operation_id: format!("list{id}{scope}{kind}"),
            query: LIST_QUERY,
            body: None,
            response: names.list.clone(),
            consumes: ANY,
            produces: WATCH_MEDIA,
        },
        object("post", "post", "create", WRITE_QUERY, Some(&names.kind), ANY, JSON_YAML_PROTOBUF, ""),
        Op {
            method: "delete",
            action: "deletecollection",
            operation_id: format!("delete{id}Collection{scope}{kind}"),
            query: DELETE_COLLECTION_QUERY,
            body: Some(DELETE_OPTIONS.into()),
            response: STATUS.into(),
            consumes: ANY,
            produces: JSON_YAML_PROTOBUF,
        },
    ];
    out.push((format!("{base}{ns_path}/{plural}"), collection, ns_param, false));
    let item = vec![
        object("get", "get", "read", READ_QUERY, None, ANY, JSON_YAML_PROTOBUF, ""),
        object("put", "put", "replace", WRITE_QUERY, Some(&names.kind), ANY, JSON_YAML_PROTOBUF, ""),
        object("patch", "patch", "patch", PATCH_QUERY, Some(PATCH), patch_media, JSON_YAML_PROTOBUF, ""),
        Op {
            method: "delete",
            action: "delete",
            operation_id: format!("delete{id}{scope}{kind}"),
            query: DELETE_QUERY,
            body: Some(DELETE_OPTIONS.into()),
            response: names.kind.clone(),
            consumes: ANY,
            produces: JSON_YAML_PROTOBUF,
        },
    ];
    out.push((format!("{base}{ns_path}/{plural}/{{name}}"), item, ns_param, true));
    if spec.status_subresource {
        let status = vec![
            object("get", "get", "read", READ_QUERY, None, ANY, JSON_YAML_PROTOBUF, "Status"),
            object("put", "put", "replace", WRITE_QUERY, Some(&names.kind), ANY, JSON_YAML_PROTOBUF, "Status"),
            object("patch", "patch", "patch", PATCH_QUERY, Some(PATCH), patch_media, JSON_YAML_PROTOBUF, "Status"),
        ];
        out.push((format!("{base}{ns_path}/{plural}/{{name}}/status"), status, ns_param, true));
    }
    let watch = |action, operation_id: String| Op {
        method: "get",
        action,
        operation_id,
        query: LIST_QUERY,
        body: None,
        response: WATCH_EVENT.into(),
        consumes: ANY,
        produces: WATCH_MEDIA,
    };
    out.push((format!("{base}/watch{ns_path}/{plural}"), vec![watch("watchlist", format!("watch{id}{scope}{kind}List"))], ns_param, false));
    out.push((format!("{base}/watch{ns_path}/{plural}/{{name}}"), vec![watch("watch", format!("watch{id}{scope}{kind}"))], ns_param, true));
    if spec.namespaced {
        let all = Op {
            method: "get",
            action: "list",
            operation_id: format!("list{id}{kind}ForAllNamespaces"),
            query: LIST_QUERY,
            body: None,
            response: names.list.clone(),
            consumes: ANY,
            produces: WATCH_MEDIA,
        };
        out.push((format!("{base}/{plural}"), vec![all], false, false));
        let watch_all = watch("watchlist", format!("watch{id}{kind}ListForAllNamespaces"));
        out.push((format!("{base}/watch/{plural}"), vec![watch_all], false, false));
    }
    let gvk = gvk(spec, kind);
    let tag = tag(spec);
    out.into_iter().map(|(path, ops, ns, name)| (path, path_item(&ops, ns, name, &gvk, &tag, form))).collect()
}

/// One path item: the path parameters and each operation.
fn path_item(ops: &[Op], namespace: bool, name: bool, gvk: &Value, tag: &str, form: Form) -> Value {
    let mut item = Map::new();
    let mut params = Vec::new();
    if name {
        params.push(path_param("name", form));
    }
    if namespace {
        params.push(path_param("namespace", form));
    }
    if !params.is_empty() {
        item.insert("parameters".into(), Value::Array(params));
    }
    for op in ops {
        item.insert(op.method.into(), operation(op, gvk, tag, form));
    }
    Value::Object(item)
}

fn path_param(name: &str, form: Form) -> Value {
    match form {
        Form::V2 => json!({"name": name, "in": "path", "required": true, "type": "string", "uniqueItems": true}),
        Form::V3 => json!({"name": name, "in": "path", "required": true, "schema": {"type": "string", "uniqueItems": true}}),
    }
}

fn reference(name: &str, form: Form) -> Value {
    let prefix = if form == Form::V2 { V2_PREFIX } else { V3_PREFIX };
    json!({"$ref": format!("{prefix}{name}")})
}

fn operation(op: &Op, gvk: &Value, tag: &str, form: Form) -> Value {
    let mut params: Vec<Value> = op
        .query
        .iter()
        .map(|q| {
            let (t, _) = query_type(q);
            match form {
                Form::V2 => json!({"name": q, "in": "query", "type": t, "uniqueItems": true}),
                Form::V3 => json!({"name": q, "in": "query", "schema": {"type": t, "uniqueItems": true}}),
            }
        })
        .collect();
    let mut o = Map::new();
    o.insert("operationId".into(), json!(op.operation_id));
    o.insert("tags".into(), json!([tag]));
    let ok = match form {
        Form::V2 => {
            if let Some(b) = &op.body {
                params.push(json!({"name": "body", "in": "body", "required": op.method != "delete", "schema": reference(b, form)}));
            }
            o.insert("consumes".into(), json!(op.consumes));
            o.insert("produces".into(), json!(op.produces));
            o.insert("schemes".into(), json!(["https"]));
            json!({"description": "OK", "schema": reference(&op.response, form)})
        }
        Form::V3 => {
            if let Some(b) = &op.body {
                let content: Map<String, Value> =
                    op.consumes.iter().map(|m| ((*m).to_string(), json!({"schema": reference(b, form)}))).collect();
                o.insert("requestBody".into(), json!({"content": content, "required": op.method != "delete"}));
            }
            let content: Map<String, Value> =
                op.produces.iter().map(|m| ((*m).to_string(), json!({"schema": reference(&op.response, form)}))).collect();
            json!({"description": "OK", "content": content})
        }
    };
    o.insert("parameters".into(), Value::Array(params));
    let mut responses = Map::new();
    responses.insert("200".into(), ok.clone());
    match op.action {
        "post" => {
            responses.insert("201".into(), with_description(&ok, "Created"));
            responses.insert("202".into(), with_description(&ok, "Accepted"));
        }
        "put" | "patch" => {
            responses.insert("201".into(), with_description(&ok, "Created"));
        }
        "delete" => {
            responses.insert("202".into(), with_description(&ok, "Accepted"));
        }
        _ => {}
    }
    responses.insert("401".into(), json!({"description": "Unauthorized"}));
    o.insert("responses".into(), Value::Object(responses));
    o.insert("x-kubernetes-action".into(), json!(op.action));
    o.insert("x-kubernetes-group-version-kind".into(), gvk.clone());
    Value::Object(o)
}

fn with_description(response: &Value, description: &str) -> Value {
    let mut r = response.clone();
    r["description"] = json!(description);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_ids_and_tags_name_the_group_as_kubernetes_does() {
        assert_eq!(group_id(""), "Core");
        assert_eq!(group_id("rbac.authorization.k8s.io"), "RbacAuthorization");
        assert_eq!(group_id("stable.example.com"), "StableExampleCom");
        assert_eq!(tag(&TypeSpec::new("rbac.authorization.k8s.io", "v1", "Role", "roles")), "rbacAuthorization_v1");
    }
}
