//! The columns and cells of built-in kinds, after Kubernetes' printers
//! (`pkg/printers/internalversion/printers.go`): the same column names, types and priorities,
//! and cells computed the same way from the object (`<none>` for an empty list, `a/b` counts,
//! ages with `HumanDuration`).

use super::duration::since;
use super::Column;
use fieldstore_engine::store::TypeSpec;
use serde_json::{json, Value};

type Cells = fn(&Value, i64) -> Vec<Value>;

/// The columns and the cell function of one kind.
pub(super) struct Printer {
    columns: Vec<Column>,
    cells: Cells,
}

impl Printer {
    pub(super) fn columns(&self) -> Vec<Column> {
        self.columns.clone()
    }

    pub(super) fn cells(&self, obj: &Value, now: i64) -> Vec<Value> {
        (self.cells)(obj, now)
    }
}

fn s(name: &str) -> Column {
    Column::new(name, "string")
}
fn i(name: &str) -> Column {
    Column::new(name, "integer")
}
fn ws(name: &str) -> Column {
    Column::wide(name, "string")
}
/// `Created At` (`date`, the timestamp itself), as Kubernetes' default table convertor and the
/// RBAC role printers write it.
fn created_at() -> Column {
    Column::new("Created At", "date")
}

/// The printer of a kind: Kubernetes' for the built-in kinds, `NAME AGE` for any other.
pub(super) fn printer(spec: &TypeSpec) -> Printer {
    let name = Column::name;
    let age = Column::age;
    let (columns, cells): (Vec<Column>, Cells) = match (spec.group.as_str(), spec.kind.as_str()) {
        ("", "Pod") => (
            vec![name(), s("Ready"), s("Status"), i("Restarts"), age(), ws("IP"), ws("Node"), ws("Nominated Node"), ws("Readiness Gates")],
            pod,
        ),
        ("", "ConfigMap") => (vec![name(), i("Data"), age()], config_map),
        ("", "Secret") => (vec![name(), s("Type"), i("Data"), age()], secret),
        ("", "Service") => (vec![name(), s("Type"), s("Cluster-IP"), s("External-IP"), s("Port(s)"), age(), ws("Selector")], service),
        ("", "Namespace") => (vec![name(), s("Status"), age()], namespace),
        ("", "Node") => (
            vec![
                name(),
                s("Status"),
                s("Roles"),
                age(),
                s("Version"),
                ws("Internal-IP"),
                ws("External-IP"),
                ws("OS-Image"),
                ws("Kernel-Version"),
                ws("Container-Runtime"),
            ],
            node,
        ),
        ("", "Event") => (
            vec![
                s("Last Seen"),
                s("Type"),
                s("Reason"),
                s("Object"),
                ws("Subobject"),
                ws("Source"),
                s("Message"),
                ws("First Seen"),
                Column::wide("Count", "integer"),
                Column { priority: 1, ..name() },
            ],
            event,
        ),
        ("", "ServiceAccount") => (vec![name(), i("Secrets"), age()], service_account),
        ("", "Endpoints") => (vec![name(), s("Endpoints"), age()], endpoints),
        ("", "ReplicationController") => (workload_columns(&["Desired", "Current", "Ready"], true), replication_controller),
        ("apps", "Deployment") => {
            (vec![name(), s("Ready"), i("Up-to-date"), i("Available"), age(), ws("Containers"), ws("Images"), ws("Selector")], deployment)
        }
        ("apps", "ReplicaSet") => (workload_columns(&["Desired", "Current", "Ready"], true), replica_set),
        ("apps", "StatefulSet") => (vec![name(), s("Ready"), age(), ws("Containers"), ws("Images")], stateful_set),
        ("apps", "DaemonSet") => (
            vec![
                name(),
                i("Desired"),
                i("Current"),
                i("Ready"),
                i("Up-to-date"),
                i("Available"),
                s("Node Selector"),
                age(),
                ws("Containers"),
                ws("Images"),
                ws("Selector"),
            ],
            daemon_set,
        ),
        ("batch", "Job") => {
            (vec![name(), s("Status"), s("Completions"), s("Duration"), age(), ws("Containers"), ws("Images"), ws("Selector")], job)
        }
        ("batch", "CronJob") => (
            vec![
                name(),
                s("Schedule"),
                s("Timezone"),
                Column::new("Suspend", "boolean"),
                i("Active"),
                s("Last Schedule"),
                age(),
                ws("Containers"),
                ws("Images"),
                ws("Selector"),
            ],
            cron_job,
        ),
        ("coordination.k8s.io", "Lease") => (vec![name(), s("Holder"), age()], lease),
        ("rbac.authorization.k8s.io", "Role" | "ClusterRole") => (vec![name(), created_at()], name_created_at),
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => {
            (vec![name(), s("Role"), age(), ws("Users"), ws("Groups"), ws("ServiceAccounts")], role_binding)
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => (vec![name(), created_at()], name_created_at),
        _ => (vec![name(), age()], name_age),
    };
    Printer { columns, cells }
}

/// `NAME <counts> AGE CONTAINERS IMAGES SELECTOR` (ReplicaSet, ReplicationController).
fn workload_columns(counts: &[&str], selector: bool) -> Vec<Column> {
    let mut c = vec![Column::name()];
    c.extend(counts.iter().map(|n| i(n)));
    c.extend([Column::age(), ws("Containers"), ws("Images")]);
    if selector {
        c.push(ws("Selector"));
    }
    c
}

// Readers of the object.

fn at<'a>(o: &'a Value, pointer: &str) -> &'a Value {
    o.pointer(pointer).unwrap_or(&Value::Null)
}
fn text<'a>(o: &'a Value, pointer: &str) -> &'a str {
    at(o, pointer).as_str().unwrap_or("")
}
fn int(o: &Value, pointer: &str) -> i64 {
    at(o, pointer).as_i64().unwrap_or(0)
}
fn items<'a>(o: &'a Value, pointer: &str) -> &'a [Value] {
    at(o, pointer).as_array().map_or(&[], Vec::as_slice)
}
fn len(o: &Value, pointer: &str) -> usize {
    match at(o, pointer) {
        Value::Object(m) => m.len(),
        Value::Array(a) => a.len(),
        _ => 0,
    }
}
fn or_none(s: String) -> String {
    if s.is_empty() {
        "<none>".into()
    } else {
        s
    }
}
fn name_of(o: &Value) -> Value {
    json!(text(o, "/metadata/name"))
}
fn age_of(o: &Value, now: i64) -> Value {
    json!(since(o.pointer("/metadata/creationTimestamp").and_then(Value::as_str), now))
}
/// `spec.replicas`, 1 when unset (Kubernetes' default).
fn replicas(o: &Value) -> i64 {
    at(o, "/spec/replicas").as_i64().unwrap_or(1)
}
/// `k=v,k2=v2` of a string map, sorted by key (Go's `labels.Set.String`).
fn pairs(m: &Value) -> String {
    let mut kv: Vec<String> = m.as_object().into_iter().flatten().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or(""))).collect();
    kv.sort();
    kv.join(",")
}
/// A `LabelSelector` as `metav1.FormatLabelSelector` writes it: `<none>` when empty.
fn selector(sel: &Value) -> String {
    let mut parts: Vec<String> = Vec::new();
    let labels = pairs(at(sel, "/matchLabels"));
    if !labels.is_empty() {
        parts.push(labels);
    }
    for e in items(sel, "/matchExpressions") {
        let key = text(e, "/key");
        let values: Vec<&str> = items(e, "/values").iter().filter_map(Value::as_str).collect();
        parts.push(match text(e, "/operator") {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            op => format!("{key} {op} ({})", values.join(",")),
        });
    }
    or_none(parts.join(","))
}
/// Container names and images of a pod template (`CONTAINERS`, `IMAGES`).
fn containers(o: &Value, pointer: &str) -> (Value, Value) {
    let cs = items(o, pointer);
    let names: Vec<&str> = cs.iter().map(|c| text(c, "/name")).collect();
    let images: Vec<&str> = cs.iter().map(|c| text(c, "/image")).collect();
    (json!(names.join(",")), json!(images.join(",")))
}

// Cells of each kind.

fn name_age(o: &Value, now: i64) -> Vec<Value> {
    vec![name_of(o), age_of(o, now)]
}

fn name_created_at(o: &Value, _now: i64) -> Vec<Value> {
    vec![name_of(o), json!(text(o, "/metadata/creationTimestamp"))]
}

fn config_map(o: &Value, now: i64) -> Vec<Value> {
    vec![name_of(o), json!(len(o, "/data") + len(o, "/binaryData")), age_of(o, now)]
}

fn secret(o: &Value, now: i64) -> Vec<Value> {
    let t = Some(text(o, "/type")).filter(|t| !t.is_empty()).unwrap_or("Opaque");
    vec![name_of(o), json!(t), json!(len(o, "/data") + len(o, "/stringData")), age_of(o, now)]
}

fn namespace(o: &Value, now: i64) -> Vec<Value> {
    let phase = Some(text(o, "/status/phase")).filter(|p| !p.is_empty()).unwrap_or("Active");
    vec![name_of(o), json!(phase), age_of(o, now)]
}

fn service_account(o: &Value, now: i64) -> Vec<Value> {
    vec![name_of(o), json!(len(o, "/secrets")), age_of(o, now)]
}

fn lease(o: &Value, now: i64) -> Vec<Value> {
    vec![name_of(o), json!(text(o, "/spec/holderIdentity")), age_of(o, now)]
}

fn endpoints(o: &Value, now: i64) -> Vec<Value> {
    let mut eps: Vec<String> = Vec::new();
    for subset in items(o, "/subsets") {
        for a in items(subset, "/addresses") {
            let ports = items(subset, "/ports");
            if ports.is_empty() {
                eps.push(text(a, "/ip").to_string());
            }
            for p in ports {
                eps.push(format!("{}:{}", text(a, "/ip"), int(p, "/port")));
            }
        }
    }
    let shown = if eps.len() > 3 { format!("{} + {} more...", eps[..3].join(","), eps.len() - 3) } else { eps.join(",") };
    vec![name_of(o), json!(or_none(shown)), age_of(o, now)]
}

/// The pod's status as `printPod` derives it: the reason, else the phase (`Pending` when
/// unset), overridden by the first failing init container (`Init:…`) or the last waiting or
/// terminated container's reason, and `Terminating` once deletion started.
fn pod_status(o: &Value) -> String {
    let mut reason = text(o, "/status/reason").to_string();
    if reason.is_empty() {
        reason = text(o, "/status/phase").to_string();
    }
    if reason.is_empty() {
        // kube-apiserver's pod strategy sets `Pending` on create; a store without that
        // defaulting prints what Kubernetes would.
        reason = "Pending".into();
    }
    let inits = items(o, "/status/initContainerStatuses");
    let init_total = len(o, "/spec/initContainers");
    let mut initializing = false;
    for (n, c) in inits.iter().enumerate() {
        let terminated = at(c, "/state/terminated");
        if terminated.is_object() && int(terminated, "/exitCode") == 0 {
            continue;
        }
        initializing = true;
        let waiting = text(c, "/state/waiting/reason");
        reason = if terminated.is_object() {
            match text(terminated, "/reason") {
                "" if int(terminated, "/signal") != 0 => format!("Init:Signal:{}", int(terminated, "/signal")),
                "" => format!("Init:ExitCode:{}", int(terminated, "/exitCode")),
                r => format!("Init:{r}"),
            }
        } else if !waiting.is_empty() && waiting != "PodInitializing" {
            format!("Init:{waiting}")
        } else {
            format!("Init:{n}/{init_total}")
        };
        break;
    }
    if !initializing {
        let mut running = false;
        for c in items(o, "/status/containerStatuses").iter().rev() {
            let waiting = text(c, "/state/waiting/reason");
            let terminated = at(c, "/state/terminated");
            if !waiting.is_empty() {
                reason = waiting.to_string();
            } else if terminated.is_object() {
                reason = match text(terminated, "/reason") {
                    "" if int(terminated, "/signal") != 0 => format!("Signal:{}", int(terminated, "/signal")),
                    "" => format!("ExitCode:{}", int(terminated, "/exitCode")),
                    r => r.to_string(),
                };
            } else if at(c, "/ready") == &Value::Bool(true) && at(c, "/state/running").is_object() {
                running = true;
            }
        }
        if reason == "Completed" && running {
            reason = "Running".into();
        }
    }
    if o.pointer("/metadata/deletionTimestamp").is_some_and(|d| !d.is_null()) {
        reason = if text(o, "/status/reason") == "NodeLost" { "Unknown".into() } else { "Terminating".into() };
    }
    reason
}

fn pod(o: &Value, now: i64) -> Vec<Value> {
    let statuses = items(o, "/status/containerStatuses");
    let total = len(o, "/spec/containers");
    let ready = statuses.iter().filter(|c| at(c, "/ready") == &Value::Bool(true)).count();
    let restarts: i64 = statuses.iter().map(|c| int(c, "/restartCount")).sum();
    let last_restart = statuses.iter().filter_map(|c| c.pointer("/lastState/terminated/finishedAt").and_then(Value::as_str)).max();
    let restarts = match last_restart {
        Some(t) if restarts > 0 => json!(format!("{restarts} ({} ago)", since(Some(t), now))),
        _ => json!(restarts),
    };
    let gates = items(o, "/spec/readinessGates");
    let gates = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let conditions = items(o, "/status/conditions");
        let true_gates = gates
            .iter()
            .filter(|g| conditions.iter().any(|c| text(c, "/type") == text(g, "/conditionType") && text(c, "/status") == "True"))
            .count();
        format!("{true_gates}/{}", gates.len())
    };
    vec![
        name_of(o),
        json!(format!("{ready}/{total}")),
        json!(pod_status(o)),
        restarts,
        age_of(o, now),
        json!(or_none(text(o, "/status/podIP").to_string())),
        json!(or_none(text(o, "/spec/nodeName").to_string())),
        json!(or_none(text(o, "/status/nominatedNodeName").to_string())),
        json!(gates),
    ]
}

fn deployment(o: &Value, now: i64) -> Vec<Value> {
    let (names, images) = containers(o, "/spec/template/spec/containers");
    vec![
        name_of(o),
        json!(format!("{}/{}", int(o, "/status/readyReplicas"), replicas(o))),
        json!(int(o, "/status/updatedReplicas")),
        json!(int(o, "/status/availableReplicas")),
        age_of(o, now),
        names,
        images,
        json!(selector(at(o, "/spec/selector"))),
    ]
}

fn replica_set(o: &Value, now: i64) -> Vec<Value> {
    let (names, images) = containers(o, "/spec/template/spec/containers");
    vec![
        name_of(o),
        json!(replicas(o)),
        json!(int(o, "/status/replicas")),
        json!(int(o, "/status/readyReplicas")),
        age_of(o, now),
        names,
        images,
        json!(selector(at(o, "/spec/selector"))),
    ]
}

fn replication_controller(o: &Value, now: i64) -> Vec<Value> {
    let mut cells = replica_set(o, now);
    // A ReplicationController's selector is a plain label map.
    if let Some(last) = cells.last_mut() {
        *last = json!(or_none(pairs(at(o, "/spec/selector"))));
    }
    cells
}

fn stateful_set(o: &Value, now: i64) -> Vec<Value> {
    let (names, images) = containers(o, "/spec/template/spec/containers");
    vec![name_of(o), json!(format!("{}/{}", int(o, "/status/readyReplicas"), replicas(o))), age_of(o, now), names, images]
}

fn daemon_set(o: &Value, now: i64) -> Vec<Value> {
    let (names, images) = containers(o, "/spec/template/spec/containers");
    vec![
        name_of(o),
        json!(int(o, "/status/desiredNumberScheduled")),
        json!(int(o, "/status/currentNumberScheduled")),
        json!(int(o, "/status/numberReady")),
        json!(int(o, "/status/updatedNumberScheduled")),
        json!(int(o, "/status/numberAvailable")),
        json!(or_none(pairs(at(o, "/spec/template/spec/nodeSelector")))),
        age_of(o, now),
        names,
        images,
        json!(selector(at(o, "/spec/selector"))),
    ]
}

fn condition_true(o: &Value, kind: &str) -> bool {
    items(o, "/status/conditions").iter().any(|c| text(c, "/type") == kind && text(c, "/status") == "True")
}

fn job(o: &Value, now: i64) -> Vec<Value> {
    let succeeded = int(o, "/status/succeeded");
    let completions = match at(o, "/spec/completions").as_i64() {
        Some(c) => format!("{succeeded}/{c}"),
        None => match at(o, "/spec/parallelism").as_i64() {
            Some(p) if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let start = o.pointer("/status/startTime").and_then(Value::as_str).and_then(fieldstore_codec::rfc3339::parse);
    let end = o.pointer("/status/completionTime").and_then(Value::as_str).and_then(fieldstore_codec::rfc3339::parse);
    let duration = match (start, end) {
        (Some((s, _)), Some((e, _))) => super::duration::human(e - s),
        (Some((s, _)), None) => super::duration::human(now - s),
        _ => String::new(),
    };
    let status = if condition_true(o, "Complete") {
        "Complete"
    } else if condition_true(o, "Failed") {
        "Failed"
    } else if o.pointer("/metadata/deletionTimestamp").is_some_and(|d| !d.is_null()) {
        "Terminating"
    } else if condition_true(o, "Suspended") {
        "Suspended"
    } else if condition_true(o, "FailureTarget") {
        "FailureTarget"
    } else if condition_true(o, "SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    };
    let (names, images) = containers(o, "/spec/template/spec/containers");
    vec![
        name_of(o),
        json!(status),
        json!(completions),
        json!(duration),
        age_of(o, now),
        names,
        images,
        json!(selector(at(o, "/spec/selector"))),
    ]
}

fn cron_job(o: &Value, now: i64) -> Vec<Value> {
    let (names, images) = containers(o, "/spec/jobTemplate/spec/template/spec/containers");
    let last = o.pointer("/status/lastScheduleTime").and_then(Value::as_str);
    vec![
        name_of(o),
        json!(text(o, "/spec/schedule")),
        json!(or_none(text(o, "/spec/timeZone").to_string())),
        json!(at(o, "/spec/suspend").as_bool().unwrap_or(false)),
        json!(len(o, "/status/active")),
        json!(last.map_or_else(|| "<none>".to_string(), |t| since(Some(t), now))),
        age_of(o, now),
        names,
        images,
        json!(selector(at(o, "/spec/jobTemplate/spec/selector"))),
    ]
}

fn service(o: &Value, now: i64) -> Vec<Value> {
    let kind = Some(text(o, "/spec/type")).filter(|t| !t.is_empty()).unwrap_or("ClusterIP");
    let cluster_ip = or_none(text(o, "/spec/clusterIP").to_string());
    let external: Vec<&str> = items(o, "/spec/externalIPs").iter().filter_map(Value::as_str).collect();
    let external_ip = match kind {
        "ExternalName" => text(o, "/spec/externalName").to_string(),
        "LoadBalancer" => {
            let mut ips: Vec<&str> = items(o, "/status/loadBalancer/ingress")
                .iter()
                .map(|i| Some(text(i, "/ip")).filter(|s| !s.is_empty()).unwrap_or(text(i, "/hostname")))
                .collect();
            ips.extend(&external);
            if ips.is_empty() {
                "<pending>".into()
            } else {
                ips.join(",")
            }
        }
        _ => or_none(external.join(",")),
    };
    let ports: Vec<String> = items(o, "/spec/ports")
        .iter()
        .map(|p| {
            let protocol = Some(text(p, "/protocol")).filter(|t| !t.is_empty()).unwrap_or("TCP");
            match at(p, "/nodePort").as_i64() {
                Some(n) if n != 0 => format!("{}:{n}/{protocol}", int(p, "/port")),
                _ => format!("{}/{protocol}", int(p, "/port")),
            }
        })
        .collect();
    vec![
        name_of(o),
        json!(kind),
        json!(cluster_ip),
        json!(or_none(external_ip)),
        json!(or_none(ports.join(","))),
        age_of(o, now),
        json!(or_none(pairs(at(o, "/spec/selector")))),
    ]
}

fn node(o: &Value, now: i64) -> Vec<Value> {
    let mut status = match items(o, "/status/conditions").iter().find(|c| text(c, "/type") == "Ready").map(|c| text(c, "/status")) {
        Some("True") => "Ready".to_string(),
        Some("False") => "NotReady".to_string(),
        _ => "Unknown".to_string(),
    };
    if at(o, "/spec/unschedulable") == &Value::Bool(true) {
        status.push_str(",SchedulingDisabled");
    }
    let mut roles: Vec<String> = at(o, "/metadata/labels")
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| match k.strip_prefix("node-role.kubernetes.io/") {
            Some(r) if !r.is_empty() => Some(r.to_string()),
            _ if k == "kubernetes.io/role" => v.as_str().map(str::to_string),
            _ => None,
        })
        .collect();
    roles.sort();
    let address = |kind: &str| {
        items(o, "/status/addresses")
            .iter()
            .find(|a| text(a, "/type") == kind)
            .map_or_else(|| "<none>".to_string(), |a| text(a, "/address").to_string())
    };
    let info = |k: &str| {
        Some(text(o, &format!("/status/nodeInfo/{k}")).to_string()).filter(|s| !s.is_empty()).unwrap_or_else(|| "<unknown>".into())
    };
    vec![
        name_of(o),
        json!(status),
        json!(or_none(roles.join(","))),
        age_of(o, now),
        json!(text(o, "/status/nodeInfo/kubeletVersion")),
        json!(address("InternalIP")),
        json!(address("ExternalIP")),
        json!(info("osImage")),
        json!(info("kernelVersion")),
        json!(info("containerRuntimeVersion")),
    ]
}

fn event(o: &Value, now: i64) -> Vec<Value> {
    let time = |p: &str| o.pointer(p).and_then(Value::as_str).filter(|t| !t.is_empty());
    let first = time("/firstTimestamp").or_else(|| time("/eventTime"));
    let last = time("/series/lastObservedTime").or_else(|| time("/lastTimestamp")).or(first);
    let object = format!("{}/{}", text(o, "/involvedObject/kind").to_lowercase(), text(o, "/involvedObject/name"));
    let component = Some(text(o, "/source/component")).filter(|c| !c.is_empty()).unwrap_or(text(o, "/reportingComponent"));
    let host = Some(text(o, "/source/host")).filter(|h| !h.is_empty()).unwrap_or(text(o, "/reportingInstance"));
    let source = match (component, host) {
        ("", _) => String::new(),
        (c, "") => c.to_string(),
        (c, h) => format!("{c}, {h}"),
    };
    let count = at(o, "/series/count").as_i64().or_else(|| at(o, "/count").as_i64()).unwrap_or(1);
    vec![
        json!(since(last, now)),
        json!(text(o, "/type")),
        json!(text(o, "/reason")),
        json!(object),
        json!(text(o, "/involvedObject/fieldPath")),
        json!(source),
        json!(text(o, "/message").trim()),
        json!(since(first, now)),
        json!(count),
        name_of(o),
    ]
}

fn role_binding(o: &Value, now: i64) -> Vec<Value> {
    let subjects = items(o, "/subjects");
    let of = |kind: &str| -> Vec<String> {
        subjects
            .iter()
            .filter(|s| text(s, "/kind") == kind)
            .map(|s| {
                if kind == "ServiceAccount" {
                    format!("{}/{}", text(s, "/namespace"), text(s, "/name"))
                } else {
                    text(s, "/name").to_string()
                }
            })
            .collect()
    };
    vec![
        name_of(o),
        json!(format!("{}/{}", text(o, "/roleRef/kind"), text(o, "/roleRef/name"))),
        age_of(o, now),
        json!(of("User").join(", ")),
        json!(of("Group").join(", ")),
        json!(of("ServiceAccount").join(", ")),
    ]
}
