//! Field-level history: what one write changed, leaf by leaf, and how to undo it.
//!
//! A write from object `before` to object `after` is described by its [`FieldChange`]s — every
//! leaf field (a FieldsV1 path, as the schema decides granularity: a scalar, an atomic list or
//! map, a set member) added, modified or removed, with the values before and after — and by an
//! [`Undo`]: the few operations that turn `after` back into `before`. The store keeps both per
//! revision (see `engine/STORAGE.md`), so that `blame`, field timelines and objects at
//! compacted revisions can be answered.
//!
//! `metadata.managedFields` and `metadata.resourceVersion` are not fields of history: they
//! describe versions rather than being part of them.

mod changes;
mod diff;
mod narrow;
mod paths;

pub use changes::Diff;
pub use diff::{diff, diff_tracked, diff_whole};
pub use paths::{path_matches, value_at};

/// `v` as compact JSON text, as `serde_json::to_string` writes it (`json_text` writes it a word
/// at a time).
pub(crate) fn compact(v: &Value) -> String {
    // The writer writes UTF-8.
    String::from_utf8(fieldstore_codec::json_text::to_vec(v)).unwrap_or_default()
}

/// What [`take_untracked`] took out of a version: its managedFields and resourceVersion, with
/// their keys.
pub(crate) type Untracked = [Option<(String, Value)>; 2];

/// The keys of `metadata` history does not track.
const UNTRACKED: [&str; 2] = ["managedFields", "resourceVersion"];

/// Takes out of a version what history does not track (managedFields, resourceVersion), to be
/// put back with [`restore_untracked`].
pub(crate) fn take_untracked(v: &mut Value) -> Untracked {
    match v.get_mut("metadata") {
        Some(Value::Object(m)) => UNTRACKED.map(|k| m.remove_entry(k)),
        _ => [None, None],
    }
}

/// Puts back what [`take_untracked`] took out.
pub(crate) fn restore_untracked(v: &mut Value, saved: Untracked) {
    if let Some(Value::Object(m)) = v.get_mut("metadata") {
        for (k, x) in saved.into_iter().flatten() {
            m.insert(k, x);
        }
    }
}

/// Every member of `set` present in `v`, as (printed path, JSON pointer, value), in the set's
/// order.
#[must_use]
pub fn resolve_paths<'v>(v: &'v Value, set: &fieldstore_codec::Set) -> Vec<(String, String, &'v Value)> {
    paths::resolve_set(v, set).into_iter().map(|r| (r.path.to_string(), pointer(&r.steps), r.value)).collect()
}

/// The RFC 6901 JSON pointer of concrete steps.
fn pointer(steps: &[Step]) -> String {
    let mut out = String::new();
    for s in steps {
        out.push('/');
        match s {
            Step::Field(n) => out.push_str(&n.replace('~', "~0").replace('/', "~1")),
            Step::Index(i) => out.push_str(&i.to_string()),
        }
    }
    out
}

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Values larger than this (compact JSON bytes) are kept as a digest and size, by default.
pub const DEFAULT_INLINE_LIMIT: usize = 1024;

/// How a leaf field changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    /// The field did not exist before.
    Added,
    /// The field's value changed.
    Modified,
    /// The field no longer exists.
    Removed,
}

impl ChangeKind {
    /// `added`, `modified` or `removed`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Added => "added",
            ChangeKind::Modified => "modified",
            ChangeKind::Removed => "removed",
        }
    }
}

/// A field's value as history keeps it: the value itself, or — above the inline limit — its
/// SHA-256 and size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum StoredValue {
    /// The value, as compact JSON text.
    Inline(String),
    /// A value too large to keep: the SHA-256 (hex) and length of its compact JSON.
    Digest {
        /// SHA-256 of the compact JSON, lowercase hex.
        sha256: String,
        /// Length of the compact JSON in bytes.
        size: usize,
    },
}

impl StoredValue {
    /// Keeps `v` inline when its compact JSON is at most `limit` bytes, as a digest otherwise.
    #[must_use]
    pub fn of(v: &Value, limit: usize) -> Self {
        Self::of_json(compact(v), limit)
    }

    /// [`StoredValue::of`] a value already written as compact JSON.
    pub(crate) fn of_json(json: String, limit: usize) -> Self {
        if json.len() <= limit {
            return StoredValue::Inline(json);
        }
        Self::digest(&json)
    }

    /// The digest and size of a value written as compact JSON.
    pub(crate) fn digest(json: &str) -> Self {
        use sha2::Digest as _;
        let digest = sha2::Sha256::digest(json.as_bytes());
        let sha256 = digest.iter().map(|b| format!("{b:02x}")).collect();
        StoredValue::Digest { sha256, size: json.len() }
    }

    /// The value, when kept inline.
    #[must_use]
    pub fn value(&self) -> Option<Value> {
        match self {
            StoredValue::Inline(s) => serde_json::from_str(s).ok(),
            StoredValue::Digest { .. } => None,
        }
    }

    /// The JSON form API clients see: the value itself, or `{"sha256": …, "size": …}`.
    #[must_use]
    pub fn to_json(&self) -> Value {
        match self {
            StoredValue::Inline(s) => serde_json::from_str(s).unwrap_or(Value::Null),
            StoredValue::Digest { sha256, size } => serde_json::json!({"sha256": sha256, "size": size}),
        }
    }
}

/// One leaf field changed by a write.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldChange {
    /// The field, as Kubernetes prints paths: `.spec.containers[name="nginx"].image`.
    pub path: String,
    /// Added, modified or removed.
    pub kind: ChangeKind,
    /// The value before (absent for added fields).
    pub before: Option<StoredValue>,
    /// The value after (absent for removed fields).
    pub after: Option<StoredValue>,
}

/// The operations that turn a write's result back into the object it replaced, in the order
/// they apply.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Undo {
    /// The operations.
    pub ops: Vec<UndoOp>,
}

/// One undo operation at a concrete position.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum UndoOp {
    /// Remove the subtree the write added.
    Remove(Vec<Step>),
    /// Put back a list item the write removed, at its former index (compact JSON).
    Insert(Vec<Step>, String),
    /// Put back a map entry the write removed, or a value it modified (compact JSON).
    Set(Vec<Step>, String),
    /// Put back the value a modified leaf had: the `before` (inline) of the change at this
    /// index of the same difference, which the undo does not repeat.
    Before(Vec<Step>, usize),
}

/// One step of a path through a JSON object, as the undo stores it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Step {
    /// A map key.
    Field(String),
    /// A list item at this index (of the object the step is applied to).
    Index(usize),
}

/// A [`Step`] borrowing its map key from the version walked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StepRef<'v> {
    /// A map key.
    Field(&'v str),
    /// A list item at this index.
    Index(usize),
}

impl StepRef<'_> {
    /// The step, owning its key.
    pub(crate) fn owned(self) -> Step {
        match self {
            StepRef::Field(n) => Step::Field(n.to_string()),
            StepRef::Index(i) => Step::Index(i),
        }
    }
}

impl Undo {
    /// Applies the operations to `v` (a write's result), giving the object it replaced.
    /// `changes`: the difference's changes, which [`UndoOp::Before`] refers to. Returns false
    /// when an operation does not fit `v`.
    #[must_use]
    pub fn apply(&self, v: &mut Value, changes: &[FieldChange]) -> bool {
        for op in &self.ops {
            let json = match op {
                UndoOp::Remove(_) => None,
                UndoOp::Insert(_, json) | UndoOp::Set(_, json) => Some(json.as_str()),
                UndoOp::Before(_, i) => match changes.get(*i).and_then(|c| c.before.as_ref()) {
                    Some(StoredValue::Inline(json)) => Some(json.as_str()),
                    _ => return false,
                },
            };
            let (steps, value) = match (op, json.map(serde_json::from_str::<Value>)) {
                (UndoOp::Remove(steps), _) => (steps, None),
                (UndoOp::Insert(steps, _) | UndoOp::Set(steps, _) | UndoOp::Before(steps, _), Some(Ok(x))) => (steps, Some(x)),
                _ => return false,
            };
            let Some((last, parent)) = steps.split_last() else { return false };
            let Some(container) = paths::at_steps_mut(v, parent) else { return false };
            let ok = match (container, last, op, value) {
                (Value::Object(m), Step::Field(n), UndoOp::Remove(_), _) => m.remove(n).is_some(),
                (Value::Array(a), Step::Index(i), UndoOp::Remove(_), _) if *i < a.len() => {
                    a.remove(*i);
                    true
                }
                (Value::Array(a), Step::Index(i), UndoOp::Insert(..), Some(x)) if *i <= a.len() => {
                    a.insert(*i, x);
                    true
                }
                (Value::Object(m), Step::Field(n), UndoOp::Set(..) | UndoOp::Before(..), Some(x)) => {
                    m.insert(n.clone(), x);
                    true
                }
                (Value::Array(a), Step::Index(i), UndoOp::Set(..) | UndoOp::Before(..), Some(x)) if *i < a.len() => {
                    a[*i] = x;
                    true
                }
                _ => false,
            };
            if !ok {
                return false;
            }
        }
        true
    }
}
