//! Built-in kinds as a new user meets them: no type registration, short names, and a Lease, a
//! Role and an EndpointSlice end to end — embedded (`--data DIR`) and over gRPC (`--server`).

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};

mod common;

const LEASE: &str = "apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: leader, namespace: kube-system}
spec: {holderIdentity: node-a, leaseDurationSeconds: 15}
";

const ROLE: &str = "apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader, namespace: default}
rules:
- {apiGroups: [''], resources: [pods], verbs: [get, list]}
";

const SLICE: &str = "apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-abc, namespace: default, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
endpoints:
- addresses: [10.0.0.1]
  conditions: {ready: true}
ports:
- {name: http, port: 80, protocol: TCP}
";

const CONFIGMAP: &str = "apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: default}
data: {mode: fast}
";

fn run(target: &[&str], args: &[&str], stdin: &[u8]) -> Output {
    let all: Vec<&std::ffi::OsStr> = target.iter().chain(args).map(std::ffi::OsStr::new).collect();
    common::fieldstore(&all, stdin)
}

fn ok(target: &[&str], args: &[&str], stdin: &[u8]) -> String {
    let out = run(target, args, stdin);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8 output")
}

fn json(target: &[&str], args: &[&str]) -> Value {
    serde_json::from_str(&ok(target, args, b"")).expect("JSON output")
}

/// Applies the three kinds and a ConfigMap, then reads them back by short and long names.
fn lease_role_slice_round_trip(target: &[&str]) {
    for (doc, resource) in [(LEASE, "leases"), (ROLE, "roles"), (SLICE, "endpointslices"), (CONFIGMAP, "configmaps")] {
        let out = ok(target, &["apply", "-f", "-", "--manager", "me"], doc.as_bytes());
        assert!(out.contains(resource), "{out}");
    }
    let lease = json(target, &["get", "lease", "leader", "-n", "kube-system", "-o", "json"]);
    assert_eq!(lease["spec"]["holderIdentity"], "node-a");
    assert_eq!(lease["metadata"].get("generation"), None, "leases have no generation: {lease}");
    let role = json(target, &["get", "roles.rbac.authorization.k8s.io", "reader", "-n", "default", "-o", "json"]);
    assert_eq!(role["rules"][0]["verbs"], serde_json::json!(["get", "list"]));
    assert_eq!(role["metadata"]["managedFields"][0]["fieldsV1"]["f:rules"], serde_json::json!({}), "rules are atomic");
    let slice = json(target, &["get", "endpointslice", "web-abc", "-n", "default", "-o", "json"]);
    let fields = slice["metadata"]["managedFields"][0]["fieldsV1"].to_string();
    assert!(fields.contains("f:ports"), "{fields}");
    assert_eq!(slice["endpoints"][0]["addresses"][0], "10.0.0.1");
    let list = json(target, &["list", "cm", "-n", "default", "-o", "json"]);
    assert_eq!(list["items"][0]["data"]["mode"], "fast");
    let table = ok(target, &["list", "cm", "-n", "default"], b"");
    assert!(table.contains("settings"), "{table}");
}

#[test]
fn builtin_kinds_work_embedded_without_registering_a_type() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let data = data.to_str().expect("utf-8 path");
    lease_role_slice_round_trip(&["--data", data]);
}

#[test]
fn builtin_kinds_work_over_grpc() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut server = Command::new(env!("CARGO_BIN_EXE_fieldstore"))
        .arg("--data")
        .arg(dir.path().join("data"))
        .args(["serve", "--listen", "127.0.0.1:0", "--no-http"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn fieldstore serve");
    let mut line = String::new();
    BufReader::new(server.stdout.take().expect("stdout is piped")).read_line(&mut line).expect("address line");
    // "fieldstore: serving on 127.0.0.1:PORT (…)"
    let addr = line.split_whitespace().skip_while(|w| *w != "on").nth(1).expect("an address on the first line").to_string();
    let _stop = Stop(server);
    lease_role_slice_round_trip(&["--server", &addr]);
    assert!(Path::new(&dir.path().join("data")).exists());
}

/// Stops the server when the test ends, failed or not.
struct Stop(std::process::Child);

impl Drop for Stop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
