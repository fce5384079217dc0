//! Patches are recorded as Updates by the patching manager (the apiserver's behaviour for every
//! non-apply patch), including clearing managedFields with `[{}]` through a patch.

use fieldstore_engine::fieldmanager::{FieldManager, Time};
use fieldstore_engine::patch::{apply_and_track, PatchMeta, PatchType};
use fieldstore_engine::schema::parse_smd_yaml;
use serde_json::{json, Value};

const SCHEMA: &str = "types:
- name: obj
  map:
    fields:
    - name: apiVersion
      type: {scalar: string}
    - name: kind
      type: {scalar: string}
    - name: metadata
      type: {namedType: meta}
    - name: data
      type:
        map:
          elementType: {scalar: untyped}
- name: meta
  map:
    fields:
    - name: name
      type: {scalar: string}
    - name: managedFields
      type:
        list:
          elementType: {scalar: untyped}
          elementRelationship: atomic
";

fn managers(obj: &Value) -> Vec<(String, String, String)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| {
                    (
                        e["manager"].as_str().unwrap_or("").to_string(),
                        e["operation"].as_str().unwrap_or("").to_string(),
                        e["fieldsV1"].to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn setup() -> (fieldstore_engine::Schema, fieldstore_engine::TypeRef) {
    let schema = parse_smd_yaml(SCHEMA).expect("schema");
    let root = schema.named("obj").expect("root");
    (schema, root)
}

#[test]
fn a_patch_is_recorded_as_an_update_by_the_patching_manager() {
    let (schema, root) = setup();
    let fm = FieldManager::new(&schema, &root, "v1");
    let now: Time = "2026-01-02T03:04:05Z".parse().expect("time");
    let meta = PatchMeta::untyped();
    let live = json!({"apiVersion": "v1", "kind": "Obj", "metadata": {"name": "x"}, "data": {"a": 1}});
    let created = fm.update(None, live, "creator", &now).expect("create").object;
    let out = apply_and_track(&fm, &created, PatchType::Merge, &json!({"data": {"b": 2}}), &meta, "patcher", &now).expect("patch");
    assert_eq!(out.object["data"], json!({"a": 1, "b": 2}));
    let m = managers(&out.object);
    assert_eq!(m.len(), 2, "{m:?}");
    assert!(m.iter().any(|(n, o, f)| n == "patcher" && o == "Update" && f == r#"{"f:data":{"f:b":{}}}"#), "{m:?}");
    assert!(m.iter().any(|(n, _, f)| n == "creator" && f.contains("f:a") && !f.contains("f:b")), "{m:?}");
}

#[test]
fn a_json_patch_setting_managed_fields_to_one_empty_entry_clears_ownership() {
    let (schema, root) = setup();
    let fm = FieldManager::new(&schema, &root, "v1");
    let now: Time = "2026-01-02T03:04:05Z".parse().expect("time");
    let meta = PatchMeta::untyped();
    let live = json!({"apiVersion": "v1", "kind": "Obj", "metadata": {"name": "x"}, "data": {"a": 1}});
    let created = fm.update(None, live, "creator", &now).expect("create").object;
    assert_eq!(managers(&created).len(), 1);
    let patch = json!([{"op": "replace", "path": "/metadata/managedFields", "value": [{}]}]);
    let out = apply_and_track(&fm, &created, PatchType::Json, &patch, &meta, "cleaner", &now).expect("patch");
    // Ownership was reset, and the clearing write itself changed no field, so nobody owns anything.
    assert!(managers(&out.object).iter().all(|(n, _, _)| n != "creator"), "{:?}", managers(&out.object));
}

#[test]
fn a_failing_json_patch_leaves_the_object_untouched_and_records_nothing() {
    let (schema, root) = setup();
    let fm = FieldManager::new(&schema, &root, "v1");
    let now: Time = "2026-01-02T03:04:05Z".parse().expect("time");
    let live = json!({"apiVersion": "v1", "kind": "Obj", "metadata": {"name": "x"}, "data": {"n": 9223372036854775807i64}});
    let before = live.clone();
    let patch = json!([{"op": "test", "path": "/data/n", "value": 1}, {"op": "remove", "path": "/data/n"}]);
    let r = apply_and_track(&fm, &live, PatchType::Json, &patch, &PatchMeta::untyped(), "p", &now);
    assert!(matches!(r, Err(fieldstore_engine::Error::Patch { .. })), "{r:?}");
    assert_eq!(live, before);
    let ok = apply_and_track(&fm, &live, PatchType::Merge, &json!({"data": {"m": 1}}), &PatchMeta::untyped(), "p", &now).expect("patch");
    assert_eq!(ok.object["data"]["n"], json!(9223372036854775807i64), "int64 max survives exactly");
}
