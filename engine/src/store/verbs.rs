//! The store's public verbs: types, create, get, update, apply, patch, delete, compaction.

use super::address::{Collection, ObjectKey, Revision};
use super::commit::{precondition, Plan};
use super::core::now_time;
use super::history_record::Who;
use super::keys::{self, EventType, CF_TYPES};
use super::kv::Batch;
use super::meta::{check_patched_identity, check_preconditions, finish_update, fold_string_data, init_new, prepare_update};
use super::options::{DeleteOptions, GetOptions, ListOptions, ResourceVersionMatch, WriteOptions, WriteVerb, Written};
use super::selectors::parse_rv;
use super::types::{Registered, SchemaSource, TypeSpec};
use super::{compact, kv, object, strategy, unknown_fields, validate, Store};
use crate::fieldmanager::FieldManager;
use crate::fieldmanager::{put_managed_fields, take_managed_fields, Live};
use crate::merge::Operation;
use crate::patch::{PatchMeta, PatchType};
use crate::{Error, Result};
use serde_json::Value;
use std::sync::Arc;

impl Store {
    /// Registers (or re-registers, replacing its schema) a resource type, durably.
    ///
    /// # Errors
    /// [`Error::Schema`] when the schema does not load; [`Error::Storage`].
    pub fn register(&self, spec: TypeSpec) -> Result<()> {
        let record = serde_json::to_vec(&spec).map_err(|e| Error::BadRequest(e.to_string()))?;
        loop {
            let mut reg = self.core().registry.write();
            let (id, new) = match reg.resolve(&spec.resource()) {
                Ok(t) => (t.id, false),
                Err(_) => (reg.next_id(), true),
            };
            let compiled = Registered::compile(id, spec.clone())?;
            if new {
                // Another process sharing the store may have taken this id meanwhile: then
                // learn its types and pick again.
                if !self.core().kv.put_new(CF_TYPES, &id.to_be_bytes(), record.clone())? {
                    drop(reg);
                    super::follow::reload_types(self.core())?;
                    continue;
                }
            } else {
                self.core().kv.write(
                    Batch {
                        ops: vec![kv::Op::Put { cf: CF_TYPES, key: id.to_be_bytes().to_vec(), value: record }],
                        revision: None,
                        guards: Vec::new(),
                    },
                    true,
                )?;
            }
            reg.insert(compiled);
            return Ok(());
        }
    }

    /// Every registered type, in registration order.
    #[must_use]
    pub fn types(&self) -> Vec<TypeSpec> {
        self.core().registry.read().specs()
    }

    /// Every registered type, in registration order, without copying them: the same allocation
    /// until the next registration (so [`Arc::ptr_eq`] tells whether the types changed). For
    /// callers that need them all on every request.
    #[must_use]
    pub fn types_shared(&self) -> std::sync::Arc<[TypeSpec]> {
        self.core().registry.read().shared()
    }

    /// The type of a deleted CustomResourceDefinition, retired (no longer served) but whose
    /// objects' history the history verbs ([`Store::object_log`], [`Store::field_history`],
    /// [`Store::blame`], [`Store::object_at`]) still read: by `plural.group`, or at a version by
    /// `plural.version.group`.
    #[must_use]
    pub fn retired_type(&self, resource: &str) -> Option<TypeSpec> {
        let t = self.core().registry.read().retired(resource)?;
        let version = t.spec.versions.iter().find(|v| t.spec.at_version(&v.name).versioned_resource() == resource);
        Some(version.map_or_else(|| t.spec.clone(), |v| t.spec.at_version(&v.name)))
    }

    /// Every served version of every type, one spec each (a custom resource's served versions
    /// after its storage version's registration, in kube's order of preference), shared as
    /// [`Store::types_shared`]: what discovery and the OpenAPI documents list.
    #[must_use]
    pub fn served_types_shared(&self) -> std::sync::Arc<[TypeSpec]> {
        self.core().registry.read().served()
    }

    /// The type registered under exactly this resource name (`plural` for the core group,
    /// `plural.group` otherwise), without copying the others as [`Store::types`] does: the
    /// lookup of a request path.
    #[must_use]
    pub fn resource_type(&self, resource: &str) -> Option<TypeSpec> {
        self.core().registry.read().get(resource).map(|t| t.spec.clone())
    }

    /// The registered type a client names: by plural (`configmaps`), `plural.group`, kind
    /// (any case) or singular kind (`configmap`, `deployment.apps`).
    ///
    /// # Errors
    /// [`Error::NotFound`] when no type has that name.
    pub fn find_type(&self, name: &str) -> Result<TypeSpec> {
        let registry = self.core().registry.read();
        registry
            .first(|t| t.is_named(name))
            .map(|t| t.spec.clone())
            .ok_or_else(|| Error::NotFound { resource: "resource type".into(), name: name.into() })
    }

    /// Whether a type is registered under exactly this resource name (`plural` or
    /// `plural.group`).
    #[must_use]
    pub fn is_resource(&self, resource: &str) -> bool {
        self.core().registry.read().get(resource).is_some()
    }

    /// The resource name (`plural` or `plural.group`) of the type a client names, as
    /// [`Store::find_type`] finds it, without copying the type: a request's first step.
    ///
    /// # Errors
    /// [`Error::NotFound`] when no type has that name.
    pub fn resource_name(&self, name: &str) -> Result<String> {
        let registry = self.core().registry.read();
        registry
            .get(name)
            .or_else(|| registry.first(|t| t.is_named(name)))
            .map(|t| t.spec.resource())
            .ok_or_else(|| Error::NotFound { resource: "resource type".into(), name: name.into() })
    }

    /// The registered type of an object, from its `apiVersion` and `kind`.
    ///
    /// # Errors
    /// [`Error::BadRequest`] when the object names neither; [`Error::NotFound`] when no type
    /// matches.
    pub fn type_of(&self, object: &Value) -> Result<TypeSpec> {
        let s = |k: &str| object.get(k).and_then(Value::as_str).unwrap_or("");
        let (api_version, kind) = (s("apiVersion"), s("kind"));
        if api_version.is_empty() || kind.is_empty() {
            return Err(Error::BadRequest("the object needs apiVersion and kind".into()));
        }
        let registry = self.core().registry.read();
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        // Any served version of the type (a custom resource's other versions too).
        registry
            .first(|t| {
                t.kind == kind && (t.api_version() == api_version || (t.group == group && t.served_versions().iter().any(|v| v == version)))
            })
            .map(|t| t.spec.at_version(version))
            .ok_or_else(|| Error::NotFound { resource: "resource type".into(), name: format!("{kind}.{api_version}") })
    }

    /// Asks every open watch to emit a bookmark at the current revision (for caching proxies;
    /// Kubernetes has no such call).
    pub fn request_bookmark(&self) {
        let hub = self.core().hub.lock();
        hub.bookmark_all(self.revision().0);
    }

    /// The deepest nesting of objects and arrays the store accepts ([`Options::max_depth`]).
    #[must_use]
    pub fn max_depth(&self) -> usize {
        self.core().options.max_depth
    }

    /// Parses an object from JSON or YAML bytes, with the store's nesting limit.
    ///
    /// # Errors
    /// [`Error::BadRequest`] when the bytes are neither, or nest too deeply.
    pub fn parse_object(&self, bytes: &[u8]) -> Result<Value> {
        use fieldstore_codec::document::{parse, Syntax};
        parse(bytes, Syntax::Yaml, self.core().options.max_depth).map(|d| d.value).map_err(|e| Error::BadRequest(e.to_string()))
    }

    /// Creates an object in the collection `of` (named by its `metadata.name`, or
    /// `metadata.generateName` for a generated name; its namespace is the collection's, or the
    /// body's when the collection names none). The object gets a uid, creationTimestamp and
    /// generation 1.
    ///
    /// # Errors
    /// [`Error::AlreadyExists`]; [`Error::NotFound`] for an unknown resource; [`Error::Invalid`]
    /// for bad names; [`Error::BadRequest`]; [`Error::TooLarge`].
    pub fn create(&self, of: &Collection, object: &Value, opts: &WriteOptions) -> Result<Value> {
        Ok(Arc::unwrap_or_clone(self.write(WriteVerb::Create, of, object, opts)?.object))
    }

    /// Creates an object exactly as another store kept it (an import from a kube-apiserver's
    /// etcd, a restore): uid, creationTimestamp, generation, managedFields, finalizers, status
    /// and everything else are written as given; only `metadata.resourceVersion` is dropped
    /// (the store assigns its own), and a missing uid or creationTimestamp is generated. The
    /// field manager does not run. History records the write (an `ADDED` with `note`, no
    /// manager); the owner index is built from the given managedFields.
    ///
    /// # Errors
    /// [`Error::AlreadyExists`]; those of [`Store::create`] (unknown resource, scope, name,
    /// apiVersion and kind, depth, size); [`Error::BadRequest`] for malformed managedFields.
    pub fn import(&self, of: &Collection, object: &Value, note: &str) -> Result<Value> {
        let (t, ns, name) = self.addressed(&of.resource, of.ns(), object)?;
        validate::name(&name)?;
        let now = now_time();
        let who = Who { manager: String::new(), operation: Some(Operation::Update), subresource: String::new(), note: note.into() };
        self.write_loop(&t, &ns, &name, false, &who, |cur, _| {
            if cur.is_some() {
                return Err(Error::AlreadyExists { resource: t.spec.resource(), name: name.clone() });
            }
            let mut obj = object.clone();
            if let Some(Value::Object(m)) = obj.get_mut("metadata") {
                m.remove("resourceVersion");
                m.entry("uid").or_insert_with(|| Value::String(uuid::Uuid::new_v4().to_string()));
                m.entry("creationTimestamp").or_insert_with(|| Value::String(now.as_str().into()));
            }
            Ok(Plan::Put(obj, EventType::Added))
        })
        .map(Arc::unwrap_or_clone)
    }

    async fn create_async(&self, resource: &str, namespace: Option<&str>, object: &Value, opts: &WriteOptions) -> Result<Arc<Value>> {
        let t = self.resolve(resource)?;
        let ns = self.scope(&t, namespace, object)?;
        if opts.status {
            return Err(Error::BadRequest("create is not allowed on the status subresource".into()));
        }
        self.check_input(&t, object)?;
        if object.get("metadata").and_then(|m| m.get("resourceVersion")).and_then(Value::as_str).is_some_and(|s| !s.is_empty()) {
            return Err(Error::BadRequest("resourceVersion should not be set on objects to be created".into()));
        }
        let name = match object.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).filter(|s| !s.is_empty()) {
            Some(n) => n.to_string(),
            None => match object.get("metadata").and_then(|m| m.get("generateName")).and_then(Value::as_str).filter(|s| !s.is_empty()) {
                Some(prefix) => validate::generate_name(prefix),
                None => return Err(validate::invalid("metadata.name", "Required value: name or generateName is required")),
            },
        };
        // A definition's name is checked with the rest of it (every problem in one answer).
        if t.spec.resource() != super::definitions::CRDS {
            validate::name(&name)?;
        }
        let now = now_time();
        self.write_loop_async(&t, &ns, &name, opts.dry_run, &who(opts, Operation::Update), |cur, _| {
            if cur.is_some() {
                return Err(Error::AlreadyExists { resource: t.spec.resource(), name: name.clone() });
            }
            let mut obj = object.clone();
            fold_string_data(&t, &mut obj);
            init_new(&t, &mut obj, &ns, &name, &now);
            if t.spec.status_subresource {
                if let Value::Object(m) = &mut obj {
                    m.remove("status");
                }
            }
            strategy::prepare_input(&t, None, &mut obj, &name)?;
            let (mut out, written) = t.main.update(None, obj, &opts.manager, &now)?.into_written();
            strategy::prepare_create(&t, &mut out);
            Ok(Plan::Managed(out, EventType::Added, written))
        })
        .await
    }

    /// The write `verb` makes of an object body: [`Store::create`], [`Store::update`] or
    /// [`Store::apply`].
    ///
    /// # Errors
    /// Those of the verb.
    pub fn write(&self, verb: WriteVerb, of: &Collection, object: &Value, opts: &WriteOptions) -> Result<Written> {
        super::wait::block_on(self.write_async(verb, of, object, opts))
    }

    /// [`Store::write`] as a future: the object is read and the write planned where the future
    /// is polled (CPU and reads of the database, no waiting on other writers), then the commit
    /// is awaited. A server polls it on its request task instead of handing the request to a
    /// thread that would wait for the commit. Any executor works.
    ///
    /// # Errors
    /// Those of the verb.
    pub async fn write_async(&self, verb: WriteVerb, of: &Collection, object: &Value, opts: &WriteOptions) -> Result<Written> {
        let written = self.write_unsettled(verb, of, object, opts).await?;
        self.settle_definition(&written.object, opts).await;
        Ok(written)
    }

    /// A client's write of a CustomResourceDefinition is followed by its controllers' (see
    /// `definitions::establish`); the client's answer is the object as its own write left it.
    /// A failure leaves the status to the next write of the definition, or the next open.
    async fn settle_definition(&self, written: &Value, opts: &WriteOptions) {
        // Known by what was written (no lookup of the resource on every write).
        let s = |k: &str| written.get(k).and_then(Value::as_str);
        if opts.dry_run || s("kind") != Some("CustomResourceDefinition") || s("apiVersion") != Some("apiextensions.k8s.io/v1") {
            return;
        }
        if let Some(name) = written.pointer("/metadata/name").and_then(Value::as_str) {
            let _ = self.establish_definition(name).await;
        }
    }

    async fn write_unsettled(&self, verb: WriteVerb, of: &Collection, object: &Value, opts: &WriteOptions) -> Result<Written> {
        let (resource, namespace) = (of.resource.as_str(), of.ns());
        match self.write_once(verb, resource, namespace, object, opts).await {
            // Undeclared fields, and options that allow them: written once more without them.
            Err(e) if opts.field_validation.is_some() && unknown_fields::found(&e) => {
                let t = self.resolve(resource)?;
                let (pruned, mut warnings) = unknown_fields::pruned(&t, opts.field_validation, object, e)?;
                let (object, created, more) = self.write_once(verb, resource, namespace, &pruned, opts).await?;
                warnings.extend(more);
                Ok(Written { object, warnings, created })
            }
            r => r.map(|(object, created, warnings)| Written { object, warnings, created }),
        }
    }

    async fn write_once(
        &self,
        verb: WriteVerb,
        resource: &str,
        namespace: Option<&str>,
        object: &Value,
        opts: &WriteOptions,
    ) -> Result<(Arc<Value>, bool, Vec<String>)> {
        match verb {
            WriteVerb::Create => Ok((self.create_async(resource, namespace, object, opts).await?, true, Vec::new())),
            WriteVerb::Update => self.update_async(resource, namespace, object, opts).await.map(|(v, w)| (v, false, w)),
            WriteVerb::Apply => self.apply_async(resource, namespace, object, opts).await,
        }
    }

    /// The object, at the latest revision or as `opts` asks.
    ///
    /// # Errors
    /// [`Error::NotFound`]; [`Error::Expired`] for an exact revision before the compacted one;
    /// [`Error::TooLargeResourceVersion`]; [`Error::BadRequest`] for a malformed resourceVersion.
    pub fn get(&self, key: &ObjectKey, opts: &GetOptions) -> Result<Value> {
        let t = self.resolve(&key.resource)?;
        let ns = self.scope(&t, key.ns(), &Value::Null)?;
        let name = key.name.as_str();
        let rv = parse_rv(opts.resource_version.as_deref())?;
        let at = match (rv, opts.resource_version_match) {
            (Some(r), Some(ResourceVersionMatch::Exact)) if r > 0 => {
                self.core().wait_for(r)?;
                self.core().check_compacted(r)?;
                r
            }
            (Some(r), _) if r > 0 => {
                self.core().wait_for(r)?;
                self.revision().0
            }
            _ => super::follow::latest(self.core())?,
        };
        let prefix = keys::object_prefix(t.id, &ns, name);
        // The record is read in place: a cached version is copied, not the record.
        let core = self.core();
        let found = core.newest_at(&prefix, at, |rev, rec| {
            (!object::is_tombstone(rec)).then(|| match core.cache.get(&prefix, rev) {
                Some(cached) => Ok(Value::clone(&cached.object)),
                None => object::decode(rec, rev),
            })
        })?;
        match found {
            Some((_, Some(object))) => object.map(|mut o| {
                t.to_served(&mut o);
                let _ = t.read_view(&mut o);
                o
            }),
            _ => Err(Error::NotFound { resource: t.spec.resource(), name: name.into() }),
        }
    }

    /// Replaces an object (or, with [`WriteOptions::status`], its status). A non-empty
    /// `metadata.resourceVersion` in `object` is a precondition.
    ///
    /// # Errors
    /// [`Error::NotFound`]; [`Error::Precondition`] (409) when the resourceVersion or uid does
    /// not match; those of [`Store::create`].
    pub fn update(&self, of: &Collection, object: &Value, opts: &WriteOptions) -> Result<Value> {
        Ok(Arc::unwrap_or_clone(self.write(WriteVerb::Update, of, object, opts)?.object))
    }

    /// An update, and the warnings of its validation.
    async fn update_async(
        &self,
        resource: &str,
        namespace: Option<&str>,
        object: &Value,
        opts: &WriteOptions,
    ) -> Result<(Arc<Value>, Vec<String>)> {
        let (t, ns, name) = self.addressed(resource, namespace, object)?;
        let fm = self.field_manager(&t, opts)?;
        let now = now_time();
        let warned = parking_lot::Mutex::new(Vec::new()); // Sync: the future stays Send
        let object = self
            .write_loop_async(&t, &ns, &name, opts.dry_run, &who(opts, Operation::Update), |cur, known| {
                let live = cur.ok_or_else(|| Error::NotFound { resource: t.spec.resource(), name: name.clone() })?;
                check_preconditions(&t, &name, live, object)?;
                let mut new = prepare_update(&t, opts.status, live, object.clone());
                fold_string_data(&t, &mut new);
                *warned.lock() = strategy::prepare_input(&t, Some(live), &mut new, &name)?;
                let mut out = fm.update_known(Some(live), known, new, &opts.manager, &now)?.object;
                strategy::prepare_update(&t, opts.status, live, &mut out)?;
                Ok(finish_update(live, out, strategy::annotations_bump_generation(&t, opts.status)))
            })
            .await?;
        Ok((object, warned.into_inner()))
    }

    /// Server-side applies `config` as `opts.manager`, creating the object when absent. An apply
    /// that changes nothing writes nothing and keeps the resourceVersion.
    ///
    /// # Errors
    /// [`Error::Conflict`] with the conflicting managers unless forced; those of
    /// [`Store::update`].
    pub fn apply(&self, of: &Collection, config: &Value, opts: &WriteOptions) -> Result<Value> {
        Ok(Arc::unwrap_or_clone(self.write(WriteVerb::Apply, of, config, opts)?.object))
    }

    /// An apply, and whether it created the object (its last attempt, when the write loop ran
    /// it again after a concurrent write).
    async fn apply_async(
        &self,
        resource: &str,
        namespace: Option<&str>,
        config: &Value,
        opts: &WriteOptions,
    ) -> Result<(Arc<Value>, bool, Vec<String>)> {
        let (t, ns, name) = self.addressed(resource, namespace, config)?;
        validate::name(&name)?;
        let fm = self.field_manager(&t, opts)?;
        let now = now_time();
        let created = std::sync::atomic::AtomicBool::new(false); // Sync: the future stays Send
        let warned = parking_lot::Mutex::new(Vec::new());
        let object = self
            .write_loop_async(&t, &ns, &name, opts.dry_run, &who(opts, Operation::Apply), |cur, known| match cur {
                None => {
                    created.store(true, std::sync::atomic::Ordering::Relaxed);
                    if opts.status {
                        return Err(Error::NotFound { resource: t.spec.resource(), name: name.clone() });
                    }
                    let (mut out, written) = fm.apply(None, config, &opts.manager, opts.force, &now)?.into_written();
                    // As in Kubernetes, the applier keeps owning `stringData`, which is not stored.
                    fold_string_data(&t, &mut out);
                    init_new(&t, &mut out, &ns, &name, &now);
                    strategy::prepare_input(&t, None, &mut out, &name)?;
                    strategy::prepare_create(&t, &mut out);
                    Ok(Plan::Managed(out, EventType::Added, written))
                }
                Some(live) => {
                    created.store(false, std::sync::atomic::Ordering::Relaxed);
                    check_preconditions(&t, &name, live, config)?;
                    // The field manager merges into the live object without its managedFields:
                    // taken out of the write's copy for it and put back, not copied around.
                    let managed_fields = take_managed_fields(live);
                    let outcome =
                        fm.apply_known(Live::parts(live, managed_fields.as_ref()), known, config, &opts.manager, opts.force, &now);
                    put_managed_fields(live, managed_fields);
                    let outcome = outcome?;
                    let live = &*live;
                    if outcome.is_noop() {
                        // The field manager's object is then the live one: the same fields, and
                        // managedFields rebuilt from unchanged entries, in the form the store writes
                        // them. It is returned rather than dropped for a copy of the live one.
                        debug_assert_eq!(&outcome.object, live);
                        return Ok(Plan::NoOp(outcome.object));
                    }
                    let mut new = prepare_update(&t, opts.status, live, outcome.object);
                    fold_string_data(&t, &mut new);
                    *warned.lock() = strategy::prepare_input(&t, Some(live), &mut new, &name)?;
                    strategy::prepare_update(&t, opts.status, live, &mut new)?;
                    Ok(finish_update(live, new, strategy::annotations_bump_generation(&t, opts.status)))
                }
            })
            .await?;
        Ok((object, created.load(std::sync::atomic::Ordering::Relaxed), warned.into_inner()))
    }

    /// Patches an object with a strategic merge, JSON merge or JSON patch.
    ///
    /// # Errors
    /// [`Error::Patch`] when the patch does not apply; those of [`Store::update`].
    pub fn patch(&self, key: &ObjectKey, patch_type: PatchType, patch: &Value, opts: &WriteOptions) -> Result<Value> {
        Ok(Arc::unwrap_or_clone(self.patch_written(key, patch_type, patch, opts)?.object))
    }

    /// [`Store::patch`], with the warnings of what it wrote: fields of the patched object that
    /// its schema does not declare are treated as [`WriteOptions::field_validation`] says. A
    /// [`PatchType::Apply`] patch is an apply configuration of the object `key` names
    /// ([`Store::apply`]; its `metadata.name`, when set, must be that name).
    ///
    /// # Errors
    /// Those of [`Store::patch`].
    pub fn patch_written(&self, key: &ObjectKey, patch_type: PatchType, patch: &Value, opts: &WriteOptions) -> Result<Written> {
        let name = key.name.as_str();
        if patch_type == PatchType::Apply {
            let mut config = patch.clone();
            address(&mut config, name)?;
            return self.write(WriteVerb::Apply, &key.collection(), &config, opts);
        }
        let t = self.resolve(&key.resource)?;
        let ns = self.scope(&t, key.ns(), &Value::Null)?;
        validate::depth(patch, self.core().options.max_depth)?;
        let fm = self.field_manager(&t, opts)?;
        let meta = match t.spec.schema {
            SchemaSource::None => PatchMeta::untyped(),
            _ => PatchMeta::new(t.schema, &t.root_name)?,
        };
        let now = now_time();
        let mut warnings = Vec::new();
        let object = self.write_loop(&t, &ns, name, opts.dry_run, &who(opts, Operation::Update), |cur, known| {
            let live = cur.ok_or_else(|| Error::NotFound { resource: t.spec.resource(), name: name.into() })?;
            let apply = || crate::patch::apply_limited(patch_type, live, patch, &meta, self.core().options.max_patch_bytes);
            let patched = apply()?;
            check_patched_identity(live, &patched)?;
            self.check_input(&t, &patched)?;
            check_preconditions(&t, name, live, &patched)?;
            let update = |patched: Value| {
                let mut new = prepare_update(&t, opts.status, live, patched);
                fold_string_data(&t, &mut new);
                let ratcheted = strategy::prepare_input(&t, Some(live), &mut new, name)?;
                fm.update_known(Some(live), known, new, &opts.manager, &now).map(|o| (o, ratcheted))
            };
            warnings.clear();
            let (out, ratcheted) = match update(patched) {
                // Undeclared fields, and options that allow them: merged once more without them
                // (the patch applied again: the common write keeps no copy of its result).
                Err(e) if opts.field_validation.is_some() && unknown_fields::found(&e) => {
                    let (pruned, found) = unknown_fields::pruned(&t, opts.field_validation, &apply()?, e)?;
                    warnings = found;
                    update(pruned)?
                }
                r => r?,
            };
            warnings.extend(ratcheted);
            let mut out = out.object;
            strategy::prepare_update(&t, opts.status, live, &mut out)?;
            Ok(finish_update(live, out, strategy::annotations_bump_generation(&t, opts.status)))
        })?;
        super::wait::block_on(self.settle_definition(&object, opts));
        Ok(Written { object, warnings, created: false })
    }

    /// Deletes an object; one with finalizers gets a deletionTimestamp instead and goes when
    /// its last finalizer is removed. Returns the deleted object, or the object being deleted.
    ///
    /// # Errors
    /// [`Error::NotFound`]; [`Error::Precondition`] when the uid or resourceVersion
    /// precondition fails.
    pub fn delete(&self, key: &ObjectKey, opts: &DeleteOptions) -> Result<Value> {
        let t = self.resolve(&key.resource)?;
        let ns = self.scope(&t, key.ns(), &Value::Null)?;
        let name = key.name.as_str();
        self.admit_namespace_delete(&t, name)?;
        let terminates = self.namespace_terminates(&t);
        let definition = t.spec.resource() == super::definitions::CRDS;
        let now = now_time();
        let deleter = Who::default();
        let deleted = self.write_loop(&t, &ns, name, opts.dry_run, &deleter, |cur, _| {
            let live = cur.ok_or_else(|| Error::NotFound { resource: t.spec.resource(), name: name.into() })?;
            // A CustomResourceDefinition waits for its objects to be deleted.
            let held;
            let live = if definition && !super::definitions::deleting(live) {
                held = super::definitions::with_finalizer(live);
                &held
            } else {
                live
            };
            let meta = live.get("metadata");
            let field = |f: &str| meta.and_then(|m| m.get(f)).and_then(Value::as_str).unwrap_or("");
            if let Some(uid) = &opts.uid {
                if uid != field("uid") {
                    return Err(precondition(
                        &t,
                        name,
                        format!("Precondition failed: UID in precondition: {uid}, UID in object meta: {}", field("uid")),
                    ));
                }
            }
            if let Some(rv) = &opts.resource_version {
                if rv != field("resourceVersion") {
                    return Err(precondition(
                        &t,
                        name,
                        format!(
                            "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                            field("resourceVersion")
                        ),
                    ));
                }
            }
            let has_finalizers = meta.and_then(|m| m.get("finalizers")).and_then(Value::as_array).is_some_and(|a| !a.is_empty());
            let held = terminates && super::commit::namespace_held(live);
            if !has_finalizers && !held {
                return Ok(Plan::Delete(live.clone()));
            }
            if meta.and_then(|m| m.get("deletionTimestamp")).is_some_and(|v| !v.is_null()) {
                return Ok(Plan::NoOp(live.clone()));
            }
            // A definition's deletion keeps its generation and sets no grace period
            // (apiextensions-apiserver's own delete).
            let bump = !definition;
            if held {
                return Ok(Plan::Put(strategy::namespace::mark_terminating(live, now.as_str()), EventType::Modified));
            }
            let mut out = live.clone();
            if let Some(Value::Object(m)) = out.get_mut("metadata") {
                m.insert("deletionTimestamp".into(), Value::String(now.as_str().to_string()));
                if bump {
                    m.insert("deletionGracePeriodSeconds".into(), Value::from(0));
                }
                let generation = m.get("generation").and_then(Value::as_i64).unwrap_or(0);
                if generation > 0 && bump {
                    m.insert("generation".into(), Value::from(generation.saturating_add(1)));
                }
            }
            Ok(Plan::Put(out, EventType::Modified))
        })?;
        if terminates && !opts.dry_run {
            self.finalize_namespace_later(name);
        }
        if definition && !opts.dry_run {
            self.clean_up_definition_later(name);
        }
        Ok(Arc::unwrap_or_clone(deleted))
    }

    /// Removes the `kubernetes` finalizer of namespace `ns` while it terminates: with no other
    /// finalizer left, the namespace goes (the namespace controller's last step).
    pub(super) fn remove_namespace_finalizer(&self, ns: &str) -> Result<()> {
        let t = self.resolve("namespaces")?;
        self.write_loop(&t, "", ns, false, &Who::default(), |cur, _| {
            let Some(live) = cur else { return Err(Error::NotFound { resource: "namespaces".into(), name: ns.into() }) };
            if !strategy::namespace::terminating(live) {
                return Ok(Plan::NoOp(live.clone()));
            }
            let mut out = live.clone();
            if let Some(Value::Array(f)) = out.pointer_mut("/spec/finalizers") {
                f.retain(|v| v != strategy::namespace::FINALIZER);
            }
            Ok(Plan::Put(out, EventType::Modified))
        })
        .map(|_| ())
    }

    /// Deletes every object of the collection `of` the list options select (each deletion is its
    /// own revision).
    /// Returns the objects deleted or being deleted.
    ///
    /// # Errors
    /// Those of [`Store::list`] and [`Store::delete`] (objects deleted meanwhile are skipped).
    pub fn delete_collection(&self, of: &Collection, list: &ListOptions, opts: &DeleteOptions) -> Result<Vec<Value>> {
        let mut listed = ListOptions { limit: None, continue_token: None, ..list.clone() };
        listed.limit = None;
        let items = self.list(of, &listed)?.items;
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            let name = item.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
            let ns = item.pointer("/metadata/namespace").and_then(Value::as_str);
            let key = ObjectKey { resource: of.resource.clone(), namespace: ns.map(str::to_string), name: name.to_string() };
            match self.delete(&key, opts) {
                Ok(v) => out.push(v),
                Err(Error::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    fn field_manager<'t>(&self, t: &'t Registered, opts: &WriteOptions) -> Result<&'t FieldManager<'static>> {
        if opts.status {
            t.status.as_ref().ok_or_else(|| Error::NotFound { resource: format!("{}/status", t.spec.resource()), name: String::new() })
        } else {
            Ok(&t.main)
        }
    }

    /// Compacts history before `revision`: reads, lists and watches from older revisions fail
    /// with [`Error::Expired`]. The compacted revision persists; space is reclaimed in the
    /// calling thread without blocking writers.
    ///
    /// # Errors
    /// [`Error::BadRequest`] for a revision past the current one; [`Error::Storage`].
    pub fn compact(&self, revision: Revision) -> Result<()> {
        compact::compact(self.core(), revision.0)
    }

    /// Applies every type's history retention now (the background loop also does, every
    /// compaction interval). Returns how many change records were dropped.
    ///
    /// # Errors
    /// [`Error::Storage`]; [`Error::Corrupt`] for unreadable records.
    pub fn prune_history(&self) -> Result<u64> {
        compact::prune(self.core())
    }
}

/// Addresses an object body to `name`: its `metadata.name` filled in, or checked.
///
/// # Errors
/// 400 when the body is not an object, or names another object.
pub fn address(object: &mut Value, name: &str) -> Result<()> {
    let Value::Object(root) = object else { return Err(Error::BadRequest("the body must be an object".into())) };
    let meta = root.entry("metadata").or_insert_with(|| Value::Object(serde_json::Map::new()));
    let Value::Object(meta) = meta else { return Err(Error::BadRequest("metadata must be an object".into())) };
    match meta.get("name").and_then(Value::as_str) {
        Some(n) if !n.is_empty() && n != name => {
            Err(Error::BadRequest(format!("the name of the object ({n}) does not match the name on the URL ({name})")))
        }
        Some(n) if !n.is_empty() => Ok(()),
        _ => {
            meta.insert("name".into(), Value::String(name.into()));
            Ok(())
        }
    }
}

/// Who a write is, for history: the request's manager and subresource.
fn who(opts: &WriteOptions, operation: Operation) -> Who {
    Who {
        manager: opts.manager.clone(),
        operation: Some(operation),
        subresource: if opts.status { "status".into() } else { String::new() },
        note: String::new(),
    }
}
