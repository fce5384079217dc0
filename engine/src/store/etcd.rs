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

use super::keys::{self, CF_CHANGES, CF_HISTORY, CF_META, CF_OBJECTS, CF_OWNERS, CF_TYPES, META_COMPACTED, META_REVISION};
use super::kv::{Batch, Changed, Committed, Entry, Flow, Kv, Op, ScanFn};
use crate::{Error, Result};
use etcd_client::{Client, Compare, CompareOp, ConnectOptions, DeleteOptions, GetOptions, KvClient, Txn, TxnOp, WatchOptions};
use parking_lot::Mutex;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Operations per transaction, below etcd's default `--max-txn-ops` (128) with room for the
/// revision key, the commit id and the guard.
const TXN_OPS: usize = 120;
/// Bytes of keys and values per transaction, below etcd's default `--max-request-bytes`
/// (1.5 MiB) with room for framing.
const TXN_BYTES: usize = 1 << 20;
/// Values larger than this are kept in pieces of this size (etcd refuses a request over
/// `--max-request-bytes`, 1.5 MiB by default, and the largest object's record is that size).
const VALUE_PIECE: usize = 256 << 10;
/// The value of a key whose value is kept in pieces: this magic, then the length (u64) and the
/// piece count (u32); the pieces are under `x/piece/<family letter><key>/<index u32>`.
const PIECES_MAGIC: &[u8; 8] = b"\xffFSPIECE";
/// How long a commit whose outcome is unknown keeps being re-sent before it answers 504.
const COMMIT_PATIENCE: Duration = Duration::from_secs(60);
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

/// The column family of a family letter.
fn family_of(letter: u8) -> Result<&'static str> {
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

/// An intent's operations, as [`encode_ops`] wrote them.
fn decode_ops(mut data: &[u8]) -> Result<Vec<Op>> {
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
        let (tag, cf) = (head[0], family_of(head[1])?);
        let a = bytes(&mut data)?;
        let b = bytes(&mut data)?;
        out.push(match tag {
            b'P' => Op::Put { cf, key: a, value: b },
            b'D' => Op::Delete { cf, key: a },
            b'R' => Op::DeleteRange { cf, from: a, to: b },
            _ => return Err(Error::Corrupt(format!("etcd commit intent: operation {tag}"))),
        });
    }
    Ok(out)
}

/// The end of the etcd range of every key that starts with `p` ([`keys::prefix_end`]; etcd's
/// `"\0"` means "to the end of the keyspace").
fn prefix_end(p: &[u8]) -> Vec<u8> {
    keys::prefix_end(p).unwrap_or_else(|| vec![0])
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
            signals: Arc::new(Signals {
                bits: AtomicU8::new(0),
                revision: AtomicU64::new(0),
                wake: flume::bounded(1),
                closed: AtomicBool::new(false),
            }),
        };
        // Fails early, naming the endpoints, when none answers.
        etcd.read(&etcd.key(CF_META, META_REVISION))
            .map_err(|e| Error::Etcd { message: format!("cannot reach etcd at {}: {e}", endpoints.join(",")), timeout: true })?;
        etcd.watch_changes(&etcd.signals);
        Ok(etcd)
    }

    fn rt(&self) -> &tokio::runtime::Runtime {
        match &self.rt {
            Some(rt) => rt,
            None => unreachable!("the etcd client runtime is only taken when dropping"),
        }
    }

    /// Runs `f` on the client runtime and waits for it here.
    fn run<T: Send + 'static>(&self, f: impl Future<Output = T> + Send + 'static) -> T {
        let (tx, rx) = flume::bounded(1);
        self.rt().spawn(async move {
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

    /// The prefix of the pieces of `key`'s value.
    fn pieces_prefix(&self, cf: &str, key: &[u8]) -> Vec<u8> {
        let mut k = self.internal("piece/");
        k.push(family(cf));
        k.extend_from_slice(key);
        k.push(b'/');
        k
    }

    /// The etcd operations of a store operation, each with its size in a request: a large
    /// value becomes its pieces and the key's piece header; a delete also deletes pieces.
    fn expand(&self, op: &Op, out: &mut Vec<(TxnOp, usize)>) {
        match op {
            Op::Put { cf, key, value } if value.len() > VALUE_PIECE => {
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
    fn groups(&self, ops: &[Op]) -> Vec<Vec<TxnOp>> {
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

    /// A value as stored: its pieces joined when it was kept in pieces.
    fn whole(&self, cf: &str, key: &[u8], value: Vec<u8>) -> Result<Vec<u8>> {
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

    /// The first half of a staged commit: the intent, then the small transaction that makes it
    /// the next revision, pending. Its value, or `None` when another commit came first (the
    /// intent is then removed). [`Etcd::finish`] does the rest, here or in any process.
    fn stage(&self, ops: &[Op], base: u64, revision: u64, id: &[u8; 16], compares: &[Compare]) -> Result<Option<Vec<u8>>> {
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

    /// Sends the commit transaction `build()` until etcd answers; an unknown outcome (timeout)
    /// is resolved by re-sending: a failed compare after a lost answer is our own earlier try
    /// when the commit key of `revision` holds our id.
    fn commit_txn(&self, build: impl Fn() -> Txn, revision: u64, id: &[u8; 16]) -> Result<Committed> {
        self.resend_commit(build, revision, id, false)
    }

    /// [`Etcd::commit_txn`], `unsure` from the start when an earlier try went unanswered.
    fn resend_commit(&self, build: impl Fn() -> Txn, revision: u64, id: &[u8; 16], mut unsure: bool) -> Result<Committed> {
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

    /// Watches the revision key, the compacted revision and the types; each change sets its
    /// bit in `signals` (with the newest applied revision seen) and wakes the follower. A watch
    /// that breaks is made again, with every bit set (what happened meanwhile is unknown).
    fn watch_changes(&self, signals: &Arc<Signals>) {
        let ranges = [
            (self.key(CF_META, META_REVISION), None, Changed::REVISION),
            (self.key(CF_META, META_COMPACTED), None, Changed::COMPACTED),
            (self.family_prefix(b't'), Some(prefix_end(&self.family_prefix(b't'))), Changed::TYPES),
        ];
        for (key, end, bit) in ranges {
            let (signals, mut client) = (signals.clone(), self.client.clone());
            self.rt().spawn(async move {
                while !signals.closed.load(Ordering::SeqCst) {
                    let options = end.clone().map(|e| WatchOptions::new().with_range(e));
                    if let Ok((_watcher, mut stream)) = client.watch(key.clone(), options).await {
                        signals.raise(Changed::ALL, None);
                        while let Ok(Some(resp)) = stream.message().await {
                            let newest = resp
                                .events()
                                .iter()
                                .filter_map(|e| e.kv().and_then(|kv| Head::decode(kv.value()).ok()))
                                .filter(|h| h.pending.is_none())
                                .map(|h| h.revision)
                                .max();
                            signals.raise(bit, newest.filter(|_| bit == Changed::REVISION));
                            if signals.closed.load(Ordering::SeqCst) {
                                return;
                            }
                        }
                    }
                    signals.raise(Changed::ALL, None);
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            });
        }
    }
}

/// What the watches of [`Etcd::watch_changes`] saw since the follower last asked.
struct Signals {
    bits: AtomicU8,
    revision: AtomicU64,
    wake: (flume::Sender<()>, flume::Receiver<()>),
    /// Set when the store closes: the watch tasks end.
    closed: AtomicBool,
}

impl Signals {
    fn raise(&self, bits: u8, revision: Option<u64>) {
        if let Some(r) = revision {
            self.revision.fetch_max(r, Ordering::SeqCst);
        }
        self.bits.fetch_or(bits, Ordering::SeqCst);
        let _ = self.wake.0.try_send(());
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        self.signals.closed.store(true, Ordering::SeqCst);
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
        let _ = self.signals.wake.1.recv_timeout(timeout);
        let bits = self.signals.bits.swap(0, Ordering::SeqCst);
        if bits == 0 {
            // Nothing signalled within the timeout: look at everything (a poll).
            return Changed { bits: Changed::ALL, revision: None };
        }
        let revision = self.signals.revision.load(Ordering::SeqCst);
        Changed { bits, revision: (revision > 0).then_some(revision) }
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
        let mine = format!("{} {}", self.me, now.saturating_add(u64::try_from(term.as_millis()).unwrap_or(u64::MAX)));
        let guard = match current {
            Some(v) => Compare::value(key.clone(), CompareOp::Equal, v),
            None => Compare::version(key.clone(), CompareOp::Equal, 0),
        };
        self.patiently(|| self.txn(Txn::new().when([guard.clone()]).and_then([TxnOp::put(key.clone(), mine.clone(), None)])))
    }
}

/// The test etcd member (shared with the integration tests and benches).
#[cfg(test)]
#[path = "../../../tests/support/etcd_member.rs"]
mod etcd_test_member;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    use super::etcd_test_member::Member;

    /// A single etcd member for one test, stopped when dropped; `None` without an etcd binary.
    fn etcd() -> Option<(String, Member, tempfile::TempDir)> {
        let dir = tempfile::tempdir().unwrap();
        let member = Member::single(dir.path().join("etcd"), &[])?;
        Some((member.url(), member, dir))
    }

    /// A commit whose answer was lost (it applied, the committer does not know): sent again,
    /// its compare fails, and the commit id tells it was this commit — never reported as lost,
    /// never applied twice. Another commit's id at that revision is a lost race.
    #[test]
    fn a_commit_whose_answer_was_lost_resolves_by_its_id() {
        let Some((url, _member, _dir)) = etcd() else { return };
        let kv = Etcd::connect(&[url], "/unit").unwrap();
        let id = [7u8; 16];
        let mut batch = Batch::default();
        batch.put(CF_OBJECTS, b"k".to_vec(), b"v".to_vec());
        let ops = || {
            let mut ops: Vec<TxnOp> = kv.groups(&batch.ops).pop().unwrap();
            ops.push(TxnOp::put(kv.key(CF_META, META_REVISION), Head { revision: 1, id, pending: None }.encode(), None));
            ops.push(TxnOp::put(kv.commit_key(1), id.to_vec(), None));
            Txn::new().when([kv.head_is(None)]).and_then(ops)
        };
        // The first try applies; its answer is "lost".
        assert!(kv.txn(ops()).unwrap());
        assert_eq!(kv.resend_commit(ops, 1, &id, true).unwrap(), Committed::Yes);
        assert_eq!(kv.resend_commit(ops, 1, &[8u8; 16], true).unwrap(), Committed::Raced);
        // Without a lost answer, a failed compare is a race.
        assert_eq!(kv.resend_commit(ops, 1, &id, false).unwrap(), Committed::Raced);
        assert_eq!(kv.revision().unwrap(), 1);
        assert_eq!(kv.get(CF_OBJECTS, b"k").unwrap(), Some(b"v".to_vec()));
        // An intent staged on base 0 by a server that died before committing: garbage now
        // that the store is at 1; one staged on base 1 (a commit in progress) is kept. Commit
        // ids go with compaction.
        let (dead, live) = (kv.intent_prefix(0, &[9u8; 16]), kv.intent_prefix(1, &[9u8; 16]));
        for k in [&dead, &live] {
            assert!(kv.txn(Txn::new().and_then([TxnOp::put(k.clone(), b"chunk".to_vec(), None)])).unwrap());
        }
        kv.collect_garbage(0).unwrap();
        assert_eq!(kv.read(&dead).unwrap(), None);
        assert_eq!(kv.read(&live).unwrap(), Some(b"chunk".to_vec()));
        assert_eq!(kv.read(&kv.commit_key(1)).unwrap(), Some(id.to_vec()));
        kv.collect_garbage(2).unwrap();
        assert_eq!(kv.read(&kv.commit_key(1)).unwrap(), None);
        // Guards: a commit applies only when each guard's range holds no key.
        let guarded = |revision: u64, from: &[u8], to: &[u8]| {
            let mut b = Batch { revision: Some(revision), ..Batch::default() };
            b.put(CF_OBJECTS, format!("g{revision}").into_bytes(), b"v".to_vec());
            b.guards.push(super::super::kv::Guard { cf: CF_OBJECTS, from: from.to_vec(), to: to.to_vec() });
            kv.commit(b, revision - 1, true).unwrap()
        };
        assert_eq!(guarded(2, b"j", b"ka"), Committed::Raced, "k is in [j, ka)");
        assert_eq!(kv.revision().unwrap(), 1);
        assert_eq!(guarded(2, b"ka", b"kz"), Committed::Yes, "[ka, kz) is empty");
        assert_eq!(kv.revision().unwrap(), 2);
    }

    /// A server killed between a staged commit's transaction and the application of its
    /// operations: nothing of it is visible, no other commit can slip in, and the next
    /// process that reads the revision finishes it from the intent, whole.
    #[test]
    fn a_staged_commit_left_half_done_is_finished_by_the_next_reader() {
        let Some((url, _member, _dir)) = etcd() else { return };
        let first = Etcd::connect(std::slice::from_ref(&url), "/staged").unwrap();
        let mut batch = Batch { revision: Some(1), ..Batch::default() };
        for i in 0..300u32 {
            batch.put(CF_OBJECTS, format!("obj-{i:03}").into_bytes(), vec![b'a' + (i % 26) as u8; 8 << 10]);
        }
        batch.put(CF_HISTORY, b"big".to_vec(), vec![b'h'; 700 << 10]);
        assert!(first.groups(&batch.ops).len() > 1, "larger than one transaction");
        let id = [3u8; 16];
        let compares = [first.head_is(None)];
        // The commit transaction went through; the process "dies" before finishing.
        assert!(first.stage(&batch.ops, 0, 1, &id, &compares).unwrap().is_some());
        drop(first);
        let raw = Etcd::connect(std::slice::from_ref(&url), "/staged").unwrap();
        assert_eq!(raw.read(&raw.key(CF_OBJECTS, b"obj-000")).unwrap(), None, "nothing visible yet");
        // Another commit on the old base loses.
        let mut other = Batch { revision: Some(1), ..Batch::default() };
        other.put(CF_OBJECTS, b"other".to_vec(), b"x".to_vec());
        // (`commit` first finishes the pending revision it finds, then reports the race.)
        assert_eq!(raw.commit(other, 0, true).unwrap(), Committed::Raced);
        assert_eq!(raw.revision().unwrap(), 1);
        for i in [0u32, 150, 299] {
            let v = raw.get(CF_OBJECTS, format!("obj-{i:03}").as_bytes()).unwrap().unwrap();
            assert_eq!(v, vec![b'a' + (i % 26) as u8; 8 << 10]);
        }
        assert_eq!(raw.get(CF_HISTORY, b"big").unwrap().unwrap().len(), 700 << 10);
        assert_eq!(raw.get(CF_OBJECTS, b"other").unwrap(), None);
        let intent = raw.intent_prefix(0, &id);
        let left = raw.run({
            let mut kv = raw.kv.clone();
            let (from, to) = (intent.clone(), prefix_end(&intent));
            async move { kv.get(from, Some(GetOptions::new().with_range(to).with_count_only())).await }
        });
        assert_eq!(left.unwrap().count(), 0, "the intent is removed");
    }
}
