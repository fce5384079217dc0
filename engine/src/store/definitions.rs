//! CustomResourceDefinitions are types: writing one registers (or re-registers) the resource
//! type it defines, in the same commit (the type's record joins the definition's batch, and the
//! type is served from the moment the definition's revision is visible), as kube-apiserver
//! serves a CRD's resource once it is established. A definition whose type cannot be built is
//! refused before it is written; a written one is marked `NamesAccepted` and `Established` in
//! its status, as Kubernetes' CRD controllers mark it. Its `status.storedVersions` keeps every
//! version that has been the storage version.
//!
//! Deleting a definition is kube-apiserver's: the delete adds the finalizer [`FINALIZER`] and
//! marks it `Terminating`; the store then deletes every object of its type (`cleanup`), and
//! once none is left retires the type (no longer served; its objects' history stays readable)
//! and removes the finalizer, and the definition goes.

use super::core::Core;
use super::keys::CF_TYPES;
use super::kv::{Batch, Guard};
use super::types::{Registered, TypeSpec};
use crate::{Error, Result};
use serde_json::{json, Value};

/// The resource name of CustomResourceDefinitions.
pub(crate) const CRDS: &str = "customresourcedefinitions.apiextensions.k8s.io";

/// The finalizer a definition's deletion adds: its objects are deleted before it goes.
pub const FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// The `Terminating` condition's reason and message once the definition is marked deleted.
const PENDING: (&str, &str) =
    ("InstanceDeletionPending", "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon");

/// The `Terminating` condition's reason and message while its objects are deleted.
pub(crate) const IN_PROGRESS: (&str, &str) = ("InstanceDeletionInProgress", "CustomResource deletion is in progress");

/// Refuses a new object of a type whose definition is being deleted (kube-apiserver's 403).
pub(crate) fn admit_new(t: &Registered, name: &str) -> Result<()> {
    if t.spec.terminating {
        return Err(Error::Forbidden {
            resource: t.spec.resource(),
            name: name.into(),
            message: "create not allowed while custom resource definition is terminating".into(),
            cause: None,
        });
    }
    Ok(())
}

/// Whether a definition is being deleted.
pub(crate) fn deleting(crd: &Value) -> bool {
    crd.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null())
}

/// A definition about to be deleted, with [`FINALIZER`] (the delete then marks it deleted
/// rather than removing it).
pub(crate) fn with_finalizer(crd: &Value) -> Value {
    let mut out = crd.clone();
    if let Some(Value::Object(m)) = out.get_mut("metadata") {
        let f = m.entry("finalizers").or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(f) = f {
            if !f.iter().any(|v| v == FINALIZER) {
                f.push(Value::String(FINALIZER.into()));
            }
        }
    }
    out
}

/// What [`prepare`] does not know of a definition's status: its `storedVersions` keep those of
/// the live definition (or, on a write of the status, those the writer sent), and a definition
/// being deleted has the `Terminating` condition (the writer's, the live one's, or a new one
/// `InstanceDeletionPending`).
pub(crate) fn settle(live: Option<&Value>, sent: Option<&Value>, status_write: bool, object: &mut Value) {
    let strs =
        |v: Option<&Value>, p: &str| -> Vec<Value> { v.and_then(|v| v.pointer(p)).and_then(Value::as_array).cloned().unwrap_or_default() };
    let mut stored = if status_write { strs(sent, "/storedVersions") } else { strs(live, "/status/storedVersions") };
    for v in strs(Some(object), "/status/storedVersions") {
        if !stored.contains(&v) {
            stored.push(v);
        }
    }
    let terminating = deleting(object).then(|| {
        let find = |conds: Vec<Value>| conds.into_iter().find(|c| c.get("type").and_then(Value::as_str) == Some("Terminating"));
        find(strs(sent, "/conditions")).or_else(|| find(strs(live, "/status/conditions"))).unwrap_or_else(|| {
            let time = object.pointer("/metadata/deletionTimestamp").cloned().unwrap_or(Value::Null);
            json!({"type": "Terminating", "status": "True", "lastTransitionTime": time, "reason": PENDING.0, "message": PENDING.1})
        })
    });
    if let Some(Value::Object(status)) = object.get_mut("status") {
        status.insert("storedVersions".into(), Value::Array(stored));
        if let (Some(c), Some(Value::Array(conds))) = (terminating, status.get_mut("conditions")) {
            conds.push(c);
        }
    }
}

/// The type a definition about to be written defines, checked as kube-apiserver checks a
/// definition ([`crate::crd::definition`]; `live` is the stored one on an update) and to
/// compile; its status gets the conditions of an established definition, and its storage
/// version joins `status.storedVersions`.
///
/// # Errors
/// [`Error::Invalid`] naming every problem of the definition; [`Error::BadRequest`] when it
/// does not make a type all the same.
///
/// `checked`: whether a client writes it; the store's own writes (an import of what
/// kube-apiserver stored, a deletion's steps) are neither defaulted nor checked again.
pub(crate) fn prepare(object: &mut Value, live: Option<&Value>, others: &[&Value], checked: bool) -> Result<Option<Registered>> {
    if checked {
        crate::crd::definition::default(object);
    }
    let problems = if checked { crate::crd::definition::check(object, live) } else { Vec::new() };
    if !problems.is_empty() {
        return Err(Error::Invalid(crate::typed::ValidationErrors(problems)));
    }
    let spec = TypeSpec::from_crd(object).map_err(|e| Error::BadRequest(format!("invalid CustomResourceDefinition: {e}")))?;
    let compiled = Registered::compile(0, spec).map_err(|e| Error::BadRequest(format!("invalid CustomResourceDefinition: {e}")))?;
    let naming = crate::crd::naming::accept(object, others);
    let versions = crate::crd::definition::stored_versions_after(object, live);
    let time = object.pointer("/metadata/creationTimestamp").cloned().unwrap_or(Value::Null);
    let condition = |kind: &str, status: &str, reason: &str, message: &str| json!({"type": kind, "status": status, "lastTransitionTime": time, "reason": reason, "message": message});
    let conditions = match &naming.conflict {
        None => vec![
            condition("NamesAccepted", "True", "NoConflicts", "no conflicts found"),
            condition("Established", "True", "InitialNamesAccepted", "the initial names have been accepted"),
        ],
        Some((reason, message)) => vec![
            condition("NamesAccepted", "False", reason, message),
            condition("Established", "False", "NotAccepted", "not all names are accepted"),
        ],
    };
    if let Value::Object(m) = object {
        m.insert("status".into(), json!({"acceptedNames": naming.accepted, "conditions": conditions, "storedVersions": versions}));
    }
    // A definition whose names are not all accepted is not served.
    Ok(naming.conflict.is_none().then_some(compiled))
}

/// The other definitions of `object`'s group among the registered types, as registered.
pub(crate) fn others_of_group<'a>(object: &Value, specs: &'a [TypeSpec]) -> Vec<&'a Value> {
    let group = object.pointer("/spec/group").and_then(Value::as_str).unwrap_or("");
    let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    specs
        .iter()
        .filter(|s| s.group == group && s.resource() != name)
        .filter_map(|s| match &s.schema {
            super::types::SchemaSource::Crd(crd) => Some(crd),
            _ => None,
        })
        .collect()
}

/// The schema of a custom resource type's version (None for other types).
fn schema_of(spec: &TypeSpec) -> Option<&Value> {
    match &spec.schema {
        super::types::SchemaSource::Crd(crd) => crd
            .pointer("/spec/versions")
            .and_then(Value::as_array)?
            .iter()
            .find(|v| v.get("name").and_then(Value::as_str) == Some(spec.version.as_str()))?
            .pointer("/schema/openAPIV3Schema"),
        _ => None,
    }
}

/// The registration of the type a definition's commit defines: its id (the registered type's,
/// or a new one reserved for it), its record, and the compiled type the committer registers
/// once the commit is durable.
pub(crate) struct Registration {
    id: u32,
    record: Vec<u8>,
    new: bool,
    compiled: Registered,
}

impl Registration {
    /// The registration of `compiled` (from [`prepare`]).
    ///
    /// # Errors
    /// [`Error::BadRequest`] when the type does not serialise.
    pub(crate) fn of(core: &Core, mut compiled: Registered) -> Result<Registration> {
        let mut registry = core.registry.write();
        let (id, new) = match registry.get(&compiled.spec.resource()) {
            Some(t) => {
                // Objects written under another schema are normalised when read from now on.
                compiled.spec.reshaped |= t.spec.reshaped || schema_of(&t.spec) != schema_of(&compiled.spec);
                (t.id, false)
            }
            None => (registry.reserve_id(), true),
        };
        let record = serde_json::to_vec(&compiled.spec).map_err(|e| Error::BadRequest(e.to_string()))?;
        compiled.set_id(id);
        Ok(Registration { id, record, new, compiled })
    }

    /// Adds the type's record to the definition's batch; a new id is guarded, so that a commit
    /// of another process that took it first fails this one (which then plans again, with
    /// another id).
    pub(crate) fn add_to(&self, batch: &mut Batch) {
        let key = self.id.to_be_bytes().to_vec();
        if self.new {
            let mut to = key.clone();
            to.push(0);
            batch.guards.push(Guard { cf: CF_TYPES, from: key.clone(), to });
        }
        batch.put(CF_TYPES, key, self.record.clone());
    }

    /// Registers the type, once its commit is durable.
    pub(crate) fn register(self, core: &Core) {
        core.registry.write().insert(self.compiled);
    }
}
