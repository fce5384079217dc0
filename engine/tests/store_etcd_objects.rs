//! Objects, not blobs: what kube-apiserver puts through the etcd API under `/registry/` is also
//! the store's object — history names the manager of each change, with past values, the owner
//! index follows its managedFields — while etcd reads answer the exact bytes put.
// Needs the RocksDB-backed store (the engine's `store` feature).
#![cfg(feature = "store")]
// Helpers outside #[test] functions unwrap too: a panic is a failed test with its message.
#![allow(clippy::unwrap_used)]

use fieldstore_codec::k8s_protobuf;
use fieldstore_engine::store::etcd_api::{Compare, CompareResult, CompareTarget, DeleteRequest, RangeRequest, RequestOp, TxnRequest};
use fieldstore_engine::store::{GetOptions, HistoryQuery, ObjectKey};
use fieldstore_engine::Error;
use serde_json::{json, Value};

mod support;
use support::{etcd_api_store as store, etcd_put as put, TestStore};

/// The value of `key` as etcd answers it.
fn value(s: &TestStore, key: &[u8]) -> Option<Vec<u8>> {
    let (r, _) = s.etcd_range(&RangeRequest { key: key.to_vec(), ..RangeRequest::default() }).unwrap();
    r.kvs.into_iter().next().map(|kv| kv.value)
}

/// A managedFields entry as kube-apiserver writes it.
fn entry(manager: &str, operation: &str, api_version: &str, time: &str, fields: Value) -> Value {
    json!({"manager": manager, "operation": operation, "apiVersion": api_version, "time": time, "fieldsType": "FieldsV1", "fieldsV1": fields})
}

/// A ConfigMap as kube-apiserver stores it.
fn config_map(data: Value, managed: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm1", "namespace": "default", "uid": "6b1f9a52-0000-4000-8000-000000000001",
            "creationTimestamp": "2026-11-28T01:00:00Z", "managedFields": managed},
        "data": data})
}

/// The line of `path` in the blame, and its writer.
fn writer_of(s: &TestStore, key: &ObjectKey, path: &str) -> (Value, String) {
    let blame = s.blame(key).unwrap();
    let line = blame.iter().find(|l| l.path == path).unwrap_or_else(|| panic!("no line {path}: {blame:#?}"));
    (line.value.clone(), line.last_change.as_ref().map(|c| c.manager.clone()).unwrap_or_default())
}

#[test]
fn a_config_map_put_through_etcd_is_an_object_with_its_writers() {
    let Some(s) = store() else { return };
    let key = b"/registry/configmaps/default/cm1";
    let first =
        entry("kubectl-client-side-apply", "Update", "v1", "2026-11-28T01:00:00Z", json!({"f:data": {".": {}, "f:a": {}, "f:b": {}}}));
    let created = k8s_protobuf::encode_envelope_value(&config_map(json!({"a": "1", "b": "2"}), json!([first]))).unwrap();
    let (_, r1) = s.etcd_put(put(key, &created)).unwrap();

    // kube-apiserver's update: a transaction on the key's mod revision, `editor` now owning `b`.
    let kept = entry("kubectl-client-side-apply", "Update", "v1", "2026-11-28T01:00:00Z", json!({"f:data": {".": {}, "f:a": {}}}));
    let edited = entry("editor", "Update", "v1", "2026-11-28T01:05:00Z", json!({"f:data": {"f:b": {}}}));
    let updated = k8s_protobuf::encode_envelope_value(&config_map(json!({"a": "1", "b": "3"}), json!([kept, edited]))).unwrap();
    let txn = TxnRequest {
        compare: vec![Compare {
            result: CompareResult::Equal,
            target: CompareTarget::Mod(i64::try_from(r1).unwrap()),
            key: key.to_vec(),
            range_end: vec![],
        }],
        success: vec![RequestOp::Put(put(key, &updated))],
        failure: vec![],
    };
    let (t, r2) = s.etcd_txn(txn).unwrap();
    assert!(t.succeeded);
    assert_eq!(value(&s, key).as_deref(), Some(updated.as_slice()), "etcd answers the bytes put");

    let cm = ObjectKey::new("configmaps", Some("default"), "cm1");
    let live = s.get(&ObjectKey::new("configmaps", Some("default"), "cm1"), &GetOptions::default()).unwrap();
    assert_eq!(live["data"], json!({"a": "1", "b": "3"}));
    assert_eq!(live["metadata"]["uid"], "6b1f9a52-0000-4000-8000-000000000001");
    assert_eq!(live["metadata"]["resourceVersion"], r2.to_string(), "the object's version is the etcd revision");
    assert_eq!(writer_of(&s, &cm, ".data.b"), (json!("3"), "editor".into()));
    assert_eq!(writer_of(&s, &cm, ".data.a"), (json!("1"), "kubectl-client-side-apply".into()));

    let timeline = s.field_history(&cm, ".data.b", &HistoryQuery::default()).unwrap();
    let changes: Vec<(&str, Option<&Value>, Option<&Value>)> =
        timeline.events.iter().map(|e| (e.by.manager.as_str(), e.before.as_ref(), e.after.as_ref())).collect();
    assert_eq!(changes, vec![("editor", Some(&json!("2")), Some(&json!("3"))), ("kubectl-client-side-apply", None, Some(&json!("2")))]);
    assert_eq!(s.object_at(&cm, fieldstore_engine::store::Revision(r1)).unwrap().unwrap()["data"]["b"], "2");

    // The owner index follows the managedFields.
    let owned = s.objects_managed_by("editor", None, None).unwrap();
    assert!(owned.iter().any(|o| o.name == "cm1"), "{owned:?}");

    // A delete: the object goes, its history stays.
    let (d, _) = s.etcd_delete(DeleteRequest { key: key.to_vec(), ..DeleteRequest::default() }).unwrap();
    assert_eq!(d.deleted, 1);
    assert!(matches!(s.get(&ObjectKey::new("configmaps", Some("default"), "cm1"), &GetOptions::default()), Err(Error::NotFound { .. })));
    let log = s.object_log(&cm, None).unwrap();
    assert_eq!(log.iter().map(|w| w.event.as_str()).collect::<Vec<_>>(), ["DELETED", "MODIFIED", "ADDED"]);
}

#[test]
fn values_that_hold_no_object_stay_values() {
    let Some(s) = store() else { return };
    let bitmap = b"k8s\x00\n\x0c\n\x02v1\x12\x06Status";
    let cases: [(&[u8], &[u8]); 4] = [
        (b"/registry/ranges/serviceips", bitmap),
        (b"/registry/masterleases/10.0.0.1", b"\x01\x02\xff"),
        (b"/other/configmaps/default/cm1", br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm1","namespace":"default"}}"#),
        // The key names another object than the value.
        (b"/registry/configmaps/default/cm2", br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm1","namespace":"default"}}"#),
    ];
    for (key, v) in cases {
        s.etcd_put(put(key, v)).unwrap();
        assert_eq!(value(&s, key).as_deref(), Some(v), "etcd answers the bytes put");
    }
    assert!(matches!(s.get(&ObjectKey::new("configmaps", Some("default"), "cm1"), &GetOptions::default()), Err(Error::NotFound { .. })));
}

#[test]
fn a_custom_resource_is_an_object_once_its_definition_is_put() {
    let Some(s) = store() else { return };
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com", "uid": "6b1f9a52-0000-4000-8000-000000000002", "creationTimestamp": "2026-11-28T01:00:00Z"},
        "spec": {"group": "example.com", "scope": "Namespaced", "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
          "versions": [{"name": "v1", "served": true, "storage": true,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
              "spec": {"type": "object", "properties": {"size": {"type": "integer"}, "color": {"type": "string"}}}}}}}]}});
    let widget = |size: i64, managed: Value| {
        json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w1", "namespace": "default", "uid": "6b1f9a52-0000-4000-8000-000000000003",
                "creationTimestamp": "2026-11-28T01:00:00Z", "managedFields": managed},
            "spec": {"size": size, "color": "red"}})
        .to_string()
        .into_bytes()
    };
    let key = b"/registry/example.com/widgets/default/w1";
    // Before its definition, a custom resource is a value only.
    let creator = entry("kubectl", "Apply", "example.com/v1", "2026-11-28T01:00:00Z", json!({"f:spec": {"f:size": {}, "f:color": {}}}));
    s.etcd_put(put(key, &widget(1, json!([creator.clone()])))).unwrap();
    assert!(s.get(&ObjectKey::new("widgets.example.com", Some("default"), "w1"), &GetOptions::default()).is_err());

    s.etcd_put(put(b"/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.example.com", crd.to_string().as_bytes())).unwrap();
    let first = widget(1, json!([creator]));
    s.etcd_put(put(key, &first)).unwrap();
    let kept = entry("kubectl", "Apply", "example.com/v1", "2026-11-28T01:00:00Z", json!({"f:spec": {"f:color": {}}}));
    let scaler = entry("scaler", "Update", "example.com/v1", "2026-11-28T01:07:00Z", json!({"f:spec": {"f:size": {}}}));
    let second = widget(5, json!([kept, scaler]));
    s.etcd_put(put(key, &second)).unwrap();
    assert_eq!(value(&s, key).as_deref(), Some(second.as_slice()));

    let w = ObjectKey::new("widgets.example.com", Some("default"), "w1");
    assert_eq!(writer_of(&s, &w, ".spec.size"), (json!(5), "scaler".into()));
    assert_eq!(writer_of(&s, &w, ".spec.color"), (json!("red"), "kubectl".into()));
    let timeline = s.field_history(&w, ".spec.size", &HistoryQuery::default()).unwrap();
    assert_eq!(timeline.events[0].before, Some(json!(1)));

    s.etcd_delete(DeleteRequest { key: key.to_vec(), ..DeleteRequest::default() }).unwrap();
    assert!(matches!(
        s.get(&ObjectKey::new("widgets.example.com", Some("default"), "w1"), &GetOptions::default()),
        Err(Error::NotFound { .. })
    ));
    assert_eq!(s.object_log(&w, None).unwrap().len(), 3);
}

/// A value kube-apiserver 1.37 wrote (`fixtures/kube-apiserver/README.md`).
fn captured(name: &str) -> Vec<u8> {
    std::fs::read(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kube-apiserver").join(name)).unwrap()
}

#[test]
fn a_definition_kube_apiserver_stores_at_v1beta1_defines_its_type() {
    let Some(s) = store() else { return };
    let crd_key = b"/registry/apiextensions.k8s.io/customresourcedefinitions/gadgets.example.com";
    let crd = captured("gadgets.crd.json");
    assert_eq!(serde_json::from_slice::<Value>(&crd).unwrap()["apiVersion"], "apiextensions.k8s.io/v1beta1", "as kube-apiserver stores it");
    s.etcd_put(put(crd_key, &crd)).unwrap();
    assert_eq!(value(&s, crd_key), Some(crd.clone()), "etcd answers the bytes put");
    // The definition is an object, in its v1 form.
    let def = s
        .get(&ObjectKey::new("customresourcedefinitions.apiextensions.k8s.io", None, "gadgets.example.com"), &GetOptions::default())
        .unwrap();
    assert_eq!(def["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(def["spec"]["versions"][0]["additionalPrinterColumns"][0]["jsonPath"], ".spec.size");

    // Its custom resource, server-side applied then patched through kube-apiserver.
    let key = b"/registry/example.com/gadgets/default/g1";
    let (applied, patched) = (captured("gadget.applied.json"), captured("gadget.patched.json"));
    s.etcd_put(put(key, &applied)).unwrap();
    s.etcd_put(put(key, &patched)).unwrap();
    assert_eq!(value(&s, key), Some(patched), "etcd answers the bytes put");
    let g1 = ObjectKey::new("gadgets.example.com", Some("default"), "g1");
    assert_eq!(s.get(&g1, &GetOptions::default()).unwrap()["spec"], json!({"color": "red", "size": 3}));
    assert_eq!(writer_of(&s, &g1, ".spec.size"), (json!(3), "kubectl".into()));
    assert_eq!(writer_of(&s, &g1, ".spec.color"), (json!("red"), "kubectl-patch".into()));
    let timeline = s.field_history(&g1, ".spec.color", &HistoryQuery::default()).unwrap();
    let changes: Vec<_> = timeline.events.iter().map(|e| (e.by.manager.as_str(), e.before.clone(), e.after.clone())).collect();
    assert_eq!(changes, vec![("kubectl-patch", None, Some(json!("red")))]);

    // kube-apiserver deletes the custom resources, then the definition's key: the type is no
    // longer served, the history of its objects stays.
    s.etcd_delete(DeleteRequest { key: key.to_vec(), ..DeleteRequest::default() }).unwrap();
    s.etcd_delete(DeleteRequest { key: crd_key.to_vec(), ..DeleteRequest::default() }).unwrap();
    assert!(matches!(s.get(&g1, &GetOptions::default()), Err(Error::NotFound { .. })));
    assert_eq!(s.object_log(&g1, None).unwrap().iter().map(|w| w.event.as_str()).collect::<Vec<_>>(), ["DELETED", "MODIFIED", "ADDED"]);
    assert!(s.type_of(&serde_json::from_slice(&applied).unwrap()).is_err(), "the type is retired");
    // A custom resource put after is a value only; a definition put again serves the type again.
    s.etcd_put(put(key, &applied)).unwrap();
    assert!(matches!(s.get(&g1, &GetOptions::default()), Err(Error::NotFound { .. })));
    s.etcd_put(put(crd_key, &crd)).unwrap();
    s.etcd_put(put(key, &applied)).unwrap();
    assert_eq!(writer_of(&s, &g1, ".spec.size"), (json!(3), "kubectl".into()));
}
