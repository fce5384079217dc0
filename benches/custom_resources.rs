//! The custom-resource contract per apply (issue 35): what defaulting, validation of the
//! OpenAPI keywords, CEL rules (two on the spec, one per list item) and ratcheting cost on a custom resource of ~1 KiB and on one holding a
//! 10,000-item list, beside the whole apply of the same object through the store (a dry run:
//! everything an apply does but the commit), so the contract's share of an apply shows.
//!
//! Groups, per size (`small`: ~1 KiB, `large`: 10,000 list items):
//! - `contract/create`: defaults + validation of the applied object, as on create;
//! - `contract/update`: the same with the live object (ratcheting compares every value);
//! - `apply`: `Store::apply` of the object over its live version (dry run), contract included.
#![allow(clippy::unwrap_used, reason = "a measurement whose setup fails has nothing to measure: it stops there")]
#![allow(missing_docs, reason = "criterion_group! defines an undocumented public function")]

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion};
use fieldstore::engine::crd::{defaults, validation, Structural};
use fieldstore::engine::store::{Collection, Options, Store, WriteOptions};
use serde_json::{json, Value};
use std::hint::black_box;
use std::time::Duration;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const CRDS: &str = "customresourcedefinitions.apiextensions.k8s.io";

/// A schema with the usual keywords: bounds, enums, patterns, formats, defaults, a map list.
fn schema() -> Value {
    json!({"type": "object", "properties": {
        "spec": {"type": "object", "required": ["image"],
          "x-kubernetes-validations": [{"rule": "self.replicas <= 1000", "message": "too many replicas"},
                                       {"rule": "!has(self.owner) || self.owner.endsWith('@example.com')"}],
          "properties": {
            "replicas": {"type": "integer", "minimum": 0, "maximum": 1000, "default": 1},
            "image": {"type": "string", "maxLength": 256, "pattern": "^[a-z0-9./:-]+$"},
            "mode": {"type": "string", "enum": ["fast", "slow"], "default": "fast"},
            "owner": {"type": "string", "format": "email"},
            "labels": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 63}},
            "items": {"type": "array", "maxItems": 20000, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
              "items": {"type": "object", "required": ["name"], "properties": {
                "name": {"type": "string", "maxLength": 64},
                "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                "protocol": {"type": "string", "enum": ["TCP", "UDP"], "default": "TCP"},
                "weight": {"type": "number", "minimum": 0},
                "enabled": {"type": "boolean", "default": true}},
              "x-kubernetes-validations": [{"rule": "self.port > 0 && self.name.startsWith('item-')"}]}}}},
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}})
}

fn object(items: usize) -> Value {
    let items: Vec<Value> = (0..items)
        .map(|i| json!({"name": format!("item-{i:05}"), "port": 1 + i % 65000, "protocol": "TCP", "weight": 0.5, "enabled": true}))
        .collect();
    json!({"apiVersion": "bench.example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "default"},
        "spec": {"replicas": 3, "image": "registry.example.com/app:1.2.3", "mode": "fast", "owner": "ops@example.com",
            "labels": {"app": "web", "tier": "frontend", "team": "payments"}, "items": items}})
}

fn bench(c: &mut Criterion) {
    let s = Structural::read(&schema());
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), Options::default().max_object_bytes(64 << 20)).unwrap();
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.bench.example.com"},
        "spec": {"group": "bench.example.com", "scope": "Namespaced", "names": {"kind": "Widget", "plural": "widgets"},
          "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema()}}]}});
    store.create(&Collection::new(CRDS, None), &crd, &WriteOptions::new("bench")).unwrap();
    let widgets = Collection::new("widgets.bench.example.com", Some("default"));
    let mut g = c.benchmark_group("custom_resources");
    g.sample_size(20).measurement_time(Duration::from_secs(4));
    for (size, n) in [("small", 6), ("large", 10_000)] {
        let obj = object(n);
        let bytes = serde_json::to_vec(&obj).unwrap().len();
        eprintln!("custom_resources/{size}: {bytes} bytes");
        g.bench_with_input(BenchmarkId::new("contract/create", size), &obj, |b, obj| {
            b.iter_batched(
                || obj.clone(),
                |mut v| {
                    defaults::apply(&s, &mut v);
                    black_box(validation::validate(&s, &v, None))
                },
                BatchSize::LargeInput,
            )
        });
        let mut live = obj.clone();
        defaults::apply(&s, &mut live);
        let mut changed = obj.clone();
        changed["spec"]["replicas"] = json!(4);
        g.bench_with_input(BenchmarkId::new("contract/update", size), &changed, |b, obj| {
            b.iter_batched(
                || obj.clone(),
                |mut v| {
                    defaults::apply(&s, &mut v);
                    black_box(validation::validate(&s, &v, Some(&live)))
                },
                BatchSize::LargeInput,
            )
        });
        let name = format!("w-{size}");
        let mut applied = obj.clone();
        applied["metadata"]["name"] = json!(name);
        store.apply(&widgets, &applied, &WriteOptions::new("bench")).unwrap();
        let mut again = applied.clone();
        again["spec"]["replicas"] = json!(4);
        let dry = WriteOptions::new("bench").dry_run(true);
        g.bench_with_input(BenchmarkId::new("apply", size), &again, |b, obj| {
            b.iter(|| black_box(store.apply(&widgets, obj, &dry).unwrap()))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
