//! Every write verb: create, get, update, apply, patch, delete (finalizers), delete-collection,
//! the status subresource, a custom resource's scale subresource and dry-run.
// Needs the RocksDB-backed store (the engine's `store` feature).
#![cfg(feature = "store")]
#![allow(clippy::unwrap_used)] // helpers unwrap too: a failed setup is a failed test

use fieldstore_engine::patch::PatchType;
use fieldstore_engine::store::{
    Collection, DeleteOptions, GetOptions, ListOptions, ObjectKey, Options, Revision, ScaleChange, SchemaSource, Store, TypeSpec,
    WriteOptions,
};
use fieldstore_engine::{Error, Reason};
use serde_json::{json, Value};

mod support;
use support::{cm, TestStore};

/// A store in a temporary directory with configmaps and widgets (status subresource).
fn new_store() -> TestStore {
    let store = TestStore::new(Options::default());
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced", "names": {"kind": "Widget", "plural": "widgets"},
              "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                  "spec": {"type": "object", "properties": {"size": {"type": "integer"}, "color": {"type": "string"}}},
                  "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}}}}}]}});
    let spec = TypeSpec::from_crd(&crd).unwrap();
    assert!(spec.status_subresource);
    assert!(matches!(spec.schema, SchemaSource::Crd(_)));
    store.register(spec).unwrap();
    store
}

fn widget(name: &str, size: i64) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": {"size": size}})
}

fn w() -> WriteOptions {
    WriteOptions::new("test")
}

fn get(s: &Store, res: &str, name: &str) -> Result<Value, Error> {
    s.get(&ObjectKey::new(res, Some("ns"), name), &GetOptions::default())
}

#[test]
fn create_sets_server_fields_and_rejects_duplicates() {
    let s = new_store();
    let o = s.create(&Collection::new("configmaps", Some("ns")), &cm("a", json!({"k": "v"})), &w()).unwrap();
    let m = &o["metadata"];
    assert_eq!(m["uid"].as_str().unwrap().len(), 36);
    assert!(m["creationTimestamp"].as_str().unwrap().ends_with('Z'));
    assert_eq!(m["generation"], 1);
    assert_eq!(m["namespace"], "ns");
    assert_eq!(m["resourceVersion"], "1");
    assert_eq!(m["managedFields"][0]["manager"], "test");
    assert_eq!(m["managedFields"][0]["operation"], "Update");
    assert_eq!(get(&s, "configmaps", "a").unwrap(), o);
    let e = s.create(&Collection::new("configmaps", Some("ns")), &cm("a", json!({})), &w()).unwrap_err();
    assert!(matches!(e, Error::AlreadyExists { .. }));
    assert_eq!(e.reason(), Reason::AlreadyExists);
    assert_eq!(e.reason().code(), 409);
}

#[test]
fn generate_name_makes_a_unique_name() {
    let s = new_store();
    let o = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "job-"}});
    let a = s.create(&Collection::new("configmaps", Some("ns")), &o, &w()).unwrap();
    let b = s.create(&Collection::new("configmaps", Some("ns")), &o, &w()).unwrap();
    let (na, nb) = (a["metadata"]["name"].as_str().unwrap(), b["metadata"]["name"].as_str().unwrap());
    assert!(na.starts_with("job-") && na.len() == 9);
    assert_ne!(na, nb);
}

#[test]
fn update_with_a_stale_resource_version_conflicts() {
    let s = new_store();
    let a = s.create(&Collection::new("configmaps", Some("ns")), &cm("a", json!({"k": "1"})), &w()).unwrap();
    let mut first = a.clone();
    first["data"]["k"] = json!("2");
    s.update(&Collection::new("configmaps", Some("ns")), &first, &w()).unwrap();
    let mut stale = a.clone();
    stale["data"]["k"] = json!("3");
    let e = s.update(&Collection::new("configmaps", Some("ns")), &stale, &w()).unwrap_err();
    assert!(matches!(e, Error::Precondition { .. }), "{e}");
    assert_eq!(e.reason(), Reason::Conflict);
    assert!(e.to_string().contains("the object has been modified"));
    // Without a resourceVersion the update is unconditional.
    stale["metadata"].as_object_mut().unwrap().remove("resourceVersion");
    let out = s.update(&Collection::new("configmaps", Some("ns")), &stale, &w()).unwrap();
    assert_eq!(out["data"]["k"], "3");
    assert!(matches!(s.update(&Collection::new("configmaps", Some("ns")), &cm("missing", json!({})), &w()), Err(Error::NotFound { .. })));
}

#[test]
fn apply_creates_is_idempotent_and_reports_conflicts() {
    let s = new_store();
    let cfg = cm("a", json!({"k": "1"}));
    let a = s.apply(&Collection::new("configmaps", Some("ns")), &cfg, &WriteOptions::new("alice")).unwrap();
    assert_eq!(a["metadata"]["resourceVersion"], "1");
    assert_eq!(a["metadata"]["managedFields"][0]["operation"], "Apply");
    let again = s.apply(&Collection::new("configmaps", Some("ns")), &cfg, &WriteOptions::new("alice")).unwrap();
    assert_eq!(again["metadata"]["resourceVersion"], "1");
    assert_eq!(s.revision(), Revision(1));
    let e = s.apply(&Collection::new("configmaps", Some("ns")), &cm("a", json!({"k": "2"})), &WriteOptions::new("bob")).unwrap_err();
    assert!(matches!(e, Error::Conflict(_)), "{e}");
    assert_eq!(s.revision(), Revision(1));
    let forced =
        s.apply(&Collection::new("configmaps", Some("ns")), &cm("a", json!({"k": "2"})), &WriteOptions::new("bob").force(true)).unwrap();
    assert_eq!(forced["data"]["k"], "2");
    assert_eq!(forced["metadata"]["resourceVersion"], "2");
}

#[test]
fn generation_moves_only_with_the_spec() {
    let s = new_store();
    let o = s.create(&Collection::new("widgets.example.com", Some("ns")), &widget("w", 1), &w()).unwrap();
    assert_eq!(o["metadata"]["generation"], 1);
    let mut labelled = o.clone();
    labelled["metadata"]["labels"] = json!({"a": "b"});
    let l = s.update(&Collection::new("widgets.example.com", Some("ns")), &labelled, &w()).unwrap();
    assert_eq!(l["metadata"]["generation"], 1);
    let mut bigger = l.clone();
    bigger["spec"]["size"] = json!(2);
    let b = s.update(&Collection::new("widgets.example.com", Some("ns")), &bigger, &w()).unwrap();
    assert_eq!(b["metadata"]["generation"], 2);
}

#[test]
fn status_subresource_separates_spec_and_status() {
    let s = new_store();
    let mut o = widget("w", 1);
    o["status"] = json!({"ready": true});
    let created = s.create(&Collection::new("widgets.example.com", Some("ns")), &o, &w()).unwrap();
    assert!(created.get("status").is_none(), "status is dropped on create");
    // A status write changes only the status.
    let mut st = created.clone();
    st["status"] = json!({"ready": true});
    st["spec"]["size"] = json!(99);
    let after = s.update(&Collection::new("widgets.example.com", Some("ns")), &st, &w().status(true)).unwrap();
    assert_eq!(after["status"]["ready"], true);
    assert_eq!(after["spec"]["size"], 1);
    assert_eq!(after["metadata"]["generation"], 1);
    // A main-resource write keeps the status.
    let mut main = after.clone();
    main["status"] = json!({"ready": false});
    main["spec"]["size"] = json!(3);
    let m = s.update(&Collection::new("widgets.example.com", Some("ns")), &main, &w()).unwrap();
    assert_eq!(m["status"]["ready"], true);
    assert_eq!(m["spec"]["size"], 3);
    assert_eq!(m["metadata"]["generation"], 2);
    // Apply through the status subresource.
    let cfg = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "status": {"ready": false}});
    let a =
        s.apply(&Collection::new("widgets.example.com", Some("ns")), &cfg, &WriteOptions::new("ctrl").status(true).force(true)).unwrap();
    assert_eq!(a["status"]["ready"], false);
    assert!(a["metadata"]["managedFields"].as_array().unwrap().iter().any(|e| e["subresource"] == "status"));
}

#[test]
fn patch_types() {
    let s = new_store();
    s.create(&Collection::new("configmaps", Some("ns")), &cm("a", json!({"x": "1", "y": "2"})), &w()).unwrap();
    let m =
        s.patch(&ObjectKey::new("configmaps", Some("ns"), "a"), PatchType::Merge, &json!({"data": {"x": null, "z": "3"}}), &w()).unwrap();
    assert_eq!(m["data"], json!({"y": "2", "z": "3"}));
    let j = s
        .patch(
            &ObjectKey::new("configmaps", Some("ns"), "a"),
            PatchType::Json,
            &json!([{"op": "replace", "path": "/data/y", "value": "9"}]),
            &w(),
        )
        .unwrap();
    assert_eq!(j["data"]["y"], "9");
    let sm = s.patch(&ObjectKey::new("widgets.example.com", Some("ns"), "nope"), PatchType::Strategic, &json!({}), &w());
    assert!(matches!(sm, Err(Error::NotFound { .. })));
    s.create(&Collection::new("widgets.example.com", Some("ns")), &widget("w", 1), &w()).unwrap();
    let p = s
        .patch(
            &ObjectKey::new("widgets.example.com", Some("ns"), "w"),
            PatchType::Strategic,
            &json!({"spec": {"color": "red"}}),
            &WriteOptions::new("patcher"),
        )
        .unwrap();
    assert_eq!(p["spec"], json!({"size": 1, "color": "red"}));
    assert_eq!(p["metadata"]["generation"], 2);
    let bad = s.patch(
        &ObjectKey::new("configmaps", Some("ns"), "a"),
        PatchType::Json,
        &json!([{"op": "test", "path": "/data/y", "value": "0"}]),
        &w(),
    );
    assert!(matches!(bad, Err(Error::Patch { .. })));
    // A patch carrying a stale resourceVersion is a precondition.
    let stale =
        s.patch(&ObjectKey::new("configmaps", Some("ns"), "a"), PatchType::Merge, &json!({"metadata": {"resourceVersion": "1"}}), &w());
    assert!(matches!(stale, Err(Error::Precondition { .. })));
}

#[test]
fn delete_waits_for_finalizers() {
    let s = new_store();
    let mut o = cm("a", json!({}));
    o["metadata"]["finalizers"] = json!(["example.com/keep"]);
    let created = s.create(&Collection::new("configmaps", Some("ns")), &o, &w()).unwrap();
    let bad_uid = DeleteOptions { uid: Some("nope".into()), ..Default::default() };
    assert!(matches!(s.delete(&ObjectKey::new("configmaps", Some("ns"), "a"), &bad_uid), Err(Error::Precondition { .. })));
    let bad_rv = DeleteOptions { resource_version: Some("99".into()), ..Default::default() };
    assert!(matches!(s.delete(&ObjectKey::new("configmaps", Some("ns"), "a"), &bad_rv), Err(Error::Precondition { .. })));
    let ok = DeleteOptions { uid: created["metadata"]["uid"].as_str().map(str::to_string), ..Default::default() };
    let marked = s.delete(&ObjectKey::new("configmaps", Some("ns"), "a"), &ok).unwrap();
    assert!(marked["metadata"]["deletionTimestamp"].is_string());
    let again = s.delete(&ObjectKey::new("configmaps", Some("ns"), "a"), &Default::default()).unwrap();
    assert_eq!(again["metadata"]["resourceVersion"], marked["metadata"]["resourceVersion"]);
    let live = get(&s, "configmaps", "a").unwrap();
    let mut release = live.clone();
    release["metadata"]["finalizers"] = json!([]);
    s.update(&Collection::new("configmaps", Some("ns")), &release, &w()).unwrap();
    assert!(matches!(get(&s, "configmaps", "a"), Err(Error::NotFound { .. })));
    assert!(matches!(s.delete(&ObjectKey::new("configmaps", Some("ns"), "a"), &Default::default()), Err(Error::NotFound { .. })));
}

#[test]
fn delete_collection_deletes_the_selection() {
    let s = new_store();
    for (n, app) in [("a", "x"), ("b", "x"), ("c", "y")] {
        let mut o = cm(n, json!({}));
        o["metadata"]["labels"] = json!({"app": app});
        s.create(&Collection::new("configmaps", Some("ns")), &o, &w()).unwrap();
    }
    let sel = ListOptions { label_selector: Some("app=x".into()), ..Default::default() };
    let gone = s.delete_collection(&Collection::new("configmaps", Some("ns")), &sel, &Default::default()).unwrap();
    assert_eq!(gone.len(), 2);
    let left = s.list(&Collection::new("configmaps", Some("ns")), &Default::default()).unwrap();
    assert_eq!(left.items.len(), 1);
    assert_eq!(left.items[0]["metadata"]["name"], "c");
}

#[test]
fn dry_run_persists_nothing_for_every_verb() {
    let s = new_store();
    let a = s.create(&Collection::new("configmaps", Some("ns")), &cm("a", json!({"k": "1"})), &w()).unwrap();
    let dry = w().dry_run(true);
    let mut changed = a.clone();
    changed["data"]["k"] = json!("2");
    assert_eq!(s.update(&Collection::new("configmaps", Some("ns")), &changed, &dry).unwrap()["data"]["k"], "2");
    assert_eq!(
        s.apply(&Collection::new("configmaps", Some("ns")), &cm("a", json!({"k": "3"})), &WriteOptions::new("x").dry_run(true).force(true))
            .unwrap()["data"]["k"],
        "3"
    );
    assert_eq!(
        s.patch(&ObjectKey::new("configmaps", Some("ns"), "a"), PatchType::Merge, &json!({"data": {"k": "4"}}), &dry).unwrap()["data"]["k"],
        "4"
    );
    s.delete(&ObjectKey::new("configmaps", Some("ns"), "a"), &DeleteOptions { dry_run: true, ..Default::default() }).unwrap();
    assert_eq!(get(&s, "configmaps", "a").unwrap(), a);
    assert_eq!(s.revision(), Revision(1));
}

/// An import writes the object as another store kept it: uid, creationTimestamp, generation,
/// managedFields and status as given, a fresh resourceVersion, one history record with the
/// note; a second import of the same name is AlreadyExists, and a bad name is refused.
#[test]
fn import_keeps_server_set_metadata_and_records_one_write() {
    let s = new_store();
    let given = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default", "uid": "6f1c7a52-1111-4a4e-9a55-000000000001",
          "creationTimestamp": "2020-01-02T03:04:05Z", "generation": 7, "resourceVersion": "12345",
          "labels": {"app": "x"},
          "managedFields": [{"manager": "kubectl", "operation": "Apply", "apiVersion": "example.com/v1",
            "time": "2020-01-02T03:04:05Z", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {"f:app": {}}}, "f:spec": {"f:size": {}}}}]},
        "spec": {"size": 3}, "status": {"ready": true}});
    let out = s.import(&Collection::new("widgets", Some("default")), &given, "imported from etcd").unwrap();
    let got = s.get(&ObjectKey::new("widgets", Some("default"), "w"), &GetOptions::default()).unwrap();
    assert_eq!(out, got);
    let mut expected = given.clone();
    expected["metadata"]["resourceVersion"] = got["metadata"]["resourceVersion"].clone();
    assert_ne!(got["metadata"]["resourceVersion"], "12345");
    assert_eq!(got, expected);
    let log = s.object_log(&ObjectKey::new("widgets", Some("default"), "w"), None).unwrap();
    assert_eq!(log.len(), 1);
    assert_eq!((log[0].event.as_str(), log[0].note.as_str()), ("ADDED", "imported from etcd"));
    // The owner index knows the given manager.
    let owners = s.owners_of("widgets", ".spec.size").unwrap();
    assert!(owners.iter().any(|o| o.manager == "kubectl"), "{owners:?}");
    let again = s.import(&Collection::new("widgets", Some("default")), &given, "again").unwrap_err();
    assert_eq!(again.reason(), Reason::AlreadyExists);
    let mut bad = given.clone();
    bad["metadata"]["name"] = json!("Not_A_Name");
    assert!(s.import(&Collection::new("widgets", Some("default")), &bad, "x").is_err());
}

/// A custom resource's `scale` subresource follows its CRD's paths (`subresources.scale`), as
/// kube-apiserver's: the Scale reads them, a write of it sets the spec path (a new generation)
/// and, as kube-apiserver, records no managedFields entry; a type without one has no scale.
#[test]
fn a_custom_resources_scale_follows_its_crd_paths() {
    let store = new_store();
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "pools.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced", "names": {"kind": "Pool", "plural": "pools"},
              "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.size", "statusReplicasPath": ".status.ready",
                  "labelSelectorPath": ".status.selector"}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}});
    let spec = TypeSpec::from_crd(&crd).unwrap();
    assert_eq!(spec.scale.as_ref().map(|s| s.spec_replicas_path.as_str()), Some(".spec.size"));
    store.register(spec).unwrap();
    let pools = Collection::new("pools", Some("default"));
    let pool = json!({"apiVersion": "example.com/v1", "kind": "Pool", "metadata": {"name": "p"}, "spec": {"size": 1, "color": "x"}});
    store.create(&pools, &pool, &w()).unwrap();
    let mut status = store.get(&ObjectKey::new("pools", Some("default"), "p"), &Default::default()).unwrap();
    status["status"] = json!({"ready": 1, "selector": "app=p"});
    let before = store.update(&pools, &status, &w().status(true)).unwrap();

    let key = ObjectKey::new("pools", Some("default"), "p");
    let scale = store.scale(&key).unwrap();
    assert_eq!((&scale["kind"], &scale["spec"]["replicas"]), (&json!("Scale"), &json!(1)));
    assert_eq!(scale["status"], json!({"replicas": 1, "selector": "app=p"}));
    let scaled = store.update_scale(&key, &ScaleChange::Patch(PatchType::Merge, json!({"spec": {"replicas": 4}})), &w()).unwrap();
    assert_eq!(scaled["spec"]["replicas"], 4);
    let after = store.get(&key, &Default::default()).unwrap();
    assert_eq!((&after["spec"], &after["metadata"]["generation"]), (&json!({"size": 4, "color": "x"}), &json!(2)));
    assert_eq!(after["metadata"]["managedFields"], before["metadata"]["managedFields"]);
    // A negative count is kube-apiserver's 422 naming the CRD's replicas path as written; not a
    // number, a 400.
    match store.update_scale(&key, &ScaleChange::Patch(PatchType::Merge, json!({"spec": {"replicas": -1}})), &w()) {
        Err(Error::Invalid(errs)) => {
            assert_eq!(errs.0.len(), 1);
            assert_eq!(
                (errs.0[0].path.as_str(), errs.0[0].message.as_str()),
                (".spec.size", "Invalid value: -1: should be a non-negative integer")
            );
        }
        other => panic!("{other:?}"),
    }
    let not_a_number = store.update_scale(&key, &ScaleChange::Patch(PatchType::Merge, json!({"spec": {"replicas": "x"}})), &w());
    assert!(matches!(not_a_number, Err(Error::BadRequest(_))), "{not_a_number:?}");

    // Widgets declare no scale.
    store.create(&Collection::new("widgets", Some("default")), &widget("w", 1), &w()).unwrap();
    assert!(matches!(store.scale(&ObjectKey::new("widgets", Some("default"), "w")), Err(Error::NotFound { .. })));
}
