//! Protobuf DeleteOptions on a custom resource, as client-go sends them: a client configured for
//! protobuf (controller-runtime's, with `ContentType: application/vnd.kubernetes.protobuf`)
//! encodes the DeleteOptions of a delete in the resource's own group version, and
//! kube-apiserver decodes them there (meta/v1's options are registered in every group version).
#![allow(clippy::unwrap_used)]

#[path = "support/http_server.rs"]
mod http_server;

use bytes::Bytes;
use fieldstore_codec::k8s_protobuf::encode_envelope_value;
use fieldstore_codec::Envelope;
use http_server::Server;
use serde_json::{json, Value};

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";

/// DeleteOptions `options` in protobuf, in an envelope naming `api_version`.
fn delete_options(api_version: &str, options: &Value) -> Vec<u8> {
    let mut o = options.clone();
    o["apiVersion"] = json!("v1");
    o["kind"] = json!("DeleteOptions");
    let mut envelope = Envelope::decode(&encode_envelope_value(&o).unwrap()).unwrap();
    envelope.api_version = api_version.into();
    envelope.encode()
}

async fn widget(s: &Server, name: &str) -> Value {
    let mut code = 0;
    for _ in 0..100 {
        let r = s.post(WIDGETS, &json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}})).await;
        code = r.code;
        if code == 201 {
            return r.json();
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("create widget {name}: {code}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protobuf_delete_options_in_a_custom_resources_group_version() {
    let server = Server::start(&[]);
    let s = &server;
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}});
    assert_eq!(s.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", &crd).await.code, 201);
    let a = widget(s, "a").await;
    widget(s, "b").await;
    widget(s, "c").await;
    let del = |path: String, body: Vec<u8>| async move { s.send("DELETE", &path, &[("content-type", PROTOBUF)], body).await };

    // The options are read, not skipped: a wrong uid precondition is the 409 it is in JSON.
    let r = del(format!("{WIDGETS}/a"), delete_options("example.com/v1", &json!({"preconditions": {"uid": "not-its-uid"}}))).await;
    r.status(409, "Conflict");
    let r = del(
        format!("{WIDGETS}/a"),
        delete_options("example.com/v1", &json!({"preconditions": {"uid": a["metadata"]["uid"]}, "propagationPolicy": "Background"})),
    )
    .await;
    assert_eq!((r.code, r.json()["status"].as_str()), (200, Some("Success")), "{}", String::from_utf8_lossy(&r.body));
    // deletecollection (controller-runtime's DeleteAllOf).
    let r = del(WIDGETS.to_string(), delete_options("example.com/v1", &json!({"propagationPolicy": "Background"}))).await;
    assert_eq!(r.code, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(s.get(WIDGETS).await.json()["items"], json!([]));

    // Only the options kinds: any other kind of no built-in group is still refused.
    widget(s, "d").await;
    let mut envelope = Envelope::decode(&delete_options("example.com/v1", &json!({}))).unwrap();
    envelope.kind = "Widget".into();
    let r = s.send("DELETE", &format!("{WIDGETS}/d"), &[("content-type", PROTOBUF)], Bytes::from(envelope.encode())).await;
    r.status(400, "BadRequest");
}
