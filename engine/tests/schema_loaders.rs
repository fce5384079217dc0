//! Schema loaders: OpenAPI v3 (CRD schemas, CRDs, `components.schemas`), OpenAPI v2
//! `definitions`, and the deduced schema, each mapped as Kubernetes' kube-openapi `schemaconv`
//! maps them; one test per mapping rule, then a CRD end to end.

use fieldstore_codec::fields_v1::to_json_string;
use fieldstore_engine::schema::{
    from_crd, from_openapi_v2, from_openapi_v3, from_openapi_v3_components, object_meta_schema, Atom, ElementRelationship, List, Map,
    Scalar, Schema, StructField, TypeRef, DEDUCED_TYPE, OBJECT_META_TYPE,
};
use fieldstore_engine::{typed, Error, ManagedFields, ManagerKey, Updater};
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------------
// Helpers

fn load_v3(schema: Value) -> (Schema, TypeRef) {
    let s = from_openapi_v3(&schema, "root").expect("schema loads");
    let root = s.named("root").expect("root type");
    (s, root)
}

fn atom<'s>(s: &'s Schema, tr: &'s TypeRef) -> &'s Atom {
    s.resolve(tr).expect("type resolves")
}

fn map<'s>(s: &'s Schema, tr: &'s TypeRef) -> &'s Map {
    atom(s, tr).map.as_ref().expect("a map type")
}

fn list<'s>(s: &'s Schema, tr: &'s TypeRef) -> &'s List {
    atom(s, tr).list.as_ref().expect("a list type")
}

fn field<'s>(s: &'s Schema, tr: &'s TypeRef, name: &str) -> &'s StructField {
    map(s, tr).find_field(name).unwrap_or_else(|| panic!("field {name}"))
}

/// The type of the field at `path` (field names) below `tr`.
fn at<'s>(s: &'s Schema, tr: &'s TypeRef, path: &[&str]) -> &'s TypeRef {
    path.iter().fold(tr, |cur, name| &field(s, cur, name).ty)
}

fn is_named(tr: &TypeRef, name: &str) -> bool {
    matches!(tr, TypeRef::Named(n, _) if n == name)
}

fn schema_error(r: Result<impl std::fmt::Debug, Error>) -> (String, String) {
    match r {
        Err(Error::Schema { path, reason }) => (path, reason),
        other => panic!("expected a schema error, got {other:?}"),
    }
}

fn fixture(name: &str) -> Value {
    let path = format!("{}/../tests/fixtures/conformance/smp_openapi/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    // The v2 fixture (copied from Kubernetes) has a trailing comma, which YAML accepts.
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn field_set(s: &Schema, tr: &TypeRef, v: &Value) -> String {
    to_json_string(&typed::to_field_set(s, tr, v).expect("field set"))
}

// ---------------------------------------------------------------------------------------------
// OpenAPI v3 rules

#[test]
fn object_properties_become_struct_fields() {
    let (s, root) = load_v3(json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}));
    let m = map(&s, &root);
    assert_eq!(m.fields.iter().map(|f| &*f.name).collect::<Vec<_>>(), ["a", "b"]);
    assert_eq!(m.relationship, ElementRelationship::Separable);
    // Declaring properties closes the object.
    assert!(m.element_type.is_empty());
    assert!(typed::validate(&s, &root, &json!({"a": "x", "c": 1})).is_err());
}

#[test]
fn additional_properties_become_element_type() {
    let (s, root) = load_v3(json!({"type": "object", "properties": {
        "m": {"type": "object", "additionalProperties": {"type": "integer"}},
        "open": {"type": "object", "additionalProperties": true},
        "closed": {"type": "object", "additionalProperties": false},
        "free": {"type": "object"}
    }}));
    let m = map(&s, at(&s, &root, &["m"]));
    assert!(m.fields.is_empty());
    assert_eq!(atom(&s, &m.element_type).scalar, Some(Scalar::Numeric));
    assert!(is_named(&map(&s, at(&s, &root, &["open"])).element_type, DEDUCED_TYPE));
    assert!(map(&s, at(&s, &root, &["closed"])).element_type.is_empty());
    // An object with neither properties nor additionalProperties is free-form.
    assert!(is_named(&map(&s, at(&s, &root, &["free"])).element_type, DEDUCED_TYPE));
}

#[test]
fn map_type_sets_map_relationship() {
    let (s, root) = load_v3(json!({"type": "object", "properties": {
        "atomic": {"type": "object", "x-kubernetes-map-type": "atomic", "additionalProperties": {"type": "string"}},
        "granular": {"type": "object", "x-kubernetes-map-type": "granular", "additionalProperties": {"type": "string"}},
        "plain": {"type": "object", "additionalProperties": {"type": "string"}}
    }}));
    assert_eq!(map(&s, at(&s, &root, &["atomic"])).relationship, ElementRelationship::Atomic);
    assert_eq!(map(&s, at(&s, &root, &["granular"])).relationship, ElementRelationship::Separable);
    assert_eq!(map(&s, at(&s, &root, &["plain"])).relationship, ElementRelationship::Separable);
    assert_eq!(field_set(&s, &root, &json!({"atomic": {"a": "1", "b": "2"}})), r#"{"f:atomic":{}}"#);
}

#[test]
fn preserve_unknown_fields_gives_deduced_elements_to_the_subtree() {
    let (s, root) = load_v3(json!({"type": "object", "properties": {
        "p": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {
            "known": {"type": "string"},
            "inner": {"type": "object", "properties": {"x": {"type": "string"}}}
        }},
        "untyped": {"x-kubernetes-preserve-unknown-fields": true},
        "closed": {"type": "object", "properties": {"x": {"type": "string"}}}
    }}));
    assert!(is_named(&map(&s, at(&s, &root, &["p"])).element_type, DEDUCED_TYPE));
    // Inherited by descendants, not by siblings.
    assert!(is_named(&map(&s, at(&s, &root, &["p", "inner"])).element_type, DEDUCED_TYPE));
    assert!(map(&s, at(&s, &root, &["closed"])).element_type.is_empty());
    // Without a type: anything, maps granular with deduced contents.
    let u = atom(&s, at(&s, &root, &["untyped"]));
    assert_eq!(u.scalar, Some(Scalar::Untyped));
    assert!(is_named(&u.map.as_ref().unwrap().element_type, DEDUCED_TYPE));
    assert_eq!(u.list.as_ref().unwrap().relationship, ElementRelationship::Atomic);
    let v = json!({"p": {"known": "k", "extra": {"a": 1, "l": [1, 2]}}, "untyped": {"b": {"c": true}}});
    typed::validate(&s, &root, &v).expect("valid");
    assert_eq!(
        field_set(&s, &root, &v),
        r#"{"f:p":{"f:extra":{".":{},"f:a":{},"f:l":{}},"f:known":{}},"f:untyped":{"f:b":{".":{},"f:c":{}}}}"#
    );
}

#[test]
fn array_items_become_list_elements() {
    let (s, root) = load_v3(json!({"type": "object", "properties": {
        "l": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "string"}}}}
    }}));
    let l = list(&s, at(&s, &root, &["l"]));
    assert!(map(&s, &l.element_type).find_field("n").is_some());
}

#[test]
fn list_type_atomic_set_and_map() {
    let (s, root) = load_v3(json!({"type": "object", "properties": {
        "atomic": {"type": "array", "x-kubernetes-list-type": "atomic", "items": {"type": "string"}},
        "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "map": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "port"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}}
    }}));
    let a = list(&s, at(&s, &root, &["atomic"]));
    assert_eq!((a.relationship, a.keys.len()), (ElementRelationship::Atomic, 0));
    let set = list(&s, at(&s, &root, &["set"]));
    assert_eq!((set.relationship, set.keys.len()), (ElementRelationship::Associative, 0));
    let m = list(&s, at(&s, &root, &["map"]));
    assert_eq!(m.relationship, ElementRelationship::Associative);
    assert_eq!(names(&m.keys), ["name", "port"]);
}

#[test]
fn absent_list_type_is_atomic() {
    let (s, root) = load_v3(json!({"type": "object", "properties": {"l": {"type": "array", "items": {"type": "string"}}}}));
    assert_eq!(list(&s, at(&s, &root, &["l"])).relationship, ElementRelationship::Atomic);
    assert_eq!(field_set(&s, &root, &json!({"l": ["a", "b"]})), r#"{"f:l":{}}"#);
}

#[test]
fn patch_strategy_merge_with_merge_key_is_a_map_list() {
    let (s, root) = load_v3(json!({"type": "object", "properties": {
        "l": {"type": "array", "x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "name",
              "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
        "retain": {"type": "array", "x-kubernetes-patch-strategy": "merge,retainKeys", "x-kubernetes-patch-merge-key": "name",
                   "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
        // The list type wins over the patch strategy.
        "typed": {"type": "array", "x-kubernetes-list-type": "atomic", "x-kubernetes-patch-strategy": "merge",
                  "x-kubernetes-patch-merge-key": "name", "items": {"type": "object", "properties": {"name": {"type": "string"}}}}
    }}));
    for name in ["l", "retain"] {
        let l = list(&s, at(&s, &root, &[name]));
        assert_eq!((l.relationship, l.keys.clone()), (ElementRelationship::Associative, vec!["name".into()]), "{name}");
    }
    assert_eq!(list(&s, at(&s, &root, &["typed"])).relationship, ElementRelationship::Atomic);
}

#[test]
fn patch_strategy_merge_on_scalar_list_is_a_set() {
    let (s, root) = load_v3(json!({"type": "object", "properties": {
        "l": {"type": "array", "x-kubernetes-patch-strategy": "merge", "items": {"type": "string"}},
        "retain": {"type": "array", "x-kubernetes-patch-strategy": "retainKeys", "items": {"type": "string"}}
    }}));
    let l = list(&s, at(&s, &root, &["l"]));
    assert_eq!((l.relationship, l.keys.len()), (ElementRelationship::Associative, 0));
    assert_eq!(field_set(&s, &root, &json!({"l": ["x", "y"]})), r#"{"f:l":{"v:\"x\"":{},"v:\"y\"":{}}}"#);
    assert_eq!(list(&s, at(&s, &root, &["retain"])).relationship, ElementRelationship::Atomic);
}

#[test]
fn scalars_map_to_scalar_kinds() {
    let (s, root) = load_v3(json!({"type": "object", "properties": {
        "s": {"type": "string"}, "b64": {"type": "string", "format": "byte"},
        "i": {"type": "integer", "format": "int64"}, "n": {"type": "number"}, "b": {"type": "boolean"},
        "t": {"type": "string", "format": "date-time"}
    }}));
    let kind = |name| atom(&s, at(&s, &root, &[name])).scalar;
    assert_eq!(kind("s"), Some(Scalar::String));
    assert_eq!(kind("b64"), Some(Scalar::String));
    assert_eq!(kind("i"), Some(Scalar::Numeric));
    assert_eq!(kind("n"), Some(Scalar::Numeric));
    assert_eq!(kind("b"), Some(Scalar::Boolean));
    // As in kube-openapi, string formats other than byte are untyped.
    assert_eq!(kind("t"), Some(Scalar::Untyped));
    assert!(typed::validate(&s, &root, &json!({"s": 1})).is_err());
}

#[test]
fn int_or_string_is_untyped() {
    let (s, root) = load_v3(json!({"type": "object", "properties": {
        "v": {"x-kubernetes-int-or-string": true},
        "v2": {"type": "string", "format": "int-or-string"}
    }}));
    for name in ["v", "v2"] {
        assert_eq!(atom(&s, at(&s, &root, &[name])).scalar, Some(Scalar::Untyped), "{name}");
    }
    for v in [json!(3), json!("50%")] {
        typed::validate(&s, &root, &json!({"v": v.clone(), "v2": v})).expect("int or string");
    }
    assert_eq!(field_set(&s, &root, &json!({"v": 3})), r#"{"f:v":{}}"#);
}

#[test]
fn embedded_resource_gets_type_meta_and_object_meta() {
    let (s, root) = load_v3(json!({"type": "object", "properties": {
        "template": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}
    }}));
    let t = at(&s, &root, &["template"]);
    assert_eq!(atom(&s, &field(&s, t, "apiVersion").ty).scalar, Some(Scalar::String));
    assert_eq!(atom(&s, &field(&s, t, "kind").ty).scalar, Some(Scalar::String));
    assert!(is_named(&field(&s, t, "metadata").ty, OBJECT_META_TYPE));
    assert!(is_named(&map(&s, t).element_type, DEDUCED_TYPE));
    let v = json!({"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"a": "b"}}, "spec": {"x": 1}}});
    typed::validate(&s, &root, &v).expect("valid");
    assert!(typed::validate(&s, &root, &json!({"template": {"metadata": {"bogus": 1}}})).is_err());
}

#[test]
fn patch_strategy_and_merge_key_are_recorded_on_fields() {
    let (s, root) = load_v3(json!({"type": "object", "properties": {
        "l": {"type": "array", "x-kubernetes-patch-strategy": "merge,retainKeys", "x-kubernetes-patch-merge-key": "name",
              "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
        "plain": {"type": "string"}
    }}));
    let l = field(&s, &root, "l");
    assert_eq!(l.patch_strategies, ["merge", "retainKeys"]);
    assert_eq!(l.patch_merge_key.as_deref(), Some("name"));
    let plain = field(&s, &root, "plain");
    assert!(plain.patch_strategies.is_empty() && plain.patch_merge_key.is_none());
}

#[test]
fn nested_inline_objects_become_inline_types() {
    let (s, root) = load_v3(json!({"type": "object", "properties": {
        "a": {"type": "object", "properties": {"b": {"type": "object", "properties": {"c": {"type": "string", "default": "d"}}}}}
    }}));
    let b = at(&s, &root, &["a", "b"]);
    assert!(matches!(b, TypeRef::Inline(_)));
    assert_eq!(field(&s, b, "c").default, Some(json!("d")));
    // The loaded schema holds the root plus only the common and built-in types.
    let names: Vec<&str> = s.types().iter().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&"root") && names.contains(&DEDUCED_TYPE) && names.contains(&OBJECT_META_TYPE));
    assert_eq!(names.len(), object_meta_schema().types().len() + 1);
}

#[test]
fn crd_root_metadata_is_object_meta() {
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "spec": {"group": "example.com", "names": {"kind": "Thing"}, "versions": [
            {"name": "v1", "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                // Whatever the CRD says of metadata, the real ObjectMeta is used.
                "metadata": {"type": "object", "properties": {"name": {"type": "integer"}}},
                "spec": {"type": "object", "properties": {"metadata": {"type": "object", "properties": {"x": {"type": "string"}}}}}
            }}}},
            {"name": "v2"}
        ]}
    });
    let versions = from_crd(&crd).expect("CRD loads");
    assert_eq!(
        versions.iter().map(|v| (v.0.as_str(), v.2.as_str())).collect::<Vec<_>>(),
        [("v1", "com.example.v1.Thing"), ("v2", "com.example.v2.Thing")]
    );
    let (_, s, name) = &versions[0];
    let root = s.named(name).unwrap();
    assert!(is_named(&field(s, &root, "metadata").ty, OBJECT_META_TYPE));
    assert_eq!(atom(s, &field(s, &root, "apiVersion").ty).scalar, Some(Scalar::String));
    assert_eq!(atom(s, &field(s, &root, "kind").ty).scalar, Some(Scalar::String));
    // Only the root's metadata is replaced.
    assert!(map(s, at(s, &root, &["spec", "metadata"])).find_field("x").is_some());

    let meta = s.named(OBJECT_META_TYPE).unwrap();
    for name in ["labels", "annotations"] {
        let m = map(s, &field(s, &meta, name).ty);
        assert_eq!(m.relationship, ElementRelationship::Separable, "{name}");
        assert_eq!(atom(s, &m.element_type).scalar, Some(Scalar::String));
    }
    let fin = list(s, &field(s, &meta, "finalizers").ty);
    assert_eq!((fin.relationship, fin.keys.len()), (ElementRelationship::Associative, 0));
    let owners = list(s, &field(s, &meta, "ownerReferences").ty);
    assert_eq!((owners.relationship, owners.keys.clone()), (ElementRelationship::Associative, vec!["uid".into()]));
    assert_eq!(map(s, &owners.element_type).relationship, ElementRelationship::Atomic);
    assert_eq!(list(s, &field(s, &meta, "managedFields").ty).relationship, ElementRelationship::Atomic);
    assert_eq!(atom(s, &field(s, &meta, "creationTimestamp").ty).scalar, Some(Scalar::Untyped));

    let obj = json!({"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {
        "name": "t", "labels": {"a": "1"}, "finalizers": ["x"],
        "ownerReferences": [{"apiVersion": "v1", "kind": "K", "name": "o", "uid": "u1", "controller": true}]}});
    typed::validate(s, &root, &obj).expect("valid");
    assert_eq!(
        field_set(s, &root, &obj),
        r#"{"f:apiVersion":{},"f:kind":{},"f:metadata":{"f:finalizers":{"v:\"x\"":{}},"f:labels":{"f:a":{}},"f:name":{},"f:ownerReferences":{"k:{\"uid\":\"u1\"}":{}}}}"#
    );
    // A version without a schema accepts any object.
    let (_, s2, name2) = &versions[1];
    typed::validate(s2, &s2.named(name2).unwrap(), &json!({"spec": {"anything": [1]}})).expect("free-form");
}

// ---------------------------------------------------------------------------------------------
// OpenAPI v2 definitions and v3 components

fn check_merge_item(s: &Schema) {
    let item = s.named("mergeItem").expect("mergeItem");
    let merging = list(s, &field(s, &item, "mergingList").ty);
    assert_eq!((merging.relationship, merging.keys.clone()), (ElementRelationship::Associative, vec!["name".into()]));
    assert!(is_named(&merging.element_type, "mergeItem"));
    let ints = list(s, &field(s, &item, "mergingIntList").ty);
    assert_eq!((ints.relationship, ints.keys.len()), (ElementRelationship::Associative, 0));
    assert_eq!(list(s, &field(s, &item, "nonMergingList").ty).relationship, ElementRelationship::Atomic);
    assert_eq!(list(s, &field(s, &item, "nonMergingIntList").ty).relationship, ElementRelationship::Atomic);
    let retain_list = list(s, &field(s, &item, "retainKeysMergingList").ty);
    assert_eq!(names(&retain_list.keys), ["name"]);

    let f = field(s, &item, "mergingList");
    assert_eq!((f.patch_strategies.clone(), f.patch_merge_key.clone()), (vec!["merge".to_string()], Some("name".to_string())));
    assert_eq!(field(s, &item, "retainKeysMap").patch_strategies, ["retainKeys"]);
    assert_eq!(field(s, &item, "retainKeysMergingList").patch_strategies, ["merge", "retainKeys"]);
    assert_eq!(field(s, &item, "replacingItem").patch_strategies, ["replace"]);
    assert_eq!(field(s, &item, "mergingIntList").patch_strategies, ["merge"]);
    let ptr = field(s, &item, "mergeItemPtr");
    assert!(is_named(&ptr.ty, "mergeItem"));
    assert_eq!(ptr.patch_merge_key.as_deref(), Some("name"));
    assert!(is_named(&field(s, &item, "retainKeysMap").ty, "retainKeysMergeItem"));
    assert_eq!(atom(s, &map(s, &field(s, &item, "simpleMap").ty).element_type).scalar, Some(Scalar::String));
    // A property without type or properties accepts anything.
    typed::validate(s, &item, &json!({"jsonItem": {"a": [1]}})).expect("free-form jsonItem");

    let v = json!({"name": "top", "mergingList": [{"name": "a", "value": "1"}, {"name": "b"}], "mergingIntList": [1, 2],
                   "nonMergingList": [{"name": "x"}], "retainKeysMap": {"name": "r"}});
    typed::validate(s, &item, &v).expect("valid");
    assert_eq!(
        field_set(s, &item, &v),
        r#"{"f:mergingIntList":{"v:1":{},"v:2":{}},"f:mergingList":{"k:{\"name\":\"a\"}":{".":{},"f:name":{},"f:value":{}},"k:{\"name\":\"b\"}":{".":{},"f:name":{}}},"f:name":{},"f:nonMergingList":{},"f:retainKeysMap":{"f:name":{}}}"#
    );
}

#[test]
fn v2_definitions_become_named_types() {
    let s = from_openapi_v2(&fixture("swagger-merge-item.json")).expect("v2 loads");
    check_merge_item(&s);
    // A reference to RawExtension is atomic and untyped in the v2 converter.
    let item = s.named("mergeItem").unwrap();
    assert!(is_named(&field(&s, &item, "replacingItem").ty, "__untyped_atomic_"));
}

#[test]
fn v3_components_become_named_types() {
    let s = from_openapi_v3_components(&fixture("swagger-merge-item-v3.json")).expect("v3 components load");
    check_merge_item(&s);
    // `allOf: [{$ref}]` is a reference.
    let item = s.named("mergeItem").unwrap();
    assert!(is_named(&field(&s, &item, "retainKeysMap").ty, "retainKeysMergeItem"));
}

#[test]
fn map_type_on_a_reference_overrides_the_referenced_map() {
    let doc = json!({"definitions": {
        "Outer": {"type": "object", "properties": {
            "atomicRef": {"$ref": "#/definitions/Inner", "x-kubernetes-map-type": "atomic"},
            "plainRef": {"$ref": "#/definitions/Inner"}
        }},
        "Inner": {"type": "object", "properties": {"a": {"type": "string"}}},
        "Alias": {"$ref": "#/definitions/Inner"}
    }});
    let s = from_openapi_v2(&doc).expect("loads");
    let outer = s.named("Outer").unwrap();
    assert_eq!(map(&s, &field(&s, &outer, "atomicRef").ty).relationship, ElementRelationship::Atomic);
    assert_eq!(map(&s, &field(&s, &outer, "plainRef").ty).relationship, ElementRelationship::Separable);
    assert!(map(&s, &s.named("Alias").unwrap()).find_field("a").is_some());
    assert_eq!(
        field_set(&s, &outer, &json!({"atomicRef": {"a": "x"}, "plainRef": {"a": "y"}})),
        r#"{"f:atomicRef":{},"f:plainRef":{"f:a":{}}}"#
    );
}

// ---------------------------------------------------------------------------------------------
// Deduced schema

#[test]
fn deduced_schema_has_granular_maps_and_atomic_lists() {
    let s = Schema::deduced();
    let root = s.named(DEDUCED_TYPE).unwrap();
    let updater = Updater::new(&s, &root);
    let (a, b) = (ManagerKey::apply("a"), ManagerKey::apply("b"));

    // Two appliers own different keys of one map.
    let live = json!({});
    let r1 = updater.apply(&live, &json!({"m": {"x": 1}}), "v1", ManagedFields::new(), &a, false).expect("a applies");
    let o1 = r1.object.unwrap_or(live);
    let r2 = updater.apply(&o1, &json!({"m": {"y": 2}}), "v1", r1.managers, &b, false).expect("b applies, no conflict");
    let o2 = r2.object.unwrap_or(o1);
    assert_eq!(o2, json!({"m": {"x": 1, "y": 2}}));
    // Undeclared keys are members themselves, so both own `m` too, as structured-merge-diff does.
    assert_eq!(to_json_string(&r2.managers[&a].set), r#"{"f:m":{".":{},"f:x":{}}}"#);
    assert_eq!(to_json_string(&r2.managers[&b].set), r#"{"f:m":{".":{},"f:y":{}}}"#);

    // A list is one leaf owned whole: another applier's different list conflicts.
    let r3 = updater.apply(&o2, &json!({"l": [1, 2]}), "v1", r2.managers, &a, false).expect("a applies a list");
    let o3 = r3.object.unwrap_or(o2);
    assert_eq!(to_json_string(&r3.managers[&a].set), r#"{"f:l":{}}"#);
    let conflict = updater.apply(&o3, &json!({"l": [3]}), "v1", r3.managers.clone(), &b, false);
    assert!(matches!(conflict, Err(Error::Conflict(_))));
    let forced = updater.apply(&o3, &json!({"l": [3]}), "v1", r3.managers, &b, true).expect("forced");
    assert_eq!(forced.object.expect("changed")["l"], json!([3]));
}

// ---------------------------------------------------------------------------------------------
// Validation of the documents

#[test]
fn malformed_documents_are_errors_naming_the_path() {
    let crd = |schema: Value| {
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
               "spec": {"group": "example.com", "names": {"kind": "W"}, "versions": [{"name": "v1", "schema": {"openAPIV3Schema": schema}}]}})
    };
    let root = "spec.versions[0].schema.openAPIV3Schema";
    let cases = [
        (
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"items": {"type": "array"}}}}}),
            format!("{root}.properties.spec.properties.items"),
        ),
        (json!({"type": "object", "properties": {"a": {"type": "strng"}}}), format!("{root}.properties.a.type")),
        (json!({"type": "object", "properties": {"a": 5}}), format!("{root}.properties.a")),
        (json!({"type": "object", "properties": []}), format!("{root}.properties")),
        (json!({"type": 7}), format!("{root}.type")),
        (json!({"type": "array", "items": [{"type": "string"}]}), format!("{root}.items")),
        (json!({"type": "array", "x-kubernetes-list-type": "bag", "items": {"type": "string"}}), format!("{root}.x-kubernetes-list-type")),
        (
            json!({"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object"}}),
            format!("{root}.x-kubernetes-list-map-keys"),
        ),
        (
            json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": [1], "items": {"type": "object"}}),
            format!("{root}.x-kubernetes-list-map-keys"),
        ),
        (
            json!({"type": "array", "x-kubernetes-patch-strategy": "replace", "items": {"type": "string"}}),
            format!("{root}.x-kubernetes-patch-strategy"),
        ),
        (json!({"type": "object", "x-kubernetes-map-type": "partial"}), format!("{root}.x-kubernetes-map-type")),
        (json!({"type": "object", "additionalProperties": "object"}), format!("{root}.additionalProperties")),
        (json!({"type": "object", "x-kubernetes-preserve-unknown-fields": "yes"}), format!("{root}.x-kubernetes-preserve-unknown-fields")),
        (
            json!({"type": "object", "properties": {"a": {"type": "string", "x-kubernetes-patch-strategy": 1}}}),
            format!("{root}.properties.a.x-kubernetes-patch-strategy"),
        ),
    ];
    for (schema, want) in cases {
        let (path, reason) = schema_error(from_crd(&crd(schema.clone())));
        assert_eq!(path, want, "{schema}: {reason}");
        assert!(!reason.is_empty());
    }
    // The CRD itself.
    let (path, _) = schema_error(from_crd(&json!({"spec": {"names": {"kind": "W"}, "versions": [{"name": "v1"}]}})));
    assert_eq!(path, "spec.group");
    let (path, _) = schema_error(from_crd(&json!({"spec": {"group": "g.io", "names": {"kind": "W"}, "versions": []}})));
    assert_eq!(path, "spec.versions");
    let (path, _) = schema_error(from_crd(&json!({"spec": {"group": "g.io", "names": {"kind": "W"}, "versions": [{}]}})));
    assert_eq!(path, "spec.versions[0].name");
    let (path, _) = schema_error(from_crd(&json!({"apiVersion": "apiextensions.k8s.io/v1beta1", "spec": {}})));
    assert_eq!(path, "apiVersion");
    let (path, _) = schema_error(from_openapi_v2(&json!({"definitions": {"A": "string"}})));
    assert_eq!(path, "definitions[A]");
    let (path, _) = schema_error(from_openapi_v3_components(&json!({"components": {"schemas": []}})));
    assert_eq!(path, "components.schemas");
}

#[test]
fn unknown_ref_targets_are_errors_at_load_time() {
    let (path, reason) = schema_error(from_openapi_v2(&json!({"definitions": {
        "A": {"type": "object", "properties": {"b": {"$ref": "#/definitions/Missing"}}}
    }})));
    assert_eq!(path, "definitions[A].properties.b.$ref");
    assert!(reason.contains("Missing"), "{reason}");
    let (path, _) = schema_error(from_openapi_v3_components(&json!({"components": {"schemas": {
        "A": {"type": "object", "properties": {"b": {"allOf": [{"$ref": "#/components/schemas/Missing"}]}}}
    }}})));
    assert_eq!(path, "components.schemas[A].properties.b.allOf[0].$ref");
    // A v3 reference in a v2 document is not understood.
    let (path, _) = schema_error(from_openapi_v2(&json!({"definitions": {
        "A": {"type": "array", "items": {"$ref": "#/components/schemas/A"}}
    }})));
    assert_eq!(path, "definitions[A].items.$ref");
    // Aliases must lead somewhere.
    let (path, _) = schema_error(from_openapi_v2(&json!({"definitions": {
        "A": {"$ref": "#/definitions/B"}, "B": {"$ref": "#/definitions/A"}
    }})));
    assert!(path.starts_with("definitions["), "{path}");
    // The built-in types may be referred to without being defined.
    let s = from_openapi_v2(&json!({"definitions": {
        "A": {"type": "object", "properties": {"metadata": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}}}
    }}))
    .expect("built-in ObjectMeta");
    assert!(is_named(&field(&s, &s.named("A").unwrap(), "metadata").ty, OBJECT_META_TYPE));
}

mod no_panics {
    use super::*;
    use proptest::prelude::*;

    /// Arbitrary JSON biased towards schema vocabulary.
    fn json_value() -> impl Strategy<Value = Value> {
        let word = prop_oneof![
            Just("type"),
            Just("object"),
            Just("array"),
            Just("string"),
            Just("properties"),
            Just("items"),
            Just("additionalProperties"),
            Just("$ref"),
            Just("allOf"),
            Just("x-kubernetes-list-type"),
            Just("x-kubernetes-list-map-keys"),
            Just("x-kubernetes-map-type"),
            Just("x-kubernetes-patch-strategy"),
            Just("x-kubernetes-preserve-unknown-fields"),
            Just("x-kubernetes-embedded-resource"),
            Just("map"),
            Just("set"),
            Just("merge"),
            Just("#/definitions/A"),
            Just("#/components/schemas/A"),
            Just("A"),
            Just("definitions"),
            Just("spec"),
            Just("versions"),
            Just("schema"),
            Just("openAPIV3Schema"),
            Just("group"),
            Just("name"),
        ]
        .prop_map(str::to_string);
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(Value::from),
            word.clone().prop_map(Value::String),
        ];
        leaf.prop_recursive(6, 64, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map(word.clone(), inner, 0..5).prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn loaders_never_panic(v in json_value()) {
            let _ = from_openapi_v3(&v, "root");
            let _ = from_openapi_v2(&json!({"definitions": {"A": v.clone()}}));
            let _ = from_openapi_v3_components(&json!({"components": {"schemas": {"A": v.clone()}}}));
            let _ = from_crd(&json!({"spec": {"group": "g.io", "names": {"kind": "K"},
                                              "versions": [{"name": "v1", "schema": {"openAPIV3Schema": v}}]}}));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// A CRD end to end

const WIDGET_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name, protocol]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    protocol: {type: string, default: TCP}
                    port: {type: integer}
              tags:
                type: array
                x-kubernetes-list-type: set
                items: {type: string}
              selector:
                type: object
                x-kubernetes-map-type: atomic
                additionalProperties: {type: string}
              config:
                type: object
                x-kubernetes-preserve-unknown-fields: true
              replicas:
                x-kubernetes-int-or-string: true
              args:
                type: array
                items: {type: string}
          status:
            type: object
            properties:
              phase: {type: string}
"#;

#[test]
fn widget_crd_yaml_to_field_set_and_validation() {
    let crd: Value = serde_yaml::from_str(WIDGET_CRD).expect("YAML");
    let versions = from_crd(&crd).expect("CRD loads");
    let (version, s, root_name) = &versions[0];
    assert_eq!((version.as_str(), root_name.as_str()), ("v1", "com.example.v1.Widget"));
    let root = s.named(root_name).unwrap();

    let obj = json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default", "labels": {"app": "x"}, "finalizers": ["f1"]},
        "spec": {
            "ports": [{"name": "http", "port": 80}, {"name": "dns", "protocol": "UDP", "port": 53}],
            "tags": ["a", "b"],
            "selector": {"k": "v", "k2": "v2"},
            "config": {"deep": {"x": 1}, "list": [1, 2], "s": "t"},
            "replicas": "50%",
            "args": ["x", "y"]
        }
    });
    typed::validate(s, &root, &obj).expect("valid Widget");
    assert_eq!(
        field_set(s, &root, &obj),
        concat!(
            r#"{"f:apiVersion":{},"f:kind":{},"#,
            r#""f:metadata":{"f:finalizers":{"v:\"f1\"":{}},"f:labels":{"f:app":{}},"f:name":{},"f:namespace":{}},"#,
            r#""f:spec":{"f:args":{},"f:config":{"f:deep":{".":{},"f:x":{}},"f:list":{},"f:s":{}},"#,
            r#""f:ports":{"k:{\"name\":\"dns\",\"protocol\":\"UDP\"}":{".":{},"f:name":{},"f:port":{},"f:protocol":{}},"#,
            r#""k:{\"name\":\"http\",\"protocol\":\"TCP\"}":{".":{},"f:name":{},"f:port":{}}},"#,
            r#""f:replicas":{},"f:selector":{},"f:tags":{"v:\"a\"":{},"v:\"b\"":{}}}}"#
        )
    );
    // int-or-string takes an integer too.
    typed::validate(s, &root, &json!({"spec": {"replicas": 3}})).expect("int");

    // A duplicate key in the map list (the defaulted protocol included) is rejected at its path.
    let dup = json!({"spec": {"ports": [{"name": "http", "port": 80}, {"name": "http", "protocol": "TCP", "port": 81}]}});
    let errs = typed::validate(s, &root, &dup).expect_err("duplicate key");
    let e = errs.0.iter().find(|e| e.message.contains("duplicate")).unwrap_or_else(|| panic!("{errs}"));
    assert_eq!(e.path, ".spec.ports");
    assert!(e.message.contains(r#"name="http""#) && e.message.contains(r#"protocol="TCP""#), "{e}");
    // Undeclared fields outside preserve-unknown-fields subtrees are rejected.
    assert!(typed::validate(s, &root, &json!({"spec": {"bogus": 1}})).is_err());
    assert!(typed::validate(s, &root, &json!({"status": {"phase": "Ready", "extra": 1}})).is_err());
}

/// Key names as plain strings, for comparing with literals.
fn names(keys: &[fieldstore_codec::fieldpath::Name]) -> Vec<&str> {
    keys.iter().map(|k| &**k).collect()
}
