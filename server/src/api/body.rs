//! Objects on the wire: request bodies in JSON, YAML or the Kubernetes protobuf envelope, and
//! response bodies in the media type the client accepts.

use fieldstore_codec::document::{self, Document, Syntax};
use fieldstore_codec::k8s_protobuf;
use fieldstore_engine::{Error, Result};
use serde_json::Value;

/// A body on the wire: its media type and bytes (a gRPC `Body`, an HTTP request's).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Body {
    /// The media type (`application/json` when empty).
    pub content_type: String,
    /// The bytes.
    pub data: bytes::Bytes,
}

impl Body {
    /// A body of `data` in `content_type`.
    pub fn new(content_type: impl Into<String>, data: impl Into<bytes::Bytes>) -> Self {
        Body { content_type: content_type.into(), data: data.into() }
    }
}

/// JSON, the default.
pub const JSON: &str = "application/json";
/// YAML.
pub const YAML: &str = "application/yaml";
/// The `k8s\x00` envelope around a runtime.Unknown: the object's Kubernetes protobuf encoding for
/// built-in kinds (as kube-apiserver writes it), JSON for custom resources.
pub const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// Parses a request body, nested at most `max_depth` levels (checked while it is read), with the
/// fields that appeared twice (for `fieldValidation`).
///
/// # Errors
/// [`Error::BadRequest`] naming `what` when the body is missing, malformed or too deep, or of an
/// unsupported content type.
pub fn decode(body: Option<&Body>, what: &str, max_depth: usize) -> Result<Document> {
    let body = body.ok_or_else(|| Error::BadRequest(format!("{what} is required")))?;
    let syntax = match media_type(&body.content_type) {
        "" | JSON => Syntax::Json,
        YAML | "application/x-yaml" | "text/yaml" => Syntax::Yaml,
        // Built-in kinds in their Kubernetes protobuf encoding, custom resources as JSON in `raw`;
        // a bad body is a 400 naming the field path.
        PROTOBUF => {
            let value = match k8s_protobuf::object_of_envelope(&body.data) {
                Err(fieldstore_codec::Error::NotBuiltIn { kind, .. }) if kind.ends_with("Options") => meta_options(&body.data, &kind),
                decoded => decoded,
            }
            .map_err(|e| Error::BadRequest(format!("{what}: {e}")))?;
            return Ok(Document { value, duplicates: Vec::new() });
        }
        other => return Err(Error::BadRequest(format!("unsupported content type {other:?} for {what}: use {JSON}, {YAML} or {PROTOBUF}"))),
    };
    document::parse(&body.data, syntax, max_depth).map_err(|e| Error::BadRequest(format!("{what}: {e}")))
}

/// An options kind of meta/v1 (`DeleteOptions`, …) in an envelope whose typeMeta names a group
/// version without protos here: a custom resource's, where client-go encodes the DeleteOptions of
/// a delete. kube-apiserver registers the options in every group version
/// (`metav1.AddToGroupVersion`), custom resources' included, and decodes them alike.
fn meta_options(data: &[u8], kind: &str) -> fieldstore_codec::Result<Value> {
    let message = k8s_protobuf::MessageType::for_kind("meta.k8s.io/v1", kind)?;
    let json = k8s_protobuf::decode_envelope_as(message, data, k8s_protobuf::JsonStyle::Compact)?;
    Ok(serde_json::from_slice(&json)?)
}

/// Encodes a response object as `accept` asks (JSON when empty).
pub fn encode(v: &Value, accept: &str) -> Result<Body> {
    let json = fieldstore_codec::json_text::to_vec(v);
    let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("");
    encode_json(json, s("apiVersion"), s("kind"), accept)
}

/// Encodes a response object already serialised as JSON text (of the given apiVersion and kind)
/// as `accept` asks.
pub fn encode_json(json: Vec<u8>, api_version: &str, kind: &str, accept: &str) -> Result<Body> {
    match media_type(accept) {
        "" | JSON | "*/*" => Ok(Body { content_type: JSON.into(), data: json.into() }),
        YAML => {
            let v: Value = serde_json::from_slice(&json).map_err(|e| Error::BadRequest(e.to_string()))?;
            Ok(Body { content_type: YAML.into(), data: super::yaml::to_yaml(&v).into_bytes().into() })
        }
        // Built-in kinds in their Kubernetes protobuf encoding; custom resources keep JSON in
        // `raw`, as Kubernetes does.
        PROTOBUF => {
            let data = k8s_protobuf::envelope_of_object(&json, api_version, kind)
                .map_err(|e| Error::BadRequest(format!("cannot encode as protobuf: {e}")))?;
            Ok(Body { content_type: PROTOBUF.into(), data: data.into() })
        }
        other => Err(Error::BadRequest(format!("cannot respond in {other:?}: accept {JSON} or {PROTOBUF}"))),
    }
}

/// The media type without parameters (`application/json; charset=utf-8` → `application/json`).
fn media_type(ct: &str) -> &str {
    ct.split(';').next().unwrap_or("").trim()
}

#[cfg(test)]
mod tests {
    use super::*;
    use fieldstore_codec::Envelope;
    use serde_json::json;

    #[test]
    fn json_yaml_and_envelopes_decode_to_the_same_object() {
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
        let j = Body { content_type: JSON.into(), data: serde_json::to_vec(&obj).unwrap().into() };
        let y = Body {
            content_type: "application/yaml; charset=utf-8".into(),
            data: b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n".to_vec().into(),
        };
        let p = encode(&obj, PROTOBUF).unwrap();
        assert!(p.data.starts_with(b"k8s\0"));
        for b in [j, y, p] {
            assert_eq!(decode(Some(&b), "body", 100).map(|d| d.value).unwrap(), obj);
        }
        assert!(matches!(
            decode(Some(&Body { content_type: "text/plain".into(), data: Default::default() }), "body", 100).map(|d| d.value),
            Err(Error::BadRequest(_))
        ));
        assert!(matches!(decode(None, "body", 100).map(|d| d.value), Err(Error::BadRequest(_))));
    }

    /// The upstream ConfigMap fixture (k8s.io/api testdata, Apache-2.0; copied in codec's tests).
    fn fixture(ext: &str) -> Vec<u8> {
        std::fs::read(format!("{}/../codec/tests/fixtures/k8s-api/core.v1.ConfigMap.{ext}", env!("CARGO_MANIFEST_DIR"))).unwrap()
    }

    #[test]
    fn protobuf_bodies_of_builtin_kinds_are_the_real_encoding_both_ways() {
        let pb = fixture("pb");
        let want: Value = serde_json::from_slice(&fixture("json")).unwrap();
        let got = decode(Some(&Body { content_type: PROTOBUF.into(), data: pb.clone().into() }), "body", 100).map(|d| d.value).unwrap();
        assert_eq!(got, want);
        // And out again: the bytes kube-apiserver writes.
        let out = encode(&want, PROTOBUF).unwrap();
        assert_eq!(out.content_type, PROTOBUF);
        assert_eq!(out.data, pb);
    }

    #[test]
    fn custom_resources_keep_json_in_the_envelope_and_bad_protobuf_is_a_400() {
        let cr = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
        let out = encode(&cr, PROTOBUF).unwrap();
        let env = Envelope::decode(&out.data).unwrap();
        assert_eq!(env.content_type, JSON);
        assert_eq!(decode(Some(&out), "body", 100).map(|d| d.value).unwrap(), cr);
        let mut pb = fixture("pb");
        pb.truncate(pb.len() - 30);
        let err = decode(Some(&Body { content_type: PROTOBUF.into(), data: pb.into() }), "body", 100).map(|d| d.value).unwrap_err();
        assert!(matches!(err, Error::BadRequest(_) | Error::Codec(_)), "{err:?}");
    }
}
