//! gRPC `ListStream`: a list sent as messages of items as it is read. The items of its messages
//! are the items `List` answers for the same request (JSON: the list rebuilt from the messages
//! is `List`'s bytes; protobuf: each item is what `Get` answers for the object), unpaged and
//! paged, with selectors, at an exact resourceVersion, for built-in kinds and custom resources;
//! the request's errors end the call before any message; a compaction past the list's revision
//! while it is sent ends the stream with 410 and no last message. Run in process: the test
//! takes the messages one by one from the service, as a connection would.

#![allow(clippy::unwrap_used, reason = "test: a failed setup is a failed test")]

use fieldstore_codec::k8s_protobuf;
use fieldstore_engine::store::{Collection, ObjectKey, Store, WriteOptions};
use fieldstore_server::api::{auth::Auth, Api, Limits};
use fieldstore_server::metrics::Metrics;
use fieldstore_server::proto::pb::{self, store_server::Store as _};
use fieldstore_server::service::StoreService;
use futures_util::StreamExt;
use serde_json::{json, Value};
use std::sync::Arc;
use tonic::{Code, Request};

#[path = "support/listed_store.rs"]
mod listed_store;
use listed_store::populated;

const JSON: &str = "application/json";
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// The gRPC service over `store`, every request allowed; the sender that stops it.
fn service(store: &Store) -> (StoreService, tokio::sync::watch::Sender<bool>) {
    let api = Api::new(store.clone(), Arc::new(Auth::open()), Limits::default(), Arc::new(Metrics::default()));
    let (tx, rx) = tokio::sync::watch::channel(false);
    (StoreService::new(api, rx), tx)
}

/// Every message of a streamed list, or the status that ended it (with the messages before).
async fn stream(s: &StoreService, r: &pb::ListRequest) -> Result<Vec<pb::ListChunk>, (Vec<pb::ListChunk>, tonic::Status)> {
    let mut messages = s.list_stream(Request::new(r.clone())).await.map_err(|e| (Vec::new(), e))?.into_inner();
    let mut got = Vec::new();
    while let Some(m) = messages.next().await {
        match m {
            Ok(m) => got.push(m),
            Err(e) => return Err((got, e)),
        }
    }
    Ok(got)
}

fn list_request(resource: &str, namespace: &str, accept: &str) -> pb::ListRequest {
    pb::ListRequest { resource: resource.into(), namespace: namespace.into(), accept: accept.into(), ..Default::default() }
}

/// The JSON list the messages make: the last message's list with the items of all spliced in.
fn rebuilt(messages: &[pb::ListChunk]) -> Vec<u8> {
    let (last, before) = messages.split_last().unwrap();
    for m in before {
        assert!(m.list.is_none(), "only the last message carries the list");
    }
    let list = last.list.as_ref().expect("the last message carries the list");
    assert_eq!(list.content_type, JSON);
    let items: Vec<&[u8]> = messages.iter().flat_map(|m| m.items.iter().map(|b| &b[..])).collect();
    let text = std::str::from_utf8(&list.data).unwrap();
    let (head, tail) = text.split_once("\"items\":[]").unwrap_or_else(|| panic!("no empty items in {text}"));
    let mut out = head.as_bytes().to_vec();
    out.extend_from_slice(b"\"items\":[");
    out.extend_from_slice(&items.join(&b","[..]));
    out.push(b']');
    out.extend_from_slice(tail.as_bytes());
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_list_is_the_list_answered_whole() {
    let (_dir, store) = populated();
    let (s, _stop) = service(&store);
    let whole = list_request("configmaps", "", JSON);
    let first_page = pb::ListRequest { limit: 100, ..list_request("configmaps", "a", JSON) };
    let answer = s.list(Request::new(first_page.clone())).await.unwrap().into_inner();
    let token = serde_json::from_slice::<Value>(&answer.list.unwrap().data).unwrap()["metadata"]["continue"].as_str().unwrap().to_owned();
    let rv = store.revision().0 - 20;
    let requests = [
        whole.clone(),
        list_request("configmaps", "b", JSON),
        first_page.clone(),
        pb::ListRequest { r#continue: token, ..first_page.clone() },
        pb::ListRequest { label_selector: "tier=t1".into(), ..whole.clone() },
        pb::ListRequest { label_selector: "tier in (t0,t2)".into(), limit: 300, ..whole.clone() },
        pb::ListRequest { field_selector: "metadata.name=c0002".into(), ..whole.clone() },
        pb::ListRequest { resource_version: rv.to_string(), resource_version_match: "Exact".into(), ..whole.clone() },
        pb::ListRequest { label_selector: "tier=none".into(), ..whole.clone() },
        list_request("widgets.example.com", "a", JSON),
    ];
    for r in &requests {
        let answer = s.list(Request::new(r.clone())).await.unwrap().into_inner().list.unwrap();
        let messages = stream(&s, r).await.unwrap_or_else(|(_, e)| panic!("{r:?}: {e}"));
        assert!(messages.iter().all(|m| m.content_type == JSON), "{r:?}");
        assert_eq!(String::from_utf8(rebuilt(&messages)).unwrap(), String::from_utf8(answer.data.to_vec()).unwrap(), "{r:?}");
    }
    // A long list comes in many messages, each of about 64 KiB of items.
    let messages = stream(&s, &whole).await.unwrap();
    assert!(messages.len() > 40, "{} messages", messages.len());
    let items = messages.iter().map(|m| m.items.len()).sum::<usize>();
    assert_eq!(items, 1400 - 38);
    for m in &messages[..messages.len() - 1] {
        let bytes = m.items.iter().map(bytes::Bytes::len).sum::<usize>();
        assert!((64 * 1024..80 * 1024).contains(&bytes), "{bytes} bytes of items in a message");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protobuf_items_are_what_get_answers() {
    let (_dir, store) = populated();
    let (s, _stop) = service(&store);
    for (resource, namespace) in [("configmaps", "b"), ("widgets.example.com", "a")] {
        let messages = stream(&s, &list_request(resource, namespace, PROTOBUF)).await.unwrap();
        let json = stream(&s, &list_request(resource, namespace, JSON)).await.unwrap();
        let items: Vec<_> = messages.iter().flat_map(|m| m.items.iter()).collect();
        let names: Vec<Value> = json.iter().flat_map(|m| m.items.iter()).map(|i| serde_json::from_slice::<Value>(i).unwrap()).collect();
        assert_eq!(items.len(), names.len());
        assert!(messages.iter().all(|m| m.content_type == PROTOBUF));
        for (item, object) in items.iter().zip(&names) {
            let name = object["metadata"]["name"].as_str().unwrap();
            let get = pb::GetRequest {
                object: Some(pb::ObjectRef { resource: resource.into(), namespace: namespace.into(), name: name.into() }),
                accept: PROTOBUF.into(),
                ..Default::default()
            };
            let got = s.get(Request::new(get)).await.unwrap().into_inner().object.unwrap();
            assert_eq!(&got.data, *item, "{resource} {name}");
            assert_eq!(&k8s_protobuf::object_of_envelope(item).unwrap(), object, "{resource} {name}");
        }
        let list = k8s_protobuf::object_of_envelope(&messages.last().unwrap().list.as_ref().unwrap().data).unwrap();
        let json_list: Value = serde_json::from_slice(&json.last().unwrap().list.as_ref().unwrap().data).unwrap();
        assert_eq!(list["metadata"], json_list["metadata"], "{resource}");
        assert!(list["items"].as_array().is_none_or(Vec::is_empty), "{list}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_requests_errors_end_the_call_before_any_message() {
    let (_dir, store) = populated();
    let (s, _stop) = service(&store);
    store
        .apply(
            &Collection::new("configmaps", Some("a")),
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "late"}}),
            &WriteOptions::new("later"),
        )
        .unwrap();
    let old = store.revision().0 - 2;
    store.compact(store.revision()).unwrap();
    let whole = list_request("configmaps", "", JSON);
    for (r, code, k8s_code, reason) in [
        (pb::ListRequest { label_selector: "a in (".into(), ..whole.clone() }, Code::InvalidArgument, 400, "BadRequest"),
        (pb::ListRequest { r#continue: "garbage".into(), ..whole.clone() }, Code::InvalidArgument, 400, "BadRequest"),
        (pb::ListRequest { field_selector: "data.x=y".into(), ..whole.clone() }, Code::InvalidArgument, 400, "BadRequest"),
        (
            pb::ListRequest { resource_version: old.to_string(), resource_version_match: "Exact".into(), ..whole.clone() },
            Code::FailedPrecondition,
            410,
            "Expired",
        ),
        (list_request("nothings", "", JSON), Code::NotFound, 404, "NotFound"),
        (list_request("configmaps", "", "text/html"), Code::InvalidArgument, 400, "BadRequest"),
    ] {
        let Err((before, e)) = stream(&s, &r).await else { panic!("{r:?} answered") };
        assert!(before.is_empty(), "{r:?}: {} messages before the error", before.len());
        let status = fieldstore_server::service::status::k8s_status(&e).unwrap_or_else(|| panic!("no Status in {e:?}"));
        assert_eq!((e.code(), status["code"].as_u64(), status["reason"].as_str()), (code, Some(k8s_code), Some(reason)), "{r:?}: {status}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_compacted_while_it_is_sent_ends_with_410() {
    let (_dir, store) = populated();
    let (s, _stop) = service(&store);
    let mut messages = s.list_stream(Request::new(list_request("configmaps", "", JSON))).await.unwrap().into_inner();
    let first = messages.next().await.unwrap().unwrap();
    assert!(!first.items.is_empty() && first.list.is_none());
    // Every object changes, then the store forgets the revision the list reads.
    for i in 0..1400 {
        let ns = if i % 2 == 0 { "a" } else { "b" };
        let _ = store.delete(&ObjectKey::new("configmaps", Some(ns), format!("c{i:04}")), &Default::default());
    }
    store.compact(store.revision()).unwrap();
    let mut end = None;
    while let Some(m) = messages.next().await {
        match m {
            Ok(m) => assert!(m.list.is_none(), "a list read past a compaction ended as a whole one"),
            Err(e) => {
                end = Some(e);
                break;
            }
        }
    }
    let e = end.expect("the stream ends with an error");
    assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
    assert_eq!(fieldstore_server::service::status::k8s_status(&e).unwrap()["code"], 410);
}
