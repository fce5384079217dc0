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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_finalize_subresource_sets_spec_finalizers_as_on_kube_apiserver() {
    let server = Server::start(&[]);
    let s = &server;
    let put =
        |path: &'static str, v: Value| async move { s.send("PUT", path, &[("content-type", "application/json")], v.to_string()).await };
    let ns = |name: &str| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
    assert_eq!(s.post("/api/v1/namespaces", &ns("fin")).await.code, 201);

    // On an active namespace: spec.finalizers and metadata change, status stays; the write is
    // the manager's entry of the `finalize` subresource.
    let mut live = s.get("/api/v1/namespaces/fin").await.json();
    live["spec"]["finalizers"] = json!(["kubernetes", "example.com/x"]);
    live["metadata"]["labels"]["new"] = json!("y");
    live["status"]["phase"] = json!("Terminating");
    let done = put("/api/v1/namespaces/fin/finalize?fieldManager=me", live.clone()).await;
    assert_eq!(done.code, 200, "{}", done.json());
    let out = done.json();
    assert_eq!(out["spec"]["finalizers"], json!(["kubernetes", "example.com/x"]));
    assert_eq!((out["status"]["phase"].as_str(), out["metadata"]["labels"]["new"].as_str()), (Some("Active"), Some("y")));
    let entry = out["metadata"]["managedFields"].as_array().unwrap().iter().find(|e| e["manager"] == "me").unwrap().clone();
    assert_eq!(entry["subresource"], "finalize");
    assert!(entry["fieldsV1"]["f:spec"]["f:finalizers"].is_object(), "{entry}");

    // Names checked as kube-apiserver checks them; a stale resourceVersion is a conflict.
    let mut bad = out.clone();
    bad["spec"]["finalizers"] = json!(["bad name", "x/y/z"]);
    let refused = put("/api/v1/namespaces/fin/finalize", bad).await;
    let status = refused.status(422, "Invalid");
    let fields: Vec<&str> = status["details"]["causes"].as_array().unwrap().iter().map(|c| c["field"].as_str().unwrap()).collect();
    assert_eq!(fields, ["spec.finalizers[0]", "spec.finalizers[0]", "spec.finalizers[1]"]);
    assert!(status["details"]["causes"][1]["message"]
        .as_str()
        .unwrap()
        .ends_with("name is neither a standard finalizer name nor is it fully qualified"));
    assert_eq!(put("/api/v1/namespaces/fin/finalize", live).await.code, 409);
    assert_eq!(s.get("/api/v1/namespaces/fin/finalize").await.code, 405);
    assert_eq!(s.get("/api/v1/namespaces/default/configmaps/x/finalize").await.code, 404);

    // No finalizers left: no `finalizers` (Go's omitempty), and so no field for the manager.
    assert_eq!(s.post("/api/v1/namespaces", &ns("emptied")).await.code, 201);
    let empty = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "emptied"}, "spec": {"finalizers": []}});
    let out = put("/api/v1/namespaces/emptied/finalize?fieldManager=emptier", empty).await.json();
    assert!(out["spec"].get("finalizers").is_none(), "{out}");
    assert!(!out["metadata"]["managedFields"].as_array().unwrap().iter().any(|e| e["manager"] == "emptier"), "{out}");

    // A namespace held Terminating by an object's finalizer: emptying spec.finalizers through
    // finalize deletes it at once, and the held object stays, as on kube-apiserver.
    assert_eq!(s.post("/api/v1/namespaces/fin/configmaps", &cm("held", &["example.com/hold"])).await.code, 201);
    assert_eq!(s.send("DELETE", "/api/v1/namespaces/fin", &[], Bytes::new()).await.code, 200);
    let start = Instant::now();
    while !s.get("/api/v1/namespaces/fin/configmaps/held").await.json()["metadata"]["deletionTimestamp"].is_string() {
        assert!(start.elapsed() < Duration::from_secs(10), "the held object not marked deleted");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut stuck = s.get("/api/v1/namespaces/fin").await.json();
    assert_eq!(stuck["status"]["phase"], "Terminating");
    stuck["spec"]["finalizers"] = json!([]);
    let gone = put("/api/v1/namespaces/fin/finalize", stuck).await;
    assert_eq!(gone.code, 200, "{}", gone.json());
    assert_eq!(s.get("/api/v1/namespaces/fin").await.code, 404);
    assert_eq!(s.get("/api/v1/namespaces/fin/configmaps/held").await.code, 200);
}
