//! kube-rs on an embedded store, without a socket (feature `kube`).
//!
//! [`InProcess`] is the Kubernetes HTTP API of `fieldstore serve` as a [`tower::Service`]
//! (`fieldstore_server::embedded`); [`kube_client`] hands it to `kube::Client::new`, so that an
//! application holding a [`Store`] runs kube-rs unchanged on it: `Api<K>` with every verb and
//! `Patch::Apply`, and the runtime — `watcher` (with or without streaming lists), `reflector`,
//! `metadata_watcher`, `Controller` with the `finalizer` helper, `Recorder`. Requests go through
//! the same request layer as every door of the server (validation, Server-Side Apply, status
//! codes); watches are streamed response bodies that end when the client drops them or the last
//! client of the service goes.
//!
//! The client is trusted: every request is allowed, as `anonymous` (as `fieldstore serve`
//! without `--token-file`). An application with rules of its own builds an [`InProcess`] over
//! its own request layer ([`InProcess::with_api`]) and calls `kube::Client::new` itself.
//!
//! # Examples
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use fieldstore::{Options, Store};
//! # let dir = tempfile::tempdir()?;
//! let store = Store::open(dir.path(), Options::default().namespace_lifecycle(true))?;
//! store.ensure_namespaces()?;
//! let client = fieldstore::in_process::kube_client(&store, "default");
//! // kube::Api::<ConfigMap>::default_namespaced(client), kube::runtime::watcher(…), …
//! # drop(client);
//! # Ok(())
//! # }
//! ```

pub use fieldstore_server::embedded::InProcess;

use crate::Store;

/// A kube-rs client of `store`'s Kubernetes API in process, whose default namespace (that of
/// `Api::default_namespaced`) is `namespace`. Call it within a tokio runtime (kube-rs spawns the
/// client's request buffer on it); store calls run on the runtime's blocking pool.
#[must_use]
pub fn kube_client(store: &Store, namespace: &str) -> kube::Client {
    kube::Client::new(InProcess::new(store.clone()), namespace)
}
