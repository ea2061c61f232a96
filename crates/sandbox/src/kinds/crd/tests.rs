//! The CRD strategy against upstream's rules and words (apiextensions-apiserver v1.32):
//! `pkg/apis/apiextensions/validation/validation.go` (and `k8s.io/apiserver/pkg/util/webhook`
//! for the conversion webhook), `pkg/apis/apiextensions/v1/defaults.go` and `conversion.go`,
//! `pkg/registry/customresourcedefinition/strategy.go` and `etcd.go`,
//! `pkg/controller/status/naming_controller.go`, `pkg/controller/establish`,
//! `pkg/controller/finalizer/crd_finalizer.go`, `pkg/apihelpers/helpers.go`, and
//! `k8s.io/apimachinery/pkg/version/helpers.go`.

use serde_json::{Value, json};

use super::version::version_priority_sort;
use super::*;

const DNS1035: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

fn schema() -> Value {
    json!({"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object"}}}})
}

/// A valid CRD as a client sends it, defaulted.
fn crd() -> Value {
    let mut c = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": schema()}]
        }
    });
    default(&mut c);
    c
}

/// The causes of creating `c` (prepared first, as the strategy does).
fn create(mut c: Value) -> Vec<(String, String)> {
    prepare_create(&mut c);
    validate(&c, None)
}

fn edit(f: impl FnOnce(&mut Value)) -> Vec<(String, String)> {
    let mut c = crd();
    f(&mut c);
    default(&mut c);
    create(c)
}

fn err(path: &str, msg: &str) -> (String, String) {
    (path.to_owned(), msg.to_owned())
}

/// A stored, established CRD, for updates.
fn stored() -> Value {
    let mut c = crd();
    prepare_create(&mut c);
    c["status"] = names_status(&c, &[]);
    c
}

fn update(f: impl FnOnce(&mut Value)) -> Vec<(String, String)> {
    let old = stored();
    let mut new = old.clone();
    f(&mut new);
    default(&mut new);
    prepare_update(&mut new, &old);
    validate(&new, Some(&old))
}

#[test]
fn defaults_follow_set_defaults_custom_resource_definition() {
    let mut c = json!({"spec": {"names": {"kind": "Widget"}, "versions": [{"name": "v1", "storage": true}],
        "conversion": null}, "status": {}});
    default(&mut c);
    assert_eq!(c["spec"]["names"], json!({"kind": "Widget", "singular": "widget", "listKind": "WidgetList"}));
    assert_eq!(c["spec"]["conversion"], json!({"strategy": "None"}));
    assert_eq!(c["status"]["storedVersions"], json!(["v1"]));

    let mut c = json!({"spec": {"names": {"kind": "Widget", "singular": "w", "listKind": "Ws"}, "conversion":
        {"strategy": "Webhook", "webhook": {"clientConfig": {"service": {"name": "s", "namespace": "n"}}}}}});
    default(&mut c);
    assert_eq!(c["spec"]["names"], json!({"kind": "Widget", "singular": "w", "listKind": "Ws"}));
    assert_eq!(c["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["port"], 443);

    // No kind: neither singular nor listKind.
    let mut c = json!({"spec": {"names": {}}});
    default(&mut c);
    assert_eq!(c["spec"]["names"], json!({}));
    for mut odd in
        [json!(null), json!("x"), json!({"spec": "x"}), json!({"spec": {"names": 3}}), json!({"spec": {}})]
    {
        default(&mut odd);
        prepare_create(&mut odd);
    }
}

#[test]
fn prepare_create_resets_the_status_as_a_create_answers() {
    let mut c = crd();
    c["status"] =
        json!({"acceptedNames": {"plural": "x", "kind": "X"}, "conditions": [{"type": "Established"}]});
    c["metadata"]["generation"] = json!(7);
    prepare_create(&mut c);
    assert_eq!(
        c["status"],
        json!({"conditions": null, "acceptedNames": {"plural": "", "kind": ""}, "storedVersions": ["v1"]})
    );
    assert_eq!(c["metadata"]["generation"], 1);

    let mut c = crd();
    c["spec"]["versions"][0]["storage"] = json!(false);
    prepare_create(&mut c);
    assert_eq!(c["status"]["storedVersions"], Value::Null);
}

#[test]
fn prepare_update_keeps_the_stored_status_and_records_a_new_storage_version() {
    let old = stored();
    let mut new = old.clone();
    new["status"] = json!({"storedVersions": ["bogus"]});
    new["spec"]["versions"][0]["storage"] = json!(false);
    new["spec"]["versions"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "v2", "served": true, "storage": true,
        "schema": {"openAPIV3Schema": {"type": "object"}}}));
    prepare_update(&mut new, &old);
    assert_eq!(new["status"]["storedVersions"], json!(["v1", "v2"]));
    assert_eq!(new["status"]["acceptedNames"], old["status"]["acceptedNames"]);
    assert!(validate(&new, Some(&old)).is_empty(), "{:?}", validate(&new, Some(&old)));
}

#[test]
fn a_valid_crd_passes() {
    assert_eq!(create(crd()), []);
    // Cluster scope, two versions with their own schemas, a scale subresource, columns.
    let ok = edit(|c| {
        c["spec"]["scope"] = json!("Cluster");
        c["spec"]["versions"] = json!([
            {"name": "v1beta1", "served": true, "storage": false, "schema": {"openAPIV3Schema": {"type": "object"}},
             "deprecated": true, "deprecationWarning": "use v1"},
            {"name": "v1", "served": true, "storage": true, "schema": schema(),
             "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".status.selector"}},
             "additionalPrinterColumns": [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]}
        ]);
    });
    assert_eq!(ok, []);
}

#[test]
fn the_name_is_plural_dot_group() {
    assert_eq!(
        edit(|c| c["metadata"]["name"] = json!("gadgets.example.com")),
        [err(
            "metadata.name",
            "Invalid value: \"gadgets.example.com\": must be spec.names.plural+\".\"+spec.group"
        )]
    );
}

#[test]
fn the_group_is_a_dotted_subdomain() {
    let no_dot = edit(|c| {
        c["spec"]["group"] = json!("example");
        c["metadata"]["name"] = json!("widgets.example");
    });
    assert_eq!(
        no_dot,
        [err("spec.group", "Invalid value: \"example\": should be a domain with at least one dot")]
    );
    let bad = edit(|c| {
        c["spec"]["group"] = json!("Example.com");
        c["metadata"]["name"] = json!("widgets.Example.com");
    });
    assert_eq!(
        bad,
        [err(
            "spec.group",
            "Invalid value: \"Example.com\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        )]
    );
    let empty = edit(|c| {
        c["spec"]["group"] = json!("");
        c["metadata"]["name"] = json!("widgets.");
    });
    assert_eq!(empty, [err("spec.group", "Required value")]);
}

#[test]
fn the_scope_is_namespaced_or_cluster() {
    assert_eq!(
        edit(|c| c["spec"]["scope"] = json!("Global")),
        [err("spec.scope", "Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\"")]
    );
    assert_eq!(edit(|c| c["spec"]["scope"] = json!("")), [err("spec.scope", "Required value")]);
}

#[test]
fn every_version_needs_a_schema() {
    let errs = edit(|c| {
        c["spec"]["versions"][0].as_object_mut().unwrap().remove("schema");
    });
    assert_eq!(
        errs,
        [err("spec.versions[0].schema.openAPIV3Schema", "Required value: schemas are required")]
    );
}

#[test]
fn version_names_storage_and_uniqueness() {
    let v = |name: &str, storage: bool| json!({"name": name, "served": true, "storage": storage, "schema": schema()});
    let errs = edit(|c| c["spec"]["versions"] = json!([v("V1", true)]));
    let why = format!("Invalid value: \"V1\": {DNS1035}");
    assert_eq!(
        errs,
        [
            err("spec.versions[0].name", &why),
            err("spec.version", &why),
            // The stored version must be one of the versions, and it is "V1"; fine.
        ]
    );

    // The schemas are the same, so hoisted: each version prints with nil pointers.
    let go = |name: &str, storage: bool| {
        format!(
            "apiextensions.CustomResourceDefinitionVersion{{Name:\"{name}\", Served:true, Storage:{storage}, Deprecated:false, DeprecationWarning:(*string)(nil), Schema:(*apiextensions.CustomResourceValidation)(nil), Subresources:(*apiextensions.CustomResourceSubresources)(nil), AdditionalPrinterColumns:[]apiextensions.CustomResourceColumnDefinition(nil), SelectableFields:[]apiextensions.SelectableField(nil)}}"
        )
    };
    let two =
        format!("[]apiextensions.CustomResourceDefinitionVersion{{{}, {}}}", go("v1", true), go("v1", false));
    let errs = edit(|c| c["spec"]["versions"] = json!([v("v1", true), v("v1", false)]));
    assert_eq!(
        errs,
        [err("spec.versions", &format!("Invalid value: {two}: must contain unique version names"))]
    );

    let none = format!("[]apiextensions.CustomResourceDefinitionVersion{{{}}}", go("v1", false));
    let errs = edit(|c| c["spec"]["versions"] = json!([v("v1", false)]));
    assert_eq!(
        errs,
        [
            err(
                "spec.versions",
                &format!("Invalid value: {none}: must have exactly one version marked as storage version")
            ),
            err(
                "status.storedVersions",
                "Invalid value: []string(nil): must have at least one stored version"
            ),
        ]
    );
    let errs = edit(|c| c["spec"]["versions"] = json!([]));
    assert_eq!(
        errs,
        [
            err(
                "spec.versions",
                "Invalid value: []apiextensions.CustomResourceDefinitionVersion{}: must have exactly one version marked as storage version"
            ),
            err(
                "status.storedVersions",
                "Invalid value: []string(nil): must have at least one stored version"
            ),
        ]
    );
    let both =
        format!("[]apiextensions.CustomResourceDefinitionVersion{{{}, {}}}", go("v1", true), go("v2", true));
    let errs = edit(|c| c["spec"]["versions"] = json!([v("v1", true), v("v2", true)]));
    assert_eq!(
        errs,
        [
            err(
                "spec.versions",
                &format!("Invalid value: {both}: must have exactly one version marked as storage version")
            ),
            // PrepareForCreate recorded only the first.
            err("status.storedVersions", "Invalid value: []string{\"v1\"}: must have the storage version v2"),
        ]
    );
}

#[test]
fn deprecation_warnings_only_on_deprecated_versions() {
    let errs = edit(|c| c["spec"]["versions"][0]["deprecationWarning"] = json!("old"));
    assert_eq!(
        errs,
        [err(
            "spec.versions[0].deprecationWarning",
            "Invalid value: \"old\": can only be set for deprecated versions"
        )]
    );
    let errs = edit(|c| {
        c["spec"]["versions"][0]["deprecated"] = json!(true);
        c["spec"]["versions"][0]["deprecationWarning"] = json!("a\tb");
    });
    assert_eq!(
        errs,
        [err(
            "spec.versions[0].deprecationWarning",
            "Invalid value: \"a\\tb\": must only contain printable UTF-8 characters; non-printable character found at index 1"
        )]
    );
}

#[test]
fn names_are_required_and_well_formed() {
    let errs = edit(|c| c["spec"]["names"] = json!({}));
    assert_eq!(
        errs,
        [
            err(
                "metadata.name",
                "Invalid value: \"widgets.example.com\": must be spec.names.plural+\".\"+spec.group"
            ),
            err("spec.names.plural", "Required value"),
            err("spec.names.singular", "Required value"),
            err("spec.names.kind", "Required value"),
            err("spec.names.listKind", "Required value"),
        ]
    );
    let errs = edit(|c| {
        c["spec"]["names"] = json!({"plural": "widgets", "singular": "Widget", "kind": "Wid_get", "listKind": "Wid_get",
            "shortNames": ["ok", "-no"], "categories": ["all", "A"]});
    });
    assert_eq!(
        errs,
        [
            err("spec.names.singular", &format!("Invalid value: \"Widget\": {DNS1035}")),
            err(
                "spec.names.kind",
                &format!(
                    "Invalid value: \"Wid_get\": may have mixed case, but should otherwise match: {DNS1035}"
                )
            ),
            err(
                "spec.names.listKind",
                &format!(
                    "Invalid value: \"Wid_get\": may have mixed case, but should otherwise match: {DNS1035}"
                )
            ),
            err("spec.names.shortNames[1]", &format!("Invalid value: \"-no\": {DNS1035}")),
            err("spec.names.listKind", "Invalid value: \"Wid_get\": kind and listKind may not be the same"),
            err("spec.names.categories[1]", &format!("Invalid value: \"A\": {DNS1035}")),
        ]
    );
    let long = "a".repeat(64);
    let errs = edit(|c| {
        c["spec"]["names"]["plural"] = json!(long);
        c["metadata"]["name"] = json!(format!("{long}.example.com"));
    });
    assert_eq!(
        errs,
        [err("spec.names.plural", &format!("Invalid value: \"{long}\": must be no more than 63 characters"))]
    );
}

#[test]
fn scale_paths() {
    let scale = |s: Value| edit(move |c| c["spec"]["versions"][0]["subresources"] = json!({"scale": s}));
    // One version: the subresources are hoisted to `spec.subresources`.
    assert_eq!(
        scale(json!({"specReplicasPath": ".status.replicas", "statusReplicasPath": "status.replicas",
            "labelSelectorPath": ".metadata.labels"})),
        [
            err(
                "spec.subresources.scale.specReplicasPath",
                "Invalid value: \".status.replicas\": should be a json path under .spec"
            ),
            err(
                "spec.subresources.scale.statusReplicasPath",
                "Invalid value: \"status.replicas\": must be a simple json path starting with ."
            ),
            err(
                "spec.subresources.scale.labelSelectorPath",
                "Invalid value: \".metadata.labels\": should be a json path under either .spec or .status"
            ),
        ]
    );
    assert_eq!(
        scale(json!({})),
        [
            err("spec.subresources.scale.specReplicasPath", "Required value"),
            err("spec.subresources.scale.statusReplicasPath", "Required value"),
        ]
    );
    // Versions with different subresources keep them, and their paths.
    let errs = edit(|c| {
        c["spec"]["versions"][0]["storage"] = json!(false);
        c["spec"]["versions"].as_array_mut().unwrap().push(json!({"name": "v2", "served": true, "storage": true,
            "schema": schema(), "subresources": {"scale": {"specReplicasPath": ".spec", "statusReplicasPath": ".status.r"}}}));
    });
    assert_eq!(
        errs,
        [err(
            "spec.versions[1].subresources.scale.specReplicasPath",
            "Invalid value: \".spec\": should be a json path under .spec"
        )]
    );
}

#[test]
fn printer_columns() {
    let errs = edit(|c| {
        c["spec"]["versions"][0]["additionalPrinterColumns"] = json!([
            {"name": "", "type": "", "jsonPath": ""},
            {"name": "Size", "type": "float", "format": "hex", "jsonPath": "spec.size"}
        ]);
    });
    assert_eq!(
        errs,
        [
            err("spec.additionalPrinterColumns[0].name", "Required value"),
            err(
                "spec.additionalPrinterColumns[0].type",
                "Required value: must be one of boolean,date,integer,number,string"
            ),
            err("spec.additionalPrinterColumns[0].JSONPath", "Required value"),
            err(
                "spec.additionalPrinterColumns[1].type",
                "Invalid value: \"float\": must be one of boolean,date,integer,number,string"
            ),
            err(
                "spec.additionalPrinterColumns[1].format",
                "Invalid value: \"hex\": must be one of byte,date,date-time,double,float,int32,int64,password"
            ),
            err(
                "spec.additionalPrinterColumns[1].JSONPath",
                "Invalid value: \"spec.size\": must be a simple json path starting with ."
            ),
        ]
    );
}

#[test]
fn the_status_subresource_limits_the_root_schema() {
    let root = |s: Value| {
        edit(move |c| {
            c["spec"]["versions"][0]["subresources"] = json!({"status": {}});
            c["spec"]["versions"][0]["schema"] = json!({"openAPIV3Schema": s});
        })
    };
    assert_eq!(root(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})), []);
    // The structural rules (an array needs items; the root must be an object) add their own.
    assert_eq!(
        root(json!({"type": "array"})),
        [
            err(
                "spec.validation.openAPIV3Schema.type",
                "Invalid value: \"array\": only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled"
            ),
            err("spec.validation.openAPIV3Schema.items", "Required value: must be specified"),
            err(
                "spec.validation.openAPIV3Schema.type",
                "Invalid value: \"array\": must be object at the root"
            ),
        ]
    );
    let s = json!({"type": "object", "additionalProperties": true});
    assert_eq!(
        root(s.clone()),
        [
            err(
                "spec.validation.openAPIV3Schema",
                &format!(
                    "Invalid value: {s}: only [Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations] fields are allowed at the root of the schema if the status subresource is enabled"
                ),
            ),
            err(
                "spec.validation.openAPIV3Schema.additionalProperties",
                "Forbidden: must not be used at the root"
            ),
        ]
    );
    // Nullable is refused at the root with or without a status subresource.
    let errs = edit(|c| c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["nullable"] = json!(true));
    assert_eq!(
        errs,
        [err("spec.validation.openAPIV3Schema.nullable", "Forbidden: nullable cannot be true at the root")]
    );
}

#[test]
fn preserve_unknown_fields_is_refused() {
    let errs = edit(|c| {
        c["spec"]["preserveUnknownFields"] = json!(true);
        c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["default"] = json!({});
    });
    assert_eq!(
        errs,
        [
            err(
                "spec.preserveUnknownFields",
                "Invalid value: true: must be false in order to use defaults in the schema"
            ),
            err(
                "spec.preserveUnknownFields",
                "Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead"
            ),
        ]
    );
    // A property *named* default is no default.
    let errs = edit(|c| {
        c["spec"]["preserveUnknownFields"] = json!(true);
        c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["default"] =
            json!({"type": "string"});
    });
    assert_eq!(errs.len(), 1, "{errs:?}");
}

#[test]
fn conversion() {
    let conv = |c: Value| edit(move |crd| crd["spec"]["conversion"] = c);
    assert_eq!(
        conv(json!({"strategy": "Magic"})),
        [err(
            "spec.conversion.strategy",
            "Unsupported value: \"Magic\": supported values: \"None\", \"Webhook\""
        )]
    );
    assert_eq!(
        conv(json!({"strategy": "Webhook"})),
        [
            err(
                "spec.conversion.webhookClientConfig",
                "Required value: required when strategy is set to Webhook"
            ),
            err("spec.conversion.conversionReviewVersions", "Required value"),
        ]
    );
    assert_eq!(
        conv(
            json!({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "https://conv.example.com/convert"},
            "conversionReviewVersions": ["v1"]}})
        ),
        []
    );
    assert_eq!(
        conv(json!({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "http://u:p@h/x?a=b#f"},
            "conversionReviewVersions": ["v2", "v2", "V3"]}})),
        [
            err(
                "spec.conversion.webhookClientConfig.url",
                "Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]"
            ),
            err(
                "spec.conversion.webhookClientConfig.url",
                "Invalid value: \"u:p\": user information is not permitted in the URL"
            ),
            err(
                "spec.conversion.webhookClientConfig.url",
                "Invalid value: \"f\": fragments are not permitted in the URL"
            ),
            err(
                "spec.conversion.webhookClientConfig.url",
                "Invalid value: \"a=b\": query parameters are not permitted in the URL"
            ),
            err("spec.conversion.conversionReviewVersions[1]", "Invalid value: \"v2\": duplicate version"),
            err("spec.conversion.conversionReviewVersions[2]", &format!("Invalid value: \"V3\": {DNS1035}")),
            err(
                "spec.conversion.conversionReviewVersions",
                "Invalid value: []string{\"v2\", \"v2\", \"V3\"}: must include at least one of v1, v1beta1"
            ),
        ]
    );
    // Upstream passes the service's name and namespace swapped; so are the causes.
    assert_eq!(
        conv(
            json!({"strategy": "Webhook", "webhook": {"clientConfig": {"service": {"namespace": "ns", "name": "",
            "port": 0, "path": "/a//B"}}, "conversionReviewVersions": ["v1"]}})
        ),
        [
            err(
                "spec.conversion.webhookClientConfig.service.namespace",
                "Required value: service namespace is required"
            ),
            err(
                "spec.conversion.webhookClientConfig.service.port",
                "Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive"
            ),
            err(
                "spec.conversion.webhookClientConfig.service.path",
                "Invalid value: \"/a//B\": segment[1] may not be empty"
            ),
            err(
                "spec.conversion.webhookClientConfig.service.path",
                "Invalid value: \"/a//B\": segment[2]: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ),
        ]
    );
    assert_eq!(
        conv(
            json!({"strategy": "Webhook", "webhook": {"clientConfig": {}, "conversionReviewVersions": ["v1"]}})
        ),
        [err(
            "spec.conversion.webhookClientConfig",
            "Required value: exactly one of url or service is required"
        )]
    );
    assert_eq!(
        conv(
            json!({"strategy": "None", "webhook": {"clientConfig": {"url": "https://x"}, "conversionReviewVersions": ["v1"]}})
        ),
        [
            err(
                "spec.conversion.webhookClientConfig",
                "Forbidden: should not be set when strategy is not set to Webhook"
            ),
            err(
                "spec.conversion.conversionReviewVersions",
                "Forbidden: should not be set when strategy is not set to Webhook"
            ),
        ]
    );
}

#[test]
fn protected_groups_need_the_approval_annotation() {
    let in_group = |annotation: Option<&str>| {
        edit(move |c| {
            c["spec"]["group"] = json!("x.k8s.io");
            c["metadata"]["name"] = json!("widgets.x.k8s.io");
            if let Some(a) = annotation {
                c["metadata"]["annotations"] = json!({API_APPROVED_ANNOTATION: a});
            }
        })
    };
    assert_eq!(
        in_group(None),
        [err(
            "metadata.annotations[api-approved.kubernetes.io]",
            "Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111"
        )]
    );
    assert_eq!(
        in_group(Some("yes")),
        [err(
            "metadata.annotations[api-approved.kubernetes.io]",
            "Invalid value: \"yes\": protected groups must have approval annotation \"api-approved.kubernetes.io\" with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"
        )]
    );
    assert_eq!(in_group(Some("https://github.com/kubernetes/kubernetes/pull/78458")), []);
    assert_eq!(in_group(Some("unapproved, experimental")), []);
    assert!(validation::is_protected_group("kubernetes.io"));
    assert!(!validation::is_protected_group("k8s.io.example.com"));
    assert!(!validation::is_protected_group("xk8s.io"));
}

#[test]
fn updates() {
    // Established: scope and kind are immutable; group and plural always.
    let errs = update(|c| {
        c["spec"]["scope"] = json!("Cluster");
        c["spec"]["names"]["kind"] = json!("Gadget");
        c["spec"]["names"]["listKind"] = json!("GadgetList");
    });
    assert_eq!(
        errs,
        [
            err("spec.scope", "Invalid value: \"Cluster\": field is immutable"),
            err("spec.names.kind", "Invalid value: \"Gadget\": field is immutable"),
        ]
    );
    let errs = update(|c| {
        c["spec"]["group"] = json!("example.org");
        c["spec"]["names"]["plural"] = json!("gadgets");
    });
    assert_eq!(
        errs,
        [
            err("spec.group", "Invalid value: \"example.org\": field is immutable"),
            err("spec.names.plural", "Invalid value: \"gadgets\": field is immutable"),
        ]
    );
    // Not yet established: the scope may change.
    let mut old = crd();
    prepare_create(&mut old);
    let mut new = old.clone();
    new["spec"]["scope"] = json!("Cluster");
    assert_eq!(validate(&new, Some(&old)), []);

    // A stored version may not leave spec.versions.
    let errs = update(|c| {
        c["spec"]["versions"] = json!([{"name": "v2", "served": true, "storage": true, "schema": schema()}]);
    });
    assert_eq!(
        errs,
        [err("status.storedVersions[0]", "Invalid value: \"v1\": must appear in spec.versions")]
    );
    // Without the strategy's preparation the new storage version is missing from the status.
    let old = stored();
    let mut new = old.clone();
    new["spec"]["versions"] = json!([{"name": "v1", "served": true, "storage": false, "schema": schema()},
        {"name": "v2", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object"}}}]);
    assert_eq!(
        validate(&new, Some(&old)),
        [err("status.storedVersions", "Invalid value: []string{\"v1\"}: must have the storage version v2")]
    );
    // An old CRD that was already approved-or-not in the same way passes unchanged.
    let mut old = stored();
    old["spec"]["group"] = json!("x.k8s.io");
    let mut new = old.clone();
    new["metadata"]["labels"] = json!({"a": "b"});
    assert_eq!(validate(&new, Some(&old)), []);
}

#[test]
fn malformed_crds_are_causes_not_panics() {
    for odd in [
        json!(null),
        json!(1),
        json!({"spec": "x"}),
        json!({"spec": {"versions": "x", "names": [1], "group": 5}}),
        json!({"spec": {"versions": [1, null, {"name": 3, "schema": "x", "subresources": {"scale": 1}}]}}),
        json!({"spec": {"conversion": {"strategy": "Webhook", "webhook": {"clientConfig": {"url": 1}}}}}),
        json!({"spec": {"conversion": {"strategy": "Webhook", "webhook": {"clientConfig": {"url": ":x\u{1}é"}}}}}),
        json!({"status": {"storedVersions": [1], "acceptedNames": "x", "conditions": 3}, "metadata": 4}),
    ] {
        let mut c = odd.clone();
        default(&mut c);
        prepare_create(&mut c);
        let _ = validate(&c, None);
        let _ = validate(&c, Some(&odd));
        let _ = names_status(&odd, &[&c]);
        let _ = served_versions(&odd);
        let mut t = odd.clone();
        terminating(&mut t);
        cleanup_started(&mut t);
        cleanup_finished(&mut t);
    }
    assert!(!validate(&json!({}), None).is_empty());
}

fn with_names(group: &str, accepted: Value) -> Value {
    json!({"spec": {"group": group}, "status": {"acceptedNames": accepted}})
}

fn condition_of<'a>(status: &'a Value, type_: &str) -> &'a Value {
    status["conditions"].as_array().unwrap().iter().find(|c| c["type"] == type_).unwrap()
}

#[test]
fn names_without_conflicts_are_accepted_and_established() {
    let mut c = crd();
    prepare_create(&mut c);
    let other = with_names("other.com", json!({"plural": "widgets", "kind": "Widget"}));
    let status = names_status(&c, &[&other]);
    assert_eq!(
        status["acceptedNames"],
        json!({"plural": "widgets", "singular": "widget", "shortNames": ["wd"], "kind": "Widget", "listKind": "WidgetList"})
    );
    let accepted = condition_of(&status, "NamesAccepted");
    assert_eq!(
        (accepted["status"].as_str(), accepted["reason"].as_str()),
        (Some("True"), Some("NoConflicts"))
    );
    assert_eq!(accepted["message"], "no conflicts found");
    assert!(accepted["lastTransitionTime"].as_str().is_some_and(|t| t.ends_with('Z')));
    let established = condition_of(&status, "Established");
    assert_eq!(
        (established["status"].as_str(), established["reason"].as_str(), established["message"].as_str()),
        (Some("True"), Some("InitialNamesAccepted"), Some("the initial names have been accepted"))
    );
    assert_eq!(status["storedVersions"], json!(["v1"]));
    assert_eq!(status["conditions"].as_array().map(Vec::len), Some(2));
}

#[test]
fn name_conflicts_in_the_group() {
    let mut c = crd();
    prepare_create(&mut c);
    let check = |other: Value, reason: &str, message: &str| {
        let status = names_status(&c, &[&other]);
        let cond = condition_of(&status, "NamesAccepted");
        assert_eq!(
            (cond["status"].as_str(), cond["reason"].as_str()),
            (Some("False"), Some(reason)),
            "{other}"
        );
        assert_eq!(cond["message"], message);
        let est = condition_of(&status, "Established");
        assert_eq!((est["status"].as_str(), est["reason"].as_str()), (Some("False"), Some("NotAccepted")));
        assert_eq!(est["message"], "not all names are accepted");
        status
    };
    let status = check(
        with_names("example.com", json!({"plural": "widgets", "kind": "Other"})),
        "PluralConflict",
        "\"widgets\" is already in use",
    );
    // The rest is accepted; the conflicting name keeps its old (empty) value.
    assert_eq!(status["acceptedNames"]["plural"], "");
    assert_eq!(status["acceptedNames"]["kind"], "Widget");
    check(
        with_names("example.com", json!({"plural": "x", "shortNames": ["widget"], "kind": "X"})),
        "SingularConflict",
        "\"widget\" is already in use",
    );
    check(
        with_names("example.com", json!({"plural": "wd", "kind": "X"})),
        "ShortNamesConflict",
        "\"wd\" is already in use",
    );
    check(
        with_names("example.com", json!({"plural": "x", "kind": "Widget"})),
        "KindConflict",
        "\"Widget\" is already in use",
    );
    check(
        with_names("example.com", json!({"plural": "x", "kind": "X", "listKind": "WidgetList"})),
        "ListKindConflict",
        "\"WidgetList\" is already in use",
    );
    // Several conflicts: the last one checked is reported.
    check(
        with_names("example.com", json!({"plural": "widgets", "kind": "Widget"})),
        "KindConflict",
        "\"Widget\" is already in use",
    );
    // Several short names in use, aggregated as upstream's errors.
    let mut c2 = c.clone();
    c2["spec"]["names"]["shortNames"] = json!(["wd", "wg"]);
    let other = with_names("example.com", json!({"plural": "x", "shortNames": ["wd", "wg"], "kind": "X"}));
    let status = names_status(&c2, &[&other]);
    assert_eq!(
        condition_of(&status, "NamesAccepted")["message"],
        "[\"wd\" is already in use, \"wg\" is already in use]"
    );
}

#[test]
fn conditions_keep_their_transition_time_and_established_stays() {
    let mut c = crd();
    prepare_create(&mut c);
    c["status"] = names_status(&c, &[]);
    for cond in c["status"]["conditions"].as_array_mut().unwrap() {
        cond["lastTransitionTime"] = json!("2020-01-01T00:00:00Z");
    }
    let again = names_status(&c, &[]);
    assert_eq!(again["conditions"], c["status"]["conditions"]);

    // A later rename that conflicts: NamesAccepted turns False (new time), Established stays.
    c["spec"]["names"]["plural"] = json!("gadgets");
    let other = with_names("example.com", json!({"plural": "gadgets", "kind": "Gadget"}));
    let status = names_status(&c, &[&other]);
    let accepted = condition_of(&status, "NamesAccepted");
    assert_eq!(accepted["status"], "False");
    assert_ne!(accepted["lastTransitionTime"], "2020-01-01T00:00:00Z");
    let established = condition_of(&status, "Established");
    assert_eq!(established, condition_of(&c["status"], "Established"));
    assert_eq!(status["acceptedNames"]["plural"], "widgets");
}

#[test]
fn deletion_adds_the_finalizer_and_the_terminating_condition() {
    let mut c = stored();
    terminating(&mut c);
    assert_eq!(c["metadata"]["finalizers"], json!([CLEANUP_FINALIZER]));
    assert!(crate::object_meta::is_deleting(&c));
    let t = condition_of(&c["status"], "Terminating").clone();
    assert_eq!((t["status"].as_str(), t["reason"].as_str()), (Some("True"), Some("InstanceDeletionPending")));
    assert_eq!(
        t["message"],
        "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon"
    );
    terminating(&mut c);
    assert_eq!(c["metadata"]["finalizers"], json!([CLEANUP_FINALIZER]));

    cleanup_started(&mut c);
    let t = condition_of(&c["status"], "Terminating");
    assert_eq!(
        (t["reason"].as_str(), t["message"].as_str()),
        (Some("InstanceDeletionInProgress"), Some("CustomResource deletion is in progress"))
    );
    cleanup_finished(&mut c);
    let t = condition_of(&c["status"], "Terminating");
    assert_eq!(
        (t["status"].as_str(), t["reason"].as_str(), t["message"].as_str()),
        (Some("False"), Some("InstanceDeletionCompleted"), Some("removed all instances"))
    );
    assert_eq!(c["metadata"]["finalizers"], json!([]));

    let mut never = crd();
    prepare_create(&mut never);
    terminating(&mut never);
    cleanup_finished(&mut never);
    let t = condition_of(&never["status"], "Terminating");
    assert_eq!(
        (t["reason"].as_str(), t["message"].as_str()),
        (Some("NeverEstablished"), Some("resource was never established"))
    );
}

#[test]
fn versions_served_and_stored() {
    let c = json!({"spec": {"versions": [
        {"name": "v1beta1", "served": true, "storage": false},
        {"name": "v1", "served": true, "storage": true},
        {"name": "v0", "served": false, "storage": false}
    ]}});
    assert_eq!(served_versions(&c), [("v1beta1".to_owned(), false), ("v1".to_owned(), true)]);
    assert_eq!(storage_version(&c).as_deref(), Some("v1"));
    assert_eq!(storage_version(&json!({})), None);
}

#[test]
fn kube_aware_version_order() {
    let mut v: Vec<String> = [
        "foo10",
        "v1alpha1",
        "v1",
        "v10beta2",
        "v2",
        "foo1",
        "v11alpha2",
        "v1beta1",
        "v10",
        "v1beta",
        "v1.0",
    ]
    .map(str::to_owned)
    .to_vec();
    version_priority_sort(&mut v);
    assert_eq!(
        v,
        [
            "v10",
            "v2",
            "v1",
            "v10beta2",
            "v1beta1",
            "v11alpha2",
            "v1alpha1",
            "foo1",
            "foo10",
            "v1.0",
            "v1beta"
        ]
    );
    use std::cmp::Ordering;
    assert_eq!(compare_kube_aware_versions("v1", "v1"), Ordering::Equal);
    assert_eq!(compare_kube_aware_versions("v1", "v99beta1"), Ordering::Greater);
    assert_eq!(compare_kube_aware_versions("v99999999999999999999", "a"), Ordering::Less);
}

#[test]
fn printer_column_paths_must_parse() {
    let col = |path: &str| {
        let path = path.to_owned();
        edit(move |c| {
            c["spec"]["versions"][0]["additionalPrinterColumns"] =
                json!([{"name": "Ready", "type": "string", "jsonPath": path}]);
        })
    };
    assert_eq!(col(".status.conditions[?(@.type==\"Ready\")].status"), []);
    let errs = col(".spec[");
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].0, "spec.additionalPrinterColumns[0].JSONPath");
    assert!(errs[0].1.starts_with("Invalid value: \".spec[\": "), "{errs:?}");
}
