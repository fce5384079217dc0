//! Merging two values of a type (config wins) and comparing them field by field.
//!
//! Both are one walk over the two values together, as structured-merge-diff's merging walker:
//! leaves (scalars, atomic containers, containers empty on both sides) are decided whole; maps
//! are walked key by key; lists are walked item by item, matched by key, value or position.

use super::{deduce, invalid_atom, list_item_pe, resolve, validate_scalar, Kind, ValidationErrors};
use crate::schema::{ElementRelationship, List, Map, Schema, TypeRef};
use fieldstore_codec::{value, PathElement, Set};
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// What changed between two values: the paths added, modified (leaf value differs) and removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Comparison {
    /// Paths present only in the new value.
    pub added: Set,
    /// Leaf paths present in both with different values.
    pub modified: Set,
    /// Paths present only in the old value.
    pub removed: Set,
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
    let mut w = Walker { schema, mode: Mode::Merge };
    let (n, errs) = w.node(Some(lhs), Some(rhs), tr);
    if errs.is_empty() {
        Ok(n.out)
    } else {
        Err(errs)
    }
}

/// The field-level difference from `lhs` to `rhs`.
///
/// # Errors
/// Malformed items met on the way.
pub fn compare(schema: &Schema, tr: &TypeRef, lhs: &Value, rhs: &Value) -> Result<Comparison, ValidationErrors> {
    let mut w = Walker { schema, mode: Mode::Compare };
    let (n, errs) = w.node(Some(lhs), Some(rhs), tr);
    if errs.is_empty() {
        let [added, modified, removed] = n.sets;
        Ok(Comparison { added, modified, removed })
    } else {
        Err(errs)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Merge,
    Compare,
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
}

/// Collects the children's comparison results of one node, turned into sets once at the end.
#[derive(Default)]
struct Collector {
    members: [Vec<PathElement>; 3],
    children: [Vec<(PathElement, Set)>; 3],
}

impl Collector {
    fn add(&mut self, pe: &PathElement, n: NodeOut) {
        let NodeOut { flags, sets, .. } = n;
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
        let Collector { members, children } = self;
        let [m0, m1, m2] = members;
        let [c0, c1, c2] = children;
        [Set::from_parts(m0, c0), Set::from_parts(m1, c1), Set::from_parts(m2, c2)]
    }
}

struct Walker<'s> {
    schema: &'s Schema,
    mode: Mode,
}

impl<'s> Walker<'s> {
    fn node(&mut self, lhs: Option<&Value>, rhs: Option<&Value>, tr: &'s TypeRef) -> (NodeOut, ValidationErrors) {
        let atom = match resolve(self.schema, tr) {
            Ok(a) => a,
            Err(e) => return (NodeOut::default(), e),
        };
        let kl = deduce(atom, lhs);
        let kr = deduce(atom, rhs);
        let mut errs = ValidationErrors::default();
        if !kl.same_handler(&kr) {
            // Like structured-merge-diff, walk the value with the left kind first; only its
            // comparison results are kept.
            let (n, e) = self.handle(kl, lhs, rhs, tr);
            errs.extend(e);
            let (mut m, e) = self.handle(kr, lhs, rhs, tr);
            errs.extend(e);
            for k in 0..3 {
                m.flags[k] |= n.flags[k];
                if !n.sets[k].is_empty() {
                    m.sets[k] = m.sets[k].union(&n.sets[k]);
                }
            }
            return (m, errs);
        }
        let (n, e) = self.handle(kr, lhs, rhs, tr);
        errs.extend(e);
        (n, errs)
    }

    fn handle(&mut self, kind: Kind<'s>, lhs: Option<&Value>, rhs: Option<&Value>, tr: &TypeRef) -> (NodeOut, ValidationErrors) {
        match kind {
            Kind::Scalar(s) => {
                let mut errs = ValidationErrors::default();
                if let Err(e) = validate_scalar(s, lhs, "lhs: ") {
                    errs.extend(e);
                }
                if let Err(e) = validate_scalar(s, rhs, "rhs: ") {
                    errs.extend(e);
                }
                if !errs.is_empty() {
                    return (NodeOut::default(), errs);
                }
                (self.leaf(lhs, rhs), errs)
            }
            Kind::List(list) => self.list(list, lhs, rhs),
            Kind::Map(map) => self.map(map, lhs, rhs),
            Kind::Invalid => (NodeOut::default(), invalid_atom(tr)),
        }
    }

    /// A leaf: the right value wins (merge), or the two are compared whole (compare).
    fn leaf(&self, lhs: Option<&Value>, rhs: Option<&Value>) -> NodeOut {
        let mut n = NodeOut::default();
        match self.mode {
            Mode::Merge => n.out = rhs.or(lhs).cloned(),
            Mode::Compare => match (lhs, rhs) {
                (None, _) => n.flags[ADDED] = true,
                (_, None) => n.flags[REMOVED] = true,
                (Some(l), Some(r)) => n.flags[MODIFIED] = !value::equals(l, r),
            },
        }
        n
    }

    /// After the children of a granular container: the container itself appeared or vanished.
    fn post(&self, n: &mut NodeOut, lhs: Option<&Value>, rhs: Option<&Value>) {
        if self.mode == Mode::Compare {
            if lhs.is_none() {
                n.flags[ADDED] = true;
            } else if rhs.is_none() {
                n.flags[REMOVED] = true;
            }
        }
    }

    fn map(&mut self, t: &'s Map, lhs: Option<&Value>, rhs: Option<&Value>) -> (NodeOut, ValidationErrors) {
        let lm = lhs.and_then(Value::as_object);
        let rm = rhs.and_then(Value::as_object);
        let empty = lm.is_none_or(|m| m.is_empty()) && rm.is_none_or(|m| m.is_empty());
        if t.relationship == ElementRelationship::Atomic || empty {
            return (self.leaf(lhs, rhs), ValidationErrors::default());
        }
        let mut errs = ValidationErrors::default();
        let mut out = serde_json::Map::new();
        let mut col = Collector::default();
        let mut visit = |w: &mut Self, key: &str, l: Option<&Value>, r: Option<&Value>| {
            let pe = PathElement::field(key);
            let (n, e) = w.node(l, r, t.entry_type(key));
            errs.extend(e.prefixed(&pe));
            if w.mode == Mode::Merge {
                if let Some(v) = n.out {
                    out.insert(key.to_string(), v);
                }
            } else {
                col.add(&pe, n);
            }
        };
        // Both maps iterate in key order: walk them as a sorted merge.
        let mut li = lm.into_iter().flatten().peekable();
        let mut ri = rm.into_iter().flatten().peekable();
        loop {
            match (li.peek(), ri.peek()) {
                (None, None) => break,
                (Some((lk, _)), Some((rk, _))) if lk == rk => {
                    let ((k, l), (_, r)) = (li.next().unwrap_or_else(|| unreachable!()), ri.next().unwrap_or_else(|| unreachable!()));
                    visit(self, k, Some(l), Some(r));
                }
                (Some((lk, _)), Some((rk, _))) if lk < rk => {
                    let (k, l) = li.next().unwrap_or_else(|| unreachable!());
                    visit(self, k, Some(l), None);
                }
                (Some(_), None) => {
                    let (k, l) = li.next().unwrap_or_else(|| unreachable!());
                    visit(self, k, Some(l), None);
                }
                _ => {
                    let (k, r) = ri.next().unwrap_or_else(|| unreachable!());
                    visit(self, k, None, Some(r));
                }
            }
        }
        let mut n = NodeOut::default();
        if self.mode == Mode::Merge {
            if !out.is_empty() {
                n.out = Some(Value::Object(out));
            }
        } else {
            n.sets = col.finish();
        }
        self.post(&mut n, lhs, rhs);
        (n, errs)
    }

    fn list(&mut self, t: &'s List, lhs: Option<&Value>, rhs: Option<&Value>) -> (NodeOut, ValidationErrors) {
        let ll = lhs.and_then(Value::as_array);
        let rl = rhs.and_then(Value::as_array);
        let empty = ll.is_none_or(|l| l.is_empty()) && rl.is_none_or(|l| l.is_empty());
        if t.relationship == ElementRelationship::Atomic || empty {
            return (self.leaf(lhs, rhs), ValidationErrors::default());
        }
        let mut errs = ValidationErrors::default();
        let rlen = rl.map_or(0, Vec::len);
        let llen = ll.map_or(0, Vec::len);
        let mut out: Vec<Value> = Vec::with_capacity(if self.mode == Mode::Merge { rlen.max(llen) } else { 0 });
        let mut col = Collector::default();

        let mut rhs_order: Vec<PathElement> = Vec::with_capacity(rlen);
        let mut observed_rhs: HashMap<PathElement, &Value> = HashMap::with_capacity(rlen);
        for (i, child) in rl.into_iter().flatten().enumerate() {
            match list_item_pe(self.schema, t, i, child) {
                Ok(pe) => {
                    if observed_rhs.contains_key(&pe) {
                        errs.extend(ValidationErrors::one(format!("rhs: duplicate entries for key {pe}")));
                    }
                    observed_rhs.insert(pe.clone(), child);
                    rhs_order.push(pe);
                }
                Err(e) => errs.extend(ValidationErrors::one(format!("rhs: element {i}: {e}"))),
            }
        }
        let mut observed_lhs: HashSet<PathElement> = HashSet::with_capacity(llen);
        for (i, child) in ll.into_iter().flatten().enumerate() {
            let pe = match list_item_pe(self.schema, t, i, child) {
                Ok(pe) => pe,
                Err(e) => {
                    errs.extend(ValidationErrors::one(format!("lhs: element {i}: {e}")));
                    continue;
                }
            };
            if observed_lhs.contains(&pe) {
                errs.extend(ValidationErrors::one(format!("lhs: duplicate entries for key {pe}")));
                continue;
            }
            let r = observed_rhs.get(&pe).copied();
            let (n, e) = self.node(Some(child), r, &t.element_type);
            errs.extend(e.prefixed(&pe));
            self.take(&mut out, &mut col, &pe, n);
            observed_lhs.insert(pe);
        }
        for pe in &rhs_order {
            if observed_lhs.contains(pe) {
                continue;
            }
            let r = observed_rhs.get(pe).copied();
            let (n, e) = self.node(None, r, &t.element_type);
            errs.extend(e.prefixed(pe));
            self.take(&mut out, &mut col, pe, n);
        }
        let mut n = NodeOut::default();
        if self.mode == Mode::Merge {
            if !out.is_empty() {
                n.out = Some(Value::Array(out));
            }
        } else {
            n.sets = col.finish();
        }
        self.post(&mut n, lhs, rhs);
        (n, errs)
    }

    fn take(&self, out: &mut Vec<Value>, col: &mut Collector, pe: &PathElement, n: NodeOut) {
        if self.mode == Mode::Merge {
            if let Some(v) = n.out {
                out.push(v);
            }
        } else {
            col.add(pe, n);
        }
    }
}
