//! ConfigMaps and Secrets marked `immutable: true`, as kube-apiserver's validation of their
//! updates keeps them: neither the mark nor the data changes any more (a Secret's `type` never
//! does).

use super::super::types::Registered;
use crate::typed::ValidationError;
use serde_json::Value;

/// Whether `t` is the core group's ConfigMap or Secret.
fn is(t: &Registered) -> bool {
    t.spec.group.is_empty() && matches!(t.spec.kind.as_str(), "ConfigMap" | "Secret")
}

/// The problems of an update from `live` to `new` of a ConfigMap or Secret.
pub(super) fn check_update(t: &Registered, live: &Value, new: &Value, errs: &mut Vec<ValidationError>) {
    if !is(t) {
        return;
    }
    let forbidden =
        |path: &str| ValidationError { path: path.into(), message: "Forbidden: field is immutable when `immutable` is set".into() };
    if t.spec.kind == "Secret" && live.get("type") != new.get("type") {
        let shown = new.get("type").and_then(Value::as_str).unwrap_or_default();
        errs.push(ValidationError { path: "type".into(), message: format!("Invalid value: {shown:?}: field is immutable") });
    }
    if live.get("immutable").and_then(Value::as_bool) != Some(true) {
        return;
    }
    if new.get("immutable").and_then(Value::as_bool) != Some(true) {
        errs.push(forbidden("immutable"));
    }
    let fields: &[&str] = if t.spec.kind == "Secret" { &["data"] } else { &["data", "binaryData"] };
    for field in fields {
        let empty = |v: Option<&Value>| v.is_none_or(|v| v.is_null() || v.as_object().is_some_and(serde_json::Map::is_empty));
        let (a, b) = (live.get(*field), new.get(*field));
        if a != b && !(empty(a) && empty(b)) {
            errs.push(forbidden(field));
        }
    }
}
