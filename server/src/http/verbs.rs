//! The verbs on resource paths: get, list, create, update (PUT), patch (the four patch types),
//! delete and deletecollection, with dry runs, field validation, the `status` subresource and
//! Table output, each translated into the request layer's [`Request`]; watches and
//! fieldstore's history subresources are handed to [`super::watch`] and [`super::history`].

use super::negotiate::{self, partial, Form};
use super::paths::Target;
use super::query::{self, OptionErrors, Query};
use super::reply::{encoded, with_warnings, Failure, Reply};
use super::request::Ctx;
use super::table::table as to_table;
use super::{history, list_body, scale, watch, Http};
use crate::api::auth::Identity;
use crate::api::body;
use crate::api::{ListForm, Request, Response};
use axum::extract::Request as HttpRequest;
use fieldstore_codec::k8s_protobuf;
use fieldstore_engine::patch::PatchType;
use fieldstore_engine::store::{has_scale, DeleteOptions, FieldValidation, GetOptions, SchemaSource, WriteOptions, WriteVerb, Written};
use http::{header, Method, StatusCode};
use serde_json::{json, Value};

/// Serves a request on a resource path.
pub(crate) async fn serve(h: &Http, id: Identity, t: Target, req: HttpRequest) -> Reply {
    let (parts, body) = req.into_parts();
    // A header that is not text is kept as one no media type matches (415/406, not a default).
    let hdr = |n: header::HeaderName| parts.headers.get(n).map(|v| v.to_str().map_or_else(|_| "(not text)".to_string(), str::to_string));
    let custom = !k8s_protobuf::is_built_in(&t.spec.api_version(), &t.spec.kind);
    let accept_header = hdr(header::ACCEPT);
    let accept = match negotiate::accept(accept_header.as_deref(), custom) {
        Ok(a) => a,
        // A custom resource asked for in protobuf only: kube-apiserver's 406, in protobuf.
        Err(_) if custom && accept_header.as_deref().is_some_and(|a| a.to_ascii_lowercase().contains(body::PROTOBUF)) => {
            let f = Failure::with_code(
                406,
                "NotAcceptable",
                "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf",
            );
            return Ok(encoded(body::encode(&f.0, body::PROTOBUF)?, StatusCode::NOT_ACCEPTABLE));
        }
        Err(f) => return Err(f),
    };
    let ctx = Ctx {
        h,
        id,
        q: Query::parse(parts.uri.query()),
        accept,
        content_type: hdr(header::CONTENT_TYPE),
        user_agent: hdr(header::USER_AGENT),
        t,
    };
    // A deprecated version of a custom resource: kube-apiserver's warning on every request.
    let deprecated = ctx.t.spec.deprecation_warning();
    let r = match serve_verb(&ctx, parts.method, body).await {
        // Failures in YAML too, when that is what the client reads.
        Err(f) if accept.media == body::YAML => {
            Ok(encoded(body::encode(&f.0, body::YAML)?, StatusCode::from_u16(f.code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)))
        }
        r => r,
    };
    match deprecated {
        Some(w) => Ok(super::reply::with_warnings(r.unwrap_or_else(axum::response::IntoResponse::into_response), &[w])),
        None => r,
    }
}

async fn serve_verb(ctx: &Ctx<'_>, method: Method, body: axum::body::Body) -> Reply {
    let not_allowed = || Err(Failure::method_not_allowed(&method));
    match (ctx.t.name.is_some(), ctx.t.subresource.as_deref()) {
        (false, None) => match method {
            Method::GET if ctx.t.watch || ctx.q.flag("watch") => watch::serve(ctx).await,
            Method::GET => ctx.list().await,
            // Writes to every namespace at once are not served, as in Kubernetes.
            _ if ctx.t.spec.namespaced && ctx.t.namespace.is_none() => not_allowed(),
            Method::POST => ctx.create(body).await,
            Method::DELETE => ctx.delete_collection(body).await,
            _ => not_allowed(),
        },
        (true, sub @ (None | Some("status"))) => {
            if sub.is_some() && !ctx.t.spec.status_subresource {
                return Err(no_subresource(ctx));
            }
            match method {
                Method::GET if ctx.t.watch || (sub.is_none() && ctx.q.flag("watch")) => watch::serve(ctx).await,
                Method::GET => ctx.get().await,
                Method::PUT => ctx.update(body).await,
                Method::PATCH => ctx.patch(body).await,
                Method::DELETE if sub.is_none() => ctx.delete(body).await,
                _ => not_allowed(),
            }
        }
        (true, Some("scale")) if has_scale(&ctx.t.spec) => scale::serve(ctx, &method, body).await,
        (true, Some("finalize")) if ctx.t.spec.resource() == "namespaces" => match method {
            Method::PUT => ctx.finalize(body).await,
            _ => not_allowed(),
        },
        (true, Some(what @ ("blame" | "history" | "log"))) => match method {
            Method::GET => history::object(ctx, what).await,
            _ => not_allowed(),
        },
        (true, Some(_)) => Err(no_subresource(ctx)),
        _ => Err(Failure::no_route()),
    }
}

/// A subresource the type does not have: for a custom resource, kube-apiserver's CRD handler
/// answers NotFound for the object (`widgets.example.com "w" not found`); for a built-in kind,
/// no route.
fn no_subresource(ctx: &Ctx<'_>) -> Failure {
    match (&ctx.t.spec.schema, &ctx.t.name) {
        (fieldstore_engine::store::SchemaSource::Crd(_), Some(name)) => Failure::from(fieldstore_engine::Error::NotFound {
            resource: format!("{}.{}", ctx.t.spec.plural, ctx.t.spec.group),
            name: name.clone(),
        }),
        _ => Failure::no_route(),
    }
}

impl Ctx<'_> {
    fn name(&self) -> String {
        self.t.name.clone().unwrap_or_default()
    }

    fn status(&self) -> bool {
        self.t.subresource.as_deref() == Some("status")
    }

    /// An object as the client accepts it.
    fn respond(&self, v: &Value, code: StatusCode) -> Reply {
        match self.accept.form {
            Form::Table => {
                let meta = json!({"resourceVersion": v.pointer("/metadata/resourceVersion").cloned().unwrap_or(json!(""))});
                let table = to_table(&self.t.spec, std::slice::from_ref(v), self.include_object()?, meta);
                Ok(encoded(body::encode(&table, body::JSON)?, code))
            }
            Form::Partial => Ok(encoded(body::encode(&partial(v), self.accept.media)?, code)),
            Form::PartialList => Err(self.not_transformable("PartialObjectMetadataList", "is not a list", "")),
            Form::Object => Ok(encoded(body::encode(v, self.accept.media_type())?, code)),
        }
    }

    /// [`Ctx::respond`] with a stored version of an object (read, or written by a write that
    /// is not a dry run): its protobuf encoding is the one kept for it, or kept for the lists
    /// that will read it ([`crate::api::ObjectEncodings`]).
    fn respond_stored(&self, v: &Value, code: StatusCode) -> Reply {
        let (api_version, kind) = (self.t.spec.api_version(), &self.t.spec.kind);
        let message = k8s_protobuf::MessageType::for_kind(&api_version, kind).ok();
        let (Form::Object, body::PROTOBUF, Some(message)) = (self.accept.form, self.accept.media, message) else {
            return self.respond(v, code);
        };
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
        if (s("apiVersion"), s("kind")) != (api_version, kind.clone()) {
            return self.respond(v, code);
        }
        let raw = self.h.objects.of_stored(message, v).map_err(|e| Failure::bad_request(format!("cannot encode as protobuf: {e}")))?;
        let envelope = fieldstore_codec::Envelope {
            api_version: s("apiVersion"),
            kind: s("kind"),
            raw: raw.to_vec(),
            content_encoding: String::new(),
            content_type: String::new(),
        };
        Ok(encoded(body::Body { content_type: body::PROTOBUF.into(), data: envelope.encode().into() }, code))
    }

    /// kube-apiserver's 406 for a PartialObjectMetadata(List) of the other shape: `you requested
    /// PartialObjectMetadata, but the requested object is a list (*core.ConfigMapList)`.
    fn not_transformable(&self, requested: &str, shape: &str, suffix: &str) -> Failure {
        let spec = &self.t.spec;
        let go_type = if k8s_protobuf::is_built_in(&spec.api_version(), &spec.kind) {
            let package = if spec.group.is_empty() { "core" } else { spec.group.split('.').next().unwrap_or("") };
            format!("{package}.{}{suffix}", spec.kind)
        } else {
            format!("unstructured.Unstructured{suffix}")
        };
        Failure::with_code(406, "NotAcceptable", format!("you requested {requested}, but the requested object {shape} (*{go_type})"))
    }

    /// What a write made, as the client accepts it, with its warnings.
    fn respond_written(&self, w: &Written, code: StatusCode) -> Reply {
        let reply = if self.q.get("dryRun").is_some() { self.respond(&w.object, code)? } else { self.respond_stored(&w.object, code)? };
        Ok(with_warnings(reply, &w.warnings))
    }

    /// A create or update body, as an object of this resource's type (apiVersion and kind
    /// filled in when missing), with the fields that appeared twice in it; and its size.
    async fn object_body(&self, b: axum::body::Body) -> Result<(fieldstore_codec::document::Document, usize), Failure> {
        let media = negotiate::object_body(self.content_type.as_deref())?;
        let data = self.read(b).await?;
        let len = data.len();
        let mut doc = self.decode(&media, data, "body").await?;
        let Value::Object(m) = &mut doc.value else { return Err(Failure::bad_request("the body must be a JSON object")) };
        m.entry("apiVersion").or_insert_with(|| Value::String(self.t.spec.api_version()));
        m.entry("kind").or_insert_with(|| Value::String(self.t.spec.kind.clone()));
        Ok((doc, len))
    }

    /// The options of a create or update (`kind`: `CreateOptions`, `UpdateOptions`): manager,
    /// dry run, the status subresource, field validation.
    fn write_options(&self, kind: &'static str, manager: String) -> Result<WriteOptions, Failure> {
        let (dry_run, validation) = self.q.write_options(kind)?;
        Ok(self.options_of(manager, dry_run, validation))
    }

    /// The options of a write by `manager` with its dry run and field validation.
    fn options_of(&self, manager: String, dry_run: bool, validation: FieldValidation) -> WriteOptions {
        WriteOptions::new(manager).dry_run(dry_run).status(self.status()).field_validation(Some(validation))
    }

    async fn get(&self) -> Reply {
        let opts =
            GetOptions { resource_version: self.q.string("resourceVersion"), resource_version_match: self.q.rv_match().ok().flatten() };
        let out = self.run(Request::Get { key: self.key(), opts }).await?.object()?;
        self.respond_stored(&out, StatusCode::OK)
    }

    async fn list(&self) -> Reply {
        let opts = self.q.list_options(false)?;
        if self.accept.form == Form::Partial {
            return Err(self.not_transformable("PartialObjectMetadata", "is a list", "List"));
        }
        if matches!(self.accept.form, Form::Table | Form::PartialList) {
            let Response::List { page, .. } = self.run(Request::List { of: self.collection(), opts, form: ListForm::Objects }).await?
            else {
                return Err(Failure::from(crate::api::mismatch("the answer of its request")));
            };
            let meta = page.metadata();
            if self.accept.form == Form::PartialList {
                let items: Vec<Value> = page.items.iter().map(partial).collect();
                let out = json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": meta, "items": items});
                return Ok(encoded(body::encode(&out, self.accept.media)?, StatusCode::OK));
            }
            let table = to_table(&self.t.spec, &page.items, self.include_object()?, meta);
            return Ok(encoded(body::encode(&table, body::JSON)?, StatusCode::OK));
        }
        let (api_version, list_kind) = (self.t.spec.api_version(), format!("{}List", self.t.spec.kind));
        let streamed = match self.accept.media {
            body::PROTOBUF => k8s_protobuf::is_built_in(&api_version, &list_kind),
            media => media == body::JSON,
        };
        if streamed {
            // Sent as it is read (`list_body`): an answer of any length holds a chunk at a time.
            let Response::ListStream { stream, spec } =
                self.run(Request::List { of: self.collection(), opts, form: ListForm::Stream }).await?
            else {
                return Err(Failure::from(crate::api::mismatch("the answer of its request")));
            };
            let custom = matches!(spec.schema, SchemaSource::Crd(_));
            return if self.accept.media == body::PROTOBUF {
                list_body::protobuf(stream, self.h.objects.clone(), &spec.api_version(), &spec.kind).await
            } else {
                // kube-apiserver's lists of custom resources (unstructured) always carry `continue`.
                list_body::json(stream, &spec.api_version(), &spec.kind, custom).await
            };
        }
        let Response::ListJson { mut page, spec } = self.run(Request::List { of: self.collection(), opts, form: ListForm::Json }).await?
        else {
            return Err(Failure::from(crate::api::mismatch("the answer of its request")));
        };
        let (api_version, list_kind) = (spec.api_version(), format!("{}List", spec.kind));
        if matches!(spec.schema, SchemaSource::Crd(_)) && page.continue_token.is_none() {
            page.continue_token = Some(String::new());
        }
        let out = page.to_json_bytes(&api_version, &spec.kind);
        Ok(encoded(body::encode_json(out, &api_version, &list_kind, self.accept.media_type())?, StatusCode::OK))
    }

    async fn create(&self, b: axum::body::Body) -> Reply {
        self.admit("create")?;
        let opts = self.write_options("CreateOptions", self.field_manager())?;
        let (body, body_len) = self.object_body(b).await?;
        let request = Request::Write { verb: WriteVerb::Create, of: self.collection(), body, body_len, opts };
        self.respond_written(&self.run(request).await?.written()?, StatusCode::CREATED)
    }

    async fn update(&self, b: axum::body::Body) -> Reply {
        self.admit("update")?;
        let opts = self.write_options("UpdateOptions", self.field_manager())?;
        let (mut body, body_len) = self.object_body(b).await?;
        fieldstore_engine::store::address(&mut body.value, &self.name())?;
        let request = Request::Write { verb: WriteVerb::Update, of: self.collection(), body, body_len, opts };
        self.respond_written(&self.run(request).await?.written()?, StatusCode::OK)
    }

    /// `PUT namespaces/NAME/finalize`.
    async fn finalize(&self, b: axum::body::Body) -> Reply {
        self.admit("update")?;
        let opts = self.write_options("UpdateOptions", self.field_manager())?;
        let (mut body, _) = self.object_body(b).await?;
        fieldstore_engine::store::address(&mut body.value, &self.name())?;
        let out = self.run(Request::Finalize { key: self.key(), object: body.value, opts }).await?.object()?;
        self.respond(&out, StatusCode::OK)
    }

    async fn patch(&self, b: axum::body::Body) -> Reply {
        let patch_type = negotiate::patch_type(self.content_type.as_deref())?;
        self.admit(if patch_type == PatchType::Apply { "apply" } else { "patch" })?;
        let force = self.q.flag("force");
        if patch_type == PatchType::Strategic
            && !matches!(self.t.spec.schema, SchemaSource::Builtin { .. } | SchemaSource::OpenApi { .. } | SchemaSource::SmdYaml { .. })
        {
            return Err(Failure::unsupported_media_type(
                "application/strategic-merge-patch+json",
                &["application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"],
            ));
        }
        // ValidatePatchOptions: force and fieldManager, then dryRun and fieldValidation.
        let mut errs = OptionErrors::new("PatchOptions");
        let manager = if patch_type == PatchType::Apply {
            if self.q.get("fieldManager").is_none() {
                errs.required("fieldManager", "is required for apply patch");
            }
            self.q.string("fieldManager").unwrap_or_default()
        } else {
            if self.q.get("force").is_some() {
                errs.forbidden("force", "may not be specified for non-apply patch");
            }
            self.field_manager()
        };
        let dry_run = self.q.dry_run(&mut errs);
        let validation = self.q.field_validation(&mut errs);
        errs.check()?;
        let data = self.read(b).await?;
        let body_len = data.len();
        let patch = if patch_type == PatchType::Apply {
            // YAML (JSON is YAML, and read as JSON when it is: clients send JSON).
            self.decode(body::YAML, data, "apply configuration").await?
        } else {
            self.decode(body::JSON, data, "patch").await?
        };
        let opts = self.options_of(manager, dry_run, validation).force(force);
        let written = self.run(Request::Patch { key: self.key(), patch_type, patch, body_len, opts }).await?.written()?;
        // An apply that created the object is a 201, as a create is.
        self.respond_written(&written, if written.created { StatusCode::CREATED } else { StatusCode::OK })
    }

    /// DeleteOptions from the body (JSON, YAML or protobuf) and the query.
    async fn delete_options(&self, b: axum::body::Body) -> Result<DeleteOptions, Failure> {
        let data = self.read(b).await?;
        let body = if data.iter().all(u8::is_ascii_whitespace) {
            json!({})
        } else {
            let media = negotiate::object_body(self.content_type.as_deref())?;
            self.decode(&media, data, "DeleteOptions").await?.value
        };
        if !body.is_object() || body.get("preconditions").is_some_and(|p| !p.is_object() && !p.is_null()) {
            return Err(Failure::bad_request(format!(
                "invalid DeleteOptions: {body}: expected an object whose preconditions are an object"
            )));
        }
        let s = |p: &str| body.pointer(p).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string);
        // ValidateDeleteOptions: propagationPolicy, then dryRun (the body's, else the query's).
        let mut errs = OptionErrors::new("DeleteOptions");
        let policy = s("/propagationPolicy").or_else(|| self.q.string("propagationPolicy"));
        if let Some(p) = policy.filter(|p| !matches!(p.as_str(), "Orphan" | "Background" | "Foreground")) {
            errs.not_supported("propagationPolicy", &format!("{p:?}"), &["Foreground", "Background", "Orphan", "nil"]);
        }
        let dry_run = match body.get("dryRun") {
            Some(Value::Array(a)) if !a.is_empty() => {
                let values: Vec<String> = a.iter().map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string)).collect();
                query::dry_run_values(&values, &mut errs)
            }
            None | Some(Value::Null | Value::Array(_)) => self.q.dry_run(&mut errs),
            Some(v) => return Err(Failure::bad_request(format!("invalid DeleteOptions: dryRun {v}: expected a list of strings"))),
        };
        errs.check()?;
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
        let out = self.run(Request::Delete { key: self.key(), opts }).await?.object()?;
        // An object the engine deleted at once comes back without a deletionTimestamp.
        let pending = out.pointer("/metadata/deletionTimestamp").is_some_and(|d| !d.is_null());
        if pending {
            // Finalizers hold it (a namespace's are in its spec): the object, with its
            // deletionTimestamp.
            return self.respond(&out, StatusCode::OK);
        }
        let status = fieldstore_engine::Status::success(fieldstore_engine::StatusDetails {
            name: self.name(),
            group: self.t.spec.group.clone(),
            kind: self.t.spec.plural.clone(),
            uid: out.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default().to_string(),
            ..Default::default()
        });
        let media = if self.accept.media == body::YAML { body::YAML } else { body::JSON };
        Ok(encoded(body::encode(&status.to_value(), media)?, StatusCode::OK))
    }

    async fn delete_collection(&self, b: axum::body::Body) -> Reply {
        self.admit("deletecollection")?;
        let opts = self.delete_options(b).await?;
        let list = self.q.list_options(false)?;
        let Response::Deleted { items, spec } = self.run(Request::DeleteCollection { of: self.collection(), list, opts }).await? else {
            return Err(Failure::from(crate::api::mismatch("the answer of its request")));
        };
        let out = json!({"apiVersion": spec.api_version(), "kind": format!("{}List", spec.kind), "metadata": {}, "items": items});
        Ok(encoded(body::encode(&out, self.accept.media_type())?, StatusCode::OK))
    }
}
