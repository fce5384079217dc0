//! Helpers shared by the store's integration tests: a store in a temporary directory with
//! ConfigMaps registered.
#![allow(dead_code)]
// Test support unwraps: a failed setup is a failed test.
#![allow(clippy::unwrap_used)]

use fieldstore_engine::store::{Options, Store, TypeSpec};
use serde_json::{json, Value};

/// A store in a temporary directory, removed when dropped (after the store).
pub struct TestStore {
    store: Option<Store>,
    dir: tempfile::TempDir,
    options: Options,
}

impl TestStore {
    /// A new store with `configmaps` (namespaced, no schema) registered.
    pub fn new(options: Options) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), options.clone()).unwrap();
        store.register(configmaps()).unwrap();
        TestStore { store: Some(store), dir, options }
    }

    /// Closes the store and opens its directory again.
    pub fn reopen(&mut self) {
        self.store = None;
        self.store = Some(Store::open(self.dir.path(), self.options.clone()).unwrap());
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
