//! Server-Side Apply on large objects, against the cost of parsing the same request.
//!
//! Shape (the same as the structured-merge-diff oracle's bench, so its figures compare): a struct
//! root whose `spec.items` is a map list keyed by `name` (items of 5 scalars), and `data`, a
//! granular string map. Shapes: `list` (items in key order), `listrand` (the same items in a
//! pseudo-random key order, where structured-merge-diff turns quadratic), `map` (N keys in `data`).
//!
//! Operations, each from the state S left by A applying the N-item config to `{}`:
//! 1. `create`: A applies N items to `{}`;
//! 2. `reapply`: A re-applies the identical config (a no-op);
//! 3. `change_one`: A re-applies with one item's value changed;
//! 4. `second_manager`: B applies one new, disjoint item;
//! 5. `update_one`: C updates one field of one item.
//!
//! With `APPLY_COLD=1`, every timed run starts from caches holding other data (see `Cold`).
//!
//! `create_owned` and `change_one_owned` are ops 1 and 3 with the config given up to the engine
//! (`Updater::apply_owned`, as a request body just parsed), so that its parts are moved into the
//! object instead of copied.
//!
//!    Each op is timed as the engine serves a request: validating the parsed body and merging it,
//!    in one walk (`Updater::validating`, as the field manager applies). `parse` times
//!    `serde_json::from_slice` of the N-item request body, the baseline of the ratios.
//!
//! Group `apply/fieldmanager`: the same ops through `FieldManager` on the store's BigList type
//! (`support/store_objects.rs`, the `list` shape with apiVersion, kind and metadata), as the
//! store runs them: the live object carries its managedFields as JSON, which are decoded, and
//! written back into the result. Key order only, N = 10k and 50k; `parse` is the config's JSON.
#![allow(clippy::unwrap_used, reason = "a measurement whose setup fails has nothing to measure: it stops there")]
#![allow(missing_docs, reason = "criterion_group! defines an undocumented public function")]

use criterion::{criterion_group, criterion_main, BatchSize, Bencher, BenchmarkId, Criterion, Throughput};
use fieldstore::engine::schema::parse_smd_yaml;
use fieldstore::engine::{ManagedFields, ManagerKey, Schema, TypeRef, Updater};
use serde_json::{json, Value};
use std::cell::RefCell;
use std::hint::black_box;
use std::time::Duration;

// The `fieldstore` binary runs on mimalloc; the engine is measured under the same allocator
// (request parsing included, so the ratios compare like with like).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "support/shapes.rs"]
mod shapes;
#[path = "support/store_objects.rs"]
mod store_objects;
use shapes::{config, second_config, updated, Shape, SCHEMA};

/// With `APPLY_COLD` set, each timed run starts with the caches holding other data: the untimed
/// setup first writes a line of every 64 bytes of a 96 MiB buffer, as a request for one object
/// finds the caches on a busy server. Results of every op are then dropped outside the time.
struct Cold(Option<RefCell<Vec<u8>>>);

impl Cold {
    fn from_env() -> Self {
        Cold(std::env::var_os("APPLY_COLD").map(|_| RefCell::new(vec![0u8; 96 << 20])))
    }

    /// Times `routine` on what `setup` makes (outside the time), in a cold cache when asked.
    fn run<I, O>(&self, b: &mut Bencher<'_>, mut setup: impl FnMut() -> I, routine: impl FnMut(I) -> O) {
        b.iter_batched(
            || {
                if let Some(sweep) = &self.0 {
                    let mut sweep = sweep.borrow_mut();
                    for x in sweep.iter_mut().step_by(64) {
                        *x = x.wrapping_add(1);
                    }
                    black_box(&*sweep);
                }
                setup()
            },
            routine,
            BatchSize::LargeInput,
        )
    }

    fn on(&self) -> bool {
        self.0.is_some()
    }
}

fn bench_apply(c: &mut Criterion) {
    let cold = Cold::from_env();
    let schema: Schema = parse_smd_yaml(SCHEMA).expect("bench schema");
    let root: TypeRef = schema.named("root").expect("root type");
    let up = Updater::new(&schema, &root).validating();
    let (a, b) = (ManagerKey::apply("a"), ManagerKey::apply("b"));
    let cm = ManagerKey::update("c", "v1");
    let empty = json!({});

    for shape in [Shape::List, Shape::ListRand, Shape::Map] {
        for n in [100usize, 1_000, 10_000, 50_000] {
            let cfg = config(shape, n, None);
            let body = serde_json::to_vec(&cfg).expect("serialize");
            let cfg_changed = config(shape, n, Some(n / 2));
            let cfg_b = second_config(shape, n);
            let s = up.apply(&empty, &cfg, "v1", ManagedFields::new(), &a, false).expect("initial apply");
            let (live, mgrs) = (s.object.expect("created"), s.managers);
            let upd = updated(shape, &live, n);

            let slow = n >= 10_000;
            let mut g = c.benchmark_group(format!("apply/{}", shape.name()));
            g.throughput(Throughput::Bytes(body.len() as u64));
            if slow {
                g.sample_size(10).measurement_time(Duration::from_secs(4)).warm_up_time(Duration::from_millis(500));
            }
            g.bench_with_input(BenchmarkId::new("parse", n), &body, |bch, body| {
                if cold.on() {
                    cold.run(bch, || (), |()| serde_json::from_slice::<Value>(body).expect("parse"))
                } else {
                    bch.iter(|| serde_json::from_slice::<Value>(body).expect("parse"))
                }
            });
            g.bench_with_input(BenchmarkId::new("create", n), &n, |bch, _| {
                if cold.on() {
                    cold.run(bch, || (), |()| up.apply(&empty, &cfg, "v1", ManagedFields::new(), &a, false).expect("apply"))
                } else {
                    bch.iter(|| up.apply(&empty, &cfg, "v1", ManagedFields::new(), &a, false).expect("apply"))
                }
            });
            let run = |bch: &mut Bencher<'_>, config: &Value, key: &ManagerKey| {
                cold.run(bch, || mgrs.clone(), |m| up.apply(&live, config, "v1", m, key, false).expect("apply"))
            };
            g.bench_with_input(BenchmarkId::new("reapply", n), &n, |bch, _| run(bch, &cfg, &a));
            g.bench_with_input(BenchmarkId::new("change_one", n), &n, |bch, _| run(bch, &cfg_changed, &a));
            g.bench_with_input(BenchmarkId::new("second_manager", n), &n, |bch, _| run(bch, &cfg_b, &b));
            // The config given up to the engine, as a request body just parsed: its parts are
            // moved into the object, not copied (`apply_owned`). The config's copy is made
            // outside the time; the created object is dropped within it, as `create`'s.
            g.bench_with_input(BenchmarkId::new("create_owned", n), &n, |bch, _| {
                let create = |c| up.apply_owned(&empty, c, "v1", ManagedFields::new(), &a, false).expect("apply");
                if cold.on() {
                    cold.run(bch, || cfg.clone(), create)
                } else {
                    cold.run(bch, || cfg.clone(), |c| drop(create(c)))
                }
            });
            g.bench_with_input(BenchmarkId::new("change_one_owned", n), &n, |bch, _| {
                cold.run(bch, || (mgrs.clone(), cfg_changed.clone()), |(m, c)| up.apply_owned(&live, c, "v1", m, &a, false).expect("apply"))
            });
            g.bench_with_input(BenchmarkId::new("update_one", n), &n, |bch, _| {
                cold.run(bch, || mgrs.clone(), |m| up.update(&live, &upd, "v1", m, &cm).expect("update"))
            });
            g.finish();
        }
    }
}

fn bench_field_manager(c: &mut Criterion) {
    use fieldstore::engine::fieldmanager::Time;
    use store_objects::{biglist_config, biglist_field_manager};
    let fm = biglist_field_manager();
    let now = Time::from_unix_seconds(1_750_000_000);
    let mut g = c.benchmark_group("apply/fieldmanager");
    g.sample_size(10).measurement_time(Duration::from_secs(4)).warm_up_time(Duration::from_millis(500));
    for n in [10_000usize, 50_000] {
        let cfg = biglist_config("big", n, false);
        let body = serde_json::to_vec(&cfg).expect("serialize");
        let changed = biglist_config("big", n, true);
        let mut second = biglist_config("big", 0, false);
        second["spec"] = second_config(Shape::List, n)["spec"].take();
        let live = fm.apply(None, &cfg, "a", false, &now).expect("create").object;
        let mut upd = live.clone();
        upd["spec"]["items"][n / 2]["value"] = Value::String("updated".into());
        g.throughput(Throughput::Bytes(body.len() as u64));
        g.bench_with_input(BenchmarkId::new("parse", n), &body, |b, body| b.iter(|| serde_json::from_slice::<Value>(body).expect("parse")));
        g.bench_with_input(BenchmarkId::new("create", n), &n, |b, _| b.iter(|| fm.apply(None, &cfg, "a", false, &now).expect("apply")));
        let run = |b: &mut Bencher<'_>, config: &Value, manager: &str| {
            b.iter_batched(|| (), |()| fm.apply(Some(&live), config, manager, false, &now).expect("apply"), BatchSize::LargeInput)
        };
        g.bench_with_input(BenchmarkId::new("reapply", n), &n, |b, _| run(b, &cfg, "a"));
        g.bench_with_input(BenchmarkId::new("change_one", n), &n, |b, _| run(b, &changed, "a"));
        g.bench_with_input(BenchmarkId::new("second_manager", n), &n, |b, _| run(b, &second, "b"));
        // The updated object is given up to the field manager (as a request body is): its copy
        // is made outside the time.
        g.bench_with_input(BenchmarkId::new("update_one", n), &n, |b, _| {
            b.iter_batched(|| upd.clone(), |u| fm.update(Some(&live), u, "c", &now).expect("update"), BatchSize::LargeInput)
        });
    }
    g.finish();
}

criterion_group!(benches, bench_apply, bench_field_manager);
criterion_main!(benches);
