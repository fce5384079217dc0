//! Objects, not blobs: an etcd write of a key under kube-apiserver's prefix ([`REGISTRY`])
//! whose value holds an object of a registered type is also written as that object's version,
//! at the same revision and in the same batch — its record in `objects`, its history record
//! and its owner index changes — so `blame`, field timelines, `at` reads and the owner index
//! see what kube-apiserver wrote. The `etcd` column family stays what etcd reads answer from
//! (byte-identical by construction); a value that holds no object (an allocator's bitmap, a
//! master lease), or an object of no registered type, is a value only.
//!
//! A write's manager is the one whose managedFields entry it changed (added, or a new `time`,
//! operation or field set): kube-apiserver stamps the entry of the manager that made a change.
//! A delete of such a key writes the object's tombstone. A CustomResourceDefinition's value
//! registers the type it defines, so its custom resources' values are objects too; the delete
//! of its key (kube-apiserver's last step, once its custom resources are deleted) retires the
//! type: no longer served by the store's own APIs, its objects' history kept.

use super::super::core::Core;
use super::super::definitions::{self, Registration};
use super::super::history_record::{self, Who};
use super::super::keys::{self, EventType, CF_HISTORY, CF_OBJECTS};
use super::super::kv::Batch;
use super::super::recent::Recent;
use super::super::types::{Registered, TypeSpec};
use super::super::{object, owner_index};
use super::registry_value::object_of_value;
use super::KeyEvent;
use crate::merge::Operation;
use crate::Result;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// kube-apiserver's key prefix (its `--etcd-prefix` default) with its separator.
pub const REGISTRY: &[u8] = b"/registry/";

/// The note of a write whose manager no managedFields entry names.
pub(crate) const UNATTRIBUTED: &str = "written through the etcd API";

/// The latest version of an object, as the group's earlier writes left it.
struct Latest {
    live: Option<Value>,
    entries: Vec<object::EntryFields>,
}

/// The object writes of a group of etcd jobs: what each object is at, and the types
/// definitions register once the batch is durable.
#[derive(Default)]
pub(crate) struct Mirror {
    latest: HashMap<Vec<u8>, Latest>,
    /// Objects written, with the revision and whether a tombstone (for the committer's memory).
    written: Vec<(Vec<u8>, u64, bool)>,
    registrations: Vec<Registration>,
}

/// An object a value holds, with its registered type and the prefix of its versions.
struct Addressed {
    t: Arc<Registered>,
    prefix: Vec<u8>,
    object: Value,
}

/// The object `value` of `key` holds, when the key is under [`REGISTRY`], ends with the
/// object's `[namespace/]name` and the object's type is registered.
fn addressed(core: &Core, key: &[u8], value: &[u8]) -> Option<Addressed> {
    if !key.starts_with(REGISTRY) {
        return None;
    }
    let object = object_of_value(value).ok()?;
    let s = |k: &str| object.get(k).and_then(Value::as_str).unwrap_or("");
    let (api_version, kind) = (s("apiVersion"), s("kind"));
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let t = core.registry.read().first(|t| t.kind == kind && t.group == group && t.served_versions().iter().any(|v| v == version))?.clone();
    let name = object.pointer("/metadata/name").and_then(Value::as_str)?;
    let ns = if t.spec.namespaced { object.pointer("/metadata/namespace").and_then(Value::as_str).filter(|n| !n.is_empty())? } else { "" };
    let tail = if ns.is_empty() { format!("/{name}") } else { format!("/{ns}/{name}") };
    if !key.ends_with(tail.as_bytes()) {
        return None;
    }
    let prefix = keys::object_prefix(t.id, ns, name);
    Some(Addressed { t, prefix, object })
}

/// The type `crd` (a definition whose key kube-apiserver deleted, once its custom resources were
/// deleted) defines, retired: no longer served, its objects' history still readable — as the
/// store retires a type whose definition it deletes itself.
fn retired(core: &Core, crd: &Value) -> Option<Registered> {
    let s = |p: &str| crd.pointer(p).and_then(Value::as_str).unwrap_or_default();
    let t = core.registry.read().get(&format!("{}.{}", s("/spec/names/plural"), s("/spec/group"))).cloned()?;
    let mut spec = t.spec.clone();
    spec.retired = true;
    spec.terminating = false;
    Registered::compile(t.id, spec).ok()
}

/// Who made the write from `before`'s managedFields to `after`'s: the manager of the entry it
/// added or stamped with a new `time` (the newest when several; an entry whose fields alone
/// changed lost them to the writer), or no one ([`UNATTRIBUTED`]).
pub(crate) fn writer(before: Option<&Value>, after: Option<&Value>) -> Who {
    let entries = |v: Option<&Value>| -> Vec<Value> {
        v.and_then(|v| v.pointer("/metadata/managedFields")).and_then(Value::as_array).cloned().unwrap_or_default()
    };
    let s = |e: &Value, k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let old = entries(before);
    let same_entry = |a: &Value, b: &Value| ["manager", "operation", "subresource"].iter().all(|k| s(a, k) == s(b, k));
    // Each changed entry ranked: stamped (new, or a new time) before changed fields only (a
    // manager that lost fields to the writer), then by time (the last of equals).
    let changed = entries(after).into_iter().filter_map(|e| {
        let before = old.iter().find(|o| same_entry(o, &e));
        let stamped = before.is_none_or(|o| s(o, "time") != s(&e, "time"));
        (before != Some(&e)).then(|| ((stamped, s(&e, "time")), e))
    });
    match changed.max_by(|a, b| a.0.cmp(&b.0)).map(|(_, e)| e) {
        Some(e) => Who {
            manager: s(&e, "manager"),
            operation: Some(if s(&e, "operation") == "Apply" { Operation::Apply } else { Operation::Update }),
            subresource: s(&e, "subresource"),
            note: String::new(),
        },
        None => Who { manager: String::new(), operation: Some(Operation::Update), subresource: String::new(), note: UNATTRIBUTED.into() },
    }
}

/// The latest version of the object at `prefix`: the group's, or the database's.
fn latest_of<'m>(latest: &'m mut HashMap<Vec<u8>, Latest>, core: &Core, prefix: &[u8]) -> Result<&'m mut Latest> {
    if !latest.contains_key(prefix) {
        let found = core.newest_at(prefix, u64::MAX, |rev, rec| -> Result<Latest> {
            if object::is_tombstone(rec) {
                return Ok(Latest { live: None, entries: Vec::new() });
            }
            Ok(Latest { live: Some(object::decode(rec, rev)?), entries: object::entry_fields(rec)? })
        })?;
        let l = match found {
            Some((_, l)) => l?,
            None => Latest { live: None, entries: Vec::new() },
        };
        latest.insert(prefix.to_vec(), l);
    }
    latest.get_mut(prefix).ok_or_else(|| crate::Error::Corrupt("object mirror".into()))
}

impl Mirror {
    /// Adds to `batch` the object writes of one job's events, at revision `rev`. A value that
    /// holds no object of a registered type is skipped; so is an object the store cannot keep
    /// (too large, not encodable): the etcd key is written either way.
    pub(crate) fn add(&mut self, core: &Core, events: &[KeyEvent], rev: u64, batch: &mut Batch) {
        for e in events {
            let value = if e.deleted { e.prev.as_ref().map(|p| p.value.as_slice()) } else { Some(e.kv.value.as_slice()) };
            let Some(a) = value.and_then(|v| addressed(core, &e.kv.key, v)) else { continue };
            // The object cannot be read (storage failing): the key is written all the same.
            let _ = self.write(core, a, e.deleted, rev, batch);
        }
    }

    fn write(&mut self, core: &Core, a: Addressed, deleted: bool, rev: u64, batch: &mut Batch) -> Result<()> {
        let Addressed { t, prefix, mut object } = a;
        let encoding = if core.options.protobuf_storage { object::BodyEncoding::Protobuf } else { object::BodyEncoding::Json };
        let latest = latest_of(&mut self.latest, core, &prefix)?;
        if deleted && latest.live.is_none() {
            return Ok(());
        }
        let mut last = if deleted { latest.live.clone() } else { None };
        let version = last.as_mut().unwrap_or(&mut object);
        if let Some(Value::Object(m)) = version.get_mut("metadata") {
            m.remove("resourceVersion");
        }
        let previous = object::Previous {
            managed_fields: latest.live.as_ref().and_then(|l| l.pointer("/metadata/managedFields")),
            entries: &latest.entries,
            decoded: &[],
            written: &[],
        };
        let Ok(object::Encoded { mut record, entries, .. }) = object::encode_with_entries(version, deleted, Some(previous), encoding)
        else {
            return Ok(());
        };
        if record.len() > core.options.max_object_bytes {
            return Ok(());
        }
        let event = match (&latest.live, deleted) {
            (_, true) => EventType::Deleted,
            (None, false) => EventType::Added,
            (Some(_), false) => EventType::Modified,
        };
        let who = if deleted {
            Who { manager: String::new(), operation: None, subresource: String::new(), note: String::new() }
        } else {
            writer(latest.live.as_ref(), Some(&*version))
        };
        if core.options.owner_index {
            batch.ops.extend(owner_index::index_ops(t.id, &prefix, &latest.entries, if deleted { &[] } else { &entries })?);
        }
        if t.spec.history.enabled {
            // A create's history record leaves its body to the object record.
            if latest.live.is_none() && !deleted {
                object::mark_created(&mut record);
            }
            let mut live = latest.live.clone();
            let h = history_record::of_write(&t, &who, event, deleted, live.as_mut(), version);
            batch.put(CF_HISTORY, keys::object_key(&prefix, rev), h);
        }
        batch.put(CF_OBJECTS, keys::object_key(&prefix, rev), record);
        if t.spec.resource() == definitions::CRDS {
            let compiled = if deleted {
                retired(core, version)
            } else {
                TypeSpec::from_crd(version).ok().and_then(|spec| Registered::compile(0, spec).ok())
            };
            if let Some(r) = compiled.and_then(|c| Registration::of(core, c).ok()) {
                r.add_to(batch);
                self.registrations.push(r);
            }
        }
        *latest = if deleted { Latest { live: None, entries: Vec::new() } } else { Latest { live: Some(object), entries } };
        self.written.push((prefix, rev, deleted));
        Ok(())
    }

    /// Once the group's batch is durable: the types its definitions define are served, and the
    /// committer remembers the objects written (an object write that read an older version is
    /// then stale).
    pub(in crate::store) fn settle(self, core: &Core, recent: &mut Recent) {
        for r in self.registrations {
            r.register(core);
        }
        for (prefix, rev, tombstone) in &self.written {
            recent.record(prefix, *rev, *tombstone);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn with(entries: Value) -> Value {
        json!({"metadata": {"managedFields": entries}})
    }

    #[test]
    fn the_writer_is_the_manager_whose_entry_changed() {
        let first = json!({"manager": "kubectl-client-side-apply", "operation": "Update", "time": "2026-01-01T00:00:00Z", "fieldsV1": {"f:data": {"f:a": {}}}});
        let before = with(json!([first]));
        let edited =
            json!({"manager": "editor", "operation": "Update", "time": "2026-01-01T00:01:00Z", "fieldsV1": {"f:data": {"f:b": {}}}});
        let w = writer(Some(&before), Some(&with(json!([first, edited]))));
        assert_eq!((w.manager.as_str(), w.operation, w.note.as_str()), ("editor", Some(Operation::Update), ""));
        // The first write: its one entry.
        let w = writer(None, Some(&before));
        assert_eq!(w.manager, "kubectl-client-side-apply");
        // An apply that moved the entry's time.
        let applied = json!({"manager": "kubectl", "operation": "Apply", "time": "2026-01-01T00:02:00Z", "fieldsV1": {}});
        let mut again = applied.clone();
        again["time"] = json!("2026-01-01T00:03:00Z");
        let w = writer(Some(&with(json!([first, applied]))), Some(&with(json!([first, again]))));
        assert_eq!((w.manager.as_str(), w.operation), ("kubectl", Some(Operation::Apply)));
        // Same second: the stamped entry, not the one that lost a field to it.
        let patched =
            json!({"manager": "kubectl-patch", "operation": "Update", "time": "2026-01-01T00:00:00Z", "fieldsV1": {"f:data": {"f:b": {}}}});
        let mut lost = first.clone();
        lost["fieldsV1"] = json!({"f:data": {"f:a": {}}});
        let w = writer(Some(&before), Some(&with(json!([patched, lost]))));
        assert_eq!(w.manager, "kubectl-patch");
        // No entry changed: no one, said so.
        let w = writer(Some(&before), Some(&before));
        assert_eq!((w.manager.as_str(), w.note.as_str()), ("", UNATTRIBUTED));
    }
}
