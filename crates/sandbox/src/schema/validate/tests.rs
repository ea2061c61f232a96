//! Validation, keyword by keyword, with the messages a v1.32 API server gives. Each group cites
//! the upstream source whose wording it pins.

use serde_json::{Value, json};

use super::super::Structural;

/// The errors for `obj` under a root schema whose `spec` is `spec`.
fn errs(spec: Value, obj: Value) -> Vec<(String, String)> {
    let schema = json!({"type": "object", "properties": {"spec": spec}});
    Structural::parse(&schema).validate(&obj)
}

fn one(field: &str, message: &str) -> Vec<(String, String)> {
    vec![(field.to_owned(), message.to_owned())]
}

/// kube-openapi `validate/type.go` (`typeValidator`) and `errors/schema.go` (`typeFailWithData`),
/// turned into `field.TypeInvalid` by `kubeOpenAPIResultToFieldErrors`.
mod types {
    use super::*;

    #[test]
    fn a_value_of_another_type() {
        let s = json!({"type": "object", "properties": {"size": {"type": "integer"}}});
        assert_eq!(
            errs(s, json!({"spec": {"size": "string"}})),
            one(
                "spec.size",
                r#"Invalid value: "string": spec.size in body must be of type integer: "string""#
            )
        );
        assert_eq!(
            errs(json!({"type": "object"}), json!({"spec": "x"})),
            one("spec", r#"Invalid value: "string": spec in body must be of type object: "string""#)
        );
        let s = json!({"type": "object", "properties": {"on": {"type": "boolean"}}});
        assert_eq!(
            errs(s, json!({"spec": {"on": 1.5}})),
            one("spec.on", r#"Invalid value: "number": spec.on in body must be of type boolean: "number""#)
        );
    }

    #[test]
    fn integral_floats_are_integers_and_integers_are_numbers() {
        let s = json!({"type": "object", "properties": {"i": {"type": "integer"}, "n": {"type": "number"}}});
        assert!(errs(s.clone(), json!({"spec": {"i": 2.0, "n": 3}})).is_empty());
        assert_eq!(
            errs(s, json!({"spec": {"i": 2.5}})),
            one("spec.i", r#"Invalid value: "number": spec.i in body must be of type integer: "number""#)
        );
    }

    #[test]
    fn null_only_when_nullable() {
        let s = json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string", "nullable": true}}});
        assert_eq!(
            errs(s, json!({"spec": {"a": null, "b": null}})),
            one("spec.a", r#"Invalid value: "null": spec.a in body must be of type string: "null""#)
        );
    }

    #[test]
    fn int_or_string() {
        let s = json!({"type": "object", "properties": {"port": {"x-kubernetes-int-or-string": true}}});
        assert!(errs(s.clone(), json!({"spec": {"port": 80}})).is_empty());
        assert!(errs(s.clone(), json!({"spec": {"port": "http"}})).is_empty());
        assert_eq!(
            errs(s, json!({"spec": {"port": true}})),
            one(
                "spec.port",
                r#"Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean""#
            )
        );
    }

    #[test]
    fn a_format_on_a_number_names_the_format() {
        let s = json!({"type": "object", "properties": {"n": {"type": "integer", "format": "int32"}}});
        assert_eq!(
            errs(s.clone(), json!({"spec": {"n": 1.5}})),
            one("spec.n", r#"Invalid value: "float64": spec.n in body must be of type int32: "float64""#)
        );
        // kube-openapi checks no int32 range.
        assert!(errs(s, json!({"spec": {"n": 1_099_511_627_776_i64}})).is_empty());
    }
}

/// kube-openapi `validate/object_validator.go`; `Required` becomes `field.Required`, `TooMany
/// properties` `field.TooMany` (apimachinery `field/errors.go`, v1.32 wording).
mod objects {
    use super::*;

    #[test]
    fn required() {
        let s = json!({"type": "object", "required": ["size", "name"], "properties": {"size": {"type": "integer"}, "name": {"type": "string"}}});
        assert_eq!(
            errs(s, json!({"spec": {}})),
            vec![
                ("spec.size".to_owned(), "Required value".to_owned()),
                ("spec.name".to_owned(), "Required value".to_owned())
            ]
        );
        let root =
            json!({"type": "object", "required": ["spec"], "properties": {"spec": {"type": "object"}}});
        assert_eq!(Structural::parse(&root).validate(&json!({})), one("spec", "Required value"));
    }

    #[test]
    fn min_and_max_properties_stop_there() {
        let s = json!({"type": "object", "minProperties": 2, "properties": {"a": {"type": "string"}}});
        assert_eq!(
            errs(s, json!({"spec": {"a": 1}})),
            one("spec", "Invalid value: 1: spec in body should have at least 2 properties")
        );
        let s = json!({"type": "object", "maxProperties": 1, "additionalProperties": {"type": "string"}});
        assert_eq!(
            errs(s, json!({"spec": {"a": "x", "b": "y"}})),
            one("spec", "Too many: 2: must have at most 1 item")
        );
    }

    #[test]
    fn map_values_are_named_with_dots() {
        let s = json!({"type": "object", "properties": {"labels": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 3}}}});
        assert_eq!(
            errs(s, json!({"spec": {"labels": {"ok": "abc", "key": "abcd"}}})),
            one("spec.labels.key", "Too long: may not be more than 3 bytes")
        );
    }

    #[test]
    fn additional_properties_false() {
        let s = json!({"type": "object", "additionalProperties": false});
        assert_eq!(
            errs(s, json!({"spec": {"x": 1}})),
            one("spec", r#"Invalid value: "x": spec.x in body is a forbidden property"#)
        );
    }
}

/// kube-openapi `validate/validator.go` (`stringValidator`) and `values.go`; `TooLong` becomes
/// `field.TooLong` (apimachinery v1.32: `may not be more than N bytes`), lengths counted in
/// characters as `utf8.RuneCount` does.
mod strings {
    use super::*;

    #[test]
    fn max_length_then_min_length_then_pattern() {
        let s = json!({"type": "object", "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 5, "pattern": "^[a-z]+$"}}});
        assert_eq!(
            errs(s.clone(), json!({"spec": {"name": ""}})),
            one("spec.name", r#"Invalid value: "": spec.name in body should be at least 1 chars long"#)
        );
        assert_eq!(
            errs(s.clone(), json!({"spec": {"name": "toolong1"}})),
            one("spec.name", "Too long: may not be more than 5 bytes")
        );
        assert_eq!(
            errs(s.clone(), json!({"spec": {"name": "X"}})),
            one("spec.name", r#"Invalid value: "X": spec.name in body should match '^[a-z]+$'"#)
        );
        let five = json!({"type": "object", "properties": {"name": {"type": "string", "maxLength": 5}}});
        assert!(errs(five, json!({"spec": {"name": "héllo"}})).is_empty(), "five characters, six bytes");
    }

    #[test]
    fn formats() {
        let s = json!({"type": "object", "properties": {"id": {"type": "string", "format": "uuid"}, "at": {"type": "string", "format": "date-time"}}});
        assert_eq!(
            errs(s, json!({"spec": {"id": "nope", "at": "yesterday"}})),
            vec![
                (
                    "spec.at".to_owned(),
                    r#"Invalid value: "yesterday": spec.at in body must be of type date-time: "yesterday""#
                        .to_owned()
                ),
                (
                    "spec.id".to_owned(),
                    r#"Invalid value: "nope": spec.id in body must be of type uuid: "nope""#.to_owned()
                ),
            ]
        );
        let s = json!({"type": "object", "properties": {"b": {"type": "string", "format": "byte"}}});
        assert_eq!(
            errs(s, json!({"spec": {"b": "not base64"}})),
            one(
                "spec.b",
                r#"Invalid value: "not base64": spec.b in body must be of type byte: "not base64""#
            )
        );
    }

    #[test]
    fn unknown_formats_are_ignored() {
        let s =
            json!({"type": "object", "properties": {"x": {"type": "string", "format": "k8s-short-name"}}});
        assert!(errs(s, json!({"spec": {"x": "Not A Name"}})).is_empty());
    }
}

/// kube-openapi `validate/validator.go` (`numberValidator`), `values.go` (`MaximumNativeType` and
/// friends) and `errors/schema.go` (`maxIncFail`, `minExcFail`, `multipleOfFail`).
mod numbers {
    use super::*;

    #[test]
    fn minimum_and_maximum() {
        let s = json!({"type": "object", "properties": {"size": {"type": "integer", "minimum": 1, "maximum": 10}}});
        assert_eq!(
            errs(s.clone(), json!({"spec": {"size": 11}})),
            one("spec.size", "Invalid value: 11: spec.size in body should be less than or equal to 10")
        );
        assert_eq!(
            errs(s, json!({"spec": {"size": 0}})),
            one("spec.size", "Invalid value: 0: spec.size in body should be greater than or equal to 1")
        );
        let s = json!({"type": "object", "properties": {"r": {"type": "number", "maximum": 1.5, "exclusiveMaximum": true, "minimum": 0, "exclusiveMinimum": true}}});
        assert_eq!(
            errs(s.clone(), json!({"spec": {"r": 1.5}})),
            one("spec.r", "Invalid value: 1.5: spec.r in body should be less than 1.5")
        );
        assert_eq!(
            errs(s, json!({"spec": {"r": 0}})),
            one("spec.r", "Invalid value: 0: spec.r in body should be greater than 0")
        );
    }

    #[test]
    fn multiple_of() {
        let s = json!({"type": "object", "properties": {"n": {"type": "integer", "multipleOf": 3}, "f": {"type": "number", "multipleOf": 0.5}}});
        assert_eq!(
            errs(s, json!({"spec": {"n": 7, "f": 0.7}})),
            vec![
                (
                    "spec.f".to_owned(),
                    "Invalid value: 0.7: spec.f in body should be a multiple of 0.5".to_owned()
                ),
                (
                    "spec.n".to_owned(),
                    "Invalid value: 7: spec.n in body should be a multiple of 3".to_owned()
                ),
            ]
        );
    }
}

/// kube-openapi `validate/slice_validator.go`; `TooManyItems` becomes `field.TooMany`.
mod arrays {
    use super::*;

    #[test]
    fn items_then_counts() {
        let s = json!({"type": "object", "properties": {"items": {"type": "array", "minItems": 2, "maxItems": 3,
            "items": {"type": "object", "properties": {"name": {"type": "string"}}}}}});
        assert_eq!(
            errs(s.clone(), json!({"spec": {"items": [{"name": 1}]}})),
            vec![
                ("spec.items[0].name".to_owned(), r#"Invalid value: "integer": spec.items[0].name in body must be of type string: "integer""#.to_owned()),
                ("spec.items".to_owned(), "Invalid value: 1: spec.items in body should have at least 2 items".to_owned()),
            ]
        );
        assert_eq!(
            errs(s, json!({"spec": {"items": [{}, {}, {}, {}]}})),
            one("spec.items", "Too many: 4: must have at most 3 items")
        );
    }

    #[test]
    fn unique_items() {
        let s = json!({"type": "object", "properties": {"l": {"type": "array", "uniqueItems": true, "items": {"type": "string"}}}});
        assert_eq!(
            errs(s, json!({"spec": {"l": ["a", "a"]}})),
            one("spec.l", r#"Invalid value: "": spec.l in body shouldn't contain duplicates"#)
        );
    }
}

/// kube-openapi `validate/validator.go` (`basicCommonValidator`); `EnumFail` becomes
/// `field.NotSupported`, non-string values JSON-encoded then quoted.
mod enums {
    use super::*;

    #[test]
    fn strings_and_numbers() {
        let s = json!({"type": "object", "properties": {"color": {"type": "string", "enum": ["red", "blue"]}, "n": {"type": "integer", "enum": [1, 2]}}});
        assert_eq!(
            errs(s.clone(), json!({"spec": {"color": "pink", "n": 3}})),
            vec![
                (
                    "spec.color".to_owned(),
                    r#"Unsupported value: "pink": supported values: "red", "blue""#.to_owned()
                ),
                ("spec.n".to_owned(), r#"Unsupported value: 3: supported values: "1", "2""#.to_owned()),
            ]
        );
        assert!(
            errs(s, json!({"spec": {"color": "red", "n": 2.0}})).is_empty(),
            "2.0 converts to the enum's 2"
        );
    }

    #[test]
    fn null_never_matches() {
        let s = json!({"type": "object", "properties": {"c": {"type": "string", "nullable": true, "enum": ["a", null]}}});
        assert_eq!(
            errs(s, json!({"spec": {"c": null}})),
            one("spec.c", r#"Unsupported value: "null": supported values: "a", "null""#)
        );
    }
}

/// kube-openapi `validate/schema_props.go` and `schema_messages.go`: the junctors' own messages
/// are not `*errors.Validation`, so `kubeOpenAPIResultToFieldErrors` files them under the nil
/// path, printed `<nil>`.
mod junctors {
    use super::*;

    #[test]
    fn any_of_reports_the_closest_branch() {
        let s = json!({"type": "object", "properties": {"v": {"type": "integer", "anyOf": [{"minimum": 10}, {"maximum": 2}]}}});
        assert!(errs(s.clone(), json!({"spec": {"v": 1}})).is_empty());
        assert_eq!(
            errs(s, json!({"spec": {"v": 5}})),
            vec![
                (
                    "<nil>".to_owned(),
                    r#"Invalid value: "": "spec.v" must validate at least one schema (anyOf)"#.to_owned()
                ),
                (
                    "spec.v".to_owned(),
                    "Invalid value: 5: spec.v in body should be greater than or equal to 10".to_owned()
                ),
            ]
        );
    }

    #[test]
    fn one_of_all_of_not() {
        let s = json!({"type": "object", "properties": {"v": {"type": "string", "oneOf": [{"minLength": 1}, {"maxLength": 3}]}}});
        assert_eq!(
            errs(s, json!({"spec": {"v": "ab"}})),
            one(
                "<nil>",
                r#"Invalid value: "": "spec.v" must validate one and only one schema (oneOf). Found 2 valid alternatives"#
            )
        );
        let s =
            json!({"type": "object", "properties": {"v": {"type": "string", "allOf": [{"maxLength": 1}]}}});
        assert_eq!(
            errs(s, json!({"spec": {"v": "ab"}})),
            vec![
                ("spec.v".to_owned(), "Too long: may not be more than 1 byte".to_owned()),
                (
                    "<nil>".to_owned(),
                    r#"Invalid value: "": "spec.v" must validate all the schemas (allOf). None validated"#
                        .to_owned()
                ),
            ]
        );
        let s = json!({"type": "object", "properties": {"v": {"type": "string", "not": {"enum": ["no"]}}}});
        assert_eq!(
            errs(s, json!({"spec": {"v": "no"}})),
            one("<nil>", r#"Invalid value: "": "spec.v" must not validate the schema (not)"#)
        );
    }
}

/// `pkg/apiserver/schema/listtype/validation.go`; `field.Duplicate` (bad values printed with
/// `%#v`, paths with brackets).
mod list_types {
    use super::*;

    #[test]
    fn sets_refuse_duplicates() {
        let s = json!({"type": "object", "properties": {"tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}}});
        assert_eq!(
            errs(s, json!({"spec": {"tags": ["a", "b", "a", "a"]}})),
            one("spec.tags[2]", r#"Duplicate value: "a""#)
        );
    }

    #[test]
    fn maps_refuse_duplicate_keys() {
        let item = json!({"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}});
        let s = json!({"type": "object", "properties": {"ports": {"type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"], "items": item}}});
        assert_eq!(
            errs(s, json!({"spec": {"ports": [{"name": "a", "port": 1}, {"name": "a", "port": 2}]}})),
            one("spec.ports[1]", r#"Duplicate value: map[string]interface {}{"name":"a"}"#)
        );
        let item =
            json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}});
        let s = json!({"type": "object", "properties": {"l": {"type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["a", "b"], "items": item}}});
        assert_eq!(
            errs(
                s.clone(),
                json!({"spec": {"l": [{"a": "x", "b": 1}, {"a": "x", "b": 2}, {"a": "x", "b": 1}]}})
            ),
            one("spec.l[2]", r#"Duplicate value: map[string]interface {}{"a":"x", "b":1}"#)
        );
        assert_eq!(
            errs(s, json!({"spec": {"l": [{"a": "x"}, "s"]}})),
            vec![
                (
                    "spec.l[1]".to_owned(),
                    r#"Invalid value: "string": spec.l[1] in body must be of type object: "string""#
                        .to_owned()
                ),
                (
                    "spec.l[1]".to_owned(),
                    r#"Invalid value: "s": must be an object for an array of list-type map"#.to_owned()
                ),
            ]
        );
    }
}

/// `pkg/apiserver/schema/objectmeta/validation.go` and apimachinery's `ValidateObjectMeta`.
mod embedded_resources {
    use super::*;

    fn template() -> Value {
        json!({"type": "object", "properties": {"template": {"type": "object", "x-kubernetes-embedded-resource": true,
            "x-kubernetes-preserve-unknown-fields": true}}})
    }

    #[test]
    fn api_version_and_kind_required() {
        assert_eq!(
            errs(template(), json!({"spec": {"template": {"metadata": {"name": "x"}}}})),
            vec![
                ("spec.template.apiVersion".to_owned(), "Required value".to_owned()),
                ("spec.template.kind".to_owned(), "Required value".to_owned()),
            ]
        );
        assert_eq!(
            errs(template(), json!({"spec": {"template": {"apiVersion": "a/b/c", "kind": "Pod_"}}})),
            vec![
                ("spec.template.apiVersion".to_owned(), r#"Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c"#.to_owned()),
                ("spec.template.kind".to_owned(), r#"Invalid value: "Pod_": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"#.to_owned()),
            ]
        );
    }

    #[test]
    fn metadata_names_and_labels() {
        let got = errs(
            template(),
            json!({"spec": {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a/b", "labels": {"k": "-bad"}}}}}),
        );
        assert_eq!(
            got[0],
            (
                "spec.template.metadata.name".to_owned(),
                r#"Invalid value: "a/b": may not contain '/'"#.to_owned()
            )
        );
        // `ValidateLabels` names the labels as a whole, whichever value is wrong.
        assert_eq!(got[1].0, "spec.template.metadata.labels");
        assert_eq!(got.len(), 2);
        assert_eq!(
            errs(
                template(),
                json!({"spec": {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": 5}}}})
            ),
            one(
                "spec.template.metadata",
                r#"Invalid value: map[string]interface {}{"name":5}: json: cannot unmarshal number into Go struct field ObjectMeta.name of type string"#
            )
        );
    }
}

/// The root `metadata`: only what the schema says of `name` and `generateName`.
#[test]
fn root_metadata_name_restrictions() {
    let schema = json!({"type": "object", "properties": {"metadata": {"type": "object",
        "properties": {"name": {"type": "string", "maxLength": 5}}}}});
    assert_eq!(
        Structural::parse(&schema).validate(&json!({"metadata": {"name": "toolong"}})),
        one("metadata.name", "Too long: may not be more than 5 bytes")
    );
    assert!(
        Structural::parse(&json!({"type": "object"}))
            .validate(&json!({"metadata": {"name": "Anything_"}}))
            .is_empty()
    );
}
