//! Lists: snapshot reads at one revision, pages with continue tokens, selectors.
//!
//! A continue token is `base64url(version 1 ‖ revision u64 ‖ remaining u64 ‖ next key ‖ FNV-1a
//! 64 of the rest)`: every page is read at the first page's revision, from the key after the last
//! object returned. A token that does not decode, fails its checksum or points outside the list's
//! keys is a 400; one older than the compacted revision a 410 whose Status carries a token that
//! continues the list at the current revision (Kubernetes' "inconsistent continue").

use super::address::{Collection, Revision};
use super::core::Core;
use super::keys::{self, CF_OBJECTS};
use super::kv::Flow;
use super::options::{ListOptions, ResourceVersionMatch};
use super::selectors::{parse_rv, FieldSelector, LabelSelector, ObjectFilter};
use super::types::Registered;
use super::{object, validate, view, Store};
use crate::{Error, Result};
use serde_json::{json, Value};

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
    /// The list's `metadata` (Kubernetes' `ListMeta`): its resourceVersion, continue token and
    /// remaining item count.
    #[must_use]
    pub fn metadata(&self) -> Value {
        let mut meta = serde_json::Map::new();
        meta.insert("resourceVersion".into(), Value::String(self.resource_version.to_string()));
        if let Some(c) = &self.continue_token {
            meta.insert("continue".into(), Value::String(c.clone()));
        }
        if let Some(n) = self.remaining_item_count {
            meta.insert("remainingItemCount".into(), Value::from(n));
        }
        Value::Object(meta)
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

/// What a list makes of a visible record (its bytes and revision, and the label selector to
/// apply): the item, or `None` when the selector does not select it.
type ItemFn<'a, T> = dyn FnMut(&[u8], u64, Option<&ObjectFilter<'_>>) -> Result<Option<T>> + 'a;

impl Store {
    /// Lists the objects of a collection (a resource in one namespace, or in all with no
    /// namespace), as of one revision, optionally paged and filtered.
    ///
    /// # Errors
    /// [`Error::BadRequest`] for malformed selectors, resourceVersions or continue tokens, or a
    /// continue token with a resourceVersion; [`Error::Expired`] for a revision before the compacted
    /// revision; [`Error::InconsistentContinue`] for a continue token before it; [`Error::TooLargeResourceVersion`].
    pub fn list(&self, of: &Collection, opts: &ListOptions) -> Result<ObjectList> {
        let t = self.resolve(&of.resource)?;
        self.list_with(&of.resource, of.ns(), opts, &mut |record, revision, labels| {
            let mut obj = object::decode(record, revision)?;
            t.to_served(&mut obj);
            let _ = t.read_view(&mut obj);
            Ok(labels.is_none_or(|l| l.matches(&obj)).then_some(obj))
        })
    }

    /// [`Store::list`] with every item as its JSON text (the bytes `serde_json::to_vec` gives for
    /// the item [`Store::list`] returns), read without building the objects: the way to serve a
    /// list over the wire.
    ///
    /// # Errors
    /// As [`Store::list`].
    pub fn list_json(&self, of: &Collection, opts: &ListOptions) -> Result<ObjectList<Vec<u8>>> {
        let t = self.resolve(&of.resource)?;
        self.list_with(&of.resource, of.ns(), opts, &mut |record, revision, labels| {
            // Label selectors (and field selectors beyond the name) read the object; so do the
            // defaults of a custom resource's schema, and a view of another version (which
            // rewrites each object's apiVersion).
            if labels.is_some() || (t.custom.is_some() && t.spec.reshaped) || t.converts() {
                let mut obj = object::decode(record, revision)?;
                t.to_served(&mut obj);
                let _ = t.read_view(&mut obj);
                if labels.is_some_and(|l| !l.matches(&obj)) {
                    return Ok(None);
                }
                return serde_json::to_vec(&obj).map(Some).map_err(|e| Error::Corrupt(format!("object view: {e}")));
            }
            let mut out = Vec::with_capacity(record.len() + 512);
            view::write_json(record, revision, &mut out)?;
            Ok(Some(out))
        })
    }

    /// A list whose items `item` makes from each visible record (`None`: not selected by the
    /// label selector it is given).
    fn list_with<T>(&self, resource: &str, namespace: Option<&str>, opts: &ListOptions, item: &mut ItemFn<'_, T>) -> Result<ObjectList<T>> {
        let t = self.resolve(resource)?;
        let ns = list_namespace(&t, namespace)?;
        let selectors = Selectors::parse(opts, &t)?;
        let prefix = match ns {
            Some(ns) => keys::namespace_prefix(t.id, ns),
            None => keys::type_prefix(t.id),
        };
        let end = keys::prefix_end(&prefix);
        let rv = parse_rv(opts.resource_version.as_deref())?;
        let core = self.core();
        let from = match opts.continue_token.as_deref().filter(|s| !s.is_empty()) {
            Some(token) => self.continued(token, rv, &prefix)?,
            None => first_page(core, opts, rv, prefix)?,
        };
        let limit = opts.limit.filter(|&l| l > 0).unwrap_or(usize::MAX);
        let page = read_page(core, &from, end.as_deref(), limit, &selectors, item)?;
        Ok(page.into_list(from, selectors.filtered()))
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

/// A list's label and field selectors.
struct Selectors {
    labels: Option<LabelSelector>,
    fields: Option<FieldSelector>,
}

impl Selectors {
    /// The selectors of `opts`, the field selector checked against type `t`.
    fn parse(opts: &ListOptions, t: &Registered) -> Result<Selectors> {
        let labels = opts.label_selector.as_deref().map(LabelSelector::parse).transpose()?;
        let fields = opts.field_selector.as_deref().map(FieldSelector::parse).transpose()?;
        if let Some(f) = &fields {
            f.check(&t.spec.resource(), t.spec.selectable_fields())?;
        }
        Ok(Selectors { labels, fields })
    }

    /// Whether any selector selects (the list then has no remaining item count).
    fn filtered(&self) -> bool {
        self.labels.as_ref().is_some_and(|l| !l.is_empty()) || self.fields.as_ref().is_some_and(|f| !f.is_empty())
    }

    /// What selects on the object itself (labels, fields other than the name), if anything.
    fn filter(&self) -> Option<ObjectFilter<'_>> {
        let labels = self.labels.as_ref().filter(|l| !l.is_empty());
        let fields = self.fields.as_ref().filter(|f| f.needs_object());
        (labels.is_some() || fields.is_some()).then_some(ObjectFilter { labels, fields })
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

/// A page as read: its items and what the scan learned about the rest.
struct Page<T> {
    items: Vec<T>,
    /// The key after the page's last object, once the page is full.
    next_key: Option<Vec<u8>>,
    /// The objects counted after a full page (when the rest is counted).
    counted: u64,
    /// Whether an object follows the page.
    more: bool,
}

/// Reads a page of at most `limit` objects from `from` to `end`, the newest version of each
/// as of the list's revision (deleted ones left out), those the selectors select made items
/// by `item`.
fn read_page<T>(
    core: &Core,
    from: &PageStart,
    end: Option<&[u8]>,
    limit: usize,
    selectors: &Selectors,
    item: &mut ItemFn<'_, T>,
) -> Result<Page<T>> {
    let filter = selectors.filter();
    let mut page = Page { items: Vec::new(), next_key: None, counted: 0, more: false };
    let mut decided: Option<Vec<u8>> = None;
    // Counting the rest is only needed without a selector on a first page; later pages carry
    // the count in their token.
    let count_rest = !selectors.filtered() && from.remaining.is_none();
    core.kv.scan(CF_OBJECTS, &from.key, end, &mut |k, v| {
        let key = keys::parse_object_key(k)?;
        if decided.as_deref() == Some(key.prefix) || key.revision > from.at {
            return Ok(Flow::Continue);
        }
        decided = Some(key.prefix.to_vec());
        if object::is_tombstone(v) {
            return Ok(Flow::Continue);
        }
        if page.items.len() >= limit {
            page.more = true;
            if count_rest {
                page.counted += 1;
                return Ok(Flow::Continue);
            }
            return Ok(Flow::Stop);
        }
        if let Some(f) = &selectors.fields {
            if !f.matches(key.name, key.namespace) {
                return Ok(Flow::Continue);
            }
        }
        let Some(obj) = item(v, key.revision, filter.as_ref())? else {
            return Ok(Flow::Continue);
        };
        page.items.push(obj);
        if page.items.len() == limit {
            page.next_key = keys::prefix_end(key.prefix);
        }
        Ok(Flow::Continue)
    })?;
    Ok(page)
}

impl<T> Page<T> {
    /// The list of this page, read from `from`: its remaining item count (none with
    /// selectors) and the token of the next page.
    fn into_list(self, from: PageStart, filtered: bool) -> ObjectList<T> {
        let remaining_item_count = if filtered {
            None
        } else if let Some(r) = from.remaining {
            Some(r.saturating_sub(self.items.len() as u64))
        } else {
            Some(self.counted)
        };
        let remaining_item_count = remaining_item_count.filter(|_| self.more);
        let continue_token = match (self.more, self.next_key) {
            (true, Some(key)) => Some(Token { revision: from.at, remaining: remaining_item_count, key }.encode()),
            _ => None,
        };
        ObjectList { items: self.items, resource_version: Revision(from.at), continue_token, remaining_item_count }
    }
}

/// A decoded continue token.
struct Token {
    /// The revision every page is read at, or [`Token::LATEST`].
    revision: u64,
    remaining: Option<u64>,
    key: Vec<u8>,
}

const TOKEN_VERSION: u8 = 1;

impl Token {
    /// The revision of a token handed out with a 410 for an expired one: read the rest of the
    /// list at the current revision (Kubernetes encodes it as resourceVersion -1).
    const LATEST: u64 = u64::MAX;

    fn encode(&self) -> String {
        let mut b = Vec::with_capacity(25 + self.key.len());
        b.push(TOKEN_VERSION);
        b.extend_from_slice(&self.revision.to_be_bytes());
        b.extend_from_slice(&self.remaining.unwrap_or(u64::MAX).to_be_bytes());
        b.extend_from_slice(&self.key);
        let sum = fnv1a(&b);
        b.extend_from_slice(&sum.to_be_bytes());
        base64url(&b)
    }

    fn decode(s: &str) -> Result<Self> {
        let bad = || Error::BadRequest("continue key is not valid: malformed or tampered token".into());
        let b = unbase64url(s).ok_or_else(bad)?;
        if b.len() < 25 || b.first() != Some(&TOKEN_VERSION) {
            return Err(bad());
        }
        let (body, sum) = b.split_at(b.len() - 8);
        if keys::read_u64(sum)? != fnv1a(body) {
            return Err(bad());
        }
        let revision = keys::read_u64(body.get(1..9).ok_or_else(bad)?)?;
        let remaining = keys::read_u64(body.get(9..17).ok_or_else(bad)?)?;
        Ok(Token { revision, remaining: (remaining != u64::MAX).then_some(remaining), key: body.get(17..).ok_or_else(bad)?.to_vec() })
    }
}

fn fnv1a(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| (h ^ u64::from(x)).wrapping_mul(0x0100_0000_01b3))
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn base64url(b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len() * 4 / 3 + 4);
    for chunk in b.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &x)| n | u32::from(x) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(char::from(B64[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    out
}

fn unbase64url(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    for chunk in s.as_bytes().chunks(4) {
        if chunk.len() == 1 {
            return None;
        }
        let mut n = 0u32;
        for (i, c) in chunk.iter().enumerate() {
            let v = B64.iter().position(|b| b == c)? as u32;
            n |= v << (18 - 6 * i);
        }
        for i in 0..chunk.len() - 1 {
            out.push((n >> (16 - 8 * i)) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_detect_tampering() {
        let t = Token { revision: 42, remaining: Some(7), key: vec![0, 0, 0, 1, b'n', 0] };
        let s = t.encode();
        let d = Token::decode(&s).unwrap();
        assert_eq!((d.revision, d.remaining, d.key), (42, Some(7), t.key.clone()));
        let mut bytes = s.into_bytes();
        bytes[3] = if bytes[3] == b'A' { b'B' } else { b'A' };
        assert!(matches!(Token::decode(&String::from_utf8(bytes).unwrap()), Err(Error::BadRequest(_))));
        assert!(Token::decode("!!").is_err());
    }
}
