//! Replays Server-Side Apply scenarios in the format of the structured-merge-diff oracle
//! (`../shared/oracle/smd`), printing its output format, so that agreement can be checked field
//! for field.
//!
//! This runs at the level the oracle runs: structured-merge-diff only, without the apiserver's
//! rules (no stripped metadata, no `ancient-changes`, no timestamps).

use crate::merge::{ManagedFields, ManagerKey, Operation, Updater};
use crate::schema::parse_smd_yaml;
use crate::Error;
use fieldstore_codec::{fields_v1, Path, PathElement, Set};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// A scenario could not be replayed at all (bad JSON, bad schema, unknown root type, invalid
/// initial object); the oracle prints this as one `{"fatal":…}` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fatal(pub String);

/// Replays a scenario document and returns one JSON line per op.
///
/// # Errors
/// [`Fatal`] when the scenario itself is unusable.
pub fn replay(input: &str) -> Result<Vec<String>, Fatal> {
    let sc: Value = serde_json::from_str(input).map_err(|e| Fatal(format!("bad scenario JSON: {e}")))?;
    let schema_text = sc.get("schema").and_then(Value::as_str).unwrap_or("");
    let schema = parse_smd_yaml(schema_text).map_err(|e| Fatal(format!("bad schema: {e}")))?;
    let type_name = sc.get("type").and_then(Value::as_str).unwrap_or("");
    let root = schema.named(type_name).ok_or_else(|| Fatal(format!("unknown root type {type_name:?}")))?;
    let updater = Updater::new(&schema, &root);
    let mut live = match sc.get("live") {
        Some(v) => {
            updater.validate(v).map_err(|e| Fatal(format!("invalid initial live object: {e}")))?;
            v.clone()
        }
        None => json!({}),
    };
    let mut managers = ManagedFields::new();
    let ops = sc.get("ops").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
    let mut out = Vec::with_capacity(ops.len());
    for (i, op) in ops.iter().enumerate() {
        out.push(run_op(i, &updater, &mut live, &mut managers, op));
    }
    Ok(out)
}

fn error_line(i: usize, msg: &str) -> String {
    json!({"op": i, "ok": false, "error": msg}).to_string()
}

fn run_op(i: usize, updater: &Updater<'_>, live: &mut Value, managers: &mut ManagedFields, op: &Value) -> String {
    let version = op.get("apiVersion").and_then(Value::as_str).filter(|v| !v.is_empty()).unwrap_or("v1");
    let manager = op.get("manager").and_then(Value::as_str).unwrap_or("");
    let force = op.get("force").and_then(Value::as_bool).unwrap_or(false);
    let Some(object) = op.get("object") else {
        return error_line(i, "bad object JSON: EOF");
    };
    if let Err(e) = updater.validate(object) {
        return error_line(i, &format!("invalid object: {e}"));
    }
    let kind = op.get("op").and_then(Value::as_str).unwrap_or("");
    let (new_object, new_managers, changed) = match kind {
        "apply" => {
            let key = ManagerKey::apply(manager);
            // The owned config's parts are moved into the object, as a server applying a
            // request body does.
            match updater.apply_owned(live, object.clone(), version, managers.clone(), &key, force) {
                Ok(a) => (a.object.unwrap_or_else(|| live.clone()), a.managers, Some(a.changed)),
                Err(e) => return failure(i, e),
            }
        }
        "update" => {
            let key = ManagerKey::update(manager, version);
            match updater.update(live, object, version, managers.clone(), &key) {
                Ok(m) => (object.clone(), m, None),
                Err(e) => return failure(i, e),
            }
        }
        other => return error_line(i, &format!("unknown op {other:?}")),
    };
    *live = new_object;
    *managers = new_managers;
    success_line(i, changed, live, managers)
}

fn failure(i: usize, e: Error) -> String {
    match e {
        Error::Conflict(c) => {
            // Regroup the conflicts into one set per manager, then list each set's paths the way
            // structured-merge-diff v4.1.2 lists them (see `smd_iterate`).
            let mut per_manager: BTreeMap<&ManagerKey, Vec<Path>> = BTreeMap::new();
            for c in &c.0 {
                per_manager.entry(&c.manager).or_default().push(c.path.clone());
            }
            let mut list: Vec<(String, &'static str, String)> = Vec::new();
            for (m, paths) in per_manager {
                for p in smd_iterate(&Set::from_paths(&paths)) {
                    list.push((m.manager.clone(), m.operation.as_str(), p.to_string()));
                }
            }
            list.sort();
            let conflicts: Vec<Value> = list.into_iter().map(|(m, o, p)| json!({"manager": m, "operation": o, "path": p})).collect();
            json!({"op": i, "ok": false, "conflicts": conflicts}).to_string()
        }
        other => error_line(i, &other.to_string()),
    }
}

fn success_line(i: usize, changed: Option<bool>, object: &Value, managers: &ManagedFields) -> String {
    let mut entries: Vec<(&str, &str, &str, String)> = managers
        .iter()
        .map(|(k, vs)| (k.manager.as_str(), op_str(k.operation), vs.api_version.as_str(), fields_v1::to_json_string(&vs.set)))
        .collect();
    entries.sort();
    let mut s = format!("{{\"op\":{i},\"ok\":true");
    if let Some(c) = changed {
        s.push_str(&format!(",\"changed\":{c}"));
    }
    s.push_str(",\"object\":");
    s.push_str(&object.to_string());
    s.push_str(",\"managedFields\":[");
    for (n, (m, o, v, f)) in entries.iter().enumerate() {
        if n > 0 {
            s.push(',');
        }
        s.push_str(&format!(
            "{{\"manager\":{},\"operation\":\"{o}\",\"apiVersion\":{},\"fieldsV1\":{f}}}",
            Value::String((*m).to_string()),
            Value::String((*v).to_string())
        ));
    }
    s.push_str("]}");
    s
}

fn op_str(o: Operation) -> &'static str {
    o.as_str()
}

/// The paths of `set` as structured-merge-diff v4.1.2's `Set.Iterate` hands them out when they are
/// kept (as `ConflictsFromManagers` keeps them): each path is `append(prefix, element)` on a Go
/// slice, so paths built from a prefix that still had spare capacity share its backing array, and
/// every one of them ends up showing whatever was appended there last. Conflicts on sibling
/// fields can thus print as one path repeated. The engine's own [`crate::Conflicts`] carry the
/// true paths; only this replay, whose purpose is to print what the oracle prints, reproduces the
/// aliasing (engine/DIFFERENCES.md).
fn smd_iterate(set: &Set) -> Vec<Path> {
    /// A Go slice of path elements: a backing array (index into the arena), length, capacity.
    #[derive(Clone, Copy)]
    struct Slice {
        array: Option<usize>,
        len: usize,
        cap: usize,
    }
    fn append(arena: &mut Vec<Vec<PathElement>>, s: Slice, pe: &PathElement) -> Slice {
        if let Some(a) = s.array.filter(|_| s.len < s.cap) {
            // Room left: write in place, shared with every other slice of this array.
            let arr = &mut arena[a];
            if arr.len() > s.len {
                arr[s.len] = pe.clone();
            } else {
                arr.push(pe.clone());
            }
            return Slice { array: Some(a), len: s.len + 1, cap: s.cap };
        }
        // growslice for 32-byte elements below 256: double (from 0 to 1); sizes are exact classes.
        let cap = if s.cap == 0 { 1 } else { s.cap * 2 };
        let mut arr: Vec<PathElement> = s.array.map(|a| arena[a][..s.len].to_vec()).unwrap_or_default();
        arr.push(pe.clone());
        arena.push(arr);
        Slice { array: Some(arena.len() - 1), len: s.len + 1, cap }
    }
    fn walk(set: &Set, prefix: Slice, arena: &mut Vec<Vec<PathElement>>, out: &mut Vec<Slice>) {
        for m in set.members() {
            let p = append(arena, prefix, m);
            out.push(p);
        }
        for (pe, child) in set.children() {
            let p = append(arena, prefix, pe);
            walk(child, p, arena, out);
        }
    }
    let mut arena = Vec::new();
    let mut out = Vec::new();
    walk(set, Slice { array: None, len: 0, cap: 0 }, &mut arena, &mut out);
    out.into_iter().map(|s| Path(s.array.map(|a| arena[a][..s.len].to_vec()).unwrap_or_default())).collect()
}
