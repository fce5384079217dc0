//! A `fieldstore serve` with both APIs on free ports for the HTTP tests, and an HTTP/1.1 client
//! of its Kubernetes API. Included with `#[path]` by the tests that need it.
#![allow(dead_code, reason = "each test file uses part of the support")]
#![allow(clippy::unwrap_used, reason = "test support: a failed setup is a failed test")]

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running server (stopped when dropped) and a client of its HTTP API.
pub struct Server {
    pub child: Child,
    /// `http://127.0.0.1:PORT` of the Kubernetes API.
    pub base: String,
    /// The gRPC address.
    pub grpc: String,
    /// The first line the server printed (its addresses).
    pub banner: String,
    pub client: Client<HttpConnector, Full<Bytes>>,
    _dir: tempfile::TempDir,
}

pub struct Resp {
    pub code: u16,
    pub headers: http::HeaderMap,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&self.body)))
    }

    /// Asserts kube-apiserver's plain 404 for a path no API serves.
    pub fn page_not_found(&self) {
        assert_eq!(
            (self.code, self.headers.get("content-type").and_then(|v| v.to_str().ok()), self.body.as_slice()),
            (404, Some("text/plain; charset=utf-8"), b"404 page not found\n".as_slice())
        );
    }

    /// Asserts a failure: the code and a `Status` of that code and reason.
    pub fn status(&self, code: u16, reason: &str) -> Value {
        let s = self.json();
        assert_eq!(
            (self.code, s["kind"].as_str(), s["code"].as_u64(), s["reason"].as_str()),
            (code, Some("Status"), Some(code as u64), Some(reason)),
            "{s}"
        );
        assert_eq!(s["status"], "Failure");
        s
    }
}

impl Server {
    pub fn start(extra: &[&str]) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_fieldstore"))
            .arg("--data")
            .arg(dir.path().join("data"))
            .args(["serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn fieldstore serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let grpc = line.split_whitespace().nth(3).unwrap().to_string();
        let base = line.split("kubernetes API ").nth(1).unwrap_or_else(|| panic!("no HTTP address in {line:?}"));
        let base = base.split([',', ')']).next().unwrap().trim().to_string();
        Server {
            child,
            base,
            grpc,
            banner: line.trim_end().to_string(),
            client: Client::builder(TokioExecutor::new()).build_http(),
            _dir: dir,
        }
    }

    /// `HOST:PORT` of the HTTP API (without the scheme).
    pub fn http_addr(&self) -> &str {
        self.base.trim_start_matches("http://").trim_start_matches("https://")
    }

    /// The Prometheus text of `--metrics` (the server must have been started with it).
    pub async fn metrics_text(&self) -> String {
        let addr = self.banner.split("metrics http://").nth(1).expect("started with --metrics").split('/').next().unwrap().to_string();
        tokio::task::spawn_blocking(move || {
            use std::io::{Read, Write};
            let mut sock = std::net::TcpStream::connect(&addr).unwrap();
            write!(sock, "GET /metrics HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
            let mut out = String::new();
            sock.read_to_string(&mut out).unwrap();
            assert!(out.starts_with("HTTP/1.1 200 OK"), "{out}");
            out
        })
        .await
        .unwrap()
    }

    pub async fn send(&self, method: &str, path: &str, headers: &[(&str, &str)], body: impl Into<Bytes>) -> Resp {
        let mut b = http::Request::builder().method(method).uri(format!("{}{path}", self.base));
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        let resp = self.client.request(b.body(Full::new(body.into())).unwrap()).await.unwrap();
        let code = resp.status().as_u16();
        let headers = resp.headers().clone();
        let body = resp.into_body().collect().await.unwrap().to_bytes().to_vec();
        Resp { code, headers, body }
    }

    pub async fn get(&self, path: &str) -> Resp {
        self.send("GET", path, &[], Bytes::new()).await
    }

    /// POSTs a body as given (JSON or not).
    pub async fn post_text(&self, path: &str, body: &str) -> Resp {
        self.send("POST", path, &[("content-type", "application/json")], body.to_string()).await
    }

    pub async fn post(&self, path: &str, v: &Value) -> Resp {
        self.send("POST", path, &[("content-type", "application/json")], serde_json::to_vec(v).unwrap()).await
    }

    pub async fn patch(&self, path: &str, content_type: &str, v: &Value) -> Resp {
        self.send("PATCH", path, &[("content-type", content_type)], serde_json::to_vec(v).unwrap()).await
    }

    /// The first `n` lines of a watch (or fewer when it ends first).
    pub async fn watch_lines(&self, path: &str, n: usize, headers: &[(&str, &str)]) -> (u16, Vec<Value>) {
        let mut b = http::Request::builder().uri(format!("{}{path}", self.base));
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        let resp = self.client.request(b.body(Full::new(Bytes::new())).unwrap()).await.unwrap();
        let code = resp.status().as_u16();
        let mut body = resp.into_body();
        let mut text = Vec::new();
        let read = async {
            while text.iter().filter(|b| **b == b'\n').count() < n {
                match body.frame().await {
                    Some(Ok(f)) => text.extend_from_slice(f.data_ref().map(|d| &d[..]).unwrap_or_default()),
                    _ => break,
                }
            }
        };
        // A guard against a hang, not a timing assertion.
        tokio::time::timeout(Duration::from_secs(20), read).await.unwrap();
        let lines = text.split(|b| *b == b'\n').filter(|l| !l.is_empty()).map(|l| serde_json::from_slice(l).unwrap()).collect();
        (code, lines)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A token file (`admintoken` for user `admin`, `readtoken` for `reader`) and authorization rules
/// (admin may do everything; reader may get, list and watch in `reader_namespaces`), written in
/// `dir`; the `serve` flags that use them.
pub fn auth_flags(dir: &std::path::Path, reader_namespaces: &str) -> Vec<String> {
    let tokens = dir.join("tokens.csv");
    std::fs::write(&tokens, "admintoken,admin,1\nreadtoken,reader,2\n").unwrap();
    let authz = dir.join("authz.yaml");
    std::fs::write(
        &authz,
        format!(
            "- {{users: [admin], verbs: ['*'], resources: ['*'], namespaces: ['*']}}\n- {{users: [reader], verbs: [get, list, watch], resources: ['*'], namespaces: [{reader_namespaces}]}}\n"
        ),
    )
    .unwrap();
    vec!["--token-file".into(), tokens.display().to_string(), "--authz-file".into(), authz.display().to_string()]
}
