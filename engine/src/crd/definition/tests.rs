use super::*;

fn crd(schema: Value) -> Value {
    let mut c = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema}}]
        }
    });
    default(&mut c);
    c
}

fn spec_schema(spec: Value) -> Value {
    json!({"type": "object", "properties": {"spec": spec}})
}

fn problems(c: &Value) -> Vec<(String, String)> {
    check(c, None).into_iter().map(|e| (e.path, e.message)).collect()
}

#[test]
fn a_good_definition_passes_and_is_defaulted() {
    let c = crd(spec_schema(json!({"type": "object", "properties": {"replicas": {"type": "integer", "default": 1, "minimum": 0}}})));
    assert_eq!(problems(&c), vec![]);
    assert_eq!(c["spec"]["names"]["singular"], "widget");
    assert_eq!(c["spec"]["names"]["listKind"], "WidgetList");
    assert_eq!(c["spec"]["conversion"]["strategy"], "None");
}

#[test]
fn the_name_must_be_plural_dot_group() {
    let mut c = crd(spec_schema(json!({"type": "object"})));
    c["metadata"]["name"] = json!("wrong.example.com");
    assert_eq!(
        problems(&c),
        vec![("metadata.name".into(), "Invalid value: \"wrong.example.com\": must be spec.names.plural+\".\"+spec.group".into())]
    );
}

#[test]
fn names_group_scope_and_versions_are_checked() {
    let mut c = crd(spec_schema(json!({"type": "object"})));
    c["spec"]["group"] = json!("nodot");
    c["spec"]["scope"] = json!("Galaxy");
    c["spec"]["names"]["plural"] = json!("Widgets");
    c["spec"]["versions"][0]["storage"] = json!(false);
    c["metadata"]["name"] = json!("Widgets.nodot");
    let p = problems(&c);
    let paths: Vec<&str> = p.iter().map(|(p, _)| p.as_str()).collect();
    assert!(paths.contains(&"spec.group"), "{p:?}");
    assert!(paths.contains(&"spec.scope"), "{p:?}");
    assert!(paths.contains(&"spec.names.plural"), "{p:?}");
    assert!(
        p.iter().any(|(path, m)| path == "spec.versions" && m.ends_with("must have exactly one version marked as storage version")),
        "{p:?}"
    );
}

#[test]
fn non_structural_schemas_are_refused() {
    let p = problems(&crd(spec_schema(json!({"type": "object", "properties": {"x": {"description": "untyped"}}}))));
    assert_eq!(
        p,
        vec![(
            "spec.validation.openAPIV3Schema.properties[spec].properties[x].type".into(),
            "Required value: must not be empty for specified object fields".into()
        )]
    );
    let p = problems(&crd(spec_schema(
        json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}}),
    )));
    assert_eq!(
        p,
        vec![(
            "spec.validation.openAPIV3Schema.properties[spec].additionalProperties".into(),
            "Forbidden: additionalProperties and properties are mutual exclusive".into()
        )]
    );
    let p = problems(&crd(spec_schema(json!({"type": "string", "x-kubernetes-int-or-string": true}))));
    assert!(p.is_empty(), "an int-or-string may carry a type in v1? {p:?}");
    let p = problems(&crd(spec_schema(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": false}))));
    assert_eq!(
        p,
        vec![(
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-preserve-unknown-fields".into(),
            "Invalid value: false: must be true or undefined".into()
        )]
    );
    let p = problems(&crd(spec_schema(json!({"type": "array", "uniqueItems": true, "items": {"type": "string"}}))));
    assert_eq!(p[0].1, "Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic");
}

#[test]
fn defaults_must_validate_and_be_pruned() {
    let p = problems(&crd(spec_schema(
        json!({"type": "object", "properties": {"replicas": {"type": "integer", "minimum": 0, "default": -1}}}),
    )));
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].0, "spec.validation.openAPIV3Schema.properties[spec].properties[replicas].default");
    let p = problems(&crd(spec_schema(json!({"type": "object", "default": {"unknown": 1}, "properties": {"a": {"type": "string"}}}))));
    assert_eq!(
        p,
        vec![(
            "spec.validation.openAPIV3Schema.properties[spec].default".into(),
            "Invalid value: {\"unknown\":1}: must not have unknown fields".into()
        )]
    );
    let p = problems(&crd(json!({"type": "object", "properties": {"metadata": {"type": "object", "default": {"name": "x"}}}})));
    assert!(
        p.iter().any(|(path, m)| path.ends_with("properties[metadata].default") && m == "Forbidden: must not be set in top-level metadata"),
        "{p:?}"
    );
}

#[test]
fn list_types_subresources_and_columns_are_checked() {
    let mut c = crd(spec_schema(json!({"type": "object", "properties": {
        "l": {"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object", "properties": {"k": {"type": "string"}}}}
    }})));
    c["spec"]["versions"][0]["subresources"] =
        json!({"scale": {"specReplicasPath": ".status.replicas", "statusReplicasPath": "status.replicas"}});
    c["spec"]["versions"][0]["additionalPrinterColumns"] = json!([{"name": "R", "type": "float", "jsonPath": ".spec.r"}]);
    let p = problems(&c);
    let has = |path: &str| p.iter().any(|(x, _)| x == path);
    assert!(has("spec.validation.openAPIV3Schema.properties[spec].properties[l].x-kubernetes-list-map-keys"), "{p:?}");
    assert!(has("spec.subresources.scale.specReplicasPath"), "{p:?}");
    assert!(has("spec.subresources.scale.statusReplicasPath"), "{p:?}");
    assert!(has("spec.additionalPrinterColumns[0].type"), "{p:?}");
}

#[test]
fn cel_rule_shapes_are_checked() {
    let p = problems(&crd(spec_schema(json!({"type": "object", "x-kubernetes-validations": [{"rule": " ", "reason": "Nope"}]}))));
    assert!(
        p.iter().any(|(x, m)| x.ends_with("x-kubernetes-validations[0].rule") && m == "Required value: rule is not specified"),
        "{p:?}"
    );
    assert!(p.iter().any(|(x, _)| x.ends_with("x-kubernetes-validations[0].reason")), "{p:?}");
}

#[test]
fn group_and_plural_are_immutable() {
    let old = crd(spec_schema(json!({"type": "object"})));
    let mut new = old.clone();
    new["spec"]["names"]["plural"] = json!("gadgets");
    let p: Vec<_> = check(&new, Some(&old)).into_iter().map(|e| e.path).collect();
    assert_eq!(p, vec!["spec.names.plural"]);
}

#[test]
fn deep_schemas_are_refused() {
    // Request bodies are at most 128 levels deep (the JSON parser's limit): a schema of 100
    // nested objects is as deep as one can come.
    let mut v = json!({"type": "string"});
    for _ in 0..100 {
        v = json!({"type": "object", "properties": {"a": v}});
    }
    let p = problems(&crd(v));
    assert!(p.iter().any(|(_, m)| m.starts_with("Forbidden: must not be nested more than")), "{p:?}");
}
