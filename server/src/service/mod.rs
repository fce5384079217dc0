//! The gRPC door: `proto/fieldstore/v1/store.proto`'s messages translated into the request
//! layer's [`Request`]s and its [`Response`]s back into messages; failures as gRPC statuses that
//! carry the Kubernetes `Status` ([`status`]). Streamed lists ([`list_stream`]) are read a
//! message at a time as the connection takes them. Watch streams ([`watch`]) are tasks polled by
//! their connection, fed by the store's watch hub, with each event's message encoded once for
//! all its streams.

mod list_stream;
pub mod status;
pub mod watch;

use crate::api::auth::Identity;
use crate::api::EventEncodings;
use crate::api::{body, mismatch, Api, Collection, ListForm, ObjectKey, Request, Response};
use crate::proto::pb::{self, store_server};
use fieldstore_codec::document::Document;
use fieldstore_engine::patch::PatchType;
use fieldstore_engine::store::{
    DeleteOptions, FieldValidation, GetOptions, HistoryQuery, ListOptions, ResourceVersionMatch, Revision, ScaleChange, WatchOptions,
    WriteOptions, WriteVerb,
};
use fieldstore_engine::Error;
use status::{to_grpc, IntoGrpc};
use std::sync::Arc;
use tonic::{Request as GrpcRequest, Response as GrpcResponse, Status};

/// The gRPC service over the request layer.
#[derive(Clone)]
pub struct StoreService {
    pub(crate) api: Api,
    pub(crate) shutdown: tokio::sync::watch::Receiver<bool>,
    pub(crate) encodings: Arc<EventEncodings>,
}

impl From<pb::Body> for body::Body {
    fn from(b: pb::Body) -> Self {
        body::Body { content_type: b.content_type, data: b.data }
    }
}

impl From<body::Body> for pb::Body {
    fn from(b: body::Body) -> Self {
        pb::Body { content_type: b.content_type, data: b.data }
    }
}

impl From<&fieldstore_engine::store::TypeSpec> for pb::TypeInfo {
    fn from(t: &fieldstore_engine::store::TypeSpec) -> Self {
        pb::TypeInfo {
            resource: t.resource(),
            api_version: t.api_version(),
            kind: t.kind.clone(),
            namespaced: t.namespaced,
            status_subresource: t.status_subresource,
            short_names: t.short_names.clone(),
        }
    }
}

impl StoreService {
    /// The gRPC door of `api`; watches end (with a final bookmark) when `shutdown` turns true.
    pub fn new(api: Api, shutdown: tokio::sync::watch::Receiver<bool>) -> Self {
        StoreService { api, shutdown, encodings: Arc::default() }
    }

    /// Runs a request for the caller of `req` (its identity, put there by the authenticating
    /// layer of `serve`).
    async fn run<T>(&self, req: &GrpcRequest<T>, r: Request) -> Result<Response, Status> {
        let id = req.extensions().get::<Identity>().cloned().unwrap_or_else(Identity::anonymous);
        self.api.run(&id, r).await.grpc()
    }

    /// Parses a body of a request.
    async fn decode(&self, b: Option<pb::Body>, what: &'static str) -> Result<Document, Status> {
        let b = b.map(body::Body::from);
        self.api.decode(b.as_ref(), what).await.grpc()
    }

    /// A write of an object body (create, update, apply).
    async fn write(&self, req: GrpcRequest<pb::WriteRequest>, verb: WriteVerb) -> Result<GrpcResponse<pb::ObjectResponse>, Status> {
        let r = req.get_ref().clone();
        let body_len = r.body.as_ref().map_or(0, |b| b.data.len());
        let body = self.decode(r.body, "body").await?;
        let of = Collection::new(r.resource, Some(&r.namespace));
        let opts =
            WriteOptions::new(r.field_manager).dry_run(r.dry_run).force(r.force).field_validation(field_validation(&r.field_validation)?);
        let request = match subresource(&r.subresource)? {
            Sub::Scale => {
                let name = body.value.pointer("/metadata/name").and_then(serde_json::Value::as_str).unwrap_or_default().to_string();
                Request::UpdateScale {
                    key: ObjectKey::new(of.resource, of.namespace.as_deref(), name),
                    change: ScaleChange::Replace(body.value),
                    opts,
                }
            }
            sub => Request::Write { verb, of, body, body_len, opts: opts.status(sub == Sub::Status) },
        };
        let written = self.run(&req, request).await?.written().grpc()?;
        object_response(&written.object, &r.accept)
    }

    /// Opens the watch a request asks for.
    pub(super) async fn open_watch(&self, req: GrpcRequest<pb::WatchRequest>) -> Result<watch::WatchStream, Status> {
        let r = req.get_ref().clone();
        let opts = WatchOptions {
            resource_version: non_empty(r.resource_version),
            label_selector: non_empty(r.label_selector),
            field_selector: non_empty(r.field_selector),
            allow_bookmarks: r.allow_watch_bookmarks,
            send_initial_events: r.send_initial_events,
        };
        let opened = self.run(&req, Request::Watch { of: Collection::new(r.resource, Some(&r.namespace)), opts }).await?;
        let opened = opened.opened().grpc()?;
        Ok(watch::WatchStream::new(opened, self, r.accept))
    }
}

/// Which part of an object a write addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sub {
    Main,
    Status,
    Scale,
}

fn subresource(s: &str) -> Result<Sub, Status> {
    match s {
        "" => Ok(Sub::Main),
        "status" => Ok(Sub::Status),
        "scale" => Ok(Sub::Scale),
        other => Err(to_grpc(&Error::BadRequest(format!("unknown subresource {other:?}: \"status\" or \"scale\"")))),
    }
}

fn field_validation(s: &str) -> Result<Option<FieldValidation>, Status> {
    match s {
        "" => Ok(None),
        other => FieldValidation::from_name(other)
            .map(Some)
            .ok_or_else(|| to_grpc(&Error::BadRequest(format!("invalid field_validation {other:?}: Ignore, Warn or Strict")))),
    }
}

fn non_empty(s: String) -> Option<String> {
    Some(s).filter(|s| !s.is_empty())
}

fn object_response(v: &serde_json::Value, accept: &str) -> Result<GrpcResponse<pb::ObjectResponse>, Status> {
    Ok(GrpcResponse::new(pb::ObjectResponse { object: Some(body::encode(v, accept).grpc()?.into()) }))
}

fn json_response(r: Result<serde_json::Value, fieldstore_engine::Status>) -> Result<GrpcResponse<pb::JsonResponse>, Status> {
    let v = r.grpc()?;
    Ok(GrpcResponse::new(pb::JsonResponse { json: serde_json::to_vec(&v).map_err(|e| Status::internal(e.to_string()))? }))
}

fn count_response(r: Result<u64, fieldstore_engine::Status>) -> Result<GrpcResponse<pb::CountResponse>, Status> {
    Ok(GrpcResponse::new(pb::CountResponse { count: r.grpc()? }))
}

fn key_of(r: Option<&pb::ObjectRef>) -> Result<ObjectKey, Status> {
    let r = r.cloned().unwrap_or_default();
    if r.resource.is_empty() || r.name.is_empty() {
        return Err(to_grpc(&Error::BadRequest("object.resource and object.name are required".into())));
    }
    Ok(ObjectKey::new(r.resource, Some(&r.namespace), r.name))
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
    Ok(ListOptions {
        label_selector: non_empty(r.label_selector.clone()),
        field_selector: non_empty(r.field_selector.clone()),
        limit: (r.limit > 0).then_some(r.limit as usize),
        continue_token: non_empty(r.r#continue.clone()),
        resource_version: non_empty(r.resource_version.clone()),
        resource_version_match: rv_match(&r.resource_version_match)?,
    })
}

fn patch_type(s: &str) -> Result<PatchType, Status> {
    match s {
        "" => Ok(PatchType::Strategic),
        other => other.parse().map_err(|e: String| to_grpc(&Error::BadRequest(e))),
    }
}

#[tonic::async_trait]
impl store_server::Store for StoreService {
    async fn create(&self, req: GrpcRequest<pb::WriteRequest>) -> Result<GrpcResponse<pb::ObjectResponse>, Status> {
        self.write(req, WriteVerb::Create).await
    }

    async fn update(&self, req: GrpcRequest<pb::WriteRequest>) -> Result<GrpcResponse<pb::ObjectResponse>, Status> {
        self.write(req, WriteVerb::Update).await
    }

    async fn apply(&self, req: GrpcRequest<pb::WriteRequest>) -> Result<GrpcResponse<pb::ObjectResponse>, Status> {
        self.write(req, WriteVerb::Apply).await
    }

    async fn get(&self, req: GrpcRequest<pb::GetRequest>) -> Result<GrpcResponse<pb::ObjectResponse>, Status> {
        let key = key_of(req.get_ref().object.as_ref())?;
        let r = req.get_ref();
        let request = match subresource(&r.subresource)? {
            Sub::Scale => Request::GetScale { key },
            _ => Request::Get {
                key,
                opts: GetOptions {
                    resource_version: non_empty(r.resource_version.clone()),
                    resource_version_match: rv_match(&r.resource_version_match)?,
                },
            },
        };
        let accept = r.accept.clone();
        let out = self.run(&req, request).await?.object().grpc()?;
        object_response(&out, &accept)
    }

    async fn patch(&self, req: GrpcRequest<pb::PatchRequest>) -> Result<GrpcResponse<pb::ObjectResponse>, Status> {
        let key = key_of(req.get_ref().object.as_ref())?;
        let r = req.get_ref().clone();
        let body_len = r.patch.as_ref().map_or(0, |b| b.data.len());
        let patch_type = patch_type(&r.patch_type)?;
        let what = if patch_type == PatchType::Apply { "apply configuration" } else { "patch" };
        let patch = self.decode(r.patch, what).await?;
        let opts =
            WriteOptions::new(r.field_manager).dry_run(r.dry_run).force(r.force).field_validation(field_validation(&r.field_validation)?);
        let request = match subresource(&r.subresource)? {
            Sub::Scale => Request::UpdateScale { key, change: ScaleChange::Patch(patch_type, patch.value), opts },
            sub => Request::Patch { key, patch_type, patch, body_len, opts: opts.status(sub == Sub::Status) },
        };
        let written = self.run(&req, request).await?.written().grpc()?;
        object_response(&written.object, &r.accept)
    }

    async fn delete(&self, req: GrpcRequest<pb::DeleteRequest>) -> Result<GrpcResponse<pb::ObjectResponse>, Status> {
        let key = key_of(req.get_ref().object.as_ref())?;
        let r = req.get_ref();
        let opts =
            DeleteOptions { uid: non_empty(r.uid.clone()), resource_version: non_empty(r.resource_version.clone()), dry_run: r.dry_run };
        let accept = r.accept.clone();
        let out = self.run(&req, Request::Delete { key, opts }).await?.object().grpc()?;
        object_response(&out, &accept)
    }

    async fn delete_collection(&self, req: GrpcRequest<pb::DeleteCollectionRequest>) -> Result<GrpcResponse<pb::ListResponse>, Status> {
        let list = req.get_ref().list.clone().unwrap_or_default();
        let opts = DeleteOptions { dry_run: req.get_ref().dry_run, ..Default::default() };
        let request = Request::DeleteCollection {
            of: Collection::new(list.resource.clone(), Some(&list.namespace)),
            list: list_options(&list)?,
            opts,
        };
        let Response::Deleted { items, spec } = self.run(&req, request).await? else {
            return Err(status::from_k8s(&mismatch("the deleted objects")));
        };
        let out =
            serde_json::json!({"apiVersion": spec.api_version(), "kind": format!("{}List", spec.kind), "metadata": {}, "items": items});
        Ok(GrpcResponse::new(pb::ListResponse { list: Some(body::encode(&out, &list.accept).grpc()?.into()) }))
    }

    async fn list(&self, req: GrpcRequest<pb::ListRequest>) -> Result<GrpcResponse<pb::ListResponse>, Status> {
        let r = req.get_ref();
        let request =
            Request::List { of: Collection::new(r.resource.clone(), Some(&r.namespace)), opts: list_options(r)?, form: ListForm::Json };
        let accept = r.accept.clone();
        let Response::ListJson { page, spec } = self.run(&req, request).await? else { return Err(status::from_k8s(&mismatch("a list"))) };
        let (api_version, kind) = (spec.api_version(), format!("{}List", spec.kind));
        let out = page.to_json_bytes(&api_version, &spec.kind);
        Ok(GrpcResponse::new(pb::ListResponse { list: Some(body::encode_json(out, &api_version, &kind, &accept).grpc()?.into()) }))
    }

    type ListStreamStream = list_stream::Chunks;

    async fn list_stream(&self, req: GrpcRequest<pb::ListRequest>) -> Result<GrpcResponse<Self::ListStreamStream>, Status> {
        let r = req.get_ref();
        let request =
            Request::List { of: Collection::new(r.resource.clone(), Some(&r.namespace)), opts: list_options(r)?, form: ListForm::Stream };
        let accept = r.accept.clone();
        let Response::ListStream { stream, spec } = self.run(&req, request).await? else {
            return Err(status::from_k8s(&mismatch("a list")));
        };
        Ok(GrpcResponse::new(list_stream::chunks(stream, spec.api_version(), spec.kind.clone(), accept).await?))
    }

    type WatchStream = std::pin::Pin<Box<dyn futures_util::Stream<Item = Result<pb::WatchEvent, Status>> + Send>>;

    /// The generated route's watch, whose messages are decoded again from the shared encoding;
    /// `serve` mounts [`watch::StoreApi`], which writes them as encoded.
    async fn watch(&self, req: GrpcRequest<pb::WatchRequest>) -> Result<GrpcResponse<Self::WatchStream>, Status> {
        let messages = self.open_watch(req).await?.messages();
        Ok(GrpcResponse::new(Box::pin(futures_util::StreamExt::map(messages, |m| m.and_then(|m| m.decode())))))
    }

    async fn compact(&self, req: GrpcRequest<pb::CompactRequest>) -> Result<GrpcResponse<pb::CompactResponse>, Status> {
        let revision = Some(Revision(req.get_ref().revision));
        let Response::Revision { compacted, .. } = self.run(&req, Request::Compact { revision }).await? else {
            return Err(status::from_k8s(&mismatch("a revision")));
        };
        Ok(GrpcResponse::new(pb::CompactResponse { compacted_revision: compacted.0 }))
    }

    async fn request_bookmark(
        &self,
        req: GrpcRequest<pb::RequestBookmarkRequest>,
    ) -> Result<GrpcResponse<pb::RequestBookmarkResponse>, Status> {
        let Response::Revision { revision, .. } = self.run(&req, Request::RequestBookmark).await? else {
            return Err(status::from_k8s(&mismatch("a revision")));
        };
        Ok(GrpcResponse::new(pb::RequestBookmarkResponse { revision: revision.0 }))
    }

    async fn revision(&self, req: GrpcRequest<pb::RevisionRequest>) -> Result<GrpcResponse<pb::RevisionResponse>, Status> {
        let Response::Revision { revision, compacted } = self.run(&req, Request::Revision).await? else {
            return Err(status::from_k8s(&mismatch("a revision")));
        };
        Ok(GrpcResponse::new(pb::RevisionResponse { revision: revision.0, compacted_revision: compacted.0 }))
    }

    async fn register_type(&self, req: GrpcRequest<pb::RegisterTypeRequest>) -> Result<GrpcResponse<pb::RegisterTypeResponse>, Status> {
        let definition = self.decode(req.get_ref().definition.clone(), "definition").await?.value;
        let Response::Types(types) = self.run(&req, Request::RegisterType { definition }).await? else {
            return Err(status::from_k8s(&mismatch("the registered type")));
        };
        Ok(GrpcResponse::new(pb::RegisterTypeResponse { resource: types.first().map(|t| t.resource()).unwrap_or_default() }))
    }

    async fn list_types(&self, req: GrpcRequest<pb::ListTypesRequest>) -> Result<GrpcResponse<pb::ListTypesResponse>, Status> {
        let Response::Types(types) = self.run(&req, Request::ListTypes).await? else {
            return Err(status::from_k8s(&mismatch("the types")));
        };
        Ok(GrpcResponse::new(pb::ListTypesResponse { types: types.iter().map(pb::TypeInfo::from).collect() }))
    }

    async fn blame(&self, req: GrpcRequest<pb::ObjectRef>) -> Result<GrpcResponse<pb::JsonResponse>, Status> {
        let key = key_of(Some(req.get_ref()))?;
        json_response(self.run(&req, Request::Blame { key }).await?.json())
    }

    async fn field_history(&self, req: GrpcRequest<pb::FieldHistoryRequest>) -> Result<GrpcResponse<pb::JsonResponse>, Status> {
        let key = key_of(req.get_ref().object.as_ref())?;
        let r = req.get_ref();
        let query = HistoryQuery {
            limit: (r.limit > 0).then_some(r.limit as usize),
            before_revision: (r.before_revision > 0).then_some(Revision(r.before_revision)),
            ..HistoryQuery::default()
        };
        let path = r.path.clone();
        json_response(self.run(&req, Request::FieldHistory { key, path, query }).await?.json())
    }

    async fn object_log(&self, req: GrpcRequest<pb::ObjectLogRequest>) -> Result<GrpcResponse<pb::JsonResponse>, Status> {
        let key = key_of(req.get_ref().object.as_ref())?;
        let limit = req.get_ref().limit;
        json_response(self.run(&req, Request::ObjectLog { key, limit: (limit > 0).then_some(limit as usize) }).await?.json())
    }

    async fn object_at(&self, req: GrpcRequest<pb::ObjectAtRequest>) -> Result<GrpcResponse<pb::ObjectResponse>, Status> {
        let key = key_of(req.get_ref().object.as_ref())?;
        let (revision, accept) = (Revision(req.get_ref().revision), req.get_ref().accept.clone());
        match self.run(&req, Request::ObjectAt { key, revision }).await? {
            Response::ObjectAt(Some(v)) => object_response(&v, &accept),
            Response::ObjectAt(None) => Ok(GrpcResponse::new(pb::ObjectResponse { object: None })),
            _ => Err(status::from_k8s(&mismatch("an object at a revision"))),
        }
    }

    async fn objects_managed_by(&self, req: GrpcRequest<pb::ObjectsManagedByRequest>) -> Result<GrpcResponse<pb::JsonResponse>, Status> {
        let r = req.get_ref().clone();
        let request = Request::ObjectsManagedBy {
            manager: r.manager,
            resource: non_empty(r.resource),
            limit: (r.limit > 0).then_some(r.limit as usize),
            continue_token: Some(r.r#continue),
        };
        json_response(self.run(&req, request).await?.json())
    }

    async fn owners_of(&self, req: GrpcRequest<pb::OwnersOfRequest>) -> Result<GrpcResponse<pb::JsonResponse>, Status> {
        let r = req.get_ref().clone();
        json_response(self.run(&req, Request::OwnersOf { resource: r.resource, path: r.path }).await?.json())
    }

    async fn managers(&self, req: GrpcRequest<pb::ManagersRequest>) -> Result<GrpcResponse<pb::JsonResponse>, Status> {
        let resource = non_empty(req.get_ref().resource.clone());
        json_response(self.run(&req, Request::Managers { resource }).await?.json())
    }

    async fn rename_manager(&self, req: GrpcRequest<pb::RenameManagerRequest>) -> Result<GrpcResponse<pb::CountResponse>, Status> {
        let r = req.get_ref().clone();
        count_response(self.run(&req, Request::RenameManager { from: r.from, to: r.to }).await?.count())
    }

    async fn release(&self, req: GrpcRequest<pb::ReleaseRequest>) -> Result<GrpcResponse<pb::CountResponse>, Status> {
        let r = req.get_ref().clone();
        let request = Request::Release { manager: r.manager, resource: non_empty(r.resource), label_selector: non_empty(r.label_selector) };
        count_response(self.run(&req, request).await?.count())
    }
}
