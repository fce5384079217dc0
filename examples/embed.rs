//! Embedding the store: open it in a temporary directory, register a CustomResourceDefinition,
//! apply an object as one field manager, watch it, change a field as another manager, and print
//! who set each field (`blame`). The crate-level example of `src/lib.rs`, printing what it does:
//! `cargo run --release --example embed`.

use fieldstore::{Collection, Options, PatchType, Store, TypeSpec, WatchEvent, WatchOptions, WriteOptions};
use serde_json::json;
use std::time::Duration;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let store = Store::open(dir.path(), Options::default())?;
    println!("opened a store in {}", dir.path().display());

    // A CRD gives the type its schema.
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "replicas": {"type": "integer"}, "image": {"type": "string"}}}}}}}]}});
    let spec = TypeSpec::from_crd(&crd)?;
    println!("registered {} {} ({})", spec.api_version(), spec.kind, spec.resource());
    store.register(spec)?;

    // "alice" applies her configuration (Server-Side Apply): she now owns both fields.
    let web = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "web"},
        "spec": {"replicas": 2, "image": "nginx:1.27"}});
    let widgets = Collection::new("widgets.example.com", Some("default"));
    let applied = store.apply(&widgets, &web, &WriteOptions::new("alice"))?;
    println!("alice applied default/web: resourceVersion {}", applied["metadata"]["resourceVersion"].as_str().unwrap_or(""));

    // A watch starts with the current objects, as ADDED events, then sends every change.
    let mut watch = store.watch(&widgets, &WatchOptions::default())?;
    let Some(WatchEvent::Added(added)) = watch.next_timeout(Duration::from_secs(5)) else { panic!("expected ADDED") };
    assert_eq!(added["spec"]["replicas"], 2);
    println!("watch: ADDED web, replicas {}", added["spec"]["replicas"]);

    // "autoscaler" changes one field with a merge patch and takes it over.
    let patch = json!({"spec": {"replicas": 5}});
    let autoscaler = WriteOptions::new("autoscaler");
    let key = widgets.key("web");
    store.patch(&key, PatchType::Merge, &patch, &autoscaler)?;
    println!("autoscaler patched .spec.replicas to 5");
    let Some(WatchEvent::Modified(modified)) = watch.next_timeout(Duration::from_secs(5)) else { panic!("expected MODIFIED") };
    assert_eq!(modified["spec"]["replicas"], 5);
    let rv = modified["metadata"]["resourceVersion"].as_str().unwrap_or("");
    println!("watch: MODIFIED web, replicas {}, resourceVersion {rv}", modified["spec"]["replicas"]);

    // Blame: every field with the last write that changed it and its owners now.
    let blame = store.blame(&key)?;
    println!("blame default/web:");
    for line in &blame {
        let by = match &line.last_change {
            Some(a) => format!("rev {} {} {}", a.revision, a.manager, a.operation),
            None => "(older than the history kept)".to_string(),
        };
        println!("  {:<28} {:<40} {:<26} owners {:?}", line.path, line.value.to_string(), by, line.owners);
    }
    // Who last wrote a field, and who owns it now.
    let writer = |path: &str| {
        let line = blame.iter().find(|l| l.path == path)?;
        Some((line.last_change.as_ref()?.manager.as_str(), line.owners.clone()))
    };
    assert_eq!(writer(".spec.replicas"), Some(("autoscaler", vec!["autoscaler".to_string()])));
    assert_eq!(writer(".spec.image"), Some(("alice", vec!["alice".to_string()])));

    // The store (and its watch) must be closed before the directory is removed.
    drop(watch);
    drop(store);
    Ok(())
}
