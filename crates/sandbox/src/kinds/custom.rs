//! Custom resources: the one strategy every kind a CustomResourceDefinition defines is served
//! with, driven by its version's structural schema — as upstream's apiextensions-apiserver
//! (`pkg/registry/customresource/strategy.go`, `pkg/apiserver/customresource_handler.go`).
//!
//! * On every write: unknown fields are pruned (kept under `x-kubernetes-preserve-unknown-fields`;
//!   `fieldValidation` reports them), the schema's defaults are filled in, and the object is
//!   validated against the schema.
//! * On every read: the stored object is read through the requested version — its `apiVersion`
//!   rewritten (conversion `None`), pruned and defaulted by that version's schema, so a default
//!   added after an object was stored shows up when it is read.
//! * With a status subresource, the main endpoint keeps the stored status and `/status` changes
//!   only status; `metadata.generation` counts changes to anything but metadata and status.
//!
//! [`resources`] turns an established CRD into the [`ResourceDef`]s the registry serves.

use serde_json::Value;

use crate::registry::{intern, intern_list};
use crate::resource::{FieldError, ResourceDef, ScalePaths, Strategy};
use crate::schema::Structural;

/// The strategy of one served version of a CRD.
#[derive(Debug)]
pub struct CustomStrategy {
    /// The version's `openAPIV3Schema`, parsed.
    pub schema: Structural,
    /// The version's entry of the CRD's `spec.versions` (printer columns, schema as written).
    pub version: Value,
    /// The name of the CRD (`<plural>.<group>`).
    pub crd: &'static str,
}

impl CustomStrategy {
    /// A stored object as this version reads it: pruned and defaulted by its schema.
    #[must_use]
    pub fn read(&self, stored: &Value) -> Value {
        self.read_owned(stored.clone())
    }

    /// [`read`](Self::read) of an object the caller owns, in place.
    #[must_use]
    pub fn read_owned(&self, mut obj: Value) -> Value {
        self.schema.prune(&mut obj);
        self.schema.default(&mut obj);
        obj
    }

    /// Checks what the generic decoder checks of a custom resource: that it is an object whose
    /// `metadata` is an `ObjectMeta`.
    ///
    /// # Errors
    ///
    /// The decode error, naming the field.
    pub fn decode(&self, obj: &Value) -> Result<(), String> {
        match obj.get("metadata") {
            None => Ok(()),
            Some(meta) => {
                crate::resource::decode_as::<k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>(meta)
                    .map_err(|e| format!("metadata.{e}"))
            }
        }
    }

    /// The object as the schema keeps it.
    #[must_use]
    pub fn known(&self, obj: &Value) -> Value {
        let mut kept = obj.clone();
        self.schema.prune(&mut kept);
        kept
    }

    /// What the decoder does to every object written: drops the fields the schema does not
    /// declare (`fieldValidation` has already reported them for a request), then fills in the
    /// schema's defaults — upstream's order, so a default never hides behind an unknown field.
    pub fn default(&self, obj: &mut Value) {
        self.schema.prune(obj);
        self.schema.default(obj);
    }

    /// Validates `new` against the schema.
    #[must_use]
    pub fn validate(&self, new: &Value, _old: Option<&Value>) -> Vec<FieldError> {
        let mut errs = self.schema.validate(new);
        errs.extend(self.scale_errors(new));
        errs
    }

    /// The scale subresource's replicas must be a non-negative int32 where it is set
    /// (upstream's `validateScaleSpec` / `validateScaleStatus`).
    fn scale_errors(&self, obj: &Value) -> Vec<FieldError> {
        let Some(scale) = self.version.pointer("/subresources/scale") else { return Vec::new() };
        let mut errs = Vec::new();
        for key in ["specReplicasPath", "statusReplicasPath"] {
            let Some(path) = scale.get(key).and_then(Value::as_str) else { continue };
            let Some(v) = obj.pointer(&pointer_of(path)) else { continue };
            let field = path.trim_start_matches('.').to_owned();
            match v.as_i64() {
                Some(n) if (0..=i64::from(i32::MAX)).contains(&n) => {}
                Some(n) if n < 0 => {
                    errs.push((field, format!("Invalid value: {n}: should be a non-negative integer")))
                }
                Some(n) => errs.push((
                    field,
                    format!("Invalid value: {n}: should be less than or equal to {}", i32::MAX),
                )),
                None => errs.push((field, format!("Invalid value: {v}: should be an integer"))),
            }
        }
        errs
    }
}

/// A `.spec.replicas` path as a JSON pointer (`/spec/replicas`).
#[must_use]
pub fn pointer_of(path: &str) -> String {
    path.split('.').filter(|s| !s.is_empty()).fold(String::new(), |mut p, seg| {
        p.push('/');
        p.push_str(&seg.replace('~', "~0").replace('/', "~1"));
        p
    })
}

fn str_at<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

fn strings_at(v: &Value, ptr: &str) -> &'static [&'static str] {
    let items: Vec<&'static str> = v
        .pointer(ptr)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(intern).collect())
        .unwrap_or_default();
    intern_list(items)
}

/// The resources an established CRD serves: one per served version, under its accepted names.
/// None while its names are not accepted.
#[must_use]
pub fn resources(crd: &Value) -> Vec<ResourceDef> {
    let names = "/status/acceptedNames";
    let plural = str_at(crd, &format!("{names}/plural"));
    let kind = str_at(crd, &format!("{names}/kind"));
    if plural.is_empty() || kind.is_empty() {
        return Vec::new();
    }
    let group = intern(str_at(crd, "/spec/group"));
    let storage = intern(crate::object::meta_str(crd, "name"));
    let list_kind = match str_at(crd, &format!("{names}/listKind")) {
        "" => format!("{kind}List"),
        l => l.to_owned(),
    };
    let singular = match str_at(crd, &format!("{names}/singular")) {
        "" => kind.to_lowercase(),
        s => s.to_owned(),
    };
    let versions = crd.pointer("/spec/versions").and_then(Value::as_array).cloned().unwrap_or_default();
    versions
        .into_iter()
        .filter(|v| v.get("served").and_then(Value::as_bool) == Some(true))
        .map(|v| {
            let schema = Structural::parse(v.pointer("/schema/openAPIV3Schema").unwrap_or(&Value::Null));
            let scale = v.pointer("/subresources/scale").map(|s| ScalePaths {
                spec_replicas: intern(str_at(s, "/specReplicasPath")),
                status_replicas: intern(str_at(s, "/statusReplicasPath")),
                label_selector: s.get("labelSelectorPath").and_then(Value::as_str).map(intern),
            });
            let field_labels: Vec<(&'static str, &'static str)> = v
                .get("selectableFields")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|f| f.get("jsonPath").and_then(Value::as_str))
                .map(|p| (intern(p.trim_start_matches('.')), intern(&pointer_of(p))))
                .collect();
            ResourceDef {
                group,
                version: intern(str_at(&v, "/name")),
                plural: intern(plural),
                singular: intern(&singular),
                kind: intern(kind),
                list_kind: intern(&list_kind),
                short_names: strings_at(crd, &format!("{names}/shortNames")),
                categories: strings_at(crd, &format!("{names}/categories")),
                field_labels: intern_list(field_labels),
                namespaced: str_at(crd, "/spec/scope") != "Cluster",
                status_subresource: v.pointer("/subresources/status").is_some(),
                scale,
                has_generation: true,
                storage,
                strategy: Strategy::Custom(std::sync::Arc::new(CustomStrategy {
                    schema,
                    version: v,
                    crd: storage,
                })),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn paths_become_pointers() {
        assert_eq!(pointer_of(".spec.replicas"), "/spec/replicas");
        assert_eq!(pointer_of(".status.a/b"), "/status/a~1b");
    }

    #[test]
    fn an_established_crd_serves_its_served_versions_under_its_accepted_names() {
        let crd = json!({
            "metadata": { "name": "widgets.example.com" },
            "spec": { "group": "example.com", "scope": "Namespaced", "versions": [
                { "name": "v1", "served": true, "storage": true, "schema": { "openAPIV3Schema": { "type": "object" } },
                  "subresources": { "status": {}, "scale": { "specReplicasPath": ".spec.size", "statusReplicasPath": ".status.size" } } },
                { "name": "v1beta1", "served": false, "storage": false, "schema": { "openAPIV3Schema": { "type": "object" } } },
            ] },
            "status": { "acceptedNames": { "plural": "widgets", "kind": "Widget", "shortNames": ["wd"], "categories": ["all"] } },
        });
        let defs = resources(&crd);
        assert_eq!(defs.len(), 1);
        let d = &defs[0];
        assert_eq!(
            (d.group, d.version, d.plural, d.kind, d.list_kind, d.singular),
            ("example.com", "v1", "widgets", "Widget", "WidgetList", "widget")
        );
        assert_eq!(d.short_names, ["wd"]);
        assert!(d.namespaced && d.status_subresource && d.has_generation);
        assert_eq!(d.scale.unwrap().spec_replicas, ".spec.size");
        assert_eq!(d.storage, "widgets.example.com");
        let mut unaccepted = crd.clone();
        unaccepted["status"] = json!({});
        assert!(resources(&unaccepted).is_empty());
    }
}
