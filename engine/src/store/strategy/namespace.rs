//! Namespaces, as kube-apiserver's namespace strategy and defaults make them: a new namespace is
//! `Active` and has the `kubernetes` finalizer in `spec.finalizers`; every namespace carries
//! the label `kubernetes.io/metadata.name` with its name; an update keeps `spec.finalizers`
//! (changed only through the `finalize` subresource).
//!
//! With the store's namespace lifecycle on (`Options::namespace_lifecycle`), also what
//! kube-apiserver's `NamespaceLifecycle` admission and kube-controller-manager's namespace
//! controller do: content is created only in a namespace that exists and is not being deleted;
//! the namespaces in [`PROTECTED`] cannot be deleted; a deleted namespace is `Terminating`
//! until its contents are gone (deleted in the background, after the delete answers; again
//! whenever an object in it finishes its own finalization, and when the store opens), then its
//! `kubernetes` finalizer is removed and, with no other finalizer, it goes.

use super::super::address::{Collection, ObjectKey};
use super::super::core::now_time;
use super::super::history_record::Who;
use super::super::meta::{check_preconditions, finish_update, prepare_update as prepare_meta};
use super::super::options::{DeleteOptions, GetOptions, ListOptions, WriteOptions};
use super::super::types::Registered;
use super::super::validate::{qualified_name, NOT_STANDARD_FINALIZER, STANDARD_FINALIZERS};
use super::super::Store;
use crate::merge::Operation;
use crate::typed::{ValidationError, ValidationErrors};
use crate::{Error, Result};
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// The label every namespace carries, with its name.
pub const NAME_LABEL: &str = "kubernetes.io/metadata.name";
/// The finalizer a new namespace gets, held until its contents are deleted.
pub const FINALIZER: &str = "kubernetes";
/// The namespaces Kubernetes has from the start.
pub const INITIAL: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

/// The namespaces that cannot be deleted (kube-apiserver's `NamespaceLifecycle`).
pub const PROTECTED: [&str; 3] = ["default", "kube-system", "kube-public"];

/// Whether `v` (a namespace) is being deleted.
pub(in crate::store) fn terminating(v: &Value) -> bool {
    v.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null())
        || v.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating")
}

/// A namespace being deleted, as the namespace registry leaves it while its finalizers hold it:
/// `deletionTimestamp` set and phase `Terminating`.
pub(in crate::store) fn mark_terminating(live: &Value, now: &str) -> Value {
    let mut out = live.clone();
    if let Some(Value::Object(m)) = out.get_mut("metadata") {
        m.insert("deletionTimestamp".into(), Value::String(now.into()));
    }
    if let Value::Object(root) = &mut out {
        root.insert("status".into(), json!({"phase": "Terminating"}));
    }
    out
}

/// Whether `t` is the core group's Namespace.
pub(super) fn is(t: &Registered) -> bool {
    t.spec.group.is_empty() && t.spec.kind == "Namespace"
}

/// The name label, set as defaulting sets it (before the field manager: the writer owns it).
pub(super) fn default_input(object: &mut Value, name: &str) {
    let Value::Object(root) = object else { return };
    let meta = root.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(meta) = meta else { return };
    let labels = meta.entry("labels").or_insert_with(|| Value::Object(Map::new()));
    if !labels.is_object() {
        *labels = Value::Object(Map::new());
    }
    if let Value::Object(labels) = labels {
        labels.insert(NAME_LABEL.into(), Value::String(name.into()));
    }
}

/// A new namespace: `status.phase: Active`, and `kubernetes` among `spec.finalizers`.
pub(super) fn prepare_create(object: &mut Value) {
    let Value::Object(root) = object else { return };
    root.insert("status".into(), json!({"phase": "Active"}));
    let spec = root.entry("spec").or_insert_with(|| Value::Object(Map::new()));
    if !spec.is_object() {
        *spec = Value::Object(Map::new());
    }
    let Value::Object(spec) = spec else { return };
    let finalizers = spec.entry("finalizers").or_insert_with(|| Value::Array(Vec::new()));
    if !finalizers.is_array() {
        *finalizers = Value::Array(Vec::new());
    }
    if let Value::Array(f) = finalizers {
        if !f.iter().any(|v| v == FINALIZER) {
            f.push(Value::String(FINALIZER.into()));
        }
    }
}

/// An updated namespace keeps its `spec.finalizers`.
pub(super) fn prepare_update(live: &Value, object: &mut Value) {
    let kept = live.pointer("/spec/finalizers").cloned();
    let Value::Object(root) = object else { return };
    match (kept, root.get_mut("spec")) {
        (Some(f), Some(Value::Object(spec))) => {
            spec.insert("finalizers".into(), f);
        }
        (Some(f), _) => {
            root.insert("spec".into(), json!({ "finalizers": f }));
        }
        (None, Some(Value::Object(spec))) => {
            spec.remove("finalizers");
        }
        (None, _) => {}
    }
}

impl Store {
    /// Whether the namespace lifecycle applies to objects of `t` (it is on and namespaces are a
    /// kind of this store).
    fn lifecycle(&self) -> bool {
        self.core().options.namespace_lifecycle && self.core().registry.read().get("namespaces").is_some()
    }

    /// Refuses new content of type `t` in namespace `ns` when the namespace is missing (404
    /// naming it) or being deleted (403 with the cause `NamespaceTerminating`), as
    /// kube-apiserver's `NamespaceLifecycle` admission does.
    pub(in crate::store) fn admit_content(&self, t: &Registered, ns: &str, name: &str) -> Result<()> {
        if !t.spec.namespaced || ns.is_empty() || !self.lifecycle() {
            return Ok(());
        }
        let namespace = match self.get(&ObjectKey::new("namespaces", None, ns), &GetOptions::default()) {
            Ok(v) => v,
            Err(Error::NotFound { .. }) => return Err(Error::NotFound { resource: "namespaces".into(), name: ns.into() }),
            Err(e) => return Err(e),
        };
        if terminating(&namespace) {
            return Err(Error::Forbidden {
                resource: t.spec.resource(),
                name: name.into(),
                message: format!("unable to create new content in namespace {ns} because it is being terminated"),
                cause: Some(Box::new((
                    "NamespaceTerminating".into(),
                    "metadata.namespace".into(),
                    format!("namespace {ns} is being terminated"),
                ))),
            });
        }
        Ok(())
    }

    /// Refuses the deletion of a namespace in [`PROTECTED`] (403), when the lifecycle is on.
    pub(in crate::store) fn admit_namespace_delete(&self, t: &Registered, name: &str) -> Result<()> {
        if is(t) && self.lifecycle() && PROTECTED.contains(&name) {
            return Err(Error::Forbidden {
                resource: "namespaces".into(),
                name: name.into(),
                message: "this namespace may not be deleted".into(),
                cause: None,
            });
        }
        Ok(())
    }

    /// Whether deleting a namespace of type `t` goes through `Terminating` (the lifecycle is on).
    pub(in crate::store) fn namespace_terminates(&self, t: &Registered) -> bool {
        is(t) && self.lifecycle()
    }

    /// Finishes the deletion of namespace `ns` in the background when it is being deleted: what
    /// the namespace controller does, after the request that started it has its answer.
    pub(in crate::store) fn finalize_namespace_later(&self, ns: &str) {
        if !self.lifecycle() {
            return;
        }
        let store = Arc::downgrade(&self.inner);
        let ns = ns.to_string();
        // A failure (the store closing, a storage error) leaves the namespace `Terminating`: the
        // next trigger, or the next open, tries again. A thread that cannot start, likewise.
        let _ = std::thread::Builder::new().name("fieldstore-namespace".into()).spawn(move || {
            if let Some(inner) = store.upgrade() {
                let _ = Store { inner }.delete_namespace_contents(&ns);
            }
        });
    }

    /// Resumes the deletion of every namespace being deleted (after a restart).
    pub(in crate::store) fn resume_namespace_deletions(&self) -> Result<()> {
        if !self.lifecycle() {
            return Ok(());
        }
        for ns in self.list(&Collection::new("namespaces", None), &ListOptions::default())?.items {
            if terminating(&ns) {
                if let Some(name) = ns.pointer("/metadata/name").and_then(Value::as_str) {
                    self.finalize_namespace_later(name);
                }
            }
        }
        Ok(())
    }

    /// Deletes the contents of namespace `ns` when it is being deleted; once none is left,
    /// removes its `kubernetes` finalizer (and so the namespace, when no other finalizer holds
    /// it). Objects with finalizers of their own are marked deleted and waited for: each one's
    /// last finalizer, when removed, starts this again.
    fn delete_namespace_contents(&self, ns: &str) -> Result<()> {
        let key = ObjectKey::new("namespaces", None, ns);
        match self.get(&key, &GetOptions::default()) {
            Ok(v) if terminating(&v) => {}
            Ok(_) | Err(Error::NotFound { .. }) => return Ok(()),
            Err(e) => return Err(e),
        }
        let mut left = false;
        for spec in self.types_shared().iter().filter(|s| s.namespaced) {
            let of = Collection::new(spec.resource(), Some(ns));
            self.delete_collection(&of, &ListOptions::default(), &DeleteOptions::default())?;
            let rest = ListOptions { limit: Some(1), ..ListOptions::default() };
            left |= !self.list(&of, &rest)?.items.is_empty();
        }
        if left {
            return Ok(());
        }
        self.remove_namespace_finalizer(ns)
    }

    /// kube-apiserver's `namespaces/{name}/finalize` (a PUT of the Namespace): an update whose
    /// `spec.finalizers` are the ones `object` lists, and whose status stays as it is (the
    /// finalize strategy); recorded as an update of the `finalize` subresource. A namespace
    /// being deleted that is left with no finalizer goes, as there (and its contents, when the
    /// namespace lifecycle has not deleted them yet, stay, as kube-apiserver leaves them).
    ///
    /// # Errors
    /// [`Error::Invalid`] naming each `spec.finalizers[i]` that is not a qualified name (or,
    /// without a `/`, not a standard finalizer name); [`Error::NotFound`];
    /// [`Error::Precondition`] for a stale `metadata.resourceVersion`; those of
    /// [`Store::update`].
    pub fn finalize_namespace(&self, name: &str, object: &Value, opts: &WriteOptions) -> Result<Value> {
        let t = self.resolve("namespaces")?;
        check_finalizer_names(object)?;
        let now = now_time();
        let who =
            Who { manager: opts.manager.clone(), operation: Some(Operation::Update), subresource: "finalize".into(), ..Who::default() };
        let manager = t.main.clone().with_subresource("finalize");
        self.write_loop(&t, "", name, opts.dry_run, &who, |cur, known| {
            let live = cur.ok_or_else(|| Error::NotFound { resource: "namespaces".into(), name: name.into() })?;
            check_preconditions(&t, name, live, object)?;
            // Keeps the live status (a Namespace has a status subresource), as the finalize
            // strategy does.
            let mut new = prepare_meta(&t, false, live, object.clone());
            default_input(&mut new, name);
            // No finalizers is no `finalizers` (Go's omitempty): nobody owns an empty list.
            if let Some(Value::Object(spec)) = new.get_mut("spec") {
                if spec.get("finalizers").and_then(Value::as_array).is_some_and(Vec::is_empty) {
                    spec.remove("finalizers");
                }
            }
            let out = manager.update_known(Some(live), known, new, &opts.manager, &now)?.object;
            // A namespace being deleted with no finalizer left goes (the commit's rule).
            Ok(finish_update(live, out, false))
        })
        .map(std::sync::Arc::unwrap_or_clone)
    }

    /// Makes sure the namespaces Kubernetes has from the start exist ([`INITIAL`]: `default`,
    /// `kube-system`, `kube-public`, `kube-node-lease`), as `fieldstore`'s manager.
    ///
    /// # Errors
    /// Those of the store.
    pub fn ensure_namespaces(&self) -> Result<()> {
        for name in INITIAL {
            match self.get(&ObjectKey::new("namespaces", None, name), &GetOptions::default()) {
                Ok(_) => {}
                Err(Error::NotFound { .. }) => {
                    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
                    match self.create(&Collection::new("namespaces", None), &ns, &WriteOptions::new("fieldstore")) {
                        Ok(_) | Err(Error::AlreadyExists { .. }) => {}
                        Err(e) => return Err(e),
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// `spec.finalizers` of a finalize request, checked as kube-apiserver's
/// `ValidateNamespaceFinalizeUpdate` checks them.
fn check_finalizer_names(object: &Value) -> Result<()> {
    let mut errs = Vec::new();
    let names = object.pointer("/spec/finalizers").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    for (i, f) in names.iter().enumerate() {
        let path = format!("spec.finalizers[{i}]");
        let Some(f) = f.as_str() else {
            errs.push(ValidationError { path, message: format!("Invalid value: {f}: must be a string") });
            continue;
        };
        let shown = serde_json::to_string(f).unwrap_or_default();
        for msg in qualified_name(f) {
            errs.push(ValidationError { path: path.clone(), message: format!("Invalid value: {shown}: {msg}") });
        }
        if !f.contains('/') && !STANDARD_FINALIZERS.contains(&f) {
            errs.push(ValidationError { path, message: format!("Invalid value: {shown}: {NOT_STANDARD_FINALIZER}") });
        }
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(Error::Invalid(ValidationErrors(errs)))
    }
}
