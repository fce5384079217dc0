//! `Options::protobuf_storage`: built-in objects stored in their Kubernetes protobuf encoding read
//! back exactly as a JSON-storing store returns them, through every verb, list, watch and field
//! history; records of both kinds share one store across reopening with the option changed; and
//! objects the protobuf encoding would change (here a non-canonical quantity) read back as written.
// Needs the RocksDB-backed store (the engine's `store` feature).
#![cfg(feature = "store")]

use fieldstore_engine::patch::PatchType;
use fieldstore_engine::store::{
    Collection, DeleteOptions, GetOptions, ListOptions, ObjectKey, Options, Revision, Store, WatchOptions, WriteOptions,
};
use serde_json::{json, Value};
use std::time::Duration;

mod support;

fn open(dir: &std::path::Path, protobuf: bool) -> Store {
    support::open_at(dir, Options::default().protobuf_storage(protobuf))
}

fn deployment(replicas: i64, image: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "ns", "labels": {"app": "web"}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "app", "image": image,
                "ports": [{"containerPort": 80, "protocol": "TCP"}], "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}}}]}}}})
}

fn get(store: &Store, resource: &str, name: &str) -> Value {
    store.get(&ObjectKey::new(resource, Some("ns"), name), &GetOptions::default()).expect("get")
}

/// The same writes on a store of each setting; what each returns and reads back.
fn run_writes(store: &Store) -> Vec<Value> {
    let w = |m: &str| WriteOptions::new(m);
    let mut seen = Vec::new();
    seen.push(store.apply(&Collection::new("deployments.apps", Some("ns")), &deployment(2, "nginx:1"), &w("alice")).expect("apply"));
    seen.push(store.apply(&Collection::new("deployments.apps", Some("ns")), &deployment(3, "nginx:2"), &w("alice")).expect("apply again"));
    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "env": [{"name": "A", "value": "1"}]}]}}}});
    seen.push(
        store
            .patch(&ObjectKey::new("deployments.apps", Some("ns"), "web"), PatchType::Strategic, &patch, &w("bob"))
            .expect("strategic patch"),
    );
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "ns"}, "data": {"a": "1"}});
    seen.push(store.create(&Collection::new("configmaps", Some("ns")), &cm, &w("carol")).expect("create"));
    let mut cm2 = get(store, "configmaps", "cfg");
    cm2["data"]["b"] = json!("2");
    seen.push(store.update(&Collection::new("configmaps", Some("ns")), &cm2, &w("carol")).expect("update"));
    // A quantity Kubernetes would canonicalise ("1000m" is "1"): kept as written.
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1000m"}}}]}});
    seen.push(store.create(&Collection::new("pods", Some("ns")), &pod, &w("dave")).expect("create pod"));
    seen.push(get(store, "deployments.apps", "web"));
    seen.push(get(store, "configmaps", "cfg"));
    seen.push(get(store, "pods", "p"));
    seen.push(
        store
            .list(&Collection::new("deployments.apps", Some("ns")), &ListOptions::default())
            .expect("list")
            .to_json("apps/v1", "DeploymentList"),
    );
    let text = store.list_json(&Collection::new("configmaps", Some("ns")), &ListOptions::default()).expect("list_json");
    seen.push(serde_json::from_slice(&text.to_json_bytes("v1", "ConfigMapList")).expect("list JSON"));
    seen
}

/// What differs between two stores by construction: uid, creation time.
fn scrub(mut v: Value) -> Value {
    fn walk(v: &mut Value) {
        match v {
            Value::Object(m) => {
                for k in ["uid", "creationTimestamp", "time"] {
                    if m.get(k).is_some_and(Value::is_string) {
                        m.insert(k.into(), json!("-"));
                    }
                }
                m.values_mut().for_each(walk);
            }
            Value::Array(a) => a.iter_mut().for_each(walk),
            _ => {}
        }
    }
    walk(&mut v);
    v
}

#[test]
fn protobuf_records_read_back_as_json_records_do() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (json_store, pb_store) = (open(&dir.path().join("json"), false), open(&dir.path().join("pb"), true));
    let want: Vec<Value> = run_writes(&json_store).into_iter().map(scrub).collect();
    let got: Vec<Value> = run_writes(&pb_store).into_iter().map(scrub).collect();
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "step {i}");
    }
    assert_eq!(get(&pb_store, "pods", "p")["spec"]["containers"][0]["resources"]["requests"]["cpu"], "1000m");
    // Field history and blame read protobuf records too.
    let blame = pb_store.blame(&ObjectKey::new("deployments.apps", Some("ns"), "web")).expect("blame");
    assert!(blame.iter().any(|l| l.path.contains("env") && l.owners.iter().any(|o| o == "bob")), "{blame:?}");
    let at =
        pb_store.object_at(&ObjectKey::new("deployments.apps", Some("ns"), "web"), Revision(1)).expect("object at").expect("exists at 1");
    assert_eq!(at["spec"]["replicas"], 2);
}

#[test]
fn watch_events_and_deletes_of_protobuf_records() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = open(dir.path(), true);
    let mut watch = store.watch(&Collection::new("deployments.apps", Some("ns")), &WatchOptions::default()).expect("watch");
    store.apply(&Collection::new("deployments.apps", Some("ns")), &deployment(1, "nginx:1"), &WriteOptions::new("a")).expect("apply");
    store.delete(&ObjectKey::new("deployments.apps", Some("ns"), "web"), &DeleteOptions::default()).expect("delete");
    let mut events = Vec::new();
    while events.len() < 2 {
        let ev = watch.next_timeout(Duration::from_secs(5)).expect("an event");
        if ev.type_name() != "BOOKMARK" {
            events.push(ev.to_json("apps/v1", "Deployment"));
        }
    }
    assert_eq!((events[0]["type"].as_str(), events[1]["type"].as_str()), (Some("ADDED"), Some("DELETED")));
    assert_eq!(events[1]["object"]["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:1");
    assert!(store.get(&ObjectKey::new("deployments.apps", Some("ns"), "web"), &GetOptions::default()).is_err());
}

#[test]
fn the_option_may_change_between_opens() {
    let dir = tempfile::tempdir().expect("temp dir");
    let w = WriteOptions::new("m");
    let before = {
        let store = open(dir.path(), false);
        store.apply(&Collection::new("deployments.apps", Some("ns")), &deployment(1, "nginx:1"), &w).expect("apply as JSON")
    };
    let after = {
        let store = open(dir.path(), true);
        assert_eq!(get(&store, "deployments.apps", "web"), before, "a JSON record read by a protobuf store");
        store.apply(&Collection::new("deployments.apps", Some("ns")), &deployment(4, "nginx:1"), &w).expect("apply as protobuf")
    };
    let store = open(dir.path(), false);
    assert_eq!(get(&store, "deployments.apps", "web"), after, "a protobuf record read by a JSON store");
    let old = store.object_at(
        &ObjectKey::new("deployments.apps", Some("ns"), "web"),
        before["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap(),
    );
    assert_eq!(old.expect("object at").expect("exists"), before);
}
