//! `InProcess`, the tower service under the in-process client, alone: a watch is a streamed
//! response body, and it ends — with a last bookmark — when the last clone of the service goes.

use fieldstore::in_process::InProcess;
use fieldstore::{Options, Store};
use http_body_util::BodyExt;
use serde_json::Value;
use std::time::Duration;
use tower::ServiceExt;

fn request(method: &str, path: &str, body: &str) -> http::Request<String> {
    http::Request::builder().method(method).uri(path).header("content-type", "application/json").body(body.to_string()).unwrap()
}

/// The next watch event of the body (one JSON object per line).
async fn next_event<B>(body: &mut B, buf: &mut Vec<u8>) -> Option<Value>
where
    B: http_body::Body<Data = bytes::Bytes> + Unpin,
    B::Error: std::fmt::Debug,
{
    loop {
        if let Some(end) = buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buf.drain(..=end).collect();
            return Some(serde_json::from_slice(&line).unwrap());
        }
        let frame = tokio::time::timeout(Duration::from_secs(30), body.frame()).await.expect("a watch frame in time");
        match frame {
            Some(f) => buf.extend_from_slice(f.unwrap().data_ref().map_or(&[][..], |d| &d[..])),
            None => return None,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_streams_and_ends_with_the_service() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), Options::default().namespace_lifecycle(true)).unwrap();
    store.ensure_namespaces().unwrap();
    let service = InProcess::new(store);

    let watch = request("GET", "/api/v1/namespaces/default/configmaps?watch=true&allowWatchBookmarks=true", "");
    let response = service.clone().oneshot(watch).await.unwrap();
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();
    let created =
        service.clone().oneshot(request("POST", "/api/v1/namespaces/default/configmaps", r#"{"metadata":{"name":"a"}}"#)).await.unwrap();
    assert_eq!(created.status(), 201);

    let mut buf = Vec::new();
    // No initial objects: first the bookmark that ends the initial events (kube-apiserver 1.37
    // sends it whenever bookmarks are allowed), then the create.
    let end = next_event(&mut body, &mut buf).await.expect("an event");
    assert_eq!(end["type"], "BOOKMARK", "{end}");
    assert_eq!(end["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true", "{end}");
    let added = next_event(&mut body, &mut buf).await.expect("an event");
    assert_eq!((added["type"].as_str(), added["object"]["metadata"]["name"].as_str()), (Some("ADDED"), Some("a")));

    // The last clone gone: the watch sends a bookmark and ends.
    drop(service);
    let mut last = None;
    while let Some(ev) = next_event(&mut body, &mut buf).await {
        last = Some(ev);
    }
    let last = last.expect("a last event before the end");
    assert_eq!(last["type"], "BOOKMARK", "{last}");
    assert!(last["object"]["metadata"]["resourceVersion"].as_str().is_some_and(|rv| !rv.is_empty()));
}
