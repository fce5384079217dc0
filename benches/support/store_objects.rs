//! Objects, types and raw-RocksDB baselines shared by the store benches (`benches/store.rs`,
//! `benches/store_load.rs`). Include next to `shapes.rs`:
//!
//! ```ignore
//! #[path = "support/shapes.rs"] mod shapes;
//! #[path = "support/store_objects.rs"] mod store_objects;
//! ```
#![allow(dead_code)]

use super::shapes::{config, Shape};
use fieldstore::engine::schema::from_crd;
use fieldstore::engine::store::{HistoryPolicy, TypeSpec};
use fieldstore::engine::{FieldManager, Schema, TypeRef};
use serde_json::{json, Value};
use std::path::Path;

/// The namespace every bench object lives in.
pub const NS: &str = "bench";

/// Length of the `data.value` string of a bench ConfigMap: with the rest of the object the JSON
/// is ~1 KiB, the value size of the etcd anchors.
pub const VALUE_LEN: usize = 900;

/// The ConfigMap type: namespaced, schemaless (as the store tests register it), with the
/// default field-history policy.
pub fn configmaps() -> TypeSpec {
    TypeSpec::new("", "v1", "ConfigMap", "configmaps").namespaced(true)
}

/// [`configmaps`] without field history (to tell its cost apart).
pub fn configmaps_no_history() -> TypeSpec {
    configmaps().with_history(HistoryPolicy::off())
}

/// `len` pseudo-random alphanumeric characters, different for every `seed` (values that do not
/// compress to nothing, like the random values of etcd's benchmark tool).
pub fn filler(seed: u64, len: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            // xorshift64
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from(ALPHABET[(x % ALPHABET.len() as u64) as usize])
        })
        .collect()
}

/// The name of bench ConfigMap `i`.
pub fn cm_name(prefix: &str, i: usize) -> String {
    format!("{prefix}-{i:07}")
}

/// A ConfigMap of ~1 KiB of JSON: a `data` map with one ~900-byte value.
pub fn configmap(name: &str, seed: u64) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NS, "labels": {"app": "bench"}},
        "data": {"value": filler(seed, VALUE_LEN)},
    })
}

/// The raw-RocksDB key of an object: `namespace/name`.
pub fn raw_key(name: &str) -> Vec<u8> {
    format!("{NS}/{name}").into_bytes()
}

/// A namespaced CustomResourceDefinition in `example.com/v1` whose `spec.items` is a map list
/// keyed by `name`, its items having `name` and the given other properties.
pub fn map_list_crd(kind: &str, plural: &str, item_properties: Value) -> Value {
    let mut props = json!({"name": {"type": "string"}});
    if let (Value::Object(p), Value::Object(extra)) = (&mut props, item_properties) {
        p.extend(extra);
    }
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.example.com")},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "items": {
                            "type": "array",
                            "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["name"],
                            "items": {"type": "object", "required": ["name"], "properties": props},
                        },
                    }},
                }}},
            }],
        },
    })
}

/// The CRD form of the apply bench's schema: items of the 5 scalars of `shapes::list_item`.
pub fn biglist_crd() -> Value {
    map_list_crd(
        "BigList",
        "biglists",
        json!({"image": {"type": "string"}, "value": {"type": "string"}, "port": {"type": "integer"}, "flag": {"type": "boolean"}}),
    )
}

/// The API version and kind of [`biglist_crd`] objects.
pub const BIGLIST_API_VERSION: &str = "example.com/v1";
/// The kind of [`biglist_crd`] objects.
pub const BIGLIST_KIND: &str = "BigList";
/// The resource of [`biglist_crd`] objects.
pub const BIGLIST_RESOURCE: &str = "biglists.example.com";

/// The apply configuration of BigList `name` with `n` items; with `changed`, item `n / 2` has
/// another value (alternate the two so every apply writes).
pub fn biglist_config(name: &str, n: usize, changed: bool) -> Value {
    let mut cfg = config(Shape::List, n, changed.then_some(n / 2));
    let root = cfg.as_object_mut().expect("config is an object");
    root.insert("apiVersion".into(), json!(BIGLIST_API_VERSION));
    root.insert("kind".into(), json!(BIGLIST_KIND));
    root.insert("metadata".into(), json!({"name": name, "namespace": NS}));
    cfg
}

/// The [`biglist_crd`] type, with or without field history.
pub fn biglist_type(history: bool) -> TypeSpec {
    let t = TypeSpec::from_crd(&biglist_crd()).expect("CRD type");
    if history {
        t
    } else {
        t.with_history(HistoryPolicy::off())
    }
}

/// The field manager the store builds for [`biglist_crd`] (see `engine/src/store/types.rs`):
/// the CRD's schema, its root type, the API version and the kind. The schema and root are
/// leaked, as the store does.
pub fn biglist_field_manager() -> FieldManager<'static> {
    let versions = from_crd(&biglist_crd()).expect("CRD schema");
    let (_, schema, root) = versions.into_iter().find(|(v, _, _)| v == "v1").expect("version v1");
    let schema: &'static Schema = Box::leak(Box::new(schema));
    let root: &'static TypeRef = Box::leak(Box::new(schema.named(&root).expect("root type")));
    FieldManager::new(schema, root, BIGLIST_API_VERSION).with_kind(BIGLIST_KIND)
}

/// A raw RocksDB database with the options the store gives its `objects` column family
/// (`engine/src/store/rocks.rs`): WAL recycling (4 files), 2 background jobs, LZ4, 16 KiB blocks,
/// a 64 MiB LRU block cache and a 64 MiB memtable. The baseline of the store's writes and scans.
pub fn open_raw(dir: &Path) -> rocksdb::DB {
    let mut opts = rocksdb::Options::default();
    opts.create_if_missing(true);
    opts.set_recycle_log_file_num(4);
    opts.set_max_background_jobs(2);
    opts.set_bytes_per_sync(1 << 20);
    opts.set_keep_log_file_num(4);
    opts.set_max_total_wal_size(256 << 20);
    let cache = rocksdb::Cache::new_lru_cache(64 << 20);
    let mut table = rocksdb::BlockBasedOptions::default();
    table.set_block_cache(&cache);
    table.set_block_size(16 << 10);
    opts.set_block_based_table_factory(&table);
    opts.set_compression_type(rocksdb::DBCompressionType::Lz4);
    opts.set_bottommost_compression_type(rocksdb::DBCompressionType::Lz4);
    opts.set_write_buffer_size(64 << 20);
    rocksdb::DB::open(&opts, dir).expect("open raw RocksDB")
}

/// A raw RocksDB database with RocksDB's default options (no WAL recycling): the issue's
/// "~450 sequential synced puts/s with default options" reference.
pub fn open_raw_default(dir: &Path) -> rocksdb::DB {
    let mut opts = rocksdb::Options::default();
    opts.create_if_missing(true);
    rocksdb::DB::open(&opts, dir).expect("open raw RocksDB")
}

/// Write options with the given sync setting.
pub fn write_opts(sync: bool) -> rocksdb::WriteOptions {
    let mut wo = rocksdb::WriteOptions::default();
    wo.set_sync(sync);
    wo
}

/// One page of a raw scan: up to `limit` values from `start` (inclusive), each parsed into a
/// JSON object, serialised as one JSON array. Returns the bytes and the key to continue from.
pub fn raw_page(db: &rocksdb::DB, start: &[u8], limit: usize) -> (Vec<u8>, usize, Option<Vec<u8>>) {
    let mut ro = rocksdb::ReadOptions::default();
    ro.set_iterate_upper_bound(format!("{NS}0").into_bytes()); // '0' follows '/'
    let mut it = db.raw_iterator_opt(ro);
    it.seek(start);
    let mut items: Vec<Value> = Vec::with_capacity(limit);
    let mut next = None;
    while let Some((k, v)) = it.item() {
        if items.len() == limit {
            next = Some(k.to_vec());
            break;
        }
        items.push(serde_json::from_slice(v).expect("stored JSON"));
        it.next();
    }
    it.status().expect("raw scan");
    let n = items.len();
    (serde_json::to_vec(&items).expect("serialise page"), n, next)
}
