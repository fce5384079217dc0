//! The apiserver's field-manager rules, one test per rule, on a small Kubernetes-shaped type:
//! `metadata` (with labels), `spec` (replicas, a string map `selector`, a map list `items` keyed
//! by `name`, a string map `data`) and a schemaless `status`.

use fieldstore_codec::managed_fields::ManagedFieldsEntry;
use fieldstore_codec::{Path, Set};
use fieldstore_engine::fieldmanager::{
    decode_managed_fields, manager_from_user_agent, reconcile_managed_fields, ApplyOutcome, FieldManager, Time, ANCIENT_CHANGES,
};
use fieldstore_engine::schema::{parse_smd_yaml, Schema};
use fieldstore_engine::{Error, ManagerKey, Reason, TypeRef};
use serde_json::{json, Value};

/// The test type; `selector` is a granular map, or atomic in the "next schema version".
fn schema(selector_atomic: bool) -> (Schema, TypeRef) {
    let selector = if selector_atomic { "elementRelationship: atomic" } else { "" };
    let yaml = format!(
        "types:
- name: object
  map:
    fields:
    - {{name: apiVersion, type: {{scalar: string}}}}
    - {{name: kind, type: {{scalar: string}}}}
    - {{name: metadata, type: {{namedType: meta}}}}
    - {{name: spec, type: {{namedType: spec}}}}
    - {{name: status, type: {{namedType: __untyped_deduced_}}}}
- name: meta
  map:
    fields:
    - {{name: name, type: {{scalar: string}}}}
    - {{name: namespace, type: {{scalar: string}}}}
    - {{name: uid, type: {{scalar: string}}}}
    - {{name: resourceVersion, type: {{scalar: string}}}}
    - {{name: generation, type: {{scalar: numeric}}}}
    - {{name: creationTimestamp, type: {{scalar: string}}}}
    - {{name: deletionTimestamp, type: {{scalar: string}}}}
    - {{name: selfLink, type: {{scalar: string}}}}
    - {{name: managedFields, type: {{namedType: __untyped_atomic_}}}}
    - name: labels
      type:
        map:
          elementType: {{scalar: string}}
- name: spec
  map:
    fields:
    - {{name: replicas, type: {{scalar: numeric}}}}
    - name: selector
      type:
        map:
          elementType: {{scalar: string}}
          {selector}
    - name: items
      type:
        list:
          elementType: {{namedType: item}}
          elementRelationship: associative
          keys: [name]
    - name: data
      type:
        map:
          elementType: {{scalar: string}}
- name: item
  map:
    fields:
    - {{name: name, type: {{scalar: string}}}}
    - {{name: value, type: {{scalar: string}}}}
- name: __untyped_atomic_
  scalar: untyped
  list:
    elementType: {{namedType: __untyped_atomic_}}
    elementRelationship: atomic
  map:
    elementType: {{namedType: __untyped_atomic_}}
    elementRelationship: atomic
- name: __untyped_deduced_
  scalar: untyped
  list:
    elementType: {{namedType: __untyped_atomic_}}
    elementRelationship: atomic
  map:
    elementType: {{namedType: __untyped_deduced_}}
    elementRelationship: separable
"
    );
    let schema = parse_smd_yaml(&yaml).expect("test schema parses");
    let root = schema.named("object").expect("root type");
    (schema, root)
}

/// Seconds after a fixed instant, as request times.
fn t(s: i64) -> Time {
    Time::from_unix_seconds(1_700_000_000 + s)
}

fn cm(extra: Value) -> Value {
    let mut obj = json!({"apiVersion": "v1", "kind": "Widget", "metadata": {"name": "w"}});
    merge_json(&mut obj, extra);
    obj
}

fn merge_json(into: &mut Value, from: Value) {
    match (into, from) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge_json(a.entry(k).or_insert(Value::Null), v);
            }
        }
        (slot, v) => *slot = v,
    }
}

/// One line per entry: `operation manager apiVersion [subresource] time fieldsV1`.
fn summary(entries: &[ManagedFieldsEntry]) -> Vec<String> {
    entries
        .iter()
        .map(|e| {
            let sub = if e.subresource.is_empty() { String::new() } else { format!(" /{}", e.subresource) };
            format!(
                "{} {} {}{} {} {}",
                e.operation,
                e.manager,
                e.api_version,
                sub,
                e.time.as_deref().unwrap_or("-"),
                e.fields_v1_json().unwrap_or("-")
            )
        })
        .collect()
}

fn ts(s: i64) -> String {
    t(s).as_str().to_string()
}

fn reason(r: Result<impl std::fmt::Debug, Error>) -> (Reason, String) {
    let e = r.expect_err("expected an error");
    (e.reason(), e.to_string())
}

#[test]
fn apply_requires_a_field_manager() {
    let (s, r) = schema(false);
    let fm = FieldManager::new(&s, &r, "v1");
    let config = cm(json!({"spec": {"replicas": 1}}));
    let (why, msg) = reason(fm.apply(None, &config, "", false, &t(0)));
    assert_eq!(why, Reason::Invalid);
    assert_eq!(msg, "fieldManager: Required value: is required for apply patch");

    let long = "m".repeat(129);
    let (why, msg) = reason(fm.apply(None, &config, &long, false, &t(0)));
    assert_eq!(why, Reason::Invalid);
    assert_eq!(msg, "fieldManager: Too long: may not be more than 128 bytes");
    assert!(fm.apply(None, &config, &"m".repeat(128), false, &t(0)).is_ok());

    let (why, msg) = reason(fm.apply(None, &config, "bad\u{7}", false, &t(0)));
    assert_eq!(why, Reason::Invalid);
    assert!(msg.contains("invalid character U+0007 (at position 3)"), "{msg}");
    // Updates may name no manager, but a named one is validated alike.
    assert!(matches!(fm.update(None, config.clone(), &long, &t(0)), Err(Error::Invalid(_))));
}

#[test]
fn apply_body_carrying_managed_fields_is_rejected() {
    let (s, r) = schema(false);
    let fm = FieldManager::new(&s, &r, "v1");
    for mf in [json!([]), json!([{"manager": "x", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1"}])] {
        let config = cm(json!({"metadata": {"managedFields": mf}}));
        let (why, msg) = reason(fm.apply(None, &config, "a", false, &t(0)));
        assert_eq!((why, msg.as_str()), (Reason::BadRequest, "metadata.managedFields must be nil"));
    }
    // `null` is Go's nil: accepted.
    assert!(fm.apply(None, &cm(json!({"metadata": {"managedFields": null}})), "a", false, &t(0)).is_ok());
}

#[test]
fn apply_configuration_must_match_the_endpoint_version_and_kind() {
    let (s, r) = schema(false);
    let fm = FieldManager::new(&s, &r, "v1");
    let config = cm(json!({"apiVersion": "v2"}));
    let (why, msg) = reason(fm.apply(None, &config, "a", false, &t(0)));
    assert_eq!(why, Reason::BadRequest);
    assert_eq!(msg, "Incorrect version specified in apply patch. Specified patch version: v2, expected: v1");

    let fm = FieldManager::new(&s, &r, "example.com/v1").with_kind("Widget");
    let config = cm(json!({"apiVersion": "example.com/v1", "kind": "Gadget"}));
    let (_, msg) = reason(fm.apply(None, &config, "a", false, &t(0)));
    assert_eq!(msg, "invalid object type: example.com/v1, Kind=Gadget");
    assert!(fm.apply(None, &cm(json!({"apiVersion": "example.com/v1"})), "a", false, &t(0)).is_ok());
}

#[test]
fn fields_never_tracked_are_stripped() {
    let (s, r) = schema(false);
    let fm = FieldManager::new(&s, &r, "v1");
    let meta = json!({"metadata": {
        "name": "w", "namespace": "ns", "uid": "u-1", "resourceVersion": "7", "generation": 2,
        "creationTimestamp": "2024-01-01T00:00:00Z", "deletionTimestamp": "2024-01-02T00:00:00Z",
        "selfLink": "/x", "labels": {"app": "w"}}});
    let mut config = cm(meta.clone());
    merge_json(&mut config, json!({"spec": {"replicas": 1}}));
    let out = fm.apply(None, &config, "a", false, &t(0)).unwrap();
    assert_eq!(
        summary(&out.managed_fields()),
        [format!(r#"Apply a v1 {} {{"f:metadata":{{"f:labels":{{"f:app":{{}}}}}},"f:spec":{{"f:replicas":{{}}}}}}"#, ts(0))]
    );

    // A config of nothing but untracked fields leaves the applier no entry at all.
    let bare = fm.apply(None, &cm(meta.clone()), "b", false, &t(0)).unwrap();
    assert_eq!(summary(&bare.managed_fields()).len(), 1);
    let only_meta = fm.apply(None, &cm(json!({})), "c", false, &t(0)).unwrap();
    assert!(only_meta.managed_fields().is_empty());
    assert!(only_meta.object["metadata"].get("managedFields").is_none());

    // An update that only changes server-owned metadata (or creates `metadata`) takes nothing.
    let live = json!({"apiVersion": "v1", "kind": "Widget", "spec": {"replicas": 1}});
    let mut new = cm(meta);
    merge_json(&mut new, json!({"spec": {"replicas": 1}}));
    new["metadata"].as_object_mut().unwrap().remove("labels");
    let out = fm.update(Some(&live), new, "ctrl", &t(1)).unwrap();
    assert!(out.managed_fields().is_empty(), "{:?}", summary(&out.managed_fields()));
}

#[test]
fn untracked_fields_in_the_config_neither_change_the_appliers_fields_nor_get_pruned() {
    let (s, r) = schema(false);
    let fm = FieldManager::new(&s, &r, "v1");
    let config =
        cm(json!({"metadata": {"namespace": "ns", "labels": {"app": "w", "tier": "x"}}, "spec": {"replicas": 1, "data": {"a": "1"}}}));
    let mut live = fm.apply(None, &config, "a", false, &t(0)).unwrap().object;
    // What the server sets on the object, owned by nobody.
    let server = json!({"metadata": {"uid": "u-1", "resourceVersion": "7", "generation": 2, "creationTimestamp": "2024-01-01T00:00:00Z"}});
    merge_json(&mut live, server.clone());
    let fields = r#"{"f:metadata":{"f:labels":{"f:app":{},"f:tier":{}}},"f:spec":{"f:data":{"f:a":{}},"f:replicas":{}}}"#;
    assert_eq!(
        summary(&fm.apply(Some(&live), &config, "a", false, &t(1)).unwrap().managed_fields()),
        [format!("Apply a v1 {} {fields}", ts(0))]
    );

    // The applier stops applying a label and a data entry: those go, the untracked fields of the
    // config and the server's metadata stay.
    let shrunk = cm(json!({"metadata": {"namespace": "ns", "labels": {"app": "w"}}, "spec": {"replicas": 2}}));
    let out = fm.apply(Some(&live), &shrunk, "a", false, &t(2)).unwrap();
    let mut want = cm(json!({"metadata": {"namespace": "ns", "labels": {"app": "w"}}, "spec": {"replicas": 2}}));
    merge_json(&mut want, server);
    let mut got = out.object.clone();
    got["metadata"].as_object_mut().unwrap().remove("managedFields");
    assert_eq!(got, want);
    assert_eq!(
        summary(&out.managed_fields()),
        [format!(r#"Apply a v1 {} {{"f:metadata":{{"f:labels":{{"f:app":{{}}}}}},"f:spec":{{"f:replicas":{{}}}}}}"#, ts(2))]
    );
}

#[test]
fn managed_fields_need_an_object_metadata_and_survive_a_pruned_one() {
    let s = fieldstore_engine::schema::Schema::deduced();
    let r = s.named(fieldstore_engine::schema::DEDUCED_TYPE).unwrap();
    let fm = FieldManager::new(&s, &r, "v1");
    // The applier stops applying the only metadata field it set: pruning leaves metadata null,
    // and the entries still go into it.
    let first = fm.apply(None, &json!({"apiVersion": "v1", "metadata": {"x": "1"}, "a": "1"}), "m", false, &t(0)).unwrap();
    let out = fm.apply(Some(&first.object), &json!({"apiVersion": "v1", "b": "2"}), "m", false, &t(1)).unwrap();
    assert_eq!(out.object["metadata"]["managedFields"][0]["fieldsV1"], json!({"f:b": {}}));
    assert_eq!(summary(&out.managed_fields()).len(), 1);
    // Metadata that cannot hold managedFields is a bad request, not a silent loss.
    let (why, msg) = reason(fm.apply(None, &json!({"apiVersion": "v1", "metadata": "m", "a": "1"}), "m", false, &t(0)));
    assert_eq!((why, msg.as_str()), (Reason::BadRequest, "metadata: must be a JSON object, not a string"));
    let (why, msg) = reason(fm.update(None, json!({"metadata": 5, "a": "1"}), "m", &t(0)));
    assert_eq!((why, msg.as_str()), (Reason::BadRequest, "metadata: must be a JSON object, not a number"));
    // An object with nothing to track needs no metadata at all.
    assert!(fm.update(None, json!(["not", "an", "object"]), "m", &t(0)).unwrap().managed_fields().is_empty());
}

#[test]
fn managers_whose_set_becomes_empty_disappear() {
    let (s, r) = schema(false);
    let fm = FieldManager::new(&s, &r, "v1");
    let a = fm.apply(None, &cm(json!({"spec": {"replicas": 1}})), "a", false, &t(0)).unwrap();
    let b = fm.apply(Some(&a.object), &cm(json!({"spec": {"replicas": 2}})), "b", true, &t(1)).unwrap();
    assert_eq!(summary(&b.managed_fields()), [format!(r#"Apply b v1 {} {{"f:spec":{{"f:replicas":{{}}}}}}"#, ts(1))]);

    // An updater losing its last field to a removal disappears too.
    let u = fm.update(Some(&b.object), cm(json!({"spec": {"replicas": 2, "data": {"k": "v"}}})), "u", &t(2)).unwrap();
    assert_eq!(u.managed_fields().len(), 2);
    let gone = fm.update(Some(&u.object), cm(json!({"spec": {"replicas": 2}})), "other", &t(3)).unwrap();
    assert_eq!(summary(&gone.managed_fields()), [format!(r#"Apply b v1 {} {{"f:spec":{{"f:replicas":{{}}}}}}"#, ts(1))]);
}

#[test]
fn apply_and_update_managers_of_the_same_name_are_distinct_entries() {
    let (s, r) = schema(false);
    let fm = FieldManager::new(&s, &r, "v1");
    let a = fm.apply(None, &cm(json!({"spec": {"replicas": 1}})), "kubectl", false, &t(0)).unwrap();
    let u = fm.update(Some(&a.object), cm(json!({"spec": {"replicas": 1, "data": {"k": "v"}}})), "kubectl", &t(1)).unwrap();
    assert_eq!(
        summary(&u.managed_fields()),
        [
            format!(r#"Apply kubectl v1 {} {{"f:spec":{{"f:replicas":{{}}}}}}"#, ts(0)),
            format!(r#"Update kubectl v1 {} {{"f:spec":{{"f:data":{{".":{{}},"f:k":{{}}}}}}}}"#, ts(1)),
        ]
    );
    // The same name through a subresource is a third identity.
    let status = FieldManager::new(&s, &r, "v1").with_subresource("status");
    let st = status
        .update(
            Some(&u.object),
            {
                let mut n = u.object.clone();
                n["status"] = json!({"phase": "Up"});
                n
            },
            "kubectl",
            &t(2),
        )
        .unwrap();
    let keys: Vec<ManagerKey> = decode_managed_fields(&st.object).unwrap().into_keys().collect();
    assert_eq!(keys.len(), 3);
    assert!(keys.contains(&ManagerKey::update("kubectl", "v1").with_subresource("status")));
}

#[test]
fn entry_time_changes_only_when_its_write_changed_something() {
    let (s, r) = schema(false);
    let fm = FieldManager::new(&s, &r, "v1");
    let u1 = fm.update(None, cm(json!({"spec": {"replicas": 1, "data": {"a": "1"}}})), "ctrl", &t(0)).unwrap();
    // Writing the same object again takes no field: the time stays.
    let same = fm.update(Some(&u1.object), u1.object.clone(), "ctrl", &t(5)).unwrap();
    assert_eq!(same.managed_fields(), u1.managed_fields());
    // Another manager taking one of ctrl's fields does not move ctrl's time.
    let other = fm.update(Some(&same.object), cm(json!({"spec": {"replicas": 2, "data": {"a": "1"}}})), "hpa", &t(6)).unwrap();
    assert_eq!(
        summary(&other.managed_fields()),
        [
            format!(r#"Update ctrl v1 {} {{"f:spec":{{".":{{}},"f:data":{{".":{{}},"f:a":{{}}}}}}}}"#, ts(0)),
            format!(r#"Update hpa v1 {} {{"f:spec":{{"f:replicas":{{}}}}}}"#, ts(6)),
        ]
    );
    // Changing a value ctrl already owns moves its time, as the apiserver does.
    let again = fm.update(Some(&other.object), cm(json!({"spec": {"replicas": 2, "data": {"a": "2"}}})), "ctrl", &t(7)).unwrap();
    assert!(
        summary(&again.managed_fields())[1].starts_with(&format!("Update ctrl v1 {}", ts(7))),
        "{:?}",
        summary(&again.managed_fields())
    );

    // An apply moves its time when it changes the object, not otherwise.
    let a = fm.apply(Some(&again.object), &cm(json!({"spec": {"data": {"b": "1"}}})), "ap", false, &t(8)).unwrap();
    let a2 = fm.apply(Some(&a.object), &cm(json!({"spec": {"data": {"b": "1"}}})), "ap", false, &t(9)).unwrap();
    assert!(a2.is_noop());
    assert_eq!(a2.managed_fields(), a.managed_fields());
}

#[test]
fn more_than_ten_update_managers_fold_into_ancient_changes() {
    let (s, r) = schema(false);
    let fm = FieldManager::new(&s, &r, "v1");
    let mut obj = fm.apply(None, &cm(json!({"spec": {"replicas": 1}})), "applier", false, &t(0)).unwrap().object;
    let mut data = serde_json::Map::new();
    for i in 0..11 {
        data.insert(format!("k{i:02}"), json!("v"));
        let new = cm(json!({"spec": {"replicas": 1, "data": Value::Object(data.clone())}}));
        obj = fm.update(Some(&obj), new, &format!("u{i:02}"), &t(i + 1)).unwrap().object;
    }
    let out = decode_managed_fields(&obj).unwrap();
    let updaters: Vec<&ManagerKey> = out.keys().filter(|k| k.operation == fieldstore_engine::Operation::Update).collect();
    assert_eq!(updaters.len(), 10);
    let mf: Vec<ManagedFieldsEntry> = serde_json::from_value(obj["metadata"]["managedFields"].clone()).unwrap();
    let lines = summary(&mf);
    // Apply entries are not counted and come first; the two oldest updates (same version) are
    // merged into `ancient-changes`, which takes the time of the newer one.
    assert!(lines[0].starts_with("Apply applier v1"));
    assert_eq!(
        lines[1],
        format!(r#"Update {ANCIENT_CHANGES} v1 {} {{"f:spec":{{"f:data":{{".":{{}},"f:k00":{{}},"f:k01":{{}}}}}}}}"#, ts(2))
    );
    assert!(lines[2].starts_with(&format!("Update u02 v1 {}", ts(3))));
    assert_eq!(lines.len(), 11);

    // A cap of 2 folds per version: entries at different versions never share a bucket.
    let v1 = FieldManager::new(&s, &r, "v1").with_max_update_managers(2);
    let v2 = FieldManager::new(&s, &r, "v2").with_max_update_managers(2);
    let mut obj = cm(json!({}));
    let mut data = serde_json::Map::new();
    for (i, fm) in [&v1, &v2, &v1, &v2].into_iter().enumerate() {
        data.insert(format!("k{i}"), json!("v"));
        let new = cm(json!({"spec": {"data": Value::Object(data.clone())}}));
        obj = fm.update(Some(&obj), new, &format!("m{i}"), &t(i as i64)).unwrap().object;
    }
    let keys: Vec<String> = decode_managed_fields(&obj).unwrap().keys().map(|k| format!("{}@{}", k.manager, k.api_version)).collect();
    assert_eq!(keys, ["ancient-changes@v1", "ancient-changes@v2"]);
}

fn status_reset() -> Set {
    Set::from_paths(&[Path::fields(["status"])])
}

fn spec_reset() -> Set {
    Set::from_paths(&[Path::fields(["spec"]), Path::fields(["metadata", "labels"])])
}

#[test]
fn reset_fields_are_dropped_from_an_update() {
    let (s, r) = schema(false);
    let main = FieldManager::new(&s, &r, "v1").with_reset_fields("v1", "", status_reset()).with_reset_fields("v1", "status", spec_reset());
    let status = main.clone().with_subresource("status");
    let live = cm(json!({"spec": {"replicas": 1}, "status": {"phase": "Pending"}}));

    // Through the main resource, status changes are undone and not tracked.
    let out = main.update(Some(&live), cm(json!({"spec": {"replicas": 2}, "status": {"phase": "Hacked"}})), "ctrl", &t(1)).unwrap();
    assert_eq!(out.object["status"], json!({"phase": "Pending"}));
    assert_eq!(summary(&out.managed_fields()), [format!(r#"Update ctrl v1 {} {{"f:spec":{{"f:replicas":{{}}}}}}"#, ts(1))]);
    // Dropping status in a main-resource write does not delete it either.
    let out = main.update(Some(&live), cm(json!({"spec": {"replicas": 1}})), "ctrl", &t(1)).unwrap();
    assert_eq!(out.object["status"], json!({"phase": "Pending"}));

    // Through the status subresource, only status is taken; spec keeps its live value.
    let new = cm(json!({"spec": {"replicas": 9}, "status": {"phase": "Running"}}));
    let out = status.update(Some(&live), new, "kubelet", &t(2)).unwrap();
    assert_eq!(out.object["spec"], json!({"replicas": 1}));
    assert_eq!(summary(&out.managed_fields()), [format!(r#"Update kubelet v1 /status {} {{"f:status":{{"f:phase":{{}}}}}}"#, ts(2))]);
}

#[test]
fn reset_fields_are_stripped_from_an_apply() {
    let (s, r) = schema(false);
    let main = FieldManager::new(&s, &r, "v1").with_reset_fields("v1", "", status_reset());
    let status = FieldManager::new(&s, &r, "v1").with_subresource("status").with_reset_fields("v1", "status", spec_reset());
    let created = main.apply(None, &cm(json!({"spec": {"replicas": 1}, "status": {"phase": "Fake"}})), "a", false, &t(0)).unwrap();
    assert!(created.object.get("status").is_none(), "{}", created.object);
    let st = status.apply(Some(&created.object), &cm(json!({"status": {"phase": "Up"}})), "kubelet", false, &t(1)).unwrap();
    // A main-resource apply setting another status value neither conflicts nor changes it.
    let out = main.apply(Some(&st.object), &cm(json!({"spec": {"replicas": 1}, "status": {"phase": "Down"}})), "a", false, &t(2)).unwrap();
    assert_eq!(out.object["status"], json!({"phase": "Up"}));
    assert!(out.is_noop());
    assert_eq!(
        summary(&out.managed_fields()),
        [
            format!(r#"Apply a v1 {} {{"f:spec":{{"f:replicas":{{}}}}}}"#, ts(0)),
            format!(r#"Apply kubelet v1 /status {} {{"f:status":{{"f:phase":{{}}}}}}"#, ts(1)),
        ]
    );
}

#[test]
fn strict_reset_fields_reject_the_apply() {
    let (s, r) = schema(false);
    let fm = FieldManager::new(&s, &r, "v1").with_reset_fields("v1", "", status_reset()).with_strict_reset_fields(true);
    let config = cm(json!({"spec": {"replicas": 1}, "status": {"phase": "Up", "ready": true}}));
    let Err(Error::Invalid(errs)) = fm.apply(None, &config, "a", false, &t(0)) else { panic!("expected Invalid") };
    let paths: Vec<&str> = errs.0.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(paths, [".status.phase", ".status.ready"]);
    assert!(errs.0[0].message.contains("reset by the server"));
    assert!(fm.apply(None, &cm(json!({"spec": {"replicas": 1}})), "a", false, &t(0)).is_ok());
}

fn tracked(fm: &FieldManager<'_>) -> Value {
    let a = fm.apply(None, &cm(json!({"spec": {"data": {"a": "1"}}})), "applier", false, &t(0)).expect("apply to nothing");
    a.object
}

#[test]
fn clearing_managed_fields_with_one_empty_entry_resets_then_tracks_the_write() {
    let (s, r) = schema(false);
    let fm = FieldManager::new(&s, &r, "v1");
    let live = tracked(&fm);
    let mut new = live.clone();
    new["metadata"]["managedFields"] = json!([{}]);
    new["spec"]["data"]["b"] = json!("2");
    let out = fm.update(Some(&live), new, "editor", &t(1)).unwrap();
    assert_eq!(summary(&out.managed_fields()), [format!(r#"Update editor v1 {} {{"f:spec":{{"f:data":{{"f:b":{{}}}}}}}}"#, ts(1))]);
    // With nothing changed, the reset leaves no managedFields at all.
    let mut new = live.clone();
    new["metadata"]["managedFields"] = json!([{}]);
    let out = fm.update(Some(&live), new, "editor", &t(1)).unwrap();
    assert!(out.object["metadata"].get("managedFields").is_none());
}

#[test]
fn an_empty_managed_fields_list_does_not_reset() {
    let (s, r) = schema(false);
    let fm = FieldManager::new(&s, &r, "v1");
    let live = tracked(&fm);
    for mf in [json!([]), Value::Null] {
        let mut new = live.clone();
        new["metadata"]["managedFields"] = mf;
        let out = fm.update(Some(&live), new, "editor", &t(1)).unwrap();
        assert_eq!(out.object["metadata"]["managedFields"], live["metadata"]["managedFields"]);
    }
}

#[test]
fn managed_fields_written_by_an_update_replace_the_live_ones_unless_invalid_or_through_a_subresource() {
    let (s, r) = schema(false);
    let fm = FieldManager::new(&s, &r, "v1");
    let live = tracked(&fm);
    let edited = json!([{"manager": "someone", "operation": "Update", "apiVersion": "v1", "time": "2020-01-01T00:00:00Z",
        "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:data": {"f:a": {}}}}}]);
    let mut new = live.clone();
    new["metadata"]["managedFields"] = edited.clone();
    let out = fm.update(Some(&live), new.clone(), "editor", &t(1)).unwrap();
    assert_eq!(summary(&out.managed_fields()), [r#"Update someone v1 2020-01-01T00:00:00Z {"f:spec":{"f:data":{"f:a":{}}}}"#]);

    // Through a subresource, the live managedFields always win.
    let status = FieldManager::new(&s, &r, "v1").with_subresource("status");
    let out = status.update(Some(&live), new, "editor", &t(1)).unwrap();
    assert_eq!(out.object["metadata"]["managedFields"], live["metadata"]["managedFields"]);

    // Invalid ones are ignored in favour of the live ones.
    let mut new = live.clone();
    new["metadata"]["managedFields"] = json!([{"manager": "x", "operation": "Sideways", "apiVersion": "v1", "fieldsType": "FieldsV1"}]);
    let out = fm.update(Some(&live), new, "editor", &t(1)).unwrap();
    assert_eq!(out.object["metadata"]["managedFields"], live["metadata"]["managedFields"]);
}

#[test]
fn invalid_live_managed_fields_are_reset_by_an_update_and_fail_an_apply() {
    let (s, r) = schema(false);
    let fm = FieldManager::new(&s, &r, "v1");
    let mut live = cm(json!({"spec": {"replicas": 1}}));
    live["metadata"]["managedFields"] = json!([{"manager": "x", "operation": "Update", "fieldsType": "FieldsV1"}]);
    let out = fm.update(Some(&live), cm(json!({"spec": {"replicas": 2}})), "ctrl", &t(1)).unwrap();
    assert_eq!(summary(&out.managed_fields()), [format!(r#"Update ctrl v1 {} {{"f:spec":{{"f:replicas":{{}}}}}}"#, ts(1))]);

    let (why, msg) = reason(fm.apply(Some(&live), &cm(json!({"spec": {"replicas": 2}})), "a", false, &t(1)));
    assert_eq!(why, Reason::BadRequest);
    assert_eq!(msg, "failed to decode managed fields: managedFields[0].apiVersion: must not be empty");
}

#[test]
fn topology_changes_reconcile_managed_fields_with_the_schema() {
    let (granular, gr) = schema(false);
    let (atomic, ar) = schema(true);
    let old = FieldManager::new(&granular, &gr, "v1");
    let new = FieldManager::new(&atomic, &ar, "v1");
    let a = old.apply(None, &cm(json!({"spec": {"selector": {"app": "w", "tier": "web"}}})), "a", false, &t(0)).unwrap();
    assert_eq!(
        summary(&a.managed_fields()),
        [format!(r#"Apply a v1 {} {{"f:spec":{{"f:selector":{{"f:app":{{}},"f:tier":{{}}}}}}}}"#, ts(0))]
    );

    // Granular → atomic: the owner of parts now owns the whole map, and owning it whole wins an
    // apply that drops one key.
    let u = new
        .update(
            Some(&a.object),
            {
                let mut n = a.object.clone();
                n["spec"]["replicas"] = json!(3);
                n
            },
            "ctrl",
            &t(1),
        )
        .unwrap();
    assert_eq!(
        summary(&u.managed_fields()),
        [
            format!(r#"Apply a v1 {} {{"f:spec":{{"f:selector":{{}}}}}}"#, ts(0)),
            format!(r#"Update ctrl v1 {} {{"f:spec":{{"f:replicas":{{}}}}}}"#, ts(1)),
        ]
    );
    let err = new.apply(Some(&u.object), &cm(json!({"spec": {"selector": {"app": "w"}}})), "b", false, &t(2)).unwrap_err();
    assert!(matches!(err, Error::Conflict(_)), "{err}");

    // Atomic → granular: sets stay as they are (the field itself, none of its children).
    let mut managers = decode_managed_fields(&u.object).unwrap();
    assert!(!reconcile_managed_fields(&granular, &gr, &mut managers).unwrap());
}

#[test]
fn a_no_op_apply_returns_unchanged() {
    let (s, r) = schema(false);
    let fm = FieldManager::new(&s, &r, "v1");
    let config = cm(json!({"spec": {"replicas": 1, "items": [{"name": "x", "value": "1"}]}}));
    let first = fm.apply(None, &config, "a", false, &t(0)).unwrap();
    assert!(!first.is_noop());
    let again: ApplyOutcome = fm.apply(Some(&first.object), &config, "a", false, &t(5)).unwrap();
    assert!(again.is_noop());
    assert_eq!(again.object, first.object);
    assert_eq!(again.managed_fields(), first.managed_fields());

    // A second applier agreeing on every value changes no value but does change managedFields;
    // like the apiserver it gets no time, since the object did not change.
    let shared = fm.apply(Some(&first.object), &cm(json!({"spec": {"replicas": 1}})), "b", false, &t(6)).unwrap();
    assert!(!shared.object_changed && shared.managed_fields_changed && !shared.is_noop());
    assert_eq!(summary(&shared.managed_fields())[0], r#"Apply b v1 - {"f:spec":{"f:replicas":{}}}"#);

    // Dropping a field another manager also owns changes only managedFields.
    let drop = fm.apply(Some(&shared.object), &cm(json!({"spec": {"items": [{"name": "x", "value": "1"}]}})), "a", false, &t(7)).unwrap();
    assert!(!drop.object_changed && drop.managed_fields_changed);
}

#[test]
fn conflicts_surface_unchanged() {
    let (s, r) = schema(false);
    let fm = FieldManager::new(&s, &r, "v1");
    let a = fm.apply(None, &cm(json!({"spec": {"replicas": 1}})), "a", false, &t(0)).unwrap();
    let err = fm.apply(Some(&a.object), &cm(json!({"spec": {"replicas": 2}})), "b", false, &t(1)).unwrap_err();
    let Error::Conflict(conflicts) = &err else { panic!("expected a conflict, got {err}") };
    assert_eq!(conflicts.len(), 1);
    assert_eq!(conflicts.0[0].manager, ManagerKey::apply("a"));
    assert_eq!(conflicts.0[0].live, Some(json!(1)));
    assert_eq!(conflicts.0[0].applied, Some(json!(2)));
    assert_eq!(err.reason(), Reason::Conflict);
    assert_eq!(conflicts.kubernetes_message(), r#"Apply failed with 1 conflict: conflict with "a": .spec.replicas"#);
    // Forcing takes the field.
    let forced = fm.apply(Some(&a.object), &cm(json!({"spec": {"replicas": 2}})), "b", true, &t(1)).unwrap();
    assert_eq!(forced.object["spec"]["replicas"], json!(2));
}

#[test]
fn entries_are_ordered_as_kubernetes_orders_them() {
    let (s, r) = schema(false);
    let fm = FieldManager::new(&s, &r, "v1");
    let mut obj = fm.update(None, cm(json!({"spec": {"data": {"z": "1"}}})), "zeta", &t(3)).unwrap().object;
    obj = fm.update(Some(&obj), cm(json!({"spec": {"data": {"z": "1", "y": "1"}}})), "alpha", &t(3)).unwrap().object;
    obj = fm.apply(Some(&obj), &cm(json!({"spec": {"data": {"x": "1"}}})), "late", false, &t(9)).unwrap().object;
    obj = fm.apply(Some(&obj), &cm(json!({"spec": {"data": {"w": "1"}}})), "early", false, &t(1)).unwrap().object;
    let v2 = FieldManager::new(&s, &r, "v2");
    let out =
        v2.update(Some(&obj), cm(json!({"spec": {"data": {"z": "1", "y": "1", "x": "1", "w": "1", "v": "1"}}})), "alpha", &t(2)).unwrap();
    let order: Vec<String> = out.managed_fields().iter().map(|e| format!("{} {} {}", e.operation, e.manager, e.api_version)).collect();
    // Apply before Update; then by time; then manager, apiVersion, subresource.
    assert_eq!(order, ["Apply early v1", "Apply late v1", "Update alpha v2", "Update alpha v1", "Update zeta v1"]);
}

#[test]
fn updates_without_a_manager_are_recorded_as_unknown() {
    let (s, r) = schema(false);
    let fm = FieldManager::new(&s, &r, "v1");
    let out = fm.update(None, cm(json!({"spec": {"replicas": 1}})), "", &t(0)).unwrap();
    assert_eq!(out.managed_fields()[0].manager, "unknown");
    assert_eq!(manager_from_user_agent("kubectl/v1.30.0 (linux/amd64) kubernetes/abc"), "kubectl");
    assert_eq!(manager_from_user_agent(&format!("{}\u{7}/x", "a".repeat(200))), "a".repeat(128));
}

#[test]
fn creates_are_tracked() {
    let (s, r) = schema(false);
    let fm = FieldManager::new(&s, &r, "v1");
    let out = fm.update(None, cm(json!({"metadata": {"labels": {"a": "b"}}, "spec": {"replicas": 1}})), "creator", &t(0)).unwrap();
    assert_eq!(
        summary(&out.managed_fields()),
        [format!(
            r#"Update creator v1 {} {{"f:metadata":{{"f:labels":{{".":{{}},"f:a":{{}}}}}},"f:spec":{{".":{{}},"f:replicas":{{}}}}}}"#,
            ts(0)
        )]
    );
}

#[test]
fn an_owned_config_is_applied_as_a_borrowed_one() {
    let (s, r) = schema(false);
    let fm = FieldManager::new(&s, &r, "v1").with_reset_fields("v1", "", status_reset());
    // Create, a sole applier's change, a second applier, a conflict, a forced take-over, a field
    // dropped from the config (pruned) and a config setting a reset field (restored).
    let steps: [(&str, bool, Value); 7] = [
        ("a", false, json!({"spec": {"replicas": 1, "items": [{"name": "x", "value": "1"}, {"name": "y", "value": "2"}]}})),
        ("a", false, json!({"spec": {"replicas": 2, "items": [{"name": "x", "value": "1"}, {"name": "y", "value": "3"}]}})),
        ("b", false, json!({"spec": {"items": [{"name": "z", "value": "9"}], "data": {"k": "v"}}})),
        ("b", false, json!({"spec": {"replicas": 5}})),
        ("b", true, json!({"spec": {"replicas": 5, "items": [{"name": "z", "value": "9"}]}})),
        ("a", false, json!({"spec": {"items": [{"name": "x", "value": "1"}]}})),
        ("a", false, json!({"spec": {"items": [{"name": "x", "value": "4"}]}, "status": {"phase": "Up"}})),
    ];
    let mut live: Option<Value> = None;
    for (i, (manager, force, extra)) in steps.into_iter().enumerate() {
        let config = cm(extra);
        let borrowed = fm.apply(live.as_ref(), &config, manager, force, &t(i as i64));
        let owned = fm.apply_owned(live.as_ref(), config.clone(), manager, force, &t(i as i64));
        assert_eq!(format!("{owned:?}"), format!("{borrowed:?}"), "step {i}: {config}");
        if let Ok(out) = borrowed {
            live = Some(out.object);
        } else {
            assert_eq!(i, 3, "only the unforced apply of another's field conflicts");
        }
    }
    let live = live.expect("applied");
    assert_eq!(live["spec"]["items"], json!([{"name": "x", "value": "4"}, {"name": "z", "value": "9"}]));
    assert_eq!(live["spec"]["replicas"], json!(5));
}
