//! The `scale` subresource of Deployments, ReplicaSets, StatefulSets, ReplicationControllers and
//! custom resources whose CRD declares one (`kubectl scale`, HPA) over HTTP: GET, PUT of a Scale, and merge / JSON / strategic patches of it,
//! translated into the request layer (the engine's `scale` strategy does the rest). The Scale
//! (`autoscaling/v1`) is a built-in kind: read and answered in JSON, YAML or protobuf, as the
//! client sends and accepts it (client-go's clientsets default to protobuf).

use super::negotiate;
use super::query::OptionErrors;
use super::reply::{encoded, Failure, Reply};
use super::request::Ctx;
use crate::api::{body, Request};
use fieldstore_engine::patch::PatchType;
use fieldstore_engine::store::{ScaleChange, WriteOptions};
use http::{Method, StatusCode};

/// Serves `…/NAME/scale`.
pub(crate) async fn serve(ctx: &Ctx<'_>, method: &Method, b: axum::body::Body) -> Reply {
    let change = match *method {
        Method::GET => {
            let out = ctx.run(Request::GetScale { key: ctx.key() }).await?.object()?;
            return Ok(encoded(body::encode(&out, ctx.accept.media_type())?, StatusCode::OK));
        }
        Method::PUT => {
            ctx.admit("update")?;
            let media = negotiate::object_body(ctx.content_type())?;
            let data = ctx.read(b).await?;
            ScaleChange::Replace(ctx.decode(&media, data, "Scale").await?.value)
        }
        Method::PATCH => {
            ctx.admit("patch")?;
            let patch_type = negotiate::patch_type(ctx.content_type())?;
            if patch_type == PatchType::Apply {
                return Err(Failure::unsupported_media_type("application/apply-patch+yaml", &["application/merge-patch+json"]));
            }
            let data = ctx.read(b).await?;
            ScaleChange::Patch(patch_type, ctx.decode(body::JSON, data, "patch").await?.value)
        }
        _ => return Err(Failure::method_not_allowed(method)),
    };
    let mut errs = OptionErrors::new(if *method == Method::PUT { "UpdateOptions" } else { "PatchOptions" });
    let dry_run = ctx.q.dry_run(&mut errs);
    errs.check()?;
    let opts = WriteOptions::new(ctx.field_manager()).dry_run(dry_run);
    let out = ctx.run(Request::UpdateScale { key: ctx.key(), change, opts }).await?.object()?;
    Ok(encoded(body::encode(&out, ctx.accept.media_type())?, StatusCode::OK))
}
