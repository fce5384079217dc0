//! Values too large for one etcd request, kept in pieces: written as the pieces and a header
//! under the value's key, read back whole.

use super::layout::prefix_end;
use super::requests::etcd_err;
use super::Etcd;
use crate::{Error, Result};
use etcd_client::{GetOptions, TxnOp};

/// Values larger than this are kept in pieces of this size (etcd refuses a request over
/// `--max-request-bytes`, 1.5 MiB by default, and the largest object's record is that size).
pub(super) const VALUE_PIECE: usize = 256 << 10;
/// The value of a key whose value is kept in pieces: this magic, then the length (u64) and the
/// piece count (u32); the pieces are under `x/piece/<family letter><key>/<index u32>`.
pub(super) const PIECES_MAGIC: &[u8; 8] = b"\xffFSPIECE";

impl Etcd {
    /// The etcd operations that put a large `value` under `key`, each with its size in a
    /// request: its pieces, then the key's piece header.
    pub(super) fn put_pieces(&self, cf: &str, key: &[u8], value: &[u8], out: &mut Vec<(TxnOp, usize)>) {
        let prefix = self.pieces_prefix(cf, key);
        let mut count = 0u32;
        for (i, piece) in value.chunks(VALUE_PIECE).enumerate() {
            let mut k = prefix.clone();
            k.extend_from_slice(&u32::try_from(i).unwrap_or(u32::MAX).to_be_bytes());
            out.push((TxnOp::put(k.clone(), piece.to_vec(), None), k.len() + piece.len() + 32));
            count += 1;
        }
        let mut header = PIECES_MAGIC.to_vec();
        header.extend_from_slice(&(value.len() as u64).to_be_bytes());
        header.extend_from_slice(&count.to_be_bytes());
        let k = self.key(cf, key);
        out.push((TxnOp::put(k.clone(), header, None), k.len() + 64));
    }

    /// A value as stored: its pieces joined when it was kept in pieces.
    pub(super) fn whole(&self, cf: &str, key: &[u8], value: Vec<u8>) -> Result<Vec<u8>> {
        if value.len() != PIECES_MAGIC.len() + 12 || !value.starts_with(PIECES_MAGIC) {
            return Ok(value);
        }
        let len = u64::from_be_bytes(value[8..16].try_into().map_err(|_| Error::Corrupt("etcd piece header".into()))?);
        let count = u32::from_be_bytes(value[16..20].try_into().map_err(|_| Error::Corrupt("etcd piece header".into()))?) as usize;
        let prefix = self.pieces_prefix(cf, key);
        let resp = self.patiently(|| {
            let (mut kv, s, e) = (self.kv.clone(), prefix.clone(), prefix_end(&prefix));
            self.run(async move { kv.get(s, Some(GetOptions::new().with_range(e).with_limit(count as i64))).await })
                .map_err(|e| etcd_err(&e))
        })?;
        let mut out = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
        for piece in resp.kvs() {
            out.extend_from_slice(piece.value());
        }
        if out.len() as u64 != len || resp.kvs().len() != count {
            return Err(Error::Corrupt(format!("etcd value of {} pieces: {} of {len} bytes found", count, out.len())));
        }
        Ok(out)
    }
}
