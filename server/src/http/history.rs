//! fieldstore's own paths, beyond Kubernetes: field history of an object (`…/NAME/blame`,
//! `…/NAME/history?path=.data.a`, `…/NAME/log`) and the owner index
//! (`/apis/fieldstore.io/v1/owners?resource=R&path=P`, `/apis/fieldstore.io/v1/managers[?resource=R]`,
//! `/apis/fieldstore.io/v1/managedobjects?manager=M[&resource=R]`). Each answers the JSON the
//! gRPC call of the same name carries in its `JsonResponse`.

use super::query::Query;
use super::reply::{json, Failure, Reply};
use super::request::Ctx;
use super::Http;
use crate::api::auth::Identity;
use crate::api::Request;
use fieldstore_engine::store::{HistoryQuery, Revision};

fn limit(q: &Query) -> Result<Option<usize>, Failure> {
    Ok(q.number("limit")?.filter(|&l| l > 0).map(|l| usize::try_from(l).unwrap_or(usize::MAX)))
}

/// `blame`, `history` or `log` of the object the context names.
pub(crate) async fn object(ctx: &Ctx<'_>, what: &str) -> Reply {
    let key = ctx.key();
    let request = match what {
        "blame" => Request::Blame { key },
        "history" => {
            let path = ctx.q.string("path").ok_or_else(|| Failure::bad_request("history needs ?path=.a.field.path"))?;
            let query = HistoryQuery {
                limit: limit(&ctx.q)?,
                before_revision: ctx.q.number("beforeRevision")?.map(Revision),
                ..HistoryQuery::default()
            };
            Request::FieldHistory { key, path, query }
        }
        _ => Request::ObjectLog { key, limit: limit(&ctx.q)? },
    };
    json(&ctx.run(request).await?.json()?)
}

/// `/apis/fieldstore.io/v1/{owners,managers,managedobjects}`.
pub(crate) async fn index(h: &Http, id: &Identity, what: &str, query: Option<&str>) -> Reply {
    let q = Query::parse(query);
    let resource = q.string("resource");
    let request = match what {
        "owners" => {
            let resource = resource.ok_or_else(|| Failure::bad_request("owners needs ?resource=R&path=P"))?;
            let path = q.string("path").ok_or_else(|| Failure::bad_request("owners needs ?resource=R&path=P"))?;
            Request::OwnersOf { resource, path }
        }
        "managers" => Request::Managers { resource },
        "managedobjects" => {
            let manager = q.string("manager").ok_or_else(|| Failure::bad_request("managedobjects needs ?manager=M"))?;
            Request::ObjectsManagedBy { manager, resource, limit: limit(&q)?, continue_token: q.string("continue") }
        }
        _ => return Err(Failure::no_route()),
    };
    json(&h.api.run(id, request).await?.json()?)
}
