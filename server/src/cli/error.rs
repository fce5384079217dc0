//! Why a CLI command fails: [`CliError`], whose `Display` text is the message printed after
//! `error: `, and the [`Result`] every command returns.

use std::io;

/// Why a command failed; the `Display` text is the message printed after `error: `.
#[derive(Debug, thiserror::Error)]
pub(super) enum CliError {
    /// stdin could not be read.
    #[error("reading stdin: {0}")]
    ReadInput(#[source] io::Error),
    /// stdout could not be written.
    #[error("writing stdout: {0}")]
    WriteOutput(#[source] io::Error),
    /// The input is not valid JSON where JSON is expected.
    #[error("input is not valid JSON: {0}")]
    InputJson(#[source] serde_json::Error),
    /// The input is not valid in the format a codec expects.
    #[error(transparent)]
    Codec(#[from] fieldstore_codec::Error),
    /// A replay scenario is unusable as a whole; printed as the oracle prints it.
    #[error("{0}")]
    ReplayFatal(String),
    /// An engine operation failed (a patch, a schema, a store verb).
    #[error(transparent)]
    Engine(#[from] fieldstore_engine::Error),
    /// A file could not be read.
    #[error("reading {path}: {source}")]
    ReadFile {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The command line or an input file is unusable as given.
    #[error("{0}")]
    Usage(String),
    /// `fieldstore import`: the store refused an object read from etcd (or failed writing it).
    #[error("importing {key}: {} ({}): {source}", .source.reason().as_str(), .source.reason().code())]
    ImportRefused {
        /// The object's etcd key.
        key: String,
        /// Why.
        #[source]
        source: fieldstore_engine::Error,
    },
    /// A server refused a request: its Kubernetes `Status`.
    #[error("{}", .0.get("message").and_then(serde_json::Value::as_str).unwrap_or("request failed"))]
    Api(serde_json::Value),
}

/// The outcome of a command, or of one of its steps.
pub(super) type Result<T, E = CliError> = std::result::Result<T, E>;
