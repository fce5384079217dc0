//! Lists: pages from one snapshot revision, continue tokens, remainingItemCount, selectors and
//! the resourceVersion rules of the Kubernetes API concepts.
// Needs the RocksDB-backed store (the engine's `store` feature).
#![cfg(feature = "store")]
#![allow(clippy::unwrap_used)] // helpers unwrap too: a failed setup is a failed test

use fieldstore_engine::store::{
    Collection, ListMeta, ListOptions, ListStream, ObjectKey, Options, ResourceVersionMatch, Revision, Store, TypeSpec, WriteOptions,
};
use fieldstore_engine::{Error, Reason};
use serde_json::{json, Value};
use std::time::Duration;

mod support;
use support::TestStore;

fn store() -> TestStore {
    let store = TestStore::new(Options::default().future_revision_wait(Duration::from_millis(100)));
    store.register(TypeSpec::new("", "v1", "Namespace", "namespaces")).unwrap();
    store
}

fn cm(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}, "data": {"v": "1"}})
}

fn names(items: &[Value]) -> Vec<String> {
    items.iter().map(|i| i["metadata"]["name"].as_str().unwrap().to_string()).collect()
}

fn page(s: &Store, limit: usize, token: Option<String>) -> Result<fieldstore_engine::store::ObjectList, Error> {
    s.list(&Collection::new("configmaps", Some("ns")), &ListOptions { limit: Some(limit), continue_token: token, ..Default::default() })
}

#[test]
fn pages_come_from_one_snapshot() {
    let s = store();
    let w = WriteOptions::new("t");
    for i in 0..25 {
        s.create(&Collection::new("configmaps", Some("ns")), &cm(&format!("o{i:02}"), json!({})), &w).unwrap();
    }
    let p1 = page(&s, 10, None).unwrap();
    assert_eq!(p1.items.len(), 10);
    assert_eq!(p1.remaining_item_count, Some(15));
    assert_eq!(p1.resource_version, Revision(25));
    // Changes after the first page are not seen by later pages.
    s.create(&Collection::new("configmaps", Some("ns")), &cm("o99", json!({})), &w).unwrap();
    s.delete(&ObjectKey::new("configmaps", Some("ns"), "o15"), &Default::default()).unwrap();
    s.patch(&ObjectKey::new("configmaps", Some("ns"), "o20"), fieldstore_engine::patch::PatchType::Merge, &json!({"data": {"v": "2"}}), &w)
        .unwrap();
    let p2 = page(&s, 10, p1.continue_token.clone()).unwrap();
    assert_eq!(p2.remaining_item_count, Some(5));
    assert_eq!(p2.resource_version, Revision(25));
    let p3 = page(&s, 10, p2.continue_token.clone()).unwrap();
    assert_eq!(p3.continue_token, None);
    assert_eq!(p3.remaining_item_count, None);
    let all: Vec<String> =
        [p1.items, p2.items, p3.items.clone()].concat().iter().map(|i| i["metadata"]["name"].as_str().unwrap().to_string()).collect();
    let expected: Vec<String> = (0..25).map(|i| format!("o{i:02}")).collect();
    assert_eq!(all, expected);
    assert_eq!(p3.items[0]["data"]["v"], "1", "o20 as of the snapshot");
    // A fresh list sees the changes.
    let now = s.list(&Collection::new("configmaps", Some("ns")), &Default::default()).unwrap();
    assert_eq!(now.items.len(), 25);
    assert!(names(&now.items).contains(&"o99".to_string()));
    let json = now.to_json("v1", "ConfigMap");
    assert_eq!(json["kind"], "ConfigMapList");
    assert_eq!(json["metadata"]["resourceVersion"], "28");
}

#[test]
fn bad_tokens_are_rejected() {
    let s = store();
    for i in 0..3 {
        s.create(&Collection::new("configmaps", Some("ns")), &cm(&format!("o{i}"), json!({})), &WriteOptions::new("t")).unwrap();
    }
    let p = page(&s, 1, None).unwrap();
    let token = p.continue_token.unwrap();
    let mut tampered = token.clone().into_bytes();
    let i = tampered.len() / 2;
    tampered[i] = if tampered[i] == b'A' { b'B' } else { b'A' };
    let e = page(&s, 1, Some(String::from_utf8(tampered).unwrap())).unwrap_err();
    assert_eq!(e.reason(), Reason::BadRequest);
    assert!(matches!(page(&s, 1, Some("garbage".into())), Err(Error::BadRequest(_))));
    let with_rv =
        ListOptions { limit: Some(1), continue_token: Some(token.clone()), resource_version: Some("2".into()), ..Default::default() };
    assert!(matches!(s.list(&Collection::new("configmaps", Some("ns")), &with_rv), Err(Error::BadRequest(_))));
    // A token of another namespace's list does not continue this one.
    assert!(matches!(
        s.list(&Collection::new("configmaps", Some("other")), &ListOptions { continue_token: Some(token), ..Default::default() }),
        Err(Error::BadRequest(_))
    ));
}

#[test]
fn label_and_field_selectors() {
    let s = store();
    let w = WriteOptions::new("t");
    s.create(&Collection::new("configmaps", Some("ns")), &cm("a", json!({"app": "web", "tier": "front"})), &w).unwrap();
    s.create(&Collection::new("configmaps", Some("ns")), &cm("b", json!({"app": "db"})), &w).unwrap();
    s.create(&Collection::new("configmaps", Some("ns")), &cm("c", json!({})), &w).unwrap();
    s.create(&Collection::new("configmaps", Some("other")), &cm("d", json!({"app": "web"})), &w).unwrap();
    let sel = |ns: Option<&str>, l: &str, f: &str| {
        let o = ListOptions {
            label_selector: Some(l.into()).filter(|s: &String| !s.is_empty()),
            field_selector: Some(f.into()).filter(|s: &String| !s.is_empty()),
            ..Default::default()
        };
        names(&s.list(&Collection::new("configmaps", ns), &o).unwrap().items)
    };
    assert_eq!(sel(Some("ns"), "app=web", ""), ["a"]);
    assert_eq!(sel(Some("ns"), "app==web", ""), ["a"]);
    assert_eq!(sel(Some("ns"), "app!=web", ""), ["b", "c"]);
    assert_eq!(sel(Some("ns"), "app in (web,db)", ""), ["a", "b"]);
    assert_eq!(sel(Some("ns"), "app notin (web)", ""), ["b", "c"]);
    assert_eq!(sel(Some("ns"), "app", ""), ["a", "b"]);
    assert_eq!(sel(Some("ns"), "!app", ""), ["c"]);
    assert_eq!(sel(Some("ns"), "app=web,tier=front", ""), ["a"]);
    assert_eq!(sel(None, "app=web", ""), ["a", "d"]);
    assert_eq!(sel(None, "", "metadata.namespace=other"), ["d"]);
    assert_eq!(sel(None, "", "metadata.name!=a,metadata.namespace==ns"), ["b", "c"]);
    let bad = ListOptions { field_selector: Some("spec.x=1".into()), ..Default::default() };
    assert!(matches!(s.list(&Collection::new("configmaps", None), &bad), Err(Error::BadRequest(_))));
    // With a selector, remainingItemCount is not computed (as Kubernetes).
    let paged = s
        .list(
            &Collection::new("configmaps", None),
            &ListOptions { label_selector: Some("app".into()), limit: Some(1), ..Default::default() },
        )
        .unwrap();
    assert_eq!(paged.remaining_item_count, None);
    assert!(paged.continue_token.is_some());
    assert!(matches!(s.list(&Collection::new("namespaces", Some("ns")), &Default::default()), Err(Error::BadRequest(_))));
}

#[test]
fn resource_version_semantics() {
    let s = store();
    let w = WriteOptions::new("t");
    s.create(&Collection::new("configmaps", Some("ns")), &cm("a", json!({})), &w).unwrap();
    s.create(&Collection::new("configmaps", Some("ns")), &cm("b", json!({})), &w).unwrap();
    s.delete(&ObjectKey::new("configmaps", Some("ns"), "a"), &Default::default()).unwrap();
    let at = |rv: &str, limit: Option<usize>, m: Option<ResourceVersionMatch>| {
        s.list(
            &Collection::new("configmaps", Some("ns")),
            &ListOptions { resource_version: Some(rv.into()), limit, resource_version_match: m, ..Default::default() },
        )
    };
    // Exact with a limit: the state at revision 1.
    let old = at("1", Some(10), None).unwrap();
    assert_eq!((names(&old.items), old.resource_version), (vec!["a".to_string()], Revision(1)));
    assert_eq!(names(&at("2", None, Some(ResourceVersionMatch::Exact)).unwrap().items), ["a", "b"]);
    // Not older than: the current state.
    let fresh = at("1", None, None).unwrap();
    assert_eq!((names(&fresh.items), fresh.resource_version), (vec!["b".to_string()], Revision(3)));
    assert_eq!(at("0", Some(1), None).unwrap().resource_version, Revision(3));
    // The future: a bounded wait, then 504 Timeout.
    let e = at("100", None, None).unwrap_err();
    assert!(matches!(e, Error::TooLargeResourceVersion { requested: 100, current: 3 }));
    assert_eq!(e.reason().code(), 504);
    assert!(matches!(at("x", None, None), Err(Error::BadRequest(_))));
}

#[test]
fn json_pages_are_the_bytes_of_the_object_pages() {
    let s = store();
    let w = WriteOptions::new("t");
    for i in 0..12 {
        let mut o = cm(&format!("j{i:02}"), json!({"tier": if i % 3 == 0 { "a" } else { "b" }}));
        o["metadata"]["annotations"] = json!({"note": "}{\"\\", "z": "é"});
        o["data"] = json!({"k": i, "nested": {"metadata": {"x": i}}});
        s.apply(&Collection::new("configmaps", Some("ns")), &o, &w).unwrap();
    }
    // Another manager's write gives objects two managedFields entries.
    s.patch(
        &ObjectKey::new("configmaps", Some("ns"), "j01"),
        fieldstore_engine::patch::PatchType::Merge,
        &json!({"data": {"extra": "1"}}),
        &WriteOptions::new("other"),
    )
    .unwrap();
    for opts in [
        ListOptions { limit: Some(5), ..Default::default() },
        ListOptions { label_selector: Some("tier=a".into()), limit: Some(2), ..Default::default() },
        ListOptions { field_selector: Some("metadata.name!=j03".into()), ..Default::default() },
    ] {
        let mut opts = opts;
        let mut pages = 0;
        loop {
            let values = s.list(&Collection::new("configmaps", Some("ns")), &opts).unwrap();
            let texts = s.list_json(&Collection::new("configmaps", Some("ns")), &opts).unwrap();
            let want: Vec<Vec<u8>> = values.items.iter().map(|v| serde_json::to_vec(v).unwrap()).collect();
            assert_eq!(texts.items, want, "{opts:?}");
            assert_eq!(
                (texts.resource_version, &texts.continue_token, texts.remaining_item_count),
                (values.resource_version, &values.continue_token, values.remaining_item_count)
            );
            assert_eq!(texts.to_json_bytes("v1", "ConfigMap"), serde_json::to_vec(&values.to_json("v1", "ConfigMap")).unwrap());
            pages += 1;
            match values.continue_token {
                Some(t) => opts.continue_token = Some(t),
                None => break,
            }
        }
        assert!(pages >= 1);
    }
}

/// Reads a whole [`ListStream`] in chunks of `bytes`: its items' JSON text, its metadata and
/// how many chunks it took.
fn streamed(s: &Store, opts: &ListOptions, bytes: usize) -> Result<(Vec<Vec<u8>>, ListMeta, usize), Error> {
    let mut stream = s.list_stream(&Collection::new("configmaps", Some("ns")), opts)?;
    let (mut items, mut chunks) = (Vec::new(), 0);
    loop {
        chunks += 1;
        if let Some(meta) = stream.next_chunk(bytes, &mut |item| {
            items.push(item.to_vec());
            Ok(())
        })? {
            assert_eq!(meta.resource_version, stream.resource_version());
            return Ok((items, meta, chunks));
        }
    }
}

#[test]
fn streamed_lists_are_the_json_pages() {
    let s = store();
    let w = WriteOptions::new("t");
    let ns = Collection::new("configmaps", Some("ns"));
    for i in 0..40 {
        s.apply(&ns, &cm(&format!("s{i:02}"), json!({"tier": if i % 3 == 0 { "a" } else { "b" }})), &w).unwrap();
    }
    // Deleted and rewritten objects: tombstones and older versions the scan steps over.
    for i in (0..40).step_by(7) {
        s.delete(&ObjectKey::new("configmaps", Some("ns"), format!("s{i:02}")), &Default::default()).unwrap();
    }
    s.patch(&ObjectKey::new("configmaps", Some("ns"), "s01"), fieldstore_engine::patch::PatchType::Merge, &json!({"data": {"v": "2"}}), &w)
        .unwrap();
    let before = s.revision();
    s.create(&ns, &cm("s99", json!({})), &w).unwrap();
    let cases = [
        ListOptions::default(),
        ListOptions { limit: Some(7), ..Default::default() },
        ListOptions { limit: Some(1000), ..Default::default() },
        ListOptions { label_selector: Some("tier=a".into()), limit: Some(3), ..Default::default() },
        ListOptions { field_selector: Some("metadata.name!=s03".into()), limit: Some(9), ..Default::default() },
        ListOptions {
            resource_version: Some(before.to_string()),
            resource_version_match: Some(ResourceVersionMatch::Exact),
            limit: Some(10),
            ..Default::default()
        },
    ];
    for opts in cases {
        let mut opts = opts;
        loop {
            let page = s.list_json(&ns, &opts).unwrap();
            let want = (page.items.clone(), page.list_meta());
            for bytes in [1, 300, ListStream::CHUNK_BYTES] {
                let (items, meta, chunks) = streamed(&s, &opts, bytes).unwrap();
                assert_eq!((&items, &meta), (&want.0, &want.1), "{opts:?} in chunks of {bytes} bytes");
                if bytes == 1 {
                    // A chunk an item.
                    assert!(chunks >= items.len().max(1), "{opts:?}: {chunks} chunks");
                }
            }
            match page.continue_token {
                Some(t) => opts = ListOptions { continue_token: Some(t), ..ListOptions::default() },
                None => break,
            }
        }
    }
    // The options' errors come before any item.
    let bad = ListOptions { label_selector: Some("a in (".into()), ..Default::default() };
    assert!(matches!(s.list_stream(&ns, &bad), Err(Error::BadRequest(_))));
    let bad = ListOptions { continue_token: Some("nope".into()), ..Default::default() };
    assert!(matches!(s.list_stream(&ns, &bad), Err(Error::BadRequest(_))));
}

#[test]
fn a_stream_compacted_past_its_revision_fails_rather_than_skip_objects() {
    let s = store();
    let w = WriteOptions::new("t");
    let ns = Collection::new("configmaps", Some("ns"));
    for i in 0..10 {
        s.create(&ns, &cm(&format!("c{i}"), json!({})), &w).unwrap();
    }
    let mut stream = s.list_stream(&ns, &ListOptions::default()).unwrap();
    let mut n = 0;
    assert!(stream
        .next_chunk(1, &mut |_| {
            n += 1;
            Ok(())
        })
        .unwrap()
        .is_none());
    // Newer versions of the rest, then a compaction that removes the versions the list reads.
    for i in 0..10 {
        s.delete(&ObjectKey::new("configmaps", Some("ns"), format!("c{i}")), &Default::default()).unwrap();
    }
    s.compact(s.revision()).unwrap();
    let e = stream.next_chunk(ListStream::CHUNK_BYTES, &mut |_| Ok(())).unwrap_err();
    assert!(matches!(e, Error::Expired(_)), "{e:?}");
    assert_eq!(n, 1);
}
