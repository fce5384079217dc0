//! Field-level history: blame inside associative lists and sets, field timelines (paged, by
//! prefix), objects at compacted revisions rebuilt exactly, history outliving compaction and
//! deletion, recreated objects starting a new timeline, and retention.
// Needs the RocksDB-backed store (the engine's `store` feature).
#![cfg(feature = "store")]
#![allow(clippy::unwrap_used)] // helpers unwrap too: a failed setup is a failed test

use fieldstore_engine::history::ChangeKind;
use fieldstore_engine::store::{
    Collection, GetOptions, HistoryPolicy, HistoryQuery, ObjectKey, Options, ResourceVersionMatch, Revision, TypeSpec, WriteOptions,
};
use fieldstore_engine::Error;
use serde_json::{json, Value};

mod support;
use support::{cm, rv, TestStore};

const NS: Option<&str> = Some("ns");

fn deployments() -> TypeSpec {
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "deployments.apps"},
        "spec": {"group": "apps", "scope": "Namespaced", "names": {"kind": "Deployment", "plural": "deployments"},
          "versions": [{"name": "v1", "served": true, "storage": true,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
              "spec": {"type": "object", "properties": {
                "replicas": {"type": "integer"},
                "finalizers": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                "containers": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                  "items": {"type": "object", "required": ["name"], "properties": {
                    "name": {"type": "string"}, "image": {"type": "string"}}}}}}}}}}]}});
    TypeSpec::from_crd(&crd).unwrap()
}

fn deploy(replicas: i64, containers: &[(&str, &str)], tags: &[&str]) -> Value {
    let cs: Vec<Value> = containers.iter().map(|(n, i)| json!({"name": n, "image": i})).collect();
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": replicas, "containers": cs, "finalizers": tags}})
}

fn store() -> TestStore {
    let s = TestStore::new(Options::default());
    s.register(deployments()).unwrap();
    s
}

fn w(m: &str) -> WriteOptions {
    WriteOptions::new(m)
}

#[test]
fn blame_attributes_keyed_items_and_set_members_to_their_writers() {
    let s = store();
    let r1 = rv(&s
        .apply(&Collection::new("deployments.apps", NS), &deploy(1, &[("app", "app:1"), ("side", "side:1")], &["a"]), &w("alice"))
        .unwrap());
    // bob takes over one container's image and adds a set member; alice's other fields stay hers.
    let mut live = s.get(&ObjectKey::new("deployments.apps", NS, "web"), &GetOptions::default()).unwrap();
    live["spec"]["containers"][1]["image"] = json!("side:2");
    live["spec"]["finalizers"] = json!(["a", "b"]);
    let r2 = rv(&s.update(&Collection::new("deployments.apps", NS), &live, &w("bob")).unwrap());
    let blame = s.blame(&ObjectKey::new("deployments.apps", NS, "web")).unwrap();
    let line = |p: &str| blame.iter().find(|l| l.path == p).unwrap_or_else(|| panic!("no line {p}: {blame:#?}"));
    let app = line(r#".spec.containers[name="app"].image"#);
    assert_eq!(app.value, json!("app:1"));
    assert_eq!(app.last_change.as_ref().unwrap().manager, "alice");
    assert_eq!(app.last_change.as_ref().unwrap().revision, Revision(r1));
    assert_eq!(app.owners, vec!["alice"]);
    let side = line(r#".spec.containers[name="side"].image"#);
    assert_eq!(side.last_change.as_ref().unwrap().manager, "bob");
    assert_eq!(side.last_change.as_ref().unwrap().operation, "Update");
    assert_eq!(side.last_change.as_ref().unwrap().revision, Revision(r2));
    assert_eq!(line(r#".spec.finalizers[="b"]"#).last_change.as_ref().unwrap().manager, "bob");
    assert_eq!(line(r#".spec.finalizers[="a"]"#).last_change.as_ref().unwrap().manager, "alice");
    assert_eq!(line(".spec.replicas").last_change.as_ref().unwrap().operation, "Apply");
    // managedFields are not fields of the object.
    assert!(blame.iter().all(|l| !l.path.contains("managedFields")));
}

#[test]
fn field_history_is_newest_first_paged_and_by_prefix() {
    let s = store();
    for i in 1..=5 {
        s.apply(&Collection::new("deployments.apps", NS), &deploy(i, &[("app", &format!("app:{i}"))], &[]), &w("ci")).unwrap();
    }
    let all = s.field_history(&ObjectKey::new("deployments.apps", NS, "web"), ".spec.replicas", &HistoryQuery::default()).unwrap();
    let values: Vec<(Option<Value>, Option<Value>)> = all.events.iter().map(|e| (e.before.clone(), e.after.clone())).collect();
    assert_eq!(values[0], (Some(json!(4)), Some(json!(5))));
    assert_eq!(values[3], (Some(json!(1)), Some(json!(2))));
    assert_eq!(values[4], (None, Some(json!(1))));
    assert_eq!(all.events[4].change, ChangeKind::Added);
    assert!(all.events.windows(2).all(|w| w[0].by.revision > w[1].by.revision));
    // Paging.
    let p1 = s
        .field_history(
            &ObjectKey::new("deployments.apps", NS, "web"),
            ".spec.replicas",
            &HistoryQuery { limit: Some(2), ..Default::default() },
        )
        .unwrap();
    assert_eq!(p1.events.len(), 2);
    let p2 = s
        .field_history(
            &ObjectKey::new("deployments.apps", NS, "web"),
            ".spec.replicas",
            &HistoryQuery { limit: Some(2), before_revision: p1.next_before_revision, ..Default::default() },
        )
        .unwrap();
    assert_eq!(p2.events[0].by.revision, all.events[2].by.revision);
    // A prefix covers the keyed item's fields; `.spec.rep` is not a prefix of `.spec.replicas`.
    let items = s.field_history(&ObjectKey::new("deployments.apps", NS, "web"), ".spec.containers", &HistoryQuery::default()).unwrap();
    assert!(items.events.iter().any(|e| e.path == r#".spec.containers[name="app"].image"# && e.after == Some(json!("app:5"))));
    assert!(s
        .field_history(&ObjectKey::new("deployments.apps", NS, "web"), ".spec.rep", &HistoryQuery::default())
        .unwrap()
        .events
        .is_empty());
}

#[test]
fn objects_at_compacted_revisions_are_rebuilt_exactly() {
    let s = store();
    let mut versions = Vec::new();
    let steps: Vec<Value> = vec![
        deploy(1, &[("a", "a:1")], &["x"]),
        deploy(2, &[("a", "a:1"), ("b", "b:1")], &["x", "y"]),
        deploy(2, &[("b", "b:2"), ("a", "a:1")], &["y"]),
        deploy(3, &[("c", "c:1")], &[]),
    ];
    for (i, cfg) in steps.iter().enumerate() {
        let out = s.apply(&Collection::new("deployments.apps", NS), cfg, &w("m").force(true)).unwrap();
        versions.push(out);
        // An unrelated write in between, so revisions have gaps for this object.
        s.create(&Collection::new("configmaps", NS), &cm(&format!("gap{i}"), json!({})), &w("x")).unwrap();
    }
    let last = s.revision();
    s.compact(last).unwrap();
    for v in &versions {
        let r = rv(v);
        let exact = GetOptions { resource_version: Some(r.to_string()), resource_version_match: Some(ResourceVersionMatch::Exact) };
        assert!(matches!(s.get(&ObjectKey::new("deployments.apps", NS, "web"), &exact), Err(Error::Expired(_)) | Ok(_)));
        for at in [r, r + 1] {
            let rebuilt = s.object_at(&ObjectKey::new("deployments.apps", NS, "web"), Revision(at)).unwrap().expect("existed");
            let mut want = v.clone();
            want["metadata"].as_object_mut().unwrap().remove("managedFields");
            let mut got = rebuilt.clone();
            got["metadata"].as_object_mut().unwrap().remove("managedFields");
            assert_eq!(got, want, "at revision {at}");
        }
    }
    // Before the create, the object did not exist.
    assert_eq!(s.object_at(&ObjectKey::new("deployments.apps", NS, "web"), Revision(rv(&versions[0]) - 1)).unwrap(), None);
}

#[test]
fn history_outlives_compaction_and_deletion_and_recreation_starts_a_new_timeline() {
    let s = store();
    s.apply(&Collection::new("deployments.apps", NS), &deploy(1, &[("a", "a:1")], &[]), &w("m")).unwrap();
    let old_uid = s.get(&ObjectKey::new("deployments.apps", NS, "web"), &GetOptions::default()).unwrap()["metadata"]["uid"].clone();
    s.apply(&Collection::new("deployments.apps", NS), &deploy(2, &[("a", "a:1")], &[]), &w("m")).unwrap();
    let deleted_at = rv(&s.delete(&ObjectKey::new("deployments.apps", NS, "web"), &Default::default()).unwrap());
    let before_delete = s.revision();
    s.apply(&Collection::new("deployments.apps", NS), &deploy(7, &[("z", "z:1")], &[]), &w("n")).unwrap();
    s.compact(s.revision()).unwrap();
    let h = s.field_history(&ObjectKey::new("deployments.apps", NS, "web"), ".spec.replicas", &HistoryQuery::default()).unwrap();
    let summary: Vec<(ChangeKind, String)> = h.events.iter().map(|e| (e.change, e.uid.clone())).collect();
    assert_eq!(summary.len(), 4, "{summary:?}");
    assert_eq!(summary[1].0, ChangeKind::Removed);
    assert_eq!(json!(summary[1].1), old_uid);
    assert_ne!(json!(summary[0].1), old_uid);
    // Only the old incarnation's timeline.
    let old = s
        .field_history(
            &ObjectKey::new("deployments.apps", NS, "web"),
            ".spec.replicas",
            &HistoryQuery { uid: old_uid.as_str().map(String::from), ..Default::default() },
        )
        .unwrap();
    assert_eq!(old.events.len(), 3);
    // Blame of the new incarnation only sees its own writes.
    let blame = s.blame(&ObjectKey::new("deployments.apps", NS, "web")).unwrap();
    assert!(blame.iter().filter_map(|l| l.last_change.as_ref()).all(|c| c.manager == "n"));
    // The deleted incarnation is still readable at a revision before its deletion.
    let old_obj = s.object_at(&ObjectKey::new("deployments.apps", NS, "web"), Revision(deleted_at - 1)).unwrap().unwrap();
    assert_eq!(old_obj["spec"]["replicas"], 2);
    assert_eq!(s.object_at(&ObjectKey::new("deployments.apps", NS, "web"), before_delete).unwrap(), None);
}

#[test]
fn retention_keeps_the_last_changes_and_can_be_off() {
    let dir = tempfile::tempdir().unwrap();
    let s = support::open_at(dir.path(), Options::default());
    let keep3 = HistoryPolicy { keep_changes: 3, keep_seconds: 0, ..HistoryPolicy::default() };
    s.register(TypeSpec::new("", "v1", "ConfigMap", "configmaps").namespaced(true).with_history(keep3)).unwrap();
    s.register(TypeSpec::new("", "v1", "Secret", "secrets").namespaced(true).with_history(HistoryPolicy::off())).unwrap();
    for i in 0..10 {
        s.apply(&Collection::new("configmaps", NS), &cm("c", json!({"v": i.to_string()})), &w("m")).unwrap();
    }
    std::thread::sleep(std::time::Duration::from_millis(5));
    assert_eq!(s.prune_history().unwrap(), 7);
    let h = s.field_history(&ObjectKey::new("configmaps", NS, "c"), "", &HistoryQuery::default()).unwrap();
    let revs: std::collections::BTreeSet<Revision> = h.events.iter().map(|e| e.by.revision).collect();
    assert_eq!(revs.len(), 3);
    // Beyond retention the object at an old, compacted revision is gone: 410.
    s.compact(s.revision()).unwrap();
    assert!(matches!(s.object_at(&ObjectKey::new("configmaps", NS, "c"), Revision(2)), Err(Error::Expired(_))));
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"k": "dg=="}});
    s.apply(&Collection::new("secrets", NS), &secret, &w("m")).unwrap();
    assert!(s.field_history(&ObjectKey::new("secrets", NS, "s"), "", &HistoryQuery::default()).unwrap().events.is_empty());
}

/// A create's history record leaves the created body to the object record of the same key:
/// the create's fields are read from that version while it is kept, and from the history
/// record after compaction took the version (copying the body there first) — the same answers
/// before and after, with the body stored as JSON and as protobuf.
#[test]
fn a_create_reads_its_body_from_the_version_until_compaction_copies_it() {
    for protobuf in [false, true] {
        let s = TestStore::new(Options::default().protobuf_storage(protobuf));
        let configmaps = Collection::new("configmaps", NS);
        let key = ObjectKey::new("configmaps", NS, "cm");
        let created = s.create(&configmaps, &cm("cm", json!({"a": "1", "b": "2"})), &w("creator")).unwrap();
        let mut live = created.clone();
        live["data"]["a"] = json!("changed");
        s.update(&configmaps, &live, &w("updater")).unwrap();
        let before = (s.blame(&key).unwrap(), s.field_history(&key, ".data", &HistoryQuery::default()).unwrap());
        let owners = |b: &[fieldstore_engine::store::BlameLine]| -> Vec<(String, String)> {
            b.iter().map(|l| (l.path.clone(), l.last_change.as_ref().map(|c| c.manager.clone()).unwrap_or_default())).collect()
        };
        assert!(owners(&before.0).contains(&(".data.b".into(), "creator".into())), "{:?}", owners(&before.0));
        assert!(owners(&before.0).contains(&(".data.a".into(), "updater".into())), "{:?}", owners(&before.0));
        // The created version goes: its body is copied into the create's history record.
        s.compact(s.revision()).unwrap();
        let at_create = s.object_at(&key, Revision(rv(&created))).unwrap().unwrap();
        assert_eq!(at_create["data"], json!({"a": "1", "b": "2"}), "protobuf {protobuf}");
        let after = (s.blame(&key).unwrap(), s.field_history(&key, ".data", &HistoryQuery::default()).unwrap());
        assert_eq!(owners(&after.0), owners(&before.0), "protobuf {protobuf}");
        let events = |h: &fieldstore_engine::store::FieldTimeline| -> Vec<String> { h.events.iter().map(|e| format!("{e:?}")).collect() };
        assert_eq!(events(&after.1), events(&before.1), "protobuf {protobuf}");
        assert!(after.1.events.iter().any(|e| e.change == ChangeKind::Added), "{:?}", events(&after.1));
    }
}
