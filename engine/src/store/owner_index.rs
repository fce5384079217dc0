//! The owner index's layout and maintenance: the index changes of one write, computed by the
//! writer and committed in the write's batch.
//!
//! Keys (column family `owners`, see `engine/STORAGE.md`):
//! - `M ‖ manager ‖ 0x00 ‖ object prefix` → [`Owned`] (the manager's entries and fields there);
//! - `G ‖ type id ‖ path ‖ 0x00 ‖ manager ‖ 0x00 ‖ object prefix` → a *level* of the manager's
//!   field set: the members directly below `path` without children, whose element is
//!   [`simple`], each printed, and the empty element when `path` itself is a member (a member
//!   with children is held by its own level), separated by 0x00: one key per level of the set
//!   instead of one per member;
//! - `P ‖ type id ‖ path ‖ 0x00 ‖ manager ‖ 0x00 ‖ object prefix` → empty, one per member whose
//!   last element is not simple (a field name or key value holding `.` or `[`).
//!
//! Paths are printed as Kubernetes prints them; a NUL inside a name or path is written `\u0000`.

use super::keys::{self, CF_META, CF_OWNERS};
use super::kv::{Batch, Flow, Kv, Op};
use super::object::EntryFields;
use crate::{Error, Result};
use fieldstore_codec::{fields_binary, Set};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// The `meta` key of the owner index's layout version (u32 BE; absent: the first layout, a `P`
/// key per member, which opening the store rewrites: [`relayout`]).
pub(super) const META_LAYOUT: &[u8] = b"owners_layout";
/// The layout this code writes and reads: levels in `G` keys.
pub(super) const LAYOUT: u32 = 2;

/// What the `M` entry of a (manager, object) pair holds.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(super) struct Owned {
    /// The manager's entries: `Apply`, `Update`, `Update/status`, …
    pub(super) operations: Vec<String>,
    /// Number of field paths (set members) owned.
    pub(super) fields: u64,
    /// The union of the entries' sets, binary FieldsV1.
    pub(super) set: Vec<u8>,
}

/// Keys never contain the separator: a NUL in a manager name or path is written escaped.
pub(super) fn esc(s: &str) -> Cow<'_, str> {
    if s.contains('\0') {
        Cow::Owned(s.replace('\0', "\\u0000"))
    } else {
        Cow::Borrowed(s)
    }
}

/// Whether a printed element is kept in its level's `G` key: nothing after its first
/// character could start another element, so a path's last such element is found by splitting
/// the path at its last `.` or `[` (`owners_of`).
pub(super) fn simple(element: &str) -> bool {
    element.get(1..).is_some_and(|rest| !rest.contains(['.', '[']))
}

/// The `M` key of a manager's entries in one object (an empty prefix: all its objects).
pub(super) fn manager_key(manager: &str, object_prefix: &[u8]) -> Vec<u8> {
    let m = esc(manager);
    let mut k = Vec::with_capacity(2 + m.len() + object_prefix.len());
    k.push(b'M');
    k.extend_from_slice(m.as_bytes());
    k.push(0);
    k.extend_from_slice(object_prefix);
    k
}

/// A `G` (`kind` `b'G'`) or `P` key: `kind ‖ type id ‖ path ‖ 0x00 ‖ manager ‖ 0x00 ‖ object
/// prefix`, the path escaped already.
pub(super) fn path_key(kind: u8, type_id: u32, path: &str, manager: &str, object_prefix: &[u8]) -> Vec<u8> {
    let m = esc(manager);
    let mut k = Vec::with_capacity(7 + path.len() + m.len() + object_prefix.len());
    k.push(kind);
    k.extend_from_slice(&type_id.to_be_bytes());
    k.extend_from_slice(path.as_bytes());
    k.push(0);
    k.extend_from_slice(m.as_bytes());
    k.push(0);
    k.extend_from_slice(object_prefix);
    k
}

/// The union of the entries' sets; one entry's set as the write decoded it, when it did.
fn union<'e>(entries: &[&'e EntryFields]) -> Result<Cow<'e, Set>> {
    let decoded = |e: &'e EntryFields| -> Result<Cow<'e, Set>> {
        Ok(match &e.set {
            Some(set) => Cow::Borrowed(set),
            None => Cow::Owned(fields_binary::decode(&e.fields)?),
        })
    };
    if let [one] = entries {
        return decoded(one);
    }
    let mut set = Set::new();
    for e in entries {
        set = set.union(decoded(e)?.as_ref());
    }
    Ok(Cow::Owned(set))
}

/// The index keys of one manager's set in one object, as a write changes them.
pub(super) struct Levels<'a> {
    pub(super) type_id: u32,
    pub(super) manager: &'a str,
    pub(super) object_prefix: &'a [u8],
}

/// One level's keys: its `G` value (`None`: no key) and its other members' paths (sorted).
#[derive(Default)]
struct Level {
    group: Option<Vec<u8>>,
    others: Vec<String>,
}

/// A node of a set as the index sees it: the node, and whether its own path is a member that
/// its level holds (as the empty element; a member with children is held by its own level, one
/// without by its parent's).
#[derive(Clone, Copy)]
struct Node<'s> {
    set: &'s Set,
    member: bool,
}

impl Node<'_> {
    /// Whether the node's level holds the same elements as `other`'s (members, which of them
    /// have children, its own membership), without printing any.
    fn same_level(&self, other: &Node<'_>) -> bool {
        let (a, b) = (self.set, other.set);
        self.member == other.member
            && a.members() == b.members()
            && a.children().len() == b.children().len()
            && a.children().iter().zip(b.children()).all(|(x, y)| x.0 == y.0)
    }
}

impl Levels<'_> {
    /// The ops that take the index from set `old` to set `new` (both empty: none): the levels
    /// whose elements differ are written again, sub-sets the two share are skipped.
    pub(super) fn diff(&self, old: &Set, new: &Set, ops: &mut Vec<Op>) {
        let mut text = String::new();
        self.walk(&mut text, Node { set: old, member: false }, Node { set: new, member: false }, ops);
    }

    fn walk(&self, text: &mut String, old: Node<'_>, new: Node<'_>, ops: &mut Vec<Op>) {
        if old.set.is_same_node(new.set) && old.member == new.member {
            return;
        }
        if !old.same_level(&new) {
            self.level_diff(text, old, new, ops);
        }
        let empty = Set::new();
        let (oc, nc) = (old.set.children(), new.set.children());
        let (mut i, mut j) = (0, 0);
        loop {
            // The element, its sub-sets in each (absent: `None`), and which side moves on.
            let (pe, o, n, next_i, next_j) = match (oc.get(i), nc.get(j)) {
                (None, None) => break,
                (Some((pe, o)), None) => (pe, Some(o), None, 1, 0),
                (None, Some((pe, n))) => (pe, None, Some(n), 0, 1),
                (Some((pa, o)), Some((pb, n))) => match pa.cmp(pb) {
                    Ordering::Less => (pa, Some(o), None, 1, 0),
                    Ordering::Greater => (pb, None, Some(n), 0, 1),
                    Ordering::Equal => (pa, Some(o), Some(n), 1, 1),
                },
            };
            i += next_i;
            j += next_j;
            let len = text.len();
            pe.write_to(text);
            let simple = simple(&text[len..]);
            let o = match o {
                Some(set) => Node { set, member: simple && old.set.members().binary_search(pe).is_ok() },
                None => Node { set: &empty, member: false },
            };
            let n = match n {
                Some(set) => Node { set, member: simple && new.set.members().binary_search(pe).is_ok() },
                None => Node { set: &empty, member: false },
            };
            self.walk(text, o, n, ops);
            text.truncate(len);
        }
    }

    fn level(text: &str, node: Node<'_>) -> Level {
        let (members, children) = (node.set.members(), node.set.children());
        if members.is_empty() && !node.member {
            return Level::default();
        }
        let mut group = String::with_capacity(members.len() * 16);
        let mut others = Vec::new();
        let mut held = node.member;
        let mut c = 0;
        for pe in members {
            // Each element printed in place, after a separator.
            let before = group.len();
            if held {
                group.push('\0');
            }
            let at = group.len();
            pe.write_to(&mut group);
            while children.get(c).is_some_and(|(x, _)| x < pe) {
                c += 1;
            }
            let has_children = children.get(c).is_some_and(|(x, _)| x == pe);
            if !simple(&group[at..]) {
                others.push(format!("{text}{}", &group[at..]));
                group.truncate(before);
            } else if has_children {
                // Held by its own level.
                group.truncate(before);
            } else {
                held = true;
                if group[at..].contains('\0') {
                    let escaped = esc(&group[at..]).into_owned();
                    group.truncate(at);
                    group.push_str(&escaped);
                }
            }
        }
        others.sort_unstable();
        Level { group: held.then(|| group.into_bytes()), others }
    }

    fn level_diff(&self, text: &str, old: Node<'_>, new: Node<'_>, ops: &mut Vec<Op>) {
        let (old, new) = (Self::level(text, old), Self::level(text, new));
        let path = esc(text);
        if old.group != new.group {
            let key = path_key(b'G', self.type_id, &path, self.manager, self.object_prefix);
            ops.push(match new.group {
                None => Op::Delete { cf: CF_OWNERS, key },
                Some(value) => Op::Put { cf: CF_OWNERS, key, value },
            });
        }
        let key = |p: &str| path_key(b'P', self.type_id, &esc(p), self.manager, self.object_prefix);
        for p in old.others.iter().filter(|p| new.others.binary_search(p).is_err()) {
            ops.push(Op::Delete { cf: CF_OWNERS, key: key(p) });
        }
        for p in new.others.iter().filter(|p| old.others.binary_search(p).is_err()) {
            ops.push(Op::Put { cf: CF_OWNERS, key: key(p), value: Vec::new() });
        }
    }
}

/// The index changes of a write whose object had `old` entries and now has `new` (empty for a
/// delete). Managers whose entries did not change cost nothing.
pub(super) fn index_ops(type_id: u32, object_prefix: &[u8], old: &[EntryFields], new: &[EntryFields]) -> Result<Vec<Op>> {
    let mut by_manager: BTreeMap<&str, (Vec<&EntryFields>, Vec<&EntryFields>)> = BTreeMap::new();
    for e in old {
        by_manager.entry(&e.manager).or_default().0.push(e);
    }
    for e in new {
        by_manager.entry(&e.manager).or_default().1.push(e);
    }
    let mut ops = Vec::new();
    for (manager, (olds, news)) in by_manager {
        if olds == news {
            continue;
        }
        let old_set = union(&olds)?;
        let new_set = union(&news)?;
        Levels { type_id, manager, object_prefix }.diff(&old_set, &new_set, &mut ops);
        let key = manager_key(manager, object_prefix);
        if news.is_empty() {
            ops.push(Op::Delete { cf: CF_OWNERS, key });
        } else {
            let owned = Owned {
                operations: news.iter().map(|e| e.operation.clone()).collect(),
                fields: new_set.size() as u64,
                // One entry's set is its record's binary form already.
                set: match news.as_slice() {
                    [one] => one.fields.clone(),
                    _ => fields_binary::encode(&new_set),
                },
            };
            ops.push(Op::Put { cf: CF_OWNERS, key, value: bincode::serialize(&owned).unwrap_or_default() });
        }
    }
    Ok(ops)
}

/// An `M` entry read back: its manager and object (as the keys of its set's levels name them)
/// and the union of the manager's sets there.
fn manager_entry<'k>(key: &'k [u8], value: &[u8]) -> Result<(Levels<'k>, Set)> {
    let bad = || Error::Corrupt("malformed owner index entry".into());
    let sep = key.iter().position(|&b| b == 0).ok_or_else(bad)?;
    let manager = key.get(1..sep).and_then(|m| std::str::from_utf8(m).ok()).ok_or_else(bad)?;
    let object_prefix = &key[sep + 1..];
    let (type_id, _, _) = keys::parse_object_prefix(object_prefix)?;
    let owned: Owned = bincode::deserialize(value).map_err(|_| bad())?;
    Ok((Levels { type_id, manager, object_prefix }, fields_binary::decode(&owned.set)?))
}

/// Brings the owner index of a store written with an earlier layout (no [`META_LAYOUT`] key:
/// a `P` key per member) to [`LAYOUT`]: every `P` key goes, and each `M` entry's set is written
/// again as levels. Repeatable: a crash before the layout key is written redoes it on the next
/// open (no write runs meanwhile).
///
/// # Errors
/// [`Error::Corrupt`] for a layout newer than this code's, or a malformed entry.
pub(super) fn relayout(kv: &dyn Kv) -> Result<()> {
    match kv.get(CF_META, META_LAYOUT)? {
        Some(v) if v == LAYOUT.to_be_bytes() => return Ok(()),
        Some(v) => return Err(Error::Corrupt(format!("owner index layout {v:?}, this version reads {LAYOUT}"))),
        None => {}
    }
    // On its own: a transaction on etcd may not delete a range and put a key inside it.
    let mut batch = Batch::default();
    batch.delete_range(CF_OWNERS, b"P".to_vec(), b"Q".to_vec());
    kv.write(std::mem::take(&mut batch), true)?;
    kv.scan(CF_OWNERS, b"M", Some(b"N"), &mut |k, v| {
        let (levels, set) = manager_entry(k, v)?;
        levels.diff(&Set::new(), &set, &mut batch.ops);
        if batch.ops.len() >= 1000 {
            kv.write(std::mem::take(&mut batch), false)?;
        }
        Ok(Flow::Continue)
    })?;
    batch.put(CF_META, META_LAYOUT.to_vec(), LAYOUT.to_be_bytes().to_vec());
    kv.write(batch, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Collection, Options, Owner, Store, WriteOptions};
    use serde_json::json;

    const QUERIES: [&str; 8] = ["", ".data", ".data.a.b", ".data.a", ".data.x", ".metadata", ".metadata.labels", ".metadata.labels.app"];

    fn owners(s: &Store) -> Vec<Vec<Owner>> {
        QUERIES.iter().map(|q| s.owners_of("configmaps", q).unwrap_or_default()).collect()
    }

    /// Writes the first layout's keys over a store's index: a `P` key per member of each `M`
    /// entry's set, no `G` key, no layout key.
    fn to_first_layout(s: &Store) -> Result<()> {
        let kv = s.core().kv.as_ref();
        let mut batch = Batch::default();
        batch.delete_range(CF_OWNERS, b"G".to_vec(), b"H".to_vec());
        batch.delete_range(CF_OWNERS, b"P".to_vec(), b"Q".to_vec());
        batch.delete(CF_META, META_LAYOUT.to_vec());
        kv.scan(CF_OWNERS, b"M", Some(b"N"), &mut |k, v| {
            let (l, set) = manager_entry(k, v)?;
            set.iterate_printed(|p| batch.put(CF_OWNERS, path_key(b'P', l.type_id, &esc(p), l.manager, l.object_prefix), Vec::new()));
            Ok(Flow::Continue)
        })?;
        kv.write(batch, true)
    }

    /// How many `G` and `P` keys the index holds.
    fn kinds(s: &Store) -> Result<(usize, usize)> {
        let mut n = (0, 0);
        s.core().kv.scan(CF_OWNERS, b"G", Some(b"Q"), &mut |k, _| {
            match k.first() {
                Some(b'G') => n.0 += 1,
                Some(b'P') => n.1 += 1,
                _ => {}
            }
            Ok(Flow::Continue)
        })?;
        Ok(n)
    }

    #[test]
    fn a_store_of_the_first_layout_is_laid_out_again_on_open() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::Corrupt(e.to_string()))?;
        let options = Options::default().sync(false);
        let configs = Collection::new("configmaps", Some("ns"));
        let cm = |name: &str, data: serde_json::Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"app": "web"}}, "data": data});
        let before = {
            let s = Store::open(dir.path(), options.clone())?;
            s.apply(&configs, &cm("one", json!({"a.b": "1", "x": "2"})), &WriteOptions::new("alice"))?;
            s.apply(&configs, &cm("two", json!({"a": "1"})), &WriteOptions::new("alice"))?;
            s.apply(
                &configs,
                &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "two"}, "data": {"x": "3"}}),
                &WriteOptions::new("bob"),
            )?;
            let before = owners(&s);
            assert!(before.iter().all(|o| !o.is_empty()), "{before:?}");
            // Levels: `.data` and `.metadata.labels` of each of alice's objects, `.data` of
            // bob's; `.data.a.b` apart.
            assert_eq!(kinds(&s)?, (5, 1));
            to_first_layout(&s)?;
            assert_eq!(kinds(&s)?, (0, 6));
            before
        };
        let s = Store::open(dir.path(), options)?;
        assert_eq!(owners(&s), before);
        assert_eq!(kinds(&s)?, (5, 1));
        assert_eq!(s.core().kv.get(CF_META, META_LAYOUT)?, Some(LAYOUT.to_be_bytes().to_vec()));
        // Later writes keep it exact (a `P` key of the first layout left behind would still
        // name alice): bob takes `.data.x` and `.data.a.b` of `one`.
        s.apply(
            &configs,
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "one"}, "data": {"a.b": "9", "x": "9"}}),
            &WriteOptions::new("bob").force(true),
        )?;
        for path in [".data.x", ".data.a.b"] {
            let got: Vec<(String, String)> =
                s.owners_of("configmaps", path)?.into_iter().filter(|o| o.name == "one").map(|o| (o.name, o.manager)).collect();
            assert_eq!(got, vec![("one".to_string(), "bob".to_string())], "{path}");
        }
        Ok(())
    }
}
