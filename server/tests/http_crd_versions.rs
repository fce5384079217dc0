//! CustomResourceDefinitions over HTTP as kube-apiserver serves them: every served version
//! (discovery in kube's version order, the OpenAPI documents, reads, writes and watches at
//! `/apis/GROUP/VERSION/…`, a deprecated version's `Warning`), an unserved version's 404,
//! `selectableFields` as field selectors, and a definition's deletion (its finalizer, 403 for new
//! objects, its objects deleted, then the definition and its type gone from discovery). kubectl
//! drives the same server where it is installed.

// Test support unwraps: a failed setup is a failed test.
#![allow(clippy::unwrap_used)]

#[path = "support/http_server.rs"]
mod http_server;

use bytes::Bytes;
use http_server::Server;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

fn schema(size: &str) -> Value {
    json!({"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "color": {"type": "string"}, "size": {"type": size}}}}}})
}

fn widgets() -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
        "versions": [
            {"name": "v1beta1", "served": true, "storage": false, "deprecated": true, "schema": schema("string")},
            {"name": "v1", "served": true, "storage": true, "schema": schema("integer"),
                "selectableFields": [{"jsonPath": ".spec.color"}]},
            {"name": "v2alpha1", "served": false, "storage": false, "schema": schema("boolean")},
        ]}})
}

fn widget(version: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": format!("example.com/{version}"), "kind": "Widget", "metadata": {"name": name}, "spec": spec})
}

fn at(version: &str) -> String {
    format!("/apis/example.com/{version}/namespaces/default/widgets")
}

async fn define(s: &Server) {
    let created = s.post(CRDS, &widgets()).await;
    assert_eq!(created.code, 201, "{}", String::from_utf8_lossy(&created.body));
}

fn names(list: &Value) -> Vec<String> {
    list["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap().to_string()).collect()
}

const DEPRECATED: &str = "299 - \"example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget\"";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_served_version_is_served() {
    let server = Server::start(&[]);
    let s = &server;
    define(s).await;

    // Discovery: both served versions, v1 preferred; not v2alpha1.
    let group = s.get("/apis/example.com").await.json();
    let versions: Vec<&str> = group["versions"].as_array().unwrap().iter().map(|v| v["version"].as_str().unwrap()).collect();
    assert_eq!(versions, ["v1", "v1beta1"]);
    assert_eq!(group["preferredVersion"]["version"], "v1");
    let listed = s.get("/apis").await.json();
    let g = listed["groups"].as_array().unwrap().iter().find(|g| g["name"] == "example.com").unwrap().clone();
    assert_eq!(g["versions"].as_array().unwrap().len(), 2);
    for v in ["v1", "v1beta1"] {
        let d = s.get(&format!("/apis/example.com/{v}")).await.json();
        assert_eq!(
            (d["groupVersion"].as_str(), d["resources"][0]["name"].as_str()),
            (Some(format!("example.com/{v}").as_str()), Some("widgets"))
        );
        // apiextensions-apiserver's order of a custom resource's verbs.
        assert_eq!(d["resources"][0]["verbs"], json!(["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"]));
    }
    s.get("/apis/example.com/v2alpha1").await.page_not_found();
    let agg = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    let doc = s.send("GET", "/apis", &[("accept", agg)], Bytes::new()).await.json();
    let item = doc["items"].as_array().unwrap().iter().find(|i| i["metadata"]["name"] == "example.com").unwrap().clone();
    let agg_versions: Vec<&str> = item["versions"].as_array().unwrap().iter().map(|v| v["version"].as_str().unwrap()).collect();
    assert_eq!(agg_versions, ["v1", "v1beta1"]);

    // OpenAPI: a document per served version.
    let index = s.get("/openapi/v3").await.json();
    assert!(index["paths"].get("apis/example.com/v1").is_some() && index["paths"].get("apis/example.com/v1beta1").is_some(), "{index}");
    assert!(index["paths"].get("apis/example.com/v2alpha1").is_none());
    let beta = s.get("/openapi/v3/apis/example.com/v1beta1").await.json();
    assert_eq!(beta["components"]["schemas"]["com.example.v1beta1.Widget"]["properties"]["spec"]["properties"]["size"]["type"], "string");
    let v2 = s.get("/openapi/v2").await.json();
    assert!(v2["definitions"].get("com.example.v1.Widget").is_some() && v2["definitions"].get("com.example.v1beta1.Widget").is_some());

    // Written at v1beta1 (with the deprecation warning), read at either version.
    let created = s.post(&at("v1beta1"), &widget("v1beta1", "a", json!({"color": "blue", "size": "big"}))).await;
    assert_eq!(created.code, 201, "{}", String::from_utf8_lossy(&created.body));
    assert_eq!(created.headers["warning"], DEPRECATED);
    let created = created.json();
    assert_eq!(created["apiVersion"], "example.com/v1beta1");
    assert_eq!(created["metadata"]["managedFields"][0]["apiVersion"], "example.com/v1beta1");
    let v1 = s.get(&format!("{}/a", at("v1"))).await;
    assert!(v1.headers.get("warning").is_none());
    assert_eq!(v1.json()["apiVersion"], "example.com/v1");
    let list = s.get(&at("v1beta1")).await;
    assert_eq!(list.headers["warning"], DEPRECATED);
    let list = list.json();
    assert_eq!((list["apiVersion"].as_str(), list["kind"].as_str()), (Some("example.com/v1beta1"), Some("WidgetList")));
    assert_eq!(list["items"][0]["apiVersion"], "example.com/v1beta1");
    // Each version its own schema: `size` is an integer at v1.
    s.post(&at("v1"), &widget("v1", "b", json!({"size": "big"}))).await.status(422, "Invalid");
    // Patches and deletes at v1beta1.
    let patched = s.patch(&format!("{}/a", at("v1beta1")), "application/merge-patch+json", &json!({"spec": {"color": "red"}})).await.json();
    assert_eq!((patched["apiVersion"].as_str(), patched["spec"]["color"].as_str()), (Some("example.com/v1beta1"), Some("red")));
    // A watch at v1beta1 sees objects written at v1 at v1beta1.
    assert_eq!(s.post(&at("v1"), &widget("v1", "c", json!({"size": 2}))).await.code, 201);
    let (code, lines) = s.watch_lines(&format!("{}?watch=1", at("v1beta1")), 2, &[]).await;
    assert_eq!(code, 200);
    assert!(lines.iter().all(|l| l["object"]["apiVersion"] == "example.com/v1beta1"), "{lines:?}");
    let deleted = s.send("DELETE", &format!("{}/c", at("v1beta1")), &[], Bytes::new()).await;
    assert_eq!((deleted.code, deleted.json()["status"].as_str()), (200, Some("Success")));
    s.get(&format!("{}/c", at("v1"))).await.status(404, "NotFound");
    // Not served: kube-apiserver's 404.
    s.get(&at("v2alpha1")).await.page_not_found();
    s.post(&at("v2alpha1"), &widget("v2alpha1", "d", json!({}))).await.page_not_found();

    // The storage version moves: storedVersions keep both.
    let mut def = s.get(&format!("{CRDS}/widgets.example.com")).await.json();
    def["spec"]["versions"][0]["storage"] = json!(true);
    def["spec"]["versions"][1]["storage"] = json!(false);
    let updated = s
        .send("PUT", &format!("{CRDS}/widgets.example.com"), &[("content-type", "application/json")], serde_json::to_vec(&def).unwrap())
        .await;
    assert_eq!(updated.code, 200, "{}", String::from_utf8_lossy(&updated.body));
    assert_eq!(updated.json()["status"]["storedVersions"], json!(["v1", "v1beta1"]));
    assert_eq!(s.get(&format!("{}/a", at("v1"))).await.json()["apiVersion"], "example.com/v1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selectable_fields_select_lists_and_watches() {
    let server = Server::start(&[]);
    let s = &server;
    define(s).await;
    assert_eq!(s.post(&at("v1"), &widget("v1", "a", json!({"color": "blue"}))).await.code, 201);
    assert_eq!(s.post(&at("v1"), &widget("v1", "b", json!({"color": "red"}))).await.code, 201);
    assert_eq!(names(&s.get(&format!("{}?fieldSelector=spec.color%3Dblue", at("v1"))).await.json()), ["a"]);
    assert_eq!(names(&s.get(&format!("{}?fieldSelector=spec.color!%3Dblue", at("v1"))).await.json()), ["b"]);
    assert_eq!(names(&s.get(&format!("{}?fieldSelector=metadata.name%3Da", at("v1beta1"))).await.json()), ["a"]);
    let refused = s.get(&format!("{}?fieldSelector=spec.color%3Dblue", at("v1beta1"))).await.status(400, "BadRequest");
    assert_eq!(refused["message"], "field label not supported: spec.color");
    let refused = s.get(&format!("{}?fieldSelector=spec.size%3D1", at("v1"))).await.status(400, "BadRequest");
    assert_eq!(refused["message"], "field label not supported: spec.size");
    let (code, lines) = s.watch_lines(&format!("{}?watch=1&fieldSelector=spec.color%3Dred", at("v1")), 1, &[]).await;
    assert_eq!(code, 200);
    assert_eq!(lines[0]["object"]["metadata"]["name"], "b");
}

/// Polls `path` (up to 10 s) until it answers `code`.
async fn until(s: &Server, path: &str, code: u16) {
    let start = Instant::now();
    while s.get(path).await.code != code {
        assert!(start.elapsed() < Duration::from_secs(10), "{path} did not answer {code}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_definition_takes_its_objects_and_its_type() {
    let server = Server::start(&[]);
    let s = &server;
    define(s).await;
    assert_eq!(s.post(&at("v1"), &widget("v1", "plain", json!({}))).await.code, 201);
    let mut held = widget("v1", "held", json!({}));
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    assert_eq!(s.post(&at("v1"), &held).await.code, 201);

    let answer = s.send("DELETE", &format!("{CRDS}/widgets.example.com"), &[], Bytes::new()).await;
    assert_eq!(answer.code, 200, "{}", String::from_utf8_lossy(&answer.body));
    let answer = answer.json();
    assert_eq!(answer["metadata"]["finalizers"], json!(["customresourcecleanup.apiextensions.k8s.io"]));
    // As apiextensions-apiserver marks it: no grace period, the generation kept.
    assert_eq!((answer["metadata"].get("deletionGracePeriodSeconds"), &answer["metadata"]["generation"]), (None, &json!(1)));
    let terminating = answer["status"]["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "Terminating").unwrap().clone();
    assert_eq!((terminating["status"].as_str(), terminating["reason"].as_str()), (Some("True"), Some("InstanceDeletionPending")));
    let refused = s.post(&at("v1"), &widget("v1", "late", json!({}))).await.status(403, "Forbidden");
    assert_eq!(
        refused["message"],
        "widgets.example.com \"late\" is forbidden: create not allowed while custom resource definition is terminating"
    );

    // The plain object goes; the held one is marked deleted and holds the definition.
    until(s, &format!("{}/plain", at("v1")), 404).await;
    let held = s.get(&format!("{}/held", at("v1"))).await.json();
    assert!(held["metadata"]["deletionTimestamp"].is_string(), "{held}");
    assert_eq!(s.get(&format!("{CRDS}/widgets.example.com")).await.code, 200);
    s.patch(&format!("{}/held", at("v1")), "application/merge-patch+json", &json!({"metadata": {"finalizers": null}})).await;

    // Then the definition goes, and its type with it.
    until(s, &format!("{CRDS}/widgets.example.com"), 404).await;
    s.get("/apis/example.com").await.page_not_found();
    s.get("/apis/example.com/v1").await.page_not_found();
    s.get(&at("v1")).await.page_not_found();
    assert!(!s.get("/apis").await.json()["groups"].as_array().unwrap().iter().any(|g| g["name"] == "example.com"));
    assert!(s.get("/openapi/v3").await.json()["paths"].get("apis/example.com/v1").is_none());
    assert!(s.get("/openapi/v2").await.json()["definitions"].get("com.example.v1.Widget").is_none());
    // The history of its objects stays: their log, and their state at a revision.
    let log = s.get(&format!("{}/held/log", at("v1"))).await;
    assert_eq!(log.code, 200, "{}", String::from_utf8_lossy(&log.body));
    assert!(log.json().as_array().unwrap().len() >= 3, "{}", log.json());
    let rv = first_revision(&log.json());
    let then = s.get(&format!("{}/held/at?revision={rv}", at("v1"))).await;
    assert_eq!(then.code, 200, "{}", String::from_utf8_lossy(&then.body));
    assert_eq!(then.json()["metadata"]["name"], "held");
    // Nothing else answers for them.
    s.get(&format!("{}/held", at("v1"))).await.page_not_found();
}

/// The revision of the first write in an object's log.
fn first_revision(log: &Value) -> u64 {
    log.as_array().unwrap().iter().filter_map(|e| e["revision"].as_u64()).min().unwrap()
}

/// A CRD converting through a webhook: accepted, its other versions listed, but only the
/// storage version answers; the others fail as kube-apiserver fails when it cannot call the
/// webhook (500, a conversion error).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_conversion_answers_a_conversion_error_off_the_storage_version() {
    let server = Server::start(&[]);
    let s = &server;
    let mut def = widgets();
    def["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"],
        "clientConfig": {"url": "https://example.com/convert"}}});
    let created = s.post(CRDS, &def).await;
    assert_eq!(created.code, 201, "{}", String::from_utf8_lossy(&created.body));
    assert_eq!(s.post(&at("v1"), &widget("v1", "a", json!({"size": 1}))).await.code, 201);
    let versions = s.get("/apis/example.com").await.json()["versions"].as_array().unwrap().len();
    assert_eq!(versions, 2);
    let failed = s.get(&format!("{}/a", at("v1beta1"))).await.status(500, "InternalError");
    assert!(failed["message"].as_str().unwrap().starts_with("conversion webhook for example.com/v1beta1, Kind=Widget failed"), "{failed}");
    s.get(&at("v1beta1")).await.status(500, "InternalError");
    s.post(&at("v1beta1"), &widget("v1beta1", "b", json!({}))).await.status(500, "InternalError");
    assert_eq!(s.get(&format!("{}/a", at("v1"))).await.code, 200);
}

/// kubectl against the same server: a deprecated version's warning, a fully qualified
/// `widgets.v1beta1.example.com`, and a field selector. Skipped without kubectl.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_reads_every_version() {
    let Some(kubectl) =
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).map(|d| d.join("kubectl")).find(|p| p.is_file())
    else {
        eprintln!("kubectl not installed: skipped");
        return;
    };
    let server = Server::start(&[]);
    let s = &server;
    define(s).await;
    assert_eq!(s.post(&at("v1"), &widget("v1", "a", json!({"color": "blue"}))).await.code, 201);
    assert_eq!(s.post(&at("v1"), &widget("v1", "b", json!({"color": "red"}))).await.code, 201);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("kubeconfig");
    std::fs::write(
        &config,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fs\n  cluster: {{server: \"{}\"}}\nusers:\n- name: u\n  user: {{}}\ncontexts:\n- name: fs\n  context: {{cluster: fs, user: u, namespace: default}}\ncurrent-context: fs\n",
            s.base
        ),
    )
    .unwrap();
    let run = |args: &[&str]| {
        let out =
            std::process::Command::new(&kubectl).arg("--kubeconfig").arg(&config).env("HOME", dir.path()).args(args).output().unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout).to_string(), String::from_utf8_lossy(&out.stderr).to_string());
        assert!(out.status.success(), "kubectl {args:?}: {stdout}{stderr}");
        (stdout, stderr)
    };
    let (out, err) = run(&["get", "widgets.v1beta1.example.com", "a", "-o", "jsonpath={.apiVersion}"]);
    assert_eq!(out, "example.com/v1beta1");
    assert!(err.contains("example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget"), "{err}");
    let (out, _) = run(&["get", "widgets", "-o", "jsonpath={.items[*].apiVersion}"]);
    assert_eq!(out, "example.com/v1 example.com/v1");
    let (out, _) = run(&["get", "widgets", "--field-selector", "spec.color=red", "-o", "name"]);
    assert_eq!(out.trim(), "widget.example.com/b");
}
