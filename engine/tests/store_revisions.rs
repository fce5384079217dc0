//! Revisions: one global, gap-free, persisted counter; every version kept (MVCC).
// Needs the RocksDB-backed store (the engine's `store` feature).
#![cfg(feature = "store")]

use fieldstore_engine::store::{Collection, GetOptions, ObjectKey, Options, ResourceVersionMatch, Revision, WriteOptions};
use fieldstore_engine::Error;
use serde_json::json;

mod support;
use support::{cm, rv, TestStore};

#[test]
fn every_write_takes_the_next_revision() {
    let s = TestStore::new(Options::default());
    let w = WriteOptions::new("test");
    assert_eq!(s.revision(), Revision(0));
    let a = s.create(&Collection::new("configmaps", Some("ns")), &cm("a", json!({"k": "1"})), &w).unwrap();
    assert_eq!(rv(&a), 1);
    let b = s.create(&Collection::new("configmaps", Some("ns")), &cm("b", json!({})), &w).unwrap();
    assert_eq!(rv(&b), 2);
    let mut a2 = a.clone();
    a2["data"]["k"] = json!("2");
    let a2 = s.update(&Collection::new("configmaps", Some("ns")), &a2, &w).unwrap();
    assert_eq!(rv(&a2), 3);
    let d = s.delete(&ObjectKey::new("configmaps", Some("ns"), "b"), &Default::default()).unwrap();
    assert_eq!(rv(&d), 4);
    assert_eq!(s.revision(), Revision(4));
}

#[test]
fn revision_and_types_survive_reopen() {
    let mut s = TestStore::new(Options::default());
    let w = WriteOptions::new("test");
    s.create(&Collection::new("configmaps", Some("ns")), &cm("a", json!({})), &w).unwrap();
    s.create(&Collection::new("configmaps", Some("ns")), &cm("b", json!({})), &w).unwrap();
    s.reopen();
    assert_eq!(s.revision(), Revision(2));
    // The registered configmaps (no schema) and the other built-in kinds.
    assert_eq!(s.types().len(), fieldstore_engine::store::builtin_types().len());
    assert_eq!(s.find_type("configmaps").unwrap().schema, fieldstore_engine::store::SchemaSource::None);
    let c = s.create(&Collection::new("configmaps", Some("ns")), &cm("c", json!({})), &w).unwrap();
    assert_eq!(rv(&c), 3);
    assert_eq!(rv(&s.get(&ObjectKey::new("configmaps", Some("ns"), "a"), &GetOptions::default()).unwrap()), 1);
}

#[test]
fn reads_at_a_past_revision_are_exact() {
    let s = TestStore::new(Options::default());
    let w = WriteOptions::new("test");
    let a = s.create(&Collection::new("configmaps", Some("ns")), &cm("a", json!({"k": "1"})), &w).unwrap();
    let mut a2 = a.clone();
    a2["data"]["k"] = json!("2");
    s.update(&Collection::new("configmaps", Some("ns")), &a2, &w).unwrap();
    s.delete(&ObjectKey::new("configmaps", Some("ns"), "a"), &Default::default()).unwrap();
    let at = |r: u64| {
        s.get(
            &ObjectKey::new("configmaps", Some("ns"), "a"),
            &GetOptions { resource_version: Some(r.to_string()), resource_version_match: Some(ResourceVersionMatch::Exact) },
        )
    };
    assert_eq!(at(1).unwrap()["data"]["k"], "1");
    assert_eq!(at(2).unwrap()["data"]["k"], "2");
    assert!(matches!(at(3), Err(Error::NotFound { .. })));
    assert!(matches!(s.get(&ObjectKey::new("configmaps", Some("ns"), "a"), &GetOptions::default()), Err(Error::NotFound { .. })));
}

#[test]
fn dry_run_consumes_no_revision() {
    let s = TestStore::new(Options::default());
    let dry = WriteOptions::new("test").dry_run(true);
    let out = s.create(&Collection::new("configmaps", Some("ns")), &cm("a", json!({})), &dry).unwrap();
    assert!(out["metadata"]["uid"].is_string());
    assert_eq!(s.revision(), Revision(0));
    assert!(matches!(s.get(&ObjectKey::new("configmaps", Some("ns"), "a"), &GetOptions::default()), Err(Error::NotFound { .. })));
}
