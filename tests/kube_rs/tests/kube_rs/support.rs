//! What the tests share: a server per test, the Widget CRD installed through the API, and waiting
//! for what a client should eventually see.

use fieldstore::testing::TestServer;
use fieldstore_kube_tests::Widget;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use kube::{Client, CustomResourceExt};
use std::future::Future;
use std::time::{Duration, Instant};

/// How a test reaches its server.
#[derive(Debug, Clone, Copy)]
pub enum Door {
    /// `fieldstore::testing`'s in-process client (no socket).
    InProcess,
    /// HTTP on a loopback port (`TestServer::serve`, the listener of `fieldstore serve`).
    Http,
}

/// A fresh server and a client through `door`.
pub async fn server(door: Door) -> (TestServer, Client) {
    let mut server = TestServer::start().unwrap();
    let client = match door {
        Door::InProcess => server.client(),
        Door::Http => server.http_client().await.unwrap(),
    };
    (server, client)
}

/// Creates the Widget CRD through the API, as an operator's installation does, and waits for it
/// to be established (kube-rs's `await_condition`).
pub async fn install_widget_crd(client: &Client) {
    use kube::runtime::wait::{await_condition, conditions};
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = crds.create(&PostParams::default(), &Widget::crd()).await.unwrap();
    let name = crd.metadata.name.unwrap();
    let established = await_condition(crds, &name, conditions::is_crd_established());
    tokio::time::timeout(Duration::from_secs(30), established).await.expect("the CRD established in time").unwrap();
}

/// Polls `probe` until it answers `Some`, failing the test with `what` after 30 s (a bound for a
/// stuck test, not a timing assertion).
pub async fn eventually<T, F, Fut>(what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(v) = probe().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The next item of a stream, failing the test with `what` after 30 s.
pub async fn next<S: futures::Stream + Unpin>(stream: &mut S, what: &str) -> S::Item {
    use futures::StreamExt;
    match tokio::time::timeout(Duration::from_secs(30), stream.next()).await {
        Ok(Some(item)) => item,
        Ok(None) => panic!("stream ended waiting for {what}"),
        Err(_) => panic!("timed out waiting for {what}"),
    }
}
