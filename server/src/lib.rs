//! fieldstore's server and command-line tool: the gRPC API (`api`), its service over the store
//! (`service`), `fieldstore serve` (`serve`), the built-in types (`builtin`), and the CLI
//! (`cli`, the `fieldstore` binary's entry point).

pub mod api;
pub mod builtin;
pub mod cli;
pub mod metrics;
pub mod serve;
pub mod service;
