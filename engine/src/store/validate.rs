//! Checks of names and object shape, with the apiserver's messages.

use crate::typed::{ValidationError, ValidationErrors};
use crate::{Error, Result};
use serde_json::Value;

use crate::names::{is_dns1123_label as is_label, DNS1123_LABEL_MSG, DNS1123_SUBDOMAIN_MSG};

/// A 422 Invalid error about one field.
pub(crate) fn invalid(path: &str, message: &str) -> Error {
    Error::Invalid(ValidationErrors(vec![ValidationError { path: path.into(), message: message.into() }]))
}

/// An object name: a DNS subdomain (RFC 1123) of at most 253 characters.
pub(crate) fn name(name: &str) -> Result<()> {
    if name.len() > 253 {
        return Err(invalid("metadata.name", &format!("Invalid value: {name:?}: must be no more than 253 characters")));
    }
    if !name.split('.').all(is_label) {
        return Err(invalid("metadata.name", &format!("Invalid value: {name:?}: {DNS1123_SUBDOMAIN_MSG}")));
    }
    Ok(())
}

/// A namespace name: a DNS label (RFC 1123) of at most 63 characters.
pub(crate) fn namespace(ns: &str) -> Result<()> {
    if ns.len() > 63 {
        return Err(invalid("metadata.namespace", &format!("Invalid value: {ns:?}: must be no more than 63 characters")));
    }
    if !is_label(ns) {
        return Err(invalid("metadata.namespace", &format!("Invalid value: {ns:?}: {DNS1123_LABEL_MSG}")));
    }
    Ok(())
}

/// `prefix` and five random characters of the apiserver's alphabet (no vowels, no look-alikes).
pub(crate) fn generate_name(prefix: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let bytes = uuid::Uuid::new_v4().into_bytes();
    let mut out = String::with_capacity(prefix.len() + 5);
    // The apiserver cuts the prefix so that the name fits 63 characters.
    out.push_str(prefix.get(..prefix.len().min(58)).unwrap_or(prefix));
    for b in bytes.iter().take(5) {
        out.push(char::from(ALPHABET[usize::from(*b) % ALPHABET.len()]));
    }
    out
}

const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const CONFIG_KEY_MSG: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";
/// The most bytes an object's annotations (keys and values) may hold, as kube-apiserver allows.
pub(crate) const TOTAL_ANNOTATION_BYTES: usize = 256 * 1024;

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`: a label value or the name part of a qualified
/// name (non-empty here).
fn is_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.first().is_some_and(u8::is_ascii_alphanumeric)
        && b.last().is_some_and(u8::is_ascii_alphanumeric)
        && b.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// The finalizer names a name without a `/` may be (kube-apiserver's `IsStandardFinalizerName`).
pub(crate) const STANDARD_FINALIZERS: [&str; 3] = ["kubernetes", "orphan", "foregroundDeletion"];

/// kube-apiserver's word for a finalizer name that is neither standard nor prefixed.
pub(crate) const NOT_STANDARD_FINALIZER: &str = "name is neither a standard finalizer name nor is it fully qualified";

/// apimachinery's `IsQualifiedName`: `[prefix/]name`, the prefix a DNS subdomain, the name at
/// most 63 characters of [`is_name_part`]. The problems, as kube-apiserver words them.
pub(crate) fn qualified_name(s: &str) -> Vec<String> {
    let parts: Vec<&str> = s.split('/').collect();
    let (prefix, name) = match parts.as_slice() {
        [name] => (None, *name),
        [prefix, name] => (Some(*prefix), *name),
        _ => {
            return vec![format!(
                "a valid label key {QUALIFIED_NAME_MSG} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            )]
        }
    };
    let mut out = Vec::new();
    if name.is_empty() {
        out.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        out.push("name part must be no more than 63 characters".to_string());
    }
    if !name.is_empty() && !is_name_part(name) {
        out.push(format!("name part {QUALIFIED_NAME_MSG}"));
    }
    match prefix {
        Some("") => out.push("prefix part must be non-empty".to_string()),
        Some(p) if p.len() > 253 || !p.split('.').all(is_label) => out.push(format!("prefix part {DNS1123_SUBDOMAIN_MSG}")),
        _ => {}
    }
    out
}

/// The problems of a label value (apimachinery's `IsValidLabelValue`).
pub(crate) fn label_value(v: &str) -> Vec<String> {
    let mut out = Vec::new();
    if v.len() > 63 {
        out.push("must be no more than 63 characters".to_string());
    }
    if !v.is_empty() && !is_name_part(v) {
        out.push(LABEL_VALUE_MSG.to_string());
    }
    out
}

/// kube-apiserver's checks of an object's metadata that every kind shares
/// (`ValidateObjectMeta`): label keys and values, annotation keys and their total size,
/// finalizer names; and the keys of a ConfigMap's or Secret's data.
///
/// # Errors
/// [`Error::Invalid`] with one cause per problem, each naming its field.
pub(crate) fn object_meta(t: &super::types::Registered, object: &Value) -> Result<()> {
    let mut errs = Vec::new();
    let meta = object.get("metadata");
    for field in ["labels", "annotations"] {
        let strings = match meta.and_then(|m| m.get(field)) {
            None | Some(Value::Null) => true,
            Some(Value::Object(m)) => m.values().all(|v| v.is_string() || v.is_null()),
            Some(_) => false,
        };
        if !strings {
            errs.push(ValidationError {
                path: format!("metadata.{field}"),
                message: "Invalid value: must be a map of strings to strings".into(),
            });
        }
    }
    fn push(errs: &mut Vec<ValidationError>, path: String, value: &str, msg: String) {
        errs.push(ValidationError { path, message: format!("Invalid value: {value:?}: {msg}") });
    }
    if let Some(Value::Object(labels)) = meta.and_then(|m| m.get("labels")) {
        for (k, v) in labels {
            for msg in qualified_name(k) {
                push(&mut errs, "metadata.labels".into(), k, msg);
            }
            for msg in label_value(v.as_str().unwrap_or_default()) {
                push(&mut errs, format!("metadata.labels[{k}]"), v.as_str().unwrap_or_default(), msg);
            }
        }
    }
    if let Some(Value::Object(annotations)) = meta.and_then(|m| m.get("annotations")) {
        let mut total = 0usize;
        for (k, v) in annotations {
            total = total.saturating_add(k.len() + v.as_str().map_or(0, str::len));
            for msg in qualified_name(&k.to_lowercase()) {
                push(&mut errs, "metadata.annotations".into(), k, msg);
            }
        }
        if total > TOTAL_ANNOTATION_BYTES {
            errs.push(ValidationError {
                path: "metadata.annotations".into(),
                message: format!("Too long: must have at most {TOTAL_ANNOTATION_BYTES} bytes"),
            });
        }
    }
    if let Some(Value::Array(finalizers)) = meta.and_then(|m| m.get("finalizers")) {
        // CustomResourceDefinitions are validated by apiextensions-apiserver, which does not
        // (their cleanup finalizer has no prefix).
        let built_in = matches!(t.spec.schema, crate::store::SchemaSource::Builtin { .. })
            && t.spec.resource() != "customresourcedefinitions.apiextensions.k8s.io";
        for (i, f) in finalizers.iter().enumerate() {
            let Some(f) = f.as_str() else { continue };
            for msg in qualified_name(f) {
                push(&mut errs, "metadata.finalizers".into(), f, msg);
            }
            // Built-in kinds (kube-apiserver's core ValidateObjectMeta) also refuse a name
            // without a prefix that is not a standard finalizer name.
            if built_in && !f.contains('/') && !STANDARD_FINALIZERS.contains(&f) {
                push(&mut errs, format!("metadata.finalizers[{i}]"), f, NOT_STANDARD_FINALIZER.into());
            }
        }
    }
    if let Some(prefix) = meta.and_then(|m| m.get("generateName")).and_then(Value::as_str).filter(|p| !p.is_empty()) {
        // A prefix: a name once its trailing dashes are masked (apimachinery's maskTrailingDash).
        let masked =
            if prefix.len() > 1 && prefix.ends_with('-') { format!("{}a", &prefix[..prefix.len() - 1]) } else { prefix.to_string() };
        if masked.len() > 253 || !masked.split('.').all(is_label) {
            push(&mut errs, "metadata.generateName".into(), prefix, DNS1123_SUBDOMAIN_MSG.into());
        }
    }
    if let Some(Value::Array(refs)) = meta.and_then(|m| m.get("ownerReferences")) {
        let mut controllers = 0;
        for r in refs {
            for (field, what) in [("apiVersion", "version"), ("kind", "kind"), ("name", "name"), ("uid", "uid")] {
                if r.get(field).and_then(Value::as_str).is_none_or(str::is_empty) {
                    push(&mut errs, format!("metadata.ownerReferences.{field}"), "", format!("{what} must not be empty"));
                }
            }
            if r.get("controller").and_then(Value::as_bool) == Some(true) {
                controllers += 1;
            }
        }
        if controllers > 1 {
            errs.push(ValidationError {
                path: "metadata.ownerReferences".into(),
                message: "Invalid value: Only one reference can have Controller set to true".into(),
            });
        }
    }
    if t.spec.group.is_empty() && t.spec.kind == "ConfigMap" {
        if let (Some(Value::Object(data)), Some(Value::Object(binary))) = (object.get("data"), object.get("binaryData")) {
            for k in data.keys().filter(|k| binary.contains_key(*k)) {
                push(&mut errs, format!("data[{k}]"), k, "duplicate of key present in binaryData".into());
            }
        }
    }
    if t.spec.group.is_empty() && matches!(t.spec.kind.as_str(), "ConfigMap" | "Secret") {
        for field in ["data", "binaryData"] {
            if let Some(Value::Object(data)) = object.get(field) {
                for k in data.keys() {
                    for msg in config_key(k) {
                        push(&mut errs, format!("{field}[{k}]"), k, msg);
                    }
                }
            }
        }
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(Error::Invalid(ValidationErrors(errs)))
    }
}

/// The problems of a ConfigMap or Secret data key (apimachinery's `IsConfigMapKey`).
fn config_key(k: &str) -> Vec<String> {
    let mut out = Vec::new();
    if k.len() > 253 {
        out.push("must be no more than 253 characters".to_string());
    }
    if k.is_empty() || !k.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.')) {
        out.push(CONFIG_KEY_MSG.to_string());
    }
    if k == "." {
        out.push("must not be '.'".to_string());
    } else if k == ".." {
        out.push("must not be '..'".to_string());
    } else if k.starts_with("..") {
        out.push("must not start with '..'".to_string());
    }
    out
}

/// Checks that an object of a built-in kind can be held by its Kubernetes protobuf message (the
/// encoding clients read it in): integers of the field's width, numbers where numbers belong,
/// base64 in `[]byte` fields, maps, lists and scalars where the Go type has them. An object the
/// store accepts is then readable by every client. Other types pass.
///
/// `live`: the version `object` replaces, checked when it was written: then only the fields that
/// differ from it are encoded (a field's encoding depends on its value alone). A field kept
/// unchanged from a version that did not encode (written before this check existed) is not
/// reported. `managed_fields`: whether `metadata.managedFields` are checked too (not when the
/// field manager wrote them: validated entries, RFC 3339 times, the documents of sets).
///
/// # Errors
/// [`Error::Invalid`] naming the field path and the problem.
pub(crate) fn encodable(t: &super::types::Registered, object: &mut Value, live: Option<&Value>, managed_fields: bool) -> Result<()> {
    let Some(message) = t.protobuf() else { return Ok(()) };
    let kept = if managed_fields { None } else { crate::fieldmanager::take_managed_fields(object) };
    let checked = message.check(object, live);
    if let (Some(mf), Some(Value::Object(meta))) = (kept, object.get_mut("metadata")) {
        meta.insert("managedFields".into(), mf);
    }
    match checked {
        Ok(()) => Ok(()),
        Err(fieldstore_codec::Error::K8sJson { path, reason, .. }) => {
            let path = path.trim_start_matches('.');
            let path = if path.is_empty() { "<root>" } else { path };
            Err(invalid(path, &format!("Invalid value: {reason}")))
        }
        Err(e) => Err(Error::BadRequest(format!("{} cannot be encoded: {e}", t.spec.kind))),
    }
}

/// Rejects values nested deeper than `max` objects and arrays.
///
/// Only containers go on the walk's stack (a scalar has no depth to check), and their children
/// are visited without an iterator object per container: this runs on every write's body.
pub(crate) fn depth(v: &Value, max: usize) -> Result<()> {
    fn is_container(v: &Value) -> bool {
        matches!(v, Value::Object(_) | Value::Array(_))
    }
    let mut stack = Vec::with_capacity(32);
    if is_container(v) {
        stack.push((v, 1usize));
    }
    while let Some((v, d)) = stack.pop() {
        if d > max {
            return Err(Error::BadRequest(format!("object nesting exceeds the limit of {max} levels")));
        }
        match v {
            Value::Object(m) => stack.extend(m.values().filter(|c| is_container(c)).map(|c| (c, d + 1))),
            Value::Array(a) => stack.extend(a.iter().filter(|c| is_container(c)).map(|c| (c, d + 1))),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_names() {
        assert!(name("a.b-c.d9").is_ok());
        for bad in ["", "A", "-a", "a-", "a..b", "a_b", &"a".repeat(254)] {
            assert!(matches!(name(bad), Err(Error::Invalid(_))), "{bad}");
        }
        assert!(namespace("kube-system").is_ok());
        assert!(namespace("a.b").is_err());
    }

    #[test]
    fn qualified_names_label_values_and_config_keys() {
        for ok in ["a", "app.kubernetes.io/name", "A_b.c-9", "example.com/X"] {
            assert!(qualified_name(ok).is_empty(), "{ok}");
        }
        for bad in ["", "-x-", "a/b/c", "/a", "Example.com/a", "a/", &"x".repeat(64), "a b"] {
            assert!(!qualified_name(bad).is_empty(), "{bad}");
        }
        assert!(label_value("").is_empty() && label_value("v1.2_3").is_empty());
        assert!(!label_value("-v").is_empty() && !label_value(&"v".repeat(64)).is_empty());
        assert!(config_key("a.b_C-1").is_empty());
        for bad in ["a/b", "", ".", "..", "..a", "a b"] {
            assert!(!config_key(bad).is_empty(), "{bad}");
        }
    }

    #[test]
    fn nesting() {
        let v = serde_json::json!({"a": {"b": [1]}});
        assert!(depth(&v, 3).is_ok());
        assert!(depth(&v, 2).is_err());
    }
}
