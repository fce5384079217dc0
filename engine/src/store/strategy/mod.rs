//! What Kubernetes does to objects of particular kinds when they are written (kube-apiserver's
//! registry "strategies"), in the store's write plan: every door and the embedded API get the
//! same objects.
//!
//! - Namespaces ([`namespace`]): the `kubernetes.io/metadata.name` label, the `kubernetes`
//!   finalizer and the `Active` phase of a new one; the Kubernetes namespaces that exist from the
//!   start ([`Store::ensure_namespaces`](super::Store::ensure_namespaces)).
//! - The `scale` subresource of workloads ([`scale`]).
//! - ConfigMaps and Secrets marked immutable ([`immutable`]); and, for every kind, no finalizer
//!   added to an object being deleted.
//! - Deployments, whose generation moves with their annotations too
//!   ([`annotations_bump_generation`]).
//!
//! Rules every kind follows live beside the write plan in `meta.rs` (server-owned metadata,
//! generation, the status/spec separation of kinds with a status subresource, Secret's
//! `stringData`); CustomResourceDefinitions register their type in the commit that writes them
//! (`definitions.rs`).

mod immutable;
pub(super) mod namespace;
pub mod scale;

use super::types::Registered;
use crate::typed::{ValidationError, ValidationErrors};
use crate::{Error, Result};
use serde_json::Value;

/// What the kind's defaulting adds to a write's input before the field manager sees it (the
/// writer then owns it, as kube-apiserver's decoding defaults are owned), and the validation of
/// the input: a custom resource's schema defaults and checks it (unchanged values of `live`
/// ratchet: [`crate::crd::validation`]). Returns the warnings of the CEL rules a ratcheted value
/// fails.
///
/// # Errors
/// [`Error::Invalid`] naming every field the custom resource's schema refuses.
pub(super) fn prepare_input(t: &Registered, live: Option<&Value>, object: &mut Value, name: &str) -> Result<Vec<String>> {
    if namespace::is(t) {
        namespace::default_input(object, name);
    }
    if t.spec.resource() == super::definitions::CRDS {
        crate::crd::definition::default(object);
    }
    if let Some(schema) = &t.custom {
        crate::crd::defaults::apply(schema, object);
        let (errs, warnings) = crate::crd::validation::validate_with_warnings(schema, object, live);
        if !errs.is_empty() {
            return Err(Error::Invalid(ValidationErrors(errs)));
        }
        return Ok(warnings);
    }
    Ok(Vec::new())
}

/// What the kind's strategy sets on a new object after the field manager (owned by nobody).
pub(super) fn prepare_create(t: &Registered, object: &mut Value) {
    if namespace::is(t) {
        namespace::prepare_create(object);
    }
}

/// Whether an update's change of annotations alone bumps the generation: a Deployment's, by its
/// main resource (kube-apiserver's Deployment strategy: its annotations are copied to its
/// ReplicaSets, so the controller must see them as a new generation); not its status.
pub(super) fn annotations_bump_generation(t: &Registered, status_write: bool) -> bool {
    !status_write && t.spec.group == "apps" && t.spec.kind == "Deployment"
}

/// What the kind's strategy keeps or sets on an updated object after the field manager, and the
/// update's validation against the live object (422 Invalid naming each field).
pub(super) fn prepare_update(t: &Registered, status_write: bool, live: &Value, object: &mut Value) -> Result<()> {
    if namespace::is(t) && !status_write {
        namespace::prepare_update(live, object);
    }
    let mut errs = Vec::new();
    immutable::check_update(t, live, object, &mut errs);
    no_new_finalizers(live, object, &mut errs);
    if errs.is_empty() {
        Ok(())
    } else {
        Err(Error::Invalid(ValidationErrors(errs)))
    }
}

/// An object being deleted gets no new finalizer (apimachinery's `ValidateNoNewFinalizers`).
fn no_new_finalizers(live: &Value, new: &Value, errs: &mut Vec<ValidationError>) {
    if live.pointer("/metadata/deletionTimestamp").is_none_or(Value::is_null) {
        return;
    }
    let names = |v: &Value| -> Vec<String> {
        v.pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .map_or_else(Vec::new, |a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
    };
    let old = names(live);
    let mut extra: Vec<String> = names(new).into_iter().filter(|f| !old.contains(f)).collect();
    if extra.is_empty() {
        return;
    }
    extra.sort();
    extra.dedup();
    // Go's `%#v` of a []string.
    let shown = extra.iter().map(|f| format!("{f:?}")).collect::<Vec<_>>().join(", ");
    errs.push(ValidationError {
        path: "metadata.finalizers".into(),
        message: format!(
            "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{{{shown}}}"
        ),
    });
}
