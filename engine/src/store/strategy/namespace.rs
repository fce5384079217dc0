//! Namespaces, as kube-apiserver's namespace strategy and defaults make them: a new namespace is
//! `Active` and has the `kubernetes` finalizer in `spec.finalizers`; every namespace carries
//! the label `kubernetes.io/metadata.name` with its name; an update keeps `spec.finalizers`
//! (changed only through the `finalize` subresource).

use super::super::address::{Collection, ObjectKey};
use super::super::options::{GetOptions, WriteOptions};
use super::super::types::Registered;
use super::super::Store;
use crate::{Error, Result};
use serde_json::{json, Map, Value};

/// The label every namespace carries, with its name.
pub const NAME_LABEL: &str = "kubernetes.io/metadata.name";
/// The finalizer a new namespace gets, held until its contents are deleted.
pub const FINALIZER: &str = "kubernetes";
/// The namespaces Kubernetes has from the start.
pub const INITIAL: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

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
