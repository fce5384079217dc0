//! Namespaces over the Kubernetes HTTP API of `fieldstore serve`, with kube-apiserver's answers
//! (observed on kube-apiserver 1.37.2, `tests/differential`): content only in namespaces that
//! exist (404) and are not terminating (403 `NamespaceTerminating`), the protected namespaces
//! (403), a deleted namespace `Terminating` until its contents are gone. Also a protobuf LIST,
//! encoded item by item, against the JSON one, on a server storing protobuf records.

// Test support unwraps: a failed setup is a failed test.
#![allow(clippy::unwrap_used)]

#[path = "support/http_server.rs"]
mod http_server;

use bytes::Bytes;
use fieldstore_codec::k8s_protobuf;
use http_server::Server;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn cm(name: &str, finalizers: &[&str]) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "finalizers": finalizers}, "data": {"k": "v"}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespaces_govern_their_contents_as_on_kube_apiserver() {
    let server = Server::start(&[]);
    let s = &server;
    let missing = s.post("/api/v1/namespaces/nowhere/configmaps", &cm("a", &[])).await;
    let status = missing.status(404, "NotFound");
    assert_eq!(status["message"], "namespaces \"nowhere\" not found");
    assert_eq!(status["details"], json!({"name": "nowhere", "kind": "namespaces"}));

    let denied = s.send("DELETE", "/api/v1/namespaces/default", &[], Bytes::new()).await;
    let status = denied.status(403, "Forbidden");
    assert_eq!(status["message"], "namespaces \"default\" is forbidden: this namespace may not be deleted");

    assert_eq!(
        s.post("/api/v1/namespaces", &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})).await.code,
        201
    );
    assert_eq!(s.post("/api/v1/namespaces/team/configmaps", &cm("held", &["example.com/hold"])).await.code, 201);
    let deleted = s.send("DELETE", "/api/v1/namespaces/team", &[], Bytes::new()).await;
    assert_eq!(deleted.code, 200);
    assert_eq!(deleted.json()["status"]["phase"], "Terminating");
    let late = s.post("/api/v1/namespaces/team/configmaps", &cm("late", &[])).await;
    let status = late.status(403, "Forbidden");
    assert_eq!(
        status["details"]["causes"],
        json!([{"reason": "NamespaceTerminating", "message": "namespace team is being terminated", "field": "metadata.namespace"}])
    );
    // The object with a finalizer holds the namespace; released, both go.
    let start = Instant::now();
    let held = loop {
        let held = s.get("/api/v1/namespaces/team/configmaps/held").await.json();
        if held["metadata"]["deletionTimestamp"].is_string() {
            break held;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "the held object not marked deleted: {held}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(s.get("/api/v1/namespaces/team").await.json()["status"]["phase"], "Terminating");
    let mut released = held.clone();
    released["metadata"]["finalizers"] = json!([]);
    let put = s.send("PUT", "/api/v1/namespaces/team/configmaps/held", &[("content-type", "application/json")], released.to_string()).await;
    assert_eq!(put.code, 200);
    while s.get("/api/v1/namespaces/team").await.code != 404 {
        assert!(start.elapsed() < Duration::from_secs(10), "the namespace is still there");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_protobuf_list_is_the_json_list_on_a_server_storing_protobuf() {
    let server = Server::start(&["--protobuf-storage"]);
    let s = &server;
    for i in 0..30 {
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("c{i:02}")}, "data": {"k": "v".repeat(i)}});
        assert_eq!(s.post("/api/v1/namespaces/default/configmaps", &obj).await.code, 201);
    }
    for path in ["/api/v1/namespaces/default/configmaps", "/api/v1/namespaces/default/configmaps?limit=7"] {
        let json_list = s.get(path).await.json();
        let pb = s.send("GET", path, &[("accept", "application/vnd.kubernetes.protobuf")], Bytes::new()).await;
        assert_eq!(pb.code, 200);
        assert_eq!(pb.headers["content-type"], "application/vnd.kubernetes.protobuf");
        let decoded: Value =
            serde_json::from_slice(&k8s_protobuf::decode_envelope(&pb.body, k8s_protobuf::JsonStyle::Compact).unwrap()).unwrap();
        assert_eq!(decoded["metadata"], json_list["metadata"], "{path}");
        let names = |l: &Value| l["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].clone()).collect::<Vec<_>>();
        assert_eq!(names(&decoded), names(&json_list), "{path}");
        assert_eq!(decoded["items"][3]["data"], json_list["items"][3]["data"]);
        assert_eq!(decoded["items"][3]["metadata"]["managedFields"], json_list["items"][3]["metadata"]["managedFields"]);
    }
}
