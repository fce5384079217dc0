//! The Kubernetes HTTP API of `fieldstore serve` end to end over HTTP/1.1: discovery, every verb,
//! every error code with its `Status`, bad bodies (no panic, nothing written), watches (lines,
//! bookmarks, 410 as an ERROR event, the per-client limit), content types, Tables, field
//! validation, CRDs, authentication and authorization, fieldstore's history paths. Each test
//! starts its own server on `127.0.0.1:0`.

// Test support unwraps: a failed setup is a failed test.
#![allow(clippy::unwrap_used)]

#[path = "support/http_server.rs"]
mod http_server;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use http_server::Server;
use serde_json::{json, Value};

fn cm(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
}

const CMS: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_lists_every_registered_type() {
    let server = Server::start(&[]);
    let s = &server;
    assert_eq!(s.get("/version").await.json()["major"], "1");
    assert_eq!(s.get("/api").await.json()["versions"], json!(["v1"]));
    // kubectl asks for aggregated discovery first (tests/api_groups.rs checks its document);
    // without it, the legacy documents.
    let agg = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
    let aggregated = s.send("GET", "/apis", &[("accept", agg)], Bytes::new()).await.json();
    assert_eq!(aggregated["kind"], "APIGroupDiscoveryList");
    let apis = s.get("/apis").await;
    assert_eq!(apis.headers["content-type"], "application/json");
    let groups = apis.json();
    assert_eq!(groups["kind"], "APIGroupList");
    assert!(groups["groups"].as_array().unwrap().iter().any(|g| g["name"] == "apps"));
    let core = s.get("/api/v1").await.json();
    let pods = core["resources"].as_array().unwrap().iter().find(|r| r["name"] == "pods").unwrap().clone();
    assert_eq!((pods["namespaced"].clone(), pods["kind"].clone(), pods["shortNames"].clone()), (json!(true), json!("Pod"), json!(["po"])));
    assert_eq!(pods["categories"], json!(["all"]));
    assert!(core["resources"].as_array().unwrap().iter().any(|r| r["name"] == "pods/status"));
    assert_eq!(s.get("/apis/apps").await.json()["preferredVersion"]["version"], "v1");
    assert_eq!(s.get("/apis/apps/v1").await.json()["groupVersion"], "apps/v1");
    // No API serves these: kube-apiserver's plain 404.
    s.get("/apis/nothing.example.com/v1").await.page_not_found();
    s.get("/no/such/path").await.page_not_found();
    // The namespaces Kubernetes starts with exist.
    let ns = s.get("/api/v1/namespaces").await.json();
    let names: Vec<&str> = ns["items"].as_array().unwrap().iter().map(|n| n["metadata"]["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"default") && names.contains(&"kube-system") && names.contains(&"kube-public"), "{names:?}");
    assert_eq!(ns["items"][0]["status"]["phase"], "Active");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verbs_and_their_errors() {
    let server = Server::start(&[]);
    let s = &server;
    let created = s.post(CMS, &cm("a", json!({"k": "1"}))).await;
    assert_eq!(created.code, 201);
    let a = created.json();
    assert_eq!(a["metadata"]["namespace"], "default");
    // 409 AlreadyExists.
    s.post(CMS, &cm("a", json!({}))).await.status(409, "AlreadyExists");
    // 404 NotFound names the object.
    let nf = s.get(&format!("{CMS}/missing")).await.status(404, "NotFound");
    assert_eq!((nf["details"]["name"].as_str(), nf["details"]["kind"].as_str()), (Some("missing"), Some("configmaps")));
    // PUT with a stale resourceVersion: 409 Conflict; with the name of another object: 400.
    let mut stale = a.clone();
    stale["metadata"]["resourceVersion"] = json!("1");
    let put = |v: &Value, name: &str| {
        let body = serde_json::to_vec(v).unwrap();
        let path = format!("{CMS}/{name}");
        async move { s.send("PUT", &path, &[("content-type", "application/json")], body).await }
    };
    put(&stale, "a").await.status(409, "Conflict");
    put(&a, "b").await.status(400, "BadRequest");
    let mut changed = a.clone();
    changed["data"]["k"] = json!("2");
    let updated = put(&changed, "a").await;
    assert_eq!((updated.code, updated.json()["data"]["k"].clone()), (200, json!("2")));
    // 405: POST to an object, and writes across all namespaces.
    s.post(&format!("{CMS}/a"), &cm("a", json!({}))).await.status(405, "MethodNotAllowed");
    s.post("/api/v1/configmaps", &cm("x", json!({}))).await.status(405, "MethodNotAllowed");
    // 406: nothing the server can answer with.
    s.send("GET", &format!("{CMS}/a"), &[("accept", "text/html")], Bytes::new()).await.status(406, "NotAcceptable");
    // 415: a body media type, and strategic merge patch of a custom resource (below).
    s.send("POST", CMS, &[("content-type", "text/plain")], "x").await.status(415, "UnsupportedMediaType");
    s.patch(&format!("{CMS}/a"), "application/x-unknown", &json!({})).await.status(415, "UnsupportedMediaType");
    // 422: an invalid name.
    s.post(CMS, &cm("Not_A_Name", json!({}))).await.status(422, "Invalid");
    // 413: over --max-request-bytes (the default 3 MiB).
    let big = cm("big", json!({"k": "x".repeat(4 << 20)}));
    s.post(CMS, &big).await.status(413, "RequestEntityTooLarge");
    // dryRun=All writes nothing.
    assert_eq!(s.post(&format!("{CMS}?dryRun=All"), &cm("dry", json!({}))).await.code, 201);
    s.get(&format!("{CMS}/dry")).await.status(404, "NotFound");
    s.post(&format!("{CMS}?dryRun=Maybe"), &cm("dry", json!({}))).await.status(422, "Invalid");
    // The scale subresource of a Deployment.
    let dep = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "d"}},
            "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}});
    assert_eq!(s.post("/apis/apps/v1/namespaces/default/deployments", &dep).await.code, 201);
    let scale = s.get("/apis/apps/v1/namespaces/default/deployments/d/scale").await.json();
    assert_eq!(
        (scale["kind"].as_str(), scale["spec"]["replicas"].as_i64(), scale["status"]["selector"].as_str()),
        (Some("Scale"), Some(1), Some("app=d"))
    );
    let scaled = s
        .patch("/apis/apps/v1/namespaces/default/deployments/d/scale", "application/merge-patch+json", &json!({"spec": {"replicas": 4}}))
        .await;
    assert_eq!(scaled.json()["spec"]["replicas"], 4);
    assert_eq!(s.get("/apis/apps/v1/namespaces/default/deployments/d").await.json()["spec"]["replicas"], 4);
    s.get(&format!("{CMS}/a/scale")).await.status(404, "NotFound");
    // A cluster-scoped resource under a namespace is no path.
    s.get("/api/v1/namespaces/default/nodes").await.status(404, "NotFound");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_bodies_are_400_and_write_nothing() {
    let server = Server::start(&[]);
    let s = &server;
    let deep = (0..200).fold(json!(1), |v, _| json!({"a": v}));
    let bodies: Vec<(&str, Vec<u8>)> = vec![
        ("application/json", b"{not json".to_vec()),
        ("application/json", b"[1,2]".to_vec()),
        ("application/json", b"\"text\"".to_vec()),
        ("application/json", Vec::new()),
        ("application/yaml", b"a: [unclosed".to_vec()),
        ("application/vnd.kubernetes.protobuf", b"k8s\x00\xff\xff\xff".to_vec()),
        ("application/vnd.kubernetes.protobuf", b"not an envelope".to_vec()),
        ("application/json", serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}})).unwrap()),
        (
            "application/json",
            serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "other"}})).unwrap(),
        ),
        (
            "application/json",
            serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": deep})).unwrap(),
        ),
    ];
    for (ct, body) in bodies {
        let r = s.send("POST", CMS, &[("content-type", ct)], body.clone()).await;
        assert!(
            r.code == 400 || r.code == 422,
            "{ct} {}: {} {}",
            String::from_utf8_lossy(&body).chars().take(40).collect::<String>(),
            r.code,
            String::from_utf8_lossy(&r.body)
        );
        assert_eq!(r.json()["kind"], "Status");
    }
    for (ct, body) in [
        ("application/merge-patch+json", &b"{bad"[..]),
        ("application/json-patch+json", &b"[{\"op\":\"nope\"}]"[..]),
        ("application/apply-patch+yaml", &b"- a list"[..]),
    ] {
        s.post(CMS, &cm("p", json!({}))).await;
        let r = s.send("PATCH", &format!("{CMS}/p?fieldManager=m"), &[("content-type", ct)], body).await;
        assert!(matches!(r.code, 400 | 422), "{ct}: {}", r.code);
    }
    let list = s.get(CMS).await.json();
    let names: Vec<&str> = list["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["p"], "only the object created on purpose exists");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patches_apply_noops_and_field_managers() {
    let server = Server::start(&[]);
    let s = &server;
    let ua = [("content-type", "application/json"), ("user-agent", "kubectl-create/v1.33.1 (linux/amd64) kubernetes/8adc0f0")];
    let c = s.send("POST", CMS, &ua, serde_json::to_vec(&cm("a", json!({"k": "1"}))).unwrap()).await.json();
    // No fieldManager: the User-Agent up to its first '/'.
    assert_eq!(c["metadata"]["managedFields"][0]["manager"], "kubectl-create");
    let path = format!("{CMS}/a");
    let smp = s.patch(&path, "application/strategic-merge-patch+json", &json!({"data": {"s": "1"}})).await.json();
    let merge = s.patch(&path, "application/merge-patch+json", &json!({"data": {"m": "1"}})).await.json();
    let jp = s.patch(&path, "application/json-patch+json", &json!([{"op": "add", "path": "/data/j", "value": "1"}])).await.json();
    assert_eq!(jp["data"], json!({"k": "1", "s": "1", "m": "1", "j": "1"}));
    assert!(smp["metadata"]["resourceVersion"] != merge["metadata"]["resourceVersion"]);
    // A patch that changes nothing keeps the resourceVersion and managedFields.
    let again = s.patch(&path, "application/merge-patch+json", &json!({"data": {"m": "1"}})).await.json();
    assert_eq!(
        (&again["metadata"]["resourceVersion"], &again["metadata"]["managedFields"]),
        (&jp["metadata"]["resourceVersion"], &jp["metadata"]["managedFields"])
    );
    // Server-side apply: needs a fieldManager (422), conflicts (409) unless forced, no-op keeps the resourceVersion.
    let apply = |manager: &str, force: bool, v: &str| {
        let q = format!("{path}?fieldManager={manager}{}", if force { "&force=true" } else { "" });
        let body = format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: \"{v}\"\n");
        async move { s.send("PATCH", &q, &[("content-type", "application/apply-patch+yaml")], body).await }
    };
    s.send("PATCH", &path, &[("content-type", "application/apply-patch+yaml")], "apiVersion: v1\nkind: ConfigMap\n")
        .await
        .status(422, "Invalid");
    // The same value as the live one is shared ownership, not a conflict; another value conflicts.
    assert_eq!(apply("ssa", false, "1").await.code, 200);
    let first = apply("ssa", false, "3").await;
    assert_eq!(first.code, 409, "k is owned by kubectl-create: {}", String::from_utf8_lossy(&first.body));
    assert_eq!(first.json()["details"]["causes"][0]["field"], ".data.k");
    let forced = apply("ssa", true, "2").await.json();
    assert_eq!(forced["data"]["k"], "2");
    let noop = apply("ssa", false, "2").await.json();
    assert_eq!(noop["metadata"]["resourceVersion"], forced["metadata"]["resourceVersion"]);
    assert_eq!(noop["metadata"]["managedFields"], forced["metadata"]["managedFields"]);
    // force is for apply only.
    s.patch(&format!("{path}?force=true"), "application/merge-patch+json", &json!({})).await.status(422, "Invalid");
    // An apply that creates the object is a 201 Created, as in kube-apiserver; a dry run too; the
    // next one a 200.
    let create = |dry: &str| {
        let q = format!("{CMS}/made?fieldManager=ssa{dry}");
        async move {
            let body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: made\ndata:\n  k: v\n";
            s.send("PATCH", &q, &[("content-type", "application/apply-patch+yaml")], body).await.code
        }
    };
    assert_eq!(create("&dryRun=All").await, 201);
    assert_eq!(create("").await, 201);
    assert_eq!(create("").await, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn field_validation_strict_warn_ignore() {
    let server = Server::start(&[]);
    let s = &server;
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "spec": {"x": 1}});
    let strict = s.post(&format!("{CMS}?fieldValidation=Strict"), &body).await.status(400, "BadRequest");
    assert!(strict["message"].as_str().unwrap().contains("unknown field \"spec\""), "{strict}");
    let warn = s.post(&format!("{CMS}?fieldValidation=Warn"), &body).await;
    assert_eq!(warn.code, 201);
    assert_eq!(warn.headers["warning"], "299 - \"unknown field \\\"spec\\\"\"");
    assert!(warn.json().get("spec").is_none());
    let mut other = body.clone();
    other["metadata"]["name"] = json!("b");
    let ignore = s.post(&format!("{CMS}?fieldValidation=Ignore"), &other).await;
    assert_eq!(ignore.code, 201);
    assert!(!ignore.headers.contains_key("warning"));
    s.post(&format!("{CMS}?fieldValidation=Loose"), &other).await.status(422, "Invalid");
    // Nested ones, below another undeclared field's siblings, inside a keyed list.
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"alsoBad": true, "containers": [{"name": "a", "image": "x", "bogus": 1}]}});
    let warn = s.post("/api/v1/namespaces/default/pods", &pod).await;
    assert_eq!(warn.code, 201, "{}", String::from_utf8_lossy(&warn.body));
    let all: Vec<&str> = warn.headers.get_all("warning").iter().map(|v| v.to_str().unwrap()).collect();
    assert_eq!(all.len(), 2, "{all:?}");
    assert_eq!(warn.json()["spec"]["containers"][0], json!({"name": "a", "image": "x"}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_with_and_without_finalizers() {
    let server = Server::start(&[]);
    let s = &server;
    let a = s.post(CMS, &cm("a", json!({}))).await.json();
    // A uid precondition that does not hold: 409.
    let pre = json!({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": "not-it"}});
    s.send("DELETE", &format!("{CMS}/a"), &[("content-type", "application/json")], serde_json::to_vec(&pre).unwrap())
        .await
        .status(409, "Conflict");
    // A dry run deletes nothing.
    assert_eq!(s.send("DELETE", &format!("{CMS}/a?dryRun=All"), &[], Bytes::new()).await.code, 200);
    assert_eq!(s.get(&format!("{CMS}/a")).await.code, 200);
    let gone = s.send("DELETE", &format!("{CMS}/a"), &[], Bytes::new()).await;
    let st = gone.json();
    assert_eq!((gone.code, st["kind"].as_str(), st["status"].as_str()), (200, Some("Status"), Some("Success")));
    assert_eq!(st["details"], json!({"name": "a", "kind": "configmaps", "uid": a["metadata"]["uid"]}));
    s.send("DELETE", &format!("{CMS}/a"), &[], Bytes::new()).await.status(404, "NotFound");
    // With a finalizer: the object, being deleted.
    let mut f = cm("f", json!({}));
    f["metadata"]["finalizers"] = json!(["example.com/hold"]);
    s.post(CMS, &f).await;
    let held = s.send("DELETE", &format!("{CMS}/f"), &[], Bytes::new()).await.json();
    assert_eq!(held["kind"], "ConfigMap");
    assert!(held["metadata"]["deletionTimestamp"].is_string());
    // Removing the finalizer lets it go.
    s.patch(&format!("{CMS}/f"), "application/merge-patch+json", &json!({"metadata": {"finalizers": null}})).await;
    s.get(&format!("{CMS}/f")).await.status(404, "NotFound");
    // deletecollection with a label selector.
    for (n, app) in [("x", "one"), ("y", "one"), ("z", "two")] {
        let mut o = cm(n, json!({}));
        o["metadata"]["labels"] = json!({"app": app});
        s.post(CMS, &o).await;
    }
    let deleted = s.send("DELETE", &format!("{CMS}?labelSelector=app%3Done"), &[], Bytes::new()).await.json();
    assert_eq!(deleted["items"].as_array().unwrap().len(), 2);
    assert_eq!(s.get(CMS).await.json()["items"].as_array().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paged_lists_selectors_tables_and_protobuf() {
    let server = Server::start(&[]);
    let s = &server;
    for i in 0..5 {
        let mut o = cm(&format!("c{i}"), json!({"i": i.to_string()}));
        o["metadata"]["labels"] = json!({"even": (i % 2 == 0).to_string()});
        s.post(CMS, &o).await;
    }
    let mut names = Vec::new();
    let mut rvs = Vec::new();
    let mut next = String::new();
    loop {
        let page = s.get(&format!("{CMS}?limit=2&continue={next}")).await.json();
        rvs.push(page["metadata"]["resourceVersion"].clone());
        names.extend(page["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap().to_string()));
        match page["metadata"]["continue"].as_str() {
            Some(c) => next = c.to_string(),
            None => break,
        }
    }
    assert_eq!(names, ["c0", "c1", "c2", "c3", "c4"]);
    assert_eq!(rvs.len(), 3);
    assert!(rvs.iter().all(|r| r == &rvs[0]), "every page carries the list's resourceVersion: {rvs:?}");
    let even = s.get(&format!("{CMS}?labelSelector=even%3Dtrue")).await.json();
    assert_eq!(even["items"].as_array().unwrap().len(), 3);
    let one = s.get(&format!("{CMS}?fieldSelector=metadata.name%3Dc3")).await.json();
    assert_eq!(one["items"][0]["metadata"]["name"], "c3");
    s.get(&format!("{CMS}?fieldSelector=bad")).await.status(400, "BadRequest");
    // Events are listable by involvedObject fields (kubectl describe).
    let ev = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e1"}, "involvedObject": {"kind": "ConfigMap", "name": "c1", "namespace": "default"}, "reason": "Test", "message": "m"});
    assert_eq!(s.post("/api/v1/namespaces/default/events", &ev).await.code, 201);
    let evs =
        s.get("/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dc1%2CinvolvedObject.kind%3DConfigMap").await.json();
    assert_eq!(evs["items"].as_array().unwrap().len(), 1);
    assert_eq!(s.get("/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dc2").await.json()["items"], json!([]));
    // Tables.
    let table_accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
    let t = s.send("GET", &format!("{CMS}?limit=2"), &[("accept", table_accept)], Bytes::new()).await.json();
    assert_eq!((t["kind"].as_str(), t["apiVersion"].as_str()), (Some("Table"), Some("meta.k8s.io/v1")));
    assert_eq!(t["columnDefinitions"][0]["name"], "Name");
    assert_eq!(t["rows"][0]["cells"][0], "c0");
    assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    assert!(t["metadata"]["continue"].is_string());
    // Protobuf out and in, for a built-in kind.
    let pb = s.send("GET", &format!("{CMS}/c1"), &[("accept", "application/vnd.kubernetes.protobuf")], Bytes::new()).await;
    assert_eq!(pb.headers["content-type"], "application/vnd.kubernetes.protobuf");
    assert!(pb.body.starts_with(b"k8s\x00"));
    let mut body = pb.body.clone();
    // The same bytes create a copy under another name only if the name differs: create it elsewhere.
    let created = s
        .send(
            "POST",
            "/api/v1/namespaces/other/configmaps",
            &[("content-type", "application/vnd.kubernetes.protobuf")],
            std::mem::take(&mut body),
        )
        .await;
    assert_eq!(created.code, 400, "the envelope's namespace (default) is not the path's: {}", String::from_utf8_lossy(&created.body));
    let list_pb = s.send("GET", CMS, &[("accept", "application/vnd.kubernetes.protobuf")], Bytes::new()).await;
    assert!(list_pb.body.starts_with(b"k8s\x00"));
    // YAML in.
    let y = s
        .send(
            "POST",
            CMS,
            &[("content-type", "application/yaml")],
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yml\ndata:\n  a: b\n",
        )
        .await;
    assert_eq!((y.code, y.json()["data"]["a"].clone()), (201, json!("b")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_stream_events_bookmarks_and_410() {
    let server = Server::start(&[]);
    let s = &server;
    let rv0 = s.get(CMS).await.json()["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    s.post(CMS, &cm("a", json!({"k": "1"}))).await;
    s.patch(&format!("{CMS}/a"), "application/merge-patch+json", &json!({"data": {"k": "2"}})).await;
    s.send("DELETE", &format!("{CMS}/a"), &[], Bytes::new()).await;
    let (code, lines) = s.watch_lines(&format!("{CMS}?watch=true&resourceVersion={rv0}"), 3, &[]).await;
    let types: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!((code, types), (200, vec!["ADDED", "MODIFIED", "DELETED"]));
    assert_eq!(lines[1]["object"]["data"]["k"], "2");
    // The legacy /watch/ path, a watch-list with its initial-events-end bookmark.
    s.post(CMS, &cm("b", json!({}))).await;
    let (_, lines) = s
        .watch_lines(
            "/api/v1/watch/namespaces/default/configmaps?sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
            2,
            &[],
        )
        .await;
    assert_eq!((lines[0]["type"].as_str(), lines[0]["object"]["metadata"]["name"].as_str()), (Some("ADDED"), Some("b")));
    assert_eq!(lines[1]["type"], "BOOKMARK");
    assert_eq!(lines[1]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
    // timeoutSeconds ends the stream.
    let (code, lines) = s.watch_lines(&format!("{CMS}?watch=1&resourceVersion={rv0}&timeoutSeconds=1"), 100, &[]).await;
    assert_eq!((code, lines.len()), (200, 4));
    // A compacted start: 200, then one ERROR event with the 410 Status.
    let channel = tonic::transport::Channel::from_shared(format!("http://{}", s.grpc)).unwrap().connect().await.unwrap();
    let mut grpc = fieldstore_server::proto::pb::store_client::StoreClient::new(channel);
    grpc.compact(fieldstore_server::proto::pb::CompactRequest { revision: 0 }).await.unwrap();
    let (code, lines) = s.watch_lines(&format!("{CMS}?watch=1&resourceVersion={rv0}"), 1, &[]).await;
    assert_eq!((code, lines[0]["type"].as_str()), (200, Some("ERROR")));
    assert_eq!((lines[0]["object"]["code"].as_u64(), lines[0]["object"]["reason"].as_str()), (Some(410), Some("Expired")));
    // The same on a list is a 410 response.
    s.get(&format!("{CMS}?resourceVersion={rv0}&resourceVersionMatch=Exact")).await.status(410, "Expired");
    // Tables on a watch: column definitions with the first event only.
    let table_accept = "application/json;as=Table;v=v1;g=meta.k8s.io";
    s.post(CMS, &cm("c", json!({}))).await;
    let (_, lines) = s.watch_lines(&format!("{CMS}?watch=1"), 2, &[("accept", table_accept)]).await;
    assert_eq!(lines[0]["object"]["kind"], "Table");
    assert_eq!(lines[0]["object"]["columnDefinitions"][0]["name"], "Name");
    assert_eq!(lines[1]["object"]["columnDefinitions"], json!([]));
}

/// A `timeoutSeconds` beyond the clock's range is a watch without end (it panicked with
/// "overflow when adding duration to instant" and dropped the connection); negative or
/// non-numeric ones are 400.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_watch_timeouts_are_served() {
    let server = Server::start(&[]);
    let s = &server;
    s.post(CMS, &cm("a", json!({"k": "1"}))).await;
    for timeout in ["18446744073709551615", "9223372036854775807", "100000000000000000"] {
        let (code, lines) = s.watch_lines(&format!("{CMS}?watch=1&timeoutSeconds={timeout}"), 1, &[]).await;
        assert_eq!((code, lines[0]["type"].as_str()), (200, Some("ADDED")), "timeoutSeconds={timeout}");
    }
    for bad in ["-1", "18446744073709551616", "x"] {
        s.get(&format!("{CMS}?watch=1&timeoutSeconds={bad}")).await.status(400, "BadRequest");
    }
    // The server is still there.
    assert_eq!(s.get(&format!("{CMS}/a")).await.code, 200);
}

/// Label selectors are parsed as Kubernetes' labels.Parse: keys are qualified names and values
/// label values (at most 63 characters, alphanumeric at both ends), anything else 400 — on lists
/// and watches alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_label_selectors_are_400() {
    let server = Server::start(&[]);
    let s = &server;
    s.post(CMS, &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {"app.kubernetes.io/name": "web"}}}))
        .await;
    for bad in ["a=b=c", "-x-=y", "x-=y", "a=-b", "Example.com/a=b", "a/b/c=d", "x in (a, -b)", "!-x"] {
        let q: String = form_urlencoded::byte_serialize(bad.as_bytes()).collect();
        s.get(&format!("{CMS}?labelSelector={q}")).await.status(400, "BadRequest");
        s.get(&format!("{CMS}?watch=1&labelSelector={q}")).await.status(400, "BadRequest");
    }
    for (good, n) in [("app.kubernetes.io/name=web", 1), ("a=b", 0), ("app.kubernetes.io/name in (web, db)", 1), ("!a", 1)] {
        let q: String = form_urlencoded::byte_serialize(good.as_bytes()).collect();
        let list = s.get(&format!("{CMS}?labelSelector={q}")).await;
        assert_eq!((list.code, list.json()["items"].as_array().map(Vec::len)), (200, Some(n)), "{good}");
    }
}

/// Subresources are their exact names (`status`, `scale`, `blame`, `history`, `log`, `at`), and
/// `.` or `..` is no segment of a resource path: anything else is 404, not an empty history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_subresources_and_dot_segments_are_404() {
    let server = Server::start(&[]);
    let s = &server;
    s.post(CMS, &cm("x", json!({"k": "1"}))).await;
    let log = s.get(&format!("{CMS}/x/log")).await;
    assert_eq!((log.code, log.json().as_array().map(Vec::len)), (200, Some(1)));
    assert_eq!(s.get(&format!("{CMS}/x/history?path=.data.k")).await.code, 200);
    for bad in [
        "x/../history?path=.data.k",
        "x/../log",
        "../log",
        "x/./log",
        "x/%2E%2E/log",
        "%2e%2e/log",
        "..",
        "x/UPPER/log",
        "x/LOG",
        "x/History?path=.data.k",
        "x/Blame",
        "x/logs",
        "x/log%2F",
    ] {
        s.get(&format!("{CMS}/{bad}")).await.status(404, "NotFound");
    }
    // The history of an object that never was is no empty history; a deleted one's stays.
    for missing in ["UPPER/log", "missing/log", "missing/history?path=.data.k", "missing/blame", "missing/at?revision=1"] {
        s.get(&format!("{CMS}/{missing}")).await.status(404, "NotFound");
    }
    s.post(CMS, &cm("gone", json!({"k": "1"}))).await;
    s.send("DELETE", &format!("{CMS}/gone"), &[], Bytes::new()).await;
    let log = s.get(&format!("{CMS}/gone/log")).await;
    assert_eq!((log.code, log.json()[0]["event"].as_str()), (200, Some("DELETED")));
    let history = s.get(&format!("{CMS}/gone/history?path=.data.k")).await;
    assert_eq!((history.code, history.json()["events"].as_array().is_some_and(|e| !e.is_empty())), (200, true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crds_register_their_types() {
    let server = Server::start(&[]);
    let s = &server;
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "shortNames": ["wd"], "categories": ["all", "gadgets"]},
            "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
                    "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}}}}}]}
    });
    s.get("/apis/example.com/v1").await.page_not_found();
    let created = s.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", &crd).await;
    assert_eq!(created.code, 201, "{}", String::from_utf8_lossy(&created.body));
    // The answer is kube-apiserver's: the empty status; its controllers' write follows.
    assert_eq!(created.json()["status"]["conditions"], Value::Null);
    let stored = s.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com").await.json();
    let conds = stored["status"]["conditions"].clone();
    assert!(conds.as_array().unwrap().iter().any(|c| c["type"] == "Established" && c["status"] == "True"), "{conds}");
    let controllers = stored["metadata"]["managedFields"].as_array().unwrap().iter().find(|e| e["manager"] == "kube-apiserver").cloned();
    let controllers = controllers.expect("an entry of the CRD controllers");
    assert_eq!((controllers["operation"].as_str(), controllers["subresource"].as_str()), (Some("Update"), Some("status")));
    let d = s.get("/apis/example.com/v1").await.json();
    assert_eq!(d["resources"][0]["name"], "widgets");
    assert_eq!(d["resources"][0]["shortNames"], json!(["wd"]));
    assert_eq!(d["resources"][0]["categories"], json!(["all", "gadgets"]));
    assert!(s.get("/apis").await.json()["groups"].as_array().unwrap().iter().any(|g| g["name"] == "example.com"));
    let w = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 3}});
    let path = "/apis/example.com/v1/namespaces/default/widgets";
    assert_eq!(s.post(path, &w).await.code, 201);
    // Strategic merge patch is for built-in kinds: 415 here.
    s.patch(&format!("{path}/w"), "application/strategic-merge-patch+json", &json!({"spec": {"size": 4}}))
        .await
        .status(415, "UnsupportedMediaType");
    assert_eq!(
        s.patch(&format!("{path}/w"), "application/merge-patch+json", &json!({"spec": {"size": 4}})).await.json()["spec"]["size"],
        4
    );
    // The status subresource.
    let st = s.patch(&format!("{path}/w/status"), "application/merge-patch+json", &json!({"status": {"ready": true}})).await.json();
    assert_eq!(st["status"]["ready"], true);
    // An invalid definition is refused (422, as kube-apiserver), and nothing is written.
    let bad = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "bad.example.com"}, "spec": {"group": "example.com"}});
    s.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", &bad).await.status(422, "Invalid");
    s.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/bad.example.com").await.status(404, "NotFound");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_and_owner_paths() {
    let server = Server::start(&[]);
    let s = &server;
    s.send(
        "POST",
        &format!("{CMS}?fieldManager=alice"),
        &[("content-type", "application/json")],
        serde_json::to_vec(&cm("a", json!({"k": "1"}))).unwrap(),
    )
    .await;
    s.patch(&format!("{CMS}/a?fieldManager=bob"), "application/merge-patch+json", &json!({"data": {"k": "2"}})).await;
    let blame = s.get(&format!("{CMS}/a/blame")).await.json();
    assert!(blame.as_array().unwrap().iter().any(|l| l.to_string().contains("bob")), "{blame}");
    let hist = s.get(&format!("{CMS}/a/history?path=.data.k")).await.json();
    assert!(hist.to_string().contains("alice") && hist.to_string().contains("bob"), "{hist}");
    s.get(&format!("{CMS}/a/history")).await.status(400, "BadRequest");
    let log = s.get(&format!("{CMS}/a/log")).await.json();
    assert_eq!(log.as_array().unwrap().len(), 2);
    let owners = s.get("/apis/fieldstore.io/v1/owners?resource=configmaps&path=.data.k").await.json();
    assert!(owners.to_string().contains("bob"), "{owners}");
    let managers = s.get("/apis/fieldstore.io/v1/managers").await.json();
    assert!(managers.to_string().contains("alice"), "{managers}");
    let objs = s.get("/apis/fieldstore.io/v1/managedobjects?manager=bob&resource=configmaps").await.json();
    assert!(objs.to_string().contains("\"a\""), "{objs}");
    s.get("/apis/fieldstore.io/v1/managedobjects").await.status(400, "BadRequest");
    s.send("POST", &format!("{CMS}/a/blame"), &[], Bytes::new()).await.status(405, "MethodNotAllowed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authentication_authorization_and_deadlines() {
    let dir = tempfile::tempdir().unwrap();
    let mut flags = http_server::auth_flags(dir.path(), "default");
    flags.extend(["--request-deadline-seconds".to_string(), "1".to_string()]);
    let server = Server::start(&flags.iter().map(String::as_str).collect::<Vec<_>>());
    let s = &server;
    let r = s.get(CMS).await;
    r.status(401, "Unauthorized");
    assert!(r.headers.contains_key("www-authenticate"));
    s.send("GET", CMS, &[("authorization", "Bearer wrong")], Bytes::new()).await.status(401, "Unauthorized");
    let admin = [("authorization", "Bearer admintoken"), ("content-type", "application/json")];
    let created = s.send("POST", CMS, &admin, serde_json::to_vec(&cm("a", json!({}))).unwrap()).await;
    assert_eq!(created.code, 201);
    // Without a fieldManager or User-Agent, the manager is derived from the (empty) agent, not the user.
    let reader = [("authorization", "Bearer readtoken")];
    assert_eq!(s.send("GET", &format!("{CMS}/a"), &reader, Bytes::new()).await.code, 200);
    s.send("GET", "/api/v1/namespaces/kube-system/configmaps", &reader, Bytes::new()).await.status(403, "Forbidden");
    s.send("DELETE", &format!("{CMS}/a"), &reader, Bytes::new()).await.status(403, "Forbidden");
    // A resourceVersion the store has not reached: the request deadline (1 s) answers 504.
    s.send("GET", &format!("{CMS}/a?resourceVersion=999999"), &reader, Bytes::new()).await.status(504, "Timeout");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_per_client_are_limited() {
    let server = Server::start(&["--max-watches-per-client", "2"]);
    let s = &server;
    // Two open watches per client: the third is refused with 429.
    let open = |n: usize| {
        let req = http::Request::builder()
            .uri(format!("{}{CMS}?watch=1&timeoutSeconds={}", s.base, 30 + n))
            .body(Full::new(Bytes::new()))
            .unwrap();
        s.client.request(req)
    };
    let (w1, w2) = (open(1).await.unwrap(), open(2).await.unwrap());
    assert_eq!((w1.status().as_u16(), w2.status().as_u16()), (200, 200));
    s.get(&format!("{CMS}?watch=1")).await.status(429, "TooManyRequests");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_the_given_certificate() {
    use tokio_rustls::rustls;
    let dir = tempfile::tempdir().unwrap();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let (cert_file, key_file) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert_file, cert.cert.pem()).unwrap();
    std::fs::write(&key_file, cert.key_pair.serialize_pem()).unwrap();
    let server = Server::start(&["--tls-cert", cert_file.to_str().unwrap(), "--tls-key", key_file.to_str().unwrap()]);
    let addr = server.base.strip_prefix("https://").unwrap_or_else(|| panic!("not https: {}", server.base)).to_string();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.cert.der().clone()).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let tls = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config.clone())).connect(name, tcp).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls)).await.unwrap();
    tokio::spawn(conn);
    let req = http::Request::get("/api/v1/namespaces/default").header("host", "localhost").body(Full::new(Bytes::new())).unwrap();
    let resp = sender.send_request(req).await.unwrap();
    assert_eq!(resp.status(), 200);
    let body: Value = serde_json::from_slice(&resp.into_body().collect().await.unwrap().to_bytes()).unwrap();
    assert_eq!(body["metadata"]["name"], "default");

    // HTTP/2 by ALPN, as client-go speaks over TLS: three watches and the writes on one
    // connection (whose writes the server coalesces); each watch gets every change once, in order.
    let mut config = config;
    config.alpn_protocols = vec![b"h2".to_vec()];
    let tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let tls = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config)).connect(name, tcp).await.unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (h2, conn) =
        hyper::client::conn::http2::handshake(hyper_util::rt::TokioExecutor::new(), hyper_util::rt::TokioIo::new(tls)).await.unwrap();
    tokio::spawn(conn);
    let send = |method: &str, path: String, body: Option<Value>| {
        let mut h2 = h2.clone();
        let req = http::Request::builder()
            .method(method)
            .uri(format!("https://localhost{path}"))
            .header("content-type", "application/json")
            .body(Full::new(body.map_or_else(Bytes::new, |b| Bytes::from(b.to_string()))))
            .unwrap();
        async move { h2.send_request(req).await.unwrap() }
    };
    let cms = "/api/v1/namespaces/default/configmaps".to_string();
    let list = send("GET", cms.clone(), None).await;
    assert_eq!(list.status(), 200);
    let list: Value = serde_json::from_slice(&list.into_body().collect().await.unwrap().to_bytes()).unwrap();
    let from = list["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let mut watches = Vec::new();
    for _ in 0..3 {
        let w = send("GET", format!("{cms}?watch=1&resourceVersion={from}"), None).await;
        assert_eq!(w.status(), 200);
        watches.push(w.into_body());
    }
    let mut want = Vec::new();
    for i in 0..3 {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("h2-{i}")}, "data": {"i": i.to_string()}});
        let out = send("POST", cms.clone(), Some(cm)).await;
        assert_eq!(out.status(), 201);
        let out: Value = serde_json::from_slice(&out.into_body().collect().await.unwrap().to_bytes()).unwrap();
        want.push(out["metadata"]["resourceVersion"].as_str().unwrap().to_string());
    }
    for mut w in watches {
        let (mut text, mut got) = (Vec::new(), Vec::new());
        while got.len() < want.len() {
            let frame = tokio::time::timeout(std::time::Duration::from_secs(10), w.frame()).await.unwrap().unwrap().unwrap();
            text.extend_from_slice(&frame.into_data().unwrap_or_default());
            while let Some(n) = text.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = text.drain(..=n).collect();
                let ev: Value = serde_json::from_slice(&line).unwrap();
                assert_eq!(ev["type"], "ADDED", "{ev}");
                got.push(ev["object"]["metadata"]["resourceVersion"].as_str().unwrap().to_string());
            }
        }
        assert_eq!(got, want);
    }
}
