//! Content negotiation: what a request body is (`Content-Type`) and what the client accepts
//! back (`Accept`), as kube-apiserver reads them.

use super::reply::Failure;
use crate::api::body::{JSON, PROTOBUF, YAML};
use fieldstore_engine::patch::PatchType;

/// What a response is: the object itself, a Table of it, or its metadata only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    /// The object (or list) itself.
    Object,
    /// A `meta.k8s.io/v1` Table (v1beta1 is answered with v1, as its fields are the same).
    Table,
    /// `as=PartialObjectMetadata`: a `meta.k8s.io/v1` PartialObjectMetadata (a get, a watch's
    /// events).
    Partial,
    /// `as=PartialObjectMetadataList`: a list of PartialObjectMetadata.
    PartialList,
}

/// What a response is encoded as: a media type and a form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Accept {
    /// JSON (also for `*/*` and no `Accept`), YAML or the Kubernetes protobuf envelope.
    pub(crate) media: &'static str,
    /// What is encoded.
    pub(crate) form: Form,
}

impl Accept {
    /// Plain JSON.
    pub(crate) const JSON: Accept = Accept { media: JSON, form: Form::Object };

    /// The media type [`crate::api::body::encode`] takes.
    pub(crate) fn media_type(self) -> &'static str {
        self.media
    }
}

/// The first media range of an `Accept` header the server can answer, as kube-apiserver picks
/// it: JSON, YAML and protobuf (not for custom resources, whose objects kube-apiserver has no
/// protobuf encoding of), each as the object, a Table or PartialObjectMetadata(List) of
/// `meta.k8s.io` `v1` or `v1beta1` (aggregated discovery is `aggregated.rs`'s, on `/api` and
/// `/apis` only).
///
/// # Errors
/// 406 when none can be answered.
pub(crate) fn accept(header: Option<&str>, custom: bool) -> Result<Accept, Failure> {
    let Some(h) = header.filter(|h| !h.trim().is_empty()) else { return Ok(Accept::JSON) };
    for range in h.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        let (mut as_, mut g, mut v) = ("", "", "");
        for p in parts {
            match p.split_once('=') {
                Some(("as", x)) => as_ = x,
                Some(("g", x)) => g = x,
                Some(("v", x)) => v = x,
                _ => {}
            }
        }
        let media = match media.as_str() {
            JSON | "application/*" | "*/*" => JSON,
            YAML => YAML,
            PROTOBUF if !custom || !as_.is_empty() => PROTOBUF,
            _ => continue,
        };
        let meta = g == "meta.k8s.io" && matches!(v, "v1" | "v1beta1");
        let form = match as_ {
            "" => Form::Object,
            "Table" if meta && media == JSON => Form::Table,
            "PartialObjectMetadata" if meta => Form::Partial,
            "PartialObjectMetadataList" if meta => Form::PartialList,
            _ => continue,
        };
        return Ok(Accept { media, form });
    }
    Err(Failure::not_acceptable(h))
}

/// The media type of a `Content-Type` header without its parameters.
pub(crate) fn media_type(ct: Option<&str>) -> String {
    ct.unwrap_or("").split(';').next().unwrap_or("").trim().to_ascii_lowercase()
}

/// Checks the body media type of a create or update.
///
/// # Errors
/// 415 for anything but JSON, YAML and protobuf.
pub(crate) fn object_body(ct: Option<&str>) -> Result<String, Failure> {
    let m = media_type(ct);
    match m.as_str() {
        "" | JSON | YAML | "application/x-yaml" | "text/yaml" | PROTOBUF => Ok(if m.is_empty() { JSON.into() } else { m }),
        _ => Err(Failure::unsupported_media_type(&m, &[JSON, YAML, PROTOBUF])),
    }
}

/// Media types of PATCH bodies.
pub(crate) const PATCH_TYPES: [&str; 4] = [
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];

/// The patch type a PATCH's `Content-Type` names.
///
/// # Errors
/// 415 for any other media type.
pub(crate) fn patch_type(ct: Option<&str>) -> Result<PatchType, Failure> {
    let m = media_type(ct);
    PatchType::from_content_type(&m).ok_or_else(|| Failure::unsupported_media_type(&m, &PATCH_TYPES))
}

/// An object's PartialObjectMetadata (`meta.k8s.io/v1`): its metadata only.
pub(crate) fn partial(v: &serde_json::Value) -> serde_json::Value {
    serde_json::json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": v.get("metadata").cloned().unwrap_or(serde_json::json!({}))})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_accept_headers() {
        let table = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(accept(Some(table), false).unwrap().form, Form::Table);
        let discovery = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(accept(Some(discovery), false).unwrap(), Accept::JSON);
        assert_eq!(accept(Some("application/vnd.kubernetes.protobuf, */*"), false).unwrap().media, PROTOBUF);
        assert_eq!(accept(Some("application/vnd.kubernetes.protobuf, */*"), true).unwrap(), Accept::JSON);
        assert_eq!(accept(None, false).unwrap(), Accept::JSON);
        assert_eq!(accept(Some("text/html"), false).unwrap_err().code(), 406);
        assert_eq!(accept(Some("application/yaml"), false).unwrap(), Accept { media: YAML, form: Form::Object });
        let metadata = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
        assert_eq!(accept(Some(metadata), true).unwrap(), Accept { media: PROTOBUF, form: Form::PartialList });
        assert_eq!(patch_type(Some("application/merge-patch+json; charset=utf-8")).unwrap(), PatchType::Merge);
        assert_eq!(patch_type(Some("text/plain")).unwrap_err().code(), 415);
        assert_eq!(object_body(Some("text/plain")).unwrap_err().code(), 415);
    }
}
