//! Kubernetes protobuf ⇄ JSON transcoding (`fieldstore_codec::k8s_protobuf`). The first byte picks
//! a built-in kind and a direction; the rest is the input.
//!
//! - protobuf (even first byte): arbitrary bytes as the kind's message must decode to JSON or give
//!   an error, never panic. Decoded JSON must encode; after that one round, decode → encode is a
//!   fixed point (bytes and text), and the JSON is the first decoding with nil pointers dropped
//!   (Go writes a set-but-zero `*metav1.Time` as `null`, which then reads back as nil).
//! - JSON (odd first byte): arbitrary bytes as the kind's JSON must encode or give an error; what
//!   encodes must decode, and from there the same checks apply.
#![no_main]

use std::sync::OnceLock;

use fieldstore_codec::k8s_protobuf::{self, JsonStyle, MessageType};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// The built-in kinds in a fixed order, so that a corpus entry always means the same kind.
fn kinds() -> &'static [MessageType] {
    static KINDS: OnceLock<Vec<MessageType>> = OnceLock::new();
    KINDS.get_or_init(|| {
        let mut kinds: Vec<MessageType> = k8s_protobuf::built_in_kinds().map(|(_, _, message)| message).collect();
        kinds.sort_by_key(|m| m.full_name());
        kinds.dedup();
        kinds
    })
}

/// `value` with every object member whose value is `null` removed, recursively.
fn without_nulls(value: Value) -> Value {
    match value {
        Value::Object(members) => {
            Value::Object(members.into_iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k, without_nulls(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(without_nulls).collect()),
        other => other,
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, input)) = data.split_first() else {
        return;
    };
    let kinds = kinds();
    let message = kinds[usize::from(selector >> 1) % kinds.len()];
    let name = message.full_name();
    let json1 = if selector & 1 == 0 {
        let Ok(json) = message.to_json(input, JsonStyle::Compact) else {
            return;
        };
        json
    } else {
        let Ok(pb) = message.from_json(input) else {
            return;
        };
        message.to_json(&pb, JsonStyle::Compact).unwrap_or_else(|e| panic!("{name}: encoded JSON does not decode: {e}"))
    };
    let pb2 = message
        .from_json(&json1)
        .unwrap_or_else(|e| panic!("{name}: decoded JSON does not encode: {e}\n{}", String::from_utf8_lossy(&json1)));
    let json2 = message.to_json(&pb2, JsonStyle::Compact).unwrap_or_else(|e| panic!("{name}: re-encoded protobuf does not decode: {e}"));
    let pb3 = message.from_json(&json2).unwrap_or_else(|e| panic!("{name}: second JSON does not encode: {e}"));
    assert_eq!(pb3, pb2, "{name}: encode is not a fixed point after one round");
    let json3 = message.to_json(&pb3, JsonStyle::Compact).expect("decodes");
    assert_eq!(json3, json2, "{name}: decode is not a fixed point after one round");
    // serde_json stops at 128 levels; deeper documents are compared by the fixed points only.
    if let (Ok(first), Ok(second)) = (serde_json::from_slice::<Value>(&json1), serde_json::from_slice::<Value>(&json2)) {
        assert_eq!(without_nulls(second), without_nulls(first), "{name}: decode -> encode -> decode changed the object");
    }
    let indented = message.to_json(&pb2, JsonStyle::Indented).expect("decodes");
    assert_eq!(message.from_json(&indented).expect("indented JSON encodes"), pb2, "{name}: indented JSON encodes differently");
});
