//! The etcd backend of [`Kv`]: the store's own keys (the same layouts as in RocksDB, see
//! `engine/STORAGE.md`, "etcd") in an etcd cluster, so that several servers share one store.
//!
//! - Keys: `prefix ‖ "/" ‖ family letter ‖ "/" ‖ key`.
//! - The store's revision lives in one key (`prefix/m/revision`); every commit is one etcd
//!   transaction that compares it with the value the committer read and, in the same
//!   transaction, moves it on. Two servers committing at once: one wins, the other re-reads
//!   (its writers retry). Revisions stay gap-free and linearizable across servers.
//! - A commit too large for one transaction (etcd's `--max-txn-ops` 128 and
//!   `--max-request-bytes` 1.5 MiB defaults) is staged: its operations are written as an
//!   *intent* in 1 MiB chunks, then one small transaction moves the revision key to
//!   "pending" (naming the intent), then the operations are applied in transactions each
//!   guarded by that pending value, and a last one marks the revision applied. Until then no
//!   reader sees the revision; any process that finds a pending revision finishes it (the
//!   intent is durable), so a server killed half-way loses nothing acknowledged and leaves
//!   nothing half-visible.
//! - Each commit carries a random id, also written under `prefix/x/commit/<revision>`: a
//!   transaction whose outcome is unknown (timeout, leader change) is re-sent as it is until
//!   etcd answers; a compare that then fails tells, from that key, whether the earlier try
//!   applied.
//!
//! The engine is synchronous; requests run on a private two-thread tokio runtime and the
//! caller waits on a channel (so a server's async task may call in, as it calls RocksDB).
//!
//! Its modules, each using only those before it: [`layout`] (where the keys are), [`requests`]
//! (a request, re-sent while etcd is unreachable), [`head`] (the revision key's value), [`ops`]
//! (operations as an intent's bytes), [`pieces`] (large values), [`txns`] (operations in
//! transactions within etcd's limits), [`resend`] (a commit of unknown outcome), [`intents`]
//! (staged commits), [`signals`] (watches that wake the follower), [`leader`] (elections).

mod head;
mod intents;
mod layout;
mod leader;
mod ops;
mod pieces;
mod requests;
mod resend;
mod signals;
mod txns;

#[cfg(test)]
mod tests;

use super::keys::{CF_META, META_REVISION};
use super::kv::{Batch, Changed, Committed, Entry, Flow, Kv, ScanFn};
use crate::{Error, Result};
use etcd_client::{Client, Compare, CompareOp, ConnectOptions, DeleteOptions, GetOptions, KvClient, Txn, TxnOp};
use head::Head;
use layout::{family, prefix_end};
use parking_lot::Mutex;
use pieces::PIECES_MAGIC;
use requests::etcd_err;
use signals::Signals;
use std::sync::Arc;
use std::time::Duration;
use txns::TXN_OPS;

/// The timeout of one etcd request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest etcd response accepted (a page of large records).
const MAX_RESPONSE_BYTES: usize = 512 << 20;

/// The store on an etcd cluster.
pub(crate) struct Etcd {
    /// The client's runtime (`None` only while dropping).
    rt: Option<tokio::runtime::Runtime>,
    kv: KvClient,
    client: Client,
    prefix: Vec<u8>,
    /// This process's name in leader elections.
    me: String,
    /// The revision key's value as this process last wrote or read it.
    head: Mutex<Option<Vec<u8>>>,
    signals: Arc<Signals>,
}

impl Etcd {
    /// Connects to the cluster at `endpoints` (`http://host:port`), keeping the store's keys
    /// under `prefix`.
    pub(crate) fn connect(endpoints: &[String], prefix: &str) -> Result<Etcd> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("fieldstore-etcd")
            .enable_all()
            .build()
            .map_err(|e| Error::Etcd { message: format!("cannot start the etcd client runtime: {e}"), timeout: false })?;
        let eps: Vec<String> = endpoints.to_vec();
        let options = ConnectOptions::new()
            .with_timeout(REQUEST_TIMEOUT)
            .with_connect_timeout(REQUEST_TIMEOUT)
            .with_keep_alive(Duration::from_secs(10), Duration::from_secs(5));
        // Waited for on a channel, not `block_on`: the caller may itself be a runtime's task.
        let (tx, rx) = flume::bounded(1);
        rt.spawn(async move {
            let _ = tx.send(Client::connect(eps, Some(options)).await);
        });
        let client = rx
            .recv()
            .map_err(|_| Error::Etcd { message: "the etcd client runtime stopped".into(), timeout: false })?
            .map_err(|e| etcd_err(&e))?;
        let kv = client.kv_client().max_decoding_message_size(MAX_RESPONSE_BYTES);
        let mut prefix = prefix.trim_end_matches('/').as_bytes().to_vec();
        prefix.push(b'/');
        let etcd = Etcd {
            rt: Some(rt),
            kv,
            client,
            prefix,
            me: uuid::Uuid::new_v4().to_string(),
            head: Mutex::new(None),
            signals: Arc::new(Signals::new()),
        };
        // Fails early, naming the endpoints, when none answers.
        etcd.read(&etcd.key(CF_META, META_REVISION))
            .map_err(|e| Error::Etcd { message: format!("cannot reach etcd at {}: {e}", endpoints.join(",")), timeout: true })?;
        etcd.watch_changes(&etcd.signals);
        Ok(etcd)
    }

    /// The revision key's value when the store is at `base` with nothing pending; `Err(())`
    /// (as `Ok(None)` of the outer option) when it has moved on.
    fn base_value(&self, base: u64) -> Result<Option<Option<Vec<u8>>>> {
        let cached = self.head.lock().clone();
        let current = match cached {
            Some(v) if Head::decode(&v)?.revision == base => Some(v),
            _ => self.read_patiently(&self.key(CF_META, META_REVISION))?,
        };
        match current {
            None if base == 0 => Ok(Some(None)),
            None => Ok(None),
            Some(v) => {
                let head = Head::decode(&v)?;
                if head.pending.is_some() {
                    self.finish(&v)?;
                    return Ok(None);
                }
                *self.head.lock() = Some(v.clone());
                Ok((head.revision == base).then_some(Some(v)))
            }
        }
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        self.signals.close();
        // Without waiting: the last store handle may be dropped on another runtime's thread,
        // where dropping a runtime (which waits for its tasks) is refused.
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

impl Kv for Etcd {
    fn get(&self, cf: &'static str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        match self.read_patiently(&self.key(cf, key))? {
            Some(v) => self.whole(cf, key, v).map(Some),
            None => Ok(None),
        }
    }

    fn scan(&self, cf: &'static str, from: &[u8], to: Option<&[u8]>, f: &mut ScanFn<'_>) -> Result<()> {
        let end = match to {
            Some(to) => self.key(cf, to),
            None => prefix_end(&self.family_prefix(family(cf))),
        };
        let skip = self.prefix.len() + 2;
        let mut start = self.key(cf, from);
        // Most scans stop at their first key (the newest version of an object): small pages
        // first, larger ones for long scans.
        let mut limit = 4i64;
        // Pages grow 4, 64, 1000 keys (a value is at most a piece, 256 KiB, in a response).
        loop {
            if start >= end {
                return Ok(());
            }
            let mut resp = self.patiently(|| {
                let (mut kv, s, e) = (self.kv.clone(), start.clone(), end.clone());
                self.run(async move { kv.get(s, Some(GetOptions::new().with_range(e).with_limit(limit))).await }).map_err(|e| etcd_err(&e))
            })?;
            let more = resp.more();
            let kvs = resp.take_kvs();
            let Some(last) = kvs.last().map(|kv| kv.key().to_vec()) else { return Ok(()) };
            for kv in &kvs {
                let key = &kv.key()[skip..];
                let flow = if kv.value().starts_with(PIECES_MAGIC) {
                    f(key, &self.whole(cf, key, kv.value().to_vec())?)?
                } else {
                    f(key, kv.value())?
                };
                if flow == Flow::Stop {
                    return Ok(());
                }
            }
            if !more {
                return Ok(());
            }
            start = last;
            start.push(0);
            limit = (limit * 16).min(1000);
        }
    }

    fn write(&self, batch: Batch, _sync: bool) -> Result<()> {
        if batch.revision.is_some() {
            return Err(Error::Corrupt("an etcd store moves its revision only by commit".into()));
        }
        // Writes that do not move the revision (types, the compacted revision, cleanup):
        // atomic up to one transaction's size, which all but cleanup's are.
        for ops in self.groups(&batch.ops) {
            if !ops.is_empty() {
                self.patiently(|| self.txn(Txn::new().and_then(ops.clone())))?;
            }
        }
        Ok(())
    }

    fn revision(&self) -> Result<u64> {
        let Some(v) = self.read_patiently(&self.key(CF_META, META_REVISION))? else { return Ok(0) };
        let head = Head::decode(&v)?;
        if head.pending.is_some() {
            self.finish(&v)?;
            return self.revision();
        }
        *self.head.lock() = Some(v);
        Ok(head.revision)
    }

    fn commit(&self, batch: Batch, base: u64, _sync: bool) -> Result<Committed> {
        let revision = batch.revision.ok_or_else(|| Error::Corrupt("a commit without a revision".into()))?;
        let Some(base_value) = self.base_value(base)? else { return Ok(Committed::Raced) };
        let id = *uuid::Uuid::new_v4().as_bytes();
        // The revision key as read, and each guard's range empty (a range compare of version
        // 0: true when no key is in the range).
        let mut compares = vec![self.head_is(base_value.as_deref())];
        for g in &batch.guards {
            compares.push(Compare::version(self.key(g.cf, &g.from), CompareOp::Equal, 0).with_range(self.key(g.cf, &g.to)));
        }
        let commit_key = self.commit_key(revision);
        let rev_key = self.key(CF_META, META_REVISION);
        // More operations than one transaction takes: staged, without expanding them here.
        let mut groups = if batch.ops.len() <= TXN_OPS { self.groups(&batch.ops) } else { Vec::new() };
        if groups.len() == 1 {
            let applied = Head { revision, id, pending: None }.encode();
            let mut ops = groups.pop().unwrap_or_default();
            ops.push(TxnOp::put(rev_key, applied.clone(), None));
            ops.push(TxnOp::put(commit_key, id.to_vec(), None));
            let outcome = self.commit_txn(|| Txn::new().when(compares.clone()).and_then(ops.clone()), revision, &id)?;
            if outcome == Committed::Yes {
                *self.head.lock() = Some(applied);
            }
            return Ok(outcome);
        }
        let Some(pending) = self.stage(&batch.ops, base, revision, &id, &compares)? else { return Ok(Committed::Raced) };
        self.finish(&pending)?;
        // Finished here or by another process: the revision key has moved past pending.
        Ok(Committed::Yes)
    }

    fn first_many(&self, cf: &'static str, ranges: &[(Vec<u8>, Vec<u8>)]) -> Result<Vec<Option<Entry>>> {
        let skip = self.prefix.len() + 2;
        let requests: Vec<(Vec<u8>, Vec<u8>)> = ranges.iter().map(|(f, t)| (self.key(cf, f), self.key(cf, t))).collect();
        let firsts = self.patiently(|| {
            let (tx, rx) = flume::bounded(requests.len());
            for (i, (from, to)) in requests.iter().cloned().enumerate() {
                let (mut kv, tx) = (self.kv.clone(), tx.clone());
                self.rt().spawn(async move {
                    let resp = kv.get(from, Some(GetOptions::new().with_range(to).with_limit(1))).await;
                    let _ = tx.send((i, resp));
                });
            }
            drop(tx);
            let mut out = vec![None; requests.len()];
            for (i, resp) in rx.iter() {
                let mut resp = resp.map_err(|e| etcd_err(&e))?;
                out[i] = resp.take_kvs().into_iter().next().map(|kv| kv.into_key_value());
            }
            Ok(out)
        })?;
        firsts
            .into_iter()
            .map(|first| match first {
                Some((k, v)) => {
                    let key = k.get(skip..).unwrap_or_default().to_vec();
                    let v = self.whole(cf, &key, v)?;
                    Ok(Some((key, v)))
                }
                None => Ok(None),
            })
            .collect()
    }

    fn put_new(&self, cf: &'static str, key: &[u8], value: Vec<u8>) -> Result<bool> {
        let k = self.key(cf, key);
        let txn = Txn::new().when([Compare::version(k.clone(), CompareOp::Equal, 0)]).and_then([TxnOp::put(k, value, None)]);
        self.patiently(|| self.txn(txn.clone()))
    }

    fn collect_garbage(&self, compacted: u64) -> Result<()> {
        // Intents staged on a base older than the applied revision can never commit (their
        // commit compares the revision key with that base): left by a server that died before
        // its commit transaction. A pending commit's intent has the applied revision as base.
        let Some(v) = self.read_patiently(&self.key(CF_META, META_REVISION))? else { return Ok(()) };
        let head = Head::decode(&v)?;
        let mut ops = Vec::new();
        if head.pending.is_none() {
            let from = self.internal("intent/");
            let mut to = from.clone();
            to.extend_from_slice(&head.revision.to_be_bytes());
            ops.push(TxnOp::delete(from, Some(DeleteOptions::new().with_range(to))));
        }
        // Commit ids are read back only for a commit in flight, long after compaction.
        let from = self.internal("commit/");
        let mut to = from.clone();
        to.extend_from_slice(&compacted.to_be_bytes());
        ops.push(TxnOp::delete(from, Some(DeleteOptions::new().with_range(to))));
        self.patiently(|| self.txn(Txn::new().and_then(ops.clone()))).map(|_| ())
    }

    fn shared(&self) -> bool {
        true
    }

    fn wait_changed(&self, timeout: Duration) -> Changed {
        self.signals.wait(timeout)
    }

    fn lead(&self, task: &str, term: Duration) -> Result<bool> {
        self.claim_lead(task, term)
    }
}
