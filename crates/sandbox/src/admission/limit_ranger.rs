//! LimitRanger (`plugin/pkg/admission/limitranger`): a pod's containers without requests or
//! limits get the defaults of the namespace's LimitRanges, and the pod says so in its
//! `kubernetes.io/limit-ranger` annotation. (Its validation of the ranges' bounds is not run.)

use serde_json::{Value, json};

use super::{Operation, Plugin, Request, is_core, list, spec};
use crate::resource::ResourceDef;
use crate::status::ApiError;

/// The plugin.
pub(crate) struct LimitRanger;

impl Plugin for LimitRanger {
    fn name(&self) -> &'static str {
        "LimitRanger"
    }

    fn handles(&self, op: Operation, def: &ResourceDef) -> bool {
        op == Operation::Create && is_core(def, "pods")
    }

    fn mutates(&self) -> bool {
        true
    }

    fn admit(&self, req: &Request<'_>, pod: &mut Value) -> Result<(), ApiError> {
        let mut set = Vec::new();
        for range in list(req.objects, "", "limitranges", Some(req.ns)) {
            for limit in range.pointer("/spec/limits").and_then(Value::as_array).into_iter().flatten() {
                if limit["type"] != "Container" {
                    continue;
                }
                for list in ["initContainers", "containers"] {
                    for c in spec(pod).get_mut(list).and_then(Value::as_array_mut).into_iter().flatten() {
                        let cname = c["name"].as_str().unwrap_or("").to_owned();
                        for (from, into, word) in
                            [("defaultRequest", "requests", "request"), ("default", "limits", "limit")]
                        {
                            for (resource, value) in
                                limit.get(from).and_then(Value::as_object).into_iter().flatten()
                            {
                                let resources = crate::object_meta::object_at(c, "resources");
                                let target = resources.entry(into).or_insert_with(|| json!({}));
                                if let Some(t) = target.as_object_mut()
                                    && !t.contains_key(resource)
                                {
                                    t.insert(resource.clone(), value.clone());
                                    set.push(format!(
                                        "{resource} {word} for {} {cname}",
                                        if list == "containers" { "container" } else { "init container" }
                                    ));
                                }
                            }
                        }
                    }
                }
            }
        }
        if !set.is_empty() {
            let meta = crate::object_meta::meta_mut(pod);
            let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
            if let Some(a) = annotations.as_object_mut() {
                a.insert(
                    "kubernetes.io/limit-ranger".into(),
                    json!(format!("LimitRanger plugin set: {}", set.join("; "))),
                );
            }
        }
        Ok(())
    }
}
