//! Errors as Kubernetes `Status` objects: the one place an engine error becomes what API
//! clients read (reason, code, message, and `details.causes` naming field paths).

use crate::{Error, Reason};
use serde_json::{json, Map, Value};

impl Error {
    /// This error as a Kubernetes `Status` (`kind: Status`, `status: Failure`), with the
    /// reason and HTTP code of [`Error::reason`]. Apply conflicts carry one
    /// `FieldManagerConflict` cause per conflicting field naming its manager (and, beyond
    /// Kubernetes, the `live` and `applied` values when known); validation errors
    /// one `FieldValueInvalid` cause per problem; not-found and already-exists errors name the
    /// object in `details`.
    pub fn to_status(&self) -> Value {
        let reason = self.reason();
        let mut details = Map::new();
        let mut causes = Vec::new();
        match self {
            Error::Conflict(conflicts) => {
                for c in &conflicts.0 {
                    let mut cause = json!({
                        "reason": "FieldManagerConflict",
                        "message": format!("conflict with {}", crate::merge::conflicts::display_manager(&c.manager)),
                        "field": c.path.to_string(),
                    });
                    // Beyond Kubernetes (clients ignore unknown keys): the values in conflict.
                    if let Some(v) = &c.live {
                        cause["live"] = v.clone();
                    }
                    if let Some(v) = &c.applied {
                        cause["applied"] = v.clone();
                    }
                    causes.push(cause);
                }
            }
            Error::Invalid(errors) => {
                for e in &errors.0 {
                    causes.push(json!({ "reason": "FieldValueInvalid", "message": e.message, "field": e.path }));
                }
            }
            Error::Patch { path, message, .. } => {
                causes.push(json!({ "reason": "FieldValueInvalid", "message": message, "field": path }));
            }
            Error::NotFound { resource, name } | Error::AlreadyExists { resource, name } | Error::Precondition { resource, name, .. } => {
                let (kind, group) = resource.split_once('.').unwrap_or((resource.as_str(), ""));
                if !name.is_empty() {
                    details.insert("name".into(), Value::String(name.clone()));
                }
                if !group.is_empty() {
                    details.insert("group".into(), Value::String(group.into()));
                }
                details.insert("kind".into(), Value::String(kind.into()));
            }
            _ => {}
        }
        if !causes.is_empty() {
            details.insert("causes".into(), Value::Array(causes));
        }
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.to_string(),
            "reason": reason.as_str(),
            "code": reason.code(),
        });
        if !details.is_empty() {
            status["details"] = Value::Object(details);
        }
        if let Error::InconsistentContinue { continue_token } = self {
            status["metadata"] = json!({ "continue": continue_token });
        }
        status
    }
}

impl Reason {
    /// The gRPC status code that best carries this reason (as the Kubernetes-to-gRPC
    /// conventions map HTTP codes): NotFound, AlreadyExists, Aborted for conflicts,
    /// InvalidArgument for bad and invalid requests, FailedPrecondition for expired
    /// resourceVersions, DeadlineExceeded for timeouts, ResourceExhausted for oversized
    /// requests, Internal otherwise. The numbers are gRPC's (`google.rpc.Code`).
    pub fn grpc_code(self) -> i32 {
        match self {
            Reason::BadRequest | Reason::Invalid => 3,
            Reason::Timeout => 4,
            Reason::NotFound => 5,
            Reason::AlreadyExists => 6,
            Reason::RequestEntityTooLarge => 8,
            Reason::Expired => 9,
            Reason::Conflict => 10,
            Reason::InternalError => 13,
            Reason::Unauthorized => 16,
            Reason::Forbidden => 7,
            Reason::TooManyRequests => 8,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::{Conflict, Conflicts, ManagerKey, Operation};
    use fieldstore_codec::{Path, PathElement};

    #[test]
    fn conflict_status_names_each_field_and_manager() {
        let path = Path::from(vec![PathElement::FieldName("spec".into()), PathElement::FieldName("replicas".into())]);
        let manager =
            ManagerKey { manager: "hpa".into(), operation: Operation::Update, api_version: "apps/v1".into(), subresource: String::new() };
        let err = Error::Conflict(Conflicts(vec![Conflict { manager, path, live: Some(json!(3)), applied: Some(json!(5)) }]));
        let s = err.to_status();
        assert_eq!(s["code"], 409);
        assert_eq!(s["reason"], "Conflict");
        assert_eq!(s["details"]["causes"][0]["field"], ".spec.replicas");
        assert_eq!(s["details"]["causes"][0]["message"], "conflict with \"hpa\" using apps/v1");
        assert_eq!(s["details"]["causes"][0]["reason"], "FieldManagerConflict");
        assert_eq!((&s["details"]["causes"][0]["live"], &s["details"]["causes"][0]["applied"]), (&json!(3), &json!(5)));
    }

    #[test]
    fn not_found_status_names_the_object() {
        let s = Error::NotFound { resource: "deployments.apps".into(), name: "web".into() }.to_status();
        assert_eq!(s["code"], 404);
        assert_eq!(s["details"], json!({"name": "web", "group": "apps", "kind": "deployments"}));
        assert_eq!(s["status"], "Failure");
        let core = Error::NotFound { resource: "configmaps".into(), name: "a".into() }.to_status();
        assert_eq!(core["details"], json!({"name": "a", "kind": "configmaps"}));
    }
}
