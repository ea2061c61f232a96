//! CustomResourceDefinitions through a real `kube::Client`: the CRD's lifecycle (established,
//! name conflicts, deletion with its instances), custom resources with every verb, the status
//! and scale subresources, several versions, garbage collection both ways, discovery and OpenAPI,
//! and watches that end with their CRD — the behaviour of upstream's apiextensions-apiserver
//! (`pkg/apiserver/customresource_handler.go`, `pkg/registry/customresource`,
//! `pkg/controller/{status,establish,finalizer}`).

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::core::{DynamicObject, GroupVersionKind, Status};
use kube::discovery::{ApiResource, Discovery};
use kube::{Client, CustomResource, CustomResourceExt, Error, Resource, ResourceExt};
use kube_sandbox::Sandbox;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// A kube-derive custom resource, as a controller author writes one.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "example.com",
    version = "v1",
    kind = "Widget",
    namespaced,
    status = "WidgetStatus",
    shortname = "wd",
    category = "all",
    printcolumn(name = "Size", type_ = "integer", json_path = ".spec.size"),
    scale(spec_replicas_path = ".spec.size", status_replicas_path = ".status.size")
)]
pub struct WidgetSpec {
    /// How big.
    pub size: i32,
    /// Which colour.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
}

/// What the widget controller reports.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct WidgetStatus {
    /// How big it is now.
    pub size: i32,
}

fn api_error(e: Error) -> Status {
    match e {
        Error::Api(s) => *s,
        other => panic!("expected an API error, got {other}"),
    }
}

/// Creates the Widget CRD and waits until it is established.
pub(crate) async fn install(client: &Client, crd: &CustomResourceDefinition) -> CustomResourceDefinition {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), crd).await.expect("the CRD is created");
    let name = crd.name_any();
    let established = kube::runtime::wait::await_condition(
        crds.clone(),
        &name,
        kube::runtime::wait::conditions::is_crd_established(),
    );
    tokio::time::timeout(Duration::from_secs(60), established)
        .await
        .expect("the CRD is established")
        .expect("watching the CRD")
        .expect("the CRD exists")
}

pub(crate) fn widget(name: &str, size: i32) -> Widget {
    Widget::new(name, WidgetSpec { size, color: None })
}

#[tokio::test]
async fn a_crd_is_established_and_its_custom_resources_are_served_with_every_verb() {
    let sandbox = Sandbox::new();
    let client = sandbox.client();
    let crd = install(&client, &Widget::crd()).await;
    let status = crd.status.expect("a status");
    let accepted = status.accepted_names.expect("accepted names");
    assert_eq!((accepted.plural.as_str(), accepted.kind.as_str()), ("widgets", "Widget"));
    assert_eq!(status.stored_versions, Some(vec!["v1".to_owned()]));
    let conditions: Vec<(String, String)> =
        status.conditions.unwrap_or_default().into_iter().map(|c| (c.type_, c.status)).collect();
    assert!(conditions.contains(&("NamesAccepted".into(), "True".into())), "{conditions:?}");
    assert!(conditions.contains(&("Established".into(), "True".into())), "{conditions:?}");

    let widgets: Api<Widget> = Api::default_namespaced(client.clone());
    let created = widgets.create(&PostParams::default(), &widget("w1", 3)).await.unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    assert!(created.metadata.uid.is_some());
    assert_eq!(widgets.get("w1").await.unwrap().spec.size, 3);

    let mut changed = created.clone();
    changed.spec.size = 4;
    let updated = widgets.replace("w1", &PostParams::default(), &changed).await.unwrap();
    assert_eq!((updated.spec.size, updated.metadata.generation), (4, Some(2)));
    // A stale version is a conflict, as for every kind.
    let stale = widgets.replace("w1", &PostParams::default(), &changed).await.unwrap_err();
    assert_eq!(api_error(stale).code, 409);

    let merged = widgets
        .patch("w1", &PatchParams::default(), &Patch::Merge(json!({ "spec": { "color": "red" } })))
        .await
        .unwrap();
    assert_eq!(merged.spec.color.as_deref(), Some("red"));
    let patched = widgets
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Json::<()>(
                serde_json::from_value(json!([{ "op": "replace", "path": "/spec/size", "value": 5 }]))
                    .unwrap(),
            ),
        )
        .await
        .unwrap();
    assert_eq!(patched.spec.size, 5);
    let applied = widgets
        .patch(
            "w2",
            &PatchParams::apply("widget-tests"),
            &Patch::Apply(json!({ "apiVersion": "example.com/v1", "kind": "Widget", "metadata": { "name": "w2" }, "spec": { "size": 1 } })),
        )
        .await
        .unwrap();
    assert_eq!(applied.spec.size, 1);
    let managers: Vec<String> =
        applied.metadata.managed_fields.unwrap_or_default().into_iter().filter_map(|m| m.manager).collect();
    assert_eq!(managers, ["widget-tests"]);

    // Strategic merge needs patch strategies a custom resource does not have: 415, as upstream.
    let strategic = widgets
        .patch("w1", &PatchParams::default(), &Patch::Strategic(json!({ "spec": { "size": 6 } })))
        .await;
    let status = api_error(strategic.unwrap_err());
    assert_eq!((status.code, status.reason.as_str()), (415, "UnsupportedMediaType"));
    assert!(!status.message.contains("strategic"), "{}", status.message);

    let names: Vec<String> =
        widgets.list(&ListParams::default()).await.unwrap().items.iter().map(ResourceExt::name_any).collect();
    assert_eq!(names, ["w1", "w2"]);
    let page = widgets.list(&ListParams::default().limit(1)).await.unwrap();
    assert_eq!(page.items.len(), 1);
    assert!(page.metadata.continue_.is_some());
    // Only metadata.name and metadata.namespace select a custom resource's fields.
    let by_name = widgets.list(&ListParams::default().fields("metadata.name=w2")).await.unwrap();
    assert_eq!(by_name.items.len(), 1);
    let bad = widgets.list(&ListParams::default().fields("spec.size=1")).await.unwrap_err();
    assert_eq!(api_error(bad).code, 400);

    widgets.delete("w2", &DeleteParams::default()).await.unwrap();
    assert_eq!(api_error(widgets.get("w2").await.unwrap_err()).code, 404);
    assert_eq!(sandbox.requests().count("create", "widgets"), 1);
}

#[tokio::test]
async fn the_status_subresource_splits_spec_from_status_and_generation_counts_spec_changes() {
    let sandbox = Sandbox::new();
    let client = sandbox.client();
    install(&client, &Widget::crd()).await;
    let widgets: Api<Widget> = Api::default_namespaced(client);
    let mut w = widget("w", 2);
    w.status = Some(WidgetStatus { size: 9 });
    let created = widgets.create(&PostParams::default(), &w).await.unwrap();
    assert_eq!(created.status, None, "a create drops the status");

    let status = widgets
        .patch_status(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": { "size": 2 }, "spec": { "size": 7 } })),
        )
        .await
        .unwrap();
    assert_eq!(status.status, Some(WidgetStatus { size: 2 }));
    assert_eq!(status.spec.size, 2, "/status changes only status");
    assert_eq!(status.metadata.generation, Some(1), "a status change is not a new generation");

    let main = widgets
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": { "size": 5 }, "spec": { "size": 3 } })),
        )
        .await
        .unwrap();
    assert_eq!(main.status, Some(WidgetStatus { size: 2 }), "the main resource ignores status");
    assert_eq!((main.spec.size, main.metadata.generation), (3, Some(2)));

    // The scale subresource maps .spec.size and .status.size.
    let scale = widgets.get_scale("w").await.unwrap();
    assert_eq!(scale.spec.and_then(|s| s.replicas), Some(3));
    assert_eq!(scale.status.map(|s| s.replicas), Some(2));
    widgets
        .patch_scale("w", &PatchParams::default(), &Patch::Merge(json!({ "spec": { "replicas": 8 } })))
        .await
        .unwrap();
    assert_eq!(widgets.get("w").await.unwrap().spec.size, 8);
}

#[tokio::test]
async fn without_a_status_subresource_status_is_an_ordinary_field_and_status_is_404() {
    let sandbox = Sandbox::new();
    let client = sandbox.client();
    let mut crd = Widget::crd();
    crd.spec.versions[0].subresources = None;
    install(&client, &crd).await;
    let widgets: Api<Widget> = Api::default_namespaced(client);
    let mut w = widget("w", 2);
    w.status = Some(WidgetStatus { size: 9 });
    let created = widgets.create(&PostParams::default(), &w).await.unwrap();
    assert_eq!(created.status, Some(WidgetStatus { size: 9 }));
    let status = widgets.get_status("w").await.unwrap_err();
    assert_eq!(api_error(status).code, 404);
    let changed = widgets
        .patch("w", &PatchParams::default(), &Patch::Merge(json!({ "status": { "size": 1 } })))
        .await
        .unwrap();
    assert_eq!(changed.metadata.generation, Some(2), "without the subresource, status counts as spec");
}

/// The Widget CRD serving `v1` (storage) and `v1beta1`, both with the same schema.
fn two_versions() -> CustomResourceDefinition {
    let mut crd = Widget::crd();
    let mut beta = crd.spec.versions[0].clone();
    beta.name = "v1beta1".into();
    beta.storage = false;
    crd.spec.versions.push(beta);
    crd
}

#[tokio::test]
async fn an_object_written_through_one_version_is_read_through_the_other() {
    let sandbox = Sandbox::new();
    let client = sandbox.client();
    install(&client, &two_versions()).await;
    let gvk = |v: &str| GroupVersionKind::gvk("example.com", v, "Widget");
    let beta: Api<DynamicObject> = Api::default_namespaced_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(&gvk("v1beta1"), "widgets"),
    );
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1beta1", "kind": "Widget", "metadata": { "name": "w" }, "spec": { "size": 4 },
    }))
    .unwrap();
    let created = beta.create(&PostParams::default(), &obj).await.unwrap();
    assert_eq!(created.types.unwrap().api_version, "example.com/v1beta1");
    let v1: Api<Widget> = Api::default_namespaced(client.clone());
    let read = v1.get("w").await.unwrap();
    assert_eq!(read.spec.size, 4);
    let raw: Api<DynamicObject> = Api::default_namespaced_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(&gvk("v1"), "widgets"),
    );
    assert_eq!(raw.get("w").await.unwrap().types.unwrap().api_version, "example.com/v1");

    // Discovery lists both, the GA version preferred.
    let discovery = Discovery::new(client.clone()).run().await.unwrap();
    let group = discovery.get("example.com").expect("the group is discovered");
    assert_eq!(group.preferred_version_or_latest(), "v1");
    let versions: Vec<&str> = group.versions().collect();
    assert_eq!(versions, ["v1", "v1beta1"]);
    let crds: Api<CustomResourceDefinition> = Api::all(client);
    let status = crds.get("widgets.example.com").await.unwrap().status.unwrap();
    assert_eq!(status.stored_versions, Some(vec!["v1".to_owned()]));

    // An unserved version is not there.
    crds.patch(
        "widgets.example.com",
        &PatchParams::default(),
        &Patch::Json::<()>(
            serde_json::from_value(
                json!([{ "op": "replace", "path": "/spec/versions/1/served", "value": false }]),
            )
            .unwrap(),
        ),
    )
    .await
    .unwrap();
    assert_eq!(api_error(beta.get("w").await.unwrap_err()).code, 404);
}

#[tokio::test]
async fn garbage_collection_works_both_ways_between_custom_resources_and_built_in_kinds() {
    let sandbox = Sandbox::new();
    let client = sandbox.client();
    install(&client, &Widget::crd()).await;
    let widgets: Api<Widget> = Api::default_namespaced(client.clone());
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());

    // A ConfigMap owned by a Widget goes with it.
    let owner = widgets.create(&PostParams::default(), &widget("owner", 1)).await.unwrap();
    let mut owned = ConfigMap::default();
    owned.metadata.name = Some("owned".into());
    owned.metadata.owner_references = Some(vec![owner.controller_owner_ref(&()).unwrap()]);
    cms.create(&PostParams::default(), &owned).await.unwrap();
    widgets.delete("owner", &DeleteParams::default()).await.unwrap();
    assert_eq!(api_error(cms.get("owned").await.unwrap_err()).code, 404);

    // A Widget owned by a ConfigMap goes with it.
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("parent".into());
    let parent = cms.create(&PostParams::default(), &cm).await.unwrap();
    let mut child = widget("child", 1);
    child.metadata.owner_references = Some(vec![parent.controller_owner_ref(&()).unwrap()]);
    widgets.create(&PostParams::default(), &child).await.unwrap();
    cms.delete("parent", &DeleteParams::default()).await.unwrap();
    assert_eq!(api_error(widgets.get("child").await.unwrap_err()).code, 404);
}

#[tokio::test]
async fn deleting_a_crd_deletes_its_custom_resources_then_the_crd_and_ends_their_watches() {
    let sandbox = Sandbox::new();
    let client = sandbox.client();
    install(&client, &Widget::crd()).await;
    let widgets: Api<Widget> = Api::default_namespaced(client.clone());
    for name in ["a", "b"] {
        widgets.create(&PostParams::default(), &widget(name, 1)).await.unwrap();
    }
    // One with a finalizer of its own holds the CRD in Terminating until it is released.
    let mut held = widget("held", 1);
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    widgets.create(&PostParams::default(), &held).await.unwrap();
    let mut events = widgets.watch(&WatchParams::default(), "0").await.unwrap().boxed();

    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let answer = crds.delete("widgets.example.com", &DeleteParams::default()).await.unwrap();
    let marked = answer.left().expect("the CRD is answered as marked for deletion");
    assert!(marked.metadata.deletion_timestamp.is_some());
    assert!(marked.finalizers().iter().any(|f| f == "customresourcecleanup.apiextensions.k8s.io"));

    let terminating = crds.get("widgets.example.com").await.unwrap();
    let conditions = terminating.status.unwrap().conditions.unwrap_or_default();
    assert!(conditions.iter().any(|c| c.type_ == "Terminating" && c.status == "True"), "{conditions:?}");
    assert_eq!(api_error(widgets.get("a").await.unwrap_err()).code, 404);
    let create = widgets.create(&PostParams::default(), &widget("late", 1)).await.unwrap_err();
    assert_eq!(api_error(create).code, 405, "no new instances while terminating");

    widgets
        .patch("held", &PatchParams::default(), &Patch::Merge(json!({ "metadata": { "finalizers": null } })))
        .await
        .unwrap();
    assert_eq!(api_error(crds.get("widgets.example.com").await.unwrap_err()).code, 404);
    assert_eq!(
        api_error(widgets.list(&ListParams::default()).await.unwrap_err()).code,
        404,
        "its paths are gone"
    );

    // The open watch saw the instances go, then ended.
    let mut seen = Vec::new();
    while let Some(event) =
        tokio::time::timeout(Duration::from_secs(30), events.next()).await.expect("the watch ends")
    {
        match event.unwrap() {
            WatchEvent::Added(w) => seen.push(format!("ADDED {}", w.name_any())),
            WatchEvent::Modified(w) => seen.push(format!("MODIFIED {}", w.name_any())),
            WatchEvent::Deleted(w) => seen.push(format!("DELETED {}", w.name_any())),
            WatchEvent::Bookmark(_) => {}
            WatchEvent::Error(e) => panic!("{e:?}"),
        }
    }
    for name in ["a", "b", "held"] {
        assert!(seen.contains(&format!("DELETED {name}")), "{seen:?}");
    }

    // The sandbox keeps serving everything else, and the CRD can come back.
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    cms.list(&ListParams::default()).await.unwrap();
    install(&client, &Widget::crd()).await;
    assert!(widgets.list(&ListParams::default()).await.unwrap().items.is_empty());
}

#[tokio::test]
async fn a_second_crd_claiming_names_in_use_is_not_accepted_until_they_are_free() {
    let sandbox = Sandbox::new();
    let client = sandbox.client();
    install(&client, &Widget::crd()).await;
    // `gadgets.example.com` wants the kind Widget (and so the list kind WidgetList), which
    // widgets.example.com holds; upstream's naming controller reports the last conflict it
    // checks, the list kind's.
    let mut gadget: Value = serde_json::to_value(Widget::crd()).unwrap();
    gadget["metadata"]["name"] = json!("gadgets.example.com");
    gadget["spec"]["names"] =
        json!({ "plural": "gadgets", "singular": "gadget", "kind": "Widget", "shortNames": ["gd"] });
    let gadget: CustomResourceDefinition = serde_json::from_value(gadget).unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &gadget).await.unwrap();
    let status = crds.get("gadgets.example.com").await.unwrap().status.unwrap();
    let conditions = status.conditions.unwrap_or_default();
    let names = conditions.iter().find(|c| c.type_ == "NamesAccepted").expect("NamesAccepted");
    assert_eq!(
        (names.status.as_str(), names.reason.as_deref()),
        ("False", Some("ListKindConflict")),
        "{conditions:?}"
    );
    let gadgets = Api::<DynamicObject>::default_namespaced_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("example.com", "v1", "Widget"), "gadgets"),
    );
    assert_eq!(api_error(gadgets.list(&ListParams::default()).await.unwrap_err()).code, 404);

    // Once widgets.example.com is gone, the names are free and gadgets are served.
    crds.delete("widgets.example.com", &DeleteParams::default()).await.unwrap();
    let status = crds.get("gadgets.example.com").await.unwrap().status.unwrap();
    let accepted = status.conditions.unwrap_or_default();
    assert!(accepted.iter().any(|c| c.type_ == "Established" && c.status == "True"), "{accepted:?}");
    gadgets.list(&ListParams::default()).await.unwrap();
}

#[tokio::test]
async fn discovery_and_openapi_describe_the_custom_kind() {
    let sandbox = Sandbox::new();
    let client = sandbox.client();
    install(&client, &Widget::crd()).await;
    let discovery = Discovery::new(client.clone()).run().await.unwrap();
    let (resource, caps) = discovery
        .resolve_gvk(&GroupVersionKind::gvk("example.com", "v1", "Widget"))
        .expect("Widget is discovered");
    assert_eq!(resource.plural, "widgets");
    assert_eq!(caps.scope, kube::discovery::Scope::Namespaced);
    let list: Value =
        client.request(http::Request::get("/apis/example.com/v1").body(Vec::new()).unwrap()).await.unwrap();
    let entry = list["resources"].as_array().unwrap().iter().find(|r| r["name"] == "widgets").unwrap();
    assert_eq!(entry["shortNames"], json!(["wd"]));
    assert_eq!(entry["categories"], json!(["all"]));
    assert_eq!(entry["singularName"], "widget");
    let subresources: Vec<&str> =
        list["resources"].as_array().unwrap().iter().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(subresources, ["widgets", "widgets/status", "widgets/scale"]);
    let group: Value =
        client.request(http::Request::get("/apis/example.com").body(Vec::new()).unwrap()).await.unwrap();
    assert_eq!(group["preferredVersion"]["version"], "v1");

    let doc: Value = client
        .request(http::Request::get("/openapi/v3/apis/example.com/v1").body(Vec::new()).unwrap())
        .await
        .unwrap();
    let schema = &doc["components"]["schemas"]["com.example.v1.Widget"];
    assert_eq!(schema["x-kubernetes-group-version-kind"][0]["kind"], "Widget");
    assert_eq!(schema["properties"]["spec"]["properties"]["size"]["type"], "integer");
    assert!(doc["components"]["schemas"]["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"].is_object());

    // kubectl's Table: Name and the printer columns (Age only when no column is declared).
    let table: Value = client
        .request(
            http::Request::get("/apis/example.com/v1/namespaces/default/widgets")
                .header("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
                .body(Vec::new())
                .unwrap(),
        )
        .await
        .unwrap();
    let columns: Vec<&str> =
        table["columnDefinitions"].as_array().unwrap().iter().filter_map(|c| c["name"].as_str()).collect();
    assert_eq!(columns, ["Name", "Size"]);
}

#[tokio::test]
async fn the_schema_validates_prunes_and_defaults_custom_resources() {
    let sandbox = Sandbox::new();
    let client = sandbox.client();
    let mut crd: Value = serde_json::to_value(Widget::crd()).unwrap();
    let spec = &mut crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    spec["properties"]["size"]["maximum"] = json!(10);
    spec["properties"]["color"]["enum"] = json!(["red", "blue"]);
    spec["properties"]["color"]["default"] = json!("blue");
    let crd: CustomResourceDefinition = serde_json::from_value(crd).unwrap();
    install(&client, &crd).await;
    let widgets: Api<Widget> = Api::default_namespaced(client.clone());

    let created = widgets.create(&PostParams::default(), &widget("w", 3)).await.unwrap();
    assert_eq!(created.spec.color.as_deref(), Some("blue"), "the default is applied");

    let too_big = api_error(widgets.create(&PostParams::default(), &widget("big", 11)).await.unwrap_err());
    assert_eq!((too_big.code, too_big.reason.as_str()), (422, "Invalid"));
    assert!(
        too_big
            .message
            .contains("spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10"),
        "{}",
        too_big.message
    );

    // An unknown field is pruned, with a warning; Strict refuses it.
    let raw: Api<DynamicObject> = Api::default_namespaced_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("example.com", "v1", "Widget"), "widgets"),
    );
    let extra: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget", "metadata": { "name": "extra" }, "spec": { "size": 1, "shape": "round" },
    }))
    .unwrap();
    let kept = raw.create(&PostParams::default(), &extra).await.unwrap();
    assert_eq!(kept.data["spec"], json!({ "size": 1, "color": "blue" }));
    let mut strict_body = serde_json::to_value(&extra).unwrap();
    strict_body["metadata"]["name"] = json!("strict");
    let strict = client
        .request::<Value>(
            http::Request::post("/apis/example.com/v1/namespaces/default/widgets?fieldValidation=Strict")
                .header("content-type", "application/json")
                .body(serde_json::to_vec(&strict_body).unwrap())
                .unwrap(),
        )
        .await
        .unwrap_err();
    let strict = api_error(strict);
    assert_eq!(strict.code, 400);
    assert!(strict.message.contains(r#"unknown field "spec.shape""#), "{}", strict.message);
    assert_eq!(api_error(raw.get("strict").await.unwrap_err()).code, 404);
}

#[tokio::test]
async fn cel_rules_refuse_what_they_forbid_with_their_messages_and_transition_rules_see_the_old_object() {
    let sandbox = Sandbox::new();
    let client = sandbox.client();
    let mut crd: Value = serde_json::to_value(Widget::crd()).unwrap();
    let root = &mut crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    root["x-kubernetes-validations"] =
        json!([{ "rule": "self.metadata.name.startsWith('w')", "message": "a widget's name starts with w" }]);
    let spec = &mut root["properties"]["spec"];
    spec["x-kubernetes-validations"] = json!([
        { "rule": "self.size <= 10 || (has(self.color) && self.color == 'red')", "message": "only red widgets are bigger than 10" },
        { "rule": "!has(self.color) || self.color.matches('^[a-z]+$')", "fieldPath": ".color", "reason": "FieldValueForbidden",
          "messageExpression": "'colour ' + self.color + ' is not lower-case letters'" },
    ]);
    spec["properties"]["size"]["x-kubernetes-validations"] = json!([
        { "rule": "self >= oldSelf", "messageExpression": "'size may not shrink from %d to %d'.format([oldSelf, self])" },
    ]);
    let crd: CustomResourceDefinition = serde_json::from_value(crd).unwrap();
    install(&client, &crd).await;
    let widgets: Api<Widget> = Api::default_namespaced(client.clone());
    let refused = |e: Error| {
        let s = api_error(e);
        assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"), "{}", s.message);
        s.message
    };

    widgets.create(&PostParams::default(), &widget("w1", 3)).await.expect("every rule holds");
    let big = refused(widgets.create(&PostParams::default(), &widget("w2", 11)).await.unwrap_err());
    assert_eq!(
        big,
        r#"Widget.example.com "w2" is invalid: spec: Invalid value: "object": only red widgets are bigger than 10"#
    );
    let mut red = widget("w2", 11);
    red.spec.color = Some("red".into());
    widgets.create(&PostParams::default(), &red).await.expect("a red one may be");
    let mut shouty = widget("w3", 1);
    shouty.spec.color = Some("RED".into());
    let message = refused(widgets.create(&PostParams::default(), &shouty).await.unwrap_err());
    assert_eq!(
        message,
        r#"Widget.example.com "w3" is invalid: spec.color: Forbidden: colour RED is not lower-case letters"#
    );
    let message = refused(widgets.create(&PostParams::default(), &widget("x1", 1)).await.unwrap_err());
    assert_eq!(
        message,
        r#"Widget.example.com "x1" is invalid: <nil>: Invalid value: "object": a widget's name starts with w"#
    );

    // A transition rule: evaluated on update, against the stored value.
    let patch = |size: i32| Patch::Merge(json!({ "spec": { "size": size } }));
    widgets.patch("w1", &PatchParams::default(), &patch(5)).await.expect("it may grow");
    let message = refused(widgets.patch("w1", &PatchParams::default(), &patch(4)).await.unwrap_err());
    assert_eq!(
        message,
        r#"Widget.example.com "w1" is invalid: spec.size: Invalid value: "integer": size may not shrink from 5 to 4"#
    );

    // A rule that does not parse refuses its CRD, in the compiler's words.
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut bad: Value = serde_json::to_value(Widget::crd()).unwrap();
    bad["metadata"]["name"] = json!("gadgets.example.com");
    bad["spec"]["names"] = json!({ "plural": "gadgets", "singular": "gadget", "kind": "Gadget" });
    bad["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] =
        json!([{ "rule": "self.size >" }]);
    let bad: CustomResourceDefinition = serde_json::from_value(bad).unwrap();
    let message = refused(crds.create(&PostParams::default(), &bad).await.unwrap_err());
    assert!(
        message.contains(r#"spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{Rule:"self.size >", Message:"", MessageExpression:"", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:12: Syntax error: "#),
        "{message}"
    );

    // The message a CRD like it with `rules` on its spec is refused with.
    let refused_with = |rules: Value| {
        let crds = crds.clone();
        let mut crd: Value = serde_json::to_value(&bad).unwrap();
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] =
            rules;
        let crd: CustomResourceDefinition = serde_json::from_value(crd).unwrap();
        async move { refused(crds.create(&PostParams::default(), &crd).await.unwrap_err()) }
    };

    // So does one selecting a field the schema does not declare (a typo a kubebuilder marker
    // carries into every CRD it generates), as cel-go's checker words it.
    let message = refused_with(json!([{ "rule": "self.size > 0 || has(self.colour)" }])).await;
    assert!(
        message.ends_with(
            "compilation failed: ERROR: <input>:1:21: undefined field 'colour'\n | self.size > 0 || has(self.colour)\n | ....................^"
        ),
        "{message}"
    );

    // And one applying an operator to types it has no overload for, at the operator.
    let message = refused_with(json!([{ "rule": "self.size == '3'" }])).await;
    assert!(
        message.ends_with(
            "compilation failed: ERROR: <input>:1:11: found no matching overload for '_==_' applied to '(int, string)'\n | self.size == '3'\n | ..........^"
        ),
        "{message}"
    );

    // A message built by concatenating a number's string (which has no size cel-go can bound)
    // is estimated past any budget, and refused as a cluster refuses it.
    let message = refused_with(json!([
        { "rule": "self.size >= 0", "messageExpression": "'size ' + string(self.size) + ' is negative'" },
    ]))
    .await;
    let at = "spec.validation.openAPIV3Schema";
    let hint = "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)";
    assert_eq!(
        message,
        format!(
            "CustomResourceDefinition.apiextensions.k8s.io \"gadgets.example.com\" is invalid: [\
             {at}.properties[spec].x-kubernetes-validations[0].messageExpression: Forbidden: estimated messageExpression cost exceeds budget by factor of more than 100x {hint}, \
             {at}.properties[spec].x-kubernetes-validations[0].messageExpression: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema, \
             {at}: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x {hint}]"
        )
    );
}

/// A CRD with rules that may cost too much is refused by the estimate cel-go makes of them, as
/// a cluster refuses it; the bounds the message asks for make it acceptable.
#[tokio::test]
async fn rules_estimated_too_expensive_refuse_their_crd_until_bounded() {
    let sandbox = Sandbox::new();
    let client = sandbox.client();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let hint = "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)";
    let with = |tags: Value, rules: Value| {
        let mut crd: Value = serde_json::to_value(Widget::crd()).unwrap();
        let spec = &mut crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
        spec["properties"]["tags"] = tags;
        spec["properties"]["tags"]["x-kubernetes-validations"] = rules;
        serde_json::from_value::<CustomResourceDefinition>(crd).unwrap()
    };
    let at = "spec.validation.openAPIV3Schema.properties[spec].properties[tags]";

    // Every tag of an unbounded list of unbounded strings matched against a regex.
    let unbounded = json!({ "type": "array", "items": { "type": "string" } });
    let matched = json!([{ "rule": "self.all(t, t.matches('^[a-z]+$'))" }]);
    let e = api_error(
        crds.create(&PostParams::default(), &with(unbounded.clone(), matched.clone())).await.unwrap_err(),
    );
    assert_eq!(e.code, 422);
    assert!(
        e.message.contains(&format!(
            "{at}.x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x {hint}"
        )),
        "{}",
        e.message
    );

    // A rule on each item of an unbounded list runs as often as items fit in a request
    // (1,048,576 strings): at 53 each (`self`, and ⌈(4 × 63 + 1) × 0.1⌉ × ⌈8 × 0.25⌉ to match
    // a string of 63 characters), 5.6 times the budget.
    let items = json!({ "type": "array", "items": { "type": "string", "maxLength": 63,
        "x-kubernetes-validations": [{ "rule": "self.matches('^[a-z]+$')" }] } });
    let e = api_error(crds.create(&PostParams::default(), &with(items, json!([]))).await.unwrap_err());
    assert!(
        e.message.contains(&format!(
            "{at}.items.x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of 5.6x {hint}"
        )),
        "{}",
        e.message
    );

    // Bounded as the message asks, the same rule is accepted, and enforced.
    let bounded = json!({ "type": "array", "maxItems": 20, "items": { "type": "string", "maxLength": 63 } });
    install(&client, &with(bounded, matched)).await;
    let tagged = |tags: Value| {
        let body = json!({ "apiVersion": "example.com/v1", "kind": "Widget", "metadata": { "name": "tagged" },
            "spec": { "size": 1, "tags": tags } });
        http::Request::post("/apis/example.com/v1/namespaces/default/widgets")
            .header("content-type", "application/json")
            .body(serde_json::to_vec(&body).unwrap())
            .unwrap()
    };
    let e = api_error(client.request::<Value>(tagged(json!(["Bad"]))).await.unwrap_err());
    assert_eq!(
        e.message,
        r#"Widget.example.com "tagged" is invalid: spec.tags: Invalid value: "array": failed rule: self.all(t, t.matches('^[a-z]+$'))"#
    );
    client.request::<Value>(tagged(json!(["good"]))).await.expect("lower-case tags hold");
}

/// Rules that pass the CRD's estimate can still cost too much on a big object: one evaluation
/// is stopped at cel-go's per-call limit, and an object's evaluations share one budget, each
/// refusal worded as upstream's and the last error of the write.
#[tokio::test]
async fn rules_that_cost_too_much_when_they_run_stop_at_upstreams_limits() {
    let sandbox = Sandbox::new();
    let client = sandbox.client();
    // ⌈400 × 0.25⌉ = 100 times a string's traversal for every match.
    let re = format!("^(?:[a-z]+|{})$", "x".repeat(387));
    assert_eq!(re.len(), 400);
    let strings = json!({ "type": "array", "maxItems": 100,
        "items": { "type": "string", "maxLength": 2250,
            "x-kubernetes-validations": [{ "rule": format!("self.matches('{re}')") }] } });
    let mut crd: Value = serde_json::to_value(Widget::crd()).unwrap();
    let spec = &mut crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    for field in ["a", "b", "c", "d", "e"] {
        spec["properties"][field] = strings.clone();
    }
    spec["properties"]["f"] = json!({ "type": "array", "maxItems": 100,
        "items": { "type": "string", "maxLength": 2250 },
        "x-kubernetes-validations": [{ "rule": format!("self.all(t, t.matches('{re}'))"), "message": "lower-case" }] });
    install(&client, &serde_json::from_value(crd).unwrap()).await;
    let post = |name: &str, spec: Value| {
        let body = json!({ "apiVersion": "example.com/v1", "kind": "Widget", "metadata": { "name": name }, "spec": spec });
        http::Request::post("/apis/example.com/v1/namespaces/default/widgets")
            .header("content-type", "application/json")
            .body(serde_json::to_vec(&body).unwrap())
            .unwrap()
    };
    let full = json!(vec!["a".repeat(2250); 100]);

    // One evaluation: 100 matches of ⌈2251 × 0.1⌉ × 100 each is over 1,000,000.
    let e =
        api_error(client.request::<Value>(post("one", json!({ "size": 1, "f": full }))).await.unwrap_err());
    assert_eq!(
        e.message,
        r#"Widget.example.com "one" is invalid: spec.f: Invalid value: "array": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: lower-case"#
    );
    // Short strings cost little.
    client
        .request::<Value>(post("short", json!({ "size": 1, "f": vec!["abc"; 100] })))
        .await
        .expect("short strings are cheap");

    // Five lists of rules at their items: 22,601 each, 500 of them, over 10,000,000 together.
    // The budget runs out at the 43rd item of the fifth (in field order), and no rule runs after.
    let spec: Value = json!({ "size": 1, "a": full, "b": full, "c": full, "d": full, "e": full });
    let e = api_error(client.request::<Value>(post("many", spec)).await.unwrap_err());
    assert_eq!(
        e.message,
        r#"Widget.example.com "many" is invalid: spec.e[42]: Invalid value: "string": validation failed due to running out of cost budget, no further validation rules will be run"#
    );
}
