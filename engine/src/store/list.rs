//! Lists: snapshot reads at one revision, pages with continue tokens, selectors.
//!
//! Every page is read at the first page's revision, from the key after the last object returned,
//! both carried by the continue token ([`super::continue_token`]); the reading itself is a
//! [`Scan`], whole pages at once here, in chunks for a [`ListStream`]. A token that does not decode, fails its checksum or points outside the list's
//! keys is a 400; one older than the compacted revision a 410 whose Status carries a token that
//! continues the list at the current revision (Kubernetes' "inconsistent continue").

use super::address::{Collection, Revision};
use super::continue_token::Token;
use super::core::Core;
use super::keys;
use super::list_scan::ListMeta;
use super::list_scan::{self, Budget, ListStream, Scan};
use super::options::{ListOptions, ResourceVersionMatch};
use super::selectors::{parse_rv, Selectors};
use super::types::Registered;
use super::{object, validate, Store};
use crate::{Error, Result};
use serde_json::{json, Value};
use std::sync::Arc;

/// One page of a list: items are objects ([`Store::list`]) or their JSON text
/// ([`Store::list_json`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectList<T = Value> {
    /// The objects, in key order (namespace, then name).
    pub items: Vec<T>,
    /// The revision the list was read at.
    pub resource_version: Revision,
    /// The token of the next page, if there is more.
    pub continue_token: Option<String>,
    /// How many objects follow this page (only without selectors, as Kubernetes).
    pub remaining_item_count: Option<u64>,
}

impl<T> ObjectList<T> {
    /// The list's [`ListMeta`].
    #[must_use]
    pub fn list_meta(&self) -> ListMeta {
        ListMeta {
            resource_version: self.resource_version,
            continue_token: self.continue_token.clone(),
            remaining_item_count: self.remaining_item_count,
        }
    }

    /// The list's `metadata` (Kubernetes' `ListMeta`): its resourceVersion, continue token and
    /// remaining item count.
    #[must_use]
    pub fn metadata(&self) -> Value {
        self.list_meta().to_json()
    }
}

impl<T> ObjectList<T> {
    /// The page of `items` whose list says `meta`.
    fn of(items: Vec<T>, meta: ListMeta) -> Self {
        ObjectList {
            items,
            resource_version: meta.resource_version,
            continue_token: meta.continue_token,
            remaining_item_count: meta.remaining_item_count,
        }
    }
}

impl ObjectList {
    /// The Kubernetes `List` object (`kind` is the item kind followed by `List`).
    #[must_use]
    pub fn to_json(&self, api_version: &str, kind: &str) -> Value {
        json!({"apiVersion": api_version, "kind": format!("{kind}List"), "metadata": self.metadata(), "items": self.items})
    }
}

impl ObjectList<Vec<u8>> {
    /// The Kubernetes `List` object as JSON text: the bytes `serde_json::to_vec` gives for
    /// [`ObjectList::to_json`] of the same page read with [`Store::list`].
    #[must_use]
    pub fn to_json_bytes(&self, api_version: &str, kind: &str) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.items.iter().map(|i| i.len() + 1).sum::<usize>() + 256);
        let text = |out: &mut Vec<u8>, v: &Value| out.extend_from_slice(v.to_string().as_bytes());
        // Keys in sorted order, as serde_json's map writes them.
        out.extend_from_slice(b"{\"apiVersion\":");
        text(&mut out, &Value::String(api_version.into()));
        out.extend_from_slice(b",\"items\":[");
        for (i, item) in self.items.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(item);
        }
        out.extend_from_slice(b"],\"kind\":");
        text(&mut out, &Value::String(format!("{kind}List")));
        out.extend_from_slice(b",\"metadata\":");
        text(&mut out, &self.metadata());
        out.push(b'}');
        out
    }
}

impl Store {
    /// Lists the objects of a collection (a resource in one namespace, or in all with no
    /// namespace), as of one revision, optionally paged and filtered.
    ///
    /// # Errors
    /// [`Error::BadRequest`] for malformed selectors, resourceVersions or continue tokens, or a
    /// continue token with a resourceVersion; [`Error::Expired`] for a revision before the compacted
    /// revision; [`Error::InconsistentContinue`] for a continue token before it; [`Error::TooLargeResourceVersion`].
    pub fn list(&self, of: &Collection, opts: &ListOptions) -> Result<ObjectList> {
        let (t, selectors, mut scan) = self.list_scan(of, opts)?;
        let mut items = Vec::new();
        scan.step(self.core(), &selectors, Budget::UNBOUNDED, &mut |key, record, filter| {
            let mut obj = object::decode(record, key.revision)?;
            t.to_served(&mut obj);
            let _ = t.read_view(&mut obj);
            if !filter.is_none_or(|l| l.matches(&obj)) {
                return Ok(None);
            }
            items.push(obj);
            Ok(Some(0))
        })?;
        Ok(ObjectList::of(items, scan.meta()))
    }

    /// [`Store::list`] with every item as its JSON text (the bytes `serde_json::to_vec` gives for
    /// the item [`Store::list`] returns), read without building the objects.
    ///
    /// # Errors
    /// As [`Store::list`].
    pub fn list_json(&self, of: &Collection, opts: &ListOptions) -> Result<ObjectList<Vec<u8>>> {
        let (t, selectors, mut scan) = self.list_scan(of, opts)?;
        let mut items = Vec::new();
        scan.step(self.core(), &selectors, Budget::UNBOUNDED, &mut |key, record, filter| {
            let mut out = Vec::new();
            if !list_scan::item_json(&t, record, key.revision, filter, &mut out)? {
                return Ok(None);
            }
            items.push(out);
            Ok(Some(0))
        })?;
        Ok(ObjectList::of(items, scan.meta()))
    }

    /// [`Store::list_json`] read as it is sent: the list's revision, start and selectors fixed
    /// now, its items read in chunks by [`ListStream::next_chunk`]. The way to serve a list over
    /// the wire: an answer of any length holds one chunk at a time.
    ///
    /// # Errors
    /// As [`Store::list`], all of them before the first item is read.
    pub fn list_stream(&self, of: &Collection, opts: &ListOptions) -> Result<ListStream> {
        let (t, selectors, scan) = self.list_scan(of, opts)?;
        Ok(ListStream::new(self.clone(), t, selectors, scan))
    }

    /// A list's type, selectors and scan (at its revision, from its first key), waiting for the
    /// revision asked for.
    fn list_scan(&self, of: &Collection, opts: &ListOptions) -> Result<(Arc<Registered>, Selectors, Scan)> {
        let t = self.resolve(&of.resource)?;
        let ns = list_namespace(&t, of.ns())?;
        let selectors = Selectors::parse(opts, &t)?;
        let prefix = match ns {
            Some(ns) => keys::namespace_prefix(t.id, ns),
            None => keys::type_prefix(t.id),
        };
        let end = keys::prefix_end(&prefix);
        let rv = parse_rv(opts.resource_version.as_deref())?;
        let from = match opts.continue_token.as_deref().filter(|s| !s.is_empty()) {
            Some(token) => self.continued(token, rv, &prefix)?,
            None => first_page(self.core(), opts, rv, prefix)?,
        };
        let limit = opts.limit.filter(|&l| l > 0).unwrap_or(usize::MAX);
        let scan = Scan::new(from.at, from.key, end, limit, from.remaining, selectors.filtered());
        Ok((t, selectors, scan))
    }

    /// Where the page after continue `token` starts: at the token's revision, or (a token
    /// handed out for an expired one) at the current revision. A 410 with a token for the
    /// latter when the token's revision is compacted.
    fn continued(&self, token: &str, rv: Option<u64>, prefix: &[u8]) -> Result<PageStart> {
        if rv.is_some_and(|r| r != 0) {
            return Err(Error::BadRequest("specifying resource version is not allowed when using continue".into()));
        }
        let tok = Token::decode(token)?;
        if !tok.key.starts_with(prefix) {
            return Err(Error::BadRequest("continue key is not valid for this list".into()));
        }
        if tok.revision == Token::LATEST {
            // An inconsistent continuation: the rest of the list as it is now.
            Ok(PageStart { at: self.revision().0, key: tok.key, remaining: None })
        } else if tok.revision < self.core().compacted.load(std::sync::atomic::Ordering::SeqCst) {
            let continue_token = Token { revision: Token::LATEST, remaining: None, key: tok.key }.encode();
            Err(Error::InconsistentContinue { continue_token })
        } else {
            Ok(PageStart { at: tok.revision, key: tok.key, remaining: tok.remaining })
        }
    }
}

/// The namespace a list is confined to (`None`: all, or a cluster-scoped type); a namespace
/// given for a cluster-scoped type is a 400.
fn list_namespace<'n>(t: &Registered, namespace: Option<&'n str>) -> Result<Option<&'n str>> {
    match namespace.filter(|s| !s.is_empty()) {
        Some(_) if !t.spec.namespaced => {
            Err(Error::BadRequest(format!("{} is cluster-scoped: no namespace may be given", t.spec.resource())))
        }
        Some(ns) => {
            validate::namespace(ns)?;
            Ok(Some(ns))
        }
        None => Ok(None),
    }
}

/// Where a page starts: the revision the list is read at, the first key, and how many objects
/// remained after the previous page (carried by its token).
struct PageStart {
    at: u64,
    key: Vec<u8>,
    remaining: Option<u64>,
}

/// Where a first page starts: at the keys of `prefix`, at the revision `rv` and its
/// resourceVersionMatch ask for (waiting for it), else the latest.
fn first_page(core: &Core, opts: &ListOptions, rv: Option<u64>, prefix: Vec<u8>) -> Result<PageStart> {
    let exact = match (rv, opts.resource_version_match) {
        (None | Some(0), Some(ResourceVersionMatch::Exact)) => {
            return Err(Error::BadRequest("resourceVersionMatch Exact requires a non-zero resourceVersion".into()))
        }
        (Some(r), Some(ResourceVersionMatch::Exact)) => Some(r),
        (Some(r), None) if r > 0 && opts.limit.is_some_and(|l| l > 0) => Some(r),
        (Some(r), _) if r > 0 => {
            core.wait_for(r)?;
            None
        }
        _ => None,
    };
    let at = match exact {
        Some(r) => {
            core.wait_for(r)?;
            core.check_compacted(r)?;
            r
        }
        None => super::follow::latest(core)?,
    };
    Ok(PageStart { at, key: prefix, remaining: None })
}
