//! etcd writes on the committer thread: a group of jobs (transactions, lease grants and
//! revocations) evaluated in order against the latest versions — the database, with the
//! group's earlier writes laid over it — and written in one synced batch. A job that writes
//! takes the next revision for all its writes (etcd's one revision per transaction).

use super::super::core::{now_unix, Core};
use super::super::etcd_state::{KeyEvent, Lease};
use super::super::keys::{self, Change, EventType, CF_CHANGES};
use super::super::kv::Batch;
use super::super::recent::Recent;
use super::layout::{change_prefix, escape, lease_key, version_key, Touch, Version, CF_ETCD, CF_LEASES};
use super::objects::Mirror;
use super::read::{self, key_value, Overlay};
use super::{
    Compare, CompareResult, CompareTarget, DeleteRequest, DeleteResponse, EtcdApiError, KeyValue, PutRequest, PutResponse, RequestOp,
    ResponseOp, TxnRequest, TxnResponse,
};
use crate::{Error, Result};
use flume::Sender;
use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// etcd's largest lease TTL, in seconds.
pub(crate) const MAX_LEASE_TTL: i64 = 9_000_000_000;
/// etcd's smallest lease TTL with its default election timeout (1 s) and heartbeat (100 ms):
/// ⌈3/2 × election ticks × heartbeat⌉ seconds.
pub(crate) const MIN_LEASE_TTL: i64 = 2;

/// What the committer is asked to do.
pub(crate) enum Request {
    /// A transaction.
    Txn(TxnRequest),
    /// Grant a lease (id 0: pick one).
    Grant { id: i64, ttl: i64 },
    /// Revoke a lease, deleting its keys.
    Revoke { id: i64 },
    /// Give a new store (revision 0) its first revision, without a key.
    Start,
}

/// What it answers.
pub(crate) enum Answer {
    Txn(TxnResponse),
    Granted { id: i64, ttl: i64 },
    Revoked,
    Started,
}

/// A job for the committer, and where it answers (with the header revision).
pub(crate) struct Job {
    pub request: Request,
    pub reply: Sender<Result<(Answer, u64)>>,
}

fn refused(e: EtcdApiError) -> Error {
    Error::EtcdApi(e)
}

/// etcd's checks of a transaction before it is applied: keys present, at most `max_ops`
/// operations per branch, no key put twice in a branch, `ignore_*` flags consistent.
pub(crate) fn check(req: &TxnRequest, max_ops: usize) -> Result<()> {
    if req.compare.len().max(req.success.len()).max(req.failure.len()) > max_ops {
        return Err(refused(EtcdApiError::TooManyOps));
    }
    if req.compare.iter().any(|c| c.key.is_empty()) {
        return Err(refused(EtcdApiError::EmptyKey));
    }
    for branch in [&req.success, &req.failure] {
        let mut puts = HashSet::new();
        for op in branch {
            match op {
                RequestOp::Range(r) if r.key.is_empty() => return Err(refused(EtcdApiError::EmptyKey)),
                RequestOp::Delete(d) if d.key.is_empty() => return Err(refused(EtcdApiError::EmptyKey)),
                RequestOp::Put(p) => {
                    if p.key.is_empty() {
                        return Err(refused(EtcdApiError::EmptyKey));
                    }
                    if p.ignore_value && !p.value.is_empty() {
                        return Err(refused(EtcdApiError::ValueProvided));
                    }
                    if p.ignore_lease && p.lease != 0 {
                        return Err(refused(EtcdApiError::LeaseProvided));
                    }
                    if !puts.insert(p.key.as_slice()) {
                        return Err(refused(EtcdApiError::DuplicateKey));
                    }
                }
                RequestOp::Txn(t) => check(t, max_ops)?,
                _ => {}
            }
        }
    }
    Ok(())
}

/// An overlay entry as it was before a write: the escaped key and its previous entry.
type Undo = (Vec<u8>, Option<(u64, Version)>);

/// One job's evaluation: its writes go into the group's overlay (undone if it fails).
struct Tx<'a> {
    core: &'a Core,
    overlay: &'a mut Overlay,
    /// What the overlay held before each write (escaped key → previous entry).
    undo: Vec<Undo>,
    /// The revision its writes take.
    rev: u64,
    touched: Vec<super::layout::Touched>,
    events: Vec<KeyEvent>,
    /// Lease moves: (key, from, to).
    moves: Vec<(Vec<u8>, i64, i64)>,
    /// Lease ids that exist for this job (the table, as the group changed it).
    meta: Batch,
}

impl Tx<'_> {
    fn write(&mut self, key: &[u8], escaped: Vec<u8>, v: Version, event: KeyEvent) {
        let old = self.overlay.insert(escaped.clone(), (self.rev, v));
        self.undo.push((escaped.clone(), old));
        self.touched.push((if event.deleted { Touch::Delete } else { Touch::Put }, escaped));
        let from = event.prev.as_ref().map_or(0, |p| p.lease);
        let to = if event.deleted { 0 } else { event.kv.lease };
        self.moves.push((key.to_vec(), from, to));
        self.events.push(event);
    }

    fn rollback(&mut self) {
        while let Some((k, old)) = self.undo.pop() {
            match old {
                Some(o) => self.overlay.insert(k, o),
                None => self.overlay.remove(&k),
            };
        }
    }

    fn lease_exists(&self, id: i64) -> bool {
        self.core.etcd.leases.lock().map.contains_key(&id)
    }

    fn txn(&mut self, req: &TxnRequest) -> Result<TxnResponse> {
        let mut succeeded = true;
        for c in &req.compare {
            if !self.compare(c)? {
                succeeded = false;
                break;
            }
        }
        let branch = if succeeded { &req.success } else { &req.failure };
        let mut responses = Vec::with_capacity(branch.len());
        for op in branch {
            responses.push(match op {
                RequestOp::Range(r) => ResponseOp::Range(self.range(r)?),
                RequestOp::Put(p) => ResponseOp::Put(self.put(p)?),
                RequestOp::Delete(d) => ResponseOp::Delete(self.delete(d)?),
                RequestOp::Txn(t) => ResponseOp::Txn(self.txn(t)?),
            });
        }
        Ok(TxnResponse { succeeded, responses })
    }

    fn compare(&self, c: &Compare) -> Result<bool> {
        let kvs: Vec<KeyValue> = if c.range_end.is_empty() {
            read::latest(self.core, self.overlay, &escape(&c.key))?.map(|(r, v)| key_value(c.key.clone(), r, v)).into_iter().collect()
        } else {
            read::live_keys(self.core, self.overlay, &c.key, &c.range_end, u64::MAX)?
                .into_iter()
                .map(|(e, r, v)| Ok(key_value(super::layout::unescape(&e)?.0, r, v)))
                .collect::<Result<_>>()?
        };
        if kvs.is_empty() {
            return Ok(!matches!(c.target, CompareTarget::Value(_)) && holds(c, &KeyValue::default()));
        }
        Ok(kvs.iter().all(|kv| holds(c, kv)))
    }

    fn range(&self, r: &super::RangeRequest) -> Result<super::RangeResponse> {
        let current = self.core.visible.load(Ordering::SeqCst);
        match u64::try_from(r.revision).unwrap_or(0) {
            0 => read::range(self.core, r, u64::MAX, self.overlay),
            at if at > current => Err(refused(EtcdApiError::FutureRevision)),
            at if at < self.core.compacted.load(Ordering::SeqCst) => Err(refused(EtcdApiError::Compacted)),
            at => read::range(self.core, r, at, &Overlay::new()),
        }
    }

    fn put(&mut self, p: &PutRequest) -> Result<PutResponse> {
        let escaped = escape(&p.key);
        let prev = read::latest(self.core, self.overlay, &escaped)?.map(|(r, v)| key_value(p.key.clone(), r, v));
        if (p.ignore_value || p.ignore_lease) && prev.is_none() {
            return Err(refused(EtcdApiError::KeyNotFound));
        }
        let value = match (&prev, p.ignore_value) {
            (Some(prev), true) => prev.value.clone(),
            _ => p.value.clone(),
        };
        let lease = match (&prev, p.ignore_lease) {
            (Some(prev), true) => prev.lease,
            _ => p.lease,
        };
        if lease != 0 && !self.lease_exists(lease) {
            return Err(refused(EtcdApiError::LeaseNotFound));
        }
        let create_revision = prev.as_ref().map_or(self.rev, |p| u64::try_from(p.create_revision).unwrap_or(0));
        let version = prev.as_ref().map_or(1, |p| u64::try_from(p.version).unwrap_or(0) + 1);
        let v = Version { tombstone: false, create_revision, version, lease, value };
        let kv = key_value(p.key.clone(), self.rev, v.clone());
        let answer = PutResponse { prev_kv: if p.prev_kv { prev.clone() } else { None } };
        self.write(&p.key, escaped, v, KeyEvent { deleted: false, kv, prev });
        Ok(answer)
    }

    fn delete(&mut self, d: &DeleteRequest) -> Result<DeleteResponse> {
        let live = read::live_keys(self.core, self.overlay, &d.key, &d.range_end, u64::MAX)?;
        let mut out = DeleteResponse { deleted: 0, prev_kvs: Vec::new() };
        for (escaped, r, v) in live {
            let (key, _) = super::layout::unescape(&escaped)?;
            self.delete_one(key, escaped, r, v, d.prev_kv.then_some(&mut out.prev_kvs));
            out.deleted += 1;
        }
        Ok(out)
    }

    fn delete_one(&mut self, key: Vec<u8>, escaped: Vec<u8>, r: u64, v: Version, prevs: Option<&mut Vec<KeyValue>>) {
        let prev = key_value(key.clone(), r, v);
        if let Some(p) = prevs {
            p.push(prev.clone());
        }
        let kv = KeyValue { key: key.clone(), mod_revision: i64::try_from(self.rev).unwrap_or(i64::MAX), ..KeyValue::default() };
        self.write(&key, escaped, Version { tombstone: true, ..Version::default() }, KeyEvent { deleted: true, kv, prev: Some(prev) });
    }

    fn grant(&mut self, id: i64, ttl: i64) -> Result<(i64, i64)> {
        if ttl > MAX_LEASE_TTL {
            return Err(refused(EtcdApiError::LeaseTtlTooLarge));
        }
        let ttl = ttl.max(MIN_LEASE_TTL);
        let mut leases = self.core.etcd.leases.lock();
        let id = if id == 0 {
            let stamp = i64::try_from(now_unix().as_millis()).unwrap_or(0) << 16;
            stamp.max(leases.last_id + 1)
        } else {
            id
        };
        if leases.map.contains_key(&id) {
            return Err(refused(EtcdApiError::LeaseExists));
        }
        leases.last_id = leases.last_id.max(id);
        let deadline = Instant::now() + Duration::from_secs(u64::try_from(ttl).unwrap_or(0));
        leases.map.insert(id, Lease { granted: ttl, deadline, keys: Default::default() });
        self.meta.put(CF_LEASES, lease_key(id), ttl.to_be_bytes().to_vec());
        Ok((id, ttl))
    }

    fn revoke(&mut self, id: i64) -> Result<()> {
        let keys = match self.core.etcd.leases.lock().map.remove(&id) {
            Some(l) => l.keys,
            None => return Err(refused(EtcdApiError::LeaseNotFound)),
        };
        for key in keys {
            let escaped = escape(&key);
            if let Some((r, v)) = read::latest(self.core, self.overlay, &escaped)? {
                if v.lease == id {
                    self.delete_one(key, escaped, r, v, None);
                }
            }
        }
        self.meta.delete(CF_LEASES, lease_key(id));
        Ok(())
    }

    fn run(&mut self, request: &Request) -> Result<Answer> {
        match request {
            Request::Txn(t) => self.txn(t).map(Answer::Txn),
            Request::Grant { id, ttl } => self.grant(*id, *ttl).map(|(id, ttl)| Answer::Granted { id, ttl }),
            Request::Revoke { id } => self.revoke(*id).map(|()| Answer::Revoked),
            Request::Start => Ok(Answer::Started),
        }
    }
}

/// Whether a key's field compares as asked.
fn holds(c: &Compare, kv: &KeyValue) -> bool {
    let ord = match &c.target {
        CompareTarget::Version(x) => kv.version.cmp(x),
        CompareTarget::Create(x) => kv.create_revision.cmp(x),
        CompareTarget::Mod(x) => kv.mod_revision.cmp(x),
        CompareTarget::Lease(x) => kv.lease.cmp(x),
        CompareTarget::Value(x) => kv.value.as_slice().cmp(x.as_slice()),
    };
    match c.result {
        CompareResult::Equal => ord.is_eq(),
        CompareResult::Greater => ord.is_gt(),
        CompareResult::Less => ord.is_lt(),
        CompareResult::NotEqual => ord.is_ne(),
    }
}

/// Runs a group of etcd jobs on the committer thread and writes them in one batch.
pub(in crate::store) fn commit_jobs(core: &Core, jobs: Vec<Job>, recent: &mut Recent) {
    let base = core.visible.load(Ordering::SeqCst);
    let millis = u64::try_from(now_unix().as_millis()).unwrap_or(u64::MAX);
    let mut rev = base;
    let mut overlay = Overlay::new();
    let mut batch = Batch::default();
    let mut events = Vec::new();
    let mut mirror = Mirror::default();
    let mut replies = Vec::with_capacity(jobs.len());
    for job in jobs {
        let mut tx = Tx {
            core,
            overlay: &mut overlay,
            undo: Vec::new(),
            rev: rev + 1,
            touched: Vec::new(),
            events: Vec::new(),
            moves: Vec::new(),
            meta: Batch::default(),
        };
        match tx.run(&job.request) {
            Ok(answer) => {
                let Tx { touched, events: evs, moves, meta, .. } = tx;
                // A new store's first revision: a change log entry naming no key.
                let first = matches!(job.request, Request::Start) && rev == 0;
                if !touched.is_empty() || first {
                    rev += 1;
                    for (_, escaped) in &touched {
                        if let Some((_, v)) = overlay.get(escaped) {
                            batch.put(CF_ETCD, version_key(escaped, rev), v.encode());
                        }
                    }
                    let change = Change { event: EventType::Modified, unix_millis: millis, object_prefix: change_prefix(&touched) };
                    batch.put(CF_CHANGES, keys::change_key(rev).to_vec(), change.encode());
                    mirror.add(core, &evs, rev, &mut batch);
                    events.extend(evs.into_iter().map(|e| (rev, e)));
                }
                batch.ops.extend(meta.ops);
                let mut leases = core.etcd.leases.lock();
                for (key, from, to) in moves {
                    leases.reattach(&key, from, to);
                }
                drop(leases);
                replies.push((job.reply, Ok((answer, rev))));
            }
            Err(e) => {
                tx.rollback();
                replies.push((job.reply, Err(e)));
            }
        }
    }
    if !batch.ops.is_empty() {
        batch.revision = (rev > base).then_some(rev);
        if let Err(e) = core.kv.write(batch, core.options.sync) {
            for (reply, r) in replies {
                let _ = reply.send(r.and(Err(Error::Corrupt(format!("etcd write failed: {e}")))));
            }
            return;
        }
    }
    // The types defined are served, and the objects written known, before the revision is.
    mirror.settle(core, recent);
    let escaped: Vec<Vec<u8>> = events.iter().map(|(_, e)| escape(&e.kv.key)).collect();
    {
        let _hub = core.hub.lock();
        if rev > base {
            core.visible.store(rev, Ordering::SeqCst);
            core.etcd.watchers.lock().broadcast(&events.into(), &escaped);
            core.advanced.notify_all();
        }
    }
    for (reply, r) in replies {
        let _ = reply.send(r);
    }
}
