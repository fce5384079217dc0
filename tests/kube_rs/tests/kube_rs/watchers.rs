//! kube-rs's runtime watchers: `watcher` with and without streaming lists, a `reflector`'s store
//! after a few hundred changes, and the metadata watcher (kube 5's form of `metadata_watcher`:
//! `watcher` on `Api<PartialObjectMeta<K>>`, which asks for `PartialObjectMetadata`).

use crate::support::{eventually, next, server, Door};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams, ResourceExt};
use kube::core::PartialObjectMeta;
use kube::runtime::watcher::{self, Event};
use kube::runtime::{reflector, WatchStreamExt};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};

fn config_map(name: &str, suite: &str, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(BTreeMap::from([("suite".into(), suite.into())])),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("value".into(), value.into())])),
        ..ConfigMap::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watcher_with_streaming_lists() {
    watcher_sees_initial_objects_then_changes(watcher::Config::default().streaming_lists()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watcher_with_list_then_watch() {
    watcher_sees_initial_objects_then_changes(watcher::Config::default()).await;
}

/// The initial objects (only those of the label selector) between `Init` and `InitDone`, then a
/// create, an update and a delete as they happen.
async fn watcher_sees_initial_objects_then_changes(config: watcher::Config) {
    let (_server, client) = server(Door::InProcess).await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let pp = PostParams::default();
    for i in 0..25 {
        api.create(&pp, &config_map(&format!("cm-{i:02}"), "watch", "0")).await.unwrap();
    }
    api.create(&pp, &config_map("other", "elsewhere", "0")).await.unwrap();

    let mut events = watcher::watcher(api.clone(), config.labels("suite=watch")).boxed();
    assert!(matches!(next(&mut events, "Init").await.unwrap(), Event::Init));
    let mut initial = BTreeSet::new();
    loop {
        match next(&mut events, "the initial objects").await.unwrap() {
            Event::InitApply(cm) => assert!(initial.insert(cm.name_any())),
            Event::InitDone => break,
            other => panic!("unexpected {other:?} before InitDone"),
        }
    }
    assert_eq!(initial, (0..25).map(|i| format!("cm-{i:02}")).collect());

    api.create(&pp, &config_map("cm-new", "watch", "0")).await.unwrap();
    api.create(&pp, &config_map("not-watched", "elsewhere", "0")).await.unwrap();
    let patch = json!({"data": {"value": "1"}});
    api.patch("cm-03", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    api.delete("cm-07", &DeleteParams::default()).await.unwrap();
    let mut seen = Vec::new();
    while seen.len() < 3 {
        match next(&mut events, "the changes").await.unwrap() {
            Event::Apply(cm) => seen.push(("apply", cm.name_any(), cm.data.unwrap_or_default().remove("value"))),
            Event::Delete(cm) => seen.push(("delete", cm.name_any(), None)),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(
        seen,
        [
            ("apply", "cm-new".to_string(), Some("0".to_string())),
            ("apply", "cm-03".into(), Some("1".into())),
            ("delete", "cm-07".into(), None)
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reflector_in_sync_after_hundreds_of_changes() {
    let (_server, client) = server(Door::InProcess).await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let (reader, writer) = reflector::store();
    let stream = reflector(writer, watcher::watcher(api.clone(), watcher::Config::default().labels("suite=reflect").streaming_lists()));
    let task = tokio::spawn(stream.applied_objects().for_each(|_| futures::future::ready(())));
    reader.wait_until_ready().await.unwrap();

    // 300 changes: 120 creates, 120 updates, 60 deletes, interleaved.
    let pp = PostParams::default();
    for i in 0..120 {
        api.create(&pp, &config_map(&format!("r-{i:03}"), "reflect", "0")).await.unwrap();
        if i % 2 == 1 {
            let patch = json!({"data": {"value": format!("{}", i - 1)}});
            api.patch(&format!("r-{:03}", i - 1), &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
        }
    }
    for i in 0..60 {
        let patch = json!({"data": {"value": format!("{}", 1000 + i)}});
        api.patch(&format!("r-{:03}", 2 * i + 1), &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
        api.delete(&format!("r-{:03}", 2 * i), &DeleteParams::default()).await.unwrap();
    }

    let listed: BTreeMap<String, (String, Option<String>)> = api
        .list(&kube::api::ListParams::default().labels("suite=reflect"))
        .await
        .unwrap()
        .into_iter()
        .map(|cm| (cm.name_any(), (cm.resource_version().unwrap(), cm.data.unwrap_or_default().remove("value"))))
        .collect();
    assert_eq!(listed.len(), 60);
    eventually("the reflector's store equal to a fresh list", || async {
        let cached: BTreeMap<String, (String, Option<String>)> = reader
            .state()
            .iter()
            .map(|cm| (cm.name_any(), (cm.resource_version().unwrap(), cm.data.clone().unwrap_or_default().remove("value"))))
            .collect();
        (cached == listed).then_some(())
    })
    .await;
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_watcher_sees_metadata_only() {
    let (_server, client) = server(Door::InProcess).await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let pp = PostParams::default();
    for i in 0..5 {
        api.create(&pp, &config_map(&format!("m-{i}"), "meta", "large value")).await.unwrap();
    }
    let metadata: Api<PartialObjectMeta<ConfigMap>> = Api::default_namespaced(api.clone().into_client());
    let mut events = watcher::watcher(metadata, watcher::Config::default().labels("suite=meta")).boxed();
    let mut initial = BTreeSet::new();
    loop {
        match next(&mut events, "the initial metadata").await.unwrap() {
            Event::Init => {}
            Event::InitApply(m) => {
                assert_eq!(m.labels().get("suite").map(String::as_str), Some("meta"));
                assert!(m.resource_version().is_some() && m.uid().is_some());
                initial.insert(m.name_any());
            }
            Event::InitDone => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(initial, (0..5).map(|i| format!("m-{i}")).collect());
    let created = api.create(&pp, &config_map("m-new", "meta", "x")).await.unwrap();
    match next(&mut events, "the created object's metadata").await.unwrap() {
        Event::Apply(m) => {
            assert_eq!(m.name_any(), "m-new");
            assert_eq!(m.resource_version(), created.resource_version());
            let types = m.types.expect("typed metadata");
            assert_eq!((types.api_version.as_str(), types.kind.as_str()), ("meta.k8s.io/v1", "PartialObjectMetadata"));
        }
        other => panic!("unexpected {other:?}"),
    }
}
