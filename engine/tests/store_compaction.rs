//! Compaction: 410 for reads, lists, tokens and watches before the compacted revision; the state
//! at it stays readable; the compacted revision persists.
// Needs the RocksDB-backed store (the engine's `store` feature).
#![cfg(feature = "store")]

use fieldstore_engine::store::{
    Collection, GetOptions, ListOptions, ObjectKey, Options, ResourceVersionMatch, Revision, WatchEvent, WatchOptions, WriteOptions,
};
use fieldstore_engine::{Error, Reason};
use serde_json::{json, Value};
use std::time::Duration;

mod support;
use support::TestStore;

fn cm(name: &str, v: i64) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"v": v.to_string()}})
}

fn exact(rv: u64) -> GetOptions {
    GetOptions { resource_version: Some(rv.to_string()), resource_version_match: Some(ResourceVersionMatch::Exact) }
}

#[test]
fn compacted_history_answers_410() {
    let mut s = TestStore::new(Options::default());
    let w = WriteOptions::new("t");
    for i in 1..=5 {
        s.apply(&Collection::new("configmaps", Some("ns")), &cm("a", i), &w).unwrap();
        // revisions 1..=5
    }
    s.create(&Collection::new("configmaps", Some("ns")), &cm("gone", 0), &w).unwrap(); // 6
    let token = s
        .list(&Collection::new("configmaps", Some("ns")), &ListOptions { limit: Some(1), ..Default::default() })
        .unwrap()
        .continue_token
        .unwrap();
    s.delete(&ObjectKey::new("configmaps", Some("ns"), "gone"), &Default::default()).unwrap(); // 7
    s.create(&Collection::new("configmaps", Some("ns")), &cm("b", 0), &w).unwrap(); // 8
    s.compact(Revision(7)).unwrap();
    assert_eq!(s.compacted_revision(), Revision(7));

    let e = s.get(&ObjectKey::new("configmaps", Some("ns"), "a"), &exact(3)).unwrap_err();
    assert!(matches!(e, Error::Expired(_)));
    assert_eq!((e.reason(), e.reason().code()), (Reason::Expired, 410));
    assert_eq!(s.get(&ObjectKey::new("configmaps", Some("ns"), "a"), &exact(7)).unwrap()["data"]["v"], "5");
    assert!(matches!(s.get(&ObjectKey::new("configmaps", Some("ns"), "gone"), &exact(7)), Err(Error::NotFound { .. })));
    let list_old = ListOptions { resource_version: Some("6".into()), limit: Some(10), ..Default::default() };
    assert!(matches!(s.list(&Collection::new("configmaps", Some("ns")), &list_old), Err(Error::Expired(_))));
    let at7 = ListOptions { resource_version: Some("7".into()), limit: Some(10), ..Default::default() };
    assert_eq!(s.list(&Collection::new("configmaps", Some("ns")), &at7).unwrap().items.len(), 1);
    let e =
        s.list(&Collection::new("configmaps", Some("ns")), &ListOptions { continue_token: Some(token), ..Default::default() }).unwrap_err();
    assert_eq!((e.reason(), e.reason().code()), (Reason::Expired, 410));
    assert!(e.to_string().contains("too old to display a consistent list result"), "{e}");
    // As Kubernetes: the 410's Status carries a token for the rest of the list as it is now,
    // which shows what changed since the first page ("gone" deleted, "b" created).
    let Error::InconsistentContinue { continue_token } = &e else { panic!("{e:?}") };
    assert_eq!(e.to_status()["metadata"]["continue"], continue_token.as_str());
    let rest = s
        .list(
            &Collection::new("configmaps", Some("ns")),
            &ListOptions { continue_token: Some(continue_token.clone()), ..Default::default() },
        )
        .unwrap();
    let names: Vec<_> = rest.items.iter().map(|o| o["metadata"]["name"].as_str().unwrap_or_default()).collect();
    assert_eq!((names, rest.resource_version, rest.continue_token), (vec!["b"], Revision(8), None));
    // Paged, the inconsistent continuation reads every later page at the revision it started at.
    let paged = s
        .list(
            &Collection::new("configmaps", Some("ns")),
            &ListOptions { continue_token: Some(continue_token.clone()), limit: Some(1), ..Default::default() },
        )
        .unwrap();
    assert_eq!((paged.items.len(), paged.resource_version), (1, Revision(8)));
    let with_rv = ListOptions { continue_token: Some(continue_token.clone()), resource_version: Some("8".into()), ..Default::default() };
    assert!(matches!(s.list(&Collection::new("configmaps", Some("ns")), &with_rv), Err(Error::BadRequest(_))));
    let e = s
        .watch(&Collection::new("configmaps", Some("ns")), &WatchOptions { resource_version: Some("5".into()), ..Default::default() })
        .unwrap_err();
    assert!(matches!(&e, Error::Expired(m) if m.starts_with("too old resource version: 5 (7)")), "{e}");
    // Watching from the compacted revision itself replays what came after.
    let mut watch = s
        .watch(&Collection::new("configmaps", Some("ns")), &WatchOptions { resource_version: Some("7".into()), ..Default::default() })
        .unwrap();
    assert!(matches!(watch.next_timeout(Duration::from_secs(5)), Some(WatchEvent::Added(o)) if o["metadata"]["name"] == "b"));
    drop(watch);

    s.reopen();
    assert_eq!(s.compacted_revision(), Revision(7));
    assert!(matches!(s.get(&ObjectKey::new("configmaps", Some("ns"), "a"), &exact(3)), Err(Error::Expired(_))));
    assert_eq!(s.revision(), Revision(8));
    assert!(matches!(s.compact(Revision(100)), Err(Error::BadRequest(_))));
}

#[test]
fn automatic_compaction_by_count() {
    let s = TestStore::new(Options::default().retention(None).keep_revisions(Some(10)).compaction_interval(Duration::from_millis(20)));
    for i in 0..30 {
        s.apply(&Collection::new("configmaps", Some("ns")), &cm("a", i), &WriteOptions::new("t")).unwrap();
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while s.compacted_revision() < Revision(20) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(s.compacted_revision(), Revision(20));
    assert_eq!(s.get(&ObjectKey::new("configmaps", Some("ns"), "a"), &exact(25)).unwrap()["data"]["v"], "24");
}
