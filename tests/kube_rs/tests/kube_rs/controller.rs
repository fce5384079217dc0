//! The Widget controller (`fieldstore_kube_tests`) with kube-rs's `Controller` and `finalizer`
//! helper: converges, requeues on a status conflict, follows a spec change, and lets a deleted
//! Widget go after its cleanup — once in process, once over HTTP.

use crate::support::{eventually, install_widget_crd, server, Door};
use fieldstore_kube_tests::{Context, Widget, WidgetSpec, FINALIZER, MANAGER};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, ResourceExt};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_in_process() {
    controller_converges_and_finalizes(Door::InProcess).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_over_http() {
    controller_converges_and_finalizes(Door::Http).await;
}

async fn controller_converges_and_finalizes(door: Door) {
    let (_server, client) = server(door).await;
    install_widget_crd(&client).await;
    // The reconciler's first status write conflicts with a write made behind its back.
    let ctx = Context::new(client.clone(), 1);
    let controller = tokio::spawn(fieldstore_kube_tests::run(ctx.clone()));

    let widgets: Api<Widget> = Api::default_namespaced(client.clone());
    let config_maps: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    let settings = BTreeMap::from([("color".to_string(), "blue".to_string())]);
    let spec = WidgetSpec { replicas: 3, image: "nginx:1.27".into(), settings };
    let created = widgets.create(&PostParams::default(), &Widget::new("shop", spec)).await.unwrap();
    assert_eq!(created.metadata.generation, Some(1));

    // Convergence: the finalizer on, the status written for this generation.
    let widget = eventually("the Widget's status", || async {
        let w = widgets.get("shop").await.ok()?;
        let s = w.status.as_ref()?;
        (s.ready && s.observed_generation == w.metadata.generation && w.finalizers().iter().any(|f| f == FINALIZER)).then_some(w)
    })
    .await;
    assert_eq!(widget.uid(), created.uid());
    assert_eq!(widget.status.as_ref().unwrap().config_maps, 2);
    assert!(ctx.conflicts.load(Ordering::SeqCst) >= 1, "the status write after the concurrent change conflicted and was requeued");
    assert_eq!(widget.annotations().get("example.fieldstore.io/touched").map(String::is_empty), Some(false));

    // What it owns: applied by the controller's manager, the Widget its controller owner.
    let owner_uid = widget.uid().unwrap();
    let owned_by_widget = |refs: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference]| {
        assert_eq!(refs.len(), 1, "{refs:?}");
        let r = &refs[0];
        assert_eq!((r.api_version.as_str(), r.kind.as_str(), r.name.as_str()), ("example.fieldstore.io/v1", "Widget", "shop"));
        assert_eq!((r.uid.as_str(), r.controller, r.block_owner_deletion), (owner_uid.as_str(), Some(true), Some(true)));
    };
    let cm = config_maps.get("shop-settings").await.unwrap();
    assert_eq!(cm.data.as_ref().unwrap().get("color").map(String::as_str), Some("blue"));
    owned_by_widget(cm.owner_references());
    let managers: Vec<_> = cm.managed_fields().iter().map(|m| (m.manager.clone(), m.operation.clone())).collect();
    assert_eq!(managers, [(Some(MANAGER.to_string()), Some("Apply".to_string()))]);
    owned_by_widget(config_maps.get("shop-image").await.unwrap().owner_references());
    let deployment = deployments.get("shop").await.unwrap();
    owned_by_widget(deployment.owner_references());
    assert_eq!(deployment.spec.replicas, Some(3));

    // A spec change: a new generation, followed by the Deployment and the status.
    let patch = json!({"spec": {"replicas": 5}});
    let changed = widgets.patch("shop", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    assert_eq!(changed.metadata.generation, Some(2));
    eventually("the Deployment scaled to 5", || async { (deployments.get("shop").await.ok()?.spec.replicas == Some(5)).then_some(()) })
        .await;
    eventually("the status of generation 2", || async {
        (widgets.get("shop").await.ok()?.status?.observed_generation == Some(2)).then_some(())
    })
    .await;

    // Deletion: the Widget stays, Terminating, until the cleanup ran and the helper removed the
    // finalizer; then it is gone.
    let deleted = widgets.delete("shop", &DeleteParams::default()).await.unwrap();
    let terminating = deleted.left().expect("a Widget with a finalizer is answered, not gone");
    assert!(terminating.metadata.deletion_timestamp.is_some());
    eventually("the Widget gone", || async {
        match widgets.get("shop").await {
            Err(kube::Error::Api(e)) if e.code == 404 => Some(()),
            _ => None,
        }
    })
    .await;
    assert!(ctx.cleanups.load(Ordering::SeqCst) >= 1, "the finalizer's cleanup ran");
    assert!(matches!(config_maps.get("shop-settings").await, Err(kube::Error::Api(e)) if e.code == 404), "the cleanup deleted it");
    // No garbage collector (kube-controller-manager's) runs: what the Widget owned and the
    // cleanup left stays, its owner reference dangling — as on kube-apiserver alone.
    owned_by_widget(config_maps.get("shop-image").await.unwrap().owner_references());
    owned_by_widget(deployments.get("shop").await.unwrap().owner_references());
    controller.abort();
}

/// The status subresource through Server-Side Apply (`patch_status` with `Patch::Apply`, as many
/// kube-rs controllers write it): the status changes, the spec and generation do not; a status
/// sent to the main resource is ignored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_through_apply() {
    let (_server, client) = server(Door::InProcess).await;
    install_widget_crd(&client).await;
    let widgets: Api<Widget> = Api::default_namespaced(client);
    let spec = WidgetSpec { replicas: 1, image: "busybox".into(), settings: BTreeMap::new() };
    widgets.create(&PostParams::default(), &Widget::new("w", spec)).await.unwrap();
    let status = json!({"apiVersion": "example.fieldstore.io/v1", "kind": "Widget",
        "status": {"ready": true, "configMaps": 7, "observedGeneration": 1}});
    let pp = PatchParams::apply(MANAGER).force();
    let patched = widgets.patch_status("w", &pp, &Patch::Apply(&status)).await.unwrap();
    let s = patched.status.as_ref().unwrap();
    assert_eq!((s.ready, s.config_maps, s.observed_generation), (true, 7, Some(1)));
    assert_eq!((patched.metadata.generation, patched.spec.replicas), (Some(1), 1));
    let entry = patched.managed_fields().iter().find(|m| m.manager.as_deref() == Some(MANAGER)).unwrap();
    assert_eq!(entry.subresource.as_deref(), Some("status"));

    let main = json!({"apiVersion": "example.fieldstore.io/v1", "kind": "Widget", "metadata": {"name": "w"},
        "spec": {"replicas": 2, "image": "busybox"}, "status": {"ready": false, "configMaps": 0}});
    let applied = widgets.patch("w", &PatchParams::apply("someone").force(), &Patch::Apply(&main)).await.unwrap();
    assert_eq!((applied.metadata.generation, applied.spec.replicas), (Some(2), 2));
    assert_eq!(applied.status.as_ref().map(|s| (s.ready, s.config_maps)), Some((true, 7)), "status unchanged by the main resource");
}
