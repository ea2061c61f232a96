//! Priority (`plugin/pkg/admission/priority`): a pod's `priority` and `preemptionPolicy` come
//! from its PriorityClass, or the global default class; a missing class, or a priority set by
//! hand that is not the class's, is a 403.

use serde_json::{Value, json};

use super::{Operation, Plugin, Request, is_core, list, spec};
use crate::object_meta::meta_str;
use crate::resource::ResourceDef;
use crate::status::ApiError;

/// The plugin.
pub(crate) struct Priority;

impl Plugin for Priority {
    fn name(&self) -> &'static str {
        "Priority"
    }

    fn handles(&self, op: Operation, def: &ResourceDef) -> bool {
        op == Operation::Create && is_core(def, "pods")
    }

    fn mutates(&self) -> bool {
        true
    }

    fn admit(&self, req: &Request<'_>, pod: &mut Value) -> Result<(), ApiError> {
        let name = meta_str(pod, "name").to_owned();
        let class_name =
            pod.pointer("/spec/priorityClassName").and_then(Value::as_str).unwrap_or("").to_owned();
        let classes = list(req.objects, "scheduling.k8s.io", "priorityclasses", None);
        let class = if class_name.is_empty() {
            classes.iter().filter(|c| c["globalDefault"] == true).min_by_key(|c| c["value"].as_i64()).cloned()
        } else {
            let found = classes.iter().find(|c| meta_str(c, "name") == class_name).cloned();
            if found.is_none() {
                return Err(ApiError::admission_forbidden(
                    "",
                    "pods",
                    &name,
                    &format!("no PriorityClass with name {class_name} was found"),
                ));
            }
            found
        };
        let value = class.as_ref().and_then(|c| c["value"].as_i64()).unwrap_or(0);
        if let Some(given) = pod.pointer("/spec/priority").and_then(Value::as_i64)
            && given != value
        {
            return Err(ApiError::admission_forbidden(
                "",
                "pods",
                &name,
                &format!(
                    "the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {value} from the given PriorityClass name"
                ),
            ));
        }
        let policy = class
            .as_ref()
            .and_then(|c| c.get("preemptionPolicy").cloned())
            .unwrap_or(json!("PreemptLowerPriority"));
        // A policy set by hand must be the class's (or the default's) too.
        if let Some(given) = pod.pointer("/spec/preemptionPolicy").and_then(Value::as_str)
            && Some(given) != policy.as_str()
        {
            return Err(ApiError::admission_forbidden(
                "",
                "pods",
                &name,
                &format!(
                    "the string value of PreemptionPolicy ({given}) must not be provided in pod spec; priority admission controller computed {} from the given PriorityClass name",
                    policy.as_str().unwrap_or("")
                ),
            ));
        }
        let s = spec(pod);
        s.insert("priority".into(), json!(value));
        if let Some(c) = &class {
            s.insert("priorityClassName".into(), json!(meta_str(c, "name")));
        }
        s.insert("preemptionPolicy".into(), policy);
        Ok(())
    }
}
