//! Kubernetes protobuf ⇄ JSON transcoding (`fieldstore::codec::k8s_protobuf`) against serde_json
//! on the same objects.
//!
//! Objects (realistic shapes, as kube-apiserver stores them): `pod` (two containers with ports,
//! env, resources, probes and mounts, volumes, managedFields, a running status), `deployment`
//! (a template of that pod, status with conditions), `endpointslice` (1,000 endpoints of one
//! address each, with conditions, targetRef, nodeName and zone), and `fixture_pod` (upstream's
//! `core.v1.Pod` fixture, every field set). Each object's JSON is Go's compact encoding (what the
//! transcoder writes), so both sides handle the same text.
//!
//! Group `protobuf`, one benchmark per operation and object:
//! - `json_parse`: `serde_json::from_slice::<Value>` of the JSON — the baseline of the ratios, the
//!   parse a JSON request or a JSON-stored object costs;
//! - `pb_to_json`: protobuf (an envelope's `raw`) → JSON text (`MessageType::to_json`), what
//!   serving a protobuf-stored object as JSON costs instead of that parse;
//! - `json_to_pb`: JSON text → protobuf (`MessageType::from_json`: parse and encode);
//! - `value_to_pb`: an already parsed `Value` → protobuf (`MessageType::from_value`);
//! - `json_serialize`: `serde_json::to_vec` of the `Value`, the JSON-side counterpart of encoding.
//!
//! `python3 benches/ratios.py protobuf json_parse` prints each op over `json_parse`. Sizes are
//! printed once.
#![allow(clippy::unwrap_used, reason = "a measurement whose setup fails has nothing to measure: it stops there")]
#![allow(missing_docs, reason = "criterion_group! defines an undocumented public function")]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use fieldstore::codec::k8s_protobuf::{JsonStyle, MessageType};
use fieldstore::codec::Envelope;
use serde_json::Value;
use std::hint::black_box;

#[path = "support/k8s_objects.rs"]
mod k8s_objects;
use k8s_objects::{deployment, endpoint_slice, pod};

// The `fieldstore` binary runs on mimalloc; so do the benches.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// One object in every form.
struct Case {
    name: &'static str,
    message: MessageType,
    json: Vec<u8>,
    value: Value,
    pb: Vec<u8>,
}

/// The inputs, built once; the first call prints the sizes.
fn cases() -> &'static [Case] {
    static CASES: std::sync::OnceLock<Vec<Case>> = std::sync::OnceLock::new();
    CASES.get_or_init(|| {
        let fixture = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/codec/tests/fixtures/k8s-api/core.v1.Pod.pb")).unwrap();
        let fixture_raw = Envelope::decode(&fixture).unwrap().raw;
        let pod_type = MessageType::for_kind("v1", "Pod").unwrap();
        let objects = [
            ("pod", pod_type, pod_type.from_value(&pod()).unwrap()),
            ("deployment", MessageType::for_kind("apps/v1", "Deployment").unwrap(), {
                MessageType::for_kind("apps/v1", "Deployment").unwrap().from_value(&deployment()).unwrap()
            }),
            ("endpointslice", MessageType::for_kind("discovery.k8s.io/v1", "EndpointSlice").unwrap(), {
                MessageType::for_kind("discovery.k8s.io/v1", "EndpointSlice").unwrap().from_value(&endpoint_slice(1_000)).unwrap()
            }),
            ("fixture_pod", pod_type, fixture_raw),
        ];
        objects
            .into_iter()
            .map(|(name, message, pb)| {
                // Normalise through the transcoder, so that the JSON is exactly what it writes.
                let json = message.to_json(&pb, JsonStyle::Compact).unwrap();
                let pb = message.from_json(&json).unwrap();
                assert_eq!(message.to_json(&pb, JsonStyle::Compact).unwrap(), json);
                let value: Value = serde_json::from_slice(&json).unwrap();
                println!(
                    "protobuf sizes {name}: json {} bytes, protobuf {} bytes, protobuf/json {:.1}%",
                    json.len(),
                    pb.len(),
                    100.0 * pb.len() as f64 / json.len() as f64
                );
                Case { name, message, json, value, pb }
            })
            .collect()
    })
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("protobuf");
    for case in cases() {
        group.throughput(Throughput::Bytes(case.json.len() as u64));
        group.sample_size(if case.json.len() > 100_000 { 30 } else { 100 });
        group.bench_with_input(BenchmarkId::new("json_parse", case.name), case, |b, case| {
            b.iter(|| serde_json::from_slice::<Value>(black_box(&case.json)).unwrap())
        });
        group.bench_with_input(BenchmarkId::new("pb_to_json", case.name), case, |b, case| {
            b.iter(|| case.message.to_json(black_box(&case.pb), JsonStyle::Compact).unwrap())
        });
        group.bench_with_input(BenchmarkId::new("json_to_pb", case.name), case, |b, case| {
            b.iter(|| case.message.from_json(black_box(&case.json)).unwrap())
        });
        group.bench_with_input(BenchmarkId::new("value_to_pb", case.name), case, |b, case| {
            b.iter(|| case.message.from_value(black_box(&case.value)).unwrap())
        });
        group.bench_with_input(BenchmarkId::new("json_serialize", case.name), case, |b, case| {
            b.iter(|| serde_json::to_vec(black_box(&case.value)).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
