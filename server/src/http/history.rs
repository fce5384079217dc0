//! fieldstore's own paths, beyond Kubernetes: field history of an object (`…/NAME/blame`,
//! `…/NAME/history?path=.data.a`, `…/NAME/log`) and the owner index
//! (`/apis/fieldstore.io/v1/owners?resource=R&path=P`, `/apis/fieldstore.io/v1/managers[?resource=R]`,
//! `/apis/fieldstore.io/v1/managedobjects?manager=M[&resource=R]`). Each answers the JSON the
//! gRPC call of the same name carries in its `JsonResponse`.

use super::query::Query;
use super::reply::{json_bytes, Failure, Reply};
use super::request::Ctx;
use super::Http;
use crate::service::auth::Identity;
use fieldstore_engine::store::HistoryQuery;
use fieldstore_engine::{Error, Reason};
use http::StatusCode;

fn to_json<T: serde::Serialize>(v: &T) -> Reply {
    Ok(json_bytes(serde_json::to_vec(v).map_err(|e| Failure::new(Reason::InternalError, e.to_string()))?, StatusCode::OK))
}

fn limit(q: &Query) -> Result<Option<usize>, Failure> {
    Ok(q.number("limit")?.filter(|&l| l > 0).map(|l| usize::try_from(l).unwrap_or(usize::MAX)))
}

/// `blame`, `history` or `log` of the object the context names.
pub(crate) async fn object(ctx: &Ctx<'_>, what: &str) -> Reply {
    ctx.admit("get")?;
    let resource = ctx.t.spec.resource();
    let ns = ctx.t.namespace.clone();
    let name = ctx.t.name.clone().unwrap_or_default();
    match what {
        "blame" => to_json(&ctx.call(move |s| s.blame(&resource, ns.as_deref(), &name)).await?),
        "history" => {
            let path = ctx.q.string("path").ok_or_else(|| Failure::bad_request("history needs ?path=.a.field.path"))?;
            let q = HistoryQuery { limit: limit(&ctx.q)?, before_revision: ctx.q.number("beforeRevision")?, ..HistoryQuery::default() };
            to_json(&ctx.call(move |s| s.field_history(&resource, ns.as_deref(), &name, &path, &q)).await?)
        }
        _ => {
            let limit = limit(&ctx.q)?;
            to_json(&ctx.call(move |s| s.object_log(&resource, ns.as_deref(), &name, limit)).await?)
        }
    }
}

/// `/apis/fieldstore.io/v1/{owners,managers,managedobjects}`.
pub(crate) async fn index(h: &Http, id: &Identity, what: &str, query: Option<&str>) -> Reply {
    let q = Query::parse(query);
    let resource = match q.get("resource") {
        Some(r) => Some(h.svc.store.find_type(r)?.resource()),
        None => None,
    };
    h.svc.auth.authorize(id, "list", resource.as_deref().unwrap_or(""), "")?;
    let call = |f: Box<dyn FnOnce(fieldstore_engine::store::Store) -> Result<Vec<u8>, Error> + Send>| h.svc.call(f);
    let ser = |e: serde_json::Error| Error::BadRequest(e.to_string());
    let out = match what {
        "owners" => {
            let resource = resource.ok_or_else(|| Failure::bad_request("owners needs ?resource=R&path=P"))?;
            let path = q.string("path").ok_or_else(|| Failure::bad_request("owners needs ?resource=R&path=P"))?;
            call(Box::new(move |s| serde_json::to_vec(&s.owners_of(&resource, &path)?).map_err(ser))).await?
        }
        "managers" => call(Box::new(move |s| serde_json::to_vec(&s.managers(resource.as_deref())?).map_err(ser))).await?,
        "managedobjects" => {
            let manager = q.string("manager").ok_or_else(|| Failure::bad_request("managedobjects needs ?manager=M"))?;
            let limit = limit(&q)?;
            let cont = q.string("continue");
            call(Box::new(move |s| {
                serde_json::to_vec(&s.objects_managed_by_page(&manager, resource.as_deref(), limit, cont.as_deref())?).map_err(ser)
            }))
            .await?
        }
        _ => return Err(Failure::no_route()),
    };
    Ok(json_bytes(out, StatusCode::OK))
}
