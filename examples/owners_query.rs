//! What an owner index query costs: `owners_query N` opens a store in a temporary directory
//! (WAL sync off), creates N 1 KiB ConfigMaps (eight data keys, two labels; one manager each,
//! a second manager's label on every other one), then times `Store::owners_of` for a few paths,
//! from one field of every object to everything, and prints microseconds per query (median of
//! 15) with the number of owners found. Run at two commits for the index layouts' trade.
#![allow(missing_docs)]

use fieldstore::{Collection, Options, Store, WriteOptions};
use serde_json::{json, Value};
use std::time::Instant;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn configmap(i: usize) -> Value {
    let data: serde_json::Map<String, Value> = (0..8).map(|k| (format!("key{k}"), json!(format!("{i:08}-{}", "v".repeat(100))))).collect();
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("cm{i}"), "labels": {"app": "web", "tier": "a"}}, "data": data})
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(2000);
    let dir = std::env::temp_dir().join(format!("fieldstore-owners-query-{}", std::process::id()));
    let store = Store::open(&dir, Options::default().sync(false))?;
    let configmaps = Collection::new("configmaps", Some("default"));
    for i in 0..n {
        store.create(&configmaps, &configmap(i), &WriteOptions::new("creator"))?;
        if i % 2 == 0 {
            let label = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("cm{i}"), "labels": {"owner": "b"}}});
            store.apply(&configmaps, &label, &WriteOptions::new("labeller"))?;
        }
    }
    println!("{n} ConfigMaps");
    for path in [".data.key3", ".metadata.labels.owner", ".metadata.labels", ".data", ""] {
        let mut times = Vec::new();
        let mut found = 0;
        for _ in 0..15 {
            let t = Instant::now();
            found = store.owners_of("configmaps", path)?.len();
            times.push(t.elapsed().as_secs_f64() * 1e6);
        }
        times.sort_by(f64::total_cmp);
        println!("owners_of {path:?}: {found} owners, {:.0} µs", times[times.len() / 2]);
    }
    drop(store);
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
