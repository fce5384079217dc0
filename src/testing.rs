//! A Kubernetes API for controller tests (feature `testing`): the store on a temporary data
//! directory, with the built-in kinds, the initial namespaces and the CRDs a test names, ready
//! in milliseconds, giving kube-rs clients — in process ([`TestServer::client`], no socket) or
//! over HTTP on a loopback port ([`TestServer::serve`], for code that needs a URL or a
//! kubeconfig: `fieldstore kubeconfig --server URL`).
//!
//! Each test starts its own [`TestServer`]: a fresh store, isolated from every other test, gone
//! (directory and all) when the server is dropped; its writes are not fsynced (`Options::sync`
//! off), as a test's store need not survive a crash. It behaves as `fieldstore serve` does: the
//! same request layer and HTTP API, namespaces with their lifecycle (a namespace must exist
//! before objects go in it; a deleted one takes its contents with it). As with kube-apiserver
//! alone, nothing runs the other controllers of kube-controller-manager: no garbage collector
//! deletes objects whose owner is gone, no Deployment makes ReplicaSets.
//!
//! # Examples
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use fieldstore::testing::TestServer;
//! let server = TestServer::start()?;
//! let client = server.client();
//! // kube::Api::<ConfigMap>::default_namespaced(client).create(…), a Controller, …
//! # drop(client);
//! # Ok(())
//! # }
//! ```

use crate::in_process::InProcess;
use crate::{Options, Store, TypeSpec};
use serde_json::Value;
use std::io;

/// A fresh store with its Kubernetes API, for one test (see the [module](self) docs).
pub struct TestServer {
    store: Store,
    service: InProcess,
    url: Option<String>,
    // Dropped last: the store closes before its directory goes.
    dir: tempfile::TempDir,
}

/// How a [`TestServer`] starts: with or without the built-in kinds, and with CRDs.
#[derive(Debug, Clone)]
#[must_use]
pub struct Builder {
    builtin_types: bool,
    crds: Vec<Value>,
}

impl Default for Builder {
    fn default() -> Self {
        Builder { builtin_types: true, crds: Vec::new() }
    }
}

impl Builder {
    /// Registers a CustomResourceDefinition (`apiextensions.k8s.io/v1`, as JSON) before the
    /// server is ready, as `fieldstore serve --types` does. A test may also create CRDs through
    /// the API, as against kube-apiserver.
    pub fn crd(mut self, crd: Value) -> Self {
        self.crds.push(crd);
        self
    }

    /// Whether the built-in kinds (ConfigMap, Deployment, Namespace, …: README, "Built-in
    /// kinds") are served; default on. Without them there are no namespaces either: only
    /// cluster-scoped or custom kinds can be used.
    pub fn builtin_types(mut self, on: bool) -> Self {
        self.builtin_types = on;
        self
    }

    /// Opens the store on a new temporary directory and registers the types.
    ///
    /// # Errors
    /// When the directory cannot be made, the store cannot open, or a CRD is not one (each
    /// as an [`io::Error`] carrying the store's error).
    pub fn start(self) -> io::Result<TestServer> {
        let dir = tempfile::Builder::new().prefix("fieldstore-test").tempdir()?;
        // A test's store need not survive a crash: writes are not fsynced (the directory goes
        // with the server anyway).
        let options = Options::default().sync(false).builtin_types(self.builtin_types).namespace_lifecycle(self.builtin_types);
        let store = Store::open(dir.path(), options).map_err(io::Error::other)?;
        for crd in &self.crds {
            store.register(TypeSpec::from_crd(crd).map_err(io::Error::other)?).map_err(io::Error::other)?;
        }
        if self.builtin_types {
            store.ensure_namespaces().map_err(io::Error::other)?;
        }
        let service = InProcess::new(store.clone());
        Ok(TestServer { store, service, url: None, dir })
    }
}

impl TestServer {
    /// A builder, to add CRDs or leave the built-in kinds out.
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// A server with the built-in kinds and the initial namespaces (`default`, `kube-system`,
    /// `kube-public`, `kube-node-lease`).
    ///
    /// # Errors
    /// As [`Builder::start`].
    pub fn start() -> io::Result<TestServer> {
        Builder::default().start()
    }

    /// A kube-rs client in process, default namespace `default` (call it within a tokio
    /// runtime).
    #[must_use]
    pub fn client(&self) -> kube::Client {
        kube::Client::new(self.service.clone(), "default")
    }

    /// The API as a tower service, for other clients.
    #[must_use]
    pub fn service(&self) -> InProcess {
        self.service.clone()
    }

    /// The store, for what a test checks beside the API (history, blame, owners).
    #[must_use]
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The data directory (removed on drop).
    #[must_use]
    pub fn data_dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// Serves the API on a free loopback port, plain HTTP (once; later calls answer the same
    /// URL), until the server is dropped, and answers its URL (`http://127.0.0.1:PORT`). Call
    /// it within a tokio runtime.
    ///
    /// # Errors
    /// When no loopback port can be bound.
    pub async fn serve(&mut self) -> io::Result<String> {
        if let Some(url) = &self.url {
            return Ok(url.clone());
        }
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let url = format!("http://{}", listener.local_addr()?);
        tokio::spawn(self.service.serve(listener));
        self.url = Some(url.clone());
        Ok(url)
    }

    /// A kube-rs client over HTTP to [`TestServer::serve`]'s port (serving first if need be),
    /// default namespace `default`.
    ///
    /// # Errors
    /// As [`TestServer::serve`]; when kube-rs cannot build a client for the URL.
    pub async fn http_client(&mut self) -> io::Result<kube::Client> {
        let url = self.serve().await?;
        let mut config = kube::Config::new(url.parse().map_err(io::Error::other)?);
        config.default_namespace = "default".into();
        kube::Client::try_from(config).map_err(io::Error::other)
    }
}
