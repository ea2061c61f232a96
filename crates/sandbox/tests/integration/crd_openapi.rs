//! A CRD's published OpenAPI, as upstream's conformance tests `CustomResourcePublishOpenAPI`
//! check it with kubectl: each served version's definition appears in `/openapi/v2` with the
//! CRD's schema (or a bare object where unknown fields are kept), kubectl creates and applies
//! custom resources the schema allows and explains them from it, and a version renamed or no
//! longer served leaves the document. The test's schemas and expectations are upstream's.

use regex::Regex;
use serde_json::{Value, json};

use super::kubectl::{Kubectl, eventually};

/// Upstream's `schemaFoo`.
fn schema_foo() -> Value {
    json!({
        "description": "Foo CRD for Testing",
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "description": "Specification of Foo",
                "properties": {
                    "bars": {
                        "description": "List of Bars and their specs.",
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["name"],
                            "properties": {
                                "name": { "description": "Name of Bar.", "type": "string" },
                                "age": { "description": "Age of Bar.", "type": "string" },
                                "feeling": {
                                    "description": "Whether Bar is feeling great.",
                                    "type": "string",
                                    "enum": ["Great", "Down"],
                                },
                                "bazs": {
                                    "description": "List of Bazs.",
                                    "items": { "type": "string" },
                                    "type": "array",
                                },
                            },
                        },
                    },
                },
            },
            "status": {
                "description": "Status of Foo",
                "type": "object",
                "properties": {
                    "bars": {
                        "description": "List of Bars and their statuses.",
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "name": { "description": "Name of Bar.", "type": "string" },
                                "available": { "description": "Whether the Bar is installed.", "type": "boolean" },
                                "quxType": {
                                    "description": "Indicates to external qux type.",
                                    "pattern": "in-tree|out-of-tree",
                                    "type": "string",
                                },
                            },
                        },
                    },
                },
            },
        },
    })
}

/// Upstream's `schemaWaldo`, and its two variants keeping unknown fields (`at` is `root` or
/// `spec`, with the description upstream gives each).
fn schema_waldo(preserve_at: Option<&str>) -> Value {
    let mut schema = json!({
        "description": "Waldo CRD for Testing",
        "type": "object",
        "properties": {
            "spec": {
                "description": "Specification of Waldo",
                "type": "object",
                "properties": { "dummy": { "description": "Dummy property.", "type": "object" } },
            },
            "status": {
                "description": "Status of Waldo",
                "type": "object",
                "properties": {
                    "bars": {
                        "description": "List of Bars and their statuses.",
                        "type": "array",
                        "items": { "type": "object" },
                    },
                },
            },
        },
    });
    match preserve_at {
        Some("root") => {
            schema["description"] = json!("preserve-unknown-properties at root for Testing");
            schema["x-kubernetes-preserve-unknown-fields"] = json!(true);
        }
        Some(_) => {
            schema["description"] = json!("preserve-unknown-properties in nested field for Testing");
            schema["properties"]["spec"]["x-kubernetes-preserve-unknown-fields"] = json!(true);
        }
        None => {}
    }
    schema
}

/// A test CRD as upstream's `CreateMultiVersionTestCRD` names it, each version served with
/// `schema` (none: a root keeping unknown fields, as upstream's test sets for "no schema"), the
/// first stored.
struct TestCrd {
    group: String,
    plural: String,
    kind: String,
    versions: Vec<String>,
}

impl TestCrd {
    fn create(k: &Kubectl, suffix: &str, n: usize, schema: Option<&Value>, versions: &[&str]) -> Self {
        let group = format!("crd-publish-openapi-test-{suffix}.example.com");
        let plural = format!("e2e-test-crd-publish-openapi-{n}-crds");
        let kind = format!("E2e-test-crd-publish-openapi-{n}-crd");
        let schema = schema
            .cloned()
            .unwrap_or_else(|| json!({ "type": "object", "x-kubernetes-preserve-unknown-fields": true }));
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": { "name": format!("{plural}.{group}") },
            "spec": {
                "group": group,
                "scope": "Namespaced",
                "names": {
                    "plural": plural,
                    "singular": format!("e2e-test-crd-publish-openapi-{n}-crd"),
                    "kind": kind,
                    "listKind": format!("{kind}List"),
                },
                "versions": versions.iter().enumerate().map(|(i, v)| json!({
                    "name": v, "served": true, "storage": i == 0,
                    "schema": { "openAPIV3Schema": schema },
                })).collect::<Vec<_>>(),
            },
        });
        let file = k.path(&format!("crd-{n}.json"));
        std::fs::write(&file, crd.to_string()).unwrap();
        k.ok(&["create", "-f", file.to_str().unwrap()]);
        let name = format!("crd/{plural}.{group}");
        k.ok(&["wait", "--for", "condition=established", &name, "--timeout=60s"]);
        TestCrd { group, plural, kind, versions: versions.iter().map(|v| (*v).to_owned()).collect() }
    }

    /// The version's definition name: upstream's `ToRESTFriendlyName` of group/version/kind.
    fn definition(&self, version: &str) -> String {
        let group: Vec<&str> = self.group.split('.').rev().collect();
        format!("{}.{version}.{}", group.join("."), self.kind)
    }

    /// A custom resource of the first version named `name`, with `body`'s fields.
    fn resource(&self, name: &str, body: Value) -> Value {
        let mut cr = json!({
            "kind": self.kind,
            "apiVersion": format!("{}/{}", self.group, self.versions[0]),
            "metadata": { "name": name },
        });
        cr.as_object_mut().unwrap().extend(body.as_object().unwrap().clone());
        cr
    }

    /// Upstream's check that kubectl creates then applies `cr`, deleting it after each.
    fn create_and_apply(&self, k: &Kubectl, cr: &Value) {
        let file = k.path(&format!("{}.json", cr["metadata"]["name"].as_str().unwrap()));
        std::fs::write(&file, cr.to_string()).unwrap();
        let name = cr["metadata"]["name"].as_str().unwrap();
        for verb in ["create", "apply"] {
            k.ok(&[verb, "-f", file.to_str().unwrap()]);
            k.ok(&["delete", &self.plural, name]);
        }
    }

    /// Deletes the CRD and waits until no version's definition is published.
    fn clean_up(&self, k: &Kubectl) {
        k.ok(&["delete", "crd", &format!("{}.{}", self.plural, self.group)]);
        for v in &self.versions {
            wait_for_cleanup(k, &self.definition(v));
        }
    }
}

/// The definitions of `/openapi/v2`.
fn definitions(k: &Kubectl) -> Value {
    let doc: Value = serde_json::from_str(&k.ok(&["get", "--raw", "/openapi/v2"])).unwrap();
    doc["definitions"].clone()
}

/// Upstream's `waitForDefinition`: the definition is published and, with the properties and
/// extension the server adds taken out, is `expect`.
fn wait_for_definition(k: &Kubectl, name: &str, expect: &Value) {
    let mut last = Value::Null;
    eventually(&format!("definition {name} published as {expect}"), || {
        let Some(mut d) = definitions(k).get(name).cloned() else { return false };
        if let Some(props) = d.get_mut("properties").and_then(Value::as_object_mut) {
            for added in ["metadata", "apiVersion", "kind"] {
                props.remove(added);
            }
        }
        d.as_object_mut().unwrap().remove("x-kubernetes-group-version-kind");
        last = d;
        &last == expect
    });
}

/// Upstream's `waitForDefinitionCleanup`.
fn wait_for_cleanup(k: &Kubectl, name: &str) {
    eventually(&format!("definition {name} gone"), || definitions(k).get(name).is_none());
}

/// Upstream's `verifyKubectlExplain`, with both of kubectl's sources: the OpenAPI v3 document
/// (its default since 1.27, where a field is headed `FIELD:`) and the v2 one (what v1.24's
/// kubectl read, heading it `RESOURCE:`, as upstream's patterns expect).
fn explains(k: &Kubectl, what: &str, pattern: &str) {
    for output in ["plaintext", "plaintext-openapiv2"] {
        let out = k.ok(&["explain", what, "--output", output]);
        let pattern =
            if output == "plaintext" { pattern.replace("RESOURCE:", "FIELD:") } else { pattern.to_owned() };
        assert!(
            Regex::new(&pattern).unwrap().is_match(&out),
            "kubectl explain {what} --output {output} does not match {pattern}:\n{out}"
        );
    }
}

#[test]
fn a_crd_with_a_schema_is_validated_and_explained_by_kubectl() {
    let Some(k) = Kubectl::start("crd-openapi-schema") else { return };
    let foo = schema_foo();
    let crd = TestCrd::create(&k, "foo", 1, Some(&foo), &["v1"]);
    wait_for_definition(&k, &crd.definition("v1"), &foo);

    crd.create_and_apply(
        &k,
        &crd.resource("test-foo", json!({ "spec": { "bars": [{ "name": "test-bar" }] } })),
    );

    explains(
        &k,
        &crd.plural,
        r"(?s)DESCRIPTION:.*Foo CRD for Testing.*FIELDS:.*apiVersion.*<string>.*APIVersion defines.*spec.*<Object>.*Specification of Foo",
    );
    explains(
        &k,
        &format!("{}.metadata", crd.plural),
        r"(?s)DESCRIPTION:.*Standard object's metadata.*FIELDS:.*creationTimestamp.*<string>.*CreationTimestamp is a timestamp",
    );
    explains(
        &k,
        &format!("{}.spec", crd.plural),
        r"(?s)DESCRIPTION:.*Specification of Foo.*FIELDS:.*bars.*<\[\]Object>.*List of Bars and their specs",
    );
    explains(
        &k,
        &format!("{}.spec.bars", crd.plural),
        r"(?s)RESOURCE:.*bars.*<\[\]Object>.*DESCRIPTION:.*List of Bars and their specs.*FIELDS:.*bazs.*<\[\]string>.*List of Bazs.*name.*<string>.*Name of Bar",
    );
    let err = k.fails(&["explain", &format!("{}.spec.bars2", crd.plural)]);
    assert!(err.contains(r#"field "bars2" does not exist"#), "{err}");
    crd.clean_up(&k);
}

#[test]
fn crds_keeping_unknown_fields_take_any_field_and_are_explained() {
    let Some(k) = Kubectl::start("crd-openapi-unknown") else { return };
    let random = json!({ "a": { "b": [{ "c": "d" }] } });

    // Without a schema of its own: published as a bare object.
    let empty = TestCrd::create(&k, "empty", 2, None, &["v1"]);
    wait_for_definition(&k, &empty.definition("v1"), &json!({ "type": "object" }));
    empty.create_and_apply(&k, &empty.resource("test-cr", random.clone()));
    explains(&k, &empty.plural, r"(?s)DESCRIPTION:.*<empty>");
    empty.clean_up(&k);

    // Unknown fields kept at the root: v2 still publishes a bare object, which kubectl's
    // validation lets anything through.
    let root = TestCrd::create(&k, "unknown-at-root", 3, Some(&schema_waldo(Some("root"))), &["v1"]);
    wait_for_definition(&k, &root.definition("v1"), &json!({ "type": "object" }));
    root.create_and_apply(&k, &root.resource("test-cr", random));
    explains(&k, &root.plural, &format!("(?s)KIND:.*{}", root.kind));
    root.clean_up(&k);

    // Kept in `spec`: the spec is published untyped and without its properties.
    let nested = TestCrd::create(&k, "unknown-in-nested", 4, Some(&schema_waldo(Some("spec"))), &["v1"]);
    let mut published = schema_waldo(Some("spec"));
    published["properties"]["spec"] =
        json!({ "description": "Specification of Waldo", "x-kubernetes-preserve-unknown-fields": true });
    wait_for_definition(&k, &nested.definition("v1"), &published);
    nested.create_and_apply(
        &k,
        &nested.resource("test-cr", json!({ "spec": { "a": null, "b": [{ "c": "d" }] } })),
    );
    explains(
        &k,
        &nested.plural,
        r"(?s)DESCRIPTION:.*preserve-unknown-properties in nested field for Testing",
    );
    nested.clean_up(&k);
}

#[test]
fn crds_of_several_groups_versions_and_kinds_are_each_published() {
    let Some(k) = Kubectl::start("crd-openapi-many") else { return };
    let (foo, waldo) = (schema_foo(), schema_waldo(None));

    // Different groups.
    let a = TestCrd::create(&k, "foo", 5, Some(&foo), &["v1"]);
    let b = TestCrd::create(&k, "waldo", 6, Some(&waldo), &["v1beta1"]);
    assert_ne!(a.group, b.group);
    wait_for_definition(&k, &b.definition("v1beta1"), &waldo);
    wait_for_definition(&k, &a.definition("v1"), &foo);
    a.clean_up(&k);
    b.clean_up(&k);

    // One CRD, two versions.
    let multi = TestCrd::create(&k, "multi-ver", 7, Some(&foo), &["v2", "v3"]);
    wait_for_definition(&k, &multi.definition("v3"), &foo);
    wait_for_definition(&k, &multi.definition("v2"), &foo);
    multi.clean_up(&k);

    // Two CRDs of one group, in different versions, then in the same version.
    for (n, versions) in [(8, ["v4", "v5"]), (10, ["v6", "v6"])] {
        let a = TestCrd::create(&k, "common-group", n, Some(&foo), &[versions[0]]);
        let b = TestCrd::create(&k, "common-group", n + 1, Some(&waldo), &[versions[1]]);
        assert_eq!(a.group, b.group);
        wait_for_definition(&k, &b.definition(versions[1]), &waldo);
        wait_for_definition(&k, &a.definition(versions[0]), &foo);
        a.clean_up(&k);
        b.clean_up(&k);
    }
}

#[test]
fn a_version_renamed_or_no_longer_served_leaves_the_document() {
    let Some(k) = Kubectl::start("crd-openapi-versions") else { return };
    let foo = schema_foo();
    let mut multi = TestCrd::create(&k, "multi-ver", 12, Some(&foo), &["v2", "v3"]);
    wait_for_definition(&k, &multi.definition("v3"), &foo);
    wait_for_definition(&k, &multi.definition("v2"), &foo);
    // kubectl explains the second version from the OpenAPI v3 document it caches by hash.
    let explain_v3 =
        ["explain", &multi.plural, "--api-version", &format!("{}/v3", multi.group)].map(str::to_owned);
    let explained = k.ok(&explain_v3.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(explained.contains("Foo CRD for Testing"), "{explained}");

    let patch = r#"[{"op":"test","path":"/spec/versions/1/name","value":"v3"},{"op":"replace","path":"/spec/versions/1/name","value":"v4"}]"#;
    let name = format!("{}.{}", multi.plural, multi.group);
    k.ok(&["patch", "crd", &name, "--type", "json", "-p", patch]);
    wait_for_definition(&k, &multi.definition("v4"), &foo);
    wait_for_cleanup(&k, &multi.definition("v3"));
    wait_for_definition(&k, &multi.definition("v2"), &foo);
    // The cached document of the old version is not served again: v3 is gone, v4 explained.
    let (ok, _, err) = k.run(&explain_v3.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(!ok, "v3 is still explained after its rename");
    assert!(err.contains("v3"), "{err}");
    let explained = k.ok(&["explain", &multi.plural, "--api-version", &format!("{}/v4", multi.group)]);
    assert!(explained.contains("VERSION:    v4"), "{explained}");
    multi.versions[1] = "v4".into();
    multi.clean_up(&k);

    let crd = TestCrd::create(&k, "multi-to-single-ver", 13, Some(&foo), &["v5", "v6alpha1"]);
    wait_for_definition(&k, &crd.definition("v6alpha1"), &foo);
    wait_for_definition(&k, &crd.definition("v5"), &foo);
    let name = format!("{}.{}", crd.plural, crd.group);
    k.ok(&[
        "patch",
        "crd",
        &name,
        "--type",
        "json",
        "-p",
        r#"[{"op":"replace","path":"/spec/versions/1/served","value":false}]"#,
    ]);
    wait_for_cleanup(&k, &crd.definition("v6alpha1"));
    wait_for_definition(&k, &crd.definition("v5"), &foo);
    crd.clean_up(&k);
}
