//! Column families and every key layout of the store, in one place (see `engine/STORAGE.md`).
//!
//! Ordering is part of the format: revisions are big-endian so byte order is numeric order, and
//! object keys end in the *complement* of the revision so that, within one object, the newest
//! version sorts first (a seek to the object's prefix lands on its latest version, and a seek to
//! `!R` lands on the newest version at or before `R`).

use crate::{Error, Result};

/// Column family of store-wide metadata ([`META_REVISION`], [`META_COMPACTED`], …).
pub(crate) const CF_META: &str = "meta";
/// Column family of registered resource types: `type id (u32 BE)` → type record (JSON).
pub(crate) const CF_TYPES: &str = "types";
/// Column family of object versions (MVCC history): see [`object_key`].
pub(crate) const CF_OBJECTS: &str = "objects";
/// Column family of the change log: `revision (u64 BE)` → change record (see [`Change`]).
pub(crate) const CF_CHANGES: &str = "changes";
/// Column family of field history: object version key → history record (`history.rs`).
pub(crate) const CF_HISTORY: &str = "history";
/// Column family of the owner index (`owners.rs`).
pub(crate) const CF_OWNERS: &str = "owners";
/// Column family of etcd key versions (the etcd API, `etcd_api/layout.rs`).
pub(crate) const CF_ETCD: &str = "etcd";
/// Every column family but RocksDB's mandatory `default`, which the store leaves empty.
pub(crate) const ALL_CFS: [&str; 7] = [CF_META, CF_TYPES, CF_OBJECTS, CF_CHANGES, CF_HISTORY, CF_OWNERS, CF_ETCD];

/// `meta` key of the current revision (u64 BE), written in the batch of every write.
pub(crate) const META_REVISION: &[u8] = b"revision";
/// `meta` key of the compacted revision (u64 BE): history before it is gone.
pub(crate) const META_COMPACTED: &[u8] = b"compacted";
/// `meta` key of the on-disk format version (u32 BE).
pub(crate) const META_FORMAT: &[u8] = b"format";
/// The on-disk format this code writes and reads.
pub(crate) const FORMAT_VERSION: u32 = 1;

/// Separator after the namespace and after the name. Names and namespaces are DNS names, so they
/// never contain it, and it sorts below every byte they can contain: `a` < `a-b` as in Kubernetes.
const SEP: u8 = 0;

/// A big-endian u64.
pub(crate) fn u64_be(v: u64) -> [u8; 8] {
    v.to_be_bytes()
}

/// Reads a big-endian u64 from exactly 8 bytes.
pub(crate) fn read_u64(bytes: &[u8]) -> Result<u64> {
    let arr: [u8; 8] = bytes.try_into().map_err(|_| Error::Corrupt(format!("expected 8 bytes, got {}", bytes.len())))?;
    Ok(u64::from_be_bytes(arr))
}

/// Key prefix of every object of one type: `type id (u32 BE)`.
pub(crate) fn type_prefix(type_id: u32) -> Vec<u8> {
    type_id.to_be_bytes().to_vec()
}

/// Key prefix of every object of one type in one namespace: `type id ‖ ns ‖ 0x00`.
pub(crate) fn namespace_prefix(type_id: u32, namespace: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(5 + namespace.len());
    k.extend_from_slice(&type_id.to_be_bytes());
    k.extend_from_slice(namespace.as_bytes());
    k.push(SEP);
    k
}

/// Key prefix of every version of one object: `type id ‖ ns ‖ 0x00 ‖ name ‖ 0x00`
/// (`ns` is empty for cluster-scoped objects).
pub(crate) fn object_prefix(type_id: u32, namespace: &str, name: &str) -> Vec<u8> {
    let mut k = namespace_prefix(type_id, namespace);
    k.extend_from_slice(name.as_bytes());
    k.push(SEP);
    k
}

/// Key of one version: `object prefix ‖ !revision (u64 BE)`.
pub(crate) fn object_key(prefix: &[u8], revision: u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(prefix.len() + 8);
    k.extend_from_slice(prefix);
    k.extend_from_slice(&u64_be(!revision));
    k
}

/// The parts of an object version key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VersionKey<'k> {
    /// The object prefix (everything but the revision).
    pub prefix: &'k [u8],
    pub type_id: u32,
    pub namespace: &'k str,
    pub name: &'k str,
    pub revision: u64,
}

/// Splits an object version key.
pub(crate) fn parse_object_key(key: &[u8]) -> Result<VersionKey<'_>> {
    let bad = || Error::Corrupt(format!("malformed object key {key:?}"));
    if key.len() < 4 + 2 + 8 {
        return Err(bad());
    }
    let (prefix, rev) = key.split_at(key.len() - 8);
    let revision = !read_u64(rev)?;
    let (tid, rest) = prefix.split_at(4);
    let type_id = u32::from_be_bytes(tid.try_into().map_err(|_| bad())?);
    let rest = rest.strip_suffix(&[SEP]).ok_or_else(bad)?;
    let sep = rest.iter().position(|&b| b == SEP).ok_or_else(bad)?;
    let (ns, name) = rest.split_at(sep);
    let name = name.get(1..).ok_or_else(bad)?;
    let namespace = std::str::from_utf8(ns).map_err(|_| bad())?;
    let name = std::str::from_utf8(name).map_err(|_| bad())?;
    Ok(VersionKey { prefix, type_id, namespace, name, revision })
}

/// Splits an object prefix (`type id ‖ ns ‖ 0x00 ‖ name ‖ 0x00`) into type id, namespace and
/// name.
pub(crate) fn parse_object_prefix(prefix: &[u8]) -> Result<(u32, &str, &str)> {
    let bad = || Error::Corrupt(format!("malformed object prefix {prefix:?}"));
    if prefix.len() < 4 + 2 {
        return Err(bad());
    }
    let (tid, rest) = prefix.split_at(4);
    let type_id = u32::from_be_bytes(tid.try_into().map_err(|_| bad())?);
    let rest = rest.strip_suffix(&[SEP]).ok_or_else(bad)?;
    let sep = rest.iter().position(|&b| b == SEP).ok_or_else(bad)?;
    let namespace = std::str::from_utf8(&rest[..sep]).map_err(|_| bad())?;
    let name = std::str::from_utf8(&rest[sep + 1..]).map_err(|_| bad())?;
    Ok((type_id, namespace, name))
}

/// The smallest key greater than every key starting with `prefix` (`None`: no bound).
pub(crate) fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// Key of a change log entry.
pub(crate) fn change_key(revision: u64) -> [u8; 8] {
    u64_be(revision)
}

/// What a revision did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// The object was created.
    Added,
    /// The object was changed.
    Modified,
    /// The object was deleted.
    Deleted,
}

impl EventType {
    fn tag(self) -> u8 {
        match self {
            EventType::Added => 1,
            EventType::Modified => 2,
            EventType::Deleted => 3,
        }
    }

    fn from_tag(t: u8) -> Result<Self> {
        match t {
            1 => Ok(EventType::Added),
            2 => Ok(EventType::Modified),
            3 => Ok(EventType::Deleted),
            _ => Err(Error::Corrupt(format!("unknown change tag {t}"))),
        }
    }

    /// The name of the event type in a Kubernetes watch stream (`ADDED`, …).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// A change log record: `tag (u8) ‖ unix millis (u64 BE) ‖ object prefix`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Change {
    pub event: EventType,
    pub unix_millis: u64,
    pub object_prefix: Vec<u8>,
}

impl Change {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(9 + self.object_prefix.len());
        v.push(self.event.tag());
        v.extend_from_slice(&u64_be(self.unix_millis));
        v.extend_from_slice(&self.object_prefix);
        v
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<Self> {
        let (&tag, rest) = bytes.split_first().ok_or_else(|| Error::Corrupt("empty change record".into()))?;
        if rest.len() < 8 {
            return Err(Error::Corrupt("short change record".into()));
        }
        let (ms, prefix) = rest.split_at(8);
        Ok(Change { event: EventType::from_tag(tag)?, unix_millis: read_u64(ms)?, object_prefix: prefix.to_vec() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newest_version_sorts_first_and_names_in_kubernetes_order() {
        let p = object_prefix(7, "ns", "a");
        assert!(object_key(&p, 10) < object_key(&p, 9));
        // "a" sorts before "a-b" and "ab": the separator is below every name byte.
        assert!(object_key(&p, 1) < object_prefix(7, "ns", "a-b"));
        assert!(object_prefix(7, "ns", "a-b") < object_prefix(7, "ns", "ab"));
        let k = object_key(&p, 42);
        let parsed = parse_object_key(&k).unwrap();
        assert_eq!((parsed.type_id, parsed.namespace, parsed.name, parsed.revision), (7, "ns", "a", 42));
        assert_eq!(parsed.prefix, &p[..]);
    }

    #[test]
    fn prefix_end_bounds_the_prefix() {
        assert_eq!(prefix_end(&[1, 2]), Some(vec![1, 3]));
        assert_eq!(prefix_end(&[1, 0xff]), Some(vec![2]));
        assert_eq!(prefix_end(&[0xff]), None);
    }
}
