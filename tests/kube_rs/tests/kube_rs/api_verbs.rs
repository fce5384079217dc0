//! `Api<K>`'s verbs and Server-Side Apply through kube-rs, with the errors kube-rs decodes
//! (`kube::Error::Api` with kube-apiserver's code and reason), in process and over HTTP.

use crate::support::{server, Door};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams, ResourceExt};
use kube::core::Status;
use serde_json::json;
use std::collections::BTreeMap;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verbs_in_process() {
    verbs(Door::InProcess).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verbs_over_http() {
    verbs(Door::Http).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_conflict_and_force_in_process() {
    apply_conflict_and_force(Door::InProcess).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_conflict_and_force_over_http() {
    apply_conflict_and_force(Door::Http).await;
}

/// The API error of a failed call.
fn api_error<T: std::fmt::Debug>(r: Result<T, kube::Error>) -> Status {
    match r {
        Err(kube::Error::Api(e)) => *e,
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn config_map(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(BTreeMap::from([("tier".into(), "web".into())])),
            ..ObjectMeta::default()
        },
        data: Some(data.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
        ..ConfigMap::default()
    }
}

async fn verbs(door: Door) {
    let (_server, client) = server(door).await;
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let pp = PostParams::default();
    let created = api.create(&pp, &config_map("web", &[("a", "1")])).await.unwrap();
    assert_eq!(created.namespace().as_deref(), Some("default"));
    assert!(created.uid().is_some() && created.resource_version().is_some() && created.creation_timestamp().is_some());
    let e = api_error(api.create(&pp, &config_map("web", &[])).await);
    assert_eq!((e.code, e.reason.as_str()), (409, "AlreadyExists"));

    let got = api.get("web").await.unwrap();
    assert_eq!(got.resource_version(), created.resource_version());
    api.create(&pp, &config_map("db", &[])).await.unwrap();
    let mut other = config_map("other", &[]);
    other.metadata.labels = None;
    api.create(&pp, &other).await.unwrap();
    let listed = api.list(&ListParams::default().labels("tier=web")).await.unwrap();
    let names: Vec<_> = listed.items.iter().map(ResourceExt::name_any).collect();
    assert_eq!(names, ["db", "web"]);
    assert!(listed.metadata.resource_version.is_some());

    let mut changed = got.clone();
    changed.data = Some(BTreeMap::from([("a".into(), "2".into())]));
    let replaced = api.replace("web", &pp, &changed).await.unwrap();
    assert_eq!(replaced.data.as_ref().unwrap()["a"], "2");
    assert_ne!(replaced.resource_version(), got.resource_version());
    // The same replace again carries the old resourceVersion: a conflict.
    let e = api_error(api.replace("web", &pp, &changed).await);
    assert_eq!((e.code, e.reason.as_str()), (409, "Conflict"));

    api.delete("web", &DeleteParams::default()).await.unwrap();
    let e = api_error(api.get("web").await);
    assert_eq!((e.code, e.reason.as_str()), (404, "NotFound"));
    assert_eq!(api.get_opt("web").await.unwrap(), None);
    let e = api_error(api.delete("web", &DeleteParams::default()).await);
    assert_eq!(e.code, 404);

    // A namespace that does not exist: 404, as kube-apiserver.
    let elsewhere: Api<ConfigMap> = Api::namespaced(client, "missing");
    let e = api_error(elsewhere.create(&pp, &config_map("x", &[])).await);
    assert_eq!((e.code, e.reason.as_str()), (404, "NotFound"));
}

async fn apply_conflict_and_force(door: Door) {
    let (_server, client) = server(door).await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let alice = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shared"}, "data": {"owner": "alice", "a": "1"}});
    api.patch("shared", &PatchParams::apply("alice"), &Patch::Apply(&alice)).await.unwrap();
    let bob = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shared"}, "data": {"owner": "bob", "b": "1"}});
    let e = api_error(api.patch("shared", &PatchParams::apply("bob"), &Patch::Apply(&bob)).await);
    assert_eq!((e.code, e.reason.as_str()), (409, "Conflict"));
    assert!(e.message.contains(r#"conflict with "alice""#) && e.message.contains(".data.owner"), "{}", e.message);
    assert_eq!(api.get("shared").await.unwrap().data.unwrap()["owner"], "alice", "a failed apply changes nothing");

    let forced = api.patch("shared", &PatchParams::apply("bob").force(), &Patch::Apply(&bob)).await.unwrap();
    let data = forced.data.as_ref().unwrap();
    assert_eq!((data["owner"].as_str(), data["a"].as_str(), data["b"].as_str()), ("bob", "1", "1"));
    let owns = |manager: &str| {
        let entry = forced.managed_fields().iter().find(|m| m.manager.as_deref() == Some(manager)).unwrap();
        assert_eq!(entry.operation.as_deref(), Some("Apply"));
        let fields = &entry.fields_v1.as_ref().unwrap().0["f:data"];
        let mut keys: Vec<_> = fields.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        keys
    };
    assert_eq!(owns("bob"), ["f:b", "f:owner"]);
    assert_eq!(owns("alice"), ["f:a"], "forcing took .data.owner from alice");
}

/// kube-rs's discovery, both ways it asks (the group documents, and aggregated discovery), finds
/// the built-in kinds and a CRD with their capabilities; a dynamic `Api` over what it found works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_and_dynamic_objects() {
    use kube::core::{DynamicObject, GroupVersionKind};
    use kube::discovery::{Discovery, Scope};
    let (_server, client) = server(Door::InProcess).await;
    crate::support::install_widget_crd(&client).await;
    let widget = GroupVersionKind::gvk("example.fieldstore.io", "v1", "Widget");
    let deployment = GroupVersionKind::gvk("apps", "v1", "Deployment");
    for aggregated in [false, true] {
        let discovery = Discovery::new(client.clone());
        let discovery = if aggregated { discovery.run_aggregated().await } else { discovery.run().await }.unwrap();
        let (resource, caps) = discovery.resolve_gvk(&widget).unwrap_or_else(|| panic!("Widget (aggregated: {aggregated})"));
        assert_eq!((resource.plural.as_str(), caps.scope.clone()), ("widgets", Scope::Namespaced));
        assert!(caps.subresources.iter().any(|(r, _)| r.plural == "widgets/status" || r.plural == "status"), "{:?}", caps.subresources);
        let (resource, caps) = discovery.resolve_gvk(&deployment).unwrap();
        assert_eq!((resource.plural.as_str(), caps.scope), ("deployments", Scope::Namespaced));
        assert!(discovery.has_group("") && discovery.has_group("events.k8s.io"));

        let (widgets, _) = discovery.resolve_gvk(&widget).unwrap();
        let api: Api<DynamicObject> = Api::default_namespaced_with(client.clone(), &widgets);
        let name = format!("dyn-{aggregated}");
        let obj = DynamicObject::new(&name, &widgets).data(json!({"spec": {"replicas": 1, "image": "x"}}));
        api.create(&PostParams::default(), &obj).await.unwrap();
        let got = api.get(&name).await.unwrap();
        assert_eq!(got.data["spec"]["replicas"], 1);
        assert_eq!(got.types.map(|t| t.kind), Some("Widget".to_string()));
    }
}
