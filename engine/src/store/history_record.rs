//! History records: what one write changed, computed on the writer's thread and stored in the
//! batch of the write (column family `history`, see `engine/STORAGE.md`).

use super::keys::EventType;
use crate::history::{self, FieldChange, Undo, UndoOp};
use crate::merge::Operation;
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One write as history records it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Record {
    pub uid: String,
    pub unix_millis: u64,
    pub manager: String,
    pub operation: String,
    pub subresource: String,
    pub event: u8,
    /// What an administrative write did (`renamed manager "a" to "b"`), empty otherwise.
    pub note: String,
    pub changes: Vec<FieldChange>,
    pub undo: Option<Undo>,
    /// The previous body (compact JSON, without managedFields and resourceVersion) when the
    /// write deleted the object or no exact undo exists.
    pub prev: Option<String>,
    /// The body a create wrote (compact JSON, without managedFields and resourceVersion): the
    /// object is the change, so the write computes no diff; its `changes` (every leaf added)
    /// are derived when history is read ([`Record::expand`]). Since format 5 a create's record
    /// leaves it out: the object record of the same key holds it ([`Record::body_in_object`])
    /// until compaction removes that version, which first copies the body here.
    pub created: Option<String>,
    /// Whether this create's body is the object record's of the same key (a format-5 create
    /// record without `created`; not encoded).
    #[serde(skip)]
    pub body_in_object: bool,
}

/// Format 1: records without `created` (written before format 2; still read).
#[derive(Serialize, Deserialize)]
struct RecordV1 {
    uid: String,
    unix_millis: u64,
    manager: String,
    operation: String,
    subresource: String,
    event: u8,
    note: String,
    changes: Vec<FieldChange>,
    undo: Option<Undo>,
    prev: Option<String>,
}

/// Format 5: bincode with variable-length integers (lengths and tags take a byte or two, not
/// eight and four), whose undo may refer to its changes' old values ([`UndoOp::Before`]) and
/// whose create records may leave the body to the object record ([`Record::body_in_object`]).
/// Format 4 is the same encoding whose creates always hold their body; format 3 the same
/// without undo references; format 2 the same record with bincode's fixed-width integers.
const RECORD_FORMAT: u8 = 5;

/// The bincode options of formats 3 to 5: variable-length integers, little-endian, no trailing bytes.
fn format3() -> impl bincode::Options {
    bincode::DefaultOptions::new()
}

impl Record {
    pub(crate) fn encode(&self) -> Vec<u8> {
        use bincode::Options as _;
        // An upper bound of the encoded size (bincode's own sizing walks the record a second
        // time), so that encoding writes into one allocation.
        let mut out = Vec::with_capacity(self.size_bound());
        out.push(RECORD_FORMAT);
        // bincode of plain data cannot fail.
        let _ = format3().serialize_into(&mut out, self);
        out
    }

    /// At least the bytes [`Record::encode`] writes: each string's bytes and up to 9 bytes of
    /// length, each integer or tag up to 9 bytes.
    fn size_bound(&self) -> usize {
        fn text(s: &str) -> usize {
            s.len() + 9
        }
        fn stored(v: Option<&history::StoredValue>) -> usize {
            match v {
                Some(history::StoredValue::Inline(s)) => 18 + s.len(),
                Some(history::StoredValue::Digest { sha256, .. }) => 27 + sha256.len(),
                None => 1,
            }
        }
        fn steps(s: &[history::Step]) -> usize {
            9 + s.iter().map(|s| 9 + if let history::Step::Field(n) = s { text(n) } else { 0 }).sum::<usize>()
        }
        let fixed =
            1 + [&self.uid, &self.manager, &self.operation, &self.subresource, &self.note].map(|s| text(s)).iter().sum::<usize>() + 9 + 1;
        let changes =
            9 + self.changes.iter().map(|c| text(&c.path) + 9 + stored(c.before.as_ref()) + stored(c.after.as_ref())).sum::<usize>();
        let undo = 10
            + self.undo.as_ref().map_or(0, |u| {
                u.ops
                    .iter()
                    .map(|op| {
                        9 + match op {
                            UndoOp::Remove(s) => steps(s),
                            UndoOp::Insert(s, json) | UndoOp::Set(s, json) => steps(s) + text(json),
                            UndoOp::Before(s, _) => steps(s) + 9,
                        }
                    })
                    .sum()
            });
        let bodies = [&self.prev, &self.created].map(|b| 1 + b.as_deref().map_or(0, text)).iter().sum::<usize>();
        fixed + changes + undo + bodies
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<Self> {
        use bincode::Options as _;
        let corrupt = |e: bincode::Error| Error::Corrupt(format!("history record: {e}"));
        match bytes.split_first() {
            Some((&RECORD_FORMAT, rest)) => {
                let mut r: Record = format3().deserialize(rest).map_err(corrupt)?;
                r.body_in_object = r.event == 1 && r.created.is_none();
                Ok(r)
            }
            Some((3 | 4, rest)) => format3().deserialize(rest).map_err(corrupt),
            Some((2, rest)) => bincode::deserialize(rest).map_err(corrupt),
            Some((1, rest)) => {
                let v: RecordV1 = bincode::deserialize(rest).map_err(corrupt)?;
                Ok(Record {
                    uid: v.uid,
                    unix_millis: v.unix_millis,
                    manager: v.manager,
                    operation: v.operation,
                    subresource: v.subresource,
                    event: v.event,
                    note: v.note,
                    changes: v.changes,
                    undo: v.undo,
                    prev: v.prev,
                    created: None,
                    body_in_object: false,
                })
            }
            _ => Err(Error::Corrupt("unknown history record format".into())),
        }
    }

    /// A create's `changes` from its `created` body (a no-op for other records): every leaf of
    /// the object, added, as the diff from nothing would have recorded them.
    ///
    /// # Errors
    /// [`Error::Corrupt`] when the body is not JSON.
    pub(crate) fn expand(&mut self, t: &super::types::Registered) -> Result<()> {
        let Some(body) = self.created.take() else { return Ok(()) };
        let after: Value = serde_json::from_str(&body).map_err(|e| Error::Corrupt(format!("history record: {e}")))?;
        if let Ok(d) = history::diff(t.schema, t.root, None, Some(&after), t.spec.history.inline_limit) {
            self.changes = d.changes;
        }
        Ok(())
    }

    /// The event the write was.
    pub(super) fn event(&self) -> EventType {
        match self.event {
            1 => EventType::Added,
            3 => EventType::Deleted,
            _ => EventType::Modified,
        }
    }
}

/// Who is writing, for history.
#[derive(Debug, Clone, Default)]
pub(crate) struct Who {
    pub manager: String,
    /// The managedFields operation of the write; `None` for a delete, which no manager makes.
    pub operation: Option<Operation>,
    pub subresource: String,
    pub note: String,
}

impl Who {
    /// Whether a client makes the write. Writes with a note are the store's own (an import, a
    /// manager's rename or release): they keep objects as they were, so the checks a client's
    /// write gets (kube-apiserver's metadata rules) are not made again.
    pub(crate) fn is_client(&self) -> bool {
        self.note.is_empty()
    }
}

/// The history record of a write (computed on the writer's thread, in parallel with other
/// writers) from `live` to `object` (`live` absent for a create; `object` the deleted version
/// for a `tombstone`). A create's record holds no body: the object record written under the
/// same key does (the caller marks it, [`super::object::mark_created`]). The versions carry
/// what history does not track (managedFields, resourceVersion): an update's are compared past
/// it, others are stripped of it and restored.
pub(crate) fn of_write(
    t: &super::types::Registered,
    who: &Who,
    event: EventType,
    tombstone: bool,
    live: Option<&mut Value>,
    object: &mut Value,
) -> Vec<u8> {
    let millis = u64::try_from(super::core::now_unix().as_millis()).unwrap_or(u64::MAX);
    let limit = t.spec.history.inline_limit;
    let mut rec = Record::of(who, event, uid(if tombstone { live.as_deref().unwrap_or(object) } else { object }), millis);
    match live {
        Some(before) if !tombstone => {
            // Versions are validated before they are written; should one not conform, the
            // write is still recorded, with the whole previous version.
            if let Ok(d) = history::diff_tracked(t.schema, t.root, before, object, limit) {
                (rec.changes, rec.undo) = (d.changes, d.undo);
            }
            if rec.undo.is_none() {
                rec.prev = Some(stripped(before, |b| serde_json::to_string(b).unwrap_or_default()));
            }
        }
        // A deletion removes every leaf, and keeps the whole previous version.
        Some(before) => {
            rec.prev = Some(stripped(before, |b| {
                if let Ok(d) = history::diff(t.schema, t.root, Some(b), None, limit) {
                    rec.changes = d.changes;
                }
                serde_json::to_string(b).unwrap_or_default()
            }));
        }
        // A create's change is the object, which its object record holds: its leaves are
        // derived when read.
        None => {}
    }
    rec.encode()
}

/// `f` of `v` without what history does not track.
fn stripped<R>(v: &mut Value, f: impl FnOnce(&Value) -> R) -> R {
    let saved = history::take_untracked(v);
    let r = f(v);
    history::restore_untracked(v, saved);
    r
}

/// The object's `metadata.uid`, or "".
fn uid(v: &Value) -> String {
    v.get("metadata").and_then(|m| m.get("uid")).and_then(Value::as_str).unwrap_or("").to_string()
}

impl Record {
    /// A record of a write by `who`, without its changes.
    fn of(who: &Who, event: EventType, uid: String, unix_millis: u64) -> Self {
        Record {
            uid,
            unix_millis,
            manager: who.manager.clone(),
            operation: who.operation.map_or("Delete", Operation::as_str).to_string(),
            subresource: who.subresource.clone(),
            event: match event {
                EventType::Added => 1,
                EventType::Modified => 2,
                EventType::Deleted => 3,
            },
            note: who.note.clone(),
            changes: Vec::new(),
            undo: None,
            prev: None,
            created: None,
            body_in_object: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records of earlier formats (1: before creates kept their body; 2: fixed-width integers)
    /// are still read.
    #[test]
    fn format_one_records_still_decode() {
        let v1 = RecordV1 {
            uid: "u".into(),
            unix_millis: 7,
            manager: "m".into(),
            operation: "Update".into(),
            subresource: String::new(),
            event: 2,
            note: String::new(),
            changes: Vec::new(),
            undo: None,
            prev: Some("{}".into()),
        };
        let mut bytes = vec![1u8];
        bytes.extend(bincode::serialize(&v1).unwrap_or_default());
        let r = Record::decode(&bytes).expect("a format 1 record");
        assert_eq!((r.uid.as_str(), r.unix_millis, r.event, r.prev.as_deref(), r.created.as_deref()), ("u", 7, 2, Some("{}"), None));
        let again = Record::decode(&r.encode()).expect("a format 3 record");
        assert_eq!(again.prev.as_deref(), Some("{}"));
        assert!(Record::decode(&[9, 0]).is_err());
        // Format 2: the same record with fixed-width integers, as written before format 3.
        let mut two = vec![2u8];
        two.extend(bincode::serialize(&again).unwrap_or_default());
        let back = Record::decode(&two).expect("a format 2 record");
        assert_eq!((back.uid.as_str(), back.unix_millis, back.prev.as_deref()), ("u", 7, Some("{}")));
        assert!(r.encode().len() < two.len(), "format 3 is smaller");
    }

    /// A modification's record: the undo refers to the changes' inline old values instead of
    /// repeating them, keeps values over the inline limit itself, and gives the old version
    /// back from the decoded record; records of format 3 (every old value in the undo) are
    /// still read; the encoding's size bound holds.
    #[test]
    fn undo_refers_to_old_values() {
        use crate::schema::parse_smd_yaml;
        let schema = parse_smd_yaml("types:\n- name: o\n  map:\n    elementType: {scalar: untyped}\n    elementRelationship: separable\n")
            .expect("schema");
        let tr = schema.named("o").expect("type");
        let big = "x".repeat(40);
        let before = serde_json::json!({"a": "old", "b": 1, "c": big, "gone": {"x": 1}});
        let after = serde_json::json!({"a": "new", "b": 2, "c": "small", "added": [1]});
        let d = history::diff(&schema, &tr, Some(&before), Some(&after), 16).expect("diff");
        let undo = d.undo.clone().expect("an exact undo");
        let befores = undo.ops.iter().filter(|op| matches!(op, UndoOp::Before(..))).count();
        let sets = undo.ops.iter().filter(|op| matches!(op, UndoOp::Set(..))).count();
        // `a` and `b` by reference; `c` (over the limit: a digest in its change) and the
        // removed `gone` as values.
        assert_eq!((befores, sets), (2, 2), "{undo:?}");
        let mut rec = Record::of(&Who::default(), EventType::Modified, "u".into(), 1);
        (rec.changes, rec.undo, rec.prev) = (d.changes, d.undo, Some("{}".into()));
        let bytes = rec.encode();
        assert!(bytes.len() <= rec.size_bound(), "{} > {}", bytes.len(), rec.size_bound());
        let back = Record::decode(&bytes).expect("a record of the current format");
        let mut v = after.clone();
        assert!(back.undo.as_ref().expect("undo").apply(&mut v, &back.changes));
        assert_eq!(v, before);
        // Without the changes referred to, the undo does not fit.
        assert!(!undo.apply(&mut after.clone(), &[]));
        // Format 3: the old values in the undo itself.
        let mut three = rec.clone();
        let olds: Vec<_> = three.changes.iter().map(|c| c.before.clone()).collect();
        for op in &mut three.undo.as_mut().expect("undo").ops {
            if let UndoOp::Before(steps, i) = op {
                let Some(Some(history::StoredValue::Inline(json))) = olds.get(*i) else { panic!("inline") };
                *op = UndoOp::Set(std::mem::take(steps), json.clone());
            }
        }
        let mut bytes = vec![3u8];
        bytes.extend(bincode::Options::serialize(format3(), &three).expect("bincode"));
        let back = Record::decode(&bytes).expect("a format 3 record");
        let mut v = after.clone();
        assert!(back.undo.as_ref().expect("undo").apply(&mut v, &[]));
        assert_eq!(v, before);
    }
}
