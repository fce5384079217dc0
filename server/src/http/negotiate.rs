//! Content negotiation: what a request body is (`Content-Type`) and what the client accepts
//! back (`Accept`), as kube-apiserver reads them.

use super::reply::Failure;
use crate::api::body::{JSON, PROTOBUF, YAML};
use fieldstore_engine::patch::PatchType;

/// What a response is encoded as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Accept {
    /// JSON (also for `*/*` and no `Accept`).
    Json,
    /// The Kubernetes protobuf envelope.
    Protobuf,
    /// A `meta.k8s.io/v1` Table (v1beta1 is answered with v1, as its fields are the same).
    Table,
}

impl Accept {
    /// The media type [`crate::api::body::encode`] takes.
    pub(crate) fn media_type(self) -> &'static str {
        match self {
            Accept::Protobuf => PROTOBUF,
            Accept::Json | Accept::Table => JSON,
        }
    }
}

/// The first media range of an `Accept` header the server can answer; aggregated discovery and
/// PartialObjectMetadata are not served, so clients fall back to the next range they list.
///
/// # Errors
/// 406 when none can be answered.
pub(crate) fn accept(header: Option<&str>) -> Result<Accept, Failure> {
    let Some(h) = header.filter(|h| !h.trim().is_empty()) else { return Ok(Accept::Json) };
    for range in h.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        let mut as_ = "";
        let mut g = "";
        for p in parts {
            match p.split_once('=') {
                Some(("as", v)) => as_ = v,
                Some(("g", v)) => g = v,
                _ => {}
            }
        }
        match (media.as_str(), as_, g) {
            ("application/json", "Table", "meta.k8s.io") => return Ok(Accept::Table),
            (_, "", _) if matches!(media.as_str(), JSON | "application/*" | "*/*") => return Ok(Accept::Json),
            (PROTOBUF, "", _) => return Ok(Accept::Protobuf),
            // YAML responses are not produced; the client's next choice is tried.
            _ => {}
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_accept_headers() {
        let table = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(accept(Some(table)).unwrap(), Accept::Table);
        let discovery = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(accept(Some(discovery)).unwrap(), Accept::Json);
        assert_eq!(accept(Some("application/vnd.kubernetes.protobuf, */*")).unwrap(), Accept::Protobuf);
        assert_eq!(accept(None).unwrap(), Accept::Json);
        assert_eq!(accept(Some("text/html")).unwrap_err().code(), 406);
        assert_eq!(patch_type(Some("application/merge-patch+json; charset=utf-8")).unwrap(), PatchType::Merge);
        assert_eq!(patch_type(Some("text/plain")).unwrap_err().code(), 415);
        assert_eq!(object_body(Some("text/plain")).unwrap_err().code(), 415);
    }
}
