use super::*;
use serde_json::json;

fn schema() -> Structural {
    Structural::read(&json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["image"],
                "properties": {
                    "replicas": {"type": "integer", "minimum": 0, "maximum": 10},
                    "ratio": {"type": "number", "exclusiveMinimum": true, "minimum": 0, "multipleOf": 0.5},
                    "image": {"type": "string", "maxLength": 8, "minLength": 2, "pattern": "^[a-z]+$"},
                    "mode": {"type": "string", "enum": ["fast", "slow"]},
                    "id": {"type": "string", "format": "uuid"},
                    "tags": {"type": "array", "maxItems": 2, "minItems": 1, "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                    "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                              "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}},
                    "labels": {"type": "object", "maxProperties": 1, "additionalProperties": {"type": "string"}},
                    "port": {"x-kubernetes-int-or-string": true},
                    "note": {"type": "string", "nullable": true},
                    "template": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
                    "either": {"type": "string", "anyOf": [{"pattern": "^a"}, {"pattern": "^b"}]}
                }
            }
        }
    }))
}

fn errors(object: Value) -> Vec<(String, String)> {
    validate(&schema(), &object, None).into_iter().map(|e| (e.path, e.message)).collect()
}

fn one(spec: Value) -> (String, String) {
    let mut spec = spec;
    if spec.get("image").is_none() {
        spec["image"] = json!("app");
    }
    let errs = errors(json!({"apiVersion": "x/v1", "kind": "W", "metadata": {"name": "a"}, "spec": spec}));
    assert_eq!(errs.len(), 1, "{errs:?}");
    errs.into_iter().next().unwrap_or_default()
}

#[test]
fn a_valid_object_has_no_errors() {
    let errs = errors(json!({"metadata": {"name": "a"}, "spec": {
        "replicas": 3, "ratio": 1.5, "image": "app", "mode": "fast", "id": "123e4567-e89b-12d3-a456-426614174000",
        "tags": ["a"], "ports": [{"name": "http", "port": 80}], "labels": {"a": "b"}, "port": "http", "note": null,
        "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {}}, "either": "bee"
    }}));
    assert!(errs.is_empty(), "{errs:?}");
}

#[test]
fn numbers_are_checked_with_kube_openapi_messages() {
    assert_eq!(
        one(json!({"replicas": -1})),
        ("spec.replicas".into(), "Invalid value: -1: spec.replicas in body should be greater than or equal to 0".into())
    );
    assert_eq!(
        one(json!({"replicas": 11})),
        ("spec.replicas".into(), "Invalid value: 11: spec.replicas in body should be less than or equal to 10".into())
    );
    assert_eq!(one(json!({"ratio": 0})).1, "Invalid value: 0: spec.ratio in body should be greater than 0");
    assert_eq!(one(json!({"ratio": 0.7})).1, "Invalid value: 0.7: spec.ratio in body should be a multiple of 0.5");
    assert_eq!(
        errors(json!({"spec": {"image": "app", "replicas": 1.5}})),
        vec![
            ("spec.replicas".into(), "Invalid value: \"number\": spec.replicas in body must be of type integer: \"number\"".into()),
            ("<nil>".into(), "Invalid value: \"\": Checked value must be of type integer (default format) in spec.replicas".into()),
        ]
    );
    assert!(errors(json!({"spec": {"image": "app", "replicas": 2.0}})).is_empty(), "a whole float is an integer");
}

#[test]
fn strings_are_checked() {
    assert_eq!(one(json!({"image": "abcdefghij"})).1, "Too long: may not be more than 8 bytes");
    assert_eq!(one(json!({"image": "a"})).1, "Invalid value: \"a\": spec.image in body should be at least 2 chars long");
    assert_eq!(one(json!({"image": "AB"})).1, "Invalid value: \"AB\": spec.image in body should match '^[a-z]+$'");
    assert_eq!(one(json!({"mode": "warp"})).1, "Unsupported value: \"warp\": supported values: \"fast\", \"slow\"");
    assert_eq!(one(json!({"id": "nope"})).1, "Invalid value: \"nope\": spec.id in body must be of type uuid: \"nope\"");
    assert_eq!(one(json!({"image": 5})).1, "Invalid value: \"integer\": spec.image in body must be of type string: \"integer\"");
}

#[test]
fn arrays_are_checked_with_list_type_uniqueness() {
    assert_eq!(one(json!({"tags": ["a", "b", "c"]})).1, "Too many: 3: must have at most 2 items");
    assert_eq!(one(json!({"tags": []})).1, "Invalid value: 0: spec.tags in body should have at least 1 items");
    assert_eq!(one(json!({"tags": ["a", "a"]})), ("spec.tags[1]".into(), "Duplicate value: \"a\"".into()));
    assert_eq!(
        one(json!({"ports": [{"name": "a"}, {"name": "a", "port": 1}]})),
        ("spec.ports[1]".into(), "Duplicate value: {\"name\":\"a\"}".into())
    );
    assert_eq!(one(json!({"ports": [{"port": 1}]})), ("spec.ports[0].name".into(), "Required value".into()));
}

#[test]
fn objects_are_checked() {
    assert_eq!(errors(json!({"spec": {}})), vec![("spec.image".into(), "Required value".into())]);
    assert_eq!(one(json!({"labels": {"a": "1", "b": "2"}})).1, "Too many: 2: must have at most 1 item");
    assert_eq!(one(json!({"labels": {"a": 1}})).0, "spec.labels.a");
    assert_eq!(one(json!({"template": {"kind": "Pod"}})), ("spec.template.apiVersion".into(), "Required value".into()));
}

#[test]
fn nullable_int_or_string_and_composition() {
    assert_eq!(one(json!({"port": true})).1, "Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\"");
    assert!(errors(json!({"spec": {"image": "app", "port": 8080}})).is_empty());
    assert_eq!(one(json!({"replicas": null})).1, "Invalid value: \"null\": spec.replicas in body must be of type integer: \"null\"");
    assert_eq!(one(json!({"either": "cat"})).1, "Invalid value: \"\": \"spec.either\" must validate at least one schema (anyOf)");
}

#[test]
fn unchanged_invalid_values_ratchet_on_update() {
    let old = json!({"spec": {"image": "app", "replicas": 20, "tags": ["a", "b", "c"]}});
    // The same invalid values again: accepted.
    let same = json!({"spec": {"image": "app", "replicas": 20, "tags": ["a", "b", "c"], "mode": "fast"}});
    assert!(validate(&schema(), &same, Some(&old)).is_empty());
    // Changing one of them: refused.
    let changed = json!({"spec": {"image": "app", "replicas": 21, "tags": ["a", "b", "c"]}});
    let errs = validate(&schema(), &changed, Some(&old));
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].path, "spec.replicas");
}

#[test]
fn go_prints_floats_as_kube_apiserver_does() {
    assert_eq!(go_float(10.0), "10");
    assert_eq!(go_float(0.5), "0.5");
    assert_eq!(go_float(1e21), "1e+21");
    assert_eq!(go_float(0.00001), "1e-05");
}
