//! The same rules through every door: namespaces (label, finalizer, `Active`), the `scale`
//! subresource, field validation, a CRD's type and the Kubernetes `Status` of a failure answer
//! the same over HTTP, gRPC, the embedded API and the CLI, because each door only translates
//! into the request layer and the rules live in the engine.

// Test support unwraps: a failed setup is a failed test.
#![allow(clippy::unwrap_used)]

#[path = "support/http_server.rs"]
mod http_server;

use fieldstore_engine::store::{Collection, FieldValidation, GetOptions, ObjectKey, Options, Store, WriteOptions};
use fieldstore_server::proto::pb::{self, store_client::StoreClient};
use http_server::Server;
use serde::Deserialize;
use serde_json::{json, Value};
use tonic::transport::Channel;

async fn grpc(s: &Server) -> StoreClient<Channel> {
    StoreClient::new(Channel::from_shared(format!("http://{}", s.grpc)).unwrap().connect().await.unwrap())
}

fn body(v: &Value) -> Option<pb::Body> {
    Some(pb::Body { content_type: "application/json".into(), data: serde_json::to_vec(v).unwrap().into() })
}

fn obj(resp: pb::ObjectResponse) -> Value {
    serde_json::from_slice(&resp.object.unwrap().data).unwrap()
}

fn namespace(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
}

/// What every door's new namespace must be, as kube-apiserver makes it.
fn assert_kubernetes_namespace(ns: &Value, name: &str, creator: &str) {
    assert_eq!(ns["metadata"]["labels"]["kubernetes.io/metadata.name"], name, "{ns}");
    assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]), "{ns}");
    assert_eq!(ns["status"], json!({"phase": "Active"}), "{ns}");
    // The label is the creator's (defaulted before its fields are tracked, as kube-apiserver's
    // decoding defaults are); the phase and the finalizer are the strategy's, owned by nobody.
    let entries = ns["metadata"]["managedFields"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{ns}");
    assert_eq!(entries[0]["manager"], creator);
    assert_eq!(entries[0]["fieldsV1"], json!({"f:metadata": {"f:labels": {".": {}, "f:kubernetes.io/metadata.name": {}}}}));
}

/// `metav1.Status` as client-go decodes it: a cause's type is its JSON `reason`.
#[derive(Debug, Deserialize)]
struct K8sStatus {
    code: u16,
    reason: String,
    #[serde(default)]
    details: Option<K8sDetails>,
}

#[derive(Debug, Deserialize)]
struct K8sDetails {
    #[serde(default)]
    name: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    causes: Vec<K8sCause>,
}

#[derive(Debug, Deserialize)]
struct K8sCause {
    reason: String,
    field: String,
}

impl K8sStatus {
    /// client-go's `apierrors.HasStatusCause`.
    fn has_cause(&self, cause: &str) -> bool {
        self.details.as_ref().is_some_and(|d| d.causes.iter().any(|c| c.reason == cause))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespaces_scale_and_validation_are_the_same_over_http_and_grpc() {
    let s = Server::start(&[]);
    let mut c = grpc(&s).await;
    // Namespaces: one write each, through either door.
    let over_http = s.post("/api/v1/namespaces", &namespace("by-http")).await;
    assert_eq!(over_http.code, 201);
    assert_kubernetes_namespace(&over_http.json(), "by-http", "anonymous");
    let req = pb::WriteRequest {
        resource: "namespaces".into(),
        body: body(&namespace("by-grpc")),
        field_manager: "m".into(),
        ..Default::default()
    };
    let over_grpc = obj(c.create(req).await.unwrap().into_inner());
    assert_kubernetes_namespace(&over_grpc, "by-grpc", "m");
    assert_eq!(over_grpc["metadata"]["resourceVersion"], s.get("/api/v1/namespaces/by-grpc").await.json()["metadata"]["resourceVersion"]);
    // A dry run shows the same object and writes nothing.
    let dry = s.post("/api/v1/namespaces?dryRun=All", &namespace("dry")).await.json();
    assert_eq!(dry["status"]["phase"], "Active");
    s.get("/api/v1/namespaces/dry").await.status(404, "NotFound");
    // An update keeps the finalizers and the label.
    let mut changed = over_grpc.clone();
    changed["spec"]["finalizers"] = json!([]);
    changed["metadata"]["labels"] = json!({"team": "a"});
    let req = pb::WriteRequest { resource: "namespaces".into(), body: body(&changed), field_manager: "m".into(), ..Default::default() };
    let updated = obj(c.update(req).await.unwrap().into_inner());
    assert_eq!(updated["spec"]["finalizers"], json!(["kubernetes"]));
    assert_eq!(updated["metadata"]["labels"], json!({"kubernetes.io/metadata.name": "by-grpc", "team": "a"}));

    // The scale subresource: read and written through either door.
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    assert_eq!(s.post("/apis/apps/v1/namespaces/default/deployments", &deployment).await.code, 201);
    let web = pb::ObjectRef { resource: "deployments".into(), namespace: "default".into(), name: "web".into() };
    let get_scale = pb::GetRequest { object: Some(web.clone()), subresource: "scale".into(), ..Default::default() };
    let scale = obj(c.get(get_scale.clone()).await.unwrap().into_inner());
    assert_eq!(scale, s.get("/apis/apps/v1/namespaces/default/deployments/web/scale").await.json());
    assert_eq!(
        (scale["kind"].as_str(), scale["spec"]["replicas"].as_i64(), scale["status"]["selector"].as_str()),
        (Some("Scale"), Some(1), Some("app=web"))
    );
    let patch = pb::PatchRequest {
        object: Some(web.clone()),
        patch_type: "merge".into(),
        patch: body(&json!({"spec": {"replicas": 4}})),
        subresource: "scale".into(),
        ..Default::default()
    };
    assert_eq!(obj(c.patch(patch).await.unwrap().into_inner())["spec"]["replicas"], 4);
    let mut put = scale.clone();
    put["spec"]["replicas"] = json!(6);
    put["metadata"]["resourceVersion"] = json!("1");
    let stale = pb::WriteRequest {
        resource: "deployments".into(),
        namespace: "default".into(),
        body: body(&put),
        subresource: "scale".into(),
        ..Default::default()
    };
    let err = c.update(stale).await.unwrap_err();
    let status: K8sStatus = serde_json::from_slice(err.details()).unwrap();
    assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));
    assert_eq!(s.get("/apis/apps/v1/namespaces/default/deployments/web").await.json()["spec"]["replicas"], 4);

    // Field validation: an undeclared field, by each mode, through either door.
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "v", "namespace": "default"}, "data": {"a": "1"}, "extra": {"x": 1}});
    let write = |v: &str| pb::WriteRequest {
        resource: "configmaps".into(),
        body: body(&cm),
        field_manager: "m".into(),
        field_validation: v.into(),
        ..Default::default()
    };
    let strict = c.create(write("Strict")).await.unwrap_err();
    let strict_http = s.post("/api/v1/namespaces/default/configmaps?fieldValidation=Strict", &cm).await.status(400, "BadRequest");
    assert_eq!(serde_json::from_slice::<Value>(strict.details()).unwrap(), strict_http);
    assert!(strict.message().contains("unknown field \"extra\""), "{}", strict.message());
    // Without a mode, gRPC refuses as the schema's validation does: 422, naming the object.
    let invalid: K8sStatus = serde_json::from_slice(c.create(write("")).await.unwrap_err().details()).unwrap();
    assert_eq!((invalid.code, invalid.reason.as_str()), (422, "Invalid"));
    let details = invalid.details.unwrap();
    assert_eq!((details.name.as_str(), details.kind.as_str(), details.causes[0].field.as_str()), ("v", "ConfigMap", ".extra"));
    let warned = s.post("/api/v1/namespaces/default/configmaps", &cm).await;
    assert_eq!(warned.code, 201);
    assert_eq!(warned.headers["warning"], "299 - \"unknown field \\\"extra\\\"\"");
    assert!(warned.json().get("extra").is_none());
    let mut ignored = write("Ignore");
    ignored.body = body(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w", "namespace": "default"}, "extra": 1}));
    assert!(obj(c.create(ignored).await.unwrap().into_inner()).get("extra").is_none());

    // A conflict's causes, as client-go's apierrors.HasStatusCause reads them, from both doors.
    let apply = |manager: &str, v: &str| pb::WriteRequest {
        resource: "configmaps".into(),
        body: body(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "v", "namespace": "default"}, "data": {"a": v}})),
        field_manager: manager.into(),
        ..Default::default()
    };
    c.apply(apply("one", "1")).await.unwrap();
    let conflict: K8sStatus = serde_json::from_slice(c.apply(apply("two", "2")).await.unwrap_err().details()).unwrap();
    assert!(conflict.has_cause("FieldManagerConflict"), "{conflict:?}");
    let over_http = s
        .patch(
            "/api/v1/namespaces/default/configmaps/v?fieldManager=two",
            "application/apply-patch+yaml",
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "2"}}),
        )
        .await
        .status(409, "Conflict");
    let conflict: K8sStatus = serde_json::from_value(over_http).unwrap();
    assert!(conflict.has_cause("FieldManagerConflict"), "{conflict:?}");
    // The same apply as a gRPC patch of type apply.
    let patch = pb::PatchRequest {
        object: Some(pb::ObjectRef { resource: "configmaps".into(), namespace: "default".into(), name: "v".into() }),
        patch_type: "apply".into(),
        patch: body(&json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "3"}})),
        field_manager: "two".into(),
        force: true,
        ..Default::default()
    };
    assert_eq!(obj(c.patch(patch).await.unwrap().into_inner())["data"]["a"], "3");
}

#[test]
fn namespaces_and_crds_are_the_same_embedded() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), Options::default()).unwrap();
    let ns = store.create(&Collection::new("namespaces", None), &namespace("embedded"), &WriteOptions::new("app")).unwrap();
    assert_kubernetes_namespace(&ns, "embedded", "app");
    store.ensure_namespaces().unwrap();
    for name in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        let ns = store.get(&ObjectKey::new("namespaces", None, name), &GetOptions::default()).unwrap();
        assert_kubernetes_namespace(&ns, name, "fieldstore");
    }
    // A CRD written by any door defines its type in the same write.
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                     "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}}]}});
    // Its type is served before anyone hears of the definition: a watcher of definitions that
    // looks the type up the moment the definition's event arrives finds it.
    let mut definitions = store.watch(&Collection::new("customresourcedefinitions", None), &Default::default()).unwrap();
    let looker = {
        let store = store.clone();
        std::thread::spawn(move || loop {
            match definitions.next_timeout(std::time::Duration::from_secs(10)) {
                Some(fieldstore_engine::store::WatchEvent::Added(_)) => return store.resource_type("widgets.example.com").is_some(),
                Some(_) => {}
                None => return false,
            }
        })
    };
    store.create(&Collection::new("customresourcedefinitions", None), &crd, &WriteOptions::new("app")).unwrap();
    assert!(looker.join().unwrap(), "the type of a definition whose event was published is registered");
    let w = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "embedded"}, "spec": {"size": 3, "color": "red"}});
    // Field validation as a write option: the undeclared field dropped, with its warning.
    let opts = WriteOptions::new("app").field_validation(Some(FieldValidation::Warn));
    let written = store
        .write(fieldstore_engine::store::WriteVerb::Create, &Collection::new("widgets.example.com", Some("embedded")), &w, &opts)
        .unwrap();
    assert_eq!(written.warnings, vec!["unknown field \"spec.color\"".to_string()]);
    assert_eq!(written.object["spec"], json!({"size": 3}));
    // Strict refuses it with every undeclared field named.
    let strict = WriteOptions::new("app").field_validation(Some(FieldValidation::Strict));
    let mut w2 = w.clone();
    w2["metadata"]["name"] = json!("w2");
    w2["other"] = json!(1);
    let err = store.create(&Collection::new("widgets.example.com", Some("embedded")), &w2, &strict).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Widget in version \"v1\" cannot be handled as a Widget: strict decoding error: unknown field \"other\", unknown field \"spec.color\""
    );
}
