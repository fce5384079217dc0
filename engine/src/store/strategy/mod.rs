//! What Kubernetes does to objects of particular kinds when they are written (kube-apiserver's
//! registry "strategies"), in the store's write plan: every door and the embedded API get the
//! same objects.
//!
//! - Namespaces ([`namespace`]): the `kubernetes.io/metadata.name` label, the `kubernetes`
//!   finalizer and the `Active` phase of a new one; the Kubernetes namespaces that exist from the
//!   start ([`Store::ensure_namespaces`](super::Store::ensure_namespaces)).
//! - The `scale` subresource of workloads ([`scale`]).
//!
//! Rules every kind follows live beside the write plan in `meta.rs` (server-owned metadata,
//! generation, the status/spec separation of kinds with a status subresource, Secret's
//! `stringData`); CustomResourceDefinitions register their type in the commit that writes them
//! (`definitions.rs`).

pub(super) mod namespace;
pub mod scale;

use super::types::Registered;
use serde_json::Value;

/// What the kind's defaulting adds to a write's input before the field manager sees it (the
/// writer then owns it, as kube-apiserver's decoding defaults are owned).
pub(super) fn default_input(t: &Registered, object: &mut Value, name: &str) {
    if namespace::is(t) {
        namespace::default_input(object, name);
    }
}

/// What the kind's strategy sets on a new object after the field manager (owned by nobody).
pub(super) fn prepare_create(t: &Registered, object: &mut Value) {
    if namespace::is(t) {
        namespace::prepare_create(object);
    }
}

/// What the kind's strategy keeps or sets on an updated object after the field manager.
pub(super) fn prepare_update(t: &Registered, status_write: bool, live: &Value, object: &mut Value) {
    if namespace::is(t) && !status_write {
        namespace::prepare_update(live, object);
    }
}
