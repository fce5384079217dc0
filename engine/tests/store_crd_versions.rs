//! Custom resources as kube-apiserver serves them beyond one version: every served version of a
//! CustomResourceDefinition (`conversion.strategy: None`) reads and writes the same objects, each
//! at its own apiVersion and with its own schema, stored at the storage version; a version that
//! needs a conversion webhook fails with a conversion error; `selectableFields` are field
//! selectors; deleting a definition deletes its objects (waiting for their finalizers), then the
//! definition and its type, also across a restart.
// Needs the RocksDB-backed store (the engine's `store` feature).
#![cfg(feature = "store")]
#![allow(clippy::unwrap_used)]

use fieldstore_engine::status::Status;
use fieldstore_engine::store::{
    Collection, DeleteOptions, GetOptions, ListOptions, ObjectKey, Options, Store, WatchEvent, WatchOptions, WriteOptions,
    CRD_CLEANUP_FINALIZER,
};
use fieldstore_engine::Error;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

mod support;

const CRDS: &str = "customresourcedefinitions.apiextensions.k8s.io";

/// A schema with `spec.color` a string and `spec.size` of type `size`.
fn schema(size: &str) -> Value {
    json!({"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "color": {"type": "string"}, "size": {"type": size}}}}}})
}

/// Widgets: `v1beta1` (served, deprecated, `spec.size` a string), `v1` (served, storage,
/// `spec.color` selectable), `v2alpha1` (not served).
fn widgets() -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
        "versions": [
            {"name": "v1beta1", "served": true, "storage": false, "deprecated": true, "schema": schema("string")},
            {"name": "v1", "served": true, "storage": true, "schema": schema("integer"),
                "selectableFields": [{"jsonPath": ".spec.color"}]},
            {"name": "v2alpha1", "served": false, "storage": false, "schema": schema("integer")},
        ]}})
}

fn widget(version: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": format!("example.com/{version}"), "kind": "Widget", "metadata": {"name": name}, "spec": spec})
}

fn at(version: &str) -> Collection {
    Collection::new(format!("widgets.{version}.example.com"), Some("default"))
}

fn get(store: &Store, resource: &str, name: &str) -> Result<Value, Error> {
    store.get(&ObjectKey::new(resource, Some("default"), name), &GetOptions::default())
}

fn crd(store: &Store) -> Result<Value, Error> {
    store.get(&ObjectKey::new(CRDS, None, "widgets.example.com"), &GetOptions::default())
}

/// Waits (up to 10 s) until `done` holds.
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(10), "not within 10 s: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn defined(options: Options) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = support::open_at(dir.path(), options);
    store.create(&Collection::new(CRDS, None), &widgets(), &WriteOptions::new("admin")).unwrap();
    (dir, store)
}

#[test]
fn every_served_version_reads_and_writes_the_same_objects() {
    let (_dir, store) = defined(Options::default());
    let me = WriteOptions::new("me");
    // Written at v1beta1: answered at v1beta1, stored at v1, managed at v1beta1.
    let created = store.create(&at("v1beta1"), &widget("v1beta1", "a", json!({"color": "blue", "size": "big"})), &me).unwrap();
    assert_eq!(created["apiVersion"], "example.com/v1beta1");
    assert_eq!(created["metadata"]["managedFields"][0]["apiVersion"], "example.com/v1beta1");
    assert_eq!(get(&store, "widgets.example.com", "a").unwrap()["apiVersion"], "example.com/v1");
    assert_eq!(get(&store, "widgets.v1.example.com", "a").unwrap()["apiVersion"], "example.com/v1");
    let old = get(&store, "widgets.v1beta1.example.com", "a").unwrap();
    assert_eq!((old["apiVersion"].as_str(), &old["spec"]["size"]), (Some("example.com/v1beta1"), &json!("big")));

    // Each version validates with its own schema: `size` is an integer at v1.
    let e = store.apply(&at("v1"), &widget("v1", "b", json!({"size": "big"})), &me).unwrap_err();
    assert_eq!(Status::from(&e).code, 422, "{e}");
    store.apply(&at("v1"), &widget("v1", "b", json!({"color": "red"})), &me).unwrap();
    // An object v1beta1's schema does not accept is not written through it.
    store.apply(&at("v1"), &widget("v1", "n", json!({"size": 3})), &me).unwrap();
    let mut n = get(&store, "widgets.v1beta1.example.com", "n").unwrap();
    n["metadata"]["labels"] = json!({"a": "b"});
    assert_eq!(Status::from(&store.update(&at("v1beta1"), &n, &me).unwrap_err()).code, 422);
    store.delete(&ObjectKey::new("widgets.example.com", Some("default"), "n"), &DeleteOptions::default()).unwrap();
    // A body of another version than the path's is refused.
    assert!(store.apply(&at("v1beta1"), &widget("v1", "c", json!({})), &me).is_err());

    // An update through v1beta1 of an object written at v1.
    let mut b = get(&store, "widgets.v1beta1.example.com", "b").unwrap();
    b["spec"]["color"] = json!("green");
    let updated = store.update(&at("v1beta1"), &b, &me).unwrap();
    assert_eq!(updated["apiVersion"], "example.com/v1beta1");
    assert_eq!(get(&store, "widgets.example.com", "b").unwrap()["spec"]["color"], "green");

    // Lists and watches at each version.
    for v in ["v1beta1", "v1"] {
        let list = store.list(&at(v), &ListOptions::default()).unwrap();
        assert!(list.items.iter().all(|i| i["apiVersion"] == format!("example.com/{v}")), "{v}");
        let text = store.list_json(&at(v), &ListOptions::default()).unwrap();
        for item in &text.items {
            let item: Value = serde_json::from_slice(item).unwrap();
            assert_eq!(item["apiVersion"], format!("example.com/{v}"));
        }
    }
    let mut w = store.watch(&at("v1beta1"), &WatchOptions::default()).unwrap();
    for _ in 0..2 {
        match w.next_timeout(Duration::from_secs(5)) {
            Some(WatchEvent::Added(o)) => assert_eq!(o["apiVersion"], "example.com/v1beta1"),
            other => panic!("{other:?}"),
        }
    }
    store.apply(&at("v1"), &widget("v1", "d", json!({"size": 1})), &me).unwrap();
    match w.next_timeout(Duration::from_secs(5)) {
        Some(WatchEvent::Added(o)) => {
            assert_eq!((o["apiVersion"].as_str(), o["metadata"]["name"].as_str()), (Some("example.com/v1beta1"), Some("d")))
        }
        other => panic!("{other:?}"),
    }
    let deleted = store.delete(&ObjectKey::new("widgets.v1beta1.example.com", Some("default"), "d"), &DeleteOptions::default()).unwrap();
    assert_eq!(deleted["apiVersion"], "example.com/v1beta1");

    // A version not served is no resource.
    assert!(matches!(get(&store, "widgets.v2alpha1.example.com", "a"), Err(Error::NotFound { .. })));
    // The served versions, in kube's order, and the deprecation warning.
    let served: Vec<String> = store.served_types_shared().iter().filter(|t| t.group == "example.com").map(|t| t.version.clone()).collect();
    assert_eq!(served, ["v1", "v1beta1"]);
    let beta = store.resource_type("widgets.v1beta1.example.com").unwrap();
    assert_eq!(beta.deprecation_warning().as_deref(), Some("example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget"));
    assert_eq!(store.resource_type("widgets.v1.example.com").unwrap().deprecation_warning(), None);
}

#[test]
fn stored_versions_keep_every_storage_version() {
    let (_dir, store) = defined(Options::default());
    assert_eq!(crd(&store).unwrap()["status"]["storedVersions"], json!(["v1"]));
    let mut def = crd(&store).unwrap();
    def["spec"]["versions"][0]["storage"] = json!(true);
    def["spec"]["versions"][1]["storage"] = json!(false);
    let me = WriteOptions::new("admin");
    let updated = store.update(&Collection::new(CRDS, None), &def, &me).unwrap();
    assert_eq!(updated["status"]["storedVersions"], json!(["v1", "v1beta1"]));
    // Objects are now stored at v1beta1.
    store.create(&at("v1"), &widget("v1", "a", json!({"size": 2})), &WriteOptions::new("me")).unwrap();
    assert_eq!(get(&store, "widgets.example.com", "a").unwrap()["apiVersion"], "example.com/v1beta1");
    assert_eq!(get(&store, "widgets.v1.example.com", "a").unwrap()["apiVersion"], "example.com/v1");
}

#[test]
fn a_webhook_conversion_serves_the_storage_version_only() {
    let dir = tempfile::tempdir().unwrap();
    let store = support::open_at(dir.path(), Options::default());
    let mut def = widgets();
    def["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"],
        "clientConfig": {"url": "https://example.com/convert"}}});
    store.create(&Collection::new(CRDS, None), &def, &WriteOptions::new("admin")).unwrap();
    let me = WriteOptions::new("me");
    store.create(&at("v1"), &widget("v1", "a", json!({"size": 1})), &me).unwrap();
    let e = get(&store, "widgets.v1beta1.example.com", "a").unwrap_err();
    let status = Status::from(&e);
    assert_eq!((status.code, status.reason.as_str()), (500, "InternalError"));
    assert!(status.message.starts_with("conversion webhook for example.com/v1beta1, Kind=Widget failed"), "{}", status.message);
    assert!(store.create(&at("v1beta1"), &widget("v1beta1", "b", json!({})), &me).is_err());
    // Still listed as served.
    assert!(store.served_types_shared().iter().any(|t| t.group == "example.com" && t.version == "v1beta1"));
}

#[test]
fn selectable_fields_are_field_selectors() {
    let (_dir, store) = defined(Options::default());
    let me = WriteOptions::new("me");
    store.create(&at("v1"), &widget("v1", "a", json!({"color": "blue", "size": 1})), &me).unwrap();
    store.create(&at("v1"), &widget("v1", "b", json!({"color": "red", "size": 1})), &me).unwrap();
    let names = |v: &str, selector: &str| -> Result<Vec<String>, Error> {
        let opts = ListOptions { field_selector: Some(selector.into()), ..ListOptions::default() };
        let list = store.list(&at(v), &opts)?;
        Ok(list.items.iter().map(|i| i["metadata"]["name"].as_str().unwrap().to_string()).collect())
    };
    assert_eq!(names("v1", "spec.color=blue").unwrap(), ["a"]);
    assert_eq!(names("v1", "spec.color!=blue,metadata.name=b").unwrap(), ["b"]);
    assert_eq!(names("v1", "metadata.namespace=default").unwrap(), ["a", "b"]);
    // Not selectable at v1beta1, nor is spec.size anywhere: kube-apiserver's 400.
    for (v, s, field) in [("v1beta1", "spec.color=blue", "spec.color"), ("v1", "spec.size=1", "spec.size")] {
        let e = names(v, s).unwrap_err();
        let status = Status::from(&e);
        assert_eq!((status.code, status.message.as_str()), (400, format!("field label not supported: {field}").as_str()));
    }
    // Watches select the same way.
    let opts = WatchOptions { field_selector: Some("spec.color=red".into()), ..WatchOptions::default() };
    let mut w = store.watch(&at("v1"), &opts).unwrap();
    match w.next_timeout(Duration::from_secs(5)) {
        Some(WatchEvent::Added(o)) => assert_eq!(o["metadata"]["name"], "b"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn deleting_a_definition_deletes_its_objects_then_goes() {
    let (_dir, store) = defined(Options::default());
    let me = WriteOptions::new("me");
    for i in 0..5 {
        store.create(&at("v1"), &widget("v1", &format!("w{i}"), json!({"size": i})), &me).unwrap();
    }
    let mut held = widget("v1", "held", json!({"color": "red"}));
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    store.create(&at("v1"), &held, &me).unwrap();

    let answer = store.delete(&ObjectKey::new(CRDS, None, "widgets.example.com"), &DeleteOptions::default()).unwrap();
    assert_eq!(answer["metadata"]["finalizers"], json!([CRD_CLEANUP_FINALIZER]));
    assert!(answer["metadata"]["deletionTimestamp"].is_string());
    let terminating = |c: &Value| c["status"]["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "Terminating").cloned();
    let cond = terminating(&answer).unwrap();
    assert_eq!((cond["status"].as_str(), cond["reason"].as_str()), (Some("True"), Some("InstanceDeletionPending")));

    // Nothing new is created while it terminates (kube-apiserver's 403).
    let e = store.create(&at("v1"), &widget("v1", "late", json!({})), &me).unwrap_err();
    let status = Status::from(&e);
    assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        status.message,
        "widgets.example.com \"late\" is forbidden: create not allowed while custom resource definition is terminating"
    );

    // The objects go; the one with a finalizer waits, marked deleted, and holds the definition.
    eventually("the held object marked deleted", || {
        get(&store, "widgets.example.com", "held").is_ok_and(|v| v["metadata"]["deletionTimestamp"].is_string())
    });
    eventually("the others gone", || (0..5).all(|i| get(&store, "widgets.example.com", &format!("w{i}")).is_err()));
    let def = crd(&store).unwrap();
    let cond = terminating(&def).unwrap();
    assert_eq!(
        (cond["reason"].as_str(), cond["message"].as_str()),
        (Some("InstanceDeletionInProgress"), Some("CustomResource deletion is in progress"))
    );
    // Its objects are still served meanwhile, at every version.
    assert!(get(&store, "widgets.v1beta1.example.com", "held").is_ok());

    // Its last finalizer removed, the object goes, then the definition and its type.
    let mut released = get(&store, "widgets.example.com", "held").unwrap();
    released["metadata"]["finalizers"] = json!([]);
    store.update(&at("v1"), &released, &me).unwrap();
    eventually("the definition gone", || matches!(crd(&store), Err(Error::NotFound { .. })));
    assert!(store.resource_type("widgets.example.com").is_none());
    assert!(store.resource_type("widgets.v1.example.com").is_none());
    assert!(!store.served_types_shared().iter().any(|t| t.group == "example.com"));
    assert!(!store.types().iter().any(|t| t.group == "example.com"));
    assert!(matches!(get(&store, "widgets.example.com", "w1"), Err(Error::NotFound { .. })));
    // The history of its objects stays.
    let log = store.object_log(&ObjectKey::new("widgets.example.com", Some("default"), "held"), None).unwrap();
    assert!(log.len() >= 3, "{log:?}");

    // A new definition of the same name is a new, empty type.
    store.create(&Collection::new(CRDS, None), &widgets(), &WriteOptions::new("admin")).unwrap();
    assert!(store.list(&at("v1"), &ListOptions::default()).unwrap().items.is_empty());
    store.create(&at("v1"), &widget("v1", "w1", json!({})), &me).unwrap();
}

#[test]
fn a_definition_being_deleted_when_the_store_closed_goes_when_it_opens() {
    let dir = tempfile::tempdir().unwrap();
    let store = support::open_at(dir.path(), Options::default());
    // As a restore or a crash would leave it: terminating, its objects still there.
    let mut def = widgets();
    def["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    def["metadata"]["finalizers"] = json!([CRD_CLEANUP_FINALIZER]);
    store.import(&Collection::new(CRDS, None), &def, "restore").unwrap();
    store.import(&at("v1"), &widget("v1", "left", json!({})), "restore").unwrap();
    drop(store);
    let store = support::open_at(dir.path(), Options::default());
    eventually("the definition gone", || matches!(crd(&store), Err(Error::NotFound { .. })));
    assert!(store.resource_type("widgets.example.com").is_none());
    drop(store);
    // And it stays gone.
    let store = support::open_at(dir.path(), Options::default());
    assert!(store.resource_type("widgets.example.com").is_none());
    assert!(matches!(crd(&store), Err(Error::NotFound { .. })));
}
