//! Properties of history and the owner index over random write sequences: the index equals
//! what a full scan of managedFields yields, and every stored version is rebuilt from history
//! (after compaction) with exactly its field values.
// Needs the RocksDB-backed store (the engine's `store` feature).
#![cfg(feature = "store")]
#![allow(clippy::unwrap_used)] // helpers unwrap too: a failed setup is a failed test

use fieldstore_codec::{fields_v1, Set};
use fieldstore_engine::patch::PatchType;
use fieldstore_engine::store::{Collection, ObjectKey, Options, Revision, Store, TypeSpec, WriteOptions};
use proptest::prelude::*;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

mod support;

const RES: &str = "things.example.com";
/// Names whose printed path elements hold `.` or `[` (which the index keeps apart) and plain
/// ones.
const ITEMS: [&str; 5] = ["i0", "i.1", "i[2", "i3", "i4"];
const TAGS: [&str; 4] = ["t0", "t.1", "t2", "t[3"];
const LABELS: [&str; 3] = ["l0", "a.b/l1", "l2"];

fn crd() -> TypeSpec {
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": RES},
        "spec": {"group": "example.com", "scope": "Namespaced", "names": {"kind": "Thing", "plural": "things"},
          "versions": [{"name": "v1", "served": true, "storage": true,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
              "spec": {"type": "object", "properties": {
                "replicas": {"type": "integer"},
                "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                "items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                  "items": {"type": "object", "required": ["name"], "properties": {
                    "name": {"type": "string"}, "value": {"type": "string"}}}}}}}}}}]}});
    TypeSpec::from_crd(&crd).unwrap()
}

#[derive(Debug, Clone)]
enum Op {
    Apply { manager: u8, obj: u8, replicas: Option<u8>, items: Vec<(u8, u8)>, tags: Vec<u8>, force: bool },
    MergePatch { manager: u8, obj: u8, label: u8, value: Option<u8> },
    Delete { obj: u8 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..3, 0u8..2, proptest::option::of(0u8..3), proptest::collection::vec((0u8..5, 0u8..3), 0..4), proptest::collection::vec(0u8..4, 0..3), any::<bool>())
            .prop_map(|(manager, obj, replicas, items, tags, force)| Op::Apply { manager, obj, replicas, items, tags, force }),
        2 => (0u8..3, 0u8..2, 0u8..3, proptest::option::of(0u8..2)).prop_map(|(manager, obj, label, value)| Op::MergePatch { manager, obj, label, value }),
        1 => (0u8..2).prop_map(|obj| Op::Delete { obj }),
    ]
}

fn config(obj: u8, replicas: Option<u8>, items: &[(u8, u8)], tags: &[u8]) -> Value {
    let mut spec = serde_json::Map::new();
    if let Some(r) = replicas {
        spec.insert("replicas".into(), json!(r));
    }
    let mut seen = BTreeSet::new();
    let items: Vec<Value> = items
        .iter()
        .filter(|(n, _)| seen.insert(*n))
        .map(|(n, v)| json!({"name": ITEMS[usize::from(*n)], "value": format!("v{v}")}))
        .collect();
    if !items.is_empty() {
        spec.insert("items".into(), Value::Array(items));
    }
    let tags: BTreeSet<&str> = tags.iter().map(|t| TAGS[usize::from(*t)]).collect();
    if !tags.is_empty() {
        spec.insert("tags".into(), json!(tags));
    }
    json!({"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": format!("o{obj}")}, "spec": spec})
}

/// The owner index as a full scan of managedFields says it should be: (object, path, manager).
fn scanned_ownership(s: &Store) -> BTreeSet<(String, String, String)> {
    let mut out = BTreeSet::new();
    for o in s.list(&Collection::new(RES, Some("ns")), &Default::default()).unwrap().items {
        let name = o["metadata"]["name"].as_str().unwrap().to_string();
        let mut per_manager: BTreeMap<String, Set> = BTreeMap::new();
        for e in o["metadata"]["managedFields"].as_array().cloned().unwrap_or_default() {
            let set = fields_v1::from_json(e["fieldsV1"].to_string().as_bytes()).unwrap();
            let m = per_manager.entry(e["manager"].as_str().unwrap().to_string()).or_default();
            *m = m.union(&set);
        }
        for (manager, set) in per_manager {
            set.iterate(|p| {
                out.insert((name.clone(), p.to_string(), manager.clone()));
            });
        }
    }
    out
}

/// Whether `path` is `prefix` or continues it with another element (as `owners_of` reads its
/// path argument: text, `.` the root).
fn under(path: &str, prefix: &str) -> bool {
    prefix.is_empty() || prefix == "." || path.strip_prefix(prefix).is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
}

fn strip(mut v: Value) -> Value {
    if let Some(Value::Object(m)) = v.get_mut("metadata") {
        m.remove("managedFields");
    }
    v
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]

    #[test]
    fn index_matches_a_scan_and_history_rebuilds_every_version(ops in proptest::collection::vec(op(), 1..25)) {
        let dir = tempfile::tempdir().unwrap();
        let s = support::open_at(dir.path(), Options::default().sync(false).retention(None));
        s.register(crd()).unwrap();
        // Every version written: (object, revision) -> the object then (None: deleted).
        let mut versions: Vec<(String, u64, Option<Value>)> = Vec::new();
        for op in &ops {
            let before = s.revision();
            let out = match op {
                Op::Apply { manager, obj, replicas, items, tags, force } => {
                    s.apply(&Collection::new(RES, Some("ns")), &config(*obj, *replicas, items, tags), &WriteOptions::new(format!("m{manager}")).force(*force)).map(|o| (format!("o{obj}"), Some(o)))
                }
                Op::MergePatch { manager, obj, label, value } => {
                    let patch = json!({"metadata": {"labels": {LABELS[usize::from(*label)]: value.map(|v| format!("x{v}"))}}});
                    s.patch(&ObjectKey::new(RES, Some("ns"), format!("o{obj}")), PatchType::Merge, &patch, &WriteOptions::new(format!("m{manager}"))).map(|o| (format!("o{obj}"), Some(o)))
                }
                Op::Delete { obj } => s.delete(&ObjectKey::new(RES, Some("ns"), format!("o{obj}")), &Default::default()).map(|_| (format!("o{obj}"), None)),
            };
            // Conflicts and missing objects write nothing.
            if let Ok((name, obj)) = out {
                if s.revision() > before {
                    versions.push((name, s.revision().0, obj));
                }
            }
        }
        // The index equals the scan.
        let indexed: BTreeSet<(String, String, String)> = s.owners_of(RES, "").unwrap().into_iter().map(|o| (o.name, o.path, o.manager)).collect();
        let scanned = scanned_ownership(&s);
        prop_assert_eq!(&indexed, &scanned);
        // Every prefix of every owned path (and a little past it) finds what a scan finds under
        // it, in path, manager, object order.
        let mut queries: BTreeSet<String> = BTreeSet::new();
        for (_, p, _) in &scanned {
            queries.extend(p.char_indices().map(|(i, _)| p[..i].to_string()));
            queries.insert(p.clone());
            queries.insert(format!("{p}x"));
        }
        for q in &queries {
            let got: Vec<(String, String, String)> = s.owners_of(RES, q).unwrap().into_iter().map(|o| (o.path, o.manager, o.name)).collect();
            let want: Vec<(String, String, String)> = scanned
                .iter()
                .filter(|(_, p, _)| under(p, q))
                .map(|(n, p, m)| (p.clone(), m.clone(), n.clone()))
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            prop_assert_eq!(&got, &want, "owners of {:?}", q);
        }
        let mut by_manager: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (name, _, manager) in &indexed {
            by_manager.entry(manager.clone()).or_default().insert(name.clone());
        }
        for m in ["m0", "m1", "m2"] {
            let objs: BTreeSet<String> = s.objects_managed_by(m, None, None).unwrap().into_iter().map(|o| o.name).collect();
            prop_assert_eq!(&objs, &by_manager.get(m).cloned().unwrap_or_default());
        }
        // After compaction every version is rebuilt from history, field values exact.
        s.compact(s.revision()).unwrap();
        for (name, rev, obj) in &versions {
            let rebuilt = s.object_at(&ObjectKey::new(RES, Some("ns"), name), Revision(*rev)).unwrap();
            prop_assert_eq!(rebuilt.map(strip), obj.clone().map(strip), "{} at {}", name, rev);
        }
    }
}
