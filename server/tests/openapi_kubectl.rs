//! kubectl reads the generated OpenAPI documents: `kubectl explain` of built-in kinds and of a
//! CRD, through `/openapi/v3` (current kubectl) and through `/openapi/v2` as gnostic protobuf
//! (kubectl 1.27's `--output=plaintext-openapiv2`), served by a stub with the discovery
//! documents kubectl needs first. Skipped, with a reason, where kubectl is not installed.

// Helpers outside #[test] functions unwrap too: a panic there is a failed test with its message.
#![allow(clippy::unwrap_used)]

mod stub;

use fieldstore_engine::store::{builtin_types, TypeSpec};
use fieldstore_server::http::openapi;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

fn widget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced", "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "description": "What the widget should be.", "properties": {
                    "size": {"type": "integer", "description": "How big the widget is."}}}}}}}]}
    })
}

fn types() -> Vec<TypeSpec> {
    let mut t = builtin_types();
    t.push(TypeSpec::from_crd(&widget_crd()).unwrap());
    t
}

fn resource_list(types: &[TypeSpec], group: &str, version: &str) -> Option<Value> {
    let resources: Vec<Value> = types
        .iter()
        .filter(|t| t.group == group && t.version == version)
        .map(|t| {
            json!({"name": t.plural, "singularName": t.kind.to_lowercase(), "namespaced": t.namespaced, "kind": t.kind,
                "shortNames": t.short_names, "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]})
        })
        .collect();
    let gv = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
    (!resources.is_empty()).then(|| json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}))
}

/// Discovery and the OpenAPI documents of `types()`.
fn answer(req: &stub::Request) -> stub::Response {
    let types = types();
    let (path, _) = req.target.split_once('?').unwrap_or((&req.target, ""));
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let ok = |v: Value| (200, "application/json", v.to_string().into_bytes());
    let found = |v: Option<Value>| v.map_or_else(|| (404, "application/json", b"{}".to_vec()), ok);
    match segs.as_slice() {
        ["version"] => ok(json!({"major": "1", "minor": "33", "gitVersion": "v1.33.0"})),
        ["api"] => ok(json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []})),
        ["apis"] => {
            let mut gvs: Vec<(String, String)> =
                types.iter().filter(|t| !t.group.is_empty()).map(|t| (t.group.clone(), t.version.clone())).collect();
            gvs.sort();
            gvs.dedup();
            let groups: Vec<Value> = gvs
                .iter()
                .map(|(g, v)| {
                    let gv = json!({"groupVersion": format!("{g}/{v}"), "version": v});
                    json!({"name": g, "versions": [gv], "preferredVersion": gv})
                })
                .collect();
            ok(json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}))
        }
        ["api", v] => found(resource_list(&types, "", v)),
        ["apis", g, v] => found(resource_list(&types, g, v)),
        ["openapi", "v2"] => {
            let doc = openapi::v2(&types);
            if req.header("accept").is_some_and(openapi::wants_v2_protobuf) {
                (200, openapi::V2_PROTOBUF_CONTENT_TYPE, openapi::v2_protobuf(&doc))
            } else {
                ok(doc)
            }
        }
        ["openapi", "v3"] => ok(openapi::v3_index(&types)),
        ["openapi", "v3", "api", v] => found(openapi::v3_group_version(&types, "", v)),
        ["openapi", "v3", "apis", g, v] => found(openapi::v3_group_version(&types, g, v)),
        _ => (404, "application/json", b"{}".to_vec()),
    }
}

/// kubectl 1.27 (the oldest installed) and the newest, found beside `kubectl` on PATH.
fn kubectls() -> Vec<PathBuf> {
    let Some(kubectl) = std::env::var_os("PATH").and_then(|p| std::env::split_paths(&p).map(|d| d.join("kubectl")).find(|k| k.is_file()))
    else {
        return Vec::new();
    };
    let real = std::fs::canonicalize(&kubectl).unwrap_or(kubectl.clone());
    let dir = real.parent().unwrap_or(Path::new("/"));
    let mut versioned: Vec<(u32, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            let minor = name.strip_prefix("kubectl.1.")?.parse().ok()?;
            Some((minor, e.path()))
        })
        .collect();
    versioned.sort();
    match (versioned.first(), versioned.last()) {
        (Some(old), Some(new)) if old.0 != new.0 => vec![old.1.clone(), new.1.clone()],
        (Some(one), _) => vec![one.1.clone()],
        _ => vec![kubectl],
    }
}

fn explain(kubectl: &Path, config: &Path, args: &[&str]) -> String {
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(kubectl)
        .arg("explain")
        .args(args)
        .env("KUBECONFIG", config)
        // A fresh discovery and OpenAPI cache for each run.
        .env("HOME", home.path())
        .args(if std::env::var_os("DEBUG_KUBECTL").is_some() { &["-v=8"][..] } else { &[][..] })
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{} explain {args:?} failed: {}{text}", kubectl.display(), String::from_utf8_lossy(&out.stderr));
    text
}

#[test]
fn kubectl_explain_reads_the_documents() {
    let kubectls = kubectls();
    if kubectls.is_empty() {
        eprintln!("skipping: no kubectl on PATH");
        return;
    }
    let server = stub::serve(answer);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config");
    let out = Command::new(env!("CARGO_BIN_EXE_fieldstore")).args(["kubeconfig", "--server", &server]).output().unwrap();
    std::fs::write(&config, out.stdout).unwrap();
    for kubectl in &kubectls {
        eprintln!("kubectl explain with {}", kubectl.display());
        // OpenAPI v3 (the default of every kubectl installed).
        let text = explain(kubectl, &config, &["deployment.spec.template.spec.containers.ports"]);
        assert!(text.contains("containerPort"), "{text}");
        let text = explain(kubectl, &config, &["configmaps"]);
        assert!(text.contains("ConfigMap") && text.contains("binaryData"), "{text}");
        // Descriptions from the protos' comments, as kube-apiserver publishes them.
        assert!(text.contains("ConfigMap holds configuration data for pods to consume."), "{text}");
        let text = explain(kubectl, &config, &["deployment.spec.replicas"]);
        assert!(text.contains("Number of desired pods."), "{text}");
        let text = explain(kubectl, &config, &["widgets.spec"]);
        assert!(text.contains("size") && text.contains("How big the widget is."), "{text}");
        // OpenAPI v2, which kubectl fetches as gnostic protobuf.
        let text = explain(kubectl, &config, &["--output=plaintext-openapiv2", "pods.spec.containers"]);
        assert!(text.contains("RESOURCE: containers") && text.contains("imagePullPolicy"), "{text}");
        assert!(text.contains("List of containers belonging to the pod."), "{text}");
        let text = explain(kubectl, &config, &["--output=plaintext-openapiv2", "widgets.spec"]);
        assert!(text.contains("size"), "{text}");
    }
}
