//! A CRD schema's own checks ([`structural_errors`]), with the field paths and messages a v1.32
//! API server gives, and the whole round a custom resource goes through (prune, default,
//! validate). Each group cites the upstream source it follows.

use serde_json::{Value, json};

use super::{Structural, structural_errors};

const AT: &str = "spec.versions[0].schema.openAPIV3Schema";

fn errs(schema: Value) -> Vec<(String, String)> {
    structural_errors(&schema, AT)
}

fn at(rest: &str) -> String {
    format!("{AT}{rest}")
}

fn pair(rest: &str, message: &str) -> (String, String) {
    (at(rest), message.to_owned())
}

/// A root schema with one property `spec` of schema `spec`.
fn with_spec(spec: Value) -> Value {
    json!({"type": "object", "properties": {"spec": spec}})
}

#[test]
fn a_good_schema_has_no_errors() {
    let schema = with_spec(json!({"type": "object", "properties": {
        "size": {"type": "integer", "minimum": 1, "maximum": 10, "default": 3},
        "port": {"x-kubernetes-int-or-string": true},
        "free": {"x-kubernetes-preserve-unknown-fields": true},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                  "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}}}}));
    assert_eq!(errs(schema), Vec::<(String, String)>::new());
}

/// `pkg/apiserver/schema/validation.go`: `validateStructuralInvariants`.
mod structural {
    use super::*;

    #[test]
    fn every_node_has_a_type() {
        assert_eq!(
            errs(with_spec(json!({"properties": {"a": {"type": "string"}}}))),
            [pair(".properties[spec].type", "Required value: must not be empty for specified object fields")]
        );
        assert_eq!(
            errs(with_spec(json!({"type": "array", "items": {}}))),
            [pair(
                ".properties[spec].items.type",
                "Required value: must not be empty for specified array items"
            )]
        );
        assert_eq!(errs(json!({})), [pair(".type", "Required value: must not be empty at the root")]);
    }

    #[test]
    fn arrays_need_items_and_the_root_is_an_object() {
        assert_eq!(
            errs(with_spec(json!({"type": "array"}))),
            [pair(".properties[spec].items", "Required value: must be specified")]
        );
        assert_eq!(
            errs(json!({"type": "string"})),
            [pair(".type", r#"Invalid value: "string": must be object at the root"#)]
        );
        assert_eq!(
            errs(json!({"type": "object", "additionalProperties": {"type": "string"}})),
            [pair(".additionalProperties", "Forbidden: must not be used at the root")]
        );
    }

    #[test]
    fn junctors_hold_value_validations_only() {
        let schema = with_spec(json!({"type": "object", "properties": {"a": {"type": "string"}},
            "anyOf": [{"type": "object", "description": "d", "properties": {"a": {"maxLength": 3}}}]}));
        assert_eq!(
            errs(schema),
            [
                pair(".properties[spec].anyOf[0].description", "Forbidden: must be empty to be structural"),
                pair(".properties[spec].anyOf[0].type", "Forbidden: must be empty to be structural"),
            ]
        );
        let int_or_string = with_spec(
            json!({"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]}),
        );
        assert!(errs(int_or_string).is_empty(), "the int-or-string pattern is allowed");
    }

    #[test]
    fn junctors_name_only_specified_fields() {
        // `complete.go`: validateStructuralCompleteness.
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object"}},
            "allOf": [{"properties": {"status": {"maxProperties": 1}}}]});
        assert_eq!(
            errs(schema),
            [pair(
                ".properties[status]",
                &format!("Required value: because it is defined in {AT}.allOf[0].properties[status]")
            )]
        );
    }

    #[test]
    fn extensions() {
        assert_eq!(
            errs(with_spec(
                json!({"x-kubernetes-int-or-string": true, "x-kubernetes-preserve-unknown-fields": true})
            )),
            [pair(
                ".properties[spec].x-kubernetes-preserve-unknown-fields",
                "Invalid value: true: must be false if x-kubernetes-int-or-string is true"
            )]
        );
        assert_eq!(
            errs(with_spec(json!({"type": "string", "x-kubernetes-embedded-resource": true}))),
            [
                pair(
                    ".properties[spec].properties",
                    "Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"
                ),
                pair(
                    ".properties[spec].type",
                    r#"Invalid value: "string": must be object if x-kubernetes-embedded-resource is true"#
                ),
            ]
        );
    }

    #[test]
    fn root_metadata_restricts_names_only() {
        let ok = json!({"type": "object", "properties": {"metadata": {"type": "object",
            "properties": {"name": {"type": "string", "maxLength": 10}}}}});
        assert!(errs(ok).is_empty());
        let bad = json!({"type": "object", "properties": {"metadata": {"type": "object",
            "properties": {"labels": {"type": "object"}}}}});
        assert_eq!(
            errs(bad),
            [pair(
                ".properties[metadata]",
                "Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"
            )]
        );
    }

    #[test]
    fn patterns_must_compile() {
        let got = errs(with_spec(json!({"type": "string", "pattern": "("})));
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, at(".properties[spec].pattern"));
        assert!(got[0].1.starts_with(
            r#"Invalid value: "(": must be a valid regular expression, but isn't: error parsing regexp: "#
        ));
    }
}

/// `pkg/apiserver/schema/defaulting/validation.go`: `ValidateDefaults`.
mod defaults {
    use super::*;

    #[test]
    fn a_default_must_validate() {
        assert_eq!(
            errs(with_spec(
                json!({"type": "object", "properties": {"size": {"type": "integer", "maximum": 10, "default": 20}}})
            )),
            [pair(
                ".properties[spec].properties[size].default",
                "Invalid value: 20:  in body should be less than or equal to 10"
            )]
        );
        assert_eq!(
            errs(with_spec(
                json!({"type": "object", "default": {"size": "x"}, "properties": {"size": {"type": "integer"}}})
            )),
            [pair(
                ".properties[spec].default.size",
                r#"Invalid value: "string": size in body must be of type integer: "string""#
            )]
        );
    }

    #[test]
    fn a_default_must_be_pruned() {
        assert_eq!(
            errs(with_spec(
                json!({"type": "object", "default": {"a": 1, "b": 2}, "properties": {"a": {"type": "integer"}}})
            )),
            [pair(
                ".properties[spec].default",
                r#"Invalid value: map[string]interface {}{"a":1, "b":2}: must not have unknown fields"#
            )]
        );
    }

    #[test]
    fn no_defaults_in_top_level_metadata() {
        // `apis/apiextensions/validation/validation.go`: withForbiddenDefaults("in top-level metadata").
        let schema = json!({"type": "object", "properties": {"metadata": {"type": "object", "default": {"name": "x"}}}});
        assert!(errs(schema).contains(&pair(
            ".properties[metadata].default",
            "Forbidden: must not be set in top-level metadata"
        )));
    }
}

/// `apis/apiextensions/validation/validation.go`: `ValidateCustomResourceDefinitionOpenAPISchema`,
/// `specStandardValidatorV3.validate`, `validateMapListKeysMapSet`.
mod openapi {
    use super::*;

    #[test]
    fn unsupported_keywords() {
        assert_eq!(
            errs(with_spec(json!({"type": "array", "uniqueItems": true, "items": {"type": "string"}}))),
            [pair(
                ".properties[spec].uniqueItems",
                "Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"
            )]
        );
        assert_eq!(
            errs(with_spec(json!({"type": "object", "$ref": "#/definitions/x"}))),
            [pair(".properties[spec].$ref", "Forbidden: $ref is not supported")]
        );
        assert_eq!(
            errs(with_spec(json!({"type": "strin"}))),
            [pair(
                ".properties[spec].type",
                r#"Unsupported value: "strin": supported values: "array", "boolean", "integer", "number", "object", "string""#
            )]
        );
        assert_eq!(
            errs(json!({"type": "object", "nullable": true})),
            [pair(".nullable", "Forbidden: nullable cannot be true at the root")]
        );
    }

    #[test]
    fn properties_and_additional_properties_are_exclusive() {
        assert_eq!(
            errs(with_spec(
                json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}})
            )),
            [pair(
                ".properties[spec].additionalProperties",
                "Forbidden: additionalProperties and properties are mutual exclusive"
            )]
        );
    }

    #[test]
    fn list_types() {
        assert_eq!(
            errs(with_spec(json!({"type": "object", "x-kubernetes-list-type": "set"}))),
            [pair(
                ".properties[spec].type",
                r#"Invalid value: "object": must be array if x-kubernetes-list-type is specified"#
            )]
        );
        assert_eq!(
            errs(with_spec(
                json!({"type": "array", "x-kubernetes-list-type": "bag", "items": {"type": "string"}})
            )),
            [pair(
                ".properties[spec].x-kubernetes-list-type",
                r#"Unsupported value: "bag": supported values: "atomic", "set", "map""#
            )]
        );
        assert_eq!(
            errs(with_spec(
                json!({"type": "array", "x-kubernetes-list-map-keys": ["a"], "items": {"type": "object", "required": ["a"], "properties": {"a": {"type": "string"}}}})
            )),
            [pair(
                ".properties[spec].x-kubernetes-list-type",
                "Required value: must be map if x-kubernetes-list-map-keys is non-empty"
            )]
        );
        assert_eq!(
            errs(with_spec(
                json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a", "b"],
                "items": {"type": "object", "properties": {"a": {"type": "string"}}}})
            )),
            [
                pair(
                    ".properties[spec].x-kubernetes-list-map-keys",
                    r#"Invalid value: []string{"a", "b"}: entries must all be names of item properties"#
                ),
                pair(
                    ".properties[spec].items.properties[a].default",
                    "Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"
                ),
            ]
        );
    }
}

/// The round a custom resource's create goes through: prune, default, validate
/// (`crdhandler.go`'s decoder, then `customresource/strategy.go`).
#[test]
fn prune_default_validate() {
    let schema = with_spec(json!({"type": "object", "required": ["size"], "properties": {
        "size": {"type": "integer", "maximum": 10},
        "mode": {"type": "string", "enum": ["fast", "slow"], "default": "fast"}}}));
    let s = Structural::parse(&schema);
    let mut obj = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
                         "spec": {"size": 11, "colour": "red"}});
    assert_eq!(s.prune(&mut obj), ["spec.colour"]);
    s.default(&mut obj);
    assert_eq!(obj["spec"], json!({"size": 11, "mode": "fast"}));
    assert_eq!(
        s.validate(&obj),
        [(
            "spec.size".to_owned(),
            "Invalid value: 11: spec.size in body should be less than or equal to 10".to_owned()
        )]
    );
}

/// No input makes any of it panic.
#[test]
fn malformed_schemas_and_objects_do_not_panic() {
    let schemas = [
        json!(null),
        json!("x"),
        json!({"type": 5, "properties": [], "items": "x", "maxLength": "3", "pattern": 7, "enum": {}}),
        json!({"type": "object", "properties": {"a": {"type": "array", "items": [{"type": "string"}]}}}),
        json!({"type": "integer", "multipleOf": 0.5, "minimum": "x"}),
        json!({"type": "integer", "multipleOf": -2}),
    ];
    let objects = [json!(null), json!(1), json!({"a": [1, {"b": null}]}), json!([{"a": 1}]), json!({"a": 7})];
    for schema in &schemas {
        let _ = structural_errors(schema, AT);
        let s = Structural::parse(schema);
        for obj in &objects {
            let mut o = obj.clone();
            let _ = s.prune(&mut o);
            s.default(&mut o);
            let _ = s.validate(&o);
        }
    }
}
