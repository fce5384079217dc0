//! The owner index's layout and maintenance: the index changes of one write, computed by the
//! writer and committed in the write's batch.
//!
//! Keys (column family `owners`, see `engine/STORAGE.md`):
//! - `M ‖ manager ‖ 0x00 ‖ object prefix` → [`Owned`] (the manager's entries and fields there);
//! - `P ‖ type id ‖ path ‖ 0x00 ‖ manager ‖ 0x00 ‖ object prefix` → empty, one per field path
//!   (every member of the manager's field set, printed as Kubernetes prints paths).

use super::keys::CF_OWNERS;
use super::kv::Op;
use super::object::EntryFields;
use crate::Result;
use fieldstore_codec::{fields_binary, Set};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::BTreeMap;

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
pub(super) fn esc(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains('\0') {
        std::borrow::Cow::Owned(s.replace('\0', "\\u0000"))
    } else {
        std::borrow::Cow::Borrowed(s)
    }
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

/// The `P` key of one field path a manager owns in one object.
fn path_key(type_id: u32, path: &str, manager: &str, object_prefix: &[u8]) -> Vec<u8> {
    let (p, m) = (esc(path), esc(manager));
    let mut k = Vec::with_capacity(7 + p.len() + m.len() + object_prefix.len());
    k.push(b'P');
    k.extend_from_slice(&type_id.to_be_bytes());
    k.extend_from_slice(p.as_bytes());
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
        old_set
            .difference(&new_set)
            .iterate_printed(|p| ops.push(Op::Delete { cf: CF_OWNERS, key: path_key(type_id, p, manager, object_prefix) }));
        let mut added = |p: &str| ops.push(Op::Put { cf: CF_OWNERS, key: path_key(type_id, p, manager, object_prefix), value: Vec::new() });
        // A create's paths are its whole set: no difference to compute (a copy of the set).
        if olds.is_empty() {
            new_set.iterate_printed(&mut added);
        } else {
            new_set.difference(&old_set).iterate_printed(&mut added);
        }
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
