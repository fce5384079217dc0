//! Answers of the HTTP API: objects as JSON (or protobuf), and every failure as a Kubernetes
//! `metav1.Status` with the HTTP code Kubernetes uses.

use crate::api::body::Body as Encoded;
use axum::body::Body;
use axum::response::{IntoResponse, Response};
use fieldstore_engine::{Error, Reason};
use http::{header, HeaderValue, StatusCode};
use serde_json::Value;

/// A refused or failed request: the `Status` object it answers with, or (the second field)
/// kube-apiserver's plain `404 page not found` for a path no API serves.
#[derive(Debug)]
pub(crate) struct Failure(pub(crate) Value, bool);

impl Failure {
    /// A failure with an engine [`Reason`].
    pub(crate) fn new(reason: Reason, message: impl Into<String>) -> Self {
        Failure::with_code(reason.code(), reason.as_str(), message)
    }

    /// A failure with a code and reason the engine does not produce (405, 406, 415).
    pub(crate) fn with_code(code: u16, reason: &str, message: impl Into<String>) -> Self {
        Failure(fieldstore_engine::Status::failure_with_code(code, reason, message).to_value(), false)
    }

    /// 400 BadRequest.
    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Failure::new(Reason::BadRequest, message)
    }

    /// 404 NotFound for a path that names no resource.
    pub(crate) fn no_route() -> Self {
        Failure::new(Reason::NotFound, "the server could not find the requested resource")
    }

    /// 404 for a path under a group or version no API serves (an unknown group, a version not
    /// served, a custom resource's group without that resource): kube-apiserver's handlers pass
    /// it on to Go's not-found handler, which answers `404 page not found` as text/plain.
    pub(crate) fn page_not_found() -> Self {
        Failure(Failure::no_route().0, true)
    }

    /// 405 MethodNotAllowed.
    pub(crate) fn method_not_allowed(method: &http::Method) -> Self {
        Failure::with_code(405, "MethodNotAllowed", format!("the server does not allow this method on the requested resource ({method})"))
    }

    /// 415 UnsupportedMediaType.
    pub(crate) fn unsupported_media_type(content_type: &str, allowed: &[&str]) -> Self {
        Failure::with_code(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}; got {content_type:?}",
                allowed.join(", ")
            ),
        )
    }

    /// 406 NotAcceptable.
    pub(crate) fn not_acceptable(accept: &str) -> Self {
        Failure::with_code(
            406,
            "NotAcceptable",
            format!("the server was unable to respond with a content type that the client supports ({accept:?}): use application/json, application/yaml or application/vnd.kubernetes.protobuf"),
        )
    }

    /// The HTTP code of this failure.
    pub(crate) fn code(&self) -> u16 {
        self.0.get("code").and_then(Value::as_u64).and_then(|c| u16::try_from(c).ok()).unwrap_or(500)
    }

    /// The reason of this failure.
    pub(crate) fn reason(&self) -> &str {
        self.0.get("reason").and_then(Value::as_str).unwrap_or("")
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure(e.to_status(), false)
    }
}

impl From<fieldstore_engine::Status> for Failure {
    fn from(s: fieldstore_engine::Status) -> Self {
        Failure(s.to_value(), false)
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        if self.1 {
            let mut r = Response::new(Body::from("404 page not found\n"));
            *r.status_mut() = StatusCode::NOT_FOUND;
            r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
            r.headers_mut().insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
            return r;
        }
        let mut r = json_bytes(serde_json::to_vec(&self.0).unwrap_or_default(), code);
        if code == StatusCode::UNAUTHORIZED {
            r.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"fieldstore\""));
        }
        r
    }
}

/// A result of a handler: a response, or the Status it fails with.
pub(crate) type Reply = Result<Response, Failure>;

/// A JSON response body.
pub(crate) fn json_bytes(body: Vec<u8>, code: StatusCode) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = code;
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

/// A JSON value as a 200 response.
pub(crate) fn json(v: &Value) -> Reply {
    Ok(json_bytes(fieldstore_codec::json_text::to_vec(v), StatusCode::OK))
}

/// An encoded body ([`crate::api::body`]) as a response with `code`.
pub(crate) fn encoded(b: Encoded, code: StatusCode) -> Response {
    let mut r = Response::new(Body::from(b.data));
    *r.status_mut() = code;
    if let Ok(v) = HeaderValue::from_str(&b.content_type) {
        r.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    r
}

/// Adds `Warning: 299 - "…"` headers, as kube-apiserver sends them.
pub(crate) fn with_warnings(mut r: Response, warnings: &[String]) -> Response {
    for w in warnings {
        let text = format!("299 - {}", serde_json::Value::String(w.clone()));
        if let Ok(v) = HeaderValue::from_str(&text) {
            r.headers_mut().append(header::WARNING, v);
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every engine failure answers with Kubernetes' code and a whole `Status`; a damaged record
    /// (which no request can provoke on a healthy store) is a 500 InternalError.
    #[test]
    fn engine_errors_answer_with_kubernetes_codes_and_a_status_body() {
        let cases = [
            (Error::Corrupt("object body: truncated".into()), 500, "InternalError"),
            (Error::Closed, 500, "InternalError"),
            (Error::NotFound { resource: "configmaps".into(), name: "x".into() }, 404, "NotFound"),
            (Error::BadRequest("bad".into()), 400, "BadRequest"),
            (Error::TooLarge { size: 10, limit: 5 }, 413, "RequestEntityTooLarge"),
        ];
        for (error, code, reason) in cases {
            let r = Failure::from(error).into_response();
            assert_eq!(r.status().as_u16(), code, "{reason}");
            assert_eq!(r.headers()[header::CONTENT_TYPE], "application/json");
            let body = status_body(r);
            assert_eq!((body["kind"].as_str(), body["status"].as_str()), (Some("Status"), Some("Failure")));
            assert_eq!((body["code"].as_u64(), body["reason"].as_str()), (Some(u64::from(code)), Some(reason)));
            assert!(body["message"].as_str().is_some_and(|m| !m.is_empty()));
        }
    }

    fn status_body(r: Response) -> Value {
        let rt = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
        let bytes = rt.block_on(http_body_util::BodyExt::collect(r.into_body())).expect("body").to_bytes();
        serde_json::from_slice(&bytes).expect("a JSON Status")
    }
}
