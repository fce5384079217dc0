//! The few calls the web view needs beyond Kubernetes and [`super::history`]:
//! - `GET {object path}/at?revision=N`: the object as it was at revision `N` (`Store::object_at`;
//!   404 when it did not exist then, 410 when history no longer reaches back that far);
//! - `GET /apis/fieldstore.io/v1/access?verb=V[&resource=R][&namespace=NS]`: whether the caller may
//!   do `V` (`{"user": …, "allowed": …}`), so the page offers only what it may do;
//! - `POST /apis/fieldstore.io/v1/renamemanager` with `{"from": …, "to": …}` and
//!   `POST /apis/fieldstore.io/v1/release` with `{"manager": …[, "resource": …][, "labelSelector": …]}`:
//!   the administrative writes of the gRPC service, authorized as there (verb `admin`), answering
//!   `{"count": objects changed}`.

use super::paths::Target;
use super::query::Query;
use super::reply::{json, Failure, Reply};
use super::request::read_body;
use super::Http;
use crate::api::auth::Identity;
use crate::api::{ObjectKey, Request as ApiRequest, Response};
use axum::extract::Request;
use fieldstore_engine::store::Revision;
use fieldstore_engine::Reason;
use http::Method;
use serde::Deserialize;
use serde_json::json;

/// Largest body of an administrative call: a few names.
const MAX_ADMIN_BODY: usize = 64 << 10;

/// `GET {object path}/at?revision=N`.
pub(crate) async fn object_at(h: &Http, id: &Identity, t: Target, req: Request) -> Reply {
    if req.method() != Method::GET {
        return Err(Failure::method_not_allowed(req.method()));
    }
    let q = Query::parse(req.uri().query());
    drop(req);
    let revision = Revision(q.number("revision")?.ok_or_else(|| Failure::bad_request("at needs ?revision=N"))?);
    let key = ObjectKey::new(t.spec.resource(), t.ns(), t.name.clone().unwrap_or_default());
    let shown = key.name.clone();
    match h.api.run(id, ApiRequest::ObjectAt { key, revision }).await? {
        Response::ObjectAt(Some(v)) => json(&v),
        _ => Err(Failure::new(Reason::NotFound, format!("{shown:?} did not exist at revision {revision}"))),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Rename {
    from: String,
    to: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Release {
    manager: String,
    #[serde(default)]
    resource: String,
    #[serde(default)]
    label_selector: String,
}

/// `/apis/fieldstore.io/v1/{access,renamemanager,release}`.
pub(crate) async fn admin(h: &Http, id: &Identity, what: &str, req: Request) -> Reply {
    match (what, req.method().clone()) {
        ("access", Method::GET) => {
            let q = Query::parse(req.uri().query());
            let verb = q.get("verb").ok_or_else(|| Failure::bad_request("access needs ?verb=V"))?;
            let resource = match q.get("resource") {
                Some(r) => h.api.store().resource_name(r)?,
                None => String::new(),
            };
            let allowed = h.api.auth().authorize(id, verb, &resource, q.get("namespace").unwrap_or("")).is_ok();
            json(&json!({"user": id.user, "allowed": allowed}))
        }
        ("renamemanager", Method::POST) => {
            h.api.auth().authorize(id, "admin", "", "")?;
            let r: Rename = body(req).await?;
            let n = h.api.run(id, ApiRequest::RenameManager { from: r.from, to: r.to }).await?.count()?;
            json(&json!({"count": n}))
        }
        ("release", Method::POST) => {
            h.api.auth().authorize(id, "admin", "", "")?;
            let r: Release = body(req).await?;
            let request = ApiRequest::Release {
                manager: r.manager,
                resource: Some(r.resource).filter(|r| !r.is_empty()),
                label_selector: Some(r.label_selector).filter(|l| !l.is_empty()),
            };
            let n = h.api.run(id, request).await?.count()?;
            json(&json!({"count": n}))
        }
        (_, m) => Err(Failure::method_not_allowed(&m)),
    }
}

async fn body<T: serde::de::DeserializeOwned>(req: Request) -> Result<T, Failure> {
    let data = read_body(req.into_body(), MAX_ADMIN_BODY).await?;
    serde_json::from_slice(&data).map_err(|e| Failure::bad_request(format!("invalid body: {e}")))
}
