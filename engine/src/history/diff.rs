//! The field-level difference of two versions of an object.

use super::paths::{resolve_set, Resolved};
use super::{ChangeKind, FieldChange, Step, StoredValue, Undo, UndoOp};
use crate::schema::{Schema, TypeRef};
use crate::typed::{compare, to_field_set, Comparison, ValidationErrors};
use fieldstore_codec::{PathElement, Set};
use serde_json::Value;

/// What a write changed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Diff {
    /// Every leaf field added, modified or removed, in path order within each kind (added,
    /// modified, removed).
    pub changes: Vec<FieldChange>,
    /// How to get the old version back from the new one; `None` when the write created or
    /// deleted the object, or when no exact undo exists (the caller then keeps the old version
    /// whole).
    pub undo: Option<Undo>,
}

/// The difference between `before` and `after` (either absent for a create or a delete), both
/// without `metadata.managedFields` and `metadata.resourceVersion`. Values whose compact JSON
/// exceeds `inline_limit` bytes are kept as digests in the changes.
///
/// Two versions are compared only where they differ: the walk follows granular maps down to
/// the subtrees that changed (`narrow`), and the typed comparison runs on those alone — the
/// answer [`diff_whole`] gives from one comparison of the whole versions.
///
/// # Errors
/// A version does not conform to the schema.
pub fn diff(
    schema: &Schema,
    tr: &TypeRef,
    before: Option<&Value>,
    after: Option<&Value>,
    inline_limit: usize,
) -> Result<Diff, ValidationErrors> {
    match (before, after) {
        (Some(b), Some(a)) => {
            let mut acc = Changes::new(inline_limit);
            match super::narrow::node(schema, tr, b, a, false, &mut acc) {
                Ok(()) => Ok(acc.finish(|undo| undoes(undo, b, a))),
                Err(Stop::Invalid(e)) => Err(e),
                // Only versions carrying what history does not track stop for it.
                Err(Stop::Untracked) => diff_whole(schema, tr, before, after, inline_limit),
            }
        }
        _ => diff_whole(schema, tr, before, after, inline_limit),
    }
}

/// [`diff`] of two versions that still carry `metadata.managedFields` and
/// `metadata.resourceVersion`: the walk passes them by, and they are taken out (and put back)
/// only when a comparison or the undo's check must see a version whole.
///
/// # Errors
/// A version does not conform to the schema.
pub fn diff_tracked(
    schema: &Schema,
    tr: &TypeRef,
    before: &mut Value,
    after: &mut Value,
    inline_limit: usize,
) -> Result<Diff, ValidationErrors> {
    let mut acc = Changes::new(inline_limit);
    match super::narrow::node(schema, tr, before, after, true, &mut acc) {
        Err(Stop::Invalid(e)) => Err(e),
        Ok(()) if !acc.checks() => Ok(acc.finish(|_| true)),
        walked => {
            let (sb, sa) = (super::take_untracked(before), super::take_untracked(after));
            let d = match walked {
                Ok(()) => Ok(acc.finish(|undo| undoes(undo, before, after))),
                Err(_) => diff(schema, tr, Some(before), Some(after), inline_limit),
            };
            super::restore_untracked(before, sb);
            super::restore_untracked(after, sa);
            d
        }
    }
}

/// Why the walk stopped short of a difference.
pub(super) enum Stop {
    /// A version does not conform to the schema.
    Invalid(ValidationErrors),
    /// A comparison must see versions that still carry what history does not track.
    Untracked,
}

impl From<ValidationErrors> for Stop {
    fn from(e: ValidationErrors) -> Self {
        Stop::Invalid(e)
    }
}

/// Whether `undo` turns `after` back into `before` exactly.
fn undoes(undo: &Undo, before: &Value, after: &Value) -> bool {
    let mut check = after.clone();
    undo.apply(&mut check) && check == *before
}

/// [`diff`] from one typed comparison of the whole versions (of a create or a delete: the whole
/// version added or removed).
///
/// # Errors
/// A version does not conform to the schema.
pub fn diff_whole(
    schema: &Schema,
    tr: &TypeRef,
    before: Option<&Value>,
    after: Option<&Value>,
    inline_limit: usize,
) -> Result<Diff, ValidationErrors> {
    let c = match (before, after) {
        (Some(b), Some(a)) => compare(schema, tr, b, a)?,
        (None, Some(a)) => Comparison { added: to_field_set(schema, tr, a)?, lists_realigned: true, ..Comparison::default() },
        (Some(b), None) => Comparison { removed: to_field_set(schema, tr, b)?, lists_realigned: true, ..Comparison::default() },
        (None, None) => return Ok(Diff::default()),
    };
    let mut acc = Changes::new(inline_limit);
    acc.comparison(before, after, &c, &[], &[]);
    Ok(match (before, after) {
        (Some(b), Some(a)) => acc.finish(|undo| undoes(undo, b, a)),
        _ => Diff { changes: joined(acc.changes), undo: None },
    })
}

const ADDED: usize = 0;
const MODIFIED: usize = 1;
const REMOVED: usize = 2;

/// A difference being gathered, part by part: the changes of each kind in the order
/// [`resolve_set`] gives them for the whole comparison, and the pieces of the undo, at
/// positions in the whole versions.
pub(super) struct Changes {
    inline_limit: usize,
    changes: [Vec<FieldChange>; 3],
    /// Positions (in the new version) of the topmost added subtrees.
    removes: Vec<Vec<Step>>,
    /// Old values to put back: position (in the old version), whether it is a list item to
    /// insert, compact JSON.
    restores: Vec<(Vec<Step>, bool, String)>,
    /// Whether some list's items did not line up one for one.
    realigned: bool,
    /// Whether anything was added or removed.
    sided: bool,
}

impl Changes {
    pub(super) fn new(inline_limit: usize) -> Self {
        Changes { inline_limit, changes: Default::default(), removes: Vec::new(), restores: Vec::new(), realigned: false, sided: false }
    }

    /// A leaf at `path` (`steps` in both versions) whose value changed from `b` to `a`.
    pub(super) fn modified_leaf(&mut self, path: &[PathElement], steps: &[Step], b: &Value, a: &Value) {
        let old = super::compact(b);
        self.changes[MODIFIED].push(FieldChange {
            path: printed(path),
            kind: ChangeKind::Modified,
            before: Some(StoredValue::of_json(old.clone(), self.inline_limit)),
            after: Some(StoredValue::of(a, self.inline_limit)),
        });
        self.restores.push((steps.to_vec(), false, old));
    }

    /// The comparison `c` of the subtrees `before` and `after` found at `path` (`steps` in
    /// both versions; both present unless the whole versions are).
    pub(super) fn comparison(
        &mut self,
        before: Option<&Value>,
        after: Option<&Value>,
        c: &Comparison,
        path: &[PathElement],
        steps: &[Step],
    ) {
        let limit = self.inline_limit;
        let full = |r: &Resolved<'_>| -> String { printed(path.iter().chain(r.path.elements())) };
        let at = |r: &Resolved<'_>| -> Vec<Step> { steps.iter().chain(&r.steps).cloned().collect() };
        self.realigned |= c.lists_realigned;
        self.sided |= !c.added.is_empty() || !c.removed.is_empty();
        if let Some(a) = after {
            for r in resolve_set(a, &c.added.leaves()) {
                self.changes[ADDED].push(FieldChange {
                    path: full(&r),
                    kind: ChangeKind::Added,
                    before: None,
                    after: Some(StoredValue::of(r.value, limit)),
                });
            }
        }
        if let (Some(b), Some(a)) = (before, after) {
            let leaves = c.modified.leaves();
            let olds = resolve_set(b, &leaves);
            let news: std::collections::HashMap<String, &Value> =
                resolve_set(a, &leaves).into_iter().map(|r| (r.path.to_string(), r.value)).collect();
            // The undo puts back removed subtrees, then modified leaves (sorted by position later).
            self.removes.extend(resolve_set(a, &tops(&c.added)).iter().map(at));
            for r in resolve_set(b, &tops(&c.removed)) {
                let insert = matches!(r.steps.last(), Some(Step::Index(_)));
                self.restores.push((at(&r), insert, super::compact(r.value)));
            }
            for o in olds {
                let new_value = news.get(&o.path.to_string()).map(|v| StoredValue::of(v, limit));
                let old = super::compact(o.value);
                self.changes[MODIFIED].push(FieldChange {
                    path: full(&o),
                    kind: ChangeKind::Modified,
                    before: Some(StoredValue::of_json(old.clone(), limit)),
                    after: new_value,
                });
                self.restores.push((at(&o), false, old));
            }
        }
        if let Some(b) = before {
            for r in resolve_set(b, &c.removed.leaves()) {
                self.changes[REMOVED].push(FieldChange {
                    path: full(&r),
                    kind: ChangeKind::Removed,
                    before: Some(StoredValue::of(r.value, limit)),
                    after: None,
                });
            }
        }
    }

    /// Whether the undo must be checked: the check (applying the undo to a copy of the new
    /// version) is what catches list items that moved, as the typed comparison sees no field
    /// change in a reorder. When every list kept its items one for one and nothing was added or
    /// removed, the undo restores each changed leaf and no item moved, so the check is skipped:
    /// on a large object it costs more than the rest of the record.
    fn checks(&self) -> bool {
        self.realigned || self.sided
    }

    /// The difference, with the undo kept when it needs no check or `check` finds it gives the
    /// old version back exactly.
    fn finish(self, check: impl FnOnce(&Undo) -> bool) -> Diff {
        let checks = self.checks();
        let Changes { changes, mut removes, mut restores, .. } = self;
        // Later positions first, so that earlier indices stay valid.
        removes.sort_by(|a, b| b.cmp(a));
        // Positions of the old version, ascending: each insert lands where it was.
        restores.sort_by(|a, b| a.0.cmp(&b.0));
        let mut ops: Vec<UndoOp> = removes.into_iter().map(UndoOp::Remove).collect();
        ops.extend(
            restores.into_iter().map(|(steps, insert, json)| if insert { UndoOp::Insert(steps, json) } else { UndoOp::Set(steps, json) }),
        );
        let undo = Undo { ops };
        let undo = (!checks || check(&undo)).then_some(undo);
        Diff { changes: joined(changes), undo }
    }
}

/// The changes of each kind, one kind after the other (most writes only modify: no copy then).
fn joined(changes: [Vec<FieldChange>; 3]) -> Vec<FieldChange> {
    let [added, modified, removed] = changes;
    if added.is_empty() && removed.is_empty() {
        return modified;
    }
    added.into_iter().chain(modified).chain(removed).collect()
}

/// A path as Kubernetes prints it.
fn printed<'p>(path: impl IntoIterator<Item = &'p PathElement>) -> String {
    let mut out = String::new();
    for pe in path {
        pe.write_to(&mut out);
    }
    out
}

/// The topmost members of a set: members whose parent is not itself a member.
fn tops(set: &Set) -> Set {
    let members = set.members().to_vec();
    let children = set
        .children()
        .iter()
        .filter(|(pe, _)| !set.has_member(pe))
        .map(|(pe, sub)| (pe.clone(), tops(sub)))
        .filter(|(_, sub)| !sub.is_empty())
        .collect();
    Set::from_parts(members, children)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::parse_smd_yaml;
    use serde_json::json;

    const SCHEMA: &str = r#"
types:
- name: obj
  map:
    fields:
    - name: spec
      type: {namedType: spec}
    - name: metadata
      type: {map: {elementType: {scalar: untyped}, elementRelationship: separable}}
- name: spec
  map:
    fields:
    - name: replicas
      type: {scalar: numeric}
    - name: tags
      type: {list: {elementType: {scalar: string}, elementRelationship: associative}}
    - name: ports
      type:
        list:
          elementType: {namedType: port}
          elementRelationship: associative
          keys: [port]
    - name: args
      type: {list: {elementType: {scalar: string}, elementRelationship: atomic}}
- name: port
  map:
    fields:
    - name: port
      type: {scalar: numeric}
    - name: name
      type: {scalar: string}
"#;

    fn run(before: Option<&Value>, after: Option<&Value>) -> Diff {
        let schema = parse_smd_yaml(SCHEMA).unwrap();
        let tr = schema.named("obj").unwrap();
        diff(&schema, &tr, before, after, 64).unwrap()
    }

    fn kinds(d: &Diff) -> Vec<(String, ChangeKind)> {
        d.changes.iter().map(|c| (c.path.clone(), c.kind)).collect()
    }

    #[test]
    fn keyed_items_set_members_and_atomic_lists() {
        let before = json!({"spec": {"replicas": 1, "tags": ["a", "b"], "args": ["x"],
            "ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}, {"port": 8080, "name": "alt"}]}});
        let after = json!({"spec": {"replicas": 2, "tags": ["a", "c"], "args": ["x", "y"],
            "ports": [{"port": 80, "name": "web"}, {"port": 8080, "name": "alt"}, {"port": 9000, "name": "new"}]}});
        let d = run(Some(&before), Some(&after));
        let k = kinds(&d);
        assert!(k.contains(&(r#".spec.ports[port=80].name"#.into(), ChangeKind::Modified)), "{k:?}");
        assert!(k.contains(&(r#".spec.ports[port=443].name"#.into(), ChangeKind::Removed)), "{k:?}");
        assert!(k.contains(&(r#".spec.ports[port=9000].name"#.into(), ChangeKind::Added)), "{k:?}");
        assert!(k.contains(&(r#".spec.tags[="b"]"#.into(), ChangeKind::Removed)), "{k:?}");
        assert!(k.contains(&(r#".spec.tags[="c"]"#.into(), ChangeKind::Added)), "{k:?}");
        assert!(k.contains(&(".spec.args".into(), ChangeKind::Modified)), "{k:?}");
        assert!(k.contains(&(".spec.replicas".into(), ChangeKind::Modified)), "{k:?}");
        assert!(!k.iter().any(|(p, _)| p.contains("8080")), "{k:?}");
        let m = d.changes.iter().find(|c| c.path == ".spec.ports[port=80].name").unwrap();
        assert_eq!(m.before, Some(StoredValue::Inline("\"http\"".into())));
        assert_eq!(m.after, Some(StoredValue::Inline("\"web\"".into())));
        // The undo gives the old version back exactly, item order included.
        let undo = d.undo.expect("an exact undo");
        let mut back = after.clone();
        assert!(undo.apply(&mut back));
        assert_eq!(back, before);
    }

    #[test]
    fn create_and_delete_list_every_leaf() {
        let obj = json!({"spec": {"replicas": 1, "ports": [{"port": 80}]}});
        let created = run(None, Some(&obj));
        assert!(created.changes.iter().all(|c| c.kind == ChangeKind::Added));
        assert!(kinds(&created).contains(&(".spec.ports[port=80].port".into(), ChangeKind::Added)));
        let deleted = run(Some(&obj), None);
        assert!(deleted.changes.iter().all(|c| c.kind == ChangeKind::Removed));
        assert_eq!(deleted.changes.len(), created.changes.len());
        assert!(created.undo.is_none() && deleted.undo.is_none());
    }

    #[test]
    fn large_values_are_digests() {
        let big = "x".repeat(100);
        let d = run(Some(&json!({"metadata": {"a": "small"}})), Some(&json!({"metadata": {"a": big}})));
        match &d.changes[0].after {
            Some(StoredValue::Digest { size, sha256 }) => {
                assert_eq!(*size, 102);
                assert_eq!(sha256.len(), 64);
            }
            other => panic!("{other:?}"),
        }
        assert!(d.undo.is_some());
    }

    #[test]
    fn reordering_without_field_changes_has_an_exact_undo_or_none() {
        let before = json!({"spec": {"ports": [{"port": 1}, {"port": 2}]}});
        let after = json!({"spec": {"ports": [{"port": 2}, {"port": 1}]}});
        let d = run(Some(&before), Some(&after));
        // No leaf changed; an undo that would not restore the order is refused.
        assert!(d.changes.is_empty());
        if let Some(u) = d.undo {
            let mut back = after.clone();
            assert!(u.apply(&mut back));
            assert_eq!(back, before);
        }
    }
}
