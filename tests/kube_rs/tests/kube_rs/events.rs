//! kube-rs's event `Recorder` (events.k8s.io/v1): an event about an object, then the same again
//! as a series (a merge patch of the first).

use crate::support::{server, Door};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use kube::api::{Api, ListParams, ObjectMeta, PostParams};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::Resource;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorder_publishes_events() {
    let (_server, client) = server(Door::InProcess).await;
    let config_maps: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let cm = ConfigMap { metadata: ObjectMeta { name: Some("recorded".into()), ..ObjectMeta::default() }, ..ConfigMap::default() };
    let cm = config_maps.create(&PostParams::default(), &cm).await.unwrap();
    let reporter = Reporter { controller: "widget-controller".into(), instance: Some("widget-controller-0".into()) };
    let recorder = Recorder::new(client.clone(), reporter);
    let event = Event {
        type_: EventType::Normal,
        reason: "Configured".into(),
        note: Some("settings applied".into()),
        action: "Reconcile".into(),
        secondary: None,
    };
    recorder.publish(&event, &cm.object_ref(&())).await.unwrap();
    recorder.publish(&event, &cm.object_ref(&())).await.unwrap();

    let events: Api<K8sEvent> = Api::default_namespaced(client);
    let list = events.list(&ListParams::default()).await.unwrap();
    let ours: Vec<_> = list.items.iter().filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("recorded")).collect();
    assert_eq!(ours.len(), 1, "the second publish patched the first into a series: {ours:?}");
    let e = ours[0];
    let regarding = e.regarding.as_ref().unwrap();
    assert_eq!((regarding.kind.as_deref(), regarding.uid.as_ref()), (Some("ConfigMap"), cm.metadata.uid.as_ref()));
    assert_eq!(
        (e.reason.as_deref(), e.action.as_deref(), e.note.as_deref()),
        (Some("Configured"), Some("Reconcile"), Some("settings applied"))
    );
    assert_eq!(
        (e.reporting_controller.as_deref(), e.reporting_instance.as_deref()),
        (Some("widget-controller"), Some("widget-controller-0"))
    );
    assert_eq!(e.type_.as_deref(), Some("Normal"));
    assert_eq!(e.series.as_ref().map(|s| s.count), Some(2));
}
