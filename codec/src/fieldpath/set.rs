//! A set of field paths, stored as a trie.

use super::{Path, PathElement};
use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

/// A set of [`Path`]s, stored as a trie: at each node, the elements that end a member path
/// (`members`) and the elements that continue into a sub-set (`children`), both kept sorted in
/// [`PathElement`] order, which is also FieldsV1 order.
///
/// A path can be both a member and the prefix of other members (FieldsV1 writes this as `".":{}`).
/// The algebra (`union`, `intersection`, `difference`, `recursive_difference`) is that of
/// structured-merge-diff, including its treatment of parents versus children in a difference:
/// `parent − child = parent` and `child − parent = child`.
///
/// Sets are values, but their nodes are shared: cloning a set, or keeping a sub-set unchanged in
/// the result of an operation, costs no copy (a node is copied when a shared one is modified).
/// So the owned fields of ten thousand list items that all own the same five fields can be one
/// node, and removing one item's fields from a manager's set copies only the path to that item.
#[derive(Clone, Default)]
pub struct Set {
    node: Option<Arc<Node>>,
}

/// One trie node; the empty set has none.
#[derive(Clone, Default)]
struct Node {
    members: Vec<PathElement>,
    children: Vec<(PathElement, Set)>,
}

impl PartialEq for Set {
    fn eq(&self, other: &Set) -> bool {
        if let (Some(a), Some(b)) = (&self.node, &other.node) {
            if Arc::ptr_eq(a, b) {
                return true;
            }
        }
        self.members() == other.members() && self.children() == other.children()
    }
}

impl Eq for Set {}

impl fmt::Debug for Set {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Set").field("members", &self.members()).field("children", &self.children()).finish()
    }
}

impl Set {
    /// The empty set.
    pub fn new() -> Self {
        Set::default()
    }

    /// The set of one node's parts, as given (sorted, without duplicates).
    fn build(members: Vec<PathElement>, children: Vec<(PathElement, Set)>) -> Self {
        if members.is_empty() && children.is_empty() {
            Set::default()
        } else {
            Set { node: Some(Arc::new(Node { members, children })) }
        }
    }

    /// This node, for modification: created when the set is empty, copied when shared.
    fn node_mut(&mut self) -> &mut Node {
        Arc::make_mut(self.node.get_or_insert_with(Default::default))
    }

    /// Whether the two sets are the same node (so certainly equal), without comparing them.
    pub fn is_same_node(&self, other: &Set) -> bool {
        match (&self.node, &other.node) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }

    /// A set built from its top-level parts in any order; duplicates are merged (children by union).
    /// Sorting once here is what keeps building a set from an n-item list O(n log n).
    pub fn from_parts(mut members: Vec<PathElement>, mut children: Vec<(PathElement, Set)>) -> Self {
        super::sort::sort_dedup_by_element(&mut members, |pe| pe, |_, _| {});
        super::sort::sort_dedup_by_element(&mut children, |c| &c.0, |(_, s), (_, set)| *s = s.union(&set));
        Set::build(members, children)
    }

    /// A set built from top-level parts that are usually already sorted and free of duplicates,
    /// as a decoder reads them from an encoding written in order: checking that costs one
    /// comparison per part, where sorting and merging cost several. Parts out of order are
    /// accepted too and give the same set as [`Set::from_parts`].
    pub fn from_sorted_parts(members: Vec<PathElement>, children: Vec<(PathElement, Set)>) -> Self {
        let sorted = members.windows(2).all(|w| w[0] < w[1]) && children.windows(2).all(|w| w[0].0 < w[1].0);
        if sorted {
            Set::build(members, children)
        } else {
            Set::from_parts(members, children)
        }
    }

    /// A set from top-level parts their maker has already checked to be sorted and free of
    /// duplicates (each strictly after the one before it).
    pub(crate) fn from_ordered_parts(members: Vec<PathElement>, children: Vec<(PathElement, Set)>) -> Self {
        debug_assert!(members.windows(2).all(|w| w[0] < w[1]));
        debug_assert!(children.windows(2).all(|w| w[0].0 < w[1].0));
        Set::build(members, children)
    }

    /// A set holding the given paths.
    pub fn from_paths<'a, I: IntoIterator<Item = &'a Path>>(paths: I) -> Self {
        let mut s = Set::new();
        for p in paths {
            s.insert(p);
        }
        s
    }

    /// The elements that end a member path at this node, sorted.
    pub fn members(&self) -> &[PathElement] {
        match &self.node {
            Some(n) => &n.members,
            None => &[],
        }
    }

    /// The elements that lead to a sub-set at this node, sorted, with their sub-sets.
    pub fn children(&self) -> &[(PathElement, Set)] {
        match &self.node {
            Some(n) => &n.children,
            None => &[],
        }
    }

    /// The set's top-level parts (as [`Set::members`] and [`Set::children`] give them), moved
    /// out when this set holds its node alone, copied when the node is shared.
    pub fn into_parts(self) -> (Vec<PathElement>, Vec<(PathElement, Set)>) {
        match self.node {
            Some(node) => {
                let Node { members, children } = Arc::unwrap_or_clone(node);
                (members, children)
            }
            None => (Vec::new(), Vec::new()),
        }
    }

    /// Whether the set holds no path at all.
    pub fn is_empty(&self) -> bool {
        self.members().is_empty() && self.children().iter().all(|(_, c)| c.is_empty())
    }

    /// The number of member paths.
    pub fn size(&self) -> usize {
        self.members().len() + self.children().iter().map(|(_, c)| c.size()).sum::<usize>()
    }

    /// Adds a path. Inserting the root (empty path) does nothing: the root is never a member.
    pub fn insert(&mut self, path: &Path) {
        self.insert_elements(path.elements());
    }

    /// Adds the path made of `elements`.
    pub fn insert_elements(&mut self, elements: &[PathElement]) {
        match elements {
            [] => {}
            [last] => {
                if let Err(i) = self.members().binary_search(last) {
                    self.node_mut().members.insert(i, last.clone());
                }
            }
            [first, rest @ ..] => self.descend(first).insert_elements(rest),
        }
    }

    /// Adds `pe` as a member of this node.
    pub fn insert_member(&mut self, pe: PathElement) {
        if let Err(i) = self.members().binary_search(&pe) {
            self.node_mut().members.insert(i, pe);
        }
    }

    /// The sub-set under `pe`, created empty if absent.
    pub fn descend(&mut self, pe: &PathElement) -> &mut Set {
        let node = self.node_mut();
        let i = match node.children.binary_search_by(|c| c.0.cmp(pe)) {
            Ok(i) => i,
            Err(i) => {
                node.children.insert(i, (pe.clone(), Set::new()));
                i
            }
        };
        &mut node.children[i].1
    }

    /// Whether `path` is a member.
    pub fn has(&self, path: &Path) -> bool {
        self.has_elements(path.elements())
    }

    /// Whether the path made of `elements` is a member.
    pub fn has_elements(&self, elements: &[PathElement]) -> bool {
        match elements {
            [] => false,
            [last] => self.has_member(last),
            [first, rest @ ..] => self.child(first).is_some_and(|c| c.has_elements(rest)),
        }
    }

    /// Whether `pe` is a member of this node.
    pub fn has_member(&self, pe: &PathElement) -> bool {
        self.members().binary_search(pe).is_ok()
    }

    /// The sub-set under `pe`, if any (structured-merge-diff's `WithPrefix`).
    pub fn child(&self, pe: &PathElement) -> Option<&Set> {
        self.children().binary_search_by(|c| c.0.cmp(pe)).ok().map(|i| &self.children()[i].1)
    }

    /// The sub-set of paths below `prefix`, with `prefix` removed from them; empty if none.
    pub fn with_prefix(&self, prefix: &Path) -> Set {
        let mut cur = self;
        for pe in prefix.elements() {
            match cur.child(pe) {
                Some(c) => cur = c,
                None => return Set::new(),
            }
        }
        cur.clone()
    }

    /// The paths that start with `prefix` (kept whole), including `prefix` itself if a member.
    pub fn filter_prefix(&self, prefix: &Path) -> Set {
        let els = prefix.elements();
        if els.is_empty() {
            return self.clone();
        }
        let mut out = Set::new();
        let (parent, last) = els.split_at(els.len() - 1);
        let mut cur = self;
        for pe in parent {
            match cur.child(pe) {
                Some(c) => cur = c,
                None => return out,
            }
        }
        let mut node = &mut out;
        for pe in parent {
            node = node.descend(pe);
        }
        if cur.has_member(&last[0]) {
            node.insert_member(last[0].clone());
        }
        if let Some(c) = cur.child(&last[0]) {
            if !c.is_empty() {
                *node.descend(&last[0]) = c.clone();
            }
        }
        out
    }

    /// Paths in either set.
    #[must_use]
    pub fn union(&self, other: &Set) -> Set {
        if other.node.is_none() || self.is_same_node(other) {
            return self.clone();
        }
        if self.node.is_none() {
            return other.clone();
        }
        let members = merge_sorted(self.members(), other.members(), true, true, true);
        let mut children = Vec::with_capacity(self.children().len().max(other.children().len()));
        let (mut i, mut j) = (0, 0);
        while i < self.children().len() && j < other.children().len() {
            let (a, b) = (&self.children()[i], &other.children()[j]);
            match a.0.cmp(&b.0) {
                Ordering::Less => {
                    children.push(a.clone());
                    i += 1;
                }
                Ordering::Greater => {
                    children.push(b.clone());
                    j += 1;
                }
                Ordering::Equal => {
                    children.push((a.0.clone(), a.1.union(&b.1)));
                    i += 1;
                    j += 1;
                }
            }
        }
        children.extend_from_slice(&self.children()[i..]);
        children.extend_from_slice(&other.children()[j..]);
        Set::build(members, children)
    }

    /// Paths in both sets.
    #[must_use]
    pub fn intersection(&self, other: &Set) -> Set {
        if self.is_same_node(other) {
            return self.clone();
        }
        if self.node.is_none() || other.node.is_none() {
            return Set::new();
        }
        let members = merge_sorted(self.members(), other.members(), false, true, false);
        // Walk the shorter children list, finding each element in the longer one by galloping:
        // intersecting with a small set costs a few comparisons per element of it.
        let (short, long) = if self.children().len() <= other.children().len() {
            (self.children(), other.children())
        } else {
            (other.children(), self.children())
        };
        let mut children = Vec::new();
        let mut j = 0;
        for (pe, set) in short {
            j = gallop(long, j, |(q, _)| q < pe);
            match long.get(j) {
                Some((q, other_set)) if q == pe => {
                    let s = set.intersection(other_set);
                    if !s.is_empty() {
                        children.push((pe.clone(), s));
                    }
                    j += 1;
                }
                Some(_) => {}
                None => break,
            }
        }
        Set::build(members, children)
    }

    /// Paths in `self` but not in `other`. A member of `other` does not remove the paths below it
    /// (`parent − child = parent`, `child − parent = child`).
    #[must_use]
    pub fn difference(&self, other: &Set) -> Set {
        if other.node.is_none() || self.node.is_none() {
            return self.clone();
        }
        let members = self.members_without(other);
        // Only the children `other` has children at can change: they are found by galloping,
        // and the rest are copied only if something changed.
        let own = self.children();
        let mut edits = Vec::new();
        let mut i = 0;
        for (pe, other_set) in other.children() {
            i = gallop(own, i, |(q, _)| q < pe);
            match own.get(i) {
                Some((q, set)) if q == pe => {
                    let d = set.difference(other_set);
                    if !d.is_same_node(set) {
                        edits.push((i, d));
                    }
                    i += 1;
                }
                Some(_) => {}
                None => break,
            }
        }
        self.edited(members, edits)
    }

    /// Paths in `self` that neither are in `other` nor lie below a member of `other`: a member of
    /// `other` removes its whole subtree from `self`.
    #[must_use]
    pub fn recursive_difference(&self, other: &Set) -> Set {
        if other.node.is_none() || self.node.is_none() {
            return self.clone();
        }
        let members = self.members_without(other);
        // Only the children at `other`'s members (removed whole) and children can change.
        let own = self.children();
        let (om, oc) = (other.members(), other.children());
        let mut edits = Vec::new();
        let (mut a, mut b, mut i) = (0, 0, 0);
        while i < own.len() {
            let target = match (om.get(a), oc.get(b)) {
                (None, None) => break,
                (Some(m), None) => m,
                (None, Some((c, _))) => c,
                (Some(m), Some((c, _))) => m.min(c),
            };
            let member = om.get(a).is_some_and(|m| m == target);
            let below = oc.get(b).filter(|(c, _)| c == target).map(|(_, s)| s);
            a += usize::from(member);
            b += usize::from(below.is_some());
            i = gallop(own, i, |(q, _)| q < target);
            if let Some((_, set)) = own.get(i).filter(|(q, _)| q == target) {
                if member {
                    edits.push((i, Set::new()));
                } else if let Some(os) = below {
                    let d = set.recursive_difference(os);
                    if !d.is_same_node(set) {
                        edits.push((i, d));
                    }
                }
                i += 1;
            }
        }
        self.edited(members, edits)
    }

    /// This node's members less `other`'s; `None` when `other` removes none of them, so that
    /// nothing is copied.
    fn members_without(&self, other: &Set) -> Option<Vec<PathElement>> {
        let own = self.members();
        let mut i = 0;
        let removes = other.members().iter().any(|m| {
            i = gallop(own, i, |q| q < m);
            own.get(i) == Some(m)
        });
        removes.then(|| merge_sorted(own, other.members(), true, false, false))
    }

    /// This set with its members replaced (`None`: unchanged) and some children replaced (by
    /// index, in order; an empty replacement removes the child); itself, still shared, when
    /// nothing changed.
    fn edited(&self, members: Option<Vec<PathElement>>, edits: Vec<(usize, Set)>) -> Set {
        if edits.is_empty() && members.is_none() {
            return self.clone();
        }
        let members = members.unwrap_or_else(|| self.members().to_vec());
        let own = self.children();
        let mut children = Vec::with_capacity(own.len());
        let mut from = 0;
        for (i, set) in edits {
            children.extend_from_slice(own.get(from..i).unwrap_or_default());
            if !set.is_empty() {
                children.push((own[i].0.clone(), set));
            }
            from = i + 1;
        }
        children.extend_from_slice(own.get(from..).unwrap_or_default());
        Set::build(members, children)
    }

    /// Whether every member path of `self` is a member of `other` (without building the
    /// difference).
    pub fn is_subset_of(&self, other: &Set) -> bool {
        let mut j = 0;
        'members: for m in self.members() {
            while let Some(o) = other.members().get(j) {
                j += 1;
                match o.cmp(m) {
                    Ordering::Less => continue,
                    Ordering::Equal => continue 'members,
                    Ordering::Greater => return false,
                }
            }
            return false;
        }
        let mut j = 0;
        'children: for (pe, child) in self.children() {
            if child.is_empty() {
                continue;
            }
            while let Some((o, oc)) = other.children().get(j) {
                j += 1;
                match o.cmp(pe) {
                    Ordering::Less => continue,
                    Ordering::Equal if child.is_subset_of(oc) => continue 'children,
                    _ => return false,
                }
            }
            return false;
        }
        true
    }

    /// The members that have nothing below them in this set.
    #[must_use]
    pub fn leaves(&self) -> Set {
        let members = self.members().iter().filter(|m| self.child(m).is_none_or(|c| c.is_empty())).cloned().collect();
        let children = self.children().iter().map(|(pe, c)| (pe.clone(), c.leaves())).filter(|(_, c)| !c.is_empty()).collect();
        Set::build(members, children)
    }

    /// Calls `f` with every member path, in path order (a path before the paths it prefixes).
    pub fn iterate(&self, mut f: impl FnMut(&Path)) {
        let mut prefix = Path::root();
        self.iterate_inner(&mut prefix, &mut f);
    }

    fn iterate_inner(&self, prefix: &mut Path, f: &mut dyn FnMut(&Path)) {
        self.in_order(|pe, member, child| {
            prefix.0.push(pe.clone());
            if member {
                f(prefix);
            }
            if let Some(c) = child {
                c.iterate_inner(prefix, f);
            }
            prefix.0.pop();
        });
    }

    /// [`Set::iterate`] with each path as text, as [`Path`] displays it, written in one buffer
    /// as the walk goes (no path or element copied): for keys made of paths.
    pub fn iterate_printed(&self, mut f: impl FnMut(&str)) {
        let mut text = String::new();
        self.iterate_printed_inner(&mut text, &mut f);
    }

    fn iterate_printed_inner(&self, text: &mut String, f: &mut dyn FnMut(&str)) {
        self.in_order(|pe, member, child| {
            let len = text.len();
            pe.write_to(text);
            if member {
                f(text);
            }
            if let Some(c) = child {
                c.iterate_printed_inner(text, f);
            }
            text.truncate(len);
        });
    }

    /// Each element of this level in order, once: whether it is a member, and its child set.
    fn in_order(&self, mut visit: impl FnMut(&PathElement, bool, Option<&Set>)) {
        let (members, children) = (self.members(), self.children());
        let (mut i, mut j) = (0, 0);
        loop {
            let (take_m, take_c) = match (members.get(i), children.get(j)) {
                (None, None) => break,
                (Some(_), None) => (true, false),
                (None, Some(_)) => (false, true),
                (Some(m), Some(c)) => match m.cmp(&c.0) {
                    Ordering::Less => (true, false),
                    Ordering::Greater => (false, true),
                    Ordering::Equal => (true, true),
                },
            };
            let pe = if take_m { &members[i] } else { &children[j].0 };
            visit(pe, take_m, take_c.then(|| &children[j].1));
            i += usize::from(take_m);
            j += usize::from(take_c);
        }
    }

    /// Every member path, in path order.
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::with_capacity(self.size());
        self.iterate(|p| out.push(p.clone()));
        out
    }

    /// Removes empty sub-sets, so that structurally different but equal sets compare equal.
    pub fn normalize(&mut self) {
        if self.is_normal() {
            return;
        }
        let node = self.node_mut();
        for (_, c) in &mut node.children {
            c.normalize();
        }
        node.children.retain(|(_, c)| !c.is_empty());
        if node.members.is_empty() && node.children.is_empty() {
            self.node = None;
        }
    }

    /// Whether no sub-set, at any depth, is empty.
    fn is_normal(&self) -> bool {
        self.children().iter().all(|(_, c)| !c.is_empty() && c.is_normal())
    }
}

/// Merges two sorted, de-duplicated slices, keeping elements only in `a` (`keep_a`), in both
/// (`keep_both`), or only in `b` (`keep_b`).
fn merge_sorted(a: &[PathElement], b: &[PathElement], keep_a: bool, keep_both: bool, keep_b: bool) -> Vec<PathElement> {
    let mut out = Vec::with_capacity(if keep_b { a.len() + b.len() } else { a.len() });
    let (mut i, mut j) = (0, 0);
    // One side much longer: runs of it between elements of the other are found by galloping
    // and copied whole, rather than compared element by element.
    if a.len() >= SKEW * b.len() || b.len() >= SKEW * a.len() {
        while i < a.len() && j < b.len() {
            let k = gallop(a, i, |x| x < &b[j]);
            if keep_a {
                out.extend_from_slice(&a[i..k]);
            }
            i = k;
            let Some(x) = a.get(i) else { break };
            let l = gallop(b, j, |y| y < x);
            if keep_b {
                out.extend_from_slice(&b[j..l]);
            }
            j = l;
            if b.get(j) == Some(x) {
                if keep_both {
                    out.push(x.clone());
                }
                i += 1;
                j += 1;
            }
        }
    }
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            Ordering::Less => {
                if keep_a {
                    out.push(a[i].clone());
                }
                i += 1;
            }
            Ordering::Greater => {
                if keep_b {
                    out.push(b[j].clone());
                }
                j += 1;
            }
            Ordering::Equal => {
                if keep_both {
                    out.push(a[i].clone());
                }
                i += 1;
                j += 1;
            }
        }
    }
    if keep_a {
        out.extend_from_slice(&a[i..]);
    }
    if keep_b {
        out.extend_from_slice(&b[j..]);
    }
    out
}

/// How many times longer one side of a merge must be for galloping through it to pay.
const SKEW: usize = 8;

/// The first index at or after `from` whose element is not `less` than the target, the elements
/// from `from` up to it all being `less` (`s` sorted): O(log distance) comparisons.
fn gallop<T>(s: &[T], from: usize, less: impl Fn(&T) -> bool) -> usize {
    let (mut lo, mut hi, mut step) = (from, from, 1);
    while hi < s.len() && less(&s[hi]) {
        lo = hi + 1;
        hi += step;
        step *= 2;
    }
    let hi = hi.min(s.len());
    lo + s.get(lo..hi).map_or(0, |r| r.partition_point(|x| less(x)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(names: &[&str]) -> Path {
        Path::fields(names.iter().copied())
    }

    #[test]
    fn printed_paths_are_the_displayed_paths_in_the_same_order() {
        let mut s = Set::new();
        for path in [
            p(&["spec", "replicas"]),
            p(&["spec"]),
            p(&["metadata", "labels", "app"]),
            Path(vec![
                PathElement::field("spec"),
                PathElement::field("ports"),
                PathElement::key(vec![("port".into(), json!(80)), ("protocol".into(), json!("TCP"))]),
            ]),
            Path(vec![PathElement::field("spec"), PathElement::field("args"), PathElement::Index(3)]),
            Path(vec![PathElement::field("metadata"), PathElement::field("finalizers"), PathElement::Value(json!("a"))]),
        ] {
            s.insert(&path);
        }
        let mut displayed = Vec::new();
        s.iterate(|path| displayed.push(path.to_string()));
        let mut printed = Vec::new();
        s.iterate_printed(|text| printed.push(text.to_string()));
        assert_eq!(printed, displayed);
        assert_eq!(printed.len(), 6);
    }

    #[test]
    fn insert_has_and_size() {
        let mut s = Set::new();
        s.insert(&p(&["a", "b"]));
        s.insert(&p(&["a"]));
        s.insert(&p(&["c"]));
        assert!(s.has(&p(&["a", "b"])) && s.has(&p(&["a"])) && s.has(&p(&["c"])));
        assert!(!s.has(&p(&["b"])) && !s.has(&Path::root()));
        assert_eq!(s.size(), 3);
    }

    #[test]
    fn difference_keeps_parent_and_child() {
        let parent = Set::from_paths(&[p(&["a"])]);
        let child = Set::from_paths(&[p(&["a", "b"])]);
        assert_eq!(parent.difference(&child), parent);
        assert_eq!(child.difference(&parent), child);
        assert!(child.recursive_difference(&parent).is_empty());
    }

    #[test]
    fn subset_agrees_with_difference() {
        let a = Set::from_paths(&[p(&["a", "b"]), p(&["c"])]);
        let b = Set::from_paths(&[p(&["a", "b"]), p(&["a"]), p(&["c"]), p(&["d", "e"])]);
        assert!(a.is_subset_of(&b) && a.difference(&b).is_empty());
        assert!(!b.is_subset_of(&a) && !b.difference(&a).is_empty());
        assert!(Set::new().is_subset_of(&a));
    }

    #[test]
    fn leaves_drop_members_with_children() {
        let s = Set::from_paths(&[p(&["a"]), p(&["a", "b"]), p(&["c"])]);
        assert_eq!(s.leaves(), Set::from_paths(&[p(&["a", "b"]), p(&["c"])]));
    }

    #[test]
    fn iteration_is_in_path_order() {
        let k = PathElement::key(vec![("name".into(), json!("x"))]);
        let s = Set::from_paths(&[p(&["b"]), p(&["a", "z"]), p(&["a"]), Path(vec![PathElement::field("a"), k.clone()])]);
        let got = s.paths();
        let mut want = got.clone();
        want.sort();
        assert_eq!(got, want);
        assert_eq!(got.len(), 4);
    }

    #[test]
    fn filter_prefix_keeps_whole_paths() {
        let s = Set::from_paths(&[p(&["a", "b"]), p(&["a"]), p(&["c", "d"])]);
        assert_eq!(s.filter_prefix(&p(&["a"])), Set::from_paths(&[p(&["a", "b"]), p(&["a"])]));
        assert_eq!(s.with_prefix(&p(&["c"])), Set::from_paths(&[p(&["d"])]));
    }
}
