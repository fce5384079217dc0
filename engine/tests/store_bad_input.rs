//! Bad input: typed errors with Kubernetes reasons, and nothing written.
// Needs the RocksDB-backed store (the engine's `store` feature).
#![cfg(feature = "store")]

use fieldstore_engine::store::{GetOptions, Options, WriteOptions};
use fieldstore_engine::{Error, Reason};
use serde_json::{json, Value};

mod support;
use support::TestStore;

fn store(options: Options) -> TestStore {
    TestStore::new(options)
}

fn cm(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
}

#[test]
fn unknown_resource_is_not_found() {
    let s = store(Options::default());
    let e = s.create("widgets", Some("ns"), &cm("a"), &WriteOptions::new("t")).unwrap_err();
    assert!(matches!(e, Error::NotFound { .. }));
    assert_eq!(e.reason(), Reason::NotFound);
    assert!(matches!(s.get("widgets", None, "a", &GetOptions::default()), Err(Error::NotFound { .. })));
}

#[test]
fn invalid_names_are_invalid() {
    let s = store(Options::default());
    for name in ["UPPER", "under_score", "-lead", "trail-", "a..b", &"x".repeat(254)] {
        let e = s.create("configmaps", Some("ns"), &cm(name), &WriteOptions::new("t")).unwrap_err();
        assert_eq!(e.reason(), Reason::Invalid, "{name}: {e}");
        assert_eq!(e.reason().code(), 422);
    }
    let e = s.create("configmaps", Some("Bad_NS"), &cm("a"), &WriteOptions::new("t")).unwrap_err();
    assert_eq!(e.reason(), Reason::Invalid);
    assert!(matches!(s.create("configmaps", None, &cm("a"), &WriteOptions::new("t")), Err(Error::BadRequest(_))));
    assert!(matches!(
        s.create("configmaps", Some("ns"), &json!({"kind": "ConfigMap", "metadata": {}}), &WriteOptions::new("t")),
        Err(Error::Invalid(_))
    ));
    assert_eq!(s.revision(), 0);
}

#[test]
fn oversized_objects_are_rejected() {
    let s = store(Options::default());
    let mut o = cm("big");
    o["data"] = json!({"blob": "x".repeat(1536 * 1024)});
    let e = s.create("configmaps", Some("ns"), &o, &WriteOptions::new("t")).unwrap_err();
    assert!(matches!(e, Error::TooLarge { .. }), "{e}");
    assert_eq!(e.reason().code(), 413);
    let small = store(Options::default().max_object_bytes(1000));
    let mut o = cm("a");
    o["data"] = json!({"blob": "x".repeat(2000)});
    assert!(matches!(small.apply("configmaps", Some("ns"), &o, &WriteOptions::new("t")), Err(Error::TooLarge { .. })));
    assert_eq!(s.revision(), 0);
    assert_eq!(small.revision(), 0);
}

#[test]
fn deep_nesting_and_malformed_documents_are_bad_requests() {
    let s = store(Options::default().max_depth(10));
    let mut deep = json!("leaf");
    for _ in 0..20 {
        deep = json!({"d": deep});
    }
    let mut o = cm("a");
    o["data"] = deep;
    let e = s.create("configmaps", Some("ns"), &o, &WriteOptions::new("t")).unwrap_err();
    assert_eq!(e.reason(), Reason::BadRequest);
    assert!(matches!(s.parse_object(b"{\"a\": "), Err(Error::BadRequest(_))));
    assert!(matches!(s.parse_object(b"a: [unclosed"), Err(Error::BadRequest(_))));
    let y = s.parse_object(b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\n").unwrap();
    assert_eq!(y["metadata"]["name"], "y");
    assert!(matches!(s.create("configmaps", Some("ns"), &json!([1]), &WriteOptions::new("t")), Err(Error::BadRequest(_))));
    let wrong_kind = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a"}});
    assert!(matches!(s.create("configmaps", Some("ns"), &wrong_kind, &WriteOptions::new("t")), Err(Error::BadRequest(_))));
    assert_eq!(s.revision(), 0);
}
