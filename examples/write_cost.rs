//! The engine's work per write, for callgrind: `write_cost OP N` opens a store in a temporary
//! directory (WAL sync off: the instructions, not the disk), makes 200 writes untimed, then N more
//! in the callgrind region `measure` (`--collect-atstart=no --toggle-collect='*measure*'`).
//! OP: `create` (1 KiB ConfigMaps), `update` (one data key of a 1 KiB ConfigMap changed by PUT),
//! `patch` (the same change by merge patch), `deployment` (creates of a Deployment),
//! `deployment_update` (a Deployment read, its image and replicas changed, written back by PUT),
//! `deployment_apply` (the same change by Server-Side Apply of the whole configuration, as
//! `kubectl apply --server-side` sends it), `cm_apply` (the history bench's ConfigMap: ten keys
//! of 90 characters applied by one manager, one key flipping between two values).
//! The callgrind region counts the writer's thread only; for every thread (the committer's
//! RocksDB write among them) run without the region at two N and take the difference.
//! `WRITE_COST_HISTORY=on|off` registers `configmaps` as `benches/history.rs` does, with field
//! history on or off; `WRITE_COST_INDEX=off` turns the owner index off: the history target's
//! "same store without it", counted.
#![allow(missing_docs)]

use fieldstore::{Collection, HistoryPolicy, ObjectKey, Options, PatchType, Store, TypeSpec, WriteOptions, WriteVerb};
use serde_json::{json, Value};

// The allocator `fieldstore serve` runs with (and the store benches), so the counts are the
// server's: glibc's malloc costs ~35 % more instructions on these writes.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[inline(never)]
fn measure(f: impl FnOnce()) {
    f();
}

fn configmap(i: usize) -> Value {
    let data: serde_json::Map<String, Value> = (0..8).map(|k| (format!("key{k}"), json!(format!("{i:08}-{}", "v".repeat(100))))).collect();
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("cm{i}"), "labels": {"app": "web", "tier": "a"}}, "data": data})
}

fn deployment(i: usize) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": format!("d{i}"), "labels": {"app": "web"}}, "spec": {
        "replicas": 3, "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
            {"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}], "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}}}]}}}})
}

/// The history bench's ConfigMap apply configuration; `flip` picks the changed key's value.
fn cm_config(flip: bool) -> Value {
    let data: serde_json::Map<String, Value> = (0..10)
        .map(|i| {
            let c = if i == 3 && flip { 'y' } else { char::from(b'a' + i as u8) };
            (format!("key-{i:02}"), json!(c.to_string().repeat(90)))
        })
        .collect();
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default", "labels": {"app": "bench"}}, "data": data})
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let op = args.get(1).map_or("create", String::as_str).to_string();
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1000);
    let dir = std::env::temp_dir().join(format!("fieldstore-write-cost-{}", std::process::id()));
    let index = std::env::var("WRITE_COST_INDEX").map_or(true, |v| v != "off");
    let store = Store::open(&dir, Options::default().sync(false).owner_index(index))?;
    if let Ok(history) = std::env::var("WRITE_COST_HISTORY") {
        let policy = if history == "off" { HistoryPolicy::off() } else { HistoryPolicy::default() };
        store.register(TypeSpec::new("", "v1", "ConfigMap", "configmaps").namespaced(true).with_history(policy))?;
    }
    let w = WriteOptions::new("bench");
    let ns = Some("default");
    let run = |i: usize| -> Result<(), fieldstore::Error> {
        match op.as_str() {
            "create" => store.create(&Collection::new("configmaps", ns), &configmap(i), &w).map(drop),
            "deployment" => store.create(&Collection::new("deployments.apps", ns), &deployment(i), &w).map(drop),
            "deployment_update" => {
                let mut o = store.get(&ObjectKey::new("deployments.apps", ns, "d0"), &Default::default())?;
                o["spec"]["replicas"] = json!(i % 7 + 1);
                o["spec"]["template"]["spec"]["containers"][0]["image"] = json!(format!("nginx:1.{i}"));
                store.update(&Collection::new("deployments.apps", ns), &o, &w).map(drop)
            }
            "deployment_apply" => {
                let mut o = deployment(0);
                o["spec"]["replicas"] = json!(i % 7 + 1);
                o["spec"]["template"]["spec"]["containers"][0]["image"] = json!(format!("nginx:1.{i}"));
                store
                    .write(WriteVerb::Apply, &Collection::new("deployments.apps", ns), &o, &WriteOptions::new("applier").force(true))
                    .map(drop)
            }
            "cm_apply" => store.apply(&Collection::new("configmaps", ns), &cm_config(i % 2 == 1), &WriteOptions::new("applier")).map(drop),
            "update" => {
                let mut o = store.get(&ObjectKey::new("configmaps", ns, "cm0"), &Default::default())?;
                o["data"]["key0"] = json!(format!("{i}"));
                store.update(&Collection::new("configmaps", ns), &o, &w).map(drop)
            }
            _ => store
                .patch(&ObjectKey::new("configmaps", ns, "cm0"), PatchType::Merge, &json!({"data": {"key0": format!("{i}")}}), &w)
                .map(drop),
        }
    };
    match op.as_str() {
        "create" | "deployment" | "cm_apply" => {}
        "deployment_update" | "deployment_apply" => drop(store.create(&Collection::new("deployments.apps", ns), &deployment(0), &w)?),
        _ => drop(store.create(&Collection::new("configmaps", ns), &configmap(0), &w)?),
    }
    for i in 0..200 {
        run(n + 1 + i)?;
    }
    let mut result = Ok(());
    measure(|| {
        for i in 0..n {
            if let Err(e) = run(i + 1) {
                result = Err(e);
                return;
            }
        }
    });
    result?;
    drop(store);
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
