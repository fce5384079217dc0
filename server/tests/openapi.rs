//! The OpenAPI documents generated from the registered types: built-in kinds and a CRD, in the
//! v2 and v3 forms, self-contained and carrying the markers kubectl reads.

// Helpers outside #[test] functions unwrap too: a panic there is a failed test with its message.
#![allow(clippy::unwrap_used)]

use fieldstore_engine::store::{builtin_types, TypeSpec};
use fieldstore_server::http::openapi::{dangling_refs, hash, v2, v3_group_version, v3_index, wants_v2_protobuf};
use serde_json::{json, Value};

fn widget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "shortNames": ["wd"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "replicas": {"type": "integer"},
                        "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                        "items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                            "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}}}},
                    "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}}}}
            }]
        }
    })
}

fn types() -> Vec<TypeSpec> {
    let mut t = builtin_types();
    t.push(TypeSpec::from_crd(&widget_crd()).unwrap());
    t
}

#[test]
fn v2_definitions_carry_kinds_and_merge_markers() {
    let doc = v2(&types());
    assert_eq!(doc["swagger"], "2.0");
    let defs = &doc["definitions"];
    assert_eq!(
        defs["io.k8s.api.core.v1.ConfigMap"]["x-kubernetes-group-version-kind"],
        json!([{"group": "", "version": "v1", "kind": "ConfigMap"}])
    );
    assert_eq!(defs["io.k8s.api.core.v1.ConfigMap"]["properties"]["data"]["additionalProperties"]["type"], "string");
    assert_eq!(
        defs["io.k8s.api.apps.v1.Deployment"]["x-kubernetes-group-version-kind"],
        json!([{"group": "apps", "version": "v1", "kind": "Deployment"}])
    );
    // v2 form: `$ref` with siblings, not `allOf`.
    assert_eq!(defs["io.k8s.api.apps.v1.Deployment"]["properties"]["spec"]["$ref"], "#/definitions/io.k8s.api.apps.v1.DeploymentSpec");
    let containers = &defs["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
    assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
    assert_eq!(containers["x-kubernetes-patch-strategy"], "merge");
    assert_eq!(containers["x-kubernetes-list-type"], "map");
    assert_eq!(containers["items"]["$ref"], "#/definitions/io.k8s.api.core.v1.Container");
    let ports = &defs["io.k8s.api.core.v1.Container"]["properties"]["ports"];
    assert_eq!(ports["x-kubernetes-list-map-keys"], json!(["containerPort", "protocol"]));
    assert_eq!(ports["x-kubernetes-patch-merge-key"], "containerPort");
    // IntOrString in the v2 form.
    let int_or_string = &defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"];
    assert_eq!((&int_or_string["type"], &int_or_string["format"]), (&json!("string"), &json!("int-or-string")));
    assert!(int_or_string["description"].as_str().unwrap().starts_with("IntOrString is a type that can hold an int32 or a string."));
    assert!(doc.to_string().find("#/components/schemas/").is_none(), "v3 references left in the v2 document");
    assert_eq!(dangling_refs(&doc), Vec::<String>::new());
}

#[test]
fn v2_publishes_a_crd_with_its_envelope_and_list() {
    let doc = v2(&types());
    let w = &doc["definitions"]["com.example.v1.Widget"];
    assert_eq!(w["x-kubernetes-group-version-kind"], json!([{"group": "example.com", "version": "v1", "kind": "Widget"}]));
    assert_eq!(w["properties"]["metadata"]["$ref"], "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
    assert_eq!(w["properties"]["apiVersion"]["type"], "string");
    assert_eq!(w["properties"]["spec"]["properties"]["items"]["x-kubernetes-list-map-keys"], json!(["name"]));
    // int-or-string without the v3-only anyOf.
    let port = &w["properties"]["spec"]["properties"]["port"];
    assert!(port.get("anyOf").is_none());
    assert_eq!(port["format"], "int-or-string");
    let list = &doc["definitions"]["com.example.v1.WidgetList"];
    assert_eq!(list["items"], Value::Null);
    assert_eq!(list["properties"]["items"]["items"]["$ref"], "#/definitions/com.example.v1.Widget");
    assert_eq!(list["x-kubernetes-group-version-kind"][0]["kind"], "WidgetList");
    // Paths: every operation with its action and kind; no strategic merge patch for a CRD.
    let item = &doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"];
    assert_eq!(item["get"]["x-kubernetes-action"], "get");
    assert_eq!(item["get"]["x-kubernetes-group-version-kind"], json!({"group": "example.com", "version": "v1", "kind": "Widget"}));
    assert_eq!(item["put"]["x-kubernetes-action"], "put");
    assert_eq!(item["delete"]["x-kubernetes-action"], "delete");
    assert!(!item["patch"]["consumes"].as_array().unwrap().contains(&json!("application/strategic-merge-patch+json")));
    let coll = &doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets"];
    assert_eq!(coll["get"]["x-kubernetes-action"], "list");
    assert_eq!(coll["post"]["x-kubernetes-action"], "post");
    assert_eq!(coll["delete"]["x-kubernetes-action"], "deletecollection");
    assert_eq!(doc["paths"]["/apis/example.com/v1/watch/namespaces/{namespace}/widgets/{name}"]["get"]["x-kubernetes-action"], "watch");
    assert_eq!(doc["paths"]["/apis/example.com/v1/widgets"]["get"]["x-kubernetes-action"], "list");
    assert!(doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/status"]["patch"].is_object());
    // Cluster-scoped kinds have no namespaced paths.
    assert!(doc["paths"]["/api/v1/namespaces/{name}"]["get"].is_object());
    assert!(doc["paths"].get("/api/v1/namespaces/{namespace}/namespaces").is_none());
}

#[test]
fn the_document_gives_back_the_types_it_was_made_from() {
    // The engine reads an API server's document into types: ours reads back the same.
    let doc = v2(&types());
    let back = TypeSpec::from_openapi(&doc).unwrap();
    for t in types() {
        let b = back.iter().find(|b| b.kind == t.kind && b.group == t.group).unwrap_or_else(|| panic!("{} lost", t.kind));
        assert_eq!((&b.plural, b.namespaced, b.status_subresource), (&t.plural, t.namespaced, t.status_subresource), "{}", t.kind);
    }
}

#[test]
fn v3_group_versions_are_self_contained() {
    let types = types();
    let apps = v3_group_version(&types, "apps", "v1").unwrap();
    assert_eq!(apps["openapi"], "3.0.0");
    let schemas = apps["components"]["schemas"].as_object().unwrap();
    assert!(schemas.contains_key("io.k8s.api.apps.v1.Deployment"));
    assert!(schemas.contains_key("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"));
    assert!(schemas.contains_key("io.k8s.api.core.v1.PodSpec"));
    assert!(!schemas.contains_key("io.k8s.api.core.v1.ConfigMap"), "another group's kind leaked in");
    assert_eq!(
        schemas["io.k8s.api.apps.v1.Deployment"]["properties"]["spec"]["allOf"][0]["$ref"],
        "#/components/schemas/io.k8s.api.apps.v1.DeploymentSpec"
    );
    let list = &apps["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments"]["get"];
    assert_eq!(list["x-kubernetes-action"], "list");
    assert_eq!(
        list["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/io.k8s.api.apps.v1.DeploymentList"
    );
    assert_eq!(dangling_refs(&apps), Vec::<String>::new());
    let widgets = v3_group_version(&types, "example.com", "v1").unwrap();
    assert!(widgets["components"]["schemas"]["com.example.v1.Widget"]["properties"]["spec"].is_object());
    assert_eq!(dangling_refs(&widgets), Vec::<String>::new());
    let core = v3_group_version(&types, "", "v1").unwrap();
    assert!(core["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["patch"]["requestBody"].is_object());
    assert_eq!(dangling_refs(&core), Vec::<String>::new());
    assert!(v3_group_version(&types, "nothing.example.com", "v1").is_none());
}

#[test]
fn v3_index_names_every_group_version_with_its_hash() {
    let types = types();
    let index = v3_index(&types);
    let paths = index["paths"].as_object().unwrap();
    for key in ["api/v1", "apis/apps/v1", "apis/example.com/v1", "apis/rbac.authorization.k8s.io/v1"] {
        assert!(paths.contains_key(key), "{key} missing");
    }
    let doc = v3_group_version(&types, "apps", "v1").unwrap();
    let expected = format!("/openapi/v3/apis/apps/v1?hash={}", hash(&serde_json::to_vec(&doc).unwrap()));
    assert_eq!(paths["apis/apps/v1"]["serverRelativeURL"], expected);
    assert_eq!(hash(b"").len(), 128);
}

#[test]
fn either_gnostic_media_type_asks_for_protobuf() {
    assert!(wants_v2_protobuf("application/com.github.proto-openapi.spec.v2@v1.0+protobuf"));
    assert!(wants_v2_protobuf("application/json;q=0.9, application/com.github.proto-openapi.spec.v2.v1.0+protobuf"));
    assert!(!wants_v2_protobuf("application/json"));
}

#[test]
fn built_in_definitions_carry_the_descriptions_kube_apiserver_publishes() {
    // Compared with kube-apiserver 1.37.2's /openapi/v3/api/v1 and /apis/apps/v1: 2,268 of the
    // 2,269 descriptions are the same text (kube-apiserver appends Go enum values, which the
    // protos lack).
    let doc = v3_group_version(&types(), "", "v1").unwrap();
    let schemas = &doc["components"]["schemas"];
    let pod = &schemas["io.k8s.api.core.v1.Pod"];
    assert_eq!(
        pod["description"],
        "Pod is a collection of containers that can run on a host. This resource is created by clients and scheduled onto hosts."
    );
    // A member that is a reference: `allOf` with the description beside it (v3).
    assert_eq!(pod["properties"]["spec"]["allOf"], json!([{"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"}]));
    assert!(pod["properties"]["spec"]["description"].as_str().unwrap().starts_with("Specification of the desired behavior of the pod."));
    // TypeMeta's members, inlined, keep TypeMeta's descriptions.
    assert!(pod["properties"]["kind"]["description"]
        .as_str()
        .unwrap()
        .starts_with("Kind is a string value representing the REST resource"));
    // Paragraphs and indented lines as openapi-gen keeps them; markers left out.
    let fs_group = schemas["io.k8s.api.core.v1.PodSecurityContext"]["properties"]["fsGroup"]["description"].as_str().unwrap();
    assert!(fs_group.contains("owned by the pod:\n\n1. The owning GID") && !fs_group.contains("+optional"), "{fs_group}");
    // v2: `$ref` with the description as a sibling.
    let v2doc = v2(&types());
    let spec = &v2doc["definitions"]["io.k8s.api.core.v1.Pod"]["properties"]["spec"];
    assert_eq!(spec["$ref"], "#/definitions/io.k8s.api.core.v1.PodSpec");
    assert_eq!(spec["description"], pod["properties"]["spec"]["description"]);
}
