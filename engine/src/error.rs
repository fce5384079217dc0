//! The engine crate's error type.

use crate::merge::Conflicts;

/// Everything that can go wrong in the engine, each mapped to a Kubernetes status reason by
/// [`Error::reason`].
#[derive(Debug, thiserror::Error)]
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
}

/// Kubernetes `Status` reason and HTTP code of an engine error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// 400 BadRequest.
    BadRequest,
    /// 409 Conflict.
    Conflict,
    /// 422 Invalid.
    Invalid,
    /// 500 InternalError.
    InternalError,
}

impl Reason {
    /// The HTTP status code Kubernetes uses for this reason.
    pub fn code(self) -> u16 {
        match self {
            Reason::BadRequest => 400,
            Reason::Conflict => 409,
            Reason::Invalid => 422,
            Reason::InternalError => 500,
        }
    }

    /// The reason as Kubernetes spells it in a `Status`.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::BadRequest => "BadRequest",
            Reason::Conflict => "Conflict",
            Reason::Invalid => "Invalid",
            Reason::InternalError => "InternalError",
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
        }
    }
}

/// Result type of the engine crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
