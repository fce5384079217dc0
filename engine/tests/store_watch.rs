//! Watches: from a revision (in order, none lost, none repeated), from "0" (synthetic ADDED),
//! watch-list, bookmarks, selectors, and slow watchers.
// Needs the RocksDB-backed store (the engine's `store` feature).
#![cfg(feature = "store")]

use fieldstore_engine::store::{Collection, ObjectKey, Options, Revision, Store, WatchEvent, WatchOptions, WriteOptions};
use fieldstore_engine::Error;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

mod support;
use support::TestStore;

fn store(options: Options) -> TestStore {
    TestStore::new(options)
}

fn cm(name: &str, v: i64) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"v": v.to_string()}})
}

fn rv_opts(rv: &str) -> WatchOptions {
    WatchOptions { resource_version: Some(rv.into()), ..Default::default() }
}

const T: Duration = Duration::from_secs(5);

#[test]
fn from_a_revision_every_change_once_in_order_while_writers_run() {
    let s = store(Options::default());
    let w = WriteOptions::new("t");
    for i in 0..50 {
        s.apply(&Collection::new("configmaps", Some("ns")), &cm(&format!("o{}", i % 7), i), &w).unwrap();
    }
    let writer = {
        let s: Store = (*s).clone();
        std::thread::spawn(move || {
            for i in 50..300 {
                s.apply(&Collection::new("configmaps", Some("ns")), &cm(&format!("o{}", i % 7), i), &WriteOptions::new("t")).unwrap();
            }
        })
    };
    // Start mid-stream from revision 20: replay, then live, with no gap at the seam.
    std::thread::sleep(Duration::from_millis(5));
    let mut watch = s.watch(&Collection::new("configmaps", Some("ns")), &rv_opts("20")).unwrap();
    let mut seen = Vec::new();
    while seen.len() < 280 {
        match watch.next_timeout(T).expect("event") {
            e @ (WatchEvent::Added(_) | WatchEvent::Modified(_)) => seen.push(e.revision().unwrap().0),
            other => panic!("unexpected {other:?}"),
        }
    }
    writer.join().unwrap();
    assert_eq!(seen, (21..=300).collect::<Vec<u64>>());
    assert!(watch.next_timeout(Duration::from_millis(50)).is_none());
}

#[test]
fn from_zero_sends_the_state_then_changes() {
    let s = store(Options::default());
    let w = WriteOptions::new("t");
    s.create(&Collection::new("configmaps", Some("ns")), &cm("a", 1), &w).unwrap();
    s.create(&Collection::new("configmaps", Some("ns")), &cm("b", 1), &w).unwrap();
    s.delete(&ObjectKey::new("configmaps", Some("ns"), "a"), &Default::default()).unwrap();
    let mut watch = s.watch(&Collection::new("configmaps", Some("ns")), &rv_opts("0")).unwrap();
    match watch.next_timeout(T).unwrap() {
        WatchEvent::Added(o) => assert_eq!(o["metadata"]["name"], "b"),
        e => panic!("{e:?}"),
    }
    s.delete(&ObjectKey::new("configmaps", Some("ns"), "b"), &Default::default()).unwrap();
    match watch.next_timeout(T).unwrap() {
        WatchEvent::Deleted(o) => {
            assert_eq!((o["metadata"]["name"].as_str(), o["metadata"]["resourceVersion"].as_str()), (Some("b"), Some("4")))
        }
        e => panic!("{e:?}"),
    }
}

#[test]
fn watch_list_ends_initial_events_with_an_annotated_bookmark() {
    let s = store(Options::default());
    s.create(&Collection::new("configmaps", Some("ns")), &cm("a", 1), &WriteOptions::new("t")).unwrap();
    let opts = WatchOptions { send_initial_events: Some(true), allow_bookmarks: true, ..Default::default() };
    let mut watch = s.watch(&Collection::new("configmaps", None), &opts).unwrap();
    assert!(matches!(watch.next_timeout(T), Some(WatchEvent::Added(_))));
    let b = watch.next_timeout(T).unwrap();
    assert!(matches!(b, WatchEvent::Bookmark { revision: Revision(1), initial_events_end: true }));
    assert_eq!(b.to_json("v1", "ConfigMap")["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
}

/// client-go's reflector lists again (after a broken watch) with a watch-list from its last
/// resourceVersion: the state not older than it, whole, then the annotated bookmark — not the
/// changes after it (kube-apiserver's watch cache serves it so).
#[test]
fn watch_list_from_a_resource_version_starts_from_the_current_state() {
    let s = store(Options::default().future_revision_wait(Duration::from_millis(100)));
    let cms = Collection::new("configmaps", Some("ns"));
    s.create(&cms, &cm("a", 1), &WriteOptions::new("t")).unwrap();
    s.create(&cms, &cm("b", 1), &WriteOptions::new("t")).unwrap();
    let mut a = s.get(&ObjectKey::new("configmaps", Some("ns"), "a"), &Default::default()).unwrap();
    a["data"]["v"] = json!("2");
    s.update(&cms, &a, &WriteOptions::new("t")).unwrap();
    let from = |rv: &str| WatchOptions {
        resource_version: Some(rv.into()),
        send_initial_events: Some(true),
        allow_bookmarks: true,
        ..Default::default()
    };
    let mut watch = s.watch(&Collection::new("configmaps", None), &from("1")).unwrap();
    let mut names = Vec::new();
    for _ in 0..2 {
        match watch.next_timeout(T) {
            Some(WatchEvent::Added(o)) => names.push((o["metadata"]["name"].clone(), o["data"]["v"].clone())),
            other => panic!("want the initial ADDED events, got {other:?}"),
        }
    }
    assert_eq!(names, [(json!("a"), json!("2")), (json!("b"), json!("1"))]);
    assert!(matches!(watch.next_timeout(T), Some(WatchEvent::Bookmark { revision: Revision(3), initial_events_end: true })));
    s.create(&cms, &cm("c", 1), &WriteOptions::new("t")).unwrap();
    assert!(matches!(watch.next_timeout(T), Some(WatchEvent::Added(o)) if o["metadata"]["name"] == "c"));
    // A resourceVersion the store has not reached: kube-apiserver's "Too large resource version".
    assert!(matches!(s.watch(&cms, &from("99")), Err(Error::TooLargeResourceVersion { requested: 99, current: 4 })));
}

#[test]
fn legacy_initial_events_end_with_the_bookmark_when_bookmarks_are_allowed() {
    // kube-apiserver 1.37: `?watch=1&allowWatchBookmarks=true` (resourceVersion unset or "0",
    // no sendInitialEvents) ends its synthetic ADDED events with the annotated bookmark too;
    // `sendInitialEvents=false` sends neither.
    let s = store(Options::default());
    s.create(&Collection::new("configmaps", Some("ns")), &cm("a", 1), &WriteOptions::new("t")).unwrap();
    for rv in [None, Some("0".to_string())] {
        let opts = WatchOptions { resource_version: rv, allow_bookmarks: true, ..Default::default() };
        let mut watch = s.watch(&Collection::new("configmaps", None), &opts).unwrap();
        assert!(matches!(watch.next_timeout(T), Some(WatchEvent::Added(_))));
        assert!(matches!(watch.next_timeout(T), Some(WatchEvent::Bookmark { revision: Revision(1), initial_events_end: true })));
    }
    let opts = WatchOptions { send_initial_events: Some(false), allow_bookmarks: true, ..Default::default() };
    let mut watch = s.watch(&Collection::new("configmaps", None), &opts).unwrap();
    assert!(watch.next_timeout(Duration::from_millis(200)).is_none());
}

#[test]
fn bookmarks_periodic_and_on_demand() {
    let s = store(Options::default().bookmark_interval(Duration::from_millis(100)));
    s.create(&Collection::new("configmaps", Some("ns")), &cm("a", 1), &WriteOptions::new("t")).unwrap();
    let mut quiet = s
        .watch(&Collection::new("configmaps", Some("ns")), &WatchOptions { resource_version: Some("1".into()), ..Default::default() })
        .unwrap();
    let mut watch = s
        .watch(
            &Collection::new("configmaps", Some("ns")),
            &WatchOptions { resource_version: Some("1".into()), allow_bookmarks: true, ..Default::default() },
        )
        .unwrap();
    let start = Instant::now();
    assert!(matches!(watch.next_timeout(T), Some(WatchEvent::Bookmark { revision: Revision(1), .. })));
    assert!(start.elapsed() >= Duration::from_millis(90));
    // Writes elsewhere move the bookmark's revision.
    s.create(&Collection::new("configmaps", Some("other")), &cm("b", 1), &WriteOptions::new("t")).unwrap();
    let big = Store::clone(&s);
    big.request_bookmark();
    assert!(matches!(watch.next_timeout(T), Some(WatchEvent::Bookmark { revision: Revision(2), .. })));
    assert!(quiet.next_timeout(Duration::from_millis(250)).is_none(), "no bookmarks unless allowed");
}

/// Waits and intervals beyond the clock's range (`Duration::MAX`) mean "no deadline", not an
/// overflow panic: a watch's timeout, the bookmark interval, the wait for a future revision and
/// the compaction interval.
#[test]
fn durations_beyond_the_clock_do_not_overflow() {
    let options =
        Options::default().bookmark_interval(Duration::MAX).future_revision_wait(Duration::MAX).compaction_interval(Duration::MAX);
    let s = store(options);
    s.create(&Collection::new("configmaps", Some("ns")), &cm("a", 1), &WriteOptions::new("t")).unwrap();
    let at_one = fieldstore_engine::store::GetOptions { resource_version: Some("1".into()), ..Default::default() };
    assert_eq!(s.get(&ObjectKey::new("configmaps", Some("ns"), "a"), &at_one).unwrap()["data"]["v"], "1");
    let mut watch = s
        .watch(
            &Collection::new("configmaps", Some("ns")),
            &WatchOptions { resource_version: Some("0".into()), allow_bookmarks: true, ..Default::default() },
        )
        .unwrap();
    assert!(matches!(watch.next_timeout(Duration::MAX), Some(WatchEvent::Added(_))));
    assert!(matches!(watch.next_timeout(Duration::MAX), Some(WatchEvent::Bookmark { initial_events_end: true, .. })));
    s.create(&Collection::new("configmaps", Some("ns")), &cm("b", 1), &WriteOptions::new("t")).unwrap();
    assert!(matches!(watch.next_timeout(Duration::MAX), Some(WatchEvent::Added(_))));
}

#[test]
fn selector_watches_see_objects_enter_and_leave() {
    let s = store(Options::default());
    let w = WriteOptions::new("t");
    let opts = WatchOptions { resource_version: Some("0".into()), label_selector: Some("app=web".into()), ..Default::default() };
    let mut watch = s.watch(&Collection::new("configmaps", Some("ns")), &opts).unwrap();
    let mut o = cm("a", 1);
    s.create(&Collection::new("configmaps", Some("ns")), &o, &w).unwrap();
    o["metadata"]["labels"] = json!({"app": "web"});
    s.update(&Collection::new("configmaps", Some("ns")), &o, &w).unwrap();
    o["data"]["v"] = json!("2");
    s.update(&Collection::new("configmaps", Some("ns")), &o, &w).unwrap();
    o["metadata"]["labels"] = json!({"app": "db"});
    s.update(&Collection::new("configmaps", Some("ns")), &o, &w).unwrap();
    let kinds: Vec<&str> = (0..3).map(|_| watch.next_timeout(T).unwrap().type_name()).collect();
    assert_eq!(kinds, ["ADDED", "MODIFIED", "DELETED"]);
    // The same from history.
    let mut replay = s
        .watch(
            &Collection::new("configmaps", Some("ns")),
            &WatchOptions { resource_version: Some("1".into()), label_selector: Some("app=web".into()), ..Default::default() },
        )
        .unwrap();
    let kinds: Vec<&str> = (0..3).map(|_| replay.next_timeout(T).unwrap().type_name()).collect();
    assert_eq!(kinds, ["ADDED", "MODIFIED", "DELETED"]);
}

#[test]
fn a_slow_watcher_is_ended_without_blocking_writers() {
    let s = store(Options::default().watch_buffer(4));
    s.apply(&Collection::new("configmaps", Some("ns")), &cm("a", 0), &WriteOptions::new("t")).unwrap();
    let mut slow = s.watch(&Collection::new("configmaps", Some("ns")), &rv_opts("1")).unwrap();
    let start = Instant::now();
    for i in 1..50 {
        s.apply(&Collection::new("configmaps", Some("ns")), &cm("a", i), &WriteOptions::new("t")).unwrap();
    }
    assert!(start.elapsed() < Duration::from_secs(30));
    let mut delivered = 0;
    loop {
        match slow.next_timeout(T).expect("the watch ends with an error") {
            WatchEvent::Modified(_) => delivered += 1,
            WatchEvent::Error(e) => {
                assert!(matches!(e, Error::Expired(_)));
                break;
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(delivered <= 4);
    assert!(slow.is_ended());
    assert!(slow.next().is_none());
}

/// Watches as tasks: 200 watches awaited on one single-threaded runtime (no thread per watch)
/// while a writer thread commits; each sees every change once and in order, idle ones get
/// bookmarks from the runtime's timer, and one whose buffer overflowed ends with 410.
#[test]
fn async_watches_on_one_thread_see_every_change_once_in_order() {
    let s = store(Options::default().bookmark_interval(Duration::from_millis(100)).watch_buffer(400));
    let w = WriteOptions::new("t");
    s.apply(&Collection::new("configmaps", Some("ns")), &cm("seed", 0), &w).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    let watches: Vec<_> = (0..200).map(|_| s.watch(&Collection::new("configmaps", Some("ns")), &rv_opts("1")).unwrap()).collect();
    let mut idle = s
        .watch(
            &Collection::new("configmaps", Some("other")),
            &WatchOptions { resource_version: Some("1".into()), allow_bookmarks: true, ..Default::default() },
        )
        .unwrap();
    let writer = {
        let s: Store = (*s).clone();
        std::thread::spawn(move || {
            for i in 1..=300 {
                s.apply(&Collection::new("configmaps", Some("ns")), &cm(&format!("o{}", i % 5), i), &WriteOptions::new("t")).unwrap();
            }
        })
    };
    let seen: Vec<Vec<u64>> = rt.block_on(async {
        let tasks: Vec<_> = watches
            .into_iter()
            .map(|mut watch| {
                tokio::spawn(async move {
                    let mut revs = Vec::new();
                    while revs.len() < 300 {
                        match tokio::time::timeout(T, watch.next_async(tokio::time::sleep)).await.expect("an event in time") {
                            Some(e @ (WatchEvent::Added(_) | WatchEvent::Modified(_))) => revs.push(e.revision().unwrap().0),
                            other => panic!("unexpected {other:?}"),
                        }
                    }
                    revs
                })
            })
            .collect();
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.unwrap());
        }
        out
    });
    writer.join().unwrap();
    for revs in &seen {
        assert_eq!(*revs, (2..=301).collect::<Vec<u64>>());
    }
    // Nothing written in "other": the idle watch hears bookmarks, at the latest revision.
    let b = rt.block_on(async { tokio::time::timeout(T, idle.next_async(tokio::time::sleep)).await.unwrap() });
    assert!(matches!(b, Some(WatchEvent::Bookmark { revision: Revision(301), .. })), "{b:?}");

    // A watch that is not polled overflows its buffer and ends with 410 when polled again.
    let small = store(Options::default().watch_buffer(4));
    small.apply(&Collection::new("configmaps", Some("ns")), &cm("a", 0), &w).unwrap();
    let mut slow = small.watch(&Collection::new("configmaps", Some("ns")), &rv_opts("1")).unwrap();
    for i in 1..20 {
        small.apply(&Collection::new("configmaps", Some("ns")), &cm("a", i), &w).unwrap();
    }
    let ended = rt.block_on(async {
        let mut events = Vec::new();
        while let Some(e) = slow.next_async(tokio::time::sleep).await {
            events.push(e);
        }
        events
    });
    assert!(ended.len() <= 5, "{ended:?}");
    assert!(matches!(ended.last(), Some(WatchEvent::Error(Error::Expired(_)))), "{ended:?}");
}
