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
fn envelope_encode_then_decode() {
    let view = br#"{"apiVersion":"v1","kind":"ConfigMap","contentType":"application/json","raw":{"data":{"a":"b"}}}"#;
    let encoded = fieldstore(&["envelope", "encode"], view);
    assert!(encoded.status.success(), "{}", String::from_utf8_lossy(&encoded.stderr));
    assert!(encoded.stdout.starts_with(b"k8s\0"));

    let decoded = fieldstore(&["envelope", "decode"], &encoded.stdout);
    assert!(decoded.status.success(), "{}", String::from_utf8_lossy(&decoded.stderr));
    let decoded: serde_json::Value = serde_json::from_slice(&decoded.stdout).expect("JSON view");
    assert_eq!(decoded["kind"], "ConfigMap");
    assert_eq!(decoded["raw"]["data"]["a"], "b");
}

#[test]
fn envelope_bad_input() {
    assert_one_line_error(&fieldstore(&["envelope", "decode"], b"k8s"), "missing k8s\\x00 magic prefix (got 3 bytes)");
    assert_one_line_error(&fieldstore(&["envelope", "decode"], b"k8s\0\x12\x7f"), "protobuf decode failed");
    assert_one_line_error(&fieldstore(&["envelope", "encode"], b"{\"raw\":"), "input is not valid JSON");
    assert_one_line_error(&fieldstore(&["envelope", "encode"], br#"{"rawBase64":"@@@@"}"#), "invalid base64");
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
