//! Kubernetes `metav1.Status`, typed: every answer that is not an object (failures, and the
//! success of a delete) is built here, and an engine error becomes one in one function
//! ([`Status::from`]`(&Error)`). Serialised exactly as `metav1.Status`: a cause's type under
//! `reason` (its Go JSON tag), `details` with `name`, `group`, `kind`, `uid`, `causes`,
//! `retryAfterSeconds`, empty fields left out as Go's `omitempty` leaves them.

use crate::{Error, Reason};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A Kubernetes `metav1.Status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// Always `Status`.
    pub kind: String,
    /// Always `v1`.
    pub api_version: String,
    /// `continue` of an inconsistent list; otherwise empty (`{}`).
    pub metadata: StatusMeta,
    /// `Success` or `Failure`.
    pub status: String,
    /// What happened, for people.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Why, for machines (`NotFound`, `Conflict`, …; empty for a success).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// The object it is about, and the causes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<StatusDetails>,
    /// The HTTP status code (0, left out, for a success without one).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub code: u16,
}

fn is_zero(c: &u16) -> bool {
    *c == 0
}

/// `metav1.ListMeta` of a Status: only `continue` is ever set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StatusMeta {
    /// The continue token of the list that failed (an inconsistent continue, 410).
    #[serde(rename = "continue", default, skip_serializing_if = "Option::is_none")]
    pub continue_token: Option<String>,
}

/// `metav1.StatusDetails`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusDetails {
    /// The object's name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The object's API group.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// The object's kind (Kubernetes puts the resource's plural here for most errors).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// The object's uid.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// Each problem, with the field it is at.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<StatusCause>,
    /// When to try again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_seconds: Option<i32>,
}

/// `metav1.StatusCause`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatusCause {
    /// The cause's type (`FieldValueInvalid`, `FieldManagerConflict`, …): `reason` in JSON, as
    /// Go's tag has it (client-go's `HasStatusCause` reads it there).
    #[serde(rename = "reason", default, skip_serializing_if = "String::is_empty")]
    pub cause_type: String,
    /// What is wrong.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Where (`.spec.replicas`, `metadata.name`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub field: String,
    /// Beyond Kubernetes (clients ignore unknown keys): a conflict's live value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live: Option<Value>,
    /// Beyond Kubernetes: a conflict's applied value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied: Option<Value>,
}

impl StatusCause {
    fn new(cause_type: &str, message: impl Into<String>, field: impl Into<String>) -> Self {
        StatusCause { cause_type: cause_type.into(), message: message.into(), field: field.into(), live: None, applied: None }
    }
}

impl Status {
    /// A failure of an engine [`Reason`] (its HTTP code).
    pub fn failure(reason: Reason, message: impl Into<String>) -> Self {
        Status::failure_with_code(reason.code(), reason.as_str(), message)
    }

    /// A failure of a code and reason the engine does not produce (405, 406, 415, a client's
    /// view of a transport error).
    pub fn failure_with_code(code: u16, reason: &str, message: impl Into<String>) -> Self {
        Status {
            kind: "Status".into(),
            api_version: "v1".into(),
            metadata: StatusMeta::default(),
            status: "Failure".into(),
            message: message.into(),
            reason: reason.into(),
            details: None,
            code,
        }
    }

    /// A success naming what it was about (a deletion that is done).
    pub fn success(details: StatusDetails) -> Self {
        Status { status: "Success".into(), reason: String::new(), details: Some(details), ..Status::failure_with_code(0, "", "") }
    }

    /// This Status as JSON.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

impl From<&Error> for Status {
    /// The error's Status (`Failure`), with the reason and HTTP code of [`Error::reason`]. Apply
    /// conflicts carry one `FieldManagerConflict` cause per conflicting field naming its manager
    /// (and, beyond Kubernetes, the `live` and `applied` values when known); validation errors
    /// one cause per problem (`FieldValueInvalid`, `FieldValueRequired`, … after its message's
    /// first words, as apimachinery's field errors); not-found, already-exists and precondition
    /// errors name the object in `details`.
    fn from(e: &Error) -> Self {
        let mut status = Status::failure(e.reason(), e.to_string());
        let mut details = StatusDetails::default();
        match e {
            Error::Conflict(conflicts) => {
                for c in &conflicts.0 {
                    let mut cause = StatusCause::new(
                        "FieldManagerConflict",
                        format!("conflict with {}", crate::merge::conflicts::display_manager(&c.manager)),
                        c.path.to_string(),
                    );
                    cause.live.clone_from(&c.live);
                    cause.applied.clone_from(&c.applied);
                    details.causes.push(cause);
                }
            }
            Error::Invalid(errors) => {
                details.causes.extend(errors.0.iter().map(|e| StatusCause::new(cause_type(&e.message), e.message.clone(), e.path.clone())));
            }
            Error::Patch { path, message, .. } => details.causes.push(StatusCause::new("FieldValueInvalid", message.clone(), path.clone())),
            Error::NotFound { resource, name } | Error::AlreadyExists { resource, name } | Error::Precondition { resource, name, .. } => {
                let (kind, group) = resource.split_once('.').unwrap_or((resource.as_str(), ""));
                details.name.clone_from(name);
                details.group = group.into();
                details.kind = kind.into();
            }
            Error::Forbidden { resource, name, cause, .. } => {
                let (kind, group) = resource.split_once('.').unwrap_or((resource.as_str(), ""));
                details.name.clone_from(name);
                details.group = group.into();
                details.kind = kind.into();
                if let Some(cause) = cause {
                    let (cause_type, field, message) = &**cause;
                    details.causes.push(StatusCause::new(cause_type, message.clone(), field.clone()));
                }
            }
            Error::InconsistentContinue { continue_token } => status.metadata.continue_token = Some(continue_token.clone()),
            _ => {}
        }
        if details != StatusDetails::default() {
            status.details = Some(details);
        }
        status
    }
}

/// The cause type of a validation message, from the words apimachinery's `field.Error` starts
/// it with (`Forbidden: …` is `FieldValueForbidden`); `FieldValueInvalid` otherwise.
#[must_use]
pub fn cause_type(message: &str) -> &'static str {
    const TYPES: [(&str, &str); 8] = [
        ("Required value", "FieldValueRequired"),
        ("Not found", "FieldValueNotFound"),
        ("Duplicate value", "FieldValueDuplicate"),
        ("Unsupported value", "FieldValueNotSupported"),
        ("Forbidden", "FieldValueForbidden"),
        ("Too long", "FieldValueTooLong"),
        ("Too many", "FieldValueTooMany"),
        ("Internal error", "InternalError"),
    ];
    // kube-openapi's type errors (a custom resource's value of the wrong type or format) are
    // `field.TypeInvalid`: worded as `Invalid value`, typed `FieldValueTypeInvalid`.
    if message.starts_with("Invalid value") && message.contains(" in body must be of type ") {
        return "FieldValueTypeInvalid";
    }
    TYPES.iter().find(|(words, _)| message.starts_with(words)).map_or("FieldValueInvalid", |(_, t)| t)
}

impl Error {
    /// This error as a Kubernetes `Status` in JSON ([`Status::from`]).
    pub fn to_status(&self) -> Value {
        Status::from(self).to_value()
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
    use serde_json::json;

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
    fn statuses_serialise_as_metav1_status() {
        let s = Status::failure(Reason::Invalid, "bad");
        assert_eq!(
            s.to_value(),
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": "bad", "reason": "Invalid", "code": 422})
        );
        let ok =
            Status::success(StatusDetails { name: "a".into(), kind: "configmaps".into(), uid: "u".into(), ..StatusDetails::default() });
        assert_eq!(
            ok.to_value(),
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": {"name": "a", "kind": "configmaps", "uid": "u"}})
        );
        let back: Status = serde_json::from_value(Error::Expired("gone".into()).to_status()).unwrap();
        assert_eq!((back.code, back.reason.as_str()), (410, "Expired"));
        let e = Error::InconsistentContinue { continue_token: "t".into() }.to_status();
        assert_eq!(e["metadata"], json!({"continue": "t"}));
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
