//! The namespace lifecycle (`Options::namespace_lifecycle`), as kube-apiserver's
//! `NamespaceLifecycle` admission and kube-controller-manager's namespace controller keep it:
//! content only in namespaces that exist and are not being deleted, the protected namespaces,
//! deletion through `Terminating` with the contents deleted first (objects with finalizers waited
//! for), and a deletion resumed when the store opens again.
// Needs the RocksDB-backed store (the engine's `store` feature).
#![cfg(feature = "store")]

use fieldstore_engine::status::Status;
use fieldstore_engine::store::{Collection, DeleteOptions, GetOptions, ObjectKey, Options, Store, WriteOptions};
use fieldstore_engine::Error;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

mod support;

fn lifecycle() -> Options {
    Options::default().namespace_lifecycle(true)
}

fn ns(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
}

fn cm(name: &str, finalizers: &[&str]) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "finalizers": finalizers}, "data": {"k": "v"}})
}

fn get(store: &Store, resource: &str, ns: Option<&str>, name: &str) -> Result<Value, Error> {
    store.get(&ObjectKey::new(resource, ns, name), &GetOptions::default())
}

/// Waits (up to 10 s) until `done` holds.
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(10), "not within 10 s: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn content_goes_only_into_namespaces_that_exist() {
    let dir = tempfile::tempdir().unwrap();
    let store = support::open_at(dir.path(), lifecycle());
    let w = WriteOptions::new("test");
    let e = store.create(&Collection::new("configmaps", Some("nowhere")), &cm("a", &[]), &w).unwrap_err();
    assert!(matches!(&e, Error::NotFound { resource, name } if resource == "namespaces" && name == "nowhere"), "{e}");
    assert_eq!(Status::from(&e).code, 404);
    // An apply that would create is refused the same way; cluster-scoped kinds are not concerned.
    let e = store.apply(&Collection::new("configmaps", Some("nowhere")), &cm("a", &[]), &WriteOptions::new("m")).unwrap_err();
    assert!(matches!(&e, Error::NotFound { resource, .. } if resource == "namespaces"), "{e}");
    store.create(&Collection::new("namespaces", None), &ns("here"), &w).unwrap();
    store.create(&Collection::new("configmaps", Some("here")), &cm("a", &[]), &w).unwrap();
    // Without the lifecycle (the default), a store keeps objects in any namespace.
    drop(store);
    let plain = support::open_at(dir.path(), Options::default());
    plain.create(&Collection::new("configmaps", Some("nowhere")), &cm("a", &[]), &w).unwrap();
}

#[test]
fn the_namespaces_kubernetes_keeps_cannot_be_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let store = support::open_at(dir.path(), lifecycle());
    store.ensure_namespaces().unwrap();
    for name in ["default", "kube-system", "kube-public"] {
        let e = store.delete(&ObjectKey::new("namespaces", None, name), &DeleteOptions::default()).unwrap_err();
        let status = Status::from(&e);
        assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"), "{e}");
        assert_eq!(status.message, format!("namespaces \"{name}\" is forbidden: this namespace may not be deleted"));
        assert!(get(&store, "namespaces", None, name).is_ok());
    }
    // kube-node-lease is not protected.
    store.delete(&ObjectKey::new("namespaces", None, "kube-node-lease"), &DeleteOptions::default()).unwrap();
    eventually("kube-node-lease gone", || get(&store, "namespaces", None, "kube-node-lease").is_err());
}

#[test]
fn a_deleted_namespace_terminates_deletes_its_contents_and_goes() {
    let dir = tempfile::tempdir().unwrap();
    let store = support::open_at(dir.path(), lifecycle());
    let w = WriteOptions::new("test");
    store.create(&Collection::new("namespaces", None), &ns("team"), &w).unwrap();
    store.create(&Collection::new("namespaces", None), &ns("other"), &w).unwrap();
    let team = Collection::new("configmaps", Some("team"));
    for i in 0..20 {
        store.create(&team, &cm(&format!("c{i}"), &[]), &w).unwrap();
    }
    store.create(&team, &cm("held", &["example.com/hold"]), &w).unwrap();
    store.create(&Collection::new("configmaps", Some("other")), &cm("kept", &[]), &w).unwrap();

    let answer = store.delete(&ObjectKey::new("namespaces", None, "team"), &DeleteOptions::default()).unwrap();
    assert_eq!(answer["status"]["phase"], "Terminating");
    assert!(answer["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(answer["spec"]["finalizers"], json!(["kubernetes"]));

    // Nothing new goes in while it terminates.
    let e = store.create(&team, &cm("late", &[]), &w).unwrap_err();
    let status = Status::from(&e);
    assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        status.message,
        "configmaps \"late\" is forbidden: unable to create new content in namespace team because it is being terminated"
    );
    let cause = &status.details.as_ref().unwrap().causes[0];
    assert_eq!((cause.cause_type.as_str(), cause.field.as_str()), ("NamespaceTerminating", "metadata.namespace"));
    assert_eq!(cause.message, "namespace team is being terminated");

    // The contents go; the one with a finalizer waits, marked deleted, and holds the namespace.
    let marked = |v: &Value| v["metadata"]["deletionTimestamp"].is_string();
    eventually("the held object marked deleted", || get(&store, "configmaps", Some("team"), "held").is_ok_and(|v| marked(&v)));
    for i in 0..20 {
        assert!(matches!(get(&store, "configmaps", Some("team"), &format!("c{i}")), Err(Error::NotFound { .. })));
    }
    let held = get(&store, "configmaps", Some("team"), "held").unwrap();
    assert_eq!(get(&store, "namespaces", None, "team").unwrap()["status"]["phase"], "Terminating");
    assert!(get(&store, "configmaps", Some("other"), "kept").is_ok());

    // Its last finalizer removed, the object goes, and then the namespace.
    let mut released = held.clone();
    released["metadata"]["finalizers"] = json!([]);
    store.update(&team, &released, &w).unwrap();
    eventually("the namespace gone", || matches!(get(&store, "namespaces", None, "team"), Err(Error::NotFound { .. })));
    assert!(get(&store, "configmaps", Some("other"), "kept").is_ok());
}

#[test]
fn a_namespace_being_deleted_when_the_store_closed_goes_when_it_opens() {
    let dir = tempfile::tempdir().unwrap();
    let store = support::open_at(dir.path(), lifecycle());

    // As a restore or a crash would leave it: Terminating, its contents still there.
    let mut terminating = ns("old");
    terminating["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    terminating["spec"] = json!({"finalizers": ["kubernetes"]});
    terminating["status"] = json!({"phase": "Terminating"});
    store.import(&Collection::new("namespaces", None), &terminating, "restore").unwrap();
    store.import(&Collection::new("configmaps", Some("old")), &cm("left", &[]), "restore").unwrap();
    drop(store);
    let store = support::open_at(dir.path(), lifecycle());
    eventually("the namespace gone", || matches!(get(&store, "namespaces", None, "old"), Err(Error::NotFound { .. })));
    assert!(matches!(get(&store, "configmaps", Some("old"), "left"), Err(Error::NotFound { .. })));
}
