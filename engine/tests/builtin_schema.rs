//! The built-in schema's document and API (`schema::builtin`): the generated OpenAPI v3 document's
//! form, the kinds and their definitions, how the markers come out in the loaded schema, and
//! strategic merge patches with it.

use fieldstore_engine::patch::{strategic_merge, PatchMeta};
use fieldstore_engine::schema::builtin::{self, BuiltinKind};
use fieldstore_engine::schema::{Atom, ElementRelationship, Schema, TypeRef, OBJECT_META_TYPE};
use serde_json::{json, Value};

fn schemas() -> &'static serde_json::Map<String, Value> {
    builtin::openapi_v3().pointer("/components/schemas").and_then(Value::as_object).expect("components.schemas")
}

fn def(name: &str) -> &'static Value {
    schemas().get(name).unwrap_or_else(|| panic!("no definition {name}"))
}

fn resolve<'s>(s: &'s Schema, tr: &'s TypeRef) -> &'s Atom {
    s.resolve(tr).expect("type resolves")
}

/// The type at a path of field names below a definition.
fn type_at(definition: &str, path: &[&str]) -> &'static TypeRef {
    let s = builtin::schema();
    let root: &'static TypeRef = Box::leak(Box::new(s.named(definition).expect("definition")));
    path.iter().fold(root, |cur, f| {
        let map = resolve(s, cur).map.as_ref().unwrap_or_else(|| panic!("{definition}: not a map at {f}"));
        &map.find_field(f).unwrap_or_else(|| panic!("{definition}: no field {f}")).ty
    })
}

fn list_at(definition: &str, path: &[&str]) -> (ElementRelationship, Vec<String>) {
    let l = resolve(builtin::schema(), type_at(definition, path)).list.as_ref().expect("a list");
    (l.relationship, l.keys.iter().map(|k| k.to_string()).collect())
}

fn map_at(definition: &str, path: &[&str]) -> ElementRelationship {
    resolve(builtin::schema(), type_at(definition, path)).map.as_ref().expect("a map").relationship
}

#[test]
fn document_is_an_openapi_v3_document_whose_references_all_resolve() {
    let doc = builtin::openapi_v3();
    assert_eq!(doc["openapi"], "3.0.0");
    assert!(schemas().len() > 500, "{} definitions", schemas().len());
    fn refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(o) => {
                if let Some(r) = o.get("$ref").and_then(Value::as_str) {
                    out.push(r.to_string());
                }
                o.values().for_each(|v| refs(v, out));
            }
            Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }
    let mut all = Vec::new();
    for (name, d) in schemas() {
        // JSONSchemaProps has members named `$ref` and `$schema`: properties, not references.
        let mut d = d.clone();
        if let Some(p) = d.get_mut("properties").and_then(Value::as_object_mut) {
            p.remove("$ref");
        }
        refs(&d, &mut all);
        assert!(name.starts_with("io.k8s."), "{name}");
    }
    for r in all {
        let target = r.strip_prefix("#/components/schemas/").unwrap_or_else(|| panic!("reference {r}"));
        assert!(schemas().contains_key(target), "dangling reference {r}");
    }
    // The compact text is the document.
    assert_eq!(&serde_json::from_str::<Value>(builtin::OPENAPI_V3_JSON).expect("JSON"), doc);
}

#[test]
fn references_are_plain_alone_and_all_of_beside_a_default_or_extensions() {
    let pod = def("io.k8s.api.core.v1.Pod");
    assert_eq!(pod["properties"]["spec"], json!({"allOf": [{"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"}], "default": {}}));
    let spec = def("io.k8s.api.core.v1.PodSpec");
    assert_eq!(spec["properties"]["affinity"], json!({"$ref": "#/components/schemas/io.k8s.api.core.v1.Affinity"}));
    assert_eq!(
        spec["properties"]["containers"],
        json!({
            "type": "array",
            "items": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.core.v1.Container"}], "default": {}},
            "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "x-kubernetes-patch-merge-key": "name", "x-kubernetes-patch-strategy": "merge",
        })
    );
    assert_eq!(spec["properties"]["volumes"]["x-kubernetes-patch-strategy"], "merge,retainKeys");
    assert_eq!(spec["properties"]["nodeSelector"]["x-kubernetes-map-type"], "atomic");
    assert_eq!(spec["properties"]["nodeSelector"]["additionalProperties"], json!({"type": "string", "default": ""}));
    assert_eq!(
        def("io.k8s.api.core.v1.ContainerPort")["properties"]["protocol"],
        json!({"type": "string", "default": "TCP"}),
        "+default=\"TCP\""
    );
    assert_eq!(
        def("io.k8s.api.core.v1.ContainerPort")["properties"]["containerPort"],
        json!({"type": "integer", "format": "int32", "default": 0})
    );
    assert_eq!(def("io.k8s.api.core.v1.AzureDiskVolumeSource")["properties"]["cachingMode"]["default"], "ReadWrite");
    assert_eq!(def("io.k8s.api.policy.v1.PodDisruptionBudgetSpec")["properties"]["selector"]["x-kubernetes-patch-strategy"], "replace");
    assert_eq!(def("io.k8s.api.core.v1.LocalObjectReference")["x-kubernetes-map-type"], "atomic");
}

#[test]
fn inline_members_are_flattened_and_json_names_are_go_names() {
    let volume = def("io.k8s.api.core.v1.Volume")["properties"].as_object().expect("properties");
    assert!(volume.contains_key("name") && volume.contains_key("configMap") && volume.contains_key("hostPath"));
    assert!(!volume.contains_key("volumeSource"));
    let probe = def("io.k8s.api.core.v1.Probe")["properties"].as_object().expect("properties");
    assert!(probe.contains_key("httpGet") && !probe.contains_key("handler"));
    let env = def("io.k8s.api.core.v1.ConfigMapEnvSource")["properties"].as_object().expect("properties");
    assert!(env.contains_key("name") && !env.contains_key("localObjectReference"));
    assert!(def("io.k8s.api.networking.v1.IngressClassParametersReference")["properties"].get("apiGroup").is_some());
    let props =
        def("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps")["properties"].as_object().expect("properties");
    for name in ["$ref", "$schema", "x-kubernetes-list-map-keys", "x-kubernetes-preserve-unknown-fields", "x-kubernetes-int-or-string"] {
        assert!(props.contains_key(name), "{name}");
    }
    let pod = def("io.k8s.api.core.v1.Pod")["properties"].as_object().expect("properties");
    assert_eq!(pod["apiVersion"], json!({"type": "string"}));
    assert_eq!(pod["kind"], json!({"type": "string"}));
}

#[test]
fn special_types_have_their_json_shapes() {
    let m = "io.k8s.apimachinery.pkg.apis.meta.v1";
    assert_eq!(def(&format!("{m}.Time")), &json!({"type": "string", "format": "date-time"}));
    assert_eq!(def(&format!("{m}.MicroTime")), &json!({"type": "string", "format": "date-time"}));
    assert_eq!(def(&format!("{m}.Duration")), &json!({"type": "string"}));
    assert_eq!(def(&format!("{m}.FieldsV1")), &json!({"type": "object"}));
    assert_eq!(def("io.k8s.apimachinery.pkg.runtime.RawExtension"), &json!({"type": "object"}));
    assert_eq!(
        def("io.k8s.apimachinery.pkg.util.intstr.IntOrString"),
        &json!({"format": "int-or-string", "oneOf": [{"type": "integer"}, {"type": "string"}]})
    );
    assert_eq!(def("io.k8s.apimachinery.pkg.api.resource.Quantity"), &json!({"oneOf": [{"type": "string"}, {"type": "number"}]}));
    assert_eq!(def("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON"), &json!({}));
    assert_eq!(
        def(&format!("{m}.APIResource"))["properties"]["verbs"],
        json!({"type": "array", "items": {"type": "string", "default": ""}})
    );
    // No enforced default for them, though the members are non-pointer structs.
    assert_eq!(
        def(&format!("{m}.Condition"))["properties"]["lastTransitionTime"],
        json!({"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Time"})
    );
    assert_eq!(
        def("io.k8s.api.core.v1.ServicePort")["properties"]["targetPort"],
        json!({"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.util.intstr.IntOrString"})
    );
    assert!(!schemas().contains_key(&format!("{m}.Verbs")));
    assert!(!schemas().contains_key("io.k8s.api.core.v1.Preconditions"), "+k8s:openapi-gen=false");
}

#[test]
fn kinds_name_their_definitions() {
    let k = builtin::kinds();
    let find = |g: &str, v: &str, kind: &str| k.iter().find(|x| (x.group, x.version, x.kind) == (g, v, kind)).cloned();
    assert_eq!(
        find("", "v1", "Pod"),
        Some(BuiltinKind { group: "", version: "v1", kind: "Pod", definition: "io.k8s.api.core.v1.Pod", has_status: true })
    );
    assert_eq!(find("", "v1", "ConfigMap").map(|k| k.has_status), Some(false));
    assert_eq!(
        find("", "v1", "Status").map(|k| (k.definition, k.has_status)),
        Some(("io.k8s.apimachinery.pkg.apis.meta.v1.Status", false))
    );
    assert_eq!(builtin::definition_name("apps", "v1", "Deployment"), Some("io.k8s.api.apps.v1.Deployment"));
    // core/v1 `List` is Go's `type List metav1.List`.
    assert_eq!(builtin::definition_name("", "v1", "List"), Some("io.k8s.api.core.v1.List"));
    assert_eq!(def("io.k8s.api.core.v1.List")["required"], json!(["items"]));
    assert_eq!(builtin::definition_name("apps", "v1", "DeploymentList"), Some("io.k8s.api.apps.v1.DeploymentList"));
    assert_eq!(builtin::definition_name("rbac.authorization.k8s.io", "v1", "Role"), Some("io.k8s.api.rbac.v1.Role"));
    assert_eq!(
        builtin::definition_name("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
        Some("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition")
    );
    assert_eq!(
        builtin::definition_name("discovery.k8s.io", "v1", "DeleteOptions"),
        Some("io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions")
    );
    assert_eq!(builtin::definition_name("apps", "v1beta1", "Deployment"), None);
    assert_eq!(builtin::definition_name("", "v1", "Deployment"), None);
    assert!(builtin::type_ref("coordination.k8s.io", "v1", "Lease").is_some());
    // Sorted, one entry per kind, and every definition is in the schema.
    assert!(k.windows(2).all(|w| (w[0].group, w[0].version, w[0].kind) < (w[1].group, w[1].version, w[1].kind)));
    assert!(k.iter().all(|x| builtin::schema().named(x.definition).is_some()));
    let gvk = &def("io.k8s.api.apps.v1.Deployment")["x-kubernetes-group-version-kind"];
    assert_eq!(gvk, &json!([{"group": "apps", "version": "v1", "kind": "Deployment"}]));
    // The 59 upstream fixture kinds and their lists are all there.
    for (g, v, kind) in [
        ("", "v1", "Service"),
        ("", "v1", "SerializedReference"),
        ("networking.k8s.io", "v1", "ServiceCIDR"),
        ("batch", "v1", "CronJobList"),
    ] {
        assert!(find(g, v, kind).is_some(), "{g}/{v} {kind}");
    }
}

#[test]
fn markers_become_list_types_keys_and_atomicity_in_the_schema() {
    use ElementRelationship::{Associative, Atomic, Separable};
    let pod_spec = "io.k8s.api.core.v1.PodSpec";
    assert_eq!(list_at(pod_spec, &["containers"]), (Associative, vec!["name".into()]));
    assert_eq!(list_at("io.k8s.api.core.v1.Container", &["ports"]), (Associative, vec!["containerPort".into(), "protocol".into()]));
    assert_eq!(list_at(pod_spec, &["topologySpreadConstraints"]), (Associative, vec!["topologyKey".into(), "whenUnsatisfiable".into()]));
    assert_eq!(list_at(pod_spec, &["tolerations"]), (Atomic, vec![]));
    assert_eq!(list_at("io.k8s.api.core.v1.ServiceSpec", &["ports"]), (Associative, vec!["port".into(), "protocol".into()]));
    assert_eq!(list_at("io.k8s.api.batch.v1.JobStatus", &["conditions"]), (Atomic, vec![]));
    assert_eq!(list_at("io.k8s.api.apps.v1.DeploymentStatus", &["conditions"]), (Associative, vec!["type".into()]));
    assert_eq!(list_at(OBJECT_META_TYPE, &["finalizers"]), (Associative, vec![]));
    assert_eq!(list_at(OBJECT_META_TYPE, &["ownerReferences"]), (Associative, vec!["uid".into()]));
    assert_eq!(list_at(OBJECT_META_TYPE, &["managedFields"]), (Atomic, vec![]));
    assert_eq!(map_at(pod_spec, &["nodeSelector"]), Atomic);
    assert_eq!(map_at(OBJECT_META_TYPE, &["labels"]), Separable);
    assert_eq!(map_at("io.k8s.api.apps.v1.DeploymentSpec", &["selector"]), Atomic);
    assert_eq!(map_at("io.k8s.api.core.v1.EnvVarSource", &["configMapKeyRef"]), Atomic);
    assert_eq!(map_at("io.k8s.api.core.v1.ObjectReference", &[]), Atomic);
    assert_eq!(map_at(pod_spec, &[]), Separable);
    // Every merging list of these groups declares a list type now: none relies on the loader's
    // patch-strategy fallback (covered by the loader's own tests).
    for (name, d) in schemas() {
        for (field, p) in d.get("properties").and_then(Value::as_object).into_iter().flatten() {
            let merging = p.get("x-kubernetes-patch-strategy").and_then(Value::as_str).is_some_and(|s| s.starts_with("merge"));
            if p["type"] == "array" && merging {
                assert!(p.get("x-kubernetes-list-type").is_some(), "{name}.{field}");
            }
        }
    }
    // Key defaults for items that omit a key field.
    let s = builtin::schema();
    let item = list_of(s, type_at("io.k8s.api.core.v1.Container", &["ports"]));
    let port = resolve(s, &item).map.as_ref().expect("map");
    assert_eq!(port.find_field("protocol").and_then(|f| f.default.clone()), Some(json!("TCP")));
}

fn list_of(s: &Schema, tr: &TypeRef) -> TypeRef {
    resolve(s, tr).list.as_ref().expect("a list").element_type.clone()
}

#[test]
fn strategic_merge_patches_use_the_patch_strategies() {
    let meta = PatchMeta::new(builtin::schema(), "io.k8s.api.core.v1.Pod").expect("Pod");
    let pod = json!({"spec": {"containers": [{"name": "a", "image": "a:1"}], "tolerations": [{"key": "x"}]}});
    let patch =
        json!({"spec": {"containers": [{"name": "b", "image": "b:1"}, {"name": "a", "image": "a:2"}], "tolerations": [{"key": "y"}]}});
    let out = strategic_merge(&pod, &patch, &meta).expect("patch applies");
    // Containers merge by name (patchStrategy=merge, patchMergeKey=name); tolerations, without a
    // strategy, are replaced. (Merged items come in the patch's order, as in Go.)
    assert_eq!(out["spec"]["containers"], json!([{"name": "b", "image": "b:1"}, {"name": "a", "image": "a:2"}]));
    assert_eq!(out["spec"]["tolerations"], json!([{"key": "y"}]));

    // `patchStrategy=replace` on the PodDisruptionBudget's selector replaces it whole.
    let meta = PatchMeta::new(builtin::schema(), "io.k8s.api.policy.v1.PodDisruptionBudget").expect("PDB");
    let pdb = json!({"spec": {"selector": {"matchLabels": {"a": "1"}}}});
    let out = strategic_merge(&pdb, &json!({"spec": {"selector": {"matchLabels": {"b": "2"}}}}), &meta).expect("patch applies");
    assert_eq!(out["spec"]["selector"], json!({"matchLabels": {"b": "2"}}));

    // Finalizers (patchStrategy=merge on strings) merge as a set.
    let out = strategic_merge(&json!({"metadata": {"finalizers": ["a"]}}), &json!({"metadata": {"finalizers": ["b"]}}), &meta)
        .expect("patch applies");
    assert_eq!(out["metadata"]["finalizers"], json!(["b", "a"]));
}
