//! Patches: the three patch types Kubernetes accepts, applied to a live object, and strategic
//! merge patches computed from two or three documents.
//!
//! - [`strategic_merge`]: strategic merge patch (SMP) with every directive (`$patch: replace |
//!   delete | merge`, `$deleteFromPrimitiveList/<field>`, `$setElementOrder/<field>`,
//!   `$retainKeys`), schema-aware through [`PatchMeta`]; it mirrors apimachinery's
//!   `pkg/util/strategicpatch`, including its list ordering rules (`$setElementOrder` > patch
//!   order > live order);
//! - [`create_two_way`] / [`create_three_way`]: the SMP that takes one document to another, and
//!   kubectl's three-way patch with its conflict detection;
//! - [`merge_patch`] (RFC 7386) and [`create_three_way_merge_patch`] (Kubernetes'
//!   `CreateThreeWayJSONMergePatch`);
//! - [`json_patch`] (RFC 6902).
//!
//! Every function takes the live object by reference and returns a new one, so an error leaves
//! it untouched. Integers are kept exactly (`serde_json` holds them as `i64`/`u64`; nothing here
//! converts them to `f64`). Errors are [`Error::Patch`] with a [`PatchErrorKind`] and the path of
//! the offending place (`.mergingList[1].value` in an SMP, the JSON pointer in a JSON patch).
//!
//! List merges index items by merge key (or value) in hash maps: applying a patch that touches
//! one item of an n-item list costs O(n), not O(n²).

mod json_merge;
mod json_patch;
mod meta;
mod strategic;
mod strategic_create;

pub use json_merge::{create_merge_patch, create_three_way_merge_patch, merge_patch, merge_patch_in_place};
pub use json_patch::{json_patch, json_patch_in_place, json_patch_limited, MAX_OPERATIONS};
pub use meta::{load_schema, PatchMeta};
pub use strategic::strategic_merge;
pub use strategic_create::{create_three_way, create_two_way};

use crate::{Error, Reason, Result};
use serde_json::Value;
use std::fmt;
use std::str::FromStr;

/// The patch types of a Kubernetes PATCH request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PatchType {
    /// Strategic merge patch (`application/strategic-merge-patch+json`).
    Strategic,
    /// JSON merge patch, RFC 7386 (`application/merge-patch+json`).
    Merge,
    /// JSON patch, RFC 6902 (`application/json-patch+json`).
    Json,
    /// Server-Side Apply of the patch as an apply configuration (`application/apply-patch+yaml`):
    /// made by the field manager ([`crate::fieldmanager::FieldManager::apply`]), not by
    /// [`apply`] of this module, which refuses it.
    Apply,
}

impl PatchType {
    /// The media type of a request body of this patch type.
    pub fn content_type(self) -> &'static str {
        match self {
            PatchType::Strategic => "application/strategic-merge-patch+json",
            PatchType::Merge => "application/merge-patch+json",
            PatchType::Json => "application/json-patch+json",
            PatchType::Apply => "application/apply-patch+yaml",
        }
    }

    /// The patch type of a media type, if it is one.
    pub fn from_content_type(content_type: &str) -> Option<Self> {
        let base = content_type.split(';').next().unwrap_or_default().trim();
        [PatchType::Strategic, PatchType::Merge, PatchType::Json, PatchType::Apply].into_iter().find(|t| t.content_type() == base)
    }
}

impl fmt::Display for PatchType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PatchType::Strategic => "strategic",
            PatchType::Merge => "merge",
            PatchType::Json => "json",
            PatchType::Apply => "apply",
        })
    }
}

impl FromStr for PatchType {
    type Err = String;

    /// `strategic`, `merge`, `json` or `apply`, as `kubectl patch --type` spells them.
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "strategic" => Ok(PatchType::Strategic),
            "merge" => Ok(PatchType::Merge),
            "json" => Ok(PatchType::Json),
            "apply" => Ok(PatchType::Apply),
            _ => Err(format!("unknown patch type {s:?} (expected strategic, merge, json or apply)")),
        }
    }
}

/// Applies a patch of any type to `original`.
///
/// `meta` only matters for strategic merge patches.
///
/// # Examples
/// ```
/// # use fieldstore_engine::patch::{apply, PatchMeta, PatchType};
/// # use serde_json::json;
/// let live = json!({"a": 1, "b": 2});
/// let out = apply(PatchType::Json, &live, &json!([{"op": "remove", "path": "/a"}]), &PatchMeta::untyped())?;
/// assert_eq!(out, json!({"b": 2}));
/// # Ok::<(), fieldstore_engine::Error>(())
/// ```
///
/// # Errors
/// [`Error::Patch`] as the patch type's own function reports it.
pub fn apply(patch_type: PatchType, original: &Value, patch: &Value, meta: &PatchMeta<'_>) -> Result<Value> {
    apply_limited(patch_type, original, patch, meta, usize::MAX)
}

/// [`apply`] with the patched document bounded to about `max_bytes` of JSON where a patch can
/// make a document larger than itself and the original (JSON patch's `copy`; see
/// [`json_patch_limited`]).
///
/// # Errors
/// Those of [`apply`]; [`PatchErrorKind::TooLarge`].
pub fn apply_limited(patch_type: PatchType, original: &Value, patch: &Value, meta: &PatchMeta<'_>, max_bytes: usize) -> Result<Value> {
    match patch_type {
        PatchType::Strategic => strategic_merge(original, patch, meta),
        PatchType::Merge => Ok(merge_patch(original, patch)),
        PatchType::Json => json_patch_limited(original, patch, max_bytes),
        PatchType::Apply => {
            Err(Error::BadRequest("an apply patch is made by the field manager (Store::patch, FieldManager::apply)".into()))
        }
    }
}

/// Applies a patch to `live` and records the result as an Update by `manager` through the field
/// manager, as the apiserver does for every non-apply patch: fields whose value changed move to
/// the manager, removed fields leave every manager, and a patch that sets
/// `metadata.managedFields` to `[{}]` clears the recorded ownership before the write is tracked.
///
/// # Errors
/// The patch's own errors (object untouched), or the field manager's.
pub fn apply_and_track(
    fm: &crate::fieldmanager::FieldManager<'_>,
    live: &Value,
    patch_type: PatchType,
    patch: &Value,
    meta: &PatchMeta<'_>,
    manager: &str,
    now: &crate::fieldmanager::Time,
) -> Result<crate::fieldmanager::UpdateOutcome> {
    let patched = apply(patch_type, live, patch, meta)?;
    fm.update(Some(live), patched, manager, now)
}

/// Parses a document or patch body; empty input is the empty object, as Kubernetes treats a
/// missing body.
///
/// # Errors
/// [`Error::Patch`] of kind [`PatchErrorKind::InvalidJson`] when the bytes are not JSON.
pub fn parse_document(bytes: &[u8]) -> Result<Value> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    serde_json::from_slice(bytes).map_err(|e| at_error(PatchErrorKind::InvalidJson, At::ROOT, format!("invalid JSON document: {e}")))
}

/// Why a patch could not be applied or created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PatchErrorKind {
    /// A document is not JSON, or not a JSON object where one is required.
    InvalidJson,
    /// The patch document does not have the shape of its patch type (a JSON patch operation
    /// without `op`, an SMP that is not an object, …).
    InvalidPatch,
    /// A `$patch` directive with an unknown value, or one that is not allowed where it is.
    UnknownDirective,
    /// A known directive used wrongly: `$retainKeys`, `$setElementOrder/…` or
    /// `$deleteFromPrimitiveList/…` that is not a list, a `$setElementOrder` list whose order
    /// disagrees with the patch list, a patch key missing from `$retainKeys`, …
    InvalidDirective,
    /// An item of a merging list lacks the list's merge key.
    MissingMergeKey,
    /// The schema has no field of this name where the patch needs one.
    UnknownField,
    /// Values of the wrong JSON kind: a list of lists, mixed element kinds, a list where an
    /// object is expected.
    TypeMismatch,
    /// The schema's patch metadata is unusable (an unknown strategy combination, a merging list
    /// of objects without a merge key).
    Schema,
    /// A three-way patch would overwrite changes made to the live object since the last apply.
    Conflict,
    /// A JSON patch `test` operation found a different value.
    TestFailed,
    /// A JSON pointer names a member that does not exist.
    PathNotFound,
    /// A JSON pointer's array index is past the end of the array.
    IndexOutOfRange,
    /// A JSON pointer is malformed (no leading `/`, a bad escape, an array index that is not a
    /// number or has leading zeros).
    InvalidPointer,
    /// The patch is too large: more operations than allowed, or a document that would grow past
    /// the limit (413).
    TooLarge,
}

impl PatchErrorKind {
    /// The kind's name, as error messages print it.
    pub fn as_str(self) -> &'static str {
        match self {
            PatchErrorKind::InvalidJson => "InvalidJson",
            PatchErrorKind::InvalidPatch => "InvalidPatch",
            PatchErrorKind::UnknownDirective => "UnknownDirective",
            PatchErrorKind::InvalidDirective => "InvalidDirective",
            PatchErrorKind::MissingMergeKey => "MissingMergeKey",
            PatchErrorKind::UnknownField => "UnknownField",
            PatchErrorKind::TypeMismatch => "TypeMismatch",
            PatchErrorKind::Schema => "Schema",
            PatchErrorKind::Conflict => "Conflict",
            PatchErrorKind::TestFailed => "TestFailed",
            PatchErrorKind::PathNotFound => "PathNotFound",
            PatchErrorKind::IndexOutOfRange => "IndexOutOfRange",
            PatchErrorKind::InvalidPointer => "InvalidPointer",
            PatchErrorKind::TooLarge => "TooLarge",
        }
    }

    /// The Kubernetes status reason of this kind: a malformed patch is a bad request, a JSON
    /// patch that does not fit the object is unprocessable (422, as the apiserver answers), a
    /// three-way conflict is a conflict, an unusable schema is the server's fault.
    pub fn reason(self) -> Reason {
        match self {
            PatchErrorKind::Conflict => Reason::Conflict,
            PatchErrorKind::TestFailed
            | PatchErrorKind::PathNotFound
            | PatchErrorKind::IndexOutOfRange
            | PatchErrorKind::InvalidPointer => Reason::Invalid,
            PatchErrorKind::Schema => Reason::InternalError,
            PatchErrorKind::TooLarge => Reason::RequestEntityTooLarge,
            _ => Reason::BadRequest,
        }
    }
}

impl fmt::Display for PatchErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a walk over a patch is: a chain of segments on the stack, rendered only on error.
#[derive(Clone, Copy)]
pub(crate) struct At<'a> {
    parent: Option<&'a At<'a>>,
    seg: Seg<'a>,
}

#[derive(Clone, Copy)]
enum Seg<'a> {
    Root,
    Field(&'a str),
    Index(usize),
}

impl<'a> At<'a> {
    /// The root of the document.
    pub(crate) const ROOT: At<'static> = At { parent: None, seg: Seg::Root };

    /// The member `name` of the object here.
    pub(crate) fn field<'b>(&'b self, name: &'b str) -> At<'b> {
        At { parent: Some(self), seg: Seg::Field(name) }
    }

    /// The item `i` of the list here.
    pub(crate) fn index<'b>(&'b self, i: usize) -> At<'b> {
        At { parent: Some(self), seg: Seg::Index(i) }
    }

    /// The path as Kubernetes prints field paths: `.a.b[2].c`; the root is `.`.
    pub(crate) fn render(&self) -> String {
        let mut segs = Vec::new();
        let mut cur = Some(self);
        while let Some(at) = cur {
            segs.push(at.seg);
            cur = at.parent;
        }
        let mut out = String::new();
        for seg in segs.iter().rev() {
            match seg {
                Seg::Root => {}
                Seg::Field(name) => {
                    out.push('.');
                    out.push_str(name);
                }
                Seg::Index(i) => {
                    out.push('[');
                    out.push_str(&i.to_string());
                    out.push(']');
                }
            }
        }
        if out.is_empty() {
            out.push('.');
        }
        out
    }
}

/// A patch error at `at`.
pub(crate) fn at_error(kind: PatchErrorKind, at: At<'_>, message: impl Into<String>) -> Error {
    Error::Patch { kind, path: at.render(), message: message.into() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_render_as_kubernetes_field_paths() {
        let root = At::ROOT;
        assert_eq!(root.render(), ".");
        let a = root.field("spec");
        let b = a.field("containers");
        let c = b.index(2);
        assert_eq!(c.field("image").render(), ".spec.containers[2].image");
    }

    #[test]
    fn patch_types_parse_and_print() {
        for t in [PatchType::Strategic, PatchType::Merge, PatchType::Json, PatchType::Apply] {
            assert_eq!(t.to_string().parse::<PatchType>(), Ok(t));
            assert_eq!(PatchType::from_content_type(t.content_type()), Some(t));
        }
        assert!("server-side".parse::<PatchType>().is_err());
        assert!(apply(PatchType::Apply, &serde_json::json!({}), &serde_json::json!({}), &PatchMeta::untyped()).is_err());
        assert_eq!(PatchType::from_content_type("application/merge-patch+json; charset=utf-8"), Some(PatchType::Merge));
    }

    #[test]
    fn empty_body_is_empty_object() {
        assert_eq!(parse_document(b" \n").ok(), Some(serde_json::json!({})));
        assert!(matches!(parse_document(b"{"), Err(Error::Patch { kind: PatchErrorKind::InvalidJson, .. })));
    }
}
