//! The object store: a RocksDB-backed MVCC store of Kubernetes-style objects with
//! resourceVersions, every write verb, paged and streamed lists, watches with bookmarks, and
//! compaction.
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
//! use fieldstore_engine::store::{Collection, Options, Store, TypeSpec, WriteOptions};
//! use serde_json::json;
//! # let dir = std::env::temp_dir().join(format!("fs-doc-{}", std::process::id()));
//! let store = Store::open(&dir, Options::default())?;
//! store.register(TypeSpec::new("", "v1", "ConfigMap", "configmaps").namespaced(true))?;
//! let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}});
//! let configmaps = Collection::new("configmaps", Some("default"));
//! let created = store.apply(&configmaps, &cm, &WriteOptions::new("me"))?;
//! let rv = created["metadata"]["resourceVersion"].clone();
//! // Applying the same configuration again writes nothing.
//! let again = store.apply(&configmaps, &cm, &WriteOptions::new("me"))?;
//! assert_eq!(again["metadata"]["resourceVersion"], rv);
//! # drop(store); std::fs::remove_dir_all(&dir).ok();
//! # Ok::<(), fieldstore_engine::Error>(())
//! ```

// The modules in layers; each imports only from the layers before it (and the `Store` type
// here, whose methods the upper layers define), never in a circle:
// 1. storage: `keys` (layouts), `kv` (the KV trait), `rocks` (RocksDB), `etcd`;
// 2. values: `cache`, `validate`, `types` (registered types), `builtin` (the built-in kinds),
//    `object` (records), `view`;
// 3. requests: `address` (objects, collections, revisions), `selectors`, `options`,
//    `continue_token`;
// 4. state: `hub` (watch fan-out), `etcd_state` (the etcd API's leases and watchers), `core`
//    (shared state and reads);
// 5. a write's parts: `history_record`, `owner_index`;
// 6. writing: `follow` (other processes' commits), `commit` (plan, write loop, committer),
//    `meta` (metadata rules), `compact`;
// 7. verbs: `verbs`, `list` (its scan in steps: `list_scan`), `watch`, `blame`, `owners`, `versions` (a custom resource's
//    versions), `cleanup` (a deleted CRD's objects), `etcd_api` (etcd's v3 API: its keys, run by
//    the committer as jobs of their own, `Job::Etcd`).
mod address;
mod blame;
mod builtin;
mod cache;
mod cleanup;
mod commit;
mod compact;
mod continue_token;
mod core;
mod definitions;
mod establishing;
mod etcd;
pub mod etcd_api;
mod etcd_state;
mod follow;
mod history_record;
mod hub;
mod keys;
mod kv;
mod list;
mod list_scan;
mod meta;
mod object;
mod options;
mod owner_index;
mod owners;
mod recent;
mod rocks;
mod selectors;
mod strategy;
mod types;
mod unknown_fields;
mod validate;
mod verbs;
mod versions;
mod view;
mod wait;
mod watch;

pub use address::{Collection, ObjectKey, Revision};
pub use blame::{Attribution, BlameLine, FieldEvent, FieldTimeline, HistoryQuery, WriteEntry};
pub use builtin::{builtin_type, builtin_types};
pub use cache::RevisionCache;
pub use definitions::FINALIZER as CRD_CLEANUP_FINALIZER;
pub use keys::EventType;
pub use list::ObjectList;
pub use list_scan::{ListMeta, ListStream, Listed};
pub use options::{
    DeleteOptions, FieldValidation, GetOptions, ListOptions, Options, ResourceVersionMatch, WriteOptions, WriteVerb, Written,
    DEFAULT_MAX_DEPTH, DEFAULT_MAX_OBJECT_BYTES, DEFAULT_MAX_PATCH_BYTES, DEFAULT_OBJECT_CACHE_BYTES, OBJECT_CACHE_LARGE_BYTES,
};
pub use owners::{ManagedObject, ManagedPage, ManagerSummary, Owner};
pub use strategy::namespace::{
    FINALIZER as NAMESPACE_FINALIZER, INITIAL as INITIAL_NAMESPACES, NAME_LABEL as NAMESPACE_NAME_LABEL, PROTECTED as PROTECTED_NAMESPACES,
};
pub use strategy::scale::{has_scale, scale_of, ScaleChange, SCALABLE};
pub use types::{type_is_named, HistoryPolicy, ScaleSubresource, SchemaSource, TypeSpec};
pub use verbs::address;
pub use versions::{sort_by_priority, ApiVersionSpec};
pub use watch::{Watch, WatchEvent, WatchOptions, INITIAL_EVENTS_END};

use self::core::Core;
use crate::{Error, Result};
use commit::{committer, Commit};

/// What the committer thread is handed: an object's commit, or an etcd API job.
enum Job {
    /// A planned write of an object.
    Write(Commit),
    /// A transaction, lease grant or revocation of the etcd API.
    Etcd(etcd_api::Job),
}
use flume::{bounded, Sender};
use hub::Hub;
use keys::{CF_META, CF_TYPES};
use kv::{Batch, Flow, Kv};
use parking_lot::{Condvar, Mutex, RwLock};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use types::{Registered, Registry};

/// An open store. Cheap to clone; the last clone dropped stops its threads.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    core: Arc<Core>,
    commits: Mutex<Option<Sender<Job>>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.core.stop.store(true, Ordering::SeqCst);
        self.commits.lock().take();
        {
            let mut hub = self.core.hub.lock();
            hub.close_all();
            self.core.etcd.watchers.lock().close_all();
            self.core.advanced.notify_all();
        }
        for t in self.threads.lock().drain(..) {
            let _ = t.join();
        }
        // Every acknowledged write is already in the log; this spares the next open its replay.
        let _ = self.core.kv.flush();
    }
}

impl Store {
    /// Opens the store in `dir`, creating it when missing, and restores its types, revision and
    /// compacted revision.
    ///
    /// # Errors
    /// [`Error::Storage`] when RocksDB cannot open the directory; [`Error::Corrupt`] when its
    /// contents are not a store of this format.
    pub fn open(dir: impl AsRef<Path>, options: Options) -> Result<Store> {
        Store::open_kv(Box::new(rocks::Rocks::open(dir.as_ref())?), options)
    }

    /// Opens the store kept in an etcd cluster (`endpoints` such as `http://127.0.0.1:2379`),
    /// under the key prefix `prefix` (`/fieldstore`, say), creating it when empty. Several
    /// processes may open the same store: each sees every process's commits, in one order of
    /// revisions. See `engine/STORAGE.md`, "etcd", for the layout and the etcd flags it needs.
    ///
    /// # Errors
    /// [`Error::Etcd`] when no endpoint answers; [`Error::Corrupt`] as for [`Store::open`].
    pub fn open_etcd(endpoints: &[String], prefix: &str, options: Options) -> Result<Store> {
        Store::open_kv(Box::new(etcd::Etcd::connect(endpoints, prefix)?), options)
    }

    fn open_kv(backend: Box<dyn Kv>, options: Options) -> Result<Store> {
        let kv = backend.as_ref();
        match kv.get(CF_META, keys::META_FORMAT)? {
            None => kv.write(
                Batch {
                    ops: vec![
                        kv::Op::Put { cf: CF_META, key: keys::META_FORMAT.to_vec(), value: keys::FORMAT_VERSION.to_be_bytes().to_vec() },
                        kv::Op::Put {
                            cf: CF_META,
                            key: owner_index::META_LAYOUT.to_vec(),
                            value: owner_index::LAYOUT.to_be_bytes().to_vec(),
                        },
                    ],
                    revision: None,
                    guards: Vec::new(),
                },
                true,
            )?,
            Some(v) if v == keys::FORMAT_VERSION.to_be_bytes() => {}
            Some(v) => return Err(Error::Corrupt(format!("store format {v:?}, this version reads {}", keys::FORMAT_VERSION))),
        }
        owner_index::relayout(kv)?;
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
        if options.builtin_types {
            register_builtins(kv, &mut registry)?;
        }
        let leases = if kv.shared() { Default::default() } else { etcd_api::load_leases(kv)? };
        let cache = cache::ObjectCache::new(options.object_cache_bytes);
        let core = Arc::new(Core {
            kv: backend,
            options,
            cache,
            registry: RwLock::new(registry),
            hub: Mutex::new(Hub::default()),
            advanced: Condvar::new(),
            visible: AtomicU64::new(revision),
            compacted: AtomicU64::new(compacted),
            stop: AtomicBool::new(false),
            following: Mutex::new(()),
            etcd: etcd_state::EtcdState { leases: Mutex::new(leases), watchers: Mutex::default() },
        });
        let (tx, rx) = bounded::<Job>(4096);
        let mut threads = Vec::new();
        let c = core.clone();
        threads.push(std::thread::Builder::new().name("fieldstore-commit".into()).spawn(move || committer(&c, &rx)).map_err(io_err)?);
        // Automatic compaction (when configured) and history retention (always).
        let c = core.clone();
        threads.push(std::thread::Builder::new().name("fieldstore-compact".into()).spawn(move || compact::auto(&c)).map_err(io_err)?);
        if core.kv.shared() {
            let c = core.clone();
            threads.push(std::thread::Builder::new().name("fieldstore-follow".into()).spawn(move || follow::follow(&c)).map_err(io_err)?);
        }
        let store = Store { inner: Arc::new(Inner { core, commits: Mutex::new(Some(tx)), threads: Mutex::new(threads) }) };
        store.resume_namespace_deletions()?;
        store.resume_definition_cleanups()?;
        Ok(store)
    }

    fn core(&self) -> &Core {
        &self.inner.core
    }

    /// The current revision: every write up to it is visible.
    #[must_use]
    pub fn revision(&self) -> Revision {
        Revision(self.core().visible.load(Ordering::SeqCst))
    }

    /// The store's current revision, linearizable: on a store shared by several processes
    /// (etcd) it first learns the others' commits, so it is at least the revision of every write
    /// completed anywhere before the call. Equal to [`Store::revision`] otherwise.
    ///
    /// # Errors
    /// [`Error::Etcd`] when etcd cannot be read.
    pub fn current_revision(&self) -> Result<Revision> {
        follow::latest(self.core()).map(Revision)
    }

    /// The compacted revision: history before it is gone (0: never compacted).
    #[must_use]
    pub fn compacted_revision(&self) -> Revision {
        Revision(self.core().compacted.load(Ordering::SeqCst))
    }

    /// The registered type (or served version) a resource name means; a version that cannot
    /// be served (its conversion needs a webhook) fails with its conversion error.
    fn resolve(&self, resource: &str) -> Result<Arc<Registered>> {
        let t = self.core().registry.read().resolve(resource)?;
        match &t.conversion_error {
            Some(e) => Err(Error::Conversion(e.clone())),
            None => Ok(t),
        }
    }

    /// [`Store::resolve`], or the retired type of a deleted CRD: the history verbs still read
    /// its objects' history.
    fn resolve_history(&self, resource: &str) -> Result<Arc<Registered>> {
        self.resolve(resource).or_else(|e| self.core().registry.read().retired(resource).ok_or(e))
    }
}

/// Registers, durably and in one batch, every built-in kind the store does not have yet, and
/// refreshes those registered from an older built-in table; a type registered under a built-in's
/// name with a schema of its own is left as it is.
fn register_builtins(kv: &dyn Kv, registry: &mut Registry) -> Result<()> {
    let mut batch = Batch::default();
    for spec in builtin::builtin_types() {
        let id = match registry.get(&spec.resource()) {
            Some(t) if t.spec == spec || !matches!(t.spec.schema, SchemaSource::Builtin { .. }) => continue,
            Some(t) => t.id,
            None => registry.next_id(),
        };
        let record = serde_json::to_vec(&spec).map_err(|e| Error::Corrupt(format!("type record: {e}")))?;
        batch.put(CF_TYPES, id.to_be_bytes().to_vec(), record);
        registry.insert(Registered::compile(id, spec)?);
    }
    if !batch.ops.is_empty() {
        kv.write(batch, true)?;
    }
    Ok(())
}

fn io_err(e: std::io::Error) -> Error {
    Error::Corrupt(format!("cannot start store thread: {e}"))
}
