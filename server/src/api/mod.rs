//! The request layer: what every door (gRPC, the Kubernetes HTTP API, the CLI, local or
//! remote) turns a client's call into, and runs here the same way.
//!
//! A door authenticates its caller ([`auth`]), decodes the body ([`body`], through
//! [`Api::decode`]) and builds a typed [`Request`]; [`Api::run`] resolves the resource the client
//! named to its registered type, authorizes the caller for the request's verb, resource and
//! namespace, applies the request limits and the deadline, runs the store's verb (whose kind
//! strategies, field manager and validation live in the engine) and answers a typed
//! [`Response`], or the Kubernetes [`Status`] the request fails with. Doors only translate into
//! and out of these types; none holds another's.
//!
//! Small writes are planned on the caller's task and their commit awaited; every other store
//! call runs on tokio's blocking pool. Both are bounded by the request deadline: a request that
//! times out answers 504 (a write it started may still commit, as with the apiserver).

pub mod auth;
pub mod body;
mod encodings;
mod events;
mod object_encodings;
mod request;
mod response;
pub mod yaml;

use crate::metrics::Metrics;
use auth::{Auth, Identity};
pub use encodings::{Build, EventEncodings};
pub use events::{next_event, Next};
use fieldstore_codec::document::Document;
use fieldstore_engine::patch::PatchType;
pub use fieldstore_engine::store::{Collection, ObjectKey};
use fieldstore_engine::store::{FieldValidation, ObjectList, Store, WriteOptions, WriteVerb, Written};
use fieldstore_engine::{Error, Reason, Status};
pub use object_encodings::{Encoding, ObjectEncodings};
use parking_lot::Mutex;
pub use request::{ListForm, Request};
pub use response::{mismatch, Opened, Response};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// Request bodies from this size up are parsed on the blocking pool ([`Api::decode`]).
pub const PARSE_ON_POOL_BYTES: usize = 64 << 10;

/// Writes of bodies up to this size are planned on the request's task (tens to hundreds of µs
/// of merge work); larger ones, whose merge can take milliseconds, go to the blocking pool so
/// that they do not hold up the connections sharing a runtime thread.
const INLINE_WRITE_BYTES: usize = 64 << 10;

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

/// The request layer over one store: its authorization rules, limits and metrics, shared by
/// every door (cheap to clone).
#[derive(Clone)]
pub struct Api {
    pub(crate) store: Store,
    pub(crate) auth: Arc<Auth>,
    pub(crate) limits: Limits,
    pub(crate) metrics: Arc<Metrics>,
    watches: Arc<Mutex<HashMap<String, usize>>>,
}

impl Api {
    /// The layer over `store`, with these rules, limits and metrics.
    pub fn new(store: Store, auth: Arc<Auth>, limits: Limits, metrics: Arc<Metrics>) -> Self {
        Api { store, auth, limits, metrics, watches: Arc::default() }
    }

    /// The store (for a door's own reads: discovery, the OpenAPI documents).
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The authentication and authorization rules.
    pub fn auth(&self) -> &Auth {
        &self.auth
    }

    /// The request limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Runs `req` for `who`.
    ///
    /// # Errors
    /// The Kubernetes `Status` of the failure: 401/403 from the rules, 404 for an unknown
    /// resource, 413/429 from the limits, 504 past the deadline, and the store's.
    pub async fn run(&self, who: &Identity, mut req: Request) -> Result<Response, Status> {
        self.admit(who, &mut req)?;
        self.execute(who, req).await
    }

    /// Parses a request body ([`body::decode`]): small ones here, those of
    /// [`PARSE_ON_POOL_BYTES`] and more on the blocking pool within the request deadline, so
    /// that a large body does not hold an async worker.
    ///
    /// # Errors
    /// 413 beyond the request size limit; 400 for a body that does not parse.
    pub async fn decode(&self, b: Option<&body::Body>, what: &'static str) -> Result<Document, Status> {
        let max_depth = self.store.max_depth();
        self.check_size(b.map_or(0, |b| b.data.len()))?;
        match b {
            Some(b) if b.data.len() >= PARSE_ON_POOL_BYTES => {
                let b = b.clone();
                self.call(move |_| body::decode(Some(&b), what, max_depth)).await
            }
            b => body::decode(b, what, max_depth).map_err(|e| Status::from(&e)),
        }
    }

    /// Runs a store call on the blocking pool within the request deadline.
    ///
    /// # Errors
    /// 504 past the deadline; the call's own error as its `Status`.
    pub async fn call<R: Send + 'static>(&self, f: impl FnOnce(Store) -> Result<R, Error> + Send + 'static) -> Result<R, Status> {
        let store = self.store.clone();
        let deadline = self.limits.request_deadline;
        match tokio::time::timeout(deadline, tokio::task::spawn_blocking(move || f(store))).await {
            Err(_) => Err(timeout(deadline)),
            Ok(Err(join)) => Err(Status::failure(Reason::InternalError, format!("request failed: {join}"))),
            Ok(Ok(r)) => r.map_err(|e| Status::from(&e)),
        }
    }

    /// Fails with 413 beyond the request size limit.
    fn check_size(&self, bytes: usize) -> Result<(), Status> {
        if bytes > self.limits.max_request_bytes {
            return Err(Status::failure(
                Reason::RequestEntityTooLarge,
                format!("Request entity too large: the request body is {bytes} bytes, the limit is {}", self.limits.max_request_bytes),
            ));
        }
        Ok(())
    }

    /// Resolves the resource `req` names to its registered type's name (a write without one:
    /// its body's type and namespace) and authorizes `who` for it.
    fn admit(&self, who: &Identity, req: &mut Request) -> Result<(), Status> {
        if let Request::Write { of, body, .. } = req {
            if of.resource.is_empty() {
                of.resource = self.store.type_of(&body.value).map_err(|e| Status::from(&e))?.versioned_resource();
            }
            if of.namespace.is_none() {
                of.namespace =
                    body.value.pointer("/metadata/namespace").and_then(Value::as_str).filter(|n| !n.is_empty()).map(str::to_string);
            }
        }
        let verb = req.verb();
        let resolve = |name: &mut String| -> Result<(), Status> {
            if name.is_empty() {
                return Err(Status::failure(Reason::BadRequest, "a resource is required"));
            }
            if !self.store.is_resource(name) {
                match self.store.resource_name(name) {
                    Ok(n) => *name = n,
                    // A deleted CRD's type: only its objects' history answers (the store's
                    // history verbs); every other verb finds nothing.
                    Err(_) if self.store.retired_type(name).is_some() => {}
                    Err(e) => return Err(Status::from(&e)),
                }
            }
            Ok(())
        };
        let (resource, namespace) = match req.address() {
            request::Address::Object(key) => {
                resolve(&mut key.resource)?;
                (key.resource.as_str(), key.namespace.as_deref().unwrap_or(""))
            }
            request::Address::Collection(of) => {
                resolve(&mut of.resource)?;
                (of.resource.as_str(), of.namespace.as_deref().unwrap_or(""))
            }
            request::Address::Resource(r) => {
                resolve(r)?;
                (r.as_str(), "")
            }
            request::Address::AnyResource(r) => {
                if r.as_deref() == Some("") {
                    *r = None;
                }
                if let Some(name) = r.as_mut() {
                    resolve(name)?;
                }
                (r.as_deref().unwrap_or(""), "")
            }
            request::Address::Types => (request::TYPES, ""),
            request::Address::Store => ("", ""),
        };
        // Rules name resources without their version (`widgets.example.com`).
        let unversioned = self
            .store
            .resource_name(resource)
            .ok()
            .or_else(|| self.store.retired_type(resource).map(|t| t.resource()))
            .filter(|r| r != resource);
        self.auth.authorize(who, verb, unversioned.as_deref().unwrap_or(resource), namespace)
    }

    async fn execute(&self, who: &Identity, req: Request) -> Result<Response, Status> {
        match req {
            Request::Get { key, opts } => Ok(Response::Object(self.call(move |s| s.get(&key, &opts)).await?)),
            Request::List { of, opts, form } => {
                let spec = self.spec(&of.resource)?;
                Ok(match form {
                    // Pages read as JSON text: no object is parsed and serialised again.
                    ListForm::Json => Response::ListJson { page: self.call(move |s| s.list_json(&of, &opts)).await?, spec },
                    ListForm::Objects => Response::List { page: self.call(move |s| s.list(&of, &opts)).await?, spec },
                    ListForm::Stream => Response::ListStream { stream: self.call(move |s| s.list_stream(&of, &opts)).await?, spec },
                })
            }
            Request::Watch { of, opts } => {
                let spec = self.spec(&of.resource)?;
                let slot = self.reserve_watch(&who.user)?;
                let watch = self.call(move |s| s.watch(&of, &opts)).await?;
                Ok(Response::Watch(Opened { watch, spec, slot }))
            }
            Request::Write { verb, of, body, body_len, opts } => self.run_write(who, verb, of, body, body_len, opts).await,
            Request::Patch { key, patch_type: PatchType::Apply, mut patch, body_len, opts } => {
                // Server-Side Apply of the patch: a write of the configuration, addressed to the
                // object.
                if !patch.value.is_object() {
                    return Err(Status::failure(Reason::BadRequest, "the apply configuration must be an object"));
                }
                fieldstore_engine::store::address(&mut patch.value, &key.name).map_err(|e| Status::from(&e))?;
                let of = Collection { resource: key.resource, namespace: key.namespace };
                self.run_write(who, WriteVerb::Apply, of, patch, body_len, opts).await
            }
            Request::Patch { key, patch_type, patch, mut opts, .. } => {
                let mut warnings = duplicates(&patch, opts.field_validation)?;
                if opts.manager.is_empty() {
                    opts.manager.clone_from(&who.user);
                }
                let value = patch.value;
                let (resource, name) = (key.resource.clone(), key.name.clone());
                let mut written = self
                    .call(move |s| s.patch_written(&key, patch_type, &value, &opts))
                    .await
                    .map_err(|e| self.naming(e, &resource, Some(&name)))?;
                warnings.append(&mut written.warnings);
                Ok(Response::Written(Written { object: written.object, warnings, created: written.created }))
            }
            Request::Delete { key, opts } => Ok(Response::Object(self.call(move |s| s.delete(&key, &opts)).await?)),
            Request::DeleteCollection { of, list, opts } => {
                let spec = self.spec(&of.resource)?;
                let items = self.call(move |s| s.delete_collection(&of, &list, &opts)).await?;
                Ok(Response::Deleted { items, spec })
            }
            Request::GetScale { key } => Ok(Response::Object(self.call(move |s| s.scale(&key)).await?)),
            Request::UpdateScale { key, change, mut opts } => {
                if opts.manager.is_empty() {
                    opts.manager.clone_from(&who.user);
                }
                let (resource, name) = (key.resource.clone(), key.name.clone());
                let scaled = self.call(move |s| s.update_scale(&key, &change, &opts)).await;
                // A custom resource's scale is validated as the resource (kube-apiserver names it).
                let custom =
                    self.store.resource_type(&resource).is_some_and(|t| matches!(t.schema, fieldstore_engine::store::SchemaSource::Crd(_)));
                Ok(Response::Object(scaled.map_err(|e| if custom { self.naming(e, &resource, Some(&name)) } else { e })?))
            }
            Request::Finalize { key, object, mut opts } => {
                if opts.manager.is_empty() {
                    opts.manager.clone_from(&who.user);
                }
                Ok(Response::Object(self.call(move |s| s.finalize_namespace(&key.name, &object, &opts)).await?))
            }
            other => self.execute_history(other).await,
        }
    }

    /// A create, update or apply of an object body: the fields it set twice and the caller's
    /// name as the manager of a non-apply write without one, then [`Api::write`].
    async fn run_write(
        &self,
        who: &Identity,
        verb: WriteVerb,
        of: Collection,
        body: Document,
        body_len: usize,
        mut opts: WriteOptions,
    ) -> Result<Response, Status> {
        let mut warnings = duplicates(&body, opts.field_validation)?;
        if opts.manager.is_empty() && verb != WriteVerb::Apply {
            opts.manager.clone_from(&who.user);
        }
        let name = body.value.pointer("/metadata/name").and_then(Value::as_str).map(str::to_owned);
        let mut written = match self.write(verb, &of, body.value, &opts, body_len).await {
            Ok(w) => w,
            Err(e) => return Err(self.naming(e, &of.resource, name.as_deref())),
        };
        warnings.append(&mut written.warnings);
        Ok(Response::Written(Written { object: written.object, warnings, created: written.created }))
    }

    /// The requests of history, the owner index, revisions and types.
    async fn execute_history(&self, req: Request) -> Result<Response, Status> {
        fn json<T: serde::Serialize>(v: &T) -> Result<Value, Error> {
            serde_json::to_value(v).map_err(|e| Error::BadRequest(e.to_string()))
        }
        let answer = match req {
            Request::Blame { key } => Response::Json(self.call(move |s| json(&s.blame(&key)?)).await?),
            Request::FieldHistory { key, path, query } => {
                Response::Json(self.call(move |s| json(&s.field_history(&key, &path, &query)?)).await?)
            }
            Request::ObjectLog { key, limit } => Response::Json(self.call(move |s| json(&s.object_log(&key, limit)?)).await?),
            Request::ObjectAt { key, revision } => Response::ObjectAt(self.call(move |s| s.object_at(&key, revision)).await?),
            Request::OwnersOf { resource, path } => Response::Json(self.call(move |s| json(&s.owners_of(&resource, &path)?)).await?),
            Request::ObjectsManagedBy { manager, resource, limit, continue_token } => Response::Json(
                self.call(move |s| json(&s.objects_managed_by_page(&manager, resource.as_deref(), limit, continue_token.as_deref())?))
                    .await?,
            ),
            Request::Managers { resource } => Response::Json(self.call(move |s| json(&s.managers(resource.as_deref())?)).await?),
            Request::RenameManager { from, to } => Response::Count(self.call(move |s| s.rename_manager(&from, &to)).await? as u64),
            Request::Release { manager, resource, label_selector } => {
                Response::Count(self.call(move |s| s.release(&manager, resource.as_deref(), label_selector.as_deref())).await? as u64)
            }
            Request::Compact { revision } => {
                let compacted = self
                    .call(move |s| {
                        s.compact(match revision {
                            Some(r) if r.0 > 0 => r,
                            _ => s.current_revision()?,
                        })?;
                        Ok(s.compacted_revision())
                    })
                    .await?;
                Response::Revision { revision: self.store.revision(), compacted }
            }
            Request::Revision => {
                // On a store shared with other servers, after learning their commits.
                let revision = self.call(|s| s.current_revision()).await?;
                Response::Revision { revision, compacted: self.store.compacted_revision() }
            }
            Request::RequestBookmark => {
                let revision = self
                    .call(|s| {
                        s.request_bookmark();
                        Ok(s.revision())
                    })
                    .await?;
                Response::Revision { revision, compacted: self.store.compacted_revision() }
            }
            Request::RegisterType { definition } => Response::Types(vec![
                self.call(move |s| {
                    let spec = fieldstore_engine::store::TypeSpec::from_crd(&definition)?;
                    s.register(spec.clone())?;
                    Ok(spec)
                })
                .await?,
            ]),
            Request::ListTypes => Response::Types(self.store.types()),
            _ => return Err(Status::failure(Reason::InternalError, "a request reached the wrong executor")),
        };
        Ok(answer)
    }

    /// The registered type of a resource name.
    fn spec(&self, resource: &str) -> Result<fieldstore_engine::store::TypeSpec, Status> {
        self.store
            .resource_type(resource)
            .ok_or_else(|| Status::from(&Error::NotFound { resource: "resource type".into(), name: resource.into() }))
    }

    /// A write of an object body: bodies up to [`INLINE_WRITE_BYTES`] are planned on this task
    /// and their commit awaited (no hand-off to a blocking thread); larger ones run on the
    /// blocking pool. Within the request deadline.
    async fn write(
        &self,
        verb: WriteVerb,
        of: &Collection,
        object: Value,
        opts: &WriteOptions,
        body_len: usize,
    ) -> Result<Written, Status> {
        if body_len > INLINE_WRITE_BYTES {
            // The body moves to the blocking thread (a large one is not copied).
            let (of, opts) = (of.clone(), opts.clone());
            return self.call(move |s| s.write(verb, &of, &object, &opts)).await;
        }
        let deadline = self.limits.request_deadline;
        match tokio::time::timeout(deadline, self.store.write_async(verb, of, &object, opts)).await {
            Err(_) => Err(timeout(deadline)),
            Ok(r) => r.map_err(|e| Status::from(&e)),
        }
    }

    /// An Invalid status names the object, as kube-apiserver's `details.kind`, `group` and
    /// `name` do; other statuses are kept.
    fn naming(&self, mut status: Status, resource: &str, name: Option<&str>) -> Status {
        if status.reason != Reason::Invalid.as_str() {
            return status;
        }
        let details = status.details.get_or_insert_with(Default::default);
        if details.name.is_empty() {
            details.name = name.unwrap_or_default().to_string();
        }
        if details.kind.is_empty() {
            if let Some(spec) = self.store.resource_type(resource) {
                details.kind.clone_from(&spec.kind);
                details.group.clone_from(&spec.group);
            }
        }
        // kube-apiserver's message: `Kind.group "name" is invalid: <cause>` (several in brackets).
        if !details.kind.is_empty() && !details.causes.is_empty() {
            let mut causes: Vec<String> = Vec::new();
            for c in &details.causes {
                let one = if c.field.is_empty() { c.message.clone() } else { format!("{}: {}", c.field, c.message) };
                if !causes.contains(&one) {
                    causes.push(one);
                }
            }
            let kind = if details.group.is_empty() { details.kind.clone() } else { format!("{}.{}", details.kind, details.group) };
            let all = if causes.len() == 1 { causes.remove(0) } else { format!("[{}]", causes.join(", ")) };
            status.message = format!("{kind} {:?} is invalid: {all}", details.name);
        }
        status
    }

    /// Takes one of `user`'s watch slots (shared by every door), released when the slot is
    /// dropped.
    fn reserve_watch(&self, user: &str) -> Result<WatchSlot, Status> {
        {
            let mut w = self.watches.lock();
            let n = w.entry(user.to_string()).or_default();
            if *n >= self.limits.max_watches_per_client {
                return Err(Status::failure(
                    Reason::TooManyRequests,
                    format!("too many watches: {user} already has {n} open (limit {})", self.limits.max_watches_per_client),
                ));
            }
            *n += 1;
        }
        self.metrics.open_watches.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(WatchSlot { user: user.to_string(), watches: self.watches.clone(), metrics: self.metrics.clone() })
    }
}

/// The 504 of a request past its deadline.
fn timeout(deadline: Duration) -> Status {
    Status::failure(Reason::Timeout, format!("the request did not complete within {deadline:?}"))
}

/// Fields a body set twice: the last one counts (as Go's decoders keep it); `Strict` refuses
/// them (400), `Warn` shows each as a warning.
fn duplicates(doc: &Document, mode: Option<FieldValidation>) -> Result<Vec<String>, Status> {
    let found: Vec<String> = doc.duplicates.iter().map(|p| format!("duplicate field {:?}", p.trim_start_matches('.'))).collect();
    match mode {
        Some(FieldValidation::Strict) if !found.is_empty() => {
            Err(Status::from(&Error::BadRequest(format!("strict decoding error: {}", found.join(", ")))))
        }
        Some(FieldValidation::Warn) => Ok(found),
        _ => Ok(Vec::new()),
    }
}

/// A caller's open watch: released when dropped.
pub struct WatchSlot {
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

/// A list page as the Kubernetes List object, its items the page's objects.
#[must_use]
pub fn list_object(page: &ObjectList, spec: &fieldstore_engine::store::TypeSpec) -> Value {
    page.to_json(&spec.api_version(), &spec.kind)
}
