//! The gRPC service: every store verb, watch, compaction, history and the owner index over
//! `proto/fieldstore/v1/store.proto`, with authentication, authorization and limits.
//!
//! Writes of bodies up to 64 KiB are planned on the request's task and await their commit
//! ([`Store::write_async`]); the store's other calls block (RocksDB reads, large merges) and run
//! on tokio's blocking pool. Both are bounded by the request deadline: a request that times out
//! answers 504; a write it started may still commit, as with the apiserver. Watch streams
//! ([`watch`]) are tasks polled by their connection, fed by the store's watch hub, with each
//! event's message encoded once for all its streams.

pub mod auth;
pub mod body;
pub mod status;
pub mod watch;

use crate::api::pb::{self, store_server};
use crate::metrics::Metrics;
use auth::{Auth, Identity};
use fieldstore_codec::document::Document;
use fieldstore_engine::patch::PatchType;
use fieldstore_engine::store::{
    DeleteOptions, GetOptions, HistoryQuery, ListOptions, ResourceVersionMatch, Store, TypeSpec, WriteOptions, WriteVerb,
};
use fieldstore_engine::{Error, Reason};
use parking_lot::Mutex;
use serde_json::Value;
use status::{refused, to_grpc, IntoGrpc};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tonic::{Request, Response, Status};
pub(crate) use watch::{next_event, EventEncodings, Next};

/// Request bodies from this size up are parsed on the blocking pool ([`StoreService::decode`]).
pub(crate) const PARSE_ON_POOL_BYTES: usize = 64 << 10;

/// Request limits; every one is enforced with a Kubernetes-style error.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest request body (default 3 MiB, as the apiserver).
    pub max_request_bytes: usize,
    /// Open watches per identity (default 100).
    pub max_watches_per_client: usize,
    /// Deadline of a unary request (default 60 s).
    pub request_deadline: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_request_bytes: 3 << 20, max_watches_per_client: 100, request_deadline: Duration::from_secs(60) }
    }
}

/// Writes of bodies up to this size are planned on the request's task (tens to hundreds of µs
/// of merge work); larger ones, whose merge can take milliseconds, go to the blocking pool so
/// that they do not hold up the connections sharing a runtime thread.
const INLINE_WRITE_BYTES: usize = 64 << 10;

/// Names authorization rules use for what is not a stored resource: type registration, and
/// store-wide calls (compaction, bookmarks, manager administration) under `""`.
const META_RESOURCES: [&str; 2] = ["customresourcedefinitions", ""];

/// The service over one store.
#[derive(Clone)]
pub struct StoreService {
    pub(crate) store: Store,
    pub(crate) auth: Arc<Auth>,
    pub(crate) limits: Limits,
    watches: Arc<Mutex<HashMap<String, usize>>>,
    pub(crate) shutdown: tokio::sync::watch::Receiver<bool>,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) encodings: Arc<EventEncodings>,
}

impl StoreService {
    /// A service over `store`; watches end (with a final bookmark) when `shutdown` turns true.
    pub fn new(store: Store, auth: Arc<Auth>, limits: Limits, shutdown: tokio::sync::watch::Receiver<bool>, metrics: Arc<Metrics>) -> Self {
        StoreService { store, auth, limits, watches: Arc::default(), shutdown, metrics, encodings: Arc::default() }
    }

    /// Takes one of `user`'s watch slots (shared by gRPC and HTTP watches), released when the
    /// slot is dropped.
    pub(crate) fn reserve_watch(&self, user: &str) -> Result<WatchSlot, Status> {
        {
            let mut w = self.watches.lock();
            let n = w.entry(user.to_string()).or_default();
            if *n >= self.limits.max_watches_per_client {
                return Err(refused(
                    Reason::TooManyRequests,
                    format!("too many watches: {user} already has {n} open (limit {})", self.limits.max_watches_per_client),
                ));
            }
            *n += 1;
        }
        self.metrics.open_watches.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(WatchSlot { user: user.to_string(), watches: self.watches.clone(), metrics: self.metrics.clone() })
    }

    /// Runs a store call on the blocking pool within the request deadline.
    pub(crate) async fn call<R: Send + 'static>(&self, f: impl FnOnce(Store) -> Result<R, Error> + Send + 'static) -> Result<R, Status> {
        let store = self.store.clone();
        let deadline = self.limits.request_deadline;
        match tokio::time::timeout(deadline, tokio::task::spawn_blocking(move || f(store))).await {
            Err(_) => Err(refused(Reason::Timeout, format!("the request did not complete within {deadline:?}"))),
            Ok(Err(join)) => Err(Status::internal(format!("request failed: {join}"))),
            Ok(Ok(r)) => r.grpc(),
        }
    }

    /// Parses a request body ([`body::decode`]): small ones here, those of
    /// [`PARSE_ON_POOL_BYTES`] and more on the blocking pool within the request deadline, so that
    /// a large body does not hold an async worker.
    pub(crate) async fn decode(&self, b: Option<&pb::Body>, what: &'static str) -> Result<Document, Status> {
        let max_depth = self.store.max_depth();
        match b {
            Some(b) if b.data.len() >= PARSE_ON_POOL_BYTES => {
                let b = b.clone();
                self.call(move |_| body::decode(Some(&b), what, max_depth)).await
            }
            b => body::decode(b, what, max_depth).grpc(),
        }
    }

    /// Authorizes `verb` on `resource` (a client's name for it; resolved to the registered
    /// type) in `namespace`; returns the caller and the type.
    fn admit<T>(&self, req: &Request<T>, verb: &str, resource: &str, namespace: &str) -> Result<(Identity, Option<TypeSpec>), Status> {
        let id = req.extensions().get::<Identity>().cloned().unwrap_or_else(Identity::anonymous);
        if META_RESOURCES.contains(&resource) {
            self.auth.authorize(&id, verb, resource, namespace)?;
            return Ok((id, None));
        }
        let spec = if resource.is_empty() { None } else { Some(self.store.find_type(resource).grpc()?) };
        let name = spec.as_ref().map_or_else(|| resource.to_string(), TypeSpec::resource);
        self.auth.authorize(&id, verb, &name, namespace)?;
        Ok((id, spec))
    }

    fn check_size(&self, bytes: usize) -> Result<(), Status> {
        if bytes > self.limits.max_request_bytes {
            return Err(refused(
                Reason::RequestEntityTooLarge,
                format!("Request entity too large: the request body is {bytes} bytes, the limit is {}", self.limits.max_request_bytes),
            ));
        }
        Ok(())
    }

    /// A write of an object body (create, update, apply).
    async fn write(&self, req: Request<pb::WriteRequest>, verb: WriteVerb) -> Result<Response<pb::ObjectResponse>, Status> {
        let r = req.get_ref();
        let body_len = r.body.as_ref().map_or(0, |b| b.data.len());
        self.check_size(body_len)?;
        let object = self.decode(r.body.as_ref(), "body").await?.value;
        let resource = if r.resource.is_empty() { self.store.type_of(&object).grpc()?.resource() } else { r.resource.clone() };
        let ns = if r.namespace.is_empty() {
            object.get("metadata").and_then(|m| m.get("namespace")).and_then(Value::as_str).unwrap_or("").to_string()
        } else {
            r.namespace.clone()
        };
        let (id, spec) = self.admit(&req, verb.as_str(), &resource, &ns)?;
        let r = req.into_inner();
        let resource = spec.map(|s| s.resource()).unwrap_or(resource);
        let manager = if r.field_manager.is_empty() && verb != WriteVerb::Apply { id.user.clone() } else { r.field_manager.clone() };
        let opts = WriteOptions::new(manager).dry_run(r.dry_run).force(r.force).status(subresource(&r.subresource)?);
        let accept = r.accept;
        let out = self.write_object(verb, &resource, &ns, Cow::Owned(object), &opts, body_len).await?.grpc()?;
        object_response(&out, &accept)
    }

    /// A write of an object body (create, update, apply), shared by gRPC and the HTTP API:
    /// bodies up to [`INLINE_WRITE_BYTES`] are planned on this task and their commit awaited
    /// (no hand-off to a blocking thread); larger ones run on the blocking pool. Within the
    /// request deadline. The outer error is the deadline's or the pool's, the inner one the
    /// store's (the HTTP API looks at it to strip undeclared fields and write again).
    pub(crate) async fn write_object(
        &self,
        verb: WriteVerb,
        resource: &str,
        ns: &str,
        object: Cow<'_, Value>,
        opts: &WriteOptions,
        body_len: usize,
    ) -> Result<Result<Value, Error>, Status> {
        if body_len > INLINE_WRITE_BYTES {
            let (resource, ns, object, opts) = (resource.to_string(), ns.to_string(), object.into_owned(), opts.clone());
            return self.call(move |s| Ok(s.write(verb, &resource, ns_opt(&ns), &object, &opts))).await;
        }
        let deadline = self.limits.request_deadline;
        match tokio::time::timeout(deadline, self.store.write_async(verb, resource, ns_opt(ns), &object, opts)).await {
            Err(_) => Err(refused(Reason::Timeout, format!("the request did not complete within {deadline:?}"))),
            Ok(r) => Ok(r),
        }
    }
}

fn subresource(s: &str) -> Result<bool, Status> {
    match s {
        "" => Ok(false),
        "status" => Ok(true),
        other => Err(to_grpc(&Error::BadRequest(format!("unknown subresource {other:?}: only \"status\" exists")))),
    }
}

fn object_response(v: &Value, accept: &str) -> Result<Response<pb::ObjectResponse>, Status> {
    Ok(Response::new(pb::ObjectResponse { object: Some(body::encode(v, accept).grpc()?) }))
}

fn json_response<T: serde::Serialize>(v: &T) -> Result<Response<pb::JsonResponse>, Status> {
    Ok(Response::new(pb::JsonResponse { json: serde_json::to_vec(v).map_err(|e| Status::internal(e.to_string()))? }))
}

fn object_ref(r: Option<&pb::ObjectRef>) -> Result<pb::ObjectRef, Status> {
    let r = r.cloned().unwrap_or_default();
    if r.resource.is_empty() || r.name.is_empty() {
        return Err(to_grpc(&Error::BadRequest("object.resource and object.name are required".into())));
    }
    Ok(r)
}

fn ns_opt(ns: &str) -> Option<&str> {
    Some(ns).filter(|n| !n.is_empty())
}

fn rv_match(s: &str) -> Result<Option<ResourceVersionMatch>, Status> {
    match s {
        "" => Ok(None),
        "Exact" => Ok(Some(ResourceVersionMatch::Exact)),
        "NotOlderThan" => Ok(Some(ResourceVersionMatch::NotOlderThan)),
        other => Err(to_grpc(&Error::BadRequest(format!("invalid resourceVersionMatch {other:?}: Exact or NotOlderThan")))),
    }
}

fn list_options(r: &pb::ListRequest) -> Result<ListOptions, Status> {
    let opt = |s: &str| Some(s.to_string()).filter(|s| !s.is_empty());
    Ok(ListOptions {
        label_selector: opt(&r.label_selector),
        field_selector: opt(&r.field_selector),
        limit: (r.limit > 0).then_some(r.limit as usize),
        continue_token: opt(&r.r#continue),
        resource_version: opt(&r.resource_version),
        resource_version_match: rv_match(&r.resource_version_match)?,
    })
}

/// Releases a watch slot of an identity when the watch ends.
pub(crate) struct WatchSlot {
    user: String,
    watches: Arc<Mutex<HashMap<String, usize>>>,
    metrics: Arc<Metrics>,
}

impl Drop for WatchSlot {
    fn drop(&mut self) {
        self.metrics.open_watches.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        let mut w = self.watches.lock();
        if let Some(n) = w.get_mut(&self.user) {
            *n = n.saturating_sub(1);
        }
    }
}

#[tonic::async_trait]
impl store_server::Store for StoreService {
    async fn create(&self, req: Request<pb::WriteRequest>) -> Result<Response<pb::ObjectResponse>, Status> {
        self.write(req, WriteVerb::Create).await
    }

    async fn update(&self, req: Request<pb::WriteRequest>) -> Result<Response<pb::ObjectResponse>, Status> {
        self.write(req, WriteVerb::Update).await
    }

    async fn apply(&self, req: Request<pb::WriteRequest>) -> Result<Response<pb::ObjectResponse>, Status> {
        self.write(req, WriteVerb::Apply).await
    }

    async fn get(&self, req: Request<pb::GetRequest>) -> Result<Response<pb::ObjectResponse>, Status> {
        let o = object_ref(req.get_ref().object.as_ref())?;
        let (_, spec) = self.admit(&req, "get", &o.resource, &o.namespace)?;
        let r = req.into_inner();
        let resource = spec.map(|s| s.resource()).unwrap_or_default();
        let opts = GetOptions {
            resource_version: Some(r.resource_version).filter(|s| !s.is_empty()),
            resource_version_match: rv_match(&r.resource_version_match)?,
        };
        let out = self.call(move |s| s.get(&resource, ns_opt(&o.namespace), &o.name, &opts)).await?;
        object_response(&out, &r.accept)
    }

    async fn patch(&self, req: Request<pb::PatchRequest>) -> Result<Response<pb::ObjectResponse>, Status> {
        let o = object_ref(req.get_ref().object.as_ref())?;
        self.check_size(req.get_ref().patch.as_ref().map_or(0, |b| b.data.len()))?;
        let (id, spec) = self.admit(&req, "patch", &o.resource, &o.namespace)?;
        let r = req.into_inner();
        let patch_type = match r.patch_type.as_str() {
            "strategic" | "" => PatchType::Strategic,
            "merge" => PatchType::Merge,
            "json" => PatchType::Json,
            other => return Err(to_grpc(&Error::BadRequest(format!("unknown patch type {other:?}: strategic, merge or json")))),
        };
        let patch = self.decode(r.patch.as_ref(), "patch").await?.value;
        let resource = spec.map(|s| s.resource()).unwrap_or_default();
        let manager = if r.field_manager.is_empty() { id.user } else { r.field_manager };
        let opts = WriteOptions::new(manager).dry_run(r.dry_run).status(subresource(&r.subresource)?);
        let out = self.call(move |s| s.patch(&resource, ns_opt(&o.namespace), &o.name, patch_type, &patch, &opts)).await?;
        object_response(&out, &r.accept)
    }

    async fn delete(&self, req: Request<pb::DeleteRequest>) -> Result<Response<pb::ObjectResponse>, Status> {
        let o = object_ref(req.get_ref().object.as_ref())?;
        let (_, spec) = self.admit(&req, "delete", &o.resource, &o.namespace)?;
        let r = req.into_inner();
        let resource = spec.map(|s| s.resource()).unwrap_or_default();
        let opts = DeleteOptions {
            uid: Some(r.uid).filter(|s| !s.is_empty()),
            resource_version: Some(r.resource_version).filter(|s| !s.is_empty()),
            dry_run: r.dry_run,
        };
        let out = self.call(move |s| s.delete(&resource, ns_opt(&o.namespace), &o.name, &opts)).await?;
        object_response(&out, &r.accept)
    }

    async fn delete_collection(&self, req: Request<pb::DeleteCollectionRequest>) -> Result<Response<pb::ListResponse>, Status> {
        let list = req.get_ref().list.clone().unwrap_or_default();
        let (_, spec) = self.admit(&req, "deletecollection", &list.resource, &list.namespace)?;
        let spec = spec.ok_or_else(|| to_grpc(&Error::BadRequest("list.resource is required".into())))?;
        let dry_run = req.get_ref().dry_run;
        let opts = list_options(&list)?;
        let resource = spec.resource();
        let ns = list.namespace.clone();
        let items = self
            .call(move |s| s.delete_collection(&resource, ns_opt(&ns), &opts, &DeleteOptions { dry_run, ..Default::default() }))
            .await?;
        let out =
            serde_json::json!({"apiVersion": spec.api_version(), "kind": format!("{}List", spec.kind), "metadata": {}, "items": items});
        Ok(Response::new(pb::ListResponse { list: Some(body::encode(&out, &list.accept).grpc()?) }))
    }

    async fn list(&self, req: Request<pb::ListRequest>) -> Result<Response<pb::ListResponse>, Status> {
        let r = req.get_ref().clone();
        let (_, spec) = self.admit(&req, "list", &r.resource, &r.namespace)?;
        let spec = spec.ok_or_else(|| to_grpc(&Error::BadRequest("resource is required".into())))?;
        let opts = list_options(&r)?;
        let resource = spec.resource();
        // Pages are read as JSON text: no object is parsed and serialised again.
        let list = self.call(move |s| s.list_json(&resource, ns_opt(&r.namespace), &opts)).await?;
        let (api_version, kind) = (spec.api_version(), format!("{}List", spec.kind));
        let out = list.to_json_bytes(&api_version, &spec.kind);
        Ok(Response::new(pb::ListResponse { list: Some(body::encode_json(out, &api_version, &kind, &req.get_ref().accept).grpc()?) }))
    }

    type WatchStream = std::pin::Pin<Box<dyn futures_util::Stream<Item = Result<pb::WatchEvent, Status>> + Send>>;

    /// The generated route's watch, whose messages are decoded again from the shared encoding;
    /// `serve` mounts [`watch::StoreApi`], which writes them as encoded.
    async fn watch(&self, req: Request<pb::WatchRequest>) -> Result<Response<Self::WatchStream>, Status> {
        let messages = self.open_watch(req).await?.messages();
        Ok(Response::new(Box::pin(futures_util::StreamExt::map(messages, |m| m.and_then(|m| m.decode())))))
    }

    async fn compact(&self, req: Request<pb::CompactRequest>) -> Result<Response<pb::CompactResponse>, Status> {
        self.admit(&req, "compact", "", "")?;
        let rev = req.into_inner().revision;
        let compacted = self
            .call(move |s| {
                s.compact(if rev == 0 { s.current_revision()? } else { rev })?;
                Ok(s.compacted_revision())
            })
            .await?;
        Ok(Response::new(pb::CompactResponse { compacted_revision: compacted }))
    }

    async fn request_bookmark(&self, req: Request<pb::RequestBookmarkRequest>) -> Result<Response<pb::RequestBookmarkResponse>, Status> {
        self.admit(&req, "watch", "", "")?;
        let revision = self
            .call(|s| {
                s.request_bookmark();
                Ok(s.revision())
            })
            .await?;
        Ok(Response::new(pb::RequestBookmarkResponse { revision }))
    }

    async fn revision(&self, req: Request<pb::RevisionRequest>) -> Result<Response<pb::RevisionResponse>, Status> {
        self.admit(&req, "get", "", "")?;
        // On a store shared with other servers, after learning their commits.
        let revision = self.call(|s| s.current_revision()).await?;
        Ok(Response::new(pb::RevisionResponse { revision, compacted_revision: self.store.compacted_revision() }))
    }

    async fn register_type(&self, req: Request<pb::RegisterTypeRequest>) -> Result<Response<pb::RegisterTypeResponse>, Status> {
        self.admit(&req, "admin", "customresourcedefinitions", "")?;
        let crd = self.decode(req.get_ref().definition.as_ref(), "definition").await?.value;
        let resource = self
            .call(move |s| {
                let spec = TypeSpec::from_crd(&crd)?;
                let name = spec.resource();
                s.register(spec)?;
                Ok(name)
            })
            .await?;
        Ok(Response::new(pb::RegisterTypeResponse { resource }))
    }

    async fn list_types(&self, req: Request<pb::ListTypesRequest>) -> Result<Response<pb::ListTypesResponse>, Status> {
        self.admit(&req, "list", "customresourcedefinitions", "")?;
        let types = self
            .store
            .types()
            .iter()
            .map(|t| pb::TypeInfo {
                resource: t.resource(),
                api_version: t.api_version(),
                kind: t.kind.clone(),
                namespaced: t.namespaced,
                status_subresource: t.status_subresource,
                short_names: t.short_names.clone(),
            })
            .collect();
        Ok(Response::new(pb::ListTypesResponse { types }))
    }

    async fn blame(&self, req: Request<pb::ObjectRef>) -> Result<Response<pb::JsonResponse>, Status> {
        let o = object_ref(Some(req.get_ref()))?;
        let (_, spec) = self.admit(&req, "get", &o.resource, &o.namespace)?;
        let resource = spec.map(|s| s.resource()).unwrap_or_default();
        let lines = self.call(move |s| s.blame(&resource, ns_opt(&o.namespace), &o.name)).await?;
        json_response(&lines)
    }

    async fn field_history(&self, req: Request<pb::FieldHistoryRequest>) -> Result<Response<pb::JsonResponse>, Status> {
        let o = object_ref(req.get_ref().object.as_ref())?;
        let (_, spec) = self.admit(&req, "get", &o.resource, &o.namespace)?;
        let r = req.into_inner();
        let resource = spec.map(|s| s.resource()).unwrap_or_default();
        let q = HistoryQuery {
            limit: (r.limit > 0).then_some(r.limit as usize),
            before_revision: (r.before_revision > 0).then_some(r.before_revision),
            ..HistoryQuery::default()
        };
        let t = self.call(move |s| s.field_history(&resource, ns_opt(&o.namespace), &o.name, &r.path, &q)).await?;
        json_response(&t)
    }

    async fn object_log(&self, req: Request<pb::ObjectLogRequest>) -> Result<Response<pb::JsonResponse>, Status> {
        let o = object_ref(req.get_ref().object.as_ref())?;
        let (_, spec) = self.admit(&req, "get", &o.resource, &o.namespace)?;
        let limit = req.get_ref().limit;
        let resource = spec.map(|s| s.resource()).unwrap_or_default();
        let log = self.call(move |s| s.object_log(&resource, ns_opt(&o.namespace), &o.name, (limit > 0).then_some(limit as usize))).await?;
        json_response(&log)
    }

    async fn object_at(&self, req: Request<pb::ObjectAtRequest>) -> Result<Response<pb::ObjectResponse>, Status> {
        let o = object_ref(req.get_ref().object.as_ref())?;
        let (_, spec) = self.admit(&req, "get", &o.resource, &o.namespace)?;
        let r = req.into_inner();
        let resource = spec.map(|s| s.resource()).unwrap_or_default();
        let out = self.call(move |s| s.object_at(&resource, ns_opt(&o.namespace), &o.name, r.revision)).await?;
        match out {
            Some(v) => object_response(&v, &r.accept),
            None => Ok(Response::new(pb::ObjectResponse { object: None })),
        }
    }

    async fn objects_managed_by(&self, req: Request<pb::ObjectsManagedByRequest>) -> Result<Response<pb::JsonResponse>, Status> {
        let r = req.get_ref().clone();
        let (_, spec) = self.admit(&req, "list", &r.resource, "")?;
        let resource = spec.map(|s| s.resource());
        let out = self
            .call(move |s| {
                s.objects_managed_by_page(
                    &r.manager,
                    resource.as_deref(),
                    (r.limit > 0).then_some(r.limit as usize),
                    Some(r.r#continue.as_str()),
                )
            })
            .await?;
        json_response(&out)
    }

    async fn owners_of(&self, req: Request<pb::OwnersOfRequest>) -> Result<Response<pb::JsonResponse>, Status> {
        let r = req.get_ref().clone();
        let (_, spec) = self.admit(&req, "list", &r.resource, "")?;
        let resource = spec.map(|s| s.resource()).unwrap_or_default();
        let out = self.call(move |s| s.owners_of(&resource, &r.path)).await?;
        json_response(&out)
    }

    async fn managers(&self, req: Request<pb::ManagersRequest>) -> Result<Response<pb::JsonResponse>, Status> {
        let r = req.get_ref().clone();
        let (_, spec) = self.admit(&req, "list", &r.resource, "")?;
        let resource = spec.map(|s| s.resource());
        let out = self.call(move |s| s.managers(resource.as_deref())).await?;
        json_response(&out)
    }

    async fn rename_manager(&self, req: Request<pb::RenameManagerRequest>) -> Result<Response<pb::CountResponse>, Status> {
        self.admit(&req, "admin", "", "")?;
        let r = req.into_inner();
        let n = self.call(move |s| s.rename_manager(&r.from, &r.to)).await?;
        Ok(Response::new(pb::CountResponse { count: n as u64 }))
    }

    async fn release(&self, req: Request<pb::ReleaseRequest>) -> Result<Response<pb::CountResponse>, Status> {
        self.admit(&req, "admin", "", "")?;
        let r = req.into_inner();
        let resource = if r.resource.is_empty() { None } else { Some(self.store.find_type(&r.resource).grpc()?.resource()) };
        let n = self
            .call(move |s| s.release(&r.manager, resource.as_deref(), Some(r.label_selector.as_str()).filter(|l| !l.is_empty())))
            .await?;
        Ok(Response::new(pb::CountResponse { count: n as u64 }))
    }
}
