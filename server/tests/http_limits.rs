//! What a client cannot make the server hold or grow without bound: metrics labels (a closed set
//! whatever methods and paths clients send), connections that send no request (the header read
//! timeout, slowloris), connections without a request in flight (the idle timeout; a streaming
//! watch is in flight and stays), and connections per client address — on both listeners, the
//! HTTP API and gRPC. Each test starts its own server on `127.0.0.1:0` with small limits: every
//! test client comes from 127.0.0.1, one address.

// Test support unwraps: a failed setup is a failed test.
#![allow(clippy::unwrap_used)]

#[path = "support/http_server.rs"]
mod http_server;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use http_server::{auth_flags, Server};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::json;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const CMS: &str = "/api/v1/namespaces/default/configmaps";

fn start(flags: &[&str]) -> Server {
    Server::start(flags)
}

/// Reads from `sock` until the server closes it (end of stream or reset): how long that took,
/// or `None` when it stayed open for `limit`. Writes `drip` one byte a second meanwhile (a
/// slowloris), when given.
async fn closed_within(sock: TcpStream, drip: Option<&[u8]>, limit: Duration) -> Option<Duration> {
    let start = Instant::now();
    let (mut r, mut w) = sock.into_split();
    let read_to_end = async move {
        let mut buf = [0u8; 4096];
        while let Ok(n) = r.read(&mut buf).await {
            if n == 0 {
                break;
            }
        }
    };
    let drip = drip.map(<[u8]>::to_vec);
    let dripping = async move {
        for b in drip.iter().flatten().cycle() {
            // A write the closed connection refuses ends the drip; the read sees the close.
            if w.write_all(&[*b]).await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        std::future::pending::<()>().await;
    };
    tokio::select! {
        () = read_to_end => Some(start.elapsed()),
        () = dripping => None,
        () = tokio::time::sleep(limit) => None,
    }
}

/// Sends `GET path` on a kept-alive HTTP/1.1 connection and reads the whole response (headers
/// and a `Content-Length` body); its status line.
async fn get_on(sock: &mut TcpStream, path: &str) -> String {
    sock.write_all(format!("GET {path} HTTP/1.1\r\nHost: fieldstore\r\n\r\n").as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_string();
            let len: usize = head
                .lines()
                .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse().unwrap()))
                .unwrap_or(0);
            if buf.len() >= end + 4 + len {
                return head.lines().next().unwrap().to_string();
            }
        }
        let n = tokio::time::timeout(Duration::from_secs(10), sock.read(&mut chunk)).await.unwrap().unwrap();
        assert!(n > 0, "the server closed the connection: {}", String::from_utf8_lossy(&buf));
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// An HTTP/2 (prior knowledge) connection to `addr` that sends one request to `path` (a gRPC
/// call with an empty message when `grpc`, else a GET), reads the response, then waits: how long
/// after the response the server closed the connection, or `None` when it stayed open for
/// `limit`.
async fn h2_closed_after_one_request(addr: &str, path: &str, grpc: bool, limit: Duration) -> Option<Duration> {
    let sock = TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(sock)).await.unwrap();
    let conn = tokio::spawn(conn);
    let req = if grpc {
        // A gRPC message frame of an empty message: not compressed, length 0.
        let body = Full::new(Bytes::from_static(&[0, 0, 0, 0, 0]));
        http::Request::post(format!("http://{addr}{path}")).header("content-type", "application/grpc").header("te", "trailers").body(body)
    } else {
        http::Request::get(format!("http://{addr}{path}")).body(Full::new(Bytes::new()))
    };
    let resp = sender.send_request(req.unwrap()).await.unwrap();
    assert_eq!(resp.status(), 200);
    resp.into_body().collect().await.unwrap();
    let answered = Instant::now();
    // The client keeps its side open (`sender` lives): only the server may close it.
    let closed = tokio::time::timeout(limit, conn).await.is_ok();
    drop(sender);
    closed.then(|| answered.elapsed())
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
        let status = r.unwrap_err();
        let code = status.code();
        assert!(matches!(code, tonic::Code::Unimplemented | tonic::Code::Unauthenticated), "call {i}: {code:?}: {}", status.message());
    }
    let after = s.metrics_text().await;
    assert!(!after.contains(&filler), "a label holds what a client sent");
    assert!(after.contains("fieldstore_requests_total{method=\"HTTP other\",code=\"401\"} 2000"), "{after}");
    assert!(after.contains("fieldstore_requests_total{method=\"HTTP GET\",code=\"200\"} 1"), "{after}");
    assert!(after.contains("{method=\"other\",code="), "{after}");
    // The page grew by the `other` labels' lines alone.
    assert!(after.len() < before.len() + 8192, "metrics grew from {} to {} bytes", before.len(), after.len());
}

/// A client that sends its request head a byte a second is disconnected after the header read
/// timeout: on a new connection (both listeners) and on a kept-alive HTTP/1.1 connection after
/// a first request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_request_heads_are_cut_at_the_header_timeout() {
    let s = start(&["--header-read-timeout-seconds", "2", "--idle-timeout-seconds", "60"]);
    let limit = Duration::from_secs(15);
    let slow = |after: &'static [u8]| -> Vec<u8> { [&b"GET /version HTTP/1.1\r\nHost: x\r\nX-Slow: "[..], after].concat() };
    let head = slow(b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    // 50 slowloris connections at once, all cut.
    let mut cut = Vec::new();
    for _ in 0..50 {
        let sock = TcpStream::connect(s.http_addr()).await.unwrap();
        let head = head.clone();
        cut.push(tokio::spawn(async move { closed_within(sock, Some(&head), limit).await }));
    }
    for c in cut {
        let took = c.await.unwrap().expect("a slowloris connection stayed open");
        assert!(took >= Duration::from_millis(1500) && took < Duration::from_secs(10), "cut after {took:?}");
    }
    // After a first request on a kept-alive connection (hyper's own header read timeout).
    let mut sock = TcpStream::connect(s.http_addr()).await.unwrap();
    assert_eq!(get_on(&mut sock, "/readyz").await, "HTTP/1.1 200 OK");
    let took = closed_within(sock, Some(&head), limit).await.expect("a slow second request head stayed open");
    assert!(took < Duration::from_secs(10), "cut after {took:?}");
    // gRPC: a connection that never sends the HTTP/2 preface, and one that drips it.
    for drip in [None, Some(&b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"[..])] {
        let sock = TcpStream::connect(&s.grpc).await.unwrap();
        let took = closed_within(sock, drip, limit).await.expect("a gRPC connection without a request stayed open");
        assert!(took >= Duration::from_millis(1500) && took < Duration::from_secs(10), "cut after {took:?}");
    }
    // The server still answers.
    assert_eq!(s.get("/readyz").await.code, 200);
}

/// A connection with no request in flight is closed after the idle timeout: a kept-alive
/// HTTP/1.1 connection, HTTP/2 on the HTTP listener, and HTTP/2 on the gRPC listener.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_are_closed_after_the_idle_timeout() {
    let s = start(&["--header-read-timeout-seconds", "60", "--idle-timeout-seconds", "2"]);
    let limit = Duration::from_secs(15);
    let mut sock = TcpStream::connect(s.http_addr()).await.unwrap();
    assert_eq!(get_on(&mut sock, "/readyz").await, "HTTP/1.1 200 OK");
    // Requests keep it open.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(get_on(&mut sock, "/readyz").await, "HTTP/1.1 200 OK");
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(get_on(&mut sock, "/version").await, "HTTP/1.1 200 OK");
    let took = closed_within(sock, None, limit).await.expect("an idle HTTP/1.1 connection stayed open");
    assert!(took >= Duration::from_millis(1500) && took < Duration::from_secs(10), "closed after {took:?}");
    let took = h2_closed_after_one_request(s.http_addr(), "/readyz", false, limit).await.expect("an idle HTTP/2 connection stayed open");
    assert!(took >= Duration::from_millis(1500) && took < Duration::from_secs(10), "closed after {took:?}");
    let took = h2_closed_after_one_request(&s.grpc, "/grpc.health.v1.Health/Check", true, limit)
        .await
        .expect("an idle gRPC connection stayed open");
    assert!(took >= Duration::from_millis(1500) && took < Duration::from_secs(10), "closed after {took:?}");
}

/// Watches in flight are requests: the idle timeout does not cut them, over HTTP/1.1 or gRPC.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streaming_watch_is_not_idle() {
    let s = start(&["--header-read-timeout-seconds", "1", "--idle-timeout-seconds", "1"]);
    let watch = http::Request::get(format!("{}{CMS}?watch=1", s.base)).body(Full::new(Bytes::new())).unwrap();
    let resp = s.client.request(watch).await.unwrap();
    assert_eq!(resp.status(), 200);
    let mut http_watch = resp.into_body();
    let channel = tonic::transport::Channel::from_shared(format!("http://{}", s.grpc)).unwrap().connect().await.unwrap();
    let mut grpc = fieldstore_server::proto::pb::store_client::StoreClient::new(channel);
    let watch =
        fieldstore_server::proto::pb::WatchRequest { resource: "configmaps".into(), namespace: "default".into(), ..Default::default() };
    let mut grpc_watch = grpc.watch(watch).await.unwrap().into_inner();
    // Quiet for three idle timeouts, then a change, written on connections of their own.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let created = s.post(CMS, &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "late"}})).await;
    assert_eq!(created.code, 201);
    let mut text = Vec::new();
    let read = async {
        while !text.contains(&b'\n') {
            match http_watch.frame().await {
                Some(Ok(f)) => text.extend_from_slice(f.data_ref().map(|d| &d[..]).unwrap_or_default()),
                other => panic!("the HTTP watch ended: {other:?}"),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), read).await.unwrap();
    let line: serde_json::Value = serde_json::from_slice(text.split(|b| *b == b'\n').next().unwrap()).unwrap();
    assert_eq!((line["type"].as_str(), line["object"]["metadata"]["name"].as_str()), (Some("ADDED"), Some("late")));
    let event = tokio::time::timeout(Duration::from_secs(10), grpc_watch.message()).await.unwrap().unwrap().expect("the gRPC watch ended");
    assert_eq!(event.r#type, "ADDED");
}

/// Beyond `--max-connections-per-client`, a client's new connections are closed at once, on
/// both listeners, while its earlier ones work; a closed one frees its place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_per_address_cap_are_refused() {
    let s = start(&["--max-connections-per-client", "3"]);
    let mut open = Vec::new();
    for _ in 0..3 {
        let mut sock = TcpStream::connect(s.http_addr()).await.unwrap();
        assert_eq!(get_on(&mut sock, "/readyz").await, "HTTP/1.1 200 OK");
        open.push(sock);
    }
    for addr in [s.http_addr().to_string(), s.grpc.clone()] {
        let sock = TcpStream::connect(&addr).await.unwrap();
        let took = closed_within(sock, None, Duration::from_secs(5)).await.expect("a connection beyond the cap stayed open");
        assert!(took < Duration::from_secs(1), "closed after {took:?}");
    }
    for sock in &mut open {
        assert_eq!(get_on(sock, "/version").await, "HTTP/1.1 200 OK");
    }
    // A connection closed by its client frees its place (once the server has seen it close).
    drop(open.pop());
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut sock = TcpStream::connect(s.http_addr()).await.unwrap();
        if sock.write_all(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n").await.is_ok() {
            let mut buf = [0u8; 12];
            if let Ok(Ok(12)) = tokio::time::timeout(Duration::from_secs(2), sock.read_exact(&mut buf)).await {
                assert_eq!(&buf, b"HTTP/1.1 200");
                break;
            }
        }
        assert!(Instant::now() < deadline, "no place freed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
