//! A difference being gathered piece by piece: changed leaves as the narrowing walk finds them,
//! and typed comparisons of changed subtrees, resolved at their positions in the whole versions.

use super::paths::{resolve_set, Resolved};
use super::{ChangeKind, FieldChange, Step, StepRef, StoredValue, Undo, UndoOp};
use crate::typed::Comparison;
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
    /// Old values to put back, at their positions in the old version.
    restores: Vec<(Vec<Step>, Old)>,
    /// Whether some list's items did not line up one for one.
    realigned: bool,
    /// Whether anything was added or removed.
    sided: bool,
}

impl Changes {
    pub(super) fn new(inline_limit: usize) -> Self {
        // A write modifies a few leaves, as a rule: room for them from the start.
        let changes = [Vec::new(), Vec::with_capacity(4), Vec::new()];
        Changes { inline_limit, changes, removes: Vec::new(), restores: Vec::with_capacity(4), realigned: false, sided: false }
    }

    /// A leaf at `path` (`steps` in both versions) whose value changed from `b` to `a`.
    pub(super) fn modified_leaf(&mut self, path: &[PathElement], steps: &[StepRef<'_>], b: &Value, a: &Value) {
        let (before, old) = self.kept(super::compact(b));
        self.changes[MODIFIED].push(FieldChange {
            path: printed(path),
            kind: ChangeKind::Modified,
            before: Some(before),
            after: Some(StoredValue::of(a, self.inline_limit)),
        });
        self.restores.push((steps.iter().map(|s| s.owned()).collect(), old));
    }

    /// The old value of the next modified change, as the change keeps it and as the undo puts
    /// it back: by reference to the change when it is inline (not written twice), else itself.
    fn kept(&self, old: String) -> (StoredValue, Old) {
        if old.len() <= self.inline_limit {
            (StoredValue::Inline(old), Old::Modified(self.changes[MODIFIED].len()))
        } else {
            (StoredValue::digest(&old), Old::Value(old))
        }
    }

    /// The comparison `c` of the subtrees `before` and `after` found at `path` (`steps` in
    /// both versions; both present unless the whole versions are).
    pub(super) fn comparison(
        &mut self,
        before: Option<&Value>,
        after: Option<&Value>,
        c: &Comparison,
        path: &[PathElement],
        steps: &[StepRef<'_>],
    ) {
        let limit = self.inline_limit;
        let full = |r: &Resolved<'_>| -> String { printed(path.iter().chain(r.path.elements())) };
        let at = |r: &Resolved<'_>| -> Vec<Step> { steps.iter().map(|s| s.owned()).chain(r.steps.iter().cloned()).collect() };
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
                let json = super::compact(r.value);
                let old = if matches!(r.steps.last(), Some(Step::Index(_))) { Old::Item(json) } else { Old::Value(json) };
                self.restores.push((at(&r), old));
            }
            for o in olds {
                let new_value = news.get(&o.path.to_string()).map(|v| StoredValue::of(v, limit));
                let (before, old) = self.kept(super::compact(o.value));
                self.changes[MODIFIED].push(FieldChange {
                    path: full(&o),
                    kind: ChangeKind::Modified,
                    before: Some(before),
                    after: new_value,
                });
                self.restores.push((at(&o), old));
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
    pub(super) fn checks(&self) -> bool {
        self.realigned || self.sided
    }

    /// The difference, with the undo kept when it needs no check or `check` finds it gives the
    /// old version back exactly.
    /// The difference of a create or a delete: its changes, and no undo.
    pub(super) fn finish_one_sided(self) -> Diff {
        Diff { changes: joined(self.changes), undo: None }
    }

    pub(super) fn finish(self, check: impl FnOnce(&Undo, &[FieldChange]) -> bool) -> Diff {
        let checks = self.checks();
        let Changes { changes, mut removes, mut restores, .. } = self;
        // The modified changes follow the added ones.
        let first_modified = changes[ADDED].len();
        // Later positions first, so that earlier indices stay valid.
        removes.sort_by(|a, b| b.cmp(a));
        // Positions of the old version, ascending: each insert lands where it was.
        restores.sort_by(|a, b| a.0.cmp(&b.0));
        let mut ops: Vec<UndoOp> = Vec::with_capacity(removes.len() + restores.len());
        ops.extend(removes.into_iter().map(UndoOp::Remove));
        ops.extend(restores.into_iter().map(|(steps, old)| match old {
            Old::Item(json) => UndoOp::Insert(steps, json),
            Old::Value(json) => UndoOp::Set(steps, json),
            Old::Modified(i) => UndoOp::Before(steps, first_modified + i),
        }));
        let undo = Undo { ops };
        let changes = joined(changes);
        let undo = (!checks || check(&undo, &changes)).then_some(undo);
        Diff { changes, undo }
    }
}

/// An old value the undo puts back.
enum Old {
    /// A list item to insert, as compact JSON.
    Item(String),
    /// A map entry or a value to set, as compact JSON.
    Value(String),
    /// The `before` of the modified change at this index (among the modified changes).
    Modified(usize),
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
    // Most paths are short: one allocation, no regrowth while writing.
    let mut out = String::with_capacity(48);
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
