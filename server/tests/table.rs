//! Tables of the well-known kinds and of a CRD's printer columns: the column names kubectl
//! prints and each cell computed from a sample object, at a fixed clock.

// Helpers outside #[test] functions unwrap too: a panic there is a failed test with its message.
#![allow(clippy::unwrap_used)]

use fieldstore_engine::store::{builtin_type, TypeSpec};
use fieldstore_server::http::table::{table_at, IncludeObject};
use serde_json::{json, Value};

/// 2024-01-01T00:00:00Z.
const CREATED: i64 = 1_704_067_200;
/// Five minutes and three seconds later.
const NOW: i64 = CREATED + 303;

fn meta(name: &str) -> Value {
    json!({"name": name, "namespace": "default", "creationTimestamp": "2024-01-01T00:00:00Z", "labels": {"app": "web"}})
}

/// The column names (priority 0 only, or all for `wide`) and the single row's cells.
fn render(spec: &TypeSpec, obj: Value, wide: bool) -> (Vec<String>, Vec<Value>) {
    let t = table_at(spec, &[obj], IncludeObject::None, json!({}), NOW);
    assert_eq!((t["kind"].as_str(), t["apiVersion"].as_str()), (Some("Table"), Some("meta.k8s.io/v1")));
    let defs = t["columnDefinitions"].as_array().unwrap();
    let cells = t["rows"][0]["cells"].as_array().unwrap().clone();
    assert_eq!(defs.len(), cells.len(), "one cell per column");
    let keep: Vec<bool> = defs.iter().map(|d| wide || d["priority"] == 0).collect();
    let names = defs.iter().zip(&keep).filter(|(_, k)| **k).map(|(d, _)| d["name"].as_str().unwrap().to_uppercase()).collect();
    let cells = cells.into_iter().zip(keep).filter(|(_, k)| *k).map(|(c, _)| c).collect();
    (names, cells)
}

fn builtin(group: &str, kind: &str) -> TypeSpec {
    builtin_type(group, if group == "autoscaling" { "v2" } else { "v1" }, kind).unwrap()
}

#[test]
fn pod() {
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta("web-1"),
        "spec": {"nodeName": "node-a", "containers": [{"name": "app", "image": "nginx"}, {"name": "side", "image": "envoy"}]},
        "status": {"phase": "Running", "podIP": "10.0.0.7", "containerStatuses": [
            {"name": "app", "ready": true, "restartCount": 2, "state": {"running": {}},
             "lastState": {"terminated": {"finishedAt": "2024-01-01T00:04:00Z", "exitCode": 1}}},
            {"name": "side", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}});
    let spec = builtin("", "Pod");
    let (cols, cells) = render(&spec, pod.clone(), false);
    assert_eq!(cols, ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]);
    assert_eq!(cells, [json!("web-1"), json!("1/2"), json!("CrashLoopBackOff"), json!("2 (63s ago)"), json!("5m3s")]);
    let (cols, cells) = render(&spec, pod, true);
    assert_eq!(cols[5..], ["IP", "NODE", "NOMINATED NODE", "READINESS GATES"]);
    assert_eq!(cells[5..], [json!("10.0.0.7"), json!("node-a"), json!("<none>"), json!("<none>")]);
    // A fresh pod: no restarts (an integer), pending; deletion shows Terminating.
    let fresh = json!({"metadata": meta("p"), "spec": {"containers": [{"name": "a"}]}, "status": {"phase": "Pending"}});
    assert_eq!(render(&spec, fresh.clone(), false).1[1..4], [json!("0/1"), json!("Pending"), json!(0)]);
    let mut deleting = fresh;
    deleting["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:05:00Z");
    assert_eq!(render(&spec, deleting, false).1[2], json!("Terminating"));
    // No phase yet (no defaulting in the store): Pending, as Kubernetes would have set it.
    assert_eq!(render(&spec, json!({"metadata": meta("p"), "spec": {"containers": [{"name": "a"}]}}), false).1[2], json!("Pending"));
    let init = json!({"metadata": meta("p"), "spec": {"initContainers": [{"name": "i"}], "containers": [{"name": "a"}]},
        "status": {"phase": "Pending", "initContainerStatuses": [{"name": "i", "state": {"running": {}}}]}});
    assert_eq!(render(&spec, init, false).1[2], json!("Init:0/1"));
}

#[test]
fn deployment_replicaset_statefulset_daemonset() {
    let template = json!({"spec": {"containers": [{"name": "app", "image": "nginx:1"}, {"name": "log", "image": "busybox"}]}});
    let d = json!({"metadata": meta("web"), "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": template},
        "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}});
    let (cols, cells) = render(&builtin("apps", "Deployment"), d.clone(), true);
    assert_eq!(cols, ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]);
    assert_eq!(
        cells,
        [json!("web"), json!("2/3"), json!(3), json!(2), json!("5m3s"), json!("app,log"), json!("nginx:1,busybox"), json!("app=web")]
    );
    let (cols, cells) = render(&builtin("apps", "ReplicaSet"), d.clone(), false);
    assert_eq!(cols, ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]);
    assert_eq!(cells, [json!("web"), json!(3), json!(0), json!(2), json!("5m3s")]);
    let (cols, cells) = render(&builtin("apps", "StatefulSet"), d, true);
    assert_eq!(cols, ["NAME", "READY", "AGE", "CONTAINERS", "IMAGES"]);
    assert_eq!(cells[1], json!("2/3"));
    let ds = json!({"metadata": meta("agent"), "spec": {"selector": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]},
        "template": {"spec": {"nodeSelector": {"kubernetes.io/os": "linux"}, "containers": []}}},
        "status": {"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 2, "updatedNumberScheduled": 3, "numberAvailable": 2}});
    let (cols, cells) = render(&builtin("apps", "DaemonSet"), ds, true);
    assert_eq!(cols[..8], ["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE SELECTOR", "AGE"]);
    assert_eq!(cells[1..7], [json!(3), json!(3), json!(2), json!(3), json!(2), json!("kubernetes.io/os=linux")]);
    assert_eq!(cells[10], json!("tier in (a,b)"));
}

#[test]
fn config_map_secret_namespace_lease_service_account() {
    let cm = json!({"metadata": meta("cfg"), "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}});
    let (cols, cells) = render(&builtin("", "ConfigMap"), cm, false);
    assert_eq!(cols, ["NAME", "DATA", "AGE"]);
    assert_eq!(cells, [json!("cfg"), json!(3), json!("5m3s")]);
    let secret = json!({"metadata": meta("s"), "type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}});
    let (cols, cells) = render(&builtin("", "Secret"), secret, false);
    assert_eq!(cols, ["NAME", "TYPE", "DATA", "AGE"]);
    assert_eq!(cells, [json!("s"), json!("kubernetes.io/tls"), json!(2), json!("5m3s")]);
    assert_eq!(render(&builtin("", "Secret"), json!({"metadata": meta("o")}), false).1[1], json!("Opaque"));
    let (cols, cells) = render(&builtin("", "Namespace"), json!({"metadata": meta("ns"), "status": {"phase": "Terminating"}}), false);
    assert_eq!(cols, ["NAME", "STATUS", "AGE"]);
    assert_eq!(cells[1], json!("Terminating"));
    let (cols, cells) =
        render(&builtin("coordination.k8s.io", "Lease"), json!({"metadata": meta("l"), "spec": {"holderIdentity": "node-a"}}), false);
    assert_eq!(cols, ["NAME", "HOLDER", "AGE"]);
    assert_eq!(cells[1], json!("node-a"));
    let (cols, cells) = render(&builtin("", "ServiceAccount"), json!({"metadata": meta("default")}), false);
    assert_eq!(cols, ["NAME", "SECRETS", "AGE"]);
    assert_eq!(cells[1], json!(0));
}

#[test]
fn service() {
    let svc = json!({"metadata": meta("web"), "spec": {"type": "NodePort", "clusterIP": "10.96.0.10", "selector": {"app": "web"},
        "ports": [{"port": 80, "nodePort": 30080}, {"port": 53, "protocol": "UDP"}]}});
    let (cols, cells) = render(&builtin("", "Service"), svc, true);
    assert_eq!(cols, ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE", "SELECTOR"]);
    assert_eq!(
        cells,
        [
            json!("web"),
            json!("NodePort"),
            json!("10.96.0.10"),
            json!("<none>"),
            json!("80:30080/TCP,53/UDP"),
            json!("5m3s"),
            json!("app=web")
        ]
    );
    let lb = json!({"metadata": meta("lb"), "spec": {"type": "LoadBalancer", "clusterIP": "10.96.0.11", "ports": []}});
    assert_eq!(render(&builtin("", "Service"), lb, false).1[3..5], [json!("<pending>"), json!("<none>")]);
}

#[test]
fn node_event_job_cronjob_rbac_crd() {
    let node = json!({"metadata": {"name": "n1", "creationTimestamp": "2024-01-01T00:00:00Z", "labels": {"node-role.kubernetes.io/control-plane": ""}},
        "spec": {"unschedulable": true},
        "status": {"conditions": [{"type": "Ready", "status": "True"}], "nodeInfo": {"kubeletVersion": "v1.33.0"},
            "addresses": [{"type": "InternalIP", "address": "192.168.1.2"}]}});
    let (cols, cells) = render(&builtin("", "Node"), node, true);
    assert_eq!(cols[..5], ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]);
    assert_eq!(
        cells[..6],
        [json!("n1"), json!("Ready,SchedulingDisabled"), json!("control-plane"), json!("5m3s"), json!("v1.33.0"), json!("192.168.1.2")]
    );
    assert_eq!(cells[6], json!("<none>"));
    let ev = json!({"metadata": meta("web.1"), "type": "Warning", "reason": "BackOff", "message": "Back-off restarting\n",
        "involvedObject": {"kind": "Pod", "name": "web-1"}, "lastTimestamp": "2024-01-01T00:04:03Z", "firstTimestamp": "2024-01-01T00:00:00Z",
        "count": 4, "source": {"component": "kubelet", "host": "n1"}});
    let (cols, cells) = render(&builtin("", "Event"), ev.clone(), false);
    assert_eq!(cols, ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]);
    assert_eq!(cells, [json!("60s"), json!("Warning"), json!("BackOff"), json!("pod/web-1"), json!("Back-off restarting")]);
    let (_, wide) = render(&builtin("", "Event"), ev, true);
    assert_eq!(wide[5..], [json!("kubelet, n1"), json!("Back-off restarting"), json!("5m3s"), json!(4), json!("web.1")]);
    let job = json!({"metadata": meta("j"), "spec": {"completions": 3, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}},
        "status": {"succeeded": 3, "startTime": "2024-01-01T00:00:00Z", "completionTime": "2024-01-01T00:01:05Z",
            "conditions": [{"type": "Complete", "status": "True"}]}});
    let (cols, cells) = render(&builtin("batch", "Job"), job, false);
    assert_eq!(cols, ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]);
    assert_eq!(cells, [json!("j"), json!("Complete"), json!("3/3"), json!("65s"), json!("5m3s")]);
    let cj = json!({"metadata": meta("cj"), "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": {"spec": {"containers": []}}}}}});
    let (cols, cells) = render(&builtin("batch", "CronJob"), cj, false);
    assert_eq!(cols, ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "AGE"]);
    assert_eq!(cells[1..6], [json!("*/5 * * * *"), json!("<none>"), json!(false), json!(0), json!("<none>")]);
    let (cols, cells) = render(&builtin("rbac.authorization.k8s.io", "Role"), json!({"metadata": meta("r")}), false);
    assert_eq!(cols, ["NAME", "CREATED AT"]);
    assert_eq!(cells[1], json!("2024-01-01T00:00:00Z"));
    let rb = json!({"metadata": meta("rb"), "roleRef": {"kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "User", "name": "alice"}, {"kind": "ServiceAccount", "name": "sa", "namespace": "ns"}]});
    let (cols, cells) = render(&builtin("rbac.authorization.k8s.io", "ClusterRoleBinding"), rb, true);
    assert_eq!(cols, ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]);
    assert_eq!(cells[1..], [json!("ClusterRole/view"), json!("5m3s"), json!("alice"), json!(""), json!("ns/sa")]);
    let (cols, _) = render(&builtin("apiextensions.k8s.io", "CustomResourceDefinition"), json!({"metadata": meta("x")}), false);
    assert_eq!(cols, ["NAME", "CREATED AT"]);
    // Kinds without a printer: NAME AGE.
    let (cols, cells) = render(&builtin("", "PodTemplate"), json!({"metadata": meta("t")}), false);
    assert_eq!((cols, cells), (vec!["NAME".to_string(), "AGE".to_string()], vec![json!("t"), json!("5m3s")]));
}

fn crd(columns: Option<Value>) -> TypeSpec {
    let mut version = json!({"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object"}}});
    if let Some(c) = columns {
        version["additionalPrinterColumns"] = c;
    }
    TypeSpec::from_crd(&json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced", "names": {"kind": "Widget", "plural": "widgets"}, "versions": [version]}}))
    .unwrap()
}

#[test]
fn crd_printer_columns() {
    let spec = crd(Some(json!([
        {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
        {"name": "Phase", "type": "string", "jsonPath": ".status.phase", "description": "the phase"},
        {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
        {"name": "Port", "type": "string", "jsonPath": ".spec.port", "priority": 1},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ])));
    let w = json!({"metadata": meta("w"), "spec": {"replicas": 2, "port": 8080},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}});
    let t = table_at(&spec, std::slice::from_ref(&w), IncludeObject::Object, json!({"resourceVersion": "9", "continue": "abc"}), NOW);
    let defs = t["columnDefinitions"].as_array().unwrap();
    assert_eq!(defs.iter().map(|d| d["name"].as_str().unwrap()).collect::<Vec<_>>(), ["Name", "Replicas", "Phase", "Ready", "Port", "Age"]);
    assert_eq!(defs[2]["description"], "the phase");
    assert_eq!(defs[4]["priority"], 1);
    assert_eq!(defs[5]["type"], "date");
    assert_eq!(t["rows"][0]["cells"], json!(["w", 2, null, "True", "8080", "5m3s"]));
    assert_eq!(t["rows"][0]["object"], w);
    assert_eq!(t["metadata"], json!({"resourceVersion": "9", "continue": "abc"}));
    // No declared columns: Name and Age.
    let t = table_at(&crd(None), &[w], IncludeObject::Metadata, json!({}), NOW);
    assert_eq!(t["columnDefinitions"].as_array().unwrap().iter().map(|d| d["name"].as_str().unwrap()).collect::<Vec<_>>(), ["Name", "Age"]);
    assert_eq!(t["rows"][0]["cells"], json!(["w", "5m3s"]));
    assert_eq!(t["rows"][0]["object"], json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta("w")}));
}

#[test]
fn include_object_none_leaves_rows_bare_and_empty_lists_have_columns() {
    let spec = builtin("", "ConfigMap");
    let t = table_at(&spec, &[json!({"metadata": meta("a")})], IncludeObject::None, json!({}), NOW);
    assert!(t["rows"][0].get("object").is_none());
    let t = table_at(&spec, &[], IncludeObject::Metadata, json!({"resourceVersion": "1"}), NOW);
    assert_eq!(t["rows"], json!([]));
    assert_eq!(t["columnDefinitions"].as_array().unwrap().len(), 3);
    // Odd objects never panic.
    let t = table_at(&builtin("", "Pod"), &[json!(null), json!({"metadata": 5, "status": []})], IncludeObject::Metadata, json!(null), NOW);
    assert_eq!(t["rows"][0]["cells"][0], "");
    assert_eq!(t["rows"][1]["cells"][4], "<unknown>");
}
