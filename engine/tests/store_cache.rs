//! The decoded-object cache: after every kind of write to a large object or a small one, what
//! the store serves from its cache is exactly what it decodes from the record after a restart
//! (which starts with an empty cache), and writes that start from a cached version give the same
//! results.
// Needs the RocksDB-backed store (the engine's `store` feature).
#![cfg(feature = "store")]
#![allow(clippy::unwrap_used)] // helpers unwrap too: a failed setup is a failed test

mod support;

use fieldstore_engine::patch::PatchType;
use fieldstore_engine::store::{Collection, DeleteOptions, GetOptions, ObjectKey, Options, TypeSpec, WriteOptions};
use serde_json::{json, Map, Value};
use support::{cm, rv, TestStore};

/// ConfigMap data of `n` keys: 2,000 make a large object (over 64 KiB, cached from its create).
fn big_data(n: usize, tag: &str) -> Value {
    let mut m = Map::new();
    for i in 0..n {
        m.insert(format!("key-{i:05}"), Value::String(format!("{tag}-value-{i}-{}", "x".repeat(40))));
    }
    Value::Object(m)
}

/// The object as served now and as decoded from its record after a restart.
fn served_and_decoded(s: &mut TestStore, name: &str) -> (Value, Value) {
    let served = s.get(&ObjectKey::new("configmaps", Some("ns"), name), &GetOptions::default()).unwrap();
    s.reopen();
    let decoded = s.get(&ObjectKey::new("configmaps", Some("ns"), name), &GetOptions::default()).unwrap();
    (served, decoded)
}

#[test]
fn cached_versions_equal_their_records_after_every_verb() {
    every_verb(2000);
}

/// A small object is cached once written over (not from its create): the same chain.
#[test]
fn cached_small_versions_equal_their_records_after_every_verb() {
    every_verb(8);
}

/// A chain of every kind of write to a ConfigMap of `n` keys (at least 6), each starting from
/// the version the one before left in the cache.
fn every_verb(n: usize) {
    let mut s = TestStore::new(Options::default().sync(false));
    let w = |m: &str| WriteOptions::new(m);
    let mut steps: Vec<(&str, Value)> = Vec::new();

    let created = s.create(&Collection::new("configmaps", Some("ns")), &cm("big", big_data(n, "a")), &w("creator")).unwrap();
    steps.push(("create", created));
    let (served, decoded) = served_and_decoded(&mut s, "big");
    assert_eq!(served, decoded, "after create");

    // Each write below starts from the version the previous write left in the cache: the
    // restart happens only after the comparison of the last step.
    let mut cfg = cm("big", big_data(n, "a"));
    cfg["data"]["key-00001"] = json!("applied");
    steps.push(("apply", s.apply(&Collection::new("configmaps", Some("ns")), &cfg, &w("alice").force(true)).unwrap()));
    let mut other = cm("big", json!({"key-00002": "bob"}));
    other["metadata"]["labels"] = json!({"owner": "bob"});
    steps.push(("apply force", s.apply(&Collection::new("configmaps", Some("ns")), &other, &w("bob").force(true)).unwrap()));
    steps.push((
        "merge patch",
        s.patch(
            &ObjectKey::new("configmaps", Some("ns"), "big"),
            PatchType::Merge,
            &json!({"data": {"key-00003": null, "extra": "1"}}),
            &w("patcher"),
        )
        .unwrap(),
    ));
    steps.push((
        "json patch",
        s.patch(
            &ObjectKey::new("configmaps", Some("ns"), "big"),
            PatchType::Json,
            &json!([{"op": "replace", "path": "/data/extra", "value": "2"}]),
            &w("jp"),
        )
        .unwrap(),
    ));
    let mut replaced = s.get(&ObjectKey::new("configmaps", Some("ns"), "big"), &GetOptions::default()).unwrap();
    replaced["data"]["key-00004"] = json!("replaced");
    replaced["metadata"]["finalizers"] = json!(["example.com/keep"]);
    steps.push(("update", s.update(&Collection::new("configmaps", Some("ns")), &replaced, &w("updater")).unwrap()));
    // Writes that end without committing put the version they read back for the next write.
    let mut clash = cm("big", json!({"key-00004": "clash"}));
    clash["metadata"]["name"] = json!("big");
    assert!(s.apply(&Collection::new("configmaps", Some("ns")), &clash, &w("carol")).is_err(), "a conflict");
    let again = s.apply(&Collection::new("configmaps", Some("ns")), &other, &w("bob").force(true)).unwrap();
    assert_eq!(again, steps.last().unwrap().1, "a no-op apply returns the latest version");
    let mut dry = again.clone();
    dry["data"]["key-00005"] = json!("dry");
    s.update(&Collection::new("configmaps", Some("ns")), &dry, &w("dry").dry_run(true)).unwrap();
    steps.push(("delete with a finalizer", s.delete(&ObjectKey::new("configmaps", Some("ns"), "big"), &DeleteOptions::default()).unwrap()));

    for (what, returned) in &steps {
        assert!(returned["metadata"]["resourceVersion"].is_string(), "{what} returns a version");
    }
    let last = steps.last().map(|(_, v)| v.clone()).unwrap();
    let (served, decoded) = served_and_decoded(&mut s, "big");
    assert_eq!(served, last, "the last write's reply is what is served");
    assert_eq!(served, decoded, "after a chain of cached writes");
    assert!(served["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(served["data"]["key-00001"], json!("applied"));
    assert_eq!(served["data"]["key-00002"], json!("bob"));
    assert!(served["data"].get("key-00003").is_none());
    assert_eq!(served["data"]["extra"], json!("2"));
    let managers: Vec<&str> =
        served["metadata"]["managedFields"].as_array().unwrap().iter().map(|e| e["manager"].as_str().unwrap()).collect();
    for m in ["creator", "alice", "bob", "jp", "updater"] {
        assert!(managers.contains(&m), "{m} in {managers:?}");
    }

    // Removing the finalizer deletes the object: nothing may be served from the cache after.
    let mut done = served.clone();
    done["metadata"]["finalizers"] = json!([]);
    s.update(&Collection::new("configmaps", Some("ns")), &done, &w("finalizer")).unwrap();
    assert!(s.get(&ObjectKey::new("configmaps", Some("ns"), "big"), &GetOptions::default()).is_err(), "deleted");
}

#[test]
fn status_writes_and_a_disabled_cache_agree() {
    status_writes_agree(1500);
    status_writes_agree(6);
}

/// The same writes of an object of `n` keys on a store without the cache give the same objects
/// but for uid and times.
fn status_writes_agree(n: usize) {
    let run = |options: Options| {
        let s = TestStore::new(options.sync(false));
        s.register(TypeSpec::new("", "v1", "Thing", "things").namespaced(true).with_status_subresource(true)).unwrap();
        let obj = json!({"apiVersion": "v1", "kind": "Thing", "metadata": {"name": "t"}, "spec": big_data(n, "s")});
        s.apply(&Collection::new("things", Some("ns")), &obj, &WriteOptions::new("a")).unwrap();
        s.apply(
            &Collection::new("things", Some("ns")),
            &json!({"apiVersion": "v1", "kind": "Thing", "metadata": {"name": "t"}, "status": {"ready": true}}),
            &WriteOptions::new("ctl").status(true),
        )
        .unwrap();
        let mut obj2 = obj.clone();
        obj2["spec"]["key-00003"] = json!("changed");
        let out = s.apply(&Collection::new("things", Some("ns")), &obj2, &WriteOptions::new("a")).unwrap();
        let got = s.get(&ObjectKey::new("things", Some("ns"), "t"), &GetOptions::default()).unwrap();
        assert_eq!(out, got);
        strip_volatile(got)
    };
    let cached = run(Options::default());
    let uncached = run(Options::default().object_cache(0));
    assert_eq!(cached, uncached);
    assert_eq!(cached["status"]["ready"], json!(true));
    assert_eq!(cached["spec"]["key-00003"], json!("changed"));
}

/// Deployments stored as Kubernetes protobuf, written over by update, apply and patch with the
/// client's own managedFields in the update: what is served from the cache is what the record
/// decodes to after a restart.
#[test]
fn small_protobuf_objects_and_client_managed_fields() {
    let mut s = TestStore::new(Options::default().sync(false).protobuf_storage(true));
    let deployments = Collection::new("deployments.apps", Some("ns"));
    let key = ObjectKey::new("deployments.apps", Some("ns"), "web");
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]}}}});
    s.apply(&deployments, &deployment, &WriteOptions::new("applier")).unwrap();
    let mut v = s.get(&key, &GetOptions::default()).unwrap();
    v["spec"]["replicas"] = json!(3);
    // The client's managedFields: the applier's entry kept, another added by hand (without a
    // time) for a field the update leaves as it is.
    let mut entries = v["metadata"]["managedFields"].as_array().unwrap().clone();
    entries.push(json!({"manager": "by-hand", "operation": "Update", "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:selector": {}}}}));
    v["metadata"]["managedFields"] = Value::Array(entries);
    let updated = s.update(&deployments, &v, &WriteOptions::new("updater")).unwrap();
    let mut cfg = deployment.clone();
    cfg["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.28");
    let applied = s.apply(&deployments, &cfg, &WriteOptions::new("applier").force(true)).unwrap();
    assert_ne!(rv(&applied), rv(&updated));
    let patched =
        s.patch(&key, PatchType::Merge, &json!({"metadata": {"labels": {"tier": "front"}}}), &WriteOptions::new("labeller")).unwrap();
    // Unchanged: the apply is a no-op served from the version the patch left in the cache.
    let again = s.apply(&deployments, &cfg, &WriteOptions::new("applier").force(true)).unwrap();
    assert_eq!(again, patched);
    let served = s.get(&key, &GetOptions::default()).unwrap();
    s.reopen();
    let decoded = s.get(&key, &GetOptions::default()).unwrap();
    assert_eq!(served, patched);
    assert_eq!(served, decoded);
    let managers: Vec<&str> =
        served["metadata"]["managedFields"].as_array().unwrap().iter().map(|e| e["manager"].as_str().unwrap()).collect();
    // The updater's one field (replicas) was taken back by the forced apply.
    assert_eq!(managers, ["applier", "by-hand", "labeller"]);
}

/// The object without what differs between two stores doing the same writes: uid, times, and
/// the order of managedFields entries, which Kubernetes sorts by their time (to the second)
/// before their manager, so two runs whose writes straddle a second differently order them
/// differently.
fn strip_volatile(mut v: Value) -> Value {
    let meta = v["metadata"].as_object_mut().unwrap();
    meta.remove("uid");
    meta.remove("creationTimestamp");
    let entries = meta.get_mut("managedFields").and_then(Value::as_array_mut).unwrap();
    for e in entries.iter_mut() {
        e.as_object_mut().unwrap().remove("time");
    }
    entries.sort_by_key(|e| {
        (e["manager"].as_str().unwrap_or_default().to_string(), e["subresource"].as_str().unwrap_or_default().to_string())
    });
    v
}

/// A create's record takes the field sets the field manager wrote (not its FieldsV1 documents
/// parsed again): what the record decodes to after a restart is the create's answer, for
/// objects created by create and by apply, of a small and a list-holding kind, stored as JSON
/// and as protobuf; and a later write finds the creator's set (its fields taken over).
#[test]
fn created_records_hold_the_sets_their_answers_show() {
    for protobuf in [false, true] {
        let mut s = TestStore::new(Options::default().sync(false).protobuf_storage(protobuf));
        let deployments = Collection::new("deployments.apps", Some("ns"));
        let deployment = |name: &str| {
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": {"app": "web"}},
                "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "web", "image": "nginx", "ports": [{"containerPort": 80, "protocol": "TCP"}]},
                        {"name": "side", "image": "busybox", "args": ["sleep", "1"]}]}}}})
        };
        let configmaps = Collection::new("configmaps", Some("ns"));
        let answers = [
            ("configmaps", s.create(&configmaps, &cm("created", json!({"a": "1", "b": "2"})), &WriteOptions::new("creator")).unwrap()),
            ("configmaps", s.apply(&configmaps, &cm("applied", json!({"a": "1"})), &WriteOptions::new("applier")).unwrap()),
            ("deployments.apps", s.create(&deployments, &deployment("created"), &WriteOptions::new("creator")).unwrap()),
            ("deployments.apps", s.apply(&deployments, &deployment("applied"), &WriteOptions::new("applier")).unwrap()),
        ];
        s.reopen();
        for (resource, answer) in &answers {
            let name = answer["metadata"]["name"].as_str().unwrap();
            let decoded = s.get(&ObjectKey::new(*resource, Some("ns"), name), &GetOptions::default()).unwrap();
            assert_eq!(&decoded, answer, "{resource}/{name}, protobuf {protobuf}");
            assert!(decoded["metadata"]["managedFields"][0]["fieldsV1"].as_object().is_some_and(|f| !f.is_empty()));
        }
        // Another manager's forced apply of the creator's image takes it from the creator's set.
        let cfg = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "created"},
            "spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:2"}]}}}});
        let taken = s.apply(&deployments, &cfg, &WriteOptions::new("other").force(true)).unwrap();
        let creator = taken["metadata"]["managedFields"].as_array().unwrap().iter().find(|e| e["manager"] == "creator").unwrap();
        let containers = &creator["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"];
        assert!(containers[r#"k:{"name":"web"}"#].get("f:image").is_none(), "{creator}");
        assert!(containers[r#"k:{"name":"side"}"#].get("f:image").is_some(), "{creator}");
    }
}
