//! Bad input: typed errors with Kubernetes reasons, and nothing written.
// Needs the RocksDB-backed store (the engine's `store` feature).
#![cfg(feature = "store")]

use fieldstore_engine::store::{Collection, GetOptions, ObjectKey, Options, Revision, WriteOptions};
use fieldstore_engine::{Error, Reason};
use serde_json::{json, Value};

mod support;
use support::TestStore;

fn store(options: Options) -> TestStore {
    TestStore::new(options)
}

fn cm(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
}

#[test]
fn unknown_resource_is_not_found() {
    let s = store(Options::default());
    let e = s.create(&Collection::new("widgets", Some("ns")), &cm("a"), &WriteOptions::new("t")).unwrap_err();
    assert!(matches!(e, Error::NotFound { .. }));
    assert_eq!(e.reason(), Reason::NotFound);
    assert!(matches!(s.get(&ObjectKey::new("widgets", None, "a"), &GetOptions::default()), Err(Error::NotFound { .. })));
}

#[test]
fn invalid_names_are_invalid() {
    let s = store(Options::default());
    for name in ["UPPER", "under_score", "-lead", "trail-", "a..b", &"x".repeat(254)] {
        let e = s.create(&Collection::new("configmaps", Some("ns")), &cm(name), &WriteOptions::new("t")).unwrap_err();
        assert_eq!(e.reason(), Reason::Invalid, "{name}: {e}");
        assert_eq!(e.reason().code(), 422);
    }
    let e = s.create(&Collection::new("configmaps", Some("Bad_NS")), &cm("a"), &WriteOptions::new("t")).unwrap_err();
    assert_eq!(e.reason(), Reason::Invalid);
    assert!(matches!(s.create(&Collection::new("configmaps", None), &cm("a"), &WriteOptions::new("t")), Err(Error::BadRequest(_))));
    assert!(matches!(
        s.create(&Collection::new("configmaps", Some("ns")), &json!({"kind": "ConfigMap", "metadata": {}}), &WriteOptions::new("t")),
        Err(Error::Invalid(_))
    ));
    assert_eq!(s.revision(), Revision(0));
}

#[test]
fn oversized_objects_are_rejected() {
    let s = store(Options::default());
    let mut o = cm("big");
    o["data"] = json!({"blob": "x".repeat(1536 * 1024)});
    let e = s.create(&Collection::new("configmaps", Some("ns")), &o, &WriteOptions::new("t")).unwrap_err();
    assert!(matches!(e, Error::TooLarge { .. }), "{e}");
    assert_eq!(e.reason().code(), 413);
    let small = store(Options::default().max_object_bytes(1000));
    let mut o = cm("a");
    o["data"] = json!({"blob": "x".repeat(2000)});
    assert!(matches!(small.apply(&Collection::new("configmaps", Some("ns")), &o, &WriteOptions::new("t")), Err(Error::TooLarge { .. })));
    assert_eq!(s.revision(), Revision(0));
    assert_eq!(small.revision(), Revision(0));
}

#[test]
fn deep_nesting_and_malformed_documents_are_bad_requests() {
    let s = store(Options::default().max_depth(10));
    let mut deep = json!("leaf");
    for _ in 0..20 {
        deep = json!({"d": deep});
    }
    let mut o = cm("a");
    o["data"] = deep;
    let e = s.create(&Collection::new("configmaps", Some("ns")), &o, &WriteOptions::new("t")).unwrap_err();
    assert_eq!(e.reason(), Reason::BadRequest);
    assert!(matches!(s.parse_object(b"{\"a\": "), Err(Error::BadRequest(_))));
    assert!(matches!(s.parse_object(b"a: [unclosed"), Err(Error::BadRequest(_))));
    let y = s.parse_object(b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\n").unwrap();
    assert_eq!(y["metadata"]["name"], "y");
    assert!(matches!(
        s.create(&Collection::new("configmaps", Some("ns")), &json!([1]), &WriteOptions::new("t")),
        Err(Error::BadRequest(_))
    ));
    let wrong_kind = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a"}});
    assert!(matches!(
        s.create(&Collection::new("configmaps", Some("ns")), &wrong_kind, &WriteOptions::new("t")),
        Err(Error::BadRequest(_))
    ));
    assert_eq!(s.revision(), Revision(0));
}

/// kube-apiserver keeps an object's identity through any patch: what a patch removes comes back
/// (apiVersion and kind from the type, the rest from the live object), a changed name or
/// namespace is refused (400), a changed uid too (422). Embedded, as through every door.
#[test]
fn patches_cannot_take_an_objects_identity() {
    use fieldstore_engine::patch::PatchType;
    let s = store(Options::default());
    let w = WriteOptions::new("t");
    let created = s.create(&Collection::new("configmaps", Some("ns")), &cm("x"), &w).unwrap();
    let emptying = [
        (PatchType::Json, json!([{"op": "replace", "path": "", "value": {}}])),
        (PatchType::Json, json!([{"op": "remove", "path": "/metadata"}])),
        (PatchType::Merge, json!({"metadata": null, "kind": null, "apiVersion": null})),
        (PatchType::Merge, json!({"metadata": {"name": null, "namespace": null, "uid": null, "creationTimestamp": null}})),
        (PatchType::Strategic, json!({"$patch": "delete"})),
    ];
    for (t, p) in emptying {
        let out = s.patch(&ObjectKey::new("configmaps", Some("ns"), "x"), t, &p, &w).unwrap_or_else(|e| panic!("{p}: {e}"));
        let got = s.get(&ObjectKey::new("configmaps", Some("ns"), "x"), &GetOptions::default()).unwrap();
        for o in [&out, &got] {
            assert_eq!((o["apiVersion"].as_str(), o["kind"].as_str()), (Some("v1"), Some("ConfigMap")), "{p}: {o}");
            for f in ["name", "namespace", "uid", "creationTimestamp"] {
                assert_eq!(o["metadata"][f], created["metadata"][f], "{p}: {f}");
            }
            assert!(o["metadata"]["resourceVersion"].is_string());
        }
    }
    let rev = s.revision();
    let refused = [
        (json!({"metadata": {"name": "y"}}), Reason::BadRequest),
        (json!({"metadata": {"namespace": "other"}}), Reason::BadRequest),
        (json!({"metadata": {"uid": "u"}}), Reason::Invalid),
        (json!({"metadata": 5}), Reason::Invalid),
        (json!({"kind": "Secret"}), Reason::BadRequest),
    ];
    for (p, reason) in refused {
        let e = s.patch(&ObjectKey::new("configmaps", Some("ns"), "x"), PatchType::Merge, &p, &w).unwrap_err();
        assert_eq!(e.reason(), reason, "{p}: {e}");
    }
    let e = s.patch(&ObjectKey::new("configmaps", Some("ns"), "x"), PatchType::Json, &json!("nope"), &w).unwrap_err();
    assert_eq!(e.reason(), Reason::BadRequest);
    assert_eq!(s.revision(), rev);
    // An update without apiVersion and kind keeps them too.
    let mut bare = s.get(&ObjectKey::new("configmaps", Some("ns"), "x"), &GetOptions::default()).unwrap();
    bare.as_object_mut().unwrap().retain(|k, _| k == "metadata");
    bare["data"] = json!({"k": "v"});
    let out = s.update(&Collection::new("configmaps", Some("ns")), &bare, &w).unwrap();
    assert_eq!((out["apiVersion"].as_str(), out["kind"].as_str()), (Some("v1"), Some("ConfigMap")));
}

/// A JSON patch that doubles its document is refused before the document is built.
#[test]
fn json_patch_bombs_are_too_large() {
    use fieldstore_engine::patch::PatchType;
    let s = store(Options::default().max_patch_bytes(64 << 10));
    let w = WriteOptions::new("t");
    let mut o = cm("x");
    o["data"] = json!({"k": "x".repeat(1000)});
    s.create(&Collection::new("configmaps", Some("ns")), &o, &w).unwrap();
    let bomb: Vec<Value> = (0..18).map(|i| json!({"op": "copy", "from": "/data", "path": format!("/data/c{i}")})).collect();
    let e = s.patch(&ObjectKey::new("configmaps", Some("ns"), "x"), PatchType::Json, &Value::Array(bomb), &w).unwrap_err();
    assert_eq!(e.reason(), Reason::RequestEntityTooLarge, "{e}");
    assert_eq!(e.reason().code(), 413);
    assert_eq!(s.revision(), Revision(1));
}

mod encodable {
    use super::*;
    use fieldstore_engine::patch::PatchType;
    use proptest::prelude::*;

    fn deployment() -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "labels": {"app": "d"}}, "spec": {
            "replicas": 1, "selector": {"matchLabels": {"app": "d"}},
            "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80}]}]}}}})
    }

    fn secret() -> Value {
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"k": "dg=="}, "type": "Opaque"})
    }

    /// JSON values of every kind, scalars at the edges of the widths protobuf has.
    fn any_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(json!(null)),
            any::<bool>().prop_map(Value::from),
            any::<i32>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            Just(json!(2_147_483_648_u64)),
            Just(json!(1.5)),
            Just(json!(1e30)),
            "[a-z=+/!]{0,8}".prop_map(Value::from),
        ];
        leaf.prop_recursive(2, 8, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                prop::collection::btree_map("[a-z]{1,3}", inner, 0..3).prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    const DEPLOYMENT_PATHS: &[&str] = &[
        "/spec",
        "/spec/replicas",
        "/spec/paused",
        "/spec/selector",
        "/spec/template/spec/containers",
        "/spec/template/spec/containers/0/ports/0/containerPort",
        "/spec/template/spec/containers/0/image",
        "/metadata/labels",
        "/status",
    ];
    const SECRET_PATHS: &[&str] = &["/data", "/data/k", "/type", "/immutable", "/stringData"];

    /// `v` with the value at `pointer` (its parent must exist) replaced by `value`.
    fn with(mut v: Value, pointer: &str, value: Value) -> Value {
        if let Some(slot) = v.pointer_mut(pointer) {
            *slot = value;
        }
        v
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        /// Whatever a create, an update or a merge patch of a built-in kind carries, what the
        /// store accepts encodes as the kind's protobuf message: no value can make a type
        /// unreadable to protobuf clients.
        #[test]
        fn any_object_the_store_accepts_encodes_to_protobuf(
            which in 0usize..2, at in 0usize..9, value in any_value(), patch_value in any_value()
        ) {
            let s = store(Options::default().sync(false));
            let (resource, base, paths) = match which {
                0 => ("deployments.apps", deployment(), DEPLOYMENT_PATHS),
                _ => ("secrets", secret(), SECRET_PATHS),
            };
            let path = paths[at % paths.len()];
            let name = base["metadata"]["name"].as_str().unwrap().to_string();
            let w = WriteOptions::new("t");
            let mut written = Vec::new();
            written.push(s.create(&Collection::new(resource, Some("ns")), &with(base.clone(), path, value.clone()), &w));
            if s.get(&ObjectKey::new(resource, Some("ns"), &name), &GetOptions::default()).is_err() {
                s.create(&Collection::new(resource, Some("ns")), &base, &w).unwrap();
            }
            let live = s.get(&ObjectKey::new(resource, Some("ns"), &name), &GetOptions::default()).unwrap();
            written.push(s.update(&Collection::new(resource, Some("ns")), &with(live, path, value), &w));
            let mut patch = json!({});
            let mut cur = &mut patch;
            let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
            for (i, p) in parts.iter().enumerate() {
                if p.parse::<usize>().is_ok() { break; }
                cur[*p] = if i + 1 == parts.len() { patch_value.clone() } else { json!({}) };
                cur = cur.get_mut(*p).unwrap();
            }
            written.push(s.patch(&ObjectKey::new(resource, Some("ns"), &name), PatchType::Merge, &patch, &w));
            for w in written.into_iter().flatten() {
                let got = s.get(&ObjectKey::new(resource, Some("ns"), &name), &GetOptions::default()).unwrap();
                prop_assert!(fieldstore_codec::k8s_protobuf::encode_envelope_value(&w).is_ok(), "{}", w);
                prop_assert!(fieldstore_codec::k8s_protobuf::encode_envelope_value(&got).is_ok(), "{}", got);
            }
        }
    }
}

/// A custom resource's schema holds on every write, not only on apply: an update or a patch
/// that puts a list where the schema has an object, or a string where it has an integer, is
/// refused naming the field, and nothing is written.
#[test]
fn every_write_of_a_custom_resource_is_checked_against_its_schema() {
    use fieldstore_engine::patch::PatchType;
    use fieldstore_engine::store::TypeSpec;
    let s = store(Options::default());
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced", "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}}}}}}}]}});
    s.register(TypeSpec::from_crd(&crd).unwrap()).unwrap();
    let w = WriteOptions::new("t");
    let ok = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"replicas": 1, "tags": ["a"]}});
    let live = s.create(&Collection::new("widgets.example.com", Some("ns")), &ok, &w).unwrap();
    let rev = s.revision();
    for bad in [json!([1]), json!({"replicas": "x"}), json!({"tags": {"a": 1}}), json!({"replicas": [1]})] {
        let mut o = live.clone();
        o["spec"] = bad.clone();
        let e = s.update(&Collection::new("widgets.example.com", Some("ns")), &o, &w).unwrap_err();
        assert_eq!(e.reason(), Reason::Invalid, "update {bad}: {e}");
        let e = s.patch(&ObjectKey::new("widgets.example.com", Some("ns"), "w"), PatchType::Merge, &json!({"spec": bad}), &w).unwrap_err();
        assert_eq!(e.reason(), Reason::Invalid, "merge patch {bad}: {e}");
        let mut created = ok.clone();
        created["metadata"]["name"] = json!("w2");
        created["spec"] = bad.clone();
        let e = s.create(&Collection::new("widgets.example.com", Some("ns")), &created, &w).unwrap_err();
        assert_eq!(e.reason(), Reason::Invalid, "create {bad}: {e}");
    }
    assert_eq!(s.revision(), rev);
}
