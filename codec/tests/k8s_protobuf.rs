//! Kubernetes protobuf ⇄ JSON transcoding against upstream's 86 round-trip fixture pairs
//! (`tests/fixtures/k8s-api/`, see its README), byte for byte in both directions, plus bad input
//! (truncated or wrong-typed protobuf, wrong-typed JSON: typed errors naming the field path, never a
//! panic) and Go's rules where the fixtures are silent.
#![allow(clippy::unwrap_used, reason = "test helpers too: a failed unwrap is a failed test, with its message")]

use std::fmt;
use std::path::{Path, PathBuf};

use fieldstore_codec::k8s_protobuf::{self, JsonStyle, MessageType};
use fieldstore_codec::{Envelope, Error};
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{json, Value};

/// One fixture pair: `<group>.<version>.<Kind>`.
struct Fixture {
    stem: String,
    api_version: String,
    kind: String,
    json: Vec<u8>,
    pb: Vec<u8>,
}

impl Fixture {
    fn message(&self) -> MessageType {
        MessageType::for_kind(&self.api_version, &self.kind).unwrap_or_else(|e| panic!("{}: {e}", self.stem))
    }
}

fn fixtures() -> Vec<Fixture> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/k8s-api");
    let mut stems: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().into_string().ok())
        .filter_map(|name| name.strip_suffix(".pb").map(str::to_owned))
        .collect();
    stems.sort();
    let read = |path: &Path| std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    stems
        .into_iter()
        .map(|stem| {
            let (group_version, kind) = stem.rsplit_once('.').unwrap();
            let (group, version) = group_version.rsplit_once('.').unwrap();
            let api_version = if group == "core" { version.to_owned() } else { format!("{group}/{version}") };
            Fixture {
                json: read(&dir.join(format!("{stem}.json"))),
                pb: read(&dir.join(format!("{stem}.pb"))),
                kind: kind.to_owned(),
                api_version,
                stem,
            }
        })
        .collect()
}

/// Runs `check` on every fixture and fails with the list of those that fail.
fn for_every_fixture(direction: &str, check: impl Fn(&Fixture) -> Result<(), String>) {
    let fixtures = fixtures();
    assert_eq!(fixtures.len(), 86, "fixture pairs");
    let failures: Vec<String> = fixtures.iter().filter_map(|f| check(f).err().map(|e| format!("{}: {e}", f.stem))).collect();
    println!("{direction}: {} of {} fixture pairs byte-exact", fixtures.len() - failures.len(), fixtures.len());
    assert!(failures.is_empty(), "{direction}: {} failures:\n{}", failures.len(), failures.join("\n"));
}

fn first_difference(a: &[u8], b: &[u8]) -> String {
    let at = a.iter().zip(b).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()));
    format!("first difference at byte {at} (lengths {} vs {}): got {:?}… want {:?}…", a.len(), b.len(), ascii(&a[at..]), ascii(&b[at..]))
}

fn ascii(bytes: &[u8]) -> String {
    bytes.iter().take(40).flat_map(|b| std::ascii::escape_default(*b)).map(char::from).collect()
}

#[test]
fn every_fixture_json_encodes_to_its_pb_envelope_byte_for_byte() {
    for_every_fixture("json -> pb", |f| {
        let got = k8s_protobuf::encode_envelope_as(f.message(), &f.json).map_err(|e| e.to_string())?;
        if got == f.pb {
            Ok(())
        } else {
            Err(first_difference(&got, &f.pb))
        }
    });
}

#[test]
fn every_fixture_pb_decodes_to_its_json_byte_for_byte_as_marshal_indent() {
    for_every_fixture("pb -> json (indented)", |f| {
        let got = k8s_protobuf::decode_envelope_as(f.message(), &f.pb, JsonStyle::Indented).map_err(|e| e.to_string())?;
        if got == f.json {
            Ok(())
        } else {
            Err(first_difference(&got, &f.json))
        }
    });
}

#[test]
fn every_fixture_pb_decodes_to_compact_json_with_upstream_value_and_key_order() {
    for_every_fixture("pb -> json (compact)", |f| {
        let got = k8s_protobuf::decode_envelope_as(f.message(), &f.pb, JsonStyle::Compact).map_err(|e| e.to_string())?;
        let (got_value, want_value): (Value, Value) = (serde_json::from_slice(&got).unwrap(), serde_json::from_slice(&f.json).unwrap());
        if got_value != want_value {
            return Err(format!("value differs: {got_value} vs {want_value}"));
        }
        let (got_ordered, want_ordered): (Ordered, Ordered) =
            (serde_json::from_slice(&got).unwrap(), serde_json::from_slice(&f.json).unwrap());
        if got_ordered != want_ordered {
            return Err("key order differs".into());
        }
        // Compact is the indented text without its layout.
        let mut compacted = Vec::new();
        let mut in_string = false;
        let mut escaped = false;
        for &b in &f.json {
            if in_string {
                escaped = !escaped && b == b'\\';
                in_string = escaped || b != b'"';
            } else if b == b'"' {
                in_string = true;
            } else if b.is_ascii_whitespace() {
                continue;
            }
            compacted.push(b);
        }
        if got != compacted {
            return Err(first_difference(&got, &compacted));
        }
        Ok(())
    });
}

#[test]
fn fixtures_resolve_their_message_from_the_json_kind_and_the_envelope_type_meta() {
    for_every_fixture("kind resolution", |f| {
        if f.kind == "WatchEvent" {
            // No TypeMeta: its JSON has no kind and its envelope an empty typeMeta.
            assert!(!f.message().has_type_meta());
            return match k8s_protobuf::encode_envelope(&f.json) {
                Err(Error::NotBuiltIn { .. }) => Ok(()),
                other => Err(format!("WatchEvent without kind should not resolve: {other:?}")),
            };
        }
        let got = k8s_protobuf::encode_envelope(&f.json).map_err(|e| e.to_string())?;
        if got != f.pb {
            return Err(format!("encode_envelope: {}", first_difference(&got, &f.pb)));
        }
        let back = k8s_protobuf::decode_envelope(&f.pb, JsonStyle::Indented).map_err(|e| e.to_string())?;
        if back != f.json {
            return Err(format!("decode_envelope: {}", first_difference(&back, &f.json)));
        }
        Ok(())
    });
}

#[test]
fn every_fixture_encodes_from_a_serde_json_value_too() {
    for_every_fixture("serde_json::Value -> pb", |f| {
        let value: Value = serde_json::from_slice(&f.json).unwrap();
        let raw = f.message().from_value(&value).map_err(|e| e.to_string())?;
        let envelope = Envelope::decode(&f.pb).unwrap();
        if raw == envelope.raw {
            Ok(())
        } else {
            Err(first_difference(&raw, &envelope.raw))
        }
    });
}

#[test]
fn decode_encode_decode_is_stable_on_every_fixture() {
    for_every_fixture("pb -> json -> pb -> json", |f| {
        let message = f.message();
        let json = k8s_protobuf::decode_envelope_as(message, &f.pb, JsonStyle::Compact).map_err(|e| e.to_string())?;
        let pb = k8s_protobuf::encode_envelope_as(message, &json).map_err(|e| e.to_string())?;
        if pb != f.pb {
            return Err(format!("re-encoded: {}", first_difference(&pb, &f.pb)));
        }
        let again = k8s_protobuf::decode_envelope_as(message, &pb, JsonStyle::Compact).map_err(|e| e.to_string())?;
        if again != json {
            return Err(format!("re-decoded: {}", first_difference(&again, &json)));
        }
        Ok(())
    });
}

#[test]
fn every_truncation_of_every_fixture_envelope_is_an_error_or_a_value_never_a_panic() {
    let mut errors = 0;
    for f in fixtures() {
        let message = f.message();
        let raw = Envelope::decode(&f.pb).unwrap().raw;
        for cut in 0..raw.len() {
            match message.to_json(&raw[..cut], JsonStyle::Compact) {
                Err(Error::K8sProtobuf { path, .. }) => {
                    assert!(path.starts_with('.'), "{}: path {path:?}", f.stem);
                    errors += 1;
                }
                Err(other) => panic!("{}: cut at {cut}: untyped error {other}", f.stem),
                // A cut between two fields is a valid, shorter message.
                Ok(json) => {
                    serde_json::from_slice::<Value>(&json).unwrap();
                }
            }
        }
    }
    assert!(errors > 10_000, "most truncations are errors ({errors})");
}

#[test]
fn mutated_fixture_bytes_decode_to_an_error_or_json_that_encodes_again() {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for f in fixtures() {
        let message = f.message();
        let raw = Envelope::decode(&f.pb).unwrap().raw;
        for _ in 0..200 {
            let mut bytes = raw.clone();
            for _ in 0..1 + next() % 3 {
                let at = (next() % bytes.len() as u64) as usize;
                bytes[at] = next() as u8;
            }
            if let Ok(json) = message.to_json(&bytes, JsonStyle::Compact) {
                let pb = message
                    .from_json(&json)
                    .unwrap_or_else(|e| panic!("{}: decoded JSON does not encode: {e}\n{}", f.stem, String::from_utf8_lossy(&json)));
                let json2 = message.to_json(&pb, JsonStyle::Compact).unwrap();
                let pb2 = message.from_json(&json2).unwrap();
                assert_eq!(pb2, pb, "{}: not a fixed point after one round", f.stem);
            }
        }
    }
}

// ---------------------------------------------------------------- bad input names the field path

fn pod() -> MessageType {
    MessageType::for_kind("v1", "Pod").unwrap()
}

/// A Pod whose second port of the first container is 81, named `ab`.
fn pod_with_ports() -> Vec<u8> {
    let json = br#"{"spec":{"containers":[{"name":"c","ports":[{"containerPort":80},{"name":"ab","containerPort":81}]}]}}"#;
    pod().from_json(json).unwrap()
}

fn protobuf_error(result: fieldstore_codec::Result<Vec<u8>>) -> (String, String) {
    match result {
        Err(Error::K8sProtobuf { message, path, reason }) => {
            assert_eq!(message, "k8s.io.api.core.v1.Pod");
            (path, reason)
        }
        other => panic!("expected a K8sProtobuf error, got {other:?}"),
    }
}

fn json_error(result: fieldstore_codec::Result<Vec<u8>>) -> (String, String) {
    match result {
        Err(Error::K8sJson { path, reason, .. }) => (path, reason),
        other => panic!("expected a K8sJson error, got {other:?}"),
    }
}

fn replace(bytes: &mut [u8], from: &[u8], to: &[u8]) {
    assert_eq!(from.len(), to.len());
    let at = bytes.windows(from.len()).position(|w| w == from).expect("pattern present");
    bytes[at..at + from.len()].copy_from_slice(to);
}

#[test]
fn a_wrong_wire_type_deep_in_a_pod_names_the_field_path() {
    let mut bytes = pod_with_ports();
    // containerPort (field 3) = 81 as a varint → a zero-length length-delimited field.
    replace(&mut bytes, &[0x18, 81], &[0x1a, 0x00]);
    let (path, reason) = protobuf_error(pod().to_json(&bytes, JsonStyle::Compact));
    assert_eq!(path, ".spec.containers[0].ports[1].containerPort");
    assert!(reason.contains("wrong wire type 2"), "{reason}");
}

#[test]
fn a_length_past_the_end_of_its_message_names_the_field_path() {
    let mut bytes = pod_with_ports();
    // name (field 1) "ab" claims 127 bytes inside a ContainerPort message that has fewer left.
    replace(&mut bytes, &[0x0a, 0x02, b'a', b'b'], &[0x0a, 0x7f, b'a', b'b']);
    let (path, reason) = protobuf_error(pod().to_json(&bytes, JsonStyle::Compact));
    assert_eq!(path, ".spec.containers[0].ports[1].name");
    assert!(reason.contains("truncated"), "{reason}");
}

#[test]
fn a_truncated_body_names_the_field_being_read() {
    let bytes = pod_with_ports();
    // Cut in the middle of spec (field 2, after the empty metadata).
    let (path, reason) = protobuf_error(pod().to_json(&bytes[..bytes.len() / 2], JsonStyle::Compact));
    assert_eq!(path, ".spec");
    assert!(reason.contains("truncated"), "{reason}");
    let (path, _) = protobuf_error(pod().to_json(&[0x12, 0x05, 0x0a], JsonStyle::Compact));
    assert_eq!(path, ".spec");
    let (path, reason) = protobuf_error(pod().to_json(&[0x12], JsonStyle::Compact));
    assert_eq!(path, ".spec");
    assert!(reason.contains("truncated varint"), "{reason}");
    let (path, reason) = protobuf_error(pod().to_json(&[0x00], JsonStyle::Compact));
    assert_eq!(path, ".");
    assert!(reason.contains("illegal field number 0"), "{reason}");
}

#[test]
fn a_wrong_json_type_deep_in_a_pod_names_the_field_path() {
    let json = br#"{"spec":{"containers":[{"name":"c","ports":[{"containerPort":80},{"containerPort":"81"}]}]}}"#;
    let (path, reason) = json_error(pod().from_json(json));
    assert_eq!(path, ".spec.containers[0].ports[1].containerPort");
    assert_eq!(reason, "cannot unmarshal string into a field of type integer");
}

#[test]
fn json_of_the_wrong_shape_is_a_typed_error_with_its_path() {
    let cases: [(&[u8], &str, &str); 10] = [
        (br#"[]"#, ".", "cannot unmarshal array"),
        (br#"{"spec":"x"}"#, ".spec", "cannot unmarshal string into a field of type v1.PodSpec"),
        (br#"{"spec":{"containers":{}}}"#, ".spec.containers", "cannot unmarshal object into a field of type array"),
        (
            br#"{"spec":{"containers":[{"ports":[{"containerPort":2147483648}]}]}}"#,
            ".spec.containers[0].ports[0].containerPort",
            "overflows int32",
        ),
        (br#"{"spec":{"containers":[{"ports":[{"containerPort":1.5}]}]}}"#, ".spec.containers[0].ports[0].containerPort", "not an integer"),
        (br#"{"metadata":{"creationTimestamp":"yesterday"}}"#, ".metadata.creationTimestamp", "RFC 3339"),
        (br#"{"metadata":{"labels":{"a":1}}}"#, r#".metadata.labels["a"]"#, "cannot unmarshal number into a field of type string"),
        (
            br#"{"spec":{"containers":[{"resources":{"limits":{"cpu":"lots"}}}]}}"#,
            r#".spec.containers[0].resources.limits["cpu"]"#,
            "quantity \"lots\"",
        ),
        (
            br#"{"spec":{"containers":[{"livenessProbe":{"httpGet":{"port":true}}}]}}"#,
            ".spec.containers[0].livenessProbe.httpGet.port",
            "IntOrString",
        ),
        (br#"{"spec": {"#, ".", "unexpected end of JSON input"),
    ];
    for (json, want_path, want_reason) in cases {
        let (path, reason) = json_error(pod().from_json(json));
        assert_eq!(path, want_path, "{}", String::from_utf8_lossy(json));
        assert!(reason.contains(want_reason), "{}: {reason}", String::from_utf8_lossy(json));
    }
}

#[test]
fn custom_kinds_are_reported_as_not_built_in() {
    let json = br#"{"apiVersion":"example.com/v1","kind":"Widget","spec":{}}"#;
    match k8s_protobuf::encode_envelope(json) {
        Err(Error::NotBuiltIn { api_version, kind }) => assert_eq!((api_version.as_str(), kind.as_str()), ("example.com/v1", "Widget")),
        other => panic!("{other:?}"),
    }
    assert!(!k8s_protobuf::is_built_in("example.com/v1", "Widget"));
    assert!(k8s_protobuf::is_built_in("apps/v1", "Deployment"));
    assert!(k8s_protobuf::is_built_in("batch/v1", "DeleteOptions"));
    let envelope = Envelope { api_version: "example.com/v1".into(), kind: "Widget".into(), raw: json.to_vec(), ..Envelope::default() };
    assert!(matches!(k8s_protobuf::decode_envelope(&envelope.encode(), JsonStyle::Compact), Err(Error::NotBuiltIn { .. })));
    let json_raw = Envelope { content_type: "application/json".into(), ..envelope };
    assert!(matches!(k8s_protobuf::decode_envelope(&json_raw.encode(), JsonStyle::Compact), Err(Error::Envelope { .. })));
    assert!(k8s_protobuf::built_in_kinds().count() > 100);
}

// ---------------------------------------------------------------- Go's rules beyond the fixtures

fn pod_json(json: Value) -> Value {
    let pb = pod().from_value(&json).unwrap();
    pod().to_value(&pb).unwrap()
}

fn pod_text(json: &[u8]) -> String {
    let pb = pod().from_json(json).unwrap();
    String::from_utf8(pod().to_json(&pb, JsonStyle::Compact).unwrap()).unwrap()
}

#[test]
fn quantities_are_canonicalised_as_apimachinery_does() {
    let out = pod_json(
        json!({"spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "0.5", "memory": "1.5Gi", "x": 2, "y": " 100m "}}}]}}),
    );
    assert_eq!(out["spec"]["containers"][0]["resources"]["limits"], json!({"cpu": "500m", "memory": "1536Mi", "x": "2", "y": "100m"}));
}

#[test]
fn nil_and_empty_follow_encoding_json() {
    // containers has no omitempty: nil → null; an empty list in JSON is nil after protobuf.
    assert_eq!(pod_text(br#"{"spec":{"containers":[]}}"#), r#"{"metadata":{},"spec":{"containers":null},"status":{}}"#);
    // A pointer set to its zero value is kept; a value scalar at zero is omitted (omitempty).
    let text = pod_text(br#"{"spec":{"containers":null,"activeDeadlineSeconds":0,"hostNetwork":false}}"#);
    assert_eq!(text, r#"{"metadata":{},"spec":{"containers":null,"activeDeadlineSeconds":0},"status":{}}"#);
}

#[test]
fn negative_int32_is_a_ten_byte_varint_and_maps_are_sorted_on_the_wire() {
    let pb = pod().from_json(br#"{"metadata":{"labels":{"b":"2","a":"1"}},"spec":{"priority":-1}}"#).unwrap();
    // metadata (1) { labels (11): entries in key order }
    assert!(pb.windows(10).any(|w| w == [0x5a, 0x06, 0x0a, 0x01, b'a', 0x12, 0x01, b'1', 0x5a, 0x06]));
    // priority (25): key 0xc8 0x01, then -1 as ten bytes.
    assert!(pb.windows(12).any(|w| w == [0xc8, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]));
}

#[test]
fn raw_extensions_keep_their_key_order_and_tokens_compacted() {
    let event = MessageType::for_kind("v1", "WatchEvent").unwrap();
    let pb = event.from_json(br#"{"type":"ADDED","object":{ "z" : 1.50, "a" : "\u00e9<" }}"#).unwrap();
    let raw = br#"{"z":1.50,"a":"\u00e9<"}"#;
    assert!(pb.windows(raw.len()).any(|w| w == raw), "{}", String::from_utf8_lossy(&pb));
    // On the way out Go's encoder HTML-escapes the raw JSON's strings.
    let back = event.to_json(&pb, JsonStyle::Compact).unwrap();
    assert_eq!(back, br#"{"type":"ADDED","object":{"z":1.50,"a":"\u00e9\u003c"}}"#);
}

#[test]
fn bytes_are_base64_and_a_nil_map_value_has_no_entry_value() {
    let secret = MessageType::for_kind("v1", "Secret").unwrap();
    let pb = secret.from_json(br#"{"data":{"k":"Ag==","nil":null}}"#).unwrap();
    assert!(pb.windows(7).any(|w| w == [0x12, 0x05, 0x0a, 0x03, b'n', b'i', b'l']), "nil value: key only: {pb:02x?}");
    assert_eq!(secret.to_json(&pb, JsonStyle::Compact).unwrap(), br#"{"metadata":{},"data":{"k":"Ag==","nil":""}}"#);
    assert!(matches!(secret.from_json(br#"{"data":{"k":"Ag="}}"#), Err(Error::K8sJson { .. })));
}

#[test]
fn times_normalise_to_utc_seconds_and_micro_times_keep_microseconds() {
    let text = pod_text(br#"{"metadata":{"creationTimestamp":"2024-01-02T05:34:05.9+02:30","deletionTimestamp":null}}"#);
    assert_eq!(text, r#"{"metadata":{"creationTimestamp":"2024-01-02T03:04:05Z"},"spec":{"containers":null},"status":{}}"#);
    let lease = MessageType::for_kind("coordination.k8s.io/v1", "Lease").unwrap();
    let pb = lease.from_json(br#"{"spec":{"renewTime":"2024-01-02T03:04:05.123456Z"}}"#).unwrap();
    let back = lease.to_value(&pb).unwrap();
    assert_eq!(back["spec"]["renewTime"], json!("2024-01-02T03:04:05.123456Z"));
    assert!(matches!(lease.from_json(br#"{"spec":{"renewTime":"2024-01-02T03:04:05Z"}}"#), Err(Error::K8sJson { .. })));
}

#[test]
fn strings_are_escaped_as_go_escapes_them() {
    let text = pod_text("{\"metadata\":{\"name\":\"<a&b>\\u2028é\"}}".as_bytes());
    assert!(text.contains(r#""name":"\u003ca\u0026b\u003e\u2028é""#), "{text}");
}

/// A JSON value whose objects keep their members in order, to compare key order.
#[derive(Debug, PartialEq)]
enum Ordered {
    Scalar(Value),
    Array(Vec<Ordered>),
    Object(Vec<(String, Ordered)>),
}

impl<'de> Deserialize<'de> for Ordered {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Ordered;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("JSON")
            }
            fn visit_bool<E>(self, v: bool) -> Result<Ordered, E> {
                Ok(Ordered::Scalar(Value::Bool(v)))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Ordered, E> {
                Ok(Ordered::Scalar(json!(v)))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Ordered, E> {
                Ok(Ordered::Scalar(json!(v)))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Ordered, E> {
                Ok(Ordered::Scalar(json!(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Ordered, E> {
                Ok(Ordered::Scalar(Value::String(v.to_owned())))
            }
            fn visit_unit<E>(self) -> Result<Ordered, E> {
                Ok(Ordered::Scalar(Value::Null))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Ordered, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Ordered::Array(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ordered, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry()? {
                    members.push(member);
                }
                Ok(Ordered::Object(members))
            }
        }
        deserializer.deserialize_any(V)
    }
}

#[test]
fn special_types_transcode_on_their_own() {
    let cases: [(&str, &[u8], &[u8]); 7] = [
        ("k8s.io.apimachinery.pkg.apis.meta.v1.Duration", br#""1h2m3.5s""#, br#""1h2m3.5s""#),
        ("k8s.io.apimachinery.pkg.apis.meta.v1.Duration", br#""90s""#, br#""1m30s""#),
        ("k8s.io.apimachinery.pkg.api.resource.Quantity", br#""1.5Gi""#, br#""1536Mi""#),
        ("k8s.io.apimachinery.pkg.util.intstr.IntOrString", br#"8080"#, br#"8080"#),
        ("k8s.io.apimachinery.pkg.util.intstr.IntOrString", br#""http""#, br#""http""#),
        ("k8s.io.apimachinery.pkg.apis.meta.v1.Time", br#""2000-01-01T00:00:00+01:00""#, br#""1999-12-31T23:00:00Z""#),
        ("k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime", br#""0001-01-01T00:00:00.000000Z""#, b"null"),
    ];
    for (name, json, want) in cases {
        let message = MessageType::from_full_name(name).unwrap();
        let pb = message.from_json(json).unwrap();
        assert_eq!(message.to_json(&pb, JsonStyle::Compact).unwrap(), want, "{name} {}", String::from_utf8_lossy(json));
    }
    // IntOrString always writes its three fields.
    let int_or_string = MessageType::from_full_name("k8s.io.apimachinery.pkg.util.intstr.IntOrString").unwrap();
    assert_eq!(int_or_string.from_json(b"7").unwrap(), [0x08, 0x00, 0x10, 0x07, 0x1a, 0x00]);
    assert!(
        matches!(int_or_string.to_json(&[0x08, 0x02], JsonStyle::Compact), Err(Error::K8sProtobuf { reason, .. }) if reason.contains("impossible"))
    );
}

#[test]
fn api_resource_verbs_are_a_string_array_in_json_and_a_message_in_protobuf() {
    let list = MessageType::for_kind("v1", "APIResourceList").unwrap();
    let json = br#"{"groupVersion":"v1","resources":[{"name":"pods","singularName":"pod","namespaced":true,"kind":"Pod","verbs":["get","list"]},{"name":"bindings","singularName":"","namespaced":true,"kind":"Binding","verbs":[]},{"name":"x","singularName":"","namespaced":false,"kind":"X","verbs":null}]}"#;
    let pb = list.from_json(json).unwrap();
    // verbs (4) of the first resource: a message of two items (1).
    assert!(pb.windows(13).any(|w| w == [0x22, 0x0b, 0x0a, 0x03, b'g', b'e', b't', 0x0a, 0x04, b'l', b'i', b's', b't']));
    assert_eq!(list.to_json(&pb, JsonStyle::Compact).unwrap(), json.as_slice());
}

#[test]
fn crd_schema_unions_round_trip_as_apiextensions_writes_them() {
    let crd = MessageType::for_kind("apiextensions.k8s.io/v1", "CustomResourceDefinition").unwrap();
    let schema = json!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
        "properties": {
            "a": {"type": "object", "additionalProperties": false},
            "b": {"type": "object", "additionalProperties": {"type": "string"}},
            "c": {"type": "array", "items": {"type": "integer", "maximum": 9.5, "minimum": -1e-7}},
            "d": {"type": "array", "items": [{"type": "string"}, {"type": "boolean"}]},
            "e": {"type": "string", "default": "x<y", "enum": ["x<y", 3, null, {"k": [1]}]}
        },
        "dependencies": {"a": ["b", "c"], "b": {"required": ["a"]}}
    });
    let object = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "names": {"plural": "widgets", "kind": "Widget"}, "scope": "Namespaced",
                 "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema}}]}});
    let pb = crd.from_value(&object).unwrap();
    let back = crd.to_value(&pb).unwrap();
    assert_eq!(back["spec"]["versions"][0]["schema"]["openAPIV3Schema"], schema);
    let text = String::from_utf8(crd.to_json(&pb, JsonStyle::Compact).unwrap()).unwrap();
    assert!(text.contains(r#""x-kubernetes-preserve-unknown-fields":true"#), "{text}");
    assert!(text.contains(r#""maximum":9.5,"minimum":-1e-7"#), "{text}");
    assert!(text.contains(r#""default":"x\u003cy""#), "{text}");
}

#[test]
fn unknown_fields_are_skipped_and_repeated_messages_merge_as_gogo_reads_them() {
    let config_map = MessageType::for_kind("v1", "ConfigMap").unwrap();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/k8s-api");
    let mut raw = Envelope::decode(&std::fs::read(dir.join("core.v1.ConfigMap.pb")).unwrap()).unwrap().raw;
    let want = config_map.to_json(&raw, JsonStyle::Compact).unwrap();
    // Unknown field 99 as a varint, 98 as bytes, 97 as a group holding a varint, 96 as fixed32.
    raw.extend_from_slice(&[0x98, 0x06, 0x01, 0x92, 0x06, 0x01, 0xff, 0x8b, 0x06, 0x08, 0x01, 0x8c, 0x06, 0x85, 0x06, 1, 2, 3, 4]);
    assert_eq!(config_map.to_json(&raw, JsonStyle::Compact).unwrap(), want);
    // A second metadata (field 1) occurrence merges into the first: name replaced, the rest kept.
    raw.extend_from_slice(&[0x0a, 0x03, 0x0a, 0x01, b'z']);
    let merged: Value = serde_json::from_slice(&config_map.to_json(&raw, JsonStyle::Compact).unwrap()).unwrap();
    let mut expected: Value = serde_json::from_slice(&want).unwrap();
    expected["metadata"]["name"] = json!("z");
    assert_eq!(merged, expected);
}

#[test]
fn json_map_keys_are_written_in_bytewise_order() {
    let text = pod_text(br#"{"metadata":{"labels":{"b":"2","B":"3","a":"1","\u00e9":"4"}}}"#);
    assert!(text.starts_with(r#"{"metadata":{"labels":{"B":"3","a":"1","b":"2","é":"4"}}"#), "{text}");
}

#[test]
fn bytes_are_read_from_an_array_of_numbers_too() {
    let range = MessageType::for_kind("v1", "RangeAllocation").unwrap();
    let pb = range.from_json(br#"{"range":"10.0.0.0/24","data":[1,2,255]}"#).unwrap();
    assert!(String::from_utf8(range.to_json(&pb, JsonStyle::Compact).unwrap()).unwrap().contains(r#""data":"AQL/""#));
    assert!(matches!(range.from_json(br#"{"data":[256]}"#), Err(Error::K8sJson { path, .. }) if path == ".data[0]"));
}

#[test]
fn a_list_encoded_item_by_item_is_the_list_encoded_whole() {
    let items: Vec<Vec<u8>> = (0..3)
        .map(|i| {
            let item = json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("c{i}"), "namespace": "ns", "resourceVersion": format!("{}", 10 + i)},
                "data": {"k": "v".repeat(i + 1)}});
            serde_json::to_vec(&item).unwrap()
        })
        .collect();
    let meta = json!({"resourceVersion": "42", "continue": "tok", "remainingItemCount": 7});
    let header = serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "ConfigMapList", "metadata": meta})).unwrap();
    let whole: Vec<Value> = items.iter().map(|i| serde_json::from_slice(i).unwrap()).collect();
    let whole = serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "ConfigMapList", "metadata": meta, "items": whole})).unwrap();
    let by_item = k8s_protobuf::encode_list_envelope(&header, items.iter().map(Vec::as_slice)).unwrap();
    assert_eq!(by_item, k8s_protobuf::encode_envelope(&whole).unwrap());
    // An empty list, and an item that does not fit, named by its index.
    let empty = serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "ConfigMapList", "metadata": meta, "items": []})).unwrap();
    assert_eq!(k8s_protobuf::encode_list_envelope(&header, []).unwrap(), k8s_protobuf::encode_envelope(&empty).unwrap());
    let bad = br#"{"metadata":{"name":"x"},"data":{"k":1}}"#;
    let err = k8s_protobuf::encode_list_envelope(&header, [items[0].as_slice(), bad.as_slice()]).unwrap_err();
    assert!(err.to_string().contains(".items[1].data"), "{err}");
    // Not a list kind.
    let pod = serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "Pod"})).unwrap();
    assert!(k8s_protobuf::encode_list_envelope(&pod, []).is_err());
}

/// Every leaf of `v`, as a JSON pointer.
fn leaf_pointers(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => m.iter().for_each(|(k, c)| leaf_pointers(c, format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")), out)),
        Value::Array(items) => items.iter().enumerate().for_each(|(i, c)| leaf_pointers(c, format!("{at}/{i}"), out)),
        _ => out.push(at),
    }
}

#[test]
fn a_check_of_the_changed_fields_or_of_a_new_object_answers_as_the_whole_encoding() {
    // Every leaf of every fixture replaced, one at a time, by values of other kinds (most of
    // them invalid there) and by a valid-looking change: the check given the fixture as the old
    // version accepts and rejects exactly what encoding the whole new version does, with the
    // same error (field path and reason).
    let replacements = [json!("x"), json!(7), json!(1.5), json!(true), json!([1]), json!({"a": 1}), json!(null), json!(1e300)];
    let checked = std::cell::Cell::new(0);
    for_every_fixture("check == from_value", |f| {
        let old: Value = serde_json::from_slice(&f.json).unwrap();
        let message = f.message();
        message.check(&old, Some(&old)).map_err(|e| format!("unchanged: {e}"))?;
        message.check(&old, None).map_err(|e| format!("checked alone: {e}"))?;
        let mut leaves = Vec::new();
        leaf_pointers(&old, String::new(), &mut leaves);
        for pointer in leaves.iter().filter(|p| !p.is_empty()) {
            for replacement in &replacements {
                let mut new = old.clone();
                *new.pointer_mut(pointer).unwrap() = replacement.clone();
                let whole = message.from_value(&new).map(drop).map_err(|e| e.to_string());
                let changed = message.check(&new, Some(&old)).map_err(|e| e.to_string());
                if whole != changed {
                    return Err(format!("{pointer} = {replacement}: whole {whole:?}, changed only {changed:?}"));
                }
                let alone = message.check(&new, None).map_err(|e| e.to_string());
                if whole != alone {
                    return Err(format!("{pointer} = {replacement}: whole {whole:?}, checked alone {alone:?}"));
                }
                checked.set(checked.get() + 1);
            }
        }
        // Two leaves at once (the first error in encoding order is the one reported).
        for (a, b) in leaves.iter().zip(leaves.iter().rev()).filter(|(a, b)| a < b && !a.is_empty()) {
            let mut new = old.clone();
            *new.pointer_mut(a).unwrap() = json!([1]);
            *new.pointer_mut(b).unwrap() = json!({"a": 1});
            let whole = message.from_value(&new).map(drop).map_err(|e| e.to_string());
            let changed = message.check(&new, Some(&old)).map_err(|e| e.to_string());
            let alone = message.check(&new, None).map_err(|e| e.to_string());
            if whole != changed || whole != alone {
                return Err(format!("{a} and {b}: whole {whole:?}, changed only {changed:?}, checked alone {alone:?}"));
            }
        }
        Ok(())
    });
    assert!(checked.get() > 1000, "{} replacements checked", checked.get());
}
