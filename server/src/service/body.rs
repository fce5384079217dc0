//! Objects on the wire: request bodies in JSON, YAML or the Kubernetes protobuf envelope, and
//! response bodies in the media type the client accepts.

use crate::api::pb::Body;
use fieldstore_codec::Envelope;
use fieldstore_engine::{Error, Result};
use serde_json::Value;

/// JSON, the default.
pub const JSON: &str = "application/json";
/// YAML (requests only).
pub const YAML: &str = "application/yaml";
/// The `k8s\x00` envelope around a runtime.Unknown carrying JSON.
pub const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// Parses a request body, with the store's nesting limit applied by the caller.
pub fn decode(body: Option<&Body>, what: &str) -> Result<Value> {
    let body = body.ok_or_else(|| Error::BadRequest(format!("{what} is required")))?;
    let ct = media_type(&body.content_type);
    match ct {
        "" | JSON => serde_json::from_slice(&body.data).map_err(|e| Error::BadRequest(format!("{what}: invalid JSON: {e}"))),
        YAML | "application/x-yaml" | "text/yaml" => {
            serde_yaml::from_slice(&body.data).map_err(|e| Error::BadRequest(format!("{what}: invalid YAML: {e}")))
        }
        PROTOBUF => {
            let env = Envelope::decode(&body.data)?;
            let raw_type = media_type(&env.content_type);
            if raw_type != JSON {
                // An empty content type means a Kubernetes-protobuf-encoded object, which needs
                // the Go types' schemas: only JSON payloads are accepted.
                return Err(Error::BadRequest(format!(
                    "{what}: the envelope's raw bytes must be {JSON} (contentType {:?})",
                    env.content_type
                )));
            }
            let mut v: Value =
                serde_json::from_slice(&env.raw).map_err(|e| Error::BadRequest(format!("{what}: invalid JSON in the envelope: {e}")))?;
            if let Value::Object(m) = &mut v {
                if !env.api_version.is_empty() {
                    m.entry("apiVersion").or_insert_with(|| Value::String(env.api_version.clone()));
                }
                if !env.kind.is_empty() {
                    m.entry("kind").or_insert_with(|| Value::String(env.kind.clone()));
                }
            }
            Ok(v)
        }
        other => Err(Error::BadRequest(format!("unsupported content type {other:?} for {what}: use {JSON}, {YAML} or {PROTOBUF}"))),
    }
}

/// Encodes a response object as `accept` asks (JSON when empty).
pub fn encode(v: &Value, accept: &str) -> Result<Body> {
    let json = serde_json::to_vec(v).map_err(|e| Error::BadRequest(e.to_string()))?;
    let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("");
    encode_json(json, s("apiVersion"), s("kind"), accept)
}

/// Encodes a response object already serialised as JSON text (of the given apiVersion and kind)
/// as `accept` asks.
pub fn encode_json(json: Vec<u8>, api_version: &str, kind: &str, accept: &str) -> Result<Body> {
    match media_type(accept) {
        "" | JSON | "*/*" => Ok(Body { content_type: JSON.into(), data: json }),
        PROTOBUF => {
            let env = Envelope {
                api_version: api_version.into(),
                kind: kind.into(),
                raw: json,
                content_encoding: String::new(),
                content_type: JSON.into(),
            };
            Ok(Body { content_type: PROTOBUF.into(), data: env.encode() })
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
    use serde_json::json;

    #[test]
    fn json_yaml_and_envelopes_decode_to_the_same_object() {
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
        let j = Body { content_type: JSON.into(), data: serde_json::to_vec(&obj).unwrap() };
        let y = Body {
            content_type: "application/yaml; charset=utf-8".into(),
            data: b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n".to_vec(),
        };
        let p = encode(&obj, PROTOBUF).unwrap();
        assert!(p.data.starts_with(b"k8s\0"));
        for b in [j, y, p] {
            assert_eq!(decode(Some(&b), "body").unwrap(), obj);
        }
        assert!(matches!(decode(Some(&Body { content_type: "text/plain".into(), data: vec![] }), "body"), Err(Error::BadRequest(_))));
        assert!(matches!(decode(None, "body"), Err(Error::BadRequest(_))));
    }
}
