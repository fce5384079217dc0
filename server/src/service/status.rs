//! Engine errors as gRPC statuses, in one place: the code from the Kubernetes reason, the
//! message, and the Kubernetes `Status` object (JSON) in the status details.

use fieldstore_engine::{Error, Reason};
use tonic::{Code, Status};

/// The gRPC status of an engine error; `details` holds the Kubernetes `Status` as JSON.
pub fn to_grpc(err: &Error) -> Status {
    let k8s = err.to_status();
    let code = Code::from_i32(err.reason().grpc_code());
    let details = serde_json::to_vec(&k8s).unwrap_or_default();
    Status::with_details(code, err.to_string(), details.into())
}

/// Engine results as gRPC results: `.grpc()?` rather than `.map_err(|e| to_grpc(&e))?`.
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

/// A request refused before reaching the store (authentication, authorization, limits), with a
/// Kubernetes `Status` in the details like every other error.
pub fn refused(reason: Reason, message: String) -> Status {
    let k8s = fieldstore_engine::Status::failure(reason, message.clone());
    Status::with_details(Code::from_i32(reason.grpc_code()), message, serde_json::to_vec(&k8s).unwrap_or_default().into())
}

/// The Kubernetes `Status` a gRPC status carries (for clients), when it has one.
pub fn k8s_status(status: &Status) -> Option<serde_json::Value> {
    serde_json::from_slice(status.details()).ok()
}
