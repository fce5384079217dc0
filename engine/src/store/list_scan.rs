//! The scan behind every list: the objects of a key range as of one revision, read in steps.
//!
//! A [`Scan`] holds where a list is (the revision it reads at, the next key, how many objects it
//! gave) so that it can stop at an object boundary and resume there with a fresh database scan:
//! a whole page in one step ([`Store::list`](super::Store::list)), or a step per chunk of a
//! streamed answer ([`ListStream`]), which then pins no iterator between chunks and holds no
//! more than one chunk of items.
//!
//! Between steps the store may be compacted past the list's revision, removing versions the
//! rest of the list would read: a step that ends with the compacted revision after the list's
//! is an [`Error::Expired`], never a list missing objects.

use super::continue_token::Token;
use super::core::Core;
use super::keys::{self, VersionKey, CF_OBJECTS};
use super::kv::Flow;
use super::object;
use super::selectors::{ObjectFilter, Selectors};
use super::types::Registered;
use super::Revision;
use super::{view, Store};
use crate::{Error, Result};
use serde_json::Value;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// What a list makes of a visible record (its key, which holds its revision, its bytes, and the
/// selector on the object to apply): the size of the item it gave (counted against a step's
/// budget), or `None` when the selector does not select it.
pub(super) type Visit<'a> = dyn FnMut(&VersionKey<'_>, &[u8], Option<&ObjectFilter<'_>>) -> Result<Option<usize>> + 'a;

/// How much one step may do before it stops at the next object boundary.
#[derive(Debug, Clone, Copy)]
pub(super) struct Budget {
    /// Item bytes (as the visitor counts them).
    pub(super) bytes: usize,
    /// Objects looked at (selected or not, tombstones included, and the ones counted after a full page).
    pub(super) objects: usize,
}

impl Budget {
    /// No bound: the whole page in one step.
    pub(super) const UNBOUNDED: Budget = Budget { bytes: usize::MAX, objects: usize::MAX };
}

/// Where a list is: its revision and range, and what the steps so far found.
#[derive(Debug, Clone)]
pub(super) struct Scan {
    /// The revision the list is read at.
    pub(super) at: u64,
    /// The key the next step starts at (an object's first key).
    key: Vec<u8>,
    end: Option<Vec<u8>>,
    /// The page size (`usize::MAX`: unpaged).
    limit: usize,
    /// The objects remaining after the previous page (carried by its continue token).
    remaining: Option<u64>,
    /// Whether selectors select (no remaining item count then).
    filtered: bool,
    /// The items given so far.
    emitted: usize,
    /// The objects counted after a full page.
    counted: u64,
    /// Whether an object follows the page.
    more: bool,
    /// The key after the page's last object, once the page is full.
    next_key: Option<Vec<u8>>,
    done: bool,
    /// The steps taken.
    steps: u32,
}

impl Scan {
    /// A scan of `[key, end)` at revision `at`, of pages of `limit` objects.
    pub(super) fn new(at: u64, key: Vec<u8>, end: Option<Vec<u8>>, limit: usize, remaining: Option<u64>, filtered: bool) -> Scan {
        Scan { at, key, end, limit, remaining, filtered, emitted: 0, counted: 0, more: false, next_key: None, done: false, steps: 0 }
    }

    /// Whether the page is read to its end.
    pub(super) fn done(&self) -> bool {
        self.done
    }

    /// Reads on from where the last step stopped, the newest version of each object as of the
    /// list's revision (deleted ones left out), those the selectors select given to `visit`,
    /// until the page is full or `budget` is spent.
    pub(super) fn step(&mut self, core: &Core, selectors: &Selectors, budget: Budget, visit: &mut Visit<'_>) -> Result<()> {
        if self.done {
            return Ok(());
        }
        let filter = selectors.filter();
        // Counting the rest is only needed without a selector on a first page; later pages carry
        // the count in their token.
        let count_rest = !self.filtered && self.remaining.is_none();
        let (at, limit) = (self.at, self.limit);
        // The object whose newest visible version was found (later keys of it are older
        // versions), in a buffer reused from object to object.
        let (mut decided, mut deciding) = (Vec::new(), false);
        let mut resume: Option<Vec<u8>> = None;
        let (mut spent, mut looked) = (0usize, 0usize);
        let from = std::mem::take(&mut self.key);
        let end = self.end.take();
        // A list read in chunks (a stream) is a bulk read: it bypasses the block cache.
        let bulk = budget.objects != usize::MAX;
        let scan = if bulk { super::kv::Kv::scan_bulk } else { super::kv::Kv::scan };
        let scanned = scan(&*core.kv, CF_OBJECTS, &from, end.as_deref(), &mut |k, v| {
            let key = keys::parse_object_key(k)?;
            if (deciding && decided == key.prefix) || key.revision > at {
                return Ok(Flow::Continue);
            }
            if spent >= budget.bytes || looked >= budget.objects {
                resume = Some(key.prefix.to_vec());
                return Ok(Flow::Stop);
            }
            looked += 1;
            decided.clear();
            decided.extend_from_slice(key.prefix);
            deciding = true;
            if object::is_tombstone(v) {
                return Ok(Flow::Continue);
            }
            if self.emitted >= limit {
                self.more = true;
                if count_rest {
                    self.counted += 1;
                    return Ok(Flow::Continue);
                }
                return Ok(Flow::Stop);
            }
            if let Some(f) = &selectors.fields {
                if !f.matches(key.name, key.namespace) {
                    return Ok(Flow::Continue);
                }
            }
            let Some(size) = visit(&key, v, filter.as_ref())? else {
                return Ok(Flow::Continue);
            };
            self.emitted += 1;
            spent = spent.saturating_add(size);
            if self.emitted == limit {
                self.next_key = keys::prefix_end(key.prefix);
            }
            Ok(Flow::Continue)
        });
        self.end = end;
        scanned?;
        match resume {
            Some(key) => self.key = key,
            None => self.done = true,
        }
        self.steps += 1;
        // One step is one database scan, consistent in itself; later ones must find the
        // versions the first saw.
        let compacted = core.compacted.load(Ordering::SeqCst);
        if self.steps > 1 && at < compacted {
            return Err(Error::Expired(format!("too old resource version: {at} ({compacted}): compacted while the list was read")));
        }
        Ok(())
    }

    /// The list's metadata, once [`Scan::done`]: its revision, remaining item count (none with
    /// selectors) and the token of the next page.
    pub(super) fn meta(&self) -> ListMeta {
        let remaining_item_count = if self.filtered {
            None
        } else if let Some(r) = self.remaining {
            Some(r.saturating_sub(self.emitted as u64))
        } else {
            Some(self.counted)
        };
        let remaining_item_count = remaining_item_count.filter(|_| self.more);
        let continue_token = match (self.more, &self.next_key) {
            (true, Some(key)) => Some(Token { revision: self.at, remaining: remaining_item_count, key: key.clone() }.encode()),
            _ => None,
        };
        ListMeta { resource_version: super::Revision(self.at), continue_token, remaining_item_count }
    }
}

/// What a list says of itself besides its items (Kubernetes' `ListMeta`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListMeta {
    /// The revision the list was read at.
    pub resource_version: Revision,
    /// The token of the next page, if there is more.
    pub continue_token: Option<String>,
    /// How many objects follow this page (only without selectors, as Kubernetes).
    pub remaining_item_count: Option<u64>,
}

impl ListMeta {
    /// The list's `metadata`: its resourceVersion, continue token and remaining item count.
    #[must_use]
    pub fn to_json(&self) -> Value {
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

/// A list read in chunks as it is sent: the answer of [`Store::list_stream`], the same items,
/// revision, continue token and remaining item count as [`Store::list_json`] with the same
/// options, without holding more than one chunk of them.
///
/// The revision, start and selectors are fixed when the stream is made (its errors are those
/// of [`Store::list`]); each [`ListStream::next_chunk`] is one database scan from where the last
/// stopped. A stream may be cloned before it is read, to read the same list twice (a protobuf
/// answer sizes its items before it writes them).
#[derive(Clone)]
pub struct ListStream {
    store: Store,
    t: Arc<Registered>,
    selectors: Arc<Selectors>,
    scan: Scan,
    /// Each item's JSON text, reused.
    scratch: Vec<u8>,
}

impl std::fmt::Debug for ListStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListStream").field("resource", &self.t.spec.resource()).field("scan", &self.scan).finish_non_exhaustive()
    }
}

impl ListStream {
    /// About how many bytes of item JSON one [`ListStream::next_chunk`] gives.
    pub const CHUNK_BYTES: usize = 64 * 1024;
    /// At most how many objects one [`ListStream::next_chunk`] looks at (so that a selector
    /// selecting few, or the count after a full page, still returns between chunks).
    pub const CHUNK_OBJECTS: usize = 16 * 1024;

    pub(super) fn new(store: Store, t: Arc<Registered>, selectors: Selectors, scan: Scan) -> ListStream {
        ListStream { store, t, selectors: Arc::new(selectors), scan, scratch: Vec::new() }
    }

    /// The revision the list is read at.
    #[must_use]
    pub fn resource_version(&self) -> super::Revision {
        super::Revision(self.scan.at)
    }

    /// Reads the next chunk, about `bytes` of item JSON (at least one item unless the list is
    /// at its end), giving each item's JSON text (the bytes [`Store::list_json`] gives for it)
    /// to `item`. The list's metadata once it is read to its end, else `None`: call again.
    ///
    /// # Errors
    /// [`Error::Expired`] when the store was compacted past the list's revision while it was
    /// read; [`Error::Corrupt`] for a record that does not decode; `item`'s errors.
    pub fn next_chunk(&mut self, bytes: usize, item: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<Option<ListMeta>> {
        self.next_chunk_of(bytes, &mut |mut listed| {
            let Some(json) = listed.json()? else { return Ok(None) };
            item(json)?;
            Ok(Some(json.len()))
        })
    }

    /// [`ListStream::next_chunk`] giving each object as it is read, its JSON text written only
    /// when asked for ([`Listed::json`]): `item` answers the size of what it made of the item
    /// (counted against `bytes`), or `None` when the list's selectors leave the object out.
    ///
    /// # Errors
    /// As [`ListStream::next_chunk`].
    pub fn next_chunk_of(&mut self, bytes: usize, item: &mut dyn FnMut(Listed<'_>) -> Result<Option<usize>>) -> Result<Option<ListMeta>> {
        let budget = Budget { bytes, objects: Self::CHUNK_OBJECTS };
        let ListStream { store, t, selectors, scan, scratch } = self;
        scan.step(store.core(), selectors, budget, &mut |key, record, filter| {
            scratch.clear();
            item(Listed { t, key, record, filter, json: scratch, written: false })
        })?;
        Ok(scan.done().then(|| scan.meta()))
    }
}

/// One object of a streamed list as it is read: its namespace, name and revision at once, its
/// JSON text (and whether the list's selectors select it) when asked for.
pub struct Listed<'a> {
    t: &'a Registered,
    key: &'a VersionKey<'a>,
    record: &'a [u8],
    filter: Option<&'a ObjectFilter<'a>>,
    json: &'a mut Vec<u8>,
    written: bool,
}

impl<'a> Listed<'a> {
    /// The object's namespace (empty for a cluster-scoped object).
    #[must_use]
    pub fn namespace(&self) -> &'a str {
        self.key.namespace
    }

    /// The object's name.
    #[must_use]
    pub fn name(&self) -> &'a str {
        self.key.name
    }

    /// The revision of the listed version (its `resourceVersion`).
    #[must_use]
    pub fn revision(&self) -> u64 {
        self.key.revision
    }

    /// Whether the list's selectors must read the object to tell whether it is in the list
    /// (then [`Listed::json`] tells).
    #[must_use]
    pub fn selected_by_reading(&self) -> bool {
        self.filter.is_some()
    }

    /// The item's JSON text (the bytes [`Store::list_json`] gives for it), or `None` when the
    /// list's selectors leave the object out.
    ///
    /// # Errors
    /// [`Error::Corrupt`] for a record that does not decode.
    pub fn json(&mut self) -> Result<Option<&[u8]>> {
        if !self.written {
            self.json.clear();
            if !item_json(self.t, self.record, self.key.revision, self.filter, self.json)? {
                return Ok(None);
            }
            self.written = true;
        }
        Ok(Some(self.json))
    }
}

/// Writes to `out` the JSON text of the item a list gives for `record` stored at `revision`:
/// false when `filter` does not select it.
pub(super) fn item_json(
    t: &Registered,
    record: &[u8],
    revision: u64,
    filter: Option<&ObjectFilter<'_>>,
    out: &mut Vec<u8>,
) -> Result<bool> {
    // Label selectors (and field selectors beyond the name) read the object; so do the
    // defaults of a custom resource's schema, and a view of another version (which
    // rewrites each object's apiVersion).
    if filter.is_some() || (t.custom.is_some() && t.spec.reshaped) || t.converts() {
        let mut obj = object::decode(record, revision)?;
        t.to_served(&mut obj);
        let _ = t.read_view(&mut obj);
        if filter.is_some_and(|l| !l.matches(&obj)) {
            return Ok(false);
        }
        fieldstore_codec::json_text::write_value(out, &obj);
        return Ok(true);
    }
    out.reserve(record.len() + 512);
    view::write_json(record, revision, out)?;
    Ok(true)
}
