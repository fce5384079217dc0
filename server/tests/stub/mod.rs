//! A stub HTTP/1.1 server for tests of HTTP clients (the kubectl plugin, kubectl itself): a
//! `std::net` listener on 127.0.0.1 answering each request with a handler's canned response,
//! one connection per request (`Connection: close`). It runs until the test process ends.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;

/// What the handler sees of a request.
pub struct Request {
    /// The request target: path and query (`/api/v1?x=1`).
    pub target: String,
    /// Header names lower-cased, values trimmed.
    pub headers: Vec<(String, String)>,
}

impl Request {
    /// The value of header `name` (lower-case), if sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// The status code, content type and body of a response.
pub type Response = (u16, &'static str, Vec<u8>);

/// Starts the server; returns its base URL (`http://127.0.0.1:PORT`).
pub fn serve(handler: impl Fn(&Request) -> Response + Send + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let addr = listener.local_addr().expect("a bound address");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let Ok(read_half) = stream.try_clone() else { continue };
            let mut reader = BufReader::new(read_half);
            let mut request_line = String::new();
            if reader.read_line(&mut request_line).is_err() {
                continue;
            }
            let mut headers = Vec::new();
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                    break;
                }
                if let Some((n, v)) = h.split_once(':') {
                    headers.push((n.trim().to_ascii_lowercase(), v.trim().to_string()));
                }
            }
            let target = request_line.split_whitespace().nth(1).unwrap_or("").to_string();
            let (code, content_type, body) = handler(&Request { target, headers });
            let head = format!(
                "HTTP/1.1 {code} Stub\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(&body));
        }
    });
    format!("http://{addr}")
}
