//! Server-Side Apply at the level of structured-merge-diff's `merge` package: the [`Updater`]
//! that applies configurations and records updates over a set of [`ManagedFields`], and the
//! [`Conflicts`] an apply can meet.

pub(crate) mod conflicts;
mod managers;
mod updater;

pub use conflicts::{Conflict, Conflicts};
pub use managers::{ManagedFields, ManagerKey, Operation, VersionedSet};
pub use updater::{Applied, Updater};
