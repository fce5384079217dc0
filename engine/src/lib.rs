//! fieldstore's engine: schemas and Server-Side Apply.
#![deny(missing_docs)]
