//! The built-in Kubernetes kinds a store knows from the start: every kind of the built-in groups
//! registered (and turned off by an option), short names, Kubernetes' list types and merge keys in
//! managedFields, `metadata.generation` only where Kubernetes keeps one (a Deployment's moving with
//! its annotations too), Secret `stringData` folded into `data`, and a type of one's own under a
//! built-in's name kept across reopening.
// Needs the RocksDB-backed store (the engine's `store` feature).
#![cfg(feature = "store")]

use fieldstore_engine::store::{builtin_types, Collection, GetOptions, ObjectKey, Options, SchemaSource, Store, TypeSpec, WriteOptions};
use fieldstore_engine::Error;
use serde_json::{json, Value};

mod support;

fn open(dir: &std::path::Path, options: Options) -> Store {
    support::open_at(dir, options)
}

#[test]
fn every_builtin_kind_is_registered_by_default_and_an_option_turns_them_off() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = open(&dir.path().join("on"), Options::default());
    let types = store.types();
    for resource in [
        "configmaps",
        "deployments.apps",
        "leases.coordination.k8s.io",
        "roles.rbac.authorization.k8s.io",
        "endpointslices.discovery.k8s.io",
    ] {
        assert!(types.iter().any(|t| t.resource() == resource), "{resource} is not registered");
    }
    assert_eq!(types.len(), builtin_types().len());
    assert!(types.iter().all(|t| matches!(t.schema, SchemaSource::Builtin { .. })));
    let off = open(&dir.path().join("off"), Options::default().builtin_types(false));
    assert!(off.types().is_empty());
}

#[test]
fn short_names_kinds_and_plurals_name_types() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = open(dir.path(), Options::default());
    for (name, resource) in [
        ("cm", "configmaps"),
        ("po", "pods"),
        ("svc", "services"),
        ("deploy", "deployments.apps"),
        ("ns", "namespaces"),
        ("Lease", "leases.coordination.k8s.io"),
        ("endpointslices", "endpointslices.discovery.k8s.io"),
        ("crd", "customresourcedefinitions.apiextensions.k8s.io"),
    ] {
        assert_eq!(store.find_type(name).expect(name).resource(), resource, "{name}");
    }
    // The verbs take them too.
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}});
    store.apply(&Collection::new("cm", Some("default")), &cm, &WriteOptions::new("me")).expect("apply through a short name");
    let got = store.get(&ObjectKey::new("configmaps", Some("default"), "a"), &GetOptions::default()).expect("get");
    assert_eq!(got["data"]["k"], "v");
    assert!(matches!(store.find_type("nosuchthing"), Err(Error::NotFound { .. })));
}

#[test]
fn generation_only_where_kubernetes_keeps_one() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = open(dir.path(), Options::default());
    let me = WriteOptions::new("me");
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "generation": 7}, "data": {"k": "v"}});
    let created = store.create(&Collection::new("configmaps", Some("default")), &cm, &me).expect("create");
    assert_eq!(created["metadata"].get("generation"), None, "{created}");
    let mut change = created.clone();
    change["data"]["k"] = json!("w");
    let changed = store.update(&Collection::new("configmaps", Some("default")), &change, &me).expect("update");
    assert_eq!(changed["data"]["k"], "w");
    assert_eq!(changed["metadata"].get("generation"), None, "{changed}");

    let deploy = |replicas: i64| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}})
    };
    let d1 = store.apply(&Collection::new("deploy", Some("default")), &deploy(1), &me).expect("apply deployment");
    assert_eq!(d1["metadata"]["generation"], 1);
    let d2 = store.apply(&Collection::new("deploy", Some("default")), &deploy(3), &me).expect("apply deployment again");
    assert_eq!(d2["metadata"]["generation"], 2);
}

#[test]
fn a_deployments_generation_moves_with_its_annotations_too() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = open(dir.path(), Options::default());
    let me = WriteOptions::new("me");
    let deploys = Collection::new("deployments", Some("default"));
    let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}});
    let d = store.create(&deploys, &deploy, &me).expect("create");
    assert_eq!(d["metadata"]["generation"], 1);
    // A label is metadata only; an annotation is copied to the ReplicaSets: a new generation.
    let mut change = d.clone();
    change["metadata"]["labels"] = json!({"team": "a"});
    let d = store.update(&deploys, &change, &me).expect("label");
    assert_eq!(d["metadata"]["generation"], 1);
    let mut change = d.clone();
    change["metadata"]["annotations"] = json!({"note": "x"});
    let d = store.update(&deploys, &change, &me).expect("annotate");
    assert_eq!(d["metadata"]["generation"], 2);
    // Annotations and spec at once: one bump.
    let mut change = d.clone();
    change["metadata"]["annotations"] = json!({"note": "y"});
    change["spec"]["replicas"] = json!(2);
    let d = store.update(&deploys, &change, &me).expect("annotate and scale");
    assert_eq!(d["metadata"]["generation"], 3);
    // Through the status subresource: the generation stays.
    let mut change = d.clone();
    change["metadata"]["annotations"] = json!({"note": "z"});
    change["status"] = json!({"replicas": 2});
    let d = store.update(&deploys, &change, &WriteOptions::new("ctl").status(true)).expect("status");
    assert_eq!((&d["status"]["replicas"], &d["metadata"]["generation"]), (&json!(2), &json!(3)));
    // Other kinds keep kube-apiserver's rule: the spec only.
    let rs = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web-1"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}});
    let sets = Collection::new("replicasets", Some("default"));
    let mut r = store.create(&sets, &rs, &me).expect("create a ReplicaSet");
    r["metadata"]["annotations"] = json!({"note": "x"});
    let r = store.update(&sets, &r, &me).expect("annotate a ReplicaSet");
    assert_eq!(r["metadata"]["generation"], 1);
}

#[test]
fn secret_string_data_is_folded_into_data() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = open(dir.path(), Options::default());
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
        "data": {"a": "YQ==", "b": "Yg=="}, "stringData": {"b": "bee", "c": "sea"}});
    let created = store.create(&Collection::new("secrets", Some("default")), &secret, &WriteOptions::new("me")).expect("create");
    assert_eq!(created.get("stringData"), None);
    assert_eq!(created["data"], json!({"a": "YQ==", "b": "YmVl", "c": "c2Vh"}));
    let applied = store
        .apply(
            &Collection::new("secrets", Some("default")),
            &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "t"}, "stringData": {"x": "y"}}),
            &WriteOptions::new("me"),
        )
        .expect("apply");
    assert_eq!(applied.get("stringData"), None);
    assert_eq!(applied["data"], json!({"x": "eQ=="}));
}

#[test]
fn immutable_config_maps_and_secrets_keep_their_data() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = open(dir.path(), Options::default());
    let w = WriteOptions::new("me");
    let cms = Collection::new("configmaps", Some("default"));
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}, "immutable": true});
    store.create(&cms, &cm, &w).unwrap();
    let mut changed = cm.clone();
    changed["data"]["a"] = json!("2");
    changed["immutable"] = json!(false);
    let status = fieldstore_engine::status::Status::from(&store.update(&cms, &changed, &w).unwrap_err());
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    let causes: Vec<(String, String, String)> =
        status.details.unwrap().causes.into_iter().map(|c| (c.cause_type, c.field, c.message)).collect();
    let forbidden =
        |f: &str| ("FieldValueForbidden".to_string(), f.to_string(), "Forbidden: field is immutable when `immutable` is set".to_string());
    assert_eq!(causes, vec![forbidden("immutable"), forbidden("data")]);
    // Labels may still change; so may a ConfigMap that is not immutable.
    let mut labelled = cm.clone();
    labelled["metadata"]["labels"] = json!({"x": "y"});
    store.update(&cms, &labelled, &w).unwrap();
    let secrets = Collection::new("secrets", Some("default"));
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "type": "Opaque", "data": {"a": "YQ=="}});
    store.create(&secrets, &secret, &w).unwrap();
    let mut retyped = secret.clone();
    retyped["type"] = json!("kubernetes.io/tls");
    let e = store.update(&secrets, &retyped, &w).unwrap_err();
    assert!(e.to_string().contains("type: Invalid value: \"kubernetes.io/tls\": field is immutable"), "{e}");
    let mut sealed = secret.clone();
    sealed["immutable"] = json!(true);
    store.update(&secrets, &sealed, &w).unwrap();
    sealed["data"] = json!({"a": "Yg=="});
    assert!(matches!(store.update(&secrets, &sealed, &w), Err(Error::Invalid(_))));
}

#[test]
fn an_object_being_deleted_gets_no_new_finalizer() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = open(dir.path(), Options::default());
    let w = WriteOptions::new("me");
    let cms = Collection::new("configmaps", Some("default"));
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "finalizers": ["a.io/x"]}});
    store.create(&cms, &cm, &w).unwrap();
    let deleting = store.delete(&ObjectKey::new("configmaps", Some("default"), "c"), &Default::default()).unwrap();
    let mut more = deleting.clone();
    more["metadata"]["finalizers"] = json!(["a.io/x", "b.io/y"]);
    let e = store.update(&cms, &more, &w).unwrap_err();
    assert_eq!(
        e.to_string(),
        "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"b.io/y\"}"
    );
    // Removing one is what finalization is.
    let mut fewer = deleting.clone();
    fewer["metadata"]["finalizers"] = json!([]);
    store.update(&cms, &fewer, &w).unwrap();
}

/// Every container, port and condition is keyed in managedFields as Kubernetes keys it.
#[test]
fn managed_fields_key_list_items_as_kubernetes_does() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = open(dir.path(), Options::default());
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "web", "image": "nginx",
            "ports": [{"containerPort": 80, "protocol": "TCP"}], "env": [{"name": "A", "value": "1"}]}]}});
    let out = store.apply(&Collection::new("pods", Some("default")), &pod, &WriteOptions::new("me")).expect("apply pod");
    let fields = out["metadata"]["managedFields"][0]["fieldsV1"].to_string();
    for key in [r#"k:{\"name\":\"web\"}"#, r#"k:{\"containerPort\":80,\"protocol\":\"TCP\"}"#, r#"k:{\"name\":\"A\"}"#] {
        assert!(fields.contains(key), "{key} missing from {fields}");
    }
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]});
    let out = store.apply(&Collection::new("roles", Some("default")), &role, &WriteOptions::new("me")).expect("apply role");
    // Role rules are atomic: owned as one field.
    assert_eq!(out["metadata"]["managedFields"][0]["fieldsV1"]["f:rules"], json!({}));
}

#[test]
fn a_type_of_ones_own_under_a_builtin_name_survives_reopening() {
    let dir = tempfile::tempdir().expect("temp dir");
    let own = TypeSpec::new("", "v1", "ConfigMap", "configmaps").namespaced(true);
    {
        let store = open(dir.path(), Options::default());
        store.register(own.clone()).expect("register");
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}});
        store.create(&Collection::new("configmaps", Some("default")), &cm, &WriteOptions::new("me")).expect("create");
    }
    let store = open(dir.path(), Options::default());
    let t = store.find_type("configmaps").expect("configmaps");
    assert_eq!(t.schema, SchemaSource::None);
    let got: Value = store.get(&ObjectKey::new("configmaps", Some("default"), "a"), &GetOptions::default()).expect("get after reopening");
    assert_eq!(got["data"]["k"], "v");
    assert_eq!(store.types().len(), builtin_types().len());
}

/// kube-apiserver compares a create with the Go zero value of the kind: members Go always has
/// (`spec.strategy`, `spec.template`, `spec.template.spec.containers` as `null`) get no `"."`
/// entry in the creator's set; those Go leaves out when empty (`labels`, `rollingUpdate`) do.
#[test]
fn a_create_is_compared_with_the_kinds_go_zero_value() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = open(dir.path(), Options::default());
    let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
          "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
          "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}});
    let out = store.create(&Collection::new("deployments.apps", Some("default")), &deploy, &WriteOptions::new("me")).expect("create");
    let set = &out["metadata"]["managedFields"][0]["fieldsV1"];
    let spec = &set["f:spec"];
    assert!(set.get("f:spec").is_some() && spec.get(".").is_none(), "{set}");
    assert!(spec["f:strategy"].get(".").is_none(), "{spec}");
    assert!(spec["f:strategy"]["f:rollingUpdate"].get(".").is_some(), "{spec}");
    assert!(spec["f:template"].get(".").is_none() && spec["f:template"]["f:spec"]["f:containers"].get(".").is_none(), "{spec}");
    assert!(spec["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"app\"}"].get(".").is_some(), "{spec}");
    assert!(set["f:metadata"].get(".").is_none() && set["f:metadata"]["f:labels"].get(".").is_some(), "{set}");
    // The object itself is as written: the zero value only decides ownership.
    assert!(out.get("status").is_none(), "{out}");
}
