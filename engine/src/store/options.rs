//! Options: of the store ([`Options`], with every default), of each verb, and the write verbs.

use std::time::Duration;

/// etcd's default request size limit, which Kubernetes objects inherit: 1.5 MiB.
pub const DEFAULT_MAX_OBJECT_BYTES: usize = 1536 * 1024;
/// Default budget of the decoded-object cache, in bytes of decoded objects: 64 MiB.
pub const DEFAULT_OBJECT_CACHE_BYTES: usize = 64 << 20;
/// Records from this size up (64 KiB) are large: their decoded object is cached after every
/// write, a create included, and weighed by walking it; smaller ones are cached once written over
/// (an update, patch or apply, or a write that changed nothing: the objects controllers write
/// again), weighed at a bound per record byte.
pub const OBJECT_CACHE_LARGE_BYTES: usize = 64 << 10;
/// Default deepest nesting of objects and arrays accepted in an object.
pub const DEFAULT_MAX_DEPTH: usize = 100;
/// The default bound on what a JSON patch may make: 3 MiB of JSON, `fieldstore serve`'s default
/// request body limit.
pub const DEFAULT_MAX_PATCH_BYTES: usize = 3 << 20;

/// Store options; every default is documented on its builder.
#[derive(Debug, Clone)]
pub struct Options {
    pub(super) sync: bool,
    pub(super) max_object_bytes: usize,
    pub(super) max_depth: usize,
    pub(super) max_patch_bytes: usize,
    pub(super) watch_buffer: usize,
    pub(super) bookmark_interval: Duration,
    pub(super) future_revision_wait: Duration,
    pub(super) retention: Option<Duration>,
    pub(super) keep_revisions: Option<u64>,
    pub(super) compaction_interval: Duration,
    pub(super) owner_index: bool,
    pub(super) object_cache_bytes: usize,
    pub(super) builtin_types: bool,
    pub(super) protobuf_storage: bool,
    pub(super) namespace_lifecycle: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            sync: true,
            max_object_bytes: DEFAULT_MAX_OBJECT_BYTES,
            max_depth: DEFAULT_MAX_DEPTH,
            max_patch_bytes: DEFAULT_MAX_PATCH_BYTES,
            watch_buffer: 1024,
            bookmark_interval: Duration::from_secs(1),
            future_revision_wait: Duration::from_secs(3),
            retention: Some(Duration::from_secs(300)),
            keep_revisions: None,
            compaction_interval: Duration::from_secs(30),
            owner_index: true,
            object_cache_bytes: DEFAULT_OBJECT_CACHE_BYTES,
            builtin_types: true,
            protobuf_storage: false,
            namespace_lifecycle: false,
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

    /// Largest document a JSON patch may make, in bytes of JSON (default
    /// [`DEFAULT_MAX_PATCH_BYTES`]; a server sets its request body limit): `copy` operations
    /// that would grow the document past it are refused (413) before they run.
    #[must_use]
    pub fn max_patch_bytes(mut self, bytes: usize) -> Self {
        self.max_patch_bytes = bytes;
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
    /// [`Error::TooLargeResourceVersion`](crate::Error::TooLargeResourceVersion) (default 3 s, as the apiserver).
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

    /// How many bytes of memory the decoded latest versions of objects may take, kept after a
    /// write so that the next write or read of such an object does not parse it again (which
    /// objects: [`OBJECT_CACHE_LARGE_BYTES`]; default [`DEFAULT_OBJECT_CACHE_BYTES`]; 0 turns it
    /// off). A decoded object takes 6 to 25 times its record's bytes (counted for large
    /// objects, `store::cache::decoded_bytes`; bounded at 32 times for small ones).
    #[must_use]
    pub fn object_cache(mut self, bytes: usize) -> Self {
        self.object_cache_bytes = bytes;
        self
    }

    /// Whether the built-in Kubernetes kinds (every kind of core/v1, apps/v1, batch/v1, rbac/v1,
    /// networking/v1, coordination/v1, policy/v1, discovery/v1, autoscaling/v2 and
    /// apiextensions/v1, with Kubernetes' schemas) are registered when the store opens (default
    /// on). A type registered under a built-in's name with a schema of its own keeps it.
    #[must_use]
    pub fn builtin_types(mut self, on: bool) -> Self {
        self.builtin_types = on;
        self
    }

    /// Whether objects of built-in kinds are stored in their Kubernetes protobuf encoding (the
    /// `k8s\x00` envelope kube-apiserver writes to etcd) instead of JSON. Default off: reads of
    /// JSON records are cheaper (a list serves stored JSON text without parsing it), protobuf
    /// records are about half the size (`engine/STORAGE.md`, "Protobuf records", has the
    /// numbers). Either way an object reads back exactly as written: one the protobuf encoding
    /// would change (unknown fields, `null`s, non-canonical quantities) keeps a JSON body. Records
    /// of both kinds can share a store, so the option may change between opens.
    #[must_use]
    pub fn protobuf_storage(mut self, on: bool) -> Self {
        self.protobuf_storage = on;
        self
    }

    /// Whether namespaces govern their contents as kube-apiserver's namespace lifecycle does
    /// (default off; `fieldstore serve` turns it on): an object is created only in a namespace
    /// that exists (404 NotFound naming the namespace) and is not being deleted (403 Forbidden,
    /// cause `NamespaceTerminating`); `default`, `kube-system` and `kube-public` cannot be deleted
    /// (403); deleting a namespace makes it `Terminating`, deletes its contents, and removes it
    /// once they are gone (what kube-controller-manager's namespace controller does). Only with
    /// the built-in Namespace kind registered.
    #[must_use]
    pub fn namespace_lifecycle(mut self, on: bool) -> Self {
        self.namespace_lifecycle = on;
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
    /// What to do with fields the type's schema does not declare; `None`: refuse the write
    /// as the schema's validation does (422 Invalid, naming the first such field).
    pub field_validation: Option<FieldValidation>,
}

/// How a write treats fields its type's schema does not declare, as kube-apiserver's
/// `fieldValidation` query parameter says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldValidation {
    /// Drop them silently.
    Ignore,
    /// Drop them, with a warning each (`unknown field "spec.x"`).
    Warn,
    /// Refuse the write (400, `strict decoding error: unknown field "spec.x", …`).
    Strict,
}

impl FieldValidation {
    /// The mode a `fieldValidation` value names (`Ignore`, `Warn`, `Strict`).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "Ignore" => Some(FieldValidation::Ignore),
            "Warn" => Some(FieldValidation::Warn),
            "Strict" => Some(FieldValidation::Strict),
            _ => None,
        }
    }
}

/// What a write answers: the object as stored (or as it would be, for a dry run) and the
/// warnings a client is shown (fields dropped under [`FieldValidation::Warn`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    /// The object, shared with the store's cache and watch events (so that a write's answer
    /// is not a copy of what it wrote; `Arc::unwrap_or_clone` gives a value of one's own).
    pub object: std::sync::Arc<serde_json::Value>,
    /// Warnings, in the order found.
    pub warnings: Vec<String>,
    /// Whether the write created the object (a create, or an apply of an absent object): HTTP
    /// answers 201 Created then, as kube-apiserver does, and 200 otherwise.
    pub created: bool,
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

    /// Treats undeclared fields as `mode` says ([`WriteOptions::field_validation`]).
    #[must_use]
    pub fn field_validation(mut self, mode: Option<FieldValidation>) -> Self {
        self.field_validation = mode;
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

/// How a list's or get's `resourceVersion` is matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceVersionMatch {
    /// Data at least as new as the resourceVersion (served at the current revision).
    NotOlderThan,
    /// Data exactly at the resourceVersion.
    Exact,
}

/// Options of a list (and of delete-collection).
#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    /// Label selector: `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`, joined by
    /// commas.
    pub label_selector: Option<String>,
    /// Field selector on `metadata.name` and `metadata.namespace` (`=`, `==`, `!=`).
    pub field_selector: Option<String>,
    /// At most this many items per page.
    pub limit: Option<usize>,
    /// The continue token of the previous page.
    pub continue_token: Option<String>,
    /// Unset: the most recent data; `"0"`: any; `N`: see [`ResourceVersionMatch`] (with a limit
    /// and no match given, exactly `N`, as Kubernetes).
    pub resource_version: Option<String>,
    /// How `resource_version` is matched.
    pub resource_version_match: Option<ResourceVersionMatch>,
}

/// Which write an object body makes: one name for the engine, the gRPC service and the CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WriteVerb {
    /// Create a new object ([`Store::create`](super::Store::create)).
    Create,
    /// Replace an existing object ([`Store::update`](super::Store::update)).
    Update,
    /// Server-side apply ([`Store::apply`](super::Store::apply)).
    Apply,
}

impl WriteVerb {
    /// The verb as Kubernetes' authorization names it: `create`, `update` or `apply`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            WriteVerb::Create => "create",
            WriteVerb::Update => "update",
            WriteVerb::Apply => "apply",
        }
    }
}
