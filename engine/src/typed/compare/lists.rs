//! The walk of a granular list: its items matched by key, those that line up first, and the
//! followed set matched with the right items ([`ListOwn`]).

use super::walker::{Owned, Walker};
use super::*;

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
    /// Records where a list item stands in the followed set; its part of the set if found.
    pub(super) fn member<'o>(&mut self, m: Member<'o>) -> Option<&'o Set> {
        match m {
            Member::Found(child) => return Some(child),
            Member::Differs => self.own(false),
            Member::Unsupported => self.unknown(),
        }
        None
    }

    /// A list: atomic ones (and empty ones) are leaves; a granular one's items are matched by
    /// key, those that line up first ([`Walker::line_up`]), then the rest by their keys.
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
        let lo = match own {
            Some(set) if set.members().len() == rl.map_or(0, Vec::len) => Some(ListOwn::new(set)),
            Some(_) => {
                self.own(false);
                None
            }
            None => None,
        };
        let lhs_items: &'v [Value] = ll.map_or(&[], Vec::as_slice);
        let rhs_items: &'v [Value] = rl.map_or(&[], Vec::as_slice);
        let mut w = ListWalk {
            t,
            lhs: lhs_items,
            rhs: rhs_items,
            lo,
            out: Vec::with_capacity(if self.mode.merges() { rhs_items.len().max(lhs_items.len()) } else { 0 }),
            col: Collector { off: !self.sets, ..Collector::default() },
            errs: ValidationErrors::default(),
            // Check mode: the right keys of the lined-up items, for validation's duplicate
            // check (the rest of the right items are checked against each other later).
            dedup: self.check && t.relationship == ElementRelationship::Associative,
            seen: HashSet::default(),
        };
        let (m, well_formed) = self.line_up(&mut w);
        let (m, lkeys, rkeys) = self.rest_keys(&mut w, m, well_formed);
        self.walk_rest(&mut w, m, lkeys, rkeys);
        if let Some(lo) = w.lo.take().filter(|_| self.owned == Owned::Same) {
            self.own(lo.complete());
        }
        self.list_out(w, m, ll.is_some(), rl.is_some(), lhs, rhs)
    }

    /// Walks the items that line up (same key at the same position, the usual case for
    /// re-applies and read-modify-write updates) pairwise without hashing, each key read as
    /// its item is walked. How many did, and whether they were all well-formed (keys read).
    fn line_up<'v>(&mut self, w: &mut ListWalk<'s, 'v, '_>) -> (usize, bool)
    where
        's: 'v,
    {
        let (schema, t) = (self.schema, w.t);
        let (lhs_items, rhs_items) = (w.lhs, w.rhs);
        let mut m = 0;
        while m < lhs_items.len() && m < rhs_items.len() {
            // The next items' parts start loading while this pair is walked.
            touch_ahead(lhs_items, m);
            touch_ahead(rhs_items, m);
            let (lk, rk) = match (item_key(schema, t, m, &lhs_items[m]), item_key(schema, t, m, &rhs_items[m])) {
                (Ok(a), Ok(b)) => (a, b),
                _ => return (m, false),
            };
            if lk != rk {
                break;
            }
            let child = self.item_set(&mut w.lo, t, rhs_items, m, &rk);
            if w.dedup && !w.seen.insert(rk) {
                self.invalid = true;
            }
            let (n, e) = self.item(&lhs_items[m], Some(&rhs_items[m]), &t.element_type, child);
            if !e.is_empty() {
                w.errs.extend(e.prefixed(&lk.to_pe(t)));
            }
            self.take(&mut w.out, &mut w.col, || lk.to_pe(t), m, Some(&lhs_items[m]), n, false);
            m += 1;
        }
        (m, true)
    }

    /// The keys of the items from `m` on (or why an item has none), left and right. A
    /// malformed item sends the whole list down the general path, which reports it: what the
    /// lined-up items gave is then dropped and they are walked again (from 0, returned).
    fn rest_keys<'v>(&mut self, w: &mut ListWalk<'s, 'v, '_>, m: usize, well_formed: bool) -> (usize, ItemKeys<'v>, ItemKeys<'v>)
    where
        's: 'v,
    {
        let (schema, t) = (self.schema, w.t);
        let keys = |items: &'v [Value], from: usize| -> ItemKeys<'v> {
            items.iter().enumerate().skip(from).map(|(i, c)| item_key(schema, t, i, c)).collect()
        };
        let (lkeys, rkeys) = (keys(w.lhs, m), keys(w.rhs, m));
        if m > 0 && (!well_formed || lkeys.iter().chain(&rkeys).any(Result::is_err)) {
            (w.out, w.col, w.errs) = (Vec::new(), Collector { off: !self.sets, ..Collector::default() }, ValidationErrors::default());
            w.seen.clear();
            if let Some(lo) = &mut w.lo {
                *lo = ListOwn::new(lo.set);
            }
            return (0, keys(w.lhs, 0), keys(w.rhs, 0));
        }
        (m, lkeys, rkeys)
    }

    /// Walks the items from `m` on, keyed `lkeys` and `rkeys`: the left ones in their order,
    /// each with the right one of its key, then the right ones the left side lacks.
    fn walk_rest<'v>(&mut self, w: &mut ListWalk<'s, 'v, '_>, m: usize, mut lkeys: ItemKeys<'v>, rkeys: ItemKeys<'v>)
    where
        's: 'v,
    {
        let (schema, t, lhs_items, rhs_items) = (self.schema, w.t, w.lhs, w.rhs);
        if m < lhs_items.len() || m < rhs_items.len() {
            self.realigned = true;
        }
        // The rest of the right items are walked in the left items' order where they have left
        // ones: the followed set is matched with them by their sorted keys first. (With no
        // left items left, they are walked in their own order.)
        if let Some(l) =
            w.lo.as_mut().filter(|l| m < rhs_items.len() && m < lhs_items.len() && l.join.is_none() && self.owned == Owned::Same)
        {
            if let Some(m) = l.join_from(schema, t, rhs_items, m) {
                self.member(m);
            }
        }
        let (rhs_order, observed_rhs) = self.index_right(w, m, rkeys);
        let observed_lhs = index_left(t, &mut lkeys, m);
        // A right item the left side lacks means the merged list is built: each unchanged left
        // item is then copied as soon as it is walked, while it is in the cache.
        let grows = self.mode.merges() && rhs_order.iter().any(|k| !observed_lhs.contains_key(k));
        for (child, k) in lhs_items.iter().skip(m).zip(lkeys) {
            let k = match k {
                Ok(k) => k,
                Err(e) => {
                    w.errs.extend(ValidationErrors::one(e));
                    continue;
                }
            };
            let (at, r, owned) = match observed_rhs.get(&k).copied() {
                Some((i, r)) => (i, Some(r), self.item_set(&mut w.lo, t, rhs_items, i, &k)),
                None => (usize::MAX, None, None),
            };
            let (n, e) = self.item(child, r, &t.element_type, owned);
            if !e.is_empty() {
                w.errs.extend(e.prefixed(&k.to_pe(t)));
            }
            self.take(&mut w.out, &mut w.col, || k.to_pe(t), at, Some(child), n, grows);
        }
        for k in &rhs_order {
            if observed_lhs.contains_key(k) {
                continue;
            }
            let Some(&(i, r)) = observed_rhs.get(k) else { continue };
            let owned = self.item_set(&mut w.lo, t, rhs_items, i, k);
            let (n, e) = self.node(None, Some(r), &t.element_type, owned);
            if !e.is_empty() {
                w.errs.extend(e.prefixed(&k.to_pe(t)));
            }
            self.take(&mut w.out, &mut w.col, || k.to_pe(t), i, None, n, grows);
        }
    }

    /// The right items from `m` on by key (keyed `rkeys`), and the keys in their order;
    /// malformed and duplicate items are reported (and, in check mode, keys of lined-up items
    /// again).
    fn index_right<'v>(&mut self, w: &mut ListWalk<'s, 'v, '_>, m: usize, rkeys: ItemKeys<'v>) -> RightIndex<'v>
    where
        's: 'v,
    {
        let rlen = w.rhs.len();
        let mut rhs_order: Vec<ItemKey<'_>> = Vec::with_capacity(rlen - m);
        let mut observed_rhs: HashMap<ItemKey<'_>, (usize, &Value)> = HashMap::with_capacity_and_hasher(rlen - m, Default::default());
        for ((i, child), k) in w.rhs.iter().enumerate().skip(m).zip(rkeys) {
            match k {
                Ok(k) => {
                    if w.dedup && w.seen.contains(&k) {
                        self.invalid = true;
                    }
                    if observed_rhs.insert(k.clone(), (i, child)).is_some() {
                        w.errs.extend(ValidationErrors::one(format!("rhs: duplicate entries for key {}", k.to_pe(w.t))));
                    }
                    rhs_order.push(k);
                }
                Err(e) => w.errs.extend(ValidationErrors::one(format!("rhs: element {i}: {e}"))),
            }
        }
        (rhs_order, observed_rhs)
    }

    /// The result of a granular list's walk: in merge mode the merged list (or that it is
    /// either side unchanged), in compare mode the collected sets.
    fn list_out(
        &self,
        w: ListWalk<'s, '_, '_>,
        m: usize,
        lhs_list: bool,
        rhs_list: bool,
        lhs: Option<&Value>,
        rhs: Option<&Value>,
    ) -> (NodeOut, ValidationErrors) {
        let (llen, rlen) = (w.lhs.len(), w.rhs.len());
        let (out, col) = (w.out, w.col);
        let mut n = NodeOut::default();
        if self.mode.merges() {
            // Exactly the right list: every item is the right one, in the right order, which
            // holds when every left item lined up (the rest are new, in the right order).
            n.rsame = self.defer && rhs_list && m == llen && out.len() == rlen && out.iter().all(|p| p.rsame);
            if lhs_list && out.len() == llen && out.iter().all(|p| p.same) {
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
        (n, w.errs)
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

/// The keys of a list's items (or why an item has none).
type ItemKeys<'v> = Vec<Result<ItemKey<'v>, String>>;

/// A list's right items by key, and their keys in their order.
type RightIndex<'v> = (Vec<ItemKey<'v>>, HashMap<ItemKey<'v>, (usize, &'v Value)>);

/// One granular list's walk: its two sides' items, and what the walk gathered so far.
struct ListWalk<'s, 'v, 'o> {
    t: &'s List,
    lhs: &'v [Value],
    rhs: &'v [Value],
    /// The followed set, matched with the right items.
    lo: Option<ListOwn<'o>>,
    /// The merged list's parts (merge mode).
    out: Vec<Part<'static, 'v>>,
    /// The comparison sets (compare mode).
    col: Collector,
    errs: ValidationErrors,
    /// Whether the right keys of the lined-up items are kept in `seen` (check mode, an
    /// associative list) for validation's duplicate check.
    dedup: bool,
    seen: HashSet<ItemKey<'v>>,
}

/// The left items from `m` on by key (keyed `lkeys`; the first of duplicates): a malformed or
/// duplicate item's key becomes its error, reported when the walk reaches it.
fn index_left<'v>(t: &List, lkeys: &mut ItemKeys<'v>, m: usize) -> HashMap<ItemKey<'v>, ()> {
    let mut observed_lhs: HashMap<ItemKey<'_>, ()> = HashMap::with_capacity_and_hasher(lkeys.len(), Default::default());
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
    observed_lhs
}
