//! `events.k8s.io/v1` Events: stored with the core group's, in the core form, and validated as
//! core Events (so a 422 names no group).

use k8s_openapi::api::events::v1 as events;

use super::resource;
use crate::kinds::event;
use crate::resource::{BuiltIn, ResourceDef, Strategy, typed};

/// The fields an events.k8s.io/v1 list may select on (`AddFieldLabelConversionsForEvent` of
/// `pkg/apis/events/v1`): its own names, found in the stored core form.
const EVENTS_V1_FIELDS: &[(&str, &str)] = &[
    ("reason", "/reason"),
    ("regarding.kind", "/involvedObject/kind"),
    ("regarding.namespace", "/involvedObject/namespace"),
    ("regarding.name", "/involvedObject/name"),
    ("regarding.uid", "/involvedObject/uid"),
    ("regarding.apiVersion", "/involvedObject/apiVersion"),
    ("regarding.resourceVersion", "/involvedObject/resourceVersion"),
    ("regarding.fieldPath", "/involvedObject/fieldPath"),
    ("reportingController", "/reportingComponent"),
    ("type", "/type"),
];

pub(super) fn resources() -> Vec<ResourceDef> {
    vec![ResourceDef {
        storage: "events",
        field_labels: EVENTS_V1_FIELDS,
        strategy: Strategy::BuiltIn(BuiltIn {
            metadata_order: crate::resource::MetadataOrder::After(event::legacy_events_v1),
            gc_policy: crate::resource::GcPolicy::Unsupported,
            to_storage: event::v1_to_storage,
            from_storage: Some(event::v1_from_storage),
            decode: event::decode_events_v1,
            known: None,
            default: event::default_events_v1,
            validate: event::strict_events_v1,
            internal_group: Some(""),
            create_on_update: true,
            watch_cached: false,
            ..typed::<events::Event>()
        }),
        ..resource!("events.k8s.io", "v1", "events", "event", "Event", ["ev"], namespaced: true)
    }]
}
