//! The object store's hot paths against raw RocksDB, small and fast enough to track over time
//! (the whole suite runs in about a minute; `store_load.rs` is the full-size load generator).
//!
//! Every group has a baseline measured in the same run:
//! - `store/create` (`sync_off`, `sync_on`): one ~1 KiB ConfigMap per iteration through
//!   `Store::create`, against `raw`: one RocksDB put of the same JSON bytes under
//!   `namespace/name`, into a database with the store's options, with the same sync setting;
//! - `store/update` (`sync_off`): one ~1 KiB ConfigMap read with `Store::get`, one data key
//!   changed and written back with `Store::update` (a PUT) per iteration, against `raw`: the
//!   same read (a RocksDB get and its parse), change and put of its JSON;
//! - `store/get`: `Store::get` of one of 10k objects, against `raw`: a RocksDB get of the
//!   object's JSON and its parse;
//! - `store/list` (pages of 500 from 10k objects): `store` a page read with a continue token,
//!   `store_first` the first page (which also counts the rest), `store_json` a page and its
//!   serialisation, against `raw`: a scan of 500 values, each parsed, the page serialised;
//! - `store/apply` (N = 1k, 10k list items): `Store::apply` changing one item's value (alternating,
//!   so every apply writes), sync off (`store_nosync`), on (`store`), and sync off without field
//!   history (`store_nohist`), against `merge`: `FieldManager::apply` alone on the same live
//!   object and configs.
//!
//! `python3 benches/ratios.py store raw` and `python3 benches/ratios.py store_apply merge` print
//! the ratios.
#![allow(clippy::unwrap_used, reason = "a measurement whose setup fails has nothing to measure: it stops there")]
#![allow(missing_docs, reason = "criterion_group! defines an undocumented public function")]

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use fieldstore::engine::fieldmanager::Time;
use fieldstore::engine::store::{Collection, GetOptions, ListOptions, ObjectKey, Options, Store, WriteOptions};
use serde_json::Value;
use std::time::Duration;

// The `fieldstore` binary runs on mimalloc; so do the benches.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "support/shapes.rs"]
mod shapes;
#[path = "support/store_objects.rs"]
mod store_objects;
use store_objects::{
    biglist_config, biglist_field_manager, biglist_type, cm_name, configmap, configmaps, open_raw, raw_key, raw_page, write_opts,
    BIGLIST_RESOURCE, NS,
};

/// Objects in the stores that `get` and `list` read.
const FILLED: usize = 10_000;
const PAGE: usize = 500;

fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("fieldstore-bench-").tempdir().expect("tempdir")
}

/// A store (no automatic compaction, so continue tokens stay valid) with ConfigMaps registered.
fn open_store(dir: &std::path::Path, sync: bool) -> Store {
    let store = Store::open(dir, Options::default().sync(sync).retention(None).max_object_bytes(64 << 20)).expect("open store");
    store.register(configmaps()).expect("register");
    store
}

fn quick(g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    g.sample_size(10).measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(500));
}

fn bench_create(c: &mut Criterion) {
    let mut g = c.benchmark_group("store/create");
    quick(&mut g);
    g.throughput(Throughput::Elements(1));
    let w = WriteOptions::new("bench");
    for sync in [false, true] {
        let label = if sync { "sync_on" } else { "sync_off" };
        let raw_dir = tempdir();
        let db = open_raw(raw_dir.path());
        let wo = write_opts(sync);
        let mut i = 0usize;
        g.bench_function(BenchmarkId::new("raw", label), |b| {
            b.iter_batched(
                || {
                    i += 1;
                    let name = cm_name("cm", i);
                    (raw_key(&name), serde_json::to_vec(&configmap(&name, i as u64)).expect("json"))
                },
                |(k, v)| db.put_opt(k, v, &wo).expect("put"),
                BatchSize::SmallInput,
            )
        });
        let dir = tempdir();
        let store = open_store(dir.path(), sync);
        let mut i = 0usize;
        g.bench_function(BenchmarkId::new("store", label), |b| {
            b.iter_batched(
                || {
                    i += 1;
                    configmap(&cm_name("cm", i), i as u64)
                },
                |o| store.create(&Collection::new("configmaps", Some(NS)), &o, &w).expect("create"),
                BatchSize::SmallInput,
            )
        });
    }
    g.finish();
}

fn bench_update(c: &mut Criterion) {
    let mut g = c.benchmark_group("store/update");
    quick(&mut g);
    g.throughput(Throughput::Elements(1));
    let w = WriteOptions::new("bench");
    let name = cm_name("cm", 0);
    let raw_dir = tempdir();
    let db = open_raw(raw_dir.path());
    let wo = write_opts(false);
    db.put_opt(raw_key(&name), serde_json::to_vec(&configmap(&name, 0)).expect("json"), &wo).expect("put");
    let mut i = 0u64;
    g.bench_function(BenchmarkId::new("raw", "sync_off"), |b| {
        b.iter(|| {
            i += 1;
            let mut o: Value = serde_json::from_slice(&db.get(raw_key(&name)).expect("get").expect("present")).expect("parse");
            o["data"]["changed"] = Value::String(i.to_string());
            db.put_opt(raw_key(&name), serde_json::to_vec(&o).expect("json"), &wo).expect("put")
        })
    });
    let dir = tempdir();
    let store = open_store(dir.path(), false);
    let of = Collection::new("configmaps", Some(NS));
    store.create(&of, &configmap(&name, 0), &w).expect("create");
    let key = ObjectKey::new("configmaps", Some(NS), &name);
    g.bench_function(BenchmarkId::new("store", "sync_off"), |b| {
        b.iter(|| {
            i += 1;
            let mut o = store.get(&key, &GetOptions::default()).expect("get");
            o["data"]["changed"] = Value::String(i.to_string());
            store.update(&of, &o, &w).expect("update")
        })
    });
    g.finish();
}

/// A store and a raw database holding the same `FILLED` objects (the raw values are the objects'
/// JSON as the store returns them).
struct Filled {
    store: Store,
    db: rocksdb::DB,
    names: Vec<String>,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
}

fn filled() -> Filled {
    let (sdir, rdir) = (tempdir(), tempdir());
    let store = open_store(sdir.path(), false);
    let db = open_raw(rdir.path());
    let w = WriteOptions::new("bench");
    let names: Vec<String> = (0..FILLED).map(|i| cm_name("cm", i)).collect();
    for (i, name) in names.iter().enumerate() {
        let o = store.create(&Collection::new("configmaps", Some(NS)), &configmap(name, i as u64), &w).expect("create");
        db.put_opt(raw_key(name), serde_json::to_vec(&o).expect("json"), &write_opts(false)).expect("put");
    }
    Filled { store, db, names, _dirs: (sdir, rdir) }
}

fn bench_read(c: &mut Criterion, f: &Filled) {
    let mut g = c.benchmark_group("store/get");
    quick(&mut g);
    g.throughput(Throughput::Elements(1));
    let mut i = 0usize;
    g.bench_function(BenchmarkId::new("raw", "1"), |b| {
        b.iter(|| {
            i = (i + 7919) % FILLED;
            let v = f.db.get_pinned(raw_key(&f.names[i])).expect("get").expect("present");
            serde_json::from_slice::<Value>(&v).expect("json")
        })
    });
    let mut i = 0usize;
    let opts = GetOptions::default();
    g.bench_function(BenchmarkId::new("store", "1"), |b| {
        b.iter(|| {
            i = (i + 7919) % FILLED;
            f.store.get(&ObjectKey::new("configmaps", Some(NS), &f.names[i]), &opts).expect("get")
        })
    });
    g.finish();

    let mut g = c.benchmark_group("store/list");
    quick(&mut g);
    g.throughput(Throughput::Elements(PAGE as u64));
    // A page from the middle: the 10th.
    let start = raw_key(&f.names[PAGE * 10]);
    g.bench_function(BenchmarkId::new("raw", PAGE), |b| b.iter(|| raw_page(&f.db, &start, PAGE)));
    let mut opts = ListOptions { limit: Some(PAGE), ..Default::default() };
    for _ in 0..10 {
        opts.continue_token = f.store.list(&Collection::new("configmaps", Some(NS)), &opts).expect("list").continue_token;
    }
    let first = f.store.list(&Collection::new("configmaps", Some(NS)), &opts).expect("list");
    assert_eq!(first.items[0]["metadata"]["name"].as_str(), Some(f.names[PAGE * 10].as_str()), "page 10");
    g.bench_function(BenchmarkId::new("store", PAGE), |b| {
        b.iter(|| f.store.list(&Collection::new("configmaps", Some(NS)), &opts).expect("list"))
    });
    g.bench_function(BenchmarkId::new("store_json", PAGE), |b| {
        b.iter(|| serde_json::to_vec(&f.store.list(&Collection::new("configmaps", Some(NS)), &opts).expect("list").items).expect("json"))
    });
    let first_opts = ListOptions { limit: Some(PAGE), ..Default::default() };
    g.bench_function(BenchmarkId::new("store_first", PAGE), |b| {
        b.iter(|| f.store.list(&Collection::new("configmaps", Some(NS)), &first_opts).expect("list"))
    });
    g.finish();
}

fn bench_apply(c: &mut Criterion) {
    let fm = biglist_field_manager();
    let now = Time::from_unix_seconds(1_750_000_000);
    let w = WriteOptions::new("bench");
    let mut g = c.benchmark_group("store/apply");
    quick(&mut g);
    for n in [1_000usize, 10_000] {
        let cfgs = [biglist_config("big", n, false), biglist_config("big", n, true)];
        g.throughput(Throughput::Bytes(serde_json::to_vec(&cfgs[0]).expect("json").len() as u64));
        let mut keep = Vec::new();
        let mut stores = Vec::new();
        for (sync, history) in [(false, true), (true, true), (false, false)] {
            let dir = tempdir();
            let store = open_store(dir.path(), sync);
            store.register(biglist_type(history)).expect("register");
            store.apply(&Collection::new(BIGLIST_RESOURCE, Some(NS)), &cfgs[0], &w).expect("create");
            stores.push(store);
            keep.push(dir);
        }
        // The two states the store alternates between: after config 0, after config 1.
        let live0 = stores[0].get(&ObjectKey::new(BIGLIST_RESOURCE, Some(NS), "big"), &GetOptions::default()).expect("get");
        let live1 = fm.apply(Some(&live0), &cfgs[1], "bench", false, &now).expect("merge").object;
        let lives = [live0, live1];
        let mut k = 0usize;
        g.bench_function(BenchmarkId::new("merge", n), |b| {
            b.iter(|| {
                k += 1;
                let out = fm.apply(Some(&lives[k % 2]), &cfgs[(k + 1) % 2], "bench", false, &now).expect("merge");
                debug_assert!(out.object_changed);
                out
            })
        });
        for (store, name) in stores.iter().zip(["store_nosync", "store", "store_nohist"]) {
            // The store holds config 0's state; the first iteration applies config 1.
            let mut k = 0usize;
            g.bench_function(BenchmarkId::new(name, n), |b| {
                b.iter(|| {
                    k += 1;
                    store.apply(&Collection::new(BIGLIST_RESOURCE, Some(NS)), &cfgs[k % 2], &w).expect("apply")
                })
            });
        }
    }
    g.finish();
}

fn benches(c: &mut Criterion) {
    bench_create(c);
    bench_update(c);
    let f = filled();
    bench_read(c, &f);
    drop(f);
    bench_apply(c);
}

criterion_group!(store_benches, benches);
criterion_main!(store_benches);
