//! The revision key's value ([`Head`]): the store's revision, the id of the commit that made it
//! and, while a staged commit is applied, its intent; and the compare that guards a commit.

use super::super::keys::{CF_META, META_REVISION};
use super::Etcd;
use crate::{Error, Result};
use etcd_client::{Compare, CompareOp};

/// The revision key's value: `revision ‖ commit id`, and while a staged commit is being
/// applied also `‖ base revision ‖ chunk count` of its intent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Head {
    pub(super) revision: u64,
    pub(super) id: [u8; 16],
    pub(super) pending: Option<(u64, u32)>,
}

impl Head {
    /// The value as bytes.
    pub(super) fn encode(&self) -> Vec<u8> {
        let mut v = self.revision.to_be_bytes().to_vec();
        v.extend_from_slice(&self.id);
        if let Some((base, chunks)) = self.pending {
            v.extend_from_slice(&base.to_be_bytes());
            v.extend_from_slice(&chunks.to_be_bytes());
        }
        v
    }

    /// The value of `v`, as [`Head::encode`] wrote it.
    pub(super) fn decode(v: &[u8]) -> Result<Head> {
        let bad = || Error::Corrupt(format!("etcd revision key of {} bytes", v.len()));
        if v.len() != 24 && v.len() != 36 {
            return Err(bad());
        }
        let revision = u64::from_be_bytes(v[..8].try_into().map_err(|_| bad())?);
        let id = v[8..24].try_into().map_err(|_| bad())?;
        let pending = if v.len() == 36 {
            let base = u64::from_be_bytes(v[24..32].try_into().map_err(|_| bad())?);
            let chunks = u32::from_be_bytes(v[32..36].try_into().map_err(|_| bad())?);
            Some((base, chunks))
        } else {
            None
        };
        Ok(Head { revision, id, pending })
    }
}

impl Etcd {
    /// The compare that the revision key still holds `value` (absent for a new store).
    pub(super) fn head_is(&self, value: Option<&[u8]>) -> Compare {
        let key = self.key(CF_META, META_REVISION);
        match value {
            Some(v) => Compare::value(key, CompareOp::Equal, v.to_vec()),
            None => Compare::version(key, CompareOp::Equal, 0),
        }
    }
}
