//! Merging two values of a type (config wins) and comparing them field by field.
//!
//! Both are one walk over the two values together, as structured-merge-diff's merging walker:
//! leaves (scalars, atomic containers, containers empty on both sides) are decided whole; maps
//! are walked key by key; lists are walked item by item, matched by key, value or position.

use super::{bare, deduce, fieldset, invalid_atom, item_key, resolve, validate, validate_scalar, ItemKey, Kind, ValidationErrors};
use crate::schema::{ElementRelationship, List, Map, Schema, TypeRef};
use fieldstore_codec::{value, PathElement, Set};
use serde_json::Value;

mod lists;
mod walker;
use walker::{Owned, Walker};

type HashMap<K, V> = std::collections::HashMap<K, V, ahash::RandomState>;
type HashSet<K> = std::collections::HashSet<K, ahash::RandomState>;

/// What changed between two values: the paths added, modified (leaf value differs) and removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Comparison {
    /// Paths present only in the new value.
    pub added: Set,
    /// Leaf paths present in both with different values.
    pub modified: Set,
    /// Paths present only in the old value.
    pub removed: Set,
    /// Whether the items of some list present on both sides did not line up one for one (items
    /// were added, removed or moved); when false, every list kept its items in their order.
    pub lists_realigned: bool,
}

impl Comparison {
    /// Whether nothing changed.
    pub fn is_same(&self) -> bool {
        self.added.is_empty() && self.modified.is_empty() && self.removed.is_empty()
    }
}

/// Merges `rhs` into `lhs`: values of `rhs` win at the leaves; map entries and list items of
/// both are kept, list items in `lhs` order followed by the new items of `rhs` in `rhs` order.
/// `None` stands for no value at all (structured-merge-diff's nil).
///
/// # Errors
/// Malformed items met on the way (both inputs are normally validated beforehand).
pub fn merge(schema: &Schema, tr: &TypeRef, lhs: &Value, rhs: &Value) -> Result<Option<Value>, ValidationErrors> {
    let mut w = Walker::new(schema, Mode::Merge, true, false);
    let (n, errs) = w.node(Some(lhs), Some(rhs), tr, None);
    if errs.is_empty() {
        Ok(if n.same { Some(lhs.clone()) } else { n.out })
    } else {
        Err(errs)
    }
}

/// What a fused merge learnt about the change from the left value to the merged one.
#[derive(Debug, Clone)]
pub enum Fused {
    /// The full comparison, as [`compare`]`(lhs, merged)` gives it.
    Comparison(Comparison),
    /// Only whether anything changed (when the sets were not asked for).
    Changed(bool),
    /// The values mix kinds in a way only a separate [`compare`] reproduces exactly.
    Unknown,
}

/// The result of [`merge_and_compare`].
#[derive(Debug, Clone)]
pub struct MergeOutcome {
    /// The merged value; `None` when it is exactly the left value (see `same`), when it is the
    /// whole right value, left to be moved in (see `fill`), or nothing.
    pub value: Option<Value>,
    /// The merged value is exactly the left value, so it was not built.
    pub same: bool,
    /// What changed from the left value to the merged one.
    pub fused: Fused,
    /// Whether the right value's field set is exactly [`MergeOptions::owned`]; `None` when no
    /// set was given or the walk could not tell.
    pub owned: Option<bool>,
    /// With [`MergeOptions::defer`]: the parts of the right value the merged value is still
    /// missing (`value` holds nulls there, or is `None` when the merged value is the whole
    /// right value). `None` when nothing is missing.
    pub fill: Option<Fill>,
}

/// Where the merged value of a deferring walk ([`MergeOptions::defer`]) takes parts of the right
/// value that the walk left out, so that a caller owning the right value moves them in instead
/// of copying them: a sole applier re-applying its config with a change, or creating an object,
/// gets its config itself as the object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fill {
    /// The whole right value.
    Whole,
    /// Parts of a container the walk built: each entry or item of the merged value, the entry or
    /// item of the right value it takes, and what of it.
    Parts(Vec<(Slot, Fill)>),
}

/// A place in a merged container and in the right one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slot {
    /// A map entry, under the same key on both sides.
    Key(String),
    /// A list item: its index in the merged list and in the right list.
    Index(usize, usize),
}

impl Fill {
    /// Puts into `merged` the parts of `rhs` it is missing: moved out of `rhs` when `take`
    /// (leaving nulls there), else copied.
    pub fn put(self, merged: &mut Value, rhs: &mut Value, take: bool) {
        match self {
            Fill::Whole => *merged = if take { std::mem::take(rhs) } else { rhs.clone() },
            Fill::Parts(parts) => {
                for (slot, fill) in parts {
                    let (m, r) = match &slot {
                        Slot::Key(k) => (merged.get_mut(k.as_str()), rhs.get_mut(k.as_str())),
                        Slot::Index(i, j) => (merged.get_mut(*i), rhs.get_mut(*j)),
                    };
                    if let (Some(m), Some(r)) = (m, r) {
                        fill.put(m, r, take);
                    }
                }
            }
        }
    }
}

/// How [`merge_and_compare_with`] walks.
#[derive(Debug, Clone, Copy, Default)]
pub struct MergeOptions<'a> {
    /// Whether the whole comparison is built, or only whether anything changed.
    pub sets: bool,
    /// Whether the right value is validated in the walk: the result is then that of
    /// [`validate`]`(rhs)` and, if it conforms, of the merge, from one walk (each list item of
    /// the right value is validated just before it is merged, while it is in the cache).
    pub validate: bool,
    /// A set (the applier's previous one) to match with the right value's field set in the
    /// same walk, as [`is_field_set_of`](super::is_field_set_of) would.
    pub owned: Option<&'a Set>,
    /// Whether parts of the merged value that are exactly parts of the right value are left out
    /// of it and listed in [`MergeOutcome::fill`], for a caller that owns the right value to
    /// move them in ([`Fill::put`]).
    pub defer: bool,
}

/// [`merge`] and, in the same walk, what changed from `lhs` to the merged value: the whole
/// comparison when `sets` is true, else only whether anything changed. Subtrees the merge leaves
/// exactly as they were are not copied; a merge that changes nothing allocates no value.
///
/// # Errors
/// Malformed items met on the way.
pub fn merge_and_compare(schema: &Schema, tr: &TypeRef, lhs: &Value, rhs: &Value, sets: bool) -> Result<MergeOutcome, ValidationErrors> {
    merge_and_compare_with(schema, tr, lhs, rhs, MergeOptions { sets, ..MergeOptions::default() })
}

/// [`merge_and_compare`], validating the right value and matching its field set with a given
/// one in the same walk, as `opts` asks.
///
/// # Errors
/// With `opts.validate`, what [`validate`] finds in `rhs`; else malformed items met on the way.
pub fn merge_and_compare_with(
    schema: &Schema,
    tr: &TypeRef,
    lhs: &Value,
    rhs: &Value,
    opts: MergeOptions<'_>,
) -> Result<MergeOutcome, ValidationErrors> {
    let mut w = Walker::new(schema, Mode::MergeCompare, opts.sets, opts.validate);
    w.defer = opts.defer;
    if opts.owned.is_some() {
        w.owned = Owned::Same;
    }
    let (n, errs) = w.node(Some(lhs), Some(rhs), tr, opts.owned);
    if w.invalid || !errs.is_empty() {
        checked_failure(schema, tr, rhs, w.invalid, errs)?;
        // The walk's checks saw a problem validation does not: walk again without them.
        return merge_and_compare_with(schema, tr, lhs, rhs, MergeOptions { validate: false, ..opts });
    }
    let owned = match w.owned {
        Owned::Same => Some(true),
        Owned::Differs => Some(false),
        Owned::Off | Owned::Unknown => None,
    };
    let fused = if !w.fused_ok {
        Fused::Unknown
    } else if opts.sets {
        let [added, modified, removed] = n.sets;
        Fused::Comparison(Comparison { added, modified, removed, lists_realigned: w.realigned })
    } else {
        Fused::Changed(n.any)
    };
    let fill = if n.same {
        None
    } else if n.rsame {
        Some(Fill::Whole)
    } else {
        n.fill
    };
    Ok(MergeOutcome { value: n.out, same: n.same, fused, owned, fill })
}

/// The field-level difference from `lhs` to `rhs`.
///
/// # Errors
/// Malformed items met on the way.
pub fn compare(schema: &Schema, tr: &TypeRef, lhs: &Value, rhs: &Value) -> Result<Comparison, ValidationErrors> {
    compare_with(schema, tr, lhs, rhs, false)
}

/// [`compare`] with a right value not validated yet: the result of [`validate`]`(rhs)` and
/// then, if it conforms, [`compare`], from one walk.
///
/// # Errors
/// What [`validate`] finds in `rhs`; else malformed items met on the way.
pub fn validate_and_compare(schema: &Schema, tr: &TypeRef, lhs: &Value, rhs: &Value) -> Result<Comparison, ValidationErrors> {
    compare_with(schema, tr, lhs, rhs, true)
}

fn compare_with(schema: &Schema, tr: &TypeRef, lhs: &Value, rhs: &Value, check: bool) -> Result<Comparison, ValidationErrors> {
    let mut w = Walker::new(schema, Mode::Compare, true, check);
    let (n, errs) = w.node(Some(lhs), Some(rhs), tr, None);
    if w.invalid || !errs.is_empty() {
        checked_failure(schema, tr, rhs, w.invalid, errs)?;
        return compare_with(schema, tr, lhs, rhs, false);
    }
    let [added, modified, removed] = n.sets;
    Ok(Comparison { added, modified, removed, lists_realigned: w.realigned })
}

/// After a walk that found problems: the errors to report, as validating `rhs` first and then
/// walking would have reported them. `Ok` only when the walk's own checks (`invalid`) saw a
/// problem [`validate`] does not, so the caller must walk again without them.
fn checked_failure(schema: &Schema, tr: &TypeRef, rhs: &Value, invalid: bool, errs: ValidationErrors) -> Result<(), ValidationErrors> {
    validate::validate(schema, tr, rhs)?;
    if invalid {
        Ok(())
    } else {
        Err(errs)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Build the merged value.
    Merge,
    /// Compare the two values.
    Compare,
    /// Build the merged value and compare the left value with it: where the right value is
    /// absent the merged value is the left one, so nothing changed there.
    MergeCompare,
}

impl Mode {
    fn merges(self) -> bool {
        self != Mode::Compare
    }

    fn compares(self) -> bool {
        self != Mode::Merge
    }
}

const ADDED: usize = 0;
const MODIFIED: usize = 1;
const REMOVED: usize = 2;

/// The result of walking one node: its merged value (merge mode), and (compare mode) whether the
/// node itself was added/modified/removed plus the comparison sets of its children.
#[derive(Default)]
struct NodeOut {
    out: Option<Value>,
    flags: [bool; 3],
    sets: [Set; 3],
    /// Merge modes: the merged value is exactly the left value (same representation), so `out`
    /// is not built and the parent copies the left value only if it must build itself.
    same: bool,
    /// Whether anything changed strictly below this node (kept even when sets are not built).
    /// A change of the node itself is in `flags`; at the root it counts for nothing, as inserting
    /// the empty path into a set does nothing.
    any: bool,
    /// Following an owned set: the right value is a leaf member of its parent's set.
    leaf: bool,
    /// Deferring walks: the merged value is exactly the right value (possibly the left one too,
    /// see `same`); unless `same`, it is not built, and the parent takes the right value.
    rsame: bool,
    /// Deferring walks: the parts of the right value the built `out` is missing.
    fill: Option<Fill>,
}

/// Collects the children's comparison results of one node, turned into sets once at the end.
#[derive(Default)]
struct Collector {
    members: [Vec<PathElement>; 3],
    children: [Vec<(PathElement, Set)>; 3],
    any: bool,
    /// Whether sets are built at all.
    off: bool,
}

impl Collector {
    /// Records a child's results; its path element is built only if something is recorded.
    fn add(&mut self, pe: impl FnOnce() -> PathElement, n: NodeOut) {
        let NodeOut { flags, sets, any, .. } = n;
        if !any && !flags.iter().any(|f| *f) && sets.iter().all(Set::is_empty) {
            return;
        }
        self.any = true;
        if self.off {
            return;
        }
        let pe = pe();
        for (k, s) in sets.into_iter().enumerate() {
            if flags[k] {
                self.members[k].push(pe.clone());
            }
            if !s.is_empty() {
                self.children[k].push((pe.clone(), s));
            }
        }
    }

    fn finish(self) -> [Set; 3] {
        let Collector { members, children, .. } = self;
        let [m0, m1, m2] = members;
        let [c0, c1, c2] = children;
        [Set::from_parts(m0, c0), Set::from_parts(m1, c1), Set::from_parts(m2, c2)]
    }
}

/// Reads a byte of each part (entries, keys, string values) of list item `i + 4` of `items`, if
/// any, while the walk works on item `i`. The parts of an item are separate allocations, and
/// the walk reads them one after another; read up front, their loads are in flight together,
/// and on a list too large for the cache they come from memory while the walk works on earlier
/// items. Measured (session 8, `APPLY_RESULTS.md`): 15–20% off reapply and change_one at 50k
/// items; none when it was a called function instead of inlined, and none in the validation,
/// field-set and realigned-list loops, where it is not used.
#[inline(always)]
fn touch_ahead(items: &[Value], i: usize) {
    if let Some(Value::Object(m)) = items.get(i + 4) {
        let mut acc = 0u8;
        for (k, v) in m {
            acc ^= k.as_bytes().first().copied().unwrap_or(0);
            if let Value::String(s) = v {
                acc ^= s.as_bytes().first().copied().unwrap_or(0);
            }
        }
        std::hint::black_box(acc);
    }
}

/// Whether a value has entries or items (so adding it adds paths below it).
fn has_children(v: &Value) -> bool {
    match v {
        Value::Object(m) => !m.is_empty(),
        Value::Array(a) => !a.is_empty(),
        _ => false,
    }
}

/// One child's merge result, kept until the parent knows whether it must build itself.
struct Part<'k, 'v> {
    key: &'k str,
    lhs: Option<&'v Value>,
    /// The child's index in the right list (list items).
    at: usize,
    out: Option<Value>,
    same: bool,
    /// The child's merged value is the right one (see [`NodeOut::rsame`]; only deferring walks
    /// set it).
    rsame: bool,
    fill: Option<Fill>,
    /// This or an earlier sibling is not unchanged, so the parent is not the left value.
    changed: bool,
    /// This or an earlier sibling is not the right one, so the parent is not the right value.
    mixed: bool,
}

impl<'k, 'v> Part<'k, 'v> {
    /// Records one child's merge result after those of its earlier siblings. Once the parent can
    /// be neither the left value nor (deferring) the right one, or when the caller knows it will
    /// be built (`build`), an unchanged child is copied right away, while the walk has just read
    /// it, instead of in a second pass over a container that may no longer be in the cache.
    fn push(parts: &mut Vec<Part<'k, 'v>>, key: &'k str, at: usize, lhs: Option<&'v Value>, n: &mut NodeOut, build: bool) {
        let (changed, mixed) = parts.last().map_or((false, false), |p| (p.changed, p.mixed));
        let building = build || (changed && mixed);
        let part = match (n.same, lhs) {
            // A deferred right child is moved in later rather than copied from the left.
            (true, Some(l)) if building && !n.rsame => {
                Part { key, lhs, at, out: Some(l.clone()), same: false, rsame: false, fill: None, changed: true, mixed: true }
            }
            _ => Part {
                key,
                lhs,
                at,
                out: n.out.take(),
                same: n.same,
                rsame: n.rsame,
                fill: n.fill.take(),
                changed: changed || !n.same,
                mixed: mixed || !n.rsame,
            },
        };
        parts.push(part);
    }

    /// The child's merged value: its own, or a copy of the left one when unchanged; deferring,
    /// a null where the right child goes, recorded in `fills` under the slot `slot` names.
    fn value(self, fills: &mut Vec<(Slot, Fill)>, slot: impl FnOnce() -> Slot) -> Option<Value> {
        if self.rsame {
            fills.push((slot(), Fill::Whole));
            Some(Value::Null)
        } else if self.same {
            self.lhs.cloned()
        } else {
            if let Some(f) = self.fill {
                fills.push((slot(), f));
            }
            self.out
        }
    }
}
