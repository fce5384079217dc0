//! Where the keys are in etcd: the store's own at `prefix/<family letter>/<key>`, the backend's
//! (commit ids, intents, value pieces, leaders) under `prefix/x/`.

use super::super::keys::{self, CF_CHANGES, CF_HISTORY, CF_META, CF_OBJECTS, CF_OWNERS, CF_TYPES};
use super::Etcd;
use crate::{Error, Result};

/// The family letter of a column family.
pub(super) fn family(cf: &str) -> u8 {
    match cf {
        CF_META => b'm',
        CF_TYPES => b't',
        CF_OBJECTS => b'o',
        CF_CHANGES => b'c',
        CF_HISTORY => b'h',
        CF_OWNERS => b'w',
        _ => b'?',
    }
}

/// The column family of a family letter.
pub(super) fn family_of(letter: u8) -> Result<&'static str> {
    Ok(match letter {
        b'm' => CF_META,
        b't' => CF_TYPES,
        b'o' => CF_OBJECTS,
        b'c' => CF_CHANGES,
        b'h' => CF_HISTORY,
        b'w' => CF_OWNERS,
        _ => return Err(Error::Corrupt(format!("etcd commit intent: family {letter}"))),
    })
}

/// The end of the etcd range of every key that starts with `p` ([`keys::prefix_end`]; etcd's
/// `"\0"` means "to the end of the keyspace").
pub(super) fn prefix_end(p: &[u8]) -> Vec<u8> {
    keys::prefix_end(p).unwrap_or_else(|| vec![0])
}

impl Etcd {
    /// The etcd key of the store's `key` in column family `cf`.
    pub(super) fn key(&self, cf: &str, key: &[u8]) -> Vec<u8> {
        let mut k = Vec::with_capacity(self.prefix.len() + 2 + key.len());
        k.extend_from_slice(&self.prefix);
        k.push(family(cf));
        k.push(b'/');
        k.extend_from_slice(key);
        k
    }

    /// The prefix of every key of a family.
    pub(super) fn family_prefix(&self, letter: u8) -> Vec<u8> {
        let mut k = self.prefix.clone();
        k.push(letter);
        k.push(b'/');
        k
    }

    /// The key of the backend's own `what` (family `x`).
    pub(super) fn internal(&self, what: &str) -> Vec<u8> {
        let mut k = self.family_prefix(b'x');
        k.extend_from_slice(what.as_bytes());
        k
    }

    /// The key holding the id of the commit of `revision`.
    pub(super) fn commit_key(&self, revision: u64) -> Vec<u8> {
        let mut k = self.internal("commit/");
        k.extend_from_slice(&revision.to_be_bytes());
        k
    }

    /// The prefix of the chunks of the intent of commit `id`, staged on revision `base`.
    pub(super) fn intent_prefix(&self, base: u64, id: &[u8; 16]) -> Vec<u8> {
        let mut k = self.internal("intent/");
        k.extend_from_slice(&base.to_be_bytes());
        k.extend_from_slice(id);
        k
    }

    /// The prefix of the pieces of `key`'s value.
    pub(super) fn pieces_prefix(&self, cf: &str, key: &[u8]) -> Vec<u8> {
        let mut k = self.internal("piece/");
        k.push(family(cf));
        k.extend_from_slice(key);
        k.push(b'/');
        k
    }
}
