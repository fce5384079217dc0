//! Runs one Server-Side Apply operation of the apply bench once, for instruction-count profiling
//! (`valgrind --tool=callgrind --toggle-collect='*measure*'`), where wall-clock timing is too noisy.
//!
//! Usage: `ssa_cost SHAPE N OP` with SHAPE list|listrand|map and OP parse|create|reapply|change_one|second_manager|update_one,
//! or create_owned|change_one_owned (the config given up to the engine, `Updater::apply_owned`;
//! its copy is made outside the time and the measured region).
//! With `REPS`, the parts of an op can be timed alone too: OP clone (a deep copy of the live object,
//! dropped within the time), copy (the same copy, dropped after it, as an op's result is),
//! equal (`live == config`: one read of both, the least any op comparing them does), validate,
//! compare, merge (`merge_and_compare`), fieldset (`to_field_set`), isset (`is_field_set_of`),
//! each on the config the default op (`reapply`) uses.
#![allow(missing_docs)]

use fieldstore::engine::schema::parse_smd_yaml;
use fieldstore::engine::{ManagedFields, ManagerKey, Schema, TypeRef, Updater};
use serde_json::{json, Value};
use std::hint::black_box;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "../benches/support/shapes.rs"]
mod shapes;
use shapes::{config, second_config, updated, Shape, SCHEMA};

#[inline(never)]
fn measure<T>(f: impl FnOnce() -> T) -> T {
    f()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let shape = match args.get(1).map(String::as_str) {
        Some("listrand") => Shape::ListRand,
        Some("map") => Shape::Map,
        _ => Shape::List,
    };
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let op = args.get(3).cloned().unwrap_or_else(|| "reapply".into());
    let schema: Schema = parse_smd_yaml(SCHEMA).expect("schema");
    let root: TypeRef = schema.named("root").expect("root");
    // As the field manager applies: the body is validated in the merge's walk.
    let up = Updater::new(&schema, &root).validating();
    let (a, b, c) = (ManagerKey::apply("a"), ManagerKey::apply("b"), ManagerKey::update("c", "v1"));
    let cfg = config(shape, n, None);
    let body = serde_json::to_vec(&cfg).expect("ser");
    let s = up.apply(&json!({}), &cfg, "v1", ManagedFields::new(), &a, false).expect("apply");
    let (live, mgrs) = (s.object.expect("created"), s.managers);
    let other = match op.as_str() {
        "change_one" | "change_one_owned" => config(shape, n, Some(n / 2)),
        "second_manager" => second_config(shape, n),
        "update_one" => updated(shape, &live, n),
        _ => cfg.clone(),
    };
    // With REPS set, time the operation instead (minimum and median of REPS runs, at least one; ms).
    if let Some(reps) = std::env::var("REPS").ok().and_then(|r| r.parse::<usize>().ok()) {
        let mut times: Vec<f64> = Vec::with_capacity(reps);
        // With COLD set, every run starts with the caches holding other data (a 96 MiB sweep),
        // as a request for one object finds them on a busy server.
        let mut sweep = if std::env::var_os("COLD").is_some() { vec![0u8; 96 << 20] } else { Vec::new() };
        for r in 0..reps.max(1) {
            for b in sweep.iter_mut().step_by(64) {
                *b = b.wrapping_add(r as u8);
            }
            black_box(&sweep);
            let m = mgrs.clone();
            let mut updated = None;
            let mut copied = None;
            // The owned ops' config, given up to the engine: copied outside the time.
            let given = op.ends_with("_owned").then(|| if op == "create_owned" { cfg.clone() } else { other.clone() });
            let t = std::time::Instant::now();
            let r = match op.as_str() {
                "parse" => {
                    black_box(serde_json::from_slice::<Value>(&body).expect("parse"));
                    None
                }
                "clone" => {
                    black_box(live.clone());
                    None
                }
                "copy" => {
                    copied = Some(live.clone());
                    None
                }
                "validate" => {
                    up.validate(&other).expect("valid");
                    None
                }
                "equal" => {
                    black_box(live == other);
                    None
                }
                "compare" => {
                    black_box(fieldstore::engine::typed::compare(&schema, &root, &live, &other).expect("compare"));
                    None
                }
                "fieldset" => {
                    black_box(fieldstore::engine::typed::to_field_set(&schema, &root, &other).expect("set"));
                    None
                }
                "isset" => {
                    black_box(fieldstore::engine::typed::is_field_set_of(&schema, &root, &other, &mgrs.get(&a).expect("a").set));
                    None
                }
                "merge" => {
                    black_box(fieldstore::engine::typed::merge_and_compare(&schema, &root, &live, &other, true).expect("merge"));
                    None
                }
                "create" => Some(up.apply(&json!({}), &cfg, "v1", ManagedFields::new(), &a, false).expect("apply")),
                "create_owned" => {
                    Some(up.apply_owned(&json!({}), given.expect("config"), "v1", ManagedFields::new(), &a, false).expect("apply"))
                }
                "change_one_owned" => Some(up.apply_owned(&live, given.expect("config"), "v1", m, &a, false).expect("apply")),
                "update_one" => {
                    updated = Some(up.update(&live, &other, "v1", m, &c).expect("update"));
                    None
                }
                "second_manager" => Some(up.apply(&live, &other, "v1", m, &b, false).expect("apply")),
                _ => Some(up.apply(&live, &other, "v1", m, &a, false).expect("apply")),
            };
            // As in the criterion bench: a created object is dropped within the time (`iter`),
            // the results of the ops on the live object after it (`iter_batched`).
            let (r, updated, copied) = black_box((r, updated, copied));
            let r = if op.starts_with("create") {
                drop(r);
                None
            } else {
                r
            };
            times.push(t.elapsed().as_secs_f64() * 1e3);
            drop((r, updated, copied));
        }
        times.sort_by(f64::total_cmp);
        let (best, median) = (times[0], times[times.len() / 2]);
        println!("{} {n} {op}: {best:.2} ms (median {median:.2})", args.get(1).map(String::as_str).unwrap_or("list"));
        return;
    }
    // Results of the ops on the live object are dropped outside the measured region, as
    // criterion's batched ops drop them outside the time; parse's and create's inside, as `iter`.
    let (applied, updated) = match op.as_str() {
        "parse" => {
            measure(|| drop(serde_json::from_slice::<Value>(&body).expect("parse")));
            (None, None)
        }
        "clone" => {
            measure(|| drop(black_box(live.clone())));
            (None, None)
        }
        "equal" => {
            measure(|| assert!(black_box(live == other), "the live object is the config"));
            (None, None)
        }
        "create" => {
            measure(|| drop(up.apply(&json!({}), &cfg, "v1", ManagedFields::new(), &a, false).expect("apply")));
            (None, None)
        }
        "create_owned" => {
            let given = cfg.clone();
            measure(|| drop(up.apply_owned(&json!({}), given, "v1", ManagedFields::new(), &a, false).expect("apply")));
            (None, None)
        }
        "change_one_owned" => {
            let given = other.clone();
            (Some(measure(|| up.apply_owned(&live, given, "v1", mgrs, &a, false).expect("apply"))), None)
        }
        "update_one" => (None, Some(measure(|| up.update(&live, &other, "v1", mgrs, &c).expect("update")))),
        "second_manager" => (Some(measure(|| up.apply(&live, &other, "v1", mgrs, &b, false).expect("apply"))), None),
        _ => (Some(measure(|| up.apply(&live, &other, "v1", mgrs, &a, false).expect("apply"))), None),
    };
    drop(black_box((applied, updated)));
}
