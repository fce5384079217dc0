//! Concurrency: parallel writers get distinct, gap-free revisions; concurrent writers to one
//! object never lose an update (apply and patch retry optimistically; update with a stale
//! resourceVersion fails its precondition instead of overwriting).
// Needs the RocksDB-backed store (the engine's `store` feature).
#![cfg(feature = "store")]

use fieldstore_engine::patch::PatchType;
use fieldstore_engine::store::{Collection, GetOptions, ObjectKey, Options, Revision, Store, WriteOptions};
use fieldstore_engine::Error;
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

mod support;
use support::{cm, rv, TestStore};

#[test]
fn concurrent_writers_get_distinct_gap_free_revisions_and_lose_no_update() {
    let s = TestStore::new(Options::default());
    let store: Store = (*s).clone();
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let store = store.clone();
            std::thread::spawn(move || {
                let mut revs = Vec::new();
                for i in 0..40 {
                    let o = store
                        .create(&Collection::new("configmaps", Some("ns")), &cm(&format!("o-{t}-{i}"), json!({})), &WriteOptions::new("w"))
                        .unwrap();
                    revs.push(rv(&o));
                    // Every thread applies its own field to one shared object: none may be lost.
                    let shared = cm("shared", json!({format!("t{t}-{i}"): "x"}));
                    store.apply(&Collection::new("configmaps", Some("ns")), &shared, &WriteOptions::new(format!("m{t}"))).unwrap();
                }
                revs
            })
        })
        .collect();
    let mut all: Vec<u64> = threads.into_iter().flat_map(|t| t.join().unwrap()).collect();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), 320);
    let shared = s.get(&ObjectKey::new("configmaps", Some("ns"), "shared"), &GetOptions::default()).unwrap();
    // Each manager owns only its last applied key: the apply of i replaced the key of i-1.
    assert_eq!(shared["data"].as_object().unwrap().len(), 8, "{}", shared["data"]);
    // 320 creates + 320 applies, every one a revision, no gaps.
    assert_eq!(s.revision(), Revision(640));
}

#[test]
fn concurrent_patches_to_one_object_all_land() {
    let s = TestStore::new(Options::default());
    s.create(&Collection::new("configmaps", Some("ns")), &cm("p", json!({})), &WriteOptions::new("w")).unwrap();
    let store: Store = (*s).clone();
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let store = store.clone();
            std::thread::spawn(move || {
                for i in 0..25 {
                    let patch = json!({"data": {format!("k{t}-{i}"): "v"}});
                    store
                        .patch(
                            &ObjectKey::new("configmaps", Some("ns"), "p"),
                            PatchType::Merge,
                            &patch,
                            &WriteOptions::new(format!("p{t}")),
                        )
                        .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let got = s.get(&ObjectKey::new("configmaps", Some("ns"), "p"), &GetOptions::default()).unwrap();
    // Merge patches add keys: every one of the 200 must be there.
    assert_eq!(got["data"].as_object().unwrap().len(), 200);
    assert_eq!(rv(&got), 201);
    // The creator's entry (it owns the empty `data`) and one per patching manager.
    assert_eq!(got["metadata"]["managedFields"].as_array().unwrap().len(), 9);
}

#[test]
fn racing_updates_with_the_same_resource_version_let_exactly_one_win() {
    let s = TestStore::new(Options::default());
    let base = s.create(&Collection::new("configmaps", Some("ns")), &cm("u", json!({"v": "0"})), &WriteOptions::new("w")).unwrap();
    let store: Store = (*s).clone();
    let wins = Arc::new(AtomicUsize::new(0));
    let conflicts = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let (store, base, wins, conflicts) = (store.clone(), base.clone(), wins.clone(), conflicts.clone());
            std::thread::spawn(move || {
                let mut new = base.clone();
                // Every writer changes the value (an identical body would be a no-op, not a conflict).
                new["data"]["v"] = json!((t + 1).to_string());
                match store.update(&Collection::new("configmaps", Some("ns")), &new, &WriteOptions::new("w")) {
                    Ok(_) => wins.fetch_add(1, Ordering::SeqCst),
                    Err(Error::Precondition { .. }) => conflicts.fetch_add(1, Ordering::SeqCst),
                    Err(e) => panic!("unexpected error {e}"),
                };
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(wins.load(Ordering::SeqCst), 1);
    assert_eq!(conflicts.load(Ordering::SeqCst), 7);
    assert_eq!(s.revision(), Revision(2));
}
