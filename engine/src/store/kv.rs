//! The narrow key-value interface the store is written against, so that another backend (a
//! replicated one such as etcd) can replace RocksDB without touching the verbs.
//!
//! What the store needs and no more:
//! - ordered keys in a few named keyspaces (column families, [`super::keys`]);
//! - point reads and forward range scans;
//! - atomic batches that also carry the store's revision counter, durable when asked;
//! - consistent reads are *not* asked of the backend: every object version is keyed by its
//!   revision (MVCC), so a reader at revision `R` ignores newer keys and a revision is its
//!   snapshot. A backend only has to make a batch visible atomically.
//!
//! A backend that other processes share (etcd, `super::etcd`) also guards commits
//! ([`Kv::commit`]: the revision moved, or a [`Guard`]'s range holds a key), signals others'
//! changes ([`Kv::wait_changed`]) and elects the runner of background work ([`Kv::lead`]); the
//! defaults are those of a backend with one writer.

use crate::Result;

/// One change of a batch.
#[derive(Debug, Clone)]
pub(crate) enum Op {
    /// Sets `key` in the column family to `value`.
    Put { cf: &'static str, key: Vec<u8>, value: Vec<u8> },
    /// Removes `key` from the column family.
    Delete { cf: &'static str, key: Vec<u8> },
    /// Removes every key in `[from, to)` of the column family.
    DeleteRange { cf: &'static str, from: Vec<u8>, to: Vec<u8> },
}

/// Changes applied all or nothing.
#[derive(Debug, Clone, Default)]
pub(crate) struct Batch {
    pub ops: Vec<Op>,
    /// The revision the batch brings the store to, persisted with it (`None`: unchanged).
    pub revision: Option<u64>,
    /// Ranges that must hold no key for a commit to apply ([`Kv::commit`] on a shared
    /// backend); the committer of a single-writer backend checks before it writes instead.
    pub guards: Vec<Guard>,
}

/// "No key in `[from, to)` of the column family" (no version of an object newer than the one
/// its writer read).
#[derive(Debug, Clone)]
pub(crate) struct Guard {
    pub cf: &'static str,
    pub from: Vec<u8>,
    pub to: Vec<u8>,
}

/// The most guards one commit carries (etcd compares at most `--max-txn-ops`, 128, per
/// transaction); a larger group is checked by reading first.
pub(crate) const MAX_GUARDS: usize = 100;

impl Batch {
    pub(crate) fn put(&mut self, cf: &'static str, key: Vec<u8>, value: Vec<u8>) {
        self.ops.push(Op::Put { cf, key, value });
    }

    pub(crate) fn delete(&mut self, cf: &'static str, key: Vec<u8>) {
        self.ops.push(Op::Delete { cf, key });
    }

    pub(crate) fn delete_range(&mut self, cf: &'static str, from: Vec<u8>, to: Vec<u8>) {
        self.ops.push(Op::DeleteRange { cf, from, to });
    }
}

/// Deletes issued while a scan runs, written in unsynced batches of 1000 so memory stays
/// bounded. For cleanup only: deletes lost in a crash leave garbage the next pass removes.
pub(crate) struct Deleter<'k> {
    kv: &'k dyn Kv,
    cf: &'static str,
    batch: Batch,
}

impl<'k> Deleter<'k> {
    pub(crate) fn new(kv: &'k dyn Kv, cf: &'static str) -> Self {
        Deleter { kv, cf, batch: Batch::default() }
    }

    /// Puts `value` under `key` in `cf`, in the batch of the next deletion.
    pub(crate) fn put(&mut self, cf: &'static str, key: &[u8], value: Vec<u8>) {
        self.batch.put(cf, key.to_vec(), value);
    }

    pub(crate) fn delete(&mut self, key: &[u8]) -> Result<()> {
        self.batch.delete(self.cf, key.to_vec());
        if self.batch.ops.len() >= 1000 {
            self.kv.write(std::mem::take(&mut self.batch), false)?;
        }
        Ok(())
    }

    pub(crate) fn finish(self) -> Result<()> {
        if self.batch.ops.is_empty() {
            return Ok(());
        }
        self.kv.write(self.batch, false)
    }
}

/// What a scan callback tells the scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Go on with the next key.
    Continue,
    /// Stop the scan.
    Stop,
}

/// A key and its value, owned.
pub(crate) type Entry = (Vec<u8>, Vec<u8>);

/// The callback of [`Kv::scan`]: gets each key and value, says whether to go on.
pub(crate) type ScanFn<'f> = dyn FnMut(&[u8], &[u8]) -> Result<Flow> + 'f;

/// How a commit ([`Kv::commit`]) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Committed {
    /// The batch is applied and the store is at its revision.
    Yes,
    /// Another writer (another server on the same backend) moved the revision past the base
    /// first: nothing was written.
    Raced,
}

/// What [`Kv::wait_changed`] saw: which parts of the store may have moved, and the newest
/// revision seen when known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Changed {
    /// Bits: [`Changed::REVISION`], [`Changed::COMPACTED`], [`Changed::TYPES`].
    pub bits: u8,
    /// The newest committed revision seen, if known.
    pub revision: Option<u64>,
}

impl Changed {
    /// The revision (new commits).
    pub const REVISION: u8 = 1;
    /// The compacted revision.
    pub const COMPACTED: u8 = 2;
    /// The registered types.
    pub const TYPES: u8 = 4;
    /// Everything.
    pub const ALL: u8 = 7;
}

/// An ordered, durable key-value store with atomic batches.
pub(crate) trait Kv: Send + Sync {
    /// The value of `key`, if any.
    fn get(&self, cf: &'static str, key: &[u8]) -> Result<Option<Vec<u8>>>;

    /// Calls `f` on each key in `[from, to)` (to the end without `to`) in byte order, until it
    /// returns [`Flow::Stop`].
    fn scan(&self, cf: &'static str, from: &[u8], to: Option<&[u8]>, f: &mut ScanFn<'_>) -> Result<()>;

    /// [`Kv::scan`] for a bulk read (a streamed list): what it reads is not kept in the
    /// backend's cache of recently read data (RocksDB's block cache), so that one long read
    /// neither grows the process by the cache's size nor evicts what other reads keep using.
    fn scan_bulk(&self, cf: &'static str, from: &[u8], to: Option<&[u8]>, f: &mut ScanFn<'_>) -> Result<()> {
        self.scan(cf, from, to, f)
    }

    /// Applies the batch atomically; with `sync` it is durable (the log fsynced) on return.
    fn write(&self, batch: Batch, sync: bool) -> Result<()>;

    /// The revision persisted by the last batch that carried one (0 for a new store).
    fn revision(&self) -> Result<u64>;

    /// The first key and value of each range `[from, to)`, if any: what one scan stopping at
    /// its first key gives, for many ranges at once (a backend across a network sends them
    /// together).
    fn first_many(&self, cf: &'static str, ranges: &[(Vec<u8>, Vec<u8>)]) -> Result<Vec<Option<Entry>>> {
        ranges
            .iter()
            .map(|(from, to)| {
                let mut out = None;
                self.scan(cf, from, Some(to), &mut |k, v| {
                    out = Some((k.to_vec(), v.to_vec()));
                    Ok(Flow::Stop)
                })?;
                Ok(out)
            })
            .collect()
    }

    /// Applies a batch that takes the store from revision `base` to `batch.revision`, unless
    /// another writer moved the store's revision first or a guard's range holds a key (both
    /// [`Committed::Raced`]). A backend with one writer (RocksDB:
    /// the committer is the only one) has no race.
    fn commit(&self, batch: Batch, _base: u64, sync: bool) -> Result<Committed> {
        self.write(batch, sync).map(|()| Committed::Yes)
    }

    /// Writes `value` under `key` unless the key exists; `false` when it does. With one
    /// writer the caller's lock makes the check and the write one step.
    fn put_new(&self, cf: &'static str, key: &[u8], value: Vec<u8>) -> Result<bool> {
        if self.get(cf, key)?.is_some() {
            return Ok(false);
        }
        let mut b = Batch::default();
        b.put(cf, key.to_vec(), value);
        self.write(b, true).map(|()| true)
    }

    /// Whether other processes write to this store too (several servers on one etcd): then
    /// the store follows their commits ([`Kv::wait_changed`]) and elects who runs its background
    /// work ([`Kv::lead`]).
    fn shared(&self) -> bool {
        false
    }

    /// Waits up to `timeout` for other processes to move the revision, the compacted revision
    /// or the types, and says which may have moved (everything after a wait with no signal:
    /// a poll). Only called on shared stores.
    fn wait_changed(&self, timeout: std::time::Duration) -> Changed {
        std::thread::sleep(timeout);
        Changed { bits: Changed::ALL, revision: None }
    }

    /// Removes what the backend itself left behind and no reader needs any more, up to the
    /// compacted revision `compacted` (run by the elected compaction runner).
    fn collect_garbage(&self, _compacted: u64) -> Result<()> {
        Ok(())
    }

    /// Writes what is held in memory to the backend's files, so that the next open has no log
    /// to replay (called when the store closes).
    fn flush(&self) -> Result<()> {
        Ok(())
    }

    /// Whether this process runs the background task `task` now (compaction, history
    /// retention) among the processes sharing the store; held for about `term`, renewed by
    /// asking again.
    fn lead(&self, _task: &str, _term: std::time::Duration) -> Result<bool> {
        Ok(true)
    }
}
