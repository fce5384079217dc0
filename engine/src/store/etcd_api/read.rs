//! Reading etcd keys: the latest version of a key, a range at a revision (with the writes of
//! the committer's group not yet in the database laid over it), and compaction's sweep.

use super::super::core::Core;
use super::super::etcd_state::within;
use super::super::keys;
use super::super::kv::{Deleter, Flow};
use super::layout::{escape, split_version_key, unescape, version_key, Version, CF_ETCD};
use super::{KeyValue, RangeRequest, RangeResponse, SortOrder, SortTarget};
use crate::Result;
use std::collections::BTreeMap;

/// Versions written by the committer's current group, not yet in the database: escaped key →
/// (revision, version), tombstones included.
pub(crate) type Overlay = BTreeMap<Vec<u8>, (u64, Version)>;

/// The key bounds of a range in the `etcd` CF: `[from, to)` (`to` `None`: no end).
pub(crate) fn bounds(key: &[u8], range_end: &[u8]) -> (Vec<u8>, Option<Vec<u8>>) {
    let from = escape(key);
    let to = match range_end {
        [] => keys::prefix_end(&from),
        [0] => None,
        end => Some(escape(end)),
    };
    (from, to)
}

/// The key-value of a live version.
pub(crate) fn key_value(key: Vec<u8>, rev: u64, v: Version) -> KeyValue {
    KeyValue {
        key,
        create_revision: i64::try_from(v.create_revision).unwrap_or(i64::MAX),
        mod_revision: i64::try_from(rev).unwrap_or(i64::MAX),
        version: i64::try_from(v.version).unwrap_or(i64::MAX),
        value: v.value,
        lease: v.lease,
    }
}

/// Calls `f` with each key of `[from, to)` live at revision `at` (escaped key, revision,
/// record), in key order, until it says stop.
fn scan_live(core: &Core, from: &[u8], to: Option<&[u8]>, at: u64, mut f: impl FnMut(&[u8], u64, &[u8]) -> Result<Flow>) -> Result<()> {
    if to.is_some_and(|t| t <= from) {
        return Ok(());
    }
    let mut decided: Option<Vec<u8>> = None;
    core.kv.scan(CF_ETCD, from, to, &mut |k, v| {
        let (escaped, rev) = split_version_key(k)?;
        if rev > at || decided.as_deref() == Some(escaped) {
            return Ok(Flow::Continue);
        }
        decided = Some(escaped.to_vec());
        if Version::is_tombstone(v) {
            return Ok(Flow::Continue);
        }
        f(escaped, rev, v)
    })
}

/// The latest version of one key (none when absent or deleted), the group's writes first.
pub(crate) fn latest(core: &Core, overlay: &Overlay, escaped: &[u8]) -> Result<Option<(u64, Version)>> {
    if let Some((rev, v)) = overlay.get(escaped) {
        return Ok((!v.tombstone).then(|| (*rev, v.clone())));
    }
    let mut out = None;
    let end = keys::prefix_end(escaped);
    scan_live(core, escaped, end.as_deref(), u64::MAX, |_, rev, rec| {
        out = Some((rev, Version::decode(rec)?));
        Ok(Flow::Stop)
    })?;
    Ok(out)
}

/// Every live key of a range at `at` as (escaped key, revision, version), the group's writes
/// laid over it (they are the newest).
pub(crate) fn live_keys(core: &Core, overlay: &Overlay, key: &[u8], range_end: &[u8], at: u64) -> Result<Vec<(Vec<u8>, u64, Version)>> {
    let (from, to) = bounds(key, range_end);
    let mut found: BTreeMap<Vec<u8>, (u64, Version)> = BTreeMap::new();
    scan_live(core, &from, to.as_deref(), at, |escaped, rev, rec| {
        found.insert(escaped.to_vec(), (rev, Version::decode(rec)?));
        Ok(Flow::Continue)
    })?;
    for (escaped, (rev, v)) in overlay.range(from.clone()..) {
        if !within(escaped, &from, to.as_deref()) {
            break;
        }
        if v.tombstone {
            found.remove(escaped);
        } else {
            found.insert(escaped.clone(), (*rev, v.clone()));
        }
    }
    Ok(found.into_iter().map(|(k, (r, v))| (k, r, v)).collect())
}

/// etcd's `Range` at revision `at` (checked by the caller), over the database and `overlay`.
pub(crate) fn range(core: &Core, req: &RangeRequest, at: u64, overlay: &Overlay) -> Result<RangeResponse> {
    let (from, to) = bounds(&req.key, &req.range_end);
    let order = match (req.sort_order, req.sort_target) {
        (SortOrder::None, SortTarget::Key) => SortOrder::None,
        (SortOrder::None, _) => SortOrder::Ascend,
        (o, _) => o,
    };
    let filtered = req.min_mod_revision > 0 || req.max_mod_revision > 0 || req.min_create_revision > 0 || req.max_create_revision > 0;
    let sorted = !(order == SortOrder::None || (order == SortOrder::Ascend && req.sort_target == SortTarget::Key));
    let limit = usize::try_from(req.limit).unwrap_or(0);
    // Without sorting or filters, only the first `limit` keys are decoded; the rest counted.
    let keep = if sorted || filtered || limit == 0 { usize::MAX } else { limit + 1 };
    let mut kvs = Vec::new();
    let mut count = 0i64;
    let overlaid = overlay.range(from.clone()..).next().is_some_and(|(k, _)| within(k, &from, to.as_deref()));
    let mut take = |escaped: &[u8], rev: u64, v: Version, kvs: &mut Vec<KeyValue>| -> Result<()> {
        count += 1;
        if !req.count_only && kvs.len() < keep {
            let (key, _) = unescape(escaped)?;
            let mut kv = key_value(key, rev, v);
            if req.keys_only {
                kv.value = Vec::new();
            }
            kvs.push(kv);
        }
        Ok(())
    };
    if overlaid {
        for (escaped, rev, v) in live_keys(core, overlay, &req.key, &req.range_end, at)? {
            take(&escaped, rev, v, &mut kvs)?;
        }
    } else {
        scan_live(core, &from, to.as_deref(), at, |escaped, rev, rec| {
            // Only what is returned is decoded.
            let v = if !req.count_only && kvs.len() < keep { Version::decode(rec)? } else { Version::default() };
            take(escaped, rev, v, &mut kvs)?;
            Ok(Flow::Continue)
        })?;
    }
    if filtered {
        let bound = |lo: i64, hi: i64, x: i64| (lo <= 0 || x >= lo) && (hi <= 0 || x <= hi);
        kvs.retain(|kv| {
            bound(req.min_mod_revision, req.max_mod_revision, kv.mod_revision)
                && bound(req.min_create_revision, req.max_create_revision, kv.create_revision)
        });
    }
    if sorted {
        let key = |kv: &KeyValue| -> (Vec<u8>, i64) {
            match req.sort_target {
                SortTarget::Key => (kv.key.clone(), 0),
                SortTarget::Value => (kv.value.clone(), 0),
                SortTarget::Version => (Vec::new(), kv.version),
                SortTarget::Create => (Vec::new(), kv.create_revision),
                SortTarget::Mod => (Vec::new(), kv.mod_revision),
            }
        };
        kvs.sort_by_key(key);
        if order == SortOrder::Descend {
            kvs.reverse();
        }
    }
    let more = limit > 0 && kvs.len() > limit;
    if more {
        kvs.truncate(limit);
    }
    Ok(RangeResponse { kvs, more, count })
}

/// The version of one key at exactly revision `rev` (a watch's replay), and the live version
/// before it (for `prev_kv`).
pub(crate) fn version_at(core: &Core, escaped: &[u8], rev: u64) -> Result<Option<Version>> {
    core.kv.get(CF_ETCD, &version_key(escaped, rev))?.map(|r| Version::decode(&r)).transpose()
}

/// The newest live version of a key before revision `rev`.
pub(crate) fn live_before(core: &Core, escaped: &[u8], rev: u64) -> Result<Option<(u64, Version)>> {
    let mut out = None;
    let end = keys::prefix_end(escaped);
    core.kv.scan(CF_ETCD, &version_key(escaped, rev.saturating_sub(1)), end.as_deref(), &mut |k, v| {
        let (_, r) = split_version_key(k)?;
        if !Version::is_tombstone(v) {
            out = Some((r, Version::decode(v)?));
        }
        Ok(Flow::Stop)
    })?;
    Ok(out)
}

/// Compaction of the etcd keys to `revision`: per key, every version older than the newest at
/// or before it goes, and that one too when it is a tombstone.
pub(crate) fn sweep(core: &Core, revision: u64) -> Result<()> {
    let mut deleter = Deleter::new(core.kv.as_ref(), CF_ETCD);
    let mut current: Option<Vec<u8>> = None;
    let mut kept = false;
    core.kv.scan(CF_ETCD, &[], None, &mut |k, v| {
        let (escaped, rev) = split_version_key(k)?;
        if current.as_deref() != Some(escaped) {
            current = Some(escaped.to_vec());
            kept = false;
        }
        if rev > revision {
            return Ok(Flow::Continue);
        }
        if !kept {
            kept = true;
            if !Version::is_tombstone(v) {
                return Ok(Flow::Continue);
            }
        }
        deleter.delete(k)?;
        Ok(Flow::Continue)
    })?;
    deleter.finish()
}
