//! kube-rs on an embedded store, without a socket, then `fieldstore::testing`'s start-to-ready
//! and per-test figures (README, "Embed it"): `cargo run --release --example kube_client
//! --features testing`. `make test` runs it.
//!
//! The session: open a store, get a `kube::Client` in process, create a ConfigMap with `Api`,
//! apply to it as two field managers (a conflict, then `force`), and watch it change with
//! kube-rs's `watcher` (a streaming list). Then the figures: a fresh store per test, timed from
//! nothing to its first answered request (`GET /version` through the client) — empty, with the
//! built-in kinds, with those and 10 CRDs, served on a loopback port — and a whole test's cycle
//! (start, a create and a get, drop with the directory removed).

use fieldstore::testing::TestServer;
use fieldstore::{Options, Store};
use futures_util::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use serde_json::json;
use std::time::{Duration, Instant};

type Result<T, E = Box<dyn std::error::Error>> = std::result::Result<T, E>;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<()> {
    session().await?;
    figures().await
}

async fn session() -> Result<()> {
    let dir = tempfile::tempdir()?;
    // Namespaces as kube-apiserver has them: `default` and the others exist, objects need one.
    let store = Store::open(dir.path(), Options::default().namespace_lifecycle(true))?;
    store.ensure_namespaces()?;
    let client = fieldstore::in_process::kube_client(&store, "default");
    println!("kube-rs client in process on {}: server {}", dir.path().display(), client.apiserver_version().await?.git_version);

    let config_maps: Api<ConfigMap> = Api::default_namespaced(client.clone());
    // A watcher starts when first polled: its streaming list (nothing yet) ends with InitDone.
    let mut watch = watcher::watcher(config_maps.clone(), watcher::Config::default().streaming_lists()).boxed();
    while !matches!(tokio::time::timeout(Duration::from_secs(10), watch.next()).await?.ok_or("watch ended")??, watcher::Event::InitDone) {}
    let cm = serde_json::from_value(json!({"metadata": {"name": "settings"}, "data": {"color": "blue"}}))?;
    let created = config_maps.create(&PostParams::default(), &cm).await?;
    println!("created default/settings, resourceVersion {}", created.metadata.resource_version.unwrap_or_default());

    let alice = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"size": "small"}});
    config_maps.patch("settings", &PatchParams::apply("alice"), &Patch::Apply(&alice)).await?;
    let bob = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"size": "large"}});
    match config_maps.patch("settings", &PatchParams::apply("bob"), &Patch::Apply(&bob)).await {
        Err(kube::Error::Api(e)) => println!("bob's apply: {} {}: {}", e.code, e.reason, e.message),
        other => return Err(format!("expected a conflict, got {other:?}").into()),
    }
    let forced = config_maps.patch("settings", &PatchParams::apply("bob").force(), &Patch::Apply(&bob)).await?;
    let managers: Vec<_> = forced.metadata.managed_fields.unwrap_or_default().into_iter().filter_map(|m| m.manager).collect();
    println!("bob forced: data {:?}, managers {managers:?}", forced.data.unwrap_or_default());

    // The watch saw the object come and change.
    let mut sizes = Vec::new();
    while sizes.last().map(String::as_str) != Some("large") {
        let event = tokio::time::timeout(Duration::from_secs(10), watch.next()).await?.ok_or("watch ended")??;
        if let watcher::Event::Apply(cm) = event {
            sizes.push(cm.data.unwrap_or_default().remove("size").unwrap_or_else(|| "-".into()));
        }
    }
    println!("watcher saw size: {}", sizes.join(" -> "));
    Ok(())
}

/// Times `runs` runs of `start` (after one unmeasured), printing the median and the largest;
/// what a run answers (the server) is dropped after its time is taken.
async fn measure<T, F, Fut>(what: &str, runs: usize, mut start: F) -> Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    drop(start().await?);
    let mut took = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        let kept = start().await?;
        took.push(t.elapsed());
        drop(kept);
    }
    took.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!("  {what:<46} median {:6.2} ms   max {:6.2} ms   ({runs} runs)", ms(took[runs / 2]), ms(took[runs - 1]));
    Ok(())
}

/// A CRD of its own group, with a small schema and a status subresource.
fn crd(i: usize) -> serde_json::Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("things{i}.example{i}.io")},
        "spec": {"group": format!("example{i}.io"), "scope": "Namespaced",
            "names": {"kind": format!("Thing{i}"), "plural": format!("things{i}")},
            "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}, "image": {"type": "string"},
                        "settings": {"type": "object", "additionalProperties": {"type": "string"}}}},
                    "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}}}}}]}})
}

async fn figures() -> Result<()> {
    const RUNS: usize = 20;
    let kinds = fieldstore::engine::store::builtin_types().len();
    println!("fieldstore::testing, start to the first answered request (GET /version through kube-rs):");
    measure("empty (no built-in kinds)", RUNS, || async {
        let server = TestServer::builder().builtin_types(false).start()?;
        server.client().apiserver_version().await?;
        Ok(server)
    })
    .await?;
    measure(&format!("{kinds} built-in kinds, 4 namespaces"), RUNS, || async {
        let server = TestServer::start()?;
        server.client().apiserver_version().await?;
        Ok(server)
    })
    .await?;
    measure(&format!("{kinds} built-in kinds and 10 CRDs"), RUNS, || async {
        let server = (0..10).fold(TestServer::builder(), |b, i| b.crd(crd(i))).start()?;
        server.client().apiserver_version().await?;
        Ok(server)
    })
    .await?;
    measure(&format!("{kinds} built-in kinds, served on a loopback port"), RUNS, || async {
        let mut server = TestServer::start()?;
        server.http_client().await?.apiserver_version().await?;
        Ok(server)
    })
    .await?;
    measure("a test: start, create, get, drop (dir removed)", RUNS, || async {
        let server = TestServer::start()?;
        let api: Api<ConfigMap> = Api::default_namespaced(server.client());
        let cm = serde_json::from_value(json!({"metadata": {"name": "c"}, "data": {"k": "v"}}))?;
        api.create(&PostParams::default(), &cm).await?;
        api.get("c").await?;
        drop(api);
        drop(server);
        Ok(())
    })
    .await
}
