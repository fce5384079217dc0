//! The API groups kube-apiserver serves by default, as a client of `fieldstore serve` meets them
//! over HTTP: an `events.k8s.io/v1` Event (what kube-rs's Recorder and client-go's event
//! broadcaster write) created in protobuf and in JSON, read and listed in both; the groups in
//! discovery with kube-apiserver's scope and short names, legacy and aggregated.

// Test support unwraps: a failed setup is a failed test.
#![allow(clippy::unwrap_used)]

mod common;
#[path = "support/http_server.rs"]
mod http_server;

use bytes::Bytes;
use http_server::Server;
use serde_json::{json, Value};

const EVENTS: &str = "/apis/events.k8s.io/v1/namespaces/default/events";
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

fn event(name: &str) -> Value {
    json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": name, "namespace": "default"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "example.com/controller", "reportingInstance": "controller-0",
        "action": "Reconcile", "reason": "Synced", "type": "Normal", "note": "all good",
        "regarding": {"kind": "Pod", "namespace": "default", "name": "web-0", "apiVersion": "v1"},
        "series": {"count": 2, "lastObservedTime": "2026-01-01T00:00:05.000000Z"},
    })
}

/// The object in Kubernetes protobuf (`k8s\0` envelope), as `fieldstore envelope encode` writes it.
fn protobuf(object: &Value) -> Vec<u8> {
    let out = common::fieldstore(&["envelope".as_ref(), "encode".as_ref()], object.to_string().as_bytes());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.starts_with(b"k8s\x00"));
    out.stdout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_k8s_io_event_in_protobuf_and_json() {
    let server = Server::start(&[]);
    let s = &server;
    // Created in protobuf, answered in protobuf (client-go's event broadcaster).
    let created = s.send("POST", EVENTS, &[("content-type", PROTOBUF), ("accept", PROTOBUF)], Bytes::from(protobuf(&event("pb")))).await;
    assert_eq!(created.code, 201, "{}", String::from_utf8_lossy(&created.body));
    assert_eq!(created.headers["content-type"], PROTOBUF);
    assert!(created.body.starts_with(b"k8s\x00"));
    // Created in JSON (kube-rs's Recorder).
    let created = s.post(EVENTS, &event("js")).await;
    assert_eq!(created.code, 201, "{}", String::from_utf8_lossy(&created.body));
    assert_eq!(created.json()["series"]["count"], 2);
    // Read back in JSON: what was sent, both ways.
    for name in ["pb", "js"] {
        let got = s.get(&format!("{EVENTS}/{name}")).await.json();
        assert_eq!((got["apiVersion"].as_str(), got["kind"].as_str()), (Some("events.k8s.io/v1"), Some("Event")));
        assert_eq!(got["regarding"]["name"], "web-0");
        assert_eq!(got["eventTime"], "2026-01-01T00:00:00.000000Z");
        assert_eq!(got["series"]["lastObservedTime"], "2026-01-01T00:00:05.000000Z");
        assert_eq!(got["note"], "all good");
    }
    // Listed in JSON and protobuf.
    let list = s.get(EVENTS).await.json();
    assert_eq!(list["kind"], "EventList");
    assert_eq!(list["items"].as_array().unwrap().len(), 2);
    let list_pb = s.send("GET", EVENTS, &[("accept", PROTOBUF)], Bytes::new()).await;
    assert_eq!((list_pb.code, list_pb.headers["content-type"].to_str().unwrap()), (200, PROTOBUF));
    assert!(list_pb.body.starts_with(b"k8s\x00"));
    // A field the protobuf message cannot hold is refused, as for every built-in kind.
    let mut bad = event("bad");
    bad["series"]["count"] = json!("two");
    s.post(EVENTS, &bad).await.status(422, "Invalid");
    // The core group's Event is its own resource, and keeps the short name "ev".
    assert_eq!(s.get("/api/v1/namespaces/default/events").await.json()["items"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_groups_in_discovery_as_kube_apiserver_serves_them() {
    let server = Server::start(&[]);
    let s = &server;
    let groups = s.get("/apis").await.json();
    let names: Vec<&str> = groups["groups"].as_array().unwrap().iter().filter_map(|g| g["name"].as_str()).collect();
    for g in [
        "events.k8s.io",
        "storage.k8s.io",
        "admissionregistration.k8s.io",
        "scheduling.k8s.io",
        "node.k8s.io",
        "certificates.k8s.io",
        "flowcontrol.apiserver.k8s.io",
    ] {
        assert!(names.contains(&g), "{g} in {names:?}");
    }
    // (group/version, resource, kind, namespaced, short names, subresources) as kube-apiserver 1.37 lists them.
    type Resource<'a> = (&'a str, &'a str, &'a str, bool, &'a [&'a str], &'a [&'a str]);
    let expected: &[Resource] = &[
        ("events.k8s.io/v1", "events", "Event", true, &["ev"], &[]),
        ("storage.k8s.io/v1", "storageclasses", "StorageClass", false, &["sc"], &[]),
        ("storage.k8s.io/v1", "csidrivers", "CSIDriver", false, &[], &[]),
        ("storage.k8s.io/v1", "csinodes", "CSINode", false, &[], &["status"]),
        ("storage.k8s.io/v1", "volumeattachments", "VolumeAttachment", false, &[], &["status"]),
        ("storage.k8s.io/v1", "csistoragecapacities", "CSIStorageCapacity", true, &[], &[]),
        ("storage.k8s.io/v1", "volumeattributesclasses", "VolumeAttributesClass", false, &["vac"], &[]),
        ("admissionregistration.k8s.io/v1", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", false, &[], &[]),
        ("admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", false, &[], &[]),
        ("admissionregistration.k8s.io/v1", "validatingadmissionpolicies", "ValidatingAdmissionPolicy", false, &[], &["status"]),
        ("admissionregistration.k8s.io/v1", "validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding", false, &[], &[]),
        ("scheduling.k8s.io/v1", "priorityclasses", "PriorityClass", false, &["pc"], &[]),
        ("node.k8s.io/v1", "runtimeclasses", "RuntimeClass", false, &[], &[]),
        ("certificates.k8s.io/v1", "certificatesigningrequests", "CertificateSigningRequest", false, &["csr"], &["status"]),
        ("flowcontrol.apiserver.k8s.io/v1", "flowschemas", "FlowSchema", false, &[], &["status"]),
        ("flowcontrol.apiserver.k8s.io/v1", "prioritylevelconfigurations", "PriorityLevelConfiguration", false, &[], &["status"]),
    ];
    for (gv, plural, kind, namespaced, short, subresources) in expected {
        let list = s.get(&format!("/apis/{gv}")).await.json();
        let resources = list["resources"].as_array().unwrap();
        let r = resources.iter().find(|r| r["name"] == *plural).unwrap_or_else(|| panic!("{gv} {plural}: {list}"));
        assert_eq!((r["kind"].as_str(), r["namespaced"].as_bool()), (Some(*kind), Some(*namespaced)), "{r}");
        assert_eq!(r["shortNames"].as_array().map_or(0, Vec::len), short.len(), "{r}");
        for sub in *subresources {
            assert!(resources.iter().any(|r| r["name"] == format!("{plural}/{sub}")), "{gv} {plural}/{sub}");
        }
    }
    // Each kind's schema is published, so clients can validate and `kubectl explain` works.
    let v3 = s.get("/openapi/v3/apis/storage.k8s.io/v1").await;
    assert_eq!(v3.code, 200);
    assert!(v3.json()["components"]["schemas"]["io.k8s.api.storage.v1.StorageClass"].is_object());
    // A cluster-scoped kind is written without a namespace; its short name resolves.
    let sc =
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "fast"}, "provisioner": "example.com/disk"});
    assert_eq!(s.post("/apis/storage.k8s.io/v1/storageclasses", &sc).await.code, 201);
    let pc = json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000});
    let created = s.post("/apis/scheduling.k8s.io/v1/priorityclasses", &pc).await.json();
    assert_eq!(created["metadata"]["generation"], 1);
}

const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// Aggregated discovery, as kubectl 1.30+ and client-go ask for it first: the groups kube-apiserver
/// 1.37 answered (`fixtures/aggregated-discovery-kube-apiserver-1.37.json`) are answered alike,
/// field for field; other `Accept`s keep the legacy documents.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aggregated_discovery_as_kube_apiserver_answers_it() {
    let server = Server::start(&[]);
    let s = &server;
    let accept = format!("{AGGREGATED},application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json");
    let apis = s.send("GET", "/apis", &[("accept", &accept)], Bytes::new()).await;
    assert_eq!((apis.code, apis.headers["content-type"].to_str().unwrap()), (200, AGGREGATED));
    let apis = apis.json();
    assert_eq!((apis["kind"].as_str(), apis["apiVersion"].as_str()), (Some("APIGroupDiscoveryList"), Some("apidiscovery.k8s.io/v2")));
    let items = apis["items"].as_array().unwrap();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/aggregated-discovery-kube-apiserver-1.37.json");
    let observed: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    for want in observed["items"].as_array().unwrap() {
        let name = &want["metadata"]["name"];
        let got = items.iter().find(|g| g["metadata"]["name"] == *name).unwrap_or_else(|| panic!("no group {name}"));
        assert_eq!(got, want, "group {name}");
    }
    // The reviews are listed create-only; the core group is /api's.
    let authz = items.iter().find(|g| g["metadata"]["name"] == "authorization.k8s.io").unwrap();
    let ssar = authz["versions"][0]["resources"].as_array().unwrap().iter().find(|r| r["resource"] == "selfsubjectaccessreviews").unwrap();
    assert_eq!((ssar["verbs"].clone(), ssar["scope"].clone()), (json!(["create"]), json!("Cluster")));
    assert!(items.iter().all(|g| g["metadata"]["name"].is_string()));
    let core = s.send("GET", "/api", &[("accept", &accept)], Bytes::new()).await.json();
    assert_eq!(core["items"].as_array().unwrap().len(), 1);
    assert_eq!(core["items"][0]["metadata"], json!({}));
    let cm =
        core["items"][0]["versions"][0]["resources"].as_array().unwrap().iter().find(|r| r["resource"] == "configmaps").unwrap().clone();
    assert_eq!(
        cm,
        json!({"resource": "configmaps", "responseKind": {"group": "", "version": "", "kind": "ConfigMap"}, "scope": "Namespaced",
            "singularResource": "configmap", "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
            "shortNames": ["cm"]})
    );
    // Legacy for every other Accept.
    let legacy = s.send("GET", "/apis", &[("accept", "application/json, */*")], Bytes::new()).await;
    assert_eq!(
        (legacy.headers["content-type"].to_str().unwrap(), legacy.json()["kind"].as_str()),
        ("application/json", Some("APIGroupList"))
    );
    let v2beta1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
    assert_eq!(s.send("GET", "/api", &[("accept", v2beta1)], Bytes::new()).await.json()["kind"], "APIVersions");
}
