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

use super::keys::{CF_CHANGES, CF_HISTORY, CF_META, CF_OBJECTS, CF_OWNERS, CF_TYPES, META_COMPACTED, META_REVISION};
use super::kv::{Batch, Committed, Flow, Kv, Op, ScanFn};
use crate::{Error, Result};
use etcd_client::{Client, Compare, CompareOp, ConnectOptions, DeleteOptions, GetOptions, KvClient, Txn, TxnOp, WatchOptions};
use parking_lot::Mutex;
use std::future::Future;
use std::time::{Duration, Instant};

/// Operations per transaction, below etcd's default `--max-txn-ops` (128) with room for the
/// revision key, the commit id and the guard.
const TXN_OPS: usize = 120;
/// Bytes of keys and values per transaction, below etcd's default `--max-request-bytes`
/// (1.5 MiB) with room for framing.
const TXN_BYTES: usize = 1 << 20;
/// How long a commit whose outcome is unknown keeps being re-sent before it answers 504.
const COMMIT_PATIENCE: Duration = Duration::from_secs(60);
/// The timeout of one etcd request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest etcd response accepted (a page of large records).
const MAX_RESPONSE_BYTES: usize = 256 << 20;

/// The store on an etcd cluster.
pub(crate) struct Etcd {
    rt: tokio::runtime::Runtime,
    kv: KvClient,
    client: Client,
    prefix: Vec<u8>,
    /// This process's name in leader elections.
    me: String,
    /// The revision key's value as this process last wrote or read it.
    head: Mutex<Option<Vec<u8>>>,
    changed: Mutex<Option<flume::Receiver<()>>>,
}

/// The revision key's value: `revision ‖ commit id`, and while a staged commit is being
/// applied also `‖ base revision ‖ chunk count` of its intent.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Head {
    revision: u64,
    id: [u8; 16],
    pending: Option<(u64, u32)>,
}

impl Head {
    fn encode(&self) -> Vec<u8> {
        let mut v = self.revision.to_be_bytes().to_vec();
        v.extend_from_slice(&self.id);
        if let Some((base, chunks)) = self.pending {
            v.extend_from_slice(&base.to_be_bytes());
            v.extend_from_slice(&chunks.to_be_bytes());
        }
        v
    }

    fn decode(v: &[u8]) -> Result<Head> {
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

fn etcd_err(e: &etcd_client::Error) -> Error {
    let timeout = match e {
        etcd_client::Error::GRpcStatus(s) => {
            matches!(s.code(), tonic::Code::DeadlineExceeded | tonic::Code::Unavailable | tonic::Code::Cancelled | tonic::Code::Unknown)
        }
        etcd_client::Error::TransportError(_) | etcd_client::Error::IoError(_) => true,
        _ => false,
    };
    Error::Etcd { message: e.to_string(), timeout }
}

/// Whether a request may have failed only because etcd was briefly unreachable (a leader
/// change, a member restarting): worth sending again.
fn transient(e: &Error) -> bool {
    matches!(e, Error::Etcd { timeout: true, .. })
}

fn family(cf: &str) -> u8 {
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

/// A batch's operations as bytes (an intent): per operation a tag (`P`ut, `D`elete, `R`ange
/// delete), the family letter and two length-prefixed byte strings.
fn encode_ops(ops: &[Op]) -> Vec<u8> {
    fn bytes(out: &mut Vec<u8>, b: &[u8]) {
        out.extend_from_slice(&u32::try_from(b.len()).unwrap_or(u32::MAX).to_be_bytes());
        out.extend_from_slice(b);
    }
    let mut out = Vec::new();
    for op in ops {
        let (tag, cf, a, b): (u8, &str, &[u8], &[u8]) = match op {
            Op::Put { cf, key, value } => (b'P', cf, key, value),
            Op::Delete { cf, key } => (b'D', cf, key, &[]),
            Op::DeleteRange { cf, from, to } => (b'R', cf, from, to),
        };
        out.push(tag);
        out.push(family(cf));
        bytes(&mut out, a);
        bytes(&mut out, b);
    }
    out
}

/// An intent's operations: `(tag, family letter, key or from, value or to)`.
fn decode_ops(mut data: &[u8]) -> Result<Vec<(u8, u8, Vec<u8>, Vec<u8>)>> {
    fn take<'a>(data: &mut &'a [u8], n: usize) -> Result<&'a [u8]> {
        if data.len() < n {
            return Err(Error::Corrupt("etcd commit intent: truncated".into()));
        }
        let (a, b) = data.split_at(n);
        *data = b;
        Ok(a)
    }
    fn bytes(data: &mut &[u8]) -> Result<Vec<u8>> {
        let n = u32::from_be_bytes(take(data, 4)?.try_into().map_err(|_| Error::Corrupt("etcd commit intent".into()))?);
        Ok(take(data, n as usize)?.to_vec())
    }
    let mut out = Vec::new();
    while !data.is_empty() {
        let head = take(&mut data, 2)?;
        let (tag, letter) = (head[0], head[1]);
        let a = bytes(&mut data)?;
        let b = bytes(&mut data)?;
        out.push((tag, letter, a, b));
    }
    Ok(out)
}

/// The first key after every key that starts with `p`.
fn prefix_end(p: &[u8]) -> Vec<u8> {
    let mut end = p.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
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
        let client = rt.block_on(async move { Client::connect(eps, Some(options)).await }).map_err(|e| etcd_err(&e))?;
        let kv = client.kv_client().max_decoding_message_size(MAX_RESPONSE_BYTES);
        let mut prefix = prefix.trim_end_matches('/').as_bytes().to_vec();
        prefix.push(b'/');
        let etcd = Etcd {
            rt,
            kv,
            client,
            prefix,
            me: uuid::Uuid::new_v4().to_string(),
            head: Mutex::new(None),
            changed: Mutex::new(None),
        };
        // Fails early, naming the endpoints, when none answers.
        etcd.read(&etcd.key(CF_META, META_REVISION)).map_err(|e| Error::Etcd {
            message: format!("cannot reach etcd at {}: {e}", endpoints.join(",")),
            timeout: true,
        })?;
        let rx = etcd.watch_changes()?;
        *etcd.changed.lock() = Some(rx);
        Ok(etcd)
    }

    /// Runs `f` on the client runtime and waits for it here.
    fn run<T: Send + 'static>(&self, f: impl Future<Output = T> + Send + 'static) -> T {
        let (tx, rx) = flume::bounded(1);
        self.rt.spawn(async move {
            let _ = tx.send(f.await);
        });
        // The runtime lives as long as `self`, and the task always sends.
        rx.recv().unwrap_or_else(|_| unreachable!("the etcd client runtime dropped a request"))
    }

    fn key(&self, cf: &str, key: &[u8]) -> Vec<u8> {
        let mut k = Vec::with_capacity(self.prefix.len() + 2 + key.len());
        k.extend_from_slice(&self.prefix);
        k.push(family(cf));
        k.push(b'/');
        k.extend_from_slice(key);
        k
    }

    fn family_prefix(&self, letter: u8) -> Vec<u8> {
        let mut k = self.prefix.clone();
        k.push(letter);
        k.push(b'/');
        k
    }

    fn internal(&self, what: &str) -> Vec<u8> {
        let mut k = self.family_prefix(b'x');
        k.extend_from_slice(what.as_bytes());
        k
    }

    fn commit_key(&self, revision: u64) -> Vec<u8> {
        let mut k = self.internal("commit/");
        k.extend_from_slice(&revision.to_be_bytes());
        k
    }

    fn intent_prefix(&self, base: u64, id: &[u8; 16]) -> Vec<u8> {
        let mut k = self.internal("intent/");
        k.extend_from_slice(&base.to_be_bytes());
        k.extend_from_slice(id);
        k
    }

    fn read(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut kv = self.kv.clone();
        let key = key.to_vec();
        let mut resp = self.run(async move { kv.get(key, None).await }).map_err(|e| etcd_err(&e))?;
        Ok(resp.take_kvs().into_iter().next().map(|kv| kv.into_key_value().1))
    }

    /// Reads `key`, re-sending while etcd is briefly unreachable.
    fn read_patiently(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.patiently(|| self.read(key))
    }

    fn patiently<T>(&self, mut f: impl FnMut() -> Result<T>) -> Result<T> {
        let deadline = Instant::now() + COMMIT_PATIENCE;
        let mut pause = Duration::from_millis(20);
        loop {
            match f() {
                Err(e) if transient(&e) && Instant::now() < deadline => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(500));
                }
                other => return other,
            }
        }
    }

    fn txn(&self, txn: Txn) -> Result<bool> {
        let mut kv = self.kv.clone();
        let resp = self.run(async move { kv.txn(txn).await }).map_err(|e| etcd_err(&e))?;
        Ok(resp.succeeded())
    }

    fn txn_op(&self, op: &Op) -> TxnOp {
        match op {
            Op::Put { cf, key, value } => TxnOp::put(self.key(cf, key), value.clone(), None),
            Op::Delete { cf, key } => TxnOp::delete(self.key(cf, key), None),
            Op::DeleteRange { cf, from, to } => TxnOp::delete(self.key(cf, from), Some(DeleteOptions::new().with_range(self.key(cf, to)))),
        }
    }

    fn decoded_op(&self, (tag, letter, a, b): (u8, u8, Vec<u8>, Vec<u8>)) -> Result<TxnOp> {
        let key = |k: &[u8]| {
            let mut full = self.family_prefix(letter);
            full.extend_from_slice(k);
            full
        };
        Ok(match tag {
            b'P' => TxnOp::put(key(&a), b, None),
            b'D' => TxnOp::delete(key(&a), None),
            b'R' => TxnOp::delete(key(&a), Some(DeleteOptions::new().with_range(key(&b)))),
            _ => return Err(Error::Corrupt(format!("etcd commit intent: operation {tag}"))),
        })
    }

    /// The compare that the revision key still holds `value` (absent for a new store).
    fn head_is(&self, value: Option<&[u8]>) -> Compare {
        let key = self.key(CF_META, META_REVISION);
        match value {
            Some(v) => Compare::value(key, CompareOp::Equal, v.to_vec()),
            None => Compare::version(key, CompareOp::Equal, 0),
        }
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

    /// Sends the commit transaction `build()` until etcd answers; an unknown outcome (timeout)
    /// is resolved by re-sending: a failed compare after a lost answer is our own earlier try
    /// when the commit key of `revision` holds our id.
    fn commit_txn(&self, build: impl Fn() -> Txn, revision: u64, id: &[u8; 16]) -> Result<Committed> {
        let mut unsure = false;
        let deadline = Instant::now() + COMMIT_PATIENCE;
        let mut pause = Duration::from_millis(20);
        loop {
            match self.txn(build()) {
                Ok(true) => return Ok(Committed::Yes),
                Ok(false) if !unsure => return Ok(Committed::Raced),
                Ok(false) => {
                    let mine = self.read_patiently(&self.commit_key(revision))?.is_some_and(|v| v == id);
                    return Ok(if mine { Committed::Yes } else { Committed::Raced });
                }
                Err(e) if transient(&e) && Instant::now() < deadline => {
                    unsure = true;
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(500));
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Applies a pending (staged) commit whose revision key holds `pending`: its operations
    /// in transactions guarded by that value, then marks the revision applied. Any process
    /// may do it, at the same time as others: each step is guarded and idempotent.
    fn finish(&self, pending: &[u8]) -> Result<()> {
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
        let mut group = Vec::new();
        let mut bytes = 0;
        let guard = || self.head_is(Some(pending));
        for op in decode_ops(&data)? {
            bytes += op.2.len() + op.3.len() + 64;
            group.push(self.decoded_op(op)?);
            if group.len() >= TXN_OPS || bytes >= TXN_BYTES {
                let ops = std::mem::take(&mut group);
                bytes = 0;
                if !self.patiently(|| self.txn(Txn::new().when([guard()]).and_then(ops.clone())))? {
                    return Ok(());
                }
            }
        }
        let applied = Head { revision: head.revision, id: head.id, pending: None }.encode();
        group.push(TxnOp::put(self.key(CF_META, META_REVISION), applied.clone(), None));
        group.push(TxnOp::delete(intent.clone(), Some(DeleteOptions::new().with_range(prefix_end(&intent)))));
        if self.patiently(|| self.txn(Txn::new().when([guard()]).and_then(group.clone())))? {
            *self.head.lock() = Some(applied);
        }
        Ok(())
    }

    /// Watches the revision key, the compacted revision and the types: one signal per change
    /// (coalesced), and one when the watch had to be made again (the store then re-reads).
    fn watch_changes(&self) -> Result<flume::Receiver<()>> {
        let (tx, rx) = flume::bounded(1);
        let client = self.client.clone();
        let ranges = [
            (self.key(CF_META, META_REVISION), None),
            (self.key(CF_META, META_COMPACTED), None),
            (self.family_prefix(b't'), Some(prefix_end(&self.family_prefix(b't')))),
        ];
        for (key, end) in ranges {
            let (tx, mut client) = (tx.clone(), client.clone());
            self.rt.spawn(async move {
                loop {
                    let options = end.clone().map(|e| WatchOptions::new().with_range(e));
                    if let Ok((_watcher, mut stream)) = client.watch(key.clone(), options).await {
                        let _ = tx.try_send(());
                        while let Ok(Some(_)) = stream.message().await {
                            if tx.try_send(()).is_err() && tx.is_disconnected() {
                                return;
                            }
                        }
                    }
                    if tx.is_disconnected() {
                        return;
                    }
                    let _ = tx.try_send(());
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            });
        }
        Ok(rx)
    }
}

impl Kv for Etcd {
    fn get(&self, cf: &'static str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.read_patiently(&self.key(cf, key))
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
                if f(&kv.key()[skip..], kv.value())? == Flow::Stop {
                    return Ok(());
                }
            }
            if !more {
                return Ok(());
            }
            start = last;
            start.push(0);
            limit = (limit * 4).min(256);
        }
    }

    fn write(&self, batch: Batch, _sync: bool) -> Result<()> {
        if batch.revision.is_some() {
            return Err(Error::Corrupt("an etcd store moves its revision only by commit".into()));
        }
        // Writes that do not move the revision (types, the compacted revision, cleanup):
        // atomic up to one transaction's size, which all but cleanup's are.
        for chunk in batch.ops.chunks(TXN_OPS) {
            let ops: Vec<TxnOp> = chunk.iter().map(|op| self.txn_op(op)).collect();
            self.patiently(|| self.txn(Txn::new().and_then(ops.clone())))?;
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
        let bytes: usize = batch
            .ops
            .iter()
            .map(|op| match op {
                Op::Put { key, value, .. } => key.len() + value.len() + 64,
                Op::Delete { key, .. } => key.len() + 64,
                Op::DeleteRange { from, to, .. } => from.len() + to.len() + 64,
            })
            .sum();
        let commit_key = self.commit_key(revision);
        let rev_key = self.key(CF_META, META_REVISION);
        if batch.ops.len() <= TXN_OPS && bytes <= TXN_BYTES {
            let applied = Head { revision, id, pending: None }.encode();
            let mut ops: Vec<TxnOp> = batch.ops.iter().map(|op| self.txn_op(op)).collect();
            ops.push(TxnOp::put(rev_key, applied.clone(), None));
            ops.push(TxnOp::put(commit_key, id.to_vec(), None));
            let outcome = self.commit_txn(|| Txn::new().when([self.head_is(base_value.as_deref())]).and_then(ops.clone()), revision, &id)?;
            if outcome == Committed::Yes {
                *self.head.lock() = Some(applied);
            }
            return Ok(outcome);
        }
        // Staged: the intent, then the small transaction that makes it the next revision.
        let data = encode_ops(&batch.ops);
        let intent = self.intent_prefix(base, &id);
        let chunks: Vec<&[u8]> = data.chunks(TXN_BYTES).collect();
        for (i, chunk) in chunks.iter().enumerate() {
            let mut k = intent.clone();
            k.extend_from_slice(&u32::try_from(i).unwrap_or(u32::MAX).to_be_bytes());
            let op = TxnOp::put(k, chunk.to_vec(), None);
            self.patiently(|| self.txn(Txn::new().and_then([op.clone()])))?;
        }
        let count = u32::try_from(chunks.len()).map_err(|_| Error::TooLarge { size: data.len(), limit: TXN_BYTES * 1000 })?;
        let pending = Head { revision, id, pending: Some((base, count)) }.encode();
        let ops = [TxnOp::put(rev_key, pending.clone(), None), TxnOp::put(commit_key, id.to_vec(), None)];
        let outcome = self.commit_txn(|| Txn::new().when([self.head_is(base_value.as_deref())]).and_then(ops.clone()), revision, &id)?;
        if outcome == Committed::Raced {
            let clear = TxnOp::delete(intent.clone(), Some(DeleteOptions::new().with_range(prefix_end(&intent))));
            let _ = self.txn(Txn::new().and_then([clear]));
            return Ok(Committed::Raced);
        }
        self.finish(&pending)?;
        // Finished here or by another process: the revision key has moved past pending.
        Ok(Committed::Yes)
    }

    fn put_new(&self, cf: &'static str, key: &[u8], value: Vec<u8>) -> Result<bool> {
        let k = self.key(cf, key);
        let txn = Txn::new().when([Compare::version(k.clone(), CompareOp::Equal, 0)]).and_then([TxnOp::put(k, value, None)]);
        self.patiently(|| self.txn(txn.clone()))
    }

    fn shared(&self) -> bool {
        true
    }

    fn changed(&self) -> Option<flume::Receiver<()>> {
        self.changed.lock().clone()
    }

    fn lead(&self, task: &str, term: Duration) -> Result<bool> {
        // A compare-and-swap on `x/lead/<task>` = holder ‖ " " ‖ expiry (unix millis): taken
        // when free or expired, renewed by its holder. Clocks of the servers are assumed to
        // agree within a term.
        let key = self.internal(&format!("lead/{task}"));
        let now = u64::try_from(super::core::now_unix().as_millis()).unwrap_or(u64::MAX);
        let current = self.read_patiently(&key)?;
        if let Some(v) = &current {
            let text = String::from_utf8_lossy(v);
            let (holder, until) = text.split_once(' ').unwrap_or(("", "0"));
            if holder != self.me && until.parse::<u64>().unwrap_or(0) > now {
                return Ok(false);
            }
        }
        let mine = format!("{} {}", self.me, now + u64::try_from(term.as_millis()).unwrap_or(u64::MAX / 2));
        let guard = match current {
            Some(v) => Compare::value(key.clone(), CompareOp::Equal, v),
            None => Compare::version(key.clone(), CompareOp::Equal, 0),
        };
        self.patiently(|| self.txn(Txn::new().when([guard.clone()]).and_then([TxnOp::put(key.clone(), mine.clone(), None)])))
    }
}
