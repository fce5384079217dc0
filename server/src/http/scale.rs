//! The `scale` subresource of Deployments, ReplicaSets, StatefulSets and ReplicationControllers
//! (`kubectl scale`): an `autoscaling/v1` Scale read from the object, and writes of it (PUT, or a
//! merge / JSON / strategic patch of the Scale) that set the object's `spec.replicas`.

use super::negotiate::{self, PatchKind};
use super::reply::{encoded, Failure, Reply};
use super::request::{read_body, Ctx};
use crate::api::pb;
use crate::service::body;
use fieldstore_engine::patch::{PatchMeta, PatchType};
use fieldstore_engine::store::{GetOptions, WriteOptions};
use fieldstore_engine::Error;
use http::{Method, StatusCode};
use serde_json::{json, Value};

/// The resources with a `scale` subresource.
pub(crate) const SCALABLE: [&str; 4] = ["deployments.apps", "replicasets.apps", "statefulsets.apps", "replicationcontrollers"];

/// The Scale of an object.
fn scale_of(o: &Value) -> Value {
    let meta = o.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let pick = |k: &str| meta.get(k).cloned().unwrap_or(Value::Null);
    // The selector as a string, as kube-apiserver renders a label selector's matchLabels.
    let selector = match o.pointer("/spec/selector/matchLabels").or_else(|| o.pointer("/spec/selector")).and_then(Value::as_object) {
        Some(m) => m.iter().filter_map(|(k, v)| v.as_str().map(|v| format!("{k}={v}"))).collect::<Vec<_>>().join(","),
        None => String::new(),
    };
    json!({
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {"name": pick("name"), "namespace": pick("namespace"), "uid": pick("uid"),
            "resourceVersion": pick("resourceVersion"), "creationTimestamp": pick("creationTimestamp")},
        "spec": {"replicas": o.pointer("/spec/replicas").cloned().unwrap_or(json!(1))},
        "status": {"replicas": o.pointer("/status/replicas").cloned().unwrap_or(json!(0)), "selector": selector},
    })
}

/// Serves `…/NAME/scale`.
pub(crate) async fn serve(ctx: &Ctx<'_>, method: &Method, b: axum::body::Body) -> Reply {
    let (resource, ns, name) = (ctx.t.spec.resource(), ctx.t.namespace.clone(), ctx.t.name.clone().unwrap_or_default());
    let (g_resource, g_ns, g_name) = (resource.clone(), ns.clone(), name.clone());
    let current = || async { ctx.call(move |s| s.get(&g_resource, g_ns.as_deref(), &g_name, &GetOptions::default())).await };
    let new_scale = match *method {
        Method::GET => {
            ctx.admit("get")?;
            return Ok(encoded(body::encode(&scale_of(&current().await?), body::JSON)?, StatusCode::OK));
        }
        Method::PUT => {
            ctx.admit("update")?;
            let data = read_body(b, ctx.h.svc.limits.max_request_bytes).await?;
            ctx.h.svc.decode(Some(&pb::Body { content_type: body::JSON.into(), data }), "Scale").await?.value
        }
        Method::PATCH => {
            ctx.admit("patch")?;
            let kind = negotiate::patch_kind(ctx.content_type())?;
            let data = read_body(b, ctx.h.svc.limits.max_request_bytes).await?;
            let patch = ctx.h.svc.decode(Some(&pb::Body { content_type: body::JSON.into(), data }), "patch").await?.value;
            let patch_type = match kind {
                PatchKind::Json => PatchType::Json,
                PatchKind::Merge | PatchKind::Strategic => PatchType::Merge,
                PatchKind::Apply => {
                    return Err(Failure::unsupported_media_type("application/apply-patch+yaml", &["application/merge-patch+json"]))
                }
            };
            fieldstore_engine::patch::apply(patch_type, &scale_of(&current().await?), &patch, &PatchMeta::untyped())?
        }
        _ => return Err(Failure::method_not_allowed(method)),
    };
    let replicas = new_scale
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .and_then(|r| i32::try_from(r).ok())
        .filter(|r| *r >= 0)
        .ok_or_else(|| Failure::from(Error::BadRequest("spec.replicas: a non-negative 32-bit integer is required".into())))?;
    let rv = new_scale.pointer("/metadata/resourceVersion").and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string);
    let mut patch = json!({"spec": {"replicas": replicas}});
    if let Some(rv) = rv.filter(|_| *method == Method::PUT) {
        // A PUT's resourceVersion is a precondition, as for the object.
        patch["metadata"] = json!({"resourceVersion": rv});
    }
    let opts = WriteOptions::new(ctx.field_manager()).dry_run(ctx.q.dry_run()?);
    let out = ctx.call(move |s| s.patch(&resource, ns.as_deref(), &name, PatchType::Merge, &patch, &opts)).await?;
    Ok(encoded(body::encode(&scale_of(&out), body::JSON)?, StatusCode::OK))
}
