//! The owner index: objects managed by a manager, owners of a field path, manager counts —
//! kept exact through applies, updates, forced takeovers, deletes and reopen — and the
//! administrative rename and release.
// Needs the RocksDB-backed store (the engine's `store` feature).
#![cfg(feature = "store")]
#![allow(clippy::unwrap_used)] // helpers unwrap too: a failed setup is a failed test

use fieldstore_engine::store::{Collection, GetOptions, HistoryQuery, ObjectKey, Options, WriteOptions};
use serde_json::{json, Value};

mod support;
use support::{cm, TestStore};

const NS: Option<&str> = Some("ns");

fn w(m: &str) -> WriteOptions {
    WriteOptions::new(m)
}

fn owners(s: &TestStore, path: &str) -> Vec<(String, String, String)> {
    s.owners_of("configmaps", path).unwrap().into_iter().map(|o| (o.name, o.path, o.manager)).collect()
}

fn labeled(name: &str, label: &str, data: Value) -> Value {
    let mut c = cm(name, data);
    c["metadata"]["labels"] = json!({"team": label});
    c
}

#[test]
fn the_index_follows_ownership_changes() {
    let mut s = TestStore::new(Options::default());
    s.apply(&Collection::new("configmaps", NS), &cm("a", json!({"replicas": "1", "x": "1"})), &w("alice")).unwrap();
    s.apply(&Collection::new("configmaps", NS), &cm("b", json!({"replicas": "1"})), &w("alice")).unwrap();
    s.apply(&Collection::new("configmaps", NS), &cm("b", json!({"replicas": "3"})), &w("hpa").force(true)).unwrap();
    assert_eq!(
        owners(&s, ".data.replicas"),
        vec![("a".into(), ".data.replicas".into(), "alice".into()), ("b".into(), ".data.replicas".into(), "hpa".into())]
    );
    // A prefix lists every field under it; `.dat` is no prefix.
    assert_eq!(owners(&s, ".data").iter().filter(|o| o.0 == "a").count(), 3, "{:?}", owners(&s, ".data"));
    assert!(owners(&s, ".dat").is_empty());
    let by_alice = s.objects_managed_by("alice", None, None).unwrap();
    assert_eq!(by_alice.len(), 2);
    assert_eq!(by_alice[0].name, "a");
    assert_eq!(by_alice[0].operations, vec!["Apply"]);
    assert_eq!(by_alice[0].fields, json!({"f:data": {".": {}, "f:replicas": {}, "f:x": {}}}));
    // alice's entry on b still owns `.data` (the map) but no longer `.data.replicas`.
    assert_eq!(by_alice[1].name, "b");
    let managers = s.managers(Some("configmaps")).unwrap();
    let alice = managers.iter().find(|m| m.manager == "alice").unwrap();
    assert_eq!(alice.objects, 2);
    // Paged: one object per page, the token leads to the next, a bad token is a 400.
    let p1 = s.objects_managed_by_page("alice", None, Some(1), None).unwrap();
    assert_eq!((p1.items.len(), p1.items[0].name.as_str()), (1, "a"));
    let p2 = s.objects_managed_by_page("alice", None, Some(1), p1.continue_token.as_deref()).unwrap();
    assert_eq!((p2.items[0].name.as_str(), p2.continue_token.is_none()), ("b", true));
    assert!(matches!(s.objects_managed_by_page("alice", None, Some(1), Some("zz")), Err(fieldstore_engine::Error::BadRequest(_))));
    // Deleting an object removes it from the index; the index survives reopen.
    s.delete(&ObjectKey::new("configmaps", NS, "a"), &Default::default()).unwrap();
    s.reopen();
    assert_eq!(owners(&s, ".data.replicas"), vec![("b".into(), ".data.replicas".into(), "hpa".into())]);
    assert_eq!(s.objects_managed_by("alice", Some("configmaps"), None).unwrap().len(), 1);
}

#[test]
fn rename_and_release_rewrite_ownership_and_record_history() {
    let s = TestStore::new(Options::default());
    s.apply(&Collection::new("configmaps", NS), &labeled("a", "red", json!({"k": "1"})), &w("kubectl-client-side-apply")).unwrap();
    s.apply(&Collection::new("configmaps", NS), &labeled("b", "blue", json!({"k": "2"})), &w("kubectl-client-side-apply")).unwrap();
    s.apply(&Collection::new("configmaps", NS), &labeled("b", "blue", json!({"k": "2", "j": "3"})), &w("kubectl")).unwrap();
    // Renaming merges with kubectl's entry on b.
    assert_eq!(s.rename_manager("kubectl-client-side-apply", "kubectl").unwrap(), 2);
    assert!(s.objects_managed_by("kubectl-client-side-apply", None, None).unwrap().is_empty());
    let b = s.get(&ObjectKey::new("configmaps", NS, "b"), &GetOptions::default()).unwrap();
    let entries = b["metadata"]["managedFields"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{entries:#?}");
    assert_eq!(entries[0]["manager"], "kubectl");
    assert!(owners(&s, ".data.k").iter().all(|o| o.2 == "kubectl"));
    // The rename is in the object's log, values untouched.
    let log = s.object_log(&ObjectKey::new("configmaps", NS, "b"), Some(1)).unwrap();
    assert_eq!(log[0].note, r#"renamed manager "kubectl-client-side-apply" to "kubectl""#);
    assert_eq!((log[0].changed_fields, log[0].by.manager.as_str()), (0, "kubectl"));
    assert_eq!(b["data"], json!({"k": "2", "j": "3"}));
    assert!(s.managers(None).unwrap().iter().all(|m| m.manager == "kubectl"));
    let revisions_before = s.revision();
    // Release only the red objects.
    assert_eq!(s.release("kubectl", Some("configmaps"), Some("team=red")).unwrap(), 1);
    assert_eq!(s.revision().0, revisions_before.0 + 1);
    let a = s.get(&ObjectKey::new("configmaps", NS, "a"), &GetOptions::default()).unwrap();
    assert!(a["metadata"].get("managedFields").is_none());
    assert_eq!(a["data"]["k"], "1");
    let names: Vec<String> = s.objects_managed_by("kubectl", None, None).unwrap().into_iter().map(|o| o.name).collect();
    assert_eq!(names, vec!["b"]);
    // The release is in a's log; its field timeline still attributes the value to the apply.
    let log = s.object_log(&ObjectKey::new("configmaps", NS, "a"), None).unwrap();
    assert_eq!(log[0].note, r#"released ownership of manager "kubectl""#);
    assert_eq!(log.len(), 3);
    let k = s.field_history(&ObjectKey::new("configmaps", NS, "a"), ".data.k", &HistoryQuery::default()).unwrap();
    assert_eq!(k.events.len(), 1);
    assert_eq!(k.events[0].by.manager, "kubectl-client-side-apply");
}
