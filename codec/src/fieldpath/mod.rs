//! Field paths and sets of them, modelled on structured-merge-diff's `fieldpath` package.
//!
//! A [`PathElement`] names one step into a value (a struct field, an associative-list item by its
//! key, a set-list item by its value, or a list position); a [`Path`] is a sequence of them; a
//! [`Set`] is a trie of paths, the form managedFields stores.

mod element;
mod path;
mod set;
mod sort;

pub use element::{KeyFields, Name, PathElement};
pub use path::Path;
pub use set::Set;
pub use sort::prefix as abbreviation;
