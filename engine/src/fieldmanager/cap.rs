//! Capping the number of Update entries (the apiserver's `capManagersManager`).

use super::entries::{identifier, Times};
use crate::merge::{ManagedFields, ManagerKey, VersionedSet};
use fieldstore_codec::Set;
use std::collections::BTreeMap;

/// The manager name of the entries that old updates are merged into.
pub const ANCIENT_CHANGES: &str = "ancient-changes";

/// The default maximum number of Update entries an object keeps.
pub const DEFAULT_MAX_UPDATE_MANAGERS: usize = 10;

/// Merges the oldest Update entries into per-version `ancient-changes` entries until at most
/// `max` Update entries are left, as the apiserver does after every update.
///
/// Update entries are sorted by time in whole seconds (no time counts as the epoch), then by
/// their manager identifier. Walking them oldest first, the first entry of each API version is
/// kept aside; when a second one of that version comes, the first becomes (or joins) the
/// `ancient-changes` entry of that version, every further one of that version is merged into it,
/// and the bucket takes the time of the last entry merged.
pub(crate) fn cap_update_managers(managers: &mut ManagedFields, times: &mut Times, max: usize) {
    let mut updaters: Vec<ManagerKey> = managers.iter().filter(|(_, vs)| !vs.applied).map(|(k, _)| k.clone()).collect();
    if updaters.len() <= max {
        return;
    }
    let seconds = |k: &ManagerKey| times.get(k).map_or(0, super::Time::unix_seconds);
    let mut sortable: Vec<(i64, String, ManagerKey)> = updaters.drain(..).map(|k| (seconds(&k), identifier(&k), k)).collect();
    sortable.sort();

    let mut first_of_version: BTreeMap<String, ManagerKey> = BTreeMap::new();
    let mut length = sortable.len();
    for (_, _, manager) in sortable {
        if length <= max {
            break;
        }
        let Some(vs) = managers.get(&manager).cloned() else { continue };
        let version = vs.api_version.clone();
        let bucket = ManagerKey::update(ANCIENT_CHANGES, version.clone());
        let Some(first) = first_of_version.get(&version).cloned() else {
            first_of_version.insert(version, manager);
            continue;
        };
        if manager == bucket {
            // The apiserver would merge the bucket into itself and then delete it, losing its
            // fields; folding the older entry in instead keeps them and still shrinks the list.
            if let Some(first_vs) = managers.remove(&first) {
                times.remove(&first);
                if let Some(b) = managers.get_mut(&bucket) {
                    b.set = b.set.union(&first_vs.set);
                }
                length -= 1;
            }
            continue;
        }
        if !managers.contains_key(&bucket) {
            // The first entry of the version becomes the bucket (an empty one if it is gone).
            let seed = managers.remove(&first).unwrap_or_else(|| VersionedSet::new(Set::new(), version.clone(), false));
            times.remove(&first);
            managers.insert(bucket.clone(), seed);
        }
        let merged = managers.get(&bucket).map_or_else(|| vs.set.clone(), |b| vs.set.union(&b.set));
        managers.insert(bucket.clone(), VersionedSet::new(merged, vs.api_version.clone(), vs.applied));
        managers.remove(&manager);
        length -= 1;
        // The bucket takes the time of the update merged last, the most recent one.
        match times.remove(&manager) {
            Some(t) => times.insert(bucket, t),
            None => times.remove(&bucket),
        };
    }
}
