//! FieldsV1 in its two forms: Kubernetes' JSON and fieldstore's binary encoding.
//!
//! The set is what the apiserver stores for a manager owning an associative list `spec.items`
//! keyed by `name`, with N items of five fields each:
//! `{"f:spec":{"f:items":{"k:{\"name\":\"item-0\"}":{".":{},"f:flag":{},"f:image":{},…},…}}}`.
//! One group per operation (`json_encode`, `json_decode`, `binary_encode`, `binary_decode`),
//! N swept from 100 to 50,000, throughput in bytes of the encoded form. Decoding is timed without
//! dropping the decoded set (the same cost for both forms). Sizes and their ratio are printed once
//! per N.
#![allow(clippy::unwrap_used, reason = "a measurement whose setup fails has nothing to measure: it stops there")]
#![allow(missing_docs, reason = "criterion_group! defines an undocumented public function")]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use fieldstore::codec::{fields_binary, fields_v1, Path, PathElement, Set};
use serde_json::json;
use std::hint::black_box;

// The `fieldstore` binary, whose store decodes these sets, runs on mimalloc; so do the benches.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const SIZES: [usize; 4] = [100, 1_000, 10_000, 50_000];
const ITEM_FIELDS: [&str; 5] = ["name", "image", "value", "port", "flag"];

/// The field set of `spec.items` with `n` items, each a member (`".":{}`) owning five fields.
fn list_set(n: usize) -> Set {
    let items = Path::fields(["spec", "items"]);
    let mut set = Set::new();
    for i in 0..n {
        let item = items.child(PathElement::key(vec![("name".into(), json!(format!("item-{i}")))]));
        set.insert(&item);
        for f in ITEM_FIELDS {
            set.insert(&item.child(PathElement::field(f)));
        }
    }
    set
}

/// A benchmark group swept over N, with fewer samples where one iteration takes long.
fn sweep(c: &mut Criterion, name: &str, run: impl Fn(&mut criterion::Bencher, &Case)) {
    let mut group = c.benchmark_group(name);
    for case in cases() {
        group.sample_size(if case.n >= 10_000 { 20 } else { 100 });
        let bytes = if name.starts_with("json") { case.json.len() } else { case.binary.len() };
        group.throughput(Throughput::Bytes(bytes as u64));
        group.bench_with_input(BenchmarkId::from_parameter(case.n), case, |b, case| run(b, case));
    }
    group.finish();
}

/// One N with its set in both encoded forms.
struct Case {
    n: usize,
    set: Set,
    json: Vec<u8>,
    binary: Vec<u8>,
}

/// The inputs, built once; the first call prints the sizes.
fn cases() -> &'static [Case] {
    static CASES: std::sync::OnceLock<Vec<Case>> = std::sync::OnceLock::new();
    CASES.get_or_init(|| {
        SIZES
            .iter()
            .map(|&n| {
                let set = list_set(n);
                let json = fields_v1::to_json(&set);
                let binary = fields_binary::encode(&set);
                assert_eq!(fields_binary::decode(&binary).expect("binary decodes"), set);
                println!(
                    "fields_v1 sizes N={n}: json {} bytes, binary {} bytes, binary/json {:.1}%",
                    json.len(),
                    binary.len(),
                    100.0 * binary.len() as f64 / json.len() as f64
                );
                Case { n, set, json, binary }
            })
            .collect()
    })
}

fn json_encode(c: &mut Criterion) {
    sweep(c, "json_encode", |b, case| b.iter(|| fields_v1::to_json(black_box(&case.set))));
}

fn json_decode(c: &mut Criterion) {
    sweep(c, "json_decode", |b, case| b.iter_with_large_drop(|| fields_v1::from_json(black_box(&case.json)).expect("decodes")));
}

fn binary_encode(c: &mut Criterion) {
    sweep(c, "binary_encode", |b, case| b.iter(|| fields_binary::encode(black_box(&case.set))));
}

fn binary_decode(c: &mut Criterion) {
    sweep(c, "binary_decode", |b, case| b.iter_with_large_drop(|| fields_binary::decode(black_box(&case.binary)).expect("decodes")));
}

criterion_group!(benches, json_encode, json_decode, binary_encode, binary_decode);
criterion_main!(benches);
