//! etcd watches: the change log replayed from a revision, then the committer's live groups.
//!
//! Registration takes the hub lock that the committer holds while it publishes a revision,
//! so the replay `[start, registered]` and the live groups (after `registered`) meet exactly.
//! A watcher that falls [`Options::watch_buffer`](super::super::Options::watch_buffer) groups
//! behind is dropped by the committer (which never blocks) and catches up from the change
//! log, as etcd moves a slow watcher to its unsynced set.

use super::super::core::Core;
use super::super::etcd_state::{within, EventGroup, Inbox, KeyEvent};
use super::super::keys::{self, Change, CF_CHANGES};
use super::super::kv::Flow;
use super::layout::{parse_change_prefix, unescape, Touch};
use super::read::{self, bounds, key_value};
use super::{EtcdApiError, KeyValue, Store};
use crate::{Error, Result};
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// What to watch (etcd's `WatchCreateRequest`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WatchRequest {
    /// The first key.
    pub key: Vec<u8>,
    /// As [`super::RangeRequest::range_end`].
    pub range_end: Vec<u8>,
    /// The first revision to send (0 or less: changes after the current one).
    pub start_revision: i64,
    /// Send each event's previous version.
    pub prev_kv: bool,
    /// Leave puts out.
    pub no_put: bool,
    /// Leave deletes out.
    pub no_delete: bool,
}

/// An open etcd watch.
pub struct EtcdWatch {
    core: Arc<Core>,
    from: Vec<u8>,
    to: Option<Vec<u8>>,
    req: WatchRequest,
    inbox: Inbox,
    /// The change log still to replay, `next..=end`.
    replay: Option<(u64, u64)>,
    /// Events before this revision are not sent (a watch from a future revision).
    min_rev: u64,
    /// Every change up to this revision has been returned (or is not for this watch).
    last: u64,
    pending: VecDeque<KeyEvent>,
}

impl std::fmt::Debug for EtcdWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdWatch").field("key", &self.req.key).field("last", &self.last).finish()
    }
}

impl Drop for EtcdWatch {
    fn drop(&mut self) {
        let _hub = self.core.hub.lock();
        self.core.etcd.watchers.lock().remove(self.inbox.id);
    }
}

/// Opens a watcher's slot for the escaped keys `[from, to)` at the current revision: the slot
/// and that revision.
fn register(core: &Core, from: &[u8], to: Option<&[u8]>) -> (Inbox, u64) {
    let _hub = core.hub.lock();
    let at = core.visible.load(Ordering::SeqCst);
    (core.etcd.watchers.lock().register(core.options.watch_buffer.max(1), from.to_vec(), to.map(<[u8]>::to_vec)), at)
}

impl Store {
    /// Watches a key or a range from a revision.
    ///
    /// # Errors
    /// [`EtcdApiError::Compacted`] when the start revision is before the compacted revision
    /// ([`Store::compacted_revision`] is the one etcd reports).
    pub fn etcd_watch(&self, req: WatchRequest) -> Result<EtcdWatch> {
        self.etcd_supported()?;
        if req.key.is_empty() {
            return Err(Error::EtcdApi(EtcdApiError::EmptyKey));
        }
        let core = self.inner.core.clone();
        let (from, to) = bounds(&req.key, &req.range_end);
        let (inbox, at) = register(&core, &from, to.as_deref());
        let start = u64::try_from(req.start_revision).unwrap_or(0);
        let mut watch = EtcdWatch { core, from, to, req, inbox, replay: None, min_rev: start, last: at, pending: VecDeque::new() };
        if start > 0 && start <= at {
            if start < watch.core.compacted.load(Ordering::SeqCst) {
                return Err(Error::EtcdApi(EtcdApiError::Compacted));
            }
            watch.replay = Some((start, at));
            watch.last = start - 1;
        }
        Ok(watch)
    }
}

impl EtcdWatch {
    fn wants(&self, e: &KeyEvent) -> bool {
        within(&super::layout::escape(&e.kv.key), &self.from, self.to.as_deref())
            && !(e.deleted && self.req.no_delete)
            && (e.deleted || !self.req.no_put)
    }

    fn shaped(&self, mut e: KeyEvent) -> KeyEvent {
        if !self.req.prev_kv {
            e.prev = None;
        }
        e
    }

    /// Reads up to 256 revisions of the change log to replay.
    fn replay_chunk(&mut self, next: u64, end: u64) -> Result<()> {
        if next < self.core.compacted.load(Ordering::SeqCst) {
            return Err(Error::EtcdApi(EtcdApiError::Compacted));
        }
        let mut changes = Vec::new();
        self.core.kv.scan(CF_CHANGES, &keys::change_key(next), Some(&keys::change_key(end.saturating_add(1))), &mut |k, v| {
            changes.push((keys::read_u64(k)?, Change::decode(v)?));
            Ok(if changes.len() >= 256 { Flow::Stop } else { Flow::Continue })
        })?;
        let upto = if changes.len() >= 256 { changes.last().map_or(end, |(r, _)| *r) } else { end };
        for (rev, ch) in changes {
            let Some(touched) = parse_change_prefix(&ch.object_prefix)? else { continue };
            for (touch, escaped) in touched {
                let (key, _) = unescape(&escaped)?;
                let probe =
                    KeyEvent { deleted: touch == Touch::Delete, kv: KeyValue { key: key.clone(), ..KeyValue::default() }, prev: None };
                if !self.wants(&probe) {
                    continue;
                }
                let prev = if self.req.prev_kv || touch == Touch::Delete {
                    read::live_before(&self.core, &escaped, rev)?.map(|(r, v)| key_value(key.clone(), r, v))
                } else {
                    None
                };
                let event = match touch {
                    Touch::Delete => KeyEvent {
                        deleted: true,
                        kv: KeyValue { key, mod_revision: i64::try_from(rev).unwrap_or(i64::MAX), ..KeyValue::default() },
                        prev,
                    },
                    Touch::Put => {
                        let v = read::version_at(&self.core, &escaped, rev)?.ok_or(Error::EtcdApi(EtcdApiError::Compacted))?;
                        KeyEvent { deleted: false, kv: key_value(key, rev, v), prev }
                    }
                };
                let event = self.shaped(event);
                self.pending.push_back(event);
            }
        }
        self.last = upto;
        self.replay = (upto < end).then_some((upto + 1, end));
        Ok(())
    }

    /// Takes a live group.
    fn take_group(&mut self, group: &EventGroup) {
        self.inbox.queued.fetch_sub(1, Ordering::SeqCst);
        for (rev, e) in group.iter() {
            if *rev > self.last && *rev >= self.min_rev && self.wants(e) {
                let e = self.shaped(e.clone());
                self.pending.push_back(e);
            }
        }
        if let Some((rev, _)) = group.last() {
            self.last = self.last.max(*rev);
        }
    }

    /// After falling behind: a new slot, and the change log since the last revision returned.
    fn resync(&mut self) {
        let (inbox, at) = register(&self.core, &self.from, self.to.as_deref());
        {
            let _hub = self.core.hub.lock();
            self.core.etcd.watchers.lock().remove(self.inbox.id);
        }
        self.inbox = inbox;
        if at > self.last {
            self.replay = Some((self.last + 1, at));
        }
    }

    /// The next events (at least one), waiting for them; `Ok(None)` when the store closed.
    ///
    /// # Errors
    /// [`EtcdApiError::Compacted`] when the revisions still to send were compacted meanwhile;
    /// storage errors.
    pub async fn next_async(&mut self) -> Result<Option<Vec<KeyEvent>>> {
        loop {
            if !self.pending.is_empty() {
                return Ok(Some(self.pending.drain(..).collect()));
            }
            if let Some((next, end)) = self.replay {
                self.replay_chunk(next, end)?;
                continue;
            }
            while let Ok(group) = self.inbox.rx.try_recv() {
                self.take_group(&group);
            }
            if !self.pending.is_empty() {
                continue;
            }
            if self.inbox.overflowed.load(Ordering::SeqCst) {
                self.resync();
                continue;
            }
            match self.inbox.rx.recv_async().await {
                Ok(group) => self.take_group(&group),
                Err(_) if self.inbox.overflowed.load(Ordering::SeqCst) => self.resync(),
                Err(_) => return Ok(None),
            }
        }
    }

    /// [`EtcdWatch::next_async`], waiting on this thread.
    ///
    /// # Errors
    /// As [`EtcdWatch::next_async`].
    pub fn next_blocking(&mut self) -> Result<Option<Vec<KeyEvent>>> {
        super::super::wait::block_on(self.next_async())
    }

    /// The revision a progress notification may report: every change up to it has been
    /// returned. `None` while the watch has events or a replay in hand (etcd sends progress only
    /// to synced watchers).
    #[must_use]
    pub fn progress(&self) -> Option<u64> {
        if !self.pending.is_empty() || self.replay.is_some() {
            return None;
        }
        let _hub = self.core.hub.lock();
        self.inbox.rx.is_empty().then(|| self.core.visible.load(Ordering::SeqCst).max(self.last))
    }
}
