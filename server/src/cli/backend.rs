//! Where the CLI's store verbs run: in-process on a data directory (`--data DIR`) or against a
//! server (`--server ADDR [--token T]`). Both answer the same calls with the same JSON, so every
//! verb works unchanged either way.

use super::error::{CliError, Result};
use crate::api::pb::{self, store_client::StoreClient};
use crate::service::body;
use fieldstore_engine::patch::PatchType;
use fieldstore_engine::store::{DeleteOptions, GetOptions, HistoryQuery, ListOptions, Store, TypeSpec, WatchOptions, WriteOptions};
use serde_json::Value;
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

impl From<pb::TypeInfo> for TypeInfo {
    fn from(t: pb::TypeInfo) -> Self {
        TypeInfo {
            resource: t.resource,
            api_version: t.api_version,
            kind: t.kind,
            namespaced: t.namespaced,
            status_subresource: t.status_subresource,
            short_names: t.short_names,
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

/// Which write an object body makes (the engine's; the CLI's `replace` is `Update`).
pub use fieldstore_engine::store::WriteVerb;

/// The store verbs, wherever the store is. History and ownership answers are the JSON the
/// library's types serialize to.
pub trait Backend {
    /// Registers the type of a CustomResourceDefinition; returns its resource name.
    fn register_crd(&self, crd: &Value) -> Result<TypeInfo>;
    /// Every registered type.
    fn types(&self) -> Result<Vec<TypeInfo>>;
    /// A write of an object body.
    fn write(&self, verb: WriteVerb, resource: &str, ns: Option<&str>, obj: &Value, opts: &WriteOptions) -> Result<Value>;
    /// A patch.
    fn patch(
        &self,
        resource: &str,
        ns: Option<&str>,
        name: &str,
        patch_type: PatchType,
        patch: &Value,
        opts: &WriteOptions,
    ) -> Result<Value>;
    /// One object (not older than `resource_version` when given).
    fn get(&self, resource: &str, ns: Option<&str>, name: &str, resource_version: Option<String>) -> Result<Value>;
    /// One object as it was at a revision (`None`: it did not exist).
    fn object_at(&self, resource: &str, ns: Option<&str>, name: &str, revision: u64) -> Result<Option<Value>>;
    /// A list, as the Kubernetes List object.
    fn list(&self, resource: &str, ns: Option<&str>, opts: &ListOptions) -> Result<Value>;
    /// A delete.
    fn delete(&self, resource: &str, ns: Option<&str>, name: &str, opts: &DeleteOptions) -> Result<Value>;
    /// Compacts (the current revision when `None`); returns the compacted revision.
    fn compact(&self, revision: Option<u64>) -> Result<u64>;
    /// The current revision.
    fn revision(&self) -> Result<u64>;
    /// Blame lines.
    fn blame(&self, resource: &str, ns: Option<&str>, name: &str) -> Result<Value>;
    /// A field timeline page.
    fn field_history(&self, resource: &str, ns: Option<&str>, name: &str, path: &str, q: &HistoryQuery) -> Result<Value>;
    /// The object's writes.
    fn object_log(&self, resource: &str, ns: Option<&str>, name: &str, limit: Option<usize>) -> Result<Value>;
    /// Owners of a path.
    fn owners_of(&self, resource: &str, path: &str) -> Result<Value>;
    /// A page of the objects a manager owns fields of (`{"items", "continue"}`).
    fn objects_managed_by(
        &self,
        manager: &str,
        resource: Option<&str>,
        limit: Option<usize>,
        continue_token: Option<&str>,
    ) -> Result<Value>;
    /// Managers with counts.
    fn managers(&self, resource: Option<&str>) -> Result<Value>;
    /// Renames a manager; returns the objects changed.
    fn rename_manager(&self, from: &str, to: &str) -> Result<u64>;
    /// Drops a manager's ownership; returns the objects changed.
    fn release(&self, manager: &str, resource: Option<&str>, selector: Option<&str>) -> Result<u64>;
    /// Watches, calling `on_event` with each event as Kubernetes streams it
    /// (`{"type", "object"}`) until it returns false or the watch ends.
    fn watch(&self, resource: &str, ns: Option<&str>, opts: &WatchOptions, on_event: &mut dyn FnMut(Value) -> bool) -> Result<()>;
    /// Makes every open watch emit a bookmark; returns the revision.
    fn request_bookmark(&self) -> Result<u64>;

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

fn json<T: serde::Serialize>(v: &T) -> Result<Value> {
    serde_json::to_value(v).map_err(CliError::InputJson)
}

impl Backend for Store {
    fn register_crd(&self, crd: &Value) -> Result<TypeInfo> {
        let spec = TypeSpec::from_crd(crd)?;
        let info = TypeInfo::from(&spec);
        self.register(spec)?;
        Ok(info)
    }
    fn types(&self) -> Result<Vec<TypeInfo>> {
        Ok(Store::types(self).iter().map(TypeInfo::from).collect())
    }
    fn write(&self, verb: WriteVerb, resource: &str, ns: Option<&str>, obj: &Value, opts: &WriteOptions) -> Result<Value> {
        Ok(Store::write(self, verb, resource, ns, obj, opts)?)
    }
    fn patch(
        &self,
        resource: &str,
        ns: Option<&str>,
        name: &str,
        patch_type: PatchType,
        patch: &Value,
        opts: &WriteOptions,
    ) -> Result<Value> {
        Ok(Store::patch(self, resource, ns, name, patch_type, patch, opts)?)
    }
    fn get(&self, resource: &str, ns: Option<&str>, name: &str, resource_version: Option<String>) -> Result<Value> {
        Ok(Store::get(self, resource, ns, name, &GetOptions { resource_version, ..GetOptions::default() })?)
    }
    fn object_at(&self, resource: &str, ns: Option<&str>, name: &str, revision: u64) -> Result<Option<Value>> {
        Ok(Store::object_at(self, resource, ns, name, revision)?)
    }
    fn list(&self, resource: &str, ns: Option<&str>, opts: &ListOptions) -> Result<Value> {
        let t = self.find_type(resource)?;
        Ok(Store::list(self, resource, ns, opts)?.to_json(&t.api_version(), &t.kind))
    }
    fn delete(&self, resource: &str, ns: Option<&str>, name: &str, opts: &DeleteOptions) -> Result<Value> {
        Ok(Store::delete(self, resource, ns, name, opts)?)
    }
    fn compact(&self, revision: Option<u64>) -> Result<u64> {
        Store::compact(self, revision.unwrap_or_else(|| Store::revision(self)))?;
        Ok(self.compacted_revision())
    }
    fn revision(&self) -> Result<u64> {
        Ok(Store::current_revision(self)?)
    }
    fn blame(&self, resource: &str, ns: Option<&str>, name: &str) -> Result<Value> {
        json(&Store::blame(self, resource, ns, name)?)
    }
    fn field_history(&self, resource: &str, ns: Option<&str>, name: &str, path: &str, q: &HistoryQuery) -> Result<Value> {
        json(&Store::field_history(self, resource, ns, name, path, q)?)
    }
    fn object_log(&self, resource: &str, ns: Option<&str>, name: &str, limit: Option<usize>) -> Result<Value> {
        json(&Store::object_log(self, resource, ns, name, limit)?)
    }
    fn owners_of(&self, resource: &str, path: &str) -> Result<Value> {
        json(&Store::owners_of(self, resource, path)?)
    }
    fn objects_managed_by(
        &self,
        manager: &str,
        resource: Option<&str>,
        limit: Option<usize>,
        continue_token: Option<&str>,
    ) -> Result<Value> {
        json(&Store::objects_managed_by_page(self, manager, resource, limit, continue_token)?)
    }
    fn managers(&self, resource: Option<&str>) -> Result<Value> {
        json(&Store::managers(self, resource)?)
    }
    fn rename_manager(&self, from: &str, to: &str) -> Result<u64> {
        Ok(Store::rename_manager(self, from, to)? as u64)
    }
    fn release(&self, manager: &str, resource: Option<&str>, selector: Option<&str>) -> Result<u64> {
        Ok(Store::release(self, manager, resource, selector)? as u64)
    }
    fn watch(&self, resource: &str, ns: Option<&str>, opts: &WatchOptions, on_event: &mut dyn FnMut(Value) -> bool) -> Result<()> {
        let t = self.find_type(resource)?;
        let mut w = Store::watch(self, resource, ns, opts)?;
        loop {
            match w.next_timeout(Duration::from_millis(500)) {
                Some(ev) => {
                    let end = matches!(ev, fieldstore_engine::store::WatchEvent::Error(_));
                    if !on_event(ev.to_json(&t.api_version(), &t.kind)) || end {
                        return Ok(());
                    }
                }
                None if w.is_ended() => return Ok(()),
                None => {}
            }
        }
    }
    fn request_bookmark(&self) -> Result<u64> {
        Store::request_bookmark(self);
        Ok(Store::revision(self))
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

fn oref(resource: &str, ns: Option<&str>, name: &str) -> Option<pb::ObjectRef> {
    Some(pb::ObjectRef { resource: resource.into(), namespace: ns.unwrap_or("").into(), name: name.into() })
}

fn list_request(resource: &str, ns: Option<&str>, opts: &ListOptions) -> pb::ListRequest {
    pb::ListRequest {
        resource: resource.into(),
        namespace: ns.unwrap_or("").into(),
        label_selector: opts.label_selector.clone().unwrap_or_default(),
        field_selector: opts.field_selector.clone().unwrap_or_default(),
        limit: opts.limit.unwrap_or(0) as u64,
        r#continue: opts.continue_token.clone().unwrap_or_default(),
        resource_version: opts.resource_version.clone().unwrap_or_default(),
        ..Default::default()
    }
}

impl Backend for Remote {
    fn register_crd(&self, crd: &Value) -> Result<TypeInfo> {
        let r = self.call(|mut c| async move { c.register_type(pb::RegisterTypeRequest { definition: body_of(crd) }).await })?;
        self.find_type(&r.resource)
    }
    fn types(&self) -> Result<Vec<TypeInfo>> {
        Ok(self.call(|mut c| async move { c.list_types(pb::ListTypesRequest {}).await })?.types.into_iter().map(TypeInfo::from).collect())
    }
    fn write(&self, verb: WriteVerb, resource: &str, ns: Option<&str>, obj: &Value, opts: &WriteOptions) -> Result<Value> {
        let req = pb::WriteRequest {
            resource: resource.into(),
            namespace: ns.unwrap_or("").into(),
            body: body_of(obj),
            field_manager: opts.manager.clone(),
            force: opts.force,
            dry_run: opts.dry_run,
            subresource: if opts.status { "status".into() } else { String::new() },
            accept: String::new(),
        };
        let r = self.call(|mut c| async move {
            match verb {
                WriteVerb::Apply => c.apply(req).await,
                WriteVerb::Create => c.create(req).await,
                WriteVerb::Update => c.update(req).await,
            }
        })?;
        parse_body(r.object)
    }
    fn patch(
        &self,
        resource: &str,
        ns: Option<&str>,
        name: &str,
        patch_type: PatchType,
        patch: &Value,
        opts: &WriteOptions,
    ) -> Result<Value> {
        let req = pb::PatchRequest {
            object: oref(resource, ns, name),
            patch_type: match patch_type {
                PatchType::Strategic => "strategic",
                PatchType::Merge => "merge",
                PatchType::Json => "json",
            }
            .into(),
            patch: body_of(patch),
            field_manager: opts.manager.clone(),
            dry_run: opts.dry_run,
            subresource: if opts.status { "status".into() } else { String::new() },
            accept: String::new(),
        };
        parse_body(self.call(|mut c| async move { c.patch(req).await })?.object)
    }
    fn get(&self, resource: &str, ns: Option<&str>, name: &str, resource_version: Option<String>) -> Result<Value> {
        let req = pb::GetRequest {
            object: oref(resource, ns, name),
            resource_version: resource_version.unwrap_or_default(),
            ..Default::default()
        };
        parse_body(self.call(|mut c| async move { c.get(req).await })?.object)
    }
    fn object_at(&self, resource: &str, ns: Option<&str>, name: &str, revision: u64) -> Result<Option<Value>> {
        let req = pb::ObjectAtRequest { object: oref(resource, ns, name), revision, accept: String::new() };
        let r = self.call(|mut c| async move { c.object_at(req).await })?;
        r.object.map(|b| serde_json::from_slice(&b.data).map_err(CliError::InputJson)).transpose()
    }
    fn list(&self, resource: &str, ns: Option<&str>, opts: &ListOptions) -> Result<Value> {
        let req = list_request(resource, ns, opts);
        parse_body(self.call(|mut c| async move { c.list(req).await })?.list)
    }
    fn delete(&self, resource: &str, ns: Option<&str>, name: &str, opts: &DeleteOptions) -> Result<Value> {
        let req = pb::DeleteRequest {
            object: oref(resource, ns, name),
            uid: opts.uid.clone().unwrap_or_default(),
            resource_version: opts.resource_version.clone().unwrap_or_default(),
            dry_run: opts.dry_run,
            accept: String::new(),
        };
        parse_body(self.call(|mut c| async move { c.delete(req).await })?.object)
    }
    fn compact(&self, revision: Option<u64>) -> Result<u64> {
        Ok(self.call(|mut c| async move { c.compact(pb::CompactRequest { revision: revision.unwrap_or(0) }).await })?.compacted_revision)
    }
    fn revision(&self) -> Result<u64> {
        Ok(self.call(|mut c| async move { c.revision(pb::RevisionRequest {}).await })?.revision)
    }
    fn blame(&self, resource: &str, ns: Option<&str>, name: &str) -> Result<Value> {
        let req = oref(resource, ns, name).unwrap_or_default();
        parse_json(self.call(|mut c| async move { c.blame(req).await })?)
    }
    fn field_history(&self, resource: &str, ns: Option<&str>, name: &str, path: &str, q: &HistoryQuery) -> Result<Value> {
        let req = pb::FieldHistoryRequest {
            object: oref(resource, ns, name),
            path: path.into(),
            limit: q.limit.unwrap_or(0) as u64,
            before_revision: q.before_revision.unwrap_or(0),
        };
        parse_json(self.call(|mut c| async move { c.field_history(req).await })?)
    }
    fn object_log(&self, resource: &str, ns: Option<&str>, name: &str, limit: Option<usize>) -> Result<Value> {
        let req = pb::ObjectLogRequest { object: oref(resource, ns, name), limit: limit.unwrap_or(0) as u64 };
        parse_json(self.call(|mut c| async move { c.object_log(req).await })?)
    }
    fn owners_of(&self, resource: &str, path: &str) -> Result<Value> {
        let req = pb::OwnersOfRequest { resource: resource.into(), path: path.into() };
        parse_json(self.call(|mut c| async move { c.owners_of(req).await })?)
    }
    fn objects_managed_by(
        &self,
        manager: &str,
        resource: Option<&str>,
        limit: Option<usize>,
        continue_token: Option<&str>,
    ) -> Result<Value> {
        let req = pb::ObjectsManagedByRequest {
            manager: manager.into(),
            resource: resource.unwrap_or("").into(),
            limit: limit.unwrap_or(0) as u64,
            r#continue: continue_token.unwrap_or("").into(),
        };
        parse_json(self.call(|mut c| async move { c.objects_managed_by(req).await })?)
    }
    fn managers(&self, resource: Option<&str>) -> Result<Value> {
        let req = pb::ManagersRequest { resource: resource.unwrap_or("").into() };
        parse_json(self.call(|mut c| async move { c.managers(req).await })?)
    }
    fn rename_manager(&self, from: &str, to: &str) -> Result<u64> {
        let req = pb::RenameManagerRequest { from: from.into(), to: to.into() };
        Ok(self.call(|mut c| async move { c.rename_manager(req).await })?.count)
    }
    fn release(&self, manager: &str, resource: Option<&str>, selector: Option<&str>) -> Result<u64> {
        let req = pb::ReleaseRequest {
            manager: manager.into(),
            resource: resource.unwrap_or("").into(),
            label_selector: selector.unwrap_or("").into(),
        };
        Ok(self.call(|mut c| async move { c.release(req).await })?.count)
    }
    fn watch(&self, resource: &str, ns: Option<&str>, opts: &WatchOptions, on_event: &mut dyn FnMut(Value) -> bool) -> Result<()> {
        let req = pb::WatchRequest {
            resource: resource.into(),
            namespace: ns.unwrap_or("").into(),
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
    fn request_bookmark(&self) -> Result<u64> {
        Ok(self.call(|mut c| async move { c.request_bookmark(pb::RequestBookmarkRequest {}).await })?.revision)
    }
}
