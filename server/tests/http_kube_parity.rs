//! Answers of the Kubernetes HTTP API that must be exactly kube-apiserver's (1.37.2, as the
//! differential harness observed them): refused options are 422 Invalid on the options kind
//! with apimachinery's causes, alternative encodings (YAML, PartialObjectMetadata, protobuf
//! watches), health checks' verbose form.

// Test support unwraps: a failed setup is a failed test.
#![allow(clippy::unwrap_used)]

#[path = "support/http_server.rs"]
mod http_server;

use bytes::Bytes;
use http_server::{Resp, Server};
use serde_json::{json, Value};

const CMS: &str = "/api/v1/namespaces/default/configmaps";

fn cm(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"a": "b"}}, "data": {"k": "v"}})
}

/// Asserts a 422 Invalid on `kind` (`CreateOptions`, …) with kube-apiserver's message and
/// causes (type, field).
fn invalid_options(r: &Resp, kind: &str, message: &str, causes: &[(&str, &str)]) {
    let s = r.status(422, "Invalid");
    assert_eq!(s["message"], format!("{kind}.meta.k8s.io \"\" is invalid: {message}"), "{s}");
    assert_eq!((&s["details"]["group"], &s["details"]["kind"]), (&json!("meta.k8s.io"), &json!(kind)), "{s}");
    let got: Vec<(&str, &str)> =
        s["details"]["causes"].as_array().unwrap().iter().map(|c| (c["reason"].as_str().unwrap(), c["field"].as_str().unwrap())).collect();
    assert_eq!(got, causes, "{s}");
}

const DRY_YES: &str = "dryRun: Unsupported value: [\"Yes\"]: supported values: \"All\"";
const LOUD: &str = "fieldValidation: Unsupported value: \"Loud\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"";
const NOT_SUPPORTED: &str = "FieldValueNotSupported";
const FORBIDDEN: &str = "FieldValueForbidden";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_dry_run_and_field_validation_are_invalid_options() {
    let server = Server::start(&[]);
    let s = &server;
    let body = serde_json::to_vec(&cm("a")).unwrap();
    let json_ct = [("content-type", "application/json")];
    let r = s.send("POST", &format!("{CMS}?dryRun=Yes"), &json_ct, body.clone()).await;
    invalid_options(&r, "CreateOptions", DRY_YES, &[(NOT_SUPPORTED, "dryRun")]);
    let r = s.send("POST", &format!("{CMS}?fieldValidation=Loud&dryRun=Yes"), &json_ct, body.clone()).await;
    invalid_options(&r, "CreateOptions", &format!("[{DRY_YES}, {LOUD}]"), &[(NOT_SUPPORTED, "dryRun"), (NOT_SUPPORTED, "fieldValidation")]);
    assert_eq!(s.post(CMS, &cm("a")).await.code, 201);
    let r = s.send("PUT", &format!("{CMS}/a?dryRun=Yes"), &json_ct, body.clone()).await;
    invalid_options(&r, "UpdateOptions", DRY_YES, &[(NOT_SUPPORTED, "dryRun")]);
    let r = s.send("PATCH", &format!("{CMS}/a?fieldValidation=Loud"), &[("content-type", "application/merge-patch+json")], "{}").await;
    invalid_options(&r, "PatchOptions", LOUD, &[(NOT_SUPPORTED, "fieldValidation")]);
    let r = s.send("PATCH", &format!("{CMS}/a?force=false&dryRun=Yes"), &[("content-type", "application/merge-patch+json")], "{}").await;
    invalid_options(
        &r,
        "PatchOptions",
        &format!("[force: Forbidden: may not be specified for non-apply patch, {DRY_YES}]"),
        &[(FORBIDDEN, "force"), (NOT_SUPPORTED, "dryRun")],
    );
    let r = s.send("DELETE", &format!("{CMS}/a?dryRun=All&dryRun=Yes"), &[], Bytes::new()).await;
    invalid_options(
        &r,
        "DeleteOptions",
        "dryRun: Unsupported value: [\"All\",\"Yes\"]: supported values: \"All\"",
        &[(NOT_SUPPORTED, "dryRun")],
    );
    let r = s.send("DELETE", &format!("{CMS}/a"), &json_ct, r#"{"dryRun": ["Yes"], "propagationPolicy": "Bad"}"#).await;
    invalid_options(
        &r,
        "DeleteOptions",
        &format!("[propagationPolicy: Unsupported value: \"Bad\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\", {DRY_YES}]"),
        &[(NOT_SUPPORTED, "propagationPolicy"), (NOT_SUPPORTED, "dryRun")],
    );
    // Nothing was written or deleted; a delete ignores fieldValidation, as kube-apiserver does.
    assert_eq!(s.get(&format!("{CMS}/a")).await.json()["data"], json!({"k": "v"}));
    assert_eq!(s.send("DELETE", &format!("{CMS}/a?fieldValidation=Yes"), &[], Bytes::new()).await.code, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_and_watch_options_are_checked_as_kube_apiserver_does() {
    let server = Server::start(&[]);
    let s = &server;
    const RVM: &str = "resourceVersionMatch";
    let unless_rv = "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided";
    let cases: [(&str, String, Vec<(&str, &str)>); 9] = [
        ("resourceVersionMatch=Exact", unless_rv.into(), vec![(FORBIDDEN, RVM)]),
        ("resourceVersionMatch=NotOlderThan", unless_rv.into(), vec![(FORBIDDEN, RVM)]),
        (
            "resourceVersionMatch=Bad",
            format!("[{unless_rv}, resourceVersionMatch: Unsupported value: \"Bad\": supported values: \"Exact\", \"NotOlderThan\", \"\"]"),
            vec![(FORBIDDEN, RVM), (NOT_SUPPORTED, RVM)],
        ),
        (
            "resourceVersionMatch=Exact&resourceVersion=0",
            "resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"".into(),
            vec![(FORBIDDEN, RVM)],
        ),
        (
            "resourceVersionMatch=Exact&resourceVersion=1&continue=abc",
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided".into(),
            vec![(FORBIDDEN, RVM)],
        ),
        (
            "sendInitialEvents=false",
            "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list".into(),
            vec![(FORBIDDEN, "sendInitialEvents")],
        ),
        (
            "watch=1&sendInitialEvents=true",
            "resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan".into(),
            vec![(FORBIDDEN, RVM)],
        ),
        (
            "watch=1&resourceVersionMatch=NotOlderThan&resourceVersion=1",
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided".into(),
            vec![(FORBIDDEN, RVM)],
        ),
        (
            "watch=1&sendInitialEvents=true&resourceVersionMatch=Exact&resourceVersion=1",
            "[resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan, resourceVersionMatch: Unsupported value: \"Exact\": supported values: \"NotOlderThan\"]".into(),
            vec![(FORBIDDEN, RVM), (NOT_SUPPORTED, RVM)],
        ),
    ];
    for (query, message, causes) in &cases {
        let r = s.get(&format!("{CMS}?{query}")).await;
        invalid_options(&r, "ListOptions", message, causes);
    }
    // Deleting a collection checks its list options too.
    let r = s.send("DELETE", &format!("{CMS}?resourceVersionMatch=Exact"), &[], Bytes::new()).await;
    invalid_options(&r, "ListOptions", unless_rv, &[(FORBIDDEN, RVM)]);
    // What is allowed still works.
    assert_eq!(s.get(&format!("{CMS}?resourceVersionMatch=NotOlderThan&resourceVersion=0")).await.code, 200);
}
