//! Patches on large objects, against the cost of parsing the live object.
//!
//! Two shapes, N = 1,000, 10,000 and 50,000:
//! - `patch/list`: `spec.items`, a list of N items (5 scalars each) keyed by `name`
//!   (`x-kubernetes-list-type: map`, so strategic merge patch merges it by key). Operations:
//!   `smp_change_one` (a patch naming one item, as `kubectl patch` sends it),
//!   `smp_change_one_ordered` (the same change as kubectl's two-way diff computes it, with a
//!   `$setElementOrder` of all N keys), `json_patch_change_one` (a `replace` at one item's
//!   pointer), `smp_create_two_way` (computing the patch from two N-item objects);
//! - `patch/map`: `data`, a map of N string keys. Operations: `merge_patch_change_one` (a JSON
//!   merge patch changing one key), `smp_change_one` (the same as a strategic merge patch).
//!
//! `parse` in each group times `serde_json::from_slice` of the live object, the baseline of the
//! ratios (`python3 benches/ratios.py patch parse`); `clone` times copying the live object, the
//! floor of any patch that leaves the live object untouched. `BENCH_CLOCK=cpu` measures thread
//! CPU time instead of wall time (see [`Clock`]), for figures that hold on a busy machine.
//!
//! Every operation includes what the API does for the caller: copying the live object (it is
//! never modified). Results (and parsed objects) are dropped outside the timing
//! (`iter_with_large_drop`): freeing a large object is the caller's business, and costs the same
//! after a parse as after a patch. The live object is decoded from its JSON bytes, as a store
//! holds it, so its memory layout is that of a decoded object.
#![allow(clippy::unwrap_used, reason = "a measurement whose setup fails has nothing to measure: it stops there")]
#![allow(missing_docs, reason = "criterion_group! defines an undocumented public function")]

use criterion::measurement::{Measurement, ValueFormatter};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput};
use fieldstore::engine::patch::{create_two_way, json_patch, merge_patch, strategic_merge, PatchMeta};
use fieldstore::engine::schema::parse_smd_yaml;
use serde_json::{json, Value};
use std::hint::black_box;
use std::time::Duration;

const SIZES: [usize; 3] = [1_000, 10_000, 50_000];

/// The clock: wall time, or with `BENCH_CLOCK=cpu` the thread's CPU time as the scheduler
/// accounts it (`/proc/thread-self/schedstat`). On a shared, loaded machine wall time also
/// counts the time the thread waits for a CPU; CPU time does not. The scheduler updates it at
/// ticks, so single samples are coarse, but criterion's many samples average that out.
struct Clock {
    cpu: bool,
}

impl Clock {
    fn from_env() -> Self {
        let cpu = std::env::var("BENCH_CLOCK").is_ok_and(|v| v == "cpu") && thread_cpu_ns().is_some();
        Clock { cpu }
    }

    fn now(&self) -> u64 {
        static BASE: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        if self.cpu {
            thread_cpu_ns().unwrap_or(0)
        } else {
            let base = BASE.get_or_init(std::time::Instant::now);
            u64::try_from(base.elapsed().as_nanos()).unwrap_or(u64::MAX)
        }
    }
}

fn thread_cpu_ns() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    stat.split_whitespace().next()?.parse().ok()
}

impl Measurement for Clock {
    type Intermediate = u64;
    type Value = u64;

    fn start(&self) -> u64 {
        self.now()
    }
    fn end(&self, start: u64) -> u64 {
        self.now().saturating_sub(start)
    }
    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }
    fn zero(&self) -> u64 {
        0
    }
    fn to_f64(&self, v: &u64) -> f64 {
        *v as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        &Nanoseconds
    }
}

/// Formats nanoseconds as criterion's wall clock does.
struct Nanoseconds;

impl ValueFormatter for Nanoseconds {
    fn scale_values(&self, ns: f64, values: &mut [f64]) -> &'static str {
        let (factor, unit) = match ns {
            ns if ns < 1e3 => (1.0, "ns"),
            ns if ns < 1e6 => (1e-3, "µs"),
            ns if ns < 1e9 => (1e-6, "ms"),
            _ => (1e-9, "s"),
        };
        values.iter_mut().for_each(|v| *v *= factor);
        unit
    }

    fn scale_throughputs(&self, _typical: f64, throughput: &Throughput, values: &mut [f64]) -> &'static str {
        let per_op = match *throughput {
            Throughput::Bytes(b) | Throughput::BytesDecimal(b) => b as f64 / (1024.0 * 1024.0),
            Throughput::Elements(e) => e as f64,
        };
        values.iter_mut().for_each(|v| *v = per_op * 1e9 / *v);
        match throughput {
            Throughput::Elements(_) => "elem/s",
            _ => "MiB/s",
        }
    }

    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "ns"
    }
}

#[path = "support/shapes.rs"]
mod shapes;
use shapes::SCHEMA;

fn item(i: usize, value: &str) -> Value {
    json!({
        "name": format!("item-{i:06}"),
        "image": format!("registry.example/img-{i}:v1"),
        "value": value,
        "port": 8000 + (i % 1000) as i64,
        "flag": i & 1 == 0,
    })
}

fn list_object(n: usize, changed: Option<usize>) -> Value {
    let value = |i: usize| {
        if Some(i) == changed {
            "CHANGED".to_string()
        } else {
            format!("value-{i}")
        }
    };
    json!({ "spec": { "items": (0..n).map(|i| item(i, &value(i))).collect::<Vec<_>>() } })
}

fn map_object(n: usize) -> Value {
    let data: serde_json::Map<String, Value> = (0..n).map(|i| (format!("key-{i:06}"), Value::String(format!("value-{i}")))).collect();
    json!({ "data": data })
}

/// A group swept over N, with fewer samples where one iteration takes long.
fn group<'c>(c: &'c mut Criterion<Clock>, name: &str, n: usize, bytes: usize) -> criterion::BenchmarkGroup<'c, Clock> {
    let mut g = c.benchmark_group(name);
    g.throughput(Throughput::Bytes(bytes as u64));
    if std::env::var("BENCH_CLOCK").is_ok_and(|v| v == "cpu") {
        // Few equal samples, each long enough for the scheduler's CPU-time accounting.
        g.sampling_mode(SamplingMode::Flat).sample_size(10);
        return g;
    }
    if n >= 10_000 {
        g.sample_size(20).warm_up_time(Duration::from_millis(500));
    }
    g
}

fn bench_list(c: &mut Criterion<Clock>) {
    let schema = parse_smd_yaml(SCHEMA).expect("bench schema");
    let meta = PatchMeta::new(&schema, "root").expect("root type");
    for n in SIZES {
        let body = serde_json::to_vec(&list_object(n, None)).expect("serialize");
        let live: Value = serde_json::from_slice(&body).expect("decode");
        let target = n / 2;
        let name = format!("item-{target:06}");
        let smp = json!({"spec": {"items": [{"name": name, "value": "CHANGED"}]}});
        let modified = list_object(n, Some(target));
        let ordered = create_two_way(&live, &modified, &meta).expect("two-way patch");
        assert!(ordered["spec"]["$setElementOrder/items"].as_array().is_some_and(|o| o.len() == n));
        let jp = json!([{"op": "replace", "path": format!("/spec/items/{target}/value"), "value": "CHANGED"}]);
        for (p, what) in [(&smp, "smp"), (&ordered, "ordered smp")] {
            assert_eq!(strategic_merge(&live, p, &meta).expect(what), modified, "{what}");
        }
        assert_eq!(json_patch(&live, &jp).expect("json patch"), modified);

        let mut g = group(c, "patch/list", n, body.len());
        g.bench_with_input(BenchmarkId::new("parse", n), &body, |b, body| {
            b.iter_with_large_drop(|| serde_json::from_slice::<Value>(black_box(body)).expect("parse"))
        });
        g.bench_with_input(BenchmarkId::new("clone", n), &n, |b, _| b.iter_with_large_drop(|| black_box(&live).clone()));
        g.bench_with_input(BenchmarkId::new("smp_change_one", n), &n, |b, _| {
            b.iter_with_large_drop(|| strategic_merge(black_box(&live), black_box(&smp), &meta).expect("smp"))
        });
        g.bench_with_input(BenchmarkId::new("smp_change_one_ordered", n), &n, |b, _| {
            b.iter_with_large_drop(|| strategic_merge(black_box(&live), black_box(&ordered), &meta).expect("smp"))
        });
        g.bench_with_input(BenchmarkId::new("json_patch_change_one", n), &n, |b, _| {
            b.iter_with_large_drop(|| json_patch(black_box(&live), black_box(&jp)).expect("json patch"))
        });
        g.bench_with_input(BenchmarkId::new("smp_create_two_way", n), &n, |b, _| {
            b.iter_with_large_drop(|| create_two_way(black_box(&live), black_box(&modified), &meta).expect("two-way"))
        });
        g.finish();
    }
}

fn bench_map(c: &mut Criterion<Clock>) {
    let schema = parse_smd_yaml(SCHEMA).expect("bench schema");
    let meta = PatchMeta::new(&schema, "root").expect("root type");
    for n in SIZES {
        let body = serde_json::to_vec(&map_object(n)).expect("serialize");
        let live: Value = serde_json::from_slice(&body).expect("decode");
        let patch = json!({"data": {format!("key-{:06}", n / 2): "CHANGED"}});
        let mut want = live.clone();
        want["data"][format!("key-{:06}", n / 2)] = json!("CHANGED");
        assert_eq!(merge_patch(&live, &patch), want);
        assert_eq!(strategic_merge(&live, &patch, &meta).expect("smp"), want);

        let mut g = group(c, "patch/map", n, body.len());
        g.bench_with_input(BenchmarkId::new("parse", n), &body, |b, body| {
            b.iter_with_large_drop(|| serde_json::from_slice::<Value>(black_box(body)).expect("parse"))
        });
        g.bench_with_input(BenchmarkId::new("clone", n), &n, |b, _| b.iter_with_large_drop(|| black_box(&live).clone()));
        g.bench_with_input(BenchmarkId::new("merge_patch_change_one", n), &n, |b, _| {
            b.iter_with_large_drop(|| merge_patch(black_box(&live), black_box(&patch)))
        });
        g.bench_with_input(BenchmarkId::new("smp_change_one", n), &n, |b, _| {
            b.iter_with_large_drop(|| strategic_merge(black_box(&live), black_box(&patch), &meta).expect("smp"))
        });
        g.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().with_measurement(Clock::from_env());
    targets = bench_list, bench_map
}
criterion_main!(benches);
