//! The create-only reviews a caller asks about itself, answered from fieldstore's authentication
//! and authorization rules and never stored: `authorization.k8s.io/v1` SelfSubjectAccessReview
//! (`kubectl auth can-i VERB RESOURCE`), SelfSubjectRulesReview (`kubectl auth can-i --list`) and
//! `authentication.k8s.io/v1` SelfSubjectReview (`kubectl auth whoami`). Bodies in JSON, YAML or
//! Kubernetes protobuf, answers in JSON or protobuf, as kube-apiserver's.
//!
//! Every authenticated caller may create them (what they tell is the caller's own), as
//! kube-apiserver's `system:basic-user` role allows.

use super::negotiate;
use super::reply::{encoded, Failure, Reply};
use super::request::read_body;
use super::Http;
use crate::api::auth::Identity;
use crate::api::body;
use axum::extract::Request;
use http::{header, Method, StatusCode};
use serde_json::{json, Value};

/// The largest review body read.
const MAX_REVIEW_BODY: usize = 64 << 10;

/// The review resources: (group, version, plural, kind).
pub(crate) const REVIEWS: [(&str, &str, &str, &str); 3] = [
    ("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview"),
    ("authorization.k8s.io", "v1", "selfsubjectrulesreviews", "SelfSubjectRulesReview"),
    ("authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview"),
];

/// The paths every authenticated caller may read, as a rules review lists them.
const OPEN_PATHS: [&str; 10] =
    ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/readyz", "/version", "/openapi", "/openapi/*"];

/// The kind of the review at `/apis/GROUP/v1/PLURAL`, if that is one.
pub(crate) fn kind(group: &str, plural: &str) -> Option<&'static str> {
    REVIEWS.iter().find(|(g, _, p, _)| *g == group && *p == plural).map(|(_, _, _, k)| *k)
}

/// `POST /apis/GROUP/v1/PLURAL` of a review: its answer, 201 as kube-apiserver's.
pub(crate) async fn create(h: &Http, id: &Identity, group: &str, plural: &str, req: Request) -> Reply {
    let kind = kind(group, plural).ok_or_else(Failure::no_route)?;
    if req.method() != Method::POST {
        return Err(Failure::method_not_allowed(req.method()));
    }
    // (No borrow of the request may live across an await: its body is not `Sync`.)
    let (accept, content_type) = {
        let text = |name: header::HeaderName| req.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
        (negotiate::accept(text(header::ACCEPT).as_deref(), false)?, text(header::CONTENT_TYPE).unwrap_or_default())
    };
    let data = read_body(req.into_body(), MAX_REVIEW_BODY).await?;
    let doc = h.api.decode(Some(&body::Body::new(content_type, data)), "the review").await?;
    let review = doc.value;
    if review.get("kind").and_then(Value::as_str).is_some_and(|k| k != kind) {
        return Err(Failure::bad_request(format!("the body is not a {kind}")));
    }
    let spec = review.get("spec").cloned().unwrap_or_else(|| json!({}));
    let status = match kind {
        "SelfSubjectAccessReview" => access(h, id, &spec)?,
        "SelfSubjectRulesReview" => rules(h, id, &spec),
        _ => json!({"userInfo": {"username": id.user, "groups": id.groups}}),
    };
    let mut answer = json!({"kind": kind, "apiVersion": format!("{group}/v1"), "metadata": {}, "status": status});
    if kind != "SelfSubjectReview" {
        answer["spec"] = spec;
    }
    let b = body::encode(&answer, accept.media_type()).map_err(|e| Failure::bad_request(e.to_string()))?;
    Ok(encoded(b, StatusCode::CREATED))
}

/// A SelfSubjectAccessReview's status: whether the rules allow the caller the request its
/// `resourceAttributes` describe (group, resource, namespace, verb; subresources are authorized
/// as their resource), or, for `nonResourceAttributes`, whether it may read the path.
fn access(h: &Http, id: &Identity, spec: &Value) -> Result<Value, Failure> {
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    if let Some(attrs) = spec.get("resourceAttributes") {
        let (group, plural, verb) = (s(attrs, "group"), s(attrs, "resource"), s(attrs, "verb"));
        let resource = if group.is_empty() || plural == "*" { plural } else { format!("{plural}.{group}") };
        let mut namespace = s(attrs, "namespace");
        // Cluster-scoped objects are authorized without a namespace.
        if h.api.store().resource_type(&resource).is_some_and(|t| !t.namespaced) {
            namespace.clear();
        }
        let (allowed, reason) = h.api.auth().decide(id, &verb, &resource, &namespace);
        return Ok(json!({"allowed": allowed, "reason": reason}));
    }
    if let Some(attrs) = spec.get("nonResourceAttributes") {
        let (path, verb) = (s(attrs, "path"), s(attrs, "verb"));
        let open = OPEN_PATHS.iter().any(|p| p.strip_suffix('*').map_or(*p == path, |prefix| path.starts_with(prefix)));
        let allowed = open && matches!(verb.as_str(), "get" | "head");
        let reason =
            if allowed { "every authenticated caller may read it" } else { "only discovery, health and OpenAPI paths are readable" };
        return Ok(json!({"allowed": allowed, "reason": reason}));
    }
    Err(Failure::with_code(
        422,
        "Invalid",
        "SelfSubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.resourceAttributes: Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified",
    ))
}

/// A SelfSubjectRulesReview's status: what the rules grant the caller in `spec.namespace`, in
/// RBAC's terms (a fieldstore resource `deployments.apps` is group `apps`, resource
/// `deployments`), and the paths every caller may read.
fn rules(h: &Http, id: &Identity, spec: &Value) -> Value {
    let namespace = spec.get("namespace").and_then(Value::as_str).unwrap_or("");
    let Some(grants) = h.api.auth().rules_of(id, namespace) else {
        return json!({
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": false,
        });
    };
    let mut resource_rules = Vec::new();
    for grant in grants {
        for resource in &grant.resources {
            let (plural, group) = match resource.split_once('.') {
                _ if resource == "*" => ("*", "*"),
                Some((plural, group)) => (plural, group),
                None => (resource.as_str(), ""),
            };
            resource_rules.push(json!({"verbs": grant.verbs, "apiGroups": [group], "resources": [plural]}));
        }
    }
    json!({
        "resourceRules": resource_rules,
        "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": OPEN_PATHS}],
        "incomplete": false,
    })
}
