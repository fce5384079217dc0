//! Server-Side Apply of the upstream fixture objects of the built-in groups
//! (`tests/fixtures/k8s-api`, see the README there) with the built-in schema: every fixture fits its
//! kind's definition, and applying each resource as one manager, then a changed copy as a second,
//! gives managedFields whose map-list items are keyed as Kubernetes keys them (`k:{"name":…}` for
//! containers, `k:{"containerPort":…,"protocol":…}` for container ports, `k:{"type":…}` for
//! conditions), with atomic lists owned whole and no list item identified by position.

use fieldstore_codec::managed_fields::ManagedFieldsEntry;
use fieldstore_engine::fieldmanager::Time;
use fieldstore_engine::schema::builtin;
use fieldstore_engine::{typed, FieldManager};
use serde_json::{json, Value};

const FIRST: &str = "first-manager";
const SECOND: &str = "second-manager";

fn fixture_dir() -> String {
    format!("{}/tests/fixtures/k8s-api", env!("CARGO_MANIFEST_DIR"))
}

/// Every fixture: (file name, object).
fn fixtures() -> Vec<(String, Value)> {
    let mut names: Vec<String> = std::fs::read_dir(fixture_dir())
        .expect("fixture directory")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    names.sort();
    names.into_iter().map(|n| (n.clone(), fixture(&n))).collect()
}

fn fixture(name: &str) -> Value {
    let path = format!("{}/{name}", fixture_dir());
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))).expect("fixture JSON")
}

/// The group, version and kind of a fixture, from its file name (`apps.v1.Deployment.json`,
/// `core.v1.Pod.json`: the core group is written `core`).
fn gvk(file: &str) -> (String, String, String) {
    let stem = file.trim_end_matches(".json");
    let (rest, kind) = stem.rsplit_once('.').expect("kind");
    let (group, version) = rest.rsplit_once('.').expect("version");
    let group = if group == "core" { "" } else { group };
    (group.to_string(), version.to_string(), kind.to_string())
}

fn definition(file: &str) -> &'static str {
    let (g, v, k) = gvk(file);
    builtin::definition_name(&g, &v, &k).unwrap_or_else(|| panic!("{file}: no definition for {g}/{v} {k}"))
}

#[test]
fn every_fixture_fits_its_kinds_definition() {
    let all = fixtures();
    assert_eq!(all.len(), 59);
    for (file, obj) in &all {
        let root = builtin::schema().named(definition(file)).expect("definition loaded");
        if let Err(e) = typed::validate(builtin::schema(), &root, obj) {
            panic!("{file}: {e:?}");
        }
    }
}

/// Applies `config` as [`FIRST`], then `changed` as [`SECOND`] (forced); returns the final
/// managedFields, each entry's `FieldsV1` parsed.
fn apply_twice(file: &str, config: &Value, changed: &Value) -> Vec<(String, Value)> {
    let schema = builtin::schema();
    let root = schema.named(definition(file)).expect("definition loaded");
    let api_version = config["apiVersion"].as_str().expect("apiVersion");
    let kind = config["kind"].as_str().expect("kind");
    let fm = FieldManager::new(schema, &root, api_version).with_kind(kind);
    let first = fm.apply(None, config, FIRST, false, &Time::from_unix_seconds(1_700_000_000)).unwrap_or_else(|e| panic!("{file}: {e}"));
    let second = fm
        .apply(Some(&first.object), changed, SECOND, true, &Time::from_unix_seconds(1_700_000_060))
        .unwrap_or_else(|e| panic!("{file}: {e}"));
    second.managed_fields().iter().map(|e: &ManagedFieldsEntry| (e.manager.clone(), fields_v1(e))).collect()
}

fn fields_v1(e: &ManagedFieldsEntry) -> Value {
    serde_json::from_str(e.fields_v1.as_ref().map_or("{}", |r| r.get())).expect("FieldsV1 JSON")
}

/// The fixture as an apply configuration: without the managedFields it carries.
fn config_of(obj: &Value) -> Value {
    let mut config = obj.clone();
    if let Some(meta) = config.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    config
}

/// The field set of `manager`.
fn owned<'a>(entries: &'a [(String, Value)], manager: &str) -> &'a Value {
    &entries.iter().find(|(m, _)| m == manager).unwrap_or_else(|| panic!("no entry of {manager}: {entries:?}")).1
}

/// The node of a field set at `path` (`f:` / `k:` / `v:` elements), if the set has it.
fn at<'a>(set: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(set, |cur, el| cur.get(*el))
}

#[track_caller]
fn assert_owns(entries: &[(String, Value)], manager: &str, path: &[&str]) {
    let set = owned(entries, manager);
    assert!(at(set, path).is_some(), "{manager} does not own {path:?}: {set}");
}

/// An atomic list (or struct) is owned whole: its node has no children.
#[track_caller]
fn assert_owns_whole(entries: &[(String, Value)], manager: &str, path: &[&str]) {
    let set = owned(entries, manager);
    assert_eq!(at(set, path), Some(&json!({})), "{manager} does not own {path:?} whole: {set}");
}

/// Every path element of a field set, for the no-positional-items check.
fn elements(set: &Value, out: &mut Vec<String>) {
    if let Value::Object(o) = set {
        for (k, v) in o {
            out.push(k.clone());
            elements(v, out);
        }
    }
}

/// Appends `item` to the list at the JSON pointer `list` of `obj`.
fn push(obj: &mut Value, list: &str, item: Value) {
    obj.pointer_mut(list).and_then(Value::as_array_mut).unwrap_or_else(|| panic!("no list at {list}")).push(item);
}

/// Sets the member `field` of the object at the JSON pointer `parent` of `obj`.
fn set(obj: &mut Value, parent: &str, field: &str, value: Value) {
    obj.pointer_mut(parent)
        .and_then(Value::as_object_mut)
        .unwrap_or_else(|| panic!("no object at {parent}"))
        .insert(field.to_string(), value);
}

/// Whether a definition's `metadata` is an `ObjectMeta` (a resource, which can hold managedFields).
fn is_resource(definition: &str) -> bool {
    let meta = builtin::openapi_v3().pointer(&format!("/components/schemas/{definition}/properties/metadata/allOf/0/$ref"));
    meta.and_then(Value::as_str).is_some_and(|r| r.ends_with(".ObjectMeta"))
}

#[test]
fn every_resource_fixture_applies_with_keyed_map_lists_and_no_positional_items() {
    let mut applied = 0;
    for (file, obj) in fixtures() {
        // Options, Status, WatchEvent and discovery documents have no ObjectMeta to hold
        // managedFields.
        if !is_resource(definition(&file)) {
            continue;
        }
        let config = config_of(&obj);
        let mut changed = config.clone();
        set(&mut changed, "/metadata/labels", "second", json!("yes"));
        let entries = apply_twice(&file, &config, &changed);
        assert_eq!(entries.iter().map(|(m, _)| m.as_str()).collect::<Vec<_>>(), [FIRST, SECOND], "{file}");
        for (manager, set) in &entries {
            let mut els = Vec::new();
            elements(set, &mut els);
            assert!(els.iter().all(|e| !e.starts_with("i:")), "{file}: {manager} owns list items by position: {set}");
            assert!(
                at(set, &["f:metadata", "f:ownerReferences", r#"k:{"uid":"uidValue"}"#]).is_some(),
                "{file}: {manager} does not own the owner reference by uid: {set}"
            );
            assert!(at(set, &["f:metadata", "f:finalizers", r#"v:"finalizersValue""#]).is_some(), "{file}: finalizers are a set");
        }
        assert_owns(&entries, SECOND, &["f:metadata", "f:labels", "f:second"]);
        applied += 1;
    }
    assert_eq!(applied, 40);
}

#[test]
fn pod_containers_ports_env_mounts_volumes_and_conditions_are_keyed_as_kubernetes_keys_them() {
    let file = "core.v1.Pod.json";
    let config = config_of(&fixture(file));
    let mut changed = config.clone();
    // A port without a protocol: keyed with the protocol's default, TCP.
    push(&mut changed, "/spec/containers/0/ports", json!({"containerPort": 8080}));
    set(&mut changed, "/spec/containers/0", "image", json!("image:v2"));
    push(&mut changed, "/spec/containers", json!({"name": "sidecar", "image": "sidecar:v1"}));
    let entries = apply_twice(file, &config, &changed);

    let container = ["f:spec", "f:containers", r#"k:{"name":"nameValue"}"#];
    for manager in [FIRST, SECOND] {
        assert_owns(
            &entries,
            manager,
            &[&container[..], &["f:ports", r#"k:{"containerPort":3,"protocol":"protocolValue"}"#, "f:hostPort"]].concat(),
        );
        assert_owns(&entries, manager, &[&container[..], &["f:env", r#"k:{"name":"nameValue"}"#, "f:value"]].concat());
        assert_owns(&entries, manager, &[&container[..], &["f:volumeMounts", r#"k:{"mountPath":"mountPathValue"}"#]].concat());
        assert_owns(&entries, manager, &["f:spec", "f:volumes", r#"k:{"name":"nameValue"}"#, "f:hostPath", "f:path"]);
        assert_owns(&entries, manager, &["f:spec", "f:initContainers", r#"k:{"name":"nameValue"}"#]);
        assert_owns(&entries, manager, &["f:spec", "f:ephemeralContainers", r#"k:{"name":"nameValue"}"#]);
        assert_owns(&entries, manager, &["f:spec", "f:hostAliases", r#"k:{"ip":"ipValue"}"#]);
        assert_owns(&entries, manager, &["f:spec", "f:imagePullSecrets", r#"k:{"name":"nameValue"}"#]);
        assert_owns(&entries, manager, &["f:status", "f:conditions", r#"k:{"type":"typeValue"}"#, "f:status"]);
        // `+listType=atomic` lists and an atomic struct are owned whole.
        assert_owns_whole(&entries, manager, &["f:spec", "f:tolerations"]);
        assert_owns_whole(&entries, manager, &[&container[..], &["f:args"]].concat());
        assert_owns_whole(&entries, manager, &["f:spec", "f:nodeSelector"]);
    }
    assert_owns(
        &entries,
        SECOND,
        &[&container[..], &["f:ports", r#"k:{"containerPort":8080,"protocol":"TCP"}"#, "f:containerPort"]].concat(),
    );
    assert_owns(&entries, SECOND, &["f:spec", "f:containers", r#"k:{"name":"sidecar"}"#, "f:image"]);
    // The forced change moved the image to the second manager.
    assert!(at(owned(&entries, FIRST), &[&container[..], &["f:image"]].concat()).is_none());
    assert_owns(&entries, SECOND, &[&container[..], &["f:image"]].concat());
}

#[test]
fn deployment_template_containers_and_conditions_are_keyed() {
    let file = "apps.v1.Deployment.json";
    let config = config_of(&fixture(file));
    let mut changed = config.clone();
    set(&mut changed, "/spec", "replicas", json!(5));
    push(&mut changed, "/status/conditions", json!({"type": "Available", "status": "True"}));
    let entries = apply_twice(file, &config, &changed);
    let template = ["f:spec", "f:template", "f:spec", "f:containers", r#"k:{"name":"nameValue"}"#];
    for manager in [FIRST, SECOND] {
        assert_owns(&entries, manager, &[&template[..], &["f:ports", r#"k:{"containerPort":3,"protocol":"protocolValue"}"#]].concat());
        assert_owns(&entries, manager, &["f:status", "f:conditions", r#"k:{"type":"typeValue"}"#, "f:reason"]);
        assert_owns(&entries, manager, &["f:spec", "f:strategy", "f:rollingUpdate", "f:maxSurge"]);
        // The selector is an atomic struct (`+structType=atomic` on LabelSelector).
        assert_owns_whole(&entries, manager, &["f:spec", "f:selector"]);
    }
    assert_owns(&entries, SECOND, &["f:status", "f:conditions", r#"k:{"type":"Available"}"#, "f:status"]);
    assert!(at(owned(&entries, FIRST), &["f:spec", "f:replicas"]).is_none());
}

#[test]
fn service_ports_are_keyed_by_port_and_protocol() {
    let file = "core.v1.Service.json";
    let config = config_of(&fixture(file));
    let mut changed = config.clone();
    push(&mut changed, "/spec/ports", json!({"port": 443, "targetPort": 8443}));
    let entries = apply_twice(file, &config, &changed);
    for manager in [FIRST, SECOND] {
        assert_owns(&entries, manager, &["f:spec", "f:ports", r#"k:{"port":3,"protocol":"protocolValue"}"#, "f:targetPort"]);
        assert_owns(&entries, manager, &["f:status", "f:conditions", r#"k:{"type":"typeValue"}"#]);
        assert_owns_whole(&entries, manager, &["f:status", "f:loadBalancer", "f:ingress"]);
        assert_owns_whole(&entries, manager, &["f:spec", "f:selector"]);
    }
    assert_owns(&entries, SECOND, &["f:spec", "f:ports", r#"k:{"port":443,"protocol":"TCP"}"#, "f:targetPort"]);
}

#[test]
fn endpoint_slice_endpoints_and_ports_are_atomic() {
    let file = "discovery.k8s.io.v1.EndpointSlice.json";
    let config = config_of(&fixture(file));
    let mut changed = config.clone();
    set(&mut changed, "", "addressType", json!("IPv6"));
    let entries = apply_twice(file, &config, &changed);
    for manager in [FIRST, SECOND] {
        assert_owns_whole(&entries, manager, &["f:endpoints"]);
        assert_owns_whole(&entries, manager, &["f:ports"]);
    }
    assert_owns(&entries, SECOND, &["f:addressType"]);
    assert!(at(owned(&entries, FIRST), &["f:addressType"]).is_none());
}

#[test]
fn role_rules_are_atomic_and_binding_subjects_too() {
    for file in ["rbac.authorization.k8s.io.v1.Role.json", "rbac.authorization.k8s.io.v1.ClusterRole.json"] {
        let config = config_of(&fixture(file));
        let mut changed = config.clone();
        push(&mut changed, "/rules", json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}));
        let entries = apply_twice(file, &config, &changed);
        // The changed atomic list is the second manager's now, whole.
        assert_owns_whole(&entries, SECOND, &["f:rules"]);
        assert!(at(owned(&entries, FIRST), &["f:rules"]).is_none());
    }
    let file = "rbac.authorization.k8s.io.v1.RoleBinding.json";
    let config = config_of(&fixture(file));
    let entries = apply_twice(file, &config, &config);
    assert_owns_whole(&entries, FIRST, &["f:subjects"]);
    // RoleRef is an atomic struct.
    assert_owns_whole(&entries, FIRST, &["f:roleRef"]);
}

#[test]
fn lease_spec_fields_are_owned_one_by_one() {
    let file = "coordination.k8s.io.v1.Lease.json";
    let config = config_of(&fixture(file));
    let mut changed = config.clone();
    set(&mut changed, "/spec", "holderIdentity", json!("other-holder"));
    set(&mut changed, "/spec", "renewTime", json!("2024-01-01T00:00:00.000000Z"));
    let entries = apply_twice(file, &config, &changed);
    for field in ["f:holderIdentity", "f:renewTime"] {
        assert_owns(&entries, SECOND, &["f:spec", field]);
        assert!(at(owned(&entries, FIRST), &["f:spec", field]).is_none());
    }
    for field in ["f:leaseDurationSeconds", "f:acquireTime", "f:leaseTransitions", "f:strategy", "f:preferredHolder"] {
        assert_owns(&entries, FIRST, &["f:spec", field]);
    }
}

#[test]
fn node_addresses_and_conditions_are_keyed_by_type_job_conditions_are_atomic() {
    let file = "core.v1.Node.json";
    let config = config_of(&fixture(file));
    let entries = apply_twice(file, &config, &config);
    assert_owns(&entries, FIRST, &["f:status", "f:addresses", r#"k:{"type":"typeValue"}"#, "f:address"]);
    assert_owns(&entries, FIRST, &["f:status", "f:conditions", r#"k:{"type":"typeValue"}"#]);
    assert_owns_whole(&entries, FIRST, &["f:spec", "f:taints"]);

    // Job conditions keep `patchStrategy=merge` on `type` but are `+listType=atomic`.
    let file = "batch.v1.Job.json";
    let config = config_of(&fixture(file));
    let entries = apply_twice(file, &config, &config);
    assert_owns_whole(&entries, FIRST, &["f:status", "f:conditions"]);
    assert_owns(&entries, FIRST, &["f:spec", "f:template", "f:spec", "f:containers", r#"k:{"name":"nameValue"}"#]);

    // Other groups' map lists.
    let file = "autoscaling.v2.HorizontalPodAutoscaler.json";
    let entries = apply_twice(file, &config_of(&fixture(file)), &config_of(&fixture(file)));
    assert_owns(&entries, FIRST, &["f:status", "f:conditions", r#"k:{"type":"typeValue"}"#]);
    let file = "policy.v1.PodDisruptionBudget.json";
    let entries = apply_twice(file, &config_of(&fixture(file)), &config_of(&fixture(file)));
    assert_owns(&entries, FIRST, &["f:status", "f:conditions", r#"k:{"type":"typeValue"}"#]);
    let file = "apps.v1.StatefulSet.json";
    let entries = apply_twice(file, &config_of(&fixture(file)), &config_of(&fixture(file)));
    assert_owns_whole(&entries, FIRST, &["f:spec", "f:volumeClaimTemplates"]);
    assert_owns(&entries, FIRST, &["f:spec", "f:template", "f:spec", "f:topologySpreadConstraints"]);
}
