//! Helpers shared by the store's integration tests: a store in a temporary directory with
//! ConfigMaps registered.
//!
//! With `FIELDSTORE_TEST_BACKEND=etcd` the stores of [`TestStore`] live in etcd instead: one
//! single-member etcd per test process (the `etcd` binary on `PATH`, data on `/dev/shm` when
//! there is one), each store under a key prefix of its own. `make test` runs the suites both
//! ways. `store_crash.rs` stays on RocksDB (it kills a process writing to a data directory);
//! its etcd counterpart is `server/tests/etcd_cluster.rs`.
#![allow(dead_code)]
// Test support unwraps: a failed setup is a failed test.
#![allow(clippy::unwrap_used)]

use fieldstore_engine::store::{Options, Store, TypeSpec};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};

#[path = "../../../tests/support/etcd_member.rs"]
mod etcd_member;
use std::sync::OnceLock;

/// A store in a temporary directory (or under a key prefix of the test etcd), removed when
/// dropped (after the store).
pub struct TestStore {
    store: Option<Store>,
    dir: tempfile::TempDir,
    options: Options,
    /// The etcd key prefix, when the store is in etcd.
    prefix: Option<String>,
}

/// The test etcd for [`TestStore`]: its client URL, started on first use; `None` when the
/// tests use RocksDB.
pub fn etcd() -> Option<&'static str> {
    if std::env::var("FIELDSTORE_TEST_BACKEND").as_deref() == Ok("etcd") {
        Some(test_etcd().expect("FIELDSTORE_TEST_BACKEND=etcd needs an `etcd` binary on PATH"))
    } else {
        None
    }
}

/// The test etcd, started on first use; `None` (with the reason printed) when no `etcd` binary
/// is on `PATH`. One member for the test process, its data on `/dev/shm` when there is one,
/// stopped and removed when the process ends.
pub fn test_etcd() -> Option<&'static str> {
    static ETCD: OnceLock<Option<String>> = OnceLock::new();
    ETCD.get_or_init(|| {
        let mut member =
            etcd_member::Member::new("t", etcd_member::fast_dir().join(format!("fieldstore-test-etcd-{}", std::process::id())));
        member.remove_dir = true;
        if !etcd_member::available() {
            return None;
        }
        let cluster = member.cluster_entry();
        member.start(&cluster, "new", &[]);
        member.wait_ready();
        let url = member.url();
        member.keep_until_exit();
        Some(url)
    })
    .as_deref()
}

/// Opens the store of a test directory: RocksDB in `dir`, or with `FIELDSTORE_TEST_BACKEND=etcd`
/// the test etcd under a prefix named after `dir` (reopening the directory reopens that store).
pub fn open_at(dir: &std::path::Path, options: Options) -> Store {
    match etcd() {
        Some(url) => Store::open_etcd(&[url.to_string()], &format!("/dir{}", dir.display()), options).unwrap(),
        None => Store::open(dir, options).unwrap(),
    }
}

/// Opens the store of `dir` (RocksDB) or `prefix` (etcd).
fn open(dir: &std::path::Path, prefix: Option<&str>, options: Options) -> Store {
    match (prefix, etcd()) {
        (Some(p), Some(url)) => Store::open_etcd(&[url.to_string()], p, options).unwrap(),
        _ => Store::open(dir, options).unwrap(),
    }
}

impl TestStore {
    /// A new store with `configmaps` (namespaced, no schema) registered.
    pub fn new(options: Options) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = tempfile::tempdir().unwrap();
        let prefix = etcd().map(|_| format!("/test-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::SeqCst)));
        let store = open(dir.path(), prefix.as_deref(), options.clone());
        store.register(configmaps()).unwrap();
        TestStore { store: Some(store), dir, options, prefix }
    }

    /// Another handle on the same store, opened separately (for etcd: another "server").
    pub fn open_again(&self) -> Store {
        open(self.dir.path(), self.prefix.as_deref(), self.options.clone())
    }

    /// Closes the store and opens its directory again.
    pub fn reopen(&mut self) {
        self.store = None;
        self.store = Some(open(self.dir.path(), self.prefix.as_deref(), self.options.clone()));
    }

    /// The data directory.
    pub fn path(&self) -> &std::path::Path {
        self.dir.path()
    }
}

impl std::ops::Deref for TestStore {
    type Target = Store;
    fn deref(&self) -> &Store {
        self.store.as_ref().unwrap()
    }
}

/// The ConfigMap type: namespaced, schemaless.
pub fn configmaps() -> TypeSpec {
    TypeSpec::new("", "v1", "ConfigMap", "configmaps").namespaced(true)
}

/// A ConfigMap named `name` with `data`.
pub fn cm(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
}

/// The resourceVersion of an object, as a number.
pub fn rv(v: &Value) -> u64 {
    v["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap()
}

/// A store for the etcd API's tests, or `None` on the etcd backend, which refuses the etcd API
/// (checked here).
pub fn etcd_api_store() -> Option<TestStore> {
    use fieldstore_engine::store::etcd_api::EtcdApiError;
    let s = TestStore::new(Options::default());
    if etcd().is_some() {
        let refused = s.etcd_put(etcd_put(b"/registry/x", b"1"));
        assert!(matches!(refused, Err(fieldstore_engine::Error::EtcdApi(EtcdApiError::Unsupported))), "{refused:?}");
        eprintln!("skipped: the etcd API is served on RocksDB only");
        return None;
    }
    Some(s)
}

/// An etcd `Put` of `value` at `key`.
pub fn etcd_put(key: &[u8], value: &[u8]) -> fieldstore_engine::store::etcd_api::PutRequest {
    fieldstore_engine::store::etcd_api::PutRequest { key: key.to_vec(), value: value.to_vec(), ..Default::default() }
}
