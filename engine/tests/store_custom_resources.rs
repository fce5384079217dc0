//! Custom resources as kube-apiserver serves them, through the engine (every door gets the
//! same): an invalid CustomResourceDefinition is refused with one cause per problem; objects
//! are defaulted on create, update and apply, validated by the OpenAPI keywords of their
//! schema, ratcheted on update, and defaulted when read after a default was added.
// Needs the RocksDB-backed store (the engine's `store` feature).
#![cfg(feature = "store")]
#![allow(clippy::unwrap_used)]

use fieldstore_engine::patch::PatchType;
use fieldstore_engine::store::{Collection, FieldValidation, GetOptions, ListOptions, ObjectKey, Options, WriteOptions};
use fieldstore_engine::Error;
use serde_json::{json, Value};

mod support;
use support::TestStore;

const CRDS: &str = "customresourcedefinitions.apiextensions.k8s.io";

fn crd(spec_schema: Value) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced", "names": {"kind": "Widget", "plural": "widgets"},
          "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
              "spec": spec_schema,
              "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}}}}}]}})
}

fn schema() -> Value {
    json!({"type": "object", "default": {}, "properties": {
        "replicas": {"type": "integer", "minimum": 0, "maximum": 10, "default": 1},
        "mode": {"type": "string", "enum": ["fast", "slow"], "default": "fast"},
        "image": {"type": "string", "maxLength": 16},
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
          "items": {"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string"}, "protocol": {"type": "string", "default": "TCP"}}}}}})
}

fn w() -> WriteOptions {
    WriteOptions::new("test")
}

fn widgets() -> Collection {
    Collection::new("widgets.example.com", Some("default"))
}

fn store_with(schema: Value) -> TestStore {
    let store = TestStore::new(Options::default());
    store.create(&Collection::new(CRDS, None), &crd(schema), &w()).unwrap();
    store
}

fn widget(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec})
}

fn causes(e: Error) -> Vec<(String, String)> {
    match e {
        Error::Invalid(errs) => errs.0.into_iter().map(|e| (e.path, e.message)).collect(),
        other => panic!("not Invalid: {other:?}"),
    }
}

#[test]
fn an_invalid_definition_is_refused_with_every_problem() {
    let store = TestStore::new(Options::default());
    let mut bad = crd(json!({"type": "object", "properties": {"x": {"description": "no type"}}}));
    bad["metadata"]["name"] = json!("wrong.example.com");
    bad["spec"]["scope"] = json!("Everywhere");
    let e = store.create(&Collection::new(CRDS, None), &bad, &w()).unwrap_err();
    let got = causes(e);
    let paths: Vec<&str> = got.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(paths, ["metadata.name", "spec.scope", "spec.validation.openAPIV3Schema.properties[spec].properties[x].type"], "{got:?}");
    assert!(store.get(&ObjectKey::new(CRDS, None, "wrong.example.com"), &GetOptions::default()).is_err());
}

#[test]
fn a_definition_is_defaulted_and_tracks_its_stored_versions() {
    let store = store_with(schema());
    let c = store.get(&ObjectKey::new(CRDS, None, "widgets.example.com"), &GetOptions::default()).unwrap();
    assert_eq!(c["spec"]["names"]["singular"], "widget");
    assert_eq!(c["spec"]["names"]["listKind"], "WidgetList");
    assert_eq!(c["spec"]["conversion"], json!({"strategy": "None"}));
    assert_eq!(c["status"]["storedVersions"], json!(["v1"]));
}

#[test]
fn a_definition_is_answered_empty_then_established_by_its_controllers() {
    let store = TestStore::new(Options::default());
    let created = store.create(&Collection::new(CRDS, None), &crd(schema()), &w()).unwrap();
    // kube-apiserver's answer: the Go zero value of the status, and the storage version.
    assert_eq!(created["status"], json!({"conditions": null, "acceptedNames": {"plural": "", "kind": ""}, "storedVersions": ["v1"]}));
    // The writer owns what it wrote; `names` (a struct Go always has) gets no "." entry, the
    // defaulted `conversion` (a pointer) does.
    let entries = created["metadata"]["managedFields"].as_array().unwrap();
    assert_eq!(entries.len(), 1);
    let spec = &entries[0]["fieldsV1"]["f:spec"];
    assert!(spec["f:names"].get(".").is_none(), "{spec}");
    assert!(spec["f:names"].get("f:listKind").is_some(), "{spec}");
    assert!(spec["f:conversion"].get(".").is_some(), "{spec}");
    // Then the controllers' write: names accepted, established, as manager kube-apiserver.
    let c = store.get(&ObjectKey::new(CRDS, None, "widgets.example.com"), &GetOptions::default()).unwrap();
    assert_eq!(
        c["status"]["acceptedNames"],
        json!({"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"})
    );
    let types: Vec<(&str, &str)> = c["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["type"].as_str().unwrap(), c["status"].as_str().unwrap()))
        .collect();
    assert_eq!(types, [("NamesAccepted", "True"), ("Established", "True")]);
    let entries = c["metadata"]["managedFields"].as_array().unwrap();
    let mut managers: Vec<(&str, &str)> =
        entries.iter().map(|e| (e["manager"].as_str().unwrap(), e["subresource"].as_str().unwrap_or(""))).collect();
    // Entries are ordered by time (seconds) before names: the two writes may straddle a second.
    managers.sort_unstable();
    assert_eq!(managers, [("kube-apiserver", "status"), ("test", "")]);
    let status_entry = entries.iter().find(|e| e["manager"] == "kube-apiserver").unwrap();
    let owned = &status_entry["fieldsV1"]["f:status"];
    assert!(owned["f:conditions"].get(".").is_none() && owned["f:conditions"].get("k:{\"type\":\"Established\"}").is_some(), "{owned}");
    // An update keeps the status; the controllers follow a change of names.
    let mut changed = c.clone();
    changed["spec"]["names"]["shortNames"] = json!(["wd"]);
    let updated = store.update(&Collection::new(CRDS, None), &changed, &w()).unwrap();
    assert_eq!(updated["status"]["acceptedNames"].get("shortNames"), None);
    let c = store.get(&ObjectKey::new(CRDS, None, "widgets.example.com"), &GetOptions::default()).unwrap();
    assert_eq!(c["status"]["acceptedNames"]["shortNames"], json!(["wd"]));
}

#[test]
fn objects_are_defaulted_on_create_and_the_defaults_are_owned_by_the_writer() {
    let store = store_with(schema());
    let out = store.create(&widgets(), &widget("a", json!({"ports": [{"name": "http"}]})), &w()).unwrap();
    assert_eq!(out["spec"], json!({"replicas": 1, "mode": "fast", "ports": [{"name": "http", "protocol": "TCP"}]}));
    let owned = &out["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"];
    assert!(owned.get("f:replicas").is_some() && owned.get("f:mode").is_some(), "{owned}");
    // No spec at all: the spec's own default, then its fields'.
    let out =
        store.create(&widgets(), &json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "b"}}), &w()).unwrap();
    assert_eq!(out["spec"], json!({"replicas": 1, "mode": "fast"}));
}

#[test]
fn objects_are_defaulted_on_update_and_apply() {
    let store = store_with(schema());
    let out = store.create(&widgets(), &widget("a", json!({"replicas": 3})), &w()).unwrap();
    let mut changed = out.clone();
    changed["spec"] = json!({"image": "x"});
    let out = store.update(&widgets(), &changed, &w()).unwrap();
    assert_eq!(out["spec"], json!({"replicas": 1, "mode": "fast", "image": "x"}));
    let applied = store.apply(&widgets(), &widget("c", json!({"image": "y"})), &WriteOptions::new("applier")).unwrap();
    assert_eq!(applied["spec"], json!({"replicas": 1, "mode": "fast", "image": "y"}));
}

#[test]
fn a_patch_retried_without_its_undeclared_fields_keeps_the_managers() {
    let store = store_with(schema());
    store.create(&widgets(), &widget("a", json!({"replicas": 3})), &w()).unwrap();
    let key = ObjectKey::new("widgets.example.com", Some("default"), "a");
    let before = store.get(&key, &GetOptions::default()).unwrap();
    // The patch fails the first merge (an undeclared field), is merged again without it and
    // then changes nothing: the object, managedFields included, is the one read.
    let warn = WriteOptions::new("patcher").field_validation(Some(FieldValidation::Warn));
    let written = store.patch_written(&key, PatchType::Merge, &json!({"spec": {"zz": 1}}), &warn).unwrap();
    assert_eq!(written.warnings, vec!["unknown field \"spec.zz\"".to_string()]);
    assert_eq!(written.object["metadata"]["managedFields"], before["metadata"]["managedFields"]);
    assert_eq!(written.object["metadata"]["resourceVersion"], before["metadata"]["resourceVersion"]);
    // With a change beside it: the patcher's field joins the creator's.
    let written = store.patch_written(&key, PatchType::Merge, &json!({"spec": {"zz": 1, "image": "x"}}), &warn).unwrap();
    let entries = written.object["metadata"]["managedFields"].as_array().unwrap();
    let owned = |manager: &str| entries.iter().find(|e| e["manager"] == manager).map(|e| e["fieldsV1"]["f:spec"].clone());
    assert_eq!(entries.len(), 2);
    assert!(owned("test").unwrap().get("f:replicas").is_some());
    assert!(owned("patcher").unwrap().get("f:image").is_some());
}

#[test]
fn keywords_are_enforced_with_kube_apiserver_causes() {
    let store = store_with(schema());
    let e = store
        .create(&widgets(), &widget("a", json!({"replicas": 11, "mode": "warp", "image": "x".repeat(17), "ports": [{}]})), &w())
        .unwrap_err();
    assert_eq!(
        causes(e),
        vec![
            ("spec.image".into(), "Too long: may not be more than 16 bytes".into()),
            ("spec.mode".into(), "Unsupported value: \"warp\": supported values: \"fast\", \"slow\"".into()),
            ("spec.ports[0].name".into(), "Required value".into()),
            ("spec.replicas".into(), "Invalid value: 11: spec.replicas in body should be less than or equal to 10".into()),
        ]
    );
    // Apply and merge patch are checked as well.
    let e = store.apply(&widgets(), &widget("p", json!({"replicas": -1})), &WriteOptions::new("applier")).unwrap_err();
    assert_eq!(causes(e)[0].0, "spec.replicas");
    assert!(store.list(&widgets(), &ListOptions::default()).unwrap().items.is_empty(), "nothing was written");
}

#[test]
fn unchanged_invalid_values_ratchet_after_the_schema_tightens() {
    let store = store_with(schema());
    store.create(&widgets(), &widget("a", json!({"replicas": 8, "image": "abcdefgh"})), &w()).unwrap();
    // Tighten: at most 5 replicas, images of at most 4 characters.
    let key = ObjectKey::new(CRDS, None, "widgets.example.com");
    let mut c = store.get(&key, &GetOptions::default()).unwrap();
    c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["replicas"]["maximum"] = json!(5);
    c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["image"]["maxLength"] = json!(4);
    store.update(&Collection::new(CRDS, None), &c, &w()).unwrap();
    let live = store.get(&ObjectKey::new("widgets.example.com", Some("default"), "a"), &GetOptions::default()).unwrap();
    // Another field changes: the invalid ones are left alone, and pass.
    let mut next = live.clone();
    next["spec"]["mode"] = json!("slow");
    let next = store.update(&widgets(), &next, &w()).unwrap();
    // Changing an invalid value to another invalid one is refused.
    let mut bad = next.clone();
    bad["spec"]["replicas"] = json!(7);
    let got = causes(store.update(&widgets(), &bad, &w()).unwrap_err());
    assert_eq!(got, vec![("spec.replicas".into(), "Invalid value: 7: spec.replicas in body should be less than or equal to 5".into())]);
    // A CEL rule added since: an unchanged value that fails it passes with a warning (as
    // kube-apiserver 1.37 warns); a changed one is refused.
    let mut c = store.get(&key, &GetOptions::default()).unwrap();
    c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["image"]["x-kubernetes-validations"] =
        json!([{"rule": "self == self.lowerAscii()", "message": "lower case only"}]);
    c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["image"]["maxLength"] = json!(16);
    store.update(&Collection::new(CRDS, None), &c, &w()).unwrap();
    store
        .patch(&ObjectKey::new("widgets.example.com", Some("default"), "a"), PatchType::Merge, &json!({"spec": {"image": "UPPER"}}), &w())
        .unwrap_err();
    let key_a = ObjectKey::new("widgets.example.com", Some("default"), "a");
    let mut upper = store.get(&key_a, &GetOptions::default()).unwrap();
    assert_eq!(upper["spec"]["image"], "abcdefgh");
    upper["spec"]["image"] = json!("ABC");
    let e = causes(store.update(&widgets(), &upper, &w()).unwrap_err());
    assert_eq!(e, vec![("spec.image".into(), "Invalid value: \"ABC\": lower case only".into())]);
    // Stored before the rule (bypassing it through the import path), then left alone.
    let mut stored = store.get(&key_a, &GetOptions::default()).unwrap();
    stored["metadata"]["name"] = json!("imported");
    stored["spec"]["image"] = json!("OLD");
    for k in ["resourceVersion", "uid", "managedFields"] {
        stored["metadata"].as_object_mut().unwrap().remove(k);
    }
    store.import(&widgets(), &stored, "test").unwrap();
    let written = store
        .patch_written(
            &ObjectKey::new("widgets.example.com", Some("default"), "imported"),
            PatchType::Merge,
            &json!({"spec": {"mode": "fast"}}),
            &w(),
        )
        .unwrap();
    assert_eq!(written.warnings, vec!["spec.image: Invalid value: \"OLD\": lower case only".to_string()]);
}

#[test]
fn a_default_added_later_shows_when_objects_are_read() {
    let plain = json!({"type": "object", "properties": {"replicas": {"type": "integer"}, "tier": {"type": "string"}}});
    let store = store_with(plain);
    store.create(&widgets(), &widget("old", json!({"replicas": 2})), &w()).unwrap();
    let key = ObjectKey::new(CRDS, None, "widgets.example.com");
    let mut c = store.get(&key, &GetOptions::default()).unwrap();
    c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["tier"]["default"] = json!("gold");
    store.update(&Collection::new(CRDS, None), &c, &w()).unwrap();
    let got = store.get(&ObjectKey::new("widgets.example.com", Some("default"), "old"), &GetOptions::default()).unwrap();
    assert_eq!(got["spec"], json!({"replicas": 2, "tier": "gold"}));
    let listed = store.list(&widgets(), &ListOptions::default()).unwrap();
    assert_eq!(listed.items[0]["spec"]["tier"], "gold");
    let json_items = store.list_json(&widgets(), &ListOptions::default()).unwrap();
    let first: Value = serde_json::from_slice(&json_items.items[0]).unwrap();
    assert_eq!(first["spec"]["tier"], "gold");
}

#[test]
fn a_field_removed_from_the_schema_goes_when_read_and_updates_still_work() {
    let plain = json!({"type": "object", "properties": {"keep": {"type": "string"}, "later": {"type": "string"}}});
    let store = store_with(plain);
    store.create(&widgets(), &widget("old", json!({"keep": "k", "later": "x"})), &w()).unwrap();
    let key = ObjectKey::new(CRDS, None, "widgets.example.com");
    let mut c = store.get(&key, &GetOptions::default()).unwrap();
    c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"].as_object_mut().unwrap().remove("later");
    store.update(&Collection::new(CRDS, None), &c, &w()).unwrap();
    let object = ObjectKey::new("widgets.example.com", Some("default"), "old");
    let got = store.get(&object, &GetOptions::default()).unwrap();
    assert_eq!(got["spec"], json!({"keep": "k"}));
    let listed = store.list_json(&widgets(), &ListOptions::default()).unwrap();
    let first: Value = serde_json::from_slice(&listed.items[0]).unwrap();
    assert_eq!(first["spec"], json!({"keep": "k"}));
    // An update of the object plans on it as read: the removed field is not in the way.
    let mut next = got.clone();
    next["spec"]["keep"] = json!("k2");
    let out = store.update(&widgets(), &next, &w()).unwrap();
    assert_eq!(out["spec"], json!({"keep": "k2"}));
    let patched = store.patch(&object, fieldstore_engine::patch::PatchType::Merge, &json!({"spec": {"keep": "k3"}}), &w()).unwrap();
    assert_eq!(patched["spec"], json!({"keep": "k3"}));
}

#[test]
fn cel_rules_are_enforced_and_refused_when_they_do_not_compile() {
    let with_rules = json!({"type": "object",
        "x-kubernetes-validations": [{"rule": "self.min <= self.max", "message": "min must not exceed max"}],
        "properties": {"min": {"type": "integer"}, "max": {"type": "integer"},
          "name": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "name is immutable"}]}}});
    let store = store_with(with_rules);
    let e = store.create(&widgets(), &widget("a", json!({"min": 5, "max": 1})), &w()).unwrap_err();
    assert_eq!(causes(e), vec![("spec".into(), "Invalid value: min must not exceed max".into())]);
    let ok = store.create(&widgets(), &widget("b", json!({"min": 1, "max": 5, "name": "x"})), &w()).unwrap();
    // A transition rule: the name may not change.
    let mut renamed = ok.clone();
    renamed["spec"]["name"] = json!("y");
    let got = causes(store.update(&widgets(), &renamed, &w()).unwrap_err());
    assert_eq!(got, vec![("spec.name".into(), "Invalid value: \"y\": name is immutable".into())]);

    // A rule that does not compile is refused when the definition is written.
    let fresh = TestStore::new(Options::default());
    let bad =
        crd(json!({"type": "object", "x-kubernetes-validations": [{"rule": "self.nope > 1"}], "properties": {"a": {"type": "integer"}}}));
    let got = causes(fresh.create(&Collection::new(CRDS, None), &bad, &w()).unwrap_err());
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule");
    assert!(got[0].1.contains("compilation failed"), "{got:?}");
}

/// The cost limits: a rule over a list without bounds that would cost too much is refused when
/// the definition is written; over a bounded 10,000-item list it is accepted, and an object
/// holding 10,000 items is validated within the runtime budget.
#[test]
fn cel_cost_is_bounded_for_large_lists() {
    let fresh = TestStore::new(Options::default());
    let unbounded = crd(json!({"type": "object", "properties": {"items": {"type": "array", "items": {"type": "string"},
        "x-kubernetes-validations": [{"rule": "self.all(x, self.exists(y, x == y + 'a'))"}]}}}));
    let got = causes(fresh.create(&Collection::new(CRDS, None), &unbounded, &w()).unwrap_err());
    assert!(
        got.iter().any(|(p, m)| p.ends_with("x-kubernetes-validations[0].rule") && m.contains("estimated rule cost exceeds budget")),
        "{got:?}"
    );

    let bounded = json!({"type": "object", "properties": {"items": {"type": "array", "maxItems": 10000,
        "items": {"type": "string", "maxLength": 16},
        "x-kubernetes-validations": [{"rule": "self.all(x, x.size() > 0)", "message": "no empty items"}]}}});
    let store = store_with(bounded);
    let items: Vec<String> = (0..10_000).map(|i| format!("item-{i}")).collect();
    store.create(&widgets(), &widget("big", json!({"items": items})), &w()).unwrap();
    let mut bad: Vec<String> = items.clone();
    bad[9_999] = String::new();
    let got = causes(store.create(&widgets(), &widget("bad", json!({"items": bad})), &w()).unwrap_err());
    assert_eq!(got, vec![("spec.items".into(), "Invalid value: no empty items".into())]);
}
