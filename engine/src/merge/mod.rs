//! Server-Side Apply at the level of structured-merge-diff's `merge` package: the [`Updater`]
//! that applies configurations and records updates over a set of [`ManagedFields`], and the
//! [`Conflicts`] an apply can meet.
//!
//! Ownership is kept as one field set per manager ([`ManagedFields`]), the form managedFields
//! store, not as one field trie whose nodes carry a bitmask of owning managers. Conflict
//! detection intersects each other manager's set with the changed fields, finding each changed
//! field in the set by galloping: O(managers × changed fields × log set size), never
//! O(managers × set size). Taking fields from a manager (a forced apply, an update) copies, at
//! each level it changes, that level's list of shared child sets: linear in the level's size,
//! the order of building the merged object itself. A bitmask trie would answer in
//! O(changed fields), but it would have to be built from the sets on every request (O(sum of
//! the set sizes)) unless kept between requests, and the engine keeps no state between them.

pub(crate) mod conflicts;
mod managers;
mod updater;

pub use conflicts::{Conflict, Conflicts};
pub use managers::{ManagedFields, ManagerKey, Operation, VersionedSet};
pub use updater::{Applied, Updater};
