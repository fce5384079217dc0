//! The verbs on resource paths: get, list, create, update (PUT), patch (the four patch types),
//! delete and deletecollection, with dry runs, field validation, the `status` subresource and
//! Table output; watches and fieldstore's history subresources are handed to [`super::watch`]
//! and [`super::history`].

use super::negotiate::{self, Accept, PatchKind};
use super::paths::Target;
use super::query::{FieldValidation, Query};
use super::reply::{encoded, with_warnings, Failure, Reply};
use super::request::{read_body, Ctx};
use super::table::table as to_table;
use super::{history, scale, unknown_fields, watch, Http};
use crate::api::pb;
use crate::service::auth::Identity;
use crate::service::body;
use axum::extract::Request;
use bytes::Bytes;
use fieldstore_engine::patch::PatchType;
use fieldstore_engine::store::{DeleteOptions, GetOptions, SchemaSource, Store, WriteOptions, WriteVerb};
use fieldstore_engine::{Error, Reason};
use http::{header, Method, StatusCode};
use serde_json::{json, Value};
use std::borrow::Cow;
use std::sync::Arc;

/// A write run on the blocking pool: the store and the (possibly stripped) object.
type BlockingWrite = dyn Fn(&Store, &Value) -> Result<Value, Error> + Send + Sync;

/// How [`Ctx::write_checked`] writes its object.
enum Write {
    /// An object verb of the store, with the request body's size ([`StoreService::write_object`]:
    /// awaited on the request's task for small bodies).
    Verb(WriteVerb, WriteOptions, usize),
    /// Another store call, on the blocking pool (patches, namespaces).
    Blocking(Arc<BlockingWrite>),
}

/// Serves a request on a resource path.
pub(crate) async fn serve(h: &Http, id: Identity, t: Target, req: Request) -> Reply {
    let (parts, body) = req.into_parts();
    // A header that is not text is kept as one no media type matches (415/406, not a default).
    let hdr = |n: header::HeaderName| parts.headers.get(n).map(|v| v.to_str().map_or_else(|_| "(not text)".to_string(), str::to_string));
    let accept = negotiate::accept(hdr(header::ACCEPT).as_deref())?;
    let ctx = Ctx {
        h,
        id,
        q: Query::parse(parts.uri.query()),
        accept,
        content_type: hdr(header::CONTENT_TYPE),
        user_agent: hdr(header::USER_AGENT),
        t,
    };
    let method = parts.method;
    let not_allowed = || Err(Failure::method_not_allowed(&method));
    match (ctx.t.name.is_some(), ctx.t.subresource.as_deref()) {
        (false, None) => match method {
            Method::GET if ctx.t.watch || ctx.q.flag("watch")? => watch::serve(&ctx).await,
            Method::GET => ctx.list().await,
            // Writes to every namespace at once are not served, as in Kubernetes.
            _ if ctx.t.spec.namespaced && ctx.t.namespace.is_none() => not_allowed(),
            Method::POST => ctx.create(body).await,
            Method::DELETE => ctx.delete_collection(body).await,
            _ => not_allowed(),
        },
        (true, sub @ (None | Some("status"))) => {
            if sub.is_some() && !ctx.t.spec.status_subresource {
                return Err(Failure::no_route());
            }
            match method {
                Method::GET if ctx.t.watch || (sub.is_none() && ctx.q.flag("watch")?) => watch::serve(&ctx).await,
                Method::GET => ctx.get().await,
                Method::PUT => ctx.update(body).await,
                Method::PATCH => ctx.patch(body).await,
                Method::DELETE if sub.is_none() => ctx.delete(body).await,
                _ => not_allowed(),
            }
        }
        (true, Some("scale")) if scale::SCALABLE.contains(&ctx.t.spec.resource().as_str()) => scale::serve(&ctx, &method, body).await,
        (true, Some(what @ ("blame" | "history" | "log"))) => match method {
            Method::GET => history::object(&ctx, what).await,
            _ => not_allowed(),
        },
        _ => Err(Failure::no_route()),
    }
}

impl Ctx<'_> {
    fn name(&self) -> String {
        self.t.name.clone().unwrap_or_default()
    }

    fn ns(&self) -> Option<String> {
        self.t.namespace.clone()
    }

    fn status(&self) -> bool {
        self.t.subresource.as_deref() == Some("status")
    }

    /// An object as the client accepts it.
    fn respond(&self, v: &Value, code: StatusCode) -> Reply {
        if self.accept == Accept::Table {
            let meta = json!({"resourceVersion": v.pointer("/metadata/resourceVersion").cloned().unwrap_or(json!(""))});
            let table = to_table(&self.t.spec, std::slice::from_ref(v), self.include_object()?, meta);
            return Ok(encoded(body::encode(&table, body::JSON)?, code));
        }
        Ok(encoded(body::encode(v, self.accept.media_type())?, code))
    }

    /// The request body, at most `--max-request-bytes` (413 beyond).
    async fn read(&self, b: axum::body::Body) -> Result<Bytes, Failure> {
        read_body(b, self.h.svc.limits.max_request_bytes).await
    }

    /// A create or update body, as an object of this resource's type: the object, the size of
    /// its body in bytes, and the fields that appeared twice in it.
    async fn object_body(&self, b: axum::body::Body) -> Result<(Value, usize, Vec<String>), Failure> {
        let media = negotiate::object_body(self.content_type.as_deref())?;
        let data = self.read(b).await?;
        let len = data.len();
        let doc = self.h.svc.decode(Some(&pb::Body { content_type: media, data }), "body").await?;
        let mut v = doc.value;
        let Value::Object(m) = &mut v else { return Err(Failure::bad_request("the body must be a JSON object")) };
        m.entry("apiVersion").or_insert_with(|| Value::String(self.t.spec.api_version()));
        m.entry("kind").or_insert_with(|| Value::String(self.t.spec.kind.clone()));
        Ok((v, len, doc.duplicates))
    }

    /// A write of an object body through the service ([`StoreService::write_object`]: on this
    /// task for small bodies), for [`Self::write_checked`].
    async fn write_object(
        &self,
        verb: WriteVerb,
        object: &Value,
        opts: &WriteOptions,
        body_len: usize,
    ) -> Result<Result<Value, Error>, Failure> {
        let (resource, ns) = (self.t.spec.resource(), self.ns().unwrap_or_default());
        self.h.svc.write_object(verb, &resource, &ns, Cow::Borrowed(object), opts, body_len).await.map_err(Failure::from)
    }

    /// Checks (or fills in) the body's name against the URL's.
    fn same_name(&self, v: &mut Value) -> Result<(), Failure> {
        let url = self.name();
        match v.pointer("/metadata/name").and_then(Value::as_str) {
            Some(n) if !n.is_empty() && n != url => {
                Err(Failure::bad_request(format!("the name of the object ({n}) does not match the name on the URL ({url})")))
            }
            Some(n) if !n.is_empty() => Ok(()),
            _ => {
                let meta = v.as_object_mut().map(|m| m.entry("metadata").or_insert_with(|| json!({})));
                match meta {
                    Some(Value::Object(meta)) => {
                        meta.insert("name".into(), Value::String(url));
                        Ok(())
                    }
                    _ => Err(Failure::bad_request("metadata must be an object")),
                }
            }
        }
    }

    /// Runs a write of `object`, treating fields its schema does not declare as `fieldValidation`
    /// asks: Strict fails (400), Warn and Ignore drop them (Warn with a warning each). `write`
    /// gives the store's answer (inner) or the request's failure (outer: deadline, pool).
    async fn write_checked(&self, object: Value, duplicates: &[String], write: Write) -> Result<(Value, Vec<String>), Failure> {
        let validation = self.q.field_validation()?;
        let mut object = object;
        // Fields given twice: the last one counts (as Go's decoders keep it); Strict refuses them.
        let mut warnings: Vec<String> = duplicates.iter().map(|p| format!("duplicate field {:?}", p.trim_start_matches('.'))).collect();
        if validation == FieldValidation::Strict && !warnings.is_empty() {
            return Err(Failure::from(Error::BadRequest(format!("strict decoding error: {}", warnings.join(", ")))));
        }
        let done = |r: Result<Value, Error>, warnings: Vec<String>| {
            r.map(|o| (o, if validation == FieldValidation::Warn { warnings } else { Vec::new() })).map_err(Failure::from)
        };
        // Validation reports what it meets first (an undeclared field hides what is below its
        // siblings): strip, write again, a bounded number of times.
        for _ in 0..MAX_VALIDATION_ROUNDS {
            let errs = match self.write_once(&write, &object).await? {
                Err(Error::Invalid(errs)) => errs,
                r => return done(r, warnings),
            };
            let unknown = unknown_fields::paths(&errs);
            if unknown.is_empty() {
                return Err(Failure::from(Error::Invalid(errs)));
            }
            let found: Vec<String> = unknown.iter().map(|p| format!("unknown field {:?}", p.trim_start_matches('.'))).collect();
            if validation == FieldValidation::Strict {
                return Err(Failure::from(Error::BadRequest(format!("strict decoding error: {}", found.join(", ")))));
            }
            for p in &unknown {
                unknown_fields::remove(&mut object, p);
            }
            warnings.extend(found);
        }
        done(self.write_once(&write, &object).await?, warnings)
    }

    async fn write_once(&self, write: &Write, object: &Value) -> Result<Result<Value, Error>, Failure> {
        match write {
            Write::Verb(verb, opts, len) => self.write_object(*verb, object, opts, *len).await,
            Write::Blocking(f) => self.blocking_write(object, f.clone()).await,
        }
    }

    /// A store call on the blocking pool for [`Self::write_checked`] (patches, namespaces).
    async fn blocking_write(&self, object: &Value, write: Arc<BlockingWrite>) -> Result<Result<Value, Error>, Failure> {
        let object = object.clone();
        self.call(move |s| Ok(write(&s, &object))).await
    }

    async fn get(&self) -> Reply {
        self.admit("get")?;
        let opts = GetOptions { resource_version: self.q.string("resourceVersion"), resource_version_match: self.q.rv_match()? };
        let (resource, ns, name) = (self.t.spec.resource(), self.ns(), self.name());
        let out = self.call(move |s| s.get(&resource, ns.as_deref(), &name, &opts)).await?;
        self.respond(&out, StatusCode::OK)
    }

    async fn list(&self) -> Reply {
        self.admit("list")?;
        let opts = self.q.list_options()?;
        let (resource, ns) = (self.t.spec.resource(), self.ns());
        let (api_version, kind) = (self.t.spec.api_version(), self.t.spec.kind.clone());
        if self.accept == Accept::Table {
            let include = self.include_object()?;
            let list = self.call(move |s| s.list(&resource, ns.as_deref(), &opts)).await?;
            let mut meta = json!({"resourceVersion": list.resource_version.to_string()});
            if let Some(c) = &list.continue_token {
                meta["continue"] = json!(c);
            }
            if let Some(n) = list.remaining_item_count {
                meta["remainingItemCount"] = json!(n);
            }
            let table = to_table(&self.t.spec, &list.items, include, meta);
            return Ok(encoded(body::encode(&table, body::JSON)?, StatusCode::OK));
        }
        // Pages are read as JSON text: no object is parsed and serialised again.
        let list = self.call(move |s| s.list_json(&resource, ns.as_deref(), &opts)).await?;
        let out = list.to_json_bytes(&api_version, &kind);
        Ok(encoded(body::encode_json(out, &api_version, &format!("{kind}List"), self.accept.media_type())?, StatusCode::OK))
    }

    async fn create(&self, b: axum::body::Body) -> Reply {
        self.admit("create")?;
        let (object, len, duplicates) = self.object_body(b).await?;
        let opts = WriteOptions::new(self.q.field_manager(self.user_agent.as_deref())).dry_run(self.q.dry_run()?);
        let (resource, ns) = (self.t.spec.resource(), self.ns());
        let namespace_kind = resource == "namespaces";
        let (mut out, warnings) = if namespace_kind && !opts.dry_run {
            let write: Arc<BlockingWrite> = Arc::new(move |s: &Store, o: &Value| {
                let out = s.create(&resource, ns.as_deref(), o, &opts)?;
                // As Kubernetes' namespace strategy: a new namespace is Active.
                activate_namespace(s, out, &opts.manager)
            });
            self.write_checked(object, &duplicates, Write::Blocking(write)).await?
        } else {
            self.write_checked(object, &duplicates, Write::Verb(WriteVerb::Create, opts, len)).await?
        };
        if namespace_kind && self.q.dry_run()? {
            out["status"] = json!({"phase": "Active"});
        }
        Ok(with_warnings(self.respond(&out, StatusCode::CREATED)?, &warnings))
    }

    async fn update(&self, b: axum::body::Body) -> Reply {
        self.admit("update")?;
        let (mut object, len, duplicates) = self.object_body(b).await?;
        self.same_name(&mut object)?;
        let opts = WriteOptions::new(self.q.field_manager(self.user_agent.as_deref())).dry_run(self.q.dry_run()?).status(self.status());
        let (out, warnings) = self.write_checked(object, &duplicates, Write::Verb(WriteVerb::Update, opts, len)).await?;
        Ok(with_warnings(self.respond(&out, StatusCode::OK)?, &warnings))
    }

    async fn patch(&self, b: axum::body::Body) -> Reply {
        let kind = negotiate::patch_kind(self.content_type.as_deref())?;
        self.admit(if kind == PatchKind::Apply { "apply" } else { "patch" })?;
        let force = self.q.flag("force")?;
        if kind == PatchKind::Strategic
            && !matches!(self.t.spec.schema, SchemaSource::Builtin { .. } | SchemaSource::OpenApi { .. } | SchemaSource::SmdYaml { .. })
        {
            return Err(Failure::unsupported_media_type(
                "application/strategic-merge-patch+json",
                &["application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"],
            ));
        }
        if force && kind != PatchKind::Apply {
            return Err(Failure::new(
                Reason::Invalid,
                "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch",
            ));
        }
        let data = self.read(b).await?;
        let dry_run = self.q.dry_run()?;
        let (resource, ns, name) = (self.t.spec.resource(), self.ns(), self.name());
        let (out, warnings) = if kind == PatchKind::Apply {
            let Some(manager) = self.q.string("fieldManager") else {
                return Err(Failure::new(
                    Reason::Invalid,
                    "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
                ));
            };
            // YAML (JSON is YAML, and read as JSON when it is: clients send JSON).
            let len = data.len();
            let doc = self.h.svc.decode(Some(&pb::Body { content_type: body::YAML.into(), data }), "apply configuration").await?;
            let mut config = doc.value;
            if !config.is_object() {
                return Err(Failure::bad_request("the apply configuration must be an object"));
            }
            self.same_name(&mut config)?;
            let opts = WriteOptions::new(manager).dry_run(dry_run).force(force).status(self.status());
            self.write_checked(config, &doc.duplicates, Write::Verb(WriteVerb::Apply, opts, len)).await?
        } else {
            let doc = self.h.svc.decode(Some(&pb::Body { content_type: body::JSON.into(), data }), "patch").await?;
            let (patch, duplicates) = (doc.value, doc.duplicates);
            let patch_type = match kind {
                PatchKind::Strategic => PatchType::Strategic,
                PatchKind::Merge => PatchType::Merge,
                _ => PatchType::Json,
            };
            let opts = WriteOptions::new(self.q.field_manager(self.user_agent.as_deref())).dry_run(dry_run).status(self.status());
            let write: Arc<BlockingWrite> =
                Arc::new(move |s: &Store, p: &Value| s.patch(&resource, ns.as_deref(), &name, patch_type, p, &opts));
            self.write_checked(patch, &duplicates, Write::Blocking(write)).await?
        };
        Ok(with_warnings(self.respond(&out, StatusCode::OK)?, &warnings))
    }

    /// DeleteOptions from the body (JSON, YAML or protobuf) and the query.
    async fn delete_options(&self, b: axum::body::Body) -> Result<DeleteOptions, Failure> {
        let data = self.read(b).await?;
        let body = if data.iter().all(u8::is_ascii_whitespace) {
            json!({})
        } else {
            let media = negotiate::object_body(self.content_type.as_deref())?;
            self.h.svc.decode(Some(&pb::Body { content_type: media, data: data.clone() }), "DeleteOptions").await?.value
        };
        if !body.is_object() || body.get("preconditions").is_some_and(|p| !p.is_object() && !p.is_null()) {
            return Err(Failure::bad_request(format!(
                "invalid DeleteOptions: {body}: expected an object whose preconditions are an object"
            )));
        }
        let s = |p: &str| body.pointer(p).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string);
        let dry_run = match body.get("dryRun") {
            None | Some(Value::Null) => self.q.dry_run()?,
            Some(v) if v == &json!(["All"]) => true,
            Some(v) if v == &json!([]) => self.q.dry_run()?,
            Some(v) => return Err(Failure::bad_request(format!("Invalid dry run value {v}: only [\"All\"] is supported"))),
        };
        let policy = s("/propagationPolicy").or_else(|| self.q.string("propagationPolicy"));
        if let Some(p) = policy.filter(|p| !matches!(p.as_str(), "Orphan" | "Background" | "Foreground")) {
            return Err(Failure::new(
                Reason::Invalid,
                format!("propagationPolicy: Unsupported value: {p:?}: supported values: \"Foreground\", \"Background\", \"Orphan\""),
            ));
        }
        let grace = body.get("gracePeriodSeconds").filter(|v| !v.is_null());
        if grace.is_some_and(|g| g.as_i64().is_none()) {
            return Err(Failure::bad_request("gracePeriodSeconds must be an integer"));
        }
        if let Some(g) = self.q.get("gracePeriodSeconds") {
            g.parse::<i64>().map_err(|_| Failure::bad_request(format!("invalid gracePeriodSeconds {g:?}")))?;
        }
        Ok(DeleteOptions { uid: s("/preconditions/uid"), resource_version: s("/preconditions/resourceVersion"), dry_run })
    }

    async fn delete(&self, b: axum::body::Body) -> Reply {
        self.admit("delete")?;
        let opts = self.delete_options(b).await?;
        let (resource, ns, name) = (self.t.spec.resource(), self.ns(), self.name());
        let out = self.call(move |s| s.delete(&resource, ns.as_deref(), &name, &opts)).await?;
        let pending = out.pointer("/metadata/finalizers").and_then(Value::as_array).is_some_and(|f| !f.is_empty())
            && out.pointer("/metadata/deletionTimestamp").is_some_and(|d| !d.is_null());
        if pending {
            // Finalizers hold it: the object, with its deletionTimestamp.
            return self.respond(&out, StatusCode::OK);
        }
        let status = fieldstore_engine::Status::success(fieldstore_engine::StatusDetails {
            name: self.name(),
            group: self.t.spec.group.clone(),
            kind: self.t.spec.plural.clone(),
            uid: out.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default().to_string(),
            ..Default::default()
        });
        Ok(encoded(body::encode(&status.to_value(), body::JSON)?, StatusCode::OK))
    }

    async fn delete_collection(&self, b: axum::body::Body) -> Reply {
        self.admit("deletecollection")?;
        let opts = self.delete_options(b).await?;
        let list = self.q.list_options()?;
        let (resource, ns) = (self.t.spec.resource(), self.ns());
        let items = self.call(move |s| s.delete_collection(&resource, ns.as_deref(), &list, &opts)).await?;
        let out =
            json!({"apiVersion": self.t.spec.api_version(), "kind": format!("{}List", self.t.spec.kind), "metadata": {}, "items": items});
        Ok(encoded(body::encode(&out, self.accept.media_type())?, StatusCode::OK))
    }
}

/// How many times a write is retried with the undeclared fields its validation found removed.
const MAX_VALIDATION_ROUNDS: usize = 16;

/// Sets a new namespace's `status.phase` to `Active`.
fn activate_namespace(s: &Store, mut ns: Value, manager: &str) -> Result<Value, Error> {
    if ns.pointer("/status/phase").is_some() {
        return Ok(ns);
    }
    ns["status"] = json!({"phase": "Active"});
    s.update("namespaces", None, &ns, &WriteOptions::new(manager).status(true))
}

/// Makes sure the namespaces Kubernetes has from the start exist: `default`, `kube-system`,
/// `kube-public` and `kube-node-lease`, Active.
///
/// # Errors
/// Those of the store.
pub fn ensure_namespaces(s: &Store) -> Result<(), Error> {
    for name in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        match s.get("namespaces", None, name, &GetOptions::default()) {
            Ok(_) => {}
            Err(Error::NotFound { .. }) => {
                let ns =
                    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}, "spec": {"finalizers": ["kubernetes"]}});
                let opts = WriteOptions::new("fieldstore");
                let created = match s.create("namespaces", None, &ns, &opts) {
                    Ok(v) => v,
                    Err(Error::AlreadyExists { .. }) => continue,
                    Err(e) => return Err(e),
                };
                activate_namespace(s, created, "fieldstore")?;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
