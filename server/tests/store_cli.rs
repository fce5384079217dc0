//! The embedded CLI door: `fieldstore --data DIR <verb>` against a real data directory —
//! types register from a CRD, apply/create/replace/patch/get/list/delete/compact/revision, and
//! errors as Kubernetes `Status` JSON with `-o json`.

use serde_json::Value;
use std::path::Path;
use std::process::Output;

mod common;

fn run(data: &Path, args: &[&str], stdin: &[u8]) -> Output {
    let mut all = vec![std::ffi::OsStr::new("--data"), data.as_os_str()];
    all.extend(args.iter().map(std::ffi::OsStr::new));
    common::fieldstore(&all, stdin)
}

fn ok(data: &Path, args: &[&str], stdin: &[u8]) -> String {
    let out = run(data, args, stdin);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8 output")
}

fn json(data: &Path, args: &[&str], stdin: &[u8]) -> Value {
    serde_json::from_str(&ok(data, args, stdin)).expect("JSON output")
}

const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              replicas: {type: integer}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [port]
                items:
                  type: object
                  required: [port]
                  properties:
                    port: {type: integer}
                    name: {type: string}
          status:
            type: object
            properties:
              ready: {type: boolean}
"#;

const WIDGET: &str = r#"
apiVersion: example.com/v1
kind: Widget
metadata:
  name: w1
spec:
  replicas: 2
  ports:
  - {port: 80, name: http}
"#;

#[test]
fn crd_register_apply_get_list_patch_delete() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    assert!(ok(&data, &["types", "register", "-f", "-"], CRD.as_bytes()).contains("widgets.example.com"));
    let types = json(&data, &["types", "list", "-o", "json"], b"");
    let widget = types.as_array().and_then(|t| t.iter().find(|t| t["kind"] == "Widget")).expect("Widget among the types");
    assert_eq!(widget["statusSubresource"], true);
    // The built-in kinds are there too, from the start.
    assert!(types.as_array().is_some_and(|t| t.iter().any(|t| t["kind"] == "Deployment")));

    // Apply creates, then a second identical apply writes nothing.
    let created = json(&data, &["apply", "-f", "-", "--manager", "alice", "-o", "json"], WIDGET.as_bytes());
    assert_eq!(created["metadata"]["namespace"], "default");
    let rv = created["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    assert_eq!(created["metadata"]["managedFields"][0]["manager"], "alice");
    assert!(ok(&data, &["apply", "-f", "-", "--manager", "alice"], WIDGET.as_bytes()).contains("unchanged"));
    assert_eq!(ok(&data, &["revision"], b"").trim(), rv);

    // Another manager applying a different replicas value conflicts, naming the field.
    let conflicting = WIDGET.replace("replicas: 2", "replicas: 5");
    let out = run(&data, &["apply", "-f", "-", "--manager", "bob", "-o", "json"], conflicting.as_bytes());
    assert_eq!(out.status.code(), Some(1));
    let status: Value = serde_json::from_slice(&out.stdout).expect("Status JSON");
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["code"], 409);
    assert_eq!(status["details"]["causes"][0]["field"], ".spec.replicas");
    assert_eq!(status["details"]["causes"][0]["message"], "conflict with \"alice\"");
    // Forced, it moves the field.
    let forced = json(&data, &["apply", "-f", "-", "--manager", "bob", "--force", "-o", "json"], conflicting.as_bytes());
    assert_eq!(forced["spec"]["replicas"], 5);

    // Patch (merge) as the default manager, then get in YAML and JSON.
    ok(&data, &["patch", "widgets", "w1", "--type", "merge", "-p", r#"{"spec":{"replicas":7}}"#], b"");
    let got = json(&data, &["get", "widget", "w1", "-o", "json"], b"");
    assert_eq!(got["spec"]["replicas"], 7);
    let managers: Vec<&str> = got["metadata"]["managedFields"].as_array().unwrap().iter().map(|e| e["manager"].as_str().unwrap()).collect();
    assert!(managers.contains(&"fieldstore"), "{managers:?}");
    assert!(ok(&data, &["get", "Widget", "w1"], b"").contains("replicas: 7"));

    // Status subresource write through apply.
    let status_cfg = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nstatus: {ready: true}\n";
    let st = json(&data, &["apply", "-f", "-", "--manager", "ctrl", "--subresource", "status", "-o", "json"], status_cfg.as_bytes());
    assert_eq!(st["status"]["ready"], true);

    // A second object, then a paged list.
    ok(&data, &["create", "-f", "-"], WIDGET.replace("name: w1", "name: w2").as_bytes());
    let page = json(&data, &["list", "widgets", "--limit", "1", "-o", "json"], b"");
    assert_eq!(page["kind"], "WidgetList");
    assert_eq!(page["items"].as_array().unwrap().len(), 1);
    assert_eq!(page["metadata"]["remainingItemCount"], 1);
    let token = page["metadata"]["continue"].as_str().unwrap().to_string();
    let rest = json(&data, &["list", "widgets", "--limit", "1", "--continue", &token, "-o", "json"], b"");
    assert_eq!(rest["items"][0]["metadata"]["name"], "w2");
    assert!(ok(&data, &["list", "widgets", "-A"], b"").contains("w2"));

    // Delete, then get → NotFound as a Status; compact.
    assert!(ok(&data, &["delete", "widgets", "w2"], b"").contains("deleted"));
    let out = run(&data, &["get", "widgets", "w2", "-o", "json"], b"");
    assert_eq!(out.status.code(), Some(1));
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["reason"], "NotFound");
    let before = ok(&data, &["revision"], b"");
    assert_eq!(ok(&data, &["compact"], b"").trim(), format!("compacted {}", before.trim()));
}

#[test]
fn errors_without_json_are_one_line_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let out = run(&data, &["get", "widgets", "nope"], b"");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("error: NotFound (404): "), "{stderr}");
    assert_eq!(stderr.lines().count(), 1);

    // Apply without a manager is a usage error (exit 2).
    ok(&data, &["types", "register", "-f", "-"], CRD.as_bytes());
    let out = run(&data, &["apply", "-f", "-"], WIDGET.as_bytes());
    assert_eq!(out.status.code(), Some(2));
    // Invalid name → 422 Invalid naming metadata.name.
    let bad = WIDGET.replace("name: w1", "name: Not_Valid");
    let out = run(&data, &["apply", "-f", "-", "--manager", "m", "-o", "json"], bad.as_bytes());
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["code"], 422);
    assert_eq!(status["details"]["causes"][0]["field"], "metadata.name");
    // Nothing was written.
    assert_eq!(ok(&data, &["revision"], b"").trim(), "0");
}

#[test]
fn history_and_ownership_verbs() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    ok(&data, &["types", "register", "-f", "-"], CRD.as_bytes());
    ok(&data, &["apply", "-f", "-", "--manager", "alice"], WIDGET.as_bytes());
    ok(&data, &["patch", "widgets", "w1", "--type", "merge", "-p", r#"{"spec":{"replicas":9}}"#, "--manager", "hpa"], b"");
    ok(
        &data,
        &["apply", "-f", "-", "--manager", "alice"],
        WIDGET.replace("name: http", "name: web").replace("replicas: 2", "replicas: 9").as_bytes(),
    );

    // Blame: YAML with each leaf annotated; JSON: one record per leaf with its pointer.
    let text = ok(&data, &["blame", "widgets", "w1"], b"");
    let replicas = text.lines().find(|l| l.trim_start().starts_with("replicas:")).expect("replicas line");
    assert!(replicas.contains("# hpa (Update)") && replicas.contains("rv 2"), "{text}");
    let port_name = text.lines().find(|l| l.contains("\"web\"")).expect("port name line");
    assert!(port_name.contains("# alice (Apply)") && port_name.contains("rv 3"), "{text}");
    let records = json(&data, &["blame", "widgets", "w1", "-o", "json"], b"");
    let rec = records.as_array().unwrap().iter().find(|r| r["path"] == ".spec.ports[port=80].name").expect("keyed item field");
    assert_eq!(rec["pointer"], "/spec/ports/0/name");
    assert_eq!(rec["revision"], 3);
    assert_eq!(rec["manager"], "alice");
    assert_eq!(rec["operation"], "Apply");
    assert!(rec["time"].as_str().unwrap().ends_with('Z'));
    assert_eq!(rec["owners"], serde_json::json!(["alice"]));

    // The field's timeline, newest first.
    let h = json(&data, &["history", "widgets", "w1", "--path", ".spec.ports", "-o", "json"], b"");
    let events = h["events"].as_array().unwrap();
    assert_eq!(events[0]["after"], "web");
    assert_eq!(events[0]["before"], "http");
    assert_eq!(events[0]["change"], "modified");

    // Owners of a field, managers, objects managed by a manager.
    let owners = json(&data, &["owners", "widgets", "--path", ".spec.replicas", "-o", "json"], b"");
    let who: Vec<&str> = owners.as_array().unwrap().iter().map(|o| o["manager"].as_str().unwrap()).collect();
    assert_eq!(who, vec!["alice", "hpa"]);
    let managers = json(&data, &["managers", "-o", "json"], b"");
    assert_eq!(managers.as_array().unwrap().len(), 2);
    assert_eq!(json(&data, &["managed-by", "hpa", "-o", "json"], b"")["items"][0]["fieldCount"], 1);

    // Rename, release, and the object at an old revision after compaction.
    assert!(ok(&data, &["rename-manager", "hpa", "autoscaler"], b"").contains("in 1 objects"));
    assert!(ok(&data, &["release", "autoscaler"], b"").contains("from 1 objects"));
    assert_eq!(json(&data, &["managers", "-o", "json"], b"").as_array().unwrap().len(), 1);
    ok(&data, &["compact"], b"");
    let old = json(&data, &["get", "widgets", "w1", "--at-revision", "1", "-o", "json"], b"");
    assert_eq!(old["spec"]["replicas"], 2);
    assert_eq!(old["spec"]["ports"][0]["name"], "http");
    let log = json(&data, &["log", "widgets", "w1", "-o", "json"], b"");
    assert_eq!(log[0]["note"], "released ownership of manager \"autoscaler\"");
}

#[test]
fn apply_a_directory_list_as_a_table_and_conflicts_show_values() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let objs = dir.path().join("objs");
    std::fs::create_dir(&objs).unwrap();
    std::fs::write(objs.join("crd.txt"), "not an object: skipped").unwrap();
    std::fs::write(objs.join("a.yaml"), format!("{}---\n{}", WIDGET.replace("w1", "w2"), WIDGET.replace("w1", "w3"))).unwrap();
    std::fs::write(objs.join("b.json"), serde_json::to_string(&serde_yaml::from_str::<Value>(WIDGET).unwrap()).unwrap()).unwrap();
    ok(&data, &["types", "register", "-f", "-"], CRD.as_bytes());
    let out = ok(&data, &["apply", "-f", objs.to_str().unwrap(), "--manager", "ci"], b"");
    assert_eq!(out.lines().filter(|l| l.contains(" applied ")).count(), 3, "{out}");
    let table = ok(&data, &["list", "widgets"], b"");
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, vec!["NAME", "AGE", "RESOURCEVERSION"]);
    assert_eq!(table.lines().count(), 4, "{table}");
    assert!(ok(&data, &["list", "widgets", "-A"], b"").starts_with("NAMESPACE"));
    // A conflict names the field, its owner, the live and the applied value.
    let out = run(&data, &["apply", "-f", "-", "--manager", "other"], WIDGET.replace("replicas: 2", "replicas: 4").as_bytes());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(".spec.replicas: owned by \"ci\"; live 2, applied 4"), "{stderr}");
}

/// A data directory a running server holds is refused with an error that says so and names
/// `--server`, not RocksDB's lock-file message.
#[test]
fn a_data_directory_held_by_a_server_says_so() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let mut server = std::process::Command::new(env!("CARGO_BIN_EXE_fieldstore"))
        .arg("--data")
        .arg(&data)
        .args(["serve", "--listen", "127.0.0.1:0", "--no-http"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn fieldstore serve");
    // The first stdout line (the address) comes once the store is open.
    let mut line = String::new();
    BufReader::new(server.stdout.take().expect("stdout is piped")).read_line(&mut line).expect("address line");
    let out = run(&data, &["list", "configmaps"], b"");
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is in use by another process"), "{err}");
    assert!(err.contains("--server ADDR"), "{err}");
    assert!(!err.contains("LOCK"), "{err}");
}
