//! Watches: a replay of the change log from a revision, then live changes, with bookmarks.
//!
//! A watch is a small state machine:
//! 1. **initial**: from an unset or `"0"` resourceVersion, synthetic `ADDED` events for every
//!    object at the registration revision (then, when bookmarks are allowed, a bookmark carrying
//!    the `k8s.io/initial-events-end` annotation);
//! 2. **replay**: from revision `R`, the change log `(R, registration]` read in chunks;
//! 3. **live**: changes the committer broadcast after registration: each committed group once
//!    per watcher it concerns, through the watch's channel.
//!
//! Registration takes the hub lock that the committer holds while publishing a revision and
//! broadcasting it, so the replay and the live channel meet exactly: nothing lost, nothing
//! repeated. A watcher with [`Options::watch_buffer`](super::Options::watch_buffer) events
//! queued and not taken is dropped by the committer (which never blocks); the watch then ends
//! with an [`Error::Expired`] event naming the last revision it delivered.
//!
//! A watch is read blocking ([`Watch::next_timeout`], the iterator) or awaited on any executor
//! ([`Watch::next_async`], [`Watch::try_next`]): the server's watch streams are tasks.
//!
//! Bookmarks (when allowed): after [`Options::bookmark_interval`](super::Options::bookmark_interval)
//! without events, and whenever [`Store::request_bookmark`] is called. A bookmark at `N` means every
//! change up to `N` has been delivered.

use super::address::{Collection, Revision};
use super::core::Core;
use super::hub::Msg;
use super::keys::{self, Change, EventType, CF_CHANGES, CF_OBJECTS};
use super::kv::Flow;
use super::options::{ListOptions, ResourceVersionMatch};
use super::selectors::{parse_rv, FieldSelector, LabelSelector};
use super::types::Registered;
use super::{object, validate, Store};
use crate::{Error, Result};
use flume::{Receiver, RecvTimeoutError, TryRecvError};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

/// The annotation of the bookmark that ends the initial events of a watch-list.
pub const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// Options of a watch.
#[derive(Debug, Clone, Default)]
pub struct WatchOptions {
    /// Unset or `"0"`: the current state as `ADDED` events, then changes; `N`: every change after
    /// revision `N`.
    pub resource_version: Option<String>,
    /// Label selector (see [`ListOptions::label_selector`]).
    pub label_selector: Option<String>,
    /// Field selector (see [`ListOptions::field_selector`]).
    pub field_selector: Option<String>,
    /// Whether BOOKMARK events are sent (Kubernetes' `allowWatchBookmarks`).
    pub allow_bookmarks: bool,
    /// `Some(true)`: the current state as `ADDED` events — at a revision not older than
    /// `resource_version` when one is given (`resourceVersionMatch=NotOlderThan`) — ending with a
    /// bookmark annotated [`INITIAL_EVENTS_END`] (watch-list); `Some(false)`: no initial events;
    /// `None`: initial events for an unset or `"0"` resourceVersion.
    pub send_initial_events: Option<bool>,
}

/// An event of a watch.
#[derive(Debug)]
pub enum WatchEvent {
    /// An object was created, or entered the selection.
    Added(Arc<Value>),
    /// An object changed.
    Modified(Arc<Value>),
    /// An object was deleted (its last state), or left the selection.
    Deleted(Arc<Value>),
    /// Every change up to `revision` has been delivered.
    Bookmark {
        /// The revision.
        revision: Revision,
        /// Whether this bookmark ends the initial events of a watch-list.
        initial_events_end: bool,
    },
    /// The watch ended with this error.
    Error(Error),
}

impl WatchEvent {
    /// The revision of the event (`None` for errors).
    #[must_use]
    pub fn revision(&self) -> Option<Revision> {
        match self {
            WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => {
                o.get("metadata").and_then(|m| m.get("resourceVersion")).and_then(Value::as_str).and_then(|s| s.parse().ok()).map(Revision)
            }
            WatchEvent::Bookmark { revision, .. } => Some(*revision),
            WatchEvent::Error(_) => None,
        }
    }

    /// The event type as a Kubernetes watch stream names it.
    #[must_use]
    pub fn type_name(&self) -> &'static str {
        match self {
            WatchEvent::Added(_) => "ADDED",
            WatchEvent::Modified(_) => "MODIFIED",
            WatchEvent::Deleted(_) => "DELETED",
            WatchEvent::Bookmark { .. } => "BOOKMARK",
            WatchEvent::Error(_) => "ERROR",
        }
    }

    /// The event as a Kubernetes `WatchEvent` (`{"type", "object"}`); bookmarks carry an object
    /// of the watched kind with only its resourceVersion, errors a `Status`.
    #[must_use]
    pub fn to_json(&self, api_version: &str, kind: &str) -> Value {
        let object = match self {
            WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => (**o).clone(),
            WatchEvent::Bookmark { revision, initial_events_end } => {
                let mut meta = json!({"resourceVersion": revision.to_string()});
                if *initial_events_end {
                    meta["annotations"] = json!({INITIAL_EVENTS_END: "true"});
                }
                json!({"apiVersion": api_version, "kind": kind, "metadata": meta})
            }
            WatchEvent::Error(e) => e.to_status(),
        };
        json!({"type": self.type_name(), "object": object})
    }
}

/// An open watch: an iterator of [`WatchEvent`]s (blocking), or polled with
/// [`Watch::next_timeout`]. Dropping it unregisters it. A watch keeps the database open: the
/// directory can be reopened only once the store and its watches are dropped.
pub struct Watch {
    core: Arc<Core>,
    t: Arc<Registered>,
    id: u64,
    rx: Receiver<Msg>,
    /// Events the hub queued for this watch and it has not taken yet.
    queued: Arc<AtomicUsize>,
    overflowed: Arc<AtomicBool>,
    namespace: Option<String>,
    labels: Option<LabelSelector>,
    fields: Option<FieldSelector>,
    allow_bookmarks: bool,
    pending: VecDeque<WatchEvent>,
    /// The change log still to replay: `(next, end]` inclusive bounds as `next..=end`.
    replay: Option<(u64, u64)>,
    /// Every change up to this revision has been delivered or skipped.
    last: u64,
    last_sent: Instant,
    ended: bool,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch").field("resource", &self.t.spec.resource()).field("last", &self.last).field("ended", &self.ended).finish()
    }
}

impl Store {
    /// Watches a collection: a resource in one namespace, or in all with no namespace.
    ///
    /// # Errors
    /// [`Error::Expired`] when the resourceVersion is before the compacted revision (not for a
    /// watch-list, which starts from the current state); [`Error::TooLargeResourceVersion`] when a
    /// watch-list's resourceVersion is not reached in time; [`Error::BadRequest`] for malformed
    /// selectors or resourceVersions.
    pub fn watch(&self, of: &Collection, opts: &WatchOptions) -> Result<Watch> {
        let t = self.resolve(&of.resource)?;
        let namespace = of.ns().filter(|s| !s.is_empty()).map(str::to_string);
        if let Some(ns) = &namespace {
            validate::namespace(ns)?;
        }
        let labels = opts.label_selector.as_deref().map(LabelSelector::parse).transpose()?;
        let fields = opts.field_selector.as_deref().map(FieldSelector::parse).transpose()?;
        if let Some(f) = &fields {
            f.check(&t.spec.resource(), t.spec.selectable_fields())?;
        }
        let rv = parse_rv(opts.resource_version.as_deref())?;
        let core = self.inner.core.clone();
        // A watch-list from a resourceVersion starts from a state not older than it (client-go's
        // reflector sends its last one when it lists again), as kube-apiserver's watch cache.
        let start = rv.filter(|&r| r > 0);
        let watch_list = opts.send_initial_events == Some(true);
        match start {
            Some(r) if watch_list => core.wait_for(r)?,
            Some(r) => core.check_compacted(r)?,
            None => {}
        }
        let (id, inbox, reg) = {
            let mut hub = core.hub.lock();
            let reg = core.visible.load(Ordering::SeqCst);
            let (id, inbox) = hub.register(t.id, namespace.clone(), core.options.watch_buffer);
            (id, inbox, reg)
        };
        let mut w = Watch {
            core: core.clone(),
            t: t.clone(),
            id,
            rx: inbox.rx,
            queued: inbox.queued,
            overflowed: inbox.overflowed,
            namespace: namespace.clone(),
            labels,
            fields,
            allow_bookmarks: opts.allow_bookmarks,
            pending: VecDeque::new(),
            replay: None,
            last: reg,
            last_sent: Instant::now(),
            ended: false,
        };
        match start.filter(|_| !watch_list) {
            Some(r) => {
                w.last = r.max(reg);
                if r < reg {
                    w.replay = Some((r + 1, reg));
                }
            }
            None => {
                if opts.send_initial_events != Some(false) {
                    if reg > 0 {
                        let list = self.list(
                            // A view lists at its version.
                            &Collection {
                                resource: if t.is_view() { t.spec.versioned_resource() } else { t.spec.resource() },
                                namespace: namespace.clone(),
                            },
                            &ListOptions {
                                label_selector: opts.label_selector.clone(),
                                field_selector: opts.field_selector.clone(),
                                resource_version: Some(reg.to_string()),
                                resource_version_match: Some(ResourceVersionMatch::Exact),
                                ..ListOptions::default()
                            },
                        )?;
                        w.pending.extend(list.items.into_iter().map(|o| WatchEvent::Added(Arc::new(o))));
                    }
                    // kube-apiserver (1.37) ends the initial events with the bookmark whenever
                    // bookmarks are allowed, asked for (`sendInitialEvents=true`) or not.
                    if opts.allow_bookmarks {
                        w.pending.push_back(WatchEvent::Bookmark { revision: Revision(reg), initial_events_end: true });
                    }
                }
            }
        }
        Ok(w)
    }
}

impl Watch {
    /// Whether the watch has ended (after an error event, or when the store closed).
    #[must_use]
    pub fn is_ended(&self) -> bool {
        self.ended && self.pending.is_empty()
    }

    /// The next event, waiting at most `timeout`; `None` when nothing came in time or the watch
    /// has ended (see [`Watch::is_ended`]).
    pub fn next_timeout(&mut self, timeout: Duration) -> Option<WatchEvent> {
        // A timeout beyond the clock's range (`Duration::MAX`) waits without a deadline.
        let deadline = Instant::now().checked_add(timeout);
        loop {
            if let Some(e) = self.ready() {
                return Some(e);
            }
            if self.ended {
                return None;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return None;
            }
            if self.spin_for_message() {
                continue;
            }
            let until = match (self.bookmark_due(), deadline) {
                (Some(b), Some(d)) => Some(b.min(d)),
                (b, d) => b.or(d),
            };
            let received = match until {
                Some(t) => self.rx.recv_deadline(t),
                None => self.rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            };
            match received {
                Ok(m) => self.receive(m),
                Err(RecvTimeoutError::Timeout) => self.idle(),
                Err(RecvTimeoutError::Disconnected) => self.disconnected(),
            }
        }
    }

    /// The next event, awaited on any executor: what a server's watch stream polls, so that a
    /// watch is a task rather than a thread. `sleep` makes the executor's timer future (e.g.
    /// `tokio::time::sleep`), used for idle bookmarks. `None` once the watch has ended.
    ///
    /// Replaying the change log (a watch from an old resourceVersion) and the initial events
    /// read the database in between awaits, in chunks of at most 256 changes.
    pub async fn next_async<F: Future<Output = ()>>(&mut self, mut sleep: impl FnMut(Duration) -> F) -> Option<WatchEvent> {
        loop {
            if let Some(e) = self.ready() {
                return Some(e);
            }
            if self.ended {
                return None;
            }
            let received = match self.bookmark_wait(Instant::now()) {
                None => Some(self.rx.recv_async().await),
                Some(wait) => first_of(self.rx.recv_async(), sleep(wait)).await,
            };
            match received {
                Some(Ok(m)) => self.receive(m),
                Some(Err(flume::RecvError::Disconnected)) => self.disconnected(),
                None => self.idle(),
            }
        }
    }

    /// The next event that is ready without waiting: pending events, the next replay chunk,
    /// what the hub already sent. `None` when the watch must wait (or has ended); a server
    /// drains a watch with this before it sets up an await.
    pub fn try_next(&mut self) -> Option<WatchEvent> {
        self.ready()
    }

    fn ready(&mut self) -> Option<WatchEvent> {
        loop {
            if let Some(e) = self.pending.pop_front() {
                self.last_sent = Instant::now();
                return Some(e);
            }
            if self.ended {
                return None;
            }
            if let Some((next, end)) = self.replay {
                self.replay_chunk(next, end);
                continue;
            }
            match self.rx.try_recv() {
                Ok(m) => self.receive(m),
                Err(TryRecvError::Disconnected) => self.disconnected(),
                Err(TryRecvError::Empty) => return None,
            }
        }
    }

    /// Spins, then yields, a few times for the hub's next message before the thread parks (as
    /// crossbeam's channels do): a watch that keeps up is sent its next group within
    /// microseconds, and a parked watcher costs the committer a futex wake per group. `true`
    /// when a message (or the disconnect) was taken.
    fn spin_for_message(&mut self) -> bool {
        let mut step = 0;
        loop {
            match self.rx.try_recv() {
                Ok(m) => {
                    self.receive(m);
                    return true;
                }
                Err(TryRecvError::Disconnected) => {
                    self.disconnected();
                    return true;
                }
                Err(TryRecvError::Empty) if super::wait::backoff(step) => step += 1,
                Err(TryRecvError::Empty) => return false,
            }
        }
    }

    /// When an idle bookmark is due (`None` when bookmarks are not allowed, or the interval is
    /// beyond the clock's range).
    fn bookmark_due(&self) -> Option<Instant> {
        self.allow_bookmarks.then(|| self.last_sent.checked_add(self.core.options.bookmark_interval)).flatten()
    }

    /// How long until an idle bookmark is due (`None` when none is, see [`Watch::bookmark_due`]).
    fn bookmark_wait(&self, now: Instant) -> Option<Duration> {
        self.bookmark_due().map(|due| due.saturating_duration_since(now))
    }

    /// Takes a message of the hub.
    fn receive(&mut self, m: Msg) {
        self.queued.fetch_sub(m.weight(), Ordering::SeqCst);
        match m {
            Msg::Changes(group, _) => {
                for c in group.iter() {
                    if c.revision <= self.last || !c.concerns(self.t.id, self.namespace.as_deref()) {
                        continue;
                    }
                    self.last = c.revision;
                    if let Some(e) = self.event_for(c.event, &c.object, c.prev.as_deref()) {
                        self.pending.push_back(e);
                    }
                }
            }
            Msg::Bookmark(rev) => {
                self.last = self.last.max(rev);
                if self.allow_bookmarks {
                    self.pending.push_back(WatchEvent::Bookmark { revision: Revision(self.last), initial_events_end: false });
                }
            }
        }
    }

    /// Nothing came within the wait: a bookmark at the visible revision when one is due.
    fn idle(&mut self) {
        if self.bookmark_due().is_some_and(|due| Instant::now() >= due) {
            // Under the hub lock, an empty channel means every published change has been
            // received.
            let hub = self.core.hub.lock();
            if self.rx.is_empty() {
                self.last = self.last.max(self.core.visible.load(Ordering::SeqCst));
                drop(hub);
                self.pending.push_back(WatchEvent::Bookmark { revision: Revision(self.last), initial_events_end: false });
            }
        }
    }

    /// The hub dropped this watch: the store closed, or the watcher fell too far behind (410).
    fn disconnected(&mut self) {
        self.ended = true;
        if self.overflowed.load(Ordering::SeqCst) {
            self.pending.push_back(WatchEvent::Error(Error::Expired(format!(
                "watch closed: the watcher fell more than {} events behind; watch again from resourceVersion {}",
                self.core.options.watch_buffer, self.last
            ))));
        }
    }

    /// Reads up to 256 changes of the log to replay.
    fn replay_chunk(&mut self, next: u64, end: u64) {
        let compacted = self.core.compacted.load(Ordering::SeqCst);
        if next.saturating_sub(1) < compacted {
            self.fail(Error::Expired(format!("too old resource version: {} ({compacted})", next - 1)));
            return;
        }
        let mut changes = Vec::new();
        let res = self.core.kv.scan(CF_CHANGES, &keys::change_key(next), Some(&keys::change_key(end.saturating_add(1))), &mut |k, v| {
            changes.push((keys::read_u64(k)?, Change::decode(v)?));
            Ok(if changes.len() >= 256 { Flow::Stop } else { Flow::Continue })
        });
        if let Err(e) = res {
            self.fail(e);
            return;
        }
        let mut upto = end;
        if changes.len() >= 256 {
            upto = changes.last().map_or(end, |(r, _)| *r);
        }
        for (rev, ch) in changes {
            match self.replay_one(rev, &ch) {
                Ok(Some(e)) => self.pending.push_back(e),
                Ok(None) => {}
                Err(e) => {
                    self.pending.clear();
                    self.fail(e);
                    return;
                }
            }
        }
        self.replay = (upto < end).then_some((upto + 1, end));
    }

    fn replay_one(&self, rev: u64, ch: &Change) -> Result<Option<WatchEvent>> {
        let key_tid = ch.object_prefix.get(..4).and_then(|b| b.try_into().ok()).map(u32::from_be_bytes);
        if key_tid != Some(self.t.id) {
            return Ok(None);
        }
        let key = keys::object_key(&ch.object_prefix, rev);
        let parsed = keys::parse_object_key(&key)?;
        if self.namespace.as_deref().is_some_and(|ns| ns != parsed.namespace) {
            return Ok(None);
        }
        let gone = || Error::Expired(format!("too old resource version: {rev} ({})", self.core.compacted.load(Ordering::SeqCst)));
        let record = self.core.kv.get(CF_OBJECTS, &key)?.ok_or_else(gone)?;
        let mut object = object::decode(&record, rev)?;
        let _ = self.t.read_view(&mut object);
        let prev = if ch.event == EventType::Modified || self.labels.is_some() || self.fields.is_some() {
            match self.core.version_at(&ch.object_prefix, rev - 1)? {
                Some((r, rec)) if !object::is_tombstone(&rec) => {
                    let mut prev = object::decode(&rec, r)?;
                    let _ = self.t.read_view(&mut prev);
                    Some(prev)
                }
                _ => None,
            }
        } else {
            None
        };
        Ok(self.event_for(ch.event, &Arc::new(object), prev.as_ref()))
    }

    fn fail(&mut self, e: Error) {
        self.pending.push_back(WatchEvent::Error(e));
        self.ended = true;
        self.replay = None;
    }

    fn selected(&self, o: &Value) -> bool {
        let meta = o.get("metadata");
        let s = |f: &str| meta.and_then(|m| m.get(f)).and_then(Value::as_str).unwrap_or("");
        self.labels.as_ref().is_none_or(|l| l.matches(meta.and_then(|m| m.get("labels"))))
            && self.fields.as_ref().is_none_or(|f| f.matches(s("name"), s("namespace")) && f.matches_object(o))
    }

    /// The event a change is for this watch, with selectors turning entries and exits into
    /// `ADDED` and `DELETED`.
    fn event_for(&self, event: EventType, object: &Arc<Value>, prev: Option<&Value>) -> Option<WatchEvent> {
        let object = &self.t.served_arc(object);
        if self.labels.is_none() && self.fields.is_none() {
            return Some(match event {
                EventType::Added => WatchEvent::Added(object.clone()),
                EventType::Modified => WatchEvent::Modified(object.clone()),
                EventType::Deleted => WatchEvent::Deleted(object.clone()),
            });
        }
        let now = self.selected(object);
        let before = prev.is_some_and(|p| self.selected(p));
        match event {
            EventType::Added => now.then(|| WatchEvent::Added(object.clone())),
            EventType::Deleted => (now || before).then(|| WatchEvent::Deleted(object.clone())),
            EventType::Modified => match (before, now) {
                (true, true) => Some(WatchEvent::Modified(object.clone())),
                (false, true) => Some(WatchEvent::Added(object.clone())),
                (true, false) => Some(WatchEvent::Deleted(object.clone())),
                (false, false) => None,
            },
        }
    }
}

impl Iterator for Watch {
    type Item = WatchEvent;

    /// Blocks until the next event; `None` once the watch has ended.
    fn next(&mut self) -> Option<WatchEvent> {
        loop {
            if let Some(e) = self.next_timeout(Duration::from_secs(3600)) {
                return Some(e);
            }
            if self.is_ended() {
                return None;
            }
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.core.hub.lock().remove(self.id);
    }
}

/// Awaits `a` and `b` together: `Some` with `a`'s output when `a` completes first, `None` when
/// `b` does. (Both are dropped then; a flume receive dropped before completing takes nothing.)
/// Written here rather than taken from `futures-util` (`select`), which the engine does not
/// otherwise need, for these few lines.
async fn first_of<A: Future, B: Future>(a: A, b: B) -> Option<A::Output> {
    let (mut a, mut b) = (pin!(a), pin!(b));
    std::future::poll_fn(|cx| {
        if let Poll::Ready(v) = a.as_mut().poll(cx) {
            return Poll::Ready(Some(v));
        }
        if b.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        Poll::Pending
    })
    .await
}
