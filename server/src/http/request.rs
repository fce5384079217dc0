//! One request on a resource path ([`Ctx`]): who asks, for what, in which form, and the helpers
//! every verb module uses (authorization, store calls within the deadline, the body read with its
//! limit). Below `verbs`, `history`, `scale` and `watch`, which all take a `Ctx`, and importing
//! none of them.

use super::negotiate::Accept;
use super::paths::Target;
use super::query::Query;
use super::reply::Failure;
use super::table::IncludeObject;
use super::Http;
use crate::api::auth::Identity;
use crate::api::body::Body;
use crate::api::{Collection, ObjectKey, Request, Response};
use bytes::Bytes;
use fieldstore_codec::document::Document;
use fieldstore_engine::Reason;

/// One request on a resource path.
pub(crate) struct Ctx<'a> {
    pub(crate) h: &'a Http,
    pub(crate) id: Identity,
    pub(crate) t: Target,
    pub(crate) q: Query,
    pub(crate) accept: Accept,
    pub(super) content_type: Option<String>,
    pub(super) user_agent: Option<String>,
}

impl Ctx<'_> {
    /// Fails unless the caller may do `verb` on this resource in this namespace.
    pub(crate) fn admit(&self, verb: &str) -> Result<(), Failure> {
        self.h.api.auth().authorize(&self.id, verb, &self.t.spec.resource(), self.t.ns().unwrap_or(""))?;
        Ok(())
    }

    /// Runs a request of the request layer as the caller.
    pub(crate) async fn run(&self, req: Request) -> Result<Response, Failure> {
        Ok(self.h.api.run(&self.id, req).await?)
    }

    /// The object this request's path names.
    pub(crate) fn key(&self) -> ObjectKey {
        ObjectKey::new(self.t.spec.versioned_resource(), self.t.ns(), self.t.name.clone().unwrap_or_default())
    }

    /// The collection this request's path names.
    pub(crate) fn collection(&self) -> Collection {
        Collection::new(self.t.spec.versioned_resource(), self.t.ns())
    }

    /// The request body, at most `--max-request-bytes` (413 beyond).
    pub(crate) async fn read(&self, b: axum::body::Body) -> Result<Bytes, Failure> {
        read_body(b, self.h.api.limits().max_request_bytes).await
    }

    /// A body parsed as `content_type` says ([`crate::api::Api::decode`]).
    pub(crate) async fn decode(&self, content_type: &str, data: Bytes, what: &'static str) -> Result<Document, Failure> {
        Ok(self.h.api.decode(Some(&Body::new(content_type, data)), what).await?)
    }

    /// The request's `Content-Type`.
    pub(crate) fn content_type(&self) -> Option<&str> {
        self.content_type.as_deref()
    }

    /// The field manager of a non-apply write: `fieldManager`, else from the User-Agent.
    pub(crate) fn field_manager(&self) -> String {
        self.q.field_manager(self.user_agent.as_deref())
    }

    /// `includeObject` of a Table request (default `Metadata`).
    pub(crate) fn include_object(&self) -> Result<IncludeObject, Failure> {
        match self.q.get("includeObject") {
            None | Some("Metadata") => Ok(IncludeObject::Metadata),
            Some("None") => Ok(IncludeObject::None),
            Some("Object") => Ok(IncludeObject::Object),
            Some(v) => Err(Failure::bad_request(format!("invalid includeObject {v:?}: None, Metadata or Object"))),
        }
    }
}

/// Reads a request body of at most `limit` bytes.
///
/// A larger body is still read to its end (up to [`DRAIN_LIMIT`] more bytes, then dropped
/// unread), so that the client, still sending, receives the 413 rather than a reset connection.
///
/// # Errors
/// 413 beyond the limit (the rest of the body, up to [`DRAIN_BYTES`], is read and dropped first,
/// so that a client still sending it reads the answer rather than a reset connection); 400 when
/// the body cannot be read.
pub(crate) async fn read_body(mut b: axum::body::Body, limit: usize) -> Result<Bytes, Failure> {
    use http_body_util::BodyExt;
    let mut out = bytes::BytesMut::new();
    let mut seen = 0usize;
    while let Some(frame) = b.frame().await {
        let frame = frame.map_err(|e| Failure::bad_request(format!("reading the request body: {e}")))?;
        let Ok(data) = frame.into_data() else { continue };
        seen = seen.saturating_add(data.len());
        if seen > DRAIN_BYTES {
            break;
        }
        if seen <= limit {
            out.extend_from_slice(&data);
        }
    }
    if seen > limit {
        return Err(Failure::new(
            Reason::RequestEntityTooLarge,
            format!("Request entity too large: the request body is larger than the limit of {limit} bytes"),
        ));
    }
    Ok(out.freeze())
}

/// How much of an oversized body is read (and dropped) before the 413 is sent.
const DRAIN_BYTES: usize = 64 << 20;
