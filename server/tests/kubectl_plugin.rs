//! The kubectl plugin end to end against a stub API server (a `std::net` listener serving
//! canned JSON): it reads the kubeconfig (server, token, namespace), resolves resource names by
//! discovery, calls fieldstore's HTTP paths and prints as the `fieldstore` verbs print. Run
//! directly and, when kubectl is installed, as `kubectl fieldstore`.

// Helpers outside #[test] functions unwrap too: a panic there is a failed test with its message.
#![allow(clippy::unwrap_used)]

mod stub;

use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

const TOKEN: &str = "plugin-token";

/// The canned answer to `path?query`, or a 404 `Status`.
fn answer(target: &str) -> (u16, Value) {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let now_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
    let by = |rev: u64, manager: &str| json!({"revision": rev, "time": "", "unixMillis": now_ms - 65_000, "manager": manager, "operation": "Apply"});
    let line = |pointer: &str, path: &str, value: Value, rev: u64, manager: &str| {
        let mut l = by(rev, manager);
        l["pointer"] = json!(pointer);
        l["path"] = json!(path);
        l["value"] = value;
        l["owners"] = json!([manager]);
        l
    };
    match (path, query) {
        ("/api/v1", _) => (
            200,
            json!({"kind": "APIResourceList", "groupVersion": "v1", "resources": [
            {"name": "configmaps", "singularName": "configmap", "namespaced": true, "kind": "ConfigMap", "shortNames": ["cm"], "verbs": ["get"]},
            {"name": "namespaces", "singularName": "namespace", "namespaced": false, "kind": "Namespace", "shortNames": ["ns"], "verbs": ["get"]}]}),
        ),
        ("/apis", _) => (
            200,
            json!({"kind": "APIGroupList", "groups": [
            {"name": "apps", "versions": [{"groupVersion": "apps/v1", "version": "v1"}], "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"}}]}),
        ),
        ("/apis/apps/v1", _) => (
            200,
            json!({"kind": "APIResourceList", "groupVersion": "apps/v1", "resources": [
            {"name": "deployments", "singularName": "deployment", "namespaced": true, "kind": "Deployment", "shortNames": ["deploy"], "verbs": ["get"]},
            {"name": "deployments/status", "singularName": "", "namespaced": true, "kind": "Deployment", "verbs": ["get"]}]}),
        ),
        ("/api/v1/namespaces/dev/configmaps/x", _) => (
            200,
            json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "x", "namespace": "dev", "managedFields": [{"manager": "m"}]}, "data": {"a": "1"}}),
        ),
        ("/api/v1/namespaces/dev/configmaps/x/blame", _) => (200, json!([line("/data/a", ".data.a", json!("1"), 7, "alice")])),
        ("/api/v1/namespaces/dev/configmaps/x/history", "path=.data.a&limit=5") => (
            200,
            json!({"events": [
            {"revision": 7, "unixMillis": now_ms - 5_000, "manager": "alice", "operation": "Apply", "uid": "u", "path": ".data.a",
             "change": "modified", "before": "0", "after": "1"}], "nextBeforeRevision": 3}),
        ),
        ("/api/v1/namespaces/dev/configmaps/x/log", _) => (
            200,
            json!([
            {"revision": 7, "unixMillis": now_ms, "event": "MODIFIED", "manager": "alice", "operation": "Apply", "changedFields": 1, "note": ""}]),
        ),
        ("/apis/fieldstore.io/v1/owners", "resource=deployments.apps&path=.spec.replicas") => (
            200,
            json!([
            {"namespace": "dev", "name": "web", "manager": "hpa", "path": ".spec.replicas"}]),
        ),
        ("/apis/fieldstore.io/v1/managers", "") => (200, json!([{"manager": "alice", "objects": 2, "fields": 9}])),
        ("/apis/fieldstore.io/v1/managedobjects", "manager=alice&resource=configmaps") => (
            200,
            json!({"items": [
            {"resource": "configmaps", "namespace": "dev", "name": "x", "operations": ["Apply"], "fieldCount": 3}], "continue": "next"}),
        ),
        _ => (
            404,
            json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404,
            "message": format!("configmaps \"{}\" not found", path.rsplit('/').next().unwrap_or(""))}),
        ),
    }
}

/// Serves [`answer`] to requests with the token (401 to others); records each request's target.
fn stub() -> (String, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let url = stub::serve(move |req| {
        log.lock().unwrap().push(req.target.clone());
        let (code, body) = if req.header("authorization") == Some(&format!("Bearer {TOKEN}")) {
            answer(&req.target)
        } else {
            (
                401,
                json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Unauthorized", "code": 401, "message": "Unauthorized"}),
            )
        };
        (code, "application/json", body.to_string().into_bytes())
    });
    (url, seen)
}

fn kubeconfig(dir: &Path, server: &str, token: &str) -> std::path::PathBuf {
    let out = Command::new(env!("CARGO_BIN_EXE_fieldstore"))
        .args(["kubeconfig", "--server", server, "--token", token, "-n", "dev"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let file = dir.join(format!("config-{token}"));
    std::fs::write(&file, out.stdout).unwrap();
    file
}

fn plugin(config: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kubectl-fieldstore")).args(args).env("KUBECONFIG", config).env_remove("HOME").output().unwrap()
}

/// A tab-separated row without its second cell (the age, which depends on the clock).
fn without_age(row: &str) -> Vec<&str> {
    row.split('\t').enumerate().filter(|(i, _)| *i != 1).map(|(_, c)| c).collect()
}

fn stdout(o: &Output) -> String {
    assert!(o.status.success(), "failed: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout.clone()).unwrap()
}

#[test]
fn plugin_calls_the_http_paths_with_the_kubeconfig() {
    let (server, seen) = stub();
    let dir = tempfile::tempdir().unwrap();
    let config = kubeconfig(dir.path(), &server, TOKEN);

    // blame: the object as YAML (no managedFields), each field with its last change.
    let out = stdout(&plugin(&config, &["blame", "cm", "x"]));
    assert!(out.contains("kind: \"ConfigMap\"") || out.contains("kind: ConfigMap"), "{out}");
    let a = out.lines().find(|l| l.trim_start().starts_with("a:")).unwrap_or_else(|| panic!("no data.a line in {out}"));
    // (The age depends on the clock: not asserted.)
    assert!(a.contains("# alice (Apply) ") && a.ends_with(" ago, rv 7"), "{a}");
    assert!(!out.contains("managedFields"));
    // RESOURCE/NAME works too; JSON gives the server's answer.
    let json: Value = serde_json::from_str(&stdout(&plugin(&config, &["blame", "configmap/x", "-o", "json"]))).unwrap();
    assert_eq!(json[0]["pointer"], "/data/a");

    let out = stdout(&plugin(&config, &["history", "configmaps", "x", "--path", ".data.a", "--limit", "5"]));
    assert!(out.starts_with("REVISION\tAGE\tMANAGER\tOPERATION\tCHANGE\tPATH\tBEFORE\tAFTER\n"), "{out}");
    assert_eq!(without_age(out.lines().nth(1).unwrap()), ["7", "alice", "Apply", "modified", ".data.a", "\"0\"", "\"1\""]);
    assert!(out.contains("# more: --before-revision 3"));

    let out = stdout(&plugin(&config, &["log", "cm", "x"]));
    assert_eq!(without_age(out.lines().nth(1).unwrap()), ["7", "MODIFIED", "alice", "Apply", "1", ""]);

    let out = stdout(&plugin(&config, &["owners", "deploy", "--path", ".spec.replicas"]));
    assert_eq!(out, "NAMESPACE\tNAME\tMANAGER\tPATH\ndev\tweb\thpa\t.spec.replicas\n");

    let out = stdout(&plugin(&config, &["managers"]));
    assert_eq!(out, "MANAGER\tOBJECTS\tFIELDS\nalice\t2\t9\n");

    let out = stdout(&plugin(&config, &["managed-by", "alice", "--resource", "cm"]));
    assert_eq!(out, "RESOURCE\tNAMESPACE\tNAME\tOPERATIONS\tFIELDS\nconfigmaps\tdev\tx\tApply\t3\n# more: --continue next\n");

    // The namespace comes from the kubeconfig's context; -n overrides it.
    let missing = plugin(&config, &["blame", "cm", "x", "-n", "other"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("error: NotFound (404)"), "{}", String::from_utf8_lossy(&missing.stderr));
    let seen = seen.lock().unwrap().clone();
    assert!(seen.contains(&"/api/v1/namespaces/other/configmaps/x/blame".to_string()), "{seen:?}");
    assert!(seen.contains(&"/api/v1/namespaces/dev/configmaps/x/history?path=.data.a&limit=5".to_string()), "{seen:?}");

    // Unknown resources and a wrong token fail with a message, not a panic.
    let unknown = plugin(&config, &["blame", "widgets", "x"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("doesn't have a resource type \"widgets\""));
    let bad = kubeconfig(dir.path(), &server, "wrong");
    let denied = plugin(&bad, &["managers"]);
    assert_eq!(denied.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&denied.stderr).contains("Unauthorized (401)"));
    let none = plugin(&dir.path().join("absent"), &["managers"]);
    assert_eq!(none.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&none.stderr).contains("no kubeconfig found"));
}

#[test]
fn kubectl_runs_the_plugin_from_path() {
    let Some(kubectl) = std::env::var_os("PATH").and_then(|p| std::env::split_paths(&p).map(|d| d.join("kubectl")).find(|k| k.is_file()))
    else {
        eprintln!("skipping: no kubectl on PATH");
        return;
    };
    let (server, _) = stub();
    let dir = tempfile::tempdir().unwrap();
    let config = kubeconfig(dir.path(), &server, TOKEN);
    // kubectl finds `kubectl-fieldstore` on PATH: the directory cargo built it in.
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_kubectl-fieldstore")).parent().unwrap();
    let path =
        std::env::join_paths(std::iter::once(bin_dir.to_path_buf()).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())))
            .unwrap();
    let out = Command::new(kubectl).args(["fieldstore", "managers"]).env("PATH", path).env("KUBECONFIG", &config).output().unwrap();
    assert_eq!(stdout(&out), "MANAGER\tOBJECTS\tFIELDS\nalice\t2\t9\n");
}
