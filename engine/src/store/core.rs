//! The state shared by the store's handles and threads, and the reads every verb builds on.

use super::cache::ObjectCache;
use super::hub::Hub;
use super::keys::{self, CF_OBJECTS};
use super::kv::{Flow, Kv};
use super::object;
use super::options::Options;
use super::types::Registry;
use crate::fieldmanager::Time;
use crate::{Error, Result};
use parking_lot::{Condvar, Mutex, RwLock};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// State shared by the store's handles and threads.
pub(crate) struct Core {
    pub(super) kv: Box<dyn Kv>,
    pub(super) options: Options,
    pub(super) registry: RwLock<Registry>,
    pub(super) hub: Mutex<Hub>,
    /// Signalled (with `hub` held) whenever `visible` moves.
    pub(super) advanced: Condvar,
    /// Every revision up to this one is committed and visible to readers.
    pub(super) visible: AtomicU64,
    pub(super) compacted: AtomicU64,
    pub(super) stop: AtomicBool,
    /// Decoded latest versions of large objects, filled by the committer.
    pub(super) cache: ObjectCache,
    /// Held while catching up with other processes' commits (`follow::catch_up`): one at a
    /// time.
    pub(super) following: Mutex<()>,
    /// The etcd API's leases and watchers.
    pub(super) etcd: super::etcd_state::EtcdState,
}

/// The time since the Unix epoch (zero for a clock before it).
pub(super) fn now_unix() -> Duration {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default()
}

/// The current time, to the second, as managedFields and metadata timestamps carry it.
pub(super) fn now_time() -> Time {
    Time::from_unix_seconds(i64::try_from(now_unix().as_secs()).unwrap_or(0))
}

impl Core {
    /// The newest version of an object at or before `revision`.
    pub(crate) fn version_at(&self, prefix: &[u8], revision: u64) -> Result<Option<(u64, Vec<u8>)>> {
        self.newest_at(prefix, revision, |_, rec| rec.to_vec())
    }

    /// For each object, the revision of its newest version and whether it is a tombstone,
    /// without copying records; read together (one round trip on a networked backend).
    pub(crate) fn latest_states(&self, prefixes: &[&[u8]]) -> Result<Vec<Option<(u64, bool)>>> {
        let ranges: Vec<(Vec<u8>, Vec<u8>)> = prefixes
            .iter()
            .map(|p| (keys::object_key(p, u64::MAX), keys::prefix_end(p).unwrap_or_else(|| vec![0xff; p.len() + 9])))
            .collect();
        self.kv
            .first_many(CF_OBJECTS, &ranges)?
            .into_iter()
            .map(|first| match first {
                Some((k, v)) => {
                    Ok(Some((!keys::read_u64(k.get(k.len().saturating_sub(8)..).unwrap_or_default())?, object::is_tombstone(&v))))
                }
                None => Ok(None),
            })
            .collect()
    }

    /// What `read` makes of the newest version of an object at or before `revision` (given its
    /// revision and its record, read in place), with that version's revision.
    pub(super) fn newest_at<T>(&self, prefix: &[u8], revision: u64, mut read: impl FnMut(u64, &[u8]) -> T) -> Result<Option<(u64, T)>> {
        let end = keys::prefix_end(prefix);
        let mut out = None;
        self.kv.scan(CF_OBJECTS, &keys::object_key(prefix, revision), end.as_deref(), &mut |k, v| {
            let rev = !keys::read_u64(k.get(k.len().saturating_sub(8)..).unwrap_or_default())?;
            out = Some((rev, read(rev, v)));
            Ok(Flow::Stop)
        })?;
        Ok(out)
    }

    /// Waits (bounded) until the store reaches `revision`.
    pub(crate) fn wait_for(&self, revision: u64) -> Result<()> {
        // A wait beyond the clock's range (`Duration::MAX`) has no deadline.
        let deadline = std::time::Instant::now().checked_add(self.options.future_revision_wait);
        let mut hub = self.hub.lock();
        while self.visible.load(Ordering::SeqCst) < revision {
            let ended = self.stop.load(Ordering::SeqCst)
                || match deadline {
                    Some(d) => self.advanced.wait_until(&mut hub, d).timed_out(),
                    None => {
                        self.advanced.wait(&mut hub);
                        false
                    }
                };
            if ended {
                let current = self.visible.load(Ordering::SeqCst);
                if current >= revision {
                    break;
                }
                return Err(Error::TooLargeResourceVersion { requested: revision, current });
            }
        }
        Ok(())
    }

    /// Fails with 410 when `revision` is before the compacted revision.
    pub(crate) fn check_compacted(&self, revision: u64) -> Result<()> {
        let compacted = self.compacted.load(Ordering::SeqCst);
        if revision < compacted {
            return Err(Error::Expired(format!("too old resource version: {revision} ({compacted})")));
        }
        Ok(())
    }
}
