//! The object store: a RocksDB-backed MVCC store of Kubernetes-style objects with
//! resourceVersions, every write verb, paged lists, watches with bookmarks, and compaction.
//!
//! - Every successful write takes the next revision of one global, gap-free counter; it is the
//!   object's `metadata.resourceVersion`. Every version is kept until [`Store::compact`].
//! - Writers merge in parallel (the field manager, patches); one committer thread orders the
//!   commits, checks that each object is still at the version its writer read (otherwise the
//!   writer retries, or fails its precondition), and writes each group of waiting commits in one
//!   batch with one WAL sync (group commit).
//! - Reads at revision `R` ignore newer versions, so a revision is a snapshot: list pages and
//!   watch replays read from the same store as writers, without locks.
//!
//! Layouts are documented in `engine/STORAGE.md`.
//!
//! # Examples
//! ```
//! use fieldstore_engine::store::{Options, Store, TypeSpec, WriteOptions, GetOptions};
//! use serde_json::json;
//! # let dir = std::env::temp_dir().join(format!("fs-doc-{}", std::process::id()));
//! let store = Store::open(&dir, Options::default())?;
//! store.register(TypeSpec::new("", "v1", "ConfigMap", "configmaps").namespaced(true))?;
//! let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}});
//! let created = store.apply("configmaps", Some("default"), &cm, &WriteOptions::new("me"))?;
//! let rv = created["metadata"]["resourceVersion"].clone();
//! // Applying the same configuration again writes nothing.
//! let again = store.apply("configmaps", Some("default"), &cm, &WriteOptions::new("me"))?;
//! assert_eq!(again["metadata"]["resourceVersion"], rv);
//! # drop(store); std::fs::remove_dir_all(&dir).ok();
//! # Ok::<(), fieldstore_engine::Error>(())
//! ```

mod cache;
mod compact;
mod history;
mod keys;
mod kv;
mod list;
mod object;
mod owners;
mod rocks;
mod types;
mod validate;
mod view;
mod watch;

pub use history::{Attribution, BlameLine, FieldEvent, FieldTimeline, HistoryPolicy, HistoryQuery, WriteEntry};
pub use keys::EventType;
pub use owners::{ManagedObject, ManagedPage, ManagerSummary, Owner};
pub use list::{ListOptions, ObjectList, ResourceVersionMatch};
pub use types::{type_is_named, SchemaSource, TypeSpec};
pub use watch::{Watch, WatchEvent, WatchOptions};

use crate::fieldmanager::{FieldManager, Time};
use crate::patch::{PatchMeta, PatchType};
use crate::{Error, Result};
use crossbeam_channel::{bounded, Receiver, Sender};
use history::Who;
use keys::{Change, CF_CHANGES, CF_HISTORY, CF_META, CF_OBJECTS, CF_TYPES};
use kv::{Batch, Flow, Kv};
use parking_lot::{Condvar, Mutex, RwLock};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use types::{Registered, Registry};

/// etcd's default request size limit, which Kubernetes objects inherit: 1.5 MiB.
pub const DEFAULT_MAX_OBJECT_BYTES: usize = 1536 * 1024;
/// Default budget of the decoded-object cache, in record bytes: 64 MiB.
pub const DEFAULT_OBJECT_CACHE_BYTES: usize = 64 << 20;
/// Records from this size up (64 KiB) have their decoded object cached after a write; smaller
/// ones decode in well under a millisecond.
pub const OBJECT_CACHE_MIN_BYTES: usize = 64 << 10;
/// Default deepest nesting of objects and arrays accepted in an object.
pub const DEFAULT_MAX_DEPTH: usize = 100;

/// Store options; every default is documented on its builder.
#[derive(Debug, Clone)]
pub struct Options {
    sync: bool,
    max_object_bytes: usize,
    max_depth: usize,
    watch_buffer: usize,
    bookmark_interval: Duration,
    future_revision_wait: Duration,
    retention: Option<Duration>,
    keep_revisions: Option<u64>,
    compaction_interval: Duration,
    owner_index: bool,
    object_cache_bytes: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            sync: true,
            max_object_bytes: DEFAULT_MAX_OBJECT_BYTES,
            max_depth: DEFAULT_MAX_DEPTH,
            watch_buffer: 1024,
            bookmark_interval: Duration::from_secs(1),
            future_revision_wait: Duration::from_secs(3),
            retention: Some(Duration::from_secs(300)),
            keep_revisions: None,
            compaction_interval: Duration::from_secs(30),
            owner_index: true,
            object_cache_bytes: DEFAULT_OBJECT_CACHE_BYTES,
        }
    }
}

impl Options {
    /// Whether acknowledged writes are durable (WAL fsynced before the verb returns). Default on.
    #[must_use]
    pub fn sync(mut self, sync: bool) -> Self {
        self.sync = sync;
        self
    }

    /// Largest stored object in bytes (default [`DEFAULT_MAX_OBJECT_BYTES`]).
    #[must_use]
    pub fn max_object_bytes(mut self, bytes: usize) -> Self {
        self.max_object_bytes = bytes;
        self
    }

    /// Deepest nesting accepted (default [`DEFAULT_MAX_DEPTH`]).
    #[must_use]
    pub fn max_depth(mut self, depth: usize) -> Self {
        self.max_depth = depth;
        self
    }

    /// Events buffered per watcher before a slow watcher is ended with an error (default 1024).
    #[must_use]
    pub fn watch_buffer(mut self, events: usize) -> Self {
        self.watch_buffer = events.max(1);
        self
    }

    /// Idle time after which a watch that allows bookmarks gets one (default 1 s).
    #[must_use]
    pub fn bookmark_interval(mut self, interval: Duration) -> Self {
        self.bookmark_interval = interval;
        self
    }

    /// How long a read at a revision the store has not reached waits before failing with
    /// [`Error::TooLargeResourceVersion`] (default 3 s, as the apiserver).
    #[must_use]
    pub fn future_revision_wait(mut self, wait: Duration) -> Self {
        self.future_revision_wait = wait;
        self
    }

    /// Automatic compaction keeps at least this much history (default 5 minutes; `None`: no
    /// time-based compaction).
    #[must_use]
    pub fn retention(mut self, retention: Option<Duration>) -> Self {
        self.retention = retention;
        self
    }

    /// Automatic compaction keeps at least this many revisions (default `None`: no count-based
    /// compaction). With both a time and a count, the one keeping more history wins.
    #[must_use]
    pub fn keep_revisions(mut self, revisions: Option<u64>) -> Self {
        self.keep_revisions = revisions;
        self
    }

    /// Whether the owner index is maintained (default on). Turning it off on a store that had it
    /// leaves the index stale: it is meant for stores that never query ownership, and for
    /// measuring what the index costs.
    #[must_use]
    pub fn owner_index(mut self, on: bool) -> Self {
        self.owner_index = on;
        self
    }

    /// How many bytes of records (from [`OBJECT_CACHE_MIN_BYTES`] up) may have their decoded
    /// latest version kept in memory after a write, so that the next write or read of a large
    /// object does not parse it again (default [`DEFAULT_OBJECT_CACHE_BYTES`]; 0 turns it off).
    /// The cached objects take a few times their record size in memory.
    #[must_use]
    pub fn object_cache(mut self, bytes: usize) -> Self {
        self.object_cache_bytes = bytes;
        self
    }

    /// How often automatic compaction runs (default 30 s).
    #[must_use]
    pub fn compaction_interval(mut self, interval: Duration) -> Self {
        self.compaction_interval = interval;
        self
    }
}

/// Options of a write.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    /// The field manager; empty means `unknown` for non-apply writes; required for apply.
    pub manager: String,
    /// Run everything up to the write, persist nothing.
    pub dry_run: bool,
    /// Apply only: take conflicting fields from other managers.
    pub force: bool,
    /// Write through the `status` subresource.
    pub status: bool,
}

impl WriteOptions {
    /// Writes as `manager`, not dry-run, not forced, to the main resource.
    #[must_use]
    pub fn new(manager: impl Into<String>) -> Self {
        WriteOptions { manager: manager.into(), ..Self::default() }
    }

    /// Sets dry-run.
    #[must_use]
    pub fn dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }

    /// Sets force (apply only).
    #[must_use]
    pub fn force(mut self, force: bool) -> Self {
        self.force = force;
        self
    }

    /// Writes through the `status` subresource.
    #[must_use]
    pub fn status(mut self, status: bool) -> Self {
        self.status = status;
        self
    }
}

/// Options of a delete.
#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    /// Only delete the object with this uid.
    pub uid: Option<String>,
    /// Only delete the object at this resourceVersion.
    pub resource_version: Option<String>,
    /// Run everything up to the write, persist nothing.
    pub dry_run: bool,
}

/// Options of a get.
#[derive(Debug, Clone, Default)]
pub struct GetOptions {
    /// Unset or `"0"`: the latest version; `N`: not older than `N` (or exactly at `N` with
    /// [`ResourceVersionMatch::Exact`]).
    pub resource_version: Option<String>,
    /// How to interpret `resource_version`.
    pub resource_version_match: Option<ResourceVersionMatch>,
}

/// A committed change as watchers see it.
#[derive(Debug)]
pub(crate) struct ChangeEvent {
    pub revision: u64,
    pub type_id: u32,
    pub namespace: String,
    pub event: EventType,
    pub object: Arc<Value>,
    pub prev: Option<Arc<Value>>,
}

enum Expect {
    Absent,
    Revision(u64),
}

enum Outcome {
    Committed(Arc<Value>),
    Stale,
    Failed(Error),
}

struct Commit {
    prefix: Vec<u8>,
    type_id: u32,
    namespace: String,
    expect: Expect,
    record: Vec<u8>,
    tombstone: bool,
    event: EventType,
    object: Value,
    prev: Option<Arc<Value>>,
    /// The history record (stored under the revision the committer assigns).
    history: Option<Vec<u8>>,
    /// Owner index changes.
    index_ops: Vec<kv::Op>,
    reply: Sender<Outcome>,
}

/// State shared by the store's handles and threads.
pub(crate) struct Core {
    kv: Box<dyn Kv>,
    options: Options,
    registry: RwLock<Registry>,
    pub(crate) hub: Mutex<watch::Hub>,
    /// Signalled (with `hub` held) whenever `visible` moves.
    advanced: Condvar,
    /// Every revision up to this one is committed and visible to readers.
    visible: AtomicU64,
    compacted: AtomicU64,
    stop: AtomicBool,
    /// Decoded latest versions of large objects, filled by the committer.
    cache: cache::ObjectCache,
}

/// An open store. Cheap to clone; the last clone dropped stops its threads.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    core: Arc<Core>,
    commits: Mutex<Option<Sender<Commit>>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.core.stop.store(true, Ordering::SeqCst);
        self.commits.lock().take();
        {
            let mut hub = self.core.hub.lock();
            hub.close_all();
            self.core.advanced.notify_all();
        }
        for t in self.threads.lock().drain(..) {
            let _ = t.join();
        }
    }
}

fn now_unix() -> Duration {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default()
}

fn now_time() -> Time {
    Time::from_unix_seconds(i64::try_from(now_unix().as_secs()).unwrap_or(0))
}

impl Store {
    /// Opens the store in `dir`, creating it when missing, and restores its types, revision and
    /// compacted revision.
    ///
    /// # Errors
    /// [`Error::Storage`] when RocksDB cannot open the directory; [`Error::Corrupt`] when its
    /// contents are not a store of this format.
    pub fn open(dir: impl AsRef<Path>, options: Options) -> Result<Store> {
        let kv = rocks::Rocks::open(dir.as_ref())?;
        match kv.get(CF_META, keys::META_FORMAT)? {
            None => kv.write(
                Batch { ops: vec![kv::Op::Put { cf: CF_META, key: keys::META_FORMAT.to_vec(), value: keys::FORMAT_VERSION.to_be_bytes().to_vec() }], revision: None },
                true,
            )?,
            Some(v) if v == keys::FORMAT_VERSION.to_be_bytes() => {}
            Some(v) => return Err(Error::Corrupt(format!("store format {v:?}, this version reads {}", keys::FORMAT_VERSION))),
        }
        let revision = kv.revision()?;
        let compacted = match kv.get(CF_META, keys::META_COMPACTED)? {
            Some(v) => keys::read_u64(&v)?,
            None => 0,
        };
        let mut registry = Registry::default();
        let mut specs = Vec::new();
        kv.scan(CF_TYPES, &[], None, &mut |k, v| {
            let id = u32::from_be_bytes(k.try_into().map_err(|_| Error::Corrupt("bad type key".into()))?);
            let spec: TypeSpec = serde_json::from_slice(v).map_err(|e| Error::Corrupt(format!("type record: {e}")))?;
            specs.push((id, spec));
            Ok(Flow::Continue)
        })?;
        for (id, spec) in specs {
            registry.insert(Registered::compile(id, spec)?);
        }
        let cache = cache::ObjectCache::new(OBJECT_CACHE_MIN_BYTES, options.object_cache_bytes);
        let core = Arc::new(Core {
            kv: Box::new(kv),
            options,
            cache,
            registry: RwLock::new(registry),
            hub: Mutex::new(watch::Hub::default()),
            advanced: Condvar::new(),
            visible: AtomicU64::new(revision),
            compacted: AtomicU64::new(compacted),
            stop: AtomicBool::new(false),
        });
        let (tx, rx) = bounded::<Commit>(4096);
        let mut threads = Vec::new();
        let c = core.clone();
        threads.push(std::thread::Builder::new().name("fieldstore-commit".into()).spawn(move || committer(&c, &rx)).map_err(io_err)?);
        // Automatic compaction (when configured) and history retention (always).
        let c = core.clone();
        threads.push(std::thread::Builder::new().name("fieldstore-compact".into()).spawn(move || compact::auto(&c)).map_err(io_err)?);
        Ok(Store { inner: Arc::new(Inner { core, commits: Mutex::new(Some(tx)), threads: Mutex::new(threads) }) })
    }

    fn core(&self) -> &Core {
        &self.inner.core
    }

    /// The current revision: every write up to it is visible.
    #[must_use]
    pub fn revision(&self) -> u64 {
        self.core().visible.load(Ordering::SeqCst)
    }

    /// The compacted revision: history before it is gone (0: never compacted).
    #[must_use]
    pub fn compacted_revision(&self) -> u64 {
        self.core().compacted.load(Ordering::SeqCst)
    }

    /// Registers (or re-registers, replacing its schema) a resource type, durably.
    ///
    /// # Errors
    /// [`Error::Schema`] when the schema does not load; [`Error::Storage`].
    pub fn register(&self, spec: TypeSpec) -> Result<()> {
        let mut reg = self.core().registry.write();
        let id = match reg.resolve(&spec.resource()) {
            Ok(t) => t.id,
            Err(_) => reg.next_id(),
        };
        let compiled = Registered::compile(id, spec.clone())?;
        let record = serde_json::to_vec(&spec).map_err(|e| Error::BadRequest(e.to_string()))?;
        self.core().kv.write(Batch { ops: vec![kv::Op::Put { cf: CF_TYPES, key: id.to_be_bytes().to_vec(), value: record }], revision: None }, true)?;
        reg.insert(compiled);
        Ok(())
    }

    /// Every registered type, in registration order.
    #[must_use]
    pub fn types(&self) -> Vec<TypeSpec> {
        self.core().registry.read().specs()
    }

    /// The registered type a client names: by plural (`configmaps`), `plural.group`, kind
    /// (any case) or singular kind (`configmap`, `deployment.apps`).
    ///
    /// # Errors
    /// [`Error::NotFound`] when no type has that name.
    pub fn find_type(&self, name: &str) -> Result<TypeSpec> {
        self.types()
            .into_iter()
            .find(|t| types::type_is_named(name, &t.plural, &t.group, &t.kind))
            .ok_or_else(|| Error::NotFound { resource: "resource type".into(), name: name.into() })
    }

    /// The registered type of an object, from its `apiVersion` and `kind`.
    ///
    /// # Errors
    /// [`Error::BadRequest`] when the object names neither; [`Error::NotFound`] when no type
    /// matches.
    pub fn type_of(&self, object: &Value) -> Result<TypeSpec> {
        let s = |k: &str| object.get(k).and_then(Value::as_str).unwrap_or("");
        let (api_version, kind) = (s("apiVersion"), s("kind"));
        if api_version.is_empty() || kind.is_empty() {
            return Err(Error::BadRequest("the object needs apiVersion and kind".into()));
        }
        self.types()
            .into_iter()
            .find(|t| t.api_version() == api_version && t.kind == kind)
            .ok_or_else(|| Error::NotFound { resource: "resource type".into(), name: format!("{kind}.{api_version}") })
    }

    fn resolve(&self, resource: &str) -> Result<Arc<Registered>> {
        self.core().registry.read().resolve(resource)
    }

    /// Asks every open watch to emit a bookmark at the current revision (for caching proxies;
    /// Kubernetes has no such call).
    pub fn request_bookmark(&self) {
        let hub = self.core().hub.lock();
        hub.bookmark_all(self.revision());
    }

    /// Parses an object from JSON or YAML bytes, with the store's nesting limit.
    ///
    /// # Errors
    /// [`Error::BadRequest`] when the bytes are neither, or nest too deeply.
    pub fn parse_object(&self, bytes: &[u8]) -> Result<Value> {
        let v: Value = match serde_json::from_slice(bytes) {
            Ok(v) => v,
            Err(json_err) => {
                let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
                if matches!(first, Some(b'{') | Some(b'[')) {
                    return Err(Error::BadRequest(format!("invalid JSON: {json_err}")));
                }
                serde_yaml::from_slice(bytes).map_err(|e| Error::BadRequest(format!("invalid YAML: {e}")))?
            }
        };
        validate::depth(&v, self.core().options.max_depth)?;
        Ok(v)
    }

    /// Creates an object (`metadata.name`, or `metadata.generateName` for a generated one).
    /// The object gets a uid, creationTimestamp and generation 1.
    ///
    /// # Errors
    /// [`Error::AlreadyExists`]; [`Error::NotFound`] for an unknown resource; [`Error::Invalid`]
    /// for bad names; [`Error::BadRequest`]; [`Error::TooLarge`].
    pub fn create(&self, resource: &str, namespace: Option<&str>, object: &Value, opts: &WriteOptions) -> Result<Value> {
        let t = self.resolve(resource)?;
        let ns = self.scope(&t, namespace, object)?;
        if opts.status {
            return Err(Error::BadRequest("create is not allowed on the status subresource".into()));
        }
        self.check_input(&t, object)?;
        if object.pointer("/metadata/resourceVersion").and_then(Value::as_str).is_some_and(|s| !s.is_empty()) {
            return Err(Error::BadRequest("resourceVersion should not be set on objects to be created".into()));
        }
        let name = match object.pointer("/metadata/name").and_then(Value::as_str).filter(|s| !s.is_empty()) {
            Some(n) => n.to_string(),
            None => match object.pointer("/metadata/generateName").and_then(Value::as_str).filter(|s| !s.is_empty()) {
                Some(prefix) => validate::generate_name(prefix),
                None => return Err(validate::invalid("metadata.name", "Required value: name or generateName is required")),
            },
        };
        validate::name(&name)?;
        let now = now_time();
        self.write_loop(&t, &ns, &name, opts.dry_run, &who(opts, "Update"), |cur| {
            if cur.is_some() {
                return Err(Error::AlreadyExists { resource: t.spec.resource(), name: name.clone() });
            }
            let mut obj = object.clone();
            init_new(&t, &mut obj, &ns, &name, &now);
            if t.spec.status_subresource {
                if let Value::Object(m) = &mut obj {
                    m.remove("status");
                }
            }
            let out = t.main.update(None, obj, &opts.manager, &now)?.object;
            Ok(Plan::Put(out, EventType::Added))
        })
    }

    /// The object, at the latest revision or as `opts` asks.
    ///
    /// # Errors
    /// [`Error::NotFound`]; [`Error::Expired`] for an exact revision before the compacted one;
    /// [`Error::TooLargeResourceVersion`]; [`Error::BadRequest`] for a malformed resourceVersion.
    pub fn get(&self, resource: &str, namespace: Option<&str>, name: &str, opts: &GetOptions) -> Result<Value> {
        let t = self.resolve(resource)?;
        let ns = self.scope(&t, namespace, &Value::Null)?;
        let rv = list::parse_rv(opts.resource_version.as_deref())?;
        let at = match (rv, opts.resource_version_match) {
            (Some(r), Some(ResourceVersionMatch::Exact)) if r > 0 => {
                self.core().wait_for(r)?;
                self.core().check_compacted(r)?;
                r
            }
            (Some(r), _) if r > 0 => {
                self.core().wait_for(r)?;
                self.revision()
            }
            _ => self.revision(),
        };
        let prefix = keys::object_prefix(t.id, &ns, name);
        // The record is read in place: a cached version is copied, not the record.
        let core = self.core();
        let found = core.newest_at(&prefix, at, |rev, rec| {
            (!object::is_tombstone(rec)).then(|| match core.cache.get(&prefix, rev) {
                Some(cached) => Ok(Value::clone(&cached)),
                None => object::decode(rec, rev),
            })
        })?;
        match found {
            Some((_, Some(object))) => object,
            _ => Err(Error::NotFound { resource: t.spec.resource(), name: name.into() }),
        }
    }

    /// Replaces an object (or, with [`WriteOptions::status`], its status). A non-empty
    /// `metadata.resourceVersion` in `object` is a precondition.
    ///
    /// # Errors
    /// [`Error::NotFound`]; [`Error::Precondition`] (409) when the resourceVersion or uid does
    /// not match; those of [`Store::create`].
    pub fn update(&self, resource: &str, namespace: Option<&str>, object: &Value, opts: &WriteOptions) -> Result<Value> {
        let t = self.resolve(resource)?;
        let ns = self.scope(&t, namespace, object)?;
        self.check_input(&t, object)?;
        let name = required_name(object)?;
        let fm = self.field_manager(&t, opts)?;
        let now = now_time();
        self.write_loop(&t, &ns, &name, opts.dry_run, &who(opts, "Update"), |cur| {
            let live = cur.ok_or_else(|| Error::NotFound { resource: t.spec.resource(), name: name.clone() })?;
            check_preconditions(&t, &name, live, object)?;
            let new = prepare_update(&t, opts.status, live, object.clone());
            let out = fm.update(Some(live), new, &opts.manager, &now)?.object;
            Ok(finish_update(live, out))
        })
    }

    /// Server-side applies `config` as `opts.manager`, creating the object when absent. An apply
    /// that changes nothing writes nothing and keeps the resourceVersion.
    ///
    /// # Errors
    /// [`Error::Conflict`] with the conflicting managers unless forced; those of
    /// [`Store::update`].
    pub fn apply(&self, resource: &str, namespace: Option<&str>, config: &Value, opts: &WriteOptions) -> Result<Value> {
        let t = self.resolve(resource)?;
        let ns = self.scope(&t, namespace, config)?;
        self.check_input(&t, config)?;
        let name = required_name(config)?;
        validate::name(&name)?;
        let fm = self.field_manager(&t, opts)?;
        let now = now_time();
        self.write_loop(&t, &ns, &name, opts.dry_run, &who(opts, "Apply"), |cur| match cur {
            None => {
                if opts.status {
                    return Err(Error::NotFound { resource: t.spec.resource(), name: name.clone() });
                }
                let mut out = fm.apply(None, config, &opts.manager, opts.force, &now)?.object;
                init_new(&t, &mut out, &ns, &name, &now);
                Ok(Plan::Put(out, EventType::Added))
            }
            Some(live) => {
                check_preconditions(&t, &name, live, config)?;
                let outcome = fm.apply(Some(live), config, &opts.manager, opts.force, &now)?;
                if outcome.is_noop() {
                    // The field manager's object is then the live one: the same fields, and
                    // managedFields rebuilt from unchanged entries, in the form the store writes
                    // them. It is returned rather than dropped for a copy of the live one.
                    debug_assert_eq!(&outcome.object, live);
                    return Ok(Plan::NoOp(outcome.object));
                }
                let new = prepare_update(&t, opts.status, live, outcome.object);
                Ok(finish_update(live, new))
            }
        })
    }

    /// Patches an object with a strategic merge, JSON merge or JSON patch.
    ///
    /// # Errors
    /// [`Error::Patch`] when the patch does not apply; those of [`Store::update`].
    pub fn patch(&self, resource: &str, namespace: Option<&str>, name: &str, patch_type: PatchType, patch: &Value, opts: &WriteOptions) -> Result<Value> {
        let t = self.resolve(resource)?;
        let ns = self.scope(&t, namespace, &Value::Null)?;
        validate::depth(patch, self.core().options.max_depth)?;
        let fm = self.field_manager(&t, opts)?;
        let meta = match t.spec.schema {
            SchemaSource::None => PatchMeta::untyped(),
            _ => PatchMeta::new(t.schema, &t.root_name)?,
        };
        let now = now_time();
        self.write_loop(&t, &ns, name, opts.dry_run, &who(opts, "Update"), |cur| {
            let live = cur.ok_or_else(|| Error::NotFound { resource: t.spec.resource(), name: name.into() })?;
            let patched = crate::patch::apply(patch_type, live, patch, &meta)?;
            self.check_input(&t, &patched)?;
            check_preconditions(&t, name, live, &patched)?;
            let new = prepare_update(&t, opts.status, live, patched);
            let out = fm.update(Some(live), new, &opts.manager, &now)?.object;
            Ok(finish_update(live, out))
        })
    }

    /// Deletes an object; one with finalizers gets a deletionTimestamp instead and goes when
    /// its last finalizer is removed. Returns the deleted object, or the object being deleted.
    ///
    /// # Errors
    /// [`Error::NotFound`]; [`Error::Precondition`] when the uid or resourceVersion
    /// precondition fails.
    pub fn delete(&self, resource: &str, namespace: Option<&str>, name: &str, opts: &DeleteOptions) -> Result<Value> {
        let t = self.resolve(resource)?;
        let ns = self.scope(&t, namespace, &Value::Null)?;
        let now = now_time();
        let deleter = Who { operation: "Delete", ..Who::default() };
        self.write_loop(&t, &ns, name, opts.dry_run, &deleter, |cur| {
            let live = cur.ok_or_else(|| Error::NotFound { resource: t.spec.resource(), name: name.into() })?;
            let meta = live.get("metadata");
            let field = |f: &str| meta.and_then(|m| m.get(f)).and_then(Value::as_str).unwrap_or("");
            if let Some(uid) = &opts.uid {
                if uid != field("uid") {
                    return Err(precondition(&t, name, format!("Precondition failed: UID in precondition: {uid}, UID in object meta: {}", field("uid"))));
                }
            }
            if let Some(rv) = &opts.resource_version {
                if rv != field("resourceVersion") {
                    return Err(precondition(
                        &t,
                        name,
                        format!("Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}", field("resourceVersion")),
                    ));
                }
            }
            let has_finalizers = meta.and_then(|m| m.get("finalizers")).and_then(Value::as_array).is_some_and(|a| !a.is_empty());
            if !has_finalizers {
                return Ok(Plan::Delete(live.clone()));
            }
            if meta.and_then(|m| m.get("deletionTimestamp")).is_some_and(|v| !v.is_null()) {
                return Ok(Plan::NoOp(live.clone()));
            }
            let mut out = live.clone();
            if let Some(Value::Object(m)) = out.get_mut("metadata") {
                m.insert("deletionTimestamp".into(), Value::String(now.as_str().to_string()));
                m.insert("deletionGracePeriodSeconds".into(), Value::from(0));
                let generation = m.get("generation").and_then(Value::as_i64).unwrap_or(0);
                if generation > 0 {
                    m.insert("generation".into(), Value::from(generation + 1));
                }
            }
            Ok(Plan::Put(out, EventType::Modified))
        })
    }

    /// Deletes every object the list options select (each deletion is its own revision).
    /// Returns the objects deleted or being deleted.
    ///
    /// # Errors
    /// Those of [`Store::list`] and [`Store::delete`] (objects deleted meanwhile are skipped).
    pub fn delete_collection(&self, resource: &str, namespace: Option<&str>, list: &ListOptions, opts: &DeleteOptions) -> Result<Vec<Value>> {
        let mut listed = ListOptions { limit: None, continue_token: None, ..list.clone() };
        listed.limit = None;
        let items = self.list(resource, namespace, &listed)?.items;
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            let name = item.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
            let ns = item.pointer("/metadata/namespace").and_then(Value::as_str);
            match self.delete(resource, ns, name, opts) {
                Ok(v) => out.push(v),
                Err(Error::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    fn field_manager<'t>(&self, t: &'t Registered, opts: &WriteOptions) -> Result<&'t FieldManager<'static>> {
        if opts.status {
            t.status.as_ref().ok_or_else(|| Error::NotFound { resource: format!("{}/status", t.spec.resource()), name: String::new() })
        } else {
            Ok(&t.main)
        }
    }

    /// The namespace of a request: required for namespaced types, absent otherwise, and equal
    /// to the object's own when it names one.
    fn scope(&self, t: &Registered, namespace: Option<&str>, object: &Value) -> Result<String> {
        let in_object = object.pointer("/metadata/namespace").and_then(Value::as_str).filter(|s| !s.is_empty());
        if !t.spec.namespaced {
            if namespace.is_some_and(|s| !s.is_empty()) || in_object.is_some() {
                return Err(Error::BadRequest(format!("{} is cluster-scoped: no namespace may be given", t.spec.resource())));
            }
            return Ok(String::new());
        }
        let ns = match (namespace.filter(|s| !s.is_empty()), in_object) {
            (Some(a), Some(b)) if a != b => {
                return Err(Error::BadRequest("the namespace of the provided object does not match the namespace sent on the request".into()))
            }
            (Some(a), _) => a,
            (None, Some(b)) => b,
            (None, None) => return Err(Error::BadRequest(format!("{} is namespaced: a namespace is required", t.spec.resource()))),
        };
        validate::namespace(ns)?;
        Ok(ns.to_string())
    }

    /// Checks an object body: a JSON object of this type's apiVersion and kind (when given),
    /// not nested too deeply.
    fn check_input(&self, t: &Registered, object: &Value) -> Result<()> {
        if !object.is_object() {
            return Err(Error::BadRequest("the object must be a JSON object".into()));
        }
        validate::depth(object, self.core().options.max_depth)?;
        let s = |k: &str| object.get(k).and_then(Value::as_str);
        if let Some(kind) = s("kind") {
            if kind != t.spec.kind {
                return Err(Error::BadRequest(format!("kind {kind} does not match the resource's kind {}", t.spec.kind)));
            }
        }
        if let Some(v) = s("apiVersion") {
            if v != t.api_version {
                return Err(Error::BadRequest(format!("apiVersion {v} does not match the resource's {}", t.api_version)));
            }
        }
        Ok(())
    }

    /// Reads the object, plans the write, commits it; retries when another writer committed to
    /// the object in between.
    fn write_loop(&self, t: &Registered, ns: &str, name: &str, dry_run: bool, who: &Who, mut plan: impl FnMut(Option<&Value>) -> Result<Plan>) -> Result<Value> {
        let prefix = keys::object_prefix(t.id, ns, name);
        for _ in 0..1000 {
            // The latest version, read in place: the live object (from the cache when it holds
            // this revision), its managedFields entries and its record's size.
            let core = self.core();
            let cur = core.newest_at(&prefix, u64::MAX, |rev, rec| -> Result<Option<(Value, Vec<owners::EntryFields>, usize)>> {
                if object::is_tombstone(rec) {
                    return Ok(None);
                }
                let live = match core.cache.take(&prefix, rev) {
                    Some(cached) => Arc::try_unwrap(cached).unwrap_or_else(|shared| Value::clone(&shared)),
                    None => object::decode(rec, rev)?,
                };
                Ok(Some((live, object::entry_fields(rec)?, rec.len())))
            })?;
            let (expect, mut live, old_entries, record_len) = match cur {
                Some((rev, found)) => match found? {
                    Some((live, entries, len)) => (Expect::Revision(rev), Some(live), entries, len),
                    None => (Expect::Absent, None, Vec::new(), 0),
                },
                None => (Expect::Absent, None, Vec::new(), 0),
            };
            // A write that ends without committing (no change, an error, a dry run) leaves the
            // version it read the latest: it goes back to the cache for the next write
            // (controllers re-apply unchanged configs and retry conflicts).
            let put_back = |live: Option<Value>| {
                if let (Expect::Revision(rev), Some(l)) = (&expect, live) {
                    core.cache.put(&prefix, *rev, Some(&Arc::new(l)), record_len);
                }
            };
            let (mut object, event, tombstone) = match plan(live.as_ref()) {
                Ok(Plan::NoOp(v)) => {
                    put_back(live);
                    return Ok(v);
                }
                Err(e) => {
                    put_back(live);
                    return Err(e);
                }
                Ok(Plan::Put(v, EventType::Modified)) if being_finalized(&v) => (v, EventType::Deleted, true),
                Ok(Plan::Put(v, e)) => (v, e, false),
                Ok(Plan::Delete(v)) => (v, EventType::Deleted, true),
            };
            if let (Some(Value::Object(m)), Some(ns)) = (object.get_mut("metadata"), Some(ns).filter(|s| !s.is_empty())) {
                m.insert("namespace".into(), Value::String(ns.to_string()));
            }
            let previous = object::Previous { managed_fields: live.as_ref().and_then(|l| l.pointer("/metadata/managedFields")), entries: &old_entries };
            let (record, entries) = object::encode_with_entries(&mut object, tombstone, Some(previous))?;
            if record.len() > self.core().options.max_object_bytes {
                return Err(Error::TooLarge { size: record.len(), limit: self.core().options.max_object_bytes });
            }
            if dry_run {
                if event == EventType::Added {
                    if let Some(Value::Object(m)) = object.get_mut("metadata") {
                        m.remove("resourceVersion");
                    }
                }
                put_back(live);
                return Ok(object);
            }
            let index_ops = if self.core().options.owner_index {
                owners::index_ops(t.id, &prefix, &old_entries, if tombstone { &[] } else { &entries })?
            } else {
                Vec::new()
            };
            let history = if t.spec.history.enabled { Some(self.history_record(t, who, event, tombstone, live.as_mut(), &mut object)) } else { None };
            let (reply, rx) = bounded(1);
            let commit = Commit {
                prefix: prefix.clone(),
                type_id: t.id,
                namespace: ns.to_string(),
                expect,
                record,
                tombstone,
                event,
                object,
                prev: live.map(Arc::new),
                history,
                index_ops,
                reply,
            };
            let tx = self.inner.commits.lock().clone().ok_or_else(|| Error::Corrupt("store is closed".into()))?;
            tx.send(commit).map_err(|_| Error::Corrupt("store is closed".into()))?;
            match rx.recv().map_err(|_| Error::Corrupt("store is closed".into()))? {
                Outcome::Committed(obj) => return Ok(Arc::try_unwrap(obj).unwrap_or_else(|a| (*a).clone())),
                Outcome::Stale => continue,
                Outcome::Failed(e) => return Err(e),
            }
        }
        Err(precondition(t, name, "too many concurrent writers; please try again".into()))
    }

    /// Compacts history before `revision`: reads, lists and watches from older revisions fail
    /// with [`Error::Expired`]. The compacted revision persists; space is reclaimed in the
    /// calling thread without blocking writers.
    ///
    /// # Errors
    /// [`Error::BadRequest`] for a revision past the current one; [`Error::Storage`].
    pub fn compact(&self, revision: u64) -> Result<()> {
        compact::compact(self.core(), revision)
    }

    /// Applies every type's history retention now (the background loop also does, every
    /// compaction interval). Returns how many change records were dropped.
    ///
    /// # Errors
    /// [`Error::Storage`]; [`Error::Corrupt`] for unreadable records.
    pub fn prune_history(&self) -> Result<u64> {
        history::prune(self.core())
    }
}

impl Store {
    /// The history record of a write (computed on the writer's thread, in parallel with other
    /// writers): the versions are stripped of what history does not track, then restored.
    fn history_record(&self, t: &Registered, who: &Who, event: EventType, tombstone: bool, live: Option<&mut Value>, object: &mut Value) -> Vec<u8> {
        let millis = u64::try_from(now_unix().as_millis()).unwrap_or(u64::MAX);
        let saved_new = history::take_untracked(object);
        let (before, saved_old) = match live {
            Some(l) => {
                let saved = history::take_untracked(l);
                (Some(l), Some(saved))
            }
            None => (None, None),
        };
        let after = if tombstone { None } else { Some(&*object) };
        let record = history::record(t, who, event, before.as_deref(), after, millis).encode();
        if let (Some(l), Some(saved)) = (before, saved_old) {
            history::restore_untracked(l, saved);
        }
        history::restore_untracked(object, saved_new);
        record
    }
}

/// Who a write is, for history: the request's manager and subresource.
fn who(opts: &WriteOptions, operation: &'static str) -> Who {
    Who { manager: opts.manager.clone(), operation, subresource: if opts.status { "status".into() } else { String::new() }, note: String::new() }
}

/// What a write does after reading the object.
enum Plan {
    NoOp(Value),
    Put(Value, EventType),
    Delete(Value),
}

fn io_err(e: std::io::Error) -> Error {
    Error::Corrupt(format!("cannot start store thread: {e}"))
}

fn precondition(t: &Registered, name: &str, message: String) -> Error {
    Error::Precondition { resource: t.spec.resource(), name: name.into(), message }
}

fn required_name(object: &Value) -> Result<String> {
    object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .ok_or_else(|| validate::invalid("metadata.name", "Required value: name is required"))
}

/// Sets the server-owned metadata of a new object.
fn init_new(t: &Registered, obj: &mut Value, ns: &str, name: &str, now: &Time) {
    let Value::Object(root) = obj else { return };
    root.insert("apiVersion".into(), Value::String(t.api_version.clone()));
    root.insert("kind".into(), Value::String(t.spec.kind.clone()));
    let meta = root.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(m) = meta {
        m.insert("name".into(), Value::String(name.into()));
        if !ns.is_empty() {
            m.insert("namespace".into(), Value::String(ns.into()));
        }
        m.insert("uid".into(), Value::String(uuid::Uuid::new_v4().to_string()));
        m.insert("creationTimestamp".into(), Value::String(now.as_str().into()));
        m.insert("generation".into(), Value::from(1));
        m.remove("resourceVersion");
        m.remove("deletionTimestamp");
        m.remove("deletionGracePeriodSeconds");
    }
}

/// The resourceVersion and uid preconditions an update body carries.
fn check_preconditions(t: &Registered, name: &str, live: &Value, new: &Value) -> Result<()> {
    let get = |v: &Value, f: &str| v.get("metadata").and_then(|m| m.get(f)).and_then(Value::as_str).map(str::to_string);
    if let Some(rv) = get(new, "resourceVersion").filter(|s| !s.is_empty()) {
        if Some(&rv) != get(live, "resourceVersion").as_ref() {
            return Err(precondition(t, name, "the object has been modified; please apply your changes to the latest version and try again".into()));
        }
    }
    if let Some(uid) = get(new, "uid").filter(|s| !s.is_empty()) {
        let live_uid = get(live, "uid").unwrap_or_default();
        if uid != live_uid {
            return Err(precondition(t, name, format!("Precondition failed: UID in precondition: {uid}, UID in object meta: {live_uid}")));
        }
    }
    Ok(())
}

/// The apiserver's PrepareForUpdate: server-owned metadata stays; with a status subresource, a
/// main-resource write keeps the live status and a status write changes only the status.
fn prepare_update(t: &Registered, status_write: bool, live: &Value, mut new: Value) -> Value {
    if t.spec.status_subresource {
        if status_write {
            let status = new.get("status").cloned();
            let managed = new.pointer("/metadata/managedFields").cloned();
            new = live.clone();
            if let Value::Object(root) = &mut new {
                match status {
                    Some(s) => root.insert("status".into(), s),
                    None => root.remove("status"),
                };
                if let (Some(mf), Some(Value::Object(m))) = (managed, root.get_mut("metadata")) {
                    m.insert("managedFields".into(), mf);
                }
            }
        } else if let Value::Object(root) = &mut new {
            match live.get("status") {
                Some(s) => root.insert("status".into(), s.clone()),
                None => root.remove("status"),
            };
        }
    }
    if let (Some(Value::Object(lm)), Some(Value::Object(nm))) = (live.get("metadata"), new.get_mut("metadata")) {
        for f in ["uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation", "name", "namespace", "resourceVersion"] {
            match lm.get(f) {
                Some(v) => nm.insert(f.into(), v.clone()),
                None => nm.remove(f),
            };
        }
    }
    new
}

/// Bumps the generation when the object changed outside metadata and status; a write that
/// changes nothing at all is skipped (as the apiserver does for identical bytes).
fn finish_update(live: &Value, mut new: Value) -> Plan {
    // One comparison, without copies: everything outside metadata and status, then those two.
    let spec_changed = match (live, &new) {
        (Value::Object(a), Value::Object(b)) => {
            fn rest(m: &Map<String, Value>) -> impl Iterator<Item = (&String, &Value)> {
                m.iter().filter(|(k, _)| *k != "metadata" && *k != "status")
            }
            let spec_changed = !rest(a).eq(rest(b));
            if !spec_changed && a.get("metadata") == b.get("metadata") && a.get("status") == b.get("status") {
                return Plan::NoOp(new);
            }
            spec_changed
        }
        _ if &new == live => return Plan::NoOp(new),
        _ => true,
    };
    if spec_changed {
        if let Some(Value::Object(m)) = new.get_mut("metadata") {
            let generation = m.get("generation").and_then(Value::as_i64).unwrap_or(0);
            m.insert("generation".into(), Value::from(generation + 1));
        }
    }
    Plan::Put(new, EventType::Modified)
}

/// An object whose deletion waited for finalizers and that has none left.
fn being_finalized(v: &Value) -> bool {
    let meta = v.get("metadata");
    meta.and_then(|m| m.get("deletionTimestamp")).is_some_and(|t| !t.is_null())
        && meta.and_then(|m| m.get("finalizers")).and_then(Value::as_array).is_none_or(Vec::is_empty)
}

impl Core {
    /// The newest version of an object at or before `revision`.
    pub(crate) fn version_at(&self, prefix: &[u8], revision: u64) -> Result<Option<(u64, Vec<u8>)>> {
        self.newest_at(prefix, revision, |_, rec| rec.to_vec())
    }

    /// The revision of an object's newest version and whether it is a tombstone, without
    /// copying its record.
    pub(crate) fn latest_state(&self, prefix: &[u8]) -> Result<Option<(u64, bool)>> {
        self.newest_at(prefix, u64::MAX, |_, rec| object::is_tombstone(rec))
    }

    /// What `read` makes of the newest version of an object at or before `revision` (given its
    /// revision and its record, read in place), with that version's revision.
    fn newest_at<T>(&self, prefix: &[u8], revision: u64, mut read: impl FnMut(u64, &[u8]) -> T) -> Result<Option<(u64, T)>> {
        let end = keys::prefix_end(prefix);
        let mut out = None;
        self.kv.scan(CF_OBJECTS, &keys::object_key(prefix, revision), end.as_deref(), &mut |k, v| {
            let rev = !keys::read_u64(k.get(k.len().saturating_sub(8)..).unwrap_or_default())?;
            out = Some((rev, read(rev, v)));
            Ok(Flow::Stop)
        })?;
        Ok(out)
    }

    /// Waits (bounded) until the store reaches `revision`.
    pub(crate) fn wait_for(&self, revision: u64) -> Result<()> {
        let deadline = std::time::Instant::now() + self.options.future_revision_wait;
        let mut hub = self.hub.lock();
        while self.visible.load(Ordering::SeqCst) < revision {
            if self.stop.load(Ordering::SeqCst) || self.advanced.wait_until(&mut hub, deadline).timed_out() {
                let current = self.visible.load(Ordering::SeqCst);
                if current >= revision {
                    break;
                }
                return Err(Error::TooLargeResourceVersion { requested: revision, current });
            }
        }
        Ok(())
    }

    /// Fails with 410 when `revision` is before the compacted revision.
    pub(crate) fn check_compacted(&self, revision: u64) -> Result<()> {
        let compacted = self.compacted.load(Ordering::SeqCst);
        if revision < compacted {
            return Err(Error::Expired(format!("too old resource version: {revision} ({compacted})")));
        }
        Ok(())
    }
}

/// The committer: orders commits, checks each against the object's latest version, and writes
/// each group in one synced batch.
fn committer(core: &Core, rx: &Receiver<Commit>) {
    while let Ok(first) = rx.recv() {
        let mut group = vec![first];
        while group.len() < 1024 {
            match rx.try_recv() {
                Ok(c) => group.push(c),
                Err(_) => break,
            }
        }
        let mut batch = Batch::default();
        let mut overlay: HashMap<Vec<u8>, (u64, bool)> = HashMap::new();
        let mut accepted = Vec::with_capacity(group.len());
        let mut rev = core.visible.load(Ordering::SeqCst);
        let unix_millis = u64::try_from(now_unix().as_millis()).unwrap_or(u64::MAX);
        for mut c in group {
            let cur = match overlay.get(&c.prefix) {
                Some(&v) => Some(v),
                None => match core.latest_state(&c.prefix) {
                    Ok(v) => v,
                    Err(e) => {
                        let _ = c.reply.send(Outcome::Failed(e));
                        continue;
                    }
                },
            };
            let fresh = match c.expect {
                Expect::Absent => cur.is_none_or(|(_, tomb)| tomb),
                Expect::Revision(r) => cur == Some((r, false)),
            };
            if !fresh {
                let _ = c.reply.send(Outcome::Stale);
                continue;
            }
            rev += 1;
            let record_bytes = c.record.len();
            batch.put(CF_OBJECTS, keys::object_key(&c.prefix, rev), std::mem::take(&mut c.record));
            let change = Change { event: c.event, unix_millis, object_prefix: c.prefix.clone() };
            batch.put(CF_CHANGES, keys::change_key(rev).to_vec(), change.encode());
            if let Some(h) = c.history.take() {
                batch.put(CF_HISTORY, keys::object_key(&c.prefix, rev), h);
            }
            batch.ops.append(&mut c.index_ops);
            overlay.insert(c.prefix.clone(), (rev, c.tombstone));
            accepted.push((c, rev, record_bytes));
        }
        if accepted.is_empty() {
            continue;
        }
        batch.revision = Some(rev);
        if let Err(e) = core.kv.write(batch, core.options.sync) {
            for (c, _, _) in accepted {
                let err = match &e {
                    Error::Storage(s) => Error::Storage(s.clone()),
                    other => Error::Corrupt(other.to_string()),
                };
                let _ = c.reply.send(Outcome::Failed(err));
            }
            continue;
        }
        let mut events = Vec::with_capacity(accepted.len());
        let mut replies = Vec::with_capacity(accepted.len());
        for (mut c, r, record_bytes) in accepted {
            if let Some(Value::Object(m)) = c.object.get_mut("metadata") {
                m.insert("resourceVersion".into(), Value::String(r.to_string()));
            }
            let obj = Arc::new(c.object);
            core.cache.put(&c.prefix, r, (!c.tombstone).then_some(&obj), record_bytes);
            events.push(Arc::new(ChangeEvent { revision: r, type_id: c.type_id, namespace: c.namespace, event: c.event, object: obj.clone(), prev: c.prev }));
            replies.push((c.reply, Outcome::Committed(obj)));
        }
        {
            let mut hub = core.hub.lock();
            core.visible.store(rev, Ordering::SeqCst);
            hub.broadcast(&events);
            core.advanced.notify_all();
        }
        // Writers hear first; then the events (and the previous versions they carry) go.
        for (reply, outcome) in replies {
            let _ = reply.send(outcome);
        }
        drop(events);
    }
}
