//! The self-reviews of `kubectl auth` against `fieldstore serve`, answered from its token file
//! and authorization rules: SelfSubjectAccessReview (`can-i`), SelfSubjectRulesReview
//! (`can-i --list`) and SelfSubjectReview (`whoami`), over HTTP in JSON and protobuf, and with
//! kubectl when one is installed.

// Test support unwraps: a failed setup is a failed test.
#![allow(clippy::unwrap_used)]

mod common;
#[path = "support/http_server.rs"]
mod http_server;

use bytes::Bytes;
use http_server::Server;
use serde_json::{json, Value};
use std::process::Command;

const SSAR: &str = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
const SSRR: &str = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews";
const SSR: &str = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

fn access(verb: &str, resource: &str, group: &str, namespace: &str) -> Value {
    json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": verb, "resource": resource, "group": group, "namespace": namespace}}})
}

async fn review(s: &Server, token: &str, path: &str, body: &Value) -> Value {
    let auth = format!("Bearer {token}");
    let r = s.send("POST", path, &[("content-type", "application/json"), ("authorization", &auth)], body.to_string()).await;
    assert_eq!(r.code, 201, "{}", String::from_utf8_lossy(&r.body));
    r.json()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reviews_answer_from_the_authorization_rules() {
    let dir = tempfile::tempdir().unwrap();
    let flags = http_server::auth_flags(dir.path(), "default");
    let server = Server::start(&flags.iter().map(String::as_str).collect::<Vec<_>>());
    let s = &server;
    // The reader may get configmaps in default, not create them, nor read elsewhere.
    let yes = review(s, "readtoken", SSAR, &access("get", "configmaps", "", "default")).await;
    assert_eq!((yes["kind"].as_str(), yes["status"]["allowed"].as_bool()), (Some("SelfSubjectAccessReview"), Some(true)));
    assert_eq!(yes["spec"]["resourceAttributes"]["verb"], "get");
    let no = review(s, "readtoken", SSAR, &access("create", "configmaps", "", "default")).await;
    assert_eq!(no["status"]["allowed"], false);
    assert!(no["status"]["reason"].as_str().unwrap().contains("User \"reader\""), "{no}");
    assert_eq!(review(s, "readtoken", SSAR, &access("list", "deployments", "apps", "kube-system")).await["status"]["allowed"], false);
    assert_eq!(review(s, "admintoken", SSAR, &access("delete", "deployments", "apps", "kube-system")).await["status"]["allowed"], true);
    // Discovery paths are readable by every caller.
    let path = json!({"kind": "SelfSubjectAccessReview", "apiVersion": "authorization.k8s.io/v1",
        "spec": {"nonResourceAttributes": {"path": "/apis/apps", "verb": "get"}}});
    assert_eq!(review(s, "readtoken", SSAR, &path).await["status"]["allowed"], true);
    // The rules in a namespace, in RBAC's terms.
    let rules_body = json!({"kind": "SelfSubjectRulesReview", "apiVersion": "authorization.k8s.io/v1", "spec": {"namespace": "default"}});
    let rules = review(s, "readtoken", SSRR, &rules_body).await;
    assert_eq!(rules["status"]["resourceRules"], json!([{"verbs": ["get", "list", "watch"], "apiGroups": ["*"], "resources": ["*"]}]));
    assert_eq!(rules["status"]["incomplete"], false);
    let elsewhere = json!({"kind": "SelfSubjectRulesReview", "apiVersion": "authorization.k8s.io/v1", "spec": {"namespace": "other"}});
    assert_eq!(review(s, "readtoken", SSRR, &elsewhere).await["status"]["resourceRules"], json!([]));
    // Who the caller is.
    let me = review(s, "readtoken", SSR, &json!({"kind": "SelfSubjectReview", "apiVersion": "authentication.k8s.io/v1"})).await;
    assert_eq!(me["status"]["userInfo"]["username"], "reader");
    // Without a token: 401, as every request.
    assert_eq!(s.post(SSAR, &access("get", "pods", "", "default")).await.code, 401);
    // Only create: nothing is stored to read.
    assert_eq!(s.send("GET", SSAR, &[("authorization", "Bearer admintoken")], Bytes::new()).await.code, 405);
    // Protobuf in and out (what kubectl sends).
    let pb = common::fieldstore(&["envelope".as_ref(), "encode".as_ref()], access("create", "pods", "", "default").to_string().as_bytes());
    assert!(pb.status.success(), "{}", String::from_utf8_lossy(&pb.stderr));
    let headers = [("content-type", PROTOBUF), ("accept", PROTOBUF), ("authorization", "Bearer admintoken")];
    let r = s.send("POST", SSAR, &headers, Bytes::from(pb.stdout)).await;
    assert_eq!((r.code, r.headers["content-type"].to_str().unwrap()), (201, PROTOBUF));
    let decoded = common::fieldstore(&["envelope".as_ref(), "decode".as_ref()], &r.body);
    let decoded: Value = serde_json::from_slice(&decoded.stdout).unwrap();
    assert_eq!(decoded["status"]["allowed"], true);
    // Discovery lists them, create-only.
    let gv = s.send("GET", "/apis/authorization.k8s.io/v1", &[("authorization", "Bearer readtoken")], Bytes::new()).await.json();
    let r = gv["resources"].as_array().unwrap().iter().find(|r| r["name"] == "selfsubjectaccessreviews").unwrap().clone();
    assert_eq!((r["verbs"].clone(), r["namespaced"].clone()), (json!(["create"]), json!(false)));
}

/// kubectl, as a user runs it: over TLS, as client-go sends bearer tokens only there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_auth_against_the_rules() {
    let Some(kubectl) = kubectl() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let (cert_file, key_file, ca) = (dir.path().join("cert.pem"), dir.path().join("key.pem"), dir.path().join("ca.pem"));
    std::fs::write(&cert_file, cert.cert.pem()).unwrap();
    std::fs::write(&ca, cert.cert.pem()).unwrap();
    std::fs::write(&key_file, cert.key_pair.serialize_pem()).unwrap();
    let mut flags = http_server::auth_flags(dir.path(), "default");
    flags.extend(["--tls-cert".to_string(), cert_file.display().to_string(), "--tls-key".to_string(), key_file.display().to_string()]);
    let server = Server::start(&flags.iter().map(String::as_str).collect::<Vec<_>>());
    let port = server.http_addr().rsplit(':').next().unwrap().to_string();
    let config = dir.path().join("kubeconfig");
    std::fs::write(
        &config,
        format!("apiVersion: v1\nkind: Config\nclusters:\n- name: fs\n  cluster: {{server: \"https://localhost:{port}\", certificate-authority: {}}}\nusers:\n- name: u\n  user: {{token: readtoken}}\ncontexts:\n- name: fs\n  context: {{cluster: fs, user: u, namespace: default}}\ncurrent-context: fs\n", ca.display()),
    )
    .unwrap();
    let run = |args: &[&str]| Command::new(&kubectl).args(args).env("KUBECONFIG", &config).env("HOME", dir.path()).output().unwrap();
    let out = run(&["auth", "can-i", "list", "configmaps"]);
    assert_eq!((out.status.code(), String::from_utf8_lossy(&out.stdout).trim()), (Some(0), "yes"), "{out:?}");
    let out = run(&["auth", "can-i", "create", "configmaps"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("no"), "{out:?}");
    let out = run(&["auth", "can-i", "--list"]);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).lines().any(|l| l.starts_with("*.*") && l.contains("[get list watch]")), "{out:?}");
    let out = run(&["auth", "whoami"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("reader"), "{out:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_authorization_file_everything_is_allowed() {
    let server = Server::start(&[]);
    let s = &server;
    let r = s.post(SSAR, &access("delete", "namespaces", "", "default")).await;
    assert_eq!((r.code, r.json()["status"]["allowed"].as_bool()), (201, Some(true)));
    let rules =
        s.post(SSRR, &json!({"kind": "SelfSubjectRulesReview", "apiVersion": "authorization.k8s.io/v1", "spec": {"namespace": "x"}})).await;
    assert_eq!(rules.json()["status"]["resourceRules"], json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]));
    assert_eq!(s.post(SSR, &json!({"kind": "SelfSubjectReview"})).await.json()["status"]["userInfo"]["username"], "anonymous");
    if let Some(kubectl) = kubectl() {
        let dir = tempfile::tempdir().unwrap();
        let config = kubeconfig(dir.path(), s.http_addr(), "");
        let out = Command::new(&kubectl).args(["auth", "can-i", "create", "configmaps"]).env("KUBECONFIG", &config).output().unwrap();
        assert_eq!((out.status.code(), String::from_utf8_lossy(&out.stdout).trim()), (Some(0), "yes"), "{out:?}");
    }
}

/// `kubectl` on PATH, if any.
fn kubectl() -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    let found = std::env::split_paths(&path).map(|d| d.join("kubectl")).find(|p| p.is_file());
    if found.is_none() {
        eprintln!("no kubectl on PATH: its steps are skipped");
    }
    found
}

fn kubeconfig(dir: &std::path::Path, addr: &str, token: &str) -> std::path::PathBuf {
    let config = dir.join("kubeconfig");
    let user = if token.is_empty() { "{}".to_string() } else { format!("{{token: {token}}}") };
    std::fs::write(
        &config,
        format!("apiVersion: v1\nkind: Config\nclusters:\n- name: fs\n  cluster: {{server: \"http://{addr}\"}}\nusers:\n- name: u\n  user: {user}\ncontexts:\n- name: fs\n  context: {{cluster: fs, user: u, namespace: default}}\ncurrent-context: fs\n"),
    )
    .unwrap();
    config
}
