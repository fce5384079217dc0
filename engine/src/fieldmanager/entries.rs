//! `metadata.managedFields` of an object ⇄ the managers and times the field manager works on
//! (the apiserver's `DecodeManagedFields` / `EncodeObjectManagedFields`).

use super::Time;
use crate::merge::{ManagedFields, ManagerKey, Operation, VersionedSet};
use crate::Error;
use fieldstore_codec::fields_v1::{self, Names};
use fieldstore_codec::managed_fields::{self, ManagedFieldsEntry, FIELDS_TYPE_V1};
use fieldstore_codec::{value, Path, PathElement, Set};
use serde_json::Value;
use std::collections::BTreeMap;

/// When each entry last changed; an entry without a time has no key here.
pub(crate) type Times = BTreeMap<ManagerKey, Time>;

/// The managers of an object, as decoded from its managedFields.
#[derive(Debug, Default)]
pub(crate) struct Decoded {
    pub managers: ManagedFields,
    pub times: Times,
    /// How many entries there were: more than `managers.len()` when two entries shared an
    /// identity (the later one wins, as in the apiserver's map).
    pub entries: usize,
}

/// `metadata.managedFields` of `obj`; `null` counts as absent, as Go's nil slice.
pub(crate) fn managed_fields_of(obj: &Value) -> Option<&Value> {
    obj.get("metadata")?.get("managedFields").filter(|v| !v.is_null())
}

/// Takes `metadata.managedFields` out of `obj` (`null` counts as absent).
pub(crate) fn take_managed_fields(obj: &mut Value) -> Option<Value> {
    match obj.get_mut("metadata") {
        Some(Value::Object(meta)) => meta.remove("managedFields").filter(|v| !v.is_null()),
        _ => None,
    }
}

/// Puts back into `obj` what [`take_managed_fields`] took out of it (nothing for `None`).
pub(crate) fn put_managed_fields(obj: &mut Value, managed_fields: Option<Value>) {
    if let (Some(Value::Object(meta)), Some(mf)) = (obj.get_mut("metadata"), managed_fields) {
        meta.insert("managedFields".to_owned(), mf);
    }
}

/// The managedFields of the version a write replaces, as a store read them (each FieldsV1
/// document written from its set), and the managers decoded from them: an entry whose set the
/// write leaves as it was keeps its document, moved or copied, rather than having it written
/// again from the set.
pub(crate) struct Kept<'a> {
    entries: KeptEntries<'a>,
    managers: ManagedFields,
}

enum KeptEntries<'a> {
    /// The write's own copy (a client sent back what it read): documents are moved out.
    Owned(Vec<Value>),
    /// The live version's: documents are copied.
    Borrowed(&'a [Value]),
}

impl<'a> Kept<'a> {
    /// `entries` (a managedFields list, owned or the live version's) as decoded into `managers`
    /// (before any change); `None` when they are not a list or two entries share an identity.
    pub(crate) fn new(entries: std::borrow::Cow<'a, Value>, managers: &ManagedFields) -> Option<Self> {
        let entries = match entries {
            std::borrow::Cow::Owned(Value::Array(items)) => KeptEntries::Owned(items),
            std::borrow::Cow::Borrowed(Value::Array(items)) => KeptEntries::Borrowed(items),
            _ => return None,
        };
        let kept = Kept { entries, managers: managers.clone() };
        (kept.items().len() == managers.len()).then_some(kept)
    }

    fn items(&self) -> &[Value] {
        match &self.entries {
            KeptEntries::Owned(items) => items,
            KeptEntries::Borrowed(items) => items,
        }
    }

    /// The FieldsV1 document of the entry of `key`, when its set was `set` already.
    fn document(&mut self, key: &ManagerKey, set: &Set) -> Option<Value> {
        #[cfg(all(test, feature = "store"))]
        if !tests::KEEP_DOCUMENTS.load(std::sync::atomic::Ordering::SeqCst) {
            return None;
        }
        if self.managers.get(key).is_none_or(|vs| vs.set != *set) {
            return None;
        }
        let i = self.items().iter().position(|item| is_entry_of(item, key))?;
        match &mut self.entries {
            KeptEntries::Owned(items) => items[i].get_mut("fieldsV1").map(Value::take),
            KeptEntries::Borrowed(items) => items[i].get("fieldsV1").cloned(),
        }
        .filter(Value::is_object)
    }
}

/// Whether a managedFields entry (JSON) has the identity `key` ([`key_of`]'s).
fn is_entry_of(item: &Value, key: &ManagerKey) -> bool {
    let text = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or("");
    let operation = match text("operation") {
        "Apply" => Operation::Apply,
        "Update" => Operation::Update,
        _ => return false,
    };
    operation == key.operation
        && text("manager") == key.manager
        && text("subresource") == key.subresource
        && (operation == Operation::Apply || text("apiVersion") == key.api_version)
}

/// Stores the entries of `managers` as `metadata.managedFields` of `obj`, in the order the
/// apiserver writes them, or removes the field when there is none (the apiserver sets a nil
/// slice, which JSON omits). A `null` metadata (what pruning leaves of a metadata whose every
/// field went) becomes an object to hold them. Returns the entries' sets in that order: what
/// their FieldsV1 documents hold.
///
/// # Errors
/// [`Error::BadRequest`] when the object or its metadata is not a JSON object, so that the
/// entries would be lost (as the apiserver cannot decode such an object).
pub(crate) fn set_managed_fields(
    obj: &mut Value,
    managers: &ManagedFields,
    times: &Times,
    mut kept: Option<Kept<'_>>,
) -> Result<Vec<Set>, Error> {
    if managers.is_empty() {
        take_managed_fields(obj);
        return Ok(Vec::new());
    }
    let Value::Object(root) = obj else {
        return Err(Error::BadRequest(format!("the object must be a JSON object, not {}", value::kind_name(obj))));
    };
    let meta = root.entry("metadata").or_insert_with(|| Value::Object(serde_json::Map::new()));
    if meta.is_null() {
        *meta = Value::Object(serde_json::Map::new());
    }
    let Value::Object(meta) = meta else {
        return Err(Error::BadRequest(format!("metadata: must be a JSON object, not {}", value::kind_name(meta))));
    };
    // The FieldsV1 documents are kept where their sets are, else built from the sets (not
    // written out as text and parsed again).
    let ordered = ordered(managers, times);
    let mut sets = Vec::with_capacity(ordered.len());
    let list: Vec<Value> = ordered
        .into_iter()
        .map(|(entry, set)| {
            let document = kept.as_mut().and_then(|k| k.document(&key_of(&entry), set));
            sets.push(set.clone());
            entry_value(entry, document.unwrap_or_else(|| fields_v1::to_value(set)))
        })
        .collect();
    meta.insert("managedFields".into(), Value::Array(list));
    Ok(sets)
}

/// `entry` with `document` as its FieldsV1, as the JSON object serde writes for an entry (empty
/// strings and no time left out), built in place rather than through a serializer.
fn entry_value(entry: ManagedFieldsEntry, document: Value) -> Value {
    let ManagedFieldsEntry { manager, operation, api_version, time, fields_type, subresource, .. } = entry;
    let mut m = serde_json::Map::new();
    let mut text = |k: &str, s: String| {
        if !s.is_empty() {
            m.insert(k.to_string(), Value::String(s));
        }
    };
    text("apiVersion", api_version);
    text("fieldsType", fields_type);
    text("manager", manager);
    text("operation", operation.as_str().to_string());
    text("subresource", subresource);
    if let Some(t) = time {
        m.insert("time".into(), Value::String(t));
    }
    m.insert("fieldsV1".into(), document);
    Value::Object(m)
}

/// The identity of an entry (the apiserver's `BuildManagerIdentifier`): an applier keeps one
/// identity whatever version it applied at.
fn key_of(e: &ManagedFieldsEntry) -> ManagerKey {
    let operation = e.operation;
    ManagerKey {
        manager: e.manager.clone(),
        operation,
        api_version: if operation == Operation::Apply { String::new() } else { e.api_version.clone() },
        subresource: e.subresource.clone(),
    }
}

/// A `FieldsV1` document (as a JSON value) as a set, as `fields_v1::from_json` decodes its text,
/// without writing it out and parsing it again.
pub(crate) fn fields_set(v: &Value) -> Result<Set, String> {
    Ok(set_from_value(v, &mut Vec::new(), &mut Names::default())?.0.unwrap_or_default())
}

/// A `FieldsV1` document (as a JSON value) as a set, as `fields_v1::from_json` decodes its text.
/// Field names are shared through `names`, as `from_json` shares them.
fn set_from_value(v: &Value, path: &mut Vec<PathElement>, names: &mut Names) -> Result<(Option<Set>, bool), String> {
    let Value::Object(m) = v else {
        return Err(format!("{}: expected a FieldsV1 object", Path(path.clone())));
    };
    let (mut members, mut children) = (Vec::new(), Vec::new());
    let (mut is_member, mut any) = (false, false);
    for (key, child) in m {
        if key == "." {
            is_member = true;
            continue;
        }
        let Some(pe) = names.element(key).map_err(|e| format!("{}: {e}", Path(path.clone())))? else {
            continue;
        };
        any = true;
        path.push(pe);
        let (sub, member) = set_from_value(child, path, names)?;
        let pe = path.pop().unwrap_or(PathElement::Index(0));
        match (member, sub) {
            (true, Some(c)) => {
                members.push(pe.clone());
                children.push((pe, c));
            }
            (true, None) => members.push(pe),
            (false, Some(c)) => children.push((pe, c)),
            (false, None) => {}
        }
    }
    if !any {
        return Ok((None, true));
    }
    let set = Set::from_parts(members, children);
    let empty = set.members().is_empty() && set.children().is_empty();
    Ok((if empty { None } else { Some(set) }, is_member || empty))
}

/// Whether a non-apply write asks for its managedFields to be reset: exactly one entry, and that
/// entry empty (`[{}]`). Unknown keys are ignored and null or empty values count as unset, as when
/// Go decodes the entry and compares it with the zero `ManagedFieldsEntry`.
///
/// Unlike the apiserver's `isResetManagedFields`, an empty list `[]` does not reset: the
/// Server-Side Apply documentation promises that it does not, so that clients unaware of
/// managedFields never strip them.
pub(crate) fn is_reset(mf: &Value) -> bool {
    let Some([Value::Object(entry)]) = mf.as_array().map(Vec::as_slice) else {
        return false;
    };
    let zero_string = |v: &Value| v.is_null() || v.as_str() == Some("");
    ["manager", "operation", "apiVersion", "fieldsType", "subresource"].iter().all(|k| entry.get(*k).is_none_or(zero_string))
        && ["time", "fieldsV1"].iter().all(|k| entry.get(*k).is_none_or(Value::is_null))
}

/// Decodes managedFields into managers and times.
///
/// # Errors
/// A description of the first invalid entry: what the codec validates, plus the apiserver's
/// requirement of a non-empty apiVersion and a `FieldsV1` document that decodes to a set.
pub(crate) fn decode(mf: &Value) -> Result<Decoded, String> {
    let Value::Array(items) = mf else {
        return Err("managedFields: expected a JSON array of entries".into());
    };
    // The codec validates everything but the FieldsV1 documents, which are read straight from the
    // JSON value rather than written out and parsed again.
    let light: Vec<Value> = items
        .iter()
        .map(|item| match item {
            Value::Object(o) => Value::Object(o.iter().filter(|(k, _)| *k != "fieldsV1").map(|(k, v)| (k.clone(), v.clone())).collect()),
            other => other.clone(),
        })
        .collect();
    let bytes = serde_json::to_vec(&light).map_err(|e| e.to_string())?;
    let entries = managed_fields::decode_entries(&bytes).map_err(|e| e.to_string())?;
    let mut out = Decoded { entries: entries.len(), ..Decoded::default() };
    for (i, (e, item)) in entries.into_iter().zip(items).enumerate() {
        if e.api_version.is_empty() {
            return Err(format!("managedFields[{i}].apiVersion: must not be empty"));
        }
        let set = match item.get("fieldsV1").filter(|v| !v.is_null()) {
            Some(fields) => fields_set(fields).map_err(|err| format!("managedFields[{i}].fieldsV1: {err}"))?,
            None => Set::new(),
        };
        let key = key_of(&e);
        let applied = key.operation == Operation::Apply;
        match e.time {
            Some(t) => out.times.insert(key.clone(), Time::from_canonical(t)),
            None => out.times.remove(&key),
        };
        out.managers.insert(key, VersionedSet::new(set, e.api_version, applied));
    }
    Ok(out)
}

/// A managedFields entry as a store keeps it: its field set already decoded (from a binary
/// form), no JSON in between.
#[cfg(feature = "store")]
#[derive(Clone)]
pub(crate) struct StoredEntry {
    pub manager: String,
    pub operation: Operation,
    pub api_version: String,
    /// RFC 3339, as [`Time::as_str`] writes it; empty when the entry has no time.
    pub time: String,
    pub subresource: String,
    pub set: Set,
}

/// The managers and times of stored entries: what [`decode`] gives for the managedFields JSON
/// these entries are shown as, without that JSON.
///
/// # Errors
/// An entry without an apiVersion, as [`decode`].
#[cfg(feature = "store")]
pub(crate) fn from_stored(stored: Vec<StoredEntry>) -> Result<Decoded, String> {
    let mut out = Decoded { entries: stored.len(), ..Decoded::default() };
    for (i, e) in stored.into_iter().enumerate() {
        if e.api_version.is_empty() {
            return Err(format!("managedFields[{i}].apiVersion: must not be empty"));
        }
        let applied = e.operation == Operation::Apply;
        let key = ManagerKey {
            manager: e.manager,
            operation: e.operation,
            api_version: if applied { String::new() } else { e.api_version.clone() },
            subresource: e.subresource,
        };
        if e.time.is_empty() {
            out.times.remove(&key);
        } else {
            out.times.insert(key.clone(), Time::from_canonical(e.time));
        }
        out.managers.insert(key, VersionedSet::new(e.set, e.api_version, applied));
    }
    Ok(out)
}

/// The managedFields entries of `managers`, in the order the apiserver writes them.
pub(crate) fn encode(managers: &ManagedFields, times: &Times) -> Vec<ManagedFieldsEntry> {
    ordered(managers, times)
        .into_iter()
        .map(|(mut entry, set)| {
            // FieldsV1 text is a JSON object by construction.
            entry.fields_v1 = serde_json::value::RawValue::from_string(fields_v1::to_json_string(set)).ok();
            entry
        })
        .collect()
}

/// The entries of `managers` without their FieldsV1 documents, each with its set, in the order
/// the apiserver writes them.
fn ordered<'m>(managers: &'m ManagedFields, times: &Times) -> Vec<(ManagedFieldsEntry, &'m Set)> {
    let mut entries: Vec<(ManagedFieldsEntry, &Set)> = managers
        .iter()
        .map(|(key, vs)| {
            let operation = if vs.applied { Operation::Apply } else { key.operation };
            let entry = ManagedFieldsEntry {
                manager: key.manager.clone(),
                operation,
                api_version: vs.api_version.clone(),
                time: times.get(key).map(|t| t.as_str().to_string()),
                fields_type: FIELDS_TYPE_V1.to_string(),
                fields_v1: None,
                subresource: key.subresource.clone(),
            };
            (entry, &vs.set)
        })
        .collect();
    entries.sort_by(|a, b| managed_fields::compare_entries(&a.0, &b.0));
    entries
}

/// The apiserver's identifier of a manager (`BuildManagerIdentifier`), which it sorts by.
pub(crate) fn identifier(key: &ManagerKey) -> String {
    managed_fields::manager_identifier(&ManagedFieldsEntry {
        manager: key.manager.clone(),
        operation: key.operation,
        api_version: key.api_version.clone(),
        time: None,
        fields_type: String::new(),
        fields_v1: None,
        subresource: key.subresource.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_v1_values_decode_like_the_text() {
        let golden = r#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:args":{"i:3":{}},"f:containers":{"k:{\"name\":\"nginx\"}":{".":{},"f:image":{},"f:name":{}}},"f:finalizers":{"v:\"a\u003cb\"":{}},"x:unknown":{}}}"#;
        let value: Value = serde_json::from_str(golden).unwrap();
        let set = set_from_value(&value, &mut Vec::new(), &mut Names::default()).unwrap().0.unwrap();
        assert_eq!(set, fields_v1::from_json(golden.as_bytes()).unwrap());
        assert!(set_from_value(&json!({"f:a": []}), &mut Vec::new(), &mut Names::default()).is_err());
    }

    #[cfg(feature = "store")]
    #[test]
    fn stored_entries_decode_as_their_json() {
        let mf = json!([
            {"manager": "a", "operation": "Apply", "apiVersion": "v1", "time": "2024-01-01T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:x": {}}}},
            {"manager": "b", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {".": {}, "f:y": {}}}, "subresource": "status"},
            {"manager": "a", "operation": "Apply", "apiVersion": "v2", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:z": {}}}},
        ]);
        let want = decode(&mf).unwrap();
        let stored = mf
            .as_array()
            .unwrap()
            .iter()
            .map(|e| StoredEntry {
                manager: e["manager"].as_str().unwrap().into(),
                operation: if e["operation"] == "Apply" { Operation::Apply } else { Operation::Update },
                api_version: e["apiVersion"].as_str().unwrap().into(),
                time: e.get("time").and_then(Value::as_str).unwrap_or("").into(),
                subresource: e.get("subresource").and_then(Value::as_str).unwrap_or("").into(),
                set: fields_set(&e["fieldsV1"]).unwrap(),
            })
            .collect();
        let got = from_stored(stored).unwrap();
        assert_eq!((got.managers, got.times, got.entries), (want.managers, want.times, want.entries));
        let no_version = StoredEntry {
            manager: "a".into(),
            operation: Operation::Update,
            api_version: String::new(),
            time: String::new(),
            subresource: String::new(),
            set: Set::new(),
        };
        assert_eq!(from_stored(vec![no_version]).unwrap_err(), "managedFields[0].apiVersion: must not be empty");
    }

    #[test]
    fn reset_is_one_empty_entry() {
        assert!(is_reset(&json!([{}])));
        assert!(is_reset(&json!([{"manager": "", "time": null, "unknown": 1}])));
        assert!(!is_reset(&json!([])));
        assert!(!is_reset(&json!([{}, {}])));
        assert!(!is_reset(&json!([{"fieldsV1": {}}])));
        assert!(!is_reset(&json!([{"manager": "a"}])));
    }

    #[test]
    fn decode_keys_appliers_without_version() {
        let mf = json!([
            {"manager": "a", "operation": "Apply", "apiVersion": "v1", "time": "2024-01-01T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:x": {}}}},
            {"manager": "a", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:y": {}}}},
        ]);
        let d = decode(&mf).unwrap();
        let apply = ManagerKey::apply("a");
        assert_eq!(d.managers[&apply].api_version, "v1");
        assert!(d.managers[&apply].applied);
        assert_eq!(d.times[&apply].as_str(), "2024-01-01T00:00:00Z");
        assert!(!d.times.contains_key(&ManagerKey::update("a", "v1")));
        let entries = encode(&d.managers, &d.times);
        assert_eq!(entries.len(), 2);
        let mut obj = json!({});
        set_managed_fields(&mut obj, &d.managers, &d.times, None).unwrap();
        assert_eq!(obj["metadata"]["managedFields"], mf);
        // The object's entries are the text entries, read as JSON.
        let text: Value = serde_json::from_slice(&managed_fields::encode_entries(&entries)).unwrap();
        assert_eq!(obj["metadata"]["managedFields"], text);
        let err = decode(&json!([{"manager": "a", "operation": "Update", "fieldsType": "FieldsV1"}])).unwrap_err();
        assert_eq!(err, "managedFields[0].apiVersion: must not be empty");
    }

    /// Off while [`documents_kept_are_those_written_again`] writes without keeping documents
    /// (other tests running meanwhile only write theirs again).
    #[cfg(feature = "store")]
    pub(super) static KEEP_DOCUMENTS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

    /// A store's writes that keep the live version's FieldsV1 documents (for entries whose sets
    /// did not change) give the objects they give when every document is written again from its
    /// set: random writes to a Deployment by appliers, updaters sending managedFields back as
    /// read or not at all, merge patches and status updates, on two stores.
    #[cfg(feature = "store")]
    #[test]
    fn documents_kept_are_those_written_again() {
        use crate::store::{Collection, ObjectKey, Options, Store, WriteOptions};
        use rand::{Rng, SeedableRng};
        use std::sync::atomic::Ordering;

        let run = |seed: u64| -> Vec<Value> {
            let dir = tempfile::tempdir().unwrap();
            let s = Store::open(dir.path(), Options::default().sync(false)).unwrap();
            let deployments = Collection::new("deployments.apps", Some("ns"));
            let key = ObjectKey::new("deployments.apps", Some("ns"), "web");
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let config = |rng: &mut rand::rngs::StdRng| {
                let mut labels = serde_json::Map::new();
                for i in 0..3 {
                    if rng.gen_bool(0.5) {
                        labels.insert(format!("l{i}"), json!(format!("v{}", rng.gen_range(0..2))));
                    }
                }
                let mut c = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "labels": labels},
                    "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}},
                        "spec": {"containers": [{"name": "web", "image": format!("nginx:1.{}", rng.gen_range(0..3))}]}}}});
                if rng.gen_bool(0.5) {
                    c["spec"]["replicas"] = json!(rng.gen_range(1..4));
                }
                c
            };
            let mut out = Vec::new();
            let first = config(&mut rng);
            out.push(s.apply(&deployments, &first, &WriteOptions::new("alice")).unwrap());
            for _ in 0..40 {
                let written = match rng.gen_range(0..6) {
                    0 | 1 => {
                        let who = if rng.gen_bool(0.5) { "alice" } else { "bob" };
                        s.apply(&deployments, &config(&mut rng), &WriteOptions::new(who).force(true))
                    }
                    2 | 3 => {
                        let mut v = s.get(&key, &Default::default()).unwrap();
                        v["spec"]["replicas"] = json!(rng.gen_range(1..4));
                        if rng.gen_bool(0.5) {
                            v["metadata"]["labels"][format!("l{}", rng.gen_range(0..4))] = json!("u");
                        }
                        if rng.gen_bool(0.3) {
                            v["metadata"].as_object_mut().unwrap().remove("managedFields");
                        }
                        let who = if rng.gen_bool(0.5) { "ctl" } else { "ctl2" };
                        s.update(&deployments, &v, &WriteOptions::new(who))
                    }
                    4 => {
                        let patch = json!({"metadata": {"labels": {format!("l{}", rng.gen_range(0..4)): "p"}}});
                        s.patch(&key, crate::patch::PatchType::Merge, &patch, &WriteOptions::new("patcher"))
                    }
                    _ => {
                        let mut v = s.get(&key, &Default::default()).unwrap();
                        v["status"] = json!({"replicas": rng.gen_range(0..4), "observedGeneration": 1});
                        s.update(&deployments, &v, &WriteOptions::new("kcm").status(true))
                    }
                };
                out.push(written.unwrap());
            }
            out.into_iter().map(comparable).collect()
        };
        for seed in 0..8 {
            let kept = run(seed);
            KEEP_DOCUMENTS.store(false, Ordering::SeqCst);
            let written_again = run(seed);
            KEEP_DOCUMENTS.store(true, Ordering::SeqCst);
            for (i, (a, b)) in kept.iter().zip(&written_again).enumerate() {
                assert_eq!(a, b, "seed {seed}, write {i}");
            }
        }
    }

    /// A written object without what differs between two stores doing the same writes: uid,
    /// times, and so the order of managedFields entries.
    #[cfg(feature = "store")]
    fn comparable(mut v: Value) -> Value {
        let meta = v["metadata"].as_object_mut().unwrap();
        meta.remove("uid");
        meta.remove("creationTimestamp");
        if let Some(entries) = meta.get_mut("managedFields").and_then(Value::as_array_mut) {
            for e in entries.iter_mut() {
                e.as_object_mut().unwrap().remove("time");
            }
            entries.sort_by_key(|e| {
                (e["manager"].as_str().unwrap_or_default().to_string(), e["operation"].to_string(), e["subresource"].to_string())
            });
        }
        v
    }
}
