//! Streamed LISTs (`http::list_body`): a JSON or protobuf list is written as it is read, in
//! chunks, and its bytes are those of the same list answered whole — what the server sent before
//! lists were streamed (`Store::list_json` made one body: `ObjectList::to_json_bytes`, or
//! `k8s_protobuf::encode_list_envelope` for protobuf) — unpaged and paged, with selectors, at a
//! resourceVersion; errors before the first byte are `Status` answers, one after it cuts the body
//! off. Run in process (`embedded::InProcess`) on a store the test also reads directly.

#![allow(clippy::unwrap_used, reason = "test: a failed setup is a failed test")]

use axum::body::Body;
use fieldstore_codec::k8s_protobuf;
use fieldstore_engine::store::{Collection, ListOptions, ObjectKey, ResourceVersionMatch, Store, WriteOptions};
use fieldstore_server::embedded::InProcess;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;

#[path = "support/listed_store.rs"]
mod listed_store;
use listed_store::populated;

const JSON: &str = "application/json";
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// An answer: status, content type, body, how many frames the body came in, and whether its
/// length was known before it was read (a whole body, not a stream).
struct Answer {
    code: u16,
    content_type: String,
    body: Vec<u8>,
    frames: usize,
    sized: bool,
}

async fn get(api: &InProcess, path: &str, accept: &str) -> Answer {
    let req = http::Request::builder().uri(path).header("accept", accept).body(Body::empty()).unwrap();
    let resp = api.clone().oneshot(req).await.unwrap();
    let code = resp.status().as_u16();
    let content_type = resp.headers().get("content-type").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
    let mut body = resp.into_body();
    let sized = axum::body::HttpBody::size_hint(&body).exact().is_some();
    let (mut bytes, mut frames) = (Vec::new(), 0);
    while let Some(frame) = body.frame().await {
        if let Some(data) = frame.unwrap().data_ref() {
            bytes.extend_from_slice(data);
            frames += 1;
        }
    }
    Answer { code, content_type, body: bytes, frames, sized }
}

/// The bytes of the list answered whole, as the server sent it before lists were streamed.
fn whole(store: &Store, of: &Collection, opts: &ListOptions, media: &str) -> Vec<u8> {
    let mut page = store.list_json(of, opts).unwrap();
    let (api_version, kind) = if of.resource.starts_with("widgets") { ("example.com/v1", "Widget") } else { ("v1", "ConfigMap") };
    if media == PROTOBUF {
        let header = json!({"apiVersion": api_version, "kind": format!("{kind}List"), "metadata": page.metadata()});
        return k8s_protobuf::encode_list_envelope(header.to_string().as_bytes(), page.items.iter().map(Vec::as_slice)).unwrap();
    }
    if kind == "Widget" && page.continue_token.is_none() {
        page.continue_token = Some(String::new());
    }
    page.to_json_bytes(api_version, kind)
}

/// The query string of list options.
fn query(opts: &ListOptions) -> String {
    let mut q = Vec::new();
    let enc = |s: &str| s.replace('=', "%3D").replace('!', "%21").replace(',', "%2C");
    if let Some(l) = opts.limit {
        q.push(format!("limit={l}"));
    }
    if let Some(c) = &opts.continue_token {
        q.push(format!("continue={c}"));
    }
    if let Some(s) = &opts.label_selector {
        q.push(format!("labelSelector={}", enc(s)));
    }
    if let Some(s) = &opts.field_selector {
        q.push(format!("fieldSelector={}", enc(s)));
    }
    if let Some(rv) = &opts.resource_version {
        q.push(format!("resourceVersion={rv}"));
    }
    if opts.resource_version_match == Some(ResourceVersionMatch::Exact) {
        q.push("resourceVersionMatch=Exact".into());
    }
    if q.is_empty() {
        String::new()
    } else {
        format!("?{}", q.join("&"))
    }
}

/// Lists `path` (of collection `of`) page by page with `opts` in `media`, each answer checked
/// against the whole one; the number of pages, of body frames and of answers streamed (their
/// length unknown before they were read).
async fn check_pages(api: &InProcess, store: &Store, path: &str, of: &Collection, opts: ListOptions, media: &str) -> (usize, usize, usize) {
    let mut opts = opts;
    let (mut pages, mut frames, mut streamed) = (0, 0, 0);
    loop {
        let want = whole(store, of, &opts, media);
        let got = get(api, &format!("{path}{}", query(&opts)), media).await;
        assert_eq!((got.code, got.content_type.as_str()), (200, media), "{path} {opts:?}: {}", String::from_utf8_lossy(&got.body));
        assert!(got.body == want, "{path} {opts:?} in {media}: {} bytes streamed, {} whole", got.body.len(), want.len());
        pages += 1;
        frames += got.frames;
        streamed += usize::from(!got.sized);
        let token = if media == PROTOBUF {
            let list = k8s_protobuf::object_of_envelope(&got.body).unwrap();
            list["metadata"]["continue"].as_str().map(str::to_owned)
        } else {
            let list: Value = serde_json::from_slice(&got.body).unwrap();
            list["metadata"]["continue"].as_str().map(str::to_owned)
        };
        match token.filter(|t| !t.is_empty()) {
            Some(t) => opts = ListOptions { continue_token: Some(t), limit: opts.limit, ..ListOptions::default() },
            None => return (pages, frames, streamed),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamed_lists_are_the_bytes_of_the_whole_answer() {
    let (_dir, store) = populated();
    let api = InProcess::new(store.clone());
    let all = Collection::new("configmaps", None);
    let in_a = Collection::new("configmaps", Some("a"));
    let in_c = Collection::new("configmaps", Some("c"));
    let before = store.revision();
    // Later changes, so that a list at `before` differs from the latest one.
    let w = WriteOptions::new("later");
    for i in [1, 3, 5] {
        store.delete(&ObjectKey::new("configmaps", Some("b"), format!("c{i:04}")), &Default::default()).unwrap();
    }
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "late", "namespace": "a"}, "data": {"k": "v"}});
    store.apply(&in_a, &cm, &w).unwrap();
    for media in [JSON, PROTOBUF] {
        let at_before = ListOptions {
            resource_version: Some(before.to_string()),
            resource_version_match: Some(ResourceVersionMatch::Exact),
            ..ListOptions::default()
        };
        let cases: Vec<(&str, &Collection, ListOptions)> = vec![
            ("/api/v1/configmaps", &all, ListOptions::default()),
            ("/api/v1/namespaces/a/configmaps", &in_a, ListOptions::default()),
            ("/api/v1/configmaps", &all, ListOptions { label_selector: Some("tier=t1".into()), ..ListOptions::default() }),
            (
                "/api/v1/namespaces/a/configmaps",
                &in_a,
                ListOptions { field_selector: Some("metadata.name!=c0002".into()), ..ListOptions::default() },
            ),
            ("/api/v1/configmaps", &all, at_before.clone()),
            ("/api/v1/configmaps", &all, ListOptions { limit: Some(500), ..ListOptions::default() }),
            (
                "/api/v1/configmaps",
                &all,
                ListOptions { limit: Some(400), label_selector: Some("tier!=t0".into()), ..ListOptions::default() },
            ),
            ("/api/v1/configmaps", &all, ListOptions { limit: Some(600), ..at_before }),
            ("/api/v1/namespaces/c/configmaps", &in_c, ListOptions::default()),
        ];
        for (path, of, opts) in cases {
            let (pages, frames, streamed) = check_pages(&api, &store, path, of, opts.clone(), media).await;
            let paged = opts.limit.is_some();
            assert!(!paged || pages > 1, "{path} {opts:?}: {pages} pages");
            let everything = format!("{opts:?}") == format!("{:?}", ListOptions::default());
            if everything && of.namespace.is_none() {
                // 5 MB of items: sent in many chunks, not one body.
                assert!(frames > 10 && streamed == 1, "{path} in {media}: {frames} frames");
            }
            if of.namespace.as_deref() == Some("c") {
                // An empty list is read whole in its first chunk: one body of known length.
                assert_eq!((pages, streamed), (1, 0), "{path} in {media}");
            }
        }
    }
    // Custom resources: JSON with `continue` always, as kube-apiserver's unstructured lists.
    let widgets = Collection::new("widgets.example.com", Some("a"));
    for opts in [ListOptions::default(), ListOptions { limit: Some(2), ..ListOptions::default() }] {
        let (_, _, streamed) = check_pages(&api, &store, "/apis/example.com/v1/namespaces/a/widgets", &widgets, opts, JSON).await;
        assert_eq!(streamed, 0, "short lists are whole bodies");
    }
    let list: Value = serde_json::from_slice(&get(&api, "/apis/example.com/v1/namespaces/a/widgets", JSON).await.body).unwrap();
    assert_eq!(list["metadata"]["continue"], "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_before_the_first_byte_are_status_answers() {
    let (_dir, store) = populated();
    let api = InProcess::new(store.clone());
    let w = WriteOptions::new("later");
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "late", "namespace": "a"}, "data": {"k": "v"}});
    store.apply(&Collection::new("configmaps", Some("a")), &cm, &w).unwrap();
    let old = store.revision().0 - 2;
    store.compact(store.revision()).unwrap();
    for media in [JSON, PROTOBUF] {
        for (path, code, reason) in [
            ("/api/v1/configmaps?labelSelector=a%20in%20(", 400, "BadRequest"),
            ("/api/v1/configmaps?continue=garbage", 400, "BadRequest"),
            ("/api/v1/configmaps?limit=5&continue=x&resourceVersion=7", 400, "BadRequest"),
            (&format!("/api/v1/configmaps?resourceVersion={old}&resourceVersionMatch=Exact") as &str, 410, "Expired"),
            ("/api/v1/configmaps?fieldSelector=data.x%3Dy", 400, "BadRequest"),
        ] {
            let got = get(&api, path, media).await;
            // A Status is JSON whatever the client accepts, as kube-apiserver's errors here.
            let status: Value = serde_json::from_slice(&got.body).unwrap_or_else(|e| panic!("{path}: {e}"));
            assert_eq!(
                (got.code, status["kind"].as_str(), status["code"].as_u64(), status["reason"].as_str()),
                (code, Some("Status"), Some(u64::from(code)), Some(reason)),
                "{path} in {media}: {status}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_compacted_while_it_is_sent_is_cut_off() {
    let (_dir, store) = populated();
    let api = InProcess::new(store.clone());
    let req = http::Request::builder().uri("/api/v1/configmaps").body(Body::empty()).unwrap();
    let resp = api.clone().oneshot(req).await.unwrap();
    assert_eq!(resp.status(), 200);
    let mut body = resp.into_body();
    let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
    assert!(first.starts_with(b"{\"apiVersion\":\"v1\",\"items\":[{"), "{}", String::from_utf8_lossy(&first));
    // Every object changes, then the store forgets the revision the list reads.
    let w = WriteOptions::new("later");
    for i in 0..1400 {
        let ns = if i % 2 == 0 { "a" } else { "b" };
        let _ = store.delete(&ObjectKey::new("configmaps", Some(ns), format!("c{i:04}")), &Default::default());
    }
    store
        .apply(&Collection::new("configmaps", Some("a")), &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "z"}}), &w)
        .unwrap();
    store.compact(store.revision()).unwrap();
    let mut failed = false;
    while let Some(frame) = body.frame().await {
        if frame.is_err() {
            failed = true;
            break;
        }
    }
    assert!(failed, "the body ends with an error, not as a whole list");
}

/// A request with a JSON body, answered in protobuf; the status code.
async fn send(api: &InProcess, method: &str, path: &str, body: &Value) -> u16 {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("accept", PROTOBUF)
        .header("content-type", JSON)
        .body(Body::from(serde_json::to_vec(body).unwrap()))
        .unwrap();
    api.clone().oneshot(req).await.unwrap().status().as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_sized_from_lengths_known_before_are_the_bytes_of_the_whole_answer() {
    // Past its kept items, a protobuf list sizes an item from the length of an encoding made
    // before of the same version (by an answer or an earlier list; `api::ObjectEncodings`)
    // instead of encoding it. Versions written since have other lengths, under revisions whose
    // length is not known yet.
    let (_dir, store) = populated();
    let api = InProcess::new(store.clone());
    let all = Collection::new("configmaps", None);
    let in_a = Collection::new("configmaps", Some("a"));
    let selected = ListOptions { label_selector: Some("tier!=t1".into()), ..ListOptions::default() };
    check_pages(&api, &store, "/api/v1/configmaps", &all, ListOptions::default(), PROTOBUF).await;
    let w = WriteOptions::new("loader");
    for i in (0..1400).step_by(6) {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("c{i:04}"), "namespace": "a"},
            "data": {"payload": "y".repeat(100 + i)}});
        store.apply(&in_a, &cm, &w).unwrap();
    }
    for i in (0..1400).step_by(10) {
        let ns = if i % 20 == 0 { "a" } else { "b" };
        let path = format!("/api/v1/namespaces/{ns}/configmaps/c{i:04}");
        assert!(matches!(get(&api, &path, PROTOBUF).await.code, 200 | 404));
    }
    for (path, of, opts) in [
        ("/api/v1/configmaps", &all, ListOptions::default()),
        ("/api/v1/namespaces/a/configmaps", &in_a, ListOptions::default()),
        ("/api/v1/configmaps", &all, selected),
    ] {
        for _ in 0..2 {
            check_pages(&api, &store, path, of, opts.clone(), PROTOBUF).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn items_copied_from_the_kept_encodings_are_the_bytes_of_the_whole_answer() {
    // Objects read and written in protobuf keep their encodings (`api::ObjectEncodings`), which
    // lists copy: the lists are still the bytes of the list encoded from JSON.
    let (_dir, store) = populated();
    let api = InProcess::new(store.clone());
    for i in (0..1400).step_by(3) {
        let ns = if i % 2 == 0 { "a" } else { "b" };
        let got = get(&api, &format!("/api/v1/namespaces/{ns}/configmaps/c{i:04}"), PROTOBUF).await;
        assert!(matches!(got.code, 200 | 404), "{i}: {}", got.code);
    }
    // The same names in both namespaces, with different data: kept apart.
    for ns in ["a", "b"] {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "twin", "namespace": ns}, "data": {"ns": ns}});
        assert_eq!(send(&api, "POST", &format!("/api/v1/namespaces/{ns}/configmaps"), &cm).await, 201);
        let got = get(&api, &format!("/api/v1/namespaces/{ns}/configmaps/twin"), PROTOBUF).await;
        assert_eq!(got.code, 200);
    }
    // Updates answered in protobuf, some of them dry runs (whose objects no revision holds).
    for i in (1..1400).step_by(5) {
        let ns = if i % 2 == 0 { "a" } else { "b" };
        let path = format!("/api/v1/namespaces/{ns}/configmaps/c{i:04}");
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("c{i:04}"), "namespace": ns},
            "data": {"changed": i.to_string()}});
        // A dry run names the live version, as `kubectl replace --dry-run=server` does: its
        // answer carries that resourceVersion with other data.
        let dry = |live: &Answer| {
            let live: Value = serde_json::from_slice(&live.body).unwrap_or_default();
            json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"dry": "run"},
                "metadata": {"name": format!("c{i:04}"), "namespace": ns, "resourceVersion": live["metadata"]["resourceVersion"]}})
        };
        if i % 3 == 2 {
            // Only a dry run: what it answered is not kept for the version it names.
            let live = get(&api, &path, JSON).await;
            assert!(matches!(send(&api, "PUT", &format!("{path}?dryRun=All"), &dry(&live)).await, 200 | 404));
        } else if i % 2 == 0 {
            let live = get(&api, &path, JSON).await;
            assert!(matches!(send(&api, "PUT", &format!("{path}?dryRun=All"), &dry(&live)).await, 200 | 404));
            assert!(matches!(send(&api, "PUT", &path, &cm).await, 200 | 404));
        } else {
            assert!(matches!(send(&api, "PUT", &path, &cm).await, 200 | 404));
            let live = get(&api, &path, JSON).await;
            assert!(matches!(send(&api, "PUT", &format!("{path}?dryRun=All"), &dry(&live)).await, 200 | 404));
        }
    }
    let all = Collection::new("configmaps", None);
    let in_b = Collection::new("configmaps", Some("b"));
    let cases: Vec<(&str, &Collection, ListOptions)> = vec![
        ("/api/v1/configmaps", &all, ListOptions::default()),
        ("/api/v1/namespaces/b/configmaps", &in_b, ListOptions::default()),
        ("/api/v1/configmaps", &all, ListOptions { limit: Some(300), ..ListOptions::default() }),
        ("/api/v1/configmaps", &all, ListOptions { label_selector: Some("tier!=t1".into()), ..ListOptions::default() }),
    ];
    for (path, of, opts) in cases {
        for _ in 0..2 {
            check_pages(&api, &store, path, of, opts.clone(), PROTOBUF).await;
        }
    }
}
