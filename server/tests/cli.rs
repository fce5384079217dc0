//! The `fieldstore` binary end to end: stdin in, stdout out, and the error contract on bad input
//! (exit status 2, exactly one `error: …` line on stderr, no panic).

use std::process::Output;

mod common;

fn fieldstore(args: &[&str], stdin: &[u8]) -> Output {
    let args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
    common::fieldstore(&args, stdin)
}

fn assert_one_line_error(output: &Output, expected: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "stderr: {stderr}");
    assert!(output.stdout.is_empty());
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("error: ") && stderr.contains(expected), "{stderr}");
}

#[test]
fn envelope_view_encode_then_decode() {
    let view = br#"{"apiVersion":"example.com/v1","kind":"Widget","contentType":"application/json","raw":{"spec":{"a":"b"}}}"#;
    let encoded = fieldstore(&["envelope", "encode", "--view"], view);
    assert!(encoded.status.success(), "{}", String::from_utf8_lossy(&encoded.stderr));
    assert!(encoded.stdout.starts_with(b"k8s\0"));

    let decoded = fieldstore(&["envelope", "decode", "--view"], &encoded.stdout);
    assert!(decoded.status.success(), "{}", String::from_utf8_lossy(&decoded.stderr));
    let decoded: serde_json::Value = serde_json::from_slice(&decoded.stdout).expect("JSON view");
    assert_eq!(decoded["kind"], "Widget");
    assert_eq!(decoded["raw"]["spec"]["a"], "b");

    // Without --view: the object, with the envelope's typeMeta filled in.
    let object = fieldstore(&["envelope", "decode"], &encoded.stdout);
    let object: serde_json::Value = serde_json::from_slice(&object.stdout).expect("object JSON");
    assert_eq!(object, serde_json::json!({"apiVersion": "example.com/v1", "kind": "Widget", "spec": {"a": "b"}}));
}

/// The upstream fixtures (k8s.io/api testdata/HEAD, Apache-2.0; copied in codec's tests).
fn upstream_fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!("{}/../codec/tests/fixtures/k8s-api/{name}", env!("CARGO_MANIFEST_DIR"))).expect("fixture")
}

#[test]
fn envelope_decode_prints_an_upstream_fixture_as_kube_apiserver_and_encode_gives_its_bytes() {
    for kind in ["core.v1.ConfigMap", "apps.v1.Deployment", "coordination.k8s.io.v1.Lease"] {
        let pb = upstream_fixture(&format!("{kind}.pb"));
        let json = upstream_fixture(&format!("{kind}.json"));
        let decoded = fieldstore(&["envelope", "decode"], &pb);
        assert!(decoded.status.success(), "{kind}: {}", String::from_utf8_lossy(&decoded.stderr));
        // Upstream's files are indented JSON without a final newline; the CLI ends its line.
        assert_eq!(String::from_utf8_lossy(&decoded.stdout).trim_end(), String::from_utf8_lossy(&json).trim_end(), "{kind}");
        let encoded = fieldstore(&["envelope", "encode"], &json);
        assert!(encoded.status.success(), "{kind}: {}", String::from_utf8_lossy(&encoded.stderr));
        assert!(encoded.stdout == pb, "{kind}: encode is not the upstream bytes");
    }
}

#[test]
fn envelope_bad_input() {
    assert_one_line_error(&fieldstore(&["envelope", "decode"], b"k8s"), "missing k8s\\x00 magic prefix (got 3 bytes)");
    assert_one_line_error(&fieldstore(&["envelope", "decode"], b"k8s\0\x12\x7f"), "protobuf decode failed");
    assert_one_line_error(&fieldstore(&["envelope", "encode", "--view"], b"{\"raw\":"), "input is not valid JSON");
    assert_one_line_error(&fieldstore(&["envelope", "encode", "--view"], br#"{"rawBase64":"@@@@"}"#), "invalid base64");
    // A built-in object that does not fit its schema: the field path is named.
    assert_one_line_error(
        &fieldstore(&["envelope", "encode"], br#"{"apiVersion":"v1","kind":"ConfigMap","data":{"a":1}}"#),
        r#".data["a"]"#,
    );
    assert_one_line_error(&fieldstore(&["envelope", "encode"], br#"{"data":{}}"#), "apiVersion and kind");
    // A truncated envelope, and a whole envelope around a truncated object.
    let pb = upstream_fixture("core.v1.ConfigMap.pb");
    assert_one_line_error(&fieldstore(&["envelope", "decode"], &pb[..pb.len() - 20]), "Unknown.raw");
    let mut envelope = fieldstore_codec::Envelope::decode(&pb).expect("fixture envelope");
    envelope.raw.truncate(envelope.raw.len() - 20);
    let out = fieldstore(&["envelope", "decode"], &envelope.encode());
    assert_one_line_error(&out, "k8s.io.api.core.v1.ConfigMap at .");
}

#[test]
fn fields_convert_round_trip() {
    let json = br#"{"f:data":{"f:a":{}},"f:metadata":{"f:labels":{"f:app":{}}}}"#;
    let binary = fieldstore(&["fields", "convert", "--from", "json", "--to", "binary"], json);
    assert!(binary.status.success(), "{}", String::from_utf8_lossy(&binary.stderr));
    let back = fieldstore(&["fields", "convert", "--from", "binary", "--to", "json"], &binary.stdout);
    assert!(back.status.success(), "{}", String::from_utf8_lossy(&back.stderr));
    assert_eq!(back.stdout, json);
}

#[test]
fn fields_bad_input() {
    assert_one_line_error(&fieldstore(&["fields", "convert", "--from", "json", "--to", "binary"], b"{\"x\":1}"), "FieldsV1");
    let output = fieldstore(&["fields", "convert", "--from", "binary", "--to", "json"], b"\xff\xff");
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).starts_with("error: "));
}
