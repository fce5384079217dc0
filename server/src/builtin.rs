//! The built-in types `fieldstore serve` registers: v1 ConfigMap, Secret, Namespace, Pod,
//! Service and apps/v1 Deployment, with the list types and merge keys Kubernetes gives them
//! (containers by `name`, container ports by `containerPort` + `protocol`, service ports by
//! `port` + `protocol`, env and volumes by `name`, volume mounts by `mountPath`, conditions by
//! `type`, a Deployment's selector atomic). Fields not modelled here are kept as in a schemaless
//! object (granular maps, atomic lists).

use fieldstore_engine::store::TypeSpec;
use fieldstore_engine::Result;
use serde_json::{json, Value};

fn string() -> Value {
    json!({"type": "string"})
}

fn string_map() -> Value {
    json!({"type": "object", "additionalProperties": {"type": "string"}})
}

fn loose() -> Value {
    json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
}

fn map_list(keys: &[&str], item: Value) -> Value {
    json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": keys, "items": item})
}

fn atomic_list(item: Value) -> Value {
    json!({"type": "array", "x-kubernetes-list-type": "atomic", "items": item})
}

/// An object schema whose other fields are kept as schemaless data.
fn object(properties: Value) -> Value {
    json!({"type": "object", "properties": properties, "x-kubernetes-preserve-unknown-fields": true})
}

fn conditions() -> Value {
    map_list(&["type"], object(json!({"type": string(), "status": string(), "reason": string(), "message": string()})))
}

fn container() -> Value {
    object(json!({
        "name": string(),
        "image": string(),
        "command": atomic_list(string()),
        "args": atomic_list(string()),
        "env": map_list(&["name"], object(json!({"name": string(), "value": string()}))),
        "ports": map_list(&["containerPort", "protocol"], object(json!({
            "containerPort": {"type": "integer"},
            "protocol": {"type": "string", "default": "TCP"},
            "name": string()}))),
        "volumeMounts": map_list(&["mountPath"], object(json!({"mountPath": string(), "name": string()}))),
        "resources": object(json!({"limits": string_map(), "requests": string_map()})),
    }))
}

fn pod_spec() -> Value {
    object(json!({
        "containers": map_list(&["name"], container()),
        "initContainers": map_list(&["name"], container()),
        "volumes": map_list(&["name"], object(json!({"name": string()}))),
        "nodeSelector": string_map(),
        "tolerations": atomic_list(loose()),
    }))
}

/// The schema loader wants a CRD's group: core types carry this one in their definition, and
/// an empty group in their [`TypeSpec`].
const CORE_PLACEHOLDER: &str = "core.builtin.fieldstore";

fn crd(group: &str, version: &str, kind: &str, plural: &str, namespaced: bool, status: bool, properties: Value) -> Value {
    let group = if group.is_empty() { CORE_PLACEHOLDER } else { group };
    let mut v = json!({"name": version, "served": true, "storage": true,
        "schema": {"openAPIV3Schema": {"type": "object", "properties": properties}}});
    if status {
        v["subresources"] = json!({"status": {}});
    }
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {"group": group, "scope": if namespaced { "Namespaced" } else { "Cluster" },
            "names": {"kind": kind, "plural": plural}, "versions": [v]}})
}

/// The built-in types, as CustomResourceDefinitions (core types under a placeholder group).
pub fn definitions() -> Vec<Value> {
    vec![
        crd(
            "",
            "v1",
            "ConfigMap",
            "configmaps",
            true,
            false,
            json!({"data": string_map(), "binaryData": string_map(), "immutable": {"type": "boolean"}}),
        ),
        crd(
            "",
            "v1",
            "Secret",
            "secrets",
            true,
            false,
            json!({"data": string_map(), "stringData": string_map(), "type": string(), "immutable": {"type": "boolean"}}),
        ),
        crd(
            "",
            "v1",
            "Namespace",
            "namespaces",
            false,
            true,
            json!({"spec": object(json!({"finalizers": atomic_list(string())})), "status": object(json!({"phase": string(), "conditions": conditions()}))}),
        ),
        crd(
            "",
            "v1",
            "Pod",
            "pods",
            true,
            true,
            json!({"spec": pod_spec(), "status": object(json!({"phase": string(), "conditions": conditions()}))}),
        ),
        crd(
            "",
            "v1",
            "Service",
            "services",
            true,
            true,
            json!({
            "spec": object(json!({
                "selector": string_map(),
                "ports": map_list(&["port", "protocol"], object(json!({"port": {"type": "integer"}, "protocol": {"type": "string", "default": "TCP"}, "name": string(), "targetPort": {"x-kubernetes-int-or-string": true}}))),
                "type": string()})),
            "status": loose()}),
        ),
        crd(
            "apps",
            "v1",
            "Deployment",
            "deployments",
            true,
            true,
            json!({
            "spec": object(json!({
                "replicas": {"type": "integer"},
                "selector": {"type": "object", "x-kubernetes-map-type": "atomic", "x-kubernetes-preserve-unknown-fields": true},
                "template": object(json!({"metadata": loose(), "spec": pod_spec()})),
                "strategy": loose()})),
            "status": object(json!({"replicas": {"type": "integer"}, "readyReplicas": {"type": "integer"}, "conditions": conditions()}))}),
        ),
    ]
}

/// The built-in type specs.
///
/// # Errors
/// A definition does not load (a bug: they are tested).
pub fn types() -> Result<Vec<TypeSpec>> {
    definitions()
        .iter()
        .map(|d| {
            let mut spec = TypeSpec::from_crd(d)?;
            if spec.group == CORE_PLACEHOLDER {
                spec.group = String::new();
            }
            Ok(spec)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use fieldstore_engine::store::{Options, Store, WriteOptions};

    #[test]
    fn builtins_load_and_merge_containers_and_ports_by_key() {
        let dir = std::env::temp_dir().join(format!("fs-builtin-{}", std::process::id()));
        let store = Store::open(&dir, Options::default().sync(false)).unwrap();
        for t in types().unwrap() {
            store.register(t).unwrap();
        }
        assert_eq!(store.types().len(), 6);
        let d = |image: &str, manager: &str, port: i64| {
            let cfg = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                "spec": {"template": {"spec": {"containers": [{"name": manager, "image": image, "ports": [{"containerPort": port}]}]}}}});
            store.apply("deployments.apps", Some("default"), &cfg, &WriteOptions::new(manager)).unwrap()
        };
        d("a:1", "a", 80);
        let out = d("b:1", "b", 81);
        // Two managers, two containers: the list merged by name, not replaced.
        let containers = out["spec"]["template"]["spec"]["containers"].as_array().unwrap();
        assert_eq!(containers.len(), 2, "{containers:#?}");
        let blame = store.blame("deployments.apps", Some("default"), "web").unwrap();
        assert!(
            blame
                .iter()
                .any(|l| l.path == r#".spec.template.spec.containers[name="b"].ports[containerPort=81,protocol="TCP"].containerPort"#),
            "{blame:#?}"
        );
        drop(store);
        std::fs::remove_dir_all(&dir).ok();
    }
}
