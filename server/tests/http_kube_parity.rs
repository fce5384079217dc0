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

/// A query, the Status message after `ListOptions.meta.k8s.io "" is invalid: `, the causes.
type Case<'a> = (&'a str, String, Vec<(&'a str, &'a str)>);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_and_watch_options_are_checked_as_kube_apiserver_does() {
    let server = Server::start(&[]);
    let s = &server;
    const RVM: &str = "resourceVersionMatch";
    let unless_rv = "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided";
    let cases: [Case; 9] = [
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yaml_answers_objects_lists_and_failures() {
    let server = Server::start(&[]);
    let s = &server;
    assert_eq!(s.post(CMS, &cm("y")).await.code, 201);
    let yaml = [("accept", "application/yaml")];
    let r = s.send("GET", &format!("{CMS}/y"), &yaml, Bytes::new()).await;
    assert_eq!((r.code, r.headers["content-type"].to_str().unwrap()), (200, "application/yaml"));
    let text = String::from_utf8(r.body.clone()).unwrap();
    // Keys sorted, strings YAML 1.1 would read otherwise quoted, as kube-apiserver writes them.
    assert!(text.starts_with("apiVersion: v1\ndata:\n  k: v\nkind: ConfigMap\nmetadata:\n"), "{text}");
    assert!(text.contains("\n  name: \"y\"\n") && text.contains("creationTimestamp: \""), "{text}");
    let o: Value = serde_yaml::from_str(&text).unwrap();
    assert_eq!(o, s.get(&format!("{CMS}/y")).await.json());
    let r = s.send("GET", CMS, &yaml, Bytes::new()).await;
    let list: Value = serde_yaml::from_str(std::str::from_utf8(&r.body).unwrap()).unwrap();
    assert_eq!((r.code, &list["kind"], &list["items"][0]["metadata"]["name"]), (200, &json!("ConfigMapList"), &json!("y")));
    let r = s.send("GET", &format!("{CMS}/nope"), &[("accept", "application/yaml, application/json")], Bytes::new()).await;
    assert_eq!((r.code, r.headers["content-type"].to_str().unwrap()), (404, "application/yaml"));
    let status: Value = serde_yaml::from_str(std::str::from_utf8(&r.body).unwrap()).unwrap();
    assert_eq!((&status["kind"], &status["reason"], &status["code"]), (&json!("Status"), &json!("NotFound"), &json!(404)));
}

const PARTIAL: &str = "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io";
const PARTIAL_LIST: &str = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io";
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partial_object_metadata_on_get_list_and_watch() {
    let server = Server::start(&[]);
    let s = &server;
    assert_eq!(s.post(CMS, &cm("p")).await.code, 201);
    let full = s.get(&format!("{CMS}/p")).await.json();
    let r = s.send("GET", &format!("{CMS}/p"), &[("accept", PARTIAL)], Bytes::new()).await;
    let want = json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": full["metadata"]});
    assert_eq!((r.code, r.json()), (200, want.clone()));
    // client-go's metadata informer: protobuf first, then JSON.
    let accept = format!("{PROTOBUF};as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,{PARTIAL_LIST},application/json");
    let r = s.send("GET", CMS, &[("accept", accept.as_str())], Bytes::new()).await;
    assert_eq!(r.code, 200);
    assert!(r.body.starts_with(b"k8s\0"));
    let r = s.send("GET", CMS, &[("accept", PARTIAL_LIST)], Bytes::new()).await;
    let list = r.json();
    assert_eq!((&list["kind"], &list["apiVersion"]), (&json!("PartialObjectMetadataList"), &json!("meta.k8s.io/v1")));
    assert_eq!(list["items"], json!([want]));
    assert!(list["metadata"]["resourceVersion"].is_string());
    // The other shape is kube-apiserver's 406.
    let r = s.send("GET", CMS, &[("accept", PARTIAL)], Bytes::new()).await;
    let st = r.status(406, "NotAcceptable");
    assert_eq!(st["message"], "you requested PartialObjectMetadata, but the requested object is a list (*core.ConfigMapList)");
    let r = s.send("GET", &format!("{CMS}/p"), &[("accept", PARTIAL_LIST)], Bytes::new()).await;
    let st = r.status(406, "NotAcceptable");
    assert_eq!(st["message"], "you requested PartialObjectMetadataList, but the requested object is not a list (*core.ConfigMap)");
    let (code, lines) = s.watch_lines(&format!("{CMS}?watch=1&resourceVersion=0"), 1, &[("accept", PARTIAL)]).await;
    assert_eq!((code, &lines[0]["type"], &lines[0]["object"]), (200, &json!("ADDED"), &want));
    // Bookmarks too (client-go's metadata informer in watch-list mode waits for this one): the
    // object is a PartialObjectMetadata, as kube-apiserver sends it.
    let watch_list = format!("{CMS}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true");
    let (code, lines) = s.watch_lines(&watch_list, 2, &[("accept", PARTIAL)]).await;
    assert_eq!((code, &lines[0]["object"]), (200, &want));
    let rv = &want["metadata"]["resourceVersion"];
    let bookmark = json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": rv, "annotations": {"k8s.io/initial-events-end": "true"}}});
    assert_eq!((&lines[1]["type"], &lines[1]["object"]), (&json!("BOOKMARK"), &bookmark));
}

/// A watch-list from a resourceVersion (client-go's reflector listing again after a broken watch)
/// sends the current state and the `initial-events-end` bookmark, as kube-apiserver does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_list_from_a_resource_version() {
    let server = Server::start(&[]);
    let s = &server;
    assert_eq!(s.post(CMS, &cm("first")).await.code, 201);
    let rv = s.get(&format!("{CMS}/first")).await.json()["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    assert_eq!(s.post(CMS, &cm("second")).await.code, 201);
    let now = s.get(CMS).await.json()["metadata"]["resourceVersion"].clone();
    let path =
        format!("{CMS}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion={rv}");
    let (code, lines) = s.watch_lines(&path, 3, &[]).await;
    assert_eq!(code, 200);
    let added: Vec<_> = lines[..2].iter().map(|l| (l["type"].clone(), l["object"]["metadata"]["name"].clone())).collect();
    assert_eq!(added, [(json!("ADDED"), json!("first")), (json!("ADDED"), json!("second"))]);
    assert_eq!(lines[2]["type"], "BOOKMARK");
    assert_eq!(lines[2]["object"]["metadata"], json!({"resourceVersion": now, "annotations": {"k8s.io/initial-events-end": "true"}}));
}

/// The frames of a protobuf watch: a 4-byte big-endian length, then a `WatchEvent` message.
fn frames(mut b: &[u8]) -> Vec<(String, Vec<u8>)> {
    fn field(m: &[u8]) -> (u8, &[u8], &[u8]) {
        let (tag, mut len, mut i) = (m[0] >> 3, 0usize, 1);
        while m[i] & 0x80 != 0 {
            len |= usize::from(m[i] & 0x7f) << (7 * (i - 1));
            i += 1;
        }
        len |= usize::from(m[i]) << (7 * (i - 1));
        (tag, &m[i + 1..i + 1 + len], &m[i + 1 + len..])
    }
    let mut out = Vec::new();
    while b.len() >= 4 {
        let n = u32::from_be_bytes(b[..4].try_into().unwrap()) as usize;
        let (t1, event_type, rest) = field(&b[4..4 + n]);
        let (t2, raw_ext, _) = field(rest);
        let (t3, raw, _) = field(raw_ext);
        assert_eq!((t1, t2, t3), (1, 2, 1));
        out.push((String::from_utf8(event_type.to_vec()).unwrap(), raw.to_vec()));
        b = &b[4 + n..];
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protobuf_watches_and_custom_resources_in_json() {
    let server = Server::start(&[]);
    let s = &server;
    assert_eq!(s.post(CMS, &cm("w")).await.code, 201);
    let r = s.send("GET", &format!("{CMS}?watch=1&resourceVersion=0&timeoutSeconds=1"), &[("accept", PROTOBUF)], Bytes::new()).await;
    assert_eq!((r.code, r.headers["content-type"].to_str().unwrap()), (200, "application/vnd.kubernetes.protobuf;stream=watch"));
    let events = frames(&r.body);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].0, "ADDED");
    // The object is the ConfigMap's own envelope, as a GET in protobuf answers it.
    let get = s.send("GET", &format!("{CMS}/w"), &[("accept", PROTOBUF)], Bytes::new()).await;
    assert_eq!(events[0].1, get.body);

    // A custom resource has no protobuf encoding: JSON when the client takes it, else 406.
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}});
    assert_eq!(s.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", &crd).await.code, 201);
    let widgets = "/apis/example.com/v1/namespaces/default/widgets";
    let mut created = 0;
    for _ in 0..100 {
        created = s.post(widgets, &json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "a"}})).await.code;
        if created == 201 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(created, 201);
    let r =
        s.send("GET", &format!("{widgets}/a"), &[("accept", "application/vnd.kubernetes.protobuf, application/json")], Bytes::new()).await;
    assert_eq!((r.code, r.headers["content-type"].to_str().unwrap()), (200, "application/json"));
    assert_eq!(r.json()["kind"], "Widget");
    // The 406 in protobuf, as kube-apiserver answers it.
    let r = s.send("GET", &format!("{widgets}/a"), &[("accept", PROTOBUF)], Bytes::new()).await;
    assert_eq!((r.code, r.headers["content-type"].to_str().unwrap()), (406, PROTOBUF));
    assert!(r.body.starts_with(b"k8s\0") && r.body.windows(13).any(|w| w == b"NotAcceptable"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_checks_as_kube_apiserver_lists_them() {
    let server = Server::start(&[]);
    let s = &server;
    for path in ["/livez/ping", "/readyz/ping", "/healthz/ping", "/livez", "/readyz/shutdown"] {
        let r = s.get(path).await;
        assert_eq!((r.code, r.body.as_slice()), (200, b"ok".as_slice()), "{path}");
    }
    let r = s.get("/readyz?verbose").await;
    let text = String::from_utf8(r.body).unwrap();
    assert_eq!(r.code, 200);
    assert!(text.starts_with("[+]ping ok\n[+]log ok\n"), "{text}");
    assert!(text.ends_with("[+]shutdown ok\nreadyz check passed\n"), "{text}");
    let r = s.get("/livez?verbose=1").await;
    let text = String::from_utf8(r.body).unwrap();
    assert!(text.starts_with("[+]ping ok\n") && text.ends_with(" ok\nlivez check passed\n") && !text.contains("shutdown"), "{text}");
    let r = s.get("/livez/nope").await;
    assert_eq!((r.code, r.body.as_slice()), (404, b"404 page not found\n".as_slice()));
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scale_updates_are_recorded_as_the_scale_subresource() {
    let server = Server::start(&[]);
    let s = &server;
    let deploys = "/apis/apps/v1/namespaces/default/deployments";
    let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {
        "replicas": 1, "selector": {"matchLabels": {"a": "b"}},
        "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    assert_eq!(s.post(deploys, &d).await.code, 201);
    let r =
        s.patch(&format!("{deploys}/d/scale?fieldManager=scaler"), "application/merge-patch+json", &json!({"spec": {"replicas": 3}})).await;
    assert_eq!(r.code, 200);
    let o = s.get(&format!("{deploys}/d")).await.json();
    let entries = o["metadata"]["managedFields"].as_array().unwrap();
    // Without a time (kube-apiserver's scale conversion drops it), so first.
    let scaler = &entries[0];
    assert!(scaler.get("time").is_none(), "{scaler}");
    assert_eq!(
        (&scaler["subresource"], &scaler["operation"], &scaler["apiVersion"]),
        (&json!("scale"), &json!("Update"), &json!("apps/v1"))
    );
    assert_eq!(scaler["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
    // The creator no longer owns the replicas.
    let creator = entries.iter().find(|e| e["manager"] != "scaler").unwrap();
    assert!(creator["fieldsV1"]["f:spec"].get("f:replicas").is_none(), "{creator}");
}

/// client-go's clientsets send and accept protobuf for built-in kinds, the Scale among them
/// (`UpdateScale` of a Deployment): kube-apiserver reads and answers it in protobuf.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scale_in_protobuf() {
    use fieldstore_codec::k8s_protobuf::{self, JsonStyle};
    let server = Server::start(&[]);
    let s = &server;
    let deploys = "/apis/apps/v1/namespaces/default/deployments";
    let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {
        "replicas": 1, "selector": {"matchLabels": {"a": "b"}},
        "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    assert_eq!(s.post(deploys, &d).await.code, 201);
    let scale = format!("{deploys}/d/scale");
    let pb = [("accept", "application/vnd.kubernetes.protobuf, application/json")];
    let r = s.send("GET", &scale, &pb, Bytes::new()).await;
    assert_eq!((r.code, r.headers["content-type"].to_str().unwrap()), (200, PROTOBUF));
    let got: Value = serde_json::from_slice(&k8s_protobuf::decode_envelope(&r.body, JsonStyle::Compact).unwrap()).unwrap();
    assert_eq!((&got["kind"], &got["apiVersion"], &got["spec"]["replicas"]), (&json!("Scale"), &json!("autoscaling/v1"), &json!(1)));
    assert_eq!(got["status"]["selector"], "a=b");

    let mut change = got.clone();
    change["spec"]["replicas"] = json!(4);
    let body = k8s_protobuf::encode_envelope_value(&change).unwrap();
    let r = s.send("PUT", &scale, &[pb[0], ("content-type", PROTOBUF)], body).await;
    assert_eq!((r.code, r.headers["content-type"].to_str().unwrap()), (200, PROTOBUF), "{}", String::from_utf8_lossy(&r.body));
    let put: Value = serde_json::from_slice(&k8s_protobuf::decode_envelope(&r.body, JsonStyle::Compact).unwrap()).unwrap();
    assert_eq!(put["spec"]["replicas"], 4);
    assert_eq!(s.get(&format!("{deploys}/d")).await.json()["spec"]["replicas"], 4);
    // JSON still, when that is what is sent and accepted.
    let r = s.send("GET", &scale, &[], Bytes::new()).await;
    assert_eq!((r.code, &r.json()["spec"]["replicas"]), (200, &json!(4)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn label_selectors_greater_and_less_than() {
    let server = Server::start(&[]);
    let s = &server;
    for (name, idx) in [("one", "1"), ("three", "3"), ("word", "x")] {
        let o = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"idx": idx}}});
        assert_eq!(s.post(CMS, &o).await.code, 201);
    }
    let names =
        |v: Value| v["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap().to_string()).collect::<Vec<_>>();
    assert_eq!(names(s.get(&format!("{CMS}?labelSelector=idx%3E2")).await.json()), ["three"]);
    assert_eq!(names(s.get(&format!("{CMS}?labelSelector=idx%3C2")).await.json()), ["one"]);
    s.get(&format!("{CMS}?labelSelector=idx%3Etwo")).await.status(400, "BadRequest");
}

/// A custom resource whose CRD declares `subresources.scale` has one, as in kube-apiserver:
/// listed in discovery after its status, its Scale read from and written to the CRD's paths.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resource_scale() {
    let server = Server::start(&[]);
    let s = &server;
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "pools.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "pools", "singular": "pool", "kind": "Pool"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.size", "statusReplicasPath": ".status.ready",
                    "labelSelectorPath": ".status.selector"}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}});
    assert_eq!(s.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", &crd).await.code, 201);
    let names: Vec<Value> =
        s.get("/apis/example.com/v1").await.json()["resources"].as_array().unwrap().iter().map(|r| r["name"].clone()).collect();
    assert_eq!(names, [json!("pools"), json!("pools/status"), json!("pools/scale")]);

    let pools = "/apis/example.com/v1/namespaces/default/pools";
    let pool = json!({"apiVersion": "example.com/v1", "kind": "Pool", "metadata": {"name": "p"}, "spec": {"size": 2}});
    assert_eq!(s.post(pools, &pool).await.code, 201);
    let r =
        s.patch(&format!("{pools}/p/status"), "application/merge-patch+json", &json!({"status": {"ready": 1, "selector": "app=p"}})).await;
    assert_eq!(r.code, 200);
    let scale = s.get(&format!("{pools}/p/scale")).await.json();
    assert_eq!((&scale["kind"], &scale["apiVersion"]), (&json!("Scale"), &json!("autoscaling/v1")));
    assert_eq!((&scale["spec"], &scale["status"]), (&json!({"replicas": 2}), &json!({"replicas": 1, "selector": "app=p"})));
    let before = s.get(&format!("{pools}/p")).await.json();
    let r = s.patch(&format!("{pools}/p/scale?fieldManager=hpa"), "application/merge-patch+json", &json!({"spec": {"replicas": 5}})).await;
    assert_eq!((r.code, &r.json()["spec"]["replicas"]), (200, &json!(5)));
    let after = s.get(&format!("{pools}/p")).await.json();
    assert_eq!((&after["spec"]["size"], &after["metadata"]["generation"]), (&json!(5), &json!(2)));
    // kube-apiserver records no managedFields entry for it.
    assert_eq!(after["metadata"]["managedFields"], before["metadata"]["managedFields"]);
}
