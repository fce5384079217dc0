//! Stored bodies of built-in objects: JSON (the default) against the Kubernetes protobuf envelope
//! (`Options::protobuf_storage`), in size and in read cost — decoding the stored body and rendering
//! the object as JSON, what a get or a list serves — and in write cost.
//!
//! Groups (`python3 benches/ratios.py storage json` prints each over the JSON side):
//! - `storage_fixtures/{json,protobuf}`: the 59 upstream fixture objects (k8s.io/api testdata,
//!   `metadata.resourceVersion` and `managedFields` taken out as the store does), every body decoded
//!   and rendered as JSON per iteration: `serde_json` parse + serialise of the JSON body, against
//!   `object_of_envelope` + serialise of the protobuf body (the store's two read paths);
//! - `storage_get/{json,protobuf}/{pod,endpointslice-10k}`: `Store::get` + `serde_json::to_vec`
//!   on two stores, one per setting, decoded-object cache off (every get decodes the record);
//! - `storage_list/{json,protobuf}`: `Store::list_json`, a page of 500 of 1,000 pods (JSON bodies
//!   are served as stored text; protobuf bodies are decoded and rendered);
//! - `storage_create/{json,protobuf}`: `Store::create` of a pod, sync off (the protobuf side also
//!   checks that the body reads back exactly as written before choosing it).
//!
//! Sizes (body bytes; a record adds the same managedFields entries either way) are printed once.
#![allow(clippy::unwrap_used, reason = "a measurement whose setup fails has nothing to measure: it stops there")]
#![allow(missing_docs, reason = "criterion_group! defines an undocumented public function")]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use fieldstore::codec::k8s_protobuf::{encode_envelope_value, object_of_envelope};
use fieldstore::engine::store::{Collection, GetOptions, ListOptions, ObjectKey, Options, Store, WriteOptions};
use serde_json::Value;
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};

#[path = "support/k8s_objects.rs"]
mod k8s_objects;
use k8s_objects::{endpoint_slice, pod};

// The `fieldstore` binary runs on mimalloc; so do the benches.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// An object as the store keeps its body: without resourceVersion and managedFields.
fn body_object(mut v: Value) -> Value {
    if let Some(Value::Object(m)) = v.get_mut("metadata") {
        m.remove("resourceVersion");
        m.remove("managedFields");
    }
    v
}

/// An object as a client creates it: no server-set metadata.
fn new_object(v: Value, name: &str) -> Value {
    let mut v = body_object(v);
    if let Some(Value::Object(m)) = v.get_mut("metadata") {
        for k in ["uid", "creationTimestamp", "generation"] {
            m.remove(k);
        }
        m.insert("name".into(), Value::String(name.into()));
    }
    v
}

/// The fixture bodies: (JSON body, protobuf body) of each that reads back exactly from protobuf.
fn fixtures() -> Vec<(Vec<u8>, Vec<u8>)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/codec/tests/fixtures/k8s-api");
    let mut names: Vec<_> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "json")).collect();
    names.sort();
    let (mut out, mut json_bytes, mut pb_bytes, mut kept_json) = (Vec::new(), 0, 0, 0);
    for path in &names {
        let v = body_object(serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap());
        let json = serde_json::to_vec(&v).unwrap();
        let pb = match encode_envelope_value(&v) {
            Ok(pb) => pb,
            Err(e) => {
                println!("storage sizes: {} left out: {e}", path.display());
                continue;
            }
        };
        if object_of_envelope(&pb).unwrap() != v {
            kept_json += 1;
            continue;
        }
        json_bytes += json.len();
        pb_bytes += pb.len();
        out.push((json, pb));
    }
    println!(
        "storage sizes fixtures: {} objects, json {json_bytes} bytes, protobuf {pb_bytes} bytes, protobuf/json {:.1}% ({kept_json} would keep JSON)",
        out.len(),
        100.0 * pb_bytes as f64 / json_bytes as f64
    );
    out
}

fn open(dir: &std::path::Path, protobuf: bool) -> Store {
    Store::open(dir, Options::default().sync(false).object_cache(0).max_object_bytes(16 << 20).protobuf_storage(protobuf)).unwrap()
}

fn bench_fixtures(c: &mut Criterion) {
    let cases = fixtures();
    let mut g = c.benchmark_group("storage_fixtures");
    g.bench_function("json", |b| {
        b.iter(|| {
            for (json, _) in &cases {
                let v: Value = serde_json::from_slice(black_box(json)).unwrap();
                black_box(serde_json::to_vec(&v).unwrap());
            }
        });
    });
    g.bench_function("protobuf", |b| {
        b.iter(|| {
            for (_, pb) in &cases {
                let v = object_of_envelope(black_box(pb)).unwrap();
                black_box(serde_json::to_vec(&v).unwrap());
            }
        });
    });
    g.finish();
}

fn bench_store(c: &mut Criterion) {
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let stores = [("json", open(dirs[0].path(), false)), ("protobuf", open(dirs[1].path(), true))];
    let w = WriteOptions::new("bench");
    let objects = [("pod", "pods", pod()), ("endpointslice-10k", "endpointslices.discovery.k8s.io", endpoint_slice(10_000))];
    for (setting, store) in &stores {
        for (name, resource, object) in &objects {
            store.create(&Collection::new(*resource, Some("shop")), &new_object(object.clone(), name), &w).unwrap();
            let json = serde_json::to_vec(&body_object(object.clone())).unwrap().len();
            let pb = encode_envelope_value(&body_object(object.clone())).unwrap().len();
            if *setting == "json" {
                println!(
                    "storage sizes {name}: json {json} bytes, protobuf {pb} bytes, protobuf/json {:.1}%",
                    100.0 * pb as f64 / json as f64
                );
            }
        }
        for i in 0..1_000 {
            store.create(&Collection::new("pods", Some("shop")), &new_object(pod(), &format!("p-{i:04}")), &w).unwrap();
        }
    }

    let mut g = c.benchmark_group("storage_get");
    for (setting, store) in &stores {
        for (name, resource, _) in &objects {
            g.bench_with_input(BenchmarkId::new(*setting, name), name, |b, name| {
                b.iter(|| {
                    black_box(
                        serde_json::to_vec(&store.get(&ObjectKey::new(*resource, Some("shop"), *name), &GetOptions::default()).unwrap())
                            .unwrap(),
                    )
                });
            });
        }
    }
    g.finish();

    let mut g = c.benchmark_group("storage_list");
    g.sample_size(20);
    let opts = ListOptions { limit: Some(500), ..ListOptions::default() };
    for (setting, store) in &stores {
        g.bench_function(*setting, |b| b.iter(|| black_box(store.list_json(&Collection::new("pods", Some("shop")), &opts).unwrap())));
    }
    g.finish();

    let mut g = c.benchmark_group("storage_create");
    let n = AtomicUsize::new(0);
    for (setting, store) in &stores {
        let object = new_object(pod(), "x");
        g.bench_function(*setting, |b| {
            b.iter(|| {
                let mut o = object.clone();
                o["metadata"]["name"] = Value::String(format!("c-{}", n.fetch_add(1, Ordering::Relaxed)));
                black_box(store.create(&Collection::new("pods", Some("shop")), &o, &w).unwrap())
            });
        });
    }
    g.finish();
}

criterion_group!(benches, bench_fixtures, bench_store);
criterion_main!(benches);
