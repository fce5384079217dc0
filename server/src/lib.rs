//! fieldstore's server and command-line tool: the request layer every door runs its requests
//! through (`api`), and the doors: the gRPC service (`service`, over the generated code in
//! `proto`), the Kubernetes HTTP API (`http`; in process, without a socket, `embedded`),
//! the etcd v3 API (`etcd_api`, `serve --etcd-api`), `fieldstore serve` (`serve`), and the CLI (`cli`, the `fieldstore` binary's entry point).

// Every gRPC handler and the helpers it calls return `tonic::Status` (176 bytes) as their error,
// as tonic's own examples do; boxing it would only move the allocation into each failure.
#![allow(clippy::result_large_err)]

pub mod api;
pub mod cli;
pub mod coalesce;
pub mod embedded;
pub mod etcd_api;
pub mod http;
pub mod listen;
pub mod location;
pub mod metrics;
pub mod proto;
pub mod serve;
pub mod service;
