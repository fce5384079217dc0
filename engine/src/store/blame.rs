//! Field-level history in the store: one record per write of an object, kept independently of
//! MVCC compaction, and the queries over it — `blame`, `field_history` and `object_at`.
//!
//! Records live in the `history` column family under the object's version key
//! (`object prefix ‖ !revision`), newest first, and are written in the batch of the write they
//! describe. See `engine/STORAGE.md` for the record layout and retention.

use super::address::{ObjectKey, Revision};
use super::core::Core;
use super::history_record::Record;
use super::keys::{self, EventType, CF_HISTORY, CF_OBJECTS};
use super::kv::Flow;
use super::{object, Registered, Store};
use crate::history::{self, ChangeKind, FieldChange, StoredValue};
use crate::typed::to_field_set;
use crate::{Error, Result};
use fieldstore_codec::rfc3339;
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;

/// Who made a change and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Attribution {
    /// The revision of the write.
    pub revision: Revision,
    /// When, RFC 3339 (seconds).
    pub time: String,
    /// Milliseconds since the Unix epoch.
    pub unix_millis: u64,
    /// The field manager (empty for deletes).
    pub manager: String,
    /// `Apply`, `Update` or `Delete`.
    pub operation: String,
    /// The subresource written through (`status`), empty for the main resource.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub subresource: String,
}

/// One leaf field of an object with its last change.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BlameLine {
    /// The field, as Kubernetes prints paths.
    pub path: String,
    /// Where it is in the object, as an RFC 6901 JSON pointer (`/spec/containers/1/image`).
    pub pointer: String,
    /// Its current value.
    pub value: Value,
    /// The last write that set it (`revision`, `time`, `manager`, `operation`, … flattened
    /// into the line); absent when that write is older than the history kept.
    #[serde(flatten)]
    pub last_change: Option<Attribution>,
    /// The managers owning the field now (from managedFields).
    pub owners: Vec<String>,
}

/// One change of one field, as a timeline lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldEvent {
    /// Who and when.
    #[serde(flatten)]
    pub by: Attribution,
    /// The object's uid at that write (a recreated object has a new one).
    pub uid: String,
    /// The field.
    pub path: String,
    /// `added`, `modified` or `removed`.
    pub change: ChangeKind,
    /// The value before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<Value>,
    /// The value after.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<Value>,
    /// What an administrative write did, if it was one.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub note: String,
}

/// A page of a field's timeline.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldTimeline {
    /// Newest first.
    pub events: Vec<FieldEvent>,
    /// Pass as `before_revision` for the next page; `None` on the last page.
    pub next_before_revision: Option<Revision>,
}

/// One write of an object, as its log lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WriteEntry {
    /// Who and when.
    #[serde(flatten)]
    pub by: Attribution,
    /// The object's uid at that write.
    pub uid: String,
    /// `ADDED`, `MODIFIED` or `DELETED`.
    pub event: String,
    /// How many leaf fields it changed.
    pub changed_fields: usize,
    /// What an administrative write did (`renamed manager "a" to "b"`), if it was one.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub note: String,
}

/// Options of [`Store::field_history`].
#[derive(Debug, Clone, Default)]
pub struct HistoryQuery {
    /// Only changes at revisions below this one (paging; `None`: from the newest).
    pub before_revision: Option<Revision>,
    /// Only changes at or after this revision.
    pub since_revision: Option<Revision>,
    /// At most this many events (default 100).
    pub limit: Option<usize>,
    /// Only this incarnation of the object (`None`: every one).
    pub uid: Option<String>,
}

fn attribution(revision: u64, r: &Record) -> Attribution {
    let secs = i64::try_from(r.unix_millis / 1000).unwrap_or(0);
    Attribution {
        revision: Revision(revision),
        time: rfc3339::format(secs),
        unix_millis: r.unix_millis,
        manager: r.manager.clone(),
        operation: r.operation.clone(),
        subresource: r.subresource.clone(),
    }
}

impl Core {
    /// Visits the history records of an object, newest first, starting below `before` (a
    /// revision; `u64::MAX` for all).
    /// A create's record comes with its changes derived ([`Record::expand`], by `t`'s schema).
    fn history_scan(&self, t: &Registered, prefix: &[u8], before: u64, f: &mut dyn FnMut(u64, Record) -> Result<Flow>) -> Result<()> {
        let end = keys::prefix_end(prefix);
        let start = keys::object_key(prefix, before.saturating_sub(1));
        self.kv.scan(CF_HISTORY, &start, end.as_deref(), &mut |k, v| {
            let rev = keys::parse_object_key(k)?.revision;
            let mut r = Record::decode(v)?;
            if r.body_in_object {
                r.created = self.created_body(k)?;
            }
            r.expand(t)?;
            f(rev, r)
        })
    }

    /// The body of the create whose history record is at `key` and leaves it to the object
    /// record of the same key; should compaction have taken that version since the record was
    /// read, the body it copied into the record.
    fn created_body(&self, key: &[u8]) -> Result<Option<String>> {
        if let Some(record) = self.kv.get(CF_OBJECTS, key)? {
            return object::history_body(&record).map(Some);
        }
        Ok(match self.kv.get(CF_HISTORY, key)? {
            Some(h) => Record::decode(&h)?.created,
            None => None,
        })
    }
}

impl Store {
    /// Every leaf field of the object with the last write that changed it, in field order —
    /// the object annotated like `git blame`. Inside associative lists and sets each keyed item
    /// and member is its own line.
    ///
    /// # Errors
    /// [`Error::NotFound`] when the object does not exist.
    pub fn blame(&self, key: &ObjectKey) -> Result<Vec<BlameLine>> {
        let t = self.resolve_history(&key.resource)?;
        let ns = self.scope(&t, key.ns(), &Value::Null)?;
        let name = key.name.as_str();
        let mut obj = self.get(key, &Default::default())?;
        let saved = history::take_untracked(&mut obj);
        let uid = obj.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or("").to_string();
        let leaves = to_field_set(t.schema, t.root, &obj).map_err(Error::Invalid)?.leaves();
        let resolved = crate::history::resolve_paths(&obj, &leaves);
        let mut lines: Vec<BlameLine> = resolved
            .into_iter()
            .map(|(path, pointer, value)| BlameLine { path, pointer, value: value.clone(), last_change: None, owners: Vec::new() })
            .collect();
        let mut index: HashMap<String, usize> = lines.iter().enumerate().map(|(i, l)| (l.path.clone(), i)).collect();
        // Owners from managedFields.
        if let Some(Value::Array(entries)) = saved[0].as_ref().map(|(_, v)| v) {
            for e in entries {
                let Some(manager) = e.get("manager").and_then(Value::as_str) else { continue };
                let Some(fields) = e.get("fieldsV1") else { continue };
                let Ok(set) = crate::fieldmanager::fields_set(fields) else { continue };
                set.leaves().iterate(|p| {
                    if let Some(&i) = index.get(&p.to_string()) {
                        if !lines[i].owners.iter().any(|o| o == manager) {
                            lines[i].owners.push(manager.to_string());
                        }
                    }
                });
            }
        }
        let prefix = keys::object_prefix(t.id, &ns, name);
        self.core().history_scan(&t, &prefix, u64::MAX, &mut |rev, r| {
            if r.uid != uid {
                return Ok(Flow::Stop);
            }
            for c in &r.changes {
                if c.kind == ChangeKind::Removed {
                    continue;
                }
                if let Some(i) = index.remove(&c.path) {
                    lines[i].last_change = Some(attribution(rev, &r));
                }
            }
            Ok(if index.is_empty() { Flow::Stop } else { Flow::Continue })
        })?;
        Ok(lines)
    }

    /// The timeline of one field or subtree (`path` as Kubernetes prints it; `""` or `"."`
    /// for the whole object), newest first, paged.
    ///
    /// # Errors
    /// [`Error::NotFound`] for an unknown resource, or an object that neither exists nor has a
    /// write in history; [`Error::BadRequest`] for a namespace error.
    pub fn field_history(&self, key: &ObjectKey, path: &str, query: &HistoryQuery) -> Result<FieldTimeline> {
        let t = self.resolve_history(&key.resource)?;
        let ns = self.scope(&t, key.ns(), &Value::Null)?;
        let prefix = keys::object_prefix(t.id, &ns, &key.name);
        let limit = query.limit.unwrap_or(100).max(1);
        let since = query.since_revision.map_or(0, |r| r.0);
        let mut events = Vec::new();
        let mut next = None;
        self.core().history_scan(&t, &prefix, query.before_revision.map_or(u64::MAX, |r| r.0), &mut |rev, r| {
            if rev < since {
                return Ok(Flow::Stop);
            }
            if query.uid.as_ref().is_some_and(|u| *u != r.uid) {
                return Ok(Flow::Continue);
            }
            let matching: Vec<&FieldChange> = r.changes.iter().filter(|c| history::path_matches(&c.path, path)).collect();
            if matching.is_empty() {
                return Ok(Flow::Continue);
            }
            if events.len() >= limit {
                next = Some(rev + 1);
                return Ok(Flow::Stop);
            }
            for c in matching {
                events.push(FieldEvent {
                    by: attribution(rev, &r),
                    uid: r.uid.clone(),
                    path: c.path.clone(),
                    change: c.kind,
                    before: c.before.as_ref().map(StoredValue::to_json),
                    after: c.after.as_ref().map(StoredValue::to_json),
                    note: r.note.clone(),
                });
            }
            Ok(Flow::Continue)
        })?;
        if events.is_empty() {
            self.known(&t, key, &prefix)?;
        }
        Ok(FieldTimeline { events, next_before_revision: next.map(Revision) })
    }

    /// Fails with [`Error::NotFound`] unless the object exists or history holds a write of it
    /// (a deleted object's history stays readable): the log or timeline of an object that never
    /// was is not an empty one.
    fn known(&self, t: &Registered, key: &ObjectKey, prefix: &[u8]) -> Result<()> {
        let mut any = false;
        self.core().history_scan(t, prefix, u64::MAX, &mut |_, _| {
            any = true;
            Ok(Flow::Stop)
        })?;
        if any {
            return Ok(());
        }
        self.get(key, &Default::default()).map(|_| ())
    }

    /// Every write of the object that history still holds, newest first (at most `limit`):
    /// who, when, what kind of write, and how many fields it changed.
    ///
    /// # Errors
    /// [`Error::NotFound`] for an unknown resource, or an object that neither exists nor has a
    /// write in history.
    pub fn object_log(&self, key: &ObjectKey, limit: Option<usize>) -> Result<Vec<WriteEntry>> {
        let t = self.resolve_history(&key.resource)?;
        let ns = self.scope(&t, key.ns(), &Value::Null)?;
        let prefix = keys::object_prefix(t.id, &ns, &key.name);
        let limit = limit.unwrap_or(usize::MAX);
        let mut out = Vec::new();
        self.core().history_scan(&t, &prefix, u64::MAX, &mut |rev, r| {
            out.push(WriteEntry {
                by: attribution(rev, &r),
                uid: r.uid.clone(),
                event: r.event().as_str().to_string(),
                changed_fields: r.changes.len(),
                note: r.note,
            });
            Ok(if out.len() >= limit { Flow::Stop } else { Flow::Continue })
        })?;
        if out.is_empty() {
            self.get(key, &Default::default())?;
        }
        Ok(out)
    }

    /// The object as it was at `revision`: from its MVCC version when still kept, otherwise
    /// rebuilt from field history (exact for every revision history still covers; rebuilt
    /// objects carry no managedFields). `None` when the object did not exist then.
    ///
    /// # Errors
    /// [`Error::Expired`] when neither versions nor history reach back to `revision`;
    /// [`Error::TooLargeResourceVersion`] for a future revision.
    pub fn object_at(&self, key: &ObjectKey, revision: Revision) -> Result<Option<Value>> {
        let Revision(revision) = revision;
        let t = self.resolve_history(&key.resource)?;
        let ns = self.scope(&t, key.ns(), &Value::Null)?;
        let name = key.name.as_str();
        self.core().wait_for(revision)?;
        let prefix = keys::object_prefix(t.id, &ns, name);
        let core = self.core();
        if let Some((rev, rec)) = core.version_at(&prefix, revision)? {
            // Compaction keeps the newest version at or before the compacted revision, so a
            // version found at or before `revision` is the state there.
            return if object::is_tombstone(&rec) { Ok(None) } else { object::decode(&rec, rev).map(Some) };
        }
        if revision >= core.compacted.load(std::sync::atomic::Ordering::SeqCst) {
            return Ok(None);
        }
        // The oldest surviving version after `revision` (or none), then undo history down to it.
        let mut start: Option<(u64, Vec<u8>)> = None;
        let end = keys::prefix_end(&prefix);
        core.kv.scan(CF_OBJECTS, &prefix, end.as_deref(), &mut |k, v| {
            start = Some((keys::parse_object_key(k)?.revision, v.to_vec()));
            Ok(Flow::Continue)
        })?;
        let (from, mut state) = match start {
            Some((rev, rec)) if !object::is_tombstone(&rec) => {
                let mut v = object::decode(&rec, rev)?;
                history::take_untracked(&mut v);
                (rev, Some(v))
            }
            Some((rev, _)) => (rev, None),
            None => (u64::MAX, None),
        };
        let mut reached = false;
        let mut last_write = None;
        let mut broken = None;
        core.history_scan(&t, &prefix, from.saturating_add(1), &mut |rev, r| {
            if rev <= revision {
                reached = true;
                last_write = Some(rev);
                return Ok(Flow::Stop);
            }
            state = match (r.event(), state.take()) {
                (EventType::Added, _) => None,
                (_, cur) => match (&r.undo, &r.prev, cur) {
                    (_, Some(prev), _) => Some(serde_json::from_str(prev).map_err(|e| Error::Corrupt(format!("history record: {e}")))?),
                    (Some(undo), None, Some(mut cur)) => {
                        if !undo.apply(&mut cur, &r.changes) {
                            broken = Some(rev);
                            return Ok(Flow::Stop);
                        }
                        Some(cur)
                    }
                    _ => {
                        broken = Some(rev);
                        return Ok(Flow::Stop);
                    }
                },
            };
            if r.event() == EventType::Added {
                // Before a create the object did not exist; an older incarnation may have.
                reached = true;
            }
            Ok(Flow::Continue)
        })?;
        if let Some(rev) = broken {
            return Err(Error::Corrupt(format!("history of {name} cannot be undone at revision {rev}")));
        }
        if !reached {
            return Err(Error::Expired(format!("too old resource version: {revision} is older than the history kept for {name}")));
        }
        if let (Some(Value::Object(root)), Some(rv)) = (state.as_mut(), last_write) {
            if let Some(Value::Object(m)) = root.get_mut("metadata") {
                m.insert("resourceVersion".into(), Value::String(rv.to_string()));
            }
        }
        Ok(state)
    }
}
