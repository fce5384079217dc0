//! Where two versions of an object differ: a walk down the granular maps both hold, and the
//! granular lists whose items line up (the same keys at the same positions), to the entries and
//! items that changed. A changed leaf is recorded where it is found; a list whose items do not
//! line up, or a map whose keys differ, gets the typed comparison of that subtree alone. A write
//! changes a few fields of an object, so the comparison runs on a small part of it (or on none).
//!
//! The typed comparison is compositional: below a granular map both versions hold, or a list
//! whose items line up, what it finds is, entry by entry (item by item), what the comparison of
//! the entry's two values finds (a node whose two values are equal contributes nothing). So the
//! changes gathered piecewise are those of one comparison of the whole versions
//! ([`diff_whole`](super::diff_whole)), in the same order (a level's leaves, then what is below
//! its containers, each by path element); the walk narrows only where that holds, and otherwise
//! compares the parent whole.

use super::changes::Changes;
use super::{StepRef, UNTRACKED};
use crate::schema::{ElementRelationship, List, Map, Schema, TypeRef};
use crate::typed::{compare, deduce, item_key, resolve, validate_scalar, ItemKey, Kind, ValidationErrors};
use fieldstore_codec::value::equals;
use fieldstore_codec::PathElement;
use serde_json::Value;

/// Adds to `changes` the difference between `before` and `after`, two versions of type `tr`.
/// `untracked`: the versions still carry `metadata.managedFields` and
/// `metadata.resourceVersion`, which the walk passes by.
///
/// # Errors
/// What the typed comparison reports (a version does not conform to the schema);
/// [`Stop::Untracked`] when a comparison would see what history does not track (of the whole
/// versions, or of their metadata).
pub(super) fn node<'v>(
    schema: &Schema,
    tr: &TypeRef,
    before: &'v Value,
    after: &'v Value,
    untracked: bool,
    changes: &mut Changes,
) -> Result<(), Stop> {
    Narrow { schema, changes, untracked, path: Vec::with_capacity(8), steps: Vec::with_capacity(8) }.whole(tr, before, after)
}

struct Narrow<'s, 'c, 'v> {
    schema: &'s Schema,
    changes: &'c mut Changes,
    /// Whether the versions carry what history does not track.
    untracked: bool,
    /// The position of the subtree walked: its path, and its steps in both versions.
    path: Vec<PathElement>,
    steps: Vec<StepRef<'v>>,
}

/// A changed entry of a granular map (or item of a list whose items line up), to the walk.
enum Entry<'s> {
    /// A leaf: a scalar, an atomic container, or containers empty on both sides.
    Leaf,
    /// A granular map both versions hold as a map.
    Map(&'s Map),
    /// A granular list both versions hold as a list.
    List(&'s List),
    /// Anything else (kinds that differ, a container against a non-container): the walk
    /// compares the parent whole.
    Other,
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

type Object = serde_json::Map<String, Value>;

/// Whether the `changed` items have keys no other item of `keys` has.
fn unique(keys: &[ItemKey<'_>], changed: &[Changed<'_, '_>]) -> bool {
    if changed.is_empty() || matches!(keys.first(), Some(ItemKey::Index(_))) {
        return true;
    }
    if changed.len().saturating_mul(keys.len()) <= 4096 {
        return changed.iter().all(|c| match c.step {
            StepRef::Index(i) => keys.iter().enumerate().all(|(j, k)| j == i || *k != keys[i]),
            StepRef::Field(_) => true,
        });
    }
    // Many changed items of a long list: no key twice at all.
    let mut seen = std::collections::HashSet::with_capacity(keys.len());
    keys.iter().all(|k| seen.insert(k))
}

/// What a changed container is to the walk, as the comparison handles it: a leaf when atomic,
/// or empty (or not a container) on both sides; `walked` when both sides hold one; else other.
/// `b_empty`, `a_empty`: whether each side's container is empty, `None` when it is not one.
fn container(atomic: bool, b_empty: Option<bool>, a_empty: Option<bool>, walked: Entry<'_>) -> Entry<'_> {
    match (b_empty, a_empty) {
        _ if atomic => Entry::Leaf,
        (None | Some(true), None | Some(true)) => Entry::Leaf,
        (Some(_), Some(_)) => walked,
        _ => Entry::Other,
    }
}

/// A changed entry of a map, or item of a list, to be recorded or descended into.
struct Changed<'s, 'v> {
    pe: PathElement,
    step: StepRef<'v>,
    ty: &'s TypeRef,
    entry: Entry<'s>,
    b: &'v Value,
    a: &'v Value,
}

impl<'s, 'v> Narrow<'s, '_, 'v> {
    /// The whole versions: a granular map is walked, anything else compared.
    fn whole(&mut self, tr: &'s TypeRef, b: &'v Value, a: &'v Value) -> Result<(), Stop> {
        // Versions carrying their resourceVersions differ.
        if !self.untracked && b == a {
            return Ok(());
        }
        match (self.entry(tr, b, a)?, b, a) {
            (Entry::Map(t), Value::Object(bm), Value::Object(am)) => self.map(tr, t, (b, bm), (a, am)),
            _ => self.compared(tr, b, a),
        }
    }

    /// The typed comparison of the subtree at the walk's position.
    fn compared(&mut self, tr: &TypeRef, b: &Value, a: &Value) -> Result<(), Stop> {
        if self.untracked && (self.path.is_empty() || self.in_metadata()) {
            return Err(Stop::Untracked);
        }
        let c = compare(self.schema, tr, b, a)?;
        self.changes.comparison(Some(b), Some(a), &c, &self.path, &self.steps);
        Ok(())
    }

    /// A granular map both versions hold (`tr`, of map type `t`). Its changed leaves come first,
    /// then the changes below its changed containers, each in key order: the order of the
    /// comparison's sets (members, then children).
    fn map(&mut self, tr: &'s TypeRef, t: &'s Map, (b, bm): (&'v Value, &'v Object), (a, am): (&'v Value, &'v Object)) -> Result<(), Stop> {
        let skip = self.untracked && self.in_metadata();
        let tracked = |(k, _): &(&String, &Value)| !(skip && UNTRACKED.contains(&k.as_str()));
        if !skip && bm.len() != am.len() {
            return self.compared(tr, b, a);
        }
        // Walked because it changed: few entries did, as a rule (one allocation, no regrowth).
        let mut changed = Vec::with_capacity(4);
        let (mut bi, mut ai) = (bm.iter().filter(tracked), am.iter().filter(tracked));
        loop {
            let (k, bv, av) = match (bi.next(), ai.next()) {
                (None, None) => break,
                (Some((k, bv)), Some((ak, av))) if k == ak => (k, bv, av),
                // The keys differ.
                _ => return self.compared(tr, b, a),
            };
            if bv == av {
                continue;
            }
            let ty = t.entry_type(k);
            let entry = self.entry(ty, bv, av)?;
            if self.untracked && self.path.is_empty() && k == "metadata" && !matches!(entry, Entry::Map(_)) {
                // Metadata compared whole would include what history does not track.
                return Err(Stop::Untracked);
            }
            match entry {
                Entry::Leaf if equals(bv, av) => {}
                Entry::Other => return self.compared(tr, b, a),
                entry => changed.push(Changed { pe: t.field_element(k), step: StepRef::Field(k), ty, entry, b: bv, a: av }),
            }
        }
        self.descend(changed)
    }

    /// The changed entries or items of a container, in the order of their path elements: the
    /// changed leaves recorded first, then the changes below the changed containers (the order
    /// of the comparison's sets: members, then children).
    fn descend(&mut self, mut changed: Vec<Changed<'s, 'v>>) -> Result<(), Stop> {
        // Stable: each group keeps the order of the path elements.
        changed.sort_by_key(|c| !matches!(c.entry, Entry::Leaf));
        for c in changed {
            self.path.push(c.pe);
            self.steps.push(c.step);
            let done = match (c.entry, c.b, c.a) {
                (Entry::Leaf, ..) => {
                    self.changes.modified_leaf(&self.path, &self.steps, c.b, c.a);
                    Ok(())
                }
                (Entry::Map(m), Value::Object(bm), Value::Object(am)) => self.map(c.ty, m, (c.b, bm), (c.a, am)),
                (Entry::List(l), Value::Array(bl), Value::Array(al)) => self.list(c.ty, l, (c.b, bl), (c.a, al)),
                _ => self.compared(c.ty, c.b, c.a),
            };
            self.leave();
            done?;
        }
        Ok(())
    }

    /// A granular list both versions hold (`tr`, of list type `t`): walked item by item when its
    /// items line up (as many, each with the same key as the item at its position on the other
    /// side: the comparison then matches them pairwise and finds no move), else compared. Its
    /// changed leaf items come first, then the changes below its changed container items, each
    /// in the order of their path elements (the comparison's sets are ordered so).
    fn list(
        &mut self,
        tr: &'s TypeRef,
        t: &'s List,
        (b, bl): (&'v Value, &'v [Value]),
        (a, al): (&'v Value, &'v [Value]),
    ) -> Result<(), Stop> {
        if bl.len() != al.len() {
            return self.compared(tr, b, a);
        }
        let mut keys = Vec::with_capacity(bl.len());
        let mut changed = Vec::with_capacity(4);
        let ty = &t.element_type;
        for (i, (bv, av)) in bl.iter().zip(al).enumerate() {
            let (Ok(bk), Ok(ak)) = (item_key(self.schema, t, i, bv), item_key(self.schema, t, i, av)) else {
                return self.compared(tr, b, a);
            };
            if bk != ak {
                return self.compared(tr, b, a);
            }
            keys.push(bk);
            if bv == av {
                continue;
            }
            match self.entry(ty, bv, av)? {
                Entry::Leaf if equals(bv, av) => {}
                Entry::Other => return self.compared(tr, b, a),
                entry => changed.push(Changed { pe: keys[i].to_pe(t), step: StepRef::Index(i), ty, entry, b: bv, a: av }),
            }
        }
        // A changed item whose key another item has: the comparison's sets name both by one
        // path, which finds the first of them; only the whole comparison says what it records.
        if !unique(&keys, &changed) {
            return self.compared(tr, b, a);
        }
        changed.sort_by(|x, y| x.pe.cmp(&y.pe));
        self.descend(changed)
    }

    /// What the changed entry `b` → `a` of type `tr` is to the walk, as the typed comparison
    /// would handle it.
    fn entry(&self, tr: &'s TypeRef, b: &Value, a: &Value) -> Result<Entry<'s>, ValidationErrors> {
        let atom = resolve(self.schema, tr)?;
        let (kb, ka) = (deduce(atom, Some(b)), deduce(atom, Some(a)));
        if !kb.same_handler(&ka) {
            return Ok(Entry::Other);
        }
        Ok(match ka {
            Kind::Scalar(s) => {
                validate_scalar(s, Some(b), "lhs: ")?;
                validate_scalar(s, Some(a), "rhs: ")?;
                Entry::Leaf
            }
            Kind::Map(m) => container(
                m.relationship == ElementRelationship::Atomic,
                b.as_object().map(Object::is_empty),
                a.as_object().map(Object::is_empty),
                Entry::Map(m),
            ),
            Kind::List(l) => container(
                l.relationship == ElementRelationship::Atomic,
                b.as_array().map(Vec::is_empty),
                a.as_array().map(Vec::is_empty),
                Entry::List(l),
            ),
            Kind::Invalid => Entry::Other,
        })
    }

    /// Whether the walk is at the versions' `metadata`.
    fn in_metadata(&self) -> bool {
        matches!(self.steps.as_slice(), [StepRef::Field("metadata")])
    }

    fn leave(&mut self) {
        self.path.pop();
        self.steps.pop();
    }
}
