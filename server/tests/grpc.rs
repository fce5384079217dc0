//! `fieldstore serve` end to end over gRPC: every RPC, watch resume after 410, paging across a
//! compaction, bookmarks, authentication and authorization refusals, the size limit, health,
//! and shutdown with open watches. Each test starts its own server on `127.0.0.1:0`.

// Test support (the server it starts, its clients) unwraps too: a failed setup is a failed test.
#![allow(clippy::unwrap_used)]

use fieldstore_server::proto::pb::{self, store_client::StoreClient};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tonic::transport::Channel;
use tonic::{Code, Request};

struct Server {
    child: Child,
    addr: String,
    /// The first line the server printed.
    banner: String,
    _dir: tempfile::TempDir,
}

impl Server {
    fn start(extra: &[&str]) -> Server {
        let dir = tempfile::tempdir().unwrap();
        Self::start_in(dir, extra)
    }

    fn start_in(dir: tempfile::TempDir, extra: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_fieldstore"))
            .arg("--data")
            .arg(dir.path().join("data"))
            // The gRPC API alone: no HTTP API, so no namespaces created at start either, and
            // revisions count from the test's first write.
            .args(["serve", "--listen", "127.0.0.1:0", "--no-http"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn fieldstore serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let addr = line.split_whitespace().nth(3).unwrap_or_else(|| panic!("no address in {line:?}")).to_string();
        Server { child, addr, banner: line, _dir: dir }
    }

    async fn channel(&self) -> Channel {
        Channel::from_shared(format!("http://{}", self.addr)).unwrap().connect().await.unwrap()
    }

    async fn client(&self) -> StoreClient<Channel> {
        StoreClient::new(self.channel().await).max_decoding_message_size(64 << 20)
    }

    fn terminate(&mut self) -> std::process::ExitStatus {
        Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status().unwrap();
        self.child.wait().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn body(v: &Value) -> Option<pb::Body> {
    Some(pb::Body { content_type: "application/json".into(), data: serde_json::to_vec(v).unwrap().into() })
}

fn obj(resp: pb::ObjectResponse) -> Value {
    serde_json::from_slice(&resp.object.unwrap().data).unwrap()
}

fn k8s(status: &tonic::Status) -> Value {
    serde_json::from_slice(status.details()).unwrap_or(Value::Null)
}

fn cm(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns"}, "data": data})
}

fn oref(resource: &str, name: &str) -> Option<pb::ObjectRef> {
    Some(pb::ObjectRef { resource: resource.into(), namespace: "ns".into(), name: name.into() })
}

fn write(o: &Value, manager: &str) -> pb::WriteRequest {
    pb::WriteRequest { body: body(o), field_manager: manager.into(), ..Default::default() }
}

async fn next_event(stream: &mut tonic::Streaming<pb::WatchEvent>) -> pb::WatchEvent {
    tokio::time::timeout(Duration::from_secs(10), stream.message()).await.expect("an event in time").unwrap().expect("the stream is open")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_rpc() {
    let server = Server::start(&[]);
    let mut c = server.client().await;

    // Health.
    let mut health = tonic_health::pb::health_client::HealthClient::new(server.channel().await);
    let h = health.check(tonic_health::pb::HealthCheckRequest { service: "fieldstore.v1.Store".into() }).await.unwrap().into_inner();
    assert_eq!(h.status, tonic_health::pb::health_check_response::ServingStatus::Serving as i32);

    // Types: the built-ins plus a registered CRD.
    let types = c.list_types(pb::ListTypesRequest {}).await.unwrap().into_inner().types;
    for r in ["configmaps", "secrets", "namespaces", "pods", "services", "deployments.apps"] {
        assert!(types.iter().any(|t| t.resource == r), "{r} missing");
    }
    let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {kind: Widget, plural: widgets}\n  versions:\n  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}\n";
    let reg = c
        .register_type(pb::RegisterTypeRequest { definition: Some(pb::Body { content_type: "application/yaml".into(), data: crd.into() }) })
        .await
        .unwrap();
    assert_eq!(reg.into_inner().resource, "widgets.example.com");

    // Create (default field manager: the caller), Get in JSON and protobuf.
    let created = obj(c.create(write(&cm("a", json!({"k": "1"})), "")).await.unwrap().into_inner());
    assert_eq!(created["metadata"]["managedFields"][0]["manager"], "anonymous");
    let got = c
        .get(pb::GetRequest { object: oref("configmaps", "a"), accept: "application/vnd.kubernetes.protobuf".into(), ..Default::default() })
        .await
        .unwrap()
        .into_inner();
    let b = got.object.unwrap();
    assert!(b.data.starts_with(b"k8s\0"));
    let env = fieldstore_codec::Envelope::decode(&b.data).unwrap();
    assert_eq!((env.api_version.as_str(), env.kind.as_str()), ("v1", "ConfigMap"));

    // Apply, conflict with causes, force.
    c.apply(write(&cm("a", json!({"k": "1", "x": "1"})), "alice")).await.unwrap();
    let err = c.apply(write(&cm("a", json!({"x": "2"})), "bob")).await.unwrap_err();
    assert_eq!(err.code(), Code::Aborted);
    let st = k8s(&err);
    assert_eq!(st["reason"], "Conflict");
    assert_eq!(st["details"]["causes"][0]["field"], ".data.x");
    assert_eq!(st["details"]["causes"][0]["message"], "conflict with \"alice\"");
    let forced = obj(c.apply(pb::WriteRequest { force: true, ..write(&cm("a", json!({"x": "2"})), "bob") }).await.unwrap().into_inner());
    assert_eq!(forced["data"]["x"], "2");

    // Update with a stale resourceVersion: 409; Patch.
    let mut stale = created.clone();
    stale["data"]["k"] = json!("9");
    assert_eq!(c.update(write(&stale, "u")).await.unwrap_err().code(), Code::Aborted);
    let patched = c
        .patch(pb::PatchRequest {
            object: oref("configmaps", "a"),
            patch_type: "merge".into(),
            patch: body(&json!({"data": {"p": "1"}})),
            field_manager: "p".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(obj(patched.into_inner())["data"]["p"], "1");

    // Watch from the current revision with bookmarks; a write and a requested bookmark arrive.
    let rev = c.revision(pb::RevisionRequest {}).await.unwrap().into_inner().revision;
    let mut w = c
        .watch(pb::WatchRequest {
            resource: "configmaps".into(),
            namespace: "ns".into(),
            resource_version: rev.to_string(),
            allow_watch_bookmarks: true,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    c.create(write(&cm("b", json!({})), "w")).await.unwrap();
    let ev = next_event(&mut w).await;
    assert_eq!((ev.r#type.as_str(), ev.resource_version), ("ADDED", rev + 1));
    c.request_bookmark(pb::RequestBookmarkRequest {}).await.unwrap();
    let mut ev = next_event(&mut w).await;
    while ev.r#type != "BOOKMARK" {
        ev = next_event(&mut w).await;
    }
    assert_eq!(ev.resource_version, rev + 1);

    // List with paging.
    let page = c
        .list(pb::ListRequest { resource: "configmaps".into(), namespace: "ns".into(), limit: 1, ..Default::default() })
        .await
        .unwrap()
        .into_inner();
    let page: Value = serde_json::from_slice(&page.list.unwrap().data).unwrap();
    assert_eq!(page["items"].as_array().unwrap().len(), 1);
    let token = page["metadata"]["continue"].as_str().unwrap().to_string();
    let rest = c
        .list(pb::ListRequest { resource: "configmaps".into(), namespace: "ns".into(), limit: 1, r#continue: token, ..Default::default() })
        .await
        .unwrap()
        .into_inner();
    let rest: Value = serde_json::from_slice(&rest.list.unwrap().data).unwrap();
    assert_eq!(rest["items"][0]["metadata"]["name"], "b");

    // History and ownership.
    let json_of = |r: pb::JsonResponse| -> Value { serde_json::from_slice(&r.json).unwrap() };
    let blame = json_of(c.blame(oref("configmaps", "a").unwrap()).await.unwrap().into_inner());
    let x = blame.as_array().unwrap().iter().find(|l| l["path"] == ".data.x").unwrap().clone();
    assert_eq!((x["manager"].as_str(), x["operation"].as_str()), (Some("bob"), Some("Apply")));
    let hist = json_of(
        c.field_history(pb::FieldHistoryRequest { object: oref("configmaps", "a"), path: ".data.x".into(), ..Default::default() })
            .await
            .unwrap()
            .into_inner(),
    );
    assert_eq!(hist["events"][0]["before"], "1");
    assert_eq!(hist["events"][0]["after"], "2");
    let log = json_of(c.object_log(pb::ObjectLogRequest { object: oref("configmaps", "a"), limit: 0 }).await.unwrap().into_inner());
    assert_eq!(log.as_array().unwrap().len(), 4);
    let owners =
        json_of(c.owners_of(pb::OwnersOfRequest { resource: "configmaps".into(), path: ".data.x".into() }).await.unwrap().into_inner());
    assert_eq!(owners[0]["manager"], "bob");
    let by = json_of(
        c.objects_managed_by(pb::ObjectsManagedByRequest { manager: "alice".into(), ..Default::default() }).await.unwrap().into_inner(),
    );
    assert_eq!(by["items"][0]["name"], "a");
    let managers = json_of(c.managers(pb::ManagersRequest::default()).await.unwrap().into_inner());
    assert!(managers.as_array().unwrap().iter().any(|m| m["manager"] == "bob"));
    assert_eq!(c.rename_manager(pb::RenameManagerRequest { from: "bob".into(), to: "robert".into() }).await.unwrap().into_inner().count, 1);
    assert_eq!(c.release(pb::ReleaseRequest { manager: "robert".into(), ..Default::default() }).await.unwrap().into_inner().count, 1);

    // Compact, then the object at an old revision is rebuilt from history.
    let compacted = c.compact(pb::CompactRequest { revision: 0 }).await.unwrap().into_inner().compacted_revision;
    assert!(compacted > 3);
    let old =
        c.object_at(pb::ObjectAtRequest { object: oref("configmaps", "a"), revision: 1, ..Default::default() }).await.unwrap().into_inner();
    assert_eq!(obj(old)["data"], json!({"k": "1"}));

    // Delete and DeleteCollection.
    c.delete(pb::DeleteRequest { object: oref("configmaps", "a"), ..Default::default() }).await.unwrap();
    let err = c.get(pb::GetRequest { object: oref("configmaps", "a"), ..Default::default() }).await.unwrap_err();
    assert_eq!((err.code(), k8s(&err)["code"].as_u64()), (Code::NotFound, Some(404)));
    let gone = c
        .delete_collection(pb::DeleteCollectionRequest {
            list: Some(pb::ListRequest { resource: "configmaps".into(), namespace: "ns".into(), ..Default::default() }),
            dry_run: false,
        })
        .await
        .unwrap()
        .into_inner();
    let gone: Value = serde_json::from_slice(&gone.list.unwrap().data).unwrap();
    assert_eq!(gone["items"].as_array().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paging_and_watching_across_a_compaction_answer_410_then_resume() {
    let server = Server::start(&[]);
    let mut c = server.client().await;
    for i in 0..3 {
        c.create(write(&cm(&format!("o{i}"), json!({})), "m")).await.unwrap();
    }
    let page = c
        .list(pb::ListRequest { resource: "configmaps".into(), namespace: "ns".into(), limit: 1, ..Default::default() })
        .await
        .unwrap()
        .into_inner();
    let page: Value = serde_json::from_slice(&page.list.unwrap().data).unwrap();
    let token = page["metadata"]["continue"].as_str().unwrap().to_string();
    c.apply(write(&cm("o0", json!({"v": "1"})), "m")).await.unwrap();
    c.compact(pb::CompactRequest { revision: 0 }).await.unwrap();
    let err = c
        .list(pb::ListRequest { resource: "configmaps".into(), namespace: "ns".into(), limit: 1, r#continue: token, ..Default::default() })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition);
    assert_eq!(k8s(&err)["code"], 410);
    // A watch from before the compaction ends with 410; relist and watch from the new revision.
    let outcome = c
        .watch(pb::WatchRequest {
            resource: "configmaps".into(),
            namespace: "ns".into(),
            resource_version: "1".into(),
            ..Default::default()
        })
        .await;
    match outcome {
        Err(e) => assert_eq!(k8s(&e)["code"], 410),
        Ok(stream) => {
            let mut s = stream.into_inner();
            let ev = next_event(&mut s).await;
            assert_eq!(ev.r#type, "ERROR");
            let st: Value = serde_json::from_slice(&ev.object.unwrap().data).unwrap();
            assert_eq!(st["code"], 410);
        }
    }
    let list =
        c.list(pb::ListRequest { resource: "configmaps".into(), namespace: "ns".into(), ..Default::default() }).await.unwrap().into_inner();
    let list: Value = serde_json::from_slice(&list.list.unwrap().data).unwrap();
    let rv = list["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let mut w = c
        .watch(pb::WatchRequest { resource: "configmaps".into(), namespace: "ns".into(), resource_version: rv, ..Default::default() })
        .await
        .unwrap()
        .into_inner();
    c.apply(write(&cm("o1", json!({"v": "1"})), "m")).await.unwrap();
    let ev = next_event(&mut w).await;
    assert_eq!(ev.r#type, "MODIFIED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authentication_authorization_and_limits() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "admintoken,admin,1,\"admins\"\nreadtoken,reader,2\n").unwrap();
    let authz = dir.path().join("authz.yaml");
    std::fs::write(&authz, "- {groups: [admins], verbs: ['*'], resources: ['*'], namespaces: ['*']}\n- {users: [reader], verbs: [get, list, watch], resources: ['*'], namespaces: ['*']}\n").unwrap();
    let server = Server::start_in(
        dir,
        &["--token-file", tokens.to_str().unwrap(), "--authz-file", authz.to_str().unwrap(), "--max-request-bytes", "4096"],
    );
    let mut c = server.client().await;
    let with = |token: &str, msg: pb::WriteRequest| {
        let mut r = Request::new(msg);
        r.metadata_mut().insert("authorization", format!("Bearer {token}").parse().unwrap());
        r
    };
    // No token, unknown token: 401.
    let err = c.create(write(&cm("a", json!({})), "")).await.unwrap_err();
    assert_eq!((err.code(), k8s(&err)["code"].as_u64()), (Code::Unauthenticated, Some(401)));
    assert_eq!(c.create(with("nope", write(&cm("a", json!({})), ""))).await.unwrap_err().code(), Code::Unauthenticated);
    // The admin writes; the default field manager is its user name.
    let created = obj(c.create(with("admintoken", write(&cm("a", json!({})), ""))).await.unwrap().into_inner());
    assert_eq!(created["metadata"]["managedFields"][0]["manager"], "admin");
    // The reader may read but not write: 403.
    let mut get = Request::new(pb::GetRequest { object: oref("configmaps", "a"), ..Default::default() });
    get.metadata_mut().insert("authorization", "Bearer readtoken".parse().unwrap());
    assert!(c.get(get).await.is_ok());
    let err = c.apply(with("readtoken", write(&cm("a", json!({"x": "1"})), "r"))).await.unwrap_err();
    assert_eq!((err.code(), k8s(&err)["reason"].as_str()), (Code::PermissionDenied, Some("Forbidden")));
    // Over the size limit: 413 with a Status.
    let big = cm("big", json!({"k": "x".repeat(8192)}));
    let err = c.create(with("admintoken", write(&big, ""))).await.unwrap_err();
    assert_eq!((err.code(), k8s(&err)["code"].as_u64()), (Code::ResourceExhausted, Some(413)));
    // Beyond loopback without tokens the server refuses to start.
    let out = Command::new(env!("CARGO_BIN_EXE_fieldstore"))
        .args(["--data", "/nonexistent-never-created", "serve", "--listen", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("without --token-file"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_ends_open_watches_with_a_bookmark() {
    let mut server = Server::start(&[]);
    let mut c = server.client().await;
    c.create(write(&cm("a", json!({})), "m")).await.unwrap();
    let mut w = c
        .watch(pb::WatchRequest {
            resource: "configmaps".into(),
            namespace: "ns".into(),
            resource_version: "1".into(),
            allow_watch_bookmarks: true,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    // Nothing is pending; SIGTERM ends the watch with a bookmark at the current revision.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let status = tokio::task::spawn_blocking(move || {
        let s = server.terminate();
        (s, server)
    });
    let ev = next_event(&mut w).await;
    assert_eq!((ev.r#type.as_str(), ev.resource_version), ("BOOKMARK", 1));
    let end = tokio::time::timeout(Duration::from_secs(10), w.message()).await.expect("the stream ends");
    assert!(matches!(end, Ok(None) | Err(_)));
    let (exit, _server) = status.await.unwrap();
    assert!(exit.success(), "{exit:?}");
}

/// The CLI's verbs against the server (`--server`), as they run on a data directory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_verbs_work_against_a_server() {
    let server = Server::start(&[]);
    let addr = server.addr.clone();
    tokio::task::spawn_blocking(move || {
        let run = |args: &[&str], stdin: &str| {
            use std::io::Write;
            let mut child = Command::new(env!("CARGO_BIN_EXE_fieldstore"))
                .args(["--server", &addr])
                .args(args)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
            child.wait_with_output().unwrap()
        };
        let ok = |args: &[&str], stdin: &str| {
            let out = run(args, stdin);
            assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8(out.stdout).unwrap()
        };
        let deploy = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 2\n  template:\n    spec:\n      containers:\n      - {name: app, image: app:1}\n";
        assert!(ok(&["apply", "-f", "-", "--manager", "alice"], deploy).contains("deployments.apps/web applied"));
        // A conflicting apply: exit 1, the Status on stdout with -o json.
        let out = run(&["apply", "-f", "-", "--manager", "bob", "-o", "json"], &deploy.replace("replicas: 2", "replicas: 3"));
        assert_eq!(out.status.code(), Some(1));
        let st: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(st["details"]["causes"][0]["field"], ".spec.replicas");
        let out = run(&["apply", "-f", "-", "--manager", "bob"], &deploy.replace("replicas: 2", "replicas: 3"));
        assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: Conflict (409): Apply failed with 1 conflict"));
        ok(&["patch", "deployment", "web", "--type", "merge", "-p", r#"{"spec":{"replicas":4}}"#, "--manager", "hpa"], "");
        assert!(ok(&["get", "deployment", "web"], "").contains("replicas: 4"));
        assert!(ok(&["list", "deployments"], "").contains("web"));
        let blame = ok(&["blame", "deployment", "web"], "");
        assert!(blame.lines().any(|l| l.contains("replicas: 4") && l.contains("# hpa (Update)")), "{blame}");
        assert!(ok(&["history", "deployment", "web", "--path", ".spec.replicas"], "").contains("modified"));
        assert!(ok(&["owners", "deployment", "--path", ".spec.replicas"], "").contains("hpa"));
        assert!(ok(&["managers"], "").contains("alice"));
        // Watch from 0: the state as ADDED, stopping after one event; JSON events.
        let w = ok(&["watch", "deployments", "--resource-version", "0", "--max-events", "1", "-o", "json"], "");
        let ev: Value = serde_json::from_str(w.lines().next().unwrap()).unwrap();
        assert_eq!((ev["type"].as_str(), ev["object"]["metadata"]["name"].as_str()), (Some("ADDED"), Some("web")));
        assert!(ok(&["request-bookmark"], "").contains("revision"));
        assert_eq!(ok(&["revision"], "").trim(), "2");
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_requests_and_watches() {
    let server = Server::start(&["--metrics", "127.0.0.1:0"]);
    let metrics_url = server.banner.split("metrics http://").nth(1).unwrap().trim_end().trim_end_matches(')').to_string();
    let mut c = server.client().await;
    c.apply(write(&cm("a", json!({"k": "1"})), "m")).await.unwrap();
    let _ = c.get(pb::GetRequest { object: oref("configmaps", "missing"), ..Default::default() }).await;
    let _w = c
        .watch(pb::WatchRequest {
            resource: "configmaps".into(),
            namespace: "ns".into(),
            resource_version: "1".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let text = tokio::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let (host, path) = metrics_url.split_once('/').unwrap();
        let mut sock = std::net::TcpStream::connect(host).unwrap();
        write!(sock, "GET /{path} HTTP/1.1\r\nHost: {host}\r\n\r\n").unwrap();
        let mut out = String::new();
        sock.read_to_string(&mut out).unwrap();
        out
    })
    .await
    .unwrap();
    assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
    assert!(text.contains("fieldstore_requests_total{method=\"Apply\",code=\"0\"} 1"), "{text}");
    assert!(text.contains("fieldstore_requests_total{method=\"Get\",code=\"5\"} 1"), "{text}");
    assert!(text.contains("fieldstore_request_duration_seconds_count{method=\"Apply\"} 1"), "{text}");
    assert!(text.contains("fieldstore_watches 1"), "{text}");
    assert!(text.contains("fieldstore_revision 1"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_a_given_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let (cert_pem, key_pem) = (cert.cert.pem(), cert.key_pair.serialize_pem());
    let cert_file = dir.path().join("cert.pem");
    let key_file = dir.path().join("key.pem");
    std::fs::write(&cert_file, &cert_pem).unwrap();
    std::fs::write(&key_file, &key_pem).unwrap();
    let server = Server::start_in(dir, &["--tls-cert", cert_file.to_str().unwrap(), "--tls-key", key_file.to_str().unwrap()]);
    assert!(server.banner.contains("(https;"), "{}", server.banner);
    let tls = tonic::transport::ClientTlsConfig::new()
        .ca_certificate(tonic::transport::Certificate::from_pem(&cert_pem))
        .domain_name("localhost");
    // A client that connects and never starts its handshake holds up no one.
    let _stalled = tokio::net::TcpStream::connect(&server.addr).await.unwrap();
    let channel = Channel::from_shared(format!("https://{}", server.addr)).unwrap().tls_config(tls).unwrap().connect().await.unwrap();
    let mut c = StoreClient::new(channel);
    let out = obj(c.apply(write(&cm("a", json!({"k": "1"})), "m")).await.unwrap().into_inner());
    assert_eq!(out["data"]["k"], "1");
    // Watch streams sharing the TLS connection (whose writes are coalesced above TLS) each get
    // every change once, in order.
    let from = out["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let mut streams = Vec::new();
    for _ in 0..3 {
        let req = pb::WatchRequest {
            resource: "configmaps".into(),
            namespace: "ns".into(),
            resource_version: from.clone(),
            ..Default::default()
        };
        streams.push(c.watch(req).await.unwrap().into_inner());
    }
    let mut want = Vec::new();
    for v in ["2", "3", "4"] {
        let out = obj(c.apply(write(&cm("a", json!({"k": v})), "m")).await.unwrap().into_inner());
        want.push(out["metadata"]["resourceVersion"].as_str().unwrap().parse::<u64>().unwrap());
    }
    for s in &mut streams {
        let mut got = Vec::new();
        while got.len() < want.len() {
            let ev = tokio::time::timeout(Duration::from_secs(10), s.message()).await.unwrap().unwrap().unwrap();
            assert_eq!(ev.r#type, "MODIFIED");
            got.push(ev.resource_version);
        }
        assert_eq!(got, want);
    }
    // A plaintext client cannot talk to it.
    let plain = Channel::from_shared(format!("http://{}", server.addr)).unwrap().connect().await;
    if let Ok(ch) = plain {
        assert!(StoreClient::new(ch).revision(pb::RevisionRequest {}).await.is_err());
    }
    // The CLI with --tls-ca, by the certificate's name.
    let addr = format!("https://localhost:{}", server.addr.rsplit(':').next().unwrap());
    let ca = server._dir.path().join("cert.pem");
    let out = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_fieldstore"))
            .args(["--server", &addr, "--tls-ca", ca.to_str().unwrap(), "revision"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), want[2].to_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_depth_and_deadline_limits() {
    let server = Server::start(&["--max-watches-per-client", "1", "--max-depth", "6", "--request-deadline-seconds", "1"]);
    let mut c = server.client().await;
    let watch =
        || pb::WatchRequest { resource: "configmaps".into(), namespace: "ns".into(), resource_version: "0".into(), ..Default::default() };
    let first = c.watch(watch()).await.unwrap();
    let err = c.watch(watch()).await.unwrap_err();
    assert_eq!(
        (err.code(), k8s(&err)["code"].as_u64(), k8s(&err)["reason"].as_str()),
        (Code::ResourceExhausted, Some(429), Some("TooManyRequests"))
    );
    // Closing the first watch frees the slot.
    drop(first);
    let mut reopened = None;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if let Ok(w) = c.watch(watch()).await {
            reopened = Some(w);
            break;
        }
    }
    assert!(reopened.is_some(), "the watch slot was not released");
    // Too deep: 400.
    let deep = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d", "namespace": "ns", "annotations": {}}, "x": {"a": {"b": {"c": {"d": {"e": {}}}}}}});
    let err = c.apply(write(&deep, "m")).await.unwrap_err();
    assert_eq!((err.code(), k8s(&err)["code"].as_u64()), (Code::InvalidArgument, Some(400)));
    // A read waiting for a future revision outlives the 1 s deadline: 504.
    let err =
        c.get(pb::GetRequest { object: oref("configmaps", "a"), resource_version: "1000".into(), ..Default::default() }).await.unwrap_err();
    assert_eq!(
        (err.code(), k8s(&err)["code"].as_u64(), k8s(&err)["reason"].as_str()),
        (Code::DeadlineExceeded, Some(504), Some("Timeout"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn types_from_an_openapi_document() {
    let doc = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/openapi-widgets.json");
    let server = Server::start(&["--types", doc]);
    let mut c = server.client().await;
    let types = c.list_types(pb::ListTypesRequest {}).await.unwrap().into_inner().types;
    let w = types.iter().find(|t| t.resource == "widgets.example.com").expect("widgets registered");
    assert!(w.namespaced && w.status_subresource);
    // Its map list merges by key across managers.
    let widget = |port: i64| json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "ns"}, "spec": {"ports": [{"port": port}]}});
    c.apply(write(&widget(80), "a")).await.unwrap();
    let out = obj(c.apply(write(&widget(81), "b")).await.unwrap().into_inner());
    assert_eq!(out["spec"]["ports"].as_array().unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reflection_lists_the_services() {
    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
    use tonic_reflection::pb::v1::ServerReflectionRequest;
    let server = Server::start(&[]);
    let mut r = ServerReflectionClient::new(server.channel().await);
    let ask = |m: MessageRequest| ServerReflectionRequest { host: String::new(), message_request: Some(m) };
    let requests = tokio_stream::iter(vec![
        ask(MessageRequest::ListServices(String::new())),
        ask(MessageRequest::FileContainingSymbol("fieldstore.v1.Store".into())),
    ]);
    let mut answers = r.server_reflection_info(requests).await.unwrap().into_inner();
    match answers.message().await.unwrap().unwrap().message_response {
        Some(MessageResponse::ListServicesResponse(l)) => {
            let names: Vec<&str> = l.service.iter().map(|s| s.name.as_str()).collect();
            assert!(names.contains(&"fieldstore.v1.Store"), "{names:?}");
        }
        other => panic!("unexpected {other:?}"),
    }
    match answers.message().await.unwrap().unwrap().message_response {
        Some(MessageResponse::FileDescriptorResponse(f)) => assert!(!f.file_descriptor_proto.is_empty()),
        other => panic!("unexpected {other:?}"),
    }
}

/// `application/vnd.kubernetes.protobuf` over gRPC: a create with a protobuf body, lists and watch
/// events in protobuf (built-in kinds in their Kubernetes encoding, custom resources JSON in `raw`),
/// and a truncated or wrong-typed protobuf body answered 400 with the field path, nothing written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protobuf_bodies_lists_and_watch_events() {
    use fieldstore_codec::k8s_protobuf::{encode_envelope_value, object_of_envelope};
    const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
    let server = Server::start(&[]);
    let mut c = server.client().await;
    let rev = c.revision(pb::RevisionRequest {}).await.unwrap().into_inner().revision;
    let mut w = c
        .watch(pb::WatchRequest {
            resource: "configmaps".into(),
            namespace: "ns".into(),
            resource_version: rev.to_string(),
            accept: PROTOBUF.into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let pb_body = |v: &Value| Some(pb::Body { content_type: PROTOBUF.into(), data: encode_envelope_value(v).unwrap().into() });
    let created = c
        .create(pb::WriteRequest { body: pb_body(&cm("p", json!({"k": "v"}))), field_manager: "m".into(), ..Default::default() })
        .await
        .unwrap();
    assert_eq!(obj(created.into_inner())["data"]["k"], "v");

    let ev = next_event(&mut w).await;
    let body = ev.object.unwrap();
    assert_eq!((ev.r#type.as_str(), body.content_type.as_str()), ("ADDED", PROTOBUF));
    let env = fieldstore_codec::Envelope::decode(&body.data).unwrap();
    assert_eq!((env.kind.as_str(), env.content_type.as_str()), ("ConfigMap", ""), "the real protobuf encoding");
    assert_eq!(object_of_envelope(&body.data).unwrap()["data"]["k"], "v");

    let list = c
        .list(pb::ListRequest { resource: "configmaps".into(), namespace: "ns".into(), accept: PROTOBUF.into(), ..Default::default() })
        .await
        .unwrap()
        .into_inner()
        .list
        .unwrap();
    let list = object_of_envelope(&list.data).unwrap();
    assert_eq!((list["kind"].as_str(), list["items"][0]["metadata"]["name"].as_str()), (Some("ConfigMapList"), Some("p")));

    // Bad protobuf bodies: 400 naming the field path; nothing written.
    let mut truncated = fieldstore_codec::Envelope::decode(&encode_envelope_value(&cm("q", json!({"k": "v"}))).unwrap()).unwrap();
    truncated.raw.truncate(truncated.raw.len() - 2);
    let wrong_type = {
        // ConfigMap.data (field 2) as a varint instead of a map entry.
        let mut env = fieldstore_codec::Envelope::decode(&encode_envelope_value(&cm("q", json!({}))).unwrap()).unwrap();
        env.raw.extend_from_slice(&[0x10, 0x01]);
        env
    };
    for (what, env) in [("truncated", truncated), ("wrong wire type", wrong_type)] {
        let err = c
            .create(pb::WriteRequest {
                body: Some(pb::Body { content_type: PROTOBUF.into(), data: env.encode().into() }),
                field_manager: "m".into(),
                ..Default::default()
            })
            .await
            .unwrap_err();
        let st = k8s(&err);
        assert_eq!((err.code(), st["code"].as_u64()), (Code::InvalidArgument, Some(400)), "{what}: {st}");
        assert!(st["message"].as_str().unwrap().contains("ConfigMap at ."), "{what}: {st}");
    }
    let err = c.get(pb::GetRequest { object: oref("configmaps", "q"), ..Default::default() }).await.unwrap_err();
    assert_eq!(err.code(), Code::NotFound);
}

/// A watch stream whose client stops reading fills its buffer (the connection's flow control
/// stops the server polling it) and ends with 410, while a watcher that reads gets every change
/// and the writers are not held back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_that_stops_reading_ends_with_410_and_holds_no_one_back() {
    const WRITES: usize = 2000;
    let server = Server::start(&[]);
    let mut c = server.client().await;
    let rev = c.revision(pb::RevisionRequest {}).await.unwrap().into_inner().revision;
    let watch = |rv: u64| pb::WatchRequest {
        resource: "configmaps".into(),
        namespace: "ns".into(),
        resource_version: rv.to_string(),
        ..Default::default()
    };
    // Each watcher on a connection of its own.
    let mut slow = server.client().await.watch(watch(rev)).await.unwrap().into_inner();
    let mut fast = server.client().await.watch(watch(rev)).await.unwrap().into_inner();
    let reader = tokio::spawn(async move {
        let mut revs = Vec::with_capacity(WRITES);
        while revs.len() < WRITES {
            let ev = next_event(&mut fast).await;
            assert_eq!(ev.r#type, "ADDED");
            revs.push(ev.resource_version);
        }
        revs
    });
    // 10 KB objects: the connection's windows and send buffer hold a few hundred of them, far
    // fewer than the watch buffer's 1,024 events beyond them.
    let payload = "x".repeat(10_000);
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let (mut c, payload) = (c.clone(), payload.clone());
            tokio::spawn(async move {
                for i in (w..WRITES).step_by(8) {
                    c.create(write(&cm(&format!("o{i}"), json!({"p": payload})), "m")).await.unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        tokio::time::timeout(Duration::from_secs(120), w).await.expect("the writes are not held back").unwrap();
    }
    let revs = tokio::time::timeout(Duration::from_secs(60), reader).await.expect("the reading watcher keeps up").unwrap();
    assert_eq!(revs, (rev + 1..=rev + WRITES as u64).collect::<Vec<u64>>());
    // The slow watcher: what was buffered before it overflowed, in order, then 410.
    let mut last = rev;
    loop {
        let ev = match tokio::time::timeout(Duration::from_secs(10), slow.message()).await {
            Ok(m) => m.unwrap().expect("the stream is open"),
            Err(_) => panic!("the slow watcher stalled after {} events", last - rev),
        };
        if ev.r#type == "ERROR" {
            let st: Value = serde_json::from_slice(&ev.object.unwrap().data).unwrap();
            assert_eq!(st["code"], 410, "{st}");
            break;
        }
        assert_eq!(ev.resource_version, last + 1);
        last = ev.resource_version;
    }
    assert!(last < rev + WRITES as u64, "the slow watcher was not ended");
}
