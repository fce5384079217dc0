//! Metadata rules: the request's scope (namespace), what a body must be, the server-owned
//! metadata of new objects, preconditions, and what an update may change (the apiserver's
//! PrepareForCreate / PrepareForUpdate).

use super::commit::{precondition, Plan};
use super::keys::EventType;
use super::types::Registered;
use super::{validate, Store};
use crate::fieldmanager::Time;
use crate::{Error, Result};
use serde_json::{Map, Value};

/// The object's `metadata.name`, which the request requires.
pub(super) fn required_name(object: &Value) -> Result<String> {
    object
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .ok_or_else(|| validate::invalid("metadata.name", "Required value: name is required"))
}

/// Sets the server-owned metadata of a new object.
pub(super) fn init_new(t: &Registered, obj: &mut Value, ns: &str, name: &str, now: &Time) {
    let Value::Object(root) = obj else { return };
    root.insert("apiVersion".into(), Value::String(t.api_version.clone()));
    root.insert("kind".into(), Value::String(t.spec.kind.clone()));
    let meta = root.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(m) = meta {
        m.insert("name".into(), Value::String(name.into()));
        if !ns.is_empty() {
            m.insert("namespace".into(), Value::String(ns.into()));
        }
        m.insert("uid".into(), Value::String(uuid::Uuid::new_v4().to_string()));
        m.insert("creationTimestamp".into(), Value::String(now.as_str().into()));
        if t.spec.generation {
            m.insert("generation".into(), Value::from(1));
        } else {
            m.remove("generation");
        }
        m.remove("resourceVersion");
        m.remove("deletionTimestamp");
        m.remove("deletionGracePeriodSeconds");
    }
}

/// Secret's strategy: `stringData` (write-only plain text) is folded into `data`, base64-encoded,
/// its keys winning over `data`'s, and is never stored — as kube-apiserver converts a v1 Secret.
/// Other types are left alone.
pub(super) fn fold_string_data(t: &Registered, obj: &mut Value) {
    use base64::Engine as _;
    if !(t.spec.group.is_empty() && t.spec.kind == "Secret") {
        return;
    }
    let Some(Value::Object(root)) = Some(obj) else { return };
    let Some(string_data) = root.remove("stringData") else { return };
    let Value::Object(entries) = string_data else { return };
    if entries.is_empty() {
        return;
    }
    let data = root.entry("data").or_insert_with(|| Value::Object(Map::new()));
    if !data.is_object() {
        *data = Value::Object(Map::new());
    }
    if let Value::Object(data) = data {
        for (k, v) in entries {
            let text = match v {
                Value::String(s) => s,
                other => other.to_string(),
            };
            data.insert(k, Value::String(base64::engine::general_purpose::STANDARD.encode(text)));
        }
    }
}

/// The resourceVersion and uid preconditions an update body carries.
pub(super) fn check_preconditions(t: &Registered, name: &str, live: &Value, new: &Value) -> Result<()> {
    let get = |v: &Value, f: &str| v.get("metadata").and_then(|m| m.get(f)).and_then(Value::as_str).map(str::to_string);
    if let Some(rv) = get(new, "resourceVersion").filter(|s| !s.is_empty()) {
        if Some(&rv) != get(live, "resourceVersion").as_ref() {
            return Err(precondition(
                t,
                name,
                "the object has been modified; please apply your changes to the latest version and try again".into(),
            ));
        }
    }
    if let Some(uid) = get(new, "uid").filter(|s| !s.is_empty()) {
        let live_uid = get(live, "uid").unwrap_or_default();
        if uid != live_uid {
            return Err(precondition(t, name, format!("Precondition failed: UID in precondition: {uid}, UID in object meta: {live_uid}")));
        }
    }
    Ok(())
}

/// What a patch may not do to an object's identity, as kube-apiserver's patcher rules it: the
/// patched document must be an object with an object (or no) `metadata`; a name or namespace
/// the patch changed is a 400 (one it removed is refilled), a uid it changed a 422 (immutable);
/// apiVersion and kind it removed come back in [`prepare_update`].
pub(super) fn check_patched_identity(live: &Value, patched: &Value) -> Result<()> {
    let Value::Object(root) = patched else {
        return Err(Error::BadRequest("the patched object must be a JSON object".into()));
    };
    let meta = match root.get("metadata") {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Object(m)) => m,
        Some(_) => return Err(validate::invalid("metadata", "Invalid value: metadata must be an object")),
    };
    let live_field = |f: &str| live.get("metadata").and_then(|m| m.get(f)).and_then(Value::as_str).unwrap_or("");
    for (field, what) in [("name", "name"), ("namespace", "namespace")] {
        match meta.get(field) {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) if s.is_empty() || s == live_field(field) => {}
            Some(v) => {
                let got = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                return Err(Error::BadRequest(format!(
                    "the {what} of the object ({got}) does not match the {what} on the URL ({})",
                    live_field(field)
                )));
            }
        }
    }
    match meta.get("uid") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if s.is_empty() || s == live_field("uid") => {}
        Some(v) => {
            return Err(validate::invalid("metadata.uid", &format!("Invalid value: {v}: field is immutable")));
        }
    }
    Ok(())
}

/// The apiserver's PrepareForUpdate: the object keeps its type's apiVersion and kind and its
/// server-owned metadata (name, namespace, uid, creationTimestamp, …: what a write removed comes
/// back, what it changed is the live value); with a status subresource, a main-resource write
/// keeps the live status and a status write changes only the status.
pub(super) fn prepare_update(t: &Registered, status_write: bool, live: &Value, mut new: Value) -> Value {
    if t.spec.status_subresource {
        if status_write {
            let status = new.get("status").cloned();
            let managed = new.pointer("/metadata/managedFields").cloned();
            new = live.clone();
            if let Value::Object(root) = &mut new {
                match status {
                    Some(s) => root.insert("status".into(), s),
                    None => root.remove("status"),
                };
                if let (Some(mf), Some(Value::Object(m))) = (managed, root.get_mut("metadata")) {
                    m.insert("managedFields".into(), mf);
                }
            }
        } else if let Value::Object(root) = &mut new {
            match live.get("status") {
                Some(s) => root.insert("status".into(), s.clone()),
                None => root.remove("status"),
            };
        }
    }
    if let Value::Object(root) = &mut new {
        root.insert("apiVersion".into(), Value::String(t.api_version.clone()));
        root.insert("kind".into(), Value::String(t.spec.kind.clone()));
        let meta = root.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
        if !meta.is_object() {
            *meta = Value::Object(Map::new());
        }
    }
    if let (Some(Value::Object(lm)), Some(Value::Object(nm))) = (live.get("metadata"), new.get_mut("metadata")) {
        for f in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "name",
            "namespace",
            "resourceVersion",
        ] {
            match lm.get(f) {
                Some(v) => nm.insert(f.into(), v.clone()),
                None => nm.remove(f),
            };
        }
    }
    new
}

/// Bumps the generation when the object changed outside metadata and status, or, when
/// `annotations_bump` (the kind's strategy says so: [`super::strategy::annotations_bump_generation`]),
/// its annotations changed; a write that changes nothing at all is skipped (as the apiserver does
/// for identical bytes).
pub(super) fn finish_update(live: &Value, mut new: Value, annotations_bump: bool) -> Plan {
    // One comparison, without copies: everything outside metadata and status, then those two.
    let spec_changed = match (live, &new) {
        (Value::Object(a), Value::Object(b)) => {
            fn rest(m: &Map<String, Value>) -> impl Iterator<Item = (&String, &Value)> {
                m.iter().filter(|(k, _)| *k != "metadata" && *k != "status")
            }
            let spec_changed = !rest(a).eq(rest(b));
            if !spec_changed && a.get("metadata") == b.get("metadata") && a.get("status") == b.get("status") {
                return Plan::NoOp(new);
            }
            spec_changed
        }
        _ if &new == live => return Plan::NoOp(new),
        _ => true,
    };
    // Absent, null and empty annotations are the same (apimachinery's semantic equality).
    fn annotations(v: &Value) -> Option<&Map<String, Value>> {
        v.pointer("/metadata/annotations").and_then(Value::as_object).filter(|m| !m.is_empty())
    }
    if spec_changed || (annotations_bump && annotations(live) != annotations(&new)) {
        // Types without a generation have none (the update kept the live object's).
        if let Some(Value::Object(m)) = new.get_mut("metadata") {
            if let Some(generation) = m.get("generation").and_then(Value::as_i64) {
                m.insert("generation".into(), Value::from(generation.saturating_add(1)));
            }
        }
    }
    Plan::Put(new, EventType::Modified)
}

impl Store {
    /// What a write of a named object addresses: its registered type, namespace and name, the
    /// object checked as input (update, apply, import).
    pub(super) fn addressed(
        &self,
        resource: &str,
        namespace: Option<&str>,
        object: &Value,
    ) -> Result<(std::sync::Arc<Registered>, String, String)> {
        let t = self.resolve(resource)?;
        let ns = self.scope(&t, namespace, object)?;
        self.check_input(&t, object)?;
        let name = required_name(object)?;
        Ok((t, ns, name))
    }

    /// The namespace of a request: required for namespaced types, absent otherwise, and equal
    /// to the object's own when it names one.
    pub(super) fn scope(&self, t: &Registered, namespace: Option<&str>, object: &Value) -> Result<String> {
        let in_object = object.get("metadata").and_then(|m| m.get("namespace")).and_then(Value::as_str).filter(|s| !s.is_empty());
        if !t.spec.namespaced {
            if namespace.is_some_and(|s| !s.is_empty()) || in_object.is_some() {
                return Err(Error::BadRequest(format!("{} is cluster-scoped: no namespace may be given", t.spec.resource())));
            }
            return Ok(String::new());
        }
        let ns = match (namespace.filter(|s| !s.is_empty()), in_object) {
            (Some(a), Some(b)) if a != b => {
                return Err(Error::BadRequest(
                    "the namespace of the provided object does not match the namespace sent on the request".into(),
                ))
            }
            (Some(a), _) => a,
            (None, Some(b)) => b,
            (None, None) => return Err(Error::BadRequest(format!("{} is namespaced: a namespace is required", t.spec.resource()))),
        };
        validate::namespace(ns)?;
        Ok(ns.to_string())
    }

    /// Checks an object body: a JSON object of this type's apiVersion and kind (when given),
    /// not nested too deeply.
    pub(super) fn check_input(&self, t: &Registered, object: &Value) -> Result<()> {
        if !object.is_object() {
            return Err(Error::BadRequest("the object must be a JSON object".into()));
        }
        validate::depth(object, self.core().options.max_depth)?;
        for k in ["apiVersion", "kind"] {
            if object.get(k).is_some_and(|v| !v.is_string() && !v.is_null()) {
                return Err(Error::BadRequest(format!(
                    "{k} must be a string, not {}",
                    object.get(k).map_or_else(String::new, Value::to_string)
                )));
            }
        }
        let s = |k: &str| object.get(k).and_then(Value::as_str);
        if let Some(v) = s("apiVersion") {
            if v != t.api_version {
                // kube-apiserver's create and update handlers' words.
                return Err(Error::BadRequest(format!(
                    "the API version in the data ({v}) does not match the expected API version ({})",
                    t.api_version
                )));
            }
        }
        if let Some(kind) = s("kind") {
            if kind != t.spec.kind {
                // A custom resource's kind is checked by its validation (422), a built-in's by
                // its decoding (400).
                if t.custom.is_some() {
                    return Err(super::validate::invalid("kind", &format!("Invalid value: {kind:?}: must be {}", t.spec.kind)));
                }
                return Err(Error::BadRequest(format!("kind {kind} does not match the resource's kind {}", t.spec.kind)));
            }
        }
        Ok(())
    }
}
