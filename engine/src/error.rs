//! The engine crate's error type.

use crate::merge::Conflicts;

/// Everything that can go wrong in the engine, each mapped to a Kubernetes status reason by
/// [`Error::reason`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A schema document could not be loaded.
    #[error("invalid schema at {path}: {reason}")]
    Schema {
        /// Where in the schema document the problem is.
        path: String,
        /// What was wrong.
        reason: String,
    },
    /// The schema has no type of this name.
    #[error("schema has no type named {0:?}")]
    UnknownType(String),
    /// An object does not conform to its schema; every problem found is listed.
    #[error("{0}")]
    Invalid(crate::typed::ValidationErrors),
    /// An apply conflicted with other managers and was not forced.
    #[error("{0}")]
    Conflict(Conflicts),
    /// A request was malformed (missing manager, managedFields in an apply body, bad JSON, …).
    #[error("{0}")]
    BadRequest(String),
    /// A codec error (FieldsV1 decoding and the like).
    #[error(transparent)]
    Codec(#[from] fieldstore_codec::Error),
    /// A patch could not be applied or created.
    #[error("{kind} at {path}: {message}")]
    Patch {
        /// What kind of problem it is.
        kind: crate::patch::PatchErrorKind,
        /// Where: a field path (`.spec.containers[1]`) or, for JSON patches, a JSON pointer.
        path: String,
        /// What exactly went wrong.
        message: String,
    },
    /// The object (or resource type) does not exist.
    #[error("{resource} {name:?} not found")]
    NotFound {
        /// The resource (plural name, `group/plural` for groups) or `resource type`.
        resource: String,
        /// The object's name.
        name: String,
    },
    /// An object of that name already exists.
    #[error("{resource} {name:?} already exists")]
    AlreadyExists {
        /// The resource (plural name).
        resource: String,
        /// The object's name.
        name: String,
    },
    /// The write is refused by a rule of the kind or of its namespace (403 Forbidden): a
    /// namespace Kubernetes keeps cannot be deleted, nothing new goes into a namespace being
    /// deleted.
    #[error("{resource} {name:?} is forbidden: {message}")]
    Forbidden {
        /// The resource (plural name).
        resource: String,
        /// The object's name.
        name: String,
        /// Why.
        message: String,
        /// The cause Kubernetes names, when it does: (type, field, message).
        cause: Option<Box<(String, String, String)>>,
    },
    /// A write's precondition (resourceVersion or uid) does not hold: Kubernetes' "Operation
    /// cannot be fulfilled" 409 Conflict.
    #[error("Operation cannot be fulfilled on {resource} {name:?}: {message}")]
    Precondition {
        /// The resource (plural name).
        resource: String,
        /// The object's name.
        name: String,
        /// What did not hold.
        message: String,
    },
    /// A resourceVersion or continue token older than the compacted revision (410, reason
    /// `Expired`).
    #[error("{0}")]
    Expired(String),
    /// A continue token older than the compacted revision (410, reason `Expired`), answered as
    /// Kubernetes does: the Status carries, in `metadata.continue`, a token that reads the rest of
    /// the list at the current revision. Objects changed since the first page may show up in it.
    #[error("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk has been returned and now may show up in the list.")]
    InconsistentContinue {
        /// The token that continues the list at the current revision.
        continue_token: String,
    },
    /// A resourceVersion newer than the store has reached, after a bounded wait (504, reason
    /// `Timeout`).
    #[error("Too large resource version: {requested}, current: {current}")]
    TooLargeResourceVersion {
        /// The revision asked for.
        requested: u64,
        /// The store's revision.
        current: u64,
    },
    /// The object is larger than the store accepts (413).
    #[error("object is {size} bytes, larger than the limit of {limit} bytes")]
    TooLarge {
        /// The encoded size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// The storage layer failed.
    #[cfg(feature = "store")]
    #[error("storage: {0}")]
    Storage(#[from] rocksdb::Error),
    /// The etcd cluster under the store answered with an error, or not in time; a write that
    /// ends with `timeout` may still have been applied (as with Kubernetes' 504 on an etcd
    /// timeout): read the object again.
    #[cfg(feature = "store")]
    #[error("etcd: {message}")]
    Etcd {
        /// What etcd (or the connection to it) said.
        message: String,
        /// Whether the request ran out of time (504) rather than failed (500).
        timeout: bool,
    },
    /// The store's files are not in a format this version reads, or are damaged.
    #[error("corrupt store data: {0}")]
    Corrupt(String),
    /// An object cannot be converted to the version asked for (a CRD whose conversion needs a
    /// webhook, which the store does not call): 500, as kube-apiserver's conversion failures.
    #[error("{0}")]
    Conversion(String),
    /// The store was closed (its last handle dropped) while the request was under way.
    #[error("the store is closed")]
    Closed,
    /// An etcd API request etcd refuses (the message is etcd's).
    #[cfg(feature = "store")]
    #[error(transparent)]
    EtcdApi(#[from] EtcdApiError),
    /// The data directory is held by another process (a running `fieldstore serve`, say): one
    /// directory has one owner at a time.
    #[error("the data directory {dir} is in use by another process (a running `fieldstore serve`?)")]
    InUse {
        /// The data directory.
        dir: String,
    },
}

/// Kubernetes `Status` reason and HTTP code of an engine error, or of a request refused before
/// it reached the engine (authentication, authorization, limits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reason {
    /// 400 BadRequest.
    BadRequest,
    /// 409 Conflict.
    Conflict,
    /// 422 Invalid.
    Invalid,
    /// 500 InternalError.
    InternalError,
    /// 404 NotFound.
    NotFound,
    /// 409 AlreadyExists.
    AlreadyExists,
    /// 410 Expired (a resourceVersion older than the compacted revision).
    Expired,
    /// 504 Timeout.
    Timeout,
    /// 413 RequestEntityTooLarge.
    RequestEntityTooLarge,
    /// 401 Unauthorized: no credentials, or unknown ones.
    Unauthorized,
    /// 403 Forbidden: the authorization rules do not allow the request.
    Forbidden,
    /// 429 TooManyRequests: a limit on concurrent use (open watches) is reached.
    TooManyRequests,
}

impl Reason {
    /// The HTTP status code Kubernetes uses for this reason.
    pub fn code(self) -> u16 {
        match self {
            Reason::BadRequest => 400,
            Reason::Conflict => 409,
            Reason::Invalid => 422,
            Reason::InternalError => 500,
            Reason::NotFound => 404,
            Reason::AlreadyExists => 409,
            Reason::Expired => 410,
            Reason::Timeout => 504,
            Reason::RequestEntityTooLarge => 413,
            Reason::Unauthorized => 401,
            Reason::Forbidden => 403,
            Reason::TooManyRequests => 429,
        }
    }

    /// The reason as Kubernetes spells it in a `Status`.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::BadRequest => "BadRequest",
            Reason::Conflict => "Conflict",
            Reason::Invalid => "Invalid",
            Reason::InternalError => "InternalError",
            Reason::NotFound => "NotFound",
            Reason::AlreadyExists => "AlreadyExists",
            Reason::Expired => "Expired",
            Reason::Timeout => "Timeout",
            Reason::RequestEntityTooLarge => "RequestEntityTooLarge",
            Reason::Unauthorized => "Unauthorized",
            Reason::Forbidden => "Forbidden",
            Reason::TooManyRequests => "TooManyRequests",
        }
    }
}

impl Error {
    /// The Kubernetes status reason of this error.
    pub fn reason(&self) -> Reason {
        match self {
            Error::Schema { .. } | Error::UnknownType(_) => Reason::InternalError,
            Error::Invalid(_) => Reason::Invalid,
            Error::Conflict(_) => Reason::Conflict,
            Error::BadRequest(_) | Error::Codec(_) => Reason::BadRequest,
            Error::Patch { kind, .. } => kind.reason(),
            Error::NotFound { .. } => Reason::NotFound,
            Error::AlreadyExists { .. } => Reason::AlreadyExists,
            Error::Precondition { .. } => Reason::Conflict,
            Error::Forbidden { .. } => Reason::Forbidden,
            Error::Expired(_) | Error::InconsistentContinue { .. } => Reason::Expired,
            Error::TooLargeResourceVersion { .. } => Reason::Timeout,
            Error::TooLarge { .. } => Reason::RequestEntityTooLarge,
            #[cfg(feature = "store")]
            Error::Storage(_) => Reason::InternalError,
            #[cfg(feature = "store")]
            Error::Etcd { timeout, .. } => {
                if *timeout {
                    Reason::Timeout
                } else {
                    Reason::InternalError
                }
            }
            #[cfg(feature = "store")]
            Error::EtcdApi(e) => match e {
                EtcdApiError::LeaseNotFound => Reason::NotFound,
                EtcdApiError::LeaseExists => Reason::AlreadyExists,
                EtcdApiError::Compacted => Reason::Expired,
                EtcdApiError::Unsupported => Reason::InternalError,
                _ => Reason::BadRequest,
            },
            Error::Corrupt(_) | Error::Closed | Error::InUse { .. } | Error::Conversion(_) => Reason::InternalError,
        }
    }
}

/// A request of the etcd API that etcd refuses; the message is etcd's, word for word (its
/// gRPC code is the door's to choose: `server/src/etcd_api/`).
#[cfg(feature = "store")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EtcdApiError {
    /// A read or watch before the compacted revision, or a compaction not after it.
    #[error("etcdserver: mvcc: required revision has been compacted")]
    Compacted,
    /// A read at, or compaction to, a revision after the current one.
    #[error("etcdserver: mvcc: required revision is a future revision")]
    FutureRevision,
    /// An empty key.
    #[error("etcdserver: key is not provided")]
    EmptyKey,
    /// `ignore_value` or `ignore_lease` on a key that does not exist.
    #[error("etcdserver: key not found")]
    KeyNotFound,
    /// `ignore_value` with a value.
    #[error("etcdserver: value is provided")]
    ValueProvided,
    /// `ignore_lease` with a lease.
    #[error("etcdserver: lease is provided")]
    LeaseProvided,
    /// More operations than `--max-txn-ops` in a branch.
    #[error("etcdserver: too many operations in txn request")]
    TooManyOps,
    /// A key put twice in one branch.
    #[error("etcdserver: duplicate key given in txn request")]
    DuplicateKey,
    /// An unknown lease.
    #[error("etcdserver: requested lease not found")]
    LeaseNotFound,
    /// A grant of an id in use.
    #[error("etcdserver: lease already exists")]
    LeaseExists,
    /// A TTL above etcd's maximum.
    #[error("etcdserver: too large lease TTL")]
    LeaseTtlTooLarge,
    /// The store is on the etcd backend, which does not serve the etcd API.
    #[error("etcdserver: the etcd API is served only by a store on RocksDB")]
    Unsupported,
}

/// Result type of the engine crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
