//! Several processes on one store in etcd (`Store::open_etcd` twice on one prefix, as two
//! servers would): each sees the other's writes at once, revisions stay one gap-free order,
//! watches on either see every change of both once and in order, concurrent updates of one
//! object from both lose nothing, a commit larger than one etcd transaction (a 10,000-item
//! object) is atomic, types and compaction reach the other process.
//!
//! Needs an `etcd` binary on PATH (Debian's `etcd-server`); without one each test prints the
//! reason and passes.
#![cfg(feature = "store")]
#![allow(clippy::unwrap_used)]

use fieldstore_engine::store::{
    Collection, GetOptions, ListOptions, ObjectKey, Options, Revision, Store, TypeSpec, WatchEvent, WatchOptions, WriteOptions,
};
use fieldstore_engine::Reason;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

mod support;
use support::{cm, configmaps, rv, test_etcd};

/// Two handles on one fresh store in the test etcd; `None` without etcd.
fn two_servers(options: Options) -> Option<(Store, Store)> {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let url = test_etcd()?;
    let prefix = format!("/two-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::SeqCst));
    let a = Store::open_etcd(&[url.to_string()], &prefix, options.clone()).unwrap();
    a.register(configmaps()).unwrap();
    let b = Store::open_etcd(&[url.to_string()], &prefix, options).unwrap();
    Some((a, b))
}

fn me() -> WriteOptions {
    WriteOptions::new("me")
}

const T: Duration = Duration::from_secs(10);

/// Waits until `store` knows `resource` (types reach other processes through the follower).
fn wait_for_type(store: &Store, resource: &str) {
    let deadline = std::time::Instant::now() + T;
    while store.resource_type(resource).is_none() {
        assert!(std::time::Instant::now() < deadline, "{resource} never registered");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_write_on_one_is_read_at_once_on_the_other_in_one_order_of_revisions() {
    let Some((a, b)) = two_servers(Options::default()) else { return };
    wait_for_type(&b, "configmaps");
    let mut last = 0;
    for i in 0..20 {
        let (writer, reader) = if i % 2 == 0 { (&a, &b) } else { (&b, &a) };
        let created =
            writer.create(&Collection::new("configmaps", Some("ns")), &cm(&format!("c{i}"), json!({"i": i.to_string()})), &me()).unwrap();
        // Linearizable: a write completed before the next started has a smaller revision,
        // and revisions have no gap.
        assert_eq!(rv(&created), last + 1, "write {i}");
        last = rv(&created);
        // Read at once on the other process, by get and by list.
        let got = reader.get(&ObjectKey::new("configmaps", Some("ns"), format!("c{i}")), &GetOptions::default()).unwrap();
        assert_eq!(got, created);
        let list = reader.list(&Collection::new("configmaps", Some("ns")), &ListOptions::default()).unwrap();
        assert_eq!(list.items.len(), i + 1);
        assert!(list.resource_version >= Revision(last));
    }
}

#[test]
fn concurrent_updates_from_both_lose_nothing_and_watches_on_both_see_every_change_once_in_order() {
    let Some((a, b)) = two_servers(Options::default()) else { return };
    wait_for_type(&b, "configmaps");
    a.create(&Collection::new("configmaps", Some("ns")), &cm("counter", json!({"n": "0"})), &me()).unwrap();
    let from = a.revision().to_string();
    let mut watches: Vec<_> = [&a, &b]
        .iter()
        .map(|s| {
            s.watch(
                &Collection::new("configmaps", Some("ns")),
                &WatchOptions { resource_version: Some(from.clone()), ..Default::default() },
            )
            .unwrap()
        })
        .collect();
    let per_writer = 25;
    std::thread::scope(|scope| {
        for w in 0..4 {
            let s = if w % 2 == 0 { a.clone() } else { b.clone() };
            scope.spawn(move || {
                for _ in 0..per_writer {
                    // Read, increment, update with the read resourceVersion as a precondition;
                    // retry on conflict: every increment lands exactly once.
                    loop {
                        let cur = s.get(&ObjectKey::new("configmaps", Some("ns"), "counter"), &GetOptions::default()).unwrap();
                        let n: u64 = cur["data"]["n"].as_str().unwrap().parse().unwrap();
                        let mut next = cur.clone();
                        next["data"]["n"] = json!((n + 1).to_string());
                        match s.update(&Collection::new("configmaps", Some("ns")), &next, &me()) {
                            Ok(_) => break,
                            Err(e) if e.reason() == Reason::Conflict => continue,
                            Err(e) => panic!("{e}"),
                        }
                    }
                }
            });
        }
    });
    let total = 4 * per_writer;
    let end = a.get(&ObjectKey::new("configmaps", Some("ns"), "counter"), &GetOptions::default()).unwrap();
    assert_eq!(end["data"]["n"], json!(total.to_string()));
    for w in &mut watches {
        let mut seen = Vec::new();
        while seen.len() < total {
            match w.next_timeout(T).expect("an event") {
                WatchEvent::Modified(o) => seen.push((rv(&o), o["data"]["n"].as_str().unwrap().parse::<usize>().unwrap())),
                WatchEvent::Bookmark { .. } => {}
                other => panic!("{other:?}"),
            }
        }
        // Every change once, in revision order, each increment by one.
        for (i, (r, n)) in seen.iter().enumerate() {
            assert_eq!(*n, i + 1);
            if i > 0 {
                assert!(*r > seen[i - 1].0);
            }
        }
    }
}

/// A 10,000-item object: its record, history and 30,000 owner-index rows exceed one etcd
/// transaction, so it commits staged; the other process reads it whole, and its owners.
#[test]
fn a_commit_larger_than_one_etcd_transaction_is_atomic() {
    let Some((a, b)) = two_servers(Options::default().max_object_bytes(8 << 20)) else { return };
    wait_for_type(&b, "configmaps");
    let data: serde_json::Map<String, Value> = (0..10_000).map(|i| (format!("key-{i:05}"), json!(format!("value {i}")))).collect();
    let created = a.apply(&Collection::new("configmaps", Some("ns")), &cm("big", Value::Object(data.clone())), &me()).unwrap();
    let got = b.get(&ObjectKey::new("configmaps", Some("ns"), "big"), &GetOptions::default()).unwrap();
    assert_eq!(got, created);
    assert_eq!(got["data"].as_object().unwrap().len(), 10_000);
    assert_eq!(b.owners_of("configmaps", ".data").unwrap().iter().filter(|o| o.path.starts_with(".data.")).count(), 10_000);
    // The next write (small) follows it in the one order.
    let next = b.create(&Collection::new("configmaps", Some("ns")), &cm("after", json!({})), &me()).unwrap();
    assert_eq!(rv(&next), rv(&created) + 1);
}

#[test]
fn types_and_compaction_reach_the_other_process() {
    let Some((a, b)) = two_servers(Options::default()) else { return };
    a.register(TypeSpec::new("example.com", "v1", "Thing", "things").namespaced(true)).unwrap();
    wait_for_type(&b, "things.example.com");
    let thing = json!({"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"}, "spec": {"x": 1}});
    let first = b.create(&Collection::new("things.example.com", Some("ns")), &thing, &me()).unwrap();
    let mut again = first.clone();
    again["spec"]["x"] = json!(2);
    let updated = b.update(&Collection::new("things.example.com", Some("ns")), &again, &me()).unwrap();
    // Compaction on the other process, to a revision it learns from the store.
    a.compact(Revision(rv(&updated))).unwrap();
    let deadline = std::time::Instant::now() + T;
    loop {
        let old = GetOptions {
            resource_version: Some(rv(&first).to_string()),
            resource_version_match: Some(fieldstore_engine::store::ResourceVersionMatch::Exact),
        };
        match b.get(&ObjectKey::new("things.example.com", Some("ns"), "t"), &old) {
            Err(e) if e.reason() == Reason::Expired => break,
            _ => assert!(std::time::Instant::now() < deadline, "the compaction never reached the other process"),
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The largest object the store accepts by default (a record just under 1.5 MiB, etcd's
/// default request limit) commits on a default etcd: values larger than a piece are kept in
/// pieces. Its update and its deletion go through too, and the other process reads it whole.
#[test]
fn the_largest_object_commits_on_a_default_etcd() {
    let Some((a, b)) = two_servers(Options::default()) else { return };
    wait_for_type(&b, "configmaps");
    let big = "x".repeat(1_400_000);
    let created = a.create(&Collection::new("configmaps", Some("ns")), &cm("huge", json!({"v": big})), &me()).unwrap();
    let got = b.get(&ObjectKey::new("configmaps", Some("ns"), "huge"), &GetOptions::default()).unwrap();
    assert_eq!(got, created);
    let mut smaller = got.clone();
    smaller["data"]["v"] = json!("small now");
    let updated = b.update(&Collection::new("configmaps", Some("ns")), &smaller, &me()).unwrap();
    assert_eq!(a.get(&ObjectKey::new("configmaps", Some("ns"), "huge"), &GetOptions::default()).unwrap(), updated);
    // The first version is still readable at its revision, whole.
    let at = GetOptions {
        resource_version: Some(rv(&created).to_string()),
        resource_version_match: Some(fieldstore_engine::store::ResourceVersionMatch::Exact),
    };
    assert_eq!(a.get(&ObjectKey::new("configmaps", Some("ns"), "huge"), &at).unwrap(), created);
    // Too large for the store: refused with 413, nothing written.
    let before = a.revision();
    let err = a.create(&Collection::new("configmaps", Some("ns")), &cm("too-big", json!({"v": "y".repeat(1_700_000)})), &me()).unwrap_err();
    assert_eq!(err.reason(), Reason::RequestEntityTooLarge);
    assert_eq!(a.revision(), before);
}

/// An application may open and drop an etcd store from async code (a runtime's task): the
/// store's own client runtime neither blocks on nor drops inside the caller's.
#[tokio::test(flavor = "current_thread")]
async fn opened_and_dropped_inside_an_async_runtime() {
    let Some(url) = test_etcd() else { return };
    let s = Store::open_etcd(&[url.to_string()], &format!("/async-{}", std::process::id()), Options::default()).unwrap();
    s.register(configmaps()).unwrap();
    let created = s.create(&Collection::new("configmaps", Some("ns")), &cm("a", json!({})), &me()).unwrap();
    assert_eq!(rv(&created), 1);
    drop(s);
}

/// The decoded-object cache (objects from 64 KiB) stays right when another process writes: a
/// process that cached an object's version reads, and writes on top of, the other's newer one.
#[test]
fn a_cached_object_changed_by_the_other_process_is_read_and_written_as_it_now_is() {
    let Some((a, b)) = two_servers(Options::default()) else { return };
    wait_for_type(&b, "configmaps");
    let data: serde_json::Map<String, Value> = (0..2_000).map(|i| (format!("k{i:04}"), json!(format!("value number {i:05}")))).collect();
    let first = a.apply(&Collection::new("configmaps", Some("ns")), &cm("cached", Value::Object(data)), &me()).unwrap();
    assert!(serde_json::to_vec(&first).unwrap().len() > 64 << 10, "large enough to be cached");
    let mut changed = b.get(&ObjectKey::new("configmaps", Some("ns"), "cached"), &GetOptions::default()).unwrap();
    changed["data"]["k0000"] = json!("changed by b");
    let by_b = b.update(&Collection::new("configmaps", Some("ns")), &changed, &me()).unwrap();
    assert_eq!(a.get(&ObjectKey::new("configmaps", Some("ns"), "cached"), &GetOptions::default()).unwrap(), by_b);
    // A write on a builds on b's version, not on the version a cached.
    let patch = json!({"data": {"k0001": "changed by a"}});
    let by_a =
        a.patch(&ObjectKey::new("configmaps", Some("ns"), "cached"), fieldstore_engine::patch::PatchType::Merge, &patch, &me()).unwrap();
    assert_eq!(by_a["data"]["k0000"], json!("changed by b"));
    assert_eq!(by_a["data"]["k0001"], json!("changed by a"));
    assert_eq!(rv(&by_a), rv(&by_b) + 1);
}

/// A type registered just after open (here a CRD in place of the built-in `deployments.apps`)
/// stays registered: the follower, woken by open's own registration of the built-in types, must
/// not install the record it read before over the newer one. It did once in CI, on a loaded
/// machine (`store_history.rs` on etcd: `.spec.containers: field not declared in schema`),
/// before the reload held the registry's lock from its read to its insert. The window is narrow:
/// on a quiet machine this loop passed 90 rounds without the fix too, so it is a stress test of
/// the path, not a reproduction.
#[test]
fn a_type_registered_just_after_open_is_not_replaced_by_the_followers_reload() {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let Some(url) = test_etcd() else { return };
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "deployments.apps"},
        "spec": {"group": "apps", "scope": "Namespaced", "names": {"kind": "Deployment", "plural": "deployments"},
          "versions": [{"name": "v1", "served": true, "storage": true,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
              "spec": {"type": "object", "properties": {"containers": {"type": "array", "items": {"type": "string"}}}}}}}}]}});
    let spec = TypeSpec::from_crd(&crd).unwrap();
    for round in 0..20 {
        let prefix = format!("/types-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::SeqCst));
        let s = Store::open_etcd(&[url.to_string()], &prefix, Options::default()).unwrap();
        s.register(spec.clone()).unwrap();
        // Give the follower time to act on open's signal.
        std::thread::sleep(Duration::from_millis(20));
        let o = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"containers": ["a"]}});
        s.create(&Collection::new("deployments.apps", Some("ns")), &o, &me()).unwrap_or_else(|e| panic!("round {round}: {e}"));
    }
}
