//! Runs the field manager's apply of the store's big-list object once (callgrind region `measure`)
//! or REPS times (min and median, ms): `fm_cost N OP`, OP parse (the config's JSON) | create |
//! reapply | change_one | second_manager | update_one. The ops of the apply bench, through the
//! field manager: the live object carries its managedFields, as the store keeps it.
#![allow(missing_docs)]

use fieldstore::engine::fieldmanager::Time;
use serde_json::Value;
use std::hint::black_box;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "../benches/support/shapes.rs"]
mod shapes;
#[path = "../benches/support/store_objects.rs"]
mod store_objects;
use store_objects::{biglist_config, biglist_field_manager};

#[inline(never)]
fn measure<T>(f: impl FnOnce() -> T) -> T {
    f()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let op = args.get(2).cloned().unwrap_or_else(|| "change_one".into());
    let fm = biglist_field_manager();
    let now = Time::from_unix_seconds(1_750_000_000);
    let cfg = biglist_config("big", n, false);
    let changed = biglist_config("big", n, true);
    let live = fm.apply(None, &cfg, "a", false, &now).expect("create").object;
    let mut second = biglist_config("big", 0, false);
    second["spec"] = shapes::second_config(shapes::Shape::List, n)["spec"].take();
    let mut upd = live.clone();
    upd["spec"]["items"][n / 2]["value"] = Value::String("updated".into());
    let body = serde_json::to_vec(&cfg).expect("json");
    // The updated object given up to `update`: copied outside the time and the measured region.
    let given = || (op == "update_one").then(|| upd.clone());
    let run = |live: &Value, given: Option<Value>| -> Value {
        match op.as_str() {
            "create" => fm.apply(None, &cfg, "a", false, &now).expect("apply").object,
            "reapply" => fm.apply(Some(live), &cfg, "a", false, &now).expect("apply").object,
            "change_one" => fm.apply(Some(live), &changed, "a", false, &now).expect("apply").object,
            "second_manager" => fm.apply(Some(live), &second, "b", false, &now).expect("apply").object,
            "update_one" => fm.update(Some(live), given.expect("object"), "c", &now).expect("update").object,
            "parse" => serde_json::from_slice(&body).expect("parse"),
            o => panic!("unknown op {o}"),
        }
    };
    if let Some(reps) = std::env::var("REPS").ok().and_then(|r| r.parse::<usize>().ok()) {
        let mut times = Vec::new();
        for _ in 0..reps.max(1) {
            let g = given();
            let t = std::time::Instant::now();
            let r = black_box(run(&live, g));
            times.push(t.elapsed().as_secs_f64() * 1e3);
            drop(r);
        }
        times.sort_by(f64::total_cmp);
        println!("fm {n} {op}: {:.2} ms (median {:.2})", times[0], times[times.len() / 2]);
        return;
    }
    let g = given();
    let r = measure(|| run(&live, g));
    drop(black_box(r));
}
