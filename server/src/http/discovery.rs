//! API discovery: `/version`, `/api`, `/api/v1`, `/apis`, `/apis/GROUP`, `/apis/GROUP/VERSION`
//! for every registered type and the create-only reviews ([`super::review`]). Aggregated
//! discovery (`as=APIGroupDiscoveryList`) is built from these documents ([`super::aggregated`]).

use fieldstore_engine::store::{Collection, ListOptions, SchemaSource, Store, TypeSpec};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};

/// The verbs of every resource.
const VERBS: [&str; 8] = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

/// The verbs of a custom resource, in apiextensions-apiserver's order.
const CUSTOM_VERBS: [&str; 8] = ["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"];

/// The resources Kubernetes puts in the `all` category (`kubectl get all`).
const ALL: [&str; 10] = [
    "pods",
    "services",
    "replicationcontrollers",
    "daemonsets.apps",
    "deployments.apps",
    "replicasets.apps",
    "statefulsets.apps",
    "horizontalpodautoscalers.autoscaling",
    "cronjobs.batch",
    "jobs.batch",
];

/// The server's version (`/version`): the Kubernetes version whose API it serves.
pub(crate) fn version() -> Value {
    json!({
        "major": "1", "minor": "33", "gitVersion": concat!("v1.33.0-fieldstore.", env!("CARGO_PKG_VERSION")),
        "gitCommit": "", "gitTreeState": "clean", "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": "rust", "compiler": "rustc", "platform": format!("{}/{}", std::env::consts::OS, go_arch()),
    })
}

/// The machine architecture as Go names it (`amd64`, `arm64`).
fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        other => other,
    }
}

/// `/api`: the core group's versions.
pub(crate) fn core_versions() -> Value {
    json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}]})
}

/// The versions of each non-core group (`types` has one spec per served version), in kube's
/// order of preference (the first is the preferred version), and the reviews' groups.
pub(crate) fn groups(types: &[TypeSpec]) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (g, v, _, _) in super::review::REVIEWS {
        out.insert(g.to_string(), vec![v.to_string()]);
    }
    for t in types.iter().filter(|t| !t.group.is_empty()) {
        let versions = out.entry(t.group.clone()).or_default();
        if !versions.contains(&t.version) {
            versions.push(t.version.clone());
        }
    }
    out.values_mut().for_each(|vs| fieldstore_engine::store::sort_by_priority(vs));
    out
}

fn group_json(name: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions.iter().map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v})).collect();
    json!({"name": name, "versions": vs, "preferredVersion": vs.first().cloned().unwrap_or(Value::Null)})
}

/// `/apis`: every non-core group.
pub(crate) fn group_list(types: &[TypeSpec]) -> Value {
    let groups: Vec<Value> = groups(types).iter().map(|(g, vs)| group_json(g, vs)).collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/GROUP`, when the group has types.
pub(crate) fn group(types: &[TypeSpec], name: &str) -> Option<Value> {
    let groups = groups(types);
    let vs = groups.get(name)?;
    let mut g = group_json(name, vs);
    g["kind"] = json!("APIGroup");
    g["apiVersion"] = json!("v1");
    Some(g)
}

/// The categories of custom resources, by resource name (`plural.group`), from the stored
/// CustomResourceDefinitions' `spec.names.categories` (a type does not keep them).
pub(crate) fn crd_categories(store: &Store) -> HashMap<String, Vec<String>> {
    let crds = store
        .list(&Collection::new("customresourcedefinitions.apiextensions.k8s.io", None), &ListOptions::default())
        .map(|l| l.items)
        .unwrap_or_default();
    crds.iter()
        .filter_map(|c| {
            let s = |p: &str| c.pointer(p).and_then(Value::as_str).unwrap_or("");
            let cats: Vec<String> =
                c.pointer("/spec/names/categories")?.as_array()?.iter().filter_map(|v| v.as_str().map(str::to_string)).collect();
            Some((format!("{}.{}", s("/spec/names/plural"), s("/spec/group")), cats))
        })
        .collect()
}

/// `/api/v1` or `/apis/GROUP/VERSION`, when the group-version has types: each resource with
/// its verbs, names, scope and categories (`crd_categories` for custom resources), and its
/// `status` and `scale` subresources.
pub(crate) fn resource_list(
    types: &[TypeSpec],
    crd_categories: &HashMap<String, Vec<String>>,
    group: &str,
    version: &str,
) -> Option<Value> {
    let mut resources = Vec::new();
    for t in types.iter().filter(|t| t.group == group && t.version == version) {
        let mut r = json!({
            "name": t.plural, "singularName": t.kind.to_lowercase(), "namespaced": t.namespaced,
            "kind": t.kind, "verbs": if matches!(t.schema, SchemaSource::Crd(_)) { CUSTOM_VERBS } else { VERBS },
        });
        if !t.short_names.is_empty() {
            r["shortNames"] = json!(t.short_names);
        }
        if ALL.contains(&t.resource().as_str()) {
            r["categories"] = json!(["all"]);
        } else if let Some(cats) = crd_categories.get(&t.resource()).filter(|c| !c.is_empty()) {
            r["categories"] = json!(cats);
        }
        resources.push(r);
        let scale = fieldstore_engine::store::has_scale(t).then(|| {
            json!({"name": format!("{}/scale", t.plural), "singularName": "", "namespaced": t.namespaced,
                "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"]})
        });
        // In kube-apiserver's order: a built-in's scale before its status, a custom resource's after.
        let custom = t.scale.is_some();
        if !custom {
            resources.extend(scale.clone());
        }
        if t.group.is_empty() && t.kind == "Namespace" {
            resources.push(json!({"name": "namespaces/finalize", "singularName": "", "namespaced": false,
                "kind": "Namespace", "verbs": ["update"]}));
        }
        if t.status_subresource {
            resources.push(json!({"name": format!("{}/status", t.plural), "singularName": "", "namespaced": t.namespaced,
                "kind": t.kind, "verbs": ["get", "patch", "update"]}));
        }
        if custom {
            resources.extend(scale);
        }
    }
    for (_, _, plural, kind) in super::review::REVIEWS.iter().filter(|(g, v, _, _)| *g == group && *v == version) {
        resources
            .push(json!({"name": plural, "singularName": kind.to_lowercase(), "namespaced": false, "kind": kind, "verbs": ["create"]}));
    }
    if resources.is_empty() {
        return None;
    }
    let gv = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
    Some(json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}))
}

#[cfg(test)]
mod tests {
    use super::*;
    use fieldstore_engine::store::builtin_types;

    #[test]
    fn builtin_discovery() {
        let types = builtin_types();
        let core = resource_list(&types, &HashMap::new(), "", "v1").unwrap();
        let pods = core["resources"].as_array().unwrap().iter().find(|r| r["name"] == "pods").unwrap();
        assert_eq!(pods["shortNames"], json!(["po"]));
        assert_eq!(pods["categories"], json!(["all"]));
        assert!(core["resources"].as_array().unwrap().iter().any(|r| r["name"] == "pods/status"));
        let apps = group(&types, "apps").unwrap();
        assert_eq!(apps["preferredVersion"]["groupVersion"], "apps/v1");
        assert!(group_list(&types)["groups"].as_array().unwrap().iter().all(|g| g["name"] != ""));
        assert!(resource_list(&types, &HashMap::new(), "apps", "v9").is_none());
    }
}
