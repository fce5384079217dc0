//! CustomResourceDefinitions are types: writing one registers (or re-registers) the resource
//! type it defines, in the same commit (the type's record joins the definition's batch, and the
//! type is served from the moment the definition's revision is visible), as kube-apiserver
//! serves a CRD's resource once it is established. A definition whose type cannot be built is
//! refused before it is written. The write answers with kube-apiserver's status (empty on a
//! create); then, before the request returns, the store writes what Kubernetes' naming and
//! establishing controllers would (`acceptedNames`, `NamesAccepted`, `Established`) through the
//! status subresource as manager `kube-apiserver` ([`establish`], `Store::establish_definition`).
//! Its `status.storedVersions` keeps every version that has been the storage version.
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
        if let Some(c) = terminating {
            let conds = status.entry("conditions").or_insert(Value::Null);
            if !conds.is_array() {
                *conds = Value::Array(Vec::new());
            }
            if let Value::Array(conds) = conds {
                conds.retain(|o| o["type"] != "Terminating");
                conds.push(c);
            }
        }
    }
}

/// The type a definition about to be written defines, checked as kube-apiserver checks a
/// definition ([`crate::crd::definition`]; `live` is the stored one on an update) and to
/// compile; `None` when its names are not all accepted (it is not served). A client's write of
/// the definition itself gets kube-apiserver's strategy for its status: on a create the empty
/// status (its Go zero value), on an update the live one; a write of the status keeps the
/// status sent. Either way its storage version joins `status.storedVersions` ([`settle`]). The
/// conditions and accepted names are the controllers' to write, after the commit
/// ([`establish`]).
///
/// # Errors
/// [`Error::Invalid`] naming every problem of the definition; [`Error::BadRequest`] when it
/// does not make a type all the same.
///
/// `checked`: whether a client writes it; the store's own writes (an import of what
/// kube-apiserver stored, a deletion's steps) are neither defaulted nor checked again, and get
/// the controllers' status in their own commit.
pub(crate) fn prepare(
    object: &mut Value,
    live: Option<&Value>,
    others: &[&Value],
    checked: bool,
    status_write: bool,
) -> Result<Option<Registered>> {
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
    // A write of the status sets `storedVersions` (so that versions no longer stored can be
    // dropped); any other write keeps the live ones.
    let versions = if status_write {
        let sent = json!({"status": {"storedVersions": object.pointer("/status/storedVersions")}});
        crate::crd::definition::stored_versions_after(object, Some(&sent))
    } else {
        crate::crd::definition::stored_versions_after(object, live)
    };
    if checked && !status_write {
        let status = match live.and_then(|l| l.get("status")) {
            Some(s) => s.clone(),
            None => empty_status(),
        };
        if let Value::Object(m) = object {
            m.insert("status".into(), status);
        }
    }
    if let Some(Value::Object(status)) = object.get_mut("status") {
        status.insert("storedVersions".into(), json!(versions));
    }
    if !checked {
        // An import is established in its own commit (what kube-apiserver stored normally is).
        let time = object.pointer("/metadata/creationTimestamp").cloned().unwrap_or(Value::Null);
        if let Value::Object(m) = object {
            if !m.get("status").is_some_and(Value::is_object) {
                m.insert("status".into(), empty_status());
            }
        }
        establish(object, others, &time);
    }
    // A definition whose names are not all accepted is not served.
    Ok(naming.conflict.is_none().then_some(compiled))
}

/// A new definition's status: the Go zero value of its type, as kube-apiserver answers a create
/// (`conditions: null`, `acceptedNames` with empty `plural` and `kind`).
fn empty_status() -> Value {
    crate::schema::builtin::zero_value("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition")
        .and_then(|z| z.get("status"))
        .cloned()
        .unwrap_or_else(|| json!({"conditions": null, "acceptedNames": {"plural": "", "kind": ""}, "storedVersions": null}))
}

/// What kube-apiserver's naming and establishing controllers write in a definition's status
/// once it is stored: `acceptedNames` (the names no other definition of the group holds), the
/// `NamesAccepted` condition and `Established` (true once the names were accepted, and from then
/// on). A condition keeps its `lastTransitionTime` while its status stays; a changed one gets
/// `now`. Whether anything changed.
pub(crate) fn establish(object: &mut Value, others: &[&Value], now: &Value) -> bool {
    let naming = crate::crd::naming::accept(object, others);
    let condition = |kind: &str, status: &str, reason: &str, message: &str| json!({"type": kind, "status": status, "lastTransitionTime": now, "reason": reason, "message": message});
    let names = match &naming.conflict {
        None => condition("NamesAccepted", "True", "NoConflicts", "no conflicts found"),
        Some((reason, message)) => condition("NamesAccepted", "False", reason, message),
    };
    let before = object.get("status").cloned();
    let Some(Value::Object(status)) = object.get_mut("status") else { return false };
    status.insert("acceptedNames".into(), naming.accepted);
    let conds = status.entry("conditions").or_insert(Value::Null);
    if !conds.is_array() {
        *conds = Value::Array(Vec::new());
    }
    let Value::Array(conds) = conds else { return false };
    let established_true = conds.iter().any(|c| c["type"] == "Established" && c["status"] == "True");
    let established = match (&naming.conflict, established_true) {
        (_, true) => None,
        (None, false) => Some(condition("Established", "True", "InitialNamesAccepted", "the initial names have been accepted")),
        (Some(_), false) => Some(condition("Established", "False", "NotAccepted", "not all names are accepted")),
    };
    for c in std::iter::once(names).chain(established) {
        match conds.iter_mut().find(|o| o["type"] == c["type"]) {
            Some(o) if o["status"] == c["status"] => {
                let time = o["lastTransitionTime"].clone();
                *o = c;
                o["lastTransitionTime"] = time;
            }
            Some(o) => *o = c,
            None => conds.push(c),
        }
    }
    object.get("status") != before.as_ref()
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
