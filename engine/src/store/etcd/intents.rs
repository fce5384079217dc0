//! Staged commits, for a commit too large for one transaction: its operations written as an
//! intent, the revision key moved to "pending" (naming the intent), then the operations
//! applied by whichever process gets there, each step guarded and idempotent.

use super::super::keys::{CF_META, META_REVISION};
use super::super::kv::{Committed, Op};
use super::head::Head;
use super::layout::prefix_end;
use super::ops::{decode_ops, encode_ops};
use super::txns::TXN_BYTES;
use super::Etcd;
use crate::{Error, Result};
use etcd_client::{Compare, DeleteOptions, Txn, TxnOp};

impl Etcd {
    /// The first half of a staged commit: the intent, then the small transaction that makes it
    /// the next revision, pending. Its value, or `None` when another commit came first (the
    /// intent is then removed). [`Etcd::finish`] does the rest, here or in any process.
    pub(super) fn stage(&self, ops: &[Op], base: u64, revision: u64, id: &[u8; 16], compares: &[Compare]) -> Result<Option<Vec<u8>>> {
        let data = encode_ops(ops);
        let intent = self.intent_prefix(base, id);
        let chunks: Vec<&[u8]> = data.chunks(TXN_BYTES).collect();
        for (i, chunk) in chunks.iter().enumerate() {
            let mut k = intent.clone();
            k.extend_from_slice(&u32::try_from(i).unwrap_or(u32::MAX).to_be_bytes());
            let op = TxnOp::put(k, chunk.to_vec(), None);
            self.patiently(|| self.txn(Txn::new().and_then([op.clone()])))?;
        }
        let count = u32::try_from(chunks.len()).map_err(|_| Error::TooLarge { size: data.len(), limit: TXN_BYTES * 1000 })?;
        let pending = Head { revision, id: *id, pending: Some((base, count)) }.encode();
        let ops =
            [TxnOp::put(self.key(CF_META, META_REVISION), pending.clone(), None), TxnOp::put(self.commit_key(revision), id.to_vec(), None)];
        let outcome = self.commit_txn(|| Txn::new().when(compares.to_vec()).and_then(ops.clone()), revision, id)?;
        if outcome == Committed::Raced {
            let clear = TxnOp::delete(intent.clone(), Some(DeleteOptions::new().with_range(prefix_end(&intent))));
            let _ = self.txn(Txn::new().and_then([clear]));
            return Ok(None);
        }
        Ok(Some(pending))
    }

    /// Applies a pending (staged) commit whose revision key holds `pending`: its operations
    /// in transactions guarded by that value, then marks the revision applied. Any process
    /// may do it, at the same time as others: each step is guarded and idempotent.
    pub(super) fn finish(&self, pending: &[u8]) -> Result<()> {
        let head = Head::decode(pending)?;
        let Some((base, chunks)) = head.pending else { return Ok(()) };
        let intent = self.intent_prefix(base, &head.id);
        let mut data = Vec::new();
        for i in 0..chunks {
            let mut k = intent.clone();
            k.extend_from_slice(&i.to_be_bytes());
            match self.read_patiently(&k)? {
                Some(chunk) => data.extend_from_slice(&chunk),
                // Finished by another process meanwhile (its last step removes the intent).
                None => return Ok(()),
            }
        }
        let guard = || self.head_is(Some(pending));
        for group in self.groups(&decode_ops(&data)?) {
            if !group.is_empty() && !self.patiently(|| self.txn(Txn::new().when([guard()]).and_then(group.clone())))? {
                return Ok(());
            }
        }
        let mut group = Vec::new();
        let applied = Head { revision: head.revision, id: head.id, pending: None }.encode();
        group.push(TxnOp::put(self.key(CF_META, META_REVISION), applied.clone(), None));
        group.push(TxnOp::delete(intent.clone(), Some(DeleteOptions::new().with_range(prefix_end(&intent)))));
        if self.patiently(|| self.txn(Txn::new().when([guard()]).and_then(group.clone())))? {
            *self.head.lock() = Some(applied);
        }
        Ok(())
    }
}
