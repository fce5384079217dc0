//! The walker: one pass over the live object, the config and the managers' sets that merges,
//! compares and collects field sets together.

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

/// A granular list's part of the followed set, matched with the right items as
/// [`is_field_set_of`](super::super::is_field_set_of) matches them: in the set's order while the items
/// come in it, then, for the rest of the items, by sorting their keys once
/// ([`fieldset::join_sorted`]), which reads only the keys.
pub(super) struct ListOwn<'o> {
    set: &'o Set,
    /// Members and children matched in order so far.
    mc: usize,
    cc: usize,
    /// Once out of order: the first item joined, and each item's child set from there on
    /// (`usize::MAX`: none).
    join: Option<(usize, Vec<usize>)>,
}

/// Where a right item stands in the followed set.
pub(super) enum Member<'o> {
    /// A member, with its set (empty if it has no children).
    Found(&'o Set),
    /// The items are not the set's members.
    Differs,
    /// The keys are of a kind only [`is_field_set_of`](super::super::is_field_set_of) matches.
    Unsupported,
}

impl<'o> ListOwn<'o> {
    pub(super) fn new(set: &'o Set) -> Self {
        ListOwn { set, mc: 0, cc: 0, join: None }
    }

    /// Matches item `i` of `items`, keyed `key`. Items must come in their order until the
    /// first one out of the set's order; from there on, in any order.
    pub(super) fn child(&mut self, schema: &Schema, list: &List, items: &[Value], i: usize, key: &ItemKey<'_>) -> Member<'o> {
        let set = self.set;
        if self.join.is_none() {
            if set.members().get(self.mc).is_some_and(|pe| super::super::cmp_item_pe(list, key, pe).is_eq()) {
                self.mc += 1;
                return Member::Found(match set.children().get(self.cc) {
                    Some((pe, c)) if super::super::cmp_item_pe(list, key, pe).is_eq() => {
                        self.cc += 1;
                        c
                    }
                    _ => fieldset::empty(),
                });
            }
            if let Some(m) = self.join_from(schema, list, items, i) {
                return m;
            }
        }
        match &self.join {
            Some((base, child_of)) => match i.checked_sub(*base).and_then(|j| child_of.get(j)) {
                Some(&c) => Member::Found(set.children().get(c).map_or(fieldset::empty(), |(_, s)| s)),
                None => Member::Differs,
            },
            None => Member::Differs,
        }
    }

    /// Matches items `i..` with the members not matched yet, by their sorted keys; `None` when
    /// they match.
    pub(super) fn join_from(&mut self, schema: &Schema, list: &List, items: &[Value], i: usize) -> Option<Member<'o>> {
        match fieldset::join_sorted(schema, list, &items[i.min(items.len())..], self.set, self.mc, self.cc) {
            fieldset::Join::Matched(child_of) => {
                self.join = Some((i, child_of));
                None
            }
            fieldset::Join::Mismatch => Some(Member::Differs),
            fieldset::Join::Unsupported => Some(Member::Unsupported),
        }
    }

    /// Whether every member and child set was matched.
    pub(super) fn complete(&self) -> bool {
        match &self.join {
            None => self.mc == self.set.members().len() && self.cc == self.set.children().len(),
            // The join matched the remaining members one for one.
            Some((_, child_of)) => self.cc + child_of.iter().filter(|&&c| c != usize::MAX).count() == self.set.children().len(),
        }
    }
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

    /// Records where a list item stands in the followed set; its part of the set if found.
    pub(super) fn member<'o>(&mut self, m: Member<'o>) -> Option<&'o Set> {
        match m {
            Member::Found(child) => return Some(child),
            Member::Differs => self.own(false),
            Member::Unsupported => self.unknown(),
        }
        None
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
        let own = self.owning(rhs, own);
        match (lhs, rhs) {
            // A subtree only the right side has merges to a copy of it; when no path sets are
            // wanted, one deep copy replaces the walk (a validating one in check mode).
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
                return (n, ValidationErrors::default());
            }
            // A subtree only the left side has merges to itself, unchanged (both inputs are
            // validated beforehand, so the walk would find nothing).
            (Some(_), None) if self.mode.merges() => return (NodeOut { same: true, ..NodeOut::default() }, ValidationErrors::default()),
            _ => {}
        }
        let atom = match resolve(self.schema, tr) {
            Ok(a) => a,
            Err(e) => return (NodeOut::default(), e),
        };
        let kl = deduce(atom, lhs);
        let kr = deduce(atom, rhs);
        // The followed set at this node: leaves are decided here, granular containers follow
        // it through their entries or items.
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
        if let (true, Some(r)) = (self.check, rhs) {
            // The checks validation makes of this node itself. The walk makes the others:
            // scalars are checked by kind, an undeclared field has the empty type, which admits
            // no value, and malformed or duplicate items of the part of a list that does not
            // line up are reported; granular containers are walked through every right entry
            // or item, items lined up with left ones being validated whole (`item`).
            let (container, atomic) = match kr {
                Kind::List(l) => (matches!(r, Value::Array(_) | Value::Null), l.relationship == ElementRelationship::Atomic),
                Kind::Map(m) => (matches!(r, Value::Object(_) | Value::Null), m.relationship == ElementRelationship::Atomic),
                Kind::Scalar(_) | Kind::Invalid => (true, false),
            };
            if !container {
                self.invalid = true;
            } else if atomic {
                // Atomic containers are leaves to the walk: validated whole.
                self.check_whole(tr, r);
                let (mut n, e) = self.node_checked(lhs, rhs, tr, None);
                n.leaf = leaf;
                return (n, e);
            }
        }
        let mut errs = ValidationErrors::default();
        if !kl.same_handler(&kr) {
            if self.mode == Mode::MergeCompare && lhs.is_some() && rhs.is_some() {
                self.fused_ok = false;
            }
            // Like structured-merge-diff, walk the value with the left kind first; only its
            // comparison results are kept.
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
            return (m, errs);
        }
        let (mut n, e) = self.handle(kr, lhs, rhs, tr, own);
        errs.extend(e);
        n.leaf = leaf;
        (n, errs)
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
        if let Some(set) = self.owning(rhs, own) {
            self.own(mi == set.members().len() && ci == set.children().len());
        }
        let mut n = NodeOut::default();
        if self.mode.merges() {
            // Exactly the right map: every entry is the right one, and no left entry is kept.
            n.rsame = self.defer && rm.is_some() && parts.iter().all(|p| p.rsame);
            if lm.is_some() && parts.iter().all(|p| p.same) {
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
        (n, errs)
    }

    pub(super) fn list<'v>(
        &mut self,
        t: &'s List,
        lhs: Option<&'v Value>,
        rhs: Option<&'v Value>,
        own: Option<&Set>,
    ) -> (NodeOut, ValidationErrors)
    where
        's: 'v,
    {
        let ll = lhs.and_then(Value::as_array);
        let rl = rhs.and_then(Value::as_array);
        let empty = ll.is_none_or(|l| l.is_empty()) && rl.is_none_or(|l| l.is_empty());
        if t.relationship == ElementRelationship::Atomic || empty {
            if let Some(set) = own {
                self.own(bare(set));
            }
            return (self.leaf(lhs, rhs), ValidationErrors::default());
        }
        // The followed set: one member per right item.
        let mut lo = match own {
            Some(set) if set.members().len() == rl.map_or(0, Vec::len) => Some(ListOwn::new(set)),
            Some(_) => {
                self.own(false);
                None
            }
            None => None,
        };
        let schema = self.schema;
        let lhs_items: &'v [Value] = ll.map_or(&[], Vec::as_slice);
        let rhs_items: &'v [Value] = rl.map_or(&[], Vec::as_slice);
        let (llen, rlen) = (lhs_items.len(), rhs_items.len());
        let mut errs = ValidationErrors::default();
        let mut out: Vec<Part<'static, 'v>> = Vec::with_capacity(if self.mode.merges() { rlen.max(llen) } else { 0 });
        let mut col = Collector { off: !self.sets, ..Collector::default() };
        // Check mode: the right keys of the lined-up items, for validation's duplicate check
        // (the rest of the right items are checked against each other below).
        let dedup = self.check && t.relationship == ElementRelationship::Associative;
        let mut seen: HashSet<ItemKey<'v>> = HashSet::default();

        // Items that line up (same key at the same position, the usual case for re-applies and
        // read-modify-write updates) are walked pairwise without hashing, each key read as its
        // item is walked.
        let mut m = 0;
        let mut well_formed = true;
        while m < llen && m < rlen {
            // The next items' parts start loading while this pair is walked.
            touch_ahead(lhs_items, m);
            touch_ahead(rhs_items, m);
            let (lk, rk) = match (item_key(schema, t, m, &lhs_items[m]), item_key(schema, t, m, &rhs_items[m])) {
                (Ok(a), Ok(b)) => (a, b),
                _ => {
                    well_formed = false;
                    break;
                }
            };
            if lk != rk {
                break;
            }
            let child = self.item_set(&mut lo, t, rhs_items, m, &rk);
            if dedup && !seen.insert(rk) {
                self.invalid = true;
            }
            let (n, e) = self.item(&lhs_items[m], Some(&rhs_items[m]), &t.element_type, child);
            if !e.is_empty() {
                errs.extend(e.prefixed(&lk.to_pe(t)));
            }
            self.take(&mut out, &mut col, || lk.to_pe(t), m, Some(&lhs_items[m]), n, false);
            m += 1;
        }
        // The keys of the other items, or why an item has none.
        let keys = |items: &'v [Value], from: usize| -> Vec<Result<ItemKey<'v>, String>> {
            items.iter().enumerate().skip(from).map(|(i, c)| item_key(schema, t, i, c)).collect()
        };
        let (mut lkeys, mut rkeys) = (keys(lhs_items, m), keys(rhs_items, m));
        if m > 0 && (!well_formed || lkeys.iter().chain(&rkeys).any(Result::is_err)) {
            // A malformed item sends the whole list down the general path, which reports it:
            // what the lined-up items gave is dropped and they are walked again.
            (out, col, errs, m) = (Vec::new(), Collector { off: !self.sets, ..Collector::default() }, ValidationErrors::default(), 0);
            seen.clear();
            if let Some(lo) = &mut lo {
                *lo = ListOwn::new(lo.set);
            }
            (lkeys, rkeys) = (keys(lhs_items, 0), keys(rhs_items, 0));
        }
        if m < llen || m < rlen {
            self.realigned = true;
        }
        // The rest of the right items are walked in the left items' order where they have left
        // ones: the followed set is matched with them by their sorted keys first. (With no
        // left items left, they are walked in their own order.)
        if let Some(l) = lo.as_mut().filter(|l| m < rlen && m < llen && l.join.is_none() && self.owned == Owned::Same) {
            if let Some(m) = l.join_from(schema, t, rhs_items, m) {
                self.member(m);
            }
        }

        let mut rhs_order: Vec<ItemKey<'_>> = Vec::with_capacity(rlen - m);
        let mut observed_rhs: HashMap<ItemKey<'_>, (usize, &Value)> = HashMap::with_capacity_and_hasher(rlen - m, Default::default());
        for ((i, child), k) in rhs_items.iter().enumerate().skip(m).zip(rkeys) {
            match k {
                Ok(k) => {
                    if dedup && seen.contains(&k) {
                        self.invalid = true;
                    }
                    if observed_rhs.insert(k.clone(), (i, child)).is_some() {
                        errs.extend(ValidationErrors::one(format!("rhs: duplicate entries for key {}", k.to_pe(t))));
                    }
                    rhs_order.push(k);
                }
                Err(e) => errs.extend(ValidationErrors::one(format!("rhs: element {i}: {e}"))),
            }
        }
        // The left items by key (the first of duplicates; the others are reported in order).
        let mut observed_lhs: HashMap<ItemKey<'_>, ()> = HashMap::with_capacity_and_hasher(llen - m, Default::default());
        for (i, k) in lkeys.iter_mut().enumerate() {
            *k = match std::mem::replace(k, Err(String::new())) {
                Err(e) => Err(format!("lhs: element {}: {e}", i + m)),
                Ok(k) if observed_lhs.contains_key(&k) => Err(format!("lhs: duplicate entries for key {}", k.to_pe(t))),
                Ok(k) => {
                    observed_lhs.insert(k.clone(), ());
                    Ok(k)
                }
            };
        }
        // A right item the left side lacks means the merged list is built: each unchanged left
        // item is then copied as soon as it is walked, while it is in the cache.
        let grows = self.mode.merges() && rhs_order.iter().any(|k| !observed_lhs.contains_key(k));
        for (child, k) in lhs_items.iter().skip(m).zip(lkeys) {
            let k = match k {
                Ok(k) => k,
                Err(e) => {
                    errs.extend(ValidationErrors::one(e));
                    continue;
                }
            };
            let (at, r, owned) = match observed_rhs.get(&k).copied() {
                Some((i, r)) => (i, Some(r), self.item_set(&mut lo, t, rhs_items, i, &k)),
                None => (usize::MAX, None, None),
            };
            let (n, e) = self.item(child, r, &t.element_type, owned);
            if !e.is_empty() {
                errs.extend(e.prefixed(&k.to_pe(t)));
            }
            self.take(&mut out, &mut col, || k.to_pe(t), at, Some(child), n, grows);
        }
        for k in &rhs_order {
            if observed_lhs.contains_key(k) {
                continue;
            }
            let Some(&(i, r)) = observed_rhs.get(k) else { continue };
            let owned = self.item_set(&mut lo, t, rhs_items, i, k);
            let r = Some(r);
            let (n, e) = self.node(None, r, &t.element_type, owned);
            if !e.is_empty() {
                errs.extend(e.prefixed(&k.to_pe(t)));
            }
            self.take(&mut out, &mut col, || k.to_pe(t), i, None, n, grows);
        }
        if let Some(lo) = lo.filter(|_| self.owned == Owned::Same) {
            self.own(lo.complete());
        }
        let mut n = NodeOut::default();
        if self.mode.merges() {
            // Exactly the right list: every item is the right one, in the right order, which
            // holds when every left item lined up (the rest are new, in the right order).
            n.rsame = self.defer && rl.is_some() && m == llen && out.len() == rlen && out.iter().all(|p| p.rsame);
            if ll.is_some() && out.len() == llen && out.iter().all(|p| p.same) {
                n.same = true;
            } else if !n.rsame {
                let mut fills = Vec::new();
                let mut items: Vec<Value> = Vec::with_capacity(out.len());
                for p in out {
                    let (i, at) = (items.len(), p.at);
                    if let Some(v) = p.value(&mut fills, || Slot::Index(i, at)) {
                        items.push(v);
                    }
                }
                if !items.is_empty() {
                    n.out = Some(Value::Array(items));
                }
                n.fill = (!fills.is_empty()).then_some(Fill::Parts(fills));
            }
        }
        if self.mode.compares() {
            n.any = col.any;
            n.sets = col.finish();
        }
        self.post(&mut n, lhs, rhs);
        (n, errs)
    }

    /// One list item present on both sides: equal items are unchanged whole, without a walk
    /// (list items are the unit large objects repeat; checking deeper levels for equality
    /// would re-read every subtree once per level).
    /// In check mode the right item is validated whole first, and read again from the cache.
    pub(super) fn item(&mut self, lhs: &Value, rhs: Option<&Value>, tr: &'s TypeRef, own: Option<&Set>) -> (NodeOut, ValidationErrors) {
        // The followed set is matched against the whole item while it is in the cache.
        if let (Some(set), Some(r)) = (self.owning(rhs, own), rhs) {
            self.own_whole(tr, r, set);
        }
        let checked = match rhs {
            Some(r) if self.check => {
                self.check_whole(tr, r);
                true
            }
            _ => false,
        };
        if rhs == Some(lhs) {
            return (NodeOut { same: true, rsame: self.defer, ..NodeOut::default() }, ValidationErrors::default());
        }
        if checked {
            self.node_checked(Some(lhs), rhs, tr, None)
        } else {
            self.node(Some(lhs), rhs, tr, None)
        }
    }

    /// The followed set's part for right item `i` (of `items`, keyed `key`) of a list, or
    /// `None` when the set is not followed (any more).
    pub(super) fn item_set<'o>(
        &mut self,
        lo: &mut Option<ListOwn<'o>>,
        list: &List,
        items: &[Value],
        i: usize,
        key: &ItemKey<'_>,
    ) -> Option<&'o Set> {
        let lo = lo.as_mut().filter(|_| self.owned == Owned::Same)?;
        let m = lo.child(self.schema, list, items, i, key);
        self.member(m)
    }

    /// Records one list item's results.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn take<'v>(
        &self,
        out: &mut Vec<Part<'static, 'v>>,
        col: &mut Collector,
        pe: impl FnOnce() -> PathElement,
        at: usize,
        lhs: Option<&'v Value>,
        mut n: NodeOut,
        build: bool,
    ) {
        if self.mode.merges() {
            Part::push(out, "", at, lhs, &mut n, build);
        }
        if self.mode.compares() {
            col.add(pe, n);
        }
    }
}
