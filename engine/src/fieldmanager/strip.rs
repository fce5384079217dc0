//! Fields never tracked in managedFields (the apiserver's `stripMetaManager`).

use crate::merge::{ManagedFields, ManagerKey};
use fieldstore_codec::{Path, Set};

/// The paths taken out of a writer's set before it is stored: the type meta, `metadata` itself,
/// and the metadata the server owns.
///
/// This is the list of `stripmeta.go`, plus `metadata.deletionTimestamp`: Kubernetes never lets
/// a write through the field manager change it (only graceful deletion sets it, and that path
/// does not track fields), so stripping it only makes sure it is never tracked here either.
pub(crate) fn strip_set() -> Set {
    let paths: Vec<Path> = [
        &["apiVersion"][..],
        &["kind"],
        &["metadata"],
        &["metadata", "name"],
        &["metadata", "namespace"],
        &["metadata", "creationTimestamp"],
        &["metadata", "deletionTimestamp"],
        &["metadata", "selfLink"],
        &["metadata", "uid"],
        &["metadata", "clusterName"],
        &["metadata", "generation"],
        &["metadata", "managedFields"],
        &["metadata", "resourceVersion"],
    ]
    .iter()
    .map(|names| Path::fields(names.iter().copied()))
    .collect();
    Set::from_paths(&paths)
}

/// `set` without the strip set: a plain difference (`metadata.labels.x` stays though `metadata`
/// goes), computed without copying the parts of `set` the strip set does not reach.
pub(crate) fn stripped(set: Set, strip: &Set) -> Set {
    // (No test for an empty intersection first: every write's set has some of the stripped
    // metadata, and the parts the strip set does not reach are moved, not copied: `spec` with
    // its ten thousand items costs nothing here.)
    let (mut members, children) = set.into_parts();
    members.retain(|m| !strip.has_member(m));
    let children = children
        .into_iter()
        .filter_map(|(pe, child)| match strip.child(&pe) {
            Some(s) => Some(child.difference(s)).filter(|d| !d.is_empty()).map(|d| (pe, d)),
            None => Some((pe, child)),
        })
        .collect();
    // Still in order: parts were only taken out.
    Set::from_sorted_parts(members, children)
}

/// Strips `manager`'s set, dropping the manager when nothing is left.
pub(crate) fn strip_manager(managers: &mut ManagedFields, manager: &ManagerKey, strip: &Set) {
    if let Some(vs) = managers.get_mut(manager) {
        vs.set = stripped(std::mem::take(&mut vs.set), strip);
        if vs.set.is_empty() {
            managers.remove(manager);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stripping_is_a_difference() {
        let strip = strip_set();
        let paths: Vec<Path> =
            [&["apiVersion"][..], &["metadata"], &["metadata", "name"], &["metadata", "labels", "a"], &["spec", "replicas"], &["spec"]]
                .iter()
                .map(|names| Path::fields(names.iter().copied()))
                .collect();
        let set = Set::from_paths(&paths);
        assert_eq!(stripped(set.clone(), &strip), set.difference(&strip));
        let plain = Set::from_paths(&[Path::fields(["spec", "replicas"])]);
        assert_eq!(stripped(plain.clone(), &strip), plain);
    }
}
