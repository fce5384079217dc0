//! Compaction: history before a revision is dropped, and reads before it answer 410.
//!
//! The compacted revision is persisted first, so readers refuse old revisions before their data
//! goes. Then, for each object, every version older than the newest one at or before the
//! compacted revision is deleted (and that one too when it is a tombstone), as well as the change
//! log up to it; field history is not touched (it has its own retention, applied by the same
//! background loop), but for a create's record that left its body to a version being deleted:
//! the body is copied into it in the deletion's batch. Deletes stream in batches of 1000 without
//! sync (losing them in a crash leaves only unreachable garbage, swept by the next compaction;
//! a body copy precedes its deletion in the batch, so no deletion lands without it, also where a
//! backend splits a batch into transactions); the committer is never blocked: it only
//! writes newer versions, which compaction does not touch.

use super::core::{now_unix, Core};
use super::history_record::Record;
use super::keys::CF_HISTORY;
use super::keys::{self, CF_CHANGES, CF_META, CF_OBJECTS, META_COMPACTED};
use super::kv::{Batch, Deleter, Flow};
use super::object;
use super::types::HistoryPolicy;
use crate::{Error, Result};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Compacts history before `revision`.
pub(crate) fn compact(core: &Core, revision: u64) -> Result<()> {
    let current = super::follow::latest(core)?;
    if revision > current {
        return Err(Error::BadRequest(format!("cannot compact to revision {revision}: the current revision is {current}")));
    }
    // The compacted revision only moves forward; concurrent compactions serialize on this.
    {
        let _hub = core.hub.lock();
        if revision <= core.compacted.load(Ordering::SeqCst) {
            return Ok(());
        }
        let mut b = Batch::default();
        b.put(CF_META, META_COMPACTED.to_vec(), revision.to_be_bytes().to_vec());
        core.kv.write(b, true)?;
        core.compacted.store(revision, Ordering::SeqCst);
    }
    sweep(core, revision)
}

fn sweep(core: &Core, revision: u64) -> Result<()> {
    // Streams: deletes are written every 1000 keys while the scan goes on, so memory stays
    // bounded whatever the number of versions.
    let mut deleter = Deleter::new(core.kv.as_ref(), CF_OBJECTS);
    let mut current_object: Option<Vec<u8>> = None;
    let mut kept = false;
    core.kv.scan(CF_OBJECTS, &[], None, &mut |k, v| {
        let key = keys::parse_object_key(k)?;
        if current_object.as_deref() != Some(key.prefix) {
            current_object = Some(key.prefix.to_vec());
            kept = false;
        }
        if key.revision > revision {
            return Ok(Flow::Continue);
        }
        // The newest version at or before the compacted revision is the state there: kept
        // unless it is a deletion.
        if !kept {
            kept = true;
            if !object::is_tombstone(v) {
                return Ok(Flow::Continue);
            }
        }
        // A create's history record that left its body to this version gets it first, in the
        // same batch as the deletion.
        if object::is_created(v) {
            if let Some(h) = core.kv.get(CF_HISTORY, k)? {
                let mut r = Record::decode(&h)?;
                if r.body_in_object {
                    r.created = Some(object::history_body(v)?);
                    deleter.put(CF_HISTORY, k, r.encode());
                }
            }
        }
        deleter.delete(k)?;
        Ok(Flow::Continue)
    })?;
    deleter.finish()?;
    super::etcd_api::sweep(core, revision)?;
    // The compacted revision's own change stays: an etcd watch may start there.
    let mut b = Batch::default();
    b.delete_range(CF_CHANGES, keys::change_key(0).to_vec(), keys::change_key(revision).to_vec());
    core.kv.write(b, false)?;
    Ok(())
}

/// The revision automatic compaction may compact to now: the newest one older than the
/// retention time and more than the kept count behind the current revision.
fn target(core: &Core) -> Result<Option<u64>> {
    let current = core.visible.load(Ordering::SeqCst);
    let by_count = core.options.keep_revisions.map(|n| current.saturating_sub(n));
    let by_time = match core.options.retention {
        None => None,
        Some(retention) => {
            let cutoff = u64::try_from(now_unix().saturating_sub(retention).as_millis()).unwrap_or(u64::MAX);
            let mut newest_old = 0;
            let start = core.compacted.load(Ordering::SeqCst);
            core.kv.scan(CF_CHANGES, &keys::change_key(start), None, &mut |k, v| {
                let change = keys::Change::decode(v)?;
                if change.unix_millis > cutoff {
                    return Ok(Flow::Stop);
                }
                newest_old = keys::read_u64(k)?;
                Ok(Flow::Continue)
            })?;
            Some(newest_old)
        }
    };
    let t = match (by_count, by_time) {
        (Some(a), Some(b)) => a.min(b),
        (Some(a), None) | (None, Some(a)) => a,
        (None, None) => return Ok(None),
    };
    Ok((t > core.compacted.load(Ordering::SeqCst)).then_some(t))
}

/// The automatic compaction loop, until the store closes.
pub(crate) fn auto(core: &Core) {
    let interval = core.options.compaction_interval.max(Duration::from_millis(10));
    // An interval beyond the clock's range (`Duration::MAX`) never comes: no automatic runs.
    let mut next = Instant::now().checked_add(interval);
    let tick = Duration::from_millis(50);
    loop {
        // Short sleeps rather than the store's condition variable, which every commit signals.
        while !core.stop.load(Ordering::SeqCst) && next.is_none_or(|n| Instant::now() < n) {
            std::thread::sleep(next.map_or(tick, |n| n.saturating_duration_since(Instant::now()).min(tick)));
        }
        if core.stop.load(Ordering::SeqCst) {
            return;
        }
        // Among processes sharing the store, one runs it (the elected one, for three
        // intervals at a time, renewed each interval).
        if core.kv.lead("compact", interval.saturating_mul(3)).unwrap_or(false) {
            if let Ok(Some(t)) = target(core) {
                let _ = compact(core, t);
            }
            // Field history has its own retention, independent of compaction.
            let _ = prune(core);
            let _ = core.kv.collect_garbage(core.compacted.load(Ordering::SeqCst));
        }
        next = Instant::now().checked_add(interval);
    }
}

/// Drops history beyond each type's retention; runs with automatic compaction.
pub(crate) fn prune(core: &Core) -> Result<u64> {
    let policies: HashMap<u32, HistoryPolicy> = core.registry.read().policies();
    let now_ms = u64::try_from(now_unix().as_millis()).unwrap_or(u64::MAX);
    let mut current: Option<Vec<u8>> = None;
    let mut seen = 0u64;
    let mut dropped = 0u64;
    let mut deleter = Deleter::new(core.kv.as_ref(), CF_HISTORY);
    core.kv.scan(CF_HISTORY, &[], None, &mut |k, v| {
        let key = keys::parse_object_key(k)?;
        if current.as_deref() != Some(key.prefix) {
            current = Some(key.prefix.to_vec());
            seen = 0;
        }
        seen += 1;
        let policy = policies.get(&key.type_id).cloned().unwrap_or_default();
        if seen <= policy.keep_changes {
            return Ok(Flow::Continue);
        }
        let r = Record::decode(v)?;
        if u128::from(now_ms.saturating_sub(r.unix_millis)) <= policy.keep_for().as_millis() {
            return Ok(Flow::Continue);
        }
        deleter.delete(k)?;
        dropped += 1;
        Ok(Flow::Continue)
    })?;
    deleter.finish()?;
    Ok(dropped)
}
