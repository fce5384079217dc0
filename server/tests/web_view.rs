//! The web view's server side over HTTP: `/ui/` and its assets (without a token; off with
//! `--ui=false`), the object at a revision (`…/NAME/at?revision=N`), and
//! `/apis/fieldstore.io/v1/{access,renamemanager,release}` with their errors and authorization.
//! The pages themselves are tested in a real browser by `tests/browser/test_web_view.py`.

// Test support unwraps: a failed setup is a failed test.
#![allow(clippy::unwrap_used)]

#[path = "support/http_server.rs"]
mod http_server;

use bytes::Bytes;
use http_server::{Resp, Server};
use serde_json::{json, Value};

/// Server-side applies `v` at `path` as `manager` (forced); the object written.
async fn apply(s: &Server, path: &str, manager: &str, v: &Value) -> Value {
    let r = s
        .send(
            "PATCH",
            &format!("{path}?fieldManager={manager}&force=true"),
            &[("content-type", "application/apply-patch+yaml")],
            serde_json::to_vec(v).unwrap(),
        )
        .await;
    assert_eq!(r.code / 100, 2, "{}", String::from_utf8_lossy(&r.body));
    r.json()
}

const CMS: &str = "/api/v1/namespaces/default/configmaps";

fn cm(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": data})
}

fn rv(v: &Value) -> u64 {
    v["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ui_is_served_on_loopback_and_can_be_turned_off() {
    let s = Server::start(&[]);
    let page = s.get("/ui/").await;
    assert_eq!(page.code, 200);
    assert!(String::from_utf8_lossy(&page.body).contains("<script src=\"app.js\""));
    assert!(page.headers["content-security-policy"].to_str().unwrap().contains("default-src 'self'"));
    let js = s.get("/ui/object.js").await;
    assert_eq!((js.code, js.headers["content-type"].to_str().unwrap()), (200, "text/javascript; charset=utf-8"));
    assert_eq!(s.get("/ui/nothing.js").await.code, 404);
    let redirect = s.get("/ui").await;
    assert_eq!((redirect.code, redirect.headers["location"].to_str().unwrap()), (308, "/ui/"));
    // The API beside it is untouched.
    assert_eq!(s.get("/api").await.code, 200);
    drop(s);

    let off = Server::start(&["--ui=false"]);
    off.get("/ui/").await.page_not_found();
    assert_eq!(off.get("/api").await.code, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn object_at_a_revision() {
    let s = Server::start(&[]);
    let path = format!("{CMS}/c");
    let r1 = rv(&apply(&s, &path, "a", &cm(json!({"x": "1"}))).await);
    let r2 = rv(&apply(&s, &path, "b", &cm(json!({"x": "2", "y": "3"}))).await);
    let at1 = s.get(&format!("{path}/at?revision={r1}")).await;
    assert_eq!(at1.code, 200);
    assert_eq!((at1.json()["data"].clone(), rv(&at1.json())), (json!({"x": "1"}), r1));
    assert_eq!(s.get(&format!("{path}/at?revision={r2}")).await.json()["data"], json!({"x": "2", "y": "3"}));
    s.get(&format!("{path}/at?revision={}", r1 - 1)).await.status(404, "NotFound");
    s.get(&format!("{path}/at")).await.status(400, "BadRequest");
    s.get(&format!("{path}/at?revision=x")).await.status(400, "BadRequest");
    assert_eq!(s.post_text(&format!("{path}/at?revision={r1}"), "{}").await.code, 405);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rename_and_release_managers() {
    let s = Server::start(&[]);
    let path = format!("{CMS}/c");
    apply(&s, &path, "a", &cm(json!({"x": "1"}))).await;
    apply(&s, &path, "b", &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"y": "2"}})).await;
    let access = s.get("/apis/fieldstore.io/v1/access?verb=admin").await.json();
    assert_eq!(access, json!({"user": "anonymous", "allowed": true}));
    s.get("/apis/fieldstore.io/v1/access").await.status(400, "BadRequest");
    s.post_text("/apis/fieldstore.io/v1/renamemanager", "{\"from\": \"a\"}").await.status(400, "BadRequest");
    s.post_text("/apis/fieldstore.io/v1/renamemanager", "not json").await.status(400, "BadRequest");
    assert_eq!(s.get("/apis/fieldstore.io/v1/renamemanager").await.code, 405);
    let renamed = s.post_text("/apis/fieldstore.io/v1/renamemanager", "{\"from\": \"a\", \"to\": \"c\"}").await;
    assert_eq!(renamed.json(), json!({"count": 1}));
    let managers: Vec<String> = s
        .get("/apis/fieldstore.io/v1/managers?resource=configmaps")
        .await
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["manager"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(managers, ["b", "c"]);
    let released = s.post_text("/apis/fieldstore.io/v1/release", "{\"manager\": \"b\", \"resource\": \"configmaps\"}").await;
    assert_eq!(released.json(), json!({"count": 1}));
    s.post_text("/apis/fieldstore.io/v1/release", "{\"manager\": \"c\", \"resource\": \"nothings\"}").await.status(404, "NotFound");
    let managers = s.get("/apis/fieldstore.io/v1/managers?resource=configmaps").await.json();
    assert_eq!(managers.as_array().unwrap().len(), 1, "{managers}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_needs_no_token_but_every_call_does() {
    let dir = tempfile::tempdir().unwrap();
    let flags = http_server::auth_flags(dir.path(), "'*'");
    let s = Server::start(&flags.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(s.get("/ui/").await.code, 200);
    s.get("/apis/fieldstore.io/v1/access?verb=admin").await.status(401, "Unauthorized");
    s.get(&format!("{CMS}/c/at?revision=1")).await.status(401, "Unauthorized");
    let reader = [("authorization", "Bearer readtoken"), ("content-type", "application/json")];
    let admin = [("authorization", "Bearer admintoken"), ("content-type", "application/json")];
    let may = |r: Resp| r.json()["allowed"].as_bool();
    assert_eq!(may(s.send("GET", "/apis/fieldstore.io/v1/access?verb=admin", &reader, Bytes::new()).await), Some(false));
    assert_eq!(may(s.send("GET", "/apis/fieldstore.io/v1/access?verb=get&resource=configmaps", &reader, Bytes::new()).await), Some(true));
    assert_eq!(may(s.send("GET", "/apis/fieldstore.io/v1/access?verb=admin", &admin, Bytes::new()).await), Some(true));
    let body = "{\"from\": \"a\", \"to\": \"b\"}";
    s.send("POST", "/apis/fieldstore.io/v1/renamemanager", &reader, body).await.status(403, "Forbidden");
    s.send("POST", "/apis/fieldstore.io/v1/release", &reader, "{\"manager\": \"a\"}").await.status(403, "Forbidden");
    assert_eq!(s.send("POST", "/apis/fieldstore.io/v1/renamemanager", &admin, body).await.json(), json!({"count": 0}));
}
