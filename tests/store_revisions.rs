//! Revisions: one global, gap-free, persisted counter; every version kept (MVCC).
// Needs the RocksDB-backed store: `cargo test --features store` (a C++ build of several minutes).
#![cfg(feature = "store")]

use fieldstore::engine::store::{GetOptions, Options, ResourceVersionMatch, Store, TypeSpec, WriteOptions};
use fieldstore::engine::Error;
use serde_json::{json, Value};

/// A store in a temporary directory, removed when dropped (after the store).
struct TestStore {
    store: Option<Store>,
    dir: tempfile::TempDir,
}

impl TestStore {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path());
        TestStore { store: Some(store), dir }
    }
    fn reopen(&mut self) {
        self.store = None;
        self.store = Some(open(self.dir.path()));
    }
}

impl std::ops::Deref for TestStore {
    type Target = Store;
    fn deref(&self) -> &Store {
        self.store.as_ref().unwrap()
    }
}

fn open(dir: &std::path::Path) -> Store {
    let s = Store::open(dir, Options::default()).unwrap();
    if s.types().is_empty() {
        s.register(TypeSpec::new("", "v1", "ConfigMap", "configmaps").namespaced(true)).unwrap();
    }
    s
}

fn cm(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
}

fn rv(v: &Value) -> u64 {
    v["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap()
}

#[test]
fn every_write_takes_the_next_revision() {
    let s = TestStore::new();
    let w = WriteOptions::new("test");
    assert_eq!(s.revision(), 0);
    let a = s.create("configmaps", Some("ns"), &cm("a", json!({"k": "1"})), &w).unwrap();
    assert_eq!(rv(&a), 1);
    let b = s.create("configmaps", Some("ns"), &cm("b", json!({})), &w).unwrap();
    assert_eq!(rv(&b), 2);
    let mut a2 = a.clone();
    a2["data"]["k"] = json!("2");
    let a2 = s.update("configmaps", Some("ns"), &a2, &w).unwrap();
    assert_eq!(rv(&a2), 3);
    let d = s.delete("configmaps", Some("ns"), "b", &Default::default()).unwrap();
    assert_eq!(rv(&d), 4);
    assert_eq!(s.revision(), 4);
}

#[test]
fn revision_and_types_survive_reopen() {
    let mut s = TestStore::new();
    let w = WriteOptions::new("test");
    s.create("configmaps", Some("ns"), &cm("a", json!({})), &w).unwrap();
    s.create("configmaps", Some("ns"), &cm("b", json!({})), &w).unwrap();
    s.reopen();
    assert_eq!(s.revision(), 2);
    assert_eq!(s.types().len(), 1);
    let c = s.create("configmaps", Some("ns"), &cm("c", json!({})), &w).unwrap();
    assert_eq!(rv(&c), 3);
    assert_eq!(rv(&s.get("configmaps", Some("ns"), "a", &GetOptions::default()).unwrap()), 1);
}

#[test]
fn reads_at_a_past_revision_are_exact() {
    let s = TestStore::new();
    let w = WriteOptions::new("test");
    let a = s.create("configmaps", Some("ns"), &cm("a", json!({"k": "1"})), &w).unwrap();
    let mut a2 = a.clone();
    a2["data"]["k"] = json!("2");
    s.update("configmaps", Some("ns"), &a2, &w).unwrap();
    s.delete("configmaps", Some("ns"), "a", &Default::default()).unwrap();
    let at = |r: u64| {
        s.get("configmaps", Some("ns"), "a", &GetOptions { resource_version: Some(r.to_string()), resource_version_match: Some(ResourceVersionMatch::Exact) })
    };
    assert_eq!(at(1).unwrap()["data"]["k"], "1");
    assert_eq!(at(2).unwrap()["data"]["k"], "2");
    assert!(matches!(at(3), Err(Error::NotFound { .. })));
    assert!(matches!(s.get("configmaps", Some("ns"), "a", &GetOptions::default()), Err(Error::NotFound { .. })));
}

#[test]
fn dry_run_consumes_no_revision() {
    let s = TestStore::new();
    let dry = WriteOptions::new("test").dry_run(true);
    let out = s.create("configmaps", Some("ns"), &cm("a", json!({})), &dry).unwrap();
    assert!(out["metadata"]["uid"].is_string());
    assert_eq!(s.revision(), 0);
    assert!(matches!(s.get("configmaps", Some("ns"), "a", &GetOptions::default()), Err(Error::NotFound { .. })));
}

#[test]
fn concurrent_writers_get_distinct_gap_free_revisions_and_lose_no_update() {
    let s = TestStore::new();
    let store: Store = (*s).clone();
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let store = store.clone();
            std::thread::spawn(move || {
                let mut revs = Vec::new();
                for i in 0..40 {
                    let o = store.create("configmaps", Some("ns"), &cm(&format!("o-{t}-{i}"), json!({})), &WriteOptions::new("w")).unwrap();
                    revs.push(rv(&o));
                    // Every thread applies its own field to one shared object: none may be lost.
                    let shared = cm("shared", json!({format!("t{t}-{i}"): "x"}));
                    store.apply("configmaps", Some("ns"), &shared, &WriteOptions::new(format!("m{t}"))).unwrap();
                }
                revs
            })
        })
        .collect();
    let mut all: Vec<u64> = threads.into_iter().flat_map(|t| t.join().unwrap()).collect();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), 320);
    let shared = s.get("configmaps", Some("ns"), "shared", &GetOptions::default()).unwrap();
    // Each manager owns only its last applied key: the apply of i replaced the key of i-1.
    assert_eq!(shared["data"].as_object().unwrap().len(), 8, "{}", shared["data"]);
    // 320 creates + 320 applies, every one a revision, no gaps.
    assert_eq!(s.revision(), 640);
}
