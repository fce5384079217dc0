//! Aggregated discovery (`apidiscovery.k8s.io/v2` `APIGroupDiscoveryList`): `GET /api` and
//! `/apis` asked for with `Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`,
//! which current kubectl and client-go ask for first, answer every group, version and resource in
//! one document, shaped as kube-apiserver's: resources sorted by name with their verbs, scope,
//! singular name, short names, categories, `responseKind` and subresources, each version
//! `freshness: Current`. Other `Accept`s get the legacy documents ([`super::discovery`]).

use super::discovery;
use fieldstore_engine::store::TypeSpec;
use serde_json::{json, Value};
use std::collections::HashMap;

/// The content type of an aggregated discovery answer.
pub(crate) const CONTENT_TYPE: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// Whether an `Accept` header asks for aggregated discovery before any legacy form: its first
/// range the server can answer is `application/json` with `g=apidiscovery.k8s.io`, `v=v2`,
/// `as=APIGroupDiscoveryList` (v2beta1 and protobuf ranges are passed over).
pub(crate) fn wanted(accept: &str) -> bool {
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        let params: HashMap<&str, &str> = parts.filter_map(|p| p.split_once('=')).map(|(k, v)| (k.trim(), v.trim())).collect();
        match (params.get("as").copied(), params.get("g").copied(), params.get("v").copied()) {
            (Some("APIGroupDiscoveryList"), Some("apidiscovery.k8s.io"), Some("v2")) if media == "application/json" => return true,
            (Some(_), _, _) => {}
            (None, _, _) if matches!(media.as_str(), "application/json" | "application/*" | "*/*") => return false,
            (None, _, _) => {}
        }
    }
    false
}

/// The `APIGroupDiscoveryList` of the core group (`core`, for `/api`) or of every other group
/// (`/apis`), in the order of the legacy documents.
pub(crate) fn document(types: &[TypeSpec], categories: &HashMap<String, Vec<String>>, core: bool) -> Value {
    let mut items = Vec::new();
    if core {
        items.extend(group_item(types, categories, "", &["v1".to_string()]));
    } else {
        for (name, versions) in discovery::groups(types) {
            items.extend(group_item(types, categories, &name, &versions));
        }
    }
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items})
}

/// One group's `APIGroupDiscovery` (the core group's has no name).
fn group_item(types: &[TypeSpec], categories: &HashMap<String, Vec<String>>, group: &str, versions: &[String]) -> Option<Value> {
    let versions: Vec<Value> =
        versions.iter().filter_map(|v| discovery::resource_list(types, categories, group, v).map(|list| version_item(v, &list))).collect();
    if versions.is_empty() {
        return None;
    }
    let metadata = if group.is_empty() { json!({}) } else { json!({"name": group}) };
    Some(json!({"metadata": metadata, "versions": versions}))
}

/// One version's `APIVersionDiscovery`, from its legacy `APIResourceList`: `a/b` entries become
/// subresources `b` of resource `a`.
fn version_item(version: &str, list: &Value) -> Value {
    let entries = list["resources"].as_array().map(Vec::as_slice).unwrap_or_default();
    let mut resources: Vec<Value> = Vec::new();
    for r in entries.iter().filter(|r| !r["name"].as_str().unwrap_or("").contains('/')) {
        let name = r["name"].as_str().unwrap_or("");
        let mut out = json!({
            "resource": name,
            "responseKind": {"group": "", "version": "", "kind": r["kind"]},
            "scope": if r["namespaced"] == true { "Namespaced" } else { "Cluster" },
            "singularResource": r["singularName"],
            "verbs": r["verbs"],
        });
        for key in ["shortNames", "categories"] {
            if let Some(v) = r.get(key) {
                out[key] = v.clone();
            }
        }
        let mut subresources: Vec<Value> = entries
            .iter()
            .filter_map(|s| {
                let sub = s["name"].as_str()?.strip_prefix(name)?.strip_prefix('/')?;
                let kind = json!({"group": s.get("group").unwrap_or(&json!("")), "version": s.get("version").unwrap_or(&json!("")), "kind": s["kind"]});
                Some(json!({"subresource": sub, "responseKind": kind, "verbs": s["verbs"]}))
            })
            .collect();
        subresources.sort_by(|a, b| a["subresource"].as_str().cmp(&b["subresource"].as_str()));
        if !subresources.is_empty() {
            out["subresources"] = Value::Array(subresources);
        }
        resources.push(out);
    }
    resources.sort_by(|a, b| a["resource"].as_str().cmp(&b["resource"].as_str()));
    json!({"version": version, "resources": resources, "freshness": "Current"})
}

#[cfg(test)]
mod tests {
    use super::*;
    use fieldstore_engine::store::builtin_types;

    #[test]
    fn accept_ranges_in_order() {
        let kubectl = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert!(wanted(kubectl));
        assert!(wanted("application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"));
        assert!(!wanted("application/json, */*"));
        assert!(!wanted("application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"));
        assert!(!wanted(""));
    }

    #[test]
    fn deployments_as_kube_apiserver_lists_them() {
        let doc = document(&builtin_types(), &HashMap::new(), false);
        let apps = doc["items"].as_array().unwrap().iter().find(|g| g["metadata"]["name"] == "apps").unwrap();
        let deploy = apps["versions"][0]["resources"].as_array().unwrap().iter().find(|r| r["resource"] == "deployments").unwrap();
        let subs: Vec<&str> = deploy["subresources"].as_array().unwrap().iter().map(|s| s["subresource"].as_str().unwrap()).collect();
        assert_eq!(subs, ["scale", "status"]);
        assert_eq!(deploy["subresources"][0]["responseKind"], json!({"group": "autoscaling", "version": "v1", "kind": "Scale"}));
        let core = document(&builtin_types(), &HashMap::new(), true);
        assert_eq!(core["items"][0]["metadata"], json!({}));
    }
}
