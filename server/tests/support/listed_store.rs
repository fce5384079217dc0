//! A store holding a long list to read, for the streamed-list tests (HTTP and gRPC). Included
//! with `#[path]` by the tests that need it.
#![allow(clippy::unwrap_used, reason = "test support: a failed setup is a failed test")]

use fieldstore_engine::store::{Collection, ObjectKey, Options, Store, TypeSpec, WriteOptions};
use serde_json::json;

/// A store with ConfigMaps of about 3.6 KiB in two namespaces (5 MB: more than a protobuf answer's kept
/// bytes, so that both of its passes run), some deleted and rewritten, and a few custom resources.
pub fn populated() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), Options::default().sync(false).builtin_types(true)).unwrap();
    let w = WriteOptions::new("loader");
    for i in 0..1400 {
        let ns = if i % 2 == 0 { "a" } else { "b" };
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("c{i:04}"), "namespace": ns, "labels": {"tier": format!("t{}", i % 3)}},
            "data": {"payload": "x".repeat(3500 + i % 50), "index": i.to_string()}});
        store.apply(&Collection::new("configmaps", Some(ns)), &cm, &w).unwrap();
    }
    for i in (0..1400).step_by(37) {
        let ns = if i % 2 == 0 { "a" } else { "b" };
        store.delete(&ObjectKey::new("configmaps", Some(ns), format!("c{i:04}")), &Default::default()).unwrap();
    }
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced", "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": {
                    "size": {"type": "integer"}}}}}}}]}});
    store.register(TypeSpec::from_crd(&crd).unwrap()).unwrap();
    for i in 0..5 {
        let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": format!("w{i}")}, "spec": {"size": i}});
        store.apply(&Collection::new("widgets.example.com", Some("a")), &widget, &w).unwrap();
    }
    (dir, store)
}
