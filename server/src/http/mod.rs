//! The Kubernetes REST API over the store, so that kubectl and the Kubernetes client libraries
//! work against `fieldstore serve` unchanged: discovery, every verb with its query parameters,
//! watch streams, Tables, JSON/YAML/protobuf bodies, and `metav1.Status` errors with
//! Kubernetes' HTTP codes; plus field history and the owner index at documented paths.
//!
//! It serves on a listener of its own (`--http ADDR`), with the gRPC service's authentication,
//! authorization rules, limits and metrics: each request is authenticated by its
//! `Authorization: Bearer` header and authorized per verb, resource and namespace, and its
//! store call runs on the blocking pool within the request deadline (504 beyond).
//!
//! Modules: [`paths`] (what a URL names), [`negotiate`] (content types), [`request`] (one
//! request on a resource path, which the verb modules share), [`discovery`] and [`aggregated`],
//! [`review`] (the self-reviews of `kubectl auth`), [`verbs`] (get, list, create, update, patch,
//! delete), [`scale`], [`watch`], [`history`] (fieldstore's own paths), [`openapi`] (the OpenAPI documents, built once per change of the
//! types), [`table`] (`meta.k8s.io/v1` Tables), [`reply`] (responses and `Status` failures),
//! [`listener`] (TCP and TLS), [`ui`] (the web view at `/ui/`) and `ui_api` (the calls only the
//! web view needs).

mod aggregated;
mod discovery;
mod history;
mod list_body;
pub mod listener;
mod negotiate;
mod paths;
mod query;
mod reply;
mod request;
mod review;
mod scale;
pub mod ui;
mod ui_api;
mod verbs;
mod watch;

pub mod openapi;
pub mod table;

use crate::api::auth::Identity;
use crate::api::Api;
use crate::api::{EventEncodings, ObjectEncodings};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::Router;
use http::{header, Method};
use reply::{json, Failure, Reply};
use std::collections::HashMap;
use std::time::Instant;

/// The HTTP API's state: the request layer it translates into, the server's shutdown signal
/// (which ends watches) and the watch events' encodings it shares with gRPC.
#[derive(Clone)]
pub struct Http {
    api: Api,
    shutdown: tokio::sync::watch::Receiver<bool>,
    encodings: std::sync::Arc<EventEncodings>,
    /// The protobuf encodings of stored objects answered, for LISTs to copy.
    objects: std::sync::Arc<ObjectEncodings>,
    docs: std::sync::Arc<openapi::Cache>,
}

impl Http {
    /// The Kubernetes HTTP API over `api`; watches end when `shutdown` turns true.
    pub fn new(api: Api, shutdown: tokio::sync::watch::Receiver<bool>, encodings: std::sync::Arc<EventEncodings>) -> Self {
        Http { api, shutdown, encodings, objects: std::sync::Arc::default(), docs: std::sync::Arc::default() }
    }

    /// The axum router of every path.
    pub fn router(self) -> Router {
        Router::new().fallback(handle).with_state(self)
    }
}

/// Every request: authenticated, dispatched, counted in the metrics (method `HTTP <METHOD>` of
/// the standard methods, else `HTTP other`; code the HTTP status: closed sets, see
/// [`crate::metrics`]).
async fn handle(State(h): State<Http>, req: Request) -> Response {
    let start = Instant::now();
    let method = crate::metrics::http_method_label(req.method());
    let r = dispatch(&h, req).await.unwrap_or_else(IntoResponse::into_response);
    h.api.metrics.observe(method, crate::metrics::http_code_label(r.status()), start.elapsed());
    r
}

async fn dispatch(h: &Http, req: Request) -> Reply {
    let auth_header = req.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    let id: Identity = h.api.auth().authenticate_header(auth_header)?;
    let path = req.uri().path().to_string();
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let get_only = |m: &Method| if m == Method::GET || m == Method::HEAD { Ok(()) } else { Err(Failure::method_not_allowed(m)) };
    // One spec per served version (a custom resource's every served version).
    let types = || h.api.store().served_types_shared();
    // Discovery of a group or version no API serves: kube-apiserver's plain 404.
    let found = |v: Option<serde_json::Value>| v.map_or_else(|| Err(Failure::page_not_found()), |v| json(&v));
    let wants_aggregated = aggregated::wanted(req.headers().get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or(""));
    match segs.as_slice() {
        ["version"] => {
            get_only(req.method())?;
            json(&discovery::version())
        }
        [what @ ("healthz" | "livez" | "readyz"), check @ ..] if check.len() <= 1 => {
            get_only(req.method())?;
            Ok(health(h, what, check.first().copied(), req.uri().query()))
        }
        ["api" | "apis"] if wants_aggregated => {
            get_only(req.method())?;
            let categories = h.api.call(move |s| Ok(discovery::crd_categories(&s))).await.unwrap_or_default();
            let doc = aggregated::document(&types(), &categories, segs[0] == "api");
            let body = serde_json::to_vec(&doc).map_err(|e| Failure::new(fieldstore_engine::Reason::InternalError, e.to_string()))?;
            let mut r = bytes_reply(std::sync::Arc::new(body), aggregated::CONTENT_TYPE);
            r.headers_mut().insert(header::VARY, http::HeaderValue::from_static("Accept"));
            Ok(r)
        }
        ["api"] => {
            get_only(req.method())?;
            json(&discovery::core_versions())
        }
        ["apis"] => {
            get_only(req.method())?;
            json(&discovery::group_list(&types()))
        }
        ["api", v] => {
            get_only(req.method())?;
            found(discovery::resource_list(&types(), &HashMap::new(), "", v))
        }
        ["apis", "fieldstore.io", "v1", what @ ("access" | "renamemanager" | "release")] => ui_api::admin(h, &id, what, req).await,
        ["apis", "fieldstore.io", "v1", what] => {
            get_only(req.method())?;
            history::index(h, &id, what, req.uri().query()).await
        }
        ["apis", g] => {
            get_only(req.method())?;
            found(discovery::group(&types(), g))
        }
        ["apis", g, v] => {
            get_only(req.method())?;
            let categories = h.api.call(move |s| Ok(discovery::crd_categories(&s))).await.unwrap_or_default();
            found(discovery::resource_list(&types(), &categories, g, v))
        }
        ["openapi", "v2"] => {
            get_only(req.method())?;
            let docs = h.docs.documents(&types());
            let accept = req.headers().get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
            if openapi::wants_v2_protobuf(accept) {
                Ok(bytes_reply(docs.v2_protobuf(), openapi::V2_PROTOBUF_CONTENT_TYPE))
            } else {
                Ok(bytes_reply(docs.v2_json(), "application/json"))
            }
        }
        ["openapi", "v3"] => {
            get_only(req.method())?;
            Ok(bytes_reply(h.docs.documents(&types()).v3_index_json(), "application/json"))
        }
        ["openapi", "v3", rest @ ..] => {
            get_only(req.method())?;
            h.docs.documents(&types()).v3_json(&rest.join("/")).map(|d| bytes_reply(d, "application/json")).ok_or_else(Failure::no_route)
        }
        ["apis", g, "v1", plural] if review::kind(g, plural).is_some() => review::create(h, &id, g, plural, req).await,
        _ => {
            let target = match paths::route(&path, |r| h.api.store().resource_type(r)) {
                // The objects of a deleted CRD keep their history (`blame`, `history`, `log`, `at`).
                Err(f) => match paths::route(&path, |r| h.api.store().retired_type(r)) {
                    Ok(Some(t)) if matches!(t.subresource.as_deref(), Some("blame" | "history" | "log" | "at")) => Some(t),
                    _ => return Err(f),
                },
                Ok(t) => t,
            };
            match target {
                Some(t) if t.subresource.as_deref() == Some("at") => ui_api::object_at(h, &id, t, req).await,
                Some(t) => verbs::serve(h, id, t, req).await,
                None => Err(Failure::page_not_found()),
            }
        }
    }
}

/// `/healthz`, `/livez`, `/readyz` and each of their checks (`/livez/ping`), as kube-apiserver
/// answers them: `ok`, or with `?verbose` one `[+]check ok` line per check and `livez check
/// passed`; a failed check (`shutdown`, while the server stops) is `[-]shutdown failed: reason
/// withheld` and a 500. An unknown check is a text 404.
fn health(h: &Http, what: &str, check: Option<&str>, query: Option<&str>) -> Response {
    let stopping = *h.shutdown.borrow();
    let mut checks = vec![("ping", true), ("log", true), ("store", true)];
    if what == "readyz" {
        checks.push(("shutdown", !stopping));
    }
    let text = |code: http::StatusCode, body: String| {
        let mut r = Response::new(Body::from(body));
        *r.status_mut() = code;
        r.headers_mut().insert(header::CONTENT_TYPE, http::HeaderValue::from_static("text/plain; charset=utf-8"));
        r
    };
    if let Some(name) = check {
        return match checks.iter().find(|(n, _)| *n == name) {
            Some((_, true)) => text(http::StatusCode::OK, "ok".into()),
            Some((n, false)) => text(http::StatusCode::INTERNAL_SERVER_ERROR, format!("internal server error: {n} failed\n")),
            None => text(http::StatusCode::NOT_FOUND, "404 page not found\n".into()),
        };
    }
    let passed = checks.iter().all(|(_, ok)| *ok);
    let verbose = form_urlencoded::parse(query.unwrap_or("").as_bytes()).any(|(k, _)| k == "verbose");
    let code = if passed { http::StatusCode::OK } else { http::StatusCode::INTERNAL_SERVER_ERROR };
    if !verbose && passed {
        return text(code, "ok".into());
    }
    let mut out = String::new();
    for (n, ok) in &checks {
        out.push_str(&if *ok { format!("[+]{n} ok\n") } else { format!("[-]{n} failed: reason withheld\n") });
    }
    out.push_str(&format!("{what} check {}\n", if passed { "passed" } else { "failed" }));
    text(code, out)
}

/// A 200 response of shared bytes.
fn bytes_reply(body: std::sync::Arc<Vec<u8>>, content_type: &'static str) -> Response {
    let mut r = Response::new(Body::from(bytes::Bytes::from_owner(ArcBytes(body))));
    r.headers_mut().insert(header::CONTENT_TYPE, http::HeaderValue::from_static(content_type));
    r
}

/// Shared document bytes as a response body without copying them.
struct ArcBytes(std::sync::Arc<Vec<u8>>);

impl AsRef<[u8]> for ArcBytes {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}
