//! The codec crate's error type.

/// Everything that can go wrong while decoding or encoding a fieldstore data format.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A FieldsV1 JSON document could not be decoded.
    #[error("invalid FieldsV1 JSON at {path}: {reason}")]
    FieldsV1Json {
        /// Where in the set the problem is, as a path of already-decoded elements.
        path: String,
        /// What was wrong.
        reason: String,
    },
    /// A path element key (`f:`, `k:`, `v:`, `i:`) could not be decoded.
    #[error("invalid path element {key:?}: {reason}")]
    PathElement {
        /// The serialized key as found.
        key: String,
        /// What was wrong.
        reason: String,
    },
    /// A binary FieldsV1 document could not be decoded.
    #[error("invalid binary FieldsV1 at byte {offset}: {reason}")]
    FieldsBinary {
        /// Byte offset in the input where decoding failed.
        offset: usize,
        /// What was wrong.
        reason: String,
    },
    /// A `k8s\x00` protobuf envelope could not be decoded.
    #[error("invalid protobuf envelope: {reason}")]
    Envelope {
        /// What was wrong.
        reason: String,
    },
    /// A managedFields entry is malformed.
    #[error("invalid managedFields entry: {reason}")]
    ManagedFields {
        /// What was wrong.
        reason: String,
    },
    /// JSON (de)serialisation failed.
    #[error("JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// Result type of the codec crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
