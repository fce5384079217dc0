//! Following a store that other processes write too (several servers on one etcd): their
//! commits reach this process's readers and watchers through the change log, in revision
//! order, as its own do.
//!
//! One thread per store waits for the backend's change signal ([`Kv::wait_changed`], or a poll
//! every second), then [`catch_up`] reads the revision key and the change log since the visible
//! revision, builds each change's event from the stored versions, publishes them to the hub
//! and moves `visible`. The committer publishes its own groups itself when nothing else was
//! committed before them (`visible` is still its base); whichever of the two gets the hub lock
//! first publishes a revision, the other skips it. The compacted revision and the registered
//! types are re-read when they were signalled.

use super::core::Core;
use super::hub::ChangeEvent;
use super::keys::{self, Change, EventType, CF_CHANGES, CF_META, CF_OBJECTS, CF_TYPES, META_COMPACTED};
use super::kv::{Changed, Flow};
use super::object;
use super::types::{Registered, TypeSpec};
use crate::{Error, Result};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// How often the store looks for others' commits without a signal.
const POLL: Duration = Duration::from_secs(1);

/// The follower thread, until the store closes.
pub(crate) fn follow(core: &Core) {
    while !core.stop.load(Ordering::SeqCst) {
        let changed = core.kv.wait_changed(POLL);
        if core.stop.load(Ordering::SeqCst) {
            return;
        }
        // Failures (etcd unreachable) are retried at the next signal or poll. This process's
        // own commits signal too: nothing to do when their revision is already visible.
        if changed.bits & Changed::REVISION != 0 && changed.revision.is_none_or(|r| r > core.visible.load(Ordering::SeqCst)) {
            let _ = catch_up(core);
        }
        if changed.bits & Changed::COMPACTED != 0 {
            let _ = reload_compacted(core);
        }
        if changed.bits & Changed::TYPES != 0 {
            let _ = reload_types(core);
        }
    }
}

/// The revision a read of the latest state reads at: the visible one, after catching up with
/// other processes' commits when the store is shared (so a write completed on another server
/// before this read began is seen: reads are linearizable, as etcd's are).
pub(crate) fn latest(core: &Core) -> Result<u64> {
    if core.kv.shared() {
        catch_up(core)?;
    }
    Ok(core.visible.load(Ordering::SeqCst))
}

/// Brings this process to the store's current revision: publishes every change committed
/// since the visible revision (by any process) and moves `visible` there.
pub(crate) fn catch_up(core: &Core) -> Result<()> {
    let _one = core.following.lock();
    let target = core.kv.revision()?;
    let from = core.visible.load(Ordering::SeqCst);
    if target <= from {
        return Ok(());
    }
    let mut changes = Vec::new();
    core.kv.scan(CF_CHANGES, &keys::change_key(from + 1), Some(&keys::change_key(target.saturating_add(1))), &mut |k, v| {
        changes.push((keys::read_u64(k)?, Change::decode(v)?));
        Ok(Flow::Continue)
    })?;
    let mut events = Vec::with_capacity(changes.len());
    for (rev, ch) in changes {
        let key = keys::object_key(&ch.object_prefix, rev);
        // A version compacted away meanwhile has no event to give; watchers that needed it
        // get 410 when they replay.
        let Some(record) = core.kv.get(CF_OBJECTS, &key)? else { continue };
        let parsed = keys::parse_object_key(&key)?;
        let object = Arc::new(object::decode(&record, rev)?);
        let prev = match core.version_at(&ch.object_prefix, rev - 1)? {
            Some((r, rec)) if ch.event != EventType::Added && !object::is_tombstone(&rec) => Some(Arc::new(object::decode(&rec, r)?)),
            _ => None,
        };
        // Another process's write replaces what this one cached of the object.
        core.cache.put(&ch.object_prefix, rev, None, 0);
        events.push(Arc::new(ChangeEvent {
            revision: rev,
            type_id: parsed.type_id,
            namespace: parsed.namespace.to_string(),
            event: ch.event,
            object,
            prev,
        }));
    }
    // Another process's definition registered its type in the same commit: served here before
    // the definition's event is.
    let definitions = core.registry.read().get(super::definitions::CRDS).map(|t| t.id);
    if events.iter().any(|e| Some(e.type_id) == definitions) {
        reload_types(core)?;
    }
    let mut hub = core.hub.lock();
    let visible = core.visible.load(Ordering::SeqCst);
    let fresh: Arc<[Arc<ChangeEvent>]> = events.into_iter().filter(|e| e.revision > visible).collect();
    if !fresh.is_empty() {
        hub.broadcast(&fresh);
    }
    if target > visible {
        core.visible.store(target, Ordering::SeqCst);
        core.advanced.notify_all();
    }
    Ok(())
}

/// Takes on the compacted revision another process wrote.
fn reload_compacted(core: &Core) -> Result<()> {
    if let Some(v) = core.kv.get(CF_META, META_COMPACTED)? {
        core.compacted.fetch_max(keys::read_u64(&v)?, Ordering::SeqCst);
    }
    Ok(())
}

/// Registers the types another process registered or changed since this one read them.
pub(crate) fn reload_types(core: &Core) -> Result<()> {
    // The follower polls every second: the usual answer, nothing new, is found without
    // blocking the requests that read the registry.
    let differs = |registry: &super::types::Registry, stored: &[(u32, TypeSpec)]| {
        stored.iter().any(|(id, spec)| registry.by_id(*id).is_none_or(|t| t.spec != *spec))
    };
    if !differs(&core.registry.read(), &stored_types(core)?) {
        return Ok(());
    }
    // Then under the registry's write lock from the read of the stored types to the last
    // insert: `register` holds it from its write of a type to its insert, so a reload that read
    // the types before a registration of this process cannot install the older record over it.
    let mut registry = core.registry.write();
    for (id, spec) in stored_types(core)? {
        if registry.by_id(id).is_some_and(|t| t.spec == spec) {
            continue;
        }
        registry.insert(Registered::compile(id, spec)?);
    }
    Ok(())
}

/// Every type record in the store, by id.
fn stored_types(core: &Core) -> Result<Vec<(u32, TypeSpec)>> {
    let mut stored = Vec::new();
    core.kv.scan(CF_TYPES, &[], None, &mut |k, v| {
        let id = u32::from_be_bytes(k.try_into().map_err(|_| Error::Corrupt("bad type key".into()))?);
        let spec: TypeSpec = serde_json::from_slice(v).map_err(|e| Error::Corrupt(format!("type record: {e}")))?;
        stored.push((id, spec));
        Ok(Flow::Continue)
    })?;
    Ok(stored)
}
