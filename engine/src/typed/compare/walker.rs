//! The walker: one pass over the live object, the config and the managers' sets that merges,
//! compares and collects field sets together: nodes, scalars and maps here, lists in
//! [`lists`](super::lists).

use super::*;

pub(super) struct Walker<'s> {
    pub(super) schema: &'s Schema,
    pub(super) mode: Mode,
    /// Whether the right value is checked as validation would check it, at the nodes the walk
    /// visits; off below a subtree already validated whole.
    pub(super) check: bool,
    /// Set when a check failed (the caller then validates the whole right value for the errors).
    pub(super) invalid: bool,
    /// Cleared when a fused walk meets values whose kinds differ from the type's choice.
    pub(super) fused_ok: bool,
    /// Whether comparison sets are built, or only the `any` flag.
    pub(super) sets: bool,
    /// Set when a granular list's items did not line up one for one.
    pub(super) realigned: bool,
    /// Whether the right value's field set is a given set, as far as the walk has seen.
    pub(super) owned: Owned,
    /// Whether parts of the right value the merged value takes whole are left for the caller to
    /// move in (see [`Fill`]).
    pub(super) defer: bool,
}

/// What a walk following a set (the applier's previous one) found: whether the right value's
/// field set ([`to_field_set`](super::super::to_field_set)) is exactly that set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Owned {
    /// No set was given.
    Off,
    /// Exactly the set, so far.
    Same,
    /// Not the set.
    Differs,
    /// The walk met values it cannot follow the set through (their kinds differ from the
    /// type's choice, or list keys of kinds only it matches); a separate
    /// [`is_field_set_of`](super::super::is_field_set_of) decides.
    Unknown,
}

impl<'s> Walker<'s> {
    pub(super) fn new(schema: &'s Schema, mode: Mode, sets: bool, check: bool) -> Self {
        Walker { schema, mode, check, invalid: false, fused_ok: true, sets, realigned: false, owned: Owned::Off, defer: false }
    }

    /// Records whether the followed set still matches.
    pub(super) fn own(&mut self, ok: bool) {
        if !ok && self.owned == Owned::Same {
            self.owned = Owned::Differs;
        }
    }

    /// Stops following the set without a verdict: a separate check decides.
    pub(super) fn unknown(&mut self) {
        if self.owned == Owned::Same {
            self.owned = Owned::Unknown;
        }
    }

    /// The followed set at a node the walk visits, if it is still followed: only where the
    /// right side has a value.
    pub(super) fn owning<'o>(&self, rhs: Option<&Value>, own: Option<&'o Set>) -> Option<&'o Set> {
        own.filter(|_| rhs.is_some() && self.owned == Owned::Same)
    }

    /// Follows `set` over a whole right subtree `r` at once (the rest of the walk does not
    /// descend into it); returns whether `r` is a leaf member.
    pub(super) fn own_whole(&mut self, tr: &TypeRef, r: &Value, set: &Set) -> bool {
        let leaf = fieldset::same_node(self.schema, tr, r, set);
        self.own(leaf.is_some());
        leaf.unwrap_or(false)
    }

    /// Validates `v` whole (in check mode), so the walk below it need not check it.
    pub(super) fn check_whole(&mut self, tr: &TypeRef, v: &Value) {
        if !validate::node(self.schema, tr, v).is_empty() {
            self.invalid = true;
        }
    }

    /// Walks a node whose right value was validated whole, without checking it again.
    pub(super) fn node_checked(
        &mut self,
        lhs: Option<&Value>,
        rhs: Option<&Value>,
        tr: &'s TypeRef,
        own: Option<&Set>,
    ) -> (NodeOut, ValidationErrors) {
        let check = std::mem::replace(&mut self.check, false);
        let r = self.node(lhs, rhs, tr, own);
        self.check = check;
        r
    }

    /// Walks one node; `own` is the followed set's part for it (see [`Owned`]).
    pub(super) fn node(
        &mut self,
        lhs: Option<&Value>,
        rhs: Option<&Value>,
        tr: &'s TypeRef,
        own: Option<&Set>,
    ) -> (NodeOut, ValidationErrors) {
        // A plain comparison (nothing merged, nothing validated) of equal values finds nothing
        // below them: one equality test of the two JSON trees stands for the typed walk (a
        // write's history compares two versions that differ in a few fields).
        if self.mode == Mode::Compare && !self.check {
            if let (Some(l), Some(r)) = (lhs, rhs) {
                if l == r {
                    return (NodeOut::default(), ValidationErrors::default());
                }
            }
        }
        let own = self.owning(rhs, own);
        if let Some(done) = self.one_sided(lhs, rhs, tr, own) {
            return done;
        }
        let atom = match resolve(self.schema, tr) {
            Ok(a) => a,
            Err(e) => return (NodeOut::default(), e),
        };
        let kl = deduce(atom, lhs);
        let kr = deduce(atom, rhs);
        let (own, leaf) = self.own_node(own, rhs, kl, kr);
        if let (true, Some(r)) = (self.check, rhs) {
            if let Some(done) = self.check_node(lhs, r, tr, kr, leaf) {
                return done;
            }
        }
        if !kl.same_handler(&kr) {
            return self.mixed_kinds(kl, kr, lhs, rhs, tr);
        }
        let mut errs = ValidationErrors::default();
        let (mut n, e) = self.handle(kr, lhs, rhs, tr, own);
        errs.extend(e);
        n.leaf = leaf;
        (n, errs)
    }

    /// A node only one side has, when the walk need not descend: a subtree only the right
    /// side has merges to a copy of it (when no path sets are wanted, one deep copy replaces
    /// the walk, a validating one in check mode); one only the left side has merges to
    /// itself, unchanged (both inputs are validated beforehand, so the walk would find
    /// nothing). `None` when the node is to be walked.
    fn one_sided(
        &mut self,
        lhs: Option<&Value>,
        rhs: Option<&Value>,
        tr: &'s TypeRef,
        own: Option<&Set>,
    ) -> Option<(NodeOut, ValidationErrors)> {
        match (lhs, rhs) {
            (None, Some(r)) if self.mode == Mode::Merge || (self.mode == Mode::MergeCompare && !self.sets) => {
                let mut n = NodeOut::default();
                if self.defer {
                    // Deferring: the right value itself is moved in later.
                    if self.check {
                        self.invalid |= !validate::node(self.schema, tr, r).is_empty();
                    }
                    n.rsame = true;
                } else if self.check {
                    let (copy, errs) = validate::copy(self.schema, tr, r);
                    self.invalid |= !errs.is_empty();
                    n.out = Some(copy);
                } else {
                    n.out = Some(r.clone());
                }
                n.flags[ADDED] = self.mode.compares();
                n.any = self.mode.compares() && has_children(r);
                if let Some(set) = own {
                    n.leaf = self.own_whole(tr, r, set);
                }
                Some((n, ValidationErrors::default()))
            }
            (Some(_), None) if self.mode.merges() => Some((NodeOut { same: true, ..NodeOut::default() }, ValidationErrors::default())),
            _ => None,
        }
    }

    /// The followed set at a node of kinds `kl` (left) and `kr` (right): leaves are decided
    /// here (whether the node is one is returned), granular containers follow it through
    /// their entries or items (their part of the set is returned).
    fn own_node<'o>(&mut self, own: Option<&'o Set>, rhs: Option<&Value>, kl: Kind<'s>, kr: Kind<'s>) -> (Option<&'o Set>, bool) {
        let mut leaf = false;
        let own = match (own, rhs) {
            (Some(set), Some(r)) if kl.same_handler(&kr) => match kr {
                Kind::List(l) if l.relationship != ElementRelationship::Atomic && r.is_array() => Some(set),
                Kind::Map(m) if m.relationship != ElementRelationship::Atomic && r.is_object() => Some(set),
                Kind::Invalid => {
                    self.own(false);
                    None
                }
                _ => {
                    // Scalars and atomic containers are leaf members; a null container owns
                    // nothing below it.
                    leaf = match kr {
                        Kind::List(l) => l.relationship == ElementRelationship::Atomic,
                        Kind::Map(m) => m.relationship == ElementRelationship::Atomic,
                        _ => true,
                    };
                    self.own(bare(set));
                    None
                }
            },
            (Some(_), _) => {
                self.unknown();
                None
            }
            (None, _) => None,
        };
        (own, leaf)
    }

    /// Check mode: the checks validation makes of this node itself, its right value `r` of
    /// kind `kr`. The walk makes the others: scalars are checked by kind, an undeclared field
    /// has the empty type, which admits no value, and malformed or duplicate items of the part
    /// of a list that does not line up are reported; granular containers are walked through
    /// every right entry or item, items lined up with left ones being validated whole
    /// (`item`). An atomic container is a leaf to the walk, validated whole: its result.
    fn check_node(
        &mut self,
        lhs: Option<&Value>,
        r: &Value,
        tr: &'s TypeRef,
        kr: Kind<'s>,
        leaf: bool,
    ) -> Option<(NodeOut, ValidationErrors)> {
        let (container, atomic) = match kr {
            Kind::List(l) => (matches!(r, Value::Array(_) | Value::Null), l.relationship == ElementRelationship::Atomic),
            Kind::Map(m) => (matches!(r, Value::Object(_) | Value::Null), m.relationship == ElementRelationship::Atomic),
            Kind::Scalar(_) | Kind::Invalid => (true, false),
        };
        if !container {
            self.invalid = true;
        } else if atomic {
            self.check_whole(tr, r);
            let (mut n, e) = self.node_checked(lhs, Some(r), tr, None);
            n.leaf = leaf;
            return Some((n, e));
        }
        None
    }

    /// A node whose two sides are of different kinds: like structured-merge-diff, the value
    /// is walked with the left kind first; only its comparison results are kept.
    fn mixed_kinds(
        &mut self,
        kl: Kind<'s>,
        kr: Kind<'s>,
        lhs: Option<&Value>,
        rhs: Option<&Value>,
        tr: &'s TypeRef,
    ) -> (NodeOut, ValidationErrors) {
        let mut errs = ValidationErrors::default();
        if self.mode == Mode::MergeCompare && lhs.is_some() && rhs.is_some() {
            self.fused_ok = false;
        }
        let (n, e) = self.handle(kl, lhs, rhs, tr, None);
        errs.extend(e);
        let (mut m, e) = self.handle(kr, lhs, rhs, tr, None);
        errs.extend(e);
        m.any |= n.any;
        for k in 0..3 {
            m.flags[k] |= n.flags[k];
            if !n.sets[k].is_empty() {
                m.sets[k] = m.sets[k].union(&n.sets[k]);
            }
        }
        (m, errs)
    }

    pub(super) fn handle(
        &mut self,
        kind: Kind<'s>,
        lhs: Option<&Value>,
        rhs: Option<&Value>,
        tr: &TypeRef,
        own: Option<&Set>,
    ) -> (NodeOut, ValidationErrors) {
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
            Kind::List(list) => self.list(list, lhs, rhs, own),
            Kind::Map(map) => self.map(map, lhs, rhs, own),
            Kind::Invalid => (NodeOut::default(), invalid_atom(tr)),
        }
    }

    /// A leaf: the right value wins (merge), or the two are compared whole (compare).
    pub(super) fn leaf(&self, lhs: Option<&Value>, rhs: Option<&Value>) -> NodeOut {
        let mut n = NodeOut::default();
        if self.mode.merges() {
            match (lhs, rhs) {
                (Some(l), Some(r)) if l == r => {
                    n.same = true;
                    n.rsame = self.defer;
                }
                (_, Some(_)) if self.defer => n.rsame = true,
                (_, Some(r)) => n.out = Some(r.clone()),
                (Some(_), None) => n.same = true,
                (None, None) => {}
            }
        }
        match (self.mode, lhs, rhs) {
            (Mode::Merge, _, _) => {}
            (_, None, _) => n.flags[ADDED] = true,
            (Mode::MergeCompare, Some(_), None) => {}
            (_, _, None) => n.flags[REMOVED] = true,
            (_, Some(l), Some(r)) => n.flags[MODIFIED] = !value::equals(l, r),
        }
        n
    }

    /// After the children of a granular container: the container itself appeared or vanished.
    pub(super) fn post(&self, n: &mut NodeOut, lhs: Option<&Value>, rhs: Option<&Value>) {
        if self.mode.compares() {
            if lhs.is_none() {
                n.flags[ADDED] = true;
            } else if rhs.is_none() && self.mode == Mode::Compare {
                n.flags[REMOVED] = true;
            }
        }
    }

    pub(super) fn map<'v>(
        &mut self,
        t: &'s Map,
        lhs: Option<&'v Value>,
        rhs: Option<&'v Value>,
        own: Option<&Set>,
    ) -> (NodeOut, ValidationErrors) {
        let lm = lhs.and_then(Value::as_object);
        let rm = rhs.and_then(Value::as_object);
        let empty = lm.is_none_or(|m| m.is_empty()) && rm.is_none_or(|m| m.is_empty());
        if t.relationship == ElementRelationship::Atomic || empty {
            if let Some(set) = own {
                self.own(bare(set));
            }
            return (self.leaf(lhs, rhs), ValidationErrors::default());
        }
        let mut errs = ValidationErrors::default();
        let mut parts: Vec<Part<'v, 'v>> = Vec::new();
        let mut col = Collector { off: !self.sets, ..Collector::default() };
        // The followed set's members and children, matched in key order with the right entries.
        let (mut mi, mut ci) = (0, 0);
        let mut visit = |w: &mut Self, key: &'v str, l: Option<&'v Value>, r: Option<&'v Value>| {
            let set = w.owning(r, own);
            let child = set.map(|s| match s.children().get(ci) {
                Some((PathElement::FieldName(n), c)) if **n == *key => {
                    ci += 1;
                    c
                }
                _ => fieldset::empty(),
            });
            let (n, e) = w.node(l, r, t.entry_type(key), child);
            if !e.is_empty() {
                errs.extend(e.prefixed(&PathElement::field(key)));
            }
            if let (Some(s), Some(r)) = (set, r) {
                let empty_map = matches!(r, Value::Object(o) if o.is_empty());
                if n.leaf || r.is_null() || empty_map || t.find_field(key).is_none() {
                    match s.members().get(mi) {
                        Some(PathElement::FieldName(n)) if **n == *key => mi += 1,
                        _ => w.own(false),
                    }
                }
            }
            let mut n = n;
            if w.mode.merges() {
                Part::push(&mut parts, key, 0, l, &mut n, false);
            }
            if w.mode.compares() {
                col.add(|| t.field_element(key), n);
            }
        };
        merge_sorted(lm, rm, |k, l, r| visit(self, k, l, r));
        if let Some(set) = self.owning(rhs, own) {
            self.own(mi == set.members().len() && ci == set.children().len());
        }
        (self.map_out(parts, col, lm.is_some(), rm.is_some(), lhs, rhs), errs)
    }

    /// The result of a granular map's walk, its entries' results `parts` and `col`: in merge
    /// mode the merged map (or that it is either side unchanged), in compare mode the
    /// collected sets.
    fn map_out(
        &self,
        parts: Vec<Part<'_, '_>>,
        col: Collector,
        lhs_map: bool,
        rhs_map: bool,
        lhs: Option<&Value>,
        rhs: Option<&Value>,
    ) -> NodeOut {
        let mut n = NodeOut::default();
        if self.mode.merges() {
            // Exactly the right map: every entry is the right one, and no left entry is kept.
            n.rsame = self.defer && rhs_map && parts.iter().all(|p| p.rsame);
            if lhs_map && parts.iter().all(|p| p.same) {
                n.same = true;
            } else if !n.rsame {
                let mut out = serde_json::Map::new();
                let mut fills = Vec::new();
                for p in parts {
                    let key = p.key;
                    if let Some(v) = p.value(&mut fills, || Slot::Key(key.to_string())) {
                        out.insert(key.to_string(), v);
                    }
                }
                if !out.is_empty() {
                    n.out = Some(Value::Object(out));
                }
                n.fill = (!fills.is_empty()).then_some(Fill::Parts(fills));
            }
        }
        if self.mode.compares() {
            n.any = col.any;
            n.sets = col.finish();
        }
        self.post(&mut n, lhs, rhs);
        n
    }
}

/// Calls `visit` with each key of two maps and its value on either side, in key order (both
/// maps iterate in key order: a sorted merge).
fn merge_sorted<'v>(
    lm: Option<&'v serde_json::Map<String, Value>>,
    rm: Option<&'v serde_json::Map<String, Value>>,
    mut visit: impl FnMut(&'v str, Option<&'v Value>, Option<&'v Value>),
) {
    let mut li = lm.into_iter().flatten().peekable();
    let mut ri = rm.into_iter().flatten().peekable();
    loop {
        match (li.peek(), ri.peek()) {
            (None, None) => break,
            (Some((lk, _)), Some((rk, _))) if lk == rk => {
                let ((k, l), (_, r)) = (li.next().unwrap_or_else(|| unreachable!()), ri.next().unwrap_or_else(|| unreachable!()));
                visit(k, Some(l), Some(r));
            }
            (Some((lk, _)), Some((rk, _))) if lk < rk => {
                let (k, l) = li.next().unwrap_or_else(|| unreachable!());
                visit(k, Some(l), None);
            }
            (Some(_), None) => {
                let (k, l) = li.next().unwrap_or_else(|| unreachable!());
                visit(k, Some(l), None);
            }
            _ => {
                let (k, r) = ri.next().unwrap_or_else(|| unreachable!());
                visit(k, None, Some(r));
            }
        }
    }
}
