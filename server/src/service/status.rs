//! Failures as gRPC statuses, in one place: the gRPC code from the Kubernetes reason, the
//! message, and the Kubernetes `Status` object (JSON) in the status details.

use fieldstore_engine::{Error, Reason};
use tonic::{Code, Status};

/// The gRPC status of a Kubernetes `Status`; `details` holds it as JSON.
pub fn from_k8s(k8s: &fieldstore_engine::Status) -> Status {
    let details = serde_json::to_vec(k8s).unwrap_or_default();
    Status::with_details(grpc_code(k8s), k8s.message.clone(), details.into())
}

/// The gRPC code of a Kubernetes `Status`, by its reason (or, for reasons the engine does not
/// produce, its HTTP code).
fn grpc_code(k8s: &fieldstore_engine::Status) -> Code {
    const REASONS: [Reason; 12] = [
        Reason::BadRequest,
        Reason::Conflict,
        Reason::Invalid,
        Reason::InternalError,
        Reason::NotFound,
        Reason::AlreadyExists,
        Reason::Expired,
        Reason::Timeout,
        Reason::RequestEntityTooLarge,
        Reason::Unauthorized,
        Reason::Forbidden,
        Reason::TooManyRequests,
    ];
    match REASONS.iter().find(|r| r.as_str() == k8s.reason) {
        Some(r) => Code::from_i32(r.grpc_code()),
        None if k8s.code < 500 => Code::InvalidArgument,
        None => Code::Internal,
    }
}

/// The gRPC status of an engine error ([`from_k8s`] of its `Status`).
pub fn to_grpc(err: &Error) -> Status {
    from_k8s(&fieldstore_engine::Status::from(err))
}

/// Engine and request-layer results as gRPC results: `.grpc()?` rather than mapping the error.
pub trait IntoGrpc<T> {
    /// The result, with an engine error turned into its gRPC status ([`to_grpc`]).
    ///
    /// # Errors
    /// The engine error's gRPC status.
    fn grpc(self) -> Result<T, Status>;
}

impl<T> IntoGrpc<T> for Result<T, Error> {
    fn grpc(self) -> Result<T, Status> {
        self.map_err(|e| to_grpc(&e))
    }
}

impl<T> IntoGrpc<T> for Result<T, fieldstore_engine::Status> {
    fn grpc(self) -> Result<T, Status> {
        self.map_err(|s| from_k8s(&s))
    }
}

/// The Kubernetes `Status` a gRPC status carries (for clients), when it has one.
pub fn k8s_status(status: &Status) -> Option<serde_json::Value> {
    serde_json::from_slice(status.details()).ok()
}
