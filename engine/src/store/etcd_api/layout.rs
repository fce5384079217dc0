//! Where etcd keys live (see `engine/STORAGE.md`, "etcd keys"): the escaped key, the version
//! record, the change log entry of an etcd revision, and the lease records.

pub(crate) use super::super::keys::CF_ETCD;
use super::super::keys::{self, CF_META};
use crate::{Error, Result};

/// The type id that marks a change log entry as etcd keys' (no registered type has it).
pub(crate) const CHANGE_MARK: [u8; 4] = [0xff; 4];

/// `meta` key prefix of a lease record (lease id i64 BE → granted TTL i64 BE).
pub(crate) const LEASE_PREFIX: &[u8] = b"lease/";

/// Escapes an etcd key: `0x00` → `0x00 0xff`, then the terminator `0x00 0x01`. Prefix-free and
/// order-preserving.
pub(crate) fn escape(key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(key.len() + 2);
    escape_into(key, &mut out);
    out
}

fn escape_into(key: &[u8], out: &mut Vec<u8>) {
    for &b in key {
        out.push(b);
        if b == 0 {
            out.push(0xff);
        }
    }
    out.extend_from_slice(&[0, 1]);
}

/// Reads one escaped key from the front of `bytes`: the key and the rest.
pub(crate) fn unescape(bytes: &[u8]) -> Result<(Vec<u8>, &[u8])> {
    let mut key = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b != 0 {
            key.push(b);
            i += 1;
            continue;
        }
        match bytes.get(i + 1) {
            Some(0xff) => {
                key.push(0);
                i += 2;
            }
            Some(1) => return Ok((key, bytes.get(i + 2..).unwrap_or_default())),
            _ => break,
        }
    }
    Err(Error::Corrupt("malformed etcd key".into()))
}

/// The key of one version of an etcd key.
pub(crate) fn version_key(escaped: &[u8], revision: u64) -> Vec<u8> {
    keys::object_key(escaped, revision)
}

/// Splits a version key into the escaped key and the revision.
pub(crate) fn split_version_key(k: &[u8]) -> Result<(&[u8], u64)> {
    if k.len() < 10 {
        return Err(Error::Corrupt("short etcd version key".into()));
    }
    let (escaped, rev) = k.split_at(k.len() - 8);
    Ok((escaped, !keys::read_u64(rev)?))
}

/// A stored version of an etcd key (its mod revision is the key's revision).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Version {
    pub tombstone: bool,
    pub create_revision: u64,
    pub version: u64,
    pub lease: i64,
    pub value: Vec<u8>,
}

impl Version {
    pub(crate) fn encode(&self) -> Vec<u8> {
        if self.tombstone {
            return vec![1];
        }
        let mut v = Vec::with_capacity(25 + self.value.len());
        v.push(0);
        v.extend_from_slice(&self.create_revision.to_be_bytes());
        v.extend_from_slice(&self.version.to_be_bytes());
        v.extend_from_slice(&self.lease.to_be_bytes());
        v.extend_from_slice(&self.value);
        v
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<Version> {
        let bad = || Error::Corrupt("malformed etcd version record".into());
        match bytes.split_first() {
            Some((1, _)) => Ok(Version { tombstone: true, ..Version::default() }),
            Some((0, rest)) if rest.len() >= 24 => {
                let (head, value) = rest.split_at(24);
                let create_revision = keys::read_u64(head.get(..8).ok_or_else(bad)?)?;
                let version = keys::read_u64(head.get(8..16).ok_or_else(bad)?)?;
                let lease = i64::from_be_bytes(head.get(16..24).and_then(|b| b.try_into().ok()).ok_or_else(bad)?);
                Ok(Version { tombstone: false, create_revision, version, lease, value: value.to_vec() })
            }
            _ => Err(bad()),
        }
    }

    /// Whether a record is a tombstone, without decoding it.
    pub(crate) fn is_tombstone(bytes: &[u8]) -> bool {
        bytes.first() == Some(&1)
    }
}

/// What a revision did to one etcd key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Touch {
    Put,
    Delete,
}

/// A key a revision touched, escaped, and how.
pub(crate) type Touched = (Touch, Vec<u8>);

/// The object prefix a change log entry carries for an etcd revision: the mark, then each
/// touched key (op byte ‖ escaped key) in order.
pub(crate) fn change_prefix(touched: &[Touched]) -> Vec<u8> {
    let mut p = CHANGE_MARK.to_vec();
    for (t, escaped) in touched {
        p.push(match t {
            Touch::Put => b'P',
            Touch::Delete => b'D',
        });
        p.extend_from_slice(escaped);
    }
    p
}

/// The keys a change log entry's prefix names (`None`: an object's change).
pub(crate) fn parse_change_prefix(prefix: &[u8]) -> Result<Option<Vec<Touched>>> {
    let Some(mut rest) = prefix.strip_prefix(&CHANGE_MARK[..]) else { return Ok(None) };
    let mut out = Vec::new();
    while let Some((&op, tail)) = rest.split_first() {
        let touch = match op {
            b'P' => Touch::Put,
            b'D' => Touch::Delete,
            _ => return Err(Error::Corrupt("malformed etcd change entry".into())),
        };
        let (key, after) = unescape(tail)?;
        // The escaped form is what the version keys hold.
        out.push((touch, escape(&key)));
        rest = after;
    }
    Ok(Some(out))
}

/// The `meta` key of a lease.
pub(crate) fn lease_key(id: i64) -> Vec<u8> {
    let mut k = LEASE_PREFIX.to_vec();
    k.extend_from_slice(&id.to_be_bytes());
    k
}

/// The lease id of a lease record's key.
pub(crate) fn lease_id(key: &[u8]) -> Result<i64> {
    key.strip_prefix(LEASE_PREFIX)
        .and_then(|b| b.try_into().ok())
        .map(i64::from_be_bytes)
        .ok_or_else(|| Error::Corrupt("malformed lease key".into()))
}

/// The column family of lease records.
pub(crate) const CF_LEASES: &str = CF_META;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_keeps_order_and_is_prefix_free() {
        let keys: [&[u8]; 12] =
            [b"", b"\x00", b"\x00\x00", b"\x00\x01", b"a", b"a\x00", b"a\x00b", b"a\x01", b"ab", b"b", b"\xff", b"\xff\x00"];
        for a in &keys {
            for b in &keys {
                assert_eq!(a.cmp(b), escape(a).cmp(&escape(b)), "{a:?} {b:?}");
                // Every version of the smaller key sorts before the larger key.
                if a < b {
                    assert!(version_key(&escape(a), 0) < escape(b), "{a:?} {b:?}");
                }
            }
            let e = escape(a);
            let (back, rest) = unescape(&e).unwrap();
            assert_eq!((&back[..], rest), (*a, &b""[..]));
        }
    }

    #[test]
    fn records_and_changes_round_trip() {
        let v = Version { tombstone: false, create_revision: 3, version: 2, lease: -7, value: b"\x00x".to_vec() };
        assert_eq!(Version::decode(&v.encode()).unwrap(), v);
        let t = Version { tombstone: true, ..Version::default() };
        assert_eq!(Version::decode(&t.encode()).unwrap(), t);
        assert!(Version::decode(&[0, 1]).is_err());
        let touched = vec![(Touch::Put, escape(b"a\x00")), (Touch::Delete, escape(b"b"))];
        assert_eq!(parse_change_prefix(&change_prefix(&touched)).unwrap(), Some(touched));
        assert_eq!(parse_change_prefix(&[0, 0, 0, 1, 0]).unwrap(), None);
    }
}
