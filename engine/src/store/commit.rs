//! How a write commits: the writer reads the object and plans the write ([`Plan`]) on its own
//! thread, then hands a [`Commit`] to the one committer thread, which orders commits, checks
//! each against the object's latest version (a stale one is retried by its writer) and writes
//! each group of waiting commits in one batch with one WAL sync (group commit).

use super::cache::CachedVersion;
use super::core::{now_unix, Core};
use super::history_record::{self, Who};
use super::hub::ChangeEvent;
use super::keys::{self, Change, EventType, CF_CHANGES, CF_HISTORY, CF_OBJECTS};
use super::kv::{self, Batch, Committed};
use super::options::OBJECT_CACHE_LARGE_BYTES;
use super::recent::{self, Known, Recent};
use super::types::Registered;
use super::{definitions, follow, object, owner_index, validate, Job, Store};
use crate::fieldmanager::{KnownManagers, StoredEntry};
use crate::{Error, Result};
use fieldstore_codec::Set;
use flume::{bounded, Receiver, Sender};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

/// What a write does after reading the object.
pub(super) enum Plan {
    /// Nothing to write: the reply is this object.
    NoOp(Value),
    /// Write this version (an `ADDED` or `MODIFIED` event).
    Put(Value, EventType),
    /// Write this version, whose managedFields the field manager has just written from these
    /// sets (in order; nothing changed them since): the record takes the sets instead of
    /// parsing the FieldsV1 documents again.
    Managed(Value, EventType, Vec<Set>),
    /// Delete the object, whose last state this is.
    Delete(Value),
}

/// The version a commit expects to find: none (a create: no version, or a deletion at this
/// revision, 0 for none), or the one its writer read.
enum Expect {
    Absent(u64),
    Revision(u64),
}

impl Expect {
    /// The revision of the newest version the writer saw (0: none).
    fn seen(&self) -> u64 {
        match self {
            Expect::Absent(r) | Expect::Revision(r) => *r,
        }
    }
}

/// What the committer tells a writer.
enum Outcome {
    Committed(Arc<Value>),
    Stale,
    Failed(Error),
}

/// A planned write, handed to the committer.
pub(super) struct Commit {
    prefix: Vec<u8>,
    type_id: u32,
    namespace: String,
    expect: Expect,
    /// The revision visible when the writer read the object.
    read_at: u64,
    record: Vec<u8>,
    /// What the object takes in the object cache once committed (`cache::weight`), weighed by
    /// the writer rather than the committer, which every write waits on; `None` when it is not
    /// cached (a deletion, or the create of a small object).
    cache_bytes: Option<usize>,
    /// Its managedFields entries decoded, for the object cache.
    managers: Option<Arc<[StoredEntry]>>,
    tombstone: bool,
    event: EventType,
    object: Value,
    prev: Option<Arc<Value>>,
    /// The history record (stored under the revision the committer assigns).
    history: Option<Vec<u8>>,
    /// Owner index changes.
    index_ops: Vec<kv::Op>,
    /// The type a CustomResourceDefinition's commit registers.
    defines: Option<Box<definitions::Registration>>,
    reply: Sender<Outcome>,
}

/// A failed precondition (409) on an object of type `t`.
pub(super) fn precondition(t: &Registered, name: &str, message: String) -> Error {
    Error::Precondition { resource: t.spec.resource(), name: name.into(), message }
}

/// An object whose deletion waited for finalizers and that has none left.
fn being_finalized(v: &Value) -> bool {
    let meta = v.get("metadata");
    meta.and_then(|m| m.get("deletionTimestamp")).is_some_and(|t| !t.is_null())
        && meta.and_then(|m| m.get("finalizers")).and_then(Value::as_array).is_none_or(Vec::is_empty)
        && !namespace_held(v)
}

/// Whether `v` is a Namespace whose `spec.finalizers` still hold its deletion (a namespace's
/// finalizers are there, not in its metadata).
pub(super) fn namespace_held(v: &Value) -> bool {
    v.get("kind").and_then(Value::as_str) == Some("Namespace")
        && v.get("apiVersion").and_then(Value::as_str) == Some("v1")
        && v.pointer("/spec/finalizers").and_then(Value::as_array).is_some_and(|f| !f.is_empty())
}

/// The newest version of an object as its writer read it.
struct Read {
    /// The version the commit expects to find.
    expect: Expect,
    /// The revision visible when it was read.
    at: u64,
    /// The live object (none when absent or deleted).
    live: Option<Value>,
    /// Its managedFields entries, as its record holds them.
    entries: Vec<object::EntryFields>,
    /// The same entries for the field manager.
    managers: LiveManagers,
    /// The size of its record.
    record_len: usize,
}

/// The live version's managedFields entries as a write's read has them: decoded (with the
/// record, or kept by the object cache), or still encoded, decoded once if the write needs them.
struct LiveManagers {
    encoded: Vec<u8>,
    decoded: OnceLock<Arc<[StoredEntry]>>,
}

impl LiveManagers {
    fn decoded(stored: Arc<[StoredEntry]>) -> Self {
        LiveManagers { encoded: Vec::new(), decoded: OnceLock::from(stored) }
    }

    fn encoded(bytes: Vec<u8>) -> Self {
        LiveManagers { encoded: bytes, decoded: OnceLock::new() }
    }

    /// The managers the field manager works on, as often as a plan asks for them (a write
    /// retried without its undeclared fields asks twice). Cheap to repeat: the entries are
    /// decoded once, and the sets are shared.
    fn decode(&self) -> std::result::Result<crate::fieldmanager::Decoded, String> {
        let stored = match self.decoded.get() {
            Some(stored) => stored,
            None => {
                let stored: Arc<[StoredEntry]> = object::stored_entries(&self.encoded).map_err(|e| e.to_string())?.into();
                self.decoded.get_or_init(|| stored)
            }
        };
        crate::fieldmanager::from_stored(stored.to_vec())
    }

    /// The entries, if decoded (by the read, or by the write's [`LiveManagers::decode`]).
    fn decoded_entries(&self) -> Option<&Arc<[StoredEntry]>> {
        self.decoded.get()
    }
}

impl Read {
    /// The latest version, read in place: the live object (from the cache when it holds this
    /// revision), its managedFields entries and its record's size.
    fn latest(core: &Core, prefix: &[u8]) -> Result<Read> {
        let at = core.visible.load(Ordering::SeqCst);
        let cur = core.newest_at(prefix, u64::MAX, |rev, rec| -> Result<Option<Read>> {
            if object::is_tombstone(rec) {
                return Ok(None);
            }
            let (live, managers) = match core.cache.take(prefix, rev) {
                Some(CachedVersion { object, managers }) => (
                    Arc::try_unwrap(object).unwrap_or_else(|shared| Value::clone(&shared)),
                    match managers {
                        Some(stored) => LiveManagers::decoded(stored),
                        None => LiveManagers::encoded(object::entries_bytes(rec)?.to_vec()),
                    },
                ),
                None => object::decode_with_entries(rec, rev).map(|(v, s)| (v, LiveManagers::decoded(s.into())))?,
            };
            Ok(Some(Read {
                expect: Expect::Revision(rev),
                at,
                live: Some(live),
                entries: object::entry_fields(rec)?,
                managers,
                record_len: rec.len(),
            }))
        })?;
        let absent = |rev| Read {
            expect: Expect::Absent(rev),
            at,
            live: None,
            entries: Vec::new(),
            managers: LiveManagers::decoded(Arc::new([])),
            record_len: 0,
        };
        Ok(match cur {
            Some((rev, found)) => found?.unwrap_or_else(|| absent(rev)),
            None => absent(0),
        })
    }

    /// For a write that ends without committing (no change, an error, a dry run): the version
    /// it read stays the latest and goes back to the cache for the next write (controllers
    /// re-apply unchanged configs and retry conflicts).
    fn put_back(&mut self, core: &Core, prefix: &[u8]) {
        if let (Expect::Revision(rev), Some(l)) = (&self.expect, self.live.take()) {
            let bytes = super::cache::weight(&l, self.record_len);
            let version = CachedVersion { object: Arc::new(l), managers: self.managers.decoded_entries().cloned() };
            core.cache.put(prefix, *rev, Some(version), bytes);
        }
    }
}

/// A write as planned, checked and encoded, before the committer orders it.
struct Planned {
    /// The version to write (the object's last state for a deletion).
    object: Value,
    event: EventType,
    /// Whether the write deletes the object.
    tombstone: bool,
    /// The object's record.
    record: Vec<u8>,
    /// Its managedFields entries.
    entries: Vec<object::EntryFields>,
    /// The same entries decoded, when the encoding had every set at hand.
    decoded: Option<Vec<StoredEntry>>,
}

/// Admits a version of an object of type `t` in namespace `ns`: sets its namespace, checks
/// it (its metadata only when a client writes it), and for a CustomResourceDefinition the
/// type it defines, registered by its commit.
fn admit(
    core: &Core,
    t: &Registered,
    ns: &str,
    who: &Who,
    object: &mut Value,
    tombstone: bool,
    live: Option<&Value>,
) -> Result<Option<Registered>> {
    if let (Some(Value::Object(m)), Some(ns)) = (object.get_mut("metadata"), Some(ns).filter(|s| !s.is_empty())) {
        m.insert("namespace".into(), Value::String(ns.to_string()));
    }
    if !tombstone {
        let meta = if who.is_client() { validate::object_meta(t, object) } else { Ok(()) };
        // A client's write has the managedFields the field manager wrote, or live's.
        meta.and_then(|()| validate::encodable(t, object, live, !who.is_client()))?;
    }
    Ok(match (tombstone, t.spec.resource() == definitions::CRDS) {
        (false, true) => {
            let sent = object.get("status").cloned();
            let specs = core.registry.read().specs();
            let defined = definitions::prepare(
                object,
                live,
                &definitions::others_of_group(object, &specs),
                who.is_client(),
                who.subresource == "status",
            )?;
            definitions::settle(live, sent.as_ref(), who.subresource == "status", object);
            defined
        }
        _ => None,
    })
}

impl Store {
    /// [`Store::write_loop_async`], waiting on this thread.
    pub(super) fn write_loop(
        &self,
        t: &Registered,
        ns: &str,
        name: &str,
        dry_run: bool,
        who: &Who,
        mut plan: impl FnMut(Option<&Value>, Option<KnownManagers<'_>>) -> Result<Plan>,
    ) -> Result<Arc<Value>> {
        super::wait::block_on(self.write_loop_async(t, ns, name, dry_run, who, |cur, known| plan(cur.map(|v| &*v), known)))
    }

    /// Reads the object, plans the write, commits it; retries when another writer committed to
    /// the object in between. The reading and planning run where the future is polled; the one
    /// wait, for the committer's group to be synced, is an await (a server's request task waits
    /// there without holding a thread). The object written is the one the store's cache and
    /// watch events share: callers that answer with it encode it from there, not from a copy.
    ///
    /// `plan` gets the write's own copy of the live object: it may change it while it plans
    /// (an apply takes its managedFields out rather than copy the rest without them), but must
    /// leave it as it found it, since a plan that fails or changes nothing puts it back into the
    /// object cache, and the commit compares it with the version it writes.
    pub(super) async fn write_loop_async(
        &self,
        t: &Registered,
        ns: &str,
        name: &str,
        dry_run: bool,
        who: &Who,
        mut plan: impl FnMut(Option<&mut Value>, Option<KnownManagers<'_>>) -> Result<Plan>,
    ) -> Result<Arc<Value>> {
        let prefix = keys::object_prefix(t.id, ns, name);
        for _ in 0..1000 {
            let core = self.core();
            let mut read = Read::latest(core, &prefix)?;
            // A custom resource stored under an older schema is planned on as it reads now; a view
            // of another version plans on the object as that version serves it.
            let mut normalised = read.live.as_ref().filter(|_| t.spec.reshaped || t.converts()).cloned();
            if let Some(l) = normalised.as_mut() {
                t.to_served(l);
                let _ = t.read_view(l);
            }
            // The live version's managers, decoded from the record's binary sets if the write
            // needs them (not for a version planned on as another schema or version shows it).
            let planned = {
                let known = || read.managers.decode();
                let known: Option<KnownManagers<'_>> = if normalised.is_none() { Some(&known) } else { None };
                plan(normalised.as_mut().or(read.live.as_mut()), known)
            };
            let (mut object, event, tombstone, written) = match planned {
                Ok(Plan::NoOp(v)) => {
                    read.put_back(core, &prefix);
                    return Ok(Arc::new(v));
                }
                Err(e) => {
                    read.put_back(core, &prefix);
                    return Err(e);
                }
                Ok(Plan::Put(v, EventType::Modified) | Plan::Managed(v, EventType::Modified, _)) if being_finalized(&v) => {
                    (v, EventType::Deleted, true, Vec::new())
                }
                Ok(Plan::Put(v, e)) => (v, e, false, Vec::new()),
                Ok(Plan::Managed(v, e, sets)) => (v, e, false, sets),
                Ok(Plan::Delete(v)) => (v, EventType::Deleted, true, Vec::new()),
            };
            t.to_stored(&mut object);
            if event == EventType::Added && who.is_client() {
                if let Err(e) = definitions::admit_new(t, name).and_then(|()| self.admit_content(t, ns, name)) {
                    read.put_back(core, &prefix);
                    return Err(e);
                }
            }
            // The last finalizer of an object in a namespace being deleted: the namespace may go
            // (and a definition being deleted, when the object's type is its).
            let last_finalizer = tombstone
                && event == EventType::Deleted
                && read.live.as_ref().is_some_and(|l| l.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null()));
            let finalized = last_finalizer && !ns.is_empty();
            let defines = match admit(core, t, ns, who, &mut object, tombstone, read.live.as_ref()) {
                Ok(defines) => defines,
                Err(e) => {
                    read.put_back(core, &prefix);
                    return Err(e);
                }
            };
            let object::Encoded { record, entries, decoded } = self.encode(&mut object, tombstone, &read, &written)?;
            if dry_run {
                if event == EventType::Added {
                    if let Some(Value::Object(m)) = object.get_mut("metadata") {
                        m.remove("resourceVersion");
                    }
                }
                read.put_back(core, &prefix);
                t.to_served(&mut object);
                return Ok(Arc::new(object));
            }
            let defines = defines.map(|d| definitions::Registration::of(core, d).map(Box::new)).transpose()?;
            let planned = Planned { object, event, tombstone, record, entries, decoded };
            let (mut commit, answer) = self.commit_of(t, ns, who, &prefix, read, planned)?;
            commit.defines = defines;
            let tx = self.inner.commits.lock().clone().ok_or(Error::Closed)?;
            tx.send(Job::Write(commit)).map_err(|_| Error::Closed)?;
            match answer.recv_async().await.map_err(|_| Error::Closed)? {
                Outcome::Committed(obj) => {
                    if finalized {
                        self.finalize_namespace_later(ns);
                    }
                    if last_finalizer && t.spec.terminating {
                        self.clean_up_definition_later(&t.spec.resource());
                    }
                    let mut obj = obj;
                    if t.converts() {
                        t.to_served(Arc::make_mut(&mut obj));
                    }
                    return Ok(obj);
                }
                Outcome::Stale => continue,
                Outcome::Failed(e) => return Err(e),
            }
        }
        Err(precondition(t, name, "too many concurrent writers; please try again".into()))
    }

    /// The record of a version and its managedFields entries (those of the version `read` are
    /// reused where unchanged; `written`: the sets of the entries, in order, when the field
    /// manager has just written them), in the store's body encoding, within its size limit.
    fn encode(&self, object: &mut Value, tombstone: bool, read: &Read, written: &[Set]) -> Result<object::Encoded> {
        let previous = object::Previous {
            managed_fields: read.live.as_ref().and_then(|l| l.get("metadata")).and_then(|m| m.get("managedFields")),
            entries: &read.entries,
            decoded: read.managers.decoded_entries().map_or(&[], |d| d),
            written,
        };
        let encoding = if self.core().options.protobuf_storage { object::BodyEncoding::Protobuf } else { object::BodyEncoding::Json };
        let encoded = object::encode_with_entries(object, tombstone, Some(previous), encoding)?;
        if encoded.record.len() > self.core().options.max_object_bytes {
            return Err(Error::TooLarge { size: encoded.record.len(), limit: self.core().options.max_object_bytes });
        }
        Ok(encoded)
    }

    /// The commit of a planned write to the object at `prefix`, with its owner index changes
    /// and history record (computed here, on the writer's thread), and where the committer
    /// answers.
    fn commit_of(
        &self,
        t: &Registered,
        ns: &str,
        who: &Who,
        prefix: &[u8],
        read: Read,
        planned: Planned,
    ) -> Result<(Commit, Receiver<Outcome>)> {
        let Planned { mut object, event, tombstone, mut record, entries, decoded } = planned;
        let Read { expect, at: read_at, mut live, entries: mut old_entries, managers, .. } = read;
        // The owner index decodes the sets of changed managers: those the write decoded are at hand.
        if let Some(stored) = managers.decoded_entries().filter(|d| d.len() == old_entries.len()) {
            for (e, d) in old_entries.iter_mut().zip(stored.iter()) {
                e.set.get_or_insert_with(|| d.set.clone());
            }
        }
        let index_ops = if self.core().options.owner_index {
            owner_index::index_ops(t.id, prefix, &old_entries, if tombstone { &[] } else { &entries })?
        } else {
            Vec::new()
        };
        let history = if t.spec.history.enabled {
            // A create's history record leaves its body to the object record.
            if live.is_none() && !tombstone {
                object::mark_created(&mut record);
            }
            Some(history_record::of_write(t, who, event, tombstone, live.as_mut(), &mut object))
        } else {
            None
        };
        let (reply, answer) = bounded(1);
        // A deletion only drops the cache's entry: nothing to weigh. A small object is cached
        // once written over: a create is often its object's only write (an event), and the
        // embedded API's answer would be a copy of what the cache holds. The store's own writes
        // (an import, a manager's rename or release) are not: an import keeps managedFields as
        // given, which the record's view shows as the store writes them.
        let cached = !tombstone && who.is_client() && (event != EventType::Added || record.len() >= OBJECT_CACHE_LARGE_BYTES);
        let cache_bytes = cached.then(|| super::cache::weight(&object, record.len()));
        let managers = decoded.filter(|_| cached).map(Arc::from);
        let commit = Commit {
            prefix: prefix.to_vec(),
            type_id: t.id,
            namespace: ns.to_string(),
            expect,
            read_at,
            record,
            cache_bytes,
            managers,
            tombstone,
            event,
            object,
            prev: live.map(Arc::new),
            history,
            index_ops,
            defines: None,
            reply,
        };
        Ok((commit, answer))
    }
}

/// An error for each writer of a failed group (errors are not `Clone`: RocksDB's is).
fn copy_error(e: &Error) -> Error {
    match e {
        Error::Storage(s) => Error::Storage(s.clone()),
        Error::Etcd { message, timeout } => Error::Etcd { message: message.clone(), timeout: *timeout },
        other => Error::Corrupt(other.to_string()),
    }
}

/// The latest state of an object as the committer checks a commit against it: the revision
/// of its newest version and whether it is a tombstone (`Some(None)`: no version), or `None`
/// when the transaction checks it (a guard).
type Stored = Option<Option<(u64, bool)>>;

/// A commit accepted into its group's batch, with its revision.
type Accepted = (Commit, u64);

/// The committer: orders commits, checks each against the object's latest version, and writes
/// each group in one synced batch.
pub(super) fn committer(core: &Core, rx: &Receiver<Job>) {
    let mut recent = Recent::new(core.visible.load(Ordering::SeqCst), recent::CAPACITY);
    while let Ok(first) = rx.recv() {
        // Runs of object commits and runs of etcd jobs, each run a group, in arrival order.
        let mut jobs = gather(first, rx).into_iter().peekable();
        while let Some(job) = jobs.next() {
            match job {
                Job::Write(c) => {
                    let mut group = vec![c];
                    while let Some(Job::Write(_)) = jobs.peek() {
                        if let Some(Job::Write(c)) = jobs.next() {
                            group.push(c);
                        }
                    }
                    commit_group(core, group, &mut recent);
                }
                Job::Etcd(e) => {
                    let mut group = vec![e];
                    while let Some(Job::Etcd(_)) = jobs.peek() {
                        if let Some(Job::Etcd(e)) = jobs.next() {
                            group.push(e);
                        }
                    }
                    super::etcd_api::commit_jobs(core, group, &mut recent);
                }
            }
        }
    }
}

/// Checks a group of object commits and writes it in one synced batch.
fn commit_group(core: &Core, group: Vec<Commit>, recent: &mut Recent) {
    let base = core.visible.load(Ordering::SeqCst);
    let unix_millis = u64::try_from(now_unix().as_millis()).unwrap_or(u64::MAX);
    let latest = match stored_states(core, &group, recent) {
        Ok(latest) => latest,
        Err(e) => {
            for c in group {
                let _ = c.reply.send(Outcome::Failed(copy_error(&e)));
            }
            return;
        }
    };
    let mut batch = Batch::default();
    let (accepted, rev) = accept(group, latest, base, unix_millis, &mut batch);
    if accepted.is_empty() {
        return;
    }
    batch.revision = Some(rev);
    match core.kv.commit(batch, base, core.options.sync) {
        Ok(Committed::Yes) => {
            for (c, r) in &accepted {
                recent.record(&c.prefix, *r, c.tombstone);
            }
            publish(core, base, rev, accepted);
        }
        Ok(Committed::Raced) => {
            // Another process committed first, or an object of the group changed since its
            // writer read it: learn what was written, then every writer of the group reads
            // again and retries.
            let caught_up = follow::catch_up(core);
            // What another process wrote is not remembered: from now on only.
            *recent = Recent::new(core.visible.load(Ordering::SeqCst), recent::CAPACITY);
            for (c, _) in accepted {
                let _ = c.reply.send(match &caught_up {
                    Ok(()) => Outcome::Stale,
                    Err(e) => Outcome::Failed(copy_error(e)),
                });
            }
        }
        Err(e) => {
            for (c, _) in accepted {
                let _ = c.reply.send(Outcome::Failed(copy_error(&e)));
            }
        }
    }
}

/// A group of commits: `first`, and those waiting behind it (at most 1024 in all).
fn gather(first: Job, rx: &Receiver<Job>) -> Vec<Job> {
    let mut group = vec![first];
    while group.len() < 1024 {
        match rx.try_recv() {
            Ok(c) => group.push(c),
            Err(_) => break,
        }
    }
    group
}

/// Whether each commit's object is still at the version its writer read is checked against
/// these states. On a shared backend (etcd) the transaction itself checks it: a guard per
/// object that no newer version exists, no read needed (every state `None`). Otherwise (or for
/// a group too large for guards) the latest versions are read first, together (one round trip
/// on a networked backend).
fn stored_states(core: &Core, group: &[Commit], recent: &Recent) -> Result<Vec<Stored>> {
    let guarded = core.kv.shared() && group.len() <= kv::MAX_GUARDS;
    if guarded {
        return Ok(group.iter().map(|_| None).collect());
    }
    // What the committer remembers needs no read (a store no other process writes).
    let known: Vec<Option<Option<(u64, bool)>>> = group
        .iter()
        .map(|c| match (core.kv.shared(), recent.state(&c.prefix, c.read_at)) {
            (false, Known::Since(rev, tomb)) => Some(Some((rev, tomb))),
            (false, Known::Unchanged) => Some(match c.expect {
                Expect::Revision(r) => Some((r, false)),
                Expect::Absent(0) => None,
                Expect::Absent(r) => Some((r, true)),
            }),
            _ => None,
        })
        .collect();
    let prefixes: Vec<&[u8]> = group.iter().zip(&known).filter(|(_, k)| k.is_none()).map(|(c, _)| c.prefix.as_slice()).collect();
    let mut read = if prefixes.is_empty() { Vec::new() } else { core.latest_states(&prefixes)? }.into_iter();
    Ok(known.into_iter().map(|k| Some(k.unwrap_or_else(|| read.next().flatten()))).collect())
}

/// Accepts into `batch`, at consecutive revisions after `base`, each commit of the group whose
/// object is still at the version its writer read (a stale one's writer is told to retry). A
/// later commit of the group to the same object is checked against the earlier one's version
/// (the overlay). The accepted commits, and the last revision.
fn accept(group: Vec<Commit>, latest: Vec<Stored>, base: u64, unix_millis: u64, batch: &mut Batch) -> (Vec<Accepted>, u64) {
    let mut overlay: HashMap<Vec<u8>, (u64, bool)> = HashMap::new();
    let mut accepted = Vec::with_capacity(group.len());
    let mut rev = base;
    for (mut c, stored) in group.into_iter().zip(latest) {
        let cur = match (overlay.get(&c.prefix), stored) {
            (Some(&v), _) => Some(Some(v)),
            (None, Some(stored)) => Some(stored),
            (None, None) => None,
        };
        if !fresh(&c, cur, batch) {
            let _ = c.reply.send(Outcome::Stale);
            continue;
        }
        rev += 1;
        add(batch, &mut c, rev, unix_millis);
        overlay.insert(c.prefix.clone(), (rev, c.tombstone));
        accepted.push((c, rev));
    }
    (accepted, rev)
}

/// Whether a commit's object is at the version its writer expects, given its latest state
/// `cur`; when the transaction is to check it (`cur` is `None`), the guard that no newer
/// version exists goes into `batch` and the commit counts as fresh.
fn fresh(c: &Commit, cur: Stored, batch: &mut Batch) -> bool {
    match (&c.expect, cur) {
        (_, None) => {
            batch.guards.push(kv::Guard {
                cf: CF_OBJECTS,
                from: keys::object_key(&c.prefix, u64::MAX),
                to: keys::object_key(&c.prefix, c.expect.seen()),
            });
            true
        }
        (Expect::Absent(_), Some(cur)) => cur.is_none_or(|(_, tomb)| tomb),
        (Expect::Revision(r), Some(cur)) => cur == Some((*r, false)),
    }
}

/// Adds a commit's writes at revision `rev` to the batch: its record, its change, its history
/// record and its owner index changes.
fn add(batch: &mut Batch, c: &mut Commit, rev: u64, unix_millis: u64) {
    batch.put(CF_OBJECTS, keys::object_key(&c.prefix, rev), std::mem::take(&mut c.record));
    let change = Change { event: c.event, unix_millis, object_prefix: c.prefix.clone() };
    batch.put(CF_CHANGES, keys::change_key(rev).to_vec(), change.encode());
    if let Some(h) = c.history.take() {
        batch.put(CF_HISTORY, keys::object_key(&c.prefix, rev), h);
    }
    // Taken, not appended from: `append` would leave the commit holding the emptied vector's
    // buffer (thousands of ops for a large object) until it is published.
    batch.ops.append(&mut std::mem::take(&mut c.index_ops));
    if let Some(d) = &c.defines {
        d.add_to(batch);
    }
}

/// Once a group's batch is committed (revisions `base` + 1 to `rev`): each version gets its
/// resourceVersion and goes to the cache, the group's events are published, and its writers
/// hear.
fn publish(core: &Core, base: u64, rev: u64, accepted: Vec<Accepted>) {
    let mut events = Vec::with_capacity(accepted.len());
    let mut replies = Vec::with_capacity(accepted.len());
    for (mut c, r) in accepted {
        // A definition's type is served before anyone hears of the definition.
        if let Some(d) = c.defines.take() {
            d.register(core);
        }
        if let Some(Value::Object(m)) = c.object.get_mut("metadata") {
            m.insert("resourceVersion".into(), Value::String(r.to_string()));
        }
        let obj = Arc::new(c.object);
        let version = c.cache_bytes.map(|_| CachedVersion { object: obj.clone(), managers: c.managers.take() });
        core.cache.put(&c.prefix, r, version, c.cache_bytes.unwrap_or(0));
        events.push(Arc::new(ChangeEvent {
            revision: r,
            type_id: c.type_id,
            namespace: c.namespace,
            event: c.event,
            object: obj.clone(),
            prev: c.prev,
        }));
        replies.push((c.reply, Outcome::Committed(obj)));
    }
    let group: Arc<[Arc<ChangeEvent>]> = events.into();
    {
        let mut hub = core.hub.lock();
        // Unless another process's commit was followed meanwhile (`follow`: it published
        // this group too, from the change log).
        if core.visible.load(Ordering::SeqCst) == base {
            core.visible.store(rev, Ordering::SeqCst);
            hub.broadcast(&group);
            core.advanced.notify_all();
        }
    }
    // Writers hear first; then the events (and the previous versions they carry, which
    // take milliseconds to free for a 10k-item object) go.
    for (reply, outcome) in replies {
        let _ = reply.send(outcome);
    }
    drop(group);
}
