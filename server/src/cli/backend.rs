//! Where the CLI's store verbs run: in-process on a data directory (`--data DIR`) or against a
//! server (`--server ADDR [--token T]`). Both answer the same calls with the same JSON, so every
//! verb works unchanged either way.

use super::error::{CliError, Result};
use crate::api::auth::{Auth, Identity};
use crate::api::{body, Api, Collection, Limits, ListForm, ObjectKey, Request, Response};
use crate::proto::pb::{self, store_client::StoreClient};
use fieldstore_codec::document::Document;
use fieldstore_engine::patch::PatchType;
use fieldstore_engine::store::{
    DeleteOptions, FieldValidation, GetOptions, HistoryQuery, ListOptions, Revision, Store, TypeSpec, WatchOptions, WriteOptions,
};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// A registered type as the CLI needs it.
#[derive(Debug, Clone)]
pub struct TypeInfo {
    /// `plural` or `plural.group`.
    pub resource: String,
    /// `group/version` or `version`.
    pub api_version: String,
    /// The kind.
    pub kind: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Whether the status subresource exists.
    pub status_subresource: bool,
    /// Short names (`cm`, `deploy`).
    pub short_names: Vec<String>,
}

impl From<&TypeSpec> for TypeInfo {
    fn from(t: &TypeSpec) -> Self {
        TypeInfo {
            resource: t.resource(),
            api_version: t.api_version(),
            kind: t.kind.clone(),
            namespaced: t.namespaced,
            status_subresource: t.status_subresource,
            short_names: t.short_names.clone(),
        }
    }
}

/// The namespace of a request: the flag, else the object's, else `default`; none for
/// cluster-scoped types.
pub fn namespace_for(spec: &TypeInfo, flag: Option<&str>, in_object: Option<&str>) -> Option<String> {
    if !spec.namespaced {
        return flag.map(str::to_string);
    }
    Some(flag.or(in_object).filter(|s| !s.is_empty()).unwrap_or("default").to_string())
}

/// The field manager of non-apply writes when `--manager` is not given (and the user the
/// in-process backend runs requests as).
pub const DEFAULT_MANAGER: &str = "fieldstore";

/// Which write an object body makes (the engine's; the CLI's `replace` is `Update`).
pub use fieldstore_engine::store::WriteVerb;

/// Where the CLI's requests run: the request layer ([`Api`]) in-process, or a server over gRPC.
/// Each implements [`Backend::run`] (and the watch stream); every verb the commands call is
/// written once, below, as a request.
pub trait Backend {
    /// Runs one request of the request layer.
    fn run(&self, req: Request) -> Result<Response>;
    /// Watches, calling `on_event` with each event as Kubernetes streams it
    /// (`{"type", "object"}`) until it returns false or the watch ends.
    fn watch(&self, of: Collection, opts: &WatchOptions, on_event: &mut dyn FnMut(Value) -> bool) -> Result<()>;

    /// Registers the type of a CustomResourceDefinition; returns it.
    fn register_crd(&self, crd: &Value) -> Result<TypeInfo> {
        match self.run(Request::RegisterType { definition: crd.clone() })? {
            Response::Types(t) if !t.is_empty() => self.find_type(&t[0].resource()),
            _ => Err(unexpected()),
        }
    }
    /// Every registered type.
    fn types(&self) -> Result<Vec<TypeInfo>> {
        match self.run(Request::ListTypes)? {
            Response::Types(t) => Ok(t.iter().map(TypeInfo::from).collect()),
            _ => Err(unexpected()),
        }
    }
    /// A write of an object body.
    fn write(&self, verb: WriteVerb, of: Collection, obj: &Value, opts: &WriteOptions) -> Result<Value> {
        let body = Document { value: obj.clone(), duplicates: Vec::new() };
        Ok(self.run(Request::Write { verb, of, body, body_len: 0, opts: opts.clone() })?.object()?)
    }
    /// A patch.
    fn patch(&self, key: ObjectKey, patch_type: PatchType, patch: &Value, opts: &WriteOptions) -> Result<Value> {
        let patch = Document { value: patch.clone(), duplicates: Vec::new() };
        Ok(self.run(Request::Patch { key, patch_type, patch, body_len: 0, opts: opts.clone() })?.object()?)
    }
    /// One object (not older than `resource_version` when given).
    fn get(&self, key: ObjectKey, resource_version: Option<String>) -> Result<Value> {
        Ok(self.run(Request::Get { key, opts: GetOptions { resource_version, ..GetOptions::default() } })?.object()?)
    }
    /// One object as it was at a revision (`None`: it did not exist).
    fn object_at(&self, key: ObjectKey, revision: Revision) -> Result<Option<Value>> {
        match self.run(Request::ObjectAt { key, revision })? {
            Response::ObjectAt(v) => Ok(v),
            _ => Err(unexpected()),
        }
    }
    /// A list, as the Kubernetes List object.
    fn list(&self, of: Collection, opts: &ListOptions) -> Result<Value> {
        match self.run(Request::List { of, opts: opts.clone(), form: ListForm::Objects })? {
            Response::List { page, spec } => Ok(crate::api::list_object(&page, &spec)),
            _ => Err(unexpected()),
        }
    }
    /// A delete.
    fn delete(&self, key: ObjectKey, opts: &DeleteOptions) -> Result<Value> {
        Ok(self.run(Request::Delete { key, opts: opts.clone() })?.object()?)
    }
    /// Compacts (the current revision when `None`); returns the compacted revision.
    fn compact(&self, revision: Option<Revision>) -> Result<Revision> {
        match self.run(Request::Compact { revision })? {
            Response::Revision { compacted, .. } => Ok(compacted),
            _ => Err(unexpected()),
        }
    }
    /// The current revision.
    fn revision(&self) -> Result<Revision> {
        match self.run(Request::Revision)? {
            Response::Revision { revision, .. } => Ok(revision),
            _ => Err(unexpected()),
        }
    }
    /// Blame lines.
    fn blame(&self, key: ObjectKey) -> Result<Value> {
        Ok(self.run(Request::Blame { key })?.json()?)
    }
    /// A field timeline page.
    fn field_history(&self, key: ObjectKey, path: &str, query: &HistoryQuery) -> Result<Value> {
        Ok(self.run(Request::FieldHistory { key, path: path.into(), query: query.clone() })?.json()?)
    }
    /// The object's writes.
    fn object_log(&self, key: ObjectKey, limit: Option<usize>) -> Result<Value> {
        Ok(self.run(Request::ObjectLog { key, limit })?.json()?)
    }
    /// Owners of a path.
    fn owners_of(&self, resource: &str, path: &str) -> Result<Value> {
        Ok(self.run(Request::OwnersOf { resource: resource.into(), path: path.into() })?.json()?)
    }
    /// A page of the objects a manager owns fields of (`{"items", "continue"}`).
    fn objects_managed_by(
        &self,
        manager: &str,
        resource: Option<&str>,
        limit: Option<usize>,
        continue_token: Option<&str>,
    ) -> Result<Value> {
        let req = Request::ObjectsManagedBy {
            manager: manager.into(),
            resource: resource.map(str::to_string),
            limit,
            continue_token: continue_token.map(str::to_string),
        };
        Ok(self.run(req)?.json()?)
    }
    /// Managers with counts.
    fn managers(&self, resource: Option<&str>) -> Result<Value> {
        Ok(self.run(Request::Managers { resource: resource.map(str::to_string) })?.json()?)
    }
    /// Renames a manager; returns the objects changed.
    fn rename_manager(&self, from: &str, to: &str) -> Result<u64> {
        Ok(self.run(Request::RenameManager { from: from.into(), to: to.into() })?.count()?)
    }
    /// Drops a manager's ownership; returns the objects changed.
    fn release(&self, manager: &str, resource: Option<&str>, selector: Option<&str>) -> Result<u64> {
        let req = Request::Release {
            manager: manager.into(),
            resource: resource.map(str::to_string),
            label_selector: selector.map(str::to_string),
        };
        Ok(self.run(req)?.count()?)
    }
    /// Makes every open watch emit a bookmark; returns the revision.
    fn request_bookmark(&self) -> Result<Revision> {
        match self.run(Request::RequestBookmark)? {
            Response::Revision { revision, .. } => Ok(revision),
            _ => Err(unexpected()),
        }
    }

    /// The registered type a client names (plural, `plural.group`, kind, singular or short name).
    fn find_type(&self, name: &str) -> Result<TypeInfo> {
        self.types()?
            .into_iter()
            .find(|t| {
                let group = t.api_version.rsplit_once('/').map_or("", |(g, _)| g);
                let plural = t.resource.split('.').next().unwrap_or("");
                fieldstore_engine::store::type_is_named(name, plural, group, &t.kind) || t.short_names.iter().any(|s| s == name)
            })
            .ok_or_else(|| fieldstore_engine::Error::NotFound { resource: "resource type".into(), name: name.into() }.into())
    }

    /// The registered type of an object, from its apiVersion and kind.
    fn type_of(&self, obj: &Value) -> Result<TypeInfo> {
        let s = |k: &str| obj.get(k).and_then(Value::as_str).unwrap_or("");
        let (api_version, kind) = (s("apiVersion"), s("kind"));
        if api_version.is_empty() || kind.is_empty() {
            return Err(fieldstore_engine::Error::BadRequest("the object needs apiVersion and kind".into()).into());
        }
        self.types()?.into_iter().find(|t| t.api_version == api_version && t.kind == kind).ok_or_else(|| {
            fieldstore_engine::Error::NotFound { resource: "resource type".into(), name: format!("{kind}.{api_version}") }.into()
        })
    }
}

/// A response of another kind than the request's (a bug in a backend).
fn unexpected() -> CliError {
    crate::api::mismatch("the answer of its request").into()
}

impl From<fieldstore_engine::Status> for CliError {
    fn from(s: fieldstore_engine::Status) -> Self {
        CliError::Api(s.to_value())
    }
}

/// The request layer over a data directory, in this process, as the local user `fieldstore`
/// (the rules of a server do not apply: whoever can open the directory owns it).
pub struct Local {
    api: Api,
    runtime: tokio::runtime::Runtime,
    who: Identity,
}

impl Local {
    /// The request layer over `store`.
    pub fn new(store: Store) -> Result<Local> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| CliError::Usage(e.to_string()))?;
        let api = Api::new(store, Arc::new(Auth::open()), Limits { max_request_bytes: usize::MAX, ..Limits::default() }, Arc::default());
        Ok(Local { api, runtime, who: Identity { user: DEFAULT_MANAGER.into(), groups: Vec::new() } })
    }
}

impl Backend for Local {
    fn run(&self, req: Request) -> Result<Response> {
        Ok(self.runtime.block_on(self.api.run(&self.who, req))?)
    }
    fn watch(&self, of: Collection, opts: &WatchOptions, on_event: &mut dyn FnMut(Value) -> bool) -> Result<()> {
        let opened = self.run(Request::Watch { of, opts: opts.clone() })?.opened()?;
        let (api_version, kind) = (opened.spec.api_version(), opened.spec.kind.clone());
        let mut w = opened.watch;
        loop {
            match w.next_timeout(Duration::from_millis(500)) {
                Some(ev) => {
                    let end = matches!(ev, fieldstore_engine::store::WatchEvent::Error(_));
                    if !on_event(ev.to_json(&api_version, &kind)) || end {
                        return Ok(());
                    }
                }
                None if w.is_ended() => return Ok(()),
                None => {}
            }
        }
    }
}

/// A store served by `fieldstore serve`.
pub struct Remote {
    runtime: tokio::runtime::Runtime,
    client: StoreClient<tonic::service::interceptor::InterceptedService<tonic::transport::Channel, Token>>,
}

/// Adds the bearer token to every request.
#[derive(Clone)]
pub struct Token(Option<tonic::metadata::MetadataValue<tonic::metadata::Ascii>>);

impl tonic::service::Interceptor for Token {
    fn call(&mut self, mut req: tonic::Request<()>) -> std::result::Result<tonic::Request<()>, tonic::Status> {
        if let Some(v) = &self.0 {
            req.metadata_mut().insert("authorization", v.clone());
        }
        Ok(req)
    }
}

impl Remote {
    /// Connects to `addr` (`host:port`, `http://…` or `https://…`); for https, `ca` is the PEM
    /// certificate to trust (default: the system's roots are not used, so it is required).
    pub fn connect(addr: &str, token: Option<&str>, ca: Option<&std::path::Path>) -> Result<Remote> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| CliError::Usage(e.to_string()))?;
        let url = if addr.contains("://") { addr.to_string() } else { format!("http://{addr}") };
        let tls = match (url.starts_with("https://"), ca) {
            (true, Some(ca)) => {
                let pem = std::fs::read(ca).map_err(|source| CliError::ReadFile { path: ca.display().to_string(), source })?;
                let host = url.trim_start_matches("https://").split([':', '/']).next().unwrap_or("").to_string();
                Some(
                    tonic::transport::ClientTlsConfig::new().ca_certificate(tonic::transport::Certificate::from_pem(pem)).domain_name(host),
                )
            }
            (true, None) => return Err(CliError::Usage("an https server needs --tls-ca FILE (the certificate to trust)".into())),
            _ => None,
        };
        let channel = runtime
            .block_on(async {
                let mut endpoint = tonic::transport::Channel::from_shared(url.clone()).map_err(|e| e.to_string())?;
                if let Some(tls) = tls {
                    endpoint = endpoint.tls_config(tls).map_err(|e| e.to_string())?;
                }
                endpoint.connect().await.map_err(|e| e.to_string())
            })
            .map_err(|e| CliError::Usage(format!("cannot connect to {url}: {e}")))?;
        let token = match token {
            Some(t) => Some(format!("Bearer {t}").parse().map_err(|_| CliError::Usage("the token must be printable ASCII".into()))?),
            None => None,
        };
        let client = StoreClient::with_interceptor(channel, Token(token)).max_decoding_message_size(usize::MAX);
        Ok(Remote { runtime, client })
    }

    fn call<T, F>(
        &self,
        f: impl FnOnce(StoreClient<tonic::service::interceptor::InterceptedService<tonic::transport::Channel, Token>>) -> F,
    ) -> Result<T>
    where
        F: std::future::Future<Output = std::result::Result<tonic::Response<T>, tonic::Status>>,
    {
        self.runtime.block_on(f(self.client.clone())).map(tonic::Response::into_inner).map_err(status_error)
    }
}

/// A server's error as the CLI reports it: its Kubernetes Status.
fn status_error(s: tonic::Status) -> CliError {
    let status = crate::service::status::k8s_status(&s)
        .unwrap_or_else(|| fieldstore_engine::Status::failure_with_code(500, &format!("{:?}", s.code()), s.message()).to_value());
    CliError::Api(status)
}

fn body_of(v: &Value) -> Option<pb::Body> {
    Some(pb::Body { content_type: body::JSON.into(), data: serde_json::to_vec(v).unwrap_or_default().into() })
}

fn parse_body(b: Option<pb::Body>) -> Result<Value> {
    let b = b.ok_or_else(|| CliError::Usage("the server sent no object".into()))?;
    serde_json::from_slice(&b.data).map_err(CliError::InputJson)
}

fn parse_json(r: pb::JsonResponse) -> Result<Value> {
    serde_json::from_slice(&r.json).map_err(CliError::InputJson)
}

fn oref(key: &ObjectKey) -> Option<pb::ObjectRef> {
    Some(pb::ObjectRef { resource: key.resource.clone(), namespace: key.namespace.clone().unwrap_or_default(), name: key.name.clone() })
}

fn list_request(of: &Collection, opts: &ListOptions) -> pb::ListRequest {
    pb::ListRequest {
        resource: of.resource.clone(),
        namespace: of.namespace.clone().unwrap_or_default(),
        label_selector: opts.label_selector.clone().unwrap_or_default(),
        field_selector: opts.field_selector.clone().unwrap_or_default(),
        limit: opts.limit.unwrap_or(0) as u64,
        r#continue: opts.continue_token.clone().unwrap_or_default(),
        resource_version: opts.resource_version.clone().unwrap_or_default(),
        ..Default::default()
    }
}

impl Remote {
    /// A write of an object body over gRPC.
    fn write(&self, verb: WriteVerb, of: Collection, body: &Value, opts: &WriteOptions) -> Result<Response> {
        let req = pb::WriteRequest {
            resource: of.resource,
            namespace: of.namespace.unwrap_or_default(),
            body: body_of(body),
            field_manager: opts.manager.clone(),
            force: opts.force,
            dry_run: opts.dry_run,
            subresource: if opts.status { "status".into() } else { String::new() },
            accept: String::new(),
            field_validation: validation_name(opts),
        };
        let r = self.call(|mut c| async move {
            match verb {
                WriteVerb::Apply => c.apply(req).await,
                WriteVerb::Create => c.create(req).await,
                WriteVerb::Update => c.update(req).await,
            }
        })?;
        Ok(Response::Object(parse_body(r.object)?))
    }

    /// The request layer's history, ownership and store-wide requests over gRPC.
    fn run_history(&self, req: Request) -> Result<Response> {
        let json = |r: pb::JsonResponse| Ok(Response::Json(parse_json(r)?));
        match req {
            Request::Blame { key } => json(self.call(|mut c| async move { c.blame(oref(&key).unwrap_or_default()).await })?),
            Request::FieldHistory { key, path, query } => {
                let req = pb::FieldHistoryRequest {
                    object: oref(&key),
                    path,
                    limit: query.limit.unwrap_or(0) as u64,
                    before_revision: query.before_revision.map_or(0, |r| r.0),
                };
                json(self.call(|mut c| async move { c.field_history(req).await })?)
            }
            Request::ObjectLog { key, limit } => {
                let req = pb::ObjectLogRequest { object: oref(&key), limit: limit.unwrap_or(0) as u64 };
                json(self.call(|mut c| async move { c.object_log(req).await })?)
            }
            Request::ObjectAt { key, revision } => {
                let req = pb::ObjectAtRequest { object: oref(&key), revision: revision.0, accept: String::new() };
                let r = self.call(|mut c| async move { c.object_at(req).await })?;
                Ok(Response::ObjectAt(r.object.map(|b| serde_json::from_slice(&b.data).map_err(CliError::InputJson)).transpose()?))
            }
            Request::OwnersOf { resource, path } => {
                json(self.call(|mut c| async move { c.owners_of(pb::OwnersOfRequest { resource, path }).await })?)
            }
            Request::ObjectsManagedBy { manager, resource, limit, continue_token } => {
                let req = pb::ObjectsManagedByRequest {
                    manager,
                    resource: resource.unwrap_or_default(),
                    limit: limit.unwrap_or(0) as u64,
                    r#continue: continue_token.unwrap_or_default(),
                };
                json(self.call(|mut c| async move { c.objects_managed_by(req).await })?)
            }
            Request::Managers { resource } => {
                let req = pb::ManagersRequest { resource: resource.unwrap_or_default() };
                json(self.call(|mut c| async move { c.managers(req).await })?)
            }
            Request::RenameManager { from, to } => {
                Ok(Response::Count(self.call(|mut c| async move { c.rename_manager(pb::RenameManagerRequest { from, to }).await })?.count))
            }
            Request::Release { manager, resource, label_selector } => {
                let req = pb::ReleaseRequest {
                    manager,
                    resource: resource.unwrap_or_default(),
                    label_selector: label_selector.unwrap_or_default(),
                };
                Ok(Response::Count(self.call(|mut c| async move { c.release(req).await })?.count))
            }
            Request::Compact { revision } => {
                let r = self.call(|mut c| async move { c.compact(pb::CompactRequest { revision: revision.map_or(0, |r| r.0) }).await })?;
                Ok(Response::Revision { revision: Revision(0), compacted: Revision(r.compacted_revision) })
            }
            Request::Revision => {
                let r = self.call(|mut c| async move { c.revision(pb::RevisionRequest {}).await })?;
                Ok(Response::Revision { revision: Revision(r.revision), compacted: Revision(r.compacted_revision) })
            }
            Request::RequestBookmark => {
                let r = self.call(|mut c| async move { c.request_bookmark(pb::RequestBookmarkRequest {}).await })?;
                Ok(Response::Revision { revision: Revision(r.revision), compacted: Revision(0) })
            }
            Request::RegisterType { definition } => {
                let r =
                    self.call(|mut c| async move { c.register_type(pb::RegisterTypeRequest { definition: body_of(&definition) }).await })?;
                // The server answers the type's resource name: the type itself is in its list.
                let types = self.call(|mut c| async move { c.list_types(pb::ListTypesRequest {}).await })?.types;
                Ok(Response::Types(types.into_iter().filter(|t| t.resource == r.resource).map(spec_of).collect()))
            }
            Request::ListTypes => {
                let r = self.call(|mut c| async move { c.list_types(pb::ListTypesRequest {}).await })?;
                Ok(Response::Types(r.types.into_iter().map(spec_of).collect()))
            }
            _ => Err(CliError::Usage("this request is not served over gRPC".into())),
        }
    }
}

/// A type as `ListTypes` describes it (without its schema, which the CLI does not need).
fn spec_of(t: pb::TypeInfo) -> TypeSpec {
    let (group, version) = t.api_version.rsplit_once('/').unwrap_or(("", &t.api_version));
    let plural = t.resource.split('.').next().unwrap_or("");
    TypeSpec::new(group, version, t.kind.as_str(), plural)
        .namespaced(t.namespaced)
        .with_status_subresource(t.status_subresource)
        .with_short_names(t.short_names.clone())
}

fn validation_name(opts: &WriteOptions) -> String {
    match opts.field_validation {
        None => String::new(),
        Some(FieldValidation::Ignore) => "Ignore".into(),
        Some(FieldValidation::Warn) => "Warn".into(),
        Some(FieldValidation::Strict) => "Strict".into(),
    }
}

impl Backend for Remote {
    fn run(&self, req: Request) -> Result<Response> {
        match req {
            Request::Write { verb, of, body, opts, .. } => self.write(verb, of, &body.value, &opts),
            Request::Patch { key, patch_type, patch, opts, .. } => {
                let req = pb::PatchRequest {
                    object: oref(&key),
                    patch_type: patch_type.to_string(),
                    patch: body_of(&patch.value),
                    field_manager: opts.manager.clone(),
                    dry_run: opts.dry_run,
                    subresource: if opts.status { "status".into() } else { String::new() },
                    accept: String::new(),
                    field_validation: validation_name(&opts),
                    force: opts.force,
                };
                Ok(Response::Object(parse_body(self.call(|mut c| async move { c.patch(req).await })?.object)?))
            }
            Request::Get { key, opts } => {
                let req = pb::GetRequest {
                    object: oref(&key),
                    resource_version: opts.resource_version.unwrap_or_default(),
                    ..Default::default()
                };
                Ok(Response::Object(parse_body(self.call(|mut c| async move { c.get(req).await })?.object)?))
            }
            Request::List { of, opts, .. } => {
                let req = list_request(&of, &opts);
                let list = parse_body(self.call(|mut c| async move { c.list(req).await })?.list)?;
                Ok(Response::Json(list))
            }
            Request::Delete { key, opts } => {
                let req = pb::DeleteRequest {
                    object: oref(&key),
                    uid: opts.uid.clone().unwrap_or_default(),
                    resource_version: opts.resource_version.clone().unwrap_or_default(),
                    dry_run: opts.dry_run,
                    accept: String::new(),
                };
                Ok(Response::Object(parse_body(self.call(|mut c| async move { c.delete(req).await })?.object)?))
            }
            other => self.run_history(other),
        }
    }

    fn list(&self, of: Collection, opts: &ListOptions) -> Result<Value> {
        Ok(self.run(Request::List { of, opts: opts.clone(), form: ListForm::Objects })?.json()?)
    }

    fn watch(&self, of: Collection, opts: &WatchOptions, on_event: &mut dyn FnMut(Value) -> bool) -> Result<()> {
        let req = pb::WatchRequest {
            resource: of.resource,
            namespace: of.namespace.unwrap_or_default(),
            resource_version: opts.resource_version.clone().unwrap_or_default(),
            label_selector: opts.label_selector.clone().unwrap_or_default(),
            field_selector: opts.field_selector.clone().unwrap_or_default(),
            allow_watch_bookmarks: opts.allow_bookmarks,
            send_initial_events: opts.send_initial_events,
            accept: String::new(),
        };
        let mut client = self.client.clone();
        self.runtime.block_on(async move {
            let mut stream = client.watch(req).await.map_err(status_error)?.into_inner();
            while let Some(ev) = stream.message().await.map_err(status_error)? {
                let object: Value = ev.object.map(|b| serde_json::from_slice(&b.data).unwrap_or(Value::Null)).unwrap_or(Value::Null);
                if !on_event(serde_json::json!({"type": ev.r#type, "object": object})) {
                    break;
                }
            }
            Ok(())
        })
    }
}
