//! Built-in Kubernetes objects of realistic shape, as kube-apiserver stores them: a Pod (two
//! containers with ports, env, resources, probes and mounts, volumes, managedFields, a running
//! status), a Deployment (a template of that pod, status with conditions), and an EndpointSlice of
//! `n` endpoints (one address each, with conditions, targetRef, nodeName and zone).

use serde_json::{json, Value};

fn metadata(name: &str, generation: i64) -> Value {
    json!({
        "name": name,
        "namespace": "shop",
        "uid": "6f1c2a9e-3b7d-4c1e-9a55-0d2f6b8e1c47",
        "resourceVersion": "184467",
        "generation": generation,
        "creationTimestamp": "2026-07-24T09:12:31Z",
        "labels": {"app.kubernetes.io/name": "checkout", "app.kubernetes.io/part-of": "shop", "pod-template-hash": "5d8f7c9b6d"},
        "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-07-24T09:10:00Z", "prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "checkout-5d8f7c9b6d", "uid": "0b7e4c1a-8f2d-4e6b-a1c3-5d9e7f2a4b6c", "controller": true, "blockOwnerDeletion": true}],
        "managedFields": [
            {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "time": "2026-07-24T09:12:31Z", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app.kubernetes.io/name": {}, "f:pod-template-hash": {}}, "f:ownerReferences": {".": {}, "k:{\"uid\":\"0b7e4c1a-8f2d-4e6b-a1c3-5d9e7f2a4b6c\"}": {}}}, "f:spec": {"f:containers": {"k:{\"name\":\"checkout\"}": {".": {}, "f:image": {}, "f:name": {}, "f:ports": {}, "f:resources": {}}}}}},
            {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": "2026-07-24T09:12:40Z", "fieldsType": "FieldsV1", "subresource": "status",
             "fieldsV1": {"f:status": {"f:conditions": {"k:{\"type\":\"Ready\"}": {".": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}}}, "f:containerStatuses": {}, "f:hostIP": {}, "f:phase": {}, "f:podIP": {}, "f:startTime": {}}}}
        ]
    })
}

fn container(name: &str, image: &str, port: i64) -> Value {
    json!({
        "name": name,
        "image": image,
        "command": ["/app/server"],
        "args": ["--port", port.to_string(), "--log-level=info"],
        "ports": [{"name": "http", "containerPort": port, "protocol": "TCP"}, {"name": "metrics", "containerPort": 9090, "protocol": "TCP"}],
        "env": [
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
            {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "checkout-db", "key": "password"}}},
            {"name": "FEATURE_FLAGS", "value": "fast-checkout,new-cart"}
        ],
        "resources": {"limits": {"cpu": "1", "memory": "512Mi"}, "requests": {"cpu": "250m", "memory": "256Mi"}},
        "volumeMounts": [{"name": "config", "mountPath": "/etc/app", "readOnly": true}, {"name": "kube-api-access-x7k2p", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}],
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"}, "initialDelaySeconds": 10, "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3},
        "readinessProbe": {"httpGet": {"path": "/ready", "port": port, "scheme": "HTTP"}, "timeoutSeconds": 1, "periodSeconds": 5, "successThreshold": 1, "failureThreshold": 3},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent",
        "securityContext": {"runAsNonRoot": true, "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}
    })
}

fn pod_spec() -> Value {
    json!({
        "volumes": [
            {"name": "config", "configMap": {"name": "checkout-config", "defaultMode": 420}},
            {"name": "kube-api-access-x7k2p", "projected": {"sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
            ], "defaultMode": 420}}
        ],
        "containers": [container("checkout", "registry.example.com/shop/checkout:v2.14.3", 8080), container("envoy", "envoyproxy/envoy:v1.31.0", 15001)],
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "checkout",
        "serviceAccount": "checkout",
        "nodeName": "node-17.zone-b.example.internal",
        "securityContext": {"fsGroup": 2000},
        "schedulerName": "default-scheduler",
        "tolerations": [
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
        ],
        "priority": 0,
        "enableServiceLinks": true,
        "preemptionPolicy": "PreemptLowerPriority"
    })
}

pub fn pod() -> Value {
    let condition =
        |kind: &str| json!({"type": kind, "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-07-24T09:12:40Z"});
    let status = |name: &str, image: &str| {
        json!({"name": name, "state": {"running": {"startedAt": "2026-07-24T09:12:35Z"}}, "lastState": {}, "ready": true, "restartCount": 0,
               "image": image, "imageID": format!("{image}@sha256:4a1c7e0f9b2d3c5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e"),
               "containerID": "containerd://9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a0", "started": true})
    };
    json!({
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": metadata("checkout-5d8f7c9b6d-x2x8q", 0),
        "spec": pod_spec(),
        "status": {
            "phase": "Running",
            "conditions": [condition("PodReadyToStartContainers"), condition("Initialized"), condition("Ready"), condition("ContainersReady"), condition("PodScheduled")],
            "hostIP": "10.0.17.4",
            "hostIPs": [{"ip": "10.0.17.4"}],
            "podIP": "10.244.17.23",
            "podIPs": [{"ip": "10.244.17.23"}],
            "startTime": "2026-07-24T09:12:31Z",
            "containerStatuses": [status("checkout", "registry.example.com/shop/checkout:v2.14.3"), status("envoy", "envoyproxy/envoy:v1.31.0")],
            "qosClass": "Burstable"
        }
    })
}

#[allow(dead_code, reason = "used by the protobuf bench, not by every bench that includes this module")]
pub fn deployment() -> Value {
    let mut template_metadata = metadata("", 0);
    template_metadata = json!({"labels": template_metadata["labels"], "annotations": template_metadata["annotations"]});
    let condition = |kind: &str, reason: &str| json!({"type": kind, "status": "True", "lastUpdateTime": "2026-07-24T09:12:45Z", "lastTransitionTime": "2026-07-24T09:10:02Z", "reason": reason, "message": format!("ReplicaSet \"checkout-5d8f7c9b6d\" {reason}")});
    json!({
        "kind": "Deployment",
        "apiVersion": "apps/v1",
        "metadata": metadata("checkout", 14),
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app.kubernetes.io/name": "checkout"}},
            "template": {"metadata": template_metadata, "spec": pod_spec()},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600
        },
        "status": {"observedGeneration": 14, "replicas": 3, "updatedReplicas": 3, "readyReplicas": 3, "availableReplicas": 3,
                   "conditions": [condition("Available", "MinimumReplicasAvailable"), condition("Progressing", "NewReplicaSetAvailable")]}
    })
}

pub fn endpoint_slice(n: usize) -> Value {
    let endpoints: Vec<Value> = (0..n)
        .map(|i| {
            json!({
                "addresses": [format!("10.244.{}.{}", i / 250, i % 250 + 2)],
                "conditions": {"ready": true, "serving": true, "terminating": false},
                "targetRef": {"kind": "Pod", "namespace": "shop", "name": format!("checkout-5d8f7c9b6d-{i:05}"), "uid": format!("6f1c2a9e-3b7d-4c1e-9a55-{i:012}")},
                "nodeName": format!("node-{}.zone-{}.example.internal", i % 40, ["a", "b", "c"][i % 3]),
                "zone": format!("zone-{}", ["a", "b", "c"][i % 3])
            })
        })
        .collect();
    json!({
        "kind": "EndpointSlice",
        "apiVersion": "discovery.k8s.io/v1",
        "metadata": metadata("checkout-7xk2p", 0),
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": [{"name": "http", "protocol": "TCP", "port": 8080}, {"name": "metrics", "protocol": "TCP", "port": 9090}]
    })
}
