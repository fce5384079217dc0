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
    /// Kubernetes protobuf that does not decode as the message it should hold (truncated, a wrong
    /// wire type, a value Go's marshallers reject such as an impossible `IntOrString` type).
    #[error("invalid Kubernetes protobuf for {message} at {path}: {reason}")]
    K8sProtobuf {
        /// The protobuf message being decoded, e.g. `k8s.io.api.core.v1.Pod`.
        message: String,
        /// Where in the object, as a JSON path: `.spec.containers[0].ports[1].containerPort`.
        path: String,
        /// What was wrong.
        reason: String,
    },
    /// Kubernetes JSON that does not fit its kind's schema (a string where a number belongs, a
    /// malformed time or quantity, invalid JSON text).
    #[error("invalid Kubernetes JSON for {message} at {path}: {reason}")]
    K8sJson {
        /// The protobuf message being encoded, e.g. `k8s.io.api.core.v1.Pod`.
        message: String,
        /// Where in the object, as a JSON path: `.spec.containers[0].ports[1].containerPort`.
        path: String,
        /// What was wrong.
        reason: String,
    },
    /// The apiVersion and kind name no built-in Kubernetes type with a protobuf encoding (a custom
    /// resource, or a group this crate has no protos for): keep such objects as JSON.
    #[error("kind {kind:?} of apiVersion {api_version:?} is not a built-in Kubernetes type with a protobuf encoding")]
    NotBuiltIn {
        /// The object's apiVersion (empty if it had none).
        api_version: String,
        /// The object's kind (empty if it had none).
        kind: String,
    },
    /// A JSON or YAML document could not be read ([`crate::document`]).
    #[error("invalid {syntax}: {reason}")]
    Document {
        /// `JSON` or `YAML`.
        syntax: &'static str,
        /// Whether the document nests deeper than the limit.
        nesting: bool,
        /// What was wrong.
        reason: String,
    },
    /// JSON (de)serialisation failed.
    #[error("JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// Result type of the codec crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
