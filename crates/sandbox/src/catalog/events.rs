//! `events.k8s.io/v1` Events: stored with the core group's, in the core form, and validated as
//! core Events (so a 422 names no group).

use k8s_openapi::api::events::v1 as events;

use super::resource;
use crate::kinds::event;
use crate::resource::{BuiltIn, ResourceDef, Strategy, typed};

pub(super) fn resources() -> Vec<ResourceDef> {
    vec![ResourceDef {
        storage: "events",
        strategy: Strategy::BuiltIn(BuiltIn {
            to_storage: event::v1_to_storage,
            from_storage: Some(event::v1_from_storage),
            decode: event::decode_events_v1,
            known: None,
            default: event::default_events_v1,
            validate: event::validate_events_v1,
            internal_group: Some(""),
            ..typed::<events::Event>()
        }),
        ..resource!("events.k8s.io", "v1", "events", "event", "Event", ["ev"], namespaced: true)
    }]
}
