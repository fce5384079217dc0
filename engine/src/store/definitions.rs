//! CustomResourceDefinitions are types: writing one registers (or re-registers) the resource
//! type it defines, as kube-apiserver serves a CRD's resource once it is established. A
//! definition whose type cannot be built is refused before it is written; a written one is
//! marked `NamesAccepted` and `Established` in its status, as Kubernetes' CRD controllers mark
//! it. Deleting a definition leaves its type registered (objects of it stay readable).

use super::types::{Registered, TypeSpec};
use crate::{Error, Result};
use serde_json::{json, Value};

/// The resource name of CustomResourceDefinitions.
pub(crate) const CRDS: &str = "customresourcedefinitions.apiextensions.k8s.io";

/// The type a definition about to be written defines, checked to compile; its status gets the
/// conditions of an established definition.
///
/// # Errors
/// [`Error::BadRequest`] when the definition does not make a type.
pub(crate) fn prepare(object: &mut Value) -> Result<TypeSpec> {
    let spec = TypeSpec::from_crd(object).map_err(|e| Error::BadRequest(format!("invalid CustomResourceDefinition: {e}")))?;
    Registered::compile(0, spec.clone()).map_err(|e| Error::BadRequest(format!("invalid CustomResourceDefinition: {e}")))?;
    let names = object.pointer("/spec/names").cloned().unwrap_or_else(|| json!({}));
    let versions: Vec<Value> = object
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .filter(|v| v.get("storage").and_then(Value::as_bool).unwrap_or(false))
                .filter_map(|v| v.get("name").cloned())
                .collect()
        })
        .unwrap_or_default();
    let time = object.pointer("/metadata/creationTimestamp").cloned().unwrap_or(Value::Null);
    let condition = |kind: &str, reason: &str, message: &str| json!({"type": kind, "status": "True", "lastTransitionTime": time, "reason": reason, "message": message});
    if let Value::Object(m) = object {
        m.insert(
            "status".into(),
            json!({
                "acceptedNames": names,
                "conditions": [
                    condition("NamesAccepted", "NoConflicts", "no conflicts found"),
                    condition("Established", "InitialNamesAccepted", "the initial names have been accepted"),
                ],
                "storedVersions": versions,
            }),
        );
    }
    Ok(spec)
}
