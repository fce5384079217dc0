//! The etcd API's keys (`Store::etcd_*`): etcd's semantics for ranges, puts, deletes,
//! transactions, watches, leases and compaction, under the store's one revision counter.
// Needs the RocksDB-backed store (the engine's `store` feature).
#![cfg(feature = "store")]
// Helpers outside #[test] functions unwrap too: a panic is a failed test with its message.
#![allow(clippy::unwrap_used)]

use fieldstore_engine::store::etcd_api::{
    Compare, CompareResult, CompareTarget, DeleteRequest, EtcdApiError, KeyValue, PutRequest, RangeRequest, RequestOp, ResponseOp,
    TxnRequest, WatchRequest,
};
use fieldstore_engine::store::{Collection, Revision, WatchEvent, WatchOptions, WriteOptions};
use fieldstore_engine::Error;
use std::time::Duration;

mod support;
use support::{cm, etcd_api_store as store, etcd_put as put};

fn get(k: &[u8]) -> RangeRequest {
    RangeRequest { key: k.to_vec(), ..RangeRequest::default() }
}

fn prefix(k: &[u8]) -> RangeRequest {
    let mut end = k.to_vec();
    *end.last_mut().unwrap() += 1;
    RangeRequest { key: k.to_vec(), range_end: end, ..RangeRequest::default() }
}

fn keys(kvs: &[KeyValue]) -> Vec<&[u8]> {
    kvs.iter().map(|kv| kv.key.as_slice()).collect()
}

fn compacted<T: std::fmt::Debug>(r: Result<T, Error>) -> bool {
    matches!(r, Err(Error::EtcdApi(EtcdApiError::Compacted)))
}

#[test]
fn puts_and_ranges_keep_etcds_revisions_and_bytes() {
    let Some(s) = store() else { return };
    let base = s.revision().0;
    let (_, r1) = s.etcd_put(put(b"/a/1", b"x")).unwrap();
    assert_eq!(r1, base + 1);
    let (_, r2) = s.etcd_put(put(b"/a/2", b"\x00\xff binary\x00")).unwrap();
    let (p, r3) = s.etcd_put(PutRequest { prev_kv: true, ..put(b"/a/1", b"y") }).unwrap();
    assert_eq!((r2, r3), (base + 2, base + 3));
    let prev = p.prev_kv.unwrap();
    assert_eq!((prev.value.as_slice(), prev.mod_revision, prev.version), (&b"x"[..], r1 as i64, 1));
    // A key with NUL bytes, and one that continues it: distinct keys, in byte order.
    s.etcd_put(put(b"/a/1\x00z", b"nul")).unwrap();
    let (all, header) = s.etcd_range(&prefix(b"/a/")).unwrap();
    assert_eq!(header, base + 4);
    assert_eq!(keys(&all.kvs), vec![&b"/a/1"[..], b"/a/1\x00z", b"/a/2"]);
    let a1 = &all.kvs[0];
    assert_eq!((a1.create_revision, a1.mod_revision, a1.version, a1.value.as_slice()), (r1 as i64, r3 as i64, 2, &b"y"[..]));
    assert_eq!(all.kvs[2].value, b"\x00\xff binary\x00");
    // Limit, count, keys only, count only.
    let (page, _) = s.etcd_range(&RangeRequest { limit: 2, ..prefix(b"/a/") }).unwrap();
    assert_eq!((page.kvs.len(), page.more, page.count), (2, true, 3));
    let (k, _) = s.etcd_range(&RangeRequest { keys_only: true, ..get(b"/a/2") }).unwrap();
    assert!(k.kvs[0].value.is_empty() && k.kvs[0].mod_revision == r2 as i64);
    let (c, _) = s.etcd_range(&RangeRequest { count_only: true, ..prefix(b"/a/") }).unwrap();
    assert_eq!((c.kvs.len(), c.count), (0, 3));
    // "\0" as range end: every key from the key on.
    let (from, _) = s.etcd_range(&RangeRequest { range_end: vec![0], ..get(b"/a/2") }).unwrap();
    assert_eq!(keys(&from.kvs), vec![&b"/a/2"[..]]);
    // At an older revision.
    let (old, _) = s.etcd_range(&RangeRequest { revision: r1 as i64, ..prefix(b"/a/") }).unwrap();
    assert_eq!(keys(&old.kvs), vec![&b"/a/1"[..]]);
    assert_eq!(old.kvs[0].value, b"x");
    let future = s.etcd_range(&RangeRequest { revision: (base + 100) as i64, ..get(b"/a/1") });
    assert!(matches!(future, Err(Error::EtcdApi(EtcdApiError::FutureRevision))), "{future:?}");
    assert!(matches!(s.etcd_range(&get(b"")), Err(Error::EtcdApi(EtcdApiError::EmptyKey))));
    // A large value comes back byte for byte.
    let big: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
    s.etcd_put(put(b"/big", &big)).unwrap();
    assert_eq!(s.etcd_range(&get(b"/big")).unwrap().0.kvs[0].value, big);
}

#[test]
fn deletes_reset_versions_and_take_a_revision_only_when_they_delete() {
    let Some(s) = store() else { return };
    s.etcd_put(put(b"k1", b"a")).unwrap();
    s.etcd_put(put(b"k1", b"b")).unwrap();
    s.etcd_put(put(b"k2", b"c")).unwrap();
    let before = s.revision().0;
    let (d, rev) = s.etcd_delete(DeleteRequest { key: b"k".to_vec(), range_end: b"l".to_vec(), prev_kv: true }).unwrap();
    assert_eq!((d.deleted, rev), (2, before + 1), "one revision for the whole delete");
    assert_eq!(keys(&d.prev_kvs), vec![&b"k1"[..], b"k2"]);
    let (none, rev) = s.etcd_delete(DeleteRequest { key: b"k1".to_vec(), ..DeleteRequest::default() }).unwrap();
    assert_eq!((none.deleted, rev), (0, before + 1), "nothing deleted, no revision");
    let (_, created) = s.etcd_put(put(b"k1", b"new")).unwrap();
    let kv = &s.etcd_range(&get(b"k1")).unwrap().0.kvs[0];
    assert_eq!((kv.version, kv.create_revision), (1, created as i64));
    // The deleted state stays readable before the delete.
    let old = s.etcd_range(&RangeRequest { revision: before as i64, ..get(b"k2") }).unwrap().0;
    assert_eq!(old.kvs[0].value, b"c");
}

fn cmp(key: &[u8], result: CompareResult, target: CompareTarget) -> Compare {
    Compare { result, target, key: key.to_vec(), range_end: Vec::new() }
}

#[test]
fn transactions_compare_then_run_one_branch_atomically() {
    let Some(s) = store() else { return };
    let (_, r1) = s.etcd_put(put(b"/registry/x", b"v1")).unwrap();
    // kube-apiserver's update: if the mod revision is the one read, put; else get.
    let update = |seen: u64, value: &[u8]| TxnRequest {
        compare: vec![cmp(b"/registry/x", CompareResult::Equal, CompareTarget::Mod(seen as i64))],
        success: vec![RequestOp::Put(put(b"/registry/x", value))],
        failure: vec![RequestOp::Range(get(b"/registry/x"))],
    };
    let (ok, r2) = s.etcd_txn(update(r1, b"v2")).unwrap();
    assert!(ok.succeeded);
    assert_eq!(r2, r1 + 1);
    let (stale, r) = s.etcd_txn(update(r1, b"v3")).unwrap();
    assert!(!stale.succeeded);
    assert_eq!(r, r2, "a read-only branch takes no revision");
    match &stale.responses[..] {
        [ResponseOp::Range(g)] => assert_eq!((g.kvs[0].value.as_slice(), g.kvs[0].mod_revision), (&b"v2"[..], r2 as i64)),
        other => panic!("{other:?}"),
    }
    // Create if absent (mod revision 0), version, create revision, value, lease compares.
    let create = TxnRequest {
        compare: vec![cmp(b"/registry/y", CompareResult::Equal, CompareTarget::Mod(0))],
        success: vec![RequestOp::Put(put(b"/registry/y", b"y")), RequestOp::Range(get(b"/registry/y"))],
        failure: vec![],
    };
    let (first, r3) = s.etcd_txn(create.clone()).unwrap();
    assert!(first.succeeded);
    // The branch's read sees the branch's own put.
    match &first.responses[1] {
        ResponseOp::Range(g) => assert_eq!((g.kvs[0].value.as_slice(), g.kvs[0].mod_revision), (&b"y"[..], r3 as i64)),
        other => panic!("{other:?}"),
    }
    assert!(!s.etcd_txn(create).unwrap().0.succeeded);
    let holds = |c: Compare| s.etcd_txn(TxnRequest { compare: vec![c], ..TxnRequest::default() }).unwrap().0.succeeded;
    assert!(holds(cmp(b"/registry/x", CompareResult::Equal, CompareTarget::Version(2))));
    assert!(holds(cmp(b"/registry/x", CompareResult::Greater, CompareTarget::Version(1))));
    assert!(holds(cmp(b"/registry/x", CompareResult::Less, CompareTarget::Create(r1 as i64 + 1))));
    assert!(holds(cmp(b"/registry/x", CompareResult::NotEqual, CompareTarget::Value(b"v1".to_vec()))));
    assert!(holds(cmp(b"/registry/x", CompareResult::Equal, CompareTarget::Lease(0))));
    assert!(holds(cmp(b"/none", CompareResult::Equal, CompareTarget::Version(0))), "an absent key has version 0");
    assert!(!holds(cmp(b"/none", CompareResult::NotEqual, CompareTarget::Value(b"x".to_vec()))), "an absent key fails value compares");
    // A range compare: every key of the range.
    let all = Compare { range_end: b"/registry0".to_vec(), ..cmp(b"/registry/", CompareResult::Greater, CompareTarget::Mod(r1 as i64)) };
    assert!(holds(all.clone()));
    assert!(!holds(Compare { target: CompareTarget::Mod(r2 as i64), ..all }));
    // A branch that fails half-way (an unknown lease) writes nothing.
    let before = s.revision().0;
    let bad = TxnRequest {
        success: vec![RequestOp::Put(put(b"/t/1", b"1")), RequestOp::Put(PutRequest { lease: 12345, ..put(b"/t/2", b"2") })],
        ..TxnRequest::default()
    };
    assert!(matches!(s.etcd_txn(bad), Err(Error::EtcdApi(EtcdApiError::LeaseNotFound))));
    assert_eq!(s.revision().0, before);
    assert!(s.etcd_range(&get(b"/t/1")).unwrap().0.kvs.is_empty());
    // etcd's request checks.
    let twice = TxnRequest { success: vec![RequestOp::Put(put(b"a", b"1")), RequestOp::Put(put(b"a", b"2"))], ..TxnRequest::default() };
    assert!(matches!(s.etcd_txn(twice), Err(Error::EtcdApi(EtcdApiError::DuplicateKey))));
    let ignore = PutRequest { ignore_value: true, ..put(b"/absent", b"") };
    assert!(matches!(s.etcd_put(ignore), Err(Error::EtcdApi(EtcdApiError::KeyNotFound))));
    // Several puts of one transaction share its revision.
    let many =
        TxnRequest { success: vec![RequestOp::Put(put(b"/m/1", b"1")), RequestOp::Put(put(b"/m/2", b"2"))], ..TxnRequest::default() };
    let (_, rm) = s.etcd_txn(many).unwrap();
    let (m, _) = s.etcd_range(&prefix(b"/m/")).unwrap();
    assert!(m.kvs.iter().all(|kv| kv.mod_revision == rm as i64) && rm == before + 1);
}

#[test]
fn objects_and_etcd_keys_share_one_revision_order() {
    let Some(s) = store() else { return };
    let cms = Collection::new("configmaps", Some("default"));
    let start = s.revision().0;
    let mut object_watch = s.watch(&cms, &WatchOptions { resource_version: Some(start.to_string()), ..WatchOptions::default() }).unwrap();
    let mut etcd_watch = s
        .etcd_watch(WatchRequest { key: b"/".to_vec(), range_end: vec![0], start_revision: start as i64 + 1, ..WatchRequest::default() })
        .unwrap();
    let o1 = s.create(&cms, &cm("a", serde_json::json!({"k": "v"})), &WriteOptions::new("t")).unwrap();
    let (_, e1) = s.etcd_put(put(b"/k", b"v")).unwrap();
    let o2 = s.create(&cms, &cm("b", serde_json::json!({})), &WriteOptions::new("t")).unwrap();
    assert_eq!((support::rv(&o1), e1, support::rv(&o2)), (start + 1, start + 2, start + 3));
    // Each watch sees its own kind of change only.
    let first = object_watch.next_timeout(Duration::from_secs(5)).unwrap();
    assert!(matches!(&first, WatchEvent::Added(o) if o["metadata"]["name"] == "a"), "{first:?}");
    let second = object_watch.next_timeout(Duration::from_secs(5)).unwrap();
    assert!(matches!(&second, WatchEvent::Added(o) if o["metadata"]["name"] == "b"), "{second:?}");
    let events = etcd_watch.next_blocking().unwrap().unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!((events[0].kv.key.as_slice(), events[0].kv.mod_revision), (&b"/k"[..], e1 as i64));
}

#[test]
fn watches_replay_then_follow_with_prev_kv_and_filters() {
    let Some(s) = store() else { return };
    let (_, r1) = s.etcd_put(put(b"/w/a", b"1")).unwrap();
    s.etcd_put(put(b"/other", b"x")).unwrap();
    s.etcd_put(put(b"/w/a", b"2")).unwrap();
    let mut w = s.etcd_watch(WatchRequest { prev_kv: true, start_revision: r1 as i64, ..watch_prefix(b"/w/") }).unwrap();
    let mut deletes = s.etcd_watch(WatchRequest { no_put: true, ..watch_prefix(b"/w/") }).unwrap();
    let replayed = w.next_blocking().unwrap().unwrap();
    assert_eq!(replayed.len(), 2);
    assert_eq!((replayed[0].kv.value.as_slice(), replayed[0].prev.is_none()), (&b"1"[..], true));
    assert_eq!(replayed[1].prev.as_ref().unwrap().value, b"1");
    assert!(w.progress().is_some(), "caught up");
    s.etcd_delete(DeleteRequest { key: b"/w/a".to_vec(), ..DeleteRequest::default() }).unwrap();
    let (_, rb) = s.etcd_put(put(b"/w/b", b"3")).unwrap();
    let mut live = Vec::new();
    while live.len() < 2 {
        live.extend(w.next_blocking().unwrap().unwrap());
    }
    assert!(live[0].deleted && live[0].kv.key == b"/w/a" && live[0].prev.as_ref().unwrap().value == b"2" && live[0].kv.version == 0);
    assert!(!live[1].deleted && live[1].kv.key == b"/w/b" && live[1].kv.mod_revision == rb as i64);
    let only_deletes = deletes.next_blocking().unwrap().unwrap();
    assert_eq!(only_deletes.len(), 1);
    assert!(only_deletes[0].deleted && only_deletes[0].prev.is_none(), "no prev_kv unless asked");
}

fn watch_prefix(k: &[u8]) -> WatchRequest {
    let r = prefix(k);
    WatchRequest { key: r.key, range_end: r.range_end, ..WatchRequest::default() }
}

#[test]
fn compaction_covers_etcd_keys() {
    let Some(s) = store() else { return };
    let (_, r1) = s.etcd_put(put(b"c", b"1")).unwrap();
    let (_, r2) = s.etcd_put(put(b"c", b"2")).unwrap();
    s.etcd_put(put(b"d", b"x")).unwrap();
    s.etcd_delete(DeleteRequest { key: b"d".to_vec(), ..DeleteRequest::default() }).unwrap();
    assert_eq!(s.etcd_compact(r2 as i64).unwrap(), s.revision().0);
    assert_eq!(s.compacted_revision(), Revision(r2));
    assert!(compacted(s.etcd_range(&RangeRequest { revision: r1 as i64, ..get(b"c") })));
    assert_eq!(s.etcd_range(&RangeRequest { revision: r2 as i64, ..get(b"c") }).unwrap().0.kvs[0].value, b"2");
    assert!(compacted(s.etcd_watch(WatchRequest { start_revision: r1 as i64, ..watch_prefix(b"c") })));
    // A watch from the compacted revision itself replays it (as etcd).
    let mut w = s.etcd_watch(WatchRequest { start_revision: r2 as i64, ..watch_prefix(b"c") }).unwrap();
    assert_eq!(w.next_blocking().unwrap().unwrap()[0].kv.value, b"2");
    assert!(compacted(s.etcd_compact(r2 as i64).map(|_| ())), "not after the compacted revision");
    let future = s.etcd_compact(s.revision().0 as i64 + 5);
    assert!(matches!(future, Err(Error::EtcdApi(EtcdApiError::FutureRevision))), "{future:?}");
    // Compacting everything: the deleted key's versions are gone, the live key stays.
    s.etcd_compact(s.revision().0 as i64).unwrap();
    assert_eq!(s.etcd_range(&get(b"c")).unwrap().0.kvs[0].value, b"2");
    assert!(s.etcd_range(&get(b"d")).unwrap().0.kvs.is_empty());
}

#[test]
fn leases_delete_their_keys_when_revoked_or_expired_and_survive_a_restart() {
    let Some(mut s) = store() else { return };
    let (id, ttl) = s.etcd_lease_grant(1, 0).unwrap();
    assert_eq!(ttl, 2, "etcd's minimum TTL");
    assert!(matches!(s.etcd_lease_grant(10, id), Err(Error::EtcdApi(EtcdApiError::LeaseExists))));
    assert!(matches!(s.etcd_lease_grant(9_000_000_001, 0), Err(Error::EtcdApi(EtcdApiError::LeaseTtlTooLarge))));
    let (long, _) = s.etcd_lease_grant(3600, 77).unwrap();
    assert_eq!(long, 77);
    s.etcd_put(PutRequest { lease: id, ..put(b"/l/short", b"s") }).unwrap();
    s.etcd_put(PutRequest { lease: long, ..put(b"/l/long1", b"1") }).unwrap();
    s.etcd_put(PutRequest { lease: long, ..put(b"/l/long2", b"2") }).unwrap();
    // A put that keeps its lease, and a key moved off a lease.
    s.etcd_put(PutRequest { ignore_lease: true, ..put(b"/l/long1", b"1b") }).unwrap();
    s.etcd_put(put(b"/l/long2", b"free")).unwrap();
    let info = s.etcd_lease_time_to_live(long, true).unwrap();
    assert_eq!((info.granted_ttl, info.keys), (3600, vec![b"/l/long1".to_vec()]));
    assert_eq!(s.etcd_lease_keep_alive(long), 3600);
    assert_eq!(s.etcd_lease_keep_alive(999), 0);
    // The store restarts: leases and their keys come back.
    s.reopen();
    assert_eq!(s.etcd_leases(), {
        let mut v = vec![id, long];
        v.sort_unstable();
        v
    });
    assert_eq!(s.etcd_lease_time_to_live(long, true).unwrap().keys, vec![b"/l/long1".to_vec()]);
    let before = s.revision().0;
    assert_eq!(s.etcd_lease_revoke(long).unwrap(), before + 1);
    assert!(s.etcd_range(&get(b"/l/long1")).unwrap().0.kvs.is_empty());
    assert_eq!(s.etcd_range(&get(b"/l/long2")).unwrap().0.kvs[0].value, b"free");
    assert!(matches!(s.etcd_lease_revoke(long), Err(Error::EtcdApi(EtcdApiError::LeaseNotFound))));
    // Expiry: once its deadline has passed, the short lease goes with its key.
    std::thread::sleep(Duration::from_millis(2100));
    assert_eq!(s.etcd_expire_leases().unwrap(), 1);
    assert!(s.etcd_range(&get(b"/l/short")).unwrap().0.kvs.is_empty());
    assert!(s.etcd_leases().is_empty());
}

#[test]
fn a_new_store_starts_at_revision_one_as_etcd() {
    let Some(s) = store() else { return };
    assert_eq!(s.revision().0, 0);
    assert_eq!(s.etcd_start().unwrap(), 1);
    assert_eq!(s.etcd_start().unwrap(), 1, "once");
    let (all, rev) = s.etcd_range(&RangeRequest { key: vec![0], range_end: vec![0], ..RangeRequest::default() }).unwrap();
    assert_eq!((all.count, rev), (0, 1), "the first revision names no key");
    let mut w = s.etcd_watch(WatchRequest { key: vec![0], range_end: vec![0], start_revision: 1, ..WatchRequest::default() }).unwrap();
    let (_, r2) = s.etcd_put(put(b"k", b"v")).unwrap();
    assert_eq!(w.next_blocking().unwrap().unwrap()[0].kv.mod_revision, r2 as i64);
}

#[test]
fn etcd_keys_survive_a_restart() {
    let Some(mut s) = store() else { return };
    s.etcd_put(put(b"/p/1", b"one")).unwrap();
    let (_, rev) = s.etcd_put(put(b"/p/1", b"two")).unwrap();
    s.reopen();
    assert_eq!(s.revision().0, rev);
    let kv = &s.etcd_range(&get(b"/p/1")).unwrap().0.kvs[0];
    assert_eq!((kv.value.as_slice(), kv.version, kv.mod_revision), (&b"two"[..], 2, rev as i64));
    let (_, next) = s.etcd_put(put(b"/p/2", b"x")).unwrap();
    assert_eq!(next, rev + 1);
}

#[test]
fn concurrent_objects_and_etcd_writes_get_gap_free_revisions() {
    let Some(s) = store() else { return };
    let base = s.revision().0;
    let mut w = s.etcd_watch(WatchRequest { start_revision: base as i64 + 1, ..watch_prefix(b"/c/") }).unwrap();
    let revisions = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for t in 0..2 {
            let (s, revisions) = (&*s, &revisions);
            scope.spawn(move || {
                for i in 0..100 {
                    let key = format!("/c/{t}/{i}");
                    let (_, rev) = s.etcd_put(put(key.as_bytes(), b"v")).unwrap();
                    revisions.lock().unwrap().push((rev, true));
                }
            });
            scope.spawn(move || {
                let cms = Collection::new("configmaps", Some("default"));
                for i in 0..50 {
                    let o = s.create(&cms, &cm(&format!("c-{t}-{i}"), serde_json::json!({})), &WriteOptions::new("t")).unwrap();
                    revisions.lock().unwrap().push((support::rv(&o), false));
                }
            });
        }
    });
    let mut all = revisions.into_inner().unwrap();
    all.sort_unstable();
    let numbers: Vec<u64> = all.iter().map(|(r, _)| *r).collect();
    assert_eq!(numbers, (base + 1..=base + 300).collect::<Vec<_>>(), "one revision each, no gap");
    // The etcd watch sees exactly the etcd writes, in revision order.
    let expected: Vec<i64> = all.iter().filter(|(_, etcd)| *etcd).map(|(r, _)| *r as i64).collect();
    let mut seen = Vec::new();
    while seen.len() < expected.len() {
        seen.extend(w.next_blocking().unwrap().unwrap().into_iter().map(|e| e.kv.mod_revision));
    }
    assert_eq!(seen, expected);
}
