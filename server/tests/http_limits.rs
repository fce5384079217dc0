//! What a client cannot make the server grow without bound: metrics labels stay a closed set
//! whatever methods and paths clients send, on both listeners, the HTTP API and gRPC. Each test
//! starts its own server on `127.0.0.1:0`.

// Test support unwraps: a failed setup is a failed test.
#![allow(clippy::unwrap_used)]

#[path = "support/http_server.rs"]
mod http_server;

use bytes::Bytes;
use http_server::{auth_flags, Server};

fn start(flags: &[&str]) -> Server {
    Server::start(flags)
}

/// 2,000 requests with distinct 1 KB HTTP methods (401: no token) and 2,000 gRPC calls of
/// distinct unknown methods leave the metrics page as it was, bar the `other` labels: it grew
/// from 18 KiB to 29 MiB when labels were whatever the client sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_labels_stay_a_closed_set() {
    let dir = tempfile::tempdir().unwrap();
    let mut flags = auth_flags(dir.path(), "default");
    flags.extend(["--metrics".to_string(), "127.0.0.1:0".to_string()]);
    let s = start(&flags.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(s.send("GET", "/api", &[("authorization", "Bearer admintoken")], Bytes::new()).await.code, 200);
    let before = s.metrics_text().await;
    let filler = "X".repeat(1000);
    for i in 0..2000 {
        let method = format!("M{i:04}{filler}");
        assert_eq!(s.send(&method, "/api", &[], Bytes::new()).await.code, 401);
    }
    let channel = tonic::transport::Channel::from_shared(format!("http://{}", s.grpc)).unwrap().connect().await.unwrap();
    let mut grpc = tonic::client::Grpc::new(channel);
    for i in 0..2000 {
        let path = if i % 2 == 0 { format!("/x{i}.Service/{filler}{i}") } else { format!("/fieldstore.v1.Store/{filler}{i}") };
        grpc.ready().await.unwrap();
        let codec = tonic::codec::ProstCodec::<(), ()>::default();
        let r = grpc.unary(tonic::Request::new(()), http::uri::PathAndQuery::try_from(path).unwrap(), codec).await;
        let code = r.unwrap_err().code();
        assert!(matches!(code, tonic::Code::Unimplemented | tonic::Code::Unauthenticated), "{code:?}");
    }
    let after = s.metrics_text().await;
    assert!(!after.contains(&filler), "a label holds what a client sent");
    assert!(after.contains("fieldstore_requests_total{method=\"HTTP other\",code=\"401\"} 2000"), "{after}");
    assert!(after.contains("fieldstore_requests_total{method=\"HTTP GET\",code=\"200\"} 1"), "{after}");
    assert!(after.contains("{method=\"other\",code="), "{after}");
    // The page grew by the `other` labels' lines alone.
    assert!(after.len() < before.len() + 8192, "metrics grew from {} to {} bytes", before.len(), after.len());
}
