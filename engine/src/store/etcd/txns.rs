//! A batch's operations as etcd transactions, each within etcd's limits on operations and
//! bytes per request.

use super::super::kv::Op;
use super::layout::prefix_end;
use super::pieces::VALUE_PIECE;
use super::Etcd;
use etcd_client::{DeleteOptions, TxnOp};

/// Operations per transaction, below etcd's default `--max-txn-ops` (128) with room for the
/// revision key, the commit id and the guard.
pub(super) const TXN_OPS: usize = 120;
/// Bytes of keys and values per transaction, below etcd's default `--max-request-bytes`
/// (1.5 MiB) with room for framing.
pub(super) const TXN_BYTES: usize = 1 << 20;

impl Etcd {
    /// The etcd operations of a store operation, each with its size in a request: a large
    /// value becomes its pieces and the key's piece header; a delete also deletes pieces.
    fn expand(&self, op: &Op, out: &mut Vec<(TxnOp, usize)>) {
        match op {
            Op::Put { cf, key, value } if value.len() > VALUE_PIECE => self.put_pieces(cf, key, value, out),
            Op::Put { cf, key, value } => {
                let k = self.key(cf, key);
                out.push((TxnOp::put(k.clone(), value.clone(), None), k.len() + value.len() + 32));
            }
            Op::Delete { cf, key } => {
                let k = self.key(cf, key);
                let p = self.pieces_prefix(cf, key);
                out.push((TxnOp::delete(k.clone(), None), k.len() + 32));
                out.push((TxnOp::delete(p.clone(), Some(DeleteOptions::new().with_range(prefix_end(&p)))), 2 * p.len() + 32));
            }
            Op::DeleteRange { cf, from, to } => {
                let (f, t) = (self.key(cf, from), self.key(cf, to));
                let (pf, pt) = (self.pieces_prefix(cf, from), self.pieces_prefix(cf, to));
                out.push((TxnOp::delete(f.clone(), Some(DeleteOptions::new().with_range(t.clone()))), f.len() + t.len() + 32));
                out.push((TxnOp::delete(pf.clone(), Some(DeleteOptions::new().with_range(pt.clone()))), pf.len() + pt.len() + 32));
            }
        }
    }

    /// Operations grouped into transactions within etcd's limits.
    pub(super) fn groups(&self, ops: &[Op]) -> Vec<Vec<TxnOp>> {
        let mut expanded = Vec::new();
        for op in ops {
            self.expand(op, &mut expanded);
        }
        let mut groups = vec![Vec::new()];
        let mut bytes = 0;
        for (op, size) in expanded {
            let last = groups.last().map_or(0, Vec::len);
            if last > 0 && (last >= TXN_OPS || bytes + size > TXN_BYTES) {
                groups.push(Vec::new());
                bytes = 0;
            }
            bytes += size;
            if let Some(g) = groups.last_mut() {
                g.push(op);
            }
        }
        groups
    }
}
