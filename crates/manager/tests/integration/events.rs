//! The Event recorder against the sandbox: repeats become one Event with a growing count, the
//! budgets hold under a bulk change, the modes filter, and shutdown waits a bounded time.

use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams};
use kube::runtime::events::{EventType, Reporter};
use kube_manager::events::correlator::CorrelatorConfig;
use kube_manager::events::{EventConfig, EventRecorder, EventsMode};
use kube_sandbox::Sandbox;
use prometheus_client::registry::Registry;

fn reporter() -> Reporter {
    Reporter { controller: "test-controller".into(), instance: Some("test".into()) }
}

fn object(name: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("ConfigMap".into()),
        name: Some(name.into()),
        namespace: Some("default".into()),
        uid: Some(format!("uid-{name}")),
        ..ObjectReference::default()
    }
}

fn recorder(sb: &Sandbox, config: EventConfig) -> (EventRecorder, Registry) {
    let mut registry = Registry::default();
    (EventRecorder::new(sb.client(), reporter(), config, &mut registry), registry)
}

fn counted(registry: &Registry, ty: &str, result: &str) -> f64 {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
    text.lines()
        .find(|l| {
            l.starts_with("test_controller_events_total{")
                && l.contains(&format!("type=\"{ty}\""))
                && l.contains(&format!("result=\"{result}\""))
        })
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or(0.0)
}

async fn events(sb: &Sandbox) -> Vec<Event> {
    Api::<Event>::default_namespaced(sb.client()).list(&ListParams::default()).await.unwrap().items
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_warning_is_one_event_with_a_growing_count() {
    let sb = Sandbox::new();
    let (rec, registry) = recorder(&sb, EventConfig::default());
    for _ in 0..5 {
        rec.publish(&object("web"), EventType::Warning, "InvalidAnnotation", "\"abc\" is not a count".into());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    rec.close().await;
    let evs = events(&sb).await;
    assert_eq!(evs.len(), 1, "{evs:?}");
    let ev = &evs[0];
    assert_eq!(ev.series.as_ref().map(|s| s.count), Some(5));
    assert_eq!(ev.type_.as_deref(), Some("Warning"));
    assert_eq!(ev.regarding.as_ref().and_then(|r| r.name.as_deref()), Some("web"));
    assert_eq!(ev.reporting_instance.as_deref(), Some("test"));
    assert_eq!(counted(&registry, "Warning", "published"), 5.0);
    let writes = sb.requests().all().iter().filter(|r| r.resource == "events" && r.is_write()).count();
    assert_eq!(writes, 5, "one create, then a patch of the count per repeat");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bulk_change_stays_within_the_budget_and_warnings_still_get_through() {
    let sb = Sandbox::new();
    let (rec, registry) = recorder(&sb, EventConfig::default());
    for i in 0..5000 {
        rec.publish(&object(&format!("cm-{i}")), EventType::Normal, "Scaled", "Scaled to 5".into());
    }
    rec.publish(&object("broken"), EventType::Warning, "InvalidAnnotation", "bad".into());
    rec.close().await;
    let evs = events(&sb).await;
    let normals = evs.iter().filter(|e| e.type_.as_deref() == Some("Normal")).count();
    assert!(normals <= 100, "{normals} Normal Events for a bulk change of 5000");
    assert!(evs.iter().any(|e| e.type_.as_deref() == Some("Warning")), "the Warning is written");
    let published = counted(&registry, "Normal", "published");
    let dropped = counted(&registry, "Normal", "dropped");
    assert_eq!(published + dropped, 5000.0, "every Event is accounted for");
    assert_eq!(published as usize, normals);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_modes_filter_by_type() {
    for (mode, want) in [(EventsMode::All, 2), (EventsMode::Warnings, 1), (EventsMode::None, 0)] {
        let sb = Sandbox::new();
        let (rec, _) = recorder(&sb, EventConfig { mode, ..EventConfig::default() });
        rec.publish(&object("web"), EventType::Normal, "Created", "made".into());
        rec.publish(&object("web"), EventType::Warning, "InvalidAnnotation", "bad".into());
        rec.close().await;
        assert_eq!(events(&sb).await.len(), want, "{mode:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn shutdown_waits_a_bounded_time_then_drops_and_counts_the_rest() {
    let sb = Sandbox::new();
    // A slow API server: each write takes 200 ms, 4 in flight (paused time: exact, no waiting).
    sb.faults().set_latency(Duration::from_millis(200));
    let config = EventConfig {
        correlator: CorrelatorConfig { qps: 0.0, ..CorrelatorConfig::default() },
        ..EventConfig::default()
    };
    let (rec, registry) = recorder(&sb, config);
    for i in 0..100 {
        rec.publish(&object(&format!("cm-{i}")), EventType::Normal, "Created", "made".into());
    }
    let start = tokio::time::Instant::now();
    rec.close().await;
    assert_eq!(start.elapsed(), Duration::from_millis(500), "close waits exactly its flush bound");
    let published = counted(&registry, "Normal", "published");
    let dropped = counted(&registry, "Normal", "dropped");
    // 0.5 s at 4 writes per 200 ms: 8 written, the rest (in flight or waiting) dropped.
    assert_eq!((published, dropped), (8.0, 92.0));
    rec.publish(&object("late"), EventType::Warning, "InvalidAnnotation", "bad".into());
    assert_eq!(counted(&registry, "Warning", "dropped"), 1.0, "closed: later Events are dropped, counted");
}
