//! History records: what one write changed, computed on the writer's thread and stored in the
//! batch of the write (column family `history`, see `engine/STORAGE.md`).

use super::keys::EventType;
use crate::history::{self, FieldChange, Undo};
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
}

const RECORD_FORMAT: u8 = 1;

impl Record {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = vec![RECORD_FORMAT];
        // bincode of plain data cannot fail.
        out.extend(bincode::serialize(self).unwrap_or_default());
        out
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<Self> {
        match bytes.split_first() {
            Some((&RECORD_FORMAT, rest)) => bincode::deserialize(rest).map_err(|e| Error::Corrupt(format!("history record: {e}"))),
            _ => Err(Error::Corrupt("unknown history record format".into())),
        }
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

/// Removes what history does not track from a version (managedFields, resourceVersion) and
/// returns it, to be put back with [`restore_untracked`].
pub(crate) fn take_untracked(v: &mut Value) -> (Option<Value>, Option<Value>) {
    match v.get_mut("metadata") {
        Some(Value::Object(m)) => (m.remove("managedFields"), m.remove("resourceVersion")),
        _ => (None, None),
    }
}

/// Puts back what [`take_untracked`] removed.
pub(crate) fn restore_untracked(v: &mut Value, saved: (Option<Value>, Option<Value>)) {
    if let Some(Value::Object(m)) = v.get_mut("metadata") {
        if let Some(mf) = saved.0 {
            m.insert("managedFields".into(), mf);
        }
        if let Some(rv) = saved.1 {
            m.insert("resourceVersion".into(), rv);
        }
    }
}

/// The history record of a write from `before` to `after` (stripped versions; `after` absent
/// for a delete).
pub(crate) fn record(
    t: &super::types::Registered,
    who: &Who,
    event: EventType,
    before: Option<&Value>,
    after: Option<&Value>,
    unix_millis: u64,
) -> Record {
    let policy = &t.spec.history;
    let uid = after.or(before).and_then(|v| v.get("metadata")).and_then(|m| m.get("uid")).and_then(Value::as_str).unwrap_or("").to_string();
    let (changes, undo) = match history::diff(t.schema, t.root, before, after, policy.inline_limit) {
        Ok(d) => (d.changes, d.undo),
        // Versions are validated before they are written; should one not conform, the write
        // is still recorded, with the whole previous version.
        Err(_) => (Vec::new(), None),
    };
    let prev = match (before, &undo) {
        (Some(b), None) => Some(serde_json::to_string(b).unwrap_or_default()),
        _ => None,
    };
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
        changes,
        undo,
        prev,
    }
}
