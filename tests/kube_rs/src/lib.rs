//! The operator kube-rs's tests run against fieldstore: a `Widget` custom resource
//! (`example.fieldstore.io/v1`) and its controller, written as a kube-rs operator is, with
//! nothing fieldstore-specific in it.
//!
//! For each Widget the reconciler applies (Server-Side Apply, field manager
//! [`MANAGER`]) two ConfigMaps and a Deployment, each with the Widget as its controller owner,
//! then writes the Widget's `status` through the status subresource with the `resourceVersion`
//! it read, so that a concurrent write makes it fail with 409 Conflict, and the error policy
//! requeues it. kube-rs's `finalizer` helper adds [`FINALIZER`] first (a JSON patch `test
//! /metadata/finalizers null`, then `add`); when the Widget is deleted the cleanup deletes its
//! `-settings` ConfigMap and the helper removes the finalizer, letting the Widget go.

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, ResourceExt};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::finalizer::{finalizer, Event as Finalizer};
use kube::runtime::watcher;
use kube::{Client, CustomResource, Resource};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The field manager of the controller's writes.
pub const MANAGER: &str = "widget-controller";
/// The finalizer the controller puts on every Widget.
pub const FINALIZER: &str = "example.fieldstore.io/cleanup";

/// What a Widget asks for.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(group = "example.fieldstore.io", version = "v1", kind = "Widget", namespaced, status = "WidgetStatus", shortname = "wd")]
pub struct WidgetSpec {
    /// Replicas of its Deployment.
    pub replicas: i32,
    /// The Deployment's image.
    pub image: String,
    /// Settings, copied into the `-settings` ConfigMap.
    #[serde(default)]
    pub settings: BTreeMap<String, String>,
}

/// What the controller observed.
#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WidgetStatus {
    /// The generation the status describes.
    pub observed_generation: Option<i64>,
    /// ConfigMaps the controller keeps for the Widget.
    pub config_maps: i32,
    /// Whether everything the Widget asks for was applied.
    pub ready: bool,
}

/// The reconciler's failures.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An API call failed.
    #[error(transparent)]
    Kube(#[from] kube::Error),
    /// The finalizer helper failed (its reconcile branch, or adding/removing the finalizer).
    #[error(transparent)]
    Finalizer(#[from] Box<kube::runtime::finalizer::Error<Error>>),
}

/// What the controller shares between reconciles, and what it counts for the tests.
pub struct Context {
    /// The client.
    pub client: Client,
    /// Reconciles run.
    pub reconciles: AtomicUsize,
    /// Reconciles that failed with 409 Conflict and were requeued.
    pub conflicts: AtomicUsize,
    /// Cleanups run by the finalizer (Widgets deleted).
    pub cleanups: AtomicUsize,
    /// Times left to change the Widget behind the reconciler's back between its read and its
    /// status write (another writer, as in a busy cluster), so that the write conflicts.
    pub interfere: AtomicUsize,
}

impl Context {
    /// A context over `client`, which makes `interfere` status writes conflict.
    pub fn new(client: Client, interfere: usize) -> Arc<Context> {
        Arc::new(Context {
            client,
            reconciles: AtomicUsize::new(0),
            conflicts: AtomicUsize::new(0),
            cleanups: AtomicUsize::new(0),
            interfere: AtomicUsize::new(interfere),
        })
    }
}

/// Runs the controller on every namespace until the stream ends (drop the future to stop it).
pub async fn run(ctx: Arc<Context>) {
    let client = ctx.client.clone();
    Controller::new(Api::<Widget>::all(client.clone()), watcher::Config::default())
        .owns(Api::<ConfigMap>::all(client.clone()), watcher::Config::default())
        .owns(Api::<Deployment>::all(client), watcher::Config::default())
        .run(reconcile, error_policy, ctx)
        .for_each(|_| futures::future::ready(()))
        .await;
}

async fn reconcile(widget: Arc<Widget>, ctx: Arc<Context>) -> Result<Action, Error> {
    ctx.reconciles.fetch_add(1, Ordering::SeqCst);
    let ns = widget.namespace().unwrap_or_else(|| "default".into());
    let widgets: Api<Widget> = Api::namespaced(ctx.client.clone(), &ns);
    finalizer(&widgets, FINALIZER, widget, |event| async {
        match event {
            Finalizer::Apply(w) => apply(&w, &ctx, &ns).await,
            Finalizer::Cleanup(w) => cleanup(&w, &ctx, &ns).await,
        }
    })
    .await
    .map_err(|e| Error::Finalizer(Box::new(e)))
}

/// Applies what the Widget owns, then writes its status.
async fn apply(w: &Widget, ctx: &Context, ns: &str) -> Result<Action, Error> {
    let name = w.name_any();
    // The controller reference, blocking the owner's foreground deletion as controller-runtime's
    // `SetControllerReference` makes it (kube-rs leaves `blockOwnerDeletion` unset).
    let owner: Vec<_> = w.controller_owner_ref(&()).map(|o| OwnerReference { block_owner_deletion: Some(true), ..o }).into_iter().collect();
    let pp = PatchParams::apply(MANAGER).force();
    let config_maps: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), ns);
    let owned = |name: String| json!({"name": name, "namespace": ns, "ownerReferences": owner, "labels": {"app.kubernetes.io/managed-by": MANAGER}});
    let settings = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": owned(format!("{name}-settings")), "data": w.spec.settings});
    config_maps.patch(&format!("{name}-settings"), &pp, &Patch::Apply(&settings)).await?;
    let image =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": owned(format!("{name}-image")), "data": {"image": w.spec.image}});
    config_maps.patch(&format!("{name}-image"), &pp, &Patch::Apply(&image)).await?;
    let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), ns);
    let labels = json!({"app.kubernetes.io/name": name});
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": owned(name.clone()),
        "spec": {"replicas": w.spec.replicas, "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "main", "image": w.spec.image}]}}}});
    deployments.patch(&name, &pp, &Patch::Apply(&deployment)).await?;

    let widgets: Api<Widget> = Api::namespaced(ctx.client.clone(), ns);
    if ctx.interfere.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok() {
        let touch =
            json!({"metadata": {"annotations": {"example.fieldstore.io/touched": ctx.reconciles.load(Ordering::SeqCst).to_string()}}});
        widgets.patch(&name, &PatchParams::default(), &Patch::Merge(&touch)).await?;
    }
    let mut next = w.clone();
    next.status = Some(WidgetStatus { observed_generation: w.metadata.generation, config_maps: 2, ready: true });
    // `w`'s resourceVersion: 409 Conflict when the Widget changed since it was read.
    widgets.replace_status(&name, &PostParams::default(), &next).await?;
    Ok(Action::requeue(Duration::from_secs(300)))
}

/// Deletes the `-settings` ConfigMap; what else the Widget owns is left to the garbage collector.
async fn cleanup(w: &Widget, ctx: &Context, ns: &str) -> Result<Action, Error> {
    let config_maps: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), ns);
    match config_maps.delete(&format!("{}-settings", w.name_any()), &DeleteParams::default()).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 404 => {}
        Err(e) => return Err(e.into()),
    }
    ctx.cleanups.fetch_add(1, Ordering::SeqCst);
    Ok(Action::await_change())
}

/// Requeues at once after a conflict (the next reconcile reads the Widget again), later after
/// any other failure.
fn error_policy(_: Arc<Widget>, error: &Error, ctx: Arc<Context>) -> Action {
    if is_conflict(error) {
        ctx.conflicts.fetch_add(1, Ordering::SeqCst);
        return Action::requeue(Duration::from_millis(10));
    }
    Action::requeue(Duration::from_millis(500))
}

/// Whether the failure is a 409 Conflict from the API, at any depth.
pub fn is_conflict(error: &Error) -> bool {
    use kube::runtime::finalizer::Error as F;
    match error {
        Error::Kube(kube::Error::Api(e)) => e.code == 409,
        Error::Kube(_) => false,
        Error::Finalizer(f) => match f.as_ref() {
            F::ApplyFailed(e) | F::CleanupFailed(e) => is_conflict(e),
            F::AddFinalizer(kube::Error::Api(e)) | F::RemoveFinalizer(kube::Error::Api(e)) => e.code == 409,
            _ => false,
        },
    }
}
