//! Bad input that must harm no one, over the Kubernetes HTTP API: patches that would strip an
//! object's identity, values its kind's protobuf encoding cannot hold, deeply nested bodies,
//! JSON patch bombs, invalid metadata, YAML values JSON cannot hold and duplicate fields. Each
//! refused write leaves the store as it was; each accepted object reads back as JSON and as
//! protobuf.

// Test support unwraps: a failed setup is a failed test.
#![allow(clippy::unwrap_used)]

#[path = "support/http_server.rs"]
mod http_server;

use bytes::Bytes;
use http_server::{Resp, Server};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const DEPLOYS: &str = "/apis/apps/v1/namespaces/default/deployments";
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

fn cm(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"a": "b"}}, "data": {"k": "v"}})
}

fn deployment(name: &str, replicas: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": {
        "replicas": replicas, "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
}

/// Every object of a type, as JSON and as protobuf: both must read.
async fn readable(s: &Server, list: &str) -> Value {
    let json = s.get(list).await;
    assert_eq!(json.code, 200, "{}", String::from_utf8_lossy(&json.body));
    let pb = s.send("GET", list, &[("accept", PROTOBUF)], Bytes::new()).await;
    assert_eq!(pb.code, 200, "protobuf list of {list}: {}", String::from_utf8_lossy(&pb.body));
    assert!(pb.body.starts_with(b"k8s\0"));
    json.json()
}

/// Asserts the object still has its identity.
fn whole(o: &Value, kind: &str, name: &str) {
    assert_eq!(o["kind"], kind, "{o}");
    assert!(o["apiVersion"].is_string(), "{o}");
    assert_eq!(o["metadata"]["name"], name, "{o}");
    assert_eq!(o["metadata"]["namespace"], "default", "{o}");
    for f in ["uid", "creationTimestamp", "resourceVersion"] {
        assert!(o["metadata"][f].as_str().is_some_and(|s| !s.is_empty()), "{f} missing: {o}");
    }
}

async fn patch_bytes(s: &Server, path: &str, content_type: &str, body: impl Into<Bytes>) -> Resp {
    s.send("PATCH", path, &[("content-type", content_type)], body).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_patch_takes_an_objects_identity() {
    let server = Server::start(&[]);
    let s = &server;
    assert_eq!(s.post(CMS, &cm("x")).await.code, 201);
    let uid = s.get(&format!("{CMS}/x")).await.json()["metadata"]["uid"].clone();
    let json_patch = "application/json-patch+json";
    let merge = "application/merge-patch+json";
    let smp = "application/strategic-merge-patch+json";
    let emptying = [
        (json_patch, json!([{"op": "replace", "path": "", "value": {}}])),
        (json_patch, json!([{"op": "remove", "path": "/metadata"}])),
        (json_patch, json!([{"op": "remove", "path": "/kind"}, {"op": "remove", "path": "/apiVersion"}])),
        (merge, json!({"metadata": null})),
        (merge, json!({"kind": null})),
        (merge, json!({"apiVersion": null, "metadata": {"name": null, "namespace": null, "uid": null}})),
        (smp, json!({"$patch": "delete"})),
    ];
    for (ct, p) in &emptying {
        let r = s.patch(&format!("{CMS}/x"), ct, p).await;
        assert!(r.code == 200 || (400..500).contains(&r.code), "{p}: {}", r.code);
        let o = s.get(&format!("{CMS}/x")).await.json();
        whole(&o, "ConfigMap", "x");
        assert_eq!(o["metadata"]["uid"], uid, "{p}");
    }
    // Changing the name or namespace is refused (400), the uid too (422); nothing is written.
    let before = s.get(&format!("{CMS}/x")).await.json();
    s.patch(&format!("{CMS}/x"), merge, &json!({"metadata": {"name": "y"}})).await.status(400, "BadRequest");
    s.patch(&format!("{CMS}/x"), merge, &json!({"metadata": {"namespace": "kube-system"}})).await.status(400, "BadRequest");
    s.patch(&format!("{CMS}/x"), json_patch, &json!([{"op": "replace", "path": "/metadata/name", "value": "z"}]))
        .await
        .status(400, "BadRequest");
    let e = s.patch(&format!("{CMS}/x"), merge, &json!({"metadata": {"uid": "other"}})).await.status(422, "Invalid");
    assert_eq!(e["details"]["causes"][0]["field"], "metadata.uid", "{e}");
    s.patch(&format!("{CMS}/x"), merge, &json!({"metadata": "s"})).await.status(422, "Invalid");
    assert_eq!(s.get(&format!("{CMS}/x")).await.json()["metadata"]["resourceVersion"], before["metadata"]["resourceVersion"]);
    let list = readable(s, CMS).await;
    for item in list["items"].as_array().unwrap() {
        assert!(item["metadata"]["name"].as_str().is_some_and(|n| !n.is_empty()), "{item}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_the_protobuf_encoding_cannot_hold_are_refused_at_write_time() {
    let server = Server::start(&[]);
    let s = &server;
    for replicas in [json!(2_147_483_648_u64), json!(1_180_591_620_717_411_303_424.0), json!(1.5), json!("2")] {
        let r = s.post(DEPLOYS, &deployment("d", replicas.clone())).await;
        assert!(r.code == 400 || r.code == 422, "replicas {replicas}: {}", r.code);
        assert!(String::from_utf8_lossy(&r.body).contains("spec.replicas"), "{}", String::from_utf8_lossy(&r.body));
    }
    assert_eq!(s.post(DEPLOYS, &deployment("d", json!(1))).await.code, 201);
    let rv = s.get(&format!("{DEPLOYS}/d")).await.json()["metadata"]["resourceVersion"].clone();
    let merge = "application/merge-patch+json";
    s.patch(&format!("{DEPLOYS}/d"), merge, &json!({"spec": {"replicas": 2_147_483_648_u64}})).await.status(422, "Invalid");
    s.patch(&format!("{DEPLOYS}/d"), merge, &json!({"spec": {"replicas": 1.5}})).await.status(422, "Invalid");
    s.patch(&format!("{DEPLOYS}/d"), merge, &json!({"spec": [1]})).await.status(422, "Invalid");
    let containers = json!({"spec": {"template": {"spec": {"containers": {"name": "c"}}}}});
    s.patch(&format!("{DEPLOYS}/d"), merge, &containers).await.status(422, "Invalid");
    let scale =
        json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "d"}, "spec": {"replicas": 2_147_483_648_u64}});
    let r =
        s.send("PUT", &format!("{DEPLOYS}/d/scale"), &[("content-type", "application/json")], serde_json::to_vec(&scale).unwrap()).await;
    assert!(r.code == 400 || r.code == 422, "{}", r.code);
    assert_eq!(s.get(&format!("{DEPLOYS}/d")).await.json()["metadata"]["resourceVersion"], rv);
    for data in [json!([1]), json!("s"), json!(5)] {
        let mut o = cm("bad");
        o["data"] = data.clone();
        let r = s.post(CMS, &o).await;
        assert!(r.code == 400 || r.code == 422, "data {data}: {}", r.code);
    }
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"k": "not base64!"}});
    let r = s.post("/api/v1/namespaces/default/secrets", &secret).await;
    let e = r.status(422, "Invalid");
    assert!(e["details"]["causes"][0]["field"].as_str().unwrap().starts_with("data"), "{e}");
    // Everyone can still read every type, in both encodings.
    readable(s, DEPLOYS).await;
    readable(s, CMS).await;
    readable(s, "/api/v1/namespaces/default/secrets").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deeply_nested_bodies_are_refused_while_they_are_read() {
    let server = Server::start(&[]);
    let s = &server;
    let apply = |body: String| async move {
        let started = Instant::now();
        let r = patch_bytes(s, &format!("{CMS}/deep?fieldManager=m"), "application/apply-patch+yaml", body).await;
        (r, started.elapsed())
    };
    let json_bomb = format!("{}1{}", "{\"a\":".repeat(60_000), "}".repeat(60_000));
    let yaml_flow = format!("{}1{}", "{a: ".repeat(100_000), "}".repeat(100_000));
    let yaml_seq = format!("data:\n  k: {}\n", "[".repeat(300_000));
    let yaml_block = format!("{}x\n", "- ".repeat(300_000));
    for bomb in [json_bomb, yaml_flow, yaml_seq, yaml_block] {
        let health = tokio::spawn({
            let base = s.base.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(20)).await;
                let started = Instant::now();
                let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                    .build_http::<http_body_util::Full<Bytes>>();
                let r = client.get(format!("{base}/healthz").parse().unwrap()).await.unwrap_or_else(|e| panic!("healthz: {e}"));
                (r.status().as_u16(), started.elapsed())
            }
        });
        let (r, _elapsed) = apply(bomb).await;
        let e = r.status(400, "BadRequest");
        assert!(e["message"].as_str().unwrap().contains("nesting exceeds the limit of 100 levels"), "{e}");
        assert_eq!(health.await.unwrap().0, 200);
    }
    // A POST too, and a JSON merge patch.
    let deep = format!("{}1{}", "{\"a\":".repeat(50_000), "}".repeat(50_000));
    s.post_text(CMS, &deep).await.status(400, "BadRequest");
    assert_eq!(s.post(CMS, &cm("p")).await.code, 201);
    patch_bytes(s, &format!("{CMS}/p"), "application/merge-patch+json", deep).await.status(400, "BadRequest");
    let list = s.get(CMS).await.json();
    assert_eq!(list["items"].as_array().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_patch_bombs_are_refused_before_they_grow() {
    let server = Server::start(&[]);
    let s = &server;
    let mut o = cm("bomb");
    o["data"] = json!({"k": "x".repeat(1000)});
    assert_eq!(s.post(CMS, &o).await.code, 201);
    let doubling: Vec<Value> = (0..18).map(|i| json!({"op": "copy", "from": "/data", "path": format!("/data/c{i}")})).collect();
    let r = s.patch(&format!("{CMS}/bomb"), "application/json-patch+json", &Value::Array(doubling)).await;
    r.status(413, "RequestEntityTooLarge");
    let many = vec![json!({"op": "test", "path": "/metadata/name", "value": "bomb"}); 10_001];
    let r = s.patch(&format!("{CMS}/bomb"), "application/json-patch+json", &Value::Array(many)).await;
    let e = r.status(413, "RequestEntityTooLarge");
    assert!(e["message"].as_str().unwrap().contains("10000"), "{e}");
    assert_eq!(s.get(&format!("{CMS}/bomb")).await.json()["data"].as_object().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_kubernetes_refuses_is_refused() {
    let server = Server::start(&[]);
    let s = &server;
    let with = |path: &str, v: Value| {
        let mut o = cm("m");
        *o.pointer_mut(path).unwrap() = v;
        o
    };
    let cases = [
        (with("/metadata/labels", json!({"-x-": "y"})), "metadata.labels"),
        (with("/metadata/labels", json!({"a": "-bad-"})), "metadata.labels[a]"),
        (with("/metadata/labels", json!({"a": "v".repeat(64)})), "metadata.labels[a]"),
        (with("/metadata/labels", json!({"a/b/c": "v"})), "metadata.labels"),
        (with("/metadata/labels", json!({"a": 1})), ".metadata.labels.a"),
        (with("/data", json!({"a/b": "v"})), "data[a/b]"),
        (with("/data", json!({"..a": "v"})), "data[..a]"),
    ];
    for (o, field) in cases {
        let e = s.post(CMS, &o).await.status(422, "Invalid");
        assert!(e["details"]["causes"].as_array().unwrap().iter().any(|c| c["field"] == field), "{field}: {e}");
    }
    let mut o = cm("m");
    o["metadata"]["annotations"] = json!({"bad key": "v"});
    s.post(CMS, &o).await.status(422, "Invalid");
    o["metadata"]["annotations"] = json!({"a": "x".repeat(200 * 1024), "b": "y".repeat(60 * 1024)});
    let e = s.post(CMS, &o).await.status(422, "Invalid");
    assert!(e["message"].as_str().unwrap().contains("262144"), "{e}");
    o["metadata"]["annotations"] = json!({});
    o["metadata"]["finalizers"] = json!(["not a name"]);
    s.post(CMS, &o).await.status(422, "Invalid");
    assert!(s.get(CMS).await.json()["items"].as_array().unwrap().is_empty());
    // Valid ones pass, and a patch to an invalid label is refused too.
    let mut ok = cm("m");
    ok["metadata"]["labels"] = json!({"app.kubernetes.io/name": "web", "e": ""});
    ok["metadata"]["finalizers"] = json!(["example.com/keep"]);
    assert_eq!(s.post(CMS, &ok).await.code, 201);
    s.patch(&format!("{CMS}/m"), "application/merge-patch+json", &json!({"metadata": {"labels": {"x": "a b"}}}))
        .await
        .status(422, "Invalid");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yaml_values_json_cannot_hold_and_duplicate_fields() {
    let server = Server::start(&[]);
    let s = &server;
    for value in [".nan", ".inf", "-.inf"] {
        let body = format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: n\nbinaryData: {{}}\nimmutable: {value}\n");
        let r = s.send("POST", CMS, &[("content-type", "application/yaml")], body).await;
        r.status(400, "BadRequest");
    }
    let dup = r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d", "name": "d"}, "data": {"k": "1", "k": "2"}}"#;
    let strict = s.send("POST", &format!("{CMS}?fieldValidation=Strict"), &[("content-type", "application/json")], dup).await;
    let e = strict.status(400, "BadRequest");
    assert!(e["message"].as_str().unwrap().contains("duplicate field \"data.k\""), "{e}");
    let warn = s.send("POST", &format!("{CMS}?fieldValidation=Warn"), &[("content-type", "application/json")], dup).await;
    assert_eq!(warn.code, 201);
    let warnings: Vec<&str> = warn.headers.get_all("warning").iter().map(|v| v.to_str().unwrap()).collect();
    assert!(
        warnings.iter().any(|w| w.contains("duplicate field \\\"data.k\\\"") || w.contains("duplicate field \"data.k\"")),
        "{warnings:?}"
    );
    assert_eq!(warn.json()["data"]["k"], "2");
    let ignore = s
        .send("POST", &format!("{CMS}?fieldValidation=Ignore"), &[("content-type", "application/json")], dup.replace("\"d\"", "\"e\""))
        .await;
    assert_eq!(ignore.code, 201);
    assert!(ignore.headers.get("warning").is_none());
}

/// A conflict's causes are `metav1.StatusCause`s as client-go decodes them: the cause type under
/// `reason` (Go's JSON tag), so `apierrors.HasStatusCause(err, FieldManagerConflict)` matches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_causes_carry_their_type_as_reason() {
    let server = Server::start(&[]);
    let s = &server;
    let apply = |manager: &'static str, value: &'static str| async move {
        let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": value}});
        s.patch(&format!("{CMS}/c?fieldManager={manager}"), "application/apply-patch+yaml", &body).await
    };
    assert!(matches!(apply("alice", "1").await.code, 200 | 201));
    let e = apply("bob", "2").await.status(409, "Conflict");
    let cause = &e["details"]["causes"][0];
    assert_eq!((cause["reason"].as_str(), cause["field"].as_str()), (Some("FieldManagerConflict"), Some(".data.a")), "{e}");
    assert!(cause.get("type").is_none(), "{e}");
    let e = s.post(CMS, &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "-bad"}})).await.status(422, "Invalid");
    assert_eq!(e["details"]["causes"][0]["reason"], "FieldValueInvalid", "{e}");
}
