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
/// is on `PATH`.
pub fn test_etcd() -> Option<&'static str> {
    static ETCD: OnceLock<Option<String>> = OnceLock::new();
    ETCD.get_or_init(|| {
        let found = std::process::Command::new("etcd").arg("--version").output().is_ok_and(|o| o.status.success());
        if !found {
            eprintln!("skipped: no `etcd` binary on PATH (Debian: apt-get install etcd-server)");
        }
        found.then(start_etcd)
    })
    .as_deref()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Starts a single-member etcd that ends with this process: a shell holds it and kills it
/// when its standard input (this process's pipe) closes.
fn start_etcd() -> String {
    let (client, peer) = (free_port(), free_port());
    let base = if std::path::Path::new("/dev/shm").is_dir() { "/dev/shm" } else { "/tmp" };
    let data = format!("{base}/fieldstore-test-etcd-{}", std::process::id());
    let url = format!("http://127.0.0.1:{client}");
    let script = format!(
        "rm -rf {data}; etcd --name t --data-dir {data} --listen-client-urls {url} --advertise-client-urls {url} \
         --listen-peer-urls http://127.0.0.1:{peer} --initial-advertise-peer-urls http://127.0.0.1:{peer} \
         --initial-cluster t=http://127.0.0.1:{peer} --log-level error >/dev/null 2>&1 & pid=$!; \
         cat >/dev/null; kill -9 $pid; wait $pid 2>/dev/null; rm -rf {data}"
    );
    let child = std::process::Command::new("sh").arg("-c").arg(script).stdin(std::process::Stdio::piped()).spawn().unwrap();
    // The pipe's write end stays open for the life of the process.
    std::mem::forget(child);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", client)).is_err() {
        assert!(std::time::Instant::now() < deadline, "the test etcd did not start on {url}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    url
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
