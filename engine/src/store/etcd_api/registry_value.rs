//! What a value kube-apiserver keeps in etcd holds: the object of a `k8s\x00` protobuf envelope
//! (built-in kinds) or of JSON (custom resources, CustomResourceDefinitions, aggregated APIs),
//! or why it holds none. A key's value says what it holds, not the key: kube-apiserver's
//! layout has historical names (`services/specs`, `minions`, `controllers`). Shared by the
//! etcd API (objects, not blobs) and `fieldstore import --from-etcd`. A CustomResourceDefinition
//! is stored at `apiextensions.k8s.io/v1beta1` whatever version its writer used: it holds the
//! definition's `v1` form ([`crate::crd::v1beta1`]), the version types are registered from.

use fieldstore_codec::k8s_protobuf;
use serde_json::Value;

/// What kube-apiserver writes before a value encrypted at rest (`k8s:enc:aescbc:v1:key1:…`).
const ENCRYPTED_PREFIX: &[u8] = b"k8s:enc:";
/// kube-apiserver's `k8s\x00` protobuf envelope.
const ENVELOPE_PREFIX: &[u8] = b"k8s\x00";

/// Why a value holds no object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Undecoded {
    /// Neither an envelope nor a JSON object with apiVersion and kind (an allocator's bitmap).
    NotAnObject,
    /// Encrypted at rest by kube-apiserver: only its key could read it.
    Encrypted,
    /// An envelope or object that does not decode (why).
    Undecodable(String),
    /// An object without `metadata.name` (`apiVersion Kind`): kube-apiserver's own record.
    Unnamed(String),
    /// A built-in kind (`apiVersion Kind`) this build has no protobuf schema for.
    NoProtobuf(String),
}

/// `apiVersion Kind`, as kinds are named in messages.
#[must_use]
pub fn kind_name(api_version: &str, kind: &str) -> String {
    format!("{api_version} {kind}")
}

/// The object a value holds: a built-in kind's `k8s\x00` envelope or JSON, with apiVersion,
/// kind and `metadata.name` (a v1beta1 CustomResourceDefinition in its v1 form).
///
/// # Errors
/// [`Undecoded`]: why the value holds no object.
pub fn object_of_value(value: &[u8]) -> std::result::Result<Value, Undecoded> {
    let object = if value.starts_with(ENVELOPE_PREFIX) {
        match k8s_protobuf::object_of_envelope(value) {
            Ok(object) => object,
            Err(fieldstore_codec::Error::NotBuiltIn { api_version, kind }) => {
                return Err(Undecoded::NoProtobuf(kind_name(&api_version, &kind)))
            }
            Err(e) => return Err(Undecoded::Undecodable(e.to_string())),
        }
    } else if value.starts_with(ENCRYPTED_PREFIX) {
        return Err(Undecoded::Encrypted);
    } else {
        match serde_json::from_slice::<Value>(value) {
            Ok(object @ Value::Object(_)) => object,
            _ => return Err(Undecoded::NotAnObject),
        }
    };
    let s = |k: &str| object.get(k).and_then(Value::as_str).unwrap_or("");
    if s("apiVersion").is_empty() || s("kind").is_empty() {
        return Err(Undecoded::NotAnObject);
    }
    if object.pointer("/metadata/name").and_then(Value::as_str).is_none_or(str::is_empty) {
        return Err(Undecoded::Unnamed(kind_name(s("apiVersion"), s("kind"))));
    }
    Ok(crate::crd::v1beta1::to_v1(object))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_that_are_no_objects_say_why() {
        assert_eq!(object_of_value(b"\x01\x02\xff"), Err(Undecoded::NotAnObject));
        assert_eq!(object_of_value(b"[1,2]"), Err(Undecoded::NotAnObject));
        assert_eq!(object_of_value(br#"{"kind":"ConfigMap"}"#), Err(Undecoded::NotAnObject));
        assert_eq!(object_of_value(b"k8s:enc:aescbc:v1:key1:\x00\x01"), Err(Undecoded::Encrypted));
        assert!(matches!(object_of_value(b"k8s\x00\x0a"), Err(Undecoded::Undecodable(_))));
        assert_eq!(
            object_of_value(br#"{"apiVersion":"v1","kind":"Endpoints","metadata":{}}"#),
            Err(Undecoded::Unnamed("v1 Endpoints".into()))
        );
        let object = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
        assert_eq!(object_of_value(object.to_string().as_bytes()).ok(), Some(object));
    }
}
